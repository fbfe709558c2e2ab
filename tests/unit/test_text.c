/*
 * test_text.c -- visible text to terms (sh_text.h): tokens are runs of
 * letters, digits and marks, case-folded and in NFC, one per CJK character,
 * cut at SH_TOKEN_MAX bytes; the same tokens wherever the pieces are cut;
 * stop words dropped and words stemmed before the keyed hash; ignore
 * patterns blank their matches inside a block, never across two.
 */
#include "test_util.h"

#include "sh_config.h"
#include "sh_library.h"
#include "sh_text.h"

typedef struct {
    char     tokens[4096];      /* the raw tokens, each followed by '|' */
    uint64_t terms[256];
    size_t   nterms;
} seen_t;

static void
on_token(void *arg, const char *tok, size_t len)
{
    seen_t *s = arg;
    size_t  at = strlen(s->tokens);

    assert_true(at + len + 2 < sizeof(s->tokens));
    memcpy(s->tokens + at, tok, len);
    s->tokens[at + len] = '|';
    s->tokens[at + len + 1] = '\0';
}

static void
on_term(void *arg, uint64_t term)
{
    seen_t *s = arg;

    assert_true(s->nterms < 256);
    s->terms[s->nterms++] = term;
}

/* Feed `text` as blocks split at '\n', each in pieces of `piece` bytes (0:
 * whole), under options `o`. */
static void
run(const sh_options_t *o, const char *text, size_t piece, seen_t *s)
{
    char         err[256];
    sh_config_t *cfg = sh_config_new(o, err, sizeof(err));
    sh_text_t   *t;
    const char  *p = text, *nl;

    assert_non_null(cfg);
    memset(s, 0, sizeof(*s));
    t = sh_text_new(cfg, on_term, s);
    assert_non_null(t);
    sh_text_set_token_hook(t, on_token, s);
    for (;;) {
        size_t len, i, n;

        nl = strchr(p, '\n');
        len = nl ? (size_t) (nl - p) : strlen(p);
        for (i = 0; i < len; i += n) {
            n = piece && piece < len - i ? piece : len - i;
            assert_int_equal(sh_text_feed(t, p + i, n), 0);
        }
        assert_int_equal(sh_text_end_block(t), 0);
        if (nl == NULL) {
            break;
        }
        p = nl + 1;
    }
    sh_text_free(t);
    sh_config_free(cfg);
}

static void
plain(sh_options_t *o)
{
    sh_options_init(o);
    o->stem = NULL;
    o->stopwords_off = 1;
}

static void
test_tokens(void **state)
{
    sh_options_t o;
    seen_t       s;

    (void) state;
    plain(&o);
    run(&o, "Hello, WORLD! Stra\xc3\x9f" "e \xce\xa3\xce\x9f\xce\xa6\xce\x8a"
            "\xce\x91 \xd0\x9c\xd0\x9e\xd0\xa1\xd0\x9a\xd0\x92\xd0\x90 "
            "caf\xc3\xa9" "42 x_y it's", 0, &s);
    assert_string_equal(s.tokens,
        "hello|world|strasse|\xcf\x83\xce\xbf\xcf\x86\xce\xaf\xce\xb1|"
        "\xd0\xbc\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0|caf\xc3\xa9" "42|"
        "x|y|it|s|");
    assert_int_equal(s.nterms, 10);

    /* e + COMBINING ACUTE is one token, composed; CJK one per character */
    run(&o, "cafe\xcc\x81 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
            "\xe3\x83\x86\xe3\x82\xad", 0, &s);
    assert_string_equal(s.tokens, "caf\xc3\xa9|\xe6\x97\xa5|\xe6\x9c\xac|"
                        "\xe8\xaa\x9e|\xe3\x83\x86|\xe3\x82\xad|");
}

/* A token keeps its first SH_TOKEN_MAX bytes. */
static void
test_long_token_is_cut(void **state)
{
    sh_options_t o;
    seen_t       s;
    char         text[200], want[SH_TOKEN_MAX + 2];

    (void) state;
    plain(&o);
    memset(text, 'a', 150);
    strcpy(text + 150, " b");
    memset(want, 'a', SH_TOKEN_MAX);
    strcpy(want + SH_TOKEN_MAX, "|");
    run(&o, text, 0, &s);
    assert_int_equal(strlen(s.tokens), SH_TOKEN_MAX + 3);
    assert_memory_equal(s.tokens, want, SH_TOKEN_MAX + 1);
    assert_string_equal(s.tokens + SH_TOKEN_MAX + 1, "b|");
}

/* Pieces cut anywhere, inside a word or a UTF-8 sequence: the same tokens
 * and the same terms. */
static void
test_pieces_do_not_matter(void **state)
{
    const char  *text = "Gr\xc3\xbc\xc3\x9f" "e aus M\xc3\xbcnchen, "
                        "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 end";
    sh_options_t o;
    seen_t       whole, cut;
    size_t       piece;

    (void) state;
    sh_options_init(&o);
    run(&o, text, 0, &whole);
    assert_true(whole.nterms > 4);
    for (piece = 1; piece < strlen(text); piece++) {
        run(&o, text, piece, &cut);
        assert_string_equal(cut.tokens, whole.tokens);
        assert_int_equal(cut.nterms, whole.nterms);
        assert_memory_equal(cut.terms, whole.terms,
                            whole.nterms * sizeof(uint64_t));
    }
}

/* The English stop words go, and Snowball makes one term of a word's
 * forms. */
static void
test_stop_words_and_stems(void **state)
{
    sh_options_t o;
    seen_t       s;

    (void) state;
    sh_options_init(&o);
    o.stopwords_off = 0;
    o.stem = "english";
    run(&o, "The cat and the hat", 0, &s);
    assert_int_equal(s.nterms, 2);
    assert_string_equal(s.tokens, "the|cat|and|the|hat|");

    run(&o, "run runs running", 0, &s);
    assert_int_equal(s.nterms, 3);
    assert_true(s.terms[0] == s.terms[1] && s.terms[1] == s.terms[2]);

    o.stopwords_off = 1;
    o.stem = NULL;
    run(&o, "The cat and the hat run runs", 0, &s);
    assert_int_equal(s.nterms, 7);
    assert_true(s.terms[0] == s.terms[3]);      /* the, the */
    assert_true(s.terms[5] != s.terms[6]);      /* run, runs unstemmed */
}

/* Terms are keyed: a secret changes every one, the same secret keeps
 * them. */
static void
test_terms_are_keyed(void **state)
{
    sh_options_t o;
    seen_t       a, b, c;

    (void) state;
    sh_options_init(&o);
    run(&o, "one two three", 0, &a);
    o.seed = "a secret";
    o.seed_len = 8;
    run(&o, "one two three", 0, &b);
    run(&o, "one two three", 0, &c);
    assert_int_equal(a.nterms, 3);
    assert_int_equal(b.nterms, 3);
    assert_memory_equal(b.terms, c.terms, 3 * sizeof(uint64_t));
    assert_true(a.terms[0] != b.terms[0] && a.terms[1] != b.terms[1]
                && a.terms[2] != b.terms[2]);
}

/* An ignore pattern blanks its matches within a block (in pieces too),
 * and does not see a match split between two blocks. */
static void
test_ignore_patterns(void **state)
{
    sh_options_t o;
    seen_t       s;

    (void) state;
    plain(&o);
    assert_int_equal(sh_options_add_ignore(&o,
                                           "(?i)updated \\d+ minutes ago"),
                     0);
    run(&o, "Updated  5 minutes ago today", 0, &s);
    assert_string_equal(s.tokens, "today|");
    run(&o, "Updated  5 minutes ago today", 3, &s);
    assert_string_equal(s.tokens, "today|");
    run(&o, "updated 7\nminutes ago", 0, &s);
    assert_string_equal(s.tokens, "updated|7|minutes|ago|");
}

/* The normaliser of stop-word files (sh_fold.h): fold and compose, as
 * tokens are. */
static void
test_normalize(void **state)
{
    char   out[SH_TOKEN_MAX + 4];
    size_t n;

    (void) state;
    n = sh_fold_word("STRASSE", 7, out);
    assert_int_equal(n, 7);
    assert_memory_equal(out, "strasse", 7);
    n = sh_fold_word("Stra\xc3\x9f" "e", 7, out);
    assert_int_equal(n, 7);
    assert_memory_equal(out, "strasse", 7);
    n = sh_fold_word("Cafe\xcc\x81", 6, out);
    assert_int_equal(n, 5);
    assert_memory_equal(out, "caf\xc3\xa9", 5);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_long_token_is_cut),
        cmocka_unit_test(test_pieces_do_not_matter),
        cmocka_unit_test(test_stop_words_and_stems),
        cmocka_unit_test(test_terms_are_keyed),
        cmocka_unit_test(test_ignore_patterns),
        cmocka_unit_test(test_normalize),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
