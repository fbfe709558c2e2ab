/*
 * sh_features.c -- the bounded feature table and the shingle window.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sh_block.h"
#include "sh_features.h"

#define SHINGLE_SEED    0x5348494e474c4531ULL   /* "SHINGLE1" */
#define INITIAL_SLOTS   1024

/*
 * Each feature's occurrences are summed three times over: tf counts them,
 * and mass[] adds up their block weights (in sixteenths, sh_block.h),
 * those of MAIN blocks apart from the others, since how much the others
 * count is known only at the end of the page; hub[] the same with the
 * blocks' hub weights, since whether the page is a hub is known only
 * then too.
 */
typedef struct {
    uint64_t key;           /* 0 = empty; a feature hashing to 0 is 1 */
    uint32_t tf;
    uint32_t type;
    uint32_t mass[2];       /* [0] outside MAIN, [1] in MAIN; saturating */
    uint32_t hub[2];        /* the same, by hub weights */
} slot_t;

struct sh_features_s {
    slot_t   *slot;
    uint32_t *order;        /* slot of each feature, in first-seen order */
    size_t    mask;
    size_t    count;
    size_t    max_count;
    size_t    max_slots;
    int       truncated;
    int       failed;

    unsigned  w;
    uint64_t  seen;
    uint64_t  window[SH_SHINGLE_MAX];
    uint16_t wclass[SH_SHINGLE_MAX];    /* each window term's class */
};

sh_features_t *
sh_features_new(unsigned shingle, unsigned max_features)
{
    sh_features_t *f = calloc(1, sizeof(*f));
    size_t         n;

    if (f == NULL) {
        return NULL;
    }
    f->w = shingle < 1 ? 1 : (shingle > SH_SHINGLE_MAX ? SH_SHINGLE_MAX
                                                       : shingle);
    f->max_count = max_features ? max_features : 1;
    for (n = INITIAL_SLOTS; n * 3 < 4 * f->max_count; n <<= 1) { /* void */ }
    f->max_slots = n;
    n = INITIAL_SLOTS < f->max_slots ? INITIAL_SLOTS : f->max_slots;
    f->slot = calloc(n, sizeof(slot_t));
    f->order = malloc(n / 4 * 3 * sizeof(uint32_t));
    if (f->slot == NULL || f->order == NULL) {
        free(f->slot);
        free(f->order);
        free(f);
        return NULL;
    }
    f->mask = n - 1;
    return f;
}

void
sh_features_free(sh_features_t *f)
{
    if (f != NULL) {
        free(f->slot);
        free(f->order);
        free(f);
    }
}

/* Empty the table for the next page, keeping its memory (warm, sized). */
void
sh_features_reset(sh_features_t *f)
{
    size_t i;

    for (i = 0; i < f->count; i++) {
        f->slot[f->order[i]].key = 0;
    }
    f->count = 0;
    f->truncated = 0;
    f->failed = 0;
    f->seen = 0;
}

/* Double the table, keeping the first-seen order. */
static int
grow(sh_features_t *f)
{
    size_t    n = (f->mask + 1) * 2, i, j;
    slot_t   *s = calloc(n, sizeof(slot_t));
    uint32_t *o = malloc(n / 4 * 3 * sizeof(uint32_t));

    if (s == NULL || o == NULL) {
        free(s);
        free(o);
        return -1;
    }
    for (i = 0; i < f->count; i++) {
        const slot_t *old = &f->slot[f->order[i]];
        for (j = old->key & (n - 1); s[j].key != 0; j = (j + 1) & (n - 1)) {
            /* void */
        }
        s[j] = *old;
        o[i] = (uint32_t) j;
    }
    free(f->slot);
    free(f->order);
    f->slot = s;
    f->order = o;
    f->mask = n - 1;
    return 0;
}

/* Called twice per word, so inlined: a call's register spills cost as much
 * as the probe. */
static inline __attribute__((always_inline)) void
mass_add(slot_t *s, unsigned cls)
{
    unsigned  in = (cls & SH_CLASS_MAIN) != 0;
    uint32_t *m = &s->mass[in], *h = &s->hub[in];
    uint32_t  w = cls & SH_CLASS_WEIGHT, hw = cls >> SH_CLASS_HUB_SHIFT;

    *m = *m + w >= *m ? *m + w : UINT32_MAX;
    *h = *h + hw >= *h ? *h + hw : UINT32_MAX;
}

static inline __attribute__((always_inline)) void
add(sh_features_t *f, uint64_t key, unsigned type, unsigned cls)
{
    size_t i;

    key = key ? key : 1;
    for (i = key & f->mask; f->slot[i].key != 0; i = (i + 1) & f->mask) {
        if (f->slot[i].key == key) {
            f->slot[i].tf++;
            mass_add(&f->slot[i], cls);
            return;
        }
    }
    if (f->count >= f->max_count) {
        f->truncated = 1;
        return;
    }
    /* Load at most 3/4: linear probing stays short with a good hash, and
     * the table stays small enough for the cache. */
    if ((f->count + 1) * 4 > (f->mask + 1) * 3 && f->mask + 1 < f->max_slots) {
        if (grow(f) != 0) {
            f->failed = 1;
            return;
        }
        for (i = key & f->mask; f->slot[i].key != 0; i = (i + 1) & f->mask) {
            /* void */
        }
    }
    f->slot[i].key = key;
    f->slot[i].tf = 1;
    f->slot[i].type = type;
    f->slot[i].mass[0] = 0;
    f->slot[i].mass[1] = 0;
    f->slot[i].hub[0] = 0;
    f->slot[i].hub[1] = 0;
    mass_add(&f->slot[i], cls);
    f->order[f->count++] = (uint32_t) i;
}

/* Final mixer of a 64-bit value (from SplitMix64): full avalanche. */
static inline uint64_t
mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

void
sh_features_term(sh_features_t *f, uint64_t term, unsigned cls)
{
    uint64_t h;
    unsigned i, w = f->w, c, sc, level, hlevel, main;

    /* Start fetching the word's slot while the shingle is hashed. */
    __builtin_prefetch(&f->slot[(term ? term : 1) & f->mask], 1);

    if (w < 2) {
        add(f, term, SH_FEAT_WORD, cls);
        return;
    }

    /* The window, oldest term first: shift it by one (w is at most 8). */
    for (i = 1; i < w; i++) {
        f->window[i - 1] = f->window[i];
        f->wclass[i - 1] = f->wclass[i];
    }
    f->window[w - 1] = term;
    f->wclass[w - 1] = (uint16_t) cls;
    if (++f->seen < w) {
        add(f, term, SH_FEAT_WORD, cls);
        return;
    }
    /*
     * The terms are already keyed, uniformly distributed hashes, so an
     * order-sensitive multiply-rotate combination with a final avalanche
     * makes a good shingle hash, much cheaper than hashing the bytes again.
     *
     * A shingle that crosses blocks weighs what its lightest block does,
     * and is in MAIN only if all its terms are: the shingles that join a
     * menu to the text are the template's as much as the menu's own.
     * (Both weights: the block's, and its hub weight.)
     */
    h = SHINGLE_SEED;
    level = SH_CLASS_WEIGHT;
    hlevel = SH_CLASS_WEIGHT;
    main = SH_CLASS_MAIN;
    for (i = 0; i < w; i++) {
        h = (h ^ f->window[i]) * 0x9e3779b97f4a7c15ULL;
        h = (h << 31) | (h >> 33);
        c = f->wclass[i];
        level = (c & SH_CLASS_WEIGHT) < level ? (c & SH_CLASS_WEIGHT)
                                              : level;
        hlevel = (c >> SH_CLASS_HUB_SHIFT) < hlevel
                 ? (c >> SH_CLASS_HUB_SHIFT) : hlevel;
        main &= c;
    }
    sc = level | main | hlevel << SH_CLASS_HUB_SHIFT;
    h = mix64(h);
    __builtin_prefetch(&f->slot[(h ? h : 1) & f->mask], 1);
    add(f, term, SH_FEAT_WORD, cls);
    add(f, h, SH_FEAT_SHINGLE, sc);
}

size_t
sh_features_count(const sh_features_t *f)
{
    return f->count;
}

int
sh_features_truncated(const sh_features_t *f)
{
    return f->truncated;
}

int
sh_features_failed(const sh_features_t *f)
{
    return f->failed;
}

/*
 * Bit counting for features that all weigh the same.  Eight byte-wide
 * counters sit in each uint64: adding a feature adds, for each of its eight
 * bytes, that byte's bits spread one per counter byte (a table lookup).
 * After 255 features the byte counters would overflow, so they are emptied
 * into 32-bit counts.  Branch-free, about four operations per byte.
 */
typedef struct {
    uint64_t lanes[8];      /* lanes[b], byte k: count of bit 8b+k, mod 256 */
    uint32_t count[SH_BITS];
    uint32_t pending;
    uint32_t n;
} bitcount_t;

static uint64_t spread[256];

void
sh_features_init(void)
{
    int b, k;

    for (b = 0; b < 256; b++) {
        for (k = 0; k < 8; k++) {
            spread[b] |= (uint64_t) ((b >> k) & 1) << (8 * k);
        }
    }
}

static void
bitcount_drain(bitcount_t *c)
{
    int b, k;

    for (b = 0; b < 8; b++) {
        for (k = 0; k < 8; k++) {
            c->count[8 * b + k] += (uint32_t) (c->lanes[b] >> (8 * k)) & 0xFF;
        }
        c->lanes[b] = 0;
    }
    c->pending = 0;
}

static inline void
bitcount_add(bitcount_t *c, uint64_t x)
{
    int b;

    for (b = 0; b < 8; b++) {
        c->lanes[b] += spread[(x >> (8 * b)) & 0xFF];
    }
    c->n++;
    if (++c->pending == 255) {
        bitcount_drain(c);
    }
}

/* n features of weight w, count[j] of which have bit j set: +w for each
 * of those, -w for the others. */
static void
bitcount_flush(bitcount_t *c, float w, sh_acc_t *acc)
{
    int j;

    bitcount_drain(c);
    for (j = 0; j < SH_BITS; j++) {
        acc->w[j] += w * (float) (2 * (int64_t) c->count[j] - c->n);
    }
    acc->norm2 += (double) w * w * c->n;
}

/*
 * Features occurring once go through bit counting by (type, zone, block
 * weight): SH_FEAT_NTYPES x 2 x (SH_BLOCK_FULL + 1) buckets, each made
 * ready when first used.
 */
#define NLEVELS   (SH_BLOCK_FULL + 1)
#define NBUCKETS  (SH_FEAT_NTYPES * 2 * NLEVELS)

void
sh_features_weigh(const sh_features_t *f, const float *type_weight,
                  const sh_idf_t *idf, float outside, int hub,
                  sh_acc_t *acc)
{
    const slot_t *s;
    const uint32_t *ms;
    size_t        i;
    unsigned      b, main, level;
    float         w, m;
    uint64_t      used[(NBUCKETS + 63) / 64];
    bitcount_t    once[NBUCKETS];

    if (spread[1] == 0) {
        sh_features_init();     /* sh_library_init was not called */
    }
    /*
     * Most features occur once, and without IDF all of a type's
     * once-features from blocks of one weight weigh the same: count their
     * bits rather than add 64 floats for each.  The rest go through
     * sh_acc_add, in first-seen order, so that float rounding depends on
     * the page alone.
     *
     * A feature's weight is type_weight x g(m) x idf, where m is its
     * occurrences counted by their blocks' weights, those outside MAIN
     * further by `outside` (1 unless the page marks its main content), and
     * g(m) = 1 + ln m above 1, m below: sublinear TF on weighted counts,
     * so that an occurrence in a block of weight 0 adds nothing at all
     * (a word of the article that is also in the menu weighs what it
     * would without the menu).  With every block at full weight m = tf,
     * and the weights are those of whole-page text, to the last bit.
     * `hub` counts the hub weights instead (sh_doc.c).
     */
    memset(used, 0, sizeof(used));
    for (i = 0; i < f->count; i++) {
        s = &f->slot[f->order[i]];
        ms = hub ? s->hub : s->mass;
        if (s->tf == 1 && (idf == NULL || s->type != SH_FEAT_WORD)) {
            main = ms[1] != 0;
            level = main ? ms[1] : ms[0];
            if (level == 0) {
                continue;
            }
            b = (s->type * 2 + main) * NLEVELS + level;
            if (!(used[b / 64] >> (b % 64) & 1)) {
                used[b / 64] |= (uint64_t) 1 << (b % 64);
                memset(&once[b], 0, sizeof(once[b]));
            }
            bitcount_add(&once[b], s->key);
            continue;
        }
        m = ((float) ms[1] + outside * (float) ms[0]) / (float) SH_BLOCK_FULL;
        w = type_weight[s->type] * (m > 1.0f ? 1.0f + logf(m) : m);
        if (idf != NULL && s->type == SH_FEAT_WORD) {
            w *= sh_idf_get(idf, s->key);
        }
        if (w > 0.0f) {
            sh_acc_add(acc, s->key, w);
        }
    }
    for (b = 0; b < NBUCKETS; b++) {
        if (!(used[b / 64] >> (b % 64) & 1)) {
            continue;
        }
        i = b / (2 * NLEVELS);
        main = b / NLEVELS % 2;
        level = b % NLEVELS;
        w = type_weight[i] * ((float) level / (float) SH_BLOCK_FULL);
        if (!main) {
            w *= outside;
        }
        if (w > 0.0f) {
            bitcount_flush(&once[b], w, acc);
        }
    }
}

void
sh_features_foreach(const sh_features_t *f, sh_features_visit_fn fn,
                    void *arg)
{
    const slot_t *s;
    size_t        i;

    for (i = 0; i < f->count; i++) {
        s = &f->slot[f->order[i]];
        fn(arg, s->key, s->type, s->tf);
    }
}
