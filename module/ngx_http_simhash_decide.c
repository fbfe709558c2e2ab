
/*
 * ngx_http_simhash_decide.c -- stage 3 of a response's path: the verdict
 * (ngx_http_simhash_verdict_t, in the request's ctx), asked by the body
 * filter (ngx_http_simhash_filter.c) at the body's last buffer.
 * ngx_http_simhash_identical answers "unchanged" without parsing when the
 * raw body's digest equals the stored one; otherwise, with the
 * fingerprint, ngx_http_simhash_decide consults and updates the zone under
 * its mutex: a re-fetch of a stored key (refetch: unchanged or changed), a
 * near-duplicate of another key (match, with the listing veto), or new.
 * The decision is observed by the DUST learner and counted for the console
 * in the same hold.  A page that cannot be fingerprinted is "skipped"
 * (ngx_http_simhash_skip, asked by the filters too).  Last,
 * ngx_http_simhash_conclude says what the crawler gets (dropped or passed).
 *
 * The verdict is a value: the filter hands it to the response
 * (ngx_http_simhash_response.c), which acts on it.  This file calls
 * nothing of the filters nor of the response: the path goes one way
 * (tools/check-tree.sh checks it).  A decision that must wait for another
 * machine says so (NGX_AGAIN, verdict.pending) instead of calling anyone
 * back: see ngx_http_simhash_decide().
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#define XXH_STATIC_LINKING_ONLY     /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "ngx_http_simhash_request.h"
#include "ngx_http_simhash_cluster.h"


/* matches looked at when the closest is two listings of one template */
#define NGX_HTTP_SIMHASH_CANDIDATES 16

/* ngx_http_simhash_local()'s ask: the cluster cannot be reached at all;
 * a page the zone cannot match is stored, skipped (index_incomplete) */
#define NGX_HTTP_SIMHASH_ALONE      2


/* a decision waiting for the cluster: the page's result, kept for the
 * answer (the filter's copy is on its stack); a cleanup of the request's
 * pool, so that a request that goes first cancels the lookup */
typedef struct {
    ngx_http_request_t                 *r;
    ngx_http_simhash_cluster_lookup_t  *lk;
    sh_result_t                         res;
} ngx_http_simhash_asked_t;


static ngx_int_t ngx_http_simhash_key(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_observe(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_refetch(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    uint32_t ref, sh_result_t *res);
static ngx_int_t ngx_http_simhash_local(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    sh_result_t *res, ngx_uint_t ask, const sh_cluster_rec_t *own);
static ngx_int_t ngx_http_simhash_refetch_cluster(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    sh_result_t *res, const sh_cluster_rec_t *own);
static void ngx_http_simhash_warm(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_loc_conf_t *slcf, const sh_cluster_rec_t *rec,
    ngx_str_t *name);
static ngx_int_t ngx_http_simhash_match(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    ngx_str_t *key, sh_result_t *res, ngx_uint_t ask);
static ngx_int_t ngx_http_simhash_ask(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    ngx_http_simhash_cluster_t *cl, sh_result_t *res);
static void ngx_http_simhash_answered(ngx_http_simhash_cluster_lookup_t *lk);
static ngx_int_t ngx_http_simhash_found(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    sh_result_t *res, sh_cluster_rec_t *rec, ngx_str_t *name);
static void ngx_http_simhash_ask_cleanup(void *data);
static const sh_lookup_opts_t *ngx_http_simhash_lookup_opts(
    ngx_http_simhash_loc_conf_t *slcf, const sh_result_t *res,
    sh_lookup_opts_t *opts);
static size_t ngx_http_simhash_not_listing(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res, sh_match_t *best);
static void ngx_http_simhash_changed(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint32_t ref, ngx_log_t *log);
static ngx_uint_t ngx_http_simhash_drops(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static void ngx_http_simhash_account(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    ngx_uint_t locked);


/*
 * An identical re-fetch: the key is stored and the body is byte for byte
 * the one its fingerprint was taken from (a 64-bit digest of the body as
 * received, before inflating).  Then the answer is "unchanged" at distance
 * 0 with the stored fingerprint, and nothing is parsed: most of a recrawl
 * is pages that did not change.  NGX_OK: answered; NGX_DECLINED: parse it.
 */

ngx_int_t
ngx_http_simhash_identical(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    uint32_t                   ref;
    uint64_t                   hash;
    ngx_int_t                  rc;
    XXH3_state_t               st;
    ngx_chain_t               *cl;
    const sh_store_doc_t      *doc;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    rc = ngx_http_simhash_key(r, ctx, slcf);
    if (rc != NGX_OK) {
        return rc;
    }

    (void) XXH3_64bits_reset(&st);

    for (cl = ctx->held; cl; cl = cl->next) {
        (void) XXH3_64bits_update(&st, cl->buf->pos,
                                  cl->buf->last - cl->buf->pos);
    }

    /* 0 means "unknown" in the zone and in snapshots */
    ctx->digest = XXH3_64bits_digest(&st);
    ctx->digest += (ctx->digest == 0);

    zone = slcf->zone;
    sh = zone->sh;

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    ref = ngx_http_simhash_zone_key(zone, &ctx->key);
    doc = ngx_http_simhash_zone_doc(zone, ref);

    if (doc == NULL
        || doc->digest != ctx->digest
        || ngx_http_simhash_zone_fingerprint(zone, ref, &hash) != NGX_OK)
    {
        ngx_http_simhash_zone_unlock(zone);
        return NGX_DECLINED;
    }

    if (slcf->insert) {
        ngx_http_simhash_zone_write(zone);
        ngx_http_simhash_zone_touch(zone, ref);
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
    }

    ctx->rep = doc->keyhash;
    rc = ngx_http_simhash_observe(r, ctx, slcf);

    ctx->verdict.status = NGX_HTTP_SIMHASH_UNCHANGED;
    ctx->verdict.hash = hash;
    ctx->verdict.has_hash = 1;
    ctx->verdict.distance = 0;
    ctx->verdict.score = 0;
    ctx->verdict.has_distance = 1;

    /* the console's accounting in this hold, as a decision's */
    ngx_http_simhash_account(r, ctx, slcf, 1);

    ngx_http_simhash_zone_unlock(zone);

    if (rc) {
        ngx_http_simhash_dust_log(zone, r->connection->log);
    }

    ngx_http_simhash_count(zone, responses[ctx->verdict.status], 1);
    ngx_http_simhash_count(zone, identical, 1);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: %016uxL unchanged, identical body", hash);

    return NGX_OK;
}


/*
 * simhash_key for this response, once: NGX_OK; NGX_DECLINED when it cannot
 * be stored (empty, or over SH_KEY_MAX: the page is then skipped).
 */

static ngx_int_t
ngx_http_simhash_key(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    if (ngx_http_complex_value(r, slcf->key, &ctx->key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->key.len == 0 || ctx->key.len > SH_KEY_MAX) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * The index, under the zone's lock (module/ngx_http_simhash_zone.c):
 *   the key is stored   -> unchanged (the zone's match rule accepts the
 *                          stored fingerprint) or changed (it is
 *                          replaced); never a duplicate of itself;
 *   else a match        -> duplicate of the closest match (the lowest
 *                          score under the weighted rule);
 *   else                -> new, and inserted (simhash_insert on).
 * Duplicates are not inserted: the index keeps one representative per
 * cluster, the first one seen.
 *
 * Returns NGX_OK with ctx->verdict made, or NGX_ERROR.  A part that asks
 * another machine (a lookup held while its probes are out) would have it
 * return NGX_AGAIN with ctx->verdict.pending set: the body filter then
 * keeps the whole response held (phase WAIT, a bit in
 * r->connection->buffered, so that nginx finalizes the request only once
 * it is sent) and returns.  When the answer comes, or the lookup's
 * timeout, the part completes the verdict (or skips the page: never
 * "new" from an index it could not read), clears verdict.pending and
 * posts the connection's write event: nginx's writer runs the output
 * filters again, and the body filter, finding the verdict no longer
 * pending, lets the response act on it.  Nothing is called back: the
 * decision only makes a value, the filter alone sends.  The part's lookup
 * ends with the request (a pool cleanup): a client gone, nothing is
 * posted.  The one such part is the zone's Redis Cluster (cluster=,
 * ngx_http_simhash_cluster.h): a key the zone does not hold and no match
 * in it is asked of the cluster (ngx_http_simhash_ask below).
 */

ngx_int_t
ngx_http_simhash_decide(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res)
{
    ngx_int_t                    rc;
    ngx_http_simhash_cluster_t  *cl;

    ctx->verdict.hash = res->hash;
    ctx->verdict.has_hash = 1;

    if (ctx->key.len == 0 || ctx->key.len > SH_KEY_MAX) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: key of %uz bytes not stored", ctx->key.len);
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ERROR);
        return NGX_OK;
    }

    /* this worker's client of the zone's cluster, if it has one */
    cl = ngx_http_simhash_cluster_of(slcf->zone);

    rc = ngx_http_simhash_local(r, ctx, slcf, res, cl != NULL, NULL);

    if (rc == NGX_AGAIN) {
        return ngx_http_simhash_ask(r, ctx, slcf, cl, res);
    }

    return rc;
}


/*
 * The zone's answer, under its lock, counted.  ask: a key the zone does
 * not hold and no match in it is not called new: NGX_AGAIN, nothing
 * stored, nothing counted (the cluster is asked).  own: the cluster's
 * record of the key (its answer to a re-fetch of a key the zone did not
 * hold), or NULL; the zone's own document of the key, if another worker
 * stored it meanwhile, still comes first.
 */

static ngx_int_t
ngx_http_simhash_local(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res, ngx_uint_t ask,
    const sh_cluster_rec_t *own)
{
    uint32_t                  ref;
    ngx_int_t                 rc, changes;
    ngx_http_simhash_zone_t  *zone;

    zone = slcf->zone;

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    ref = ngx_http_simhash_zone_key(zone, &ctx->key);

    rc = ref != SH_NOREF ? ngx_http_simhash_refetch(r, ctx, slcf, ref, res)
                         : NGX_DECLINED;

    if (rc == NGX_DECLINED && own != NULL) {
        rc = ngx_http_simhash_refetch_cluster(r, ctx, slcf, res, own);
    }

    if (rc == NGX_DECLINED) {
        rc = ngx_http_simhash_match(r, ctx, slcf, &ctx->key, res, ask);
    }

    changes = (rc == NGX_OK) ? ngx_http_simhash_observe(r, ctx, slcf) : 0;

    if (rc == NGX_OK) {
        /* the console's accounting in this hold: a response takes the
         * lock once (BENCHMARKS.md, bench/17-sites-lock.sh) */
        ngx_http_simhash_account(r, ctx, slcf, 1);
    }

    ngx_http_simhash_zone_unlock(zone);

    if (rc != NGX_OK) {
        return rc;
    }

    if (changes) {
        ngx_http_simhash_dust_log(zone, r->connection->log);
    }

    ngx_http_simhash_count(zone, responses[ctx->verdict.status], 1);

    if (ctx->verdict.status == NGX_HTTP_SIMHASH_SKIPPED) {
        ngx_http_simhash_count(zone, skipped[ctx->verdict.reason], 1);
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: %016uxL %V distance:%ui \"%V\"",
                   res->hash,
                   &ngx_http_simhash_status_names[ctx->verdict.status],
                   ctx->verdict.distance, &ctx->verdict.duplicate_of);

    return NGX_OK;
}


/*
 * A local miss in a zone with cluster=: the lookup goes out and the
 * decision is pending (see ngx_http_simhash_decide()).  A lookup that
 * cannot even start (no memory) is an index not read: skipped.
 */

static ngx_int_t
ngx_http_simhash_ask(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, ngx_http_simhash_cluster_t *cl,
    sh_result_t *res)
{
    sh_lookup_opts_t           opts;
    ngx_pool_cleanup_t        *cln;
    ngx_http_simhash_asked_t  *a;

    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_simhash_asked_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }

    a = cln->data;
    a->r = r;
    a->res = *res;
    a->res.why = NULL;

    (void) ngx_http_simhash_lookup_opts(slcf, res, &opts);

    /* the key's record is read with the probes: a re-fetch of a page
     * another node stored (or this one, before its zone lost it) */
    a->lk = ngx_http_simhash_cluster_lookup_key(cl,
                ngx_http_simhash_zone_keyhash(slcf->zone, &ctx->key),
                res->hash, res->weights, ngx_min(opts.h, SH_H_MAX),
                opts.recall, opts.vol, ngx_http_simhash_answered, a);
    if (a->lk == NULL) {
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_INCOMPLETE);
        return NGX_OK;
    }

    cln->handler = ngx_http_simhash_ask_cleanup;

    ctx->verdict.pending = 1;

    return NGX_AGAIN;
}


static void
ngx_http_simhash_ask_cleanup(void *data)
{
    ngx_http_simhash_asked_t  *a = data;

    /* the request went first (the client closed): no answer is wanted */
    if (a->lk) {
        ngx_http_simhash_cluster_cancel(a->lk);
        a->lk = NULL;
    }
}


/*
 * The cluster's answer (from an event of its own, never inside the
 * lookup's start): known, the key's own record: a re-fetch, unchanged or
 * changed as if the zone held it (and now it does); found, a duplicate of
 * the cluster's document; new,
 * the zone is asked again and the page stored there (another worker may
 * have stored a near copy meanwhile: then it is that one's duplicate);
 * incomplete, skipped: never "new" from an index not read, never
 * dropped.  Then the verdict is no longer pending and the writer runs the
 * filters again.
 */

static void
ngx_http_simhash_answered(ngx_http_simhash_cluster_lookup_t *lk)
{
    ngx_int_t                     rc;
    ngx_http_request_t           *r;
    ngx_http_simhash_ctx_t       *ctx;
    ngx_http_simhash_asked_t     *a;
    ngx_http_simhash_loc_conf_t  *slcf;

    a = lk->data;
    a->lk = NULL;
    r = a->r;

    ctx = ngx_http_get_module_ctx(r, ngx_http_simhash_module);
    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    switch (lk->status) {

    case NGX_HTTP_SIMHASH_CLUSTER_FOUND:
        rc = ngx_http_simhash_found(r, ctx, slcf, &a->res, &lk->rec,
                                    &lk->key);
        break;

    case NGX_HTTP_SIMHASH_CLUSTER_KNOWN:
        rc = ngx_http_simhash_local(r, ctx, slcf, &a->res, 0, &lk->own);
        break;

    case NGX_HTTP_SIMHASH_CLUSTER_NEW:
        rc = ngx_http_simhash_local(r, ctx, slcf, &a->res, 0, NULL);
        break;

    default: /* NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE */
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: \"%V\" skipped: the cluster's index was "
                      "not read in full (%s)", &ctx->key,
                      ngx_http_simhash_cluster_causes[lk->cause]);

        /* no node of the cluster reachable: the node works from its zone,
         * and keeps the page (skipped all the same) for the cluster's
         * return (its backlog); a master down is the cluster's to fail
         * over: the page is passed and not stored */
        if (slcf->insert && ngx_http_simhash_cluster_alone(lk->cl)) {
            /* stored in the zone, which writes it to the cluster's
             * backlog (ngx_http_simhash_changed) */
            rc = ngx_http_simhash_local(r, ctx, slcf, &a->res,
                                        NGX_HTTP_SIMHASH_ALONE, NULL);
            break;
        }

        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_INCOMPLETE);
        rc = NGX_OK;
        break;
    }

    if (rc != NGX_OK) {
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ERROR);
    }

    ctx->verdict.pending = 0;

    ngx_post_event(r->connection->write, &ngx_posted_events);
}


/*
 * The cluster holds a document near the page: a duplicate of it, if the
 * location's rule accepts the pair (the cluster compares whole
 * fingerprints by Hamming distance; a weighted rule may say no) and the
 * two are not listings of one template.  Otherwise it is the zone's to
 * decide, as if the cluster had said new.  Duplicate-Of names the
 * original by its key text (name), or while the cluster has none by its id
 * (the key hash), as a zone does for a document whose text has left its
 * ring.  The page is not stored (the index keeps one representative per
 * cluster); the original is, in the zone: the next copy of it is found
 * locally.
 */

static ngx_int_t
ngx_http_simhash_found(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res,
    sh_cluster_rec_t *rec, ngx_str_t *name)
{
    int                       same;
    u_char                   *p;
    unsigned                  h;
    uint32_t                  score;
    ngx_int_t                 changes;
    sh_match_opts_t           mo;
    sh_lookup_opts_t          opts;
    ngx_http_simhash_zone_t  *zone;

    zone = slcf->zone;

    (void) ngx_http_simhash_lookup_opts(slcf, res, &opts);
    sh_lookup_match_opts(&opts, &mo);
    same = sh_match_pair(&mo, res->hash, res->weights, rec->fp, &h, &score);

    if (!same || sh_sketch_veto(&rec->sk, &res->sketches)) {
        return ngx_http_simhash_local(r, ctx, slcf, res, 0, NULL);
    }

    if (name->len) {
        if (ngx_http_simhash_escape(r->pool, name->data, name->len,
                                    &ctx->verdict.duplicate_of)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

    } else {
        p = ngx_pnalloc(r->pool, NGX_HTTP_SIMHASH_NAME_MAX);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ctx->verdict.duplicate_of.data = p;
        ctx->verdict.duplicate_of.len = ngx_sprintf(p, "%s%016uxL",
                                            NGX_HTTP_SIMHASH_ID_PREFIX,
                                            rec->kh)
                                        - p;
    }
    ctx->verdict.status = NGX_HTTP_SIMHASH_DUPLICATE;
    ctx->verdict.distance = h;
    ctx->verdict.score = score;
    ctx->verdict.has_distance = 1;
    ctx->rep = rec->kh;

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    ngx_http_simhash_warm(zone, slcf, rec, name);

    changes = ngx_http_simhash_observe(r, ctx, slcf);
    ngx_http_simhash_account(r, ctx, slcf, 1);

    ngx_http_simhash_zone_unlock(zone);

    if (changes) {
        ngx_http_simhash_dust_log(zone, r->connection->log);
    }

    ngx_http_simhash_count(zone, responses[ctx->verdict.status], 1);

    return NGX_OK;
}


/*
 * The page is not fingerprinted (too large, an encoding or markup we
 * cannot read, too short, ...): the verdict "skipped", with why, counted.
 */

void
ngx_http_simhash_skip(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_skip_e reason)
{
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    ctx->verdict.status = NGX_HTTP_SIMHASH_SKIPPED;
    ctx->verdict.reason = reason;
    ctx->verdict.has_distance = 0;

    ngx_http_simhash_count(slcf->zone, responses[ctx->verdict.status], 1);
    ngx_http_simhash_count(slcf->zone, skipped[reason], 1);
}


/*
 * Under the lock: the decision, to the DUST learner (simhash_dust learn or
 * on).  The URL is the document key; a GET's only: the key names what a
 * GET of it returns.  Returns the number of rule changes it caused.
 */

static ngx_int_t
ngx_http_simhash_observe(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    if (slcf->dust->mode == NGX_HTTP_SIMHASH_DUST_OFF
        || r->method != NGX_HTTP_GET)
    {
        return 0;
    }

    return ngx_http_simhash_dust_observe(slcf->zone, &ctx->key, ctx->rep);
}


/*
 * A re-fetch of a document the zone holds, under the lock: unchanged (it is
 * made the newest) or changed (its fingerprint is replaced).  NGX_DECLINED:
 * the document turned out not to be there after all.
 */

static ngx_int_t
ngx_http_simhash_refetch(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, uint32_t ref, sh_result_t *res)
{
    int                        same;
    unsigned                   h;
    uint64_t                   old;
    sh_match_opts_t            mo;
    ngx_http_simhash_zone_t   *zone;
    ngx_http_simhash_shctx_t  *sh;

    zone = slcf->zone;
    sh = zone->sh;

    if (ngx_http_simhash_zone_fingerprint(zone, ref, &old) != NGX_OK) {
        /* cannot happen: the key table holds stored documents only */
        return NGX_DECLINED;
    }

    /* the rule of a lookup, the new page as the query */

    sh_lookup_match_opts(&slcf->lookup, &mo);
    same = sh_match_pair(&mo, res->hash, res->weights, old, &h,
                         &ctx->verdict.score);

    ctx->verdict.distance = h;
    ctx->verdict.has_distance = 1;

    ctx->verdict.status = same ? NGX_HTTP_SIMHASH_UNCHANGED
                       : NGX_HTTP_SIMHASH_CHANGED;

    /* the URL is its own document, unchanged or not */
    ctx->rep = ngx_http_simhash_zone_doc(zone, ref)->keyhash;

    if (!slcf->insert) {
        return NGX_OK;
    }

    /*
     * unchanged: the document is made the newest, and keeps its
     * fingerprint (small edits do not drift it away from its cluster);
     * changed: the fingerprint is replaced.  Either way the digest is the
     * new body's, so that the next identical fetch needs no parse.
     */

    ngx_http_simhash_zone_write(zone);

    if (ctx->verdict.status == NGX_HTTP_SIMHASH_UNCHANGED) {
        ngx_http_simhash_zone_refresh(zone, ref, ctx->digest);

    } else {
        ngx_http_simhash_zone_replace(zone, ref, res->hash, ctx->digest,
                                      &res->sketches);

        ngx_http_simhash_changed(zone, &ctx->key, ref, r->connection->log);
    }

    (void) ngx_atomic_fetch_add(&sh->generation, 1);

    return NGX_OK;
}


/*
 * A re-fetch of a key the zone does not hold and the cluster does (own:
 * its record's newest version), under the lock: answered as
 * ngx_http_simhash_refetch answers a key the zone holds (the same rule,
 * statuses and figures; a body byte for byte the record's is unchanged at
 * distance 0 with the stored fingerprint, as ngx_http_simhash_identical
 * says), and the document is put into the zone, the hot set, as the
 * zone would hold it after that answer: unchanged, the record's
 * fingerprint, version and sketches with the body's digest; changed, the
 * page's, dated now and written to the cluster as the key's newest
 * version, as every version this node makes is (the other nodes then call
 * the page unchanged).  The zone
 * evicts its oldest document for it when full.
 */

static ngx_int_t
ngx_http_simhash_refetch_cluster(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    sh_result_t *res, const sh_cluster_rec_t *own)
{
    int                       same;
    unsigned                  h;
    uint32_t                  ref;
    sh_match_opts_t           mo;
    ngx_http_simhash_zone_t  *zone;

    zone = slcf->zone;

    if (own->digest != 0 && own->digest == ctx->digest) {
        same = 1;
        h = 0;
        ctx->verdict.score = 0;
        ctx->verdict.hash = own->fp;

    } else {
        sh_lookup_match_opts(&slcf->lookup, &mo);
        same = sh_match_pair(&mo, res->hash, res->weights, own->fp, &h,
                             &ctx->verdict.score);
    }

    ctx->verdict.distance = h;
    ctx->verdict.has_distance = 1;
    ctx->verdict.status = same ? NGX_HTTP_SIMHASH_UNCHANGED
                               : NGX_HTTP_SIMHASH_CHANGED;
    ctx->rep = own->kh;

    if (!slcf->insert) {
        return NGX_OK;
    }

    ngx_http_simhash_zone_write(zone);

    if (same) {
        (void) ngx_http_simhash_zone_store(zone, &ctx->key, own->fp,
                                           ctx->digest, own->second,
                                           &own->sk);
        return NGX_OK;
    }

    /* dated after the record's version: the key's newest, here and in
     * the cluster (ngx_http_simhash_changed) */
    ref = ngx_http_simhash_zone_store(zone, &ctx->key, res->hash,
                                      ctx->digest, own->second,
                                      &res->sketches);
    if (ref != SH_NOREF) {
        ngx_http_simhash_changed(zone, &ctx->key, ref, r->connection->log);
    }

    return NGX_OK;
}


/*
 * Under the lock: the original of a duplicate the cluster found, into the
 * zone (simhash_insert on) unless it holds that key already, known by its
 * key hash (the cluster keeps no key text), with the record's
 * fingerprint, digest, version and sketches: the next copy of it is found
 * here, and a re-fetch of its key through this node is answered here.
 */

static void
ngx_http_simhash_warm(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_loc_conf_t *slcf, const sh_cluster_rec_t *rec,
    ngx_str_t *name)
{
    if (!slcf->insert
        || ngx_http_simhash_zone_find_hash(zone, rec->kh) != SH_NOREF)
    {
        return;
    }

    ngx_http_simhash_zone_write(zone);

    (void) ngx_http_simhash_zone_store_hash(zone, rec->kh, name, rec->fp,
                                            rec->digest, rec->second,
                                            &rec->sk);
}


/*
 * A key the zone does not hold, under the lock: a duplicate of the closest
 * match, else new and stored (ask: else NGX_AGAIN, the cluster is asked).  Duplicates are not stored: the index keeps
 * one representative per cluster, the first one seen.
 */

static ngx_int_t
ngx_http_simhash_match(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, ngx_str_t *key, sh_result_t *res,
    ngx_uint_t ask)
{
    size_t                    n;
    uint32_t                  ref;
    ngx_str_t                 safe, name;
    sh_match_t                match;
    sh_lookup_opts_t          opts;
    sh_lookup_stats_t         st;
    const sh_store_doc_t     *doc;
    ngx_http_simhash_zone_t  *zone;
    u_char                    id[NGX_HTTP_SIMHASH_NAME_MAX];

    zone = slcf->zone;

    n = ngx_http_simhash_zone_lookup(zone, res->hash, res->weights,
                            ngx_http_simhash_lookup_opts(slcf, res, &opts),
                            &match, 1, &st);

    doc = n ? ngx_http_simhash_zone_doc(zone, match.ref) : NULL;

    if (doc && sh_sketch_veto(&doc->sketches, &res->sketches)) {
        n = ngx_http_simhash_not_listing(zone, slcf, res, &match);
        doc = n ? ngx_http_simhash_zone_doc(zone, match.ref) : NULL;
    }

    if (doc) {
        ctx->verdict.status = NGX_HTTP_SIMHASH_DUPLICATE;
        ctx->rep = doc->keyhash;
        ctx->verdict.distance = match.distance;
        ctx->verdict.score = match.score;
        ctx->verdict.has_distance = 1;

        /* copied while locked: the document may be evicted right after */

        ngx_http_simhash_zone_name(zone, match.ref, &name, id);

        return ngx_http_simhash_escape(r->pool, name.data, name.len,
                                       &ctx->verdict.duplicate_of);
    }

    if (ask == 1) {
        return NGX_AGAIN;       /* the cluster may hold one */
    }

    ctx->verdict.status = NGX_HTTP_SIMHASH_NEW;
    ctx->rep = ngx_http_simhash_zone_keyhash(zone, key);

    if (slcf->insert) {
        ngx_http_simhash_zone_write(zone);

        ref = ngx_http_simhash_zone_store(zone, key, res->hash, ctx->digest,
                                          0, &res->sketches);

        if (ref != SH_NOREF) {
            ngx_http_simhash_changed(zone, key, ref, r->connection->log);

        } else if (ngx_http_simhash_escape(r->pool, key->data, key->len,
                                           &safe)
                   == NGX_OK)
        {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "simhash: no room for \"%V\" in zone \"%V\"",
                          &safe, &zone->name);
        }
    }

    if (ask == NGX_HTTP_SIMHASH_ALONE) {
        /* stored, but not called new: the index was not read */
        ctx->verdict.status = NGX_HTTP_SIMHASH_SKIPPED;
        ctx->verdict.reason = NGX_HTTP_SIMHASH_SKIP_INCOMPLETE;
    }

    return NGX_OK;
}


/*
 * The location's lookup options for this page: a short hub (a page whose
 * own content is a few dozen words, mostly links) matches only within the
 * classic radius (sh_match_short, src/sh_match.h).  The stored page's own
 * flag is not kept: the rule is applied to the page being fetched.
 */

static const sh_lookup_opts_t *
ngx_http_simhash_lookup_opts(ngx_http_simhash_loc_conf_t *slcf,
    const sh_result_t *res, sh_lookup_opts_t *opts)
{
    *opts = slcf->lookup;

    if (sh_result_short_hub(res) && opts->h > SH_SHORT_H) {
        opts->h = SH_SHORT_H;
    }

    return opts;
}


/*
 * The closest match was vetoed: the stored page and this one are two
 * listings of one template (the same markup, other link words: see
 * src/sh_sketch.h), not duplicates.  Another stored page may still match:
 * the closest of up to NGX_HTTP_SIMHASH_CANDIDATES matches that is not a
 * listing of this one.  Returns 1 with it in *best, or 0.  Under the lock.
 */

static size_t
ngx_http_simhash_not_listing(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_loc_conf_t *slcf, sh_result_t *res, sh_match_t *best)
{
    size_t                 n, i, found;
    const sh_store_doc_t  *doc;
    sh_match_t             all[NGX_HTTP_SIMHASH_CANDIDATES];
    sh_lookup_opts_t       opts;
    sh_lookup_stats_t      st;

    ngx_http_simhash_count(zone, listings, 1);

    (void) ngx_http_simhash_lookup_opts(slcf, res, &opts);
    opts.mode = SH_MATCH_ALL;
    opts.learn = 0;             /* the first lookup taught the learner */

    n = ngx_http_simhash_zone_lookup(zone, res->hash, res->weights, &opts,
                                     all, NGX_HTTP_SIMHASH_CANDIDATES, &st);
    n = ngx_min(n, NGX_HTTP_SIMHASH_CANDIDATES);
    found = 0;

    for (i = 0; i < n; i++) {
        doc = ngx_http_simhash_zone_doc(zone, all[i].ref);

        if (doc == NULL || sh_sketch_veto(&doc->sketches, &res->sketches)) {
            continue;
        }

        if (!found
            || (opts.rule == SH_RULE_WEIGHTED ? all[i].score < best->score
                                              : all[i].distance
                                                < best->distance))
        {
            *best = all[i];
            found = 1;
        }
    }

    return found;
}


/*
 * Under the lock, after this node stored a new document or a new version of
 * one: the zone dates the version, a replicated zone publishes it, and a
 * zone with cluster= writes it to the cluster.
 */

static void
ngx_http_simhash_changed(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    uint32_t ref, ngx_log_t *log)
{
    uint64_t                     time;
    sh_cluster_rec_t             rec;
    const sh_store_doc_t        *doc;
    ngx_http_simhash_cluster_t  *cl;

    time = ngx_http_simhash_zone_changed(zone, ref);

    ngx_http_simhash_replicate_publish(zone, key, ref, time, log);

    /* and to the zone's cluster (not waited for; what is lost when this
     * node or the cluster dies between the two writes: docs/SCALE.md),
     * dated as the zone dates it: a new version of a key the cluster
     * knows is later than the one it has, so that every node reads it
     * as the key's newest.  Under the lock, as the stream's publish: the
     * client only queues the APPENDs, it calls nobody back from here */

    cl = ngx_http_simhash_cluster_of(zone);
    doc = ngx_http_simhash_zone_doc(zone, ref);

    if (cl == NULL || doc == NULL
        || ngx_http_simhash_zone_fingerprint(zone, ref, &rec.fp) != NGX_OK)
    {
        return;
    }

    rec.kh = doc->keyhash;
    rec.digest = doc->digest;
    rec.second = doc->time;
    rec.sk = doc->sketches;

    ngx_http_simhash_cluster_add(cl, &rec, key);
}


/*
 * The verdict made whole, once, before the response acts on it: what the
 * crawler gets ($simhash_action "dropped" for a dropped duplicate,
 * "verified" for a prediction fetched to check it) and, for a page
 * skipped after its body was held, its count for the console in a hold
 * of its own (a decision was counted in the decision's hold).
 */

void
ngx_http_simhash_conclude(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    if (ngx_http_simhash_drops(r, ctx, slcf)) {
        ctx->action = ctx->verifying ? NGX_HTTP_SIMHASH_ACT_VERIFIED
                                     : NGX_HTTP_SIMHASH_ACT_DROPPED;
    }

    if (!ctx->accounted) {
        ngx_http_simhash_account(r, ctx, slcf, 0);
    }
}


/*
 * Whether the response is dropped: decided once, on the original, before
 * simhash_reveal hides anything (in the decision's hold of the lock, for
 * the console, else when the verdict is concluded).
 */

static ngx_uint_t
ngx_http_simhash_drops(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    ngx_str_t                    key;
    ngx_http_simhash_verdict_t  *v;

    v = &ctx->verdict;

    if (!v->drop_known) {
        v->drop = v->status == NGX_HTTP_SIMHASH_DUPLICATE
                  && slcf->action == NGX_HTTP_SIMHASH_DROP
                  && ngx_http_simhash_escape(r->pool, ctx->key.data,
                                             ctx->key.len, &key)
                     == NGX_OK
                  && ngx_http_simhash_drop_allowed(slcf, &key,
                                                   &v->duplicate_of,
                                                   v->score);
        v->drop_known = 1;
    }

    return v->drop;
}


/*
 * The decision, for the console (ngx_http_simhash_sites.c): its rate, its
 * site, and "why?" later; for a prediction fetched to check it, what it
 * came to.  `locked`: in the decision's hold of the zone's lock (no second
 * hold), else the accounting takes it.  A skipped response may have been
 * given up before its key was made: it is made here, without changing the
 * ctx.
 */

static void
ngx_http_simhash_account(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, ngx_uint_t locked)
{
    ngx_str_t                 key;
    ngx_uint_t                drop, what;
    ngx_http_simhash_event_t  ev;

    ctx->accounted = 1;
    drop = ngx_http_simhash_drops(r, ctx, slcf);
    key = ctx->key;

    if (key.len == 0
        && ngx_http_complex_value(r, slcf->key, &key) != NGX_OK)
    {
        ngx_str_null(&key);
    }

    ev.key = &key;
    ev.event = ctx->verdict.status;
    ev.action = drop ? NGX_HTTP_SIMHASH_DID_DROPPED
                     : NGX_HTTP_SIMHASH_DID_PASSED;
    ev.original = ctx->verdict.status == NGX_HTTP_SIMHASH_DUPLICATE
                  ? ctx->rep : 0;
    ev.distance = ctx->verdict.has_distance ? ctx->verdict.distance
                                            : (ngx_uint_t) NGX_ERROR;
    ev.score = ctx->verdict.has_distance ? ctx->verdict.score : 0;
    ev.bytes = drop ? ctx->held_bytes : 0;

    /* a prediction fetched to check it: what its rules came to */

    what = ctx->verdict.status == NGX_HTTP_SIMHASH_DUPLICATE
           ? NGX_HTTP_SIMHASH_VERIFIED : NGX_HTTP_SIMHASH_FAILED;

    if (locked) {
        ngx_http_simhash_sites_event_locked(slcf->zone, &ev);

        if (ctx->verifying && ctx->verdict.status != NGX_HTTP_SIMHASH_SKIPPED) {
            ngx_http_simhash_sites_outcome_locked(slcf->zone, &key,
                                                  &ctx->predicted, what);
        }

        return;
    }

    ngx_http_simhash_sites_event(slcf->zone, &ev, r->connection->log);

    if (ctx->verifying && ctx->verdict.status != NGX_HTTP_SIMHASH_SKIPPED) {
        ngx_http_simhash_sites_outcome(slcf->zone, &key, &ctx->predicted,
                                       what, r->connection->log);
    }
}
