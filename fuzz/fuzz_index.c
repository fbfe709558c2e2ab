/*
 * fuzz_index.c -- the PSM index against a brute-force model.
 *
 * Input: two bytes of capacity (1 .. 64 documents, or with the top bit set
 * 1 .. FIX_CAP_MAX), one of header bits t (the index's choice, or with the
 * top bit set 0 .. FIX_T_MAX, 0 again the index's choice), then operations
 * until the input ends, each an opcode byte and its arguments: insert,
 * fill (many inserts: eviction), remove, update, touch, get, foreach,
 * exact and approximate lookups in every mode, learner reads and resets,
 * relocation to another address, a snapshot round trip, and BPHS and
 * sh_brute built from the model's documents.
 *
 * The model is a plain array by ref: live, fingerprint, age.  After every
 * operation sh_index_check must pass and the index's count, evictions and
 * lookups must be the model's.  Inserts must hand out a free ref and evict
 * exactly the model's oldest document when full; remove, update and touch
 * succeed exactly on live refs.  A lookup that probes every bit subset of
 * the header within h (PSM_A with enough probes: sum of C(t, i), i <= h,
 * at most SH_PROBES_MAX) is exact and must equal a scan of the model, as
 * must BPHS and sh_brute; with fewer probes every match reported must be
 * real (live, its fingerprint, its distance, within h) and every document
 * in the query's own header bucket within h must be found: in particular
 * a stored fingerprint is always found at distance 0.
 */
#include <math.h>

#include "fuzz_util.h"

#include "sh_bphs.h"
#include "sh_brute.h"
#include "sh_index.h"
#include "sh_library.h"
#include "sh_snapshot.h"
#include "sh_volatility.h"

#define FIX_CAP_MAX     1024
#define FIX_T_MAX       24
#define FIX_SEED        0x5eed5eed5eedull

typedef struct {
    sh_index_t      *ix;
    void            *mem;
    size_t           size;
    uint32_t         cap;       /* the index's capacity (>= asked) */
    unsigned         t;

    /* The model. */
    uint8_t         *live;
    uint64_t        *hash;
    uint64_t        *age;       /* clock of insert, update or touch */
    uint32_t         count;
    uint64_t         clock;
    uint64_t         evictions;
    uint64_t         lookups;

    sh_volatility_t *learned;   /* from the region's learner, or NULL */
    sh_match_t      *out;       /* cap + 8 matches */
    sh_match_t      *want;
} fix_t;

static void
fix_init(void)
{
    /* The built-in volatility table is built on first use; the library's
     * tables by sh_library_init, which the index does not need. */
    (void) sh_volatility_default();
}

/* ---- Checks after every operation. ---- */

static void
fix_check(fix_t *f)
{
    sh_index_stats_t st;
    char             err[256];

    if (sh_index_check(f->ix, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_index: sh_index_check: %s\n", err);
        FUZZ_CHECK(!"sh_index_check");
    }
    sh_index_stats(f->ix, &st);
    FUZZ_CHECK(st.entries == f->count);
    FUZZ_CHECK(st.capacity == f->cap);
    FUZZ_CHECK(st.evictions == f->evictions);
    FUZZ_CHECK(st.lookups == f->lookups);
}

/* The live ref with the smallest age (the index's oldest). */
static uint32_t
fix_oldest(const fix_t *f)
{
    uint32_t r, best = SH_NOREF;

    for (r = 0; r < f->cap; r++) {
        if (f->live[r] && (best == SH_NOREF || f->age[r] < f->age[best])) {
            best = r;
        }
    }
    return best;
}

/* A live ref near `pick` (the next one at or after it, cyclically), or
 * SH_NOREF when the model is empty. */
static uint32_t
fix_live_ref(const fix_t *f, unsigned pick)
{
    uint32_t i, r;

    for (i = 0; i < f->cap; i++) {
        r = (uint32_t) ((pick + i) % f->cap);
        if (f->live[r]) {
            return r;
        }
    }
    return SH_NOREF;
}

/* ---- Fingerprints worth trying. ---- */

static uint64_t
fix_flip(fuzz_in_t *in, uint64_t h)
{
    unsigned k = fuzz_u8(in) % (SH_H_MAX + 2), i;

    for (i = 0; i < k; i++) {
        h ^= 1ull << (fuzz_u8(in) % 64);
    }
    return h;
}

static uint64_t
fix_hash(fix_t *f, fuzz_in_t *in)
{
    unsigned kind = fuzz_u8(in) % 6;
    uint32_t r;
    uint64_t low = f->t >= 64 ? 0 : (~0ull >> f->t);

    switch (kind) {
    case 1:                 /* a few bits away from a stored one */
        r = fix_live_ref(f, fuzz_u8(in));
        return r == SH_NOREF ? fuzz_u64(in) : fix_flip(in, f->hash[r]);
    case 2:                 /* the top of the space: the table's tail, the
                               spill path, and UINT64_MAX (the value of an
                               empty slot) itself */
        return UINT64_MAX - fuzz_u8(in) % 4;
    case 3:                 /* the bottom */
        return fuzz_u8(in) % 4;
    case 4:                 /* same header as a stored one: one bucket */
        r = fix_live_ref(f, fuzz_u8(in));
        return r == SH_NOREF ? fuzz_u64(in)
                             : (f->hash[r] & ~low) | (fuzz_u64(in) & low);
    case 5:                 /* a crowded bucket: header from the input */
        return (uint64_t) fuzz_u16(in) << 48 | (fuzz_u8(in) % 8);
    default:
        return fuzz_u64(in);
    }
}

/* Weights of a query: none, random, equal, or extreme. */
static const float *
fix_weights(fuzz_in_t *in, float *w)
{
    unsigned kind = fuzz_u8(in) % 4, j;
    uint64_t rng = fuzz_u8(in);

    if (kind == 0) {
        return NULL;
    }
    for (j = 0; j < 64; j++) {
        uint64_t r = fuzz_rng(&rng);

        switch (kind) {
        case 1:
            w[j] = (float) ((int) (r & 0xFF) - 128) / 64.0f;
            break;
        case 2:
            w[j] = 0.25f;
            break;
        default: {
            static const float extreme[] = {
                0.0f, -0.0f, 1e-30f, -1e30f, 7.99f, 8.0f, 1e6f,
                INFINITY, -INFINITY, NAN
            };

            w[j] = extreme[r % (sizeof(extreme) / sizeof(extreme[0]))];
        }
        }
    }
    return w;
}

/* ---- Operations. ---- */

static void
fix_insert(fix_t *f, uint64_t h)
{
    uint32_t ref, evicted, old = SH_NOREF;

    if (f->count == f->cap) {
        old = fix_oldest(f);
    }
    ref = sh_index_insert(f->ix, h, &evicted);
    FUZZ_CHECK(evicted == old);
    if (old != SH_NOREF) {
        f->live[old] = 0;
        f->count--;
        f->evictions++;
    }
    FUZZ_CHECK(ref < f->cap);
    FUZZ_CHECK(!f->live[ref]);
    f->live[ref] = 1;
    f->hash[ref] = h;
    f->age[ref] = ++f->clock;
    f->count++;
    fix_check(f);
}

/* A ref to act on: mostly live ones, sometimes free or out of range. */
static uint32_t
fix_pick_ref(fix_t *f, fuzz_in_t *in)
{
    unsigned sel = fuzz_u8(in), pick = fuzz_u16(in);
    uint32_t r;

    if (sel % 4 == 0) {
        return (uint32_t) (pick % (f->cap + 2));
    }
    if (sel % 4 == 1) {
        return sel & 0x80 ? SH_NOREF : UINT32_MAX - 1;
    }
    r = fix_live_ref(f, pick);
    return r == SH_NOREF ? pick % (f->cap + 2) : r;
}

static int
fix_is_live(const fix_t *f, uint32_t ref)
{
    return ref < f->cap && f->live[ref];
}

static void
fix_remove(fix_t *f, fuzz_in_t *in)
{
    uint32_t ref = fix_pick_ref(f, in);
    int      live = fix_is_live(f, ref);

    FUZZ_CHECK(sh_index_remove(f->ix, ref) == (live ? 0 : -1));
    if (live) {
        f->live[ref] = 0;
        f->count--;
    }
    fix_check(f);
}

static void
fix_update(fix_t *f, fuzz_in_t *in)
{
    uint32_t ref = fix_pick_ref(f, in);
    uint64_t h = fix_hash(f, in);
    int      live = fix_is_live(f, ref);

    FUZZ_CHECK(sh_index_update(f->ix, ref, h) == (live ? 0 : -1));
    if (live) {
        f->hash[ref] = h;
        f->age[ref] = ++f->clock;
    }
    fix_check(f);
}

static void
fix_touch(fix_t *f, fuzz_in_t *in)
{
    uint32_t ref = fix_pick_ref(f, in);
    int      live = fix_is_live(f, ref);

    FUZZ_CHECK(sh_index_touch(f->ix, ref) == (live ? 0 : -1));
    if (live) {
        f->age[ref] = ++f->clock;
    }
    fix_check(f);
}

static void
fix_get_all(fix_t *f)
{
    uint32_t r;
    uint64_t h;

    for (r = 0; r < f->cap + 2; r++) {
        int rc = sh_index_get(f->ix, r, &h);

        FUZZ_CHECK(rc == (fix_is_live(f, r) ? 0 : -1));
        FUZZ_CHECK(rc != 0 || h == f->hash[r]);
    }
    FUZZ_CHECK(sh_index_get(f->ix, SH_NOREF, &h) == -1);
}

typedef struct {
    const fix_t *f;
    uint64_t     last_age;
    uint32_t     n;
} fix_visit_t;

static int
fix_visit(void *arg, uint32_t ref, uint64_t hash)
{
    fix_visit_t *v = arg;

    /* Oldest first: ages strictly increase along the visit. */
    FUZZ_CHECK(fix_is_live(v->f, ref));
    FUZZ_CHECK(v->f->hash[ref] == hash);
    FUZZ_CHECK(v->n == 0 || v->f->age[ref] > v->last_age);
    v->last_age = v->f->age[ref];
    v->n++;
    return 0;
}

static void
fix_foreach(fix_t *f)
{
    fix_visit_t v = { f, 0, 0 };

    sh_index_foreach(f->ix, fix_visit, &v);
    FUZZ_CHECK(v.n == f->count);
}

/* Every stored document within h of q, by a scan of the model. */
static size_t
fix_scan(const fix_t *f, uint64_t q, unsigned h, sh_match_t *want)
{
    uint32_t r;
    size_t   n = 0;

    for (r = 0; r < f->cap; r++) {
        unsigned d;

        if (!f->live[r]) {
            continue;
        }
        d = (unsigned) __builtin_popcountll(f->hash[r] ^ q);
        if (d <= h) {
            want[n].ref = r;
            want[n].distance = d;
            want[n].hash = f->hash[r];
            n++;
        }
    }
    return n;
}

/* Bit subsets of size 1..h of t bits: the probes an exact lookup needs. */
static uint64_t
fix_subsets(unsigned t, unsigned h)
{
    uint64_t total = 0, c = 1;
    unsigned i;

    for (i = 1; i <= h && i <= t; i++) {
        c = c * (t - i + 1) / i;
        total += c;
    }
    return total;
}

/* A reported match is a real one. */
static void
fix_check_match(const fix_t *f, uint64_t q, unsigned h, const sh_match_t *m)
{
    FUZZ_CHECK(fix_is_live(f, m->ref));
    FUZZ_CHECK(m->hash == f->hash[m->ref]);
    FUZZ_CHECK(m->distance == (unsigned) __builtin_popcountll(m->hash ^ q));
    FUZZ_CHECK(m->distance <= h);
}

/*
 * Compare a lookup's answer with the model's.  `exact`: every match must
 * be found; otherwise those sharing the query's header bucket must be.
 * `n` is the lookup's count, `max` the room it had, `bucket_only` the
 * header width defining the bucket (0 for exact answers).
 */
static void
fix_compare(const fix_t *f, uint64_t q, unsigned h, sh_match_mode_t mode,
            const sh_match_t *got, size_t n, size_t max, int exact,
            unsigned t)
{
    sh_match_t *want = f->want;
    size_t      nw = fix_scan(f, q, h, want), i, j, nb = 0, shown;
    uint64_t    hdr = t >= 64 ? 0 : ~(~0ull >> t);
    unsigned    best = UINT32_MAX, best_bucket = UINT32_MAX;

    for (i = 0; i < nw; i++) {
        best = want[i].distance < best ? want[i].distance : best;
        if (((want[i].hash ^ q) & hdr) == 0) {
            nb++;
            if (want[i].distance < best_bucket) {
                best_bucket = want[i].distance;
            }
        }
    }
    shown = mode == SH_MATCH_ALL ? (n < max ? n : max) : (n && max ? 1 : 0);
    for (i = 0; i < shown; i++) {
        fix_check_match(f, q, h, &got[i]);
        for (j = 0; j < i; j++) {
            FUZZ_CHECK(got[j].ref != got[i].ref);
        }
    }
    switch (mode) {
    case SH_MATCH_ALL:
        FUZZ_CHECK(n <= nw);
        FUZZ_CHECK(n >= nb);
        FUZZ_CHECK(!exact || n == nw);
        break;
    case SH_MATCH_FIRST:
        FUZZ_CHECK(n <= 1 && (nw > 0 || n == 0));
        FUZZ_CHECK(n == 1 || nb == 0);
        FUZZ_CHECK(!exact || n == (nw > 0));
        break;
    case SH_MATCH_CLOSEST:
        FUZZ_CHECK(n <= 1 && (nw > 0 || n == 0));
        FUZZ_CHECK(n == 1 || nb == 0);
        FUZZ_CHECK(!exact || n == (nw > 0));
        if (n == 1 && max > 0) {
            FUZZ_CHECK(got[0].distance >= best);
            FUZZ_CHECK(got[0].distance <= best_bucket);
            FUZZ_CHECK(!exact || got[0].distance == best);
        }
        break;
    }
}

static void
fix_lookup(fix_t *f, fuzz_in_t *in, int exhaustive)
{
    sh_lookup_opts_t  o;
    sh_lookup_stats_t ls;
    float             wbuf[64];
    const float      *w;
    uint64_t          q = fix_hash(f, in);
    size_t            max, n;
    unsigned          sel = fuzz_u8(in);
    int               exact;

    sh_lookup_opts_init(&o);
    o.h = fuzz_u8(in) % (SH_H_MAX + 1);
    o.mode = (sh_match_mode_t) (sel % 3);
    o.vol = (sel & 0x10) && f->learned != NULL ? f->learned : NULL;
    o.learn = (sel & 0x20) != 0;
    max = sel & 0x40 ? fuzz_u8(in) % 4 : f->cap + 8;
    w = fix_weights(in, wbuf);
    if (exhaustive) {
        /* Every subset: exact.  A radius too wide for that is narrowed
         * (t = 24 allows h = 3: 2324 probes). */
        while (fix_subsets(f->t, o.h) > SH_PROBES_MAX) {
            o.h--;
        }
        o.probes = SH_PROBES_MAX;
    } else {
        o.probes = fuzz_u8(in);             /* 0: derived from recall */
        o.recall = (float) fuzz_u8(in) / 255.0f;
    }
    exact = exhaustive && fix_subsets(f->t, o.h) <= SH_PROBES_MAX;

    n = sh_index_lookup(f->ix, q, w, &o, f->out, max, &ls);
    f->lookups++;
    FUZZ_CHECK(ls.probes >= 1);
    FUZZ_CHECK(ls.probes <= 1 + sh_index_probes_for(f->ix, &o));
    fix_compare(f, q, o.h, o.mode, f->out, n, max, exact, f->t);
    fix_check(f);
}

/* The learner's counts make a valid table, used by later lookups. */
static void
fix_learned(fix_t *f, fuzz_in_t *in)
{
    sh_learn_counts_t c;
    sh_volatility_t  *v;

    if (fuzz_u8(in) % 4 == 0) {
        sh_index_learn_reset(f->ix);
    }
    sh_index_learn_counts(f->ix, &c);
    v = sh_volatility_learned(&c, NULL);
    FUZZ_CHECK(v != NULL);
    sh_volatility_free(f->learned);
    f->learned = v;
    fix_check(f);
}

/* Move the region: it holds offsets only, so a copy is the same index. */
static void
fix_relocate(fix_t *f)
{
    void *mem;
    char  err[256];

    FUZZ_CHECK(posix_memalign(&mem, 64, f->size) == 0);
    memcpy(mem, f->mem, f->size);
    memset(f->mem, 0xA5, f->size);      /* stale pointers would show */
    free(f->mem);
    f->mem = mem;
    f->ix = sh_index_attach(mem, f->size, err, sizeof(err));
    FUZZ_CHECK(f->ix != NULL);
    fix_check(f);
}

/* Save, load back: every index the library builds, it loads, unchanged. */
static void
fix_snapshot(fix_t *f, fuzz_in_t *in)
{
    char        path[256], err[256];
    uint8_t     user[32];
    size_t      ulen = fuzz_u8(in) % sizeof(user), i, rsize, got_len;
    void       *region;
    const void *got;
    sh_snapshot_info_t info;

    for (i = 0; i < ulen; i++) {
        user[i] = (uint8_t) fuzz_u8(in);
    }
    fuzz_tmp_path("index.snap", path, sizeof(path));
    if (sh_snapshot_save(path, f->ix, "fuzz", user, ulen, err, sizeof(err))
        != 0)
    {
        fprintf(stderr, "fuzz_index: save: %s\n", err);
        FUZZ_CHECK(!"sh_snapshot_save");
    }
    if (sh_snapshot_load(path, FIX_SEED, &region, &rsize, &got, &got_len,
                         &info, err, sizeof(err)) != 0)
    {
        fprintf(stderr, "fuzz_index: load: %s\n", err);
        FUZZ_CHECK(!"sh_snapshot_load");
    }
    unlink(path);
    FUZZ_CHECK(rsize == f->size);
    FUZZ_CHECK(memcmp(region, f->mem, rsize) == 0);
    FUZZ_CHECK(got_len == ulen);
    FUZZ_CHECK(info.region_ok && info.damaged == 0);
    FUZZ_CHECK(strcmp(info.kind, "fuzz") == 0);
    FUZZ_CHECK(ulen == 0 || memcmp(got, user, ulen) == 0);
    free(f->mem);
    f->mem = region;
    f->ix = sh_index_attach(region, rsize, err, sizeof(err));
    FUZZ_CHECK(f->ix != NULL);
    fix_check(f);
}

/* BPHS and sh_brute over the model's documents agree with the scan. */
static void
fix_baselines(fix_t *f, fuzz_in_t *in)
{
    /* Mostly the 4-table design: a build sorts every table. */
    static const unsigned designs[] = { 4, 4, 4, 4, 4, 4, 10, 20 };
    unsigned    G, g, h, k, mode;
    sh_bphs_t  *b;
    sh_brute_t  br;
    char        err[256];
    uint32_t    r;
    uint64_t    q;
    size_t      n;

    FUZZ_CHECK(sh_bphs_design(designs[fuzz_u8(in) % 8], &G, &g) == 0);
    b = sh_bphs_new(G, g, f->count, err, sizeof(err));
    FUZZ_CHECK(b != NULL);
    FUZZ_CHECK(sh_brute_init(&br, f->count) == 0);
    for (r = 0; r < f->cap; r++) {
        if (f->live[r]) {
            FUZZ_CHECK(sh_bphs_add(b, f->hash[r], r) == 0);
            FUZZ_CHECK(sh_brute_add(&br, f->hash[r], r) == 0);
        }
    }
    FUZZ_CHECK(sh_bphs_build(b) == 0);
    FUZZ_CHECK(sh_bphs_count(b) == f->count);
    for (k = fuzz_u8(in) % 8 + 1; k > 0; k--) {
        q = fix_hash(f, in);
        mode = fuzz_u8(in) % 3;
        h = fuzz_u8(in) % (sh_bphs_hmax(b) + 1);
        n = sh_bphs_lookup(b, q, h, (sh_match_mode_t) mode, f->out,
                           f->cap + 8, NULL);
        fix_compare(f, q, h, (sh_match_mode_t) mode, f->out, n, f->cap + 8,
                    1, 0);
        h = fuzz_u8(in) % (SH_H_MAX + 1);
        n = sh_brute_lookup(&br, q, h, (sh_match_mode_t) mode, f->out,
                            f->cap + 8);
        fix_compare(f, q, h, (sh_match_mode_t) mode, f->out, n, f->cap + 8,
                    1, 0);
    }
    sh_bphs_free(b);
    sh_brute_free(&br);
}

static int
fix_one(const uint8_t *data, size_t size)
{
    fuzz_in_t        in = { data, size };
    fix_t            f;
    sh_index_stats_t st;
    char             err[256];
    unsigned         want_cap, t, op, k;
    int              baselines_done = 0;

    memset(&f, 0, sizeof(f));
    /* Mostly small indexes, where eviction and crowded buckets come
     * soon; sometimes up to FIX_CAP_MAX. */
    k = fuzz_u16(&in);
    want_cap = 1 + (k & 0x8000 ? k % FIX_CAP_MAX : k % 64);
    /* t: mostly the index's own choice (at most 9 here); explicit widths
     * up to FIX_T_MAX make exact lookups dear (2^t subsets). */
    t = fuzz_u8(&in);
    t = t & 0x80 ? t % (FIX_T_MAX + 1) : 0;
    f.size = sh_index_region_size(want_cap);
    FUZZ_CHECK(posix_memalign(&f.mem, 64, f.size) == 0);
    f.ix = sh_index_init(f.mem, f.size, t, FIX_SEED, err, sizeof(err));
    FUZZ_CHECK(f.ix != NULL);
    sh_index_stats(f.ix, &st);
    FUZZ_CHECK(st.capacity >= want_cap && st.region_bytes == f.size);
    FUZZ_CHECK(t == 0 || st.t == t);
    f.cap = st.capacity;
    f.t = st.t;
    f.live = calloc(f.cap, 1);
    f.hash = calloc(f.cap, sizeof(uint64_t));
    f.age = calloc(f.cap, sizeof(uint64_t));
    f.out = calloc(f.cap + 8, sizeof(sh_match_t));
    f.want = calloc(f.cap + 8, sizeof(sh_match_t));
    FUZZ_CHECK(f.live && f.hash && f.age && f.out && f.want);
    fix_check(&f);

    while (in.n > 0) {
        op = fuzz_u8(&in);
        switch (op % 16) {
        case 0: case 1: case 2:
            fix_insert(&f, fix_hash(&f, &in));
            break;
        case 3:
            /* Up to 64 inserts: sh_index_check after each is what an
             * input's time goes to. */
            for (k = fuzz_u8(&in) % 64 + 1; k > 0; k--) {
                /* Mostly fresh values, some near ones, from a generator:
                 * an input byte per insert would make fills too dear. */
                uint64_t s = (uint64_t) op << 32 | k | (uint64_t) in.n << 40;
                uint64_t h = fuzz_rng(&s);
                uint32_t r = fix_live_ref(&f, (unsigned) h);

                if (r != SH_NOREF && (h & 3) == 0) {
                    h = f.hash[r] ^ (1ull << (h >> 58));
                }
                fix_insert(&f, h);
            }
            break;
        case 4: case 5:
            fix_remove(&f, &in);
            break;
        case 6:
            fix_update(&f, &in);
            break;
        case 7:
            fix_touch(&f, &in);
            break;
        case 8: case 9: case 10:
            fix_lookup(&f, &in, 1);
            break;
        case 11: case 12:
            fix_lookup(&f, &in, 0);
            break;
        case 13:
            fix_get_all(&f);
            fix_foreach(&f);
            break;
        case 14:
            switch (fuzz_u8(&in) % 4) {
            case 0:
                fix_relocate(&f);
                break;
            case 1:
                fix_snapshot(&f, &in);
                break;
            default:
                fix_learned(&f, &in);
                break;
            }
            break;
        default:
            /* Building BPHS costs a radix sort of 2^16 buckets a pass and
             * table: only for opcode 255, once an input. */
            if (op == 0xFF && !baselines_done) {
                fix_baselines(&f, &in);
                baselines_done = 1;
            }
            break;
        }
    }

    sh_volatility_free(f.learned);
    free(f.mem);
    free(f.live);
    free(f.hash);
    free(f.age);
    free(f.out);
    free(f.want);
    return 0;
}

FUZZ_ENTRY(fix_init, fix_one)
