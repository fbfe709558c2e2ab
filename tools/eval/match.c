/*
 * match.c -- the two match rules side by side (sh_match.h): for each rule
 * and threshold, recall on the pairs with J >= 0.9 and J >= 0.8, the close
 * strangers accepted (J < 0.5), and the probability that a random
 * fingerprint is accepted, for one configuration:
 *
 *   match-NAME.md    the tables (docs/QUALITY.md, "Weighted matching")
 *   match-NAME.dat   every setting, for the frontier plot
 *
 * Direction.  The weighted rule reads the query's weights, so it is not
 * symmetric: the index sees the later page as the query.  Every pair is
 * measured in both orders and each order counts one half -- the expectation
 * when either page may come first.  (For the hamming rule both orders
 * agree.)  A stranger "accepted" in the target line means accepted in at
 * least one order.
 *
 * Random fingerprints.  P(a uniformly random fingerprint is accepted) is a
 * property of the query page alone: the number of difference patterns the
 * rule accepts, counted exactly by sh_match_count_patterns over the page's
 * 64 costs, over 2^64.  It is reported as the median (and the 90th
 * percentile and maximum) over every page and key.
 *
 * Short hubs.  A page of a few words of its own, mostly links, is matched
 * within SH_SHORT_H only, whatever the rule (sh_match_short: the module
 * caps its lookup there, dedup and distance refuse the rest): its pairs
 * and its random fingerprints are counted under that cap, as the rule is
 * built.  Its weights rest on a few words (two headings' worth), so the
 * cap of 10 alone would accept random fingerprints 1,000 times as often.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "sh_index.h"
#include "sh_match.h"

#define M_HAM_MAX   12                  /* hamming h = 0..12 */
#define M_NCAP      5
static const unsigned caps[M_NCAP] = { 6, 8, 10, 12, 16 };
#define M_CAP_MAX   16
#define M_T_STEP    (SH_SCORE_UNIT / 2) /* 0.5 nat */
#define M_NT        128                 /* T = 0.5 .. 64 nats */
#define M_TQ_MAX    (M_NT * M_T_STEP)

#define M_NSET      (M_HAM_MAX + 1 + M_NCAP * M_NT)

#define J_DUP       0.9
#define J_NEAR      0.8
#define J_STRANGER  0.5
#define P_TARGET    1e-14

typedef struct {
    int       weighted;
    unsigned  h;                /* radius or cap */
    uint32_t  tq;               /* T in score units (weighted) */
    /* counts of (pair, key, order) */
    uint64_t  acc9, acc8, str, str_prose;
    uint64_t  acc9_seed[EV_SEEDS_MAX];
    /* prose strangers accepted in at least one order, (pair, key) */
    uint64_t  str_prose_pairs;
    double    p_med, p_90, p_max;
} setting_t;

/* The pages most likely to accept a random fingerprint at the defaults:
 * the column max names no page, and the worst page is the one to read. */
#define M_WORST     8

typedef struct {
    double    p;
    uint32_t  page;
    unsigned  seed;
} worst_t;

typedef struct {
    setting_t s[M_NSET];
    uint64_t  pos9, pos8, nstr;
    uint64_t  pos9_seed[EV_SEEDS_MAX];
    size_t    npq;              /* (page, key) with a fingerprint */
    worst_t   worst[M_WORST];   /* at the defaults, highest first */
} mstats_t;

static void
settings_init(mstats_t *m)
{
    unsigned i = 0, c, t;

    memset(m, 0, sizeof(*m));
    for (t = 0; t <= M_HAM_MAX; t++, i++) {
        m->s[i].h = t;
    }
    for (c = 0; c < M_NCAP; c++) {
        for (t = 1; t <= M_NT; t++, i++) {
            m->s[i].weighted = 1;
            m->s[i].h = caps[c];
            m->s[i].tq = t * M_T_STEP;
        }
    }
}

static int
accepts(const setting_t *s, unsigned d, uint32_t score)
{
    return d <= s->h && (!s->weighted || score <= s->tq);
}

/* The radius or cap a query page is matched within under a setting. */
static unsigned
cap_of(const setting_t *s, const ev_fp_t *q)
{
    return q->short_hub && s->h > SH_SHORT_H ? SH_SHORT_H : s->h;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

/* Costs of every page under every key, as the rule computes them. */
static uint16_t *
page_costs(const ev_run_t *run, const ev_config_t *c)
{
    uint16_t *cost = ev_xmalloc(run->nseeds * run->npages * 64
                                * sizeof(uint16_t));
    sh_match_opts_t o;
    unsigned seed;
    size_t i;

    sh_match_opts_init(&o);
    for (seed = 0; seed < run->nseeds; seed++) {
        for (i = 0; i < run->npages; i++) {
            const ev_fp_t *f = &c->fp[seed][i];
            sh_matcher_t m;

            sh_matcher_init(&m, &o, f->hash, f->w);
            memcpy(cost + (seed * run->npages + i) * 64, m.cost,
                   sizeof(m.cost));
        }
    }
    return cost;
}

static const setting_t *find_setting(const mstats_t *m, int weighted,
                                     unsigned h, uint32_t tq);

/* Keep the M_WORST highest P(random) under the default weighted rule. */
static void
worst_note(mstats_t *m, const double *pp, uint32_t page, unsigned seed)
{
    uint32_t tdef = sh_score_from_nats(SH_WEIGHTED_T_DEFAULT);
    const setting_t *d = find_setting(m, 1, SH_WEIGHTED_H_DEFAULT, tdef);
    double p;
    int k;

    if (d == NULL) {
        return;
    }
    p = pp[d - m->s];
    if (p <= m->worst[M_WORST - 1].p) {
        return;
    }
    for (k = M_WORST - 1; k > 0 && m->worst[k - 1].p < p; k--) {
        m->worst[k] = m->worst[k - 1];
    }
    m->worst[k].p = p;
    m->worst[k].page = page;
    m->worst[k].seed = seed;
}

static void
random_accept(const ev_run_t *run, const ev_config_t *c,
              const uint16_t *cost, mstats_t *m)
{
    size_t    row = M_TQ_MAX + 1, npq = 0, i, k;
    uint64_t *cnt = ev_xmalloc((M_CAP_MAX + 1) * row * sizeof(uint64_t));
    double   *p = ev_xmalloc(run->nseeds * run->npages * M_NSET
                             * sizeof(double));
    double   *col = ev_xmalloc(run->nseeds * run->npages * sizeof(double));
    unsigned  seed, h, st;
    uint32_t  s;

    for (seed = 0; seed < run->nseeds; seed++) {
        for (i = 0; i < run->npages; i++) {
            double *pp = p + npq * M_NSET;

            if (c->fp[seed][i].status != SH_STATUS_OK) {
                continue;
            }
            sh_match_count_patterns(cost + (seed * run->npages + i) * 64,
                                    M_CAP_MAX, M_TQ_MAX, cnt);
            /* Cumulate in place: cnt[h][s] = patterns of <= h bits and
             * cost <= s. */
            for (h = 0; h <= M_CAP_MAX; h++) {
                uint64_t *r = cnt + h * row;

                for (s = 1; s < row; s++) {
                    r[s] += r[s - 1];
                }
                if (h > 0) {
                    for (s = 0; s < row; s++) {
                        r[s] += r[s - row];
                    }
                }
            }
            for (st = 0; st < M_NSET; st++) {
                const setting_t *x = &m->s[st];
                unsigned xh = cap_of(x, &c->fp[seed][i]);
                double n;

                if (x->weighted) {
                    n = (double) cnt[xh * row + x->tq];
                } else {
                    /* every pattern of <= h bits, whatever its cost */
                    uint64_t tot = 0, binom = 1;

                    for (k = 0; k <= xh; k++) {
                        tot += binom;
                        binom = binom * (64 - k) / (k + 1);
                    }
                    n = (double) tot;
                }
                pp[st] = ldexp(n, -64);
            }
            worst_note(m, pp, (uint32_t) i, seed);
            npq++;
        }
    }
    m->npq = npq;
    for (st = 0; st < M_NSET && npq > 0; st++) {
        for (i = 0; i < npq; i++) {
            col[i] = p[i * M_NSET + st];
        }
        qsort(col, npq, sizeof(double), cmp_double);
        m->s[st].p_med = npq % 2 ? col[npq / 2]
                                 : (col[npq / 2 - 1] + col[npq / 2]) / 2;
        m->s[st].p_90 = col[(size_t) ((double) (npq - 1) * 0.9)];
        m->s[st].p_max = col[npq - 1];
    }
    free(cnt);
    free(p);
    free(col);
}

static void
pairs_measure(const ev_run_t *run, const ev_config_t *c,
              const uint16_t *cost, mstats_t *m)
{
    unsigned seed, st, o;
    size_t i;

    for (seed = 0; seed < run->nseeds; seed++) {
        for (i = 0; i < run->npairs; i++) {
            const ev_pair_t *p = &run->pairs[i];
            const ev_fp_t   *fa = &c->fp[seed][p->a], *fb = &c->fp[seed][p->b];
            double           j = p->jaccard;
            unsigned         d;
            uint32_t         score[2];
            uint8_t          any[M_NSET];

            /* both orders are trials */
            if (j >= J_DUP) {
                m->pos9 += 2;
                m->pos9_seed[seed] += 2;
            }
            if (j >= J_NEAR) {
                m->pos8 += 2;
            }
            if (j < J_STRANGER) {
                m->nstr += 2;
            }
            if (fa->status != SH_STATUS_OK || fb->status != SH_STATUS_OK
                || ev_vetoed(fa, fb))
            {
                continue;       /* no fingerprint, or two listings: never
                                   a match */
            }
            d = sh_distance(fa->hash, fb->hash);
            if (d > M_CAP_MAX
                || !sh_match_short(d, fa->short_hub != 0, fb->short_hub != 0))
            {
                continue;       /* a short hub is matched within
                                   SH_SHORT_H only */
            }
            for (o = 0; o < 2; o++) {
                uint32_t q = o ? p->b : p->a;
                const uint16_t *cq = cost + (seed * run->npages + q) * 64;
                uint64_t diff = fa->hash ^ fb->hash;

                score[o] = 0;
                while (diff) {
                    score[o] += cq[__builtin_ctzll(diff)];
                    diff &= diff - 1;
                }
            }
            memset(any, 0, sizeof(any));
            for (st = 0; st < M_NSET; st++) {
                setting_t *x = &m->s[st];

                for (o = 0; o < 2; o++) {
                    if (!accepts(x, d, score[o])) {
                        continue;
                    }
                    if (j >= J_DUP) {
                        x->acc9++;
                        x->acc9_seed[seed]++;
                    }
                    if (j >= J_NEAR) {
                        x->acc8++;
                    }
                    if (j < J_STRANGER) {
                        x->str++;
                        if (p->kind == EV_PROSE) {
                            x->str_prose++;
                            any[st] = 1;
                        }
                    }
                }
                x->str_prose_pairs += any[st];
            }
        }
    }
}

/* Check the rule's scores against the library's one-shot function on a
 * sample of pairs: the evaluation must measure the rule as it is built. */
static void
self_check(const ev_run_t *run, const ev_config_t *c, const uint16_t *cost)
{
    sh_match_opts_t o;
    size_t i;

    sh_match_opts_init(&o);
    sh_match_opts_weighted(&o, SH_WEIGHTED_T_DEFAULT, M_CAP_MAX);
    for (i = 0; i < run->npairs; i += 997) {
        const ev_pair_t *p = &run->pairs[i];
        const ev_fp_t   *fa = &c->fp[0][p->a], *fb = &c->fp[0][p->b];
        const uint16_t  *cq = cost + (size_t) p->a * 64;
        uint64_t diff = fa->hash ^ fb->hash;
        uint32_t mine = 0, lib;
        unsigned d;

        if (fa->status != SH_STATUS_OK || fb->status != SH_STATUS_OK) {
            continue;
        }
        while (diff) {
            mine += cq[__builtin_ctzll(diff)];
            diff &= diff - 1;
        }
        sh_match_pair(&o, fa->hash, fa->w, fb->hash, &d, &lib);
        if (d <= M_CAP_MAX && lib != mine) {
            ev_die("match: score %u here, %u from sh_match_pair", mine, lib);
        }
    }
}

static double
rate(uint64_t k, uint64_t n)
{
    return n ? (double) k / (double) n : NAN;
}

static const setting_t *
find_setting(const mstats_t *m, int weighted, unsigned h, uint32_t tq)
{
    unsigned st;

    for (st = 0; st < M_NSET; st++) {
        const setting_t *x = &m->s[st];

        if (x->weighted == weighted && x->h == h
            && (!weighted || x->tq == tq))
        {
            return x;
        }
    }
    return NULL;
}

static void
row(FILE *f, const mstats_t *m, const setting_t *x, unsigned nseeds,
    const char *mark)
{
    char   setting[64], range[32] = "";
    double lo = 2, hi = -1;
    unsigned s;

    if (x->weighted) {
        snprintf(setting, sizeof(setting), "T = %.1f, H <= %u",
                 sh_score_nats(x->tq), x->h);
    } else {
        snprintf(setting, sizeof(setting), "H <= %u", x->h);
    }
    for (s = 0; s < nseeds; s++) {
        double r = rate(x->acc9_seed[s], m->pos9_seed[s]);

        lo = r < lo ? r : lo;
        hi = r > hi ? r : hi;
    }
    if (nseeds > 1 && m->pos9 > 0) {
        snprintf(range, sizeof(range), " (%.0f-%.0f)", 100 * lo, 100 * hi);
    }
    fprintf(f, "| %s%s | %s | %.1f%%%s | %.1f%% | %.1f | %.1f | %llu "
            "| %.1e | %.1e | %.1e |\n",
            x->weighted ? "weighted" : "hamming", mark, setting,
            100 * rate(x->acc9, m->pos9), range,
            100 * rate(x->acc8, m->pos8), x->str / 2.0, x->str_prose / 2.0,
            (unsigned long long) x->str_prose_pairs, x->p_med, x->p_90,
            x->p_max);
}

static void
write_md(const ev_run_t *run, const ev_config_t *c, const mstats_t *m)
{
    char path[4096];
    FILE *f;
    unsigned st, h;
    uint32_t tdef = sh_score_from_nats(SH_WEIGHTED_T_DEFAULT);
    const setting_t *wdef = find_setting(m, 1, SH_WEIGHTED_H_DEFAULT, tdef);

    snprintf(path, sizeof(path), "%s/match-%s.md", run->out_dir, c->name);
    f = fopen(path, "w");
    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    fprintf(f, "Configuration `%s`, %u hash keys; %llu pair-orders with "
            "J >= 0.9, %llu with J >= 0.8, %llu with J < 0.5 (each pair in "
            "both orders, each order counting one half: \"strangers\" is "
            "the expected count when either page may come first); "
            "P(random) over %zu pages x keys.\n\n", c->name, run->nseeds,
            (unsigned long long) m->pos9, (unsigned long long) m->pos8,
            (unsigned long long) m->nstr, m->npq);
    fprintf(f, "| rule | setting | recall, J>=0.9 (by key) | recall, J>=0.8 "
            "| strangers accepted (J<0.5) | of them prose | prose pairs "
            "accepted in some order | P(random), median | 90th pct. "
            "| max |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (h = 0; h <= 8; h++) {
        row(f, m, find_setting(m, 0, h, 0), run->nseeds,
            h == SH_H_DEFAULT ? " (default h)" : "");
    }
    for (st = 0; st < M_NSET; st++) {
        const setting_t *x = &m->s[st];

        if (x->weighted && x->h == SH_WEIGHTED_H_DEFAULT
            && x->tq % SH_SCORE_UNIT == 0 && x->tq <= 14 * SH_SCORE_UNIT)
        {
            row(f, m, x, run->nseeds, x == wdef ? " (default T)" : "");
        }
    }
    for (st = 0; st < M_NCAP; st++) {
        const setting_t *x = find_setting(m, 1, caps[st], tdef);

        if (x != NULL && caps[st] != SH_WEIGHTED_H_DEFAULT) {
            row(f, m, x, run->nseeds, " (other cap)");
        }
    }

    /*
     * The frontier: for each hamming radius, the best weighted setting (any
     * T, any cap) that accepts no more strangers.  "At least as many
     * J >= 0.9 pairs at an equal number of close strangers" holds when the
     * weighted column is never below the hamming one.
     */
    fprintf(f, "\nFrontier: for each hamming radius h, the weighted "
            "setting with the most J >= 0.9 pairs among those accepting no "
            "more strangers (J < 0.5).\n\n"
            "| h | strangers | recall, J>=0.9 | best weighted setting "
            "| strangers | recall, J>=0.9 | weighted >= hamming |\n"
            "|---:|---:|---:|---|---:|---:|:---:|\n");
    for (h = 0; h <= M_HAM_MAX; h++) {
        const setting_t *x = find_setting(m, 0, h, 0), *best = NULL;

        for (st = 0; st < M_NSET; st++) {
            const setting_t *y = &m->s[st];

            /* ties: the smaller cap, then the smaller T (the order of s[]) */
            if (y->weighted && y->str <= x->str
                && (best == NULL || y->acc9 > best->acc9))
            {
                best = y;
            }
        }
        if (best == NULL) {
            fprintf(f, "| %u | %.1f | %.1f%% | - | - | - | - |\n", h,
                    x->str / 2.0, 100 * rate(x->acc9, m->pos9));
            continue;
        }
        fprintf(f, "| %u | %.1f | %.1f%% | T = %.1f, H <= %u | %.1f "
                "| %.1f%% | %s |\n",
                h, x->str / 2.0, 100 * rate(x->acc9, m->pos9),
                sh_score_nats(best->tq), best->h, best->str / 2.0,
                100 * rate(best->acc9, m->pos9),
                best->acc9 >= x->acc9 ? "yes" : "**no**");
    }
    if (wdef != NULL) {
        fprintf(f, "\nAt the defaults (weighted, T = %.1f, H <= %u): "
                "recall on J >= 0.9 %.3f; prose pairs with J < 0.5 "
                "accepted in some order: %llu; median P(random) %.1e "
                "(the targets: recall >= 0.95 on rust-doc, no "
                "prose pair, median <= %.0e).\n", SH_WEIGHTED_T_DEFAULT,
                SH_WEIGHTED_H_DEFAULT, rate(wdef->acc9, m->pos9),
                (unsigned long long) wdef->str_prose_pairs, wdef->p_med,
                P_TARGET);
    }
    fprintf(f, "\nThe pages most likely to accept a random fingerprint at "
            "the defaults (page, key, P):\n\n");
    for (h = 0; h < M_WORST && m->worst[h].p > 0; h++) {
        const ev_fp_t *w = &c->fp[m->worst[h].seed][m->worst[h].page];

        fprintf(f, "    %.1e  key %u  %u features  %s\n", m->worst[h].p,
                m->worst[h].seed, w->nfeatures,
                run->pages[m->worst[h].page].path);
    }
    if (ferror(f) | fclose(f)) {
        ev_die("%s: write error", path);
    }
}

static void
write_dat(const ev_run_t *run, const ev_config_t *c, const mstats_t *m)
{
    char path[4096];
    FILE *f;
    unsigned st;

    snprintf(path, sizeof(path), "%s/match-%s.dat", run->out_dir, c->name);
    f = fopen(path, "w");
    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    fprintf(f, "# sh-eval match rules, config %s: %s\n", c->name, c->spec);
    fprintf(f, "# weighted h T_nats recall9 recall8 strangers "
            "strangers_prose prose_pairs p_median p_90 p_max\n");
    for (st = 0; st < M_NSET; st++) {
        const setting_t *x = &m->s[st];

        fprintf(f, "%d %u %.4f %.6f %.6f %.1f %.1f %llu %.4e %.4e %.4e\n",
                x->weighted, x->h, x->weighted ? sh_score_nats(x->tq) : 0.0,
                rate(x->acc9, m->pos9), rate(x->acc8, m->pos8),
                x->str / 2.0, x->str_prose / 2.0,
                (unsigned long long) x->str_prose_pairs, x->p_med, x->p_90,
                x->p_max);
    }
    if (ferror(f) | fclose(f)) {
        ev_die("%s: write error", path);
    }
}

void
ev_match_report(ev_run_t *run, const ev_config_t *c)
{
    mstats_t *m = ev_xcalloc(1, sizeof(*m));
    uint16_t *cost;
    double    t0 = ev_now();

    settings_init(m);
    cost = page_costs(run, c);
    self_check(run, c, cost);
    pairs_measure(run, c, cost, m);
    random_accept(run, c, cost, m);
    write_md(run, c, m);
    write_dat(run, c, m);
    fprintf(stderr, "sh-eval: match rules for config %s in %.1f s\n",
            c->name, ev_now() - t0);
    free(cost);
    free(m);
}
