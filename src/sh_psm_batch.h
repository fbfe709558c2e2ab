/*
 * sh_psm_batch.h -- the near-duplicate pairs of a batch by PSM (Sood &
 * Loguinov 2011): one copy of the batch sorted by its top t bits, and
 * every page probes its own bucket and the k buckets VOSH ranks next for
 * its weights, as a lookup in the PSM index would (sh_index.h).
 *
 * What a batch adds to the online lookup: every page probes, so a pair is
 * found when EITHER page's probes reach the other's bucket; the index,
 * streaming a batch through lookup-then-insert, only counts the later
 * page's probes.  k is still the index's (the calibrated k for recall R,
 * one side alone), so the batch finds every pair the index would and
 * more.  Counting the two chances as independent (k for 1 - sqrt(1 - R))
 * was measured wrong: both pages of a pair have the same volatile bits,
 * so one misses where the other does, and that k found 0.77 of the pairs
 * on documentation pages and 0.91 on mail for R = 0.95 (docs/QUALITY.md,
 * issue 35).  Each pair is still reported once: the probe masks of every
 * page are computed first, so the earlier page knows whether the later
 * one will find the pair too.
 *
 * Approximate: the pairs are a subset of the exact ones (sh_bphs_batch.h).
 */
#ifndef SH_PSM_BATCH_H
#define SH_PSM_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "sh_bphs_batch.h"
#include "sh_index.h"

typedef struct {
    unsigned t;             /* header bits used */
    unsigned k;             /* probes per page after its own bucket */
    uint64_t probes;        /* buckets probed, own ones included */
    uint64_t compared;      /* entries whose distance was computed */
    uint64_t pairs;
    size_t   scratch_bytes;
} sh_psm_batch_stats_t;

/* k for a target recall: the index's k, one side alone (see above). */
unsigned sh_psm_batch_probes_for(const sh_lookup_opts_t *o, unsigned t);

/* The header bits for a batch of n: the index's rule (sh_index_init). */
unsigned sh_psm_batch_t_for(size_t n);

/*
 * Report the pairs a < b of hash[0..n) that the probes find and that match
 * under o's rule (sh_match.h; the weighted rule judges with page b's
 * weights, as the index does with a batch streamed through it); w[i] are
 * page i's weights (NULL: all bits alike), o->mode is ignored (every
 * match), o->probes = 0 takes k from o->recall, t = 0 from n.  Returns 0,
 * 1 when fn stopped it, -1 with a message in err.
 */
int sh_psm_batch(const uint64_t *hash, const float *const *w, size_t n,
                 const sh_lookup_opts_t *o, unsigned t, sh_pair_fn fn,
                 void *arg, sh_psm_batch_stats_t *st, char *err,
                 size_t errlen);

#endif
