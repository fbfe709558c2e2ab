/*
 * sh_snapshot.h -- save an index region to a file and load it back.
 *
 * File (format 3): a versioned header with its own checksum (magic, format
 * version, byte order, parameters, hash-key digest, extraction version,
 * sizes, and the KIND of the user section), the region bytes and their XXH3, then the user section
 * (the caller's per-document data, e.g. ref -> URL) in blocks of
 * SH_SNAP_BLOCK bytes, each followed by its own XXH3.  Written to PATH.tmp,
 * fsynced, renamed over PATH, directory fsynced.
 *
 * Damage is contained.  A damaged header, a truncated file, trailing bytes,
 * a foreign byte order, an unknown version or another hash key make the file
 * unusable: it is refused with a one-line message.  A damaged region or user
 * block is reported (sh_snapshot_info_t), zero-filled, and the rest is
 * usable: a caller whose user section can stand on its own (the module's
 * key records, sh_keyrec.h, never straddle a block) loses only the damaged
 * blocks' documents.  Never a crash and never a silently wrong index.
 *
 * Format 1 files (one checksum over the whole file, the user section's kind
 * in its own first 8 bytes) still load, all or nothing; format 2 is format 3
 * without the extraction version.  Whether fingerprints of another (or an
 * unknown, 0) extraction version may be used is the caller's decision: the
 * module refuses them, `simhash index check` reports them.
 *
 * Only regular files are read: a FIFO or a device at PATH is refused without
 * blocking (sh_snapshot_check_path tells nginx -t the same).
 */
#ifndef SH_SNAPSHOT_H
#define SH_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sh_file.h"
#include "sh_index.h"

struct stat;

#define SH_SNAP_BLOCK   (128 * 1024)    /* user-section bytes per checksum */
#define SH_SNAP_KIND    8               /* bytes of a user-section kind */

typedef struct {
    unsigned version;               /* format of the file read */
    uint32_t extraction;            /* the index's extraction version
                                       (sh_version.h); 0 before format 3 */
    char     kind[SH_SNAP_KIND + 1];    /* the user section's kind, NUL-ended
                                           ("" when it has none) */
    int      region_ok;             /* 0: the region is damaged (zeroed) */
    char     region_err[256];       /* why, when region_ok is 0 */
    size_t   blocks;                /* user-section blocks */
    size_t   damaged;               /* of them zero-filled (bad checksum) */
} sh_snapshot_info_t;

/*
 * A snapshot holds every key (URL) of the index: readable by its owner
 * only.
 */
#define SH_SNAPSHOT_MODE  0600

/*
 * Write `ix` and a user section of `kind` (SH_SNAP_KIND bytes at most, NULL
 * = none) to `path`.  0, or -1 with the reason in err.
 *
 * Written through sh_file.h's writer, so safe in a directory that someone
 * else can write into (the user a privileged writer hands the directory
 * to).  The file is SH_SNAPSHOT_MODE.
 */
int sh_snapshot_save(const char *path, const sh_index_t *ix,
                     const char *kind, const void *user, size_t user_len,
                     char *err, size_t errlen);

/* The same, the file then owned by `owner` (NULL: by the caller). */
int sh_snapshot_save_owned(const char *path, const sh_index_t *ix,
                           const char *kind, const void *user,
                           size_t user_len, const sh_file_owner_t *owner,
                           char *err, size_t errlen);

/*
 * Open a snapshot file for reading with the same checks as sh_snapshot_map:
 * the descriptor (the caller closes it) and the file's size in *size, or
 * -1 and the reason.  A zone reads its image through it with pread
 * (sh_image_load_fd), never through a mapping.
 */
int  sh_snapshot_open(const char *path, uint64_t *size, char *err,
                      size_t errlen);

/*
 * Map a whole snapshot file read-only (a regular file with no other name,
 * not through a link, as sh_snapshot_load reads): 0, or -1 and the reason.
 * The mapping is page-aligned; unmap it with sh_snapshot_unmap.
 */
int  sh_snapshot_map(const char *path, const unsigned char **data,
                     size_t *len, char *err, size_t errlen);
void sh_snapshot_unmap(const unsigned char *data, size_t len);

/*
 * Load PATH into freshly malloc'd memory.  On success *region (free() it)
 * holds *region_size bytes, valid as an index when info->region_ok, and
 * *user / *user_len point inside the same allocation (without the kind:
 * that is info->kind).  `expect_seed_digest` != 0 refuses a snapshot built
 * under another hash key.  Returns 0 (see `info` for damage), or -1 with a
 * message in err when the file is unusable.
 */
int sh_snapshot_load(const char *path, uint64_t expect_seed_digest,
                     void **region, size_t *region_size,
                     const void **user, size_t *user_len,
                     sh_snapshot_info_t *info, char *err, size_t errlen);

/*
 * Can `path` be a snapshot?  0 when it does not exist or is a regular file
 * with no other name, in a directory not writable by every user (unless
 * sticky).  1 and the reason when the directory is fine but what is at
 * `path` is not a snapshot (a symbolic link, a hard link, a FIFO, a
 * directory, a device...): whoever can write the directory (the workers'
 * user) could plant it, so it must not stop nginx from starting; the
 * loader moves it aside without opening it.  -1 and the reason when the
 * directory itself is unsafe.
 */
int sh_snapshot_check_path(const char *path, char *err, size_t errlen);

/*
 * What lstat() (or fstat()) said of `path`: 0 for a regular file with no
 * other name, else -1 and the reason in err.
 */
int sh_snapshot_check_stat(const char *path, const struct stat *sb,
                           char *err, size_t errlen);

#endif
