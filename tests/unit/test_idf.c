/*
 * test_idf.c -- IDF tables (sh_idf.h): idf = ln((N + 1) / (df + 1)) + 1
 * for words on two pages or more, the idf of a word seen once for the
 * rest; a table grows past its first size; its digest is its contents;
 * and a table of another key, another words version, another format, or
 * damaged, is refused saying why.
 */
#include "test_util.h"

#include <math.h>
#include <unistd.h>

#include "sh_idf.h"

#define SEED    0x5eed5eed5eed5eedull
#define WORDS   0x01020304u

static char path[64];

/* 10 pages: word 100 on all, 200 on two, 300 on one; plus `extra` words
 * each on the first two pages. */
static void
build(size_t extra)
{
    sh_idf_builder_t *b = sh_idf_builder_new();
    uint64_t         *w = malloc((extra + 3) * sizeof(uint64_t));
    char              err[256];
    size_t            page, i, n;

    assert_non_null(b);
    for (page = 0; page < 10; page++) {
        n = 0;
        w[n++] = 100;
        if (page < 2) {
            w[n++] = 200;
            for (i = 0; i < extra; i++) {
                w[n++] = 1000 + i;
            }
        }
        if (page == 5) {
            w[n++] = 300;
        }
        assert_int_equal(sh_idf_builder_add(b, w, n), 0);
    }
    strcpy(path, "/tmp/test_idf.XXXXXX");
    assert_int_not_equal(mkstemp(path), -1);
    assert_int_equal(sh_idf_builder_save(b, path, SEED, WORDS, err,
                                         sizeof(err)), 0);
    sh_idf_builder_free(b);
    free(w);
}

static void
test_values(void **state)
{
    char      err[256];
    sh_idf_t *idf;
    float     dflt = (float) (log(11.0 / 2.0) + 1.0);

    (void) state;
    build(0);
    idf = sh_idf_load(path, SEED, WORDS, err, sizeof(err));
    assert_non_null(idf);
    assert_int_equal(sh_idf_size(idf), 2);      /* 300 is on one page */
    assert_float_equal(sh_idf_get(idf, 100), 1.0, 1e-6);
    assert_float_equal(sh_idf_get(idf, 200), log(11.0 / 3.0) + 1.0, 1e-6);
    assert_float_equal(sh_idf_get(idf, 300), dflt, 1e-6);
    assert_float_equal(sh_idf_get(idf, 12345), dflt, 1e-6);
    sh_idf_free(idf);
    unlink(path);
}

/* 50,000 words: every one kept, the map grown many times. */
static void
test_many_words(void **state)
{
    char      err[256];
    sh_idf_t *idf;
    uint64_t  i;

    (void) state;
    build(50000);
    idf = sh_idf_load(path, SEED, WORDS, err, sizeof(err));
    assert_non_null(idf);
    assert_int_equal(sh_idf_size(idf), 50002);
    for (i = 0; i < 50000; i += 997) {
        assert_float_equal(sh_idf_get(idf, 1000 + i), log(11.0 / 3.0) + 1.0,
                           1e-6);
    }
    sh_idf_free(idf);
    unlink(path);
}

static void
test_digest_is_contents(void **state)
{
    char      err[256];
    sh_idf_t *a, *b, *c;

    (void) state;
    build(3);
    a = sh_idf_load(path, SEED, WORDS, err, sizeof(err));
    unlink(path);
    build(3);
    b = sh_idf_load(path, SEED, WORDS, err, sizeof(err));
    unlink(path);
    build(4);
    c = sh_idf_load(path, SEED, WORDS, err, sizeof(err));
    unlink(path);
    assert_true(a && b && c);
    assert_true(sh_idf_digest(a) == sh_idf_digest(b));
    assert_true(sh_idf_digest(a) != sh_idf_digest(c));
    sh_idf_free(a);
    sh_idf_free(b);
    sh_idf_free(c);
}

static void
patch(long at, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "r+b");

    assert_non_null(f);
    assert_int_equal(fseek(f, at, at < 0 ? SEEK_END : SEEK_SET), 0);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

static void
refused(const char *why)
{
    char err[512];

    err[0] = '\0';
    assert_null(sh_idf_load(path, SEED, WORDS, err, sizeof(err)));
    if (strstr(err, why) == NULL) {
        fail_msg("\"%s\" does not say \"%s\"", err, why);
    }
}

static void
test_refusals(void **state)
{
    char     err[512];
    uint32_t v1 = 1;
    char     x = 'X';

    (void) state;
    build(0);
    assert_null(sh_idf_load(path, SEED + 1, WORDS, err, sizeof(err)));
    assert_non_null(strstr(err, "another hash key"));
    assert_null(sh_idf_load(path, SEED, WORDS + 1, err, sizeof(err)));
    assert_non_null(strstr(err, "under extraction version 01020304, these "
                                "options give 01020305"));

    patch(-9, &x, 1);                           /* a value's byte */
    refused("corrupt (checksum)");
    unlink(path);

    build(0);
    assert_int_equal(truncate(path, 48 + 2 * 12), 0);
    refused("truncated or has a bad size");
    unlink(path);

    build(0);
    patch(8, &v1, 4);                           /* format 1 */
    refused("has format 1, expected 2 (written before extraction "
            "versions");
    patch(0, "NOTIDF\0\0", 8);
    refused("is not an IDF table");
    unlink(path);

    assert_null(sh_idf_load("/nonexistent/idf", SEED, WORDS, err,
                            sizeof(err)));
    assert_non_null(strstr(err, "cannot open IDF table"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_many_words),
        cmocka_unit_test(test_digest_is_contents),
        cmocka_unit_test(test_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
