/*
 * sh_bphs_batch.c -- the batch table method: per table, sort the batch by
 * the table's header, then compare all pairs within each run of equal
 * headers.
 *
 * Implementation notes:
 *   - a run is keyed by the top `bits` bits of the header, at most about
 *     log2 n of them: a longer key would only split runs of one.  Entries
 *     that share those bits but not the whole header are compared for
 *     nothing, and never reported by this table (below);
 *   - the sort is an LSD radix sort of at most 16-bit digits, one pass
 *     when the key is that short (the 4-table design), and stable, so
 *     within a run the indices increase and a pair comes out as (a, b)
 *     with a < b without a swap;
 *   - an entry is the fingerprint and, in one more word, its index and its
 *     key: one 16-byte store per entry and pass;
 *   - Hamming distance does not care about the order of the bits, so the
 *     fingerprints are compared as they are, never permuted;
 *   - a pair within h agrees on a set M of at least g blocks.  A table is
 *     named by its header blocks as a bit mask, and the pair is reported
 *     only by the table whose blocks are the g lowest of M: one of the
 *     tables where the two meet, and only one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh_bphs.h"
#include "sh_bigmem.h"
#include "sh_bphs_batch.h"
#include "sh_popcnt.h"

#define DIGIT_BITS  16
#define KEY_BITS    32      /* the key lives in the top half of ent_t.i */

typedef struct {
    unsigned G, g, h;
    uint64_t mask[SH_BPHS_GMAX];            /* block i, in place */
} layout_t;

/* The header of one table, cut to its top `bits` bits: the run key. */
typedef struct {
    unsigned nb;                            /* header blocks */
    unsigned shift[SH_BPHS_GMAX], width[SH_BPHS_GMAX];
    uint64_t bmask[SH_BPHS_GMAX];           /* (1 << width) - 1 */
    unsigned cut;                           /* header bits dropped */
} run_key_t;

typedef struct {
    uint64_t x;
    uint64_t i;         /* key << 32 | index */
} ent_t;

/* The blocks on which two fingerprints agree, as a bit mask. */
static unsigned
agreeing_blocks(const layout_t *l, uint64_t diff)
{
    unsigned i, m = 0;

    for (i = 0; i < l->G; i++) {
        m |= (unsigned) ((diff & l->mask[i]) == 0) << i;
    }
    return m;
}

/* The g lowest blocks of m. */
static unsigned
lowest_blocks(unsigned m, unsigned g)
{
    unsigned r = 0;

    while (g-- > 0) {
        r |= m & -m;
        m &= m - 1;
    }
    return r;
}

static inline uint64_t
run_key(const run_key_t *k, uint64_t x)
{
    uint64_t hd = 0;
    unsigned i;

    for (i = 0; i < k->nb; i++) {
        hd = (hd << k->width[i]) | ((x >> k->shift[i]) & k->bmask[i]);
    }
    return hd >> k->cut;
}

/*
 * The batch sorted by run key, in `passes` digits of `dbits` bits; the
 * first pass reads the fingerprints themselves.  `count` holds
 * passes << dbits counters.  Returns the array holding the result, a or b.
 */
static ent_t *
sort_table(const run_key_t *k, const uint64_t *hash, size_t n,
           unsigned passes, unsigned dbits, uint32_t *count, ent_t *a,
           ent_t *b)
{
    size_t   nd = (size_t) 1 << dbits, j;
    uint64_t dmask = nd - 1;
    unsigned p;

    memset(count, 0, passes * nd * sizeof(uint32_t));
    for (j = 0; j < n; j++) {
        uint64_t key = run_key(k, hash[j]);

        for (p = 0; p < passes; p++) {
            count[p * nd + ((key >> (p * dbits)) & dmask)]++;
        }
    }
    for (p = 0; p < passes; p++) {
        uint32_t *c = count + p * nd, sum = 0, t;

        for (j = 0; j < nd; j++) {
            t = c[j];
            c[j] = sum;
            sum += t;
        }
    }
    for (j = 0; j < n; j++) {
        uint64_t key = run_key(k, hash[j]);
        uint32_t q = count[key & dmask]++;

        a[q].x = hash[j];
        a[q].i = key << 32 | j;
    }
    for (p = 1; p < passes; p++) {
        uint32_t *c = count + p * nd;
        ent_t    *t;

        for (j = 0; j < n; j++) {
            b[c[(a[j].i >> (32 + p * dbits)) & dmask]++] = a[j];
        }
        t = a;
        a = b;
        b = t;
    }
    return a;
}

/* All pairs of the run [s, e) of table `sub` that it reports. */
static inline int
compare_run(const layout_t *l, unsigned sub, const ent_t *r, size_t s,
            size_t e, sh_pair_fn fn, void *arg, sh_bphs_batch_stats_t *st)
{
    size_t a, b;

    st->compared += (e - s) * (e - s - 1) / 2;
    for (a = s; a + 1 < e; a++) {
        uint64_t xa = r[a].x;

        for (b = a + 1; b < e; b++) {
            uint64_t diff = xa ^ r[b].x;
            unsigned d = (unsigned) __builtin_popcountll(diff);

            if (d > l->h
                || lowest_blocks(agreeing_blocks(l, diff), l->g) != sub) {
                continue;
            }
            st->pairs++;
            if (fn(arg, (uint32_t) r[a].i, (uint32_t) r[b].i, d) != 0) {
                return 1;
            }
        }
    }
    return 0;
}

SH_POPCNT_CLONES int
sh_bphs_batch(const uint64_t *hash, size_t n, unsigned G, unsigned g,
              unsigned h, sh_pair_fn fn, void *arg,
              sh_bphs_batch_stats_t *stp, char *err, size_t errlen)
{
    sh_bphs_batch_stats_t st = { 0, 0, 0 };
    layout_t  l;
    unsigned  width[SH_BPHS_GMAX], shift[SH_BPHS_GMAX];
    ent_t    *ea = NULL, *eb = NULL;
    uint32_t *count = NULL;
    unsigned  sub, i, bits, passes;
    size_t    s, e;
    int       rc = 0;

    if (G < 2 || G > SH_BPHS_GMAX || g < 1 || g >= G || h > G - g) {
        snprintf(err, errlen, "batch tables need 1 <= g < G <= %d and "
                 "h <= G - g", SH_BPHS_GMAX);
        return -1;
    }
    if (n >= UINT32_MAX) {
        snprintf(err, errlen, "batch of 2^32 fingerprints or more");
        return -1;
    }
    l.G = G;
    l.g = g;
    l.h = h;
    sh_bphs_blocks(G, width, shift);
    for (i = 0; i < G; i++) {
        l.mask[i] = ((1ull << width[i]) - 1) << shift[i];
    }

    /* About one run per fingerprint: bits = ceil(log2 n). */
    for (bits = 1; bits < KEY_BITS && ((size_t) 1 << bits) < n; bits++) {
    }
    passes = (bits + DIGIT_BITS - 1) / DIGIT_BITS;
    ea = sh_big_alloc((n ? n : 1) * sizeof(ent_t));
    eb = passes > 1 ? sh_big_alloc(n * sizeof(ent_t)) : NULL;
    count = malloc(((size_t) passes << DIGIT_BITS) * sizeof(uint32_t));
    if (ea == NULL || (passes > 1 && eb == NULL) || count == NULL) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
        goto done;
    }
    st.scratch_bytes = n * sizeof(ent_t) * passes
                       + ((size_t) passes << DIGIT_BITS) * sizeof(uint32_t);

    for (sub = 0; sub < (1u << G) && rc == 0; sub++) {
        run_key_t k;
        unsigned  hbits = 0, kbits, kpasses;
        ent_t    *r;

        if ((unsigned) __builtin_popcount(sub) != g) {
            continue;
        }
        k.nb = 0;
        for (i = 0; i < G; i++) {
            if ((sub >> i) & 1) {
                k.shift[k.nb] = shift[i];
                k.width[k.nb] = width[i];
                k.bmask[k.nb] = (1ull << width[i]) - 1;
                k.nb++;
                hbits += width[i];
            }
        }
        kbits = hbits < bits ? hbits : bits;
        k.cut = hbits - kbits;
        kpasses = (kbits + DIGIT_BITS - 1) / DIGIT_BITS;
        r = sort_table(&k, hash, n, kpasses,
                       (kbits + kpasses - 1) / kpasses, count, ea, eb);

        for (s = 0; s < n && rc == 0; s = e) {
            uint64_t key = r[s].i >> 32;

            for (e = s + 1; e < n && r[e].i >> 32 == key; e++) {
            }
            if (e - s >= 2) {
                rc = compare_run(&l, sub, r, s, e, fn, arg, &st);
            }
        }
    }

done:
    free(ea);
    free(eb);
    free(count);
    if (stp != NULL) {
        *stp = st;
    }
    return rc;
}
