/*
 * sh_index.h -- the PSM index (Sood & Loguinov 2011): near-duplicate lookup
 * in ONE copy of the fingerprints, probing bit-flip combinations of the top
 * t bits in decreasing probability order (VOSH, sh_vosh.h).
 *
 * The whole index lives in one caller-provided contiguous memory region and
 * holds offsets, never pointers: the same bytes work in an nginx shared
 * memory zone, in a snapshot file loaded back (sh_snapshot.h), and in a heap
 * buffer.  Capacity follows from the region size.
 *
 * Documents.  Each stored fingerprint belongs to a document identified by a
 * 32-bit reference `ref` in [0, capacity) chosen by the index on insert.  The
 * caller keeps its own per-document data (a URL, a path) in an array indexed
 * by ref.  The index keeps the documents in least-recently-inserted order;
 * when it is full an insert evicts the oldest document and reports its ref
 * (usually the ref it then reuses) so the caller can drop its data.
 *
 * Concurrency contract (nginx workers are processes sharing the region):
 *   - sh_index_lookup, sh_index_get, sh_index_foreach, sh_index_stats may run
 *     concurrently with each other under a SHARED lock held by the caller;
 *   - sh_index_insert, sh_index_remove, sh_index_touch need the EXCLUSIVE
 *     lock;
 *   - under this contract a reader never sees a half-written entry.  The
 *     index takes no lock itself.  The only writes a lookup makes are relaxed
 *     atomic increments of statistics counters and of the online volatility
 *     learner (sh_volatility.h), which tolerate concurrent readers.
 */
#ifndef SH_INDEX_H
#define SH_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "sh_match.h"
#include "sh_volatility.h"

#define SH_NOREF        UINT32_MAX
/* SH_H_MAX, SH_H_DEFAULT: the radius, sh_match.h */

typedef struct sh_index_s sh_index_t;   /* the region, seen as an index */

typedef enum {
    SH_MATCH_FIRST = 0,     /* PSM_F: stop at the first match */
    SH_MATCH_ALL,           /* PSM_A: every match within h */
    SH_MATCH_CLOSEST        /* the best match: the smallest distance (hamming
                               rule) or score (weighted rule) */
} sh_match_mode_t;

typedef struct {
    uint32_t ref;
    uint32_t distance;
    uint64_t hash;
    uint32_t score;         /* under the query's weights (sh_match.h);
                               UINT32_MAX from BPHS, which has none */
} sh_match_t;

typedef struct {
    unsigned  h;            /* hamming rule: the radius, 0..SH_H_MAX;
                               weighted: the cap on H, 0..SH_MATCH_HMAX
                               (header subsets of at most SH_H_MAX bits
                               are probed) */
    sh_rule_t rule;         /* what a match is (sh_match.h) */
    uint32_t  threshold;    /* weighted rule: T in score units */
    sh_match_mode_t mode;
    unsigned  probes;       /* k: VOSH subsets probed after x itself;
                               0 = derive from `recall` */
    float     recall;       /* target relative recall for k(t), e.g. 0.95 */
    const sh_volatility_t *vol;   /* NULL = the built-in table */
    int       learn;        /* 1: feed confirmed matches to the region's
                               online learner (sh_index_learn_counts) */
} sh_lookup_opts_t;

#define SH_PROBES_MAX   4096    /* cap on k, VOSH subsets per lookup */

/* Documents of one exact fingerprint that lookups return at most (the
 * others are stored, not searched: see sh_index.c, "shadows"). */
#define SH_INDEX_RUN_MAX    64u

typedef struct {
    uint32_t probes;        /* buckets probed, x itself included */
    uint32_t scanned;       /* entries compared */
} sh_lookup_stats_t;

typedef struct {
    uint32_t capacity;      /* documents */
    uint32_t entries;       /* documents stored now */
    uint32_t t;             /* header bits */
    uint64_t evictions;
    uint64_t lookups;
    uint64_t probes;        /* total over all lookups */
    size_t   fingerprint_bytes; /* the fingerprint structure: table of hashes */
    size_t   document_bytes;    /* refs, age order and per-document data */
    size_t   region_bytes;
} sh_index_stats_t;

/* h=3, hamming, FIRST, recall .95 */
void sh_lookup_opts_init(sh_lookup_opts_t *o);

/* The match settings of `o` (rule, h, threshold, volatility table). */
void sh_lookup_match_opts(const sh_lookup_opts_t *o, sh_match_opts_t *m);

/* Region size needed for `capacity` documents, and the inverse. */
size_t   sh_index_region_size(uint32_t capacity);
uint32_t sh_index_capacity_for(size_t region_bytes);

/* The header width t an index of `capacity` documents is given by default
 * (floor(log2 capacity) - 1, see sh_index.c); the batch (sh_psm_batch.h)
 * uses the same rule. */
unsigned sh_index_t_for(size_t capacity);

/*
 * Format `region` as an empty index.  `t` = 0 chooses t from the capacity
 * (about log2 capacity).  `seed_digest` (sh_config_seed_digest) is recorded so
 * that a region built under another hash key is refused later.
 * Returns NULL and a message in err on error (region too small, ...).
 */
sh_index_t *sh_index_init(void *region, size_t size, unsigned t,
                          uint64_t seed_digest, char *err, size_t errlen);

/* Validate an existing region (after a reload or a snapshot load). */
sh_index_t *sh_index_attach(void *region, size_t size, char *err,
                            size_t errlen);

/*
 * Insert fingerprint `hash` as a new document; returns its ref, and in
 * *evicted the ref of the document evicted to make room (SH_NOREF if none).
 * SH_NOREF only if the region is damaged (see sh_index_check).
 */
uint32_t sh_index_insert(sh_index_t *ix, uint64_t hash, uint32_t *evicted);

/* Replace the fingerprint of document `ref` and make it the newest. */
int sh_index_update(sh_index_t *ix, uint32_t ref, uint64_t hash);

/* Make document `ref` the newest (it was seen again). */
int sh_index_touch(sh_index_t *ix, uint32_t ref);

/* Remove document `ref`; -1 if it is not stored. */
int sh_index_remove(sh_index_t *ix, uint32_t ref);

/* Fingerprint of document `ref`; -1 if it is not stored. */
int sh_index_get(const sh_index_t *ix, uint32_t ref, uint64_t *hash);

/*
 * Documents that match `hash` under the rule of `opts` (sh_match.h), whose
 * per-bit weights are `weights` (sh_result_t.weights; NULL = treat all bits
 * as equally volatile).  Writes at most `max` matches (mode ALL keeps
 * counting past max) and returns the number found.  A lookup changes only
 * the region's statistics and learner counts (relaxed atomic increments:
 * see the concurrency contract above), hence the non-const index.
 */
size_t sh_index_lookup(sh_index_t *ix, uint64_t hash,
                       const float *weights, const sh_lookup_opts_t *opts,
                       sh_match_t *out, size_t max, sh_lookup_stats_t *st);

/* Visit every document, oldest first; stop early when fn returns non-zero. */
typedef int (*sh_index_visit_fn)(void *arg, uint32_t ref, uint64_t hash);
void sh_index_foreach(const sh_index_t *ix, sh_index_visit_fn fn, void *arg);

void sh_index_stats(const sh_index_t *ix, sh_index_stats_t *st);

/* Full structural check (sortedness, counts, age list); 0 if consistent. */
int sh_index_check(const sh_index_t *ix, char *err, size_t errlen);

uint64_t sh_index_seed_digest(const sh_index_t *ix);

/*
 * The extraction version of the fingerprints held (sh_version.h), recorded
 * like the seed digest and saved with the index; 0 = unknown (an index of
 * an earlier release, or one that has not been told).
 */
void     sh_index_set_version(sh_index_t *ix, uint32_t version);
uint32_t sh_index_version(const sh_index_t *ix);

/* The probes a lookup with `opts` will make after x itself (k). */
unsigned sh_index_probes_for(const sh_index_t *ix,
                             const sh_lookup_opts_t *opts);

/* Counts of the online volatility learner kept in the region (see
 * sh_learn_observe); sh_volatility_learned() turns them into a table. */
void sh_index_learn_counts(const sh_index_t *ix, sh_learn_counts_t *c);
void sh_index_learn_reset(sh_index_t *ix);

/*
 * For a caller that copies the documents out in slices while the index
 * keeps changing (sh_image.h): the age neighbours of a stored
 * document, older and newer (SH_NOREF at either end), the ends of the
 * order, and the per-document records themselves.
 */
int sh_index_links(const sh_index_t *ix, uint32_t ref, uint32_t *older,
                   uint32_t *newer);

typedef struct {
    uint32_t hwm;           /* refs [0, hwm) handed out so far */
    uint32_t entries;
    uint32_t oldest;
    uint32_t newest;
    uint32_t free_head;     /* free refs below hwm, linked through newer */
} sh_index_ends_t;

void sh_index_ends(const sh_index_t *ix, sh_index_ends_t *e);

#define SH_INDEX_FREE   0xFFFFFFFEu     /* older of a free ref */

typedef struct {
    uint64_t hash;
    uint32_t older;         /* SH_INDEX_FREE: the ref is free */
    uint32_t newer;         /* of a free ref: the next free one */
} sh_index_doc_t;

/* Copy the records of refs [from, from + n) (all below the hwm). */
void sh_index_export(const sh_index_t *ix, uint32_t from, uint32_t n,
                     sh_index_doc_t *out);

/* The records of a freshly formatted index, to be written before an
 * import that passes docs = NULL (they are then read in place). */
sh_index_doc_t *sh_index_import_area(sh_index_t *ix);

/*
 * Scratch for a bulk build that comes before an import: the table arrays
 * of a freshly formatted index hold *n pairs (uint64_t, uint32_t), which
 * the import then rewrites whole (the store's key table is built there
 * while a zone loads, with no fresh memory: sh_radix.h).  NULL if the
 * index is not empty.  Anything but an import after its use leaves the
 * index to be formatted again.
 */
uint64_t *sh_index_scratch(sh_index_t *ix, uint32_t **values, uint32_t *n);

/*
 * Fill a freshly formatted index whose capacity is at least e->hwm with
 * exported records and ends: the fingerprint table is rebuilt from them.
 * -1 and a message if they are not consistent (a damaged copy); the index
 * must then be formatted again.
 */
int sh_index_import(sh_index_t *ix, const sh_index_doc_t *docs,
                    const sh_index_ends_t *e, char *err, size_t errlen);

#endif
