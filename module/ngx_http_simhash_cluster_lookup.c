
/*
 * A lookup in the cluster (ngx_http_simhash_cluster.h says what it does
 * and how it ends): its GETs, pipelined to the masters of the probed
 * buckets, then the candidates' records; redirects followed; a timer
 * bounds it; every worker's outcomes counted in the zone.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_cluster.h"
#include "ngx_http_simhash_cluster_client.h"
#include "ngx_http_simhash_redis.h"

#include "sh_index.h"


/* the idx of the key's own record GET (past the table's probes) */
#define NGX_HTTP_SIMHASH_CLUSTER_OWN  ((ngx_uint_t) -1)


static void ngx_http_simhash_cluster_send(ngx_http_simhash_cluster_t *cl,
    ngx_http_simhash_cluster_probe_t *pr, ngx_http_simhash_cluster_node_t *n,
    ngx_uint_t asking);
static void ngx_http_simhash_cluster_finish(
    ngx_http_simhash_cluster_lookup_t *lk);


static void
ngx_http_simhash_cluster_free(ngx_http_simhash_cluster_lookup_t *lk)
{
    if (lk->finished && lk->pending == 0 && !lk->post.posted
        && !lk->starting)
    {
        if (lk->timer.timer_set) {
            ngx_del_timer(&lk->timer);
        }

        ngx_http_simhash_cluster_text_free(lk);
        ngx_free(lk->probes);
        ngx_free(lk);
    }
}


/*
 * The buckets of a lookup's time, in microseconds: most of them below a
 * millisecond, where a lookup on a LAN ends (its round trip is 0.1-0.3 ms);
 * the rest up to the timeout's range.
 */
uint64_t  ngx_http_simhash_cluster_us_le[NGX_HTTP_SIMHASH_CLUSTER_NUS] = {
    50, 100, 150, 200, 250, 300, 400, 500, 750, 1000, 2000, 5000, 10000,
    20000, 50000, 100000, UINT64_MAX
};

/* their names in the statistics, then the sum's and the count's: in JSON
 * (us), in Prometheus (seconds) */
ngx_str_t  ngx_http_simhash_cluster_us_names[2][NGX_HTTP_SIMHASH_CLUSTER_NUS
                                                + 2] = {
    { ngx_string("50"), ngx_string("100"), ngx_string("150"),
      ngx_string("200"), ngx_string("250"), ngx_string("300"),
      ngx_string("400"), ngx_string("500"), ngx_string("750"),
      ngx_string("1000"), ngx_string("2000"), ngx_string("5000"),
      ngx_string("10000"), ngx_string("20000"), ngx_string("50000"),
      ngx_string("100000"), ngx_string("+Inf"), ngx_string("sum"),
      ngx_string("count") },
    { ngx_string("0.00005"), ngx_string("0.0001"), ngx_string("0.00015"),
      ngx_string("0.0002"), ngx_string("0.00025"), ngx_string("0.0003"),
      ngx_string("0.0004"), ngx_string("0.0005"), ngx_string("0.00075"),
      ngx_string("0.001"), ngx_string("0.002"), ngx_string("0.005"),
      ngx_string("0.01"), ngx_string("0.02"), ngx_string("0.05"),
      ngx_string("0.1"), ngx_string("+Inf"), ngx_string("sum"),
      ngx_string("count") }
};


/* A monotonic clock in microseconds: ngx_current_msec is the event loop's
 * cached time, too coarse for a lookup that takes a few hundred. */
uint64_t
ngx_http_simhash_cluster_usec(void)
{
    struct timespec  ts;

    (void) clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}


/* A lookup's outcome, for the statistics. */
static void
ngx_http_simhash_cluster_counted(ngx_http_simhash_cluster_lookup_t *lk)
{
    ngx_http_simhash_cluster_counts_t  *c = lk->cl->counts;

    switch (lk->status) {

    case NGX_HTTP_SIMHASH_CLUSTER_FOUND:
        (void) ngx_atomic_fetch_add(&c->found, 1);
        break;

    case NGX_HTTP_SIMHASH_CLUSTER_NEW:
        (void) ngx_atomic_fetch_add(&c->new, 1);
        break;

    case NGX_HTTP_SIMHASH_CLUSTER_KNOWN:
        (void) ngx_atomic_fetch_add(&c->refetches, 1);
        break;

    default:
        (void) ngx_atomic_fetch_add(&c->incomplete[lk->cause - 1], 1);
    }
}


/* How long it took, once its caller has decided on its outcome (or has
 * gone): from the lookup's start to the end of done(). */
static void
ngx_http_simhash_cluster_timed(ngx_http_simhash_cluster_lookup_t *lk)
{
    uint64_t                            us;
    ngx_uint_t                          i;
    ngx_http_simhash_cluster_counts_t  *c = lk->cl->counts;

    us = ngx_http_simhash_cluster_usec() - lk->started;

    for (i = 0; i < NGX_HTTP_SIMHASH_CLUSTER_NUS - 1; i++) {
        if (us <= ngx_http_simhash_cluster_us_le[i]) {
            break;
        }
    }

    (void) ngx_atomic_fetch_add(&c->us_le[i], 1);
    (void) ngx_atomic_fetch_add(&c->us_sum, (ngx_atomic_int_t) us);
}


static void
ngx_http_simhash_cluster_end(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_http_simhash_cluster_status_e status,
    ngx_http_simhash_cluster_cause_e cause)
{
    ngx_http_simhash_cluster_done_pt  done;

    if (lk->finished) {
        return;
    }

    lk->finished = 1;
    lk->status = status;
    lk->cause = cause;

    ngx_http_simhash_cluster_counted(lk);

    if (lk->timer.timer_set) {
        ngx_del_timer(&lk->timer);
    }

    if (lk->starting) {
        return;                     /* the posted event calls done */
    }

    done = lk->done;
    lk->done = NULL;

    if (done) {
        done(lk);
    }

    ngx_http_simhash_cluster_timed(lk);
}


/*
 * A probe that cannot be answered makes the whole lookup incomplete, but
 * for two kinds.  A key text's: the original is then named by its id (the
 * answer itself is whole).  And one of a lookup whose key's record is
 * still awaited: a re-fetch needs the record alone (the zone answers a key
 * it holds without its index), so the cause is kept until the record's
 * reply says which it is.
 */
static void
ngx_http_simhash_cluster_probe_fail(ngx_http_simhash_cluster_probe_t *pr,
    ngx_http_simhash_cluster_cause_e cause)
{
    ngx_http_simhash_cluster_lookup_t  *lk = pr->lk;

    if (pr->kind == SH_CLUSTER_TEXT) {
        if (lk->pending == 0 && !lk->finished) {
            ngx_http_simhash_cluster_finish(lk);
        }

        return;
    }

    if (pr->idx == NGX_HTTP_SIMHASH_CLUSTER_OWN) {
        lk->own_done = 1;
    }

    if (lk->own_sent && !lk->own_done) {
        if (lk->deferred == NGX_HTTP_SIMHASH_CLUSTER_OK) {
            lk->deferred = cause;
        }

        return;
    }

    if (lk->deferred != NGX_HTTP_SIMHASH_CLUSTER_OK) {
        cause = lk->deferred;
    }

    ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE,
                                 cause);
}


static void
ngx_http_simhash_cluster_timer_handler(ngx_event_t *ev)
{
    ngx_http_simhash_cluster_lookup_t  *lk = ev->data;

    if (lk->phase == 1 && lk->pending && lk->pending == lk->tpending) {
        /* every record in, only key texts awaited: the answer is whole,
         * its original named by its id */
        ngx_http_simhash_cluster_finish(lk);

    } else {
        ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE,
                                     NGX_HTTP_SIMHASH_CLUSTER_TIMEOUT);
    }

    ngx_http_simhash_cluster_free(lk);
}


/* An error reply: followed (MOVED, ASK), or the lookup's end. */
static void
ngx_http_simhash_cluster_error(ngx_http_simhash_cluster_probe_t *pr,
    redisReply *reply)
{
    ngx_http_simhash_cluster_lookup_t  *lk = pr->lk;
    ngx_http_simhash_cluster_t         *cl = lk->cl;
    ngx_http_simhash_cluster_node_t    *n;
    ngx_uint_t                          ask;

    ask = reply->len > 4 && ngx_strncmp(reply->str, "ASK ", 4) == 0;

    if (ask || (reply->len > 6 && ngx_strncmp(reply->str, "MOVED ", 6) == 0))
    {
        if (ask) {
            ngx_http_simhash_cluster_count(cl, asked);

        } else {
            ngx_http_simhash_cluster_count(cl, moved);
            ngx_http_simhash_cluster_refresh(cl);
        }

        n = ngx_http_simhash_cluster_redirect(cl, reply);

        if (n == NULL || pr->hops++ >= 3) {
            ngx_http_simhash_cluster_probe_fail(pr,
                                                NGX_HTTP_SIMHASH_CLUSTER_ERROR);
            return;
        }

        ngx_http_simhash_cluster_send(cl, pr, n, ask);
        return;
    }

    if ((reply->len >= 11 && ngx_strncmp(reply->str, "CLUSTERDOWN", 11) == 0)
        || (reply->len >= 8 && ngx_strncmp(reply->str, "TRYAGAIN", 8) == 0))
    {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_probe_fail(pr, NGX_HTTP_SIMHASH_CLUSTER_DOWN);
        return;
    }

    ngx_log_error(NGX_LOG_ERR, cl->log, 0,
                  "simhash zone \"%V\": cluster GET %*s: %*s",
                  &cl->zone->name, pr->key_len, pr->key, reply->len,
                  reply->str);

    /* the user may not GET the key (ACL rules, a user turned off) */
    ngx_http_simhash_cluster_probe_fail(pr,
        (reply->len >= 6 && ngx_strncmp(reply->str, "NOPERM", 6) == 0)
        || (reply->len >= 6 && ngx_strncmp(reply->str, "NOAUTH", 6) == 0)
        ? NGX_HTTP_SIMHASH_CLUSTER_DENIED : NGX_HTTP_SIMHASH_CLUSTER_ERROR);
}


/* Entries near the page, merged into the lookup's closest few. */
static void
ngx_http_simhash_cluster_candidates(ngx_http_simhash_cluster_lookup_t *lk,
    sh_cluster_fpent_t *got, size_t n)
{
    size_t    i, j, max = sizeof(lk->cand) / sizeof(lk->cand[0]);
    unsigned  d;

    for (i = 0; i < n; i++) {
        d = (unsigned) __builtin_popcountll(got[i].fp ^ lk->fp);

        if (lk->ncand == max && lk->cdist[max - 1] <= d) {
            continue;
        }

        j = lk->ncand < max ? lk->ncand++ : max - 1;

        while (j > 0 && lk->cdist[j - 1] > d) {
            lk->cand[j] = lk->cand[j - 1];
            lk->cdist[j] = lk->cdist[j - 1];
            j--;
        }

        lk->cand[j] = got[i];
        lk->cdist[j] = d;
    }
}


static void
ngx_http_simhash_cluster_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_cluster_probe_t   *pr = data;
    ngx_http_simhash_cluster_lookup_t  *lk = pr->lk;
    ngx_http_simhash_cluster_t         *cl = lk->cl;
    sh_cluster_fpent_t                  got[4];
    sh_cluster_read_t                   read;
    size_t                              n;

    lk->pending--;
    lk->tpending -= (pr->kind == SH_CLUSTER_TEXT);

    if (lk->finished) {
        ngx_http_simhash_cluster_free(lk);
        return;
    }

    if (reply == NULL) {
        /* the connection went with the GET in it: its node may be gone
         * for good (a failover), so the map is read again */
        ngx_http_simhash_cluster_probe_fail(pr,
                                      NGX_HTTP_SIMHASH_CLUSTER_UNREACHABLE);
        ngx_http_simhash_cluster_free(lk);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_cluster_error(pr, reply);
        ngx_http_simhash_cluster_free(lk);
        return;
    }

    if (reply->type == REDIS_REPLY_STRING) {
        if (pr->kind == SH_CLUSTER_FP) {
            n = sh_cluster_near(&cl->layout, pr->bucket,
                                (u_char *) reply->str, reply->len, lk->fp,
                                lk->h, got, 4, &read);
            ngx_http_simhash_cluster_candidates(lk, got, n < 4 ? n : 4);

        } else if (pr->kind == SH_CLUSTER_TEXT) {
            ngx_http_simhash_cluster_text_got(lk, pr->idx, pr->bucket, reply);
            read.forged = 0;

        } else if (pr->idx == NGX_HTTP_SIMHASH_CLUSTER_OWN) {
            lk->own_have = sh_cluster_find_rec(&cl->layout, pr->bucket,
                                               (u_char *) reply->str,
                                               reply->len, lk->kh, &lk->own,
                                               &read);

        } else {
            lk->chave[pr->idx] = sh_cluster_find_entry_rec(&cl->layout,
                                     pr->bucket, (u_char *) reply->str,
                                     reply->len, &lk->cand[pr->idx],
                                     &lk->crec[pr->idx], &read);
        }

        lk->forged += read.forged;
    }

    if (pr->idx == NGX_HTTP_SIMHASH_CLUSTER_OWN) {
        lk->own_done = 1;

        if (lk->own_have) {
            /* a re-fetch: the key's own record decides, as the zone's
             * document of a key it holds does; never a duplicate, and
             * the probes still out are not waited for */
            ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_KNOWN,
                                         NGX_HTTP_SIMHASH_CLUSTER_OK);
            ngx_http_simhash_cluster_free(lk);
            return;
        }

        if (lk->deferred != NGX_HTTP_SIMHASH_CLUSTER_OK) {
            /* no record of the key: the probe that failed counts */
            ngx_http_simhash_cluster_end(lk,
                                         NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE,
                                         lk->deferred);
            ngx_http_simhash_cluster_free(lk);
            return;
        }
    }

    if (lk->pending == 0) {
        ngx_http_simhash_cluster_finish(lk);
    }

    ngx_http_simhash_cluster_free(lk);
}


static void
ngx_http_simhash_cluster_send(ngx_http_simhash_cluster_t *cl,
    ngx_http_simhash_cluster_probe_t *pr, ngx_http_simhash_cluster_node_t *n,
    ngx_uint_t asking)
{
    const char  *argv[2];
    size_t       argvlen[2];

    if (asking && ngx_http_simhash_cluster_asking(n) != NGX_OK) {
        goto unreachable;
    }

    argv[0] = "GET";
    argvlen[0] = 3;
    argv[1] = pr->key;
    argvlen[1] = pr->key_len;

    if (ngx_http_simhash_redis_command(&n->rd, ngx_http_simhash_cluster_reply,
                                       pr, 2, argv, argvlen)
        != NGX_OK)
    {
        goto unreachable;
    }

    pr->lk->pending++;
    pr->lk->tpending += (pr->kind == SH_CLUSTER_TEXT);
    return;

unreachable:

    ngx_http_simhash_cluster_refresh(cl);
    ngx_http_simhash_cluster_probe_fail(pr,
                                        ngx_http_simhash_cluster_cause(cl, n));
}


/* A GET of a bucket to the master of its slot. */
static void
ngx_http_simhash_cluster_get(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_http_simhash_cluster_probe_t *pr, char kind, uint32_t bucket,
    ngx_uint_t idx)
{
    ngx_http_simhash_cluster_t  *cl = lk->cl;
    ngx_uint_t                   o;

    pr->lk = lk;
    pr->kind = kind;
    pr->bucket = bucket;
    pr->idx = idx;
    pr->hops = 0;
    pr->key_len = sh_cluster_key(&cl->layout, kind, bucket, pr->key);

    o = cl->owner[sh_cluster_slot(pr->key, pr->key_len)];

    if (o == NGX_HTTP_SIMHASH_CLUSTER_NOSLOT) {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_probe_fail(pr,
                                            NGX_HTTP_SIMHASH_CLUSTER_UNSERVED);
        return;
    }

    ngx_http_simhash_cluster_send(cl, pr, cl->nodes[o], 0);
}


/* Every reply of a round in: the next round, or the outcome. */
static void
ngx_http_simhash_cluster_finish(ngx_http_simhash_cluster_lookup_t *lk)
{
    ngx_http_simhash_cluster_probe_t  *pr = lk->probes;
    ngx_uint_t                         i;

    if (lk->phase == 0) {
        if (lk->deferred != NGX_HTTP_SIMHASH_CLUSTER_OK) {
            ngx_http_simhash_cluster_end(lk,
                                         NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE,
                                         lk->deferred);
            return;
        }

        if (lk->ncand == 0) {
            ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_NEW,
                                         NGX_HTTP_SIMHASH_CLUSTER_OK);
            return;
        }

        /* the candidates' records: their sketches, their whole id, and
         * whether each is still its document's fingerprint; beside each,
         * its key text's bucket (the same round trip) */
        lk->phase = 1;

        for (i = 0; i < lk->ncand && !lk->finished; i++) {
            ngx_http_simhash_cluster_get(lk, &pr[i], SH_CLUSTER_REC,
                sh_cluster_rec_bucket(&lk->cl->layout, lk->cand[i].id), i);

            if (!lk->finished) {
                ngx_http_simhash_cluster_get(lk, &pr[lk->ncand + i],
                    SH_CLUSTER_TEXT,
                    sh_cluster_text_bucket(&lk->cl->layout, lk->cand[i].id),
                    i);
            }
        }

        return;
    }

    for (i = 0; i < lk->ncand; i++) {
        if (lk->chave[i]) {
            lk->rec = lk->crec[i];
            lk->distance = lk->cdist[i];
            ngx_http_simhash_cluster_text_name(lk, i);
            ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_FOUND,
                                         NGX_HTTP_SIMHASH_CLUSTER_OK);
            return;
        }
    }

    /* near entries of documents that have changed since: nothing near */
    ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_NEW,
                                 NGX_HTTP_SIMHASH_CLUSTER_OK);
}


/* The outcome of a lookup that ended while it started. */
static void
ngx_http_simhash_cluster_posted(ngx_event_t *ev)
{
    ngx_http_simhash_cluster_lookup_t  *lk = ev->data;
    ngx_http_simhash_cluster_done_pt    done;

    done = lk->done;
    lk->done = NULL;

    if (done) {
        done(lk);
    }

    ngx_http_simhash_cluster_timed(lk);
    ngx_http_simhash_cluster_free(lk);
}


void
ngx_http_simhash_cluster_cancel(ngx_http_simhash_cluster_lookup_t *lk)
{
    lk->done = NULL;
}


ngx_http_simhash_cluster_lookup_t *
ngx_http_simhash_cluster_lookup(ngx_http_simhash_cluster_t *cl, uint64_t fp,
    const float *w, unsigned h, float recall, const sh_volatility_t *vol,
    ngx_http_simhash_cluster_done_pt done, void *data)
{
    return ngx_http_simhash_cluster_lookup_key(cl, 0, fp, w, h, recall, vol,
                                               done, data);
}


ngx_http_simhash_cluster_lookup_t *
ngx_http_simhash_cluster_lookup_key(ngx_http_simhash_cluster_t *cl,
    uint64_t kh, uint64_t fp, const float *w, unsigned h, float recall,
    const sh_volatility_t *vol, ngx_http_simhash_cluster_done_pt done,
    void *data)
{
    uint32_t                            buckets[SH_PROBES_MAX + 1];
    size_t                              n, i, slots;
    ngx_http_simhash_cluster_lookup_t  *lk;
    ngx_http_simhash_cluster_probe_t   *pr;

    /*
     * Every bucket PSM names for the zone's recall: a weighted rule's
     * radius of 7 names a hundred and more at 2^24 buckets, and a cap
     * below k would lower the recall the zone was set for.
     */
    n = 0;
    if (cl->have_map && cl->have_layout) {
        n = sh_cluster_probes(&cl->layout, fp, w, h,
                              sh_cluster_probes_for(&cl->layout, h, recall,
                                                    vol),
                              vol, buckets, SH_PROBES_MAX + 1);
    }

    /* one GET a probe, then one a candidate's record and one its key
     * text, in the same slots; the key's record's past them */
    slots = ngx_max(n, 2 * sizeof(lk->cand) / sizeof(lk->cand[0]));

    lk = ngx_calloc(sizeof(ngx_http_simhash_cluster_lookup_t), cl->log);
    pr = ngx_calloc((slots + 1) * sizeof(*pr), cl->log);
    if (lk == NULL || pr == NULL) {
        ngx_free(lk);
        ngx_free(pr);
        return NULL;
    }

    lk->fp = fp;
    lk->kh = kh;
    lk->h = h;
    lk->done = done;
    lk->data = data;
    lk->cl = cl;
    lk->probes = pr;
    lk->buckets = n;
    lk->started = ngx_http_simhash_cluster_usec();
    lk->timer.handler = ngx_http_simhash_cluster_timer_handler;
    lk->timer.data = lk;
    lk->timer.log = cl->log;
    lk->timer.cancelable = 1;

    ngx_http_simhash_cluster_count(cl, lookups);

    /* the outcome is always given from an event of its own: a caller's
     * done never runs inside its own call */
    lk->starting = 1;

    if (!cl->have_map || !cl->have_layout) {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE,
                                     ngx_http_simhash_cluster_cause(cl, NULL));

    } else {
        /* the key's record, in the pipeline with the probes: a re-fetch
         * costs no round trip more than a new page */
        if (kh != 0) {
            lk->own_sent = 1;
            ngx_http_simhash_cluster_get(lk, &pr[slots], SH_CLUSTER_REC,
                                         sh_cluster_rec_bucket(&cl->layout,
                                                               kh),
                                         NGX_HTTP_SIMHASH_CLUSTER_OWN);
        }

        for (i = 0; i < n && !lk->finished; i++) {
            ngx_http_simhash_cluster_get(lk, &pr[i], SH_CLUSTER_FP,
                                         buckets[i], i);
        }

        /* a probe that failed at once has ended the lookup: no timer */
        if (!lk->finished) {
            ngx_add_timer(&lk->timer, cl->conf->timeout);
        }
    }

    lk->starting = 0;

    if (lk->finished) {
        lk->post.handler = ngx_http_simhash_cluster_posted;
        lk->post.data = lk;
        lk->post.log = cl->log;
        ngx_post_event(&lk->post, &ngx_posted_events);
    }

    return lk;
}
