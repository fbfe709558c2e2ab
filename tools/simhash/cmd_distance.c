/*
 * simhash distance [options] FILE_A FILE_B -- the Hamming distance between
 * the two pages' fingerprints, the weighted score (sh_match.h) with FILE_B
 * as the query, and the rule's verdict.
 */
#include <string.h>

#include "cli.h"

static const char synopsis[] =
"usage: simhash distance [options] FILE_A FILE_B\n"
"\n"
"Print the Hamming distance H (0-64) between the simhashes of two pages,\n"
"the score (nats) of their difference under FILE_B's weights -- FILE_B is\n"
"the query, as a newly fetched page is to the module -- and whether the\n"
"match rule accepts the pair: \"H SCORE match|differ|listing|short\".\n"
"\"listing\" is a pair the rule matches but that has the same template and\n"
"other link words: two listings of one site, not duplicates (sh_sketch.h);\n"
"\"short\", one with a short hub (a page of under 40 words of its own,\n"
"mostly links) over 3 bits apart (sh_match_short).  A page whose own\n"
"content is short is said so on stderr.\n"
"Fails when either page is too short to have a fingerprint.\n";

int
cmd_distance(int argc, char **argv)
{
    cli_extract_t  x;
    cli_match_t    mt;
    cli_cmd_t      cmd = {
        .name = "distance", .synopsis = synopsis, .match = &mt, .extract = &x
    };
    sh_config_t   *cfg;
    sh_result_t    res[2];
    const char    *file[2];
    int            a, i, rc = 0;

    cli_extract_init(&x);
    cli_match_init(&mt);
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        cli_match_free(&mt);
        return 0;
    case CLI_BAD:
        cli_match_free(&mt);
        return 2;
    case CLI_PARSED:
        break;
    }
    if (argc - a != 2) {
        cli_error("distance: takes exactly two files");
        cli_match_free(&mt);
        return 2;
    }
    if (cli_match_finish(&mt) != 0) {
        cli_match_free(&mt);
        return 2;
    }
    file[0] = argv[a];
    file[1] = argv[a + 1];

    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        cli_match_free(&mt);
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
        unsigned h;
        uint32_t score;
        int      ok;

        ok = sh_match_pair(&mt.opts, res[1].hash, res[1].weights,
                           res[0].hash, &h, &score);
        for (i = 0; i < 2; i++) {
            if (res[i].short_content) {
                cli_error("\"%s\": short content (%u words of its own%s)",
                          file[i], res[i].nown,
                          res[i].hub ? ", mostly links" : "");
            }
        }
        printf("%u %.4f %s\n", h, sh_score_nats(score),
               !ok ? "differ"
               : sh_sketch_veto(&res[0].sketches, &res[1].sketches)
               ? "listing"
               : !sh_match_short(h, sh_result_short_hub(&res[0]),
                                 sh_result_short_hub(&res[1]))
               ? "short" : "match");
    }
    sh_config_free(cfg);
    cli_match_free(&mt);
    return rc;
}
