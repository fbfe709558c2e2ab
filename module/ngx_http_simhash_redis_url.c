
/*
 * The Redis URL of simhash_replicate, read into the connection's
 * configuration (ngx_http_simhash_redis_conf_t): the address to connect
 * to, the credentials and the database, and the URL as the log and the
 * statistics show it (no password).
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash_redis.h"


static ngx_str_t ngx_http_simhash_redis_url_shown(ngx_conf_t *cf,
    ngx_str_t *url);
static char *ngx_http_simhash_redis_url_unix(ngx_conf_t *cf,
    ngx_http_simhash_redis_conf_t *redis, ngx_str_t *shown, u_char *p,
    u_char *end);
static char *ngx_http_simhash_redis_url_tcp(ngx_conf_t *cf,
    ngx_http_simhash_redis_conf_t *redis, ngx_str_t *shown, u_char *p,
    u_char *end);
static ngx_int_t ngx_http_simhash_redis_unescape(ngx_conf_t *cf,
    ngx_str_t *s);


/*
 * redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 * unix:/PATH, or unix://[[USER]:PASSWORD@]/PATH[?db=DB]
 *
 * HOST is resolved now, like an upstream server's name: the worker
 * connects to the address, never waits for a resolver.
 */

char *
ngx_http_simhash_redis_url(ngx_conf_t *cf,
    ngx_http_simhash_redis_conf_t *redis, ngx_str_t *url)
{
    u_char                         *p, *last, *at, *colon, *end, *db;
    ngx_int_t                       n;
    ngx_str_t                       auth, shown;

    last = url->data + url->len;
    db = NULL;

    shown = ngx_http_simhash_redis_url_shown(cf, url);
    if (shown.data == NULL) {
        return NGX_CONF_ERROR;
    }

    if (redis->tls_ok && url->len > 9
        && ngx_strncmp(url->data, "rediss://", 9) == 0)
    {
        /* TLS: the caller (cluster=) gives its CA and certificate */
        redis->tls = 1;
        p = url->data + 9;
        end = ngx_strlchr(p, last, '/');
        if (end == NULL) {
            end = last;

        } else {
            db = end + 1;
        }

    } else if (url->len > 8 && ngx_strncmp(url->data, "redis://", 8) == 0) {
        p = url->data + 8;
        end = ngx_strlchr(p, last, '/');
        if (end == NULL) {
            end = last;

        } else {
            db = end + 1;
        }

    } else if (url->len > 5 && ngx_strncmp(url->data, "unix:", 5) == 0) {
        p = url->data + 5;

        if (last - p >= 2 && p[0] == '/' && p[1] == '/') {
            p += 2;
        }

        end = ngx_strlchr(p, last, '?');
        if (end == NULL) {
            end = last;

        } else if (last - end > 4 && ngx_strncmp(end, "?db=", 4) == 0) {
            db = end + 4;

        } else {
            goto invalid;
        }

    } else if (url->len >= 9 && ngx_strncmp(url->data, "rediss://", 9) == 0) {
        /* the connection (ngx_http_simhash_redis.c) speaks plain TCP */
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid Redis URL \"%V\": TLS (rediss://) is "
                           "not supported here (only by cluster=); reach "
                           "Redis over a private network or a tunnel "
                           "(stunnel, WireGuard, spiped)", &shown);
        return NGX_CONF_ERROR;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid Redis URL \"%V\": redis://HOST[:PORT] "
                           "or unix:/PATH", &shown);
        return NGX_CONF_ERROR;
    }

    /* the credentials, up to the last "@" of the authority */

    at = NULL;

    for (colon = p; colon < end; colon++) {
        if (*colon == '@') {
            at = colon;
        }
    }

    if (at) {
        auth.data = p;
        auth.len = at - p;
        p = at + 1;

        colon = ngx_strlchr(auth.data, auth.data + auth.len, ':');
        if (colon == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid Redis URL \"%V\": the credentials "
                               "are USER:PASSWORD@, or :PASSWORD@ for a "
                               "password alone", &shown);
            return NGX_CONF_ERROR;
        }

        redis->user.data = auth.data;
        redis->user.len = colon - auth.data;
        redis->password.data = colon + 1;
        redis->password.len = auth.data + auth.len - colon - 1;

        if (redis->password.len == 0
            || ngx_http_simhash_redis_unescape(cf, &redis->user) != NGX_OK
            || ngx_http_simhash_redis_unescape(cf, &redis->password) != NGX_OK)
        {
            goto invalid;
        }
    }

    if (db) {
        n = ngx_atoi(db, last - db);
        if (n == NGX_ERROR || n > 65535) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid Redis URL \"%V\": the database is "
                               "a number", &shown);
            return NGX_CONF_ERROR;
        }

        redis->db = (ngx_uint_t) n;
    }

    if (url->data[0] == 'u') {
        return ngx_http_simhash_redis_url_unix(cf, redis, &shown, p, end);
    }

    return ngx_http_simhash_redis_url_tcp(cf, redis, &shown, p, end);

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid Redis URL \"%V\"",
                       &shown);
    return NGX_CONF_ERROR;
}


/* The URL as error messages show it: credentials hidden. */

static ngx_str_t
ngx_http_simhash_redis_url_shown(ngx_conf_t *cf, ngx_str_t *url)
{
    u_char     *p, *last, *at;
    ngx_str_t   shown;

    last = url->data + url->len;
    shown = *url;
    at = NULL;

    for (p = url->data; p < last && *p != '?'; p++) {
        if (*p == '@') {
            at = p;
        }
    }

    p = ngx_strlchr(url->data, last, ':');

    if (p) {
        p++;

        while (p < last && *p == '/' && p - url->data < 8) {
            p++;    /* "//" of redis:// and unix:// */
        }
    }

    if (at && p && p <= at) {
        shown.len = (p - url->data) + sizeof("***") - 1 + (last - at);
        shown.data = ngx_pnalloc(cf->pool, shown.len);
        if (shown.data == NULL) {
            return shown;
        }

        ngx_sprintf(shown.data, "%*s***%*s", (size_t) (p - url->data),
                    url->data, (size_t) (last - at), at);
    }

    return shown;
}


/* unix:/PATH: the socket's path, and the URL as the statistics show it. */

static char *
ngx_http_simhash_redis_url_unix(ngx_conf_t *cf,
    ngx_http_simhash_redis_conf_t *redis, ngx_str_t *shown, u_char *p,
    u_char *end)
{
    u_char              *last;
    ngx_str_t            path;
    struct sockaddr_un  *saun;

    path.data = p;
    path.len = end - p;

    if (path.len < 2 || path.data[0] != '/'
        || path.len >= sizeof(((struct sockaddr_un *) 0)->sun_path))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid Redis URL \"%V\": the socket's "
                           "path is absolute, and short", shown);
        return NGX_CONF_ERROR;
    }

    saun = ngx_pcalloc(cf->pool, sizeof(struct sockaddr_un));
    if (saun == NULL) {
        return NGX_CONF_ERROR;
    }

    saun->sun_family = AF_UNIX;
    ngx_memcpy(saun->sun_path, path.data, path.len);

    redis->sockaddr = (struct sockaddr *) saun;
    redis->socklen = sizeof(struct sockaddr_un);

    redis->url.len = sizeof("unix:") - 1 + path.len;
    redis->url.data = ngx_pnalloc(cf->pool, redis->url.len + NGX_INT_T_LEN
                                            + sizeof("?db="));
    if (redis->url.data == NULL) {
        return NGX_CONF_ERROR;
    }

    last = ngx_sprintf(redis->url.data, "unix:%V", &path);

    if (redis->db) {
        last = ngx_sprintf(last, "?db=%ui", redis->db);
    }

    redis->url.len = last - redis->url.data;

    return NGX_CONF_OK;
}


/* HOST[:PORT]: resolved now (the first address is used), and the URL as
 * the statistics show it. */

static char *
ngx_http_simhash_redis_url_tcp(ngx_conf_t *cf,
    ngx_http_simhash_redis_conf_t *redis, ngx_str_t *shown, u_char *p,
    u_char *end)
{
    u_char     *last;
    ngx_url_t   u;

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url.data = p;
    u.url.len = end - p;
    u.default_port = 6379;

    if (u.url.len == 0 || ngx_parse_url(cf->pool, &u) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid Redis URL \"%V\": %s", shown,
                           u.err ? u.err : "no host");
        return NGX_CONF_ERROR;
    }

    if (u.naddrs == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid Redis URL \"%V\": no address", shown);
        return NGX_CONF_ERROR;
    }

    if (redis->tls) {
        /* the name its certificate must give (cluster_tls_name= may
         * name another) */
        redis->tls_name.len = u.host.len;
        redis->tls_name.data = ngx_pnalloc(cf->pool, u.host.len + 1);
        if (redis->tls_name.data == NULL) {
            return NGX_CONF_ERROR;
        }

        (void) ngx_cpystrn(redis->tls_name.data, u.host.data, u.host.len + 1);
    }

    redis->sockaddr = u.addrs[0].sockaddr;
    redis->socklen = u.addrs[0].socklen;

    redis->url.data = ngx_pnalloc(cf->pool, sizeof("rediss://") - 1
                                            + u.url.len + NGX_INT_T_LEN + 2);
    if (redis->url.data == NULL) {
        return NGX_CONF_ERROR;
    }

    last = ngx_sprintf(redis->url.data, redis->tls ? "rediss://%V"
                                                   : "redis://%V", &u.url);

    if (redis->db) {
        last = ngx_sprintf(last, "/%ui", redis->db);
    }

    redis->url.len = last - redis->url.data;

    return NGX_CONF_OK;
}


/* %XX in the credentials, NUL-terminated in a copy; a NUL inside is
 * refused. */

static ngx_int_t
ngx_http_simhash_redis_unescape(ngx_conf_t *cf, ngx_str_t *s)
{
    u_char  *dst, *src;

    if (s->len == 0) {
        return NGX_OK;
    }

    dst = ngx_pnalloc(cf->pool, s->len + 1);
    if (dst == NULL) {
        return NGX_ERROR;
    }

    src = s->data;
    s->data = dst;

    ngx_unescape_uri(&dst, &src, s->len, 0);

    s->len = dst - s->data;
    *dst = '\0';

    return ngx_strlen(s->data) == s->len ? NGX_OK : NGX_ERROR;
}
