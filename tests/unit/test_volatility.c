/*
 * test_volatility.c -- p(|w|) tables: shape of the built-in one, building
 * from samples, the file format and its errors, k(t), the learner.
 */
#include "test_util.h"

#include <math.h>
#include <unistd.h>

#include "sh_volatility.h"

static void
test_builtin_shape(void **state)
{
    const sh_volatility_t *v = sh_volatility_default();
    float w, last = 1;

    assert_non_null(v);
    for (w = 0; w < 6; w += 0.01f) {
        float p = sh_volatility_p(v, w);

        assert_true(p > 0 && p < 0.5f);
        assert_true(p <= last + 1e-6f);          /* non-increasing */
        assert_true(fabsf(p - sh_volatility_p(v, -w)) < 1e-7f);  /* |w| */
        last = p;
    }
    assert_true(sh_volatility_p(v, 0.0f) > 10 * sh_volatility_p(v, 1.5f));
    assert_true(sh_volatility_logodds(v, 0.1f)
                > sh_volatility_logodds(v, 0.9f));
}

/* |Y| ~ Exp(mean 0.2): P(|Y| > c) = exp(-c / 0.2), p = half that. */
static void
test_from_samples(void **state)
{
    enum { N = 200000 };
    float *y = malloc(N * sizeof(float));
    uint64_t r = 88172645463325252ull;
    sh_volatility_t *v;
    char  err[128];
    int   i;
    float c;

    for (i = 0; i < N; i++) {
        double u;

        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        u = ((double) (r >> 11) + 0.5) / 9007199254740992.0;
        y[i] = (float) (-0.2 * log(u)) * (i % 2 ? 1 : -1);
    }
    v = sh_volatility_from_samples(y, N, err, sizeof(err));
    assert_non_null(v);
    for (c = 0.05f; c < 1.5f; c += 0.1f) {
        double want = 0.5 * exp(-c / 0.2);
        double got = sh_volatility_p(v, c);

        assert_true(fabs(log(got / want)) < 0.15);
    }
    sh_volatility_free(v);

    assert_null(sh_volatility_from_samples(y, 10, err, sizeof(err)));
    memset(y, 0, N * sizeof(float));
    assert_null(sh_volatility_from_samples(y, N, err, sizeof(err)));
    free(y);
}

static void
test_file_round_trip(void **state)
{
    float    c[3] = { 0, 0.5f, 1.0f }, s[3] = { 0.9f, 0.1f, 0.01f };
    uint32_t k[SH_VOL_NRECALL] = { 1, 2, 3, 5, 8, 13, 21, 34 };
    char     path[128], err[256];
    sh_volatility_t *v, *w;
    FILE    *f;
    float    x;

    snprintf(path, sizeof(path), "/tmp/sh_test_vol.%d", (int) getpid());
    v = sh_volatility_from_points(c, s, 3, err, sizeof(err));
    assert_non_null(v);
    assert_int_equal(sh_volatility_set_k(v, 1, 3, 20, k), 0);
    assert_int_equal(sh_volatility_set_k(v, 1, 9, 20, k), -1);
    assert_int_equal(sh_volatility_save(v, path, err, sizeof(err)), 0);
    w = sh_volatility_load(path, err, sizeof(err));
    assert_non_null(w);
    for (x = 0; x < 3; x += 0.05f) {
        assert_true(sh_volatility_logodds(v, x) == sh_volatility_logodds(w,
                                                                         x));
    }
    /* Exact level, next level up, nearest t, unknown mode/h: fallback. */
    assert_int_equal(sh_volatility_k(w, 1, 3, 20, 0.95f, 99), 5);
    assert_int_equal(sh_volatility_k(w, 1, 3, 20, 0.96f, 99), 8);
    assert_int_equal(sh_volatility_k(w, 1, 3, 24, 0.5f, 99), 1);
    assert_int_equal(sh_volatility_k(w, 0, 3, 20, 0.95f, 99), 99);
    assert_int_equal(sh_volatility_k(w, 1, 2, 20, 0.95f, 99), 99);
    assert_int_equal(sh_volatility_k(w, 1, 0, 20, 0.95f, 99), 0);
    sh_volatility_free(v);
    sh_volatility_free(w);

    /* Damaged files. */
    f = fopen(path, "w");
    fputs("simhash-volatility 1\npoints 3\n0 0.9\n0.5 0.1\n", f);
    fclose(f);
    assert_null(sh_volatility_load(path, err, sizeof(err)));
    f = fopen(path, "w");
    fputs("simhash-volatility 1\npoints 2\n0 0.1\n0.5 0.9\nend\n", f);
    fclose(f);
    assert_null(sh_volatility_load(path, err, sizeof(err)));
    f = fopen(path, "w");
    fputs("simhash-volatility 2\n", f);
    fclose(f);
    assert_null(sh_volatility_load(path, err, sizeof(err)));
    assert_non_null(strstr(err, "version"));
    f = fopen(path, "w");
    fputs("simhash-volatility 1\npoints 2\n0 1\n1 0.5\nk X 3 20 1 2\nend\n",
          f);
    fclose(f);
    assert_null(sh_volatility_load(path, err, sizeof(err)));
    unlink(path);
    assert_null(sh_volatility_load(path, err, sizeof(err)));
}

/* Learned rates follow the counts where there are many, the prior where
 * there are none, and never increase with |w|. */
static void
test_learned(void **state)
{
    sh_learn_counts_t c;
    sh_volatility_t  *v;
    const sh_volatility_t *prior = sh_volatility_default();
    int   b;
    float last = 1;

    memset(&c, 0, sizeof(c));
    for (b = 0; b < 16; b++) {
        c.seen[b] = 100000;
        c.flipped[b] = (uint64_t) (100000 * 0.3 / (1 + b));
    }
    c.flipped[5] = 90000;       /* a violation to be pooled away */
    v = sh_volatility_learned(&c, prior);
    assert_non_null(v);
    assert_true(fabsf(sh_volatility_p(v, 0.5f * SH_LEARN_WIDTH) - 0.3f)
                < 0.03f);
    for (b = 0; b < SH_LEARN_BINS; b++) {
        float p = sh_volatility_p(v, (b + 0.5f) * SH_LEARN_WIDTH);

        assert_true(p <= last + 1e-6f);
        last = p;
    }
    /* No data far out: the prior. */
    assert_true(fabsf(sh_volatility_p(v, 3.5f) - sh_volatility_p(prior, 3.5f))
                < 0.01f);
    sh_volatility_free(v);

    /* The observation helper counts below-header bits only. */
    {
        float w[64];
        int   j;
        uint64_t seen = 0;

        for (j = 0; j < 64; j++) {
            w[j] = 0.01f;
        }
        memset(&c, 0, sizeof(c));
        sh_learn_observe(&c, 0, 0x8000000000000003ull, w, 20);
        for (j = 0; j < SH_LEARN_BINS; j++) {
            seen += c.seen[j];
        }
        assert_int_equal(seen, 44);
        assert_int_equal(c.flipped[0], 2);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_shape),
        cmocka_unit_test(test_from_samples),
        cmocka_unit_test(test_file_round_trip),
        cmocka_unit_test(test_learned),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
