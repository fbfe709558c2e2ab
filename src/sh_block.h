/*
 * sh_block.h -- block classes: what a page says about each block of its
 * text, and the weight the block's features get from it.
 *
 * The most common near-duplicate is the same content inside different
 * chrome: a syndicated article, a mirror, a manual after a theme change.
 * Menus, sidebars and footers often hold more words than the content, so
 * they decide a whole-page fingerprint.  Here each block of text (sh_html.h
 * defines blocks) gets a weight from 0 to 1 that scales its features in the
 * simhash (sh_features.h), from two kinds of evidence:
 *
 * Structure (simhash_content structure and auto), from the elements around
 * the block:
 *   MAIN    inside <main>, role="main", or <article> (an <article> inside
 *           chrome stays chrome: "related stories" lists);
 *   CHROME  inside <nav>, <aside>, <form>, role="navigation", "banner",
 *           "contentinfo", "complementary" or "search"; inside <header> or
 *           <footer> that is not within MAIN (ARIA gives them the banner
 *           and contentinfo roles only there); inside an element whose
 *           class or id has one of the words of SH_BLOCK_CHROME_WORDS
 *           (class and id split on anything but letters and digits; not
 *           on <html> or <body>, which name page layouts: "sidebar-visible");
 *   NONE    anything else.
 * An element with a marker ends a block, so that a block has one zone.
 * <main> and role="main" open MAIN even inside chrome; inside MAIN a new
 * marker opens CHROME again (a table of contents in the article).
 *
 * Text (simhash_content auto only), from the block's first
 * SH_BLOCK_SAMPLE bytes that are not white space:
 *   link density   the share of those bytes inside <a>: menus, tag lists,
 *                  "next / previous" bars are mostly link text (in chrome
 *                  down to 0; elsewhere to 1/2, since a list of links in
 *                  a page's body may be its content);
 *   length         a block of few bytes ("Share", "Sign up", a date).
 *
 * The weight of a block is the product of its zone's factor and its text
 * factors, in sixteenths; and when a page marks its main content (any MAIN
 * block), every block outside MAIN is further scaled by SH_BLOCK_OUTSIDE:
 * what lies outside the main content then counts little.  Since that is
 * known only at the end of the page, features keep their MAIN and other
 * weights apart until then (sh_features.c).
 *
 * A page whose text outside chrome (in MAIN when it has MAIN) is mostly
 * link text is a hub (an index, a listing, a table of contents): its own
 * content is links, and its blocks then weigh sh_block_hub_weight: its
 * own link text counts fully, while the site's navigation around it, in
 * chrome or outside MAIN, still counts little (sh_doc.c).  It used to be
 * fingerprinted on its whole text; a sidebar that repeats the site's table
 * of contents then decided the fingerprint of every short index page.
 *
 * The numbers below were chosen by `make eval` (docs/QUALITY.md,
 * "Content weighting"), which shows what each one moved.
 */
#ifndef SH_BLOCK_H
#define SH_BLOCK_H

#include <stdint.h>

/* simhash_content / --content */
enum {
    SH_CONTENT_OFF = 0,         /* every block weighs 1: whole-page text */
    SH_CONTENT_STRUCTURE,       /* markup only */
    SH_CONTENT_AUTO             /* markup and text statistics */
};

/* Where a block sits. */
enum {
    SH_ZONE_NONE = 0,
    SH_ZONE_MAIN,
    SH_ZONE_CHROME,
    SH_ZONE_N
};

/* What an element marks, from its name and attributes. */
enum {
    SH_MARK_NONE = 0,
    SH_MARK_MAIN,               /* <main>, role=main: MAIN, always */
    SH_MARK_ARTICLE,            /* <article>: MAIN unless within CHROME */
    SH_MARK_CHROME,             /* CHROME */
    SH_MARK_SCOPED              /* <header>, <footer>: CHROME unless in MAIN */
};
#define SH_MARK_MASK    0x07
#define SH_MARK_LINK    0x10    /* or'ed in: <a href>, its text is link text */
#define SH_NAME_LAYOUT  0x20    /* <html>, <body>: class and id ignored */
#define SH_NAME_ANCHOR  0x40    /* <a>: with href, a link */

#define SH_BLOCK_FULL     16    /* the weight 1, in sixteenths */

/* A page whose own content (outside chrome; in MAIN when it has MAIN) is
 * fewer terms than this has short content (sh_result_t.short_content,
 * sh_match_short): a few dozen words. */
#define SH_SHORT_TERMS    40
#define SH_BLOCK_SAMPLE   4096  /* bytes of a block its text rules read */

/*
 * What the element `name` (lower case, as libxml2 gives it) marks by its
 * name alone: SH_MARK_*, or'ed with SH_NAME_* (sh_html caches it, names
 * being interned); then with its attributes `attrs` (name, value, ...,
 * NULL; may be NULL): SH_MARK_*, or'ed with SH_MARK_LINK.
 */
unsigned sh_block_name_mark(const char *name);
unsigned sh_block_mark(unsigned name_mark, const char **attrs);

/* The zone inside an element with mark `mark`, within zone `outer`. */
unsigned sh_block_zone(unsigned outer, unsigned mark);

/*
 * The weight of a block in sixteenths (0..SH_BLOCK_FULL): zone, and with
 * SH_CONTENT_AUTO its first min(SH_BLOCK_SAMPLE, all) non-space bytes, of
 * which `link` were inside links.
 */
unsigned sh_block_weight(unsigned mode, unsigned zone, uint32_t bytes,
                         uint32_t link);

/*
 * The weight of the same block when the page is a hub (its content is
 * links: sh_block_links_are_content): link text outside chrome is then the
 * page's own content and is not discounted; chrome keeps its weight.
 */
unsigned sh_block_hub_weight(unsigned mode, unsigned zone, uint32_t bytes,
                             uint32_t link);

/* The factor on every block outside MAIN when the page has MAIN blocks. */
float sh_block_outside(void);

/*
 * Is a page's content, `bytes` non-space bytes as sampled of which `link`
 * are link text, made of links (a hub: an index, a listing, a table of
 * contents)?  Such a page's blocks weigh their hub weights (sh_doc.c).
 */
int sh_block_links_are_content(uint64_t bytes, uint64_t link);

const char *sh_block_zone_name(unsigned zone);

#endif
