/*
 * test_index.c -- the PSM index against brute force on small sets, every
 * lookup mode, eviction, remove, update, relocation, degenerate inputs.
 */
#define TEST_RNG_SEED 0x243f6a8885a308d3ull
#include "test_util.h"
#include "test_sets.h"

#include <math.h>

#include "sh_brute.h"
#include "sh_index.h"
#include "sh_simhash.h"

typedef struct {
    void       *mem;
    sh_index_t *ix;
} fixture_t;

static sh_index_t *
new_index(fixture_t *f, uint32_t capacity, unsigned t)
{
    size_t size = sh_index_region_size(capacity);
    char   err[256];

    assert_true(size > 0);
    assert_int_equal(posix_memalign(&f->mem, 64, size), 0);
    f->ix = sh_index_init(f->mem, size, t, 42, err, sizeof(err));
    assert_non_null(f->ix);
    return f->ix;
}

static void
check_ok(const sh_index_t *ix)
{
    char err[256];

    if (sh_index_check(ix, err, sizeof(err)) != 0) {
        fail_msg("index check: %s", err);
    }
}

static void
test_sizes(void **state)
{
    uint32_t c;

    for (c = 1; c < 5000; c = c * 3 + 1) {
        size_t sz = sh_index_region_size(c);

        uint32_t got = sh_index_capacity_for(sz);

        /* The largest capacity that fits (alignment may round up). */
        assert_true(sz > 0);
        assert_true(got >= c);
        assert_true(sh_index_region_size(got) <= sz);
        assert_true(sh_index_region_size(got + 1) > sz);
        assert_true(sh_index_region_size(c + 64) > sz);
    }
    assert_int_equal(sh_index_capacity_for(10), 0);
}

static void
test_init_errors(void **state)
{
    char  err[256] = "";
    void *mem = malloc(4096);

    assert_null(sh_index_init(mem, 64, 0, 0, err, sizeof(err)));
    assert_true(strlen(err) > 0);
    assert_null(sh_index_init(mem, 4096, 41, 0, err, sizeof(err)));
    /* Garbage is not an index. */
    memset(mem, 0xa5, 4096);
    assert_null(sh_index_attach(mem, 4096, err, sizeof(err)));
    free(mem);
}

static void
test_memory_budget(void **state)
{
    fixture_t f;
    sh_index_stats_t st;

    new_index(&f, 1u << 16, 0);
    sh_index_stats(f.ix, &st);
    assert_int_equal(st.capacity, 1u << 16);
    assert_int_equal(st.t, 15);       /* log2 capacity - 1 */
    /* Fingerprint structure <= 1.25 x 8 bytes per document. */
    assert_true(st.fingerprint_bytes <= (size_t) st.capacity * 10);
    assert_true(st.document_bytes > 0);
    free(f.mem);
}

/*
 * With every subset of the header probed (t small enough), PSM is exact:
 * each mode must agree with brute force.
 */
static void
test_exhaustive_equals_bruteforce(void **state)
{
    fixture_t  f;
    sh_brute_t br;
    sh_match_t a[512], b[512];
    sh_lookup_opts_t o;
    float      w[64];
    uint64_t   stored[3000];
    unsigned   i, q, h, j;

    new_index(&f, 3000, 9);
    assert_int_equal(sh_brute_init(&br, 3000), 0);
    for (i = 0; i < 3000; i++) {
        /* Clusters of near-duplicates around 300 centres. */
        uint64_t x = i < 300 ? rnd() : flip_random(stored[rnd() % 300],
                                                   (unsigned) (rnd() % 6));
        uint32_t ref = sh_index_insert(f.ix, x, NULL);

        stored[i] = x;
        assert_int_equal(ref, i);
        assert_int_equal(sh_brute_add(&br, x, ref), 0);
    }
    check_ok(f.ix);

    sh_lookup_opts_init(&o);
    o.probes = SH_PROBES_MAX;
    for (q = 0; q < 400; q++) {
        uint64_t x = flip_random(stored[rnd() % 3000],
                                 (unsigned) (rnd() % 5));

        for (j = 0; j < 64; j++) {
            w[j] = (float) ((double) (rnd() % 2001) / 1000.0 - 1.0);
        }
        for (h = 0; h <= 4; h++) {
            size_t na, nb;

            o.h = h;
            o.mode = SH_MATCH_ALL;
            na = sh_index_lookup(f.ix, x, (q & 1) ? w : NULL, &o, a, 512,
                                 NULL);
            nb = sh_brute_lookup(&br, x, h, SH_MATCH_ALL, b, 512);
            assert_int_equal(na, nb);
            qsort(a, na, sizeof(a[0]), cmp_ref);
            qsort(b, nb, sizeof(b[0]), cmp_ref);
            for (j = 0; j < na; j++) {
                assert_int_equal(a[j].ref, b[j].ref);
                assert_int_equal(a[j].distance, b[j].distance);
                assert_true(a[j].hash == b[j].hash);
            }

            o.mode = SH_MATCH_FIRST;
            na = sh_index_lookup(f.ix, x, w, &o, a, 1, NULL);
            assert_int_equal(na, nb > 0);
            if (na) {
                assert_true(a[0].distance <= h);
                assert_int_equal(sh_distance(a[0].hash, x), a[0].distance);
                assert_true(a[0].hash == stored[a[0].ref]);
            }

            o.mode = SH_MATCH_CLOSEST;
            na = sh_index_lookup(f.ix, x, w, &o, a, 1, NULL);
            nb = sh_brute_lookup(&br, x, h, SH_MATCH_CLOSEST, b, 1);
            assert_int_equal(na, nb);
            if (na) {
                assert_int_equal(a[0].distance, b[0].distance);
            }
        }
    }
    /* ALL keeps counting past max. */
    o.mode = SH_MATCH_ALL;
    o.h = 64 > SH_H_MAX ? SH_H_MAX : 64;
    {
        size_t nb = sh_brute_lookup(&br, stored[0], SH_H_MAX, SH_MATCH_ALL,
                                    b, 512);
        size_t na = sh_index_lookup(f.ix, stored[0], NULL, &o, a, 1, NULL);

        assert_int_equal(na, nb);
    }
    sh_brute_free(&br);
    free(f.mem);
}

/*
 * With weights, the volatile bits are probed first: a near-duplicate
 * whose header differs in the two lowest-|W| bits is found with few
 * probes, and one differing in the two heaviest bits is not.
 */
static void
test_volatile_bits_first(void **state)
{
    fixture_t f;
    sh_lookup_opts_t o;
    sh_match_t m;
    sh_lookup_stats_t st;
    float    w[64];
    unsigned i, light1, light2, heavy1, heavy2;
    uint32_t ref;
    uint64_t x, y;

    new_index(&f, 1u << 14, 0);
    for (i = 0; i < 10000; i++) {
        sh_index_insert(f.ix, rnd(), NULL);
    }
    for (i = 0; i < 64; i++) {
        w[i] = 0.5f + (float) i / 64.0f;          /* all fairly heavy */
    }
    light1 = 63 - 5;
    light2 = 63 - 9;
    heavy1 = 63;
    heavy2 = 62;
    w[light1] = 0.01f;
    w[light2] = -0.02f;
    w[heavy1] = 3.0f;
    w[heavy2] = -3.5f;

    x = rnd();
    y = x ^ (1ull << light1) ^ (1ull << light2) ^ 1;    /* distance 3 */
    ref = sh_index_insert(f.ix, y, NULL);

    sh_lookup_opts_init(&o);
    o.probes = 5;
    assert_int_equal(sh_index_lookup(f.ix, x, w, &o, &m, 1, &st), 1);
    assert_true(m.hash == y);
    assert_true(st.probes <= 6);

    /* Now the near-duplicate differs in the two heaviest header bits. */
    assert_int_equal(sh_index_remove(f.ix, ref), 0);
    y = x ^ (1ull << heavy1) ^ (1ull << heavy2) ^ 1;
    sh_index_insert(f.ix, y, NULL);
    assert_int_equal(sh_index_lookup(f.ix, x, w, &o, &m, 1, &st), 0);
    o.probes = SH_PROBES_MAX;
    assert_int_equal(sh_index_lookup(f.ix, x, w, &o, &m, 1, &st), 1);
    assert_true(m.hash == y);
    free(f.mem);
}

/* A full index evicts the oldest document and keeps working. */
static void
test_eviction_oldest_first(void **state)
{
    fixture_t f;
    uint64_t  hashes[1000];
    uint32_t  refs[1000], ev;
    unsigned  i;
    sh_index_stats_t st;
    sh_lookup_opts_t o;
    sh_match_t m;

    new_index(&f, 100, 0);
    for (i = 0; i < 1000; i++) {
        hashes[i] = rnd();
        refs[i] = sh_index_insert(f.ix, hashes[i], &ev);
        assert_true(refs[i] < 100);
        if (i < 100) {
            assert_int_equal(ev, SH_NOREF);
        } else {
            assert_int_equal(ev, refs[i - 100]);    /* the oldest went */
        }
        if (i % 97 == 0) {
            check_ok(f.ix);
        }
    }
    sh_index_stats(f.ix, &st);
    assert_int_equal(st.entries, 100);
    assert_int_equal(st.evictions, 900);
    check_ok(f.ix);

    sh_lookup_opts_init(&o);
    o.h = 0;
    for (i = 0; i < 1000; i++) {
        size_t n = sh_index_lookup(f.ix, hashes[i], NULL, &o, &m, 1, NULL);

        assert_int_equal(n, i >= 900);
        if (n) {
            assert_int_equal(m.ref, refs[i]);
        }
    }
    free(f.mem);
}

typedef struct {
    uint64_t expect[200];
    unsigned n;
    unsigned stop_after;
} visit_t;

static int
visit(void *arg, uint32_t ref, uint64_t hash)
{
    visit_t *v = arg;

    assert_true(hash == v->expect[v->n]);
    v->n++;
    return v->n == v->stop_after;
}

static void
test_foreach_touch_update(void **state)
{
    fixture_t f;
    visit_t   v;
    uint32_t  r[5];
    uint64_t  h[5], got;
    unsigned  i;

    new_index(&f, 50, 0);
    for (i = 0; i < 5; i++) {
        h[i] = rnd();
        r[i] = sh_index_insert(f.ix, h[i], NULL);
    }
    assert_int_equal(sh_index_touch(f.ix, r[1]), 0);    /* 0 2 3 4 1 */
    h[3] = rnd();
    assert_int_equal(sh_index_update(f.ix, r[3], h[3]), 0); /* 0 2 4 1 3 */
    check_ok(f.ix);
    memset(&v, 0, sizeof(v));
    v.expect[0] = h[0];
    v.expect[1] = h[2];
    v.expect[2] = h[4];
    v.expect[3] = h[1];
    v.expect[4] = h[3];
    sh_index_foreach(f.ix, visit, &v);
    assert_int_equal(v.n, 5);

    v.n = 0;
    v.stop_after = 2;
    sh_index_foreach(f.ix, visit, &v);
    assert_int_equal(v.n, 2);

    assert_int_equal(sh_index_get(f.ix, r[3], &got), 0);
    assert_true(got == h[3]);
    assert_int_equal(sh_index_get(f.ix, 49, &got), -1);
    assert_int_equal(sh_index_touch(f.ix, 49), -1);
    assert_int_equal(sh_index_update(f.ix, 1000, 1), -1);
    free(f.mem);
}

static void
test_remove(void **state)
{
    fixture_t  f;
    uint64_t   h[2000];
    uint32_t   r[2000];
    unsigned   i;
    sh_lookup_opts_t o;
    sh_match_t m[8];
    sh_index_stats_t st;

    new_index(&f, 2000, 0);
    for (i = 0; i < 2000; i++) {
        h[i] = (i % 4 == 0 && i > 0) ? h[i - 1] : rnd();   /* some equal */
        r[i] = sh_index_insert(f.ix, h[i], NULL);
    }
    for (i = 0; i < 2000; i += 2) {
        assert_int_equal(sh_index_remove(f.ix, r[i]), 0);
        assert_int_equal(sh_index_remove(f.ix, r[i]), -1);
    }
    check_ok(f.ix);
    sh_index_stats(f.ix, &st);
    assert_int_equal(st.entries, 1000);

    sh_lookup_opts_init(&o);
    o.h = 0;
    o.mode = SH_MATCH_ALL;
    for (i = 0; i < 2000; i++) {
        size_t n = sh_index_lookup(f.ix, h[i], NULL, &o, m, 8, NULL);
        size_t j, mine = 0;

        for (j = 0; j < n && j < 8; j++) {
            mine += m[j].ref == r[i];
        }
        assert_int_equal(mine, i % 2);
    }
    /* Freed refs are reused. */
    for (i = 0; i < 1000; i++) {
        assert_true(sh_index_insert(f.ix, rnd(), NULL) < 2000);
    }
    check_ok(f.ix);
    free(f.mem);
}

/*
 * Pathological inputs: hundreds of equal fingerprints at the very top of
 * the space overflow the tail and force left shifts; at the bottom, long
 * runs.  Everything must stay findable and consistent.
 */
static void
test_degenerate_clusters(void **state)
{
    fixture_t f;
    uint32_t  r[600];
    unsigned  i;
    sh_lookup_opts_t o;
    sh_match_t m[1024];

    new_index(&f, 600, 0);
    for (i = 0; i < 600; i++) {
        uint64_t x = i % 3 == 0 ? UINT64_MAX
                   : i % 3 == 1 ? UINT64_MAX - 1 - (rnd() % 16)
                   : rnd() % 8;

        r[i] = sh_index_insert(f.ix, x, NULL);
        if (i % 50 == 0) {
            check_ok(f.ix);
        }
    }
    check_ok(f.ix);
    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_ALL;
    o.h = 0;
    /* 200 documents of one fingerprint: SH_INDEX_RUN_MAX are searched */
    assert_int_equal(sh_index_lookup(f.ix, UINT64_MAX, NULL, &o, m, 1024,
                                     NULL), SH_INDEX_RUN_MAX);
    o.h = 3;
    assert_true(sh_index_lookup(f.ix, 0, NULL, &o, m, 1024, NULL)
                >= SH_INDEX_RUN_MAX);
    for (i = 0; i < 600; i += 3) {
        assert_int_equal(sh_index_remove(f.ix, r[i]), 0);
        if (i % 60 == 0) {
            check_ok(f.ix);
        }
    }
    o.h = 0;
    assert_int_equal(sh_index_lookup(f.ix, UINT64_MAX, NULL, &o, m, 1024,
                                     NULL), 0);
    /* Keep inserting past capacity: evictions through the cluster. */
    for (i = 0; i < 1500; i++) {
        sh_index_insert(f.ix, i % 2 ? UINT64_MAX : UINT64_MAX - 1, NULL);
    }
    check_ok(f.ix);
    assert_int_equal(sh_index_lookup(f.ix, UINT64_MAX, NULL, &o, m, 1024,
                                     NULL), SH_INDEX_RUN_MAX);
    free(f.mem);
}

/* The region holds no pointers: a byte copy elsewhere is the same index. */
static void
test_relocation(void **state)
{
    fixture_t f;
    sh_index_stats_t st;
    void     *copy;
    sh_index_t *ix2;
    char      err[256];
    unsigned  i;
    uint64_t  h[500];
    sh_lookup_opts_t o;
    sh_match_t m;

    new_index(&f, 500, 0);
    for (i = 0; i < 500; i++) {
        h[i] = rnd();
        sh_index_insert(f.ix, h[i], NULL);
    }
    sh_index_stats(f.ix, &st);
    assert_int_equal(posix_memalign(&copy, 64, st.region_bytes + 64), 0);
    memcpy(copy, f.mem, st.region_bytes);
    memset(f.mem, 0, st.region_bytes);
    free(f.mem);

    ix2 = sh_index_attach(copy, st.region_bytes + 64, err, sizeof(err));
    assert_non_null(ix2);
    check_ok(ix2);
    assert_true(sh_index_seed_digest(ix2) == 42);
    sh_lookup_opts_init(&o);
    for (i = 0; i < 500; i++) {
        assert_int_equal(sh_index_lookup(ix2, h[i], NULL, &o, &m, 1, NULL),
                         1);
    }
    /* Too small a region, or a damaged header, is refused. */
    assert_null(sh_index_attach(copy, st.region_bytes - 1, err,
                                sizeof(err)));
    ((uint32_t *) copy)[5] ^= 0x10;     /* capacity */
    assert_null(sh_index_attach(copy, st.region_bytes + 64, err,
                                sizeof(err)));
    free(copy);
}

/* The learner counts confirmed pairs over the bits below the header. */
static void
test_learner_counts(void **state)
{
    fixture_t f;
    sh_lookup_opts_t o;
    sh_learn_counts_t c;
    sh_match_t m;
    float     w[64];
    unsigned  i, b;
    uint64_t  seen = 0, flipped = 0, h[100];

    new_index(&f, 1024, 0);
    for (i = 0; i < 64; i++) {
        w[i] = 0.3f;
    }
    for (i = 0; i < 100; i++) {
        h[i] = rnd();
        sh_index_insert(f.ix, h[i], NULL);
    }
    sh_lookup_opts_init(&o);
    o.learn = 1;
    for (i = 0; i < 100; i++) {
        assert_int_equal(sh_index_lookup(f.ix, h[i] ^ 3, w,
                                         &o, &m, 1, NULL), 1);
    }
    sh_index_learn_counts(f.ix, &c);
    assert_int_equal(c.pairs, 100);
    for (b = 0; b < SH_LEARN_BINS; b++) {
        seen += c.seen[b];
        flipped += c.flipped[b];
    }
    assert_int_equal(seen, 100 * (64 - 9));      /* t = 9 for 1024 */
    assert_int_equal(flipped, 200);
    assert_int_equal(c.seen[(unsigned) (0.3f / SH_LEARN_WIDTH)], seen);
    sh_index_learn_reset(f.ix);
    sh_index_learn_counts(f.ix, &c);
    assert_int_equal(c.pairs, 0);
    free(f.mem);
}

/* Random operations against a model, checking the structure as we go. */
static void
test_random_operations(void **state)
{
    fixture_t  f;
    uint64_t   model[300];
    int        live[300];
    unsigned   i;
    sh_lookup_opts_t o;
    sh_match_t m[300];

    memset(live, 0, sizeof(live));
    new_index(&f, 300, 6);
    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_ALL;
    o.h = 0;
    for (i = 0; i < 20000; i++) {
        unsigned op = (unsigned) (rnd() % 10);
        uint32_t ref = (uint32_t) (rnd() % 300), ev;
        /* few distinct top bits: long runs and many equal values */
        uint64_t x = (rnd() % 64) << 58 | (rnd() % 4);

        if (op < 5) {
            ref = sh_index_insert(f.ix, x, &ev);
            if (ev != SH_NOREF) {
                assert_true(live[ev]);
                live[ev] = 0;
            }
            assert_false(live[ref]);
            live[ref] = 1;
            model[ref] = x;
        } else if (op < 8) {
            assert_int_equal(sh_index_remove(f.ix, ref), live[ref] ? 0 : -1);
            live[ref] = 0;
        } else if (op < 9) {
            assert_int_equal(sh_index_update(f.ix, ref, x),
                             live[ref] ? 0 : -1);
            if (live[ref]) {
                model[ref] = x;
            }
        } else if (live[ref]) {
            size_t n = sh_index_lookup(f.ix, model[ref], NULL, &o, m, 300,
                                       NULL), j, hit = 0;

            for (j = 0; j < n; j++) {
                hit += m[j].ref == ref;
            }
            assert_int_equal(hit, 1);
        }
        if (i % 1000 == 0) {
            check_ok(f.ix);
        }
    }
    check_ok(f.ix);
    free(f.mem);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_init_errors),
        cmocka_unit_test(test_memory_budget),
        cmocka_unit_test(test_exhaustive_equals_bruteforce),
        cmocka_unit_test(test_volatile_bits_first),
        cmocka_unit_test(test_eviction_oldest_first),
        cmocka_unit_test(test_foreach_touch_update),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_degenerate_clusters),
        cmocka_unit_test(test_relocation),
        cmocka_unit_test(test_learner_counts),
        cmocka_unit_test(test_random_operations),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
