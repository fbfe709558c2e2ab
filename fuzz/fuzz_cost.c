/*
 * fuzz_cost.c -- pages that cost too much CPU for their size.
 *
 * The input is a recipe for a page of up to FCOST_MAX bytes (the default
 * simhash_max_body), so that a few bytes can describe a megabyte of one
 * construct repeated, which is what makes a parser's slow paths show:
 *
 *   byte 0   how to cut the body: whole, 4 KB, 16 KB, or random pieces
 *   then     segments, each: two bytes of repeat count (1 to 65,536), a
 *            length byte (1 to 256), and that many bytes of snippet.  In
 *            a snippet, the byte 0xFF stands for a counter (in base 36)
 *            that goes up at every use: distinct names, distinct values.
 *
 * The page goes through sh_doc under the default options, and the CPU time
 * it took (this thread's) is compared with a reference page measured at
 * start-up: the fixture article's body, repeated to half a megabyte.  A
 * page of 64 KB or more that costs more than FCOST_LIMIT times the
 * reference per byte, three times in a row, fails: libFuzzer keeps it under
 * build/fuzz/crashes/cost/.  `-timeout` (tools/fuzz.sh sets it) catches
 * what is slower still.  At exit the harness prints the costliest page it
 * saw per byte, and writes its recipe to $FUZZ_COST_WORST if that is set:
 * the cost-per-byte report behind docs/FUZZING.md.
 *
 * tools/fuzz.sh builds this target without AddressSanitizer and
 * UndefinedBehaviorSanitizer (they would slow the library and not
 * libxml2, and skew the ratio), at -O2.  In the unit tests' replay
 * (FUZZ_REPLAY) nothing is timed: the recipes are built and run, and
 * the result checked.
 */
#include <time.h>

#include "fuzz_util.h"

#include "sh_config.h"
#include "sh_doc.h"
#include "sh_library.h"

#define FCOST_MAX       (1024 * 1024)
#define FCOST_MIN_JUDGED (64 * 1024)
#define FCOST_LIMIT     20.0

static sh_config_t *fcost_cfg;
#ifndef FUZZ_REPLAY
static double       fcost_ref;          /* ns per byte of the reference */
static double       fcost_worst;        /* the costliest ratio seen */
static size_t       fcost_worst_len;
static uint8_t     *fcost_worst_recipe;
static size_t       fcost_worst_recipe_len;
#endif

/* Build the page a recipe describes into buf (FCOST_MAX bytes). */
static size_t
fcost_page(fuzz_in_t *in, uint8_t *buf)
{
    size_t   len = 0, n, k, i;
    unsigned count, counter = 0, c;
    uint8_t  snippet[256];
    char     num[16];

    while (in->n > 0 && len < FCOST_MAX) {
        count = fuzz_u8(in) << 8;
        count |= fuzz_u8(in);
        n = (size_t) fuzz_u8(in) + 1;
        for (i = 0; i < n; i++) {
            snippet[i] = (uint8_t) fuzz_u8(in);
        }
        for (k = 0; k <= count && len < FCOST_MAX; k++) {
            for (i = 0; i < n && len < FCOST_MAX; i++) {
                if (snippet[i] != 0xFF) {
                    buf[len++] = snippet[i];
                    continue;
                }
                /* The counter, in base 36, most significant digit last
                 * (cheaper, and as distinct). */
                c = counter++;
                do {
                    num[0] = "0123456789abcdefghijklmnopqrstuvwxyz"[c % 36];
                    if (len < FCOST_MAX) {
                        buf[len++] = (uint8_t) num[0];
                    }
                    c /= 36;
                } while (c > 0);
            }
        }
    }
    return len;
}

/* Fingerprint buf[0..len) cut as `cut` says; returns the CPU seconds. */
static double
fcost_run(const uint8_t *buf, size_t len, unsigned cut, sh_result_t *res)
{
    struct timespec t0, t1;
    sh_doc_t       *d;
    size_t          off = 0, n;
    uint64_t        rng = len;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    d = sh_doc_new(fcost_cfg, NULL);
    FUZZ_CHECK(d != NULL);
    while (off < len) {
        switch (cut % 4) {
        case 0:
            n = len;
            break;
        case 1:
            n = 4096;
            break;
        case 2:
            n = 16384;
            break;
        default:
            n = 1 + fuzz_rng(&rng) % 8192;
            break;
        }
        n = n < len - off ? n : len - off;
        FUZZ_CHECK(sh_doc_feed(d, buf + off, n) == 0);
        off += n;
    }
    FUZZ_CHECK(sh_doc_finish(d, res) == 0);
    sh_doc_free(d);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    return (double) (t1.tv_sec - t0.tv_sec)
           + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
}

#ifndef FUZZ_REPLAY
static void
fcost_report(void)
{
    const char *path = getenv("FUZZ_COST_WORST");
    FILE       *f;

    if (fcost_worst_recipe == NULL) {
        return;
    }
    fprintf(stderr, "fuzz_cost: reference %.1f ns/byte; costliest page "
            "%.1f ns/byte (%.2fx the reference), %zu bytes\n", fcost_ref,
            fcost_worst * fcost_ref, fcost_worst, fcost_worst_len);
    if (path != NULL && *path != '\0' && (f = fopen(path, "wb")) != NULL) {
        fwrite(fcost_worst_recipe, 1, fcost_worst_recipe_len, f);
        fclose(f);
    }
}
#endif

static void
fcost_init(void)
{
    sh_options_t o;
    char         err[256];

    sh_library_init();
    sh_options_init(&o);
    fcost_cfg = sh_config_new(&o, err, sizeof(err));
    FUZZ_CHECK(fcost_cfg != NULL);

#ifndef FUZZ_REPLAY
    {
        uint8_t    *ref, *page, *body, *end;
        size_t      len, n;
        double      t, best = 1e9;
        sh_result_t r;
        int         i;

        /* The reference: a real article's body, repeated to half a
         * megabyte (the page would end at its first </html>). */
        page = fuzz_read_file("tests/fixtures/article.html", &len);
        FUZZ_CHECK(page != NULL && len > 0);
        page[len] = '\0';
        body = (uint8_t *) strstr((char *) page, "<body");
        end = (uint8_t *) strstr((char *) page, "</body>");
        FUZZ_CHECK(body != NULL && end != NULL && end > body);
        ref = malloc(512 * 1024);
        FUZZ_CHECK(ref != NULL);
        n = (size_t) (body - page);
        memcpy(ref, page, n);
        len = (size_t) (end - body);
        while (n + len <= 512 * 1024) {
            memcpy(ref + n, body, len);
            n += len;
        }
        for (i = 0; i < 7; i++) {
            t = fcost_run(ref, n, 2, &r);
            best = t < best ? t : best;
        }
        fcost_ref = best * 1e9 / (double) n;
        free(ref);
        free(page);
        atexit(fcost_report);
    }
#endif
}

static int
fcost_one(const uint8_t *data, size_t size)
{
    fuzz_in_t   in = { data, size };
    static uint8_t *buf;
    unsigned    cut;
    size_t      len;
    sh_result_t r;
    double      ratio;
    int         i;

    if (buf == NULL) {
        buf = malloc(FCOST_MAX);
        FUZZ_CHECK(buf != NULL);
    }
    cut = fuzz_u8(&in);
    len = fcost_page(&in, buf);
    ratio = fcost_run(buf, len, cut, &r) * 1e9 / (double) (len ? len : 1);
    FUZZ_CHECK(r.nbytes == len);
#ifdef FUZZ_REPLAY
    (void) ratio;
    (void) i;
#else
    if (len < FCOST_MIN_JUDGED) {
        return 0;
    }
    ratio /= fcost_ref;
    /* A shared machine: only a page slow three times running counts. */
    for (i = 0; i < 2 && ratio > FCOST_LIMIT; i++) {
        double again = fcost_run(buf, len, cut, &r) * 1e9 / (double) len
                       / fcost_ref;

        ratio = again < ratio ? again : ratio;
    }
    if (ratio > fcost_worst) {
        fcost_worst = ratio;
        fcost_worst_len = len;
        free(fcost_worst_recipe);
        fcost_worst_recipe = malloc(size ? size : 1);
        FUZZ_CHECK(fcost_worst_recipe != NULL);
        memcpy(fcost_worst_recipe, data, size);
        fcost_worst_recipe_len = size;
    }
    if (ratio > FCOST_LIMIT) {
        fprintf(stderr, "fuzz_cost: %zu bytes at %.1f ns/byte, %.1fx the "
                "reference (%.1f ns/byte; status %s)\n", len,
                ratio * fcost_ref, ratio, fcost_ref,
                sh_status_name(r.status));
        FUZZ_CHECK(ratio <= FCOST_LIMIT);
    }
#endif
    return 0;
}

FUZZ_ENTRY(fcost_init, fcost_one)
