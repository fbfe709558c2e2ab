/*
 * The saving part of a simhash zone (ngx_http_simhash_part_t): the zone's
 * documents outlive a restart in a file.  Its parameters file= and save=,
 * the check of the file's place at configuration time, and its hooks:
 * the master loads each new zone's file (init_module:
 * ngx_http_simhash_snapshot_load.c); every worker arms a timer, and the
 * one that wins the zone's save lock saves when changes are due
 * (ngx_http_simhash_snapshot_save.c); the master saves last, when every
 * worker has exited.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_snapshot.h"
#include "sh_snapshot.h"


static void *ngx_http_simhash_snapshot_create_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
static ngx_int_t ngx_http_simhash_snapshot_param(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, ngx_str_t *value);
static ngx_int_t ngx_http_simhash_snapshot_check(ngx_conf_t *cf,
    ngx_str_t *file);
static char *ngx_http_simhash_snapshot_conf_done(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone);
static ngx_int_t ngx_http_simhash_snapshot_shm_init(
    ngx_http_simhash_zone_t *zone, ngx_http_simhash_zone_t *ozone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_snapshot_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_simhash_snapshot_init_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_snapshot_exit_process(ngx_cycle_t *cycle);
static void ngx_http_simhash_snapshot_exit_master(ngx_cycle_t *cycle);


ngx_http_simhash_part_t  ngx_http_simhash_snapshot_part = {
    ngx_string("snapshot"),
    0,                                      /* index */
    ngx_null_string,                        /* tail_name */
    sizeof(ngx_http_simhash_save_shctx_t),  /* shctx_size */

    ngx_http_simhash_snapshot_create_conf,  /* create_conf */
    ngx_http_simhash_snapshot_param,        /* param */
    ngx_http_simhash_snapshot_conf_done,    /* conf_done */
    NULL,                                   /* shm_size */

    ngx_http_simhash_snapshot_shm_init,     /* shm_init */
    NULL,                                   /* shm_migrate */

    NULL,                                   /* want_tail */
    NULL,                                   /* save_tail */
    NULL,                                   /* load_tail */

    NULL,                                   /* postconfiguration */
    ngx_http_simhash_snapshot_init_module,  /* init_module */
    ngx_http_simhash_snapshot_init_process, /* init_process */
    ngx_http_simhash_snapshot_exit_process, /* exit_process */
    ngx_http_simhash_snapshot_exit_master,  /* exit_master */

    NULL,                                   /* save_aside */
    NULL                                    /* load_aside */
};


static void *
ngx_http_simhash_snapshot_create_conf(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_save_conf_t  *sc;

    sc = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_save_conf_t));
    if (sc == NULL) {
        return NULL;
    }

    sc->save = 300000;

    return sc;
}


/* simhash_zone ... file=PATH save=TIME|off */

static ngx_int_t
ngx_http_simhash_snapshot_param(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    ngx_str_t *value)
{
    ngx_str_t                      s;
    ngx_http_simhash_save_conf_t  *sc;

    sc = ngx_http_simhash_save_conf(zone);

    if (ngx_strncmp(value->data, "file=", 5) == 0) {

        zone->file.data = value->data + 5;
        zone->file.len = value->len - 5;

        if (zone->file.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid \"%V\"", value);
            return NGX_ERROR;
        }

        if (ngx_conf_full_name(cf->cycle, &zone->file, 0) != NGX_OK) {
            return NGX_ERROR;
        }

        return ngx_http_simhash_snapshot_check(cf, &zone->file);
    }

    if (ngx_strncmp(value->data, "save=", 5) == 0) {

        s.data = value->data + 5;
        s.len = value->len - 5;
        sc->save_set = 1;

        if (s.len == 3 && ngx_strncmp(s.data, "off", 3) == 0) {
            sc->save = 0;
            return NGX_OK;
        }

        sc->save = ngx_parse_time(&s, 0);

        if (sc->save == (ngx_msec_t) NGX_ERROR || sc->save < 1000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid save time \"%V\": at least 1s, "
                               "or off", value);
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    return NGX_DECLINED;
}


static char *
ngx_http_simhash_snapshot_conf_done(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_save_conf_t  *sc;

    sc = ngx_http_simhash_save_conf(zone);

    if (sc->save_set && zone->file.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"save\" needs the \"file\" parameter");
        return NGX_CONF_ERROR;
    }

#if (NGX_THREADS)
    /* periodic saves write from nginx's default thread pool */
    if (zone->file.len && sc->save) {
        sc->thread_pool = ngx_thread_pool_add(cf, NULL);
        if (sc->thread_pool == NULL) {
            return NGX_CONF_ERROR;
        }
    }
#endif

    return NGX_CONF_OK;
}


/*
 * file=PATH, at configuration time: a directory every user may write is
 * refused (anyone could plant a link there); a missing directory is a
 * warning (the zone then works without saves).  Something at PATH that is
 * not a snapshot (a symbolic link, a FIFO, a hard link) is a warning too:
 * the workers' user can put it there, so it must not keep nginx from
 * starting; the loader moves it aside without opening it.
 */

static ngx_int_t
ngx_http_simhash_snapshot_check(ngx_conf_t *cf, ngx_str_t *file)
{
    int               rc;
    char              err[512];
    u_char           *p, *dir;
    ngx_file_info_t   fi;

    rc = sh_snapshot_check_path((char *) file->data, err, sizeof(err));

    if (rc < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid snapshot file: %s",
                           err);
        return NGX_ERROR;
    }

    if (rc > 0) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0, "not a snapshot: %s; it "
                           "will be moved aside at start", err);
    }

    p = file->data + file->len;

    while (p > file->data && *(p - 1) != '/') {
        p--;
    }

    if (p <= file->data + 1) {
        return NGX_OK;
    }

    dir = ngx_pnalloc(cf->temp_pool, p - file->data + 1);
    if (dir == NULL) {
        return NGX_ERROR;
    }

    ngx_cpystrn(dir, file->data, p - file->data + 1);

    if (ngx_file_info(dir, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, ngx_errno,
                           "the directory \"%s\" of the snapshot file is "
                           "not usable: the zone will not be saved", dir);

    } else if (!ngx_is_dir(&fi)) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "\"%s\" is not a directory: the zone will not be "
                           "saved", dir);
    }

    return NGX_OK;
}


/* A created zone: its periodic saves count from now. */

static ngx_int_t
ngx_http_simhash_snapshot_shm_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    if (ozone == NULL && zone->sh->generation == 0) {
        ngx_http_simhash_save_shctx(zone)->last_save = ngx_time();
    }

    return NGX_OK;
}


/*
 * The master, once every zone of the new cycle exists (at start, and at a
 * reload that created or resized a zone): a zone created empty with a
 * file starts from its snapshot.  Loading here, not in the zone's init,
 * keeps the zone below its persistence.
 */

static ngx_int_t
ngx_http_simhash_snapshot_init_module(ngx_cycle_t *cycle)
{
    ngx_uid_t                  workers;
    ngx_uint_t                 i, n;
    ngx_core_conf_t           *ccf;
    ngx_http_simhash_zone_t  **zones;

    if (ngx_test_config) {
        return NGX_OK;
    }

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    /* the workers' user: a master not running as root has its own */
    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);
    workers = ccf->user == (ngx_uid_t) NGX_CONF_UNSET_UINT ? geteuid()
                                                            : ccf->user;

    for (i = 0; i < n; i++) {
        if (!zones[i]->formatted || zones[i]->file.len == 0) {
            continue;
        }

        zones[i]->formatted = 0;
        zones[i]->workers_uid = workers;

        ngx_http_simhash_snapshot_load(zones[i], cycle->log);

        /* what is in memory is what is in the file */
        ngx_http_simhash_save_shctx(zones[i])->saved_generation =
                                                    zones[i]->sh->generation;
    }

    return NGX_OK;
}


/* Each worker: the periodic saves of every zone with a file. */

static ngx_int_t
ngx_http_simhash_snapshot_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i, n;
    ngx_http_simhash_zone_t  **zones;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        if (ngx_http_simhash_snapshot_init_worker(zones[i], cycle) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static void
ngx_http_simhash_snapshot_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                 i, n;
    ngx_http_simhash_zone_t  **zones;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        ngx_http_simhash_snapshot_exit_worker(zones[i], cycle->log);
    }
}


/* The master saves last, when every worker has exited. */

static void
ngx_http_simhash_snapshot_exit_master(ngx_cycle_t *cycle)
{
    ngx_uint_t                      i, n;
    ngx_http_simhash_zone_t       **zones, *zone;
    ngx_http_simhash_save_shctx_t  *ss;

    zones = ngx_http_simhash_cycle_zones(cycle, &n);

    for (i = 0; i < n; i++) {
        zone = zones[i];

        if (zone->file.len == 0 || zone->sh == NULL) {
            continue;
        }

        ss = ngx_http_simhash_save_shctx(zone);

        if (zone->sh->generation != ss->saved_generation && !ss->save_off) {
            (void) ngx_http_simhash_snapshot_save(zone, cycle->log);
        }
    }
}
