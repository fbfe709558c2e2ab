/*
 * sketch.c -- learned templates, simulated: should the zone learn, per
 * host, which blocks recur on many of its pages, and weigh them down?
 *
 * Each site group of the template corpus (template.c) is one host, crawled
 * once in a fixed random order.  The host's table counts, for each block
 * (the hash of its terms, sh_block_info_t.hash), the distinct pages it was
 * seen on: exact counts, so that what is measured is the idea and not a
 * sketch's error (a count-min sketch only adds over-counts).  A block is
 * template once the host has had ACTIVE_AFTER pages and the block was seen
 * on at least MIN_PAGES of them and on MIN_SHARE of all; a template block
 * then weighs 0 (sh_doc_set_block_filter).
 *
 * Measured, under the first configuration and the public key:
 *   drift   every page's fingerprint when it was crawled against the one
 *           it gets from the final table: a re-fetch of an unchanged page
 *           that moves is reported "changed";
 *   nodes   the host's traffic split between two proxies (alternate
 *           pages), each with its own table: the same page's two
 *           fingerprints;
 *   gain    with the final table, the site's pairs of different documents
 *           (main J < 0.5) and of near-duplicates (main J >= 0.9) within
 *           h = 3, against content weighting alone.
 *
 * Output: sketch.md in the output directory, and sketch-drift.tsv: every
 * page that drifted (host, H, hub or not, path), to read which moved.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "sh_block.h"
#include "template.h"

#define ACTIVE_AFTER    100     /* pages of the host before any template */
#define MIN_PAGES       10      /* a template block is on this many pages */
#define MIN_SHARE       0.02    /* ... and on this share of them */

/* The host's table: block hash -> distinct pages (open addressing). */
typedef struct {
    uint64_t *key;
    uint32_t *count;
    size_t    mask, n;
    uint32_t  pages;            /* pages counted */
} table_t;

static void
table_init(table_t *t, size_t cap)
{
    size_t n = 1024;

    while (n < cap * 2) {
        n <<= 1;
    }
    t->key = ev_xcalloc(n, sizeof(*t->key));
    t->count = ev_xcalloc(n, sizeof(*t->count));
    t->mask = n - 1;
    t->n = 0;
    t->pages = 0;
}

static void
table_free(table_t *t)
{
    free(t->key);
    free(t->count);
}

static uint32_t *
table_slot(table_t *t, uint64_t h, int add)
{
    size_t i;

    h = h ? h : 1;
    for (i = h & t->mask; t->key[i] != 0; i = (i + 1) & t->mask) {
        if (t->key[i] == h) {
            return &t->count[i];
        }
    }
    if (!add) {
        return NULL;
    }
    if ((t->n + 1) * 2 > t->mask + 1) {
        ev_die("sketch: table full");
    }
    t->key[i] = h;
    t->n++;
    return &t->count[i];
}

/* Is block h template on this host now? */
static unsigned
filter(void *arg, uint64_t h)
{
    table_t  *t = arg;
    uint32_t *c;

    if (t == NULL || t->pages < ACTIVE_AFTER) {
        return SH_BLOCK_FULL;
    }
    c = table_slot(t, h, 0);
    if (c != NULL && *c >= MIN_PAGES
        && (double) *c >= MIN_SHARE * (double) t->pages)
    {
        return 0;
    }
    return SH_BLOCK_FULL;
}

/* A page's distinct block hashes. */
typedef struct {
    uint64_t *v;
    size_t    n, cap;
} hashes_t;

static void
on_block(void *arg, const sh_block_info_t *b)
{
    hashes_t *h = arg;

    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->v = ev_xrealloc(h->v, h->cap * sizeof(*h->v));
    }
    h->v[h->n++] = b->hash;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

    return (x > y) - (x < y);
}

/* Fingerprint a page with the table as it is (NULL: no table); collect
 * its distinct block hashes into `blocks` if not NULL. */
static sh_result_t
fingerprint(sh_config_t *cfg, const char *path, table_t *t, hashes_t *blocks)
{
    static char  buf[1 << 16];
    sh_doc_t    *doc = sh_doc_new(cfg, NULL);
    sh_result_t  r;
    FILE        *f = fopen(path, "rb");
    size_t       n, i, j;

    if (doc == NULL || f == NULL) {
        ev_die("%s: %s", path, f == NULL ? strerror(errno)
                                         : "out of memory");
    }
    if (blocks != NULL) {
        blocks->n = 0;
        sh_doc_set_block_hook(doc, on_block, blocks);
    }
    sh_doc_set_block_filter(doc, filter, t);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        if (sh_doc_feed(doc, buf, n) != 0) {
            ev_die("%s: extraction failed", path);
        }
    }
    fclose(f);
    if (sh_doc_finish(doc, &r) != 0) {
        ev_die("%s: extraction failed", path);
    }
    sh_doc_free(doc);
    if (blocks != NULL && blocks->n > 0) {
        qsort(blocks->v, blocks->n, sizeof(*blocks->v), cmp_u64);
        for (i = j = 1; i < blocks->n; i++) {
            if (blocks->v[i] != blocks->v[j - 1]) {
                blocks->v[j++] = blocks->v[i];
            }
        }
        blocks->n = j;
    }
    return r;
}

static void
table_add(table_t *t, const hashes_t *h)
{
    size_t i;

    for (i = 0; i < h->n; i++) {
        (*table_slot(t, h->v[i], 1))++;
    }
    t->pages++;
}

static unsigned
fp_dist(const sh_result_t *a, const sh_result_t *b)
{
    if (a->status != SH_STATUS_OK || b->status != SH_STATUS_OK) {
        return a->status == b->status ? 0 : SH_BITS + 1;
    }
    if (sh_sketch_veto(&a->sketches, &b->sketches)) {
        return SH_BITS + 1;
    }
    return sh_distance(a->hash, b->hash);
}

typedef struct {
    uint64_t n, moved, over3, sum;
} drift_t;

static void
drift_add(drift_t *d, unsigned h)
{
    d->n++;
    d->moved += h > 0;
    d->over3 += h > 3;
    d->sum += h > SH_BITS ? SH_BITS : h;
}

static void
drift_print(FILE *f, const drift_t *d)
{
    fprintf(f, " %llu | %.1f%% | %.1f%% | %.2f |", (unsigned long long) d->n,
            d->n ? 100.0 * (double) d->moved / (double) d->n : 0.0,
            d->n ? 100.0 * (double) d->over3 / (double) d->n : 0.0,
            d->n ? (double) d->sum / (double) d->n : 0.0);
}

/* A fixed random order: xorshift, seeded per group. */
static void
shuffle(uint32_t *v, size_t n, uint64_t seed)
{
    size_t i, j;
    uint32_t x;

    for (i = n; i > 1; i--) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        j = (size_t) (seed % i);
        x = v[i - 1];
        v[i - 1] = v[j];
        v[j] = x;
    }
}

void
ev_sketch_report(const ev_run_t *run)
{
    const ev_template_t *t = run->tmpl;
    sh_options_t         opts;
    sh_config_t         *cfg;
    char                 err[512], path[4096];
    FILE                *f, *moved;
    unsigned             g;
    size_t               i, k;
    double               t0 = ev_now();

    if (t == NULL || t->nsite == 0) {
        return;
    }
    opts = run->configs[0].opts;
    opts.seed = NULL;
    opts.seed_len = 0;
    cfg = sh_config_new(&opts, err, sizeof(err));
    if (cfg == NULL) {
        ev_die("sketch: %s", err);
    }
    snprintf(path, sizeof(path), "%s/sketch-drift.tsv", run->out_dir);
    moved = fopen(path, "w");
    if (moved == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    snprintf(path, sizeof(path), "%s/sketch.md", run->out_dir);
    f = fopen(path, "w");
    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    fprintf(f, "Configuration `%s`, public key; a block is template after "
            "%d pages of the host, when on at least %d pages and %.0f%% of "
            "them; template blocks weigh 0.\n\n", run->configs[0].name,
            ACTIVE_AFTER, MIN_PAGES, 100.0 * MIN_SHARE);
    fprintf(f, "| host | pages | template blocks at the end | drift: pages "
            "| moved | moved > 3 | mean H | drift after %d pages: pages "
            "| moved | moved > 3 | mean H | two nodes: pages | differ "
            "| differ > 3 | mean H | different docs (J<0.5) within h=3: "
            "without, with | near-dups (J>=0.9) within h=3: without, with "
            "|\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
            "|---:|---:|---:|---:|---:|---:|\n", ACTIVE_AFTER);

    for (g = 0; g < t->ngroups; g++) {
        uint32_t    *order, *pos;
        hashes_t    *blocks;
        sh_result_t *now, *fin, *plain, *node[2];
        table_t      host, half[2];
        drift_t      all, late, nodes;
        size_t       n = 0, ntemplate = 0;
        uint64_t     apart[2] = { 0, 0 }, same[2] = { 0, 0 }, nsame = 0;
        uint64_t     napart = 0;

        if (t->group_kind[g] != TP_SITE) {
            continue;
        }
        order = ev_xmalloc(t->nsite * sizeof(*order));
        for (i = 0; i < t->nsite; i++) {
            if (t->site_group[i] == g) {
                order[n++] = t->site[i];
            }
        }
        shuffle(order, n, 0x736b65746368ULL + g);
        pos = ev_xmalloc(t->nmp * sizeof(*pos));
        memset(pos, 0xff, t->nmp * sizeof(*pos));
        blocks = ev_xcalloc(n, sizeof(*blocks));
        now = ev_xcalloc(n, sizeof(*now));
        fin = ev_xcalloc(n, sizeof(*fin));
        plain = ev_xcalloc(n, sizeof(*plain));
        node[0] = ev_xcalloc(n, sizeof(*now));
        node[1] = ev_xcalloc(n, sizeof(*now));
        table_init(&host, 1 << 20);
        table_init(&half[0], 1 << 20);
        table_init(&half[1], 1 << 20);
        memset(&all, 0, sizeof(all));
        memset(&late, 0, sizeof(late));
        memset(&nodes, 0, sizeof(nodes));

        /* The crawl: each page fingerprinted with the table as it is,
         * then counted; the two nodes take alternate pages. */
        for (i = 0; i < n; i++) {
            pos[order[i]] = (uint32_t) i;
            now[i] = fingerprint(cfg, t->mp[order[i]].path, &host,
                                 &blocks[i]);
            node[i % 2][i] = fingerprint(cfg, t->mp[order[i]].path,
                                         &half[i % 2], NULL);
            table_add(&host, &blocks[i]);
            table_add(&half[i % 2], &blocks[i]);
        }
        for (k = 0; k <= host.mask; k++) {
            ntemplate += host.key[k] != 0
                         && filter(&host, host.key[k]) == 0;
        }
        /* The final tables: every page again, on each. */
        for (i = 0; i < n; i++) {
            const char *p = t->mp[order[i]].path;
            unsigned    h;

            fin[i] = fingerprint(cfg, p, &host, NULL);
            plain[i] = fingerprint(cfg, p, NULL, NULL);
            node[(i + 1) % 2][i] = fingerprint(cfg, p, &half[(i + 1) % 2],
                                               NULL);
            h = fp_dist(&now[i], &fin[i]);
            drift_add(&all, h);
            if (h > 0) {
                fprintf(moved, "%s\t%u\t%s\t%s\n", t->groups[g], h,
                        fin[i].hub ? "hub" : "-", p);
            }
            if (i >= ACTIVE_AFTER) {
                drift_add(&late, h);
            }
            drift_add(&nodes, fp_dist(&node[0][i], &node[1][i]));
        }
        for (i = 0; i < t->npairs; i++) {
            const tpair_t *p = &t->pairs[i];
            uint32_t       a, b;

            if (p->kind != TP_SITE || p->group != g) {
                continue;
            }
            a = pos[p->a];
            b = pos[p->b];
            if (p->jaccard < TH_APART) {
                napart++;
                apart[0] += fp_dist(&plain[a], &plain[b]) <= 3;
                apart[1] += fp_dist(&fin[a], &fin[b]) <= 3;
            } else if (p->jaccard >= TH_SAME) {
                nsame++;
                same[0] += fp_dist(&plain[a], &plain[b]) <= 3;
                same[1] += fp_dist(&fin[a], &fin[b]) <= 3;
            }
        }
        fprintf(f, "| %s | %zu | %zu |", t->groups[g], n, ntemplate);
        drift_print(f, &all);
        drift_print(f, &late);
        drift_print(f, &nodes);
        fprintf(f, " %llu, %llu of %llu | %llu, %llu of %llu |\n",
                (unsigned long long) apart[0], (unsigned long long) apart[1],
                (unsigned long long) napart, (unsigned long long) same[0],
                (unsigned long long) same[1], (unsigned long long) nsame);

        for (i = 0; i < n; i++) {
            free(blocks[i].v);
        }
        free(blocks);
        free(now);
        free(fin);
        free(plain);
        free(node[0]);
        free(node[1]);
        free(order);
        free(pos);
        table_free(&host);
        table_free(&half[0]);
        table_free(&half[1]);
    }
    if (ferror(f) | fclose(f) | ferror(moved) | fclose(moved)) {
        ev_die("%s: write error", path);
    }
    sh_config_free(cfg);
    fprintf(stderr, "sh-eval: learned templates simulated in %.1f s\n",
            ev_now() - t0);
}
