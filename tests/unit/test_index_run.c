/*
 * test_index_run.c -- many documents with ONE fingerprint (a soft-404 page
 * under many URLs, stream entries that all carry one): an insert finds the
 * end of their run in O(log k) slots, not O(k), so that k of them cost
 * O(k log k) and not O(k^2) under the zone's lock.  The index is compiled
 * in here with SH_INDEX_STEPS, which counts the slots inserts look at:
 * the test counts work, it does not time it.
 */
#define TEST_RNG_SEED 0x7f4a7c159e3779b9ull
#include "test_util.h"

#define SH_INDEX_STEPS
#include "../../src/sh_index.c"

static sh_index_t *
index_of(void **mem, uint32_t capacity)
{
    size_t      size = sh_index_region_size(capacity);
    char        err[256];
    sh_index_t *ix;

    assert_int_equal(posix_memalign(mem, 64, size), 0);
    ix = sh_index_init(*mem, size, 0, 42, err, sizeof(err));
    assert_non_null(ix);
    return ix;
}

static void
check_ok(const sh_index_t *ix)
{
    char err[256];

    if (sh_index_check(ix, err, sizeof(err)) != 0) {
        fail_msg("index check: %s", err);
    }
}

static size_t
count_matches(sh_index_t *ix, uint64_t v)
{
    sh_lookup_opts_t o;
    sh_match_t       m[SH_INDEX_RUN_MAX + 1];

    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_ALL;
    o.h = 0;
    return sh_index_lookup(ix, v, NULL, &o, m, SH_INDEX_RUN_MAX + 1, NULL);
}

/* 40,000 inserts of one fingerprint, among neighbours on both sides. */
static void
test_one_fingerprint_many_documents(void **state)
{
    const uint32_t   k = 40000;
    const uint64_t   v = 0x5a5a5a5a12345678ULL;
    void            *mem;
    sh_index_t      *ix = index_of(&mem, 2 * k);
    uint32_t         i;

    for (i = 0; i < 100; i++) {
        sh_index_insert(ix, v - 1 - i, NULL);
        sh_index_insert(ix, v + 1 + i, NULL);
    }
    sh_index_steps = 0;
    for (i = 0; i < k; i++) {
        assert_int_not_equal(sh_index_insert(ix, v, NULL), SH_NOREF);
    }
    /* the 100 smaller neighbours, SH_INDEX_RUN_MAX copies and the 100
     * larger ones at most: stepping through the run would be k / 2 =
     * 20,000 slots on average */
    if (sh_index_steps > 300ULL * k) {
        fail_msg("%llu slots looked at for %u inserts",
                 (unsigned long long) sh_index_steps, k);
    }
    check_ok(ix);
    assert_int_equal(count_matches(ix, v), SH_INDEX_RUN_MAX);
    for (i = 0; i < 1000; i++) {        /* every one is stored */
        uint64_t h;

        assert_int_equal(sh_index_get(ix, (uint32_t) (200 + i * 39), &h), 0);
        assert_true(h == v);
    }
    assert_int_equal(count_matches(ix, v - 1), 1);
    assert_int_equal(count_matches(ix, v + 1), 1);
    free(mem);
}

/* Full: each insert of the fingerprint evicts the oldest document of the
 * run, and stays logarithmic. */
static void
test_one_fingerprint_evicting(void **state)
{
    const uint32_t   cap = 4096;
    const uint64_t   v = 0xfffffffffffff000ULL;     /* near the table's end */
    void            *mem;
    sh_index_t      *ix = index_of(&mem, cap);
    uint32_t         i, evicted, ref, first = SH_NOREF;

    for (i = 0; i < cap; i++) {
        ref = sh_index_insert(ix, v, NULL);
        if (i == 0) {
            first = ref;
        }
    }
    sh_index_steps = 0;
    for (i = 0; i < 5 * cap; i++) {
        ref = sh_index_insert(ix, v, &evicted);
        assert_int_not_equal(ref, SH_NOREF);
        if (i == 0) {
            assert_int_equal(evicted, first);       /* the oldest goes */
        }
    }
    if (sh_index_steps > 4ULL * SH_INDEX_RUN_MAX * 5 * cap) {
        fail_msg("%llu slots looked at for %u inserts",
                 (unsigned long long) sh_index_steps, 5 * cap);
    }
    check_ok(ix);
    assert_int_equal(count_matches(ix, v), SH_INDEX_RUN_MAX);
    free(mem);
}

/* Runs of equal fingerprints of random lengths, interleaved, removed at
 * random: the table's invariants hold throughout. */
static void
test_runs_stay_consistent(void **state)
{
    void            *mem;
    sh_index_t      *ix = index_of(&mem, 20000);
    uint64_t         vals[16];
    uint32_t         refs[15000], n = 0, i;

    for (i = 0; i < 16; i++) {
        vals[i] = rnd() & ~0xffULL;
    }
    for (i = 0; i < 15000; i++) {
        refs[n++] = sh_index_insert(ix, vals[rnd() % 16] + (rnd() % 2), NULL);
        if (rnd() % 4 == 0) {
            uint32_t j = (uint32_t) (rnd() % n);

            assert_int_equal(sh_index_remove(ix, refs[j]), 0);
            refs[j] = refs[--n];
        }
    }
    check_ok(ix);
    free(mem);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_fingerprint_many_documents),
        cmocka_unit_test(test_one_fingerprint_evicting),
        cmocka_unit_test(test_runs_stay_consistent),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
