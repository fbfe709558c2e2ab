/*
 * sh_image.h -- a consistent copy of a store (sh_store.h) taken in
 * slices, each under a short hold of the zone's lock, and a store filled
 * back from one.
 *
 * Why slices: the zone's lock is every worker's.  A copy of the whole zone
 * under it stalls every request for as long as the memcpy takes (360 ms at
 * 1 GB), and the copy grows with the zone.  Here each step copies at most
 * one buffer (the caller's, a few MB: well under a millisecond) and the
 * caller writes it out after it lets go of the lock.
 *
 * Why the copy is consistent: while it runs, every change of a document's
 * records sets a dirty mark for its group of 64 refs (sh_store.c).  A step
 * clears the marks of what it copies.  After the first pass over every ref
 * and the key text ring, passes over the marked groups copy what changed
 * meanwhile, until what is left fits one buffer; the last step copies it
 * with the ends of the age order and of the ring.  The image is then the
 * store exactly as it was at that last step, with the lock held only for
 * one buffer at a time: the pre-copy of live migration, with the dirty
 * marks as its write barrier.
 *
 * The image is a stream of frames, written in order, that later frames
 * override (a group copied again replaces its earlier copy):
 *
 *   RECS   refs [first, first + n): the index's record and the store's
 *          record of each, 56 bytes
 *   TEXT   bytes of the ring from position `first`
 *   END    the trailer: the ends of the age order, of the ring, the
 *          source's geometry, a check of the key secret and the seed, a
 *          hash chained over every frame before it
 *
 * Its size follows what the store holds (refs handed out, text in use,
 * what changed during the copy), not the zone's size.
 */
#ifndef SH_IMAGE_H
#define SH_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "sh_store.h"

#define SH_IMAGE_BUF_MIN    (64 * 1024)     /* the smallest step buffer */
#define SH_IMAGE_PASSES     8       /* passes over the dirty marks before
                                       the copy gives up (the zone changes
                                       faster than it can be copied) */

typedef struct {
    sh_store_t    *st;
    unsigned char *buf;
    size_t         size;
    int            phase;
    unsigned       passes;
    uint32_t       next_ref;    /* first pass: the next ref to copy */
    uint32_t       group;       /* dirty passes: the next group to look at */
    uint32_t       found;       /* groups found dirty in this pass */
    uint64_t       text_next;   /* the next ring position to copy */
    uint64_t       chain;       /* hash of the image's frames so far */
    uint64_t       bytes;       /* of the image so far */
    uint64_t       recopied;    /* groups copied again */
    uint64_t       repairs;     /* the store's, at the start */
} sh_image_saver_t;

/*
 * Under the lock: start a copy of `st` (the dirty marks are cleared and
 * kept from now on).  buf: the caller's step buffer, size at least
 * SH_IMAGE_BUF_MIN.
 */
void sh_image_save_begin(sh_image_saver_t *sv, sh_store_t *st,
                         unsigned char *buf, size_t size);

/*
 * Under the lock: fill the buffer with the next frames.  Returns their
 * length (> 0: write them out after letting go of the lock, then call
 * again), 0 once the image is complete (the END frame was in the previous
 * return), or -1 if the store changes faster than it can be copied
 * (SH_IMAGE_PASSES passes did not converge) or was repaired meanwhile
 * (sh_store_repair): the copy is abandoned.
 */
long sh_image_save_step(sh_image_saver_t *sv);

/* 1 once the last step was taken: the image is the store as it was then. */
int sh_image_save_complete(const sh_image_saver_t *sv);

/* Under the lock: abandon a copy (an I/O error): stop marking. */
void sh_image_save_abort(sh_image_saver_t *sv);

typedef struct {
    uint32_t documents;         /* restored */
    uint32_t source_capacity;
    uint32_t extraction;        /* of the image's fingerprints */
    uint64_t texts;             /* documents restored with their text */
    int      replayed;          /* 1: the geometry differed, or the image
                                   was damaged, so documents were stored
                                   one by one (oldest first, the newest
                                   kept) */
    uint32_t damaged;           /* frames that failed their checksum (or a
                                   cut end): their documents are lost, the
                                   others restored */
} sh_image_info_t;

/*
 * Fill an EMPTY store `st` (freshly formatted) from a complete image.
 * expect_extraction != 0 refuses an image of another extraction version
 * (sh_version.h) before anything is stored (info->extraction says which).
 * The same secret and seed digest are required (else -1: its key hashes
 * would mean nothing).  A store of the image's geometry (capacity at least
 * the image's refs, ring of the same size) takes the records in place; any
 * other is filled by storing the documents again, oldest first.  -1 and a
 * message on a damaged or foreign image; the store must then be formatted
 * again.
 */
int sh_image_load(sh_store_t *st, const unsigned char *image, size_t len,
                  uint32_t expect_extraction, sh_image_info_t *info,
                  char *err, size_t errlen);

/*
 * The same from a file: the image's `len` bytes at offset `off` of `fd`,
 * read with pread in chunks of 4 MB (two passes: the check, then the
 * records; a file is not mapped, see sh_image.c).  This is how a
 * zone starts from its snapshot.
 */
int sh_image_load_fd(sh_store_t *st, int fd, uint64_t off, uint64_t len,
                     uint32_t expect_extraction, sh_image_info_t *info,
                     char *err, size_t errlen);

/*
 * The same, for a tool without the zone's secret (`simhash index query`):
 * the key hashes are taken as they are, so lookups by fingerprint work and
 * lookups by key do not.  The seed digest must still match.
 */
int sh_image_load_unkeyed(sh_store_t *st, const unsigned char *image,
                          size_t len, uint32_t expect_extraction,
                          sh_image_info_t *info, char *err, size_t errlen);

/* What an image holds, read without a store (`simhash index check`). */
typedef struct {
    uint32_t capacity;          /* the source's */
    uint32_t entries;           /* documents it held at its last step */
    uint32_t extraction;
    uint64_t seed_digest;
    uint64_t text_size;         /* of the source's key text ring */
    uint32_t frames;
    uint32_t damaged;           /* frames failing their checksum, or a cut
                                   end */
    int      whole;             /* every frame, the chain and the end */
    uint32_t documents;         /* documents in the intact frames */
    uint64_t texts;             /* of them, with their key's text */
} sh_image_summary_t;

/* 0 and the summary; -1 and a message when nothing of it is usable (its
 * end, which says what it was written under, is damaged or cut off). */
int sh_image_inspect(const unsigned char *image, size_t len,
                     sh_image_summary_t *s, char *err, size_t errlen);

#endif
