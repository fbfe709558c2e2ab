/*
 * sh_dust_image.c -- the learner's rules out of and into bytes: one rule
 * record (replication between nodes, sh_dust_export_rule and
 * sh_dust_import_rule) and the image of the hosts and rules that a
 * snapshot keeps (the evidence and canonical tables are not kept: they
 * refill).  Fixed little-endian layouts, versioned and checksummed.
 */
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_err.h"
#include "sh_dust_activation.h"
#include "sh_le.h"

#define IMAGE_MAGIC     "SHDUSTIM"
#define IMAGE_VERSION   1u
#define IMAGE_HDR       64
#define HOST_REC_LEN    120     /* 56 bytes of fields, 64 of text */

/* ---- Records: fixed little-endian layouts. ---- */

/*
 * A rule record, SH_DUST_RULE_REC_LEN bytes:
 *    0  'D' 'R' version kind state arglen patlen hostlen
 *    8  host hash, pattern hash, arg hash (3 x 8)
 *   32  support, against, retired_support (3 x 4), 4 zero bytes
 *   48  last (8)
 *   56  arg text (32), pattern text (24), host text (64)
 *  176 - 8 = 168  XXH3 of bytes 0..168
 */
static void
rule_encode(sh_dust_t *d, const dcand_t *c, unsigned char *r)
{
    dhost_t *h = sh_dust_host_find(d, c->host);

    memset(r, 0, SH_DUST_RULE_REC_LEN);
    r[0] = 'D';
    r[1] = 'R';
    r[2] = 1;
    r[3] = c->kind;
    r[4] = c->state;
    r[5] = c->arglen;
    r[6] = c->patlen;
    r[7] = h ? h->textlen : 0;
    (void) sh_le_put(r + 8, c->host, 8);
    (void) sh_le_put(r + 16, c->pattern, 8);
    (void) sh_le_put(r + 24, c->arg, 8);
    (void) sh_le_put(r + 32, c->support, 4);
    (void) sh_le_put(r + 36, c->against, 4);
    (void) sh_le_put(r + 40, c->retired_support, 4);
    (void) sh_le_put(r + 48, c->last, 8);
    memcpy(r + 56, c->arg_text, c->arglen);
    memcpy(r + 88, c->pat_text, c->patlen);
    if (h != NULL) {
        memcpy(r + 112, h->text, h->textlen);
    }
    (void) sh_le_put(r + 168, XXH3_64bits(r, 168), 8);
}

int
sh_dust_export_rule(const sh_dust_t *cd, const sh_dust_rule_info_t *ri,
                    unsigned char out[SH_DUST_RULE_REC_LEN])
{
    sh_dust_t *d = (sh_dust_t *) cd;
    dcand_t   *c = sh_dust_cand_find(d, ri->host_hash, ri->pattern_hash,
                                     (uint8_t) ri->kind, ri->arg_hash);

    if (c == NULL) {
        return -1;
    }
    rule_encode(d, c, out);
    return 0;
}

/* replace: the record's counts and state as they are (an image);
 * otherwise merged (replication). */
static int
rule_decode(sh_dust_t *d, const unsigned char *r, size_t len, int replace,
            uint64_t now)
{
    uint64_t host, pattern, arg, last;
    uint32_t support, against;
    uint8_t  kind, state, from;
    dhost_t *h;
    dcand_t *c;

    if (len != SH_DUST_RULE_REC_LEN || r[0] != 'D' || r[1] != 'R'
        || r[2] != 1 || sh_le_get(r + 168, 8) != XXH3_64bits(r, 168))
    {
        return -1;
    }
    kind = r[3];
    state = r[4];
    host = sh_le_get(r + 8, 8);
    pattern = sh_le_get(r + 16, 8);
    arg = sh_le_get(r + 24, 8);
    if (kind < SH_DUST_DROP_PARAM || kind > SH_DUST_KIND_MAX
        || state > SH_DUST_FORBIDDEN || r[5] > SH_DUST_ARG_TEXT
        || r[6] > SH_DUST_PAT_TEXT || r[7] > SH_DUST_HOST_TEXT || host == 0)
    {
        return -1;
    }
    h = sh_dust_host_get(d, host, r[7] ? (const char *) r + 112 : NULL, r[7],
                         0);
    c = sh_dust_cand_find(d, host, pattern, kind, arg);
    if (c == NULL) {
        c = sh_dust_cand_new(d, host, pattern, kind, arg);
        if (c == NULL) {
            return -1;
        }
        memcpy(c->arg_text, r + 56, r[5]);
        c->arglen = r[5];
        memcpy(c->pat_text, r + 88, r[6]);
        c->patlen = r[6];
    }
    from = c->state;
    support = (uint32_t) sh_le_get(r + 32, 4);
    against = (uint32_t) sh_le_get(r + 36, 4);
    last = sh_le_get(r + 48, 8);
    if (replace) {
        c->support = support;
        c->against = against;
        c->retired_support = (uint32_t) sh_le_get(r + 40, 4);
        c->last = last;
    } else {
        c->support = c->support > support ? c->support : support;
        c->against = c->against > against ? c->against : against;
        c->last = c->last > last ? c->last : last;
    }
    c->stamp = ++d->clock;

    if (state == SH_DUST_PINNED || state == SH_DUST_FORBIDDEN) {
        if (!manual(c) && h != NULL) {
            h->pins++;
            h->wild += pattern == 0;
        }
        c->state = state;
    } else if (replace) {
        if (manual(c) && h != NULL) {
            h->pins--;
            h->wild -= pattern == 0;
        }
        c->state = state;       /* what the saving node had decided (an
                                   alias of two sites from before issue 31
                                   joins nothing: alias_on; its next pair
                                   retires it: evaluate) */
    }
    if (on(c)) {
        sh_dust_mark_on(d, c);
    } else {
        sh_dust_mark_off(d, c);
        if (from == SH_DUST_ACTIVE || from == SH_DUST_PINNED) {
            sh_dust_host_stale(d, host, pattern,
                               kind == SH_DUST_HOST_ALIAS ? arg : 0);
        }
    }
    if (!manual(c) && !replace) {
        if (sh_dust_evaluate(d, c, now)) {
            return 0;
        }
    }
    if (from != c->state && !replace) {
        sh_dust_record(d, c, (sh_dust_state_t) from, now);
    }
    return 0;
}

int
sh_dust_import_rule(sh_dust_t *d, const unsigned char *rec, size_t len,
                    uint64_t now)
{
    return rule_decode(d, rec, len, 0, now);
}

int
sh_dust_rule_unpin(unsigned char r[SH_DUST_RULE_REC_LEN],
                   sh_dust_rule_info_t *ri)
{
    if (r[0] != 'D' || r[1] != 'R' || r[2] != 1
        || sh_le_get(r + 168, 8) != XXH3_64bits(r, 168)
        || r[3] < SH_DUST_DROP_PARAM || r[3] > SH_DUST_KIND_MAX
        || r[4] > SH_DUST_FORBIDDEN)
    {
        return -1;
    }
    if (r[4] == SH_DUST_PINNED || r[4] == SH_DUST_FORBIDDEN) {
        r[4] = SH_DUST_CANDIDATE;
        (void) sh_le_put(r + 168, XXH3_64bits(r, 168), 8);
    }
    if (ri != NULL) {
        memset(ri, 0, sizeof(*ri));
        ri->kind = (sh_dust_kind_t) r[3];
        ri->state = (sh_dust_state_t) r[4];
        ri->host_hash = sh_le_get(r + 8, 8);
        ri->pattern_hash = sh_le_get(r + 16, 8);
        ri->arg_hash = sh_le_get(r + 24, 8);
        ri->support = (uint32_t) sh_le_get(r + 32, 4);
        ri->against = (uint32_t) sh_le_get(r + 36, 4);
        ri->last = sh_le_get(r + 48, 8);
    }
    return 0;
}

/* ---- Image. ---- */

static size_t
count_used(const sh_dust_t *d, size_t *nh, size_t *nc)
{
    const dhost_t *h = hosts(d);
    const dcand_t *c = cands(d);
    size_t         i;

    *nh = *nc = 0;
    for (i = 0; i < (size_t) d->host_sets * HOST_WAYS; i++) {
        *nh += h[i].hash != 0;
    }
    for (i = 0; i < (size_t) d->cand_sets * CAND_WAYS; i++) {
        *nc += c[i].host != 0;
    }
    return IMAGE_HDR + *nh * HOST_REC_LEN + *nc * SH_DUST_RULE_REC_LEN;
}

size_t
sh_dust_image_size(const sh_dust_t *d)
{
    size_t nh, nc;

    return count_used(d, &nh, &nc);
}

/*
 * Image: a 64-byte header
 *    0 magic "SHDUSTIM", 8 version, 12 host record length, 16 rule record
 *   length, 20 hosts, 24 rules (u32 each), 28 zero, 32 secret digest,
 *   40 total length, 48 XXH3 of the header's first 48 bytes and the body,
 *   56 zero
 * then the host records (HOST_REC_LEN: hash, alias_to, requests,
 * predictions, saved, last (6 x 8); text length (1), 7 zero bytes, the
 * text (64)), then the rule records.
 */
size_t
sh_dust_image_save(const sh_dust_t *cd, void *buf, size_t size)
{
    sh_dust_t     *d = (sh_dust_t *) cd;
    unsigned char *p = buf, *r;
    const dhost_t *h = hosts(d);
    const dcand_t *c = cands(d);
    size_t         nh, nc, need = count_used(d, &nh, &nc), i;
    XXH3_state_t   st;
    uint8_t        tl;

    if (size < need) {
        return 0;
    }
    memset(p, 0, IMAGE_HDR);
    memcpy(p, IMAGE_MAGIC, 8);
    (void) sh_le_put(p + 8, IMAGE_VERSION, 4);
    (void) sh_le_put(p + 12, HOST_REC_LEN, 4);
    (void) sh_le_put(p + 16, SH_DUST_RULE_REC_LEN, 4);
    (void) sh_le_put(p + 20, (uint32_t) nh, 4);
    (void) sh_le_put(p + 24, (uint32_t) nc, 4);
    (void) sh_le_put(p + 32, d->secret_digest, 8);
    (void) sh_le_put(p + 40, need, 8);
    r = p + IMAGE_HDR;
    for (i = 0; i < (size_t) d->host_sets * HOST_WAYS; i++) {
        if (h[i].hash == 0) {
            continue;
        }
        memset(r, 0, HOST_REC_LEN);
        (void) sh_le_put(r, h[i].hash, 8);
        (void) sh_le_put(r + 8, h[i].alias_to, 8);
        (void) sh_le_put(r + 16, h[i].requests, 8);
        (void) sh_le_put(r + 24, h[i].predictions, 8);
        (void) sh_le_put(r + 32, h[i].saved, 8);
        (void) sh_le_put(r + 40, h[i].last, 8);
        tl = h[i].textlen > HOST_REC_LEN - 56 ? HOST_REC_LEN - 56
                                              : h[i].textlen;
        r[48] = tl;
        memcpy(r + 56, h[i].text, tl);
        r += HOST_REC_LEN;
    }
    for (i = 0; i < (size_t) d->cand_sets * CAND_WAYS; i++) {
        if (c[i].host != 0) {
            rule_encode(d, &c[i], r);
            r += SH_DUST_RULE_REC_LEN;
        }
    }
    (void) XXH3_64bits_reset(&st);
    (void) XXH3_64bits_update(&st, p, 48);
    (void) XXH3_64bits_update(&st, p + IMAGE_HDR, need - IMAGE_HDR);
    (void) sh_le_put(p + 48, XXH3_64bits_digest(&st), 8);
    return need;
}

/* An image's header, lengths and checksum: its counts of hosts and rules,
 * or -1 and a message. */
static int
image_check(const unsigned char *p, size_t len, size_t *nhosts,
            size_t *nrules, char *err, size_t errlen)
{
    XXH3_state_t st;
    size_t       nh, nc;

    if (len < IMAGE_HDR || memcmp(p, IMAGE_MAGIC, 8) != 0) {
        sh_err_set(err, errlen, "not a dust image");
        return -1;
    }
    if (sh_le_get(p + 8, 4) != IMAGE_VERSION
        || sh_le_get(p + 12, 4) != HOST_REC_LEN
        || sh_le_get(p + 16, 4) != SH_DUST_RULE_REC_LEN)
    {
        sh_err_set(err, errlen, "dust image of another version");
        return -1;
    }
    nh = sh_le_get(p + 20, 4);
    nc = sh_le_get(p + 24, 4);
    if (sh_le_get(p + 40, 8) != len
        || len != IMAGE_HDR + nh * HOST_REC_LEN + nc * SH_DUST_RULE_REC_LEN)
    {
        sh_err_set(err, errlen, "dust image truncated");
        return -1;
    }
    (void) XXH3_64bits_reset(&st);
    (void) XXH3_64bits_update(&st, p, 48);
    (void) XXH3_64bits_update(&st, p + IMAGE_HDR, len - IMAGE_HDR);
    if (sh_le_get(p + 48, 8) != XXH3_64bits_digest(&st)) {
        sh_err_set(err, errlen, "dust image damaged (checksum)");
        return -1;
    }
    *nhosts = nh;
    *nrules = nc;
    return 0;
}

int
sh_dust_image_load(sh_dust_t *d, const void *buf, size_t len, char *err,
                   size_t errlen)
{
    const unsigned char *p = buf, *r;
    size_t               nh, nc, i;
    dhost_t             *h;

    if (image_check(p, len, &nh, &nc, err, errlen) != 0) {
        return -1;
    }
    if (sh_le_get(p + 32, 8) != d->secret_digest) {
        sh_err_set(err, errlen, "dust image made under another secret");
        return -1;
    }
    r = p + IMAGE_HDR + nh * HOST_REC_LEN;
    for (i = 0; i < nc; i++) {
        const unsigned char *q = r + i * SH_DUST_RULE_REC_LEN;

        if (q[0] != 'D' || q[1] != 'R' || q[2] != 1
            || sh_le_get(q + 168, 8) != XXH3_64bits(q, 168))
        {
            sh_err_set(err, errlen, "dust image: bad rule record %zu", i);
            return -1;
        }
    }

    memset(hosts(d), 0, (size_t) d->host_sets * HOST_WAYS * sizeof(dhost_t));
    memset(cands(d), 0, (size_t) d->cand_sets * CAND_WAYS * sizeof(dcand_t));
    r = p + IMAGE_HDR;
    for (i = 0; i < nh; i++, r += HOST_REC_LEN) {
        uint8_t tl = r[48] > HOST_REC_LEN - 56 ? HOST_REC_LEN - 56 : r[48];

        h = sh_dust_host_get(d, sh_le_get(r, 8),
                             tl ? (const char *) r + 56 : NULL, tl, 0);
        if (h == NULL) {
            continue;
        }
        h->requests = sh_le_get(r + 16, 8);
        h->predictions = sh_le_get(r + 24, 8);
        h->saved = sh_le_get(r + 32, 8);
        h->last = sh_le_get(r + 40, 8);
    }
    for (i = 0; i < nc; i++, r += SH_DUST_RULE_REC_LEN) {
        (void) rule_decode(d, r, SH_DUST_RULE_REC_LEN, 1, 0);
    }
    return 0;
}

int
sh_dust_image_rules(const void *buf, size_t len, double z,
                    sh_dust_rule_cb cb, void *ctx, char *err, size_t errlen)
{
    const unsigned char *p = buf, *r;
    size_t               nh, nc, i;
    sh_dust_rule_info_t  ri;
    uint32_t             n;

    if (z <= 0.0) {
        z = 2.58;
    }
    if (image_check(p, len, &nh, &nc, err, errlen) != 0) {
        return -1;
    }
    r = p + IMAGE_HDR + nh * HOST_REC_LEN;
    for (i = 0; i < nc; i++, r += SH_DUST_RULE_REC_LEN) {
        if (r[0] != 'D' || r[1] != 'R' || r[2] != 1
            || sh_le_get(r + 168, 8) != XXH3_64bits(r, 168)
            || r[3] < SH_DUST_DROP_PARAM || r[3] > SH_DUST_KIND_MAX
            || r[4] > SH_DUST_FORBIDDEN || r[5] > SH_DUST_ARG_TEXT
            || r[6] > SH_DUST_PAT_TEXT || r[7] > SH_DUST_HOST_TEXT)
        {
            sh_err_set(err, errlen, "dust image: bad rule record %zu", i);
            return -1;
        }
        memset(&ri, 0, sizeof(ri));
        ri.kind = (sh_dust_kind_t) r[3];
        ri.state = (sh_dust_state_t) r[4];
        ri.host_hash = sh_le_get(r + 8, 8);
        ri.pattern_hash = sh_le_get(r + 16, 8);
        ri.arg_hash = sh_le_get(r + 24, 8);
        ri.support = (uint32_t) sh_le_get(r + 32, 4);
        ri.against = (uint32_t) sh_le_get(r + 36, 4);
        ri.last = sh_le_get(r + 48, 8);
        memcpy(ri.arg, r + 56, r[5]);
        sh_dust_pattern_name(ri.pattern, ri.pattern_hash,
                             (const char *) r + 88, r[6]);
        memcpy(ri.host, r + 112, r[7]);
        n = ri.support + ri.against;
        ri.precision = n ? (double) ri.support / n : 0.0;
        ri.lower = sh_dust_wilson_lower(ri.support, ri.against, z);
        ri.sample = 1.0;        /* the bound is the learner's */
        if (cb(&ri, ctx) != 0) {
            break;
        }
    }
    return 0;
}
