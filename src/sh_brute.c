/*
 * sh_brute.c -- exhaustive Hamming search over parallel arrays.
 */
#include <stdlib.h>

#include "sh_popcnt.h"
#include "sh_brute.h"

int
sh_brute_init(sh_brute_t *b, size_t capacity)
{
    b->hash = malloc((capacity ? capacity : 1) * sizeof(uint64_t));
    b->ref = malloc((capacity ? capacity : 1) * sizeof(uint32_t));
    b->n = 0;
    b->cap = capacity;
    if (b->hash == NULL || b->ref == NULL) {
        sh_brute_free(b);
        return -1;
    }
    return 0;
}

void
sh_brute_free(sh_brute_t *b)
{
    free(b->hash);
    free(b->ref);
    b->hash = NULL;
    b->ref = NULL;
    b->n = b->cap = 0;
}

int
sh_brute_add(sh_brute_t *b, uint64_t hash, uint32_t ref)
{
    if (b->n == b->cap) {
        return -1;
    }
    b->hash[b->n] = hash;
    b->ref[b->n] = ref;
    b->n++;
    return 0;
}

SH_POPCNT_CLONES size_t
sh_brute_match(const sh_brute_t *b, const sh_matcher_t *m,
               sh_match_mode_t mode, sh_match_t *out, size_t max)
{
    size_t   i, found = 0;
    uint64_t best = 0;
    int      weighted = m->threshold != UINT32_MAX;

    for (i = 0; i < b->n; i++) {
        unsigned d;
        uint32_t score;
        uint64_t key;

        if ((unsigned) __builtin_popcountll(b->hash[i] ^ m->hash) > m->h
            || !sh_matcher_test(m, b->hash[i], &d, &score))
        {
            continue;
        }
        if (mode == SH_MATCH_ALL) {
            if (found < max) {
                out[found].ref = b->ref[i];
                out[found].distance = d;
                out[found].hash = b->hash[i];
                out[found].score = score;
            }
            found++;
            continue;
        }
        /* The index's order for CLOSEST: score (weighted) or H, then H. */
        key = (weighted ? (uint64_t) score : d) << 8 | d;
        if (found == 0 || key < best) {
            if (max > 0) {
                out[0].ref = b->ref[i];
                out[0].distance = d;
                out[0].hash = b->hash[i];
                out[0].score = score;
            }
            best = key;
            found = 1;
            if (mode == SH_MATCH_FIRST) {
                break;
            }
        }
    }
    return found;
}

/* 32 KB of fingerprints: L1-resident while the queries stream past. */
#define JOIN_BLOCK  4096

SH_POPCNT_CLONES void
sh_brute_join(const sh_brute_t *b, const sh_matcher_t *q, size_t nq,
              sh_brute_join_fn fn, void *arg)
{
    size_t lo, i, j;

    for (lo = 0; lo < b->n; lo += JOIN_BLOCK) {
        size_t hi = lo + JOIN_BLOCK < b->n ? lo + JOIN_BLOCK : b->n;

        for (i = 0; i < nq; i++) {
            uint64_t x = q[i].hash;
            unsigned cap = q[i].h;

            for (j = lo; j < hi; j++) {
                sh_match_t m;

                if ((unsigned) __builtin_popcountll(b->hash[j] ^ x) > cap
                    || !sh_matcher_test(&q[i], b->hash[j], &m.distance,
                                        &m.score))
                {
                    continue;
                }
                m.ref = b->ref[j];
                m.hash = b->hash[j];
                fn(arg, i, &m);
            }
        }
    }
}

size_t
sh_brute_lookup(const sh_brute_t *b, uint64_t hash, unsigned h,
                sh_match_mode_t mode, sh_match_t *out, size_t max)
{
    sh_match_opts_t o;
    sh_matcher_t    m;

    sh_match_opts_init(&o);
    o.h = h;
    sh_matcher_init(&m, &o, hash, NULL);
    return sh_brute_match(b, &m, mode, out, max);
}
