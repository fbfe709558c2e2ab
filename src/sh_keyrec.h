/*
 * sh_keyrec.h -- the document records of the nginx module's snapshots.
 *
 * A module snapshot (sh_snapshot.h) holds the index region and, as its user
 * section of kind SH_KEYREC_KIND, one record per stored document, oldest
 * first, with everything needed to rebuild the zone without the region:
 *
 *     uint16 type | uint16 length | uint32 ref | uint64 fingerprint |
 *     uint64 body digest | length bytes (the key)
 *
 * in host byte order (the snapshot header refuses a foreign byte order),
 * plus META records (same head, the bytes are "name=value\n" lines: the
 * zone's settings at the time of the save).  A document whose version time
 * is known (a replicated zone's) is a DOC_TIMED record: the same head,
 * then uint32 time (seconds since 1970), then the key; the reader returns
 * it as a DOC with rec.time set, so that readers of documents need not
 * know the difference.  A document with sketches (sh_sketch.h) is a
 * DOC_SKETCHED record: the head, the time (0 if unknown), uint64 structure,
 * uint64 links, then the key; read back as a DOC with rec.sketches set.  Zones that are not replicated write plain DOC
 * records, which readers older than DOC_TIMED still take.  A record never
 * straddles a block of SH_SNAP_BLOCK bytes: the rest of a block that cannot
 * hold the next record is zeros (type 0, padding).  So a block that fails its
 * checksum, zero-filled by the loader, reads as padding and costs exactly
 * its own records.
 *
 * Format 1 snapshots hold the older records of kind SH_KEYREC_KIND_V2,
 * in ref order (uint32 ref | uint32 length | uint64 fingerprint | key);
 * they are read, never written.
 *
 * One encoder and one decoder, for the module that writes and loads the
 * records and for `simhash index check|dump` that reads them.
 */
#ifndef SH_KEYREC_H
#define SH_KEYREC_H

#include <stddef.h>
#include <stdint.h>

#include "sh_sketch.h"

#define SH_KEYREC_KIND      "ngxshk3"
#define SH_KEYREC_KIND_V2   "ngxshk2"
#define SH_KEY_MAX          65535   /* the longest key the module keeps */

enum {
    SH_KEYREC_PAD = 0,
    SH_KEYREC_DOC = 1,
    SH_KEYREC_META = 2,
    SH_KEYREC_DOC_TIMED = 3,    /* written for a DOC with a time */
    SH_KEYREC_DOC_SKETCHED = 4  /* written for a DOC with sketches */
};

typedef struct {
    unsigned             type;      /* SH_KEYREC_DOC or SH_KEYREC_META */
    uint32_t             ref;       /* in the saved index; 0 for META */
    uint32_t             len;
    uint64_t             hash;      /* the fingerprint */
    uint64_t             digest;    /* of the raw body; 0 = unknown */
    uint32_t             time;      /* DOC: its version, seconds since 1970;
                                       0 = unknown */
    sh_sketches_t        sketches;  /* DOC: the listing veto's (sh_sketch.h);
                                       0 = none known */
    const unsigned char *data;      /* the key, or the META text */
} sh_keyrec_t;

/* Bytes a record of `len` data bytes takes (a DOC with a time: 4 more). */
size_t sh_keyrec_size(size_t len);

/*
 * A buffer of this many bytes always holds `records` records carrying
 * `data_bytes` bytes in all, none longer than `longest`, with the padding
 * at block ends, times included.
 */
size_t sh_keyrec_room(size_t records, size_t data_bytes, size_t longest);

typedef struct {
    unsigned char *start;
    unsigned char *p;
    unsigned char *end;
} sh_keyrec_writer_t;

void sh_keyrec_writer_init(sh_keyrec_writer_t *w, void *buf, size_t size);

/* Append a record; -1 when the buffer has no room for it (or len is over
 * SH_KEY_MAX). */
int sh_keyrec_put(sh_keyrec_writer_t *w, const sh_keyrec_t *rec);

size_t sh_keyrec_written(const sh_keyrec_writer_t *w);

typedef struct {
    const unsigned char *start;
    const unsigned char *p;
    const unsigned char *end;
    int                  v2;
    size_t               n;         /* records read so far */
} sh_keyrec_reader_t;

/* Start reading a user section of `kind`; -1 when it holds no records. */
int sh_keyrec_open(sh_keyrec_reader_t *rd, const char *kind,
                   const void *user, size_t len);

/*
 * The next record: 1 (rec filled; rec->data points into the section), 0 at
 * the end, -1 when the records are malformed (the reason in err).  Refs are
 * not checked against a capacity: that is the caller's index.
 */
int sh_keyrec_next(sh_keyrec_reader_t *rd, sh_keyrec_t *rec, char *err,
                   size_t errlen);

#endif
