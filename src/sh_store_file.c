/*
 * sh_store_file.c -- a zone's snapshot in the store's format
 * (sh_store_file.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_le.h"
#include "sh_store_file.h"

#define FILE_VERSION    1u
#define FILE_ENDIAN     0x01020304u
#define TAIL_MAGIC      "SHZTAIL1"

typedef struct {
    char     magic[8];
    uint32_t version;
    uint32_t endian;
    uint64_t meta_len;
    uint64_t xxh;           /* of this header up to here, and the meta */
} file_header_t;

static uint64_t
header_hash(const file_header_t *h, const void *meta, size_t len)
{
    uint64_t seed = XXH3_64bits(h, offsetof(file_header_t, xxh));

    return XXH3_64bits_withSeed(meta, len, seed);
}

int
sh_store_file_begin(sh_file_writer_t *w, const void *meta,
                    size_t meta_len, char *err, size_t errlen)
{
    file_header_t h;
    static const char pad[8];

    if (meta_len > SH_STORE_FILE_META_MAX) {
        snprintf(err, errlen, "snapshot settings too long");
        return -1;
    }
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, SH_STORE_FILE_MAGIC, sizeof(h.magic));
    h.version = FILE_VERSION;
    h.endian = FILE_ENDIAN;
    h.meta_len = meta_len;
    h.xxh = header_hash(&h, meta, meta_len);
    if (sh_file_writer_write(w, &h, sizeof(h), err, errlen) != 0
        || sh_file_writer_write(w, meta, meta_len, err, errlen) != 0
        || sh_file_writer_write(w, pad, (8 - meta_len % 8) % 8, err,
                                    errlen) != 0)
    {
        return -1;
    }
    return 0;
}

int
sh_store_file_is(const unsigned char *file, size_t len)
{
    return len >= 8 && memcmp(file, SH_STORE_FILE_MAGIC, 8) == 0;
}

int
sh_store_file_parse(const unsigned char *file, size_t len,
                    const unsigned char **meta, size_t *meta_len,
                    const unsigned char **image, size_t *image_len,
                    char *err, size_t errlen)
{
    file_header_t h;
    size_t        at;

    if (len < sizeof(h) || !sh_store_file_is(file, len)) {
        snprintf(err, errlen, "not a store snapshot");
        return -1;
    }
    memcpy(&h, file, sizeof(h));
    if (h.endian != FILE_ENDIAN || h.version != FILE_VERSION) {
        snprintf(err, errlen, "store snapshot of another format version or "
                 "byte order");
        return -1;
    }
    if (h.meta_len > SH_STORE_FILE_META_MAX
        || h.meta_len > len - sizeof(h)
        || h.xxh != header_hash(&h, file + sizeof(h), (size_t) h.meta_len))
    {
        snprintf(err, errlen, "store snapshot: damaged header");
        return -1;
    }
    at = sizeof(h) + (size_t) h.meta_len;
    at += (8 - at % 8) % 8;
    if (at > len) {
        snprintf(err, errlen, "store snapshot: truncated");
        return -1;
    }
    *meta = file + sizeof(h);
    *meta_len = (size_t) h.meta_len;
    *image = file + at;
    *image_len = len - at;
    if (len - at >= SH_STORE_FILE_TAIL_LEN) {
        uint64_t off, n, sum;

        if (sh_store_file_tail_find(file + len - SH_STORE_FILE_TAIL_LEN,
                                    len - at, &off, &n, &sum))
        {
            *image_len = (size_t) off;
        }
    }
    return 0;
}

int
sh_store_file_tail(sh_file_writer_t *w, const void *data, size_t len,
                   char *err, size_t errlen)
{
    unsigned char f[SH_STORE_FILE_TAIL_LEN];

    memcpy(f, TAIL_MAGIC, 8);
    (void) sh_le_put(f + 8, len, 8);
    (void) sh_le_put(f + 16, XXH3_64bits(data, len), 8);
    (void) sh_le_put(f + 24, XXH3_64bits(f, 24), 8);
    if (sh_file_writer_write(w, data, len, err, errlen) != 0
        || sh_file_writer_write(w, f, sizeof(f), err, errlen) != 0)
    {
        return -1;
    }
    return 0;
}

int
sh_store_file_tail_find(const unsigned char *footer, uint64_t rest,
                        uint64_t *off, uint64_t *len, uint64_t *sum)
{
    uint64_t n;

    if (rest < SH_STORE_FILE_TAIL_LEN
        || memcmp(footer, TAIL_MAGIC, 8) != 0
        || sh_le_get(footer + 24, 8) != XXH3_64bits(footer, 24))
    {
        return 0;
    }
    n = sh_le_get(footer + 8, 8);
    if (n > rest - SH_STORE_FILE_TAIL_LEN) {
        return 0;
    }
    *off = rest - SH_STORE_FILE_TAIL_LEN - n;
    *len = n;
    *sum = sh_le_get(footer + 16, 8);
    return 1;
}

int
sh_store_file_tail_ok(const void *data, size_t len, uint64_t sum)
{
    return XXH3_64bits(data, len) == sum;
}

int
sh_store_file_tail_get(const unsigned char *file, size_t len,
                       const unsigned char **data, size_t *data_len)
{
    const unsigned char *meta, *image;
    size_t               meta_len, image_len;
    uint64_t             off, n, sum;
    char                 err[128];

    if (sh_store_file_parse(file, len, &meta, &meta_len, &image, &image_len,
                            err, sizeof(err)) != 0
        || !sh_store_file_tail_find(file + len - SH_STORE_FILE_TAIL_LEN,
                                    len - (size_t) (image - file), &off, &n,
                                    &sum))
    {
        return 0;
    }
    *data = image + off;
    *data_len = (size_t) n;
    return sh_store_file_tail_ok(*data, *data_len, sum) ? 1 : -1;
}
