/*
 * cli_args.c -- the one argument parser of the subcommands (cli_args.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define HELP_COLUMN     23      /* where the help text starts */

/* The tables argv is read against, in the order they are searched. */
static size_t
tables(const cli_cmd_t *c, const cli_opt_t *t[3])
{
    size_t n = 0;

    if (c->opts != NULL) {
        t[n++] = c->opts;
    }
    if (c->match != NULL) {
        t[n++] = c->match->table;
    }
    if (c->extract != NULL) {
        t[n++] = c->extract->table;
    }
    return n;
}

static const cli_opt_t *
find(const cli_opt_t *opts, const char *name)
{
    for (; opts->name != NULL; opts++) {
        if (strcmp(opts->name, name) == 0) {
            return opts;
        }
    }
    return NULL;
}

static const cli_opt_t *
find_any(const cli_cmd_t *c, const char *name)
{
    const cli_opt_t *t[3], *o;
    size_t           n = tables(c, t), i;

    for (i = 0; i < n; i++) {
        if ((o = find(t[i], name)) != NULL) {
            return o;
        }
    }
    return NULL;
}

static int
is_option(const char *arg)
{
    return arg[0] == '-' && arg[1] != '\0';
}

/* Set the row's target from `value` (NULL for a flag). */
static int
apply(const cli_opt_t *o, const char *value)
{
    unsigned long n;

    switch (o->kind) {
    case CLI_FLAG:
        *(int *) o->target = 1;
        return 0;
    case CLI_STRING:
        *(const char **) o->target = value;
        return 0;
    case CLI_UINT:
        if (cli_parse_uint(o->name, value, o->min, o->max, &n) != 0) {
            return -1;
        }
        *(unsigned *) o->target = (unsigned) n;
        return 0;
    case CLI_CALL:
        return o->set(o->target, o->name, value);
    }
    return -1;
}

int
cli_opts_take(const cli_opt_t *opts, int argc, char **argv, int *i)
{
    const cli_opt_t *o = find(opts, argv[*i]);
    const char      *value = NULL;

    if (o == NULL) {
        return 0;
    }
    if (o->arg != NULL) {
        if (*i + 1 >= argc) {
            cli_error("%s needs a value", o->name);
            return -1;
        }
        value = argv[++*i];
    }
    return apply(o, value) == 0 ? 1 : -1;
}

/*
 * --help anywhere among the options is answered before any of them is
 * read: the defaults the usage shows are then the targets' own.
 */
static int
wants_help(const cli_cmd_t *c, int argc, char **argv, int start)
{
    const cli_opt_t *o;
    int              a;

    for (a = start; a < argc && strcmp(argv[a], "--") != 0; a++) {
        if (cli_is_help(argv[a])) {
            return 1;
        }
        if (!is_option(argv[a]) && c->options_first) {
            break;
        }
        o = is_option(argv[a]) ? find_any(c, argv[a]) : NULL;
        if (o != NULL && o->arg != NULL) {
            a++;                /* its value, whatever it looks like */
        }
    }
    return 0;
}

cli_parse_t
cli_parse(const cli_cmd_t *c, int argc, char **argv, int start, int *first)
{
    const cli_opt_t  *o;
    char            **operand;
    int               a, n = 0, rc = CLI_PARSED;

    if (wants_help(c, argc, argv, start)) {
        cli_usage(stdout, c);
        return CLI_HELP;
    }
    operand = malloc((size_t) (argc + 1) * sizeof(char *));
    if (operand == NULL) {
        cli_error("out of memory");
        return CLI_BAD;
    }
    for (a = start; a < argc; a++) {
        if (strcmp(argv[a], "--") == 0) {
            while (++a < argc) {
                operand[n++] = argv[a];
            }
            break;
        }
        if (!is_option(argv[a])) {
            operand[n++] = argv[a];
            if (c->options_first) {
                while (++a < argc) {
                    operand[n++] = argv[a];
                }
                break;
            }
            continue;
        }
        o = find_any(c, argv[a]);
        if (o == NULL) {
            cli_error("%s: unknown option %s (see --help)", c->name,
                      argv[a]);
            rc = CLI_BAD;
            break;
        }
        if (o->arg != NULL && a + 1 >= argc) {
            cli_error("%s needs a value", o->name);
            rc = CLI_BAD;
            break;
        }
        if (apply(o, o->arg != NULL ? argv[++a] : NULL) != 0) {
            rc = CLI_BAD;
            break;
        }
    }
    if (rc == CLI_PARSED) {
        memcpy(argv + argc - n, operand, (size_t) n * sizeof(char *));
        *first = argc - n;
    }
    free(operand);
    return rc;
}

/* "  --name ARG" padded to the help column, then the help, each of its
 * lines indented to the column, and the default. */
static void
opt_usage(FILE *f, const cli_opt_t *o)
{
    char        dflt[64];
    const char *d = NULL, *p, *nl;
    int         w;

    w = fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "",
                o->arg ? o->arg : "");
    if (w >= HELP_COLUMN) {
        fprintf(f, "\n%*s", HELP_COLUMN, "");
    } else {
        fprintf(f, "%*s", HELP_COLUMN - w, "");
    }
    if (o->show != NULL) {
        d = o->show(o->target, dflt, sizeof(dflt));
    } else if (o->kind == CLI_UINT && *(const unsigned *) o->target != 0) {
        /* 0 is "not set" (the help says what then) */
        snprintf(dflt, sizeof(dflt), "%u", *(const unsigned *) o->target);
        d = dflt;
    } else if (o->kind == CLI_STRING) {
        d = *(const char *const *) o->target;
    }
    for (p = o->help; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        fprintf(f, "%.*s\n%*s", (int) (nl - p), p, HELP_COLUMN, "");
    }
    fputs(p, f);
    if (d != NULL && d[0] != '\0') {
        /* on the last line if it fits in 80 columns, else on its own */
        if (HELP_COLUMN + strlen(p) + strlen(d) + 11 > 79) {
            fprintf(f, "\n%*s", HELP_COLUMN - 1, "");
        }
        fprintf(f, " (default %s)", d);
    }
    fputc('\n', f);
}

void
cli_opts_usage(FILE *f, const cli_opt_t *opts)
{
    for (; opts->name != NULL; opts++) {
        if (opts->help != NULL) {
            opt_usage(f, opts);
        }
    }
}

void
cli_usage(FILE *f, const cli_cmd_t *c)
{
    if (c->usage != NULL) {
        c->usage(f);
        return;
    }
    fputs(c->synopsis, f);
    if (c->opts != NULL) {
        cli_opts_usage(f, c->opts);
    }
    if (c->notes != NULL) {
        fprintf(f, "\n%s", c->notes);
    }
    if (c->match != NULL) {
        fputc('\n', f);
        cli_match_usage(f, c->match);
    }
    if (c->extract != NULL) {
        fputc('\n', f);
        cli_extract_usage(f, c->extract);
    }
}

/* ---- readers several commands share ---- */

int
cli_set_recall(void *target, const char *name, const char *value)
{
    char  *end;
    float  r = strtof(value, &end);

    if (end == value || *end != '\0' || !(r > 0 && r <= 1)) {
        cli_error("%s: expected a number in (0, 1]", name);
        return -1;
    }
    *(float *) target = r;
    return 0;
}

int
cli_set_nats(void *target, const char *name, const char *value)
{
    char   *end;
    double  t = strtod(value, &end);

    if (end == value || *end != '\0' || !(t >= 0 && t <= 1000)) {
        cli_error("%s: expected nats from 0 to 1000", name);
        return -1;
    }
    *(double *) target = t;
    return 0;
}

const char *
cli_show_float(const void *target, char *buf, size_t len)
{
    snprintf(buf, len, "%g", (double) *(const float *) target);
    return buf;
}
