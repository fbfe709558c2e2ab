/*
 * sh_stopwords.h -- the set of words dropped before stemming.
 *
 * Words are stored as 64-bit hashes of their normalised form (sh_text.h),
 * in an open-addressing set: a lookup is one hash probe, no string compare.
 * A file lists one word per line; '#' starts a comment.
 */
#ifndef SH_STOPWORDS_H
#define SH_STOPWORDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct sh_stopwords_s sh_stopwords_t;

/* The built-in English list. */
sh_stopwords_t *sh_stopwords_english(void);

/* Load a list; NULL with a message in err if unreadable or empty. */
sh_stopwords_t *sh_stopwords_load(const char *path, char *err, size_t errlen);

/* Is the word whose XXH3_64bits hash is `h` a stop word? */
int  sh_stopwords_has(const sh_stopwords_t *s, uint64_t h);
/* A digest of the set, for the extraction version (sh_version.h). */
uint64_t sh_stopwords_digest(const sh_stopwords_t *s);
void sh_stopwords_free(sh_stopwords_t *s);

#endif
