/*
 * fuzz_volatility.c -- calibration tables: sh_volatility_load on any text
 * (the file `simhash calibrate -o` writes, `simhash_volatility` reads), and
 * sh_volatility_from_samples on any samples.
 *
 * Input: the file itself; or, when the first byte is 0xFF, float samples
 * of |Y| (four bytes each) for sh_volatility_from_samples.
 *
 * A refusal must come with a message.  A table accepted must make sense
 * to everything that uses it:
 *   - p(|w|) within [0, 0.5] and non-increasing in |w| (a heavier bit
 *     flips less often), its log-odds finite for any weight, infinities
 *     and NaN included;
 *   - the header ranking a permutation of the top t bits with
 *     non-increasing log-odds, for t up to 64;
 *   - VOSH over those log-odds emitting every subset of at most h bits
 *     exactly once, in non-increasing score;
 *   - save and load back giving the same table (p everywhere, k(t) for
 *     every mode, radius, width and recall);
 *   - the online learner's table built on it as prior valid too.
 */
#include <math.h>

#include "fuzz_util.h"

#include "sh_volatility.h"
#include "sh_vosh.h"

#define FVOL_GRID   1100        /* |w| from 0 to past the table's range */

static void
fvol_init(void)
{
    (void) sh_volatility_default();
}

static float
fvol_w(unsigned i)
{
    return (float) i / 128.0f;
}

/* Every subset of at most h of t ranked bits, once, best first. */
static void
fvol_vosh(const float *lo, unsigned t, unsigned h)
{
    static sh_vosh_node_t heap[4200];
    static uint8_t        seen[1u << 12];
    sh_vosh_t             v;
    sh_vosh_node_t        s;
    uint64_t              want = 0, c = 1;
    unsigned              i, got = 0, mask;
    double                last = INFINITY;

    for (i = 1; i <= h && i <= t; i++) {
        c = c * (t - i + 1) / i;
        want += c;
    }
    memset(seen, 0, sizeof(seen));
    sh_vosh_init(&v, lo, t, h, heap, SH_VOSH_HEAP_FOR(want, h));
    while (sh_vosh_next(&v, &s)) {
        FUZZ_CHECK(s.size >= 1 && s.size <= h);
        mask = 0;
        for (i = 0; i < s.size; i++) {
            FUZZ_CHECK(s.idx[i] < t);
            FUZZ_CHECK(i == 0 || s.idx[i] > s.idx[i - 1]);
            mask |= 1u << s.idx[i];
        }
        FUZZ_CHECK(!seen[mask]);
        seen[mask] = 1;
        FUZZ_CHECK(s.score <= last);
        last = s.score;
        got++;
    }
    FUZZ_CHECK(got == want);
}

static void
fvol_check(const sh_volatility_t *v, uint64_t seed)
{
    static const float odd[] = { INFINITY, -INFINITY, NAN, -0.0f, 1e-45f,
                                 -1e38f, 7.996f, 8.0f };
    float    lo[64], w[64];
    uint8_t  bit_of[64];
    uint64_t used;
    float    p, l, prev = 1.0f, prev_l = INFINITY;
    unsigned i, t, r;

    for (i = 0; i < FVOL_GRID; i++) {
        /* The log-odds are the table; p is computed from them in float,
         * where e / (1 + e) may round up by an ulp between neighbours. */
        l = sh_volatility_logodds(v, fvol_w(i));
        FUZZ_CHECK(isfinite(l) && l <= prev_l);
        p = sh_volatility_p(v, fvol_w(i));
        FUZZ_CHECK(p >= 0.0f && p <= 0.5f);
        FUZZ_CHECK(p <= prev * (1.0f + 1e-6f));
        FUZZ_CHECK(sh_volatility_p(v, -fvol_w(i)) == p);
        prev = p;
        prev_l = l;
    }
    for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        FUZZ_CHECK(isfinite(sh_volatility_logodds(v, odd[i])));
    }

    /* Rank the header for weights from the seed, every width. */
    for (i = 0; i < 64; i++) {
        uint64_t r64 = fuzz_rng(&seed);

        w[i] = r64 % 7 == 0 ? odd[r64 % 8]
                            : (float) ((int) (r64 & 0x3FF) - 512) / 64.0f;
    }
    for (t = 1; t <= 64; t++) {
        sh_volatility_rank_header(v, w, t, lo, bit_of);
        used = 0;
        for (r = 0; r < t; r++) {
            FUZZ_CHECK(bit_of[r] >= 64 - t && bit_of[r] <= 63);
            FUZZ_CHECK(!((used >> bit_of[r]) & 1));
            used |= 1ull << bit_of[r];
            FUZZ_CHECK(isfinite(lo[r]));
            FUZZ_CHECK(r == 0 || lo[r] <= lo[r - 1]);
        }
        if (t == 1 + seed % 12) {
            /* One width a table: a full enumeration is 4095 subsets. */
            fvol_vosh(lo, t, 1 + (unsigned) (seed / 12 % SH_VOSH_HMAX));
        }
    }
}

/* Same p everywhere and the same k(t). */
static void
fvol_same(const sh_volatility_t *a, const sh_volatility_t *b)
{
    unsigned i, all, h, t, l;

    for (i = 0; i < FVOL_GRID; i++) {
        FUZZ_CHECK(sh_volatility_p(a, fvol_w(i)) == sh_volatility_p(b,
                                                                fvol_w(i)));
    }
    for (all = 0; all < 2; all++) {
        for (h = 1; h <= SH_VOSH_HMAX; h++) {
            for (t = SH_VOL_TMIN; t <= SH_VOL_TMAX; t++) {
                for (l = 0; l < SH_VOL_NRECALL; l++) {
                    float rc = sh_volatility_recall_levels[l];

                    FUZZ_CHECK(sh_volatility_k(a, (int) all, h, t, rc, 0)
                               == sh_volatility_k(b, (int) all, h, t, rc,
                                                  0));
                }
            }
        }
    }
}

static void
fvol_accepted(sh_volatility_t *v, uint64_t seed)
{
    sh_volatility_t  *back, *learned;
    sh_learn_counts_t c;
    char              path[256], err[256];
    unsigned          i;

    fvol_check(v, seed);

    fuzz_tmp_path("volatility", path, sizeof(path));
    if (sh_volatility_save(v, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_volatility: save: %s\n", err);
        FUZZ_CHECK(!"sh_volatility_save");
    }
    back = sh_volatility_load(path, err, sizeof(err));
    if (back == NULL) {
        fprintf(stderr, "fuzz_volatility: load back: %s\n", err);
    }
    unlink(path);
    FUZZ_CHECK(back != NULL);
    fvol_same(v, back);
    sh_volatility_free(back);

    memset(&c, 0, sizeof(c));
    for (i = 0; i < SH_LEARN_BINS; i++) {
        c.seen[i] = fuzz_rng(&seed) % 1000;
        c.flipped[i] = c.seen[i] ? fuzz_rng(&seed) % (c.seen[i] + 1) : 0;
    }
    learned = sh_volatility_learned(&c, v);
    FUZZ_CHECK(learned != NULL);
    fvol_check(learned, seed);
    sh_volatility_free(learned);
}

static int
fvol_one(const uint8_t *data, size_t size)
{
    sh_volatility_t *v;
    char             path[64], err[256];
    uint64_t         seed = size;
    int              fd;

    err[0] = '\0';
    if (size > 0 && data[0] == 0xFF) {
        size_t n = (size - 1) / sizeof(float);
        float *s = malloc(n * sizeof(float) + 1);

        FUZZ_CHECK(s != NULL);
        if (n > 0) {
            memcpy(s, data + 1, n * sizeof(float));
        }
        v = sh_volatility_from_samples(s, n, err, sizeof(err));
        free(s);
    } else {
        fd = fuzz_memfile(data, size, path, sizeof(path));
        v = sh_volatility_load(path, err, sizeof(err));
        close(fd);
    }
    if (v == NULL) {
        FUZZ_CHECK(err[0] != '\0');
        return 0;
    }
    fvol_accepted(v, seed);
    sh_volatility_free(v);
    return 0;
}

FUZZ_ENTRY(fvol_init, fvol_one)
