/*
 * test_keyrec.c -- the module snapshot's document records (sh_keyrec.h):
 * each kind of record read back as written, in the bytes the format says;
 * no record across a block's end (a damaged block costs its own records
 * only) and a zeroed block skipped; what the writer refuses; malformed
 * records named by number; format 2's records; and the room estimate,
 * which the module allocates by, never short.
 */
#include "test_util.h"

#include "sh_keyrec.h"
#include "sh_snapshot.h"

static sh_keyrec_t
doc(uint32_t ref, const char *key)
{
    sh_keyrec_t r;

    memset(&r, 0, sizeof(r));
    r.type = SH_KEYREC_DOC;
    r.ref = ref;
    r.hash = 0x1111111111111111ull * (ref + 1);
    r.digest = ~r.hash;
    r.data = (const unsigned char *) key;
    r.len = (uint32_t) strlen(key);
    return r;
}

static void
read_one(sh_keyrec_reader_t *rd, sh_keyrec_t *r)
{
    char err[128];

    assert_int_equal(sh_keyrec_next(rd, r, err, sizeof(err)), 1);
}

/* A META, a DOC, a DOC with a time, a DOC with sketches: 24 bytes of head,
 * 4 more for a time, 16 more for sketches; each read back whole. */
static void
test_each_kind_round_trips(void **state)
{
    unsigned char      buf[4096];
    sh_keyrec_writer_t w;
    sh_keyrec_reader_t rd;
    sh_keyrec_t        r, meta, plain, timed, sketched;
    char               err[128];

    (void) state;
    memset(&meta, 0, sizeof(meta));
    meta.type = SH_KEYREC_META;
    meta.data = (const unsigned char *) "distance=3\n";
    meta.len = 11;
    plain = doc(1, "http://a.example/");
    timed = doc(2, "http://b.example/page");
    timed.time = 1764300000;
    sketched = doc(3, "http://c.example/list?p=2");
    sketched.time = 1764300001;
    sketched.sketches.structure = 0xabcdef0123456789ull;
    sketched.sketches.links = 0x0f0f0f0f0f0f0f0full;

    sh_keyrec_writer_init(&w, buf, sizeof(buf));
    assert_int_equal(sh_keyrec_put(&w, &meta), 0);
    assert_int_equal(sh_keyrec_written(&w), 24 + 11);
    assert_int_equal(sh_keyrec_put(&w, &plain), 0);
    assert_int_equal(sh_keyrec_put(&w, &timed), 0);
    assert_int_equal(sh_keyrec_put(&w, &sketched), 0);
    assert_int_equal(sh_keyrec_written(&w),
                     (24 + 11) + (24 + plain.len) + (28 + timed.len)
                     + (44 + sketched.len));
    assert_int_equal(sh_keyrec_size(100), 124);

    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND, buf,
                                    sh_keyrec_written(&w)), 0);
    read_one(&rd, &r);
    assert_int_equal(r.type, SH_KEYREC_META);
    assert_int_equal(r.len, 11);
    assert_memory_equal(r.data, "distance=3\n", 11);

    read_one(&rd, &r);
    assert_int_equal(r.type, SH_KEYREC_DOC);
    assert_int_equal(r.ref, 1);
    assert_true(r.hash == plain.hash && r.digest == plain.digest);
    assert_int_equal(r.time, 0);
    assert_true(r.sketches.structure == 0 && r.sketches.links == 0);
    assert_memory_equal(r.data, "http://a.example/", r.len);

    read_one(&rd, &r);
    assert_int_equal(r.type, SH_KEYREC_DOC);    /* TIMED reads as a DOC */
    assert_int_equal(r.time, 1764300000);
    assert_true(r.sketches.structure == 0);
    assert_memory_equal(r.data, "http://b.example/page", r.len);

    read_one(&rd, &r);
    assert_int_equal(r.type, SH_KEYREC_DOC);
    assert_int_equal(r.time, 1764300001);
    assert_true(r.sketches.structure == sketched.sketches.structure);
    assert_true(r.sketches.links == sketched.sketches.links);
    assert_int_equal(r.len, sketched.len);
    assert_memory_equal(r.data, "http://c.example/list?p=2", r.len);

    assert_int_equal(sh_keyrec_next(&rd, &r, err, sizeof(err)), 0);
    assert_int_equal(rd.n, 4);
}

/* Records never straddle a block: the writer pads to the next block, the
 * reader skips the padding, and a block the loader zeroed (damaged) reads
 * as padding: the records of the other blocks all come back. */
static void
test_blocks_and_padding(void **state)
{
    enum { N = 3000 };
    size_t             room = sh_keyrec_room(N, N * 120, 120);
    unsigned char     *buf = calloc(1, room);
    char               key[200], err[128];
    sh_keyrec_writer_t w;
    sh_keyrec_reader_t rd;
    sh_keyrec_t        r;
    size_t             i, in_block1 = 0, got = 0, at;

    (void) state;
    assert_non_null(buf);
    sh_keyrec_writer_init(&w, buf, room);
    for (i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "http://x.example/%zu/%.*s", i,
                 (int) (rnd() % 90), "0123456789012345678901234567890123456789"
                 "01234567890123456789012345678901234567890123456789");
        r = doc((uint32_t) i, key);
        assert_int_equal(sh_keyrec_put(&w, &r), 0);
        at = sh_keyrec_written(&w) - sh_keyrec_size(r.len);
        assert_int_equal(at / SH_SNAP_BLOCK,
                         (sh_keyrec_written(&w) - 1) / SH_SNAP_BLOCK);
        in_block1 += at / SH_SNAP_BLOCK == 1;
    }
    assert_true(sh_keyrec_written(&w) > 2 * SH_SNAP_BLOCK);
    assert_true(sh_keyrec_written(&w) <= room);
    assert_true(in_block1 > 100);

    memset(buf + SH_SNAP_BLOCK, 0, SH_SNAP_BLOCK);
    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND, buf,
                                    sh_keyrec_written(&w)), 0);
    while (sh_keyrec_next(&rd, &r, err, sizeof(err)) == 1) {
        assert_true(r.hash == 0x1111111111111111ull * (r.ref + 1));
        got++;
    }
    assert_int_equal(got, N - in_block1);
    free(buf);
}

/* The writer refuses a key over SH_KEY_MAX and a record past its buffer,
 * and writes nothing then. */
static void
test_writer_refuses(void **state)
{
    unsigned char     *big = malloc(SH_KEY_MAX + 2);
    unsigned char      buf[64];
    sh_keyrec_writer_t w;
    sh_keyrec_t        r = doc(1, "http://a.example/");

    (void) state;
    sh_keyrec_writer_init(&w, buf, sizeof(buf));
    r.data = big;
    r.len = SH_KEY_MAX + 1;
    assert_int_equal(sh_keyrec_put(&w, &r), -1);
    assert_int_equal(sh_keyrec_written(&w), 0);

    r = doc(1, "http://a.example/01234567890123456789012");  /* 24 + 40 */
    assert_int_equal(sh_keyrec_put(&w, &r), 0);
    assert_int_equal(sh_keyrec_written(&w), 64);
    r = doc(2, "h");
    assert_int_equal(sh_keyrec_put(&w, &r), -1);
    assert_int_equal(sh_keyrec_written(&w), 64);
    free(big);
}

/* Malformed records: an unknown type, a DOC without a key, a length past
 * the end; each refused with its number. */
static void
test_malformed(void **state)
{
    unsigned char      buf[256];
    sh_keyrec_writer_t w;
    sh_keyrec_reader_t rd;
    sh_keyrec_t        r = doc(7, "http://a.example/"), first;
    char               err[128];
    size_t             n;
    uint16_t           v;

    (void) state;
    sh_keyrec_writer_init(&w, buf, sizeof(buf));
    assert_int_equal(sh_keyrec_put(&w, &r), 0);
    first = r;
    assert_int_equal(sh_keyrec_put(&w, &r), 0);
    n = sh_keyrec_written(&w);

    /* the second record's type: 9 */
    v = 9;
    memcpy(buf + sh_keyrec_size(first.len), &v, 2);
    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND, buf, n), 0);
    read_one(&rd, &r);
    err[0] = '\0';
    assert_int_equal(sh_keyrec_next(&rd, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "record 1 is malformed (type 9"));

    /* a DOC of length 0 */
    v = SH_KEYREC_DOC;
    memcpy(buf + sh_keyrec_size(first.len), &v, 2);
    v = 0;
    memcpy(buf + sh_keyrec_size(first.len) + 2, &v, 2);
    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND, buf, n), 0);
    read_one(&rd, &r);
    assert_int_equal(sh_keyrec_next(&rd, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "length 0"));

    /* the end cut one byte short of the second key */
    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND, buf, n - 1), 0);
    read_one(&rd, &r);
    v = (uint16_t) first.len;
    memcpy(buf + sh_keyrec_size(first.len) + 2, &v, 2);
    assert_int_equal(sh_keyrec_next(&rd, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "record 1 is malformed"));

    /* no such kind */
    assert_int_equal(sh_keyrec_open(&rd, "ngxshk9", buf, n), -1);
}

/* Format 2: ref, length, fingerprint, key; no digest, no time. */
static void
test_format2(void **state)
{
    unsigned char      buf[64];
    sh_keyrec_reader_t rd;
    sh_keyrec_t        r;
    uint32_t           ref = 42, len = 5;
    uint64_t           hash = 0xfeedfacecafebeefull;
    char               err[128];

    (void) state;
    memcpy(buf, &ref, 4);
    memcpy(buf + 4, &len, 4);
    memcpy(buf + 8, &hash, 8);
    memcpy(buf + 16, "abcde", 5);
    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND_V2, buf, 21), 0);
    read_one(&rd, &r);
    assert_int_equal(r.type, SH_KEYREC_DOC);
    assert_int_equal(r.ref, 42);
    assert_true(r.hash == hash);
    assert_true(r.digest == 0);
    assert_int_equal(r.len, 5);
    assert_memory_equal(r.data, "abcde", 5);
    assert_int_equal(sh_keyrec_next(&rd, &r, err, sizeof(err)), 0);

    /* a length past the end, and a head cut short */
    len = 6;
    memcpy(buf + 4, &len, 4);
    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND_V2, buf, 21), 0);
    assert_int_equal(sh_keyrec_next(&rd, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "bad length 6"));
    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND_V2, buf, 10), 0);
    assert_int_equal(sh_keyrec_next(&rd, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "truncated"));
}

/* The room estimate holds the worst case it is asked for: every record as
 * long as the longest, each with time and sketches. */
static void
test_room_is_enough(void **state)
{
    size_t longest[] = { 1, 300, 5000, SH_SNAP_BLOCK / 2 - 100,
                         SH_KEY_MAX };
    size_t i, k, n;

    (void) state;
    for (i = 0; i < sizeof(longest) / sizeof(longest[0]); i++) {
        size_t             len = longest[i];
        size_t             count = 8 * SH_SNAP_BLOCK / (len + 44) + 3;
        size_t             room = sh_keyrec_room(count, count * len, len);
        unsigned char     *buf = malloc(room), *key = malloc(len);
        sh_keyrec_writer_t w;
        sh_keyrec_t        r = doc(1, "x");

        assert_non_null(buf);
        memset(key, 'k', len);
        r.data = key;
        r.len = (uint32_t) len;
        r.time = 1;
        r.sketches.links = 1;
        sh_keyrec_writer_init(&w, buf, room);
        for (k = 0, n = 0; k < count; k++) {
            n += sh_keyrec_put(&w, &r) == 0;
        }
        assert_int_equal(n, count);
        free(buf);
        free(key);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_kind_round_trips),
        cmocka_unit_test(test_blocks_and_padding),
        cmocka_unit_test(test_writer_refuses),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_format2),
        cmocka_unit_test(test_room_is_enough),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
