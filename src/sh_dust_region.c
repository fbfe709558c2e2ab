/*
 * sh_dust_region.c -- the DUST learner's region (sh_dust.h): its sizes,
 * the sequential test's constants, init and attach, and the lookups of
 * its host, evidence and canonical tables.  The layout is in
 * sh_dust_region.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_err.h"
#include "sh_dust_region.h"
#include "sh_site.h"

#define DUST_MAGIC      "SHDUST1"
#define DUST_VERSION    7u          /* 2: entries begin with dway_t;
                                       3: hosts know their alias source;
                                       4: and their site; 5: the
                                       sequential test's constants,
                                       reverse entries know R(u); 6:
                                       canonical forms' generation; 7:
                                       parameters sorted by lowercased
                                       name, path_case lowers names */
#define SPRT_RATIO      10.0    /* a good rule disagrees 10x less often
                                   than the worst one allowed on */

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

double
sh_dust_need_for(double alpha)
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
    d->llr_on = sh_dust_need_for(d->alpha);
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

dhost_t *
sh_dust_host_find(sh_dust_t *d, uint64_t hash)
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
dhost_t *
sh_dust_host_get(sh_dust_t *d, uint64_t hash, const char *text, size_t len,
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
int
sh_dust_same_site(sh_dust_t *d, uint64_t a, uint64_t b)
{
    dhost_t *ha = sh_dust_host_find(d, a), *hb = sh_dust_host_find(d, b);

    return ha != NULL && hb != NULL && ha->site != 0 && ha->site == hb->site;
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

devid_t *
sh_dust_evid_get(sh_dust_t *d, uint64_t key, int create, int *found)
{
    devid_t *set = evids(d) + (key & (d->evid_sets - 1)) * EVID_WAYS;

    return way_get(d, (unsigned char *) set, sizeof(*set), EVID_WAYS, key,
                   create, found);
}

uint32_t
sh_dust_host_gen(sh_dust_t *d, const dhost_t *h, uint64_t pattern)
{
    const dhost_t *p;
    uint64_t       partner;
    unsigned       b = (unsigned) (pattern % GEN_BUCKETS);

    if (h == NULL) {
        return 0;
    }
    partner = host_partner(h);
    p = partner ? sh_dust_host_find(d, partner) : NULL;
    return (uint32_t) h->gen[b] + (p ? p->gen[b] : 0);
}

/* Every bucket of host hash's, or the one of `pattern`. */
static void
stale(sh_dust_t *d, uint64_t hash, uint64_t pattern)
{
    dhost_t *h = sh_dust_host_find(d, hash);
    unsigned b;

    for (b = 0; h != NULL && b < GEN_BUCKETS; b++) {
        if (pattern == 0 || pattern % GEN_BUCKETS == b) {
            h->gen[b]++;
        }
    }
}

void
sh_dust_host_stale(sh_dust_t *d, uint64_t host, uint64_t pattern,
                   uint64_t alias)
{
    stale(d, host, pattern);
    if (alias != 0) {
        stale(d, alias, pattern);
    }
}

dcanon_t *
sh_dust_canon_get(sh_dust_t *d, uint64_t key, int create, int *found)
{
    dcanon_t *set = canons(d) + (key & (d->canon_sets - 1)) * CANON_WAYS;

    return way_get(d, (unsigned char *) set, sizeof(*set), CANON_WAYS, key,
                   create, found);
}
