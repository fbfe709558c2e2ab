
/*
 * ngx_http_simhash_redis_reader.h -- hiredis's reply parser with bounded
 * reply objects of ours, for the Redis adapter alone
 * (ngx_http_simhash_redis.c; ngx_http_simhash_redis_reader.c says why).
 */


#ifndef _NGX_HTTP_SIMHASH_REDIS_READER_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_REDIS_READER_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash_redis.h"


/* A reader whose objects are ours; NULL: no memory. */
redisReader *ngx_http_simhash_redis_reader_create(void);

/*
 * The next whole reply of rd's reader, or NULL when none is whole yet:
 * NGX_OK; NGX_ERROR when the reader stopped (a protocol error, or a reply
 * over a bound: then rd->refused says which).
 */
ngx_int_t ngx_http_simhash_redis_reader_get(ngx_http_simhash_redis_t *rd,
    redisReply **reply);

/* A reply of ours and all it holds (NULL: nothing). */
void ngx_http_simhash_redis_reply_free(void *reply);


#endif /* _NGX_HTTP_SIMHASH_REDIS_READER_H_INCLUDED_ */
