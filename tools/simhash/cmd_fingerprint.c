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

static void
usage(FILE *f)
{
    fprintf(f,
"usage: simhash fingerprint [options] FILE...\n"
"       simhash fingerprint [options] --list PATHS\n"
"\n"
"Print <simhash>\\t<features>\\t<path> per page; '-' for the simhash when\n"
"the page is not fingerprinted (too short, not text, too large or too\n"
"complex).  FILE '-' reads standard input.\n"
"\n"
"  --list PATHS         read the pages' paths from PATHS ('-' = stdin)\n"
"  --weights            also print the 64 weights W[0..63]\n"
"  --sketches           also print the structure and link sketches:\n"
"                       <structure>\\t<tag 4-grams>\\t<links>\\t<link words>\n"
"\n");
    cli_extract_usage(f);
}

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
        if (strcmp(argv[a], "--list") == 0 && a + 1 < argc) {
            list = argv[++a];
        } else if (strcmp(argv[a], "--weights") == 0) {
            weights = 1;
        } else if (strcmp(argv[a], "--sketches") == 0) {
            sketches = 1;
        } else if (strcmp(argv[a], "--own") == 0) {
            own = 1;
        } else if (argv[a][0] == '-' && argv[a][1] != '\0') {
            cli_error("fingerprint: unknown option %s (see --help)", argv[a]);
            return 2;
        } else {
            break;
        }
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
