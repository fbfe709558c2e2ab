
/*
 * ngx_http_simhash_module -- tells a crawler, for every HTML page it fetches
 * through this proxy, whether the page is new, a near-duplicate of a page
 * already seen under another key (URL), or an unchanged / changed re-fetch
 * of the same key.  The fingerprints live in a shared-memory PSM index
 * (src/sh_index.h) that every worker process uses.
 *
 * The path of one request and its response, one stage a file, in the
 * order they meet it (module/ngx_http_simhash_request.h holds what they
 * share: the request's context and each stage's entry points):
 *
 *   0. module/ngx_http_simhash_predict.c    the precontent phase, with
 *      simhash_dust on: the DUST learner may predict that the URL is a
 *      duplicate of a stored page; drop mode then answers at once, without
 *      the upstream.  (Before it, in the preaccess phase, the loop guard,
 *      module/ngx_http_simhash_guard.c, refuses a request that would come
 *      back to this proxy.)
 *
 *   1, 2. module/ngx_http_simhash_filter.c   the header filter decides
 *      whether the response is ours and holds its header back; the body
 *      filter copies the body into our buffers (or gives up: "skipped")
 *      and, at the last buffer, fingerprints it, asks stage 3 for the
 *      verdict and stage 4 to act on it, and sends what stage 4 made: the
 *      filter alone calls the filters after ours.
 *
 *   3. module/ngx_http_simhash_decide.c     the verdict: for the raw
 *      body's digest (an identical re-fetch) or the fingerprint, the
 *      zone's answer under its mutex (new, unchanged, changed or a
 *      near-duplicate of another key), and what the crawler gets (dropped
 *      or passed).  A value in the request's context; a decision that
 *      waits on another machine says "pending" and the filter holds the
 *      response until it is in.
 *
 *   4. module/ngx_http_simhash_response.c   the verdict acted on: the
 *      X-Simhash-* headers and the held body, or, for a duplicate in drop
 *      mode, an empty body with the configured status.
 *
 *   5. module/ngx_http_simhash_variables.c  $simhash and the others, for
 *      the access log.
 *
 * The path goes one way: 3 and 4 call nothing of 1 and 2, and 3 nothing
 * of 4 (`make tree` checks it); the verdict is a value that 2 takes from 3
 * and hands to 4.
 *
 * module/ngx_http_simhash_directives.c parses a location's directives and
 * merges its configuration; the table below says which file parses each
 * of the others.  This file keeps the module's tables and its init hooks
 * (postconfiguration installs the filters and the precontent handler).
 * The other subjects have files of their own (the map is in
 * module/ngx_http_simhash.h): the shared memory zone, persistence, the
 * simhash_stats handler, replication through Redis and the loop guard.
 * docs/module.md is the user documentation.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash_request.h"
#include "ngx_http_simhash_cluster.h"
#include "ngx_http_simhash_dust.h"
#include "sh_block.h"
#include "sh_html.h"
#include "sh_library.h"


static ngx_int_t ngx_http_simhash_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_simhash_init_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_exit_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_exit_master(ngx_cycle_t *cycle);


static ngx_int_t ngx_http_simhash_postconfiguration(ngx_conf_t *cf);
static void ngx_http_simhash_libxml_check(ngx_conf_t *cf);


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
      ngx_http_simhash_dust_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_dust_verify"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_simhash_dust_verify_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_dust_credentials"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_http_simhash_dust_credentials_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_dust_rule"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_simhash_dust_rule_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("simhash_cluster_query"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_simhash_cluster_query_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
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
    ngx_http_simhash_part_t       *part;
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

    /* each part's configuration of the zones, complete */

    for (i = 0; ngx_http_simhash_parts[i]; i++) {
        part = ngx_http_simhash_parts[i];

        if (part->postconfiguration
            && part->postconfiguration(cf) != NGX_OK)
        {
            return NGX_ERROR;
        }
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
               != 0
            || sh_config_derive_key(cfg, NGX_HTTP_SIMHASH_FIGURES_PURPOSE,
                                    zones[i]->figures_secret,
                                    sizeof(zones[i]->figures_secret))
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
 * The master, once every zone of the new cycle exists (at start, and at a
 * reload that created or resized a zone): each part's turn (the saving
 * part loads the snapshots of the zones created empty).
 */

static ngx_int_t
ngx_http_simhash_init_module(ngx_cycle_t *cycle)
{
    ngx_uint_t                i;
    ngx_http_simhash_part_t  *part;

    for (i = 0; ngx_http_simhash_parts[i]; i++) {
        part = ngx_http_simhash_parts[i];

        if (part->init_module && part->init_module(cycle) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * Each worker: the parts' timers and connections (the periodic snapshot
 * saves; worker 0's replication).
 */

static ngx_int_t
ngx_http_simhash_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                i;
    ngx_http_simhash_part_t  *part;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    for (i = 0; ngx_http_simhash_parts[i]; i++) {
        part = ngx_http_simhash_parts[i];

        if (part->init_process && part->init_process(cycle) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* A worker exits: a save in flight finished, connections to Redis closed. */

static void
ngx_http_simhash_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                i;
    ngx_http_simhash_part_t  *part;

    for (i = 0; ngx_http_simhash_parts[i]; i++) {
        part = ngx_http_simhash_parts[i];

        if (part->exit_process) {
            part->exit_process(cycle);
        }
    }
}


/* The master, when every worker has exited: the final snapshots. */

static void
ngx_http_simhash_exit_master(ngx_cycle_t *cycle)
{
    ngx_uint_t                i;
    ngx_http_simhash_part_t  *part;

    for (i = 0; ngx_http_simhash_parts[i]; i++) {
        part = ngx_http_simhash_parts[i];

        if (part->exit_master) {
            part->exit_master(cycle);
        }
    }
}
