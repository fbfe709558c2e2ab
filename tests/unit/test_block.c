/*
 * test_block.c -- content weighting (sh_block.h): which zone each block
 * lands in, what it weighs, that chrome does not move the fingerprint,
 * that pages without markup hints fingerprint as before, and that none of
 * it depends on how the body is cut.
 */
#include "test_util.h"

#include <math.h>

#include "sh_block.h"
#include "sh_doc.h"
#include "sh_library.h"
#include "sh_match.h"

static sh_config_t *
config_mode(unsigned mode)
{
    sh_options_t o;
    char         err[256];
    sh_config_t *c;

    sh_options_init(&o);
    o.content = mode;
    o.min_features = 1;
    c = sh_config_new(&o, err, sizeof(err));
    if (c == NULL) {
        fail_msg("config: %s", err);
    }
    return c;
}

static sh_result_t
fp_pieces(sh_config_t *c, const char *html, size_t piece)
{
    sh_doc_t   *d = sh_doc_new(c, NULL);
    sh_result_t r;
    size_t      len = strlen(html), off, n;

    assert_non_null(d);
    for (off = 0; off < len; off += n) {
        n = len - off < piece ? len - off : piece;
        assert_int_equal(sh_doc_feed(d, html + off, n), 0);
    }
    assert_int_equal(sh_doc_finish(d, &r), 0);
    sh_doc_free(d);
    return r;
}

static sh_result_t
fp(sh_config_t *c, const char *html)
{
    return fp_pieces(c, html, strlen(html) + 1);
}

static void
assert_identical(const sh_result_t *a, const sh_result_t *b)
{
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->nfeatures, b->nfeatures);
    if (a->hash != b->hash) {
        fail_msg("fingerprints differ: %016llx vs %016llx",
                 (unsigned long long) a->hash, (unsigned long long) b->hash);
    }
    assert_memory_equal(a->weights, b->weights, sizeof(a->weights));
}

/* ---- what the block hook reports -------------------------------------- */

typedef struct {
    char     text[64][128];
    unsigned zone[64];
    unsigned weight[64];
    unsigned n;
    char     cur[128];
    size_t   len;
} blocks_t;

static void
on_token(void *arg, const char *tok, size_t len)
{
    blocks_t *b = arg;

    if (b->len + len + 2 < sizeof(b->cur)) {
        if (b->len > 0) {
            b->cur[b->len++] = ' ';
        }
        memcpy(b->cur + b->len, tok, len);
        b->len += len;
        b->cur[b->len] = '\0';
    }
}

static void
on_block(void *arg, const sh_block_info_t *info)
{
    blocks_t *b = arg;

    if (b->n < 64) {
        snprintf(b->text[b->n], sizeof(b->text[0]), "%s", b->cur);
        b->zone[b->n] = info->zone;
        b->weight[b->n] = info->weight;
        b->n++;
    }
    b->len = 0;
    b->cur[0] = '\0';
}

static int
blocks_of(sh_config_t *c, const char *html, blocks_t *b)
{
    sh_doc_t   *d = sh_doc_new(c, NULL);
    sh_result_t r;
    int         has_main;

    memset(b, 0, sizeof(*b));
    sh_doc_set_token_hook(d, on_token, b);
    sh_doc_set_block_hook(d, on_block, b);
    assert_int_equal(sh_doc_feed(d, html, strlen(html)), 0);
    assert_int_equal(sh_doc_finish(d, &r), 0);
    has_main = sh_doc_has_main(d);
    sh_doc_free(d);
    return has_main;
}

/* The zone and weight of the block whose tokens are `text`. */
static void
assert_block(const blocks_t *b, const char *text, unsigned zone,
             unsigned weight)
{
    unsigned i;

    for (i = 0; i < b->n; i++) {
        if (strcmp(b->text[i], text) == 0) {
            if (b->zone[i] != zone || b->weight[i] != weight) {
                fail_msg("block \"%s\": zone %s weight %u/16, expected %s "
                         "%u/16", text, sh_block_zone_name(b->zone[i]),
                         b->weight[i], sh_block_zone_name(zone), weight);
            }
            return;
        }
    }
    fail_msg("no block \"%s\"", text);
}

static void
test_zones_from_structure(void **state)
{
    sh_config_t *c = config_mode(SH_CONTENT_STRUCTURE);
    blocks_t    *b = malloc(sizeof(*b));

    assert_true(blocks_of(c,
        "<html class=\"sidebar-visible\"><head><title>Page title - Site "
        "name</title></head><body class=\"has-sidebar\">"
        "<header>site banner words</header>"
        "<nav>menu words here</nav>"
        "<div role=\"search\">search box words</div>"
        "<p>loose paragraph words</p>"
        "<main><article><header>article title words</header>"
        "<p>body text words</p>"
        "<nav class=\"toc\">local contents words</nav>"
        "<p>more <span class=\"share-buttons\">share this words</span>"
        " after words</p></article></main>"
        "<aside><article>related story words</article></aside>"
        "<div class=\"site-footer\">footer div words</div>"
        "<div id=\"breadcrumbs\">crumb words</div>"
        "<div class=\"navigation2\">not a chrome word</div>"
        "<nav role=\"main\">role wins words</nav>"
        "<footer>page footer words</footer></body></html>", b));
    /* The title is a block of its own, in no zone. */
    assert_block(b, "page title site name", SH_ZONE_NONE, 16);
    assert_block(b, "site banner words", SH_ZONE_CHROME, 2);
    assert_block(b, "menu words here", SH_ZONE_CHROME, 2);
    assert_block(b, "search box words", SH_ZONE_CHROME, 2);
    assert_block(b, "loose paragraph words", SH_ZONE_NONE, 16);
    /* <header> inside <article> is the article's own. */
    assert_block(b, "article title words", SH_ZONE_MAIN, 16);
    assert_block(b, "body text words", SH_ZONE_MAIN, 16);
    /* Chrome inside the main content is chrome again. */
    assert_block(b, "local contents words", SH_ZONE_CHROME, 2);
    /* A marked inline element ends the block around it. */
    assert_block(b, "more", SH_ZONE_MAIN, 16);
    assert_block(b, "share this words", SH_ZONE_CHROME, 2);
    assert_block(b, "after words", SH_ZONE_MAIN, 16);
    /* An <article> inside chrome stays chrome. */
    assert_block(b, "related story words", SH_ZONE_CHROME, 2);
    assert_block(b, "footer div words", SH_ZONE_CHROME, 2);
    assert_block(b, "crumb words", SH_ZONE_CHROME, 2);
    assert_block(b, "not a chrome word", SH_ZONE_NONE, 16);
    assert_block(b, "role wins words", SH_ZONE_MAIN, 16);
    assert_block(b, "page footer words", SH_ZONE_CHROME, 2);
    free(b);
    sh_config_free(c);
}

static void
test_weights_from_text(void **state)
{
    sh_config_t *c = config_mode(SH_CONTENT_AUTO);
    blocks_t    *b = malloc(sizeof(*b));

    assert_false(blocks_of(c,
        "<p><a href=\"/a\">home</a> <a href=\"/b\">products</a> "
        "<a href=\"/c\">contact us</a></p>"
        "<p>a paragraph of plain prose with one <a href=\"/x\">link</a> "
        "in the middle of it</p>"
        "<p>half of this text <a href=\"/y\">is inside one link</a></p>"
        "<p>Share</p>"
        "<nav><p><a href=\"/n\">next page</a> <a href=\"/p\">previous "
        "page</a></p></nav>", b));
    /* All links outside chrome: a listing's, or a menu's; half is kept
     * (a list of links in the body may be the page's content). */
    assert_block(b, "home products contact us", SH_ZONE_NONE, 8);
    /* Under a quarter of link text costs nothing. */
    assert_block(b, "a paragraph of plain prose with one link in the "
                    "middle of it", SH_ZONE_NONE, 16);
    /* Half: 16 x (1 - 15/29) / (3/4) = 10.3. */
    assert_block(b, "half of this text is inside one link", SH_ZONE_NONE,
                 10);
    /* Under 16 bytes: half weight. */
    assert_block(b, "share", SH_ZONE_NONE, 8);
    /* All links in chrome: a menu, nothing left. */
    assert_block(b, "next page previous page", SH_ZONE_CHROME, 0);
    free(b);
    sh_config_free(c);
}

/* ---- what it does to fingerprints ------------------------------------- */

static const char article[] =
    "<p>Walk upstream along almost any mountain brook and you will notice "
    "that the valley around it is far wider than the water could possibly "
    "fill, and the stream that trickles between boulders seems too modest "
    "to have carved anything at all.</p>"
    "<p>Each spring the snowmelt swells the channel, and cobbles that "
    "rested through the winter begin to roll along the bed, grinding "
    "against the bedrock and against one another.</p>";

static char *
page(const char *before, const char *after)
{
    size_t n = strlen(before) + strlen(article) + strlen(after) + 1;
    char  *p = malloc(n);

    snprintf(p, n, "%s%s%s", before, article, after);
    return p;
}

/* The same fingerprint, and weights equal but for float rounding (a
 * feature's weight may be summed in another order). */
static void
assert_same_weights(const sh_result_t *a, const sh_result_t *b)
{
    unsigned j;

    assert_int_equal(a->hash, b->hash);
    for (j = 0; j < SH_BITS; j++) {
        if (fabsf(a->weights[j] - b->weights[j]) > 1e-5f) {
            fail_msg("W[%u]: %g vs %g", j, (double) a->weights[j],
                     (double) b->weights[j]);
        }
    }
}

/*
 * The same article under two menus made of links: with content weighting
 * the menus weigh nothing, and the fingerprints are those of the article
 * alone (words of the menu that are also in the article weigh what they
 * would without the menu); without it they differ.
 */
static void
test_link_menus_do_not_count(void **state)
{
    sh_config_t *auto_ = config_mode(SH_CONTENT_AUTO);
    sh_config_t *off = config_mode(SH_CONTENT_OFF);
    char        *a = page("<nav><a href=\"/\">home</a> <a href=\"/v\">"
                          "valley walks</a> <a href=\"/r\">rivers</a>"
                          "</nav><main>", "</main>");
    char        *b = page("<div class=\"menu\"><a href=\"/\">start</a> "
                          "<a href=\"/s\">the stream and the boulders</a>"
                          "</div><main>", "</main><footer><a href=\"/c\">"
                          "contact the winter team</a></footer>");
    char        *bare = page("<main>", "</main>");
    sh_result_t  ra = fp(auto_, a), rb = fp(auto_, b), rbare = fp(auto_, bare);

    assert_int_equal(ra.status, SH_STATUS_OK);
    assert_same_weights(&ra, &rbare);
    assert_same_weights(&rb, &rbare);
    assert_true(fp(off, a).hash != fp(off, b).hash);
    free(a);
    free(b);
    free(bare);
    sh_config_free(auto_);
    sh_config_free(off);
}

/*
 * Two section indexes of one site: the same template, title and footer,
 * and a main content of links to different pages.  Their links are their
 * content: far apart, as without content weighting (before, link text
 * weighed nothing and both came out at H = 0).  The article under two
 * menus stays unaffected (test_link_menus_do_not_count).
 */
static const char *const rivers[] = {
    "the amazon basin", "the nile delta", "the danube gorge",
    "the mekong floodplain", "the yukon headwaters", "the rhine valley",
    "the ganges plain", "the volga estuary", "the congo rapids",
    "the murray mouth", NULL
};
static const char *const birds[] = {
    "herons of the marsh", "owls in winter", "swifts and swallows",
    "the kestrel's hunt", "geese on the move", "woodpecker drumming",
    "puffin colonies", "the cuckoo's calendar", "ravens at the cliffs",
    "kingfisher habits", NULL
};

static char *
section_index_in(const char *const *items, size_t nitems,
                 const char *const *site)
{
    size_t n = 0;
    char  *p = malloc(8192);

    n += (size_t) snprintf(p + n, 8192 - n,
        "<html><head><title>Field notes: index</title></head><body>"
        "<nav><a href=\"/\">home</a> <a href=\"/about\">about</a>");
    for (; site != NULL && *site != NULL; site++) {
        n += (size_t) snprintf(p + n, 8192 - n,
                               "<li><a href=\"/s%zu\">%s</a></li>", n, *site);
    }
    n += (size_t) snprintf(p + n, 8192 - n,
        "</nav><main><h1>Section index</h1><ul>");
    for (; *items != NULL && nitems-- > 0; items++) {
        n += (size_t) snprintf(p + n, 8192 - n,
                               "<li><a href=\"/%zu\">%s</a></li>", n, *items);
    }
    snprintf(p + n, 8192 - n, "</ul></main><footer>Field notes is written "
             "by volunteers; copy freely with credit.</footer></body></html>");
    return p;
}

static char *
section_index(const char *const *items)
{
    return section_index_in(items, SIZE_MAX, NULL);
}

static void
test_hubs_are_told_apart(void **state)
{
    sh_config_t *c = config_mode(SH_CONTENT_AUTO);
    sh_config_t *off = config_mode(SH_CONTENT_OFF);
    char        *a = section_index(rivers), *b = section_index(birds);
    sh_result_t  ra = fp(c, a), rb = fp(c, b);
    sh_doc_t    *d;
    sh_result_t  r;

    assert_int_equal(ra.status, SH_STATUS_OK);
    assert_int_equal(rb.status, SH_STATUS_OK);
    assert_true(__builtin_popcountll(ra.hash ^ rb.hash) > 10);
    /* A hub: its own link text counted fully, not as without weighting
     * (the navigation around it still counts little). */
    r = fp(off, a);
    assert_true(__builtin_popcountll(ra.hash ^ r.hash) > 0);
    d = sh_doc_new(c, NULL);
    assert_int_equal(sh_doc_feed(d, a, strlen(a)), 0);
    assert_int_equal(sh_doc_finish(d, &r), 0);
    assert_true(sh_doc_whole(d));
    sh_doc_free(d);
    free(a);
    free(b);
    sh_config_free(c);
    sh_config_free(off);
}

/*
 * Two short section indexes (a heading and four links each) inside a
 * navigation that lists the whole site on every page: the navigation is
 * the site's, not theirs, and must not make them alike.  (Fingerprinted
 * on their whole text, as hubs once were, the navigation decided both.)
 */
static void
test_hubs_in_site_navigation(void **state)
{
    static const char *const site[] = {
        "getting started", "installing", "the tutorial", "first steps",
        "user guide", "configuration", "the command line", "deployment",
        "api reference", "modules", "classes", "functions", "constants",
        "release notes", "changes in this version", "deprecations",
        "contributing", "the code of conduct", "the test suite",
        "writing documentation", "glossary", "frequently asked questions",
        "clustering package", "vector quantization", "hierarchical trees",
        "physical constants", "fourier transforms", "legacy transforms",
        "integration and differential equations", "interpolation",
        "input and output", "linear algebra", "low level blas routines",
        "lapack routines for cython", "matrix decomposition",
        "miscellaneous routines", "multidimensional image processing",
        "orthogonal distance regression", "optimization and root finding",
        "signal processing", "sparse matrices", "sparse linear algebra",
        "compressed sparse graph routines", "spatial data structures",
        "distance computations", "special functions",
        "statistical functions", "contingency tables", "masked arrays",
        "quasi monte carlo", "random number generators",
        "low level callbacks", "benchmarks", "the roadmap",
        "search the documentation", "the general index", NULL
    };
    sh_config_t *c = config_mode(SH_CONTENT_AUTO);
    char        *a = section_index_in(rivers, 4, site);
    char        *b = section_index_in(birds + 4, 4, site);
    sh_result_t  ra = fp(c, a), rb = fp(c, b);

    assert_int_equal(ra.status, SH_STATUS_OK);
    assert_int_equal(rb.status, SH_STATUS_OK);
    assert_true(__builtin_popcountll(ra.hash ^ rb.hash) > 10);
    free(a);
    free(b);
    sh_config_free(c);
}

/*
 * A hub with prose enough of its own: a long article beside a longer
 * list of links (rustdoc's trait pages and their implementors).  Its
 * prose tells it from other pages; it keeps its ordinary weights, so two
 * copies whose lists differ (std's implementors and core's) stay close,
 * where counting the lists fully set them apart.  A short section index
 * still counts its links (test_hubs_are_told_apart).
 */
static char *
article_with_list(const char *const *extra)
{
    size_t n = 0, k;
    char  *p = malloc(16384);
    const char *const *it;

    n += (size_t) snprintf(p + n, 16384 - n,
        "<html><head><title>Field notes</title></head><body><main>"
        "<h1>Streams</h1>%s%s<ul>", article, article);
    for (k = 0; k < 8; k++) {
        for (it = rivers; *it != NULL; it++) {
            n += (size_t) snprintf(p + n, 16384 - n,
                                   "<li><a href=\"/%zu\">%s, part %zu</a>"
                                   "</li>", n, *it, k);
        }
    }
    for (it = extra; it != NULL && *it != NULL; it++) {
        n += (size_t) snprintf(p + n, 16384 - n,
                               "<li><a href=\"/%zu\">%s</a></li>", n, *it);
    }
    snprintf(p + n, 16384 - n, "</ul></main></body></html>");
    return p;
}

static void
test_hubs_with_prose_keep_their_weights(void **state)
{
    sh_config_t *c = config_mode(SH_CONTENT_AUTO);
    char        *a = article_with_list(NULL), *b = article_with_list(birds);
    sh_result_t  ra, rb;
    sh_doc_t    *d;

    d = sh_doc_new(c, NULL);
    assert_int_equal(sh_doc_feed(d, a, strlen(a)), 0);
    assert_int_equal(sh_doc_finish(d, &ra), 0);
    assert_int_equal(ra.status, SH_STATUS_OK);
    assert_true(ra.hub && !ra.short_content);
    assert_false(sh_doc_whole(d));      /* its links did not count fully */
    sh_doc_free(d);
    rb = fp(c, b);
    assert_true(rb.hub);
    assert_true(__builtin_popcountll(ra.hash ^ rb.hash) <= SH_SHORT_H);
    free(a);
    free(b);
    sh_config_free(c);
}

/*
 * Short content: a section index of a heading and four links is a short
 * hub, whatever the navigation around it; twenty links and a heading are
 * not short; and a short hub's pair stands only within SH_SHORT_H bits.
 */
static void
test_short_content_is_said(void **state)
{
    static const char *const both[] = {
        "the amazon basin", "the nile delta", "the danube gorge",
        "the mekong floodplain", "the yukon headwaters", "the rhine valley",
        "the ganges plain", "the volga estuary", "the congo rapids",
        "the murray mouth", "herons of the marsh", "owls in winter",
        "swifts and swallows", "the kestrel's hunt", "geese on the move",
        "woodpecker drumming", "puffin colonies", "the cuckoo's calendar",
        "ravens at the cliffs", "kingfisher habits", NULL
    };
    sh_config_t *c = config_mode(SH_CONTENT_AUTO);
    char        *a = section_index_in(rivers, 4, NULL);
    char        *b = section_index(both);
    sh_result_t  ra = fp(c, a), rb = fp(c, b);

    assert_int_equal(ra.status, SH_STATUS_OK);
    assert_true(ra.short_content && ra.hub && sh_result_short_hub(&ra));
    assert_true(ra.nown > 0 && ra.nown < SH_SHORT_TERMS);
    assert_true(rb.hub && !rb.short_content && !sh_result_short_hub(&rb));
    assert_true(sh_match_short(SH_SHORT_H, 1, 0));
    assert_false(sh_match_short(SH_SHORT_H + 1, 0, 1));
    assert_true(sh_match_short(SH_SHORT_H + 1, 0, 0));
    free(a);
    free(b);
    sh_config_free(c);
}

/*
 * A page that marks its main content: what lies outside it counts 1/8,
 * so a long unmarked sidebar moves the fingerprint little, and far less
 * than without content weighting.
 */
static void
test_outside_main_counts_little(void **state)
{
    sh_config_t *auto_ = config_mode(SH_CONTENT_AUTO);
    sh_config_t *off = config_mode(SH_CONTENT_OFF);
    char        *bare = page("<main>", "</main>");
    char        *side = page("<main>", "</main><div><p>Our company was "
                             "founded long ago in a small town by the sea "
                             "and has grown into a trusted name for "
                             "quality products sold in many countries "
                             "around the world today.</p></div>");
    unsigned     on = 0, without = 0, k;

    for (k = 0; k < 16; k++) {
        sh_options_t o;
        char         seed[16], err[256];
        sh_config_t *c[2];
        unsigned     m;

        for (m = 0; m < 2; m++) {
            sh_options_init(&o);
            o.min_features = 1;
            o.content = m ? SH_CONTENT_OFF : SH_CONTENT_AUTO;
            snprintf(seed, sizeof(seed), "key%u", k);
            o.seed = seed;
            o.seed_len = strlen(seed);
            c[m] = sh_config_new(&o, err, sizeof(err));
            assert_non_null(c[m]);
        }
        on += sh_distance(fp(c[0], bare).hash, fp(c[0], side).hash);
        without += sh_distance(fp(c[1], bare).hash, fp(c[1], side).hash);
        sh_config_free(c[0]);
        sh_config_free(c[1]);
    }
    /* Summed over 16 keys: the sidebar is a third of the words. */
    assert_true(on * 3 < without);
    free(bare);
    free(side);
    sh_config_free(auto_);
    sh_config_free(off);
}

/*
 * No markup hints, no links, no short block: every block weighs 1, and
 * the fingerprint and weights are those of content weighting off, to the
 * last bit, in every mode.
 */
static void
test_plain_pages_fingerprint_as_before(void **state)
{
    sh_config_t *m[3] = { config_mode(SH_CONTENT_OFF),
                          config_mode(SH_CONTENT_STRUCTURE),
                          config_mode(SH_CONTENT_AUTO) };
    char        *p = page("<html><head><title>Mountain valleys and "
                          "rivers</title></head><body><div>",
                          "<table><tr><td>one table cell of words</td>"
                          "<td>another cell of more words</td></tr>"
                          "</table><ul><li>a list item long enough</li>"
                          "</ul></div></body></html>");
    sh_result_t  r0 = fp(m[0], p), r1 = fp(m[1], p), r2 = fp(m[2], p);

    assert_int_equal(r0.status, SH_STATUS_OK);
    assert_identical(&r0, &r1);
    assert_identical(&r0, &r2);
    free(p);
    sh_config_free(m[0]);
    sh_config_free(m[1]);
    sh_config_free(m[2]);
}

/* ---- chunking ----------------------------------------------------------- */

/*
 * Zones, links, marked inline elements, a block longer than the sample
 * (its weight is decided on its first SH_BLOCK_SAMPLE bytes, mid-piece),
 * markers nested deeper than sh_html tracks: the same result whatever the
 * pieces, down to the weights.
 */
static void
test_chunking_does_not_matter(void **state)
{
    static const size_t pieces[] = { 1, 2, 3, 7, 13, 64, 1000, 4093 };
    sh_config_t *c[2] = { config_mode(SH_CONTENT_AUTO),
                          config_mode(SH_CONTENT_STRUCTURE) };
    char        *html = malloc(64 * 1024);
    size_t       n = 0, i, k;
    sh_result_t  whole, part;

    n += (size_t) sprintf(html + n, "<header><a href=/>site</a></header>"
                          "<nav class=menu>");
    for (i = 0; i < 40; i++) {
        n += (size_t) sprintf(html + n, "<a href=/p%zu>page %zu</a> ", i, i);
    }
    n += (size_t) sprintf(html + n, "</nav><main><p>");
    /* One block of about 7,000 non-space bytes: prose, then links, so
     * that its link density depends on where the sample ends. */
    for (i = 0; i < 700; i++) {
        n += (size_t) sprintf(html + n, i < 300 ? "word%zu " :
                              "<a href=/w%zu>linked</a> ", i);
    }
    n += (size_t) sprintf(html + n, "</p>");
    for (i = 0; i < 80; i++) {
        n += (size_t) sprintf(html + n, "<div class=\"%s\">deep %zu ",
                              i % 3 ? "share" : "box", i);
    }
    for (i = 0; i < 80; i++) {
        n += (size_t) sprintf(html + n, "</div> out %zu", i);
    }
    n += (size_t) sprintf(html + n, "<p>t<span class=social>x</span>y "
                          "caf\xc3\xa9 stra\xc3\x9f" "e</p></main>"
                          "<aside>side words</aside>");
    assert_true(n < 64 * 1024);
    for (k = 0; k < 2; k++) {
        whole = fp(c[k], html);
        assert_int_equal(whole.status, SH_STATUS_OK);
        for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
            part = fp_pieces(c[k], html, pieces[i]);
            assert_identical(&whole, &part);
        }
    }
    free(html);
    sh_config_free(c[0]);
    sh_config_free(c[1]);
}

static void
test_mode_names(void **state)
{
    sh_options_t o;
    char         err[256];

    assert_int_equal(sh_content_parse("off"), SH_CONTENT_OFF);
    assert_int_equal(sh_content_parse("structure"), SH_CONTENT_STRUCTURE);
    assert_int_equal(sh_content_parse("auto"), SH_CONTENT_AUTO);
    assert_int_equal(sh_content_parse("on"), -1);
    assert_string_equal(sh_content_name(SH_CONTENT_AUTO), "auto");
    sh_options_init(&o);
    o.content = 3;
    assert_null(sh_config_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "content mode"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zones_from_structure),
        cmocka_unit_test(test_weights_from_text),
        cmocka_unit_test(test_link_menus_do_not_count),
        cmocka_unit_test(test_hubs_are_told_apart),
        cmocka_unit_test(test_hubs_in_site_navigation),
        cmocka_unit_test(test_hubs_with_prose_keep_their_weights),
        cmocka_unit_test(test_short_content_is_said),
        cmocka_unit_test(test_outside_main_counts_little),
        cmocka_unit_test(test_plain_pages_fingerprint_as_before),
        cmocka_unit_test(test_chunking_does_not_matter),
        cmocka_unit_test(test_mode_names),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
