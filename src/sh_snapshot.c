/*
 * sh_snapshot.c -- index region <-> file.
 *
 * File layout, all integers in the writer's byte order (the endianness
 * marker tells a foreign file apart from a corrupt one):
 *
 *   0    header (128 bytes)  magic "SHSNAP\0\1", endian marker, format
 *                            version, header size, index parameters,
 *                            region and user sizes, hash-key digest, the
 *                            match rule it was taken under, and an XXH3 of
 *                            the header itself
 *   128  the region, byte for byte (it holds offsets, never pointers)
 *   ...  the user section
 *   end  XXH3-64 of everything before it
 *
 * The header has its own checksum so that a damaged size field is reported
 * as damage rather than as "truncated" or as a huge allocation.  The region
 * is checksummed while it is written, from a private copy of each chunk:
 * concurrent lookups bump counters in the region and the file must match
 * its checksum regardless.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "sh_snapshot.h"

#define SNAP_MAGIC      "SHSNAP\0\1"
#define SNAP_VERSION    1u
#define SNAP_ENDIAN     0x01020304u
#define SNAP_HDR        128u
#define CHUNK           (1u << 20)

typedef struct {
    char     magic[8];
    uint32_t endian;
    uint32_t version;
    uint32_t header_size;
    uint32_t capacity;
    uint32_t t;
    uint32_t entries;
    uint64_t region_size;
    uint64_t user_len;
    uint64_t seed_digest;
    /* Added in place of reserved bytes, which older files wrote as zeros:
     * match_recorded = 0 reads as "not recorded". */
    uint32_t match_recorded;
    uint32_t match_rule;        /* sh_rule_t */
    uint32_t match_h;
    uint32_t match_threshold;   /* score units */
    uint8_t  reserved[SNAP_HDR - 80];
    uint64_t header_xxh;        /* of the bytes before it */
} snap_header_t;

_Static_assert(sizeof(snap_header_t) == SNAP_HDR, "snapshot header size");

static int
write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t w = write(fd, p, len);

        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += w;
        len -= (size_t) w;
    }
    return 0;
}

/* Read exactly len bytes; 1 on a short file, -1 on error. */
static int
read_all(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t r = read(fd, p, len);

        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        if (r == 0) {
            return 1;
        }
        p += r;
        len -= (size_t) r;
    }
    return 0;
}

/* Hash and write `len` bytes of src through a private copy. */
static int
write_hashed(int fd, XXH3_state_t *st, const void *src, size_t len,
             char *buf)
{
    const char *p = src;

    while (len > 0) {
        size_t n = len < CHUNK ? len : CHUNK;

        memcpy(buf, p, n);
        XXH3_64bits_update(st, buf, n);
        if (write_all(fd, buf, n) != 0) {
            return -1;
        }
        p += n;
        len -= n;
    }
    return 0;
}

static int
fsync_dir(const char *path)
{
    char *copy = strdup(path);
    int   fd, rc = -1;

    if (copy == NULL) {
        return -1;
    }
    fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        rc = fsync(fd);
        close(fd);
    }
    free(copy);
    return rc;
}

int
sh_snapshot_save(const char *path, const sh_index_t *ix, const void *user,
                 size_t user_len, char *err, size_t errlen)
{
    return sh_snapshot_save_rule(path, ix, user, user_len, NULL, err,
                                 errlen);
}

int
sh_snapshot_save_rule(const char *path, const sh_index_t *ix,
                      const void *user, size_t user_len,
                      const sh_match_opts_t *match, char *err, size_t errlen)
{
    char             tmp[4096];
    snap_header_t    hd;
    sh_index_stats_t s;
    XXH3_state_t    *st = NULL;
    char            *buf = NULL;
    uint64_t         sum;
    int              fd = -1;

    if ((size_t) snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    sh_index_stats(ix, &s);

    memset(&hd, 0, sizeof(hd));
    memcpy(hd.magic, SNAP_MAGIC, sizeof(hd.magic));
    hd.endian = SNAP_ENDIAN;
    hd.version = SNAP_VERSION;
    hd.header_size = SNAP_HDR;
    hd.capacity = s.capacity;
    hd.t = s.t;
    hd.entries = s.entries;
    hd.region_size = s.region_bytes;
    hd.user_len = user_len;
    hd.seed_digest = sh_index_seed_digest(ix);
    if (match != NULL) {
        hd.match_recorded = 1;
        hd.match_rule = (uint32_t) match->rule;
        hd.match_h = match->h;
        hd.match_threshold = match->threshold;
    }
    hd.header_xxh = XXH3_64bits(&hd, offsetof(snap_header_t, header_xxh));

    st = XXH3_createState();
    buf = malloc(CHUNK);
    if (st == NULL || buf == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    XXH3_64bits_reset(st);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto fail;
    }
    if (write_hashed(fd, st, &hd, sizeof(hd), buf) != 0
        || write_hashed(fd, st, ix, s.region_bytes, buf) != 0
        || (user_len > 0 && write_hashed(fd, st, user, user_len, buf) != 0))
    {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto fail;
    }
    sum = XXH3_64bits_digest(st);
    if (write_all(fd, &sum, sizeof(sum)) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto fail;
    }
    /* The rename is durable only once the directory is on disk too. */
    if (fsync_dir(path) != 0) {
        snprintf(err, errlen, "%s: cannot sync directory: %s", path,
                 strerror(errno));
        XXH3_freeState(st);
        free(buf);
        return -1;
    }
    XXH3_freeState(st);
    free(buf);
    return 0;

fail:
    if (fd >= 0) {
        close(fd);
    }
    unlink(tmp);
    XXH3_freeState(st);
    free(buf);
    return -1;
}

static uint32_t
bswap32(uint32_t x)
{
    return __builtin_bswap32(x);
}

/* Read and check the header: magic, byte order, version, checksum. */
static int
read_header(int fd, const char *path, snap_header_t *hd, char *err,
            size_t errlen)
{
    int rc = read_all(fd, hd, sizeof(*hd));

    if (rc != 0) {
        snprintf(err, errlen, rc > 0 ? "%s: not a snapshot (file too short)"
                                     : "%s: read error", path);
        return -1;
    }
    if (memcmp(hd->magic, SNAP_MAGIC, sizeof(hd->magic)) != 0) {
        snprintf(err, errlen, "%s: not a simhash index snapshot", path);
        return -1;
    }
    if (hd->endian != SNAP_ENDIAN) {
        snprintf(err, errlen, bswap32(hd->endian) == SNAP_ENDIAN
                 ? "%s: snapshot written on a machine of the other byte "
                   "order" : "%s: corrupt snapshot header", path);
        return -1;
    }
    if (hd->version != SNAP_VERSION) {
        snprintf(err, errlen, "%s: snapshot format version %u, this build "
                 "reads version %u", path, hd->version, SNAP_VERSION);
        return -1;
    }
    if (hd->header_size != SNAP_HDR
        || hd->header_xxh != XXH3_64bits(hd, offsetof(snap_header_t,
                                                      header_xxh)))
    {
        snprintf(err, errlen, "%s: corrupt snapshot header (checksum)",
                 path);
        return -1;
    }
    return 0;
}

int
sh_snapshot_rule(const char *path, int *recorded, sh_match_opts_t *match,
                 char *err, size_t errlen)
{
    snap_header_t hd;
    int           fd = open(path, O_RDONLY | O_CLOEXEC);

    *recorded = 0;
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (read_header(fd, path, &hd, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    sh_match_opts_init(match);
    if (hd.match_recorded == 1
        && (hd.match_rule == SH_RULE_HAMMING
            || hd.match_rule == SH_RULE_WEIGHTED)
        && hd.match_h <= SH_MATCH_HMAX)
    {
        *recorded = 1;
        match->rule = (sh_rule_t) hd.match_rule;
        match->h = hd.match_h;
        match->threshold = hd.match_threshold;
    }
    return 0;
}

int
sh_snapshot_load(const char *path, uint64_t expect_seed_digest,
                 void **region, size_t *region_size, const void **user,
                 size_t *user_len, char *err, size_t errlen)
{
    snap_header_t hd;
    struct stat   sb;
    XXH3_state_t *st = NULL;
    void         *mem = NULL;
    uint64_t      sum, want;
    size_t        total;
    sh_index_t   *ix;
    sh_index_stats_t s;
    char          ierr[256];
    int           fd, rc;

    *region = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (read_header(fd, path, &hd, err, errlen) != 0) {
        goto fail;
    }
    if (expect_seed_digest != 0 && hd.seed_digest != expect_seed_digest) {
        snprintf(err, errlen, "%s: snapshot built under another hash key "
                 "(seed digest %016llx, expected %016llx)", path,
                 (unsigned long long) hd.seed_digest,
                 (unsigned long long) expect_seed_digest);
        goto fail;
    }
    if (hd.capacity == 0 || hd.region_size != sh_index_region_size(
            hd.capacity) || hd.user_len > ((uint64_t) 1 << 40))
    {
        snprintf(err, errlen, "%s: snapshot sizes are inconsistent", path);
        goto fail;
    }
    total = SNAP_HDR + hd.region_size + hd.user_len + sizeof(uint64_t);
    if ((uint64_t) sb.st_size < total) {
        snprintf(err, errlen, "%s: truncated snapshot (%lld of %llu bytes)",
                 path, (long long) sb.st_size, (unsigned long long) total);
        goto fail;
    }
    if ((uint64_t) sb.st_size > total) {
        snprintf(err, errlen, "%s: snapshot has %llu unexpected trailing "
                 "bytes", path, (unsigned long long) (sb.st_size - total));
        goto fail;
    }

    if (posix_memalign(&mem, 64, hd.region_size + hd.user_len + 1) != 0) {
        mem = NULL;
        snprintf(err, errlen, "%s: cannot allocate %llu bytes", path,
                 (unsigned long long) (hd.region_size + hd.user_len));
        goto fail;
    }
    rc = read_all(fd, mem, hd.region_size + hd.user_len);
    if (rc == 0) {
        rc = read_all(fd, &want, sizeof(want));
    }
    if (rc != 0) {
        snprintf(err, errlen, rc > 0 ? "%s: truncated snapshot"
                                     : "%s: read error", path);
        goto fail;
    }
    st = XXH3_createState();
    if (st == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, &hd, sizeof(hd));
    XXH3_64bits_update(st, mem, hd.region_size + hd.user_len);
    sum = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    st = NULL;
    if (sum != want) {
        snprintf(err, errlen, "%s: corrupt snapshot (checksum mismatch)",
                 path);
        goto fail;
    }

    /* The checksum proves the bytes are those written; the structural
     * check proves the writer wrote a sound index. */
    ix = sh_index_attach(mem, hd.region_size, ierr, sizeof(ierr));
    if (ix == NULL) {
        snprintf(err, errlen, "%s: %s", path, ierr);
        goto fail;
    }
    sh_index_stats(ix, &s);
    if (s.capacity != hd.capacity || s.t != hd.t || s.entries != hd.entries
        || sh_index_seed_digest(ix) != hd.seed_digest)
    {
        snprintf(err, errlen, "%s: snapshot header and index disagree",
                 path);
        goto fail;
    }
    if (sh_index_check(ix, ierr, sizeof(ierr)) != 0) {
        snprintf(err, errlen, "%s: inconsistent index: %s", path, ierr);
        goto fail;
    }
    close(fd);
    *region = mem;
    *region_size = hd.region_size;
    *user = (char *) mem + hd.region_size;
    *user_len = hd.user_len;
    return 0;

fail:
    close(fd);
    free(mem);
    return -1;
}
