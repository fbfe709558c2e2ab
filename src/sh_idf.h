/*
 * sh_idf.h -- inverse document frequency of words, from a corpus.
 *
 * idf(word) = ln((N + 1) / (df + 1)) + 1 for a corpus of N pages of which
 * df contain the word.  The table keeps words with df >= 2; any other word
 * gets the table's default, the idf of a word seen once.  Keys are the keyed
 * word hashes, so a table is tied to the hash key that built it (its digest
 * is recorded and checked on load).
 *
 * A table is also tied to the extraction that made its words: it records
 * the builder's words version (sh_config_words_version, sh_version.h) and
 * is refused under another.
 *
 * File (native byte order, checked): "SHIDF\0\0\0", format (2), byte-order
 * marker, key digest, N, entry count, default idf, words version, then the
 * sorted hashes and their idf values, then an XXH3 checksum of all that
 * precedes it.
 */
#ifndef SH_IDF_H
#define SH_IDF_H

#include <stddef.h>
#include <stdint.h>

typedef struct sh_idf_s sh_idf_t;

/* Load and validate; `seed_digest` and `words_version` must match the
 * table's. */
sh_idf_t *sh_idf_load(const char *path, uint64_t seed_digest,
                      uint32_t words_version, char *err, size_t errlen);
/* The table's contents as one number (part of the extraction version). */
uint64_t sh_idf_digest(const sh_idf_t *idf);
float  sh_idf_get(const sh_idf_t *idf, uint64_t word);
size_t sh_idf_size(const sh_idf_t *idf);
void   sh_idf_free(sh_idf_t *idf);

/* Building a table: add each page's distinct word hashes, then save. */
typedef struct sh_idf_builder_s sh_idf_builder_t;

sh_idf_builder_t *sh_idf_builder_new(void);
int  sh_idf_builder_add(sh_idf_builder_t *b, const uint64_t *words,
                        size_t n);
int  sh_idf_builder_save(sh_idf_builder_t *b, const char *path,
                         uint64_t seed_digest, uint32_t words_version,
                         char *err, size_t errlen);
void sh_idf_builder_free(sh_idf_builder_t *b);

#endif
