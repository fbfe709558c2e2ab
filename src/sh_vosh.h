/*
 * sh_vosh.h -- Volatility Ordered Set Heap (Sood & Loguinov 2011, section
 * 5.2): enumerate the non-empty subsets S of at most h bits in decreasing
 * order of p(u, S) = prod_{i in S} p_i * prod_{j not in S} (1 - p_j).
 *
 * Dividing by the common factor prod_j (1 - p_j) turns the score of S into
 * a plain sum of log-odds, log(p_i / (1 - p_i)), so subsets of different
 * sizes compare directly.  The caller numbers the bits 0..nbits-1 in
 * decreasing order of volatility (so lo[0] >= lo[1] >= ...), and maps the
 * ranks of an emitted subset back to bit positions itself.
 *
 * One tree per subset size s = 1..h, rooted at (0, 1, .., s-1).  A node's
 * left child increments its last element; its right child scans the gaps
 * between consecutive elements from right to left, stops at the first gap
 * of at least 2 and, if that gap is exactly 2, increments the element on
 * its left (the printed Algorithm 2 writes S_L on line 9 where S_R is
 * meant).  Every subset then has exactly one parent: if its last run of
 * consecutive elements has length 1 the parent decrements the last element
 * (left edge), otherwise it decrements the first element of that run (right
 * edge).  A child never scores higher than its parent (Lemma 1), so a
 * max-heap M of frontier nodes yields the subsets in order: k subsets cost
 * Theta(k log k) time and the heap holds at most h + k nodes.
 */
#ifndef SH_VOSH_H
#define SH_VOSH_H

#include <stddef.h>
#include <stdint.h>

#include "sh_volatility.h"

#define SH_VOSH_HMAX    SH_VOL_HMAX     /* largest subset size (= SH_H_MAX) */

typedef struct {
    double  score;              /* sum of log-odds of the elements */
    uint8_t size;
    uint8_t idx[SH_VOSH_HMAX];  /* ranks, strictly increasing */
} sh_vosh_node_t;

typedef struct {
    const float     *lo;        /* log-odds by rank, non-increasing */
    unsigned         nbits;
    unsigned         h;
    sh_vosh_node_t  *heap;      /* caller's storage */
    size_t           cap;
    size_t           len;
} sh_vosh_t;

/* Heap nodes needed to emit k subsets without running out. */
#define SH_VOSH_HEAP_FOR(k, h)  ((size_t) (k) + (size_t) (h) + 2)

/*
 * Start an enumeration of the subsets of size 1..h of nbits ranked bits
 * (h is clamped to nbits and SH_VOSH_HMAX).  `heap` must hold `cap` nodes;
 * with cap >= SH_VOSH_HEAP_FOR(k, h) the first k subsets are exact.
 */
void sh_vosh_init(sh_vosh_t *v, const float *lo, unsigned nbits, unsigned h,
                  sh_vosh_node_t *heap, size_t cap);

/* Next subset in decreasing score; 0 when every subset has been emitted
 * (or the heap storage is exhausted). */
int sh_vosh_next(sh_vosh_t *v, sh_vosh_node_t *out);

/*
 * Rank the top t bits of a fingerprint (bits 63 .. 64-t) by decreasing
 * log-odds under `vol` for weights w (NULL: all equal).  Writes lo[r] and
 * the bit position bit_of[r] of rank r.  Ties keep bit order (higher bit
 * first), so every caller -- the index, the benchmark's recall model, the
 * calibration -- sees the same order.
 */
void sh_vosh_rank_header(const sh_volatility_t *vol, const float *w,
                         unsigned t, float *lo, uint8_t *bit_of);

/* The two children of `s` in a tree over nbits bits; returns how many were
 * written to kids (0..2).  Exposed for the tests. */
int sh_vosh_children(const sh_vosh_node_t *s, unsigned nbits,
                     sh_vosh_node_t kids[2]);

#endif
