/*
 * test_brute.c -- the exhaustive Hamming search (sh_brute.h), the answer
 * every index is checked against: so it is checked here against the
 * definition, on a set built so that each answer is known.
 */
#include "test_util.h"

#include "sh_brute.h"
#include "sh_match.h"

#define X   0x0123456789abcdefull

/* x with exactly n distinct bits flipped. */
static uint64_t
flip(uint64_t x, unsigned n)
{
    uint64_t done = 0;

    while (n > 0) {
        uint64_t b = 1ull << (rnd() % 64);

        if (!(done & b)) {
            done |= b;
            n--;
        }
    }
    return x ^ done;
}

/* X at distances 0, 1, 3, 3, 5, 9, and 100 strangers over 20 away. */
static void
fill(sh_brute_t *b)
{
    static const unsigned far[] = { 5, 9 };
    size_t   i;

    assert_int_equal(sh_brute_init(b, 200), 0);
    assert_int_equal(sh_brute_add(b, X ^ 0x7ull, 30), 0);      /* d 3 */
    assert_int_equal(sh_brute_add(b, X ^ (1ull << 40), 11), 0); /* d 1 */
    assert_int_equal(sh_brute_add(b, X, 10), 0);                /* d 0 */
    assert_int_equal(sh_brute_add(b, X ^ 0x700ull, 31), 0);    /* d 3 */
    for (i = 0; i < 2; i++) {
        assert_int_equal(sh_brute_add(b, flip(X, far[i]),
                                      50 + (uint32_t) i), 0);
    }
    for (i = 0; i < 100; i++) {
        assert_int_equal(sh_brute_add(b, flip(X, 20 + i % 20),
                                      1000 + (uint32_t) i), 0);
    }
}

static void
test_all_within_h(void **state)
{
    sh_brute_t b;
    sh_match_t out[16];
    size_t     n, i;
    unsigned   seen = 0;

    (void) state;
    fill(&b);
    n = sh_brute_lookup(&b, X, 3, SH_MATCH_ALL, out, 16);
    assert_int_equal(n, 4);
    for (i = 0; i < n; i++) {
        assert_int_equal(out[i].distance,
                         (unsigned) __builtin_popcountll(out[i].hash ^ X));
        switch (out[i].ref) {
        case 10: assert_int_equal(out[i].distance, 0); seen |= 1; break;
        case 11: assert_int_equal(out[i].distance, 1); seen |= 2; break;
        case 30: assert_int_equal(out[i].distance, 3); seen |= 4; break;
        case 31: assert_int_equal(out[i].distance, 3); seen |= 8; break;
        default: fail_msg("ref %u at %u is not within 3", out[i].ref,
                          out[i].distance);
        }
    }
    assert_int_equal(seen, 15);

    assert_int_equal(sh_brute_lookup(&b, X, 5, SH_MATCH_ALL, out, 16), 5);
    assert_int_equal(sh_brute_lookup(&b, X, 9, SH_MATCH_ALL, out, 16), 6);

    /* more found than room: the count is the whole, out holds max */
    assert_int_equal(sh_brute_lookup(&b, X, 3, SH_MATCH_ALL, out, 2), 4);
    sh_brute_free(&b);
}

/* CLOSEST: the smallest distance wherever it sits; FIRST: the first in
 * insertion order within h. */
static void
test_closest_and_first(void **state)
{
    sh_brute_t b;
    sh_match_t m;

    (void) state;
    fill(&b);
    assert_int_equal(sh_brute_lookup(&b, X, 9, SH_MATCH_CLOSEST, &m, 1), 1);
    assert_int_equal(m.ref, 10);
    assert_int_equal(m.distance, 0);

    assert_int_equal(sh_brute_lookup(&b, X ^ (1ull << 40), 9,
                                     SH_MATCH_CLOSEST, &m, 1), 1);
    assert_int_equal(m.ref, 11);

    assert_int_equal(sh_brute_lookup(&b, X, 9, SH_MATCH_FIRST, &m, 1), 1);
    assert_int_equal(m.ref, 30);
    assert_int_equal(m.distance, 3);

    /* nothing within 2 of a stranger's complement */
    assert_int_equal(sh_brute_lookup(&b, ~X, 2, SH_MATCH_CLOSEST, &m, 1), 0);
    sh_brute_free(&b);
}

/* A full set refuses more; an empty one finds nothing. */
static void
test_capacity(void **state)
{
    sh_brute_t b;
    sh_match_t m;

    (void) state;
    assert_int_equal(sh_brute_init(&b, 2), 0);
    assert_int_equal(sh_brute_lookup(&b, X, 64, SH_MATCH_ALL, &m, 1), 0);
    assert_int_equal(sh_brute_add(&b, X, 1), 0);
    assert_int_equal(sh_brute_add(&b, X, 2), 0);
    assert_int_equal(sh_brute_add(&b, X, 3), -1);
    assert_int_equal(b.n, 2);
    sh_brute_free(&b);
    assert_null(b.hash);
    assert_int_equal(b.n, 0);

    assert_int_equal(sh_brute_init(&b, 0), 0);
    assert_int_equal(sh_brute_add(&b, X, 1), -1);
    sh_brute_free(&b);
}

/* The join calls back once for each (query, fingerprint) pair within h,
 * across the 4096-fingerprint blocks it walks in. */
typedef struct {
    size_t   calls;
    size_t   per_query[2];
    uint32_t sum_ref;
} joined_t;

static void
on_pair(void *arg, size_t query, const sh_match_t *m)
{
    joined_t *j = arg;

    j->calls++;
    j->per_query[query]++;
    j->sum_ref += m->ref;
    assert_true(__builtin_popcountll(m->hash ^ (query ? ~X : X))
                == (int) m->distance);
}

static void
test_join_across_blocks(void **state)
{
    sh_brute_t      b;
    sh_matcher_t    q[2];
    sh_match_opts_t o;
    joined_t        j = { 0 };
    uint32_t        i;

    (void) state;
    assert_int_equal(sh_brute_init(&b, 10000), 0);
    for (i = 0; i < 10000; i++) {
        /* every 1000th near X, every 2500th near ~X, the rest far */
        uint64_t h = i % 1000 == 0 ? flip(X, 2)
                   : i % 2500 == 1 ? flip(~X, 1)
                   : flip(X, 24);

        assert_int_equal(sh_brute_add(&b, h, i), 0);
    }
    sh_match_opts_init(&o);
    o.h = 3;
    sh_matcher_init(&q[0], &o, X, NULL);
    sh_matcher_init(&q[1], &o, ~X, NULL);
    sh_brute_join(&b, q, 2, on_pair, &j);
    assert_int_equal(j.per_query[0], 10);
    assert_int_equal(j.per_query[1], 4);
    assert_int_equal(j.sum_ref, 45000 + (1 + 2501 + 5001 + 7501));
    sh_brute_free(&b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_within_h),
        cmocka_unit_test(test_closest_and_first),
        cmocka_unit_test(test_capacity),
        cmocka_unit_test(test_join_across_blocks),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
