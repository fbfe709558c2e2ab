
/*
 * ngx_http_simhash_response.c -- stage 4 of a response's path: the
 * decision written.  ngx_http_simhash_send adds the X-Simhash-* headers
 * (set_headers, with what simhash_reveal leaves out hidden first: reveal)
 * and sends header and held body, or, for a duplicate in drop mode, an
 * empty body with the configured status.  A response given up on is
 * tagged "skipped" (skip), and every decision is counted in the zone's
 * statistics (account).  Keys go into headers escaped (escape).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash_request.h"


/* X-Simhash-Duplicate-Of is sent only up to this length (the escaped key;
 * common clients and proxies take 8k header lines at most) */
#define NGX_HTTP_SIMHASH_HEADER_MAX 4096


static ngx_str_t  ngx_http_simhash_h_hash = ngx_string("X-Simhash");
static ngx_str_t  ngx_http_simhash_h_status = ngx_string("X-Simhash-Status");
static ngx_str_t  ngx_http_simhash_h_dup = ngx_string("X-Simhash-Duplicate-Of");
static ngx_str_t  ngx_http_simhash_h_distance =
    ngx_string("X-Simhash-Distance");
static ngx_str_t  ngx_http_simhash_h_score = ngx_string("X-Simhash-Score");
ngx_str_t  ngx_http_simhash_h_predicted =
    ngx_string("X-Simhash-Predicted");


/* Header (with the tags, or the drop status) and the held body. */

ngx_int_t
ngx_http_simhash_send(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    ngx_int_t                     rc;
    ngx_buf_t                    *b;
    ngx_uint_t                    drop;
    ngx_chain_t                  *out, *cl;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    ctx->phase = NGX_HTTP_SIMHASH_DONE;

    drop = ngx_http_simhash_drops(r, ctx, slcf);

    if (drop) {
        ctx->action = ctx->verifying ? NGX_HTTP_SIMHASH_ACT_VERIFIED
                                     : NGX_HTTP_SIMHASH_ACT_DROPPED;
    }

    /* a response given up without a decision (skipped): counted here,
     * in a hold of its own; a decision was counted in its hold */

    if (!ctx->accounted) {
        ngx_http_simhash_account(r, ctx, slcf, 0);
    }

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (drop) {
        /* the response becomes CODE with an empty body; headers stay */

        r->headers_out.status = slcf->drop_code;
        r->headers_out.status_line.len = 0;

        ngx_http_clear_content_length(r);
        ngx_http_clear_accept_ranges(r);
        ngx_http_clear_etag(r);
        ngx_http_clear_last_modified(r);   /* wget would set the mtime */

        if (r->headers_out.content_encoding) {
            r->headers_out.content_encoding->hash = 0;
            r->headers_out.content_encoding = NULL;
        }

        r->headers_out.content_length_n = 0;
        r->allow_ranges = 0;
        ctx->held = NULL;

        rc = ngx_http_simhash_next_header_filter(r);

        if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
            return rc;
        }

        b = ngx_calloc_buf(r->pool);
        if (b == NULL) {
            return NGX_ERROR;
        }

        b->last_buf = 1;

        cl = ngx_alloc_chain_link(r->pool);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = b;
        cl->next = NULL;

        return ngx_http_simhash_next_body_filter(r, cl);
    }

    /* tag: the body as received; its length is known now */

    if (r->headers_out.content_length_n < 0) {
        r->headers_out.content_length_n = ctx->held_bytes;
    }

    rc = ngx_http_simhash_next_header_filter(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out = ctx->held;
    ctx->held = NULL;

    if (out == NULL) {
        b = ngx_calloc_buf(r->pool);
        if (b == NULL) {
            return NGX_ERROR;
        }

        cl = ngx_alloc_chain_link(r->pool);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = b;
        cl->next = NULL;
        out = cl;

    } else {
        b = ctx->buf;
    }

    b->last_buf = 1;

    return ngx_http_simhash_next_body_filter(r, out);
}


/*
 * simhash_reveal: what this response (its headers and the variables, which
 * a configuration may put into headers) tells about the documents of
 * others.  "status" hides the original's key and the distance, "off" the
 * status too; simhash_reveal_scope lets the key out only when it begins
 * with the scope's value for this request (an empty value: never).
 *
 * It only sets what to leave out: the outcome itself (the original's key,
 * the distance) stays in the ctx, since the drop decision and the DUST
 * learner need it whatever the client may see.  Deciding on what is shown
 * once crashed every dropped duplicate under "status" (issue 31).
 */

ngx_int_t
ngx_http_simhash_reveal(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    ngx_str_t                     scope;
    ngx_http_simhash_loc_conf_t  *slcf;

    if (ctx->revealed) {
        return NGX_OK;
    }

    ctx->revealed = 1;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    if (slcf->reveal == NGX_HTTP_SIMHASH_REVEAL_OFF) {
        ctx->hide_status = 1;
    }

    if (slcf->reveal != NGX_HTTP_SIMHASH_REVEAL_KEY) {
        ctx->hide_original = 1;
        return NGX_OK;
    }

    if (slcf->reveal_scope == NULL || ctx->duplicate_of.len == 0) {
        return NGX_OK;
    }

    if (ngx_http_complex_value(r, slcf->reveal_scope, &scope) != NGX_OK) {
        return NGX_ERROR;
    }

    if (scope.len == 0 || scope.len > ctx->duplicate_of.len
        || ngx_strncmp(ctx->duplicate_of.data, scope.data, scope.len) != 0)
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "simhash: duplicate out of the reveal scope");

        ctx->hide_original = 1;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_simhash_set_headers(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx)
{
    u_char  buf[NGX_INT64_LEN + 1], *p;

    if (ngx_http_simhash_reveal(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->action == NGX_HTTP_SIMHASH_ACT_NONE) {
        ctx->action = ctx->verifying ? NGX_HTTP_SIMHASH_ACT_VERIFIED
                                     : NGX_HTTP_SIMHASH_ACT_PASSED;
    }

    if (ctx->has_hash && ctx->status != NGX_HTTP_SIMHASH_SKIPPED) {
        p = ngx_sprintf(buf, "%016uxL", ctx->hash);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_hash, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (!ctx->hide_status
        && ngx_http_simhash_add_header(r, &ngx_http_simhash_h_status,
                              ngx_http_simhash_status_names[ctx->status].data,
                              ngx_http_simhash_status_names[ctx->status].len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* a prediction tells the status: hidden with it */

    if (ctx->predicted.len && !ctx->hide_status
        && ngx_http_simhash_add_header(r, &ngx_http_simhash_h_predicted,
                                       ctx->predicted.data,
                                       ctx->predicted.len)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ctx->hide_original) {
        return NGX_OK;
    }

    if (ctx->duplicate_of.len > NGX_HTTP_SIMHASH_HEADER_MAX) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: the key of the duplicate is %uz bytes, "
                      "over %d: no X-Simhash-Duplicate-Of header",
                      ctx->duplicate_of.len, NGX_HTTP_SIMHASH_HEADER_MAX);

    } else if (ctx->duplicate_of.len) {
        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_dup,
                                        ctx->duplicate_of.data,
                                        ctx->duplicate_of.len)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ctx->has_distance) {
        p = ngx_sprintf(buf, "%ui", ctx->distance);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_distance, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        p = ngx_http_simhash_score(buf, ctx->score);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_score, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * A stored key as it may go into a header, a variable or a log line: the
 * bytes of the key with every control byte, space, DEL and byte >= 0x80
 * percent-encoded (%0D, %20, %7F, %C3...), so that whatever a request
 * put in the key (a decoded $uri may hold CR LF) cannot end the header
 * line or inject another one.  Other bytes, '%' included, are kept: a key
 * made from $request_uri is a URL already and comes out unchanged.
 */

ngx_int_t
ngx_http_simhash_escape(ngx_pool_t *pool, u_char *key, size_t len,
    ngx_str_t *out)
{
    u_char       *p;
    size_t        i, n;

    static u_char  hex[] = "0123456789ABCDEF";

    n = 0;

    for (i = 0; i < len; i++) {
        n += (key[i] <= 0x20 || key[i] >= 0x7f) ? 3 : 1;
    }

    out->data = ngx_pnalloc(pool, n);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;

    for (i = 0; i < len; i++) {
        if (key[i] <= 0x20 || key[i] >= 0x7f) {
            *p++ = '%';
            *p++ = hex[key[i] >> 4];
            *p++ = hex[key[i] & 0xf];

        } else {
            *p++ = key[i];
        }
    }

    out->len = n;

    return NGX_OK;
}


ngx_int_t
ngx_http_simhash_add_header(ngx_http_request_t *r, ngx_str_t *key,
    u_char *value, size_t len)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->value.data = ngx_pnalloc(r->pool, len);
    if (h->value.data == NULL) {
        h->hash = 0;
        return NGX_ERROR;
    }

    ngx_memcpy(h->value.data, value, len);
    h->value.len = len;
    h->key = *key;
    h->lowcase_key = NULL;
    h->hash = 1;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}


void
ngx_http_simhash_skip(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_skip_e reason)
{
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    ctx->status = NGX_HTTP_SIMHASH_SKIPPED;
    ctx->reason = reason;
    ctx->has_distance = 0;

    ngx_http_simhash_count(slcf->zone, responses[ctx->status], 1);
    ngx_http_simhash_count(slcf->zone, skipped[reason], 1);
}


/*
 * Whether the response is dropped: decided once, on the original, before
 * simhash_reveal hides anything (in the decision's hold of the lock, for
 * the console, else when the response is sent).
 */

ngx_uint_t
ngx_http_simhash_drops(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    ngx_str_t  key;

    if (!ctx->drop_known) {
        ctx->drop = ctx->status == NGX_HTTP_SIMHASH_DUPLICATE
                    && slcf->action == NGX_HTTP_SIMHASH_DROP
                    && ngx_http_simhash_escape(r->pool, ctx->key.data,
                                               ctx->key.len, &key)
                       == NGX_OK
                    && ngx_http_simhash_drop_allowed(slcf, &key,
                                                     &ctx->duplicate_of,
                                                     ctx->score);
        ctx->drop_known = 1;
    }

    return ctx->drop;
}


/*
 * The decision, for the console (ngx_http_simhash_sites.c): its rate, its
 * site, and "why?" later; for a prediction fetched to check it, what it
 * came to.  `locked`: in the decision's hold of the zone's lock (no second
 * hold), else the accounting takes it.  A skipped response may have been
 * given up before its key was made: it is made here, without changing the
 * ctx.
 */

void
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
    ev.event = ctx->status;
    ev.action = drop ? NGX_HTTP_SIMHASH_DID_DROPPED
                     : NGX_HTTP_SIMHASH_DID_PASSED;
    ev.original = ctx->status == NGX_HTTP_SIMHASH_DUPLICATE ? ctx->rep : 0;
    ev.distance = ctx->has_distance ? ctx->distance : (ngx_uint_t) NGX_ERROR;
    ev.score = ctx->has_distance ? ctx->score : 0;
    ev.bytes = drop ? ctx->held_bytes : 0;

    /* a prediction fetched to check it: what its rules came to */

    what = ctx->status == NGX_HTTP_SIMHASH_DUPLICATE
           ? NGX_HTTP_SIMHASH_VERIFIED : NGX_HTTP_SIMHASH_FAILED;

    if (locked) {
        ngx_http_simhash_sites_event_locked(slcf->zone, &ev);

        if (ctx->verifying && ctx->status != NGX_HTTP_SIMHASH_SKIPPED) {
            ngx_http_simhash_sites_outcome_locked(slcf->zone, &key,
                                                  &ctx->predicted, what);
        }

        return;
    }

    ngx_http_simhash_sites_event(slcf->zone, &ev, r->connection->log);

    if (ctx->verifying && ctx->status != NGX_HTTP_SIMHASH_SKIPPED) {
        ngx_http_simhash_sites_outcome(slcf->zone, &key, &ctx->predicted,
                                       what, r->connection->log);
    }
}
