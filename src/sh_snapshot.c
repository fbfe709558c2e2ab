/*
 * sh_snapshot.c -- index region <-> file.
 *
 * File layout (format 3), all integers in the writer's byte order (the
 * endianness marker tells a foreign file apart from a corrupt one):
 *
 *   0    header (128 bytes)  magic "SHSNAP\0\1", endian marker, format
 *                            version, header size, index parameters,
 *                            region and user sizes, hash-key digest, the
 *                            extraction version (format 3), the
 *                            user section's kind and block size, and an
 *                            XXH3 of the header itself
 *   128  the region, byte for byte (it holds offsets, never pointers),
 *        then the XXH3-64 of the region
 *   ...  the user section in blocks of SH_SNAP_BLOCK bytes (the last one
 *        shorter), each followed by the XXH3-64 of its bytes
 *
 * The header has its own checksum so that a damaged size field is reported
 * as damage rather than as "truncated" or as a huge allocation; the region
 * and every block have theirs so that a flipped byte costs one part, not the
 * file.  The region is checksummed while it is written, from a private copy
 * of each chunk: concurrent lookups bump counters in the region and the file
 * must match its checksum regardless.
 *
 * Format 1 (read only): header, region, user section (its kind in its own
 * first 8 bytes), one XXH3-64 over everything before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "sh_snapshot.h"

#define SNAP_MAGIC      "SHSNAP\0\1"
#define SNAP_VERSION    3u      /* 3: the extraction version */
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
    char     kind[SH_SNAP_KIND];    /* format 2; zeros in format 1 */
    uint32_t block_size;            /* format 2 */
    uint32_t extraction;            /* format 3: the index's version */
    uint8_t  reserved[SNAP_HDR - 80];
    uint64_t header_xxh;        /* of the bytes before it */
} snap_header_t;

_Static_assert(sizeof(snap_header_t) == SNAP_HDR, "snapshot header size");

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

/*
 * Write `len` bytes of src and their XXH3-64 after them.  The bytes are
 * hashed from a private copy of each chunk, the copy that is written:
 * concurrent lookups bump counters in the region, and the file must match
 * its checksum regardless.
 */
static int
write_part(sh_file_writer_t *w, XXH3_state_t *st, const void *src,
           size_t len, char *buf, char *err, size_t errlen)
{
    const char *p = src;
    uint64_t    sum;

    XXH3_64bits_reset(st);
    while (len > 0) {
        size_t n = len < CHUNK ? len : CHUNK;

        memcpy(buf, p, n);
        XXH3_64bits_update(st, buf, n);
        if (sh_file_writer_write(w, buf, n, err, errlen) != 0) {
            return -1;
        }
        p += n;
        len -= n;
    }
    sum = XXH3_64bits_digest(st);
    return sh_file_writer_write(w, &sum, sizeof(sum), err, errlen);
}

int
sh_snapshot_save(const char *path, const sh_index_t *ix, const char *kind,
                 const void *user, size_t user_len, char *err, size_t errlen)
{
    return sh_snapshot_save_owned(path, ix, kind, user, user_len, NULL, err,
                                  errlen);
}

int
sh_snapshot_save_owned(const char *path, const sh_index_t *ix,
                       const char *kind, const void *user, size_t user_len,
                       const sh_file_owner_t *owner, char *err,
                       size_t errlen)
{
    snap_header_t     hd;
    sh_index_stats_t  s;
    XXH3_state_t     *st;
    char             *buf;
    const char       *u = user;
    size_t            off, n;
    sh_file_writer_t *w;

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
    if (kind != NULL) {
        /* up to 8 bytes, NUL-padded; not a C string when it has 8 */
        memcpy(hd.kind, kind, strnlen(kind, sizeof(hd.kind)));
    }
    hd.block_size = SH_SNAP_BLOCK;
    hd.extraction = sh_index_version(ix);
    hd.header_xxh = XXH3_64bits(&hd, offsetof(snap_header_t, header_xxh));

    st = XXH3_createState();
    buf = malloc(CHUNK);
    if (st == NULL || buf == NULL) {
        snprintf(err, errlen, "out of memory");
        XXH3_freeState(st);
        free(buf);
        return -1;
    }

    w = sh_file_writer_open(path, SH_SNAPSHOT_MODE, owner, err, errlen);
    if (w == NULL) {
        XXH3_freeState(st);
        free(buf);
        return -1;
    }
    if (sh_file_writer_write(w, &hd, sizeof(hd), err, errlen) != 0
        || write_part(w, st, ix, s.region_bytes, buf, err, errlen) != 0)
    {
        goto fail;
    }
    for (off = 0; off < user_len; off += n) {
        n = user_len - off < SH_SNAP_BLOCK ? user_len - off : SH_SNAP_BLOCK;
        if (write_part(w, st, u + off, n, buf, err, errlen) != 0) {
            goto fail;
        }
    }
    XXH3_freeState(st);
    free(buf);
    return sh_file_writer_commit(w, err, errlen);

fail:
    sh_file_writer_abort(w);
    XXH3_freeState(st);
    free(buf);
    return -1;
}

static uint32_t
bswap32(uint32_t x)
{
    return __builtin_bswap32(x);
}

int
sh_snapshot_check_path(const char *path, char *err, size_t errlen)
{
    struct stat sb;
    char        base[1024];
    int         dfd, rc;

    dfd = sh_file_open_parent(path, base, sizeof(base), err, errlen);
    if (dfd < 0) {
        /* a directory made later (or by the save) is checked then */
        return errno == ENOENT ? 0 : -1;
    }
    rc = sh_file_check_dir(dfd, path, err, errlen);
    close(dfd);
    if (rc != 0) {
        return -1;
    }

    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return sh_snapshot_check_stat(path, &sb, err, errlen) == 0 ? 0 : 1;
}

int
sh_snapshot_check_stat(const char *path, const struct stat *sb, char *err,
                       size_t errlen)
{
    if (!S_ISREG(sb->st_mode)) {
        snprintf(err, errlen, S_ISLNK(sb->st_mode)
                 ? "%s: a symbolic link, not a regular file"
                 : "%s: not a regular file", path);
        return -1;
    }
    if (sb->st_nlink != 1) {
        snprintf(err, errlen, "%s: has other names (hard links)", path);
        return -1;
    }
    return 0;
}

/*
 * Open for reading a regular file only, never blocking on a FIFO, never
 * through a symbolic link, never a file with another name: a link planted
 * there would have a privileged loader read (and then rename aside)
 * something that is not a snapshot.
 */
static int
open_regular(const char *path, struct stat *sb, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY
                        | O_NOFOLLOW);

    if (fd < 0) {
        snprintf(err, errlen, errno == ELOOP
                 ? "%s: a symbolic link, not a regular file" : "%s: %s",
                 path, strerror(errno));
        return -1;
    }
    if (fstat(fd, sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (sh_snapshot_check_stat(path, sb, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    /* reads of a regular file do not block; the flag only mattered for
       open() itself */
    (void) fcntl(fd, F_SETFL, 0);
    return fd;
}

int
sh_snapshot_open(const char *path, uint64_t *size, char *err, size_t errlen)
{
    struct stat sb;
    int         fd = open_regular(path, &sb, err, errlen);

    if (fd < 0) {
        return -1;
    }
    if (sb.st_size <= 0) {
        snprintf(err, errlen, "%s: empty", path);
        close(fd);
        return -1;
    }
    *size = (uint64_t) sb.st_size;
    return fd;
}

int
sh_snapshot_map(const char *path, const unsigned char **data, size_t *len,
                char *err, size_t errlen)
{
    uint64_t size;
    void    *p;
    int      fd = sh_snapshot_open(path, &size, err, errlen);

    if (fd < 0) {
        return -1;
    }
    p = mmap(NULL, (size_t) size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    *data = p;
    *len = (size_t) size;
    return 0;
}

void
sh_snapshot_unmap(const unsigned char *data, size_t len)
{
    (void) munmap((void *) data, len);
}

/* The header: everything that makes the file unusable if wrong. */
static int
check_header(const snap_header_t *hd, const char *path,
             uint64_t expect_seed_digest, char *err, size_t errlen)
{
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
    if (hd->version < 1 || hd->version > SNAP_VERSION) {
        snprintf(err, errlen, "%s: snapshot format version %u, this build "
                 "reads versions 1 to %u", path, hd->version,
                 SNAP_VERSION);
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
    if (expect_seed_digest != 0 && hd->seed_digest != expect_seed_digest) {
        snprintf(err, errlen, "%s: snapshot built under another hash key "
                 "(seed digest %016llx, expected %016llx)", path,
                 (unsigned long long) hd->seed_digest,
                 (unsigned long long) expect_seed_digest);
        return -1;
    }
    if (hd->capacity == 0
        || hd->region_size != sh_index_region_size(hd->capacity)
        || hd->user_len > ((uint64_t) 1 << 40)
        || (hd->version >= 2 && hd->block_size != SH_SNAP_BLOCK))
    {
        snprintf(err, errlen, "%s: snapshot sizes are inconsistent", path);
        return -1;
    }
    return 0;
}

/* The bytes the file must have, after the header. */
static uint64_t
body_size(const snap_header_t *hd, size_t *blocks)
{
    *blocks = (hd->user_len + SH_SNAP_BLOCK - 1) / SH_SNAP_BLOCK;
    if (hd->version == 1) {
        return hd->region_size + hd->user_len + sizeof(uint64_t);
    }
    return hd->region_size + sizeof(uint64_t) + hd->user_len
           + *blocks * sizeof(uint64_t);
}

/* Is the region the writer's, and a sound index that agrees with the
 * header?  The reason in info->region_err if not. */
static int
region_sound(void *mem, const snap_header_t *hd, sh_snapshot_info_t *info)
{
    char             ierr[200];
    sh_index_t      *ix;
    sh_index_stats_t s;

    ix = sh_index_attach(mem, hd->region_size, ierr, sizeof(ierr));
    if (ix == NULL) {
        snprintf(info->region_err, sizeof(info->region_err), "%s", ierr);
        return 0;
    }
    sh_index_stats(ix, &s);
    if (s.capacity != hd->capacity || s.t != hd->t
        || s.entries != hd->entries
        || sh_index_seed_digest(ix) != hd->seed_digest)
    {
        snprintf(info->region_err, sizeof(info->region_err),
                 "snapshot header and index disagree");
        return 0;
    }
    if (sh_index_check(ix, ierr, sizeof(ierr)) != 0) {
        snprintf(info->region_err, sizeof(info->region_err),
                 "inconsistent index: %s", ierr);
        return 0;
    }
    return 1;
}

/* Format 1: one checksum over the whole file; all or nothing. */
static int
read_v1(int fd, const snap_header_t *hd, char *mem, const char *path,
        char *err, size_t errlen)
{
    uint64_t      want;
    XXH3_state_t *st;
    int           rc, ok;

    rc = read_all(fd, mem, hd->region_size + hd->user_len);
    if (rc == 0) {
        rc = read_all(fd, &want, sizeof(want));
    }
    if (rc != 0) {
        snprintf(err, errlen, rc > 0 ? "%s: truncated snapshot"
                                     : "%s: read error", path);
        return -1;
    }
    st = XXH3_createState();
    if (st == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, hd, sizeof(*hd));
    XXH3_64bits_update(st, mem, hd->region_size + hd->user_len);
    ok = XXH3_64bits_digest(st) == want;
    XXH3_freeState(st);
    if (!ok) {
        snprintf(err, errlen, "%s: corrupt snapshot (checksum mismatch)",
                 path);
        return -1;
    }
    return 0;
}

/* Read `len` bytes and the checksum after them: 1 intact, 0 damaged (the
 * bytes are zeroed), -1 on a read error. */
static int
read_part(int fd, char *mem, size_t len)
{
    uint64_t want;

    if (read_all(fd, mem, len) != 0 || read_all(fd, &want, sizeof(want)) != 0)
    {
        return -1;
    }
    if (XXH3_64bits(mem, len) == want) {
        return 1;
    }
    memset(mem, 0, len);
    return 0;
}

/* Format 2: the region and each block on their own. */
static int
read_v2(int fd, const snap_header_t *hd, char *mem, sh_snapshot_info_t *info,
        const char *path, char *err, size_t errlen)
{
    size_t off, n;
    int    rc;

    rc = read_part(fd, mem, hd->region_size);
    if (rc < 0) {
        goto read_error;
    }
    if (rc == 0) {
        info->region_ok = 0;
        snprintf(info->region_err, sizeof(info->region_err),
                 "the region fails its checksum");
    }
    for (off = 0; off < hd->user_len; off += n) {
        n = hd->user_len - off < SH_SNAP_BLOCK ? hd->user_len - off
                                               : SH_SNAP_BLOCK;
        rc = read_part(fd, mem + hd->region_size + off, n);
        if (rc < 0) {
            goto read_error;
        }
        info->damaged += rc == 0;
    }
    return 0;

read_error:
    snprintf(err, errlen, "%s: read error", path);
    return -1;
}

int
sh_snapshot_load(const char *path, uint64_t expect_seed_digest,
                 void **region, size_t *region_size, const void **user,
                 size_t *user_len, sh_snapshot_info_t *info, char *err,
                 size_t errlen)
{
    snap_header_t hd;
    struct stat   sb;
    void         *mem = NULL;
    uint64_t      total;
    size_t        skip = 0;
    int           fd, rc;

    *region = NULL;
    memset(info, 0, sizeof(*info));
    info->region_ok = 1;

    fd = open_regular(path, &sb, err, errlen);
    if (fd < 0) {
        return -1;
    }
    rc = read_all(fd, &hd, sizeof(hd));
    if (rc != 0) {
        snprintf(err, errlen, rc > 0 ? "%s: not a snapshot (file too short)"
                                     : "%s: read error", path);
        goto fail;
    }
    if (check_header(&hd, path, expect_seed_digest, err, errlen) != 0) {
        goto fail;
    }
    info->version = hd.version;
    info->extraction = hd.version >= 3 ? hd.extraction : 0;
    total = SNAP_HDR + body_size(&hd, &info->blocks);
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

    if (hd.version == 1) {
        if (read_v1(fd, &hd, mem, path, err, errlen) != 0) {
            goto fail;
        }
        /* the kind was the user section's first 8 bytes */
        if (hd.user_len >= SH_SNAP_KIND) {
            memcpy(info->kind, (char *) mem + hd.region_size, SH_SNAP_KIND);
            skip = SH_SNAP_KIND;
        }
    } else {
        if (read_v2(fd, &hd, mem, info, path, err, errlen) != 0) {
            goto fail;
        }
        memcpy(info->kind, hd.kind, SH_SNAP_KIND);
    }
    info->kind[SH_SNAP_KIND] = '\0';

    /* The checksum proves the bytes are those written; the structural
     * check proves the writer wrote a sound index. */
    if (info->region_ok && !region_sound(mem, &hd, info)) {
        if (hd.version == 1) {
            snprintf(err, errlen, "%s: %s", path, info->region_err);
            goto fail;
        }
        info->region_ok = 0;
        memset(mem, 0, hd.region_size);
    }
    close(fd);
    *region = mem;
    *region_size = hd.region_size;
    *user = (char *) mem + hd.region_size + skip;
    *user_len = hd.user_len - skip;
    return 0;

fail:
    close(fd);
    free(mem);
    return -1;
}
