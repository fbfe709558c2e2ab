/*
 * sh_store_file.h -- a zone's snapshot in the store's format: the caller's
 * settings and the store's image (sh_image.h), one file.
 *
 *   header   magic "SHZSTOR1", format version, byte order, the length of
 *            the settings, an XXH3 of the header and the settings
 *   meta     the caller's settings text, padded to 8 bytes
 *   image    the frames of sh_image_save_step, in order; they carry their
 *            own chain hash and trailer, checked by sh_image_load
 *   tail     optional (files from before it have none): a section of the
 *            caller's (the DUST learner's rules, sh_dust.h's image), then
 *            a footer of SH_STORE_FILE_TAIL_LEN bytes at the very end of
 *            the file: magic "SHZTAIL1", the section's length, its XXH3,
 *            the XXH3 of the footer's first 24 bytes
 *
 * Why a tail and not a frame of the image or the settings: the image's
 * frames belong to the store (sh_image.h checks that its END frame
 * ends it), the settings are bounded text; a section at the end, found
 * from the end, leaves both as they were, so older files load unchanged,
 * and older readers that take the rest of the file as the image still
 * find its frames (the walk stops at the END frame).  A damaged section
 * costs the section only: with a damaged footer the rest is read as the
 * image, whose frames end at its END frame; with an intact footer and a
 * damaged section the image is exact and the section is refused by its
 * checksum.
 *
 * Its size follows what the store holds.  Written through a
 * sh_file_writer_t (sh_file.h): PATH.tmp created afresh, renamed
 * over PATH once complete and on disk.
 */
#ifndef SH_STORE_FILE_H
#define SH_STORE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "sh_file.h"

#define SH_STORE_FILE_MAGIC     "SHZSTOR1"
#define SH_STORE_FILE_META_MAX  (64 * 1024)

/* Write the header and the settings; then the image's frames follow. */
int sh_store_file_begin(sh_file_writer_t *w, const void *meta,
                        size_t meta_len, char *err, size_t errlen);

/* After the image's last frame: the tail section and its footer. */
int sh_store_file_tail(sh_file_writer_t *w, const void *data,
                       size_t len, char *err, size_t errlen);

#define SH_STORE_FILE_TAIL_LEN  32

/*
 * From the file's last SH_STORE_FILE_TAIL_LEN bytes (`footer`) and the
 * length of what follows the settings (`rest`): 1 when the footer is
 * intact, with the section's offset in that rest (= the image's exact
 * length), its length and checksum; 0 when there is none (the whole rest
 * is the image).
 */
int sh_store_file_tail_find(const unsigned char *footer, uint64_t rest,
                            uint64_t *off, uint64_t *len, uint64_t *sum);

/* 1 if the section's bytes are those its footer describes. */
int sh_store_file_tail_ok(const void *data, size_t len, uint64_t sum);

/*
 * The tail section of a whole file in memory: 1 and the section, 0 when
 * the file has none, -1 when its checksum fails.
 */
int sh_store_file_tail_get(const unsigned char *file, size_t len,
                           const unsigned char **data, size_t *data_len);

/* 1 if the file's first bytes are this format's (else another loader's). */
int sh_store_file_is(const unsigned char *file, size_t len);

/*
 * The settings and the image (without the tail) of a whole file in memory
 * (8-byte aligned):
 * 0, or -1 and a message when its header or settings are damaged or of
 * another format (the image is checked when it is loaded).
 */
int sh_store_file_parse(const unsigned char *file, size_t len,
                        const unsigned char **meta, size_t *meta_len,
                        const unsigned char **image, size_t *image_len,
                        char *err, size_t errlen);

#endif
