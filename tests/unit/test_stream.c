/*
 * test_stream.c -- the replication stream's entries and ids (sh_stream.h).
 */
#include "test_util.h"

#include "sh_keyrec.h"
#include "sh_stream.h"

static void
test_ids(void **state)
{
    sh_stream_id_t a, b;
    char           buf[SH_STREAM_ID_LEN];

    assert_int_equal(sh_stream_id_parse(&a, "1700000000123-7", 15), 0);
    assert_true(a.ms == 1700000000123ULL && a.seq == 7);
    assert_int_equal(sh_stream_id_format(buf, &a), 15);
    assert_string_equal(buf, "1700000000123-7");

    assert_int_equal(sh_stream_id_parse(&b, "1700000000123", 13), 0);
    assert_true(b.seq == 0);
    assert_true(sh_stream_id_cmp(&b, &a) < 0);
    assert_true(sh_stream_id_cmp(&a, &b) > 0);
    assert_true(sh_stream_id_cmp(&a, &a) == 0);

    /* the largest id Redis can give */
    a.ms = UINT64_MAX;
    a.seq = UINT64_MAX;
    sh_stream_id_format(buf, &a);
    assert_string_equal(buf, "18446744073709551615-18446744073709551615");
    assert_int_equal(sh_stream_id_parse(&b, buf, strlen(buf)), 0);
    assert_int_equal(sh_stream_id_cmp(&a, &b), 0);

    /* the seq orders ids of one ms */
    assert_int_equal(sh_stream_id_parse(&a, "5-10", 4), 0);
    assert_int_equal(sh_stream_id_parse(&b, "5-9", 3), 0);
    assert_true(sh_stream_id_cmp(&b, &a) < 0);

    assert_int_equal(sh_stream_id_parse(&a, "", 0), -1);
    assert_int_equal(sh_stream_id_parse(&a, "-", 1), -1);
    assert_int_equal(sh_stream_id_parse(&a, "12-", 3), -1);
    assert_int_equal(sh_stream_id_parse(&a, "-3", 2), -1);
    assert_int_equal(sh_stream_id_parse(&a, "1-2-3", 5), -1);
    assert_int_equal(sh_stream_id_parse(&a, "1x-2", 4), -1);
    assert_int_equal(sh_stream_id_parse(&a, "18446744073709551616-0", 22),
                     -1);
}

/* Feed "name value ..." pairs from an array. */
static int
decode(sh_stream_entry_t *e, const char **kv, size_t n, char *err,
       size_t errlen)
{
    size_t i;

    sh_stream_entry_init(e);
    for (i = 0; i + 1 < n; i += 2) {
        if (sh_stream_entry_field(e, kv[i], strlen(kv[i]), kv[i + 1],
                                  strlen(kv[i + 1]), err, errlen) != 0)
        {
            return -1;
        }
    }
    return sh_stream_entry_check(e, err, errlen);
}

static void
test_round_trip(void **state)
{
    sh_stream_text_t   t;
    sh_stream_entry_t  e;
    char               err[128];
    const char        *kv[14];

    sh_stream_text(&t, 0x0123456789abcdefULL, 0xfedcba9876543210ULL,
                   1700000000123ULL, sh_stream_seed(0xdeadbeef00000001ULL));
    assert_string_equal(t.fp, "0123456789abcdef");
    assert_string_equal(t.digest, "fedcba9876543210");
    assert_string_equal(t.time, "1700000000123");
    assert_string_equal(t.seed, "deadbeef");

    /* any order, and a field of another name ignored */
    kv[0] = "seed";     kv[1] = t.seed;
    kv[2] = "key";      kv[3] = "https://example.com/a?b=c";
    kv[4] = "extra";    kv[5] = "whatever";
    kv[6] = "fp";       kv[7] = "0123456789ABCDEF";
    kv[8] = "time";     kv[9] = t.time;
    kv[10] = "node";    kv[11] = "proxy-3";
    kv[12] = "digest";  kv[13] = t.digest;

    assert_int_equal(decode(&e, kv, 14, err, sizeof(err)), 0);
    assert_true(e.hash == 0x0123456789abcdefULL);
    assert_true(e.digest == 0xfedcba9876543210ULL);
    assert_true(e.time == 1700000000123ULL);
    assert_true(e.seed == 0xdeadbeef);
    assert_int_equal(e.node_len, 7);
    assert_memory_equal(e.node, "proxy-3", 7);
    assert_int_equal(e.key_len, strlen("https://example.com/a?b=c"));
}

static void
test_malformed(void **state)
{
    sh_stream_entry_t  e;
    char               err[128];
    static char        longkey[SH_KEY_MAX + 2];
    const char        *kv[12] = {
        "node", "a", "key", "k", "fp", "0000000000000001",
        "digest", "0000000000000000", "time", "1", "seed", "00000000"
    };
    const char        *bad[][2] = {
        { "fp", "000000000000001" },        /* 15 digits */
        { "fp", "00000000000000001" },      /* 17 */
        { "fp", "000000000000000g" },
        { "digest", "" },
        { "time", "0" },
        { "time", "12x" },
        { "time", "-5" },
        { "time", "184467440737095516150" },
        { "seed", "1234567" },
        { "node", "" },
        { "key", "" },
    };
    const char        *save[2];
    size_t             i, j;

    assert_int_equal(decode(&e, kv, 12, err, sizeof(err)), 0);

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (j = 0; j < 12; j += 2) {
            if (strcmp(kv[j], bad[i][0]) == 0) {
                break;
            }
        }
        save[0] = kv[j + 1];
        kv[j + 1] = bad[i][1];
        err[0] = '\0';
        assert_int_equal(decode(&e, kv, 12, err, sizeof(err)), -1);
        assert_non_null(strstr(err, bad[i][0]));
        kv[j + 1] = save[0];
    }

    /* each field missing in turn */
    for (j = 0; j < 12; j += 2) {
        save[0] = kv[j];
        kv[j] = "other";
        assert_int_equal(decode(&e, kv, 12, err, sizeof(err)), -1);
        assert_non_null(strstr(err, save[0]));
        kv[j] = save[0];
    }

    /* a field twice */
    kv[2] = "node";
    assert_int_equal(decode(&e, kv, 12, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "twice"));
    kv[2] = "key";

    /* the longest key a zone keeps, and one byte more */
    memset(longkey, 'k', SH_KEY_MAX + 1);
    sh_stream_entry_init(&e);
    assert_int_equal(sh_stream_entry_field(&e, "key", 3, longkey, SH_KEY_MAX,
                                           err, sizeof(err)), 0);
    sh_stream_entry_init(&e);
    assert_int_equal(sh_stream_entry_field(&e, "key", 3, longkey,
                                           SH_KEY_MAX + 1, err, sizeof(err)),
                     -1);
}

/*
 * The order of versions: two nodes that apply the same versions in
 * different orders keep the same one, whichever it is.
 */
typedef struct {
    uint32_t second;
    uint64_t hash;
} version_t;

static void
apply(version_t *have, uint64_t time, uint64_t hash)
{
    if (have->second == 0
        || sh_stream_newer(time, hash, have->second, have->hash))
    {
        have->second = sh_stream_second(time);
        have->hash = hash;
    }
}

static void
test_order(void **state)
{
    uint64_t  t[6] = { 1700000000100ULL, 1700000000900ULL,
                       1700000001000ULL, 1700000000100ULL,
                       1700000005000ULL, 1700000000999ULL };
    uint64_t  h[6] = { 5, 3, 1, 9, 2, 7 };
    size_t    i, j, k;
    version_t a, b;

    /* every pair, both orders, and every triple in two orders */
    for (i = 0; i < 6; i++) {
        for (j = 0; j < 6; j++) {
            for (k = 0; k < 6; k++) {
                memset(&a, 0, sizeof(a));
                memset(&b, 0, sizeof(b));
                apply(&a, t[i], h[i]);
                apply(&a, t[j], h[j]);
                apply(&a, t[k], h[k]);
                apply(&b, t[k], h[k]);
                apply(&b, t[i], h[i]);
                apply(&b, t[j], h[j]);
                assert_true(a.second == b.second && a.hash == b.hash);
            }
        }
    }

    /* later seconds win whatever the fingerprints */
    assert_true(sh_stream_newer(1700000001000ULL, 1, 1700000000, 9));
    assert_false(sh_stream_newer(1700000000999ULL, 1, 1700000001, 0));
    /* within a second, the larger fingerprint; an equal one is not newer */
    assert_true(sh_stream_newer(1700000000999ULL, 9, 1700000000, 1));
    assert_false(sh_stream_newer(1700000000999ULL, 1, 1700000000, 9));
    assert_false(sh_stream_newer(1700000000999ULL, 9, 1700000000, 9));
}

/* A node's own change within the second of its stored version still wins
 * everywhere, whatever its fingerprint. */
static void
test_next_time(void **state)
{
    uint64_t now = 1700000000500ULL, t;

    assert_true(sh_stream_next_time(now, 0) == now);
    assert_true(sh_stream_next_time(now, 1699999999) == now);

    t = sh_stream_next_time(now, 1700000000);
    assert_true(t == 1700000001000ULL);
    assert_true(sh_stream_newer(t, 0, 1700000000, UINT64_MAX));

    /* three changes in one second: each newer than the last */
    t = sh_stream_next_time(now, sh_stream_second(t));
    assert_true(t == 1700000002000ULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_next_time),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
