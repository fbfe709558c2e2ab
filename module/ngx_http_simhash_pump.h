
/*
 * ngx_http_simhash_pump.h -- worker 0's pump of a replicated zone, shared
 * by its files (nothing else includes this):
 *
 *   ngx_http_simhash_pump.c          start and stop, the two connections
 *   ngx_http_simhash_pump_publish.c  the outbox to the stream (XADD)
 *   ngx_http_simhash_pump_read.c     the stream to this node (XINFO
 *                                    STREAM, XREAD), the lost/gap policy,
 *                                    the pace
 *   ngx_http_simhash_pump_apply.c    one entry read: checked, and applied
 *                                    to the zone or the DUST learner
 *
 * The Redis side of each is ngx_http_simhash_redis*.c: the connection,
 * and the replies parsed.
 */


#ifndef _NGX_HTTP_SIMHASH_PUMP_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_PUMP_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_redis.h"
#include "ngx_http_simhash_dust_replicate.h"


#define NGX_HTTP_SIMHASH_FLUSH_EVERY    10      /* ms between outbox scans */
#define NGX_HTTP_SIMHASH_INFLIGHT       512     /* XADDs awaiting a reply */
#define NGX_HTTP_SIMHASH_READ_COUNT     256     /* entries per XREAD: what
                                                   one tick handles */
#define NGX_HTTP_SIMHASH_READ_BLOCK     2000    /* ms an XREAD may wait */


/* worker 0's side: the two connections and the publisher's state */
struct ngx_http_simhash_link_s {
    ngx_http_simhash_replicate_t  *rp;
    ngx_http_simhash_redis_t       pub;
    ngx_http_simhash_redis_t       sub;
    ngx_event_t                    flush;
    ngx_log_t                     *log;

    uint64_t                       sent;    /* outbox position sent to */
    uint64_t                       inflight[NGX_HTTP_SIMHASH_INFLIGHT];
    u_char                         inflight_dust[NGX_HTTP_SIMHASH_INFLIGHT];
    ngx_uint_t                     first;   /* the oldest XADD awaiting */
    ngx_uint_t                     n;       /* XADDs awaiting */
    unsigned                       exhausted:1;  /* the stream takes no
                                                    entry (its last id is
                                                    the largest) */
    unsigned                       halted:1;     /* an XADD of those
                                                    awaiting failed: the
                                                    others move nothing */

    u_char                         maxlen[NGX_INT_T_LEN];
    size_t                         maxlen_len;
    u_char                         block[NGX_INT_T_LEN];
    size_t                         block_len;
    uint32_t                       seed;    /* sh_stream_seed of the zone */

    ngx_uint_t                     refused;      /* since the last line */
    time_t                         refused_logged;

    /* the reader */
    ngx_event_t                    pace;    /* rate=: the next XREAD */
    ngx_uint_t                     tokens;  /* entries it may read now */
    ngx_msec_t                     refilled;
    ngx_uint_t                     count;   /* entries per XREAD now: 1
                                               after a reply over a bound */
    ngx_uint_t                     asked;   /* by the XREAD awaited */
    ngx_msec_t                     xinfo_last;   /* catching up: the last
                                                    check of the stream */
    ngx_http_simhash_writer_t     *writer;  /* the entry's, found by
                                               writer_check; NULL: new */
    unsigned                       reading:1;    /* an XREAD awaited */
    unsigned                       checking:1;   /* an XINFO awaited */
    time_t                         check_after;  /* no XINFO before */
    unsigned                       peeked:1;     /* its last entry id */
    unsigned                       told_missing:1;
    unsigned                       told_start:1;
    sh_stream_id_t                 peek;

    ngx_http_simhash_dust_repl_t   dust;    /* the rules: what was sent */
};


/* the publisher (ngx_http_simhash_pump_publish.c) */
void ngx_http_simhash_pump_pub_ready(ngx_http_simhash_redis_t *rd);
void ngx_http_simhash_pump_pub_down(ngx_http_simhash_redis_t *rd);
void ngx_http_simhash_pump_flush_handler(ngx_event_t *ev);

/* the reader (ngx_http_simhash_pump_read.c) */
void ngx_http_simhash_pump_sub_ready(ngx_http_simhash_redis_t *rd);
void ngx_http_simhash_pump_sub_down(ngx_http_simhash_redis_t *rd);
void ngx_http_simhash_pump_sub_peek(ngx_http_simhash_redis_t *rd,
    const redisReadTask *task, const char *str, size_t len);
void ngx_http_simhash_pump_pace_handler(ngx_event_t *ev);

/* one entry of the stream (ngx_http_simhash_pump_apply.c): NGX_OK
 * applied (or outdated, or our own), NGX_DECLINED refused; either way the
 * last id applied is id now */
ngx_int_t ngx_http_simhash_pump_apply(ngx_http_simhash_link_t *lk,
    sh_stream_id_t *id, redisReply *entry);

/* ms since 1970, nginx's cached clock */
uint64_t ngx_http_simhash_pump_now(void);


#endif /* _NGX_HTTP_SIMHASH_PUMP_H_INCLUDED_ */
