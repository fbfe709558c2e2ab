/*
 * sh_html.h -- visible text of an HTML page, streaming, through libxml2's HTML
 * push parser in SAX mode (no tree is built).
 *
 * Text inside script, style, noscript, template, svg and math is skipped, and
 * so are comments; title text is kept.  Entities arrive decoded.  Text is
 * passed on as it comes (in pieces that depend on the parser's input
 * chunks, so the consumer must not care where they are cut), and the end of
 * every BLOCK is signalled: at each block-level element boundary (p, div,
 * li, td, h1, br, title, ...), and with content tracking on (below) at
 * each element that changes the zone.  Inline elements (b, a, span, ...) do not
 * separate text: "foo<b>bar</b>" is one word.  Blocks are the unit the
 * ignore patterns apply to (sh_text.h).
 *
 * Input must be UTF-8 (sh_decode.h guarantees it); the parser is told to
 * ignore any charset the page declares.
 */
#ifndef SH_HTML_H
#define SH_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "sh_budget.h"

typedef struct sh_html_s sh_html_t;

/* Receive visible text (UTF-8, not NUL-terminated), and block ends; each
 * returns 0, or -1 when out of memory. */
typedef int (*sh_html_text_fn)(void *arg, const char *text, size_t len);
typedef int (*sh_html_block_fn)(void *arg);

sh_html_t *sh_html_new(sh_html_text_fn text, sh_html_block_fn block_end,
                       void *arg);

/*
 * Parse the next UTF-8 bytes.  Returns 0; -1 when out of memory; 1 when the
 * page went over its budget (sh_budget.h), or one construct or run of text
 * is longer than SH_PENDING_MAX bytes (e.g. a 50 MB comment that never
 * closes): the page is then not read further, and sh_html_verdict says
 * which.
 */
int  sh_html_feed(sh_html_t *h, const char *utf8, size_t len);
int  sh_html_finish(sh_html_t *h);

/*
 * Content tracking (sh_block.h), off unless asked for before the first
 * byte: elements that mark a zone (<main>, <nav>, role, class and id
 * words) or a link (<a href>) are followed, and a zone marker also ends a
 * block.  The text and block callbacks may then ask where the text they
 * are given sits: its zone (SH_ZONE_*), whether it is link text, and
 * whether the page has had a MAIN zone so far.
 */
void     sh_html_track_content(sh_html_t *h);

/* Every start tag, in document order, as a hash of its name (the
 * structure sketch, sh_sketch.h); set before the first byte. */
typedef void (*sh_html_tag_fn)(void *arg, uint64_t name_hash);
void sh_html_set_tag_hook(sh_html_t *h, sh_html_tag_fn fn, void *arg);
unsigned sh_html_zone(const sh_html_t *h);
int      sh_html_in_link(const sh_html_t *h);
int      sh_html_has_main(const sh_html_t *h);
void sh_html_free(sh_html_t *h);

/*
 * The libxml2 behaviour class: the family of libxml2 versions whose HTML
 * parser reads a page the same way, as far as this library can tell.
 * Fingerprints are a function of the page and of the class (the lead's
 * extraction version includes it); sh_tokenizer_model.c is a model of
 * one class only, SH_LIBXML_MODELLED.
 *
 *   SH_LIBXML_29      2.9.x: the tokenizer sh_tokenizer_model.c models
 *                     (2.9.14)
 *   SH_LIBXML_210     2.10 to 2.13: the same tokenizer, other internals
 *                     (push parser look-ahead, input buffers)
 *   SH_LIBXML_HTML5   2.14 and later: the HTML5 tokenizer
 *
 * The class of the headers the library was built with and the class of
 * the library it runs with may differ (the file name is libxml2.so.2
 * from 2.9 to 2.13).  Only when both are SH_LIBXML_MODELLED does
 * sh_html use the scanner's cut points and script skipping; otherwise it
 * parses each page in one piece, and the scanner's charges are caps.
 */
typedef enum {
    SH_LIBXML_UNKNOWN = 0,
    SH_LIBXML_29 = 1,
    SH_LIBXML_210 = 2,
    SH_LIBXML_HTML5 = 3
} sh_libxml_class_t;

#define SH_LIBXML_MODELLED  SH_LIBXML_29

/* The class of a version number as libxml2 writes it (20914 = 2.9.14). */
sh_libxml_class_t sh_libxml_class_of(long version);
/* The class of the headers built with, and of the library loaded. */
sh_libxml_class_t sh_libxml_class_built(void);
sh_libxml_class_t sh_libxml_class_running(void);
/* "2.9", "2.10-2.13", "2.14+", "unknown". */
const char *sh_libxml_class_name(sh_libxml_class_t c);
/* The running class, for the extraction version: the page's text
 * depends on it. */
sh_libxml_class_t sh_libxml_class(void);
/*
 * 1 when the parser is driven by the scanner's model of 2.9.14 (built
 * and running class SH_LIBXML_MODELLED); 0 when it falls back to parsing
 * each page in one piece under the scanner's caps.  *why (may be NULL)
 * gets a sentence for the log when it falls back, else NULL.
 */
int sh_libxml_modelled(const char **why);

/* SH_BUDGET_OK, or why the page was not read to its end (*why: a word for
 * the log, see sh_budget_why_name). */
sh_budget_verdict_t sh_html_verdict(const sh_html_t *h, const char **why);

#endif
