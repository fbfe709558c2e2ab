/*
 * report.c -- precision and recall of "Hamming distance <= h" against
 * "Jaccard >= theta", per configuration, written as Markdown tables and
 * gnuplot data into the output directory:
 *
 *   population.md       what was measured (pages, pairs, Jaccard spread)
 *   comparison.md       one line per configuration: the targets
 *   curve-NAME.md/.dat  P(h), R(h) for h = 0..EV_HMAX (PSM Figure 6 form)
 *   aligned-NAME.tsv    every aligned pair: J, page lengths, H per key
 *   lengths-NAME.md     recall at h = 3 against page length
 *   pairs-NAME.tsv      the pairs worth reading: aligned near-duplicates
 *                       missed at h = 3, prose pairs within h = EV_HMAX
 *
 * The population of the curves is every measured pair, aligned and prose
 * together; precision at h is the share of the pairs within h whose
 * Jaccard is at least theta (PSM eq. 24), recall the share of the pairs
 * with Jaccard at least theta that are within h (eq. 25).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

#define EV_NTHETA 2
static const double theta[EV_NTHETA] = { 0.9, 0.8 };

/* The quality targets (docs/QUALITY.md, "Targets"). */
#define TARGET_H        3
#define TARGET_RECALL   0.90    /* aligned pairs with J >= 0.9 within h */
#define TARGET_FP_RATE  1e-4    /* prose pairs within h */
#define TARGET_MIN_J    0.5     /* no pair within h below this */

typedef struct {
    uint64_t n;                             /* pairs */
    uint64_t unfp;                          /* a page not fingerprinted */
    uint64_t vetoed;                        /* two listings (sh_sketch.h) */
    uint64_t within[EV_HMAX + 1];           /* H <= h */
    uint64_t pos[EV_NTHETA];                /* J >= theta */
    uint64_t tp[EV_NTHETA][EV_HMAX + 1];    /* both */
    uint64_t at[EV_HMAX + 1];               /* H == h */
    double   sumj_at[EV_HMAX + 1];
    double   minj[EV_HMAX + 1];             /* lowest J with H <= h */
    uint64_t low[EV_HMAX + 1];              /* J < TARGET_MIN_J, H <= h */
} stats_t;

static void
stats_init(stats_t *s)
{
    int h;

    memset(s, 0, sizeof(*s));
    for (h = 0; h <= EV_HMAX; h++) {
        s->minj[h] = 2.0;
    }
}

static void
stats_add(stats_t *s, const stats_t *t)
{
    int h, k;

    s->n += t->n;
    s->unfp += t->unfp;
    s->vetoed += t->vetoed;
    for (k = 0; k < EV_NTHETA; k++) {
        s->pos[k] += t->pos[k];
        for (h = 0; h <= EV_HMAX; h++) {
            s->tp[k][h] += t->tp[k][h];
        }
    }
    for (h = 0; h <= EV_HMAX; h++) {
        s->within[h] += t->within[h];
        s->at[h] += t->at[h];
        s->sumj_at[h] += t->sumj_at[h];
        s->low[h] += t->low[h];
        if (t->minj[h] < s->minj[h]) {
            s->minj[h] = t->minj[h];
        }
    }
}

/* Distance of a pair under a configuration; SH_BITS + 1 when a page got no
 * fingerprint, VETOED when the pair is two listings (either is within no h:
 * the proxy would not match it). */
#define VETOED  (SH_BITS + 2)

static unsigned
pair_distance(const ev_config_t *c, unsigned seed, const ev_pair_t *p)
{
    const ev_fp_t *a = &c->fp[seed][p->a], *b = &c->fp[seed][p->b];

    if (a->status != SH_STATUS_OK || b->status != SH_STATUS_OK) {
        return SH_BITS + 1;
    }
    if (ev_vetoed(a, b)) {
        return VETOED;
    }
    return sh_distance(a->hash, b->hash);
}

static void
stats_pair(stats_t *s, const ev_config_t *c, unsigned seed,
           const ev_pair_t *p)
{
    unsigned d = pair_distance(c, seed, p), h;
    double j = p->jaccard;
    int k;

    s->n++;
    if (d == VETOED) {
        s->vetoed++;
    } else if (d > SH_BITS) {
        s->unfp++;
    }
    for (k = 0; k < EV_NTHETA; k++) {
        s->pos[k] += j >= theta[k];
    }
    if (d > EV_HMAX) {
        return;
    }
    s->at[d]++;
    s->sumj_at[d] += j;
    for (h = d; h <= EV_HMAX; h++) {
        s->within[h]++;
        for (k = 0; k < EV_NTHETA; k++) {
            s->tp[k][h] += j >= theta[k];
        }
        if (j < s->minj[h]) {
            s->minj[h] = j;
        }
        s->low[h] += j < TARGET_MIN_J;
    }
}

static double
ratio(uint64_t a, uint64_t b)
{
    return b ? (double) a / (double) b : NAN;
}

/* Counts pooled over every hash key measured: a pair measured under
 * three keys counts three times. */
typedef struct {
    stats_t group[EV_GROUPS_MAX];
    stats_t kind[2];            /* EV_ALIGNED, EV_PROSE */
    stats_t all;
    double  recall_lo, recall_hi;   /* recall@3, J >= 0.9, over the keys */
    int     meets;
} result_t;

static void
measure(const ev_run_t *run, const ev_config_t *c, result_t *r)
{
    stats_t one;
    unsigned g, seed;
    size_t i;

    for (g = 0; g < EV_GROUPS_MAX; g++) {
        stats_init(&r->group[g]);
    }
    stats_init(&r->kind[0]);
    stats_init(&r->kind[1]);
    stats_init(&r->all);
    r->recall_lo = 2.0;
    r->recall_hi = -1.0;
    for (seed = 0; seed < run->nseeds; seed++) {
        double rec;

        stats_init(&one);
        for (i = 0; i < run->npairs; i++) {
            const ev_pair_t *p = &run->pairs[i];

            stats_pair(&r->group[p->group], c, seed, p);
            if (p->kind == EV_ALIGNED) {
                stats_pair(&one, c, seed, p);
            }
        }
        rec = ratio(one.tp[0][TARGET_H], one.pos[0]);
        r->recall_lo = rec < r->recall_lo ? rec : r->recall_lo;
        r->recall_hi = rec > r->recall_hi ? rec : r->recall_hi;
    }
    for (g = 0; g < run->ngroups; g++) {
        stats_add(&r->kind[run->group_kind[g]], &r->group[g]);
        stats_add(&r->all, &r->group[g]);
    }
    r->meets = ratio(r->kind[EV_ALIGNED].tp[0][TARGET_H],
                     r->kind[EV_ALIGNED].pos[0]) >= TARGET_RECALL
               && ratio(r->kind[EV_PROSE].within[TARGET_H],
                        r->kind[EV_PROSE].n) <= TARGET_FP_RATE
               && r->kind[EV_PROSE].low[TARGET_H] == 0;
}

static FILE *
out_open(const ev_run_t *run, const char *name, const char *suffix)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s%s", run->out_dir, name, suffix);
    f = fopen(path, "w");
    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    return f;
}

static void
out_close(FILE *f)
{
    if (ferror(f) | fclose(f)) {
        ev_die("write error in the output directory");
    }
}

static void
fmt_pct(char *buf, size_t n, double v)
{
    if (isnan(v)) {
        snprintf(buf, n, "-");
    } else {
        snprintf(buf, n, "%.1f%%", 100.0 * v);
    }
}

/* A rate as "k / n (x per 10^4)": the target is stated per 10,000. */
static void
fmt_rate(char *buf, size_t n, uint64_t k, uint64_t total)
{
    snprintf(buf, n, "%llu / %llu (%.2f per 10k)", (unsigned long long) k,
             (unsigned long long) total, 1e4 * ratio(k, total));
}

static void
fmt_minj(char *buf, size_t n, double v)
{
    if (v > 1.5) {
        snprintf(buf, n, "none");
    } else {
        snprintf(buf, n, "%.3f", v);
    }
}

static uint64_t
total_bytes(const ev_run_t *run)
{
    uint64_t b = 0;
    size_t i;

    for (i = 0; i < run->npages; i++) {
        b += run->pages[i].size;
    }
    return b;
}

static void
write_comparison(const ev_run_t *run, const result_t *res, FILE *f)
{
    double mb = (double) total_bytes(run) * run->nseeds / 1e6;
    size_t i;

    fprintf(f, "| config | options | recall@3, J>=0.9 "
            "| recall@3, J>=0.8 | prose pairs within h=3 "
            "| prose: lowest J within h=3 | aligned: lowest J within h=3 "
            "| precision@3, J>=0.9 | MB/s | targets |\n");
    fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|\n");
    for (i = 0; i < run->nconfigs; i++) {
        const ev_config_t *c = &run->configs[i];
        const result_t *r = &res[i];
        const stats_t *al = &r->kind[EV_ALIGNED], *pr = &r->kind[EV_PROSE];
        char r9[64], r8[32], fp[96], mjp[32], mja[32], p9[32];

        fmt_pct(r9, sizeof(r9), ratio(al->tp[0][TARGET_H], al->pos[0]));
        if (run->nseeds > 1) {
            size_t n = strlen(r9);

            snprintf(r9 + n, sizeof(r9) - n, " (%.0f-%.0f)",
                     100.0 * r->recall_lo, 100.0 * r->recall_hi);
        }
        fmt_pct(r8, sizeof(r8), ratio(al->tp[1][TARGET_H], al->pos[1]));
        fmt_rate(fp, sizeof(fp), pr->within[TARGET_H], pr->n);
        fmt_minj(mjp, sizeof(mjp), pr->minj[TARGET_H]);
        fmt_minj(mja, sizeof(mja), al->minj[TARGET_H]);
        fmt_pct(p9, sizeof(p9), ratio(r->all.tp[0][TARGET_H],
                                      r->all.within[TARGET_H]));
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %s |\n",
                c->name, c->spec[0] ? c->spec : "(defaults)", r9, r8, fp,
                mjp, mja, p9, c->seconds > 0 ? mb / c->seconds : 0.0,
                r->meets ? "**yes**" : "no");
    }
}

static void
write_curve(const ev_run_t *run, const ev_config_t *c, const result_t *r)
{
    const stats_t *a = &r->all, *al = &r->kind[EV_ALIGNED],
                  *pr = &r->kind[EV_PROSE];
    FILE *f, *m;
    char name[512];
    int h;

    snprintf(name, sizeof(name), "curve-%s.dat", c->name);
    f = out_open(run, name, "");
    fprintf(f, "# sh-eval: config %s: %s\n", c->name, c->spec);
    fprintf(f, "# population: %llu pairs (%llu aligned, %llu prose)\n",
            (unsigned long long) a->n, (unsigned long long) al->n,
            (unsigned long long) pr->n);
    fprintf(f, "# h  P(J>=0.9)  R(J>=0.9)  P(J>=0.8)  R(J>=0.8)"
            "  pairs<=h  E[J|H=h]\n");
    for (h = 0; h <= EV_HMAX; h++) {
        fprintf(f, "%d %.6f %.6f %.6f %.6f %llu %.6f\n", h,
                ratio(a->tp[0][h], a->within[h]), ratio(a->tp[0][h],
                                                        a->pos[0]),
                ratio(a->tp[1][h], a->within[h]), ratio(a->tp[1][h],
                                                        a->pos[1]),
                (unsigned long long) a->within[h],
                a->at[h] ? a->sumj_at[h] / (double) a->at[h] : NAN);
    }
    out_close(f);

    snprintf(name, sizeof(name), "curve-%s.md", c->name);
    m = out_open(run, name, "");
    fprintf(m, "| h | aligned pairs within h | prose pairs within h "
            "| P, J>=0.9 | R, J>=0.9 | P, J>=0.8 | R, J>=0.8 "
            "| lowest J within h | E[J], H=h |\n");
    fprintf(m, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (h = 0; h <= EV_HMAX; h++) {
        char p9[32], r9[32], p8[32], r8[32], mj[32], ej[32];

        fmt_pct(p9, sizeof(p9), ratio(a->tp[0][h], a->within[h]));
        fmt_pct(r9, sizeof(r9), ratio(a->tp[0][h], a->pos[0]));
        fmt_pct(p8, sizeof(p8), ratio(a->tp[1][h], a->within[h]));
        fmt_pct(r8, sizeof(r8), ratio(a->tp[1][h], a->pos[1]));
        fmt_minj(mj, sizeof(mj), a->minj[h]);
        if (a->at[h]) {
            snprintf(ej, sizeof(ej), "%.3f", a->sumj_at[h]
                                             / (double) a->at[h]);
        } else {
            snprintf(ej, sizeof(ej), "-");
        }
        fprintf(m, "| %d | %llu | %llu | %s | %s | %s | %s | %s | %s |\n",
                h, (unsigned long long) al->within[h],
                (unsigned long long) pr->within[h], p9, r9, p8, r8, mj, ej);
    }
    out_close(m);
}

static void
write_groups(const ev_run_t *run, const ev_config_t *c, const result_t *r)
{
    char name[512];
    FILE *f;
    unsigned g;

    snprintf(name, sizeof(name), "groups-%s.md", c->name);
    f = out_open(run, name, "");
    fprintf(f, "| pairs | n | no fingerprint | two listings | J>=0.9 "
            "| within h=3 | J>=0.9 within h=3 | J>=0.8 | J>=0.8 within h=3 "
            "| lowest J within h=3 |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (g = 0; g < run->ngroups; g++) {
        const stats_t *s = &r->group[g];
        char mj[32];

        fmt_minj(mj, sizeof(mj), s->minj[TARGET_H]);
        fprintf(f, "| %s %s | %llu | %llu | %llu | %llu | %llu | %llu "
                "| %llu | %llu | %s |\n",
                run->group_kind[g] == EV_ALIGNED ? "std ~" : "prose",
                run->groups[g], (unsigned long long) s->n,
                (unsigned long long) s->unfp,
                (unsigned long long) s->vetoed,
                (unsigned long long) s->pos[0],
                (unsigned long long) s->within[TARGET_H],
                (unsigned long long) s->tp[0][TARGET_H],
                (unsigned long long) s->pos[1],
                (unsigned long long) s->tp[1][TARGET_H], mj);
    }
    out_close(f);
}

typedef struct {
    const ev_pair_t *p;
    unsigned         d;
    unsigned         seed;
} listed_t;

static int
cmp_listed(const void *pa, const void *pb)
{
    const listed_t *a = pa, *b = pb;

    if (a->p->kind != b->p->kind) {
        return a->p->kind - b->p->kind;
    }
    if (a->p->kind == EV_ALIGNED) {
        /* missed near-duplicates: the most similar first */
        return (a->p->jaccard < b->p->jaccard)
               - (a->p->jaccard > b->p->jaccard);
    }
    if (a->d != b->d) {
        return (a->d > b->d) - (a->d < b->d);
    }
    return (a->p->jaccard > b->p->jaccard) - (a->p->jaccard < b->p->jaccard);
}

static void
write_pairs(const ev_run_t *run, const ev_config_t *c)
{
    listed_t *l = NULL;
    size_t n = 0, cap = 0, i;
    unsigned seed;
    char name[512];
    FILE *f;

    for (seed = 0; seed < run->nseeds; seed++) {
        for (i = 0; i < run->npairs; i++) {
            const ev_pair_t *p = &run->pairs[i];
            unsigned d = pair_distance(c, seed, p);

            if ((p->kind == EV_ALIGNED && p->jaccard >= theta[EV_NTHETA - 1]
                 && d > TARGET_H)
                || (p->kind == EV_PROSE && d <= EV_HMAX)
                || (d <= TARGET_H && p->jaccard < TARGET_MIN_J)) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 1024;
                    l = ev_xrealloc(l, cap * sizeof(*l));
                }
                l[n].p = p;
                l[n].d = d;
                l[n].seed = seed;
                n++;
            }
        }
    }
    if (n > 0) {
        qsort(l, n, sizeof(*l), cmp_listed);
    }
    snprintf(name, sizeof(name), "pairs-%s.tsv", c->name);
    f = out_open(run, name, "");
    fprintf(f, "# aligned pairs with J>=%.1f beyond h=%d, prose pairs "
            "within h=%d, any pair within h=%d with J<%.1f\n"
            "# kind\tgroup\tkey\tH\tJ\tpage A\tpage B\n",
            theta[EV_NTHETA - 1], TARGET_H, EV_HMAX, TARGET_H,
            TARGET_MIN_J);
    for (i = 0; i < n; i++) {
        const ev_pair_t *p = l[i].p;
        char d[16];

        if (l[i].d > SH_BITS) {
            snprintf(d, sizeof(d), "-");
        } else {
            snprintf(d, sizeof(d), "%u", l[i].d);
        }
        fprintf(f, "%s\t%s\t%u\t%s\t%.4f\t%s\t%s\n",
                p->kind == EV_ALIGNED ? "aligned" : "prose",
                run->groups[p->group], l[i].seed, d, p->jaccard,
                run->pages[p->a].path, run->pages[p->b].path);
    }
    out_close(f);
    free(l);
}

/*
 * Recall at h = 3 against the length of the shorter page: a substitution
 * moves a short page's feature vector further, so this says where the
 * misses come from.
 */
static void
write_lengths(const ev_run_t *run, const ev_config_t *c)
{
    static const unsigned edge[] = { 0, 300, 1000, 3000 };
    enum { NB = sizeof(edge) / sizeof(edge[0]) };
    uint64_t pos[EV_NTHETA][NB], hit[EV_NTHETA][NB];
    char name[512];
    unsigned seed, b;
    size_t i;
    int k;
    FILE *f;

    memset(pos, 0, sizeof(pos));
    memset(hit, 0, sizeof(hit));
    for (i = 0; i < run->npairs; i++) {
        const ev_pair_t *p = &run->pairs[i];
        uint32_t ta = run->pages[p->a].ntokens, tb = run->pages[p->b].ntokens;
        uint32_t t = ta < tb ? ta : tb;

        if (p->kind != EV_ALIGNED) {
            continue;
        }
        for (b = 0; b + 1 < NB && t >= edge[b + 1]; b++) {
        }
        for (seed = 0; seed < run->nseeds; seed++) {
            int in = pair_distance(c, seed, p) <= TARGET_H;

            for (k = 0; k < EV_NTHETA; k++) {
                if (p->jaccard >= theta[k]) {
                    pos[k][b]++;
                    hit[k][b] += in;
                }
            }
        }
    }
    snprintf(name, sizeof(name), "lengths-%s.md", c->name);
    f = out_open(run, name, "");
    fprintf(f, "| tokens of the shorter page | pairs J>=0.9 | recall@3 "
            "| pairs J>=0.8 | recall@3 |\n|---|---:|---:|---:|---:|\n");
    for (b = 0; b < NB; b++) {
        char r9[32], r8[32], range[32];

        if (b + 1 < NB) {
            snprintf(range, sizeof(range), "%u-%u", edge[b],
                     edge[b + 1] - 1);
        } else {
            snprintf(range, sizeof(range), ">= %u", edge[b]);
        }
        fmt_pct(r9, sizeof(r9), ratio(hit[0][b], pos[0][b]));
        fmt_pct(r8, sizeof(r8), ratio(hit[1][b], pos[1][b]));
        fprintf(f, "| %s | %llu | %s | %llu | %s |\n", range,
                (unsigned long long) (pos[0][b] / run->nseeds), r9,
                (unsigned long long) (pos[1][b] / run->nseeds), r8);
    }
    out_close(f);
}

/* Every aligned pair with its distance under each key and the size of its
 * pages: recall against page length, and the raw data for other plots. */
static void
write_aligned(const ev_run_t *run, const ev_config_t *c)
{
    char name[512];
    unsigned seed;
    size_t i;
    FILE *f;

    snprintf(name, sizeof(name), "aligned-%s.tsv", c->name);
    f = out_open(run, name, "");
    fprintf(f, "# group\tJ\ttokens A\ttokens B\tH per key ('-': no "
            "fingerprint)\tpage A\tpage B\n");
    for (i = 0; i < run->npairs; i++) {
        const ev_pair_t *p = &run->pairs[i];

        if (p->kind != EV_ALIGNED) {
            continue;
        }
        fprintf(f, "%s\t%.4f\t%u\t%u\t", run->groups[p->group],
                p->jaccard, run->pages[p->a].ntokens,
                run->pages[p->b].ntokens);
        for (seed = 0; seed < run->nseeds; seed++) {
            unsigned d = pair_distance(c, seed, p);

            if (d > SH_BITS) {
                fprintf(f, "%s-", seed ? "," : "");
            } else {
                fprintf(f, "%s%u", seed ? "," : "", d);
            }
        }
        fprintf(f, "\t%s\t%s\n", run->pages[p->a].path,
                run->pages[p->b].path);
    }
    out_close(f);
}

static void
write_population(const ev_run_t *run)
{
    static const double edges[] = { 0.0, 0.1, 0.5, 0.8, 0.9, 0.95, 1.0 };
    enum { NB = sizeof(edges) / sizeof(edges[0]) };
    uint64_t hist[EV_GROUPS_MAX][NB + 1];
    uint64_t n[EV_GROUPS_MAX];
    unsigned g, b;
    size_t i;
    FILE *f = out_open(run, "population", ".md");

    memset(hist, 0, sizeof(hist));
    memset(n, 0, sizeof(n));
    for (i = 0; i < run->npairs; i++) {
        const ev_pair_t *p = &run->pairs[i];
        double j = p->jaccard;

        /* Buckets [edge[b], edge[b+1]), with J == 1 on its own. */
        for (b = 0; b + 1 < NB && j >= edges[b + 1]; b++) {
        }
        n[p->group]++;
        hist[p->group][b]++;
    }
    fprintf(f, "| pairs | n | J<0.1 | 0.1-0.5 | 0.5-0.8 | 0.8-0.9 "
            "| 0.9-0.95 | 0.95-1 | J=1 |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (g = 0; g < run->ngroups; g++) {
        fprintf(f, "| %s %s | %llu", run->group_kind[g] == EV_ALIGNED
                                     ? "std ~" : "prose",
                run->groups[g], (unsigned long long) n[g]);
        for (b = 0; b < NB; b++) {
            fprintf(f, " | %llu", (unsigned long long) hist[g][b]);
        }
        fprintf(f, " |\n");
    }
    out_close(f);
}

void
ev_report(ev_run_t *run)
{
    result_t *res = ev_xcalloc(run->nconfigs, sizeof(*res));
    FILE *f;
    size_t i;

    write_population(run);
    for (i = 0; i < run->nconfigs; i++) {
        measure(run, &run->configs[i], &res[i]);
        write_curve(run, &run->configs[i], &res[i]);
        write_groups(run, &run->configs[i], &res[i]);
        write_pairs(run, &run->configs[i]);
        write_aligned(run, &run->configs[i]);
        write_lengths(run, &run->configs[i]);
    }
    f = out_open(run, "comparison", ".md");
    write_comparison(run, res, f);
    out_close(f);
    write_comparison(run, res, stdout);
    free(res);
}
