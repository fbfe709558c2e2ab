
/*
 * ngx_http_simhash_module -- tells a crawler, for every HTML page it fetches
 * through this proxy, whether the page is new, a near-duplicate of a page
 * already seen under another key (URL), or an unchanged / changed re-fetch
 * of the same key.  The fingerprints live in a shared-memory PSM index
 * (src/sh_index.h) that every worker process uses.
 *
 * The path of one response, in the order of this file:
 *
 *   1. ngx_http_simhash_header_filter: decide whether the response is ours
 *      (200, main request, not HEAD, type in simhash_types).  If it is, the
 *      header is held back (like the xslt filter does); a response that we
 *      already know we cannot fingerprint (unsupported Content-Encoding,
 *      Content-Length over simhash_max_body) is tagged "skipped" and passes.
 *
 *   2. ngx_http_simhash_body_filter: every buffer is copied into our own
 *      buffers for sending later (the upstream's buffers are released at
 *      once, as the image filter does), and the copy is fed to the streaming
 *      extractor (sh_doc_feed, inflating gzip/deflate first) in batches as
 *      it arrives.  Over simhash_max_body we give up: header, held bytes
 *      and the rest are sent unmodified ("skipped").
 *
 *   3. At the last buffer, ngx_http_simhash_finish computes the fingerprint,
 *      ngx_http_simhash_decide consults and updates the zone under its
 *      mutex, ngx_http_simhash_send adds the X-Simhash-* headers and sends
 *      header and body (or, for a duplicate in drop mode, an empty body with
 *      the configured status).
 *
 * The rest: the shared memory zone (layout, init and reuse across reload,
 * eviction), persistence (snapshot load at start, periodic save by one
 * worker, final save by the master), the simhash_stats handler, the
 * variables, and the configuration directives.  docs/module.md is the user
 * documentation.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include <zlib.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "sh_doc.h"
#include "sh_index.h"
#include "sh_snapshot.h"


#define NGX_HTTP_SIMHASH_HOLD_CHUNK (32 * 1024)
#define NGX_HTTP_SIMHASH_FEED_BATCH (64 * 1024)
#define NGX_HTTP_SIMHASH_SAVE_CHUNK 16384   /* refs per hold of the lock */
#define NGX_HTTP_SIMHASH_KEYS_MAGIC "ngxshk2"   /* + NUL: 8 bytes */
#define NGX_HTTP_SIMHASH_ZBUF_SIZE  (16 * 1024)
#define NGX_HTTP_SIMHASH_KEY_MAX    65535

/*
 * Zone sizing: the index region gets the capacity such that the region, the
 * ref-indexed pointer array and one document node of KEY_BUDGET bytes per
 * document fit in the zone minus a reserve for the slab pool's own
 * bookkeeping.  A document node is a slab allocation of 48 bytes + the key,
 * rounded up to a power of two: 128 bytes for keys up to 80 characters, 256
 * up to 208.  Longer keys on average make the slab run out first; then the
 * oldest documents are evicted just the same.
 */
#define NGX_HTTP_SIMHASH_KEY_BUDGET 192
#define NGX_HTTP_SIMHASH_MIN_DOCS   16


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
    NGX_HTTP_SIMHASH_NSKIP
} ngx_http_simhash_skip_e;


#define NGX_HTTP_SIMHASH_TAG        0
#define NGX_HTTP_SIMHASH_DROP       1


/* one document's key, in the slab; docs[ref] points here */
typedef struct {
    ngx_rbtree_node_t            node;      /* node.key: hash of the key */
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
    size_t                       key_bytes; /* sum of stored key lengths */

    /* counters: relaxed atomic increments, read without the lock */
    ngx_atomic_t                 responses[NGX_HTTP_SIMHASH_NSTATUS];
    ngx_atomic_t                 skipped[NGX_HTTP_SIMHASH_NSKIP];
    ngx_atomic_t                 bytes;     /* body bytes fingerprinted */
    ngx_atomic_t                 key_evictions;

    /* persistence */
    ngx_atomic_t                 generation;        /* changes so far */
    ngx_atomic_t                 saved_generation;  /* in the file */
    ngx_atomic_t                 save_lock;         /* pid saving, or 0 */
    ngx_atomic_t                 last_save;         /* seconds */
    ngx_atomic_t                 saves;
    ngx_atomic_t                 save_errors;
    ngx_atomic_t                 restored;          /* docs at start */

    /*
     * pid of the worker changing the index, the tree or the document array
     * (under the mutex), 0 otherwise: found set by the next holder of the
     * mutex, it means that worker died in the middle (the master unlocks
     * the mutex of a dead worker, but cannot finish its change); see
     * ngx_http_simhash_repair().
     */
    ngx_atomic_t                 writer;
} ngx_http_simhash_shctx_t;


/* a zone as configured (per cycle, in the configuration pool) */
typedef struct {
    ngx_str_t                    name;
    ngx_shm_zone_t              *shm_zone;
    ngx_http_simhash_shctx_t    *sh;
    ngx_slab_pool_t             *shpool;
    ngx_uint_t                   distance;
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


/* one compiled extraction configuration, shared by equal option sets */
typedef struct {
    ngx_str_t                    sig;       /* canonical option string */
    sh_config_t                 *cfg;
} ngx_http_simhash_cfg_t;


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
    ngx_str_t                    idf;
    ngx_str_t                    seed;
    ngx_str_t                    opts_where;
    sh_config_t                 *cfg;

    sh_lookup_opts_t             lookup;

    /* simhash_stats [ZONE] */
    ngx_str_t                    stats_zone;
} ngx_http_simhash_loc_conf_t;


typedef enum {
    NGX_HTTP_SIMHASH_READ = 0,  /* holding the body, fingerprinting */
    NGX_HTTP_SIMHASH_PASS,      /* header sent, body passes untouched */
    NGX_HTTP_SIMHASH_DONE       /* everything sent */
} ngx_http_simhash_phase_e;


typedef struct {
    ngx_http_simhash_phase_e     phase;
    sh_doc_t                    *doc;
    sh_config_t                 *cfg;

    /* the held body: our copies, in order */
    ngx_chain_t                 *held;
    ngx_chain_t                **last;
    ngx_buf_t                   *buf;       /* the one being filled */
    size_t                       held_bytes;
    size_t                       fed;       /* decoded bytes fed */

    /* the first held byte not yet fed to the extractor */
    ngx_chain_t                 *feed_cl;
    u_char                      *feed_pos;
    size_t                       unfed;
    u_char                      *charset;

    /* Content-Encoding: gzip / deflate */
    z_stream                     zstream;
    u_char                      *zbuf;
    unsigned                     zlib:1;        /* inflating */
    unsigned                     zinit:1;       /* zstream needs inflateEnd */
    unsigned                     zraw_tried:1;  /* deflate: raw retried */
    unsigned                     zdeflate:1;    /* encoding was deflate */
    unsigned                     zend:1;        /* stream end seen */

    /* the outcome, for headers and variables */
    ngx_http_simhash_status_e    status;
    ngx_http_simhash_skip_e      reason;
    unsigned                     has_hash:1;
    unsigned                     has_distance:1;
    uint64_t                     hash;
    ngx_uint_t                   distance;
    ngx_str_t                    duplicate_of;
} ngx_http_simhash_ctx_t;


static ngx_int_t ngx_http_simhash_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_simhash_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_simhash_encoding(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_feed(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    u_char *data, size_t len);
static ngx_int_t ngx_http_simhash_inflate(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    u_char *data, size_t len);
static ngx_int_t ngx_http_simhash_hold(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, u_char *data, size_t len);
static ngx_int_t ngx_http_simhash_give_up(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_skip_e reason,
    ngx_chain_t *rest, ngx_uint_t last);
static ngx_int_t ngx_http_simhash_feed_held(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_finish(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_decide(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    sh_result_t *res);
static ngx_int_t ngx_http_simhash_send(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_set_headers(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_add_header(ngx_http_request_t *r,
    ngx_str_t *key, u_char *value, size_t len);
static void ngx_http_simhash_skip(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_skip_e reason);
static void ngx_http_simhash_cleanup(void *data);

static ngx_http_simhash_doc_t *ngx_http_simhash_lookup_key(
    ngx_http_simhash_shctx_t *sh, ngx_str_t *key, uint32_t hash);
static uint32_t ngx_http_simhash_store(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint64_t fingerprint);
static void ngx_http_simhash_forget(ngx_http_simhash_zone_t *zone,
    uint32_t ref);
static void ngx_http_simhash_forget_doc(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_doc_t *doc);
static ngx_int_t ngx_http_simhash_evict_oldest(ngx_http_simhash_zone_t *zone);
static void ngx_http_simhash_repair(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static void ngx_http_simhash_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static uint32_t ngx_http_simhash_capacity(size_t zone_size);
static ngx_int_t ngx_http_simhash_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_simhash_reset(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static void ngx_http_simhash_migrate(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static void ngx_http_simhash_load(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_save(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_save_copy(ngx_http_simhash_save_t *sv,
    ngx_log_t *log);
static void ngx_http_simhash_save_write(void *data, ngx_log_t *log);
static ngx_int_t ngx_http_simhash_save_finish(ngx_http_simhash_save_t *sv,
    ngx_log_t *log);
static void ngx_http_simhash_save_handler(ngx_event_t *ev);
static ngx_msec_t ngx_http_simhash_msec(void);
static ngx_int_t ngx_http_simhash_init_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_exit_master(ngx_cycle_t *cycle);

static ngx_int_t ngx_http_simhash_stats_handler(ngx_http_request_t *r);

static ngx_int_t ngx_http_simhash_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_simhash_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);

static void *ngx_http_simhash_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_simhash_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_simhash_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_simhash_compile(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_postconfiguration(ngx_conf_t *cf);
static char *ngx_http_simhash_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_simhash_action(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_opt_num(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_weight(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_stem(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_file_opt(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_ignore(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_seed(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_probes(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_volatility(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_stats(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void ngx_http_simhash_where(ngx_conf_t *cf, ngx_str_t *where);
static void ngx_http_simhash_check_dir(ngx_conf_t *cf, ngx_str_t *file);


static ngx_conf_num_bounds_t  ngx_http_simhash_shingle_bounds = {
    ngx_conf_check_num_bounds, 1, SH_SHINGLE_MAX
};

static ngx_conf_num_bounds_t  ngx_http_simhash_min_features_bounds = {
    ngx_conf_check_num_bounds, 0, SH_MIN_FEATURES_LIMIT
};

static ngx_conf_num_bounds_t  ngx_http_simhash_max_features_bounds = {
    ngx_conf_check_num_bounds, SH_MAX_FEATURES_FLOOR, SH_MAX_FEATURES_LIMIT
};


static ngx_command_t  ngx_http_simhash_commands[] = {

    { ngx_string("simhash_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_simhash_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_action"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE12,
      ngx_http_simhash_action,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_types"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_types_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, types_keys),
      &ngx_http_html_default_types[0] },

    { ngx_string("simhash_max_body"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, max_body),
      NULL },

    { ngx_string("simhash_key"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_set_complex_value_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, key),
      NULL },

    { ngx_string("simhash_probes"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_probes,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_volatility"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_volatility,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_insert"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, insert),
      NULL },

    { ngx_string("simhash_shingle"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_opt_num,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, shingle),
      &ngx_http_simhash_shingle_bounds },

    { ngx_string("simhash_min_features"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_opt_num,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, min_features),
      &ngx_http_simhash_min_features_bounds },

    { ngx_string("simhash_max_features"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_opt_num,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, max_features),
      &ngx_http_simhash_max_features_bounds },

    { ngx_string("simhash_word_weight"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_weight,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, word_weight),
      NULL },

    { ngx_string("simhash_shingle_weight"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_weight,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, shingle_weight),
      NULL },

    { ngx_string("simhash_stem"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_stem,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_stopwords"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_file_opt,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, stopwords),
      NULL },

    { ngx_string("simhash_idf"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_file_opt,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, idf),
      NULL },

    { ngx_string("simhash_ignore"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_ignore,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_seed"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_seed,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_stats"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS|NGX_CONF_TAKE1,
      ngx_http_simhash_stats,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_simhash_module_ctx = {
    ngx_http_simhash_add_variables,        /* preconfiguration */
    ngx_http_simhash_postconfiguration,    /* postconfiguration */

    ngx_http_simhash_create_main_conf,     /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_simhash_create_loc_conf,      /* create location configuration */
    ngx_http_simhash_merge_loc_conf        /* merge location configuration */
};


ngx_module_t  ngx_http_simhash_module = {
    NGX_MODULE_V1,
    &ngx_http_simhash_module_ctx,          /* module context */
    ngx_http_simhash_commands,             /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_simhash_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    ngx_http_simhash_exit_master,          /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_str_t  ngx_http_simhash_status_names[] = {
    ngx_string("new"),
    ngx_string("duplicate"),
    ngx_string("unchanged"),
    ngx_string("changed"),
    ngx_string("skipped")
};


static ngx_str_t  ngx_http_simhash_skip_names[] = {
    ngx_string("too_large"),
    ngx_string("encoding"),
    ngx_string("too_short"),
    ngx_string("binary"),
    ngx_string("error")
};


static ngx_str_t  ngx_http_simhash_h_hash = ngx_string("X-Simhash");
static ngx_str_t  ngx_http_simhash_h_status = ngx_string("X-Simhash-Status");
static ngx_str_t  ngx_http_simhash_h_dup = ngx_string("X-Simhash-Duplicate-Of");
static ngx_str_t  ngx_http_simhash_h_distance =
    ngx_string("X-Simhash-Distance");


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/* 1. The header: is this response ours? */

static ngx_int_t
ngx_http_simhash_header_filter(ngx_http_request_t *r)
{
    u_char                       *charset;
    ngx_int_t                     rc;
    ngx_pool_cleanup_t           *cln;
    ngx_http_simhash_ctx_t       *ctx;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    if (slcf->zone == NULL
        || r != r->main
        || r->headers_out.status != NGX_HTTP_OK
        || (r->method & NGX_HTTP_HEAD)
        || r->header_only
        || ngx_http_get_module_ctx(r, ngx_http_simhash_module) != NULL
        || ngx_http_test_content_type(r, &slcf->types) == NULL)
    {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_simhash_ctx_t));
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_simhash_module);

    ctx->cfg = slcf->cfg;
    ctx->last = &ctx->held;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_simhash_cleanup;
    cln->data = ctx;

    /* what we know from the header alone: pass such responses at once */

    rc = ngx_http_simhash_encoding(r, ctx);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc == NGX_DECLINED) {
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ENCODING);
        goto pass;
    }

    if (r->headers_out.content_length_n > (off_t) slcf->max_body) {
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_TOO_LARGE);
        goto pass;
    }

    /* the extractor, with the charset of the upstream's Content-Type */

    charset = NULL;

    if (r->headers_out.charset.len && r->headers_out.charset.len < 64) {
        charset = ngx_pnalloc(r->pool, r->headers_out.charset.len + 1);
        if (charset == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(charset, r->headers_out.charset.data,
                   r->headers_out.charset.len);
        charset[r->headers_out.charset.len] = '\0';
    }

    ctx->charset = charset;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: holding response, length:%O charset:\"%V\"",
                   r->headers_out.content_length_n, &r->headers_out.charset);

    /* the header waits for the body; see ngx_http_simhash_send() */

    r->main_filter_need_in_memory = 1;
    r->allow_ranges = 0;

    /*
     * Unlike the image filter we do not set a bit in
     * r->connection->buffered while holding the body.  Every normal end of
     * a response reaches us as a last_buf (the upstream sends it before it
     * finalizes with 0).  The only finalization without one is an upstream
     * error after the header: nginx then sends a flush and finalizes with
     * NGX_OK, and a buffered bit would keep the client waiting for
     * send_timeout instead of closing the connection at once.
     */

    return NGX_OK;

pass:

    ctx->phase = NGX_HTTP_SIMHASH_PASS;

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_next_header_filter(r);
}


/*
 * Content-Encoding: none or identity -> NGX_OK; gzip, x-gzip, deflate ->
 * NGX_OK with ctx->zlib set (we inflate a copy for the extractor; the
 * client still receives the original bytes); anything else -> NGX_DECLINED.
 */

static ngx_int_t
ngx_http_simhash_encoding(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    int         window;
    ngx_str_t  *enc;

    if (r->headers_out.content_encoding == NULL
        || r->headers_out.content_encoding->hash == 0)
    {
        return NGX_OK;
    }

    enc = &r->headers_out.content_encoding->value;

    if (enc->len == 0
        || (enc->len == 8 && ngx_strncasecmp(enc->data, (u_char *) "identity",
                                             8) == 0))
    {
        return NGX_OK;
    }

    if ((enc->len == 4 && ngx_strncasecmp(enc->data, (u_char *) "gzip", 4)
                          == 0)
        || (enc->len == 6 && ngx_strncasecmp(enc->data, (u_char *) "x-gzip",
                                             6) == 0))
    {
        window = MAX_WBITS + 16;

    } else if (enc->len == 7
               && ngx_strncasecmp(enc->data, (u_char *) "deflate", 7) == 0)
    {
        window = MAX_WBITS;
        ctx->zdeflate = 1;

    } else {
        return NGX_DECLINED;
    }

    ctx->zbuf = ngx_palloc(r->pool, NGX_HTTP_SIMHASH_ZBUF_SIZE);
    if (ctx->zbuf == NULL) {
        return NGX_ERROR;
    }

    if (inflateInit2(&ctx->zstream, window) != Z_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: inflateInit2() failed");
        return NGX_ERROR;
    }

    ctx->zinit = 1;
    ctx->zlib = 1;

    /* inflateEnd() runs in ngx_http_simhash_cleanup() */

    return NGX_OK;
}


/* 2. The body: feed the extractor, hold the bytes. */

static ngx_int_t
ngx_http_simhash_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    size_t                        size;
    ngx_int_t                     rc;
    ngx_buf_t                    *b;
    ngx_chain_t                  *cl;
    ngx_http_simhash_ctx_t       *ctx;
    ngx_http_simhash_loc_conf_t  *slcf;

    if (in == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_simhash_module);

    if (ctx == NULL || ctx->phase != NGX_HTTP_SIMHASH_READ) {
        return ngx_http_next_body_filter(r, in);
    }

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (!ngx_buf_special(b) && !ngx_buf_in_memory(b)) {
            /* main_filter_need_in_memory should prevent this */
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "simhash: body buffer not in memory");
            return ngx_http_simhash_give_up(r, ctx,
                                            NGX_HTTP_SIMHASH_SKIP_ERROR, cl, 0);
        }

        size = ngx_buf_in_memory(b) ? (size_t) (b->last - b->pos) : 0;

        if (size) {
            if (ctx->held_bytes + size > slcf->max_body) {
                return ngx_http_simhash_give_up(r, ctx,
                                      NGX_HTTP_SIMHASH_SKIP_TOO_LARGE, cl, 0);
            }

            if (ngx_http_simhash_hold(r, ctx, b->pos, size) != NGX_OK) {
                return NGX_ERROR;
            }

            /* consumed: the upstream may reuse the buffer */

            b->pos = b->last;

            if (b->in_file) {
                b->file_pos = b->file_last;
            }

            ctx->unfed += size;
        }

        if (ctx->unfed >= NGX_HTTP_SIMHASH_FEED_BATCH
            || (b->last_buf && ctx->unfed))
        {
            rc = ngx_http_simhash_feed_held(r, ctx, slcf);

            if (rc == NGX_DECLINED) {
                /* skipped, with ctx->reason */
                return ngx_http_simhash_give_up(r, ctx, ctx->reason,
                                                cl->next, b->last_buf);
            }

            if (rc != NGX_OK) {
                return NGX_ERROR;
            }
        }

        if (b->last_buf) {
            return ngx_http_simhash_finish(r, ctx);
        }
    }

    return NGX_OK;
}


/*
 * Feed the held bytes not fed yet.  The body is parsed once, from our copy,
 * in batches of NGX_HTTP_SIMHASH_FEED_BATCH as it arrives and at its end: a
 * worker with many responses arriving at once then parses most pages in one
 * go instead of interleaving them piece by piece, which keeps the parser's
 * and the feature table's memory warm (about 20% less CPU per page with 16
 * responses in flight per worker).  The extractor is created at the first
 * batch, for the same reason.
 */

static ngx_int_t
ngx_http_simhash_feed_held(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    u_char       *p;
    size_t        n;
    ngx_int_t     rc;
    ngx_chain_t  *cl;

    if (ctx->doc == NULL) {
        ctx->doc = sh_doc_new(ctx->cfg, (char *) ctx->charset);
        if (ctx->doc == NULL) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "simhash: sh_doc_new() failed");
            ctx->reason = NGX_HTTP_SIMHASH_SKIP_ERROR;
            return NGX_DECLINED;
        }
    }

    cl = ctx->feed_cl ? ctx->feed_cl : ctx->held;
    p = ctx->feed_pos ? ctx->feed_pos : cl->buf->pos;

    for ( ;; ) {
        n = cl->buf->last - p;

        if (n) {
            rc = ngx_http_simhash_feed(r, ctx, slcf, p, n);
            if (rc != NGX_OK) {
                return rc;
            }

            p += n;
            ctx->unfed -= n;
        }

        if (cl->next == NULL) {
            break;
        }

        cl = cl->next;
        p = cl->buf->pos;
    }

    ctx->feed_cl = cl;
    ctx->feed_pos = p;

    return NGX_OK;
}


/* Bytes of the body (as sent) to the extractor, decoded if need be. */

static ngx_int_t
ngx_http_simhash_feed(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, u_char *data, size_t len)
{
    if (ctx->zlib) {
        return ngx_http_simhash_inflate(r, ctx, slcf, data, len);
    }

    if (sh_doc_feed(ctx->doc, data, len) != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: sh_doc_feed() failed");
        ctx->reason = NGX_HTTP_SIMHASH_SKIP_ERROR;
        return NGX_DECLINED;
    }

    ctx->fed += len;

    return NGX_OK;
}


/*
 * gzip (several members allowed) or deflate (zlib-wrapped as the standard
 * says, raw as some servers send it).  The decoded size counts against
 * simhash_max_body too, so a page is skipped or not whatever its encoding,
 * and a small "zip bomb" cannot make us fingerprint gigabytes.
 */

static ngx_int_t
ngx_http_simhash_inflate(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, u_char *data, size_t len)
{
    int        rc;
    size_t     n;
    z_stream  *zs;

    zs = &ctx->zstream;

    if (ctx->zend && len) {
        /* bytes after the end of the stream: gzip allows another member */
        if (inflateReset(zs) != Z_OK) {
            goto failed;
        }
        ctx->zend = 0;
    }

    zs->next_in = data;
    zs->avail_in = len;

    while (zs->avail_in) {
        zs->next_out = ctx->zbuf;
        zs->avail_out = NGX_HTTP_SIMHASH_ZBUF_SIZE;

        rc = inflate(zs, Z_NO_FLUSH);

        if (rc == Z_DATA_ERROR && ctx->zdeflate && !ctx->zraw_tried
            && zs->total_out == 0 && ctx->fed == 0)
        {
            /* "deflate" without the zlib wrapper: start over, raw */
            ctx->zraw_tried = 1;

            if (inflateReset2(zs, -MAX_WBITS) != Z_OK) {
                goto failed;
            }

            zs->next_in = data;
            zs->avail_in = len;
            continue;
        }

        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
            goto failed;
        }

        n = NGX_HTTP_SIMHASH_ZBUF_SIZE - zs->avail_out;

        if (n) {
            if (ctx->fed + n > slcf->max_body) {
                ctx->reason = NGX_HTTP_SIMHASH_SKIP_TOO_LARGE;
                return NGX_DECLINED;
            }

            if (sh_doc_feed(ctx->doc, ctx->zbuf, n) != 0) {
                ctx->reason = NGX_HTTP_SIMHASH_SKIP_ERROR;
                return NGX_DECLINED;
            }

            ctx->fed += n;
        }

        if (rc == Z_STREAM_END) {
            ctx->zend = 1;

            if (zs->avail_in == 0) {
                break;
            }

            if (inflateReset(zs) != Z_OK) {
                goto failed;
            }

            ctx->zend = 0;
            continue;
        }

        if (rc == Z_BUF_ERROR && n == 0) {
            break;
        }
    }

    return NGX_OK;

failed:

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "simhash: cannot inflate the body: %s",
                  zs->msg ? zs->msg : "inflate() failed");

    ctx->reason = NGX_HTTP_SIMHASH_SKIP_ENCODING;
    return NGX_DECLINED;
}


/* Copy into our buffers; the first one sized by Content-Length if known. */

static ngx_int_t
ngx_http_simhash_hold(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    u_char *data, size_t len)
{
    size_t        n, size;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    while (len) {
        b = ctx->buf;

        if (b == NULL || b->last == b->end) {
            size = NGX_HTTP_SIMHASH_HOLD_CHUNK;

            if (ctx->held == NULL
                && r->headers_out.content_length_n > 0
                && (size_t) r->headers_out.content_length_n >= len)
            {
                size = (size_t) r->headers_out.content_length_n;

            } else if (len > size) {
                size = len;
            }

            b = ngx_create_temp_buf(r->pool, size);
            if (b == NULL) {
                return NGX_ERROR;
            }

            cl = ngx_alloc_chain_link(r->pool);
            if (cl == NULL) {
                return NGX_ERROR;
            }

            cl->buf = b;
            cl->next = NULL;
            *ctx->last = cl;
            ctx->last = &cl->next;
            ctx->buf = b;
        }

        n = ngx_min(len, (size_t) (b->end - b->last));
        b->last = ngx_cpymem(b->last, data, n);
        data += n;
        len -= n;
        ctx->held_bytes += n;
    }

    return NGX_OK;
}


/*
 * Cannot fingerprint this one (too large, bad encoding, ...): tag it
 * "skipped" and send the header, what we hold and `rest` unmodified;
 * `last`: the last buffer is already held.
 */

static ngx_int_t
ngx_http_simhash_give_up(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_skip_e reason, ngx_chain_t *rest, ngx_uint_t last)
{
    ngx_int_t     rc;
    ngx_chain_t  *out;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: skipped (%V) after %uz bytes",
                   &ngx_http_simhash_skip_names[reason], ctx->held_bytes);

    ngx_http_simhash_skip(r, ctx, reason);
    ctx->phase = NGX_HTTP_SIMHASH_PASS;

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_next_header_filter(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out = ctx->held;
    ctx->held = NULL;

    if (last) {
        if (out) {
            ctx->buf->last_buf = 1;

        } else {
            return ngx_http_send_special(r, NGX_HTTP_LAST);
        }
    }

    if (ngx_chain_add_copy(r->pool, &out, rest) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_next_body_filter(r, out);
}


/* 3. The last buffer: fingerprint, consult the zone, send. */

static ngx_int_t
ngx_http_simhash_finish(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    sh_result_t                   res;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    if (ctx->zlib && !ctx->zend) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: compressed body ends before its stream does");
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ENCODING);
        return ngx_http_simhash_send(r, ctx);
    }

    ngx_memzero(&res, sizeof(sh_result_t));

    if (ctx->doc == NULL) {
        /* an empty body */
        ctx->doc = sh_doc_new(ctx->cfg, (char *) ctx->charset);
        if (ctx->doc == NULL) {
            ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ERROR);
            return ngx_http_simhash_send(r, ctx);
        }
    }

    if (sh_doc_finish(ctx->doc, &res) != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: sh_doc_finish() failed");
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ERROR);
        return ngx_http_simhash_send(r, ctx);
    }

    sh_doc_free(ctx->doc);
    ctx->doc = NULL;

    (void) ngx_atomic_fetch_add(&slcf->zone->sh->bytes, ctx->fed);

    switch (res.status) {

    case SH_STATUS_OK:
        if (ngx_http_simhash_decide(r, ctx, slcf, &res) != NGX_OK) {
            return NGX_ERROR;
        }
        break;

    case SH_STATUS_TOO_SHORT:
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_TOO_SHORT);
        break;

    default: /* SH_STATUS_BINARY */
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_BINARY);
        break;
    }

    return ngx_http_simhash_send(r, ctx);
}


/*
 * The index, under the zone's mutex (see "Locking" below):
 *   the key is stored   -> unchanged (within distance) or changed (its
 *                          fingerprint is replaced); never a duplicate of
 *                          itself;
 *   else a match within -> duplicate of the closest match;
 *   else                -> new, and inserted (simhash_insert on).
 * Duplicates are not inserted: the index keeps one representative per
 * cluster, the first one seen.
 */

static ngx_int_t
ngx_http_simhash_decide(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res)
{
    size_t                     n;
    uint32_t                   kh;
    uint64_t                   old;
    ngx_str_t                  key;
    sh_match_t                 match;
    sh_lookup_stats_t          st;
    ngx_http_simhash_doc_t    *doc;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    zone = slcf->zone;
    sh = zone->sh;

    ctx->hash = res->hash;
    ctx->has_hash = 1;

    if (ngx_http_complex_value(r, slcf->key, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (key.len == 0 || key.len > NGX_HTTP_SIMHASH_KEY_MAX) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: key of %uz bytes not stored", key.len);
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ERROR);
        return NGX_OK;
    }

    kh = ngx_crc32_long(key.data, key.len);

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (sh->writer) {
        ngx_http_simhash_repair(zone, r->connection->log);
    }

    doc = ngx_http_simhash_lookup_key(sh, &key, kh);

    if (doc && sh_index_get(sh->index, doc->ref, &old) != 0) {
        /* cannot happen: a node lives exactly as long as its entry */
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "simhash: \"%V\" has no entry in zone \"%V\"",
                      &key, &zone->name);
        sh->writer = ngx_pid;
        ngx_http_simhash_forget_doc(zone, doc);
        doc = NULL;
    }

    if (doc) {

        /* a re-fetch of a document we know */

        ctx->distance = sh_distance(old, res->hash);
        ctx->has_distance = 1;

        if (ctx->distance <= zone->distance) {
            ctx->status = NGX_HTTP_SIMHASH_UNCHANGED;

            if (slcf->insert) {
                sh->writer = ngx_pid;
                (void) sh_index_touch(sh->index, doc->ref);
                (void) ngx_atomic_fetch_add(&sh->generation, 1);
            }

        } else {
            ctx->status = NGX_HTTP_SIMHASH_CHANGED;

            if (slcf->insert) {
                sh->writer = ngx_pid;
                (void) sh_index_update(sh->index, doc->ref, res->hash);
                (void) ngx_atomic_fetch_add(&sh->generation, 1);
            }
        }

        goto done;
    }

    n = sh_index_lookup(sh->index, res->hash, res->weights, &slcf->lookup,
                        &match, 1, &st);

    if (n && match.ref < sh->capacity && sh->docs[match.ref]) {
        doc = sh->docs[match.ref];

        ctx->status = NGX_HTTP_SIMHASH_DUPLICATE;
        ctx->distance = match.distance;
        ctx->has_distance = 1;

        /* copied while locked: the document may be evicted right after */

        ctx->duplicate_of.data = ngx_pnalloc(r->pool, doc->len);
        if (ctx->duplicate_of.data == NULL) {
            sh->writer = 0;
            ngx_shmtx_unlock(&zone->shpool->mutex);
            return NGX_ERROR;
        }

        ngx_memcpy(ctx->duplicate_of.data, doc->data, doc->len);
        ctx->duplicate_of.len = doc->len;

        goto done;
    }

    ctx->status = NGX_HTTP_SIMHASH_NEW;

    if (slcf->insert) {
        sh->writer = ngx_pid;

        if (ngx_http_simhash_store(zone, &key, res->hash) == SH_NOREF) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "simhash: no room for \"%V\" in zone \"%V\"",
                          &key, &zone->name);
        }
    }

done:

    sh->writer = 0;
    ngx_shmtx_unlock(&zone->shpool->mutex);

    (void) ngx_atomic_fetch_add(&sh->responses[ctx->status], 1);

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: %016uxL %V distance:%ui \"%V\"",
                   res->hash, &ngx_http_simhash_status_names[ctx->status],
                   ctx->distance, &ctx->duplicate_of);

    return NGX_OK;
}


/* Header (with the tags, or the drop status) and the held body. */

static ngx_int_t
ngx_http_simhash_send(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    ngx_int_t                     rc;
    ngx_buf_t                    *b;
    ngx_chain_t                  *out, *cl;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    ctx->phase = NGX_HTTP_SIMHASH_DONE;

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->status == NGX_HTTP_SIMHASH_DUPLICATE
        && slcf->action == NGX_HTTP_SIMHASH_DROP)
    {
        /* the response becomes CODE with an empty body; headers stay */

        r->headers_out.status = slcf->drop_code;
        r->headers_out.status_line.len = 0;

        ngx_http_clear_content_length(r);
        ngx_http_clear_accept_ranges(r);
        ngx_http_clear_etag(r);

        if (r->headers_out.content_encoding) {
            r->headers_out.content_encoding->hash = 0;
            r->headers_out.content_encoding = NULL;
        }

        r->headers_out.content_length_n = 0;
        r->allow_ranges = 0;
        ctx->held = NULL;

        rc = ngx_http_next_header_filter(r);

        if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
            return rc;
        }

        b = ngx_calloc_buf(r->pool);
        if (b == NULL) {
            return NGX_ERROR;
        }

        b->last_buf = 1;

        cl = ngx_alloc_chain_link(r->pool);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = b;
        cl->next = NULL;

        return ngx_http_next_body_filter(r, cl);
    }

    /* tag: the body as received; its length is known now */

    if (r->headers_out.content_length_n < 0) {
        r->headers_out.content_length_n = ctx->held_bytes;
    }

    rc = ngx_http_next_header_filter(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out = ctx->held;
    ctx->held = NULL;

    if (out == NULL) {
        b = ngx_calloc_buf(r->pool);
        if (b == NULL) {
            return NGX_ERROR;
        }

        cl = ngx_alloc_chain_link(r->pool);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = b;
        cl->next = NULL;
        out = cl;

    } else {
        b = ctx->buf;
    }

    b->last_buf = 1;

    return ngx_http_next_body_filter(r, out);
}


static ngx_int_t
ngx_http_simhash_set_headers(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx)
{
    u_char  buf[NGX_INT64_LEN + 1], *p;

    if (ctx->has_hash && ctx->status != NGX_HTTP_SIMHASH_SKIPPED) {
        p = ngx_sprintf(buf, "%016uxL", ctx->hash);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_hash, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_status,
                              ngx_http_simhash_status_names[ctx->status].data,
                              ngx_http_simhash_status_names[ctx->status].len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ctx->duplicate_of.len) {
        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_dup,
                                        ctx->duplicate_of.data,
                                        ctx->duplicate_of.len)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ctx->has_distance) {
        p = ngx_sprintf(buf, "%ui", ctx->distance);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_distance, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_add_header(ngx_http_request_t *r, ngx_str_t *key,
    u_char *value, size_t len)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->value.data = ngx_pnalloc(r->pool, len);
    if (h->value.data == NULL) {
        h->hash = 0;
        return NGX_ERROR;
    }

    ngx_memcpy(h->value.data, value, len);
    h->value.len = len;
    h->key = *key;
    h->lowcase_key = NULL;
    h->hash = 1;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}


static void
ngx_http_simhash_skip(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_skip_e reason)
{
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    ctx->status = NGX_HTTP_SIMHASH_SKIPPED;
    ctx->reason = reason;
    ctx->has_distance = 0;

    (void) ngx_atomic_fetch_add(&slcf->zone->sh->responses[ctx->status], 1);
    (void) ngx_atomic_fetch_add(&slcf->zone->sh->skipped[reason], 1);
}


/* Client abort, upstream error or normal end: free what the library holds. */

static void
ngx_http_simhash_cleanup(void *data)
{
    ngx_http_simhash_ctx_t  *ctx = data;

    if (ctx->doc) {
        sh_doc_free(ctx->doc);
        ctx->doc = NULL;
    }

    if (ctx->zinit) {
        (void) inflateEnd(&ctx->zstream);
        ctx->zinit = 0;
    }
}


/*
 * The shared memory zone.
 *
 * Layout (one slab pool, as limit_req):
 *   shpool->data -> ngx_http_simhash_shctx_t
 *   sh->index    -> the sh_index region: ONE slab allocation of
 *                   sh_index_region_size(capacity) bytes (fingerprints, refs,
 *                   age order; offsets only)
 *   sh->docs     -> capacity pointers, docs[ref] = the document's node
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

static uint32_t
ngx_http_simhash_store(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    uint64_t fingerprint)
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
    sh->key_bytes += key->len;

    (void) ngx_atomic_fetch_add(&sh->generation, 1);

    return ref;
}


/* Drop our data of document `ref` (already gone from the index). */

static void
ngx_http_simhash_forget(ngx_http_simhash_zone_t *zone, uint32_t ref)
{
    if (zone->sh->docs[ref]) {
        ngx_http_simhash_forget_doc(zone, zone->sh->docs[ref]);
    }
}


static void
ngx_http_simhash_forget_doc(ngx_http_simhash_zone_t *zone,
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

    if (rp.doc == NULL || rp.hash == NULL) {
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

    if (sh_index_init(sh->index, sh->region_size, 0, sh->seed_digest,
                      err, sizeof(err))
        == NULL)
    {
        /* cannot happen: the region was formatted with these before */
        ngx_log_error(NGX_LOG_ALERT, log, 0, "simhash zone \"%V\": %s",
                      &zone->name, err);
        sh->writer = 0;
        goto done;
    }

    (void) ngx_atomic_fetch_add(&sh->key_evictions, st.evictions);

    ngx_rbtree_init(&sh->rbtree, &sh->sentinel,
                    ngx_http_simhash_rbtree_insert_value);
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
}


/*
 * Capacity for a zone of `size` bytes: the largest n whose index region,
 * pointer array and node budget fit in what the slab pool leaves us.
 */

static uint32_t
ngx_http_simhash_capacity(size_t zone_size)
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
               + (size_t) mid * (sizeof(void *) + NGX_HTTP_SIMHASH_KEY_BUDGET);

        if (need <= avail) {
            lo = mid;

        } else {
            hi = mid - 1;
        }
    }

    return lo;
}


static ngx_int_t
ngx_http_simhash_init_zone(ngx_shm_zone_t *shm_zone, void *data)
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
                           ngx_http_simhash_capacity(shm_zone->shm.size));

    sh->index = ngx_slab_alloc(shpool, sh->region_size);
    if (sh->index == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\" is too small", &zone->name);
        return NGX_ERROR;
    }

    sh->seed_digest = zone->seed_digest;

    if (sh_index_init(sh->index, sh->region_size, 0, sh->seed_digest,
                      err, sizeof(err))
        == NULL)
    {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\": %s", &zone->name, err);
        return NGX_ERROR;
    }

    /* the index decides its capacity from the region: refs are below it */

    sh_index_stats(sh->index, &st);
    sh->capacity = st.capacity;

    sh->docs = ngx_slab_calloc(shpool,
                               sh->capacity * sizeof(ngx_http_simhash_doc_t *));
    if (sh->docs == NULL) {
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

    if (sh->generation == 0 && zone->file.len) {
        ngx_http_simhash_load(zone, shm_zone->shm.log);

        /* what is in memory is what is in the file */
        sh->saved_generation = sh->generation;
    }

    ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                  "simhash zone \"%V\": %uz bytes, capacity %uD documents, "
                  "distance %ui",
                  &zone->name, shm_zone->shm.size, sh->capacity,
                  zone->distance);

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

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (sh->writer) {
        /* the tree must be whole for the forgets below */
        ngx_http_simhash_repair(zone, log);
    }

    for (ref = 0; ref < sh->capacity; ref++) {
        if (sh->docs[ref]) {
            ngx_http_simhash_forget(zone, ref);
        }
    }

    sh->seed_digest = zone->seed_digest;

    if (sh_index_init(sh->index, sh->region_size, 0, sh->seed_digest,
                      err, sizeof(err))
        == NULL)
    {
        ngx_shmtx_unlock(&zone->shpool->mutex);
        ngx_log_error(NGX_LOG_EMERG, log, 0, "simhash zone \"%V\": %s",
                      &zone->name, err);
        return NGX_ERROR;
    }

    (void) ngx_atomic_fetch_add(&sh->generation, 1);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return NGX_OK;
}


/*
 * Copy documents, oldest first, from an index `from` (with its keys given by
 * `key_of`) into the zone.  Used for a snapshot and for a resized zone.
 */

typedef struct {
    ngx_http_simhash_zone_t     *zone;
    ngx_str_t                   *keys;      /* by ref of the source */
    uint64_t                    *hashes;    /* by ref; NULL: no check */
    uint32_t                     nkeys;
    ngx_uint_t                   copied;
    ngx_uint_t                   missing;
} ngx_http_simhash_copy_t;


static int
ngx_http_simhash_copy_visit(void *arg, uint32_t ref, uint64_t hash)
{
    ngx_http_simhash_copy_t  *cp = arg;

    ngx_str_t                  *key;
    ngx_http_simhash_shctx_t   *sh;

    if (ref >= cp->nkeys || cp->keys[ref].len == 0
        || (cp->hashes && cp->hashes[ref] != hash))
    {
        cp->missing++;
        return 0;
    }

    key = &cp->keys[ref];
    sh = cp->zone->sh;

    if (ngx_http_simhash_lookup_key(sh, key, ngx_crc32_long(key->data,
                                                            key->len)))
    {
        cp->missing++;
        return 0;
    }

    if (ngx_http_simhash_store(cp->zone, key, hash) != SH_NOREF) {
        cp->copied++;
    }

    return 0;
}


static void
ngx_http_simhash_migrate(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    uint32_t                   ref;
    ngx_uint_t                 i;
    ngx_shm_zone_t            *oshm;
    ngx_list_part_t           *part;
    ngx_http_simhash_copy_t    cp;
    ngx_http_simhash_zone_t   *ozone;
    ngx_http_simhash_shctx_t  *osh;

    if (ngx_is_init_cycle(ngx_cycle)) {
        return;
    }

    ozone = NULL;
    part = &((ngx_cycle_t *) ngx_cycle)->shared_memory.part;
    oshm = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }
            part = part->next;
            oshm = part->elts;
            i = 0;
        }

        if (oshm[i].tag == &ngx_http_simhash_module
            && oshm[i].shm.name.len == zone->name.len
            && ngx_strncmp(oshm[i].shm.name.data, zone->name.data,
                           zone->name.len) == 0
            && oshm[i].shm.addr != zone->shm_zone->shm.addr
            && oshm[i].data)
        {
            ozone = oshm[i].data;
            break;
        }
    }

    if (ozone == NULL || ozone->sh == NULL
        || ozone->sh->seed_digest != zone->seed_digest)
    {
        return;
    }

    osh = ozone->sh;

    cp.zone = zone;
    cp.hashes = NULL;
    cp.nkeys = osh->capacity;
    cp.copied = 0;
    cp.missing = 0;

    cp.keys = ngx_alloc(osh->capacity * sizeof(ngx_str_t), log);
    if (cp.keys == NULL) {
        return;
    }

    /* the old workers still run: hold the old zone's mutex while copying */

    ngx_shmtx_lock(&ozone->shpool->mutex);
    ngx_shmtx_lock(&zone->shpool->mutex);

    if (osh->writer) {
        ngx_http_simhash_repair(ozone, log);
    }

    for (ref = 0; ref < osh->capacity; ref++) {
        if (osh->docs[ref]) {
            cp.keys[ref].data = osh->docs[ref]->data;
            cp.keys[ref].len = osh->docs[ref]->len;

        } else {
            cp.keys[ref].len = 0;
        }
    }

    sh_index_foreach(osh->index, ngx_http_simhash_copy_visit, &cp);

    ngx_shmtx_unlock(&zone->shpool->mutex);
    ngx_shmtx_unlock(&ozone->shpool->mutex);

    ngx_free(cp.keys);

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\" resized: %ui documents taken over",
                  &zone->name, cp.copied);
}


/*
 * Persistence.  The snapshot file (sh_snapshot.h) holds the index region and,
 * as its user section, the keys: the 8 bytes NGX_HTTP_SIMHASH_KEYS_MAGIC,
 * then records of
 *     uint32 ref, uint32 length, uint64 fingerprint, length bytes of key
 * in host byte order (the snapshot header refuses a foreign byte order).
 * Loading re-inserts every document, oldest first, into the zone: a snapshot
 * fits a zone of any size (a smaller zone keeps the newest documents).  A
 * key whose fingerprint is not the one the index has for its ref is left
 * out (see ngx_http_simhash_save_copy()).
 */

static void
ngx_http_simhash_load(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    char                     err[512];
    void                    *region;
    size_t                   region_size, user_len;
    uint32_t                 ref, len;
    uint64_t                 hash;
    u_char                  *p, *end;
    sh_index_t              *ix;
    ngx_msec_t               start;
    ngx_file_info_t          fi;
    sh_index_stats_t         st;
    const void              *user;
    ngx_http_simhash_copy_t  cp;

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
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": snapshot \"%V\" refused: %s; "
                      "starting empty", &zone->name, &zone->file, err);
        return;
    }

    ix = sh_index_attach(region, region_size, err, sizeof(err));
    if (ix == NULL) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": snapshot \"%V\" refused: %s; "
                      "starting empty", &zone->name, &zone->file, err);
        free(region);
        return;
    }

    sh_index_stats(ix, &st);

    cp.zone = zone;
    cp.nkeys = st.capacity;
    cp.copied = 0;
    cp.missing = 0;

    cp.keys = ngx_calloc(st.capacity * sizeof(ngx_str_t) + 1, log);
    cp.hashes = ngx_calloc(st.capacity * sizeof(uint64_t) + 1, log);

    if (cp.keys == NULL || cp.hashes == NULL) {
        goto failed;
    }

    p = (u_char *) user;
    end = p + user_len;

    if (user_len < 8
        || ngx_memcmp(p, NGX_HTTP_SIMHASH_KEYS_MAGIC, 8) != 0)
    {
        goto corrupt;
    }

    p += 8;

    while (p < end) {
        if ((size_t) (end - p) < 16) {
            goto corrupt;
        }

        ngx_memcpy(&ref, p, 4);
        ngx_memcpy(&len, p + 4, 4);
        ngx_memcpy(&hash, p + 8, 8);
        p += 16;

        if (len == 0 || len > NGX_HTTP_SIMHASH_KEY_MAX
            || (size_t) (end - p) < len || ref >= st.capacity)
        {
            goto corrupt;
        }

        cp.keys[ref].data = p;
        cp.keys[ref].len = len;
        cp.hashes[ref] = hash;
        p += len;
    }

    ngx_shmtx_lock(&zone->shpool->mutex);
    sh_index_foreach(ix, ngx_http_simhash_copy_visit, &cp);
    ngx_shmtx_unlock(&zone->shpool->mutex);

    zone->sh->restored = cp.copied;

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": %ui documents restored from \"%V\" "
                  "in %M ms", &zone->name, cp.copied, &zone->file,
                  ngx_http_simhash_msec() - start);

    goto failed;

corrupt:

    ngx_log_error(NGX_LOG_ERR, log, 0,
                  "simhash zone \"%V\": snapshot \"%V\" refused: "
                  "malformed key records; starting empty",
                  &zone->name, &zone->file);

failed:

    if (cp.keys) {
        ngx_free(cp.keys);
    }

    if (cp.hashes) {
        ngx_free(cp.hashes);
    }

    free(region);
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
    uint32_t                   ref, end, len;
    uint64_t                   hash;
    ngx_msec_t                 t;
    ngx_http_simhash_doc_t    *doc;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    zone = sv->zone;
    sh = zone->sh;

    /* the keys may grow while we copy: room for 1/8 more, the rest waits */

    size = 8 + sh->key_bytes + sh->key_bytes / 8
           + 16 * (size_t) sh->capacity;

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

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (sh->writer) {
        ngx_http_simhash_repair(zone, log);
    }

    t = ngx_http_simhash_msec();
    sv->generation = sh->generation;
    ngx_memcpy(sv->region, sh->index, sh->region_size);
    sv->copy_ms = ngx_http_simhash_msec() - t;

    ngx_shmtx_unlock(&zone->shpool->mutex);

    /*
     * The keys, NGX_HTTP_SIMHASH_SAVE_CHUNK refs per hold of the lock, each
     * with the fingerprint its document has now.  Documents may change
     * between the holds: the load takes a key only when its fingerprint is
     * the one the copied index has for that ref, so a key never lands on
     * another document (a document changed meanwhile is left out).
     */

    p = ngx_cpymem(sv->user, NGX_HTTP_SIMHASH_KEYS_MAGIC, 8);
    last = sv->user + size;

    for (ref = 0; ref < sh->capacity; ref = end) {
        end = ngx_min(ref + NGX_HTTP_SIMHASH_SAVE_CHUNK, sh->capacity);

        ngx_shmtx_lock(&zone->shpool->mutex);

        t = ngx_http_simhash_msec();

        for ( /* void */ ; ref < end; ref++) {
            doc = sh->docs[ref];

            if (doc == NULL || sh_index_get(sh->index, ref, &hash) != 0) {
                continue;
            }

            if ((size_t) (last - p) < 16 + (size_t) doc->len) {
                sv->dropped++;
                continue;
            }

            len = doc->len;
            p = ngx_cpymem(p, &ref, 4);
            p = ngx_cpymem(p, &len, 4);
            p = ngx_cpymem(p, &hash, 8);
            p = ngx_cpymem(p, doc->data, len);
            sv->docs++;
        }

        t = ngx_http_simhash_msec() - t;

        ngx_shmtx_unlock(&zone->shpool->mutex);

        sv->copy_ms = ngx_max(sv->copy_ms, t);
    }

    sv->user_len = p - sv->user;

    return NGX_OK;
}


static void
ngx_http_simhash_save_write(void *data, ngx_log_t *log)
{
    ngx_http_simhash_save_t  *sv = data;

    sh_index_t  *ix;

    sv->write_ms = ngx_http_simhash_msec();

    ix = sh_index_attach(sv->region, sv->region_size, sv->err,
                         sizeof(sv->err));

    if (ix == NULL
        || sh_snapshot_save((char *) sv->zone->file.data, ix, sv->user,
                            sv->user_len, sv->err, sizeof(sv->err))
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


static ngx_int_t
ngx_http_simhash_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                     i;
    ngx_http_simhash_zone_t      **zones, *zone;
    ngx_http_simhash_main_conf_t  *smcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    if (cycle->conf_ctx[ngx_http_module.index] == NULL) {
        return NGX_OK;
    }

    smcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_simhash_module);
    if (smcf == NULL) {
        return NGX_OK;
    }

    zones = smcf->zones.elts;

    for (i = 0; i < smcf->zones.nelts; i++) {
        zone = zones[i];

        if (zone->file.len == 0 || zone->save == 0 || zone->sh == NULL) {
            continue;
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
    }

    return NGX_OK;
}


/* The master saves last, when every worker has exited. */

static void
ngx_http_simhash_exit_master(ngx_cycle_t *cycle)
{
    ngx_uint_t                     i;
    ngx_http_simhash_zone_t      **zones, *zone;
    ngx_http_simhash_main_conf_t  *smcf;

    if (cycle->conf_ctx == NULL
        || cycle->conf_ctx[ngx_http_module.index] == NULL)
    {
        return;
    }

    smcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_simhash_module);
    if (smcf == NULL) {
        return;
    }

    zones = smcf->zones.elts;

    for (i = 0; i < smcf->zones.nelts; i++) {
        zone = zones[i];

        if (zone->file.len == 0 || zone->sh == NULL) {
            continue;
        }

        if (zone->sh->generation != zone->sh->saved_generation) {
            (void) ngx_http_simhash_save(zone, cycle->log);
        }
    }
}


/*
 * simhash_stats: JSON (default) or the Prometheus text format when asked by
 * ?format=prometheus or an Accept header naming text/plain or openmetrics.
 */

typedef struct {
    ngx_http_simhash_zone_t     *zone;
    sh_index_stats_t             ix;
    ngx_atomic_uint_t            responses[NGX_HTTP_SIMHASH_NSTATUS];
    ngx_atomic_uint_t            skipped[NGX_HTTP_SIMHASH_NSKIP];
    ngx_atomic_uint_t            bytes;
    ngx_atomic_uint_t            key_evictions;
    ngx_atomic_uint_t            saves;
    ngx_atomic_uint_t            save_errors;
    ngx_atomic_uint_t            last_save;
    ngx_atomic_uint_t            restored;
} ngx_http_simhash_snap_t;


static ngx_int_t
ngx_http_simhash_stats_prometheus(ngx_http_request_t *r)
{
    ngx_str_t         value;
    ngx_table_elt_t  *accept;

    if (ngx_http_arg(r, (u_char *) "format", 6, &value) == NGX_OK) {
        return value.len == 10
               && ngx_strncmp(value.data, "prometheus", 10) == 0;
    }

    accept = r->headers_in.accept;

    if (accept == NULL) {
        return 0;
    }

    if (ngx_strlcasestrn(accept->value.data,
                         accept->value.data + accept->value.len,
                         (u_char *) "openmetrics", 11 - 1)
        != NULL)
    {
        return 1;
    }

    return ngx_strlcasestrn(accept->value.data,
                            accept->value.data + accept->value.len,
                            (u_char *) "text/plain", 10 - 1) != NULL
           && ngx_strlcasestrn(accept->value.data,
                               accept->value.data + accept->value.len,
                               (u_char *) "json", 4 - 1) == NULL;
}


#define NGX_HTTP_SIMHASH_METRIC(b, name, type, help)                          \
    b->last = ngx_sprintf(b->last, "# HELP simhash_" name " " help "\n"       \
                                   "# TYPE simhash_" name " " type "\n")


static ngx_int_t
ngx_http_simhash_stats_handler(ngx_http_request_t *r)
{
    size_t                         size;
    double                         mean;
    ngx_int_t                      rc, prom;
    ngx_buf_t                     *b;
    ngx_uint_t                     i, j, n;
    ngx_chain_t                    out;
    ngx_http_simhash_snap_t       *s;
    ngx_http_simhash_zone_t      **zones, *zone;
    ngx_http_simhash_shctx_t      *sh;
    ngx_http_simhash_loc_conf_t   *slcf;
    ngx_http_simhash_main_conf_t  *smcf;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    smcf = ngx_http_get_module_main_conf(r, ngx_http_simhash_module);
    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    zones = smcf->zones.elts;
    n = smcf->zones.nelts;

    s = ngx_pcalloc(r->pool, (n + 1) * sizeof(ngx_http_simhash_snap_t));
    if (s == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    size = 2048;
    j = 0;

    for (i = 0; i < n; i++) {
        zone = zones[i];
        sh = zone->sh;

        if (sh == NULL
            || (slcf->stats_zone.len
                && (slcf->stats_zone.len != zone->name.len
                    || ngx_strncmp(slcf->stats_zone.data, zone->name.data,
                                   zone->name.len) != 0)))
        {
            continue;
        }

        s[j].zone = zone;

        ngx_shmtx_lock(&zone->shpool->mutex);
        sh_index_stats(sh->index, &s[j].ix);
        ngx_shmtx_unlock(&zone->shpool->mutex);

        ngx_memcpy(s[j].responses, (void *) sh->responses,
                   sizeof(s[j].responses));
        ngx_memcpy(s[j].skipped, (void *) sh->skipped, sizeof(s[j].skipped));
        s[j].bytes = sh->bytes;
        s[j].key_evictions = sh->key_evictions;
        s[j].saves = sh->saves;
        s[j].save_errors = sh->save_errors;
        s[j].last_save = sh->last_save;
        s[j].restored = sh->restored;

        size += 4096 + 4 * zone->name.len * 40 + zone->file.len;
        j++;
    }

    n = j;
    prom = ngx_http_simhash_stats_prometheus(r);

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (prom) {
        ngx_str_set(&r->headers_out.content_type,
                    "text/plain; version=0.0.4; charset=utf-8");

        NGX_HTTP_SIMHASH_METRIC(b, "capacity", "gauge",
                                "Documents the zone can hold.");
        for (i = 0; i < n; i++) {
            b->last = ngx_sprintf(b->last,
                                  "simhash_capacity{zone=\"%V\"} %uD\n",
                                  &s[i].zone->name, s[i].ix.capacity);
        }

        NGX_HTTP_SIMHASH_METRIC(b, "entries", "gauge",
                                "Documents stored in the zone.");
        for (i = 0; i < n; i++) {
            b->last = ngx_sprintf(b->last,
                                  "simhash_entries{zone=\"%V\"} %uD\n",
                                  &s[i].zone->name, s[i].ix.entries);
        }

        NGX_HTTP_SIMHASH_METRIC(b, "evictions_total", "counter",
                                "Documents evicted to make room.");
        for (i = 0; i < n; i++) {
            b->last = ngx_sprintf(b->last,
                                  "simhash_evictions_total{zone=\"%V\"} %uL\n",
                                  &s[i].zone->name,
                                  s[i].ix.evictions + s[i].key_evictions);
        }

        NGX_HTTP_SIMHASH_METRIC(b, "lookups_total", "counter",
                                "Near-duplicate lookups in the index.");
        for (i = 0; i < n; i++) {
            b->last = ngx_sprintf(b->last,
                                  "simhash_lookups_total{zone=\"%V\"} %uL\n",
                                  &s[i].zone->name, s[i].ix.lookups);
        }

        NGX_HTTP_SIMHASH_METRIC(b, "probes_total", "counter",
                                "Buckets probed by the lookups.");
        for (i = 0; i < n; i++) {
            b->last = ngx_sprintf(b->last,
                                  "simhash_probes_total{zone=\"%V\"} %uL\n",
                                  &s[i].zone->name, s[i].ix.probes);
        }

        NGX_HTTP_SIMHASH_METRIC(b, "responses_total", "counter",
                                "Fingerprinted responses by status.");
        for (i = 0; i < n; i++) {
            for (j = 0; j < NGX_HTTP_SIMHASH_NSTATUS; j++) {
                b->last = ngx_sprintf(b->last,
                              "simhash_responses_total{zone=\"%V\","
                              "status=\"%V\"} %uA\n",
                              &s[i].zone->name,
                              &ngx_http_simhash_status_names[j],
                              s[i].responses[j]);
            }
        }

        NGX_HTTP_SIMHASH_METRIC(b, "skipped_total", "counter",
                                "Skipped responses by reason.");
        for (i = 0; i < n; i++) {
            for (j = 0; j < NGX_HTTP_SIMHASH_NSKIP; j++) {
                b->last = ngx_sprintf(b->last,
                              "simhash_skipped_total{zone=\"%V\","
                              "reason=\"%V\"} %uA\n",
                              &s[i].zone->name,
                              &ngx_http_simhash_skip_names[j],
                              s[i].skipped[j]);
            }
        }

        NGX_HTTP_SIMHASH_METRIC(b, "fingerprinted_bytes_total", "counter",
                                "Body bytes fed to the extractor.");
        for (i = 0; i < n; i++) {
            b->last = ngx_sprintf(b->last,
                              "simhash_fingerprinted_bytes_total{zone=\"%V\"}"
                              " %uA\n", &s[i].zone->name, s[i].bytes);
        }

        NGX_HTTP_SIMHASH_METRIC(b, "snapshot_saves_total", "counter",
                                "Snapshots written.");
        for (i = 0; i < n; i++) {
            b->last = ngx_sprintf(b->last,
                              "simhash_snapshot_saves_total{zone=\"%V\"} %uA\n",
                              &s[i].zone->name, s[i].saves);
        }

        NGX_HTTP_SIMHASH_METRIC(b, "snapshot_errors_total", "counter",
                                "Snapshots that could not be written.");
        for (i = 0; i < n; i++) {
            b->last = ngx_sprintf(b->last,
                              "simhash_snapshot_errors_total{zone=\"%V\"} "
                              "%uA\n", &s[i].zone->name, s[i].save_errors);
        }

    } else {
        ngx_str_set(&r->headers_out.content_type, "application/json");

        b->last = ngx_cpymem(b->last, "{\"zones\":{", 10);

        for (i = 0; i < n; i++) {
            zone = s[i].zone;
            mean = s[i].ix.lookups
                   ? (double) s[i].ix.probes / s[i].ix.lookups : 0;

            b->last = ngx_sprintf(b->last,
                          "%s\"%V\":{\"size\":%uz,\"capacity\":%uD,"
                          "\"entries\":%uD,\"distance\":%ui,"
                          "\"evictions\":%uL,\"lookups\":%uL,"
                          "\"probes\":%uL,\"mean_probes\":%.3f,"
                          "\"fingerprinted_bytes\":%uA,\"responses\":{",
                          i ? "," : "", &zone->name,
                          zone->shm_zone->shm.size, s[i].ix.capacity,
                          s[i].ix.entries, zone->distance,
                          s[i].ix.evictions + s[i].key_evictions,
                          s[i].ix.lookups, s[i].ix.probes, mean,
                          s[i].bytes);

            for (j = 0; j < NGX_HTTP_SIMHASH_NSTATUS; j++) {
                b->last = ngx_sprintf(b->last, "%s\"%V\":%uA",
                                      j ? "," : "",
                                      &ngx_http_simhash_status_names[j],
                                      s[i].responses[j]);
            }

            b->last = ngx_cpymem(b->last, "},\"skipped\":{", 13);

            for (j = 0; j < NGX_HTTP_SIMHASH_NSKIP; j++) {
                b->last = ngx_sprintf(b->last, "%s\"%V\":%uA",
                                      j ? "," : "",
                                      &ngx_http_simhash_skip_names[j],
                                      s[i].skipped[j]);
            }

            b->last = ngx_cpymem(b->last, "}", 1);

            if (zone->file.len) {
                b->last = ngx_sprintf(b->last,
                              ",\"snapshot\":{\"saves\":%uA,\"errors\":%uA,"
                              "\"last_save\":%uA,\"restored\":%uA}",
                              s[i].saves, s[i].save_errors, s[i].last_save,
                              s[i].restored);
            }

            b->last = ngx_cpymem(b->last, "}", 1);
        }

        b->last = ngx_cpymem(b->last, "}}\n", 3);
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/* $simhash, $simhash_status, $simhash_duplicate_of, $simhash_distance */

enum {
    NGX_HTTP_SIMHASH_VAR_HASH = 0,
    NGX_HTTP_SIMHASH_VAR_STATUS,
    NGX_HTTP_SIMHASH_VAR_DUP,
    NGX_HTTP_SIMHASH_VAR_DISTANCE
};


static ngx_http_variable_t  ngx_http_simhash_vars[] = {

    { ngx_string("simhash"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_HASH, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_status"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_STATUS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_duplicate_of"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_DUP, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_distance"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_DISTANCE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_simhash_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_simhash_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                  *p;
    ngx_http_simhash_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_simhash_module);

    if (ctx == NULL || ctx->phase == NGX_HTTP_SIMHASH_READ) {
        v->not_found = 1;
        return NGX_OK;
    }

    switch (data) {

    case NGX_HTTP_SIMHASH_VAR_HASH:
        if (!ctx->has_hash || ctx->status == NGX_HTTP_SIMHASH_SKIPPED) {
            v->not_found = 1;
            return NGX_OK;
        }

        p = ngx_pnalloc(r->pool, 16);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "%016uxL", ctx->hash) - p;
        v->data = p;
        break;

    case NGX_HTTP_SIMHASH_VAR_STATUS:
        v->len = ngx_http_simhash_status_names[ctx->status].len;
        v->data = ngx_http_simhash_status_names[ctx->status].data;
        break;

    case NGX_HTTP_SIMHASH_VAR_DUP:
        if (ctx->duplicate_of.len == 0) {
            v->not_found = 1;
            return NGX_OK;
        }

        v->len = ctx->duplicate_of.len;
        v->data = ctx->duplicate_of.data;
        break;

    default: /* NGX_HTTP_SIMHASH_VAR_DISTANCE */
        if (!ctx->has_distance) {
            v->not_found = 1;
            return NGX_OK;
        }

        p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "%ui", ctx->distance) - p;
        v->data = p;
        break;
    }

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/* Configuration. */

static void *
ngx_http_simhash_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_simhash_main_conf_t  *smcf;

    smcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_main_conf_t));
    if (smcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&smcf->zones, cf->pool, 4,
                       sizeof(ngx_http_simhash_zone_t *))
        != NGX_OK
        || ngx_array_init(&smcf->cfgs, cf->pool, 4,
                          sizeof(ngx_http_simhash_cfg_t))
           != NGX_OK)
    {
        return NULL;
    }

    sh_library_init();

    return smcf;
}


static void *
ngx_http_simhash_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_simhash_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->zone_name = { 0, NULL };
     *     conf->zone = NULL;
     *     conf->types = { NULL };
     *     conf->types_keys = NULL;
     *     conf->key = NULL;
     *     conf->stem = { 0, NULL };
     *     conf->stopwords = { 0, NULL };
     *     conf->ignore = NULL;
     *     conf->idf = { 0, NULL };
     *     conf->seed = { 0, NULL };
     *     conf->cfg = NULL;
     */

    conf->enable = NGX_CONF_UNSET;
    conf->action = NGX_CONF_UNSET_UINT;
    conf->drop_code = NGX_CONF_UNSET_UINT;
    conf->max_body = NGX_CONF_UNSET_SIZE;
    conf->probes = NGX_CONF_UNSET_UINT;
    conf->recall = NGX_CONF_UNSET_UINT;
    conf->insert = NGX_CONF_UNSET;
    conf->volatility_set = NGX_CONF_UNSET;
    conf->shingle = NGX_CONF_UNSET;
    conf->min_features = NGX_CONF_UNSET;
    conf->max_features = NGX_CONF_UNSET;
    conf->word_weight = NGX_CONF_UNSET;
    conf->shingle_weight = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_simhash_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_simhash_loc_conf_t *prev = parent;
    ngx_http_simhash_loc_conf_t *conf = child;

    ngx_uint_t                     i;
    ngx_http_simhash_zone_t      **zones;
    ngx_http_simhash_main_conf_t  *smcf;
    ngx_http_compile_complex_value_t   ccv;

    static ngx_str_t  default_key = ngx_string("$scheme://$host$request_uri");

    if (conf->enable == NGX_CONF_UNSET) {
        conf->enable = prev->enable;
        conf->zone_name = prev->zone_name;
        conf->zone_where = prev->zone_where;
    }

    if (conf->enable == NGX_CONF_UNSET) {
        conf->enable = 0;
    }

    ngx_conf_merge_uint_value(conf->action, prev->action,
                              NGX_HTTP_SIMHASH_TAG);
    ngx_conf_merge_uint_value(conf->drop_code, prev->drop_code,
                              NGX_HTTP_NO_CONTENT);

    if (ngx_http_merge_types(cf, &conf->types_keys, &conf->types,
                             &prev->types_keys, &prev->types,
                             ngx_http_html_default_types)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    ngx_conf_merge_size_value(conf->max_body, prev->max_body, 1024 * 1024);
    ngx_conf_merge_uint_value(conf->probes, prev->probes, 0);
    ngx_conf_merge_uint_value(conf->recall, prev->recall, 0);
    ngx_conf_merge_value(conf->insert, prev->insert, 1);

    if (conf->volatility_set == NGX_CONF_UNSET) {
        conf->volatility_set = prev->volatility_set;
        conf->volatility = prev->volatility;
    }

    if (conf->key == NULL) {
        conf->key = prev->key;
    }

    if (conf->key == NULL) {
        conf->key = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
        if (conf->key == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

        ccv.cf = cf;
        ccv.value = &default_key;
        ccv.complex_value = conf->key;

        if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        prev->key = conf->key;
    }

    /* extraction options: unset values inherit, sh_options_init decides */

    ngx_conf_merge_value(conf->shingle, prev->shingle, NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->min_features, prev->min_features,
                         NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->max_features, prev->max_features,
                         NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->word_weight, prev->word_weight,
                         NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->shingle_weight, prev->shingle_weight,
                         NGX_CONF_UNSET);

    if (conf->stem.data == NULL) {
        conf->stem = prev->stem;
    }

    if (conf->stopwords.data == NULL) {
        conf->stopwords = prev->stopwords;
    }

    if (conf->idf.data == NULL) {
        conf->idf = prev->idf;
    }

    if (conf->seed.data == NULL) {
        conf->seed = prev->seed;
    }

    if (conf->ignore == NULL) {
        conf->ignore = prev->ignore;
    }

    if (conf->opts_where.data == NULL) {
        conf->opts_where = prev->opts_where;
    }

    if (!conf->enable) {
        return NGX_CONF_OK;
    }

    /* the zone: declared anywhere in http{}, so resolved only now */

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);
    zones = smcf->zones.elts;

    for (i = 0; i < smcf->zones.nelts; i++) {
        if (zones[i]->name.len == conf->zone_name.len
            && ngx_strncmp(zones[i]->name.data, conf->zone_name.data,
                           conf->zone_name.len) == 0)
        {
            conf->zone = zones[i];
            break;
        }
    }

    if (conf->zone == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "unknown simhash zone \"%V\" in %V",
                      &conf->zone_name, &conf->zone_where);
        return NGX_CONF_ERROR;
    }

    sh_lookup_opts_init(&conf->lookup);
    conf->lookup.h = conf->zone->distance;
    conf->lookup.mode = SH_MATCH_CLOSEST;
    conf->lookup.probes = conf->probes;

    if (conf->recall) {
        conf->lookup.recall = (float) conf->recall / 10000;
    }

    conf->lookup.vol = conf->volatility;

    if (ngx_http_simhash_compile(cf, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static uint32_t
ngx_http_simhash_float_bits(float f)
{
    uint32_t  u;

    ngx_memcpy(&u, &f, sizeof(uint32_t));

    return u;
}


/*
 * Build (or reuse: equal option sets share one) the compiled extraction
 * configuration, and check the seed against the zone's other users.
 */

static ngx_int_t
ngx_http_simhash_compile(ngx_conf_t *cf, ngx_http_simhash_loc_conf_t *conf)
{
    char                           err[512];
    u_char                        *p;
    size_t                         len;
    uint64_t                       digest;
    ngx_str_t                      sig, *pat;
    ngx_uint_t                     i;
    sh_options_t                   opts;
    sh_config_t                   *cfg;
    ngx_pool_cleanup_t            *cln;
    ngx_http_simhash_cfg_t        *c;
    ngx_http_simhash_zone_t       *zone;
    ngx_http_simhash_main_conf_t  *smcf;

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);

    sh_options_init(&opts);

    if (conf->shingle != NGX_CONF_UNSET) {
        opts.shingle = (unsigned) conf->shingle;
    }

    if (conf->min_features != NGX_CONF_UNSET) {
        opts.min_features = (unsigned) conf->min_features;
    }

    if (conf->max_features != NGX_CONF_UNSET) {
        opts.max_features = (unsigned) conf->max_features;
    }

    if (conf->word_weight != NGX_CONF_UNSET) {
        opts.weight[SH_FEAT_WORD] = (float) conf->word_weight / 1000;
    }

    if (conf->shingle_weight != NGX_CONF_UNSET) {
        opts.weight[SH_FEAT_SHINGLE] = (float) conf->shingle_weight / 1000;
    }

    if (conf->stem.data) {
        opts.stem = (conf->stem.len == 3
                     && ngx_strcmp(conf->stem.data, "off") == 0)
                    ? NULL : (char *) conf->stem.data;
    }

    if (conf->stopwords.data) {
        opts.stopwords_off = 0;

        if (conf->stopwords.len == 3
            && ngx_strcmp(conf->stopwords.data, "off") == 0)
        {
            opts.stopwords_off = 1;

        } else if (conf->stopwords.len != 7
                   || ngx_strcmp(conf->stopwords.data, "english") != 0)
        {
            opts.stopwords_file = (char *) conf->stopwords.data;
        }
    }

    if (conf->idf.data) {
        opts.idf_file = (char *) conf->idf.data;
    }

    if (conf->seed.data) {
        opts.seed = conf->seed.data;
        opts.seed_len = conf->seed.len;
    }

    if (conf->ignore) {
        pat = conf->ignore->elts;

        for (i = 0; i < conf->ignore->nelts; i++) {
            if (sh_options_add_ignore(&opts, (char *) pat[i].data) != 0) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "too many simhash_ignore patterns (at most %d) "
                              "in %V", SH_IGNORE_MAX, &conf->opts_where);
                return NGX_ERROR;
            }
        }
    }

    /* the signature: every option, unambiguously */

    len = 256 + (opts.stem ? ngx_strlen(opts.stem) : 0)
          + (opts.stopwords_file ? ngx_strlen(opts.stopwords_file) : 0)
          + (opts.idf_file ? ngx_strlen(opts.idf_file) : 0)
          + 2 * opts.seed_len;

    for (i = 0; i < opts.nignore; i++) {
        len += ngx_strlen(opts.ignore[i]) + NGX_INT_T_LEN + 2;
    }

    sig.data = ngx_pnalloc(cf->pool, len);
    if (sig.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(sig.data, "%ui|%ui|%ui|%ui|%uxD|%uxD|%s|%s|%s|",
                    (ngx_uint_t) opts.shingle, (ngx_uint_t) opts.min_features,
                    (ngx_uint_t) opts.max_features,
                    (ngx_uint_t) opts.stopwords_off,
                    ngx_http_simhash_float_bits(opts.weight[SH_FEAT_WORD]),
                    ngx_http_simhash_float_bits(opts.weight[SH_FEAT_SHINGLE]),
                    opts.stem ? opts.stem : "-",
                    opts.stopwords_file ? opts.stopwords_file : "-",
                    opts.idf_file ? opts.idf_file : "-");
    p = ngx_hex_dump(p, (u_char *) opts.seed, opts.seed_len);

    for (i = 0; i < opts.nignore; i++) {
        p = ngx_sprintf(p, "|%uz:%s", ngx_strlen(opts.ignore[i]),
                        opts.ignore[i]);
    }

    sig.len = p - sig.data;

    cfg = NULL;
    c = smcf->cfgs.elts;

    for (i = 0; i < smcf->cfgs.nelts; i++) {
        if (c[i].sig.len == sig.len
            && ngx_strncmp(c[i].sig.data, sig.data, sig.len) == 0)
        {
            cfg = c[i].cfg;
            break;
        }
    }

    if (cfg == NULL) {
        cln = ngx_pool_cleanup_add(cf->pool, 0);
        if (cln == NULL) {
            return NGX_ERROR;
        }

        cfg = sh_config_new(&opts, err, sizeof(err));

        if (cfg == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "simhash: %s in %V",
                          err, conf->opts_where.data ? &conf->opts_where
                                                     : &conf->zone_where);
            return NGX_ERROR;
        }

        cln->handler = (ngx_pool_cleanup_pt) sh_config_free;
        cln->data = cfg;

        c = ngx_array_push(&smcf->cfgs);
        if (c == NULL) {
            return NGX_ERROR;
        }

        c->sig = sig;
        c->cfg = cfg;
    }

    conf->cfg = cfg;

    /* one zone, one hash key */

    zone = conf->zone;
    digest = sh_config_seed_digest(cfg);

    if (zone->seed_set && zone->seed_digest != digest) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash zone \"%V\" needs the same simhash_seed "
                      "everywhere (it has another one at %V) in %V",
                      &zone->name, &zone->seed_where, &conf->zone_where);
        return NGX_ERROR;
    }

    zone->seed_set = 1;
    zone->seed_digest = digest;
    zone->seed_where = conf->zone_where;

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_postconfiguration(ngx_conf_t *cf)
{
    char                           err[512];
    sh_options_t                   opts;
    sh_config_t                   *cfg;
    ngx_uint_t                     i;
    ngx_http_simhash_zone_t      **zones;
    ngx_http_simhash_main_conf_t  *smcf;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_simhash_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_simhash_body_filter;

    /* a zone no location uses: the default hash key */

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);
    zones = smcf->zones.elts;

    for (i = 0; i < smcf->zones.nelts; i++) {
        if (zones[i]->seed_set) {
            continue;
        }

        sh_options_init(&opts);

        cfg = sh_config_new(&opts, err, sizeof(err));
        if (cfg == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "simhash: %s", err);
            return NGX_ERROR;
        }

        zones[i]->seed_digest = sh_config_seed_digest(cfg);
        zones[i]->seed_set = 1;

        sh_config_free(cfg);
    }

    return NGX_OK;
}


/* simhash_zone zone=NAME:SIZE [distance=N] [file=PATH] [save=TIME] */

static char *
ngx_http_simhash_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    u_char                        *p;
    ssize_t                        size;
    ngx_str_t                     *value, name, s;
    ngx_int_t                      n;
    ngx_uint_t                     i, save_set;
    ngx_http_simhash_zone_t       *zone, **zp;
    ngx_http_simhash_main_conf_t  *smcf = conf;

    value = cf->args->elts;

    zone = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_zone_t));
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    zone->distance = SH_H_DEFAULT;
    zone->save = 300000;
    save_set = 0;
    size = 0;
    name.len = 0;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {

            name.data = value[i].data + 5;

            p = (u_char *) ngx_strchr(name.data, ':');

            if (p == NULL) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            name.len = p - name.data;

            if (name.len == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone name \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            s.data = p + 1;
            s.len = value[i].data + value[i].len - s.data;

            size = ngx_parse_size(&s);

            if (size == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            if (ngx_http_simhash_capacity((size_t) size)
                < NGX_HTTP_SIMHASH_MIN_DOCS)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "zone \"%V\" is too small", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "distance=", 9) == 0) {

            n = ngx_atoi(value[i].data + 9, value[i].len - 9);

            if (n == NGX_ERROR || n > SH_H_MAX) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid distance \"%V\": must be "
                                   "between 0 and %d", &value[i], SH_H_MAX);
                return NGX_CONF_ERROR;
            }

            zone->distance = (ngx_uint_t) n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "file=", 5) == 0) {

            zone->file.data = value[i].data + 5;
            zone->file.len = value[i].len - 5;

            if (zone->file.len == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }

            if (ngx_conf_full_name(cf->cycle, &zone->file, 0) != NGX_OK) {
                return NGX_CONF_ERROR;
            }

            ngx_http_simhash_check_dir(cf, &zone->file);

            continue;
        }

        if (ngx_strncmp(value[i].data, "save=", 5) == 0) {

            s.data = value[i].data + 5;
            s.len = value[i].len - 5;

            if (s.len == 3 && ngx_strncmp(s.data, "off", 3) == 0) {
                zone->save = 0;

            } else {
                zone->save = ngx_parse_time(&s, 0);

                if (zone->save == (ngx_msec_t) NGX_ERROR
                    || zone->save < 1000)
                {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                       "invalid save time \"%V\": at least "
                                       "1s, or off", &value[i]);
                    return NGX_CONF_ERROR;
                }
            }

            save_set = 1;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone=NAME:SIZE\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (save_set && zone->file.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"save\" needs the \"file\" parameter");
        return NGX_CONF_ERROR;
    }

    zp = smcf->zones.elts;

    for (i = 0; i < smcf->zones.nelts; i++) {
        if (zp[i]->name.len == name.len
            && ngx_strncmp(zp[i]->name.data, name.data, name.len) == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate simhash zone \"%V\"", &name);
            return NGX_CONF_ERROR;
        }
    }

    zone->name = name;

    zone->shm_zone = ngx_shared_memory_add(cf, &name, size,
                                           &ngx_http_simhash_module);
    if (zone->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (zone->shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate zone \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    zone->shm_zone->init = ngx_http_simhash_init_zone;
    zone->shm_zone->data = zone;

#if (NGX_THREADS)
    /* periodic saves write from nginx's default thread pool */
    if (zone->file.len && zone->save) {
        zone->thread_pool = ngx_thread_pool_add(cf, NULL);
        if (zone->thread_pool == NULL) {
            return NGX_CONF_ERROR;
        }
    }
#endif

    zp = ngx_array_push(&smcf->zones);
    if (zp == NULL) {
        return NGX_CONF_ERROR;
    }

    *zp = zone;

    return NGX_CONF_OK;
}


/* The snapshot's directory should exist: warn now rather than at the save. */

static void
ngx_http_simhash_check_dir(ngx_conf_t *cf, ngx_str_t *file)
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


/* simhash NAME | off */

static char *
ngx_http_simhash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_str_t  *value;

    if (slcf->enable != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    ngx_http_simhash_where(cf, &slcf->zone_where);

    if (ngx_strcmp(value[1].data, "off") == 0) {
        slcf->enable = 0;
        ngx_str_set(&slcf->zone_name, "off");
        return NGX_CONF_OK;
    }

    slcf->enable = 1;
    slcf->zone_name = value[1];

    return NGX_CONF_OK;
}


/* simhash_action tag | drop [CODE] */

static char *
ngx_http_simhash_action(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_int_t   code;
    ngx_str_t  *value;

    if (slcf->action != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "tag") == 0) {
        if (cf->args->nelts > 2) {
            return "takes no status code with \"tag\"";
        }

        slcf->action = NGX_HTTP_SIMHASH_TAG;
        return NGX_CONF_OK;
    }

    if (ngx_strcmp(value[1].data, "drop") != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid action \"%V\": \"tag\" or \"drop\"",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    slcf->action = NGX_HTTP_SIMHASH_DROP;

    if (cf->args->nelts > 2) {
        code = ngx_atoi(value[2].data, value[2].len);

        if (code == NGX_ERROR || code < 200 || code > 599
            || code == NGX_HTTP_PARTIAL_CONTENT
            || code == NGX_HTTP_NOT_MODIFIED)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid status code \"%V\"", &value[2]);
            return NGX_CONF_ERROR;
        }

        slcf->drop_code = (ngx_uint_t) code;
    }

    return NGX_CONF_OK;
}


static void
ngx_http_simhash_where(ngx_conf_t *cf, ngx_str_t *where)
{
    u_char  *p;
    size_t   len;

    len = cf->conf_file->file.name.len + 1 + NGX_INT_T_LEN;

    p = ngx_pnalloc(cf->pool, len);
    if (p == NULL) {
        ngx_str_set(where, "(unknown)");
        return;
    }

    where->data = p;
    where->len = ngx_sprintf(p, "%V:%ui", &cf->conf_file->file.name,
                             cf->conf_file->line) - p;
}


/* simhash_shingle, simhash_min_features, simhash_max_features */

static char *
ngx_http_simhash_opt_num(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    char  *rv;

    rv = ngx_conf_set_num_slot(cf, cmd, conf);

    if (rv == NGX_CONF_OK) {
        ngx_http_simhash_where(cf, &slcf->opts_where);
    }

    return rv;
}


/* simhash_word_weight W, simhash_shingle_weight W: 0 to 1000 */

static char *
ngx_http_simhash_weight(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_int_t   n, *field;
    ngx_str_t  *value;

    field = (ngx_int_t *) ((char *) conf + cmd->offset);

    if (*field != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    n = ngx_atofp(value[1].data, value[1].len, 3);

    if (n == NGX_ERROR || n > 1000000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid weight \"%V\": a number from 0 to 1000",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    *field = n;
    ngx_http_simhash_where(cf, &slcf->opts_where);

    return NGX_CONF_OK;
}


/* simhash_stem LANG | off */

static char *
ngx_http_simhash_stem(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_str_t  *value;

    if (slcf->stem.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") != 0
        && !sh_stem_lang_valid((char *) value[1].data))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "unknown stemmer language \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    slcf->stem = value[1];
    ngx_http_simhash_where(cf, &slcf->opts_where);

    return NGX_CONF_OK;
}


/* simhash_stopwords FILE | english | off, simhash_idf FILE: readable now */

static char *
ngx_http_simhash_file_opt(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_str_t   *value, *field;
    ngx_fd_t     fd;

    field = (ngx_str_t *) ((char *) conf + cmd->offset);

    if (field->data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cmd->offset == offsetof(ngx_http_simhash_loc_conf_t, stopwords)
        && (ngx_strcmp(value[1].data, "off") == 0
            || ngx_strcmp(value[1].data, "english") == 0))
    {
        *field = value[1];
        ngx_http_simhash_where(cf,
                     &((ngx_http_simhash_loc_conf_t *) conf)->opts_where);
        return NGX_CONF_OK;
    }

    if (ngx_conf_full_name(cf->cycle, &value[1], 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    fd = ngx_open_file(value[1].data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "cannot read \"%V\" for \"%V\"",
                           &value[1], &cmd->name);
        return NGX_CONF_ERROR;
    }

    ngx_close_file(fd);

    *field = value[1];
    ngx_http_simhash_where(cf,
                           &((ngx_http_simhash_loc_conf_t *) conf)->opts_where);

    return NGX_CONF_OK;
}


/* simhash_ignore REGEX: compiled now, to report an error with its line */

static char *
ngx_http_simhash_ignore(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    int                errcode;
    u_char             msg[256];
    ngx_str_t         *value, *pat;
    PCRE2_SIZE         erroff;
    pcre2_code        *re;

    value = cf->args->elts;

    re = pcre2_compile(value[1].data, value[1].len, PCRE2_UTF, &errcode,
                       &erroff, NULL);

    if (re == NULL) {
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid regex \"%V\": %s at offset %uz",
                           &value[1], msg, (size_t) erroff);
        return NGX_CONF_ERROR;
    }

    pcre2_code_free(re);

    if (slcf->ignore == NULL) {
        slcf->ignore = ngx_array_create(cf->pool, 4, sizeof(ngx_str_t));
        if (slcf->ignore == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    if (slcf->ignore->nelts >= SH_IGNORE_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "too many \"simhash_ignore\" patterns, at most %d",
                           SH_IGNORE_MAX);
        return NGX_CONF_ERROR;
    }

    pat = ngx_array_push(slcf->ignore);
    if (pat == NULL) {
        return NGX_CONF_ERROR;
    }

    *pat = value[1];   /* the argument is NUL-terminated */

    ngx_http_simhash_where(cf, &slcf->opts_where);

    return NGX_CONF_OK;
}


/* simhash_seed SECRET */

static char *
ngx_http_simhash_seed(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_str_t  *value;

    if (slcf->seed.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len < 8) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash_seed is too short: use at least 8 "
                           "characters, better 32 random ones");
        return NGX_CONF_ERROR;
    }

    slcf->seed = value[1];
    ngx_http_simhash_where(cf, &slcf->opts_where);

    return NGX_CONF_OK;
}


/* simhash_probes N | recall=R */

static char *
ngx_http_simhash_probes(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_int_t   n;
    ngx_str_t  *value;

    if (slcf->probes != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strncmp(value[1].data, "recall=", 7) == 0) {
        n = ngx_atofp(value[1].data + 7, value[1].len - 7, 4);

        if (n == NGX_ERROR || n <= 0 || n > 10000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid recall \"%V\": a number in (0, 1]",
                               &value[1]);
            return NGX_CONF_ERROR;
        }

        slcf->probes = 0;
        slcf->recall = (ngx_uint_t) n;
        return NGX_CONF_OK;
    }

    n = ngx_atoi(value[1].data, value[1].len);

    if (n == NGX_ERROR || n < 1 || n > SH_PROBES_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid number of probes \"%V\": 1 to %d, "
                           "or recall=R", &value[1], SH_PROBES_MAX);
        return NGX_CONF_ERROR;
    }

    slcf->probes = (ngx_uint_t) n;
    slcf->recall = 0;

    return NGX_CONF_OK;
}


/* simhash_volatility FILE | off: a table from `simhash calibrate` */

static char *
ngx_http_simhash_volatility(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    char                 err[512];
    ngx_str_t           *value;
    sh_volatility_t     *vol;
    ngx_pool_cleanup_t  *cln;

    if (slcf->volatility_set != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;
    slcf->volatility_set = 1;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        slcf->volatility = NULL;
        return NGX_CONF_OK;
    }

    if (ngx_conf_full_name(cf->cycle, &value[1], 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    vol = sh_volatility_load((char *) value[1].data, err, sizeof(err));

    if (vol == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "cannot use \"%V\" as a volatility table: %s",
                           &value[1], err);
        return NGX_CONF_ERROR;
    }

    cln->handler = (ngx_pool_cleanup_pt) sh_volatility_free;
    cln->data = vol;

    slcf->volatility = vol;

    return NGX_CONF_OK;
}


/* simhash_stats [ZONE] */

static char *
ngx_http_simhash_stats(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_str_t                 *value;
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_simhash_stats_handler;

    if (cf->args->nelts > 1) {
        value = cf->args->elts;
        slcf->stats_zone = value[1];
    }

    return NGX_CONF_OK;
}
