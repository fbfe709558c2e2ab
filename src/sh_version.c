/*
 * sh_version.c -- the extraction version and the libxml2 behaviour class.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh_version.h"

uint32_t
sh_version_make(uint64_t options_digest)
{
    uint32_t low = (uint32_t) (options_digest ^ (options_digest >> 24)
                               ^ (options_digest >> 48)) & 0xffffffu;

    return (SH_EXTRACT_CODE & 0xffu) << 24 | low;
}

unsigned
sh_version_code(uint32_t xv)
{
    return xv >> 24;
}

char *
sh_version_format(char *buf, uint32_t xv)
{
    snprintf(buf, SH_VERSION_TEXT, "%08x", xv);
    return buf;
}

int
sh_version_parse(uint32_t *xv, const char *s, size_t len)
{
    uint32_t v = 0;
    size_t   i;

    if (len != 8) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        unsigned c = (unsigned char) s[i], d;

        if (c >= '0' && c <= '9') {
            d = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            d = c - 'a' + 10;
        } else {
            return -1;
        }
        v = v << 4 | d;
    }
    *xv = v;
    return 0;
}
