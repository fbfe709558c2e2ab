/*
 * test_bphs.c -- BPHS is exact: for each design, every mode agrees with
 * brute force, and mode ALL reports each pair once.
 */
#define TEST_RNG_SEED 0x13198a2e03707344ull
#include "test_util.h"
#include "test_sets.h"

#include "sh_bphs.h"
#include "sh_brute.h"

static void
check_design(unsigned G, unsigned g, unsigned expect_tables)
{
    enum { N = 4000, Q = 300 };
    sh_bphs_t *b;
    sh_brute_t br;
    uint64_t  *stored = malloc(N * sizeof(uint64_t));
    sh_match_t x[1024], y[1024];
    char       err[128];
    unsigned   i, q, h, hmax = G - g;

    b = sh_bphs_new(G, g, N, err, sizeof(err));
    assert_non_null(b);
    assert_int_equal(sh_bphs_tables(b), expect_tables);
    assert_int_equal(sh_bphs_hmax(b), hmax);
    assert_int_equal(sh_brute_init(&br, N), 0);
    for (i = 0; i < N; i++) {
        /* Clusters, so that pairs share more than g blocks often. */
        stored[i] = i < 400 ? rnd()
                            : flip_random(stored[rnd() % 400],
                                          (unsigned) (rnd() % (hmax + 2)));
        assert_int_equal(sh_bphs_add(b, stored[i], i), 0);
        assert_int_equal(sh_brute_add(&br, stored[i], i), 0);
    }
    assert_int_equal(sh_bphs_build(b), 0);
    assert_int_equal(sh_bphs_add(b, 1, 1), -1);         /* built */
    assert_int_equal(sh_bphs_count(b), N);
    assert_int_equal(sh_bphs_fingerprint_bytes(b),
                     (size_t) expect_tables * N * 8);

    for (q = 0; q < Q; q++) {
        uint64_t qx = q % 3 == 0 ? rnd()
                    : flip_random(stored[rnd() % N], (unsigned) (rnd() % 4));

        for (h = 0; h <= hmax; h++) {
            size_t na = sh_bphs_lookup(b, qx, h, SH_MATCH_ALL, x, 1024, NULL);
            size_t nb = sh_brute_lookup(&br, qx, h, SH_MATCH_ALL, y, 1024);

            assert_int_equal(na, nb);
            qsort(x, na, sizeof(x[0]), cmp_ref);
            qsort(y, nb, sizeof(y[0]), cmp_ref);
            for (i = 0; i < na; i++) {
                assert_int_equal(x[i].ref, y[i].ref);   /* no duplicates */
                assert_int_equal(x[i].distance, y[i].distance);
                assert_true(x[i].hash == stored[x[i].ref]);
            }
            na = sh_bphs_lookup(b, qx, h, SH_MATCH_FIRST, x, 1, NULL);
            assert_int_equal(na, nb > 0);
            if (na) {
                assert_true(x[0].hash == stored[x[0].ref]);
                assert_true(x[0].distance <= h);
            }
            na = sh_bphs_lookup(b, qx, h, SH_MATCH_CLOSEST, x, 1, NULL);
            nb = sh_brute_lookup(&br, qx, h, SH_MATCH_CLOSEST, y, 1);
            assert_int_equal(na, nb);
            if (na) {
                assert_int_equal(x[0].distance, y[0].distance);
            }
        }
    }
    sh_bphs_free(b);
    sh_brute_free(&br);
    free(stored);
}

static void
test_manku_designs(void **state)
{
    unsigned tables[3] = { 4, 10, 20 }, i, G, g;

    for (i = 0; i < 3; i++) {
        assert_int_equal(sh_bphs_design(tables[i], &G, &g), 0);
        assert_int_equal(G - g, 3);
        check_design(G, g, tables[i]);
    }
    assert_int_equal(sh_bphs_design(7, &G, &g), -1);
}

static void
test_larger_radius(void **state)
{
    check_design(8, 1, 8);      /* h up to 7 */
    check_design(7, 3, 35);
}

static void
test_bad_parameters(void **state)
{
    char err[128];

    assert_null(sh_bphs_new(4, 4, 10, err, sizeof(err)));
    assert_null(sh_bphs_new(9, 1, 10, err, sizeof(err)));
    assert_null(sh_bphs_new(4, 0, 10, err, sizeof(err)));
}

static void
test_empty_and_full(void **state)
{
    char       err[128];
    sh_match_t m;
    sh_bphs_t *b = sh_bphs_new(4, 1, 2, err, sizeof(err));

    assert_non_null(b);
    assert_int_equal(sh_bphs_lookup(b, 1, 3, SH_MATCH_ALL, &m, 1, NULL), 0);
    assert_int_equal(sh_bphs_add(b, 1, 0), 0);
    assert_int_equal(sh_bphs_add(b, 2, 1), 0);
    assert_int_equal(sh_bphs_add(b, 3, 2), -1);
    assert_int_equal(sh_bphs_build(b), 0);
    assert_int_equal(sh_bphs_lookup(b, 0, 1, SH_MATCH_ALL, &m, 1, NULL), 2);
    sh_bphs_free(b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manku_designs),
        cmocka_unit_test(test_larger_radius),
        cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_empty_and_full),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
