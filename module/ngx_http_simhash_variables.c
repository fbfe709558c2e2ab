
/*
 * ngx_http_simhash_variables.c -- what the module found, for the access
 * log and the configuration: $simhash, $simhash_status,
 * $simhash_duplicate_of, $simhash_distance, $simhash_score,
 * $simhash_predicted and $simhash_action read the request's context (with
 * what simhash_reveal hides left out); $simhash_host is part of the
 * default key, with $simhash_request_scheme.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash_request.h"


static ngx_int_t ngx_http_simhash_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_simhash_host_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_simhash_request_scheme_variable(
    ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data);
static ngx_uint_t ngx_http_simhash_port(u_char *p, u_char *last);
static void ngx_http_simhash_request_target(ngx_http_request_t *r,
    ngx_str_t *scheme, ngx_str_t *authority);


static ngx_str_t  ngx_http_simhash_action_names[] = {
    ngx_null_string,
    ngx_string("passed"),
    ngx_string("dropped"),
    ngx_string("predicted"),
    ngx_string("verified")
};


/*
 * $simhash, $simhash_status, $simhash_duplicate_of, $simhash_distance,
 * $simhash_score: what the module found; $simhash_host: part of the
 * default key
 */

enum {
    NGX_HTTP_SIMHASH_VAR_HASH = 0,
    NGX_HTTP_SIMHASH_VAR_STATUS,
    NGX_HTTP_SIMHASH_VAR_DUP,
    NGX_HTTP_SIMHASH_VAR_DISTANCE,
    NGX_HTTP_SIMHASH_VAR_SCORE,
    NGX_HTTP_SIMHASH_VAR_PREDICTED,
    NGX_HTTP_SIMHASH_VAR_ACTION
};


static ngx_http_variable_t  ngx_http_simhash_vars[] = {

    { ngx_string("simhash"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_HASH, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_status"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_STATUS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_duplicate_of"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_DUP, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_distance"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_DISTANCE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_score"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_SCORE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_predicted"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_PREDICTED, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_action"), NULL, ngx_http_simhash_variable,
      NGX_HTTP_SIMHASH_VAR_ACTION, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("simhash_host"), NULL, ngx_http_simhash_host_variable,
      0, 0, 0 },

    { ngx_string("simhash_request_scheme"), NULL,
      ngx_http_simhash_request_scheme_variable, 0, 0, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_simhash_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_simhash_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                  *p;
    ngx_http_simhash_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_simhash_module);

    if (data == NGX_HTTP_SIMHASH_VAR_PREDICTED) {
        /* known before the response: the rules, "" when none */
        v->len = ctx ? ctx->predicted.len : 0;
        v->data = ctx ? ctx->predicted.data : (u_char *) "";
        v->valid = 1;
        v->no_cacheable = 1;
        v->not_found = 0;
        return NGX_OK;
    }

    if (ctx == NULL || ctx->phase == NGX_HTTP_SIMHASH_READ
        || ctx->phase == NGX_HTTP_SIMHASH_WAIT
        || ctx->phase == NGX_HTTP_SIMHASH_NONE)
    {
        v->not_found = 1;
        return NGX_OK;
    }

    /* the variables tell no more than the headers */

    if (ngx_http_simhash_reveal(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    switch (data) {

    case NGX_HTTP_SIMHASH_VAR_HASH:
        if (!ctx->verdict.has_hash
            || ctx->verdict.status == NGX_HTTP_SIMHASH_SKIPPED)
        {
            v->not_found = 1;
            return NGX_OK;
        }

        p = ngx_pnalloc(r->pool, 16);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "%016uxL", ctx->verdict.hash) - p;
        v->data = p;
        break;

    case NGX_HTTP_SIMHASH_VAR_STATUS:
        if (ctx->hide_status) {
            v->not_found = 1;
            return NGX_OK;
        }

        v->len = ngx_http_simhash_status_names[ctx->verdict.status].len;
        v->data = ngx_http_simhash_status_names[ctx->verdict.status].data;
        break;

    case NGX_HTTP_SIMHASH_VAR_ACTION:

        /* a drop or a prediction tells the status: hidden with it */

        if (ctx->hide_status || ctx->action == NGX_HTTP_SIMHASH_ACT_NONE) {
            v->not_found = 1;
            return NGX_OK;
        }

        v->len = ngx_http_simhash_action_names[ctx->action].len;
        v->data = ngx_http_simhash_action_names[ctx->action].data;
        break;

    case NGX_HTTP_SIMHASH_VAR_DUP:
        if (ctx->verdict.duplicate_of.len == 0 || ctx->hide_original) {
            v->not_found = 1;
            return NGX_OK;
        }

        v->len = ctx->verdict.duplicate_of.len;
        v->data = ctx->verdict.duplicate_of.data;
        break;

    default: /* NGX_HTTP_SIMHASH_VAR_DISTANCE, _SCORE */
        if (!ctx->verdict.has_distance || ctx->hide_original) {
            v->not_found = 1;
            return NGX_OK;
        }

        p = ngx_pnalloc(r->pool, NGX_INT_T_LEN + 6);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (data == NGX_HTTP_SIMHASH_VAR_SCORE) {
            v->len = ngx_http_simhash_score(p, ctx->verdict.score) - p;

        } else {
            v->len = ngx_sprintf(p, "%ui", ctx->verdict.distance) - p;
        }

        v->data = p;
        break;
    }

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * $simhash_host: $host, followed by ":PORT" when the request names a port
 * other than its scheme's default -- the authority of the URL the client
 * asked for, so that the default key tells http://h:8080/a from
 * http://h:8081/a (two origins on one host).  The port comes from where
 * $host comes from: the request line of an absolute-URI request (what a
 * forward proxy receives), else the Host header (a reverse proxy).
 *
 * Not $http_host: the Host header as the client wrote it (any case, with
 * or without a default port; a forward proxy's client may even name
 * another host there), nor $server_port, the port this proxy listens on.
 * The host part is nginx's validated, lowercased $host and the port part
 * digits only, so the value is as safe in a response header as $host.
 */

static ngx_int_t
ngx_http_simhash_host_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                    *p, *last;
    ngx_str_t                  host, scheme, authority;
    ngx_uint_t                 port, default_port;
    ngx_http_core_srv_conf_t  *cscf;

    /* $host */

    if (r->headers_in.server.len) {
        host = r->headers_in.server;

    } else {
        cscf = ngx_http_get_module_srv_conf(r, ngx_http_core_module);
        host = cscf->server_name;
    }

    port = 0;
    default_port = 80;

#if (NGX_HTTP_SSL)
    if (r->connection->ssl) {
        default_port = 443;
    }
#endif

    ngx_http_simhash_request_target(r, &scheme, &authority);

    if (authority.len) {

        /* "GET http://host:port/path": the port is the digits after the
         * authority's last ':' (nginx's parser allows nothing else there;
         * "[::1]" ends in ']') */

        if (scheme.len == 5
            && ngx_strncasecmp(scheme.data, (u_char *) "https", 5) == 0)
        {
            default_port = 443;

        } else if (scheme.len != 4
                   || ngx_strncasecmp(scheme.data, (u_char *) "http", 4) != 0)
        {
            default_port = 0;
        }

        last = authority.data + authority.len;

        for (p = last; p > authority.data; p--) {
            if (p[-1] < '0' || p[-1] > '9') {
                break;
            }
        }

        if (p > authority.data && p[-1] == ':') {
            port = ngx_http_simhash_port(p, last);
        }

    } else if (r->headers_in.server.len && r->headers_in.host) {

        /* "Host: host:port", "[::1]:port": digits after the last ':' */

        last = r->headers_in.host->value.data
               + r->headers_in.host->value.len;

        for (p = last; p > r->headers_in.host->value.data; p--) {
            if (p[-1] < '0' || p[-1] > '9') {
                break;
            }
        }

        if (p > r->headers_in.host->value.data && p[-1] == ':') {
            port = ngx_http_simhash_port(p, last);
        }
    }

    if (port == 0 || port == default_port) {
        v->len = host.len;
        v->data = host.data;

    } else {
        p = ngx_pnalloc(r->pool, host.len + sizeof(":65535") - 1);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "%V:%ui", &host, port) - p;
        v->data = p;
    }

    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * $simhash_request_scheme: the scheme of an absolute-form request line
 * ("GET https://example.org/ HTTP/1.1" -> "https"), lowercased; else
 * $scheme, the scheme of the connection to this proxy.  nginx's $scheme
 * is always the latter, so a forward proxy that passes to
 * $scheme://$http_host fetches an https URL over plain http.
 */

static ngx_int_t
ngx_http_simhash_request_scheme_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char     *p;
    ngx_str_t   scheme, authority;

    ngx_http_simhash_request_target(r, &scheme, &authority);

    if (scheme.len) {
        p = ngx_pnalloc(r->pool, scheme.len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_strlow(p, scheme.data, scheme.len);

        v->data = p;
        v->len = scheme.len;

    } else {
#if (NGX_HTTP_SSL)
        if (r->connection->ssl) {
            v->data = (u_char *) "https";
            v->len = 5;

        } else
#endif
        {
            v->data = (u_char *) "http";
            v->len = 4;
        }
    }

    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


/* The port of the digits [p, last), or 0 when there is none or it is out
 * of range. */

static ngx_uint_t
ngx_http_simhash_port(u_char *p, u_char *last)
{
    ngx_int_t  port;

    if (last - p > 5) {
        return 0;
    }

    port = ngx_atoi(p, last - p);

    return (port < 1 || port > 65535) ? 0 : (ngx_uint_t) port;
}


/*
 * The scheme and the authority ("host:port") of an absolute-form request
 * ("GET http://host:port/path HTTP/1.1", what a forward proxy receives),
 * read from r->request_line; both empty for an origin-form request ("GET
 * /path", a reverse proxy's, and every HTTP/2 and HTTP/3 one).  The
 * request line is what nginx documents for modules; the parser's own
 * pointers into it (schema_start, host_start, port_end...) are not, and
 * have changed between versions.  nginx has validated the line before any
 * variable is read: the scheme is letters, the authority a host nginx
 * accepted and an optional ":digits".  The explanation of a URL
 * (ngx_http_simhash_explain.c) makes its key the same way, from a request
 * line of its own.
 */

static void
ngx_http_simhash_request_target(ngx_http_request_t *r, ngx_str_t *scheme,
    ngx_str_t *authority)
{
    u_char  *p, *last;

    ngx_str_null(scheme);
    ngx_str_null(authority);

    p = r->request_line.data;
    last = p + r->request_line.len;

    if (p == NULL) {
        return;
    }

    /* the method, then one space (nginx's parser allows no other) */

    p = ngx_strlchr(p, last, ' ');
    if (p == NULL) {
        return;
    }

    (void) ngx_http_simhash_url_parts(p + 1, last, scheme, authority);
}
