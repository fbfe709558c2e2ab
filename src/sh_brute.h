/*
 * sh_brute.h -- exhaustive search: one popcount per stored fingerprint.
 * The reference the tests check BPHS and PSM against, the brute-force line
 * of the benchmark at small n, and the truth for the weighted rule.
 */
#ifndef SH_BRUTE_H
#define SH_BRUTE_H

#include <stddef.h>
#include <stdint.h>

#include "sh_index.h"

typedef struct {
    uint64_t *hash;
    uint32_t *ref;
    size_t    n;
    size_t    cap;
} sh_brute_t;

int  sh_brute_init(sh_brute_t *b, size_t capacity);
void sh_brute_free(sh_brute_t *b);
int  sh_brute_add(sh_brute_t *b, uint64_t hash, uint32_t ref);

/*
 * Same contract as sh_index_lookup, under the rule of the prepared query
 * `m` (sh_match.h); every mode is exact.  The exact baseline of the
 * weighted rule, which no block design can serve.
 */
size_t sh_brute_match(const sh_brute_t *b, const sh_matcher_t *m,
                      sh_match_mode_t mode, sh_match_t *out, size_t max);

/*
 * Every match of every query: calls fn(arg, query index, match) for each
 * pair the rule accepts, queries in any order per stored block.  The same
 * comparisons as sh_brute_match for each query, in blocks of stored
 * fingerprints that stay in the cache while all queries pass over them:
 * compute-bound instead of one memory sweep per query.
 */
typedef void (*sh_brute_join_fn)(void *arg, size_t query,
                                 const sh_match_t *m);
void sh_brute_join(const sh_brute_t *b, const sh_matcher_t *q, size_t nq,
                   sh_brute_join_fn fn, void *arg);

/* The same under the hamming rule with radius h. */
size_t sh_brute_lookup(const sh_brute_t *b, uint64_t hash, unsigned h,
                       sh_match_mode_t mode, sh_match_t *out, size_t max);

#endif
