/*
 * bench_dust -- what the DUST learner (sh_dust.h) costs a request.
 *
 *   bench_dust [--urls N]
 *   bench_dust --once typical|worst [--urls N]
 *
 * A crawl as the module shows it to the learner: 50 hosts, pages under
 * four path segments, each URL with a fresh session id and, one in three,
 * a tracking parameter (the typical URL); or 16 segments and 32
 * parameters, the most a URL may have before it is refused (the worst).
 * Each request is predicted (sh_dust_predict, as the precontent handler
 * does) and then observed with the document it resolved to
 * (sh_dust_observe, as a decision does), in a learner of the default
 * sizes with the default thresholds, so that the rules turn on part way
 * and the second half runs with them active.
 *
 * Prints the CPU time per request (predict + observe) of each kind, one
 * thread.  --once runs one kind once and prints nothing: for counting
 * its instructions with valgrind --tool=callgrind
 * --toggle-collect=sh_dust_* (bench/15-dust.sh), which, unlike times, do
 * not depend on what else the machine is doing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sh_dust.h"

#define HOSTS   50
#define PAGES   200         /* documents a host: each asked for 20 times */

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t
mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Request i: its URL into buf, its document into *rep. */
static size_t
url_of(uint64_t i, int worst, char *buf, size_t size, uint64_t *rep)
{
    uint64_t r = mix(i), host = r % HOSTS, page = (r >> 16) % PAGES;
    size_t   n;
    int      k;

    *rep = host * PAGES + page + 1;
    n = (size_t) snprintf(buf, size, "http://site%llu.example",
                          (unsigned long long) host);
    if (!worst) {
        n += (size_t) snprintf(buf + n, size - n,
                               "/docs/section%llu/part/page%llu.html"
                               "?sid=%016llx",
                               (unsigned long long) (page % 20),
                               (unsigned long long) page,
                               (unsigned long long) mix(r));
        if (r % 3 == 0) {
            n += (size_t) snprintf(buf + n, size - n, "&utm_source=feed");
        }
        return n;
    }
    for (k = 0; k < 15; k++) {
        n += (size_t) snprintf(buf + n, size - n, "/s%d", k);
    }
    n += (size_t) snprintf(buf + n, size - n, "/page%llu.html?sid=%016llx",
                           (unsigned long long) page,
                           (unsigned long long) mix(r));
    for (k = 1; k < 32; k++) {
        n += (size_t) snprintf(buf + n, size - n, "&p%d=v%d", k, k);
    }
    return n;
}

static sh_dust_t *
learner(void)
{
    sh_dust_opts_t o;
    size_t         size;
    void          *region;
    sh_dust_t     *d;
    char           err[256];

    sh_dust_opts_init(&o);
    size = sh_dust_region_size(o.hosts, o.candidates, o.evidence_slots,
                               o.canonical_slots);
    region = aligned_alloc(64, (size + 63) / 64 * 64);
    if (region == NULL) {
        return NULL;
    }
    d = sh_dust_init(region, size, "bench_dust", 10, &o, err, sizeof(err));
    if (d == NULL) {
        fprintf(stderr, "bench_dust: %s\n", err);
    }
    return d;
}

/* The requests one by one: seconds of CPU, and the predictions made. */
static double
run(sh_dust_t *d, int worst, uint64_t n, uint64_t *predicted)
{
    char          url[4096];
    uint64_t      i, rep, guess;
    size_t        len;
    double        t = 0, t0;
    sh_dust_why_t why;          /* asked for, as the module does */

    *predicted = 0;
    for (i = 0; i < n; i++) {
        len = url_of(i, worst, url, sizeof(url), &rep);
        t0 = now();
        *predicted += sh_dust_predict(d, url, len, i, &guess, &why) == 1;
        (void) sh_dust_observe(d, url, len, rep, i);
        t += now() - t0;
    }
    return t;
}

int
main(int argc, char **argv)
{
    const char *once = NULL;
    uint64_t    n = 200000, predicted;
    sh_dust_t  *d;
    double      t;
    int         a, worst;

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--once") == 0 && a + 1 < argc) {
            once = argv[++a];
        } else if (strcmp(argv[a], "--urls") == 0 && a + 1 < argc) {
            n = strtoull(argv[++a], NULL, 10);
        } else {
            fprintf(stderr, "usage: bench_dust [--urls N]\n"
                    "       bench_dust --once typical|worst [--urls N]\n");
            return 2;
        }
    }
    if (once != NULL) {
        d = learner();
        if (d == NULL) {
            return 1;
        }
        (void) run(d, strcmp(once, "worst") == 0, n, &predicted);
        return 0;
    }
    for (worst = 0; worst <= 1; worst++) {
        d = learner();
        if (d == NULL) {
            return 1;
        }
        t = run(d, worst, n, &predicted);
        printf("%-8s %llu requests: %.2f us each (predict + observe), "
               "%.1f%% predicted\n", worst ? "worst" : "typical",
               (unsigned long long) n, t / n * 1e6, 100.0 * predicted / n);
    }
    return 0;
}
