
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
 *      once, as the image filter does).  Over simhash_max_body, or past the
 *      worker's simhash_max_held, we give up: header, held bytes and the
 *      rest are sent unmodified ("skipped").  At the last buffer the whole
 *      held body goes to the extractor in one go (feed_held: sh_doc_feed,
 *      inflating gzip/deflate first), unless its digest shows an identical
 *      re-fetch.
 *
 *   3. At the last buffer, ngx_http_simhash_finish computes the fingerprint,
 *      ngx_http_simhash_decide consults and updates the zone under its
 *      mutex, ngx_http_simhash_send adds the X-Simhash-* headers and sends
 *      header and body (or, for a duplicate in drop mode, an empty body with
 *      the configured status).
 *
 * Before all that, in the preaccess phase, the loop guard
 * (module/ngx_http_simhash_guard.c) refuses a request that would come back
 * to this proxy; and in the precontent phase, with simhash_dust on, the
 * DUST learner (module/ngx_http_simhash_dust.c) may predict that the URL
 * is a duplicate of a stored page: drop mode then answers at once, without
 * the upstream (ngx_http_simhash_dust_handler, below).
 *
 * The rest of this file: the variables and the directives that configure
 * a location.  The other subjects have files of their own (the map is in
 * module/ngx_http_simhash.h): the shared memory zone, persistence, the
 * simhash_stats handler, replication through Redis and the loop guard.
 * docs/module.md is the user documentation.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <zlib.h>

#define XXH_STATIC_LINKING_ONLY     /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "ngx_http_simhash.h"
#include "sh_block.h"
#include "sh_doc.h"
#include "sh_html.h"


#define NGX_HTTP_SIMHASH_HOLD_CHUNK (32 * 1024)
#define NGX_HTTP_SIMHASH_ZBUF_SIZE  (16 * 1024)

/* X-Simhash-Duplicate-Of is sent only up to this length (the escaped key;
 * common clients and proxies take 8k header lines at most) */
#define NGX_HTTP_SIMHASH_HEADER_MAX 4096

/* matches looked at when the closest is two listings of one template */
#define NGX_HTTP_SIMHASH_CANDIDATES 16


#define NGX_HTTP_SIMHASH_TAG        0
#define NGX_HTTP_SIMHASH_DROP       1

/* simhash_reveal */
#define NGX_HTTP_SIMHASH_REVEAL_OFF     0
#define NGX_HTTP_SIMHASH_REVEAL_STATUS  1
#define NGX_HTTP_SIMHASH_REVEAL_KEY     2


/* one compiled extraction configuration, shared by equal option sets */
typedef struct {
    ngx_str_t                    sig;       /* canonical option string */
    sh_config_t                 *cfg;
} ngx_http_simhash_cfg_t;


typedef enum {
    NGX_HTTP_SIMHASH_READ = 0,  /* holding the body, fingerprinting */
    NGX_HTTP_SIMHASH_PASS,      /* header sent, body passes untouched */
    NGX_HTTP_SIMHASH_DONE,      /* everything sent */
    NGX_HTTP_SIMHASH_NONE       /* not a response of ours: nothing decided */
} ngx_http_simhash_phase_e;


/*
 * $simhash_action: what the module did with a response, for the access log
 * (its status says what the page is; this says what the crawler got).
 */
typedef enum {
    NGX_HTTP_SIMHASH_ACT_NONE = 0,      /* not decided: the variable is "" */
    NGX_HTTP_SIMHASH_ACT_PASSED,        /* the upstream's response, whole */
    NGX_HTTP_SIMHASH_ACT_DROPPED,       /* a duplicate, answered empty */
    NGX_HTTP_SIMHASH_ACT_PREDICTED,     /* answered without a fetch (DUST) */
    NGX_HTTP_SIMHASH_ACT_VERIFIED       /* predicted, fetched to check
                                           (dropped or passed after) */
} ngx_http_simhash_action_e;

static ngx_str_t  ngx_http_simhash_action_names[] = {
    ngx_null_string,
    ngx_string("passed"),
    ngx_string("dropped"),
    ngx_string("predicted"),
    ngx_string("verified")
};


typedef struct {
    ngx_http_simhash_phase_e     phase;
    sh_doc_t                    *doc;
    sh_config_t                 *cfg;

    /* the held body: our copies, in order */
    ngx_chain_t                 *held;
    ngx_chain_t                **last;
    ngx_buf_t                   *buf;       /* the one being filled */
    size_t                       held_bytes;
    size_t                       charged;   /* to the worker's held budget:
                                               the buffers allocated */
    size_t                       fed;       /* decoded bytes fed */

    u_char                      *charset;
    ngx_str_t                    key;       /* simhash_key, at the end */
    uint64_t                     digest;    /* of the body as received */

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
    unsigned                     has_distance:1;    /* and the score */
    uint64_t                     hash;
    ngx_uint_t                   distance;
    uint32_t                     score;     /* sh_match.h units */
    ngx_str_t                    duplicate_of;
    /* simhash_reveal: what the headers and variables leave out; the
     * fields above stay as decided, for the drop decision and the log */
    unsigned                     hide_status:1;     /* simhash_reveal off */
    unsigned                     hide_original:1;   /* key, distance, score */
    unsigned                     revealed:1;        /* reveal applied */

    /* simhash_dust: the document this response turned out to be (the
     * key hash of the original, or of its own key), for the learner; the
     * rules of a prediction made before the fetch ("" = none); early: the
     * ctx was made then, the header filter has not seen it yet */
    uint64_t                     rep;
    ngx_str_t                    predicted;
    unsigned                     early:1;

    /* $simhash_action: what was done with the response */
    unsigned                     action:3;      /* ngx_http_simhash_action_e */
    unsigned                     verifying:1;   /* a prediction, fetched as
                                                   a verification sample */
    /* whether the response is dropped, decided once (drop_known); and
     * whether the console counted it already, in the decision's hold */
    unsigned                     drop:1;
    unsigned                     drop_known:1;
    unsigned                     accounted:1;
} ngx_http_simhash_ctx_t;


static ngx_int_t ngx_http_simhash_dust_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_simhash_dust_answer(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_uint_t ngx_http_simhash_credentials(ngx_http_request_t *r);
static ngx_int_t ngx_http_simhash_rules_text(ngx_pool_t *pool, u_char *text,
    size_t len, ngx_str_t *out);
static ngx_int_t ngx_http_simhash_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_simhash_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static void ngx_http_simhash_strip_headers(ngx_http_request_t *r);
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
static ngx_int_t ngx_http_simhash_identical(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_key(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_decide(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    sh_result_t *res);
static ngx_int_t ngx_http_simhash_observe(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_escape(ngx_pool_t *pool, u_char *key,
    size_t len, ngx_str_t *out);
static ngx_int_t ngx_http_simhash_refetch(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    uint32_t ref, sh_result_t *res);
static ngx_int_t ngx_http_simhash_match(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    ngx_str_t *key, sh_result_t *res);
static ngx_int_t ngx_http_simhash_send(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_set_headers(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_add_header(ngx_http_request_t *r,
    ngx_str_t *key, u_char *value, size_t len);
static void ngx_http_simhash_skip(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_skip_e reason);
static ngx_uint_t ngx_http_simhash_drops(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static void ngx_http_simhash_account(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    ngx_uint_t locked);
static void ngx_http_simhash_cleanup(void *data);

static const sh_lookup_opts_t *ngx_http_simhash_lookup_opts(
    ngx_http_simhash_loc_conf_t *slcf, const sh_result_t *res,
    sh_lookup_opts_t *opts);
static size_t ngx_http_simhash_not_listing(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res, sh_match_t *best);
static void ngx_http_simhash_changed(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint32_t ref, ngx_log_t *log);

static ngx_http_simhash_zone_t **ngx_http_simhash_cycle_zones(
    ngx_cycle_t *cycle, ngx_uint_t *n);
static ngx_int_t ngx_http_simhash_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_simhash_init_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_exit_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_exit_master(ngx_cycle_t *cycle);

static ngx_int_t ngx_http_simhash_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_simhash_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_simhash_host_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_uint_t ngx_http_simhash_port(u_char *p, u_char *last);

static void *ngx_http_simhash_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_simhash_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_simhash_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_simhash_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static void ngx_http_simhash_merge_options(
    ngx_http_simhash_loc_conf_t *conf, ngx_http_simhash_loc_conf_t *prev);
static ngx_int_t ngx_http_simhash_compile(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_options(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *conf, sh_options_t *opts);
static ngx_int_t ngx_http_simhash_signature(ngx_conf_t *cf,
    sh_options_t *opts, ngx_str_t *sig);
static ngx_int_t ngx_http_simhash_postconfiguration(ngx_conf_t *cf);
static void ngx_http_simhash_libxml_check(ngx_conf_t *cf);
static char *ngx_http_simhash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_simhash_action(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_simhash_drop_option(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf, ngx_str_t *v);
static char *ngx_http_simhash_opt_num(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_weight(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_simhash_content(ngx_conf_t *cf, ngx_command_t *cmd,
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


static ngx_conf_num_bounds_t  ngx_http_simhash_shingle_bounds = {
    ngx_conf_check_num_bounds, 1, SH_SHINGLE_MAX
};

static ngx_conf_num_bounds_t  ngx_http_simhash_min_features_bounds = {
    ngx_conf_check_num_bounds, 0, SH_MIN_FEATURES_LIMIT
};

static ngx_conf_num_bounds_t  ngx_http_simhash_max_features_bounds = {
    ngx_conf_check_num_bounds, SH_MAX_FEATURES_FLOOR, SH_MAX_FEATURES_LIMIT
};

/* sh_block.h: what each block of text weighs */
static ngx_conf_enum_t  ngx_http_simhash_reveal_modes[] = {
    { ngx_string("off"), NGX_HTTP_SIMHASH_REVEAL_OFF },
    { ngx_string("status"), NGX_HTTP_SIMHASH_REVEAL_STATUS },
    { ngx_string("key"), NGX_HTTP_SIMHASH_REVEAL_KEY },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_simhash_dust_modes[] = {
    { ngx_string("off"), NGX_HTTP_SIMHASH_DUST_OFF },
    { ngx_string("learn"), NGX_HTTP_SIMHASH_DUST_LEARN },
    { ngx_string("on"), NGX_HTTP_SIMHASH_DUST_ON },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_simhash_content_modes[] = {
    { ngx_string("off"), SH_CONTENT_OFF },
    { ngx_string("structure"), SH_CONTENT_STRUCTURE },
    { ngx_string("auto"), SH_CONTENT_AUTO },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_simhash_commands[] = {

    { ngx_string("simhash_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_simhash_zone_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_max_held"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_simhash_main_conf_t, max_held),
      NULL },

    { ngx_string("simhash_replicate"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_simhash_replicate_directive,
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
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_simhash_action,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_loop_guard"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_loop_guard_directive,
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

    { ngx_string("simhash_reveal"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, reveal),
      &ngx_http_simhash_reveal_modes },

    { ngx_string("simhash_reveal_scope"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_set_complex_value_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, reveal_scope),
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

    { ngx_string("simhash_content"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_content,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, content),
      &ngx_http_simhash_content_modes },

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

    { ngx_string("simhash_dust"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, dust),
      &ngx_http_simhash_dust_modes },

    { ngx_string("simhash_dust_verify"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_dust_verify_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_dust_credentials"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_simhash_loc_conf_t, dust_credentials),
      NULL },

    { ngx_string("simhash_dust_rule"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_simhash_dust_rule_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_stats"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS|NGX_CONF_TAKE1,
      ngx_http_simhash_stats_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_simhash_module_ctx = {
    ngx_http_simhash_add_variables,        /* preconfiguration */
    ngx_http_simhash_postconfiguration,    /* postconfiguration */

    ngx_http_simhash_create_main_conf,     /* create main configuration */
    ngx_http_simhash_init_main_conf,       /* init main configuration */

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
    ngx_http_simhash_init_module,          /* init module */
    ngx_http_simhash_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_simhash_exit_process,         /* exit process */
    ngx_http_simhash_exit_master,          /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_str_t  ngx_http_simhash_h_hash = ngx_string("X-Simhash");
static ngx_str_t  ngx_http_simhash_h_status = ngx_string("X-Simhash-Status");
static ngx_str_t  ngx_http_simhash_h_dup = ngx_string("X-Simhash-Duplicate-Of");
static ngx_str_t  ngx_http_simhash_h_distance =
    ngx_string("X-Simhash-Distance");
static ngx_str_t  ngx_http_simhash_h_score = ngx_string("X-Simhash-Score");
static ngx_str_t  ngx_http_simhash_h_predicted =
    ngx_string("X-Simhash-Predicted");


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/*
 * 0. The request, simhash_dust on: a predicted duplicate?  GET and HEAD
 * only (and, unless simhash_dust_credentials is on, without Authorization
 * or Cookie: a personalised page is not the one another URL had).  In drop
 * mode, under the location's keys= rule, the answer is the drop status at
 * once, without the upstream; but one prediction in simhash_dust_verify
 * is fetched anyway and its decision, observed, checks the rule.  In tag
 * mode the page is fetched and the prediction rides along.
 *
 * keys=path asks that the original have the request's path: for a
 * prediction, its path once the active rules rewrote both (asked of the
 * learner only when the paths as they are differ), so /d/index.html
 * predicted from /d/ by a learned index-file rule is answered, and a
 * prediction whose document is another item's page (a fingerprint
 * duplicate of it was the last fetch of that form) is not.
 */

static ngx_int_t
ngx_http_simhash_dust_handler(ngx_http_request_t *r)
{
    ngx_str_t                       key, safe;
    ngx_uint_t                      answer;
    ngx_http_simhash_ctx_t         *ctx;
    ngx_http_simhash_event_t        ev;
    ngx_http_simhash_loc_conf_t    *slcf;
    ngx_http_simhash_prediction_t  *p;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    if (slcf->zone == NULL
        || slcf->dust != NGX_HTTP_SIMHASH_DUST_ON
        || r != r->main
        || !(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
        || ngx_http_get_module_ctx(r, ngx_http_simhash_module) != NULL
        || (!slcf->dust_credentials && ngx_http_simhash_credentials(r)))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_complex_value(r, slcf->key, &key) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (key.len == 0 || key.len > SH_KEY_MAX) {
        return NGX_DECLINED;
    }

    p = ngx_palloc(r->pool, sizeof(ngx_http_simhash_prediction_t));
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_simhash_dust_predict(r, slcf->zone, &key, p) != NGX_OK) {
        return NGX_DECLINED;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_simhash_ctx_t));
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->early = 1;
    ctx->key = key;

    if (ngx_http_simhash_rules_text(r->pool, p->rule, p->rule_len,
                                    &ctx->predicted)
        != NGX_OK
        || ngx_http_simhash_escape(r->pool, p->name.data, p->name.len,
                                   &ctx->duplicate_of)
           != NGX_OK
        || ngx_http_simhash_escape(r->pool, key.data, key.len, &safe)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_simhash_module);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash dust: predicted duplicate of \"%V\" by %V",
                   &ctx->duplicate_of, &ctx->predicted);

    answer = 0;

    if (slcf->action == NGX_HTTP_SIMHASH_DROP
        && (ngx_http_simhash_drop_allowed(slcf, &safe, &ctx->duplicate_of, 0)
            || ngx_http_simhash_dust_same_path(slcf->zone, &key, &p->name,
                                               r->connection->log)))
    {
        answer = slcf->dust_verify == 0
                 || (ngx_uint_t) ngx_random() % 1000000 >= slcf->dust_verify;
        ctx->verifying = !answer;
    }

    /* the console: the prediction made and, answered now, its event, in
     * one hold of the lock */

    ngx_http_simhash_zone_lock(slcf->zone, r->connection->log);

    ngx_http_simhash_sites_outcome_locked(slcf->zone, &key, &ctx->predicted,
                                          NGX_HTTP_SIMHASH_MADE);

    if (answer) {
        ev.key = &key;
        ev.event = NGX_HTTP_SIMHASH_EV_PREDICTED;
        ev.action = NGX_HTTP_SIMHASH_DID_PREDICTED;
        ev.original = p->name.len ? sh_store_keyhash(
                          slcf->zone->sh->store, (char *) p->name.data,
                          p->name.len) : 0;
        ev.distance = (ngx_uint_t) NGX_ERROR;
        ev.score = 0;
        ev.bytes = 0;
        ngx_http_simhash_sites_event_locked(slcf->zone, &ev);
    }

    ngx_http_simhash_zone_unlock(slcf->zone);

    if (answer) {
        ngx_http_simhash_dust_saved(slcf->zone, p, r->connection->log);

        return ngx_http_simhash_dust_answer(r, ctx, slcf);
    }

    /* fetched: the response's decision is what counts */

    ngx_str_null(&ctx->duplicate_of);

    return NGX_DECLINED;
}


/*
 * The rules of a prediction as they may go into a header: their arguments
 * are spelled as URLs spelled them, so a control byte, DEL or a byte >=
 * 0x80 is percent-encoded (a header line cannot be ended or split by a
 * site's parameter names); the spaces between rules stay.
 */

static ngx_int_t
ngx_http_simhash_rules_text(ngx_pool_t *pool, u_char *text, size_t len,
    ngx_str_t *out)
{
    u_char  *p;
    size_t   i;

    static u_char  hex[] = "0123456789ABCDEF";

    out->data = ngx_pnalloc(pool, 3 * len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;

    for (i = 0; i < len; i++) {
        if (text[i] < 0x20 || text[i] >= 0x7f) {
            *p++ = '%';
            *p++ = hex[text[i] >> 4];
            *p++ = hex[text[i] & 0xf];

        } else {
            *p++ = text[i];
        }
    }

    out->len = p - out->data;

    return NGX_OK;
}


/* Whether the request carries credentials: Authorization, Cookie. */

static ngx_uint_t
ngx_http_simhash_credentials(ngx_http_request_t *r)
{
    if (r->headers_in.authorization) {
        return 1;
    }

#if (nginx_version >= 1023000)
    return r->headers_in.cookie != NULL;
#else
    return r->headers_in.cookies.nelts != 0;
#endif
}


/*
 * The drop status with an empty body and the tags of a duplicate, sent
 * from the request phase: the upstream is never contacted.  The request is
 * finalized here; NGX_DONE stops the phases.
 */

static ngx_int_t
ngx_http_simhash_dust_answer(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf)
{
    ngx_int_t  rc;

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        return rc;
    }

    /* the header filter passes a ctx that is not early */

    ctx->early = 0;
    ctx->phase = NGX_HTTP_SIMHASH_DONE;
    ctx->status = NGX_HTTP_SIMHASH_DUPLICATE;
    ctx->action = NGX_HTTP_SIMHASH_ACT_PREDICTED;

    r->headers_out.status = slcf->drop_code;
    r->headers_out.content_length_n = 0;
    r->allow_ranges = 0;

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    ngx_http_finalize_request(r, ngx_http_send_special(r, NGX_HTTP_LAST));

    return NGX_DONE;
}


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
    ctx = ngx_http_get_module_ctx(r, ngx_http_simhash_module);

    /* a ctx made early holds a prediction only: the response is ours */

    if (slcf->zone == NULL || (ctx != NULL && !ctx->early)) {
        return ngx_http_next_header_filter(r);
    }

    /* only this module says X-Simhash-*: the crawler trusts these */

    ngx_http_simhash_strip_headers(r);

    if (r != r->main
        || r->headers_out.status != NGX_HTTP_OK
        || (r->method & NGX_HTTP_HEAD)
        || r->header_only
        || ngx_http_test_content_type(r, &slcf->types) == NULL)
    {
        ngx_http_simhash_resolve_hint(r);

        if (ctx) {
            /* a predicted request's other response: only the prediction */
            ctx->early = 0;
            ctx->phase = NGX_HTTP_SIMHASH_NONE;

            if (slcf->reveal != NGX_HTTP_SIMHASH_REVEAL_OFF
                && ngx_http_simhash_add_header(r,
                                        &ngx_http_simhash_h_predicted,
                                        ctx->predicted.data,
                                        ctx->predicted.len)
                   != NGX_OK)
            {
                return NGX_ERROR;
            }
        }

        return ngx_http_next_header_filter(r);
    }

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_simhash_ctx_t));
        if (ctx == NULL) {
            return NGX_ERROR;
        }

        ngx_http_set_ctx(r, ctx, ngx_http_simhash_module);
    }

    ctx->early = 0;
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
 * Remove every X-Simhash-* header the upstream (or anything before this
 * filter) put in the response: a crawler acts on these headers, so only
 * this module may set them, whatever an origin sends.
 */

static void
ngx_http_simhash_strip_headers(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_out.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash != 0
            && h[i].key.len >= sizeof("X-Simhash") - 1
            && ngx_strncasecmp(h[i].key.data, (u_char *) "X-Simhash",
                               sizeof("X-Simhash") - 1) == 0)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "simhash: upstream header \"%V\" removed",
                           &h[i].key);
            h[i].hash = 0;
        }
    }
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

            rc = ngx_http_simhash_hold(r, ctx, b->pos, size);

            if (rc == NGX_DECLINED) {
                /* the worker holds simhash_max_held already */
                return ngx_http_simhash_give_up(r, ctx,
                                      NGX_HTTP_SIMHASH_SKIP_TOO_LARGE, cl, 0);
            }

            if (rc != NGX_OK) {
                return NGX_ERROR;
            }

            /* consumed: the upstream may reuse the buffer */

            b->pos = b->last;

            if (b->in_file) {
                b->file_pos = b->file_last;
            }
        }

        if (b->last_buf) {
            return ngx_http_simhash_finish(r, ctx);
        }
    }

    return NGX_OK;
}


/*
 * The whole held body to the extractor, in one go at its end: a worker with
 * many responses arriving at once then parses each page at once instead of
 * interleaving them piece by piece, which keeps the parser's and the
 * feature table's memory warm (about 20% less CPU per page with 16
 * responses in flight per worker, measured when pages were fed in 64 KB
 * batches as they arrived), and an identical re-fetch is known before any
 * parsing (ngx_http_simhash_identical()).
 */

static ngx_int_t
ngx_http_simhash_feed_held(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    size_t        n;
    ngx_int_t     rc;
    ngx_chain_t  *cl;

    ctx->doc = sh_doc_new(ctx->cfg, (char *) ctx->charset);
    if (ctx->doc == NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: sh_doc_new() failed");
        ctx->reason = NGX_HTTP_SIMHASH_SKIP_ERROR;
        return NGX_DECLINED;
    }

    for (cl = ctx->held; cl; cl = cl->next) {
        n = cl->buf->last - cl->buf->pos;

        if (n) {
            rc = ngx_http_simhash_feed(r, ctx, slcf, cl->buf->pos, n);
            if (rc != NGX_OK) {
                return rc;
            }
        }
    }

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


/*
 * Copy into our buffers; the first one sized by Content-Length if known.
 * Held bodies stay until their request ends, however slowly its client
 * reads (nginx alone would spill them to temporary files): a worker holds
 * simhash_max_held bytes of them at most, beyond which NGX_DECLINED
 * before anything is copied, and the response passes unfingerprinted.
 */

static size_t  ngx_http_simhash_held_now;     /* this worker's, charged */

static ngx_int_t
ngx_http_simhash_hold(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    u_char *data, size_t len)
{
    size_t                         n, size, avail;
    ngx_buf_t                     *b;
    ngx_chain_t                   *cl;
    ngx_http_simhash_main_conf_t  *smcf;

    /* at most one buffer is allocated per call: what it will be */

    avail = ctx->buf ? (size_t) (ctx->buf->end - ctx->buf->last) : 0;

    if (len > avail) {
        size = ngx_max(len - avail, NGX_HTTP_SIMHASH_HOLD_CHUNK);

        if (ctx->held == NULL && r->headers_out.content_length_n > 0
            && (size_t) r->headers_out.content_length_n >= len)
        {
            size = (size_t) r->headers_out.content_length_n;
        }

        smcf = ngx_http_get_module_main_conf(r, ngx_http_simhash_module);

        if (ngx_http_simhash_held_now + size > smcf->max_held) {
            return NGX_DECLINED;
        }
    }

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

            ctx->charged += size;
            ngx_http_simhash_held_now += size;

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
    ngx_int_t                     rc;
    sh_result_t                   res;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    rc = ngx_http_simhash_identical(r, ctx, slcf);

    if (rc == NGX_OK) {
        return ngx_http_simhash_send(r, ctx);
    }

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    rc = ngx_http_simhash_feed_held(r, ctx, slcf);

    if (rc == NGX_DECLINED) {
        /* skipped, with ctx->reason */
        return ngx_http_simhash_give_up(r, ctx, ctx->reason, NULL, 1);
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->zlib && !ctx->zend) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: compressed body ends before its stream does");
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ENCODING);
        return ngx_http_simhash_send(r, ctx);
    }

    ngx_memzero(&res, sizeof(sh_result_t));

    if (sh_doc_finish(ctx->doc, &res) != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: sh_doc_finish() failed");
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ERROR);
        return ngx_http_simhash_send(r, ctx);
    }

    if (res.status == SH_STATUS_OK && sh_doc_whole(ctx->doc)) {
        /* its own content is links: a hub (src/sh_block.h) */
        (void) ngx_atomic_fetch_add(&slcf->zone->sh->whole_text, 1);
    }

    if (res.status == SH_STATUS_OK && res.short_content) {
        (void) ngx_atomic_fetch_add(&slcf->zone->sh->short_content, 1);
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

    case SH_STATUS_TOO_LARGE:
        /* one construct over SH_PENDING_MAX: as a body over max_body */
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_TOO_LARGE);
        break;

    case SH_STATUS_TOO_COMPLEX:
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: \"%V\" skipped: its markup is over its "
                      "work budget (%s), %O bytes",
                      &ctx->key, res.why, (off_t) res.nbytes);
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_BUDGET);
        break;

    default: /* SH_STATUS_BINARY */
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_BINARY);
        break;
    }

    return ngx_http_simhash_send(r, ctx);
}


/*
 * An identical re-fetch: the key is stored and the body is byte for byte
 * the one its fingerprint was taken from (a 64-bit digest of the body as
 * received, before inflating).  Then the answer is "unchanged" at distance
 * 0 with the stored fingerprint, and nothing is parsed: most of a recrawl
 * is pages that did not change.  NGX_OK: answered; NGX_DECLINED: parse it.
 */

static ngx_int_t
ngx_http_simhash_identical(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    uint32_t                   ref;
    uint64_t                   hash;
    ngx_int_t                  rc;
    XXH3_state_t               st;
    ngx_chain_t               *cl;
    const sh_store_doc_t      *doc;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    rc = ngx_http_simhash_key(r, ctx, slcf);
    if (rc != NGX_OK) {
        return rc;
    }

    (void) XXH3_64bits_reset(&st);

    for (cl = ctx->held; cl; cl = cl->next) {
        (void) XXH3_64bits_update(&st, cl->buf->pos,
                                  cl->buf->last - cl->buf->pos);
    }

    /* 0 means "unknown" in the zone and in snapshots */
    ctx->digest = XXH3_64bits_digest(&st);
    ctx->digest += (ctx->digest == 0);

    zone = slcf->zone;
    sh = zone->sh;

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    ref = ngx_http_simhash_zone_key(zone, &ctx->key);
    doc = sh_store_doc(sh->store, ref);

    if (doc == NULL
        || doc->digest != ctx->digest
        || sh_index_get(sh->index, ref, &hash) != 0)
    {
        ngx_http_simhash_zone_unlock(zone);
        return NGX_DECLINED;
    }

    if (slcf->insert) {
        ngx_http_simhash_zone_write(zone);
        (void) sh_store_touch(sh->store, ref);
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
    }

    ctx->rep = doc->keyhash;
    rc = ngx_http_simhash_observe(r, ctx, slcf);

    ctx->status = NGX_HTTP_SIMHASH_UNCHANGED;
    ctx->hash = hash;
    ctx->has_hash = 1;
    ctx->distance = 0;
    ctx->score = 0;
    ctx->has_distance = 1;

    /* the console's accounting in this hold, as a decision's */
    ngx_http_simhash_account(r, ctx, slcf, 1);

    ngx_http_simhash_zone_unlock(zone);

    if (rc) {
        ngx_http_simhash_dust_log(zone, r->connection->log);
    }

    (void) ngx_atomic_fetch_add(&sh->responses[ctx->status], 1);
    (void) ngx_atomic_fetch_add(&sh->identical, 1);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: %016uxL unchanged, identical body", hash);

    return NGX_OK;
}


/*
 * simhash_key for this response, once: NGX_OK; NGX_DECLINED when it cannot
 * be stored (empty, or over SH_KEY_MAX: the page is then skipped).
 */

static ngx_int_t
ngx_http_simhash_key(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    if (ngx_http_complex_value(r, slcf->key, &ctx->key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->key.len == 0 || ctx->key.len > SH_KEY_MAX) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}



/*
 * A stored key as it may go into a header, a variable or a log line: the
 * bytes of the key with every control byte, space, DEL and byte >= 0x80
 * percent-encoded (%0D, %20, %7F, %C3...), so that whatever a request
 * put in the key (a decoded $uri may hold CR LF) cannot end the header
 * line or inject another one.  Other bytes, '%' included, are kept: a key
 * made from $request_uri is a URL already and comes out unchanged.
 */

static ngx_int_t
ngx_http_simhash_escape(ngx_pool_t *pool, u_char *key, size_t len,
    ngx_str_t *out)
{
    u_char       *p;
    size_t        i, n;

    static u_char  hex[] = "0123456789ABCDEF";

    n = 0;

    for (i = 0; i < len; i++) {
        n += (key[i] <= 0x20 || key[i] >= 0x7f) ? 3 : 1;
    }

    out->data = ngx_pnalloc(pool, n);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;

    for (i = 0; i < len; i++) {
        if (key[i] <= 0x20 || key[i] >= 0x7f) {
            *p++ = '%';
            *p++ = hex[key[i] >> 4];
            *p++ = hex[key[i] & 0xf];

        } else {
            *p++ = key[i];
        }
    }

    out->len = n;

    return NGX_OK;
}


/*
 * The index, under the zone's lock (module/ngx_http_simhash_zone.c):
 *   the key is stored   -> unchanged (the zone's match rule accepts the
 *                          stored fingerprint) or changed (it is
 *                          replaced); never a duplicate of itself;
 *   else a match        -> duplicate of the closest match (the lowest
 *                          score under the weighted rule);
 *   else                -> new, and inserted (simhash_insert on).
 * Duplicates are not inserted: the index keeps one representative per
 * cluster, the first one seen.
 */

static ngx_int_t
ngx_http_simhash_decide(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res)
{
    uint32_t                  ref;
    ngx_int_t                 rc, changes;
    ngx_http_simhash_zone_t  *zone;

    zone = slcf->zone;

    ctx->hash = res->hash;
    ctx->has_hash = 1;

    if (ctx->key.len == 0 || ctx->key.len > SH_KEY_MAX) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: key of %uz bytes not stored", ctx->key.len);
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ERROR);
        return NGX_OK;
    }

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    ref = ngx_http_simhash_zone_key(zone, &ctx->key);

    rc = ref != SH_NOREF ? ngx_http_simhash_refetch(r, ctx, slcf, ref, res)
                         : NGX_DECLINED;

    if (rc == NGX_DECLINED) {
        rc = ngx_http_simhash_match(r, ctx, slcf, &ctx->key, res);
    }

    changes = (rc == NGX_OK) ? ngx_http_simhash_observe(r, ctx, slcf) : 0;

    if (rc == NGX_OK) {
        /* the console's accounting in this hold: a response takes the
         * lock once (BENCHMARKS.md, bench/17-sites-lock.sh) */
        ngx_http_simhash_account(r, ctx, slcf, 1);
    }

    ngx_http_simhash_zone_unlock(zone);

    if (rc != NGX_OK) {
        return rc;
    }

    if (changes) {
        ngx_http_simhash_dust_log(zone, r->connection->log);
    }

    (void) ngx_atomic_fetch_add(&zone->sh->responses[ctx->status], 1);

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: %016uxL %V distance:%ui \"%V\"",
                   res->hash, &ngx_http_simhash_status_names[ctx->status],
                   ctx->distance, &ctx->duplicate_of);

    return NGX_OK;
}


/*
 * Under the lock: the decision, to the DUST learner (simhash_dust learn or
 * on).  The URL is the document key; a GET's only: the key names what a
 * GET of it returns.  Returns the number of rule changes it caused.
 */

static ngx_int_t
ngx_http_simhash_observe(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    if (slcf->dust == NGX_HTTP_SIMHASH_DUST_OFF
        || r->method != NGX_HTTP_GET)
    {
        return 0;
    }

    return ngx_http_simhash_dust_observe(slcf->zone, &ctx->key, ctx->rep);
}


/*
 * A re-fetch of a document the zone holds, under the lock: unchanged (it is
 * made the newest) or changed (its fingerprint is replaced).  NGX_DECLINED:
 * the document turned out not to be there after all.
 */

static ngx_int_t
ngx_http_simhash_refetch(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, uint32_t ref, sh_result_t *res)
{
    int                        same;
    unsigned                   h;
    uint64_t                   old;
    sh_store_doc_t             d;
    sh_match_opts_t            mo;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    zone = slcf->zone;
    sh = zone->sh;

    if (sh_index_get(sh->index, ref, &old) != 0) {
        /* cannot happen: the key table holds stored documents only */
        return NGX_DECLINED;
    }

    /* the rule of a lookup, the new page as the query */

    sh_lookup_match_opts(&slcf->lookup, &mo);
    same = sh_match_pair(&mo, res->hash, res->weights, old, &h, &ctx->score);

    ctx->distance = h;
    ctx->has_distance = 1;

    ctx->status = same ? NGX_HTTP_SIMHASH_UNCHANGED
                       : NGX_HTTP_SIMHASH_CHANGED;

    /* the URL is its own document, unchanged or not */
    ctx->rep = sh_store_doc(sh->store, ref)->keyhash;

    if (!slcf->insert) {
        return NGX_OK;
    }

    /*
     * unchanged: the document is made the newest, and keeps its
     * fingerprint (small edits do not drift it away from its cluster);
     * changed: the fingerprint is replaced.  Either way the digest is the
     * new body's, so that the next identical fetch needs no parse.
     */

    ngx_http_simhash_zone_write(zone);

    d = *sh_store_doc(sh->store, ref);
    d.digest = ctx->digest;

    if (ctx->status == NGX_HTTP_SIMHASH_UNCHANGED) {
        sh_store_set(sh->store, ref, &d);
        (void) sh_store_touch(sh->store, ref);

    } else {
        d.sketches = res->sketches;
        sh_store_set(sh->store, ref, &d);
        (void) sh_store_update(sh->store, ref, res->hash);

        ngx_http_simhash_changed(zone, &ctx->key, ref, r->connection->log);
    }

    (void) ngx_atomic_fetch_add(&sh->generation, 1);

    return NGX_OK;
}


/*
 * A key the zone does not hold, under the lock: a duplicate of the closest
 * match, else new and stored.  Duplicates are not stored: the index keeps
 * one representative per cluster, the first one seen.
 */

static ngx_int_t
ngx_http_simhash_match(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, ngx_str_t *key, sh_result_t *res)
{
    size_t                     n;
    uint32_t                   ref;
    ngx_str_t                  safe, name;
    sh_match_t                 match;
    sh_lookup_opts_t           opts;
    sh_lookup_stats_t          st;
    const sh_store_doc_t      *doc;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;
    u_char                     id[NGX_HTTP_SIMHASH_NAME_MAX];

    zone = slcf->zone;
    sh = zone->sh;

    n = sh_index_lookup(sh->index, res->hash, res->weights,
                        ngx_http_simhash_lookup_opts(slcf, res, &opts),
                        &match, 1, &st);

    doc = n ? sh_store_doc(sh->store, match.ref) : NULL;

    if (doc && sh_sketch_veto(&doc->sketches, &res->sketches)) {
        n = ngx_http_simhash_not_listing(zone, slcf, res, &match);
        doc = n ? sh_store_doc(sh->store, match.ref) : NULL;
    }

    if (doc) {
        ctx->status = NGX_HTTP_SIMHASH_DUPLICATE;
        ctx->rep = doc->keyhash;
        ctx->distance = match.distance;
        ctx->score = match.score;
        ctx->has_distance = 1;

        /* copied while locked: the document may be evicted right after */

        ngx_http_simhash_zone_name(zone, match.ref, &name, id);

        return ngx_http_simhash_escape(r->pool, name.data, name.len,
                                       &ctx->duplicate_of);
    }

    ctx->status = NGX_HTTP_SIMHASH_NEW;
    ctx->rep = sh_store_keyhash(sh->store, (char *) key->data, key->len);

    if (slcf->insert) {
        ngx_http_simhash_zone_write(zone);

        ref = ngx_http_simhash_zone_store(zone, key, res->hash, ctx->digest,
                                          0, &res->sketches);

        if (ref != SH_NOREF) {
            ngx_http_simhash_changed(zone, key, ref, r->connection->log);

        } else if (ngx_http_simhash_escape(r->pool, key->data, key->len,
                                           &safe)
                   == NGX_OK)
        {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "simhash: no room for \"%V\" in zone \"%V\"",
                          &safe, &zone->name);
        }
    }

    return NGX_OK;
}


/*
 * The location's lookup options for this page: a short hub (a page whose
 * own content is a few dozen words, mostly links) matches only within the
 * classic radius (sh_match_short, src/sh_match.h).  The stored page's own
 * flag is not kept: the rule is applied to the page being fetched.
 */

static const sh_lookup_opts_t *
ngx_http_simhash_lookup_opts(ngx_http_simhash_loc_conf_t *slcf,
    const sh_result_t *res, sh_lookup_opts_t *opts)
{
    *opts = slcf->lookup;

    if (sh_result_short_hub(res) && opts->h > SH_SHORT_H) {
        opts->h = SH_SHORT_H;
    }

    return opts;
}


/*
 * The closest match was vetoed: the stored page and this one are two
 * listings of one template (the same markup, other link words: see
 * src/sh_sketch.h), not duplicates.  Another stored page may still match:
 * the closest of up to NGX_HTTP_SIMHASH_CANDIDATES matches that is not a
 * listing of this one.  Returns 1 with it in *best, or 0.  Under the lock.
 */

static size_t
ngx_http_simhash_not_listing(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res, sh_match_t *best)
{
    size_t                     n, i, found;
    const sh_store_doc_t      *doc;
    sh_match_t                 all[NGX_HTTP_SIMHASH_CANDIDATES];
    sh_lookup_opts_t           opts;
    sh_lookup_stats_t          st;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    (void) ngx_atomic_fetch_add(&sh->listings, 1);

    (void) ngx_http_simhash_lookup_opts(slcf, res, &opts);
    opts.mode = SH_MATCH_ALL;
    opts.learn = 0;             /* the first lookup taught the learner */

    n = sh_index_lookup(sh->index, res->hash, res->weights, &opts, all,
                        NGX_HTTP_SIMHASH_CANDIDATES, &st);
    n = ngx_min(n, NGX_HTTP_SIMHASH_CANDIDATES);
    found = 0;

    for (i = 0; i < n; i++) {
        doc = sh_store_doc(sh->store, all[i].ref);

        if (doc == NULL || sh_sketch_veto(&doc->sketches, &res->sketches)) {
            continue;
        }

        if (!found
            || (opts.rule == SH_RULE_WEIGHTED ? all[i].score < best->score
                                              : all[i].distance
                                                < best->distance))
        {
            *best = all[i];
            found = 1;
        }
    }

    return found;
}


/*
 * Under the lock, after this node stored a new document or a new version of
 * one: the zone dates the version, and a replicated zone publishes it.
 */

static void
ngx_http_simhash_changed(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    uint32_t ref, ngx_log_t *log)
{
    uint64_t  time;

    time = ngx_http_simhash_zone_changed(zone, ref);

    ngx_http_simhash_replicate_publish(zone, key, ref, time, log);
}


/* Header (with the tags, or the drop status) and the held body. */

static ngx_int_t
ngx_http_simhash_send(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    ngx_int_t                     rc;
    ngx_buf_t                    *b;
    ngx_uint_t                    drop;
    ngx_chain_t                  *out, *cl;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    ctx->phase = NGX_HTTP_SIMHASH_DONE;

    drop = ngx_http_simhash_drops(r, ctx, slcf);

    if (drop) {
        ctx->action = ctx->verifying ? NGX_HTTP_SIMHASH_ACT_VERIFIED
                                     : NGX_HTTP_SIMHASH_ACT_DROPPED;
    }

    /* a response decided without a hold of the lock (skipped) */

    if (!ctx->accounted) {
        ngx_http_simhash_account(r, ctx, slcf, 0);
    }

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (drop) {
        /* the response becomes CODE with an empty body; headers stay */

        r->headers_out.status = slcf->drop_code;
        r->headers_out.status_line.len = 0;

        ngx_http_clear_content_length(r);
        ngx_http_clear_accept_ranges(r);
        ngx_http_clear_etag(r);
        ngx_http_clear_last_modified(r);   /* wget would set the mtime */

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


/*
 * simhash_reveal: what this response (its headers and the variables, which
 * a configuration may put into headers) tells about the documents of
 * others.  "status" hides the original's key and the distance, "off" the
 * status too; simhash_reveal_scope lets the key out only when it begins
 * with the scope's value for this request (an empty value: never).
 *
 * It only sets what to leave out: the outcome itself (the original's key,
 * the distance) stays in the ctx, since the drop decision and the DUST
 * learner need it whatever the client may see.  Deciding on what is shown
 * once crashed every dropped duplicate under "status" (issue 31).
 */

static ngx_int_t
ngx_http_simhash_reveal(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    ngx_str_t                     scope;
    ngx_http_simhash_loc_conf_t  *slcf;

    if (ctx->revealed) {
        return NGX_OK;
    }

    ctx->revealed = 1;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    if (slcf->reveal == NGX_HTTP_SIMHASH_REVEAL_OFF) {
        ctx->hide_status = 1;
    }

    if (slcf->reveal != NGX_HTTP_SIMHASH_REVEAL_KEY) {
        ctx->hide_original = 1;
        return NGX_OK;
    }

    if (slcf->reveal_scope == NULL || ctx->duplicate_of.len == 0) {
        return NGX_OK;
    }

    if (ngx_http_complex_value(r, slcf->reveal_scope, &scope) != NGX_OK) {
        return NGX_ERROR;
    }

    if (scope.len == 0 || scope.len > ctx->duplicate_of.len
        || ngx_strncmp(ctx->duplicate_of.data, scope.data, scope.len) != 0)
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "simhash: duplicate out of the reveal scope");

        ctx->hide_original = 1;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_set_headers(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx)
{
    u_char  buf[NGX_INT64_LEN + 1], *p;

    if (ngx_http_simhash_reveal(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->action == NGX_HTTP_SIMHASH_ACT_NONE) {
        ctx->action = ctx->verifying ? NGX_HTTP_SIMHASH_ACT_VERIFIED
                                     : NGX_HTTP_SIMHASH_ACT_PASSED;
    }

    if (ctx->has_hash && ctx->status != NGX_HTTP_SIMHASH_SKIPPED) {
        p = ngx_sprintf(buf, "%016uxL", ctx->hash);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_hash, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (!ctx->hide_status
        && ngx_http_simhash_add_header(r, &ngx_http_simhash_h_status,
                              ngx_http_simhash_status_names[ctx->status].data,
                              ngx_http_simhash_status_names[ctx->status].len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* a prediction tells the status: hidden with it */

    if (ctx->predicted.len && !ctx->hide_status
        && ngx_http_simhash_add_header(r, &ngx_http_simhash_h_predicted,
                                       ctx->predicted.data,
                                       ctx->predicted.len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ctx->hide_original) {
        return NGX_OK;
    }

    if (ctx->duplicate_of.len > NGX_HTTP_SIMHASH_HEADER_MAX) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: the key of the duplicate is %uz bytes, "
                      "over %d: no X-Simhash-Duplicate-Of header",
                      ctx->duplicate_of.len, NGX_HTTP_SIMHASH_HEADER_MAX);

    } else if (ctx->duplicate_of.len) {
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

        p = ngx_http_simhash_score(buf, ctx->score);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_score, buf,
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


/*
 * Whether the response is dropped: decided once, on the original, before
 * simhash_reveal hides anything (in the decision's hold of the lock, for
 * the console, or when the response is sent).
 */

static ngx_uint_t
ngx_http_simhash_drops(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    ngx_str_t  key;

    if (!ctx->drop_known) {
        ctx->drop = ctx->status == NGX_HTTP_SIMHASH_DUPLICATE
                    && slcf->action == NGX_HTTP_SIMHASH_DROP
                    && ngx_http_simhash_escape(r->pool, ctx->key.data,
                                               ctx->key.len, &key)
                       == NGX_OK
                    && ngx_http_simhash_drop_allowed(slcf, &key,
                                                     &ctx->duplicate_of,
                                                     ctx->score);
        ctx->drop_known = 1;
    }

    return ctx->drop;
}


/*
 * The decision, for the console (ngx_http_simhash_sites.c): its rate, its
 * site, and "why?" later; for a prediction fetched to check it, what it
 * came to.  `locked`: in the decision's hold of the zone's lock (no second
 * hold), else the accounting takes it.  A skipped response may have been
 * given up before its key was made: it is made here, without changing the
 * ctx.
 */

static void
ngx_http_simhash_account(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, ngx_uint_t locked)
{
    ngx_str_t                 key;
    ngx_uint_t                drop, what;
    ngx_http_simhash_event_t  ev;

    ctx->accounted = 1;
    drop = ngx_http_simhash_drops(r, ctx, slcf);
    key = ctx->key;

    if (key.len == 0
        && ngx_http_complex_value(r, slcf->key, &key) != NGX_OK)
    {
        ngx_str_null(&key);
    }

    ev.key = &key;
    ev.event = ctx->status;
    ev.action = drop ? NGX_HTTP_SIMHASH_DID_DROPPED
                     : NGX_HTTP_SIMHASH_DID_PASSED;
    ev.original = ctx->status == NGX_HTTP_SIMHASH_DUPLICATE ? ctx->rep : 0;
    ev.distance = ctx->has_distance ? ctx->distance : (ngx_uint_t) NGX_ERROR;
    ev.score = ctx->has_distance ? ctx->score : 0;
    ev.bytes = drop ? ctx->held_bytes : 0;

    /* a prediction fetched to check it: what its rules came to */

    what = ctx->status == NGX_HTTP_SIMHASH_DUPLICATE
           ? NGX_HTTP_SIMHASH_VERIFIED : NGX_HTTP_SIMHASH_FAILED;

    if (locked) {
        ngx_http_simhash_sites_event_locked(slcf->zone, &ev);

        if (ctx->verifying && ctx->status != NGX_HTTP_SIMHASH_SKIPPED) {
            ngx_http_simhash_sites_outcome_locked(slcf->zone, &key,
                                                  &ctx->predicted, what);
        }

        return;
    }

    ngx_http_simhash_sites_event(slcf->zone, &ev, r->connection->log);

    if (ctx->verifying && ctx->status != NGX_HTTP_SIMHASH_SKIPPED) {
        ngx_http_simhash_sites_outcome(slcf->zone, &key, &ctx->predicted,
                                       what, r->connection->log);
    }
}


/* Client abort, upstream error or normal end: free what the library holds. */

static void
ngx_http_simhash_cleanup(void *data)
{
    ngx_http_simhash_ctx_t  *ctx = data;

    ngx_http_simhash_held_now -= ctx->charged;
    ctx->charged = 0;

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
 * $simhash, $simhash_status, $simhash_duplicate_of, $simhash_distance,
 * $simhash_score: what the module found; $simhash_host: part of the
 * default key
 */

enum {
    NGX_HTTP_SIMHASH_VAR_HASH = 0,
    NGX_HTTP_SIMHASH_VAR_STATUS,
    NGX_HTTP_SIMHASH_VAR_DUP,
    NGX_HTTP_SIMHASH_VAR_DISTANCE,
    NGX_HTTP_SIMHASH_VAR_SCORE,
    NGX_HTTP_SIMHASH_VAR_PREDICTED,
    NGX_HTTP_SIMHASH_VAR_ACTION
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

    { ngx_string("simhash_score"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_SCORE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_predicted"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_PREDICTED, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_action"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_ACTION, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_host"), NULL, ngx_http_simhash_host_variable,
      0, 0, 0 },

    { ngx_string("simhash_request_scheme"), NULL,
      ngx_http_simhash_request_scheme_variable, 0, 0, 0 },

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

    if (data == NGX_HTTP_SIMHASH_VAR_PREDICTED) {
        /* known before the response: the rules, "" when none */
        v->len = ctx ? ctx->predicted.len : 0;
        v->data = ctx ? ctx->predicted.data : (u_char *) "";
        v->valid = 1;
        v->no_cacheable = 1;
        v->not_found = 0;
        return NGX_OK;
    }

    if (ctx == NULL || ctx->phase == NGX_HTTP_SIMHASH_READ
        || ctx->phase == NGX_HTTP_SIMHASH_NONE)
    {
        v->not_found = 1;
        return NGX_OK;
    }

    /* the variables tell no more than the headers */

    if (ngx_http_simhash_reveal(r, ctx) != NGX_OK) {
        return NGX_ERROR;
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
        if (ctx->hide_status) {
            v->not_found = 1;
            return NGX_OK;
        }

        v->len = ngx_http_simhash_status_names[ctx->status].len;
        v->data = ngx_http_simhash_status_names[ctx->status].data;
        break;

    case NGX_HTTP_SIMHASH_VAR_ACTION:

        /* a drop or a prediction tells the status: hidden with it */

        if (ctx->hide_status || ctx->action == NGX_HTTP_SIMHASH_ACT_NONE) {
            v->not_found = 1;
            return NGX_OK;
        }

        v->len = ngx_http_simhash_action_names[ctx->action].len;
        v->data = ngx_http_simhash_action_names[ctx->action].data;
        break;

    case NGX_HTTP_SIMHASH_VAR_DUP:
        if (ctx->duplicate_of.len == 0 || ctx->hide_original) {
            v->not_found = 1;
            return NGX_OK;
        }

        v->len = ctx->duplicate_of.len;
        v->data = ctx->duplicate_of.data;
        break;

    default: /* NGX_HTTP_SIMHASH_VAR_DISTANCE, _SCORE */
        if (!ctx->has_distance || ctx->hide_original) {
            v->not_found = 1;
            return NGX_OK;
        }

        p = ngx_pnalloc(r->pool, NGX_INT_T_LEN + 6);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (data == NGX_HTTP_SIMHASH_VAR_SCORE) {
            v->len = ngx_http_simhash_score(p, ctx->score) - p;

        } else {
            v->len = ngx_sprintf(p, "%ui", ctx->distance) - p;
        }

        v->data = p;
        break;
    }

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * $simhash_host: $host, followed by ":PORT" when the request names a port
 * other than its scheme's default -- the authority of the URL the client
 * asked for, so that the default key tells http://h:8080/a from
 * http://h:8081/a (two origins on one host).  The port comes from where
 * $host comes from: the request line of an absolute-URI request (what a
 * forward proxy receives), else the Host header (a reverse proxy).
 *
 * Not $http_host: the Host header as the client wrote it (any case, with
 * or without a default port; a forward proxy's client may even name
 * another host there), nor $server_port, the port this proxy listens on.
 * The host part is nginx's validated, lowercased $host and the port part
 * digits only, so the value is as safe in a response header as $host.
 */

static ngx_int_t
ngx_http_simhash_host_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                    *p, *last;
    size_t                     len;
    ngx_str_t                  host;
    ngx_uint_t                 port, default_port;
    ngx_http_core_srv_conf_t  *cscf;

    /* $host */

    if (r->headers_in.server.len) {
        host = r->headers_in.server;

    } else {
        cscf = ngx_http_get_module_srv_conf(r, ngx_http_core_module);
        host = cscf->server_name;
    }

    port = 0;
    default_port = 80;

#if (NGX_HTTP_SSL)
    if (r->connection->ssl) {
        default_port = 443;
    }
#endif

    if (r->host_start && r->host_end) {

        /*
         * "GET http://host:port/path": the parser allows only digits
         * between the ':' after host_end and the '/', '?' or ' ' that ends
         * them.  (r->port_end is not used: nginx 1.22 leaves it behind
         * when it moves the request line to a large header buffer.)
         */

        if (r->schema_start && r->schema_end) {
            len = r->schema_end - r->schema_start;

            if (len == 5
                && ngx_strncasecmp(r->schema_start, (u_char *) "https", 5)
                   == 0)
            {
                default_port = 443;

            } else if (len != 4
                       || ngx_strncasecmp(r->schema_start,
                                          (u_char *) "http", 4) != 0)
            {
                default_port = 0;
            }
        }

        if (*r->host_end == ':') {
            for (last = r->host_end + 1; *last >= '0' && *last <= '9'; last++)
            {
                /* void */
            }

            port = ngx_http_simhash_port(r->host_end + 1, last);
        }

    } else if (r->headers_in.server.len && r->headers_in.host) {

        /* "Host: host:port", "[::1]:port": digits after the last ':' */

        last = r->headers_in.host->value.data
               + r->headers_in.host->value.len;

        for (p = last; p > r->headers_in.host->value.data; p--) {
            if (p[-1] < '0' || p[-1] > '9') {
                break;
            }
        }

        if (p > r->headers_in.host->value.data && p[-1] == ':') {
            port = ngx_http_simhash_port(p, last);
        }
    }

    if (port == 0 || port == default_port) {
        v->len = host.len;
        v->data = host.data;

    } else {
        p = ngx_pnalloc(r->pool, host.len + sizeof(":65535") - 1);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "%V:%ui", &host, port) - p;
        v->data = p;
    }

    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


/* The port of the digits [p, last), or 0 when there is none or it is out
 * of range. */

static ngx_uint_t
ngx_http_simhash_port(u_char *p, u_char *last)
{
    ngx_int_t  port;

    if (last - p > 5) {
        return 0;
    }

    port = ngx_atoi(p, last - p);

    return (port < 1 || port > 65535) ? 0 : (ngx_uint_t) port;
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

    smcf->max_held = NGX_CONF_UNSET_SIZE;

    if (ngx_array_init(&smcf->zones, cf->pool, 4,
                       sizeof(ngx_http_simhash_zone_t *))
        != NGX_OK
        || ngx_array_init(&smcf->cfgs, cf->pool, 4,
                          sizeof(ngx_http_simhash_cfg_t))
           != NGX_OK
        || ngx_array_init(&smcf->replicates, cf->pool, 1,
                          sizeof(ngx_http_simhash_replicate_t *))
           != NGX_OK)
    {
        return NULL;
    }

    sh_library_init();

    return smcf;
}


/* simhash_max_held: 64m, room for 64 responses of the default max_body */

static char *
ngx_http_simhash_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_simhash_main_conf_t  *smcf = conf;

    ngx_conf_init_size_value(smcf->max_held, 64 * 1024 * 1024);

    return NGX_CONF_OK;
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
    conf->drop_keys = NGX_CONF_UNSET_UINT;
    conf->drop_score = NGX_CONF_UNSET_UINT;
    conf->loop_guard = NGX_CONF_UNSET_PTR;
    conf->max_body = NGX_CONF_UNSET_SIZE;
    conf->probes = NGX_CONF_UNSET_UINT;
    conf->recall = NGX_CONF_UNSET_UINT;
    conf->insert = NGX_CONF_UNSET;
    conf->reveal = NGX_CONF_UNSET_UINT;
    conf->reveal_scope = NGX_CONF_UNSET_PTR;
    conf->volatility_set = NGX_CONF_UNSET;
    conf->shingle = NGX_CONF_UNSET;
    conf->min_features = NGX_CONF_UNSET;
    conf->max_features = NGX_CONF_UNSET;
    conf->word_weight = NGX_CONF_UNSET;
    conf->shingle_weight = NGX_CONF_UNSET;
    conf->content = NGX_CONF_UNSET_UINT;
    conf->dust = NGX_CONF_UNSET_UINT;
    conf->dust_verify = NGX_CONF_UNSET_UINT;
    conf->dust_credentials = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_simhash_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_simhash_loc_conf_t *prev = parent;
    ngx_http_simhash_loc_conf_t *conf = child;

    ngx_uint_t                         own_action;
    ngx_http_simhash_main_conf_t      *smcf;
    ngx_http_compile_complex_value_t   ccv;

    /* $simhash_host: $host with a port that is not the scheme's default */
    static ngx_str_t  default_key = ngx_string(
                      "$simhash_request_scheme://$simhash_host$request_uri");

    if (conf->enable == NGX_CONF_UNSET) {
        conf->enable = prev->enable;
        conf->zone_name = prev->zone_name;
        conf->zone_where = prev->zone_where;
    }

    if (conf->enable == NGX_CONF_UNSET) {
        conf->enable = 0;
    }

    own_action = (conf->action != NGX_CONF_UNSET_UINT);

    ngx_conf_merge_uint_value(conf->action, prev->action,
                              NGX_HTTP_SIMHASH_TAG);
    ngx_conf_merge_uint_value(conf->drop_code, prev->drop_code,
                              NGX_HTTP_NO_CONTENT);

    /* drop's options come with the simhash_action that set them: a level
     * with its own simhash_action has its own (or their defaults) */
    if (!own_action) {
        conf->drop_keys = prev->drop_keys;
        conf->drop_score = prev->drop_score;    /* UNSET: no cap */
    }

    if (conf->drop_keys == NGX_CONF_UNSET_UINT) {
        conf->drop_keys = NGX_HTTP_SIMHASH_DROP_KEYS_PATH;
    }

    ngx_conf_merge_ptr_value(conf->loop_guard, prev->loop_guard, NULL);

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
    ngx_conf_merge_uint_value(conf->reveal, prev->reveal,
                              NGX_HTTP_SIMHASH_REVEAL_KEY);
    ngx_conf_merge_ptr_value(conf->reveal_scope, prev->reveal_scope, NULL);

    /* simhash_dust_verify: one prediction in 16 fetched anyway */
    ngx_conf_merge_uint_value(conf->dust, prev->dust,
                              NGX_HTTP_SIMHASH_DUST_OFF);
    ngx_conf_merge_uint_value(conf->dust_verify, prev->dust_verify, 62500);
    ngx_conf_merge_value(conf->dust_credentials, prev->dust_credentials, 0);

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

    ngx_http_simhash_merge_options(conf, prev);

    if (ngx_http_simhash_stats_resolve(cf, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (!conf->enable) {
        return NGX_CONF_OK;
    }

    /* the zone: declared anywhere in http{}, so resolved only now */

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);

    conf->zone = ngx_http_simhash_zone_find(smcf, &conf->zone_name);

    if (conf->zone == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "unknown simhash zone \"%V\" in %V",
                      &conf->zone_name, &conf->zone_where);
        return NGX_CONF_ERROR;
    }

    if (conf->dust != NGX_HTTP_SIMHASH_DUST_OFF && conf->zone->dust == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash_dust needs a DUST learner: simhash zone "
                      "\"%V\" has no dust=SIZE, in %V", &conf->zone->name,
                      &conf->zone_where);
        return NGX_CONF_ERROR;
    }

    sh_lookup_opts_init(&conf->lookup);
    conf->lookup.rule = conf->zone->rule;
    conf->lookup.h = conf->zone->distance;
    conf->lookup.threshold = conf->zone->threshold;
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


/* Extraction options: unset values inherit, sh_options_init decides. */

static void
ngx_http_simhash_merge_options(ngx_http_simhash_loc_conf_t *conf,
    ngx_http_simhash_loc_conf_t *prev)
{
    ngx_conf_merge_value(conf->shingle, prev->shingle, NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->min_features, prev->min_features,
                         NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->max_features, prev->max_features,
                         NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->word_weight, prev->word_weight,
                         NGX_CONF_UNSET);
    ngx_conf_merge_value(conf->shingle_weight, prev->shingle_weight,
                         NGX_CONF_UNSET);
    ngx_conf_merge_uint_value(conf->content, prev->content,
                              NGX_CONF_UNSET_UINT);

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
    uint64_t                       digest;
    uint32_t                       version;
    ngx_str_t                      sig;
    ngx_uint_t                     i;
    sh_options_t                   opts;
    sh_config_t                   *cfg;
    ngx_pool_cleanup_t            *cln;
    ngx_http_simhash_cfg_t        *c;
    ngx_http_simhash_zone_t       *zone;
    ngx_http_simhash_main_conf_t  *smcf;

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);

    if (ngx_http_simhash_options(cf, conf, &opts) != NGX_OK
        || ngx_http_simhash_signature(cf, &opts, &sig) != NGX_OK)
    {
        return NGX_ERROR;
    }

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

    /* one zone, one hash key and one extraction: fingerprints of the
       others would not be comparable with what it holds */

    zone = conf->zone;
    digest = sh_config_seed_digest(cfg);
    version = sh_config_version(cfg);

    if (zone->seed_set && zone->seed_digest != digest) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash zone \"%V\" needs the same simhash_seed "
                      "everywhere (it has another one at %V) in %V",
                      &zone->name, &zone->seed_where, &conf->zone_where);
        return NGX_ERROR;
    }

    if (zone->seed_set && zone->version != version) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash zone \"%V\" needs the same extraction "
                      "options everywhere: extraction version %08xD here, "
                      "%08xD at %V (give each set of options its own zone) "
                      "in %V", &zone->name, version, zone->version,
                      &zone->seed_where, &conf->zone_where);
        return NGX_ERROR;
    }

    zone->seed_set = 1;
    zone->seed_digest = digest;
    zone->version = version;
    zone->keyed = sh_config_keyed(cfg);

    if (sh_config_derive_key(cfg, "stream mac", zone->mac_key,
                             sizeof(zone->mac_key))
        != 0
        || sh_config_derive_key(cfg, SH_STORE_KEY_PURPOSE, zone->key_secret,
                                sizeof(zone->key_secret))
           != 0
        || sh_config_derive_key(cfg, "dust", zone->dust_secret,
                                sizeof(zone->dust_secret))
           != 0)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash zone \"%V\": cannot derive the stream key",
                      &zone->name);
        return NGX_ERROR;
    }
    zone->seed_where = conf->zone_where;

    return NGX_OK;
}


/* The library's options from the merged directives. */

static ngx_int_t
ngx_http_simhash_options(ngx_conf_t *cf, ngx_http_simhash_loc_conf_t *conf,
    sh_options_t *opts)
{
    ngx_str_t   *pat;
    ngx_uint_t   i;

    sh_options_init(opts);

    if (conf->shingle != NGX_CONF_UNSET) {
        opts->shingle = (unsigned) conf->shingle;
    }

    if (conf->min_features != NGX_CONF_UNSET) {
        opts->min_features = (unsigned) conf->min_features;
    }

    if (conf->max_features != NGX_CONF_UNSET) {
        opts->max_features = (unsigned) conf->max_features;
    }

    if (conf->word_weight != NGX_CONF_UNSET) {
        opts->weight[SH_FEAT_WORD] = (float) conf->word_weight / 1000;
    }

    if (conf->shingle_weight != NGX_CONF_UNSET) {
        opts->weight[SH_FEAT_SHINGLE] = (float) conf->shingle_weight / 1000;
    }

    if (conf->content != NGX_CONF_UNSET_UINT) {
        opts->content = (unsigned) conf->content;
    }

    if (conf->stem.data) {
        opts->stem = (conf->stem.len == 3
                      && ngx_strcmp(conf->stem.data, "off") == 0)
                     ? NULL : (char *) conf->stem.data;
    }

    if (conf->stopwords.data) {
        opts->stopwords_off = 0;

        if (conf->stopwords.len == 3
            && ngx_strcmp(conf->stopwords.data, "off") == 0)
        {
            opts->stopwords_off = 1;

        } else if (conf->stopwords.len != 7
                   || ngx_strcmp(conf->stopwords.data, "english") != 0)
        {
            opts->stopwords_file = (char *) conf->stopwords.data;
        }
    }

    if (conf->idf.data) {
        opts->idf_file = (char *) conf->idf.data;
    }

    if (conf->seed.data) {
        opts->seed = conf->seed.data;
        opts->seed_len = conf->seed.len;
    }

    if (conf->ignore) {
        pat = conf->ignore->elts;

        for (i = 0; i < conf->ignore->nelts; i++) {
            if (sh_options_add_ignore(opts, (char *) pat[i].data) != 0) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "too many simhash_ignore patterns (at most %d) "
                              "in %V", SH_IGNORE_MAX, &conf->opts_where);
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


/* Every option, unambiguously: equal signatures share one configuration. */

static ngx_int_t
ngx_http_simhash_signature(ngx_conf_t *cf, sh_options_t *opts,
    ngx_str_t *sig)
{
    u_char      *p;
    size_t       len;
    ngx_uint_t   i;

    len = 256 + (opts->stem ? ngx_strlen(opts->stem) : 0)
          + (opts->stopwords_file ? ngx_strlen(opts->stopwords_file) : 0)
          + (opts->idf_file ? ngx_strlen(opts->idf_file) : 0)
          + 2 * opts->seed_len;

    for (i = 0; i < opts->nignore; i++) {
        len += ngx_strlen(opts->ignore[i]) + NGX_INT_T_LEN + 2;
    }

    sig->data = ngx_pnalloc(cf->pool, len);
    if (sig->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(sig->data, "%ui|%ui|%ui|%ui|%ui|%uxD|%uxD|%s|%s|%s|",
                    (ngx_uint_t) opts->content,
                    (ngx_uint_t) opts->shingle,
                    (ngx_uint_t) opts->min_features,
                    (ngx_uint_t) opts->max_features,
                    (ngx_uint_t) opts->stopwords_off,
                    ngx_http_simhash_float_bits(opts->weight[SH_FEAT_WORD]),
                    ngx_http_simhash_float_bits(
                                             opts->weight[SH_FEAT_SHINGLE]),
                    opts->stem ? opts->stem : "-",
                    opts->stopwords_file ? opts->stopwords_file : "-",
                    opts->idf_file ? opts->idf_file : "-");
    p = ngx_hex_dump(p, (u_char *) opts->seed, opts->seed_len);

    for (i = 0; i < opts->nignore; i++) {
        p = ngx_sprintf(p, "|%uz:%s", ngx_strlen(opts->ignore[i]),
                        opts->ignore[i]);
    }

    sig->len = p - sig->data;

    return NGX_OK;
}


/*
 * The libxml2 the module was built with and the one it runs with, in
 * nginx -t and at start: another class than the markup scanner models
 * (sh_html.h) is not an error, pages are then parsed whole under the
 * scanner's caps, but it is said, with the versions.
 */
static void
ngx_http_simhash_libxml_check(ngx_conf_t *cf)
{
    const char  *why;

    if (!sh_libxml_modelled(&why)) {
        ngx_log_error(NGX_LOG_NOTICE, cf->log, 0, "simhash: %s", why);
    }
}


static ngx_int_t
ngx_http_simhash_postconfiguration(ngx_conf_t *cf)
{
    char                           err[512];
    sh_options_t                   opts;
    sh_config_t                   *cfg;
    ngx_uint_t                     i;
    ngx_http_handler_pt           *h;
    ngx_http_simhash_zone_t      **zones;
    ngx_http_core_main_conf_t     *cmcf;
    ngx_http_simhash_main_conf_t  *smcf;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_simhash_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_simhash_body_filter;

    if (ngx_http_simhash_guard_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    /*
     * Predictions run in the precontent phase: after the rewrite phase
     * (the key's variables are final), after the access phase (a client
     * that allow/deny, auth_basic or auth_request refuse is refused, not
     * told what a URL duplicates) and after limit_req and limit_conn
     * (preaccess: an answered request still counts), and just before the
     * content handler that would contact the upstream.
     */

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_simhash_dust_handler;

    ngx_http_simhash_libxml_check(cf);

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);

    if (ngx_http_simhash_replicate_resolve(cf, smcf) != NGX_OK
        || ngx_http_simhash_dust_resolve(cf, smcf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* a zone no location uses: the default hash key */

    zones = smcf->zones.elts;

    for (i = 0; i < smcf->zones.nelts; i++) {

        if (zones[i]->replicate && !zones[i]->keyed) {
            ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                          "simhash zone \"%V\" is replicated without "
                          "simhash_seed: its stream entries carry a MAC "
                          "anyone can compute, so every writer of the "
                          "stream is trusted", &zones[i]->name);
        }

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
        zones[i]->version = sh_config_version(cfg);
        zones[i]->seed_set = 1;

        if (sh_config_derive_key(cfg, "stream mac", zones[i]->mac_key,
                                 sizeof(zones[i]->mac_key))
            != 0
            || sh_config_derive_key(cfg, SH_STORE_KEY_PURPOSE,
                                    zones[i]->key_secret,
                                    sizeof(zones[i]->key_secret))
               != 0
            || sh_config_derive_key(cfg, "dust", zones[i]->dust_secret,
                                    sizeof(zones[i]->dust_secret))
               != 0)
        {
            sh_config_free(cfg);
            return NGX_ERROR;
        }

        sh_config_free(cfg);
    }

    /* a zone without simhash_seed: its own secret for the key hashes */

    for (i = 0; i < smcf->zones.nelts; i++) {
        if (!zones[i]->keyed && zones[i]->replicate == NULL
            && ngx_http_simhash_secret_local(cf, zones[i]) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * The zones of a cycle's configuration, or NULL (with *n = 0) when the
 * cycle has no http block or the module no main configuration: the
 * process hooks run for every cycle, the failed and the empty included.
 */

static ngx_http_simhash_zone_t **
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


/*
 * The master, once every zone of the new cycle exists (at start, and at a
 * reload that created or resized a zone): a zone formatted empty with a
 * file starts from its snapshot.  Loading here, not in the zone's init,
 * keeps the zone below its persistence.
 */

static ngx_int_t
ngx_http_simhash_init_module(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i, n;
    ngx_http_simhash_zone_t  **zones;

    if (ngx_test_config) {
        return NGX_OK;
    }

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        if (!zones[i]->load) {
            continue;
        }

        zones[i]->load = 0;

        ngx_http_simhash_snapshot_load(zones[i], cycle->log);

        /* what is in memory is what is in the file */
        zones[i]->sh->saved_generation = zones[i]->sh->generation;
    }

    return NGX_OK;
}


/*
 * Each worker: the periodic snapshot saves of every zone with a file;
 * worker 0 also replicates the zones that are.
 */

static ngx_int_t
ngx_http_simhash_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i, n;
    ngx_http_simhash_zone_t  **zones;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        if (ngx_http_simhash_snapshot_init_worker(zones[i], cycle) != NGX_OK) {
            return NGX_ERROR;
        }

        if (ngx_http_simhash_stream_init_worker(zones[i], cycle)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* A worker exits: its connections to Redis are closed. */

static void
ngx_http_simhash_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i, n;
    ngx_http_simhash_zone_t  **zones;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        ngx_http_simhash_snapshot_exit_worker(zones[i], cycle->log);
        ngx_http_simhash_stream_exit_worker(zones[i]);
    }
}


/* The master, when every worker has exited: the final snapshots. */

static void
ngx_http_simhash_exit_master(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i, n;
    ngx_http_simhash_zone_t  **zones;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        ngx_http_simhash_snapshot_exit(zones[i], cycle->log);
    }

    ngx_http_simhash_dust_exit();
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


/*
 * simhash_action drop's options: keys=path (the default: a duplicate is
 * dropped only when the key it duplicates has its path: a mirror on
 * another host, port or scheme, a session-id or tracking variant; others
 * are tagged) or keys=any; score=S (a decimal number, in X-Simhash-Score
 * units: also at most S).
 */

static ngx_int_t
ngx_http_simhash_drop_option(ngx_conf_t *cf, ngx_http_simhash_loc_conf_t *slcf,
    ngx_str_t *v)
{
    ngx_int_t  n;

    if (v->len == 9 && ngx_strncmp(v->data, "keys=path", 9) == 0) {
        slcf->drop_keys = NGX_HTTP_SIMHASH_DROP_KEYS_PATH;
        return NGX_OK;
    }

    if (v->len == 8 && ngx_strncmp(v->data, "keys=any", 8) == 0) {
        slcf->drop_keys = NGX_HTTP_SIMHASH_DROP_KEYS_ANY;
        return NGX_OK;
    }

    if (v->len > 6 && ngx_strncmp(v->data, "score=", 6) == 0) {
        n = ngx_atofp(v->data + 6, v->len - 6, 4);

        if (n != NGX_ERROR && n <= 1000000) {
            /* 1/10000 -> score units (SH_SCORE_UNIT per nat), rounded */
            slcf->drop_score = (ngx_uint_t) ((n * SH_SCORE_UNIT + 5000)
                                             / 10000);
            return NGX_OK;
        }
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid drop option \"%V\": a status code, "
                       "\"keys=path\", \"keys=any\" or \"score=NUMBER\"", v);

    return NGX_ERROR;
}


/* simhash_action tag | drop [CODE] [keys=path|any] [score=S] */

static char *
ngx_http_simhash_action(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_int_t    code;
    ngx_str_t   *value;
    ngx_uint_t   i;

    if (slcf->action != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "tag") == 0) {
        if (cf->args->nelts > 2) {
            return "takes no status code or option with \"tag\"";
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

    for (i = 2; i < cf->args->nelts; i++) {
        if (value[i].len == 0 || value[i].data[0] < '0'
            || value[i].data[0] > '9')
        {
            if (ngx_http_simhash_drop_option(cf, slcf, &value[i]) != NGX_OK) {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        code = ngx_atoi(value[i].data, value[i].len);

        if (code == NGX_ERROR || code < 200 || code > 599
            || code == NGX_HTTP_PARTIAL_CONTENT
            || code == NGX_HTTP_NOT_MODIFIED
            || slcf->drop_code != NGX_CONF_UNSET_UINT)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid status code \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        slcf->drop_code = (ngx_uint_t) code;
    }

    return NGX_CONF_OK;
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


/* simhash_content auto | structure | off */

static char *
ngx_http_simhash_content(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    char  *rv;

    rv = ngx_conf_set_enum_slot(cf, cmd, conf);

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


/*
 * simhash_ignore REGEX: checked now by the library, with exactly the rules it
 * compiles it with, so that the error names this line.
 */

static char *
ngx_http_simhash_ignore(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    char        err[256];
    ngx_str_t  *value, *pat;

    value = cf->args->elts;

    if (sh_ignore_check((char *) value[1].data, err, sizeof(err)) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid regex \"%V\": %s",
                           &value[1], err);
        return NGX_CONF_ERROR;
    }

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


