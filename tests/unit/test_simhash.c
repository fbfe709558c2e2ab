/*
 * test_simhash.c -- the 64-bit fingerprint's accumulator (sh_simhash.h):
 * bit j of the fingerprint is the sign of the weighted vote of every
 * feature's hash bit j (Charikar; Manku et al.), weights come out
 * L2-normalised, a tie votes 1; the Hamming distance; the status names the
 * log and the headers use.
 */
#include "test_util.h"

#include <math.h>

#include "sh_simhash.h"

static uint64_t
fingerprint(const uint64_t *h, const float *w, size_t n, sh_result_t *res)
{
    sh_acc_t acc;
    size_t   i;

    sh_acc_init(&acc);
    for (i = 0; i < n; i++) {
        sh_acc_add(&acc, h[i], w[i]);
    }
    memset(res, 0, sizeof(*res));
    sh_acc_finish(&acc, res);
    return res->hash;
}

/* One feature: the fingerprint is its hash, each weight +-1. */
static void
test_one_feature_is_its_hash(void **state)
{
    uint64_t    h = 0x8000000000000001ull ^ 0x0123456789abcdefull;
    float       w = 2.5f;
    sh_result_t res;
    int         j;

    (void) state;
    assert_true(fingerprint(&h, &w, 1, &res) == h);
    for (j = 0; j < SH_BITS; j++) {
        assert_float_equal(res.weights[j], ((h >> j) & 1) ? 1.0 : -1.0,
                           1e-6);
    }
}

/* The heavier feature wins the bits they disagree on; where they agree
 * both count.  Weights: (3 - 1) / sqrt(10) where they disagree, (3 + 1) /
 * sqrt(10) where they agree. */
static void
test_weighted_vote(void **state)
{
    uint64_t    h[2] = { 0xff00ff00ff00ff00ull, 0xffff0000ffff0000ull };
    float       w[2] = { 3.0f, 1.0f };
    sh_result_t res;
    int         j;
    double      agree = 4.0 / sqrt(10.0), disagree = 2.0 / sqrt(10.0);

    (void) state;
    assert_true(fingerprint(h, w, 2, &res) == h[0]);
    for (j = 0; j < SH_BITS; j++) {
        int a = (h[0] >> j) & 1, b = (h[1] >> j) & 1;
        double mag = a == b ? agree : disagree;

        assert_float_equal(res.weights[j], a ? mag : -mag, 1e-6);
    }

    /* the lighter one three times over outweighs it */
    {
        uint64_t h4[4] = { h[0], h[1], h[1], h[1] };
        float    w4[4] = { 2.9f, 1.0f, 1.0f, 1.0f };

        assert_true(fingerprint(h4, w4, 4, &res) == h[1]);
    }
}

/* A tie (and no feature at all) votes 1, and the weights are 0. */
static void
test_ties_vote_one(void **state)
{
    uint64_t    h[2] = { 0x00000000ffffffffull, 0xffffffff00000000ull };
    float       w[2] = { 1.0f, 1.0f };
    sh_result_t res;

    (void) state;
    assert_true(fingerprint(h, w, 2, &res) == ~0ull);
    assert_float_equal(res.weights[0], 0.0, 1e-9);
    assert_true(fingerprint(NULL, NULL, 0, &res) == ~0ull);
    assert_float_equal(res.weights[63], 0.0, 1e-9);
}

/* Many random features: each weight is the vote computed plainly (in
 * double) over the features' L2 norm, and each bit the sign of its vote. */
static void
test_matches_a_plain_vote(void **state)
{
    uint64_t    h[500];
    float       w[500];
    double      vote[SH_BITS] = { 0 }, norm2 = 0;
    sh_result_t res;
    size_t      i;
    int         j;

    (void) state;
    for (i = 0; i < 500; i++) {
        h[i] = rnd();
        w[i] = 0.1f + (float) (rnd() % 1000) / 100.0f;
        norm2 += (double) w[i] * w[i];
        for (j = 0; j < SH_BITS; j++) {
            vote[j] += ((h[i] >> j) & 1) ? w[i] : -w[i];
        }
    }
    fingerprint(h, w, 500, &res);
    for (j = 0; j < SH_BITS; j++) {
        assert_float_equal(res.weights[j], vote[j] / sqrt(norm2), 1e-4);
        assert_int_equal((int) ((res.hash >> j) & 1), vote[j] >= 0);
    }
}

static void
test_distance(void **state)
{
    (void) state;
    assert_int_equal(sh_distance(0, 0), 0);
    assert_int_equal(sh_distance(0, ~0ull), 64);
    assert_int_equal(sh_distance(0xf0ull, 0x0full), 8);
    assert_int_equal(sh_distance(1ull << 63, 0), 1);
    assert_int_equal(sh_distance(0x123456789abcdef0ull,
                                 0x123456789abcdef0ull ^ 0x8000100000a00001ull),
                     5);
}

static void
test_status_names(void **state)
{
    (void) state;
    assert_string_equal(sh_status_name(SH_STATUS_OK), "ok");
    assert_string_equal(sh_status_name(SH_STATUS_TOO_SHORT), "too-short");
    assert_string_equal(sh_status_name(SH_STATUS_BINARY), "binary");
    assert_string_equal(sh_status_name(SH_STATUS_TOO_LARGE), "too-large");
    assert_string_equal(sh_status_name(SH_STATUS_TOO_COMPLEX),
                        "too-complex");
    assert_string_equal(sh_status_name((sh_status_t) 99), "unknown");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_feature_is_its_hash),
        cmocka_unit_test(test_weighted_vote),
        cmocka_unit_test(test_ties_vote_one),
        cmocka_unit_test(test_matches_a_plain_vote),
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_status_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
