/*
 * test_url.c -- sh_url: the parts of an absolute URL, what it refuses (the
 * hostile-input bound), equality of decoded parameter names, and that the
 * hash of a rewrite equals the hash of the rewritten URL itself.
 */
#include "test_util.h"

#include "sh_url.h"

static unsigned char secret[SH_URL_SECRET_LEN];

static int
setup(void **state)
{
    (void) state;
    sh_url_secret("test secret", 11, secret);
    return 0;
}

static int
parse(sh_url_t *u, const char *s)
{
    int rc = sh_url_parse(u, s, strlen(s));

    if (rc == 0) {
        sh_url_hash_parts(u, secret);
    }
    return rc;
}

static uint64_t
hash_of(const char *s, const sh_url_rw_t *rw)
{
    static sh_url_t u;

    assert_int_equal(parse(&u, s), 0);
    return sh_url_hash(&u, rw);
}

static int
span_is(sh_url_span_t sp, const char *s)
{
    return sp.len == strlen(s) && memcmp(sp.p, s, sp.len) == 0;
}

static void
test_parts(void **state)
{
    sh_url_t u;

    (void) state;
    assert_int_equal(parse(&u, "http://Example.com:8080/a/b?x=1&y#frag"), 0);
    assert_true(span_is(u.scheme, "http"));
    assert_true(span_is(u.host, "Example.com:8080"));
    assert_true(span_is(u.path, "/a/b"));
    assert_true(span_is(u.query, "x=1&y"));
    assert_int_equal(u.nsegs, 2);
    assert_true(span_is(u.segs[0].seg, "a"));
    assert_true(span_is(u.segs[1].seg, "b"));
    assert_int_equal(u.nparams, 2);
    assert_true(span_is(u.params[0].name, "x"));
    assert_true(span_is(u.params[0].value, "1"));
    assert_true(span_is(u.params[1].name, "y"));
    assert_int_equal(u.params[1].value.len, 0);
    assert_false(u.upper);

    /* no path, no query */
    assert_int_equal(parse(&u, "https://a.org"), 0);
    assert_true(span_is(u.path, "/"));
    assert_int_equal(u.nsegs, 1);
    assert_int_equal(u.segs[0].seg.len, 0);
    assert_int_equal(u.nparams, 0);

    /* a query without a path */
    assert_int_equal(parse(&u, "http://a.org?q=1"), 0);
    assert_true(span_is(u.path, "/"));
    assert_int_equal(u.nparams, 1);

    /* trailing slash: a final empty segment; capitals seen */
    assert_int_equal(parse(&u, "http://a.org/Doc/x/"), 0);
    assert_int_equal(u.nsegs, 3);
    assert_int_equal(u.segs[2].seg.len, 0);
    assert_true(u.upper);

    /* the fragment hides what looks like a query */
    assert_int_equal(parse(&u, "http://a.org/p#top?x=1"), 0);
    assert_int_equal(u.nparams, 0);
    assert_true(span_is(u.path, "/p"));
    assert_int_equal(hash_of("http://a.org/p#top?x=1", NULL),
                     hash_of("http://a.org/p", NULL));
}

static void
test_refused(void **state)
{
    sh_url_t u;
    char    *big, *p;
    size_t   n, i;

    (void) state;
    assert_int_equal(parse(&u, "/a/b"), -1);
    assert_int_equal(u.error, SH_URL_ENOTABS);
    assert_int_equal(parse(&u, "example.com/a"), -1);
    assert_int_equal(u.error, SH_URL_ENOTABS);
    assert_int_equal(parse(&u, "://a.org/"), -1);
    assert_int_equal(parse(&u, "http:///x"), -1);
    assert_int_equal(u.error, SH_URL_EHOST);
    assert_non_null(sh_url_strerror(SH_URL_EHOST));

    /* 64 KB: refused before any work on it */
    n = 65536;
    big = malloc(n + 1);
    assert_non_null(big);
    memcpy(big, "http://a.org/", 13);
    memset(big + 13, 'x', n - 13);
    assert_int_equal(sh_url_parse(&u, big, n), -1);
    assert_int_equal(u.error, SH_URL_ETOOLONG);
    /* exactly the limit is fine */
    assert_int_equal(sh_url_parse(&u, big, SH_URL_LEN_MAX), 0);
    assert_int_equal(sh_url_parse(&u, big, SH_URL_LEN_MAX + 1), -1);

    /* 1,000 parameters in 64 KB, and in 4 KB */
    p = big + sprintf(big, "http://a.org/x?");
    for (i = 0; i < 1000; i++) {
        p += sprintf(p, "%sp%zu=%zu", i ? "&" : "", i, i);
    }
    assert_int_equal(sh_url_parse(&u, big, (size_t) (p - big)), -1);
    assert_int_equal(u.error, SH_URL_ETOOLONG);
    p = big + sprintf(big, "http://a.org/x?");
    for (i = 0; i < 1000; i++) {
        p += sprintf(p, "%sp", i ? "&" : "");
    }
    assert_true((size_t) (p - big) <= SH_URL_LEN_MAX);
    assert_int_equal(sh_url_parse(&u, big, (size_t) (p - big)), -1);
    assert_int_equal(u.error, SH_URL_EPARAMS);

    /* SH_URL_PARAMS_MAX is fine, one more is not */
    p = big + sprintf(big, "http://a.org/x?");
    for (i = 0; i < SH_URL_PARAMS_MAX; i++) {
        p += sprintf(p, "%sp%zu=1", i ? "&" : "", i);
    }
    assert_int_equal(sh_url_parse(&u, big, (size_t) (p - big)), 0);
    assert_int_equal(u.nparams, SH_URL_PARAMS_MAX);
    p += sprintf(p, "&last");
    assert_int_equal(sh_url_parse(&u, big, (size_t) (p - big)), -1);
    assert_int_equal(u.error, SH_URL_EPARAMS);

    /* path depth */
    p = big + sprintf(big, "http://a.org");
    for (i = 0; i < SH_URL_SEGS_MAX; i++) {
        p += sprintf(p, "/s");
    }
    assert_int_equal(sh_url_parse(&u, big, (size_t) (p - big)), 0);
    p += sprintf(p, "/s");
    assert_int_equal(sh_url_parse(&u, big, (size_t) (p - big)), -1);
    assert_int_equal(u.error, SH_URL_ESEGS);

    /* an authority longer than a host name can be */
    p = big + sprintf(big, "http://");
    memset(p, 'h', SH_URL_HOST_MAX + 1);
    p += SH_URL_HOST_MAX + 1;
    p += sprintf(p, "/x");
    assert_int_equal(sh_url_parse(&u, big, (size_t) (p - big)), -1);
    assert_int_equal(u.error, SH_URL_EHOST);
    free(big);
}

static void
test_names(void **state)
{
    sh_url_t u;

    (void) state;
    assert_true(sh_url_name_eq("%73id", 5, "sid", 3));
    assert_true(sh_url_name_eq("%73%69%64", 9, "sid", 3));
    assert_true(sh_url_name_eq("a+b", 3, "a%20b", 5));
    assert_false(sh_url_name_eq("sid", 3, "sic", 3));
    /* a malformed escape stays as it is */
    assert_true(sh_url_name_eq("%zz", 3, "%zz", 3));
    assert_false(sh_url_name_eq("%7", 2, "\x07", 1));

    assert_int_equal(hash_of("http://a.org/x?%73id=1", NULL),
                     hash_of("http://a.org/x?sid=1", NULL));
    /* values are raw bytes */
    assert_int_not_equal(hash_of("http://a.org/x?a=%41", NULL),
                         hash_of("http://a.org/x?a=A", NULL));
    /* scheme and host: any case */
    assert_int_equal(hash_of("HTTP://EXAMPLE.com/x", NULL),
                     hash_of("http://example.com/x", NULL));
    /* the path's case matters */
    assert_int_not_equal(hash_of("http://a.org/X", NULL),
                         hash_of("http://a.org/x", NULL));

    /* repeated names, empty values, empty pieces */
    assert_int_equal(parse(&u, "http://a.org/x?a=1&&a=2&b=&c"), 0);
    assert_int_equal(u.nparams, 4);
    assert_int_equal(u.params[0].name_hash, u.params[1].name_hash);
    assert_int_not_equal(u.params[0].hash, u.params[1].hash);
    assert_int_equal(hash_of("http://a.org/x?b=&c", NULL),
                     hash_of("http://a.org/x?b&c=", NULL));
    assert_int_equal(hash_of("http://a.org/x?a=1&&b=2", NULL),
                     hash_of("http://a.org/x?a=1&b=2", NULL));
    /* order matters without the sort */
    assert_int_not_equal(hash_of("http://a.org/x?a=1&b=2", NULL),
                         hash_of("http://a.org/x?b=2&a=1", NULL));
}

static void
test_rewrites(void **state)
{
    sh_url_rw_t rw;
    sh_url_t    u;
    char        buf[256];

    (void) state;
    /* drop every occurrence of one parameter */
    memset(&rw, 0, sizeof(rw));
    rw.drop_params = 1u << 1 | 1u << 3;
    assert_int_equal(hash_of("http://a.org/d/1?x=1&sid=A&y=2&sid=B", &rw),
                     hash_of("http://a.org/d/1?x=1&y=2", NULL));
    assert_int_equal(parse(&u, "http://a.org/d/1?x=1&sid=A&y=2&sid=B"), 0);
    sh_url_write(&u, &rw, NULL, 0, buf, sizeof(buf));
    assert_string_equal(buf, "http://a.org/d/1?x=1&y=2");
    /* all of them: no query at all */
    rw.drop_params = 1;
    assert_int_equal(hash_of("http://a.org/d/1?sid=A", &rw),
                     hash_of("http://a.org/d/1", NULL));

    /* sort by decoded name, then value */
    memset(&rw, 0, sizeof(rw));
    rw.sort = 1;
    assert_int_equal(parse(&u, "http://a.org/s?b=2&a=9&a=1&%61b=0"), 0);
    assert_false(u.sorted);
    sh_url_write(&u, &rw, NULL, 0, buf, sizeof(buf));
    assert_string_equal(buf, "http://a.org/s?a=1&a=9&%61b=0&b=2");
    assert_int_equal(sh_url_hash(&u, &rw),
                     hash_of("http://a.org/s?a=1&a=9&ab=0&b=2", NULL));
    assert_int_equal(parse(&u, "http://a.org/s?a=1&b=2"), 0);
    assert_true(u.sorted);
    assert_int_equal(sh_url_hash(&u, &rw), sh_url_hash(&u, NULL));

    /* trailing slash, never for the root */
    memset(&rw, 0, sizeof(rw));
    rw.trailing_slash = 1;
    assert_int_equal(hash_of("http://a.org/d/x/?q=1", &rw),
                     hash_of("http://a.org/d/x?q=1", NULL));
    assert_int_equal(hash_of("http://a.org/", &rw),
                     hash_of("http://a.org/", NULL));
    assert_int_not_equal(hash_of("http://a.org/d", NULL),
                         hash_of("http://a.org/d/", NULL));

    /* index file, then trailing slash */
    memset(&rw, 0, sizeof(rw));
    rw.index_file = 1;
    assert_int_equal(hash_of("http://a.org/d/index.html", &rw),
                     hash_of("http://a.org/d/", NULL));
    assert_int_equal(hash_of("http://a.org/index.html", &rw),
                     hash_of("http://a.org/", NULL));
    rw.trailing_slash = 1;
    assert_int_equal(hash_of("http://a.org/d/index.html", &rw),
                     hash_of("http://a.org/d", NULL));

    /* lowercase path and parameter names, never a value (IIS and
     * ASP.NET ignore the case of both) */
    memset(&rw, 0, sizeof(rw));
    rw.lower = 1;
    assert_int_equal(hash_of("http://a.org/Doc/ABC", &rw),
                     hash_of("http://a.org/doc/abc", NULL));
    assert_int_equal(parse(&u, "http://a.org/Doc/ABC?Q=X"), 0);
    sh_url_write(&u, &rw, NULL, 0, buf, sizeof(buf));
    assert_string_equal(buf, "http://a.org/doc/abc?q=X");
    assert_int_equal(sh_url_hash(&u, &rw),
                     hash_of("http://a.org/doc/abc?q=X", NULL));
    assert_int_not_equal(sh_url_hash(&u, &rw),
                         hash_of("http://a.org/doc/abc?q=x", NULL));
    /* a capital in a name alone is a case form too */
    assert_int_equal(parse(&u, "http://a.org/p.aspx?ProductID=7"), 0);
    assert_false(u.upper);
    assert_true(u.upper_names);
    assert_int_equal(sh_url_hash(&u, &rw),
                     hash_of("http://a.org/p.aspx?productid=7", NULL));
    assert_int_not_equal(sh_url_hash(&u, NULL),
                         hash_of("http://a.org/p.aspx?productid=7", NULL));
    assert_int_equal(parse(&u, "http://a.org/p.aspx?productid=7"), 0);
    assert_false(u.upper_names);
    /* one sorted order for every case form of the names: "B" sorts
     * after "a" as "b" does */
    rw.sort = 1;
    assert_int_equal(hash_of("http://a.org/s?B=1&a=2", &rw),
                     hash_of("http://a.org/s?b=1&A=2", &rw));
    assert_int_equal(hash_of("http://a.org/s?B=1&a=2", &rw),
                     hash_of("http://a.org/s?a=2&b=1", NULL));

    /* a component dropped; the root left when nothing else is */
    memset(&rw, 0, sizeof(rw));
    rw.drop_segs = 1;
    assert_int_equal(hash_of("http://a.org/print/x/y", &rw),
                     hash_of("http://a.org/x/y", NULL));
    assert_int_equal(hash_of("http://a.org/print/", &rw),
                     hash_of("http://a.org/", NULL));

    /* another host */
    memset(&rw, 0, sizeof(rw));
    assert_int_equal(parse(&u, "http://b.org/x"), 0);
    rw.host = u.host_hash;
    assert_int_equal(hash_of("http://www.b.org/x", &rw),
                     hash_of("http://b.org/x", NULL));
    assert_int_equal(parse(&u, "http://www.b.org/x?a=1"), 0);
    sh_url_write(&u, &rw, "b.org", 5, buf, sizeof(buf));
    assert_string_equal(buf, "http://b.org/x?a=1");
    /* truncated writes stay terminated and say the full length */
    assert_int_equal(sh_url_write(&u, NULL, NULL, 0, buf, 8), 22);
    assert_string_equal(buf, "http://");

    /* without the host: the same path on two hosts */
    memset(&rw, 0, sizeof(rw));
    rw.no_host = 1;
    assert_int_equal(hash_of("http://a.org/p?x=1", &rw),
                     hash_of("http://b.org/p?x=1", &rw));
}

/* A value's shape: what looks generated (a build id, a token, a
 * timestamp) has one; a word, a short number, a version has none. */
static void
test_value_shapes(void **state)
{
    static const struct {
        const char *v;
        const char *shape;
    } cases[] = {
        { "e60acf4", "(hex)" }, { "5D5A645", "(hex)" },
        { "d41d8cd98f00b204e9800998ecf8427e", "(hex)" },
        { "a1b2c3d4e5f6g7h8i9", "(token)" }, { "1700000000123", "(number)" },
        { "6.1", NULL }, { "latest", NULL }, { "cafe", NULL },
        { "decade", NULL }, { "123456", NULL }, { "12345678", NULL },
        { "a1b2c", NULL }, { "abc-123-def", NULL }, { "", NULL },
        { "x9", NULL }, { "g7h8i9j0k1", NULL },
    };
    sh_url_t u, w;
    size_t   i;

    (void) state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = sh_url_value_shape(cases[i].v, strlen(cases[i].v));

        if (cases[i].shape == NULL) {
            assert_null(got);
        } else {
            assert_non_null(got);
            assert_string_equal(got, cases[i].shape);
        }
    }
    /* one hash for every value of a shape under one name, none across
     * names or shapes */
    assert_int_equal(parse(&u, "http://a.org/x?v=e60acf4&w=e60acf4"), 0);
    assert_int_equal(parse(&w, "http://a.org/y?v=5d5a645&v=6.1"), 0);
    assert_int_equal(u.params[0].vshape, w.params[0].vshape);
    assert_int_not_equal(u.params[0].vshape, u.params[1].vshape);
    assert_int_equal(w.params[1].vshape, 0);
    assert_int_not_equal(u.params[0].vshape, 0);
}

/* A segment's shape: tokens (16+ letters and digits, both) become '*';
 * words, numbers and slugs are no tokens. */
static void
test_shape(void **state)
{
    char   out[64];
    size_t n;

    (void) state;
    n = sh_url_shape("(S(kx1bq2mz3n4p5q6r7s8t9u))", 27, out, sizeof(out));
    assert_int_equal(n, 6);
    assert_memory_equal(out, "(S(*))", 6);
    n = sh_url_shape("a8f9e3b2c1d0e9f8a7b6.html", 25, out, sizeof(out));
    assert_int_equal(n, 6);
    assert_memory_equal(out, "*.html", 6);
    n = sh_url_shape("sid-0123456789ABCDEF-x", 22, out, sizeof(out));
    assert_int_equal(n, 7);
    assert_memory_equal(out, "sid-*-x", 7);
    assert_int_equal(sh_url_shape("internationalization", 20, out,
                                  sizeof(out)), 0);
    assert_int_equal(sh_url_shape("12345678901234567890", 20, out,
                                  sizeof(out)), 0);
    assert_int_equal(sh_url_shape("introduction-to-python-3", 24, out,
                                  sizeof(out)), 0);
    /* too long for out: no shape rather than half of one */
    assert_int_equal(sh_url_shape("(S(kx1bq2mz3n4p5q6r7s8t9u))", 27, out, 4),
                     0);
}

static void
test_keyed(void **state)
{
    unsigned char other[SH_URL_SECRET_LEN];
    sh_url_t      u;
    uint64_t      h1;

    (void) state;
    h1 = hash_of("http://a.org/x?y=1", NULL);
    sh_url_secret("another", 7, other);
    assert_int_equal(sh_url_parse(&u, "http://a.org/x?y=1", 18), 0);
    sh_url_hash_parts(&u, other);
    assert_int_not_equal(sh_url_hash(&u, NULL), h1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_rewrites),
        cmocka_unit_test(test_keyed),
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_value_shapes),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
