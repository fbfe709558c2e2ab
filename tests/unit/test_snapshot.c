/*
 * test_snapshot.c -- save/load round trip, and every kind of bad file is
 * refused with a message: truncated anywhere, any byte flipped, foreign
 * byte order, other version, other hash key, trailing bytes, and a file
 * whose checksums are right but whose index is not.
 */
#include "test_util.h"

#include <unistd.h>

#include <xxhash.h>

#include "sh_snapshot.h"

static char path[256];

static uint64_t rng = 0xa4093822299f31d0ull;

static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

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

    assert_int_equal(sh_snapshot_load(path, 0, &region, &rs, &user, &ul, err,
                                      sizeof(err)), -1);
    assert_null(region);
    assert_true(strlen(err) > 0);
    if (want != NULL && strstr(err, want) == NULL) {
        fail_msg("error \"%s\" does not mention \"%s\"", err, want);
    }
}

static void
test_round_trip(void **state)
{
    void       *mem, *region;
    uint64_t    h[3000];
    sh_index_t *ix = make_index(&mem, 4000, 3000, h), *ix2;
    const char  user[] = "ref->url data";
    const void *u;
    size_t      rs, ul;
    char        err[256];
    unsigned    i;
    sh_lookup_opts_t o;
    sh_match_t  a, b;
    sh_index_stats_t s1, s2;

    for (i = 0; i < 3000; i += 7) {
        sh_index_remove(ix, i);
    }
    assert_int_equal(sh_snapshot_save(path, ix, user, sizeof(user), err,
                                      sizeof(err)), 0);
    {
        char tmp[300];

        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        assert_int_equal(access(tmp, F_OK), -1);    /* renamed away */
    }
    assert_int_equal(sh_snapshot_load(path, 0x5eed, &region, &rs, &u, &ul,
                                      err, sizeof(err)), 0);
    ix2 = sh_index_attach(region, rs, err, sizeof(err));
    assert_non_null(ix2);
    assert_int_equal(ul, sizeof(user));
    assert_memory_equal(u, user, sizeof(user));
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
    assert_int_equal(sh_snapshot_save(path, ix, NULL, 0, err, sizeof(err)),
                     0);
    assert_int_equal(sh_snapshot_load(path, 0, &region, &rs, &u, &ul, err,
                                      sizeof(err)), 0);
    assert_int_equal(ul, 0);
    free(region);
    {
        void *r2;

        assert_int_equal(sh_snapshot_load(path, 0xbad, &r2, &rs, &u, &ul,
                                          err, sizeof(err)), -1);
        assert_non_null(strstr(err, "hash key"));
    }
    free(mem);
}

/*
 * The match rule in the header: recorded by sh_snapshot_save_rule, read
 * back by sh_snapshot_rule; a file saved without one (or by a build before
 * the field existed: the bytes were reserved zeros) says "not recorded";
 * either way the snapshot loads.
 */
static void
test_rule_recorded(void **state)
{
    void       *mem, *region;
    uint64_t    h[100];
    sh_index_t *ix = make_index(&mem, 128, 100, h);
    const void *u;
    size_t      rs, ul;
    char        err[256];
    int         recorded = -1;
    sh_match_opts_t in, out;

    sh_match_opts_init(&in);
    assert_int_equal(sh_match_opts_weighted(&in, 9.5, 11), 0);
    assert_int_equal(sh_snapshot_save_rule(path, ix, "k", 1, &in, err,
                                           sizeof(err)), 0);
    assert_int_equal(sh_snapshot_rule(path, &recorded, &out, err,
                                      sizeof(err)), 0);
    assert_int_equal(recorded, 1);
    assert_int_equal(out.rule, SH_RULE_WEIGHTED);
    assert_int_equal(out.h, 11);
    assert_int_equal(out.threshold, sh_score_from_nats(9.5));
    assert_int_equal(sh_snapshot_load(path, 0, &region, &rs, &u, &ul, err,
                                      sizeof(err)), 0);
    free(region);

    sh_match_opts_init(&in);
    in.h = 2;
    assert_int_equal(sh_snapshot_save_rule(path, ix, NULL, 0, &in, err,
                                           sizeof(err)), 0);
    assert_int_equal(sh_snapshot_rule(path, &recorded, &out, err,
                                      sizeof(err)), 0);
    assert_int_equal(recorded, 1);
    assert_int_equal(out.rule, SH_RULE_HAMMING);
    assert_int_equal(out.h, 2);

    assert_int_equal(sh_snapshot_save(path, ix, NULL, 0, err, sizeof(err)),
                     0);
    assert_int_equal(sh_snapshot_rule(path, &recorded, &out, err,
                                      sizeof(err)), 0);
    assert_int_equal(recorded, 0);

    /* not a snapshot: an error, nothing recorded */
    write_file("not a snapshot at all", 21);
    recorded = -1;
    assert_int_equal(sh_snapshot_rule(path, &recorded, &out, err,
                                      sizeof(err)), -1);
    assert_int_equal(recorded, 0);
    assert_true(strlen(err) > 0);
    free(mem);
}

static void
test_truncated_and_corrupt(void **state)
{
    void       *mem;
    uint64_t    h[200];
    sh_index_t *ix = make_index(&mem, 256, 200, h);
    char       *buf;
    size_t      len, cut, pos;
    char        err[256];

    assert_int_equal(sh_snapshot_save(path, ix, "abc", 3, err, sizeof(err)),
                     0);
    buf = read_file(&len);

    /* Truncated at many points, including inside the header. */
    for (cut = 0; cut < len; cut += cut < 200 ? 1 : 997) {
        write_file(buf, cut);
        expect_refused(NULL);
    }
    write_file(buf, len - 1);
    expect_refused("truncated");

    /* Any single byte flipped anywhere. */
    for (pos = 0; pos < len; pos += pos < 160 ? 1 : 331) {
        buf[pos] ^= 0x40;
        write_file(buf, len);
        expect_refused(NULL);
        buf[pos] ^= 0x40;
    }
    buf[len / 2] ^= 1;
    write_file(buf, len);
    expect_refused("checksum");
    buf[len / 2] ^= 1;

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

/* Rewrite the header checksum after editing a header field. */
static void
fix_header_sum(char *buf)
{
    uint64_t sum = XXH3_64bits(buf, 120);

    memcpy(buf + 120, &sum, 8);
}

static void
fix_file_sum(char *buf, size_t len)
{
    uint64_t sum = XXH3_64bits(buf, len - 8);

    memcpy(buf + len - 8, &sum, 8);
}

static void
test_foreign_and_versions(void **state)
{
    void       *mem;
    uint64_t    h[100], v;
    sh_index_t *ix = make_index(&mem, 128, 100, h);
    char       *buf, err[256];
    size_t      len;
    uint32_t    x;

    assert_int_equal(sh_snapshot_save(path, ix, NULL, 0, err, sizeof(err)),
                     0);
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
    write_file(buf, len);
    expect_refused("version");
    x--;
    memcpy(buf + 12, &x, 4);

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
     * swapped out of order.  The structural check catches it. */
    {
        size_t i, a = SIZE_MAX, b = SIZE_MAX;

        /* Find the slots holding two known fingerprints. */
        for (i = 128; i + 8 <= len - 8; i += 8) {
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
        fix_file_sum(buf, len);
        write_file(buf, len);
        expect_refused("inconsistent index");
    }
    free(buf);
    free(mem);
}

static void
test_save_errors(void **state)
{
    void       *mem;
    uint64_t    h[10];
    sh_index_t *ix = make_index(&mem, 16, 10, h);
    char        err[256] = "";

    assert_int_equal(sh_snapshot_save("/nonexistent-dir/x.snap", ix, NULL, 0,
                                      err, sizeof(err)), -1);
    assert_true(strlen(err) > 0);
    free(mem);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rule_recorded, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_truncated_and_corrupt, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_foreign_and_versions, setup,
                                        teardown),
        cmocka_unit_test(test_save_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
