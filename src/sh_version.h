/*
 * sh_version.h -- the extraction version: which fingerprints are comparable.
 *
 * Two fingerprints can be compared only if the same text went through the
 * same extraction: the same code, the same options, the same hash key and a
 * parser that cut the page into the same text.  The extraction version is one
 * 32-bit number that changes whenever any of those does:
 *
 *     bits 31-24   SH_EXTRACT_CODE, bumped by hand with every change to the
 *                  code that turns a page into features or weights
 *     bits 23-0    a digest of the libxml2 behaviour class and of every
 *                  option that changes a fingerprint (sh_config.c)
 *
 * It is printed as 8 hex digits ("01a3f29c"), recorded in snapshots
 * (sh_snapshot.h), stream entries (sh_stream.h) and IDF tables (sh_idf.h),
 * and data of another version is refused with one line naming both, never
 * mixed in.  The hash key is not in it: the key has its own digest, kept
 * apart so that a refusal can say which of the two differs.
 *
 * The libxml2 behaviour class (sh_html.h, sh_libxml_class) groups the
 * releases whose HTML tokenizer gives the same text for the same bytes; it
 * is the class of the library loaded at run time, since that is the one
 * that reads the pages (2.14 rewrote the tokenizer to follow HTML5).
 */
#ifndef SH_VERSION_H
#define SH_VERSION_H

#include <stddef.h>
#include <stdint.h>

/* Bump with every change to the extraction code (tokens, weights, blocks). */
#define SH_EXTRACT_CODE     3u

/* A version from the code and a 64-bit digest of the options and class. */
uint32_t sh_version_make(uint64_t options_digest);

/* The code part of a version (its top byte). */
unsigned sh_version_code(uint32_t xv);

#define SH_VERSION_TEXT     9       /* 8 hex digits and the NUL */

/* "01a3f29c" into buf (SH_VERSION_TEXT bytes); returns buf. */
char *sh_version_format(char *buf, uint32_t xv);

/* 8 hex digits: 0, or -1. */
int sh_version_parse(uint32_t *xv, const char *s, size_t len);

#endif
