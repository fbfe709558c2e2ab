
/*
 * The cluster's nodes in the statistics: the slot map as the worker that
 * answers the request holds it (each worker reads its own, so two
 * requests may come from two workers, a refresh apart), with each node's
 * connection.  In JSON "cluster_nodes": a node, the slots it serves (0: a
 * replica, or a master the map no longer names), their ranges (the first
 * NGX_HTTP_SIMHASH_CLUSTER_RANGES), whether the connection is ready, and
 * its reconnects; in Prometheus simhash_cluster_node_slots{zone,node} and
 * simhash_cluster_node_connected{zone,node}.  The client's counts (every
 * worker's, in the zone's shared memory) are the statistics' "cluster"
 * group (ngx_http_simhash_stats.c).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_cluster.h"
#include "ngx_http_simhash_cluster_client.h"
#include "ngx_http_simhash_redis.h"


#define NGX_HTTP_SIMHASH_CLUSTER_RANGES  8


static ngx_str_t  ngx_http_simhash_cluster_node_families[] = {
    ngx_string("cluster_node_slots"),
    ngx_string("cluster_node_connected")
};

static ngx_str_t  ngx_http_simhash_cluster_node_help[] = {
    ngx_string("Hash slots the node serves in the slot map of the worker "
               "that answered."),
    ngx_string("1 if that worker's connection to the node is ready.")
};


static ngx_http_simhash_cluster_t *
ngx_http_simhash_cluster_shown(ngx_http_simhash_zone_t *zone)
{
    if (ngx_http_simhash_cluster_counts(zone) == NULL) {
        return NULL;
    }

    return ngx_http_simhash_cluster_of(zone);
}


/* the slots node k serves; its ranges "LO-HI,..." into *p if p */

static ngx_uint_t
ngx_http_simhash_cluster_slots_of(ngx_http_simhash_cluster_t *cl,
    ngx_uint_t k, u_char **p)
{
    ngx_uint_t  s, lo, slots, ranges;

    slots = 0;
    ranges = 0;

    for (s = 0; s < SH_CLUSTER_SLOTS; s++) {
        if (cl->owner[s] != k) {
            continue;
        }

        for (lo = s; s + 1 < SH_CLUSTER_SLOTS && cl->owner[s + 1] == k; s++) {
            /* the range's end */
        }

        slots += s - lo + 1;

        if (p && ranges++ < NGX_HTTP_SIMHASH_CLUSTER_RANGES) {
            *p = ngx_sprintf(*p, "%s%ui", ranges > 1 ? "," : "", lo);

            if (s > lo) {
                *p = ngx_sprintf(*p, "-%ui", s);
            }

        } else if (p && ranges == NGX_HTTP_SIMHASH_CLUSTER_RANGES + 1) {
            *p = ngx_cpymem(*p, ",...", 4);
        }
    }

    return slots;
}


size_t
ngx_http_simhash_cluster_nodes_size(ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_cluster_t  *cl;

    cl = ngx_http_simhash_cluster_shown(zone);
    if (cl == NULL) {
        return 0;
    }

    /* a node: JSON and both series, its name escaped (3 bytes a byte) */
    return sizeof(",\"cluster_nodes\":[]") + 2 * 256
           + cl->nnodes * (3 * 3 * NGX_SOCKADDR_STRLEN + 3 * zone->name.len
                           + NGX_HTTP_SIMHASH_CLUSTER_RANGES * 12 + 256);
}


u_char *
ngx_http_simhash_cluster_nodes_json(u_char *p, ngx_http_simhash_zone_t *zone)
{
    ngx_uint_t                        k;
    ngx_http_simhash_cluster_t       *cl;
    ngx_http_simhash_cluster_node_t  *n;

    cl = ngx_http_simhash_cluster_shown(zone);
    if (cl == NULL) {
        return p;
    }

    p = ngx_cpymem(p, ",\"cluster_nodes\":[", sizeof(",\"cluster_nodes\":[")
                                             - 1);

    for (k = 0; k < cl->nnodes; k++) {
        n = cl->nodes[k];

        p = ngx_sprintf(p, "%s{\"node\":\"", k ? "," : "");
        p = ngx_http_simhash_text_escape(p, n->addr, n->addr_len);
        p = ngx_cpymem(p, "\",\"ranges\":\"", sizeof("\",\"ranges\":\"") - 1);

        (void) ngx_http_simhash_cluster_slots_of(cl, k, &p);

        p = ngx_sprintf(p, "\",\"slots\":%ui,\"connected\":%ui,"
                        "\"reconnects\":%uA}",
                        ngx_http_simhash_cluster_slots_of(cl, k, NULL),
                        ngx_http_simhash_redis_is_ready(&n->rd) ? 1 : 0,
                        n->reconnects);
    }

    *p++ = ']';

    return p;
}


/*
 * One family (0: slots, 1: connected) of a zone's nodes; *head: its HELP
 * and TYPE are still to be written (the first zone with a cluster).
 */

u_char *
ngx_http_simhash_cluster_nodes_prom(u_char *p, ngx_http_simhash_zone_t *zone,
    ngx_uint_t family, ngx_uint_t *head)
{
    ngx_uint_t                        k, x;
    ngx_str_t                        *name;
    ngx_http_simhash_cluster_t       *cl;
    ngx_http_simhash_cluster_node_t  *n;

    cl = ngx_http_simhash_cluster_shown(zone);
    if (cl == NULL) {
        return p;
    }

    name = &ngx_http_simhash_cluster_node_families[family];

    if (*head) {
        p = ngx_sprintf(p, "# HELP simhash_%V %V\n# TYPE simhash_%V gauge\n",
                        name, &ngx_http_simhash_cluster_node_help[family],
                        name);
        *head = 0;
    }

    for (k = 0; k < cl->nnodes; k++) {
        n = cl->nodes[k];

        x = family == 0 ? ngx_http_simhash_cluster_slots_of(cl, k, NULL)
                        : ngx_http_simhash_redis_is_ready(&n->rd) ? 1 : 0;

        p = ngx_sprintf(p, "simhash_%V{zone=\"%V\",node=\"", name,
                        &zone->name);
        p = ngx_http_simhash_text_escape(p, n->addr, n->addr_len);
        p = ngx_sprintf(p, "\"} %ui\n", x);
    }

    return p;
}
