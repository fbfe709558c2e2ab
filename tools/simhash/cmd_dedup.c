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

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: simhash dedup [options] --list PATHS\n\n"
        "Print every near-duplicate pair: <path>\\t<path>\\t<distance>.\n\n"
        "  --list PATHS       pages to compare ('-' = stdin)\n"
        "  --method M         psm | bphs | both (default psm; both prints\n"
        "                     PSM's pairs and compares on stderr)\n"
        "  --tables T         BPHS design: 4, 10 or 20 tables (default 4)\n"
        "  --k N              PSM probes per page (default: from --recall)\n"
        "  --recall R         target relative recall for k (default 0.95)\n"
        "  --clusters         print clusters (connected pages), one per line"
        "\n  --cache FILE       keep the fingerprints in FILE between runs\n"
        "  --background N     add N random fingerprints (scale tests)\n"
        "  --quiet            print no pairs, only the summary\n\n"
        "BPHS serves the hamming rule only: with --method bphs or both the\n"
        "rule is hamming unless --match says otherwise (an error).\n\n");
    cli_match_usage(f);
    fputc('\n', f);
    cli_extract_usage(f);
}

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

/* A batch member: its page's path, or "random:N" for the background. */
static void
print_name(const pageset_t *fs, const uint32_t *page, size_t real,
           uint32_t i)
{
    if (i < real) {
        fputs(pageset_path(fs, page[i]), stdout);
    } else {
        printf("random:%u", i);
    }
}

int
cmd_dedup(int argc, char **argv)
{
    cli_extract_t x;
    cli_match_t   mt;
    const char   *list = NULL, *cache = NULL, *method = "psm";
    unsigned long tables = 4, k = 0, background = 0;
    int           rule_given = 0;
    float         recall = 0.95f;
    int           clusters = 0, quiet = 0, a, rc = 1;
    char        **paths = NULL;
    size_t        npaths = 0, i, real = 0;
    sh_config_t  *cfg = NULL;
    pageset_t    fs;
    batch_t       b;
    pairs_t       pp = { 0 }, pb = { 0 };
    uint64_t      rng = 0x9e3779b97f4a7c15ull;
    double        tp = 0, tb = 0;
    size_t        rp = 0, rb = 0, r0p = 0, r0b = 0, listings = 0, shorts = 0;
    sh_psm_batch_stats_t pst;

    cli_extract_init(&x);
    cli_match_init(&mt);
    pageset_init(&fs);
    memset(&b, 0, sizeof(b));
    for (a = 1; a < argc; a++) {
        rule_given |= strcmp(argv[a], "--match") == 0;
        switch (cli_match_arg(&mt, argc, argv, &a)) {
        case 1:
            continue;
        case -1:
            goto usage_error;
        }
        switch (cli_common_arg(&x, argc, argv, &a, usage)) {
        case CLI_ARG_HELP:
            cli_match_free(&mt);
            return 0;
        case CLI_ARG_BAD:
            goto usage_error;
        case CLI_ARG_TAKEN:
            continue;
        case CLI_ARG_OWN:
            break;
        }
        if (strcmp(argv[a], "--list") == 0 && a + 1 < argc) {
            list = argv[++a];
        } else if (strcmp(argv[a], "--cache") == 0 && a + 1 < argc) {
            cache = argv[++a];
        } else if (strcmp(argv[a], "--method") == 0 && a + 1 < argc) {
            method = argv[++a];
            if (strcmp(method, "psm") != 0 && strcmp(method, "bphs") != 0
                && strcmp(method, "both") != 0) {
                cli_error("--method: expected psm, bphs or both");
                goto usage_error;
            }
        } else if (strcmp(argv[a], "--tables") == 0 && a + 1 < argc) {
            unsigned G, g;

            if (cli_parse_uint("--tables", argv[++a], 4, 20, &tables) != 0
                || sh_bphs_design((unsigned) tables, &G, &g) != 0) {
                cli_error("--tables: expected 4, 10 or 20");
                goto usage_error;
            }
        } else if (strcmp(argv[a], "--k") == 0 && a + 1 < argc) {
            if (cli_parse_uint("--k", argv[++a], 1, SH_PROBES_MAX, &k) != 0) {
                goto usage_error;
            }
        } else if (strcmp(argv[a], "--recall") == 0 && a + 1 < argc) {
            char *end;

            recall = strtof(argv[++a], &end);
            if (*end != '\0' || !(recall > 0 && recall <= 1)) {
                cli_error("--recall: expected a number in (0, 1]");
                goto usage_error;
            }
        } else if (strcmp(argv[a], "--background") == 0 && a + 1 < argc) {
            if (cli_parse_uint("--background", argv[++a], 0, 1ul << 30,
                               &background) != 0) {
                goto usage_error;
            }
        } else if (strcmp(argv[a], "--clusters") == 0) {
            clusters = 1;
        } else if (strcmp(argv[a], "--quiet") == 0) {
            quiet = 1;
        } else {
            cli_error("dedup: unknown option '%s'", argv[a]);
            goto usage_error;
        }
    }
    if (list == NULL) {
        cli_error("dedup needs --list PATHS");
        goto usage_error;
    }
    if (strcmp(method, "psm") != 0) {
        if (rule_given && mt.rule != SH_RULE_HAMMING) {
            cli_error("--method %s: BPHS serves the hamming rule only",
                      method);
            goto usage_error;
        }
        mt.rule = SH_RULE_HAMMING;
    }
    if (cli_match_finish(&mt) != 0) {
        goto usage_error;
    }
    if (mt.opts.h > 3 && strcmp(method, "psm") != 0) {
        cli_error("BPHS designs support h <= 3");
        goto usage_error;
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

    /* The batch: pages with a fingerprint, then the background. */
    b.hash = malloc((fs.n + background + 1) * sizeof(uint64_t));
    b.w = malloc((fs.n + background + 1) * sizeof(float *));
    if (b.hash == NULL || b.w == NULL) {
        cli_error("out of memory");
        goto done;
    }
    for (i = 0; i < fs.n; i++) {
        if (fs.fp[i].status == SH_STATUS_OK) {
            b.hash[b.n] = fs.fp[i].hash;
            b.w[b.n] = fs.fp[i].w;
            b.n++;
        }
    }
    real = b.n;
    b.nreal = real;
    for (i = 0; i < background; i++) {
        b.hash[b.n] = page_rand(&rng);
        b.w[b.n] = real ? b.w[page_rand(&rng) % real] : NULL;
        b.n++;
    }
    /* Page indices in pairs refer to b; map real ones back to paths. */
    {
        uint32_t *page = malloc((real + 1) * sizeof(uint32_t));
        size_t    j = 0;

        if (page == NULL) {
            cli_error("out of memory");
            goto done;
        }
        for (i = 0; i < fs.n; i++) {
            if (fs.fp[i].status == SH_STATUS_OK) {
                page[j++] = (uint32_t) i;
            }
        }
        if (strcmp(method, "bphs") != 0) {
            r0p = peak_rss_reset();
            if (run_psm(&b, &mt.opts, (unsigned) k, recall, &pp, &pst, &tp)
                != 0) {
                free(page);
                goto done;
            }
            rp = peak_rss_peak();
        }
        if (strcmp(method, "psm") != 0) {
            r0b = peak_rss_reset();
            if (run_bphs(&b, (unsigned) tables, mt.opts.h, &pb, &tb) != 0) {
                free(page);
                goto done;
            }
            rb = peak_rss_peak();
        }
        listings = drop_listings(&pp, &fs, page, real)
                   + drop_listings(&pb, &fs, page, real);
        shorts = drop_short(&pp, &fs, page, real)
                 + drop_short(&pb, &fs, page, real);
        {
            pairs_t *show = strcmp(method, "bphs") == 0 ? &pb : &pp;

            qsort(show->p, show->n, sizeof(pair_t), cmp_pair);
            if (!quiet && !clusters) {
                for (i = 0; i < show->n; i++) {
                    const pair_t *q = &show->p[i];

                    print_name(&fs, page, real, q->a);
                    putchar('\t');
                    print_name(&fs, page, real, q->b);
                    printf("\t%u\n", q->d);
                }
            }
            if (!quiet && clusters) {
                /* Re-index pairs by fpset position for the paths. */
                batch_t fb = b;
                pairs_t tmp = *show;

                for (i = 0; i < tmp.n; i++) {
                    if (tmp.p[i].a < real) {
                        tmp.p[i].a = page[tmp.p[i].a];
                    } else {
                        tmp.p[i].a += (uint32_t) fs.n;
                    }
                    if (tmp.p[i].b < real) {
                        tmp.p[i].b = page[tmp.p[i].b];
                    } else {
                        tmp.p[i].b += (uint32_t) fs.n;
                    }
                }
                fb.n = fs.n + b.n;
                print_clusters(&fs, &fb, &tmp);
            }
        }
        free(page);
    }

    if (listings > 0) {
        fprintf(stderr, "dedup: %zu pairs left out: two listings of one "
                "template (same markup, other link words)\n", listings);
    }
    if (shorts > 0) {
        fprintf(stderr, "dedup: %zu pairs left out: a short hub (a page of "
                "under %u words of its own, mostly links) over %u bits "
                "apart\n", shorts, (unsigned) SH_SHORT_TERMS,
                (unsigned) SH_SHORT_H);
    }
    if (strcmp(method, "bphs") != 0) {
        fprintf(stderr, "dedup: psm_a rule=%s n=%zu t=%u k=%u pairs=%zu "
                "time=%.3fs pages/s=%.0f pairs/s=%.0f maxrss=%.1fMB "
                "(+%.1f)\n", sh_rule_name(mt.opts.rule), b.n, pst.t, pst.k,
                pp.n, tp, b.n / (tp > 0 ? tp : 1e-9),
                pp.n / (tp > 0 ? tp : 1e-9), rp / 1048576.0,
                (rp - (r0p < rp ? r0p : rp)) / 1048576.0);
    }
    if (strcmp(method, "psm") != 0) {
        fprintf(stderr, "dedup: bphs%lu n=%zu pairs=%zu time=%.3fs "
                "pages/s=%.0f pairs/s=%.0f maxrss=%.1fMB (+%.1f)\n", tables,
                b.n, pb.n, tb, b.n / (tb > 0 ? tb : 1e-9),
                pb.n / (tb > 0 ? tb : 1e-9), rb / 1048576.0,
                (rb - (r0b < rb ? r0b : rb)) / 1048576.0);
    }
    if (strcmp(method, "both") == 0) {
        /* PSM finds a subset of BPHS's exact pairs. */
        size_t j = 0, common = 0;

        qsort(pb.p, pb.n, sizeof(pair_t), cmp_pair);
        for (i = 0; i < pp.n; i++) {
            while (j < pb.n && cmp_pair(&pb.p[j], &pp.p[i]) < 0) {
                j++;
            }
            common += j < pb.n && cmp_pair(&pb.p[j], &pp.p[i]) == 0;
        }
        fprintf(stderr, "dedup: relative recall of psm_a %.4f (%zu of %zu "
                "pairs), speed-up over bphs%lu %.2fx\n",
                pb.n ? (double) common / pb.n : 1.0, common, pb.n, tables,
                tp > 0 ? tb / tp : 0);
    }
    rc = 0;

done:
    free(pp.p);
    free(pb.p);
    free(b.hash);
    free(b.w);
    pageset_free(&fs);
    sh_config_free(cfg);
    cli_free_list(paths, npaths);
    cli_match_free(&mt);
    return rc;

usage_error:
    cli_match_free(&mt);
    return 2;
}
