/*
 * cmd_store_bench.c -- `simhash store-bench`: the compact document store
 * (sh_store.h) at the sizes a big crawl needs, side by side in one run.
 *
 * Workload.  The fingerprints and weights are real (the pages of --list,
 * fingerprinted once and cached), relocated as `simhash bench` does: copy
 * c of page p stores p's fingerprint XOR a random mask of its own, so every
 * copy is the same problem at an unrelated place of the table.  Keys are
 * real too: each page's path under a host of its copy, "https://hC.example
 * /PATH", a URL of realistic length.
 *
 * Per size: the shared memory it takes (an anonymous shared mapping, as an
 * nginx zone is), the time to fill it, then queries as a request makes
 * them: the key of a page (half of them stored, half new) and a PSM lookup
 * of a near copy of a stored page (2 bits flipped) under its own weights;
 * their latency one by one, p50 and p99, and their rate.  Then a sliced
 * copy to a snapshot file (sh_store_file.h, sh_image.h) with changes
 * between the steps as a busy zone has: the longest hold of the lock; and
 * a fresh zone filled back from the file: start-up time and GB/s.
 *
 * The store is keyed and seeded as a zone of the default options is, so
 * each file is a snapshot nginx loads (--keep keeps it, and the line it
 * prints says the simhash_zone that takes it in place): bench/wrk.sh
 * measures the module on a zone of 2^27 documents that way.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pageset.h"
#include "sh_config.h"
#include "sh_image.h"
#include "sh_snapshot.h"
#include "sh_store.h"
#include "sh_store_file.h"

#define STEP_BUF        (1u << 20)      /* bytes a hold of the lock copies */
#define OPS_PER_STEP    200             /* changes between two holds */

typedef struct {
    pageset_t     pages;
    const char  **path;         /* the URL path of each page */
    unsigned      log2n[8];
    unsigned      nn;
    unsigned      queries;
    uint64_t      text_per_doc;
    uint64_t      text_max;
    const char   *image_dir;
    int           keep;         /* keep the snapshot files */
    unsigned char secret[SH_STORE_SECRET_LEN];
    uint64_t      seed_digest;  /* the default options': a zone's */
    uint32_t      version;
} sb_t;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

/* Document i: page i % R, copy i / R. */
static size_t
key_of(const sb_t *b, uint64_t i, char *out, size_t size)
{
    size_t p = (size_t) (i % b->pages.n);

    return (size_t) snprintf(out, size, "https://h%llu.example%s",
                             (unsigned long long) (i / b->pages.n),
                             b->path[p]);
}

static uint64_t
fp_of(const sb_t *b, uint64_t i)
{
    uint64_t c = i / b->pages.n;

    /* copy 0 too: no stored document is a page itself, so the pages
     * bench/wrk.sh serves are new to a zone this filled */
    return b->pages.fp[i % b->pages.n].hash ^ cli_mix64(c + 1);
}

/*
 * A zone's memory: an anonymous shared mapping, as nginx's, written once
 * all over before it is timed.  On this machine (a virtual machine) the
 * first write of a page costs far more than any later one (a 1 GB memset:
 * 2 to 5 s the first time, 0.05 s the next): that is the machine's price
 * of fresh memory, paid by any program, reported apart from the store's.
 */
static void *
shared(size_t size, double *touch)
{
    double t = now();
    void  *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    /* 2 MB pages where the system allows them for shared memory, as the
     * module asks for its zones (ngx_http_simhash_zone_init) */
    (void) madvise(p, size, MADV_HUGEPAGE);
#endif
    memset(p, 0, size);
    *touch = now() - t;
    return p;
}

/* A store formatted as a zone of the default options is (module/
 * ngx_http_simhash_zone.c): their key secret, seed and extraction. */
static sh_store_t *
format(const sb_t *b, void *region, size_t size, uint64_t text, char *err,
       size_t errlen)
{
    sh_store_t *st = sh_store_init(region, size, text, b->secret,
                                   b->seed_digest, err, errlen);

    if (st != NULL) {
        sh_index_set_version(sh_store_index(st), b->version);
    }
    return st;
}

/*
 * The simhash_zone that loads an image of this store in place (capacity
 * at least this one's, the ring of the same size): nginx's slab allocator
 * keeps 1/32 of a zone and 16 KB for itself (ngx_http_simhash_zone_avail),
 * 1 MB more leaves room for its rounding.
 */
static void
print_zone_line(uint64_t size, uint64_t text, const char *path)
{
    uint64_t mb = 1u << 20, zone = (size + 16 * 1024) / 31 * 32 + mb;

    printf("  nginx takes it in place with: simhash_zone zone=NAME:%llum "
           "keys=%llum file=%s\n", (unsigned long long) ((zone + mb - 1) / mb),
           (unsigned long long) (text / mb), path);
}

/* Fill the store with n documents. */
static int
fill(sb_t *b, sh_store_t *st, uint64_t n, sh_store_doc_t *d)
{
    sh_store_stats_t s;
    char             key[4096];
    size_t           len;
    uint64_t         i;
    double           t0 = now(), t1;

    memset(d, 0, sizeof(*d));
    for (i = 0; i < n; i++) {
        len = key_of(b, i, key, sizeof(key));
        d->digest = cli_mix64(i);
        d->time = (uint32_t) i;
        d->sketches = b->pages.fp[i % b->pages.n].sk;
        if (sh_store_put(st, key, len, sh_store_keyhash(st, key, len),
                         fp_of(b, i), d, NULL) == SH_NOREF)
        {
            fprintf(stderr, "store-bench: put failed at %llu\n",
                    (unsigned long long) i);
            return -1;
        }
    }
    t1 = now();
    sh_store_stats(st, &s);
    printf("  filled: %llu documents in %.1f s (%.2f M/s); key text kept "
           "for %.1f%% of them, %.1f bytes of ring each\n",
           (unsigned long long) s.entries, t1 - t0, n / (t1 - t0) / 1e6,
           100.0 * s.texts / s.entries,
           s.texts ? (double) s.text_used / s.texts : 0.0);
    return 0;
}

/* Queries, one at a time: a key and a PSM lookup each. */
static int
query(sb_t *b, sh_store_t *st, uint64_t n, unsigned log2n)
{
    sh_lookup_opts_t o;
    sh_match_t       m[4];
    char             key[4096];
    size_t           len;
    double           t0, *lat, sum = 0;
    unsigned         q, hits = 0, found = 0;

    lat = malloc(b->queries * sizeof(double));
    if (lat == NULL) {
        return -1;
    }
    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_CLOSEST;
    for (q = 0; q < b->queries; q++) {
        uint64_t r = cli_mix64(q * 7919ull + log2n), doc = r % n;
        uint64_t fp = fp_of(b, doc) ^ (1ull << (r >> 40 & 63))
                      ^ (1ull << (r >> 50 & 63));
        const float *w = b->pages.fp[doc % b->pages.n].w;

        len = (q & 1) ? key_of(b, doc, key, sizeof(key))
                      : key_of(b, doc + n, key, sizeof(key));  /* new */
        t0 = now();
        hits += sh_store_find(st, key, len) != SH_NOREF;
        found += sh_index_lookup(sh_store_index(st), fp, w, &o, m, 4, NULL)
                 > 0;
        lat[q] = now() - t0;
        sum += lat[q];
    }
    qsort(lat, b->queries, sizeof(double), cmp_double);
    printf("  queries (key + PSM lookup): %.0f k/s; latency p50 %.2f us, "
           "p99 %.2f us; keys found %u of %u (half are new), near copies "
           "found %.1f%%\n", b->queries / sum / 1e3,
           lat[b->queries / 2] * 1e6, lat[b->queries * 99 / 100] * 1e6,
           hits, b->queries, 100.0 * found / b->queries);
    free(lat);
    return 0;
}

/* The sliced copy to a file, the zone changing between holds. */
static int
save(sb_t *b, sh_store_t *st, sh_store_doc_t *d, uint64_t n,
     const char *path, unsigned char *buf)
{
    sh_image_saver_t  sv;
    sh_file_writer_t *w;
    char              key[4096], err[256];
    size_t            len, nholds = 0, maxholds = 1u << 20;
    long              k;
    double            t0, hold, max_hold = 0, start, *holds;
    unsigned          steps = 0, op;
    uint64_t          next = n, bytes = 0;

    w = sh_file_writer_open(path, SH_SNAPSHOT_MODE, NULL, err, sizeof(err));
    if (w == NULL || sh_store_file_begin(w, "", 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "store-bench: %s\n", err);
        return -1;
    }
    memset(buf, 0, STEP_BUF);      /* faulted in before any hold */
    holds = malloc(maxholds * sizeof(*holds));
    if (holds == NULL) {
        return -1;
    }
    start = now();
    t0 = now();
    sh_image_save_begin(&sv, st, buf, STEP_BUF);
    for (;;) {
        k = sh_image_save_step(&sv);
        hold = now() - t0;
        max_hold = hold > max_hold ? hold : max_hold;
        if (nholds < maxholds) {
            holds[nholds++] = hold;
        }
        if (k < 0) {
            fprintf(stderr, "store-bench: the copy gave up\n");
            return -1;
        }
        if (k == 0) {
            break;
        }
        if (sh_file_writer_write(w, buf, (size_t) k, err, sizeof(err)) != 0)
        {
            fprintf(stderr, "store-bench: %s\n", err);
            return -1;
        }
        bytes += (uint64_t) k;
        steps++;
        if (!sh_image_save_complete(&sv)) {
            for (op = 0; op < OPS_PER_STEP; op++, next++) {
                len = key_of(b, next, key, sizeof(key));
                (void) sh_store_put(st, key, len,
                                    sh_store_keyhash(st, key, len),
                                    fp_of(b, next), d, NULL);
            }
        }
        t0 = now();
    }
    if (sh_file_writer_commit(w, err, sizeof(err)) != 0) {
        fprintf(stderr, "store-bench: %s\n", err);
        return -1;
    }
    qsort(holds, nholds, sizeof(*holds), cmp_double);
    printf("  save: %.2f GB image in %u holds of the lock: p50 %.2f ms, "
           "p99 %.2f ms, p99.9 %.2f ms, longest %.2f ms; %.1f s in all "
           "(%u changes meanwhile, %llu groups copied again)\n",
           bytes / 1e9, steps, holds[nholds / 2] * 1e3,
           holds[nholds * 99 / 100] * 1e3,
           holds[nholds * 999 / 1000] * 1e3, max_hold * 1e3,
           now() - start, steps * OPS_PER_STEP,
           (unsigned long long) sv.recopied);
    free(holds);
    return 0;
}

/* Start again from the file, in the fresh zone `region`. */
static int
load(sb_t *b, void *region, size_t size, uint64_t text, const char *path,
     unsigned char *buf)
{
    sh_store_t          *st;
    sh_image_info_t      info;
    struct stat          fst;
    struct rusage        ru0, ru1;
    size_t               meta_len, image_len;
    const unsigned char *meta, *image;
    char                 err[256];
    double               t0, t1;
    ssize_t              r;
    off_t                off;
    int                  fd, rc = -1;

    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &fst) != 0) {
        fprintf(stderr, "store-bench: reload failed\n");
        goto done;
    }
    /* warm page cache: read it all once, as a restart finds a file its
     * last save wrote */
    t0 = now();
    for (off = 0; off < fst.st_size; off += r) {
        r = pread(fd, buf, STEP_BUF, off);
        if (r <= 0) {
            goto done;
        }
    }
    printf("  image read once: %.2f s\n", now() - t0);
    /* the header and settings: where the image starts */
    if (pread(fd, buf, STEP_BUF, 0) <= 0) {
        goto done;
    }
    getrusage(RUSAGE_SELF, &ru0);
    t0 = now();
    st = format(b, region, size, text, err, sizeof(err));
    t1 = now();
    if (st == NULL
        || sh_store_file_parse(buf, (size_t) (fst.st_size < STEP_BUF
                                              ? fst.st_size : STEP_BUF),
                               &meta, &meta_len, &image, &image_len, err,
                               sizeof(err)) != 0
        || sh_image_load_fd(st, fd, (uint64_t) (image - buf),
                            (uint64_t) fst.st_size - (image - buf),
                            b->version, &info, err, sizeof(err)) != 0)
    {
        fprintf(stderr, "store-bench: load: %s\n", err);
        goto done;
    }
    getrusage(RUSAGE_SELF, &ru1);
    printf("  start from the image: format %.2f s, load %.2f s "
           "(%.2f GB/s), %u documents, %llu with text, %ld page "
           "faults\n", t1 - t0,
           now() - t1, fst.st_size / (now() - t1) / 1e9, info.documents,
           (unsigned long long) info.texts, ru1.ru_minflt - ru0.ru_minflt);
    rc = 0;

done:
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

static int
run_one(sb_t *b, unsigned log2n)
{
    uint64_t        n = 1ull << log2n, text;
    size_t          size;
    void           *region;
    sh_store_t     *st;
    sh_store_doc_t  d;
    unsigned char  *buf;
    char            err[256], path[4096];
    double          t0, t1, touch;

    text = n * b->text_per_doc;
    text = text > b->text_max ? b->text_max : text;
    size = sh_store_region_size((uint32_t) n, text);
    region = shared(size, &touch);
    if (region == NULL) {
        fprintf(stderr, "store-bench: 2^%u: cannot map %zu bytes\n", log2n,
                size);
        return -1;
    }

    t0 = now();
    st = format(b, region, size, text, err, sizeof(err));
    if (st == NULL) {
        fprintf(stderr, "store-bench: %s\n", err);
        return -1;
    }
    t1 = now();
    printf("2^%u documents: zone %.2f GB (documents %.2f GB = %.1f bytes "
           "each; key text ring %.2f GB); first write of its memory %.2f s, "
           "formatted in %.2f s\n", log2n, size / 1e9, (size - text) / 1e9,
           (double) (size - text) / n, text / 1e9, touch, t1 - t0);
    if (fill(b, st, n, &d) != 0 || query(b, st, n, log2n) != 0) {
        return -1;
    }

    if (b->image_dir != NULL) {
        snprintf(path, sizeof(path), "%s/store-2^%u.snap", b->image_dir,
                 log2n);
        buf = malloc(STEP_BUF);
        if (buf == NULL || save(b, st, &d, n, path, buf) != 0) {
            return -1;
        }
        munmap(region, size);
        region = shared(size, &touch);
        printf("  a fresh zone's memory: first write %.2f s\n", touch);
        if (region == NULL || load(b, region, size, text, path, buf) != 0) {
            return -1;
        }
        if (b->keep) {
            print_zone_line(size, text, path);
        } else {
            unlink(path);
        }
        free(buf);
    }
    munmap(region, size);
    return 0;
}

static const char synopsis[] =
    "usage: simhash store-bench --list FILE --log2n 20,27 [options]\n\n"
    "The compact store at 2^N documents: fill, queries, and with\n"
    "--image-dir the sliced save and the start from its file.\n\n";

static int
set_u64(void *target, const char *name, const char *value)
{
    unsigned long n;

    if (cli_parse_uint(name, value, 1, ULONG_MAX, &n) != 0) {
        return -1;
    }
    *(uint64_t *) target = n;
    return 0;
}

static const char *
show_u64(const void *target, char *buf, size_t len)
{
    snprintf(buf, len, "%llu",
             (unsigned long long) *(const uint64_t *) target);
    return buf;
}

static int
set_keep(void *target, const char *name, const char *value)
{
    *(int *) target = strcmp(value, "yes") == 0;
    return 0;
}

/* --log2n: sizes, e.g. 20,27. */
static int
set_sizes(void *target, const char *name, const char *value)
{
    sb_t *b = target;
    char *p = (char *) value, *end;

    b->nn = 0;
    while (*p && b->nn < 8) {
        b->log2n[b->nn] = (unsigned) strtoul(p, &end, 10);
        if (end == p || b->log2n[b->nn] < 1 || b->log2n[b->nn] > 31) {
            cli_error("%s: expected sizes from 1 to 31, e.g. 20,27", name);
            return -1;
        }
        b->nn++;
        p = end + (*end == ',');
    }
    return 0;
}

int
cmd_store_bench(int argc, char **argv)
{
    static sb_t  b;
    const char  *list = NULL, *cache = NULL, *prefix = "/usr/share/doc";
    char       **paths = NULL, line[4096];
    size_t       npaths = 0, cap = 0, i, plen;
    sh_options_t opts;
    sh_config_t *cfg;
    char         err[256];
    FILE        *f;
    int          a;
    uint64_t     text_max_mb;
    cli_opt_t    table[] = {
        CLI_OPT_STRING("--list", "FILE", &list, "pages, one path a line"),
        CLI_OPT_STRING("--cache", "FILE", &cache,
                       "keep the fingerprints in FILE between runs"),
        CLI_OPT_CALL("--log2n", "LIST", &b, set_sizes, NULL,
                     "log2 of the document counts, e.g. 20,27"),
        CLI_OPT_UINT("--queries", "N", &b.queries, 100, 100000000,
                     "queries per size"),
        CLI_OPT_CALL("--text-per-doc", "B", &b.text_per_doc, set_u64,
                     show_u64, "bytes of key text ring per document"),
        CLI_OPT_CALL("--text-max", "MB", &text_max_mb, set_u64, show_u64,
                     "the ring's largest size"),
        CLI_OPT_STRING("--image-dir", "DIR", &b.image_dir,
                       "save the store there and start again from it"),
        CLI_OPT_CALL("--keep", "yes", &b.keep, set_keep, NULL,
                     "keep the snapshot files"),
        CLI_OPT_STRING("--prefix", "P", &prefix,
                       "taken off the pages' paths to make their URLs"),
        CLI_OPT_END
    };
    cli_cmd_t    cmd = {
        .name = "store-bench", .synopsis = synopsis, .opts = table
    };

    b.queries = 200000;
    b.text_per_doc = 128;
    text_max_mb = 4096;
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    b.text_max = text_max_mb << 20;
    if (a < argc) {
        cli_error("store-bench: unexpected argument %s (see --help)",
                  argv[a]);
        return 2;
    }
    if (list == NULL || b.nn == 0) {
        fprintf(stderr, "store-bench: --list and --log2n are required\n");
        return 2;
    }
    f = fopen(list, "r");
    if (f == NULL) {
        fprintf(stderr, "store-bench: %s: %s\n", list, strerror(errno));
        return 1;
    }
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (npaths == cap) {
            cap = cap ? cap * 2 : 1024;
            paths = realloc(paths, cap * sizeof(*paths));
        }
        paths[npaths++] = strdup(line);
    }
    fclose(f);

    sh_options_init(&opts);
    cfg = sh_config_new(&opts, err, sizeof(err));
    if (cfg == NULL) {
        fprintf(stderr, "store-bench: %s\n", err);
        return 1;
    }
    pageset_init(&b.pages);
    if (pageset_from_paths(&b.pages, cfg, NULL, paths, npaths, cache) != 0
        || b.pages.n == 0)
    {
        fprintf(stderr, "store-bench: no pages\n");
        return 1;
    }
    b.path = malloc(b.pages.n * sizeof(*b.path));
    plen = strlen(prefix);
    for (i = 0; i < b.pages.n; i++) {
        const char *p = pageset_path(&b.pages, i);

        b.path[i] = strncmp(p, prefix, plen) == 0 ? p + plen : p;
    }
    {
        unsigned char key[32];

        if (sh_config_derive_key(cfg, SH_STORE_KEY_PURPOSE, key,
                                 sizeof(key)) != 0)
        {
            fprintf(stderr, "store-bench: no key\n");
            return 1;
        }
        sh_store_secret(key, sizeof(key), b.secret);
        b.seed_digest = sh_config_seed_digest(cfg);
        b.version = sh_config_version(cfg);
    }
    printf("pages %zu (real fingerprints, relocated copies), %u queries "
           "per size\n", b.pages.n, b.queries);
    for (a = 0; a < (int) b.nn; a++) {
        if (run_one(&b, b.log2n[a]) != 0) {
            return 1;
        }
        fflush(stdout);
    }
    return 0;
}
