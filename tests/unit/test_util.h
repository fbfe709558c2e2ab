/*
 * test_util.h -- what every cmocka test file includes, in the order cmocka
 * wants, plus small helpers for reading fixtures.
 */
#ifndef SH_TEST_UTIL_H
#define SH_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/*
 * A reproducible pseudo-random sequence (xorshift64).  A test file that wants
 * its own sequence defines TEST_RNG_SEED before including this header, so
 * that its data never changes with another file's.
 */
#ifndef TEST_RNG_SEED
#define TEST_RNG_SEED 0x9e3779b97f4a7c15ull
#endif

static inline uint64_t
rnd(void)
{
    static uint64_t rng = TEST_RNG_SEED;

    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* x with `nbits` distinct random bits flipped. */
static inline uint64_t
flip_random(uint64_t x, unsigned nbits)
{
    uint64_t flipped = 0;  /* the bits already chosen: each one once */

    while (nbits > 0) {
        uint64_t b = 1ull << (rnd() % 64);

        if ((flipped & b) == 0) {
            flipped |= b;
            nbits--;
        }
    }
    return x ^ flipped;
}

/* Read tests/fixtures/NAME (directory from $SH_FIXTURES) into a malloc'd
 * buffer; fails the test if it cannot. */
static inline char *
test_read_fixture(const char *name, size_t *len)
{
    const char *dir = getenv("SH_FIXTURES");
    char        path[1024];
    FILE       *f;
    char       *buf;
    long        n;

    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", name);
    f = fopen(path, "rb");
    if (f == NULL) {
        fail_msg("cannot open fixture %s", path);
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t) n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t) n, f), (size_t) n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t) n;
    return buf;
}

#endif
