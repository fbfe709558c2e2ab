/*
 * The shared memory zone of the simhash module: the PSM index of the
 * fingerprints and each document's key, shared by every worker; the zone
 * core, the floor every other file of the module stands on.  It is the
 * only door to the store (src/sh_store.h, sh_index.h), and it calls the
 * features that keep state in a zone only through their part's hooks
 * (ngx_http_simhash_part_t, handed down by the module): it names none.
 *
 * Layout (one slab pool, as limit_req):
 *   shpool->data -> ngx_http_simhash_shctx_t, and after it, in the same
 *                   allocation, each part's shctx_size bytes of shared
 *                   state (the counters, the DUST learner's, the
 *                   saves');
 *                   sh->part[index] points to each part's
 *   sh->store    -> the sh_store region (src/sh_store.h): ONE slab
 *                   allocation holding the PSM index, a fixed record per
 *                   document (body digest, key hash, sketches, version
 *                   second), the key table and the key text ring; offsets
 *                   only, no pointer per document
 *   sh->index    -> the store's index, for lookups
 *   the parts'   -> what a part's shm_size added to the zone's size and
 *   regions         its shm_init allocated: with dust=SIZE, the DUST
 *                   learner's region (src/sh_dust.h), SIZE bytes of fixed
 *                   tables of hosts, candidates, evidence and canonical
 *                   forms; the console's tables (rates, sites, the last
 *                   decisions)
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

#if (NGX_LINUX)
#include <sys/mman.h>
#endif


/*
 * Zone sizing: the zone holds the shctx and one store region
 * (sh_store.h): 76 bytes a document whatever its key, and a ring for the
 * keys' text.  Without keys=, the ring gets TEXT_SHARE of what the slab
 * leaves, room for the text of every document whose key is about 90
 * characters; longer keys on average make the ring turn over first, and
 * the oldest documents are then named by their id.
 */
#define NGX_HTTP_SIMHASH_TEXT_SHARE  56     /* percent */


static void ngx_http_simhash_repair(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_format(ngx_http_simhash_shctx_t *sh,
    char *err, size_t errlen);
static ngx_int_t ngx_http_simhash_reset(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static void ngx_http_simhash_migrate(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);


/*
 * The parts of every zone (ngx_http_simhash_part_t), handed down by the
 * module (ngx_http_simhash_parts.c lists them): the zone calls them
 * through this table and knows none by name.
 */
static ngx_http_simhash_part_t  **ngx_http_simhash_zone_part;


void
ngx_http_simhash_zone_use_parts(ngx_http_simhash_part_t **parts)
{
    ngx_uint_t  i;

    for (i = 0; parts[i]; i++) {
        parts[i]->index = i;
    }

    ngx_http_simhash_zone_part = parts;
}


ngx_http_simhash_part_t **
ngx_http_simhash_zone_parts(void)
{
    return ngx_http_simhash_zone_part;
}


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


/*
 * The lock for a thread of nginx's pool (a save), which cannot log: the
 * zone's mutex, but never while a dead writer's repair is pending (that is
 * for the next holder in an event loop to do).  NGX_ERROR after 5 s of a
 * pending repair.
 */

ngx_int_t
ngx_http_simhash_zone_lock_quiet(ngx_http_simhash_zone_t *zone)
{
    ngx_uint_t  tries;

    for (tries = 0; tries < 5000; tries++) {
        ngx_shmtx_lock(&zone->shpool->mutex);

        if (!zone->sh->writer) {
            return NGX_OK;
        }

        ngx_shmtx_unlock(&zone->shpool->mutex);
        ngx_msleep(1);
    }

    return NGX_ERROR;
}


uint32_t
ngx_http_simhash_zone_key(ngx_http_simhash_zone_t *zone, ngx_str_t *key)
{
    return sh_store_find(zone->sh->store, (char *) key->data, key->len);
}


uint32_t
ngx_http_simhash_zone_find_hash(ngx_http_simhash_zone_t *zone,
    uint64_t keyhash)
{
    return sh_store_find_hash(zone->sh->store, keyhash);
}


/*
 * A new document.  Called with the mutex held.  Returns the ref (the
 * store evicts the oldest document when it is full).
 */

uint32_t
ngx_http_simhash_zone_store(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    uint64_t fingerprint, uint64_t digest, uint32_t time,
    const sh_sketches_t *sketches)
{
    return ngx_http_simhash_zone_store_hash(zone,
               sh_store_keyhash(zone->sh->store, (char *) key->data,
                                key->len),
               key, fingerprint, digest, time, sketches);
}


/*
 * A document known by its key's hash (another node's, read from the
 * tier's shared index), as ngx_http_simhash_zone_store stores one, with
 * the key's text when the index had it (text NULL or empty: named by its
 * id).
 */

uint32_t
ngx_http_simhash_zone_store_hash(ngx_http_simhash_zone_t *zone,
    uint64_t keyhash, ngx_str_t *text, uint64_t fingerprint, uint64_t digest,
    uint32_t time, const sh_sketches_t *sketches)
{
    uint32_t        ref, evicted;
    sh_store_doc_t  d;

    ngx_memzero(&d, sizeof(sh_store_doc_t));
    d.digest = digest;
    d.time = time;

    if (sketches) {
        d.sketches = *sketches;
    }

    if (text != NULL && text->len == 0) {
        text = NULL;
    }

    ref = sh_store_put(zone->sh->store, text ? (char *) text->data : NULL,
                       text ? text->len : 0, keyhash, fingerprint, &d,
                       &evicted);

    if (ref != SH_NOREF) {
        if (text) {
            zone->sh->key_max = ngx_max(zone->sh->key_max, text->len);
        }

        (void) ngx_atomic_fetch_add(&zone->sh->generation, 1);
    }

    return ref;
}


void
ngx_http_simhash_zone_forget(ngx_http_simhash_zone_t *zone, uint32_t ref)
{
    (void) sh_store_remove(zone->sh->store, ref);
}


void
ngx_http_simhash_zone_name(ngx_http_simhash_zone_t *zone, uint32_t ref,
    ngx_str_t *name, u_char *id)
{
    const char  *text;

    name->len = sh_store_key(zone->sh->store, ref, &text);

    if (name->len) {
        name->data = (u_char *) text;
        return;
    }

    /* its text left the ring: the stable id */

    ngx_memcpy(id, NGX_HTTP_SIMHASH_ID_PREFIX,
               sizeof(NGX_HTTP_SIMHASH_ID_PREFIX) - 1);
    sh_store_id(zone->sh->store, ref,
                (char *) id + sizeof(NGX_HTTP_SIMHASH_ID_PREFIX) - 1);

    name->data = id;
    name->len = sizeof(NGX_HTTP_SIMHASH_ID_PREFIX) - 1 + SH_STORE_ID_LEN;
}


uint64_t
ngx_http_simhash_zone_changed(ngx_http_simhash_zone_t *zone, uint32_t ref)
{
    uint64_t                   now;
    ngx_time_t                *tp;
    sh_store_doc_t             d;
    const sh_store_doc_t      *cur;

    cur = sh_store_doc(zone->sh->store, ref);

    if (cur == NULL) {
        return 0;
    }

    d = *cur;
    tp = ngx_timeofday();
    now = sh_stream_next_time((uint64_t) tp->sec * 1000 + tp->msec, d.time);
    d.time = sh_stream_second(now);
    sh_store_set(zone->sh->store, ref, &d);

    return now;
}


/*
 * A worker died while it was changing the zone (sh->writer is its pid; the
 * master released the mutex it held).  Its change may be half done: the
 * index's age list, table and counters, the key table and the ring may
 * disagree.  sh_store_repair rebuilds them from the records, which every
 * change writes first.  Called with the mutex held.
 */

static void
ngx_http_simhash_repair(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    long                       kept;
    char                       why[256];
    uint32_t                   dropped;
    ngx_pid_t                  pid;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;
    pid = (ngx_pid_t) sh->writer;

    if (sh_store_check(sh->store, why, sizeof(why)) == 0) {
        ngx_cpystrn((u_char *) why, (u_char *) "consistent", sizeof(why));
    }

    /*
     * Every change writes a document's record before the index and the
     * key table point to it, so the records are what holds: a document
     * whose record has no key hash was being stored by the dead worker,
     * and is dropped; no complete one is lost.
     */

    kept = sh_store_repair(sh->store, &dropped);

    if (kept < 0) {
        /* out of memory: sh->writer stays, the next holder tries again */
        return;
    }

    sh->writer = 0;
    (void) ngx_atomic_fetch_add(&sh->generation, 1);

    ngx_log_error(NGX_LOG_ERR, log, 0,
                  "simhash zone \"%V\": worker process %P died while "
                  "changing it; rebuilt with %l documents, 0 lost (the "
                  "index was: %s); %uD half-stored dropped",
                  &zone->name, pid, kept, why, dropped);
}


/*
 * What the slab pool leaves for the store in a zone of `zone_size` bytes
 * (its header and per-page bookkeeping, about 1.5%, and our shctx), and
 * the ring's share of it.
 */

static size_t
ngx_http_simhash_zone_avail(size_t zone_size, size_t keys, uint64_t *text)
{
    size_t  avail;

    if (zone_size < 64 * 1024) {
        *text = 0;
        return 0;
    }

    avail = zone_size - zone_size / 32 - 16 * 1024;
    *text = keys ? keys : (uint64_t) avail / 100 * NGX_HTTP_SIMHASH_TEXT_SHARE;

    return *text < avail ? avail : 0;
}


uint32_t
ngx_http_simhash_zone_capacity(size_t zone_size, size_t keys)
{
    size_t    avail;
    uint64_t  text;

    avail = ngx_http_simhash_zone_avail(zone_size, keys, &text);

    return avail ? sh_store_capacity_for(avail, text) : 0;
}


/*
 * Format the zone's store empty, under the zone's seed and extraction
 * version: what a snapshot of it will carry.
 */

static ngx_int_t
ngx_http_simhash_format(ngx_http_simhash_shctx_t *sh, char *err,
    size_t errlen)
{
    sh_index_stats_t  is;

    sh->store = sh_store_init(sh->store, sh->store_size, sh->text_size,
                              sh->secret, sh->seed_digest, err, errlen);
    if (sh->store == NULL) {
        return NGX_ERROR;
    }

    sh->index = sh_store_index(sh->store);
    sh_index_stats(sh->index, &is);
    sh->region_size = is.region_bytes;
    sh_index_set_version(sh->index, sh->version);

    return NGX_OK;
}


/* The zone's parts, created or kept: ngx_http_simhash_part_t. */

static ngx_int_t
ngx_http_simhash_zone_parts_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    ngx_uint_t                i;
    ngx_http_simhash_part_t  *part;

    for (i = 0; ngx_http_simhash_zone_part[i]; i++) {
        part = ngx_http_simhash_zone_part[i];

        if (part->shm_init && part->shm_init(zone, ozone, log) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* The shared memory the parts add to the zone's: not the store's. */

size_t
ngx_http_simhash_zone_parts_size(ngx_http_simhash_zone_t *zone)
{
    size_t                    size;
    ngx_uint_t                i;
    ngx_http_simhash_part_t  *part;

    size = 0;

    for (i = 0; ngx_http_simhash_zone_part[i]; i++) {
        part = ngx_http_simhash_zone_part[i];

        if (part->shm_size) {
            size += part->shm_size(zone);
        }
    }

    return size;
}


/*
 * The shctx, and after it each part's shared state (shctx_size bytes, at
 * sh->part[index]): one small slab allocation, zeroed.
 */

static ngx_http_simhash_shctx_t *
ngx_http_simhash_zone_shctx(ngx_slab_pool_t *shpool)
{
    size_t                     size, off[NGX_HTTP_SIMHASH_PARTS_MAX];
    u_char                    *p;
    ngx_uint_t                 i;
    ngx_http_simhash_part_t   *part;
    ngx_http_simhash_shctx_t  *sh;

    size = ngx_align(sizeof(ngx_http_simhash_shctx_t), 16);

    for (i = 0; ngx_http_simhash_zone_part[i]; i++) {
        part = ngx_http_simhash_zone_part[i];
        off[i] = size;
        size += ngx_align(part->shctx_size, 16);
    }

    p = ngx_slab_calloc(shpool, size);
    if (p == NULL) {
        return NULL;
    }

    sh = (ngx_http_simhash_shctx_t *) p;

    for (i = 0; ngx_http_simhash_zone_part[i]; i++) {
        part = ngx_http_simhash_zone_part[i];

        if (part->shctx_size) {
            sh->part[part->index] = p + off[i];
        }
    }

    return sh;
}


ngx_int_t
ngx_http_simhash_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_simhash_zone_t  *ozone = data;

    size_t                     len, avail;
    char                       err[256];
    ngx_slab_pool_t           *shpool;
    sh_store_stats_t           st;
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

            if (ngx_http_simhash_reset(zone, shm_zone->shm.log) != NGX_OK) {
                return NGX_ERROR;
            }

            return ngx_http_simhash_zone_parts_init(zone, ozone,
                                                    shm_zone->shm.log);
        }

        if (zone->sh->version != zone->version) {
            ngx_log_error(NGX_LOG_WARN, shm_zone->shm.log, 0,
                          "simhash zone \"%V\": extraction version %08xD "
                          "became %08xD (options changed), the index starts "
                          "empty", &zone->name, zone->sh->version,
                          zone->version);

            if (ngx_http_simhash_reset(zone, shm_zone->shm.log) != NGX_OK) {
                return NGX_ERROR;
            }
        }

        return ngx_http_simhash_zone_parts_init(zone, ozone,
                                                shm_zone->shm.log);
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    zone->shpool = shpool;

    if (shm_zone->shm.exists) {
        zone->sh = shpool->data;
        return NGX_OK;
    }

#if (NGX_LINUX && defined MADV_HUGEPAGE)
    /*
     * 2 MB pages for the store, where the system allows them for shared
     * memory (/sys/kernel/mm/transparent_hugepage/shmem_enabled: advise):
     * every probe of a large zone is otherwise a TLB miss (BENCHMARKS.md,
     * the store at 2^24: p99 12 us instead of 20, and its first write 8
     * times faster).  A hint: without them, nothing changes.
     */
    (void) madvise(shm_zone->shm.addr, shm_zone->shm.size, MADV_HUGEPAGE);
#endif

    sh = ngx_http_simhash_zone_shctx(shpool);
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

    /* the parts' pages were added to the zone's size: not the store's */

    len = shm_zone->shm.size - ngx_http_simhash_zone_parts_size(zone);
    avail = ngx_http_simhash_zone_avail(len, zone->keys, &sh->text_size);
    sh->store_size = sh_store_region_size(sh_store_capacity_for(avail,
                                                                sh->text_size),
                                          sh->text_size);

    sh->store = sh->store_size ? ngx_slab_alloc(shpool, sh->store_size)
                               : NULL;
    if (sh->store == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\" is too small", &zone->name);
        return NGX_ERROR;
    }

    sh->seed_digest = zone->seed_digest;
    sh->version = zone->version;
    sh_store_secret(zone->key_secret, sizeof(zone->key_secret), sh->secret);

    if (ngx_http_simhash_format(sh, err, sizeof(err)) != NGX_OK) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\": %s", &zone->name, err);
        return NGX_ERROR;
    }

    sh_store_stats(sh->store, &st);
    sh->capacity = st.capacity;

    if (ngx_http_simhash_zone_parts_init(zone, NULL, shm_zone->shm.log)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_test_config) {
        return NGX_OK;
    }

    /* a reload that resized the zone: take the documents over */

    ngx_http_simhash_migrate(zone, shm_zone->shm.log);

    /* nothing taken over: a part may fill it at init_module (the saving
     * part loads its snapshot once every zone of the cycle exists) */

    zone->formatted = (sh->generation == 0);

    ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                  "simhash zone \"%V\": %uz bytes, capacity %uD documents "
                  "(key text: %uL bytes), match=%s distance=%ui "
                  "threshold=%.4f",
                  &zone->name, shm_zone->shm.size, sh->capacity,
                  sh->text_size, sh_rule_name(zone->rule), zone->distance,
                  sh_score_nats(zone->threshold));

    return NGX_OK;
}


/* Under the lock: the zone emptied (a load that failed half way). */

ngx_int_t
ngx_http_simhash_zone_empty(ngx_http_simhash_zone_t *zone, char *err,
    size_t errlen)
{
    return ngx_http_simhash_format(zone->sh, err, errlen);
}


/* Empty the zone and format the store under the current seed. */

static ngx_int_t
ngx_http_simhash_reset(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    char                       err[256];
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    ngx_http_simhash_zone_lock(zone, log);
    ngx_http_simhash_zone_write(zone);

    sh->seed_digest = zone->seed_digest;
    sh->version = zone->version;
    sh_store_secret(zone->key_secret, sizeof(zone->key_secret), sh->secret);

    if (ngx_http_simhash_format(sh, err, sizeof(err)) != NGX_OK) {
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

    if (ngx_http_simhash_zone_key(cp->zone, key) != SH_NOREF) {
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


/*
 * A reload that resized the zone: take the documents of the old one over,
 * oldest first (a smaller zone keeps the newest), each with its key's
 * text when the old ring still has it, else by its key's hash alone (the
 * seed, hence the hash's key, is the same: a resize under another seed
 * starts empty).
 */

typedef struct {
    ngx_http_simhash_zone_t     *zone;
    sh_store_t                  *from;
    ngx_uint_t                   copied;
    ngx_uint_t                   missing;
} ngx_http_simhash_migrate_t;


static int
ngx_http_simhash_migrate_visit(void *arg, uint32_t ref, uint64_t hash)
{
    ngx_http_simhash_migrate_t  *mg = arg;

    size_t                 len;
    const char            *text;
    sh_store_t            *to;
    const sh_store_doc_t  *d;

    to = mg->zone->sh->store;
    d = sh_store_doc(mg->from, ref);
    len = sh_store_key(mg->from, ref, &text);

    if (d == NULL
        || sh_store_find_hash(to, d->keyhash) != SH_NOREF
        || sh_store_put(to, len ? text : NULL, len, d->keyhash, hash, d,
                        NULL)
           == SH_NOREF)
    {
        mg->missing++;
        return 0;
    }

    mg->copied++;
    mg->zone->sh->key_max = ngx_max(mg->zone->sh->key_max, len);
    (void) ngx_atomic_fetch_add(&mg->zone->sh->generation, 1);

    return 0;
}


static void
ngx_http_simhash_migrate(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    ngx_uint_t                   i;
    ngx_http_simhash_part_t     *part;
    ngx_http_simhash_zone_t     *ozone;
    ngx_http_simhash_shctx_t    *osh;
    ngx_http_simhash_migrate_t   mg;

    ozone = ngx_http_simhash_old_zone(zone->shm_zone);

    if (ozone == NULL || ozone->sh == NULL
        || ozone->sh->seed_digest != zone->seed_digest
        || ozone->sh->version != zone->version)
    {
        return;
    }

    osh = ozone->sh;

    mg.zone = zone;
    mg.from = osh->store;
    mg.copied = 0;
    mg.missing = 0;

    /* the old workers still run: hold the old zone's mutex while copying */

    ngx_http_simhash_zone_lock(ozone, log);
    ngx_http_simhash_zone_lock(zone, log);

    sh_index_foreach(sh_store_index(osh->store),
                     ngx_http_simhash_migrate_visit, &mg);

    /* where replication was: the documents are the same */

    zone->sh->repl_id = osh->repl_id;
    zone->sh->repl_stream = osh->repl_stream;
    zone->sh->repl_since = osh->repl_since;

    /* and what the parts keep (the DUST rules learned, say) */

    for (i = 0; ngx_http_simhash_zone_part[i]; i++) {
        part = ngx_http_simhash_zone_part[i];

        if (part->shm_migrate) {
            part->shm_migrate(zone, ozone, log);
        }
    }

    ngx_http_simhash_zone_unlock(zone);
    ngx_http_simhash_zone_unlock(ozone);

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\" resized: %ui documents taken over",
                  &zone->name, mg.copied);
}


/*
 * The zones of a cycle's configuration, or NULL (with *n = 0) when the
 * cycle has no http block or the module no main configuration: the
 * process hooks run for every cycle, the failed and the empty included.
 */

ngx_http_simhash_zone_t **
ngx_http_simhash_cycle_zones(ngx_cycle_t *cycle, ngx_uint_t *n)
{
    ngx_http_simhash_main_conf_t  *smcf;

    *n = 0;

    if (cycle->conf_ctx == NULL
        || cycle->conf_ctx[ngx_http_module.index] == NULL)
    {
        return NULL;
    }

    smcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_simhash_module);
    if (smcf == NULL) {
        return NULL;
    }

    *n = smcf->zones.nelts;

    return smcf->zones.elts;
}


/* The part that fills the snapshot's tail section, or NULL. */

ngx_http_simhash_part_t *
ngx_http_simhash_zone_tail(void)
{
    ngx_uint_t  i;

    for (i = 0; ngx_http_simhash_zone_part[i]; i++) {
        if (ngx_http_simhash_zone_part[i]->save_tail) {
            return ngx_http_simhash_zone_part[i];
        }
    }

    return NULL;
}


/*
 * ---- The request path's door to the store ----
 *
 * What a response's decision (ngx_http_simhash_decide.c) and a prediction
 * (ngx_http_simhash_predict.c) ask of the store and the index, so that
 * only this file and zone_conf.c call sh_store and sh_index.  All of them
 * run under the lock; those that change a document, after
 * ngx_http_simhash_zone_write.
 */

/* A stored document's record, NULL when ref holds none. */

const sh_store_doc_t *
ngx_http_simhash_zone_doc(ngx_http_simhash_zone_t *zone, uint32_t ref)
{
    return sh_store_doc(zone->sh->store, ref);
}


/* A stored document's fingerprint: NGX_OK, or NGX_DECLINED if none. */

ngx_int_t
ngx_http_simhash_zone_fingerprint(ngx_http_simhash_zone_t *zone,
    uint32_t ref, uint64_t *hash)
{
    return sh_index_get(zone->sh->index, ref, hash) == 0 ? NGX_OK
                                                         : NGX_DECLINED;
}


/* The zone's hash of a key (stored or not), as the documents carry it. */

uint64_t
ngx_http_simhash_zone_keyhash(ngx_http_simhash_zone_t *zone, ngx_str_t *key)
{
    return sh_store_keyhash(zone->sh->store, (char *) key->data, key->len);
}


/* The stored documents that match a fingerprint (sh_index_lookup). */

size_t
ngx_http_simhash_zone_lookup(ngx_http_simhash_zone_t *zone, uint64_t hash,
    const float *weights, const sh_lookup_opts_t *opts, sh_match_t *out,
    size_t max, sh_lookup_stats_t *st)
{
    return sh_index_lookup(zone->sh->index, hash, weights, opts, out, max,
                           st);
}


/* A document fetched again, the same bytes: it is made the newest. */

void
ngx_http_simhash_zone_touch(ngx_http_simhash_zone_t *zone, uint32_t ref)
{
    (void) sh_store_touch(zone->sh->store, ref);
}


/*
 * A document fetched again with another body but the same fingerprint: it
 * keeps its fingerprint, takes the body's digest and is made the newest.
 */

void
ngx_http_simhash_zone_refresh(ngx_http_simhash_zone_t *zone, uint32_t ref,
    uint64_t digest)
{
    sh_store_doc_t  d;

    d = *sh_store_doc(zone->sh->store, ref);
    d.digest = digest;

    sh_store_set(zone->sh->store, ref, &d);
    (void) sh_store_touch(zone->sh->store, ref);
}


/*
 * A document that changed: its fingerprint, digest and sketches are
 * replaced, and it is made the newest.
 */

void
ngx_http_simhash_zone_replace(ngx_http_simhash_zone_t *zone, uint32_t ref,
    uint64_t fingerprint, uint64_t digest, const sh_sketches_t *sketches)
{
    sh_store_doc_t  d;

    d = *sh_store_doc(zone->sh->store, ref);
    d.digest = digest;
    d.sketches = *sketches;

    sh_store_set(zone->sh->store, ref, &d);
    (void) sh_store_update(zone->sh->store, ref, fingerprint);
}

/* ---- end of the request path's door ---- */


/*
 * ---- The snapshot's and the statistics' door ----
 *
 * What the snapshot (ngx_http_simhash_snapshot_save.c, _load.c), the
 * replication's applier and the statistics ask of the store, the index and
 * the store's file format: thin wrappers, called under the same locks as
 * the library's functions were.
 */

/* Under the lock: the index's statistics (ix, if not NULL), the store's. */

void
ngx_http_simhash_zone_stats(ngx_http_simhash_zone_t *zone,
    sh_index_stats_t *ix, sh_store_stats_t *ss)
{
    if (ix) {
        sh_index_stats(zone->sh->index, ix);
    }

    sh_store_stats(zone->sh->store, ss);
}


/* Under the write lock: a document's record set, then its fingerprint. */

void
ngx_http_simhash_zone_set(ngx_http_simhash_zone_t *zone, uint32_t ref,
    const sh_store_doc_t *d, uint64_t fingerprint)
{
    sh_store_set(zone->sh->store, ref, d);
    (void) sh_store_update(zone->sh->store, ref, fingerprint);
}


/* Under the lock: start copying the store's image (sh_image_save_begin). */

void
ngx_http_simhash_zone_save_begin(ngx_http_simhash_zone_t *zone,
    sh_image_saver_t *isv, unsigned char *buf, size_t size)
{
    sh_image_save_begin(isv, zone->sh->store, buf, size);
}


/* Under the lock: the image's next bytes (sh_image_save_step). */

long
ngx_http_simhash_zone_save_step(sh_image_saver_t *isv)
{
    return sh_image_save_step(isv);
}


/* 1 once the image's copy is complete (sh_image_save_complete). */

int
ngx_http_simhash_zone_save_complete(const sh_image_saver_t *isv)
{
    return sh_image_save_complete(isv);
}


/* Under the lock: abandon the image's copy (sh_image_save_abort). */

void
ngx_http_simhash_zone_save_abort(sh_image_saver_t *isv)
{
    sh_image_save_abort(isv);
}


/* Under the write lock: a file's image into the store (sh_image_load_fd). */

int
ngx_http_simhash_zone_load_image(ngx_http_simhash_zone_t *zone, int fd,
    uint64_t off, uint64_t len, sh_image_info_t *info, char *err,
    size_t errlen)
{
    return sh_image_load_fd(zone->sh->store, fd, off, len, zone->version,
                            info, err, errlen);
}


/* A snapshot's header and settings written (sh_store_file_begin). */

int
ngx_http_simhash_zone_file_begin(sh_file_writer_t *w, const void *meta,
    size_t meta_len, char *err, size_t errlen)
{
    return sh_store_file_begin(w, meta, meta_len, err, errlen);
}


/* A snapshot's tail section written (sh_store_file_tail). */

int
ngx_http_simhash_zone_file_tail(sh_file_writer_t *w, const void *data,
    size_t len, char *err, size_t errlen)
{
    return sh_store_file_tail(w, data, len, err, errlen);
}


/* A snapshot's settings and image found (sh_store_file_parse). */

int
ngx_http_simhash_zone_file_parse(const unsigned char *file, size_t len,
    const unsigned char **meta, size_t *meta_len,
    const unsigned char **image, size_t *image_len, char *err, size_t errlen)
{
    return sh_store_file_parse(file, len, meta, meta_len, image, image_len,
                               err, errlen);
}


/* A snapshot's tail section found by its footer (sh_store_file_tail_find). */

int
ngx_http_simhash_zone_file_tail_find(const unsigned char *footer,
    uint64_t rest, uint64_t *off, uint64_t *len, uint64_t *sum)
{
    return sh_store_file_tail_find(footer, rest, off, len, sum);
}


/* 1 if a tail section's bytes are intact (sh_store_file_tail_ok). */

int
ngx_http_simhash_zone_file_tail_ok(const void *data, size_t len,
    uint64_t sum)
{
    return sh_store_file_tail_ok(data, len, sum);
}


/* 1 if a file is of the store's format (sh_store_file_is). */

int
ngx_http_simhash_zone_file_is(const unsigned char *file, size_t len)
{
    return sh_store_file_is(file, len);
}


/*
 * A format 1 snapshot's index attached (sh_index_attach), and if it is,
 * its statistics (sh_index_stats); NULL and a message if not.
 */

sh_index_t *
ngx_http_simhash_zone_attach(void *region, size_t size,
    sh_index_stats_t *st, char *err, size_t errlen)
{
    sh_index_t  *ix;

    ix = sh_index_attach(region, size, err, errlen);

    if (ix != NULL) {
        sh_index_stats(ix, st);
    }

    return ix;
}

/* ---- end of the snapshot's and the statistics' door ---- */
