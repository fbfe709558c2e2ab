
/*
 * simhash_cluster_query: a lookup of the zone's Redis Cluster by hand, for
 * an operator or a test (ngx_http_simhash_cluster.h says what a lookup
 * does); it uses the client's interface only.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_cluster.h"


/* ---- simhash_cluster_query: a lookup by hand ---- */

/*
 * GET ?zone=NAME&fp=HEX[&h=N] answers, once the lookup has ended, with
 * its outcome as JSON: {"status":"found","id":HEX,"fp":HEX,"distance":N,
 * "key":URL (if the cluster has its key text),"buckets":N,"forged":N,
 * "us":N}, {"status":"new",...}, {"status":"incomplete","cause":WHY,...};
 * buckets: the table's buckets the lookup read (PSM's probes, the page's
 * own bucket included).
 * The request is held meanwhile (the worker goes on with other events):
 * the decision's own use of a lookup will hold a response the same way.
 */

typedef struct {
    ngx_http_request_t                 *r;
    ngx_http_simhash_cluster_lookup_t  *lk;
} ngx_http_simhash_cluster_query_t;


static ngx_int_t
ngx_http_simhash_cluster_query_send(ngx_http_request_t *r, ngx_str_t *body,
    ngx_uint_t status)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    r->headers_out.status = status;
    r->headers_out.content_length_n = body->len;
    ngx_str_set(&r->headers_out.content_type, "application/json");

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = body->data;
    b->last = body->data + body->len;
    b->memory = 1;
    b->last_buf = 1;
    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static void
ngx_http_simhash_cluster_query_done(ngx_http_simhash_cluster_lookup_t *lk)
{
    ngx_http_simhash_cluster_query_t  *q = lk->data;
    ngx_http_request_t                *r = q->r;
    static const char                 *names[] = {
        "found", "new", "incomplete"
    };
    ngx_str_t                          body;
    u_char                            *p;

    q->lk = NULL;

    p = ngx_pnalloc(r->pool, 256 + lk->key.len
                             + ngx_escape_json(NULL, lk->key.data,
                                               lk->key.len));
    if (p == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    body.data = p;
    p = ngx_sprintf(p, "{\"status\":\"%s\"", names[lk->status]);

    if (lk->status == NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE) {
        p = ngx_sprintf(p, ",\"cause\":\"%s\"",
                        ngx_http_simhash_cluster_causes[lk->cause]);

    } else if (lk->status == NGX_HTTP_SIMHASH_CLUSTER_FOUND) {
        p = ngx_sprintf(p, ",\"id\":\"%016uxL\",\"fp\":\"%016uxL\","
                        "\"distance\":%ui,\"digest\":\"%016uxL\"",
                        lk->rec.kh, lk->rec.fp, (ngx_uint_t) lk->distance,
                        lk->rec.digest);

        if (lk->key.len) {
            p = ngx_cpymem(p, ",\"key\":\"", 8);
            p = (u_char *) ngx_escape_json(p, lk->key.data, lk->key.len);
            *p++ = '"';
        }
    }

    p = ngx_sprintf(p, ",\"buckets\":%uz,\"forged\":%uD,\"us\":%uL}\n",
                    lk->buckets, lk->forged,
                    ngx_http_simhash_cluster_usec() - lk->started);
    body.len = p - body.data;

    ngx_http_finalize_request(r,
        ngx_http_simhash_cluster_query_send(r, &body, NGX_HTTP_OK));
}


static void
ngx_http_simhash_cluster_query_cleanup(void *data)
{
    ngx_http_simhash_cluster_query_t  *q = data;

    /* the request went first (the client closed): no answer is wanted */
    if (q->lk) {
        ngx_http_simhash_cluster_cancel(q->lk);
    }
}


static ngx_int_t
ngx_http_simhash_cluster_query_handler(ngx_http_request_t *r)
{
    u_char                            *p;
    uint64_t                           fp;
    ngx_int_t                          rc, h;
    ngx_str_t                          zname, v, msg;
    ngx_pool_cleanup_t                *cln;
    ngx_http_simhash_zone_t           *zone;
    ngx_http_simhash_cluster_t        *cl;
    ngx_http_simhash_main_conf_t      *smcf;
    ngx_http_simhash_cluster_query_t  *q;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    smcf = ngx_http_get_module_main_conf(r, ngx_http_simhash_module);

    if (ngx_http_arg(r, (u_char *) "zone", 4, &zname) != NGX_OK
        || ngx_http_arg(r, (u_char *) "fp", 2, &v) != NGX_OK
        || v.len == 0 || v.len > 16)
    {
        ngx_str_set(&msg, "{\"error\":\"?zone=NAME&fp=HEX[&h=N]\"}\n");
        return ngx_http_simhash_cluster_query_send(r, &msg,
                                                   NGX_HTTP_BAD_REQUEST);
    }

    fp = 0;
    for (p = v.data; p < v.data + v.len; p++) {
        u_char  c = (u_char) (*p | 0x20);

        if (!((*p >= '0' && *p <= '9') || (c >= 'a' && c <= 'f'))) {
            ngx_str_set(&msg, "{\"error\":\"fp is 1 to 16 hex digits\"}\n");
            return ngx_http_simhash_cluster_query_send(r, &msg,
                                                       NGX_HTTP_BAD_REQUEST);
        }
        fp = (fp << 4) | (uint64_t) (*p <= '9' ? *p - '0' : c - 'a' + 10);
    }

    h = SH_H_DEFAULT;
    if (ngx_http_arg(r, (u_char *) "h", 1, &v) == NGX_OK) {
        h = ngx_atoi(v.data, v.len);
        if (h == NGX_ERROR || h > SH_H_MAX) {
            ngx_str_set(&msg, "{\"error\":\"h is 0 to 7\"}\n");
            return ngx_http_simhash_cluster_query_send(r, &msg,
                                                       NGX_HTTP_BAD_REQUEST);
        }
    }

    zone = ngx_http_simhash_zone_find(smcf, &zname);
    cl = zone ? ngx_http_simhash_cluster_of(zone) : NULL;

    if (cl == NULL) {
        ngx_str_set(&msg, "{\"error\":\"no such zone with cluster=\"}\n");
        return ngx_http_simhash_cluster_query_send(r, &msg,
                                                   NGX_HTTP_NOT_FOUND);
    }

    cln = ngx_pool_cleanup_add(r->pool,
                               sizeof(ngx_http_simhash_cluster_query_t));
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    q = cln->data;
    q->r = r;
    /* a fingerprint typed by hand has no weights: ranked by position */
    q->lk = ngx_http_simhash_cluster_lookup(cl, fp, NULL, (unsigned) h,
                                            0.95f, NULL,
                                            ngx_http_simhash_cluster_query_done,
                                            q);
    if (q->lk == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_simhash_cluster_query_cleanup;

    r->main->count++;

    return NGX_DONE;
}


/* simhash_cluster_query (a location's handler) */

char *
ngx_http_simhash_cluster_query_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_simhash_cluster_query_handler;

    return NGX_CONF_OK;
}
