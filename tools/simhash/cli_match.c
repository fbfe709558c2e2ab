/*
 * cli_match.c -- the match rule options shared by `simhash distance`,
 * `bench`, `dedup` and `index query` (cli.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sh_index.h"

void
cli_match_init(cli_match_t *m)
{
    memset(m, 0, sizeof(*m));
    sh_match_opts_init(&m->opts);
    m->rule = SH_RULE_DEFAULT;
    m->h = -1;
    m->t = -1;
}

void
cli_match_usage(FILE *f)
{
    fprintf(f,
"match rule options (the nginx module's simhash_zone match=, distance=,\n"
"threshold=, simhash_volatility):\n"
"  --match RULE         hamming: H <= h; weighted: H <= h and the score\n"
"                       (the query's evidence against a match) <= T\n"
"                       (default %s)\n"
"  --h N                hamming: the radius, 0..%d (default %d);\n"
"                       weighted: the cap on H, 0..%d (default %d)\n"
"  --threshold T        weighted: T in nats (default %g)\n"
"  --volatility FILE    volatility table from `simhash calibrate`\n",
            sh_rule_name(SH_RULE_DEFAULT), SH_H_MAX, SH_H_DEFAULT,
            SH_MATCH_HMAX, SH_WEIGHTED_H_DEFAULT, SH_WEIGHTED_T_DEFAULT);
}

int
cli_match_arg(cli_match_t *m, int argc, char **argv, int *i)
{
    const char    *a = argv[*i];
    const char    *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    unsigned long  n;
    char          *end, err[512];

    if (strcmp(a, "--match") == 0) {
        if (v == NULL || sh_rule_parse(v, strlen(v), &m->rule) != 0) {
            cli_error("--match: expected hamming or weighted");
            return -1;
        }
    } else if (strcmp(a, "--h") == 0) {
        if (cli_parse_uint(a, v, 0, SH_MATCH_HMAX, &n) != 0) {
            return -1;
        }
        m->h = (long) n;
    } else if (strcmp(a, "--threshold") == 0) {
        m->t = v ? strtod(v, &end) : -1;
        if (v == NULL || end == v || *end != '\0'
            || !(m->t >= 0 && m->t <= 1000))
        {
            cli_error("--threshold: expected nats from 0 to 1000");
            return -1;
        }
    } else if (strcmp(a, "--volatility") == 0) {
        if (v == NULL) {
            cli_error("--volatility needs a value");
            return -1;
        }
        sh_volatility_free(m->vol);
        m->vol = sh_volatility_load(v, err, sizeof(err));
        if (m->vol == NULL) {
            cli_error("%s", err);
            return -1;
        }
    } else {
        return 0;
    }
    (*i)++;
    return 1;
}

int
cli_match_finish(cli_match_t *m)
{
    sh_match_opts_rule(&m->opts, m->rule);
    if (m->h >= 0) {
        if (m->rule == SH_RULE_HAMMING && m->h > SH_H_MAX) {
            cli_error("--h: the hamming rule takes 0 to %d", SH_H_MAX);
            return -1;
        }
        m->opts.h = (unsigned) m->h;
    }
    if (m->t >= 0) {
        if (m->rule != SH_RULE_WEIGHTED) {
            cli_error("--threshold: only with --match weighted");
            return -1;
        }
        m->opts.threshold = sh_score_from_nats(m->t);
    }
    m->opts.vol = m->vol;
    return 0;
}

void
cli_match_free(cli_match_t *m)
{
    sh_volatility_free(m->vol);
    m->vol = NULL;
}
