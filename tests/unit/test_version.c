/*
 * test_version.c -- the extraction version (sh_version.h): equal for equal
 * extractions, different when any option that changes a fingerprint does,
 * and IDF tables of other words refused.
 */
#include "test_util.h"

#include <unistd.h>

#include "sh_config.h"
#include "sh_idf.h"
#include "sh_library.h"
#include "sh_version.h"

static uint32_t
version_of(const sh_options_t *o)
{
    char         err[256];
    sh_config_t *c = sh_config_new(o, err, sizeof(err));
    uint32_t     v;

    assert_non_null(c);
    v = sh_config_version(c);
    sh_config_free(c);
    return v;
}

static void
test_same_options_same_version(void **state)
{
    sh_options_t a, b;

    (void) state;
    sh_options_init(&a);
    sh_options_init(&b);
    assert_int_equal(version_of(&a), version_of(&b));
    assert_int_equal(sh_version_code(version_of(&a)), SH_EXTRACT_CODE);
}

static void
test_every_option_changes_it(void **state)
{
    sh_options_t o;
    uint32_t     base, seen[8];
    unsigned     i, j, n = 0;

    (void) state;
    sh_options_init(&o);
    base = version_of(&o);

    sh_options_init(&o); o.shingle = 4;             seen[n++] = version_of(&o);
    sh_options_init(&o); o.stem = NULL;             seen[n++] = version_of(&o);
    sh_options_init(&o); o.stopwords_off = 0;       seen[n++] = version_of(&o);
    sh_options_init(&o); o.max_features = 1000;     seen[n++] = version_of(&o);
    sh_options_init(&o); o.weight[0] = 2.0f;        seen[n++] = version_of(&o);
    sh_options_init(&o); o.content = 0;             seen[n++] = version_of(&o);
    sh_options_init(&o);
    assert_int_equal(sh_options_add_ignore(&o, "[0-9]+"), 0);
    seen[n++] = version_of(&o);
    sh_options_init(&o); o.min_features = 5;        seen[n++] = version_of(&o);

    for (i = 0; i < n; i++) {
        assert_int_not_equal(seen[i], base);
        for (j = i + 1; j < n; j++) {
            assert_int_not_equal(seen[i], seen[j]);
        }
    }
}

/* The hash key has its own digest: it does not change the version. */
static void
test_seed_is_not_in_it(void **state)
{
    sh_options_t o;
    uint32_t     base;

    (void) state;
    sh_options_init(&o);
    base = version_of(&o);
    o.seed = "tier secret";
    o.seed_len = 11;
    assert_int_equal(version_of(&o), base);
}

static void
test_format_and_parse(void **state)
{
    char     buf[SH_VERSION_TEXT];
    uint32_t v;

    (void) state;
    assert_string_equal(sh_version_format(buf, 0x01a3f29cu), "01a3f29c");
    assert_int_equal(sh_version_parse(&v, "01a3f29c", 8), 0);
    assert_int_equal(v, 0x01a3f29cu);
    assert_int_equal(sh_version_parse(&v, "01A3F29C", 8), -1);
    assert_int_equal(sh_version_parse(&v, "1a3f29c", 7), -1);
    assert_int_equal(sh_version_parse(&v, "01a3f29g", 8), -1);
}

/* An IDF table carries the words version of its builder: a configuration
 * that makes other words refuses it, one that only weighs them otherwise
 * takes it, and its contents then become part of the version. */
static void
test_idf_table_version(void **state)
{
    char              path[] = "/tmp/test_version_XXXXXX", err[256];
    uint64_t          words[3] = { 11, 22, 33 };
    sh_options_t      o;
    sh_config_t      *c;
    sh_idf_builder_t *b;
    uint32_t          plain;
    int               fd;

    (void) state;
    fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);

    sh_options_init(&o);
    c = sh_config_new(&o, err, sizeof(err));
    assert_non_null(c);
    plain = sh_config_version(c);
    b = sh_idf_builder_new();
    assert_int_equal(sh_idf_builder_add(b, words, 3), 0);
    assert_int_equal(sh_idf_builder_add(b, words, 2), 0);
    assert_int_equal(sh_idf_builder_save(b, path, sh_config_seed_digest(c),
                                         sh_config_words_version(c), err,
                                         sizeof(err)), 0);
    sh_idf_builder_free(b);
    sh_config_free(c);

    o.idf_file = path;
    o.shingle = 2;                          /* other features, same words */
    c = sh_config_new(&o, err, sizeof(err));
    assert_non_null(c);
    assert_int_not_equal(sh_config_version(c), plain);
    sh_config_free(c);

    o.stem = NULL;                          /* other words */
    c = sh_config_new(&o, err, sizeof(err));
    assert_null(c);
    assert_non_null(strstr(err, "extraction version"));
    unlink(path);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_options_same_version),
        cmocka_unit_test(test_every_option_changes_it),
        cmocka_unit_test(test_seed_is_not_in_it),
        cmocka_unit_test(test_format_and_parse),
        cmocka_unit_test(test_idf_table_version),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
