/*
 * test_cluster.c -- the index's layout in a Redis Cluster (sh_cluster.h):
 * Redis's hash slots (the values its documentation and CLUSTER KEYSLOT
 * give; t/cluster-layout.t asks a real server), bucket names, chunks read
 * back as written, forged, moved, truncated and appended chunks, the
 * newest record, key texts (found by a whole key hash or a table entry's
 * top half, never from a forged or truncated chunk), and the probes'
 * buckets.
 */
#include "test_util.h"

#include "sh_cluster.h"
#include "sh_popcnt.h"

#define TOP 0xffffffff00000000ull

static unsigned char mackey[SH_CLUSTER_MACKEY_LEN];

static void
layout(sh_cluster_layout_t *l, unsigned fp_bits, unsigned rec_bits)
{
    char err[128];

    memset(mackey, 0x5a, sizeof(mackey));
    assert_int_equal(sh_cluster_layout_init(l, "sh:", 3, fp_bits, rec_bits,
                                            mackey, err, sizeof(err)), 0);
}

static uint64_t
mix(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void
test_slots(void **state)
{
    (void) state;
    /* the cluster specification's check value, and CLUSTER KEYSLOT's */
    assert_int_equal(sh_cluster_crc16("123456789", 9), 0x31c3);
    assert_int_equal(sh_cluster_slot("foo", 3), 12182);
    assert_int_equal(sh_cluster_slot("somekey", 7), 11058);
    assert_int_equal(sh_cluster_slot("hello", 5), 866);
    /* hash tags, the specification's examples */
    assert_int_equal(sh_cluster_slot("{user1000}.following", 20),
                     sh_cluster_slot("user1000", 8));
    assert_int_equal(sh_cluster_slot("foo{}{bar}", 10),
                     sh_cluster_crc16("foo{}{bar}", 10) & 16383);
    assert_int_equal(sh_cluster_slot("foo{{bar}}zap", 13),
                     sh_cluster_slot("{bar", 4));
    assert_int_equal(sh_cluster_slot("foo{bar}{zap}", 13),
                     sh_cluster_slot("bar", 3));
    assert_int_equal(sh_cluster_slot("{", 1), sh_cluster_crc16("{", 1) & 16383);
    assert_int_equal(sh_cluster_slot("", 0), 0);
}

static void
test_layout(void **state)
{
    sh_cluster_layout_t l;
    char                err[160], key[SH_CLUSTER_KEY_MAX];

    (void) state;
    memset(mackey, 1, sizeof(mackey));
    assert_int_equal(sh_cluster_layout_init(&l, "a{b}", 4, 14, 14, mackey,
                                            err, sizeof(err)), -1);
    assert_non_null(strstr(err, "hash tag"));
    assert_int_equal(sh_cluster_layout_init(&l, "", 0, 14, 14, mackey, err,
                                            sizeof(err)), -1);
    assert_int_equal(sh_cluster_layout_init(&l, "a b", 3, 14, 14, mackey,
                                            err, sizeof(err)), -1);
    assert_int_equal(sh_cluster_layout_init(&l, "sh:", 3, 3, 14, mackey, err,
                                            sizeof(err)), -1);
    assert_int_equal(sh_cluster_layout_init(&l, "sh:", 3, 14, 29, mackey,
                                            err, sizeof(err)), -1);

    layout(&l, 14, 16);
    assert_int_equal(l.fp_tail, 7);         /* 50 bits */
    assert_int_equal(l.fp_entry, 11);
    assert_int_equal(l.rec_tail, 6);        /* 48 bits */
    assert_int_equal(l.rec_entry, 42);
    assert_int_equal(sh_cluster_fp_bucket(&l, 0xfffc000000000000ull), 0x3fff);
    assert_int_equal(sh_cluster_key(&l, SH_CLUSTER_FP, 0x3fff, key), 8);
    assert_string_equal(key, "sh:f3fff");
    assert_int_equal(sh_cluster_key(&l, SH_CLUSTER_REC, 0x2a, key), 8);
    assert_string_equal(key, "sh:r002a");
    assert_int_equal(sh_cluster_key(&l, SH_CLUSTER_META, 0, key), 4);
    assert_string_equal(key, "sh:m");
    {
        char     meta[SH_CLUSTER_META_MAX];
        unsigned a, b;

        assert_int_equal(sh_cluster_meta_format(&l, meta), 5);
        assert_string_equal(meta, "14 16");
        assert_int_equal(sh_cluster_meta_parse(meta, 5, &a, &b), 0);
        assert_true(a == 14 && b == 16);
        assert_int_equal(sh_cluster_meta_parse("14 16x", 6, &a, &b), -1);
        assert_int_equal(sh_cluster_meta_parse("14", 2, &a, &b), -1);
        assert_int_equal(sh_cluster_meta_parse("3 16", 4, &a, &b), -1);
        assert_int_equal(sh_cluster_meta_parse("", 0, &a, &b), -1);
    }
    layout(&l, 28, 4);
    assert_int_equal(sh_cluster_key(&l, SH_CLUSTER_FP, 0xabcdef1, key), 11);
    assert_string_equal(key, "sh:fabcdef1");
    assert_int_equal(l.fp_tail, 5);
    assert_int_equal(l.rec_tail, 8);

    assert_int_equal(sh_cluster_bits_for(1u << 22, 32), 17);
    assert_int_equal(sh_cluster_bits_for(1u << 22, 1u << 22), 4);
    assert_int_equal(sh_cluster_bits_for(1ull << 40, 1), 28);
}

/* n entries of bucket b, fingerprints at distance 1.. from x's bucket */
static size_t
fill_fp(const sh_cluster_layout_t *l, uint32_t b, sh_cluster_fpent_t *e,
        size_t n, uint64_t seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        uint64_t r = mix(&seed);

        e[i].fp = ((uint64_t) b << (64 - l->fp_bits))
                  | (r >> l->fp_bits);
        e[i].id = mix(&seed);
    }
    return n;
}

static void
test_fp_roundtrip(void **state)
{
    sh_cluster_layout_t l;
    sh_cluster_fpent_t  e[200], got[8];
    sh_cluster_read_t   rd;
    unsigned char       buf[8192];
    uint32_t            b = 0x1234;
    uint64_t            x;
    size_t              len, i, found;

    (void) state;
    layout(&l, 14, 14);
    fill_fp(&l, b, e, 200, 7);
    /* three near x: distances 3, 1, 2 (the rest random: far) */
    x = e[10].fp;
    e[11].fp = x ^ 7;
    e[12].fp = x ^ 1;
    e[13].fp = x ^ 0x300;
    len = sh_cluster_encode_fp(&l, b, e, 200, buf);
    assert_int_equal(len, sh_cluster_chunk_size(&l, SH_CLUSTER_FP, 200));
    assert_int_equal(len, 3 + 200 * 11 + 16);

    found = sh_cluster_near(&l, b, buf, len, x, 3, got, 8, &rd);
    assert_int_equal(found, 4);
    assert_int_equal(rd.chunks, 1);
    assert_int_equal(rd.entries, 200);
    assert_int_equal(rd.forged, 0);
    assert_int_equal(rd.malformed, 0);
    assert_true(got[0].fp == x && got[0].id == (e[10].id & TOP));
    assert_true(got[1].fp == (x ^ 1) && got[1].id == (e[12].id & TOP));
    assert_true(got[2].fp == (x ^ 0x300));
    assert_true(got[3].fp == (x ^ 7));
    /* a bound on what is returned, not on what is counted */
    assert_int_equal(sh_cluster_near(&l, b, buf, len, x, 3, got, 2, NULL), 4);
    assert_true(got[1].fp == (x ^ 1));
    /* every entry comes back whole */
    for (i = 0; i < 200; i++) {
        assert_true(sh_cluster_near(&l, b, buf, len, e[i].fp, 0, got, 1,
                                    NULL) >= 1);
        assert_true(got[0].fp == e[i].fp);
    }
    /* an entry of another bucket is refused, and so are 0 entries */
    e[5].fp ^= 1ull << 63;
    assert_int_equal(sh_cluster_encode_fp(&l, b, e, 200, buf), 0);
    assert_int_equal(sh_cluster_encode_fp(&l, b, e, 0, buf), 0);
}

static void
test_forged(void **state)
{
    sh_cluster_layout_t l, other;
    sh_cluster_fpent_t  e[20], got[4];
    sh_cluster_read_t   rd;
    unsigned char       buf[2048], copy[2048];
    uint32_t            b = 0x0042;
    size_t              len;

    (void) state;
    layout(&l, 14, 14);
    fill_fp(&l, b, e, 20, 11);
    len = sh_cluster_encode_fp(&l, b, e, 20, buf);

    /* an entry changed by someone without the key: not read */
    memcpy(copy, buf, len);
    copy[3 + 5 * 11 + 9] ^= 0x01;           /* entry 5's id */
    assert_int_equal(sh_cluster_near(&l, b, copy, len, e[5].fp, 0, got, 4,
                                     &rd), 0);
    assert_int_equal(rd.forged, 1);

    /* the same chunk under another bucket's name: the MAC names it */
    memcpy(copy, buf, len);
    assert_int_equal(sh_cluster_near(&l, b ^ 1, copy, len,
                                     e[5].fp ^ (1ull << 50), 0, got, 4,
                                     &rd), 0);
    assert_int_equal(rd.forged, 1);

    /* another tier's secret or prefix */
    memset(mackey, 0x33, sizeof(mackey));
    {
        char err[64];

        assert_int_equal(sh_cluster_layout_init(&other, "sh:", 3, 14, 14,
                                                mackey, err, sizeof(err)), 0);
        assert_int_equal(sh_cluster_near(&other, b, buf, len, e[5].fp, 0,
                                         got, 4, &rd), 0);
        assert_int_equal(rd.forged, 1);
        memset(mackey, 0x5a, sizeof(mackey));
        assert_int_equal(sh_cluster_layout_init(&other, "sx:", 3, 14, 14,
                                                mackey, err, sizeof(err)), 0);
        assert_int_equal(sh_cluster_near(&other, b, buf, len, e[5].fp, 0,
                                         got, 4, &rd), 0);
        assert_int_equal(rd.forged, 1);
    }

    /* a far entry in a forged chunk costs no MAC and is not reported */
    memcpy(copy, buf, len);
    copy[3 + 5 * 11 + 9] ^= 0x01;
    assert_int_equal(sh_cluster_near(&l, b, copy, len, e[6].fp ^ 0xff, 0,
                                     got, 4, &rd), 0);
    assert_int_equal(rd.forged, 0);
}

static void
test_appended(void **state)
{
    sh_cluster_layout_t l;
    sh_cluster_fpent_t  e[30], got[4];
    sh_cluster_read_t   rd;
    unsigned char       buf[4096];
    uint32_t            b = 0x0777;
    size_t              len = 0, i, one;

    (void) state;
    layout(&l, 14, 14);
    fill_fp(&l, b, e, 30, 13);
    /* a bulk chunk of 20, then ten of one (APPEND) */
    len = sh_cluster_encode_fp(&l, b, e, 20, buf);
    for (i = 20; i < 30; i++) {
        one = sh_cluster_encode_fp(&l, b, e + i, 1, buf + len);
        assert_int_equal(one, 3 + 11 + 16);
        len += one;
    }
    for (i = 0; i < 30; i++) {
        assert_int_equal(sh_cluster_near(&l, b, buf, len, e[i].fp, 0, got, 4,
                                         &rd), 1);
        assert_true(got[0].id == (e[i].id & TOP));
        assert_int_equal(rd.chunks, 11);
        assert_int_equal(rd.entries, 30);
    }
    /* cut inside the last chunk: the others are read, the cut is said */
    assert_int_equal(sh_cluster_near(&l, b, buf, len - 1, e[0].fp, 0, got, 4,
                                     &rd), 1);
    assert_int_equal(rd.malformed, 1);
    assert_int_equal(sh_cluster_near(&l, b, buf, len - 1, e[29].fp, 0, got,
                                     4, &rd), 0);
    /* a record bucket's value read as a table's */
    buf[0] = SH_CLUSTER_REC;
    assert_int_equal(sh_cluster_near(&l, b, buf, len, e[0].fp, 0, got, 4,
                                     &rd), 0);
    assert_int_equal(rd.malformed, 1);
    assert_int_equal(sh_cluster_near(&l, b, buf, 0, e[0].fp, 0, got, 4, &rd),
                     0);
    assert_int_equal(rd.malformed, 0);
}

static void
assert_rec(const sh_cluster_rec_t *a, const sh_cluster_rec_t *b)
{
    assert_true(a->kh == b->kh && a->fp == b->fp && a->digest == b->digest);
    assert_int_equal(a->second, b->second);
    assert_true(a->sk.structure == b->sk.structure
                && a->sk.links == b->sk.links);
}

static void
test_records(void **state)
{
    sh_cluster_layout_t l;
    sh_cluster_rec_t    r[50], got;
    sh_cluster_read_t   rd;
    unsigned char       buf[8192];
    uint64_t            seed = 17;
    uint32_t            b = 0x9;
    size_t              len, one, i;

    (void) state;
    layout(&l, 14, 10);
    for (i = 0; i < 50; i++) {
        r[i].kh = ((uint64_t) b << 54) | (mix(&seed) >> 10);
        r[i].fp = mix(&seed);
        r[i].digest = mix(&seed);
        r[i].second = (uint32_t) mix(&seed);
        r[i].sk.structure = mix(&seed);
        r[i].sk.links = mix(&seed);
    }
    len = sh_cluster_encode_rec(&l, b, r, 50, buf);
    assert_int_equal(len, 3 + 50 * (7 + 36) + 16);
    for (i = 0; i < 50; i++) {
        assert_int_equal(sh_cluster_find_rec(&l, b, buf, len, r[i].kh, &got,
                                             &rd), 1);
        assert_rec(&got, &r[i]);
    }
    assert_int_equal(sh_cluster_find_rec(&l, b, buf, len, r[0].kh ^ 1, &got,
                                         &rd), 0);
    /* another bucket's key hash is never found here */
    assert_int_equal(sh_cluster_find_rec(&l, b + 1, buf, len, r[0].kh, &got,
                                         &rd), 0);

    /* a later version appended wins; an older one appended does not */
    r[7].second += 10;
    r[7].digest ^= 1;
    one = sh_cluster_encode_rec(&l, b, &r[7], 1, buf + len);
    len += one;
    r[8].second -= 10;
    one = sh_cluster_encode_rec(&l, b, &r[8], 1, buf + len);
    len += one;
    assert_int_equal(sh_cluster_find_rec(&l, b, buf, len, r[7].kh, &got,
                                         &rd), 1);
    assert_rec(&got, &r[7]);
    assert_int_equal(sh_cluster_find_rec(&l, b, buf, len, r[8].kh, &got,
                                         &rd), 1);
    assert_int_equal(got.second, r[8].second + 10);

    /* a forged later version is not taken */
    r[9].second += 100;
    one = sh_cluster_encode_rec(&l, b, &r[9], 1, buf + len);
    buf[len + 3 + 7 + 8] ^= 0x80;           /* its digest */
    len += one;
    assert_int_equal(sh_cluster_find_rec(&l, b, buf, len, r[9].kh, &got,
                                         &rd), 1);
    assert_int_equal(got.second, r[9].second - 100);
    assert_int_equal(rd.forged, 1);
}

/* A table entry finds its document's record: by the top half of its key
 * hash and its fingerprint; not once the document has changed. */
static void
test_entry_record(void **state)
{
    sh_cluster_layout_t l;
    sh_cluster_rec_t    r[3], got;
    sh_cluster_fpent_t  e;
    sh_cluster_read_t   rd;
    unsigned char       buf[1024];
    uint32_t            b = 0x5;
    size_t              len;

    (void) state;
    layout(&l, 14, 10);
    memset(r, 0, sizeof(r));
    /* two documents whose key hashes share their top 32 bits */
    r[0].kh = ((uint64_t) b << 54) | 0x0034567800000001ull;
    r[1].kh = ((uint64_t) b << 54) | 0x0034567800000002ull;
    r[2].kh = ((uint64_t) b << 54) | 0x0000000000000003ull;
    r[0].fp = 0x1111;
    r[1].fp = 0x2222;
    r[2].fp = 0x3333;
    r[0].second = 10;
    r[1].second = 20;
    r[2].second = 30;
    len = sh_cluster_encode_rec(&l, b, r, 3, buf);
    assert_true(len > 0);

    e.fp = 0x1111;
    e.id = r[0].kh & TOP;
    assert_int_equal(sh_cluster_find_entry_rec(&l, b, buf, len, &e, &got,
                                               &rd), 1);
    assert_true(got.kh == r[0].kh);
    e.fp = 0x2222;
    assert_int_equal(sh_cluster_find_entry_rec(&l, b, buf, len, &e, &got,
                                               &rd), 1);
    assert_true(got.kh == r[1].kh);
    e.fp = 0x4444;          /* no such document */
    assert_int_equal(sh_cluster_find_entry_rec(&l, b, buf, len, &e, &got,
                                               &rd), 0);
    /* document 0 changed: its old entry names it no more */
    r[0].fp = 0x5555;
    r[0].second = 40;
    len += sh_cluster_encode_rec(&l, b, &r[0], 1, buf + len);
    e.fp = 0x1111;
    assert_int_equal(sh_cluster_find_entry_rec(&l, b, buf, len, &e, &got,
                                               &rd), 0);
    e.fp = 0x5555;
    assert_int_equal(sh_cluster_find_entry_rec(&l, b, buf, len, &e, &got,
                                               &rd), 1);
    assert_true(got.kh == r[0].kh && got.second == 40);
    e.fp = 0x3333;
    e.id = r[2].kh & TOP;
    assert_int_equal(sh_cluster_find_entry_rec(&l, b, buf, len, &e, &got,
                                               &rd), 1);
    /* another bucket's entry */
    e.id ^= 1ull << 63;
    assert_int_equal(sh_cluster_find_entry_rec(&l, b, buf, len, &e, &got,
                                               &rd), 0);
}

static void
test_probes(void **state)
{
    sh_cluster_layout_t l;
    uint32_t            out[600];
    uint64_t            x = 0x8badf00ddeadbeefull;
    size_t              n, i, j;
    unsigned            k, singles = 0;

    (void) state;
    layout(&l, 16, 14);
    assert_int_equal(sh_cluster_probes(&l, x, NULL, 3, 0, NULL, out, 600), 1);
    assert_int_equal(out[0], sh_cluster_fp_bucket(&l, x));
    assert_int_equal(sh_cluster_probes(&l, x, NULL, 3, 100, NULL, out, 0), 0);

    /* the calibrated k, as the index's: a few probes */
    k = sh_cluster_probes_for(&l, 3, 0.95f, NULL);
    assert_true(k >= 1 && k <= 4 * 16);
    assert_int_equal(sh_cluster_probes_for(&l, 0, 0.95f, NULL), 0);
    k = 100;
    n = sh_cluster_probes(&l, x, NULL, 3, k, NULL, out, 600);
    assert_int_equal(n, k + 1);
    for (i = 0; i < n; i++) {
        unsigned d = sh_distance(out[i], out[0]);

        assert_true(d <= 3);
        singles += d == 1;
        for (j = 0; j < i; j++) {
            assert_true(out[i] != out[j]);
        }
    }
    /* the 16 single flips are the likeliest subsets: all probed */
    assert_int_equal(singles, 16);
    /* bounded by max */
    assert_int_equal(sh_cluster_probes(&l, x, NULL, 3, k, NULL, out, 5), 5);
}

/* The page's weights rank the bits: its two barely decided bits are the
 * likeliest to differ in a copy, so the bucket with both flipped comes
 * right after their singles, as the local index probes them. */
static void
test_probes_weights(void **state)
{
    sh_cluster_layout_t l;
    uint32_t            out[600];
    float               w[64];
    uint64_t            x = 0x8badf00ddeadbeefull;
    uint64_t            a = 1ull << 58, b = 1ull << 54;
    size_t              n, i;
    unsigned            k;
    int                 at = -1;

    (void) state;
    layout(&l, 14, 14);
    for (i = 0; i < 64; i++) {
        w[i] = (x >> i) & 1 ? 0.4f : -0.4f;
    }
    w[58] = 0.0005f;
    w[54] = -0.0005f;
    k = sh_cluster_probes_for(&l, 3, 0.95f, NULL);
    n = sh_cluster_probes(&l, x, w, 3, k, NULL, out, 600);
    assert_int_equal(n, k + 1);
    assert_int_equal(out[0], sh_cluster_fp_bucket(&l, x));
    for (i = 0; i < n; i++) {
        if (out[i] == sh_cluster_fp_bucket(&l, x ^ a ^ b)) {
            at = (int) i;
        }
    }
    assert_true(at >= 1 && at <= 3);
    assert_true(out[1] == sh_cluster_fp_bucket(&l, x ^ a)
                || out[1] == sh_cluster_fp_bucket(&l, x ^ b));
}

/* Key texts: found by the whole key hash and by a table entry's top 32
 * bits, from chunks written whole and appended one by one; a forged,
 * moved or truncated chunk never named. */
static void
test_texts(void **state)
{
    sh_cluster_layout_t l, other;
    sh_cluster_text_t   t[3], got;
    sh_cluster_read_t   rd;
    unsigned char       buf[4096], bad[SH_CLUSTER_MACKEY_LEN];
    char                err[128], big[300];
    uint32_t            b;
    size_t              len, one;
    uint64_t            base = 0x0a1b2c3d4e5f6071ull;
    const char         *urls[3] = { "http://a.example/x", "http://b.example/",
                                    "http://c.example/a/b/c?d=e" };
    int                 i;

    (void) state;
    layout(&l, 14, 14);
    assert_int_equal(l.key_bits, 16);
    assert_int_equal(l.key_tail, 6);
    b = sh_cluster_text_bucket(&l, base);
    for (i = 0; i < 3; i++) {
        t[i].kh = base + (uint64_t) i * 0x100000000ull;   /* other tops */
        t[i].text = urls[i];
        t[i].len = strlen(urls[i]);
    }
    /* two of one top half: the one asked for by its whole hash */
    t[2].kh = t[1].kh + 1;
    len = sh_cluster_encode_text(&l, b, t, 3, buf);
    assert_int_equal(len, sh_cluster_text_size(&l, t, 3));
    assert_int_equal(len, 3 + 3 * 8 + strlen(urls[0]) + strlen(urls[1])
                          + strlen(urls[2]) + 16);
    for (i = 0; i < 3; i++) {
        assert_int_equal(sh_cluster_find_text(&l, b, buf, len, t[i].kh,
                                              ~0ull, &got, &rd), 1);
        assert_true(got.kh == t[i].kh && got.len == t[i].len
                    && memcmp(got.text, urls[i], got.len) == 0);
        assert_int_equal(rd.chunks, 1);
        assert_int_equal(rd.entries, 3);
    }
    /* a table entry's id: the top half only */
    assert_int_equal(sh_cluster_find_text(&l, b, buf, len, t[0].kh & TOP, TOP,
                                          &got, NULL), 1);
    assert_true(got.kh == t[0].kh);
    assert_int_equal(sh_cluster_find_text(&l, b, buf, len, t[0].kh + 7, ~0ull,
                                          &got, NULL), 0);
    /* appended one at a time: each chunk its own */
    one = sh_cluster_encode_text(&l, b, &t[0], 1, buf + len);
    assert_true(one > 0);
    assert_int_equal(sh_cluster_find_text(&l, b, buf + len, one, t[0].kh,
                                          ~0ull, &got, &rd), 1);
    assert_int_equal(sh_cluster_find_text(&l, b, buf, len + one, t[2].kh,
                                          ~0ull, &got, &rd), 1);
    assert_int_equal(rd.chunks, 1);     /* found in the first */
    /* another secret: never named, counted */
    memset(bad, 0x33, sizeof(bad));
    assert_int_equal(sh_cluster_layout_init(&other, "sh:", 3, 14, 14, bad,
                                            err, sizeof(err)), 0);
    one = sh_cluster_encode_text(&other, b, &t[0], 1, buf);
    assert_int_equal(sh_cluster_find_text(&l, b, buf, one, t[0].kh, ~0ull,
                                          &got, &rd), 0);
    assert_int_equal(rd.forged, 1);
    /* a forged chunk before a real one: the real one is still read */
    len = sh_cluster_encode_text(&l, b, &t[0], 1, buf + one);
    assert_int_equal(sh_cluster_find_text(&l, b, buf, one + len, t[0].kh,
                                          ~0ull, &got, &rd), 1);
    assert_int_equal(rd.forged, 1);
    /* moved to another bucket: forged there (its key hash is rebuilt from
     * that bucket's bits, and the MAC names the bucket) */
    len = sh_cluster_encode_text(&l, b, &t[0], 1, buf);
    assert_int_equal(sh_cluster_find_text(&l, b ^ 1, buf, len,
                                          t[0].kh ^ (1ull << 48), ~0ull,
                                          &got, &rd), 0);
    assert_int_equal(rd.forged, 1);
    /* truncated anywhere: nothing, never past the value */
    for (one = 0; one < len; one++) {
        assert_int_equal(sh_cluster_find_text(&l, b, buf, one, t[0].kh,
                                              ~0ull, &got, &rd), 0);
    }
    /* a text of the wrong bucket, empty, or too long is refused */
    t[1].kh ^= 1ull << 63;
    assert_int_equal(sh_cluster_encode_text(&l, b, t, 3, buf), 0);
    t[1].kh ^= 1ull << 63;
    t[1].len = 0;
    assert_int_equal(sh_cluster_encode_text(&l, b, t, 3, buf), 0);
    memset(big, 'x', sizeof(big));
    t[1].text = big;
    t[1].len = sizeof(big);
    assert_true(sh_cluster_encode_text(&l, b, t, 3, buf) > sizeof(big));
    /* the key: its own family, its own bits */
    assert_int_equal(sh_cluster_key(&l, SH_CLUSTER_TEXT, 0xbeef, err), 8);
    assert_string_equal(err, "sh:kbeef");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_fp_roundtrip),
        cmocka_unit_test(test_forged),
        cmocka_unit_test(test_appended),
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_entry_record),
        cmocka_unit_test(test_probes),
        cmocka_unit_test(test_probes_weights),
        cmocka_unit_test(test_texts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
