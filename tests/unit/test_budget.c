/*
 * test_budget.c -- what a page may cost (sh_budget.h), and the model of
 * libxml2's tokenizer that decides it (sh_tokenizer_model.h): pages
 * crafted for libxml2 2.9's slow paths are stopped, and cost no more than
 * a real page of their size; the parser reads whole constructs whatever
 * the chunking; constructs over SH_PENDING_MAX make the page too large.
 *
 * CPU is compared, never timed against a constant: each hostile page
 * against the fixture article repeated to the same size, in the same run,
 * the best of three of each, with a margin of 20 (the target is 20 times
 * a real page's cost per byte; unstopped, these pages cost thousands).
 */
#include "test_util.h"

#include <time.h>

#include "sh_budget.h"
#include "sh_library.h"
#include "sh_tokenizer_model.h"
#include "sh_doc.h"
#include "sh_html.h"

#define MARGIN  20.0

/* ---- pages ------------------------------------------------------------ */

typedef struct {
    char   *p;
    size_t  len, cap;
} page_t;

static void
put(page_t *pg, const char *s, size_t n)
{
    if (pg->len + n + 1 > pg->cap) {
        pg->cap = (pg->len + n + 1) * 2;
        pg->p = realloc(pg->p, pg->cap);
        assert_non_null(pg->p);
    }
    memcpy(pg->p + pg->len, s, n);
    pg->len += n;
    pg->p[pg->len] = '\0';
}

static void
puts_(page_t *pg, const char *s)
{
    put(pg, s, strlen(s));
}

/* Three pages crafted for libxml2's slow paths, as the hostile-origin probe sent them. */
static page_t
page_attributes(unsigned n, int values)
{
    page_t   pg = { 0 };
    char     a[32];
    unsigned i, k, j;

    puts_(&pg, "<html><body><div");
    for (i = 0; i < n; i++) {
        /* Distinct names of four characters: a letter, three digits in
         * base 36. */
        a[0] = ' ';
        a[1] = (char) ('a' + i % 26);
        for (k = i / 26, j = 2; j < 5; j++, k /= 36) {
            a[j] = "0123456789abcdefghijklmnopqrstuvwxyz"[k % 36];
        }
        a[5] = '\0';
        puts_(&pg, a);
        if (values) {
            puts_(&pg, "=1");
        }
    }
    puts_(&pg, ">x</div></body></html>");
    return pg;
}

static page_t
page_unmatched(unsigned divs, unsigned spans)
{
    page_t   pg = { 0 };
    unsigned i;

    puts_(&pg, "<html><body>");
    for (i = 0; i < divs; i++) {
        puts_(&pg, "<div>");
    }
    for (i = 0; i < spans; i++) {
        puts_(&pg, "</span>");
    }
    return pg;
}

/* A real page's worth of work per byte: the fixture article's body,
 * repeated (the page would end at its first </html>). */
static page_t
page_reference(size_t len)
{
    page_t pg = { 0 };
    size_t n;
    char  *a = test_read_fixture("article.html", &n);
    char  *body = strstr(a, "<body"), *end = strstr(a, "</body>");

    assert_true(body != NULL && end != NULL && end > body);
    put(&pg, a, (size_t) (body - a));
    n = (size_t) (end - body);
    while (pg.len < len) {
        put(&pg, body, n < len - pg.len ? n : len - pg.len);
    }
    free(a);
    return pg;
}

/* ---- running them ----------------------------------------------------- */

static double
cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Fingerprint in pieces of `chunk` bytes (the whole page if 0); returns
 * the CPU seconds, best of `runs`. */
static double
run(sh_config_t *c, const page_t *pg, size_t chunk, int runs,
    sh_result_t *r)
{
    double   best = 1e9, t;
    size_t   off, n;
    sh_doc_t *d;

    while (runs-- > 0) {
        t = cpu_now();
        d = sh_doc_new(c, NULL);
        assert_non_null(d);
        for (off = 0; off < pg->len; off += n) {
            n = chunk == 0 ? pg->len : chunk;
            n = n < pg->len - off ? n : pg->len - off;
            assert_int_equal(sh_doc_feed(d, pg->p + off, n), 0);
        }
        assert_int_equal(sh_doc_finish(d, r), 0);
        sh_doc_free(d);
        t = cpu_now() - t;
        best = t < best ? t : best;
    }
    return best;
}

static sh_config_t *
config(void)
{
    sh_options_t o;
    char         err[256];
    sh_config_t *c;

    sh_options_init(&o);
    o.min_features = 1;
    c = sh_config_new(&o, err, sizeof(err));
    assert_non_null(c);
    return c;
}

/* The page is skipped for its budget, and cost at most MARGIN times a
 * real page of its size. */
static void
assert_stopped_cheaply(const char *what, page_t *pg)
{
    sh_config_t *c = config();
    page_t       ref = page_reference(pg->len);
    sh_result_t  r;
    double       t, t_ref;

    t_ref = run(c, &ref, 16384, 3, &r);
    assert_int_equal(r.status, SH_STATUS_OK);
    t = run(c, pg, 16384, 3, &r);
    print_message("%s: %zu bytes, %.1f ms, a real page %.1f ms (%.1fx): "
                  "%s (%s)\n", what, pg->len, t * 1e3, t_ref * 1e3,
                  t / t_ref, sh_status_name(r.status), r.why ? r.why : "");
    assert_int_equal(r.status, SH_STATUS_TOO_COMPLEX);
    assert_true(t <= MARGIN * t_ref);
    free(ref.p);
    free(pg->p);
    sh_config_free(c);
}

/* One tag with 209,000 distinct attributes, 1 MB: was 40 s. */
static void
test_one_tag_many_attributes(void **state)
{
    page_t pg = page_attributes(209000, 0);

    assert_true(pg.len > 1000000 && pg.len < 1048576);
    assert_stopped_cheaply("209k attributes", &pg);
}

/* 100,000 attributes with values, 892 KB: was 9.3 s. */
static void
test_attributes_with_values(void **state)
{
    page_t pg = page_attributes(100000, 1);

    assert_stopped_cheaply("100k attributes=1", &pg);
}

/* 100,000 <div> then 70,000 unmatched </span>, 993 KB: was 10.1 s. */
static void
test_unmatched_end_tags_deep(void **state)
{
    page_t pg = page_unmatched(100000, 70000);

    assert_true(pg.len > 900000 && pg.len < 1048576);
    assert_stopped_cheaply("100k <div>, 70k </span>", &pg);
}

/*
 * The scanner stops the attribute page before the tag reaches the parser:
 * of the page, it takes only what precedes the "<div".
 */
static void
test_scanner_stops_before_the_tag(void **state)
{
    page_t               pg = page_attributes(209000, 0);
    sh_tokenizer_model_t b;
    size_t               n;

    sh_tokenizer_model_init(&b);
    n = sh_tokenizer_model_scan(&b, pg.p, pg.len);
    assert_int_equal(b.budget.verdict, SH_BUDGET_EXCEEDED);
    assert_int_equal(b.budget.why, SH_BUDGET_WHY_MARKUP);
    assert_int_equal(n, strlen("<html><body>"));
    assert_true(b.safe_last <= n);
    free(pg.p);
}

/* ---- whole constructs, whatever the chunking ---------------------------- */

typedef struct {
    char   buf[4096];
    size_t len;
} toks_t;

static void
tok(void *arg, const char *s, size_t n)
{
    toks_t *t = arg;

    if (t->len + n + 2 < sizeof(t->buf)) {
        if (t->len > 0) {
            t->buf[t->len++] = ' ';
        }
        memcpy(t->buf + t->len, s, n);
        t->len += n;
        t->buf[t->len] = '\0';
    }
}

/* The tokens of `html` after 1100 newlines (the decoder decodes its first
 * kilobyte as one piece: the cuts must reach the parser), cut at `at`
 * (or whole), then at every byte from there when `bytes`. */
static void
tokens_cut(sh_config_t *c, const char *html, size_t at, int bytes,
           toks_t *t)
{
    sh_doc_t   *d = sh_doc_new(c, NULL);
    sh_result_t r;
    char        pad[1100];
    size_t      len = strlen(html), i;

    memset(pad, '\n', sizeof(pad));
    memset(t, 0, sizeof(*t));
    sh_doc_set_token_hook(d, tok, t);
    assert_int_equal(sh_doc_feed(d, pad, sizeof(pad)), 0);
    at = at < len ? at : len;
    assert_int_equal(sh_doc_feed(d, html, at), 0);
    if (bytes) {
        for (i = at; i < len; i++) {
            assert_int_equal(sh_doc_feed(d, html + i, 1), 0);
        }
    } else {
        assert_int_equal(sh_doc_feed(d, html + at, len - at), 0);
    }
    assert_int_equal(sh_doc_finish(d, &r), 0);
    sh_doc_free(d);
}

/*
 * `html` gives `expect` cut anywhere, and byte by byte.  `expect` is what
 * libxml2 2.9.14 reads; another libxml2 class (sh_html.h) may read other
 * text, and then the page must give its whole reading at every cut.
 */
static void
assert_tokens_any_cut(sh_config_t *c, const char *html, const char *expect)
{
    toks_t whole, cut;
    size_t at;

    tokens_cut(c, html, strlen(html), 0, &whole);
    if (!sh_libxml_modelled(NULL)) {
        if (strcmp(whole.buf, expect) != 0) {
            print_message("libxml2 %s reads \"%s\" as \"%s\" (2.9.14: "
                          "\"%s\")\n",
                          sh_libxml_class_name(sh_libxml_class_running()),
                          html, whole.buf, expect);
        }
        expect = whole.buf;
    }
    assert_string_equal(whole.buf, expect);
    for (at = 0; at <= strlen(html); at++) {
        tokens_cut(c, html, at, 0, &cut);
        if (strcmp(cut.buf, expect) != 0) {
            fail_msg("\"%s\" cut at %zu: \"%s\", whole: \"%s\"", html, at,
                     cut.buf, expect);
        }
    }
    tokens_cut(c, html, 0, 1, &cut);
    assert_string_equal(cut.buf, expect);
}

/*
 * Markup where libxml2 2.9.14's push look-ahead and its parser disagree:
 * cut in the wrong place, the parser used to read on to the end of its
 * bytes, and the text depended on the cut (docs/FUZZING.md).
 */
static void
test_look_ahead_disagreements_are_steady(void **state)
{
    sh_config_t *c = config();

    /* a quote that opens no value: the value of n runs on to "d" */
    assert_tokens_any_cut(c, "<p>one<m\" n=\">d two</p>three", "one");
    /* comments whose end overlaps their start, or ends in --!> (a
     * comment does not end a block: "one" and "four" make one word) */
    assert_tokens_any_cut(c, "<p>one<!-->two<p>three-->four", "onefour");
    assert_tokens_any_cut(c, "<p>one<!--->two-->three", "onethree");
    assert_tokens_any_cut(c, "<p>one<!-- two --!>three", "onethree");
    assert_tokens_any_cut(c, "<p>one<!-->-y->>two", "one");
    assert_tokens_any_cut(c, "<p>one<!-- a - b -- c ->-->two", "onetwo");
    /* a doctype literal holding '>' */
    assert_tokens_any_cut(c, "<!DOCTYPE html PUBLIC \"a>b\" 'c>d'>one",
                          "one");
    /* a value quoted with the other quote inside */
    assert_tokens_any_cut(c, "<p title='a\">b'>one</p>", "one");
    sh_config_free(c);
}

/*
 * An end tag inside script text ends it if the element it names is open
 * below the script; libxml2 knows, the scanner asks it
 * (sh_tokenizer_model_sync), whatever the chunking.
 */
static void
test_end_tags_in_script_text(void **state)
{
    sh_config_t *c = config();

    assert_tokens_any_cut(c, "<div><script>var a;</div>seen</script>",
                          "seen");
    assert_tokens_any_cut(c, "<p>one<script>x = \"</b>\"; hidden</script>"
                             "<p>two", "one two");
    assert_tokens_any_cut(c, "<style>a{}</p>hidden</style>one", "one");
    sh_config_free(c);
}

/* ---- script and style text, spared the parser ---------------------------- */

/*
 * Spared script text changes nothing the parser reports: the text around
 * scripts is the same whatever the cuts, and invalid characters in a
 * script still cost the page its budget (each costs libxml2 an error
 * message).
 */
static void
test_script_text_spared(void **state)
{
    sh_config_t *c = config();
    page_t       pg = { 0 };
    sh_result_t  r;
    size_t       i;

    assert_tokens_any_cut(c, "<p>one<script>if (a<b) s = \"\xc3\xa9</ \";"
                             "</script><p>two<style>p{}</style><p>three",
                          "one two three");
    /* </p> ends the script: a p is open below it */
    assert_tokens_any_cut(c, "<p>one<script>a</p>b</script><p>two",
                          "one b two");

    /* (past the first kilobyte, or the page would look binary) */
    puts_(&pg, "<html><body>");
    for (i = 0; i < 100; i++) {
        puts_(&pg, "<p>some words here</p>");
    }
    puts_(&pg, "<script>");
    for (i = 0; i < 20000; i++) {
        put(&pg, "\x01", 1);
    }
    puts_(&pg, "</script><p>more words</p>");
    run(c, &pg, 4096, 1, &r);
    if (sh_libxml_modelled(NULL)) {
        /* 2.9.14 formats an error message for each */
        assert_int_equal(r.status, SH_STATUS_TOO_COMPLEX);
        assert_string_equal(r.why, "parser");
    }
    free(pg.p);
    sh_config_free(c);
}

/* ---- too large ------------------------------------------------------- */

/* One construct, or one run of text, over SH_PENDING_MAX: too large, not
 * a fingerprint of what came before (docs/module.md). */
static void
test_too_large(void **state)
{
    static const char *const heads[] = {
        "<p>some words before</p><div title=\"",    /* a tag */
        "<p>some words before</p><!--",             /* a comment */
        "<p>some words before</p><p>",              /* a text node */
    };
    sh_config_t *c = config();
    page_t       pg;
    sh_result_t  r;
    size_t       i, n;

    for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        memset(&pg, 0, sizeof(pg));
        puts_(&pg, heads[i]);
        for (n = 0; n < SH_PENDING_MAX / 8 + 1024; n++) {
            puts_(&pg, "abcdefg ");
        }
        run(c, &pg, 65536, 1, &r);
        assert_int_equal(r.status, SH_STATUS_TOO_LARGE);
        assert_string_equal(r.why, "run");
        /* Just under the limit, the page is read to its end. */
        pg.len = SH_PENDING_MAX - 4096;
        put(&pg, "\">-->end", 8);
        run(c, &pg, 65536, 1, &r);
        assert_int_equal(r.status, SH_STATUS_OK);
        free(pg.p);
    }
    sh_config_free(c);
}

/* `depth` nested <div>s (inside html and body) around a few words. */
static page_t
page_nested(unsigned depth)
{
    page_t   pg = { 0 };
    unsigned i;

    puts_(&pg, "<html><body>");
    for (i = 0; i < depth; i++) {
        puts_(&pg, "<div>");
    }
    puts_(&pg, "deeply nested words of a page");
    return pg;
}

/*
 * The nesting cap, under every libxml2: a page nested SH_DEPTH_MAX deep
 * is read; one element deeper, it is over its budget (why: depth).
 */
static void
test_depth_cap(void **state)
{
    sh_config_t *c = config();
    page_t       ok = page_nested(SH_DEPTH_MAX - 2);
    page_t       deep = page_nested(SH_DEPTH_MAX - 1);
    sh_result_t  r;

    run(c, &ok, 4096, 1, &r);
    assert_int_equal(r.status, SH_STATUS_OK);
    run(c, &deep, 4096, 1, &r);
    assert_int_equal(r.status, SH_STATUS_TOO_COMPLEX);
    assert_string_equal(r.why, "depth");
    free(ok.p);
    free(deep.p);
    sh_config_free(c);
}

/*
 * The libxml2 behaviour classes, and the model: on only when the build's
 * and the loaded library's classes are both 2.9, with a sentence for the
 * log otherwise that names both versions.
 */
static void
test_libxml_class(void **state)
{
    const char *why = "unset";
    int         modelled;

    assert_int_equal(sh_libxml_class_of(20800), SH_LIBXML_UNKNOWN);
    assert_int_equal(sh_libxml_class_of(20914), SH_LIBXML_29);
    assert_int_equal(sh_libxml_class_of(21000), SH_LIBXML_210);
    assert_int_equal(sh_libxml_class_of(21309), SH_LIBXML_210);
    assert_int_equal(sh_libxml_class_of(21400), SH_LIBXML_HTML5);
    assert_int_equal(sh_libxml_class_of(21504), SH_LIBXML_HTML5);
    assert_string_equal(sh_libxml_class_name(SH_LIBXML_29), "2.9");
    assert_string_equal(sh_libxml_class_name(SH_LIBXML_HTML5), "2.14+");
    assert_int_equal(sh_libxml_class(), sh_libxml_class_running());

    modelled = sh_libxml_modelled(&why);
    assert_int_equal(modelled,
                     sh_libxml_class_built() == SH_LIBXML_29
                     && sh_libxml_class_running() == SH_LIBXML_29);
    if (modelled) {
        assert_null(why);
    } else {
        assert_non_null(why);
        assert_non_null(strstr(why, "running with"));
    }
    print_message("libxml2 class: built %s, running %s, model %s\n",
                  sh_libxml_class_name(sh_libxml_class_built()),
                  sh_libxml_class_name(sh_libxml_class_running()),
                  modelled ? "on" : "off");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_tag_many_attributes),
        cmocka_unit_test(test_attributes_with_values),
        cmocka_unit_test(test_unmatched_end_tags_deep),
        cmocka_unit_test(test_scanner_stops_before_the_tag),
        cmocka_unit_test(test_look_ahead_disagreements_are_steady),
        cmocka_unit_test(test_end_tags_in_script_text),
        cmocka_unit_test(test_script_text_spared),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_depth_cap),
        cmocka_unit_test(test_libxml_class),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
