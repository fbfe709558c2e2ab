/*
 * sh_radix.h -- sorting (key, value) pairs held in two parallel arrays, in
 * place: the bulk builds of tables whose slots follow the key's order
 * (sh_index_import, the store's key table), where inserting n keys one by
 * one would cost n cache misses.
 *
 * In place because the arrays are the tables' own memory: a load of a
 * 2^27-document zone would otherwise take 4 GB of fresh scratch, and on a
 * virtual machine the first write of fresh memory runs at 0.3-0.5 GB/s
 * (BENCHMARKS.md), slower than everything else the load does.
 */
#ifndef SH_RADIX_H
#define SH_RADIX_H

#include <stddef.h>
#include <stdint.h>

/*
 * Sort key[0..n) ascending, value[i] moving with key[i]; equal keys in
 * ascending order of their values (so the order is fully determined: a
 * caller whose values are distinct gets one result whatever the input
 * order).  Allocates nothing, cannot fail; at most 12 passes over any
 * part of the arrays, whatever the keys.
 */
void sh_radix_sort(uint64_t *key, uint32_t *value, size_t n);

#endif
