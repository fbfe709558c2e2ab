/*
 * The DUST learner's configuration, all of it: simhash_zone's dust=,
 * dust_precision= and dust_evidence= (through the part interface: the
 * zone core hands each parameter to its part) into the zone's DUST conf;
 * simhash_dust, simhash_dust_verify and simhash_dust_credentials into a
 * location's (ngx_http_simhash_dust_loc_t), inherited and checked against
 * its zone here; simhash_dust_rule, each rule to its zone at
 * postconfiguration.  The learner in the zone: ngx_http_simhash_dust.c.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"
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


static size_t ngx_http_simhash_dust_region(ngx_uint_t units);
static ngx_int_t ngx_http_simhash_dust_pattern_ok(u_char *p, u_char *last);
static ngx_int_t ngx_http_simhash_dust_kind(ngx_str_t *v,
    sh_dust_kind_t *kind, u_char **arg, ngx_pool_t *pool);


static size_t
ngx_http_simhash_dust_region(ngx_uint_t units)
{
    return sh_dust_region_size((uint32_t) units,
                           (uint32_t) (units * NGX_HTTP_SIMHASH_DUST_CANDS),
                           (uint32_t) (units * NGX_HTTP_SIMHASH_DUST_EVIDENCE),
                           (uint32_t) (units
                                       * NGX_HTTP_SIMHASH_DUST_CANONICAL));
}


/* A zone's learner: none until dust= says its size. */

void *
ngx_http_simhash_dust_create_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_dust_conf_t  *dc;

    dc = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_dust_conf_t));
    if (dc == NULL) {
        return NULL;
    }

    sh_dust_opts_init(&dc->opts);

    return dc;
}


/* simhash_zone ... dust=SIZE|off dust_precision=P dust_evidence=N */

ngx_int_t
ngx_http_simhash_dust_param(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    ngx_str_t *value)
{
    ssize_t                        size;
    ngx_int_t                      n;
    ngx_str_t                      s;
    ngx_http_simhash_dust_conf_t  *dc;

    if (ngx_strncmp(value->data, "dust", 4) != 0) {
        return NGX_DECLINED;
    }

    dc = ngx_http_simhash_dust_conf(zone);

    if (ngx_strncmp(value->data, "dust=", 5) == 0) {

        s.data = value->data + 5;
        s.len = value->len - 5;

        if (s.len == 3 && ngx_strncmp(s.data, "off", 3) == 0) {
            dc->size = 0;
            return NGX_OK;
        }

        size = ngx_parse_size(&s);

        if (size == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": the DUST learner's size "
                               "(e.g. dust=8m), or dust=off", value);
            return NGX_ERROR;
        }

        dc->size = (size_t) size;
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

        dc->opts.min_precision = (double) n / 10000;
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

        dc->opts.min_evidence = (uint32_t) n;
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
ngx_http_simhash_dust_conf_done(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone)
{
    size_t                         size;
    ngx_uint_t                     units;
    sh_dust_opts_t                 def;
    ngx_http_simhash_dust_conf_t  *dc;

    dc = ngx_http_simhash_dust_conf(zone);

    if (dc->size == 0) {
        sh_dust_opts_init(&def);

        if (dc->opts.min_precision != def.min_precision
            || dc->opts.min_evidence != def.min_evidence)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"dust_precision\" and \"dust_evidence\" "
                               "need the \"dust\" parameter");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (dc->size < ngx_http_simhash_dust_region(
                                           NGX_HTTP_SIMHASH_DUST_MIN_UNITS))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "dust=%uz is too small for the DUST learner of "
                           "zone \"%V\": at least %uz bytes (%d hosts)",
                           dc->size, &zone->name,
                           ngx_http_simhash_dust_region(
                                           NGX_HTTP_SIMHASH_DUST_MIN_UNITS),
                           NGX_HTTP_SIMHASH_DUST_MIN_UNITS);
        return NGX_CONF_ERROR;
    }

    units = NGX_HTTP_SIMHASH_DUST_MIN_UNITS;

    while (units < NGX_HTTP_SIMHASH_DUST_MAX_UNITS
           && ngx_http_simhash_dust_region(units * 2) <= dc->size)
    {
        units *= 2;
    }

    dc->opts.hosts = (uint32_t) units;
    dc->opts.candidates = (uint32_t) (units
                                             * NGX_HTTP_SIMHASH_DUST_CANDS);
    dc->opts.evidence_slots = (uint32_t) (units
                                          * NGX_HTTP_SIMHASH_DUST_EVIDENCE);
    dc->opts.canonical_slots = (uint32_t) (units
                                         * NGX_HTTP_SIMHASH_DUST_CANONICAL);

    size = ngx_http_simhash_dust_region(units);

    dc->size = size;
    dc->shm = ngx_align(size, ngx_pagesize)
              + (size / ngx_pagesize + 1) * 64 + 2 * ngx_pagesize;

    return NGX_CONF_OK;
}


size_t
ngx_http_simhash_dust_shm_size(ngx_http_simhash_zone_t *zone)
{
    return ngx_http_simhash_dust_conf(zone)->shm;
}


/* A location's: every setting unset, for the merge. */

ngx_http_simhash_dust_loc_t *
ngx_http_simhash_dust_create_loc(ngx_conf_t *cf)
{
    ngx_http_simhash_dust_loc_t  *dl;

    dl = ngx_palloc(cf->pool, sizeof(ngx_http_simhash_dust_loc_t));
    if (dl == NULL) {
        return NULL;
    }

    dl->mode = NGX_CONF_UNSET_UINT;
    dl->verify = NGX_CONF_UNSET_UINT;
    dl->credentials = NGX_CONF_UNSET;
    ngx_str_null(&dl->where);

    return dl;
}


/* simhash_dust_verify: one prediction in 16 fetched anyway */

char *
ngx_http_simhash_dust_merge_loc(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *prev, ngx_http_simhash_loc_conf_t *conf)
{
    ngx_http_simhash_dust_loc_t  *dl, *pl;

    dl = conf->dust;
    pl = prev->dust;

    ngx_conf_merge_uint_value(dl->mode, pl->mode, NGX_HTTP_SIMHASH_DUST_OFF);
    ngx_conf_merge_uint_value(dl->verify, pl->verify, 62500);
    ngx_conf_merge_value(dl->credentials, pl->credentials, 0);

    if (dl->where.data == NULL) {
        dl->where = pl->where;
    }

    return NGX_CONF_OK;
}


/* A location that learns or predicts: its zone must have a learner. */

char *
ngx_http_simhash_dust_check_loc(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *conf)
{
    /* the line to fix is the simhash_dust one: the zone's is named too,
     * for the simhash it uses may be far from it (another file) */
    if (conf->dust->mode != NGX_HTTP_SIMHASH_DUST_OFF
        && ngx_http_simhash_dust_conf(conf->zone)->size == 0)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash_dust needs a DUST learner: simhash zone "
                      "\"%V\" (simhash in %V) has no dust=SIZE, in %V",
                      &conf->zone->name, &conf->zone_where,
                      conf->dust->where.data ? &conf->dust->where
                                             : &conf->zone_where);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * simhash_dust off | learn | on, and simhash_dust_credentials on | off:
 * nginx's own enum and flag slots, on the location's DUST settings.
 */

char *
ngx_http_simhash_dust_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_command_t  c;

    static ngx_conf_enum_t  modes[] = {
        { ngx_string("off"), NGX_HTTP_SIMHASH_DUST_OFF },
        { ngx_string("learn"), NGX_HTTP_SIMHASH_DUST_LEARN },
        { ngx_string("on"), NGX_HTTP_SIMHASH_DUST_ON },
        { ngx_null_string, 0 }
    };

    c = *cmd;
    c.offset = offsetof(ngx_http_simhash_dust_loc_t, mode);
    c.post = modes;

    ngx_http_simhash_where(cf, &slcf->dust->where);

    return ngx_conf_set_enum_slot(cf, &c, slcf->dust);
}


char *
ngx_http_simhash_dust_credentials_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_command_t  c;

    c = *cmd;
    c.offset = offsetof(ngx_http_simhash_dust_loc_t, credentials);
    c.post = NULL;

    return ngx_conf_set_flag_slot(cf, &c, slcf->dust);
}


/* simhash_dust_verify RATE: "6.25%" or a fraction, "0.0625" */

char *
ngx_http_simhash_dust_verify_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_int_t   n;
    ngx_str_t  *value;

    if (slcf->dust->verify != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len > 1 && value[1].data[value[1].len - 1] == '%') {
        /* percent, four decimals: millionths */
        n = ngx_atofp(value[1].data, value[1].len - 1, 4);

        if (n != NGX_ERROR && n <= 1000000) {
            slcf->dust->verify = (ngx_uint_t) n;
            return NGX_CONF_OK;
        }

    } else {
        n = ngx_atofp(value[1].data, value[1].len, 6);

        if (n != NGX_ERROR && n <= 1000000) {
            slcf->dust->verify = (ngx_uint_t) n;
            return NGX_CONF_OK;
        }
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid rate \"%V\": a percentage (\"6.25%%\") or "
                       "a fraction (\"0.0625\") of the predictions",
                       &value[1]);

    return NGX_CONF_ERROR;
}


/*
 * RULE of simhash_dust_rule: "drop_param=sid", "sort_params",
 * "drop_value=lang=en" (the argument is everything after the first "="),
 * ...
 */

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
        { ngx_string("drop_path_param"), SH_DUST_DROP_PATH_PARAM, 1 },
        { ngx_string("drop_value"), SH_DUST_DROP_VALUE, 1 },
        { ngx_string("param_path"), SH_DUST_PARAM_PATH, 1 }
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
 * pattern= of simhash_dust_rule: "/dir/", "/" or, a script's scope,
 * "/dir/page.php" or "/page.php" (a handler's name, sh_dust_is_script, no
 * trailing slash): the scopes the learner names (docs/DUST.md, "Rules and
 * their scope").
 */

static ngx_int_t
ngx_http_simhash_dust_pattern_ok(u_char *p, u_char *last)
{
    u_char  *slash;

    if (p == last || p[0] != '/') {
        return NGX_ERROR;
    }

    slash = ngx_strlchr(p + 1, last - 1, '/');

    if (slash == NULL) {
        return NGX_OK;                  /* "/", "/dir/", "/page.php" */
    }

    if (last[-1] == '/' || ngx_strlchr(slash + 1, last, '/') != NULL
        || !sh_dust_is_script((char *) slash + 1, last - slash - 1))
    {
        return NGX_ERROR;
    }

    return NGX_OK;                      /* "/dir/page.php" */
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

            if (ngx_http_simhash_dust_pattern_ok(pin->pattern,
                                                 v->data + v->len)
                != NGX_OK)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"%V\": a first path "
                                   "component, \"/dir/\", \"/\" for "
                                   "root-level files, or a script, "
                                   "\"/dir/page.php\"", v);
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
                               "drop_path_param=NAME, drop_value=NAME=VALUE, "
                               "sort_params, trailing_slash, "
                               "index_file=NAME, path_case, "
                               "drop_component=NAME, "
                               "param_path=NAME=/PREFIX/, host_alias=HOST",
                               v);
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
ngx_http_simhash_dust_exit_master(ngx_cycle_t *cycle)
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
ngx_http_simhash_dust_postconfiguration(ngx_conf_t *cf)
{
    char                           err[512];
    ngx_uint_t                     i;
    ngx_http_simhash_zone_t      **zones, *zone;
    ngx_http_simhash_dust_pin_t   *pins, *pin;
    ngx_http_simhash_dust_conf_t  *dc;
    ngx_http_simhash_main_conf_t  *smcf;

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);
    zones = smcf->zones.elts;

    for (i = 0; !sh_site_loaded() && i < smcf->zones.nelts; i++) {
        if (ngx_http_simhash_dust_conf(zones[i])->size == 0) {
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

        dc = ngx_http_simhash_dust_conf(zone);

        if (dc->size == 0) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "simhash zone \"%V\" has no DUST learner (its "
                          "simhash_zone has no dust=SIZE) in %V",
                          &zone->name, &pins[i].where);
            return NGX_ERROR;
        }

        if (dc->pins == NULL) {
            dc->pins = ngx_array_create(cf->pool, 4,
                                        sizeof(ngx_http_simhash_dust_pin_t));
            if (dc->pins == NULL) {
                return NGX_ERROR;
            }
        }

        pin = ngx_array_push(dc->pins);
        if (pin == NULL) {
            return NGX_ERROR;
        }

        *pin = pins[i];
    }

    return NGX_OK;
}
