/*
 * test_match.c -- the match rules (sh_match.h): what each accepts, the
 * exact count of accepted difference patterns against enumeration, and the
 * weighted rule in the index and brute force against the one-shot rule.
 */
#define TEST_RNG_SEED 0x9e3779b97f4a7c15ull
#include "test_util.h"
#include "test_sets.h"

#include <math.h>

#include "sh_brute.h"
#include "sh_index.h"
#include "sh_match.h"
#include "sh_simhash.h"

/* Weights spread like a real page's: most bits light, a few heavy. */
static void
random_weights(float *w)
{
    unsigned j;

    for (j = 0; j < 64; j++) {
        double u = (double) (rnd() % 100001) / 100000.0;

        w[j] = (float) ((rnd() & 1 ? 1 : -1) * u * u * 1.5);
    }
}

/* Cost of bit j as the rule defines it, from the volatility table. */
static uint32_t
cost_of(float w)
{
    float lo = sh_volatility_logodds(sh_volatility_default(), w);

    return (uint32_t) lrintf(-lo * SH_SCORE_UNIT);
}

static void
test_light_and_heavy_bits(void **state)
{
    sh_match_opts_t ham, wtd;
    float    w[64];
    uint64_t x = 0x0123456789abcdefull, y;
    unsigned j, h;
    uint32_t score, expect;

    (void) state;
    for (j = 0; j < 64; j++) {
        w[j] = j < 8 ? 0.005f : 2.5f;     /* bits 0..7 light */
    }
    sh_match_opts_init(&ham);
    assert_int_equal(ham.rule, SH_RULE_HAMMING);
    assert_int_equal(ham.h, SH_H_DEFAULT);
    sh_match_opts_init(&wtd);
    assert_int_equal(sh_match_opts_weighted(&wtd, 12.0, 10), 0);

    /* Five light bits differ: beyond h = 3, yet cheap evidence. */
    y = x ^ 0x1full;
    assert_int_equal(sh_match_pair(&ham, x, w, y, &h, &score), 0);
    assert_int_equal(h, 5);
    expect = 5 * cost_of(0.005f);
    assert_int_equal(score, expect);
    assert_true(expect <= sh_score_from_nats(12.0));
    assert_int_equal(sh_match_pair(&wtd, x, w, y, &h, &score), 1);

    /* One heavy bit differs: within h = 3, strong evidence against. */
    y = x ^ (1ull << 40);
    assert_int_equal(sh_match_pair(&ham, x, w, y, &h, &score), 1);
    assert_int_equal(h, 1);
    assert_int_equal(score, cost_of(2.5f));
    assert_true(score > sh_score_from_nats(12.0));
    assert_int_equal(sh_match_pair(&wtd, x, w, y, &h, &score), 0);

    /* The cap holds whatever the score: the eight light bits differ,
     * H = 8 <= 10 matches; with a cap of 7 the same pair is refused. */
    y = x ^ 0xffull;
    assert_int_equal(sh_match_pair(&wtd, x, w, y, &h, &score), 1);
    assert_int_equal(sh_match_opts_weighted(&wtd, 12.0, 7), 0);
    assert_int_equal(sh_match_pair(&wtd, x, w, y, &h, &score), 0);
    assert_int_equal(h, 8);

    /* The score is the query's: swapping the roles changes it. */
    {
        float    w2[64];
        uint32_t s2;

        for (j = 0; j < 64; j++) {
            w2[j] = 2.5f;
        }
        sh_match_pair(&ham, y, w2, x, &h, &s2);
        assert_true(s2 > score);
    }

    /* Ranges. */
    assert_int_equal(sh_match_opts_weighted(&wtd, -1, 10), -1);
    assert_int_equal(sh_match_opts_weighted(&wtd, 12, SH_MATCH_HMAX + 1),
                     -1);
    assert_int_equal(sh_score_from_nats(12.0), 12 * SH_SCORE_UNIT);
    assert_true(sh_score_nats(sh_score_from_nats(7.25)) == 7.25);
}

static void
test_rule_names(void **state)
{
    sh_rule_t r;

    (void) state;
    assert_int_equal(sh_rule_parse("weighted", 8, &r), 0);
    assert_int_equal(r, SH_RULE_WEIGHTED);
    assert_int_equal(sh_rule_parse("hamming", 7, &r), 0);
    assert_int_equal(r, SH_RULE_HAMMING);
    assert_int_equal(sh_rule_parse("hammingx", 8, &r), -1);
    assert_int_equal(sh_rule_parse("weight", 6, &r), -1);
    assert_string_equal(sh_rule_name(SH_RULE_WEIGHTED), "weighted");
    assert_string_equal(sh_rule_name(SH_RULE_HAMMING), "hamming");
}

/*
 * The dynamic programme against enumeration: 14 bits get small costs
 * (some zero, some equal), the other 50 costs above tmax, so the accepted
 * patterns are subsets of the 14 and 2^14 of them can be listed.
 */
static void
test_count_patterns_exact(void **state)
{
    enum { NB = 14, HMAX = 6, TMAX = 40 };
    uint16_t cost[64];
    unsigned bit[NB], i, k, round;
    uint64_t dp[(HMAX + 1) * (TMAX + 1)], en[(HMAX + 1) * (TMAX + 1)];

    (void) state;
    for (round = 0; round < 20; round++) {
        for (i = 0; i < 64; i++) {
            cost[i] = (uint16_t) (TMAX + 1 + rnd() % 300);
        }
        for (i = 0; i < NB; i++) {
            bit[i] = (unsigned) (i * 4 + round) % 64;
            cost[bit[i]] = (uint16_t) (i < 3 ? 0 : rnd() % 12);
        }
        sh_match_count_patterns(cost, HMAX, TMAX, dp);
        memset(en, 0, sizeof(en));
        for (k = 0; k < (1u << NB); k++) {
            unsigned n = (unsigned) __builtin_popcount(k), c = 0;

            for (i = 0; i < NB; i++) {
                c += (k >> i) & 1 ? cost[bit[i]] : 0;
            }
            if (n <= HMAX && c <= TMAX) {
                en[n * (TMAX + 1) + c]++;
            }
        }
        assert_memory_equal(dp, en, sizeof(dp));
    }
}

static void
test_random_accept(void **state)
{
    sh_match_opts_t o;
    sh_matcher_t    m;
    float           w[64];
    unsigned        j;
    double          p3, pw_lo, pw_hi;

    (void) state;
    /* hamming h = 3: (1 + 64 + 2016 + 41664) / 2^64 */
    sh_match_opts_init(&o);
    sh_matcher_init(&m, &o, 0, NULL);
    p3 = sh_matcher_random_accept(&m);
    assert_true(p3 == ldexp(43745.0, -64));

    /* weighted: a larger T accepts more; every bit heavy and T below one
     * bit's cost accepts only x itself. */
    for (j = 0; j < 64; j++) {
        w[j] = 3.0f;
    }
    sh_match_opts_weighted(&o, 1.0, 10);
    sh_matcher_init(&m, &o, 0, w);
    assert_true(sh_matcher_random_accept(&m) == ldexp(1.0, -64));
    random_weights(w);
    sh_match_opts_weighted(&o, 6.0, 10);
    sh_matcher_init(&m, &o, 0, w);
    pw_lo = sh_matcher_random_accept(&m);
    sh_match_opts_weighted(&o, 12.0, 10);
    sh_matcher_init(&m, &o, 0, w);
    pw_hi = sh_matcher_random_accept(&m);
    assert_true(pw_lo < pw_hi);
    /* never above what the cap alone allows */
    sh_match_opts_init(&o);
    o.h = 10;
    sh_matcher_init(&m, &o, 0, NULL);
    assert_true(pw_hi <= sh_matcher_random_accept(&m));
}

typedef struct {
    size_t  *count;
    uint64_t *sum;
} join_acc_t;

static void
join_hit(void *arg, size_t q, const sh_match_t *m)
{
    join_acc_t *a = arg;

    a->count[q]++;
    a->sum[q] += m->ref * 2654435761u + m->score;
}

/*
 * The weighted rule in the index (every header subset probed: t = 9) and
 * in brute force agree with the one-shot rule on every stored entry; the
 * join finds what the per-query search finds.
 */
static void
test_index_and_brute_follow_the_rule(void **state)
{
    enum { N = 3000, NQ = 300 };
    size_t      size = sh_index_region_size(N);
    void       *mem;
    sh_index_t *ix;
    sh_brute_t  br;
    sh_match_t  a[512], b[512];
    sh_lookup_opts_t o;
    sh_match_opts_t  mo;
    sh_matcher_t q[NQ];
    uint64_t    stored[N], qx[NQ];
    float       qw[NQ][64];
    size_t      jc[NQ], found_weighted_only = 0;
    uint64_t    js[NQ];
    join_acc_t  acc = { jc, js };
    char        err[128];
    unsigned    i, j, cap;

    (void) state;
    assert_int_equal(posix_memalign(&mem, 64, size), 0);
    ix = sh_index_init(mem, size, 9, 0, err, sizeof(err));
    assert_non_null(ix);
    assert_int_equal(sh_brute_init(&br, N), 0);
    for (i = 0; i < N; i++) {
        uint64_t x = i < 300 ? rnd() : stored[rnd() % 300];

        /* near-duplicates: up to 7 random bits flipped */
        for (j = (unsigned) (rnd() % 8); i >= 300 && j > 0; j--) {
            x ^= 1ull << (rnd() % 64);
        }
        stored[i] = x;
        assert_int_equal(sh_index_insert(ix, x, NULL), i);
        sh_brute_add(&br, x, i);
    }

    sh_lookup_opts_init(&o);
    o.probes = SH_PROBES_MAX;
    o.rule = SH_RULE_WEIGHTED;
    for (cap = 3; cap <= 7; cap += 4) {
        o.h = cap;
        o.threshold = sh_score_from_nats(12.0);
        sh_lookup_match_opts(&o, &mo);
        for (i = 0; i < NQ; i++) {
            size_t na, nb, n1;

            qx[i] = stored[rnd() % N];
            for (j = (unsigned) (rnd() % 8); j > 0; j--) {
                qx[i] ^= 1ull << (rnd() % 64);
            }
            random_weights(qw[i]);
            sh_matcher_init(&q[i], &mo, qx[i], qw[i]);

            o.mode = SH_MATCH_ALL;
            na = sh_index_lookup(ix, qx[i], qw[i], &o, a, 512, NULL);
            nb = sh_brute_match(&br, &q[i], SH_MATCH_ALL, b, 512);
            assert_int_equal(na, nb);
            qsort(a, na, sizeof(a[0]), cmp_ref);
            qsort(b, nb, sizeof(b[0]), cmp_ref);
            n1 = 0;
            for (j = 0; j < N; j++) {
                unsigned h;
                uint32_t s;

                if (sh_match_pair(&mo, qx[i], qw[i], stored[j], &h, &s)) {
                    assert_true(n1 < na);
                    assert_int_equal(a[n1].ref, j);
                    assert_int_equal(b[n1].ref, j);
                    assert_int_equal(a[n1].distance, h);
                    assert_int_equal(a[n1].score, s);
                    assert_int_equal(b[n1].score, s);
                    found_weighted_only += h > 3;
                    n1++;
                }
            }
            assert_int_equal(n1, na);

            /* CLOSEST: the lowest score, as brute force says */
            o.mode = SH_MATCH_CLOSEST;
            na = sh_index_lookup(ix, qx[i], qw[i], &o, a, 1, NULL);
            nb = sh_brute_match(&br, &q[i], SH_MATCH_CLOSEST, b, 1);
            assert_int_equal(na, nb);
            if (na) {
                assert_int_equal(a[0].score, b[0].score);
                assert_int_equal(a[0].distance, b[0].distance);
            }
        }
        memset(jc, 0, sizeof(jc));
        memset(js, 0, sizeof(js));
        sh_brute_join(&br, q, NQ, join_hit, &acc);
        for (i = 0; i < NQ; i++) {
            size_t   nb = sh_brute_match(&br, &q[i], SH_MATCH_ALL, b, 512);
            uint64_t sum = 0;

            assert_int_equal(jc[i], nb);
            for (j = 0; j < nb; j++) {
                sum += b[j].ref * 2654435761u + b[j].score;
            }
            assert_true(js[i] == sum);
        }
    }
    /* the test reached pairs that only the weighted rule accepts */
    assert_true(found_weighted_only > 0);
    sh_brute_free(&br);
    free(mem);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_light_and_heavy_bits),
        cmocka_unit_test(test_rule_names),
        cmocka_unit_test(test_count_patterns_exact),
        cmocka_unit_test(test_random_accept),
        cmocka_unit_test(test_index_and_brute_follow_the_rule),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
