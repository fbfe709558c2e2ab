/*
 * sh_keyrec.c -- encode and decode the module snapshot's document records
 * (sh_keyrec.h).
 */
#include <stdio.h>
#include <string.h>

#include "sh_keyrec.h"
#include "sh_snapshot.h"

#define HEAD     24         /* bytes before a record's data */
#define HEAD_V2  16
#define TIME     4          /* the time of a DOC_TIMED, after the head */
#define SKETCH   16         /* a DOC_SKETCHED's sketches, after the time */

size_t
sh_keyrec_size(size_t len)
{
    return HEAD + len;
}

size_t
sh_keyrec_room(size_t records, size_t data_bytes, size_t longest)
{
    size_t total = records * (HEAD + TIME + SKETCH) + data_bytes;
    size_t rec = sh_keyrec_size(longest) + TIME + SKETCH;

    /* A block is closed only when the next record does not fit, so each
     * holds at least SH_SNAP_BLOCK - rec bytes and wastes less than rec. */
    if (rec >= SH_SNAP_BLOCK / 2) {
        return 2 * total + SH_SNAP_BLOCK;
    }
    return total + (total / (SH_SNAP_BLOCK - rec) + 1) * rec;
}

void
sh_keyrec_writer_init(sh_keyrec_writer_t *w, void *buf, size_t size)
{
    w->start = buf;
    w->p = buf;
    w->end = w->start + size;
}

int
sh_keyrec_put(sh_keyrec_writer_t *w, const sh_keyrec_t *rec)
{
    size_t   need = sh_keyrec_size(rec->len), head = HEAD;
    size_t   in_block = (size_t) (w->p - w->start) % SH_SNAP_BLOCK;
    size_t   pad = 0;
    uint16_t type = (uint16_t) rec->type, len = (uint16_t) rec->len;

    if (rec->type == SH_KEYREC_DOC
        && (rec->sketches.structure | rec->sketches.links) != 0)
    {
        type = SH_KEYREC_DOC_SKETCHED;
        head += TIME + SKETCH;
        need += TIME + SKETCH;

    } else if (rec->type == SH_KEYREC_DOC && rec->time != 0) {
        type = SH_KEYREC_DOC_TIMED;
        head += TIME;
        need += TIME;
    }

    if (rec->len > SH_KEY_MAX) {
        return -1;
    }
    if (in_block + need > SH_SNAP_BLOCK) {
        pad = SH_SNAP_BLOCK - in_block;
    }
    if ((size_t) (w->end - w->p) < pad + need) {
        return -1;
    }
    memset(w->p, 0, pad);
    w->p += pad;

    memcpy(w->p, &type, 2);
    memcpy(w->p + 2, &len, 2);
    memcpy(w->p + 4, &rec->ref, 4);
    memcpy(w->p + 8, &rec->hash, 8);
    memcpy(w->p + 16, &rec->digest, 8);
    if (head > HEAD) {
        memcpy(w->p + HEAD, &rec->time, TIME);
    }
    if (head > HEAD + TIME) {
        memcpy(w->p + HEAD + TIME, &rec->sketches.structure, 8);
        memcpy(w->p + HEAD + TIME + 8, &rec->sketches.links, 8);
    }
    memcpy(w->p + head, rec->data, rec->len);
    w->p += need;
    return 0;
}

size_t
sh_keyrec_written(const sh_keyrec_writer_t *w)
{
    return (size_t) (w->p - w->start);
}

int
sh_keyrec_open(sh_keyrec_reader_t *rd, const char *kind, const void *user,
               size_t len)
{
    if (strcmp(kind, SH_KEYREC_KIND) == 0) {
        rd->v2 = 0;
    } else if (strcmp(kind, SH_KEYREC_KIND_V2) == 0) {
        rd->v2 = 1;
    } else {
        return -1;
    }
    rd->start = user;
    rd->p = user;
    rd->end = rd->start + len;
    rd->n = 0;
    return 0;
}

/* uint32 ref | uint32 length | uint64 fingerprint | key */
static int
next_v2(sh_keyrec_reader_t *rd, sh_keyrec_t *rec, char *err, size_t errlen)
{
    if ((size_t) (rd->end - rd->p) < HEAD_V2) {
        snprintf(err, errlen, "key record %zu is truncated", rd->n);
        return -1;
    }
    memcpy(&rec->ref, rd->p, 4);
    memcpy(&rec->len, rd->p + 4, 4);
    memcpy(&rec->hash, rd->p + 8, 8);
    if (rec->len == 0 || rec->len > SH_KEY_MAX
        || (size_t) (rd->end - rd->p) - HEAD_V2 < rec->len)
    {
        snprintf(err, errlen, "key record %zu has a bad length %u", rd->n,
                 rec->len);
        return -1;
    }
    rec->type = SH_KEYREC_DOC;
    rec->digest = 0;
    rec->time = 0;
    memset(&rec->sketches, 0, sizeof(rec->sketches));
    rec->data = rd->p + HEAD_V2;
    rd->p += HEAD_V2 + rec->len;
    rd->n++;
    return 1;
}

int
sh_keyrec_next(sh_keyrec_reader_t *rd, sh_keyrec_t *rec, char *err,
               size_t errlen)
{
    size_t   in_block, left, head;
    uint16_t type, len;

    if (rd->v2) {
        return rd->p == rd->end ? 0 : next_v2(rd, rec, err, errlen);
    }

    for ( ;; ) {
        if (rd->p == rd->end) {
            return 0;
        }
        in_block = (size_t) (rd->p - rd->start) % SH_SNAP_BLOCK;
        left = SH_SNAP_BLOCK - in_block;
        if ((size_t) (rd->end - rd->p) < left) {
            left = (size_t) (rd->end - rd->p);
        }
        type = 0;
        if (left >= 2) {
            memcpy(&type, rd->p, 2);
        }
        if (type != SH_KEYREC_PAD) {
            break;
        }
        /* padding, or a damaged block the loader zeroed: the next block */
        rd->p += left;
    }

    len = 0;
    if (left >= HEAD) {
        memcpy(&len, rd->p + 2, 2);
    }
    head = (type == SH_KEYREC_DOC_TIMED) ? HEAD + TIME
           : (type == SH_KEYREC_DOC_SKETCHED) ? HEAD + TIME + SKETCH : HEAD;
    if ((type != SH_KEYREC_DOC && type != SH_KEYREC_META
         && type != SH_KEYREC_DOC_TIMED && type != SH_KEYREC_DOC_SKETCHED)
        || left < head || left - head < len
        || (type != SH_KEYREC_META && len == 0))
    {
        snprintf(err, errlen, "record %zu is malformed (type %u, length %u)",
                 rd->n, (unsigned) type, (unsigned) len);
        return -1;
    }
    rec->type = (type == SH_KEYREC_META) ? SH_KEYREC_META : SH_KEYREC_DOC;
    rec->len = len;
    memcpy(&rec->ref, rd->p + 4, 4);
    memcpy(&rec->hash, rd->p + 8, 8);
    memcpy(&rec->digest, rd->p + 16, 8);
    rec->time = 0;
    memset(&rec->sketches, 0, sizeof(rec->sketches));
    if (head > HEAD) {
        memcpy(&rec->time, rd->p + HEAD, TIME);
    }
    if (head > HEAD + TIME) {
        memcpy(&rec->sketches.structure, rd->p + HEAD + TIME, 8);
        memcpy(&rec->sketches.links, rd->p + HEAD + TIME + 8, 8);
    }
    rec->data = rd->p + head;
    rd->p += head + len;
    rd->n++;
    return 1;
}
