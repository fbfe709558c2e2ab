
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
#include "ngx_http_simhash_redis.h"

#include "sh_index.h"
#include "sh_mac.h"


#define NGX_HTTP_SIMHASH_CLUSTER_NODES    64
#define NGX_HTTP_SIMHASH_CLUSTER_PROBES   64    /* buckets a lookup */
#define NGX_HTTP_SIMHASH_CLUSTER_REFRESH  1000  /* ms, while incomplete */
#define NGX_HTTP_SIMHASH_CLUSTER_NOSLOT   0xffff


typedef struct {
    ngx_array_t                      seeds;    /* redis_conf_t */
    ngx_msec_t                       timeout;  /* a lookup's */
    ngx_str_t                        prefix;
    unsigned                         h_set:1;
    ngx_http_simhash_cluster_t      *client;   /* this worker's */
} ngx_http_simhash_cluster_conf_t;


typedef struct {
    ngx_http_simhash_redis_conf_t    conf;
    ngx_http_simhash_redis_t         rd;
    u_char                           addr[NGX_SOCKADDR_STRLEN];
    size_t                           addr_len;
    ngx_atomic_t                     reconnects;
    ngx_http_simhash_cluster_t      *cl;
} ngx_http_simhash_cluster_node_t;


/* one GET in flight; freed with its lookup */
typedef struct {
    ngx_http_simhash_cluster_lookup_t  *lk;
    uint32_t                            bucket;
    ngx_uint_t                          idx;      /* records: candidate */
    ngx_uint_t                          hops;     /* MOVED/ASK followed */
    char                                kind;
    char                                key[SH_CLUSTER_KEY_MAX];
    size_t                              key_len;
} ngx_http_simhash_cluster_probe_t;


struct ngx_http_simhash_cluster_s {
    ngx_http_simhash_cluster_conf_t  *conf;
    ngx_http_simhash_zone_t          *zone;
    ngx_log_t                        *log;
    ngx_pool_t                       *pool;
    sh_cluster_layout_t               layout;
    ngx_uint_t                        have_map;
    ngx_uint_t                        have_layout;
    ngx_uint_t                        refreshing;
    ngx_event_t                       refresh;
    unsigned                          k;           /* probes a lookup */
    ngx_uint_t                        nnodes;
    ngx_http_simhash_cluster_node_t  *nodes[NGX_HTTP_SIMHASH_CLUSTER_NODES];
    uint16_t                          owner[SH_CLUSTER_SLOTS];

    /* every worker's counts, in the zone's shared state */
    ngx_http_simhash_cluster_counts_t  *counts;
};


#define ngx_http_simhash_cluster_count(cl, f)                                \
    (void) ngx_atomic_fetch_add(&(cl)->counts->f, 1)


/* one APPEND in flight (a chunk a node adds), kept to follow a redirect */
typedef struct {
    ngx_http_simhash_cluster_t       *cl;
    ngx_uint_t                        hops;
    size_t                            key_len;
    size_t                            len;
    char                              key[SH_CLUSTER_KEY_MAX];
    u_char                            chunk[128];
} ngx_http_simhash_cluster_write_t;


/* the statistics' labels of incomplete lookups: the causes but OK */
ngx_str_t  ngx_http_simhash_cluster_cause_names[] = {
    ngx_string("starting"), ngx_string("unreachable"), ngx_string("timeout"),
    ngx_string("unserved"), ngx_string("clusterdown"), ngx_string("error")
};


const char *ngx_http_simhash_cluster_causes[] = {
    "", "starting", "unreachable", "timeout", "unserved", "clusterdown",
    "error"
};


static void *ngx_http_simhash_cluster_create_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
static ngx_int_t ngx_http_simhash_cluster_param(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_str_t *value);
static ngx_int_t ngx_http_simhash_cluster_init_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_cluster_exit_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_cluster_send(ngx_http_simhash_cluster_t *cl,
    ngx_http_simhash_cluster_probe_t *pr, ngx_http_simhash_cluster_node_t *n,
    ngx_uint_t asking);
static void ngx_http_simhash_cluster_refresh(ngx_http_simhash_cluster_t *cl);
static void ngx_http_simhash_cluster_read_layout(
    ngx_http_simhash_cluster_t *cl, char *key, size_t len);
static void ngx_http_simhash_cluster_finish(
    ngx_http_simhash_cluster_lookup_t *lk);


ngx_http_simhash_part_t  ngx_http_simhash_cluster_part = {
    ngx_string("cluster"),
    0,                                      /* index */
    ngx_null_string,                        /* tail_name */
    sizeof(ngx_http_simhash_cluster_counts_t),  /* shctx_size */

    ngx_http_simhash_cluster_create_conf,   /* create_conf */
    ngx_http_simhash_cluster_param,         /* param */
    NULL,                                   /* conf_done */
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

    if (value->len > 8 && ngx_strncmp(value->data, "cluster=", 8) == 0) {
        p = value->data + 8;
        last = value->data + value->len;

        while (p < last) {
            comma = ngx_strlchr(p, last, ',');
            url.data = p;
            url.len = (comma ? comma : last) - p;

            rc = ngx_array_push(&ccf->seeds);
            if (rc == NULL) {
                return NGX_ERROR;
            }

            ngx_memzero(rc, sizeof(ngx_http_simhash_redis_conf_t));
            rc->timeout = 1000;

            if (url.len == 0
                || ngx_http_simhash_redis_url(cf, rc, &url) != NGX_CONF_OK)
            {
                if (url.len == 0) {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                       "simhash zone \"%V\": an empty "
                                       "address in \"%V\"", &zone->name,
                                       value);
                }
                return NGX_ERROR;
            }

            if (rc->db != 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "simhash zone \"%V\": a Redis Cluster "
                                   "has only database 0 (\"%V\")",
                                   &zone->name, &url);
                return NGX_ERROR;
            }

            p = comma ? comma + 1 : last;

            if (comma && p == last) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "simhash zone \"%V\": an empty "
                                   "address in \"%V\"", &zone->name, value);
                return NGX_ERROR;
            }
        }

        return NGX_OK;
    }

    if (value->len > 16
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
        return NGX_OK;
    }

    if (value->len > 15
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
        return NGX_OK;
    }

    return NGX_DECLINED;
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
static ngx_http_simhash_cluster_node_t *
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
                  "buckets of %ui and %ui bits, about %ui probes a lookup",
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
static void
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


/* ---- lookups ---- */

static void
ngx_http_simhash_cluster_free(ngx_http_simhash_cluster_lookup_t *lk)
{
    if (lk->finished && lk->pending == 0 && !lk->post.posted
        && !lk->starting)
    {
        if (lk->timer.timer_set) {
            ngx_del_timer(&lk->timer);
        }

        ngx_free(lk->probes);
        ngx_free(lk);
    }
}


/* A lookup's outcome and how long it took, for the statistics. */
static void
ngx_http_simhash_cluster_counted(ngx_http_simhash_cluster_lookup_t *lk)
{
    ngx_uint_t                          i;
    ngx_msec_t                          ms;
    ngx_http_simhash_cluster_counts_t  *c = lk->cl->counts;

    switch (lk->status) {

    case NGX_HTTP_SIMHASH_CLUSTER_FOUND:
        (void) ngx_atomic_fetch_add(&c->found, 1);
        break;

    case NGX_HTTP_SIMHASH_CLUSTER_NEW:
        (void) ngx_atomic_fetch_add(&c->new, 1);
        break;

    default:
        (void) ngx_atomic_fetch_add(&c->incomplete[lk->cause - 1], 1);
    }

    ms = ngx_current_msec - lk->started;

    for (i = 0; i < NGX_HTTP_SIMHASH_NLAG - 1; i++) {
        if (ms <= ngx_http_simhash_lag_le[i]) {
            break;
        }
    }

    (void) ngx_atomic_fetch_add(&c->ms_le[i], 1);
    (void) ngx_atomic_fetch_add(&c->ms_sum, ms);
}


static void
ngx_http_simhash_cluster_end(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_http_simhash_cluster_status_e status,
    ngx_http_simhash_cluster_cause_e cause)
{
    ngx_http_simhash_cluster_done_pt  done;

    if (lk->finished) {
        return;
    }

    lk->finished = 1;
    lk->status = status;
    lk->cause = cause;

    ngx_http_simhash_cluster_counted(lk);

    if (lk->timer.timer_set) {
        ngx_del_timer(&lk->timer);
    }

    if (lk->starting) {
        return;                     /* the posted event calls done */
    }

    done = lk->done;
    lk->done = NULL;

    if (done) {
        done(lk);
    }
}


/* A probe that cannot be answered makes the whole lookup incomplete. */
static void
ngx_http_simhash_cluster_fail(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_http_simhash_cluster_cause_e cause)
{
    ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE,
                                 cause);
}


static void
ngx_http_simhash_cluster_timer_handler(ngx_event_t *ev)
{
    ngx_http_simhash_cluster_lookup_t  *lk = ev->data;

    ngx_http_simhash_cluster_fail(lk, NGX_HTTP_SIMHASH_CLUSTER_TIMEOUT);
    ngx_http_simhash_cluster_free(lk);
}


/* "MOVED 3999 127.0.0.1:6381" or "ASK ...": the node named */
static ngx_http_simhash_cluster_node_t *
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


/* An error reply: followed (MOVED, ASK), or the lookup's end. */
static void
ngx_http_simhash_cluster_error(ngx_http_simhash_cluster_probe_t *pr,
    redisReply *reply)
{
    ngx_http_simhash_cluster_lookup_t  *lk = pr->lk;
    ngx_http_simhash_cluster_t         *cl = lk->cl;
    ngx_http_simhash_cluster_node_t    *n;
    ngx_uint_t                          ask;

    ask = reply->len > 4 && ngx_strncmp(reply->str, "ASK ", 4) == 0;

    if (ask || (reply->len > 6 && ngx_strncmp(reply->str, "MOVED ", 6) == 0))
    {
        if (ask) {
            ngx_http_simhash_cluster_count(cl, asked);

        } else {
            ngx_http_simhash_cluster_count(cl, moved);
            ngx_http_simhash_cluster_refresh(cl);
        }

        n = ngx_http_simhash_cluster_redirect(cl, reply);

        if (n == NULL || pr->hops++ >= 3) {
            ngx_http_simhash_cluster_fail(lk, NGX_HTTP_SIMHASH_CLUSTER_ERROR);
            return;
        }

        ngx_http_simhash_cluster_send(cl, pr, n, ask);
        return;
    }

    if ((reply->len >= 11 && ngx_strncmp(reply->str, "CLUSTERDOWN", 11) == 0)
        || (reply->len >= 8 && ngx_strncmp(reply->str, "TRYAGAIN", 8) == 0))
    {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_fail(lk, NGX_HTTP_SIMHASH_CLUSTER_DOWN);
        return;
    }

    ngx_log_error(NGX_LOG_ERR, cl->log, 0,
                  "simhash zone \"%V\": cluster GET %*s: %*s",
                  &cl->zone->name, pr->key_len, pr->key, reply->len,
                  reply->str);
    ngx_http_simhash_cluster_fail(lk, NGX_HTTP_SIMHASH_CLUSTER_ERROR);
}


static void
ngx_http_simhash_cluster_asking_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    /* +OK; the GET after it says how it went */
}


/* Entries near the page, merged into the lookup's closest few. */
static void
ngx_http_simhash_cluster_candidates(ngx_http_simhash_cluster_lookup_t *lk,
    sh_cluster_fpent_t *got, size_t n)
{
    size_t    i, j, max = sizeof(lk->cand) / sizeof(lk->cand[0]);
    unsigned  d;

    for (i = 0; i < n; i++) {
        d = (unsigned) __builtin_popcountll(got[i].fp ^ lk->fp);

        if (lk->ncand == max && lk->cdist[max - 1] <= d) {
            continue;
        }

        j = lk->ncand < max ? lk->ncand++ : max - 1;

        while (j > 0 && lk->cdist[j - 1] > d) {
            lk->cand[j] = lk->cand[j - 1];
            lk->cdist[j] = lk->cdist[j - 1];
            j--;
        }

        lk->cand[j] = got[i];
        lk->cdist[j] = d;
    }
}


static void
ngx_http_simhash_cluster_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_cluster_probe_t   *pr = data;
    ngx_http_simhash_cluster_lookup_t  *lk = pr->lk;
    ngx_http_simhash_cluster_t         *cl = lk->cl;
    sh_cluster_fpent_t                  got[4];
    sh_cluster_read_t                   read;
    size_t                              n;

    lk->pending--;

    if (lk->finished) {
        ngx_http_simhash_cluster_free(lk);
        return;
    }

    if (reply == NULL) {
        /* the connection went with the GET in it: its node may be gone
         * for good (a failover), so the map is read again */
        ngx_http_simhash_cluster_fail(lk,
                                      NGX_HTTP_SIMHASH_CLUSTER_UNREACHABLE);
        ngx_http_simhash_cluster_free(lk);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_cluster_error(pr, reply);
        ngx_http_simhash_cluster_free(lk);
        return;
    }

    if (reply->type == REDIS_REPLY_STRING) {
        if (pr->kind == SH_CLUSTER_FP) {
            n = sh_cluster_near(&cl->layout, pr->bucket,
                                (u_char *) reply->str, reply->len, lk->fp,
                                lk->h, got, 4, &read);
            ngx_http_simhash_cluster_candidates(lk, got, n < 4 ? n : 4);

        } else {
            lk->chave[pr->idx] = sh_cluster_find_entry_rec(&cl->layout,
                                     pr->bucket, (u_char *) reply->str,
                                     reply->len, &lk->cand[pr->idx],
                                     &lk->crec[pr->idx], &read);
        }

        lk->forged += read.forged;
    }

    if (lk->pending == 0) {
        ngx_http_simhash_cluster_finish(lk);
    }

    ngx_http_simhash_cluster_free(lk);
}


/*
 * ASKING before a command to a node importing the slot (a redirection by
 * ASK): the node answers the next command for that slot once.
 */

static ngx_int_t
ngx_http_simhash_cluster_asking(ngx_http_simhash_cluster_node_t *n)
{
    const char  *argv[1];
    size_t       argvlen[1];

    argv[0] = "ASKING";
    argvlen[0] = 6;

    return ngx_http_simhash_redis_command(&n->rd,
               ngx_http_simhash_cluster_asking_reply, NULL, 1, argv, argvlen);
}


static void
ngx_http_simhash_cluster_send(ngx_http_simhash_cluster_t *cl,
    ngx_http_simhash_cluster_probe_t *pr, ngx_http_simhash_cluster_node_t *n,
    ngx_uint_t asking)
{
    const char  *argv[2];
    size_t       argvlen[2];

    if (asking && ngx_http_simhash_cluster_asking(n) != NGX_OK) {
        goto unreachable;
    }

    argv[0] = "GET";
    argvlen[0] = 3;
    argv[1] = pr->key;
    argvlen[1] = pr->key_len;

    if (ngx_http_simhash_redis_command(&n->rd, ngx_http_simhash_cluster_reply,
                                       pr, 2, argv, argvlen)
        != NGX_OK)
    {
        goto unreachable;
    }

    pr->lk->pending++;
    return;

unreachable:

    ngx_http_simhash_cluster_refresh(cl);
    ngx_http_simhash_cluster_fail(pr->lk,
                                  NGX_HTTP_SIMHASH_CLUSTER_UNREACHABLE);
}


/* A GET of a bucket to the master of its slot. */
static void
ngx_http_simhash_cluster_get(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_http_simhash_cluster_probe_t *pr, char kind, uint32_t bucket,
    ngx_uint_t idx)
{
    ngx_http_simhash_cluster_t  *cl = lk->cl;
    ngx_uint_t                   o;

    pr->lk = lk;
    pr->kind = kind;
    pr->bucket = bucket;
    pr->idx = idx;
    pr->hops = 0;
    pr->key_len = sh_cluster_key(&cl->layout, kind, bucket, pr->key);

    o = cl->owner[sh_cluster_slot(pr->key, pr->key_len)];

    if (o == NGX_HTTP_SIMHASH_CLUSTER_NOSLOT) {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_fail(lk, NGX_HTTP_SIMHASH_CLUSTER_UNSERVED);
        return;
    }

    ngx_http_simhash_cluster_send(cl, pr, cl->nodes[o], 0);
}


/* Every reply of a round in: the next round, or the outcome. */
static void
ngx_http_simhash_cluster_finish(ngx_http_simhash_cluster_lookup_t *lk)
{
    ngx_http_simhash_cluster_probe_t  *pr = lk->probes;
    ngx_uint_t                         i;

    if (lk->phase == 0) {
        if (lk->ncand == 0) {
            ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_NEW,
                                         NGX_HTTP_SIMHASH_CLUSTER_OK);
            return;
        }

        /* the candidates' records: their sketches, their whole id, and
         * whether each is still its document's fingerprint */
        lk->phase = 1;

        for (i = 0; i < lk->ncand && !lk->finished; i++) {
            ngx_http_simhash_cluster_get(lk, &pr[i], SH_CLUSTER_REC,
                sh_cluster_rec_bucket(&lk->cl->layout, lk->cand[i].id), i);
        }

        return;
    }

    for (i = 0; i < lk->ncand; i++) {
        if (lk->chave[i]) {
            lk->rec = lk->crec[i];
            lk->distance = lk->cdist[i];
            ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_FOUND,
                                         NGX_HTTP_SIMHASH_CLUSTER_OK);
            return;
        }
    }

    /* near entries of documents that have changed since: nothing near */
    ngx_http_simhash_cluster_end(lk, NGX_HTTP_SIMHASH_CLUSTER_NEW,
                                 NGX_HTTP_SIMHASH_CLUSTER_OK);
}


/* The outcome of a lookup that ended while it started. */
static void
ngx_http_simhash_cluster_posted(ngx_event_t *ev)
{
    ngx_http_simhash_cluster_lookup_t  *lk = ev->data;
    ngx_http_simhash_cluster_done_pt    done;

    done = lk->done;
    lk->done = NULL;

    if (done) {
        done(lk);
    }

    ngx_http_simhash_cluster_free(lk);
}


void
ngx_http_simhash_cluster_cancel(ngx_http_simhash_cluster_lookup_t *lk)
{
    lk->done = NULL;
}


ngx_http_simhash_cluster_lookup_t *
ngx_http_simhash_cluster_lookup(ngx_http_simhash_cluster_t *cl, uint64_t fp,
    const float *w, unsigned h, float recall, const sh_volatility_t *vol,
    ngx_http_simhash_cluster_done_pt done, void *data)
{
    uint32_t                            buckets[NGX_HTTP_SIMHASH_CLUSTER_PROBES];
    size_t                              n, i;
    ngx_http_simhash_cluster_lookup_t  *lk;
    ngx_http_simhash_cluster_probe_t   *pr;

    lk = ngx_calloc(sizeof(ngx_http_simhash_cluster_lookup_t), cl->log);
    pr = ngx_calloc(NGX_HTTP_SIMHASH_CLUSTER_PROBES * sizeof(*pr), cl->log);
    if (lk == NULL || pr == NULL) {
        ngx_free(lk);
        ngx_free(pr);
        return NULL;
    }

    lk->fp = fp;
    lk->h = h;
    lk->done = done;
    lk->data = data;
    lk->cl = cl;
    lk->probes = pr;
    lk->started = ngx_current_msec;
    lk->timer.handler = ngx_http_simhash_cluster_timer_handler;
    lk->timer.data = lk;
    lk->timer.log = cl->log;
    lk->timer.cancelable = 1;

    ngx_http_simhash_cluster_count(cl, lookups);

    /* the outcome is always given from an event of its own: a caller's
     * done never runs inside its own call */
    lk->starting = 1;

    if (!cl->have_map || !cl->have_layout) {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_fail(lk, NGX_HTTP_SIMHASH_CLUSTER_STARTING);

    } else {
        n = sh_cluster_probes(&cl->layout, fp, w, h,
                              sh_cluster_probes_for(&cl->layout, h, recall,
                                                    vol),
                              vol, buckets, NGX_HTTP_SIMHASH_CLUSTER_PROBES);

        for (i = 0; i < n && !lk->finished; i++) {
            ngx_http_simhash_cluster_get(lk, &pr[i], SH_CLUSTER_FP,
                                         buckets[i], i);
        }

        /* a probe that failed at once has ended the lookup: no timer */
        if (!lk->finished) {
            ngx_add_timer(&lk->timer, cl->conf->timeout);
        }
    }

    lk->starting = 0;

    if (lk->finished) {
        lk->post.handler = ngx_http_simhash_cluster_posted;
        lk->post.data = lk;
        lk->post.log = cl->log;
        ngx_post_event(&lk->post, &ngx_posted_events);
    }

    return lk;
}


/* ---- a node's new documents, written to the cluster ---- */

static void ngx_http_simhash_cluster_append(ngx_http_simhash_cluster_write_t *w,
    ngx_http_simhash_cluster_node_t *n, ngx_uint_t asking);


/*
 * An APPEND's reply: an integer (the bucket's new length) is done; MOVED
 * and ASK are followed (a slot being moved loses no write); anything
 * else, or the connection gone with it, is a write lost, counted and
 * logged.  Nobody waits for it.
 */

static void
ngx_http_simhash_cluster_append_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_cluster_write_t  *w = data;
    ngx_http_simhash_cluster_t        *cl = w->cl;
    ngx_http_simhash_cluster_node_t   *n;
    ngx_uint_t                         ask;

    if (reply != NULL && reply->type == REDIS_REPLY_INTEGER) {
        ngx_free(w);
        return;
    }

    if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
        ask = reply->len > 4 && ngx_strncmp(reply->str, "ASK ", 4) == 0;

        if (ask || (reply->len > 6
                    && ngx_strncmp(reply->str, "MOVED ", 6) == 0))
        {
            if (ask) {
                ngx_http_simhash_cluster_count(cl, asked);

            } else {
                ngx_http_simhash_cluster_count(cl, moved);
                ngx_http_simhash_cluster_refresh(cl);
            }

            n = ngx_http_simhash_cluster_redirect(cl, reply);

            if (n != NULL && w->hops++ < 3) {
                ngx_http_simhash_cluster_append(w, n, ask);
                return;
            }
        }

        ngx_log_error(NGX_LOG_WARN, cl->log, 0,
                      "simhash zone \"%V\": cluster APPEND %*s: %*s",
                      &cl->zone->name, w->key_len, w->key,
                      reply->len, reply->str);

    } else {
        ngx_http_simhash_cluster_refresh(cl);
    }

    ngx_http_simhash_cluster_count(cl, write_errors);
    ngx_free(w);
}


static void
ngx_http_simhash_cluster_append(ngx_http_simhash_cluster_write_t *w,
    ngx_http_simhash_cluster_node_t *n, ngx_uint_t asking)
{
    const char  *argv[3];
    size_t       argvlen[3];

    if (asking && ngx_http_simhash_cluster_asking(n) != NGX_OK) {
        goto failed;
    }

    argv[0] = "APPEND";
    argvlen[0] = 6;
    argv[1] = w->key;
    argvlen[1] = w->key_len;
    argv[2] = (const char *) w->chunk;
    argvlen[2] = w->len;

    if (ngx_http_simhash_redis_command(&n->rd,
            ngx_http_simhash_cluster_append_reply, w, 3, argv, argvlen)
        == NGX_OK)
    {
        return;
    }

failed:

    ngx_http_simhash_cluster_refresh(w->cl);
    ngx_http_simhash_cluster_count(w->cl, write_errors);
    ngx_free(w);
}


/* one chunk of one entry to its bucket's master */
static void
ngx_http_simhash_cluster_put(ngx_http_simhash_cluster_t *cl, int kind,
    const sh_cluster_rec_t *rec)
{
    uint32_t                           bucket;
    ngx_uint_t                         o;
    sh_cluster_fpent_t                 e;
    ngx_http_simhash_cluster_write_t  *w;

    w = ngx_alloc(sizeof(ngx_http_simhash_cluster_write_t), cl->log);
    if (w == NULL) {
        ngx_http_simhash_cluster_count(cl, write_errors);
        return;
    }

    w->cl = cl;
    w->hops = 0;

    if (kind == SH_CLUSTER_FP) {
        e.fp = rec->fp;
        e.id = rec->kh;
        bucket = sh_cluster_fp_bucket(&cl->layout, rec->fp);
        w->len = sh_cluster_encode_fp(&cl->layout, bucket, &e, 1, w->chunk);

    } else {
        bucket = sh_cluster_rec_bucket(&cl->layout, rec->kh);
        w->len = sh_cluster_encode_rec(&cl->layout, bucket, rec, 1,
                                       w->chunk);
    }

    w->key_len = sh_cluster_key(&cl->layout, kind, bucket, w->key);
    o = cl->owner[sh_cluster_slot(w->key, w->key_len)];

    if (w->len == 0 || o == NGX_HTTP_SIMHASH_CLUSTER_NOSLOT) {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_count(cl, write_errors);
        ngx_free(w);
        return;
    }

    ngx_http_simhash_cluster_append(w, cl->nodes[o], 0);
}


void
ngx_http_simhash_cluster_add(ngx_http_simhash_cluster_t *cl,
    const sh_cluster_rec_t *rec)
{
    ngx_http_simhash_cluster_count(cl, writes);

    if (!cl->have_map || !cl->have_layout
        || sh_cluster_chunk_size(&cl->layout, SH_CLUSTER_REC, 1) > 128
        || sh_cluster_chunk_size(&cl->layout, SH_CLUSTER_FP, 1) > 128)
    {
        ngx_http_simhash_cluster_refresh(cl);
        ngx_http_simhash_cluster_count(cl, write_errors);
        return;
    }

    /* two masters, in no order: a table entry read before its record is
     * there is taken for a document that has changed since (nothing
     * near), never for a false one */
    ngx_http_simhash_cluster_put(cl, SH_CLUSTER_REC, rec);
    ngx_http_simhash_cluster_put(cl, SH_CLUSTER_FP, rec);
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

        if (ccf->client->refresh.timer_set) {
            ngx_del_timer(&ccf->client->refresh);
        }
    }
}
