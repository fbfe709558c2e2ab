/*
 * simhash fingerprint [options] FILE...
 * simhash fingerprint [options] --list PATHS
 *
 * One line per page: <16 hex digits>\t<feature count>\t<path>, with "-" for
 * the digits when the page is not fingerprinted (sh_status_t).  --weights
 * appends the 64 normalised weights W[0..63]; --sketches the structure and
 * link sketches and their feature counts (sh_sketch.h); --own the terms of
 * the page's own content and its flags (short content, hub: sh_match.h).
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char synopsis[] =
"usage: simhash fingerprint [options] FILE...\n"
"       simhash fingerprint [options] --list PATHS\n"
"\n"
"Print <simhash>\\t<features>\\t<path> per page; '-' for the simhash when\n"
"the page is not fingerprinted (too short, not text, too large or too\n"
"complex).  FILE '-' reads standard input.\n"
"\n";

int
cmd_fingerprint(int argc, char **argv)
{
    cli_extract_t  x;
    sh_config_t   *cfg;
    sh_result_t    res;
    const char    *list = NULL;
    char         **paths = NULL;
    size_t         npaths = 0, i;
    int            weights = 0, sketches = 0, own = 0, rc = 0, j, a;
    cli_opt_t      opts[] = {
        CLI_OPT_STRING("--list", "PATHS", &list,
                       "read the pages' paths from PATHS ('-' = stdin)"),
        CLI_OPT_FLAG("--weights", &weights,
                     "also print the 64 weights W[0..63]"),
        CLI_OPT_FLAG("--sketches", &sketches,
                     "also print the structure and link sketches:\n"
                     "<structure>\\t<tag 4-grams>\\t<links>\\t<link words>"),
        CLI_OPT_FLAG("--own", &own,
                     "also print the words of the page's own content and\n"
                     "its flags (short, hub, short,hub or -)"),
        CLI_OPT_END
    };
    cli_cmd_t      cmd = {
        .name = "fingerprint", .synopsis = synopsis, .opts = opts,
        .extract = &x, .options_first = 1
    };

    cli_extract_init(&x);
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    if (list == NULL && a >= argc) {
        cli_error("fingerprint: no pages given (see --help)");
        return 2;
    }
    if (list != NULL && a < argc) {
        cli_error("fingerprint: give either --list or files, not both");
        return 2;
    }

    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        return 2;
    }
    if (list != NULL) {
        if (cli_read_list(list, &paths, &npaths) != 0) {
            sh_config_free(cfg);
            return 1;
        }
    }

    for (i = 0; list ? i < npaths : (int) i < argc - a; i++) {
        const char *path = list ? paths[i] : argv[a + (int) i];

        if (cli_fingerprint_file(cfg, path, x.charset, &res) != 0) {
            rc = 1;
            continue;
        }
        if (res.status == SH_STATUS_OK) {
            printf("%016" PRIx64 "\t%" PRIu32 "\t%s", res.hash,
                   res.nfeatures, path);
        } else {
            printf("-\t%" PRIu32 "\t%s", res.nfeatures, path);
        }
        if (weights) {
            for (j = 0; j < SH_BITS; j++) {
                printf("%c%.6f", j ? ' ' : '\t',
                       res.status == SH_STATUS_OK ? res.weights[j] : 0.0);
            }
        }
        if (sketches) {
            printf("\t%016" PRIx64 "\t%" PRIu32 "\t%016" PRIx64 "\t%" PRIu32,
                   res.sketches.structure, res.nstructure,
                   res.sketches.links, res.nlinks);
        }
        if (own) {
            printf("\t%" PRIu32 "\t%s", res.nown,
                   res.short_content && res.hub ? "short,hub"
                   : res.short_content ? "short" : res.hub ? "hub" : "-");
        }
        putchar('\n');
    }

    cli_free_list(paths, npaths);
    sh_config_free(cfg);
    if (fflush(stdout) != 0) {
        cli_error("cannot write the output");
        return 1;
    }
    return rc;
}
