
/*
 * The console's figures across a restart: a zone with a snapshot file
 * (file=PATH) keeps what the console shows beside it, in PATH.console,
 * written by the same atomic writer (sh_file.h) right after each snapshot
 * is committed, and read back when the master starts the zone from its
 * snapshot.  What it keeps:
 *
 *   - the zone's responses by status and skips by reason (the console's
 *     cards, simhash_stats' "responses" and "skipped");
 *   - the console's region (ngx_http_simhash_sites.c) as it is: the rates
 *     of the last minutes (a slot older than 6 minutes at the restart is
 *     not shown, as any other), the top sites, what the rules' predictions
 *     came to, the last decisions for "why?", and since when the figures
 *     count.
 *
 * Not kept: the store's own counters (lookups, evictions) and the
 * learner's, which belong to their parts.  A figure counted after the last
 * save is lost with a crash, as documents are.
 *
 * The file is the image of one build's structures: a header (a magic, the
 * sizes it was written with, the time), the counters, the region and the
 * Space-Saving table, then a CRC32 of all that.  A file of another build
 * (other sizes), a damaged one, or one made under another zone secret (the
 * sites' and decisions' hashes would mean nothing) is not loaded: the
 * figures start at zero, said in the log at notice level, and the next
 * save replaces the file.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "sh_file.h"
#include "sh_snapshot.h"


#define NGX_HTTP_SIMHASH_FIGURES_MAGIC  "simhash-figures1"


typedef struct {
    u_char                       magic[16];
    uint32_t                     sites_size;    /* the region's struct */
    uint32_t                     topk_size;
    uint32_t                     nstatus;
    uint32_t                     nskip;
    uint64_t                     saved;         /* time of the save */
    uint64_t                     responses[NGX_HTTP_SIMHASH_NSTATUS];
    uint64_t                     skipped[NGX_HTTP_SIMHASH_NSKIP];
} ngx_http_simhash_figures_head_t;


static size_t
ngx_http_simhash_figures_size(void)
{
    return sizeof(ngx_http_simhash_figures_head_t)
           + sizeof(ngx_http_simhash_sites_t)
           + sh_topk_size(NGX_HTTP_SIMHASH_SITES_K) + sizeof(uint32_t);
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


/*
 * After a snapshot's commit, in its thread: the figures copied under one
 * hold of the lock (about 220 KB), then written and committed with the
 * lock released.  Like the rest of the save, no nginx call that logs or
 * allocates from a pool.
 */

ngx_int_t
ngx_http_simhash_figures_save(ngx_http_simhash_zone_t *zone,
    const sh_file_owner_t *owner, char *err, size_t errlen)
{
    u_char                           *buf, *p;
    char                             *path;
    size_t                            size;
    uint32_t                          crc;
    ngx_uint_t                        i;
    sh_file_writer_t                 *w;
    ngx_http_simhash_sites_t         *ss;
    ngx_http_simhash_figures_head_t  *head;

    ss = ngx_http_simhash_sites(zone);

    if (ss == NULL || zone->file.len == 0) {
        return NGX_OK;
    }

    size = ngx_http_simhash_figures_size();
    buf = calloc(1, size);
    path = ngx_http_simhash_figures_path(zone);

    if (buf == NULL || path == NULL) {
        ngx_cpystrn((u_char *) err, (u_char *) "out of memory for the "
                    "console's figures", errlen);
        free(buf);
        free(path);
        return NGX_ERROR;
    }

    head = (ngx_http_simhash_figures_head_t *) buf;
    ngx_memcpy(head->magic, NGX_HTTP_SIMHASH_FIGURES_MAGIC,
               sizeof(head->magic));
    head->sites_size = sizeof(ngx_http_simhash_sites_t);
    head->topk_size = sh_topk_size(NGX_HTTP_SIMHASH_SITES_K);
    head->nstatus = NGX_HTTP_SIMHASH_NSTATUS;
    head->nskip = NGX_HTTP_SIMHASH_NSKIP;
    head->saved = (uint64_t) ngx_time();

    p = buf + sizeof(ngx_http_simhash_figures_head_t);

    ngx_shmtx_lock(&zone->shpool->mutex);

    for (i = 0; i < NGX_HTTP_SIMHASH_NSTATUS; i++) {
        head->responses[i] = ngx_http_simhash_counters(zone)->responses[i];
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_NSKIP; i++) {
        head->skipped[i] = ngx_http_simhash_counters(zone)->skipped[i];
    }

    ngx_memcpy(p, ss, sizeof(ngx_http_simhash_sites_t));
    ngx_memcpy(p + sizeof(ngx_http_simhash_sites_t), ss->topk,
               head->topk_size);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    /* the table's address is this process's, not the file's */
    ((ngx_http_simhash_sites_t *) p)->topk = NULL;

    crc = ngx_crc32_long(buf, size - sizeof(uint32_t));
    ngx_memcpy(buf + size - sizeof(uint32_t), &crc, sizeof(uint32_t));

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


/* The whole file, or NULL and why (err ""  when there is none). */

static u_char *
ngx_http_simhash_figures_read(char *path, size_t size, char *err,
    size_t errlen, ngx_log_t *log)
{
    int          fd;
    u_char      *buf;
    ssize_t      n;
    struct stat  st;

    err[0] = '\0';

    /* a link is not followed, a device or a FIFO not read */

    fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);

    if (fd == -1) {
        if (errno != ENOENT) {
            ngx_snprintf((u_char *) err, errlen, "%s%Z", strerror(errno));
        }

        return NULL;
    }

    if (fstat(fd, &st) == -1) {
        ngx_snprintf((u_char *) err, errlen, "%s%Z", strerror(errno));
        (void) close(fd);
        return NULL;
    }

    if (!S_ISREG(st.st_mode) || (size_t) st.st_size != size) {
        ngx_snprintf((u_char *) err, errlen, "not a file of this build's "
                     "figures (%O bytes, %uz expected)%Z",
                     (off_t) st.st_size, size);
        (void) close(fd);
        return NULL;
    }

    buf = ngx_alloc(size, log);

    if (buf != NULL) {
        n = read(fd, buf, size);

        if (n != (ssize_t) size) {
            ngx_snprintf((u_char *) err, errlen, "short read%Z");
            ngx_free(buf);
            buf = NULL;
        }
    }

    (void) close(fd);

    return buf;
}


/*
 * In the master, when the zone starts from its snapshot: the figures of
 * PATH.console into the fresh zone, if they are this build's, whole, and
 * of this zone's secret.
 */

void
ngx_http_simhash_figures_load(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    u_char                           *buf, *p;
    char                             *path;
    size_t                            size;
    uint32_t                          crc;
    sh_topk_t                        *topk;
    ngx_uint_t                        i;
    ngx_http_simhash_sites_t         *ss, *saved;
    ngx_http_simhash_figures_head_t  *head;
    char                              err[256];

    ss = ngx_http_simhash_sites(zone);

    if (ss == NULL || zone->file.len == 0) {
        return;
    }

    path = ngx_http_simhash_figures_path(zone);
    if (path == NULL) {
        return;
    }

    size = ngx_http_simhash_figures_size();
    buf = ngx_http_simhash_figures_read(path, size, err, sizeof(err), log);

    if (buf == NULL) {
        if (err[0]) {
            ngx_log_error(NGX_LOG_NOTICE, log, 0,
                          "simhash zone \"%V\": the console's figures "
                          "\"%s\" not loaded: %s; they start at zero",
                          &zone->name, path, err);
        }

        free(path);
        return;
    }

    head = (ngx_http_simhash_figures_head_t *) buf;
    p = buf + sizeof(ngx_http_simhash_figures_head_t);
    saved = (ngx_http_simhash_sites_t *) p;

    ngx_memcpy(&crc, buf + size - sizeof(uint32_t), sizeof(uint32_t));

    if (ngx_memcmp(head->magic, NGX_HTTP_SIMHASH_FIGURES_MAGIC,
                   sizeof(head->magic)) != 0
        || head->sites_size != sizeof(ngx_http_simhash_sites_t)
        || head->topk_size != sh_topk_size(NGX_HTTP_SIMHASH_SITES_K)
        || head->nstatus != NGX_HTTP_SIMHASH_NSTATUS
        || head->nskip != NGX_HTTP_SIMHASH_NSKIP
        || crc != ngx_crc32_long(buf, size - sizeof(uint32_t)))
    {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "simhash zone \"%V\": the console's figures \"%s\" "
                      "not loaded: damaged, or of another build; they "
                      "start at zero", &zone->name, path);
        goto done;
    }

    if (ngx_memcmp(saved->key, ss->key, sizeof(ss->key)) != 0) {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "simhash zone \"%V\": the console's figures \"%s\" "
                      "not loaded: made under another zone secret; they "
                      "start at zero", &zone->name, path);
        goto done;
    }

    /* the master alone runs now: no worker counts meanwhile */

    for (i = 0; i < NGX_HTTP_SIMHASH_NSTATUS; i++) {
        ngx_http_simhash_counters(zone)->responses[i] = head->responses[i];
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_NSKIP; i++) {
        ngx_http_simhash_counters(zone)->skipped[i] = head->skipped[i];
    }

    topk = ss->topk;
    ngx_memcpy(ss, saved, sizeof(ngx_http_simhash_sites_t));
    ss->topk = topk;
    ngx_memcpy(topk, p + sizeof(ngx_http_simhash_sites_t), head->topk_size);
    ss->restored = (time_t) head->saved;

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": the console's figures restored from "
                  "\"%s\" (counted since %T, saved at %T)", &zone->name, path,
                  ss->since, ss->restored);

done:

    ngx_free(buf);
    free(path);
}
