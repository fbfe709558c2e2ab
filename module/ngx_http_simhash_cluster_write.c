
/*
 * A node's new documents, written to the cluster: a chunk of one entry
 * APPENDed to each of its three buckets (record, key text, table), not
 * waited for.
 *
 * The backlog.  A write the cluster could not take for want of a master
 * (no connection to it, the connection lost with the write in it,
 * CLUSTERDOWN or TRYAGAIN, a slot of no master, redirects that led
 * nowhere) is kept, in order, and written again every
 * NGX_HTTP_SIMHASH_CLUSTER_REPLAY ms to the masters that are connected
 * again, so that what a node stored while the cluster was away reaches it
 * when it returns.  It is this worker's, in its own memory: a write is the
 * worker's to send on its own connections, and a backlog in the zone's
 * shared memory would take a lock on every write and a zone size for the
 * worst outage, when a worker's loses only what a worker that exits held.
 * Bounded (cluster_backlog= writes a worker): a write past it is dropped,
 * counted; so is what a worker holds when it exits.  An APPEND the master
 * took but whose reply was lost with the connection is written again: the
 * bucket then holds the entry twice, which a reader takes for one (the
 * newest record of a key, the first text of a key hash).
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


/* A write the cluster could not take: kept for later, or dropped. */

static void
ngx_http_simhash_cluster_keep(ngx_http_simhash_cluster_write_t *w)
{
    ngx_http_simhash_cluster_t  *cl = w->cl;

    if (cl->nbacklog >= cl->conf->backlog || ngx_exiting) {
        /* the backlog full: the newest write is the one lost (the
         * backlog keeps its order) */
        ngx_http_simhash_cluster_count(cl, backlog_dropped);
        ngx_free(w);
        return;
    }

    if (!w->queued) {
        w->queued = 1;
        ngx_http_simhash_cluster_count(cl, backlog_queued);
    }

    ngx_queue_insert_tail(&cl->backlog, &w->queue);
    cl->nbacklog++;

    if (!cl->replay.timer_set) {
        ngx_add_timer(&cl->replay, NGX_HTTP_SIMHASH_CLUSTER_REPLAY);
    }
}


/* A write gone for good (an error the cluster will give again). */

static void
ngx_http_simhash_cluster_lost(ngx_http_simhash_cluster_write_t *w)
{
    if (w->queued) {
        ngx_http_simhash_cluster_count(w->cl, backlog_dropped);

    } else {
        ngx_http_simhash_cluster_count(w->cl, write_errors);
    }

    ngx_free(w);
}


/*
 * An APPEND's reply: an integer (the bucket's new length) is done; MOVED
 * and ASK are followed (a slot being moved loses no write); the
 * connection gone, or a cluster that cannot serve the slot, keeps it in
 * the backlog; any other error is a write lost, counted and logged.
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
        if (w->queued) {
            ngx_http_simhash_cluster_count(cl, backlog_replayed);
        }

        ngx_free(w);
        return;
    }

    if (reply == NULL) {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_keep(w);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
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

            ngx_http_simhash_cluster_keep(w);
            return;
        }

        if ((reply->len >= 11
             && ngx_strncmp(reply->str, "CLUSTERDOWN", 11) == 0)
            || (reply->len >= 8
                && ngx_strncmp(reply->str, "TRYAGAIN", 8) == 0))
        {
            ngx_http_simhash_cluster_refresh(cl);
            ngx_http_simhash_cluster_keep(w);
            return;
        }

        ngx_log_error(NGX_LOG_WARN, cl->log, 0,
                      "simhash zone \"%V\": cluster APPEND %*s: %*s",
                      &cl->zone->name, w->key_len, w->key,
                      reply->len, reply->str);
    }

    ngx_http_simhash_cluster_lost(w);
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

    /* no connection to the master: later */
    ngx_http_simhash_cluster_refresh(w->cl);
    ngx_http_simhash_cluster_keep(w);
}


/* A write to its bucket's master, or to the backlog. */

static void
ngx_http_simhash_cluster_send(ngx_http_simhash_cluster_write_t *w)
{
    ngx_uint_t                   o;
    ngx_http_simhash_cluster_t  *cl = w->cl;

    o = cl->owner[sh_cluster_slot(w->key, w->key_len)];

    if (o == NGX_HTTP_SIMHASH_CLUSTER_NOSLOT) {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_keep(w);
        return;
    }

    w->hops = 0;
    ngx_http_simhash_cluster_append(w, cl->nodes[o], 0);
}


/* one chunk of one entry to its bucket's master */
static void
ngx_http_simhash_cluster_put(ngx_http_simhash_cluster_t *cl, int kind,
    const sh_cluster_rec_t *rec, ngx_str_t *key)
{
    size_t                             size;
    uint32_t                           bucket;
    sh_cluster_text_t                  t;
    sh_cluster_fpent_t                 e;
    ngx_http_simhash_cluster_write_t  *w;

    t.kh = rec->kh;
    t.text = (const char *) key->data;
    t.len = key->len;

    size = kind == SH_CLUSTER_TEXT ? sh_cluster_text_size(&cl->layout, &t, 1)
                                   : sh_cluster_chunk_size(&cl->layout, kind,
                                                           1);

    w = ngx_alloc(sizeof(ngx_http_simhash_cluster_write_t) + size, cl->log);
    if (w == NULL) {
        ngx_http_simhash_cluster_count(cl, write_errors);
        return;
    }

    w->cl = cl;
    w->hops = 0;
    w->queued = 0;
    w->chunk = (u_char *) (w + 1);

    if (kind == SH_CLUSTER_FP) {
        e.fp = rec->fp;
        e.id = rec->kh;
        bucket = sh_cluster_fp_bucket(&cl->layout, rec->fp);
        w->len = sh_cluster_encode_fp(&cl->layout, bucket, &e, 1, w->chunk);

    } else if (kind == SH_CLUSTER_TEXT) {
        bucket = sh_cluster_text_bucket(&cl->layout, rec->kh);
        w->len = sh_cluster_encode_text(&cl->layout, bucket, &t, 1,
                                        w->chunk);

    } else {
        bucket = sh_cluster_rec_bucket(&cl->layout, rec->kh);
        w->len = sh_cluster_encode_rec(&cl->layout, bucket, rec, 1,
                                       w->chunk);
    }

    w->key_len = sh_cluster_key(&cl->layout, kind, bucket, w->key);

    if (w->len == 0) {
        ngx_http_simhash_cluster_count(cl, write_errors);
        ngx_free(w);
        return;
    }

    ngx_http_simhash_cluster_send(w);
}


void
ngx_http_simhash_cluster_add(ngx_http_simhash_cluster_t *cl,
    const sh_cluster_rec_t *rec, ngx_str_t *key)
{
    ngx_http_simhash_cluster_count(cl, writes);

    if (!cl->have_map || !cl->have_layout) {
        /* no layout: the chunks cannot even be made */
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_count(cl, write_errors);
        return;
    }

    /* three masters, in no order: a table entry read before its record is
     * there is taken for a document that has changed since (nothing
     * near), never for a false one; a record read before its text is
     * named by its id */
    ngx_http_simhash_cluster_put(cl, SH_CLUSTER_REC, rec, key);

    if (key->len > 0 && key->len <= SH_CLUSTER_TEXT_MAX) {
        ngx_http_simhash_cluster_put(cl, SH_CLUSTER_TEXT, rec, key);
    }

    ngx_http_simhash_cluster_put(cl, SH_CLUSTER_FP, rec, key);
}


ngx_uint_t
ngx_http_simhash_cluster_alone(ngx_http_simhash_cluster_t *cl)
{
    ngx_uint_t  i;

    /* a worker that never read the cluster is starting, not alone */
    if (!cl->have_map || !cl->have_layout) {
        return 0;
    }

    for (i = 0; i < cl->nnodes; i++) {
        if (ngx_http_simhash_redis_is_ready(&cl->nodes[i]->rd)) {
            return 0;
        }
    }

    return 1;
}


/*
 * The backlog again, oldest first: each write whose master is connected
 * is sent (a failure brings it back to the tail); the others wait for the
 * next round.  One round goes through the backlog once.
 */

static void
ngx_http_simhash_cluster_replay_handler(ngx_event_t *ev)
{
    ngx_uint_t                         o, n;
    ngx_queue_t                       *q, *next;
    ngx_http_simhash_cluster_t        *cl = ev->data;
    ngx_http_simhash_cluster_write_t  *w;

    if (ngx_exiting) {
        return;
    }

    if (cl->have_map && cl->have_layout) {
        n = cl->nbacklog;
        q = ngx_queue_head(&cl->backlog);

        while (n-- && q != ngx_queue_sentinel(&cl->backlog)) {
            next = ngx_queue_next(q);
            w = ngx_queue_data(q, ngx_http_simhash_cluster_write_t, queue);

            o = cl->owner[sh_cluster_slot(w->key, w->key_len)];

            if (o != NGX_HTTP_SIMHASH_CLUSTER_NOSLOT
                && ngx_http_simhash_redis_is_ready(&cl->nodes[o]->rd))
            {
                ngx_queue_remove(q);
                cl->nbacklog--;
                ngx_http_simhash_cluster_send(w);
            }

            q = next;
        }

    } else {
        ngx_http_simhash_cluster_refresh(cl);
    }

    if (cl->nbacklog && !cl->replay.timer_set) {
        ngx_add_timer(&cl->replay, NGX_HTTP_SIMHASH_CLUSTER_REPLAY);
    }
}


void
ngx_http_simhash_cluster_backlog_init(ngx_http_simhash_cluster_t *cl)
{
    ngx_queue_init(&cl->backlog);
    cl->nbacklog = 0;

    cl->replay.handler = ngx_http_simhash_cluster_replay_handler;
    cl->replay.data = cl;
    cl->replay.log = cl->log;
    cl->replay.cancelable = 1;
}


void
ngx_http_simhash_cluster_backlog_exit(ngx_http_simhash_cluster_t *cl)
{
    ngx_queue_t                       *q;
    ngx_http_simhash_cluster_write_t  *w;

    if (cl->replay.timer_set) {
        ngx_del_timer(&cl->replay);
    }

    if (cl->nbacklog) {
        ngx_log_error(NGX_LOG_WARN, cl->log, 0,
                      "simhash zone \"%V\": %ui writes to the cluster "
                      "dropped: the worker exits with them in its backlog",
                      &cl->zone->name, cl->nbacklog);
    }

    while (!ngx_queue_empty(&cl->backlog)) {
        q = ngx_queue_head(&cl->backlog);
        ngx_queue_remove(q);
        w = ngx_queue_data(q, ngx_http_simhash_cluster_write_t, queue);
        ngx_http_simhash_cluster_count(cl, backlog_dropped);
        ngx_free(w);
    }

    cl->nbacklog = 0;
}
