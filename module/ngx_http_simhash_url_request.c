
/*
 * ngx_http_simhash_url_request.c -- a request of an absolute URL, as a
 * forward proxy receives it ("GET http://host:port/path?args HTTP/1.0"),
 * made for evaluating a location's simhash_key on a URL nobody sent: "why?"
 * asked with ?url= (ngx_http_simhash_explain.c).
 *
 * The request is made of the fields nginx documents for modules only: the
 * request line, uri, args, exten, unparsed_uri, headers_in.server, the
 * method, the configurations, the connection and pool, fresh variables and
 * module contexts.  It is not a copy of another request with nginx's
 * parser state reset field by field: those fields are nginx's own and
 * change between versions (1.25 removed port_start and port_end), and a
 * copy would carry the asking request's cached variables and contexts.
 *
 * The URL is split and normalised as nginx does it for such a request line
 * (checked against nginx 1.22, 1.26 and 1.30 by t/explain-url.t, which
 * compares the key of a real absolute-form request with the key made
 * here):
 *   - $host: the authority without its ":port", lowercased, without a
 *     trailing dot; the module's own $simhash_host and
 *     $simhash_request_scheme read the request line, as for any request;
 *   - $request_uri: what follows the authority, "/" when that is empty;
 *   - $uri: its path percent-decoded, "." and ".." segments resolved
 *     (".." above the root refused, as nginx answers 400), repeated
 *     slashes merged where merge_slashes is on; '?' and '#' end it;
 *   - $args: between the first '?' and a '#'.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"


static ngx_int_t ngx_http_simhash_url_split(ngx_str_t *url,
    ngx_str_t *host, ngx_str_t *target);
static ngx_int_t ngx_http_simhash_url_path(ngx_pool_t *pool,
    u_char *p, u_char *last, ngx_uint_t merge_slashes, ngx_str_t *uri);


/*
 * NGX_OK with *out the request; NGX_DECLINED for what is no absolute URL
 * a request line could carry (400); NGX_ERROR.
 */

ngx_int_t
ngx_http_simhash_url_request(ngx_http_request_t *r, ngx_str_t *url,
    ngx_http_request_t **out)
{
    u_char                     *p, *q, *last;
    ngx_str_t                   host, target;
    ngx_http_request_t         *fr;
    ngx_http_core_srv_conf_t   *cscf;
    ngx_http_core_main_conf_t  *cmcf;

    if (ngx_http_simhash_url_split(url, &host, &target) != NGX_OK) {
        return NGX_DECLINED;
    }

    fr = ngx_pcalloc(r->pool, sizeof(ngx_http_request_t));
    if (fr == NULL) {
        return NGX_ERROR;
    }

    cmcf = ngx_http_get_module_main_conf(r, ngx_http_core_module);
    cscf = ngx_http_get_module_srv_conf(r, ngx_http_core_module);

    fr->signature = NGX_HTTP_MODULE;
    fr->connection = r->connection;
    fr->pool = r->pool;
    fr->main = fr;
    fr->main_conf = r->main_conf;
    fr->srv_conf = r->srv_conf;
    fr->loc_conf = r->loc_conf;
    fr->start_sec = r->start_sec;
    fr->start_msec = r->start_msec;

    fr->ctx = ngx_pcalloc(r->pool, sizeof(void *) * ngx_http_max_module);
    fr->variables = ngx_pcalloc(r->pool, cmcf->variables.nelts
                                         * sizeof(ngx_http_variable_value_t));
    if (fr->ctx == NULL || fr->variables == NULL) {
        return NGX_ERROR;
    }

    if (ngx_list_init(&fr->headers_in.headers, r->pool, 1,
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    fr->method = NGX_HTTP_GET;
    ngx_str_set(&fr->method_name, "GET");
    fr->http_version = NGX_HTTP_VERSION_10;
    ngx_str_set(&fr->http_protocol, "HTTP/1.0");

    /* the request line: what $simhash_request_scheme and $simhash_host
     * read the scheme and the port from */

    fr->request_line.len = sizeof("GET  HTTP/1.0") - 1 + url->len;
    fr->request_line.data = ngx_pnalloc(r->pool, fr->request_line.len);
    if (fr->request_line.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(fr->request_line.data, "GET ", 4);
    p = ngx_cpymem(p, url->data, url->len);
    ngx_memcpy(p, " HTTP/1.0", sizeof(" HTTP/1.0") - 1);

    /* $host */

    fr->headers_in.server.data = ngx_pnalloc(r->pool, host.len);
    if (fr->headers_in.server.data == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(fr->headers_in.server.data, host.data, host.len);
    fr->headers_in.server.len = host.len;

    /* $request_uri, $uri, $args, $exten */

    if (target.len == 0) {
        ngx_str_set(&fr->unparsed_uri, "/");

    } else {
        fr->unparsed_uri = target;
    }

    fr->valid_unparsed_uri = 1;

    last = target.data + target.len;
    p = target.data;

    while (p < last && *p != '?' && *p != '#') {
        p++;
    }

    if (p < last && *p == '?') {
        q = ngx_strlchr(p + 1, last, '#');
        fr->args.data = p + 1;
        fr->args.len = (q ? q : last) - (p + 1);
    }

    if (ngx_http_simhash_url_path(r->pool, target.data, p,
                                  cscf->merge_slashes, &fr->uri)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    for (p = fr->uri.data + fr->uri.len; p > fr->uri.data; p--) {
        if (p[-1] == '/') {
            break;
        }

        if (p[-1] == '.') {
            fr->exten.data = p;
            fr->exten.len = fr->uri.data + fr->uri.len - p;
            break;
        }
    }

    *out = fr;

    return NGX_OK;
}


/*
 * The scheme and the authority of "scheme://authority..." in [p, last):
 * RFC 3986's scheme (a letter, then letters, digits, '+', '-', '.'), then
 * the authority up to '/', '?', '#', a space or the end.  NGX_DECLINED,
 * both left as they are, when [p, last) does not start so.  The URL "why?"
 * is asked about and the request line of an absolute-form request
 * ($simhash_host, $simhash_request_scheme) are read by this one function,
 * so that the two make one key of one URL.
 */

ngx_int_t
ngx_http_simhash_url_parts(u_char *p, u_char *last, ngx_str_t *scheme,
    ngx_str_t *authority)
{
    u_char  *s;

    for (s = p; p < last; p++) {
        if (!(((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')
              || (p > s && ((*p >= '0' && *p <= '9')
                            || *p == '+' || *p == '-' || *p == '.'))))
        {
            break;
        }
    }

    if (p == s || last - p < 3 || ngx_strncmp(p, "://", 3) != 0) {
        return NGX_DECLINED;
    }

    scheme->data = s;
    scheme->len = p - s;

    for (s = p + 3, p = s; p < last; p++) {
        if (*p == '/' || *p == '?' || *p == '#' || *p == ' ') {
            break;
        }
    }

    authority->data = s;
    authority->len = p - s;

    return NGX_OK;
}


/*
 * "scheme://authority[target]": the host of the authority (without a
 * ":port" and a trailing dot) and the target (what follows, "" for none).
 * A request line holds no control byte, space or DEL; the scheme is
 * RFC 3986's; the host is a name of letters, digits, '-', '_' and '.', or
 * a bracketed IPv6 address; the port is digits.
 */

static ngx_int_t
ngx_http_simhash_url_split(ngx_str_t *url, ngx_str_t *host,
    ngx_str_t *target)
{
    u_char     *p, *last, *end, ch;
    ngx_str_t   scheme;

    last = url->data + url->len;

    for (p = url->data; p < last; p++) {
        if (*p <= ' ' || *p == 0x7f) {
            return NGX_DECLINED;
        }
    }

    if (ngx_http_simhash_url_parts(url->data, last, &scheme, host)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    end = host->data + host->len;

    target->data = end;
    target->len = last - end;

    /* the port: digits after the last ':' (after a ']' for IPv6) */

    for (p = end; p > host->data && p[-1] >= '0' && p[-1] <= '9'; p--) {
        /* void */
    }

    if (p > host->data && p[-1] == ':') {
        if (end - p == 0 || end - p > 5) {
            return NGX_DECLINED;
        }

        end = p - 1;
    }

    host->len = end - host->data;

    if (host->len > 1 && host->data[host->len - 1] == '.') {
        host->len--;
    }

    if (host->len == 0 || host->len > 255) {
        return NGX_DECLINED;
    }

    if (host->data[0] == '[') {
        if (host->data[host->len - 1] != ']') {
            return NGX_DECLINED;
        }

        for (p = host->data + 1; p < host->data + host->len - 1; p++) {
            ch = *p | 0x20;
            if (!((*p >= '0' && *p <= '9') || (ch >= 'a' && ch <= 'f')
                  || *p == ':' || *p == '.'))
            {
                return NGX_DECLINED;
            }
        }

        return NGX_OK;
    }

    for (p = host->data; p < host->data + host->len; p++) {
        ch = *p | 0x20;
        if (!((*p >= '0' && *p <= '9') || (ch >= 'a' && ch <= 'z')
              || *p == '-' || *p == '_' || *p == '.'))
        {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/*
 * $uri of the path [p, last): percent-decoded ("%zz" and "%00" refused),
 * then "."
 * and ".." segments resolved and, with merge_slashes, runs of '/' made
 * one, as nginx resolves them after decoding ("/a/%2e%2e/b" is "/b").
 * An empty path is "/".
 */

static ngx_int_t
ngx_http_simhash_url_path(ngx_pool_t *pool, u_char *p, u_char *last,
    ngx_uint_t merge_slashes, ngx_str_t *uri)
{
    u_char  *d, *seg, *s, *e, c, hi, lo;

    d = ngx_pnalloc(pool, (last - p) + 1);
    if (d == NULL) {
        return NGX_ERROR;
    }

    uri->data = d;

    if (p == last) {
        *d = '/';
        uri->len = 1;
        return NGX_OK;
    }

    /* decode into d */

    for (s = p, e = d; s < last; s++) {
        c = *s;

        if (c == '%') {
            if (last - s < 3) {
                return NGX_DECLINED;
            }

            hi = (u_char) (s[1] | 0x20);
            lo = (u_char) (s[2] | 0x20);

            hi = (hi >= '0' && hi <= '9') ? hi - '0'
                 : (hi >= 'a' && hi <= 'f') ? hi - 'a' + 10 : 0xff;
            lo = (lo >= '0' && lo <= '9') ? lo - '0'
                 : (lo >= 'a' && lo <= 'f') ? lo - 'a' + 10 : 0xff;

            if (hi == 0xff || lo == 0xff) {
                return NGX_DECLINED;
            }

            c = (u_char) (hi << 4 | lo);
            s += 2;

            if (c == '\0') {
                return NGX_DECLINED;
            }
        }

        *e++ = c;
    }

    last = e;

    /* resolve segments in place: e writes, s reads a segment at a time */

    e = d;
    s = d;

    while (s < last) {

        /* s is at a '/' */

        seg = s + 1;
        for (s = seg; s < last && *s != '/'; s++) {
            /* void */
        }

        if (s - seg == 1 && seg[0] == '.') {
            if (s == last) {
                *e++ = '/';
            }
            continue;
        }

        if (s - seg == 2 && seg[0] == '.' && seg[1] == '.') {
            if (e == d) {
                return NGX_DECLINED;
            }

            while (e > d && *--e != '/') {
                /* void */
            }

            if (s == last) {
                *e++ = '/';
            }
            continue;
        }

        if (seg == s && merge_slashes && s < last) {
            continue;
        }

        *e++ = '/';
        e = ngx_cpymem(e, seg, s - seg);
    }

    if (e == d) {
        *e++ = '/';
    }

    uri->len = e - d;

    return NGX_OK;
}
