/*
 * ix_edit.h -- realistic edits of a real page, to make near-duplicates
 * whose ground truth is known: what a crawler sees when a site changes a
 * page a little between two fetches.
 */
#ifndef IX_EDIT_H
#define IX_EDIT_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    IX_EDIT_PARA_INSERT = 0,    /* a paragraph from another page added */
    IX_EDIT_PARA_REMOVE,        /* one paragraph removed */
    IX_EDIT_DATES,              /* digits (dates, counters, versions)
                                   changed, an "updated ... views" line */
    IX_EDIT_AD,                 /* an advertisement block added */
    IX_EDIT_NTYPES
} ix_edit_t;

const char *ix_edit_name(ix_edit_t e);

/*
 * The edited copy of html (malloc'd, *outlen bytes); `donor` is another
 * page for paragraph insertion (may be NULL).  NULL when out of memory.
 */
char *ix_edit_page(const char *html, size_t len, ix_edit_t e,
                   const char *donor, size_t dlen, uint64_t *rng,
                   size_t *outlen);

/* Read a whole file; NULL on error (message printed). */
char *ix_read_file(const char *path, size_t *len);

static inline uint64_t
ix_rand(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

#endif
