
/*
 * A node's new documents, written to the cluster: a chunk of one entry
 * APPENDed to each of its two buckets, not waited for.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_cluster.h"
#include "ngx_http_simhash_cluster_client.h"
#include "ngx_http_simhash_redis.h"


static void ngx_http_simhash_cluster_append(ngx_http_simhash_cluster_write_t *w,
    ngx_http_simhash_cluster_node_t *n, ngx_uint_t asking);


/*
 * An APPEND's reply: an integer (the bucket's new length) is done; MOVED
 * and ASK are followed (a slot being moved loses no write); anything
 * else, or the connection gone with it, is a write lost, counted and
 * logged.  Nobody waits for it.
 */

static void
ngx_http_simhash_cluster_append_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_cluster_write_t  *w = data;
    ngx_http_simhash_cluster_t        *cl = w->cl;
    ngx_http_simhash_cluster_node_t   *n;
    ngx_uint_t                         ask;

    if (reply != NULL && reply->type == REDIS_REPLY_INTEGER) {
        ngx_free(w);
        return;
    }

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
        ask = reply->len > 4 && ngx_strncmp(reply->str, "ASK ", 4) == 0;

        if (ask || (reply->len > 6
                    && ngx_strncmp(reply->str, "MOVED ", 6) == 0))
        {
            if (ask) {
                ngx_http_simhash_cluster_count(cl, asked);

            } else {
                ngx_http_simhash_cluster_count(cl, moved);
                ngx_http_simhash_cluster_refresh(cl);
            }

            n = ngx_http_simhash_cluster_redirect(cl, reply);

            if (n != NULL && w->hops++ < 3) {
                ngx_http_simhash_cluster_append(w, n, ask);
                return;
            }
        }

        ngx_log_error(NGX_LOG_WARN, cl->log, 0,
                      "simhash zone \"%V\": cluster APPEND %*s: %*s",
                      &cl->zone->name, w->key_len, w->key,
                      reply->len, reply->str);

    } else {
        ngx_http_simhash_cluster_refresh(cl);
    }

    ngx_http_simhash_cluster_count(cl, write_errors);
    ngx_free(w);
}


static void
ngx_http_simhash_cluster_append(ngx_http_simhash_cluster_write_t *w,
    ngx_http_simhash_cluster_node_t *n, ngx_uint_t asking)
{
    const char  *argv[3];
    size_t       argvlen[3];

    if (asking && ngx_http_simhash_cluster_asking(n) != NGX_OK) {
        goto failed;
    }

    argv[0] = "APPEND";
    argvlen[0] = 6;
    argv[1] = w->key;
    argvlen[1] = w->key_len;
    argv[2] = (const char *) w->chunk;
    argvlen[2] = w->len;

    if (ngx_http_simhash_redis_command(&n->rd,
            ngx_http_simhash_cluster_append_reply, w, 3, argv, argvlen)
        == NGX_OK)
    {
        return;
    }

failed:

    ngx_http_simhash_cluster_refresh(w->cl);
    ngx_http_simhash_cluster_count(w->cl, write_errors);
    ngx_free(w);
}


/* one chunk of one entry to its bucket's master */
static void
ngx_http_simhash_cluster_put(ngx_http_simhash_cluster_t *cl, int kind,
    const sh_cluster_rec_t *rec)
{
    uint32_t                           bucket;
    ngx_uint_t                         o;
    sh_cluster_fpent_t                 e;
    ngx_http_simhash_cluster_write_t  *w;

    w = ngx_alloc(sizeof(ngx_http_simhash_cluster_write_t), cl->log);
    if (w == NULL) {
        ngx_http_simhash_cluster_count(cl, write_errors);
        return;
    }

    w->cl = cl;
    w->hops = 0;

    if (kind == SH_CLUSTER_FP) {
        e.fp = rec->fp;
        e.id = rec->kh;
        bucket = sh_cluster_fp_bucket(&cl->layout, rec->fp);
        w->len = sh_cluster_encode_fp(&cl->layout, bucket, &e, 1, w->chunk);

    } else {
        bucket = sh_cluster_rec_bucket(&cl->layout, rec->kh);
        w->len = sh_cluster_encode_rec(&cl->layout, bucket, rec, 1,
                                       w->chunk);
    }

    w->key_len = sh_cluster_key(&cl->layout, kind, bucket, w->key);
    o = cl->owner[sh_cluster_slot(w->key, w->key_len)];

    if (w->len == 0 || o == NGX_HTTP_SIMHASH_CLUSTER_NOSLOT) {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_count(cl, write_errors);
        ngx_free(w);
        return;
    }

    ngx_http_simhash_cluster_append(w, cl->nodes[o], 0);
}


void
ngx_http_simhash_cluster_add(ngx_http_simhash_cluster_t *cl,
    const sh_cluster_rec_t *rec)
{
    ngx_http_simhash_cluster_count(cl, writes);

    if (!cl->have_map || !cl->have_layout
        || sh_cluster_chunk_size(&cl->layout, SH_CLUSTER_REC, 1) > 128
        || sh_cluster_chunk_size(&cl->layout, SH_CLUSTER_FP, 1) > 128)
    {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_count(cl, write_errors);
        return;
    }

    /* two masters, in no order: a table entry read before its record is
     * there is taken for a document that has changed since (nothing
     * near), never for a false one */
    ngx_http_simhash_cluster_put(cl, SH_CLUSTER_REC, rec);
    ngx_http_simhash_cluster_put(cl, SH_CLUSTER_FP, rec);
}
