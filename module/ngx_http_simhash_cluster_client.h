
/*
 * ngx_http_simhash_cluster_client.h -- a worker's client of the cluster,
 * shared by its three files: the nodes and the slot map
 * (ngx_http_simhash_cluster.c), the lookups (_cluster_lookup.c) and the
 * node's writes (_cluster_write.c).  The rest of the module sees only
 * ngx_http_simhash_cluster.h, which a file includes before this one (the
 * client's types are its types; including it from here would tie the two
 * headers into one another).
 */


#ifndef _NGX_HTTP_SIMHASH_CLUSTER_CLIENT_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_CLUSTER_CLIENT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_redis.h"


#define NGX_HTTP_SIMHASH_CLUSTER_NODES    64
#define NGX_HTTP_SIMHASH_CLUSTER_REFRESH  1000  /* ms, while incomplete */
#define NGX_HTTP_SIMHASH_CLUSTER_NOSLOT   0xffff
#define NGX_HTTP_SIMHASH_CLUSTER_BACKLOG  30000 /* writes a worker keeps */
#define NGX_HTTP_SIMHASH_CLUSTER_REPLAY   1000  /* ms between replays */


typedef struct {
    ngx_array_t                      seeds;    /* redis_conf_t */
    ngx_msec_t                       timeout;  /* a lookup's */
    ngx_str_t                        prefix;
    ngx_uint_t                       backlog;  /* writes a worker keeps */
    unsigned                         h_set:1;
    unsigned                         timeout_set:1;
    unsigned                         prefix_set:1;
    unsigned                         backlog_set:1;
    ngx_str_t                        tls_ca;    /* cluster_tls_*= */
    ngx_str_t                        tls_cert;
    ngx_str_t                        tls_key;
    ngx_str_t                        tls_name;
    ngx_http_simhash_cluster_t      *client;   /* this worker's */
} ngx_http_simhash_cluster_conf_t;


typedef struct {
    ngx_http_simhash_redis_conf_t    conf;
    ngx_http_simhash_redis_t         rd;
    u_char                           addr[NGX_SOCKADDR_STRLEN];
    size_t                           addr_len;
    u_char                           host[NGX_SOCKADDR_STRLEN];  /* TLS:
                                                  the name to check */
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

    /* the writes the cluster could not take, oldest first, and the timer
     * that writes them again (ngx_http_simhash_cluster_write.c) */
    ngx_queue_t                       backlog;
    ngx_uint_t                        nbacklog;
    ngx_event_t                       replay;
};


#define ngx_http_simhash_cluster_count(cl, f)                                \
    (void) ngx_atomic_fetch_add(&(cl)->counts->f, 1)


/* one APPEND (a chunk a node adds): in flight, kept to follow a
 * redirect, or in the backlog; its chunk follows it in one allocation */
typedef struct {
    ngx_http_simhash_cluster_t       *cl;
    ngx_queue_t                       queue;    /* in the backlog */
    ngx_uint_t                        hops;
    unsigned                          queued:1; /* was in the backlog */
    size_t                            key_len;
    size_t                            len;
    char                              key[SH_CLUSTER_KEY_MAX];
    u_char                           *chunk;
} ngx_http_simhash_cluster_write_t;


/* Read the slot map again (one refresh at a time). */
void ngx_http_simhash_cluster_refresh(ngx_http_simhash_cluster_t *cl);

/* The node of "HOST:PORT", connected if it is new; NULL: too many. */
ngx_http_simhash_cluster_node_t *ngx_http_simhash_cluster_node(
    ngx_http_simhash_cluster_t *cl, u_char *addr, size_t len);

/* Why n (NULL: the map) cannot be used: DENIED, else UNREACHABLE (NULL:
 * STARTING). */
ngx_http_simhash_cluster_cause_e ngx_http_simhash_cluster_cause(
    ngx_http_simhash_cluster_t *cl, ngx_http_simhash_cluster_node_t *n);

/* The node a MOVED or ASK error reply names, or NULL. */
ngx_http_simhash_cluster_node_t *ngx_http_simhash_cluster_redirect(
    ngx_http_simhash_cluster_t *cl, redisReply *reply);

/* ASKING to n, before a command redirected by ASK. */
ngx_int_t ngx_http_simhash_cluster_asking(ngx_http_simhash_cluster_node_t *n);

/* The backlog: made empty at the worker's start, counted as dropped and
 * freed at its exit (ngx_http_simhash_cluster_write.c). */
void ngx_http_simhash_cluster_backlog_init(ngx_http_simhash_cluster_t *cl);
void ngx_http_simhash_cluster_backlog_exit(ngx_http_simhash_cluster_t *cl);

/* A candidate's key text bucket, read beside its record (idx: the
 * candidate); the one the chosen record names, as the lookup's key; the
 * copies freed with the lookup (ngx_http_simhash_cluster_text.c). */
void ngx_http_simhash_cluster_text_got(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_uint_t idx, uint32_t bucket, redisReply *reply);
void ngx_http_simhash_cluster_text_name(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_uint_t idx);
void ngx_http_simhash_cluster_text_free(ngx_http_simhash_cluster_lookup_t *lk);


#endif /* _NGX_HTTP_SIMHASH_CLUSTER_CLIENT_H_INCLUDED_ */
