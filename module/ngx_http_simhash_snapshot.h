/*
 * ngx_http_simhash_snapshot.h -- the saving part of a simhash zone: its
 * file= and save= parameters, its shared state, and what its three files
 * share (ngx_http_simhash_snapshot.c: the part and its hooks;
 * _snapshot_load.c: a start from the file; _snapshot_save.c: the saves).
 */


#ifndef _NGX_HTTP_SIMHASH_SNAPSHOT_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_SNAPSHOT_H_INCLUDED_


#include "ngx_http_simhash.h"
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif


/* a zone's saving as configured: the part's conf slot (the file's path is
 * the zone's: zone->file) */
typedef struct {
    ngx_msec_t                   save;      /* save=; 0: only at shutdown */
    ngx_uint_t                   save_set;  /* save= was given */
    ngx_event_t                  save_event;    /* per worker */
#if (NGX_THREADS)
    ngx_thread_pool_t           *thread_pool;
    ngx_thread_task_t           *save_task;     /* per worker */
#endif
} ngx_http_simhash_save_conf_t;

/* its shared state: the part's shared slot, read by simhash_stats */
typedef struct {
    ngx_atomic_t                 saved_generation;  /* the zone's, in the
                                                       file */
    ngx_atomic_t                 save_lock;         /* pid saving, or 0 */
    ngx_atomic_t                 last_save;         /* seconds */
    ngx_atomic_t                 saves;
    ngx_atomic_t                 save_errors;
    ngx_atomic_t                 restored;          /* docs at start */
    ngx_atomic_t                 refused_snapshots; /* files kept aside
                                                       unread at start */
    ngx_atomic_t                 save_off;  /* 1: a damaged snapshot could
                                               not be moved aside, so it
                                               is never overwritten */

    /* the last successful save: how long it took, its longest hold of
     * the lock (ms), for the stats and the console */
    ngx_atomic_t                 save_ms;
    ngx_atomic_t                 save_hold_ms;
} ngx_http_simhash_save_shctx_t;

extern ngx_http_simhash_part_t  ngx_http_simhash_snapshot_part;

#define ngx_http_simhash_save_conf(zone)                                     \
    ((ngx_http_simhash_save_conf_t *)                                        \
         ngx_http_simhash_part_conf(zone, ngx_http_simhash_snapshot_part))
#define ngx_http_simhash_save_shctx(zone)                                    \
    ((ngx_http_simhash_save_shctx_t *)                                       \
         ngx_http_simhash_part_shm(zone, ngx_http_simhash_snapshot_part))


/* ngx_http_simhash_snapshot_load.c: the zone from its file, at start */
void ngx_http_simhash_snapshot_load(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);

/* ngx_http_simhash_snapshot_save.c: the whole save in the calling process
 * (the master at exit); a worker's timer and its saves */
ngx_int_t ngx_http_simhash_snapshot_save(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
ngx_int_t ngx_http_simhash_snapshot_init_worker(
    ngx_http_simhash_zone_t *zone, ngx_cycle_t *cycle);
void ngx_http_simhash_snapshot_exit_worker(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);


/* A monotonic clock in milliseconds, for the durations in the log. */

static ngx_inline ngx_msec_t
ngx_http_simhash_snapshot_msec(void)
{
    struct timespec  ts;

    (void) clock_gettime(CLOCK_MONOTONIC, &ts);

    return (ngx_msec_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


#endif /* _NGX_HTTP_SIMHASH_SNAPSHOT_H_INCLUDED_ */
