/*
 * test_vosh.c -- the VOSH enumeration against brute force: every subset of
 * size 1..h exactly once, in the order of a full sort by p(u, S).
 */
#define TEST_RNG_SEED 0x9e3779b97f4a7c15ull
#include "test_util.h"

#include <math.h>

#include "sh_vosh.h"

/* Random flip probabilities, as log-odds in non-increasing order. */
static void
random_logodds(float *lo, unsigned n, int with_ties)
{
    unsigned i, j;

    for (i = 0; i < n; i++) {
        double p = (double) (rnd() % 10000 + 1) / 20002.0;

        if (with_ties && i > 0 && rnd() % 3 == 0) {
            lo[i] = lo[i - 1];
            continue;
        }
        lo[i] = (float) log(p / (1 - p));
    }
    for (i = 1; i < n; i++) {                 /* insertion sort, desc */
        float x = lo[i];

        for (j = i; j > 0 && lo[j - 1] < x; j--) {
            lo[j] = lo[j - 1];
        }
        lo[j] = x;
    }
}

static double
score_of_mask(const float *lo, unsigned n, uint64_t mask)
{
    double s = 0;
    unsigned i;

    for (i = 0; i < n; i++) {               /* rank order, like VOSH */
        if ((mask >> i) & 1) {
            s += lo[i];
        }
    }
    return s;
}

static int
cmp_desc(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x < y) - (x > y);
}

static void
check_against_bruteforce(unsigned n, unsigned h, int ties)
{
    float          lo[16];
    sh_vosh_node_t heap[20000];
    sh_vosh_t      v;
    sh_vosh_node_t node;
    uint8_t       *seen = calloc(1u << n, 1);
    double        *want = malloc(sizeof(double) << n);
    double        *got = malloc(sizeof(double) << n);
    size_t         nwant = 0, ngot = 0, i;
    uint64_t       mask;
    unsigned       hh = h < n ? h : n;

    assert_non_null(seen);
    random_logodds(lo, n, ties);
    for (mask = 1; mask < (1ull << n); mask++) {
        if ((unsigned) __builtin_popcountll(mask) <= hh) {
            want[nwant++] = score_of_mask(lo, n, mask);
        }
    }
    qsort(want, nwant, sizeof(double), cmp_desc);

    sh_vosh_init(&v, lo, n, h, heap, 20000);
    while (sh_vosh_next(&v, &node)) {
        mask = 0;
        assert_true(node.size >= 1 && node.size <= hh);
        for (i = 0; i < node.size; i++) {
            assert_true(node.idx[i] < n);
            if (i > 0) {
                assert_true(node.idx[i] > node.idx[i - 1]);
            }
            mask |= 1ull << node.idx[i];
        }
        assert_int_equal(seen[mask], 0);        /* never twice */
        seen[mask] = 1;
        /* Scores are updated incrementally: equal up to rounding. */
        assert_true(fabs(node.score - score_of_mask(lo, n, mask)) < 1e-9);
        got[ngot++] = score_of_mask(lo, n, mask);
        assert_true(ngot <= nwant);
    }
    assert_int_equal(ngot, nwant);              /* never missed */
    for (i = 0; i < nwant; i++) {
        /* Equal scores may come in any order; the score sequence may not
         * differ (beyond rounding). */
        assert_true(fabs(got[i] - want[i]) < 1e-9);
    }
    free(seen);
    free(want);
    free(got);
}

static void
test_order_equals_sorted_enumeration(void **state)
{
    unsigned n, h;

    for (n = 1; n <= 12; n++) {
        for (h = 1; h <= 5; h++) {
            check_against_bruteforce(n, h, 0);
            check_against_bruteforce(n, h, 1);
        }
    }
}

static void
test_larger_h_and_bits(void **state)
{
    check_against_bruteforce(14, 7, 0);
    check_against_bruteforce(16, 3, 1);
}

/* Every subset of each size has exactly one parent in its tree. */
static void
test_each_subset_has_one_parent(void **state)
{
    const unsigned n = 11;
    unsigned size;

    for (size = 1; size <= 6; size++) {
        uint8_t *parents = calloc(1u << n, 1);
        uint64_t mask;

        for (mask = 0; mask < (1ull << n); mask++) {
            sh_vosh_node_t s, kids[2];
            unsigned i, k = 0;
            int nk;

            if ((unsigned) __builtin_popcountll(mask) != size) {
                continue;
            }
            memset(&s, 0, sizeof(s));
            s.size = (uint8_t) size;
            for (i = 0; i < n; i++) {
                if ((mask >> i) & 1) {
                    s.idx[k++] = (uint8_t) i;
                }
            }
            nk = sh_vosh_children(&s, n, kids);
            for (i = 0; i < (unsigned) nk; i++) {
                uint64_t km = 0;
                unsigned j;

                assert_int_equal(kids[i].size, size);
                for (j = 0; j < size; j++) {
                    km |= 1ull << kids[i].idx[j];
                }
                assert_int_equal(__builtin_popcountll(km), size);
                /* exactly one element differs, replaced by a later one */
                assert_int_equal(__builtin_popcountll(km ^ mask), 2);
                assert_true((km & ~mask) > (mask & ~km));
                parents[km]++;
            }
        }
        for (mask = 0; mask < (1ull << n); mask++) {
            if ((unsigned) __builtin_popcountll(mask) != size) {
                continue;
            }
            if (mask == (1ull << size) - 1) {
                assert_int_equal(parents[mask], 0);     /* the root */
            } else {
                assert_int_equal(parents[mask], 1);
            }
        }
        free(parents);
    }
}

/* The paper's right-child rule on concrete nodes (0-based ranks). */
static void
test_children_examples(void **state)
{
    sh_vosh_node_t s, kids[2];
    int n;

    memset(&s, 0, sizeof(s));
    s.size = 3;
    s.idx[0] = 0; s.idx[1] = 2; s.idx[2] = 3;   /* gaps 2, 1 */
    n = sh_vosh_children(&s, 10, kids);
    assert_int_equal(n, 2);
    assert_int_equal(kids[0].idx[2], 4);        /* left: last + 1 */
    assert_int_equal(kids[1].idx[0], 1);        /* right: gap of 2 */

    s.idx[0] = 0; s.idx[1] = 3; s.idx[2] = 4;   /* first gap 3: none */
    n = sh_vosh_children(&s, 10, kids);
    assert_int_equal(n, 1);

    s.idx[0] = 7; s.idx[1] = 8; s.idx[2] = 9;   /* at the end */
    n = sh_vosh_children(&s, 10, kids);
    assert_int_equal(n, 0);
}

/* A heap too small stops the enumeration cleanly, after a correct prefix. */
static void
test_small_heap_gives_exact_prefix(void **state)
{
    float          lo[20];
    sh_vosh_node_t heap[SH_VOSH_HEAP_FOR(10, 3)], big[3000], a, b;
    sh_vosh_t      v, w;
    int            n = 0;

    random_logodds(lo, 20, 0);
    sh_vosh_init(&v, lo, 20, 3, heap, SH_VOSH_HEAP_FOR(10, 3));
    sh_vosh_init(&w, lo, 20, 3, big, 3000);
    while (sh_vosh_next(&v, &a)) {
        assert_true(sh_vosh_next(&w, &b));
        assert_true(fabs(a.score - b.score) < 1e-9);
        n++;
    }
    assert_true(n >= 10);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_equals_sorted_enumeration),
        cmocka_unit_test(test_larger_h_and_bits),
        cmocka_unit_test(test_each_subset_has_one_parent),
        cmocka_unit_test(test_children_examples),
        cmocka_unit_test(test_small_heap_gives_exact_prefix),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
