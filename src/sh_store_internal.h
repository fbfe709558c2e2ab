/*
 * sh_store_internal.h -- the store's region, for its own files
 * (sh_store.c, sh_image.c) only.
 */
#ifndef SH_STORE_INTERNAL_H
#define SH_STORE_INTERNAL_H

#include "sh_store.h"

#define ST_MAGIC        "SHSTORE"
#define ST_VERSION      1u
#define ST_ENDIAN       0x01020304u
#define ST_DIRTY_SHIFT  6           /* one dirty mark per 64 refs */
#define ST_TEXT_MIN     4096u
#define ST_TEXT_MAX     (32ull << 30)   /* positions are kept / 8 in 32 bits */
#define ST_TEXT_WRAP    UINT32_MAX  /* a ring entry's ref: the rest of the
                                       ring up to its end is unused */

#define ST_ALIGN8(x)    (((x) + 7) & ~(uint64_t) 7)
#define ST_ALIGN64(x)   (((x) + 63) & ~(uint64_t) 63)

/* A key's text in the ring: this header, the bytes, padding to 8. */
typedef struct {
    uint32_t ref;           /* ST_TEXT_WRAP: skip to the ring's start */
    uint16_t len;
    uint16_t check;         /* low bits of the key hash */
} st_text_t;

struct sh_store_s {
    char          magic[8];
    uint32_t      version;
    uint32_t      endian;
    uint32_t      header_size;
    uint32_t      capacity;
    uint32_t      kslots;       /* of the key table */
    uint32_t      saving;       /* a sliced copy runs: mark what changes */
    uint64_t      region_size;
    uint64_t      text_size;    /* of the ring, a multiple of 8 */
    uint64_t      off_index;
    uint64_t      index_size;
    uint64_t      off_docs;
    uint64_t      off_keys;
    uint64_t      off_dirty;
    uint64_t      dirty_bytes;
    uint64_t      off_text;
    uint64_t      text_head;    /* ring positions, growing: offset is */
    uint64_t      text_tail;    /* position % text_size */
    uint64_t      texts;        /* documents whose text is in the ring */
    uint64_t      text_evictions;
    uint64_t      evictions;
    uint64_t      collisions;
    uint64_t      repairs;      /* a copy that sees it change gives up */
    unsigned char secret[SH_STORE_SECRET_LEN];
};

static inline sh_store_doc_t *
st_docs(const sh_store_t *st)
{
    return (sh_store_doc_t *) ((char *) st + st->off_docs);
}

static inline uint32_t *
st_keys(const sh_store_t *st)
{
    return (uint32_t *) ((char *) st + st->off_keys);
}

static inline unsigned char *
st_dirty(const sh_store_t *st)
{
    return (unsigned char *) st + st->off_dirty;
}

static inline unsigned char *
st_text(const sh_store_t *st)
{
    return (unsigned char *) st + st->off_text;
}

/* Mark ref's records as changed, while a copy runs. */
static inline void
st_mark(sh_store_t *st, uint32_t ref)
{
    if (st->saving && ref < st->capacity) {
        st_dirty(st)[ref >> (ST_DIRTY_SHIFT + 3)]
            |= (unsigned char) (1u << ((ref >> ST_DIRTY_SHIFT) & 7));
    }
}

/* Ring position of a record's text (text != SH_STORE_NOTEXT). */
static inline uint64_t
st_text_pos(const sh_store_t *st, uint32_t text)
{
    uint64_t base = st->text_head >> 3;

    return (base - (uint32_t) ((uint32_t) base - text)) << 3;
}

/* Enter ref, whose record holds keyhash, in the key table. */
void st_keys_insert(sh_store_t *st, uint32_t ref, uint64_t keyhash);

/* Fill the EMPTY key table with n pairs (keyhash[i], ref[i]) at once. */
void st_keys_build(sh_store_t *st, const uint64_t *keyhash,
                   const uint32_t *ref, uint32_t n);

#endif
