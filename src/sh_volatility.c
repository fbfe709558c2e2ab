/*
 * sh_volatility.c -- p(|w|) from an empirical survival table of |Y|, the
 * k(t) probe table, their text file format, and the online learner's
 * conversion of counts into a table.
 *
 * Lookups only ever call sh_volatility_logodds(), so everything is folded
 * into a look-up table over |w| when a table is built: one multiply and one
 * load per header bit at query time.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sh_err.h"
#include "sh_file.h"
#include "sh_volatility.h"

#define LUT_N       1024
#define LUT_SCALE   128.0f      /* entries per unit of |w|: covers [0, 8) */
#define NT          (SH_VOL_TMAX - SH_VOL_TMIN + 1)

const float sh_volatility_recall_levels[SH_VOL_NRECALL] = {
    0.50f, 0.80f, 0.90f, 0.95f, 0.97f, 0.98f, 0.99f, 1.00f
};

struct sh_volatility_s {
    uint32_t npoints;
    float    c[SH_VOL_MAXPOINTS];
    float    s[SH_VOL_MAXPOINTS];
    float    lut_lo[LUT_N];
    uint32_t k[2][SH_VOL_HMAX][NT][SH_VOL_NRECALL];
    int      builtin;           /* the static default: never freed */
};

/* The generated default (sh_volatility_data.c). */
extern const unsigned sh_vol_builtin_npoints;
extern const float    sh_vol_builtin_points[][2];
extern const unsigned sh_vol_builtin_nk;
extern const uint32_t sh_vol_builtin_k[][3 + SH_VOL_NRECALL];

/* S(c) = P(|Y| > c): log-linear between points, last slope beyond. */
static double
survival(const sh_volatility_t *v, double c)
{
    uint32_t lo = 0, hi = v->npoints - 1;
    double   l0, l1, f;

    if (c <= v->c[0]) {
        return v->s[0];
    }
    if (c >= v->c[hi]) {
        lo = hi - 1;
    } else {
        while (hi - lo > 1) {
            uint32_t mid = (lo + hi) / 2;

            if (v->c[mid] <= c) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    hi = lo + 1;
    l0 = log(v->s[lo]);
    l1 = log(v->s[hi]);
    f = (c - v->c[lo]) / (v->c[hi] - v->c[lo]);
    return exp(l0 + f * (l1 - l0));
}

static void
build_lut(sh_volatility_t *v)
{
    int i;

    for (i = 0; i < LUT_N; i++) {
        double p = survival(v, (i + 0.5) / LUT_SCALE) / 2;

        if (p < SH_VOL_PMIN) {
            p = SH_VOL_PMIN;
        }
        if (p > SH_VOL_PMAX) {
            p = SH_VOL_PMAX;
        }
        v->lut_lo[i] = (float) log(p / (1 - p));
    }
}

static int
kslot(int all, unsigned h, unsigned t)
{
    return all >= 0 && all <= 1 && h >= 1 && h <= SH_VOL_HMAX
           && t >= SH_VOL_TMIN && t <= SH_VOL_TMAX;
}

float
sh_volatility_logodds(const sh_volatility_t *v, float w)
{
    float a = fabsf(w) * LUT_SCALE;
    int   i = a < (float) (LUT_N - 1) ? (int) a : LUT_N - 1;

    return v->lut_lo[i];
}

/*
 * Distinct integer sort keys of the top t bits (cell << 8 | rank): a larger
 * cell is a heavier bit, a smaller log-odds; equal cells keep bit order.
 */
static void
header_keys(const float *w, unsigned t, int32_t *key)
{
    unsigned r;

    if (w == NULL) {
        for (r = 0; r < t; r++) {
            key[r] = (int32_t) r;
        }
        return;
    }
#ifdef __SSE2__
    {
        /* Four ranks at a time, rounded up: key[] has room and w[] has
         * bits below the header. */
        const __m128  sign = _mm_set1_ps(-0.0f);
        const __m128  scale = _mm_set1_ps(LUT_SCALE);
        const __m128  last = _mm_set1_ps((float) (LUT_N - 1));
        __m128i       rank = _mm_setr_epi32(0, 1, 2, 3);

        for (r = 0; r < t; r += 4) {
            __m128 a = _mm_loadu_ps(w + 60 - r);    /* ranks r+3 .. r */

            a = _mm_shuffle_ps(a, a, _MM_SHUFFLE(0, 1, 2, 3));
            a = _mm_min_ps(_mm_mul_ps(_mm_andnot_ps(sign, a), scale), last);
            _mm_storeu_si128((__m128i *) (key + r),
                             _mm_or_si128(_mm_slli_epi32(_mm_cvttps_epi32(a),
                                                         8), rank));
            rank = _mm_add_epi32(rank, _mm_set1_epi32(4));
        }
    }
#else
    for (r = 0; r < t; r++) {
        float a = fabsf(w[63 - r]) * LUT_SCALE;

        a = a < (float) (LUT_N - 1) ? a : (float) (LUT_N - 1);
        key[r] = (int32_t) a << 8 | (int32_t) r;
    }
#endif
}

void
sh_volatility_rank_header(const sh_volatility_t *v, const float *w,
                          unsigned t, float *lo, uint8_t *bit_of)
{
    int32_t  key[68], sorted[64];
    unsigned r, i;

    /*
     * Each key's place is the number of smaller keys: t^2 compares without
     * a branch, which the compiler vectorises and which beats a sort whose
     * every comparison is a coin toss.
     */
    header_keys(w, t, key);
    for (r = t; r < ((t + 3) & ~3u); r++) {
        key[r] = INT32_MAX;                 /* padding: never smaller */
    }
    for (r = 0; r < t; r++) {
        int32_t  kr = key[r];
        unsigned c = 0;
#ifdef __SSE2__
        __m128i  vk = _mm_set1_epi32(kr), acc = _mm_setzero_si128();

        for (i = 0; i < t; i += 4) {
            __m128i blk = _mm_loadu_si128((const __m128i *) (key + i));

            acc = _mm_sub_epi32(acc, _mm_cmplt_epi32(blk, vk));
        }
        acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4e));
        acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xb1));
        c = (unsigned) _mm_cvtsi128_si32(acc);
#else
        for (i = 0; i < t; i++) {
            c += key[i] < kr;
        }
#endif
        sorted[c] = kr;
    }
    for (r = 0; r < t; r++) {
        lo[r] = v->lut_lo[sorted[r] >> 8];
        bit_of[r] = (uint8_t) (63 - (sorted[r] & 0xff));
    }
}

void
sh_volatility_rank_top(const sh_volatility_t *v, const float *w, unsigned t,
                       unsigned m, float *lo, uint8_t *bit_of)
{
    int32_t  key[68], prev = INT32_MIN;
    unsigned r, i;

    /* m passes, each taking the smallest key above the last one (keys are
     * distinct): m t compares without a branch, where the full ranking
     * costs t t. */
    if (m >= t / 2) {
        sh_volatility_rank_header(v, w, t, lo, bit_of);
        return;
    }
    header_keys(w, t, key);
    for (r = t; r < ((t + 3) & ~3u); r++) {
        key[r] = INT32_MAX;                 /* padding: never taken */
    }
    for (i = 0; i < m; i++) {
        int32_t best = INT32_MAX;
#ifdef __SSE2__
        __m128i vp = _mm_set1_epi32(prev), vb = _mm_set1_epi32(INT32_MAX);
        int32_t lane[4];

        for (r = 0; r < t; r += 4) {
            __m128i k = _mm_loadu_si128((const __m128i *) (key + r));
            __m128i take = _mm_and_si128(_mm_cmpgt_epi32(k, vp),
                                         _mm_cmplt_epi32(k, vb));

            vb = _mm_or_si128(_mm_and_si128(take, k),
                              _mm_andnot_si128(take, vb));
        }
        _mm_storeu_si128((__m128i *) lane, vb);
        for (r = 0; r < 4; r++) {
            best = lane[r] < best ? lane[r] : best;
        }
#else
        for (r = 0; r < t; r++) {
            best = key[r] > prev && key[r] < best ? key[r] : best;
        }
#endif
        lo[i] = v->lut_lo[best >> 8];
        bit_of[i] = (uint8_t) (63 - (best & 0xff));
        prev = best;
    }
}

float
sh_volatility_p(const sh_volatility_t *v, float w)
{
    float e = expf(sh_volatility_logodds(v, w));

    return e / (1 + e);
}

sh_volatility_t *
sh_volatility_from_points(const float *c, const float *s, size_t n,
                          char *err, size_t errlen)
{
    sh_volatility_t *v;
    size_t i;

    if (n < 2 || n > SH_VOL_MAXPOINTS) {
        sh_err_set(err, errlen, "volatility table needs 2 to 1024 points");
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (!isfinite(c[i]) || !isfinite(s[i]) || c[i] < 0 || s[i] <= 0
            || s[i] > 1)
        {
            sh_err_set(err, errlen, "volatility point out of range");
            return NULL;
        }
        if (i > 0 && (c[i] <= c[i - 1] || s[i] > s[i - 1])) {
            sh_err_set(err, errlen, "volatility points must have "
                       "increasing |y| and non-increasing survival");
            return NULL;
        }
    }
    v = calloc(1, sizeof(*v));
    if (v == NULL) {
        sh_err_set(err, errlen, "out of memory");
        return NULL;
    }
    v->npoints = (uint32_t) n;
    memcpy(v->c, c, n * sizeof(float));
    memcpy(v->s, s, n * sizeof(float));
    build_lut(v);
    return v;
}

static int
cmp_float(const void *a, const void *b)
{
    float x = *(const float *) a, y = *(const float *) b;

    return (x > y) - (x < y);
}

/* Number of samples strictly greater than c in sorted a[0..n). */
static size_t
count_above(const float *a, size_t n, float c)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;

        if (a[mid] <= c) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return n - lo;
}

sh_volatility_t *
sh_volatility_from_samples(float *absy, size_t n, char *err, size_t errlen)
{
    float  c[SH_VOL_MAXPOINTS], s[SH_VOL_MAXPOINTS];
    size_t np = 0, i;
    double level;

    if (n < 100) {
        sh_err_set(err, errlen, "too few samples to calibrate (need 100)");
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (!isfinite(absy[i])) {
            sh_err_set(err, errlen, "non-finite sample");
            return NULL;
        }
        absy[i] = fabsf(absy[i]);
    }
    qsort(absy, n, sizeof(float), cmp_float);

    /*
     * Points at survival levels 1, 63/64, ..., 1/64 for the body, then
     * halving into the tail while at least 20 samples remain above: the
     * tail decides how unlikely multi-bit flips of heavy bits are.
     */
    c[np] = 0;
    s[np] = (float) count_above(absy, n, 0) / (float) n;
    if (s[np] <= 0) {
        sh_err_set(err, errlen, "every sample is zero: no bit ever flipped");
        return NULL;
    }
    np++;
    for (level = 63.0 / 64; level * (double) n >= 20; ) {
        size_t idx = (size_t) ((1 - level) * (double) (n - 1));
        float  ci = absy[idx];
        size_t above = count_above(absy, n, ci);

        if (ci > c[np - 1] && above > 0 && np < SH_VOL_MAXPOINTS) {
            c[np] = ci;
            s[np] = (float) above / (float) n;
            np++;
        }
        level = level > 1.5 / 64 ? level - 1.0 / 64 : level / 2;
    }
    if (np < 2) {
        sh_err_set(err, errlen, "samples too concentrated to calibrate");
        return NULL;
    }
    return sh_volatility_from_points(c, s, np, err, errlen);
}

int
sh_volatility_set_k(sh_volatility_t *v, int all, unsigned h, unsigned t,
                    const uint32_t k[SH_VOL_NRECALL])
{
    if (!kslot(all, h, t) || v->builtin) {
        return -1;
    }
    memcpy(v->k[all][h - 1][t - SH_VOL_TMIN], k,
           SH_VOL_NRECALL * sizeof(uint32_t));
    return 0;
}

void
sh_volatility_copy_k(sh_volatility_t *to, const sh_volatility_t *from)
{
    if (!to->builtin) {
        memcpy(to->k, from->k, sizeof(to->k));
    }
}

unsigned
sh_volatility_k(const sh_volatility_t *v, int all, unsigned h, unsigned t,
                float recall, unsigned fallback)
{
    int lvl = 0, d;

    if (h == 0) {
        return 0;
    }
    if (h > SH_VOL_HMAX || all < 0 || all > 1) {
        return fallback;
    }
    while (lvl < SH_VOL_NRECALL - 1
           && sh_volatility_recall_levels[lvl] < recall - 1e-6f)
    {
        lvl++;
    }
    if (t < SH_VOL_TMIN) {
        t = SH_VOL_TMIN;
    }
    if (t > SH_VOL_TMAX) {
        t = SH_VOL_TMAX;
    }
    /* The nearest calibrated header width, wider first on ties: k grows
     * with t, so erring wide errs towards recall. */
    for (d = 0; d < NT; d++) {
        int tt[2] = { (int) t + d, (int) t - d };
        int i;

        for (i = 0; i < 2; i++) {
            if (tt[i] >= SH_VOL_TMIN && tt[i] <= SH_VOL_TMAX) {
                uint32_t k = v->k[all][h - 1][tt[i] - SH_VOL_TMIN][lvl];

                if (k > 0) {
                    return k;
                }
            }
        }
    }
    return fallback;
}

/* ---- The built-in table. ---- */

static sh_volatility_t builtin;
static pthread_once_t  builtin_once = PTHREAD_ONCE_INIT;

static void
builtin_init(void)
{
    unsigned i;

    builtin.npoints = sh_vol_builtin_npoints;
    for (i = 0; i < sh_vol_builtin_npoints && i < SH_VOL_MAXPOINTS; i++) {
        builtin.c[i] = sh_vol_builtin_points[i][0];
        builtin.s[i] = sh_vol_builtin_points[i][1];
    }
    build_lut(&builtin);
    for (i = 0; i < sh_vol_builtin_nk; i++) {
        const uint32_t *r = sh_vol_builtin_k[i];

        if (kslot((int) r[0], r[1], r[2])) {
            memcpy(builtin.k[r[0]][r[1] - 1][r[2] - SH_VOL_TMIN], r + 3,
                   SH_VOL_NRECALL * sizeof(uint32_t));
        }
    }
    builtin.builtin = 1;
}

const sh_volatility_t *
sh_volatility_default(void)
{
    pthread_once(&builtin_once, builtin_init);
    return &builtin;
}

void
sh_volatility_free(sh_volatility_t *v)
{
    if (v != NULL && !v->builtin) {
        free(v);
    }
}

/* ---- Learner. ---- */

void
sh_learn_observe(sh_learn_counts_t *c, uint64_t x, uint64_t y,
                 const float *w, unsigned t)
{
    uint64_t diff = x ^ y;
    unsigned j;

    c->pairs++;
    for (j = 0; j + t < 64; j++) {
        float    f = fabsf(w[j]) / SH_LEARN_WIDTH;
        unsigned b = f < (float) SH_LEARN_BINS ? (unsigned) f
                                               : SH_LEARN_BINS - 1;  /* NaN */
        c->seen[b]++;
        c->flipped[b] += (diff >> j) & 1;
    }
}

sh_volatility_t *
sh_volatility_learned(const sh_learn_counts_t *cnt,
                      const sh_volatility_t *prior)
{
    /* Pseudo-observations of the prior per bin: enough to keep a bin with
     * a handful of observations near the prior, few enough to be
     * overruled by a few hundred. */
    const double alpha = 50;
    double p[SH_LEARN_BINS], wt[SH_LEARN_BINS];
    int    blk_start[SH_LEARN_BINS];
    int    nblk = 0, i, j;
    float  c[SH_LEARN_BINS], s[SH_LEARN_BINS];
    sh_volatility_t *v;

    if (prior == NULL) {
        prior = sh_volatility_default();
    }
    for (i = 0; i < SH_LEARN_BINS; i++) {
        float  center = (i + 0.5f) * SH_LEARN_WIDTH;
        double pp = sh_volatility_p(prior, center);

        wt[i] = (double) cnt->seen[i] + alpha;
        p[i] = ((double) cnt->flipped[i] + alpha * pp) / wt[i];
    }

    /* Pool adjacent violators: the flip rate cannot grow with |w|. */
    for (i = 0; i < SH_LEARN_BINS; i++) {
        blk_start[nblk++] = i;
        while (nblk > 1) {
            int a = blk_start[nblk - 2], b = blk_start[nblk - 1];

            if (p[a] >= p[b]) {
                break;
            }
            p[a] = (p[a] * wt[a] + p[b] * wt[b]) / (wt[a] + wt[b]);
            wt[a] += wt[b];
            nblk--;
        }
    }
    for (i = 0; i < nblk; i++) {
        int end = i + 1 < nblk ? blk_start[i + 1] : SH_LEARN_BINS;

        for (j = blk_start[i] + 1; j < end; j++) {
            p[j] = p[blk_start[i]];
        }
    }

    for (i = 0; i < SH_LEARN_BINS; i++) {
        double sv = 2 * p[i];

        c[i] = (i + 0.5f) * SH_LEARN_WIDTH;
        s[i] = (float) (sv > 1 ? 1 : sv < 1e-12 ? 1e-12 : sv);
        if (i > 0 && s[i] > s[i - 1]) {
            s[i] = s[i - 1];        /* float rounding after pooling */
        }
    }
    v = sh_volatility_from_points(c, s, SH_LEARN_BINS, NULL, 0);
    if (v != NULL) {
        sh_volatility_copy_k(v, prior);
    }
    return v;
}

/* ---- Files. ---- */

/* A k(t) row worth writing: any level known.  (Testing only the first and
 * the last level dropped rows known in between, which then did not load
 * back; found by fuzz/fuzz_volatility.c.) */
static int
k_row_known(const uint32_t *k)
{
    int i;

    for (i = 0; i < SH_VOL_NRECALL; i++) {
        if (k[i] != 0) {
            return 1;
        }
    }
    return 0;
}


int
sh_volatility_save(const sh_volatility_t *v, const char *path, char *err,
                   size_t errlen)
{
    char             *text = NULL;
    size_t            len = 0;
    FILE             *f;
    int               all, h, t, i;
    sh_file_writer_t *w;

    /* the text in memory first, then one safe replacement of the file */
    f = open_memstream(&text, &len);
    if (f == NULL) {
        sh_err_set(err, errlen, "out of memory");
        return -1;
    }
    fprintf(f, "simhash-volatility 1\n"
            "# points: |y| and P(|Y| > |y|); k: mode h t, then probes for"
            " relative recall");
    for (i = 0; i < SH_VOL_NRECALL; i++) {
        fprintf(f, " %.2f", sh_volatility_recall_levels[i]);
    }
    fprintf(f, "\npoints %u\n", v->npoints);
    for (i = 0; i < (int) v->npoints; i++) {
        fprintf(f, "%.9g %.9g\n", v->c[i], v->s[i]);
    }
    for (all = 0; all < 2; all++) {
        for (h = 1; h <= SH_VOL_HMAX; h++) {
            for (t = SH_VOL_TMIN; t <= SH_VOL_TMAX; t++) {
                const uint32_t *k = v->k[all][h - 1][t - SH_VOL_TMIN];

                if (!k_row_known(k)) {
                    continue;
                }
                fprintf(f, "k %c %d %d", all ? 'A' : 'F', h, t);
                for (i = 0; i < SH_VOL_NRECALL; i++) {
                    fprintf(f, " %u", k[i]);
                }
                fputc('\n', f);
            }
        }
    }
    fprintf(f, "end\n");
    if (ferror(f) || fclose(f) != 0) {
        sh_err_set(err, errlen, "out of memory");
        free(text);
        return -1;
    }

    w = sh_file_writer_open(path, 0644, NULL, err, errlen);
    if (w == NULL) {
        free(text);
        return -1;
    }
    if (sh_file_writer_write(w, text, len, err, errlen) != 0) {
        sh_file_writer_abort(w);
        free(text);
        return -1;
    }
    free(text);
    return sh_file_writer_commit(w, err, errlen);
}

sh_volatility_t *
sh_volatility_load(const char *path, char *err, size_t errlen)
{
    FILE  *f;
    char   line[512];
    float  c[SH_VOL_MAXPOINTS], s[SH_VOL_MAXPOINTS];
    unsigned np = 0, want = 0, lineno = 0;
    int    state = 0;       /* 0 magic, 1 header, 2 points, 3 k lines */
    sh_volatility_t *v = NULL;
    struct { int all; unsigned h, t; uint32_t k[SH_VOL_NRECALL]; } *ks = NULL;
    size_t nk = 0, capk = 0, i;
    int    ended = 0;

    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
#define BAD(msg) do { snprintf(err, errlen, "%s:%u: %s", path, lineno, msg); \
                      goto fail; } while (0)
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            BAD("line too long");
        }
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        if (ended) {
            BAD("data after 'end'");
        }
        if (state == 0) {
            if (strcmp(line, "simhash-volatility 1\n") != 0) {
                BAD("not a simhash volatility table (version 1)");
            }
            state = 1;
        } else if (state == 1) {
            if (sscanf(line, "points %u", &want) != 1 || want < 2
                || want > SH_VOL_MAXPOINTS)
            {
                BAD("expected 'points N' with 2 <= N <= 1024");
            }
            state = 2;
        } else if (state == 2) {
            char extra;

            if (sscanf(line, "%f %f %c", &c[np], &s[np], &extra) != 2) {
                BAD("expected two numbers");
            }
            if (++np == want) {
                state = 3;
            }
        } else if (strcmp(line, "end\n") == 0) {
            ended = 1;
        } else {
            char mode, extra;
            unsigned h, t, r[SH_VOL_NRECALL];

            if (sscanf(line, "k %c %u %u %u %u %u %u %u %u %u %u %c", &mode,
                       &h, &t, &r[0], &r[1], &r[2], &r[3], &r[4], &r[5],
                       &r[6], &r[7], &extra) != 3 + SH_VOL_NRECALL
                || (mode != 'F' && mode != 'A')
                || !kslot(mode == 'A', h, t))
            {
                BAD("expected 'k F|A h t' and 8 probe counts");
            }
            if (nk == capk) {
                void *nks;

                capk = capk ? 2 * capk : 64;
                nks = realloc(ks, capk * sizeof(*ks));
                if (nks == NULL) {
                    BAD("out of memory");
                }
                ks = nks;
            }
            ks[nk].all = mode == 'A';
            ks[nk].h = h;
            ks[nk].t = t;
            for (i = 0; i < SH_VOL_NRECALL; i++) {
                ks[nk].k[i] = r[i];
            }
            nk++;
        }
    }
    if (ferror(f)) {
        BAD("read error");
    }
    if (!ended) {
        BAD("truncated: no 'end' line");
    }
#undef BAD
    fclose(f);
    f = NULL;
    v = sh_volatility_from_points(c, s, np, err, errlen);
    if (v == NULL) {
        free(ks);
        return NULL;
    }
    for (i = 0; i < nk; i++) {
        sh_volatility_set_k(v, ks[i].all, ks[i].h, ks[i].t, ks[i].k);
    }
    free(ks);
    return v;

fail:
    if (f != NULL) {
        fclose(f);
    }
    free(ks);
    return NULL;
}

int
sh_volatility_write_c(const sh_volatility_t *v, const char *path, char *err,
                      size_t errlen)
{
    FILE *f = fopen(path, "w");
    int   all, h, t, i, n = 0;

    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "/*\n * sh_volatility_data.c -- the built-in volatility table,"
            " generated by\n * `simhash calibrate --emit-c`.  Do not edit:"
            " regenerate (see BENCHMARKS.md).\n */\n"
            "#include <stdint.h>\n\n#include \"sh_volatility.h\"\n\n"
            "const unsigned sh_vol_builtin_npoints = %u;\n"
            "const float sh_vol_builtin_points[][2] = {\n", v->npoints);
    for (i = 0; i < (int) v->npoints; i++) {
        fprintf(f, "    { %.9ef, %.9ef },\n", v->c[i], v->s[i]);
    }
    fprintf(f, "};\n\nconst uint32_t sh_vol_builtin_k[][3 + SH_VOL_NRECALL]"
            " = {\n");
    for (all = 0; all < 2; all++) {
        for (h = 1; h <= SH_VOL_HMAX; h++) {
            for (t = SH_VOL_TMIN; t <= SH_VOL_TMAX; t++) {
                const uint32_t *k = v->k[all][h - 1][t - SH_VOL_TMIN];

                if (!k_row_known(k)) {
                    continue;
                }
                fprintf(f, "    { %d, %d, %d,", all, h, t);
                for (i = 0; i < SH_VOL_NRECALL; i++) {
                    fprintf(f, " %u%s", k[i],
                            i + 1 < SH_VOL_NRECALL ? "," : "");
                }
                fprintf(f, " },\n");
                n++;
            }
        }
    }
    if (n == 0) {
        fprintf(f, "    { 0 },\n");
    }
    fprintf(f, "};\n\nconst unsigned sh_vol_builtin_nk = %d;\n", n);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    return 0;
}
