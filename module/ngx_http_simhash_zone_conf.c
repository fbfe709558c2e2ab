
/*
 * The simhash_zone directive: a zone's parameters, checked and registered
 * as a shared memory zone of this module (its init is
 * ngx_http_simhash_zone_init, in ngx_http_simhash_zone.c).  The store's
 * parameters are read here; every other one goes to the zone's parts
 * (ngx_http_simhash_part_t: file= and save= to the saving part, dust= and
 * its options to the DUST learner), which also say what shared memory
 * they add.  Like the zone, this file names no part.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"


/*
 * simhash_zone zone=NAME:SIZE [keys=SIZE] [match=weighted|hamming]
 *              [distance=N] [threshold=T] [file=PATH] [save=TIME]
 *              [dust=SIZE] [dust_precision=P] [dust_evidence=N]
 *
 * (the parts' parameters: file= and save=, ngx_http_simhash_snapshot.c;
 * dust=, ngx_http_simhash_dust_conf.c, whose region is added to SIZE,
 * which stays the store's)
 *
 * Each parameter is parsed by ngx_http_simhash_zone_param(), or else by
 * the part that takes it; the zone is then registered as a shared memory
 * zone of this module.
 */

static char *ngx_http_simhash_zone_param(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_str_t *value, ssize_t *size);
static char *ngx_http_simhash_zone_parts_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
static char *ngx_http_simhash_zone_size(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_str_t *value, ssize_t *size);
static char *ngx_http_simhash_zone_rule(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);


char *
ngx_http_simhash_zone_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_main_conf_t  *smcf = conf;

    char                      *rv;
    ssize_t                    size;
    ngx_str_t                 *value;
    ngx_uint_t                 i;
    ngx_http_simhash_part_t  **parts;
    ngx_http_simhash_zone_t   *zone, **zp;

    value = cf->args->elts;
    parts = ngx_http_simhash_zone_parts();

    zone = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_zone_t));
    if (zone == NULL) {
        return NGX_CONF_ERROR;
    }

    zone->rule = SH_RULE_DEFAULT;
    zone->distance = NGX_CONF_UNSET_UINT;
    zone->threshold = NGX_CONF_UNSET;
    size = 0;

    for (i = 0; parts[i]; i++) {
        if (parts[i]->create_conf == NULL) {
            continue;
        }

        zone->conf[parts[i]->index] = parts[i]->create_conf(cf, zone);
        if (zone->conf[parts[i]->index] == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    for (i = 1; i < cf->args->nelts; i++) {
        rv = ngx_http_simhash_zone_param(cf, zone, &value[i], &size);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    if (zone->name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone=NAME:SIZE\" parameter",
                           &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_simhash_zone_rule(cf, zone) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_simhash_zone_capacity((size_t) size, zone->keys)
        < NGX_HTTP_SIMHASH_MIN_DOCS)
    {
        for (i = 1; i < cf->args->nelts; i++) {
            if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
                break;
            }
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           zone->keys ? "zone \"%V\" is too small for "
                                        "keys=%uz"
                                      : "zone \"%V\" is too small",
                           &value[i], zone->keys);
        return NGX_CONF_ERROR;
    }

    rv = ngx_http_simhash_zone_parts_conf(cf, zone);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    if (ngx_http_simhash_zone_find(smcf, &zone->name)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate simhash zone \"%V\"", &zone->name);
        return NGX_CONF_ERROR;
    }

    /* the parts' regions come on top of SIZE, which stays the store's */

    size += ngx_http_simhash_zone_parts_size(zone);

    zone->shm_zone = ngx_shared_memory_add(cf, &zone->name, size,
                                           &ngx_http_simhash_module);
    if (zone->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (zone->shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate zone \"%V\"", &zone->name);
        return NGX_CONF_ERROR;
    }

    zone->shm_zone->init = ngx_http_simhash_zone_init;
    zone->shm_zone->data = zone;

    zp = ngx_array_push(&smcf->zones);
    if (zp == NULL) {
        return NGX_CONF_ERROR;
    }

    *zp = zone;

    return NGX_CONF_OK;
}


static char *
ngx_http_simhash_zone_param(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    ngx_str_t *value, ssize_t *size)
{
    ngx_str_t                  s;
    ngx_int_t                  n;
    ngx_uint_t                 i;
    ngx_http_simhash_part_t  **parts, *part;

    parts = ngx_http_simhash_zone_parts();

    if (ngx_strncmp(value->data, "zone=", 5) == 0) {
        return ngx_http_simhash_zone_size(cf, zone, value, size);
    }

    if (ngx_strncmp(value->data, "distance=", 9) == 0) {

        n = ngx_atoi(value->data + 9, value->len - 9);

        if (n == NGX_ERROR || n > SH_MATCH_HMAX) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid distance \"%V\": must be "
                               "between 0 and %d", value, SH_MATCH_HMAX);
            return NGX_CONF_ERROR;
        }

        zone->distance = (ngx_uint_t) n;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "match=", 6) == 0) {

        if (sh_rule_parse((char *) value->data + 6, value->len - 6,
                          &zone->rule)
            != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": must be match=weighted "
                               "or match=hamming", value);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "threshold=", 10) == 0) {

        /* nats, up to four decimals: 10^4 units of a nat */
        n = ngx_atofp(value->data + 10, value->len - 10, 4);

        if (n == NGX_ERROR || n > 1000 * 10000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid threshold \"%V\": must be a number "
                               "of nats from 0 to 1000", value);
            return NGX_CONF_ERROR;
        }

        zone->threshold = sh_score_from_nats((double) n / 10000);
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "keys=", 5) == 0) {

        s.data = value->data + 5;
        s.len = value->len - 5;

        n = ngx_parse_size(&s);

        if (n == NGX_ERROR || n < 4096) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": the key text ring's size, "
                               "at least 4k", value);
            return NGX_CONF_ERROR;
        }

        zone->keys = (size_t) n;
        return NGX_CONF_OK;
    }

    /* a part's */

    for (i = 0; parts[i]; i++) {
        part = parts[i];

        if (part->param == NULL) {
            continue;
        }

        n = part->param(cf, zone, value);

        if (n != NGX_DECLINED) {
            return n == NGX_OK ? NGX_CONF_OK : NGX_CONF_ERROR;
        }
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                       value);
    return NGX_CONF_ERROR;
}


/* Every parameter read: each part checks its own. */

static char *
ngx_http_simhash_zone_parts_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone)
{
    char                      *rv;
    ngx_uint_t                 i;
    ngx_http_simhash_part_t  **parts, *part;

    parts = ngx_http_simhash_zone_parts();

    for (i = 0; parts[i]; i++) {
        part = parts[i];

        if (part->conf_done == NULL) {
            continue;
        }

        rv = part->conf_done(cf, zone);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    return NGX_CONF_OK;
}


/*
 * The match rule (src/sh_match.h): match=hamming takes distance= as its
 * radius (default 3, at most 7); match=weighted takes it as the cap on H
 * (default 10, at most 16) and threshold= as T in nats (default 12).
 */

static char *
ngx_http_simhash_zone_rule(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone)
{
    sh_match_opts_t  mo;

    sh_match_opts_init(&mo);
    sh_match_opts_rule(&mo, zone->rule);

    if (zone->distance == NGX_CONF_UNSET_UINT) {
        zone->distance = mo.h;
    }

    if (zone->rule == SH_RULE_HAMMING) {

        if (zone->distance > SH_H_MAX) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid distance=%ui: match=hamming takes "
                               "0 to %d", zone->distance, SH_H_MAX);
            return NGX_CONF_ERROR;
        }

        if (zone->threshold != (uint32_t) NGX_CONF_UNSET) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"threshold\" needs match=weighted");
            return NGX_CONF_ERROR;
        }
    }

    if (zone->threshold == (uint32_t) NGX_CONF_UNSET) {
        zone->threshold = mo.threshold;
    }

    return NGX_CONF_OK;
}


/* zone=NAME:SIZE */

static char *
ngx_http_simhash_zone_size(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    ngx_str_t *value, ssize_t *size)
{
    u_char     *p;
    ngx_str_t   s;

    zone->name.data = value->data + 5;

    p = (u_char *) ngx_strchr(zone->name.data, ':');

    if (p == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone size \"%V\"", value);
        return NGX_CONF_ERROR;
    }

    zone->name.len = p - zone->name.data;

    /* the name goes into the statistics as it is: no quoting needed */

    for (p = zone->name.data; p < zone->name.data + zone->name.len; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9')
              || *p == '_' || *p == '-' || *p == '.'))
        {
            break;
        }
    }

    if (zone->name.len == 0 || p < zone->name.data + zone->name.len) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone name \"%V\": letters, digits, "
                           "\"_\", \"-\" and \".\" only", value);
        return NGX_CONF_ERROR;
    }

    p = zone->name.data + zone->name.len;

    s.data = p + 1;
    s.len = value->data + value->len - s.data;

    *size = ngx_parse_size(&s);

    if (*size == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone size \"%V\"", value);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* A zone by name, or NULL; zones are declared anywhere in http{}. */

ngx_http_simhash_zone_t *
ngx_http_simhash_zone_find(ngx_http_simhash_main_conf_t *smcf,
    ngx_str_t *name)
{
    ngx_uint_t                 i;
    ngx_http_simhash_zone_t  **zones;

    zones = smcf->zones.elts;

    for (i = 0; i < smcf->zones.nelts; i++) {
        if (zones[i]->name.len == name->len
            && ngx_strncmp(zones[i]->name.data, name->data, name->len) == 0)
        {
            return zones[i];
        }
    }

    return NULL;
}
