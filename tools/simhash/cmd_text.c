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
    int            a, rc = 0;

    cli_extract_init(&x);
    for (a = 1; a < argc; a++) {
        switch (cli_common_arg(&x, argc, argv, &a, usage)) {
        case CLI_ARG_HELP:
            return 0;
        case CLI_ARG_BAD:
            return 2;
        case CLI_ARG_TAKEN:
            continue;
        case CLI_ARG_OWN:
            break;
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
    doc = cli_read_page(cfg, file, x.charset, print_token, NULL, &res);
    if (doc == NULL) {
        rc = 1;
    } else {
        fprintf(stderr, "simhash: %s, charset %s, %u features\n",
                sh_status_name(res.status), sh_doc_charset(doc),
                res.nfeatures);
        sh_doc_free(doc);
    }
    sh_config_free(cfg);
    return rc;
}
