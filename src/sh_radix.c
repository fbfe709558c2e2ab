/*
 * sh_radix.c -- in-place MSD radix sort of parallel (key, value) arrays
 * (sh_radix.h): an "American flag" sort.
 *
 * The sort key is the 96 bits of key then value, read a byte at a time
 * from the top.  Each level counts the pairs per byte value, then moves
 * every pair to its byte's bucket by following cycles of swaps (no second
 * array), then sorts each bucket by the next byte.  Buckets of at most
 * SMALL pairs are finished by insertion.  256 buckets keep the moves to
 * 256 streams a level, within the cache and TLB's reach even at 2^27
 * pairs; random keys need about log256(n / SMALL) levels (3 at 2^27).
 * Equal keys go on into the value's bytes, so a run of one key (the same
 * fingerprint under many URLs) is ordered by value at the same cost, and
 * the depth never exceeds 12 levels (12 x 2 KB of counts on the stack).
 */
#include <string.h>

#include "sh_radix.h"

#define SMALL       32
#define LEVELS      12              /* bytes of key (8) and value (4) */

static inline unsigned
digit(uint64_t k, uint32_t v, unsigned level)
{
    return level < 8 ? (unsigned) (k >> (56 - 8 * level)) & 255
                     : (unsigned) (v >> (24 - 8 * (level - 8))) & 255;
}

static void
insertion(uint64_t *key, uint32_t *val, size_t n)
{
    size_t   i, j;
    uint64_t k;
    uint32_t v;

    for (i = 1; i < n; i++) {
        k = key[i];
        v = val[i];
        for (j = i; j > 0 && (key[j - 1] > k
                              || (key[j - 1] == k && val[j - 1] > v)); j--)
        {
            key[j] = key[j - 1];
            val[j] = val[j - 1];
        }
        key[j] = k;
        val[j] = v;
    }
}

static void
sort_level(uint64_t *key, uint32_t *val, size_t n, unsigned level)
{
    size_t   head[256], end[256], count[256], i, sum, start;
    unsigned d, e;
    uint64_t k, tk;
    uint32_t v, tv;

    for (; level < LEVELS; level++) {
        if (n <= SMALL) {
            break;
        }
        memset(count, 0, sizeof(count));
        for (i = 0; i < n; i++) {
            count[digit(key[i], val[i], level)]++;
        }
        if (count[digit(key[0], val[0], level)] == n) {
            continue;               /* one byte for all: the next level */
        }
        for (d = 0, sum = 0; d < 256; d++) {
            head[d] = sum;
            sum += count[d];
            end[d] = sum;
        }
        /* Cycle leader: take the pair at the first unsorted place of
         * bucket d, swap it into the bucket its byte names, and go on with
         * the pair found there until one belongs to d. */
        for (d = 0; d < 256; d++) {
            while (head[d] < end[d]) {
                k = key[head[d]];
                v = val[head[d]];
                e = digit(k, v, level);
                while (e != d) {
                    tk = key[head[e]];
                    tv = val[head[e]];
                    key[head[e]] = k;
                    val[head[e]] = v;
                    head[e]++;
                    k = tk;
                    v = tv;
                    e = digit(k, v, level);
                }
                key[head[d]] = k;
                val[head[d]] = v;
                head[d]++;
            }
        }
        for (d = 0, start = 0; d < 256; start = end[d], d++) {
            if (end[d] - start > 1) {
                sort_level(key + start, val + start, end[d] - start,
                           level + 1);
            }
        }
        return;
    }
    insertion(key, val, n);
}

void
sh_radix_sort(uint64_t *key, uint32_t *value, size_t n)
{
    if (n > 1) {
        sort_level(key, value, n, 0);
    }
}
