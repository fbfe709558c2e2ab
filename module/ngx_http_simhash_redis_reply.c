
/*
 * The replies of the stream commands, parsed (see
 * ngx_http_simhash_redis_reply.h).  Every reply here was bounded while it
 * was read (ngx_http_simhash_redis.c), but its shape is whatever the
 * server sent: each element is checked before it is used.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash_redis_reply.h"


static redisReply *ngx_http_simhash_redis_field(redisReply *r,
    const char *name);


ngx_int_t
ngx_http_simhash_redis_xinfo(redisReply *reply,
    ngx_http_simhash_redis_xinfo_t *xi)
{
    redisReply  *first, *last, *length, *added;

    ngx_memzero(xi, sizeof(ngx_http_simhash_redis_xinfo_t));

    if (reply->type == REDIS_REPLY_ERROR) {
        return ngx_http_simhash_redis_error_is(reply, "no such key")
               ? NGX_DECLINED : NGX_ERROR;
    }

    first = ngx_http_simhash_redis_field(reply, "first-entry");
    last = ngx_http_simhash_redis_field(reply, "last-generated-id");
    length = ngx_http_simhash_redis_field(reply, "length");
    added = ngx_http_simhash_redis_field(reply, "entries-added");

    /* first-entry is [id, fields], or nil when the stream is empty */

    xi->has_first = (first && first->type == REDIS_REPLY_ARRAY
                     && first->elements == 2
                     && ngx_http_simhash_redis_id(first->element[0],
                                                  &xi->first)
                        == NGX_OK);

    xi->has_last = (last
                    && ngx_http_simhash_redis_id(last, &xi->last) == NGX_OK);

    if (length && length->type == REDIS_REPLY_INTEGER) {
        xi->has_length = 1;
        xi->length = (int64_t) length->integer;
    }

    if (added && added->type == REDIS_REPLY_INTEGER) {
        xi->has_added = 1;
        xi->added = (int64_t) added->integer;
    }

    return NGX_OK;
}


redisReply *
ngx_http_simhash_redis_xread_entries(redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1
        || reply->element[0]->type != REDIS_REPLY_ARRAY
        || reply->element[0]->elements != 2
        || reply->element[0]->element[1]->type != REDIS_REPLY_ARRAY)
    {
        return NULL;
    }

    return reply->element[0]->element[1];
}


ngx_int_t
ngx_http_simhash_redis_entry(redisReply *entry, sh_stream_id_t *id)
{
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2) {
        return NGX_ERROR;
    }

    return ngx_http_simhash_redis_id(entry->element[0], id);
}


ngx_int_t
ngx_http_simhash_redis_id(redisReply *r, sh_stream_id_t *id)
{
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
        return NGX_ERROR;
    }

    return sh_stream_id_parse(id, r->str, r->len) == 0 ? NGX_OK : NGX_ERROR;
}


ngx_uint_t
ngx_http_simhash_redis_error_is(redisReply *r, const char *s)
{
    if (r->type != REDIS_REPLY_ERROR) {
        return 0;
    }

    return ngx_strlcasestrn((u_char *) r->str, (u_char *) r->str + r->len,
                            (u_char *) s, ngx_strlen(s) - 1)
           != NULL;
}


/* A field of a flat [name, value, ...] reply (XINFO in RESP2). */

static redisReply *
ngx_http_simhash_redis_field(redisReply *r, const char *name)
{
    size_t  i, len;

    if (r->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }

    len = ngx_strlen(name);

    for (i = 0; i + 1 < r->elements; i += 2) {
        if (r->element[i]->type == REDIS_REPLY_STRING
            && (size_t) r->element[i]->len == len
            && ngx_strncmp(r->element[i]->str, name, len) == 0)
        {
            return r->element[i + 1];
        }
    }

    return NULL;
}
