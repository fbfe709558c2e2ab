
/*
 * Persistence of a simhash zone.  The snapshot file (sh_snapshot.h) holds the
 * index region and, as its user section, the documents' keys as key records
 * (sh_keyrec.h).  Loading re-inserts every document, oldest first, into the
 * zone: a snapshot fits a zone of any size (a smaller zone keeps the newest
 * documents).  A key whose fingerprint is not the one the index has for its
 * ref is left out (see ngx_http_simhash_save_copy()).
 *
 * The header records the zone's match rule (match=, distance=, threshold=).
 * The rule is applied at lookup, so a snapshot taken under another rule
 * loads all the same; the load says so in the log.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "sh_snapshot.h"


#define NGX_HTTP_SIMHASH_SAVE_CHUNK 16384   /* refs per hold of the lock */


/* a snapshot being saved: see ngx_http_simhash_save_copy() */
typedef struct {
    ngx_http_simhash_zone_t     *zone;
    u_char                      *region;
    size_t                       region_size;
    u_char                      *user;
    size_t                       user_len;
    ngx_atomic_uint_t            generation;
    ngx_uint_t                   docs;
    ngx_uint_t                   dropped;   /* keys that did not fit */
    ngx_msec_t                   copy_ms;   /* the longest hold */
    ngx_msec_t                   write_ms;
    ngx_int_t                    rc;
    char                         err[512];
} ngx_http_simhash_save_t;


static ngx_int_t ngx_http_simhash_load_keys(ngx_http_simhash_zone_t *zone,
    sh_index_t *ix, const void *user, size_t user_len, ngx_uint_t *copied,
    char *err, size_t errlen, ngx_log_t *log);
static ngx_msec_t ngx_http_simhash_msec(void);
static ngx_int_t ngx_http_simhash_save(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_save_copy(ngx_http_simhash_save_t *sv,
    ngx_log_t *log);
static void ngx_http_simhash_save_write(void *data, ngx_log_t *log);
static ngx_int_t ngx_http_simhash_save_finish(ngx_http_simhash_save_t *sv,
    ngx_log_t *log);
static void ngx_http_simhash_save_handler(ngx_event_t *ev);
static void ngx_http_simhash_zone_match(ngx_http_simhash_zone_t *zone,
    sh_match_opts_t *mo);
static void ngx_http_simhash_load_rule(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);


/* The zone's rule as sh_match.h has it (its settings only: no table). */

static void
ngx_http_simhash_zone_match(ngx_http_simhash_zone_t *zone,
    sh_match_opts_t *mo)
{
    sh_match_opts_init(mo);
    mo->rule = zone->rule;
    mo->h = zone->distance;
    mo->threshold = zone->threshold;
}


/* After a load: the rule the snapshot was taken under, if not this one. */

static void
ngx_http_simhash_load_rule(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    int              recorded;
    char             err[512];
    sh_match_opts_t  was, now;

    if (sh_snapshot_rule((char *) zone->file.data, &recorded, &was, err,
                         sizeof(err))
        != 0 || !recorded)
    {
        return;
    }

    ngx_http_simhash_zone_match(zone, &now);

    if (was.rule == now.rule && was.h == now.h
        && (now.rule == SH_RULE_HAMMING || was.threshold == now.threshold))
    {
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": snapshot \"%V\" was taken under "
                  "match=%s distance=%ui threshold=%.4f, lookups now apply "
                  "match=%s distance=%ui threshold=%.4f",
                  &zone->name, &zone->file, sh_rule_name(was.rule),
                  (ngx_uint_t) was.h, sh_score_nats(was.threshold),
                  sh_rule_name(now.rule), (ngx_uint_t) now.h,
                  sh_score_nats(now.threshold));
}


/* The snapshot's directory should exist: warn now rather than at the save. */

void
ngx_http_simhash_snapshot_check_dir(ngx_conf_t *cf, ngx_str_t *file)
{
    u_char           *p, *dir;
    ngx_file_info_t   fi;

    p = file->data + file->len;

    while (p > file->data && *(p - 1) != '/') {
        p--;
    }

    if (p <= file->data + 1) {
        return;
    }

    dir = ngx_pnalloc(cf->temp_pool, p - file->data + 1);
    if (dir == NULL) {
        return;
    }

    ngx_cpystrn(dir, file->data, p - file->data + 1);

    if (ngx_file_info(dir, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, ngx_errno,
                           "the directory \"%s\" of the snapshot file is "
                           "not usable: the zone will not be saved", dir);

    } else if (!ngx_is_dir(&fi)) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "\"%s\" is not a directory: the zone will not be "
                           "saved", dir);
    }
}


void
ngx_http_simhash_snapshot_load(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log)
{
    char              err[512];
    void             *region;
    size_t            region_size, user_len;
    sh_index_t       *ix;
    ngx_uint_t        copied;
    ngx_msec_t        start;
    ngx_file_info_t   fi;
    const void       *user;

    start = ngx_http_simhash_msec();

    if (ngx_file_info(zone->file.data, &fi) == NGX_FILE_ERROR) {
        if (ngx_errno == NGX_ENOENT) {
            ngx_log_error(NGX_LOG_NOTICE, log, 0,
                          "simhash zone \"%V\": no snapshot \"%V\" yet, "
                          "starting empty", &zone->name, &zone->file);
            return;
        }
    }

    region = NULL;

    if (sh_snapshot_load((char *) zone->file.data, zone->seed_digest,
                         &region, &region_size, &user, &user_len,
                         err, sizeof(err))
        != 0)
    {
        goto refused;
    }

    ix = sh_index_attach(region, region_size, err, sizeof(err));
    if (ix == NULL) {
        goto refused;
    }

    if (ngx_http_simhash_load_keys(zone, ix, user, user_len, &copied,
                                   err, sizeof(err), log)
        != NGX_OK)
    {
        goto refused;
    }

    zone->sh->restored = copied;

    ngx_http_simhash_load_rule(zone, log);

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": %ui documents restored from \"%V\" "
                  "in %M ms", &zone->name, copied, &zone->file,
                  ngx_http_simhash_msec() - start);

    free(region);
    return;

refused:

    ngx_log_error(NGX_LOG_ERR, log, 0,
                  "simhash zone \"%V\": snapshot \"%V\" refused: %s; "
                  "starting empty", &zone->name, &zone->file, err);

    free(region);
}


/* The key records of a loaded snapshot into the zone, oldest first. */

static ngx_int_t
ngx_http_simhash_load_keys(ngx_http_simhash_zone_t *zone, sh_index_t *ix,
    const void *user, size_t user_len, ngx_uint_t *copied, char *err,
    size_t errlen, ngx_log_t *log)
{
    int                      rc;
    sh_keyrec_t              rec;
    sh_index_stats_t         st;
    sh_keyrec_reader_t       rd;
    ngx_http_simhash_copy_t  cp;

    sh_index_stats(ix, &st);

    ngx_memzero(&cp, sizeof(ngx_http_simhash_copy_t));
    cp.zone = zone;
    cp.nkeys = st.capacity;

    if (sh_keyrec_open(&rd, user, user_len) != 0) {
        ngx_cpystrn((u_char *) err, (u_char *) "no key records", errlen);
        return NGX_ERROR;
    }

    cp.keys = ngx_calloc(st.capacity * sizeof(ngx_str_t) + 1, log);
    cp.hashes = ngx_calloc(st.capacity * sizeof(uint64_t) + 1, log);

    if (cp.keys == NULL || cp.hashes == NULL) {
        ngx_cpystrn((u_char *) err, (u_char *) "out of memory", errlen);
        rc = -1;
        goto done;
    }

    while ((rc = sh_keyrec_next(&rd, &rec, err, errlen)) == 1) {
        if (rec.ref >= st.capacity) {
            ngx_snprintf((u_char *) err, errlen,
                         "key record %uz: ref %uD is out of range%Z",
                         rd.n, rec.ref);
            rc = -1;
            goto done;
        }

        cp.keys[rec.ref].data = (u_char *) rec.key;
        cp.keys[rec.ref].len = rec.len;
        cp.hashes[rec.ref] = rec.hash;
    }

    if (rc == 0) {
        ngx_http_simhash_zone_lock(zone, log);
        ngx_http_simhash_zone_copy(&cp, ix);
        ngx_http_simhash_zone_unlock(zone);
        *copied = cp.copied;
    }

done:

    if (cp.keys) {
        ngx_free(cp.keys);
    }

    if (cp.hashes) {
        ngx_free(cp.hashes);
    }

    return rc == 0 ? NGX_OK : NGX_ERROR;
}


/* A monotonic clock in milliseconds, for the durations in the log. */

static ngx_msec_t
ngx_http_simhash_msec(void)
{
    struct timespec  ts;

    (void) clock_gettime(CLOCK_MONOTONIC, &ts);

    return (ngx_msec_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/*
 * Save, in three steps:
 *   copy    under the mutex: the region (a memcpy) and the keys, into the
 *           heap, with the generation they correspond to;
 *   write   without any lock or nginx call (so that it can run in a thread
 *           of nginx's thread pool): sh_snapshot_save writes PATH.tmp,
 *           fsyncs it, renames it over PATH;
 *   finish  in the event loop: counters, log, free.
 * A worker saves at most one zone at a time, and only the worker holding
 * sh->save_lock saves; the master saves at exit, when no worker is left.
 */

static ngx_int_t
ngx_http_simhash_save_copy(ngx_http_simhash_save_t *sv, ngx_log_t *log)
{
    u_char                    *p, *last;
    size_t                     size;
    uint32_t                   ref, end;
    ngx_msec_t                 t;
    sh_keyrec_t                rec;
    ngx_http_simhash_doc_t    *doc;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    zone = sv->zone;
    sh = zone->sh;

    /* the keys may grow while we copy: room for 1/8 more, the rest waits */

    size = SH_KEYREC_MAGIC_LEN + sh->key_bytes + sh->key_bytes / 8
           + sh_keyrec_size(0) * (size_t) sh->capacity;

    sv->region_size = sh->region_size;
    sv->region = ngx_alloc(sh->region_size, log);
    sv->user = ngx_alloc(size, log);

    if (sv->region == NULL || sv->user == NULL) {
        ngx_cpystrn((u_char *) sv->err, (u_char *) "out of memory",
                    sizeof(sv->err));
        sv->rc = NGX_ERROR;
        return NGX_ERROR;
    }

    /* fault the pages in now, not while holding the lock */

    ngx_memzero(sv->region, sh->region_size);
    ngx_memzero(sv->user, size);

    /* the index: one memcpy under the lock */

    ngx_http_simhash_zone_lock(zone, log);

    t = ngx_http_simhash_msec();
    sv->generation = sh->generation;
    ngx_memcpy(sv->region, sh->index, sh->region_size);
    sv->copy_ms = ngx_http_simhash_msec() - t;

    ngx_http_simhash_zone_unlock(zone);

    /*
     * The keys, NGX_HTTP_SIMHASH_SAVE_CHUNK refs per hold of the lock, each
     * with the fingerprint its document has now.  Documents may change
     * between the holds: the load takes a key only when its fingerprint is
     * the one the copied index has for that ref, so a key never lands on
     * another document (a document changed meanwhile is left out).
     */

    p = sh_keyrec_begin(sv->user);
    last = sv->user + size;

    for (ref = 0; ref < sh->capacity; ref = end) {
        end = ngx_min(ref + NGX_HTTP_SIMHASH_SAVE_CHUNK, sh->capacity);

        ngx_http_simhash_zone_lock(zone, log);

        t = ngx_http_simhash_msec();

        for ( /* void */ ; ref < end; ref++) {
            doc = sh->docs[ref];

            if (doc == NULL
                || sh_index_get(sh->index, ref, &rec.hash) != 0)
            {
                continue;
            }

            if ((size_t) (last - p) < sh_keyrec_size(doc->len)) {
                sv->dropped++;
                continue;
            }

            rec.ref = ref;
            rec.len = doc->len;
            rec.key = doc->data;
            p = sh_keyrec_put(p, &rec);
            sv->docs++;
        }

        t = ngx_http_simhash_msec() - t;

        ngx_http_simhash_zone_unlock(zone);

        sv->copy_ms = ngx_max(sv->copy_ms, t);
    }

    sv->user_len = p - sv->user;

    return NGX_OK;
}


static void
ngx_http_simhash_save_write(void *data, ngx_log_t *log)
{
    ngx_http_simhash_save_t  *sv = data;

    sh_index_t       *ix;
    sh_match_opts_t   mo;

    sv->write_ms = ngx_http_simhash_msec();

    ngx_http_simhash_zone_match(sv->zone, &mo);

    ix = sh_index_attach(sv->region, sv->region_size, sv->err,
                         sizeof(sv->err));

    if (ix == NULL
        || sh_snapshot_save_rule((char *) sv->zone->file.data, ix, sv->user,
                                 sv->user_len, &mo, sv->err, sizeof(sv->err))
           != 0)
    {
        sv->rc = NGX_ERROR;
        return;
    }

    sv->write_ms = ngx_http_simhash_msec() - sv->write_ms;
    sv->rc = NGX_OK;
}


static ngx_int_t
ngx_http_simhash_save_finish(ngx_http_simhash_save_t *sv, ngx_log_t *log)
{
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    zone = sv->zone;
    sh = zone->sh;

    if (sv->region) {
        ngx_free(sv->region);
        sv->region = NULL;
    }

    if (sv->user) {
        ngx_free(sv->user);
        sv->user = NULL;
    }

    sh->last_save = ngx_time();

    if (sv->rc != NGX_OK) {
        (void) ngx_atomic_fetch_add(&sh->save_errors, 1);

        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": saving \"%V\" failed: %s",
                      &zone->name, &zone->file, sv->err);
        return NGX_ERROR;
    }

    sh->saved_generation = sv->generation;
    (void) ngx_atomic_fetch_add(&sh->saves, 1);

    ngx_log_error(NGX_LOG_INFO, log, 0,
                  "simhash zone \"%V\" saved to \"%V\": %ui documents, "
                  "the lock held %M ms at most, %M ms writing",
                  &zone->name, &zone->file, sv->docs, sv->copy_ms,
                  sv->write_ms);

    return NGX_OK;
}


/* The whole save in the calling process (the master at exit). */

static ngx_int_t
ngx_http_simhash_save(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    ngx_http_simhash_save_t  sv;

    ngx_memzero(&sv, sizeof(ngx_http_simhash_save_t));
    sv.zone = zone;

    if (ngx_http_simhash_save_copy(&sv, log) == NGX_OK) {
        ngx_http_simhash_save_write(&sv, log);
    }

    return ngx_http_simhash_save_finish(&sv, log);
}


#if (NGX_THREADS)

static void
ngx_http_simhash_save_done(ngx_event_t *ev)
{
    ngx_thread_task_t        *task = ev->data;
    ngx_http_simhash_save_t  *sv = task->ctx;

    (void) ngx_http_simhash_save_finish(sv, ev->log);
    (void) ngx_atomic_cmp_set(&sv->zone->sh->save_lock, ngx_pid, 0);
}

#endif


/*
 * Every worker arms a timer; when it fires and a save is due (changes since
 * the last save, the interval elapsed), the worker that wins save_lock
 * saves: the copy in the event loop, the write in nginx's thread pool when
 * nginx has threads (a full 256m zone is about 150 MB to write and fsync),
 * else in the event loop too.  A lock left by a worker that died is taken
 * over.
 */

static ngx_uint_t
ngx_http_simhash_save_due(ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_shctx_t  *sh = zone->sh;

    return sh->generation != sh->saved_generation
           && (ngx_msec_t) (ngx_time() - sh->last_save) * 1000 >= zone->save;
}


static void
ngx_http_simhash_save_handler(ngx_event_t *ev)
{
    ngx_pid_t                  holder;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;
#if (NGX_THREADS)
    ngx_thread_task_t         *task;
    ngx_http_simhash_save_t   *sv;
#endif

    zone = ev->data;
    sh = zone->sh;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    ngx_add_timer(ev, ngx_min(zone->save, 10000));

    if (!ngx_http_simhash_save_due(zone)) {
        return;
    }

    holder = (ngx_pid_t) sh->save_lock;

    if (holder && holder != ngx_pid && kill(holder, 0) == -1
        && ngx_errno == NGX_ESRCH)
    {
        (void) ngx_atomic_cmp_set(&sh->save_lock, holder, 0);
    }

    if (!ngx_atomic_cmp_set(&sh->save_lock, 0, ngx_pid)) {
        return;
    }

    if (!ngx_http_simhash_save_due(zone)) {
        (void) ngx_atomic_cmp_set(&sh->save_lock, ngx_pid, 0);
        return;
    }

#if (NGX_THREADS)

    task = zone->save_task;

    if (zone->thread_pool && task) {
        sv = task->ctx;
        ngx_memzero(sv, sizeof(ngx_http_simhash_save_t));
        sv->zone = zone;

        if (ngx_http_simhash_save_copy(sv, ev->log) == NGX_OK) {
            task->handler = ngx_http_simhash_save_write;
            task->event.handler = ngx_http_simhash_save_done;
            task->event.data = task;
            task->event.log = ev->log;

            if (ngx_thread_task_post(zone->thread_pool, task) == NGX_OK) {
                return;     /* ngx_http_simhash_save_done() releases */
            }

            ngx_http_simhash_save_write(sv, ev->log);
        }

        (void) ngx_http_simhash_save_finish(sv, ev->log);
        (void) ngx_atomic_cmp_set(&sh->save_lock, ngx_pid, 0);
        return;
    }

#endif

    (void) ngx_http_simhash_save(zone, ev->log);
    (void) ngx_atomic_cmp_set(&sh->save_lock, ngx_pid, 0);
}


/* Every worker arms the save timer of each zone with a file. */

ngx_int_t
ngx_http_simhash_snapshot_init_worker(ngx_http_simhash_zone_t *zone,
    ngx_cycle_t *cycle)
{
    if (zone->file.len == 0 || zone->save == 0 || zone->sh == NULL) {
        return NGX_OK;
    }

    zone->save_event.handler = ngx_http_simhash_save_handler;
    zone->save_event.data = zone;
    zone->save_event.log = cycle->log;
    zone->save_event.cancelable = 1;

#if (NGX_THREADS)
    if (zone->thread_pool) {
        zone->save_task = ngx_thread_task_alloc(cycle->pool,
                                             sizeof(ngx_http_simhash_save_t));
        if (zone->save_task == NULL) {
            return NGX_ERROR;
        }
    }
#endif

    ngx_add_timer(&zone->save_event, ngx_min(zone->save, 10000));

    return NGX_OK;
}


/* The master saves last, when every worker has exited. */

void
ngx_http_simhash_snapshot_exit(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    if (zone->file.len == 0 || zone->sh == NULL) {
        return;
    }

    if (zone->sh->generation != zone->sh->saved_generation) {
        (void) ngx_http_simhash_save(zone, log);
    }
}
