/*
 * fuzz_figures.c -- sh_figures_decode on any file: the console's saved
 * figures (PATH.console), which the module reads at start.
 *
 * Input: a flags byte, then the file.
 *   bit 0  make the MAC afresh under the harness's key before decoding,
 *          as a writer who has the zone's secret could: so that mutations
 *          reach the checks of every field behind the MAC
 *   bit 1  the module's shape (its tables' real counts; files of about
 *          200 KB), else a small one (files of about 700 bytes)
 *
 * sh_figures.h promises that a file is refused with a reason and nothing
 * allocated, or accepted only within the zone's bounds.  So: a refusal
 * must come with a message; accepted figures must have every text ended
 * by a NUL within its slot, every used decision's event and action in
 * range, at most k sites, which sh_topk_restore() must take into a table
 * of k and sh_topk_list() give back; they must encode again, and that
 * file decode to the same figures.
 */
#include "fuzz_util.h"

#include "sh_figures.h"
#include "sh_mac.h"

static const unsigned char ffig_key[32] = "fuzz_figures: the zone's key...";

static const sh_figures_shape_t ffig_zone = {
    .nstatus = 9, .nskip = 12, .nev = 11, .nslots = 36, .noutcome = 256,
    .nrule = 1024, .ndecision = 4096, .naction = 3, .k = 64
};
static const sh_figures_shape_t ffig_small = {
    .nstatus = 2, .nskip = 1, .nev = 3, .nslots = 2, .noutcome = 2,
    .nrule = 2, .ndecision = 2, .naction = 3, .k = 4
};

static void
ffig_init(void)
{
}

static void
ffig_same(const sh_figures_t *a, const sh_figures_t *b)
{
    const sh_figures_shape_t *s = &a->shape;

    FUZZ_CHECK(memcmp(&a->shape, &b->shape, sizeof(a->shape)) == 0);
    FUZZ_CHECK(a->saved == b->saved && a->since == b->since
               && a->total == b->total && a->replaced == b->replaced
               && a->ntop == b->ntop);
    FUZZ_CHECK(memcmp(a->responses, b->responses, 8 * s->nstatus) == 0);
    FUZZ_CHECK(memcmp(a->skipped, b->skipped, 8 * s->nskip) == 0);
    FUZZ_CHECK(memcmp(a->rate, b->rate,
                      8 * (size_t) s->nslots * (1 + s->nev)) == 0);
    FUZZ_CHECK(memcmp(a->outcome, b->outcome,
                      s->noutcome * sizeof(*a->outcome)) == 0);
    FUZZ_CHECK(memcmp(a->rule, b->rule, s->nrule * sizeof(*a->rule)) == 0);
    FUZZ_CHECK(memcmp(a->decision, b->decision,
                      s->ndecision * sizeof(*a->decision)) == 0);
    FUZZ_CHECK(memcmp(a->top, b->top, a->ntop * sizeof(*a->top)) == 0);
}

static void
ffig_accepted(const sh_figures_t *f)
{
    const sh_figures_shape_t *s = &f->shape;
    size_t           i, size, len;
    void            *region;
    sh_topk_t       *t;
    sh_topk_entry_t *list;
    unsigned char   *buf;
    sh_figures_t    *g;
    char             err[256];
    int              old;

    FUZZ_CHECK(f->ntop <= s->k && f->since <= INT64_MAX
               && f->saved <= INT64_MAX);
    for (i = 0; i < s->noutcome; i++) {
        FUZZ_CHECK(memchr(f->outcome[i].host, 0, SH_FIGURES_TEXT) != NULL);
        FUZZ_CHECK(memchr(f->outcome[i].rules, 0, SH_FIGURES_TEXT) != NULL);
    }
    for (i = 0; i < s->ndecision; i++) {
        const sh_figures_decision_t *d = &f->decision[i];

        FUZZ_CHECK(d->keyhash == 0
                   || (d->status < s->nev && d->action < s->naction
                       && (d->distance <= SH_FIGURES_DIST_MAX
                           || d->distance == SH_FIGURES_NO_DIST)));
    }

    /* the sites into a table of k, and back */
    size = sh_topk_size(s->k);
    region = aligned_alloc(8, (size + 7) & ~(size_t) 7);
    list = calloc(s->k, sizeof(*list));
    FUZZ_CHECK(region != NULL && list != NULL);
    t = sh_topk_init(region, size, s->k, ffig_key, sizeof(ffig_key));
    FUZZ_CHECK(t != NULL);
    FUZZ_CHECK(sh_topk_restore(t, f->top, f->ntop, f->total, f->replaced)
               == 0);
    FUZZ_CHECK(sh_topk_list(t, list, s->k) == f->ntop);
    for (i = 0; i < f->ntop; i++) {
        FUZZ_CHECK(strlen(list[i].host) <= SH_TOPK_HOST_TEXT);
    }
    sh_topk_add(t, "fuzz.test", 9, 1, NULL);
    free(list);
    free(region);

    /* written again, read the same */
    FUZZ_CHECK(sh_figures_encode(f, ffig_key, sizeof(ffig_key), &buf, &len)
               == 0);
    g = sh_figures_decode(buf, len, s, ffig_key, sizeof(ffig_key), &old, err,
                          sizeof(err));
    FUZZ_CHECK(g != NULL);
    ffig_same(f, g);
    sh_figures_free(g);
    free(buf);
}

static int
ffig_one(const uint8_t *data, size_t size)
{
    fuzz_in_t                 in = { data, size };
    unsigned                  flags = fuzz_u8(&in);
    const sh_figures_shape_t *s = flags & 2 ? &ffig_zone : &ffig_small;
    unsigned char            *file;
    sh_figures_t             *f;
    sh_mac_part_t             part;
    char                      err[256];
    int                       old;

    /* a copy: the MAC may be rewritten, and an empty file has an address */
    file = malloc(in.n + 1);
    FUZZ_CHECK(file != NULL);
    memcpy(file, in.p, in.n);

    if ((flags & 1) && in.n >= SH_MAC_FULL) {
        part.data = file;
        part.len = in.n - SH_MAC_FULL;
        FUZZ_CHECK(sh_mac(file + part.len, ffig_key, sizeof(ffig_key),
                          &part, 1) == 0);
    }

    err[0] = '\0';
    f = sh_figures_decode(file, in.n, s, ffig_key, sizeof(ffig_key), &old,
                          err, sizeof(err));
    if (f == NULL) {
        FUZZ_CHECK(err[0] != '\0');
    } else {
        ffig_accepted(f);
        sh_figures_free(f);
    }
    free(file);
    return 0;
}

FUZZ_ENTRY(ffig_init, ffig_one)
