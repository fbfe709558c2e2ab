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

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: simhash calibrate [options] --list PATHS -o FILE\n\n"
        "Build the volatility table p(|w|) and the probe table k(t) from a "
        "corpus.\n\n"
        "  --list PATHS     pages ('-' = stdin)\n"
        "  -o FILE          the table, for --volatility options\n"
        "  --cache FILE     keep the fingerprints in FILE between runs\n"
        "  --pair-h N       pairs within N bits give the samples (default 3)"
        "\n  --edits N        edited pages added as pairs (default 2000)\n"
        "  --max-pages N    pages compared all-to-all (default 40000)\n"
        "  --queries N      pages whose ranks make k(t) (default 1000)\n"
        "  --emit-c FILE    also write the table as C (the built-in one)\n\n");
    cli_extract_usage(f);
}

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

int
cmd_calibrate(int argc, char **argv)
{
    cli_extract_t x;
    const char   *list = NULL, *out = NULL, *cache = NULL, *emit = NULL;
    unsigned long pair_h = 3, edits = 2000, max_pages = 40000, nqueries = 1000;
    char        **paths = NULL, err[512];
    size_t        npaths = 0, i, j, nok = 0;
    sh_config_t  *cfg = NULL;
    pageset_t    fs, es;
    sh_brute_t    br;
    cpairs_t      pairs = { 0 }, qpairs = { 0 };
    uint32_t     *qoff = NULL, *ok = NULL, *eorig = NULL;
    size_t        nq = 0;
    sh_match_t   *m = NULL;
    float        *ys = NULL;
    sh_volatility_t *vol = NULL;
    uint64_t      rng = 0x3c6ef372fe94f82bull;
    int           a, rc = 1;

    cli_extract_init(&x);
    pageset_init(&fs);
    pageset_init(&es);
    memset(&br, 0, sizeof(br));
    for (a = 1; a < argc; a++) {
        switch (cli_common_arg(&x, argc, argv, &a, usage)) {
        case CLI_ARG_HELP:
            return 0;
        case CLI_ARG_BAD:
            return 2;
        case CLI_ARG_TAKEN:
            continue;
        case CLI_ARG_OWN:
            break;
        }
        if (strcmp(argv[a], "--list") == 0 && a + 1 < argc) {
            list = argv[++a];
        } else if (strcmp(argv[a], "-o") == 0 && a + 1 < argc) {
            out = argv[++a];
        } else if (strcmp(argv[a], "--cache") == 0 && a + 1 < argc) {
            cache = argv[++a];
        } else if (strcmp(argv[a], "--emit-c") == 0 && a + 1 < argc) {
            emit = argv[++a];
        } else if (strcmp(argv[a], "--pair-h") == 0 && a + 1 < argc) {
            if (cli_parse_uint("--pair-h", argv[++a], 1, SH_H_MAX, &pair_h)) {
                return 2;
            }
        } else if (strcmp(argv[a], "--edits") == 0 && a + 1 < argc) {
            if (cli_parse_uint("--edits", argv[++a], 0, 1000000, &edits)) {
                return 2;
            }
        } else if (strcmp(argv[a], "--max-pages") == 0 && a + 1 < argc) {
            if (cli_parse_uint("--max-pages", argv[++a], 2, 1ul << 24,
                               &max_pages)) {
                return 2;
            }
        } else if (strcmp(argv[a], "--queries") == 0 && a + 1 < argc) {
            if (cli_parse_uint("--queries", argv[++a], 1, 1000000,
                               &nqueries)) {
                return 2;
            }
        } else {
            cli_error("calibrate: unknown option '%s'", argv[a]);
            return 2;
        }
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
        || pageset_from_paths(&fs, cfg, x.charset, paths, npaths, cache)
           != 0) {
        goto done;
    }

    /* Pages with a fingerprint, a random sample if there are too many. */
    ok = malloc((fs.n + 1) * sizeof(uint32_t));
    m = malloc(65536 * sizeof(sh_match_t));
    if (ok == NULL || m == NULL) {
        cli_error("out of memory");
        goto done;
    }
    for (i = 0; i < fs.n; i++) {
        if (fs.fp[i].status == SH_STATUS_OK) {
            ok[nok++] = (uint32_t) i;
        }
    }
    for (i = nok; i > 1; i--) {
        size_t   r = page_rand(&rng) % i;
        uint32_t tmp = ok[i - 1];

        ok[i - 1] = ok[r];
        ok[r] = tmp;
    }
    if (nok > max_pages) {
        nok = max_pages;
    }
    if (sh_brute_init(&br, nok) != 0) {
        cli_error("out of memory");
        goto done;
    }
    for (i = 0; i < nok; i++) {
        sh_brute_add(&br, fs.fp[ok[i]].hash, (uint32_t) i);
    }

    /* Natural pairs: exactly, all-to-all.  Samples from those within
     * pair_h; k(t) queries with every match within SH_H_MAX. */
    qoff = malloc((nqueries + edits + 2) * sizeof(uint32_t));
    if (qoff == NULL) {
        cli_error("out of memory");
        goto done;
    }
    for (i = 0; i < nok; i++) {
        const pageset_fp_t *u = &fs.fp[ok[i]];
        size_t n = sh_brute_lookup(&br, u->hash, SH_H_MAX, SH_MATCH_ALL, m,
                                   65536), taken = 0, tq = 0;

        if (n > 65536) {
            n = 65536;
        }
        if (nq < nqueries) {
            qoff[nq] = (uint32_t) qpairs.n;
        }
        for (j = 0; j < n; j++) {
            const pageset_fp_t *v = &fs.fp[ok[m[j].ref]];

            if (m[j].ref == i || m[j].distance == 0) {
                continue;
            }
            if (m[j].distance <= pair_h && m[j].ref > i
                && taken < PER_PAGE_MAX) {
                cp_add(&pairs, u->hash, u->w, v->hash, v->w);
                taken++;
            }
            if (nq < nqueries && tq < PER_PAGE_MAX) {
                cp_add(&qpairs, u->hash, u->w, v->hash, v->w);
                tq++;
            }
        }
        if (nq < nqueries && tq > 0) {
            nq++;
        }
        pageset_progress("pairs", i + 1, nok);
    }
    qoff[nq] = (uint32_t) qpairs.n;

    /* Edited pairs: what changes between two fetches of one page.  The
     * edited copies go to `es` first; pairs point into it once it has
     * stopped growing. */
    eorig = malloc((edits + 1) * sizeof(uint32_t));
    if (eorig == NULL) {
        cli_error("out of memory");
        goto done;
    }
    for (i = 0; i < edits && nok > 0; i++) {
        size_t      pi = ok[page_rand(&rng) % nok], di = ok[page_rand(&rng) % nok];
        char       *page, *donor, *ed;
        size_t      len, dlen, elen;
        sh_result_t r;

        page = page_read_file(pageset_path(&fs, pi), &len);
        donor = page_read_file(pageset_path(&fs, di), &dlen);
        ed = page ? page_edit_page(page, len, (page_edit_t) (i % PAGE_EDIT_NTYPES),
                                 donor, donor ? dlen : 0, &rng, &elen) : NULL;
        if (ed != NULL && pageset_fingerprint(cfg, ed, elen, &r) == 0
            && r.status == SH_STATUS_OK) {
            eorig[es.n] = (uint32_t) pi;
            pageset_add(&es, "edit", &r);
        }
        free(page);
        free(donor);
        free(ed);
        pageset_progress("edits", i + 1, edits);
    }
    for (i = 0; i < es.n; i++) {
        const pageset_fp_t *o = &fs.fp[eorig[i]];
        unsigned       d = sh_distance(es.fp[i].hash, o->hash);

        if (d > 0 && d <= pair_h) {
            cp_add(&pairs, es.fp[i].hash, es.fp[i].w, o->hash, o->w);
        }
        /* The edited page is also a query whose match is its original. */
        if (d > 0 && d <= SH_H_MAX) {
            qoff[nq++] = (uint32_t) qpairs.n;
            cp_add(&qpairs, es.fp[i].hash, es.fp[i].w, o->hash, o->w);
        }
    }
    qoff[nq] = (uint32_t) qpairs.n;
    if (pairs.n == 0) {
        cli_error("calibrate: no near-duplicate pairs within %lu bits; "
                  "add --edits or more pages", pair_h);
        goto done;
    }

    /* The samples. */
    ys = malloc(pairs.n * 64 * sizeof(float));
    if (ys == NULL) {
        cli_error("out of memory");
        goto done;
    }
    for (i = 0; i < pairs.n; i++) {
        for (j = 0; j < 64; j++) {
            ys[i * 64 + j] = pairs.p[i].wu[j] - pairs.p[i].wv[j];
        }
    }
    vol = sh_volatility_from_samples(ys, pairs.n * 64, err, sizeof(err));
    if (vol == NULL) {
        cli_error("calibrate: %s", err);
        goto done;
    }
    fprintf(stderr, "calibrate: %zu pages, %zu edited; %zu pairs within "
            "%lu bits, %zu samples; %zu query pages for k(t); p(|w|):", nok,
            es.n, pairs.n, pair_h, pairs.n * 64, nq);
    {
        float w;

        for (w = 0; w < 1.6f; w += 0.25f) {
            fprintf(stderr, " %.2f:%.3g", w, sh_volatility_p(vol, w));
        }
        fprintf(stderr, "\n");
    }
    calibrate_k(vol, &qpairs, nq, qoff);

    if (sh_volatility_save(vol, out, err, sizeof(err)) != 0
        || (emit != NULL
            && sh_volatility_write_c(vol, emit, err, sizeof(err)) != 0)) {
        cli_error("%s", err);
        goto done;
    }
    rc = 0;

done:
    sh_volatility_free(vol);
    free(ys);
    free(pairs.p);
    free(qpairs.p);
    free(qoff);
    free(ok);
    free(eorig);
    free(m);
    sh_brute_free(&br);
    pageset_free(&fs);
    pageset_free(&es);
    sh_config_free(cfg);
    cli_free_list(paths, npaths);
    return rc;
}
