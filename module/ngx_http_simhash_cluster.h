
/*
 * ngx_http_simhash_cluster.h -- the tier's shared index in a Redis
 * Cluster, asked from nginx's event loop (simhash_zone ... cluster=URL,...).
 *
 * Each worker keeps a connection to every master (the project's own
 * non-blocking connection, ngx_http_simhash_redis.c) and the slot map,
 * read with CLUSTER SLOTS when the worker starts and again whenever a
 * node answers MOVED.  A lookup sends its probes (a GET of each bucket
 * src/sh_cluster.h names, pipelined: one round trip to each master that
 * owns a probed bucket) and, when an entry is near, a second round trip
 * for the candidates' records.  ASK is followed (ASKING, then the GET, to
 * the node named).  A timer bounds each lookup.
 *
 * A lookup ends in one of three ways, and a caller must never take the
 * third for the second:
 *
 *   FOUND       a current document within the radius: its record
 *   NEW         every probe was answered, none holds such a document
 *   INCOMPLETE  a probe could not be answered: its cause says why (no
 *               connection to the master, the timeout, a slot no master
 *               serves, CLUSTERDOWN or another error, the layout not read
 *               yet, the user refused); what was read is not an answer
 *
 * A lookup for a page's key (ngx_http_simhash_cluster_lookup_key) also
 * reads that key's record bucket, in the same round trip as the probes
 * (one more GET in the pipeline to its master), and may end a fourth way:
 *
 *   KNOWN       the cluster holds a record of the key itself (a re-fetch
 *               of a page some node stored): its newest version, for the
 *               caller to answer unchanged or changed, as soon as that
 *               reply is in; the probes are not needed (a re-fetch is
 *               never a duplicate), and one that failed does not count
 *
 * The key's record GET that cannot be answered makes the lookup
 * INCOMPLETE as a probe does, and so does a probe that failed when the
 * record's bucket holds no record of the key: a key not read is not taken
 * for a new one.
 */


#ifndef _NGX_HTTP_SIMHASH_CLUSTER_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_CLUSTER_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash.h"
#include "sh_cluster.h"


typedef enum {
    NGX_HTTP_SIMHASH_CLUSTER_FOUND = 0,
    NGX_HTTP_SIMHASH_CLUSTER_NEW,
    NGX_HTTP_SIMHASH_CLUSTER_INCOMPLETE,
    NGX_HTTP_SIMHASH_CLUSTER_KNOWN      /* the key's own record: own */
} ngx_http_simhash_cluster_status_e;

/* why a lookup is incomplete (the counters' order) */
typedef enum {
    NGX_HTTP_SIMHASH_CLUSTER_OK = 0,
    NGX_HTTP_SIMHASH_CLUSTER_STARTING,      /* no slot map or layout yet */
    NGX_HTTP_SIMHASH_CLUSTER_UNREACHABLE,   /* no connection to a master */
    NGX_HTTP_SIMHASH_CLUSTER_TIMEOUT,
    NGX_HTTP_SIMHASH_CLUSTER_UNSERVED,      /* a slot of no master */
    NGX_HTTP_SIMHASH_CLUSTER_DOWN,          /* CLUSTERDOWN, TRYAGAIN */
    NGX_HTTP_SIMHASH_CLUSTER_ERROR,         /* another error reply */
    NGX_HTTP_SIMHASH_CLUSTER_DENIED,        /* the credentials or the
                                               user's rights refused */
    NGX_HTTP_SIMHASH_CLUSTER_CAUSES
} ngx_http_simhash_cluster_cause_e;

extern const char *ngx_http_simhash_cluster_causes[];
extern ngx_str_t   ngx_http_simhash_cluster_cause_names[];  /* but OK */

/*
 * The client's counts, every worker's, in the zone's shared state (the
 * statistics show them): lookups and their outcomes (refetches: answered
 * by the key's own record; incomplete by cause, from STARTING), how long
 * each took (from its start, right after the page was fingerprinted and
 * missed in the zone, to the decision made on its outcome: in
 * microseconds, in the buckets of ngx_http_simhash_cluster_us_le, fine
 * enough below a millisecond for a lookup that takes a few hundred),
 * redirects followed, slot-map refreshes, the node's writes and those
 * lost, and its backlog: writes that failed for want of the cluster, kept
 * (queued), written when it answered again (replayed), or lost (dropped:
 * the backlog full, or the worker gone).
 */
#define NGX_HTTP_SIMHASH_CLUSTER_NUS  17
extern uint64_t  ngx_http_simhash_cluster_us_le[NGX_HTTP_SIMHASH_CLUSTER_NUS];
extern ngx_str_t  ngx_http_simhash_cluster_us_names[2]
                                          [NGX_HTTP_SIMHASH_CLUSTER_NUS + 2];

typedef struct {
    ngx_atomic_t                       lookups;
    ngx_atomic_t                       found;
    ngx_atomic_t                       new;
    ngx_atomic_t                       refetches;
    ngx_atomic_t                       incomplete[NGX_HTTP_SIMHASH_CLUSTER_CAUSES
                                                  - 1];
    ngx_atomic_t                       moved;
    ngx_atomic_t                       asked;
    ngx_atomic_t                       refreshes;
    ngx_atomic_t                       writes;
    ngx_atomic_t                       write_errors;
    ngx_atomic_t                       backlog_queued;    /* writes kept */
    ngx_atomic_t                       backlog_replayed;  /* then written */
    ngx_atomic_t                       backlog_dropped;   /* then lost */
    ngx_atomic_t                       us_le[NGX_HTTP_SIMHASH_CLUSTER_NUS];
    ngx_atomic_t                       us_sum;
} ngx_http_simhash_cluster_counts_t;

/* A monotonic clock in microseconds (a lookup's times) */
uint64_t ngx_http_simhash_cluster_usec(void);

/* A zone's, or NULL if it has no cluster= */
ngx_http_simhash_cluster_counts_t *ngx_http_simhash_cluster_counts(
    ngx_http_simhash_zone_t *zone);

typedef struct ngx_http_simhash_cluster_s         ngx_http_simhash_cluster_t;
typedef struct ngx_http_simhash_cluster_lookup_s
    ngx_http_simhash_cluster_lookup_t;

typedef void (*ngx_http_simhash_cluster_done_pt)(
    ngx_http_simhash_cluster_lookup_t *lk);

struct ngx_http_simhash_cluster_lookup_s {
    /* the caller's */
    uint64_t                           fp;
    uint64_t                           kh;      /* the key's hash, 0: none */
    unsigned                           h;
    ngx_http_simhash_cluster_done_pt   done;   /* NULL: cancelled */
    void                              *data;

    /* the outcome, when done is called */
    ngx_http_simhash_cluster_status_e  status;
    ngx_http_simhash_cluster_cause_e   cause;
    sh_cluster_rec_t                   rec;     /* FOUND: the original */
    ngx_str_t                          key;     /* FOUND: its key text, or
                                                   empty (none stored) */
    sh_cluster_rec_t                   own;     /* KNOWN: the key's */
    unsigned                           distance;
    uint64_t                           started;  /* us, monotonic */
    uint32_t                           forged;  /* chunks refused */
    size_t                             buckets; /* table buckets asked */

    /* the lookup's own (the client allocates and frees it) */
    ngx_http_simhash_cluster_t        *cl;
    void                              *probes;     /* GETs in flight */
    ngx_event_t                        timer;
    ngx_event_t                        post;       /* the outcome of a
                                                      lookup that ended in
                                                      its start */
    ngx_uint_t                         starting;
    ngx_uint_t                         pending;    /* replies awaited */
    ngx_uint_t                         tpending;   /* of them, key texts' */
    ngx_uint_t                         phase;      /* 0 probes, 1 records */
    ngx_uint_t                         finished;
    size_t                             ncand;
    sh_cluster_fpent_t                 cand[4];    /* closest first */
    unsigned                           cdist[4];
    sh_cluster_rec_t                   crec[4];
    ngx_uint_t                         chave[4];
    sh_cluster_text_t                  ctext[4];   /* their key text (a
                                                      copy), read beside */
    ngx_uint_t                         own_have;
    ngx_uint_t                         own_sent;   /* the key's record: */
    ngx_uint_t                         own_done;   /* asked, answered */
    ngx_http_simhash_cluster_cause_e   deferred;   /* a probe's failure
                                                      while it is out */
};


/*
 * Start a lookup of fp within h: the lookup, whose done(lk) is called
 * later with its outcome, never from within this call; NULL: no memory.
 * The buckets probed are ranked by the page's weights w (NULL: by
 * position only) under vol (NULL: the built-in table), as many as reach
 * `recall` of the near-duplicates within h, as the local index does:
 * the cluster's lookup finds what the zone's would.
 * The client frees it after done returns (and after the replies still
 * awaited have come or their connections have gone).  A caller that goes
 * first (a request finalized) cancels it: done is not called.
 */
ngx_http_simhash_cluster_lookup_t *ngx_http_simhash_cluster_lookup(
    ngx_http_simhash_cluster_t *cl, uint64_t fp, const float *w,
    unsigned h, float recall, const sh_volatility_t *vol,
    ngx_http_simhash_cluster_done_pt done, void *data);

/*
 * The same for a page whose key hashes to kh (sh_store_keyhash under the
 * tier's secret, as every node of the tier hashes it): the key's record
 * bucket is read with the probes, and a record of kh in it ends the
 * lookup KNOWN, with that record (its newest version) in own.
 */
ngx_http_simhash_cluster_lookup_t *ngx_http_simhash_cluster_lookup_key(
    ngx_http_simhash_cluster_t *cl, uint64_t kh, uint64_t fp, const float *w,
    unsigned h, float recall, const sh_volatility_t *vol,
    ngx_http_simhash_cluster_done_pt done, void *data);
void ngx_http_simhash_cluster_cancel(ngx_http_simhash_cluster_lookup_t *lk);

/*
 * A document this node stored, to the cluster: one chunk of one entry
 * APPENDed to its record bucket, one to its key text's bucket, then one
 * to its table bucket, each to its master, not waited for.  A write that
 * the cluster could not take (no connection to its master, the connection
 * lost with it, CLUSTERDOWN, TRYAGAIN, a slot of no master) is kept in
 * the worker's backlog and written again once the master answers; any
 * other failure is counted (write_errors) and logged.
 */
void ngx_http_simhash_cluster_add(ngx_http_simhash_cluster_t *cl,
    const sh_cluster_rec_t *rec, ngx_str_t *key);

/*
 * Whether this worker, which has read the cluster's slot map and layout,
 * reaches no node of it any more (every connection down): the node then
 * works alone, from its zone (the
 * decision stores what it cannot check, and the backlog takes it to the
 * cluster later).
 */
ngx_uint_t ngx_http_simhash_cluster_alone(ngx_http_simhash_cluster_t *cl);

/* This worker's client of a zone, or NULL if it has no cluster= */
ngx_http_simhash_cluster_t *ngx_http_simhash_cluster_of(
    ngx_http_simhash_zone_t *zone);

/*
 * The slot map as this worker holds it, for the statistics
 * (ngx_http_simhash_cluster_stats.c): JSON "cluster_nodes", and one
 * Prometheus family (0: the slots, 1: connected) a call, *head set until
 * its HELP and TYPE are written.
 */
size_t ngx_http_simhash_cluster_nodes_size(ngx_http_simhash_zone_t *zone);
u_char *ngx_http_simhash_cluster_nodes_json(u_char *p,
    ngx_http_simhash_zone_t *zone);
u_char *ngx_http_simhash_cluster_nodes_prom(u_char *p,
    ngx_http_simhash_zone_t *zone, ngx_uint_t family, ngx_uint_t *head);

/* simhash_cluster_query: a lookup by hand, answered as JSON */
char *ngx_http_simhash_cluster_query_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);

extern ngx_http_simhash_part_t  ngx_http_simhash_cluster_part;


#endif /* _NGX_HTTP_SIMHASH_CLUSTER_H_INCLUDED_ */
