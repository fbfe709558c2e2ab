/*
 * sh_store.c -- the compact document store (sh_store.h): the region, the
 * key table, the key text ring, and the records kept in step with the
 * index.
 *
 * Layout, every part 64-byte aligned, located by offsets in the header:
 *
 *   header   sizes, offsets, ring positions, counters, the key secret
 *   docs     sh_store_doc_t[capacity]
 *   keys     uint32_t[kslots]: refs, SH_NOREF = empty
 *   dirty    one bit per 64 refs
 *   text     the ring
 *   index    the sh_index region
 *
 * The key table is linear probing with wrap-around and backward-shift
 * deletion, home = the key hash's top 32 bits scaled to the table
 * (Lemire's range reduction), at most 80% full.  It holds refs only: the
 * hash of an entry is read from its record, the cache line a lookup
 * fetches next anyway.
 *
 * The ring holds one entry per document whose text it keeps; a record's
 * `text` is its entry's position / 8 in 32 bits, whole again relative to
 * the head (st_text_pos).  Making room moves the tail past the oldest
 * entries; an entry still named by its record takes the text from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_err.h"
#include "sh_store_internal.h"

#define REFRESH_MAX     2048    /* key bytes copied to the front on touch */

/* ---- Sizes. ---- */

static uint32_t
kslots_for(uint32_t capacity)
{
    return capacity + capacity / 4 + 16;
}

static uint64_t
text_size_for(uint64_t text_bytes)
{
    text_bytes &= ~(uint64_t) 7;
    return text_bytes < ST_TEXT_MIN ? ST_TEXT_MIN
           : text_bytes > ST_TEXT_MAX ? ST_TEXT_MAX : text_bytes;
}

typedef struct {
    uint64_t docs, keys, dirty, dirty_bytes, text, index, index_size, end;
} layout_t;

static void
layout(uint32_t capacity, uint64_t text_bytes, layout_t *l)
{
    uint64_t off = ST_ALIGN64(sizeof(sh_store_t));

    l->docs = off;
    off = ST_ALIGN64(off + (uint64_t) capacity * sizeof(sh_store_doc_t));
    l->keys = off;
    off = ST_ALIGN64(off + (uint64_t) kslots_for(capacity) * 4);
    l->dirty = off;
    l->dirty_bytes = ((uint64_t) capacity + (8u << ST_DIRTY_SHIFT) - 1)
                     >> (ST_DIRTY_SHIFT + 3);
    off = ST_ALIGN64(off + l->dirty_bytes);
    l->text = off;
    off = ST_ALIGN64(off + text_size_for(text_bytes));
    l->index = off;
    l->index_size = sh_index_region_size(capacity);
    l->end = off + l->index_size;
}

size_t
sh_store_region_size(uint32_t capacity, uint64_t text_bytes)
{
    layout_t l;

    if (capacity == 0 || sh_index_region_size(capacity) == 0) {
        return 0;
    }
    layout(capacity, text_bytes, &l);
    return (size_t) l.end;
}

uint32_t
sh_store_capacity_for(size_t bytes, uint64_t text_bytes)
{
    uint32_t lo = 0, hi = 1u << 31;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        size_t   need = sh_store_region_size(mid, text_bytes);

        if (need != 0 && need <= bytes) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    /*
     * The index takes the largest capacity its region holds, and several
     * capacities share a region size: step down to one that is its own
     * region's, so that the index never hands out a ref past the records.
     */
    while (lo > 0 && sh_index_capacity_for(sh_index_region_size(lo)) != lo) {
        lo--;
    }
    return lo;
}

void
sh_store_secret(const unsigned char *key, size_t len,
                unsigned char out[SH_STORE_SECRET_LEN])
{
    static const char salt[] = "sh_store key hash";
    unsigned char     seed[32 + sizeof(salt)];

    len = len > 32 ? 32 : len;
    memcpy(seed, salt, sizeof(salt));
    memcpy(seed + sizeof(salt), key, len);
    (void) XXH3_generateSecret(out, SH_STORE_SECRET_LEN, seed,
                               sizeof(salt) + len);
}

/* ---- Format and attach. ---- */

sh_store_t *
sh_store_init(void *region, size_t size, uint64_t text_bytes,
              const unsigned char *secret, uint64_t seed_digest,
              char *err, size_t errlen)
{
    sh_store_t *st = region;
    uint32_t    capacity, i, *keys;
    layout_t    l;

    if (region == NULL || ((uintptr_t) region & 63) != 0) {
        sh_err_set(err, errlen, "store region must be 64-byte aligned");
        return NULL;
    }
    capacity = sh_store_capacity_for(size, text_bytes);
    if (capacity == 0) {
        sh_err_set(err, errlen, "store region too small for one document");
        return NULL;
    }
    layout(capacity, text_bytes, &l);

    memset(st, 0, sizeof(*st));
    memcpy(st->magic, ST_MAGIC, sizeof(ST_MAGIC));
    st->version = ST_VERSION;
    st->endian = ST_ENDIAN;
    st->header_size = (uint32_t) sizeof(sh_store_t);
    st->capacity = capacity;
    st->kslots = kslots_for(capacity);
    st->region_size = l.end;
    st->text_size = text_size_for(text_bytes);
    st->off_docs = l.docs;
    st->off_keys = l.keys;
    st->off_dirty = l.dirty;
    st->dirty_bytes = l.dirty_bytes;
    st->off_text = l.text;
    st->off_index = l.index;
    st->index_size = l.index_size;
    memcpy(st->secret, secret, SH_STORE_SECRET_LEN);

    keys = st_keys(st);
    for (i = 0; i < st->kslots; i++) {
        keys[i] = SH_NOREF;
    }
    memset(st_dirty(st), 0, st->dirty_bytes);
    /* the records are written when a ref is handed out */

    if (sh_index_init((char *) st + st->off_index, st->index_size, 0,
                      seed_digest, err, errlen) == NULL)
    {
        return NULL;
    }
    if (sh_index_capacity_for(st->index_size) != capacity) {
        sh_err_set(err, errlen, "store and index capacities disagree");
        return NULL;
    }
    return st;
}

sh_store_t *
sh_store_attach(void *region, size_t size, char *err, size_t errlen)
{
    sh_store_t *st = region;
    layout_t    l;

    if (region == NULL || ((uintptr_t) region & 63) != 0
        || size < sizeof(sh_store_t)
        || memcmp(st->magic, ST_MAGIC, sizeof(ST_MAGIC)) != 0)
    {
        sh_err_set(err, errlen, "not a store region (bad magic)");
        return NULL;
    }
    if (st->endian != ST_ENDIAN || st->version != ST_VERSION
        || st->header_size != sizeof(sh_store_t))
    {
        sh_err_set(err, errlen,
                   "store region of another format or byte order");
        return NULL;
    }
    if (st->capacity == 0 || sh_index_region_size(st->capacity) == 0) {
        sh_err_set(err, errlen, "store region header is inconsistent");
        return NULL;
    }
    /* every offset must be what init would have computed */
    layout(st->capacity, st->text_size, &l);
    if (st->text_size != text_size_for(st->text_size)
        || st->kslots != kslots_for(st->capacity)
        || st->region_size != l.end || st->region_size > size
        || st->off_docs != l.docs || st->off_keys != l.keys
        || st->off_dirty != l.dirty || st->dirty_bytes != l.dirty_bytes
        || st->off_text != l.text || st->off_index != l.index
        || st->index_size != l.index_size
        || st->text_tail > st->text_head
        || st->text_head - st->text_tail > st->text_size
        || ((st->text_head | st->text_tail) & 7) != 0)
    {
        sh_err_set(err, errlen, "store region header is inconsistent");
        return NULL;
    }
    if (sh_index_attach((char *) st + st->off_index, st->index_size, err,
                        errlen) == NULL)
    {
        return NULL;
    }
    return st;
}

sh_index_t *
sh_store_index(sh_store_t *st)
{
    return (sh_index_t *) ((char *) st + st->off_index);
}

const sh_index_t *
sh_store_index_const(const sh_store_t *st)
{
    return (const sh_index_t *) ((const char *) st + st->off_index);
}

uint64_t
sh_store_keyhash(const sh_store_t *st, const char *key, size_t len)
{
    uint64_t h = XXH3_64bits_withSecret(key, len, st->secret,
                                        SH_STORE_SECRET_LEN);

    return h ? h : 1;       /* 0: no key (a record of a free ref) */
}

static int
stored(const sh_store_t *st, uint32_t ref)
{
    uint64_t hash;

    return ref < st->capacity
           && sh_index_get(sh_store_index_const(st), ref, &hash) == 0;
}

/* ---- The key table. ---- */

static uint32_t
home(const sh_store_t *st, uint64_t keyhash)
{
    return (uint32_t) (((keyhash >> 32) * st->kslots) >> 32);
}

void
st_keys_insert(sh_store_t *st, uint32_t ref, uint64_t keyhash)
{
    uint32_t *k = st_keys(st);
    uint32_t  i = home(st, keyhash), n;

    for (n = 0; n < st->kslots && k[i] != SH_NOREF; n++) {
        i = i + 1 == st->kslots ? 0 : i + 1;
    }
    k[i] = ref;             /* never full: kslots > capacity */
}

/* Backward-shift deletion: no entry may be separated from its home by a
 * hole, so the ones after it that may move back do. */
static void
keys_delete(sh_store_t *st, uint32_t ref, uint64_t keyhash)
{
    uint32_t             *k = st_keys(st);
    const sh_store_doc_t *d = st_docs(st);
    uint32_t              i = home(st, keyhash), j, h, n;

    for (n = 0; n < st->kslots && k[i] != ref; n++) {
        if (k[i] == SH_NOREF) {
            return;
        }
        i = i + 1 == st->kslots ? 0 : i + 1;
    }
    if (k[i] != ref) {
        return;
    }
    j = i;
    for (n = 0; n < st->kslots; n++) {
        j = j + 1 == st->kslots ? 0 : j + 1;
        if (k[j] == SH_NOREF || k[j] >= st->capacity) {
            break;
        }
        h = home(st, d[k[j]].keyhash);
        /* may k[j] move back to i?  Yes unless its home lies in (i, j] */
        if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
            k[i] = k[j];
            i = j;
        }
    }
    k[i] = SH_NOREF;
}

/*
 * Fill the empty key table with n (key hash, ref) pairs at once: inserted
 * one by one, each insert first asking for the home slot of the pair
 * KEYS_AHEAD places later, so that the cache misses of a table larger than
 * the caches overlap instead of following one another.  Linear probing
 * makes a valid table whatever the order of the inserts (lookups and the
 * backward-shift deletion need only that no entry is separated from its
 * home by a hole).  The way before, a radix sort of the pairs into home
 * order and one sequential pass, moved every 12-byte pair three times to
 * a random place: with the index's own sort, 60% of a 2^25 load.
 */
#define KEYS_AHEAD  16

void
st_keys_build(sh_store_t *st, const uint64_t *keyhash, const uint32_t *ref,
              uint32_t n)
{
    uint32_t *k = st_keys(st);
    uint32_t  i;

    for (i = 0; i < n; i++) {
        if (i + KEYS_AHEAD < n) {
            __builtin_prefetch(&k[home(st, keyhash[i + KEYS_AHEAD])], 1);
        }
        st_keys_insert(st, ref[i], keyhash[i]);
    }
}

uint32_t
sh_store_find_hash(const sh_store_t *st, uint64_t keyhash)
{
    const uint32_t       *k = st_keys(st);
    const sh_store_doc_t *d = st_docs(st);
    uint32_t              i = home(st, keyhash), n;

    for (n = 0; n < st->kslots && k[i] != SH_NOREF; n++) {
        if (k[i] < st->capacity && d[k[i]].keyhash == keyhash) {
            return k[i];
        }
        i = i + 1 == st->kslots ? 0 : i + 1;
    }
    return SH_NOREF;
}

uint32_t
sh_store_find(sh_store_t *st, const char *key, size_t len)
{
    const uint32_t       *k = st_keys(st);
    const sh_store_doc_t *d = st_docs(st);
    uint64_t              h = sh_store_keyhash(st, key, len);
    uint32_t              i = home(st, h), n;
    const char           *text;
    size_t                tlen;

    __builtin_prefetch(&d[k[i] < st->capacity ? k[i] : 0]);
    for (n = 0; n < st->kslots && k[i] != SH_NOREF; n++) {
        if (k[i] < st->capacity && d[k[i]].keyhash == h) {
            tlen = sh_store_key(st, k[i], &text);
            if (tlen == 0 || (tlen == len && memcmp(text, key, len) == 0)) {
                return k[i];
            }
            __atomic_fetch_add(&st->collisions, 1, __ATOMIC_RELAXED);
        }
        i = i + 1 == st->kslots ? 0 : i + 1;
    }
    return SH_NOREF;
}

/* ---- The key text ring. ---- */

static st_text_t *
text_at(const sh_store_t *st, uint64_t pos)
{
    return (st_text_t *) (st_text(st) + pos % st->text_size);
}

/* Move the tail past the oldest entry; its document loses its text. */
static void
text_evict_one(sh_store_t *st)
{
    st_text_t      *e = text_at(st, st->text_tail);
    sh_store_doc_t *d;
    uint64_t        off = st->text_tail % st->text_size;

    if (e->ref == ST_TEXT_WRAP) {
        st->text_tail += st->text_size - off;
        return;
    }
    if (e->ref < st->capacity) {
        d = &st_docs(st)[e->ref];
        if (d->text == (uint32_t) (st->text_tail >> 3)) {
            st_mark(st, e->ref);
            d->text = SH_STORE_NOTEXT;
            st->texts--;
            st->text_evictions++;
        }
    }
    st->text_tail += ST_ALIGN8(sizeof(st_text_t) + e->len);
}

/* Append ref's key text; sets the record's text.  A key too long for the
 * ring is not kept (the document is then named by its id). */
static void
text_append(sh_store_t *st, uint32_t ref, const char *key, size_t len)
{
    sh_store_doc_t *d = &st_docs(st)[ref];
    uint64_t        need = ST_ALIGN8(sizeof(st_text_t) + len);
    uint64_t        off, skip;
    st_text_t      *e;

    if (len > SH_STORE_KEY_MAX || need > st->text_size / 4) {
        return;
    }
    off = st->text_head % st->text_size;
    skip = off + need > st->text_size ? st->text_size - off : 0;
    while (st->text_head + skip + need - st->text_tail > st->text_size) {
        text_evict_one(st);
    }
    if (skip) {
        text_at(st, st->text_head)->ref = ST_TEXT_WRAP;
        st->text_head += skip;
    }
    e = text_at(st, st->text_head);
    e->ref = ref;
    e->len = (uint16_t) len;
    e->check = (uint16_t) d->keyhash;
    memcpy(e + 1, key, len);
    st_mark(st, ref);
    d->text = (uint32_t) (st->text_head >> 3);
    st->texts++;
    st->text_head += need;
}

size_t
sh_store_key(const sh_store_t *st, uint32_t ref, const char **text)
{
    const sh_store_doc_t *d;
    const st_text_t      *e;
    uint64_t              pos;

    if (ref >= st->capacity) {
        return 0;
    }
    d = &st_docs(st)[ref];
    if (d->text == SH_STORE_NOTEXT) {
        return 0;
    }
    pos = st_text_pos(st, d->text);
    if (pos < st->text_tail || pos >= st->text_head) {
        return 0;           /* a damaged record: never read outside */
    }
    e = text_at(st, pos);
    if (e->ref != ref || e->check != (uint16_t) d->keyhash
        || pos % st->text_size + sizeof(*e) + e->len > st->text_size)
    {
        return 0;
    }
    *text = (const char *) (e + 1);
    return e->len;
}

static void
text_drop(sh_store_t *st, uint32_t ref)
{
    sh_store_doc_t *d = &st_docs(st)[ref];

    if (d->text != SH_STORE_NOTEXT) {
        d->text = SH_STORE_NOTEXT;
        st->texts--;
    }
}

/* ---- Documents. ---- */

/* The index changes ref's age links and its neighbours': mark them. */
static void
mark_links(sh_store_t *st, uint32_t ref)
{
    uint32_t older, newer;

    st_mark(st, ref);
    if (sh_index_links(sh_store_index(st), ref, &older, &newer) == 0) {
        st_mark(st, older);
        st_mark(st, newer);
    }
}

/* The newest document's newer link changes when another is appended. */
static void
mark_newest(sh_store_t *st)
{
    sh_index_ends_t e;

    sh_index_ends(sh_store_index(st), &e);
    st_mark(st, e.newest);
}

int
sh_store_remove(sh_store_t *st, uint32_t ref)
{
    sh_store_doc_t *d;

    if (!stored(st, ref)) {
        return -1;
    }
    d = &st_docs(st)[ref];
    mark_links(st, ref);
    keys_delete(st, ref, d->keyhash);
    text_drop(st, ref);
    d->keyhash = 0;
    return sh_index_remove(sh_store_index(st), ref);
}

uint32_t
sh_store_put(sh_store_t *st, const char *key, size_t len, uint64_t keyhash,
             uint64_t fingerprint, const sh_store_doc_t *doc,
             uint32_t *evicted)
{
    sh_index_t      *ix = sh_store_index(st);
    sh_index_ends_t  e;
    sh_store_doc_t  *d;
    uint32_t         ref, older, newer;

    if (evicted != NULL) {
        *evicted = SH_NOREF;
    }
    sh_index_ends(ix, &e);
    if (e.entries >= st->capacity) {
        if (sh_store_remove(st, e.oldest) != 0) {
            return SH_NOREF;
        }
        st->evictions++;
        if (evicted != NULL) {
            *evicted = e.oldest;
        }
    }
    mark_newest(st);
    ref = sh_index_insert(ix, fingerprint, NULL);
    if (ref == SH_NOREF || ref >= st->capacity) {
        return SH_NOREF;
    }
    st_mark(st, ref);
    if (sh_index_links(ix, ref, &older, &newer) == 0) {
        st_mark(st, older);
    }
    d = &st_docs(st)[ref];
    *d = *doc;
    d->keyhash = keyhash ? keyhash : 1;
    d->text = SH_STORE_NOTEXT;
    st_keys_insert(st, ref, d->keyhash);
    if (key != NULL) {
        text_append(st, ref, key, len);
    }
    return ref;
}

/* After the index made ref the newest: its new neighbour changed too, and
 * its text moves to the front when it is in the older half of the ring. */
static void
made_newest(sh_store_t *st, uint32_t ref)
{
    sh_store_doc_t *d = &st_docs(st)[ref];
    uint32_t        older, newer;
    const char     *text;
    char            copy[REFRESH_MAX];
    size_t          len;

    if (sh_index_links(sh_store_index(st), ref, &older, &newer) == 0) {
        st_mark(st, older);
    }
    if (d->text == SH_STORE_NOTEXT
        || st->text_head - st_text_pos(st, d->text) <= st->text_size / 2)
    {
        return;
    }
    len = sh_store_key(st, ref, &text);
    if (len == 0 || len > sizeof(copy)) {
        return;
    }
    memcpy(copy, text, len);        /* making room may overwrite it */
    text_drop(st, ref);
    text_append(st, ref, copy, len);
}

int
sh_store_touch(sh_store_t *st, uint32_t ref)
{
    if (!stored(st, ref)) {
        return -1;
    }
    mark_links(st, ref);
    mark_newest(st);
    if (sh_index_touch(sh_store_index(st), ref) != 0) {
        return -1;
    }
    made_newest(st, ref);
    return 0;
}

int
sh_store_update(sh_store_t *st, uint32_t ref, uint64_t fingerprint)
{
    if (!stored(st, ref)) {
        return -1;
    }
    mark_links(st, ref);
    mark_newest(st);
    if (sh_index_update(sh_store_index(st), ref, fingerprint) != 0) {
        return -1;
    }
    made_newest(st, ref);
    return 0;
}

const sh_store_doc_t *
sh_store_doc(const sh_store_t *st, uint32_t ref)
{
    return stored(st, ref) ? &st_docs(st)[ref] : NULL;
}

void
sh_store_set(sh_store_t *st, uint32_t ref, const sh_store_doc_t *doc)
{
    sh_store_doc_t *d;

    if (!stored(st, ref)) {
        return;
    }
    d = &st_docs(st)[ref];
    st_mark(st, ref);
    d->digest = doc->digest;
    d->sketches = doc->sketches;
    d->time = doc->time;
}

void
sh_store_id(const sh_store_t *st, uint32_t ref, char *out)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t          h = ref < st->capacity ? st_docs(st)[ref].keyhash : 0;
    int               i;

    for (i = SH_STORE_ID_LEN - 1; i >= 0; i--) {
        out[i] = hex[h & 15];
        h >>= 4;
    }
    out[SH_STORE_ID_LEN] = '\0';
}

void
sh_store_stats(const sh_store_t *st, sh_store_stats_t *s)
{
    sh_index_stats_t is;

    sh_index_stats(sh_store_index_const(st), &is);
    memset(s, 0, sizeof(*s));
    s->capacity = st->capacity;
    s->entries = is.entries;
    s->region_bytes = st->region_size;
    s->text_bytes = st->text_size;
    s->doc_bytes = st->region_size - st->text_size;
    s->text_used = st->text_head - st->text_tail;
    s->texts = st->texts;
    s->text_evictions = st->text_evictions;
    s->evictions = st->evictions;
    s->collisions = __atomic_load_n(&st->collisions, __ATOMIC_RELAXED);
}

/* ---- Repair. ---- */

typedef struct {
    uint32_t *order;
    uint32_t  n;
    uint32_t  max;
    uint8_t  *seen;
} repair_t;

static int
repair_visit(void *arg, uint32_t ref, uint64_t hash)
{
    repair_t *r = arg;

    if (ref < r->max && !r->seen[ref] && r->n < r->max) {
        r->seen[ref] = 1;
        r->order[r->n++] = ref;
    }
    return 0;
}

long
sh_store_repair(sh_store_t *st, uint32_t *lost)
{
    sh_index_t      *ix = sh_store_index(st);
    sh_index_ends_t  e, ne;
    sh_index_doc_t  *docs;
    sh_store_doc_t  *d;
    uint32_t        *vals;
    repair_t         r;
    uint64_t        *hash, seed = sh_index_seed_digest(ix);
    uint32_t         version = sh_index_version(ix), i, ref, kept = 0;
    uint32_t        *k = st_keys(st), free_head = SH_NOREF;
    char             err[256];

    sh_index_ends(ix, &e);
    if (e.hwm > st->capacity) {
        e.hwm = st->capacity;
    }
    r.max = e.hwm;
    r.n = 0;
    r.order = malloc((r.max ? r.max : 1) * sizeof(*r.order));
    r.seen = calloc(r.max ? r.max : 1, 1);
    hash = malloc((r.max ? r.max : 1) * sizeof(*hash));
    vals = malloc((r.max ? r.max : 1) * sizeof(*vals));
    if (r.order == NULL || r.seen == NULL || hash == NULL || vals == NULL) {
        free(r.order);
        free(r.seen);
        free(hash);
        free(vals);
        return -1;
    }

    /* the age order as far as it still goes, then the refs it lost */
    sh_index_foreach(ix, repair_visit, &r);
    for (ref = 0; ref < e.hwm; ref++) {
        uint64_t h;

        if (!r.seen[ref] && sh_index_get(ix, ref, &h) == 0) {
            repair_visit(&r, ref, h);
        }
    }
    for (i = 0; i < r.n; i++) {
        (void) sh_index_get(ix, r.order[i], &hash[i]);
    }

    /* a fresh index, the same refs in that order */
    (void) sh_index_init(ix, st->index_size, 0, seed, NULL, 0);
    sh_index_set_version(ix, version);
    docs = sh_index_import_area(ix);
    memset(r.seen, 0, r.max);
    for (i = 0; i < r.n; i++) {
        ref = r.order[i];
        if (st_docs(st)[ref].keyhash == 0) {
            continue;               /* a put the writer did not finish */
        }
        r.order[kept] = ref;
        hash[kept++] = hash[i];
        r.seen[ref] = 1;
    }
    for (i = 0; i < kept; i++) {
        ref = r.order[i];
        docs[ref].hash = hash[i];
        docs[ref].older = i ? r.order[i - 1] : SH_NOREF;
        docs[ref].newer = i + 1 < kept ? r.order[i + 1] : SH_NOREF;
    }
    for (ref = e.hwm; ref-- > 0; ) {
        if (!r.seen[ref]) {
            docs[ref].hash = 0;
            docs[ref].older = SH_INDEX_FREE;
            docs[ref].newer = free_head;
            free_head = ref;
            st_docs(st)[ref].keyhash = 0;
            st_docs(st)[ref].text = SH_STORE_NOTEXT;
        }
    }
    ne.hwm = e.hwm;
    ne.entries = kept;
    ne.oldest = kept ? r.order[0] : SH_NOREF;
    ne.newest = kept ? r.order[kept - 1] : SH_NOREF;
    ne.free_head = free_head;
    if (sh_index_import(ix, NULL, &ne, err, sizeof(err)) != 0) {
        /* cannot happen: built consistent above; start empty rather
         * than run on a broken index */
        (void) sh_index_init(ix, st->index_size, 0, seed, NULL, 0);
        sh_index_set_version(ix, version);
        kept = 0;
    }

    /* the key table, from the records */
    for (i = 0; i < st->kslots; i++) {
        k[i] = SH_NOREF;
    }
    for (i = 0; i < kept; i++) {
        hash[i] = st_docs(st)[r.order[i]].keyhash;     /* free again */
        vals[i] = r.order[i];
    }
    st_keys_build(st, hash, vals, kept);

    /* the ring: its ends if they still make sense, each text checked */
    if (st->text_tail > st->text_head
        || st->text_head - st->text_tail > st->text_size
        || ((st->text_head | st->text_tail) & 7) != 0)
    {
        st->text_tail = st->text_head = 0;
    }
    st->texts = 0;
    for (i = 0; i < kept; i++) {
        const char *text;

        d = &st_docs(st)[r.order[i]];
        if (d->text != SH_STORE_NOTEXT) {
            st->texts++;
            if (sh_store_key(st, r.order[i], &text) == 0) {
                d->text = SH_STORE_NOTEXT;
                st->texts--;
            }
        }
    }

    st->saving = 0;
    st->repairs++;
    if (lost != NULL) {
        *lost = e.entries > kept ? e.entries - kept : 0;
    }
    free(r.order);
    free(r.seen);
    free(hash);
    free(vals);
    return (long) kept;
}

/* ---- Check. ---- */

typedef struct {
    const sh_store_t *st;
    uint64_t          texts;
    const char       *bad;
} check_t;

static int
check_doc(void *arg, uint32_t ref, uint64_t hash)
{
    check_t              *c = arg;
    const sh_store_t     *st = c->st;
    const sh_store_doc_t *d = &st_docs(st)[ref];
    const uint32_t       *k = st_keys(st);
    const char           *text;
    uint32_t              i = home(st, d->keyhash), n;

    if (d->keyhash == 0) {
        c->bad = "a stored document without a key hash";
        return 1;
    }
    for (n = 0; n < st->kslots && k[i] != ref; n++) {
        if (k[i] == SH_NOREF) {
            c->bad = "a stored document missing from the key table";
            return 1;
        }
        i = i + 1 == st->kslots ? 0 : i + 1;
    }
    if (d->text != SH_STORE_NOTEXT) {
        if (sh_store_key(st, ref, &text) == 0) {
            c->bad = "a record names text that is not its own";
            return 1;
        }
        c->texts++;
    }
    return 0;
}

int
sh_store_check(const sh_store_t *st, char *err, size_t errlen)
{
    check_t          c = { st, 0, NULL };
    sh_index_stats_t is;
    uint32_t         i, used = 0;
    const uint32_t  *k = st_keys(st);

    if (sh_index_check(sh_store_index_const(st), err, errlen) != 0) {
        return -1;
    }
    sh_index_stats(sh_store_index_const(st), &is);
    for (i = 0; i < st->kslots; i++) {
        if (k[i] != SH_NOREF) {
            if (!stored(st, k[i])) {
                sh_err_set(err, errlen, "the key table names a free ref");
                return -1;
            }
            used++;
        }
    }
    if (used != is.entries) {
        sh_err_set(err, errlen, "key table and index disagree on the count");
        return -1;
    }
    sh_index_foreach(sh_store_index_const(st), check_doc, &c);
    if (c.bad != NULL) {
        sh_err_set(err, errlen, "%s", c.bad);
        return -1;
    }
    if (c.texts != st->texts) {
        sh_err_set(err, errlen, "the count of texts is wrong");
        return -1;
    }
    return 0;
}
