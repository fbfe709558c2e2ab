
/*
 * ngx_http_simhash_filter.c -- stages 1 and 2 of a response's path: the
 * header and body filters, and the one place that sends.
 *
 *   1. ngx_http_simhash_header_filter decides whether the response is ours
 *      (200, main request, not HEAD, type in simhash_types).  If it is, the
 *      header is held back (like the xslt filter does); a response that we
 *      already know we cannot fingerprint (unsupported Content-Encoding,
 *      Content-Length over simhash_max_body) is tagged "skipped" and passes.
 *
 *   2. ngx_http_simhash_body_filter copies every buffer into our own
 *      buffers for sending later (the upstream's buffers are released at
 *      once, as the image filter does).  Over simhash_max_body, or past the
 *      worker's simhash_max_held, we give up: header, held bytes and the
 *      rest are sent unmodified ("skipped").  At the last buffer
 *      (ngx_http_simhash_finish):
 *        judge    the held body goes to the extractor in one go
 *                 (feed_held: sh_doc_feed, inflating gzip/deflate first),
 *                 unless its digest shows an identical re-fetch, and the
 *                 fingerprint to the decision (ngx_http_simhash_decide.c),
 *                 which makes the verdict (ctx->verdict);
 *        send     the decision concludes it (dropped or passed, counted),
 *                 the response (ngx_http_simhash_response.c) sets the
 *                 headers and says what to send, and this file sends it
 *                 to the filters after ours.
 *      A pending verdict (the decision awaits another machine) holds the
 *      response, phase WAIT, until nginx's writer runs the filters again
 *      and finds it decided (resume).
 *
 * The path goes one way: this file calls the decision and the response;
 * they call nothing of it, and the response nothing of the decision
 * (tools/check-tree.sh checks it).  The next-filter pointers are this
 * file's alone.
 *
 * The request's pool cleanup (ngx_http_simhash_cleanup) gives the held
 * bytes back to the worker's budget and frees the extractor and zlib.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash_request.h"


#define NGX_HTTP_SIMHASH_HOLD_CHUNK (32 * 1024)
#define NGX_HTTP_SIMHASH_ZBUF_SIZE  (16 * 1024)

/* r->connection->buffered while a verdict is pending: the image filter's
 * bit (the low four are nginx's own filters'); the image filter never
 * holds a response of ours, an HTML page */
#define NGX_HTTP_SIMHASH_BUFFERED   0x08


static void ngx_http_simhash_strip_headers(ngx_http_request_t *r);
static ngx_int_t ngx_http_simhash_encoding(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_finish(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_resume(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
static ngx_int_t ngx_http_simhash_send(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_judge(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_feed_held(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
static ngx_int_t ngx_http_simhash_feed(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    u_char *data, size_t len);
static ngx_int_t ngx_http_simhash_inflate(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    u_char *data, size_t len);
static ngx_int_t ngx_http_simhash_hold(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, u_char *data, size_t len);
static ngx_int_t ngx_http_simhash_give_up(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_skip_e reason,
    ngx_chain_t *rest, ngx_uint_t last);
static void ngx_http_simhash_cleanup(void *data);


ngx_http_output_header_filter_pt  ngx_http_simhash_next_header_filter;
ngx_http_output_body_filter_pt    ngx_http_simhash_next_body_filter;


/* 1. The header: is this response ours? */

ngx_int_t
ngx_http_simhash_header_filter(ngx_http_request_t *r)
{
    u_char                       *charset;
    ngx_int_t                     rc;
    ngx_pool_cleanup_t           *cln;
    ngx_http_simhash_ctx_t       *ctx;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);
    ctx = ngx_http_get_module_ctx(r, ngx_http_simhash_module);

    /* a ctx made early holds a prediction only: the response is ours */

    if (slcf->zone == NULL || (ctx != NULL && !ctx->early)) {
        return ngx_http_simhash_next_header_filter(r);
    }

    /* only this module says X-Simhash-*: the crawler trusts these */

    ngx_http_simhash_strip_headers(r);

    if (r != r->main
        || r->headers_out.status != NGX_HTTP_OK
        || (r->method & NGX_HTTP_HEAD)
        || r->header_only
        || ngx_http_test_content_type(r, &slcf->types) == NULL)
    {
        ngx_http_simhash_resolve_hint(r);

        if (ctx) {
            /* a predicted request's other response: only the prediction */
            ctx->early = 0;
            ctx->phase = NGX_HTTP_SIMHASH_NONE;

            if (slcf->reveal != NGX_HTTP_SIMHASH_REVEAL_OFF
                && ngx_http_simhash_add_header(r,
                                        &ngx_http_simhash_h_predicted,
                                        ctx->predicted.data,
                                        ctx->predicted.len)
                   != NGX_OK)
            {
                return NGX_ERROR;
            }
        }

        return ngx_http_simhash_next_header_filter(r);
    }

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_simhash_ctx_t));
        if (ctx == NULL) {
            return NGX_ERROR;
        }

        ngx_http_set_ctx(r, ctx, ngx_http_simhash_module);
    }

    ctx->early = 0;
    ctx->cfg = slcf->cfg;
    ctx->last = &ctx->held;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_simhash_cleanup;
    cln->data = ctx;

    /* what we know from the header alone: pass such responses at once */

    rc = ngx_http_simhash_encoding(r, ctx);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc == NGX_DECLINED) {
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ENCODING);
        goto pass;
    }

    if (r->headers_out.content_length_n > (off_t) slcf->max_body) {
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_TOO_LARGE);
        goto pass;
    }

    /* the extractor, with the charset of the upstream's Content-Type */

    charset = NULL;

    if (r->headers_out.charset.len && r->headers_out.charset.len < 64) {
        charset = ngx_pnalloc(r->pool, r->headers_out.charset.len + 1);
        if (charset == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(charset, r->headers_out.charset.data,
                   r->headers_out.charset.len);
        charset[r->headers_out.charset.len] = '\0';
    }

    ctx->charset = charset;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: holding response, length:%O charset:\"%V\"",
                   r->headers_out.content_length_n, &r->headers_out.charset);

    /* the header waits for the body; see ngx_http_simhash_finish() */

    r->main_filter_need_in_memory = 1;
    r->allow_ranges = 0;

    /*
     * Unlike the image filter we do not set a bit in
     * r->connection->buffered while holding the body.  Every normal end of
     * a response reaches us as a last_buf (the upstream sends it before it
     * finalizes with 0).  The only finalization without one is an upstream
     * error after the header: nginx then sends a flush and finalizes with
     * NGX_OK, and a buffered bit would keep the client waiting for
     * send_timeout instead of closing the connection at once.  (A pending
     * verdict sets it, with the body whole: ngx_http_simhash_finish().)
     */

    return NGX_OK;

pass:

    ctx->phase = NGX_HTTP_SIMHASH_PASS;

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_simhash_next_header_filter(r);
}


/*
 * Remove every X-Simhash-* header the upstream (or anything before this
 * filter) put in the response: a crawler acts on these headers, so only
 * this module may set them, whatever an origin sends.
 */

static void
ngx_http_simhash_strip_headers(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_out.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash != 0
            && h[i].key.len >= sizeof("X-Simhash") - 1
            && ngx_strncasecmp(h[i].key.data, (u_char *) "X-Simhash",
                               sizeof("X-Simhash") - 1) == 0)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "simhash: upstream header \"%V\" removed",
                           &h[i].key);
            h[i].hash = 0;
        }
    }
}


/*
 * Content-Encoding: none or identity -> NGX_OK; gzip, x-gzip, deflate ->
 * NGX_OK with ctx->zlib set (we inflate a copy for the extractor; the
 * client still receives the original bytes); anything else -> NGX_DECLINED.
 */

static ngx_int_t
ngx_http_simhash_encoding(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    int         window;
    ngx_str_t  *enc;

    if (r->headers_out.content_encoding == NULL
        || r->headers_out.content_encoding->hash == 0)
    {
        return NGX_OK;
    }

    enc = &r->headers_out.content_encoding->value;

    if (enc->len == 0
        || (enc->len == 8 && ngx_strncasecmp(enc->data, (u_char *) "identity",
                                             8) == 0))
    {
        return NGX_OK;
    }

    if ((enc->len == 4 && ngx_strncasecmp(enc->data, (u_char *) "gzip", 4)
                          == 0)
        || (enc->len == 6 && ngx_strncasecmp(enc->data, (u_char *) "x-gzip",
                                             6) == 0))
    {
        window = MAX_WBITS + 16;

    } else if (enc->len == 7
               && ngx_strncasecmp(enc->data, (u_char *) "deflate", 7) == 0)
    {
        window = MAX_WBITS;
        ctx->zdeflate = 1;

    } else {
        return NGX_DECLINED;
    }

    ctx->zbuf = ngx_palloc(r->pool, NGX_HTTP_SIMHASH_ZBUF_SIZE);
    if (ctx->zbuf == NULL) {
        return NGX_ERROR;
    }

    if (inflateInit2(&ctx->zstream, window) != Z_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: inflateInit2() failed");
        return NGX_ERROR;
    }

    ctx->zinit = 1;
    ctx->zlib = 1;

    /* inflateEnd() runs in ngx_http_simhash_cleanup() */

    return NGX_OK;
}


/* 2. The body: feed the extractor, hold the bytes. */

ngx_int_t
ngx_http_simhash_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    size_t                        size;
    ngx_int_t                     rc;
    ngx_buf_t                    *b;
    ngx_chain_t                  *cl;
    ngx_http_simhash_ctx_t       *ctx;
    ngx_http_simhash_loc_conf_t  *slcf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_simhash_module);

    if (ctx != NULL && ctx->phase == NGX_HTTP_SIMHASH_WAIT) {
        /* the writer, again: is the verdict in? */
        return ngx_http_simhash_resume(r, ctx);
    }

    if (in == NULL || ctx == NULL || ctx->phase != NGX_HTTP_SIMHASH_READ) {
        return ngx_http_simhash_next_body_filter(r, in);
    }

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (!ngx_buf_special(b) && !ngx_buf_in_memory(b)) {
            /* main_filter_need_in_memory should prevent this */
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "simhash: body buffer not in memory");
            return ngx_http_simhash_give_up(r, ctx,
                                            NGX_HTTP_SIMHASH_SKIP_ERROR, cl, 0);
        }

        size = ngx_buf_in_memory(b) ? (size_t) (b->last - b->pos) : 0;

        if (size) {
            if (ctx->held_bytes + size > slcf->max_body) {
                return ngx_http_simhash_give_up(r, ctx,
                                      NGX_HTTP_SIMHASH_SKIP_TOO_LARGE, cl, 0);
            }

            rc = ngx_http_simhash_hold(r, ctx, b->pos, size);

            if (rc == NGX_DECLINED) {
                /* the worker holds simhash_max_held already */
                return ngx_http_simhash_give_up(r, ctx,
                                      NGX_HTTP_SIMHASH_SKIP_TOO_LARGE, cl, 0);
            }

            if (rc != NGX_OK) {
                return NGX_ERROR;
            }

            /* consumed: the upstream may reuse the buffer */

            b->pos = b->last;

            if (b->in_file) {
                b->file_pos = b->file_last;
            }
        }

        if (b->last_buf) {
            return ngx_http_simhash_finish(r, ctx);
        }
    }

    return NGX_OK;
}


/*
 * 2. The last buffer: the verdict (judge, asking the decision), then the
 * response made from it (ngx_http_simhash_response.c), then sent.  A
 * verdict that is pending holds the whole response until the decision
 * clears it (resume); a body that cannot be read passes as it came.
 */

static ngx_int_t
ngx_http_simhash_finish(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    ngx_int_t                     rc;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    rc = ngx_http_simhash_judge(r, ctx, slcf);

    switch (rc) {

    case NGX_OK:
        return ngx_http_simhash_send(r, ctx, slcf);

    case NGX_DECLINED:
        return ngx_http_simhash_give_up(r, ctx, ctx->verdict.reason, NULL, 1);

    case NGX_AGAIN:
        /*
         * Pending: nothing goes out, and the buffered bit keeps nginx from
         * finalizing the request when the upstream is done (it sets
         * ngx_http_writer, which runs the filters again, to resume).  The
         * body is whole here, so the bit cannot keep a client waiting for
         * a body that will not come (see the header filter).
         */
        ctx->phase = NGX_HTTP_SIMHASH_WAIT;
        r->connection->buffered |= NGX_HTTP_SIMHASH_BUFFERED;
        return NGX_OK;

    default:
        return NGX_ERROR;
    }
}


/*
 * A pending verdict: nginx's writer runs the output filters with nothing
 * new each time the connection's write event fires, and the decision
 * posts that event once its answer is in (ngx_http_simhash_decide()).
 * Until the verdict is no longer pending, nothing goes out.
 */

static ngx_int_t
ngx_http_simhash_resume(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx)
{
    ngx_http_simhash_loc_conf_t  *slcf;

    if (ctx->verdict.pending) {
        return NGX_OK;
    }

    r->connection->buffered &= ~NGX_HTTP_SIMHASH_BUFFERED;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    return ngx_http_simhash_send(r, ctx, slcf);
}


/*
 * The verdict concluded (ngx_http_simhash_decide.c: dropped or passed,
 * counted), the response made from it (ngx_http_simhash_response.c), then
 * sent here: this file alone calls the filters after ours.
 */

static ngx_int_t
ngx_http_simhash_send(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    ngx_int_t     rc;
    ngx_chain_t  *out;

    ctx->phase = NGX_HTTP_SIMHASH_DONE;

    ngx_http_simhash_conclude(r, ctx, slcf);

    if (ngx_http_simhash_respond(r, ctx, &out) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_simhash_next_header_filter(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    return ngx_http_simhash_next_body_filter(r, out);
}


/*
 * The verdict for the whole held body: an identical re-fetch is answered
 * from the body's digest; otherwise the body is fed to the extractor and
 * fingerprinted, and the zone decides (ngx_http_simhash_decide.c).
 * NGX_OK: ctx->verdict is made; NGX_AGAIN: it is pending; NGX_DECLINED:
 * the body could not be read (ctx->verdict.reason), give up; NGX_ERROR.
 */

static ngx_int_t
ngx_http_simhash_judge(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    ngx_int_t    rc;
    sh_result_t  res;

    rc = ngx_http_simhash_identical(r, ctx, slcf);

    if (rc == NGX_OK) {
        return NGX_OK;
    }

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    rc = ngx_http_simhash_feed_held(r, ctx, slcf);

    if (rc != NGX_OK) {
        /* NGX_DECLINED: skipped, with ctx->verdict.reason */
        return rc;
    }

    if (ctx->zlib && !ctx->zend) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: compressed body ends before its stream does");
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ENCODING);
        return NGX_OK;
    }

    ngx_memzero(&res, sizeof(sh_result_t));

    if (sh_doc_finish(ctx->doc, &res) != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: sh_doc_finish() failed");
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_ERROR);
        return NGX_OK;
    }

    if (res.status == SH_STATUS_OK && sh_doc_whole(ctx->doc)) {
        /* its own content is links: a hub (src/sh_block.h) */
        ngx_http_simhash_count(slcf->zone, whole_text, 1);
    }

    if (res.status == SH_STATUS_OK && res.short_content) {
        ngx_http_simhash_count(slcf->zone, short_content, 1);
    }

    sh_doc_free(ctx->doc);
    ctx->doc = NULL;

    ngx_http_simhash_count(slcf->zone, bytes, ctx->fed);

    switch (res.status) {

    case SH_STATUS_OK:
        /* NGX_OK, NGX_AGAIN (pending) or NGX_ERROR */
        rc = ngx_http_simhash_decide(r, ctx, slcf, &res);
        return (rc == NGX_OK || rc == NGX_AGAIN) ? rc : NGX_ERROR;

    case SH_STATUS_TOO_SHORT:
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_TOO_SHORT);
        break;

    case SH_STATUS_TOO_LARGE:
        /* one construct over SH_PENDING_MAX: as a body over max_body */
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_TOO_LARGE);
        break;

    case SH_STATUS_TOO_COMPLEX:
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "simhash: \"%V\" skipped: its markup is over its "
                      "work budget (%s), %O bytes",
                      &ctx->key, res.why, (off_t) res.nbytes);
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_BUDGET);
        break;

    default: /* SH_STATUS_BINARY */
        ngx_http_simhash_skip(r, ctx, NGX_HTTP_SIMHASH_SKIP_BINARY);
        break;
    }

    return NGX_OK;
}


/*
 * The whole held body to the extractor, in one go at its end: a worker with
 * many responses arriving at once then parses each page at once instead of
 * interleaving them piece by piece, which keeps the parser's and the
 * feature table's memory warm (about 20% less CPU per page with 16
 * responses in flight per worker, measured when pages were fed in 64 KB
 * batches as they arrived), and an identical re-fetch is known before any
 * parsing (ngx_http_simhash_identical()).
 */

static ngx_int_t
ngx_http_simhash_feed_held(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf)
{
    size_t        n;
    ngx_int_t     rc;
    ngx_chain_t  *cl;

    ctx->doc = sh_doc_new(ctx->cfg, (char *) ctx->charset);
    if (ctx->doc == NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: sh_doc_new() failed");
        ctx->verdict.reason = NGX_HTTP_SIMHASH_SKIP_ERROR;
        return NGX_DECLINED;
    }

    for (cl = ctx->held; cl; cl = cl->next) {
        n = cl->buf->last - cl->buf->pos;

        if (n) {
            rc = ngx_http_simhash_feed(r, ctx, slcf, cl->buf->pos, n);
            if (rc != NGX_OK) {
                return rc;
            }
        }
    }

    return NGX_OK;
}


/* Bytes of the body (as sent) to the extractor, decoded if need be. */

static ngx_int_t
ngx_http_simhash_feed(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, u_char *data, size_t len)
{
    if (ctx->zlib) {
        return ngx_http_simhash_inflate(r, ctx, slcf, data, len);
    }

    if (sh_doc_feed(ctx->doc, data, len) != 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: sh_doc_feed() failed");
        ctx->verdict.reason = NGX_HTTP_SIMHASH_SKIP_ERROR;
        return NGX_DECLINED;
    }

    ctx->fed += len;

    return NGX_OK;
}


/*
 * gzip (several members allowed) or deflate (zlib-wrapped as the standard
 * says, raw as some servers send it).  The decoded size counts against
 * simhash_max_body too, so a page is skipped or not whatever its encoding,
 * and a small "zip bomb" cannot make us fingerprint gigabytes.
 */

static ngx_int_t
ngx_http_simhash_inflate(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_loc_conf_t *slcf, u_char *data, size_t len)
{
    int        rc;
    size_t     n;
    z_stream  *zs;

    zs = &ctx->zstream;

    if (ctx->zend && len) {
        /* bytes after the end of the stream: gzip allows another member */
        if (inflateReset(zs) != Z_OK) {
            goto failed;
        }
        ctx->zend = 0;
    }

    zs->next_in = data;
    zs->avail_in = len;

    while (zs->avail_in) {
        zs->next_out = ctx->zbuf;
        zs->avail_out = NGX_HTTP_SIMHASH_ZBUF_SIZE;

        rc = inflate(zs, Z_NO_FLUSH);

        if (rc == Z_DATA_ERROR && ctx->zdeflate && !ctx->zraw_tried
            && zs->total_out == 0 && ctx->fed == 0)
        {
            /* "deflate" without the zlib wrapper: start over, raw */
            ctx->zraw_tried = 1;

            if (inflateReset2(zs, -MAX_WBITS) != Z_OK) {
                goto failed;
            }

            zs->next_in = data;
            zs->avail_in = len;
            continue;
        }

        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
            goto failed;
        }

        n = NGX_HTTP_SIMHASH_ZBUF_SIZE - zs->avail_out;

        if (n) {
            if (ctx->fed + n > slcf->max_body) {
                ctx->verdict.reason = NGX_HTTP_SIMHASH_SKIP_TOO_LARGE;
                return NGX_DECLINED;
            }

            if (sh_doc_feed(ctx->doc, ctx->zbuf, n) != 0) {
                ctx->verdict.reason = NGX_HTTP_SIMHASH_SKIP_ERROR;
                return NGX_DECLINED;
            }

            ctx->fed += n;
        }

        if (rc == Z_STREAM_END) {
            ctx->zend = 1;

            if (zs->avail_in == 0) {
                break;
            }

            if (inflateReset(zs) != Z_OK) {
                goto failed;
            }

            ctx->zend = 0;
            continue;
        }

        if (rc == Z_BUF_ERROR && n == 0) {
            break;
        }
    }

    return NGX_OK;

failed:

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "simhash: cannot inflate the body: %s",
                  zs->msg ? zs->msg : "inflate() failed");

    ctx->verdict.reason = NGX_HTTP_SIMHASH_SKIP_ENCODING;
    return NGX_DECLINED;
}


/*
 * Copy into our buffers; the first one sized by Content-Length if known.
 * Held bodies stay until their request ends, however slowly its client
 * reads (nginx alone would spill them to temporary files): a worker holds
 * simhash_max_held bytes of them at most, beyond which NGX_DECLINED
 * before anything is copied, and the response passes unfingerprinted.
 */

static size_t  ngx_http_simhash_held_now;     /* this worker's, charged */

static ngx_int_t
ngx_http_simhash_hold(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    u_char *data, size_t len)
{
    size_t                         n, size, avail;
    ngx_buf_t                     *b;
    ngx_chain_t                   *cl;
    ngx_http_simhash_main_conf_t  *smcf;

    /* at most one buffer is allocated per call: what it will be */

    avail = ctx->buf ? (size_t) (ctx->buf->end - ctx->buf->last) : 0;

    if (len > avail) {
        size = ngx_max(len - avail, NGX_HTTP_SIMHASH_HOLD_CHUNK);

        if (ctx->held == NULL && r->headers_out.content_length_n > 0
            && (size_t) r->headers_out.content_length_n >= len)
        {
            size = (size_t) r->headers_out.content_length_n;
        }

        smcf = ngx_http_get_module_main_conf(r, ngx_http_simhash_module);

        if (ngx_http_simhash_held_now + size > smcf->max_held) {
            return NGX_DECLINED;
        }
    }

    while (len) {
        b = ctx->buf;

        if (b == NULL || b->last == b->end) {
            size = NGX_HTTP_SIMHASH_HOLD_CHUNK;

            if (ctx->held == NULL
                && r->headers_out.content_length_n > 0
                && (size_t) r->headers_out.content_length_n >= len)
            {
                size = (size_t) r->headers_out.content_length_n;

            } else if (len > size) {
                size = len;
            }

            b = ngx_create_temp_buf(r->pool, size);
            if (b == NULL) {
                return NGX_ERROR;
            }

            ctx->charged += size;
            ngx_http_simhash_held_now += size;

            cl = ngx_alloc_chain_link(r->pool);
            if (cl == NULL) {
                return NGX_ERROR;
            }

            cl->buf = b;
            cl->next = NULL;
            *ctx->last = cl;
            ctx->last = &cl->next;
            ctx->buf = b;
        }

        n = ngx_min(len, (size_t) (b->end - b->last));
        b->last = ngx_cpymem(b->last, data, n);
        data += n;
        len -= n;
        ctx->held_bytes += n;
    }

    return NGX_OK;
}


/*
 * Cannot fingerprint this one (too large, bad encoding, ...): tag it
 * "skipped" and send the header, what we hold and `rest` unmodified;
 * `last`: the last buffer is already held.
 */

static ngx_int_t
ngx_http_simhash_give_up(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_skip_e reason, ngx_chain_t *rest, ngx_uint_t last)
{
    ngx_int_t     rc;
    ngx_chain_t  *out;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "simhash: skipped (%V) after %uz bytes",
                   &ngx_http_simhash_skip_names[reason], ctx->held_bytes);

    ngx_http_simhash_skip(r, ctx, reason);
    ctx->phase = NGX_HTTP_SIMHASH_PASS;

    if (ngx_http_simhash_set_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    rc = ngx_http_simhash_next_header_filter(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out = ctx->held;
    ctx->held = NULL;

    if (last) {
        if (out) {
            ctx->buf->last_buf = 1;

        } else {
            return ngx_http_send_special(r, NGX_HTTP_LAST);
        }
    }

    if (ngx_chain_add_copy(r->pool, &out, rest) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_simhash_next_body_filter(r, out);
}


/* Client abort, upstream error or normal end: free what the library holds. */

static void
ngx_http_simhash_cleanup(void *data)
{
    ngx_http_simhash_ctx_t  *ctx = data;

    ngx_http_simhash_held_now -= ctx->charged;
    ctx->charged = 0;

    if (ctx->doc) {
        sh_doc_free(ctx->doc);
        ctx->doc = NULL;
    }

    if (ctx->zinit) {
        (void) inflateEnd(&ctx->zstream);
        ctx->zinit = 0;
    }
}
