/*
 * simhash text [options] FILE -- the normalised tokens a page yields, one
 * per line, before stop words and stemming: what the fingerprint is made of.
 * For checking ignore patterns and charsets.
 */
#include <string.h>

#include "cli.h"

static void
usage(FILE *f)
{
    fprintf(f,
"usage: simhash text [options] FILE\n"
"\n"
"Print the tokens of a page's visible text, one per line, after ignore\n"
"patterns and case folding, before stop words and stemming.\n\n");
    cli_extract_usage(f);
}

static void
print_token(void *arg, const char *tok, size_t len)
{
    fwrite(tok, 1, len, stdout);
    putchar('\n');
}

int
cmd_text(int argc, char **argv)
{
    cli_extract_t  x;
    sh_config_t   *cfg;
    sh_doc_t      *doc;
    sh_result_t    res;
    const char    *file = NULL;
    FILE          *f;
    char           buf[65536];
    size_t         n;
    int            a, r, rc = 0;

    cli_extract_init(&x);
    for (a = 1; a < argc; a++) {
        if (cli_is_help(argv[a])) {
            usage(stdout);
            return 0;
        }
        r = cli_extract_arg(&x, argc, argv, &a);
        if (r < 0) {
            return 2;
        }
        if (r > 0) {
            continue;
        }
        if ((argv[a][0] == '-' && argv[a][1] != '\0') || file != NULL) {
            cli_error("text: takes options and one file (see --help)");
            return 2;
        }
        file = argv[a];
    }
    if (file == NULL) {
        cli_error("text: no file given (see --help)");
        return 2;
    }

    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        return 2;
    }
    f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    if (f == NULL) {
        cli_error("cannot open \"%s\"", file);
        sh_config_free(cfg);
        return 1;
    }
    doc = sh_doc_new(cfg, x.charset);
    if (doc == NULL) {
        cli_error("out of memory");
        rc = 1;
    } else {
        sh_doc_set_token_hook(doc, print_token, NULL);
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0 && rc == 0) {
            rc = sh_doc_feed(doc, buf, n) != 0;
        }
        if (rc == 0 && sh_doc_finish(doc, &res) != 0) {
            rc = 1;
        }
        if (rc == 0) {
            fprintf(stderr, "simhash: %s, charset %s, %u features\n",
                    sh_status_name(res.status), sh_doc_charset(doc),
                    res.nfeatures);
        }
        sh_doc_free(doc);
    }
    if (f != stdin) {
        fclose(f);
    }
    sh_config_free(cfg);
    return rc;
}
