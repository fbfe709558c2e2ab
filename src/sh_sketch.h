/*
 * sh_sketch.h -- two small sketches of a page beside its fingerprint, and
 * the veto they give: "same template, other links" (docs/QUALITY.md, "Hub
 * pages").
 *
 * Content weighting (sh_block.h) makes a page's fingerprint follow its
 * own content and not its site's chrome, so that one document under two
 * templates still matches.  The price is paid by pages whose own content
 * is links (section indexes, listings, tables of contents): two different
 * listings of one site keep little but their shared template text, and
 * match.  A fingerprint alone cannot tell the two cases apart; a pair can:
 *
 *   - two templates of one document: the MARKUP differs (other sidebars,
 *     headers, menus), the text is the same;
 *   - two listings of one template: the markup is (nearly) the same, the
 *     words the page LINKS are other words.
 *
 * So each page also gets
 *
 *   structure   a simhash of the set of its start-tag 4-grams (tag names
 *               only: its template);
 *   links       a simhash of the set of words inside its <a> elements
 *               (ASCII-lowercased words of letters, digits and any
 *               non-ASCII byte: what it links to, as a reader sees it);
 *               for a hub (sh_block_links_are_content) with at least
 *               SH_SKETCH_MIN_LINKS of them, only those outside chrome:
 *               its own links, not the navigation every page of its site
 *               repeats (sh_doc.c, own_links);
 *
 * unweighted simhashes of SETS (a feature counts once however often it
 * occurs), so that their Hamming distance follows the sets' cosine, about
 * angle = pi * H / 64.  A pair the fingerprint matches is VETOED (not a
 * duplicate) when its structures are close and its link words far apart
 * (sh_sketch_veto).  Measured in exact form before it was built: it vetoes
 * every link-swapped listing and none of the template corpus's pairs or
 * rust-doc's std-core duplicates.
 *
 * A sketch keeps at most SH_SKETCH_SET distinct features (later new ones
 * are not added: the sketch then describes the page's beginning, the same
 * way for every chunking).
 */
#ifndef SH_SKETCH_H
#define SH_SKETCH_H

#include <stddef.h>
#include <stdint.h>

#define SH_SKETCH_SET       2048    /* distinct features kept, per sketch */

/* The veto: same template (structure H at most STRUCT_H), other links (link
 * H at least LINKS_H), both pages with at least MIN_LINKS link words.
 * About Jaccard >= 0.96 and < 0.5 of the underlying sets: the same
 * markup, not a similar one (pages of one site differ in their content's
 * markup: structure H is 16 to 21 between two of its documents at the
 * median), and other links. */
#define SH_SKETCH_STRUCT_H  4
#define SH_SKETCH_LINKS_H   17
#define SH_SKETCH_MIN_LINKS 4

/*
 * A page's two sketches, as stored beside its fingerprint (16 bytes).  Both
 * 0: none that counts (no tag, or fewer than SH_SKETCH_MIN_LINKS distinct
 * link words), and such a page is never vetoed.
 */
typedef struct {
    uint64_t structure;
    uint64_t links;
} sh_sketches_t;

/* One sketch being built: a bounded set and 64 signed counts. */
typedef struct {
    uint64_t *set;          /* SH_SKETCH_SET slots, 0 = free */
    uint32_t  n;
    int32_t   count[64];
    uint16_t  used[SH_SKETCH_SET / 2];  /* the slots taken, in order */
} sh_sketch_t;

/* set: caller-provided SH_SKETCH_SET slots, all zero. */
void     sh_sketch_init(sh_sketch_t *s, uint64_t *set);
/* Zero the slots taken (not the whole set: a page takes a few hundred),
 * so that the set can serve the next page. */
void     sh_sketch_clear(sh_sketch_t *s);
void     sh_sketch_add(sh_sketch_t *s, uint64_t feature);
uint64_t sh_sketch_value(const sh_sketch_t *s);

/* The sketches of a page whose sets hold nstructure and nlinks features. */
void sh_sketches_set(sh_sketches_t *sk, const sh_sketch_t *structure,
                     const sh_sketch_t *links);

/* 1: a and b are two listings of one template, not duplicates. */
int sh_sketch_veto(const sh_sketches_t *a, const sh_sketches_t *b);

#endif
