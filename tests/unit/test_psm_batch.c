/*
 * test_psm_batch.c -- PSM over a batch: its pairs are exact pairs, each
 * once, at the right distance; with every subset probed it finds them all;
 * both pages probing find at least what the index finds streaming the
 * batch; and the partial ranking it uses is the full ranking's prefix.
 */
#include <math.h>

#define TEST_RNG_SEED 0x452821e638d01377ull
#include "test_util.h"
#include "test_sets.h"

#include "sh_brute.h"
#include "sh_index.h"
#include "sh_psm_batch.h"
#include "sh_volatility.h"
#include "sh_vosh.h"

static float
rnd_weight(void)
{
    return ((float) (rnd() % 20001) - 10000.0f) / 25000.0f;   /* +-0.4 */
}

/* A batch: clusters of near-duplicates (some equal), random pages, each
 * with its own weights (some without). */
typedef struct {
    uint64_t     *x;
    float        *wbuf;
    const float **w;
    size_t        n;
} batch_t;

static void
make_batch(batch_t *b, size_t n, unsigned spread)
{
    size_t i, j;

    b->n = n;
    b->x = malloc(n * sizeof(uint64_t));
    b->wbuf = malloc(n * 64 * sizeof(float));
    b->w = malloc(n * sizeof(float *));
    assert_non_null(b->x);
    assert_non_null(b->wbuf);
    assert_non_null(b->w);
    for (i = 0; i < n; i++) {
        b->x[i] = i < n / 10 ? rnd()
                             : i % 7 == 0 ? b->x[rnd() % (n / 10)]
                             : flip_random(b->x[rnd() % (n / 10)],
                                           (unsigned) (rnd() % (spread + 1)));
        for (j = 0; j < 64; j++) {
            b->wbuf[i * 64 + j] = rnd_weight();
        }
        b->w[i] = i % 13 == 5 ? NULL : b->wbuf + i * 64;
    }
}

static void
free_batch(batch_t *b)
{
    free(b->x);
    free(b->wbuf);
    free(b->w);
}

/* The reference under the weighted rule: pairs a < b that page b, with
 * its weights, accepts (the later page judges, as in the index). */
static void
brute_weighted(const batch_t *bt, const sh_match_opts_t *mo, pairs_t *out)
{
    size_t   a, b;
    unsigned d;
    uint32_t score;

    for (b = 0; b < bt->n; b++) {
        for (a = 0; a < b; a++) {
            if (sh_match_pair(mo, bt->x[b], bt->w[b], bt->x[a], &d, &score)) {
                collect(out, (uint32_t) a, (uint32_t) b, d);
            }
        }
    }
}

static void
run_opts(const batch_t *bt, const sh_lookup_opts_t *o, unsigned t,
         pairs_t *out, sh_psm_batch_stats_t *st)
{
    char err[128];

    assert_int_equal(sh_psm_batch(bt->x, bt->w, bt->n, o, t, collect, out,
                                  st, err, sizeof(err)), 0);
}

static void
run_batch(const batch_t *bt, unsigned h, unsigned k, unsigned t,
          pairs_t *out, sh_psm_batch_stats_t *st)
{
    sh_lookup_opts_t o;

    sh_lookup_opts_init(&o);
    o.h = h;
    o.probes = k;
    run_opts(bt, &o, t, out, st);
}

/* The weighted rule (cap h on H, default threshold). */
static void
weighted_opts(sh_lookup_opts_t *o, sh_match_opts_t *mo, unsigned h,
              unsigned k)
{
    sh_lookup_opts_init(o);
    o->rule = SH_RULE_WEIGHTED;
    o->h = h;
    o->probes = k;
    sh_lookup_match_opts(o, mo);
}

/* The batch's pairs are among the exact ones, once each, a < b, with
 * their distance; returns how many of the exact ones it found. */
static size_t
check_subset(const batch_t *bt, pairs_t *got, pairs_t *exact)
{
    size_t i, j = 0;

    for (i = 0; i < got->n; i++) {
        assert_true(got->p[i].a < got->p[i].b);
        assert_true(got->p[i].b < bt->n);
        assert_int_equal(got->p[i].d,
                         __builtin_popcountll(bt->x[got->p[i].a]
                                              ^ bt->x[got->p[i].b]));
    }
    qsort(got->p, got->n, sizeof(pair_t), cmp_pair);
    qsort(exact->p, exact->n, sizeof(pair_t), cmp_pair);
    for (i = 0; i < got->n; i++) {
        if (i > 0) {
            assert_int_not_equal(cmp_pair(&got->p[i - 1], &got->p[i]), 0);
        }
        while (j < exact->n && cmp_pair(&exact->p[j], &got->p[i]) < 0) {
            j++;
        }
        if (j == exact->n || cmp_pair(&exact->p[j], &got->p[i]) != 0) {
            fail_msg("pair (%u, %u) at %u is not an exact pair",
                     got->p[i].a, got->p[i].b, got->p[i].d);
        }
    }
    return got->n;
}

static void
test_subset_of_exact(void **state)
{
    static const unsigned ks[] = { 1, 3, 8 }, ts[] = { 7, 9, 11 };
    batch_t  bt;
    unsigned h, ki, ti;

    make_batch(&bt, 3000, 5);
    for (h = 0; h <= 7; h++) {
        pairs_t exact = { 0 };

        brute_pairs(bt.x, bt.n, h, &exact);
        for (ki = 0; ki < 3; ki++) {
            for (ti = 0; ti < 3; ti++) {
                pairs_t got = { 0 };
                sh_psm_batch_stats_t st;
                size_t  found;

                run_batch(&bt, h, ks[ki], ts[ti], &got, &st);
                found = check_subset(&bt, &got, &exact);
                assert_int_equal(st.pairs, found);
                assert_int_equal(st.t, ts[ti]);
                if (h == 0) {
                    /* equal fingerprints share their bucket: exact */
                    assert_int_equal(found, exact.n);
                }
                if (h == 3 && ki == 1 && ti == 1) {
                    print_message("h=3 k=3 t=9: recall %.3f (%zu of %zu)\n",
                                  (double) found / exact.n, found, exact.n);
                }
                free(got.p);
            }
        }
        free(exact.p);
    }
    free_batch(&bt);
}

/* With every subset of at most h of the t header bits probed, a pair
 * within h always meets: PSM is exact, and reports each pair once. */
static void
test_every_subset_is_exact(void **state)
{
    enum { T = 6 };
    batch_t  bt;
    unsigned h;

    make_batch(&bt, 2500, 4);
    for (h = 1; h <= 5; h++) {
        pairs_t  exact = { 0 }, got = { 0 };
        unsigned s, k = 0, c = 1;
        sh_psm_batch_stats_t st;

        for (s = 1; s <= h; s++) {
            c = c * (T - s + 1) / s;            /* C(T, s) */
            k += c;
        }
        brute_pairs(bt.x, bt.n, h, &exact);
        run_batch(&bt, h, k + 3, T, &got, &st);     /* VOSH runs out */
        assert_int_equal(check_subset(&bt, &got, &exact), exact.n);
        free(exact.p);
        free(got.p);
    }
    free_batch(&bt);
}

/* The index, streaming the batch (look up among the earlier pages, then
 * insert), finds a pair only from its later page; the batch probes the
 * same buckets from both pages.  Same t, same k: every pair the index
 * finds, and more. */
static void
test_both_sides_find_more(void **state)
{
    enum { N = 4000, T = 10 };
    batch_t          bt;
    sh_lookup_opts_t o;
    size_t           size = sh_index_region_size(N), i, j;
    void            *mem = malloc(size);
    sh_match_t      *m = malloc(N * sizeof(sh_match_t));
    char             err[128];
    unsigned         k;

    assert_non_null(mem);
    assert_non_null(m);
    make_batch(&bt, N, 5);
    /* k = 0: both from the recall, the default, where the batch must
     * still find every pair the index finds. */
    for (k = 0; k <= 6; k += k == 0 ? 1 : 5) {
        pairs_t     exact = { 0 }, got = { 0 }, streamed = { 0 };
        sh_index_t *ix = sh_index_init(mem, size, T, 0, err, sizeof(err));
        sh_psm_batch_stats_t st;

        assert_non_null(ix);
        sh_lookup_opts_init(&o);
        o.mode = SH_MATCH_ALL;
        o.h = 3;
        o.probes = k;
        for (i = 0; i < N; i++) {
            size_t nm = sh_index_lookup(ix, bt.x[i], bt.w[i], &o, m, N, NULL),
                   r;

            for (r = 0; r < nm; r++) {
                /* refs are page numbers: nothing is evicted */
                collect(&streamed, m[r].ref, (uint32_t) i, m[r].distance);
            }
            assert_int_equal(sh_index_insert(ix, bt.x[i], NULL), i);
        }
        brute_pairs(bt.x, bt.n, 3, &exact);
        run_batch(&bt, 3, k, T, &got, &st);
        assert_int_equal(st.k, k > 0 ? k : sh_index_probes_for(ix, &o));
        assert_true(check_subset(&bt, &got, &exact) > streamed.n);
        qsort(streamed.p, streamed.n, sizeof(pair_t), cmp_pair);
        for (i = 0, j = 0; i < streamed.n; i++) {
            while (j < got.n && cmp_pair(&got.p[j], &streamed.p[i]) < 0) {
                j++;
            }
            if (j == got.n || cmp_pair(&got.p[j], &streamed.p[i]) != 0) {
                fail_msg("k=%u: the index finds (%u, %u), the batch not", k,
                         streamed.p[i].a, streamed.p[i].b);
            }
        }
        print_message("k=%u t=%u: streamed %zu, batch %zu, exact %zu\n", k,
                      T, streamed.n, got.n, exact.n);
        free(exact.p);
        free(got.p);
        free(streamed.p);
    }
    free(mem);
    free(m);
    free_batch(&bt);
}

/*
 * The weighted rule: judged with the later page's weights, its pairs are
 * among brute force's under the same rule; all of them when every header
 * subset within the cap is probed; and at least the index's, streaming.
 */
static void
test_weighted_rule(void **state)
{
    enum { N = 2500 };
    batch_t          bt;
    sh_lookup_opts_t o;
    sh_match_opts_t  mo;
    size_t           size = sh_index_region_size(N), i, j;
    void            *mem = malloc(size);
    sh_match_t      *m = malloc(N * sizeof(sh_match_t));
    char             err[128];
    sh_psm_batch_stats_t st;

    assert_non_null(mem);
    assert_non_null(m);
    make_batch(&bt, N, 9);

    {
        /* every subset of at most 5 of 6 header bits: exact */
        pairs_t exact = { 0 }, got = { 0 };

        weighted_opts(&o, &mo, 5, 63);
        brute_weighted(&bt, &mo, &exact);
        run_opts(&bt, &o, 6, &got, &st);
        assert_true(exact.n > 100);
        assert_int_equal(check_subset(&bt, &got, &exact), exact.n);
        free(exact.p);
        free(got.p);
    }
    {
        /* the default cap, a few probes: a subset, and the index's pairs */
        pairs_t     exact = { 0 }, got = { 0 }, streamed = { 0 };
        sh_index_t *ix = sh_index_init(mem, size, 10, 0, err, sizeof(err));

        assert_non_null(ix);
        weighted_opts(&o, &mo, SH_WEIGHTED_H_DEFAULT, 4);
        brute_weighted(&bt, &mo, &exact);
        run_opts(&bt, &o, 10, &got, &st);
        assert_true(check_subset(&bt, &got, &exact) < exact.n);
        o.mode = SH_MATCH_ALL;
        for (i = 0; i < N; i++) {
            size_t nm = sh_index_lookup(ix, bt.x[i], bt.w[i], &o, m, N, NULL),
                   r;

            for (r = 0; r < nm; r++) {
                collect(&streamed, m[r].ref, (uint32_t) i, m[r].distance);
            }
            assert_int_equal(sh_index_insert(ix, bt.x[i], NULL), i);
        }
        qsort(streamed.p, streamed.n, sizeof(pair_t), cmp_pair);
        for (i = 0, j = 0; i < streamed.n; i++) {
            while (j < got.n && cmp_pair(&got.p[j], &streamed.p[i]) < 0) {
                j++;
            }
            if (j == got.n || cmp_pair(&got.p[j], &streamed.p[i]) != 0) {
                fail_msg("the index finds (%u, %u), the batch not",
                         streamed.p[i].a, streamed.p[i].b);
            }
        }
        print_message("weighted, k=4 t=10: streamed %zu, batch %zu, "
                      "exact %zu\n", streamed.n, got.n, exact.n);
        free(exact.p);
        free(got.p);
        free(streamed.p);
    }
    free(mem);
    free(m);
    free_batch(&bt);
}

/* The partial ranking is the full ranking's first m ranks, ties, NaN and
 * missing weights included. */
static void
test_rank_top_is_prefix(void **state)
{
    const sh_volatility_t *vol = sh_volatility_default();
    static const unsigned  ts[] = { 4, 9, 18, 25, 40 };
    float    w[64], lo_full[64], lo_top[64];
    uint8_t  bit_full[64], bit_top[64];
    unsigned round, ti, m, j;

    for (round = 0; round < 200; round++) {
        for (j = 0; j < 64; j++) {
            w[j] = round % 3 == 0 ? (float) (rnd() % 4) / 16   /* ties */
                                  : rnd_weight();
        }
        if (round % 10 == 1) {
            w[63 - rnd() % 4] = NAN;
            w[63 - rnd() % 4] = INFINITY;
        }
        for (ti = 0; ti < 5; ti++) {
            unsigned t = ts[ti];

            sh_volatility_rank_header(vol, round % 17 == 3 ? NULL : w, t,
                                      lo_full, bit_full);
            for (m = 1; m <= t; m++) {
                sh_volatility_rank_top(vol, round % 17 == 3 ? NULL : w, t, m,
                                       lo_top, bit_top);
                for (j = 0; j < m; j++) {
                    assert_int_equal(bit_top[j], bit_full[j]);
                    assert_true(lo_top[j] == lo_full[j]);
                }
            }
        }
    }
}

static void
test_stop_and_bad(void **state)
{
    batch_t          bt;
    pairs_t          got = { 0 };
    sh_lookup_opts_t o;
    char             err[128];

    make_batch(&bt, 500, 2);
    sh_lookup_opts_init(&o);
    got.stop_after = 3;
    assert_int_equal(sh_psm_batch(bt.x, bt.w, bt.n, &o, 8, collect, &got,
                                  NULL, err, sizeof(err)), 1);
    assert_int_equal(got.n, 3);
    assert_int_equal(sh_psm_batch(bt.x, bt.w, bt.n, &o, 31, collect, &got,
                                  NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "at most 30"));
    got.n = 0;
    got.stop_after = 0;
    assert_int_equal(sh_psm_batch(bt.x, bt.w, 0, &o, 0, collect, &got, NULL,
                                  err, sizeof(err)), 0);
    assert_int_equal(sh_psm_batch(bt.x, bt.w, 1, &o, 0, collect, &got, NULL,
                                  err, sizeof(err)), 0);
    assert_int_equal(got.n, 0);
    free(got.p);
    free_batch(&bt);
}

/* k for a recall R is the index's, one side alone: the two pages of a pair
 * share their volatile bits, so two chances are not independent ones. */
static void
test_probes_for_recall(void **state)
{
    enum { N = 4096 };
    sh_lookup_opts_t o;
    size_t           size = sh_index_region_size(N);
    void            *mem = malloc(size);
    char             err[128];
    unsigned         t;

    assert_non_null(mem);
    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_ALL;
    for (t = 8; t <= 12; t++) {
        sh_index_t *ix = sh_index_init(mem, size, t, 0, err, sizeof(err));

        assert_non_null(ix);
        assert_int_equal(sh_psm_batch_probes_for(&o, t),
                         sh_index_probes_for(ix, &o));
    }
    for (t = 8; t <= 30; t++) {
        unsigned one = sh_volatility_k(sh_volatility_default(), 1, 3, t,
                                       0.95f, 4 * t);

        assert_int_equal(sh_psm_batch_probes_for(&o, t), one);
        /* A higher recall never costs fewer probes. */
        o.recall = 0.99f;
        assert_true(sh_psm_batch_probes_for(&o, t) >= one);
        o.recall = 0.95f;
    }
    o.probes = 9;
    assert_int_equal(sh_psm_batch_probes_for(&o, 20), 9);
    o.h = 0;
    assert_int_equal(sh_psm_batch_probes_for(&o, 20), 0);
    free(mem);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subset_of_exact),
        cmocka_unit_test(test_every_subset_is_exact),
        cmocka_unit_test(test_both_sides_find_more),
        cmocka_unit_test(test_weighted_rule),
        cmocka_unit_test(test_rank_top_is_prefix),
        cmocka_unit_test(test_stop_and_bad),
        cmocka_unit_test(test_probes_for_recall),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
