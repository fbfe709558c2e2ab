/*
 * sh_decode.h -- bytes in some charset -> clean UTF-8, streaming.
 *
 * Which charset (the first that applies):
 *   1. a byte order mark (UTF-8, UTF-16LE/BE): unambiguous, as in HTML5;
 *   2. the caller's label (the response's Content-Type charset);
 *   3. a <meta charset> / <meta http-equiv content="...charset="> found by
 *      a prescan of the first SH_PRESCAN bytes (HTML5 looks no further);
 *   4. UTF-8.
 * Labels are resolved as browsers do: "iso-8859-1", "latin1" and "ascii"
 * mean windows-1252, "shift_jis" means windows-31j, "gb2312" means GBK, and a
 * UTF-16 label found inside the page means UTF-8 (the page was readable as
 * ASCII, so it is not UTF-16).  A label is ignored, as if absent, when it
 * names no charset iconv knows, or one that does not write ASCII as ASCII
 * (UTF-32, UTF-7, EBCDIC, ...: UTF-16 labels aside, no browser reads an
 * HTML page in one, and its markup would not survive).
 *
 * The decoder holds back at most SH_PRESCAN bytes until it has decided, and
 * afterwards only an incomplete multi-byte sequence (a few bytes) between
 * calls, so the output is the same whatever the chunking.  Invalid input
 * never stops it: each undecodable byte becomes U+FFFD, NUL becomes U+FFFD
 * too (and is counted, for the binary check).
 */
#ifndef SH_DECODE_H
#define SH_DECODE_H

#include <stddef.h>
#include <stdint.h>

#define SH_PRESCAN      1024

typedef struct sh_decode_s sh_decode_t;

/* Receives decoded UTF-8; returns 0, or -1 to report out-of-memory. */
typedef int (*sh_decode_out_fn)(void *arg, const char *utf8, size_t len);

sh_decode_t *sh_decode_new(const char *label, sh_decode_out_fn out,
                           void *arg);
int  sh_decode_feed(sh_decode_t *d, const void *data, size_t len);
int  sh_decode_finish(sh_decode_t *d);
void sh_decode_free(sh_decode_t *d);

/* Canonical name of the charset in use ("UTF-8", "WINDOWS-1252", ...). */
const char *sh_decode_charset(const sh_decode_t *d);

/*
 * Looks binary: NUL bytes, or more than a quarter of the first SH_PRESCAN
 * decoded characters undecodable or C0 controls.  Decided once the first
 * SH_PRESCAN bytes have been decoded (or at finish).
 */
int sh_decode_is_binary(const sh_decode_t *d);

/* The binary check has decided (either way). */
int sh_decode_is_decided(const sh_decode_t *d);

/*
 * Resolve a charset label to the name iconv knows, or NULL if unknown.
 * `in_page` applies the rule that a UTF-16 label inside the page means UTF-8.
 */
const char *sh_charset_resolve(const char *label, size_t len, int in_page);

/* Find a charset label in the first bytes of a page (HTML5 prescan, in a
 * simplified form); returns its length and sets *label, or 0. */
size_t sh_charset_prescan(const char *buf, size_t len, const char **label);

#endif
