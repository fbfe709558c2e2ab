/*
 * test_sets.h -- what the index and dedup tests share to compare result
 * sets: matches in ref order, and the pairs a batch method reports.
 */
#ifndef SH_TEST_SETS_H
#define SH_TEST_SETS_H

#include "test_util.h"

#include "sh_brute.h"
#include "sh_index.h"

/* qsort order of sh_match_t by ref */
static inline int
cmp_ref(const void *a, const void *b)
{
    const sh_match_t *x = a, *y = b;

    return (x->ref > y->ref) - (x->ref < y->ref);
}

typedef struct {
    uint32_t a, b, d;
} pair_t;

typedef struct {
    pair_t *p;
    size_t  n, cap;
    size_t  stop_after;     /* 0 = never stop */
} pairs_t;

/* A batch method's pair callback: append (a, b, d); stop after
 * stop_after pairs when it is set. */
static inline int
collect(void *arg, uint32_t a, uint32_t b, unsigned d)
{
    pairs_t *ps = arg;

    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 1024;
        ps->p = realloc(ps->p, ps->cap * sizeof(pair_t));
        assert_non_null(ps->p);
    }
    ps->p[ps->n].a = a;
    ps->p[ps->n].b = b;
    ps->p[ps->n].d = d;
    ps->n++;
    return ps->stop_after != 0 && ps->n >= ps->stop_after;
}

/* qsort order of pairs: by a, then b */
static inline int
cmp_pair(const void *x, const void *y)
{
    const pair_t *p = x, *q = y;

    if (p->a != q->a) {
        return p->a < q->a ? -1 : 1;
    }
    return (p->b > q->b) - (p->b < q->b);
}

/* The reference: every pair a < b within h, by brute force. */
static inline void
brute_pairs(const uint64_t *x, size_t n, unsigned h, pairs_t *out)
{
    sh_brute_t  br;
    sh_match_t *m = malloc(n * sizeof(sh_match_t));
    size_t      i, j, nm;

    assert_non_null(m);
    assert_int_equal(sh_brute_init(&br, n), 0);
    for (i = 0; i < n; i++) {
        assert_int_equal(sh_brute_add(&br, x[i], (uint32_t) i), 0);
    }
    for (i = 0; i < n; i++) {
        nm = sh_brute_lookup(&br, x[i], h, SH_MATCH_ALL, m, n);
        for (j = 0; j < nm; j++) {
            if (m[j].ref > i) {
                collect(out, (uint32_t) i, m[j].ref, m[j].distance);
            }
        }
    }
    sh_brute_free(&br);
    free(m);
}

#endif
