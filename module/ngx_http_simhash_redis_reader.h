
/*
 * ngx_http_simhash_redis_reader.h -- hiredis's reply parser with bounded
 * reply objects of ours, for the Redis adapter
 * (ngx_http_simhash_redis.c; ngx_http_simhash_redis_reader.c says why).
 * It knows nothing of the connection: what it needs of it is here.
 */


#ifndef _NGX_HTTP_SIMHASH_REDIS_READER_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_REDIS_READER_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <hiredis/hiredis.h>


/*
 * What one reply may cost before the connection is dropped as hostile or
 * broken: a bulk string, an array's length, the bytes of everything read
 * for it so far (strings, reply objects and element pointers counted), and
 * the bytes received while it is not whole.  A reply holds at most about
 * 2 * max_reply bytes (its objects and the buffer it was read from).
 */
/* (the log says "16 MB" and "4096": change them with these) */
#define NGX_HTTP_SIMHASH_REDIS_MAX_REPLY     (16 * 1024 * 1024)
#define NGX_HTTP_SIMHASH_REDIS_MAX_ELEMENTS  4096


/* the element count of an array reply: int in hiredis 0.14, size_t from
 * 1.0 */
#if (HIREDIS_MAJOR >= 1)
typedef size_t  ngx_http_simhash_redis_count_t;
#else
typedef int     ngx_http_simhash_redis_count_t;
#endif


/* a string of a reply being read (its place: task->parent, task->idx) */
typedef void (*ngx_http_simhash_redis_string_pt)(void *data,
    const redisReadTask *task, const char *str, size_t len);

/* one connection's reader, and what bounds it */
typedef struct {
    redisReader                       *reader;  /* NULL: none */
    ngx_uint_t                         asked;   /* replies awaited since
                                                   the connect: more is
                                                   unsolicited */
    ngx_uint_t                         started; /* replies begun */
    size_t                             cost;    /* of the reply being
                                                   read */
    const char                        *refused; /* why it stopped (a reply
                                                   over a bound,
                                                   unsolicited) */
    ngx_http_simhash_redis_string_pt   string;  /* NULL: none */
    void                              *data;    /* string's */
} ngx_http_simhash_redis_reader_t;


/* A reader whose objects are ours, its counts at 0: NGX_OK, or NGX_ERROR
 * (no memory). */
ngx_int_t ngx_http_simhash_redis_reader_init(
    ngx_http_simhash_redis_reader_t *rr);

/* The reader freed, with any reply it was making. */
void ngx_http_simhash_redis_reader_free(ngx_http_simhash_redis_reader_t *rr);

/* Bytes the socket gave: NGX_OK, or NGX_ERROR (no memory). */
ngx_int_t ngx_http_simhash_redis_reader_feed(
    ngx_http_simhash_redis_reader_t *rr, u_char *buf, size_t len);

/*
 * The next whole reply, or NULL when none is whole yet: NGX_OK; NGX_ERROR
 * when the reader stopped (a reply over a bound or unsolicited: rr->refused
 * says which; a protocol error: ngx_http_simhash_redis_reader_error()).
 */
ngx_int_t ngx_http_simhash_redis_reader_get(
    ngx_http_simhash_redis_reader_t *rr, redisReply **reply);

/* Why the reader stopped, in hiredis's words. */
const char *ngx_http_simhash_redis_reader_error(
    ngx_http_simhash_redis_reader_t *rr);

/* A reply of ours and all it holds (NULL: nothing). */
void ngx_http_simhash_redis_reply_free(void *reply);


#endif /* _NGX_HTTP_SIMHASH_REDIS_READER_H_INCLUDED_ */
