/*
 * page_edit.h -- realistic edits of a real page, to make near-duplicates
 * whose ground truth is known: what a crawler sees when a site changes a
 * page a little between two fetches.
 */
#ifndef PAGE_EDIT_H
#define PAGE_EDIT_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    PAGE_EDIT_PARA_INSERT = 0,    /* a paragraph from another page added */
    PAGE_EDIT_PARA_REMOVE,        /* one paragraph removed */
    PAGE_EDIT_DATES,              /* digits (dates, counters, versions)
                                   changed, an "updated ... views" line */
    PAGE_EDIT_AD,                 /* an advertisement block added */
    PAGE_EDIT_NTYPES
} page_edit_t;

const char *page_edit_name(page_edit_t e);

/*
 * The edited copy of html (malloc'd, *outlen bytes); `donor` is another
 * page for paragraph insertion (may be NULL).  NULL when out of memory.
 */
char *page_edit_page(const char *html, size_t len, page_edit_t e,
                   const char *donor, size_t dlen, uint64_t *rng,
                   size_t *outlen);

/* Read a whole file; NULL on error (message printed). */
char *page_read_file(const char *path, size_t *len);

static inline uint64_t
page_rand(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

#endif
