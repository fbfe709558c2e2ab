/*
 * test_radix.c -- sh_radix_sort: in place, the order of a full sort by key
 * and equal keys by value, whatever the keys look like: random, sharing
 * their top bits, a few distinct ones, long runs of one, each twice.
 */
#include "test_util.h"

#include "sh_radix.h"

static uint64_t
mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Sorted by key, and equal keys by their (distinct) values. */
static void
check_sorted(const uint64_t *k, const uint32_t *v, size_t n)
{
    size_t i;

    for (i = 1; i < n; i++) {
        assert_true(k[i - 1] <= k[i]);
        if (k[i - 1] == k[i]) {
            assert_true(v[i - 1] < v[i]);
        }
    }
}

/* A checksum of the multiset of pairs: the sort loses and invents none. */
static uint64_t
sum_of(const uint64_t *k, const uint32_t *v, size_t n)
{
    uint64_t h = 0;
    size_t   i;

    for (i = 0; i < n; i++) {
        uint64_t s = k[i] ^ ((uint64_t) v[i] << 17);

        h += mix(&s);
    }
    return h;
}

typedef uint64_t (*keygen_fn)(uint64_t *s, size_t i);

static uint64_t key_random(uint64_t *s, size_t i) { (void) i; return mix(s); }
/* every key shares its top 40 bits: the radix passes see one digit */
static uint64_t
key_same_top(uint64_t *s, size_t i)
{
    (void) i;
    return 0xABCDEF1234000000ULL | (mix(s) & 0xFFFFFF);
}
/* a few distinct keys, many of each */
static uint64_t key_few(uint64_t *s, size_t i) { (void) i; return mix(s) % 5; }
/* long runs of one key among random ones: ties longer than insertion's */
static uint64_t
key_runs(uint64_t *s, size_t i)
{
    return (i % 3 == 0) ? 0x8000000000000000ULL + (i % 7) : mix(s);
}

/* each key twice, far apart in the input: short ties of equal keys */
static uint64_t
key_twice(uint64_t *s, size_t i)
{
    uint64_t k = (i % 50000) + 1;

    (void) s;
    return mix(&k);
}

static void
sort_and_check(size_t n, keygen_fn gen)
{
    uint64_t *k = malloc((n ? n : 1) * sizeof(*k));
    uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
    uint64_t  seed = n * 31 + 7, before;
    size_t    i;

    assert_non_null(k);
    assert_non_null(v);
    for (i = 0; i < n; i++) {
        k[i] = gen(&seed, i);
        /* distinct values, not in input order: equal keys must come out
         * ordered by value, not as they came */
        v[i] = (uint32_t) ((i * 2654435761u) % 4294967291u);
    }
    before = sum_of(k, v, n);
    sh_radix_sort(k, v, n);
    check_sorted(k, v, n);
    assert_true(sum_of(k, v, n) == before);
    free(k);
    free(v);
}

static void
test_sizes_random(void **state)
{
    static const size_t sizes[] = { 0, 1, 2, 3, 17, 1000, 65536, 1u << 20 };
    size_t i;

    (void) state;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        sort_and_check(sizes[i], key_random);
    }
}

static void
test_shared_top_bits(void **state)
{
    (void) state;
    sort_and_check(100000, key_same_top);
}

static void
test_equal_keys_stay_stable(void **state)
{
    (void) state;
    sort_and_check(100000, key_few);
    sort_and_check(200000, key_runs);
    sort_and_check(100000, key_twice);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_random),
        cmocka_unit_test(test_shared_top_bits),
        cmocka_unit_test(test_equal_keys_stay_stable),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
