/*
 * sh_bphs.c -- Block-Permuted Hamming Search: T permuted sorted copies,
 * binary search for the header, scan of the equal headers.
 *
 * Implementation notes (kept deliberately close to the paper's baseline,
 * with the ordinary optimisations a careful implementation would have):
 *   - a permutation moves whole blocks, so it is G shift-and-mask steps,
 *     and it preserves Hamming distance: the scan compares permuted values;
 *   - the binary search is branch-free (a conditional move per level);
 *   - keys and refs live in separate arrays so the search and the scan
 *     touch only keys;
 *   - tables are sorted with an LSD radix sort (16-bit digits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh_popcnt.h"
#include "sh_bigmem.h"
#include "sh_bphs.h"

typedef struct {
    uint8_t src;        /* shift of the block in the original hash */
    uint8_t dst;        /* shift in the permuted hash */
    uint8_t width;
    uint8_t block;      /* block number, 0 = the top bits */
} bphs_move_t;

typedef struct {
    bphs_move_t moves[SH_BPHS_GMAX];
    uint64_t    hmask;      /* header bits of the permuted hash */
    uint64_t   *keys;
    uint32_t   *refs;
} bphs_table_t;

struct sh_bphs_s {
    unsigned      G, g, T;
    size_t        n, cap;
    uint64_t     *in_hash;      /* added, not yet built */
    uint32_t     *in_ref;
    int           built;
    bphs_table_t *tables;
    uint8_t       first_table[1u << SH_BPHS_GMAX];  /* by block-match mask */
};

int
sh_bphs_design(unsigned tables, unsigned *G, unsigned *g)
{
    switch (tables) {
    case 4:  *G = 4; *g = 1; return 0;
    case 10: *G = 5; *g = 2; return 0;
    case 20: *G = 6; *g = 3; return 0;
    default: return -1;
    }
}

void
sh_bphs_blocks(unsigned G, unsigned *width, unsigned *shift)
{
    unsigned i, top = 64;

    /* As even as possible, the wider ones on top (11,11,11,11,10,10 for
     * G = 6, as in Manku's example). */
    for (i = 0; i < G; i++) {
        width[i] = 64 / G + (i < 64 % G ? 1 : 0);
        top -= width[i];
        shift[i] = top;
    }
}

static uint64_t
binom(unsigned n, unsigned k)
{
    uint64_t r = 1;
    unsigned i;

    for (i = 1; i <= k; i++) {
        r = r * (n - k + i) / i;
    }
    return r;
}

static uint64_t
permute(const bphs_table_t *tb, unsigned G, uint64_t x)
{
    uint64_t y = 0;
    unsigned i;

    for (i = 0; i < G; i++) {
        const bphs_move_t *mv = &tb->moves[i];
        uint64_t m = mv->width == 64 ? UINT64_MAX : (1ull << mv->width) - 1;

        y |= ((x >> mv->src) & m) << mv->dst;
    }
    return y;
}

static uint64_t
unpermute(const bphs_table_t *tb, unsigned G, uint64_t y)
{
    uint64_t x = 0;
    unsigned i;

    for (i = 0; i < G; i++) {
        const bphs_move_t *mv = &tb->moves[i];
        uint64_t m = (1ull << mv->width) - 1;

        x |= ((y >> mv->dst) & m) << mv->src;
    }
    return x;
}

/* Mask of the blocks (by number) on which two permuted values agree. */
static inline __attribute__((always_inline)) unsigned
block_matches(const bphs_table_t *tb, unsigned G, uint64_t diff)
{
    unsigned i, mask = 0;

    for (i = 0; i < G; i++) {
        const bphs_move_t *mv = &tb->moves[i];

        if (((diff >> mv->dst) & ((1ull << mv->width) - 1)) == 0) {
            mask |= 1u << mv->block;
        }
    }
    return mask;
}

sh_bphs_t *
sh_bphs_new(unsigned G, unsigned g, size_t capacity, char *err,
            size_t errlen)
{
    sh_bphs_t *b;
    unsigned   width[SH_BPHS_GMAX], shift[SH_BPHS_GMAX];
    unsigned   i, sub, ti;

    if (G < 2 || G > SH_BPHS_GMAX || g < 1 || g >= G) {
        snprintf(err, errlen, "BPHS needs 1 <= g < G <= %d", SH_BPHS_GMAX);
        return NULL;
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b->G = G;
    b->g = g;
    b->T = (unsigned) binom(G, g);
    b->cap = capacity;
    b->tables = calloc(b->T, sizeof(bphs_table_t));
    b->in_hash = malloc((capacity ? capacity : 1) * sizeof(uint64_t));
    b->in_ref = malloc((capacity ? capacity : 1) * sizeof(uint32_t));
    if (b->tables == NULL || b->in_hash == NULL || b->in_ref == NULL) {
        sh_bphs_free(b);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    sh_bphs_blocks(G, width, shift);

    /* One table per g-subset of the blocks, in increasing bitmask order of
     * the subsets.  first_table[mask] is the first table whose header
     * blocks all lie in `mask`: mode ALL reports a pair only from that
     * table, so pairs agreeing on more than g blocks are not duplicated. */
    memset(b->first_table, 0xff, sizeof(b->first_table));
    ti = 0;
    for (sub = 0; sub < (1u << G); sub++) {
        bphs_table_t *tb;
        unsigned      dst = 64, nm = 0, pass, hbits = 0, mask;

        if ((unsigned) __builtin_popcount(sub) != g) {
            continue;
        }
        tb = &b->tables[ti];
        for (pass = 0; pass < 2; pass++) {
            for (i = 0; i < G; i++) {
                if (((sub >> i) & 1) != (pass == 0)) {
                    continue;
                }
                dst -= width[i];
                tb->moves[nm].src = (uint8_t) shift[i];
                tb->moves[nm].dst = (uint8_t) dst;
                tb->moves[nm].width = (uint8_t) width[i];
                tb->moves[nm].block = (uint8_t) i;
                nm++;
                if (pass == 0) {
                    hbits += width[i];
                }
            }
        }
        tb->hmask = ~0ull << (64 - hbits);
        for (mask = 0; mask < (1u << G); mask++) {
            if ((mask & sub) == sub && b->first_table[mask] == 0xff) {
                b->first_table[mask] = (uint8_t) ti;
            }
        }
        ti++;
    }
    return b;
}

void
sh_bphs_free(sh_bphs_t *b)
{
    unsigned i;

    if (b == NULL) {
        return;
    }
    if (b->tables != NULL) {
        for (i = 0; i < b->T; i++) {
            free(b->tables[i].keys);
            free(b->tables[i].refs);
        }
        free(b->tables);
    }
    free(b->in_hash);
    free(b->in_ref);
    free(b);
}

int
sh_bphs_add(sh_bphs_t *b, uint64_t hash, uint32_t ref)
{
    if (b->built || b->n == b->cap) {
        return -1;
    }
    b->in_hash[b->n] = hash;
    b->in_ref[b->n] = ref;
    b->n++;
    return 0;
}

/* LSD radix sort of (key, ref) pairs, 16 bits per pass. */
static int
radix_sort(uint64_t *keys, uint32_t *refs, size_t n)
{
    uint64_t *k2 = sh_big_alloc(n * sizeof(uint64_t));
    uint32_t *r2 = sh_big_alloc(n * sizeof(uint32_t));
    size_t   *count = malloc(65536 * sizeof(size_t));
    unsigned  pass;
    size_t    i;

    if (k2 == NULL || r2 == NULL || count == NULL) {
        free(k2);
        free(r2);
        free(count);
        return -1;
    }
    for (pass = 0; pass < 4; pass++) {
        unsigned shift = pass * 16;
        size_t   sum = 0;
        uint64_t *tk;
        uint32_t *tr;

        memset(count, 0, 65536 * sizeof(size_t));
        for (i = 0; i < n; i++) {
            count[(keys[i] >> shift) & 0xffff]++;
        }
        for (i = 0; i < 65536; i++) {
            size_t c = count[i];

            count[i] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++) {
            size_t d = count[(keys[i] >> shift) & 0xffff]++;

            k2[d] = keys[i];
            r2[d] = refs[i];
        }
        tk = keys; keys = k2; k2 = tk;
        tr = refs; refs = r2; r2 = tr;
    }
    /* Four passes: the sorted data is back in the caller's arrays. */
    free(k2);
    free(r2);
    free(count);
    return 0;
}

int
sh_bphs_build(sh_bphs_t *b)
{
    unsigned t;
    size_t   i;

    if (b->built) {
        return 0;
    }
    for (t = 0; t < b->T; t++) {
        bphs_table_t *tb = &b->tables[t];

        tb->keys = sh_big_alloc(b->n * sizeof(uint64_t));
        tb->refs = sh_big_alloc(b->n * sizeof(uint32_t));
        if (tb->keys == NULL || tb->refs == NULL) {
            return -1;
        }
        for (i = 0; i < b->n; i++) {
            tb->keys[i] = permute(tb, b->G, b->in_hash[i]);
            tb->refs[i] = b->in_ref[i];
        }
        if (radix_sort(tb->keys, tb->refs, b->n) != 0) {
            return -1;
        }
    }
    free(b->in_hash);
    free(b->in_ref);
    b->in_hash = NULL;
    b->in_ref = NULL;
    b->built = 1;
    return 0;
}

/* First index whose key is >= lo. */
static size_t
lower_bound(const uint64_t *keys, size_t n, uint64_t lo)
{
    const uint64_t *base = keys;
    size_t len = n;

    if (n == 0) {
        return 0;
    }
    while (len > 1) {
        size_t half = len / 2;

        base = base[half - 1] < lo ? base + half : base;
        len -= half;
    }
    return (size_t) (base - keys) + (*base < lo);
}

SH_POPCNT_CLONES size_t
sh_bphs_lookup(const sh_bphs_t *b, uint64_t hash, unsigned h,
               sh_match_mode_t mode, sh_match_t *out, size_t max,
               sh_lookup_stats_t *st)
{
    size_t   found = 0;
    unsigned best = 0, t;
    uint32_t scanned = 0, probes = 0;

    if (!b->built) {
        return 0;
    }
    for (t = 0; t < b->T; t++) {
        const bphs_table_t *tb = &b->tables[t];
        uint64_t key = permute(tb, b->G, hash);
        uint64_t lo = key & tb->hmask;
        size_t   i = lower_bound(tb->keys, b->n, lo);

        probes++;
        for (; i < b->n && (tb->keys[i] & tb->hmask) == lo; i++) {
            uint64_t diff = tb->keys[i] ^ key;
            unsigned d = (unsigned) __builtin_popcountll(diff);

            scanned++;
            if (d > h) {
                continue;
            }
            if (mode == SH_MATCH_ALL) {
                if (b->first_table[block_matches(tb, b->G, diff)] != t) {
                    continue;       /* reported by an earlier table */
                }
                if (found < max) {
                    out[found].ref = tb->refs[i];
                    out[found].distance = d;
                    out[found].hash = unpermute(tb, b->G, tb->keys[i]);
                    out[found].score = UINT32_MAX;      /* no weights */
                }
                found++;
            } else if (found == 0 || d < best) {
                if (max > 0) {
                    out[0].ref = tb->refs[i];
                    out[0].distance = d;
                    out[0].hash = unpermute(tb, b->G, tb->keys[i]);
                    out[0].score = UINT32_MAX;
                }
                best = d;
                found = 1;
                if (mode == SH_MATCH_FIRST || d == 0) {
                    goto done;
                }
            }
        }
    }
done:
    if (st != NULL) {
        st->probes = probes;
        st->scanned = scanned;
    }
    return found;
}

unsigned
sh_bphs_tables(const sh_bphs_t *b)
{
    return b->T;
}

unsigned
sh_bphs_hmax(const sh_bphs_t *b)
{
    return b->G - b->g;
}

size_t
sh_bphs_count(const sh_bphs_t *b)
{
    return b->n;
}

size_t
sh_bphs_fingerprint_bytes(const sh_bphs_t *b)
{
    return (size_t) b->T * b->n * sizeof(uint64_t);
}

size_t
sh_bphs_document_bytes(const sh_bphs_t *b)
{
    return (size_t) b->T * b->n * sizeof(uint32_t);
}
