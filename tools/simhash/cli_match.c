/*
 * cli_match.c -- the match rule options shared by `simhash distance`,
 * `dedup` and `index query` (cli.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define STR_(x)     #x
#define STR(x)      STR_(x)

static int
set_rule(void *target, const char *name, const char *value)
{
    cli_match_t *m = target;

    if (sh_rule_parse(value, strlen(value), &m->rule) != 0) {
        cli_error("%s: expected hamming or weighted", name);
        return -1;
    }
    m->rule_given = 1;
    return 0;
}

static const char *
show_rule(const void *target, char *buf, size_t len)
{
    return sh_rule_name(((const cli_match_t *) target)->rule);
}

static int
set_h(void *target, const char *name, const char *value)
{
    cli_match_t   *m = target;
    unsigned long  n;

    if (cli_parse_uint(name, value, 0, SH_MATCH_HMAX, &n) != 0) {
        return -1;
    }
    m->h = (unsigned) n;
    m->h_given = 1;
    return 0;
}

static int
set_threshold(void *target, const char *name, const char *value)
{
    cli_match_t *m = target;

    if (cli_set_nats(&m->t, name, value) != 0) {
        return -1;
    }
    m->t_given = 1;
    return 0;
}

static const char *
show_threshold(const void *target, char *buf, size_t len)
{
    snprintf(buf, len, "%g", SH_WEIGHTED_T_DEFAULT);
    return buf;
}

static int
set_volatility(void *target, const char *name, const char *value)
{
    cli_match_t *m = target;
    char         err[512];

    sh_volatility_free(m->vol);
    m->vol = sh_volatility_load(value, err, sizeof(err));
    if (m->vol == NULL) {
        cli_error("%s", err);
        return -1;
    }
    return 0;
}

void
cli_match_init(cli_match_t *m)
{
    cli_opt_t t[] = {
        CLI_OPT_CALL("--match", "RULE", m, set_rule, show_rule,
                     "hamming: H <= h; weighted: H <= h and the score\n"
                     "(the query's evidence against a match) <= T"),
        CLI_OPT_CALL("--h", "N", m, set_h, NULL,
                     "hamming: the radius, 0.." STR(SH_H_MAX) " (default "
                     STR(SH_H_DEFAULT) ");\nweighted: the cap on H, 0.."
                     STR(SH_MATCH_HMAX) " (default "
                     STR(SH_WEIGHTED_H_DEFAULT) ")"),
        CLI_OPT_CALL("--threshold", "T", m, set_threshold, show_threshold,
                     "weighted: T in nats"),
        CLI_OPT_CALL("--volatility", "FILE", m, set_volatility, NULL,
                     "volatility table from `simhash calibrate`"),
        CLI_OPT_END
    };

    _Static_assert(sizeof(t) == sizeof(m->table), "CLI_MATCH_NOPTS");
    memset(m, 0, sizeof(*m));
    sh_match_opts_init(&m->opts);
    m->rule = SH_RULE_DEFAULT;
    memcpy(m->table, t, sizeof(t));
}

void
cli_match_usage(FILE *f, const cli_match_t *m)
{
    fputs("match rule options (the nginx module's simhash_zone match=, "
          "distance=,\nthreshold=, simhash_volatility):\n", f);
    cli_opts_usage(f, m->table);
}

int
cli_match_finish(cli_match_t *m)
{
    sh_match_opts_rule(&m->opts, m->rule);
    if (m->h_given) {
        if (m->rule == SH_RULE_HAMMING && m->h > SH_H_MAX) {
            cli_error("--h: the hamming rule takes 0 to %d", SH_H_MAX);
            return -1;
        }
        m->opts.h = m->h;
    }
    if (m->t_given) {
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
