/*
 * cmd_calibrate.c -- `simhash calibrate`: the volatility table from a
 * corpus (PSM section 5.1) and the probe table k(t) (the idea of the
 * paper's Figure 5).
 *
 * Near-duplicate pairs of the corpus are found exactly (brute force), plus
 * pairs made by editing pages the way sites change them (page_edit.h).  For
 * every pair (u, v) and every bit j, |Y| = |W_j(u) - W_j(v)| is one sample
 * of how far a near-duplicate moves a weight; then p(|w|) = P(Y > |w|) =
 * S(|w|) / 2 by symmetry.  Exact duplicates (distance 0) are left out:
 * they say nothing about which bits move.
 *
 * k(t): for every query page and header width t, the VOSH rank of each
 * true match's header difference under the new table gives the recall
 * reached with k probes; the smallest k reaching each level is recorded,
 * for mode ALL (pairs) and FIRST (pages with at least one match).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "page_edit.h"
#include "pageset.h"
#include "sh_brute.h"
#include "sh_index.h"
#include "sh_volatility.h"
#include "sh_vosh.h"

#define RANK_NONE       UINT32_MAX
#define PER_PAGE_MAX    50      /* partners per page: clusters don't rule */

static const char synopsis[] =
    "usage: simhash calibrate [options] --list PATHS -o FILE\n\n"
    "Build the volatility table p(|w|) and the probe table k(t) from a "
    "corpus.\n\n";

typedef struct {
    const float *wu, *wv;
    uint64_t     u, v;
} cpair_t;

typedef struct {
    cpair_t *p;
    size_t   n, cap;
} cpairs_t;

static int
cp_add(cpairs_t *ps, uint64_t u, const float *wu, uint64_t v,
       const float *wv)
{
    if (ps->n == ps->cap) {
        size_t nc = ps->cap ? 2 * ps->cap : 4096;
        void  *np = realloc(ps->p, nc * sizeof(cpair_t));

        if (np == NULL) {
            return -1;
        }
        ps->p = np;
        ps->cap = nc;
    }
    ps->p[ps->n].u = u;
    ps->p[ps->n].v = v;
    ps->p[ps->n].wu = wu;
    ps->p[ps->n].wv = wv;
    ps->n++;
    return 0;
}

/* VOSH rank of header difference `mask` for a query; RANK_NONE if beyond
 * SH_PROBES_MAX. */
static uint32_t
rank_of(const sh_volatility_t *vol, const float *w, unsigned t, unsigned h,
        uint64_t mask)
{
    static sh_vosh_node_t heap[SH_VOSH_HEAP_FOR(SH_PROBES_MAX, SH_H_MAX)];
    float     lo[40];
    uint8_t   bit_of[40];
    sh_vosh_t v;
    sh_vosh_node_t node;
    uint32_t  k;

    if (mask == 0) {
        return 0;
    }
    if ((unsigned) __builtin_popcountll(mask) > h) {
        return RANK_NONE;
    }
    sh_vosh_rank_header(vol, w, t, lo, bit_of);
    sh_vosh_init(&v, lo, t, h, heap,
                 SH_VOSH_HEAP_FOR(SH_PROBES_MAX, SH_H_MAX));
    for (k = 1; k <= SH_PROBES_MAX && sh_vosh_next(&v, &node); k++) {
        uint64_t m = 0;
        unsigned e;

        for (e = 0; e < node.size; e++) {
            m |= 1ull << bit_of[node.idx[e]];
        }
        if (m == mask) {
            return k;
        }
    }
    return RANK_NONE;
}

static int
cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

    return (x > y) - (x < y);
}

/* k at each recall level from sorted ranks. */
static void
levels(uint32_t *r, size_t n, uint32_t k[SH_VOL_NRECALL])
{
    int l;

    qsort(r, n, sizeof(uint32_t), cmp_u32);
    for (l = 0; l < SH_VOL_NRECALL; l++) {
        size_t need = (size_t) (sh_volatility_recall_levels[l] * (double) n
                                + 0.999999);
        uint32_t v;

        if (need == 0) {
            need = 1;
        }
        v = r[need - 1];
        k[l] = v == RANK_NONE ? SH_PROBES_MAX : (v == 0 ? 1 : v);
    }
}

/* The k(t) table from the query pages and their matches within h. */
static void
calibrate_k(sh_volatility_t *vol, const cpairs_t *q, size_t nq_pages,
            const uint32_t *qoff)
{
    uint32_t *rall = malloc((q->n + 1) * sizeof(uint32_t));
    uint32_t *rfirst = malloc((nq_pages + 1) * sizeof(uint32_t));
    unsigned  h, t;
    size_t    i, j;

    for (h = 1; h <= SH_H_MAX; h++) {
        for (t = 8; t <= 32; t += (h <= 4 ? 1 : 4)) {
            uint64_t hmask = ~0ull << (64 - t);
            size_t   na = 0, nf = 0;
            uint32_t k[SH_VOL_NRECALL], ka95;

            for (i = 0; i < nq_pages; i++) {
                uint32_t best = RANK_NONE;
                int      any = 0;

                for (j = qoff[i]; j < qoff[i + 1]; j++) {
                    const cpair_t *p = &q->p[j];
                    uint32_t r;

                    if ((unsigned) __builtin_popcountll(p->u ^ p->v) > h) {
                        continue;
                    }
                    r = rank_of(vol, p->wu, t, h, (p->u ^ p->v) & hmask);
                    rall[na++] = r;
                    best = r < best ? r : best;
                    any = 1;
                }
                if (any) {
                    rfirst[nf++] = best;
                }
            }
            if (na == 0) {
                continue;
            }
            levels(rall, na, k);
            sh_volatility_set_k(vol, 1, h, t, k);
            ka95 = k[3];
            levels(rfirst, nf, k);
            sh_volatility_set_k(vol, 0, h, t, k);
            if (h == SH_H_DEFAULT && t % 4 == 0) {
                fprintf(stderr, "calibrate: h=%u t=%u  k for 95%%: all %u, "
                        "first %u (%zu pairs, %zu pages)\n", h, t,
                        ka95, k[3], na, nf);
            }
        }
    }
    free(rall);
    free(rfirst);
}

/* One calibration: its options, the pages, the pairs. */
typedef struct {
    unsigned      pair_h, edits, max_pages, nqueries;
    pageset_t     fs;           /* the corpus */
    pageset_t     es;           /* edited copies of its pages */
    uint32_t     *ok;           /* the pages compared, indices into fs */
    size_t        nok;
    uint32_t     *eorig;        /* the page each edited copy is of */
    sh_brute_t    br;
    sh_match_t   *m;
    cpairs_t      pairs;        /* within pair_h: the samples */
    cpairs_t      qpairs;       /* within SH_H_MAX: the k(t) queries' */
    uint32_t     *qoff;         /* query q's pairs: [qoff[q], qoff[q + 1]) */
    size_t        nq;
    uint64_t      rng;
} cal_t;

/* The pages with a fingerprint, a random sample if there are too many,
 * in a brute-force index. */
static int
sample_pages(cal_t *c)
{
    size_t i;

    c->ok = malloc((c->fs.n + 1) * sizeof(uint32_t));
    c->m = malloc(65536 * sizeof(sh_match_t));
    if (c->ok == NULL || c->m == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < c->fs.n; i++) {
        if (c->fs.fp[i].status == SH_STATUS_OK) {
            c->ok[c->nok++] = (uint32_t) i;
        }
    }
    for (i = c->nok; i > 1; i--) {
        size_t   r = page_rand(&c->rng) % i;
        uint32_t tmp = c->ok[i - 1];

        c->ok[i - 1] = c->ok[r];
        c->ok[r] = tmp;
    }
    if (c->nok > c->max_pages) {
        c->nok = c->max_pages;
    }
    if (sh_brute_init(&c->br, c->nok) != 0) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < c->nok; i++) {
        sh_brute_add(&c->br, c->fs.fp[c->ok[i]].hash, (uint32_t) i);
    }
    return 0;
}

/* Natural pairs: exactly, all-to-all.  Samples from those within
 * pair_h; k(t) queries with every match within SH_H_MAX. */
static int
natural_pairs(cal_t *c)
{
    size_t i, j;

    c->qoff = malloc((c->nqueries + c->edits + 2) * sizeof(uint32_t));
    if (c->qoff == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < c->nok; i++) {
        const pageset_fp_t *u = &c->fs.fp[c->ok[i]];
        size_t n = sh_brute_lookup(&c->br, u->hash, SH_H_MAX, SH_MATCH_ALL,
                                   c->m, 65536), taken = 0, tq = 0;

        if (n > 65536) {
            n = 65536;
        }
        if (c->nq < c->nqueries) {
            c->qoff[c->nq] = (uint32_t) c->qpairs.n;
        }
        for (j = 0; j < n; j++) {
            const sh_match_t   *mj = &c->m[j];
            const pageset_fp_t *v = &c->fs.fp[c->ok[mj->ref]];

            if (mj->ref == i || mj->distance == 0) {
                continue;
            }
            if (mj->distance <= c->pair_h && mj->ref > i
                && taken < PER_PAGE_MAX) {
                cp_add(&c->pairs, u->hash, u->w, v->hash, v->w);
                taken++;
            }
            if (c->nq < c->nqueries && tq < PER_PAGE_MAX) {
                cp_add(&c->qpairs, u->hash, u->w, v->hash, v->w);
                tq++;
            }
        }
        if (c->nq < c->nqueries && tq > 0) {
            c->nq++;
        }
        pageset_progress("pairs", i + 1, c->nok);
    }
    c->qoff[c->nq] = (uint32_t) c->qpairs.n;
    return 0;
}

/* Edited pairs: what changes between two fetches of one page.  The
 * edited copies go to `es` first; pairs point into it once it has
 * stopped growing. */
static int
edited_pairs(cal_t *c, sh_config_t *cfg)
{
    size_t i;

    c->eorig = malloc((c->edits + 1) * sizeof(uint32_t));
    if (c->eorig == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < c->edits && c->nok > 0; i++) {
        size_t      pi = c->ok[page_rand(&c->rng) % c->nok];
        size_t      di = c->ok[page_rand(&c->rng) % c->nok];
        char       *page, *donor, *ed;
        size_t      len, dlen, elen;
        sh_result_t r;

        page = page_read_file(pageset_path(&c->fs, pi), &len);
        donor = page_read_file(pageset_path(&c->fs, di), &dlen);
        ed = page ? page_edit_page(page, len,
                                   (page_edit_t) (i % PAGE_EDIT_NTYPES),
                                   donor, donor ? dlen : 0, &c->rng, &elen)
                  : NULL;
        if (ed != NULL && pageset_fingerprint(cfg, ed, elen, &r) == 0
            && r.status == SH_STATUS_OK) {
            c->eorig[c->es.n] = (uint32_t) pi;
            pageset_add(&c->es, "edit", &r);
        }
        free(page);
        free(donor);
        free(ed);
        pageset_progress("edits", i + 1, c->edits);
    }
    for (i = 0; i < c->es.n; i++) {
        const pageset_fp_t *o = &c->fs.fp[c->eorig[i]];
        const pageset_fp_t *e = &c->es.fp[i];
        unsigned            d = sh_distance(e->hash, o->hash);

        if (d > 0 && d <= c->pair_h) {
            cp_add(&c->pairs, e->hash, e->w, o->hash, o->w);
        }
        /* The edited page is also a query whose match is its original. */
        if (d > 0 && d <= SH_H_MAX) {
            c->qoff[c->nq++] = (uint32_t) c->qpairs.n;
            cp_add(&c->qpairs, e->hash, e->w, o->hash, o->w);
        }
    }
    c->qoff[c->nq] = (uint32_t) c->qpairs.n;
    if (c->pairs.n == 0) {
        cli_error("calibrate: no near-duplicate pairs within %u bits; "
                  "add --edits or more pages", c->pair_h);
        return -1;
    }
    return 0;
}

/* p(|w|) from the samples |W_j(u) - W_j(v)| of every pair and bit. */
static sh_volatility_t *
fit_volatility(const cal_t *c)
{
    sh_volatility_t *vol;
    float           *ys;
    char             err[512];
    size_t           i, j;
    float            w;

    ys = malloc(c->pairs.n * 64 * sizeof(float));
    if (ys == NULL) {
        cli_error("out of memory");
        return NULL;
    }
    for (i = 0; i < c->pairs.n; i++) {
        for (j = 0; j < 64; j++) {
            ys[i * 64 + j] = c->pairs.p[i].wu[j] - c->pairs.p[i].wv[j];
        }
    }
    vol = sh_volatility_from_samples(ys, c->pairs.n * 64, err, sizeof(err));
    free(ys);
    if (vol == NULL) {
        cli_error("calibrate: %s", err);
        return NULL;
    }
    fprintf(stderr, "calibrate: %zu pages, %zu edited; %zu pairs within "
            "%u bits, %zu samples; %zu query pages for k(t); p(|w|):",
            c->nok, c->es.n, c->pairs.n, c->pair_h, c->pairs.n * 64, c->nq);
    for (w = 0; w < 1.6f; w += 0.25f) {
        fprintf(stderr, " %.2f:%.3g", w, sh_volatility_p(vol, w));
    }
    fprintf(stderr, "\n");
    return vol;
}

static void
cal_free(cal_t *c)
{
    free(c->pairs.p);
    free(c->qpairs.p);
    free(c->qoff);
    free(c->ok);
    free(c->eorig);
    free(c->m);
    sh_brute_free(&c->br);
    pageset_free(&c->fs);
    pageset_free(&c->es);
}

int
cmd_calibrate(int argc, char **argv)
{
    static cal_t     c;
    cli_extract_t    x;
    const char      *list = NULL, *out = NULL, *cache = NULL, *emit = NULL;
    char           **paths = NULL, err[512];
    size_t           npaths = 0;
    sh_config_t     *cfg = NULL;
    sh_volatility_t *vol = NULL;
    int              a, rc = 1;
    cli_opt_t        opts[] = {
        CLI_OPT_STRING("--list", "PATHS", &list, "pages ('-' = stdin)"),
        CLI_OPT_STRING("-o", "FILE", &out,
                       "the table, for --volatility options"),
        CLI_OPT_STRING("--cache", "FILE", &cache,
                       "keep the fingerprints in FILE between runs"),
        CLI_OPT_UINT("--pair-h", "N", &c.pair_h, 1, SH_H_MAX,
                     "pairs within N bits give the samples"),
        CLI_OPT_UINT("--edits", "N", &c.edits, 0, 1000000,
                     "edited pages added as pairs"),
        CLI_OPT_UINT("--max-pages", "N", &c.max_pages, 2, 1ul << 24,
                     "pages compared all-to-all"),
        CLI_OPT_UINT("--queries", "N", &c.nqueries, 1, 1000000,
                     "pages whose ranks make k(t)"),
        CLI_OPT_STRING("--emit-c", "FILE", &emit,
                       "also write the table as C (the built-in one)"),
        CLI_OPT_END
    };
    cli_cmd_t        cmd = {
        .name = "calibrate", .synopsis = synopsis, .opts = opts, .extract = &x
    };

    memset(&c, 0, sizeof(c));
    c.pair_h = 3;
    c.edits = 2000;
    c.max_pages = 40000;
    c.nqueries = 1000;
    c.rng = 0x3c6ef372fe94f82bull;
    cli_extract_init(&x);
    pageset_init(&c.fs);
    pageset_init(&c.es);
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    if (a < argc) {
        cli_error("calibrate: unexpected argument %s (see --help)", argv[a]);
        return 2;
    }
    if (list == NULL || out == NULL) {
        cli_error("calibrate needs --list PATHS and -o FILE");
        return 2;
    }
    if (cli_read_list(list, &paths, &npaths) != 0) {
        return 1;
    }
    cfg = cli_extract_config(&x);
    if (cfg == NULL
        || pageset_from_paths(&c.fs, cfg, x.charset, paths, npaths, cache)
           != 0
        || sample_pages(&c) != 0 || natural_pairs(&c) != 0
        || edited_pairs(&c, cfg) != 0 || (vol = fit_volatility(&c)) == NULL)
    {
        goto done;
    }
    calibrate_k(vol, &c.qpairs, c.nq, c.qoff);

    if (sh_volatility_save(vol, out, err, sizeof(err)) != 0
        || (emit != NULL
            && sh_volatility_write_c(vol, emit, err, sizeof(err)) != 0)) {
        cli_error("%s", err);
        goto done;
    }
    rc = 0;

done:
    sh_volatility_free(vol);
    cal_free(&c);
    sh_config_free(cfg);
    cli_free_list(paths, npaths);
    return rc;
}
