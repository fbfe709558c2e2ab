/*
 * test_html.c -- the visible text of a page through libxml2's push parser
 * (sh_html.h): script, style, noscript, template, svg and comments skipped,
 * title kept, entities decoded, inline elements joining words, block ends
 * at block elements; the same text and blocks at every split of the input;
 * content tracking's zones and link text; start tags by name; a construct
 * that never ends stops the page with its verdict; the libxml2 classes.
 */
#include "test_util.h"

#include "sh_block.h"
#include "sh_config.h"
#include "sh_html.h"
#include "sh_library.h"

typedef struct {
    sh_html_t *h;
    char       text[16384];     /* text, '|' at each block end (runs of
                                   ends collapsed), zones as {z l} */
    size_t     len;
    int        zones;
    uint64_t   tags[64];
    size_t     ntags;
} page_t;

static void
put(page_t *p, const char *s, size_t n)
{
    assert_true(p->len + n + 1 < sizeof(p->text));
    memcpy(p->text + p->len, s, n);
    p->len += n;
    p->text[p->len] = '\0';
}

static int
on_text(void *arg, const char *text, size_t len)
{
    page_t *p = arg;
    char    z[16];

    put(p, text, len);
    if (p->zones) {
        snprintf(z, sizeof(z), "{%u%s}", sh_html_zone(p->h),
                 sh_html_in_link(p->h) ? "l" : "");
        put(p, z, strlen(z));
    }
    return 0;
}

static int
on_block(void *arg)
{
    page_t *p = arg;

    if (p->len > 0 && p->text[p->len - 1] != '|') {
        put(p, "|", 1);
    }
    return 0;
}

static void
on_tag(void *arg, uint64_t name_hash)
{
    page_t *p = arg;

    if (p->ntags < 64) {
        p->tags[p->ntags] = name_hash;
    }
    p->ntags++;
}

/* Parse `html` in pieces of `piece` bytes (0: whole); the feed's first
 * non-zero answer, or the finish's. */
static int
parse(page_t *p, const char *html, size_t n, size_t piece, int zones)
{
    size_t i, k;
    int    rc = 0;

    memset(p, 0, sizeof(*p));
    p->zones = zones;
    p->h = sh_html_new(on_text, on_block, p);
    assert_non_null(p->h);
    if (zones) {
        sh_html_track_content(p->h);
    }
    sh_html_set_tag_hook(p->h, on_tag, p);
    for (i = 0; i < n && rc == 0; i += k) {
        k = piece && piece < n - i ? piece : n - i;
        rc = sh_html_feed(p->h, html + i, k);
    }
    if (rc == 0) {
        rc = sh_html_finish(p->h);
    }
    return rc;
}

static const char page[] =
    "<html><head><title>T</title><script>var x = '<p>no</p>';</script>"
    "<style>s{}</style></head><body><p>foo<b>bar</b></p><!-- c -->"
    "<div>baz &amp; qux&#233;</div><noscript>n</noscript>"
    "<svg><text>s</text></svg><template>t</template>end<br>line"
    "<ul><li>one<li>two</ul></body></html>";

static void
test_visible_text(void **state)
{
    page_t p;

    (void) state;
    assert_int_equal(parse(&p, page, strlen(page), 0, 0), 0);
    assert_string_equal(p.text,
        "T|foobar|baz & qux\xc3\xa9|end|line|one|two|");
    sh_html_free(p.h);
}

static void
test_every_split(void **state)
{
    page_t whole, cut;
    size_t piece;

    (void) state;
    assert_int_equal(parse(&whole, page, strlen(page), 0, 0), 0);
    sh_html_free(whole.h);
    for (piece = 1; piece <= strlen(page); piece++) {
        assert_int_equal(parse(&cut, page, strlen(page), piece, 0), 0);
        assert_string_equal(cut.text, whole.text);
        assert_int_equal(cut.ntags, whole.ntags);
        sh_html_free(cut.h);
    }
}

static void
test_content_tracking(void **state)
{
    const char *html = "<body><nav>menu <a href=\"/x\">home</a></nav>"
                       "<main><p>article <a href=\"/y\">link</a> more</p>"
                       "</main><footer>foot</footer></body>";
    char        want[256];
    page_t      p;

    (void) state;
    assert_int_equal(parse(&p, html, strlen(html), 0, 1), 0);
    snprintf(want, sizeof(want),
             "menu {%u}home{%ul}|article {%u}link{%ul} more{%u}|foot{%u}|",
             SH_ZONE_CHROME, SH_ZONE_CHROME, SH_ZONE_MAIN, SH_ZONE_MAIN,
             SH_ZONE_MAIN, SH_ZONE_CHROME);
    assert_string_equal(p.text, want);
    assert_true(sh_html_has_main(p.h));
    sh_html_free(p.h);

    /* off: no zones asked, none followed */
    assert_int_equal(parse(&p, html, strlen(html), 0, 0), 0);
    assert_false(sh_html_has_main(p.h));
    sh_html_free(p.h);
}

/* Start tags by name: the same name, the same hash. */
static void
test_tag_hook(void **state)
{
    const char *html = "<div><p>a</p><p>b</p><span>c</span></div>";
    page_t      p;
    size_t      n;

    (void) state;
    assert_int_equal(parse(&p, html, strlen(html), 0, 0), 0);
    n = p.ntags;
    assert_true(n >= 4 && n <= 64);     /* html, body may be implied */
    assert_true(p.tags[n - 3] == p.tags[n - 2]);    /* p, p */
    assert_true(p.tags[n - 4] != p.tags[n - 3]);    /* div, p */
    assert_true(p.tags[n - 1] != p.tags[n - 2]);    /* span, p */
    sh_html_free(p.h);
}

/* A comment that never closes, longer than SH_PENDING_MAX: the page stops
 * there, with the verdict that says so. */
static void
test_endless_comment(void **state)
{
    size_t              n = SH_PENDING_MAX + 4096;
    char               *html = malloc(n);
    page_t             *p = malloc(sizeof(*p));
    const char         *why = NULL;
    int                 rc;

    (void) state;
    memcpy(html, "<p>before</p><!--", 17);
    memset(html + 17, 'x', n - 17);
    rc = parse(p, html, n, 65536, 0);
    assert_int_equal(rc, 1);
    assert_int_equal(sh_html_verdict(p->h, &why), SH_BUDGET_TOO_LARGE);
    assert_non_null(why);
    sh_html_free(p->h);

    assert_int_equal(parse(p, page, strlen(page), 0, 0), 0);
    assert_int_equal(sh_html_verdict(p->h, &why), SH_BUDGET_OK);
    sh_html_free(p->h);
    free(p);
    free(html);
}

static void
test_libxml_classes(void **state)
{
    const char *why = NULL;
    int         modelled;

    (void) state;
    assert_int_equal(sh_libxml_class_of(20814), SH_LIBXML_UNKNOWN);
    assert_int_equal(sh_libxml_class_of(20900), SH_LIBXML_29);
    assert_int_equal(sh_libxml_class_of(20914), SH_LIBXML_29);
    assert_int_equal(sh_libxml_class_of(21000), SH_LIBXML_210);
    assert_int_equal(sh_libxml_class_of(21399), SH_LIBXML_210);
    assert_int_equal(sh_libxml_class_of(21400), SH_LIBXML_HTML5);
    assert_string_equal(sh_libxml_class_name(SH_LIBXML_29), "2.9");
    assert_string_equal(sh_libxml_class_name(SH_LIBXML_210), "2.10-2.13");
    assert_string_equal(sh_libxml_class_name(SH_LIBXML_HTML5), "2.14+");
    assert_string_equal(sh_libxml_class_name(SH_LIBXML_UNKNOWN),
                        "unknown");

    /* the model drives the parser only when built and running are both
     * the modelled class; otherwise it says why */
    modelled = sh_libxml_modelled(&why);
    assert_int_equal(modelled,
                     sh_libxml_class_built() == SH_LIBXML_MODELLED
                     && sh_libxml_class_running() == SH_LIBXML_MODELLED);
    assert_true(modelled ? why == NULL : why != NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_visible_text),
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_content_tracking),
        cmocka_unit_test(test_tag_hook),
        cmocka_unit_test(test_endless_comment),
        cmocka_unit_test(test_libxml_classes),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
