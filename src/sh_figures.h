/*
 * sh_figures.h -- the console's figures in a file: a versioned format in
 * which every field is written and read one by one, never as a memory
 * image, and a MAC under a key of the caller's (the zone's secret) that
 * the file never carries.
 *
 * The file (integers little-endian):
 *
 *   magic     "simhash-figures" and a NUL, 16 bytes
 *   version   u32, SH_FIGURES_VERSION
 *   shape     u32 x 9: the counts of every table below (sh_figures_shape_t)
 *   ntop      u32: the sites' entries present (at most k)
 *   times     u64 x 4: saved, since, the sites' total weight, replaced
 *   tables    responses, skipped, rates, outcomes, rule counts, decisions,
 *             the sites' entries: fixed-width records, see sh_figures.c
 *   mac       HMAC-SHA256 under the key of everything before it
 *
 * A file is read only into a zone of its own shape (every count equal to
 * the zone's), and only when its length is exactly what its shape says
 * and its MAC matches; then every field is checked against the bounds the
 * console relies on (texts end in NUL within their slot, events and
 * actions name one, the sites' table is one sh_topk_restore accepts).  A
 * MAC proves who wrote the file, not that its writer was right: the checks
 * hold whatever the key (a zone without a secret has a public one).
 *
 * Format 1 (a "simhash-figures1" magic: the image of one build's
 * structures) is recognised and refused, never read.
 */
#ifndef SH_FIGURES_H
#define SH_FIGURES_H

#include <stddef.h>
#include <stdint.h>

#include "sh_topk.h"

#define SH_FIGURES_VERSION  2
#define SH_FIGURES_TEXT     64      /* an outcome's host and rules, NUL
                                       included */
#define SH_FIGURES_NCOUNT   3       /* made, verified, failed */
#define SH_FIGURES_MAX      65536   /* entries of any one table at most */
#define SH_FIGURES_DIST_MAX 64      /* a decision's distance (0xffff: none) */
#define SH_FIGURES_NO_DIST  0xffff

/* the zone's tables: their counts (a file of another shape is refused) */
typedef struct {
    uint32_t nstatus;       /* responses by status */
    uint32_t nskip;         /* skips by reason */
    uint32_t nev;           /* events a rate slot counts; a decision's
                               status is one of them */
    uint32_t nslots;        /* rate slots */
    uint32_t noutcome;      /* outcome slots */
    uint32_t nrule;         /* rule count slots */
    uint32_t ndecision;     /* decision slots */
    uint32_t naction;       /* a decision's action is below it */
    uint32_t k;             /* the sites' table's entries */
} sh_figures_shape_t;

typedef struct {
    uint64_t hash;                          /* 0: a free slot */
    char     host[SH_FIGURES_TEXT];
    char     rules[SH_FIGURES_TEXT];
    uint64_t n[SH_FIGURES_NCOUNT];
} sh_figures_outcome_t;

typedef struct {
    uint64_t hash;                          /* 0: a free slot */
    uint64_t rule;
    uint64_t n[SH_FIGURES_NCOUNT];
} sh_figures_rule_t;

typedef struct {
    uint64_t keyhash;                       /* 0: a free slot */
    uint64_t original;
    uint32_t time;
    uint32_t score;
    uint16_t distance;
    uint8_t  status;
    uint8_t  action;
} sh_figures_decision_t;

typedef struct {
    sh_figures_shape_t     shape;
    uint64_t               saved;           /* time of the save */
    uint64_t               since;           /* the figures count from */
    uint64_t              *responses;       /* [nstatus] */
    uint64_t              *skipped;         /* [nskip] */
    uint64_t              *rate;            /* [nslots][1 + nev]: each
                                               slot's epoch, its counts */
    sh_figures_outcome_t  *outcome;         /* [noutcome] */
    sh_figures_rule_t     *rule;            /* [nrule] */
    sh_figures_decision_t *decision;        /* [ndecision] */
    uint64_t               total;           /* the sites' total weight */
    uint64_t               replaced;        /* and replacements */
    uint32_t               ntop;
    sh_topk_entry_t       *top;             /* [k], ntop of them used */
} sh_figures_t;

/* Figures of this shape, every table zeroed: NULL when out of memory or
 * the shape is out of bounds (a count 0 or above SH_FIGURES_MAX). */
sh_figures_t *sh_figures_new(const sh_figures_shape_t *shape);
void sh_figures_free(sh_figures_t *f);

/* The file's bytes, malloc()ed, MAC'd under key: 0, or -1 (out of memory,
 * or figures that would not read back: a text without its NUL). */
int sh_figures_encode(const sh_figures_t *f, const void *key, size_t keylen,
                      unsigned char **out, size_t *len);

/*
 * The figures of a file, for a zone of `shape`, checked as said above:
 * new figures (sh_figures_free), or NULL and why in err.  *old is set to
 * 1 when the file is of an older format (refused as such), else 0.
 */
sh_figures_t *sh_figures_decode(const unsigned char *buf, size_t len,
                                const sh_figures_shape_t *shape,
                                const void *key, size_t keylen, int *old,
                                char *err, size_t errlen);

/* The bytes a file of this shape with ntop sites has (0: out of bounds). */
size_t sh_figures_size(const sh_figures_shape_t *shape, uint32_t ntop);

#endif
