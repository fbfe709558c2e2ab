/*
 * sh_doc.c -- one document: wires the stages of sh_doc.h together.
 *
 * Each stage pushes into the next through a callback, so a body chunk flows
 * decode -> parse -> text -> terms -> feature table without being copied
 * more than the stages need.  Only sh_doc_finish weighs the features (the
 * weights need the final term frequencies) and computes the simhash.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_block.h"
#include "sh_config_internal.h"
#include "sh_decode.h"
#include "sh_doc.h"
#include "sh_features.h"
#include "sh_html.h"
#include "sh_sketch.h"
#include "sh_text.h"

/*
 * Content weighting (sh_block.h): a block's weight is known once its zone
 * and its first SH_BLOCK_SAMPLE non-space bytes are, so its terms wait in
 * `held` until then; a block's terms are at most its non-space bytes, so
 * at most SH_BLOCK_SAMPLE terms wait.  Later terms of a long block go
 * straight on with the weight decided.
 */
#define HELD_MAX    (SH_BLOCK_SAMPLE + 16)

/* A link word's first bytes: longer words are told apart by these. */
#define SH_LINK_WORD_MAX    48

struct sh_doc_s {
    sh_config_t   *cfg;
    sh_decode_t   *decode;
    sh_html_t     *html;
    sh_text_t     *text;
    sh_features_t *features;

    uint64_t       nbytes;
    uint32_t       ntokens;
    int            stopped;     /* the parser's limits: ignore the rest */
    int            failed;      /* out of memory somewhere */
    int            finished;

    /* The current block, when content weighting is on. */
    unsigned       content;     /* SH_CONTENT_* */
    uint32_t       bytes;       /* non-space bytes, up to SH_BLOCK_SAMPLE */
    uint32_t       link;        /* ... of them inside links */
    uint32_t       block_terms; /* terms the block gave */
    int            decided;
    unsigned       cls;         /* the block's term class, once decided */
    uint64_t      *held;        /* HELD_MAX terms, allocated when needed */
    size_t         nheld;

    sh_block_fn    block_hook;
    void          *block_arg;
    sh_block_filter_fn block_filter;
    void          *filter_arg;
    uint64_t       block_hash;  /* of the terms the weight was decided on */

    /* The page's text by zone (see links_are_content): non-space bytes
     * of its blocks as sampled, and those inside links. */
    uint64_t       zone_bytes[SH_ZONE_N];
    uint64_t       zone_link[SH_ZONE_N];
    uint32_t       zone_terms[SH_ZONE_N];  /* terms of those blocks */
    int            hub;         /* its own content is links */

    /* The sketches beside the fingerprint (sh_sketch.h): the last three
     * start tags, and the link word being read (a word may span the
     * parser's text pieces, which depend on the chunking). */
    sh_sketch_t    structure;
    sh_sketch_t    links;
    sh_sketch_t    own;         /* the link words outside chrome */
    uint64_t       tags[3];
    uint32_t       ntags;
    char           word[SH_LINK_WORD_MAX];
    uint32_t       nword;
    uint64_t      *sets;        /* 3 x SH_SKETCH_SET, the previous page's
                                   (cleared) when there was one */
};

/* The block's weight is known: pass the held terms on with it. */
static void
decide(sh_doc_t *d)
{
    unsigned zone = sh_html_zone(d->html);
    size_t   i;

    unsigned weight = sh_block_weight(d->content, zone, d->bytes, d->link);
    unsigned hub = sh_block_hub_weight(d->content, zone, d->bytes, d->link);

    if (d->block_hook != NULL || d->block_filter != NULL) {
        d->block_hash = XXH3_64bits(d->held, d->nheld * sizeof(*d->held));
        if (d->block_filter != NULL) {
            unsigned f = d->block_filter(d->filter_arg, d->block_hash);

            f = f < SH_BLOCK_FULL ? f : SH_BLOCK_FULL;
            weight = weight * f / SH_BLOCK_FULL;
            hub = hub * f / SH_BLOCK_FULL;
        }
    }
    d->cls = weight | (zone == SH_ZONE_MAIN ? SH_CLASS_MAIN : 0)
             | hub << SH_CLASS_HUB_SHIFT;
    d->decided = 1;
    for (i = 0; i < d->nheld; i++) {
        sh_features_term(d->features, d->held[i], d->cls);
    }
    d->nheld = 0;
}

static void
on_term(void *arg, uint64_t term)
{
    sh_doc_t *d = arg;

    d->ntokens++;
    if (d->content == SH_CONTENT_OFF) {
        sh_features_term(d->features, term, SH_CLASS_FULL);
        return;
    }
    d->block_terms++;
    if (!d->decided) {
        if (d->held == NULL) {
            /* The previous page's, or a new one, whole: growing it, or
             * a large malloc per page, costs more than the rest. */
            d->held = d->cfg->spare_held;
            d->cfg->spare_held = NULL;
            if (d->held == NULL) {
                d->held = malloc(HELD_MAX * sizeof(*d->held));
            }
            if (d->held == NULL) {
                d->failed = 1;
                return;
            }
        }
        if (d->nheld == HELD_MAX) {
            decide(d);          /* cannot happen: see HELD_MAX */
            sh_features_term(d->features, term, d->cls);
            return;
        }
        d->held[d->nheld++] = term;
        return;
    }
    sh_features_term(d->features, term, d->cls);
}

/*
 * Count the non-space bytes of the block's text, and those inside links,
 * up to SH_BLOCK_SAMPLE: the weight is decided there, on the same bytes
 * whatever the chunking.
 */
static void
sample(sh_doc_t *d, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *) text;
    uint32_t             n = 0;
    uint64_t             x;
    size_t               i = 0;

    if (len <= SH_BLOCK_SAMPLE - d->bytes) {
        /*
         * Eight bytes at a time: a byte is above ' ' when its top bit is
         * set or adding 0x5F to its low seven bits sets it (no carry
         * crosses bytes); the flags are summed by a multiply.
         */
        for (; i + 8 <= len; i += 8) {
            memcpy(&x, p + i, 8);
            x = (((x & 0x7F7F7F7F7F7F7F7FULL) + 0x5F5F5F5F5F5F5F5FULL) | x)
                >> 7 & 0x0101010101010101ULL;
            n += (uint32_t) ((x * 0x0101010101010101ULL) >> 56);
        }
        for (; i < len; i++) {
            n += p[i] > ' ';
        }
    } else {
        for (i = 0; i < len && d->bytes + n < SH_BLOCK_SAMPLE; i++) {
            n += p[i] > ' ';
        }
    }
    d->bytes += n;
    if (sh_html_in_link(d->html)) {
        d->link += n;
    }
    if (d->bytes == SH_BLOCK_SAMPLE) {
        decide(d);
    }
}

/* A start tag: the 4-gram it ends goes into the structure sketch. */
static void
on_tag(void *arg, uint64_t name)
{
    sh_doc_t *d = arg;
    uint64_t  gram[4];

    if (d->ntags >= 3) {
        gram[0] = d->tags[0];
        gram[1] = d->tags[1];
        gram[2] = d->tags[2];
        gram[3] = name;
        sh_sketch_add(&d->structure, XXH3_64bits(gram, sizeof(gram)));
    }
    d->tags[0] = d->tags[1];
    d->tags[1] = d->tags[2];
    d->tags[2] = name;
    d->ntags++;
}

/*
 * A link word goes into the sketch of all link words, and, outside chrome,
 * into the sketch of the page's own (sh_doc_finish chooses).
 */
static void
link_word_end(sh_doc_t *d)
{
    uint64_t h;

    if (d->nword > 0) {
        h = XXH3_64bits(d->word, d->nword);
        sh_sketch_add(&d->links, h);
        if (sh_html_zone(d->html) != SH_ZONE_CHROME) {
            sh_sketch_add(&d->own, h);
        }
        d->nword = 0;
    }
}

/*
 * The words of link text: letters, digits and any non-ASCII byte, ASCII
 * lower-cased.  A word ends at any other byte, or where the link ends
 * (the next text outside it, a block's end, the page's end).  Cheap and
 * independent of the text pipeline, whose words ignore inline tags
 * ("foo<a>bar</a>" is one word there).
 */
static void
link_words(sh_doc_t *d, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *) text;
    size_t               i;
    unsigned char        c;

    for (i = 0; i < len; i++) {
        c = p[i];
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
            c |= 0x20;
        } else if (!(c >= '0' && c <= '9') && c < 0x80) {
            link_word_end(d);
            continue;
        }
        if (d->nword < SH_LINK_WORD_MAX) {
            d->word[d->nword] = (char) c;
        }
        d->nword += d->nword < SH_LINK_WORD_MAX;
    }
}

static int
on_text(void *arg, const char *text, size_t len)
{
    sh_doc_t *d = arg;

    if (sh_html_in_link(d->html)) {
        link_words(d, text, len);
    } else {
        link_word_end(d);
    }

    if (d->content != SH_CONTENT_OFF && !d->decided) {
        sample(d, text, len);
    }
    return sh_text_feed(d->text, text, len);
}

static int
on_block_end(void *arg)
{
    sh_doc_t      *d = arg;
    sh_block_info_t b;
    unsigned       zone;
    int            rc;

    link_word_end(d);
    rc = sh_text_end_block(d->text);    /* the block's last term */
    if (d->content == SH_CONTENT_OFF) {
        return rc;
    }
    if (!d->decided) {
        decide(d);
    }
    /*
     * Only blocks that gave terms are reported: one without any weighs
     * nothing, and libxml2 reports some markup-like text (a lone "<"
     * before the root element) or not depending on where the input was
     * cut, so its blocks would depend on the chunking.
     */
    if (d->block_terms > 0) {
        zone = sh_html_zone(d->html);
        d->zone_bytes[zone] += d->bytes;
        d->zone_link[zone] += d->link;
        d->zone_terms[zone] += d->block_terms;
    }
    if (d->block_hook != NULL && d->bytes > 0 && d->block_terms > 0) {
        b.zone = sh_html_zone(d->html);
        b.weight = d->cls & SH_CLASS_WEIGHT;
        b.bytes = d->bytes;
        b.link = d->link;
        b.hash = d->block_hash;
        d->block_hook(d->block_arg, &b);
    }
    d->bytes = 0;
    d->link = 0;
    d->block_terms = 0;
    d->decided = 0;
    return d->failed ? -1 : rc;
}

static int
on_utf8(void *arg, const char *utf8, size_t len)
{
    sh_doc_t *d = arg;
    int       rc;

    if (d->stopped) {
        return 0;
    }
    rc = sh_html_feed(d->html, utf8, len);
    if (rc == 1) {
        d->stopped = 1;         /* too large or too complex: skipped */
        return 0;
    }
    return rc;
}

sh_doc_t *
sh_doc_new(sh_config_t *cfg, const char *charset)
{
    sh_doc_t *d = calloc(1, sizeof(*d));

    if (d == NULL) {
        return NULL;
    }
    d->cfg = cfg;
    d->decode = sh_decode_new(charset, on_utf8, d);
    d->html = sh_html_new(on_text, on_block_end, d);
    d->text = sh_text_new(cfg, on_term, d);
    d->content = cfg->opts.content;
    if (d->html != NULL && d->content != SH_CONTENT_OFF) {
        sh_html_track_content(d->html);
    }
    if (d->html != NULL) {
        sh_html_set_tag_hook(d->html, on_tag, d);
    }
    /* Zeroing 32 KB a page cost more than the sketches: the last page's
     * sets come back with only their taken slots cleared. */
    d->sets = cfg->spare_sets;
    cfg->spare_sets = NULL;
    if (d->sets == NULL) {
        d->sets = calloc(3 * SH_SKETCH_SET, sizeof(uint64_t));
    }
    if (d->sets != NULL) {
        sh_sketch_init(&d->structure, d->sets);
        sh_sketch_init(&d->links, d->sets + SH_SKETCH_SET);
        sh_sketch_init(&d->own, d->sets + 2 * SH_SKETCH_SET);
    }
    /* The previous document's table, if any: its memory is warm. */
    if (cfg->spare != NULL) {
        d->features = cfg->spare;
        cfg->spare = NULL;
    } else {
        d->features = sh_features_new(cfg->opts.shingle,
                                      cfg->opts.max_features);
    }
    if (d->decode == NULL || d->html == NULL || d->text == NULL
        || d->features == NULL || d->sets == NULL)
    {
        sh_doc_free(d);
        return NULL;
    }
    return d;
}

int
sh_doc_feed(sh_doc_t *d, const void *data, size_t len)
{
    d->nbytes += len;
    if (d->failed || d->finished) {
        return -1;
    }
    /*
     * Once the parser has stopped, the page is decided, unless it turns
     * out to be binary: its first SH_PRESCAN characters say, so they are
     * still decoded (and the parser ignores them), whatever the chunking.
     */
    if (sh_decode_is_binary(d->decode)
        || (d->stopped && sh_decode_is_decided(d->decode)))
    {
        return 0;
    }
    if (sh_decode_feed(d->decode, data, len) != 0
        || sh_features_failed(d->features))
    {
        d->failed = 1;
        return -1;
    }
    return 0;
}

/*
 * Is the page's own content links?  A section index, a listing, a table
 * of contents, a mail of links: once link text weighs little, such a
 * page keeps little more than its title and footer, and two different
 * such pages of one site would come out alike.  Its content is what lies
 * outside the chrome (in MAIN when the page marks it): when most of that
 * is link text, its blocks weigh their hub weights, where that link text
 * counts fully.  Chrome is not asked, and keeps counting little: a menu
 * of links around an article is the template's, and so is a sidebar that
 * repeats the site's table of contents around an index page (counting
 * it, as the whole-page fingerprint once did, made two short index pages
 * of one site alike).
 */
static unsigned
own_zone(const sh_doc_t *d)
{
    return sh_html_has_main(d->html) ? SH_ZONE_MAIN : SH_ZONE_NONE;
}

static int
links_are_content(const sh_doc_t *d)
{
    unsigned zone = own_zone(d);

    return sh_block_links_are_content(d->zone_bytes[zone],
                                      d->zone_link[zone]);
}

/*
 * Does a hub need its links to count?  Only while its text apart from
 * them is short (under SH_SHORT_TERMS terms, estimated from the share of
 * its bytes that is not link text): a heading, a sentence and a list.  A
 * page with pages of prose beside a longer list of links (rustdoc's
 * TryFrom: 1,100 terms of documentation and 1,900 of implementors) is
 * told from other pages by that prose as any page is; counting its list
 * fully made the fingerprint follow the list, which differs between two
 * copies of one document (std's implementors and core's), and the pair
 * came out past the weighted rule's threshold in one order.
 */
static int
prose_is_short(const sh_doc_t *d)
{
    unsigned zone = own_zone(d);
    uint64_t bytes = d->zone_bytes[zone], link = d->zone_link[zone];

    return (bytes - link) * d->zone_terms[zone] < SH_SHORT_TERMS * bytes;
}

/*
 * The terms of the page's own content (see links_are_content), and
 * whether they are few: a section index of a heading, a sentence and four
 * links, a mail of two lines.  Such a page's fingerprint rests on a few
 * dozen words beside its title and footer, and the match rule asks more
 * of it (sh_match_short).
 */
static void
own_content(const sh_doc_t *d, sh_result_t *res)
{
    res->nown = d->content == SH_CONTENT_OFF ? d->ntokens
                                             : d->zone_terms[own_zone(d)];
    res->short_content = res->nown < SH_SHORT_TERMS;
    res->hub = (unsigned) d->hub;
}

/*
 * Which link words the listing veto compares (sh_sketch.h): a hub's own,
 * those outside chrome, when it has enough of them.  A section index
 * inside a navigation that lists the site on every page links mostly
 * what every page links: compared on all its link words, two indexes of
 * one site came out close and were not vetoed.  Any other page, and a hub
 * with too few link words of its own, is compared on all of them: a page
 * whose links are all in its template (the link swap) is told from its
 * copy by those.
 */
static int
own_links(const sh_doc_t *d)
{
    return d->hub && d->own.n >= SH_SKETCH_MIN_LINKS;
}

int
sh_doc_finish(sh_doc_t *d, sh_result_t *res)
{
    const sh_sketch_t *links;
    sh_acc_t           acc;
    float              outside;

    memset(res, 0, sizeof(*res));
    if (d->failed || d->finished) {
        return -1;
    }
    d->finished = 1;

    if (sh_decode_finish(d->decode) != 0
        || (!d->stopped && !sh_decode_is_binary(d->decode)
            && sh_html_finish(d->html) != 0)
        || sh_features_failed(d->features))
    {
        d->failed = 1;
        return -1;
    }

    if (d->content != SH_CONTENT_OFF && d->nheld > 0) {
        decide(d);      /* the parser stopped inside a block */
    }
    link_word_end(d);
    d->hub = d->content == SH_CONTENT_AUTO && links_are_content(d);
    links = own_links(d) ? &d->own : &d->links;
    sh_sketches_set(&res->sketches, &d->structure, links);
    res->nstructure = d->structure.n;
    res->nlinks = links->n;
    own_content(d, res);
    res->nbytes = d->nbytes;
    res->ntokens = d->ntokens;
    res->nfeatures = (uint32_t) sh_features_count(d->features);
    res->truncated = (unsigned) sh_features_truncated(d->features);

    if (sh_decode_is_binary(d->decode)) {
        res->status = SH_STATUS_BINARY;
        return 0;
    }
    /*
     * A page the parser could not read to its end is not fingerprinted:
     * what came before the limit may not be what makes it differ from
     * others, and a crawler would take the prefix's fingerprint for the
     * page's.  (As a body over simhash_max_body is skipped, not cut.)
     */
    switch (sh_html_verdict(d->html, &res->why)) {
    case SH_BUDGET_TOO_LARGE:
        res->status = SH_STATUS_TOO_LARGE;
        return 0;
    case SH_BUDGET_EXCEEDED:
        res->status = SH_STATUS_TOO_COMPLEX;
        return 0;
    default:
        res->why = NULL;
        break;
    }
    if (res->nfeatures < d->cfg->opts.min_features
        || res->nfeatures == 0)
    {
        res->status = SH_STATUS_TOO_SHORT;
        return 0;
    }

    outside = d->content != SH_CONTENT_OFF && sh_html_has_main(d->html)
              ? sh_block_outside() : 1.0f;
    sh_acc_init(&acc);
    /* A hub of a few words keeps its ordinary weights: counting its two
     * or three words of links fully, against its surroundings at 1/8,
     * left a fingerprint of a handful of features (sh_match_short judges
     * such a page instead).  So does a hub with prose enough of its own
     * (prose_is_short). */
    sh_features_weigh(d->features, d->cfg->opts.weight, d->cfg->idf,
                      outside, sh_doc_whole(d) && !res->short_content, &acc);
    if (acc.norm2 <= 0.0) {
        res->status = SH_STATUS_TOO_SHORT;  /* every weight was zero */
        return 0;
    }
    sh_acc_finish(&acc, res);
    res->status = SH_STATUS_OK;
    return 0;
}

void
sh_doc_free(sh_doc_t *d)
{
    if (d == NULL) {
        return;
    }
    sh_decode_free(d->decode);
    sh_html_free(d->html);
    sh_text_free(d->text);
    if (d->held != NULL && d->cfg->spare_held == NULL) {
        d->cfg->spare_held = d->held;
    } else {
        free(d->held);
    }
    if (d->features != NULL && d->cfg->spare == NULL) {
        sh_features_reset(d->features);
        d->cfg->spare = d->features;
    } else {
        sh_features_free(d->features);
    }
    if (d->sets != NULL && d->cfg->spare_sets == NULL) {
        sh_sketch_clear(&d->structure);
        sh_sketch_clear(&d->links);
        sh_sketch_clear(&d->own);
        d->cfg->spare_sets = d->sets;
    } else {
        free(d->sets);
    }
    free(d);
}

void
sh_doc_set_token_hook(sh_doc_t *d, sh_token_fn fn, void *arg)
{
    sh_text_set_token_hook(d->text, fn, arg);
}

void
sh_doc_set_block_hook(sh_doc_t *d, sh_block_fn fn, void *arg)
{
    d->block_hook = fn;
    d->block_arg = arg;
}

void
sh_doc_set_block_filter(sh_doc_t *d, sh_block_filter_fn fn, void *arg)
{
    d->block_filter = fn;
    d->filter_arg = arg;
}

int
sh_doc_whole(const sh_doc_t *d)
{
    return d->hub && prose_is_short(d);
}

int
sh_doc_has_main(const sh_doc_t *d)
{
    return d->content != SH_CONTENT_OFF && sh_html_has_main(d->html);
}

void
sh_doc_foreach_feature(const sh_doc_t *d, sh_feature_fn fn, void *arg)
{
    sh_features_foreach(d->features, fn, arg);
}

const char *
sh_doc_charset(const sh_doc_t *d)
{
    return sh_decode_charset(d->decode);
}
