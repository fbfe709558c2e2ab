
/*
 * ngx_http_simhash_redis_reply.h -- the replies of the stream commands
 * worker 0's pump sends (XADD, XINFO STREAM, XREAD), parsed: what Redis
 * said, in plain structs, and nothing of what to do about it (that is the
 * pump's).
 */


#ifndef _NGX_HTTP_SIMHASH_REDIS_REPLY_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_REDIS_REPLY_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash_redis.h"
#include "sh_stream.h"


/* XINFO STREAM: the fields the pump decides on, each when present */
typedef struct {
    sh_stream_id_t               first;     /* first-entry's id */
    sh_stream_id_t               last;      /* last-generated-id */
    int64_t                      length;
    int64_t                      added;     /* entries-added (Redis 7) */
    unsigned                     has_first:1;
    unsigned                     has_last:1;
    unsigned                     has_length:1;
    unsigned                     has_added:1;
} ngx_http_simhash_redis_xinfo_t;


/*
 * XINFO STREAM's reply: NGX_OK with xi filled; NGX_DECLINED when the
 * stream does not exist ("no such key"); NGX_ERROR for any other error
 * reply (its text is the reply's).
 */
ngx_int_t ngx_http_simhash_redis_xinfo(redisReply *reply,
    ngx_http_simhash_redis_xinfo_t *xi);

/*
 * XREAD's reply for one stream, [[stream, [[id, fields], ...]]]: the
 * entries' array, or NULL when the reply has another shape.
 */
redisReply *ngx_http_simhash_redis_xread_entries(redisReply *reply);

/* One entry of them, [id, fields]: NGX_OK with its id, or NGX_ERROR. */
ngx_int_t ngx_http_simhash_redis_entry(redisReply *entry,
    sh_stream_id_t *id);

/* A stream id, from a string or status reply (XADD's): NGX_OK or
 * NGX_ERROR. */
ngx_int_t ngx_http_simhash_redis_id(redisReply *r, sh_stream_id_t *id);

/* An error reply's text contains s (case-insensitive). */
ngx_uint_t ngx_http_simhash_redis_error_is(redisReply *r, const char *s);


#endif /* _NGX_HTTP_SIMHASH_REDIS_REPLY_H_INCLUDED_ */
