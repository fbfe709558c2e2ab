/*
 * sh_simhash.c -- the 64 signed sums.
 *
 * W[j] += (bit j of h) ? +w : -w for every feature.  Rather than branch on
 * 64 bits per feature we add w * sign for eight lanes at a time, the signs
 * of each byte value coming from a 256 x 8 table; the compiler turns the
 * inner loop into vector multiply-adds.
 */
#include <math.h>
#include <string.h>

#include "sh_simhash.h"

static float sign8[256][8];
static int   sign8_ready;

static void
sign8_init(void)
{
    int b, j;

    for (b = 0; b < 256; b++) {
        for (j = 0; j < 8; j++) {
            sign8[b][j] = ((b >> j) & 1) ? 1.0f : -1.0f;
        }
    }
    sign8_ready = 1;
}

void
sh_acc_init(sh_acc_t *acc)
{
    if (!sign8_ready) {
        sign8_init();
    }
    memset(acc, 0, sizeof(*acc));
}

/* Eight lanes fit one AVX register: use it where the CPU has it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void
sh_acc_add(sh_acc_t *acc, uint64_t h, float w)
{
    int          byte, j;
    const float *s;
    float       *out;

    for (byte = 0; byte < 8; byte++) {
        s = sign8[(h >> (8 * byte)) & 0xFF];
        out = acc->w + 8 * byte;
        for (j = 0; j < 8; j++) {
            out[j] += w * s[j];
        }
    }
    acc->norm2 += (double) w * w;
}

void
sh_acc_finish(const sh_acc_t *acc, sh_result_t *res)
{
    float    inv = acc->norm2 > 0 ? (float) (1.0 / sqrt(acc->norm2)) : 0.0f;
    uint64_t hash = 0;
    int      j;

    for (j = 0; j < SH_BITS; j++) {
        res->weights[j] = acc->w[j] * inv;
        if (acc->w[j] >= 0.0f) {
            hash |= (uint64_t) 1 << j;
        }
    }
    res->hash = hash;
}

const char *
sh_status_name(sh_status_t s)
{
    switch (s) {
    case SH_STATUS_OK:
        return "ok";
    case SH_STATUS_TOO_SHORT:
        return "too-short";
    case SH_STATUS_BINARY:
        return "binary";
    case SH_STATUS_TOO_LARGE:
        return "too-large";
    case SH_STATUS_TOO_COMPLEX:
        return "too-complex";
    }
    return "unknown";
}
