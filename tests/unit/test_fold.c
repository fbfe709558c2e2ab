/*
 * test_fold.c -- sh_fold: a word's normal form.  Case and composition
 * fold away, in every script the tokens meet; a word too long keeps its
 * first SH_TOKEN_MAX bytes and never ends in a piece of a character; and
 * a stop word from a file is folded as the text's tokens are, so that it
 * matches them.
 */
#include "test_util.h"

#include <unistd.h>

#include "sh_config.h"
#include "sh_doc.h"
#include "sh_fold.h"

static void
assert_folds_to(const char *word, const char *expect)
{
    char   out[SH_TOKEN_MAX + 4];
    size_t n = sh_fold_word(word, strlen(word), out);

    assert_int_equal(n, strlen(expect));
    assert_memory_equal(out, expect, n);
}

static void
test_case_and_composition(void **state)
{
    assert_folds_to("STRASSE", "strasse");
    assert_folds_to("Stra\xc3\x9f" "e", "strasse");        /* Straße */
    assert_folds_to("\xce\xa3\xce\x9f\xce\xa6\xce\x8a\xce\x91",
                    "\xcf\x83\xce\xbf\xcf\x86\xce\xaf\xce\xb1");
                                                /* ΣΟΦΊΑ -> σοφία */
    assert_folds_to("\xd0\x9c\xd0\x9e\xd0\xa1\xd0\x9a\xd0\x92\xd0\x90",
                    "\xd0\xbc\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0");
                                                /* МОСКВА -> москва */
    /* e and a combining acute compose: NFC, one character */
    assert_folds_to("Cafe\xcc\x81", "caf\xc3\xa9");
    assert_folds_to("caf\xc3\xa9", "caf\xc3\xa9");
}

/*
 * A word longer than SH_TOKEN_MAX bytes keeps its first SH_TOKEN_MAX.
 * Folded, it is cut at a character's start; a word of more characters
 * than fit is folded byte by byte (ASCII only), as it always was: the
 * fingerprints depend on it.
 */
static void
test_long_words(void **state)
{
    char   word[3 * SH_TOKEN_MAX], out[SH_TOKEN_MAX + 4];
    size_t n, i;

    memset(word, 'A', sizeof(word));
    n = sh_fold_word(word, sizeof(word), out);
    assert_int_equal(n, SH_TOKEN_MAX);
    for (i = 0; i < n; i++) {
        assert_int_equal(out[i], 'a');
    }

    /* 40 x Cyrillic "Д", 80 bytes: 32 x "д", 64 */
    for (i = 0; i < 40; i++) {
        word[2 * i] = '\xd0';
        word[2 * i + 1] = '\x94';
    }
    n = sh_fold_word(word, 80, out);
    assert_int_equal(n, SH_TOKEN_MAX);
    for (i = 0; i < n; i += 2) {
        assert_memory_equal(out + i, "\xd0\xb4", 2);
    }
    /* 30 x "中", 90 bytes: 21 whole characters, 63 bytes */
    for (i = 0; i < 30; i++) {
        memcpy(word + 3 * i, "\xe4\xb8\xad", 3);
    }
    n = sh_fold_word(word, 90, out);
    assert_int_equal(n, 63);
    assert_memory_equal(out, word, 63);

    /* 40 x "Éé" then a letter: 161 bytes and, decomposed, 161 code
     * points; byte by byte, so the cut may fall inside a character */
    for (i = 0; i < 80; i++) {
        word[2 * i] = '\xc3';
        word[2 * i + 1] = i % 2 ? '\xa9' : '\x89';
    }
    word[160] = 'Z';
    n = sh_fold_word(word, 161, out);
    assert_int_equal(n, SH_TOKEN_MAX);
    assert_memory_equal(out, word, SH_TOKEN_MAX);
}

static size_t
features(const char *stopwords_file, const char *html)
{
    sh_options_t  o;
    sh_config_t  *c;
    sh_doc_t     *d;
    sh_result_t   r;
    char          err[256];

    sh_options_init(&o);
    o.min_features = 1;
    o.shingle = 1;
    o.stem = NULL;
    o.stopwords_off = stopwords_file == NULL;
    o.stopwords_file = stopwords_file;
    c = sh_config_new(&o, err, sizeof(err));
    assert_non_null(c);
    d = sh_doc_new(c, NULL);
    assert_non_null(d);
    assert_int_equal(sh_doc_feed(d, html, strlen(html)), 0);
    assert_int_equal(sh_doc_finish(d, &r), 0);
    sh_doc_free(d);
    sh_config_free(c);
    return r.nfeatures;
}

/* "STRASSE" in a stop-word file drops "Straße" from the text. */
static void
test_stop_words_fold_as_tokens(void **state)
{
    char        path[] = "/tmp/test_fold_XXXXXX";
    const char *html = "<html><body><p>Stra\xc3\x9f" "e river bank</p>"
                       "</body></html>";
    int         fd = mkstemp(path);
    FILE       *f;

    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("STRASSE\n", f);
    fclose(f);
    assert_int_equal(features(NULL, html), 3);
    assert_int_equal(features(path, html), 2);
    unlink(path);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_case_and_composition),
        cmocka_unit_test(test_long_words),
        cmocka_unit_test(test_stop_words_fold_as_tokens),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
