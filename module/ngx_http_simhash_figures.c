
/*
 * The console's figures across a restart: a zone with a snapshot file
 * (file=PATH) keeps what the console shows beside it, in PATH.console,
 * written by the same atomic writer (sh_file.h) right after each snapshot
 * is committed, and read back when the master starts the zone from its
 * snapshot.  What it keeps:
 *
 *   - the zone's responses by status and skips by reason (the console's
 *     cards, simhash_stats' "responses" and "skipped");
 *   - the console's region (ngx_http_simhash_sites.c): the rates of the
 *     last minutes (a slot older than 6 minutes at the restart is not
 *     shown, as any other), the top sites, what the rules' predictions
 *     came to, the last decisions for "why?", and since when the figures
 *     count.
 *
 * Not kept: the store's own counters (lookups, evictions) and the
 * learner's, which belong to their parts.  A figure counted after the last
 * save is lost with a crash, as documents are.
 *
 * The file is written and read field by field (sh_figures.h), never as an
 * image of memory: the workers' user writes it (the saves run in the
 * workers), and so may anything else that runs as that user and can write
 * the snapshot's directory.  So it carries a MAC under a key derived from
 * the zone's secret (simhash_seed, or PATH.secret, which the workers'
 * user cannot read when the master runs as root), which the file never
 * holds; and whatever the MAC, every field is checked against the zone's
 * own tables before anything is copied in.  A file of an older format, of
 * another build's tables, damaged, forged or made under another secret,
 * and a file that is not a regular one, has other names, may be written
 * by others than its owner, or is owned by someone other than root, the
 * master's or the workers' user, is not loaded: the figures start at zero,
 * the log says why, and the next save replaces the file.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "sh_figures.h"
#include "sh_file.h"
#include "sh_snapshot.h"


#if (NGX_HTTP_SIMHASH_OUTCOME_TEXT != SH_FIGURES_TEXT)
#error "an outcome's texts and sh_figures' differ in size"
#endif


static void ngx_http_simhash_figures_shape(sh_figures_shape_t *shape);
static void ngx_http_simhash_figures_copy(ngx_http_simhash_zone_t *zone,
    sh_figures_t *f);
static void ngx_http_simhash_figures_apply(ngx_http_simhash_zone_t *zone,
    sh_figures_t *f);


/* the console's tables, as sh_figures counts them */

static void
ngx_http_simhash_figures_shape(sh_figures_shape_t *shape)
{
    shape->nstatus = NGX_HTTP_SIMHASH_NSTATUS;
    shape->nskip = NGX_HTTP_SIMHASH_NSKIP;
    shape->nev = NGX_HTTP_SIMHASH_NEV;
    shape->nslots = NGX_HTTP_SIMHASH_RATE_SLOTS;
    shape->noutcome = NGX_HTTP_SIMHASH_OUTCOMES;
    shape->nrule = NGX_HTTP_SIMHASH_RULE_SETS * NGX_HTTP_SIMHASH_RULE_WAYS;
    shape->ndecision = NGX_HTTP_SIMHASH_DECISIONS;
    shape->naction = NGX_HTTP_SIMHASH_DID_PREDICTED + 1;
    shape->k = NGX_HTTP_SIMHASH_SITES_K;
}


/* PATH.console, malloc()ed: the save runs in a thread (no pool, no log) */

static char *
ngx_http_simhash_figures_path(ngx_http_simhash_zone_t *zone)
{
    char  *path;

    path = malloc(zone->file.len + sizeof(".console"));
    if (path == NULL) {
        return NULL;
    }

    ngx_memcpy(path, zone->file.data, zone->file.len);
    ngx_memcpy(path + zone->file.len, ".console", sizeof(".console"));

    return path;
}


/* Under the lock: the zone's figures into f, field by field. */

static void
ngx_http_simhash_figures_copy(ngx_http_simhash_zone_t *zone, sh_figures_t *f)
{
    uint64_t                       *r;
    ngx_uint_t                      i, e;
    sh_topk_stats_t                 st;
    ngx_http_simhash_sites_t       *ss;
    ngx_http_simhash_outcome_t     *o;
    ngx_http_simhash_decision_t    *d;
    ngx_http_simhash_rule_count_t  *rc;

    ss = ngx_http_simhash_sites(zone);

    for (i = 0; i < NGX_HTTP_SIMHASH_NSTATUS; i++) {
        f->responses[i] = ngx_http_simhash_counters(zone)->responses[i];
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_NSKIP; i++) {
        f->skipped[i] = ngx_http_simhash_counters(zone)->skipped[i];
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_RATE_SLOTS; i++) {
        r = &f->rate[i * (1 + NGX_HTTP_SIMHASH_NEV)];
        r[0] = ss->rate[i].epoch;

        for (e = 0; e < NGX_HTTP_SIMHASH_NEV; e++) {
            r[1 + e] = ss->rate[i].n[e];
        }
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_OUTCOMES; i++) {
        o = &ss->outcome[i];
        f->outcome[i].hash = o->hash;
        ngx_memcpy(f->outcome[i].host, o->host, SH_FIGURES_TEXT);
        ngx_memcpy(f->outcome[i].rules, o->rules, SH_FIGURES_TEXT);
        ngx_memcpy(f->outcome[i].n, o->n, sizeof(o->n));
    }

    for (i = 0; i < f->shape.nrule; i++) {
        rc = &ss->rule_count[i];
        f->rule[i].hash = rc->hash;
        f->rule[i].rule = rc->rule;
        ngx_memcpy(f->rule[i].n, rc->n, sizeof(rc->n));
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_DECISIONS; i++) {
        d = &ss->decision[i];
        f->decision[i].keyhash = d->keyhash;
        f->decision[i].original = d->original;
        f->decision[i].time = d->time;
        f->decision[i].score = d->score;
        f->decision[i].distance = d->distance;
        f->decision[i].status = d->status;
        f->decision[i].action = d->action;
    }

    f->since = (uint64_t) ss->since;
    f->ntop = (uint32_t) sh_topk_list(ss->topk, f->top,
                                      NGX_HTTP_SIMHASH_SITES_K);
    sh_topk_stats(ss->topk, &st);
    f->total = st.total;
    f->replaced = st.replaced;
}


/*
 * After a snapshot's commit, in its thread: the figures copied under one
 * hold of the lock, then written and committed with the lock released.
 * Like the rest of the save, no nginx call that logs or allocates from a
 * pool.
 */

ngx_int_t
ngx_http_simhash_figures_save(ngx_http_simhash_zone_t *zone,
    const sh_file_owner_t *owner, char *err, size_t errlen)
{
    char                *path;
    size_t               size;
    u_char              *buf;
    sh_figures_t        *f;
    sh_file_writer_t    *w;
    sh_figures_shape_t   shape;

    if (ngx_http_simhash_sites(zone) == NULL || zone->file.len == 0) {
        return NGX_OK;
    }

    ngx_http_simhash_figures_shape(&shape);
    f = sh_figures_new(&shape);
    path = ngx_http_simhash_figures_path(zone);
    buf = NULL;

    if (f != NULL && path != NULL) {
        ngx_shmtx_lock(&zone->shpool->mutex);
        ngx_http_simhash_figures_copy(zone, f);
        ngx_shmtx_unlock(&zone->shpool->mutex);

        f->saved = (uint64_t) ngx_time();

        if (sh_figures_encode(f, zone->figures_secret,
                              sizeof(zone->figures_secret), &buf, &size)
            != 0)
        {
            buf = NULL;
        }
    }

    sh_figures_free(f);

    if (buf == NULL || path == NULL) {
        ngx_cpystrn((u_char *) err, (u_char *) "out of memory for the "
                    "console's figures", errlen);
        free(buf);
        free(path);
        return NGX_ERROR;
    }

    w = sh_file_writer_open(path, SH_SNAPSHOT_MODE, owner, err, errlen);

    if (w == NULL
        || sh_file_writer_write(w, buf, size, err, errlen) != 0
        || sh_file_writer_commit(w, err, errlen) != 0)
    {
        if (w) {
            sh_file_writer_abort(w);
        }

        free(buf);
        free(path);
        return NGX_ERROR;
    }

    free(buf);
    free(path);

    return NGX_OK;
}


/*
 * The whole file, or NULL and why (err "" when there is none).  What the
 * snapshot's own files must be, this one must be too: a regular file with
 * one name, never opened through a link nor blocked on as a FIFO; and,
 * since its fields are trusted no further than they are checked, one
 * that only its owner may write, owned by root, the master's user or the
 * workers' (who write it).
 */

static u_char *
ngx_http_simhash_figures_read(ngx_http_simhash_zone_t *zone, char *path,
    size_t max, size_t *len, char *err, size_t errlen, ngx_log_t *log)
{
    int          fd;
    u_char      *buf;
    ssize_t      n;
    struct stat  st;

    err[0] = '\0';

    fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
                    | O_NOCTTY);

    if (fd == -1) {
        if (errno != ENOENT) {
            ngx_snprintf((u_char *) err, errlen, "%s%Z",
                         errno == ELOOP ? "a symbolic link, not a regular "
                         "file" : strerror(errno));
        }

        return NULL;
    }

    buf = NULL;

    if (fstat(fd, &st) == -1) {
        ngx_snprintf((u_char *) err, errlen, "%s%Z", strerror(errno));

    } else if (sh_snapshot_check_stat(path, &st, err, errlen) != 0) {
        /* err says it: not a regular file, or other names */

    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        ngx_snprintf((u_char *) err, errlen, "others than its owner may "
                     "write it (mode %ui%ui%ui%ui)%Z",
                     (ngx_uint_t) (st.st_mode >> 9) & 7,
                     (ngx_uint_t) (st.st_mode >> 6) & 7,
                     (ngx_uint_t) (st.st_mode >> 3) & 7,
                     (ngx_uint_t) st.st_mode & 7);

    } else if (st.st_uid != 0 && st.st_uid != geteuid()
               && st.st_uid != zone->workers_uid)
    {
        ngx_snprintf((u_char *) err, errlen, "owned by uid %uL, neither "
                     "root, nor nginx's master's nor its workers' user%Z",
                     (uint64_t) st.st_uid);

    } else if (st.st_size <= 0 || (size_t) st.st_size > max) {
        ngx_snprintf((u_char *) err, errlen, "%O bytes, not a file of the "
                     "console's figures (at most %uz)%Z",
                     (off_t) st.st_size, max);

    } else {
        buf = ngx_alloc((size_t) st.st_size, log);

        if (buf != NULL) {
            n = read(fd, buf, (size_t) st.st_size);

            if (n != (ssize_t) st.st_size) {
                ngx_snprintf((u_char *) err, errlen, "short read%Z");
                ngx_free(buf);
                buf = NULL;

            } else {
                *len = (size_t) n;
            }
        }
    }

    (void) close(fd);

    return buf;
}


/* The master alone runs now: no worker counts meanwhile. */

static void
ngx_http_simhash_figures_apply(ngx_http_simhash_zone_t *zone,
    sh_figures_t *f)
{
    uint64_t                       *r;
    ngx_uint_t                      i, e;
    ngx_http_simhash_sites_t       *ss;
    ngx_http_simhash_outcome_t     *o;
    ngx_http_simhash_decision_t    *d;
    ngx_http_simhash_rule_count_t  *rc;

    ss = ngx_http_simhash_sites(zone);

    for (i = 0; i < NGX_HTTP_SIMHASH_NSTATUS; i++) {
        ngx_http_simhash_counters(zone)->responses[i] = f->responses[i];
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_NSKIP; i++) {
        ngx_http_simhash_counters(zone)->skipped[i] = f->skipped[i];
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_RATE_SLOTS; i++) {
        r = &f->rate[i * (1 + NGX_HTTP_SIMHASH_NEV)];
        ss->rate[i].epoch = (ngx_atomic_t) r[0];

        for (e = 0; e < NGX_HTTP_SIMHASH_NEV; e++) {
            ss->rate[i].n[e] = (ngx_atomic_t) r[1 + e];
        }
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_OUTCOMES; i++) {
        o = &ss->outcome[i];
        o->hash = f->outcome[i].hash;
        ngx_memcpy(o->host, f->outcome[i].host, SH_FIGURES_TEXT);
        ngx_memcpy(o->rules, f->outcome[i].rules, SH_FIGURES_TEXT);
        ngx_memcpy(o->n, f->outcome[i].n, sizeof(o->n));
    }

    for (i = 0; i < f->shape.nrule; i++) {
        rc = &ss->rule_count[i];
        rc->hash = f->rule[i].hash;
        rc->rule = f->rule[i].rule;
        ngx_memcpy(rc->n, f->rule[i].n, sizeof(rc->n));
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_DECISIONS; i++) {
        d = &ss->decision[i];
        ngx_memzero(d, sizeof(ngx_http_simhash_decision_t));
        d->keyhash = f->decision[i].keyhash;
        d->original = f->decision[i].original;
        d->time = f->decision[i].time;
        d->score = f->decision[i].score;
        d->distance = f->decision[i].distance;
        d->status = f->decision[i].status;
        d->action = f->decision[i].action;
    }

    /* checked by sh_figures_decode on a table of this k: cannot fail */
    (void) sh_topk_restore(ss->topk, f->top, f->ntop, f->total, f->replaced);

    ss->since = (time_t) f->since;
    ss->restored = (time_t) f->saved;
}


/*
 * In the master, when the zone starts from its snapshot: the figures of
 * PATH.console into the fresh zone, if they pass every check.
 */

void
ngx_http_simhash_figures_load(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    int                  old;
    char                *path;
    ngx_uint_t           level;
    size_t               len;
    u_char              *buf;
    sh_figures_t        *f;
    ngx_http_simhash_sites_t  *ss;
    sh_figures_shape_t   shape;
    char                 err[256];

    ss = ngx_http_simhash_sites(zone);

    if (ss == NULL || zone->file.len == 0) {
        return;
    }

    path = ngx_http_simhash_figures_path(zone);
    if (path == NULL) {
        return;
    }

    ngx_http_simhash_figures_shape(&shape);

    /* twice the largest file of this zone: a file of the older format
     * (about 220 KB) is read, so that the log can name it */
    buf = ngx_http_simhash_figures_read(zone, path,
                                        2 * sh_figures_size(&shape, shape.k),
                                        &len, err, sizeof(err), log);

    if (buf == NULL) {
        if (err[0]) {
            ngx_log_error(NGX_LOG_WARN, log, 0,
                          "simhash zone \"%V\": the console's figures "
                          "\"%s\" not loaded: %s; they start at zero",
                          &zone->name, path, err);
        }

        free(path);
        return;
    }

    f = sh_figures_decode(buf, len, &shape, zone->figures_secret,
                          sizeof(zone->figures_secret), &old, err,
                          sizeof(err));
    ngx_free(buf);

    if (f == NULL) {
        level = old ? NGX_LOG_NOTICE : NGX_LOG_WARN;

        ngx_log_error(level, log, 0,
                      "simhash zone \"%V\": the console's figures \"%s\" "
                      "not loaded: %s; they start at zero, and the next "
                      "save replaces the file", &zone->name, path, err);
        free(path);
        return;
    }

    ngx_http_simhash_figures_apply(zone, f);
    sh_figures_free(f);

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": the console's figures restored from "
                  "\"%s\" (counted since %T, saved at %T)", &zone->name, path,
                  ss->since, ss->restored);

    free(path);
}
