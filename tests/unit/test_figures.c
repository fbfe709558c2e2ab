/*
 * test_figures.c -- the console's figures in a file (sh_figures.h): what
 * is written reads back the same; a file is refused, with a reason and
 * nothing allocated, when its MAC is not the key's, when it is of another
 * shape or format, cut short or grown, and -- with a MAC made under the
 * right key, as a writer who has the secret could -- when a field breaks
 * a bound the console relies on: a text without its NUL, a sites' table
 * of another k, more entries than k, repeated or empty entries, counts
 * that do not add up, a decision's event or action out of range.  And
 * sh_topk_restore() gives back the table sh_topk_list() took.
 */
#define TEST_RNG_SEED 0x5f1c0a3e9b7d2486ull
#include "test_util.h"

#include "sh_figures.h"
#include "sh_le.h"
#include "sh_mac.h"

static const unsigned char key[32] = "the zone's figures key, 32 bytes";
static const unsigned char other[32] = "another zone's key, also 32 byte";

/* the module's shape, and a small one for byte-by-byte sweeps */
static const sh_figures_shape_t zone_shape = {
    .nstatus = 9, .nskip = 12, .nev = 11, .nslots = 36, .noutcome = 256,
    .nrule = 1024, .ndecision = 4096, .naction = 3, .k = 64
};
static const sh_figures_shape_t small = {
    .nstatus = 2, .nskip = 1, .nev = 3, .nslots = 2, .noutcome = 2,
    .nrule = 2, .ndecision = 2, .naction = 3, .k = 4
};

/* header offsets (sh_figures.h): shape at 20, ntop at 56, times at 60 */
#define OFF_K       (20 + 4 * 8)
#define OFF_NTOP    56
#define OFF_TABLES  92

static sh_figures_t *
filled(const sh_figures_shape_t *s)
{
    sh_figures_t *f = sh_figures_new(s);
    uint32_t      i;

    assert_non_null(f);
    f->saved = 1800000000;
    f->since = 1700000000;
    for (i = 0; i < s->nstatus; i++) {
        f->responses[i] = rnd();
    }
    for (i = 0; i < s->nskip; i++) {
        f->skipped[i] = rnd();
    }
    for (i = 0; i < s->nslots * (1 + s->nev); i++) {
        f->rate[i] = rnd();
    }
    for (i = 0; i < s->noutcome; i++) {
        f->outcome[i].hash = rnd();
        snprintf(f->outcome[i].host, SH_FIGURES_TEXT, "host%u.test", i);
        snprintf(f->outcome[i].rules, SH_FIGURES_TEXT, "drop_param(s%u)", i);
        f->outcome[i].n[0] = i;
    }
    for (i = 0; i < s->nrule; i++) {
        f->rule[i].hash = rnd();
        f->rule[i].rule = rnd();
        f->rule[i].n[2] = i;
    }
    for (i = 0; i < s->ndecision; i++) {
        f->decision[i].keyhash = rnd() | 1;
        f->decision[i].original = rnd();
        f->decision[i].time = (uint32_t) rnd();
        f->decision[i].distance = i % 2 ? SH_FIGURES_NO_DIST : i % 65;
        f->decision[i].status = (uint8_t) (i % s->nev);
        f->decision[i].action = (uint8_t) (i % s->naction);
    }
    f->ntop = s->k;
    f->total = 0;
    for (i = 0; i < s->k; i++) {
        f->top[i].hash = (uint64_t) i + 1;
        f->top[i].count = 100 + i;
        f->top[i].error = i;
        f->top[i].c[0] = 7;
        snprintf(f->top[i].host, sizeof(f->top[i].host), "site%u.test", i);
        f->total += f->top[i].count;
    }
    f->replaced = 5;
    return f;
}

static unsigned char *
encoded(const sh_figures_t *f, size_t *len)
{
    unsigned char *buf;

    assert_int_equal(sh_figures_encode(f, key, sizeof(key), &buf, len), 0);
    assert_int_equal(*len, sh_figures_size(&f->shape, f->ntop));
    return buf;
}

/* the MAC again under key, as a writer who has the secret would */
static void
remac(unsigned char *buf, size_t len)
{
    sh_mac_part_t part = { buf, len - SH_MAC_FULL };

    assert_int_equal(sh_mac(buf + len - SH_MAC_FULL, key, sizeof(key),
                            &part, 1), 0);
}

static void
refused(const unsigned char *buf, size_t len, const sh_figures_shape_t *s,
        const char *why)
{
    char          err[256] = "";
    int           old = -1;
    sh_figures_t *f;

    f = sh_figures_decode(buf, len, s, key, sizeof(key), &old, err,
                          sizeof(err));
    if (f != NULL) {
        sh_figures_free(f);
        fail_msg("accepted; expected refused for \"%s\"", why);
    }
    if (strstr(err, why) == NULL) {
        fail_msg("refused for \"%s\", expected \"%s\"", err, why);
    }
}

static void
assert_same(const sh_figures_t *a, const sh_figures_t *b)
{
    const sh_figures_shape_t *s = &a->shape;

    assert_memory_equal(&a->shape, &b->shape, sizeof(a->shape));
    assert_true(a->saved == b->saved && a->since == b->since);
    assert_true(a->total == b->total && a->replaced == b->replaced);
    assert_int_equal(a->ntop, b->ntop);
    assert_memory_equal(a->responses, b->responses, 8 * s->nstatus);
    assert_memory_equal(a->skipped, b->skipped, 8 * s->nskip);
    assert_memory_equal(a->rate, b->rate, 8 * s->nslots * (1 + s->nev));
    assert_memory_equal(a->outcome, b->outcome,
                        s->noutcome * sizeof(*a->outcome));
    assert_memory_equal(a->rule, b->rule, s->nrule * sizeof(*a->rule));
    assert_memory_equal(a->decision, b->decision,
                        s->ndecision * sizeof(*a->decision));
    assert_memory_equal(a->top, b->top, a->ntop * sizeof(*a->top));
}

static void
test_round_trip(void **state)
{
    sh_figures_t  *f, *g;
    unsigned char *buf;
    size_t         len;
    char           err[256];
    int            old;

    (void) state;

    f = filled(&zone_shape);
    buf = encoded(f, &len);
    g = sh_figures_decode(buf, len, &zone_shape, key, sizeof(key), &old,
                          err, sizeof(err));
    if (g == NULL) {
        fail_msg("refused: %s", err);
    }
    assert_int_equal(old, 0);
    assert_same(f, g);
    sh_figures_free(g);

    /* an empty sites' table too */
    f->ntop = 0;
    f->total = 0;
    free(buf);
    buf = encoded(f, &len);
    g = sh_figures_decode(buf, len, &zone_shape, key, sizeof(key), &old,
                          err, sizeof(err));
    assert_non_null(g);
    assert_same(f, g);
    sh_figures_free(g);
    free(buf);
    sh_figures_free(f);
}

/* a text's bytes after its NUL are not written: no stale memory leaves */
static void
test_text_padding(void **state)
{
    sh_figures_t  *f, *g;
    unsigned char *buf;
    size_t         len;
    char           err[256];
    int            old;

    (void) state;

    f = filled(&small);
    memset(f->outcome[0].host, 'x', SH_FIGURES_TEXT);
    memcpy(f->outcome[0].host, "a.test", 7);
    buf = encoded(f, &len);
    g = sh_figures_decode(buf, len, &small, key, sizeof(key), &old, err,
                          sizeof(err));
    assert_non_null(g);
    assert_string_equal(g->outcome[0].host, "a.test");
    assert_int_equal(g->outcome[0].host[SH_FIGURES_TEXT - 1], 0);
    sh_figures_free(g);
    free(buf);

    /* a text without its NUL is not written at all */
    memset(f->top[1].host, 'x', sizeof(f->top[1].host));
    assert_int_equal(sh_figures_encode(f, key, sizeof(key), &buf, &len), -1);
    assert_null(buf);
    sh_figures_free(f);
}

static void
test_key(void **state)
{
    sh_figures_t  *f, *g;
    unsigned char *buf;
    size_t         len;
    char           err[256];
    int            old;

    (void) state;

    f = filled(&small);
    buf = encoded(f, &len);
    g = sh_figures_decode(buf, len, &small, other, sizeof(other), &old, err,
                          sizeof(err));
    assert_null(g);
    assert_non_null(strstr(err, "MAC does not match"));
    free(buf);
    sh_figures_free(f);
}

/* every byte flipped, every length short or long: refused, and a MAC
 * made afresh over a flipped byte is still checked field by field */
static void
test_every_byte(void **state)
{
    sh_figures_t  *f, *g;
    unsigned char *buf, *copy;
    size_t         len, i;
    char           err[256];
    int            old;

    (void) state;

    f = filled(&small);
    buf = encoded(f, &len);
    copy = malloc(len + 1);
    assert_non_null(copy);

    for (i = 0; i < len; i++) {
        memcpy(copy, buf, len);
        copy[i] ^= 0x80;
        g = sh_figures_decode(copy, len, &small, key, sizeof(key), &old,
                              err, sizeof(err));
        assert_null(g);
        assert_true(err[0] != '\0');

        remac(copy, len);
        g = sh_figures_decode(copy, len, &small, key, sizeof(key), &old,
                              err, sizeof(err));
        sh_figures_free(g);         /* a counter may take any value */
    }
    for (i = 0; i <= len + 1; i++) {
        if (i == len) {
            continue;
        }
        memcpy(copy, buf, i < len ? i : len);
        g = sh_figures_decode(copy, i, &small, key, sizeof(key), &old, err,
                              sizeof(err));
        assert_null(g);
        assert_true(err[0] != '\0');
    }

    free(copy);
    free(buf);
    sh_figures_free(f);
}

static void
test_shape_and_format(void **state)
{
    sh_figures_t       *f;
    unsigned char      *buf;
    size_t              len;
    char                err[256];
    int                 old;
    sh_figures_shape_t  s = small;
    static const char   v1[] = "simhash-figures1 and a memory image";

    (void) state;

    f = filled(&small);
    buf = encoded(f, &len);

    s.noutcome++;
    refused(buf, len, &s, "of another shape");

    /* k = 2^27, with the MAC made afresh: another shape, nothing sized
     * from it */
    sh_le_put(buf + OFF_K, 1u << 27, 4);
    remac(buf, len);
    refused(buf, len, &small, "of another shape");
    sh_le_put(buf + OFF_K, small.k, 4);

    /* more sites than k: refused before any is read */
    sh_le_put(buf + OFF_NTOP, small.k + 1, 4);
    remac(buf, len);
    refused(buf, len, &small, "5 sites, more than the zone's 4");
    sh_le_put(buf + OFF_NTOP, small.k, 4);

    sh_le_put(buf + 16, SH_FIGURES_VERSION + 1, 4);
    remac(buf, len);
    refused(buf, len, &small, "of format 3");

    /* format 1, the memory image: recognised, refused, never read */
    assert_null(sh_figures_decode((const unsigned char *) v1, sizeof(v1),
                                  &small, key, sizeof(key), &old, err,
                                  sizeof(err)));
    assert_int_equal(old, 1);
    assert_non_null(strstr(err, "older format"));

    refused((const unsigned char *) "", 0, &small, "not a file");

    /* a shape out of bounds is no zone's */
    s = small;
    s.k = SH_TOPK_MAX + 1;
    assert_null(sh_figures_new(&s));
    assert_int_equal(sh_figures_size(&s, 0), 0);
    s = small;
    s.ndecision = 0;
    assert_int_equal(sh_figures_size(&s, 0), 0);

    free(buf);
    sh_figures_free(f);
}

/* the offset of outcome i's host, of site i's host, of decision i */
static size_t
off_outcome(const sh_figures_shape_t *s, uint32_t i)
{
    return OFF_TABLES + 8 * (s->nstatus + s->nskip)
           + 8 * s->nslots * (1 + s->nev) + (size_t) i * 160 + 8;
}

static size_t
off_decision(const sh_figures_shape_t *s, uint32_t i)
{
    return off_outcome(s, s->noutcome) - 8 + 40 * s->nrule + 28 * i;
}

static size_t
off_site(const sh_figures_shape_t *s, uint32_t i)
{
    return off_decision(s, s->ndecision) + 136 * i;
}

/* fields that break a bound, under a good MAC: each refused */
static void
test_fields(void **state)
{
    sh_figures_t  *f;
    unsigned char *buf, *copy;
    size_t         len;

    (void) state;

    f = filled(&zone_shape);
    buf = encoded(f, &len);
    copy = malloc(len);
    assert_non_null(copy);

#define BREAK(what, why)                                                  \
    memcpy(copy, buf, len);                                               \
    what;                                                                 \
    remac(copy, len);                                                     \
    refused(copy, len, &zone_shape, why)

    /* outcome slots without their NUL: the console's strlen ran on */
    BREAK(memset(copy + off_outcome(&zone_shape, 7), 'A', 64),
          "outcome 7: a text without its end");
    BREAK(memset(copy + off_outcome(&zone_shape, 255) + 64, 'A', 64),
          "outcome 255: a text without its end");
    BREAK(memset(copy + off_site(&zone_shape, 3) + 72, 'A', 64),
          "site 3: a host without its end");

    /* the sites' table */
    BREAK(sh_le_put(copy + off_site(&zone_shape, 5), 1, 8),
          "does not hold together");                    /* repeated */
    BREAK(sh_le_put(copy + off_site(&zone_shape, 5), 0, 8),
          "does not hold together");                    /* empty */
    BREAK(sh_le_put(copy + off_site(&zone_shape, 5) + 8, 0, 8),
          "does not hold together");                    /* the sum */
    BREAK(sh_le_put(copy + off_site(&zone_shape, 5) + 16, 1000, 8),
          "does not hold together");                    /* error > count */

    /* decisions */
    BREAK(copy[off_decision(&zone_shape, 9) + 26] = 11,
          "decision 9: an event");
    BREAK(copy[off_decision(&zone_shape, 9) + 27] = 3,
          "decision 9: an event, action");
    BREAK(sh_le_put(copy + off_decision(&zone_shape, 9) + 24, 65, 2),
          "decision 9");

    /* times */
    BREAK(sh_le_put(copy + 60 + 8, (uint64_t) 1 << 63, 8), "its times");
    BREAK(sh_le_put(copy + 60, UINT64_MAX, 8), "its times");

#undef BREAK

    free(copy);
    free(buf);
    sh_figures_free(f);
}

static void
test_topk_restore(void **state)
{
    static uint64_t  a[8192], b[8192];
    sh_topk_t       *t, *u;
    sh_topk_entry_t  e[64], e2[64], bad[2];
    sh_topk_stats_t  st, st2;
    size_t           n, i;
    char             host[32];
    uint64_t         add[SH_TOPK_NCOUNT] = { 1, 2, 3, 4, 5, 6 };

    (void) state;

    t = sh_topk_init(a, sizeof(a), 16, key, sizeof(key));
    u = sh_topk_init(b, sizeof(b), 16, key, sizeof(key));
    assert_non_null(t);
    assert_non_null(u);
    for (i = 0; i < 5000; i++) {
        snprintf(host, sizeof(host), "h%zu.test", rnd() % 40);
        sh_topk_add(t, host, strlen(host), rnd() % 5, add);
    }
    n = sh_topk_list(t, e, 64);
    sh_topk_stats(t, &st);
    assert_int_equal(sh_topk_restore(u, e, n, st.total, st.replaced), 0);
    assert_int_equal(sh_topk_list(u, e2, 64), n);
    assert_memory_equal(e, e2, n * sizeof(e[0]));
    sh_topk_stats(u, &st2);
    assert_memory_equal(&st, &st2, sizeof(st));

    /* and it goes on as the original does */
    sh_topk_add(t, "h3.test", 7, 9, add);
    sh_topk_add(u, "h3.test", 7, 9, add);
    assert_int_equal(sh_topk_list(t, e, 64), sh_topk_list(u, e2, 64));
    assert_memory_equal(e, e2, n * sizeof(e[0]));

    /* refused, the table left as it was */
    memset(bad, 0, sizeof(bad));
    bad[0].hash = bad[1].hash = 9;
    bad[0].count = bad[1].count = 1;
    assert_int_equal(sh_topk_restore(u, bad, 2, 2, 0), -1);
    bad[1].hash = 10;
    memset(bad[1].host, 'x', sizeof(bad[1].host));
    assert_int_equal(sh_topk_restore(u, bad, 2, 2, 0), -1);
    assert_int_equal(sh_topk_restore(u, e, 17, st.total, 0), -1);
    assert_int_equal(sh_topk_list(u, e2, 64), n);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_text_padding),
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_every_byte),
        cmocka_unit_test(test_shape_and_format),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_topk_restore),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
