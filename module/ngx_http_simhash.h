
/*
 * ngx_http_simhash.h -- what the module's files share; private to the module.
 *
 * The module, one subject a file:
 *
 *   ngx_simhash_module.c          the module's tables and init hooks; its
 *                                 top lists the request path's files, one
 *                                 stage a file (module/..._predict.c,
 *                                 _filter.c, _decide.c, _response.c,
 *                                 _variables.c, _directives.c), which
 *                                 share ngx_http_simhash_request.h
 *   module/ngx_http_simhash_names.c     how the module spells what it
 *                                 reports: status and skip names, scores,
 *                                 "file:line" of a directive
 *   module/ngx_http_simhash_zone.c      the shared memory zone: the index,
 *                                 the documents' keys, eviction, repair
 *                                 after a dead worker, reload and resize;
 *                                 the storage, calling nothing above it
 *   module/ngx_http_simhash_zone_conf.c the simhash_zone directive
 *   module/ngx_http_simhash_snapshot.c  persistence: load at start (from
 *                                 the module's init_module), periodic
 *                                 save by one worker, final save by the
 *                                 master
 *   module/ngx_http_simhash_stats.c     the simhash_stats handler
 *   module/ngx_http_simhash_replicate.c a tier of nodes shares one index
 *                                 through a Redis Stream: the
 *                                 simhash_replicate directive, the outbox
 *   module/ngx_http_simhash_stream.c    worker 0's side of replication:
 *                                 publishing the outbox, reading the
 *                                 stream and applying it
 *   module/ngx_http_simhash_redis.c     hiredis's asynchronous API on
 *                                 nginx's event loop, every reply bounded
 *                                 (its own header)
 *   module/ngx_http_simhash_guard.c     the loop guard: a request whose
 *                                 upstream is this proxy is refused
 *   module/ngx_http_simhash_dust.c      the DUST learner (src/sh_dust.h)
 *                                 in the zone: its region, the
 *                                 directives, observing decisions,
 *                                 predictions, its rules for the stats
 *                                 and the snapshot
 *
 * The layers, each calling only those below it: the response path and the
 * directives; replication (replicate, stream, redis); persistence
 * (snapshot); the zone.  The core library (src/, prefix sh_) knows nothing
 * of nginx.
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
#include "sh_dust.h"
#include "sh_file.h"
#include "sh_index.h"
#include "sh_keyrec.h"
#include "sh_sketch.h"
#include "sh_store.h"
#include "sh_stream.h"
#include "sh_topk.h"
#include "sh_volatility.h"
#include "sh_version.h"


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


/* how a response names a stored document whose key's text has left the
 * ring: this prefix and its id (sh_store_id) */
#define NGX_HTTP_SIMHASH_ID_PREFIX   "simhash-id:"
#define NGX_HTTP_SIMHASH_NAME_MAX                                            \
    (sizeof(NGX_HTTP_SIMHASH_ID_PREFIX) + SH_STORE_ID_LEN)


/* the shared part of a zone: at shpool->data */
typedef struct {
    sh_store_t                  *store;     /* every document: sh_store.h */
    size_t                       store_size;
    uint64_t                     text_size; /* of its key text ring */
    sh_index_t                  *index;     /* the store's */
    size_t                       region_size;   /* the index's */
    uint32_t                     capacity;
    uint64_t                     seed_digest;
    uint32_t                     version;   /* extraction, sh_version.h */
    u_char                       secret[SH_STORE_SECRET_LEN];  /* the key
                                               hash's, from simhash_seed */
    size_t                       key_max;   /* longest key ever stored */

    /* counters: relaxed atomic increments, read without the lock */
    ngx_atomic_t                 responses[NGX_HTTP_SIMHASH_NSTATUS];
    ngx_atomic_t                 skipped[NGX_HTTP_SIMHASH_NSKIP];
    ngx_atomic_t                 bytes;     /* body bytes fingerprinted */
    ngx_atomic_t                 identical; /* re-fetches not parsed */
    ngx_atomic_t                 listings;  /* matches vetoed: two listings
                                               of one template */
    ngx_atomic_t                 whole_text;    /* pages whose content is
                                                   links (hubs) */
    ngx_atomic_t                 short_content; /* pages whose own content
                                                   is a few dozen words */

    /* persistence */
    ngx_atomic_t                 generation;        /* changes so far */
    ngx_atomic_t                 saved_generation;  /* in the file */
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

    /* replication, under the lock: the last entry of the stream applied,
     * the crc32 of the stream's name (the id means nothing in another
     * stream), and the first entry this zone published since it was
     * created (0: none yet): our own entries before it are from a previous
     * life of the zone, and are applied like any other */
    sh_stream_id_t               repl_id;
    uint32_t                     repl_stream;
    sh_stream_id_t               repl_since;

    /* the DUST learner (ngx_http_simhash_dust.c), NULL when the zone has
     * none; a separate slab allocation of dust_size bytes, under the
     * zone's lock like the store; dust_logged: the last rule change
     * logged (each is logged once, by whichever worker sees it first) */
    sh_dust_t                   *dust;
    size_t                       dust_size;
    sh_dust_opts_t               dust_opts;
    uint64_t                     dust_logged;
    u_char                       dust_key[32];  /* the secret it was
                                                   formatted under */
    uint64_t                     dust_published;    /* the last rule
                                                   change put in the
                                                   outbox (replicated) */

    /*
     * pid of the worker changing the index, the tree or the document array
     * (under the mutex), 0 otherwise: found set by the next holder of the
     * mutex, it means that worker died in the middle (the master unlocks
     * the mutex of a dead worker, but cannot finish its change); see
     * ngx_http_simhash_zone_lock().
     */
    ngx_atomic_t                 writer;

    /* what the console shows (ngx_http_simhash_sites.c): the rates of
     * the last minutes, the sites that waste the crawl, the last
     * decisions for "why?"; a slab allocation of its own, NULL until the
     * zone's init made it */
    struct ngx_http_simhash_sites_s  *sites;

    /* the last successful save: how long it took, its longest hold of
     * the lock (ms), for the stats and the console */
    ngx_atomic_t                 save_ms;
    ngx_atomic_t                 save_hold_ms;
} ngx_http_simhash_shctx_t;


typedef struct ngx_http_simhash_replicate_s  ngx_http_simhash_replicate_t;


/* a zone as configured (per cycle, in the configuration pool) */
typedef struct {
    ngx_str_t                    name;
    ngx_shm_zone_t              *shm_zone;
    ngx_http_simhash_shctx_t    *sh;
    ngx_slab_pool_t             *shpool;
    sh_rule_t                    rule;      /* match= */
    ngx_uint_t                   distance;  /* the radius, or the cap on H */
    uint32_t                     threshold; /* threshold=, score units */
    size_t                       keys;      /* keys=: the key text ring's
                                               bytes; 0: its share */
    ngx_str_t                    file;      /* full path, "" = none */
    ngx_uint_t                   load;      /* formatted empty in this
                                               cycle: the snapshot is
                                               loaded at init_module */
    ngx_str_t                    stream;    /* the Redis stream followed
                                               (simhash_replicate), "" =
                                               none: the zone and its
                                               snapshot keep the place
                                               in it */
    ngx_msec_t                   save;      /* 0 = only at shutdown */
    uint64_t                     seed_digest;
    uint32_t                     version;   /* extraction, sh_version.h */
    u_char                       mac_key[SH_STREAM_KEY_LEN];  /* stream
                                               entries' (sh_stream.h) */
    u_char                       key_secret[32];  /* the store's key
                                               hash's (sh_store.h) */
    ngx_uint_t                   keyed;     /* simhash_seed was given */
    ngx_uint_t                   seed_set;
    ngx_str_t                    seed_where;  /* "file:line" of that user */
    ngx_event_t                  save_event;  /* per worker */
    ngx_http_simhash_replicate_t  *replicate;   /* NULL: not replicated */

    /* dust=SIZE: the learner's region (0: none), what it adds to the
     * shared memory zone, its options (dust_precision=, dust_evidence=,
     * table sizes from dust=), its hash key (from simhash_seed), and the
     * simhash_dust_rule pins: ngx_http_simhash_dust_pin_t */
    size_t                       dust;
    size_t                       dust_shm;
    sh_dust_opts_t               dust_opts;
    u_char                       dust_secret[32];
    ngx_array_t                 *dust_pins;
#if (NGX_THREADS)
    ngx_thread_pool_t           *thread_pool;
    ngx_thread_task_t           *save_task;   /* per worker */
#endif
} ngx_http_simhash_zone_t;


typedef struct {
    ngx_array_t                  zones;     /* ngx_http_simhash_zone_t * */
    ngx_array_t                  cfgs;      /* ngx_http_simhash_cfg_t */
    ngx_array_t                  replicates;    /* of zones, in order:
                                                   ngx_http_simhash_
                                                   replicate_t * */
    size_t                       max_held;  /* bytes of held bodies a
                                               worker keeps at most */
    ngx_array_t                  server_names;  /* the loop guard's:
                                                   ngx_http_simhash_
                                                   server_name_t */
    ngx_array_t                  dust_pins;     /* simhash_dust_rule:
                                                   ngx_http_simhash_
                                                   dust_pin_t */
} ngx_http_simhash_main_conf_t;


/* a server's name, kept for run time (nginx keeps only its hash) */
typedef struct {
    void                        *server;    /* ngx_http_core_srv_conf_t */
    ngx_str_t                    name;      /* lowercase */
} ngx_http_simhash_server_name_t;


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

    /* simhash_reveal, simhash_reveal_scope: what a response may tell */
    ngx_uint_t                   reveal;    /* NGX_HTTP_SIMHASH_REVEAL_* */
    ngx_http_complex_value_t    *reveal_scope;

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

    /* ngx_http_simhash_guard.c: simhash_loop_guard URL; simhash_action
     * drop's keys= and score= (score units; UNSET: no cap) */
    ngx_http_complex_value_t    *loop_guard;
    ngx_uint_t                   drop_keys;
    ngx_uint_t                   drop_score;

    /* ngx_http_simhash_dust.c: simhash_dust off|learn|on, the share of
     * predictions fetched anyway (in millionths), whether requests with
     * credentials may be predicted */
    ngx_uint_t                   dust;
    ngx_uint_t                   dust_verify;
    ngx_flag_t                   dust_credentials;
} ngx_http_simhash_loc_conf_t;

#define NGX_HTTP_SIMHASH_DUST_OFF    0
#define NGX_HTTP_SIMHASH_DUST_LEARN  1
#define NGX_HTTP_SIMHASH_DUST_ON     2

#define NGX_HTTP_SIMHASH_DROP_KEYS_PATH  0
#define NGX_HTTP_SIMHASH_DROP_KEYS_ANY   1


extern ngx_module_t  ngx_http_simhash_module;


/* how the module spells what it reports: ngx_http_simhash_names.c */

extern ngx_str_t     ngx_http_simhash_status_names[];  /* by status_e */
extern ngx_str_t     ngx_http_simhash_skip_names[];    /* by skip_e */

/* a score (sh_match.h) in nats, exactly, four decimals: at most 15 bytes */
u_char *ngx_http_simhash_score(u_char *p, uint32_t score);

/* "file:line" of the directive being parsed, for later messages */
void ngx_http_simhash_where(ngx_conf_t *cf, ngx_str_t *where);


/*
 * the zone: ngx_http_simhash_zone.c, the storage.  It calls nothing above
 * it (configuration, snapshots, replication call it).
 */

#define NGX_HTTP_SIMHASH_MIN_DOCS   16      /* the smallest zone */

ngx_int_t ngx_http_simhash_zone_init(ngx_shm_zone_t *shm_zone, void *data);
uint32_t ngx_http_simhash_zone_capacity(size_t zone_size, size_t keys);
void *ngx_http_simhash_old_zone(ngx_shm_zone_t *shm);

/*
 * Every change of the zone, and every lookup, happens between lock and
 * unlock; a change is announced by write first.  lock repairs the zone when
 * the previous holder died in the middle of a change.
 */
void ngx_http_simhash_zone_lock(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
void ngx_http_simhash_zone_write(ngx_http_simhash_zone_t *zone);
void ngx_http_simhash_zone_unlock(ngx_http_simhash_zone_t *zone);

/*
 * Under the lock: the document of a key (its ref), or SH_NOREF; store a
 * new one (the oldest is evicted when the zone is full), with the second
 * of its version (0: unknown) and its sketches (NULL: none known); forget
 * one.  A document's record and its changes: the request path's door,
 * below.
 */
uint32_t ngx_http_simhash_zone_key(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key);
uint32_t ngx_http_simhash_zone_store(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint64_t fingerprint, uint64_t digest, uint32_t time,
    const sh_sketches_t *sketches);
void ngx_http_simhash_zone_forget(ngx_http_simhash_zone_t *zone,
    uint32_t ref);

/* Under the lock: empty the zone (format its store again). */
ngx_int_t ngx_http_simhash_zone_empty(ngx_http_simhash_zone_t *zone,
    char *err, size_t errlen);

/* Under the lock: how a response names a stored document: its key, or
 * while its text is gone NGX_HTTP_SIMHASH_ID_PREFIX and its id, written to
 * id[NGX_HTTP_SIMHASH_NAME_MAX]; name points into the zone or into id. */
void ngx_http_simhash_zone_name(ngx_http_simhash_zone_t *zone, uint32_t ref,
    ngx_str_t *name, u_char *id);

/*
 * Under the lock, after this node stored a new document or changed one's
 * fingerprint (fingerprint and digest in place): the version is dated now;
 * returns its time in ms, made unique (sh_stream_next_time), for
 * ngx_http_simhash_replicate_publish().
 */
uint64_t ngx_http_simhash_zone_changed(ngx_http_simhash_zone_t *zone,
    uint32_t ref);

/*
 * The request path's door to the store (the end of
 * ngx_http_simhash_zone.c), under the lock; the changes after
 * ngx_http_simhash_zone_write.  doc: a document's record, NULL if none;
 * fingerprint: NGX_OK or NGX_DECLINED; keyhash: a key's hash in this zone;
 * lookup: sh_index_lookup; touch: made the newest; refresh: the same
 * fingerprint, a new digest, made the newest; replace: a new fingerprint,
 * digest and sketches, made the newest.
 */
const sh_store_doc_t *ngx_http_simhash_zone_doc(ngx_http_simhash_zone_t *zone,
    uint32_t ref);
ngx_int_t ngx_http_simhash_zone_fingerprint(ngx_http_simhash_zone_t *zone,
    uint32_t ref, uint64_t *hash);
uint64_t ngx_http_simhash_zone_keyhash(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key);
size_t ngx_http_simhash_zone_lookup(ngx_http_simhash_zone_t *zone,
    uint64_t hash, const float *weights, const sh_lookup_opts_t *opts,
    sh_match_t *out, size_t max, sh_lookup_stats_t *st);
void ngx_http_simhash_zone_touch(ngx_http_simhash_zone_t *zone,
    uint32_t ref);
void ngx_http_simhash_zone_refresh(ngx_http_simhash_zone_t *zone,
    uint32_t ref, uint64_t digest);
void ngx_http_simhash_zone_replace(ngx_http_simhash_zone_t *zone,
    uint32_t ref, uint64_t fingerprint, uint64_t digest,
    const sh_sketches_t *sketches);

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
    uint32_t                    *times;     /* by ref; NULL: unknown */
    sh_sketches_t               *sketches;  /* by ref; NULL: unknown */
    uint32_t                     nkeys;
    ngx_uint_t                   copied;
    ngx_uint_t                   missing;
} ngx_http_simhash_copy_t;

void ngx_http_simhash_zone_copy(ngx_http_simhash_copy_t *cp,
    const sh_index_t *from);


/* the simhash_zone directive: ngx_http_simhash_zone_conf.c */

char *ngx_http_simhash_zone_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_http_simhash_zone_t *ngx_http_simhash_zone_find(
    ngx_http_simhash_main_conf_t *smcf, ngx_str_t *name);


/* ngx_http_simhash_secret.c: a zone's secret without simhash_seed */
ngx_int_t ngx_http_simhash_secret_local(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);


/* persistence: ngx_http_simhash_snapshot.c, below replication */

ngx_int_t ngx_http_simhash_snapshot_check(ngx_conf_t *cf, ngx_str_t *file);
void ngx_http_simhash_snapshot_load(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
ngx_int_t ngx_http_simhash_snapshot_init_worker(
    ngx_http_simhash_zone_t *zone, ngx_cycle_t *cycle);
void ngx_http_simhash_snapshot_exit_worker(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
void ngx_http_simhash_snapshot_exit(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);


/* replication: ngx_http_simhash_replicate.c, ngx_http_simhash_stream.c */

/* lag buckets of simhash_stats, upper bounds in ms (the last: +Inf) */
#define NGX_HTTP_SIMHASH_NLAG        12
extern ngx_msec_t  ngx_http_simhash_lag_le[NGX_HTTP_SIMHASH_NLAG];

/* the other nodes whose entries were applied: the lag of each (the
 * console's "lag per node"), written by worker 0 alone, read without the
 * lock (a name may be read while it changes: rare, and harmless) */
#define NGX_HTTP_SIMHASH_NODES       16
#define NGX_HTTP_SIMHASH_NODE_NAME   64

typedef struct {
    u_char                       name[NGX_HTTP_SIMHASH_NODE_NAME];
    ngx_atomic_t                 len;       /* 0: free */
    ngx_atomic_t                 lag;       /* ms, of its last entry */
    ngx_atomic_t                 seen;      /* seconds, its last entry */
    ngx_atomic_t                 entries;
} ngx_http_simhash_node_lag_t;

/*
 * The highest sequence number (the seq field, sh_stream.h) applied from
 * one writer of the stream: an entry not above it is a replay.  Only
 * entries whose MAC verified get a slot, so only holders of the tier's
 * secret can fill the table; when it is full the writer applied from
 * longest ago gives its slot up.
 */
#define NGX_HTTP_SIMHASH_WRITERS     256

typedef struct {
    uint64_t                     seq;
    uint64_t                     used;      /* the table's clock when it
                                               last applied */
    u_char                       len;       /* of node; 0: a free slot */
    u_char                       node[SH_STREAM_NODE_MAX];
} ngx_http_simhash_writer_t;

/*
 * The shared part of a zone's replication: its own shared memory zone
 * ("NAME:outbox", sized by outbox=), read by simhash_stats.  The ring
 * holds the records this node stored and did not publish yet; it is
 * written and its positions moved under the zone's lock.  The writers'
 * table and pub_seq are worker 0's alone (one process reads and
 * publishes), kept here so that a reload keeps them.
 */
typedef struct {
    size_t                       size;      /* bytes of the ring */
    u_char                      *ring;
    uint64_t                     head;      /* the oldest record not yet
                                               published (positions only
                                               grow: offset = pos % size) */
    uint64_t                     tail;      /* where the next one goes */
    ngx_atomic_t                 records;   /* from head to tail */
    ngx_atomic_t                 overflow;  /* dropped since the ring
                                               filled up; 0: not full */

    /* counters, relaxed atomic increments */
    ngx_atomic_t                 published;
    ngx_atomic_t                 applied;
    ngx_atomic_t                 skipped_own;
    ngx_atomic_t                 outdated;
    ngx_atomic_t                 refused;
    ngx_atomic_t                 refused_version;   /* of them: another
                                                       extraction version */
    ngx_atomic_t                 refused_mac;       /* of them: no valid
                                                       MAC */
    ngx_atomic_t                 dust_published;    /* DUST rule records
                                                       acknowledged */
    ngx_atomic_t                 dust_applied;      /* imported */
    ngx_atomic_t                 dust_ignored;      /* no dust= here */
    ngx_atomic_t                 dropped;
    ngx_atomic_t                 reconnects;
    ngx_atomic_t                 gaps;
    ngx_atomic_t                 lost;      /* Redis lost the stream */
    ngx_atomic_t                 connected; /* connections up: 0 to 2 */
    ngx_atomic_t                 lag;       /* ms, the last entry applied */
    ngx_atomic_t                 lag_sum;   /* ms */
    ngx_atomic_t                 lag_count;
    ngx_atomic_t                 lag_le[NGX_HTTP_SIMHASH_NLAG];
    ngx_atomic_t                 refused_replay;    /* of the refused: a
                                                       seq not above the
                                                       writer's last */
    ngx_atomic_t                 refused_unsequenced;   /* no seq: an
                                                       earlier release's */
    ngx_atomic_t                 stream_exhausted;  /* 1: XADD fails, the
                                                       stream's last id is
                                                       the largest */
    ngx_atomic_t                 exhausted;     /* times found so */
    ngx_atomic_t                 read_paused;   /* reads stopped at the
                                                   per-tick bound */

    uint64_t                     pub_seq;   /* the last seq sent */
    uint64_t                     writers_clock;     /* entries applied */
    ngx_http_simhash_writer_t    writers[NGX_HTTP_SIMHASH_WRITERS];

    /* by node; the least recently seen gives way to a new one */
    ngx_http_simhash_node_lag_t  nodes[NGX_HTTP_SIMHASH_NODES];
} ngx_http_simhash_outbox_t;


/* a record of the outbox; the key (or a DUST rule's record) follows,
 * padded to 8 bytes */
typedef struct {
    uint32_t                     len;       /* of the key; or WRAP: the rest
                                               of the ring is unused */
    uint32_t                     type;      /* NGX_HTTP_SIMHASH_OUT_* */
    uint64_t                     hash;
    uint64_t                     digest;
    uint64_t                     time;      /* ms since 1970 */
    sh_sketches_t                sketches;
} ngx_http_simhash_outrec_t;

#define NGX_HTTP_SIMHASH_WRAP        0xffffffff

#define NGX_HTTP_SIMHASH_OUT_DOC     0      /* a document's version */
#define NGX_HTTP_SIMHASH_OUT_DUST    1      /* a DUST rule's state: len is
                                               SH_DUST_RULE_REC_LEN, time
                                               when it was put in */


typedef struct ngx_http_simhash_link_s  ngx_http_simhash_link_t;


struct ngx_http_simhash_replicate_s {
    ngx_str_t                    zone_name;
    ngx_str_t                    where;     /* "file:line", for messages */
    ngx_http_simhash_zone_t     *zone;
    void                        *redis;     /* ngx_http_simhash_redis_conf_t */
    ngx_str_t                    url;       /* for the log: no password */
    ngx_str_t                    stream;
    ngx_str_t                    node;
    ngx_uint_t                   maxlen;
    ngx_uint_t                   rate;      /* entries read a second; 0:
                                               no bound */
    size_t                       outbox_size;
    ngx_shm_zone_t              *shm_zone;
    ngx_http_simhash_outbox_t   *outbox;
    ngx_http_simhash_link_t     *link;      /* worker 0: the connections */
};

char *ngx_http_simhash_replicate_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_simhash_replicate_resolve(ngx_conf_t *cf,
    ngx_http_simhash_main_conf_t *smcf);
/* under the lock: this node's new version of a document into the outbox
 * (nothing when the zone is not replicated) */
void ngx_http_simhash_replicate_publish(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint32_t ref, uint64_t time, ngx_log_t *log);
/* under the lock: one DUST rule's record into the outbox */
void ngx_http_simhash_replicate_dust(ngx_http_simhash_zone_t *zone,
    u_char *rec, ngx_log_t *log);

/* worker 0's link to Redis: ngx_http_simhash_stream.c */
ngx_int_t ngx_http_simhash_stream_init_worker(
    ngx_http_simhash_zone_t *zone, ngx_cycle_t *cycle);
void ngx_http_simhash_stream_exit_worker(ngx_http_simhash_zone_t *zone);


/* the request side of a forward proxy: ngx_http_simhash_guard.c */

char *ngx_http_simhash_loop_guard_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_simhash_guard_init(ngx_conf_t *cf);
void ngx_http_simhash_resolve_hint(ngx_http_request_t *r);
ngx_int_t ngx_http_simhash_request_scheme_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
ngx_uint_t ngx_http_simhash_drop_allowed(ngx_http_simhash_loc_conf_t *slcf,
    ngx_str_t *key, ngx_str_t *duplicate_of, uint32_t score);


/* the DUST learner in the zone: ngx_http_simhash_dust.c */

/* a simhash_dust_rule, kept for every (re)initialisation of its zone */
typedef struct {
    ngx_str_t                    zone_name;
    ngx_str_t                    where;     /* "file:line" */
    u_char                      *host;      /* NUL-terminated */
    u_char                      *pattern;   /* NULL: host-wide */
    u_char                      *arg;       /* NULL: the kind takes none */
    sh_dust_kind_t               kind;
    ngx_uint_t                   mode;      /* SH_DUST_PIN_ON, _OFF */
} ngx_http_simhash_dust_pin_t;

/* a prediction for a request: the rule text, the original's name */
typedef struct {
    u_char                       rule[128];
    size_t                       rule_len;
    ngx_str_t                    name;      /* raw, in the request's pool */
    sh_dust_why_t                why;
} ngx_http_simhash_prediction_t;

/* simhash_zone's dust=, dust_precision=, dust_evidence= parameters:
 * NGX_DECLINED when `value` is none of them */
ngx_int_t ngx_http_simhash_dust_param(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_str_t *value);
char *ngx_http_simhash_dust_size(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
char *ngx_http_simhash_dust_verify_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_dust_rule_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
void ngx_http_simhash_dust_exit(void);
ngx_int_t ngx_http_simhash_dust_resolve(ngx_conf_t *cf,
    ngx_http_simhash_main_conf_t *smcf);

/* in the zone's init: a fresh zone, or a kept one (ozone: the old
 * configuration's); under both zones' locks, a resized one takes the
 * rules of the old (ozone) */
ngx_int_t ngx_http_simhash_dust_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);
void ngx_http_simhash_dust_migrate(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);
/* after the snapshot's rules were loaded: the configuration's pins again */
void ngx_http_simhash_dust_repin(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);

/* under the lock: one decision of the module; returns the number of rule
 * changes (then ngx_http_simhash_dust_log() after the lock is released) */
ngx_int_t ngx_http_simhash_dust_observe(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint64_t rep);
void ngx_http_simhash_dust_log(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);

/* NGX_OK with a prediction whose original is still stored, NGX_DECLINED */
ngx_uint_t ngx_http_simhash_dust_same_path(ngx_http_simhash_zone_t *zone,
    ngx_str_t *a, ngx_str_t *b, ngx_log_t *log);
ngx_int_t ngx_http_simhash_dust_predict(ngx_http_request_t *r,
    ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    ngx_http_simhash_prediction_t *p);
void ngx_http_simhash_dust_saved(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_prediction_t *p, ngx_log_t *log);

/* the rules of a zone for the stats: an array of sh_dust_rule_info_t with
 * each rule's host counters in ngx_http_simhash_dust_rule_t */
typedef struct {
    sh_dust_rule_info_t          rule;
    uint64_t                     saved;     /* its host's fetches saved */
    uint64_t                     predictions;
} ngx_http_simhash_dust_rule_t;

ngx_array_t *ngx_http_simhash_dust_rules(ngx_pool_t *pool,
    ngx_http_simhash_zone_t *zone, sh_dust_stats_t *st,
    ngx_uint_t candidates, ngx_log_t *log);

/*
 * Replication of the rules (worker 0): what was last sent or applied of
 * each rule, in a direct-mapped table of worker 0's own (a collision
 * costs one record more), so that the sweep sends only counts that moved
 * by a step.
 */
typedef struct {
    uint64_t                     key;       /* 0: empty */
    uint32_t                     support;
    uint32_t                     against;
} ngx_http_simhash_dust_sent_t;

typedef struct {
    ngx_http_simhash_dust_sent_t  *slot;
    ngx_uint_t                     mask;
    time_t                         next;    /* the next sweep */
} ngx_http_simhash_dust_repl_t;

ngx_int_t ngx_http_simhash_dust_repl_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, ngx_pool_t *pool);
void ngx_http_simhash_dust_sweep(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, ngx_log_t *log);
/* a DUST entry of the stream (its MAC verified): NGX_OK applied,
 * NGX_DECLINED ignored (no learner here), NGX_ERROR refused (damaged) */
ngx_int_t ngx_http_simhash_dust_apply(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, u_char *rec, ngx_log_t *log);


/*
 * What the console shows: ngx_http_simhash_sites.c (rates, sites, the last
 * decisions), ngx_http_simhash_explain.c ("why?"),
 * ngx_http_simhash_console.c (the page).
 */

/* the events counted: a status (ngx_http_simhash_status_e), then these */
#define NGX_HTTP_SIMHASH_EV_DROPPED     NGX_HTTP_SIMHASH_NSTATUS
#define NGX_HTTP_SIMHASH_EV_PREDICTED   (NGX_HTTP_SIMHASH_NSTATUS + 1)
#define NGX_HTTP_SIMHASH_NEV            (NGX_HTTP_SIMHASH_NSTATUS + 2)

#define NGX_HTTP_SIMHASH_RATE_STEP      10      /* seconds a slot */
#define NGX_HTTP_SIMHASH_RATE_SLOTS     36      /* 6 minutes */
#define NGX_HTTP_SIMHASH_SITES_K        64      /* heavy-hitter entries */
#define NGX_HTTP_SIMHASH_SITES_PROM     10      /* of them in Prometheus */
#define NGX_HTTP_SIMHASH_DECISIONS      4096    /* the last decisions kept,
                                                   direct-mapped by key */

/* one decision, as "why?" tells it later */
typedef struct {
    uint64_t                     keyhash;   /* sh_store_keyhash; 0: free */
    uint64_t                     original;  /* the original's keyhash, 0 */
    uint32_t                     time;      /* seconds */
    uint32_t                     score;
    uint16_t                     distance;  /* 0xffff: none */
    uint8_t                      status;    /* an event, as above */
    uint8_t                      action;    /* NGX_HTTP_SIMHASH_DID_* */
    uint32_t                     pad;
} ngx_http_simhash_decision_t;

#define NGX_HTTP_SIMHASH_DID_PASSED     0
#define NGX_HTTP_SIMHASH_DID_DROPPED    1
#define NGX_HTTP_SIMHASH_DID_PREDICTED  2

typedef struct {
    ngx_atomic_t                 epoch;     /* time / STEP of its counts */
    ngx_atomic_t                 n[NGX_HTTP_SIMHASH_NEV];
} ngx_http_simhash_rate_t;

/* what the predictions of one set of rules on one host came to: made,
 * then of those fetched to check them (simhash_dust_verify), the ones
 * that were duplicates indeed and the ones that were not */
#define NGX_HTTP_SIMHASH_OUTCOMES       256     /* direct-mapped */
#define NGX_HTTP_SIMHASH_OUTCOME_TEXT   64

#define NGX_HTTP_SIMHASH_MADE           0
#define NGX_HTTP_SIMHASH_VERIFIED       1
#define NGX_HTTP_SIMHASH_FAILED         2

typedef struct {
    uint64_t                     hash;      /* of host and rules; 0: free */
    u_char                       host[NGX_HTTP_SIMHASH_OUTCOME_TEXT];
    u_char                       rules[NGX_HTTP_SIMHASH_OUTCOME_TEXT];
    uint64_t                     n[3];      /* made, verified, failed */
} ngx_http_simhash_outcome_t;

/*
 * The same per learned rule: a rule is its host, the first path component
 * of the URL it predicted ("" for a root-level file: the scope the learner
 * learns it in) and its text, kind(arg).  4-way sets: a rule new to a full
 * set takes the place of the one with the fewest predictions made (whose
 * counts are lost); 1,024 rules, 40 KB.
 */
#define NGX_HTTP_SIMHASH_RULE_SETS      256
#define NGX_HTTP_SIMHASH_RULE_WAYS      4

typedef struct {
    uint64_t                     hash;      /* host, scope, rule; 0: free */
    uint64_t                     rule;      /* host and rule: what a
                                               host-wide rule sums */
    uint64_t                     n[3];      /* made, verified, failed */
} ngx_http_simhash_rule_count_t;

typedef struct ngx_http_simhash_sites_s {
    ngx_http_simhash_rate_t      rate[NGX_HTTP_SIMHASH_RATE_SLOTS];
    ngx_http_simhash_outcome_t   outcome[NGX_HTTP_SIMHASH_OUTCOMES];
    ngx_http_simhash_rule_count_t  rule_count[NGX_HTTP_SIMHASH_RULE_SETS
                                              * NGX_HTTP_SIMHASH_RULE_WAYS];
    ngx_http_simhash_decision_t  decision[NGX_HTTP_SIMHASH_DECISIONS];
    u_char                       key[32];   /* the secret of the table */
    time_t                       since;     /* the figures count from */
    time_t                       restored;  /* the save they were restored
                                               from at start, 0: none */
    sh_topk_t                   *topk;      /* follows, in the allocation */
} ngx_http_simhash_sites_t;

/* an event on a key, for the rates, the sites and the last decisions */
typedef struct {
    ngx_str_t                   *key;
    ngx_uint_t                   event;     /* a status, or _EV_PREDICTED */
    ngx_uint_t                   action;    /* NGX_HTTP_SIMHASH_DID_* */
    uint64_t                     original;  /* keyhash, 0: none */
    ngx_uint_t                   distance;  /* NGX_ERROR: none */
    uint32_t                     score;
    size_t                       bytes;     /* body bytes not passed on */
} ngx_http_simhash_event_t;

/* the zone's shared memory the console adds (beside zone= and dust=) */
size_t ngx_http_simhash_sites_shm(void);
ngx_int_t ngx_http_simhash_sites_init(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
/* not under the lock: it takes it, briefly; _locked: in the caller's
 * hold (the decision's), so that a response takes the lock once */
void ngx_http_simhash_sites_event(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev, ngx_log_t *log);
void ngx_http_simhash_sites_event_locked(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev);

/* the figures across a restart, beside the snapshot (PATH.console):
 * ngx_http_simhash_figures.c; the save in the snapshot's thread */
ngx_int_t ngx_http_simhash_figures_save(ngx_http_simhash_zone_t *zone,
    const sh_file_owner_t *owner, char *err, size_t errlen);
void ngx_http_simhash_figures_load(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);

/* for simhash_stats: read under the lock, then written out */
typedef struct ngx_http_simhash_sites_snap_s {
    ngx_uint_t                   now;       /* time / STEP */
    ngx_str_t                    node;      /* whose figures: the zone's
                                               replication node, else the
                                               host's name */
    time_t                       since;
    time_t                       restored;
    uint64_t                     rate[NGX_HTTP_SIMHASH_NEV]
                                     [NGX_HTTP_SIMHASH_RATE_SLOTS];
    sh_topk_stats_t              st;
    sh_topk_entry_t             *top;       /* by count */
    ngx_uint_t                   ntop;
    ngx_http_simhash_outcome_t  *outcome;   /* the ones in use */
    ngx_uint_t                   noutcome;
    ngx_http_simhash_rule_count_t  *rule_count;     /* the ones in use */
    ngx_uint_t                   nrule_count;
    ngx_str_t                    zone;      /* for Prometheus: its name, */
    struct ngx_http_simhash_sites_snap_s  *next;    /* the next zone's */
} ngx_http_simhash_sites_snap_t;

/* not under the lock: a prediction of `rules` (as X-Simhash-Predicted
 * spells them) for key, made, verified or failed */
void ngx_http_simhash_sites_outcome(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, ngx_str_t *rules, ngx_uint_t what, ngx_log_t *log);
void ngx_http_simhash_sites_outcome_locked(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, ngx_str_t *rules, ngx_uint_t what);

/* the first path component of a key (a URL), the scope the DUST learner
 * learns a rule in: "doc" of /doc/17?sid=1, "" for a root-level file */
void ngx_http_simhash_key_scope(ngx_str_t *key, ngx_str_t *comp);

/* a learned rule's predictions made, verified, failed, from a table of
 * rule counts (the shared one under the lock, or a snap's copy) */
void ngx_http_simhash_sites_rule_counts(ngx_http_simhash_rule_count_t *t,
    ngx_uint_t n, sh_dust_rule_info_t *ri, uint64_t out[3]);

/* the rules with the most predictions made, in Prometheus: a bounded
 * number of series whatever the rules */
#define NGX_HTTP_SIMHASH_RULES_PROM     10

u_char *ngx_http_simhash_sites_rules_prom(u_char *p, ngx_str_t *zone,
    ngx_array_t *rules, ngx_http_simhash_sites_snap_t *sites,
    ngx_uint_t head);

ngx_http_simhash_sites_snap_t *ngx_http_simhash_sites_read(ngx_pool_t *pool,
    ngx_http_simhash_zone_t *zone, ngx_log_t *log);
size_t ngx_http_simhash_sites_size(ngx_http_simhash_sites_snap_t *ss,
    ngx_str_t *zone_name, ngx_uint_t prom);
u_char *ngx_http_simhash_sites_json(u_char *p,
    ngx_http_simhash_sites_snap_t *ss);
/* the per-site gauges of every zone: the snaps linked by next */
u_char *ngx_http_simhash_sites_prom(u_char *p,
    ngx_http_simhash_sites_snap_t *first);
u_char *ngx_http_simhash_text_escape(u_char *p, u_char *text, size_t len);
u_char *ngx_http_simhash_rule_json(u_char *p, sh_dust_rule_info_t *ri);

/* the lag per node of a replicated zone, for the stats */
size_t ngx_http_simhash_nodes_size(ngx_http_simhash_zone_t *zone);
u_char *ngx_http_simhash_nodes_json(u_char *p,
    ngx_http_simhash_zone_t *zone);
u_char *ngx_http_simhash_nodes_prom(u_char *p, ngx_http_simhash_zone_t *zone,
    ngx_uint_t head);

/* ?explain=KEY (url 0), ?url=URL (url 1) and ?format=html of
 * simhash_stats */
ngx_int_t ngx_http_simhash_explain_handler(ngx_http_request_t *r,
    ngx_str_t *arg, ngx_uint_t url);
ngx_int_t ngx_http_simhash_console_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_simhash_send_buf(ngx_http_request_t *r, ngx_buf_t *b,
    char *type);


/* statistics: ngx_http_simhash_stats.c */

char *ngx_http_simhash_stats_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_simhash_stats_resolve(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf);


#endif /* _NGX_HTTP_SIMHASH_H_INCLUDED_ */
