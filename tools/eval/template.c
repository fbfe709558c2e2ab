/*
 * template.c -- the template corpus: the same documents under two
 * templates, and different documents under one (content weighting,
 * sh_block.h).
 *
 *   --template FILE  lines "GROUP<TAB>XPATH<TAB>PAGE_A<TAB>PAGE_B": one
 *                    document rendered by two versions of its generator,
 *                    whose templates differ;
 *   --site FILE      lines "GROUP<TAB>XPATH<TAB>PAGE": every pair of pages
 *                    within a group, different documents of one site under
 *                    one template.
 *
 * The ground truth here is the Jaccard of the pages' MAIN-CONTENT text
 * (5-word shingles, as for the whole-page truth), not of the whole page:
 * two renderings of one document should match whatever their templates
 * hold, and two documents of one site should not match because their
 * templates agree.  The main content of a page is the text of the nodes
 * XPATH selects: for each generator, the element its own templates put
 * the document's text in (rustdoc's section#main-content, mdbook's
 * div#content), found by reading the generator's output.  It is selected
 * through libxml2's DOM parser and XPath, not through the library's SAX
 * extractor, and with rules that name one generator each rather than the
 * generic rules of sh_block.c: the measurement does not judge the
 * classifier by its own answers.  The selected nodes are serialised and
 * tokenised as the whole-page truth is (ev_truth_of).
 *
 * Pages whose main content has fewer than EV_MIN_SHINGLES distinct
 * shingles (redirect stubs) are left out of every pair.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/HTMLparser.h>
#include <libxml/HTMLtree.h>
#include <libxml/xpath.h>

#include "eval.h"
#include "sh_block.h"
#include "template.h"

static unsigned
tgroup(ev_template_t *t, const char *name, uint16_t kind)
{
    unsigned i;

    for (i = 0; i < t->ngroups; i++) {
        if (strcmp(t->groups[i], name) == 0 && t->group_kind[i] == kind) {
            return i;
        }
    }
    if (t->ngroups == EV_GROUPS_MAX) {
        ev_die("too many template groups (at most %d)", EV_GROUPS_MAX);
    }
    t->groups[t->ngroups] = ev_xstrdup(name);
    t->group_kind[t->ngroups] = kind;
    return t->ngroups++;
}

/* The main-text entry of a page, created on first sight. */
static uint32_t
tpage(ev_run_t *run, ev_template_t *t, const char *path, const char *xpath)
{
    uint32_t p = ev_page(run, path);
    size_t   i;

    /* Few thousand entries, read once: a linear search is enough. */
    for (i = t->nmp; i > 0; i--) {
        if (t->page[i - 1] == p) {
            if (strcmp(t->xpath[i - 1], xpath) != 0) {
                ev_die("%s: listed with two XPaths", path);
            }
            return (uint32_t) (i - 1);
        }
    }
    if (t->nmp == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->mp = ev_xrealloc(t->mp, t->cap * sizeof(*t->mp));
        t->page = ev_xrealloc(t->page, t->cap * sizeof(*t->page));
        t->xpath = ev_xrealloc(t->xpath, t->cap * sizeof(*t->xpath));
    }
    memset(&t->mp[t->nmp], 0, sizeof(t->mp[0]));
    t->mp[t->nmp].path = run->pages[p].path;
    t->page[t->nmp] = p;
    t->xpath[t->nmp] = ev_xstrdup(xpath);
    return (uint32_t) t->nmp++;
}

static void
add_tpair(ev_template_t *t, uint32_t a, uint32_t b, uint16_t kind,
          uint16_t group)
{
    tpair_t *p;

    if (t->npairs == t->cap_pairs) {
        t->cap_pairs = t->cap_pairs ? t->cap_pairs * 2 : 4096;
        t->pairs = ev_xrealloc(t->pairs, t->cap_pairs * sizeof(*t->pairs));
    }
    p = &t->pairs[t->npairs++];
    p->a = a;
    p->b = b;
    p->kind = kind;
    p->group = group;
    p->jaccard = -1.0f;
}

void
ev_template_read(ev_run_t *run, const char *path, int site)
{
    ev_template_t *t;
    FILE          *f = fopen(path, "r");
    char          *line = NULL, *fld[4];
    size_t         cap = 0;
    unsigned       lineno = 0, g;
    int            want = site ? 3 : 4;

    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    if (run->tmpl == NULL) {
        run->tmpl = ev_xcalloc(1, sizeof(*run->tmpl));
    }
    t = run->tmpl;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        if (line[0] == '\n' || line[0] == '#') {
            continue;
        }
        if (ev_split_tabs(line, fld, 4) != want) {
            ev_die("%s:%u: expected GROUP<TAB>XPATH<TAB>PAGE%s", path,
                   lineno, site ? "" : "<TAB>PAGE");
        }
        g = tgroup(t, fld[0], site ? TP_SITE : TP_TEMPLATE);
        if (site) {
            if (t->nsite == t->cap_site) {
                t->cap_site = t->cap_site ? t->cap_site * 2 : 1024;
                t->site = ev_xrealloc(t->site,
                                      t->cap_site * sizeof(*t->site));
                t->site_group = ev_xrealloc(t->site_group, t->cap_site
                                            * sizeof(*t->site_group));
            }
            t->site[t->nsite] = tpage(run, t, fld[2], fld[1]);
            t->site_group[t->nsite++] = (uint16_t) g;
        } else {
            add_tpair(t, tpage(run, t, fld[2], fld[1]),
                      tpage(run, t, fld[3], fld[1]), TP_TEMPLATE,
                      (uint16_t) g);
        }
    }
    free(line);
    fclose(f);
}

/* ---- Main-content truth. ------------------------------------------------ */

typedef struct {
    ev_template_t *t;
    sh_options_t   opts;
    atomic_size_t  next;
    atomic_int     failed;
    char           err[1024];
} mjob_t;

/* The serialised HTML of every node the XPath selects, each closed off by
 * a block boundary. */
static char *
main_html(const char *path, const char *xpath, size_t *len, char *err,
          size_t errlen)
{
    htmlDocPtr         doc;
    xmlXPathContextPtr xc;
    xmlXPathObjectPtr  r;
    xmlBufferPtr       buf;
    char              *out;
    int                i;

    doc = htmlReadFile(path, "utf-8", HTML_PARSE_NOERROR
                                      | HTML_PARSE_NOWARNING
                                      | HTML_PARSE_NONET
                                      | HTML_PARSE_RECOVER);
    if (doc == NULL) {
        snprintf(err, errlen, "%s: cannot parse", path);
        return NULL;
    }
    xc = xmlXPathNewContext(doc);
    r = xc ? xmlXPathEvalExpression((const xmlChar *) xpath, xc) : NULL;
    buf = xmlBufferCreate();
    if (r == NULL || buf == NULL) {
        snprintf(err, errlen, "%s: XPath %s fails", path, xpath);
        xmlBufferFree(buf);
        xmlXPathFreeObject(r);
        xmlXPathFreeContext(xc);
        xmlFreeDoc(doc);
        return NULL;
    }
    for (i = 0; r->nodesetval != NULL && i < r->nodesetval->nodeNr; i++) {
        htmlNodeDump(buf, doc, r->nodesetval->nodeTab[i]);
        xmlBufferCCat(buf, "<p>\n");
    }
    *len = (size_t) xmlBufferLength(buf);
    out = ev_xmalloc(*len + 1);
    memcpy(out, xmlBufferContent(buf), *len);
    out[*len] = '\0';
    xmlBufferFree(buf);
    xmlXPathFreeObject(r);
    xmlXPathFreeContext(xc);
    xmlFreeDoc(doc);
    return out;
}

static void *
mworker(void *arg)
{
    mjob_t      *job = arg;
    char         err[1024];
    sh_config_t *cfg = sh_config_new(&job->opts, err, sizeof(err));
    size_t       i, len;
    char        *html;
    int          expect = 0;

    if (cfg == NULL) {
        if (atomic_compare_exchange_strong(&job->failed, &expect, 1)) {
            snprintf(job->err, sizeof(job->err), "%s", err);
        }
        return NULL;
    }
    while (!atomic_load(&job->failed)) {
        i = atomic_fetch_add(&job->next, 1);
        if (i >= job->t->nmp) {
            break;
        }
        html = main_html(job->t->mp[i].path, job->t->xpath[i], &len, err,
                         sizeof(err));
        if (html == NULL) {
            if (atomic_compare_exchange_strong(&job->failed, &expect, 1)) {
                snprintf(job->err, sizeof(job->err), "%s", err);
            }
            break;
        }
        ev_truth_of(cfg, html, len, &job->t->mp[i]);
        free(html);
    }
    sh_config_free(cfg);
    return NULL;
}

static int
usable(const ev_template_t *t, uint32_t i)
{
    return t->mp[i].nshingles >= EV_MIN_SHINGLES;
}

void
ev_template_truth(ev_run_t *run)
{
    ev_template_t *t = run->tmpl;
    pthread_t      tid[64];
    mjob_t         job;
    unsigned       n = run->threads < 1 ? 1 : run->threads, k, g;
    size_t         i, j, nold;
    uint32_t      *idx, *inter;
    double         t0 = ev_now();

    if (t == NULL) {
        return;
    }
    memset(&job, 0, sizeof(job));
    job.t = t;
    /* The truth's text, as the whole-page truth takes it: the first
     * configuration's ignore patterns, no content weighting. */
    job.opts = run->configs[0].opts;
    job.opts.content = SH_CONTENT_OFF;
    job.opts.seed = NULL;
    job.opts.seed_len = 0;
    job.opts.idf_file = NULL;
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, 0);
    n = n > 64 ? 64 : n;
    for (k = 0; k < n; k++) {
        if (pthread_create(&tid[k], NULL, mworker, &job) != 0) {
            ev_die("cannot start thread %u", k);
        }
    }
    for (k = 0; k < n; k++) {
        pthread_join(tid[k], NULL);
    }
    if (atomic_load(&job.failed)) {
        ev_die("main-content truth: %s", job.err);
    }

    /* Template pairs: drop those with a stub; Jaccard by merging. */
    nold = t->npairs;
    t->listed[TP_TEMPLATE] = nold;
    for (i = j = 0; i < nold; i++) {
        if (usable(t, t->pairs[i].a) && usable(t, t->pairs[i].b)) {
            t->pairs[i].jaccard = (float) ev_jaccard(&t->mp[t->pairs[i].a],
                                                     &t->mp[t->pairs[i].b]);
            t->pairs[j++] = t->pairs[i];
        } else {
            t->dropped[TP_TEMPLATE]++;
        }
    }
    t->npairs = j;

    /* Site pairs: every pair within a group, from one inverted index. */
    idx = ev_xmalloc((t->nsite + 1) * sizeof(*idx));
    t->listed[TP_SITE] = t->nsite;
    for (g = 0; g < t->ngroups; g++) {
        size_t m = 0, a, b;

        if (t->group_kind[g] != TP_SITE) {
            continue;
        }
        for (i = 0; i < t->nsite; i++) {
            if (t->site_group[i] != g) {
                continue;
            }
            if (usable(t, t->site[i])) {
                idx[m++] = t->site[i];
            } else {
                t->dropped[TP_SITE]++;
            }
        }
        if (m < 2) {
            continue;
        }
        inter = ev_intersections(t->mp, idx, m);
        for (a = 0; a < m; a++) {
            for (b = a + 1; b < m; b++) {
                uint32_t x = inter[a * m + b];

                add_tpair(t, idx[a], idx[b], TP_SITE, (uint16_t) g);
                t->pairs[t->npairs - 1].jaccard =
                    (float) ((double) x / ((double) t->mp[idx[a]].nshingles
                                           + t->mp[idx[b]].nshingles - x));
            }
        }
        free(inter);
    }
    free(idx);
    fprintf(stderr, "sh-eval: main-content truth: %zu pages, %zu pairs in "
            "%.1f s\n", t->nmp, t->npairs, ev_now() - t0);
}

/* ---- Report. ------------------------------------------------------------ */


static unsigned
dist(const ev_config_t *c, unsigned seed, uint32_t a, uint32_t b)
{
    const ev_fp_t *x = &c->fp[seed][a], *y = &c->fp[seed][b];

    if (x->status != SH_STATUS_OK || y->status != SH_STATUS_OK
        || ev_vetoed(x, y))
    {
        return SH_BITS + 1;
    }
    return sh_distance(x->hash, y->hash);
}

typedef struct {
    uint64_t n, within[EV_HMAX + 1];
} count_t;

static void
count_add(count_t *c, unsigned d)
{
    unsigned h;

    c->n++;
    for (h = d; h <= EV_HMAX; h++) {
        c->within[h]++;
    }
}

static void
fmt_share(char *buf, size_t n, const count_t *c, unsigned h)
{
    if (c->n == 0) {
        snprintf(buf, n, "-");
    } else {
        snprintf(buf, n, "%.1f%%", 100.0 * (double) c->within[h]
                                   / (double) c->n);
    }
}

/* template-NAME.tsv: every same-document pair (main J >= TH_SAME) and
 * every site pair of different documents (main J < TH_APART) within h = 3
 * under some key, with the distance under each key: where to start when a
 * figure moves. */
static void
write_pairs(const ev_run_t *run, const ev_config_t *c)
{
    const ev_template_t *t = run->tmpl;
    char                 path[4096];
    FILE                *f;
    size_t               i;
    unsigned             s, d, near;

    snprintf(path, sizeof(path), "%s/template-%s.tsv", run->out_dir,
             c->name);
    f = fopen(path, "w");
    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    fprintf(f, "# group\tmain J\tpage a\tpage b\tH per key\n");
    for (i = 0; i < t->npairs; i++) {
        const tpair_t *p = &t->pairs[i];

        near = 0;
        for (s = 0; s < run->nseeds; s++) {
            near |= dist(c, s, t->page[p->a], t->page[p->b]) <= 3;
        }
        if (p->kind == TP_TEMPLATE ? p->jaccard < TH_SAME
                                   : !near || p->jaccard >= TH_APART) {
            continue;
        }
        fprintf(f, "%s\t%.3f\t%s\t%s\t", t->groups[p->group], p->jaccard,
                t->mp[p->a].path, t->mp[p->b].path);
        for (s = 0; s < run->nseeds; s++) {
            d = dist(c, s, t->page[p->a], t->page[p->b]);
            fprintf(f, "%s%u", s ? "," : "", d);
        }
        fputc('\n', f);
    }
    if (ferror(f) | fclose(f)) {
        ev_die("%s: write error", path);
    }
}

void
ev_template_report(const ev_run_t *run)
{
    const ev_template_t *t = run->tmpl;
    char                 path[4096];
    FILE                *f;
    size_t               i, k;
    unsigned             g, s;

    if (t == NULL) {
        return;
    }
    snprintf(path, sizeof(path), "%s/template.md", run->out_dir);
    f = fopen(path, "w");
    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }

    fprintf(f, "| pairs | measured | main J>=%.1f | main J<%.1f |\n",
            TH_SAME, TH_APART);
    fprintf(f, "|---|---:|---:|---:|\n");
    for (g = 0; g < t->ngroups; g++) {
        uint64_t n = 0, hi = 0, lo = 0;

        for (i = 0; i < t->npairs; i++) {
            if (t->pairs[i].group == g) {
                n++;
                hi += t->pairs[i].jaccard >= TH_SAME;
                lo += t->pairs[i].jaccard < TH_APART;
            }
        }
        fprintf(f, "| %s %s | %llu | %llu | %llu |\n",
                t->group_kind[g] == TP_SITE ? "one template:"
                                            : "two templates:",
                t->groups[g], (unsigned long long) n,
                (unsigned long long) hi, (unsigned long long) lo);
    }
    fprintf(f, "\nTemplate pairs listed %zu, left out %zu; site pages "
            "listed %zu, left out %zu (main content under %d distinct "
            "shingles).\n\n", t->listed[TP_TEMPLATE],
            t->dropped[TP_TEMPLATE], t->listed[TP_SITE],
            t->dropped[TP_SITE], EV_MIN_SHINGLES);

    /* One row per configuration: the template groups' recall at h = 3, 5
     * and 8, the site groups' false matches at h = 3, and the whole-page
     * figures of the other populations for comparison. */
    fprintf(f, "| config | options | two templates, all: J>=%.1f within "
            "h=3 / 5 / 8 |", TH_SAME);
    for (g = 0; g < t->ngroups; g++) {
        if (t->group_kind[g] == TP_TEMPLATE) {
            fprintf(f, " %s: J>=%.1f within h=3 / 5 / 8 |", t->groups[g],
                    TH_SAME);
        }
    }
    for (g = 0; g < t->ngroups; g++) {
        if (t->group_kind[g] == TP_SITE) {
            fprintf(f, " %s: J<%.1f within h=3 / 5 / 8; lowest J within "
                    "h=3 |", t->groups[g], TH_APART);
        }
    }
    fprintf(f, " rust-doc aligned: J>=0.9 within h=3 | prose within h=3 "
            "|\n|---|---|---:|");
    for (g = 0; g < t->ngroups; g++) {
        fprintf(f, "---:|");
    }
    fprintf(f, "---:|---:|\n");

    for (k = 0; k < run->nconfigs; k++) {
        const ev_config_t *c = &run->configs[k];
        count_t            grp[EV_GROUPS_MAX], al, pr, both;
        double             minj[EV_GROUPS_MAX];
        unsigned           dd, h;
        char               a[32], b[32], d[32];

        memset(grp, 0, sizeof(grp));
        for (g = 0; g < EV_GROUPS_MAX; g++) {
            minj[g] = 2.0;
        }
        memset(&al, 0, sizeof(al));
        memset(&pr, 0, sizeof(pr));
        for (s = 0; s < run->nseeds; s++) {
            for (i = 0; i < t->npairs; i++) {
                const tpair_t *p = &t->pairs[i];
                int            counted = p->kind == TP_TEMPLATE
                                         ? p->jaccard >= TH_SAME
                                         : p->jaccard < TH_APART;

                dd = dist(c, s, t->page[p->a], t->page[p->b]);
                if (counted) {
                    count_add(&grp[p->group], dd);
                }
                if (p->kind == TP_SITE && dd <= 3
                    && p->jaccard < minj[p->group])
                {
                    minj[p->group] = p->jaccard;
                }
            }
            for (i = 0; i < run->npairs; i++) {
                const ev_pair_t *p = &run->pairs[i];

                if (p->kind == EV_ALIGNED && p->jaccard >= 0.9) {
                    count_add(&al, dist(c, s, p->a, p->b));
                } else if (p->kind == EV_PROSE) {
                    count_add(&pr, dist(c, s, p->a, p->b));
                }
            }
        }
        fprintf(f, "| %s | %s |", c->name, c->spec[0] ? c->spec
                                                      : "(defaults)");
        memset(&both, 0, sizeof(both));
        for (g = 0; g < t->ngroups; g++) {
            if (t->group_kind[g] == TP_TEMPLATE) {
                both.n += grp[g].n;
                for (h = 0; h <= EV_HMAX; h++) {
                    both.within[h] += grp[g].within[h];
                }
            }
        }
        fmt_share(a, sizeof(a), &both, 3);
        fmt_share(b, sizeof(b), &both, 5);
        fmt_share(d, sizeof(d), &both, 8);
        fprintf(f, " %s / %s / %s |", a, b, d);
        for (g = 0; g < t->ngroups; g++) {
            if (t->group_kind[g] == TP_TEMPLATE) {
                fmt_share(a, sizeof(a), &grp[g], 3);
                fmt_share(b, sizeof(b), &grp[g], 5);
                fmt_share(d, sizeof(d), &grp[g], 8);
                fprintf(f, " %s / %s / %s |", a, b, d);
            }
        }
        for (g = 0; g < t->ngroups; g++) {
            if (t->group_kind[g] == TP_SITE) {
                fprintf(f, " %llu / %llu / %llu of %llu; ",
                        (unsigned long long) grp[g].within[3],
                        (unsigned long long) grp[g].within[5],
                        (unsigned long long) grp[g].within[8],
                        (unsigned long long) grp[g].n);
                if (minj[g] > 1.5) {
                    fprintf(f, "none |");
                } else {
                    fprintf(f, "%.3f |", minj[g]);
                }
            }
        }
        fmt_share(a, sizeof(a), &al, 3);
        fprintf(f, " %s | %llu / %llu |\n", a,
                (unsigned long long) pr.within[3],
                (unsigned long long) pr.n);
        write_pairs(run, c);
    }
    if (ferror(f) | fclose(f)) {
        ev_die("%s: write error", path);
    }
}
