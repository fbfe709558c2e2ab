/*
 * sh_dust.c -- the DUST learner in one relocatable region (sh_dust.h).
 *
 * Layout (each part 64-byte aligned, found by offsets in the header):
 *
 *   header      sizes, offsets, options, counters, the secret
 *   hosts       dhost_t[host_sets * HOST_WAYS]
 *   candidates  dcand_t[cand_sets * CAND_WAYS]
 *   evidence    devid_t[evid_sets * EVID_WAYS]: scoped pairs, identity
 *               entries (one per URL seen), alias entries (path sans host)
 *   canonical   dcanon_t[canon_sets * CANON_WAYS]
 *   changes     sh_dust_change_t[SH_DUST_CHANGES], a ring
 *
 * Every table is set-associative: a key's set is fixed by its hash, a miss
 * takes a free way or the least recently used one (a stamp from the
 * region's clock, which counts touches, so replacement is deterministic).
 *
 * A host keeps a 64-bit hint of its active rules (one bit per kind and
 * argument, hashed): an observation or prediction of a host with no bit
 * set makes no candidate probe at all, which is what keeps a site without
 * DUST at the cost of the evidence probes.  Bits are set when a rule turns
 * on (or is touched while on) and never cleared but with the host's slot:
 * a stale bit costs a probe, never a wrong rewrite.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_err.h"
#include "sh_dust.h"
#include "sh_le.h"
#include "sh_site.h"

#define DUST_MAGIC      "SHDUST1"
#define DUST_VERSION    5u          /* 2: entries begin with dway_t;
                                       3: hosts know their alias source;
                                       4: and their site; 5: the
                                       sequential test's constants,
                                       reverse entries know R(u) */
#define IMAGE_MAGIC     "SHDUSTIM"
#define IMAGE_VERSION   1u
#define IMAGE_HDR       64
#define HOST_REC_LEN    120     /* 56 bytes of fields, 64 of text */

#define HOST_WAYS       8
#define CAND_WAYS       8
#define EVID_WAYS       4
#define CANON_WAYS      4

#define PAT_ROOT        0x51c7e3a9d2b4f681ULL   /* the pattern "/" */
#define PAT_HOST        0x3b9f0d6ac2e75814ULL   /* a host's record of a
                                                   rule over its scopes */
#define SPRT_RATIO      10.0    /* a good rule disagrees 10x less often
                                   than the worst one allowed on */
#define PRIOR_ALPHA_MAX 0.25    /* the most a host's record relaxes */
#define COUNT_MAX       (1u << 20)              /* then halve */
#define ATOMS_MAX       (SH_URL_PARAMS_MAX + 2 * SH_URL_SEGS_MAX + 4)

typedef struct {
    uint64_t hash;              /* 0: free */
    uint64_t alias_to;          /* the target of its active alias, 0 */
    uint64_t alias_from;        /* a host whose active alias is this, 0 */
    uint64_t site;              /* hash of its registrable domain, 0:
                                   unknown (sh_site.h) */
    uint64_t bloom;             /* hint: bits of its active rules */
    uint64_t stamp;
    uint64_t last;
    uint64_t requests;
    uint64_t predictions;
    uint64_t saved;
    uint32_t pins;              /* manual rules: the host is not evicted */
    uint16_t wild;              /* host-wide manual rules */
    uint8_t  textlen;
    uint8_t  pad;
    char     text[SH_DUST_HOST_TEXT];
} dhost_t;

typedef struct {
    uint64_t host;              /* 0: free */
    uint64_t pattern;           /* 0: host-wide */
    uint64_t arg;
    uint64_t stamp;
    uint64_t last;
    uint32_t support;
    uint32_t against;
    uint32_t retired_support;   /* support when last retired */
    uint8_t  kind;
    uint8_t  state;
    uint8_t  arglen;
    uint8_t  patlen;
    char     arg_text[SH_DUST_ARG_TEXT];
    char     pat_text[SH_DUST_PAT_TEXT];
} dcand_t;

/* What an entry of the evidence and canonical tables begins with. */
typedef struct {
    uint64_t key;               /* 0: free */
    uint64_t stamp;             /* of its last use: a set's oldest goes */
} dway_t;

typedef struct {
    dway_t   way;
    uint64_t rep;
    uint64_t url;               /* hash of the URL that set it */
    uint64_t aux;               /* pair entries: the canonical form of
                                   the URL; alias entries: its host;
                                   reverse entries: the rule's argument */
    uint64_t pattern;           /* reverse entries: the rule's pattern */
    uint64_t host;              /* reverse entries: the scope's host */
    uint64_t image;             /* reverse entries: the hash of R(u) */
    uint8_t  kind;              /* reverse entries: the rule's kind */
    uint8_t  pad[7];
} devid_t;

typedef struct {
    dway_t   way;
    uint64_t rep;
    uint64_t url;
} dcanon_t;

struct sh_dust_s {
    char            magic[8];
    uint32_t        version;
    uint32_t        header_bytes;
    uint64_t        size;
    uint32_t        host_sets, cand_sets, evid_sets, canon_sets;
    uint64_t        off_hosts, off_cands, off_evid, off_canon, off_changes;
    uint64_t        clock;
    uint64_t        change_seq;
    sh_dust_opts_t  opts;
    double          llr_pair;   /* the sequential test: a pair's weight */
    double          llr_against;    /* a pair against's */
    double          llr_on;     /* the bound to turn on: ln((1-a)/a) */
    double          alpha;      /* a = Phi(-z) */
    sh_dust_stats_t stats;
    uint64_t        secret_digest;
    unsigned char   secret[SH_URL_SECRET_LEN];
};

/* One atomic rule that changes a URL. */
typedef struct {
    uint8_t      kind;
    uint64_t     arg;
    const char  *text;          /* its argument as the URL spells it */
    uint32_t     textlen;
    sh_url_rw_t  rw;
} atom_t;

/* ---- Small helpers. ---- */

static inline uint64_t
nonzero(uint64_t h)
{
    return h ? h : 1;
}

static size_t
round64(size_t n)
{
    return (n + 63) & ~(size_t) 63;
}

static uint32_t
sets_for(uint32_t slots, uint32_t ways)
{
    uint32_t s = 1;

    while ((uint64_t) s * ways < slots && s < (1u << 30)) {
        s <<= 1;
    }
    return s;
}

static inline dhost_t *
hosts(const sh_dust_t *d)
{
    return (dhost_t *) ((char *) d + d->off_hosts);
}

static inline dcand_t *
cands(const sh_dust_t *d)
{
    return (dcand_t *) ((char *) d + d->off_cands);
}

static inline devid_t *
evids(const sh_dust_t *d)
{
    return (devid_t *) ((char *) d + d->off_evid);
}

static inline dcanon_t *
canons(const sh_dust_t *d)
{
    return (dcanon_t *) ((char *) d + d->off_canon);
}

static inline sh_dust_change_t *
ring(const sh_dust_t *d)
{
    return (sh_dust_change_t *) ((char *) d + d->off_changes);
}

static void
copy_text(char *dst, size_t cap, uint8_t *dlen, const char *src, size_t n)
{
    n = n > cap ? cap : n;
    if (n > 0) {                /* an argument-free rule's text is NULL */
        memcpy(dst, src, n);
    }
    *dlen = (uint8_t) n;
}

/* ---- Sizes, format, attach. ---- */

void
sh_dust_opts_init(sh_dust_opts_t *o)
{
    o->hosts = 1024;
    o->candidates = 8192;
    o->evidence_slots = 65536;
    o->canonical_slots = 65536;
    o->min_evidence = 8;
    o->min_precision = 0.95;
    o->z = 2.58;
}

static size_t
layout(uint32_t hs, uint32_t cs, uint32_t es, uint32_t ns, uint64_t *off)
{
    size_t n = round64(sizeof(sh_dust_t));

    off[0] = n;
    n += round64((size_t) hs * HOST_WAYS * sizeof(dhost_t));
    off[1] = n;
    n += round64((size_t) cs * CAND_WAYS * sizeof(dcand_t));
    off[2] = n;
    n += round64((size_t) es * EVID_WAYS * sizeof(devid_t));
    off[3] = n;
    n += round64((size_t) ns * CANON_WAYS * sizeof(dcanon_t));
    off[4] = n;
    n += round64(SH_DUST_CHANGES * sizeof(sh_dust_change_t));
    return n;
}

size_t
sh_dust_region_size(uint32_t h, uint32_t c, uint32_t e, uint32_t n)
{
    uint64_t off[5];

    return layout(sets_for(h, HOST_WAYS), sets_for(c, CAND_WAYS),
                  sets_for(e, EVID_WAYS), sets_for(n, CANON_WAYS), off);
}

/*
 * The sequential test (Wald's SPRT) that turns a rule on.  A rule is BAD
 * when its pairs disagree at rate e1 = 1 - min_precision or more, GOOD at
 * e0 = e1 / SPRT_RATIO or less.  Each pair adds its log-likelihood ratio,
 * ln((1 - e0) / (1 - e1)) for support, -ln(e1 / e0) against, and the rule
 * turns on when the sum reaches ln((1 - a) / a), a = Phi(-z): Wald's bound
 * makes the chance that a bad rule EVER turns on at most a (overshoot
 * only lowers it), however long it is watched, and the evidence needed
 * follows from the data rather than from a count: 115 clean pairs with
 * the defaults (a = 0.5%), each pair against costing about 50 more.
 * Once on, the same sum keeps running on the verification sample and the
 * canonical checks; the pair against that takes it below the bound turns
 * the rule off, so a bad rule that got on gives in expectation about
 * 1 / (verified share) wrong answers before it is caught (docs/DUST.md,
 * "The loss bound").
 */
static double
tail(double z)
{
    return 0.5 * erfc(z / sqrt(2.0));
}

static double
need_for(double alpha)
{
    return log((1.0 - alpha) / alpha);
}

static void
sprt_init(sh_dust_t *d)
{
    double e1 = 1.0 - d->opts.min_precision, e0;

    /* 0.95 and 2.58 give e1 0.05, e0 0.005, a 0.0049 */
    e1 = e1 < 1e-6 ? 1e-6 : e1 > 0.999 ? 0.999 : e1;
    e0 = e1 / SPRT_RATIO;
    d->alpha = tail(d->opts.z);
    d->alpha = d->alpha < 1e-12 ? 1e-12 : d->alpha > 0.5 ? 0.5 : d->alpha;
    d->llr_pair = log((1.0 - e0) / (1.0 - e1));
    d->llr_against = log(e1 / e0);
    d->llr_on = need_for(d->alpha);
}

sh_dust_t *
sh_dust_init(void *region, size_t size, const void *secret,
             size_t secret_len, const sh_dust_opts_t *opts, char *err,
             size_t errlen)
{
    sh_dust_t      *d = region;
    sh_dust_opts_t  o;
    uint64_t        off[5];
    size_t          need;

    if (opts == NULL) {
        sh_dust_opts_init(&o);
    } else {
        o = *opts;
    }
    if (((uintptr_t) region & 7) != 0) {
        sh_err_set(err, errlen, "dust region not 8-byte aligned");
        return NULL;
    }
    if (o.hosts == 0 || o.candidates == 0 || o.evidence_slots == 0
        || o.canonical_slots == 0 || !(o.min_precision >= 0.0
                                        && o.min_precision <= 1.0)
        || !(o.z >= 0.0 && o.z <= 10.0))
    {
        sh_err_set(err, errlen, "dust: bad options");
        return NULL;
    }
    need = layout(sets_for(o.hosts, HOST_WAYS),
                  sets_for(o.candidates, CAND_WAYS),
                  sets_for(o.evidence_slots, EVID_WAYS),
                  sets_for(o.canonical_slots, CANON_WAYS), off);
    if (size < need) {
        sh_err_set(err, errlen, "dust region too small: %zu bytes, need %zu",
                   size, need);
        return NULL;
    }
    memset(region, 0, need);
    memcpy(d->magic, DUST_MAGIC, sizeof(DUST_MAGIC));
    d->version = DUST_VERSION;
    d->header_bytes = sizeof(sh_dust_t);
    d->size = need;
    d->host_sets = sets_for(o.hosts, HOST_WAYS);
    d->cand_sets = sets_for(o.candidates, CAND_WAYS);
    d->evid_sets = sets_for(o.evidence_slots, EVID_WAYS);
    d->canon_sets = sets_for(o.canonical_slots, CANON_WAYS);
    d->off_hosts = off[0];
    d->off_cands = off[1];
    d->off_evid = off[2];
    d->off_canon = off[3];
    d->off_changes = off[4];
    o.hosts = d->host_sets * HOST_WAYS;
    o.candidates = d->cand_sets * CAND_WAYS;
    o.evidence_slots = d->evid_sets * EVID_WAYS;
    o.canonical_slots = d->canon_sets * CANON_WAYS;
    d->opts = o;
    sprt_init(d);
    d->stats.region_bytes = need;
    sh_url_secret(secret, secret_len, d->secret);
    d->secret_digest = XXH3_64bits(d->secret, sizeof(d->secret));
    return d;
}

sh_dust_t *
sh_dust_attach(void *region, size_t size, char *err, size_t errlen)
{
    sh_dust_t *d = region;
    uint64_t   off[5];
    size_t     need;

    if (size < sizeof(sh_dust_t)
        || memcmp(d->magic, DUST_MAGIC, sizeof(DUST_MAGIC)) != 0)
    {
        sh_err_set(err, errlen, "not a dust region (bad magic)");
        return NULL;
    }
    if (d->version != DUST_VERSION || d->header_bytes != sizeof(sh_dust_t))
    {
        sh_err_set(err, errlen, "dust region of another version");
        return NULL;
    }
    need = layout(d->host_sets, d->cand_sets, d->evid_sets, d->canon_sets,
                  off);
    if (need != d->size || size < need || off[0] != d->off_hosts
        || off[1] != d->off_cands || off[2] != d->off_evid
        || off[3] != d->off_canon || off[4] != d->off_changes)
    {
        sh_err_set(err, errlen, "dust region damaged or truncated");
        return NULL;
    }
    return d;
}

/* ---- Hosts. ---- */

static dhost_t *
host_find(sh_dust_t *d, uint64_t hash)
{
    dhost_t *set = hosts(d) + (hash & (d->host_sets - 1)) * HOST_WAYS;
    unsigned i;

    for (i = 0; i < HOST_WAYS; i++) {
        if (set[i].hash == hash) {
            return &set[i];
        }
    }
    return NULL;
}

/*
 * The hash of a host's site (sh_site.h), 0 when unknown: no list, or a
 * name that may have been cut (an image's or a record's keeps
 * SH_DUST_HOST_TEXT bytes); the next URL of the host gives it whole.
 */
static uint64_t
site_hash(const sh_dust_t *d, const char *text, size_t len, int whole)
{
    char   site[SH_SITE_MAX + 1];
    size_t n;

    if (text == NULL || (!whole && len >= SH_DUST_HOST_TEXT)) {
        return 0;
    }
    n = sh_site_of(text, len, site, sizeof(site));
    return n ? nonzero(sh_url_hash_bytes(d->secret, site, n)) : 0;
}

/* Find or make the entry of a host; NULL if every way is pinned.  `whole`:
 * text is the host as a URL or the operator spelled it, not cut. */
static dhost_t *
host_get(sh_dust_t *d, uint64_t hash, const char *text, size_t len,
         int whole)
{
    dhost_t *set = hosts(d) + (hash & (d->host_sets - 1)) * HOST_WAYS;
    dhost_t *v = NULL;
    unsigned i;

    for (i = 0; i < HOST_WAYS; i++) {
        if (set[i].hash == hash) {
            set[i].stamp = ++d->clock;
            if (set[i].textlen == 0 && text != NULL) {
                copy_text(set[i].text, SH_DUST_HOST_TEXT, &set[i].textlen,
                          text, len);
            }
            if (set[i].site == 0) {
                set[i].site = site_hash(d, text, len, whole);
            }
            return &set[i];
        }
        if (set[i].pins != 0) {
            continue;
        }
        if (v == NULL || set[i].hash == 0
            || (v->hash != 0 && set[i].stamp < v->stamp))
        {
            v = &set[i];
        }
    }
    if (v == NULL) {
        return NULL;
    }
    if (v->hash != 0) {
        d->stats.host_evictions++;
    }
    memset(v, 0, sizeof(*v));
    v->hash = hash;
    v->stamp = ++d->clock;
    if (text != NULL) {
        copy_text(v->text, SH_DUST_HOST_TEXT, &v->textlen, text, len);
    }
    v->site = site_hash(d, text, len, whole);
    return v;
}

/*
 * Whether hosts a and b are one site: one registrable domain, both known
 * (security issue 31: a learned alias between two sites let one site's
 * pages, or its rules, answer the other's URLs).  Hosts of two sites are
 * joined only by an alias the operator pinned.
 */
static int
same_site(sh_dust_t *d, uint64_t a, uint64_t b)
{
    dhost_t *ha = host_find(d, a), *hb = host_find(d, b);

    return ha != NULL && hb != NULL && ha->site != 0 && ha->site == hb->site;
}

static inline uint64_t
bloom_bit(uint8_t kind, uint64_t arg)
{
    return 1ULL << (sh_url_step(kind, arg) >> 58);
}

/* ---- Candidates. ---- */

static inline uint64_t
cand_key(uint64_t host, uint64_t pattern, uint8_t kind, uint64_t arg)
{
    return sh_url_step(sh_url_step(sh_url_step(host, pattern), kind), arg);
}

static dcand_t *
cand_find(sh_dust_t *d, uint64_t host, uint64_t pattern, uint8_t kind,
          uint64_t arg)
{
    uint64_t k = cand_key(host, pattern, kind, arg);
    dcand_t *set = cands(d) + (k & (d->cand_sets - 1)) * CAND_WAYS;
    unsigned i;

    for (i = 0; i < CAND_WAYS; i++) {
        if (set[i].host == host && set[i].pattern == pattern
            && set[i].kind == kind && set[i].arg == arg)
        {
            return &set[i];
        }
    }
    return NULL;
}

static void alias_off(sh_dust_t *d, uint64_t from, uint64_t to);

static inline int
manual(const dcand_t *c)
{
    return c->state == SH_DUST_PINNED || c->state == SH_DUST_FORBIDDEN;
}

static inline int
on(const dcand_t *c)
{
    return c->state == SH_DUST_ACTIVE || c->state == SH_DUST_PINNED;
}

/*
 * A free way, else the least recently used plain candidate or retired
 * rule, else the least recently used active one; never a manual rule.
 */
static dcand_t *
cand_new_but(sh_dust_t *d, uint64_t host, uint64_t pattern, uint8_t kind,
             uint64_t arg, const dcand_t *keep)
{
    uint64_t k = cand_key(host, pattern, kind, arg);
    dcand_t *set = cands(d) + (k & (d->cand_sets - 1)) * CAND_WAYS;
    dcand_t *v = NULL;
    unsigned i;
    int      vrank = 0, rank;

    for (i = 0; i < CAND_WAYS; i++) {
        if (set[i].host == 0) {
            v = &set[i];
            break;
        }
        if (manual(&set[i]) || &set[i] == keep) {
            continue;
        }
        rank = on(&set[i]) ? 1 : 2;
        if (v == NULL || rank > vrank
            || (rank == vrank && set[i].stamp < v->stamp))
        {
            v = &set[i];
            vrank = rank;
        }
    }
    if (v == NULL) {
        return NULL;
    }
    if (v->host != 0) {
        d->stats.candidate_evictions++;
        if (v->kind == SH_DUST_HOST_ALIAS && on(v)) {
            alias_off(d, v->host, v->arg);
        }
    }
    memset(v, 0, sizeof(*v));
    v->host = host;
    v->pattern = pattern;
    v->kind = kind;
    v->arg = arg;
    v->stamp = ++d->clock;
    return v;
}

static dcand_t *
cand_new(sh_dust_t *d, uint64_t host, uint64_t pattern, uint8_t kind,
         uint64_t arg)
{
    return cand_new_but(d, host, pattern, kind, arg, NULL);
}

static double
wilson_lower(uint32_t s, uint32_t a, double z)
{
    double n = (double) s + a, p, z2, c;

    if (n == 0) {
        return 0.0;
    }
    p = s / n;
    z2 = z * z;
    c = p + z2 / (2 * n)
        - z * sqrt(p * (1 - p) / n + z2 / (4 * n * n));
    return c / (1 + z2 / n);
}

static double
llr(const sh_dust_t *d, const dcand_t *c)
{
    return c->support * d->llr_pair - c->against * d->llr_against;
}

/* A scoped rule's learned record host-wide (good: the scopes of the host
 * it turned on in, bad: those it was retired in), or NULL. */
static inline int
scoped(const dcand_t *c)
{
    return c->kind != SH_DUST_HOST_ALIAS && c->pattern != 0
           && c->pattern != PAT_HOST;
}

/*
 * What a scope's own pairs must reach.  Alone: llr_on.  A rule that has
 * turned on in other scopes of the host (or of its alias: one site) is
 * likely good here too: with g scopes good and b bad so far, Laplace's
 * rule puts the chance that it is bad in a new scope at (b + 1) / (g + b
 * + 2), so testing at a' = a (g + b + 2) / (b + 1) keeps the chance of
 * turning a bad rule on in a scope at a, on average over the host's
 * scopes (capped at PRIOR_ALPHA_MAX: a scope always brings some pairs of
 * its own).  The scope's own pairs against still count at full weight:
 * a trap in one scope (a v= that is a cache-buster elsewhere and a
 * version here) holds the rule off there.
 */
static double
scope_need(sh_dust_t *d, const dcand_t *c)
{
    const dcand_t *hw;
    const dhost_t *h;
    uint64_t       partner = 0;
    double         g = 0, b = 0, a;
    unsigned       i;

    if (!scoped(c)) {
        return d->llr_on;
    }
    h = host_find(d, c->host);
    if (h != NULL) {
        partner = h->alias_to ? h->alias_to : h->alias_from;
    }
    for (i = 0; i < 2; i++) {
        if (i == 1 && partner == 0) {
            break;
        }
        hw = cand_find(d, i ? partner : c->host, PAT_HOST, c->kind, c->arg);
        if (hw != NULL) {
            g += hw->support;
            b += hw->against;
        }
    }
    if (g < 1) {
        return d->llr_on;
    }
    a = d->alpha * (g + b + 2) / (b + 1);
    return need_for(a < PRIOR_ALPHA_MAX ? a : PRIOR_ALPHA_MAX);
}

static int
qualifies(sh_dust_t *d, const dcand_t *c)
{
    return c->support >= d->opts.min_evidence && llr(d, c) >= scope_need(d, c);
}

/* The host's record of c's rule: one more scope good (on) or bad. */
static void
host_record(sh_dust_t *d, const dcand_t *c, int good)
{
    dcand_t *hw;

    if (!scoped(c)) {
        return;
    }
    hw = cand_find(d, c->host, PAT_HOST, c->kind, c->arg);
    if (hw == NULL) {
        hw = cand_new_but(d, c->host, PAT_HOST, c->kind, c->arg, c);
        if (hw == NULL) {
            return;
        }
        copy_text(hw->arg_text, SH_DUST_ARG_TEXT, &hw->arglen, c->arg_text,
                  c->arglen);
    }
    if (good) {
        hw->support++;
    } else {
        hw->against++;
    }
    hw->stamp = ++d->clock;
}

static void
host_text(sh_dust_t *d, uint64_t hash, char *out)
{
    dhost_t *h = host_find(d, hash);
    size_t   n = h ? h->textlen : 0;

    if (n > 0) {
        memcpy(out, h->text, n);
    }
    out[n] = '\0';
}

static void
rule_info(sh_dust_t *d, const dcand_t *c, sh_dust_rule_info_t *r)
{
    uint32_t n = c->support + c->against;

    memset(r, 0, sizeof(*r));
    r->host_hash = c->host;
    r->pattern_hash = c->pattern;
    r->arg_hash = c->arg;
    host_text(d, c->host, r->host);
    if (c->pattern == 0) {
        strcpy(r->pattern, "*");
    } else if (c->pattern == PAT_HOST) {
        strcpy(r->pattern, "**");   /* scopes on (support), off */
    } else if (c->pattern == PAT_ROOT) {
        strcpy(r->pattern, "/");
    } else {
        r->pattern[0] = '/';
        memcpy(r->pattern + 1, c->pat_text, c->patlen);
        r->pattern[1 + c->patlen] = '/';
        r->pattern[2 + c->patlen] = '\0';
    }
    memcpy(r->arg, c->arg_text, c->arglen);
    r->arg[c->arglen] = '\0';
    r->kind = (sh_dust_kind_t) c->kind;
    r->state = (sh_dust_state_t) c->state;
    r->support = c->support;
    r->against = c->against;
    r->precision = n ? (double) c->support / n : 0.0;
    r->lower = wilson_lower(c->support, c->against, d->opts.z);
    r->llr = llr(d, c);
    r->need = scope_need(d, c);
    r->last = c->last;
}

static void
record(sh_dust_t *d, const dcand_t *c, sh_dust_state_t from, uint64_t now)
{
    sh_dust_change_t *ch = &ring(d)[d->change_seq % SH_DUST_CHANGES];

    ch->seq = ++d->change_seq;
    ch->time = now;
    ch->from = from;
    rule_info(d, c, &ch->rule);
}

/*
 * An alias on: the two hosts are joined.  The source's URLs take the
 * target's host, and each host's URLs the other's rules too (canonical()),
 * so that it predicts whichever of the two learned a rule first.  A
 * learned alias (its candidate is named by hash order, so that both hosts'
 * pairs count for one) points at the host with more requests, whose URLs
 * already are the canonical table's forms; a pin points as the operator
 * wrote it; a join made stays as it is while the alias stays on.
 */
static void
alias_on(sh_dust_t *d, const dcand_t *c)
{
    uint64_t from = c->host, to = c->arg, t;
    dhost_t *hf = host_find(d, from), *ht = host_find(d, to), *x;

    if (!manual(c) && !same_site(d, from, to)) {
        return;                 /* never on (evaluate): an old image's */
    }
    if ((ht != NULL && ht->alias_to == from)
        || (hf != NULL && ht != NULL && hf->alias_to != to && !manual(c)
            && hf->requests > ht->requests))
    {
        t = from, from = to, to = t;
        x = hf, hf = ht, ht = x;
    }
    if (hf != NULL) {
        hf->bloom |= bloom_bit(c->kind, to);
        hf->alias_to = to;
    }
    if (ht != NULL) {
        /* the target's URLs are canonical forms: its observations must
         * fill the canonical table too */
        ht->bloom |= bloom_bit(c->kind, from);
        ht->alias_from = from;
    }
}

/* The host learns that c is on: its hint bit, its alias. */
static void
mark_on(sh_dust_t *d, const dcand_t *c)
{
    dhost_t *h;

    if (c->kind == SH_DUST_HOST_ALIAS) {
        alias_on(d, c);
        return;
    }
    h = host_find(d, c->host);
    if (h != NULL) {
        h->bloom |= bloom_bit(c->kind, c->arg);
    }
}

/* The alias of hosts a and b off: their join undone, whichever way. */
static void
alias_off(sh_dust_t *d, uint64_t a, uint64_t b)
{
    dhost_t *h;
    unsigned i;

    for (i = 0; i < 2; i++) {
        if ((h = host_find(d, i ? b : a)) != NULL) {
            if (h->alias_to == (i ? a : b)) {
                h->alias_to = 0;
            }
            if (h->alias_from == (i ? a : b)) {
                h->alias_from = 0;
            }
        }
    }
}

/* The candidate of the alias of hosts a and b, whichever way it is named. */
static dcand_t *
alias_cand(sh_dust_t *d, uint64_t a, uint64_t b)
{
    dcand_t *c = cand_find(d, a, 0, SH_DUST_HOST_ALIAS, b);

    return (c != NULL && on(c)) ? c
                                : cand_find(d, b, 0, SH_DUST_HOST_ALIAS, a);
}

static void
mark_off(sh_dust_t *d, const dcand_t *c)
{
    if (c->kind == SH_DUST_HOST_ALIAS) {
        alias_off(d, c->host, c->arg);
    }
}

/* A learned HOST_ALIAS turns on only between hosts of one site (an
 * import's and an image's too); the other kinds always may. */
static int
joinable(sh_dust_t *d, const dcand_t *c)
{
    return c->kind != SH_DUST_HOST_ALIAS || same_site(d, c->host, c->arg);
}

static dcanon_t *canon_get(sh_dust_t *d, uint64_t key, int create,
                           int *found);

/*
 * A rule just on in its scope: the documents its scope fetched before
 * enter the canonical table under R(w), from the reverse entries (one per
 * URL w and rule R that changes it, with R(w)'s hash).  The canonical
 * table only learns forms while rules are on, so without this a page
 * fetched before (under a session id, say) is not known to the rule's
 * later predictions but through R's own evidence, which a URL that some
 * other rule also changes (an alias URL, a tracking tag) never reaches.
 * R(w) may not be all of c(w) (another rule on too): the entry is then
 * one more key of w's document, matched only by a URL that the active
 * rules make R(w).  An entry already there is kept.  One pass over the
 * evidence table, once per activation (tens in a crawl).
 */
static void
backfill(sh_dust_t *d, const dcand_t *c)
{
    devid_t  *e = evids(d), *end = e + (size_t) d->evid_sets * EVID_WAYS;
    dcanon_t *ce;
    int       found;

    if (!scoped(c)) {
        return;
    }
    for (; e < end; e++) {
        if (e->way.key == 0 || e->kind != c->kind || e->aux != c->arg
            || e->pattern != c->pattern || e->host != c->host
            || e->image == 0)
        {
            continue;
        }
        ce = canon_get(d, e->image, 1, &found);
        if (ce != NULL && !found) {
            ce->rep = e->rep;
            ce->url = e->url;
        }
    }
}

/* The learned state after new counts: activate, retire, or neither. */
static int
evaluate(sh_dust_t *d, dcand_t *c, uint64_t now)
{
    dcand_t *w;
    uint8_t  from = c->state;

    if (manual(c) || c->pattern == PAT_HOST) {
        return 0;               /* a host's record is never a rule */
    }
    if (c->state == SH_DUST_ACTIVE) {
        if (qualifies(d, c) && joinable(d, c)) {
            mark_on(d, c);      /* the host may have lost its hint */
            return 0;
        }
        c->state = SH_DUST_RETIRED;
        c->retired_support = c->support;
        d->stats.retirements++;
        mark_off(d, c);
        host_record(d, c, 0);
    } else {
        if (!qualifies(d, c) || !joinable(d, c)
            || (c->state == SH_DUST_RETIRED
                && c->support < 2 * (uint64_t) c->retired_support))
        {
            return 0;
        }
        /* a host-wide forbid outranks any pattern's evidence */
        w = c->pattern ? cand_find(d, c->host, 0, c->kind, c->arg) : NULL;
        if (w != NULL && w->state == SH_DUST_FORBIDDEN) {
            return 0;
        }
        c->state = SH_DUST_ACTIVE;
        d->stats.activations++;
        mark_on(d, c);
        host_record(d, c, 1);
        backfill(d, c);
    }
    record(d, c, (sh_dust_state_t) from, now);
    return 1;
}

typedef struct {
    uint64_t    host;
    uint64_t    pattern;
    const char *pat;            /* the pattern's component, for display */
    uint32_t    patlen;
} scope_t;

/* One pair for (scope, atom): support if same, else against. */
static int
evidence(sh_dust_t *d, const scope_t *sc, const atom_t *a, int same,
         uint64_t now)
{
    dcand_t *c = cand_find(d, sc->host, sc->pattern, a->kind, a->arg);

    if (c == NULL) {
        if (!same) {
            return 0;           /* a candidate starts with support */
        }
        c = cand_new(d, sc->host, sc->pattern, a->kind, a->arg);
        if (c == NULL) {
            return 0;
        }
        copy_text(c->arg_text, SH_DUST_ARG_TEXT, &c->arglen, a->text,
                  a->textlen);
        copy_text(c->pat_text, SH_DUST_PAT_TEXT, &c->patlen, sc->pat,
                  sc->patlen);
    }
    /* a candidate made from a reverse pair has no text yet */
    if (c->arglen == 0 && a->textlen > 0) {
        copy_text(c->arg_text, SH_DUST_ARG_TEXT, &c->arglen, a->text,
                  a->textlen);
    }
    if (c->patlen == 0 && sc->patlen > 0) {
        copy_text(c->pat_text, SH_DUST_PAT_TEXT, &c->patlen, sc->pat,
                  sc->patlen);
    }
    if (same) {
        c->support++;
        d->stats.support++;
    } else {
        c->against++;
        d->stats.against++;
    }
    if (c->support + c->against > COUNT_MAX) {
        c->support /= 2;
        c->against /= 2;
        c->retired_support /= 2;
    }
    c->stamp = ++d->clock;
    c->last = now;
    return evaluate(d, c, now);
}

/*
 * A pair against a rule of the other host of an alias (one site, or the
 * operator's pin) applied to this host's URLs in scope sc: counted in
 * this host's own candidate, made for it if need be (evidence() alone
 * would lose it: a candidate starts with support), and the rule retired
 * here at once.  canonical() does not borrow a rule the borrower has
 * evidence against, so the first verification that shows a borrowed rule
 * wrong on a host is the last wrong answer it gives there; it comes back
 * only by the host's own evidence (the bound, and support doubled since).
 * The lender's rule keeps its state by its own counts.
 */
static int
borrowed(sh_dust_t *d, const scope_t *sc, const atom_t *a, uint64_t now)
{
    dcand_t *c = cand_find(d, sc->host, sc->pattern, a->kind, a->arg);
    uint8_t  from;
    int      n;

    if (c == NULL) {
        c = cand_new(d, sc->host, sc->pattern, a->kind, a->arg);
        if (c == NULL) {
            return 0;
        }
        copy_text(c->arg_text, SH_DUST_ARG_TEXT, &c->arglen, a->text,
                  a->textlen);
        copy_text(c->pat_text, SH_DUST_PAT_TEXT, &c->patlen, sc->pat,
                  sc->patlen);
    }
    n = evidence(d, sc, a, 0, now);
    if (manual(c) || on(c) || c->state == SH_DUST_RETIRED) {
        return n;
    }
    from = c->state;
    c->state = SH_DUST_RETIRED;
    c->retired_support = c->support;
    d->stats.retirements++;
    record(d, c, (sh_dust_state_t) from, now);
    return n + 1;
}

/*
 * A pair of u (in scope sc) for the rule on for it (its atom a), learned
 * in scope ls.  Support counts in u's own scope, as any pair.  A pair
 * against, when ls is the other host's, counts where the rule was learned
 * -- the rule that made u's canonical form is the one a verification of
 * its prediction judges; u's own scope has no candidate to take it -- and
 * retires the rule for u's scope (borrowed()).
 */
static int
credit(sh_dust_t *d, const scope_t *sc, const atom_t *a, const scope_t *ls,
       int same, uint64_t now)
{
    if (same || ls->host == sc->host) {
        return evidence(d, sc, a, same, now);
    }
    return evidence(d, ls, a, 0, now) + borrowed(d, sc, a, now);
}

/* ---- Evidence and canonical tables. ---- */

/*
 * The entry of `key` in a set of `ways` entries of `size` bytes, each
 * beginning with its dway_t; *found says whether it was there.  Not there
 * and `create`: the set's free or least recently used entry, emptied and
 * given the key; else NULL.
 */
static void *
way_get(sh_dust_t *d, unsigned char *set, size_t size, unsigned ways,
        uint64_t key, int create, int *found)
{
    dway_t   *w, *v = NULL;
    unsigned  i;

    *found = 0;
    for (i = 0; i < ways; i++) {
        w = (dway_t *) (set + i * size);
        if (w->key == key) {
            *found = 1;
            w->stamp = ++d->clock;
            return w;
        }
        if (v == NULL || w->key == 0
            || (v->key != 0 && w->stamp < v->stamp))
        {
            v = w;
        }
    }
    if (!create) {
        return NULL;
    }
    memset(v, 0, size);
    v->key = key;
    v->stamp = ++d->clock;
    return v;
}

static devid_t *
evid_get(sh_dust_t *d, uint64_t key, int create, int *found)
{
    devid_t *set = evids(d) + (key & (d->evid_sets - 1)) * EVID_WAYS;

    return way_get(d, (unsigned char *) set, sizeof(*set), EVID_WAYS, key,
                   create, found);
}

static dcanon_t *
canon_get(sh_dust_t *d, uint64_t key, int create, int *found)
{
    dcanon_t *set = canons(d) + (key & (d->canon_sets - 1)) * CANON_WAYS;

    return way_get(d, (unsigned char *) set, sizeof(*set), CANON_WAYS, key,
                   create, found);
}

#define KEY_PAIR    0x2f8ad1c39e6b5074ULL
#define KEY_IDENT   0x7c15e2b9a0d4f863ULL
#define KEY_ALIAS   0xe93b6a07d5c2184fULL
#define KEY_APATH   0x2c85f1d96ab37e04ULL
#define KEY_REV     0x4b90c6e2a1f3d857ULL

/* ---- A URL's atomic rules and scope. ---- */

static unsigned
atoms(const sh_url_t *u, atom_t *out)
{
    unsigned    i, j, n = 0;
    uint32_t    seen = 0, mask;
    const char *pn, *eq, *semi;
    size_t      pl;

    for (i = 0; i < u->nparams; i++) {
        if (seen >> i & 1) {
            continue;
        }
        mask = 0;
        for (j = i; j < u->nparams; j++) {
            if (u->params[j].name_hash == u->params[i].name_hash) {
                mask |= 1u << j;
            }
        }
        seen |= mask;
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = SH_DUST_DROP_PARAM;
        out[n].arg = u->params[i].name_hash;
        out[n].text = u->params[i].name.p;
        out[n].textlen = u->params[i].name.len;
        out[n].rw.drop_params = mask;
        n++;
    }
    if (u->nparams >= 2 && !u->sorted) {
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = SH_DUST_SORT_PARAMS;
        out[n].rw.sort = 1;
        n++;
    }
    if (u->nsegs >= 2 && u->segs[u->nsegs - 1].seg.len == 0) {
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = SH_DUST_TRAILING_SLASH;
        out[n].rw.trailing_slash = 1;
        n++;
    }
    if (u->nsegs >= 1) {
        const sh_url_seg_t *s = &u->segs[u->nsegs - 1];
        const char         *dot = s->seg.len > 1
                                  ? memchr(s->seg.p + 1, '.', s->seg.len - 1)
                                  : NULL;

        /* a file name with an extension: index.html, default.aspx */
        if (dot != NULL && s->seg.p[0] != '.') {
            memset(&out[n], 0, sizeof(out[n]));
            out[n].kind = SH_DUST_INDEX_FILE;
            out[n].arg = s->hash;
            out[n].text = s->seg.p;
            out[n].textlen = s->seg.len;
            out[n].rw.index_file = 1;
            n++;
        }
    }
    if (u->upper) {
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = SH_DUST_PATH_CASE;
        out[n].rw.lower = 1;
        n++;
    }
    /* a path parameter by its name, wherever it is: the Java servlet's
     * ";jsessionid=HEX" on the last segment, a ";sid=" of another */
    seen = 0;
    for (i = 0; i < u->nsegs; i++) {
        if ((seen >> i & 1) || u->segs[i].pname == 0) {
            continue;
        }
        mask = 0;
        for (j = i; j < u->nsegs; j++) {
            if (u->segs[j].pname == u->segs[i].pname) {
                mask |= 1u << j;
            }
        }
        seen |= mask;
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = SH_DUST_DROP_PATH_PARAM;
        out[n].arg = u->segs[i].pname;
        pn = u->segs[i].seg.p + u->segs[i].base_len + 1;
        pl = u->segs[i].seg.len - u->segs[i].base_len - 1;
        eq = memchr(pn, '=', pl);
        semi = memchr(pn, ';', pl);
        eq = (semi != NULL && (eq == NULL || semi < eq)) ? semi : eq;
        out[n].text = pn;
        out[n].textlen = eq ? (uint32_t) (eq - pn) : (uint32_t) pl;
        out[n].rw.drop_pparams = mask;
        n++;
    }
    seen = 0;
    for (i = 0; u->nsegs >= 2 && i < u->nsegs; i++) {
        if ((seen >> i & 1) || u->segs[i].seg.len == 0) {
            continue;
        }
        mask = 0;
        for (j = i; j < u->nsegs; j++) {
            if (u->segs[j].hash == u->segs[i].hash) {
                mask |= 1u << j;
            }
        }
        seen |= mask;
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = SH_DUST_DROP_COMPONENT;
        out[n].arg = u->segs[i].hash;
        out[n].text = u->segs[i].seg.p;
        out[n].textlen = u->segs[i].seg.len;
        out[n].rw.drop_segs = mask;
        n++;
    }
    return n;
}

static void
scope_of(const sh_url_t *u, scope_t *sc)
{
    sc->host = u->host_hash;
    if (u->nsegs >= 2) {
        sc->pattern = nonzero(u->segs[0].hash);
        sc->pat = u->segs[0].seg.p;
        sc->patlen = u->segs[0].seg.len;
    } else {
        sc->pattern = PAT_ROOT;
        sc->pat = "";
        sc->patlen = 0;
    }
}

static void
merge_rw(sh_url_rw_t *to, const sh_url_rw_t *from)
{
    to->drop_params |= from->drop_params;
    to->drop_segs |= from->drop_segs;
    to->sort |= from->sort;
    to->index_file |= from->index_file;
    to->trailing_slash |= from->trailing_slash;
    to->lower |= from->lower;
}

/* The rule of atom a that is on for host h in `pattern` (or host-wide,
 * pinned), or NULL: none, or forbidden host-wide. */
static dcand_t *
rule_on(sh_dust_t *d, const dhost_t *h, uint64_t pattern, const atom_t *a)
{
    dcand_t *c, *w;

    if (h == NULL || !(h->bloom & bloom_bit(a->kind, a->arg))) {
        return NULL;
    }
    w = h->wild ? cand_find(d, h->hash, 0, a->kind, a->arg) : NULL;
    if (w != NULL && w->state == SH_DUST_FORBIDDEN) {
        return NULL;
    }
    c = (w != NULL && w->state == SH_DUST_PINNED)
        ? w : cand_find(d, h->hash, pattern, a->kind, a->arg);
    return (c != NULL && on(c)) ? c : NULL;
}

/* Whether h refuses the other host's rule of atom a for its URLs in
 * `pattern`: it forbids it there or host-wide (a forbid sets no hint bit:
 * it is looked up), or has evidence of its own against it there and not
 * enough for it (retired, or a pair against counted: borrowed(), or
 * another node's record of that, which an import leaves a candidate). */
static int
refuses(sh_dust_t *d, const dhost_t *h, uint64_t pattern, const atom_t *a)
{
    dcand_t *c;

    if (h->pins != 0) {
        c = cand_find(d, h->hash, 0, a->kind, a->arg);
        if (c != NULL && c->state == SH_DUST_FORBIDDEN) {
            return 1;
        }
    }
    c = cand_find(d, h->hash, pattern, a->kind, a->arg);
    return c != NULL && (c->state == SH_DUST_FORBIDDEN
                         || c->state == SH_DUST_RETIRED || c->against > 0);
}

/*
 * The scope a path rewrite moves u into, when it changes u's first
 * component (drop_component(amp) of /amp/docs/x, path_case of
 * /Docs/X.HTML): its pattern, or 0 when u stays in its own scope.
 */
static uint64_t
moved_to(const sh_url_t *u, const sh_url_rw_t *rw)
{
    unsigned i;

    if (rw->lower && u->nsegs >= 2 && u->segs[0].lower != u->segs[0].hash) {
        return nonzero(u->segs[0].lower);
    }
    if (!(rw->drop_segs & 1)) {
        return 0;
    }
    for (i = 1; i + 1 < u->nsegs; i++) {
        if (!(rw->drop_segs >> i & 1)) {
            return nonzero(rw->lower ? u->segs[i].lower : u->segs[i].hash);
        }
    }
    return PAT_ROOT;
}

/*
 * The rules of the scope u is moved into (pattern to), on host h or its
 * alias `other`, for the atoms that rewrite the query or a path
 * parameter (not yet in rw): merged into rw, each atom's index in
 * which[] and rule in applied[] from n on; the new count.  R(u) is u in
 * its own scope and T(R(u)) is R(u) in the other, so T(R(u)) is u: an
 * /amp/ page with a session id is the /docs/ page its scope's rules make
 * of it, with no session rule learned again under /amp/.
 */
static unsigned
moved_rules(sh_dust_t *d, dhost_t *h, dhost_t *other, uint64_t to,
            const atom_t *a, unsigned na, const uint8_t *skip,
            sh_url_rw_t *rw, dcand_t **applied, int *which, unsigned n)
{
    dcand_t *c;
    unsigned i;

    for (i = 0; i < na; i++) {
        if ((skip != NULL && skip[i])
            || (a[i].kind != SH_DUST_DROP_PARAM
                && a[i].kind != SH_DUST_SORT_PARAMS
                && a[i].kind != SH_DUST_DROP_PATH_PARAM))
        {
            continue;
        }
        c = rule_on(d, h, to, &a[i]);
        if (c == NULL && other != NULL
            && (c = rule_on(d, other, to, &a[i])) != NULL
            && refuses(d, h, to, &a[i]))
        {
            c = NULL;
        }
        if (c != NULL) {
            merge_rw(rw, &a[i].rw);
            if (applied != NULL) {
                which[n] = (int) i;
                applied[n] = c;
            }
            n++;
        }
    }
    return n;
}

/*
 * c(u): the rewrite of every rule on for u's scope, the rules applied in
 * applied[] and their atoms' indices in which[] (-1: the host alias),
 * their count returned.  With an active alias the two hosts' rules both
 * apply, on either host's URLs: a URL of the source takes the target's
 * host and the rules of both; a URL of the target keeps its host and
 * takes the source's rules too.  A host's forbid holds for its own URLs
 * whatever the other host learned, and so does its own evidence against
 * a rule (refuses()).
 */
static unsigned
canonical(sh_dust_t *d, const sh_url_t *u, const scope_t *sc, dhost_t *h,
          const atom_t *a, unsigned na, sh_url_rw_t *rw, dcand_t **applied,
          int *which)
{
    dcand_t *c;
    dhost_t *own = h, *other = NULL;
    uint64_t to;
    unsigned i, n = 0;

    memset(rw, 0, sizeof(*rw));
    if (h->alias_to != 0) {
        c = alias_cand(d, sc->host, h->alias_to);
        if (c != NULL && on(c)) {
            rw->host = h->alias_to;
            which[n] = -1;
            applied[n++] = c;
            other = host_find(d, h->alias_to);
        }
    } else if (h->alias_from != 0) {
        other = host_find(d, h->alias_from);
    }
    if (own->bloom == 0 && (other == NULL || other->bloom == 0)) {
        return n;
    }
    for (i = 0; i < na; i++) {
        c = rule_on(d, own, sc->pattern, &a[i]);
        if (c == NULL && other != NULL
            && (c = rule_on(d, other, sc->pattern, &a[i])) != NULL
            && refuses(d, own, sc->pattern, &a[i]))
        {
            c = NULL;
        }
        if (c != NULL) {
            merge_rw(rw, &a[i].rw);
            which[n] = (int) i;
            applied[n++] = c;
        }
    }
    /* a path rule that moved u into another scope: that scope's query
     * rules too */
    if (n > 0 && (to = moved_to(u, rw)) != 0 && to != sc->pattern) {
        uint8_t done[ATOMS_MAX];

        memset(done, 0, na);
        for (i = 0; i < n; i++) {
            if (which[i] >= 0) {
                done[which[i]] = 1;
            }
        }
        n = moved_rules(d, own, other, to, a, na, done, rw, applied, which,
                        n);
    }
    return n;
}

/* Pairs of the same path on two hosts: HOST_ALIAS(larger -> smaller). */
static int
alias_pair(sh_dust_t *d, uint64_t other, const sh_url_t *u, int same,
           uint64_t now)
{
    uint64_t from = u->host_hash > other ? u->host_hash : other;
    uint64_t to = u->host_hash > other ? other : u->host_hash;
    dhost_t *th = host_find(d, to);
    scope_t  sc;
    atom_t   a;

    if (host_find(d, from) == NULL || !same_site(d, from, to)) {
        return 0;               /* two sites: not even a candidate */
    }
    memset(&a, 0, sizeof(a));
    a.kind = SH_DUST_HOST_ALIAS;
    a.arg = to;
    a.text = th ? th->text : "";
    a.textlen = th ? th->textlen : 0;
    sc.host = from;
    sc.pattern = 0;
    sc.pat = "";
    sc.patlen = 0;
    return evidence(d, &sc, &a, same, now);
}

/*
 * A pair across hosts that the exact comparison misses: u (on host h) and
 * the last URL of its path on host `other`, when other has rules.  u is
 * put in other's canonical form (its host, its rules for u's pattern); if
 * other's canonical table knows that form from another URL, the two
 * documents are one (support for an alias of the two hosts) or not.  A
 * session id on both hosts, which no two links share, otherwise hides an
 * alias until each host has learned its own rule.
 */
static void
cross_alias(sh_dust_t *d, const sh_url_t *u, const scope_t *sc,
            const dhost_t *h, const atom_t *a, unsigned na, uint64_t other,
            uint64_t rep, uint64_t hu, uint64_t now)
{
    dcand_t     *applied[ATOMS_MAX + 1];
    int          which[ATOMS_MAX + 1], found;
    sh_url_rw_t  rw;
    scope_t      os = *sc;
    dhost_t     *oh = host_find(d, other);
    dcanon_t    *ce;

    if (oh == NULL || oh->bloom == 0
        || h->alias_to == other || h->alias_from == other)
    {
        return;                 /* no rules there, or joined already */
    }
    os.host = other;
    canonical(d, u, &os, oh, a, na, &rw, applied, which);
    if (rw.host == 0) {
        rw.host = other;
    }
    ce = canon_get(d, sh_url_hash(u, &rw), 0, &found);
    if (ce != NULL && ce->url != hu) {
        alias_pair(d, other, u, ce->rep == rep, now);
    }
}

/* ---- Observe and predict. ---- */

/*
 * An observation's evidence, for each atomic rule R that changes u:
 *   pair     K(scope, R, R'(u)): the last other URL R mapped there;
 *   forward  R'(u) itself, fetched before u (its identity entry);
 *   reverse  u itself is R(w) of an earlier w (w left a reverse entry
 *            under R(w), which u's identity finds).
 * R'(u) is R(u) composed with the rules already on for u's scope, so
 * that a rule whose pairs only line up once another is on (utm_source
 * behind a session id) is learned too; an active rule's own pairs are
 * taken without composition, so that its evidence stays its own.  A
 * re-fetch of a URL already seen makes no forward or reverse pair (it
 * was counted when first seen).
 */
int
sh_dust_observe(sh_dust_t *d, const char *url, size_t len, uint64_t rep,
                uint64_t now)
{
    sh_url_t     u;
    atom_t       a[ATOMS_MAX], ra;
    dcand_t     *applied[ATOMS_MAX + 1];
    scope_t      lender[ATOMS_MAX];     /* where each active atom's rule
                                           was learned (values: a slot
                                           can be reused on the way) */
    int          which[ATOMS_MAX + 1];
    uint8_t      isactive[ATOMS_MAX];
    sh_url_rw_t  rw, rwi;
    scope_t      sc, rs;
    dhost_t     *h;
    devid_t     *e;
    dcanon_t    *ce;
    dhost_t     *oh;
    uint64_t     hu, hr, hc, mt, seq0 = d->change_seq;
    unsigned     i, n, na = 0;
    int          found, refetch, paired;

    if (sh_url_parse(&u, url, len) != 0) {
        d->stats.refused++;
        return -1;
    }
    sh_url_hash_parts(&u, d->secret);
    d->stats.observed++;
    h = host_get(d, u.host_hash, u.host.p, u.host.len, 1);
    if (h == NULL) {
        return 0;               /* every way pinned: no room to learn */
    }
    h->requests++;
    h->last = now;
    scope_of(&u, &sc);
    hu = sh_url_hash(&u, NULL);
    e = evid_get(d, nonzero(sh_url_step(KEY_IDENT, hu)), 0, &found);
    refetch = e != NULL && e->url == hu;

    n = atoms(&u, a);
    memset(isactive, 0, n);
    memset(&rw, 0, sizeof(rw));
    if (h->bloom != 0 || h->alias_to != 0) {
        na = canonical(d, &u, &sc, h, a, n, &rw, applied, which);
        for (i = 0; i < na; i++) {
            if (which[i] >= 0) {
                isactive[which[i]] = 1;
                lender[which[i]] = (scope_t) { applied[i]->host,
                                               applied[i]->pattern, "", 0 };
            }
        }
    }

    hc = na > 0 ? sh_url_hash(&u, &rw) : hu;
    for (i = 0; i < n; i++) {
        rwi = a[i].rw;
        if (na > 0 && !isactive[i]) {
            merge_rw(&rwi, &rw);
            rwi.host = rw.host;
        }
        hr = sh_url_hash(&u, &rwi);
        if (!isactive[i] && hr == hc) {
            continue;           /* nothing beyond the rules already on */
        }

        /* two URLs of one canonical form say nothing of a rule composed
         * with the rules that made them one */
        e = evid_get(d, nonzero(sh_url_step(cand_key(sc.host, sc.pattern,
                                              a[i].kind, a[i].arg)
                                     ^ KEY_PAIR, hr)), 1, &found);
        if (found && e->url != hu && (isactive[i] || e->aux != hc)) {
            if (isactive[i]) {
                credit(d, &sc, &a[i], &lender[i], e->rep == rep, now);
            } else {
                evidence(d, &sc, &a[i], e->rep == rep, now);
            }
        }
        e->rep = rep;
        e->url = hu;
        e->aux = hc;

        if (!refetch) {
            e = evid_get(d, nonzero(sh_url_step(KEY_IDENT, hr)), 0, &found);
            if (found && e->url != hu && isactive[i]) {
                credit(d, &sc, &a[i], &lender[i], e->rep == rep, now);
            } else if (found && e->url != hu) {
                evidence(d, &sc, &a[i], e->rep == rep, now);
            } else if (na > 0 && !isactive[i]) {
                /* a URL whose canonical form R'(u) is */
                ce = canon_get(d, hr, 0, &found);
                if (ce != NULL && ce->url != hu) {
                    evidence(d, &sc, &a[i], ce->rep == rep, now);
                }
            } else if (!isactive[i] && (mt = moved_to(&u, &rwi)) != 0
                       && mt != sc.pattern)
            {
                /* a path rule that moves u into another scope, composed
                 * with that scope's query rules: /amp/docs/x?sid=A is
                 * /docs/x, a canonical form there */
                sh_url_rw_t rwm = rwi;
                dhost_t    *ot = h->alias_to ? host_find(d, h->alias_to)
                                 : h->alias_from ? host_find(d, h->alias_from)
                                 : NULL;

                if (moved_rules(d, h, ot, mt, a, n, NULL, &rwm, NULL, NULL,
                                0) > 0)
                {
                    if (h->alias_to != 0) {
                        rwm.host = h->alias_to;
                    }
                    ce = canon_get(d, sh_url_hash(&u, &rwm), 0, &found);
                    if (ce != NULL && ce->url != hu) {
                        evidence(d, &sc, &a[i], ce->rep == rep, now);
                    }
                }
            }
        }

        e = evid_get(d, nonzero(sh_url_step(KEY_REV, hr)), 1, &found);
        e->rep = rep;
        e->url = hu;
        e->aux = a[i].arg;
        e->pattern = sc.pattern;
        e->host = sc.host;
        e->image = hr;
        e->kind = a[i].kind;
    }

    /* u, or its canonical form, is R'(w) of an earlier w */
    for (i = 0; !refetch && i < (hc != hu ? 2u : 1u); i++) {
        e = evid_get(d, nonzero(sh_url_step(KEY_REV, i ? hc : hu)), 0, &found);
        if (found && e->url != hu && e->kind != 0) {
            memset(&ra, 0, sizeof(ra));
            ra.kind = e->kind;
            ra.arg = e->aux;
            rs = sc;
            if (e->pattern != sc.pattern) {
                rs.pattern = e->pattern;
                rs.pat = "";
                rs.patlen = 0;
            }
            found = e->rep == rep;
            e->url = hu;        /* this pair is counted */
            e->rep = rep;
            evidence(d, &rs, &ra, found, now);
            break;
        }
    }

    /* the same path and query on another host */
    rwi = (sh_url_rw_t) { .no_host = 1 };
    e = evid_get(d, nonzero(sh_url_step(KEY_ALIAS, sh_url_hash(&u, &rwi))), 1,
                 &found);
    paired = found && e->aux != u.host_hash && e->url != hu;
    if (paired) {
        alias_pair(d, e->aux, &u, e->rep == rep, now);
    }
    e->rep = rep;
    e->url = hu;
    e->aux = u.host_hash;

    /* else the same path on another host that has rules: u in that
     * host's canonical form */
    e = evid_get(d, nonzero(sh_url_step(KEY_APATH, sh_url_path_hash(&u,
                                                                   NULL))),
                 1, &found);
    if (found && e->aux != u.host_hash && !paired && !refetch) {
        cross_alias(d, &u, &sc, h, a, n, e->aux, rep, hu, now);
    }
    if (!found || h->bloom != 0 || e->aux == u.host_hash
        || (oh = host_find(d, e->aux)) == NULL || oh->bloom == 0)
    {
        e->rep = rep;           /* a host with rules is kept: its */
        e->url = hu;            /* canonical table can answer */
        e->aux = u.host_hash;
    }

    e = evid_get(d, nonzero(sh_url_step(KEY_IDENT, hu)), 1, &found);
    e->rep = rep;
    e->url = hu;

    /* the canonical table: checked and refreshed while rules are on */
    if (h->bloom != 0 || h->alias_to != 0) {
        ce = canon_get(d, sh_url_hash(&u, &rw), 1, &found);
        if (found && na > 0 && ce->url != hu) {
            for (i = 0; i < na; i++) {
                if (which[i] >= 0) {
                    /* the pair is the rule's, as the canonical form it
                     * made; against, a borrowed rule is retired here */
                    evidence(d, &lender[which[i]], &a[which[i]],
                             ce->rep == rep, now);
                    if (ce->rep != rep && lender[which[i]].host != sc.host) {
                        borrowed(d, &sc, &a[which[i]], now);
                    }
                } else {
                    scope_t cs = { applied[i]->host, 0, "", 0 };
                    atom_t  ca;

                    memset(&ca, 0, sizeof(ca));
                    ca.kind = applied[i]->kind;
                    ca.arg = applied[i]->arg;
                    evidence(d, &cs, &ca, ce->rep == rep, now);
                }
            }
        }
        ce->rep = rep;
        ce->url = hu;
    }
    return (int) (d->change_seq - seq0);
}

/*
 * Where a prediction's rep comes from: the canonical table, else the
 * evidence of each applied rule alone -- an active rule R maps u and u'
 * together only if they are one document, so the last URL that R mapped
 * to R(u), or R(u) itself fetched, names u's document even when it was
 * fetched before R turned on (the canonical table only knows what came
 * after).  At most 2 probes a rule, after one identity and one
 * canonical probe; then c(u)'s identity and one probe a rule.
 */
static int
find_rep(sh_dust_t *d, const sh_url_t *u, const scope_t *sc, const atom_t *a,
         dcand_t **applied, const int *which, unsigned na,
         const sh_url_rw_t *rw, uint64_t *rep, int *used)
{
    sh_url_rw_t nh;
    dcanon_t   *ce;
    devid_t    *e;
    uint64_t    hu = sh_url_hash(u, NULL), hr;
    unsigned    i;
    int         found;

    /* a URL already seen is the store's to answer: no prediction */
    e = evid_get(d, nonzero(sh_url_step(KEY_IDENT, hu)), 0, &found);
    if (e != NULL && e->url == hu) {
        return 0;
    }
    ce = canon_get(d, sh_url_hash(u, rw), 0, &found);
    if (ce != NULL && ce->url != hu) {
        *rep = ce->rep;
        *used = -1;
        return 1;
    }
    for (i = 0; i < na; i++) {
        if (which[i] < 0) {
            nh = (sh_url_rw_t) { .no_host = 1 };
            e = evid_get(d, nonzero(sh_url_step(KEY_ALIAS,
                                                sh_url_hash(u, &nh))),
                         0, &found);
            if (e != NULL && e->aux == rw->host && e->url != hu) {
                *rep = e->rep;
                *used = (int) i;
                return 1;
            }
            continue;
        }
        hr = sh_url_hash(u, &a[which[i]].rw);
        e = evid_get(d, nonzero(sh_url_step(cand_key(sc->host, sc->pattern,
                                              a[which[i]].kind,
                                              a[which[i]].arg)
                                     ^ KEY_PAIR, hr)), 0, &found);
        if (e == NULL || e->url == hu) {
            e = evid_get(d, nonzero(sh_url_step(KEY_IDENT, hr)), 0, &found);
        }
        if (e != NULL && e->url != hu) {
            *rep = e->rep;
            *used = (int) i;
            return 1;
        }
    }
    /* c(u) itself, fetched, and each applied rule's evidence of c(u) in
     * the scope where the rule was learned: a document fetched before
     * the rules were on (the canonical table does not know it) under a
     * URL that one rule maps to c(u) -- an alias URL with a session id
     * (two rules) of a page its target host fetched before its own
     * session rule was on. */
    hr = sh_url_hash(u, rw);
    e = evid_get(d, nonzero(sh_url_step(KEY_IDENT, hr)), 0, &found);
    if (e != NULL && e->url != hu && e->url != 0) {
        *rep = e->rep;
        *used = -1;
        return 1;
    }
    for (i = 0; i < na; i++) {
        if (which[i] < 0) {
            continue;
        }
        e = evid_get(d, nonzero(sh_url_step(cand_key(applied[i]->host,
                                  applied[i]->pattern ? applied[i]->pattern
                                                      : sc->pattern,
                                  applied[i]->kind, applied[i]->arg)
                                     ^ KEY_PAIR, hr)), 0, &found);
        if (e != NULL && e->url != hu) {
            *rep = e->rep;
            *used = -1;
            return 1;
        }
    }
    return 0;
}

static void
why_add(sh_dust_why_t *why, const dcand_t *c)
{
    why->kinds |= 1u << c->kind;
    if (why->nrules < SH_DUST_WHY_MAX) {
        why->rule[why->nrules].kind = (sh_dust_kind_t) c->kind;
        memcpy(why->rule[why->nrules].arg, c->arg_text, c->arglen);
        why->nrules++;
    }
}

int
sh_dust_predict(sh_dust_t *d, const char *url, size_t len, uint64_t now,
                uint64_t *rep, sh_dust_why_t *why)
{
    sh_url_t     u;
    atom_t       a[ATOMS_MAX];
    dcand_t     *applied[ATOMS_MAX + 1];
    int          which[ATOMS_MAX + 1], used;
    sh_url_rw_t  rw;
    scope_t      sc;
    dhost_t     *h;
    unsigned     i, n, na;

    if (sh_url_parse(&u, url, len) != 0) {
        d->stats.refused++;
        return -1;
    }
    sh_url_hash_parts(&u, d->secret);
    h = host_find(d, u.host_hash);
    if (h == NULL || (h->bloom == 0 && h->alias_to == 0)) {
        return 0;
    }
    scope_of(&u, &sc);
    n = atoms(&u, a);
    na = canonical(d, &u, &sc, h, a, n, &rw, applied, which);
    if (na == 0 || !find_rep(d, &u, &sc, a, applied, which, na, &rw, rep,
                             &used))
    {
        return 0;
    }
    h->predictions++;
    h->last = now;
    d->stats.predicted++;
    if (why != NULL) {
        memset(why, 0, sizeof(*why));
        why->host_hash = u.host_hash;
        for (i = 0; i < na; i++) {
            if (used < 0 || (unsigned) used == i) {
                why_add(why, applied[i]);
            }
        }
    }
    return 1;
}

/* The hash of c(u)'s path; 0 for a refused URL. */
static uint64_t
canonical_path(sh_dust_t *d, const char *url, size_t len)
{
    sh_url_t     u;
    atom_t       a[ATOMS_MAX];
    dcand_t     *applied[ATOMS_MAX + 1];
    int          which[ATOMS_MAX + 1];
    sh_url_rw_t  rw;
    scope_t      sc;
    dhost_t     *h;

    if (sh_url_parse(&u, url, len) != 0) {
        return 0;
    }
    sh_url_hash_parts(&u, d->secret);
    memset(&rw, 0, sizeof(rw));
    h = host_find(d, u.host_hash);
    if (h != NULL) {
        scope_of(&u, &sc);
        canonical(d, &u, &sc, h, a, atoms(&u, a), &rw, applied, which);
    }
    return sh_url_path_hash(&u, &rw);
}

int
sh_dust_same_path(sh_dust_t *d, const char *a, size_t alen, const char *b,
                  size_t blen)
{
    uint64_t pa = canonical_path(d, a, alen), pb;

    if (pa == 0 || (pb = canonical_path(d, b, blen)) == 0) {
        return -1;
    }
    return pa == pb;
}

void
sh_dust_saved(sh_dust_t *d, const sh_dust_why_t *why)
{
    dhost_t *h = host_find(d, why->host_hash);

    d->stats.saved++;
    if (h != NULL) {
        h->saved++;
    }
}

const char *
sh_dust_kind_name(sh_dust_kind_t kind)
{
    switch (kind) {
    case SH_DUST_DROP_PARAM:        return "drop_param";
    case SH_DUST_SORT_PARAMS:       return "sort_params";
    case SH_DUST_TRAILING_SLASH:    return "trailing_slash";
    case SH_DUST_INDEX_FILE:        return "index_file";
    case SH_DUST_PATH_CASE:         return "path_case";
    case SH_DUST_DROP_COMPONENT:    return "drop_component";
    case SH_DUST_HOST_ALIAS:        return "host_alias";
    case SH_DUST_DROP_PATH_PARAM:   return "drop_path_param";
    }
    return "unknown";
}

const char *
sh_dust_state_name(sh_dust_state_t state)
{
    switch (state) {
    case SH_DUST_CANDIDATE: return "candidate";
    case SH_DUST_ACTIVE:    return "active";
    case SH_DUST_RETIRED:   return "retired";
    case SH_DUST_PINNED:    return "pinned";
    case SH_DUST_FORBIDDEN: return "forbidden";
    }
    return "unknown";
}

size_t
sh_dust_why_format(const sh_dust_why_t *why, char *buf, size_t size)
{
    size_t   n = 0;
    unsigned i;
    int      k;

    if (size == 0) {
        return 0;
    }
    buf[0] = '\0';
    for (i = 0; i < why->nrules && n < size; i++) {
        if (why->rule[i].arg[0] != '\0') {
            k = snprintf(buf + n, size - n, "%s%s(%s)", i ? " " : "",
                         sh_dust_kind_name(why->rule[i].kind),
                         why->rule[i].arg);
        } else {
            k = snprintf(buf + n, size - n, "%s%s", i ? " " : "",
                         sh_dust_kind_name(why->rule[i].kind));
        }
        if (k < 0) {
            break;
        }
        n += (size_t) k;
    }
    return n < size ? n : size - 1;
}

/* ---- Pins and lookups by text. ---- */

uint64_t
sh_dust_host_hash(const sh_dust_t *d, const char *host, size_t len)
{
    return sh_url_hash_lower(d->secret, host, len);
}

/* A pattern's hash and component: "/doc/", "doc", "/" or NULL ("*"). */
static int
pattern_of(const sh_dust_t *d, const char *p, uint64_t *hash,
           const char **comp, size_t *len)
{
    size_t n;

    *comp = "";
    *len = 0;
    if (p == NULL || strcmp(p, "*") == 0) {
        *hash = 0;
        return 0;
    }
    while (*p == '/') {
        p++;
    }
    n = strlen(p);
    while (n > 0 && p[n - 1] == '/') {
        n--;
    }
    if (n == 0) {
        *hash = PAT_ROOT;
        return 0;
    }
    if (memchr(p, '/', n) != NULL || n > SH_URL_LEN_MAX) {
        return -1;
    }
    *hash = nonzero(sh_url_hash_bytes(d->secret, p, n));
    *comp = p;
    *len = n;
    return 0;
}

static int
arg_of(const sh_dust_t *d, sh_dust_kind_t kind, const char *arg,
       uint64_t *hash)
{
    size_t n = arg ? strlen(arg) : 0;

    *hash = 0;
    switch (kind) {
    case SH_DUST_SORT_PARAMS:
    case SH_DUST_TRAILING_SLASH:
    case SH_DUST_PATH_CASE:
        return 0;
    case SH_DUST_DROP_PARAM:
        if (n == 0 || n > SH_URL_LEN_MAX) {
            return -1;
        }
        *hash = sh_url_hash_decoded(d->secret, arg, n);
        return 0;
    case SH_DUST_INDEX_FILE:
    case SH_DUST_DROP_COMPONENT:
        if (n == 0 || n > SH_URL_LEN_MAX || memchr(arg, '/', n) != NULL) {
            return -1;
        }
        *hash = sh_url_hash_bytes(d->secret, arg, n);
        return 0;
    case SH_DUST_DROP_PATH_PARAM:
        if (n == 0 || n > SH_URL_LEN_MAX || memchr(arg, '/', n) != NULL
            || memchr(arg, ';', n) != NULL || memchr(arg, '=', n) != NULL)
        {
            return -1;
        }
        *hash = sh_url_hash_bytes(d->secret, arg, n);
        *hash = *hash ? *hash : 1;
        return 0;
    case SH_DUST_HOST_ALIAS:
        if (n == 0 || n > SH_URL_HOST_MAX) {
            return -1;
        }
        *hash = sh_url_hash_lower(d->secret, arg, n);
        return 0;
    }
    return -1;
}

int
sh_dust_pin(sh_dust_t *d, const char *host, const char *pattern,
            sh_dust_kind_t kind, const char *arg, int mode, uint64_t now)
{
    const char *comp;
    size_t      clen, hlen;
    uint64_t    hh, ph, ah;
    dhost_t    *h;
    dcand_t    *c;
    uint8_t     from;

    if (host == NULL || (hlen = strlen(host)) == 0 || hlen > SH_URL_HOST_MAX
        || arg_of(d, kind, arg, &ah) != 0
        || pattern_of(d, kind == SH_DUST_HOST_ALIAS ? NULL : pattern, &ph,
                      &comp, &clen) != 0
        || (mode != SH_DUST_PIN_ON && mode != SH_DUST_PIN_OFF
            && mode != SH_DUST_PIN_CLEAR))
    {
        return -1;
    }
    hh = sh_url_hash_lower(d->secret, host, hlen);
    c = cand_find(d, hh, ph, (uint8_t) kind, ah);
    if (mode == SH_DUST_PIN_CLEAR) {
        if (c == NULL || !manual(c)) {
            return 0;
        }
        h = host_find(d, hh);
        if (h != NULL) {
            h->pins--;
            h->wild -= ph == 0;
        }
        from = c->state;
        c->state = SH_DUST_CANDIDATE;
        mark_off(d, c);
        if (!evaluate(d, c, now)) {
            record(d, c, (sh_dust_state_t) from, now);
        }
        return 0;
    }
    h = host_get(d, hh, host, hlen, 1);
    if (h == NULL) {
        return -1;
    }
    if (c == NULL) {
        c = cand_new(d, hh, ph, (uint8_t) kind, ah);
        if (c == NULL) {
            return -1;
        }
        copy_text(c->arg_text, SH_DUST_ARG_TEXT, &c->arglen, arg ? arg : "",
                  arg ? strlen(arg) : 0);
        copy_text(c->pat_text, SH_DUST_PAT_TEXT, &c->patlen, comp, clen);
    }
    if (!manual(c)) {
        h->pins++;
        h->wild += ph == 0;
    }
    from = c->state;
    c->state = mode == SH_DUST_PIN_ON ? SH_DUST_PINNED : SH_DUST_FORBIDDEN;
    c->stamp = ++d->clock;
    if (c->state == SH_DUST_PINNED) {
        mark_on(d, c);
    } else {
        mark_off(d, c);
    }
    if (from != c->state) {
        record(d, c, (sh_dust_state_t) from, now);
    }
    return 0;
}

int
sh_dust_rule(const sh_dust_t *cd, const char *host, const char *pattern,
             sh_dust_kind_t kind, const char *arg, sh_dust_rule_info_t *out)
{
    sh_dust_t  *d = (sh_dust_t *) cd;  /* lookups only */
    const char *comp;
    size_t      clen;
    uint64_t    ph, ah;
    dcand_t    *c;

    if (host == NULL || arg_of(d, kind, arg, &ah) != 0
        || pattern_of(d, kind == SH_DUST_HOST_ALIAS ? NULL : pattern, &ph,
                      &comp, &clen) != 0)
    {
        return -1;
    }
    c = cand_find(d, sh_url_hash_lower(d->secret, host, strlen(host)), ph,
                  (uint8_t) kind, ah);
    if (c == NULL) {
        return -1;
    }
    rule_info(d, c, out);
    return 0;
}

/* ---- Introspection. ---- */

void
sh_dust_foreach_host(const sh_dust_t *d, sh_dust_host_cb cb, void *ctx)
{
    const dhost_t      *h = hosts(d);
    sh_dust_host_info_t hi;
    size_t              i, n = (size_t) d->host_sets * HOST_WAYS;

    for (i = 0; i < n; i++) {
        if (h[i].hash == 0) {
            continue;
        }
        memset(&hi, 0, sizeof(hi));
        hi.host_hash = h[i].hash;
        memcpy(hi.host, h[i].text, h[i].textlen);
        hi.alias_to = h[i].alias_to;
        hi.requests = h[i].requests;
        hi.predictions = h[i].predictions;
        hi.saved = h[i].saved;
        hi.last = h[i].last;
        if (cb(&hi, ctx) != 0) {
            return;
        }
    }
}

void
sh_dust_foreach_rule(const sh_dust_t *cd, uint64_t host_hash, int all,
                     sh_dust_rule_cb cb, void *ctx)
{
    sh_dust_t          *d = (sh_dust_t *) cd;  /* host_find: lookups only */
    const dcand_t      *c = cands(d);
    sh_dust_rule_info_t r;
    size_t              i, n = (size_t) d->cand_sets * CAND_WAYS;

    for (i = 0; i < n; i++) {
        if (c[i].host == 0 || (host_hash != 0 && c[i].host != host_hash)
            || (!all && c[i].state == SH_DUST_CANDIDATE))
        {
            continue;
        }
        rule_info(d, &c[i], &r);
        if (cb(&r, ctx) != 0) {
            return;
        }
    }
}

size_t
sh_dust_changes(const sh_dust_t *d, uint64_t *since, sh_dust_change_t *out,
                size_t max)
{
    uint64_t s = *since, first;
    size_t   n = 0;

    first = d->change_seq > SH_DUST_CHANGES
            ? d->change_seq - SH_DUST_CHANGES : 0;
    if (s < first) {
        s = first;
    }
    while (s < d->change_seq && n < max) {
        out[n++] = ring(d)[s % SH_DUST_CHANGES];
        s++;
    }
    *since = s;
    return n;
}

uint64_t
sh_dust_change_seq(const sh_dust_t *d)
{
    return d->change_seq;
}

void
sh_dust_stats(const sh_dust_t *d, sh_dust_stats_t *s)
{
    const dhost_t *h = hosts(d);
    const dcand_t *c = cands(d);
    size_t         i;

    *s = d->stats;
    s->hosts = s->candidates = s->active = 0;
    for (i = 0; i < (size_t) d->host_sets * HOST_WAYS; i++) {
        s->hosts += h[i].hash != 0;
    }
    for (i = 0; i < (size_t) d->cand_sets * CAND_WAYS; i++) {
        if (c[i].host != 0) {
            s->candidates++;
            s->active += on(&c[i]);
        }
    }
}

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
    dhost_t *h = host_find(d, c->host);

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
    dcand_t   *c = cand_find(d, ri->host_hash, ri->pattern_hash,
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
    h = host_get(d, host, r[7] ? (const char *) r + 112 : NULL, r[7], 0);
    c = cand_find(d, host, pattern, kind, arg);
    if (c == NULL) {
        c = cand_new(d, host, pattern, kind, arg);
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
        mark_on(d, c);
    } else {
        mark_off(d, c);
    }
    if (!manual(c) && !replace) {
        if (evaluate(d, c, now)) {
            return 0;
        }
    }
    if (from != c->state && !replace) {
        record(d, c, (sh_dust_state_t) from, now);
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

        h = host_get(d, sh_le_get(r, 8), tl ? (const char *) r + 56 : NULL,
                     tl, 0);
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
        if (ri.pattern_hash == 0) {
            strcpy(ri.pattern, "*");
        } else if (ri.pattern_hash == PAT_HOST) {
            strcpy(ri.pattern, "**");
        } else if (ri.pattern_hash == PAT_ROOT) {
            strcpy(ri.pattern, "/");
        } else {
            ri.pattern[0] = '/';
            memcpy(ri.pattern + 1, r + 88, r[6]);
            ri.pattern[1 + r[6]] = '/';
        }
        memcpy(ri.host, r + 112, r[7]);
        n = ri.support + ri.against;
        ri.precision = n ? (double) ri.support / n : 0.0;
        ri.lower = wilson_lower(ri.support, ri.against, z);
        if (cb(&ri, ctx) != 0) {
            break;
        }
    }
    return 0;
}

/*
 * A prediction asked by an operator ("why?"), not by a request: the same
 * answer as sh_dust_predict, with no trace of it (the counters and the
 * host's last use are put back), so that asking does not move the
 * statistics the question is about.
 */
int
sh_dust_predict_dry(sh_dust_t *d, const char *url, size_t len,
                    uint64_t *rep, sh_dust_why_t *why)
{
    sh_url_t        u;
    sh_dust_stats_t st;
    dhost_t        *h;
    uint64_t        predictions = 0, last = 0;
    int             rc;

    h = NULL;
    if (sh_url_parse(&u, url, len) == 0) {
        sh_url_hash_parts(&u, d->secret);
        h = host_find(d, u.host_hash);
        if (h != NULL) {
            predictions = h->predictions;
            last = h->last;
        }
    }

    st = d->stats;
    rc = sh_dust_predict(d, url, len, last, rep, why);
    d->stats = st;
    if (h != NULL) {
        h->predictions = predictions;
        h->last = last;
    }
    return rc;
}
