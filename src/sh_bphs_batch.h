/*
 * sh_bphs_batch.h -- every near-duplicate pair of a batch, exactly: the
 * batch form of Manku, Jain & Das Sarma's table method (2007, section 3.3).
 *
 * The online form (sh_bphs.h) keeps T permuted sorted copies and answers
 * one query at a time with a binary search per table.  A batch that is
 * compared with itself needs neither the copies nor the searches: for each
 * of the T tables in turn, the fingerprints are grouped by that table's
 * header (g of the G blocks) in one counting-sort pass, and every group is
 * compared within itself.  Two fingerprints within distance h <= G - g
 * agree on at least g whole blocks, so they meet in the group of at least
 * one table; the pair is reported by the first such table only, so each
 * pair comes out once.  One table exists at a time: the scratch memory is
 * one copy of the batch, whatever T.
 *
 * Input and output are indices into the caller's array of fingerprints;
 * equal fingerprints are separate documents (distance 0 pairs).
 */
#ifndef SH_BPHS_BATCH_H
#define SH_BPHS_BATCH_H

#include <stddef.h>
#include <stdint.h>

/* One pair a < b at distance d; a non-zero return stops the search. */
typedef int (*sh_pair_fn)(void *arg, uint32_t a, uint32_t b, unsigned d);

typedef struct {
    uint64_t compared;      /* candidate pairs whose distance was computed */
    uint64_t pairs;         /* pairs reported */
    size_t   scratch_bytes; /* the largest scratch memory held at once */
} sh_bphs_batch_stats_t;

/*
 * Report every pair of hash[0..n) within distance h, with the design of
 * G blocks and headers of g blocks (1 <= g < G <= SH_BPHS_GMAX, h <= G - g,
 * T = C(G, g) passes; sh_bphs_design() gives Manku's ones for h = 3).
 * Returns 0, 1 when fn stopped it, -1 with a message in err (bad design,
 * out of memory, n >= 2^32).
 */
int sh_bphs_batch(const uint64_t *hash, size_t n, unsigned G, unsigned g,
                  unsigned h, sh_pair_fn fn, void *arg,
                  sh_bphs_batch_stats_t *st, char *err, size_t errlen);

#endif
