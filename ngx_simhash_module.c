
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

#include "ngx_http_simhash_request.h"
#include "sh_block.h"
#include "sh_doc.h"
#include "sh_html.h"


/* one compiled extraction configuration, shared by equal option sets */
typedef struct {
    ngx_str_t                    sig;       /* canonical option string */
    sh_config_t                 *cfg;
} ngx_http_simhash_cfg_t;


static ngx_http_simhash_zone_t **ngx_http_simhash_cycle_zones(
    ngx_cycle_t *cycle, ngx_uint_t *n);
static ngx_int_t ngx_http_simhash_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_simhash_init_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_exit_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_exit_master(ngx_cycle_t *cycle);


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
static ngx_int_t ngx_http_simhash_drop_option(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf, ngx_str_t *v);


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


/* Configuration. */

void *
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

char *
ngx_http_simhash_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_simhash_main_conf_t  *smcf = conf;

    ngx_conf_init_size_value(smcf->max_held, 64 * 1024 * 1024);

    return NGX_CONF_OK;
}


void *
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


char *
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

    ngx_http_simhash_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_simhash_header_filter;

    ngx_http_simhash_next_body_filter = ngx_http_top_body_filter;
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

char *
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

char *
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

char *
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

char *
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

char *
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

char *
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

char *
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

char *
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

char *
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

char *
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

char *
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

