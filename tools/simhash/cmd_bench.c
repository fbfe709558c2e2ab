/*
 * cmd_bench.c -- `simhash bench`: the PSM index against BPHS and brute
 * force in online mode, as in section 8.4 of the PSM paper.
 *
 * Workload.  Real pages: every rust-doc page is fingerprinted (cached).
 * Stored: all of them except the std/ pages that have a core/ or alloc/
 * twin (std re-exports both, so the twins are real near-duplicates).
 * Queries: those std/ pages; edited copies of stored pages (a paragraph
 * added or removed, digits and a date line changed, an ad block added);
 * and fresh pages from another corpus.  To reach n stored fingerprints the
 * rest is random 64-bit background.
 *
 * A few thousand real queries are too few to time without the caches
 * learning them, so the workload is replicated by relocation: copy c XORs
 * one random 64-bit mask r_c into every query and into every stored real
 * fingerprint that is within h of some query.  XOR preserves distances and
 * |W_j| (which decide the flip probabilities), so each copy is the same
 * problem at an unrelated place in the table.
 *
 * Relative recall (PSM section 8.3) is measured against BPHS, which is
 * exact: PSM_A counts pairs, PSM_F counts queries with at least one match.
 * PSM's k is chosen per n as the smallest k reaching the target recall
 * (from the VOSH rank of every true match, the same order the lookups
 * use); the runs with k from the built-in k(t) table are reported too.
 *
 * Rules (sh_match.h).  Under the hamming rule the truth is BPHS, as above.
 * Under the weighted rule no block design is exact, so the truth is brute
 * force (sh_brute_join: every query against every stored fingerprint),
 * computed for the first --truth-queries queries, which are then the
 * weighted rule's queries; `--match both` measures the two rules on the
 * same stored set and the same queries in one run.  The JSON rows name
 * their rule.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "page_edit.h"
#include "pageset.h"
#include "sh_bigmem.h"
#include "sh_bphs.h"
#include "sh_brute.h"
#include "sh_index.h"
#include "sh_vosh.h"

#define RANK_NONE   UINT32_MAX
#define MAXMATCH    65536

enum { Q_TWIN = 0, Q_EDIT = 1, Q_FRESH = 1 + PAGE_EDIT_NTYPES, Q_NKINDS };


/*
 * A query carries its weights inline: the queries are read in order, as a
 * crawler's pages arrive with weights just computed, so the weights are
 * not a cache miss that BPHS (which ignores them) would not pay.
 */
typedef struct {
    uint64_t     hash;
    uint32_t     kind;
    uint32_t     base;          /* the real query it is a copy of */
    float        w[64];
} bq_t;

typedef struct {
    /* options */
    const char *corpus[8];
    unsigned    ncorpus;
    const char *fresh;
    const char *cache;
    unsigned    log2n[16];
    unsigned    nn;
    unsigned    h;              /* hamming radius */
    int         rules;          /* bit 0: hamming, bit 1: weighted */
    sh_match_opts_t wm;         /* the weighted rule's settings */
    unsigned    truth_queries;  /* weighted: queries with a brute truth */
    int         weighted;       /* the rule of the pass under way */
    /* PSM rows: buckets probed and entries compared per query, counted
     * (not timed), so they compare runs on a busy machine; < 0: none */
    double      pq_probes, pq_scanned;
    float       recall;
    unsigned    k_force;
    unsigned    queries;
    unsigned    edits;
    unsigned    brute_max;
    unsigned    learn_log2n;
    unsigned    t;              /* header bits, 0 = the index's choice */
    unsigned    reps;           /* timed passes; the fastest counts */
    int         json;
    const char *dat;
    int         m_psm, m_bphs[3], m_brute;
    uint64_t    seed;
    const sh_volatility_t *vol;     /* the table lookups use */
    /* data */
    pageset_t  corp, fresh_set, edit_set;
    uint64_t   *real;           /* stored real fingerprints */
    size_t      nreal;
    bq_t       *rq;             /* real queries */
    size_t      nrq;
    uint64_t   *near;           /* stored real fingerprints near a query */
    size_t      nnear;
    FILE       *dat_qps, *dat_recall;
} bench_t;

/*
 * This thread's CPU time: "queries/s on one core" even on a shared machine
 * where the process is sometimes descheduled.  (Co-runners still compete
 * for the caches and memory; --reps keeps the fastest pass.)
 */
static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char synopsis[] =
    "usage: simhash bench [options]\n\n"
    "PSM index vs BPHS vs brute force, online mode (PSM paper 8.4).\n\n";

/* ---- Corpus ---- */

typedef struct {
    char  **p;
    size_t  n, cap;
} strvec_t;

static int
sv_push(strvec_t *v, const char *s)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? 2 * v->cap : 1024;
        void  *np = realloc(v->p, nc * sizeof(char *));

        if (np == NULL) {
            return -1;
        }
        v->p = np;
        v->cap = nc;
    }
    v->p[v->n] = strdup(s);
    return v->p[v->n++] == NULL ? -1 : 0;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
walk(const char *dir, strvec_t *out)
{
    DIR           *d = opendir(dir);
    struct dirent *e;
    char           path[4096];

    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat sb;
        size_t      l = strlen(e->d_name);

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &sb) != 0) {
            continue;
        }
        if (S_ISDIR(sb.st_mode)) {
            walk(path, out);
        } else if (S_ISREG(sb.st_mode) && l > 5
                   && strcmp(e->d_name + l - 5, ".html") == 0) {
            sv_push(out, path);
        }
    }
    closedir(d);
}

static int
fingerprint_dirs(sh_config_t *cfg, const char **dirs, unsigned nd,
                 const char *cache, pageset_t *out)
{
    strvec_t v = { 0 };
    unsigned i;
    int      rc;

    for (i = 0; i < nd; i++) {
        walk(dirs[i], &v);
    }
    if (v.n == 0) {
        cli_error("bench: no .html pages under %s", dirs[0]);
        return -1;
    }
    qsort(v.p, v.n, sizeof(char *), cmp_str);
    rc = pageset_from_paths(out, cfg, NULL, v.p, v.n, cache);
    for (i = 0; i < v.n; i++) {
        free(v.p[i]);
    }
    free(v.p);
    return rc;
}

/* Index of path in the sorted corpus, or -1. */
static long
find_path(const pageset_t *s, const char *path)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int    c = strcmp(pageset_path(s, mid), path);

        if (c == 0) {
            return (long) mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}

/* The twin core/REL or alloc/REL of a .../std/REL page, or -1. */
static long
find_twin(const pageset_t *s, const char *path)
{
    const char *p = strstr(path, "/std/");
    const char *alt[2] = { "/core/", "/alloc/" };
    char        buf[4096];
    int         i;

    if (p == NULL) {
        return -1;
    }
    for (i = 0; i < 2; i++) {
        long j;

        snprintf(buf, sizeof(buf), "%.*s%s%s", (int) (p - path), path,
                 alt[i], p + 5);
        j = find_path(s, buf);
        if (j >= 0 && s->fp[j].status == SH_STATUS_OK) {
            return j;
        }
    }
    return -1;
}

static int
make_edits(bench_t *b, sh_config_t *cfg, const uint8_t *is_query)
{
    char     cpath[4096];
    uint64_t rng = b->seed ^ 0x5bd1e995u, canary = pageset_canary(cfg);
    size_t   made = 0, tries = 0;

    if (b->cache != NULL) {
        snprintf(cpath, sizeof(cpath), "%s.edits", b->cache);
        if (pageset_load(&b->edit_set, cpath, canary ^ b->edits ^ b->seed)
            == 0) {
            return 0;
        }
    }
    pageset_init(&b->edit_set);
    while (made < b->edits && tries++ < 20 * (size_t) b->edits + 100) {
        size_t      i = page_rand(&rng) % b->corp.n;
        size_t      d = page_rand(&rng) % b->corp.n;
        page_edit_t   e = (page_edit_t) (made % PAGE_EDIT_NTYPES);
        char       *page, *donor, *ed, name[4200];
        size_t      len, dlen, elen;
        sh_result_t r;

        if (b->corp.fp[i].status != SH_STATUS_OK || is_query[i]) {
            continue;
        }
        page = page_read_file(pageset_path(&b->corp, i), &len);
        donor = page_read_file(pageset_path(&b->corp, d), &dlen);
        ed = page ? page_edit_page(page, len, e, donor, donor ? dlen : 0, &rng,
                                 &elen) : NULL;
        if (ed != NULL && pageset_fingerprint(cfg, ed, elen, &r) == 0
            && r.status == SH_STATUS_OK)
        {
            snprintf(name, sizeof(name), "%d %zu %s", (int) e, i,
                     pageset_path(&b->corp, i));
            pageset_add(&b->edit_set, name, &r);
            made++;
            pageset_progress("editing pages", made, b->edits);
        }
        free(page);
        free(donor);
        free(ed);
    }
    if (b->cache != NULL) {
        pageset_save(&b->edit_set, cpath, canary ^ b->edits ^ b->seed);
    }
    return 0;
}

static int
build_workload(bench_t *b, sh_config_t *cfg)
{
    const char *fresh_dirs[1];
    uint8_t    *is_query;
    size_t      i, nfresh = 0, ntwin = 0;
    char        fcache[4096];
    sh_brute_t  br;
    sh_match_t *m;
    uint8_t    *near_mark;

    if (fingerprint_dirs(cfg, b->corpus, b->ncorpus, b->cache, &b->corp)
        != 0) {
        return -1;
    }
    fresh_dirs[0] = b->fresh;
    if (b->fresh != NULL) {
        if (b->cache) {
            snprintf(fcache, sizeof(fcache), "%s.fresh", b->cache);
        }
        if (fingerprint_dirs(cfg, fresh_dirs, 1, b->cache ? fcache : NULL,
                             &b->fresh_set) != 0) {
            return -1;
        }
    }

    is_query = calloc(b->corp.n, 1);
    b->real = malloc(b->corp.n * sizeof(uint64_t));
    b->rq = malloc((b->corp.n + b->edits + b->fresh_set.n + 1)
                   * sizeof(bq_t));
    if (is_query == NULL || b->real == NULL || b->rq == NULL) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < b->corp.n; i++) {
        long tw;

        if (b->corp.fp[i].status != SH_STATUS_OK) {
            continue;
        }
        tw = find_twin(&b->corp, pageset_path(&b->corp, i));
        if (tw >= 0) {
            is_query[i] = 1;
            b->rq[b->nrq].hash = b->corp.fp[i].hash;
            memcpy(b->rq[b->nrq].w, b->corp.fp[i].w, sizeof(b->rq[0].w));
            b->rq[b->nrq].kind = Q_TWIN;
            b->nrq++;
            ntwin++;
        }
    }
    for (i = 0; i < b->corp.n; i++) {
        if (b->corp.fp[i].status == SH_STATUS_OK && !is_query[i]) {
            b->real[b->nreal++] = b->corp.fp[i].hash;
        }
    }
    if (make_edits(b, cfg, is_query) != 0) {
        return -1;
    }
    for (i = 0; i < b->edit_set.n; i++) {
        b->rq[b->nrq].hash = b->edit_set.fp[i].hash;
        memcpy(b->rq[b->nrq].w, b->edit_set.fp[i].w, sizeof(b->rq[0].w));
        b->rq[b->nrq].kind = Q_EDIT + (uint32_t) atoi(pageset_path(
                                                      &b->edit_set, i));
        b->nrq++;
    }
    for (i = 0; i < b->fresh_set.n && nfresh < 2000; i++) {
        if (b->fresh_set.fp[i].status == SH_STATUS_OK) {
            b->rq[b->nrq].hash = b->fresh_set.fp[i].hash;
            memcpy(b->rq[b->nrq].w, b->fresh_set.fp[i].w,
                   sizeof(b->rq[0].w));
            b->rq[b->nrq].kind = Q_FRESH;
            b->nrq++;
            nfresh++;
        }
    }
    for (i = 0; i < b->nrq; i++) {
        b->rq[i].base = (uint32_t) i;
    }
    free(is_query);

    /* The stored real fingerprints that match some query under a rule
     * measured: relocated with the queries. */
    near_mark = calloc(b->nreal, 1);
    m = malloc(MAXMATCH * sizeof(sh_match_t));
    if (near_mark == NULL || m == NULL || sh_brute_init(&br, b->nreal)) {
        cli_error("out of memory");
        return -1;
    }
    for (i = 0; i < b->nreal; i++) {
        sh_brute_add(&br, b->real[i], (uint32_t) i);
    }
    for (i = 0; i < b->nrq; i++) {
        size_t n = 0, j;

        if (b->rules & 1) {
            n = sh_brute_lookup(&br, b->rq[i].hash, b->h, SH_MATCH_ALL, m,
                                MAXMATCH);
            for (j = 0; j < n && j < MAXMATCH; j++) {
                near_mark[m[j].ref] = 1;
            }
        }
        if (b->rules & 2) {
            sh_matcher_t q;

            sh_matcher_init(&q, &b->wm, b->rq[i].hash, b->rq[i].w);
            n = sh_brute_match(&br, &q, SH_MATCH_ALL, m, MAXMATCH);
            for (j = 0; j < n && j < MAXMATCH; j++) {
                near_mark[m[j].ref] = 1;
            }
        }
    }
    b->near = malloc((b->nreal + 1) * sizeof(uint64_t));
    for (i = 0; i < b->nreal; i++) {
        if (near_mark[i]) {
            b->near[b->nnear++] = b->real[i];
        }
    }
    sh_brute_free(&br);
    free(near_mark);
    free(m);
    fprintf(stderr, "bench: %zu pages (%zu stored), queries: %zu std twins, "
            "%zu edits, %zu fresh; %zu stored pages near a query\n",
            b->corp.n, b->nreal, ntwin, b->edit_set.n, nfresh, b->nnear);
    return 0;
}

/* ---- One n ---- */

typedef struct {
    uint64_t *st;           /* stored fingerprints; ref = position */
    size_t    n;
    bq_t     *q;
    size_t    nq;
    uint32_t *toff;         /* truth, CSR by query */
    uint32_t *tref;
    size_t    npairs;
    size_t    nqmatch;      /* queries with at least one match */
} run_t;

static void
shuffle64(uint64_t *a, size_t n, uint64_t *rng)
{
    size_t i;

    for (i = n; i > 1; i--) {
        size_t   j = page_rand(rng) % i;
        uint64_t t = a[i - 1];

        a[i - 1] = a[j];
        a[j] = t;
    }
}

static int
make_run(bench_t *b, unsigned log2n, run_t *r)
{
    size_t   n = (size_t) 1 << log2n, i, c, copies, at = 0;
    uint64_t rng = b->seed + log2n;

    memset(r, 0, sizeof(*r));
    if (n < b->nreal) {
        cli_error("bench: 2^%u is smaller than the %zu real pages", log2n,
                  b->nreal);
        return -1;
    }
    copies = b->queries / (b->nrq ? b->nrq : 1);
    if (b->nnear > 0 && copies * b->nnear > (n - b->nreal) / 2) {
        copies = (n - b->nreal) / 2 / b->nnear;
    }
    r->st = malloc(n * sizeof(uint64_t));
    r->q = malloc((copies + 1) * b->nrq * sizeof(bq_t));
    if (r->st == NULL || r->q == NULL) {
        cli_error("out of memory");
        return -1;
    }
    memcpy(r->st, b->real, b->nreal * sizeof(uint64_t));
    at = b->nreal;
    memcpy(r->q, b->rq, b->nrq * sizeof(bq_t));
    r->nq = b->nrq;
    for (c = 1; c <= copies; c++) {
        uint64_t mask = page_rand(&rng);

        for (i = 0; i < b->nnear; i++) {
            r->st[at++] = b->near[i] ^ mask;
        }
        for (i = 0; i < b->nrq; i++) {
            r->q[r->nq] = b->rq[i];
            r->q[r->nq].hash ^= mask;
            r->nq++;
        }
    }
    while (at < n) {
        r->st[at++] = page_rand(&rng);
    }
    r->n = n;
    /* Stored in random order: insertion order must not help anyone. */
    shuffle64(r->st, n, &rng);
    return 0;
}

static void
free_run(run_t *r)
{
    free(r->st);
    free(r->q);
    free(r->toff);
    free(r->tref);
}

static int
cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

    return (x > y) - (x < y);
}

/* ---- Reporting ---- */

static void
report(bench_t *b, const char *method, size_t n, double qps, double recall,
       double bpe, double dbpe, unsigned k, unsigned t, double build_s,
       size_t nq)
{
    const char *rule = b->weighted ? "weighted" : "hamming";

    if (b->json) {
        printf("{\"method\": \"%s\", \"rule\": \"%s\", \"n\": %zu, "
               "\"qps\": %.0f, \"recall\": %.4f, \"bytes_per_entry\": %.2f,"
               " \"doc_bytes_per_entry\": %.2f, \"k\": %u, \"t\": %u, "
               "\"build_s\": %.2f, \"queries\": %zu", method, rule, n, qps,
               recall, bpe, dbpe, k, t, build_s, nq);
        if (b->pq_probes >= 0) {
            printf(", \"probes_per_query\": %.2f, \"scanned_per_query\": "
                   "%.2f", b->pq_probes, b->pq_scanned);
        }
        if (b->weighted) {
            printf(", \"threshold\": %.4f, \"cap\": %u}\n",
                   sh_score_nats(b->wm.threshold), b->wm.h);
        } else {
            printf(", \"h\": %u}\n", b->h);
        }
    } else {
        printf("%-16s %-8s 2^%-3u %12.0f %8.4f %8.2f %8.2f %5u %3u %8.2f\n",
               method, rule, (unsigned) __builtin_ctzll(n), qps, recall, bpe,
               dbpe, k, t, build_s);
    }
    fflush(stdout);
    if (b->dat_qps != NULL) {
        fprintf(b->dat_qps, "%u\t%s%s\t%.0f\t%.4f\t%.2f\n",
                (unsigned) __builtin_ctzll(n), method,
                b->weighted ? ":weighted" : "", qps, recall, bpe);
        fflush(b->dat_qps);
    }
}

/* Recall of a result set against the truth; ALL counts pairs. */
static double
measure(const run_t *r, const uint32_t *found_count, int all)
{
    size_t i, hit = 0;

    for (i = 0; i < r->nq; i++) {
        if (all) {
            hit += found_count[i];
        } else {
            hit += found_count[i] > 0 && r->toff[i + 1] > r->toff[i];
        }
    }
    if (all) {
        return r->npairs ? (double) hit / (double) r->npairs : 1.0;
    }
    return r->nqmatch ? (double) hit / (double) r->nqmatch : 1.0;
}

/* ---- BPHS: truth and timing ---- */

static unsigned
bphs_tables_of(unsigned G, unsigned g)
{
    unsigned r = 1, i;

    for (i = 1; i <= g; i++) {
        r = r * (G - g + i) / i;
    }
    return r;
}

static int
run_bphs(bench_t *b, run_t *r, unsigned tables, int truth)
{
    unsigned   G, g, mode;
    sh_bphs_t *bp;
    sh_match_t *m = malloc(MAXMATCH * sizeof(sh_match_t));
    uint32_t  *cnt = calloc(r->nq, sizeof(uint32_t));
    char       err[256], name[32];
    size_t     i, j;
    double     t0, build;

    sh_bphs_design(tables, &G, &g);
    {
        /* T tables of 12 bytes an entry, the staging arrays and the radix
         * sort's buffers: skip a design that would push the machine into
         * swap (the truth design must run). */
        double need = ((double) bphs_tables_of(G, g) + 2) * 12.0
                      * (double) r->n;
        double avail = (double) sysconf(_SC_AVPHYS_PAGES)
                       * (double) sysconf(_SC_PAGESIZE);

        if (!truth && need > 0.85 * avail) {
            fprintf(stderr, "bench: BPHS with %u tables skipped at n = %zu:"
                    " needs %.1f GB, %.1f GB free\n", tables, r->n,
                    need / 1e9, avail / 1e9);
            free(m);
            free(cnt);
            return 0;
        }
    }
    t0 = now();
    bp = sh_bphs_new(G, g, r->n, err, sizeof(err));
    if (bp == NULL || m == NULL || cnt == NULL) {
        cli_error("bench: %s", bp ? "out of memory" : err);
        return -1;
    }
    for (i = 0; i < r->n; i++) {
        sh_bphs_add(bp, r->st[i], (uint32_t) i);
    }
    if (sh_bphs_build(bp) != 0) {
        cli_error("bench: out of memory building %u BPHS tables", tables);
        sh_bphs_free(bp);
        return -1;
    }
    build = now() - t0;

    if (truth) {
        /* The exact answer every recall is measured against. */
        size_t cap = r->nq * 4 + 1024;

        r->toff = malloc((r->nq + 1) * sizeof(uint32_t));
        r->tref = malloc(cap * sizeof(uint32_t));
        r->npairs = r->nqmatch = 0;
        for (i = 0; i < r->nq; i++) {
            size_t n = sh_bphs_lookup(bp, r->q[i].hash, b->h, SH_MATCH_ALL,
                                      m, MAXMATCH, NULL);

            if (n > MAXMATCH) {
                n = MAXMATCH;
            }
            r->toff[i] = (uint32_t) r->npairs;
            if (r->npairs + n > cap) {
                cap = 2 * (r->npairs + n);
                r->tref = realloc(r->tref, cap * sizeof(uint32_t));
            }
            for (j = 0; j < n; j++) {
                r->tref[r->npairs + j] = m[j].ref;
            }
            qsort(r->tref + r->npairs, n, sizeof(uint32_t), cmp_u32);
            r->npairs += n;
            r->nqmatch += n > 0;
        }
        r->toff[r->nq] = (uint32_t) r->npairs;
    }

    for (mode = 0; mode < 2; mode++) {
        sh_match_mode_t md = mode ? SH_MATCH_ALL : SH_MATCH_FIRST;
        double el = 0;
        unsigned rep;

        for (rep = 0; rep < b->reps; rep++) {
            double t1 = now(), e;

            for (i = 0; i < r->nq; i++) {
                cnt[i] = (uint32_t) sh_bphs_lookup(bp, r->q[i].hash, b->h, md,
                                                   m, MAXMATCH, NULL);
            }
            e = now() - t1;
            el = rep == 0 || e < el ? e : el;
        }
        snprintf(name, sizeof(name), "BPHS%u_%c", tables, mode ? 'A' : 'F');
        report(b, name, r->n, r->nq / el, measure(r, cnt, mode),
               (double) sh_bphs_fingerprint_bytes(bp) / r->n,
               (double) sh_bphs_document_bytes(bp) / r->n, tables, 0, build,
               r->nq);
    }
    sh_bphs_free(bp);
    free(m);
    free(cnt);
    return 0;
}

/* ---- PSM ---- */

/* Header subsets the index probes under the current rule (sh_index.c). */
static unsigned
rule_vosh_h(const bench_t *b)
{
    unsigned h = b->weighted ? b->wm.h : b->h;

    return h > SH_H_MAX ? SH_H_MAX : h;
}

/* The lookup options of the current rule. */
static void
rule_lookup_opts(const bench_t *b, sh_lookup_opts_t *o)
{
    if (b->weighted) {
        o->rule = SH_RULE_WEIGHTED;
        o->h = b->wm.h;
        o->threshold = b->wm.threshold;
    } else {
        o->rule = SH_RULE_HAMMING;
        o->h = b->h;
    }
    o->vol = b->vol;
}

/*
 * VOSH rank (probe number, 0 = x's own bucket) of every true match of
 * every query, under `vol`; RANK_NONE beyond SH_PROBES_MAX.
 */
static void
compute_ranks(const bench_t *b, const run_t *r, unsigned t,
              const sh_volatility_t *vol, uint32_t *rank)
{
    static sh_vosh_node_t heap[SH_VOSH_HEAP_FOR(SH_PROBES_MAX, SH_H_MAX)];
    uint64_t hmask = ~0ull << (64 - t);
    size_t   i, j;

    for (i = 0; i < r->nq; i++) {
        uint32_t lo = r->toff[i], hi = r->toff[i + 1], left = 0, k;
        float    lor[40];
        uint8_t  bit_of[40];
        sh_vosh_t v;
        sh_vosh_node_t node;

        for (j = lo; j < hi; j++) {
            uint64_t d = (r->q[i].hash ^ r->st[r->tref[j]]) & hmask;

            rank[j] = d == 0 ? 0 : RANK_NONE;
            left += d != 0;
        }
        if (left == 0) {
            continue;
        }
        sh_vosh_rank_header(vol, r->q[i].w, t, lor, bit_of);
        sh_vosh_init(&v, lor, t, rule_vosh_h(b), heap,
                     SH_VOSH_HEAP_FOR(SH_PROBES_MAX, SH_H_MAX));
        for (k = 1; k <= SH_PROBES_MAX && left > 0
                    && sh_vosh_next(&v, &node); k++) {
            uint64_t mask = 0;
            unsigned e;

            for (e = 0; e < node.size; e++) {
                mask |= 1ull << bit_of[node.idx[e]];
            }
            for (j = lo; j < hi; j++) {
                if (rank[j] == RANK_NONE
                    && ((r->q[i].hash ^ r->st[r->tref[j]]) & hmask) == mask) {
                    rank[j] = k;
                    left--;
                }
            }
        }
    }
}

/* Recall at k from ranks: pairs (all) or queries (first). */
static double
recall_at(const run_t *r, const uint32_t *rank, unsigned k, int all,
          const uint8_t *subset, int want)
{
    size_t i, j, hit = 0, tot = 0;

    for (i = 0; i < r->nq; i++) {
        uint32_t best = RANK_NONE;

        if (subset != NULL && subset[r->q[i].base] != want) {
            continue;
        }
        if (r->toff[i + 1] == r->toff[i]) {
            continue;
        }
        for (j = r->toff[i]; j < r->toff[i + 1]; j++) {
            if (all) {
                hit += rank[j] <= k;
                tot++;
            } else if (rank[j] < best) {
                best = rank[j];
            }
        }
        if (!all) {
            hit += best <= k;
            tot++;
        }
    }
    return tot ? (double) hit / (double) tot : 1.0;
}

static unsigned
k_for(const run_t *r, const uint32_t *rank, float target, int all)
{
    unsigned lo = 0, hi = SH_PROBES_MAX;

    if (recall_at(r, rank, hi, all, NULL, 0) < target) {
        return hi;
    }
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;

        if (recall_at(r, rank, mid, all, NULL, 0) >= target) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

static void
learn_experiment(bench_t *b, const run_t *r, sh_index_t *ix, unsigned t,
                 const uint32_t *rank_builtin, unsigned k_train)
{
    uint8_t  *train = calloc(b->nrq, 1);
    uint32_t *rank2 = malloc((r->npairs + 1) * sizeof(uint32_t));
    sh_match_t *m = malloc(MAXMATCH * sizeof(sh_match_t));
    sh_lookup_opts_t o;
    sh_learn_counts_t c;
    sh_volatility_t  *lv;
    size_t i;
    unsigned ks[5] = { 5, 10, 20, 0, 50 }, j;

    ks[3] = k_train;
    for (i = 0; i < b->nrq; i++) {
        train[i] = i % 2;
    }
    /* Train: the index confirms matches of half the real queries (and
     * their copies) and tallies them. */
    sh_index_learn_reset(ix);
    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_ALL;
    rule_lookup_opts(b, &o);
    o.probes = k_train;
    o.learn = 1;
    for (i = 0; i < r->nq; i++) {
        if (train[r->q[i].base]) {
            sh_index_lookup(ix, r->q[i].hash, r->q[i].w, &o, m, MAXMATCH,
                            NULL);
        }
    }
    sh_index_learn_counts(ix, &c);
    lv = sh_volatility_learned(&c, b->vol);
    compute_ranks(b, r, t, lv, rank2);
    fprintf(stderr, "learner: %llu confirmed pairs learned; recall on the "
            "other half (built-in -> learned):\n",
            (unsigned long long) c.pairs);
    for (j = 0; j < 5; j++) {
        fprintf(stderr, "  k=%-4u PSM_F %.4f -> %.4f   PSM_A %.4f -> %.4f\n",
                ks[j], recall_at(r, rank_builtin, ks[j], 0, train, 0),
                recall_at(r, rank2, ks[j], 0, train, 0),
                recall_at(r, rank_builtin, ks[j], 1, train, 0),
                recall_at(r, rank2, ks[j], 1, train, 0));
        if (b->json) {
            printf("{\"method\": \"learner\", \"n\": %zu, \"k\": %u, "
                   "\"recall_f_builtin\": %.4f, \"recall_f_learned\": %.4f, "
                   "\"recall_a_builtin\": %.4f, \"recall_a_learned\": %.4f, "
                   "\"pairs\": %llu}\n", r->n, ks[j],
                   recall_at(r, rank_builtin, ks[j], 0, train, 0),
                   recall_at(r, rank2, ks[j], 0, train, 0),
                   recall_at(r, rank_builtin, ks[j], 1, train, 0),
                   recall_at(r, rank2, ks[j], 1, train, 0),
                   (unsigned long long) c.pairs);
        }
    }
    {
        float w;

        fprintf(stderr, "  p(|w|) built-in vs learned:");
        for (w = 0.05f; w < 1.3f; w += 0.2f) {
            fprintf(stderr, " %.2f:%.3g/%.3g", w,
                    sh_volatility_p(b->vol, w),
                    sh_volatility_p(lv, w));
        }
        fprintf(stderr, "\n");
    }
    sh_volatility_free(lv);
    free(train);
    free(rank2);
    free(m);
}

static int
run_psm(bench_t *b, run_t *r, unsigned log2n)
{
    size_t      size = sh_index_region_size((uint32_t) r->n), i;
    void       *mem = NULL;
    sh_index_t *ix;
    sh_index_stats_t st;
    sh_lookup_opts_t o;
    sh_match_t *m = malloc(MAXMATCH * sizeof(sh_match_t));
    uint32_t   *cnt = calloc(r->nq, sizeof(uint32_t));
    uint32_t   *rank = malloc((r->npairs + 1) * sizeof(uint32_t));
    char        err[256];
    double      t0, build;
    unsigned    mode, kk[2], kt[2], fk;

    mem = sh_big_alloc(size);               /* as BPHS's tables */
    if (m == NULL || cnt == NULL || rank == NULL || mem == NULL) {
        cli_error("bench: out of memory for the PSM index");
        return -1;
    }
    t0 = now();
    ix = sh_index_init(mem, size, b->t, 0, err, sizeof(err));
    if (ix == NULL) {
        cli_error("bench: %s", err);
        return -1;
    }
    for (i = 0; i < r->n; i++) {
        sh_index_insert(ix, r->st[i], NULL);
    }
    build = now() - t0;
    sh_index_stats(ix, &st);

    compute_ranks(b, r, st.t, b->vol, rank);
    for (mode = 0; mode < 2; mode++) {
        kk[mode] = b->k_force ? b->k_force
                              : k_for(r, rank, b->recall, (int) mode);
        sh_lookup_opts_init(&o);
        o.mode = mode ? SH_MATCH_ALL : SH_MATCH_FIRST;
        rule_lookup_opts(b, &o);
        o.recall = b->recall;
        kt[mode] = sh_index_probes_for(ix, &o);
    }
    if (b->dat_recall != NULL && !b->weighted) {
        unsigned fixed[4] = { 5, 10, 20, 50 };

        fprintf(b->dat_recall, "%u\t%u", log2n, st.t);
        for (fk = 0; fk < 4; fk++) {
            fprintf(b->dat_recall, "\t%.4f\t%.4f",
                    recall_at(r, rank, fixed[fk], 0, NULL, 0),
                    recall_at(r, rank, fixed[fk], 1, NULL, 0));
        }
        fprintf(b->dat_recall, "\n");
        fflush(b->dat_recall);
    }

    /* Timed runs: at the k reaching the target, then at the table's k. */
    for (fk = 0; fk < 2; fk++) {
        for (mode = 0; mode < 2; mode++) {
            double el = 0, t1, rec, pred, np = 0, ns = 0;
            char   name[32];
            unsigned rep;
            sh_lookup_stats_t ls;

            sh_lookup_opts_init(&o);
            o.mode = mode ? SH_MATCH_ALL : SH_MATCH_FIRST;
            rule_lookup_opts(b, &o);
            o.probes = fk == 0 ? kk[mode] : kt[mode];
            if (o.probes == 0) {
                o.probes = 1;
            }
            for (rep = 0; rep < b->reps; rep++) {
                double e;

                t1 = now();
                for (i = 0; i < r->nq; i++) {
                    cnt[i] = (uint32_t) sh_index_lookup(ix, r->q[i].hash,
                                                        r->q[i].w, &o, m,
                                                        MAXMATCH, &ls);
                    np += ls.probes;
                    ns += ls.scanned;
                }
                e = now() - t1;
                el = rep == 0 || e < el ? e : el;
            }
            rec = measure(r, cnt, (int) mode);
            pred = recall_at(r, rank, o.probes, (int) mode, NULL, 0);
            if (rec + 1e-9 < pred || rec > pred + 1e-9) {
                fprintf(stderr, "bench: warning: PSM recall %.4f differs "
                        "from the rank model's %.4f\n", rec, pred);
            }
            snprintf(name, sizeof(name), "PSM_%c%s", mode ? 'A' : 'F',
                     fk ? "(k-table)" : "");
            b->pq_probes = np / ((double) b->reps * (double) r->nq);
            b->pq_scanned = ns / ((double) b->reps * (double) r->nq);
            report(b, name, r->n, r->nq / el, rec,
                   (double) st.fingerprint_bytes / r->n,
                   (double) st.document_bytes / r->n, o.probes, st.t,
                   build, r->nq);
            b->pq_probes = b->pq_scanned = -1;
        }
    }
    if (b->learn_log2n == log2n && !b->weighted) {
        /* Train at the larger k (PSM_F's): more confirmed pairs. */
        learn_experiment(b, r, ix, st.t, rank,
                         kk[0] > kk[1] ? kk[0] : kk[1]);
    }
    free(mem);
    free(m);
    free(cnt);
    free(rank);
    return 0;
}

static int
run_brute(bench_t *b, run_t *r)
{
    sh_brute_t  br;
    sh_match_t *m = malloc(MAXMATCH * sizeof(sh_match_t));
    size_t      nq = r->nq < 2000 ? r->nq : 2000, i;
    unsigned    mode;

    if (m == NULL || sh_brute_init(&br, r->n) != 0) {
        free(m);
        return -1;
    }
    for (i = 0; i < r->n; i++) {
        sh_brute_add(&br, r->st[i], (uint32_t) i);
    }
    for (mode = 0; mode < 2; mode++) {
        double   t1 = now(), el;
        size_t   agree = 0;

        for (i = 0; i < nq; i++) {
            sh_match_mode_t md = mode ? SH_MATCH_ALL : SH_MATCH_FIRST;
            size_t n;

            if (b->weighted) {
                sh_matcher_t q;

                sh_matcher_init(&q, &b->wm, r->q[i].hash, r->q[i].w);
                n = sh_brute_match(&br, &q, md, m, MAXMATCH);
            } else {
                n = sh_brute_lookup(&br, r->q[i].hash, b->h, md, m,
                                    MAXMATCH);
            }

            /* Brute force checks the truth (BPHS, or the join) on the
             * way. */
            agree += mode ? n == r->toff[i + 1] - r->toff[i]
                          : (n > 0) == (r->toff[i + 1] > r->toff[i]);
        }
        el = now() - t1;
        if (agree != nq) {
            fprintf(stderr, "bench: warning: brute force and the truth "
                    "disagree on %zu queries\n", nq - agree);
        }
        report(b, mode ? "BRUTE_A" : "BRUTE_F", r->n, nq / el, 1.0, 8, 4, 0,
               0, 0, nq);
    }
    sh_brute_free(&br);
    free(m);
    return 0;
}

/* ---- The weighted rule's truth: brute force ---- */

typedef struct {
    uint32_t q, ref;
} qref_t;

typedef struct {
    qref_t *p;
    size_t  n, cap;
    int     oom;
} qrefs_t;

static void
join_hit(void *arg, size_t query, const sh_match_t *m)
{
    qrefs_t *v = arg;

    if (v->n == v->cap) {
        size_t nc = v->cap ? 2 * v->cap : 65536;
        void  *np = realloc(v->p, nc * sizeof(qref_t));

        if (np == NULL) {
            v->oom = 1;
            return;
        }
        v->p = np;
        v->cap = nc;
    }
    v->p[v->n].q = (uint32_t) query;
    v->p[v->n].ref = m->ref;
    v->n++;
}

static int
cmp_qref(const void *a, const void *b)
{
    const qref_t *x = a, *y = b;

    if (x->q != y->q) {
        return x->q < y->q ? -1 : 1;
    }
    return (x->ref > y->ref) - (x->ref < y->ref);
}

/*
 * Keep the first --truth-queries queries and find every match of each
 * under the weighted rule by comparing it with every stored fingerprint;
 * the truth arrays of `r` are rebuilt for them.
 */
static int
weighted_truth(bench_t *b, run_t *r)
{
    sh_brute_t    br;
    sh_matcher_t *q;
    qrefs_t       v = { 0 };
    size_t        i, j;
    double        t0 = now();

    if (r->nq > b->truth_queries) {
        r->nq = b->truth_queries;
    }
    q = malloc((r->nq + 1) * sizeof(sh_matcher_t));
    if (q == NULL || sh_brute_init(&br, r->n) != 0) {
        free(q);
        cli_error("bench: out of memory for the brute-force truth");
        return -1;
    }
    for (i = 0; i < r->n; i++) {
        sh_brute_add(&br, r->st[i], (uint32_t) i);
    }
    for (i = 0; i < r->nq; i++) {
        sh_matcher_init(&q[i], &b->wm, r->q[i].hash, r->q[i].w);
    }
    sh_brute_join(&br, q, r->nq, join_hit, &v);
    sh_brute_free(&br);
    free(q);
    if (v.oom) {
        free(v.p);
        cli_error("bench: out of memory for the brute-force truth");
        return -1;
    }
    if (v.n > 0) {
        qsort(v.p, v.n, sizeof(qref_t), cmp_qref);
    }
    free(r->toff);
    free(r->tref);
    r->toff = malloc((r->nq + 1) * sizeof(uint32_t));
    r->tref = malloc((v.n + 1) * sizeof(uint32_t));
    if (r->toff == NULL || r->tref == NULL) {
        free(v.p);
        cli_error("out of memory");
        return -1;
    }
    r->npairs = v.n;
    r->nqmatch = 0;
    for (i = 0, j = 0; i < r->nq; i++) {
        r->toff[i] = (uint32_t) j;
        r->nqmatch += j < v.n && v.p[j].q == i;
        while (j < v.n && v.p[j].q == i) {
            r->tref[j] = v.p[j].ref;
            j++;
        }
    }
    r->toff[r->nq] = (uint32_t) j;
    free(v.p);
    fprintf(stderr, "bench: weighted truth (brute force, %zu queries x %zu "
            "stored) in %.0f s: %zu pairs, %zu queries with a match\n",
            r->nq, r->n, now() - t0, r->npairs, r->nqmatch);
    return 0;
}

/* ---- Options ---- */

static int
set_corpus(void *target, const char *name, const char *value)
{
    bench_t *b = target;

    if (b->ncorpus == sizeof(b->corpus) / sizeof(b->corpus[0])) {
        cli_error("%s: at most %zu", name,
                  sizeof(b->corpus) / sizeof(b->corpus[0]));
        return -1;
    }
    b->corpus[b->ncorpus++] = value;
    return 0;
}

static const char *
show_corpus(const void *target, char *buf, size_t len)
{
    return "/usr/share/doc/rust-doc/html";
}

static int
set_fresh(void *target, const char *name, const char *value)
{
    *(const char **) target = strcmp(value, "none") == 0 ? NULL : value;
    return 0;
}

static int
set_volatility(void *target, const char *name, const char *value)
{
    sh_volatility_t **vol = target;
    char              err[512];

    sh_volatility_free(*vol);
    *vol = sh_volatility_load(value, err, sizeof(err));
    if (*vol == NULL) {
        cli_error("%s", err);
        return -1;
    }
    return 0;
}

static const char *
show_volatility(const void *target, char *buf, size_t len)
{
    return "the built-in one";
}

/* --n: log2 sizes from 10 to 30, e.g. 20,24. */
static int
set_sizes(void *target, const char *name, const char *value)
{
    bench_t *b = target;
    char    *copy = strdup(value), *tok, *save = NULL, *end;
    long     v;

    b->nn = 0;
    for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && b->nn < 16;
         tok = strtok_r(NULL, ",", &save)) {
        v = strtol(tok, &end, 10);
        if (*end != '\0' || v < 10 || v > 30) {
            b->nn = 0;
            break;
        }
        b->log2n[b->nn++] = (unsigned) v;
    }
    free(copy);
    if (b->nn == 0) {
        cli_error("%s: expected log2 sizes in 10..30, e.g. 20,24", name);
        return -1;
    }
    return 0;
}

static const char *
show_sizes(const void *target, char *buf, size_t len)
{
    const bench_t *b = target;
    unsigned       i;
    size_t         at = 0;

    buf[0] = '\0';
    for (i = 0; i < b->nn && at < len; i++) {
        at += (size_t) snprintf(buf + at, len - at, "%s%u", i ? "," : "",
                                b->log2n[i]);
    }
    return buf;
}

static int
set_methods(void *target, const char *name, const char *value)
{
    bench_t *b = target;

    b->m_psm = strstr(value, "psm") != NULL;
    b->m_bphs[0] = strstr(value, "bphs4") != NULL;
    b->m_bphs[1] = strstr(value, "bphs10") != NULL;
    b->m_bphs[2] = strstr(value, "bphs20") != NULL;
    b->m_brute = strstr(value, "brute") != NULL;
    return 0;
}

static int
set_rules(void *target, const char *name, const char *value)
{
    int *rules = target;

    *rules = strcmp(value, "hamming") == 0 ? 1
             : strcmp(value, "weighted") == 0 ? 2
             : strcmp(value, "both") == 0 ? 3 : 0;
    if (*rules == 0) {
        cli_error("%s: expected hamming, weighted or both", name);
        return -1;
    }
    return 0;
}

static int
set_threshold(void *target, const char *name, const char *value)
{
    double t;

    if (cli_set_nats(&t, name, value) != 0) {
        return -1;
    }
    *(uint32_t *) target = sh_score_from_nats(t);
    return 0;
}

static const char *
show_threshold(const void *target, char *buf, size_t len)
{
    snprintf(buf, len, "%g", sh_score_nats(*(const uint32_t *) target));
    return buf;
}

static void
bench_defaults(bench_t *b)
{
    memset(b, 0, sizeof(*b));
    b->fresh = "/usr/share/doc/postgresql-doc-15/html";
    b->log2n[0] = 20;
    b->log2n[1] = 22;
    b->log2n[2] = 24;
    b->nn = 3;
    b->h = SH_H_DEFAULT;
    b->rules = 1;
    sh_match_opts_init(&b->wm);
    sh_match_opts_rule(&b->wm, SH_RULE_WEIGHTED);
    b->truth_queries = 20000;
    b->pq_probes = b->pq_scanned = -1;
    b->recall = 0.95f;
    b->queries = 100000;
    b->edits = 4000;
    b->brute_max = 20;
    b->reps = 5;
    b->m_psm = b->m_bphs[0] = b->m_bphs[1] = b->m_bphs[2] = b->m_brute = 1;
    b->seed = 0x6a09e667f3bcc909ull;
}

/* The gnuplot data files of --dat: 0, or -1 (said why). */
static int
open_dat(bench_t *b)
{
    char p[4096];

    snprintf(p, sizeof(p), "%s-qps.dat", b->dat);
    b->dat_qps = fopen(p, "w");
    snprintf(p, sizeof(p), "%s-recall.dat", b->dat);
    b->dat_recall = fopen(p, "w");
    if (b->dat_qps == NULL || b->dat_recall == NULL) {
        cli_error("bench: cannot write %s-*.dat", b->dat);
        return -1;
    }
    fprintf(b->dat_qps, "# log2n\tmethod\tqps\trecall\tbytes_per_entry\n");
    fprintf(b->dat_recall, "# log2n\tt\tthen F and A recall at k = 5, "
            "10, 20, 50\n");
    return 0;
}

/* Every method at one size, under each rule asked for. */
static int
bench_size(bench_t *b, unsigned log2n)
{
    static const unsigned tb[3] = { 4, 10, 20 };
    run_t                 r;
    unsigned              j;
    int                   rc = -1;

    if (make_run(b, log2n, &r) != 0) {
        return -1;
    }
    fprintf(stderr, "bench: n = 2^%u: %zu queries (%zu real x %zu)\n",
            log2n, r.nq, b->nrq, r.nq / (b->nrq ? b->nrq : 1));
    if (b->rules == 3 && r.nq > b->truth_queries) {
        r.nq = b->truth_queries;        /* both rules, the same queries */
    }
    if (b->rules & 1) {
        b->weighted = 0;
        /* BPHS with 10 tables first: it is the truth for the others. */
        if (run_bphs(b, &r, 10, 1) != 0) {
            goto done;
        }
        fprintf(stderr, "bench: %zu true pairs, %zu queries with a "
                "match\n", r.npairs, r.nqmatch);
        for (j = 0; j < 3; j++) {
            if (b->m_bphs[j] && tb[j] != 10
                && run_bphs(b, &r, tb[j], 0) != 0) {
                goto done;
            }
        }
        if (b->m_psm && run_psm(b, &r, log2n) != 0) {
            goto done;
        }
        if (b->m_brute && log2n <= b->brute_max) {
            run_brute(b, &r);
        }
    }
    if (b->rules & 2) {
        /* After the hamming pass: the truth keeps fewer queries. */
        b->weighted = 1;
        if (weighted_truth(b, &r) != 0
            || (b->m_psm && run_psm(b, &r, log2n) != 0))
        {
            goto done;
        }
        if (b->m_brute && log2n <= b->brute_max) {
            run_brute(b, &r);
        }
    }
    rc = 0;

done:
    free_run(&r);
    return rc;
}

int
cmd_bench(int argc, char **argv)
{
    static bench_t   b;
    cli_extract_t    x;
    sh_config_t     *cfg = NULL;
    sh_volatility_t *vol = NULL;
    unsigned         i;
    int              a, rc = 1;
    cli_opt_t        opts[] = {
        CLI_OPT_CALL("--corpus", "DIR", &b, set_corpus, show_corpus,
                     "pages to store and query (repeatable)"),
        CLI_OPT_CALL("--fresh", "DIR", &b.fresh, set_fresh, NULL,
                     "pages with no duplicate, queried only (none:\n"
                     "no such pages)"),
        CLI_OPT_STRING("--cache", "FILE", &b.cache,
                       "keep fingerprints in FILE (and FILE.edits)"),
        CLI_OPT_CALL("--n", "LIST", &b, set_sizes, show_sizes,
                     "log2 of the stored counts"),
        CLI_OPT_CALL("--methods", "LIST", &b, set_methods, NULL,
                     "psm,bphs4,bphs10,bphs20,brute (default all)"),
        CLI_OPT_CALL("--match", "RULE", &b.rules, set_rules, NULL,
                     "hamming, weighted or both (default hamming)"),
        CLI_OPT_UINT("--h", "N", &b.h, 1, 3, "hamming radius, 1..3"),
        CLI_OPT_CALL("--threshold", "T", &b.wm.threshold, set_threshold,
                     show_threshold, "weighted: T in nats"),
        CLI_OPT_UINT("--cap", "N", &b.wm.h, 1, SH_MATCH_HMAX,
                     "weighted: the cap on H"),
        CLI_OPT_UINT("--truth-queries", "N", &b.truth_queries, 1, 10000000,
                     "weighted: queries compared by brute force\n"
                     "with every stored fingerprint (with --match\n"
                     "both, the queries of both rules)"),
        CLI_OPT_CALL("--recall", "R", &b.recall, cli_set_recall,
                     cli_show_float, "target relative recall for PSM's k"),
        CLI_OPT_UINT("--k", "N", &b.k_force, 1, SH_PROBES_MAX,
                     "fixed k instead of the target recall"),
        CLI_OPT_UINT("--queries", "N", &b.queries, 1, 10000000,
                     "queries per method, by relocation"),
        CLI_OPT_UINT("--edits", "N", &b.edits, 0, 1000000,
                     "edited pages among the queries"),
        CLI_OPT_UINT("--brute-max", "L", &b.brute_max, 0, 30,
                     "brute force only for n <= 2^L"),
        CLI_OPT_UINT("--learn", "L", &b.learn_log2n, 10, 30,
                     "online-learner experiment at n = 2^L"),
        CLI_OPT_CALL("--volatility", "F", &vol, set_volatility,
                     show_volatility, "volatility table"),
        CLI_OPT_UINT("--t", "N", &b.t, 1, 40,
                     "PSM header bits (default: about log2 n)"),
        CLI_OPT_UINT("--reps", "N", &b.reps, 1, 100,
                     "timed passes over the queries, fastest kept"),
        CLI_OPT_FLAG("--json", &b.json,
                     "one JSON object per method and n"),
        CLI_OPT_STRING("--dat", "PREFIX", &b.dat,
                       "gnuplot data: PREFIX-qps.dat, PREFIX-recall.dat"),
        CLI_OPT_END
    };
    cli_cmd_t        cmd = {
        .name = "bench", .synopsis = synopsis, .opts = opts, .extract = &x
    };

    bench_defaults(&b);
    cli_extract_init(&x);
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        sh_volatility_free(vol);
        return 2;
    case CLI_PARSED:
        break;
    }
    if (a < argc) {
        cli_error("bench: unexpected argument %s (see --help)", argv[a]);
        sh_volatility_free(vol);
        return 2;
    }
    if (b.ncorpus == 0) {
        b.corpus[b.ncorpus++] = "/usr/share/doc/rust-doc/html";
    }
    b.vol = vol != NULL ? vol : sh_volatility_default();
    b.wm.vol = b.vol;
    cfg = cli_extract_config(&x);
    if (cfg == NULL || (b.dat != NULL && open_dat(&b) != 0)
        || build_workload(&b, cfg) != 0)
    {
        goto done;
    }
    if (!b.json) {
        printf("%-16s %-8s %-5s %12s %8s %8s %8s %5s %3s %8s\n", "method",
               "rule", "n", "queries/s", "recall", "B/entry", "docB/e", "k",
               "t", "build_s");
    }
    for (i = 0; i < b.nn; i++) {
        if (bench_size(&b, b.log2n[i]) != 0) {
            goto done;
        }
    }
    rc = 0;

done:
    if (b.dat_qps) {
        fclose(b.dat_qps);
    }
    if (b.dat_recall) {
        fclose(b.dat_recall);
    }
    pageset_free(&b.corp);
    pageset_free(&b.fresh_set);
    pageset_free(&b.edit_set);
    free(b.real);
    free(b.rq);
    free(b.near);
    sh_volatility_free(vol);
    sh_config_free(cfg);
    return rc;
}
