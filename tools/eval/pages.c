/*
 * pages.c -- fingerprint every page under one configuration, on all the
 * threads asked for, streaming each file through the extractor in 64 KB
 * pieces as the proxy would; optionally collect the ground-truth shingle
 * sets from the token hook instead.  Results are cached in the build
 * directory: most runs change one configuration, not all of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "eval.h"
#include "sh_match.h"
#include "sh_block.h"
#include "sh_file.h"

#define EV_CHUNK (64 * 1024)

/* Ground-truth collector: the last EV_SHINGLE_W token hashes, and the
 * hashes of every complete window seen so far. */
typedef struct {
    uint64_t  ring[EV_SHINGLE_W];
    uint64_t  ntok;
    uint64_t *v;
    size_t    n, cap;
} truth_t;

typedef struct {
    ev_run_t     *run;
    ev_config_t  *c;
    int           truth;
    ev_fp_t      *fp;           /* where results go, unless truth */
    atomic_size_t next;
    atomic_int    failed;
    char          err[1024];
} job_t;

static void
truth_push(truth_t *t, uint64_t h)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->v = ev_xrealloc(t->v, t->cap * sizeof(*t->v));
    }
    t->v[t->n++] = h;
}

/* Hash the window in document order, oldest token first, so that a
 * shingle is the same 64-bit value wherever it occurs. */
static uint64_t
truth_window(const truth_t *t, unsigned w)
{
    uint64_t win[EV_SHINGLE_W];
    unsigned k;

    for (k = 0; k < w; k++) {
        win[k] = t->ring[(t->ntok - w + k) % EV_SHINGLE_W];
    }
    return XXH3_64bits(win, w * sizeof(win[0]));
}

static void
truth_token(void *arg, const char *tok, size_t len)
{
    truth_t *t = arg;

    t->ring[t->ntok % EV_SHINGLE_W] = XXH3_64bits(tok, len);
    t->ntok++;
    if (t->ntok >= EV_SHINGLE_W) {
        truth_push(t, truth_window(t, EV_SHINGLE_W));
    }
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

    return (x > y) - (x < y);
}

static void
truth_finish(truth_t *t, ev_page_t *pg)
{
    size_t i, j;

    /* A page shorter than one window still has a text; it is one shingle
     * (such pages are left out of the pairs anyway, see EV_MIN_SHINGLES). */
    if (t->ntok > 0 && t->ntok < EV_SHINGLE_W) {
        truth_push(t, truth_window(t, (unsigned) t->ntok));
    }
    qsort(t->v, t->n, sizeof(*t->v), cmp_u64);
    for (i = j = 0; i < t->n; i++) {
        if (j == 0 || t->v[i] != t->v[j - 1]) {
            t->v[j++] = t->v[i];
        }
    }
    free(pg->shingles);
    pg->shingles = ev_xmalloc(j * sizeof(uint64_t));
    memcpy(pg->shingles, t->v, j * sizeof(uint64_t));
    pg->nshingles = (uint32_t) j;
    pg->ntokens = t->ntok > UINT32_MAX ? UINT32_MAX : (uint32_t) t->ntok;
}

static void
job_fail(job_t *job, const char *fmt, const char *a, const char *b)
{
    int expect = 0;

    if (atomic_compare_exchange_strong(&job->failed, &expect, 1)) {
        snprintf(job->err, sizeof(job->err), fmt, a, b);
    }
}

static int
one_page(job_t *job, sh_config_t *cfg, size_t i, char *buf, truth_t *t)
{
    ev_page_t *pg = &job->run->pages[i];
    sh_doc_t *doc;
    sh_result_t res;
    uint64_t size = 0;
    ssize_t n;
    int fd;

    fd = open(pg->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        job_fail(job, "%s: %s", pg->path, strerror(errno));
        return -1;
    }
    doc = sh_doc_new(cfg, NULL);
    if (doc == NULL) {
        close(fd);
        job_fail(job, "%s: %s", pg->path, "out of memory");
        return -1;
    }
    if (t) {
        t->ntok = 0;
        t->n = 0;
        sh_doc_set_token_hook(doc, truth_token, t);
    }
    while ((n = read(fd, buf, EV_CHUNK)) > 0) {
        size += (uint64_t) n;
        if (sh_doc_feed(doc, buf, (size_t) n) != 0) {
            break;
        }
    }
    if (n < 0) {
        job_fail(job, "%s: %s", pg->path, strerror(errno));
    }
    close(fd);
    memset(&res, 0, sizeof(res));
    if (n != 0 || sh_doc_finish(doc, &res) != 0) {
        sh_doc_free(doc);
        if (n == 0) {
            job_fail(job, "%s: %s", pg->path, "extraction failed");
        }
        return -1;
    }
    sh_doc_free(doc);

    pg->size = size;
    if (t) {
        truth_finish(t, pg);
    } else {
        job->fp[i].status = (uint32_t) res.status;
        job->fp[i].hash = res.status == SH_STATUS_OK ? res.hash : 0;
        job->fp[i].nfeatures = res.nfeatures;
        job->fp[i].short_hub = (uint32_t) sh_result_short_hub(&res);
        memcpy(job->fp[i].w, res.weights, sizeof(job->fp[i].w));
        job->fp[i].sk = res.sketches;
    }
    return 0;
}

static void *
worker(void *arg)
{
    job_t *job = arg;
    char err[256];
    sh_options_t opts;
    sh_config_t *cfg;
    char *buf;
    truth_t t, *tp = NULL;
    size_t i;

    /* A configuration is single-threaded (stemmer state, stem cache), so
     * every worker compiles its own.  The truth's text is the whole page,
     * its blocks those of the HTML alone: no content weighting. */
    opts = job->c->opts;
    if (job->truth) {
        opts.content = SH_CONTENT_OFF;
    }
    cfg = sh_config_new(&opts, err, sizeof(err));
    if (cfg == NULL) {
        job_fail(job, "config %s: %s", job->c->name, err);
        return NULL;
    }
    buf = ev_xmalloc(EV_CHUNK);
    if (job->truth) {
        memset(&t, 0, sizeof(t));
        tp = &t;
    }
    while (!atomic_load(&job->failed)) {
        i = atomic_fetch_add(&job->next, 1);
        if (i >= job->run->npages || one_page(job, cfg, i, buf, tp) != 0) {
            break;
        }
    }
    if (tp) {
        free(t.v);
    }
    free(buf);
    sh_config_free(cfg);
    return NULL;
}

static uint64_t
pages_digest(const ev_run_t *run)
{
    XXH3_state_t *st = XXH3_createState();
    uint64_t d;
    size_t i;

    XXH3_64bits_reset(st);
    for (i = 0; i < run->npages; i++) {
        XXH3_64bits_update(st, run->pages[i].path,
                           strlen(run->pages[i].path) + 1);
    }
    d = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return d;
}

typedef struct {
    char     magic[8];
    uint64_t npages;
    uint64_t digest;
} cache_hdr_t;

static int
cache_path(const ev_run_t *run, const char *kind, uint64_t key,
           char *path, size_t pathlen)
{
    if (run->cache_dir == NULL) {
        return -1;
    }
    snprintf(path, pathlen, "%s/%s-%016llx.bin", run->cache_dir, kind,
             (unsigned long long) key);
    return 0;
}

static FILE *
cache_open(const ev_run_t *run, const char *kind, uint64_t key,
           char *path, size_t pathlen)
{
    if (cache_path(run, kind, key, path, pathlen) != 0) {
        return NULL;
    }
    return fopen(path, "rb");
}

static int
hdr_ok(FILE *f, const ev_run_t *run, const char *magic)
{
    cache_hdr_t h;

    return fread(&h, sizeof(h), 1, f) == 1
           && memcmp(h.magic, magic, 8) == 0
           && h.npages == run->npages && h.digest == pages_digest(run);
}

/* A cache entry being written, through the project's one atomic file
 * writer (sh_file.h): an interrupted run never leaves a truncated entry
 * behind.  A failed write drops the entry. */
typedef struct {
    sh_file_writer_t *w;
    int               failed;
} cache_out_t;

static void
cache_put(cache_out_t *o, const void *p, size_t n)
{
    if (!o->failed && sh_file_writer_write(o->w, p, n, NULL, 0) != 0) {
        o->failed = 1;
    }
}

static void
hdr_write(cache_out_t *o, const ev_run_t *run, const char *magic)
{
    cache_hdr_t h;

    memset(&h, 0, sizeof(h));
    memcpy(h.magic, magic, 8);
    h.npages = run->npages;
    h.digest = pages_digest(run);
    cache_put(o, &h, sizeof(h));
}

static void
cache_commit(cache_out_t *o)
{
    if (o->failed) {
        sh_file_writer_abort(o->w);
    } else {
        (void) sh_file_writer_commit(o->w, NULL, 0);
    }
}

static int
cache_create(const ev_run_t *run, const char *kind, uint64_t key,
             cache_out_t *o)
{
    char path[4096];

    o->failed = 0;
    if (cache_path(run, kind, key, path, sizeof(path)) != 0) {
        return -1;
    }
    o->w = sh_file_writer_open(path, 0644, NULL, NULL, 0);
    return o->w != NULL ? 0 : -1;
}

static void
run_job(ev_run_t *run, ev_config_t *c, int truth, ev_fp_t *fp)
{
    pthread_t tid[64];
    job_t job;
    unsigned n = run->threads, k;

    memset(&job, 0, sizeof(job));
    job.run = run;
    job.c = c;
    job.truth = truth;
    job.fp = fp;
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, 0);
    if (n < 1) {
        n = 1;
    }
    if (n > 64) {
        n = 64;
    }
    for (k = 0; k < n; k++) {
        if (pthread_create(&tid[k], NULL, worker, &job) != 0) {
            ev_die("cannot start thread %u", k);
        }
    }
    for (k = 0; k < n; k++) {
        pthread_join(tid[k], NULL);
    }
    if (atomic_load(&job.failed)) {
        ev_die("%s", job.err);
    }
}

void
ev_truth(ev_run_t *run, ev_config_t *c)
{
    ev_config_seed(c, 0);
    run_job(run, c, 1, NULL);
}

void
ev_fingerprint(ev_run_t *run, ev_config_t *c, unsigned seed)
{
    char path[4096];
    uint64_t key;
    ev_fp_t *fp;
    double t0, secs = 0.0;
    FILE *f;
    cache_out_t out;

    ev_config_seed(c, seed);
    if (c->idf_corpus) {
        ev_idf_prepare(run, c);
    }
    key = ev_config_key(c, run->identity);
    fp = c->fp[seed] = ev_xcalloc(run->npages, sizeof(*fp));
    f = cache_open(run, "fp", key, path, sizeof(path));
    if (f != NULL) {
        int ok = hdr_ok(f, run, "SHEVFP04")
                 && fread(fp, sizeof(*fp), run->npages, f) == run->npages
                 && fread(&secs, sizeof(secs), 1, f) == 1;

        fclose(f);
        if (ok) {
            c->cached++;
            c->seconds += secs;
            return;
        }
    }
    t0 = ev_now();
    run_job(run, c, 0, fp);
    secs = ev_now() - t0;
    c->seconds += secs;

    if (cache_create(run, "fp", key, &out) == 0) {
        hdr_write(&out, run, "SHEVFP04");
        cache_put(&out, fp, sizeof(*fp) * run->npages);
        cache_put(&out, &secs, sizeof(secs));
        cache_commit(&out);
    }
}

int
ev_truth_load(ev_run_t *run, uint64_t key)
{
    char path[4096];
    FILE *f = cache_open(run, "truth", key, path, sizeof(path));
    size_t i;
    int ok;

    if (f == NULL) {
        return 0;
    }
    ok = hdr_ok(f, run, "SHEVGT01");
    for (i = 0; ok && i < run->npages; i++) {
        ev_page_t *pg = &run->pages[i];
        uint32_t v[2];

        ok = fread(v, sizeof(v), 1, f) == 1
             && fread(&pg->size, sizeof(pg->size), 1, f) == 1;
        if (ok) {
            pg->nshingles = v[0];
            pg->ntokens = v[1];
            pg->shingles = ev_xmalloc((size_t) v[0] * sizeof(uint64_t));
            ok = fread(pg->shingles, sizeof(uint64_t), v[0], f) == v[0];
        }
    }
    fclose(f);
    return ok;
}

void
ev_truth_save(const ev_run_t *run, uint64_t key)
{
    cache_out_t out;
    size_t      i;

    if (cache_create(run, "truth", key, &out) != 0) {
        return;
    }
    hdr_write(&out, run, "SHEVGT01");
    for (i = 0; i < run->npages; i++) {
        const ev_page_t *pg = &run->pages[i];
        uint32_t v[2] = { pg->nshingles, pg->ntokens };

        cache_put(&out, v, sizeof(v));
        cache_put(&out, &pg->size, sizeof(pg->size));
        cache_put(&out, pg->shingles, sizeof(uint64_t) * pg->nshingles);
    }
    cache_commit(&out);
}

void
ev_truth_of(sh_config_t *cfg, const char *html, size_t len, ev_page_t *pg)
{
    sh_doc_t *doc = sh_doc_new(cfg, "utf-8");
    sh_result_t res;
    truth_t t;

    if (doc == NULL) {
        ev_die("out of memory");
    }
    memset(&t, 0, sizeof(t));
    sh_doc_set_token_hook(doc, truth_token, &t);
    if (sh_doc_feed(doc, html, len) != 0 || sh_doc_finish(doc, &res) != 0) {
        ev_die("extraction failed");
    }
    sh_doc_free(doc);
    truth_finish(&t, pg);
    free(t.v);
}
