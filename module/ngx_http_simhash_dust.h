/*
 * ngx_http_simhash_dust.h -- the DUST learner (src/sh_dust.h) as a part of
 * a simhash zone: its configuration (ngx_http_simhash_dust_conf.c), its
 * shared state and what the request path and replication ask of it
 * (ngx_http_simhash_dust.c).
 */


#ifndef _NGX_HTTP_SIMHASH_DUST_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_DUST_H_INCLUDED_


#include "ngx_http_simhash.h"
#include "sh_dust.h"


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
    uint64_t                     rep;       /* the document */
    sh_dust_why_t                why;
} ngx_http_simhash_prediction_t;

/* the configuration: ngx_http_simhash_dust_conf.c */

/* a zone's learner as configured: the part's conf slot */
typedef struct {
    size_t                       size;      /* dust=: the region's bytes;
                                               0: no learner */
    size_t                       shm;       /* what the region adds to the
                                               shared memory zone */
    sh_dust_opts_t               opts;      /* dust_precision=,
                                               dust_evidence=, the table
                                               sizes from dust= */
    ngx_array_t                 *pins;      /* its simhash_dust_rule:
                                               ngx_http_simhash_dust_pin_t */
} ngx_http_simhash_dust_conf_t;

/* a location's: simhash_dust, simhash_dust_verify,
 * simhash_dust_credentials (the location configuration's `dust`) */
struct ngx_http_simhash_dust_loc_s {
    ngx_uint_t                   mode;      /* NGX_HTTP_SIMHASH_DUST_* */
    ngx_uint_t                   verify;    /* the share of predictions
                                               fetched anyway, in
                                               millionths */
    ngx_flag_t                   credentials;   /* requests with
                                               credentials may be
                                               predicted */
    ngx_str_t                    where;     /* the simhash_dust line, for
                                               nginx -t's messages */
};

#define NGX_HTTP_SIMHASH_DUST_OFF    0
#define NGX_HTTP_SIMHASH_DUST_LEARN  1
#define NGX_HTTP_SIMHASH_DUST_ON     2

ngx_http_simhash_dust_loc_t *ngx_http_simhash_dust_create_loc(
    ngx_conf_t *cf);
/* inherited from prev; with its zone known (conf->zone), checked */
char *ngx_http_simhash_dust_merge_loc(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *prev, ngx_http_simhash_loc_conf_t *conf);
char *ngx_http_simhash_dust_check_loc(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *conf);
char *ngx_http_simhash_dust_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_simhash_dust_credentials_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);

void *ngx_http_simhash_dust_create_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
/* simhash_zone's dust=, dust_precision=, dust_evidence= parameters:
 * NGX_DECLINED when `value` is none of them */
ngx_int_t ngx_http_simhash_dust_param(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_str_t *value);
char *ngx_http_simhash_dust_conf_done(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
size_t ngx_http_simhash_dust_shm_size(ngx_http_simhash_zone_t *zone);
char *ngx_http_simhash_dust_verify_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_dust_rule_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_simhash_dust_postconfiguration(ngx_conf_t *cf);
void ngx_http_simhash_dust_exit_master(ngx_cycle_t *cycle);


/*
 * The learner's shared state (the part's shared slot): its region, a
 * separate slab allocation of `size` bytes, under the zone's lock like the
 * store; the options and the key it was formatted under; `logged`: the
 * last rule change logged (each is logged once, by whichever worker sees
 * it first); `published`: the last one put in the outbox (replicated).
 */
typedef struct {
    sh_dust_t                   *dust;      /* NULL: no learner */
    size_t                       size;
    sh_dust_opts_t               opts;
    uint64_t                     logged;
    u_char                       key[32];
    uint64_t                     published;
} ngx_http_simhash_dust_shctx_t;

extern ngx_http_simhash_part_t  ngx_http_simhash_dust_part;

#define ngx_http_simhash_dust_conf(zone)                                     \
    ((ngx_http_simhash_dust_conf_t *)                                        \
         ngx_http_simhash_part_conf(zone, ngx_http_simhash_dust_part))
#define ngx_http_simhash_dust_shctx(zone)                                    \
    ((ngx_http_simhash_dust_shctx_t *)                                       \
         ngx_http_simhash_part_shm(zone, ngx_http_simhash_dust_part))

/* the zone's learner, NULL when it has none */
static ngx_inline sh_dust_t *
ngx_http_simhash_dust_learner(ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_dust_shctx_t  *ds;

    ds = ngx_http_simhash_dust_shctx(zone);

    return ds ? ds->dust : NULL;
}


/* the learner in the zone: ngx_http_simhash_dust.c */

/* under the lock: one decision of the module; returns the number of rule
 * changes (then ngx_http_simhash_dust_log() after the lock is released) */
ngx_int_t ngx_http_simhash_dust_observe(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint64_t rep);
void ngx_http_simhash_dust_log(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);

/* NGX_OK with a prediction whose original is still stored, NGX_DECLINED */
ngx_uint_t ngx_http_simhash_dust_same_path(ngx_http_simhash_zone_t *zone,
    ngx_str_t *a, ngx_str_t *b, ngx_log_t *log);
/* the URL of the request's canonical form when it was itself fetched as
 * the prediction's document (sh_dust_fetched_form): NGX_OK with it in the
 * request's pool, NGX_DECLINED */
ngx_int_t ngx_http_simhash_dust_fetched_form(ngx_http_request_t *r,
    ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    ngx_http_simhash_prediction_t *p, ngx_str_t *form);
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
/* a rule's own fields as JSON members, for the stats and "why?" */
u_char *ngx_http_simhash_rule_json(u_char *p, sh_dust_rule_info_t *ri);

/* replication of the rules: ngx_http_simhash_dust_replicate.h, which
 * reads the learner through this header (no arrow back) */


#endif /* _NGX_HTTP_SIMHASH_DUST_H_INCLUDED_ */
