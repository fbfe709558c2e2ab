/*
 * fuzz_idf.c -- IDF tables: sh_idf_load on any file, and the builder's
 * save/load round trip on any corpus.
 *
 * Input: a flags byte, then either a file or (bit 3) a corpus.
 *   bit 0  recompute the trailing checksum before loading
 *   bit 1  set the entry count from the file's length
 *   bit 2  expect the file's own hash-key digest (else a fixed one)
 *   bit 3  builder mode: the rest describes documents, each a count byte
 *          and that many 16-bit word ids; they are added to a builder,
 *          saved and loaded back
 *
 * File mode: a refused file comes with a message; an accepted one must
 * answer exactly what the file says: every stored word its value, the
 * entry count its size, other words the default.  Builder mode: the table
 * loaded back gives every word seen in at least two documents
 * ln((N + 1) / (df + 1)) + 1, computed as the builder does, and every
 * other word the default ln((N + 1) / 2) + 1.
 */
#include <math.h>

#include <xxhash.h>

#include "fuzz_util.h"

#include "sh_idf.h"

/* The file's layout (sh_idf.h): a 48-byte header, the sorted keys, their
 * float values, an XXH3 of everything before it. */
#define FIDF_HDR            48
#define FIDF_OFF_DIGEST     16
#define FIDF_OFF_COUNT      32
#define FIDF_OFF_DEFAULT    40
#define FIDF_OFF_VERSION    44
#define FIDF_DIGEST         0x1df1df1df1df1dfull
#define FIDF_VERSION        0x01abcdefu
#define FIDF_MAX_WORDS      4096

static void
fidf_init(void)
{
}

static uint64_t
fidf_get64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/* Word id -> a keyed-looking 64-bit hash (never 0). */
static uint64_t
fidf_word(unsigned id)
{
    uint64_t s = id;

    return fuzz_rng(&s) | 1;
}

static void
fidf_file(unsigned flags, const uint8_t *data, size_t len)
{
    uint8_t  *file = malloc(len + 1);
    sh_idf_t *idf;
    char      path[64], err[256];
    uint64_t  digest = FIDF_DIGEST, n = 0, i, key, sk = 7;
    uint32_t  version = FIDF_VERSION;
    float     val, dflt;
    int       fd;

    FUZZ_CHECK(file != NULL);
    if (len > 0) {
        memcpy(file, data, len);
    }
    if (len >= FIDF_HDR + 8) {
        if (flags & 2) {
            n = (len - FIDF_HDR - 8) / 12;
            memcpy(file + FIDF_OFF_COUNT, &n, sizeof(n));
        }
        if (flags & 1) {
            uint64_t sum = XXH3_64bits(file, len - 8);

            memcpy(file + len - 8, &sum, sizeof(sum));
        }
        if (flags & 4) {
            digest = fidf_get64(file + FIDF_OFF_DIGEST);
            memcpy(&version, file + FIDF_OFF_VERSION, sizeof(version));
        }
    }

    fd = fuzz_memfile(file, len, path, sizeof(path));
    err[0] = '\0';
    idf = sh_idf_load(path, digest, version, err, sizeof(err));
    close(fd);
    if (idf == NULL) {
        FUZZ_CHECK(err[0] != '\0');
        free(file);
        return;
    }

    /* Accepted: the table is the file. */
    n = fidf_get64(file + FIDF_OFF_COUNT);
    FUZZ_CHECK(len == FIDF_HDR + n * 12 + 8);
    FUZZ_CHECK(sh_idf_size(idf) == n);
    memcpy(&dflt, file + FIDF_OFF_DEFAULT, sizeof(dflt));
    for (i = 0; i < n; i++) {
        key = fidf_get64(file + FIDF_HDR + i * 8);
        memcpy(&val, file + FIDF_HDR + n * 8 + i * 4, sizeof(val));
        FUZZ_CHECK(sh_idf_get(idf, key) == val);
        FUZZ_CHECK(isfinite(val) && val > 0);
    }
    /* Words not in the file get the default: probe a few keys near the
     * stored ones and some random ones. */
    for (i = 0; i < 16; i++) {
        uint64_t j;
        int      stored = 0;

        key = n > 0 && (i & 1) ? fidf_get64(file + FIDF_HDR + (i % n) * 8)
                                 + 1 : fuzz_rng(&sk);
        for (j = 0; j < n && !stored; j++) {
            /* The table keeps word 0 as 1 (0 marks an empty slot). */
            stored = fidf_get64(file + FIDF_HDR + j * 8) == (key ? key : 1);
        }
        if (!stored) {
            FUZZ_CHECK(sh_idf_get(idf, key) == dflt);
        }
    }
    sh_idf_free(idf);
    free(file);
}

static void
fidf_builder(fuzz_in_t *in)
{
    static uint32_t   df[65536];
    static uint8_t    seen[65536];
    uint64_t          words[256];
    unsigned          ids[256], ndocs = 0, k, i, nw;
    sh_idf_builder_t *b = sh_idf_builder_new();
    sh_idf_t         *idf;
    char              path[256], err[256];
    double            N;

    FUZZ_CHECK(b != NULL);
    memset(df, 0, sizeof(df));
    while (in->n > 0 && ndocs < 64) {
        k = fuzz_u8(in);
        nw = 0;
        for (i = 0; i < k && in->n > 0; i++) {
            unsigned id = fuzz_u16(in) % FIDF_MAX_WORDS;

            /* A document's distinct words, as `simhash idf build` adds
             * them: a repeat within a document is dropped. */
            if (!seen[id]) {
                seen[id] = 1;
                ids[nw] = id;
                words[nw++] = fidf_word(id);
            }
        }
        for (i = 0; i < nw; i++) {
            seen[ids[i]] = 0;
            df[ids[i]]++;
        }
        FUZZ_CHECK(sh_idf_builder_add(b, words, nw) == 0);
        ndocs++;
    }
    fuzz_tmp_path("idf", path, sizeof(path));
    FUZZ_CHECK(sh_idf_builder_save(b, path, FIDF_DIGEST, FIDF_VERSION, err,
                                   sizeof(err))
               == 0);
    sh_idf_builder_free(b);
    idf = sh_idf_load(path, FIDF_DIGEST, FIDF_VERSION, err, sizeof(err));
    if (idf == NULL) {
        fprintf(stderr, "fuzz_idf: %s\n", err);
    }
    FUZZ_CHECK(idf != NULL);
    /* A table built under one key is refused under another. */
    FUZZ_CHECK(sh_idf_load(path, FIDF_DIGEST + 1, FIDF_VERSION, err,
                           sizeof(err)) == NULL);
    /* So is one built under another extraction version. */
    FUZZ_CHECK(sh_idf_load(path, FIDF_DIGEST, FIDF_VERSION + 1, err,
                           sizeof(err)) == NULL);
    unlink(path);

    N = (double) ndocs;
    for (i = 0; i < FIDF_MAX_WORDS; i++) {
        float want = df[i] >= 2
                     ? (float) (log((N + 1.0) / (df[i] + 1.0)) + 1.0)
                     : (float) (log((N + 1.0) / 2.0) + 1.0);

        FUZZ_CHECK(sh_idf_get(idf, fidf_word(i)) == want);
    }
    sh_idf_free(idf);
}

static int
fidf_one(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    unsigned  flags = fuzz_u8(&in);

    if (flags & 8) {
        fidf_builder(&in);
    } else {
        fidf_file(flags, in.p, in.n);
    }
    return 0;
}

FUZZ_ENTRY(fidf_init, fidf_one)
