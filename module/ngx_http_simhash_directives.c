
/*
 * ngx_http_simhash_directives.c -- a location's configuration: the
 * module's main and location confs (create, merge), the extraction
 * options compiled once per distinct set (compile, options, signature:
 * equal sets share one sh_config_t), and the handlers of the directives
 * that take more than nginx's stock setters (simhash, simhash_action,
 * the extraction options, simhash_weight, simhash_stem, the word-list
 * files, simhash_ignore, simhash_seed, simhash_probes,
 * simhash_volatility).  The directives' table is in ngx_simhash_module.c;
 * the handlers of the others are with their subjects: simhash_zone in
 * ngx_http_simhash_zone_conf.c, simhash_replicate in
 * ngx_http_simhash_replicate.c, simhash_dust_rule and simhash_dust_verify
 * in ngx_http_simhash_dust.c, simhash_loop_guard in
 * ngx_http_simhash_guard.c, simhash_stats in ngx_http_simhash_stats.c.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash_request.h"
#include "sh_block.h"
#include "sh_library.h"


static ngx_int_t ngx_http_simhash_uses_add(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *conf);
static void ngx_http_simhash_merge_options(
    ngx_http_simhash_loc_conf_t *conf, ngx_http_simhash_loc_conf_t *prev);
static ngx_int_t ngx_http_simhash_compile(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_options(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *conf, sh_options_t *opts);
static ngx_int_t ngx_http_simhash_signature(ngx_conf_t *cf,
    sh_options_t *opts, ngx_str_t *sig);
static ngx_int_t ngx_http_simhash_drop_option(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf, ngx_str_t *v);


/* one compiled extraction configuration, shared by equal option sets */
typedef struct {
    ngx_str_t                    sig;       /* canonical option string */
    sh_config_t                 *cfg;
} ngx_http_simhash_cfg_t;


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

    /* the zone's parts, numbered, before any simhash_zone is read */
    ngx_http_simhash_zone_use_parts(ngx_http_simhash_parts);

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

    conf->dust = ngx_http_simhash_dust_create_loc(cf);
    if (conf->dust == NULL) {
        return NULL;
    }

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

    if (ngx_http_simhash_dust_merge_loc(cf, prev, conf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

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

    if (ngx_http_simhash_dust_check_loc(cf, conf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_simhash_uses_add(cf, conf) != NGX_OK) {
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
           != 0
        || sh_config_derive_key(cfg, NGX_HTTP_SIMHASH_FIGURES_PURPOSE,
                                zone->figures_secret,
                                sizeof(zone->figures_secret))
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


/*
 * The locations that use a zone, for the console: whether each tags or
 * drops (its code and keys=) and whether DUST predicts there.  Merged
 * once per location (and once for server{} itself, named ""); an
 * inherited copy that says the same as one already listed is not listed
 * again.
 */

static ngx_int_t
ngx_http_simhash_uses_add(ngx_conf_t *cf, ngx_http_simhash_loc_conf_t *conf)
{
    ngx_uint_t                 i;
    ngx_http_simhash_use_t    *u, *uses;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_core_loc_conf_t  *clcf;

    /* by NGX_HTTP_SIMHASH_DROP_KEYS_* and NGX_HTTP_SIMHASH_DUST_* */
    static char  *keys[] = { "path", "any" };
    static char  *dust[] = { "off", "learn", "on" };

    zone = conf->zone;
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (zone->uses == NULL) {
        zone->uses = ngx_array_create(cf->pool, 4,
                                      sizeof(ngx_http_simhash_use_t));
        if (zone->uses == NULL) {
            return NGX_ERROR;
        }
    }

    uses = zone->uses->elts;

    for (i = 0; i < zone->uses->nelts; i++) {
        /* a server's own configuration has no name (len 0, data NULL:
         * no strncmp of it) */

        if (uses[i].location.len == clcf->name.len
            && (clcf->name.len == 0
                || ngx_strncmp(uses[i].location.data, clcf->name.data,
                               clcf->name.len) == 0)
            && uses[i].drop == (conf->action == NGX_HTTP_SIMHASH_DROP)
            && uses[i].drop_code == conf->drop_code
            && uses[i].keys == keys[conf->drop_keys]
            && uses[i].dust == dust[conf->dust->mode])
        {
            return NGX_OK;
        }
    }

    /* a bounded list: the JSON of a zone stays small */

    if (zone->uses->nelts == NGX_HTTP_SIMHASH_USES_MAX) {
        return NGX_OK;
    }

    u = ngx_array_push(zone->uses);
    if (u == NULL) {
        return NGX_ERROR;
    }

    u->location = clcf->name;
    u->drop = (conf->action == NGX_HTTP_SIMHASH_DROP);
    u->drop_code = conf->drop_code;
    u->keys = keys[conf->drop_keys];
    u->dust = dust[conf->dust->mode];

    return NGX_OK;
}

