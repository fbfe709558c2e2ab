/*
 * sh_text.h -- visible text -> a stream of terms.
 *
 * Text arrives in pieces cut anywhere, and the end of each block is
 * signalled (sh_html.h defines blocks).  For each block:
 *   1. every ignore pattern, in order, replaces each of its (non-empty)
 *      matches with a space.  Patterns are PCRE2 with UTF and Unicode
 *      properties on, and see the whole block in its original case, runs of
 *      white space collapsed to one space; write (?i) for case-insensitive
 *      matching.  A pattern never sees across two blocks, so it cannot join
 *      text from two table cells.  A block longer than SH_BLOCK_MAX bytes is
 *      cut at its last space before the limit.  Without patterns no block is
 *      kept: tokens are made as the text arrives;
 *   2. tokens are runs of letters, digits and combining marks (Unicode
 *      categories L, N, M).  Each CJK ideograph and each kana is a token of
 *      its own, so Chinese and Japanese text, written without spaces, gives
 *      one feature per character and shingles of consecutive characters;
 *   3. tokens are case-folded and put in Unicode NFC (sh_fold.h), so
 *      "STRASSE", "Straße" and "strasse" are one token, and so are
 *      "ΣΟΦΊΑ"/"σοφία" and "МОСКВА"/"москва".  A token longer than
 *      SH_TOKEN_MAX bytes keeps only its first SH_TOKEN_MAX bytes;
 *   4. stop words are dropped; the rest are stemmed with Snowball;
 *   5. each term is delivered as a 64-bit hash keyed by the configuration's
 *      secret (sh_config.h): the feature stage never sees the text.
 */
#ifndef SH_TEXT_H
#define SH_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "sh_fold.h"

#define SH_BLOCK_MAX    (64 * 1024)

typedef struct sh_text_s sh_text_t;
typedef struct sh_config_s sh_config_t;

typedef void (*sh_term_fn)(void *arg, uint64_t term);
typedef void (*sh_raw_token_fn)(void *arg, const char *tok, size_t len);

/* Build the tokeniser's tables; sh_library_init calls it once. */
void sh_text_init(void);

/* Per-document state (buffers); the shared parts live in the config. */
sh_text_t *sh_text_new(sh_config_t *cfg, sh_term_fn fn, void *arg);
void sh_text_set_token_hook(sh_text_t *t, sh_raw_token_fn fn, void *arg);

/* The next piece of text of the current block, and the end of a block;
 * each returns 0, or -1 when out of memory. */
int  sh_text_feed(sh_text_t *t, const char *text, size_t len);
int  sh_text_end_block(sh_text_t *t);
void sh_text_free(sh_text_t *t);

#endif
