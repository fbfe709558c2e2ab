/*
 * test_snapshot.c -- save/load round trip; every kind of unusable file is
 * refused with a message (truncated anywhere, a damaged header, foreign
 * byte order, other version, other hash key, trailing bytes, not a regular
 * file); damage to the region or to a block of the user section costs that
 * part only, and the module's records lose exactly the damaged block's;
 * format 1 files still load.
 */
#define TEST_RNG_SEED 0xa4093822299f31d0ull
#include "test_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "sh_keyrec.h"
#include "sh_snapshot.h"

static char path[256];

static int
setup(void **state)
{
    snprintf(path, sizeof(path), "/tmp/sh_test_snapshot.%d", (int) getpid());
    return 0;
}

static int
teardown(void **state)
{
    unlink(path);
    return 0;
}

static sh_index_t *
make_index(void **mem, uint32_t cap, unsigned n, uint64_t *h)
{
    size_t      size = sh_index_region_size(cap);
    char        err[256];
    sh_index_t *ix;
    unsigned    i;

    assert_int_equal(posix_memalign(mem, 64, size), 0);
    ix = sh_index_init(*mem, size, 0, 0x5eed, err, sizeof(err));
    assert_non_null(ix);
    for (i = 0; i < n; i++) {
        h[i] = rnd();
        sh_index_insert(ix, h[i], NULL);
    }
    return ix;
}

static char *
read_file(size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long  n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t) n);
    assert_int_equal(fread(buf, 1, (size_t) n, f), (size_t) n);
    fclose(f);
    *len = (size_t) n;
    return buf;
}

static void
write_file(const char *buf, size_t len)
{
    FILE *f = fopen(path, "wb");

    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
}

/* Load must fail with a message containing `want`. */
static void
expect_refused(const char *want)
{
    void       *region = (void *) 1;
    size_t      rs, ul;
    const void *user;
    char        err[512] = "";
    sh_snapshot_info_t info;

    assert_int_equal(sh_snapshot_load(path, 0, &region, &rs, &user, &ul,
                                      &info, err, sizeof(err)), -1);
    assert_null(region);
    assert_true(strlen(err) > 0);
    if (want != NULL && strstr(err, want) == NULL) {
        fail_msg("error \"%s\" does not mention \"%s\"", err, want);
    }
}

/* Load, expecting success; the caller frees *region. */
static void
load_ok(uint64_t seed, void **region, size_t *rs, const void **u,
        size_t *ul, sh_snapshot_info_t *info)
{
    char err[512] = "";

    if (sh_snapshot_load(path, seed, region, rs, u, ul, info, err,
                         sizeof(err)) != 0)
    {
        fail_msg("load refused: %s", err);
    }
}

static void
test_round_trip(void **state)
{
    void       *mem, *region;
    uint64_t    h[3000];
    sh_index_t *ix = make_index(&mem, 4000, 3000, h), *ix2;
    char       *user;
    size_t      ulen = 3 * SH_SNAP_BLOCK + 777, rs, ul, i;
    const void *u;
    char        err[256];
    sh_lookup_opts_t o;
    sh_match_t  a, b;
    sh_index_stats_t s1, s2;
    sh_snapshot_info_t info;

    user = malloc(ulen);
    for (i = 0; i < ulen; i++) {
        user[i] = (char) rnd();
    }
    for (i = 0; i < 3000; i += 7) {
        sh_index_remove(ix, (uint32_t) i);
    }
    sh_index_set_version(ix, 0x01c0ffee);
    assert_int_equal(sh_snapshot_save(path, ix, "testkind", user, ulen, err,
                                      sizeof(err)), 0);
    {
        char tmp[300];

        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        assert_int_equal(access(tmp, F_OK), -1);    /* renamed away */
    }
    load_ok(0x5eed, &region, &rs, &u, &ul, &info);
    assert_int_equal(info.version, 3);
    assert_int_equal(info.extraction, 0x01c0ffee);  /* the index's, kept */
    assert_string_equal(info.kind, "testkind");
    assert_int_equal(info.region_ok, 1);
    assert_int_equal(info.blocks, 4);
    assert_int_equal(info.damaged, 0);
    ix2 = sh_index_attach(region, rs, err, sizeof(err));
    assert_non_null(ix2);
    assert_int_equal(sh_index_version(ix2), 0x01c0ffee);
    assert_int_equal(ul, ulen);
    assert_memory_equal(u, user, ulen);
    sh_index_stats(ix, &s1);
    sh_index_stats(ix2, &s2);
    assert_int_equal(s1.entries, s2.entries);
    assert_int_equal(s1.t, s2.t);

    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_CLOSEST;
    o.probes = SH_PROBES_MAX;       /* exhaustive: every 1-bit flip found */
    for (i = 0; i < 3000; i++) {
        uint64_t q = h[i] ^ (1ull << (rnd() % 64));
        size_t   na = sh_index_lookup(ix, q, NULL, &o, &a, 1, NULL);
        size_t   nb = sh_index_lookup(ix2, q, NULL, &o, &b, 1, NULL);

        assert_int_equal(na, nb);
        assert_int_equal(na, i % 7 != 0);
        if (na) {
            assert_int_equal(a.ref, b.ref);
        }
    }
    /* The loaded index is writable and keeps working. */
    sh_index_insert(ix2, 12345, NULL);
    assert_int_equal(sh_index_check(ix2, err, sizeof(err)), 0);
    free(region);

    /* Empty user section, and the wrong key. */
    assert_int_equal(sh_snapshot_save(path, ix, NULL, NULL, 0, err,
                                      sizeof(err)), 0);
    load_ok(0, &region, &rs, &u, &ul, &info);
    assert_int_equal(ul, 0);
    assert_int_equal(info.blocks, 0);
    assert_string_equal(info.kind, "");
    free(region);
    {
        void *r2;

        assert_int_equal(sh_snapshot_load(path, 0xbad, &r2, &rs, &u, &ul,
                                          &info, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "hash key"));
    }
    free(user);
    free(mem);
}

static void
test_truncated_and_header(void **state)
{
    void       *mem;
    uint64_t    h[200];
    sh_index_t *ix = make_index(&mem, 256, 200, h);
    char       *buf;
    size_t      len, cut, pos;
    char        err[256];

    assert_int_equal(sh_snapshot_save(path, ix, "k", "abc", 3, err,
                                      sizeof(err)), 0);
    buf = read_file(&len);

    /* Truncated at many points, including inside the header. */
    for (cut = 0; cut < len; cut += cut < 200 ? 1 : 997) {
        write_file(buf, cut);
        expect_refused(NULL);
    }
    write_file(buf, len - 1);
    expect_refused("truncated");

    /* Any byte of the header flipped. */
    for (pos = 0; pos < 128; pos++) {
        buf[pos] ^= 0x40;
        write_file(buf, len);
        expect_refused(NULL);
        buf[pos] ^= 0x40;
    }

    /* Trailing garbage. */
    {
        char *longer = malloc(len + 5);

        memcpy(longer, buf, len);
        memset(longer + len, 'x', 5);
        write_file(longer, len + 5);
        expect_refused("trailing");
        free(longer);
    }

    /* Not a snapshot at all; missing file. */
    write_file("hello world, this is not an index", 34);
    expect_refused("not a");
    unlink(path);
    expect_refused("No such file");

    free(buf);
    free(mem);
}

/*
 * A byte flipped in the region or in a block costs that part only: the
 * region is reported and zeroed, a block is reported and zeroed, the rest
 * is intact.
 */
static void
test_contained_damage(void **state)
{
    void       *mem, *region;
    uint64_t    h[300];
    sh_index_t *ix = make_index(&mem, 400, 300, h);
    char       *buf, *user, err[256];
    size_t      len, ulen = 2 * SH_SNAP_BLOCK + 100, rs, ul, i, rsize;
    size_t      block1;
    const void *u;
    sh_snapshot_info_t info;

    user = malloc(ulen);
    memset(user, 'u', ulen);
    rsize = sh_index_region_size(400);
    assert_int_equal(sh_snapshot_save(path, ix, "k", user, ulen, err,
                                      sizeof(err)), 0);
    buf = read_file(&len);

    /* the region: every 97th byte */
    for (i = 128; i < 128 + rsize; i += 97) {
        buf[i] ^= 0x10;
        write_file(buf, len);
        load_ok(0, &region, &rs, &u, &ul, &info);
        assert_int_equal(info.region_ok, 0);
        assert_non_null(strstr(info.region_err, "checksum"));
        assert_int_equal(info.damaged, 0);
        assert_memory_equal(u, user, ulen);
        free(region);
        buf[i] ^= 0x10;
    }

    /* the second block (and its checksum) */
    block1 = 128 + rsize + 8 + SH_SNAP_BLOCK + 8;
    for (i = block1; i < block1 + SH_SNAP_BLOCK + 8; i += 4099) {
        buf[i] ^= 0x01;
        write_file(buf, len);
        load_ok(0, &region, &rs, &u, &ul, &info);
        assert_int_equal(info.region_ok, 1);
        assert_int_equal(info.blocks, 3);
        assert_int_equal(info.damaged, 1);
        assert_memory_equal(u, user, SH_SNAP_BLOCK);
        assert_memory_equal((const char *) u + 2 * SH_SNAP_BLOCK,
                            user + 2 * SH_SNAP_BLOCK, 100);
        assert_int_equal(((const char *) u)[SH_SNAP_BLOCK + 5], 0);
        free(region);
        buf[i] ^= 0x01;
    }
    free(user);
    free(buf);
    free(mem);
}

/* Rewrite the header checksum after editing a header field. */
static void
fix_header_sum(char *buf)
{
    uint64_t sum = XXH3_64bits(buf, 120);

    memcpy(buf + 120, &sum, 8);
}

static void
test_foreign_and_versions(void **state)
{
    void       *mem, *region;
    uint64_t    h[100], v;
    sh_index_t *ix = make_index(&mem, 128, 100, h);
    char       *buf, err[256];
    size_t      len, rs, ul, rsize = sh_index_region_size(128);
    uint32_t    x;
    const void *u;
    sh_snapshot_info_t info;

    assert_int_equal(sh_snapshot_save(path, ix, NULL, NULL, 0, err,
                                      sizeof(err)), 0);
    buf = read_file(&len);

    /* Foreign byte order: the marker reads byte-swapped. */
    memcpy(&x, buf + 8, 4);
    x = __builtin_bswap32(x);
    memcpy(buf + 8, &x, 4);
    write_file(buf, len);
    expect_refused("byte order");
    x = __builtin_bswap32(x);
    memcpy(buf + 8, &x, 4);

    /* A future format version. */
    memcpy(&x, buf + 12, 4);
    x++;
    memcpy(buf + 12, &x, 4);
    fix_header_sum(buf);
    write_file(buf, len);
    expect_refused("version");
    x--;
    memcpy(buf + 12, &x, 4);
    fix_header_sum(buf);

    /* Sizes that disagree, with a valid header checksum: no huge
     * allocation, no crash. */
    memcpy(&v, buf + 32, 8);
    v += 1ull << 50;
    memcpy(buf + 32, &v, 8);
    fix_header_sum(buf);
    write_file(buf, len);
    expect_refused("inconsistent");
    v -= 1ull << 50;
    memcpy(buf + 32, &v, 8);
    fix_header_sum(buf);

    /* Every checksum right, but the index inside is broken: two slots
     * swapped out of order.  The structural check reports the region. */
    {
        size_t   i, a = SIZE_MAX, b = SIZE_MAX;
        uint64_t sum;

        for (i = 128; i + 8 <= 128 + rsize; i += 8) {
            uint64_t s1;

            memcpy(&s1, buf + i, 8);
            if (s1 == h[0] || s1 == h[1]) {
                if (a == SIZE_MAX) {
                    a = i;
                } else if (b == SIZE_MAX) {
                    b = i;
                }
            }
        }
        assert_true(a != SIZE_MAX && b != SIZE_MAX);
        {
            char tmp[8];

            memcpy(tmp, buf + a, 8);
            memcpy(buf + a, buf + b, 8);
            memcpy(buf + b, tmp, 8);
        }
        sum = XXH3_64bits(buf + 128, rsize);
        memcpy(buf + 128 + rsize, &sum, 8);
        write_file(buf, len);
        load_ok(0, &region, &rs, &u, &ul, &info);
        assert_int_equal(info.region_ok, 0);
        assert_non_null(strstr(info.region_err, "inconsistent index"));
        free(region);
    }
    free(buf);
    free(mem);
}

/*
 * A FIFO, a directory, a symbolic link: refused by the loader at once,
 * never waited on nor followed; the path check calls them "not a snapshot,
 * to be moved aside" (1), not an unsafe place (-1), since the workers'
 * user can plant them and must not stop nginx from starting.
 */
static void
test_not_regular(void **state)
{
    char err[256] = "";

    assert_int_equal(mkfifo(path, 0600), 0);
    expect_refused("not a regular file");
    assert_int_equal(sh_snapshot_check_path(path, err, sizeof(err)), 1);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
    assert_int_equal(sh_snapshot_check_path(path, err, sizeof(err)), 0);
    assert_int_equal(mkdir(path, 0700), 0);
    expect_refused(NULL);
    assert_int_equal(sh_snapshot_check_path(path, err, sizeof(err)), 1);
    rmdir(path);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    expect_refused("a symbolic link");
    assert_int_equal(sh_snapshot_check_path(path, err, sizeof(err)), 1);
    assert_non_null(strstr(err, "a symbolic link"));
    unlink(path);
}

/*
 * The module's records through a damaged file: exactly the records of the
 * damaged block are lost, every other one reads back as written, in order.
 */
static void
test_records_lose_one_block(void **state)
{
    enum { N = 5000 };
    void       *mem, *region, *sec;
    uint64_t    h[4];
    sh_index_t *ix = make_index(&mem, 16, 4, h);
    char        key[300], err[256], *buf;
    size_t      rs, ul, len, room, i, nblock[8] = { 0 }, got, lost_block;
    uint64_t    hashes[N];
    const void *u;
    sh_keyrec_t rec;
    sh_keyrec_writer_t w;
    sh_keyrec_reader_t rd;
    sh_snapshot_info_t info;

    room = sh_keyrec_room(N + 1, N * 200 + 32, 260);
    sec = calloc(1, room);
    sh_keyrec_writer_init(&w, sec, room);

    memset(&rec, 0, sizeof(rec));
    rec.type = SH_KEYREC_META;
    rec.data = (const unsigned char *) "distance=3\n";
    rec.len = 11;
    assert_int_equal(sh_keyrec_put(&w, &rec), 0);

    for (i = 0; i < N; i++) {
        size_t at = sh_keyrec_written(&w);

        rec.type = SH_KEYREC_DOC;
        rec.ref = (uint32_t) i;
        rec.hash = hashes[i] = rnd();
        rec.digest = ~rec.hash;
        rec.len = (uint32_t) snprintf(key, sizeof(key), "http://x/%zu/%.*s",
                                      i, (int) (rnd() % 200), 
                                      "abcdefghijklmnopqrstuvwxyz0123456789"
                                      "abcdefghijklmnopqrstuvwxyz0123456789"
                                      "abcdefghijklmnopqrstuvwxyz0123456789"
                                      "abcdefghijklmnopqrstuvwxyz0123456789"
                                      "abcdefghijklmnopqrstuvwxyz0123456789"
                                      "abcdefghijklmnopqrstuvwxyz0123456789");
        rec.data = (const unsigned char *) key;
        assert_int_equal(sh_keyrec_put(&w, &rec), 0);
        /* where the record landed: never across a block end */
        at = sh_keyrec_written(&w) - sh_keyrec_size(rec.len);
        assert_int_equal(at / SH_SNAP_BLOCK,
                         (sh_keyrec_written(&w) - 1) / SH_SNAP_BLOCK);
        nblock[at / SH_SNAP_BLOCK]++;
    }
    assert_true(sh_keyrec_written(&w) > 3 * SH_SNAP_BLOCK);
    assert_int_equal(sh_snapshot_save(path, ix, SH_KEYREC_KIND, sec,
                                      sh_keyrec_written(&w), err,
                                      sizeof(err)), 0);

    /* intact: everything back */
    load_ok(0, &region, &rs, &u, &ul, &info);
    assert_int_equal(sh_keyrec_open(&rd, info.kind, u, ul), 0);
    assert_int_equal(sh_keyrec_next(&rd, &rec, err, sizeof(err)), 1);
    assert_int_equal(rec.type, SH_KEYREC_META);
    for (got = 0; sh_keyrec_next(&rd, &rec, err, sizeof(err)) == 1; got++) {
        assert_int_equal(rec.ref, got);
        assert_int_equal(rec.hash, hashes[got]);
        assert_int_equal(rec.digest, ~hashes[got]);
    }
    assert_int_equal(got, N);
    free(region);

    /* one byte of block 1 flipped */
    buf = read_file(&len);
    lost_block = 1;
    buf[128 + sh_index_region_size(16) + 8 + SH_SNAP_BLOCK + 8 + 1000] ^= 4;
    write_file(buf, len);
    load_ok(0, &region, &rs, &u, &ul, &info);
    assert_int_equal(info.damaged, 1);
    assert_int_equal(sh_keyrec_open(&rd, info.kind, u, ul), 0);
    got = 0;
    while (sh_keyrec_next(&rd, &rec, err, sizeof(err)) == 1) {
        if (rec.type == SH_KEYREC_DOC) {
            assert_int_equal(rec.hash, hashes[rec.ref]);
            got++;
        }
    }
    assert_int_equal(got, N - nblock[lost_block]);
    assert_true(nblock[lost_block] > 100);
    free(region);
    free(buf);
    free(sec);
    free(mem);
}

/* Files written by format 1 (tests/fixtures/snapshots) still load. */
static void
test_format1_files(void **state)
{
    const char *dir = getenv("SH_FIXTURES");
    char        f[1024], err[256];
    void       *region;
    size_t      rs, ul, n = 0;
    const void *u;
    sh_keyrec_t rec;
    sh_keyrec_reader_t rd;
    sh_snapshot_info_t info;

    snprintf(f, sizeof(f), "%s/snapshots/module-v1.snap",
             dir ? dir : "tests/fixtures");
    assert_int_equal(sh_snapshot_load(f, 0, &region, &rs, &u, &ul, &info,
                                      err, sizeof(err)), 0);
    assert_int_equal(info.version, 1);
    assert_string_equal(info.kind, SH_KEYREC_KIND_V2);
    assert_int_equal(info.region_ok, 1);
    assert_int_equal(sh_keyrec_open(&rd, info.kind, u, ul), 0);
    while (sh_keyrec_next(&rd, &rec, err, sizeof(err)) == 1) {
        assert_int_equal(rec.type, SH_KEYREC_DOC);
        assert_true(rec.len > 10 && memcmp(rec.data, "http://", 7) == 0);
        n++;
    }
    assert_int_equal(n, 4);
    free(region);

    snprintf(f, sizeof(f), "%s/snapshots/index-v1.snap",
             dir ? dir : "tests/fixtures");
    assert_int_equal(sh_snapshot_load(f, 0, &region, &rs, &u, &ul, &info,
                                      err, sizeof(err)), 0);
    assert_string_equal(info.kind, "SHPATHS1");
    assert_non_null(sh_index_attach(region, rs, err, sizeof(err)));
    free(region);
}

static void
test_save_errors(void **state)
{
    void       *mem;
    uint64_t    h[10];
    sh_index_t *ix = make_index(&mem, 16, 10, h);
    char        err[256] = "";

    assert_int_equal(sh_snapshot_save("/nonexistent-dir/x.snap", ix, NULL,
                                      NULL, 0, err, sizeof(err)), -1);
    assert_true(strlen(err) > 0);
    free(mem);
}

/* A DOC with a version time (DOC_TIMED) reads back as a DOC with its time;
 * one without stays a plain DOC; both fill blocks like any record. */
static void
test_timed_records(void **state)
{
    enum { N = 3000 };
    char        key[64], err[256];
    size_t      room, i, at;
    void       *sec;
    sh_keyrec_t rec;
    sh_keyrec_writer_t w;
    sh_keyrec_reader_t rd;

    room = sh_keyrec_room(N, N * 40, 40);
    sec = calloc(1, room);
    assert_non_null(sec);
    sh_keyrec_writer_init(&w, sec, room);

    memset(&rec, 0, sizeof(rec));
    for (i = 0; i < N; i++) {
        rec.type = SH_KEYREC_DOC;
        rec.ref = (uint32_t) i;
        rec.hash = i * 7919;
        rec.digest = i;
        rec.time = (i % 3) ? (uint32_t) (1700000000 + i) : 0;
        rec.len = (uint32_t) snprintf(key, sizeof(key),
                                      "http://x/%zu/abcdefghijklmnop", i);
        rec.data = (const unsigned char *) key;
        assert_int_equal(sh_keyrec_put(&w, &rec), 0);
        at = sh_keyrec_written(&w) - sh_keyrec_size(rec.len)
             - (rec.time ? 4 : 0);
        assert_int_equal(at / SH_SNAP_BLOCK,
                         (sh_keyrec_written(&w) - 1) / SH_SNAP_BLOCK);
        /* the type on disk says whether a time follows the head */
        assert_int_equal(((unsigned char *) sec)[at],
                         rec.time ? SH_KEYREC_DOC_TIMED : SH_KEYREC_DOC);
    }
    assert_true(sh_keyrec_written(&w) <= room);

    assert_int_equal(sh_keyrec_open(&rd, SH_KEYREC_KIND, sec,
                                     sh_keyrec_written(&w)), 0);
    for (i = 0; sh_keyrec_next(&rd, &rec, err, sizeof(err)) == 1; i++) {
        assert_int_equal(rec.type, SH_KEYREC_DOC);
        assert_int_equal(rec.ref, i);
        assert_true(rec.hash == i * 7919 && rec.digest == i);
        assert_int_equal(rec.time, (i % 3) ? 1700000000 + i : 0);
        snprintf(key, sizeof(key), "http://x/%zu/abcdefghijklmnop", i);
        assert_int_equal(rec.len, strlen(key));
        assert_memory_equal(rec.data, key, rec.len);
    }
    assert_int_equal(i, N);
    free(sec);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_and_header, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_contained_damage, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_foreign_and_versions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_not_regular, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_lose_one_block, setup,
                                        teardown),
        cmocka_unit_test(test_format1_files),
        cmocka_unit_test(test_timed_records),
        cmocka_unit_test(test_save_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
