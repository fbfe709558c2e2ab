/*
 * sh_idf.c -- IDF tables: build, save, load, look up.
 *
 * Loaded tables become an open-addressing hash map (one probe per word at
 * weighing time) rather than staying a sorted array to binary-search.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_file.h"
#include "sh_idf.h"

#define IDF_MAGIC       "SHIDF\0\0\0"
#define IDF_VERSION     2u      /* 2: the words version in the header */
#define IDF_BYTE_ORDER  0x01020304u
#define IDF_MAX_ENTRIES (1u << 26)

typedef struct {
    char     magic[8];
    uint32_t version;
    uint32_t byte_order;
    uint64_t seed_digest;
    uint64_t ndocs;
    uint64_t nentries;
    float    default_idf;
    uint32_t words_version;     /* sh_config_words_version of the builder */
} idf_header_t;

/* A hash map from 64-bit keys (0 = empty; key 0 is stored as 1). */
typedef struct {
    uint64_t *key;
    uint32_t *val;          /* df while building; float bits once loaded */
    size_t    mask;
    size_t    count;
} map_t;

struct sh_idf_s {
    map_t     map;
    float     default_idf;
    uint64_t  digest;       /* the file's checksum: its contents */
};

struct sh_idf_builder_s {
    map_t    map;
    uint64_t ndocs;
};

static int
map_init(map_t *m, size_t expect)
{
    size_t n = 1024;

    while (n < expect * 2) {
        n <<= 1;
    }
    m->key = calloc(n, sizeof(uint64_t));
    m->val = calloc(n, sizeof(uint32_t));
    if (m->key == NULL || m->val == NULL) {
        free(m->key);
        free(m->val);
        return -1;
    }
    m->mask = n - 1;
    m->count = 0;
    return 0;
}

static void
map_free(map_t *m)
{
    free(m->key);
    free(m->val);
}

/* Slot of key k: where it is, or where it would go. */
static size_t
map_slot(const map_t *m, uint64_t k)
{
    size_t i;

    for (i = (k ^ (k >> 29)) & m->mask; m->key[i] != 0 && m->key[i] != k;
         i = (i + 1) & m->mask)
    {
        /* void */
    }
    return i;
}

static int
map_grow(map_t *m)
{
    map_t  g;
    size_t i, j;

    if (map_init(&g, m->mask + 1) != 0) {
        return -1;
    }
    for (i = 0; i <= m->mask; i++) {
        if (m->key[i] != 0) {
            j = map_slot(&g, m->key[i]);
            g.key[j] = m->key[i];
            g.val[j] = m->val[i];
        }
    }
    g.count = m->count;
    map_free(m);
    *m = g;
    return 0;
}

/* ---- lookup ----------------------------------------------------------- */

float
sh_idf_get(const sh_idf_t *idf, uint64_t word)
{
    size_t i;
    float  v;

    word = word ? word : 1;
    i = map_slot(&idf->map, word);
    if (idf->map.key[i] == 0) {
        return idf->default_idf;
    }
    memcpy(&v, &idf->map.val[i], sizeof(v));
    return v;
}

size_t
sh_idf_size(const sh_idf_t *idf)
{
    return idf->map.count;
}

uint64_t
sh_idf_digest(const sh_idf_t *idf)
{
    return idf->digest;
}

void
sh_idf_free(sh_idf_t *idf)
{
    if (idf != NULL) {
        map_free(&idf->map);
        free(idf);
    }
}

/* ---- load ------------------------------------------------------------- */

sh_idf_t *
sh_idf_load(const char *path, uint64_t seed_digest, uint32_t words_version,
            char *err, size_t errlen)
{
    FILE         *f;
    idf_header_t  hd;
    sh_idf_t     *idf = NULL;
    uint64_t     *keys = NULL, sum, prev = 0;
    float        *vals = NULL;
    size_t        i, j, n;
    long          size;
    XXH3_state_t *st = NULL;

    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open IDF table \"%s\": %s", path,
                 strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) != 0)
    {
        snprintf(err, errlen, "cannot read IDF table \"%s\"", path);
        goto fail;
    }
    if (fread(&hd, sizeof(hd), 1, f) != 1
        || memcmp(hd.magic, IDF_MAGIC, 8) != 0)
    {
        snprintf(err, errlen, "\"%s\" is not an IDF table", path);
        goto fail;
    }
    if (hd.byte_order != IDF_BYTE_ORDER) {
        snprintf(err, errlen, "IDF table \"%s\" was written on a machine "
                 "of the other byte order", path);
        goto fail;
    }
    if (hd.version != IDF_VERSION) {
        snprintf(err, errlen, "IDF table \"%s\" has format %u, expected %u%s",
                 path, hd.version, IDF_VERSION, hd.version < IDF_VERSION
                 ? " (written before extraction versions: build it again "
                   "with simhash idf)" : "");
        goto fail;
    }
    n = (size_t) hd.nentries;
    if (hd.nentries > IDF_MAX_ENTRIES
        || (uint64_t) size != sizeof(hd) + hd.nentries * 12 + 8)
    {
        snprintf(err, errlen, "IDF table \"%s\" is truncated or has a bad "
                 "size", path);
        goto fail;
    }
    if (hd.seed_digest != seed_digest) {
        snprintf(err, errlen, "IDF table \"%s\" was built with another "
                 "hash key (simhash_seed)", path);
        goto fail;
    }
    if (hd.words_version != words_version) {
        snprintf(err, errlen, "IDF table \"%s\" was built under extraction "
                 "version %08x, these options give %08x: build it again "
                 "with simhash idf", path, hd.words_version, words_version);
        goto fail;
    }

    keys = malloc(n * sizeof(uint64_t) + 1);
    vals = malloc(n * sizeof(float) + 1);
    st = XXH3_createState();
    if (keys == NULL || vals == NULL || st == NULL) {
        snprintf(err, errlen, "out of memory loading \"%s\"", path);
        goto fail;
    }
    if (fread(keys, sizeof(uint64_t), n, f) != n
        || fread(vals, sizeof(float), n, f) != n
        || fread(&sum, sizeof(sum), 1, f) != 1)
    {
        snprintf(err, errlen, "IDF table \"%s\" is truncated", path);
        goto fail;
    }
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, &hd, sizeof(hd));
    XXH3_64bits_update(st, keys, n * sizeof(uint64_t));
    XXH3_64bits_update(st, vals, n * sizeof(float));
    if (XXH3_64bits_digest(st) != sum) {
        snprintf(err, errlen, "IDF table \"%s\" is corrupt (checksum)",
                 path);
        goto fail;
    }
    if (!(hd.default_idf > 0.0f && hd.default_idf < 100.0f)) {
        snprintf(err, errlen, "IDF table \"%s\" has a bad default", path);
        goto fail;
    }

    idf = calloc(1, sizeof(*idf));
    if (idf == NULL || map_init(&idf->map, n) != 0) {
        free(idf);
        idf = NULL;
        snprintf(err, errlen, "out of memory loading \"%s\"", path);
        goto fail;
    }
    idf->default_idf = hd.default_idf;
    idf->digest = sum;
    for (i = 0; i < n; i++) {
        if ((i > 0 && keys[i] <= prev) || keys[i] == 0
            || !(vals[i] > 0.0f && vals[i] < 100.0f))
        {
            snprintf(err, errlen, "IDF table \"%s\" has a bad entry %zu",
                     path, i);
            sh_idf_free(idf);
            idf = NULL;
            goto fail;
        }
        prev = keys[i];
        j = map_slot(&idf->map, keys[i]);
        idf->map.key[j] = keys[i];
        memcpy(&idf->map.val[j], &vals[i], sizeof(float));
        idf->map.count++;
    }

fail:
    free(keys);
    free(vals);
    if (st != NULL) {
        XXH3_freeState(st);
    }
    fclose(f);
    return idf;
}

/* ---- build ------------------------------------------------------------ */

sh_idf_builder_t *
sh_idf_builder_new(void)
{
    sh_idf_builder_t *b = calloc(1, sizeof(*b));

    if (b != NULL && map_init(&b->map, 65536) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

int
sh_idf_builder_add(sh_idf_builder_t *b, const uint64_t *words, size_t n)
{
    size_t   i, j;
    uint64_t k;

    for (i = 0; i < n; i++) {
        if ((b->map.count + 1) * 2 > b->map.mask + 1
            && map_grow(&b->map) != 0)
        {
            return -1;
        }
        k = words[i] ? words[i] : 1;
        j = map_slot(&b->map, k);
        if (b->map.key[j] == 0) {
            b->map.key[j] = k;
            b->map.count++;
        }
        b->map.val[j]++;
    }
    b->ndocs++;
    return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

    return x < y ? -1 : x > y;
}


int
sh_idf_builder_save(sh_idf_builder_t *b, const char *path,
                    uint64_t seed_digest, uint32_t words_version, char *err,
                    size_t errlen)
{
    idf_header_t      hd;
    uint64_t         *keys;
    float            *vals;
    size_t            i, n = 0;
    uint64_t          sum;
    sh_file_writer_t *w;
    XXH3_state_t     *st;
    int               rc = -1;
    double            N = (double) b->ndocs;

    keys = malloc((b->map.count + 1) * sizeof(uint64_t));
    vals = malloc((b->map.count + 1) * sizeof(float));
    st = XXH3_createState();
    if (keys == NULL || vals == NULL || st == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (i = 0; i <= b->map.mask; i++) {
        if (b->map.key[i] != 0 && b->map.val[i] >= 2) {
            keys[n++] = b->map.key[i];
        }
    }
    if (n > IDF_MAX_ENTRIES) {
        snprintf(err, errlen, "too many words for an IDF table (%zu)", n);
        goto done;
    }
    qsort(keys, n, sizeof(uint64_t), cmp_u64);
    for (i = 0; i < n; i++) {
        uint32_t df = b->map.val[map_slot(&b->map, keys[i])];
        vals[i] = (float) (log((N + 1.0) / (df + 1.0)) + 1.0);
    }

    memset(&hd, 0, sizeof(hd));
    memcpy(hd.magic, IDF_MAGIC, 8);
    hd.version = IDF_VERSION;
    hd.byte_order = IDF_BYTE_ORDER;
    hd.seed_digest = seed_digest;
    hd.words_version = words_version;
    hd.ndocs = b->ndocs;
    hd.nentries = n;
    hd.default_idf = (float) (log((N + 1.0) / 2.0) + 1.0);

    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, &hd, sizeof(hd));
    XXH3_64bits_update(st, keys, n * sizeof(uint64_t));
    XXH3_64bits_update(st, vals, n * sizeof(float));
    sum = XXH3_64bits_digest(st);

    w = sh_file_writer_open(path, 0644, NULL, err, errlen);
    if (w == NULL) {
        goto done;
    }
    if (sh_file_writer_write(w, &hd, sizeof(hd), err, errlen) != 0
        || sh_file_writer_write(w, keys, n * sizeof(uint64_t), err, errlen)
           != 0
        || sh_file_writer_write(w, vals, n * sizeof(float), err, errlen) != 0
        || sh_file_writer_write(w, &sum, sizeof(sum), err, errlen) != 0)
    {
        sh_file_writer_abort(w);
        goto done;
    }
    if (sh_file_writer_commit(w, err, errlen) != 0) {
        goto done;
    }
    rc = 0;

done:
    free(keys);
    free(vals);
    if (st != NULL) {
        XXH3_freeState(st);
    }
    return rc;
}

void
sh_idf_builder_free(sh_idf_builder_t *b)
{
    if (b != NULL) {
        map_free(&b->map);
        free(b);
    }
}
