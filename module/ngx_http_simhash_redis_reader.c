
/*
 * hiredis's reply parser (its reader, read.h) with reply objects of ours:
 * the Redis adapter's reading (ngx_http_simhash_redis.c) feeds it what
 * the socket gave, and takes whole replies from it.
 *
 * Why objects of ours: each object of a reply is counted before it is
 * made, so that a reply over a bound (an array of more than 4096
 * elements, more than 16 MB of objects) or one that no command asked for
 * stops the reader before the memory is taken, or before a reply reaches
 * a callback that expects none.  redisReaderCreateWithFunctions() is the
 * reader's documented way to give it such functions (read.h's public API
 * for the protocol parser); the objects are hiredis.h's redisReply, which
 * the callbacks read, made and freed here.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash_redis_reader.h"


static ngx_int_t ngx_http_simhash_redis_cost(const redisReadTask *task,
    size_t cost);
static void *ngx_http_simhash_redis_object(const redisReadTask *task,
    int type);
static void *ngx_http_simhash_redis_half(const redisReadTask *task,
    redisReply *r);
static void *ngx_http_simhash_redis_string(const redisReadTask *task,
    char *str, size_t len);
static void *ngx_http_simhash_redis_array(const redisReadTask *task,
    ngx_http_simhash_redis_count_t elements);
static void *ngx_http_simhash_redis_integer(const redisReadTask *task,
    long long value);
static void *ngx_http_simhash_redis_nil(const redisReadTask *task);
#if (HIREDIS_MAJOR >= 1)
static void *ngx_http_simhash_redis_double(const redisReadTask *task,
    double value, char *str, size_t len);
static void *ngx_http_simhash_redis_bool(const redisReadTask *task,
    int value);
#endif


/*
 * hiredis 1.0 (Debian 13 and later) reads RESP3 too: arrays are counted in
 * size_t, and doubles and booleans have functions of their own, which a
 * hostile server may send whatever was asked.  0.14 (Debian 12) has four.
 */
static redisReplyObjectFunctions  ngx_http_simhash_redis_fn = {
    ngx_http_simhash_redis_string,
    ngx_http_simhash_redis_array,
    ngx_http_simhash_redis_integer,
#if (HIREDIS_MAJOR >= 1)
    ngx_http_simhash_redis_double,
    ngx_http_simhash_redis_nil,
    ngx_http_simhash_redis_bool,
#else
    ngx_http_simhash_redis_nil,
#endif
    ngx_http_simhash_redis_reply_free
};

/* the reader at work (one process, one thread) */
static ngx_http_simhash_redis_reader_t  *ngx_http_simhash_redis_reading;


ngx_int_t
ngx_http_simhash_redis_reader_init(ngx_http_simhash_redis_reader_t *rr)
{
    rr->asked = 0;
    rr->started = 0;
    rr->cost = 0;
    rr->refused = NULL;

    rr->reader = redisReaderCreateWithFunctions(&ngx_http_simhash_redis_fn);

    return rr->reader ? NGX_OK : NGX_ERROR;
}


void
ngx_http_simhash_redis_reader_free(ngx_http_simhash_redis_reader_t *rr)
{
    if (rr->reader) {
        redisReaderFree(rr->reader);
        rr->reader = NULL;
    }
}


ngx_int_t
ngx_http_simhash_redis_reader_feed(ngx_http_simhash_redis_reader_t *rr,
    u_char *buf, size_t len)
{
    return redisReaderFeed(rr->reader, (char *) buf, len) == REDIS_OK
           ? NGX_OK : NGX_ERROR;
}


ngx_int_t
ngx_http_simhash_redis_reader_get(ngx_http_simhash_redis_reader_t *rr,
    redisReply **reply)
{
    int    rc;
    void  *r;

    r = NULL;

    ngx_http_simhash_redis_reading = rr;
    rc = redisReaderGetReply(rr->reader, &r);
    ngx_http_simhash_redis_reading = NULL;

    *reply = r;

    return (rc == REDIS_OK) ? NGX_OK : NGX_ERROR;
}


const char *
ngx_http_simhash_redis_reader_error(ngx_http_simhash_redis_reader_t *rr)
{
    return redisReaderGetError(rr->reader);
}


/*
 * The reader's object functions: each object of a reply is counted before
 * it is made.  NULL makes the reader fail (rr->refused says why): the
 * connection ends, every callback gets a NULL reply, and the partial
 * reply is freed by the reader, with ngx_http_simhash_redis_reply_free().
 */

static ngx_int_t
ngx_http_simhash_redis_cost(const redisReadTask *task, size_t cost)
{
    ngx_http_simhash_redis_reader_t  *rr;

    rr = ngx_http_simhash_redis_reading;

    if (rr == NULL) {
        return NGX_OK;
    }

    if (task->parent == NULL) {
        /* a reply begins: one per command sent, never more */

        if (++rr->started > rr->asked) {
            rr->refused = "a reply that no command asked for";
            return NGX_ERROR;
        }

        rr->cost = 0;
    }

    rr->cost += sizeof(redisReply) + cost;

    if (rr->cost > NGX_HTTP_SIMHASH_REDIS_MAX_REPLY) {
        rr->refused = "a reply larger than 16 MB";
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A reply object (hiredis.h's redisReply, which the callbacks read), put
 * in its place in its parent array: the task says where.
 */

static void *
ngx_http_simhash_redis_object(const redisReadTask *task, int type)
{
    redisReply  *r, *parent;

    r = ngx_calloc(sizeof(redisReply), ngx_cycle->log);
    if (r == NULL) {
        return NULL;
    }

    r->type = type;

    if (task->parent) {
        parent = task->parent->obj;
        parent->element[task->idx] = r;
    }

    return r;
}


/*
 * An object that failed half-made (no memory for its string or elements):
 * in its parent already, it goes with the partial reply the reader frees;
 * a reply's first object is known to no one else.
 */

static void *
ngx_http_simhash_redis_half(const redisReadTask *task, redisReply *r)
{
    if (task->parent == NULL) {
        ngx_http_simhash_redis_reply_free(r);
    }

    return NULL;
}


static void *
ngx_http_simhash_redis_string(const redisReadTask *task, char *str,
    size_t len)
{
    redisReply                       *r;
    ngx_http_simhash_redis_reader_t  *rr;

    if (ngx_http_simhash_redis_cost(task, len) != NGX_OK) {
        return NULL;
    }

    rr = ngx_http_simhash_redis_reading;

    if (rr && rr->string) {
        rr->string(rr->data, task, str, len);
    }

    r = ngx_http_simhash_redis_object(task, task->type);
    if (r == NULL) {
        return NULL;
    }

    /* NUL-terminated as hiredis's own: callers may print it with %s */

    r->str = ngx_alloc(len + 1, ngx_cycle->log);
    if (r->str == NULL) {
        return ngx_http_simhash_redis_half(task, r);
    }

    ngx_memcpy(r->str, str, len);
    r->str[len] = '\0';
    r->len = len;

    return r;
}


static void *
ngx_http_simhash_redis_array(const redisReadTask *task,
    ngx_http_simhash_redis_count_t elements)
{
    redisReply  *r;

    if (elements > NGX_HTTP_SIMHASH_REDIS_MAX_ELEMENTS) {
        if (ngx_http_simhash_redis_reading) {
            ngx_http_simhash_redis_reading->refused =
                "an array of more than 4096 elements";
        }

        return NULL;
    }

    if (ngx_http_simhash_redis_cost(task, elements * sizeof(void *))
        != NGX_OK)
    {
        return NULL;
    }

    r = ngx_http_simhash_redis_object(task, task->type);
    if (r == NULL) {
        return NULL;
    }

    if (elements > 0) {
        r->element = ngx_calloc(elements * sizeof(redisReply *),
                                ngx_cycle->log);
        if (r->element == NULL) {
            return ngx_http_simhash_redis_half(task, r);
        }
    }

    r->elements = elements;

    return r;
}


static void *
ngx_http_simhash_redis_integer(const redisReadTask *task, long long value)
{
    redisReply  *r;

    if (ngx_http_simhash_redis_cost(task, 0) != NGX_OK) {
        return NULL;
    }

    r = ngx_http_simhash_redis_object(task, REDIS_REPLY_INTEGER);
    if (r == NULL) {
        return NULL;
    }

    r->integer = value;

    return r;
}


static void *
ngx_http_simhash_redis_nil(const redisReadTask *task)
{
    if (ngx_http_simhash_redis_cost(task, 0) != NGX_OK) {
        return NULL;
    }

    return ngx_http_simhash_redis_object(task, REDIS_REPLY_NIL);
}


#if (HIREDIS_MAJOR >= 1)

/* RESP3's double: its text kept, as hiredis keeps it */

static void *
ngx_http_simhash_redis_double(const redisReadTask *task, double value,
    char *str, size_t len)
{
    redisReply  *r;

    r = ngx_http_simhash_redis_string(task, str, len);
    if (r == NULL) {
        return NULL;
    }

    r->type = REDIS_REPLY_DOUBLE;
    r->dval = value;

    return r;
}


static void *
ngx_http_simhash_redis_bool(const redisReadTask *task, int value)
{
    redisReply  *r;

    if (ngx_http_simhash_redis_cost(task, 0) != NGX_OK) {
        return NULL;
    }

    r = ngx_http_simhash_redis_object(task, REDIS_REPLY_BOOL);
    if (r == NULL) {
        return NULL;
    }

    r->integer = value != 0;

    return r;
}

#endif


/*
 * A reply and all it holds.  A partial one (the reader stopped in the
 * middle) has NULL where its elements were not made yet.
 */

void
ngx_http_simhash_redis_reply_free(void *obj)
{
    size_t       i;
    redisReply  *r = obj;

    if (r == NULL) {
        return;
    }

    if (r->element) {
        for (i = 0; i < r->elements; i++) {
            ngx_http_simhash_redis_reply_free(r->element[i]);
        }

        ngx_free(r->element);
    }

    if (r->str) {
        ngx_free(r->str);
    }

    ngx_free(r);
}
