/*
 * sh_match.c -- the hamming and weighted match rules (sh_match.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sh_match.h"

void
sh_match_opts_init(sh_match_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->rule = SH_RULE_HAMMING;
    o->h = SH_H_DEFAULT;
    o->threshold = sh_score_from_nats(SH_WEIGHTED_T_DEFAULT);
    o->vol = NULL;
}

void
sh_match_opts_rule(sh_match_opts_t *o, sh_rule_t r)
{
    o->rule = r;
    o->h = r == SH_RULE_WEIGHTED ? SH_WEIGHTED_H_DEFAULT : SH_H_DEFAULT;
}

int
sh_match_opts_weighted(sh_match_opts_t *o, double t_nats, unsigned h)
{
    if (!(t_nats >= 0 && t_nats <= 1000) || h > SH_MATCH_HMAX) {
        return -1;
    }
    o->rule = SH_RULE_WEIGHTED;
    o->threshold = sh_score_from_nats(t_nats);
    o->h = h;
    return 0;
}

uint32_t
sh_score_from_nats(double nats)
{
    if (!(nats > 0)) {
        return 0;
    }
    if (nats > 1e6) {
        nats = 1e6;
    }
    return (uint32_t) lrint(nats * SH_SCORE_UNIT);
}

double
sh_score_nats(uint32_t score)
{
    return (double) score / SH_SCORE_UNIT;
}

const char *
sh_rule_name(sh_rule_t r)
{
    return r == SH_RULE_WEIGHTED ? "weighted" : "hamming";
}

int
sh_rule_parse(const char *s, size_t len, sh_rule_t *r)
{
    if (len == 7 && memcmp(s, "hamming", 7) == 0) {
        *r = SH_RULE_HAMMING;
        return 0;
    }
    if (len == 8 && memcmp(s, "weighted", 8) == 0) {
        *r = SH_RULE_WEIGHTED;
        return 0;
    }
    return -1;
}

void
sh_matcher_init(sh_matcher_t *m, const sh_match_opts_t *o, uint64_t x,
                const float *w)
{
    const sh_volatility_t *vol = o->vol ? o->vol : sh_volatility_default();
    unsigned j;

    m->hash = x;
    m->h = o->h > SH_MATCH_HMAX ? SH_MATCH_HMAX : o->h;
    m->threshold = o->rule == SH_RULE_WEIGHTED ? o->threshold : UINT32_MAX;
    for (j = 0; j < 64; j++) {
        /* log-odds <= log(PMAX / (1 - PMAX)) < 0 and >= log(PMIN): the
         * cost is in (0, 17) nats, so it fits its 16 bits with room. */
        float lo = sh_volatility_logodds(vol, w != NULL ? w[j] : 0.0f);
        long  c = lrintf(-lo * SH_SCORE_UNIT);

        m->cost[j] = (uint16_t) (c < 0 ? 0 : c > UINT16_MAX ? UINT16_MAX : c);
    }
}

int
sh_match_pair(const sh_match_opts_t *o, uint64_t x, const float *w,
              uint64_t y, unsigned *h, uint32_t *score)
{
    sh_matcher_t m;

    sh_matcher_init(&m, o, x, w);
    return sh_matcher_test(&m, y, h, score);
}

void
sh_match_count_patterns(const uint16_t cost[64], unsigned hmax,
                        uint32_t tmax, uint64_t *counts)
{
    size_t   row = (size_t) tmax + 1;
    unsigned j, i, top = 0;
    uint32_t s;

    /*
     * Knapsack over the bits: after bit j, counts[i][s] is the number of
     * subsets of bits 0..j with i members and cost s.  Adding bit j moves
     * every (i, s) to (i + 1, s + cost_j); going down in i and s reuses
     * one array.  Costs past tmax never come back (costs are >= 0).
     */
    memset(counts, 0, (size_t) (hmax + 1) * row * sizeof(*counts));
    counts[0] = 1;
    for (j = 0; j < 64; j++) {
        uint32_t c = cost[j];

        if (c > tmax) {
            continue;
        }
        top = top < hmax ? top + 1 : hmax;
        for (i = top; i >= 1; i--) {
            uint64_t       *dst = counts + (size_t) i * row;
            const uint64_t *src = counts + (size_t) (i - 1) * row;

            for (s = tmax; s >= c; s--) {
                dst[s] += src[s - c];
                if (s == 0) {
                    break;
                }
            }
        }
    }
}

double
sh_matcher_random_accept(const sh_matcher_t *m)
{
    uint32_t  tmax = m->threshold;
    uint64_t *counts, total = 0;
    size_t    n, k;

    if (tmax == UINT32_MAX) {
        /* hamming: the sum of C(64, i); no cost enters */
        uint16_t zero[64] = { 0 };

        counts = malloc((m->h + 1) * sizeof(*counts));
        if (counts == NULL) {
            return NAN;
        }
        sh_match_count_patterns(zero, m->h, 0, counts);
        n = m->h + 1;
    } else {
        n = (size_t) (m->h + 1) * ((size_t) tmax + 1);
        counts = malloc(n * sizeof(*counts));
        if (counts == NULL) {
            return NAN;
        }
        sh_match_count_patterns(m->cost, m->h, tmax, counts);
    }
    for (k = 0; k < n; k++) {
        total += counts[k];
    }
    free(counts);
    return ldexp((double) total, -64);
}
