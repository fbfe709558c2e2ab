/*
 * test_site.c -- a host's site (sh_site.h): the registrable domain by the
 * Public Suffix List, the host alone for what the list cannot place, and
 * nothing at all without a list.
 */
#include "test_util.h"
#include "test_site_fixture.h"

#include "sh_site.h"

static const char *
site(const char *host)
{
    static char out[SH_SITE_MAX + 1];

    return sh_site_of(host, strlen(host), out, sizeof(out)) ? out : NULL;
}

static void
test_registrable(void **state)
{
    (void) state;
    assert_true(sh_site_loaded());
    assert_string_equal(site("www.example.com"), "example.com");
    assert_string_equal(site("m.example.com"), "example.com");
    assert_string_equal(site("example.com"), "example.com");
    assert_string_equal(site("a.b.example.com"), "example.com");
    /* a public suffix of two labels */
    assert_string_equal(site("www.foo.co.uk"), "foo.co.uk");
    assert_string_equal(site("bar.co.uk"), "bar.co.uk");
    /* the private section: each user's pages are a site */
    assert_string_equal(site("alice.github.io"), "alice.github.io");
    assert_string_equal(site("www.alice.github.io"), "alice.github.io");
    assert_string_equal(site("bob.github.io"), "bob.github.io");
}

/* A TLD the list does not know: its '*' rule, the last two labels (what
 * the tests' and make dust-eval's hosts rely on). */
static void
test_unknown_tld(void **state)
{
    (void) state;
    assert_string_equal(site("www.site.test"), "site.test");
    assert_string_equal(site("site.test"), "site.test");
    assert_string_equal(site("attacker.test"), "attacker.test");
    assert_string_equal(site("victim.test"), "victim.test");
    assert_string_equal(site("a.b.c.internal"), "c.internal");
}

/* Case, port, the root's dot and userinfo do not count. */
static void
test_spelling(void **state)
{
    (void) state;
    assert_string_equal(site("WWW.Example.COM"), "example.com");
    assert_string_equal(site("www.example.com:8080"), "example.com");
    assert_string_equal(site("www.example.com."), "example.com");
    assert_string_equal(site("www.example.com.:81"), "example.com");
    assert_string_equal(site("user:pw@www.example.com"), "example.com");
}

/* What the list cannot place is its own site. */
static void
test_own_site(void **state)
{
    (void) state;
    /* libpsl alone would make both "0.1" */
    assert_string_equal(site("127.0.0.1"), "127.0.0.1");
    assert_string_equal(site("10.0.0.1:8080"), "10.0.0.1");
    assert_string_equal(site("[::1]:8080"), "[::1]");
    assert_string_equal(site("[2001:DB8::1]"), "[2001:db8::1]");
    assert_string_equal(site("localhost"), "localhost");
    assert_string_equal(site("localhost:8080"), "localhost");
    assert_string_equal(site("co.uk"), "co.uk");
    assert_string_equal(site("github.io"), "github.io");
}

static void
test_malformed(void **state)
{
    char out[8];

    (void) state;
    assert_null(site(""));
    assert_null(site(":80"));
    assert_null(site("[::1"));
    assert_null(site("."));
    /* too long for the caller's buffer: unknown, not cut */
    assert_int_equal(sh_site_of("www.example.com", 15, out, sizeof(out)), 0);
    assert_string_equal(out, "");
}

/* No list: every site unknown (then no host alias is learned). */
static void
test_no_list(void **state)
{
    char err[256];

    (void) state;
    sh_site_unload();
    assert_false(sh_site_loaded());
    assert_string_equal(sh_site_source(), "");
    assert_null(site("www.example.com"));
    assert_null(site("127.0.0.1"));
    assert_int_equal(sh_site_load(NULL, err, sizeof(err)), 0);
    assert_string_equal(site("www.example.com"), "example.com");
    assert_string_not_equal(sh_site_source(), "");
}

/* A name longer than its slot: cut in the middle, its site kept whole at
 * the end, the mark where bytes went. */
static void
test_display(void **state)
{
    char        out[64];
    const char *h = "www.bigbank.example.com.cdn-edge-cache-global-prod-"
                    "region-1.node-7.evil.test";
    size_t      n;

    (void) state;
    /* fits: as it is */
    assert_int_equal(sh_site_display("www.a.test", 10, out, sizeof(out)), 10);
    assert_string_equal(out, "www.a.test");

    n = sh_site_display(h, strlen(h), out, sizeof(out));
    assert_int_equal(n, strlen(out));
    assert_true(n <= sizeof(out) - 1);
    assert_string_equal(out, "www.bigbank.example.com.cdn-edge-cache-globa"
                             SH_SITE_CUT_MARK "node-7.evil.test");

    /* the site alone longer than the room: its end, marked */
    {
        char site[200];

        memset(site, 'x', 150);
        memcpy(site + 150, ".com", 5);
        n = sh_site_display(site, 154, out, sizeof(out));
        assert_int_equal(n, 63);
        assert_memory_equal(out, SH_SITE_CUT_MARK, SH_SITE_CUT_MARK_LEN);
        assert_string_equal(out + n - 4, ".com");
    }

    /* an address, its own site: its end kept */
    {
        char v6[100];

        snprintf(v6, sizeof(v6), "[%s]",
                 "2001:0db8:0000:0000:0000:ff00:0042:8329:"
                 "2001:0db8:0000:0000:0000:ff00");
        n = sh_site_display(v6, strlen(v6), out, 32);
        assert_int_equal(n, 31);
        assert_memory_equal(out, SH_SITE_CUT_MARK, SH_SITE_CUT_MARK_LEN);
        assert_int_equal(out[n - 1], ']');
    }

    /* no site known (a space in it): the middle goes */
    {
        n = sh_site_display("aaaaaaaaaaaaaaaaaaaa  bbbbbbbbbbbbbbbbbbbb", 42,
                            out, 16);
        assert_int_equal(n, 15);
        assert_string_equal(out, "aaaaaa" SH_SITE_CUT_MARK "bbbbbb");
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registrable),
        cmocka_unit_test(test_unknown_tld),
        cmocka_unit_test(test_spelling),
        cmocka_unit_test(test_own_site),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_display),
        cmocka_unit_test(test_no_list),
    };

    return cmocka_run_group_tests(tests, test_site_load, test_site_unload);
}
