/*
 * sh_doc.h -- the path of one page through the library.
 *
 *     bytes --> sh_decode  (charset sniffing, conversion to clean UTF-8)
 *           --> sh_html    (libxml2 HTML push parser, SAX only: visible text,
 *                           blocks, and where each block sits)
 *           --> sh_block   (each block's weight, from markup and text)
 *           --> sh_text    (ignore patterns, lower-casing, tokens, stop words,
 *                           Snowball stemming)
 *           --> sh_features(words and word shingles, bounded feature table,
 *                           sublinear TF x IDF x block weights)
 *           --> sh_simhash (64 signed sums W[j], L2-normalised, bit j = W[j]>=0)
 *
 * Usage:
 *
 *     sh_config_t *cfg = sh_config_new(&opts, err, sizeof(err));
 *     sh_doc_t *doc = sh_doc_new(cfg, "iso-8859-1");   // or NULL
 *     sh_doc_feed(doc, chunk1, len1);                  // any chunking
 *     sh_doc_feed(doc, chunk2, len2);
 *     sh_doc_finish(doc, &result);
 *     sh_doc_free(doc);
 *
 * The result does not depend on how the body was split into chunks: every
 * stage below buffers exactly what it needs to make its decisions on content,
 * never on chunk boundaries.
 *
 * Memory per document is bounded whatever the body size: the feature table
 * holds at most opts.max_features distinct features, a text block at most
 * SH_BLOCK_MAX bytes, and the parser at most SH_PENDING_MAX bytes of an
 * unterminated construct (see sh_doc_feed).  And so is CPU per byte:
 * markup crafted for the HTML parser's slow paths goes over its work
 * budget (sh_budget.h) and is not read further.
 *
 * Threads: a config is used by one thread at a time (the Snowball stemmer and
 * the stem cache inside it are mutable); use one config per thread.  nginx
 * workers are processes, so each has its own copy.
 */
#ifndef SH_DOC_H
#define SH_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "sh_config.h"
#include "sh_simhash.h"

typedef struct sh_doc_s sh_doc_t;

/*
 * Start a document.  `charset` is the label from the response's Content-Type
 * (may be NULL).  Returns NULL only when out of memory.
 */
sh_doc_t *sh_doc_new(sh_config_t *cfg, const char *charset);

/*
 * Feed the next `len` bytes of the body.  Returns 0, or -1 when out of
 * memory (the document is then unusable; free it).  Once the document has
 * decided it is binary, too large (a construct over SH_PENDING_MAX) or too
 * complex (over its work budget), further bytes are ignored cheaply.
 */
int sh_doc_feed(sh_doc_t *doc, const void *data, size_t len);

/* End of body: flush everything and compute the fingerprint. */
int sh_doc_finish(sh_doc_t *doc, sh_result_t *res);

void sh_doc_free(sh_doc_t *doc);

/*
 * Optional observers, for tools (the evaluation's ground truth, `simhash
 * text`): called with every normalised token in document order, before stop
 * words and stemming; and, after sh_doc_finish, with every feature kept.
 */
typedef void (*sh_token_fn)(void *arg, const char *tok, size_t len);
void sh_doc_set_token_hook(sh_doc_t *doc, sh_token_fn fn, void *arg);

typedef void (*sh_feature_fn)(void *arg, uint64_t feature, unsigned type,
                              uint32_t tf);
void sh_doc_foreach_feature(const sh_doc_t *doc, sh_feature_fn fn, void *arg);

/*
 * With content weighting on (sh_block.h): called at the end of every block
 * that gave terms (a block without any weighs nothing), after the token
 * hook saw its tokens, with the block's
 * zone (SH_ZONE_*), weight in sixteenths (before the page-wide factor on
 * what lies outside the main content), and the non-space bytes it was
 * decided on (at most SH_BLOCK_SAMPLE) and those inside links.
 */
typedef struct {
    unsigned zone;
    unsigned weight;
    uint32_t bytes;
    uint32_t link;
    uint64_t hash;      /* of the block's terms up to the decision */
} sh_block_info_t;

typedef void (*sh_block_fn)(void *arg, const sh_block_info_t *block);
void sh_doc_set_block_hook(sh_doc_t *doc, sh_block_fn fn, void *arg);

/*
 * A further factor on each block's weight, in sixteenths, from the hash of
 * the block's terms (as the block hook reports it): what a learned
 * template would use.  The evaluation simulates learned templates with it
 * (tools/eval/sketch.c); nothing else sets one.
 */
typedef unsigned (*sh_block_filter_fn)(void *arg, uint64_t block_hash);
void sh_doc_set_block_filter(sh_doc_t *doc, sh_block_filter_fn fn,
                             void *arg);

/* After sh_doc_finish: did the page mark its main content (the blocks
 * outside it then weigh sh_block_outside())? */
int sh_doc_has_main(const sh_doc_t *doc);

/* After sh_doc_finish: is the page a hub, its own content links with
 * little prose besides, whose link text then counted fully
 * (sh_block_hub_weight) unless the page is short (sh_result_t's
 * short_content)?  A hub with prose enough of its own keeps its ordinary
 * weights, and is not one here.  (The name is the first rule's: such a
 * page was fingerprinted on its whole text.) */
int sh_doc_whole(const sh_doc_t *d);

/* The charset the document was decoded with (valid after the first bytes). */
const char *sh_doc_charset(const sh_doc_t *doc);

#endif
