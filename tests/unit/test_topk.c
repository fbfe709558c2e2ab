/*
 * test_topk.c -- the heavy-hitters table (sh_topk.h): its memory is the
 * region it was given whatever the number of hosts (10^6 distinct ones
 * here, guard bytes after it untouched), every estimate within its bound
 * (count - error <= true <= count, error <= N / k), every host heavier
 * than N / k listed; a weight-0 event never takes an entry; the host of a
 * URL; a site's hosts beneath it, and many small hosts of one site
 * outranking one honest host.
 */
#define TEST_RNG_SEED 0x70b4c3a9e1d25f17ull
#include "test_util.h"

#include "sh_topk.h"

#define SECRET      "topk test secret"
#define K           64
#define DISTINCT    1000000u
#define HEAVY       16u
#define GUARD       4096

static void
test_host(void **state)
{
    const char *h;
    size_t      n;

    (void) state;

#define HOST(url, want)                                                   \
    h = sh_topk_host(url, strlen(url), &n);                               \
    assert_int_equal(n, strlen(want));                                    \
    assert_memory_equal(h, want, n)

    HOST("http://Example.org/a?b", "Example.org");
    HOST("https://example.org:8443/a", "example.org:8443");
    HOST("http://example.org", "example.org");
    HOST("http://u:p@example.org:80/x", "example.org:80");
    HOST("http://[::1]:8080/x", "[::1]:8080");
    HOST("http://127.0.0.1:19600/a?b", "127.0.0.1:19600");
    HOST("http://example.org?q=a://b", "example.org");
    HOST("/path/only", "");
    HOST("no-scheme", "");
    HOST("", "");
}

static void
test_weightless(void **state)
{
    static uint64_t mem[4096];
    sh_topk_t      *t;
    sh_topk_entry_t e[4];
    sh_topk_stats_t st;
    uint64_t        add[SH_TOPK_NCOUNT] = { 1, 0, 0, 0, 0, 0 };

    (void) state;

    assert_true(sh_topk_size(2) <= sizeof(mem));
    assert_int_equal(sh_topk_size(0), 0);
    assert_int_equal(sh_topk_size(SH_TOPK_MAX + 1), 0);
    t = sh_topk_init(mem, sizeof(mem), 2, SECRET, strlen(SECRET));
    assert_non_null(t);

    /* a new page of an untracked host: nothing taken */
    assert_int_equal(sh_topk_add(t, "a.org", 5, 0, add), 0);
    sh_topk_stats(t, &st);
    assert_int_equal(st.used, 0);

    add[SH_TOPK_DUPLICATES] = 1;
    assert_int_equal(sh_topk_add(t, "A.ORG", 5, 1, add), 1);
    add[SH_TOPK_DUPLICATES] = 0;
    assert_int_equal(sh_topk_add(t, "a.org", 5, 0, add), 1);
    assert_int_equal(sh_topk_add(t, "b.org", 5, 3, NULL), 1);
    assert_int_equal(sh_topk_add(t, "c.org", 5, 1, NULL), 1);

    assert_int_equal(sh_topk_list(t, e, 4), 2);
    assert_string_equal(e[0].host, "b.org");
    assert_int_equal(e[0].count, 3);
    assert_int_equal(e[0].error, 0);
    /* c.org took a.org's entry (count 1): its count 2, error 1 */
    assert_string_equal(e[1].host, "c.org");
    assert_int_equal(e[1].count, 2);
    assert_int_equal(e[1].error, 1);
    assert_int_equal(e[1].c[SH_TOPK_PAGES], 0);

    sh_topk_stats(t, &st);
    assert_int_equal(st.total, 5);
    assert_int_equal(st.replaced, 1);
    assert_int_equal(st.min, 2);

    /* the largest first when the caller has room for fewer */
    assert_int_equal(sh_topk_list(t, e, 1), 1);
    assert_string_equal(e[0].host, "b.org");

    sh_topk_clear(t);
    sh_topk_stats(t, &st);
    assert_int_equal(st.used, 0);
    assert_int_equal(st.total, 0);
}

/*
 * 10^6 distinct hosts each seen once or more, and HEAVY hosts with a
 * share of the weight each well above N / k.
 */
static void
test_million(void **state)
{
    size_t           size, n, i;
    unsigned char   *mem;
    uint32_t        *truth, id;
    uint64_t         total, bound, add[SH_TOPK_NCOUNT];
    unsigned         ev, heavy_found;
    char             host[32];
    sh_topk_t       *t;
    sh_topk_entry_t  e[K];
    sh_topk_stats_t  st;

    (void) state;

    size = sh_topk_size(K);
    assert_true(size > 0 && size < 64 * 1024);
    mem = aligned_alloc(64, (size + GUARD + 63) & ~(size_t) 63);
    assert_non_null(mem);
    memset(mem + size, 0xa5, GUARD);

    t = sh_topk_init(mem, size, K, SECRET, strlen(SECRET));
    assert_non_null(t);

    truth = calloc(DISTINCT + HEAVY, sizeof(*truth));
    assert_non_null(truth);
    total = 0;

    /* every host once, in order, with a heavy host's event after every
     * tenth: then 10^6 more events, 1 in 4 on a heavy host (weights 1 to
     * 3), the rest on a random host */
    for (ev = 0; ev < 2 * DISTINCT; ev++) {
        uint64_t w = 1;

        if (ev < DISTINCT) {
            id = ev % 10 == 9 ? DISTINCT + (ev / 10) % HEAVY : ev;
        } else if (rnd() % 2 == 0) {
            id = DISTINCT + (uint32_t) (rnd() % HEAVY);
            w = 1 + rnd() % 3;
        } else {
            id = (uint32_t) (rnd() % DISTINCT);
        }

        memset(add, 0, sizeof(add));
        add[SH_TOPK_PAGES] = 1;
        add[SH_TOPK_DUPLICATES] = w;

        n = (size_t) snprintf(host, sizeof(host), "h%u.example", id);
        assert_int_equal(sh_topk_add(t, host, n, w, add), 1);
        truth[id] += (uint32_t) w;
        total += w;
    }

    /* memory: the region and nothing after it */
    for (i = 0; i < GUARD; i++) {
        assert_int_equal(mem[size + i], 0xa5);
    }

    sh_topk_stats(t, &st);
    assert_int_equal(st.total, total);
    assert_int_equal(st.used, K);
    bound = total / K;
    assert_true(st.min <= bound);
    print_message("topk: %u distinct hosts, N = %llu, k = %u: bound N/k = "
                  "%llu, least count %llu, %llu replacements\n",
                  DISTINCT + HEAVY, (unsigned long long) total, K,
                  (unsigned long long) bound, (unsigned long long) st.min,
                  (unsigned long long) st.replaced);

    n = sh_topk_list(t, e, K);
    assert_int_equal(n, K);
    heavy_found = 0;

    for (i = 0; i < n; i++) {
        assert_int_equal(sscanf(e[i].host, "h%u.example", &id), 1);
        assert_true(id < DISTINCT + HEAVY);

        /* Space-Saving's guarantee */
        assert_true(e[i].count - e[i].error <= truth[id]);
        assert_true(truth[id] <= e[i].count);
        assert_true(e[i].error <= st.min);
        assert_true(e[i].error <= bound);

        /* the counters since the host took the entry: lower bounds */
        assert_true(e[i].c[SH_TOPK_DUPLICATES] <= truth[id]);
        assert_true(e[i].c[SH_TOPK_DUPLICATES] >= e[i].count - e[i].error);

        if (i > 0) {
            assert_true(e[i - 1].count >= e[i].count);
        }
        heavy_found += id >= DISTINCT;
    }

    /* every host heavier than N / k is listed */
    for (id = 0; id < DISTINCT + HEAVY; id++) {
        if (truth[id] > bound) {
            int listed = 0;

            n = (size_t) snprintf(host, sizeof(host), "h%u.example", id);
            for (i = 0; i < K; i++) {
                listed |= strcmp(e[i].host, host) == 0;
            }
            assert_true(listed);
        }
    }
    assert_int_equal(heavy_found, HEAVY);

    free(truth);
    free(mem);
}

/* 300 hosts of one site, 2 each (one 10), against one honest host's 60:
 * the site is first, its hosts beneath it. */
static void
test_sites(void **state)
{
    static uint64_t mem[16384];
    sh_topk_t      *t;
    sh_topk_entry_t e[K];
    char            host[64];
    unsigned        i;
    size_t          n;

    (void) state;

    assert_true(sh_topk_size(K) <= sizeof(mem));
    t = sh_topk_init(mem, sizeof(mem), K, SECRET, strlen(SECRET));
    assert_non_null(t);

    assert_int_equal(sh_topk_add_site(t, "honest.test", 11, "www.honest.test",
                                      15, 60, NULL), 1);
    for (i = 0; i < 300; i++) {
        snprintf(host, sizeof(host), "h%u.evil.test", i);
        assert_int_equal(sh_topk_add_site(t, "evil.test", 9, host,
                                          strlen(host), i == 7 ? 10 : 2,
                                          NULL), 1);
    }

    n = sh_topk_list(t, e, K);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].host, "evil.test");
    assert_int_equal(e[0].count, 299 * 2 + 10);
    assert_int_equal(e[0].hosts_seen, 300);
    /* its hosts: the places go round (Space-Saving among them: each
     * count an upper bound), largest first */
    for (i = 0; i < SH_TOPK_HOSTS; i++) {
        n = strlen(e[0].hosts[i].host);
        assert_true(n > 10);
        assert_string_equal(e[0].hosts[i].host + n - 10, ".evil.test");
        assert_true(e[0].hosts[i].count >= 2);
        assert_true(e[0].hosts[i].count <= e[0].count);
        assert_true(i == 0 || e[0].hosts[i].count <= e[0].hosts[i - 1].count);
    }
    assert_string_equal(e[1].host, "honest.test");
    assert_int_equal(e[1].count, 60);
    assert_int_equal(e[1].hosts_seen, 1);
    assert_string_equal(e[1].hosts[0].host, "www.honest.test");
    assert_int_equal(e[1].hosts[0].count, 60);
    assert_int_equal(e[1].hosts[1].count, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_weightless),
        cmocka_unit_test(test_sites),
        cmocka_unit_test(test_million),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
