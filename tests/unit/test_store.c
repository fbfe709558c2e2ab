/*
 * test_store.c -- the compact document store (sh_store.h) against a model
 * of what it must hold, and its sliced copy (sh_image.h): a store
 * changed between every step of a copy loads back as it was at the last
 * step, in place and into another geometry.
 */
#define TEST_RNG_SEED 0x2545f4914f6cdd1dull
#include "test_util.h"

#include "sh_store.h"
#include "sh_image.h"
#include "sh_store_internal.h"
#include "sh_store_file.h"
#include "sh_snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEYS    100000

/* What the store must hold, key by key. */
typedef struct {
    int       stored;
    uint64_t  fp;
    uint64_t  digest;
    uint64_t  stamp;        /* the age order: larger is newer */
} model_t;

static model_t  model[KEYS];
static uint64_t clock_now;
static unsigned model_n;        /* keys stored */
static unsigned char secret[SH_STORE_SECRET_LEN];

static void
key_of(unsigned k, char *out, size_t *len)
{
    /* lengths vary, so that ring entries do too */
    *len = (size_t) snprintf(out, 128, "http://h%u.example/%0*u", k % 7,
                             (int) (4 + k % 29), k);
}

static sh_store_t *
new_store(void **mem, uint32_t capacity, uint64_t text)
{
    size_t      size = sh_store_region_size(capacity, text);
    char        err[256];
    sh_store_t *st;

    assert_int_equal(posix_memalign(mem, 64, size), 0);
    memset(*mem, 0xa5, size);       /* nothing may rely on zeroed memory */
    st = sh_store_init(*mem, size, text, secret, 77, err, sizeof(err));
    if (st == NULL) {
        fail_msg("init: %s", err);
    }
    return st;
}

static void
check_ok(const sh_store_t *st)
{
    char err[256];

    if (sh_store_check(st, err, sizeof(err)) != 0) {
        fail_msg("store check: %s", err);
    }
}

/* 1: fingerprints an adversary picks (test_pathological_fingerprints) */
static int pathological;

static void
model_reset(void)
{
    memset(model, 0, sizeof(model));
    clock_now = 0;
    model_n = 0;
    pathological = 0;
}

static unsigned
model_count(void)
{
    return model_n;
}

static void
model_store(unsigned k, int stored)
{
    model_n += (unsigned) stored - (unsigned) model[k].stored;
    model[k].stored = stored;
}

static unsigned
model_oldest(void)
{
    unsigned k, best = KEYS;

    for (k = 0; k < KEYS; k++) {
        if (model[k].stored
            && (best == KEYS || model[k].stamp < model[best].stamp))
        {
            best = k;
        }
    }
    return best;
}

/* One random operation on store and model alike. */
static uint64_t
fingerprint_for(unsigned k)
{
    if (pathological && k % 3 == 0) {
        return 0x123456789ABCDEF0ULL;   /* one page under many URLs */
    }
    if (pathological && k % 3 == 1) {
        return 0xFFFFFFFFFFFF0000ULL | k;   /* piled at the top of the
                                               space, past the table's
                                               spare tail */
    }
    return rnd();
}

static void
random_op(sh_store_t *st, unsigned nkeys)
{
    unsigned       k = (unsigned) (rnd() % nkeys), op = (unsigned) (rnd() % 8);
    char           key[128];
    size_t         len;
    uint32_t       ref, evicted;
    sh_store_doc_t d;
    sh_store_stats_t s;

    key_of(k, key, &len);
    ref = sh_store_find(st, key, len);
    assert_int_equal(ref != SH_NOREF, model[k].stored);

    if (ref == SH_NOREF) {
        sh_store_stats(st, &s);
        memset(&d, 0, sizeof(d));
        d.digest = rnd();
        d.time = (uint32_t) k;
        d.sketches.structure = k;
        d.sketches.links = ~(uint64_t) k;
        if (model_count() == s.capacity) {
            unsigned old = model_oldest();

            model_store(old, 0);
        }
        model_store(k, 1);
        model[k].fp = fingerprint_for(k);
        model[k].digest = d.digest;
        model[k].stamp = ++clock_now;
        ref = sh_store_put(st, key, len, sh_store_keyhash(st, key, len),
                           model[k].fp, &d, &evicted);
        assert_int_not_equal(ref, SH_NOREF);
        return;
    }
    switch (op) {
    case 0:
        assert_int_equal(sh_store_remove(st, ref), 0);
        model_store(k, 0);
        break;
    case 1:
    case 2:
        model[k].fp = rnd();
        model[k].stamp = ++clock_now;
        assert_int_equal(sh_store_update(st, ref, model[k].fp), 0);
        break;
    case 3:
        d = *sh_store_doc(st, ref);
        d.digest = model[k].digest = rnd();
        sh_store_set(st, ref, &d);
        break;
    default:
        model[k].stamp = ++clock_now;
        assert_int_equal(sh_store_touch(st, ref), 0);
        break;
    }
}

typedef struct {
    uint64_t hash;
    unsigned k;
} hk_t;

static int
hk_cmp(const void *a, const void *b)
{
    const hk_t *x = a, *y = b;

    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* The key of a key hash, among the first nkeys (KEYS if none). */
static unsigned
key_of_hash(const hk_t *t, unsigned n, uint64_t h)
{
    hk_t        probe = { h, 0 };
    const hk_t *f = bsearch(&probe, t, n, sizeof(*t), hk_cmp);

    return f ? f->k : KEYS;
}

/* The store holds exactly what the model says, in its age order. */
static void
compare_model(sh_store_t *st, unsigned nkeys)
{
    unsigned        k, n = 0;
    char            key[128];
    const char     *text;
    size_t          len, tlen;
    uint32_t        ref, prev_ref = SH_NOREF;
    uint64_t        fp, prev_stamp = 0;
    const sh_store_doc_t *d;
    sh_store_stats_t s;

    check_ok(st);
    for (k = 0; k < nkeys; k++) {
        key_of(k, key, &len);
        ref = sh_store_find(st, key, len);
        if (!model[k].stored) {
            assert_int_equal(ref, SH_NOREF);
            continue;
        }
        assert_int_not_equal(ref, SH_NOREF);
        n++;
        assert_int_equal(sh_index_get(sh_store_index(st), ref, &fp), 0);
        assert_true(fp == model[k].fp);
        d = sh_store_doc(st, ref);
        assert_non_null(d);
        assert_true(d->digest == model[k].digest);
        assert_int_equal(d->time, k);
        tlen = sh_store_key(st, ref, &text);
        if (tlen != 0) {
            assert_int_equal(tlen, len);
            assert_memory_equal(text, key, len);
        }
    }
    sh_store_stats(st, &s);
    assert_int_equal(s.entries, n);

    /* the age order: walk it through the key hashes */
    {
        sh_index_ends_t e;
        uint32_t        older, newer;
        unsigned        steps = 0;

        hk_t           *t = malloc(nkeys * sizeof(*t));

        assert_non_null(t);
        for (k = 0; k < nkeys; k++) {
            key_of(k, key, &len);
            t[k].hash = sh_store_keyhash(st, key, len);
            t[k].k = k;
        }
        qsort(t, nkeys, sizeof(*t), hk_cmp);
        sh_index_ends(sh_store_index(st), &e);
        for (ref = e.oldest; ref != SH_NOREF; ref = newer) {
            d = sh_store_doc(st, ref);
            assert_non_null(d);
            k = key_of_hash(t, nkeys, d->keyhash);
            assert_true(k < nkeys && model[k].stored);
            assert_true(model[k].stamp > prev_stamp);
            prev_stamp = model[k].stamp;
            assert_int_equal(sh_index_links(sh_store_index(st), ref, &older,
                                            &newer), 0);
            assert_int_equal(older, prev_ref);
            prev_ref = ref;
            steps++;
        }
        assert_int_equal(steps, n);
        free(t);
    }
}

static void
test_store_follows_model(void **state)
{
    void            *mem;
    sh_store_t      *st;
    sh_store_stats_t s;
    unsigned         i;

    model_reset();
    st = new_store(&mem, 500, 8192);     /* text for ~200 keys */
    sh_store_stats(st, &s);
    assert_true(s.capacity >= 500 && s.capacity < 520);
    for (i = 0; i < 20000; i++) {
        random_op(st, 1500);
        if (i % 2500 == 0) {
            compare_model(st, 1500);
        }
    }
    compare_model(st, 1500);
    sh_store_stats(st, &s);
    assert_true(s.evictions > 0);
    assert_true(s.text_evictions > 0);      /* the ring was too small */
    assert_true(s.texts > 0 && s.texts < s.entries);
    free(mem);
}

/* A document whose text left the ring is still found by its key, and
 * named by a stable id. */
static void
test_text_evicted_keeps_document(void **state)
{
    void       *mem;
    sh_store_t *st = new_store(&mem, 1000, 4096);
    char        key[128], id[SH_STORE_ID_LEN + 1], id2[SH_STORE_ID_LEN + 1];
    size_t      len;
    const char *text;
    sh_store_doc_t d;
    uint32_t    ref0, ref;
    unsigned    k;

    memset(&d, 0, sizeof(d));
    key_of(0, key, &len);
    ref0 = sh_store_put(st, key, len, sh_store_keyhash(st, key, len), 1, &d,
                        NULL);
    assert_int_equal(sh_store_key(st, ref0, &text), len);
    sh_store_id(st, ref0, id);
    assert_int_equal(strlen(id), SH_STORE_ID_LEN);
    for (k = 1; k < 400; k++) {
        key_of(k, key, &len);
        (void) sh_store_put(st, key, len, sh_store_keyhash(st, key, len),
                            k, &d, NULL);
    }
    assert_int_equal(sh_store_key(st, ref0, &text), 0);    /* text gone */
    key_of(0, key, &len);
    ref = sh_store_find(st, key, len);
    assert_int_equal(ref, ref0);                            /* still found */
    sh_store_id(st, ref, id2);
    assert_string_equal(id, id2);
    check_ok(st);
    free(mem);
}

/* Touching a document whose text is in the older half of the ring copies
 * it to the front: a page seen often keeps its name. */
static void
test_touch_refreshes_text(void **state)
{
    void       *mem;
    sh_store_t *st = new_store(&mem, 1000, 4096);
    char        key[128];
    size_t      len;
    const char *text;
    sh_store_doc_t d;
    uint32_t    ref0;
    unsigned    k;

    memset(&d, 0, sizeof(d));
    key_of(0, key, &len);
    ref0 = sh_store_put(st, key, len, sh_store_keyhash(st, key, len), 1, &d,
                        NULL);
    for (k = 1; k < 2000; k++) {
        key_of(k, key, &len);
        (void) sh_store_put(st, key, len, sh_store_keyhash(st, key, len),
                            k, &d, NULL);
        if (k % 10 == 0) {
            assert_int_equal(sh_store_touch(st, ref0), 0);
        }
    }
    assert_true(sh_store_key(st, ref0, &text) > 0);
    check_ok(st);
    free(mem);
}

/* ---- The sliced copy. ---- */

typedef struct {
    unsigned char *data;
    size_t         len, cap;
} image_t;

static void
image_add(image_t *im, const unsigned char *p, size_t n)
{
    unsigned char *grown;

    if (im->len + n > im->cap) {
        im->cap = (im->len + n) * 2;
        assert_int_equal(posix_memalign((void **) &grown, 64, im->cap), 0);
        if (im->data != NULL) {
            memcpy(grown, im->data, im->len);
            free(im->data);
        }
        im->data = grown;
    }
    memcpy(im->data + im->len, p, n);
    im->len += n;
}

/* Copy st in steps of a small buffer, `ops` random changes after each. */
#define STEP_BUF    (256 * 1024)

/* 0, or -1 when the copy gave up */
static int
save(sh_store_t *st, image_t *im, unsigned ops, unsigned nkeys,
     unsigned *steps)
{
    unsigned char   *buf = malloc(STEP_BUF);
    sh_image_saver_t sv;
    long             n;
    unsigned         i;

    memset(im, 0, sizeof(*im));
    *steps = 0;
    sh_image_save_begin(&sv, st, buf, STEP_BUF);
    for (;;) {
        n = sh_image_save_step(&sv);
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (n == 0) {
            break;
        }
        image_add(im, buf, (size_t) n);
        (*steps)++;
        /* the zone goes on changing between two holds of the lock, except
         * after the last one */
        if (!sh_image_save_complete(&sv)) {
            for (i = 0; i < ops; i++) {
                random_op(st, nkeys);
            }
        }
    }
    free(buf);
    return 0;
}

static void
test_copy_in_slices_is_consistent(void **state)
{
    void            *mem, *mem2;
    sh_store_t      *st, *back;
    image_t          im;
    unsigned         i, steps;
    sh_image_info_t  info;
    sh_store_stats_t s, s2;
    char             err[256];

    model_reset();
    st = new_store(&mem, 5000, 64 * 1024);
    for (i = 0; i < 12000; i++) {
        random_op(st, KEYS);
    }
    assert_int_equal(save(st, &im, 3, KEYS, &steps), 0);
    assert_true(steps > 3);             /* it did take several holds */
    compare_model(st, KEYS);            /* the source, as of the last step */

    back = new_store(&mem2, 5000, 64 * 1024);
    if (sh_image_load(back, im.data, im.len, 0, &info, err, sizeof(err)) != 0) {
        fail_msg("load: %s", err);
    }
    assert_int_equal(info.replayed, 0);
    compare_model(back, KEYS);          /* the copy, identical */
    sh_store_stats(st, &s);
    sh_store_stats(back, &s2);
    assert_int_equal(s.texts, s2.texts);
    assert_int_equal(s.entries, info.documents);

    /* its size follows the contents, not the zone's */
    assert_true(im.len < sh_store_region_size(5000, 64 * 1024));
    free(mem2);
    free(im.data);
    free(mem);
}

/* Into a smaller zone: the newest documents, in their order. */
static void
test_copy_into_smaller_zone(void **state)
{
    void            *mem, *mem2;
    sh_store_t      *st, *back;
    image_t          im;
    unsigned         i, steps, k, kept = 0;
    sh_image_info_t  info;
    sh_store_stats_t s;
    char             err[256], key[128];
    size_t           len;

    model_reset();
    st = new_store(&mem, 2000, 64 * 1024);
    for (i = 0; i < 5000; i++) {
        random_op(st, 3000);
    }
    assert_int_equal(save(st, &im, 0, 3000, &steps), 0);
    back = new_store(&mem2, 700, 64 * 1024);
    if (sh_image_load(back, im.data, im.len, 0, &info, err, sizeof(err)) != 0) {
        fail_msg("load: %s", err);
    }
    sh_store_stats(back, &s);
    assert_int_equal(info.replayed, 1);
    assert_int_equal(info.documents, s.capacity);
    check_ok(back);
    /* the newest of the model are there, no other */
    while (model_count() > s.capacity) {
        model_store(model_oldest(), 0);
    }
    for (k = 0; k < 3000; k++) {
        key_of(k, key, &len);
        kept += sh_store_find(back, key, len) != SH_NOREF;
    }
    assert_int_equal(kept, s.capacity);
    compare_model(back, 3000);
    free(mem2);
    free(im.data);
    free(mem);
}

/* A zone that changes faster than it can be copied: the copy gives up
 * (and says so) instead of holding the lock longer; the next one works. */
static void
test_copy_gives_up_under_churn(void **state)
{
    void            *mem;
    sh_store_t      *st;
    image_t          im;
    unsigned         i, steps;

    model_reset();
    st = new_store(&mem, 20000, 64 * 1024);
    for (i = 0; i < 30000; i++) {
        random_op(st, 25000);
    }
    assert_int_equal(save(st, &im, 3000, 25000, &steps), -1);
    free(im.data);
    assert_int_equal(save(st, &im, 0, 25000, &steps), 0);
    compare_model(st, 25000);
    free(im.data);
    free(mem);
}

/*
 * A writer that died in the middle of a change leaves the index, the key
 * table and the ring disagreeing: repair rebuilds them from the records,
 * every document the index still holds is found again, and a copy that
 * was running gives up.
 */
static void
test_repair_after_dead_writer(void **state)
{
    void             *mem;
    sh_store_t       *st;
    sh_index_doc_t   *raw;
    sh_index_ends_t   e;
    sh_image_saver_t  sv;
    unsigned char    *buf = malloc(SH_IMAGE_BUF_MIN);
    uint32_t         *k, i, lost = 99;
    unsigned          n;
    char              err[256];

    model_reset();
    st = new_store(&mem, 2000, 32 * 1024);
    for (i = 0; i < 6000; i++) {
        random_op(st, 3000);
    }
    sh_image_save_begin(&sv, st, buf, SH_IMAGE_BUF_MIN);
    assert_true(sh_image_save_step(&sv) > 0);

    /* the damage: a key table entry gone, an age link cut short, the
     * ring's tail past its head */
    k = st_keys(st);
    for (i = 0, n = 0; i < st->kslots && n < 3; i++) {
        if (k[i] != SH_NOREF) {
            k[i] = SH_NOREF;
            n++;
        }
    }
    sh_index_ends(sh_store_index(st), &e);
    raw = sh_index_import_area(sh_store_index(st));
    raw[e.oldest].newer = e.newest;
    st->text_tail = st->text_head + 8;
    assert_int_not_equal(sh_store_check(st, err, sizeof(err)), 0);

    assert_int_equal(sh_store_repair(st, &lost), (long) model_count());
    assert_int_equal(lost, 0);
    check_ok(st);
    {
        char     key[128];
        size_t   len;
        unsigned kk;

        for (kk = 0; kk < 3000; kk++) {
            key_of(kk, key, &len);
            assert_int_equal(sh_store_find(st, key, len) != SH_NOREF,
                             model[kk].stored);
        }
    }
    assert_int_equal(sh_image_save_step(&sv), -1);      /* gave up */

    /* the cut link changed the age order: the model takes the store's */
    {
        char     key[128];
        size_t   len;
        unsigned kk;
        uint32_t ref, older, newer;

        sh_index_ends(sh_store_index(st), &e);
        for (ref = e.oldest; ref != SH_NOREF; ref = newer) {
            for (kk = 0; kk < 3000; kk++) {
                key_of(kk, key, &len);
                if (sh_store_find(st, key, len) == ref) {
                    model[kk].stamp = ++clock_now;
                    break;
                }
            }
            assert_int_equal(sh_index_links(sh_store_index(st), ref, &older,
                                            &newer), 0);
        }
    }

    /* and the store goes on working */
    for (i = 0; i < 2000; i++) {
        random_op(st, 3000);
    }
    check_ok(st);
    free(buf);
    free(mem);
}

static void
test_damaged_image_refused(void **state)
{
    void            *mem, *mem2;
    sh_store_t      *st, *back;
    image_t          im;
    unsigned         i, steps;
    sh_image_info_t  info;
    char             err[256];
    unsigned char    other[SH_STORE_SECRET_LEN];

    model_reset();
    st = new_store(&mem, 1000, 16384);
    for (i = 0; i < 1500; i++) {
        random_op(st, 2000);
    }
    assert_int_equal(save(st, &im, 0, 2000, &steps), 0);

    /* the trailer damaged: what the image was written under cannot be
     * checked, nothing is used */
    back = new_store(&mem2, 1000, 16384);
    im.data[im.len - 20] ^= 0x40;
    assert_int_equal(sh_image_load(back, im.data, im.len, 0, &info, err,
                                   sizeof(err)), -1);
    assert_non_null(strstr(err, "image:"));
    im.data[im.len - 20] ^= 0x40;

    free(mem2);
    back = new_store(&mem2, 1000, 16384);
    assert_int_equal(sh_image_load(back, im.data, im.len - 8, 0, &info, err,
                                   sizeof(err)), -1);
    assert_non_null(strstr(err, "truncated"));

    /* another secret: its key hashes mean nothing here */
    free(mem2);
    memcpy(other, secret, sizeof(other));
    other[0] ^= 1;
    {
        size_t size = sh_store_region_size(1000, 16384);

        assert_int_equal(posix_memalign(&mem2, 64, size), 0);
        back = sh_store_init(mem2, size, 16384, other, 77, err, sizeof(err));
        assert_non_null(back);
    }
    assert_int_equal(sh_image_load(back, im.data, im.len, 0, &info, err,
                                   sizeof(err)), -1);
    assert_non_null(strstr(err, "hash key"));

    /* fingerprints of another extraction version: refused, store empty */
    free(mem2);
    back = new_store(&mem2, 1000, 16384);
    assert_int_equal(sh_image_load(back, im.data, im.len, 0x1234, &info, err,
                                   sizeof(err)), -1);
    assert_non_null(strstr(err, "extraction version"));
    assert_int_equal(sh_store_find(back, "x", 1), SH_NOREF);

    /* and the intact image loads */
    free(mem2);
    back = new_store(&mem2, 1000, 16384);
    assert_int_equal(sh_image_load(back, im.data, im.len, 0, &info, err,
                                   sizeof(err)), 0);
    compare_model(back, 2000);
    free(mem2);
    free(im.data);
    free(mem);
}

/* Every region size formats: the store's capacity is always its index's. */
static void
test_every_size_formats(void **state)
{
    size_t      size;
    void       *mem;
    char        err[256];

    assert_int_equal(posix_memalign(&mem, 64, 1u << 20), 0);
    for (size = 40000; size < (1u << 20); size += 997) {
        if (sh_store_init(mem, size, 16384, secret, 1, err, sizeof(err))
            == NULL)
        {
            fail_msg("%zu bytes: %s", size, err);
        }
    }
    free(mem);
}

/* A damaged frame costs its own documents: the others are restored, each
 * exactly as it was. */
static void
test_damaged_frame_costs_its_documents(void **state)
{
    void            *mem, *mem2;
    sh_store_t      *st, *back;
    image_t          im;
    unsigned         i, k, steps, found = 0;
    sh_image_info_t  info;
    char             err[256], key[128];
    size_t           len;
    uint32_t         ref;
    uint64_t         fp;

    model_reset();
    st = new_store(&mem, 12000, 64 * 1024);
    for (i = 0; i < 15000; i++) {
        random_op(st, 14000);
    }
    assert_int_equal(save(st, &im, 0, 14000, &steps), 0);
    assert_true(steps >= 3);

    im.data[im.len / 5] ^= 0x40;        /* inside the first records */
    back = new_store(&mem2, 12000, 64 * 1024);
    if (sh_image_load(back, im.data, im.len, 0, &info, err, sizeof(err))
        != 0)
    {
        fail_msg("load: %s", err);
    }
    assert_int_equal(info.damaged, 1);
    /* at most one frame's records lost: 256 (FRAME_REFS) */
    assert_true(info.documents + 256 >= model_count());
    assert_true(info.documents < model_count());
    check_ok(back);
    for (k = 0; k < 14000; k++) {
        key_of(k, key, &len);
        ref = sh_store_find(back, key, len);
        if (ref == SH_NOREF) {
            continue;
        }
        assert_true(model[k].stored);
        assert_int_equal(sh_index_get(sh_store_index(back), ref, &fp), 0);
        assert_true(fp == model[k].fp);
        assert_true(sh_store_doc(back, ref)->digest == model[k].digest);
        found++;
    }
    assert_int_equal(found, info.documents);
    free(mem2);
    free(im.data);
    free(mem);
}

/* Write st as a snapshot file at path with these settings; the image's
 * offset and length in it. */
static void
write_file_tail(sh_store_t *st, const char *path, const char *settings,
                const char *tail, uint64_t *off, uint64_t *len);

static void
write_file(sh_store_t *st, const char *path, const char *settings,
           uint64_t *off, uint64_t *len)
{
    write_file_tail(st, path, settings, NULL, off, len);
}

/* The same with a tail section (sh_store_file_tail) after the image. */
static void
write_file_tail(sh_store_t *st, const char *path, const char *settings,
                const char *tail, uint64_t *off, uint64_t *len)
{
    unsigned char        *buf = malloc(SH_IMAGE_BUF_MIN);
    char                  err[256];
    sh_file_writer_t *w;
    sh_image_saver_t      sv;
    long                  n;
    uint64_t              total = 0;

    assert_non_null(buf);
    w = sh_file_writer_open(path, SH_SNAPSHOT_MODE, NULL, err, sizeof(err));
    assert_non_null(w);
    assert_int_equal(sh_store_file_begin(w, settings, strlen(settings), err,
                                         sizeof(err)), 0);
    sh_image_save_begin(&sv, st, buf, SH_IMAGE_BUF_MIN);
    while ((n = sh_image_save_step(&sv)) > 0) {
        assert_int_equal(sh_file_writer_write(w, buf, (size_t) n, err,
                                                  sizeof(err)), 0);
        total += (uint64_t) n;
    }
    assert_int_equal(n, 0);
    if (tail != NULL) {
        assert_int_equal(sh_store_file_tail(w, tail, strlen(tail), err,
                                            sizeof(err)), 0);
    }
    assert_int_equal(sh_file_writer_commit(w, err, sizeof(err)), 0);
    free(buf);
    *len = total;
    {
        struct stat sb;

        assert_int_equal(stat(path, &sb), 0);
        *off = (uint64_t) sb.st_size - total
               - (tail ? strlen(tail) + SH_STORE_FILE_TAIL_LEN : 0);
    }
}

/*
 * A file with a tail section (the module's DUST rules): the image parses
 * to its exact length and loads whole; the section comes back; a damaged
 * section is refused alone (the image still exact and whole); a damaged
 * footer leaves the rest as the image, whose documents still load.
 */
static void
test_store_file_tail(void **state)
{
    void                *mem, *mem2;
    sh_store_t          *st, *back;
    char                 dir[] = "/tmp/test_store.XXXXXX", path[256];
    char                 err[256];
    unsigned char       *file;
    const unsigned char *meta, *image, *data;
    size_t               meta_len, image_len, data_len, size;
    uint64_t             off, len;
    sh_image_info_t      info;
    struct stat          sb;
    int                  fd;
    unsigned             i;
    static const char    tail[] = "SHDUSTIM and the rules of some hosts";

    model_reset();
    st = new_store(&mem, 3000, 32 * 1024);
    for (i = 0; i < 3000; i++) {
        random_op(st, 4000);
    }
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/zone.snap", dir);
    write_file_tail(st, path, "distance=10\n", tail, &off, &len);

    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &sb), 0);
    size = (size_t) sb.st_size;
    assert_int_equal(posix_memalign((void **) &file, 64, size), 0);
    assert_int_equal(read(fd, file, size), sb.st_size);
    close(fd);

    assert_int_equal(sh_store_file_parse(file, size, &meta, &meta_len,
                                         &image, &image_len, err,
                                         sizeof(err)), 0);
    assert_int_equal(image - file, off);
    assert_int_equal(image_len, len);
    assert_int_equal(sh_store_file_tail_get(file, size, &data, &data_len),
                     1);
    assert_int_equal(data_len, sizeof(tail) - 1);
    assert_memory_equal(data, tail, data_len);
    back = new_store(&mem2, 3000, 32 * 1024);
    assert_int_equal(sh_image_load(back, image, image_len, 0, &info, err,
                                   sizeof(err)), 0);
    assert_int_equal(info.damaged, 0);
    compare_model(back, 4000);
    free(mem2);

    /* a byte of the section: refused alone */
    file[size - SH_STORE_FILE_TAIL_LEN - 3] ^= 1;
    assert_int_equal(sh_store_file_tail_get(file, size, &data, &data_len),
                     -1);
    assert_int_equal(sh_store_file_parse(file, size, &meta, &meta_len,
                                         &image, &image_len, err,
                                         sizeof(err)), 0);
    assert_int_equal(image_len, len);
    file[size - SH_STORE_FILE_TAIL_LEN - 3] ^= 1;

    /* a byte of the footer: no tail; the documents still load */
    file[size - 12] ^= 1;
    assert_int_equal(sh_store_file_tail_get(file, size, &data, &data_len),
                     0);
    assert_int_equal(sh_store_file_parse(file, size, &meta, &meta_len,
                                         &image, &image_len, err,
                                         sizeof(err)), 0);
    assert_true(image_len > len);
    back = new_store(&mem2, 3000, 32 * 1024);
    assert_int_equal(sh_image_load(back, image, image_len, 0, &info, err,
                                   sizeof(err)), 0);
    compare_model(back, 4000);

    unlink(path);
    rmdir(dir);
    free(file);
    free(mem2);
    free(mem);
}

/* A snapshot file: settings and image through the safe writer, read back
 * whole, the store restored; a damaged header is refused. */
static void
test_store_file_round_trip(void **state)
{
    void             *mem, *mem2;
    sh_store_t       *st, *back;
    char              dir[] = "/tmp/test_store.XXXXXX", path[256], err[256];
    unsigned char    *file;
    const unsigned char *meta, *image;
    size_t            meta_len, image_len;
    uint64_t          off, len;
    sh_image_info_t   info;
    struct stat       sb;
    int               fd;
    unsigned          i;
    static const char settings[] = "distance=10\nmatch=weighted\n";

    model_reset();
    st = new_store(&mem, 3000, 32 * 1024);
    for (i = 0; i < 5000; i++) {
        random_op(st, 4000);
    }
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/zone.snap", dir);
    write_file(st, path, settings, &off, &len);

    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, SH_SNAPSHOT_MODE);
    assert_int_equal(posix_memalign((void **) &file, 64, (size_t) sb.st_size),
                     0);
    assert_int_equal(read(fd, file, (size_t) sb.st_size), sb.st_size);
    close(fd);

    assert_true(sh_store_file_is(file, (size_t) sb.st_size));
    assert_int_equal(sh_store_file_parse(file, (size_t) sb.st_size, &meta,
                                         &meta_len, &image, &image_len, err,
                                         sizeof(err)), 0);
    assert_int_equal(meta_len, sizeof(settings) - 1);
    assert_memory_equal(meta, settings, meta_len);
    /* the image where the writer put it */
    assert_int_equal(image - file, off);
    assert_int_equal(image_len, len);
    back = new_store(&mem2, 3000, 32 * 1024);
    if (sh_image_load(back, image, image_len, 0, &info, err, sizeof(err)) != 0) {
        fail_msg("load: %s", err);
    }
    compare_model(back, 4000);

    file[20] ^= 1;                  /* the settings' length */
    assert_int_equal(sh_store_file_parse(file, (size_t) sb.st_size, &meta,
                                         &meta_len, &image, &image_len, err,
                                         sizeof(err)), -1);
    assert_non_null(strstr(err, "damaged"));

    unlink(path);
    rmdir(dir);
    free(file);
    free(mem2);
    free(mem);
}

/*
 * The bulk build of a load (sorted in place, then spread from the end of
 * the table) under fingerprints that defeat it: a thousand copies of one
 * (shadows beyond RUN_MAX) and a thousand piled at the top of the space,
 * which run past the table's end and are finished by inserts.  The loaded
 * store passes its full check and holds what the model does.
 */
static void
test_pathological_fingerprints(void **state)
{
    void            *mem, *mem2;
    sh_store_t      *st, *back;
    image_t          im;
    unsigned         i, steps;
    sh_image_info_t  info;
    char             err[256];

    (void) state;
    model_reset();
    pathological = 1;
    st = new_store(&mem, 3000, 64 * 1024);
    for (i = 0; i < 8000; i++) {
        random_op(st, 3200);
    }
    check_ok(st);
    assert_int_equal(save(st, &im, 0, 3200, &steps), 0);
    back = new_store(&mem2, 3000, 64 * 1024);
    if (sh_image_load(back, im.data, im.len, 0, &info, err, sizeof(err)) != 0) {
        fail_msg("load: %s", err);
    }
    assert_int_equal(info.replayed, 0);
    assert_int_equal(info.documents, model_count());
    check_ok(back);
    compare_model(back, 3200);
    /* and every stored fingerprint is found by a lookup (the table, not
     * only the records) */
    for (i = 0; i < 3200; i++) {
        sh_lookup_opts_t o;
        sh_match_t       m;

        if (!model[i].stored) {
            continue;
        }
        sh_lookup_opts_init(&o);
        o.h = 0;
        o.mode = SH_MATCH_FIRST;
        assert_int_equal(sh_index_lookup(sh_store_index(back), model[i].fp,
                                         NULL, &o, &m, 1, NULL), 1);
        assert_true(m.hash == model[i].fp);
    }
    free(mem2);
    free(im.data);
    free(mem);
}

/*
 * A zone starts from its file with pread in chunks (sh_image_load_fd): an
 * image of several chunks (frames straddle their ends) loads in place as
 * the memory one does; a damaged frame costs its documents only (the
 * replay, from the file read whole); a file cut short is refused; a
 * smaller zone takes the newest.
 */
static void
test_load_from_file_in_chunks(void **state)
{
    void            *mem, *mem2;
    sh_store_t      *st, *back;
    char             dir[] = "/tmp/test_store.XXXXXX", path[256], err[256];
    uint64_t         off, len;
    sh_image_info_t  info;
    sh_store_stats_t s;
    unsigned         i;
    unsigned char    c;
    int              fd;

    (void) state;
    model_reset();
    st = new_store(&mem, 90000, 4u << 20);
    for (i = 0; i < 200000; i++) {
        random_op(st, KEYS);
    }
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/zone.snap", dir);
    write_file(st, path, "distance=10\n", &off, &len);
    assert_true(len > (5u << 20));      /* more than one chunk */

    fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    back = new_store(&mem2, 90000, 4u << 20);
    if (sh_image_load_fd(back, fd, off, len, 0, &info, err, sizeof(err))
        != 0)
    {
        fail_msg("load: %s", err);
    }
    assert_int_equal(info.replayed, 0);
    assert_int_equal(info.damaged, 0);
    compare_model(back, KEYS);
    free(mem2);

    /* cut short: its end is gone, nothing is used */
    back = new_store(&mem2, 90000, 4u << 20);
    assert_int_equal(sh_image_load_fd(back, fd, off, len - 100, 0, &info,
                                      err, sizeof(err)), -1);
    assert_non_null(strstr(err, "truncated"));
    free(mem2);

    /* a smaller zone: the newest documents, replayed */
    back = new_store(&mem2, 30000, 4u << 20);
    if (sh_image_load_fd(back, fd, off, len, 0, &info, err, sizeof(err))
        != 0)
    {
        fail_msg("load: %s", err);
    }
    sh_store_stats(back, &s);
    assert_int_equal(info.replayed, 1);
    assert_int_equal(info.documents, s.capacity);
    check_ok(back);
    free(mem2);

    /* one byte flipped in the middle: one frame's documents lost */
    assert_int_equal(pread(fd, &c, 1, (off_t) (off + len / 2)), 1);
    c ^= 0x10;
    assert_int_equal(pwrite(fd, &c, 1, (off_t) (off + len / 2)), 1);
    back = new_store(&mem2, 90000, 4u << 20);
    if (sh_image_load_fd(back, fd, off, len, 0, &info, err, sizeof(err))
        != 0)
    {
        fail_msg("load: %s", err);
    }
    assert_int_equal(info.damaged, 1);
    assert_int_equal(info.replayed, 1);
    assert_true(info.documents < model_count());
    assert_true(info.documents + 16 * 1024 >= model_count());
    check_ok(back);
    free(mem2);

    close(fd);
    unlink(path);
    rmdir(dir);
    free(mem);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_follows_model),
        cmocka_unit_test(test_load_from_file_in_chunks),
        cmocka_unit_test(test_pathological_fingerprints),
        cmocka_unit_test(test_every_size_formats),
        cmocka_unit_test(test_text_evicted_keeps_document),
        cmocka_unit_test(test_touch_refreshes_text),
        cmocka_unit_test(test_copy_in_slices_is_consistent),
        cmocka_unit_test(test_copy_into_smaller_zone),
        cmocka_unit_test(test_copy_gives_up_under_churn),
        cmocka_unit_test(test_repair_after_dead_writer),
        cmocka_unit_test(test_damaged_image_refused),
        cmocka_unit_test(test_store_file_round_trip),
        cmocka_unit_test(test_store_file_tail),
        cmocka_unit_test(test_damaged_frame_costs_its_documents),
    };
    unsigned i;

    for (i = 0; i < sizeof(secret); i++) {
        secret[i] = (unsigned char) (rnd() >> 7);
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
