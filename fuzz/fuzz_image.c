/*
 * fuzz_image.c -- sh_image_load (a store filled back from its image, what
 * a zone starts from: src/sh_image.h) on any bytes, and the store it
 * accepts put to work.
 *
 * Input: a flags byte, a capacity byte, then the image.
 *   bit 0  seal it first: recompute every frame's checksum and the chain
 *          hash in the trailer, so that mutations reach the checks behind
 *          them (the trailer's geometry, the records, the age order)
 *   bit 1  load into a store of the seeds' geometry (the records taken in
 *          place when they fit); else one of (capacity byte % 61) + 4
 *          documents and a smaller key ring (documents stored one by one;
 *          a region sh_store_region_size gives for fewer than 4 is refused
 *          by sh_store_init: "too small for one document")
 *   bit 2  load unkeyed (sh_image_load_unkeyed: the key hashes as they are)
 *   bit 3  expect another extraction version: the load must fail
 *
 * sh_image.h promises: a damaged or foreign image is refused with a
 * message (the store is then formatted again), never a crash and never
 * memory out of proportion to the image.  So: a refusal must come with a
 * message; an accepted image must leave a store that passes
 * sh_store_check, holds the documents it says (info.documents, no more
 * than its capacity), and stays sound under use (inserts with eviction,
 * updates, removals, each followed by sh_store_check); sh_image_inspect
 * must read what the load accepted.
 */
#include <xxhash.h>

#include "fuzz_util.h"

#include "sh_store.h"
#include "sh_image.h"

/* The image's layout (sh_image.c's: checked against the bytes a
 * real save writes by fuzz_seeds.c and by the replay of the seeds). */
#define FIMG_FRAME          24      /* type, n, first, sum */
#define FIMG_REC            56      /* an index record and a store record */
#define FIMG_TRAILER        112     /* the END frame's payload */
#define FIMG_OFF_CHAIN      104     /* of the trailer: the chain hash */
#define FIMG_PAYLOAD_MAX    (16 * 1024)
#define FIMG_CHAIN_SEED     0x5348494d41474531ULL   /* "SHIMAGE1" */

/* The seeds' store (fuzz_seeds.c writes its images). */
#define FIMG_CAP            300
#define FIMG_TEXT           4096
#define FIMG_SEED_DIGEST    77
#define FIMG_MAX_LEN        (1u << 20)

static const unsigned char fimg_secret[SH_STORE_SECRET_LEN] =
    "fuzz_image: the store's secret";

static void
fimg_init(void)
{
}

static sh_store_t *
fimg_store(void **mem, uint32_t capacity, uint64_t text)
{
    size_t      size = sh_store_region_size(capacity, text);
    char        err[256];
    sh_store_t *st;

    FUZZ_CHECK(posix_memalign(mem, 64, size) == 0);
    memset(*mem, 0xa5, size);
    st = sh_store_init(*mem, size, text, fimg_secret, FIMG_SEED_DIGEST, err,
                       sizeof(err));
    FUZZ_CHECK(st != NULL);
    return st;
}

/* A frame's payload size, as sh_image.c reads it; 0: no frame. */
static size_t
fimg_payload(const uint8_t *h)
{
    uint32_t type, n;

    memcpy(&type, h, 4);
    memcpy(&n, h + 4, 4);
    switch (type) {
    case 1:
        return (size_t) n * FIMG_REC;
    case 2:
        return ((size_t) n + 7) & ~(size_t) 7;
    case 3:
        return FIMG_TRAILER;
    default:
        return 0;
    }
}

/* Recompute the frames' sums and the chain (bit 0), as far as they parse. */
static void
fimg_seal(uint8_t *b, size_t len)
{
    size_t   at = 0, size;
    uint64_t h = FIMG_CHAIN_SEED, sum;
    uint32_t type;

    while (at + FIMG_FRAME <= len) {
        size = fimg_payload(b + at);
        if (size == 0 || size > FIMG_PAYLOAD_MAX
            || size > len - at - FIMG_FRAME)
        {
            return;
        }
        memcpy(&type, b + at, 4);
        if (type == 3) {
            memcpy(b + at + FIMG_FRAME + FIMG_OFF_CHAIN, &h, 8);
        }
        sum = XXH3_64bits(b + at + FIMG_FRAME, size);
        memcpy(b + at + 16, &sum, 8);
        if (type == 3) {
            return;
        }
        h = XXH3_64bits_withSeed(b + at, FIMG_FRAME + size, h);
        at += FIMG_FRAME + size;
    }
}

/* Put the store to work: inserts (evicting), updates, removals. */
static void
fimg_use(sh_store_t *st, fuzz_in_t *in)
{
    char             key[64], err[256];
    unsigned         i, op;
    uint32_t         ref, evicted;
    sh_store_doc_t   d;
    int              len;

    for (i = 0; i < 48; i++) {
        op = fuzz_u8(in);
        len = snprintf(key, sizeof(key), "https://fuzz.example/%u",
                       op % 40);
        ref = sh_store_find(st, key, (size_t) len);
        if (ref == SH_NOREF) {
            memset(&d, 0, sizeof(d));
            d.digest = op;
            d.time = i;
            ref = sh_store_put(st, key, (size_t) len,
                               sh_store_keyhash(st, key, (size_t) len),
                               (uint64_t) op * 0x9e3779b97f4a7c15ull, &d,
                               &evicted);
            FUZZ_CHECK(ref != SH_NOREF);
        } else if (op & 0x80) {
            FUZZ_CHECK(sh_store_remove(st, ref) == 0);
        } else {
            FUZZ_CHECK(sh_store_update(st, ref, ~(uint64_t) op) == 0);
        }
        if (sh_store_check(st, err, sizeof(err)) != 0) {
            fprintf(stderr, "fuzz_image: after use: %s\n", err);
            FUZZ_CHECK(!"the store stays sound under use");
        }
    }
}

static int
fimg_one(const uint8_t *data, size_t size)
{
    uint8_t            *img;
    void               *mem;
    sh_store_t         *st;
    sh_image_info_t     info;
    sh_image_summary_t  sum;
    sh_store_stats_t    s;
    char                err[256];
    unsigned            flags, capb;
    size_t              len;
    uint32_t            cap;
    uint64_t            text;
    int                 rc;
    fuzz_in_t           in;

    if (size < 2) {
        return 0;
    }
    flags = data[0];
    capb = data[1];
    len = size - 2;
    if (len > FIMG_MAX_LEN) {
        return 0;
    }
    /* 8-byte aligned, as the loader wants it (a file's is read so) */
    if (posix_memalign((void **) &img, 64, len ? len : 1) != 0) {
        return 0;
    }
    memcpy(img, data + 2, len);
    if (flags & 1) {
        fimg_seal(img, len);
    }

    if (flags & 2) {
        cap = FIMG_CAP;
        text = FIMG_TEXT;
    } else {
        cap = capb % 61 + 4;
        text = 1024;
    }
    st = fimg_store(&mem, cap, text);

    err[0] = '\0';
    if (flags & 4) {
        rc = sh_image_load_unkeyed(st, img, len, (flags & 8) ? 0x5eed : 0,
                                   &info, err, sizeof(err));
    } else {
        rc = sh_image_load(st, img, len, (flags & 8) ? 0x5eed : 0, &info,
                           err, sizeof(err));
    }

    if (rc != 0) {
        FUZZ_CHECK(rc == -1);
        FUZZ_CHECK(err[0] != '\0');
    } else {
        FUZZ_CHECK(!(flags & 8) || info.extraction == 0x5eed);
        if (sh_store_check(st, err, sizeof(err)) != 0) {
            fprintf(stderr, "fuzz_image: after the load: %s\n", err);
            FUZZ_CHECK(!"an accepted image leaves a sound store");
        }
        sh_store_stats(st, &s);
        FUZZ_CHECK(s.entries == info.documents);
        FUZZ_CHECK(info.documents <= cap);
        FUZZ_CHECK(info.texts <= info.documents);
        /* what the load accepted, inspecting reads */
        FUZZ_CHECK(sh_image_inspect(img, len, &sum, err, sizeof(err)) == 0);
        FUZZ_CHECK(sum.extraction == info.extraction);
        FUZZ_CHECK(info.replayed || sum.documents == info.documents);
        in.p = data + 2;
        in.n = len;
        fimg_use(st, &in);
    }

    free(mem);
    free(img);
    return 0;
}

FUZZ_ENTRY(fimg_init, fimg_one)
