/*
 * sh_volatility.h -- how likely each fingerprint bit is to differ in a
 * near-duplicate: p_j(u) = P(Y > |W_j(u)|) (PSM paper, section 5.1), read off
 * an empirical quantile table of Y.  `simhash calibrate` builds the table
 * from a corpus; a default measured on real pages is built in.  Because the
 * core library L2-normalises the weights, one table serves every corpus.
 */
#ifndef SH_VOLATILITY_H
#define SH_VOLATILITY_H

#include <stddef.h>
#include <stdint.h>

typedef struct sh_volatility_s sh_volatility_t;

/* The built-in table. */
const sh_volatility_t *sh_volatility_default(void);

/* p(|w|): probability that a bit with weight w flips in a near-duplicate. */
float sh_volatility_p(const sh_volatility_t *v, float w);

sh_volatility_t *sh_volatility_load(const char *path, char *err,
                                    size_t errlen);
int sh_volatility_save(const sh_volatility_t *v, const char *path,
                       char *err, size_t errlen);
void sh_volatility_free(sh_volatility_t *v);

/* ---- For the index, the calibration tool and the online learner. ---- */

/*
 * The table is a list of points (c, S(c)) of the survival function of |Y|,
 * S(c) = P(|Y| > c), c increasing and S decreasing; between points log S is
 * interpolated linearly and past the last point the last slope continues
 * (the paper finds exponential tails).  Y is symmetric, so p(c) = S(c) / 2.
 * Probabilities are clamped to [SH_VOL_PMIN, SH_VOL_PMAX] so that log-odds
 * stay finite.
 */
#define SH_VOL_PMIN       1e-7f
#define SH_VOL_PMAX       0.499f
#define SH_VOL_MAXPOINTS  1024

/*
 * k(t): probes needed for a target relative recall, measured by `simhash
 * calibrate` for each mode (0 = first match, 1 = all matches), radius h
 * and header width t, at the recall levels below.
 */
#define SH_VOL_TMIN       4
#define SH_VOL_TMAX       40
#define SH_VOL_NRECALL    8
#define SH_VOL_HMAX       7     /* k(t) is kept for radii 1..7 (SH_H_MAX) */
extern const float sh_volatility_recall_levels[SH_VOL_NRECALL];

/*
 * The top t bits (63 .. 64-t) ranked by decreasing log-odds for weights w
 * (NULL: all equal): lo[r] and the bit position bit_of[r] of rank r.  The
 * sort key is the look-up table cell of |w|, ties in bit order (higher bit
 * first), so every caller sees exactly the same order.  t <= 64.
 */
void sh_volatility_rank_header(const sh_volatility_t *v, const float *w,
                               unsigned t, float *lo, uint8_t *bit_of);

/*
 * The first m ranks of that order only (m <= t), for a caller that needs no
 * more: VOSH's first k subsets use only the k most volatile bits, since
 * every log-odds is negative (p < 1/2) and a subset scores below each of its
 * elements alone.
 */
void sh_volatility_rank_top(const sh_volatility_t *v, const float *w,
                            unsigned t, unsigned m, float *lo,
                            uint8_t *bit_of);

/* Log-odds log(p / (1 - p)) of a bit with weight w: the VOSH score unit. */
float sh_volatility_logodds(const sh_volatility_t *v, float w);

/*
 * Probes for a target recall: the calibrated k at the smallest recall level
 * >= `recall`, for the nearest calibrated t; `fallback` if nothing is known.
 */
unsigned sh_volatility_k(const sh_volatility_t *v, int all, unsigned h,
                         unsigned t, float recall, unsigned fallback);

/* Build from samples of |Y| (sorted in place).  NULL + err on bad input. */
sh_volatility_t *sh_volatility_from_samples(float *absy, size_t n,
                                            char *err, size_t errlen);

/* Build from explicit survival points. */
sh_volatility_t *sh_volatility_from_points(const float *c, const float *s,
                                           size_t n, char *err,
                                           size_t errlen);

/* Record k at every recall level for (all, h, t); 0 entries mean unknown. */
int sh_volatility_set_k(sh_volatility_t *v, int all, unsigned h, unsigned t,
                        const uint32_t k[SH_VOL_NRECALL]);

/* Copy the k(t) table of `from` into `to`. */
void sh_volatility_copy_k(sh_volatility_t *to, const sh_volatility_t *from);

/* Write the table as C source (for the built-in default). */
int sh_volatility_write_c(const sh_volatility_t *v, const char *path,
                          char *err, size_t errlen);

/*
 * Online learner.  For every near-duplicate a lookup confirms, the bits
 * outside the header are tallied by the query's |W_j|: seen, and how many
 * really differed.  Header bits are left out on purpose: whether a pair is
 * found at all depends on its header flips, so counting them would teach
 * the learner its own prior; the other bits are independent of that choice.
 */
#define SH_LEARN_BINS     64
#define SH_LEARN_WIDTH    (1.0f / 16)     /* bin width in |W| */

typedef struct {
    uint64_t pairs;                       /* confirmed pairs counted */
    uint64_t seen[SH_LEARN_BINS];
    uint64_t flipped[SH_LEARN_BINS];
} sh_learn_counts_t;

/* Tally one confirmed pair (query x with weights w, match y) over the bits
 * below the top t.  Plain increments: for single-threaded use. */
void sh_learn_observe(sh_learn_counts_t *c, uint64_t x, uint64_t y,
                      const float *w, unsigned t);

/*
 * A table whose p(|w|) is the learned flip rate, shrunk towards `prior`
 * (pseudo-counts) where data is thin and made non-increasing in |w|; the
 * k(t) table is the prior's.
 */
sh_volatility_t *sh_volatility_learned(const sh_learn_counts_t *c,
                                       const sh_volatility_t *prior);

#endif
