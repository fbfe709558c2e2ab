/*
 * The saves of a simhash zone.  A save writes the store's format
 * (sh_store_file.h): a header, the zone's settings (its match rule:
 * match=, distance=, threshold=; in a replicated zone also the stream and
 * the id of the last entry applied, from which replication goes on after
 * a restart, and each writer's last seq), then the store's image
 * (sh_image.h), copied from the zone in slices of 1 MB by a
 * thread-pool task, so that no worker waits on the lock for more than one
 * slice.  The file follows what the zone holds, not its size.
 *
 * A part of the zone may add a section after the image, the file's tail
 * (sh_store_file.h says why there): the DUST learner's rules.  Older
 * files, without one, load as they did; a damaged section costs that
 * part's state, never the documents.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_snapshot.h"
#include "sh_snapshot.h"
#include "sh_store_file.h"
#include "sh_image.h"


#define NGX_HTTP_SIMHASH_SAVE_BUF   (1024 * 1024)   /* bytes a hold of the
                                                       lock copies */
/* the settings, the stream's place and a line per writer of the stream
 * (replicate_writer=SEQ HEX-NODE) */
#define NGX_HTTP_SIMHASH_WRITER_LINE                                         \
    (sizeof("replicate_writer=") + NGX_INT64_LEN + 1                        \
     + 2 * SH_STREAM_NODE_MAX + 1)
#define NGX_HTTP_SIMHASH_META_MAX                                            \
    (1024 + NGX_HTTP_SIMHASH_WRITERS * NGX_HTTP_SIMHASH_WRITER_LINE)


/* a snapshot being saved: see ngx_http_simhash_save_write() */
typedef struct {
    ngx_http_simhash_zone_t     *zone;
    u_char                      *buf;       /* the step buffer */
    ngx_atomic_uint_t            generation;
    sh_stream_id_t               repl_id;   /* at the first hold */
    ngx_http_simhash_writer_t   *writers;   /* the stream's writers' last
                                               seqs then (replicated) */
    ngx_uint_t                   docs;
    ngx_uint_t                   holds;
    uint64_t                     bytes;
    uint64_t                     recopied;
    ngx_msec_t                   copy_ms;   /* the longest hold */
    ngx_msec_t                   write_ms;  /* the whole save */
    ngx_int_t                    rc;
    ngx_atomic_t                 written;   /* the thread is done with it */
    sh_file_owner_t              owner;
    unsigned                     owned:1;   /* owner is set */
    char                         err[512];
} ngx_http_simhash_save_t;


static ngx_int_t ngx_http_simhash_save_aside(ngx_http_simhash_save_t *sv);
static ngx_int_t ngx_http_simhash_save_tail(ngx_http_simhash_save_t *sv,
    sh_file_writer_t *w);
static void ngx_http_simhash_save_write(void *data, ngx_log_t *log);
static void ngx_http_simhash_save_write_file(ngx_http_simhash_save_t *sv);
static ngx_int_t ngx_http_simhash_save_finish(ngx_http_simhash_save_t *sv,
    ngx_log_t *log);
static void ngx_http_simhash_save_handler(ngx_event_t *ev);


/*
 * Save, in three steps:
 *   copy    under the lock: the region (a memcpy), with the generation it
 *           corresponds to; then, in the region's age order, each
 *           document's key, a chunk of documents per hold of the lock;
 *   write   without any lock or nginx call (so that it can run in a thread
 *           of nginx's thread pool): sh_snapshot_save writes PATH.tmp,
 *           fsyncs it, renames it over PATH;
 *   finish  in the event loop: counters, log, free.
 * A worker saves at most one zone at a time, and only the worker holding
 * the part's save_lock saves; the master saves at exit, when no worker is left.
 */



/* the settings the documents were matched under and, when replicated, the
 * stream and the last entry applied at the first hold: a restart from this
 * file replays what came after (entries applied twice change nothing) */

static size_t
ngx_http_simhash_save_meta(ngx_http_simhash_save_t *sv, u_char *meta)
{
    u_char                   *p;
    ngx_uint_t                i;
    ngx_http_simhash_zone_t  *zone = sv->zone;

    p = ngx_sprintf(meta, "distance=%ui\nmatch=%s\n", zone->distance,
                    sh_rule_name(zone->rule));

    if (zone->rule == SH_RULE_WEIGHTED) {
        p = ngx_sprintf(p, "threshold=");
        p = ngx_http_simhash_score(p, zone->threshold);
        *p++ = '\n';
    }

    if (zone->stream.len
        && zone->stream.len < NGX_HTTP_SIMHASH_META_MAX - 256)
    {
        p = ngx_sprintf(p, "replicate_stream=%V\nreplicate_id=",
                        &zone->stream);
        p += sh_stream_id_format((char *) p, &sv->repl_id);
        *p++ = '\n';
    }

    for (i = 0; sv->writers && i < NGX_HTTP_SIMHASH_WRITERS; i++) {
        if (sv->writers[i].len == 0) {
            continue;
        }

        /* the node's id in hex: it may hold any byte */
        p = ngx_sprintf(p, "replicate_writer=%uL ", sv->writers[i].seq);
        p = ngx_hex_dump(p, sv->writers[i].node, sv->writers[i].len);
        *p++ = '\n';
    }

    return p - meta;
}


/* Each part's file beside the snapshot, through the part table, in the
 * save's thread. */

static ngx_int_t
ngx_http_simhash_save_aside(ngx_http_simhash_save_t *sv)
{
    ngx_uint_t                 i;
    ngx_http_simhash_part_t  **parts;

    parts = ngx_http_simhash_zone_parts();

    for (i = 0; parts[i]; i++) {
        if (parts[i]->save_aside
            && parts[i]->save_aside(sv->zone, sv->owned ? &sv->owner : NULL,
                                    sv->err, sizeof(sv->err))
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * The tail section after the image: what the part that fills it copied
 * out (under one hold of the lock: ngx_http_simhash_part_t), written after
 * it.  Like the rest of the save, no nginx call that logs or allocates
 * from a pool.
 */

static ngx_int_t
ngx_http_simhash_save_tail(ngx_http_simhash_save_t *sv, sh_file_writer_t *w)
{
    void                     *buf;
    size_t                    len;
    ngx_int_t                 rc;
    ngx_http_simhash_part_t  *part;

    part = ngx_http_simhash_zone_tail();

    if (part == NULL) {
        return NGX_OK;
    }

    rc = part->save_tail(sv->zone, &buf, &len, sv->err, sizeof(sv->err));

    if (rc != NGX_OK) {
        return rc == NGX_DECLINED ? NGX_OK : NGX_ERROR;
    }

    rc = ngx_http_simhash_zone_file_tail(w, buf, len, sv->err,
                                         sizeof(sv->err))
         == 0
         ? NGX_OK : NGX_ERROR;

    free(buf);

    return rc;
}


/*
 * The save, without an nginx call that logs or allocates from a pool (it
 * may run in a thread): PATH.tmp created afresh, the settings, then the
 * store's image one buffer per hold of the lock (sh_image.h), each
 * buffer written with the lock released; fsync, rename.  Then `written`
 * says the thread is done with sv (ngx_http_simhash_snapshot_exit_worker).
 */

static void
ngx_http_simhash_save_write(void *data, ngx_log_t *log)
{
    ngx_http_simhash_save_t  *sv = data;

    ngx_http_simhash_save_write_file(sv);

    ngx_memory_barrier();
    sv->written = 1;
}


static void
ngx_http_simhash_save_write_file(ngx_http_simhash_save_t *sv)
{
    long                        n;
    size_t                      len;
    u_char                     *meta;
    ngx_msec_t                  start, t;
    sh_image_saver_t            isv;
    sh_store_stats_t            st;
    sh_file_writer_t           *w;
    ngx_http_simhash_zone_t    *zone;
    ngx_http_simhash_shctx_t   *sh;
    ngx_http_simhash_outbox_t  *ob;

    zone = sv->zone;
    sh = zone->sh;
    sv->rc = NGX_ERROR;
    start = ngx_http_simhash_snapshot_msec();

    /* this thread calls no nginx function that logs or allocates from a
     * pool: plain malloc, freed by ngx_http_simhash_save_done() */

    ob = zone->replicate ? zone->replicate->outbox : NULL;

    if (ob != NULL && sv->writers == NULL) {
        sv->writers = malloc(sizeof(ob->writers));
        if (sv->writers == NULL) {
            ngx_cpystrn((u_char *) sv->err, (u_char *) "out of memory",
                        sizeof(sv->err));
            return;
        }
    }

    w = sh_file_writer_open((char *) zone->file.data, SH_SNAPSHOT_MODE,
                            sv->owned ? &sv->owner : NULL, sv->err,
                            sizeof(sv->err));
    if (w == NULL) {
        return;
    }

    if (ngx_http_simhash_zone_lock_quiet(zone) != NGX_OK) {
        ngx_cpystrn((u_char *) sv->err, (u_char *) "a dead worker's repair "
                    "of the zone is pending", sizeof(sv->err));
        sh_file_writer_abort(w);
        return;
    }

    ngx_http_simhash_zone_save_begin(zone, &isv, sv->buf,
                                     NGX_HTTP_SIMHASH_SAVE_BUF);
    sv->generation = sh->generation;
    sv->repl_id = sh->repl_id;

    /* the writers' seqs move with the last id, under this lock: a restart
     * from this file refuses the replays of what it had applied */
    if (ob != NULL) {
        ngx_memcpy(sv->writers, ob->writers, sizeof(ob->writers));
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    meta = malloc(NGX_HTTP_SIMHASH_META_MAX);
    if (meta == NULL) {
        ngx_cpystrn((u_char *) sv->err, (u_char *) "out of memory",
                    sizeof(sv->err));
        goto failed;
    }

    len = ngx_http_simhash_save_meta(sv, meta);
    n = ngx_http_simhash_zone_file_begin(w, meta, len, sv->err,
                                         sizeof(sv->err));
    free(meta);

    if (n != 0) {
        goto failed;
    }

    for ( ;; ) {
        if (ngx_http_simhash_zone_lock_quiet(zone) != NGX_OK) {
            ngx_cpystrn((u_char *) sv->err, (u_char *) "a dead worker's "
                        "repair of the zone is pending", sizeof(sv->err));
            goto failed;
        }

        t = ngx_http_simhash_snapshot_msec();
        n = ngx_http_simhash_zone_save_step(&isv);

        if (n > 0 && ngx_http_simhash_zone_save_complete(&isv)) {
            ngx_http_simhash_zone_stats(zone, NULL, &st);
            sv->docs = st.entries;
        }

        t = ngx_http_simhash_snapshot_msec() - t;
        ngx_shmtx_unlock(&zone->shpool->mutex);

        sv->copy_ms = ngx_max(sv->copy_ms, t);

        if (n < 0) {
            ngx_cpystrn((u_char *) sv->err, (u_char *) "the zone changed "
                        "faster than it could be copied", sizeof(sv->err));
            goto failed;
        }

        if (n == 0) {
            break;
        }

        sv->holds++;
        sv->bytes += (uint64_t) n;

        if (sh_file_writer_write(w, sv->buf, (size_t) n, sv->err,
                                 sizeof(sv->err))
            != 0)
        {
            goto failed;
        }
    }

    sv->recopied = isv.recopied;

    if (ngx_http_simhash_save_tail(sv, w) != NGX_OK) {
        goto failed;
    }

    if (sh_file_writer_commit(w, sv->err, sizeof(sv->err)) != 0) {
        return;
    }

    /* the parts' files beside it (the console's figures) */

    if (ngx_http_simhash_save_aside(sv) != NGX_OK) {
        return;
    }

    sv->write_ms = ngx_http_simhash_snapshot_msec() - start;
    sv->rc = NGX_OK;
    return;

failed:

    if (!ngx_http_simhash_zone_save_complete(&isv)) {
        if (ngx_http_simhash_zone_lock_quiet(zone) == NGX_OK) {
            ngx_http_simhash_zone_save_abort(&isv);
            ngx_shmtx_unlock(&zone->shpool->mutex);
        }
    }

    sh_file_writer_abort(w);
}


static ngx_int_t
ngx_http_simhash_save_finish(ngx_http_simhash_save_t *sv, ngx_log_t *log)
{
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_save_shctx_t  *ss;

    zone = sv->zone;
    ss = ngx_http_simhash_save_shctx(zone);

    if (sv->buf) {
        ngx_free(sv->buf);
        sv->buf = NULL;
    }

    if (sv->writers) {
        ngx_free(sv->writers);
        sv->writers = NULL;
    }

    ss->last_save = ngx_time();

    if (sv->rc != NGX_OK) {
        (void) ngx_atomic_fetch_add(&ss->save_errors, 1);

        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": saving \"%V\" failed: %s",
                      &zone->name, &zone->file, sv->err);
        return NGX_ERROR;
    }

    ss->saved_generation = sv->generation;
    ss->save_ms = sv->write_ms;
    ss->save_hold_ms = sv->copy_ms;
    (void) ngx_atomic_fetch_add(&ss->saves, 1);

    ngx_log_error(NGX_LOG_INFO, log, 0,
                  "simhash zone \"%V\" saved to \"%V\": %ui documents, "
                  "%uL bytes in %ui holds of the lock, the longest %M ms "
                  "(%uL groups copied again), %M ms in all",
                  &zone->name, &zone->file, sv->docs, sv->bytes, sv->holds,
                  sv->copy_ms, sv->recopied, sv->write_ms);

    return NGX_OK;
}


/*
 * A master running as root saves a file the workers' user owns, as their
 * own saves do: the same owner and mode (0600) whoever wrote it last, and
 * root never leaves a file of its own in the workers' directory.  Writing
 * there is safe for root: see sh_snapshot_save().
 */

static void
ngx_http_simhash_save_owner(ngx_http_simhash_save_t *sv)
{
    ngx_core_conf_t  *ccf;

    if (geteuid() != 0) {
        return;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(ngx_cycle->conf_ctx,
                                           ngx_core_module);

    if (ccf == NULL || ccf->user == (ngx_uid_t) NGX_CONF_UNSET_UINT) {
        return;
    }

    sv->owner.uid = ccf->user;
    sv->owner.gid = ccf->group;
    sv->owned = 1;
}


/* The whole save in the calling process (the master at exit). */

ngx_int_t
ngx_http_simhash_snapshot_save(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    ngx_http_simhash_save_t  sv;

    ngx_memzero(&sv, sizeof(ngx_http_simhash_save_t));
    sv.zone = zone;
    ngx_http_simhash_save_owner(&sv);

    sv.buf = ngx_alloc(NGX_HTTP_SIMHASH_SAVE_BUF, log);

    if (sv.buf == NULL) {
        ngx_cpystrn((u_char *) sv.err, (u_char *) "out of memory",
                    sizeof(sv.err));
        sv.rc = NGX_ERROR;

    } else {
        ngx_memzero(sv.buf, NGX_HTTP_SIMHASH_SAVE_BUF);
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
    (void) ngx_atomic_cmp_set(
                         &ngx_http_simhash_save_shctx(sv->zone)->save_lock,
                         ngx_pid, 0);
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
    ngx_http_simhash_save_shctx_t  *ss;

    ss = ngx_http_simhash_save_shctx(zone);

    return !ss->save_off
           && zone->sh->generation != ss->saved_generation
           && (ngx_msec_t) (ngx_time() - ss->last_save) * 1000
              >= ngx_http_simhash_save_conf(zone)->save;
}


static void
ngx_http_simhash_save_handler(ngx_event_t *ev)
{
    ngx_pid_t                       holder;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_save_conf_t   *sc;
    ngx_http_simhash_save_shctx_t  *sh;
#if (NGX_THREADS)
    ngx_thread_task_t              *task;
    ngx_http_simhash_save_t        *sv;
#endif

    zone = ev->data;
    sc = ngx_http_simhash_save_conf(zone);
    sh = ngx_http_simhash_save_shctx(zone);

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    ngx_add_timer(ev, ngx_min(sc->save, 10000));

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

    task = sc->save_task;

    if (sc->thread_pool && task) {
        sv = task->ctx;
        ngx_memzero(sv, sizeof(ngx_http_simhash_save_t));
        sv->zone = zone;
        sv->buf = ngx_alloc(NGX_HTTP_SIMHASH_SAVE_BUF, ev->log);

        if (sv->buf == NULL) {
            ngx_cpystrn((u_char *) sv->err, (u_char *) "out of memory",
                        sizeof(sv->err));
            sv->rc = NGX_ERROR;

        } else {
            /* faulted in here, not during a hold of the lock */
            ngx_memzero(sv->buf, NGX_HTTP_SIMHASH_SAVE_BUF);

            task->handler = ngx_http_simhash_save_write;
            task->event.handler = ngx_http_simhash_save_done;
            task->event.data = task;
            task->event.log = ev->log;

            if (ngx_thread_task_post(sc->thread_pool, task) == NGX_OK) {
                return;     /* ngx_http_simhash_save_done() releases */
            }

            ngx_http_simhash_save_write(sv, ev->log);
        }

        (void) ngx_http_simhash_save_finish(sv, ev->log);
        (void) ngx_atomic_cmp_set(&sh->save_lock, ngx_pid, 0);
        return;
    }

#endif

    (void) ngx_http_simhash_snapshot_save(zone, ev->log);
    (void) ngx_atomic_cmp_set(&sh->save_lock, ngx_pid, 0);
}


/* Every worker arms the save timer of each zone with a file. */

ngx_int_t
ngx_http_simhash_snapshot_init_worker(ngx_http_simhash_zone_t *zone,
    ngx_cycle_t *cycle)
{
    ngx_http_simhash_save_conf_t  *sc;

    sc = ngx_http_simhash_save_conf(zone);

    if (zone->file.len == 0 || sc->save == 0 || zone->sh == NULL) {
        return NGX_OK;
    }

    sc->save_event.handler = ngx_http_simhash_save_handler;
    sc->save_event.data = zone;
    sc->save_event.log = cycle->log;
    sc->save_event.cancelable = 1;

#if (NGX_THREADS)
    if (sc->thread_pool) {
        sc->save_task = ngx_thread_task_alloc(cycle->pool,
                                             sizeof(ngx_http_simhash_save_t));
        if (sc->save_task == NULL) {
            return NGX_ERROR;
        }
    }
#endif

    ngx_add_timer(&sc->save_event, ngx_min(sc->save, 10000));

    return NGX_OK;
}


/*
 * A worker exits.  nginx's thread pools have finished their tasks by now
 * (ngx_thread_pool_module's exit_process comes first: it waits for every
 * task queued before its own), but a save they ran may not have had its
 * completion event in the worker's loop, which has ended: finish it here,
 * its buffer freed and the save lock let go.
 */

void
ngx_http_simhash_snapshot_exit_worker(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log)
{
#if (NGX_THREADS)
    ngx_http_simhash_save_t       *sv;
    ngx_http_simhash_save_conf_t  *sc;

    sc = ngx_http_simhash_save_conf(zone);

    if (sc->save_task == NULL || zone->sh == NULL) {
        return;
    }

    sv = sc->save_task->ctx;

    if (sv->buf == NULL || !sv->written) {
        return;     /* none in flight, or a thread still holds it */
    }

    (void) ngx_http_simhash_save_finish(sv, log);
    (void) ngx_atomic_cmp_set(&ngx_http_simhash_save_shctx(zone)->save_lock,
                              ngx_pid, 0);
#endif
}
