/*
 * test_err.c -- the reason of a failure (sh_err.h): formatted into the
 * caller's buffer, cut to fit with its terminator, and no buffer is no
 * write.
 */
#include "test_util.h"

#include "sh_err.h"

static void
test_formats(void **state)
{
    char err[64];

    (void) state;
    sh_err_set(err, sizeof(err), "%s: %d keys, %zu bytes", "idf", 3,
               (size_t) 4096);
    assert_string_equal(err, "idf: 3 keys, 4096 bytes");
}

/* A reason longer than the buffer is cut, and still a C string; bytes
 * past the buffer are untouched. */
static void
test_cut_to_fit(void **state)
{
    char buf[16];

    (void) state;
    memset(buf, 'x', sizeof(buf));
    sh_err_set(buf, 8, "%s", "a reason far too long");
    assert_string_equal(buf, "a reaso");
    assert_int_equal(buf[8], 'x');
    assert_int_equal(buf[15], 'x');

    memset(buf, 'x', sizeof(buf));
    sh_err_set(buf, 1, "%s", "anything");
    assert_string_equal(buf, "");
    assert_int_equal(buf[1], 'x');
}

/* No buffer, or one of no bytes: nothing is written (callers may not want
 * the reason). */
static void
test_no_buffer(void **state)
{
    char buf[4] = "abc";

    (void) state;
    sh_err_set(NULL, 64, "%s", "ignored");
    sh_err_set(buf, 0, "%s", "ignored");
    assert_string_equal(buf, "abc");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_cut_to_fit),
        cmocka_unit_test(test_no_buffer),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
