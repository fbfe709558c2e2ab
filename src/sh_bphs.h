/*
 * sh_bphs.h -- Block-Permuted Hamming Search (Manku, Jain & Das Sarma 2007,
 * section 3.1), the exact baseline the PSM index is measured against.
 *
 * The 64 bits are cut into G blocks; every choice of g blocks gives one
 * table holding all fingerprints with those blocks permuted to the top,
 * sorted.  Two fingerprints within distance h <= G - g agree on at least g
 * whole blocks, so they share the header of at least one table: a binary
 * search for x's header in each table, then a scan of the equal headers,
 * finds every match.  T = C(G, g) copies of the data: 4 tables (G=4, g=1),
 * 10 (G=5, g=2) or 20 (G=6, g=3) are Manku's Example 3.1 designs for h = 3.
 *
 * Build once (add, then build), then look up; not a dynamic structure.
 * Memory is on the heap; lookups are read-only and may run concurrently.
 */
#ifndef SH_BPHS_H
#define SH_BPHS_H

#include <stddef.h>
#include <stdint.h>

#include "sh_index.h"

#define SH_BPHS_GMAX    8

typedef struct sh_bphs_s sh_bphs_t;

/* G and g of the design with `tables` tables (4, 10 or 20); -1 if none. */
int sh_bphs_design(unsigned tables, unsigned *G, unsigned *g);

/*
 * The G blocks of the 64 bits, shared with the batch form
 * (sh_bphs_batch.h): block i is `width[i]` bits at `shift[i]`, block 0 on
 * top; as even as possible, the wider ones on top.
 */
void sh_bphs_blocks(unsigned G, unsigned *width, unsigned *shift);

/* Room for `capacity` fingerprints; 1 <= g < G <= SH_BPHS_GMAX. */
sh_bphs_t *sh_bphs_new(unsigned G, unsigned g, size_t capacity,
                       char *err, size_t errlen);
void sh_bphs_free(sh_bphs_t *b);

/* Add before building; -1 when full. */
int sh_bphs_add(sh_bphs_t *b, uint64_t hash, uint32_t ref);

/* Permute and sort every table; -1 when out of memory. */
int sh_bphs_build(sh_bphs_t *b);

/*
 * Same contract as sh_index_lookup (modes, max, return value); h must be
 * at most sh_bphs_hmax() for the search to be exact.  In mode ALL a pair
 * that shares the header of several tables is reported once.
 */
size_t sh_bphs_lookup(const sh_bphs_t *b, uint64_t hash, unsigned h,
                      sh_match_mode_t mode, sh_match_t *out, size_t max,
                      sh_lookup_stats_t *st);

unsigned sh_bphs_tables(const sh_bphs_t *b);
unsigned sh_bphs_hmax(const sh_bphs_t *b);
size_t   sh_bphs_count(const sh_bphs_t *b);
size_t   sh_bphs_fingerprint_bytes(const sh_bphs_t *b);   /* T x n x 8 */
size_t   sh_bphs_document_bytes(const sh_bphs_t *b);      /* T x n x 4 */

#endif
