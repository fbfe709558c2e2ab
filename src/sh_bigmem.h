/*
 * sh_bigmem -- memory for large tables, on 2 MB pages where the kernel
 * allows it.
 *
 * The batch methods and BPHS's tables are gigabytes that are searched or
 * radix-sorted all over: on 4 KB pages every probe also pays a page walk.
 * With transparent huge pages in "madvise" mode, asking for them on an
 * aligned region removes most of those walks.  Small sizes (under 4 MB)
 * come from malloc as usual.  Either way the block is released by free().
 */
#ifndef SH_BIGMEM_H
#define SH_BIGMEM_H

#include <stddef.h>

/* SIZE bytes (at least 1), or NULL when out of memory. */
void *sh_big_alloc(size_t size);

#endif
