
/*
 * The DUST learner (src/sh_dust.h, docs/DUST.md) in a simhash zone: which
 * URL differences do not change a page, learned per host from the
 * module's own decisions, and requests answered as predicted duplicates
 * without a fetch.
 *
 * Storage: the learner's region is a slab allocation of its own in the
 * zone's shared memory, next to the store, sized by simhash_zone's dust=
 * and added to the zone's size (zone=NAME:SIZE keeps its capacity in
 * documents).  Every call runs under the zone's lock, as the store's do.
 * Its hashes are keyed by a key derived from simhash_seed ("dust"), so a
 * client cannot aim URLs at one slot.
 *
 * This file: the parameters and directives, the region across reloads
 * and resizes, the pins of simhash_dust_rule, observing a decision
 * (logging the rule changes it causes, each once), a prediction and the
 * check that its original is still stored, and the rules for the stats.
 * The response path (module/ngx_http_simhash_decide.c, _predict.c)
 * decides when to call these, and answers a predicted duplicate itself.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "sh_site.h"


/*
 * dust=SIZE gives the tables in fixed proportions: 1 host, 8 candidate
 * rules, 64 evidence and 64 canonical slots per unit (the library's
 * defaults, 1,024 hosts, are 6.8 MB).  Tables come in powers of two
 * sets, so the learner takes the largest power-of-two number of units
 * that fits in SIZE: dust=8m gives the defaults, dust=4m half of them.
 */
#define NGX_HTTP_SIMHASH_DUST_CANDS     8
#define NGX_HTTP_SIMHASH_DUST_EVIDENCE  64
#define NGX_HTTP_SIMHASH_DUST_CANONICAL 64
#define NGX_HTTP_SIMHASH_DUST_MIN_UNITS 16
#define NGX_HTTP_SIMHASH_DUST_MAX_UNITS (1 << 20)

/* rule changes copied out of the ring per hold of the lock, to be logged
 * once it is released */
#define NGX_HTTP_SIMHASH_DUST_LOG_MAX   16

/* seconds between worker 0's sweeps of the rules' counts (replication) */
#define NGX_HTTP_SIMHASH_DUST_SWEEP     10


static size_t ngx_http_simhash_dust_region(ngx_uint_t units);
static ngx_int_t ngx_http_simhash_dust_kind(ngx_str_t *v,
    sh_dust_kind_t *kind, u_char **arg, ngx_pool_t *pool);
static ngx_int_t ngx_http_simhash_dust_format(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_dust_reopts(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_dust_pins(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);
static ngx_int_t ngx_http_simhash_dust_pin_all(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);
static ngx_uint_t ngx_http_simhash_dust_pin_eq(
    ngx_http_simhash_dust_pin_t *a, ngx_http_simhash_dust_pin_t *b);
static void ngx_http_simhash_dust_text(u_char *out, char *text);
static int ngx_http_simhash_dust_rule_cb(const sh_dust_rule_info_t *ri,
    void *data);
static int ngx_http_simhash_dust_host_cb(const sh_dust_host_info_t *h,
    void *data);
static void ngx_http_simhash_dust_publish(ngx_http_simhash_zone_t *zone);


static size_t
ngx_http_simhash_dust_region(ngx_uint_t units)
{
    return sh_dust_region_size((uint32_t) units,
                           (uint32_t) (units * NGX_HTTP_SIMHASH_DUST_CANDS),
                           (uint32_t) (units * NGX_HTTP_SIMHASH_DUST_EVIDENCE),
                           (uint32_t) (units
                                       * NGX_HTTP_SIMHASH_DUST_CANONICAL));
}


/* simhash_zone ... dust=SIZE|off dust_precision=P dust_evidence=N */

ngx_int_t
ngx_http_simhash_dust_param(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    ngx_str_t *value)
{
    ssize_t    size;
    ngx_int_t  n;
    ngx_str_t  s;

    if (ngx_strncmp(value->data, "dust=", 5) == 0) {

        s.data = value->data + 5;
        s.len = value->len - 5;

        if (s.len == 3 && ngx_strncmp(s.data, "off", 3) == 0) {
            zone->dust = 0;
            return NGX_OK;
        }

        size = ngx_parse_size(&s);

        if (size == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": the DUST learner's size "
                               "(e.g. dust=8m), or dust=off", value);
            return NGX_ERROR;
        }

        zone->dust = (size_t) size;
        return NGX_OK;
    }

    if (ngx_strncmp(value->data, "dust_precision=", 15) == 0) {

        /* up to four decimals */
        n = ngx_atofp(value->data + 15, value->len - 15, 4);

        if (n == NGX_ERROR || n <= 0 || n >= 10000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": a precision between 0 and 1 "
                               "exclusive (default 0.95)", value);
            return NGX_ERROR;
        }

        zone->dust_opts.min_precision = (double) n / 10000;
        return NGX_OK;
    }

    if (ngx_strncmp(value->data, "dust_evidence=", 14) == 0) {

        n = ngx_atoi(value->data + 14, value->len - 14);

        if (n == NGX_ERROR || n < 1 || n > 1000000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": pairs of evidence, from 1 "
                               "to 1000000 (default 8)", value);
            return NGX_ERROR;
        }

        zone->dust_opts.min_evidence = (uint32_t) n;
        return NGX_OK;
    }

    return NGX_DECLINED;
}


/*
 * Once the zone's parameters are read: the tables dust= holds (see
 * NGX_HTTP_SIMHASH_DUST_CANDS), the exact region, and what it adds to the
 * shared memory zone (its pages and their slab bookkeeping).
 */

char *
ngx_http_simhash_dust_size(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone)
{
    size_t          size;
    ngx_uint_t      units;
    sh_dust_opts_t  def;

    if (zone->dust == 0) {
        sh_dust_opts_init(&def);

        if (zone->dust_opts.min_precision != def.min_precision
            || zone->dust_opts.min_evidence != def.min_evidence)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"dust_precision\" and \"dust_evidence\" "
                               "need the \"dust\" parameter");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (zone->dust < ngx_http_simhash_dust_region(
                                           NGX_HTTP_SIMHASH_DUST_MIN_UNITS))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "dust=%uz is too small for the DUST learner of "
                           "zone \"%V\": at least %uz bytes (%d hosts)",
                           zone->dust, &zone->name,
                           ngx_http_simhash_dust_region(
                                           NGX_HTTP_SIMHASH_DUST_MIN_UNITS),
                           NGX_HTTP_SIMHASH_DUST_MIN_UNITS);
        return NGX_CONF_ERROR;
    }

    units = NGX_HTTP_SIMHASH_DUST_MIN_UNITS;

    while (units < NGX_HTTP_SIMHASH_DUST_MAX_UNITS
           && ngx_http_simhash_dust_region(units * 2) <= zone->dust)
    {
        units *= 2;
    }

    zone->dust_opts.hosts = (uint32_t) units;
    zone->dust_opts.candidates = (uint32_t) (units
                                             * NGX_HTTP_SIMHASH_DUST_CANDS);
    zone->dust_opts.evidence_slots = (uint32_t) (units
                                          * NGX_HTTP_SIMHASH_DUST_EVIDENCE);
    zone->dust_opts.canonical_slots = (uint32_t) (units
                                         * NGX_HTTP_SIMHASH_DUST_CANONICAL);

    size = ngx_http_simhash_dust_region(units);

    zone->dust = size;
    zone->dust_shm = ngx_align(size, ngx_pagesize)
                     + (size / ngx_pagesize + 1) * 64 + 2 * ngx_pagesize;

    return NGX_CONF_OK;
}


/* simhash_dust_verify RATE: "6.25%" or a fraction, "0.0625" */

char *
ngx_http_simhash_dust_verify_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_int_t   n;
    ngx_str_t  *value;

    if (slcf->dust_verify != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len > 1 && value[1].data[value[1].len - 1] == '%') {
        /* percent, four decimals: millionths */
        n = ngx_atofp(value[1].data, value[1].len - 1, 4);

        if (n != NGX_ERROR && n <= 1000000) {
            slcf->dust_verify = (ngx_uint_t) n;
            return NGX_CONF_OK;
        }

    } else {
        n = ngx_atofp(value[1].data, value[1].len, 6);

        if (n != NGX_ERROR && n <= 1000000) {
            slcf->dust_verify = (ngx_uint_t) n;
            return NGX_CONF_OK;
        }
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid rate \"%V\": a percentage (\"6.25%%\") or "
                       "a fraction (\"0.0625\") of the predictions",
                       &value[1]);

    return NGX_CONF_ERROR;
}


/* RULE of simhash_dust_rule: "drop_param=sid", "sort_params", ... */

static ngx_int_t
ngx_http_simhash_dust_kind(ngx_str_t *v, sh_dust_kind_t *kind, u_char **arg,
    ngx_pool_t *pool)
{
    u_char      *eq;
    size_t       len;
    ngx_uint_t   k;

    static struct {
        ngx_str_t       name;
        sh_dust_kind_t  kind;
        ngx_uint_t      arg;
    } kinds[] = {
        { ngx_string("drop_param"), SH_DUST_DROP_PARAM, 1 },
        { ngx_string("sort_params"), SH_DUST_SORT_PARAMS, 0 },
        { ngx_string("trailing_slash"), SH_DUST_TRAILING_SLASH, 0 },
        { ngx_string("index_file"), SH_DUST_INDEX_FILE, 1 },
        { ngx_string("path_case"), SH_DUST_PATH_CASE, 0 },
        { ngx_string("drop_component"), SH_DUST_DROP_COMPONENT, 1 },
        { ngx_string("host_alias"), SH_DUST_HOST_ALIAS, 1 },
        { ngx_string("drop_path_param"), SH_DUST_DROP_PATH_PARAM, 1 }
    };

    eq = ngx_strlchr(v->data, v->data + v->len, '=');
    len = eq ? (size_t) (eq - v->data) : v->len;

    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {

        if (kinds[k].name.len != len
            || ngx_strncmp(kinds[k].name.data, v->data, len) != 0)
        {
            continue;
        }

        if (kinds[k].arg != (eq != NULL)
            || (eq && eq + 1 == v->data + v->len))
        {
            return NGX_ERROR;
        }

        *kind = kinds[k].kind;
        *arg = NULL;

        if (eq) {
            len = v->data + v->len - (eq + 1);

            *arg = ngx_pnalloc(pool, len + 1);
            if (*arg == NULL) {
                return NGX_ERROR;
            }

            ngx_cpystrn(*arg, eq + 1, len + 1);
        }

        return NGX_OK;
    }

    return NGX_ERROR;
}


/*
 * simhash_dust_rule zone=NAME host=HOST [pattern=/dir/] RULE pin|forbid:
 * a rule set by hand, as a search console lets a site owner say which
 * parameters matter.  Applied whenever its zone is initialised.
 */

char *
ngx_http_simhash_dust_rule_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_main_conf_t  *smcf = conf;

    u_char                       *p;
    ngx_str_t                    *value, *v;
    ngx_uint_t                    i, rule;
    ngx_http_simhash_dust_pin_t  *pin;

    value = cf->args->elts;

    if (smcf->dust_pins.elts == NULL
        && ngx_array_init(&smcf->dust_pins, cf->pool, 4,
                          sizeof(ngx_http_simhash_dust_pin_t))
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    pin = ngx_array_push(&smcf->dust_pins);
    if (pin == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(pin, sizeof(ngx_http_simhash_dust_pin_t));
    ngx_http_simhash_where(cf, &pin->where);
    rule = 0;

    for (i = 1; i < cf->args->nelts; i++) {
        v = &value[i];

        if (v->len > 5 && ngx_strncmp(v->data, "zone=", 5) == 0) {
            pin->zone_name.data = v->data + 5;
            pin->zone_name.len = v->len - 5;
            continue;
        }

        if (v->len > 5 && ngx_strncmp(v->data, "host=", 5) == 0) {
            if (v->len - 5 > SH_DUST_HOST_TEXT) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"%V\": at most %d bytes", v,
                                   SH_DUST_HOST_TEXT);
                return NGX_CONF_ERROR;
            }

            pin->host = v->data + 5;
            continue;
        }

        if (v->len > 8 && ngx_strncmp(v->data, "pattern=", 8) == 0) {
            pin->pattern = v->data + 8;

            if (pin->pattern[0] != '/'
                || ngx_strlchr(pin->pattern + 1, v->data + v->len - 1, '/'))
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"%V\": a first path "
                                   "component, \"/dir/\", or \"/\" for "
                                   "root-level files", v);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (i == cf->args->nelts - 1) {
            if (v->len == 3 && ngx_strcmp(v->data, "pin") == 0) {
                pin->mode = SH_DUST_PIN_ON;
                continue;
            }

            if (v->len == 6 && ngx_strcmp(v->data, "forbid") == 0) {
                pin->mode = SH_DUST_PIN_OFF;
                continue;
            }

            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": the last parameter is "
                               "\"pin\" or \"forbid\"", v);
            return NGX_CONF_ERROR;
        }

        if (rule
            || ngx_http_simhash_dust_kind(v, &pin->kind, &pin->arg, cf->pool)
               != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid rule \"%V\": one of drop_param=NAME, "
                               "sort_params, trailing_slash, "
                               "index_file=NAME, path_case, "
                               "drop_component=NAME, host_alias=HOST", v);
            return NGX_CONF_ERROR;
        }

        rule = 1;
    }

    if (pin->zone_name.len == 0 || pin->host == NULL || !rule
        || pin->mode == 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" needs zone=NAME, host=HOST, a rule and "
                           "\"pin\" or \"forbid\"", &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (pin->kind == SH_DUST_HOST_ALIAS && pin->pattern) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "host_alias is host-wide: no \"pattern\"");
        return NGX_CONF_ERROR;
    }

    /* the host as the learner sees it: lowercase */

    for (p = pin->host; *p; p++) {
        *p = ngx_tolower(*p);
    }

    return NGX_CONF_OK;
}


/* The master's exit: the Public Suffix List goes (valgrind counts it). */

void
ngx_http_simhash_dust_exit(void)
{
    sh_site_unload();
}


/*
 * At postconfiguration: the Public Suffix List, once per process, for a
 * configuration with a learner (which hosts are one site: a learned host
 * alias joins only those; src/sh_site.h).  Here, in the master, so that
 * every worker forks with it and no request reads a file; a reload keeps
 * the list loaded (a restart reads an updated one).  Without a list the
 * learner learns no alias at all, and says so.  Then each
 * simhash_dust_rule to its zone.
 */

ngx_int_t
ngx_http_simhash_dust_resolve(ngx_conf_t *cf,
    ngx_http_simhash_main_conf_t *smcf)
{
    char                          err[512];
    ngx_uint_t                    i;
    ngx_http_simhash_zone_t     **zones, *zone;
    ngx_http_simhash_dust_pin_t  *pins, *pin;

    zones = smcf->zones.elts;

    for (i = 0; !sh_site_loaded() && i < smcf->zones.nelts; i++) {
        if (zones[i]->dust == 0) {
            continue;
        }

        if (sh_site_load(NULL, err, sizeof(err)) != 0) {
            ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                          "simhash_dust: %s: no host alias is learned "
                          "(a simhash_dust_rule host_alias still joins "
                          "hosts); Debian: publicsuffix", err);
        }

        break;
    }

    pins = smcf->dust_pins.elts;

    for (i = 0; pins && i < smcf->dust_pins.nelts; i++) {
        zone = ngx_http_simhash_zone_find(smcf, &pins[i].zone_name);

        if (zone == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "unknown simhash zone \"%V\" in %V",
                          &pins[i].zone_name, &pins[i].where);
            return NGX_ERROR;
        }

        if (zone->dust == 0) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "simhash zone \"%V\" has no DUST learner (its "
                          "simhash_zone has no dust=SIZE) in %V",
                          &zone->name, &pins[i].where);
            return NGX_ERROR;
        }

        if (zone->dust_pins == NULL) {
            zone->dust_pins = ngx_array_create(cf->pool, 4,
                                       sizeof(ngx_http_simhash_dust_pin_t));
            if (zone->dust_pins == NULL) {
                return NGX_ERROR;
            }
        }

        pin = ngx_array_push(zone->dust_pins);
        if (pin == NULL) {
            return NGX_ERROR;
        }

        *pin = pins[i];
    }

    return NGX_OK;
}


/*
 * The zone's init: a new zone gets a fresh learner; a zone kept over a
 * reload keeps its learner (formatted again under a new seed; its rules
 * carried over when dust_precision= or dust_evidence= changed); either way
 * the pins of this configuration are applied, and those of the last one
 * that this one no longer has are cleared.
 */

ngx_int_t
ngx_http_simhash_dust_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    char                       err[256];
    ngx_int_t                  rc;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    if (zone->dust == 0) {
        return NGX_OK;
    }

    if (sh->dust && sh->dust_size != zone->dust) {
        /* the store and the learner share the zone's pages */
        ngx_log_error(NGX_LOG_EMERG, log, 0,
                      "simhash zone \"%V\": dust= changed but the zone's "
                      "size did not; change zone= too, or restart",
                      &zone->name);
        return NGX_ERROR;
    }

    if (sh->dust == NULL) {
        sh->dust = ngx_slab_alloc(zone->shpool, zone->dust);

        if (sh->dust == NULL) {
            ngx_log_error(NGX_LOG_EMERG, log, 0,
                          "simhash zone \"%V\" has no room for its DUST "
                          "learner of %uz bytes", &zone->name, zone->dust);
            return NGX_ERROR;
        }

        sh->dust_size = zone->dust;
        rc = ngx_http_simhash_dust_format(zone, log);

    } else if (sh_dust_attach(sh->dust, sh->dust_size, err, sizeof(err))
               == NULL)
    {
        /* a module of another learner layout (its hosts now keep their
         * site) reloaded onto this zone */
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": %s, the DUST learner starts "
                      "empty", &zone->name, err);

        ngx_http_simhash_zone_lock(zone, log);
        rc = ngx_http_simhash_dust_format(zone, log);
        ngx_http_simhash_zone_unlock(zone);

    } else if (ngx_memcmp(sh->dust_key, zone->dust_secret,
                          sizeof(zone->dust_secret))
               != 0)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": simhash_seed changed, the DUST "
                      "learner starts empty", &zone->name);

        /* the old cycle's workers still use it */

        ngx_http_simhash_zone_lock(zone, log);
        rc = ngx_http_simhash_dust_format(zone, log);
        ngx_http_simhash_zone_unlock(zone);

    } else if (sh->dust_opts.min_precision != zone->dust_opts.min_precision
               || sh->dust_opts.min_evidence != zone->dust_opts.min_evidence)
    {
        rc = ngx_http_simhash_dust_reopts(zone, log);

    } else {
        rc = NGX_OK;
    }

    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_http_simhash_dust_pins(zone, ozone, log);
}


static ngx_int_t
ngx_http_simhash_dust_format(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    char                       err[256];
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    if (sh_dust_init(sh->dust, sh->dust_size, zone->dust_secret,
                     sizeof(zone->dust_secret), &zone->dust_opts, err,
                     sizeof(err))
        == NULL)
    {
        ngx_log_error(NGX_LOG_EMERG, log, 0, "simhash zone \"%V\": %s",
                      &zone->name, err);
        return NGX_ERROR;
    }

    ngx_memcpy(sh->dust_key, zone->dust_secret, sizeof(zone->dust_secret));
    sh->dust_opts = zone->dust_opts;
    sh->dust_logged = 0;
    sh->dust_published = 0;

    return NGX_OK;
}


/* New thresholds for a kept learner: formatted again, its rules kept. */

static ngx_int_t
ngx_http_simhash_dust_reopts(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    char                       err[256];
    u_char                    *image;
    size_t                     len;
    ngx_int_t                  rc;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    ngx_http_simhash_zone_lock(zone, log);

    len = sh_dust_image_size(sh->dust);
    image = ngx_alloc(len, log);

    if (image == NULL || sh_dust_image_save(sh->dust, image, len) != len) {
        len = 0;
    }

    rc = ngx_http_simhash_dust_format(zone, log);

    if (rc == NGX_OK && len
        && sh_dust_image_load(sh->dust, image, len, err, sizeof(err)) != 0)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": the DUST rules were not kept: %s",
                      &zone->name, err);
    }

    ngx_http_simhash_zone_unlock(zone);

    if (image) {
        ngx_free(image);
    }

    return rc;
}


/* A resized zone: the learner's rules taken over from the old zone. */

void
ngx_http_simhash_dust_migrate(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    char     err[256];
    u_char  *image;
    size_t   len;

    if (zone->sh->dust == NULL || ozone->sh->dust == NULL) {
        return;
    }

    len = sh_dust_image_size(ozone->sh->dust);

    image = ngx_alloc(len, log);
    if (image == NULL) {
        return;
    }

    if (sh_dust_image_save(ozone->sh->dust, image, len) != len
        || sh_dust_image_load(zone->sh->dust, image, len, err, sizeof(err))
           != 0)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\" resized: its DUST rules were not "
                      "taken over", &zone->name);
    }

    ngx_free(image);

    /* the image replaced the pins: this configuration's again */

    (void) ngx_http_simhash_dust_pin_all(zone, ozone, log);
}


/*
 * After the snapshot's rules replaced the learner's: the manual rules of
 * the file that this configuration no longer has go back to the evidence
 * (a simhash_dust_rule removed while nginx was stopped), and this
 * configuration's pins are applied again.
 */

typedef struct {
    ngx_http_simhash_zone_t     *zone;
    sh_dust_rule_info_t          stale[16];
    ngx_uint_t                   n;
} ngx_http_simhash_dust_stale_t;


static int
ngx_http_simhash_dust_stale_cb(const sh_dust_rule_info_t *ri, void *data)
{
    ngx_http_simhash_dust_stale_t  *st = data;

    ngx_uint_t                    i, n;
    ngx_http_simhash_dust_pin_t  *pins;

    if (ri->state != SH_DUST_PINNED && ri->state != SH_DUST_FORBIDDEN) {
        return 0;
    }

    pins = st->zone->dust_pins ? st->zone->dust_pins->elts : NULL;
    n = st->zone->dust_pins ? st->zone->dust_pins->nelts : 0;

    for (i = 0; i < n; i++) {
        if (pins[i].kind == ri->kind
            && ngx_strcmp(pins[i].host, ri->host) == 0
            && (pins[i].pattern ? ngx_strcmp(pins[i].pattern, ri->pattern)
                                  == 0
                                : ngx_strcmp(ri->pattern, "*") == 0)
            && ngx_strcmp((pins[i].arg ? pins[i].arg : (u_char *) ""),
                          ri->arg) == 0)
        {
            return 0;
        }
    }

    st->stale[st->n++] = *ri;

    return st->n == sizeof(st->stale) / sizeof(st->stale[0]);
}


void
ngx_http_simhash_dust_repin(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    ngx_uint_t                     i, rounds;
    ngx_http_simhash_dust_stale_t  st;

    st.zone = zone;

    ngx_http_simhash_zone_lock(zone, log);

    for (rounds = 0; rounds < 64; rounds++) {
        st.n = 0;
        sh_dust_foreach_rule(zone->sh->dust, 0, 0,
                             ngx_http_simhash_dust_stale_cb, &st);

        for (i = 0; i < st.n; i++) {
            (void) sh_dust_pin(zone->sh->dust, st.stale[i].host,
                               ngx_strcmp(st.stale[i].pattern, "*") == 0
                               ? NULL : st.stale[i].pattern,
                               st.stale[i].kind,
                               st.stale[i].arg[0] ? st.stale[i].arg : NULL,
                               SH_DUST_PIN_CLEAR, (uint64_t) ngx_time());
        }

        if (st.n < sizeof(st.stale) / sizeof(st.stale[0])) {
            break;
        }
    }

    (void) ngx_http_simhash_dust_pin_all(zone, NULL, log);

    ngx_http_simhash_zone_unlock(zone);
}


static ngx_uint_t
ngx_http_simhash_dust_pin_eq(ngx_http_simhash_dust_pin_t *a,
    ngx_http_simhash_dust_pin_t *b)
{
    return a->kind == b->kind
           && ngx_strcmp(a->host, b->host) == 0
           && (a->pattern == NULL) == (b->pattern == NULL)
           && (a->pattern == NULL || ngx_strcmp(a->pattern, b->pattern) == 0)
           && (a->arg == NULL) == (b->arg == NULL)
           && (a->arg == NULL || ngx_strcmp(a->arg, b->arg) == 0);
}


static ngx_int_t
ngx_http_simhash_dust_pins(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    ngx_int_t  rc;

    ngx_http_simhash_zone_lock(zone, log);
    rc = ngx_http_simhash_dust_pin_all(zone, ozone, log);
    ngx_http_simhash_zone_unlock(zone);

    return rc;
}


/* Under the lock. */

static ngx_int_t
ngx_http_simhash_dust_pin_all(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    ngx_int_t                     rc;
    ngx_uint_t                    i, j, n, on;
    ngx_http_simhash_dust_pin_t  *pins, *opins;

    pins = zone->dust_pins ? zone->dust_pins->elts : NULL;
    n = zone->dust_pins ? zone->dust_pins->nelts : 0;
    rc = NGX_OK;

    /* the pins that the last configuration had and this one has not */

    if (ozone && ozone->dust_pins) {
        opins = ozone->dust_pins->elts;

        for (i = 0; i < ozone->dust_pins->nelts; i++) {
            on = 0;

            for (j = 0; j < n; j++) {
                on |= ngx_http_simhash_dust_pin_eq(&opins[i], &pins[j]);
            }

            if (!on) {
                (void) sh_dust_pin(zone->sh->dust, (char *) opins[i].host,
                                   (char *) opins[i].pattern, opins[i].kind,
                                   (char *) opins[i].arg, SH_DUST_PIN_CLEAR,
                                   (uint64_t) ngx_time());
            }
        }
    }

    for (i = 0; i < n; i++) {
        if (sh_dust_pin(zone->sh->dust, (char *) pins[i].host,
                        (char *) pins[i].pattern, pins[i].kind,
                        (char *) pins[i].arg, (int) pins[i].mode,
                        (uint64_t) ngx_time())
            != 0)
        {
            ngx_log_error(NGX_LOG_EMERG, log, 0,
                          "simhash_dust_rule cannot be applied to zone "
                          "\"%V\" (a bad argument, or every slot of its set "
                          "is pinned already) in %V", &zone->name,
                          &pins[i].where);
            rc = NGX_ERROR;
            break;
        }
    }

    /* the pins' own changes are no news: they are in the configuration */

    zone->sh->dust_logged = sh_dust_change_seq(zone->sh->dust);
    zone->sh->dust_published = zone->sh->dust_logged;

    return rc;
}


/* Under the lock: one decision of the module. */

ngx_int_t
ngx_http_simhash_dust_observe(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    uint64_t rep)
{
    int  n;

    if (zone->sh->dust == NULL || rep == 0) {
        return 0;
    }

    n = sh_dust_observe(zone->sh->dust, (char *) key->data, key->len, rep,
                        (uint64_t) ngx_time());

    if (n <= 0) {
        return 0;
    }

    /* a rule turned on or off: the snapshot is due */

    (void) ngx_atomic_fetch_add(&zone->sh->generation, 1);

    ngx_http_simhash_dust_publish(zone);

    return n;
}


/*
 * Under the lock: the rule changes not published yet into the outbox, each
 * rule's state as it is now, as soon as they happen: a rule that turns on
 * (or off) on one node does so on the others within the replication lag.
 * Changes are rare (a rule turns on once, and a retired one needs its
 * support doubled to come back), so this alone cannot flood the stream.
 * Pins are left out (sh_dust_rule_unpin): they are each node's
 * configuration.
 */

static void
ngx_http_simhash_dust_publish(ngx_http_simhash_zone_t *zone)
{
    size_t                     i, n;
    sh_dust_change_t           ch[NGX_HTTP_SIMHASH_DUST_LOG_MAX];
    ngx_http_simhash_shctx_t  *sh;
    u_char                     rec[SH_DUST_RULE_REC_LEN];

    sh = zone->sh;

    if (zone->replicate == NULL) {
        sh->dust_published = sh_dust_change_seq(sh->dust);
        return;
    }

    do {
        n = sh_dust_changes(sh->dust, &sh->dust_published, ch,
                            NGX_HTTP_SIMHASH_DUST_LOG_MAX);

        for (i = 0; i < n; i++) {
            if (sh_dust_export_rule(sh->dust, &ch[i].rule, rec) == 0
                && sh_dust_rule_unpin(rec, NULL) == 0)
            {
                ngx_http_simhash_replicate_dust(zone, rec,
                                                ngx_cycle->log);
            }
        }

    } while (n == NGX_HTTP_SIMHASH_DUST_LOG_MAX);
}


/* Replication, worker 0: what was sent or applied of each rule. */

ngx_int_t
ngx_http_simhash_dust_repl_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, ngx_pool_t *pool)
{
    ngx_uint_t  n;

    ngx_memzero(dr, sizeof(ngx_http_simhash_dust_repl_t));

    if (zone->dust == 0) {
        return NGX_OK;
    }

    for (n = 1024; n < zone->dust_opts.candidates; n *= 2) {
        /* void */
    }

    dr->slot = ngx_pcalloc(pool, n * sizeof(ngx_http_simhash_dust_sent_t));

    if (dr->slot == NULL) {
        return NGX_ERROR;
    }

    dr->mask = n - 1;
    dr->next = ngx_time() + NGX_HTTP_SIMHASH_DUST_SWEEP;

    return NGX_OK;
}


static ngx_http_simhash_dust_sent_t *
ngx_http_simhash_dust_sent(ngx_http_simhash_dust_repl_t *dr,
    const sh_dust_rule_info_t *ri)
{
    uint64_t                       key;
    ngx_http_simhash_dust_sent_t  *s;

    key = ri->host_hash ^ (ri->pattern_hash * 0x9e3779b97f4a7c15ULL)
          ^ (ri->arg_hash * 0xc2b2ae3d27d4eb4fULL) ^ (uint64_t) ri->kind;
    key |= 1;

    s = &dr->slot[(key >> 17) & dr->mask];

    if (s->key != key) {
        s->key = key;
        s->support = 0;
        s->against = 0;
    }

    return s;
}


typedef struct {
    ngx_http_simhash_zone_t       *zone;
    ngx_http_simhash_dust_repl_t  *dr;
    ngx_uint_t                     sent;
} ngx_http_simhash_dust_sweep_t;


static int
ngx_http_simhash_dust_sweep_cb(const sh_dust_rule_info_t *ri, void *data)
{
    ngx_http_simhash_dust_sweep_t  *sw = data;

    ngx_http_simhash_dust_sent_t  *s;
    u_char                         rec[SH_DUST_RULE_REC_LEN];

    s = ngx_http_simhash_dust_sent(sw->dr, ri);

    /*
     * A step worth a record: support doubled since the rule was last sent
     * or applied (its bound barely moves for less, and the records of a
     * rule over its life stay logarithmic: about 20 up to the halving at
     * 2^20), or any pair against (each one matters to the bound, and a
     * rule goes off on few of them).  A pin without evidence: nothing.
     */

    if ((ri->support < 2 * (uint64_t) s->support
         || ri->support == s->support)
        && ri->against <= s->against)
    {
        return 0;
    }

    if (sh_dust_export_rule(sw->zone->sh->dust, ri, rec) != 0
        || sh_dust_rule_unpin(rec, NULL) != 0)
    {
        return 0;
    }

    ngx_http_simhash_replicate_dust(sw->zone, rec, ngx_cycle->log);

    s->support = ri->support;
    s->against = ri->against;
    sw->sent++;

    return 0;
}


/*
 * Every NGX_HTTP_SIMHASH_DUST_SWEEP seconds, worker 0 sends the active,
 * retired and pinned rules whose counts moved by a step (above): so at
 * most one record per rule per sweep, whatever the traffic.  Candidates
 * are not swept: they are many, mostly noise, and reach the others when
 * they turn on.
 */

void
ngx_http_simhash_dust_sweep(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, ngx_log_t *log)
{
    ngx_http_simhash_dust_sweep_t  sw;

    if (dr->slot == NULL || zone->sh->dust == NULL
        || ngx_time() < dr->next)
    {
        return;
    }

    dr->next = ngx_time() + NGX_HTTP_SIMHASH_DUST_SWEEP;

    sw.zone = zone;
    sw.dr = dr;
    sw.sent = 0;

    ngx_http_simhash_zone_lock(zone, log);
    sh_dust_foreach_rule(zone->sh->dust, 0, 0,
                         ngx_http_simhash_dust_sweep_cb, &sw);
    ngx_http_simhash_zone_unlock(zone);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "simhash zone \"%V\": %ui DUST rules sent",
                   &zone->name, sw.sent);
}


/*
 * A DUST entry of another node (or ours read back): merged into the
 * learner (sh_dust_import_rule keeps the larger of each count, so a
 * replay or our own record changes nothing), its pin state dropped.  The
 * state changes the import causes here are logged like ours, but not
 * published again: every node reads the record itself.
 */

ngx_int_t
ngx_http_simhash_dust_apply(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, u_char *rec, ngx_log_t *log)
{
    int                            rc;
    uint64_t                       seq;
    sh_dust_rule_info_t            ri;
    ngx_http_simhash_shctx_t      *sh;
    ngx_http_simhash_dust_sent_t  *s;

    sh = zone->sh;

    if (sh->dust == NULL) {
        return NGX_DECLINED;
    }

    if (sh_dust_rule_unpin(rec, &ri) != 0) {
        return NGX_ERROR;
    }

    ngx_http_simhash_zone_lock(zone, log);

    /* ours before the import still go out; the import's do not */
    ngx_http_simhash_dust_publish(zone);

    seq = sh_dust_change_seq(sh->dust);

    rc = sh_dust_import_rule(sh->dust, rec, SH_DUST_RULE_REC_LEN,
                             (uint64_t) ngx_time());

    if (sh_dust_change_seq(sh->dust) != seq) {
        sh->dust_published = sh_dust_change_seq(sh->dust);
    }

    if (rc == 0) {
        /* the snapshot is due: it keeps the rules and the stream's id */
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
    }

    ngx_http_simhash_zone_unlock(zone);

    if (rc != 0) {
        return NGX_ERROR;
    }

    /* what the others know already need not be sent back to them */

    if (dr->slot) {
        s = ngx_http_simhash_dust_sent(dr, &ri);

        if (ri.support > s->support) {
            s->support = ri.support;
        }

        if (ri.against > s->against) {
            s->against = ri.against;
        }
    }

    ngx_http_simhash_dust_log(zone, log);

    return NGX_OK;
}


/* A rule's text for a log line: controls, DEL, >= 0x80 percent-encoded. */

static void
ngx_http_simhash_dust_text(u_char *out, char *text)
{
    u_char  c;

    static u_char  hex[] = "0123456789ABCDEF";

    while (*text) {
        c = (u_char) *text++;

        if (c < 0x20 || c >= 0x7f) {
            *out++ = '%';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 0xf];

        } else {
            *out++ = c;
        }
    }

    *out = '\0';
}


/*
 * The rule changes not logged yet, each once whichever worker caused it:
 * copied under the lock, logged after it.
 */

void
ngx_http_simhash_dust_log(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    size_t                     i, n;
    sh_dust_change_t           ch[NGX_HTTP_SIMHASH_DUST_LOG_MAX];
    sh_dust_rule_info_t       *ri;
    ngx_http_simhash_shctx_t  *sh;
    u_char                     host[3 * SH_DUST_HOST_TEXT + 1];
    u_char                     arg[3 * SH_DUST_ARG_TEXT + 1];
    u_char                     pat[3 * SH_DUST_PAT_TEXT + 9];

    sh = zone->sh;

    if (sh->dust == NULL) {
        return;
    }

    ngx_http_simhash_zone_lock(zone, log);
    n = sh_dust_changes(sh->dust, &sh->dust_logged, ch,
                        NGX_HTTP_SIMHASH_DUST_LOG_MAX);
    ngx_http_simhash_zone_unlock(zone);

    for (i = 0; i < n; i++) {
        ri = &ch[i].rule;

        /* spelled as URLs spell them: nothing that could end a line */
        ngx_http_simhash_dust_text(host, ri->host);
        ngx_http_simhash_dust_text(arg, ri->arg);
        ngx_http_simhash_dust_text(pat, ri->pattern);

        ngx_log_error(NGX_LOG_INFO, log, 0,
                      "simhash zone \"%V\": rule %s%s%s%s for %s %s %s "
                      "(was %s): %uD pairs, %uD against, precision >= %.3f, "
                      "test %.2f >= %.2f",
                      &zone->name, sh_dust_kind_name(ri->kind),
                      arg[0] ? "(" : "", arg, arg[0] ? ")" : "",
                      host[0] ? (char *) host : "(unknown host)", pat,
                      ri->state == SH_DUST_ACTIVE ? "on"
                      : ri->state == SH_DUST_RETIRED ? "off"
                      : sh_dust_state_name(ri->state),
                      sh_dust_state_name(ch[i].from), ri->support,
                      ri->against, ri->lower, ri->llr, ri->need);
    }
}


/*
 * Is the URL `key` a predicted duplicate?  Only if the learner says so
 * AND its original is still stored (the prediction names it): the name is
 * copied while the lock is held, as the original may be evicted at once.
 */

ngx_int_t
ngx_http_simhash_dust_predict(ngx_http_request_t *r,
    ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    ngx_http_simhash_prediction_t *p)
{
    int                        rc;
    uint32_t                   ref;
    uint64_t                   rep;
    ngx_str_t                  name;
    ngx_http_simhash_shctx_t  *sh;
    u_char                     id[NGX_HTTP_SIMHASH_NAME_MAX];

    sh = zone->sh;

    if (sh->dust == NULL) {
        return NGX_DECLINED;
    }

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    rc = sh_dust_predict(sh->dust, (char *) key->data, key->len,
                         (uint64_t) ngx_time(), &rep, &p->why);

    ref = rc == 1 ? sh_store_find_hash(sh->store, rep) : SH_NOREF;

    if (ref != SH_NOREF) {
        ngx_http_simhash_zone_name(zone, ref, &name, id);

        p->name.data = ngx_pnalloc(r->pool, name.len);

        if (p->name.data == NULL) {
            ref = SH_NOREF;

        } else {
            ngx_memcpy(p->name.data, name.data, name.len);
            p->name.len = name.len;
        }
    }

    ngx_http_simhash_zone_unlock(zone);

    if (ref == SH_NOREF) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "simhash dust: %s", rc == 1 ? "predicted, but the "
                       "original is gone" : "no prediction");
        return NGX_DECLINED;
    }

    p->rule_len = sh_dust_why_format(&p->why, (char *) p->rule,
                                     sizeof(p->rule));

    return NGX_OK;
}


/*
 * Whether the active rules give the URLs a and b one path (a request and
 * the original of its prediction: sh_dust_same_path).  Asked only of the
 * predictions whose paths differ as they are, for keys=path.
 */

ngx_uint_t
ngx_http_simhash_dust_same_path(ngx_http_simhash_zone_t *zone,
    ngx_str_t *a, ngx_str_t *b, ngx_log_t *log)
{
    int  rc;

    ngx_http_simhash_zone_lock(zone, log);

    rc = sh_dust_same_path(zone->sh->dust, (char *) a->data, a->len,
                           (char *) b->data, b->len);

    ngx_http_simhash_zone_unlock(zone);

    return rc == 1;
}


void
ngx_http_simhash_dust_saved(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_prediction_t *p, ngx_log_t *log)
{
    ngx_http_simhash_zone_lock(zone, log);
    sh_dust_saved(zone->sh->dust, &p->why);
    ngx_http_simhash_zone_unlock(zone);
}


/*
 * The rules for the stats: active, retired and manual ones (and every
 * candidate if asked), each with its host's predictions and saved fetches.
 * Under the lock only copies are made; the hosts are matched to the rules
 * after it, by a sort and a binary search (a listing of every candidate
 * is thousands of rules of hundreds of hosts).
 */

typedef struct {
    ngx_array_t                 *rules;
    ngx_array_t                 *hosts;     /* of sh_dust_host_info_t */
    ngx_uint_t                   failed;
} ngx_http_simhash_dust_walk_t;


static int
ngx_http_simhash_dust_rule_cb(const sh_dust_rule_info_t *ri, void *data)
{
    ngx_http_simhash_dust_walk_t  *w = data;

    ngx_http_simhash_dust_rule_t  *rule;

    rule = ngx_array_push(w->rules);
    if (rule == NULL) {
        w->failed = 1;
        return 1;
    }

    ngx_memzero(rule, sizeof(ngx_http_simhash_dust_rule_t));
    rule->rule = *ri;

    return 0;
}


static int
ngx_http_simhash_dust_host_cb(const sh_dust_host_info_t *h, void *data)
{
    ngx_http_simhash_dust_walk_t  *w = data;

    sh_dust_host_info_t  *copy;

    copy = ngx_array_push(w->hosts);
    if (copy == NULL) {
        w->failed = 1;
        return 1;
    }

    *copy = *h;

    return 0;
}


static int ngx_libc_cdecl
ngx_http_simhash_dust_host_cmp(const void *a, const void *b)
{
    uint64_t  x = ((const sh_dust_host_info_t *) a)->host_hash;
    uint64_t  y = ((const sh_dust_host_info_t *) b)->host_hash;

    return (x > y) - (x < y);
}


ngx_array_t *
ngx_http_simhash_dust_rules(ngx_pool_t *pool, ngx_http_simhash_zone_t *zone,
    sh_dust_stats_t *st, ngx_uint_t candidates, ngx_log_t *log)
{
    ngx_uint_t                     i;
    sh_dust_host_info_t            key, *h;
    ngx_http_simhash_dust_walk_t   w;
    ngx_http_simhash_dust_rule_t  *rule;

    if (zone->sh == NULL || zone->sh->dust == NULL) {
        return NULL;
    }

    w.rules = ngx_array_create(pool, 16,
                               sizeof(ngx_http_simhash_dust_rule_t));
    w.hosts = ngx_array_create(pool, 16, sizeof(sh_dust_host_info_t));

    if (w.rules == NULL || w.hosts == NULL) {
        return NULL;
    }

    w.failed = 0;

    ngx_http_simhash_zone_lock(zone, log);

    sh_dust_stats(zone->sh->dust, st);
    sh_dust_foreach_rule(zone->sh->dust, 0, candidates != 0,
                         ngx_http_simhash_dust_rule_cb, &w);

    if (w.rules->nelts && !w.failed) {
        sh_dust_foreach_host(zone->sh->dust, ngx_http_simhash_dust_host_cb,
                             &w);
    }

    ngx_http_simhash_zone_unlock(zone);

    if (w.failed) {
        return NULL;
    }

    ngx_qsort(w.hosts->elts, w.hosts->nelts, sizeof(sh_dust_host_info_t),
              ngx_http_simhash_dust_host_cmp);

    rule = w.rules->elts;

    for (i = 0; i < w.rules->nelts; i++) {
        key.host_hash = rule[i].rule.host_hash;

        h = bsearch(&key, w.hosts->elts, w.hosts->nelts,
                    sizeof(sh_dust_host_info_t),
                    ngx_http_simhash_dust_host_cmp);

        if (h) {
            rule[i].saved = h->saved;
            rule[i].predictions = h->predictions;
        }
    }

    return w.rules;
}
