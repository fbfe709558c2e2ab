/*
 * sh_keyrec.c -- encode and decode the module snapshot's key records
 * (sh_keyrec.h).
 */
#include <stdio.h>
#include <string.h>

#include "sh_keyrec.h"

unsigned char *
sh_keyrec_begin(unsigned char *buf)
{
    memcpy(buf, SH_KEYREC_MAGIC, SH_KEYREC_MAGIC_LEN);
    return buf + SH_KEYREC_MAGIC_LEN;
}

unsigned char *
sh_keyrec_put(unsigned char *buf, const sh_keyrec_t *rec)
{
    memcpy(buf, &rec->ref, 4);
    memcpy(buf + 4, &rec->len, 4);
    memcpy(buf + 8, &rec->hash, 8);
    memcpy(buf + SH_KEYREC_HEAD, rec->key, rec->len);
    return buf + sh_keyrec_size(rec->len);
}

int
sh_keyrec_is(const void *user, size_t len)
{
    return len >= SH_KEYREC_MAGIC_LEN
           && memcmp(user, SH_KEYREC_MAGIC, SH_KEYREC_MAGIC_LEN) == 0;
}

int
sh_keyrec_open(sh_keyrec_reader_t *rd, const void *user, size_t len)
{
    if (!sh_keyrec_is(user, len)) {
        return -1;
    }
    rd->p = (const unsigned char *) user + SH_KEYREC_MAGIC_LEN;
    rd->end = (const unsigned char *) user + len;
    rd->n = 0;
    return 0;
}

int
sh_keyrec_next(sh_keyrec_reader_t *rd, sh_keyrec_t *rec, char *err,
               size_t errlen)
{
    if (rd->p == rd->end) {
        return 0;
    }
    if ((size_t) (rd->end - rd->p) < SH_KEYREC_HEAD) {
        snprintf(err, errlen, "key record %zu is truncated", rd->n);
        return -1;
    }
    memcpy(&rec->ref, rd->p, 4);
    memcpy(&rec->len, rd->p + 4, 4);
    memcpy(&rec->hash, rd->p + 8, 8);
    if (rec->len == 0 || rec->len > SH_KEY_MAX
        || (size_t) (rd->end - rd->p) - SH_KEYREC_HEAD < rec->len)
    {
        snprintf(err, errlen, "key record %zu has a bad length %u", rd->n,
                 rec->len);
        return -1;
    }
    rec->key = rd->p + SH_KEYREC_HEAD;
    rd->p += sh_keyrec_size(rec->len);
    rd->n++;
    return 1;
}
