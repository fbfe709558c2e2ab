/*
 * sh_radix.h -- sorting (key, value) pairs by their 64-bit key: an LSD
 * radix sort, 11 bits a pass, for the bulk builds of tables whose slots
 * follow the key's order (sh_index_import, the store's key table), where
 * inserting n keys one by one would cost n cache misses.
 */
#ifndef SH_RADIX_H
#define SH_RADIX_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t key;
    uint32_t value;
    uint32_t spare;
} sh_pair_t;

/* Sort a[0..n) by key, ascending, stable; 0, or -1 when out of memory (a
 * is then unchanged). */
int sh_radix_sort(sh_pair_t *a, size_t n);

#endif
