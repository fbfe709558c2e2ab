
/*
 * ngx_http_simhash.h -- what the module's files share; private to the module.
 *
 * The module, one subject a file:
 *
 *   ngx_simhash_module.c          the response path (header and body
 *                                 filters), the variables, the directives
 *                                 that configure a location
 *   module/ngx_http_simhash_zone.c      the shared memory zone: the index,
 *                                 the documents' keys, eviction, repair
 *                                 after a dead worker, reload and resize;
 *                                 the simhash_zone directive
 *   module/ngx_http_simhash_snapshot.c  persistence: load at start,
 *                                 periodic save by one worker, final save
 *                                 by the master
 *   module/ngx_http_simhash_stats.c     the simhash_stats handler
 *
 * The core library (src/, prefix sh_) knows nothing of nginx.
 */


#ifndef _NGX_HTTP_SIMHASH_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include "sh_config.h"
#include "sh_index.h"
#include "sh_keyrec.h"
#include "sh_volatility.h"


typedef enum {
    NGX_HTTP_SIMHASH_NEW = 0,
    NGX_HTTP_SIMHASH_DUPLICATE,
    NGX_HTTP_SIMHASH_UNCHANGED,
    NGX_HTTP_SIMHASH_CHANGED,
    NGX_HTTP_SIMHASH_SKIPPED,
    NGX_HTTP_SIMHASH_NSTATUS
} ngx_http_simhash_status_e;


/* why a response was skipped (counted in the stats) */
typedef enum {
    NGX_HTTP_SIMHASH_SKIP_TOO_LARGE = 0,
    NGX_HTTP_SIMHASH_SKIP_ENCODING,
    NGX_HTTP_SIMHASH_SKIP_TOO_SHORT,
    NGX_HTTP_SIMHASH_SKIP_BINARY,
    NGX_HTTP_SIMHASH_SKIP_ERROR,
    NGX_HTTP_SIMHASH_SKIP_BUDGET,       /* markup over its work budget */
    NGX_HTTP_SIMHASH_NSKIP
} ngx_http_simhash_skip_e;


/* one document's key, in the slab; docs[ref] points here */
typedef struct {
    ngx_rbtree_node_t            node;      /* node.key: crc32 of the key */
    uint32_t                     ref;
    uint16_t                     len;
    u_char                       data[1];
} ngx_http_simhash_doc_t;


/* the shared part of a zone: at shpool->data */
typedef struct {
    ngx_rbtree_t                 rbtree;    /* key hash -> document */
    ngx_rbtree_node_t            sentinel;
    sh_index_t                  *index;
    size_t                       region_size;
    uint32_t                     capacity;
    uint64_t                     seed_digest;
    ngx_http_simhash_doc_t     **docs;      /* [capacity], by ref */
    uint64_t                    *digests;   /* [capacity], by ref: of the
                                               raw body; 0 = unknown */
    size_t                       key_bytes; /* sum of stored key lengths */
    size_t                       key_max;   /* longest key ever stored */

    /* counters: relaxed atomic increments, read without the lock */
    ngx_atomic_t                 responses[NGX_HTTP_SIMHASH_NSTATUS];
    ngx_atomic_t                 skipped[NGX_HTTP_SIMHASH_NSKIP];
    ngx_atomic_t                 bytes;     /* body bytes fingerprinted */
    ngx_atomic_t                 identical; /* re-fetches not parsed */
    ngx_atomic_t                 key_evictions;

    /* persistence */
    ngx_atomic_t                 generation;        /* changes so far */
    ngx_atomic_t                 saved_generation;  /* in the file */
    ngx_atomic_t                 save_lock;         /* pid saving, or 0 */
    ngx_atomic_t                 last_save;         /* seconds */
    ngx_atomic_t                 saves;
    ngx_atomic_t                 save_errors;
    ngx_atomic_t                 restored;          /* docs at start */
    ngx_atomic_t                 save_off;  /* 1: a damaged snapshot could
                                               not be moved aside, so it
                                               is never overwritten */

    /*
     * pid of the worker changing the index, the tree or the document array
     * (under the mutex), 0 otherwise: found set by the next holder of the
     * mutex, it means that worker died in the middle (the master unlocks
     * the mutex of a dead worker, but cannot finish its change); see
     * ngx_http_simhash_zone_lock().
     */
    ngx_atomic_t                 writer;
} ngx_http_simhash_shctx_t;


/* a zone as configured (per cycle, in the configuration pool) */
typedef struct {
    ngx_str_t                    name;
    ngx_shm_zone_t              *shm_zone;
    ngx_http_simhash_shctx_t    *sh;
    ngx_slab_pool_t             *shpool;
    sh_rule_t                    rule;      /* match= */
    ngx_uint_t                   distance;  /* the radius, or the cap on H */
    uint32_t                     threshold; /* threshold=, score units */
    ngx_str_t                    file;      /* full path, "" = none */
    ngx_msec_t                   save;      /* 0 = only at shutdown */
    uint64_t                     seed_digest;
    ngx_uint_t                   seed_set;
    ngx_str_t                    seed_where;  /* "file:line" of that user */
    ngx_event_t                  save_event;  /* per worker */
#if (NGX_THREADS)
    ngx_thread_pool_t           *thread_pool;
    ngx_thread_task_t           *save_task;   /* per worker */
#endif
} ngx_http_simhash_zone_t;


typedef struct {
    ngx_array_t                  zones;     /* ngx_http_simhash_zone_t * */
    ngx_array_t                  cfgs;      /* ngx_http_simhash_cfg_t */
} ngx_http_simhash_main_conf_t;


typedef struct {
    /* simhash NAME | off */
    ngx_flag_t                   enable;
    ngx_str_t                    zone_name;
    ngx_str_t                    zone_where;
    ngx_http_simhash_zone_t     *zone;

    ngx_uint_t                   action;
    ngx_uint_t                   drop_code;
    ngx_hash_t                   types;
    ngx_array_t                 *types_keys;
    size_t                       max_body;
    ngx_http_complex_value_t    *key;
    ngx_uint_t                   probes;
    ngx_uint_t                   recall;    /* in 1/10000 */
    sh_volatility_t             *volatility;    /* NULL: the built-in */
    ngx_flag_t                   volatility_set;
    ngx_flag_t                   insert;

    /* extraction options (sh_options_t), merged, then compiled to cfg */
    ngx_int_t                    shingle;
    ngx_str_t                    stem;      /* "off" = no stemming */
    ngx_str_t                    stopwords; /* "off" = keep every word */
    ngx_array_t                 *ignore;    /* ngx_str_t, NUL-terminated */
    ngx_int_t                    min_features;
    ngx_int_t                    max_features;
    ngx_int_t                    word_weight;     /* in 1/1000 */
    ngx_int_t                    shingle_weight;  /* in 1/1000 */
    ngx_uint_t                   content;   /* SH_CONTENT_* */
    ngx_str_t                    idf;
    ngx_str_t                    seed;
    ngx_str_t                    opts_where;
    sh_config_t                 *cfg;

    sh_lookup_opts_t             lookup;

    /* simhash_stats [ZONE]: the zone (NULL: every zone), resolved at merge */
    ngx_flag_t                   stats;
    ngx_str_t                    stats_zone_name;
    ngx_str_t                    stats_where;
    ngx_http_simhash_zone_t     *stats_zone;
} ngx_http_simhash_loc_conf_t;


extern ngx_module_t  ngx_http_simhash_module;
extern ngx_str_t     ngx_http_simhash_status_names[];
extern ngx_str_t     ngx_http_simhash_skip_names[];


/* the zone: ngx_http_simhash_zone.c */

char *ngx_http_simhash_zone_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_http_simhash_zone_t *ngx_http_simhash_zone_find(
    ngx_http_simhash_main_conf_t *smcf, ngx_str_t *name);

/*
 * Every change of the zone, and every lookup, happens between lock and
 * unlock; a change is announced by write first.  lock repairs the zone when
 * the previous holder died in the middle of a change.
 */
void ngx_http_simhash_zone_lock(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
void ngx_http_simhash_zone_write(ngx_http_simhash_zone_t *zone);
void ngx_http_simhash_zone_unlock(ngx_http_simhash_zone_t *zone);

/* under the lock: the document of a key, or NULL; store a new one (SH_NOREF
 * when there is no room); forget one */
ngx_http_simhash_doc_t *ngx_http_simhash_zone_key(
    ngx_http_simhash_zone_t *zone, ngx_str_t *key);
uint32_t ngx_http_simhash_zone_store(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint64_t fingerprint, uint64_t digest);
void ngx_http_simhash_zone_forget(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_doc_t *doc);

/*
 * Copy documents, oldest first, from an index `from` into the zone, with
 * their keys by ref of `from` (a snapshot, or the zone before a resize);
 * a key already stored, or whose recorded fingerprint (hashes, if not NULL)
 * is not the one `from` has for its ref, is left out.  Under the lock.
 */
typedef struct {
    ngx_http_simhash_zone_t     *zone;
    ngx_str_t                   *keys;      /* by ref of the source */
    uint64_t                    *hashes;    /* by ref; NULL: no check */
    uint64_t                    *digests;   /* by ref; NULL: unknown */
    uint32_t                     nkeys;
    ngx_uint_t                   copied;
    ngx_uint_t                   missing;
} ngx_http_simhash_copy_t;

void ngx_http_simhash_zone_copy(ngx_http_simhash_copy_t *cp,
    const sh_index_t *from);


/* persistence: ngx_http_simhash_snapshot.c */

ngx_int_t ngx_http_simhash_snapshot_check(ngx_conf_t *cf, ngx_str_t *file);
void ngx_http_simhash_snapshot_load(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
ngx_int_t ngx_http_simhash_snapshot_init_worker(
    ngx_http_simhash_zone_t *zone, ngx_cycle_t *cycle);
void ngx_http_simhash_snapshot_exit(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);


/* statistics: ngx_http_simhash_stats.c */

char *ngx_http_simhash_stats_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_simhash_stats_resolve(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf);


/* a score (sh_match.h) in nats, exactly, four decimals: at most 15 bytes */
u_char *ngx_http_simhash_score(u_char *p, uint32_t score);


/* "file:line" of the directive being parsed, for later messages */
void ngx_http_simhash_where(ngx_conf_t *cf, ngx_str_t *where);


#endif /* _NGX_HTTP_SIMHASH_H_INCLUDED_ */
