/*
 * cmd_dedup.c -- `simhash dedup`: every near-duplicate pair of a corpus
 * (batch mode), with the PSM index or the batch table method, or both to
 * compare them.
 *
 * PSM: the batch form of the PSM index (sh_psm_batch.h): one sorted copy,
 * every page probes its own bucket and k more in VOSH order for its
 * weights, and a pair counts when either page's probes find it.  BPHS: the
 * batch form of Manku's table method (sh_bphs_batch.h), exact.  Each
 * method's time is the thread's CPU time, its memory the peak RSS while it
 * ran.
 * --background N adds N random fingerprints (with weights borrowed from
 * real pages) to reach a given scale without N pages on disk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "page_edit.h"
#include "pageset.h"
#include "peak_rss.h"
#include "sh_block.h"
#include "sh_bphs.h"
#include "sh_bphs_batch.h"
#include "sh_index.h"
#include "sh_psm_batch.h"

static const char synopsis[] =
    "usage: simhash dedup [options] --list PATHS\n\n"
    "Print every near-duplicate pair: <path>\\t<path>\\t<distance>.\n\n";

static const char notes[] =
    "BPHS serves the hamming rule only: with --method bphs or both the\n"
    "rule is hamming unless --match says otherwise (an error).\n";

typedef struct {
    uint32_t a, b;      /* page indices, a < b */
    uint32_t d;
} pair_t;

typedef struct {
    pair_t *p;
    size_t  n, cap;
} pairs_t;

static int
pairs_add(pairs_t *ps, uint32_t a, uint32_t b, uint32_t d)
{
    if (ps->n == ps->cap) {
        size_t nc = ps->cap ? 2 * ps->cap : 4096;
        void  *np = realloc(ps->p, nc * sizeof(pair_t));

        if (np == NULL) {
            return -1;
        }
        ps->p = np;
        ps->cap = nc;
    }
    ps->p[ps->n].a = a < b ? a : b;
    ps->p[ps->n].b = a < b ? b : a;
    ps->p[ps->n].d = d;
    ps->n++;
    return 0;
}

static int
cmp_pair(const void *x, const void *y)
{
    const pair_t *p = x, *q = y;

    if (p->a != q->a) {
        return p->a < q->a ? -1 : 1;
    }
    return (p->b > q->b) - (p->b < q->b);
}

/*
 * The listing veto (sh_sketch.h), after any index: a pair of real pages
 * with the same template and other link words is two listings of one
 * site, not a duplicate.  `page` maps batch indices to the page set.
 * Returns the pairs taken out.
 */
static size_t
drop_listings(pairs_t *ps, const pageset_t *fs, const uint32_t *page,
              size_t real)
{
    size_t i, n = 0;

    for (i = 0; i < ps->n; i++) {
        const pair_t *q = &ps->p[i];

        if (q->b < real
            && sh_sketch_veto(&fs->fp[page[q->a]].sk, &fs->fp[page[q->b]].sk))
        {
            continue;
        }
        ps->p[n++] = *q;
    }
    i = ps->n - n;
    ps->n = n;
    return i;
}

/*
 * Short hubs (sh_match_short): a pair with a page whose own content is a
 * few dozen words, mostly links, stands only within the classic radius.
 * Returns the pairs taken out.
 */
static size_t
drop_short(pairs_t *ps, const pageset_t *fs, const uint32_t *page,
           size_t real)
{
    size_t i, n = 0;

    for (i = 0; i < ps->n; i++) {
        const pair_t *q = &ps->p[i];

        if (q->b < real
            && !sh_match_short(q->d, fs->fp[page[q->a]].short_hub != 0,
                               fs->fp[page[q->b]].short_hub != 0))
        {
            continue;
        }
        ps->p[n++] = *q;
    }
    i = ps->n - n;
    ps->n = n;
    return i;
}

/* CPU time of this thread: the machine may be shared. */
static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The batch: hashes and weights, real pages first. */
typedef struct {
    uint64_t *hash;
    const float **w;
    size_t    n, nreal;
} batch_t;

static int
collect_pair(void *arg, uint32_t a, uint32_t b, unsigned d)
{
    return pairs_add(arg, a, b, d) != 0;
}

static int
run_psm(const batch_t *b, const sh_match_opts_t *mo, unsigned k,
        float recall, pairs_t *out, sh_psm_batch_stats_t *st, double *secs)
{
    sh_lookup_opts_t o;
    char   err[256];
    int    rc;
    double t0 = now();

    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_ALL;
    o.rule = mo->rule;
    o.h = mo->h;
    o.threshold = mo->threshold;
    o.vol = mo->vol;
    o.probes = k;
    o.recall = recall;
    rc = sh_psm_batch(b->hash, b->w, b->n, &o, 0, collect_pair, out, st,
                      err, sizeof(err));
    *secs = now() - t0;
    if (rc != 0) {
        cli_error("%s", rc < 0 ? err : "out of memory");
        return -1;
    }
    return 0;
}

static int
run_bphs(const batch_t *b, unsigned tables, unsigned h, pairs_t *out,
         double *secs)
{
    unsigned G, g;
    char     err[256];
    int      rc;
    double   t0 = now();

    sh_bphs_design(tables, &G, &g);
    rc = sh_bphs_batch(b->hash, b->n, G, g, h, collect_pair, out, NULL, err,
                       sizeof(err));
    *secs = now() - t0;
    if (rc != 0) {
        cli_error("%s", rc < 0 ? err : "out of memory");
        return -1;
    }
    return 0;
}

/* Union-find over page indices for --clusters. */
static uint32_t
find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static int
print_clusters(const pageset_t *fs, const batch_t *b, const pairs_t *ps)
{
    uint32_t *parent = malloc(b->n * sizeof(uint32_t));
    uint32_t *next = malloc(b->n * sizeof(uint32_t));
    uint32_t *head = malloc(b->n * sizeof(uint32_t));
    size_t    i;

    if (parent == NULL || next == NULL || head == NULL) {
        free(parent);
        free(next);
        free(head);
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < b->n; i++) {
        parent[i] = (uint32_t) i;
        head[i] = UINT32_MAX;
    }
    for (i = 0; i < ps->n; i++) {
        uint32_t x = find(parent, ps->p[i].a), y = find(parent, ps->p[i].b);

        if (x != y) {
            parent[x < y ? y : x] = x < y ? x : y;
        }
    }
    /* Members in page order, listed under their root. */
    for (i = b->n; i-- > 0; ) {
        uint32_t r = find(parent, (uint32_t) i);

        next[i] = head[r];
        head[r] = (uint32_t) i;
    }
    for (i = 0; i < b->n; i++) {
        uint32_t x;

        if (head[i] == UINT32_MAX || next[head[i]] == UINT32_MAX) {
            continue;       /* not a root, or a page without duplicates */
        }
        for (x = head[i]; x != UINT32_MAX; x = next[x]) {
            if (x < fs->n) {
                printf("%s%s", x == head[i] ? "" : "\t", pageset_path(fs, x));
            } else {
                printf("%srandom:%u", x == head[i] ? "" : "\t", x);
            }
        }
        putchar('\n');
    }
    free(parent);
    free(next);
    free(head);
    return 0;
}

/* One run: the options, the pages, the batch and each method's pairs. */
typedef struct {
    const char   *list, *cache, *method;
    unsigned      tables, k, background;
    float         recall;
    int           clusters, quiet;
    pageset_t     fs;
    batch_t       b;
    uint32_t     *page;         /* batch index -> page, for real pages */
    pairs_t       pp, pb;       /* PSM's pairs, BPHS's */
    double        tp, tb;       /* their CPU time */
    size_t        rp, rb, r0p, r0b;     /* their peak RSS, and before */
    size_t        listings, shorts;     /* pairs left out */
    sh_psm_batch_stats_t pst;
} dedup_t;

/* A batch member: its page's path, or "random:N" for the background. */
static void
print_name(const dedup_t *d, uint32_t i)
{
    if (i < d->b.nreal) {
        fputs(pageset_path(&d->fs, d->page[i]), stdout);
    } else {
        printf("random:%u", i);
    }
}

static int
set_method(void *target, const char *name, const char *value)
{
    if (strcmp(value, "psm") != 0 && strcmp(value, "bphs") != 0
        && strcmp(value, "both") != 0) {
        cli_error("%s: expected psm, bphs or both", name);
        return -1;
    }
    *(const char **) target = value;
    return 0;
}

static int
set_tables(void *target, const char *name, const char *value)
{
    unsigned long n;
    unsigned      G, g;

    if (cli_parse_uint(name, value, 4, 20, &n) != 0
        || sh_bphs_design((unsigned) n, &G, &g) != 0) {
        cli_error("%s: expected 4, 10 or 20", name);
        return -1;
    }
    *(unsigned *) target = (unsigned) n;
    return 0;
}

static const char *
show_tables(const void *target, char *buf, size_t len)
{
    snprintf(buf, len, "%u", *(const unsigned *) target);
    return buf;
}

/* The batch: the pages with a fingerprint, then the background; and the
 * page of each real member. */
static int
make_batch(dedup_t *d)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    size_t   i, n = d->fs.n + d->background + 1;

    d->b.hash = malloc(n * sizeof(uint64_t));
    d->b.w = malloc(n * sizeof(float *));
    d->page = malloc((d->fs.n + 1) * sizeof(uint32_t));
    if (d->b.hash == NULL || d->b.w == NULL || d->page == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < d->fs.n; i++) {
        if (d->fs.fp[i].status == SH_STATUS_OK) {
            d->page[d->b.n] = (uint32_t) i;
            d->b.hash[d->b.n] = d->fs.fp[i].hash;
            d->b.w[d->b.n] = d->fs.fp[i].w;
            d->b.n++;
        }
    }
    d->b.nreal = d->b.n;
    for (i = 0; i < d->background; i++) {
        d->b.hash[d->b.n] = page_rand(&rng);
        d->b.w[d->b.n] = d->b.nreal ? d->b.w[page_rand(&rng) % d->b.nreal]
                                    : NULL;
        d->b.n++;
    }
    return 0;
}

/* The methods asked for, each timed and measured, then the vetoes. */
static int
run_methods(dedup_t *d, const sh_match_opts_t *mo)
{
    size_t real = d->b.nreal;

    if (strcmp(d->method, "bphs") != 0) {
        d->r0p = peak_rss_reset();
        if (run_psm(&d->b, mo, d->k, d->recall, &d->pp, &d->pst, &d->tp)
            != 0) {
            return -1;
        }
        d->rp = peak_rss_peak();
    }
    if (strcmp(d->method, "psm") != 0) {
        d->r0b = peak_rss_reset();
        if (run_bphs(&d->b, d->tables, mo->h, &d->pb, &d->tb) != 0) {
            return -1;
        }
        d->rb = peak_rss_peak();
    }
    d->listings = drop_listings(&d->pp, &d->fs, d->page, real)
                  + drop_listings(&d->pb, &d->fs, d->page, real);
    d->shorts = drop_short(&d->pp, &d->fs, d->page, real)
                + drop_short(&d->pb, &d->fs, d->page, real);
    return 0;
}

/* The pairs of the method shown, or their clusters. */
static void
print_pairs(dedup_t *d)
{
    pairs_t *show = strcmp(d->method, "bphs") == 0 ? &d->pb : &d->pp;
    size_t   real = d->b.nreal, i;

    qsort(show->p, show->n, sizeof(pair_t), cmp_pair);
    if (d->quiet) {
        return;
    }
    if (!d->clusters) {
        for (i = 0; i < show->n; i++) {
            const pair_t *q = &show->p[i];

            print_name(d, q->a);
            putchar('\t');
            print_name(d, q->b);
            printf("\t%u\n", q->d);
        }
        return;
    }
    {
        /* Re-index pairs by fpset position for the paths. */
        batch_t fb = d->b;
        pairs_t tmp = *show;

        for (i = 0; i < tmp.n; i++) {
            if (tmp.p[i].a < real) {
                tmp.p[i].a = d->page[tmp.p[i].a];
            } else {
                tmp.p[i].a += (uint32_t) d->fs.n;
            }
            if (tmp.p[i].b < real) {
                tmp.p[i].b = d->page[tmp.p[i].b];
            } else {
                tmp.p[i].b += (uint32_t) d->fs.n;
            }
        }
        fb.n = d->fs.n + d->b.n;
        print_clusters(&d->fs, &fb, &tmp);
    }
}

/* What each method found, at what cost, on stderr. */
static void
report(dedup_t *d, const sh_match_opts_t *mo)
{
    size_t i, j = 0, common = 0, n = d->b.n;
    double tp = d->tp, tb = d->tb;

    if (d->listings > 0) {
        fprintf(stderr, "dedup: %zu pairs left out: two listings of one "
                "template (same markup, other link words)\n", d->listings);
    }
    if (d->shorts > 0) {
        fprintf(stderr, "dedup: %zu pairs left out: a short hub (a page of "
                "under %u words of its own, mostly links) over %u bits "
                "apart\n", d->shorts, (unsigned) SH_SHORT_TERMS,
                (unsigned) SH_SHORT_H);
    }
    if (strcmp(d->method, "bphs") != 0) {
        fprintf(stderr, "dedup: psm_a rule=%s n=%zu t=%u k=%u pairs=%zu "
                "time=%.3fs pages/s=%.0f pairs/s=%.0f maxrss=%.1fMB "
                "(+%.1f)\n", sh_rule_name(mo->rule), n, d->pst.t, d->pst.k,
                d->pp.n, tp, n / (tp > 0 ? tp : 1e-9),
                d->pp.n / (tp > 0 ? tp : 1e-9), d->rp / 1048576.0,
                (d->rp - (d->r0p < d->rp ? d->r0p : d->rp)) / 1048576.0);
    }
    if (strcmp(d->method, "psm") != 0) {
        fprintf(stderr, "dedup: bphs%u n=%zu pairs=%zu time=%.3fs "
                "pages/s=%.0f pairs/s=%.0f maxrss=%.1fMB (+%.1f)\n",
                d->tables, n, d->pb.n, tb, n / (tb > 0 ? tb : 1e-9),
                d->pb.n / (tb > 0 ? tb : 1e-9), d->rb / 1048576.0,
                (d->rb - (d->r0b < d->rb ? d->r0b : d->rb)) / 1048576.0);
    }
    if (strcmp(d->method, "both") == 0) {
        /* PSM finds a subset of BPHS's exact pairs. */
        qsort(d->pb.p, d->pb.n, sizeof(pair_t), cmp_pair);
        for (i = 0; i < d->pp.n; i++) {
            while (j < d->pb.n && cmp_pair(&d->pb.p[j], &d->pp.p[i]) < 0) {
                j++;
            }
            common += j < d->pb.n
                      && cmp_pair(&d->pb.p[j], &d->pp.p[i]) == 0;
        }
        fprintf(stderr, "dedup: relative recall of psm_a %.4f (%zu of %zu "
                "pairs), speed-up over bphs%u %.2fx\n",
                d->pb.n ? (double) common / d->pb.n : 1.0, common, d->pb.n,
                d->tables, tp > 0 ? tb / tp : 0);
    }
}

/* The rule BPHS can serve, when it is asked for: 0, or -1 (said why). */
static int
check_rule(const dedup_t *d, cli_match_t *mt)
{
    if (strcmp(d->method, "psm") != 0) {
        if (mt->rule_given && mt->rule != SH_RULE_HAMMING) {
            cli_error("--method %s: BPHS serves the hamming rule only",
                      d->method);
            return -1;
        }
        mt->rule = SH_RULE_HAMMING;
    }
    if (cli_match_finish(mt) != 0) {
        return -1;
    }
    if (mt->opts.h > 3 && strcmp(d->method, "psm") != 0) {
        cli_error("BPHS designs support h <= 3");
        return -1;
    }
    return 0;
}

int
cmd_dedup(int argc, char **argv)
{
    static dedup_t d;
    cli_extract_t  x;
    cli_match_t    mt;
    char         **paths = NULL;
    size_t         npaths = 0;
    sh_config_t   *cfg = NULL;
    int            a, rc = 1;
    cli_opt_t      opts[] = {
        CLI_OPT_STRING("--list", "PATHS", &d.list,
                       "pages to compare ('-' = stdin)"),
        CLI_OPT_CALL("--method", "M", &d.method, set_method, NULL,
                     "psm | bphs | both (default psm; both prints\n"
                     "PSM's pairs and compares on stderr)"),
        CLI_OPT_CALL("--tables", "T", &d.tables, set_tables, show_tables,
                     "BPHS design: 4, 10 or 20 tables"),
        CLI_OPT_UINT("--k", "N", &d.k, 1, SH_PROBES_MAX,
                     "PSM probes per page (default: from --recall)"),
        CLI_OPT_CALL("--recall", "R", &d.recall, cli_set_recall,
                     cli_show_float, "target relative recall for k"),
        CLI_OPT_FLAG("--clusters", &d.clusters,
                     "print clusters (connected pages), one per line"),
        CLI_OPT_STRING("--cache", "FILE", &d.cache,
                       "keep the fingerprints in FILE between runs"),
        CLI_OPT_UINT("--background", "N", &d.background, 0, 1ul << 30,
                     "add N random fingerprints (scale tests)"),
        CLI_OPT_FLAG("--quiet", &d.quiet,
                     "print no pairs, only the summary"),
        CLI_OPT_END
    };
    cli_cmd_t      cmd = {
        .name = "dedup", .synopsis = synopsis, .opts = opts, .notes = notes,
        .match = &mt, .extract = &x
    };

    memset(&d, 0, sizeof(d));
    d.method = "psm";
    d.tables = 4;
    d.recall = 0.95f;
    cli_extract_init(&x);
    cli_match_init(&mt);
    pageset_init(&d.fs);
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        cli_match_free(&mt);
        return 0;
    case CLI_BAD:
        goto usage_error;
    case CLI_PARSED:
        break;
    }
    if (a < argc) {
        cli_error("dedup: unexpected argument %s (see --help)", argv[a]);
        goto usage_error;
    }
    if (d.list == NULL) {
        cli_error("dedup needs --list PATHS");
        goto usage_error;
    }
    if (check_rule(&d, &mt) != 0) {
        goto usage_error;
    }
    if (cli_read_list(d.list, &paths, &npaths) != 0) {
        cli_match_free(&mt);
        return 1;
    }
    cfg = cli_extract_config(&x);
    if (cfg != NULL
        && pageset_from_paths(&d.fs, cfg, x.charset, paths, npaths, d.cache)
           == 0
        && make_batch(&d) == 0 && run_methods(&d, &mt.opts) == 0)
    {
        print_pairs(&d);
        report(&d, &mt.opts);
        rc = 0;
    }

    free(d.pp.p);
    free(d.pb.p);
    free(d.b.hash);
    free(d.b.w);
    free(d.page);
    pageset_free(&d.fs);
    sh_config_free(cfg);
    cli_free_list(paths, npaths);
    cli_match_free(&mt);
    return rc;

usage_error:
    cli_match_free(&mt);
    return 2;
}
