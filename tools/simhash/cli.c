/*
 * cli.c -- what the subcommands share: errors, the extraction options,
 * lists of paths, fingerprinting a file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void
cli_error(const char *fmt, ...)
{
    va_list ap;

    fputs("simhash: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int
cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int
cli_parse_uint(const char *opt, const char *s, unsigned long min,
               unsigned long max, unsigned long *out)
{
    char          *end;
    unsigned long  v;

    if (s == NULL) {
        cli_error("%s needs a value", opt);
        return -1;
    }
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < min
        || v > max)
    {
        cli_error("%s: \"%s\" is not a number from %lu to %lu", opt, s, min,
                  max);
        return -1;
    }
    *out = v;
    return 0;
}

#define STR_(x)     #x
#define STR(x)      STR_(x)

/* ---- the extraction options' readers ---- */

static int
set_weight(void *target, const char *name, const char *value)
{
    char  *end;
    double v = strtod(value, &end);

    if (end == value || *end != '\0' || !(v >= 0.0 && v <= 1000.0)) {
        cli_error("%s: \"%s\" is not a weight from 0 to 1000", name, value);
        return -1;
    }
    *(float *) target = (float) v;
    return 0;
}

static int
set_stem(void *target, const char *name, const char *value)
{
    const char **stem = target;

    if (strcmp(value, "none") == 0 || strcmp(value, "off") == 0) {
        *stem = NULL;
    } else if (!sh_stem_lang_valid(value)) {
        cli_error("%s: unknown Snowball language \"%s\"", name, value);
        return -1;
    } else {
        *stem = value;
    }
    return 0;
}

static const char *
show_stem(const void *target, char *buf, size_t len)
{
    const char *stem = *(const char *const *) target;

    return stem != NULL ? stem : "none";
}

static int
set_stopwords(void *target, const char *name, const char *value)
{
    sh_options_t *o = target;

    o->stopwords_off = 0;
    o->stopwords_file = NULL;
    if (strcmp(value, "none") == 0 || strcmp(value, "off") == 0) {
        o->stopwords_off = 1;
    } else if (strcmp(value, "english") != 0) {
        o->stopwords_file = value;
    }
    return 0;
}

static const char *
show_stopwords(const void *target, char *buf, size_t len)
{
    const sh_options_t *o = target;

    return o->stopwords_off ? "none"
           : o->stopwords_file != NULL ? o->stopwords_file : "english";
}

static int
set_ignore(void *target, const char *name, const char *value)
{
    if (sh_options_add_ignore(target, value) != 0) {
        cli_error("%s: at most %d patterns", name, SH_IGNORE_MAX);
        return -1;
    }
    return 0;
}

static int
set_seed(void *target, const char *name, const char *value)
{
    sh_options_t *o = target;

    o->seed = value;
    o->seed_len = strlen(value);
    return 0;
}

static int
set_content(void *target, const char *name, const char *value)
{
    int mode = sh_content_parse(value);

    if (mode < 0) {
        cli_error("%s: \"%s\" is not auto, structure or off", name, value);
        return -1;
    }
    *(unsigned *) target = (unsigned) mode;
    return 0;
}

static const char *
show_content(const void *target, char *buf, size_t len)
{
    return sh_content_name(*(const unsigned *) target);
}

void
cli_extract_init(cli_extract_t *x)
{
    sh_options_t *o = &x->opts;
    cli_opt_t     t[] = {
        CLI_OPT_UINT("--shingle", "N", &o->shingle, 1, SH_SHINGLE_MAX,
                     "words per shingle feature, 1 = words only"),
        CLI_OPT_CALL("--stem", "LANG|none", &o->stem, set_stem, show_stem,
                     "Snowball stemmer language"),
        CLI_OPT_CALL("--stopwords", "FILE|english|none", o, set_stopwords,
                     show_stopwords,
                     "drop stop words: from FILE (one per line)\n"
                     "or the built-in English list"),
        CLI_OPT_CALL("--ignore", "REGEX", o, set_ignore, NULL,
                     "PCRE2 pattern removed from each text block before\n"
                     "tokenising (repeatable, up to " STR(SH_IGNORE_MAX)
                     ")"),
        CLI_OPT_UINT("--min-features", "N", &o->min_features, 0,
                     SH_MIN_FEATURES_LIMIT,
                     "fewer distinct features: too short"),
        CLI_OPT_UINT("--max-features", "N", &o->max_features,
                     SH_MAX_FEATURES_FLOOR, SH_MAX_FEATURES_LIMIT,
                     "distinct features kept per page"),
        CLI_OPT_STRING("--idf", "FILE", &o->idf_file,
                       "IDF table from `simhash idf build`"),
        CLI_OPT_CALL("--seed", "SECRET", o, set_seed, NULL,
                     "key for the feature hash (simhash_seed)"),
        CLI_OPT_CALL("--word-weight", "W", &o->weight[SH_FEAT_WORD],
                     set_weight, cli_show_float, "weight of word features"),
        CLI_OPT_CALL("--shingle-weight", "W", &o->weight[SH_FEAT_SHINGLE],
                     set_weight, cli_show_float,
                     "weight of shingle features"),
        CLI_OPT_CALL("--content", "MODE", &o->content, set_content,
                     show_content,
                     "weigh each text block by where it sits: auto\n"
                     "(markup and text statistics), structure (markup\n"
                     "only) or off (the whole page's text)"),
        CLI_OPT_STRING("--charset", "LABEL", &x->charset,
                       "charset as if from the Content-Type header"),
        CLI_OPT_END
    };

    _Static_assert(sizeof(t) == sizeof(x->table), "CLI_EXTRACT_NOPTS");
    sh_options_init(o);
    x->charset = NULL;
    memcpy(x->table, t, sizeof(t));
}

void
cli_extract_usage(FILE *f, const cli_extract_t *x)
{
    fputs("extraction options (the same as the nginx module's simhash_* "
          "directives):\n", f);
    cli_opts_usage(f, x->table);
}

int
cli_extract_arg(cli_extract_t *x, int argc, char **argv, int *i)
{
    return cli_opts_take(x->table, argc, argv, i);
}

sh_config_t *
cli_extract_config(const cli_extract_t *x)
{
    char         err[512];
    sh_config_t *cfg = sh_config_new(&x->opts, err, sizeof(err));

    if (cfg == NULL) {
        cli_error("%s", err);
    }
    return cfg;
}

int
cli_read_list(const char *path, char ***paths, size_t *n)
{
    FILE   *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    char   *line = NULL, **v = NULL, **nv;
    size_t  cap = 0, len = 0, vcap = 0;
    ssize_t r;

    if (f == NULL) {
        cli_error("cannot open list \"%s\": %s", path, strerror(errno));
        return -1;
    }
    while ((r = getline(&line, &cap, f)) >= 0) {
        while (r > 0 && (line[r - 1] == '\n' || line[r - 1] == '\r')) {
            line[--r] = '\0';
        }
        if (r == 0) {
            continue;
        }
        if (len == vcap) {
            vcap = vcap ? vcap * 2 : 256;
            nv = realloc(v, vcap * sizeof(char *));
            if (nv == NULL) {
                goto oom;
            }
            v = nv;
        }
        if ((v[len] = strdup(line)) == NULL) {
            goto oom;
        }
        len++;
    }
    free(line);
    if (f != stdin) {
        fclose(f);
    }
    *paths = v;
    *n = len;
    return 0;

oom:
    cli_error("out of memory reading \"%s\"", path);
    free(line);
    cli_free_list(v, len);
    if (f != stdin) {
        fclose(f);
    }
    return -1;
}

void
cli_free_list(char **paths, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(paths[i]);
    }
    free(paths);
}

sh_doc_t *
cli_read_page(sh_config_t *cfg, const char *path, const char *charset,
              sh_token_fn hook, void *arg, sh_result_t *res)
{
    return cli_read_page_blocks(cfg, path, charset, hook, NULL, arg, res);
}

sh_doc_t *
cli_read_page_blocks(sh_config_t *cfg, const char *path, const char *charset,
                     sh_token_fn hook, sh_block_fn block_hook, void *arg,
                     sh_result_t *res)
{
    static char  buf[65536];
    FILE        *f;
    sh_doc_t    *doc;
    size_t       n;
    int          rc = 0;

    f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (f == NULL) {
        cli_error("cannot open \"%s\": %s", path, strerror(errno));
        return NULL;
    }
    doc = sh_doc_new(cfg, charset);
    if (doc == NULL) {
        cli_error("out of memory");
        if (f != stdin) {
            fclose(f);
        }
        return NULL;
    }
    if (hook != NULL) {
        sh_doc_set_token_hook(doc, hook, arg);
    }
    if (block_hook != NULL) {
        sh_doc_set_block_hook(doc, block_hook, arg);
    }
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        if (sh_doc_feed(doc, buf, n) != 0) {
            rc = -1;
            break;
        }
    }
    if (ferror(f)) {
        cli_error("cannot read \"%s\": %s", path, strerror(errno));
        rc = -1;
    } else if (rc != 0 || sh_doc_finish(doc, res) != 0) {
        cli_error("out of memory fingerprinting \"%s\"", path);
        rc = -1;
    }
    if (f != stdin) {
        fclose(f);
    }
    if (rc != 0) {
        sh_doc_free(doc);
        return NULL;
    }
    return doc;
}

int
cli_fingerprint_file(sh_config_t *cfg, const char *path,
                     const char *charset, sh_result_t *res)
{
    sh_doc_t *doc = cli_read_page(cfg, path, charset, NULL, NULL, res);

    if (doc == NULL) {
        return -1;
    }
    sh_doc_free(doc);
    return 0;
}
