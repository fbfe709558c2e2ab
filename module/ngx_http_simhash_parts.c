
/*
 * The parts of a simhash zone, in the order the zone calls them: the one
 * file that names every feature that keeps state in a zone, as nginx's
 * ngx_modules[] names its modules.  The zone core (ngx_http_simhash_zone.c,
 * _zone_conf.c) and the module's process hooks loop over this list; a new
 * feature registers here, and neither of them changes.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"
#include "ngx_http_simhash_snapshot.h"


ngx_http_simhash_part_t  *ngx_http_simhash_parts[] = {
    &ngx_http_simhash_dust_part,            /* the DUST learner */
    &ngx_http_simhash_sites_part,           /* the console's tables */
    &ngx_http_simhash_snapshot_part,        /* the saves */
    &ngx_http_simhash_replicate_part,       /* the Redis Stream tier */
    NULL
};


/* Each part's index: its slot in zone->conf and in the shctx's part[]
 * (NGX_HTTP_SIMHASH_PARTS_MAX of them at most). */

void
ngx_http_simhash_parts_init(void)
{
    ngx_uint_t  i;

    for (i = 0; ngx_http_simhash_parts[i]; i++) {
        ngx_http_simhash_parts[i]->index = i;
    }
}
