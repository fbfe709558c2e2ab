
/*
 * The parts of a simhash zone, in the order the zone calls them: the one
 * file that names every feature that keeps state in a zone, as nginx's
 * ngx_modules[] names its modules.  The module's top file hands it to the
 * zone core (ngx_http_simhash_zone_use_parts()), and its process hooks
 * loop over it; a new feature registers here, and neither the zone nor
 * the hooks change.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_cluster.h"
#include "ngx_http_simhash_dust.h"
#include "ngx_http_simhash_snapshot.h"


ngx_http_simhash_part_t  *ngx_http_simhash_parts[] = {
    &ngx_http_simhash_dust_part,            /* the DUST learner */
    &ngx_http_simhash_stats_part,           /* the counters */
    &ngx_http_simhash_sites_part,           /* the console's tables */
    &ngx_http_simhash_snapshot_part,        /* the saves */
    &ngx_http_simhash_replicate_part,       /* the Redis Stream tier */
    &ngx_http_simhash_cluster_part,         /* the index in a Redis Cluster */
    NULL
};
