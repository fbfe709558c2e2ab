
/*
 * ngx_http_simhash_predict.c -- stage 0 of a request's path, before any
 * response: with simhash_dust on, the precontent phase asks the DUST
 * learner (module/ngx_http_simhash_dust.c) whether the URL is a duplicate
 * of a stored page.  In drop mode a predicted duplicate is answered here,
 * without the upstream (the drop status and the X-Simhash-* headers of
 * ngx_http_simhash_response.c); in tag mode, or for a prediction fetched
 * to verify it, the request goes on and the prediction rides in the
 * request's context (ngx_http_simhash_request.h) to the header filter.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash_request.h"


static ngx_int_t ngx_http_simhash_rules_text(ngx_pool_t *pool, u_char *text,
    size_t len, ngx_str_t *out);
static ngx_uint_t ngx_http_simhash_credentials(ngx_http_request_t *r);
static ngx_uint_t ngx_http_simhash_dust_droppable(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    ngx_str_t *key, ngx_str_t *safe, ngx_http_simhash_prediction_t *p);
static ngx_int_t ngx_http_simhash_dust_answer(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);


/*
 * 0. The request, simhash_dust on: a predicted duplicate?  GET and HEAD
 * only (and, unless simhash_dust_credentials is on, without Authorization
 * or Cookie: a personalised page is not the one another URL had).  In drop
 * mode, under the location's keys= rule, the answer is the drop status at
 * once, without the upstream; but one prediction in simhash_dust_verify
 * is fetched anyway and its decision, observed, checks the rule: that
 * rate times the share its weakest rule needs (sh_dust_sample: all of it
 * until the rule's test is well past its bound, less as its evidence
 * grows, never under a quarter), all of a rate of 100%.  In tag
 * mode the page is fetched and the prediction rides along.
 *
 * keys=path asks that the original have the request's path (see
 * ngx_http_simhash_dust_droppable below).
 */

ngx_int_t
ngx_http_simhash_dust_handler(ngx_http_request_t *r)
{
    ngx_str_t                       key, safe;
    ngx_uint_t                      answer, rate;
    ngx_http_simhash_ctx_t         *ctx;
    ngx_http_simhash_event_t        ev;
    ngx_http_simhash_loc_conf_t    *slcf;
    ngx_http_simhash_prediction_t  *p;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    if (slcf->zone == NULL
        || slcf->dust->mode != NGX_HTTP_SIMHASH_DUST_ON
        || r != r->main
        || !(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
        || ngx_http_get_module_ctx(r, ngx_http_simhash_module) != NULL
        || (!slcf->dust->credentials && ngx_http_simhash_credentials(r)))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_complex_value(r, slcf->key, &key) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (key.len == 0 || key.len > SH_KEY_MAX) {
        return NGX_DECLINED;
    }

    p = ngx_palloc(r->pool, sizeof(ngx_http_simhash_prediction_t));
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_simhash_dust_predict(r, slcf->zone, &key, p) != NGX_OK) {
        return NGX_DECLINED;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_simhash_ctx_t));
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->early = 1;
    ctx->key = key;

    if (ngx_http_simhash_rules_text(r->pool, p->rule, p->rule_len,
                                    &ctx->predicted)
        != NGX_OK
        || ngx_http_simhash_escape(r->pool, p->name.data, p->name.len,
                                   &ctx->verdict.duplicate_of)
           != NGX_OK
        || ngx_http_simhash_escape(r->pool, key.data, key.len, &safe)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_simhash_module);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash dust: predicted duplicate of \"%V\" by %V",
                   &ctx->verdict.duplicate_of, &ctx->predicted);

    answer = 0;

    if (slcf->action == NGX_HTTP_SIMHASH_DROP
        && ngx_http_simhash_dust_droppable(r, ctx, slcf, &key, &safe, p))
    {
        rate = slcf->dust->verify;

        if (rate < 1000000) {
            rate = (ngx_uint_t) (rate * p->why.sample);
        }

        answer = rate == 0 || (ngx_uint_t) ngx_random() % 1000000 >= rate;
        ctx->verifying = !answer;
    }

    /* the console: the prediction made and, answered now, its event, in
     * one hold of the lock */

    ev.key = &key;
    ev.event = NGX_HTTP_SIMHASH_EV_PREDICTED;
    ev.action = NGX_HTTP_SIMHASH_DID_PREDICTED;
    ev.original = (answer && p->name.len)
                  ? ngx_http_simhash_zone_keyhash(slcf->zone, &p->name) : 0;
    ev.distance = (ngx_uint_t) NGX_ERROR;
    ev.score = 0;
    ev.bytes = 0;

    ngx_http_simhash_zone_lock(slcf->zone, r->connection->log);

    ngx_http_simhash_sites_outcome_locked(slcf->zone, &key, &ctx->predicted,
                                          NGX_HTTP_SIMHASH_MADE);

    if (answer) {
        ngx_http_simhash_sites_event_locked(slcf->zone, &ev);
    }

    ngx_http_simhash_zone_unlock(slcf->zone);

    if (answer) {
        ngx_http_simhash_dust_saved(slcf->zone, p, r->connection->log);

        return ngx_http_simhash_dust_answer(r, ctx, slcf);
    }

    /* fetched: the response's decision is what counts */

    ngx_str_null(&ctx->verdict.duplicate_of);

    return NGX_DECLINED;
}


/*
 * Whether drop mode may answer a prediction.  keys=path asks that the
 * original have the request's path: for a prediction, its path once the
 * rules rewrote both (asked of the learner only when the paths as they
 * are differ), so /d/index.html predicted from /d/ by a learned
 * index-file rule is answered, and a prediction whose document is another
 * item's page (a fingerprint duplicate of it was the last fetch of that
 * form) is not.  When the document's own key has another path (a page
 * first fetched as /node/7, then as /news/a), the request's canonical
 * form is named instead if that URL itself was fetched as this document:
 * the crawler was given it (as a duplicate passed on under keys=path, or
 * as the page itself), and the rules make it one page with the request.
 */

static ngx_uint_t
ngx_http_simhash_dust_droppable(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    ngx_str_t *key, ngx_str_t *safe, ngx_http_simhash_prediction_t *p)
{
    ngx_str_t  form, escaped;

    if (ngx_http_simhash_drop_allowed(slcf, safe, &ctx->verdict.duplicate_of, 0)
        || ngx_http_simhash_dust_same_path(slcf->zone, key, &p->name,
                                           r->connection->log))
    {
        return 1;
    }

    if (ngx_http_simhash_dust_fetched_form(r, slcf->zone, key, p, &form)
        != NGX_OK
        || ngx_http_simhash_escape(r->pool, form.data, form.len, &escaped)
           != NGX_OK)
    {
        return 0;
    }

    if (!ngx_http_simhash_drop_allowed(slcf, safe, &escaped, 0)
        && !ngx_http_simhash_dust_same_path(slcf->zone, key, &form,
                                            r->connection->log))
    {
        return 0;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash dust: named by its fetched form \"%V\"",
                   &escaped);

    ctx->verdict.duplicate_of = escaped;

    return 1;
}


/*
 * The rules of a prediction as they may go into a header: their arguments
 * are spelled as URLs spelled them, so a control byte, DEL or a byte >=
 * 0x80 is percent-encoded (a header line cannot be ended or split by a
 * site's parameter names), and '<' and '>' too, as the JSON spells them
 * (a crawler that shows the header in a page shows no markup a site
 * named its parameters with); the spaces between rules stay.
 */

static ngx_int_t
ngx_http_simhash_rules_text(ngx_pool_t *pool, u_char *text, size_t len,
    ngx_str_t *out)
{
    u_char  *p;
    size_t   i;

    static u_char  hex[] = "0123456789ABCDEF";

    out->data = ngx_pnalloc(pool, 3 * len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;

    for (i = 0; i < len; i++) {
        if (text[i] < 0x20 || text[i] >= 0x7f
            || text[i] == '<' || text[i] == '>')
        {
            *p++ = '%';
            *p++ = hex[text[i] >> 4];
            *p++ = hex[text[i] & 0xf];

        } else {
            *p++ = text[i];
        }
    }

    out->len = p - out->data;

    return NGX_OK;
}


/* Whether the request carries credentials: Authorization, Cookie. */

static ngx_uint_t
ngx_http_simhash_credentials(ngx_http_request_t *r)
{
    if (r->headers_in.authorization) {
        return 1;
    }

#if (nginx_version >= 1023000)
    return r->headers_in.cookie != NULL;
#else
    return r->headers_in.cookies.nelts != 0;
#endif
}


/*
 * The drop status with an empty body and the tags of a duplicate, sent
 * from the request phase: the upstream is never contacted.  The request is
 * finalized here; NGX_DONE stops the phases.
 */

static ngx_int_t
ngx_http_simhash_dust_answer(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf)
{
    ngx_int_t  rc;

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        return rc;
    }

    /* the header filter passes a ctx that is not early */

    ctx->early = 0;
    ctx->phase = NGX_HTTP_SIMHASH_DONE;
    ctx->verdict.status = NGX_HTTP_SIMHASH_DUPLICATE;
    ctx->action = NGX_HTTP_SIMHASH_ACT_PREDICTED;

    r->headers_out.status = slcf->drop_code;
    r->headers_out.content_length_n = 0;
    r->allow_ranges = 0;

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    ngx_http_finalize_request(r, ngx_http_send_special(r, NGX_HTTP_LAST));

    return NGX_DONE;
}
