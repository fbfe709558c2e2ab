/*
 * bench_sites -- what the console's per-site accounting costs a response
 * (module/ngx_http_simhash_sites.c, issue 36).
 *
 *   bench_sites [--events N]
 *   bench_sites --once [--events N]
 *
 * Each event does what ngx_http_simhash_sites_event does for a decision:
 * the rate ring's two atomic increments, the zone lock taken and released
 * (a compare-and-swap and a store, as ngx_shmtx without contention), the
 * URL's host found (sh_topk_host), the heavy-hitters table updated
 * (sh_topk_add: its host hash and scan; a replacement for a duplicate of
 * an untracked host), the key's hash (sh_store_keyhash) and the last
 * decision written.  The crawl: 2,000 hosts of Zipf-like popularity (more
 * than the table's 64 entries: replacements happen), URLs of four path
 * segments, one response in three a duplicate.
 *
 * Prints the CPU time an event.  --once runs the events and prints
 * nothing: for valgrind --tool=callgrind --toggle-collect=account
 * (bench/16-sites.sh), whose count does not depend on the machine's load.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sh_store.h"
#include "sh_topk.h"

#define HOSTS       2000
#define K           64
#define SLOTS       36
#define NEV         7
#define DECISIONS   4096

typedef struct {
    uint64_t keyhash, original;
    uint32_t time, score;
    uint16_t distance;
    uint8_t  status, action;
    uint32_t pad;
} decision_t;

static struct {
    uint64_t epoch;
    uint64_t n[NEV];
} ring[SLOTS];

static decision_t  decisions[DECISIONS];
static uint64_t    lock;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* one event: what the module does, lock and atomics included */
__attribute__((noinline)) static void
account(sh_topk_t *t, sh_store_t *st, const char *key, size_t len,
        unsigned status, uint64_t sec)
{
    uint64_t    add[SH_TOPK_NCOUNT] = { 1, 0, 0, 0, 0, 0 }, epoch, kh,
                expect;
    size_t      hlen;
    const char *host;
    decision_t *d;

    epoch = sec / 10;
    if (ring[epoch % SLOTS].epoch != epoch) {
        expect = ring[epoch % SLOTS].epoch;
        if (__atomic_compare_exchange_n(&ring[epoch % SLOTS].epoch, &expect,
                                        epoch, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        {
            memset(ring[epoch % SLOTS].n, 0, sizeof(ring[0].n));
        }
    }
    __atomic_fetch_add(&ring[epoch % SLOTS].n[status], 1, __ATOMIC_RELAXED);

    add[1] = status == 1;
    host = sh_topk_host(key, len, &hlen);

    expect = 0;
    while (!__atomic_compare_exchange_n(&lock, &expect, 1, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    {
        expect = 0;
    }

    (void) sh_topk_add(t, host, hlen, add[1], add);
    kh = sh_store_keyhash(st, key, len);
    d = &decisions[kh % DECISIONS];
    d->keyhash = kh;
    d->original = 0;
    d->time = (uint32_t) sec;
    d->score = 0;
    d->distance = 3;
    d->status = (uint8_t) status;
    d->action = 0;

    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

int
main(int argc, char **argv)
{
    int            a, once = 0;
    long           i, events = 200000;
    char           err[256], key[256];
    size_t         size, len;
    void          *mem, *smem;
    unsigned char  secret[SH_STORE_SECRET_LEN];
    sh_topk_t     *t;
    sh_store_t    *st;
    uint64_t       x = 0x9e3779b97f4a7c15ull;
    double         t0;

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--once") == 0) {
            once = 1;
        } else if (strcmp(argv[a], "--events") == 0 && a + 1 < argc) {
            events = atol(argv[++a]);
        } else {
            fprintf(stderr, "usage: bench_sites [--once] [--events N]\n");
            return 2;
        }
    }

    size = sh_topk_size(K);
    mem = aligned_alloc(64, (size + 63) & ~(size_t) 63);
    t = sh_topk_init(mem, size, K, "bench", 5);
    memset(secret, 7, sizeof(secret));
    size = sh_store_region_size(1024, 64 * 1024);
    smem = aligned_alloc(64, (size + 63) & ~(size_t) 63);
    st = sh_store_init(smem, size, 64 * 1024, secret, 77, err, sizeof(err));
    if (t == NULL || st == NULL) {
        fprintf(stderr, "bench_sites: init: %s\n", err);
        return 1;
    }

    t0 = now();
    for (i = 0; i < events; i++) {
        unsigned host, status;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* Zipf-like: host = HOSTS^u - 1 */
        host = (unsigned) (x % HOSTS);
        host = host * host / HOSTS * host / HOSTS;
        status = (x >> 32) % 3 == 0 ? 1 : 0;
        len = (size_t) snprintf(key, sizeof(key),
                                "https://www.h%u.example/docs/section/%u/"
                                "page-%lu.html", host, (unsigned) (x % 97),
                                (unsigned long) (x >> 40));
        account(t, st, key, len, status, 1764000000 + (uint64_t) i / 1000);
    }
    if (!once) {
        printf("per-site accounting: %.3f us an event (%ld events, %d hosts, "
               "%d entries)\n", (now() - t0) * 1e6 / events, events, HOSTS,
               K);
    }
    free(mem);
    free(smem);
    return 0;
}
