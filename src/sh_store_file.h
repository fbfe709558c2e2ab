/*
 * sh_store_file.h -- a zone's snapshot in the store's format: the caller's
 * settings and the store's image (sh_store_image.h), one file.
 *
 *   header   magic "SHZSTOR1", format version, byte order, the length of
 *            the settings, an XXH3 of the header and the settings
 *   meta     the caller's settings text, padded to 8 bytes
 *   image    the frames of sh_image_save_step, in order; they carry their
 *            own chain hash and trailer, checked by sh_image_load
 *
 * Its size follows what the store holds.  Written through a
 * sh_snapshot_writer_t (sh_snapshot.h): PATH.tmp created afresh, renamed
 * over PATH once complete and on disk.
 */
#ifndef SH_STORE_FILE_H
#define SH_STORE_FILE_H

#include <stddef.h>

#include "sh_snapshot.h"

#define SH_STORE_FILE_MAGIC     "SHZSTOR1"
#define SH_STORE_FILE_META_MAX  (64 * 1024)

/* Write the header and the settings; then the image's frames follow. */
int sh_store_file_begin(sh_snapshot_writer_t *w, const void *meta,
                        size_t meta_len, char *err, size_t errlen);

/* 1 if the file's first bytes are this format's (else another loader's). */
int sh_store_file_is(const unsigned char *file, size_t len);

/*
 * The settings and the image of a whole file in memory (8-byte aligned):
 * 0, or -1 and a message when its header or settings are damaged or of
 * another format (the image is checked when it is loaded).
 */
int sh_store_file_parse(const unsigned char *file, size_t len,
                        const unsigned char **meta, size_t *meta_len,
                        const unsigned char **image, size_t *image_len,
                        char *err, size_t errlen);

#endif
