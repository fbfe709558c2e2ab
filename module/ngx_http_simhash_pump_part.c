
/*
 * Replication as a part of the zone (ngx_http_simhash_part_t): the glue
 * between the zone's parts and the replication files, which know nothing
 * of the part interface.  After the configuration is read, each
 * simhash_replicate to its zone (ngx_http_simhash_replicate.c); in each
 * worker's life, worker 0's link to Redis, the pump
 * (ngx_http_simhash_pump.c).  It sits with the pump, the top of
 * replication's files, so that the arrows run one way: part -> pump ->
 * DUST replication -> replicate.  The place in the stream stays in the
 * zone's shctx, where the documents it describes are.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_pump.h"


static ngx_int_t ngx_http_simhash_replicate_postconfiguration(
    ngx_conf_t *cf);
static ngx_int_t ngx_http_simhash_replicate_init_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_replicate_exit_process(ngx_cycle_t *cycle);


ngx_http_simhash_part_t  ngx_http_simhash_replicate_part = {
    ngx_string("replicate"),
    0,                                      /* index */
    ngx_null_string,                        /* tail_name */
    0,                                      /* shctx_size */

    NULL,                                   /* create_conf */
    NULL,                                   /* param */
    NULL,                                   /* conf_done */
    NULL,                                   /* shm_size */

    NULL,                                   /* shm_init */
    NULL,                                   /* shm_migrate */

    NULL,                                   /* want_tail */
    NULL,                                   /* save_tail */
    NULL,                                   /* load_tail */

    ngx_http_simhash_replicate_postconfiguration,   /* postconfiguration */
    NULL,                                   /* init_module */
    ngx_http_simhash_replicate_init_process,    /* init_process */
    ngx_http_simhash_replicate_exit_process,    /* exit_process */
    NULL,                                   /* exit_master */

    NULL,                                   /* save_aside */
    NULL                                    /* load_aside */
};


static ngx_int_t
ngx_http_simhash_replicate_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_simhash_main_conf_t  *smcf;

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);

    return ngx_http_simhash_replicate_resolve(cf, smcf);
}


static ngx_int_t
ngx_http_simhash_replicate_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i, n;
    ngx_http_simhash_zone_t  **zones;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        if (ngx_http_simhash_pump_init_worker(zones[i], cycle) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static void
ngx_http_simhash_replicate_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i, n;
    ngx_http_simhash_zone_t  **zones;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        ngx_http_simhash_pump_exit_worker(zones[i]);
    }
}
