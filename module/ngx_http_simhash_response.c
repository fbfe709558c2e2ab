
/*
 * ngx_http_simhash_response.c -- stage 4 of a response's path: the
 * verdict acted on.  The body filter (ngx_http_simhash_filter.c) calls
 * ngx_http_simhash_respond with the decision's verdict
 * (ngx_http_simhash_verdict_t, made by ngx_http_simhash_decide.c): it sets
 * the X-Simhash-* headers (set_headers, with what simhash_reveal leaves
 * out hidden first: reveal) and makes the response what the crawler gets,
 * the held body or, for a dropped duplicate, an empty body with the
 * configured status; the filter sends it.  The precontent phase
 * (ngx_http_simhash_predict.c) sets the same headers on a predicted
 * answer, and the variables apply the same reveal.
 *
 * The path goes one way: this file calls nothing of the filter or of the
 * decision (tools/check-tree.sh checks it).
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


/*
 * The verdict acted on: the X-Simhash-* headers set and the response made
 * what the crawler gets, its header ready to go and *out the body to send
 * after it.  A dropped duplicate becomes the drop status with an empty
 * body (its other headers stay); otherwise the held body goes as it was
 * received, tagged.  Sending is the filter's (it owns the filters after
 * ours): this only says what to send.
 */

ngx_int_t
ngx_http_simhash_respond(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_chain_t **out)
{
    ngx_buf_t                    *b;
    ngx_chain_t                  *cl;
    ngx_http_simhash_loc_conf_t  *slcf;

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->verdict.drop) {
        slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

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

    } else if (r->headers_out.content_length_n < 0) {
        /* the body as received: its length is known now */
        r->headers_out.content_length_n = ctx->held_bytes;
    }

    cl = ctx->held;
    ctx->held = NULL;

    if (cl == NULL) {
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

    } else {
        b = ctx->buf;
    }

    b->last_buf = 1;
    *out = cl;

    return NGX_OK;
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

    if (slcf->reveal_scope == NULL || ctx->verdict.duplicate_of.len == 0) {
        return NGX_OK;
    }

    if (ngx_http_complex_value(r, slcf->reveal_scope, &scope) != NGX_OK) {
        return NGX_ERROR;
    }

    if (scope.len == 0 || scope.len > ctx->verdict.duplicate_of.len
        || ngx_strncmp(ctx->verdict.duplicate_of.data, scope.data,
                       scope.len)
           != 0)
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
    u_char      buf[NGX_INT64_LEN + 1], *p;
    ngx_str_t  *status;

    if (ngx_http_simhash_reveal(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->action == NGX_HTTP_SIMHASH_ACT_NONE) {
        ctx->action = ctx->verifying ? NGX_HTTP_SIMHASH_ACT_VERIFIED
                                     : NGX_HTTP_SIMHASH_ACT_PASSED;
    }

    if (ctx->verdict.has_hash
        && ctx->verdict.status != NGX_HTTP_SIMHASH_SKIPPED)
    {
        p = ngx_sprintf(buf, "%016uxL", ctx->verdict.hash);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_hash, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    status = &ngx_http_simhash_status_names[ctx->verdict.status];

    if (!ctx->hide_status
        && ngx_http_simhash_add_header(r, &ngx_http_simhash_h_status,
                                       status->data, status->len)
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

    if (ctx->verdict.duplicate_of.len > NGX_HTTP_SIMHASH_HEADER_MAX) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: the key of the duplicate is %uz bytes, "
                      "over %d: no X-Simhash-Duplicate-Of header",
                      ctx->verdict.duplicate_of.len,
                      NGX_HTTP_SIMHASH_HEADER_MAX);

    } else if (ctx->verdict.duplicate_of.len) {
        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_dup,
                                        ctx->verdict.duplicate_of.data,
                                        ctx->verdict.duplicate_of.len)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ctx->verdict.has_distance) {
        p = ngx_sprintf(buf, "%ui", ctx->verdict.distance);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_distance, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        p = ngx_http_simhash_score(buf, ctx->verdict.score);

        if (ngx_http_simhash_add_header(r, &ngx_http_simhash_h_score, buf,
                                        p - buf)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

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
