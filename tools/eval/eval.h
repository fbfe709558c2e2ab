/*
 * eval.h -- `sh-eval`, the quality measurement behind docs/QUALITY.md.
 *
 * Ground truth is the exact Jaccard similarity of the sets of 5-word
 * shingles of each page's visible text, taken from the library's own token
 * stream (sh_doc_set_token_hook: normalised tokens before stop words and
 * stemming), so that "the text" means the same thing for the truth and for
 * the fingerprint.  Two populations of pairs are measured:
 *
 *   aligned  rust-doc pages present under the same relative path in std and
 *            in core or alloc (std re-exports them): the real near-duplicates,
 *            the population recall is measured on;
 *   prose    every pair of pages of the Python and PostgreSQL manuals, pages
 *            with essentially no near-duplicates: the false-positive rate.
 *
 * Each extraction configuration fingerprints every page once (results cached
 * in the build directory, keyed by the options and the binary), then every
 * pair gets its Hamming distance.
 */
#ifndef SH_EVAL_H
#define SH_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "sh_doc.h"

#define EV_HMAX        8       /* curves are reported for h = 0..EV_HMAX */
#define EV_SHINGLE_W   5       /* words per ground-truth shingle */
/* Pages with fewer distinct truth shingles than this are left out of every
 * pair: their Jaccard is too coarse to mean anything (redirect stubs). */
#define EV_MIN_SHINGLES 16

enum { EV_ALIGNED = 0, EV_PROSE = 1 };

typedef struct {
    char      *path;
    uint64_t   size;
    uint64_t  *shingles;        /* truth: sorted, distinct 64-bit hashes */
    uint32_t   nshingles;
    uint32_t   ntokens;
} ev_page_t;

typedef struct {
    uint64_t   hash;
    uint32_t   status;          /* sh_status_t */
    uint32_t   nfeatures;
    uint32_t   short_hub;       /* sh_result_short_hub: matched within
                                   SH_SHORT_H only (sh_match_short) */
    float      w[SH_BITS];      /* W[j], for the weighted rule (match.c) */
    sh_sketches_t sk;           /* the listing veto (sh_sketch.h) */
} ev_fp_t;

/* A pair the listing veto calls two listings of one template: the proxy
 * never reports it, whatever its distance (ev_* distance functions). */
static inline int
ev_vetoed(const ev_fp_t *a, const ev_fp_t *b)
{
    return sh_sketch_veto(&a->sk, &b->sk);
}

typedef struct {
    uint32_t   a, b;            /* page indices */
    uint16_t   kind;            /* EV_ALIGNED or EV_PROSE */
    uint16_t   group;           /* index into ev_run_t.groups */
    float      jaccard;
} ev_pair_t;

/*
 * Which pairs land within h = 3 is decided by a handful of borderline
 * pairs, and for those the hash key is a coin toss: a configuration is
 * measured under several keys (seed 0 is the public default key, the
 * others "sh-eval-K") and the counts are pooled.
 */
#define EV_SEEDS_MAX 16

typedef struct {
    char         *name;
    char         *spec;         /* the option text, as given */
    sh_options_t  opts;
    /* --idf-corpus LIST: build the IDF table from these pages under each
     * key (what `simhash idf build --seed K --list LIST` does), since a
     * table is tied to the key it was built with. */
    const char   *idf_corpus;
    char         *idf_path;     /* the table built for the current key */
    const char   *spec_seed;    /* the --seed given, "" if none */
    size_t        spec_seed_len;
    ev_fp_t      *fp[EV_SEEDS_MAX];     /* one per page, per seed */
    double        seconds;      /* wall time, one pass over every page */
    unsigned      cached;       /* seeds found in the cache */
} ev_config_t;

#define EV_GROUPS_MAX 16

typedef struct ev_template_s ev_template_t;     /* template.c */

typedef struct {
    ev_page_t    *pages;
    size_t        npages, cap_pages;
    uint32_t     *slots;        /* path hash table: page index + 1, 0 empty */
    size_t        nslots;
    ev_pair_t    *pairs;
    size_t        npairs, cap_pairs;
    /* Pair groups: "core", "alloc" for aligned pairs, "python",
     * "python~postgresql", ... for prose pairs. */
    char         *groups[EV_GROUPS_MAX];
    unsigned      ngroups;
    uint16_t      group_kind[EV_GROUPS_MAX];
    ev_config_t  *configs;
    size_t        nconfigs;
    unsigned      threads;
    unsigned      nseeds;
    const char   *cache_dir;    /* NULL: no cache */
    const char   *out_dir;
    const char   *match_config; /* --match: compare the rules under it */
    uint64_t      identity;     /* of this binary, for cache keys */
    /* Pairs listed but left out: a page below EV_MIN_SHINGLES. */
    size_t        aligned_listed, aligned_dropped;
    size_t        prose_listed, prose_dropped;   /* pages */
    ev_template_t *tmpl;        /* --template, --site: NULL without */
} ev_run_t;

/* util.c */
void  ev_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                 noreturn));
void *ev_xmalloc(size_t n);
void *ev_xcalloc(size_t n, size_t size);
void *ev_xrealloc(void *p, size_t n);
char *ev_xstrdup(const char *s);
int   ev_split_tabs(char *line, char **f, int max);   /* field count */
double ev_now(void);
uint64_t ev_self_identity(void);
unsigned ev_group(ev_run_t *run, const char *name, uint16_t kind);
uint32_t ev_page(ev_run_t *run, const char *path);
void ev_add_pair(ev_run_t *run, uint32_t a, uint32_t b, uint16_t kind,
                 uint16_t group);

/* options.c: "NAME: --option value ..." -> configuration */
void ev_config_parse(ev_config_t *c, const char *text);
void ev_config_seed(ev_config_t *c, unsigned seed);
uint64_t ev_config_key(const ev_config_t *c, uint64_t salt);

/* pages.c: fingerprint every page under one configuration and the key of
 * `seed`, or (truth) collect the ground-truth shingle sets instead. */
void ev_fingerprint(ev_run_t *run, ev_config_t *c, unsigned seed);
void ev_truth(ev_run_t *run, ev_config_t *c);
/* The ground-truth shingle set of an HTML text, into pg (shingles,
 * nshingles, ntokens); cfg is used as the truth uses it. */
void ev_truth_of(sh_config_t *cfg, const char *html, size_t len,
                 ev_page_t *pg);
int  ev_truth_load(ev_run_t *run, uint64_t key);
void ev_truth_save(const ev_run_t *run, uint64_t key);
/* Build (or find in the cache) the IDF table of c->idf_corpus under the
 * configuration's current key; sets c->opts.idf_file. */
void ev_idf_prepare(ev_run_t *run, ev_config_t *c);

/* truth.c */
double ev_jaccard(const ev_page_t *a, const ev_page_t *b);
void   ev_pairs_jaccard(ev_run_t *run);
uint32_t *ev_intersections(const ev_page_t *all, const uint32_t *pages,
                           size_t m);

/* report.c */
void ev_report(ev_run_t *run);

/* template.c: the same documents under two templates, and documents of
 * one site under one template, against main-content truth. */
void ev_template_read(ev_run_t *run, const char *path, int site);
void ev_template_truth(ev_run_t *run);
void ev_template_report(const ev_run_t *run);
/* sketch.c: learned per-host templates, simulated on the site groups. */
void ev_sketch_report(const ev_run_t *run);
/* match.c: the hamming and weighted match rules side by side */
void ev_match_report(ev_run_t *run, const ev_config_t *c);

#endif
