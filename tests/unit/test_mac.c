/*
 * test_mac.c -- HMAC-SHA256 (sh_mac.h): RFC 4231's known answers, a
 * message given in parts signs as the same message whole, and a derived
 * key is the MAC of its purpose, cut to the length asked.
 */
#include "test_util.h"

#include "sh_mac.h"

static void
hex(const unsigned char *b, size_t n, char *out)
{
    size_t i;

    for (i = 0; i < n; i++) {
        sprintf(out + 2 * i, "%02x", b[i]);
    }
}

static void
assert_mac(const void *key, size_t keylen, const char *msg,
           const char *want)
{
    unsigned char out[SH_MAC_FULL];
    char          got[2 * SH_MAC_FULL + 1];
    sh_mac_part_t part = { msg, strlen(msg) };

    assert_int_equal(sh_mac(out, key, keylen, &part, 1), 0);
    hex(out, sizeof(out), got);
    assert_string_equal(got, want);
}

/* RFC 4231, test cases 1, 2 and 6 (a key longer than SHA-256's block). */
static void
test_rfc4231_vectors(void **state)
{
    unsigned char k1[20], k6[131];

    (void) state;
    memset(k1, 0x0b, sizeof(k1));
    assert_mac(k1, sizeof(k1), "Hi There",
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    assert_mac("Jefe", 4, "what do ya want for nothing?",
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k6, 0xaa, sizeof(k6));
    assert_mac(k6, sizeof(k6),
        "Test Using Larger Than Block-Size Key - Hash Key First",
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* Parts are one message: the split does not change the MAC, and an empty
 * part adds nothing. */
static void
test_parts_are_one_message(void **state)
{
    const char    *msg = "what do ya want for nothing?";
    unsigned char  whole[SH_MAC_FULL], split[SH_MAC_FULL];
    sh_mac_part_t  one = { msg, strlen(msg) };
    sh_mac_part_t  three[3] = { { msg, 4 }, { "", 0 },
                                { msg + 4, strlen(msg) - 4 } };

    (void) state;
    assert_int_equal(sh_mac(whole, "Jefe", 4, &one, 1), 0);
    assert_int_equal(sh_mac(split, "Jefe", 4, three, 3), 0);
    assert_memory_equal(whole, split, SH_MAC_FULL);

    /* another key, another MAC */
    assert_int_equal(sh_mac(split, "Jeff", 4, &one, 1), 0);
    assert_memory_not_equal(whole, split, SH_MAC_FULL);
}

/* A derived key is HMAC(key, purpose) cut to the length asked; more than
 * a full MAC is refused. */
static void
test_derive(void **state)
{
    unsigned char full[SH_MAC_FULL], cut[16], other[16], big[SH_MAC_FULL + 1];
    char          got[2 * SH_MAC_FULL + 1];

    (void) state;
    assert_int_equal(sh_mac_derive(full, sizeof(full), "Jefe", 4, "dust"),
                     0);
    hex(full, sizeof(full), got);
    assert_string_equal(got,
        "4bf5c7c2111d753b9c6ba8f78175e5a54866e62f2cf02a134464fcf47818ea39");
    assert_int_equal(sh_mac_derive(cut, sizeof(cut), "Jefe", 4, "dust"), 0);
    assert_memory_equal(cut, full, sizeof(cut));
    assert_int_equal(sh_mac_derive(other, sizeof(other), "Jefe", 4,
                                   "stream"), 0);
    assert_memory_not_equal(cut, other, sizeof(cut));
    assert_int_equal(sh_mac_derive(big, sizeof(big), "Jefe", 4, "dust"), -1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4231_vectors),
        cmocka_unit_test(test_parts_are_one_message),
        cmocka_unit_test(test_derive),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
