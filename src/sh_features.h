/*
 * sh_features.h -- terms -> weighted features of one document.
 *
 * Every term is a WORD feature, and every run of w consecutive terms (w =
 * the shingle size, runs crossing block boundaries included) is a SHINGLE
 * feature.  The table counts each distinct feature's occurrences (its term
 * frequency, tf).  It keeps at most `max_features` distinct features: past
 * the cap a feature not yet in the table is ignored (and the document is
 * marked truncated) while those already in it keep counting, so a huge page
 * is fingerprinted on the features of its beginning and memory stays
 * bounded (a 24-byte slot, at most 4/3 x max_features slots rounded up to
 * a power of two, and 4 bytes of first-seen order for each).
 *
 * Weights: w = type_weight[type] x g(m) x idf, where idf applies to words
 * only (sh_idf.h) and is 1 without a table, m is the feature's occurrences
 * each counted by the weight of its block (sh_block.h), and g(m) = 1 + ln m
 * for m > 1, m below: sublinear TF on weighted counts.  Each term comes
 * with its block's class: a weight in sixteenths, and whether the block is
 * in the page's main content; a shingle takes the lowest weight of its
 * terms' blocks, and is in the main content when all of them are.  With
 * every block at full weight, m is the plain term frequency tf.
 */
#ifndef SH_FEATURES_H
#define SH_FEATURES_H

#include <stddef.h>
#include <stdint.h>

#include "sh_idf.h"
#include "sh_simhash.h"

/* Feature types; each has one constant weight (sh_options_t). */
enum {
    SH_FEAT_WORD = 0,       /* a stemmed word */
    SH_FEAT_SHINGLE = 1,    /* w consecutive stemmed words */
    SH_FEAT_NTYPES
};

#define SH_SHINGLE_MAX      8

typedef struct sh_features_s sh_features_t;

/* Build the weighing tables; sh_library_init calls it once. */
void sh_features_init(void);

sh_features_t *sh_features_new(unsigned shingle, unsigned max_features);
void sh_features_free(sh_features_t *f);

/* Empty the table for the next document, keeping its memory: cheaper than
 * free + new, in time proportional to the features it held. */
void sh_features_reset(sh_features_t *f);

/* A term's class: its block's weight (0..SH_BLOCK_FULL), whether the
 * block is in the main content, and the weight the block has if the page
 * turns out to be a hub (its own content's link text not discounted:
 * sh_doc.c), in bits SH_CLASS_HUB_SHIFT and up. */
#define SH_CLASS_WEIGHT 0x1F
#define SH_CLASS_MAIN   0x20
#define SH_CLASS_HUB_SHIFT 6
#define SH_CLASS_FULL   (16 | 16 << SH_CLASS_HUB_SHIFT)  /* weight 1 either
                                                           way, not MAIN */

/* Add one term (a keyed word hash from sh_text) of class `cls`. */
void sh_features_term(sh_features_t *f, uint64_t term, unsigned cls);

size_t sh_features_count(const sh_features_t *f);
int    sh_features_truncated(const sh_features_t *f);
int    sh_features_failed(const sh_features_t *f);   /* out of memory */

/* Accumulate every feature's weight into the simhash sums; the blocks
 * outside the main content count `outside` (1: as much as the rest).
 * With `hub` set, each occurrence counts its block's hub weight (see
 * SH_CLASS_HUB_SHIFT) instead: a page whose own content is links. */
void sh_features_weigh(const sh_features_t *f, const float *type_weight,
                       const sh_idf_t *idf, float outside, int hub,
                       sh_acc_t *acc);

typedef void (*sh_features_visit_fn)(void *arg, uint64_t feature,
                                     unsigned type, uint32_t tf);
void sh_features_foreach(const sh_features_t *f, sh_features_visit_fn fn,
                         void *arg);

#endif
