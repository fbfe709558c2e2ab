/*
 * A start from the snapshot (the saving part's init_module, in the master,
 * once every zone of the cycle exists).  A file of the store's format
 * (sh_store_file.h) is read back with pread, in chunks: a zone of the
 * file's geometry takes the records in place, any other stores the
 * documents again, oldest first (a smaller zone keeps the newest); its
 * settings say the match rule it was saved under and, for a replicated
 * zone, where replication goes on; its tail section, if any, goes to the
 * part that fills it (the DUST learner's rules: ngx_http_simhash_part_t).
 * Files of the older formats (the index region and one record per
 * document, sh_snapshot.h and sh_keyrec.h) still load, one document at a
 * time.
 *
 * A damaged file never costs more than its damage, and is never lost: the
 * image is checksummed frame by frame, so a flipped byte costs one frame
 * of documents (at most 256) and the rest is restored; a file that cannot
 * be used at all starts the zone empty.  Either way the damaged file is
 * renamed aside (PATH.damaged-TIME), so that the next save cannot overwrite
 * it, and the log says where it went.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_snapshot.h"
#include "sh_snapshot.h"
#include "sh_store_file.h"
#include "sh_image.h"


/* a store file's header and settings fit in this (sh_store_file.h) */
#define NGX_HTTP_SIMHASH_HEAD_MAX   (SH_STORE_FILE_META_MAX + 4096)


static ngx_int_t ngx_http_simhash_load_store(ngx_http_simhash_zone_t *zone,
    int fd, const unsigned char *head, size_t head_len, uint64_t file_len,
    ngx_uint_t *copied, char *err, size_t errlen, ngx_log_t *log);
static void ngx_http_simhash_load_aside(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_load_tail(ngx_http_simhash_zone_t *zone,
    int fd, uint64_t off, uint64_t len, uint64_t sum, char *err,
    size_t errlen, ngx_log_t *log);
static ngx_int_t ngx_http_simhash_read_head(int fd, uint64_t file_len,
    unsigned char *head, size_t *head_len, char *err, size_t errlen);
static ngx_int_t ngx_http_simhash_load_records(
    ngx_http_simhash_zone_t *zone, sh_snapshot_info_t *info,
    const void *user, size_t user_len, ngx_uint_t *copied, char *err,
    size_t errlen, ngx_log_t *log);
static void ngx_http_simhash_version_refusal(ngx_http_simhash_zone_t *zone,
    sh_snapshot_info_t *info, char *err, size_t errlen);
static ngx_int_t ngx_http_simhash_load_v1(ngx_http_simhash_zone_t *zone,
    void *region, size_t region_size, const void *user, size_t user_len,
    ngx_uint_t *copied, char *err, size_t errlen, ngx_log_t *log);
static void ngx_http_simhash_keep_aside(ngx_http_simhash_zone_t *zone,
    char *why, ngx_log_t *log);
static ngx_int_t ngx_http_simhash_meta_line(u_char **pos, u_char *end,
    ngx_str_t *name, ngx_str_t *value);
static void ngx_http_simhash_meta_replicate(ngx_http_simhash_zone_t *zone,
    const sh_keyrec_t *rec, ngx_log_t *log);
static void ngx_http_simhash_meta_writer(ngx_http_simhash_zone_t *zone,
    ngx_str_t *value, ngx_log_t *log);
static void ngx_http_simhash_meta_position(ngx_http_simhash_zone_t *zone,
    ngx_str_t *stream, ngx_str_t *id, ngx_log_t *log);
static void ngx_http_simhash_meta_rule(ngx_http_simhash_zone_t *zone,
    const sh_keyrec_t *rec, ngx_log_t *log);
static u_char *ngx_http_simhash_rule_text(u_char *p, sh_rule_t rule,
    ngx_uint_t distance, uint32_t threshold);


/*
 * A file of the store's format (sh_store_file.h): its settings, then its
 * image straight into the zone's store, which is empty at start.  Another
 * extraction version or hash key is refused before anything is stored.
 * The image is read with pread in chunks, not mapped (sh_image.c
 * says why); `head` holds the file's first bytes: its header and
 * settings.
 */

static ngx_int_t
ngx_http_simhash_load_store(ngx_http_simhash_zone_t *zone, int fd,
    const unsigned char *head, size_t head_len, uint64_t file_len,
    ngx_uint_t *copied, char *err, size_t errlen, ngx_log_t *log)
{
    size_t                 meta_len, image_len;
    ssize_t                n;
    uint64_t               image_off, rest, tail_off, tail_len, tail_sum;
    ngx_int_t              rc, tail;
    sh_keyrec_t            rec;
    sh_image_info_t        info;
    const unsigned char   *meta, *image;
    u_char                 footer[SH_STORE_FILE_TAIL_LEN];

    if (ngx_http_simhash_zone_file_parse(head, head_len, &meta, &meta_len,
                                         &image, &image_len, err, errlen)
        != 0)
    {
        return NGX_ERROR;
    }

    image_off = (uint64_t) (image - head);

    /* the rules' section at the end, if any: the image stops before it */

    rest = file_len - image_off;
    tail = 0;

    if (rest >= SH_STORE_FILE_TAIL_LEN) {
        n = pread(fd, footer, SH_STORE_FILE_TAIL_LEN,
                  (off_t) (file_len - SH_STORE_FILE_TAIL_LEN));

        tail = n == SH_STORE_FILE_TAIL_LEN
               && ngx_http_simhash_zone_file_tail_find(footer, rest,
                                                       &tail_off, &tail_len,
                                                       &tail_sum);
    }

    if (tail) {
        rest = tail_off;
    }

    ngx_http_simhash_zone_lock(zone, log);
    ngx_http_simhash_zone_write(zone);

    rc = NGX_OK;

    if (ngx_http_simhash_zone_load_image(zone, fd, image_off, rest, &info,
                                         err, errlen)
        != 0)
    {
        /* the store may hold part of the image: start from empty */
        char  why[256];

        if (ngx_http_simhash_zone_empty(zone, why, sizeof(why)) != NGX_OK) {
            ngx_log_error(NGX_LOG_ALERT, log, 0,
                          "simhash zone \"%V\": %s", &zone->name, why);
        }

        rc = NGX_ERROR;

    } else {
        ngx_memzero(&rec, sizeof(sh_keyrec_t));
        rec.type = SH_KEYREC_META;
        rec.data = meta;
        rec.len = meta_len;
        ngx_http_simhash_meta_rule(zone, &rec, log);
        ngx_http_simhash_meta_replicate(zone, &rec, log);

        *copied = info.documents;
        (void) ngx_atomic_fetch_add(&zone->sh->generation, 1);
        ngx_http_simhash_save_shctx(zone)->saved_generation =
            zone->sh->generation;

        if (info.damaged) {
            /* the intact frames' documents are in: say what was lost */
            ngx_snprintf((u_char *) err, errlen,
                         "%uD of its frames fail their checksum or are cut "
                         "off; the documents of the others were restored%Z",
                         info.damaged);
            rc = NGX_DECLINED;
        }
    }

    ngx_http_simhash_zone_unlock(zone);

    if (rc == NGX_OK && tail) {
        rc = ngx_http_simhash_load_tail(zone, fd, image_off + tail_off,
                                        tail_len, tail_sum, err, errlen, log);

    } else if (rc == NGX_DECLINED && tail) {
        /* damaged frames: err says so, the rules still come back */
        char  why[256];

        (void) ngx_http_simhash_load_tail(zone, fd, image_off + tail_off,
                                          tail_len, tail_sum, why,
                                          sizeof(why), log);
    }

    return rc;
}


/* each part's file beside the snapshot, through the part table */

static void
ngx_http_simhash_load_aside(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    ngx_uint_t                 i;
    ngx_http_simhash_part_t  **parts;

    parts = ngx_http_simhash_zone_parts();

    for (i = 0; parts[i]; i++) {
        if (parts[i]->load_aside) {
            parts[i]->load_aside(zone, log);
        }
    }
}


/*
 * The file's tail section to the part that fills it (the DUST learner's
 * rules).  NGX_OK, or NGX_DECLINED when the section is damaged (the
 * documents are in; err says what was lost).  A section the zone has no
 * room for now is left out, and the part says so.
 */

static ngx_int_t
ngx_http_simhash_load_tail(ngx_http_simhash_zone_t *zone, int fd,
    uint64_t off, uint64_t len, uint64_t sum, char *err, size_t errlen,
    ngx_log_t *log)
{
    u_char                   *buf;
    ssize_t                   n;
    ngx_int_t                 rc;
    ngx_http_simhash_part_t  *part;

    part = ngx_http_simhash_zone_tail();

    if (part == NULL || !part->want_tail(zone, log)) {
        return NGX_OK;
    }

    buf = len < 256 * 1024 * 1024 ? ngx_alloc((size_t) len + 1, log) : NULL;
    if (buf == NULL) {
        ngx_snprintf((u_char *) err, errlen, "its %V (%uL bytes) could not "
                     "be read: out of memory%Z", &part->tail_name, len);
        return NGX_DECLINED;
    }

    n = pread(fd, buf, (size_t) len, (off_t) off);
    rc = NGX_OK;

    if (n < 0 || (uint64_t) n != len
        || !ngx_http_simhash_zone_file_tail_ok(buf, (size_t) len, sum))
    {
        ngx_snprintf((u_char *) err, errlen, "its %V are damaged and were "
                     "not restored; every document was%Z", &part->tail_name);
        rc = NGX_DECLINED;

    } else {
        rc = part->load_tail(zone, buf, (size_t) len, log);
    }

    ngx_free(buf);

    return rc;
}


/*
 * The file's first bytes (header and settings of the store format) into
 * head; 1 if it is of that format, 0 if not (an older format), -1 if it
 * cannot be read.
 */

static ngx_int_t
ngx_http_simhash_read_head(int fd, uint64_t file_len, unsigned char *head,
    size_t *head_len, char *err, size_t errlen)
{
    ssize_t  n;
    size_t   want;

    want = file_len < NGX_HTTP_SIMHASH_HEAD_MAX
           ? (size_t) file_len : NGX_HTTP_SIMHASH_HEAD_MAX;

    n = pread(fd, head, want, 0);

    if (n < 0 || (size_t) n != want) {
        ngx_snprintf((u_char *) err, errlen, "cannot be read: %s%Z",
                     n < 0 ? strerror(ngx_errno) : "cut short");
        return -1;
    }

    *head_len = want;

    return ngx_http_simhash_zone_file_is(head, want) ? 1 : 0;
}


void
ngx_http_simhash_snapshot_load(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log)
{
    int                             fd;
    ngx_int_t                       format;
    char                            err[512];
    void                           *region;
    size_t                          region_size, user_len, head_len;
    uint64_t                        file_len;
    unsigned char                  *head;
    ngx_int_t                       rc;
    ngx_uint_t                      copied;
    ngx_msec_t                      start;
    ngx_file_info_t                 fi;
    const void                     *user;
    sh_snapshot_info_t              info;
    ngx_http_simhash_save_shctx_t  *ss;

    start = ngx_http_simhash_snapshot_msec();

    ss = ngx_http_simhash_save_shctx(zone);
    region = NULL;
    copied = 0;

    /* the parts' files beside the snapshot (the console's figures),
     * whatever becomes of this one */

    ngx_http_simhash_load_aside(zone, log);

    /* the name itself: a link is never followed, not even to look */

    if (ngx_link_info(zone->file.data, &fi) == NGX_FILE_ERROR) {
        if (ngx_errno == NGX_ENOENT) {
            ngx_log_error(NGX_LOG_NOTICE, log, 0,
                          "simhash zone \"%V\": no snapshot \"%V\" yet, "
                          "starting empty", &zone->name, &zone->file);
            return;
        }

        ngx_snprintf((u_char *) err, sizeof(err), "%s%Z",
                     strerror(ngx_errno));
        rc = NGX_ERROR;
        goto loaded;
    }

    /*
     * A link, a FIFO, a device planted at PATH is not opened at all (a
     * device's open can act); like a damaged file it is moved aside, and
     * nginx starts empty.
     */

    if (sh_snapshot_check_stat((char *) zone->file.data, &fi, err,
                               sizeof(err))
        != 0)
    {
        rc = NGX_ERROR;
        goto loaded;
    }

    fd = sh_snapshot_open((char *) zone->file.data, &file_len, err,
                          sizeof(err));

    if (fd >= 0) {
        head = ngx_alloc(NGX_HTTP_SIMHASH_HEAD_MAX, log);

        format = head == NULL ? -1
                 : ngx_http_simhash_read_head(fd, file_len, head, &head_len,
                                              err, sizeof(err));
        rc = NGX_ERROR;

        if (format == 1) {
            rc = ngx_http_simhash_load_store(zone, fd, head, head_len,
                                             file_len, &copied, err,
                                             sizeof(err), log);
        } else if (head == NULL) {
            ngx_snprintf((u_char *) err, sizeof(err), "out of memory%Z");
        }

        if (head != NULL) {
            ngx_free(head);
        }

        (void) close(fd);

        if (format != 0) {
            goto loaded;
        }
    }

    /* an older format: its documents are stored one by one */

    if (sh_snapshot_load((char *) zone->file.data, zone->seed_digest,
                         &region, &region_size, &user, &user_len, &info,
                         err, sizeof(err))
        != 0)
    {
        rc = NGX_ERROR;

    } else if (info.extraction != zone->version) {
        ngx_http_simhash_version_refusal(zone, &info, err, sizeof(err));
        rc = NGX_ERROR;

    } else if (ngx_strcmp(info.kind, SH_KEYREC_KIND_V2) == 0) {
        rc = ngx_http_simhash_load_v1(zone, region, region_size, user,
                                      user_len, &copied, err, sizeof(err),
                                      log);
    } else {
        rc = ngx_http_simhash_load_records(zone, &info, user, user_len,
                                           &copied, err, sizeof(err), log);
    }

    free(region);

loaded:

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": snapshot \"%V\" refused: %s; "
                      "starting empty", &zone->name, &zone->file, err);
        ngx_http_simhash_keep_aside(zone, "refused", log);
        (void) ngx_atomic_fetch_add(&ss->refused_snapshots, 1);
        return;
    }

    ss->restored = copied;

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": %ui documents restored from \"%V\" "
                  "in %M ms", &zone->name, copied, &zone->file,
                  ngx_http_simhash_snapshot_msec() - start);

    if (rc == NGX_DECLINED) {
        /* partly damaged: what was intact is restored, err says the rest */
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": snapshot \"%V\" is damaged: %s",
                      &zone->name, &zone->file, err);
        ngx_http_simhash_keep_aside(zone, "damaged", log);
    }
}


/*
 * Why a snapshot of another extraction version is refused, in one line:
 * its fingerprints were made from other features, and mixing them in would
 * compare the incomparable.
 */

static void
ngx_http_simhash_version_refusal(ngx_http_simhash_zone_t *zone,
    sh_snapshot_info_t *info, char *err, size_t errlen)
{
    u_char  *p;

    if (info->extraction == 0) {
        p = ngx_snprintf((u_char *) err, errlen - 1,
                         "written before extraction versions (format %ud), "
                         "its fingerprints are not known to be comparable "
                         "with extraction version %08xD", info->version,
                         zone->version);

    } else {
        p = ngx_snprintf((u_char *) err, errlen - 1,
                         "written under extraction version %08xD, this "
                         "configuration extracts %08xD (%s)",
                         info->extraction, zone->version,
                         sh_version_code(info->extraction)
                         != sh_version_code(zone->version)
                         ? "another release's extraction code"
                         : "other options or another libxml2");
    }

    *p = '\0';
}


/*
 * The records, in their order (oldest first), into the zone.  NGX_OK;
 * NGX_DECLINED when blocks were damaged (what they held is lost, err says
 * how much); NGX_ERROR when nothing can be used.
 */

static ngx_int_t
ngx_http_simhash_load_records(ngx_http_simhash_zone_t *zone,
    sh_snapshot_info_t *info, const void *user, size_t user_len,
    ngx_uint_t *copied, char *err, size_t errlen, ngx_log_t *log)
{
    int                  rc;
    ngx_str_t            key;
    ngx_uint_t           records;
    sh_keyrec_t          rec;
    sh_keyrec_reader_t   rd;

    if (sh_keyrec_open(&rd, info->kind, user, user_len) != 0) {
        ngx_snprintf((u_char *) err, errlen, "not a snapshot of this module "
                     "(its documents are \"%s\")%Z", info->kind);
        return NGX_ERROR;
    }

    records = 0;

    ngx_http_simhash_zone_lock(zone, log);

    while ((rc = sh_keyrec_next(&rd, &rec, err, errlen)) == 1) {

        if (rec.type == SH_KEYREC_META) {
            ngx_http_simhash_meta_rule(zone, &rec, log);
            ngx_http_simhash_meta_replicate(zone, &rec, log);
            continue;
        }

        records++;
        key.data = (u_char *) rec.data;
        key.len = rec.len;

        if (ngx_http_simhash_zone_key(zone, &key) == SH_NOREF) {
            ngx_http_simhash_zone_write(zone);

            if (ngx_http_simhash_zone_store(zone, &key, rec.hash, rec.digest,
                                            rec.time, &rec.sketches)
                != SH_NOREF)
            {
                (*copied)++;
            }
        }
    }

    ngx_http_simhash_zone_unlock(zone);

    if (rc != 0) {
        /* the checksums passed: the writer wrote this; keep what came */
        return *copied ? NGX_DECLINED : NGX_ERROR;
    }

    if (info->damaged) {
        ngx_snprintf((u_char *) err, errlen,
                     "%uz of %uz blocks of documents failed their "
                     "checksum (what they held is lost), %ui documents "
                     "read from the others%Z",
                     info->damaged, info->blocks, records);
        return NGX_DECLINED;
    }

    if (!info->region_ok) {
        /* the records alone rebuild the zone: nothing is lost */
        ngx_snprintf((u_char *) err, errlen,
                     "%s; the %ui documents were restored from their "
                     "records%Z", info->region_err, records);
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* The next "name=value" line of a META record; NGX_DONE at its end. */

static ngx_int_t
ngx_http_simhash_meta_line(u_char **pos, u_char *end, ngx_str_t *name,
    ngx_str_t *value)
{
    u_char  *p, *eol, *eq;

    for (p = *pos; p < end; p = eol + 1) {
        eol = ngx_strlchr(p, end, '\n');
        if (eol == NULL) {
            eol = end;
        }

        eq = ngx_strlchr(p, eol, '=');
        if (eq == NULL) {
            continue;
        }

        name->data = p;
        name->len = eq - p;
        value->data = eq + 1;
        value->len = eol - eq - 1;

        *pos = eol + 1;
        return NGX_OK;
    }

    *pos = end;
    return NGX_DONE;
}


/*
 * Where a replicated zone was in its stream ("replicate_stream=",
 * "replicate_id=" lines).  Under the lock.
 */

static void
ngx_http_simhash_meta_replicate(ngx_http_simhash_zone_t *zone,
    const sh_keyrec_t *rec, ngx_log_t *log)
{
    u_char     *p, *end;
    ngx_str_t   name, value, stream, id;

    ngx_str_null(&stream);
    ngx_str_null(&id);

    p = (u_char *) rec->data;
    end = p + rec->len;

    while (ngx_http_simhash_meta_line(&p, end, &name, &value) == NGX_OK) {

        if (name.len == 16
            && ngx_strncmp(name.data, "replicate_stream", 16) == 0)
        {
            stream = value;

        } else if (name.len == 12
                   && ngx_strncmp(name.data, "replicate_id", 12) == 0)
        {
            id = value;

        } else if (name.len == 16
                   && ngx_strncmp(name.data, "replicate_writer", 16) == 0)
        {
            ngx_http_simhash_meta_writer(zone, &value, log);
        }
    }

    if (stream.data && id.data) {
        ngx_http_simhash_meta_position(zone, &stream, &id, log);
    }
}


/*
 * "replicate_writer=SEQ HEX-NODE": the last seq this zone had applied
 * from a writer of the stream when the snapshot was taken, back into the
 * outbox's table (a slot of its own, or none when the table is full), so
 * that a replay of what the snapshot holds is refused after a restart as
 * it is after a reload.  A line that does not parse is left out.
 */

static void
ngx_http_simhash_meta_writer(ngx_http_simhash_zone_t *zone,
    ngx_str_t *value, ngx_log_t *log)
{
    u_char                     *sp, node[SH_STREAM_NODE_MAX];
    size_t                      len, i;
    ngx_int_t                   hi, lo;
    uint64_t                    seq;
    ngx_uint_t                  k;
    ngx_http_simhash_writer_t  *w;
    ngx_http_simhash_outbox_t  *ob;

    ob = zone->replicate ? zone->replicate->outbox : NULL;

    if (ob == NULL) {
        return;
    }

    sp = ngx_strlchr(value->data, value->data + value->len, ' ');
    if (sp == NULL || sp == value->data) {
        goto bad;
    }

    seq = 0;

    for (i = 0; value->data + i < sp; i++) {
        if (value->data[i] < '0' || value->data[i] > '9'
            || seq > (UINT64_MAX - 9) / 10)
        {
            goto bad;
        }

        seq = seq * 10 + (value->data[i] - '0');
    }

    len = (value->data + value->len - (sp + 1)) / 2;

    if (len == 0 || len > SH_STREAM_NODE_MAX
        || (size_t) (value->data + value->len - (sp + 1)) != 2 * len)
    {
        goto bad;
    }

    for (i = 0; i < len; i++) {
        hi = ngx_hextoi(sp + 1 + 2 * i, 1);
        lo = ngx_hextoi(sp + 2 + 2 * i, 1);

        if (hi == NGX_ERROR || lo == NGX_ERROR) {
            goto bad;
        }

        node[i] = (u_char) (hi << 4 | lo);
    }

    for (k = 0; k < NGX_HTTP_SIMHASH_WRITERS; k++) {
        w = &ob->writers[k];

        if (w->len == 0
            || (w->len == len && ngx_memcmp(w->node, node, len) == 0))
        {
            break;
        }
    }

    if (k == NGX_HTTP_SIMHASH_WRITERS) {
        return;
    }

    if (w->len == 0 || w->seq < seq) {
        w->len = (u_char) len;
        ngx_memcpy(w->node, node, len);
        w->seq = seq;
        w->used = ++ob->writers_clock;
    }

    return;

bad:

    ngx_log_error(NGX_LOG_WARN, log, 0,
                  "simhash zone \"%V\": the snapshot's replicate_writer "
                  "\"%V\" is not SEQ HEX-NODE: left out", &zone->name, value);
}


/*
 * The snapshot's place in the stream becomes the zone's (under the lock):
 * only the stream the zone follows now counts.  Replication reads on from
 * there (ngx_http_simhash_pump_read.c).
 */

static void
ngx_http_simhash_meta_position(ngx_http_simhash_zone_t *zone,
    ngx_str_t *stream, ngx_str_t *id, ngx_log_t *log)
{
    sh_stream_id_t             sid;
    ngx_http_simhash_shctx_t  *sh;

    sh = zone->sh;

    if (zone->stream.len == 0) {
        return;
    }

    if (stream->len != zone->stream.len
        || ngx_strncmp(stream->data, zone->stream.data, stream->len) != 0)
    {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "simhash zone \"%V\": the snapshot followed the "
                      "stream \"%V\", not \"%V\": reading this one from its "
                      "start", &zone->name, stream, &zone->stream);
        return;
    }

    if (sh_stream_id_parse(&sid, (char *) id->data, id->len) != 0) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": the snapshot's replicate_id "
                      "\"%V\" is not a stream id: reading the stream from its "
                      "start", &zone->name, id);
        return;
    }

    sh->repl_id = sid;
    sh->repl_stream = ngx_crc32_long(stream->data, stream->len);

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": the snapshot has the stream \"%V\" "
                  "up to %V: replication goes on from there",
                  &zone->name, stream, id);
}


/*
 * A META record's match rule ("match=", "distance=", "threshold=" lines)
 * against the zone's: the rule is applied at lookup, so a snapshot taken
 * under another rule is loaded all the same, and the log says the rule
 * changed.  A record with a distance but no rule comes from before there
 * were rules: it was "hamming".
 */

static void
ngx_http_simhash_meta_rule(ngx_http_simhash_zone_t *zone,
    const sh_keyrec_t *rec, ngx_log_t *log)
{
    u_char      *p, *end, was[64], now[64];
    ngx_int_t    n;
    ngx_str_t    name, value;
    sh_rule_t    rule;
    ngx_uint_t   have_distance;
    uint32_t     distance, threshold;

    rule = SH_RULE_HAMMING;
    distance = 0;
    threshold = 0;
    have_distance = 0;

    p = (u_char *) rec->data;
    end = p + rec->len;

    while (ngx_http_simhash_meta_line(&p, end, &name, &value) == NGX_OK) {

        if (name.len == 5 && ngx_strncmp(name.data, "match", 5) == 0) {
            if (sh_rule_parse((char *) value.data, value.len, &rule) != 0) {
                return;         /* a rule this build does not know */
            }

        } else if (name.len == 8 && ngx_strncmp(name.data, "distance", 8) == 0)
        {
            n = ngx_atoi(value.data, value.len);
            if (n == NGX_ERROR) {
                return;
            }
            distance = (uint32_t) n;
            have_distance = 1;

        } else if (name.len == 9
                   && ngx_strncmp(name.data, "threshold", 9) == 0)
        {
            n = ngx_atofp(value.data, value.len, 4);
            if (n == NGX_ERROR) {
                return;
            }
            threshold = sh_score_from_nats((double) n / 10000);
        }
    }

    if (!have_distance
        || (rule == zone->rule && distance == zone->distance
            && (rule == SH_RULE_HAMMING || threshold == zone->threshold)))
    {
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": snapshot \"%V\" was taken under "
                  "%*s, lookups now apply %*s",
                  &zone->name, &zone->file,
                  ngx_http_simhash_rule_text(was, rule, distance, threshold)
                  - was, was,
                  ngx_http_simhash_rule_text(now, zone->rule, zone->distance,
                                             zone->threshold)
                  - now, now);
}


/* "match=R distance=D[ threshold=T]", at most 50 bytes */

static u_char *
ngx_http_simhash_rule_text(u_char *p, sh_rule_t rule, ngx_uint_t distance,
    uint32_t threshold)
{
    p = ngx_sprintf(p, "match=%s distance=%ui", sh_rule_name(rule),
                    distance);

    if (rule == SH_RULE_WEIGHTED) {
        p = ngx_sprintf(p, " threshold=");
        p = ngx_http_simhash_score(p, threshold);
    }

    return p;
}


/*
 * A format 1 snapshot: its records are in ref order, so the documents are
 * taken in the age order of its index, each with the key recorded for its
 * ref when the fingerprints agree (the rule that file was written for).
 */

static ngx_int_t
ngx_http_simhash_load_v1(ngx_http_simhash_zone_t *zone, void *region,
    size_t region_size, const void *user, size_t user_len,
    ngx_uint_t *copied, char *err, size_t errlen, ngx_log_t *log)
{
    int                      rc;
    sh_index_t              *ix;
    sh_keyrec_t              rec;
    sh_index_stats_t         st;
    sh_keyrec_reader_t       rd;
    ngx_http_simhash_copy_t  cp;

    ix = ngx_http_simhash_zone_attach(region, region_size, &st, err, errlen);
    if (ix == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(&cp, sizeof(ngx_http_simhash_copy_t));
    cp.zone = zone;
    cp.nkeys = st.capacity;

    (void) sh_keyrec_open(&rd, SH_KEYREC_KIND_V2, user, user_len);

    cp.keys = ngx_calloc(st.capacity * sizeof(ngx_str_t) + 1, log);
    cp.hashes = ngx_calloc(st.capacity * sizeof(uint64_t) + 1, log);

    if (cp.keys == NULL || cp.hashes == NULL) {
        ngx_cpystrn((u_char *) err, (u_char *) "out of memory", errlen);
        rc = -1;
        goto done;
    }

    while ((rc = sh_keyrec_next(&rd, &rec, err, errlen)) == 1) {
        if (rec.ref >= st.capacity) {
            ngx_snprintf((u_char *) err, errlen,
                         "key record %uz: ref %uD is out of range%Z",
                         rd.n, rec.ref);
            rc = -1;
            goto done;
        }

        cp.keys[rec.ref].data = (u_char *) rec.data;
        cp.keys[rec.ref].len = rec.len;
        cp.hashes[rec.ref] = rec.hash;
    }

    if (rc == 0) {
        ngx_http_simhash_zone_lock(zone, log);
        ngx_http_simhash_zone_write(zone);
        ngx_http_simhash_zone_copy(&cp, ix);
        ngx_http_simhash_zone_unlock(zone);
        *copied = cp.copied;
    }

done:

    if (cp.keys) {
        ngx_free(cp.keys);
    }

    if (cp.hashes) {
        ngx_free(cp.hashes);
    }

    return rc == 0 ? NGX_OK : NGX_ERROR;
}


/*
 * A snapshot that was refused or damaged is renamed aside (PATH.refused-TIME
 * or PATH.damaged-TIME), never overwritten: if it cannot be moved, this zone
 * is not saved at all until the operator deals with it.
 */

static void
ngx_http_simhash_keep_aside(ngx_http_simhash_zone_t *zone, char *why,
    ngx_log_t *log)
{
    u_char  *aside;

    aside = ngx_alloc(zone->file.len + 2 + ngx_strlen(why) + NGX_TIME_T_LEN
                      + 1, log);
    if (aside == NULL) {
        ngx_http_simhash_save_shctx(zone)->save_off = 1;
        return;
    }

    ngx_sprintf(aside, "%V.%s-%T%Z", &zone->file, why, ngx_time());

    if (ngx_rename_file(zone->file.data, aside) == NGX_FILE_ERROR) {
        ngx_http_simhash_save_shctx(zone)->save_off = 1;

        ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                      "simhash zone \"%V\": cannot move the %s snapshot "
                      "\"%V\" aside to \"%s\"; the zone will not be saved, "
                      "so that it is not overwritten",
                      &zone->name, why, &zone->file, aside);

    } else {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "simhash zone \"%V\": the %s snapshot is kept as "
                      "\"%s\"", &zone->name, why, aside);
    }

    ngx_free(aside);
}
