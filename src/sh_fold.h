/*
 * sh_fold.h -- a word's normal form: case-folded and in Unicode NFC
 * (utf8proc), so that "STRASSE", "Straße" and "strasse" are one word, and
 * so are "ΣΟΦΊΑ"/"σοφία".  A word longer than SH_TOKEN_MAX bytes keeps its
 * first SH_TOKEN_MAX bytes: whole characters when it folds, byte by byte
 * (ASCII folding) when it has more characters than fit.
 *
 * Below both of its users: the tokens of the text (sh_text.h) and the
 * words of a stop-word list (sh_stopwords.h) are folded alike, so that a
 * stop word matches the tokens it names.
 */
#ifndef SH_FOLD_H
#define SH_FOLD_H

#include <stddef.h>

#define SH_TOKEN_MAX    64

/* Fold word[0..len) into out (at least SH_TOKEN_MAX + 4 bytes); returns
 * its length. */
size_t sh_fold_word(const char *word, size_t len, char *out);

#endif
