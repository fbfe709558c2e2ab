/*
 * sh_match.h -- the rule that decides whether a stored fingerprint y is a
 * near-duplicate of a query x whose per-bit weights are W (sh_simhash.h).
 *
 * Two rules:
 *
 *   hamming   H = popcount(x ^ y) <= h: the classic definition (Manku et
 *             al. 2007), blind to which bits differ;
 *   weighted  H <= h and score <= T, where the score adds up, over the
 *             bits that differ, the evidence each flip gives against a
 *             match:  cost_j = log((1 - p_j) / p_j),  p_j = p(|W_j|) the
 *             probability that bit j flips in a near-duplicate, from the
 *             volatility table (sh_volatility.h).  Two differing light
 *             bits (p near 1/2) cost almost nothing; one differing heavy
 *             bit costs a lot.  h is then only a cap.
 *
 * Why this cost: for a near-duplicate bit j differs with probability p_j,
 * for an unrelated page with probability 1/2, independently per bit (PSM
 * paper, section 5.1).  The log-likelihood ratio "unrelated : duplicate" of
 * a difference pattern D is then a constant of the query plus the sum over
 * j in D of log((1 - p_j) / p_j); thresholding it is the most powerful test
 * at its false-match rate (Neyman-Pearson).  It is also minus the VOSH
 * score (sh_vosh.h): the index probes header subsets in increasing cost.
 *
 * Scores are integers in units of 1/SH_SCORE_UNIT nat, rounded per bit, so
 * every caller (index, module, CLI, evaluation) takes bit-identical
 * decisions, and the probability that a random fingerprint is accepted is
 * an exact count (sh_match_random_accept).  1/16 prints exactly in decimal.
 */
#ifndef SH_MATCH_H
#define SH_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "sh_simhash.h"
#include "sh_volatility.h"

#define SH_SCORE_UNIT           16      /* score units per nat */
#define SH_MATCH_HMAX           16      /* largest cap on H */

/* The hamming rule's radius h: the index's bucket probes flip at most
 * SH_H_MAX header bits (sh_index.h). */
#define SH_H_MAX                7       /* largest supported radius */
#define SH_H_DEFAULT            3

typedef enum {
    SH_RULE_HAMMING = 0,
    SH_RULE_WEIGHTED
} sh_rule_t;

/*
 * Defaults, calibrated by `make eval` (docs/QUALITY.md, "Weighted
 * matching"): T is the largest half-nat step at which a random fingerprint
 * is accepted no more often than under "H <= 3" (median over the pages of
 * both corpora: 1.9e-15 and 1.7e-15 against 2.4e-15); the cap on H only
 * bounds the worst page.  The weighted rule is the default because it finds
 * more near-duplicates than every hamming radius at an equal number of
 * close strangers accepted, on every corpus measured.
 */
#define SH_WEIGHTED_T_DEFAULT   12.0
#define SH_WEIGHTED_H_DEFAULT   10
#define SH_RULE_DEFAULT         SH_RULE_WEIGHTED

typedef struct {
    sh_rule_t  rule;
    unsigned   h;           /* hamming: the radius; weighted: cap on H */
    uint32_t   threshold;   /* weighted: T in score units */
    const sh_volatility_t *vol;     /* NULL = the built-in table */
} sh_match_opts_t;

/* A query prepared for testing many candidates. */
typedef struct {
    uint64_t   hash;
    unsigned   h;
    uint32_t   threshold;   /* UINT32_MAX under the hamming rule */
    uint16_t   cost[64];    /* cost of bit j in score units */
} sh_matcher_t;

/* The classic rule: hamming, h = 3 (SH_H_DEFAULT), the built-in table;
 * the weighted threshold at its default, for a later switch of rule. */
void sh_match_opts_init(sh_match_opts_t *o);

/* Switch to rule r with that rule's default h (3, or the cap 10). */
void sh_match_opts_rule(sh_match_opts_t *o, sh_rule_t r);

/* Select the weighted rule with T nats and cap h; -1 if out of range. */
int sh_match_opts_weighted(sh_match_opts_t *o, double t_nats, unsigned h);

/* Thresholds in nats <-> score units (rounded to the nearest unit). */
uint32_t sh_score_from_nats(double nats);
double   sh_score_nats(uint32_t score);

/* "hamming" / "weighted"; parse returns -1 on an unknown name. */
const char *sh_rule_name(sh_rule_t r);
int sh_rule_parse(const char *s, size_t len, sh_rule_t *r);

/*
 * Prepare query x with weights w (sh_result_t.weights; NULL: every bit as
 * volatile as a bit of weight 0, so the weighted rule reduces to H <= h).
 */
void sh_matcher_init(sh_matcher_t *m, const sh_match_opts_t *o, uint64_t x,
                     const float *w);

/*
 * THE rule: does candidate y match the prepared query?  Writes H and the
 * score of the whole difference (under either rule); returns 1 for a
 * match.  Search loops test popcount(x ^ y) <= h first: the score costs a
 * table read per differing bit.
 */
static inline int
sh_matcher_test(const sh_matcher_t *m, uint64_t y, unsigned *h,
                uint32_t *score)
{
    uint64_t diff = m->hash ^ y;
    unsigned d = (unsigned) __builtin_popcountll(diff);
    uint32_t s = 0;

    while (diff != 0) {
        s += m->cost[__builtin_ctzll(diff)];
        diff &= diff - 1;
    }
    *h = d;
    *score = s;
    return d <= m->h && s <= m->threshold;
}

/*
 * Short hubs.  A page whose own content is fewer than SH_SHORT_TERMS terms
 * (sh_block.h; sh_result_t.short_content) and mostly links (sh_result_t.
 * hub): a section index of a heading, a sentence and four links.  Its
 * fingerprint rests on a dozen words of text and the words of its links,
 * and two such pages of one site (a generated index of a class's methods
 * against its sibling's) differ in a name or two: the weighted rule,
 * calibrated on pages of hundreds of words, matched them at H = 6 and 7.
 * A pair with a short hub is therefore a match only within SH_SHORT_H
 * bits, the classic radius.  Short pages that are not hubs keep the rule:
 * the copies of a two-line mail are 4 to 10 bits apart (docs/QUALITY.md,
 * "Hub pages inside a site's navigation").
 */
#define SH_SHORT_H              3

/* Is the page a short hub (see above)? */
static inline int
sh_result_short_hub(const sh_result_t *r)
{
    return r->short_content && r->hub;
}

/* May a pair the rule accepts at distance h stand, given whether either
 * page is a short hub? */
static inline int
sh_match_short(unsigned h, int a_short_hub, int b_short_hub)
{
    return !(a_short_hub || b_short_hub) || h <= SH_SHORT_H;
}

/* The one-shot form: prepare x and test y. */
int sh_match_pair(const sh_match_opts_t *o, uint64_t x, const float *w,
                  uint64_t y, unsigned *h, uint32_t *score);

/*
 * The probability that a uniformly random 64-bit fingerprint matches the
 * prepared query, computed exactly: the number of difference patterns D
 * with |D| <= h and cost(D) <= threshold, counted by a dynamic programme
 * over the 64 costs, divided by 2^64.  For tables of many thresholds, see
 * sh_match_count_patterns.
 */
double sh_matcher_random_accept(const sh_matcher_t *m);

/*
 * counts[i * (tmax + 1) + s]: the number of difference patterns of exactly
 * i bits (i = 0..hmax) whose cost is exactly s (s = 0..tmax score units),
 * for the 64 costs given.  Exact in uint64 up to hmax = 16.  `counts` has
 * (hmax + 1) * (tmax + 1) entries.
 */
void sh_match_count_patterns(const uint16_t cost[64], unsigned hmax,
                             uint32_t tmax, uint64_t *counts);

#endif
