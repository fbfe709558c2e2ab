/*
 * test_bigmem.c -- large allocations (sh_bigmem.h): small ones are plain
 * malloc, large ones (4 MB and more) start on a 2 MB boundary so that
 * transparent huge pages can back them; all are freed with free(), and
 * every byte is writable.
 */
#include "test_util.h"

#include "sh_bigmem.h"

#ifdef __SANITIZE_ADDRESS__
/* ASan aborts on an impossible size unless told to answer NULL, as the C
 * library does. */
const char *__asan_default_options(void);

const char *
__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif

static void
test_small_and_zero(void **state)
{
    unsigned char *p;

    (void) state;
    p = sh_big_alloc(0);            /* not NULL: a size of 0 is 1 byte */
    assert_non_null(p);
    p[0] = 1;
    free(p);

    p = sh_big_alloc(1000);
    assert_non_null(p);
    memset(p, 0xab, 1000);
    assert_int_equal(p[999], 0xab);
    free(p);
}

static void
test_large_is_aligned(void **state)
{
    size_t         sizes[] = { 4u << 20, (4u << 20) + 1, 9u << 20 };
    unsigned char *p;
    size_t         i;

    (void) state;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        p = sh_big_alloc(sizes[i]);
        assert_non_null(p);
        assert_int_equal((uintptr_t) p % (2u << 20), 0);
        p[0] = 1;
        p[sizes[i] - 1] = 2;
        assert_int_equal(p[0] + p[sizes[i] - 1], 3);
        free(p);
    }
}

/* An impossible size fails with NULL, not a crash. */
static void
test_impossible(void **state)
{
    (void) state;
    assert_null(sh_big_alloc((size_t) -1 - (1u << 20)));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_and_zero),
        cmocka_unit_test(test_large_is_aligned),
        cmocka_unit_test(test_impossible),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
