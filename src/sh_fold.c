/*
 * sh_fold.c -- a word's normal form (sh_fold.h).
 */
#include <string.h>

#include <utf8proc.h>

#include "sh_fold.h"

size_t
sh_fold_word(const char *word, size_t len, char *out)
{
    utf8proc_int32_t  cps[SH_TOKEN_MAX + 4];
    utf8proc_ssize_t  n, bytes;
    const utf8proc_option_t opt = UTF8PROC_CASEFOLD | UTF8PROC_COMPOSE
                                  | UTF8PROC_STABLE;
    size_t            i;

    n = utf8proc_decompose((const utf8proc_uint8_t *) word,
                           (utf8proc_ssize_t) len, cps,
                           SH_TOKEN_MAX, opt);
    if (n < 0 || n > SH_TOKEN_MAX) {
        /* Invalid, or folds to more than fits: fall back to ASCII folding
         * of what we have, which is deterministic and good enough. */
        for (i = 0; i < len && i < SH_TOKEN_MAX; i++) {
            unsigned char c = (unsigned char) word[i];
            out[i] = (char) ((c >= 'A' && c <= 'Z') ? c + 32 : c);
        }
        return i;
    }
    bytes = utf8proc_reencode(cps, n, opt);
    if (bytes < 0) {
        memcpy(out, word, len);
        return len;
    }
    if (bytes > SH_TOKEN_MAX) {
        bytes = SH_TOKEN_MAX;
        while (bytes > 0 && (((unsigned char *) cps)[bytes] & 0xC0) == 0x80) {
            bytes--;
        }
    }
    memcpy(out, cps, (size_t) bytes);
    return (size_t) bytes;
}
