
/*
 * The tier's shared index in a Redis Cluster: the zone's part (the
 * cluster= parameters of simhash_zone) and each worker's client
 * (ngx_http_simhash_cluster.h says what a lookup does and how it ends).
 *
 * Connections: one ngx_http_simhash_redis_t a node, made when the node is
 * first named (a seed URL of cluster=, or a master in CLUSTER SLOTS, or in
 * a MOVED or ASK), kept for the worker's life and reconnected with backoff
 * by the connection code.  A command to a node that is not ready fails at
 * once: its probe is "unreachable", the lookup incomplete, and no lookup
 * waits for a connection.
 *
 * The slot map: slot -> node, read from the first seed that answers
 * CLUSTER SLOTS, and again (one refresh at a time) after a MOVED, after a
 * probe of a node that is gone, and every NGX_HTTP_SIMHASH_CLUSTER_REFRESH
 * while a slot has no master.  The layout (the bucket bits) is read from
 * the meta key once the map is there.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_cluster.h"
#include "ngx_http_simhash_cluster_client.h"
#include "ngx_http_simhash_redis.h"

#include "sh_index.h"
#include "sh_mac.h"


/* the statistics' labels of incomplete lookups: the causes but OK */
ngx_str_t  ngx_http_simhash_cluster_cause_names[] = {
    ngx_string("starting"), ngx_string("unreachable"), ngx_string("timeout"),
    ngx_string("unserved"), ngx_string("clusterdown"), ngx_string("error"),
    ngx_string("denied")
};


const char *ngx_http_simhash_cluster_causes[] = {
    "", "starting", "unreachable", "timeout", "unserved", "clusterdown",
    "error", "denied"
};


static void *ngx_http_simhash_cluster_create_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
static ngx_int_t ngx_http_simhash_cluster_param(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_str_t *value);
static ngx_int_t ngx_http_simhash_cluster_seed(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_http_simhash_cluster_conf_t *ccf,
    ngx_http_simhash_redis_conf_t *rc, ngx_str_t *url);
static char *ngx_http_simhash_cluster_conf_done(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
static ngx_int_t ngx_http_simhash_cluster_tls_param(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_http_simhash_cluster_conf_t *ccf,
    ngx_str_t *value);
static char *ngx_http_simhash_cluster_tls_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_http_simhash_cluster_conf_t *ccf);
static ngx_int_t ngx_http_simhash_cluster_init_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_cluster_exit_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_cluster_read_layout(
    ngx_http_simhash_cluster_t *cl, char *key, size_t len);


ngx_http_simhash_part_t  ngx_http_simhash_cluster_part = {
    ngx_string("cluster"),
    0,                                      /* index */
    ngx_null_string,                        /* tail_name */
    sizeof(ngx_http_simhash_cluster_counts_t),  /* shctx_size */

    ngx_http_simhash_cluster_create_conf,   /* create_conf */
    ngx_http_simhash_cluster_param,         /* param */
    ngx_http_simhash_cluster_conf_done,     /* conf_done */
    NULL,                                   /* shm_size */

    NULL,                                   /* shm_init */
    NULL,                                   /* shm_migrate */

    NULL,                                   /* want_tail */
    NULL,                                   /* save_tail */
    NULL,                                   /* load_tail */

    NULL,                                   /* postconfiguration */
    NULL,                                   /* init_module */
    ngx_http_simhash_cluster_init_process,  /* init_process */
    ngx_http_simhash_cluster_exit_process,  /* exit_process */
    NULL,                                   /* exit_master */

    NULL,                                   /* save_aside */
    NULL                                    /* load_aside */
};


/* ---- configuration ---- */

static void *
ngx_http_simhash_cluster_create_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_cluster_conf_t  *ccf;

    ccf = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_cluster_conf_t));
    if (ccf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&ccf->seeds, cf->pool, 1,
                       sizeof(ngx_http_simhash_redis_conf_t))
        != NGX_OK)
    {
        return NULL;
    }

    /* a lookup is a round trip or two on a LAN: 0.1-1 ms; 50 ms is a slow
     * moment of a busy master, not a dead one (that one takes the whole
     * cluster-node-timeout to be replaced, and is counted meanwhile) */
    ccf->timeout = 50;
    ngx_str_set(&ccf->prefix, "sh:");
    ccf->backlog = NGX_HTTP_SIMHASH_CLUSTER_BACKLOG;

    return ccf;
}


static ngx_int_t
ngx_http_simhash_cluster_param(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    ngx_str_t *value)
{
    u_char                           *p, *last, *comma;
    ngx_str_t                         url, v;
    ngx_msec_t                        ms;
    ngx_http_simhash_redis_conf_t    *rc;
    ngx_http_simhash_cluster_conf_t  *ccf;

    ccf = ngx_http_simhash_part_conf(zone, ngx_http_simhash_cluster_part);

    if (value->len >= 8 && ngx_strncmp(value->data, "cluster=", 8) == 0) {
        p = value->data + 8;
        last = value->data + value->len;

        if (p == last) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "simhash zone \"%V\": cluster= names no "
                               "address (redis://HOST:PORT,...)",
                               &zone->name);
            return NGX_ERROR;
        }

        while (p < last) {
            comma = ngx_strlchr(p, last, ',');
            url.data = p;
            url.len = (comma ? comma : last) - p;

            if (url.len == 0 || (comma && comma + 1 == last)) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "simhash zone \"%V\": an empty "
                                   "address in \"%V\"", &zone->name,
                                   value);
                return NGX_ERROR;
            }

            rc = ngx_array_push(&ccf->seeds);
            if (rc == NULL) {
                return NGX_ERROR;
            }

            ngx_memzero(rc, sizeof(ngx_http_simhash_redis_conf_t));
            rc->timeout = 1000;
            rc->tls_ok = 1;

            if (ngx_http_simhash_cluster_seed(cf, zone, ccf, rc, &url)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            p = comma ? comma + 1 : last;
        }

        return NGX_OK;
    }

    if (value->len >= 16
        && ngx_strncmp(value->data, "cluster_timeout=", 16) == 0)
    {
        v.data = value->data + 16;
        v.len = value->len - 16;
        ms = ngx_parse_time(&v, 0);
        if (ms == (ngx_msec_t) NGX_ERROR || ms == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "simhash zone \"%V\": invalid "
                               "cluster_timeout \"%V\" (a time, e.g. 50ms)",
                               &zone->name, &v);
            return NGX_ERROR;
        }
        ccf->timeout = ms;
        ccf->timeout_set = 1;
        return NGX_OK;
    }

    if (value->len > 12
        && ngx_strncmp(value->data, "cluster_tls_", 12) == 0)
    {
        return ngx_http_simhash_cluster_tls_param(cf, zone, ccf, value);
    }

    if (value->len > 16
        && ngx_strncmp(value->data, "cluster_backlog=", 16) == 0)
    {
        ngx_int_t  n;

        v.data = value->data + 16;
        v.len = value->len - 16;
        n = ngx_atoi(v.data, v.len);
        if (n == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "simhash zone \"%V\": invalid "
                               "cluster_backlog \"%V\" (writes a worker "
                               "keeps while the cluster is away, e.g. "
                               "30000; 0: none)", &zone->name, &v);
            return NGX_ERROR;
        }
        ccf->backlog = n;
        ccf->backlog_set = 1;
        return NGX_OK;
    }

    if (value->len >= 15
        && ngx_strncmp(value->data, "cluster_prefix=", 15) == 0)
    {
        char                 err[160];
        sh_cluster_layout_t  check;

        v.data = value->data + 15;
        v.len = value->len - 15;

        /* the layout's own check of a prefix */
        if (sh_cluster_layout_init(&check, (char *) v.data,
                                   v.len, 16, 16,
                                   (const unsigned char *) zone->mac_key,
                                   err, sizeof(err))
            != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "simhash zone \"%V\": cluster_prefix: %s",
                               &zone->name, err);
            return NGX_ERROR;
        }
        ccf->prefix = v;
        ccf->prefix_set = 1;
        return NGX_OK;
    }

    return NGX_DECLINED;
}


/*
 * A seed URL of cluster=, read as simhash_replicate's (redis://[[USER]:
 * PASSWORD@]HOST[:PORT]): a cluster's nodes announce TCP addresses and
 * serve database 0 only, and every node is asked with the first seed's
 * credentials (a cluster has one set of users), so seeds that name
 * others are refused here rather than failing one by one at run time.
 */

static ngx_int_t
ngx_http_simhash_cluster_seed(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_cluster_conf_t *ccf, ngx_http_simhash_redis_conf_t *rc,
    ngx_str_t *url)
{
    ngx_http_simhash_redis_conf_t  *first;

    if (url->len >= 5 && ngx_strncmp(url->data, "unix:", 5) == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash zone \"%V\": a Redis Cluster is "
                           "reached over TCP, not \"%V\" (its nodes "
                           "announce HOST:PORT)", &zone->name, url);
        return NGX_ERROR;
    }

    if (ngx_http_simhash_redis_url(cf, rc, url) != NGX_CONF_OK) {
        return NGX_ERROR;
    }

    if (rc->db != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash zone \"%V\": a Redis Cluster has only "
                           "database 0 (\"%V\")", &zone->name, &rc->url);
        return NGX_ERROR;
    }

    first = ccf->seeds.elts;

    if (first != rc && first->tls != rc->tls) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash zone \"%V\": the seeds of cluster= mix "
                           "redis:// and rediss:// (\"%V\" and \"%V\"): a "
                           "cluster speaks TLS on every node or on none",
                           &zone->name, &first->url, &rc->url);
        return NGX_ERROR;
    }

    /* an absent user or password has no data (NULL): compared by length
     * first, and by bytes only when there are some */
    if (first != rc
        && (first->user.len != rc->user.len
            || first->password.len != rc->password.len
            || (rc->user.len
                && ngx_memcmp(first->user.data, rc->user.data, rc->user.len)
                   != 0)
            || (rc->password.len
                && ngx_memcmp(first->password.data, rc->password.data,
                              rc->password.len)
                   != 0)))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash zone \"%V\": the seeds of cluster= "
                           "name different users or passwords (\"%V\" "
                           "and \"%V\"): every node is asked as one user",
                           &zone->name, &first->url, &rc->url);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* cluster_timeout= and cluster_prefix= belong to a cluster= */

static char *
ngx_http_simhash_cluster_conf_done(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_cluster_conf_t  *ccf;

    ccf = ngx_http_simhash_part_conf(zone, ngx_http_simhash_cluster_part);

    if (ccf->seeds.nelts == 0
        && (ccf->timeout_set || ccf->prefix_set || ccf->backlog_set))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash zone \"%V\": %s= without cluster=",
                           &zone->name,
                           ccf->timeout_set ? "cluster_timeout"
                           : ccf->prefix_set ? "cluster_prefix"
                                             : "cluster_backlog");
        return NGX_CONF_ERROR;
    }

    return ngx_http_simhash_cluster_tls_conf(cf, zone, ccf);
}


/* cluster_tls_ca=PATH, cluster_tls_cert=PATH, cluster_tls_key=PATH,
 * cluster_tls_name=NAME */

static ngx_int_t
ngx_http_simhash_cluster_tls_param(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_http_simhash_cluster_conf_t *ccf,
    ngx_str_t *value)
{
    size_t      n;
    ngx_str_t  *to, v;

    if (value->len >= 15
        && ngx_strncmp(value->data, "cluster_tls_ca=", 15) == 0)
    {
        to = &ccf->tls_ca;
        n = 15;

    } else if (value->len >= 17
               && ngx_strncmp(value->data, "cluster_tls_cert=", 17) == 0)
    {
        to = &ccf->tls_cert;
        n = 17;

    } else if (value->len >= 16
               && ngx_strncmp(value->data, "cluster_tls_key=", 16) == 0)
    {
        to = &ccf->tls_key;
        n = 16;

    } else if (value->len >= 17
               && ngx_strncmp(value->data, "cluster_tls_name=", 17) == 0)
    {
        to = &ccf->tls_name;
        n = 17;

    } else {
        return NGX_DECLINED;
    }

    v.data = value->data + n;
    v.len = value->len - n;

    if (v.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash zone \"%V\": \"%V\" names nothing",
                           &zone->name, value);
        return NGX_ERROR;
    }

    /* NUL-terminated: OpenSSL's and X509_check_host's */
    to->len = v.len;
    to->data = ngx_pnalloc(cf->pool, v.len + 1);
    if (to->data == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_cpystrn(to->data, v.data, v.len + 1);

    return NGX_OK;
}


/*
 * rediss:// seeds: one TLS context for the zone's nodes (nginx's, as
 * proxy_ssl makes it), the servers' certificates verified against
 * cluster_tls_ca=, this client's own (cluster_tls_cert=, cluster_tls_key=)
 * shown to servers that ask for one (Redis does, by default:
 * tls-auth-clients yes).
 */

static char *
ngx_http_simhash_cluster_tls_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_http_simhash_cluster_conf_t *ccf)
{
    ngx_uint_t                      i, tls;
    ngx_http_simhash_redis_conf_t  *seed;
#if (NGX_SSL)
    ngx_ssl_t                      *ssl;
    ngx_pool_cleanup_t             *cln;
#endif

    seed = ccf->seeds.elts;
    tls = ccf->seeds.nelts && seed[0].tls;

    if (!tls) {
        if (ccf->tls_ca.len || ccf->tls_cert.len || ccf->tls_key.len
            || ccf->tls_name.len)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "simhash zone \"%V\": cluster_tls_*= without "
                               "rediss:// seeds in cluster=", &zone->name);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ccf->tls_ca.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash zone \"%V\": rediss:// needs "
                           "cluster_tls_ca=PATH, the CA that signed the "
                           "nodes' certificates", &zone->name);
        return NGX_CONF_ERROR;
    }

    if ((ccf->tls_cert.len == 0) != (ccf->tls_key.len == 0)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "simhash zone \"%V\": cluster_tls_cert= and "
                           "cluster_tls_key= go together", &zone->name);
        return NGX_CONF_ERROR;
    }

#if (NGX_SSL)

    ssl = ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t));
    if (ssl == NULL) {
        return NGX_CONF_ERROR;
    }

    ssl->log = cf->log;

    if (ngx_ssl_create(ssl, NGX_SSL_TLSv1_2|NGX_SSL_TLSv1_3, NULL)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        ngx_ssl_cleanup_ctx(ssl);
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_ssl_cleanup_ctx;
    cln->data = ssl;

    if (ccf->tls_cert.len
        && ngx_ssl_certificate(cf, ssl, &ccf->tls_cert, &ccf->tls_key, NULL)
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (ngx_ssl_trusted_certificate(cf, ssl, &ccf->tls_ca, 4) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    for (i = 0; i < ccf->seeds.nelts; i++) {
        seed[i].ssl = ssl;

        if (ccf->tls_name.len) {
            seed[i].tls_name = ccf->tls_name;
        }
    }

    return NGX_CONF_OK;

#else

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "simhash zone \"%V\": rediss:// needs an nginx built "
                       "with SSL", &zone->name);
    return NGX_CONF_ERROR;

#endif
}


/* ---- nodes and the slot map ---- */

static void
ngx_http_simhash_cluster_node_ready(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_cluster_node_t  *n = rd->data;

    if (!n->cl->have_map || !n->cl->have_layout) {
        ngx_http_simhash_cluster_refresh(n->cl);
    }
}


static void
ngx_http_simhash_cluster_node_down(ngx_http_simhash_redis_t *rd)
{
    /* its pending probes have had their NULL replies: nothing to do here;
     * the connection code reconnects with backoff */
}


/* The node of an address "HOST:PORT" (made if new): NULL if no room or
 * not an address. */
ngx_http_simhash_cluster_node_t *
ngx_http_simhash_cluster_node(ngx_http_simhash_cluster_t *cl, u_char *addr,
    size_t len)
{
    ngx_uint_t                        i;
    ngx_addr_t                        a;
    ngx_http_simhash_redis_conf_t    *seed;
    ngx_http_simhash_cluster_node_t  *n;

    for (i = 0; i < cl->nnodes; i++) {
        if (cl->nodes[i]->addr_len == len
            && ngx_strncmp(cl->nodes[i]->addr, addr, len) == 0)
        {
            return cl->nodes[i];
        }
    }

    if (cl->nnodes == NGX_HTTP_SIMHASH_CLUSTER_NODES
        || len >= NGX_SOCKADDR_STRLEN
        || ngx_parse_addr_port(cl->pool, &a, addr, len) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, cl->log, 0,
                      "simhash zone \"%V\": cluster node \"%*s\" not "
                      "used (not an address, or more than %d nodes)",
                      &cl->zone->name, len, addr,
                      NGX_HTTP_SIMHASH_CLUSTER_NODES);
        return NULL;
    }

    n = ngx_pcalloc(cl->pool, sizeof(ngx_http_simhash_cluster_node_t));
    if (n == NULL) {
        return NULL;
    }

    /* the credentials and timeouts of the first seed: a cluster has one
     * set of users */
    seed = cl->conf->seeds.elts;
    n->conf = seed[0];
    n->conf.sockaddr = a.sockaddr;
    n->conf.socklen = a.socklen;
    n->conf.url.data = n->addr;
    n->conf.url.len = len;
    ngx_memcpy(n->addr, addr, len);
    n->addr_len = len;

    if (n->conf.tls && cl->conf->tls_name.len == 0) {
        /* its certificate must name it as the map does: HOST of
         * HOST:PORT (an IPv6 address without its brackets) */
        u_char  *colon = addr + len;

        while (colon > addr && colon[-1] != ':') {
            colon--;
        }

        if (colon > addr + 1 && addr[0] == '[' && colon[-2] == ']') {
            ngx_memcpy(n->host, addr + 1, colon - addr - 3);
            n->host[colon - addr - 3] = '\0';

        } else {
            ngx_memcpy(n->host, addr, colon > addr ? colon - addr - 1 : 0);
            n->host[colon > addr ? colon - addr - 1 : 0] = '\0';
        }

        n->conf.tls_name.data = n->host;
        n->conf.tls_name.len = ngx_strlen(n->host);
    }
    n->cl = cl;

    n->rd.conf = &n->conf;
    n->rd.name = "cluster node";
    n->rd.zone = cl->zone->name;
    n->rd.data = n;
    n->rd.log = cl->log;
    n->rd.ready = ngx_http_simhash_cluster_node_ready;
    n->rd.down = ngx_http_simhash_cluster_node_down;
    n->rd.reconnects = &n->reconnects;

    cl->nodes[cl->nnodes++] = n;
    ngx_http_simhash_redis_start(&n->rd);

    return n;
}


/* CLUSTER SLOTS: [[lo, hi, [host, port, id, ...], replicas...], ...] */
static void
ngx_http_simhash_cluster_slots_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_cluster_t  *cl = data;

    size_t                            i;
    long long                         lo, hi, s;
    redisReply                       *e, *m;
    ngx_http_simhash_cluster_node_t  *n;
    u_char                            addr[NGX_SOCKADDR_STRLEN + 8], *last;
    uint16_t                          owner[SH_CLUSTER_SLOTS];
    char                              mkey[SH_CLUSTER_KEY_MAX];
    size_t                            mlen;
    ngx_uint_t                        missing = 0, k;

    cl->refreshing = 0;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        goto retry;
    }

    ngx_memset(owner, 0xff, sizeof(owner));

    for (i = 0; i < reply->elements; i++) {
        e = reply->element[i];

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3
            || e->element[0]->type != REDIS_REPLY_INTEGER
            || e->element[1]->type != REDIS_REPLY_INTEGER
            || e->element[2]->type != REDIS_REPLY_ARRAY
            || e->element[2]->elements < 2
            || e->element[2]->element[0]->type != REDIS_REPLY_STRING
            || e->element[2]->element[1]->type != REDIS_REPLY_INTEGER)
        {
            ngx_http_simhash_redis_fail(rd, "a CLUSTER SLOTS reply not "
                                        "understood");
            goto retry;
        }

        lo = e->element[0]->integer;
        hi = e->element[1]->integer;
        m = e->element[2];

        if (lo < 0 || hi >= SH_CLUSTER_SLOTS || lo > hi
            || m->element[0]->len > NGX_SOCKADDR_STRLEN)
        {
            goto retry;
        }

        last = ngx_snprintf(addr, sizeof(addr), "%*s:%L",
                            m->element[0]->len, m->element[0]->str,
                            m->element[1]->integer);

        n = ngx_http_simhash_cluster_node(cl, addr, last - addr);
        if (n == NULL) {
            continue;
        }

        for (k = 0; cl->nodes[k] != n; k++) { /* its index */ }

        for (s = lo; s <= hi; s++) {
            owner[s] = (uint16_t) k;
        }
    }

    for (i = 0; i < SH_CLUSTER_SLOTS; i++) {
        missing += owner[i] == NGX_HTTP_SIMHASH_CLUSTER_NOSLOT;
    }

    ngx_memcpy(cl->owner, owner, sizeof(owner));
    cl->have_map = 1;
    ngx_http_simhash_cluster_count(cl, refreshes);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cl->log, 0,
                   "simhash cluster: slot map of %ui nodes, %ui slots "
                   "unserved", cl->nnodes, missing);

    if (!cl->have_layout) {
        mlen = sh_cluster_key(&cl->layout, SH_CLUSTER_META, 0, mkey);
        ngx_http_simhash_cluster_read_layout(cl, mkey, mlen);
    }

    if (missing == 0) {
        return;
    }

retry:

    if (!cl->refresh.timer_set && !ngx_exiting) {
        ngx_add_timer(&cl->refresh, NGX_HTTP_SIMHASH_CLUSTER_REFRESH);
    }
}


static void
ngx_http_simhash_cluster_layout_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_cluster_t  *cl = data;

    char           err[160];
    unsigned       fpb, recb;
    unsigned char  key[SH_CLUSTER_MACKEY_LEN];

    if (reply == NULL) {
        return;                     /* read again once a node is ready */
    }

    /* the init starts from zeros: the key it keeps is copied first */
    ngx_memcpy(key, cl->layout.mackey, sizeof(key));

    if (reply->type != REDIS_REPLY_STRING
        || sh_cluster_meta_parse(reply->str, reply->len, &fpb, &recb) != 0
        || sh_cluster_layout_init(&cl->layout, (char *) cl->conf->prefix.data,
                                  cl->conf->prefix.len, fpb, recb, key, err,
                                  sizeof(err))
           != 0)
    {
        ngx_log_error(NGX_LOG_ERR, cl->log, 0,
                      "simhash zone \"%V\": no index layout in the cluster "
                      "(key \"%Vm\": load it with simhash cluster load); "
                      "every lookup is incomplete until there is",
                      &cl->zone->name, &cl->conf->prefix);
        if (!cl->refresh.timer_set && !ngx_exiting) {
            ngx_add_timer(&cl->refresh, NGX_HTTP_SIMHASH_CLUSTER_REFRESH);
        }
        return;
    }

    cl->k = sh_cluster_probes_for(&cl->layout, SH_H_DEFAULT, 0.95f, NULL);
    cl->have_layout = 1;

    ngx_log_error(NGX_LOG_NOTICE, cl->log, 0,
                  "simhash zone \"%V\": cluster index of %ui nodes, "
                  "buckets of %ui and %ui bits, %ui probes a lookup "
                  "within 3 bits (more for a wider radius)",
                  &cl->zone->name, cl->nnodes, (ngx_uint_t) fpb,
                  (ngx_uint_t) recb, (ngx_uint_t) cl->k);
}


static void
ngx_http_simhash_cluster_read_layout(ngx_http_simhash_cluster_t *cl,
    char *key, size_t len)
{
    const char                       *argv[2];
    size_t                            argvlen[2];
    ngx_uint_t                        o;

    argv[0] = "GET";
    argvlen[0] = 3;
    argv[1] = key;
    argvlen[1] = len;

    o = cl->owner[sh_cluster_slot(key, len)];

    if (o == NGX_HTTP_SIMHASH_CLUSTER_NOSLOT
        || ngx_http_simhash_redis_command(&cl->nodes[o]->rd,
               ngx_http_simhash_cluster_layout_reply, cl, 2, argv, argvlen)
           != NGX_OK)
    {
        /* its master not connected yet, or gone: the map again later */
        if (!cl->refresh.timer_set && !ngx_exiting) {
            ngx_add_timer(&cl->refresh, NGX_HTTP_SIMHASH_CLUSTER_REFRESH);
        }
    }
}


/* CLUSTER SLOTS to the first node ready (the seeds first). */
void
ngx_http_simhash_cluster_refresh(ngx_http_simhash_cluster_t *cl)
{
    ngx_uint_t   i;
    const char  *argv[2] = { "CLUSTER", "SLOTS" };
    size_t       argvlen[2] = { 7, 5 };

    if (cl->refreshing || ngx_exiting) {
        return;
    }

    for (i = 0; i < cl->nnodes; i++) {
        if (ngx_http_simhash_redis_is_ready(&cl->nodes[i]->rd)
            && ngx_http_simhash_redis_command(&cl->nodes[i]->rd,
                   ngx_http_simhash_cluster_slots_reply, cl, 2, argv,
                   argvlen)
               == NGX_OK)
        {
            cl->refreshing = 1;
            return;
        }
    }

    /* none ready: a node's ready handler asks again */
}


static void
ngx_http_simhash_cluster_refresh_handler(ngx_event_t *ev)
{
    ngx_http_simhash_cluster_t  *cl = ev->data;

    ngx_http_simhash_cluster_refresh(cl);
}


/*
 * Why a node (or, n NULL, the map) cannot be used: its server refused
 * this client at its last connection (AUTH or PING refused: a wrong
 * password, a user turned off, a user without PING) is "denied", which
 * no failover mends, told apart from a node that is unreachable and a
 * map not read yet.
 */

static ngx_uint_t
ngx_http_simhash_cluster_node_denied(ngx_http_simhash_cluster_node_t *n)
{
    u_char  *e = n->rd.error;

    return !ngx_http_simhash_redis_is_ready(&n->rd)
           && (ngx_strncmp(e, "AUTH refused: ", 14) == 0
               || ngx_strncmp(e, "PING refused: ", 14) == 0);
}


ngx_http_simhash_cluster_cause_e
ngx_http_simhash_cluster_cause(ngx_http_simhash_cluster_t *cl,
    ngx_http_simhash_cluster_node_t *n)
{
    ngx_uint_t  i;

    if (n) {
        return ngx_http_simhash_cluster_node_denied(n)
               ? NGX_HTTP_SIMHASH_CLUSTER_DENIED
               : NGX_HTTP_SIMHASH_CLUSTER_UNREACHABLE;
    }

    for (i = 0; i < cl->nnodes; i++) {
        if (ngx_http_simhash_cluster_node_denied(cl->nodes[i])) {
            return NGX_HTTP_SIMHASH_CLUSTER_DENIED;
        }
    }

    return NGX_HTTP_SIMHASH_CLUSTER_STARTING;
}


/* "MOVED 3999 127.0.0.1:6381" or "ASK ...": the node named */
ngx_http_simhash_cluster_node_t *
ngx_http_simhash_cluster_redirect(ngx_http_simhash_cluster_t *cl,
    redisReply *reply)
{
    u_char  *p, *last;

    last = (u_char *) reply->str + reply->len;
    p = ngx_strlchr((u_char *) reply->str, last, ' ');
    if (p == NULL) {
        return NULL;
    }
    p = ngx_strlchr(p + 1, last, ' ');
    if (p == NULL) {
        return NULL;
    }

    return ngx_http_simhash_cluster_node(cl, p + 1, last - p - 1);
}


static void
ngx_http_simhash_cluster_asking_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    /* +OK; the GET after it says how it went */
}


/*
 * ASKING before a command to a node importing the slot (a redirection by
 * ASK): the node answers the next command for that slot once.
 */

ngx_int_t
ngx_http_simhash_cluster_asking(ngx_http_simhash_cluster_node_t *n)
{
    const char  *argv[1];
    size_t       argvlen[1];

    argv[0] = "ASKING";
    argvlen[0] = 6;

    return ngx_http_simhash_redis_command(&n->rd,
               ngx_http_simhash_cluster_asking_reply, NULL, 1, argv, argvlen);
}


/* ---- the worker's life ---- */

ngx_http_simhash_cluster_counts_t *
ngx_http_simhash_cluster_counts(ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_cluster_conf_t  *ccf;

    ccf = ngx_http_simhash_part_conf(zone, ngx_http_simhash_cluster_part);

    if (ccf == NULL || ccf->seeds.nelts == 0) {
        return NULL;
    }

    return ngx_http_simhash_part_shm(zone, ngx_http_simhash_cluster_part);
}



ngx_http_simhash_cluster_t *
ngx_http_simhash_cluster_of(ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_cluster_conf_t  *ccf;

    ccf = ngx_http_simhash_part_conf(zone, ngx_http_simhash_cluster_part);

    return ccf ? ccf->client : NULL;
}


static ngx_int_t
ngx_http_simhash_cluster_init_process(ngx_cycle_t *cycle)
{
    char                              err[160];
    u_char                           *last;
    ngx_uint_t                        i, j, n;
    unsigned char                     key[SH_CLUSTER_MACKEY_LEN];
    ngx_http_simhash_zone_t         **zones;
    ngx_http_simhash_cluster_t       *cl;
    ngx_http_simhash_cluster_conf_t  *ccf;
    ngx_http_simhash_redis_conf_t    *seed;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        ccf = ngx_http_simhash_part_conf(zones[i],
                                         ngx_http_simhash_cluster_part);
        if (ccf == NULL || ccf->seeds.nelts == 0) {
            continue;
        }

        cl = ngx_pcalloc(cycle->pool, sizeof(ngx_http_simhash_cluster_t));
        if (cl == NULL) {
            return NGX_ERROR;
        }

        cl->conf = ccf;
        cl->zone = zones[i];
        cl->counts = ngx_http_simhash_part_shm(zones[i],
                                               ngx_http_simhash_cluster_part);
        if (cl->counts == NULL) {
            return NGX_ERROR;
        }

        cl->log = cycle->log;
        cl->pool = cycle->pool;
        ngx_memset(cl->owner, 0xff, sizeof(cl->owner));

        /* the entries' key, from the zone's stream key (sh_cluster.h) */
        if (sh_mac_derive(key, sizeof(key), zones[i]->mac_key,
                          sizeof(zones[i]->mac_key), "cluster")
            != 0
            || sh_cluster_layout_init(&cl->layout,
                                      (char *) ccf->prefix.data,
                                      ccf->prefix.len, 16, 16, key, err,
                                      sizeof(err))
               != 0)
        {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                          "simhash zone \"%V\": cluster: %s",
                          &zones[i]->name, err);
            return NGX_ERROR;
        }

        cl->refresh.handler = ngx_http_simhash_cluster_refresh_handler;
        cl->refresh.data = cl;
        cl->refresh.log = cycle->log;
        cl->refresh.cancelable = 1;

        ngx_http_simhash_cluster_backlog_init(cl);

        ccf->client = cl;

        seed = ccf->seeds.elts;

        for (j = 0; j < ccf->seeds.nelts; j++) {
            u_char  addr[NGX_SOCKADDR_STRLEN];

            last = addr + ngx_sock_ntop(seed[j].sockaddr, seed[j].socklen,
                                        addr, sizeof(addr), 1);
            (void) ngx_http_simhash_cluster_node(cl, addr, last - addr);
        }
    }

    return NGX_OK;
}


static void
ngx_http_simhash_cluster_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                        i, j, n;
    ngx_http_simhash_zone_t         **zones;
    ngx_http_simhash_cluster_conf_t  *ccf;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        ccf = ngx_http_simhash_part_conf(zones[i],
                                         ngx_http_simhash_cluster_part);
        if (ccf == NULL || ccf->client == NULL) {
            continue;
        }

        for (j = 0; j < ccf->client->nnodes; j++) {
            ngx_http_simhash_redis_close(&ccf->client->nodes[j]->rd);
        }

        /* after the connections: the writes in them came back to it */
        ngx_http_simhash_cluster_backlog_exit(ccf->client);

        if (ccf->client->refresh.timer_set) {
            ngx_del_timer(&ccf->client->refresh);
        }
    }
}
