
/*
 * The shared memory zone of the simhash module: the PSM index of the
 * fingerprints and each document's key, shared by every worker.
 *
 * Layout (one slab pool, as limit_req):
 *   shpool->data -> ngx_http_simhash_shctx_t
 *   sh->index    -> the sh_index region: ONE slab allocation of
 *                   sh_index_region_size(capacity) bytes (fingerprints, refs,
 *                   age order; offsets only)
 *   sh->docs     -> capacity pointers, docs[ref] = the document's node
 *   sh->digests, sh->times, sh->sketches -> per document: the body digest,
 *                   the listing veto's sketches, the second of
 *                   its version
 *   nodes        -> one slab allocation per document: rbtree node keyed by
 *                   crc32(key), ref, the key bytes
 *
 * Locking: every index operation, lookups included, runs under the slab
 * pool's mutex (ngx_shmtx_t).  The sh_index contract asks for a shared lock
 * for lookups and an exclusive one for changes; an exclusive mutex satisfies
 * both.  We take it for the key lookup, the PSM lookup and the insert
 * together, so two workers fingerprinting copies of the same page cannot
 * both insert it.  The critical section is short and bounded (a few bucket
 * probes, no allocation outside the slab, no I/O): the fingerprint is
 * computed before, outside the lock.  And unlike an ngx_rwlock, the master
 * releases this mutex when a worker dies holding it (ngx_unlock_mutexes),
 * so a crashed worker cannot wedge the zone.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"


/*
 * Zone sizing: the index region gets the capacity such that the region, the
 * ref-indexed arrays (a node pointer, a body digest, a version second and
 * the two sketches per document) and one document node of KEY_BUDGET bytes per document fit
 * in the zone minus a reserve for the slab pool's own bookkeeping.  A
 * document node is a slab allocation of 48 bytes + the key, rounded up to a
 * power of two: 128 bytes for keys up to 80 characters, 256 up to 208.
 * Longer keys on average make the slab run out first; then the oldest
 * documents are evicted just the same.
 */
#define NGX_HTTP_SIMHASH_KEY_BUDGET 192


static ngx_http_simhash_doc_t *ngx_http_simhash_lookup_key(
    ngx_http_simhash_shctx_t *sh, ngx_str_t *key, uint32_t hash);
static void ngx_http_simhash_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static void ngx_http_simhash_forget(ngx_http_simhash_zone_t *zone,
    uint32_t ref);
static ngx_int_t ngx_http_simhash_evict_oldest(ngx_http_simhash_zone_t *zone);
static void ngx_http_simhash_repair(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_format_index(ngx_http_simhash_shctx_t *sh,
    char *err, size_t errlen);
static ngx_int_t ngx_http_simhash_reset(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static void ngx_http_simhash_migrate(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);


/*
 * The lock.  A worker that dies holding the mutex leaves sh->writer set if
 * it was changing the zone; the master releases the mutex, and the next
 * holder finds the mark and repairs (ngx_http_simhash_repair()).
 */

void
ngx_http_simhash_zone_lock(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    ngx_shmtx_lock(&zone->shpool->mutex);

    if (zone->sh->writer) {
        ngx_http_simhash_repair(zone, log);
    }
}


void
ngx_http_simhash_zone_write(ngx_http_simhash_zone_t *zone)
{
    zone->sh->writer = ngx_pid;
}


void
ngx_http_simhash_zone_unlock(ngx_http_simhash_zone_t *zone)
{
    zone->sh->writer = 0;
    ngx_shmtx_unlock(&zone->shpool->mutex);
}


ngx_http_simhash_doc_t *
ngx_http_simhash_zone_key(ngx_http_simhash_zone_t *zone, ngx_str_t *key)
{
    return ngx_http_simhash_lookup_key(zone->sh, key,
                                       ngx_crc32_long(key->data, key->len));
}


static ngx_http_simhash_doc_t *
ngx_http_simhash_lookup_key(ngx_http_simhash_shctx_t *sh, ngx_str_t *key,
    uint32_t hash)
{
    ngx_int_t                rc;
    ngx_rbtree_node_t       *node, *sentinel;
    ngx_http_simhash_doc_t  *doc;

    node = sh->rbtree.root;
    sentinel = sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash < node->key) {
            node = node->left;
            continue;
        }

        if (hash > node->key) {
            node = node->right;
            continue;
        }

        doc = (ngx_http_simhash_doc_t *) node;

        rc = ngx_memn2cmp(key->data, doc->data, key->len, (size_t) doc->len);

        if (rc == 0) {
            return doc;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_simhash_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t       **p;
    ngx_http_simhash_doc_t   *d, *dt;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else { /* node->key == temp->key */

            d = (ngx_http_simhash_doc_t *) node;
            dt = (ngx_http_simhash_doc_t *) temp;

            p = (ngx_memn2cmp(d->data, dt->data, d->len, dt->len) < 0)
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


/*
 * A new document: its node first (evicting the oldest documents while the
 * slab is out of memory), then its fingerprint (the index evicts the oldest
 * when it is full).  Called with the mutex held.  Returns the ref.
 */

uint32_t
ngx_http_simhash_zone_store(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    uint64_t fingerprint, uint64_t digest, uint32_t time,
    const sh_sketches_t *sketches)
{
    size_t                     size;
    uint32_t                   ref, evicted;
    ngx_http_simhash_doc_t    *doc;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;
    size = offsetof(ngx_http_simhash_doc_t, data) + key->len;

    for ( ;; ) {
        doc = ngx_slab_alloc_locked(zone->shpool, size);

        if (doc) {
            break;
        }

        if (ngx_http_simhash_evict_oldest(zone) != NGX_OK) {
            return SH_NOREF;
        }

        (void) ngx_atomic_fetch_add(&sh->key_evictions, 1);
    }

    ref = sh_index_insert(sh->index, fingerprint, &evicted);

    if (evicted != SH_NOREF && evicted < sh->capacity && sh->docs[evicted]) {
        ngx_http_simhash_forget(zone, evicted);
    }

    if (ref == SH_NOREF || ref >= sh->capacity) {
        /* cannot happen: sh->capacity is the index's own */
        if (ref != SH_NOREF) {
            (void) sh_index_remove(sh->index, ref);
        }

        ngx_slab_free_locked(zone->shpool, doc);
        return SH_NOREF;
    }

    if (sh->docs[ref]) {
        /* cannot happen: the index reuses only refs it reported evicted */
        ngx_http_simhash_forget(zone, ref);
    }

    doc->node.key = ngx_crc32_long(key->data, key->len);
    doc->ref = ref;
    doc->len = (uint16_t) key->len;
    ngx_memcpy(doc->data, key->data, key->len);

    ngx_rbtree_insert(&sh->rbtree, &doc->node);
    sh->docs[ref] = doc;
    sh->digests[ref] = digest;
    sh->times[ref] = time;

    if (sketches) {
        sh->sketches[ref] = *sketches;

    } else {
        ngx_memzero(&sh->sketches[ref], sizeof(sh_sketches_t));
    }

    sh->key_bytes += key->len;
    sh->key_max = ngx_max(sh->key_max, key->len);

    (void) ngx_atomic_fetch_add(&sh->generation, 1);

    return ref;
}


/* Drop our data of document `ref` (already gone from the index). */

static void
ngx_http_simhash_forget(ngx_http_simhash_zone_t *zone, uint32_t ref)
{
    if (zone->sh->docs[ref]) {
        ngx_http_simhash_zone_forget(zone, zone->sh->docs[ref]);
    }
}


void
ngx_http_simhash_zone_forget(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_doc_t *doc)
{
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    ngx_rbtree_delete(&sh->rbtree, &doc->node);
    sh->key_bytes -= doc->len;

    if (doc->ref < sh->capacity && sh->docs[doc->ref] == doc) {
        sh->docs[doc->ref] = NULL;
    }

    ngx_slab_free_locked(zone->shpool, doc);
}


uint64_t
ngx_http_simhash_zone_changed(ngx_http_simhash_zone_t *zone, uint32_t ref)
{
    uint64_t                   now;
    ngx_time_t                *tp;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    if (ref >= sh->capacity) {
        return 0;
    }

    tp = ngx_timeofday();
    now = sh_stream_next_time((uint64_t) tp->sec * 1000 + tp->msec,
                              sh->times[ref]);
    sh->times[ref] = sh_stream_second(now);

    return now;
}


static int
ngx_http_simhash_first_visit(void *arg, uint32_t ref, uint64_t hash)
{
    *(uint32_t *) arg = ref;
    return 1;
}


static ngx_int_t
ngx_http_simhash_evict_oldest(ngx_http_simhash_zone_t *zone)
{
    uint32_t                   ref;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;
    ref = SH_NOREF;

    sh_index_foreach(sh->index, ngx_http_simhash_first_visit, &ref);

    if (ref == SH_NOREF) {
        return NGX_DECLINED;
    }

    (void) sh_index_remove(sh->index, ref);

    if (ref < sh->capacity) {
        ngx_http_simhash_forget(zone, ref);
    }

    return NGX_OK;
}


/*
 * A worker died while it was changing the zone (sh->writer is its pid; the
 * master released the mutex it held).  Its change may be half done: the
 * index's age list, table and counters may disagree (a SIGKILL between the
 * two steps of an insert left the zone refusing every new page with "no
 * room" until the restart, and every snapshot saved since refused at the
 * start: "inconsistent index"), and the key tree may be mid-rebalance.
 * Rebuild both from what the module owns: every document of the ref array
 * with the fingerprint the index has for its ref, oldest first as far as
 * the age list still says, into a freshly formatted index and tree (the
 * nodes are reused, nothing is allocated in the zone).  Called with the
 * mutex held.  The node of a document the dead worker was storing is lost
 * (one slab chunk); the lookups and probes counters restart from zero.
 */

typedef struct {
    ngx_http_simhash_shctx_t    *sh;
    ngx_http_simhash_doc_t     **doc;       /* taken out of sh->docs */
    uint64_t                    *hash;
    uint64_t                    *digest;
    uint32_t                    *time;
    sh_sketches_t               *sketches;
    ngx_uint_t                   n;
} ngx_http_simhash_repair_t;


static void
ngx_http_simhash_repair_take(ngx_http_simhash_repair_t *rp, uint32_t ref,
    uint64_t hash)
{
    if (ref < rp->sh->capacity && rp->sh->docs[ref]
        && rp->n < rp->sh->capacity)
    {
        rp->doc[rp->n] = rp->sh->docs[ref];
        rp->digest[rp->n] = rp->sh->digests[ref];
        rp->time[rp->n] = rp->sh->times[ref];
        rp->sketches[rp->n] = rp->sh->sketches[ref];
        rp->hash[rp->n++] = hash;
        rp->sh->docs[ref] = NULL;
    }
}


static int
ngx_http_simhash_repair_visit(void *arg, uint32_t ref, uint64_t hash)
{
    ngx_http_simhash_repair_take(arg, ref, hash);
    return 0;
}


static void
ngx_http_simhash_repair(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    char                        err[256], why[256];
    uint32_t                    ref, evicted;
    uint64_t                    hash;
    ngx_uint_t                  i, kept, lost;
    ngx_pid_t                   pid;
    sh_index_stats_t            st;
    ngx_http_simhash_doc_t     *doc;
    ngx_http_simhash_shctx_t   *sh;
    ngx_http_simhash_repair_t   rp;

    sh = zone->sh;
    pid = (ngx_pid_t) sh->writer;

    rp.sh = sh;
    rp.n = 0;
    rp.doc = ngx_alloc(sh->capacity * sizeof(ngx_http_simhash_doc_t *), log);
    rp.hash = ngx_alloc(sh->capacity * sizeof(uint64_t), log);
    rp.digest = ngx_alloc(sh->capacity * sizeof(uint64_t), log);
    rp.time = ngx_alloc(sh->capacity * sizeof(uint32_t), log);
    rp.sketches = ngx_alloc(sh->capacity * sizeof(sh_sketches_t), log);

    if (rp.doc == NULL || rp.hash == NULL || rp.digest == NULL
        || rp.time == NULL || rp.sketches == NULL)
    {
        /* sh->writer stays: the next holder of the mutex tries again */
        goto done;
    }

    if (sh_index_check(sh->index, why, sizeof(why)) == 0) {
        ngx_cpystrn((u_char *) why, (u_char *) "consistent", sizeof(why));
    }

    /* oldest first as the age list says (bounded, whatever its state) */

    sh_index_foreach(sh->index, ngx_http_simhash_repair_visit, &rp);

    /* then the documents it missed; those without a fingerprint go */

    lost = 0;

    for (ref = 0; ref < sh->capacity; ref++) {
        if (sh->docs[ref] == NULL) {
            continue;
        }

        if (sh_index_get(sh->index, ref, &hash) == 0) {
            ngx_http_simhash_repair_take(&rp, ref, hash);

        } else {
            ngx_slab_free_locked(zone->shpool, sh->docs[ref]);
            sh->docs[ref] = NULL;
            lost++;
        }
    }

    sh_index_stats(sh->index, &st);

    if (ngx_http_simhash_format_index(sh, err, sizeof(err)) != NGX_OK) {
        /* cannot happen: the region was formatted with these before */
        ngx_log_error(NGX_LOG_ALERT, log, 0, "simhash zone \"%V\": %s",
                      &zone->name, err);
        sh->writer = 0;
        goto done;
    }

    (void) ngx_atomic_fetch_add(&sh->key_evictions, st.evictions);

    ngx_rbtree_init(&sh->rbtree, &sh->sentinel,
                    ngx_http_simhash_rbtree_insert_value);
    ngx_memzero(sh->digests, sh->capacity * sizeof(uint64_t));
    ngx_memzero(sh->times, sh->capacity * sizeof(uint32_t));
    ngx_memzero(sh->sketches, sh->capacity * sizeof(sh_sketches_t));
    sh->key_bytes = 0;
    kept = 0;

    for (i = 0; i < rp.n; i++) {
        doc = rp.doc[i];
        ref = sh_index_insert(sh->index, rp.hash[i], &evicted);

        if (ref == SH_NOREF || ref >= sh->capacity) {
            /* cannot happen: at most capacity documents */
            ngx_slab_free_locked(zone->shpool, doc);
            lost++;
            continue;
        }

        doc->ref = ref;
        sh->docs[ref] = doc;
        sh->digests[ref] = rp.digest[i];
        sh->times[ref] = rp.time[i];
        sh->sketches[ref] = rp.sketches[i];
        ngx_rbtree_insert(&sh->rbtree, &doc->node);
        sh->key_bytes += doc->len;
        kept++;
    }

    sh->writer = 0;
    (void) ngx_atomic_fetch_add(&sh->generation, 1);

    ngx_log_error(NGX_LOG_ERR, log, 0,
                  "simhash zone \"%V\": worker process %P died while "
                  "changing it; rebuilt with %ui documents, %ui lost "
                  "(the index was: %s)", &zone->name, pid, kept, lost, why);

done:

    if (rp.doc) {
        ngx_free(rp.doc);
    }

    if (rp.hash) {
        ngx_free(rp.hash);
    }

    if (rp.digest) {
        ngx_free(rp.digest);
    }

    if (rp.time) {
        ngx_free(rp.time);
    }

    if (rp.sketches) {
        ngx_free(rp.sketches);
    }
}


/*
 * Capacity for a zone of `size` bytes: the largest n whose index region,
 * pointer array and node budget fit in what the slab pool leaves us.
 */

/*
 * Format the zone's index empty, under the zone's seed and extraction
 * version: what a snapshot of it will carry.
 */

static ngx_int_t
ngx_http_simhash_format_index(ngx_http_simhash_shctx_t *sh, char *err,
    size_t errlen)
{
    if (sh_index_init(sh->index, sh->region_size, 0, sh->seed_digest, err,
                      errlen)
        == NULL)
    {
        return NGX_ERROR;
    }

    sh_index_set_version(sh->index, sh->version);

    return NGX_OK;
}


/* The documents a zone of zone_size bytes holds (see KEY_BUDGET). */

uint32_t
ngx_http_simhash_zone_capacity(size_t zone_size)
{
    size_t    avail, need;
    uint32_t  lo, hi, mid;

    /* slab pool header and per-page bookkeeping (about 1.5%), our shctx */

    if (zone_size < 64 * 1024) {
        return 0;
    }

    avail = zone_size - zone_size / 32 - 16 * 1024;

    lo = 0;
    hi = (uint32_t) ngx_min((uint64_t) avail / 64, (uint64_t) UINT32_MAX - 1);

    while (lo < hi) {
        mid = lo + (hi - lo + 1) / 2;

        need = sh_index_region_size(mid)
               + (size_t) mid * (sizeof(void *) + sizeof(uint64_t)
                                 + sizeof(uint32_t) + sizeof(sh_sketches_t)
                                 + NGX_HTTP_SIMHASH_KEY_BUDGET);

        if (need <= avail) {
            lo = mid;

        } else {
            hi = mid - 1;
        }
    }

    return lo;
}


ngx_int_t
ngx_http_simhash_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_simhash_zone_t  *ozone = data;

    size_t                     len;
    char                       err[256];
    ngx_slab_pool_t           *shpool;
    sh_index_stats_t           st;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    zone = shm_zone->data;

    if (ozone) {
        /* reload, same name and size: keep everything */

        zone->sh = ozone->sh;
        zone->shpool = ozone->shpool;

        if (zone->sh->seed_digest != zone->seed_digest) {
            ngx_log_error(NGX_LOG_WARN, shm_zone->shm.log, 0,
                          "simhash zone \"%V\": simhash_seed changed, "
                          "the index starts empty", &zone->name);

            return ngx_http_simhash_reset(zone, shm_zone->shm.log);
        }

        if (zone->sh->version != zone->version) {
            ngx_log_error(NGX_LOG_WARN, shm_zone->shm.log, 0,
                          "simhash zone \"%V\": extraction version %08xD "
                          "became %08xD (options changed), the index starts "
                          "empty", &zone->name, zone->sh->version,
                          zone->version);

            return ngx_http_simhash_reset(zone, shm_zone->shm.log);
        }

        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    zone->shpool = shpool;

    if (shm_zone->shm.exists) {
        zone->sh = shpool->data;
        return NGX_OK;
    }

    sh = ngx_slab_calloc(shpool, sizeof(ngx_http_simhash_shctx_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    shpool->data = sh;
    zone->sh = sh;

    len = sizeof(" in simhash zone \"\"") + shm_zone->shm.name.len;

    shpool->log_ctx = ngx_slab_alloc(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(shpool->log_ctx, " in simhash zone \"%V\"%Z",
                &shm_zone->shm.name);

    shpool->log_nomem = 0;

    sh->region_size = sh_index_region_size(
                           ngx_http_simhash_zone_capacity(shm_zone->shm.size));

    sh->index = ngx_slab_alloc(shpool, sh->region_size);
    if (sh->index == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\" is too small", &zone->name);
        return NGX_ERROR;
    }

    sh->seed_digest = zone->seed_digest;
    sh->version = zone->version;

    if (ngx_http_simhash_format_index(sh, err, sizeof(err)) != NGX_OK) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\": %s", &zone->name, err);
        return NGX_ERROR;
    }

    /* the index decides its capacity from the region: refs are below it */

    sh_index_stats(sh->index, &st);
    sh->capacity = st.capacity;

    sh->docs = ngx_slab_calloc(shpool,
                               sh->capacity * sizeof(ngx_http_simhash_doc_t *));
    sh->digests = ngx_slab_calloc(shpool, sh->capacity * sizeof(uint64_t));
    sh->times = ngx_slab_calloc(shpool, sh->capacity * sizeof(uint32_t));
    sh->sketches = ngx_slab_calloc(shpool,
                                   sh->capacity * sizeof(sh_sketches_t));

    if (sh->docs == NULL || sh->digests == NULL || sh->times == NULL
        || sh->sketches == NULL)
    {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\" is too small", &zone->name);
        return NGX_ERROR;
    }

    ngx_rbtree_init(&sh->rbtree, &sh->sentinel,
                    ngx_http_simhash_rbtree_insert_value);

    sh->last_save = ngx_time();

    if (ngx_test_config) {
        return NGX_OK;
    }

    /* a reload that resized the zone: take the documents over */

    ngx_http_simhash_migrate(zone, shm_zone->shm.log);

    /* a new zone starts from its snapshot: ngx_http_simhash_init_module
     * loads it, once every zone of the cycle exists */

    zone->load = (sh->generation == 0 && zone->file.len);

    ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                  "simhash zone \"%V\": %uz bytes, capacity %uD documents, "
                  "match=%s distance=%ui threshold=%.4f",
                  &zone->name, shm_zone->shm.size, sh->capacity,
                  sh_rule_name(zone->rule), zone->distance,
                  sh_score_nats(zone->threshold));

    return NGX_OK;
}


/* Empty the zone and format the index under the current seed. */

static ngx_int_t
ngx_http_simhash_reset(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    char                       err[256];
    uint32_t                   ref;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    /* the lock repairs a half-changed tree: it must be whole to forget */

    ngx_http_simhash_zone_lock(zone, log);
    ngx_http_simhash_zone_write(zone);

    for (ref = 0; ref < sh->capacity; ref++) {
        if (sh->docs[ref]) {
            ngx_http_simhash_forget(zone, ref);
        }
    }

    sh->seed_digest = zone->seed_digest;
    sh->version = zone->version;

    if (ngx_http_simhash_format_index(sh, err, sizeof(err)) != NGX_OK) {
        ngx_http_simhash_zone_unlock(zone);
        ngx_log_error(NGX_LOG_EMERG, log, 0, "simhash zone \"%V\": %s",
                      &zone->name, err);
        return NGX_ERROR;
    }

    (void) ngx_atomic_fetch_add(&sh->generation, 1);

    ngx_http_simhash_zone_unlock(zone);

    return NGX_OK;
}


/* Documents of another index into the zone: see ngx_http_simhash.h. */

static int
ngx_http_simhash_copy_visit(void *arg, uint32_t ref, uint64_t hash)
{
    ngx_http_simhash_copy_t  *cp = arg;

    ngx_str_t  *key;

    if (ref >= cp->nkeys || cp->keys[ref].len == 0
        || (cp->hashes && cp->hashes[ref] != hash))
    {
        cp->missing++;
        return 0;
    }

    key = &cp->keys[ref];

    if (ngx_http_simhash_zone_key(cp->zone, key)) {
        cp->missing++;
        return 0;
    }

    if (ngx_http_simhash_zone_store(cp->zone, key, hash,
                                    cp->digests ? cp->digests[ref] : 0,
                                    cp->times ? cp->times[ref] : 0,
                                    cp->sketches ? &cp->sketches[ref] : NULL)
        != SH_NOREF)
    {
        cp->copied++;
    }

    return 0;
}


void
ngx_http_simhash_zone_copy(ngx_http_simhash_copy_t *cp,
    const sh_index_t *from)
{
    sh_index_foreach(from, ngx_http_simhash_copy_visit, cp);
}


/*
 * On a reload, the data of the running cycle's shared memory zone of this
 * module with the name of `shm` but another memory (it was resized), or
 * NULL: the zone a resized one takes its contents over from.
 */

void *
ngx_http_simhash_old_zone(ngx_shm_zone_t *shm)
{
    ngx_uint_t        i;
    ngx_shm_zone_t   *oshm;
    ngx_list_part_t  *part;

    if (ngx_is_init_cycle(ngx_cycle)) {
        return NULL;
    }

    part = &((ngx_cycle_t *) ngx_cycle)->shared_memory.part;
    oshm = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }
            part = part->next;
            oshm = part->elts;
            i = 0;
        }

        if (oshm[i].tag == &ngx_http_simhash_module
            && oshm[i].shm.name.len == shm->shm.name.len
            && ngx_strncmp(oshm[i].shm.name.data, shm->shm.name.data,
                           shm->shm.name.len) == 0
            && oshm[i].shm.addr != shm->shm.addr
            && oshm[i].data)
        {
            return oshm[i].data;
        }
    }
}


/* A reload that resized the zone: take the documents of the old one over. */

static void
ngx_http_simhash_migrate(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    uint32_t                   ref;
    ngx_http_simhash_copy_t    cp;
    ngx_http_simhash_zone_t   *ozone;
    ngx_http_simhash_shctx_t  *osh;

    ozone = ngx_http_simhash_old_zone(zone->shm_zone);

    if (ozone == NULL || ozone->sh == NULL
        || ozone->sh->seed_digest != zone->seed_digest
        || ozone->sh->version != zone->version)
    {
        return;
    }

    osh = ozone->sh;

    cp.zone = zone;
    cp.hashes = NULL;
    cp.digests = osh->digests;
    cp.times = osh->times;
    cp.sketches = osh->sketches;
    cp.nkeys = osh->capacity;
    cp.copied = 0;
    cp.missing = 0;

    cp.keys = ngx_alloc(osh->capacity * sizeof(ngx_str_t), log);
    if (cp.keys == NULL) {
        return;
    }

    /* the old workers still run: hold the old zone's mutex while copying */

    ngx_http_simhash_zone_lock(ozone, log);
    ngx_http_simhash_zone_lock(zone, log);

    for (ref = 0; ref < osh->capacity; ref++) {
        if (osh->docs[ref]) {
            cp.keys[ref].data = osh->docs[ref]->data;
            cp.keys[ref].len = osh->docs[ref]->len;

        } else {
            cp.keys[ref].len = 0;
        }
    }

    ngx_http_simhash_zone_copy(&cp, osh->index);

    /* where replication was: the documents are the same */

    zone->sh->repl_id = osh->repl_id;
    zone->sh->repl_stream = osh->repl_stream;
    zone->sh->repl_since = osh->repl_since;

    ngx_http_simhash_zone_unlock(zone);
    ngx_http_simhash_zone_unlock(ozone);

    ngx_free(cp.keys);

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\" resized: %ui documents taken over",
                  &zone->name, cp.copied);
}
