/*
 * simhash text [options] FILE -- the normalised tokens a page yields, one
 * per line, before stop words and stemming: what the fingerprint is made of.
 * For checking ignore patterns and charsets.  With --blocks, one line per
 * block of text instead: its weight, zone, link density and tokens, so
 * that a user can see why a block counts or not.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sh_block.h"

static const char synopsis[] =
"usage: simhash text [options] [--blocks] FILE\n"
"\n"
"Print the tokens of a page's visible text, one per line, after ignore\n"
"patterns and case folding, before stop words and stemming.\n";

/* The tokens of the current block, space-separated. */
typedef struct {
    char   *buf;
    size_t  len, cap;
    int     failed;
} line_t;

static void
print_token(void *arg, const char *tok, size_t len)
{
    fwrite(tok, 1, len, stdout);
    putchar('\n');
}

static void
line_token(void *arg, const char *tok, size_t len)
{
    line_t *l = arg;
    char   *nb;

    if (l->len + len + 2 > l->cap) {
        l->cap = (l->len + len + 2) * 2;
        nb = realloc(l->buf, l->cap);
        if (nb == NULL) {
            l->failed = 1;
            return;
        }
        l->buf = nb;
    }
    if (l->len > 0) {
        l->buf[l->len++] = ' ';
    }
    memcpy(l->buf + l->len, tok, len);
    l->len += len;
}

static void
line_block(void *arg, const sh_block_info_t *b)
{
    line_t *l = arg;

    printf("%.2f  %-6s  links %3.0f%%  %.*s\n",
           (double) b->weight / SH_BLOCK_FULL, sh_block_zone_name(b->zone),
           b->bytes ? 100.0 * b->link / b->bytes : 0.0, (int) l->len,
           l->buf != NULL ? l->buf : "");
    l->len = 0;
}

int
cmd_text(int argc, char **argv)
{
    cli_extract_t  x;
    sh_config_t   *cfg;
    sh_doc_t      *doc = NULL;
    sh_result_t    res;
    const char    *file;
    line_t         line;
    int            a, rc = 0, blocks = 0;
    cli_opt_t      opts[] = {
        CLI_OPT_FLAG("--blocks", &blocks,
                     "one line per block of text instead: its weight\n"
                     "(0 to 1), its zone (main, chrome or -), the share\n"
                     "of its text inside links, and its tokens"),
        CLI_OPT_END
    };
    cli_cmd_t      cmd = {
        .name = "text", .synopsis = synopsis, .opts = opts, .extract = &x
    };

    cli_extract_init(&x);
    memset(&line, 0, sizeof(line));
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    if (a == argc) {
        cli_error("text: no file given (see --help)");
        return 2;
    }
    if (argc - a > 1) {
        cli_error("text: takes options and one file (see --help)");
        return 2;
    }
    file = argv[a];
    if (blocks && x.opts.content == SH_CONTENT_OFF) {
        cli_error("text: --blocks needs --content auto or structure");
        return 2;
    }

    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        return 2;
    }
    if (blocks) {
        doc = cli_read_page_blocks(cfg, file, x.charset, line_token,
                                   line_block, &line, &res);
    } else {
        doc = cli_read_page(cfg, file, x.charset, print_token, NULL, &res);
    }
    if (doc == NULL || line.failed) {
        if (line.failed) {
            cli_error("out of memory");
        }
        rc = 1;
    } else {
        fprintf(stderr, "simhash: %s, charset %s, %u features\n",
                sh_status_name(res.status), sh_doc_charset(doc),
                res.nfeatures);
        if (res.status == SH_STATUS_OK && res.short_content) {
            fprintf(stderr, "simhash: short content: %u words of its own%s\n",
                    res.nown, res.hub ? ", mostly links" : "");
        }
        if (blocks && sh_doc_has_main(doc)) {
            fprintf(stderr, "simhash: the page marks its main content: "
                    "blocks outside it weigh %.3f of what is shown\n",
                    (double) sh_block_outside());
        }
    }
    sh_doc_free(doc);
    free(line.buf);
    sh_config_free(cfg);
    return rc;
}
