/*
 * sh_store.h -- the compact document store: every document a zone holds,
 * in fixed-size records, with no pointer per document.
 *
 * One relocatable region (offsets only, like sh_index.h) holds:
 *
 *   the PSM index   sh_index.h: fingerprints, refs, the age order
 *   records         sh_store_doc_t[capacity], by ref: body digest, keyed
 *                   hash of the key, the listing veto's sketches, the
 *                   second of the version, where the key's text is
 *   the key table   uint32_t refs, open addressing on the key hash
 *   the key text    a ring of its own size: the oldest text goes first
 *   dirty marks     one bit per 64 refs, for the sliced copy
 *                   (sh_image.h)
 *
 * Per document that is about 76 bytes whatever the key's length (30.6 of
 * the index, 40 of the record, 5.2 of the key table; docs/SCALE.md), plus
 * the key's text in the ring: 8 bytes of header and the text, rounded up
 * to 8.  A document whose text left the ring still decides every status
 * (the key table holds its hash); it is then named by its id
 * (sh_store_id), the key hash in hex, which says nothing of the URL.
 *
 * Keys are found by a 64-bit hash keyed by the tier's secret (a client
 * cannot aim a URL at another's hash).  Two keys of one hash are told apart
 * by their text while the ring holds it; once it is gone, a new key whose
 * hash equals a stored one is taken for it: at 2^30 stored documents a
 * lookup has odds of 2^-34 of that, about one wrong "unchanged" in 17
 * billion fetches.
 *
 * Eviction stays least-recently-stored: the index's age order decides, and
 * sh_store_touch makes a document the newest again (its text is copied to
 * the front of the ring when it is in the older half, so that the text of
 * a page seen often outlives the ring's turnover).
 *
 * Concurrency: as sh_index.h; the caller holds the zone's lock around every
 * call.  Nothing here allocates.
 */
#ifndef SH_STORE_H
#define SH_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "sh_index.h"
#include "sh_sketch.h"

#define SH_STORE_KEY_MAX    65535u      /* bytes of a key */
#define SH_STORE_NOTEXT     UINT32_MAX
#define SH_STORE_SECRET_LEN 192         /* XXH3's secret: the key hash's */
#define SH_STORE_ID_LEN     16          /* hex digits of sh_store_id */

/* What a zone derives the key secret from its options' hash key for
 * (sh_config_derive_key): a tool that writes a zone's snapshot uses it */
#define SH_STORE_KEY_PURPOSE "store keys"

typedef struct sh_store_s sh_store_t;

/* A document's record. */
typedef struct {
    uint64_t      digest;       /* of the raw body; 0 = unknown */
    uint64_t      keyhash;      /* sh_store_keyhash of its key */
    sh_sketches_t sketches;     /* 0, 0: none known */
    uint32_t      time;         /* second of its version; 0 = unknown */
    uint32_t      text;         /* where its text is, SH_STORE_NOTEXT */
} sh_store_doc_t;

typedef struct {
    uint32_t capacity;          /* documents */
    uint32_t entries;
    uint64_t region_bytes;
    uint64_t doc_bytes;         /* index, records, key table, marks */
    uint64_t text_bytes;        /* the ring */
    uint64_t text_used;         /* bytes of it in use */
    uint64_t texts;             /* documents whose text is in the ring */
    uint64_t text_evictions;    /* texts that left the ring, documents
                                   still stored */
    uint64_t evictions;         /* documents evicted to make room */
    uint64_t collisions;        /* lookups that met another key's hash */
} sh_store_stats_t;

/*
 * Region size for `capacity` documents and a ring of `text_bytes` (at
 * least 4096, at most 32 GB), and the capacity that fits `bytes` with it
 * (0: none).
 */
size_t   sh_store_region_size(uint32_t capacity, uint64_t text_bytes);
uint32_t sh_store_capacity_for(size_t bytes, uint64_t text_bytes);

/*
 * Format `region` (8-byte aligned) as an empty store of the capacity that
 * fits.  `secret` (SH_STORE_SECRET_LEN bytes) keys the key hash: derive it
 * from the tier's secret (sh_store_secret).  `seed_digest` goes to the
 * index (sh_index_init).  NULL and a message on error.
 */
sh_store_t *sh_store_init(void *region, size_t size, uint64_t text_bytes,
                          const unsigned char *secret, uint64_t seed_digest,
                          char *err, size_t errlen);

/* Validate an existing region (after a reload). */
sh_store_t *sh_store_attach(void *region, size_t size, char *err,
                            size_t errlen);

/* The key hash's secret, from up to 32 bytes of key material. */
void sh_store_secret(const unsigned char *key, size_t len,
                     unsigned char out[SH_STORE_SECRET_LEN]);

sh_index_t *sh_store_index(sh_store_t *st);
const sh_index_t *sh_store_index_const(const sh_store_t *st);

uint64_t sh_store_keyhash(const sh_store_t *st, const char *key, size_t len);

/* The document of a key, SH_NOREF if none. */
uint32_t sh_store_find(sh_store_t *st, const char *key, size_t len);

/* The document of a key hash whose text may be gone (a snapshot's, a
 * replica's record), SH_NOREF if none. */
uint32_t sh_store_find_hash(const sh_store_t *st, uint64_t keyhash);

/*
 * Store a new document (its key must not be stored: find first).  `key`
 * may be NULL (the text is unknown: keyhash says which key).  Evicts the
 * oldest document when full; *evicted (if not NULL) says which ref was
 * evicted (SH_NOREF: none).  Returns the ref, SH_NOREF if the region is
 * damaged.
 */
uint32_t sh_store_put(sh_store_t *st, const char *key, size_t len,
                      uint64_t keyhash, uint64_t fingerprint,
                      const sh_store_doc_t *doc, uint32_t *evicted);

/* The document was seen again: make it the newest. */
int sh_store_touch(sh_store_t *st, uint32_t ref);

/* Its fingerprint changed: replace it, make it the newest. */
int sh_store_update(sh_store_t *st, uint32_t ref, uint64_t fingerprint);

int sh_store_remove(sh_store_t *st, uint32_t ref);

/* A document's record (NULL if `ref` is not stored); change it only through
 * sh_store_set. */
const sh_store_doc_t *sh_store_doc(const sh_store_t *st, uint32_t ref);

/* Change a stored document's digest, time or sketches (not its keyhash or
 * text): the dirty marks follow. */
void sh_store_set(sh_store_t *st, uint32_t ref, const sh_store_doc_t *doc);

/* The text of a document's key: its length, *text pointing into the ring;
 * 0 when it left the ring (or ref is not stored). */
size_t sh_store_key(const sh_store_t *st, uint32_t ref, const char **text);

/* A document's stable id: SH_STORE_ID_LEN hex digits of its key hash,
 * NUL-terminated in out[SH_STORE_ID_LEN + 1]. */
void sh_store_id(const sh_store_t *st, uint32_t ref, char *out);

void sh_store_stats(const sh_store_t *st, sh_store_stats_t *s);

/*
 * After a writer died in the middle of a change: rebuild the index's age
 * order and table, the key table and the ring's bookkeeping from the
 * records themselves.  Documents keep their refs; the age order is what
 * the old one still says, documents it lost follow, newest last; a record
 * without a fingerprint or a key hash is dropped, a text that is not its
 * own is forgotten.  A copy in progress (sh_image.h) is abandoned.
 * Needs memory for 16 bytes a document.  Returns the documents kept, or
 * -1 when out of memory (nothing changed); *dropped: the documents that
 * had no key hash (a put the writer did not finish: every change writes
 * the record before the tables point to it).
 */
long sh_store_repair(sh_store_t *st, uint32_t *dropped);

/* Full structural check: the index, every record against the key table,
 * the ring; 0 if consistent. */
int sh_store_check(const sh_store_t *st, char *err, size_t errlen);

#endif
