/*
 * test_stopwords.c -- stop-word sets (sh_stopwords.h): the built-in English
 * list holds function words and not content words; a file's words are
 * normalised as tokens are, '#' starts a comment, blank and indented lines
 * and CRLF are read; a set grows past its first size; the digest is the
 * set's, whatever the order; unreadable and empty files are refused.
 */
#include "test_util.h"

#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_config.h"
#include "sh_library.h"
#include "sh_stopwords.h"

static int
has(const sh_stopwords_t *s, const char *word)
{
    return sh_stopwords_has(s, XXH3_64bits(word, strlen(word)));
}

static char path[64];

static sh_stopwords_t *
load_text(const char *text, char *err, size_t errlen)
{
    FILE *f;

    strcpy(path, "/tmp/test_stopwords.XXXXXX");
    assert_int_not_equal(mkstemp(path), -1);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return sh_stopwords_load(path, err, errlen);
}

static void
test_english(void **state)
{
    sh_stopwords_t *s = sh_stopwords_english();

    (void) state;
    assert_non_null(s);
    assert_true(has(s, "the") && has(s, "and") && has(s, "don")
                && has(s, "t") && has(s, "i") && has(s, "against"));
    assert_false(has(s, "new") || has(s, "page") || has(s, "time")
                 || has(s, "simhash") || has(s, "The"));
    sh_stopwords_free(s);
}

static void
test_file(void **state)
{
    char            err[256];
    sh_stopwords_t *s;

    (void) state;
    s = load_text("# a list\n\nDer   # an article\n  die\r\n\tdas\n"
                  "STRASSE trailing words ignored\n", err, sizeof(err));
    assert_non_null(s);
    assert_true(has(s, "der") && has(s, "die") && has(s, "das")
                && has(s, "strasse"));
    assert_false(has(s, "Der") || has(s, "a") || has(s, "list")
                 || has(s, "trailing") || has(s, "#"));
    sh_stopwords_free(s);
    unlink(path);
}

/* Many words: the set grows, keeps every one, and finds no other. */
static void
test_grows(void **state)
{
    char            text[3000 * 12], word[16], err[256];
    size_t          at = 0, i, false_hits = 0;
    sh_stopwords_t *s;

    (void) state;
    for (i = 0; i < 3000; i++) {
        at += (size_t) sprintf(text + at, "w%zu\n", i);
    }
    s = load_text(text, err, sizeof(err));
    assert_non_null(s);
    for (i = 0; i < 3000; i++) {
        sprintf(word, "w%zu", i);
        assert_true(has(s, word));
        sprintf(word, "x%zu", i);
        false_hits += has(s, word);
    }
    assert_int_equal(false_hits, 0);
    sh_stopwords_free(s);
    unlink(path);
}

/* The digest: the same words in another order (or twice) give the same
 * digest, one word more another. */
static void
test_digest(void **state)
{
    char            err[256];
    sh_stopwords_t *a, *b, *c;

    (void) state;
    a = load_text("one\ntwo\nthree\n", err, sizeof(err));
    unlink(path);
    b = load_text("three\nONE\ntwo\none\n", err, sizeof(err));
    unlink(path);
    c = load_text("one\ntwo\nthree\nfour\n", err, sizeof(err));
    unlink(path);
    assert_true(a && b && c);
    assert_true(sh_stopwords_digest(a) == sh_stopwords_digest(b));
    assert_true(sh_stopwords_digest(a) != sh_stopwords_digest(c));
    sh_stopwords_free(a);
    sh_stopwords_free(b);
    sh_stopwords_free(c);
}

static void
test_refused(void **state)
{
    char err[256];

    (void) state;
    assert_null(sh_stopwords_load("/nonexistent/stop.txt", err,
                                  sizeof(err)));
    assert_non_null(strstr(err, "cannot open stop-word file "
                                "\"/nonexistent/stop.txt\""));
    assert_null(load_text("# only comments\n\n   \n", err, sizeof(err)));
    assert_non_null(strstr(err, "has no words"));
    unlink(path);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_english),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_grows),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_refused),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
