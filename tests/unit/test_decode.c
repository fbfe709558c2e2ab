/*
 * test_decode.c -- bytes in some charset to clean UTF-8 (sh_decode.h):
 * labels resolved as browsers resolve them, the prescan's <meta>, a byte
 * order mark before the caller's label before the page's, each bad byte
 * and each NUL one U+FFFD, the same output at every split point, and the
 * binary check.
 */
#include "test_util.h"

#include "sh_decode.h"

typedef struct {
    char   buf[8192];
    size_t len;
} out_t;

static int
collect(void *arg, const char *utf8, size_t len)
{
    out_t *o = arg;

    assert_true(o->len + len < sizeof(o->buf));
    memcpy(o->buf + o->len, utf8, len);
    o->len += len;
    o->buf[o->len] = '\0';
    return 0;
}

/* Decode `in` (n bytes) in pieces of `piece` bytes (0: whole); returns the
 * charset used. */
static const char *
decode(const char *label, const char *in, size_t n, size_t piece, out_t *o,
       int *binary)
{
    static char  charset[64];
    sh_decode_t *d = sh_decode_new(label, collect, o);
    size_t       i, k;

    assert_non_null(d);
    memset(o, 0, sizeof(*o));
    for (i = 0; i < n; i += k) {
        k = piece && piece < n - i ? piece : n - i;
        assert_int_equal(sh_decode_feed(d, in + i, k), 0);
    }
    assert_int_equal(sh_decode_finish(d), 0);
    assert_true(sh_decode_is_decided(d));
    if (binary != NULL) {
        *binary = sh_decode_is_binary(d);
    }
    snprintf(charset, sizeof(charset), "%s", sh_decode_charset(d));
    sh_decode_free(d);
    return charset;
}

static void
resolves(const char *label, int in_page, const char *want)
{
    const char *got = sh_charset_resolve(label, strlen(label), in_page);

    if (want == NULL) {
        if (got != NULL) {
            fail_msg("\"%s\" resolved to %s", label, got);
        }
        return;
    }
    if (got == NULL || strcmp(got, want) != 0) {
        fail_msg("\"%s\" resolved to %s, not %s", label, got ? got : "NULL",
                 want);
    }
}

static void
test_labels(void **state)
{
    (void) state;
    resolves("iso-8859-1", 0, "WINDOWS-1252");
    resolves("latin1", 0, "WINDOWS-1252");
    resolves("ascii", 0, "WINDOWS-1252");
    resolves("shift_jis", 0, "CP932");
    resolves("gb2312", 0, "GBK");
    resolves(" Windows-1251 ", 0, "WINDOWS-1251");
    resolves("utf8", 0, "UTF-8");
    resolves("utf-16", 0, "UTF-16LE");
    resolves("utf-16", 1, "UTF-8");     /* inside the page: it read as ASCII */
    resolves("UTF-16LE", 1, "UTF-8");
    resolves("utf-32", 0, NULL);        /* does not write ASCII as ASCII */
    resolves("utf-7", 0, NULL);
    resolves("ebcdic-cp-us", 0, NULL);
    resolves("nonsense", 0, NULL);
}

static void
prescans(const char *page, const char *want)
{
    const char *label = NULL;
    size_t      n = sh_charset_prescan(page, strlen(page), &label);

    if (want == NULL) {
        assert_int_equal(n, 0);
        return;
    }
    assert_int_equal(n, strlen(want));
    assert_memory_equal(label, want, n);
}

static void
test_prescan(void **state)
{
    (void) state;
    prescans("<html><head><meta charset=\"koi8-r\">", "koi8-r");
    prescans("<meta http-equiv=\"Content-Type\" "
             "content=\"text/html; charset=windows-1251\">", "windows-1251");
    prescans("<!-- <meta charset=utf-16> --><meta charset='x'>", "x");
    prescans("<p>no meta here</p>", NULL);
}

/* BOM, then the caller's label, then the page's <meta>, then UTF-8. */
static void
test_which_charset(void **state)
{
    out_t o;

    (void) state;
    assert_string_equal(decode("windows-1252", "caf\xe9 \x80", 6, 0, &o,
                               NULL), "WINDOWS-1252");
    assert_string_equal(o.buf, "caf\xc3\xa9 \xe2\x82\xac");

    assert_string_equal(decode("windows-1252", "\xef\xbb\xbf" "caf\xc3\xa9",
                               8, 0, &o, NULL), "UTF-8");
    assert_string_equal(o.buf, "caf\xc3\xa9");

    assert_string_equal(decode(NULL, "\xff\xfeh\0i\0", 6, 0, &o, NULL),
                        "UTF-16LE");
    assert_string_equal(o.buf, "hi");

    assert_string_equal(decode("koi8-r", "<meta charset=utf-8>\xc1", 21, 0,
                               &o, NULL), "KOI8-R");
    assert_string_equal(decode(NULL, "<meta charset=koi8-r>\xc1", 22, 0, &o,
                               NULL), "KOI8-R");
    assert_string_equal(o.buf, "<meta charset=koi8-r>\xd0\xb0");

    assert_string_equal(decode("no-such-charset", "\xc3\xa9", 2, 0, &o,
                               NULL), "UTF-8");
    assert_string_equal(o.buf, "\xc3\xa9");
}

/* Each undecodable byte is one U+FFFD, and so is a NUL past the binary
 * check's window; nothing stops the decoder.  A NUL inside the window
 * makes the body binary, and nothing is passed on. */
static void
test_bad_bytes(void **state)
{
    char  in[SH_PRESCAN + 64];
    out_t o;
    int   binary;

    (void) state;
    decode("utf-8", "a\xff" "b\xc3" "c, and more text", 20, 0, &o, &binary);
    assert_false(binary);
    assert_string_equal(o.buf, "a\xef\xbf\xbd" "b\xef\xbf\xbd"
                        "c, and more text");

    memset(in, 'x', SH_PRESCAN);
    memcpy(in + SH_PRESCAN, "a\0b", 3);
    decode("utf-8", in, SH_PRESCAN + 3, 0, &o, &binary);
    assert_false(binary);
    assert_int_equal(o.len, SH_PRESCAN + 5);
    assert_memory_equal(o.buf + SH_PRESCAN, "a\xef\xbf\xbd" "b", 5);

    decode("utf-8", "text\0text", 9, 0, &o, &binary);
    assert_true(binary);
    assert_int_equal(o.len, 0);
}

/* The same output wherever the input is cut: inside a multi-byte
 * sequence, inside the prescan's <meta>, across the prescan's end. */
static void
test_every_split(void **state)
{
    char   in[1200];
    size_t n = 0, piece;
    out_t  whole, cut;

    (void) state;
    n += (size_t) sprintf(in, "<meta charset=\"windows-1251\">");
    while (n < 1100) {
        memcpy(in + n, "\xcf\xf0\xe8\xe2\xe5\xf2 ok ", 10); /* Привет */
        n += 10;
    }
    decode(NULL, in, n, 0, &whole, NULL);
    assert_non_null(strstr(whole.buf, "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2"
                                      "\xd0\xb5\xd1\x82 ok"));
    for (piece = 1; piece < 40; piece++) {
        decode(NULL, in, n, piece, &cut, NULL);
        assert_int_equal(cut.len, whole.len);
        assert_memory_equal(cut.buf, whole.buf, whole.len);
    }
    decode(NULL, in, n, 1023, &cut, NULL);
    assert_memory_equal(cut.buf, whole.buf, whole.len);

    /* UTF-8 cut inside each sequence */
    decode(NULL, "\xe6\x97\xa5\xf0\x9f\x98\x80\xc3\xa9", 9, 0, &whole, NULL);
    for (piece = 1; piece < 9; piece++) {
        decode(NULL, "\xe6\x97\xa5\xf0\x9f\x98\x80\xc3\xa9", 9, piece, &cut,
               NULL);
        assert_string_equal(cut.buf, whole.buf);
    }
    assert_string_equal(whole.buf, "\xe6\x97\xa5\xf0\x9f\x98\x80\xc3\xa9");
}

/* Binary: NULs or mostly undecodable; text is not, however short. */
static void
test_binary(void **state)
{
    char  in[2048];
    out_t o;
    int   binary;
    size_t i;

    (void) state;
    decode(NULL, "<p>short text</p>", 17, 0, &o, &binary);
    assert_false(binary);

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (char) (i % 3 == 0 ? 0 : 'a');
    }
    decode(NULL, in, sizeof(in), 0, &o, &binary);
    assert_true(binary);

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (char) (0x80 + rnd() % 0x40);   /* lone continuation bytes */
    }
    decode("utf-8", in, sizeof(in), 0, &o, &binary);
    assert_true(binary);

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (char) (0x80 + rnd() % 0x80);   /* Latin-1 letters */
    }
    decode("windows-1252", in, sizeof(in), 0, &o, &binary);
    assert_false(binary);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_prescan),
        cmocka_unit_test(test_which_charset),
        cmocka_unit_test(test_bad_bytes),
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_binary),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
