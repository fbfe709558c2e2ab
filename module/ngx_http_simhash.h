/*
 * ngx_http_simhash.h -- what the module's files share; private to the module.
 *
 * The module, one subject a file, on three floors (calls only go down):
 *
 * the request path and the module's tables
 *   ngx_simhash_module.c          the module's tables and init hooks
 *                                 (which call each part's); its top lists
 *                                 the request path's files, one stage a
 *                                 file (module/..._predict.c, _filter.c,
 *                                 _decide.c, _response.c, _variables.c,
 *                                 _directives.c), which share
 *                                 ngx_http_simhash_request.h
 *   module/ngx_http_simhash_guard.c     the loop guard: a request whose
 *                                 upstream is this proxy is refused
 *   module/ngx_http_simhash_stats.c     the simhash_stats handler (and
 *                                 the counters' part); with _explain.c
 *                                 ("why?") and _console.c
 *
 * the parts of a zone (ngx_http_simhash_part_t; the list:
 * module/ngx_http_simhash_parts.c), each with its own configuration and
 * shared state
 *   module/ngx_http_simhash_dust.c      the DUST learner (src/sh_dust.h)
 *                                 in the zone: its region, observing
 *                                 decisions, predictions, its rules for the
 *                                 stats and the snapshot (its header:
 *                                 ngx_http_simhash_dust.h)
 *   module/ngx_http_simhash_dust_conf.c its configuration: simhash_zone's
 *                                 dust= parameters, the simhash_dust*
 *                                 directives
 *   module/ngx_http_simhash_sites.c     the console's tables: rates, sites,
 *                                 the last decisions
 *   module/ngx_http_simhash_snapshot.c  the saves: file= and save=, the
 *                                 hooks; _snapshot_load.c the start from
 *                                 the file, _snapshot_save.c the saves
 *                                 (their header: ngx_http_simhash_snapshot.h)
 *   module/ngx_http_simhash_pump_part.c  replication's part, over:
 *   module/ngx_http_simhash_replicate.c a tier of nodes shares one index
 *                                 through a Redis Stream: the
 *                                 simhash_replicate directive, the outbox
 *   module/ngx_http_simhash_pump.c      worker 0's side of replication
 *                                 (ngx_http_simhash_pump.h): _publish.c
 *                                 the outbox to the stream, _read.c the
 *                                 stream read and checked, _apply.c
 *                                 each entry applied
 *   module/ngx_http_simhash_dust_replicate.c  the DUST rules between
 *                                 nodes, pulled by the pump
 *   module/ngx_http_simhash_redis.c     a Redis connection on nginx's
 *                                 event loop, every reply bounded (its
 *                                 own header); _url.c the URL, _reply.c
 *                                 the stream commands' replies parsed
 *
 * the zone core
 *   module/ngx_http_simhash_zone.c      the shared memory zone: the index,
 *                                 the documents' keys, eviction, repair
 *                                 after a dead worker, reload and resize;
 *                                 the only door to the store, naming no
 *                                 part
 *   module/ngx_http_simhash_zone_conf.c the simhash_zone directive: the
 *                                 store's parameters, the others to the
 *                                 parts
 *   module/ngx_http_simhash_secret.c    a zone's secret without
 *                                 simhash_seed
 *   module/ngx_http_simhash_names.c     how the module spells what it
 *                                 reports: status and skip names, scores,
 *                                 "file:line" of a directive
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
#include "sh_dust.h"
#include "sh_file.h"
#include "sh_image.h"
#include "sh_index.h"
#include "sh_keyrec.h"
#include "sh_sketch.h"
#include "sh_store.h"
#include "sh_store_file.h"
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
    NGX_HTTP_SIMHASH_SKIP_INCOMPLETE,   /* the cluster's index not read in
                                           full: never called new */
    NGX_HTTP_SIMHASH_NSKIP
} ngx_http_simhash_skip_e;


/* how a response names a stored document whose key's text has left the
 * ring: this prefix and its id (sh_store_id) */
#define NGX_HTTP_SIMHASH_ID_PREFIX   "simhash-id:"
#define NGX_HTTP_SIMHASH_NAME_MAX                                            \
    (sizeof(NGX_HTTP_SIMHASH_ID_PREFIX) + SH_STORE_ID_LEN)


/* the most parts a zone can have (ngx_http_simhash_parts.c lists them) */
#define NGX_HTTP_SIMHASH_PARTS_MAX   8


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

    ngx_atomic_t                 generation;        /* changes so far:
                                                       the saving part
                                                       compares it with
                                                       what is in its
                                                       file */

    /* replication, under the lock: the last entry of the stream applied,
     * the crc32 of the stream's name (the id means nothing in another
     * stream), and the first entry this zone published since it was
     * created (0: none yet): our own entries before it are from a previous
     * life of the zone, and are applied like any other */
    sh_stream_id_t               repl_id;
    uint32_t                     repl_stream;
    sh_stream_id_t               repl_since;

    /*
     * pid of the worker changing the index, the tree or the document array
     * (under the mutex), 0 otherwise: found set by the next holder of the
     * mutex, it means that worker died in the middle (the master unlocks
     * the mutex of a dead worker, but cannot finish its change); see
     * ngx_http_simhash_zone_lock().
     */
    ngx_atomic_t                 writer;

    /* each part's shared state, by its index (ngx_http_simhash_part_t):
     * its shctx_size bytes, allocated with this struct, or what its
     * shm_init allocated; NULL: none */
    void                        *part[NGX_HTTP_SIMHASH_PARTS_MAX];
} ngx_http_simhash_shctx_t;


typedef struct ngx_http_simhash_replicate_s  ngx_http_simhash_replicate_t;
typedef struct ngx_http_simhash_dust_loc_s   ngx_http_simhash_dust_loc_t;


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
    ngx_str_t                    file;      /* full path, "" = none:
                                               the snapshot's (file=, the
                                               saving part's parameter),
                                               and beside it the secret's */
    ngx_uint_t                   formatted; /* formatted empty in this
                                               cycle (not taken over from
                                               a kept or resized zone) */
    ngx_str_t                    stream;    /* the Redis stream followed
                                               (simhash_replicate), "" =
                                               none: the zone and its
                                               snapshot keep the place
                                               in it */
    uint64_t                     seed_digest;
    uint32_t                     version;   /* extraction, sh_version.h */
    u_char                       mac_key[SH_STREAM_KEY_LEN];  /* stream
                                               entries' (sh_stream.h) */
    u_char                       key_secret[32];  /* the store's key
                                               hash's (sh_store.h) */
    ngx_uint_t                   keyed;     /* simhash_seed was given */
    ngx_uint_t                   seed_set;
    ngx_str_t                    seed_where;  /* "file:line" of that user */
    ngx_http_simhash_replicate_t  *replicate;   /* NULL: not replicated */

    /* the key of the zone's DUST learner's hashes and of the console's
     * table of sites (from simhash_seed, or the zone's own secret) */
    u_char                       dust_secret[32];

    /* the key of the console's saved figures' MAC (PATH.console): from
     * the same, for no other use, and never written to a file */
    u_char                       figures_secret[32];

    /* the workers' user (ngx_core_conf_t's), for the checks of the files
     * beside the snapshot: set by the master before it loads them */
    ngx_uid_t                    workers_uid;

    /* each part's configuration of the zone, by its index: what its
     * create_conf returned */
    void                        *conf[NGX_HTTP_SIMHASH_PARTS_MAX];

    /* the locations that use the zone, as the console shows them:
     * ngx_http_simhash_use_t (NULL: none yet) */
    ngx_array_t                 *uses;
} ngx_http_simhash_zone_t;


#define NGX_HTTP_SIMHASH_USES_MAX  32     /* locations listed a zone */

/* a location that uses a zone: whether it tags or drops, and its DUST */
typedef struct {
    ngx_str_t                    location;  /* its name, "" at server{} */
    ngx_uint_t                   drop;      /* simhash_action drop */
    ngx_uint_t                   drop_code;
    char                        *keys;      /* "path", "any" */
    char                        *dust;      /* "off", "learn", "on" */
} ngx_http_simhash_use_t;


/*
 * A part of the zone: a feature that keeps state in a zone (simhash_zone
 * parameters, shared memory, a section of the snapshot, timers in the
 * workers) and that the zone core calls only through this table, as
 * nginx calls its modules through ngx_module_t and ngx_http_module_t.
 * The zone core (ngx_http_simhash_zone.c, _zone_conf.c) and the module's
 * process hooks loop over ngx_http_simhash_parts[], the one list that
 * names every part (ngx_http_simhash_parts.c); the zone keeps one
 * configuration slot (zone->conf) and one shared slot (sh->part) for each,
 * by its index.  Every hook may be NULL.
 */
typedef struct {
    ngx_str_t                    name;
    ngx_uint_t                   index;     /* set by _parts_init() */
    ngx_str_t                    tail_name; /* what its snapshot section
                                               holds, for the log */

    /* bytes of shared state allocated with the zone's shctx (zeroed, at
     * sh->part[index]) when the zone is created */
    size_t                       shctx_size;

    /* simhash_zone: the part's configuration of a zone (its conf slot);
     * one parameter, NGX_DECLINED when it is not the part's; all read,
     * checked; the shared memory it adds to the zone's size */
    void                      *(*create_conf)(ngx_conf_t *cf,
                                   ngx_http_simhash_zone_t *zone);
    ngx_int_t                  (*param)(ngx_conf_t *cf,
                                   ngx_http_simhash_zone_t *zone,
                                   ngx_str_t *value);
    char                      *(*conf_done)(ngx_conf_t *cf,
                                   ngx_http_simhash_zone_t *zone);
    size_t                     (*shm_size)(ngx_http_simhash_zone_t *zone);

    /* the zone's init: a created zone (ozone NULL) or one kept over a
     * reload (ozone: the old configuration's); then, under both zones'
     * locks, a resized zone takes the part's state over from the old */
    ngx_int_t                  (*shm_init)(ngx_http_simhash_zone_t *zone,
                                   ngx_http_simhash_zone_t *ozone,
                                   ngx_log_t *log);
    void                       (*shm_migrate)(ngx_http_simhash_zone_t *zone,
                                   ngx_http_simhash_zone_t *ozone,
                                   ngx_log_t *log);

    /* the snapshot's tail section (sh_store_file.h), which one part at
     * most fills: save_tail copies it out (malloc()ed, in a thread: no
     * nginx call that logs or allocates from a pool), NGX_DECLINED: none
     * in this zone; at start, want_tail says whether the zone has room
     * for a file's (and logs why not), load_tail takes it back */
    ngx_uint_t                 (*want_tail)(ngx_http_simhash_zone_t *zone,
                                   ngx_log_t *log);
    ngx_int_t                  (*save_tail)(ngx_http_simhash_zone_t *zone,
                                   void **buf, size_t *len, char *err,
                                   size_t errlen);
    ngx_int_t                  (*load_tail)(ngx_http_simhash_zone_t *zone,
                                   u_char *buf, size_t len, ngx_log_t *log);

    /* the module's hooks, once a cycle (the part finds its zones with
     * ngx_http_simhash_cycle_zones()) */
    ngx_int_t                  (*postconfiguration)(ngx_conf_t *cf);
    ngx_int_t                  (*init_module)(ngx_cycle_t *cycle);
    ngx_int_t                  (*init_process)(ngx_cycle_t *cycle);
    void                       (*exit_process)(ngx_cycle_t *cycle);
    void                       (*exit_master)(ngx_cycle_t *cycle);

    /* a file of the part's own beside the snapshot (PATH.something), which
     * any part may keep: save_aside writes it right after each snapshot is
     * committed, in the save's thread (owner: the snapshot's, NULL: none;
     * the same limits as save_tail), load_aside reads it back when the
     * zone starts from its snapshot, whatever becomes of that */
    ngx_int_t                  (*save_aside)(ngx_http_simhash_zone_t *zone,
                                   const sh_file_owner_t *owner, char *err,
                                   size_t errlen);
    void                       (*load_aside)(ngx_http_simhash_zone_t *zone,
                                   ngx_log_t *log);
} ngx_http_simhash_part_t;

/* the list, NULL-terminated: ngx_http_simhash_parts.c (only the module's
 * top file names it) */
extern ngx_http_simhash_part_t  *ngx_http_simhash_parts[];

/* the zone's table of parts: handed down once the module's configuration
 * starts (each part's index set), read by the zone core */
void ngx_http_simhash_zone_use_parts(ngx_http_simhash_part_t **parts);
ngx_http_simhash_part_t **ngx_http_simhash_zone_parts(void);

#define ngx_http_simhash_part_conf(zone, pt)  (zone)->conf[(pt).index]
#define ngx_http_simhash_part_shm(zone, pt)                                  \
    ((zone)->sh ? (zone)->sh->part[(pt).index] : NULL)


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

    /* simhash_dust, simhash_dust_verify, simhash_dust_credentials: the
     * DUST learner's (ngx_http_simhash_dust.h, _dust_conf.c) */
    ngx_http_simhash_dust_loc_t  *dust;
} ngx_http_simhash_loc_conf_t;

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

/* a key as it may go into a header, a variable or a log line: control
 * bytes, space, DEL and bytes >= 0x80 percent-encoded */
ngx_int_t ngx_http_simhash_escape(ngx_pool_t *pool, u_char *key, size_t len,
    ngx_str_t *out);


/*
 * the zone: ngx_http_simhash_zone.c, the storage, and the only door to
 * the store.  It calls nothing above it but the parts' hooks, through
 * their table (the parts, the configuration and the request path call
 * it).
 */

#define NGX_HTTP_SIMHASH_MIN_DOCS   16      /* the smallest zone */

ngx_int_t ngx_http_simhash_zone_init(ngx_shm_zone_t *shm_zone, void *data);
uint32_t ngx_http_simhash_zone_capacity(size_t zone_size, size_t keys);
void *ngx_http_simhash_old_zone(ngx_shm_zone_t *shm);
/* what the parts add to the zone's shared memory, beside the store */
size_t ngx_http_simhash_zone_parts_size(ngx_http_simhash_zone_t *zone);
/* the zones of a cycle (n: how many), for the parts' process hooks */
ngx_http_simhash_zone_t **ngx_http_simhash_cycle_zones(ngx_cycle_t *cycle,
    ngx_uint_t *n);
/* the part that fills the snapshot's tail section, or NULL */
ngx_http_simhash_part_t *ngx_http_simhash_zone_tail(void);

/*
 * Every change of the zone, and every lookup, happens between lock and
 * unlock; a change is announced by write first.  lock repairs the zone when
 * the previous holder died in the middle of a change.
 */
void ngx_http_simhash_zone_lock(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
void ngx_http_simhash_zone_write(ngx_http_simhash_zone_t *zone);
void ngx_http_simhash_zone_unlock(ngx_http_simhash_zone_t *zone);
/* in a thread, which cannot repair: NGX_ERROR while a repair is pending */
ngx_int_t ngx_http_simhash_zone_lock_quiet(ngx_http_simhash_zone_t *zone);

/*
 * Under the lock: the document of a key (its ref), or SH_NOREF; store a
 * new one (the oldest is evicted when the zone is full), with the second
 * of its version (0: unknown) and its sketches (NULL: none known); forget
 * one.  A document's record and its changes: the request path's door,
 * below.
 */
uint32_t ngx_http_simhash_zone_key(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key);
/* the same, by the key's hash (sh_store_keyhash) */
uint32_t ngx_http_simhash_zone_find_hash(ngx_http_simhash_zone_t *zone,
    uint64_t keyhash);
uint32_t ngx_http_simhash_zone_store(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint64_t fingerprint, uint64_t digest, uint32_t time,
    const sh_sketches_t *sketches);
/* the same, a document known by its key hash only (its text unknown) */
uint32_t ngx_http_simhash_zone_store_hash(ngx_http_simhash_zone_t *zone,
    uint64_t keyhash, ngx_str_t *text, uint64_t fingerprint, uint64_t digest,
    uint32_t time, const sh_sketches_t *sketches);
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
 * The snapshot's and the statistics' door (ngx_http_simhash_zone.c's last
 * block), each under the lock its library function asks: stats: the
 * index's (ix, if not NULL) and the store's statistics; set: a document's
 * record, then its fingerprint (sh_store_set, sh_store_update); save_*:
 * sh_image_save_*; load_image: sh_image_load_fd with the zone's version;
 * file_*: sh_store_file_*; attach: sh_index_attach, then sh_index_stats.
 */
void ngx_http_simhash_zone_stats(ngx_http_simhash_zone_t *zone,
    sh_index_stats_t *ix, sh_store_stats_t *ss);
void ngx_http_simhash_zone_set(ngx_http_simhash_zone_t *zone, uint32_t ref,
    const sh_store_doc_t *d, uint64_t fingerprint);
void ngx_http_simhash_zone_save_begin(ngx_http_simhash_zone_t *zone,
    sh_image_saver_t *isv, unsigned char *buf, size_t size);
long ngx_http_simhash_zone_save_step(sh_image_saver_t *isv);
int ngx_http_simhash_zone_save_complete(const sh_image_saver_t *isv);
void ngx_http_simhash_zone_save_abort(sh_image_saver_t *isv);
int ngx_http_simhash_zone_load_image(ngx_http_simhash_zone_t *zone, int fd,
    uint64_t off, uint64_t len, sh_image_info_t *info, char *err,
    size_t errlen);
int ngx_http_simhash_zone_file_begin(sh_file_writer_t *w, const void *meta,
    size_t meta_len, char *err, size_t errlen);
int ngx_http_simhash_zone_file_tail(sh_file_writer_t *w, const void *data,
    size_t len, char *err, size_t errlen);
int ngx_http_simhash_zone_file_parse(const unsigned char *file, size_t len,
    const unsigned char **meta, size_t *meta_len,
    const unsigned char **image, size_t *image_len, char *err, size_t errlen);
int ngx_http_simhash_zone_file_tail_find(const unsigned char *footer,
    uint64_t rest, uint64_t *off, uint64_t *len, uint64_t *sum);
int ngx_http_simhash_zone_file_tail_ok(const void *data, size_t len,
    uint64_t sum);
int ngx_http_simhash_zone_file_is(const unsigned char *file, size_t len);
sh_index_t *ngx_http_simhash_zone_attach(void *region, size_t size,
    sh_index_stats_t *st, char *err, size_t errlen);

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


/* persistence: the saving part, ngx_http_simhash_snapshot.h */


/* replication: ngx_http_simhash_replicate.c (the directive, the outbox),
 * ngx_http_simhash_pump*.c (worker 0's pump) */

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
extern ngx_http_simhash_part_t  ngx_http_simhash_replicate_part;

ngx_int_t ngx_http_simhash_replicate_resolve(ngx_conf_t *cf,
    ngx_http_simhash_main_conf_t *smcf);
/* under the lock: this node's new version of a document into the outbox
 * (nothing when the zone is not replicated) */
void ngx_http_simhash_replicate_publish(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint32_t ref, uint64_t time, ngx_log_t *log);

/* worker 0's pump to and from Redis: ngx_http_simhash_pump.c */
ngx_int_t ngx_http_simhash_pump_init_worker(ngx_http_simhash_zone_t *zone,
    ngx_cycle_t *cycle);
void ngx_http_simhash_pump_exit_worker(ngx_http_simhash_zone_t *zone);


/* the request side of a forward proxy: ngx_http_simhash_guard.c */

char *ngx_http_simhash_loop_guard_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_simhash_guard_init(ngx_conf_t *cf);
void ngx_http_simhash_resolve_hint(ngx_http_request_t *r);
ngx_int_t ngx_http_simhash_url_request(ngx_http_request_t *r, ngx_str_t *url,
    ngx_http_request_t **out);
ngx_int_t ngx_http_simhash_url_parts(u_char *p, u_char *last,
    ngx_str_t *scheme, ngx_str_t *authority);
ngx_uint_t ngx_http_simhash_drop_allowed(ngx_http_simhash_loc_conf_t *slcf,
    ngx_str_t *key, ngx_str_t *duplicate_of, uint32_t score);


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
                                                   in sets by key */
#define NGX_HTTP_SIMHASH_DECISION_WAYS  4       /* a set's decisions */

/* one decision, as "why?" tells it later */
typedef struct {
    uint64_t                     keyhash;   /* sh_store_keyhash; 0: free */
    uint64_t                     original;  /* the original's keyhash, 0 */
    uint32_t                     time;      /* seconds */
    uint32_t                     score;
    uint16_t                     distance;  /* 0xffff: none */
    uint8_t                      status;    /* an event, as above */
    uint8_t                      action;    /* NGX_HTTP_SIMHASH_DID_* */
    uint32_t                     seq;       /* its order in its set: the
                                               least gives way */
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

/* the console's part of the zone: the shared memory it adds (beside
 * zone= and dust=), and its region (NULL until the zone's init made it) */
extern ngx_http_simhash_part_t  ngx_http_simhash_sites_part;

size_t ngx_http_simhash_sites_shm(void);

#define ngx_http_simhash_sites(zone)                                         \
    ((ngx_http_simhash_sites_t *)                                            \
         ngx_http_simhash_part_shm(zone, ngx_http_simhash_sites_part))
/* not under the lock: it takes it, briefly; _locked: in the caller's
 * hold (the decision's), so that a response takes the lock once */
void ngx_http_simhash_sites_event(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev, ngx_log_t *log);
void ngx_http_simhash_sites_event_locked(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev);

/* the purpose of the key of PATH.console's MAC (sh_mac_derive) */
#define NGX_HTTP_SIMHASH_FIGURES_PURPOSE  "console figures"

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
    sh_topk_t                   *keys;      /* the secret of their hashes
                                               (sh_topk_keyed) */
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
ngx_http_simhash_decision_t *ngx_http_simhash_sites_decision(
    ngx_http_simhash_sites_t *ss, uint64_t keyhash, ngx_uint_t add);
void ngx_http_simhash_sites_rule_counts(sh_topk_t *keys,
    ngx_http_simhash_rule_count_t *t, ngx_uint_t n, sh_dust_rule_info_t *ri,
    uint64_t out[3]);

/* the rules with the most predictions made, in Prometheus: a bounded
 * number of series whatever the rules (written by the statistics,
 * ngx_http_simhash_stats.c, from the rules and the sites' counts) */
#define NGX_HTTP_SIMHASH_RULES_PROM     10

u_char *ngx_http_simhash_sites_rules_prom(u_char *p, ngx_str_t *zone,
    ngx_array_t *rules, ngx_http_simhash_sites_snap_t *sites,
    ngx_uint_t head);
/* a rule's labels, zone="Z",host=...,arg="A" (ngx_http_simhash_stats_rules.c) */
u_char *ngx_http_simhash_rule_labels(u_char *p, ngx_str_t *zone,
    sh_dust_rule_info_t *ri);

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

/* the lag per node of a replicated zone, for the stats */
/* the locations that use a zone (listed by ngx_http_simhash_directives.c),
 * in the JSON's "locations" (ngx_http_simhash_console.c) */
size_t ngx_http_simhash_uses_size(ngx_http_simhash_zone_t *zone);
u_char *ngx_http_simhash_uses_json(u_char *p, ngx_http_simhash_zone_t *zone);

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

/*
 * The zone's counters, the statistics part's shared state (allocated with
 * the zone's shctx): relaxed atomic increments by the request path, read
 * without the lock.
 */
typedef struct {
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
} ngx_http_simhash_counters_t;

extern ngx_http_simhash_part_t  ngx_http_simhash_stats_part;

#define ngx_http_simhash_counters(zone)                                      \
    ((ngx_http_simhash_counters_t *)                                         \
         ngx_http_simhash_part_shm(zone, ngx_http_simhash_stats_part))

/* one of them, plus n: ngx_http_simhash_count(zone, identical, 1) */
#define ngx_http_simhash_count(zone, counter, n)                             \
    (void) ngx_atomic_fetch_add(&ngx_http_simhash_counters(zone)->counter,  \
                                n)

char *ngx_http_simhash_stats_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_simhash_stats_resolve(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf);


#endif /* _NGX_HTTP_SIMHASH_H_INCLUDED_ */
