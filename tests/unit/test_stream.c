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

static const unsigned char key_a[SH_STREAM_KEY_LEN] = "tier secret A, 32 bytes long...";
static const unsigned char key_b[SH_STREAM_KEY_LEN] = "tier secret B, 32 bytes long...";

/* An entry as a node publishes it. */
static void
sample(sh_stream_entry_t *e)
{
    sh_stream_entry_init(e);
    e->node = (const unsigned char *) "proxy-3";
    e->node_len = 7;
    e->key = (const unsigned char *) "https://example.com/a?b=c";
    e->key_len = strlen((const char *) e->key);
    e->hash = 0x0123456789abcdefULL;
    e->digest = 0xfedcba9876543210ULL;
    e->time = 1700000000123ULL;
    e->seed = sh_stream_seed(0xdeadbeef00000001ULL);
    e->xv = 0x01a3f29c;
    e->sketches.structure = 0x1111222233334444ULL;
    e->sketches.links = 0x5555666677778888ULL;
    e->seq = 1700000000123456ULL;
}

/* Encode, then feed the pairs back in `order` (indexes into the fields),
 * with a field of another name mixed in. */
static int
reencode(const sh_stream_entry_t *in, sh_stream_fields_t *f,
         sh_stream_entry_t *out, char *err, size_t errlen)
{
    static const unsigned order[SH_STREAM_NFIELDS] = { 9, 5, 1, 2, 4, 0, 3,
                                                       7, 6, 8 };
    unsigned i;

    sh_stream_encode(f, in, key_a);
    sh_stream_entry_init(out);
    for (i = 0; i < SH_STREAM_NFIELDS; i++) {
        unsigned k = order[i];

        if (i == 3 && sh_stream_entry_field(out, "extra", 5, "x", 1, err,
                                            errlen) != 0)
        {
            return -1;
        }
        if (sh_stream_entry_field(out, f->name[k], strlen(f->name[k]),
                                  f->value[k], f->len[k], err, errlen) != 0)
        {
            return -1;
        }
    }
    return sh_stream_entry_check(out, err, errlen);
}

static void
test_round_trip(void **state)
{
    sh_stream_fields_t f;
    sh_stream_entry_t  in, e;
    char               err[128];

    sample(&in);
    assert_int_equal(reencode(&in, &f, &e, err, sizeof(err)), 0);

    /* the text of each field */
    assert_string_equal(f.name[SH_STREAM_F_FP], "fp");
    assert_string_equal(f.fp, "0123456789abcdef");
    assert_string_equal(f.digest, "fedcba9876543210");
    assert_string_equal(f.time, "1700000000123");
    assert_string_equal(f.seed, "deadbeef");
    assert_string_equal(f.xv, "01a3f29c");
    assert_string_equal(f.sk, "11112222333344445555666677778888");
    assert_string_equal(f.name[SH_STREAM_F_SEQ], "seq");
    assert_string_equal(f.seq, "1700000000123456");
    assert_true(e.seq == in.seq && sh_stream_has_seq(&e));
    assert_int_equal(strlen(f.mac), 2 * SH_STREAM_MAC_LEN);

    assert_true(e.hash == in.hash && e.digest == in.digest);
    assert_true(e.time == in.time && e.seed == in.seed && e.xv == in.xv);
    assert_true(e.sketches.structure == in.sketches.structure
                && e.sketches.links == in.sketches.links);
    assert_int_equal(e.node_len, 7);
    assert_memory_equal(e.node, "proxy-3", 7);
    assert_int_equal(e.key_len, in.key_len);
    assert_memory_equal(e.key, in.key, in.key_len);
    assert_true(sh_stream_verify(&e, key_a));
}

/* Only a holder of the key makes an entry that verifies; any change to any
 * field breaks it, and so does moving a byte from node to key. */
static void
test_mac(void **state)
{
    sh_stream_fields_t f;
    sh_stream_entry_t  in, e, x;
    char               err[128];
    unsigned char      mac[SH_STREAM_MAC_LEN];

    sample(&in);
    assert_int_equal(reencode(&in, &f, &e, err, sizeof(err)), 0);
    assert_true(sh_stream_verify(&e, key_a));
    assert_false(sh_stream_verify(&e, key_b));

    x = e; x.hash ^= 1;             assert_false(sh_stream_verify(&x, key_a));
    x = e; x.digest ^= 1;           assert_false(sh_stream_verify(&x, key_a));
    x = e; x.time += 1;             assert_false(sh_stream_verify(&x, key_a));
    x = e; x.seed ^= 1;             assert_false(sh_stream_verify(&x, key_a));
    x = e; x.xv ^= 1;               assert_false(sh_stream_verify(&x, key_a));
    x = e; x.mac[3] ^= 0x10;        assert_false(sh_stream_verify(&x, key_a));
    x = e; x.sketches.links ^= 1;   assert_false(sh_stream_verify(&x, key_a));
    x = e; x.sketches.structure ^= 1;
    assert_false(sh_stream_verify(&x, key_a));
    x = e; x.seq += 1;              assert_false(sh_stream_verify(&x, key_a));

    /* seq stripped from a signed entry (to pass as an earlier release's,
       which has none): it does not verify, with sk or without */
    x = e;
    x.seen &= ~(1u << SH_STREAM_F_SEQ);
    x.seq = 0;
    assert_false(sh_stream_verify(&x, key_a));
    x.seen &= ~(1u << SH_STREAM_F_SK);
    assert_false(sh_stream_verify(&x, key_a));

    /* sk stripped from a signed entry: it does not verify */
    x = e;
    x.seen &= ~(1u << SH_STREAM_F_SK);
    memset(&x.sketches, 0, sizeof(x.sketches));
    assert_false(sh_stream_verify(&x, key_a));

    /* an entry of an earlier release (no sk, no seq) verifies as it was
       signed, and sk cannot be added to it */
    x = e;
    x.seen &= ~((1u << SH_STREAM_F_SK) | (1u << SH_STREAM_F_SEQ));
    x.seq = 0;
    memset(&x.sketches, 0, sizeof(x.sketches));
    sh_stream_mac(x.mac, &x, key_a);
    assert_true(sh_stream_verify(&x, key_a));
    x.seen |= 1u << SH_STREAM_F_SK;
    assert_false(sh_stream_verify(&x, key_a));
    x = e; x.key_len--;             assert_false(sh_stream_verify(&x, key_a));
    x = e; x.key = (const unsigned char *) "https://evil.example/a?b=c";
    assert_false(sh_stream_verify(&x, key_a));

    /* "proxy-3" + "https..." against "proxy-" + "3https...": the lengths
       are in the message */
    {
        sh_stream_entry_t a = in, b = in;

        a.node = (const unsigned char *) "ab";
        a.node_len = 2;
        a.key = (const unsigned char *) "c";
        a.key_len = 1;
        b.node = (const unsigned char *) "a";
        b.node_len = 1;
        b.key = (const unsigned char *) "bc";
        b.key_len = 2;
        sh_stream_mac(mac, &a, key_a);
        memcpy(b.mac, mac, sizeof(mac));
        assert_false(sh_stream_verify(&b, key_a));
    }
}

static void
test_malformed(void **state)
{
    sh_stream_entry_t  e;
    char               err[128];
    static char        longkey[SH_KEY_MAX + 2];
    const char        *kv[16] = {
        "node", "a", "key", "k", "fp", "0000000000000001",
        "digest", "0000000000000000", "time", "1", "seed", "00000000",
        "xv", "01000000", "mac", "000102030405060708090a0b0c0d0e0f"
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
        { "xv", "0100000" },
        { "xv", "0100000z" },
        { "mac", "000102030405060708090a0b0c0d0e0" },
        { "mac", "000102030405060708090a0b0c0d0e0f00" },
        { "mac", "000102030405060708090a0b0c0d0e0x" },
    };
    const char        *save[2];
    size_t             i, j;

    assert_int_equal(decode(&e, kv, 16, err, sizeof(err)), 0);

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (j = 0; j < 16; j += 2) {
            if (strcmp(kv[j], bad[i][0]) == 0) {
                break;
            }
        }
        save[0] = kv[j + 1];
        kv[j + 1] = bad[i][1];
        err[0] = '\0';
        assert_int_equal(decode(&e, kv, 16, err, sizeof(err)), -1);
        assert_non_null(strstr(err, bad[i][0]));
        kv[j + 1] = save[0];
    }

    /* each field missing in turn: an entry of an earlier release has no
       xv and no mac */
    for (j = 0; j < 16; j += 2) {
        save[0] = kv[j];
        kv[j] = "other";
        assert_int_equal(decode(&e, kv, 16, err, sizeof(err)), -1);
        assert_non_null(strstr(err, save[0]));
        kv[j] = save[0];
    }

    /* a field twice */
    kv[2] = "node";
    assert_int_equal(decode(&e, kv, 16, err, sizeof(err)), -1);
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

/* A DUST entry: its fields round-trip, its MAC is its own (a tag of its
 * own: a document's MAC never verifies it), and the mixed or damaged
 * forms are malformed. */
static void
test_dust_entry(void **state)
{
    sh_stream_entry_t       e, d, x;
    sh_stream_dust_fields_t f;
    char                    err[128], bad[2 * SH_STREAM_DUST_LEN + 1];
    const char             *kv[2 * SH_STREAM_DUST_NFIELDS + 2];
    size_t                  i;

    sh_stream_entry_init(&e);
    e.node = (const unsigned char *) "n1";
    e.node_len = 2;
    e.time = 1700000000123ULL;
    e.seed = 0xdeadbeef;
    e.seq = 42;
    for (i = 0; i < SH_STREAM_DUST_LEN; i++) {
        e.dust[i] = (unsigned char) (i * 7);
    }
    sh_stream_encode_dust(&f, &e, key_a);
    assert_int_equal(f.len[1], 2 * SH_STREAM_DUST_LEN);

    for (i = 0; i < SH_STREAM_DUST_NFIELDS; i++) {
        kv[2 * i] = f.name[i];
        kv[2 * i + 1] = f.value[i];
    }
    assert_int_equal(decode(&d, kv, 2 * SH_STREAM_DUST_NFIELDS, err,
                            sizeof(err)), 0);
    assert_true(sh_stream_is_dust(&d));
    assert_memory_equal(d.dust, e.dust, SH_STREAM_DUST_LEN);
    assert_true(d.time == e.time && d.seed == e.seed);
    assert_true(sh_stream_verify(&d, key_a));
    assert_false(sh_stream_verify(&d, key_b));

    x = d; x.dust[100] ^= 1;    assert_false(sh_stream_verify(&x, key_a));
    x = d; x.time++;            assert_false(sh_stream_verify(&x, key_a));
    x = d; x.seed ^= 1;         assert_false(sh_stream_verify(&x, key_a));
    x = d; x.node_len = 1;      assert_false(sh_stream_verify(&x, key_a));
    x = d; x.seq++;             assert_false(sh_stream_verify(&x, key_a));
    assert_true(d.seq == 42 && sh_stream_has_seq(&d));
    x = d; x.seen &= ~(1u << SH_STREAM_F_SEQ);
    assert_false(sh_stream_verify(&x, key_a));

    /* the same fields read as a document's: not its MAC */
    x = d; x.seen &= ~(1u << SH_STREAM_F_DUST);
    assert_false(sh_stream_verify(&x, key_a));

    /* a dust field with a key: malformed */
    kv[2 * SH_STREAM_DUST_NFIELDS] = "key";
    kv[2 * SH_STREAM_DUST_NFIELDS + 1] = "site/x";
    assert_int_equal(decode(&d, kv, 2 * SH_STREAM_DUST_NFIELDS + 2, err,
                            sizeof(err)), -1);

    /* truncated, not hex */
    memcpy(bad, f.dust, sizeof(bad));
    kv[3] = "00ff";
    assert_int_equal(decode(&d, kv, 2 * SH_STREAM_DUST_NFIELDS, err,
                            sizeof(err)), -1);
    bad[10] = 'g';
    kv[3] = bad;
    assert_int_equal(decode(&d, kv, 2 * SH_STREAM_DUST_NFIELDS, err,
                            sizeof(err)), -1);

    /* no mac */
    kv[3] = f.dust;
    assert_int_equal(decode(&d, kv, 2 * SH_STREAM_DUST_NFIELDS - 2, err,
                            sizeof(err)), -1);
}

/* A writer's sequence: one more than the last, or the clock when later
 * (a node started again goes on above what it sent before). */
static void
test_next_seq(void **state)
{
    assert_true(sh_stream_next_seq(0, 1700000000000000ULL)
                == 1700000000000000ULL);
    assert_true(sh_stream_next_seq(1700000000000000ULL, 1700000000000000ULL)
                == 1700000000000001ULL);
    /* the clock went back: the sequence does not */
    assert_true(sh_stream_next_seq(1700000000000500ULL, 1700000000000000ULL)
                == 1700000000000501ULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_mac),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_next_time),
        cmocka_unit_test(test_dust_entry),
        cmocka_unit_test(test_next_seq),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
