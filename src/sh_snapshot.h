/*
 * sh_snapshot.h -- save an index region to a file and load it back.
 *
 * File: a versioned header (magic, format version, byte order, parameters,
 * hash-key digest, sizes), the region bytes, an opaque user section (the
 * caller's per-document data, e.g. ref -> URL), and an XXH3 checksum over
 * everything.  Written to PATH.tmp, fsynced, renamed over PATH, directory
 * fsynced.  A truncated, corrupt, foreign-endian, wrong-version or
 * wrong-key file is refused with a one-line message; never a crash and never
 * a silently wrong index.
 */
#ifndef SH_SNAPSHOT_H
#define SH_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "sh_index.h"

int sh_snapshot_save(const char *path, const sh_index_t *ix,
                     const void *user, size_t user_len,
                     char *err, size_t errlen);

/*
 * The same, recording the match rule the index was used under (sh_match.h;
 * the volatility table is not recorded).  The record is information, not a
 * condition: the rule is applied at lookup, so a snapshot loads under any
 * rule, and a reader can say when the rule has changed since.
 */
int sh_snapshot_save_rule(const char *path, const sh_index_t *ix,
                          const void *user, size_t user_len,
                          const sh_match_opts_t *match,
                          char *err, size_t errlen);

/*
 * The rule recorded in PATH's header: *recorded = 1 and *match filled (vol
 * NULL), or *recorded = 0 for a file saved without one (sh_snapshot_save,
 * or a build before rules were recorded).  -1 with a message when the
 * header is not a valid snapshot header.
 */
int sh_snapshot_rule(const char *path, int *recorded, sh_match_opts_t *match,
                     char *err, size_t errlen);

/*
 * Load PATH into freshly malloc'd memory.  On success *region (free() it)
 * holds a validated index of *region_size bytes and *user / *user_len point
 * inside the same allocation.  `expect_seed_digest` != 0 refuses a snapshot
 * built under another hash key.  Returns 0, or -1 with a message in err.
 */
int sh_snapshot_load(const char *path, uint64_t expect_seed_digest,
                     void **region, size_t *region_size,
                     const void **user, size_t *user_len,
                     char *err, size_t errlen);

#endif
