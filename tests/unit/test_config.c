/*
 * test_config.c -- options and the compiled configuration (sh_config.h):
 * the documented defaults; each option out of range refused with a
 * message that names it; ignore patterns checked as the compile checks
 * them; the copy of the options' strings; the hash key's digest and
 * derived keys (public without a secret, one-way, per purpose); the
 * content mode names; the words version that IDF tables record.
 */
#include "test_util.h"

#include "sh_config.h"
#include "sh_library.h"
#include "sh_mac.h"

static sh_config_t *
compile(const sh_options_t *o, char *err, size_t errlen)
{
    err[0] = '\0';
    return sh_config_new(o, err, errlen);
}

static void
test_defaults(void **state)
{
    sh_options_t o;

    (void) state;
    sh_options_init(&o);
    assert_int_equal(o.shingle, SH_DEFAULT_SHINGLE);
    assert_string_equal(o.stem, SH_DEFAULT_STEM);
    assert_int_equal(o.stopwords_off, SH_DEFAULT_STOPWORDS_OFF);
    assert_null(o.stopwords_file);
    assert_int_equal(o.nignore, 0);
    assert_int_equal(o.min_features, SH_DEFAULT_MIN_FEATURES);
    assert_int_equal(o.max_features, SH_DEFAULT_MAX_FEATURES);
    assert_null(o.idf_file);
    assert_null(o.seed);
    assert_float_equal(o.weight[SH_FEAT_WORD], SH_DEFAULT_WEIGHT_WORD, 0);
    assert_float_equal(o.weight[SH_FEAT_SHINGLE], SH_DEFAULT_WEIGHT_SHINGLE,
                       0);
    assert_int_equal(o.content, SH_DEFAULT_CONTENT);
}

static void
refused(sh_options_t *o, const char *why)
{
    char         err[512];
    sh_config_t *c = compile(o, err, sizeof(err));

    if (c != NULL) {
        sh_config_free(c);
        fail_msg("accepted; expected \"%s\"", why);
    }
    if (strstr(err, why) == NULL) {
        fail_msg("\"%s\" does not say \"%s\"", err, why);
    }
    sh_options_init(o);
}

static void
test_out_of_range(void **state)
{
    sh_options_t o;

    (void) state;
    sh_options_init(&o);
    o.shingle = 0;
    refused(&o, "shingle size 0 is not between 1 and 8");
    o.shingle = SH_SHINGLE_MAX + 1;
    refused(&o, "shingle size 9 is not between 1 and 8");
    o.max_features = 0;
    refused(&o, "max features 0 is not between 1 and 16777216");
    o.min_features = 100;
    o.max_features = 99;
    refused(&o, "min features 100 exceeds max features 99");
    o.weight[SH_FEAT_SHINGLE] = -1.0f;
    refused(&o, "feature weight -1 is out of range");
    o.content = 3;
    refused(&o, "content mode 3 is not off, structure or auto");
    o.stem = "klingon";
    refused(&o, "unknown stemmer language \"klingon\"");
    o.stopwords_off = 0;
    o.stopwords_file = "/nonexistent/stop.txt";
    refused(&o, "cannot open stop-word file");
    o.idf_file = "/nonexistent/idf";
    refused(&o, "cannot open IDF table");
}

/* Patterns: the early check and the compile agree, and the message names
 * the pattern by number with the offset of the fault; the 33rd is
 * refused. */
static void
test_ignore_patterns(void **state)
{
    sh_options_t o;
    char         err[512];
    int          i;

    (void) state;
    assert_int_equal(sh_ignore_check("(?i)updated \\d+ ago", err,
                                     sizeof(err)), 0);
    assert_int_equal(sh_ignore_check("[a-", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "at offset 3"));

    sh_options_init(&o);
    assert_int_equal(sh_options_add_ignore(&o, "fine"), 0);
    assert_int_equal(sh_options_add_ignore(&o, "[a-"), 0);
    refused(&o, "ignore pattern 2 \"[a-\": ");

    for (i = 0; i < SH_IGNORE_MAX; i++) {
        assert_int_equal(sh_options_add_ignore(&o, "x"), 0);
    }
    assert_int_equal(sh_options_add_ignore(&o, "x"), -1);
    assert_int_equal(o.nignore, SH_IGNORE_MAX);
}

/* The options' strings are copied: the caller's may go. */
static void
test_strings_copied(void **state)
{
    sh_options_t        o;
    char                stem[16], pat[16], err[256];
    sh_config_t        *c;
    const sh_options_t *e;

    (void) state;
    sh_options_init(&o);
    strcpy(stem, "german");
    strcpy(pat, "foo\\d");
    o.stem = stem;
    assert_int_equal(sh_options_add_ignore(&o, pat), 0);
    c = compile(&o, err, sizeof(err));
    assert_non_null(c);
    memset(stem, 0, sizeof(stem));
    memset(pat, 0, sizeof(pat));
    e = sh_config_options(c);
    assert_string_equal(e->stem, "german");
    assert_string_equal(e->ignore[0], "foo\\d");
    assert_null(e->seed);       /* the secret is not kept in the clear */
    sh_config_free(c);
}

/* The seed digest and derived keys: one per secret, public without one
 * (then the derived key is HMAC with an empty key), one per purpose. */
static void
test_keys(void **state)
{
    sh_options_t  o;
    char          err[256];
    sh_config_t  *none, *a, *a2, *b;
    unsigned char k1[32], k2[32], k3[32], pub[32];

    (void) state;
    sh_options_init(&o);
    none = compile(&o, err, sizeof(err));
    o.seed = "secret a";
    o.seed_len = 8;
    a = compile(&o, err, sizeof(err));
    a2 = compile(&o, err, sizeof(err));
    o.seed = "secret b";
    b = compile(&o, err, sizeof(err));
    assert_true(none && a && a2 && b);

    assert_false(sh_config_keyed(none));
    assert_true(sh_config_keyed(a));
    assert_true(sh_config_seed_digest(a) == sh_config_seed_digest(a2));
    assert_true(sh_config_seed_digest(a) != sh_config_seed_digest(b));
    assert_true(sh_config_seed_digest(a) != sh_config_seed_digest(none));
    /* the version ignores the secret: fingerprints compare by both */
    assert_int_equal(sh_config_version(a), sh_config_version(none));

    assert_int_equal(sh_config_derive_key(a, "stream mac", k1, 32), 0);
    assert_int_equal(sh_config_derive_key(a2, "stream mac", k2, 32), 0);
    assert_memory_equal(k1, k2, 32);
    assert_int_equal(sh_config_derive_key(a, "dust", k3, 32), 0);
    assert_memory_not_equal(k1, k3, 32);
    assert_int_equal(sh_config_derive_key(b, "stream mac", k3, 32), 0);
    assert_memory_not_equal(k1, k3, 32);

    assert_int_equal(sh_config_derive_key(none, "stream mac", k3, 32), 0);
    assert_int_equal(sh_mac_derive(pub, 32, "", 0, "stream mac"), 0);
    assert_memory_equal(k3, pub, 32);
    assert_int_equal(sh_config_derive_key(none, "stream mac", k3, 33), -1);

    sh_config_free(none);
    sh_config_free(a);
    sh_config_free(a2);
    sh_config_free(b);
}

/* The words version: stemming, stop words and patterns change it; the
 * shingle size and weights (not words) do not, though the extraction
 * version moves with them. */
static void
test_words_version(void **state)
{
    sh_options_t o;
    char         err[256];
    sh_config_t *c;
    uint32_t     base, full;

    (void) state;
    sh_options_init(&o);
    c = compile(&o, err, sizeof(err));
    base = sh_config_words_version(c);
    full = sh_config_version(c);
    sh_config_free(c);

    o.shingle = 4;
    o.weight[SH_FEAT_WORD] = 2.0f;
    c = compile(&o, err, sizeof(err));
    assert_int_equal(sh_config_words_version(c), base);
    assert_int_not_equal(sh_config_version(c), full);
    sh_config_free(c);

    sh_options_init(&o);
    o.stem = "german";
    c = compile(&o, err, sizeof(err));
    assert_int_not_equal(sh_config_words_version(c), base);
    sh_config_free(c);

    sh_options_init(&o);
    o.stopwords_off = 0;
    c = compile(&o, err, sizeof(err));
    assert_int_not_equal(sh_config_words_version(c), base);
    sh_config_free(c);

    sh_options_init(&o);
    assert_int_equal(sh_options_add_ignore(&o, "x"), 0);
    c = compile(&o, err, sizeof(err));
    assert_int_not_equal(sh_config_words_version(c), base);
    sh_config_free(c);
}

static void
test_names(void **state)
{
    (void) state;
    assert_int_equal(sh_content_parse("off"), 0);
    assert_int_equal(sh_content_parse("structure"), 1);
    assert_int_equal(sh_content_parse("auto"), 2);
    assert_int_equal(sh_content_parse("Auto"), -1);
    assert_string_equal(sh_content_name(2), "auto");
    assert_string_equal(sh_content_name(7), "unknown");
    assert_true(sh_stem_lang_valid("english"));
    assert_true(sh_stem_lang_valid("russian"));
    assert_false(sh_stem_lang_valid("klingon"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_ignore_patterns),
        cmocka_unit_test(test_strings_copied),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_words_version),
        cmocka_unit_test(test_names),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
