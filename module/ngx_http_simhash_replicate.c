
/*
 * Replication: a tier of nginx nodes shares one index through a Redis
 * Stream.  Every node keeps a full replica in its own zone, so a lookup stays
 * a probe in local shared memory; what travels is each new or changed
 * document (sh_stream.h: node, key, fingerprint, body digest, time, seed).
 *
 *   publish   every local insert and every changed fingerprint goes, under
 *             the zone's lock, into the zone's outbox: a ring in a shared
 *             memory zone of its own ("NAME:outbox", outbox=SIZE).  Worker
 *             0 sends it with pipelined XADD ... MAXLEN ~ N and takes a
 *             record out only when Redis has acknowledged it, so a record
 *             lost in flight (Redis down, the worker killed) is sent again:
 *             entries are applied idempotently.  An unchanged re-fetch is
 *             not published: nothing another node decides on has changed
 *             (the age order is local, eviction is local), and a recrawl is
 *             mostly unchanged pages.
 *
 *   apply     worker 0 also reads the stream (XREAD BLOCK from the last id
 *             applied, kept in the zone and in every snapshot) on a second
 *             connection, and applies every entry under the zone's lock,
 *             marked as a write like any change (a worker killed in the
 *             middle leaves the zone for the next holder of the lock to
 *             repair): a key the zone lacks is stored, a key it holds takes
 *             the entry's fingerprint if the entry's version is newer
 *             (sh_stream_newer: every node keeps the same version whatever
 *             the order).  The node's own entries since the zone started
 *             are skipped; older ones of its own (published before a restart
 *             that lost them) are applied like any other.
 *
 *   faults    nothing on the request path ever waits for Redis: a request
 *             only appends to the outbox, in memory.  Redis down or slow:
 *             the outbox fills and is sent on reconnect, with backoff; when
 *             it is full, new records are dropped, counted, and logged once
 *             per overflow.  A stream trimmed past the last id applied is a
 *             gap: logged and counted, reading goes on from what is left.
 *
 * Why worker 0 and not a process of its own: nginx respawns a dead worker
 * in the same slot (ngx_worker stays 0), restarts it on reload, and runs
 * its event loop; a module-made process would need all of that again.  The
 * work is small next to parsing pages (a few microseconds per entry), and
 * it never blocks: hiredis's asynchronous API on nginx's event loop
 * (ngx_http_simhash_redis.c).  Without a master (master_process off) the
 * one process does it.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_redis.h"


#define NGX_HTTP_SIMHASH_FLUSH_EVERY    10      /* ms between outbox scans */
#define NGX_HTTP_SIMHASH_INFLIGHT       512     /* XADDs awaiting a reply */
#define NGX_HTTP_SIMHASH_READ_COUNT     1000    /* entries per XREAD */
#define NGX_HTTP_SIMHASH_READ_BLOCK     2000    /* ms an XREAD may wait */
#define NGX_HTTP_SIMHASH_OUTBOX_MIN     (256 * 1024)

#define NGX_HTTP_SIMHASH_WRAP           0xffffffff


/* a record of the outbox; the key follows, padded to 8 bytes */
typedef struct {
    uint32_t                     len;       /* of the key; or WRAP: the rest
                                               of the ring is unused */
    uint32_t                     reserved;
    uint64_t                     hash;
    uint64_t                     digest;
    uint64_t                     time;      /* ms since 1970 */
} ngx_http_simhash_outrec_t;


/* worker 0's side: the two connections and the publisher's state */
struct ngx_http_simhash_link_s {
    ngx_http_simhash_replicate_t  *rp;
    ngx_http_simhash_redis_t       pub;
    ngx_http_simhash_redis_t       sub;
    ngx_event_t                    flush;
    ngx_log_t                     *log;

    uint64_t                       sent;    /* outbox position sent to */
    uint64_t                       inflight[NGX_HTTP_SIMHASH_INFLIGHT];
    ngx_uint_t                     first;   /* the oldest XADD awaiting */
    ngx_uint_t                     n;       /* XADDs awaiting */

    u_char                         maxlen[NGX_INT_T_LEN];
    size_t                         maxlen_len;
    u_char                         block[NGX_INT_T_LEN];
    size_t                         block_len;
    u_char                         count[NGX_INT_T_LEN];
    size_t                         count_len;
    uint32_t                       seed;    /* sh_stream_seed of the zone */

    ngx_uint_t                     refused;      /* since the last line */
    time_t                         refused_logged;
};


ngx_msec_t  ngx_http_simhash_lag_le[NGX_HTTP_SIMHASH_NLAG] = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, NGX_MAX_INT32_VALUE
};


static char *ngx_http_simhash_replicate_url(ngx_conf_t *cf,
    ngx_http_simhash_replicate_t *rp, ngx_str_t *url);
static ngx_int_t ngx_http_simhash_unescape(ngx_conf_t *cf, ngx_str_t *s);
static char *ngx_http_simhash_replicate_param(ngx_conf_t *cf,
    ngx_http_simhash_replicate_t *rp, ngx_str_t *value);
static ngx_int_t ngx_http_simhash_outbox_init(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_simhash_outbox_migrate(ngx_http_simhash_replicate_t *rp,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_ring_put(ngx_http_simhash_outbox_t *ob,
    ngx_http_simhash_outrec_t *r, u_char *key);
static void ngx_http_simhash_pub_ready(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_pub_down(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_flush_handler(ngx_event_t *ev);
static void ngx_http_simhash_flush(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_xadd_reply(redisAsyncContext *ac, void *data,
    void *privdata);
static void ngx_http_simhash_sub_ready(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_sub_down(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_xinfo(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_xinfo_reply(redisAsyncContext *ac, void *data,
    void *privdata);
static void ngx_http_simhash_xread(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_xread_reply(redisAsyncContext *ac, void *data,
    void *privdata);
static void ngx_http_simhash_apply(ngx_http_simhash_link_t *lk,
    sh_stream_id_t *id, redisReply *fields);
static void ngx_http_simhash_lag(ngx_http_simhash_outbox_t *ob,
    uint64_t time);
static void ngx_http_simhash_refused(ngx_http_simhash_link_t *lk,
    redisReply *id, char *why);
static ngx_int_t ngx_http_simhash_reply_id(redisReply *r, sh_stream_id_t *id);
static redisReply *ngx_http_simhash_reply_field(redisReply *r,
    const char *name);
static uint64_t ngx_http_simhash_now(void);


/*
 * simhash_replicate ZONE URL [stream=NAME] [node=ID] [maxlen=N]
 *                   [outbox=SIZE] [timeout=TIME];
 */

char *
ngx_http_simhash_replicate_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_main_conf_t  *smcf = conf;

    char                           *rv;
    ngx_str_t                      *value, name;
    ngx_uint_t                      i;
    ngx_http_simhash_redis_conf_t  *redis;
    ngx_http_simhash_replicate_t   *rp, **rpp;

    value = cf->args->elts;

    rpp = smcf->replicates.elts;

    for (i = 0; i < smcf->replicates.nelts; i++) {
        if (rpp[i]->zone_name.len == value[1].len
            && ngx_strncmp(rpp[i]->zone_name.data, value[1].data,
                           value[1].len) == 0)
        {
            return "is duplicate for this zone";
        }
    }

    rp = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_replicate_t));
    redis = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_redis_conf_t));
    if (rp == NULL || redis == NULL) {
        return NGX_CONF_ERROR;
    }

    rp->redis = redis;
    rp->zone_name = value[1];
    rp->maxlen = 1000000;
    rp->outbox_size = 4 * 1024 * 1024;
    redis->timeout = 3000;
    ngx_http_simhash_where(cf, &rp->where);

    rv = ngx_http_simhash_replicate_url(cf, rp, &value[2]);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    for (i = 3; i < cf->args->nelts; i++) {
        rv = ngx_http_simhash_replicate_param(cf, rp, &value[i]);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    /* the stream is named after the zone; the node after the host */

    if (rp->stream.len == 0) {
        rp->stream.len = sizeof("simhash:") - 1 + rp->zone_name.len;
        rp->stream.data = ngx_pnalloc(cf->pool, rp->stream.len);
        if (rp->stream.data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_sprintf(rp->stream.data, "simhash:%V", &rp->zone_name);
    }

    if (rp->node.len == 0) {
        rp->node = cf->cycle->hostname;

        if (rp->node.len == 0 || rp->node.len > SH_STREAM_NODE_MAX) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "the host name cannot be the node id: "
                               "give \"node=\"");
            return NGX_CONF_ERROR;
        }
    }

    /* the outbox: a shared memory zone of its own, kept across reloads */

    name.len = rp->zone_name.len + sizeof(":outbox") - 1;
    name.data = ngx_pnalloc(cf->pool, name.len);
    if (name.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_sprintf(name.data, "%V:outbox", &rp->zone_name);

    /* the ring is whole pages of the slab pool: room for its bookkeeping */

    rp->shm_zone = ngx_shared_memory_add(cf, &name,
                                         rp->outbox_size
                                         + rp->outbox_size / 64 + 65536,
                                         &ngx_http_simhash_module);
    if (rp->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (rp->shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate zone \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    rp->shm_zone->init = ngx_http_simhash_outbox_init;
    rp->shm_zone->data = rp;

    rpp = ngx_array_push(&smcf->replicates);
    if (rpp == NULL) {
        return NGX_CONF_ERROR;
    }

    *rpp = rp;

    return NGX_CONF_OK;
}


/*
 * redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 * unix:/PATH, or unix://[[USER]:PASSWORD@]/PATH[?db=DB]
 *
 * HOST is resolved now, like an upstream server's name: the worker
 * connects to the address, never waits for a resolver.
 */

static char *
ngx_http_simhash_replicate_url(ngx_conf_t *cf,
    ngx_http_simhash_replicate_t *rp, ngx_str_t *url)
{
    u_char                         *p, *last, *at, *colon, *end, *db, *host;
    size_t                          len;
    ngx_int_t                       n;
    ngx_url_t                       u;
    ngx_str_t                       auth, path;
    ngx_http_simhash_redis_conf_t  *redis;

    redis = rp->redis;
    last = url->data + url->len;
    db = NULL;

    if (url->len > 8 && ngx_strncmp(url->data, "redis://", 8) == 0) {
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

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid Redis URL \"%V\": redis://HOST[:PORT] "
                           "or unix:/PATH", url);
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
                               "password alone", url);
            return NGX_CONF_ERROR;
        }

        redis->user.data = auth.data;
        redis->user.len = colon - auth.data;
        redis->password.data = colon + 1;
        redis->password.len = auth.data + auth.len - colon - 1;

        if (redis->password.len == 0
            || ngx_http_simhash_unescape(cf, &redis->user) != NGX_OK
            || ngx_http_simhash_unescape(cf, &redis->password) != NGX_OK)
        {
            goto invalid;
        }
    }

    if (db) {
        n = ngx_atoi(db, last - db);
        if (n == NGX_ERROR || n > 65535) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid Redis URL \"%V\": the database is "
                               "a number", url);
            return NGX_CONF_ERROR;
        }

        redis->db = (ngx_uint_t) n;
    }

    if (url->data[0] == 'u') {
        path.data = p;
        path.len = end - p;

        if (path.len < 2 || path.data[0] != '/'
            || path.len >= sizeof(((struct sockaddr_un *) 0)->sun_path))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid Redis URL \"%V\": the socket's "
                               "path is absolute, and short", url);
            return NGX_CONF_ERROR;
        }

        redis->path = ngx_pnalloc(cf->pool, path.len + 1);
        if (redis->path == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_cpystrn(redis->path, path.data, path.len + 1);

        rp->url.len = sizeof("unix:") - 1 + path.len;
        rp->url.data = ngx_pnalloc(cf->pool, rp->url.len + NGX_INT_T_LEN
                                             + sizeof("?db="));
        if (rp->url.data == NULL) {
            return NGX_CONF_ERROR;
        }

        last = ngx_sprintf(rp->url.data, "unix:%V", &path);

        if (redis->db) {
            last = ngx_sprintf(last, "?db=%ui", redis->db);
        }

        rp->url.len = last - rp->url.data;
        redis->url = rp->url;

        return NGX_CONF_OK;
    }

    /* HOST[:PORT], resolved now; the first address is used */

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url.data = p;
    u.url.len = end - p;
    u.default_port = 6379;

    if (u.url.len == 0 || ngx_parse_url(cf->pool, &u) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid Redis URL \"%V\": %s", url,
                           u.err ? u.err : "no host");
        return NGX_CONF_ERROR;
    }

    if (u.naddrs == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid Redis URL \"%V\": no address", url);
        return NGX_CONF_ERROR;
    }

    host = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
    if (host == NULL) {
        return NGX_CONF_ERROR;
    }

    switch (u.addrs[0].sockaddr->sa_family) {

#if (NGX_HAVE_INET6)
    case AF_INET6:
        len = ngx_inet_ntop(AF_INET6,
                   &((struct sockaddr_in6 *) u.addrs[0].sockaddr)->sin6_addr,
                   host, NGX_SOCKADDR_STRLEN);
        break;
#endif

    default: /* AF_INET */
        len = ngx_inet_ntop(AF_INET,
                     &((struct sockaddr_in *) u.addrs[0].sockaddr)->sin_addr,
                     host, NGX_SOCKADDR_STRLEN);
    }

    host[len] = '\0';

    redis->host = host;
    redis->port = u.port ? u.port : 6379;

    rp->url.data = ngx_pnalloc(cf->pool, sizeof("redis://") - 1
                                         + u.url.len + NGX_INT_T_LEN + 2);
    if (rp->url.data == NULL) {
        return NGX_CONF_ERROR;
    }

    last = ngx_sprintf(rp->url.data, "redis://%V", &u.url);

    if (redis->db) {
        last = ngx_sprintf(last, "/%ui", redis->db);
    }

    rp->url.len = last - rp->url.data;
    redis->url = rp->url;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid Redis URL \"%V\"",
                       url);
    return NGX_CONF_ERROR;
}


/* %XX in the credentials, NUL-terminated in a copy: hiredis wants C
 * strings with lengths; a NUL inside is refused. */

static ngx_int_t
ngx_http_simhash_unescape(ngx_conf_t *cf, ngx_str_t *s)
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


static char *
ngx_http_simhash_replicate_param(ngx_conf_t *cf,
    ngx_http_simhash_replicate_t *rp, ngx_str_t *value)
{
    u_char                         *p;
    ssize_t                         size;
    ngx_int_t                       n;
    ngx_str_t                       s;
    ngx_msec_t                      ms;
    ngx_http_simhash_redis_conf_t  *redis;

    redis = rp->redis;

    if (ngx_strncmp(value->data, "stream=", 7) == 0) {
        rp->stream.data = value->data + 7;
        rp->stream.len = value->len - 7;

        for (p = rp->stream.data; p < rp->stream.data + rp->stream.len; p++)
        {
            if (*p <= ' ' || *p >= 0x7f) {
                break;
            }
        }

        if (rp->stream.len == 0 || rp->stream.len > 256
            || p < rp->stream.data + rp->stream.len)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid stream \"%V\": 1 to 256 printable "
                               "characters, no spaces", value);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "node=", 5) == 0) {
        rp->node.data = value->data + 5;
        rp->node.len = value->len - 5;

        for (p = rp->node.data; p < rp->node.data + rp->node.len; p++) {
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
                  || (*p >= '0' && *p <= '9')
                  || *p == '_' || *p == '-' || *p == '.' || *p == ':'))
            {
                break;
            }
        }

        if (rp->node.len == 0 || rp->node.len > SH_STREAM_NODE_MAX
            || p < rp->node.data + rp->node.len)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid node \"%V\": 1 to %d letters, "
                               "digits, \"_\", \"-\", \".\", \":\"",
                               value, SH_STREAM_NODE_MAX);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "maxlen=", 7) == 0) {
        n = ngx_atoi(value->data + 7, value->len - 7);

        if (n == NGX_ERROR || n < 1000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid maxlen \"%V\": at least 1000 "
                               "entries", value);
            return NGX_CONF_ERROR;
        }

        rp->maxlen = (ngx_uint_t) n;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "outbox=", 7) == 0) {
        s.data = value->data + 7;
        s.len = value->len - 7;

        size = ngx_parse_size(&s);

        if (size == NGX_ERROR || size < NGX_HTTP_SIMHASH_OUTBOX_MIN) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid outbox size \"%V\": at least 256k",
                               value);
            return NGX_CONF_ERROR;
        }

        rp->outbox_size = ngx_align((size_t) size, 8);
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "timeout=", 8) == 0) {
        s.data = value->data + 8;
        s.len = value->len - 8;

        ms = ngx_parse_time(&s, 0);

        if (ms == (ngx_msec_t) NGX_ERROR || ms < 100 || ms > 600000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid timeout \"%V\": 100ms to 10m",
                               value);
            return NGX_CONF_ERROR;
        }

        redis->timeout = ms;
        return NGX_CONF_OK;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                       value);
    return NGX_CONF_ERROR;
}


/* At the end of http{}, when every zone is known: each one's zone. */

ngx_int_t
ngx_http_simhash_replicate_resolve(ngx_conf_t *cf,
    ngx_http_simhash_main_conf_t *smcf)
{
    ngx_uint_t                      i;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_replicate_t  **rpp;

    rpp = smcf->replicates.elts;

    for (i = 0; i < smcf->replicates.nelts; i++) {
        zone = ngx_http_simhash_zone_find(smcf, &rpp[i]->zone_name);

        if (zone == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "unknown simhash zone \"%V\" in %V",
                          &rpp[i]->zone_name, &rpp[i]->where);
            return NGX_ERROR;
        }

        zone->replicate = rpp[i];
        rpp[i]->zone = zone;
    }

    return NGX_OK;
}


/* The outbox: kept as it is on reload when its size did not change. */

static ngx_int_t
ngx_http_simhash_outbox_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_simhash_replicate_t  *ort = data;

    ngx_slab_pool_t                *shpool;
    ngx_http_simhash_outbox_t      *ob;
    ngx_http_simhash_replicate_t   *rp;

    rp = shm_zone->data;

    if (ort) {
        rp->outbox = ort->outbox;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        rp->outbox = shpool->data;
        return NGX_OK;
    }

    ob = ngx_slab_calloc(shpool, sizeof(ngx_http_simhash_outbox_t));
    if (ob == NULL) {
        return NGX_ERROR;
    }

    ob->size = rp->outbox_size;
    ob->ring = ngx_slab_alloc(shpool, ob->size);

    if (ob->ring == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\": no room for an outbox of %uz "
                      "bytes", &rp->zone_name, ob->size);
        return NGX_ERROR;
    }

    shpool->data = ob;
    rp->outbox = ob;

    if (!ngx_test_config) {
        ngx_http_simhash_outbox_migrate(rp, shm_zone->shm.log);
    }

    return NGX_OK;
}


/*
 * A reload that resized the outbox: what the old one holds and Redis has
 * not acknowledged is taken over, oldest first, as far as it fits.  The
 * old workers may still be writing to it: its zone's lock is held.
 */

static void
ngx_http_simhash_outbox_migrate(ngx_http_simhash_replicate_t *rp,
    ngx_log_t *log)
{
    size_t                          off;
    uint64_t                        pos;
    ngx_uint_t                      i, copied, lost, level;
    ngx_shm_zone_t                 *oshm;
    ngx_list_part_t                *part;
    ngx_http_simhash_outrec_t      *rec;
    ngx_http_simhash_outbox_t      *oob;
    ngx_http_simhash_replicate_t   *ort;

    if (ngx_is_init_cycle(ngx_cycle)) {
        return;
    }

    ort = NULL;
    part = &((ngx_cycle_t *) ngx_cycle)->shared_memory.part;
    oshm = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }
            part = part->next;
            oshm = part->elts;
            i = 0;
        }

        if (oshm[i].tag == &ngx_http_simhash_module
            && oshm[i].shm.name.len == rp->shm_zone->shm.name.len
            && ngx_strncmp(oshm[i].shm.name.data, rp->shm_zone->shm.name.data,
                           rp->shm_zone->shm.name.len) == 0
            && oshm[i].shm.addr != rp->shm_zone->shm.addr
            && oshm[i].data)
        {
            ort = oshm[i].data;
            break;
        }
    }

    if (ort == NULL || ort->outbox == NULL || ort->zone == NULL
        || ort->zone->sh == NULL)
    {
        return;
    }

    oob = ort->outbox;
    copied = 0;
    lost = 0;

    ngx_http_simhash_zone_lock(ort->zone, log);

    for (pos = oob->head; pos < oob->tail; /* void */ ) {
        off = (size_t) (pos % oob->size);
        rec = (ngx_http_simhash_outrec_t *) (oob->ring + off);

        if (rec->len == NGX_HTTP_SIMHASH_WRAP) {
            pos += oob->size - off;
            continue;
        }

        if (ngx_http_simhash_ring_put(rp->outbox, rec,
                                      (u_char *) rec
                                      + sizeof(ngx_http_simhash_outrec_t))
            == NGX_OK)
        {
            copied++;

        } else {
            lost++;
        }

        pos += sizeof(ngx_http_simhash_outrec_t) + ngx_align(rec->len, 8);
    }

    ngx_http_simhash_zone_unlock(ort->zone);

    rp->outbox->dropped += lost;

    level = lost ? NGX_LOG_WARN : NGX_LOG_NOTICE;

    ngx_log_error(level, log, 0,
                  "simhash zone \"%V\": the outbox was resized: %ui "
                  "documents not yet published taken over, %ui did not fit",
                  &rp->zone_name, copied, lost);
}


/*
 * A record of this node's new version into the outbox, under the zone's
 * lock (ngx_http_simhash_zone_changed()).
 */

void
ngx_http_simhash_outbox_push(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    uint32_t ref, uint64_t time, ngx_log_t *log)
{
    ngx_http_simhash_outrec_t   r;
    ngx_http_simhash_outbox_t  *ob;
    ngx_http_simhash_shctx_t   *sh;

    sh = zone->sh;
    ob = zone->replicate->outbox;

    if (ob == NULL || sh_index_get(sh->index, ref, &r.hash) != 0) {
        return;
    }

    r.len = (uint32_t) key->len;
    r.reserved = 0;
    r.digest = sh->digests[ref];
    r.time = time;

    if (ngx_http_simhash_ring_put(ob, &r, key->data) == NGX_OK) {
        return;
    }

    (void) ngx_atomic_fetch_add(&ob->dropped, 1);

    if (ob->overflow++ == 0) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": the outbox is full (is Redis "
                      "down or slow?): new documents are not published "
                      "until it has room", &zone->name);
    }
}


/*
 * A record at the tail; NGX_DECLINED when it does not fit.  The tail moves
 * last: a worker killed in the middle leaves a record that was never there.
 * A record never wraps: when it does not fit before the end of the ring,
 * the rest is marked unused and it goes at the start.
 */

static ngx_int_t
ngx_http_simhash_ring_put(ngx_http_simhash_outbox_t *ob,
    ngx_http_simhash_outrec_t *r, u_char *key)
{
    size_t                      need, off, pad;
    ngx_http_simhash_outrec_t  *rec;

    need = sizeof(ngx_http_simhash_outrec_t) + ngx_align(r->len, 8);
    off = (size_t) (ob->tail % ob->size);
    pad = (ob->size - off < need) ? ob->size - off : 0;

    if (ob->tail - ob->head + pad + need > ob->size) {
        return NGX_DECLINED;
    }

    if (pad) {
        rec = (ngx_http_simhash_outrec_t *) (ob->ring + off);
        rec->len = NGX_HTTP_SIMHASH_WRAP;
        off = 0;
    }

    rec = (ngx_http_simhash_outrec_t *) (ob->ring + off);
    *rec = *r;
    ngx_memcpy((u_char *) rec + sizeof(ngx_http_simhash_outrec_t), key,
               r->len);

    ngx_memory_barrier();

    ob->tail += pad + need;
    ob->records++;

    return NGX_OK;
}


/*
 * A snapshot's META record says where the zone was in a stream (under the
 * lock, at load).  Only the stream this zone follows now counts.
 */

void
ngx_http_simhash_replicate_restore(ngx_http_simhash_zone_t *zone,
    ngx_str_t *stream, ngx_str_t *id, ngx_log_t *log)
{
    sh_stream_id_t             sid;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    if (zone->replicate == NULL) {
        return;
    }

    if (stream->len != zone->replicate->stream.len
        || ngx_strncmp(stream->data, zone->replicate->stream.data,
                       stream->len) != 0)
    {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "simhash zone \"%V\": the snapshot followed the "
                      "stream \"%V\", not \"%V\": reading this one from its "
                      "start", &zone->name, stream, &zone->replicate->stream);
        return;
    }

    if (sh_stream_id_parse(&sid, (char *) id->data, id->len) != 0) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": the snapshot's replicate_id "
                      "\"%V\" is not a stream id: reading the stream from its "
                      "start", &zone->name, id);
        return;
    }

    sh->repl_id = sid;
    sh->repl_stream = ngx_crc32_long(stream->data, stream->len);

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": the snapshot has the stream \"%V\" "
                  "up to %V: replication goes on from there",
                  &zone->name, stream, id);
}


/*
 * Worker 0 (or the only process): the two connections.  Any failure here
 * is logged and leaves the zone unreplicated in this worker: a worker that
 * exits at start would be respawned, fail again, and loop.
 */

ngx_int_t
ngx_http_simhash_replicate_init_worker(ngx_http_simhash_zone_t *zone,
    ngx_cycle_t *cycle)
{
    uint32_t                       crc;
    ngx_http_simhash_link_t       *lk;
    ngx_http_simhash_shctx_t      *sh;
    ngx_http_simhash_replicate_t  *rp;

    rp = zone->replicate;

    if (rp == NULL || rp->outbox == NULL || zone->sh == NULL
        || (ngx_process == NGX_PROCESS_WORKER && ngx_worker != 0))
    {
        return NGX_OK;
    }

    lk = ngx_pcalloc(cycle->pool, sizeof(ngx_http_simhash_link_t));
    if (lk == NULL) {
        return NGX_OK;
    }

    rp->link = lk;
    lk->rp = rp;
    lk->log = cycle->log;
    lk->seed = sh_stream_seed(zone->seed_digest);
    lk->maxlen_len = ngx_sprintf(lk->maxlen, "%ui", rp->maxlen) - lk->maxlen;
    lk->block_len = ngx_sprintf(lk->block, "%d",
                                NGX_HTTP_SIMHASH_READ_BLOCK) - lk->block;
    lk->count_len = ngx_sprintf(lk->count, "%d",
                                NGX_HTTP_SIMHASH_READ_COUNT) - lk->count;

    /* an id read from another stream means nothing in this one */

    sh = zone->sh;
    crc = ngx_crc32_long(rp->stream.data, rp->stream.len);

    ngx_http_simhash_zone_lock(zone, cycle->log);

    if (sh->repl_stream != crc) {
        if (sh->repl_id.ms || sh->repl_id.seq) {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                          "simhash zone \"%V\" followed another stream: "
                          "reading \"%V\" from its start", &zone->name,
                          &rp->stream);
        }

        sh->repl_id.ms = 0;
        sh->repl_id.seq = 0;
        sh->repl_stream = crc;
    }

    ngx_http_simhash_zone_unlock(zone);

    rp->outbox->connected = 0;

    lk->flush.handler = ngx_http_simhash_flush_handler;
    lk->flush.data = lk;
    lk->flush.log = cycle->log;
    lk->flush.cancelable = 1;

    lk->pub.conf = rp->redis;
    lk->pub.name = "publisher";
    lk->pub.zone = zone->name;
    lk->pub.data = lk;
    lk->pub.log = cycle->log;
    lk->pub.ready = ngx_http_simhash_pub_ready;
    lk->pub.down = ngx_http_simhash_pub_down;
    lk->pub.reconnects = &rp->outbox->reconnects;

    lk->sub = lk->pub;
    lk->sub.name = "reader";
    lk->sub.ready = ngx_http_simhash_sub_ready;
    lk->sub.down = ngx_http_simhash_sub_down;
    lk->sub.wait = NGX_HTTP_SIMHASH_READ_BLOCK;

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "simhash zone \"%V\": replicated through %V, stream "
                  "\"%V\", as node \"%V\", by process %P",
                  &zone->name, &rp->url, &rp->stream, &rp->node, ngx_pid);

    ngx_http_simhash_redis_start(&lk->pub);
    ngx_http_simhash_redis_start(&lk->sub);

    return NGX_OK;
}


/* The worker exits: both connections closed, nothing is waited for. */

void
ngx_http_simhash_replicate_exit_worker(ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_link_t  *lk;

    if (zone->replicate == NULL || zone->replicate->link == NULL) {
        return;
    }

    lk = zone->replicate->link;

    if (lk->flush.timer_set) {
        ngx_del_timer(&lk->flush);
    }

    ngx_http_simhash_redis_close(&lk->pub);
    ngx_http_simhash_redis_close(&lk->sub);

    zone->replicate->link = NULL;
}


/* The publisher: every NGX_HTTP_SIMHASH_FLUSH_EVERY ms, what is new. */

static void
ngx_http_simhash_pub_ready(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    ngx_http_simhash_zone_t  *zone;

    zone = lk->rp->zone;

    /* whatever was sent before and not acknowledged goes again */

    ngx_http_simhash_zone_lock(zone, lk->log);
    lk->sent = lk->rp->outbox->head;
    ngx_http_simhash_zone_unlock(zone);

    lk->first = 0;
    lk->n = 0;

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, 1);

    ngx_http_simhash_flush(lk);
}


static void
ngx_http_simhash_pub_down(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    if (lk->flush.timer_set) {
        ngx_del_timer(&lk->flush);
    }

    if (lk->rp->outbox->connected) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, -1);
    }

    lk->n = 0;
}


static void
ngx_http_simhash_flush_handler(ngx_event_t *ev)
{
    ngx_http_simhash_flush(ev->data);
}


/*
 * XADD every record from `sent` to the tail, while fewer than INFLIGHT
 * await their reply.  The records are read in place, without the lock:
 * nothing but this process moves the head, and writers never touch what
 * lies between head and tail.
 */

static void
ngx_http_simhash_flush(ngx_http_simhash_link_t *lk)
{
    size_t                          off;
    uint64_t                        tail;
    const char                     *argv[18];
    size_t                          argvlen[18];
    sh_stream_text_t                text;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_outrec_t      *rec;
    ngx_http_simhash_outbox_t      *ob;
    ngx_http_simhash_replicate_t   *rp;

    rp = lk->rp;
    zone = rp->zone;
    ob = rp->outbox;

    if (!ngx_http_simhash_redis_is_ready(&lk->pub)) {
        return;
    }

    ngx_http_simhash_zone_lock(zone, lk->log);
    tail = ob->tail;
    ngx_http_simhash_zone_unlock(zone);

    argv[0] = "XADD";             argvlen[0] = 4;
    argv[1] = (char *) rp->stream.data;
    argvlen[1] = rp->stream.len;
    argv[2] = "MAXLEN";           argvlen[2] = 6;
    argv[3] = "~";                argvlen[3] = 1;
    argv[4] = (char *) lk->maxlen;
    argvlen[4] = lk->maxlen_len;
    argv[5] = "*";                argvlen[5] = 1;
    argv[6] = "node";             argvlen[6] = 4;
    argv[7] = (char *) rp->node.data;
    argvlen[7] = rp->node.len;
    argv[8] = "key";              argvlen[8] = 3;
    argv[10] = "fp";              argvlen[10] = 2;
    argv[11] = text.fp;           argvlen[11] = 16;
    argv[12] = "digest";          argvlen[12] = 6;
    argv[13] = text.digest;       argvlen[13] = 16;
    argv[14] = "time";            argvlen[14] = 4;
    argv[15] = text.time;
    argv[16] = "seed";            argvlen[16] = 4;
    argv[17] = text.seed;         argvlen[17] = 8;

    while (lk->sent < tail && lk->n < NGX_HTTP_SIMHASH_INFLIGHT) {

        off = (size_t) (lk->sent % ob->size);
        rec = (ngx_http_simhash_outrec_t *) (ob->ring + off);

        if (rec->len == NGX_HTTP_SIMHASH_WRAP) {
            lk->sent += ob->size - off;
            continue;
        }

        sh_stream_text(&text, rec->hash, rec->digest, rec->time, lk->seed);

        argv[9] = (char *) rec + sizeof(ngx_http_simhash_outrec_t);
        argvlen[9] = rec->len;
        argvlen[15] = ngx_strlen(text.time);

        if (ngx_http_simhash_redis_command(&lk->pub,
                                           ngx_http_simhash_xadd_reply, lk,
                                           18, argv, argvlen)
            != NGX_OK)
        {
            break;
        }

        lk->sent += sizeof(ngx_http_simhash_outrec_t)
                    + ngx_align(rec->len, 8);
        lk->inflight[(lk->first + lk->n) % NGX_HTTP_SIMHASH_INFLIGHT] =
                                                                    lk->sent;
        lk->n++;
    }

    if (!lk->flush.timer_set && !(ngx_exiting || ngx_terminate || ngx_quit))
    {
        ngx_add_timer(&lk->flush, NGX_HTTP_SIMHASH_FLUSH_EVERY);
    }
}


/* Redis has the record: it leaves the outbox. */

static void
ngx_http_simhash_xadd_reply(redisAsyncContext *ac, void *data,
    void *privdata)
{
    ngx_http_simhash_link_t  *lk = privdata;

    uint64_t                        end, dropped;
    sh_stream_id_t                  id;
    redisReply                     *reply = data;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_shctx_t       *sh;
    ngx_http_simhash_outbox_t      *ob;

    if (reply == NULL || lk->n == 0) {
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_redis_fail(&lk->pub, "XADD refused: %*s",
                                    (size_t) reply->len, reply->str);
        return;
    }

    zone = lk->rp->zone;
    sh = zone->sh;
    ob = lk->rp->outbox;

    end = lk->inflight[lk->first];
    lk->first = (lk->first + 1) % NGX_HTTP_SIMHASH_INFLIGHT;
    lk->n--;

    dropped = 0;

    ngx_http_simhash_zone_lock(zone, lk->log);

    ob->head = end;
    ob->records--;

    /* the first entry of this zone's life: ours before it are from a
     * previous one (see ngx_http_simhash_apply()) */

    if (sh->repl_since.ms == 0
        && ngx_http_simhash_reply_id(reply, &id) == NGX_OK)
    {
        sh->repl_since = id;
    }

    if (ob->overflow && ob->tail - ob->head <= ob->size / 2) {
        dropped = ob->overflow;
        ob->overflow = 0;
    }

    ngx_http_simhash_zone_unlock(zone);

    (void) ngx_atomic_fetch_add(&ob->published, 1);

    if (dropped) {
        ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                      "simhash zone \"%V\": the outbox has room again; "
                      "%uL documents stored while it was full were not "
                      "published", &zone->name, dropped);
    }

    if (lk->n == 0) {
        /* keep the pipeline going at once when more waits */
        ngx_http_simhash_flush(lk);
    }
}


/* The reader: XINFO STREAM at each connect (gaps), then XREAD in a loop. */

static void
ngx_http_simhash_sub_ready(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, 1);

    ngx_http_simhash_xinfo(lk);
}


static void
ngx_http_simhash_sub_down(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    if (lk->rp->outbox->connected) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, -1);
    }
}


static void
ngx_http_simhash_xinfo(ngx_http_simhash_link_t *lk)
{
    const char                    *argv[3];
    size_t                         argvlen[3];
    ngx_http_simhash_replicate_t  *rp;

    rp = lk->rp;

    argv[0] = "XINFO";            argvlen[0] = 5;
    argv[1] = "STREAM";           argvlen[1] = 6;
    argv[2] = (char *) rp->stream.data;
    argvlen[2] = rp->stream.len;

    (void) ngx_http_simhash_redis_command(&lk->sub,
                                          ngx_http_simhash_xinfo_reply, lk,
                                          3, argv, argvlen);
}


/*
 * Where the stream stands against the last id applied here: trimmed past
 * it (a gap: what was in between is lost to this node), behind it (Redis
 * lost the stream, or was restored from an older copy), or missing.
 * Reading goes on in every case.
 */

static void
ngx_http_simhash_xinfo_reply(redisAsyncContext *ac, void *data,
    void *privdata)
{
    ngx_http_simhash_link_t  *lk = privdata;

    char                       have[SH_STREAM_ID_LEN];
    redisReply                *reply = data, *first, *last, *length;
    sh_stream_id_t             id, fid, lid;
    ngx_http_simhash_zone_t   *zone;

    if (reply == NULL) {
        return;
    }

    zone = lk->rp->zone;

    ngx_http_simhash_zone_lock(zone, lk->log);
    id = zone->sh->repl_id;
    ngx_http_simhash_zone_unlock(zone);

    (void) sh_stream_id_format(have, &id);

    if (reply->type == REDIS_REPLY_ERROR) {

        if (ngx_strlcasestrn((u_char *) reply->str,
                             (u_char *) reply->str + reply->len,
                             (u_char *) "no such key", 11 - 1)
            == NULL)
        {
            ngx_http_simhash_redis_fail(&lk->sub, "XINFO STREAM refused: %*s",
                                        (size_t) reply->len, reply->str);
            return;
        }

        if (id.ms || id.seq) {
            ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                          "simhash zone \"%V\": the stream \"%V\" does not "
                          "exist, though %s was applied here: Redis lost it "
                          "(a restart without persistence?); going on with "
                          "what is published from now on",
                          &zone->name, &lk->rp->stream, have);

        } else {
            ngx_log_error(NGX_LOG_INFO, lk->log, 0,
                          "simhash zone \"%V\": the stream \"%V\" does not "
                          "exist yet", &zone->name, &lk->rp->stream);
        }

        ngx_http_simhash_xread(lk);
        return;
    }

    first = ngx_http_simhash_reply_field(reply, "first-entry");
    last = ngx_http_simhash_reply_field(reply, "last-generated-id");
    length = ngx_http_simhash_reply_field(reply, "length");

    if (id.ms == 0 && id.seq == 0) {
        if (length && length->type == REDIS_REPLY_INTEGER
            && length->integer > 0)
        {
            ngx_log_error(NGX_LOG_NOTICE, lk->log, 0,
                          "simhash zone \"%V\": reading the stream \"%V\" "
                          "from its start: %L entries", &zone->name,
                          &lk->rp->stream, (int64_t) length->integer);
        }

    } else if (first && first->type == REDIS_REPLY_ARRAY
               && first->elements == 2
               && ngx_http_simhash_reply_id(first->element[0], &fid)
                  == NGX_OK
               && sh_stream_id_cmp(&fid, &id) > 0)
    {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->gaps, 1);

        ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                      "simhash zone \"%V\": the stream \"%V\" was trimmed "
                      "past %s, the last entry applied here: the oldest "
                      "left is %*s, %L s later; what was published in "
                      "between is missing here (a larger maxlen keeps "
                      "more)", &zone->name, &lk->rp->stream, have,
                      (size_t) first->element[0]->len,
                      first->element[0]->str,
                      (int64_t) (fid.ms - id.ms) / 1000);

    } else if ((first == NULL || first->type == REDIS_REPLY_NIL)
               && last
               && ngx_http_simhash_reply_id(last, &lid) == NGX_OK
               && sh_stream_id_cmp(&lid, &id) > 0)
    {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->gaps, 1);

        ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                      "simhash zone \"%V\": the stream \"%V\" was trimmed "
                      "past %s, the last entry applied here: it is empty, "
                      "its last entry was %*s; what was published in "
                      "between is missing here (a larger maxlen keeps "
                      "more)", &zone->name, &lk->rp->stream, have,
                      (size_t) last->len, last->str);

    } else if (last
               && ngx_http_simhash_reply_id(last, &lid) == NGX_OK
               && sh_stream_id_cmp(&lid, &id) < 0)
    {
        ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                      "simhash zone \"%V\": the stream \"%V\" ends at %*s, "
                      "before %s, the last entry applied here: Redis lost "
                      "its end (restored from an older copy?); going on "
                      "with what is published from now on",
                      &zone->name, &lk->rp->stream, (size_t) last->len,
                      last->str, have);
    }

    ngx_http_simhash_xread(lk);
}


static void
ngx_http_simhash_xread(ngx_http_simhash_link_t *lk)
{
    char                           id[SH_STREAM_ID_LEN];
    const char                    *argv[8];
    size_t                         argvlen[8];
    sh_stream_id_t                 last;
    ngx_http_simhash_zone_t       *zone;
    ngx_http_simhash_replicate_t  *rp;

    rp = lk->rp;
    zone = rp->zone;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    ngx_http_simhash_zone_lock(zone, lk->log);
    last = zone->sh->repl_id;
    ngx_http_simhash_zone_unlock(zone);

    argv[0] = "XREAD";            argvlen[0] = 5;
    argv[1] = "COUNT";            argvlen[1] = 5;
    argv[2] = (char *) lk->count;
    argvlen[2] = lk->count_len;
    argv[3] = "BLOCK";            argvlen[3] = 5;
    argv[4] = (char *) lk->block;
    argvlen[4] = lk->block_len;
    argv[5] = "STREAMS";          argvlen[5] = 7;
    argv[6] = (char *) rp->stream.data;
    argvlen[6] = rp->stream.len;
    argv[7] = id;
    argvlen[7] = sh_stream_id_format(id, &last);

    (void) ngx_http_simhash_redis_command(&lk->sub,
                                          ngx_http_simhash_xread_reply, lk,
                                          8, argv, argvlen);
}


/*
 * [[stream, [[id, [field, value, ...]], ...]]], or nil when BLOCK timed
 * out.  Every entry is applied in order; then the next XREAD (after an
 * XINFO when this one was full: catching up, the stream may be trimmed
 * under us).
 */

static void
ngx_http_simhash_xread_reply(redisAsyncContext *ac, void *data,
    void *privdata)
{
    ngx_http_simhash_link_t  *lk = privdata;

    size_t           i;
    redisReply      *reply = data, *entries, *e;
    sh_stream_id_t   id;

    if (reply == NULL) {
        return;
    }

    if (reply->type == REDIS_REPLY_NIL) {
        ngx_http_simhash_xread(lk);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_redis_fail(&lk->sub, "XREAD refused: %*s",
                                    (size_t) reply->len, reply->str);
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1
        || reply->element[0]->type != REDIS_REPLY_ARRAY
        || reply->element[0]->elements != 2
        || reply->element[0]->element[1]->type != REDIS_REPLY_ARRAY)
    {
        ngx_http_simhash_redis_fail(&lk->sub, "XREAD: unexpected reply");
        return;
    }

    entries = reply->element[0]->element[1];

    for (i = 0; i < entries->elements; i++) {
        e = entries->element[i];

        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2
            || ngx_http_simhash_reply_id(e->element[0], &id) != NGX_OK)
        {
            ngx_http_simhash_redis_fail(&lk->sub,
                                        "XREAD: unexpected entry %uz", i);
            return;
        }

        ngx_http_simhash_apply(lk, &id, e);
    }

    if (entries->elements >= NGX_HTTP_SIMHASH_READ_COUNT) {
        ngx_http_simhash_xinfo(lk);
        return;
    }

    ngx_http_simhash_xread(lk);
}


/*
 * One entry, under the zone's lock, with the last id: applied (stored, or
 * a newer version of a key held), or not (an older version, our own),
 * or refused (malformed, or under another seed).
 */

static void
ngx_http_simhash_apply(ngx_http_simhash_link_t *lk, sh_stream_id_t *id,
    redisReply *entry)
{
    char                            err[128];
    size_t                          i;
    uint32_t                        ref;
    uint64_t                        hash;
    ngx_str_t                       key;
    ngx_uint_t                      own, applied;
    redisReply                     *fields, *f, *v;
    sh_stream_entry_t               e;
    ngx_http_simhash_doc_t         *doc;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_shctx_t       *sh;
    ngx_http_simhash_outbox_t      *ob;
    ngx_http_simhash_replicate_t   *rp;

    rp = lk->rp;
    zone = rp->zone;
    sh = zone->sh;
    ob = rp->outbox;
    fields = entry->element[1];

    sh_stream_entry_init(&e);

    if (fields->type != REDIS_REPLY_ARRAY || fields->elements % 2) {
        ngx_http_simhash_refused(lk, entry->element[0], "no field list");
        goto refused;
    }

    for (i = 0; i < fields->elements; i += 2) {
        f = fields->element[i];
        v = fields->element[i + 1];

        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            ngx_http_simhash_refused(lk, entry->element[0], "not a string");
            goto refused;
        }

        if (sh_stream_entry_field(&e, f->str, f->len, v->str, v->len, err,
                                  sizeof(err))
            != 0)
        {
            ngx_http_simhash_refused(lk, entry->element[0], err);
            goto refused;
        }
    }

    if (sh_stream_entry_check(&e, err, sizeof(err)) != 0) {
        ngx_http_simhash_refused(lk, entry->element[0], err);
        goto refused;
    }

    if (e.seed != lk->seed) {
        ngx_http_simhash_refused(lk, entry->element[0],
                                 "fingerprints under another simhash_seed");
        goto refused;
    }

    own = (e.node_len == rp->node.len
           && ngx_memcmp(e.node, rp->node.data, e.node_len) == 0);

    if (!own) {
        ngx_http_simhash_lag(ob, e.time);
    }

    key.data = (u_char *) e.key;
    key.len = e.key_len;
    applied = 0;

    ngx_http_simhash_zone_lock(zone, lk->log);

    if (own && sh->repl_since.ms
        && sh_stream_id_cmp(id, &sh->repl_since) >= 0)
    {
        /* published by this zone: it has it, or evicted it on purpose */
        goto done;
    }

    doc = ngx_http_simhash_zone_key(zone, &key);

    if (doc == NULL) {
        ngx_http_simhash_zone_write(zone);

        ref = ngx_http_simhash_zone_store(zone, &key, e.hash, e.digest,
                                          sh_stream_second(e.time));
        applied = (ref != SH_NOREF);

    } else if (sh_index_get(sh->index, doc->ref, &hash) == 0
               && sh_stream_newer(e.time, e.hash, sh->times[doc->ref], hash))
    {
        ngx_http_simhash_zone_write(zone);

        (void) sh_index_update(sh->index, doc->ref, e.hash);
        sh->digests[doc->ref] = e.digest;
        sh->times[doc->ref] = sh_stream_second(e.time);
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
        applied = 1;
    }

done:

    sh->repl_id = *id;

    ngx_http_simhash_zone_unlock(zone);

    (void) ngx_atomic_fetch_add(applied ? &ob->applied
                                : own ? &ob->skipped_own : &ob->outdated, 1);
    return;

refused:

    (void) ngx_atomic_fetch_add(&ob->refused, 1);

    ngx_http_simhash_zone_lock(zone, lk->log);
    sh->repl_id = *id;
    ngx_http_simhash_zone_unlock(zone);
}


/* The age of an entry of another node when applied. */

static void
ngx_http_simhash_lag(ngx_http_simhash_outbox_t *ob, uint64_t time)
{
    uint64_t    now, lag;
    ngx_uint_t  i;

    now = ngx_http_simhash_now();
    lag = (now > time) ? now - time : 0;

    ob->lag = (ngx_atomic_uint_t) lag;
    (void) ngx_atomic_fetch_add(&ob->lag_sum, (ngx_atomic_int_t) lag);
    (void) ngx_atomic_fetch_add(&ob->lag_count, 1);

    for (i = 0; i < NGX_HTTP_SIMHASH_NLAG - 1; i++) {
        if (lag <= ngx_http_simhash_lag_le[i]) {
            break;
        }
    }

    (void) ngx_atomic_fetch_add(&ob->lag_le[i], 1);
}


/*
 * A refused entry: one log line a second at most, with how many since the
 * last line, so that a foreign writer cannot flood the log.
 */

static void
ngx_http_simhash_refused(ngx_http_simhash_link_t *lk, redisReply *id,
    char *why)
{
    lk->refused++;

    if (lk->refused_logged == ngx_time()) {
        return;
    }

    ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                  "simhash zone \"%V\": stream entry %*s refused: %s "
                  "(%ui refused since the last such line)",
                  &lk->rp->zone->name, (size_t) id->len, id->str, why,
                  lk->refused);

    lk->refused = 0;
    lk->refused_logged = ngx_time();
}


static ngx_int_t
ngx_http_simhash_reply_id(redisReply *r, sh_stream_id_t *id)
{
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
        return NGX_ERROR;
    }

    return sh_stream_id_parse(id, r->str, r->len) == 0 ? NGX_OK : NGX_ERROR;
}


/* A field of a flat [name, value, ...] reply (XINFO in RESP2). */

static redisReply *
ngx_http_simhash_reply_field(redisReply *r, const char *name)
{
    size_t  i, len;

    if (r->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }

    len = ngx_strlen(name);

    for (i = 0; i + 1 < r->elements; i += 2) {
        if (r->element[i]->type == REDIS_REPLY_STRING
            && (size_t) r->element[i]->len == len
            && ngx_strncmp(r->element[i]->str, name, len) == 0)
        {
            return r->element[i + 1];
        }
    }

    return NULL;
}


static uint64_t
ngx_http_simhash_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (uint64_t) tp->sec * 1000 + tp->msec;
}
