/*
 * sh_cluster.h -- the tier's shared index as it lies in a Redis Cluster.
 *
 * A Redis Cluster spreads its keys over 16384 hash slots by the CRC16 of
 * the key's name (of the part between the first '{' and the next '}' when
 * that part is not empty: a "hash tag"), and each master serves a set of
 * slots.  The index is held in two families of keys, both plain strings
 * written whole whenever possible (a string grown by APPEND is
 * over-allocated by Redis: measured in BENCHMARKS.md):
 *
 *     PREFIX "f" HEX   a bucket of PSM's table: the documents whose
 *                      fingerprint's top fp_bits bits are HEX.  Each entry
 *                      is the fingerprint's tail (its other 64 - fp_bits
 *                      bits, in as few bytes as hold them) and the top 32
 *                      bits of the document's key hash: enough to find its
 *                      record (below), which has the rest.
 *     PREFIX "r" HEX   a bucket of records: the documents whose key hash's
 *                      top rec_bits bits are HEX.  Each entry is the key
 *                      hash's tail, the fingerprint (8), the body digest
 *                      (8), the version's second (4) and the two sketches
 *                      (16).
 *     PREFIX "k" HEX   a bucket of key text: the documents whose key
 *                      hash's top key_bits bits are HEX (key_bits is
 *                      rec_bits + 2, at most SH_CLUSTER_BITS_MAX: a
 *                      quarter of a record bucket's documents, since a
 *                      text is about twice a record).  Each entry is the
 *                      key hash's tail, the text's length (2 bytes) and
 *                      the text: what Duplicate-Of names, read beside the
 *                      candidate's record (the same round trip).
 *
 * HEX is the bucket number in lower-case hex, as many digits as the bits
 * take.  A lookup probes the fingerprint buckets PSM's order names (VOSH
 * over the top fp_bits bits: sh_cluster_probes), compares every entry of
 * each with the page's fingerprint, and reads the candidate's record for
 * its sketches, its whole key hash (its id in Duplicate-Of) and to check
 * that the entry is current: the record must have the entry's
 * fingerprint, which also tells apart two documents whose key hashes
 * share their top 32 bits (a document whose fingerprint changed leaves its
 * old entry behind; its record names the new one).  A re-fetch reads its key's record bucket.
 *
 * A bucket's value is a run of chunks, each one write of one or more
 * entries:
 *
 *     kind (1 byte: 'f', 'r' or 'k')  count (2 bytes, little-endian)
 *     count entries                   MAC (16 bytes)
 *
 * (a key text entry says its own length: a chunk of them ends where its
 * count-th entry does)
 *
 * The MAC is HMAC-SHA256, truncated, of the prefix, the kind, the bucket
 * bits and number and the chunk before it, under a key derived from the tier's
 * secret: a client that can write to Redis but does not hold the secret
 * cannot add an entry that is read as the tier's (a forged duplicate), nor
 * move a chunk to another bucket or another tier's prefix.  It can delete
 * or truncate (so can FLUSHALL); a reader then finds fewer documents, never
 * a false one.  A bulk load writes each bucket as one chunk (SET); a node
 * adds a new document as a chunk of one entry (APPEND).
 *
 *     PREFIX "m"       the layout: "FP_BITS REC_BITS" in decimal (a bulk
 *                      load writes it; every node reads it at start).
 *                      Not MACed: a chunk read under other bits is forged.
 *
 * Everything here is pure computation: no I/O, no allocation.
 */
#ifndef SH_CLUSTER_H
#define SH_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "sh_sketch.h"
#include "sh_volatility.h"

#define SH_CLUSTER_SLOTS        16384

#define SH_CLUSTER_PREFIX_MAX   32      /* bytes of a key prefix */
#define SH_CLUSTER_BITS_MIN     4       /* bucket bits, either family */
#define SH_CLUSTER_BITS_MAX     28
/* a bucket's key: prefix, kind, up to 7 hex digits, NUL */
#define SH_CLUSTER_KEY_MAX      (SH_CLUSTER_PREFIX_MAX + 1 + 7 + 1)

#define SH_CLUSTER_MAC_LEN      16
#define SH_CLUSTER_MACKEY_LEN   32
#define SH_CLUSTER_CHUNK_HEAD   3       /* kind and count */
#define SH_CLUSTER_CHUNK_MAX    65535   /* entries of one chunk */

#define SH_CLUSTER_META         'm'
#define SH_CLUSTER_FP           'f'
#define SH_CLUSTER_REC          'r'
#define SH_CLUSTER_TEXT         'k'
#define SH_CLUSTER_TEXT_MAX     65535   /* bytes of a key text */

/* Redis's CRC16 (XMODEM: polynomial 0x1021, initial 0). */
uint16_t sh_cluster_crc16(const void *buf, size_t len);

/* The hash slot of a key: the CRC16 of its hash tag, or of the whole key
 * when it has none, modulo 16384. */
unsigned sh_cluster_slot(const void *key, size_t len);

/* How the index lies in the cluster (every node of a tier the same). */
typedef struct {
    char          prefix[SH_CLUSTER_PREFIX_MAX + 1];
    size_t        prefix_len;
    unsigned      fp_bits;      /* top bits of a fingerprint: its bucket */
    unsigned      rec_bits;     /* top bits of a key hash: its record's */
    unsigned      key_bits;     /* top bits of a key hash: its text's */
    unsigned      fp_tail;      /* bytes of a fingerprint's tail */
    unsigned      rec_tail;     /* bytes of a key hash's tail */
    unsigned      key_tail;     /* bytes of a key hash's tail (text) */
    unsigned      fp_entry;     /* bytes of a table entry */
    unsigned      rec_entry;    /* bytes of a record */
    unsigned char mackey[SH_CLUSTER_MACKEY_LEN];
} sh_cluster_layout_t;

/*
 * A layout: prefix (printable, no '{' or '}', which would put every
 * bucket in one slot), the bucket bits of each family, and the MAC key:
 * sh_mac_derive(key, 32, the stream's key, 32, "cluster"), where the
 * stream's key is sh_config_derive_key(cfg, "stream mac") (a zone holds
 * that one already; the command-line tool derives both).  0, or -1 and why in
 * err.
 */
int sh_cluster_layout_init(sh_cluster_layout_t *l, const char *prefix,
                           size_t prefix_len, unsigned fp_bits,
                           unsigned rec_bits,
                           const unsigned char mackey[SH_CLUSTER_MACKEY_LEN],
                           char *err, size_t errlen);

/* The bucket bits that give about `per_bucket` entries a bucket for n
 * documents (clamped to SH_CLUSTER_BITS_MIN..MAX). */
unsigned sh_cluster_bits_for(uint64_t n, unsigned per_bucket);

/* The bucket of a fingerprint or a key hash. */
uint32_t sh_cluster_fp_bucket(const sh_cluster_layout_t *l, uint64_t fp);
uint32_t sh_cluster_rec_bucket(const sh_cluster_layout_t *l, uint64_t kh);
uint32_t sh_cluster_text_bucket(const sh_cluster_layout_t *l, uint64_t kh);

/* A bucket's key name, NUL-terminated into buf (SH_CLUSTER_KEY_MAX
 * bytes); returns its length.  kind: SH_CLUSTER_FP, SH_CLUSTER_REC,
 * SH_CLUSTER_TEXT or SH_CLUSTER_META (no bucket). */
size_t sh_cluster_key(const sh_cluster_layout_t *l, int kind,
                      uint32_t bucket, char *buf);

/* The meta key's value (SH_CLUSTER_META_MAX bytes with its NUL), and
 * read back: 0, or -1 if it is not a layout. */
#define SH_CLUSTER_META_MAX     16
size_t sh_cluster_meta_format(const sh_cluster_layout_t *l, char *buf);
int sh_cluster_meta_parse(const char *s, size_t len, unsigned *fp_bits,
                          unsigned *rec_bits);

/* A table entry, and a record. */
typedef struct {
    uint64_t fp;
    uint64_t id;            /* the document's key hash: read from a
                               bucket, only its top 32 bits */
} sh_cluster_fpent_t;

typedef struct {
    uint64_t      kh;       /* the key hash */
    uint64_t      fp;
    uint64_t      digest;
    uint32_t      second;   /* the version's (sh_stream_second) */
    sh_sketches_t sk;
} sh_cluster_rec_t;

/* A document's key text (not NUL-terminated). */
typedef struct {
    uint64_t      kh;
    const char   *text;
    size_t        len;      /* 1..SH_CLUSTER_TEXT_MAX */
} sh_cluster_text_t;

/* Bytes of a chunk of n entries of a kind (not SH_CLUSTER_TEXT). */
size_t sh_cluster_chunk_size(const sh_cluster_layout_t *l, int kind,
                             size_t n);

/*
 * One chunk of n (1..SH_CLUSTER_CHUNK_MAX) entries, all of `bucket`, into
 * out (sh_cluster_chunk_size bytes); returns its length, or 0 if an entry
 * is not of the bucket, n is out of range, or the MAC could not be made.
 */
size_t sh_cluster_encode_fp(const sh_cluster_layout_t *l, uint32_t bucket,
                            const sh_cluster_fpent_t *e, size_t n,
                            unsigned char *out);
size_t sh_cluster_encode_rec(const sh_cluster_layout_t *l, uint32_t bucket,
                             const sh_cluster_rec_t *r, size_t n,
                             unsigned char *out);

/* Bytes of a chunk of these n key texts. */
size_t sh_cluster_text_size(const sh_cluster_layout_t *l,
                            const sh_cluster_text_t *t, size_t n);

/* One chunk of n key texts, all of `bucket` (sh_cluster_text_bucket), into
 * out (sh_cluster_text_size bytes): its length, or 0 as the others. */
size_t sh_cluster_encode_text(const sh_cluster_layout_t *l, uint32_t bucket,
                              const sh_cluster_text_t *t, size_t n,
                              unsigned char *out);

/* What reading a bucket met. */
typedef struct {
    uint32_t chunks;        /* read and verified */
    uint32_t entries;       /* in them */
    uint32_t forged;        /* chunks whose MAC did not verify: skipped */
    uint32_t malformed;     /* 1: the value ended inside a chunk, or a
                               chunk of another kind: the rest unread */
} sh_cluster_read_t;

/*
 * The table entries of a bucket's value within distance h of x (Hamming
 * distance of the whole fingerprint), up to max of them into out, closest
 * first; returns how many were found (all of them, even past max).  rd
 * (may be NULL) says what the value held.
 */
size_t sh_cluster_near(const sh_cluster_layout_t *l, uint32_t bucket,
                       const unsigned char *v, size_t len, uint64_t x,
                       unsigned h, sh_cluster_fpent_t *out, size_t max,
                       sh_cluster_read_t *rd);

/*
 * The record of key hash kh in a record bucket's value: its newest version
 * (by second, then fingerprint, as sh_stream_newer orders them) into out.
 * 1 if found, 0 if not.
 */
int sh_cluster_find_rec(const sh_cluster_layout_t *l, uint32_t bucket,
                        const unsigned char *v, size_t len, uint64_t kh,
                        sh_cluster_rec_t *out, sh_cluster_read_t *rd);

/*
 * The record a table entry names (e: its fingerprint, the top 32 bits of
 * its key hash) in its record bucket's value (sh_cluster_rec_bucket of
 * e->id): the newest version of the document whose key hash has those top
 * bits, if that version still has e's fingerprint.  1 if found, 0 if not
 * (the document changed since, or the entry is another's).
 */
int sh_cluster_find_entry_rec(const sh_cluster_layout_t *l, uint32_t bucket,
                              const unsigned char *v, size_t len,
                              const sh_cluster_fpent_t *e,
                              sh_cluster_rec_t *out, sh_cluster_read_t *rd);

/*
 * The key text of a document in a text bucket's value: the first entry
 * of a verified chunk whose key hash, masked, is want & mask (mask: all
 * ones for a whole key hash, or its top 32 bits for a table entry's id).
 * 1 with out set (out->text points into v), 0 if none.  Only a chunk
 * whose MAC verifies is read: a text written without the tier's secret is
 * never named.
 */
int sh_cluster_find_text(const sh_cluster_layout_t *l, uint32_t bucket,
                         const unsigned char *v, size_t len, uint64_t want,
                         uint64_t mask, sh_cluster_text_t *out,
                         sh_cluster_read_t *rd);

/*
 * The fingerprint buckets a lookup of x reads: x's own first, then the
 * buckets of x with the VOSH subsets of at most h of the top fp_bits bits
 * flipped, in decreasing probability under vol (NULL: the built-in table),
 * until k subsets have been emitted.  The probability of a bit's flip is
 * read from the page's own |W[j]| (w: sh_result_t.weights), as the local
 * index ranks them: a bit the page barely decided is the likeliest to
 * differ in its copy.  w NULL ranks by position only (a fingerprint typed
 * by hand).  Every bucket once.  Returns how many were written to out (at
 * most max).
 */
size_t sh_cluster_probes(const sh_cluster_layout_t *l, uint64_t x,
                         const float *w, unsigned h, unsigned k,
                         const sh_volatility_t *vol, uint32_t *out,
                         size_t max);

/* k for a recall target at radius h (as the index derives it). */
unsigned sh_cluster_probes_for(const sh_cluster_layout_t *l, unsigned h,
                               float recall, const sh_volatility_t *vol);

#endif
