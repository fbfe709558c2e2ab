/*
 * sh_keyrec.h -- the document records of the nginx module's snapshots.
 *
 * A module snapshot (sh_snapshot.h) holds the index region and, as its user
 * section, each stored document's key (URL):
 *
 *     "ngxshk2\0", then records of
 *         uint32 ref | uint32 length | uint64 fingerprint | length bytes
 *
 * in host byte order (the snapshot header refuses a foreign byte order).
 * A record counts only when its fingerprint is the one the index has for
 * its ref: the module copies the keys while documents may still change, and
 * that check keeps a key from landing on another document.
 *
 * One encoder and one decoder, for the module that writes and loads the
 * records and for `simhash index check|dump` that reads them.
 */
#ifndef SH_KEYREC_H
#define SH_KEYREC_H

#include <stddef.h>
#include <stdint.h>

#define SH_KEYREC_MAGIC     "ngxshk2"   /* + its NUL: 8 bytes */
#define SH_KEYREC_MAGIC_LEN 8
#define SH_KEYREC_HEAD      16          /* bytes before a record's key */
#define SH_KEY_MAX          65535       /* the longest key the module keeps */

typedef struct {
    uint32_t             ref;
    uint32_t             len;
    uint64_t             hash;
    const unsigned char *key;
} sh_keyrec_t;

/* Bytes a record of a `len`-byte key takes. */
#define sh_keyrec_size(len)  (SH_KEYREC_HEAD + (size_t) (len))

/* Write the magic at `buf`; returns the end of what was written. */
unsigned char *sh_keyrec_begin(unsigned char *buf);

/* Write one record at `buf`; returns the end of what was written. */
unsigned char *sh_keyrec_put(unsigned char *buf, const sh_keyrec_t *rec);

/* Does this user section hold key records? */
int sh_keyrec_is(const void *user, size_t len);

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    size_t               n;         /* records read so far */
} sh_keyrec_reader_t;

/* Start reading a user section; -1 when it does not hold key records. */
int sh_keyrec_open(sh_keyrec_reader_t *rd, const void *user, size_t len);

/*
 * The next record: 1 (rec filled; rec->key points into the section), 0 at
 * the end, -1 when the records are malformed (the reason in err).  Refs are
 * not checked against a capacity: that is the caller's index.
 */
int sh_keyrec_next(sh_keyrec_reader_t *rd, sh_keyrec_t *rec, char *err,
                   size_t errlen);

#endif
