/*
 * sh_simhash.h -- Charikar's simhash over weighted features, and the result
 * of fingerprinting one page.
 *
 * Bit numbering: bit j of a fingerprint is (hash >> j) & 1, j = 0..63, and
 * weights[j] is the signed sum W[j] that decided it (bit = 1 iff W[j] >= 0).
 * "The top t bits" are bits 63..64-t.  The weights are divided by the L2 norm
 * of the document's feature weights, so |W[j]| has the same scale on every
 * page (the PSM index turns |W[j]| into a flip probability with one table).
 */
#ifndef SH_SIMHASH_H
#define SH_SIMHASH_H

#include <stddef.h>
#include <stdint.h>

#include "sh_popcnt.h"      /* sh_distance */
#include "sh_sketch.h"

#define SH_BITS 64

typedef enum {
    SH_STATUS_OK = 0,     /* fingerprint computed */
    SH_STATUS_TOO_SHORT,  /* fewer than min_features features: no fingerprint */
    SH_STATUS_BINARY,     /* not text (NUL bytes or mostly undecodable) */
    SH_STATUS_TOO_LARGE,  /* a construct or text run over SH_PENDING_MAX */
    SH_STATUS_TOO_COMPLEX /* markup over its work budget (sh_budget.h) */
} sh_status_t;

typedef struct {
    sh_status_t status;
    uint64_t    hash;               /* valid when status == SH_STATUS_OK */
    float       weights[SH_BITS];   /* W[j], L2-normalised */
    uint32_t    nfeatures;          /* distinct features that were weighted */
    uint32_t    ntokens;            /* tokens after stop words */
    uint64_t    nbytes;             /* body bytes seen */
    unsigned    truncated;          /* 1: the feature cap was reached */
    const char *why;                /* TOO_LARGE, TOO_COMPLEX: a word for
                                       the log (sh_budget_why_name) */
    sh_sketches_t sketches;         /* structure and links (sh_sketch.h) */
    uint32_t    nstructure;         /* distinct features of each sketch */
    uint32_t    nlinks;
    uint32_t    nown;               /* terms of the page's own content:
                                       outside chrome, in MAIN when it has
                                       MAIN (all, with content weighting
                                       off) */
    unsigned    short_content;      /* 1: nown < SH_SHORT_TERMS, a few
                                       dozen words (sh_match_short) */
    unsigned    hub;                /* 1: its own content is links
                                       (sh_block_links_are_content) */
} sh_result_t;

/*
 * Accumulator: W[j] += +w if bit j of h is set, -w otherwise.  Branch-free,
 * eight lanes per byte of h.
 */
typedef struct {
    float  w[SH_BITS];
    double norm2;                   /* sum of w^2, for the L2 normalisation */
} sh_acc_t;

void sh_acc_init(sh_acc_t *acc);
void sh_acc_add(sh_acc_t *acc, uint64_t h, float w);
/* Normalise, set the bits; fills hash and weights of `res`. */
void sh_acc_finish(const sh_acc_t *acc, sh_result_t *res);

const char *sh_status_name(sh_status_t s);

#endif
