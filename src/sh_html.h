/*
 * sh_html.h -- visible text of an HTML page, streaming, through libxml2's HTML
 * push parser in SAX mode (no tree is built).
 *
 * Text inside script, style, noscript, template, svg and math is skipped, and
 * so are comments; title text is kept.  Entities arrive decoded.  The text is
 * delivered in BLOCKS: a block ends at every block-level element boundary
 * (p, div, li, td, h1, br, title, ...), and a block longer than SH_BLOCK_MAX
 * bytes is cut at its last space before the limit.  Runs of white space are
 * collapsed to one space and a block never begins or ends with one.
 *
 * Blocks are the unit the ignore patterns apply to (sh_text.h): a pattern
 * can match across inline tags ("<b>12</b> March") but never across blocks.
 * Where blocks end depends only on the page, not on how it was chunked.
 *
 * Input must be UTF-8 (sh_decode.h guarantees it); the parser is told to
 * ignore any charset the page declares.
 */
#ifndef SH_HTML_H
#define SH_HTML_H

#include <stddef.h>

#define SH_BLOCK_MAX    (64 * 1024)
#define SH_PENDING_MAX  (4 * 1024 * 1024)

typedef struct sh_html_s sh_html_t;

/* Receives one block of text (not NUL-terminated); returns 0 or -1 (OOM). */
typedef int (*sh_block_fn)(void *arg, const char *text, size_t len);

sh_html_t *sh_html_new(sh_block_fn fn, void *arg);

/*
 * Parse the next UTF-8 bytes.  Returns 0; -1 when out of memory; 1 when the
 * parser holds more than SH_PENDING_MAX bytes of one unterminated construct
 * (e.g. a 50 MB comment that never closes): the page is then treated as
 * ending there, and further input is ignored.
 */
int  sh_html_feed(sh_html_t *h, const char *utf8, size_t len);
int  sh_html_finish(sh_html_t *h);
void sh_html_free(sh_html_t *h);

#endif
