/*
 * simhash idf build [options] --list PATHS -o FILE -- count in how many of
 * the pages each word occurs and write the IDF table (sh_idf.h).  The table
 * is tied to the extraction options that shape words (stemmer, seed):
 * build it with the options you fingerprint with.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sh_idf.h"

static const char synopsis[] =
"usage: simhash idf build [options] --list PATHS -o FILE\n"
"\n"
"Build an IDF table from the pages listed in PATHS, for --idf FILE and the\n"
"module's simhash_idf directive.  Use the same --stem and --seed as when\n"
"fingerprinting.\n\n";

typedef struct {
    uint64_t *words;
    size_t    n, cap;
    int       oom;
} words_t;

static void
collect(void *arg, uint64_t feature, unsigned type, uint32_t tf)
{
    words_t  *w = arg;
    uint64_t *nw;

    if (type != SH_FEAT_WORD || w->oom) {
        return;
    }
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 4096;
        nw = realloc(w->words, w->cap * sizeof(uint64_t));
        if (nw == NULL) {
            w->oom = 1;
            return;
        }
        w->words = nw;
    }
    w->words[w->n++] = feature;
}

int
cmd_idf(int argc, char **argv)
{
    cli_extract_t      x;
    sh_config_t       *cfg;
    sh_idf_builder_t  *b;
    sh_doc_t          *doc;
    sh_result_t        res;
    words_t            w = { NULL, 0, 0, 0 };
    const char        *list = NULL, *out = NULL;
    char             **paths, err[512];
    size_t             npaths, i, used = 0;
    int                a, rc = 0;
    cli_opt_t          opts[] = {
        CLI_OPT_STRING("--list", "PATHS", &list,
                       "the pages, one path a line ('-' = stdin)"),
        CLI_OPT_STRING("-o", "FILE", &out, "the table to write"),
        CLI_OPT_END
    };
    cli_cmd_t          cmd = {
        .name = "idf build", .synopsis = synopsis, .opts = opts, .extract = &x
    };

    cli_extract_init(&x);
    if (argc < 2 || strcmp(argv[1], "build") != 0) {
        if (argc >= 2 && cli_is_help(argv[1])) {
            cli_usage(stdout, &cmd);
            return 0;
        }
        cli_error("idf: the only subcommand is 'build' (see --help)");
        return 2;
    }
    switch (cli_parse(&cmd, argc, argv, 2, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    if (a < argc) {
        cli_error("idf build: unexpected argument %s (see --help)", argv[a]);
        return 2;
    }
    if (list == NULL || out == NULL) {
        cli_error("idf build: needs --list PATHS and -o FILE");
        return 2;
    }
    /* Count every word, whatever the table in use says. */
    x.opts.idf_file = NULL;

    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        return 2;
    }
    if (cli_read_list(list, &paths, &npaths) != 0) {
        sh_config_free(cfg);
        return 1;
    }
    b = sh_idf_builder_new();
    if (b == NULL) {
        cli_error("out of memory");
        rc = 1;
    }

    for (i = 0; rc == 0 && i < npaths; i++) {
        doc = cli_read_page(cfg, paths[i], x.charset, NULL, NULL, &res);
        if (doc == NULL) {
            continue;           /* said why; a corpus may have bad pages */
        }
        if (res.status == SH_STATUS_OK) {
            w.n = 0;
            sh_doc_foreach_feature(doc, collect, &w);
            if (w.oom || sh_idf_builder_add(b, w.words, w.n) != 0) {
                cli_error("out of memory");
                rc = 1;
            }
            used++;
        }
        sh_doc_free(doc);
    }

    if (rc == 0 && used == 0) {
        cli_error("idf build: no page of the list had a fingerprint");
        rc = 1;
    }
    if (rc == 0 && sh_idf_builder_save(b, out, sh_config_seed_digest(cfg),
                                       sh_config_words_version(cfg), err,
                                       sizeof(err)) != 0)
    {
        cli_error("%s", err);
        rc = 1;
    }
    if (rc == 0) {
        fprintf(stderr, "simhash: IDF table of %zu pages written to %s\n",
                used, out);
    }
    free(w.words);
    sh_idf_builder_free(b);
    cli_free_list(paths, npaths);
    sh_config_free(cfg);
    return rc;
}
