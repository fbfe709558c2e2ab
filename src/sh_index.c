/*
 * sh_index.c -- the PSM index in one relocatable region.
 *
 * Layout (every part 64-byte aligned, located by offsets in the header):
 *
 *   header   parameters, counters, age list ends, the learner's counts
 *   slots    uint64_t[nslots]  fingerprints: a sorted array with gaps
 *   refs     uint32_t[nslots]  the document of each slot, SH_NOREF = empty
 *   docs     sh_docrec_t[capacity]  per document: fingerprint, age links
 *
 * The fingerprint structure is an ordered linear-probing table.  The home
 * slot of a fingerprint v is ((v >> 32) * m) >> 32, which is monotone in v,
 * and the slots hold the fingerprints in increasing order with empty slots
 * in between.  Three invariants make a lookup one short forward scan:
 *
 *   (sorted)  the occupied slots, read left to right, are non-decreasing;
 *   (home)    an entry sits at or after its home slot, with no empty slot
 *             between its home and itself -- except entries at or after
 *             `spill`, see below;
 *   (empty)   empty slots hold UINT64_MAX in `slots`, so a reader skips
 *             them without touching `refs`.
 *
 * So all fingerprints with top-t prefix P lie in one contiguous run that
 * starts at or after home(P << (64 - t)); entries of smaller prefixes that
 * spilled over are skipped, and the scan stops at the first larger value,
 * or at an empty slot past the prefix's last home slot.  With m = 1.22 x
 * capacity the run is a few slots: one cache line, one miss.  This is the
 * paper's header table and sorted array in one: the "header" is implicit
 * in the home function, so it costs no memory and t is free to choose.
 *
 * Insertion shifts the rest of a run right by one, removal pulls the
 * following entries back (backward-shift deletion), as in any ordered
 * linear-probing table.  The table does not wrap: a tail of spare slots
 * after the last home slot absorbs the run that spills off the end.  If a
 * pathological input (thousands of equal fingerprints near 2^64) fills even
 * the tail, the insert shifts a run LEFT instead, which may put entries
 * before their home; `spill` remembers the lowest slot where that can be,
 * and every scan starting beyond it starts there instead.  Correct always,
 * slow only for such inputs.
 *
 * Equal fingerprints (one soft-404 page under many URLs, or stream entries
 * that all carry one) would form one run that every insert of the same
 * value steps through, and that pushes every entry homed inside it further
 * right: k of them cost O(k^2) under the zone's lock.  So the table holds
 * at most RUN_MAX (64) documents of one fingerprint; further ones are stored
 * (refs, age order, sh_index_get) but not in the table, as SHADOWS: a
 * lookup finds their fingerprint through the RUN_MAX that are, and that is
 * all a near-duplicate decision needs.  A shadow whose table copies were
 * all evicted or removed is found by no lookup until the fingerprint is
 * inserted again (it is then the next page with it that is `new`).
 * The age order (oldest first, for eviction and sh_index_foreach) is a
 * doubly linked list through the document records; free refs form a list
 * too, and refs never handed out yet are counted by a high-water mark so
 * that formatting a region does not touch the document array.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh_err.h"
#include "sh_popcnt.h"
#include "sh_radix.h"
#include "sh_index.h"
#include "sh_vosh.h"

#define IX_MAGIC        "SHINDEX"
#define IX_VERSION      1u
#define IX_ENDIAN       0x01020304u
#define EMPTY           UINT64_MAX
#define REF_FREE        0xFFFFFFFEu     /* docs[ref].prev of a free ref */
#define T_MAX           40u
#define RUN_MAX         SH_INDEX_RUN_MAX
#define IMPORT_CHECK_MAX (1u << 22)  /* imports checked in full */

/*
 * Slots an insert looks at, counted only in a build that defines
 * SH_INDEX_STEPS (tests/unit/test_index_run.c): how the tests tell a
 * bounded insert from a linear one without a clock.
 */
#ifdef SH_INDEX_STEPS
static unsigned long long sh_index_steps;
#define STEPS(n)        (sh_index_steps += (n))
#else
#define STEPS(n)        ((void) 0)
#endif

typedef struct {
    uint64_t hash;
    uint32_t prev;          /* older neighbour, SH_NOREF at the oldest */
    uint32_t next;          /* newer neighbour; next free ref when free */
} sh_docrec_t;

struct sh_index_s {
    char     magic[8];
    uint32_t version;
    uint32_t endian;
    uint32_t header_size;
    uint32_t capacity;
    uint32_t t;
    uint32_t m;             /* home slots */
    uint32_t nslots;        /* home slots + tail */
    uint32_t entries;
    uint32_t hwm;           /* refs [0, hwm) have been handed out */
    uint32_t free_head;     /* free refs below hwm */
    uint32_t oldest;
    uint32_t newest;
    uint32_t spill;         /* lowest slot that may precede its home */
    uint32_t extraction;    /* extraction version, sh_version.h */
    uint64_t region_size;
    uint64_t seed_digest;
    uint64_t off_slots;
    uint64_t off_refs;
    uint64_t off_docs;
    uint64_t evictions;
    uint64_t lookups;       /* relaxed atomics: readers update them */
    uint64_t probes;
    sh_learn_counts_t learn;
};

#define ALIGN64(x)  (((x) + 63) & ~(uint64_t) 63)

static inline uint64_t *
ix_slots(const sh_index_t *ix)
{
    return (uint64_t *) ((char *) ix + ix->off_slots);
}

static inline uint32_t *
ix_refs(const sh_index_t *ix)
{
    return (uint32_t *) ((char *) ix + ix->off_refs);
}

static inline sh_docrec_t *
ix_docs(const sh_index_t *ix)
{
    return (sh_docrec_t *) ((char *) ix + ix->off_docs);
}

static inline uint32_t
ix_home(const sh_index_t *ix, uint64_t v)
{
    return (uint32_t) (((v >> 32) * (uint64_t) ix->m) >> 32);
}

/* ---- Sizes. ---- */

/*
 * 22% spare home slots: load 0.82 at full capacity keeps runs at a few
 * slots while the fingerprint bytes stay at 1.22 x 8 per document, inside
 * the paper's range of 1.06 to 2 "tables".  The tail only ever fills for
 * clustered fingerprints at the very top of the space.
 */
static void
geometry(uint32_t capacity, uint32_t *m, uint32_t *nslots)
{
    uint64_t hm = (uint64_t) capacity + (uint64_t) capacity * 22 / 100 + 8;
    uint64_t tail = 64 + (uint64_t) capacity / 1024;

    *m = (uint32_t) hm;
    *nslots = (uint32_t) (hm + tail);
}

#define CAPACITY_MAX    (1u << 31)

size_t
sh_index_region_size(uint32_t capacity)
{
    uint32_t m, nslots;

    if (capacity == 0 || capacity > CAPACITY_MAX) {
        return 0;
    }
    geometry(capacity, &m, &nslots);
    return (size_t) (ALIGN64(sizeof(sh_index_t))
                     + ALIGN64((uint64_t) nslots * 8)
                     + ALIGN64((uint64_t) nslots * 4)
                     + ALIGN64((uint64_t) capacity * sizeof(sh_docrec_t)));
}

uint32_t
sh_index_capacity_for(size_t region_bytes)
{
    uint32_t lo = 0, hi = CAPACITY_MAX;

    /* The size is monotone in the capacity: binary search the largest
     * capacity that fits. */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;

        if (sh_index_region_size(mid) <= region_bytes) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

unsigned
sh_index_t_for(size_t capacity)
{
    unsigned t = 0;

    /*
     * floor(log2 capacity) - 1: a prefix covers about 2.4 home slots, still
     * one cache line per probe.  The PSM paper finds t = log2 n best
     * (section 7.3), but there every header bit costs a table entry; here
     * the header is free, and one bit less cuts the probes needed for 95%
     * recall by about a tenth at a slightly longer scan: measured 10%
     * faster at 2^24 on the rust-doc workload (BENCHMARKS.md).
     */
    while (t < 32 && (2ull << t) <= capacity) {
        t++;
    }
    return t <= 2 ? 1 : t - 1;
}

/* ---- Format and attach. ---- */

/* Every slot empty. */
static void
table_clear(sh_index_t *ix)
{
    uint64_t *slots = ix_slots(ix);
    uint32_t *refs = ix_refs(ix);
    uint32_t  i;

    for (i = 0; i < ix->nslots; i++) {
        slots[i] = EMPTY;
        refs[i] = SH_NOREF;
    }
}

sh_index_t *
sh_index_init(void *region, size_t size, unsigned t, uint64_t seed_digest,
              char *err, size_t errlen)
{
    sh_index_t *ix = region;
    uint32_t    capacity, m, nslots;

    if (region == NULL || ((uintptr_t) region & 7) != 0) {
        sh_err_set(err, errlen, "index region must be 8-byte aligned");
        return NULL;
    }
    capacity = sh_index_capacity_for(size);
    if (capacity == 0) {
        sh_err_set(err, errlen, "index region too small for one document");
        return NULL;
    }
    if (t > T_MAX) {
        sh_err_set(err, errlen, "header bits t must be at most 40");
        return NULL;
    }
    geometry(capacity, &m, &nslots);

    memset(ix, 0, sizeof(*ix));
    memcpy(ix->magic, IX_MAGIC, sizeof(IX_MAGIC));
    ix->version = IX_VERSION;
    ix->endian = IX_ENDIAN;
    ix->header_size = (uint32_t) sizeof(sh_index_t);
    ix->capacity = capacity;
    ix->t = t ? t : sh_index_t_for(capacity);
    ix->m = m;
    ix->nslots = nslots;
    ix->free_head = SH_NOREF;
    ix->oldest = SH_NOREF;
    ix->newest = SH_NOREF;
    ix->spill = nslots;
    ix->region_size = sh_index_region_size(capacity);
    ix->seed_digest = seed_digest;
    ix->off_slots = ALIGN64(sizeof(sh_index_t));
    ix->off_refs = ix->off_slots + ALIGN64((uint64_t) nslots * 8);
    ix->off_docs = ix->off_refs + ALIGN64((uint64_t) nslots * 4);

    table_clear(ix);
    return ix;
}

sh_index_t *
sh_index_attach(void *region, size_t size, char *err, size_t errlen)
{
    sh_index_t *ix = region;
    uint32_t    m, nslots;

    if (region == NULL || ((uintptr_t) region & 7) != 0) {
        sh_err_set(err, errlen, "index region must be 8-byte aligned");
        return NULL;
    }
    if (size < sizeof(sh_index_t)
        || memcmp(ix->magic, IX_MAGIC, sizeof(IX_MAGIC)) != 0)
    {
        sh_err_set(err, errlen, "not an index region (bad magic)");
        return NULL;
    }
    if (ix->endian != IX_ENDIAN) {
        sh_err_set(err, errlen, "index region has foreign byte order");
        return NULL;
    }
    if (ix->version != IX_VERSION || ix->header_size != sizeof(sh_index_t)) {
        sh_err_set(err, errlen, "index region of another format version");
        return NULL;
    }
    /* Every derived quantity must be what init would have computed, so
     * that no offset or count can point outside the region. */
    if (ix->capacity == 0 || ix->capacity > CAPACITY_MAX
        || ix->region_size != sh_index_region_size(ix->capacity)
        || ix->region_size > size)
    {
        sh_err_set(err, errlen, "index region size does not match its "
                   "capacity");
        return NULL;
    }
    geometry(ix->capacity, &m, &nslots);
    if (ix->m != m || ix->nslots != nslots || ix->t < 1 || ix->t > T_MAX
        || ix->off_slots != ALIGN64(sizeof(sh_index_t))
        || ix->off_refs != ix->off_slots + ALIGN64((uint64_t) nslots * 8)
        || ix->off_docs != ix->off_refs + ALIGN64((uint64_t) nslots * 4)
        || ix->entries > ix->capacity || ix->hwm > ix->capacity
        || ix->entries > ix->hwm || ix->spill > nslots
        || (ix->free_head != SH_NOREF && ix->free_head >= ix->hwm)
        || (ix->oldest != SH_NOREF && ix->oldest >= ix->hwm)
        || (ix->newest != SH_NOREF && ix->newest >= ix->hwm)
        || ((ix->entries == 0) != (ix->oldest == SH_NOREF))
        || ((ix->entries == 0) != (ix->newest == SH_NOREF)))
    {
        sh_err_set(err, errlen, "index region header is inconsistent");
        return NULL;
    }
    return ix;
}

uint64_t
sh_index_seed_digest(const sh_index_t *ix)
{
    return ix->seed_digest;
}

void
sh_index_set_version(sh_index_t *ix, uint32_t version)
{
    ix->extraction = version;
}

uint32_t
sh_index_version(const sh_index_t *ix)
{
    return ix->extraction;
}

/* ---- The table. ---- */

static void
table_put(sh_index_t *ix, uint32_t s, uint64_t v, uint32_t ref)
{
    ix_slots(ix)[s] = v;
    ix_refs(ix)[s] = ref;
}

/* RUN_MAX slots from s (which holds v) all hold v. */
static int
run_full(const sh_index_t *ix, uint32_t s, uint64_t v)
{
    const uint64_t *sl = ix_slots(ix);
    const uint32_t *rf = ix_refs(ix);
    uint32_t        i;

    if (ix->nslots - s < RUN_MAX) {
        return 0;
    }
    for (i = 1; i < RUN_MAX; i++) {
        STEPS(1);
        if (rf[s + i] == SH_NOREF || sl[s + i] != v) {
            return 0;
        }
    }
    return 1;
}

/* 1: (v, ref) is in the table; 0: it is a shadow (RUN_MAX copies of v are
 * there already). */
static int
table_insert(sh_index_t *ix, uint64_t v, uint32_t ref)
{
    uint64_t *sl = ix_slots(ix);
    uint32_t *rf = ix_refs(ix);
    uint32_t  n = ix->nslots;
    uint32_t  hv = ix_home(ix, v);
    uint32_t  s = hv < ix->spill ? hv : ix->spill;
    uint32_t  e;

    /* Find the sorted position: after every entry <= v.  An empty slot at
     * or past home ends the search there; one before home is skipped (it
     * can only be met when starting early at `spill`). */
    while (s < n) {
        STEPS(1);
        if (rf[s] == SH_NOREF) {
            if (s >= hv) {
                table_put(ix, s, v, ref);
                return 1;
            }
            s++;
        } else if (sl[s] < v) {
            s++;
        } else if (sl[s] == v) {
            if (run_full(ix, s, v)) {
                return 0;
            }
            s++;
        } else {
            break;
        }
    }

    /* Make room by shifting the run starting at s right by one. */
    for (e = s; e < n && rf[e] != SH_NOREF; e++) {
        STEPS(1);
    }
    if (e < n) {
        memmove(sl + s + 1, sl + s, (size_t) (e - s) * sizeof(*sl));
        memmove(rf + s + 1, rf + s, (size_t) (e - s) * sizeof(*rf));
        table_put(ix, s, v, ref);
        return 1;
    }

    /* The table is full from s to its end: shift left into the nearest
     * empty slot before s instead (one exists: entries < nslots). */
    for (e = s; e > 0 && rf[e - 1] != SH_NOREF; e--) {
    }
    e--;
    memmove(sl + e, sl + e + 1, (size_t) (s - 1 - e) * sizeof(*sl));
    memmove(rf + e, rf + e + 1, (size_t) (s - 1 - e) * sizeof(*rf));
    table_put(ix, s - 1, v, ref);
    if (e < ix->spill) {
        ix->spill = e;
    }
    return 1;
}

/* Slot of (v, ref), or -1. */
static int64_t
table_find(const sh_index_t *ix, uint64_t v, uint32_t ref)
{
    const uint64_t *sl = ix_slots(ix);
    const uint32_t *rf = ix_refs(ix);
    uint32_t hv = ix_home(ix, v);
    uint32_t s = hv < ix->spill ? hv : ix->spill;

    for (; s < ix->nslots; s++) {
        if (rf[s] == SH_NOREF) {
            if (s >= hv) {
                return -1;
            }
            continue;
        }
        if (sl[s] < v) {
            continue;
        }
        if (sl[s] > v) {
            return -1;
        }
        if (rf[s] == ref) {
            return s;
        }
    }
    return -1;
}

/* Backward-shift deletion: pull back the following entries that may sit
 * earlier, so that no entry is separated from its home by a hole. */
static void
table_delete(sh_index_t *ix, uint32_t s)
{
    uint64_t *sl = ix_slots(ix);
    uint32_t *rf = ix_refs(ix);
    uint32_t  n = ix->nslots;

    while (s + 1 < n && rf[s + 1] != SH_NOREF
           && ix_home(ix, sl[s + 1]) <= s)
    {
        sl[s] = sl[s + 1];
        rf[s] = rf[s + 1];
        s++;
    }
    sl[s] = EMPTY;
    rf[s] = SH_NOREF;
}

/* ---- Documents and their age order. ---- */

static void
age_unlink(sh_index_t *ix, uint32_t ref)
{
    sh_docrec_t *d = ix_docs(ix);

    if (d[ref].prev != SH_NOREF) {
        d[d[ref].prev].next = d[ref].next;
    } else {
        ix->oldest = d[ref].next;
    }
    if (d[ref].next != SH_NOREF) {
        d[d[ref].next].prev = d[ref].prev;
    } else {
        ix->newest = d[ref].prev;
    }
}

static void
age_append(sh_index_t *ix, uint32_t ref)
{
    sh_docrec_t *d = ix_docs(ix);

    d[ref].prev = ix->newest;
    d[ref].next = SH_NOREF;
    if (ix->newest != SH_NOREF) {
        d[ix->newest].next = ref;
    } else {
        ix->oldest = ref;
    }
    ix->newest = ref;
}

static int
ref_live(const sh_index_t *ix, uint32_t ref)
{
    return ref < ix->hwm && ix_docs(ix)[ref].prev != REF_FREE;
}

int
sh_index_remove(sh_index_t *ix, uint32_t ref)
{
    sh_docrec_t *d = ix_docs(ix);
    int64_t      s;

    if (!ref_live(ix, ref)) {
        return -1;
    }
    s = table_find(ix, d[ref].hash, ref);
    if (s >= 0) {
        table_delete(ix, (uint32_t) s);
    }
    age_unlink(ix, ref);
    d[ref].prev = REF_FREE;
    d[ref].next = ix->free_head;
    ix->free_head = ref;
    ix->entries--;
    if (ix->entries == 0) {
        ix->spill = ix->nslots;     /* nothing can precede its home now */
    }
    return 0;                       /* in the table, or a shadow */
}

uint32_t
sh_index_insert(sh_index_t *ix, uint64_t hash, uint32_t *evicted)
{
    sh_docrec_t *d = ix_docs(ix);
    uint32_t     ref;

    if (evicted != NULL) {
        *evicted = SH_NOREF;
    }
    if (ix->entries == ix->capacity) {
        uint32_t old = ix->oldest;

        sh_index_remove(ix, old);
        ix->evictions++;
        if (evicted != NULL) {
            *evicted = old;
        }
    }
    if (ix->free_head != SH_NOREF && ix->free_head < ix->hwm) {
        ref = ix->free_head;
        ix->free_head = d[ref].next;
    } else if (ix->hwm == ix->capacity) {
        /* Only a damaged free list gets here (entries < capacity, every
         * ref handed out, none free): refuse rather than write out of
         * bounds; sh_index_check() says what is wrong. */
        ix->free_head = SH_NOREF;
        return SH_NOREF;
    } else {
        ref = ix->hwm++;
    }
    d[ref].hash = hash;
    age_append(ix, ref);
    (void) table_insert(ix, hash, ref);     /* or a shadow: stored all the
                                               same */
    ix->entries++;
    return ref;
}

int
sh_index_update(sh_index_t *ix, uint32_t ref, uint64_t hash)
{
    sh_docrec_t *d = ix_docs(ix);
    int64_t      s;

    if (!ref_live(ix, ref)) {
        return -1;
    }
    s = table_find(ix, d[ref].hash, ref);
    if (s >= 0) {
        table_delete(ix, (uint32_t) s);
    }
    d[ref].hash = hash;
    table_insert(ix, hash, ref);
    age_unlink(ix, ref);
    age_append(ix, ref);
    return 0;
}

int
sh_index_touch(sh_index_t *ix, uint32_t ref)
{
    if (!ref_live(ix, ref)) {
        return -1;
    }
    age_unlink(ix, ref);
    age_append(ix, ref);
    return 0;
}

int
sh_index_get(const sh_index_t *ix, uint32_t ref, uint64_t *hash)
{
    if (!ref_live(ix, ref)) {
        return -1;
    }
    *hash = ix_docs(ix)[ref].hash;
    return 0;
}

void
sh_index_foreach(const sh_index_t *ix, sh_index_visit_fn fn, void *arg)
{
    const sh_docrec_t *d = ix_docs(ix);
    uint32_t ref = ix->oldest;
    uint32_t n = 0;

    /* The step bound keeps a damaged list from looping forever. */
    while (ref != SH_NOREF && ref < ix->hwm && n++ < ix->entries) {
        uint32_t next = d[ref].next;

        if (fn(arg, ref, d[ref].hash) != 0) {
            return;
        }
        ref = next;
    }
}

/* ---- Copying the documents out and back (sh_image.c). ---- */

_Static_assert(sizeof(sh_index_doc_t) == sizeof(sh_docrec_t)
               && SH_INDEX_FREE == REF_FREE,
               "sh_index_doc_t is the record as stored");

/*
 * Fill the table from the n (fingerprint, ref) pairs the caller put at the
 * start of its own arrays, slots[0..n) and refs[0..n): no memory but the
 * table's (sh_radix.h says why).  Sorted in place, each pair goes to its
 * home or right after the one before, whichever is later, so that every
 * invariant holds after sequential passes (instead of n inserts, each a
 * cache miss).  Beyond RUN_MAX copies of one fingerprint the rest are
 * shadows, as an insert makes them.
 *
 * The pairs are first moved to the END of the arrays: a pair's place is
 * then never after the place it is read from (places grow by at least one
 * a pair, sources by exactly one), so one forward pass writes each where
 * it goes over sources already read.  Only a pathological set piling up
 * at the very end of the space can overtake its sources; from there on the
 * pairs are set aside and finished by ordinary inserts.  -1 when even that
 * has no memory.
 */
static int
table_build(sh_index_t *ix, uint32_t n)
{
    uint64_t *sl = ix_slots(ix), *rest_sl = NULL;
    uint32_t *rf = ix_refs(ix), *rest_rf = NULL;
    uint32_t  i, k, s, src, base, next = 0, same = 0, h, nrest = 0;

    sh_radix_sort(sl, rf, n);
    for (i = 0, k = 0; i < n; i++) {
        same = i > 0 && sl[i] == sl[i - 1] ? same + 1 : 0;
        if (same < RUN_MAX) {       /* else a shadow: stored, not here */
            sl[k] = sl[i];
            rf[k] = rf[i];
            k++;
        }
    }
    n = k;
    base = ix->nslots - n;
    memmove(sl + base, sl, (size_t) n * sizeof(*sl));
    memmove(rf + base, rf, (size_t) n * sizeof(*rf));
    for (k = 0; k < n; k++) {
        src = base + k;
        h = ix_home(ix, sl[src]);
        s = h > next ? h : next;
        if (s > src) {
            nrest = n - k;
            rest_sl = malloc((size_t) nrest * sizeof(*rest_sl));
            rest_rf = malloc((size_t) nrest * sizeof(*rest_rf));
            if (rest_sl == NULL || rest_rf == NULL) {
                free(rest_sl);
                free(rest_rf);
                return -1;
            }
            memcpy(rest_sl, sl + src, (size_t) nrest * sizeof(*rest_sl));
            memcpy(rest_rf, rf + src, (size_t) nrest * sizeof(*rest_rf));
            break;
        }
        for (; next < s; next++) {
            sl[next] = EMPTY;
            rf[next] = SH_NOREF;
        }
        sl[s] = sl[src];
        rf[s] = rf[src];
        next = s + 1;
    }
    for (; next < ix->nslots; next++) {
        sl[next] = EMPTY;
        rf[next] = SH_NOREF;
    }
    for (i = 0; i < nrest; i++) {
        (void) table_insert(ix, rest_sl[i], rest_rf[i]);
    }
    free(rest_sl);
    free(rest_rf);
    return 0;
}

int
sh_index_links(const sh_index_t *ix, uint32_t ref, uint32_t *older,
               uint32_t *newer)
{
    if (!ref_live(ix, ref)) {
        return -1;
    }
    *older = ix_docs(ix)[ref].prev;
    *newer = ix_docs(ix)[ref].next;
    return 0;
}

void
sh_index_ends(const sh_index_t *ix, sh_index_ends_t *e)
{
    e->hwm = ix->hwm;
    e->entries = ix->entries;
    e->oldest = ix->oldest;
    e->newest = ix->newest;
    e->free_head = ix->free_head;
}

void
sh_index_export(const sh_index_t *ix, uint32_t from, uint32_t n,
                sh_index_doc_t *out)
{
    if (from < ix->hwm) {
        n = n < ix->hwm - from ? n : ix->hwm - from;
        memcpy(out, ix_docs(ix) + from, (size_t) n * sizeof(*out));
    }
}

sh_index_doc_t *
sh_index_import_area(sh_index_t *ix)
{
    return (sh_index_doc_t *) ix_docs(ix);
}

uint64_t *
sh_index_scratch(sh_index_t *ix, uint32_t **values, uint32_t *n)
{
    if (ix->entries != 0 || ix->hwm != 0) {
        return NULL;
    }
    *values = ix_refs(ix);
    *n = ix->nslots;
    return ix_slots(ix);
}

int
sh_index_import(sh_index_t *ix, const sh_index_doc_t *docs,
                const sh_index_ends_t *e, char *err, size_t errlen)
{
    sh_docrec_t *d = ix_docs(ix);
    uint32_t     ref, live = 0;

    if (ix->entries != 0 || ix->hwm != 0) {
        sh_err_set(err, errlen, "import into an index that is not empty");
        return -1;
    }
    if (e->hwm > ix->capacity || e->entries > e->hwm
        || (e->oldest != SH_NOREF && e->oldest >= e->hwm)
        || (e->newest != SH_NOREF && e->newest >= e->hwm)
        || (e->free_head != SH_NOREF && e->free_head >= e->hwm))
    {
        sh_err_set(err, errlen, "copied index: ends out of range");
        return -1;
    }
    if (docs != NULL) {
        memcpy(d, docs, (size_t) e->hwm * sizeof(*d));
    }
    /* the pairs gathered at the start of the table's own arrays (entries
     * <= capacity < nslots), then built there */
    for (ref = 0; ref < e->hwm; ref++) {
        if (d[ref].prev == REF_FREE) {
            continue;
        }
        if ((d[ref].prev != SH_NOREF && d[ref].prev >= e->hwm)
            || (d[ref].next != SH_NOREF && d[ref].next >= e->hwm)
            || live >= e->entries)
        {
            live++;
            break;
        }
        ix_slots(ix)[live] = d[ref].hash;
        ix_refs(ix)[live] = ref;
        live++;
    }
    if (ref < e->hwm || live != e->entries) {
        table_clear(ix);
        sh_err_set(err, errlen, "copied index: records inconsistent");
        return -1;
    }
    if (table_build(ix, live) != 0) {
        table_clear(ix);
        sh_err_set(err, errlen, "out of memory");
        return -1;
    }
    ix->hwm = e->hwm;
    ix->entries = e->entries;
    ix->oldest = e->oldest;
    ix->newest = e->newest;
    ix->free_head = e->free_head;
    /* the full check walks the age order, one cache miss a document
     * (13 s at 2^27): a big import relies on its source's checksum and
     * on the bounds checked above, which keep every access in the region */
    if (e->entries <= IMPORT_CHECK_MAX
        && sh_index_check(ix, err, errlen) != 0)
    {
        return -1;
    }
    return 0;
}

/* ---- Lookup. ---- */

void
sh_lookup_opts_init(sh_lookup_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->h = SH_H_DEFAULT;
    o->rule = SH_RULE_HAMMING;
    o->threshold = sh_score_from_nats(SH_WEIGHTED_T_DEFAULT);
    o->mode = SH_MATCH_FIRST;
    o->probes = 0;
    o->recall = 0.95f;
    o->vol = NULL;
    o->learn = 0;
}

void
sh_lookup_match_opts(const sh_lookup_opts_t *o, sh_match_opts_t *m)
{
    sh_match_opts_init(m);
    m->rule = o->rule;
    m->h = o->rule == SH_RULE_WEIGHTED
           ? (o->h > SH_MATCH_HMAX ? SH_MATCH_HMAX : o->h)
           : (o->h > SH_H_MAX ? SH_H_MAX : o->h);
    m->threshold = o->threshold;
    m->vol = o->vol;
}

unsigned
sh_index_probes_for(const sh_index_t *ix, const sh_lookup_opts_t *opts)
{
    const sh_volatility_t *vol = opts->vol ? opts->vol
                                           : sh_volatility_default();
    unsigned k;

    if (opts->h == 0) {
        return 0;
    }
    k = opts->probes;
    if (k == 0) {
        /* Without a calibration, 4 t probes is about 95% for h = 3 on
         * real pages; calibrated tables replace this guess. */
        k = sh_volatility_k(vol, opts->mode != SH_MATCH_FIRST,
                            opts->h > SH_H_MAX ? SH_H_MAX : opts->h,
                            ix->t, opts->recall, 4 * ix->t);
    }
    return k > SH_PROBES_MAX ? SH_PROBES_MAX : k;
}

typedef struct {
    uint64_t    x;
    unsigned    h;              /* the cap on H: candidates within it go
                                   to the rule */
    sh_match_mode_t mode;
    sh_match_t *out;
    size_t      max;
    size_t      found;
    uint64_t    best;           /* CLOSEST: (score or H) << 8 | H */
    uint32_t    scanned;
    int         done;
    int         weighted;
    /* The rule's query, prepared on the first candidate within the cap:
     * most lookups never meet one, and the costs are 64 table reads. */
    int         ready;
    const sh_match_opts_t *mo;
    const float *w;
    sh_matcher_t m;
} lookup_ctx_t;

static inline void
found_put(lookup_ctx_t *c, size_t i, const sh_index_t *ix, uint32_t s,
          uint64_t v, unsigned d, uint32_t score)
{
    c->out[i].ref = ix_refs(ix)[s];
    c->out[i].distance = d;
    c->out[i].hash = v;
    c->out[i].score = score;
}

/*
 * Scan the run of fingerprints in [lo, hi] from slot `start`; the caller
 * passes home(lo) (or `spill` if that is lower) so the slot can be
 * prefetched ahead of time.
 */
static inline __attribute__((always_inline)) void
scan_run(const sh_index_t *ix, uint32_t start, uint64_t lo, uint64_t hi,
         lookup_ctx_t *c)
{
    const uint64_t *sl = ix_slots(ix);
    uint32_t n = ix->nslots;
    uint32_t hh = ix_home(ix, hi);
    uint32_t s = start;

    /*
     * Entries of smaller prefixes that spilled past home(lo) form an
     * unbroken prefix of the run (an empty slot would have stopped their
     * spill), so they can be counted instead of stepped over: eight
     * compares without a branch replace a loop whose every exit is a
     * misprediction.  Empty slots hold UINT64_MAX and never count.
     */
    {
        /* Only within start's cache line (slots are 64-byte aligned): the
         * next line was not prefetched and is usually not needed. */
        uint32_t line = s & ~7u, skip = 0, i;

        if (line + 8 <= n) {
            for (i = 0; i < 8; i++) {
                skip += (line + i >= s) & (sl[line + i] < lo);
            }
            s += skip;
        }
    }

    for (; s < n; s++) {
        uint64_t v = sl[s], key;
        unsigned d;
        uint32_t score;

        if (v == EMPTY) {
            /* Empty, unless a real all-ones fingerprint: only the top
             * prefix can hold one, so only then read refs. */
            if (hi != EMPTY || ix_refs(ix)[s] == SH_NOREF) {
                if (s >= hh) {
                    break;
                }
                continue;
            }
        } else if (v < lo) {
            continue;
        } else if (v > hi) {
            break;
        }
        c->scanned++;
        d = (unsigned) __builtin_popcountll(v ^ c->x);
        if (d > c->h) {
            continue;
        }
        if (!c->ready) {
            sh_matcher_init(&c->m, c->mo, c->x, c->w);
            c->ready = 1;
        }
        if (!sh_matcher_test(&c->m, v, &d, &score)) {
            continue;
        }
        switch (c->mode) {
        case SH_MATCH_FIRST:
            if (c->max > 0) {
                found_put(c, 0, ix, s, v, d, score);
            }
            c->found = 1;
            c->done = 1;
            return;
        case SH_MATCH_ALL:
            if (c->found < c->max) {
                found_put(c, c->found, ix, s, v, d, score);
            }
            c->found++;
            break;
        case SH_MATCH_CLOSEST:
            key = (c->weighted ? (uint64_t) score : d) << 8 | d;
            if (c->found == 0 || key < c->best) {
                if (c->max > 0) {
                    found_put(c, 0, ix, s, v, d, score);
                }
                c->best = key;
                c->found = 1;
                if (d == 0) {
                    c->done = 1;
                    return;
                }
            }
            break;
        }
    }
}

static inline uint32_t
probe_start(const sh_index_t *ix, uint64_t lo)
{
    uint32_t s = ix_home(ix, lo);

    return s < ix->spill ? s : ix->spill;
}

/* Batch of VOSH probes whose first slots are prefetched together: the
 * misses overlap instead of following one another. */
#define PROBE_BATCH 8

static void
learn_pair(sh_index_t *ix, uint64_t x, uint64_t y, const float *w)
{
    uint64_t diff = x ^ y;
    unsigned j;

    __atomic_fetch_add(&ix->learn.pairs, 1, __ATOMIC_RELAXED);
    for (j = 0; j + ix->t < 64; j++) {
        float    f = __builtin_fabsf(w[j]) / SH_LEARN_WIDTH;
        unsigned b = f < (float) SH_LEARN_BINS ? (unsigned) f
                                               : SH_LEARN_BINS - 1;  /* NaN */
        __atomic_fetch_add(&ix->learn.seen[b], 1, __ATOMIC_RELAXED);
        if ((diff >> j) & 1) {
            __atomic_fetch_add(&ix->learn.flipped[b], 1, __ATOMIC_RELAXED);
        }
    }
}

SH_POPCNT_CLONES size_t
sh_index_lookup(sh_index_t *ix, uint64_t hash, const float *weights,
                const sh_lookup_opts_t *opts, sh_match_t *out, size_t max,
                sh_lookup_stats_t *st)
{
    const sh_volatility_t *vol = opts->vol ? opts->vol
                                           : sh_volatility_default();
    unsigned     t = ix->t, shift = 64 - ix->t;
    uint64_t     low = (1ull << shift) - 1;
    uint32_t     probes = 1;
    sh_match_opts_t mo;
    lookup_ctx_t c;
    unsigned     k, i, vh;

    sh_lookup_match_opts(opts, &mo);
    c.x = hash;
    c.h = mo.h;
    c.weighted = mo.rule == SH_RULE_WEIGHTED;
    c.ready = 0;
    c.mo = &mo;
    c.w = weights;
    /* Header subsets probed: at most h bits, and at most SH_H_MAX. */
    vh = mo.h > SH_H_MAX ? SH_H_MAX : mo.h;
    c.mode = opts->mode;
    c.out = out;
    c.max = max;
    c.found = 0;
    c.best = 0;
    c.scanned = 0;
    c.done = 0;

    /* Distance 0 in the header first: x's own bucket.  Its slot is
     * prefetched and the header bits ranked while the miss is in flight:
     * the ranking is wasted only when x's bucket already answers. */
    k = ix->entries > 0 ? sh_index_probes_for(ix, opts) : 0;
    if (k > 0 && vh > 0) {
        float          lo_rank[T_MAX];
        uint8_t        bit_of[T_MAX];
        uint64_t       lo0 = hash & ~low;
        uint32_t       start0 = probe_start(ix, lo0);
        /* Sized by k: a fixed worst-case array would make the kernel
         * fault in (and stack-clash probing touch) 64 KB per lookup. */
        sh_vosh_node_t heap[SH_VOSH_HEAP_FOR(k, SH_H_MAX)];
        sh_vosh_t      v;
        unsigned       emitted = 0;

        __builtin_prefetch(ix_slots(ix) + start0);
        sh_vosh_rank_header(vol, weights, t, lo_rank, bit_of);
        scan_run(ix, start0, lo0, lo0 | low, &c);

        sh_vosh_init(&v, lo_rank, t, vh, heap, SH_VOSH_HEAP_FOR(k, vh));

        /*
         * Software pipeline: the next batch of subsets is generated (and
         * its slots prefetched) before the current batch is scanned, so
         * every fetch has a whole batch of VOSH work to hide behind.
         */
        {
            uint64_t los[2][PROBE_BATCH];
            uint32_t starts[2][PROBE_BATCH];
            unsigned nb[2] = { 0, 0 }, cur = 0;

            for (;;) {
                unsigned nxt = cur ^ 1;
                sh_vosh_node_t node;

                nb[nxt] = 0;
                while (nb[nxt] < PROBE_BATCH && emitted < k
                       && sh_vosh_next(&v, &node))
                {
                    uint64_t mask = 0;
                    unsigned q = nb[nxt]++;

                    for (i = 0; i < node.size; i++) {
                        mask |= 1ull << bit_of[node.idx[i]];
                    }
                    los[nxt][q] = (hash ^ mask) & ~low;
                    starts[nxt][q] = probe_start(ix, los[nxt][q]);
                    __builtin_prefetch(ix_slots(ix) + starts[nxt][q]);
                    emitted++;
                }
                for (i = 0; i < nb[cur] && !c.done; i++) {
                    scan_run(ix, starts[cur][i], los[cur][i],
                             los[cur][i] | low, &c);
                    probes++;
                }
                if (c.done || nb[nxt] == 0) {
                    break;
                }
                cur = nxt;
            }
        }
    } else if (ix->entries > 0) {
        uint64_t lo0 = hash & ~low;

        scan_run(ix, probe_start(ix, lo0), lo0, lo0 | low, &c);
    }

    if (opts->learn && weights != NULL && c.found > 0) {
        size_t nrep = c.mode == SH_MATCH_ALL && c.found > max ? max : c.found;

        if (max == 0) {
            nrep = 0;
        }
        for (i = 0; i < nrep; i++) {
            if (out[i].distance > 0) {
                learn_pair(ix, hash, out[i].hash, weights);
            }
        }
    }

    __atomic_fetch_add(&ix->lookups, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ix->probes, probes, __ATOMIC_RELAXED);
    if (st != NULL) {
        st->probes = probes;
        st->scanned = c.scanned;
    }
    return c.found;
}

/* ---- Learner counts. ---- */

void
sh_index_learn_counts(const sh_index_t *ix, sh_learn_counts_t *c)
{
    unsigned i;

    c->pairs = __atomic_load_n(&ix->learn.pairs, __ATOMIC_RELAXED);
    for (i = 0; i < SH_LEARN_BINS; i++) {
        c->seen[i] = __atomic_load_n(&ix->learn.seen[i], __ATOMIC_RELAXED);
        c->flipped[i] = __atomic_load_n(&ix->learn.flipped[i],
                                        __ATOMIC_RELAXED);
    }
}

void
sh_index_learn_reset(sh_index_t *ix)
{
    memset(&ix->learn, 0, sizeof(ix->learn));
}

/* ---- Statistics and checks. ---- */

void
sh_index_stats(const sh_index_t *ix, sh_index_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    st->capacity = ix->capacity;
    st->entries = ix->entries;
    st->t = ix->t;
    st->evictions = ix->evictions;
    st->lookups = __atomic_load_n(&ix->lookups, __ATOMIC_RELAXED);
    st->probes = __atomic_load_n(&ix->probes, __ATOMIC_RELAXED);
    st->fingerprint_bytes = (size_t) ix->nslots * 8;
    st->document_bytes = (size_t) ix->nslots * 4
                         + (size_t) ix->capacity * sizeof(sh_docrec_t);
    st->region_bytes = ix->region_size;
}

int
sh_index_check(const sh_index_t *ix, char *err, size_t errlen)
{
    const uint64_t    *sl = ix_slots(ix);
    const uint32_t    *rf = ix_refs(ix);
    const sh_docrec_t *d = ix_docs(ix);
    uint8_t  *seen;
    uint32_t  s, ref, prev, n, last_empty = UINT32_MAX, nfree;
    uint64_t  last = 0;
    int       have_last = 0;

#define FAIL(...) do { if (err != NULL && errlen > 0) \
                           snprintf(err, errlen, __VA_ARGS__); \
                       free(seen); return -1; } while (0)

    seen = calloc(ix->hwm + 1, 1);
    if (seen == NULL) {
        if (err != NULL && errlen > 0) {
            snprintf(err, errlen, "out of memory");
        }
        return -1;
    }

    /* The table: sorted, homes respected, refs live and unique. */
    n = 0;
    for (s = 0; s < ix->nslots; s++) {
        uint32_t home;

        if (rf[s] == SH_NOREF) {
            if (sl[s] != EMPTY) {
                FAIL("slot %u is empty but holds a value", s);
            }
            last_empty = s;
            continue;
        }
        if (rf[s] >= ix->hwm || d[rf[s]].prev == REF_FREE) {
            FAIL("slot %u refers to a free document %u", s, rf[s]);
        }
        if (seen[rf[s]]) {
            FAIL("document %u is stored twice", rf[s]);
        }
        seen[rf[s]] = 1;
        if (d[rf[s]].hash != sl[s]) {
            FAIL("slot %u and document %u disagree", s, rf[s]);
        }
        if (have_last && sl[s] < last) {
            FAIL("slot %u is out of order", s);
        }
        /*
         * Lookups scan from the home slot (or `spill`) and stop at the
         * first hole at or past home: an entry at or past its home must
         * have no hole between them, wherever it sits.  Only from `spill`
         * on may an entry sit before its home (shifted left when the tail
         * was full).  Holes are told by their refs, not their values: an
         * all-ones fingerprint looks like a hole to a value test.
         */
        home = ix_home(ix, sl[s]);
        if (home > s ? s < ix->spill
                     : last_empty != UINT32_MAX && last_empty >= home)
        {
            FAIL("slot %u is cut off from its home slot %u", s, home);
        }
        last = sl[s];
        have_last = 1;
        n++;
    }
    if (n > ix->entries) {
        FAIL("table holds %u entries, header says %u", n, ix->entries);
    }

    /* The age list visits exactly the stored documents. */
    prev = SH_NOREF;
    n = 0;
    for (ref = ix->oldest; ref != SH_NOREF; ref = d[ref].next) {
        /* seen 0: a shadow (stored, not in the table) */
        if (ref >= ix->hwm || seen[ref] > 1 || d[ref].prev != prev) {
            FAIL("age list broken at document %u", ref);
        }
        seen[ref] = 2;
        prev = ref;
        if (++n > ix->entries) {
            FAIL("age list longer than the entries");
        }
    }
    if (n != ix->entries || prev != ix->newest) {
        FAIL("age list has %u documents, header says %u", n, ix->entries);
    }

    for (ref = 0; ref < ix->hwm; ref++) {
        if (seen[ref] == 1) {
            FAIL("document %u is in the table, not in the age list", ref);
        }
    }

    /* The free list holds every other ref below the high-water mark. */
    nfree = 0;
    for (ref = ix->free_head; ref != SH_NOREF; ref = d[ref].next) {
        if (ref >= ix->hwm || seen[ref] != 0 || d[ref].prev != REF_FREE) {
            FAIL("free list broken at document %u", ref);
        }
        seen[ref] = 3;
        nfree++;
    }
    if (nfree + ix->entries != ix->hwm) {
        FAIL("%u free + %u stored documents != %u handed out", nfree,
             ix->entries, ix->hwm);
    }
#undef FAIL
    free(seen);
    return 0;
}
