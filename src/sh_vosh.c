/*
 * sh_vosh.c -- the VOSH enumeration: Algorithm 2 of the PSM paper plus the
 * max-heap M that merges the h trees.
 */
#include "sh_vosh.h"

/* The score of a root, added in rank order. */
static double
vosh_score(const float *lo, const sh_vosh_node_t *s)
{
    double sum = 0;
    unsigned i;

    for (i = 0; i < s->size; i++) {
        sum += lo[s->idx[i]];
    }
    return sum;
}

void
sh_vosh_rank_header(const sh_volatility_t *vol, const float *w, unsigned t,
                    float *lo, uint8_t *bit_of)
{
    /* Lives with the table, where the look-up table can be inlined. */
    sh_volatility_rank_header(vol, w, t, lo, bit_of);
}

inline int
sh_vosh_children(const sh_vosh_node_t *s, unsigned nbits,
                 sh_vosh_node_t kids[2])
{
    int n = 0;
    int j;
    unsigned last = s->size - 1u;

    /* Left child: the last element moves one rank down, if it can. */
    if ((unsigned) s->idx[last] + 1 < nbits) {
        kids[n] = *s;
        kids[n].idx[last]++;
        n++;
    }

    /* Right child: the first gap >= 2 from the right decides.  Stopping at
     * a gap > 2 is what keeps the trees free of duplicates. */
    for (j = (int) last - 1; j >= 0; j--) {
        int gap = s->idx[j + 1] - s->idx[j];

        if (gap == 2) {
            kids[n] = *s;
            kids[n].idx[j]++;
            n++;
            break;
        }
        if (gap > 2) {
            break;
        }
    }
    return n;
}

/* Max-heap on score, 0-based. */
static void
heap_push(sh_vosh_t *v, const sh_vosh_node_t *x)
{
    size_t i = v->len++;

    while (i > 0) {
        size_t parent = (i - 1) / 2;

        if (v->heap[parent].score >= x->score) {
            break;
        }
        v->heap[i] = v->heap[parent];
        i = parent;
    }
    v->heap[i] = *x;
}

void
sh_vosh_init(sh_vosh_t *v, const float *lo, unsigned nbits, unsigned h,
             sh_vosh_node_t *heap, size_t cap)
{
    unsigned s, i;

    v->lo = lo;
    v->nbits = nbits;
    v->heap = heap;
    v->cap = cap;
    v->len = 0;
    if (h > nbits) {
        h = nbits;
    }
    if (h > SH_VOSH_HMAX) {
        h = SH_VOSH_HMAX;
    }
    v->h = h;

    /* The roots (0), (0,1), (0,1,2), ...: the best subset of each size. */
    for (s = 1; s <= h && v->len < cap; s++) {
        sh_vosh_node_t root;

        root.size = (uint8_t) s;
        for (i = 0; i < SH_VOSH_HMAX; i++) {
            root.idx[i] = (uint8_t) (i < s ? i : 0);
        }
        root.score = vosh_score(lo, &root);
        heap_push(v, &root);
    }
}

/* Sift the node at the root down to its place. */
static void
heap_sift_root(sh_vosh_t *v, const sh_vosh_node_t *x)
{
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= v->len) {
            break;
        }
        /* The larger child without a branch: which one it is is a coin
         * toss the predictor would lose half the time. */
        c += (size_t) (c + 1 < v->len
                       && v->heap[c + 1].score > v->heap[c].score);
        if (v->heap[c].score <= x->score) {
            break;
        }
        v->heap[i] = v->heap[c];
        i = c;
    }
    v->heap[i] = *x;
}

int
sh_vosh_next(sh_vosh_t *v, sh_vosh_node_t *out)
{
    const float   *lo = v->lo;
    sh_vosh_node_t kids[2];
    unsigned       last;
    int            n = 0, j;

    /* Refuse rather than drop a subtree: a step frees one node and may add
     * two, so one free slot must remain. */
    if (v->len == 0 || v->len + 1 > v->cap) {
        return 0;
    }
    *out = v->heap[0];
    last = out->size - 1u;

    /*
     * The children (see sh_vosh_children), each scored from its parent:
     * one element replaced, so one subtraction and one addition.  Rounding
     * may order two subsets whose scores agree to 1e-12 either way; both
     * are equally likely.
     */
    if ((unsigned) out->idx[last] + 1 < v->nbits) {
        kids[n] = *out;
        kids[n].idx[last]++;
        kids[n].score = out->score - lo[out->idx[last]]
                        + lo[out->idx[last] + 1];
        n++;
    }
    for (j = (int) last - 1; j >= 0; j--) {
        int gap = out->idx[j + 1] - out->idx[j];

        if (gap == 2) {
            kids[n] = *out;
            kids[n].idx[j]++;
            kids[n].score = out->score - lo[out->idx[j]]
                            + lo[out->idx[j] + 1];
            n++;
            break;
        }
        if (gap > 2) {
            break;
        }
    }

    /* The first child takes the root's place (one sift instead of a pop
     * and a push), the second is pushed. */
    if (n == 0) {
        sh_vosh_node_t tail = v->heap[--v->len];

        if (v->len > 0) {
            heap_sift_root(v, &tail);
        }
        return 1;
    }
    heap_sift_root(v, &kids[0]);
    if (n == 2) {
        heap_push(v, &kids[1]);
    }
    return 1;
}
