/*
 * truth.c -- exact Jaccard similarity of shingle sets for every pair.
 *
 * Aligned pairs are few: a merge of the two sorted sets each.  The prose
 * population is every pair of about 1,700 pages (1.4 million pairs), where
 * merging each pair would cost 1,700 passes over the whole corpus; instead
 * an inverted index (shingle -> pages holding it) counts the intersections
 * of all pairs at once, in time proportional to the sum over shingles of
 * (pages holding it)^2 -- small, since most shingles occur on one page.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

double
ev_jaccard(const ev_page_t *a, const ev_page_t *b)
{
    size_t i = 0, j = 0, inter = 0, uni;

    while (i < a->nshingles && j < b->nshingles) {
        uint64_t x = a->shingles[i], y = b->shingles[j];

        inter += x == y;
        i += x <= y;
        j += y <= x;
    }
    uni = (size_t) a->nshingles + b->nshingles - inter;
    return uni ? (double) inter / (double) uni : 1.0;
}

typedef struct {
    uint64_t shingle;
    uint32_t page;          /* local index */
} posting_t;

static int
cmp_posting(const void *pa, const void *pb)
{
    const posting_t *a = pa, *b = pb;

    if (a->shingle != b->shingle) {
        return (a->shingle > b->shingle) - (a->shingle < b->shingle);
    }
    return (a->page > b->page) - (a->page < b->page);
}

/*
 * Intersections of every pair among `pages` (indices into `all`, m of
 * them): returns an m x m matrix, upper triangle filled.
 */
uint32_t *
ev_intersections(const ev_page_t *all, const uint32_t *pages, size_t m)
{
    uint32_t *inter = ev_xcalloc(m * m, sizeof(*inter));
    posting_t *post;
    size_t n = 0, i, j, k, s;
    uint64_t work = 0;

    for (i = 0; i < m; i++) {
        n += all[pages[i]].nshingles;
    }
    post = ev_xmalloc(n * sizeof(*post));
    for (i = 0, k = 0; i < m; i++) {
        const ev_page_t *pg = &all[pages[i]];

        for (j = 0; j < pg->nshingles; j++) {
            post[k].shingle = pg->shingles[j];
            post[k].page = (uint32_t) i;
            k++;
        }
    }
    qsort(post, n, sizeof(*post), cmp_posting);

    for (s = 0; s < n; s = k) {
        for (k = s + 1; k < n && post[k].shingle == post[s].shingle; k++) {
        }
        /* post[s..k) are the pages holding one shingle, in page order. */
        for (i = s; i + 1 < k; i++) {
            uint32_t *row = inter + (size_t) post[i].page * m;

            for (j = i + 1; j < k; j++) {
                row[post[j].page]++;
            }
        }
        work += (uint64_t) (k - s) * (k - s - 1) / 2;
    }
    fprintf(stderr, "sh-eval: truth: %zu pages, %zu postings, %llu pair "
            "increments\n", m, n, (unsigned long long) work);
    free(post);
    return inter;
}

void
ev_pairs_jaccard(ev_run_t *run)
{
    uint32_t *local = ev_xmalloc(run->npages * sizeof(*local));
    uint32_t *pages = ev_xmalloc(run->npages * sizeof(*pages));
    uint32_t *inter = NULL;
    size_t m = 0, nprose = 0, i;

    /* Which pages take part in prose pairs, and how densely? */
    memset(local, 0xff, run->npages * sizeof(*local));
    for (i = 0; i < run->npairs; i++) {
        const ev_pair_t *p = &run->pairs[i];

        if (p->kind != EV_PROSE) {
            continue;
        }
        nprose++;
        if (local[p->a] == UINT32_MAX) {
            local[p->a] = (uint32_t) m;
            pages[m++] = p->a;
        }
        if (local[p->b] == UINT32_MAX) {
            local[p->b] = (uint32_t) m;
            pages[m++] = p->b;
        }
    }
    if (m > 0 && m <= 40000 && nprose * 8 >= m * m / 2) {
        inter = ev_intersections(run->pages, pages, m);
    }

    for (i = 0; i < run->npairs; i++) {
        ev_pair_t *p = &run->pairs[i];
        const ev_page_t *a = &run->pages[p->a], *b = &run->pages[p->b];

        if (p->kind == EV_PROSE && inter != NULL) {
            uint32_t la = local[p->a], lb = local[p->b], x;

            x = la < lb ? inter[(size_t) la * m + lb]
                        : inter[(size_t) lb * m + la];
            p->jaccard = (float) ((double) x
                                  / ((double) a->nshingles + b->nshingles
                                     - x));
        } else {
            p->jaccard = (float) ev_jaccard(a, b);
        }
    }
    free(inter);
    free(pages);
    free(local);
}
