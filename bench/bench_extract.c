/*
 * bench_extract -- fingerprinting throughput against parsing alone.
 *
 *   bench_extract [--rounds N] [--chunk BYTES] LIST
 *   bench_extract --once parse|fingerprint|off [--chunk BYTES] LIST
 *
 * Loads every page named in LIST into memory, then, alternating in each
 * round so that both see the same machine state:
 *   parse-only   libxml2's HTML push parser over the same bytes with an empty
 *                SAX handler (the floor: no extractor can beat the parser);
 *   fingerprint  the whole library, sh_doc_new/feed/finish, same chunks;
 *   content off  the same with content weighting off (sh_block.h): what
 *                the weighting costs, as the median over the rounds of
 *                each round's own ratio.
 * Prints MB/s for each and their ratio (best round of each), and the
 * median over the rounds of each round's own ratio (its two halves ran
 * back to back): on a shared host one side's best round can be luckier
 * than the other's, and the median tells.  One thread: one core; times
 * are the thread's CPU time, so that other processes on the machine
 * disturb the ratio as little as possible.
 *
 * --once runs one side once over the pages and prints nothing else: for
 * counting its instructions (valgrind --tool=callgrind), which, unlike
 * times, do not depend on what else the machine is doing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/HTMLparser.h>

#include "sh_block.h"
#include "sh_doc.h"
#include "sh_library.h"

typedef struct {
    char   *data;
    size_t  len;
} page_t;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* (libxml2 2.12 made the error const) */
#if LIBXML_VERSION >= 21200
static void
quiet(void *ctx, const xmlError *err)
#else
static void
quiet(void *ctx, xmlErrorPtr err)
#endif
{
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

static void
parse_only(const page_t *p, size_t chunk)
{
    htmlSAXHandler    sax;
    htmlParserCtxtPtr ctxt;
    size_t            off, n;

    memset(&sax, 0, sizeof(sax));
    sax.serror = quiet;
    sax.initialized = XML_SAX2_MAGIC;
    ctxt = htmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL,
                                    XML_CHAR_ENCODING_UTF8);
    htmlCtxtUseOptions(ctxt, HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING
                             | HTML_PARSE_NONET | HTML_PARSE_IGNORE_ENC);
    for (off = 0; off < p->len; off += n) {
        n = p->len - off < chunk ? p->len - off : chunk;
        htmlParseChunk(ctxt, p->data + off, (int) n, 0);
    }
    htmlParseChunk(ctxt, NULL, 0, 1);
    if (ctxt->myDoc != NULL) {
        xmlFreeDoc(ctxt->myDoc);
    }
    htmlFreeParserCtxt(ctxt);
}

static uint64_t
fingerprint(sh_config_t *cfg, const page_t *p, size_t chunk)
{
    sh_doc_t   *doc = sh_doc_new(cfg, NULL);
    sh_result_t res;
    size_t      off, n;

    for (off = 0; off < p->len; off += n) {
        n = p->len - off < chunk ? p->len - off : chunk;
        sh_doc_feed(doc, p->data + off, n);
    }
    sh_doc_finish(doc, &res);
    sh_doc_free(doc);
    return res.hash;
}

static int
load(const char *list, page_t **pages, size_t *npages, size_t *total)
{
    FILE   *l = fopen(list, "r"), *f;
    char    path[4096];
    size_t  cap = 0, n = 0;
    page_t *v = NULL;
    long    len;

    if (l == NULL) {
        perror(list);
        return -1;
    }
    *total = 0;
    while (fgets(path, sizeof(path), l) != NULL) {
        path[strcspn(path, "\r\n")] = '\0';
        if ((f = fopen(path, "rb")) == NULL) {
            continue;
        }
        fseek(f, 0, SEEK_END);
        len = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            v = realloc(v, cap * sizeof(page_t));
        }
        v[n].data = malloc((size_t) len + 1);
        v[n].len = fread(v[n].data, 1, (size_t) len, f);
        *total += v[n].len;
        n++;
        fclose(f);
    }
    fclose(l);
    *pages = v;
    *npages = n;
    return n > 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
    sh_options_t  opts;
    sh_config_t  *cfg, *cfg_off;
    page_t       *pages;
    size_t        npages, total, i, chunk = 16384;
    int           rounds = 5, r, a;
    double        t0, parse_best = 1e30, fp_best = 1e30, dt, parse_dt;
    double       *ratio, *cost, off_best = 1e30, off_dt;
    uint64_t      sink = 0;
    char          err[256];
    const char   *once = NULL;

    for (a = 1; a < argc - 1; a++) {
        if (strcmp(argv[a], "--rounds") == 0) {
            rounds = atoi(argv[++a]);
        } else if (strcmp(argv[a], "--chunk") == 0) {
            chunk = (size_t) atol(argv[++a]);
        } else if (strcmp(argv[a], "--once") == 0) {
            once = argv[++a];
        }
    }
    if (argc < 2 || rounds < 1 || chunk < 1
        || (once != NULL && strcmp(once, "parse") != 0
            && strcmp(once, "fingerprint") != 0 && strcmp(once, "off") != 0))
    {
        fprintf(stderr, "usage: bench_extract [--rounds N] [--chunk B] "
                "LIST\n       bench_extract --once parse|fingerprint|off "
                "[--chunk B] LIST\n");
        return 2;
    }
    sh_library_init();
    if (load(argv[argc - 1], &pages, &npages, &total) != 0) {
        fprintf(stderr, "bench_extract: no pages in %s\n", argv[argc - 1]);
        return 1;
    }
    sh_options_init(&opts);
    cfg = sh_config_new(&opts, err, sizeof(err));
    opts.content = SH_CONTENT_OFF;
    cfg_off = sh_config_new(&opts, err, sizeof(err));
    if (cfg == NULL || cfg_off == NULL) {
        fprintf(stderr, "bench_extract: %s\n", err);
        return 1;
    }

    if (once != NULL) {
        for (i = 0; i < npages; i++) {
            if (once[0] == 'p') {
                parse_only(&pages[i], chunk);
            } else {
                sink ^= fingerprint(once[0] == 'f' ? cfg : cfg_off,
                                    &pages[i], chunk);
            }
        }
        printf("%s: pages %zu, %.1f MB, chunk %zu (checksum %016llx)\n",
               once, npages, total / 1e6, chunk, (unsigned long long) sink);
        return 0;
    }

    ratio = malloc((size_t) rounds * sizeof(double));
    cost = malloc((size_t) rounds * sizeof(double));
    if (ratio == NULL || cost == NULL) {
        fprintf(stderr, "bench_extract: out of memory\n");
        return 1;
    }
    for (r = 0; r < rounds; r++) {
        t0 = now();
        for (i = 0; i < npages; i++) {
            parse_only(&pages[i], chunk);
        }
        parse_dt = now() - t0;
        parse_best = parse_dt < parse_best ? parse_dt : parse_best;

        t0 = now();
        for (i = 0; i < npages; i++) {
            sink ^= fingerprint(cfg, &pages[i], chunk);
        }
        dt = now() - t0;
        fp_best = dt < fp_best ? dt : fp_best;
        ratio[r] = parse_dt / dt;

        t0 = now();
        for (i = 0; i < npages; i++) {
            sink ^= fingerprint(cfg_off, &pages[i], chunk);
        }
        off_dt = now() - t0;
        off_best = off_dt < off_best ? off_dt : off_best;
        cost[r] = dt / off_dt - 1.0;
    }
    qsort(ratio, (size_t) rounds, sizeof(double), cmp_double);
    qsort(cost, (size_t) rounds, sizeof(double), cmp_double);

    printf("pages %zu, %.1f MB, chunk %zu, best of %d rounds\n", npages,
           total / 1e6, chunk, rounds);
    printf("parse-only   %7.1f MB/s\n", total / 1e6 / parse_best);
    printf("fingerprint  %7.1f MB/s\n", total / 1e6 / fp_best);
    printf("ratio        %7.3f  (fingerprint / parse-only; target >= 0.85)"
           "\n", parse_best / fp_best);
    printf("round ratios %7.3f  median (%.3f to %.3f)\n",
           rounds % 2 ? ratio[rounds / 2]
                      : (ratio[rounds / 2 - 1] + ratio[rounds / 2]) / 2,
           ratio[0], ratio[rounds - 1]);
    printf("content off  %7.1f MB/s  (simhash_content off)\n",
           total / 1e6 / off_best);
    printf("content cost %6.1f%%  median of the rounds' own (%.1f%% to "
           "%.1f%%; target <= 5%%)\n", 100.0 * (rounds % 2 ? cost[rounds / 2]
           : (cost[rounds / 2 - 1] + cost[rounds / 2]) / 2), 100.0 * cost[0],
           100.0 * cost[rounds - 1]);
    free(ratio);
    free(cost);
    fprintf(stderr, "(checksum %016llx)\n", (unsigned long long) sink);
    sh_config_free(cfg);
    sh_config_free(cfg_off);
    return 0;
}
