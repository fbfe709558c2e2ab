/*
 * sh_tokenizer_model.h -- a model of libxml2 2.9.14's HTML tokenizer: where
 * each construct of the markup begins and ends, as the push parser will
 * see it, known before the parser is handed the bytes.  (Not the words of
 * the text: those are sh_text's.)
 *
 * It tokenizes the page exactly as libxml2 2.9.14's push parser will
 * (tags, attributes and their values, references, comments, doctypes,
 * processing instructions, script and style text) for three uses:
 *
 *   - the work budget (sh_budget.h): each construct is charged what it
 *     may cost the parser at most, and a page over its budget is stopped
 *     before the costly construct reaches the parser;
 *   - where the parser may be handed its input: only where every construct
 *     begun is complete in the parser's eyes and in its look-ahead's.
 *     libxml2's push parser decides that a tag or a comment is complete
 *     with a look-ahead that disagrees with the parser proper on some
 *     malformed markup, and the parser then reads on to the end of
 *     whatever bytes it has; handed whole constructs, it never does, so
 *     what it reads does not depend on how the body was cut, and the
 *     model's view of the page stays the parser's;
 *   - memory: one construct, or one run of text the parser must hold
 *     before it can parse it, longer than SH_PENDING_MAX bytes ends the
 *     page (SH_BUDGET_TOO_LARGE).
 *
 * Every decision is a function of the bytes (the parser's callbacks are
 * one too), never of how the body was cut.
 */
#ifndef SH_TOKENIZER_MODEL_H
#define SH_TOKENIZER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "sh_budget.h"

typedef struct {
    /* The scanner, between calls. */
    unsigned char state;
    unsigned char sub;          /* position in a keyword, a dash run */
    unsigned char quote;        /* the quote that ends a value */
    unsigned char raw;          /* in script or style text: which */
    unsigned char kind;         /* the element being named: which */
    unsigned char la;           /* the parser's look-ahead (LA_* bits) */
    unsigned char utf8_need;    /* continuation bytes still to come */
    unsigned char ret;          /* the state a reference returns to */
    unsigned char name_len;     /* bytes of the current name, up to 100 */
    char          name[8];      /* its first bytes, lower-cased */
    uint32_t      cp;           /* a code point being decoded */
    uint32_t      nattrs;       /* attributes of the current tag */
    int           sync;         /* waiting for sh_tokenizer_model_sync */

    uint64_t      pos;          /* bytes scanned */
    uint64_t      start;        /* where the current construct began */
    uint64_t      run;          /* what the parser may have to hold */
    uint64_t      rescans;      /* "</", "<?" waiting for a '>' ... */
    uint64_t      rescan_sum;   /* ... and the sum of their offsets */

    sh_budget_t   budget;       /* what the page has spent */

    /* Set by each sh_tokenizer_model_scan: where its bytes may be cut,
     * and whether they are script or style text that the parser need not
     * see. */
    size_t        safe_first;
    size_t        safe_last;
    int           raw_text;
} sh_tokenizer_model_t;

#define SH_TOKENIZER_MODEL_NONE  ((size_t) -1)

void sh_tokenizer_model_init(sh_tokenizer_model_t *b);

/*
 * Scan the next n bytes of UTF-8.  Returns how many of them it took: n; or
 * fewer when the page went over its budget (b->budget.verdict says how: the
 * parser must see none of the rest), when b->sync is set (see below; call
 * again with the rest), or where script or style text begins or ends.
 * Sets b->safe_first and b->safe_last to the first and the last offset in
 * p[0..returned] at which the input scanned so far may be cut for the
 * parser: every construct before it complete in the parser's eyes, no
 * character cut (SH_TOKENIZER_MODEL_NONE: nowhere).
 *
 * Sets b->raw_text when the bytes taken are script or style text, whole
 * characters, up to the "</" and letter that may end it (htmlParseScript
 * reads them as one run), none of them a character that libxml2 reports
 * as invalid.  Then the parser may be spared them, if it is in that
 * element and holds no input: they would reach the caller's callbacks
 * only as the element's text, and cost nothing in the budget (sh_html
 * skips them, and counts them as read).
 */
size_t sh_tokenizer_model_scan(sh_tokenizer_model_t *b, const char *p,
                               size_t n);

/*
 * With b->sync set, the scanner met an end tag in script or style text
 * that may or may not end it.  Hand the parser everything up to the
 * returned offset, then tell the scanner the element the parser is in
 * (its name, or NULL).
 */
void sh_tokenizer_model_sync(sh_tokenizer_model_t *b, const char *element);

/* "script" or "style" while the scanner is in that element's text, else
 * NULL. */
const char *sh_tokenizer_model_raw_element(const sh_tokenizer_model_t *b);

#endif
