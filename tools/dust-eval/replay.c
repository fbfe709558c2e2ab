/*
 * dust-replay -- a crawl of `make dust-eval` given again to the DUST learner
 * alone, in a second: every URL the crawl fetched (the proxy's log), in
 * order, with the document the site's ground truth says it is.  It prints
 * each rule change as it happens and, at the end, every candidate whose
 * host or scope holds --pattern: the evidence the crawl's fetches gave each
 * rule, and what the sequential test still needed (docs/DUST.md, "Replaying
 * a crawl").
 *
 * What it leaves out: no prediction is made, so the learner sees exactly
 * the URLs the real crawl fetched (those a prediction answered gave it
 * nothing there either); there is no fingerprint, so a document is the
 * truth's, not the module's (two documents the module merged stay two).
 *
 *   dust-replay [--precision P] [--pattern TEXT] [--near SHARE] GEN
 *               PROXY_LOG
 *
 * --near 0.5: only the rules not on at the end whose test reached half
 * of what it needs or more (the rules the crawl almost learned).
 *
 * GEN is a site's generated directory (truth.tsv: kind, path and query,
 * document; hosts.tsv: host, kind); PROXY_LOG the proxy.log of one run
 * (tools/dust-eval/proxy.conf's format: a line per request, the upstream's
 * status "-" when nothing was fetched).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "sh_dust.h"
#include "sh_site.h"

#define LINE_MAX_BYTES  16384
#define HOSTS_MAX       64

typedef struct {
    uint64_t key;               /* XXH3 of "kind\tpath": 0 is free */
    uint64_t doc;               /* XXH3 of the document's name, never 0 */
} slot_t;

typedef struct {
    slot_t *slot;
    size_t  mask;
} truth_t;

typedef struct {
    char name[256];
    char kind[16];
} host_t;

static uint64_t
key_of(const char *kind, const char *path, size_t plen)
{
    char   buf[LINE_MAX_BYTES + 32];
    size_t kl = strlen(kind);

    if (kl + 1 + plen > sizeof(buf)) {
        plen = sizeof(buf) - kl - 1;
    }
    memcpy(buf, kind, kl);
    buf[kl] = '\t';
    memcpy(buf + kl + 1, path, plen);
    return XXH3_64bits(buf, kl + 1 + plen) | 1;
}

static slot_t *
truth_slot(truth_t *t, uint64_t key)
{
    size_t i = key & t->mask;

    while (t->slot[i].key != 0 && t->slot[i].key != key) {
        i = (i + 1) & t->mask;
    }
    return &t->slot[i];
}

/* truth.tsv into an open-addressing table of 2^20 slots (sites hold tens
 * of thousands of URLs). */
static int
truth_load(truth_t *t, const char *path)
{
    char   line[LINE_MAX_BYTES];
    size_t n = 0;
    FILE  *f = fopen(path, "r");

    if (f == NULL) {
        perror(path);
        return -1;
    }
    t->mask = (1u << 20) - 1;
    t->slot = calloc(t->mask + 1, sizeof(slot_t));
    if (t->slot == NULL) {
        fclose(f);
        fprintf(stderr, "dust-replay: out of memory\n");
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (++n > t->mask / 2) {
            fclose(f);
            fprintf(stderr, "dust-replay: %s: more than %zu URLs\n", path,
                    t->mask / 2);
            return -1;
        }
        char   *kind = strtok(line, "\t"), *url = strtok(NULL, "\t");
        char   *doc = strtok(NULL, "\t\n");
        slot_t *s;

        if (kind == NULL || url == NULL || doc == NULL) {
            continue;
        }
        s = truth_slot(t, key_of(kind, url, strlen(url)));
        s->key = key_of(kind, url, strlen(url));
        s->doc = XXH3_64bits(doc, strlen(doc)) | 1;
    }
    fclose(f);
    return 0;
}

static int
hosts_load(host_t *h, const char *path)
{
    char  line[512];
    int   n = 0;
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        perror(path);
        return -1;
    }
    while (n < HOSTS_MAX && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%255s %15s", h[n].name, h[n].kind) == 2) {
            n++;
        }
    }
    fclose(f);
    return n;
}

/* The truth's kind of a URL's host, or NULL. */
static const char *
kind_of(const host_t *h, int nh, const char *host, size_t len)
{
    int i;

    for (i = 0; i < nh; i++) {
        if (strlen(h[i].name) == len && memcmp(h[i].name, host, len) == 0) {
            return h[i].kind;
        }
    }
    return NULL;
}

static void
changes(sh_dust_t *d, uint64_t *seq, unsigned long request)
{
    sh_dust_change_t c[SH_DUST_CHANGES];
    size_t           n, i;

    n = sh_dust_changes(d, seq, c, SH_DUST_CHANGES);
    for (i = 0; i < n; i++) {
        const sh_dust_rule_info_t *r = &c[i].rule;
        int on = r->state == SH_DUST_ACTIVE || r->state == SH_DUST_PINNED;

        printf("%9lu  %-3s %s(%s)  %s %s  %u for, %u against\n", request,
               on ? "on" : "off", sh_dust_kind_name(r->kind), r->arg,
               r->host, r->pattern, r->support, r->against);
    }
}

typedef struct {
    const char *pattern;        /* in the host or the scope; "": any */
    double      near;           /* > 0: only rules not on whose test is at
                                   this share of its need or more */
} filter_t;

static int
candidate(const sh_dust_rule_info_t *r, void *arg)
{
    const filter_t *f = arg;
    int             on = r->state == SH_DUST_ACTIVE
                         || r->state == SH_DUST_PINNED;

    if (f->near > 0 && (on || r->need <= 0 || r->llr < f->near * r->need
                        || r->pattern[0] == '*' || r->waiting))
    {
        return 0;               /* on, far, a host's record, or waiting */
    }
    if (strstr(r->host, f->pattern) != NULL
        || strstr(r->pattern, f->pattern) != NULL)
    {
        printf("  %-9s %s(%s)  %s %s  %u for, %u against, test %.2f of "
               "%.2f\n", sh_dust_state_name(r->state),
               sh_dust_kind_name(r->kind), r->arg, r->host, r->pattern,
               r->support, r->against, r->llr, r->need);
    }
    return 0;
}

/* One log line: 1 and the URL and the document when it was fetched and
 * the truth knows it, else 0. */
static int
fetched(char *line, const host_t *hosts, int nh, truth_t *t, char **url,
        uint64_t *doc, unsigned long *unknown)
{
    char       *f[8], *s = line, *p;
    const char *kind;
    int         i;
    slot_t     *sl;

    for (i = 0; i < 8 && s != NULL; i++) {
        f[i] = s;
        s = strchr(s, '\t');
        if (s != NULL) {
            *s++ = '\0';
        }
    }
    if (i < 7 || strcmp(f[0], "A") != 0 || strcmp(f[5], "-") == 0
        || (p = strstr(f[6], "://")) == NULL)
    {
        return 0;
    }
    p += 3;
    s = strchr(p, '/');
    if (s == NULL || (kind = kind_of(hosts, nh, p, (size_t) (s - p))) == NULL)
    {
        (*unknown)++;
        return 0;
    }
    sl = truth_slot(t, key_of(kind, s, strlen(s)));
    if (sl->key == 0) {
        (*unknown)++;
        return 0;
    }
    *url = f[6];
    *doc = sl->doc;
    return 1;
}

int
main(int argc, char **argv)
{
    static const char secret[] = "dust-replay";
    const char    *gen, *log;
    filter_t       flt = { "", 0 };
    char           path[4096], line[LINE_MAX_BYTES], err[256], *url;
    host_t         hosts[HOSTS_MAX];
    sh_dust_opts_t o;
    sh_dust_t     *d;
    truth_t        t = { NULL, 0 };
    FILE          *f = NULL;
    void          *mem = NULL;
    size_t         size;
    uint64_t       doc, seq = 0;
    unsigned long  request = 0, observed = 0, unknown = 0;
    int            nh, a = 1, rc = 2;

    sh_dust_opts_init(&o);
    for (; a + 1 < argc && strncmp(argv[a], "--", 2) == 0; a += 2) {
        if (strcmp(argv[a], "--pattern") == 0) {
            flt.pattern = argv[a + 1];
        } else if (strcmp(argv[a], "--near") == 0) {
            flt.near = atof(argv[a + 1]);
        } else if (strcmp(argv[a], "--precision") == 0) {
            o.min_precision = atof(argv[a + 1]);
        } else {
            break;
        }
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: dust-replay [--precision P] [--pattern TEXT]"
                " [--near SHARE] GEN PROXY_LOG\n");
        return 2;
    }
    gen = argv[a];
    log = argv[a + 1];

    snprintf(path, sizeof(path), "%s/hosts.tsv", gen);
    nh = hosts_load(hosts, path);
    snprintf(path, sizeof(path), "%s/truth.tsv", gen);
    if (nh < 0 || truth_load(&t, path) != 0) {
        goto done;
    }
    /* hosts join only within one site, as in the module */
    if (sh_site_load(NULL, err, sizeof(err)) != 0) {
        fprintf(stderr, "dust-replay: %s\n", err);
        goto done;
    }
    size = sh_dust_region_size(o.hosts, o.candidates, o.evidence_slots,
                               o.canonical_slots);
    mem = aligned_alloc(64, (size + 63) & ~(size_t) 63);
    d = mem ? sh_dust_init(mem, size, secret, sizeof(secret) - 1, &o, err,
                           sizeof(err))
            : NULL;
    if (d == NULL) {
        fprintf(stderr, "dust-replay: %s\n", mem ? err : "out of memory");
        goto done;
    }
    if ((f = fopen(log, "r")) == NULL) {
        perror(log);
        goto done;
    }

    printf("  request  rule  scope  pairs\n");
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] != 'A') {
            continue;
        }
        request++;
        if (fetched(line, hosts, nh, &t, &url, &doc, &unknown)) {
            observed++;
            if (sh_dust_observe(d, url, strlen(url), doc, request) > 0) {
                changes(d, &seq, request);
            }
        }
    }

    printf("%lu requests, %lu fetched and observed, %lu fetched outside the"
           " truth\n", request, observed, unknown);
    if (flt.near > 0) {
        printf("rules not on at the end, at %.0f%% of their test's need or "
               "more%s%s:\n", 100 * flt.near, *flt.pattern ? ", matching "
               : "", flt.pattern);
    } else {
        printf("candidates at the end%s%s:\n", *flt.pattern ? " matching "
               : "", flt.pattern);
    }
    sh_dust_foreach_rule(d, 0, 1, candidate, &flt);
    rc = 0;

done:
    if (f != NULL) {
        fclose(f);
    }
    sh_site_unload();
    free(t.slot);
    free(mem);
    return rc;
}
