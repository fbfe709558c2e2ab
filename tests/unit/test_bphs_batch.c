/*
 * test_bphs_batch.c -- the batch table method is exact: for every design
 * and radius it reports exactly the pairs brute force finds, each once,
 * on random batches and on the cases that break a table method: many
 * equal fingerprints, differences sitting on block boundaries, pairs that
 * agree on exactly g blocks (one table only), and batches large enough
 * for the two-pass sort.
 */
#define TEST_RNG_SEED 0x243f6a8885a308d3ull
#include "test_util.h"
#include "test_sets.h"

#include "sh_bphs.h"
#include "sh_bphs_batch.h"
#include "sh_brute.h"

/* The batch agrees with `ref` exactly: same pairs, once each, a < b,
 * right distances. */
static void
check_against(const uint64_t *x, size_t n, unsigned G, unsigned g,
              unsigned h, pairs_t *ref)
{
    pairs_t got = { 0 };
    sh_bphs_batch_stats_t st;
    char    err[128];
    size_t  i;

    assert_int_equal(sh_bphs_batch(x, n, G, g, h, collect, &got, &st, err,
                                   sizeof(err)), 0);
    for (i = 0; i < got.n; i++) {
        assert_true(got.p[i].a < got.p[i].b);
        assert_true(got.p[i].b < n);
        assert_int_equal(got.p[i].d,
                         __builtin_popcountll(x[got.p[i].a]
                                              ^ x[got.p[i].b]));
    }
    qsort(got.p, got.n, sizeof(pair_t), cmp_pair);
    qsort(ref->p, ref->n, sizeof(pair_t), cmp_pair);
    if (got.n != ref->n) {
        fail_msg("G=%u g=%u h=%u n=%zu: %zu pairs, brute force %zu", G, g, h,
                 n, got.n, ref->n);
    }
    for (i = 0; i < got.n; i++) {
        assert_int_equal(cmp_pair(&got.p[i], &ref->p[i]), 0);
        assert_int_equal(got.p[i].d, ref->p[i].d);
    }
    assert_int_equal(st.pairs, got.n);
    free(got.p);
}

static void
check(const uint64_t *x, size_t n, unsigned G, unsigned g, unsigned h)
{
    pairs_t ref = { 0 };

    brute_pairs(x, n, h, &ref);
    check_against(x, n, G, g, h, &ref);
    free(ref.p);
}

/* Clusters around a few centres, so that pairs share more than g blocks
 * as often as exactly g. */
static uint64_t *
clustered(size_t n, unsigned centres, unsigned spread)
{
    uint64_t *x = malloc(n * sizeof(uint64_t));
    size_t    i;

    assert_non_null(x);
    for (i = 0; i < n; i++) {
        x[i] = i < centres ? rnd()
                           : flip_random(x[rnd() % centres],
                                         (unsigned) (rnd() % (spread + 1)));
    }
    return x;
}

static const unsigned designs[][2] = {
    { 4, 1 }, { 5, 2 }, { 6, 3 },   /* Manku's, h = 3 */
    { 8, 1 },                       /* h up to 7 */
    { 7, 3 }, { 5, 1 }, { 2, 1 },
};

static void
test_random_batches(void **state)
{
    unsigned d, h;

    for (d = 0; d < sizeof(designs) / sizeof(designs[0]); d++) {
        unsigned  G = designs[d][0], g = designs[d][1];
        uint64_t *x = clustered(1500, 150, G - g + 2);

        for (h = 0; h <= G - g; h++) {
            check(x, 1500, G, g, h);
        }
        free(x);
    }
}

/* Hundreds of equal fingerprints: runs far longer than the average, and
 * pairs that agree on every block (reported by the first table only). */
static void
test_equal_fingerprints(void **state)
{
    enum { N = 1200 };
    uint64_t *x = malloc(N * sizeof(uint64_t));
    uint64_t  c0 = rnd(), c1 = flip_random(c0, 2), c2 = flip_random(c0, 5);
    unsigned  i, h;

    for (i = 0; i < N; i++) {
        switch (i % 4) {
        case 0:  x[i] = c0; break;
        case 1:  x[i] = c1; break;
        case 2:  x[i] = i % 8 == 2 ? c2 : 0; break;
        default: x[i] = rnd(); break;
        }
    }
    for (h = 0; h <= 7; h++) {
        check(x, N, 8, 1, h);
    }
    for (h = 0; h <= 3; h++) {
        check(x, N, 4, 1, h);
        check(x, N, 5, 2, h);
        check(x, N, 6, 3, h);
    }
    free(x);
}

/*
 * Differences on block boundaries: the lowest or highest bit of a block,
 * or both sides of a boundary; d differing blocks out of G, up to G - g,
 * so that many pairs agree on exactly g blocks and meet in one table only.
 */
static void
test_block_boundaries(void **state)
{
    enum { N = 2000 };
    unsigned d;

    for (d = 0; d < sizeof(designs) / sizeof(designs[0]); d++) {
        unsigned  G = designs[d][0], g = designs[d][1], hmax = G - g;
        unsigned  width[SH_BPHS_GMAX], shift[SH_BPHS_GMAX], h;
        uint64_t *x = malloc(N * sizeof(uint64_t));
        size_t    i;

        sh_bphs_blocks(G, width, shift);
        for (i = 0; i < N; i++) {
            uint64_t y;
            unsigned used = 0, nd, k;

            if (i < 100) {
                x[i] = i % 2 ? rnd() : (i % 4 ? UINT64_MAX : 0);
                continue;
            }
            y = x[rnd() % 100];
            nd = 1 + (unsigned) (rnd() % hmax);
            for (k = 0; k < nd; k++) {
                unsigned b = (unsigned) (rnd() % G);

                if (used & (1u << b)) {
                    continue;
                }
                used |= 1u << b;
                switch (rnd() % 3) {
                case 0:                     /* lowest bit of block b */
                    y ^= 1ull << shift[b];
                    break;
                case 1:                     /* highest bit of block b */
                    y ^= 1ull << (shift[b] + width[b] - 1);
                    break;
                default:                    /* across the boundary below */
                    if (b + 1 < G && !(used & (1u << (b + 1)))) {
                        used |= 1u << (b + 1);
                        y ^= 3ull << (shift[b] - 1);
                        k++;
                    } else {
                        y ^= 1ull << shift[b];
                    }
                }
            }
            x[i] = y;
        }
        for (h = 0; h <= hmax; h++) {
            check(x, N, G, g, h);
        }
        free(x);
    }
}

/* More than 2^16 fingerprints: keys longer than one radix digit, two
 * passes.  The reference is the online BPHS (exact, test_bphs.c): brute
 * force would take minutes. */
static void
test_two_pass_sort(void **state)
{
    enum { N = 100000 };
    uint64_t   *x = clustered(N, 20000, 4);
    sh_match_t *m = malloc(N * sizeof(sh_match_t));
    pairs_t     ref = { 0 };
    sh_bphs_t  *b;
    char        err[128];
    size_t      i, j, nm;

    assert_non_null(m);
    /* and a block of equal ones */
    for (i = 0; i < 300; i++) {
        x[N - 1 - i] = x[7];
    }
    b = sh_bphs_new(5, 2, N, err, sizeof(err));
    assert_non_null(b);
    for (i = 0; i < N; i++) {
        assert_int_equal(sh_bphs_add(b, x[i], (uint32_t) i), 0);
    }
    assert_int_equal(sh_bphs_build(b), 0);
    for (i = 0; i < N; i++) {
        nm = sh_bphs_lookup(b, x[i], 3, SH_MATCH_ALL, m, N, NULL);
        for (j = 0; j < nm; j++) {
            if (m[j].ref > i) {
                collect(&ref, (uint32_t) i, m[j].ref, m[j].distance);
            }
        }
    }
    sh_bphs_free(b);
    assert_true(ref.n > 10000);
    check_against(x, N, 5, 2, 3, &ref);
    check_against(x, N, 4, 1, 3, &ref);
    check_against(x, N, 6, 3, 3, &ref);
    free(ref.p);
    free(m);
    free(x);
}

static void
test_small_and_bad(void **state)
{
    uint64_t x[3] = { 5, 5, 7 };
    pairs_t  got = { 0 };
    char     err[128];

    /* empty, one, two */
    assert_int_equal(sh_bphs_batch(x, 0, 4, 1, 3, collect, &got, NULL, err,
                                   sizeof(err)), 0);
    assert_int_equal(sh_bphs_batch(x, 1, 4, 1, 3, collect, &got, NULL, err,
                                   sizeof(err)), 0);
    assert_int_equal(got.n, 0);
    check(x, 2, 4, 1, 0);
    check(x, 3, 4, 1, 1);

    /* the callback stops it */
    got.stop_after = 1;
    assert_int_equal(sh_bphs_batch(x, 3, 4, 1, 3, collect, &got, NULL, err,
                                   sizeof(err)), 1);
    assert_int_equal(got.n, 1);

    /* designs that cannot be exact or do not exist */
    assert_int_equal(sh_bphs_batch(x, 3, 4, 1, 4, collect, &got, NULL, err,
                                   sizeof(err)), -1);
    assert_non_null(strstr(err, "h <= G - g"));
    assert_int_equal(sh_bphs_batch(x, 3, 4, 0, 0, collect, &got, NULL, err,
                                   sizeof(err)), -1);
    assert_int_equal(sh_bphs_batch(x, 3, 4, 4, 0, collect, &got, NULL, err,
                                   sizeof(err)), -1);
    assert_int_equal(sh_bphs_batch(x, 3, SH_BPHS_GMAX + 1, 1, 3, collect,
                                   &got, NULL, err, sizeof(err)), -1);
    free(got.p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_batches),
        cmocka_unit_test(test_equal_fingerprints),
        cmocka_unit_test(test_block_boundaries),
        cmocka_unit_test(test_two_pass_sort),
        cmocka_unit_test(test_small_and_bad),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
