
/*
 * The console: simhash_stats ?format=html serves one self-contained page
 * (module/console.html, compiled in as a string by tools/console-header.sh)
 * that reads the same location's JSON every few seconds and draws it: the
 * rates of the last minutes, the sites that waste the crawl, the learned
 * URL rules, the zone, the snapshot and replication, and a "why?" box
 * (?explain=).  Nothing is fetched from elsewhere: its Content-Security-
 * Policy allows requests to this server only, so that a proxy with no
 * internet shows it whole, and a host name from a crawled URL can never
 * run as script (the page writes every text with textContent too): the
 * one script that runs is the page's own, named by its SHA-256, which
 * tools/console-header.sh computes at build time.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"

#include "ngx_http_simhash_console_html.h"


static ngx_int_t ngx_http_simhash_add_header(ngx_http_request_t *r,
    char *key, char *value);


ngx_int_t
ngx_http_simhash_console_handler(ngx_http_request_t *r)
{
    ngx_buf_t  *b;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = (u_char *) ngx_http_simhash_console_html;
    b->last = b->pos + sizeof(ngx_http_simhash_console_html) - 1;
    b->memory = 1;

    if (ngx_http_simhash_add_header(r, "Content-Security-Policy",
                                    "default-src 'none'; "
                                    "script-src "
                                    NGX_HTTP_SIMHASH_CONSOLE_SCRIPT "; "
                                    "style-src 'unsafe-inline'; "
                                    "img-src data:; connect-src 'self'; "
                                    "form-action 'none'; "
                                    "frame-ancestors 'none'")
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_simhash_send_buf(r, b, "text/html; charset=utf-8");
}


/*
 * A whole answer of this moment: never cached, never "not modified"; and
 * never sniffed, so that JSON or Prometheus text that carries a crawled
 * host's or rule's text is never taken for a page of this origin.
 */

ngx_int_t
ngx_http_simhash_send_buf(ngx_http_request_t *r, ngx_buf_t *b, char *type)
{
    ngx_int_t    rc;
    ngx_chain_t  out;

    r->headers_out.content_type.len = ngx_strlen(type);
    r->headers_out.content_type.data = (u_char *) type;
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    if (ngx_http_simhash_add_header(r, "Cache-Control", "no-store")
        != NGX_OK
        || ngx_http_simhash_add_header(r, "X-Content-Type-Options",
                                       "nosniff")
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->disable_not_modified = 1;
    r->allow_ranges = 0;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static ngx_int_t
ngx_http_simhash_add_header(ngx_http_request_t *r, char *key, char *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.len = ngx_strlen(key);
    h->key.data = (u_char *) key;
    h->value.len = ngx_strlen(value);
    h->value.data = (u_char *) value;
    h->lowcase_key = NULL;
#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}


/*
 * The locations that use a zone (listed by ngx_http_simhash_directives.c
 * as each is merged), in the JSON the page reads: "locations", each
 * with what it does, tag or drop (its code and keys=), and its DUST.
 */

size_t
ngx_http_simhash_uses_size(ngx_http_simhash_zone_t *zone)
{
    size_t                   size;
    ngx_uint_t               i;
    ngx_http_simhash_use_t  *uses;

    if (zone->uses == NULL) {
        return sizeof(",\"locations\":[]");
    }

    size = sizeof(",\"locations\":[]");
    uses = zone->uses->elts;

    for (i = 0; i < zone->uses->nelts; i++) {
        size += sizeof("{\"location\":\"\",\"action\":\"drop\",\"code\":,"
                       "\"keys\":\"path\",\"dust\":\"learn\"},")
                + 3 * uses[i].location.len + NGX_INT_T_LEN;
    }

    return size;
}


u_char *
ngx_http_simhash_uses_json(u_char *p, ngx_http_simhash_zone_t *zone)
{
    ngx_uint_t               i;
    ngx_http_simhash_use_t  *u;

    p = ngx_cpymem(p, ",\"locations\":[", sizeof(",\"locations\":[") - 1);

    for (i = 0; zone->uses && i < zone->uses->nelts; i++) {
        u = (ngx_http_simhash_use_t *) zone->uses->elts + i;

        p = ngx_sprintf(p, "%s{\"location\":\"", i ? "," : "");
        p = ngx_http_simhash_text_escape(p, u->location.data,
                                         u->location.len);

        if (u->drop) {
            p = ngx_sprintf(p, "\",\"action\":\"drop\",\"code\":%ui,"
                            "\"keys\":\"%s\"", u->drop_code, u->keys);

        } else {
            p = ngx_sprintf(p, "\",\"action\":\"tag\"");
        }

        p = ngx_sprintf(p, ",\"dust\":\"%s\"}", u->dust);
    }

    *p++ = ']';

    return p;
}
