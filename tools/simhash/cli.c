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

static int
parse_float(const char *opt, const char *s, float *out)
{
    char  *end;
    double v;

    if (s == NULL) {
        cli_error("%s needs a value", opt);
        return -1;
    }
    v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 0.0 && v <= 1000.0)) {
        cli_error("%s: \"%s\" is not a weight from 0 to 1000", opt, s);
        return -1;
    }
    *out = (float) v;
    return 0;
}

void
cli_extract_init(cli_extract_t *x)
{
    sh_options_init(&x->opts);
    x->charset = NULL;
}

void
cli_extract_usage(FILE *f)
{
    fprintf(f,
"extraction options (the same as the nginx module's simhash_* directives):\n"
"  --shingle N          words per shingle feature, 1 = words only "
"(default %u)\n"
"  --stem LANG|none     Snowball stemmer language (default %s)\n"
"  --stopwords FILE|english|none  drop stop words: from FILE (one per line)\n"
"                       or the built-in English list (default: none)\n"
"  --ignore REGEX       PCRE2 pattern removed from each text block before\n"
"                       tokenising (repeatable, up to %d)\n"
"  --min-features N     fewer distinct features: too short (default %u)\n"
"  --max-features N     distinct features kept per page (default %u)\n"
"  --idf FILE           IDF table from `simhash idf build`\n"
"  --seed SECRET        key for the feature hash (simhash_seed)\n"
"  --word-weight W      weight of word features (default %g)\n"
"  --shingle-weight W   weight of shingle features (default %g)\n"
"  --content MODE       weigh each text block by where it sits: auto\n"
"                       (markup and text statistics), structure (markup\n"
"                       only) or off (the whole page's text; default %s)\n"
"  --charset LABEL      charset as if from the Content-Type header\n",
            SH_DEFAULT_SHINGLE, SH_DEFAULT_STEM, SH_IGNORE_MAX,
            SH_DEFAULT_MIN_FEATURES, SH_DEFAULT_MAX_FEATURES,
            (double) SH_DEFAULT_WEIGHT_WORD,
            (double) SH_DEFAULT_WEIGHT_SHINGLE,
            sh_content_name(SH_DEFAULT_CONTENT));
}

int
cli_extract_arg(cli_extract_t *x, int argc, char **argv, int *i)
{
    const char    *a = argv[*i];
    const char    *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    unsigned long  n;

#define TAKES_VALUE() \
    do { if (v == NULL) { cli_error("%s needs a value", a); return -1; } \
         (*i)++; } while (0)

    if (strcmp(a, "--shingle") == 0) {
        if (cli_parse_uint(a, v, 1, SH_SHINGLE_MAX, &n) != 0) {
            return -1;
        }
        x->opts.shingle = (unsigned) n;
        (*i)++;
    } else if (strcmp(a, "--stem") == 0) {
        TAKES_VALUE();
        if (strcmp(v, "none") == 0 || strcmp(v, "off") == 0) {
            x->opts.stem = NULL;
        } else if (!sh_stem_lang_valid(v)) {
            cli_error("--stem: unknown Snowball language \"%s\"", v);
            return -1;
        } else {
            x->opts.stem = v;
        }
    } else if (strcmp(a, "--stopwords") == 0) {
        TAKES_VALUE();
        x->opts.stopwords_off = 0;
        x->opts.stopwords_file = NULL;
        if (strcmp(v, "none") == 0 || strcmp(v, "off") == 0) {
            x->opts.stopwords_off = 1;
        } else if (strcmp(v, "english") != 0) {
            x->opts.stopwords_file = v;
        }
    } else if (strcmp(a, "--ignore") == 0) {
        TAKES_VALUE();
        if (sh_options_add_ignore(&x->opts, v) != 0) {
            cli_error("--ignore: at most %d patterns", SH_IGNORE_MAX);
            return -1;
        }
    } else if (strcmp(a, "--min-features") == 0) {
        if (cli_parse_uint(a, v, 0, SH_MIN_FEATURES_LIMIT, &n) != 0) {
            return -1;
        }
        x->opts.min_features = (unsigned) n;
        (*i)++;
    } else if (strcmp(a, "--max-features") == 0) {
        if (cli_parse_uint(a, v, SH_MAX_FEATURES_FLOOR,
                           SH_MAX_FEATURES_LIMIT, &n) != 0)
        {
            return -1;
        }
        x->opts.max_features = (unsigned) n;
        (*i)++;
    } else if (strcmp(a, "--idf") == 0) {
        TAKES_VALUE();
        x->opts.idf_file = v;
    } else if (strcmp(a, "--seed") == 0) {
        TAKES_VALUE();
        x->opts.seed = v;
        x->opts.seed_len = strlen(v);
    } else if (strcmp(a, "--word-weight") == 0) {
        if (parse_float(a, v, &x->opts.weight[SH_FEAT_WORD]) != 0) {
            return -1;
        }
        (*i)++;
    } else if (strcmp(a, "--shingle-weight") == 0) {
        if (parse_float(a, v, &x->opts.weight[SH_FEAT_SHINGLE]) != 0) {
            return -1;
        }
        (*i)++;
    } else if (strcmp(a, "--content") == 0) {
        TAKES_VALUE();
        if (sh_content_parse(v) < 0) {
            cli_error("--content: \"%s\" is not auto, structure or off", v);
            return -1;
        }
        x->opts.content = (unsigned) sh_content_parse(v);
    } else if (strcmp(a, "--charset") == 0) {
        TAKES_VALUE();
        x->charset = v;
    } else {
        return 0;
    }
#undef TAKES_VALUE
    return 1;
}

cli_arg_t
cli_common_arg(cli_extract_t *x, int argc, char **argv, int *i,
               void (*usage)(FILE *))
{
    int r;

    if (cli_is_help(argv[*i])) {
        usage(stdout);
        return CLI_ARG_HELP;
    }
    r = cli_extract_arg(x, argc, argv, i);
    return r < 0 ? CLI_ARG_BAD : r > 0 ? CLI_ARG_TAKEN : CLI_ARG_OWN;
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
