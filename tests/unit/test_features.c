/*
 * test_features.c -- terms to weighted features (sh_features.h): each term
 * a WORD, each run of w terms a SHINGLE, counted; the cap on distinct
 * features and what it keeps counting; reset; and the weights against the
 * formula computed plainly: type weight x g(m), g(m) = 1 + ln m above 1,
 * m below, m the occurrences counted by their blocks' weights (and those
 * outside the main content by `outside`).
 */
#include "test_util.h"

#include <math.h>

#include "sh_config.h"
#include "sh_features.h"
#include "sh_library.h"

#define MAIN_FULL   (16 | SH_CLASS_MAIN | 16 << SH_CLASS_HUB_SHIFT)

typedef struct {
    size_t   n[SH_FEAT_NTYPES];
    uint32_t tf_sum[SH_FEAT_NTYPES];
    uint32_t max_tf;
} census_t;

static void
count_one(void *arg, uint64_t feature, unsigned type, uint32_t tf)
{
    census_t *c = arg;

    assert_true(type < SH_FEAT_NTYPES);
    c->n[type]++;
    c->tf_sum[type] += tf;
    if (tf > c->max_tf) {
        c->max_tf = tf;
    }
}

static census_t
census(const sh_features_t *f)
{
    census_t c;

    memset(&c, 0, sizeof(c));
    sh_features_foreach(f, count_one, &c);
    return c;
}

/* a b a c, shingles of 2: words a (2), b, c; shingles ab, ba, ac. */
static void
test_words_and_shingles(void **state)
{
    sh_features_t *f = sh_features_new(2, 1000);
    census_t       c;

    (void) state;
    sh_features_term(f, 0xa, SH_CLASS_FULL);
    sh_features_term(f, 0xb, SH_CLASS_FULL);
    sh_features_term(f, 0xa, SH_CLASS_FULL);
    sh_features_term(f, 0xc, SH_CLASS_FULL);
    assert_int_equal(sh_features_count(f), 6);
    c = census(f);
    assert_int_equal(c.n[SH_FEAT_WORD], 3);
    assert_int_equal(c.tf_sum[SH_FEAT_WORD], 4);
    assert_int_equal(c.n[SH_FEAT_SHINGLE], 3);
    assert_int_equal(c.tf_sum[SH_FEAT_SHINGLE], 3);
    assert_int_equal(c.max_tf, 2);
    assert_false(sh_features_truncated(f));
    assert_false(sh_features_failed(f));
    sh_features_free(f);

    /* shingle 1: words only */
    f = sh_features_new(1, 1000);
    sh_features_term(f, 0xa, SH_CLASS_FULL);
    sh_features_term(f, 0xb, SH_CLASS_FULL);
    sh_features_term(f, 0xa, SH_CLASS_FULL);
    assert_int_equal(sh_features_count(f), 2);
    c = census(f);
    assert_int_equal(c.n[SH_FEAT_SHINGLE], 0);
    sh_features_free(f);
}

/* Past the cap a new feature is ignored and the table says truncated;
 * those already in keep counting.  Reset empties it, cap and all. */
static void
test_cap_and_reset(void **state)
{
    sh_features_t *f = sh_features_new(1, 16);
    census_t       c;
    uint64_t       t;

    (void) state;
    for (t = 1; t <= 100; t++) {
        sh_features_term(f, t * 0x9e3779b97f4a7c15ull, SH_CLASS_FULL);
    }
    assert_int_equal(sh_features_count(f), 16);
    assert_true(sh_features_truncated(f));
    sh_features_term(f, 1 * 0x9e3779b97f4a7c15ull, SH_CLASS_FULL);
    c = census(f);
    assert_int_equal(c.n[SH_FEAT_WORD], 16);
    assert_int_equal(c.tf_sum[SH_FEAT_WORD], 17);   /* the first counted */

    sh_features_reset(f);
    assert_int_equal(sh_features_count(f), 0);
    assert_false(sh_features_truncated(f));
    sh_features_term(f, 42, SH_CLASS_FULL);
    assert_int_equal(sh_features_count(f), 1);
    sh_features_free(f);
}

/* The reference: every feature added plainly with its formula weight. */
typedef struct {
    sh_acc_t    *acc;
    const float *tw;
    float        scale;     /* the block weight, all blocks alike */
} ref_t;

static void
add_plainly(void *arg, uint64_t feature, unsigned type, uint32_t tf)
{
    ref_t *r = arg;
    float  m = (float) tf * r->scale;

    sh_acc_add(r->acc, feature, r->tw[type] * (m > 1.0f ? 1.0f + logf(m)
                                                        : m));
}

static void
assert_acc_near(const sh_acc_t *a, const sh_acc_t *b)
{
    int j;

    assert_float_equal(a->norm2, b->norm2, 1e-6 * (1 + b->norm2));
    for (j = 0; j < SH_BITS; j++) {
        assert_float_equal(a->w[j], b->w[j], 1e-3 * (1 + fabs(b->w[j])));
    }
}

static void
weigh_against_reference(unsigned cls, float outside, float scale)
{
    float          tw[SH_FEAT_NTYPES] = { 1.25f, 1.0f };
    sh_features_t *f = sh_features_new(3, 100000);
    sh_acc_t       got, want;
    ref_t          r = { &want, tw, scale };
    size_t         i;

    for (i = 0; i < 3000; i++) {
        /* a vocabulary of 700 words, some frequent */
        uint64_t t = (rnd() % 4 == 0 ? rnd() % 20 : rnd() % 700) + 1;

        sh_features_term(f, t * 0x9e3779b97f4a7c15ull, cls);
    }
    sh_acc_init(&got);
    sh_acc_init(&want);
    sh_features_weigh(f, tw, NULL, outside, 0, &got);
    sh_features_foreach(f, add_plainly, &r);
    assert_acc_near(&got, &want);
    sh_features_free(f);
}

static void
test_weights(void **state)
{
    (void) state;
    weigh_against_reference(MAIN_FULL, 1.0f, 1.0f);
    weigh_against_reference(SH_CLASS_FULL, 1.0f, 1.0f);
    /* half-weight blocks: m = tf / 2 */
    weigh_against_reference(8 | SH_CLASS_MAIN, 1.0f, 0.5f);
    /* outside the main content, counted by `outside` */
    weigh_against_reference(16, 0.25f, 0.25f);
}

/* A block of weight 0 adds nothing at all. */
static void
test_weight_zero_adds_nothing(void **state)
{
    float          tw[SH_FEAT_NTYPES] = { 1.25f, 1.0f };
    sh_features_t *f = sh_features_new(2, 1000);
    sh_acc_t       acc;
    int            i;

    (void) state;
    for (i = 0; i < 50; i++) {
        sh_features_term(f, rnd(), 0 | SH_CLASS_MAIN);
    }
    sh_acc_init(&acc);
    sh_features_weigh(f, tw, NULL, 1.0f, 0, &acc);
    assert_true(acc.norm2 == 0.0);
    for (i = 0; i < SH_BITS; i++) {
        assert_true(acc.w[i] == 0.0f);
    }
    sh_features_free(f);
}

/* The hub weight replaces the block's weight when `hub` is set. */
static void
test_hub_weight(void **state)
{
    float          tw[SH_FEAT_NTYPES] = { 1.0f, 1.0f };
    sh_features_t *f = sh_features_new(1, 1000);
    sh_acc_t       plain, hub;

    (void) state;
    /* weight 0 normally, 16 on a hub page */
    sh_features_term(f, 0x1234, SH_CLASS_MAIN | 16 << SH_CLASS_HUB_SHIFT);
    sh_acc_init(&plain);
    sh_acc_init(&hub);
    sh_features_weigh(f, tw, NULL, 1.0f, 0, &plain);
    sh_features_weigh(f, tw, NULL, 1.0f, 1, &hub);
    assert_true(plain.norm2 == 0.0);
    assert_float_equal(hub.norm2, 1.0, 1e-6);
    sh_features_free(f);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words_and_shingles),
        cmocka_unit_test(test_cap_and_reset),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_weight_zero_adds_nothing),
        cmocka_unit_test(test_hub_weight),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
