/*
 * sh_radix.c -- LSD radix sort of (key, value) pairs (sh_radix.h).
 *
 * Six passes of 11 bits, each a count and a scatter between the array and
 * one buffer of the same size.  2,048 buckets keep the scatter's write
 * streams in the cache and the TLB; 65,536 made every write of a 2^27 sort
 * a miss (measured: the load of a 2^27 store spent most of its time
 * there).  A pass whose digit is the same for every pair is skipped.
 */
#include <stdlib.h>
#include <string.h>

#include "sh_bigmem.h"
#include "sh_radix.h"

#define BITS    11
#define DIGITS  (1u << BITS)

int
sh_radix_sort(sh_pair_t *a, size_t n)
{
    sh_pair_t *buf, *src = a, *dst, *t;
    size_t    *count, i, sum, c;
    unsigned   shift;

    if (n < 2) {
        return 0;
    }
    buf = sh_big_alloc(n * sizeof(*buf));   /* 2 MB pages: a fault each, not
                                               one per 4 KB */
    count = malloc(DIGITS * sizeof(*count));
    if (buf == NULL || count == NULL) {
        free(buf);
        free(count);
        return -1;
    }
    dst = buf;
    for (shift = 0; shift < 64; shift += BITS) {
        memset(count, 0, DIGITS * sizeof(*count));
        for (i = 0; i < n; i++) {
            count[(src[i].key >> shift) & (DIGITS - 1)]++;
        }
        if (count[(src[0].key >> shift) & (DIGITS - 1)] == n) {
            continue;               /* one digit for all: already in order */
        }
        for (i = 0, sum = 0; i < DIGITS; i++) {
            c = count[i];
            count[i] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++) {
            dst[count[(src[i].key >> shift) & (DIGITS - 1)]++] = src[i];
        }
        t = src;
        src = dst;
        dst = t;
    }
    if (src != a) {
        memcpy(a, src, n * sizeof(*a));
    }
    free(buf);
    free(count);
    return 0;
}
