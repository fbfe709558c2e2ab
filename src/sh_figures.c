/*
 * sh_figures.c -- the console's figures in a file (sh_figures.h).
 *
 * The records, field by field, little-endian:
 *
 *   responses, skipped   u64 each
 *   rate slot            u64 epoch, u64 x nev
 *   outcome              u64 hash, host[64], rules[64], u64 x 3
 *   rule count           u64 hash, u64 rule, u64 x 3
 *   decision             u64 keyhash, u64 original, u32 time, u32 score,
 *                        u16 distance, u8 status, u8 action
 *   site                 u64 hash, count, error, u64 x SH_TOPK_NCOUNT,
 *                        host[SH_TOPK_HOST_TEXT + 1]
 *
 * The length is exact for the shape and ntop, so that a reader knows the
 * end of every table before it reads one; the MAC is checked before any
 * field, and every field after it all the same.
 */
#include "sh_figures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "sh_le.h"
#include "sh_mac.h"

#define FIG_MAGIC       "simhash-figures"   /* and its NUL: 16 bytes */
#define FIG_MAGIC_LEN   16
#define FIG_MAGIC_V1    "simhash-figures1"  /* format 1: no NUL */
#define FIG_NSHAPE      9
#define FIG_HEAD        (FIG_MAGIC_LEN + 4 + 4 * FIG_NSHAPE + 4 + 8 * 4)

#define FIG_OUTCOME     (8 + 2 * SH_FIGURES_TEXT + 8 * SH_FIGURES_NCOUNT)
#define FIG_RULE        (8 + 8 + 8 * SH_FIGURES_NCOUNT)
#define FIG_DECISION    (8 + 8 + 4 + 4 + 2 + 1 + 1)
#define FIG_SITE        (8 * 3 + 8 * SH_TOPK_NCOUNT + SH_TOPK_HOST_TEXT + 1)

static void
shape_get(const sh_figures_shape_t *s, uint32_t v[FIG_NSHAPE])
{
    v[0] = s->nstatus;
    v[1] = s->nskip;
    v[2] = s->nev;
    v[3] = s->nslots;
    v[4] = s->noutcome;
    v[5] = s->nrule;
    v[6] = s->ndecision;
    v[7] = s->naction;
    v[8] = s->k;
}

static int
shape_ok(const sh_figures_shape_t *s)
{
    uint32_t v[FIG_NSHAPE];
    int      i;

    shape_get(s, v);
    for (i = 0; i < FIG_NSHAPE; i++) {
        if (v[i] == 0 || v[i] > SH_FIGURES_MAX) {
            return 0;
        }
    }
    /* a decision's status and action are bytes; the sites' table is
       sh_topk's */
    return s->nev <= 256 && s->naction <= 256 && s->k <= SH_TOPK_MAX;
}

size_t
sh_figures_size(const sh_figures_shape_t *s, uint32_t ntop)
{
    if (!shape_ok(s) || ntop > s->k) {
        return 0;
    }
    /* every count is at most 2^16: no product overflows a size_t */
    return FIG_HEAD
           + 8 * ((size_t) s->nstatus + s->nskip)
           + 8 * (size_t) s->nslots * (1 + (size_t) s->nev)
           + FIG_OUTCOME * (size_t) s->noutcome
           + FIG_RULE * (size_t) s->nrule
           + FIG_DECISION * (size_t) s->ndecision
           + FIG_SITE * (size_t) ntop
           + SH_MAC_FULL;
}

sh_figures_t *
sh_figures_new(const sh_figures_shape_t *s)
{
    sh_figures_t *f;

    if (!shape_ok(s) || (f = calloc(1, sizeof(*f))) == NULL) {
        return NULL;
    }
    f->shape = *s;
    f->responses = calloc(s->nstatus, sizeof(uint64_t));
    f->skipped = calloc(s->nskip, sizeof(uint64_t));
    f->rate = calloc((size_t) s->nslots * (1 + s->nev), sizeof(uint64_t));
    f->outcome = calloc(s->noutcome, sizeof(sh_figures_outcome_t));
    f->rule = calloc(s->nrule, sizeof(sh_figures_rule_t));
    f->decision = calloc(s->ndecision, sizeof(sh_figures_decision_t));
    f->top = calloc(s->k, sizeof(sh_topk_entry_t));

    if (f->responses == NULL || f->skipped == NULL || f->rate == NULL
        || f->outcome == NULL || f->rule == NULL || f->decision == NULL
        || f->top == NULL)
    {
        sh_figures_free(f);
        return NULL;
    }
    return f;
}

void
sh_figures_free(sh_figures_t *f)
{
    if (f == NULL) {
        return;
    }
    free(f->responses);
    free(f->skipped);
    free(f->rate);
    free(f->outcome);
    free(f->rule);
    free(f->decision);
    free(f->top);
    free(f);
}

/* ---- Writing. ---- */

static unsigned char *
put_u64s(unsigned char *p, const uint64_t *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p = sh_le_put(p, v[i], 8);
    }
    return p;
}

/* a text up to its NUL, zeros after it: no stale byte of memory leaves */
static unsigned char *
put_text(unsigned char *p, const char *text, size_t size)
{
    size_t n = strnlen(text, size);

    memcpy(p, text, n);
    memset(p + n, 0, size - n);
    return p + size;
}

int
sh_figures_encode(const sh_figures_t *f, const void *key, size_t keylen,
                  unsigned char **out, size_t *len)
{
    const sh_figures_shape_t *s = &f->shape;
    size_t         size, i;
    uint32_t       v[FIG_NSHAPE];
    unsigned char *buf, *p;
    sh_mac_part_t  part;

    *out = NULL;
    size = sh_figures_size(s, f->ntop);
    if (size == 0) {
        return -1;
    }
    for (i = 0; i < s->noutcome; i++) {
        if (memchr(f->outcome[i].host, '\0', SH_FIGURES_TEXT) == NULL
            || memchr(f->outcome[i].rules, '\0', SH_FIGURES_TEXT) == NULL)
        {
            return -1;
        }
    }
    for (i = 0; i < f->ntop; i++) {
        if (memchr(f->top[i].host, '\0', sizeof(f->top[i].host)) == NULL) {
            return -1;
        }
    }
    if ((buf = malloc(size)) == NULL) {
        return -1;
    }

    memcpy(buf, FIG_MAGIC, FIG_MAGIC_LEN);      /* with its NUL */
    p = sh_le_put(buf + FIG_MAGIC_LEN, SH_FIGURES_VERSION, 4);
    shape_get(s, v);
    for (i = 0; i < FIG_NSHAPE; i++) {
        p = sh_le_put(p, v[i], 4);
    }
    p = sh_le_put(p, f->ntop, 4);
    p = sh_le_put(p, f->saved, 8);
    p = sh_le_put(p, f->since, 8);
    p = sh_le_put(p, f->total, 8);
    p = sh_le_put(p, f->replaced, 8);

    p = put_u64s(p, f->responses, s->nstatus);
    p = put_u64s(p, f->skipped, s->nskip);
    p = put_u64s(p, f->rate, (size_t) s->nslots * (1 + s->nev));

    for (i = 0; i < s->noutcome; i++) {
        const sh_figures_outcome_t *o = &f->outcome[i];

        p = sh_le_put(p, o->hash, 8);
        p = put_text(p, o->host, SH_FIGURES_TEXT);
        p = put_text(p, o->rules, SH_FIGURES_TEXT);
        p = put_u64s(p, o->n, SH_FIGURES_NCOUNT);
    }
    for (i = 0; i < s->nrule; i++) {
        p = sh_le_put(p, f->rule[i].hash, 8);
        p = sh_le_put(p, f->rule[i].rule, 8);
        p = put_u64s(p, f->rule[i].n, SH_FIGURES_NCOUNT);
    }
    for (i = 0; i < s->ndecision; i++) {
        const sh_figures_decision_t *d = &f->decision[i];

        p = sh_le_put(p, d->keyhash, 8);
        p = sh_le_put(p, d->original, 8);
        p = sh_le_put(p, d->time, 4);
        p = sh_le_put(p, d->score, 4);
        p = sh_le_put(p, d->distance, 2);
        p = sh_le_put(p, d->status, 1);
        p = sh_le_put(p, d->action, 1);
    }
    for (i = 0; i < f->ntop; i++) {
        const sh_topk_entry_t *e = &f->top[i];

        p = sh_le_put(p, e->hash, 8);
        p = sh_le_put(p, e->count, 8);
        p = sh_le_put(p, e->error, 8);
        p = put_u64s(p, e->c, SH_TOPK_NCOUNT);
        p = put_text(p, e->host, sizeof(e->host));
    }

    part.data = buf;
    part.len = (size_t) (p - buf);
    if (sh_mac(p, key, keylen, &part, 1) != 0) {
        free(buf);
        return -1;
    }

    *out = buf;
    *len = size;
    return 0;
}

/* ---- Reading: the length is known exact, so no read checks its end. ---- */

static const unsigned char *
get_u64s(const unsigned char *p, uint64_t *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        v[i] = sh_le_get(p, 8);
        p += 8;
    }
    return p;
}

/* a text slot: NUL within it, or -1; zeros after the NUL */
static int
get_text(const unsigned char *p, char *text, size_t size)
{
    const unsigned char *nul = memchr(p, '\0', size);

    if (nul == NULL) {
        return -1;
    }
    memcpy(text, p, (size_t) (nul - p));
    memset(text + (nul - p), 0, size - (size_t) (nul - p));
    return 0;
}

static int
refuse(char *err, size_t errlen, const char *fmt, size_t i)
{
    snprintf(err, errlen, fmt, i);
    return -1;
}

static int
read_tables(const unsigned char *p, sh_figures_t *f, char *err,
            size_t errlen)
{
    const sh_figures_shape_t *s = &f->shape;
    size_t i;

    p = get_u64s(p, f->responses, s->nstatus);
    p = get_u64s(p, f->skipped, s->nskip);
    p = get_u64s(p, f->rate, (size_t) s->nslots * (1 + s->nev));

    for (i = 0; i < s->noutcome; i++, p += FIG_OUTCOME) {
        sh_figures_outcome_t *o = &f->outcome[i];

        if (get_text(p + 8, o->host, SH_FIGURES_TEXT) != 0
            || get_text(p + 8 + SH_FIGURES_TEXT, o->rules, SH_FIGURES_TEXT)
               != 0)
        {
            return refuse(err, errlen, "outcome %zu: a text without its "
                          "end (NUL)", i);
        }
        o->hash = sh_le_get(p, 8);
        (void) get_u64s(p + 8 + 2 * SH_FIGURES_TEXT, o->n,
                        SH_FIGURES_NCOUNT);
    }
    for (i = 0; i < s->nrule; i++, p += FIG_RULE) {
        f->rule[i].hash = sh_le_get(p, 8);
        f->rule[i].rule = sh_le_get(p + 8, 8);
        (void) get_u64s(p + 16, f->rule[i].n, SH_FIGURES_NCOUNT);
    }
    for (i = 0; i < s->ndecision; i++, p += FIG_DECISION) {
        sh_figures_decision_t *d = &f->decision[i];

        d->keyhash = sh_le_get(p, 8);
        d->original = sh_le_get(p + 8, 8);
        d->time = (uint32_t) sh_le_get(p + 16, 4);
        d->score = (uint32_t) sh_le_get(p + 20, 4);
        d->distance = (uint16_t) sh_le_get(p + 24, 2);
        d->status = p[26];
        d->action = p[27];
        if (d->keyhash != 0
            && (d->status >= s->nev || d->action >= s->naction
                || (d->distance > SH_FIGURES_DIST_MAX
                    && d->distance != SH_FIGURES_NO_DIST)))
        {
            return refuse(err, errlen, "decision %zu: an event, action or "
                          "distance out of range", i);
        }
    }
    for (i = 0; i < f->ntop; i++, p += FIG_SITE) {
        sh_topk_entry_t *e = &f->top[i];

        if (get_text(p + 8 * (3 + SH_TOPK_NCOUNT), e->host,
                     sizeof(e->host)) != 0)
        {
            return refuse(err, errlen, "site %zu: a host without its end "
                          "(NUL)", i);
        }
        e->hash = sh_le_get(p, 8);
        e->count = sh_le_get(p + 8, 8);
        e->error = sh_le_get(p + 16, 8);
        (void) get_u64s(p + 24, e->c, SH_TOPK_NCOUNT);
    }
    return 0;
}

/* the sites' entries as sh_topk_restore() takes them: checked on a
 * scratch table of the shape's k, so that a caller's restore cannot fail */
static int
check_sites(const sh_figures_t *f, char *err, size_t errlen)
{
    static const unsigned char zero[32];
    size_t     size = sh_topk_size(f->shape.k);
    void      *region;
    sh_topk_t *t;
    int        rc;

    if (size == 0 || (region = aligned_alloc(8, (size + 7) & ~(size_t) 7))
                     == NULL)
    {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t = sh_topk_init(region, size, f->shape.k, zero, sizeof(zero));
    rc = t == NULL ? -1
         : sh_topk_restore(t, f->top, f->ntop, f->total, f->replaced);
    free(region);
    if (rc != 0) {
        snprintf(err, errlen, "the sites' table does not hold together "
                 "(a repeated or empty entry, or counts that do not add "
                 "up)");
    }
    return rc;
}

sh_figures_t *
sh_figures_decode(const unsigned char *buf, size_t len,
                  const sh_figures_shape_t *shape, const void *key,
                  size_t keylen, int *old, char *err, size_t errlen)
{
    const unsigned char *p;
    uint32_t             v[FIG_NSHAPE], want[FIG_NSHAPE], version, ntop;
    size_t               size, i;
    unsigned char        mac[SH_MAC_FULL];
    sh_mac_part_t        part;
    sh_figures_t        *f;

    *old = 0;

    if (len >= FIG_MAGIC_LEN && memcmp(buf, FIG_MAGIC_V1, FIG_MAGIC_LEN) == 0)
    {
        *old = 1;
        snprintf(err, errlen, "of an older format (1), which is not read");
        return NULL;
    }
    if (len < FIG_HEAD + SH_MAC_FULL
        || memcmp(buf, FIG_MAGIC, FIG_MAGIC_LEN) != 0)
    {
        snprintf(err, errlen, "not a file of the console's figures");
        return NULL;
    }
    version = (uint32_t) sh_le_get(buf + FIG_MAGIC_LEN, 4);
    if (version != SH_FIGURES_VERSION) {
        *old = version < SH_FIGURES_VERSION;
        snprintf(err, errlen, "of format %u, this build reads %u", version,
                 SH_FIGURES_VERSION);
        return NULL;
    }

    p = buf + FIG_MAGIC_LEN + 4;
    shape_get(shape, want);
    for (i = 0; i < FIG_NSHAPE; i++, p += 4) {
        v[i] = (uint32_t) sh_le_get(p, 4);
        if (v[i] != want[i]) {
            snprintf(err, errlen, "of another shape (table %zu has %u "
                     "entries, this zone's %u)", i, v[i], want[i]);
            return NULL;
        }
    }
    ntop = (uint32_t) sh_le_get(p, 4);
    p += 4;

    if (ntop > shape->k) {
        snprintf(err, errlen, "%u sites, more than the zone's %u", ntop,
                 shape->k);
        return NULL;
    }
    size = sh_figures_size(shape, ntop);
    if (size != len) {
        snprintf(err, errlen, "%zu bytes, not the %zu its header says",
                 len, size);
        return NULL;
    }

    part.data = buf;
    part.len = len - SH_MAC_FULL;
    if (sh_mac(mac, key, keylen, &part, 1) != 0
        || CRYPTO_memcmp(mac, buf + len - SH_MAC_FULL, SH_MAC_FULL) != 0)
    {
        snprintf(err, errlen, "damaged, or not made under this zone's "
                 "secret (its MAC does not match)");
        return NULL;
    }

    if ((f = sh_figures_new(shape)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->ntop = ntop;
    f->saved = sh_le_get(p, 8);
    f->since = sh_le_get(p + 8, 8);
    f->total = sh_le_get(p + 16, 8);
    f->replaced = sh_le_get(p + 24, 8);
    p += 32;

    /* times as the module keeps them (a signed time_t); a clock set back
     * between the start and a save is no reason to refuse the figures */
    if (f->since > INT64_MAX || f->saved > INT64_MAX) {
        snprintf(err, errlen, "its times are out of range");
        goto refused;
    }
    if (read_tables(p, f, err, errlen) != 0
        || check_sites(f, err, errlen) != 0)
    {
        goto refused;
    }
    return f;

refused:
    sh_figures_free(f);
    return NULL;
}
