/*
 * test_sketch.c -- the structure and link sketches and the listing veto
 * (sh_sketch.h): sets, bounds, the rule, and on pages: two listings of one
 * template are vetoed, one listing under two templates and a near-duplicate
 * article are not.
 */
#define TEST_RNG_SEED 0x5ce7c4e5a1b2c3d4ull
#include "test_util.h"

#include "sh_doc.h"
#include "sh_match.h"
#include "sh_sketch.h"

static uint64_t slots[SH_SKETCH_SET];

static void
fresh(sh_sketch_t *s)
{
    memset(slots, 0, sizeof(slots));
    sh_sketch_init(s, slots);
}

/* A feature counts once, however often it is added. */
static void
test_set_semantics(void **state)
{
    sh_sketch_t once, many;
    uint64_t    f[50], v;
    unsigned    i, k;

    for (i = 0; i < 50; i++) {
        f[i] = rnd();
    }
    fresh(&once);
    for (i = 0; i < 50; i++) {
        sh_sketch_add(&once, f[i]);
    }
    v = sh_sketch_value(&once);
    assert_int_equal(once.n, 50);

    fresh(&many);
    for (k = 0; k < 7; k++) {
        for (i = 0; i < 50; i++) {
            sh_sketch_add(&many, f[(i * 7 + k) % 50]);
        }
    }
    assert_int_equal(many.n, 50);
    assert_true(sh_sketch_value(&many) == v);
}

/* Clearing zeroes exactly the slots taken: the set serves the next page. */
static void
test_clear(void **state)
{
    sh_sketch_t s;
    unsigned    i;

    fresh(&s);
    for (i = 0; i < 300; i++) {
        sh_sketch_add(&s, rnd());
    }
    assert_int_equal(s.n, 300);
    sh_sketch_clear(&s);
    assert_int_equal(s.n, 0);
    assert_true(sh_sketch_value(&s) == 0);
    for (i = 0; i < SH_SKETCH_SET; i++) {
        assert_true(slots[i] == 0);
    }
}

/* The set stops at half its slots; what was kept is kept. */
static void
test_bounded(void **state)
{
    sh_sketch_t s;
    unsigned    i;

    fresh(&s);
    for (i = 0; i < 4 * SH_SKETCH_SET; i++) {
        sh_sketch_add(&s, rnd());
    }
    assert_int_equal(s.n, SH_SKETCH_SET / 2);
}

/* Similar sets give close sketches, disjoint sets far ones. */
static void
test_distance_follows_the_sets(void **state)
{
    sh_sketch_t a, b;
    uint64_t    f[400], va;
    unsigned    i;

    for (i = 0; i < 400; i++) {
        f[i] = rnd();
    }
    fresh(&a);
    for (i = 0; i < 200; i++) {
        sh_sketch_add(&a, f[i]);
    }
    va = sh_sketch_value(&a);

    fresh(&b);          /* 190 of 200 shared: J = 0.90 */
    for (i = 10; i < 210; i++) {
        sh_sketch_add(&b, f[i]);
    }
    assert_true(sh_distance(va, sh_sketch_value(&b)) <= 10);

    fresh(&b);          /* none shared */
    for (i = 200; i < 400; i++) {
        sh_sketch_add(&b, f[i]);
    }
    assert_true(sh_distance(va, sh_sketch_value(&b)) >= 20);
}

static void
test_veto_rule(void **state)
{
    sh_sketches_t a = { 0x0123456789abcdefull, 0xfedcba9876543210ull };
    sh_sketches_t none = { 0, 0 };
    sh_sketches_t b = a;

    assert_false(sh_sketch_veto(&a, &b));           /* the same page */

    b.links = a.links ^ 0xffffffull;                /* links: H = 24 */
    assert_true(sh_sketch_veto(&a, &b));
    assert_true(sh_sketch_veto(&b, &a));

    b.structure = a.structure ^ 0x1full;            /* H = 5: templates */
    assert_false(sh_sketch_veto(&a, &b));
    b.structure = a.structure ^ 0xfull;             /* H = 4 */
    assert_true(sh_sketch_veto(&a, &b));

    b.links = a.links ^ 0xffffull;                  /* H = 16: links alike */
    assert_false(sh_sketch_veto(&a, &b));

    b.links = a.links ^ 0xffffffull;
    assert_true(sh_sketch_veto(&a, &b));
    assert_false(sh_sketch_veto(&a, &none));        /* no sketches */
    assert_false(sh_sketch_veto(&none, &a));
}

/* Fewer than SH_SKETCH_MIN_LINKS distinct link words: no sketches. */
static void
test_too_few_links_no_sketches(void **state)
{
    static uint64_t more[SH_SKETCH_SET];
    sh_sketch_t     st, ln;
    sh_sketches_t   sk;
    unsigned        i;

    memset(slots, 0, sizeof(slots));
    memset(more, 0, sizeof(more));
    sh_sketch_init(&st, slots);
    sh_sketch_init(&ln, more);
    for (i = 0; i < 20; i++) {
        sh_sketch_add(&st, rnd());
    }
    for (i = 0; i < SH_SKETCH_MIN_LINKS - 1; i++) {
        sh_sketch_add(&ln, rnd());
    }
    sh_sketches_set(&sk, &st, &ln);
    assert_true(sk.structure == 0 && sk.links == 0);
    sh_sketch_add(&ln, rnd());
    sh_sketches_set(&sk, &st, &ln);
    assert_true(sk.structure != 0 || sk.links != 0);
}

static sh_result_t
page(sh_config_t *c, const char *name)
{
    size_t      len;
    char       *buf = test_read_fixture(name, &len);
    sh_doc_t   *d = sh_doc_new(c, NULL);
    sh_result_t r;

    assert_non_null(d);
    assert_int_equal(sh_doc_feed(d, buf, len), 0);
    assert_int_equal(sh_doc_finish(d, &r), 0);
    assert_int_equal(r.status, SH_STATUS_OK);
    sh_doc_free(d);
    free(buf);
    return r;
}

static int
rule_matches(const sh_result_t *stored, const sh_result_t *query)
{
    sh_match_opts_t o;
    unsigned        h;
    uint32_t        score;

    sh_match_opts_init(&o);             /* the module's default rule */
    sh_match_opts_weighted(&o, SH_WEIGHTED_T_DEFAULT, SH_WEIGHTED_H_DEFAULT);
    return sh_match_pair(&o, query->hash, query->weights, stored->hash, &h,
                         &score);
}

/*
 * listing.html and listing-other.html: one template, a short intro and a
 * sidebar of 40 links with other words.  Content weighting sets the
 * sidebar aside, so the fingerprints agree; the veto tells them apart.
 * listing-retemplated.html has listing.html's links under another
 * template: a duplicate, not vetoed.
 */
static void
test_listings_of_one_template_are_vetoed(void **state)
{
    sh_options_t o;
    char         err[256];
    sh_config_t *c;
    sh_result_t  a, other, re, art, near;

    sh_options_init(&o);
    c = sh_config_new(&o, err, sizeof(err));
    assert_non_null(c);

    a = page(c, "listing.html");
    other = page(c, "listing-other.html");
    re = page(c, "listing-retemplated.html");
    art = page(c, "article.html");
    near = page(c, "article-neardup.html");

    assert_true(rule_matches(&a, &other));          /* what the veto fixes */
    assert_true(sh_sketch_veto(&a.sketches, &other.sketches));

    assert_true(rule_matches(&a, &re));
    assert_false(sh_sketch_veto(&a.sketches, &re.sketches));

    assert_true(rule_matches(&art, &near));
    assert_false(sh_sketch_veto(&art.sketches, &near.sketches));

    sh_config_free(c);
}

static sh_result_t
page_of(sh_config_t *c, const char *html)
{
    sh_doc_t   *d = sh_doc_new(c, NULL);
    sh_result_t r;

    assert_non_null(d);
    assert_int_equal(sh_doc_feed(d, html, strlen(html)), 0);
    assert_int_equal(sh_doc_finish(d, &r), 0);
    assert_int_equal(r.status, SH_STATUS_OK);
    sh_doc_free(d);
    return r;
}

/* A section index: four links of its own inside a <nav> that lists the
 * site's 60 pages, the same on every page. */
static char *
index_in_site(const char *const own[4])
{
    size_t n = 0, i;
    char  *p = malloc(16384);

    n += (size_t) snprintf(p + n, 16384 - n, "<html><head><title>Manual"
                           "</title></head><body><nav><ul>");
    for (i = 0; i < 60; i++) {
        n += (size_t) snprintf(p + n, 16384 - n, "<li><a href=\"/p%zu\">"
                               "chapter %zu topic%zu</a></li>", i, i, i * 7);
    }
    n += (size_t) snprintf(p + n, 16384 - n, "</ul></nav><main><h1>Section"
                           "</h1><p>The pages of this section.</p><ul>");
    for (i = 0; i < 4; i++) {
        n += (size_t) snprintf(p + n, 16384 - n, "<li><a href=\"/s%zu\">"
                               "%s</a></li>", i, own[i]);
    }
    snprintf(p + n, 16384 - n, "</ul></main><footer>Copyright the "
             "authors.</footer></body></html>");
    return p;
}

/*
 * Two such indexes are two listings: their own link words differ, though
 * nearly all their link words are the navigation's.  Compared on all of
 * them they were close, and not vetoed.
 */
static void
test_indexes_in_a_site_navigation_are_vetoed(void **state)
{
    static const char *const rivers[4] = {
        "amazon basin floods", "nile delta farming", "danube gorge locks",
        "mekong floodplain rice"
    };
    static const char *const birds[4] = {
        "herons of marshes", "owls in winter", "swifts and swallows",
        "kestrels hunting voles"
    };
    sh_options_t o;
    char         err[256];
    sh_config_t *c;
    char        *pa = index_in_site(rivers), *pb = index_in_site(birds);
    sh_result_t  a, b;

    sh_options_init(&o);
    c = sh_config_new(&o, err, sizeof(err));
    assert_non_null(c);
    a = page_of(c, pa);
    b = page_of(c, pb);
    assert_true(sh_sketch_veto(&a.sketches, &b.sketches));
    assert_false(sh_sketch_veto(&a.sketches, &a.sketches));
    free(pa);
    free(pb);
    sh_config_free(c);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_semantics),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_clear),
        cmocka_unit_test(test_distance_follows_the_sets),
        cmocka_unit_test(test_veto_rule),
        cmocka_unit_test(test_too_few_links_no_sketches),
        cmocka_unit_test(test_listings_of_one_template_are_vetoed),
        cmocka_unit_test(test_indexes_in_a_site_navigation_are_vetoed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
