/*
 * simhash distance [options] FILE_A FILE_B -- the Hamming distance between
 * the two pages' fingerprints.
 */
#include <string.h>

#include "cli.h"

static void
usage(FILE *f)
{
    fprintf(f,
"usage: simhash distance [options] FILE_A FILE_B\n"
"\n"
"Print the Hamming distance (0-64) between the simhashes of two pages.\n"
"Fails when either page is too short to have a fingerprint.\n\n");
    cli_extract_usage(f);
}

int
cmd_distance(int argc, char **argv)
{
    cli_extract_t  x;
    sh_config_t   *cfg;
    sh_result_t    res[2];
    const char    *file[2];
    int            nfile = 0, a, i, rc = 0;

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
        if (argv[a][0] == '-' && argv[a][1] != '\0') {
            cli_error("distance: unknown option %s (see --help)", argv[a]);
            return 2;
        }
        if (nfile == 2) {
            cli_error("distance: takes exactly two files");
            return 2;
        }
        file[nfile++] = argv[a];
    }
    if (nfile != 2) {
        cli_error("distance: takes exactly two files");
        return 2;
    }

    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        return 2;
    }
    for (i = 0; i < 2 && rc == 0; i++) {
        if (cli_fingerprint_file(cfg, file[i], x.charset, &res[i]) != 0) {
            rc = 1;
        } else if (res[i].status != SH_STATUS_OK) {
            cli_error("\"%s\" has no fingerprint: %s (%u features)", file[i],
                      sh_status_name(res[i].status), res[i].nfeatures);
            rc = 1;
        }
    }
    if (rc == 0) {
        printf("%u\n", sh_distance(res[0].hash, res[1].hash));
    }
    sh_config_free(cfg);
    return rc;
}
