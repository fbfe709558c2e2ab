/*
 * sh_le.h -- integers in a fixed little-endian byte order, whatever the
 * host's: the layouts other nodes and other builds must read (the DUST
 * image and rule records, the store file's footer, the stream's MAC
 * input).  Header-only: a few byte stores each.
 */
#ifndef SH_LE_H
#define SH_LE_H

#include <stdint.h>

/* Store the low `bytes` bytes of v at p; returns p + bytes. */
static inline unsigned char *
sh_le_put(unsigned char *p, uint64_t v, unsigned bytes)
{
    unsigned i;

    for (i = 0; i < bytes; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
    return p + bytes;
}

/* The `bytes` bytes at p as an integer. */
static inline uint64_t
sh_le_get(const unsigned char *p, unsigned bytes)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < bytes; i++) {
        v |= (uint64_t) p[i] << (8 * i);
    }
    return v;
}

#endif
