/*
 * sh_psm_batch.c -- PSM over a batch: sort once by the top t bits, compute
 * every page's probes, sort the probes by the bucket they probe, then sweep
 * the buckets once.
 *
 * Implementation notes:
 *   - the copy is the batch in bucket order (a counting sort) and the
 *     start of every bucket; the probes are (fingerprint, page) entries in
 *     the order of the bucket they probe, sorted the same way.  The sweep
 *     then reads both arrays from start to end: no probe waits for a miss,
 *     where probing page after page costs two dependent misses per probe
 *     (the bucket's start, then its entries);
 *   - the pairs within a bucket are found by both pages (each probes its
 *     own bucket) and are compared once;
 *   - the masks are kept as t-bit bucket offsets, k per page, 0 for none
 *     (VOSH runs out of subsets when t is small).  Page i probing bucket
 *     p0(i) ^ m finds page j; j finds i too exactly when m is among j's
 *     masks, and then only the later page reports the pair;
 *   - masks and weights are read in page order: the weights (most of the
 *     input) stream through once;
 *   - under the weighted rule a candidate within the cap on H is judged
 *     with the later page's weights, whichever page found it: the verdict
 *     the index gives when the batch streams through it (the later page
 *     is the query).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "sh_popcnt.h"
#include "sh_bigmem.h"
#include "sh_psm_batch.h"
#include "sh_vosh.h"

#define T_MAX       30
#define AHEAD       4       /* pages whose weights are prefetched ahead */

typedef struct {
    uint64_t x;
    uint64_t i;             /* page index */
} ent_t;

unsigned
sh_psm_batch_t_for(size_t n)
{
    unsigned t = sh_index_t_for(n);

    return t > T_MAX ? T_MAX : t;
}

unsigned
sh_psm_batch_probes_for(const sh_lookup_opts_t *o, unsigned t)
{
    const sh_volatility_t *vol = o->vol ? o->vol : sh_volatility_default();
    float    r = o->recall < 1 ? o->recall : 1;
    unsigned k;

    if (o->h == 0) {
        return 0;
    }
    k = o->probes;
    if (k == 0) {
        /* One chance, as the index (sh_psm_batch.h says why). */
        k = sh_volatility_k(vol, 1, o->h > SH_H_MAX ? SH_H_MAX : o->h, t,
                            r, 4 * t);
    }
    return k > SH_PROBES_MAX ? SH_PROBES_MAX : k;
}

/* Page i's k masks as bucket offsets, the rest 0 when VOSH runs out. */
static void
page_masks(const sh_volatility_t *vol, const float *w, unsigned t,
           unsigned h, unsigned k, sh_vosh_node_t *heap, uint32_t *m)
{
    float          lo[T_MAX];
    uint8_t        bit_of[T_MAX];
    sh_vosh_t      v;
    sh_vosh_node_t node;
    unsigned       q = 0, i, nbits = k < t ? k : t;

    /* The first k subsets use only the k top ranks (sh_volatility.h). */
    sh_volatility_rank_top(vol, w, t, nbits, lo, bit_of);
    sh_vosh_init(&v, lo, nbits, h, heap, SH_VOSH_HEAP_FOR(k, h));
    while (q < k && sh_vosh_next(&v, &node)) {
        uint32_t mask = 0;

        for (i = 0; i < node.size; i++) {
            mask |= 1u << (bit_of[node.idx[i]] - (64 - t));
        }
        m[q++] = mask;
    }
    for (; q < k; q++) {
        m[q] = 0;
    }
}

/* The weighted rule's verdict on pages a < b (see above). */
static int
weighted_match(const sh_match_opts_t *mo, const uint64_t *hash,
               const float *const *w, uint32_t a, uint32_t b)
{
    unsigned d;
    uint32_t score;

    return sh_match_pair(mo, hash[b], w[b], hash[a], &d, &score);
}

static int
has_mask(const uint32_t *m, unsigned k, uint32_t mask)
{
    unsigned q;

    for (q = 0; q < k; q++) {
        if (m[q] == mask) {
            return 1;
        }
    }
    return 0;
}

/* Counting sort, middle step: bucket sizes in start[1..nb] become the
 * starts of the buckets, start[b] = where bucket b begins. */
static void
sizes_to_starts(uint32_t *start, size_t nb)
{
    size_t b;

    start[0] = 0;
    for (b = 1; b <= nb; b++) {
        start[b] += start[b - 1];
    }
}

/* Last step: placing the entries moved start[b] to the end of bucket b;
 * shift back so that start[b] is its start again. */
static void
ends_to_starts(uint32_t *start, size_t nb)
{
    memmove(start + 1, start, nb * sizeof(uint32_t));
    start[0] = 0;
}

/* The copy of the batch in bucket order (stable: the pages in a bucket
 * ascend), and the start of every bucket. */
static void
bucket_order(const uint64_t *hash, size_t n, unsigned t, ent_t *ent,
             uint32_t *start)
{
    unsigned shift = 64 - t;
    size_t   nb = (size_t) 1 << t, i;

    memset(start, 0, (nb + 1) * sizeof(uint32_t));
    for (i = 0; i < n; i++) {
        start[(hash[i] >> shift) + 1]++;
    }
    sizes_to_starts(start, nb);
    for (i = 0; i < n; i++) {
        uint32_t at = start[hash[i] >> shift]++;

        ent[at].x = hash[i];
        ent[at].i = i;
    }
    ends_to_starts(start, nb);
}

/* Every page's k masks, then its probes in the order of the bucket they
 * probe, and the start of every bucket's probes. */
static void
probe_order(const sh_volatility_t *vol, const uint64_t *hash,
            const float *const *w, size_t n, unsigned t, unsigned vh,
            unsigned k, sh_vosh_node_t *heap, uint32_t *masks, ent_t *probe,
            uint32_t *pstart)
{
    unsigned shift = 64 - t, q;
    size_t   nb = (size_t) 1 << t, i;

    memset(pstart, 0, (nb + 1) * sizeof(uint32_t));
    for (i = 0; i < n; i++) {
        uint32_t p0 = (uint32_t) (hash[i] >> shift);

        if (i + AHEAD < n && w[i + AHEAD] != NULL) {
            __builtin_prefetch(w[i + AHEAD] + 64 - t);
            __builtin_prefetch(w[i + AHEAD] + 63);
        }
        page_masks(vol, w[i], t, vh, k, heap, masks + i * k);
        for (q = 0; q < k && masks[i * k + q] != 0; q++) {
            pstart[(p0 ^ masks[i * k + q]) + 1]++;
        }
    }
    sizes_to_starts(pstart, nb);
    for (i = 0; i < n; i++) {
        uint32_t p0 = (uint32_t) (hash[i] >> shift);

        for (q = 0; q < k && masks[i * k + q] != 0; q++) {
            uint32_t at = pstart[p0 ^ masks[i * k + q]]++;

            probe[at].x = hash[i];
            probe[at].i = i;
        }
    }
    ends_to_starts(pstart, nb);
}

SH_POPCNT_CLONES int
sh_psm_batch(const uint64_t *hash, const float *const *w, size_t n,
             const sh_lookup_opts_t *o, unsigned t, sh_pair_fn fn,
             void *arg, sh_psm_batch_stats_t *stp, char *err, size_t errlen)
{
    const sh_volatility_t *vol = o->vol ? o->vol : sh_volatility_default();
    sh_psm_batch_stats_t st;
    sh_match_opts_t mo;
    unsigned  h, vh, k, shift;
    int       weighted;
    size_t    nb, b;
    ent_t    *ent = NULL, *probe = NULL;
    uint32_t *start = NULL, *pstart = NULL, *masks = NULL;
    sh_vosh_node_t *heap = NULL;
    int       rc = 0;

    memset(&st, 0, sizeof(st));
    sh_lookup_match_opts(o, &mo);
    h = mo.h;                       /* the radius, or the cap on H */
    vh = h > SH_H_MAX ? SH_H_MAX : h;       /* header bits flipped */
    weighted = mo.rule == SH_RULE_WEIGHTED;
    if (t == 0) {
        t = sh_psm_batch_t_for(n);
    }
    if (t > T_MAX) {
        snprintf(err, errlen, "header bits t must be at most %d", T_MAX);
        return -1;
    }
    k = sh_psm_batch_probes_for(o, t);
    if ((uint64_t) n * (k + 1) >= UINT32_MAX) {
        snprintf(err, errlen, "batch of %zu pages with %u probes each: too "
                 "many probes (2^32)", n, k);
        return -1;
    }
    shift = 64 - t;
    nb = (size_t) 1 << t;
    st.t = t;
    st.k = k;

    ent = sh_big_alloc((n ? n : 1) * sizeof(ent_t));
    start = sh_big_alloc((nb + 1) * sizeof(uint32_t));
    pstart = sh_big_alloc((nb + 1) * sizeof(uint32_t));
    masks = sh_big_alloc((n * k > 0 ? n * k : 1) * sizeof(uint32_t));
    probe = sh_big_alloc((n * k > 0 ? n * k : 1) * sizeof(ent_t));
    heap = malloc(SH_VOSH_HEAP_FOR(k, vh) * sizeof(sh_vosh_node_t));
    if (ent == NULL || start == NULL || pstart == NULL || masks == NULL
        || probe == NULL || heap == NULL)
    {
        snprintf(err, errlen, "out of memory");
        rc = -1;
        goto done;
    }
    st.scratch_bytes = n * sizeof(ent_t) + 2 * (nb + 1) * sizeof(uint32_t)
                       + n * k * (sizeof(uint32_t) + sizeof(ent_t));

    bucket_order(hash, n, t, ent, start);
    probe_order(vol, hash, w, n, t, vh, k, heap, masks, probe, pstart);
    st.probes = n + pstart[nb];

    for (b = 0; b < nb && rc == 0; b++) {
        uint32_t s0 = start[b], e0 = start[b + 1], a, c, pq;

        /* Pairs within the bucket: both pages find them, report once. */
        for (a = s0; a + 1 < e0 && rc == 0; a++) {
            for (c = a + 1; c < e0; c++) {
                unsigned d = (unsigned) __builtin_popcountll(ent[a].x
                                                             ^ ent[c].x);

                st.compared++;
                if (d <= h
                    && (!weighted
                        || weighted_match(&mo, hash, w, (uint32_t) ent[a].i,
                                          (uint32_t) ent[c].i)))
                {
                    st.pairs++;
                    if (fn(arg, (uint32_t) ent[a].i, (uint32_t) ent[c].i, d)
                        != 0) {
                        rc = 1;
                        break;
                    }
                }
            }
        }

        /* The probes into it from other buckets. */
        for (pq = pstart[b]; pq < pstart[b + 1] && rc == 0; pq++) {
            uint64_t x = probe[pq].x;
            uint32_t pi = (uint32_t) probe[pq].i;
            uint32_t m = (uint32_t) (x >> shift) ^ (uint32_t) b;

            for (a = s0; a < e0; a++) {
                uint32_t pj = (uint32_t) ent[a].i;
                unsigned d = (unsigned) __builtin_popcountll(ent[a].x ^ x);

                st.compared++;
                if (d > h
                    || (pj > pi && has_mask(masks + (size_t) pj * k, k, m))
                    || (weighted
                        && !weighted_match(&mo, hash, w, pj < pi ? pj : pi,
                                           pj < pi ? pi : pj)))
                {
                    continue;       /* too far, pj will report it, or the
                                       rule says no */
                }
                st.pairs++;
                if ((pj < pi ? fn(arg, pj, pi, d) : fn(arg, pi, pj, d))
                    != 0) {
                    rc = 1;
                    break;
                }
            }
        }
    }

done:
    free(ent);
    free(start);
    free(pstart);
    free(masks);
    free(probe);
    free(heap);
    if (stp != NULL) {
        *stp = st;
    }
    return rc;
}
