
/*
 * ngx_http_simhash_dust_replicate.h -- a DUST learner's rules between the
 * nodes of a replicated zone (worker 0's, beside the pump).
 *
 * The learner (ngx_http_simhash_dust.c) only keeps its change ring
 * (sh_dust_changes); it knows nothing of replication.  Worker 0 pulls
 * from it at every flush of the outbox: the rule changes not sent yet go
 * into the outbox as records of their own (NGX_HTTP_SIMHASH_OUT_DUST), and
 * every NGX_HTTP_SIMHASH_DUST_REPL_SWEEP seconds the counts that moved by
 * a step go too.  A DUST entry read from the stream is merged back into
 * the learner here.  The record is sh_dust's (SH_DUST_RULE_REC_LEN bytes,
 * pins dropped); the entry's form is sh_stream's.
 */


#ifndef _NGX_HTTP_SIMHASH_DUST_REPLICATE_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_DUST_REPLICATE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash.h"


/*
 * What was last sent or applied of each rule, in a direct-mapped table of
 * worker 0's own (a collision costs one record more), so that the sweep
 * sends only counts that moved by a step.
 */
typedef struct {
    uint64_t                       key;     /* 0: empty */
    uint32_t                       support;
    uint32_t                       against;
} ngx_http_simhash_dust_sent_t;

typedef struct {
    ngx_http_simhash_dust_sent_t  *slot;    /* NULL: the zone has no
                                               learner */
    ngx_uint_t                     mask;
    time_t                         next;    /* the next sweep */
} ngx_http_simhash_dust_repl_t;


/* worker 0, at start: the table (nothing when the zone has no dust=) */
ngx_int_t ngx_http_simhash_dust_repl_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, ngx_pool_t *pool);

/* under the zone's lock, at every flush: the rule changes not pulled yet
 * into the outbox */
void ngx_http_simhash_dust_repl_pull(ngx_http_simhash_zone_t *zone);

/* now and then (it takes the lock): the counts that moved by a step */
void ngx_http_simhash_dust_repl_sweep(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, ngx_log_t *log);

/* a DUST entry of the stream (its MAC verified): NGX_OK applied,
 * NGX_DECLINED ignored (no learner here), NGX_ERROR refused (damaged) */
ngx_int_t ngx_http_simhash_dust_repl_apply(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, u_char *rec, ngx_log_t *log);


#endif /* _NGX_HTTP_SIMHASH_DUST_REPLICATE_H_INCLUDED_ */
