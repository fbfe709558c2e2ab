/*
 * sh_dust_region.h -- the DUST learner's region, private to src/sh_dust_*.c:
 * its header, the records of its tables, and the tables' lookups.  The
 * public contract is sh_dust.h; nothing outside the learner includes this.
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
#ifndef SH_DUST_REGION_H
#define SH_DUST_REGION_H

#include <stdint.h>
#include <string.h>

#include "sh_dust.h"
#include "sh_url.h"

#define HOST_WAYS       8
#define CAND_WAYS       8
#define EVID_WAYS       4
#define CANON_WAYS      4
#define GEN_BUCKETS     8       /* a host's scopes, by their pattern */

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
    uint16_t gen[GEN_BUCKETS];  /* rules turned off, by the bucket of
                                   their pattern: a canonical form made
                                   before may be another page's */
    uint16_t wild;              /* host-wide manual rules */
    uint8_t  textlen;
    uint8_t  scripts;           /* a script URL with a value that can be
                                   a segment was seen: the value table
                                   takes the host's paths (param_path);
                                   not in the image, the next one sets
                                   it again */
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
    uint32_t url;               /* canon_url() of the URL that set it */
    uint32_t gen;               /* sh_dust_host_gen() when it was set */
} dcanon_t;

/* A URL's hash folded to a canonical entry's 32 bits (the entry stays 32
 * bytes): two URLs that fold alike only look like one URL re-fetched, a
 * pair or a prediction not made, once in 2^32. */
static inline uint32_t
canon_url(uint64_t hash)
{
    return (uint32_t) (hash ^ (hash >> 32));
}

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

/* The kinds of evidence entries, mixed into their keys. */
#define KEY_PAIR    0x2f8ad1c39e6b5074ULL
#define KEY_IDENT   0x7c15e2b9a0d4f863ULL
#define KEY_ALIAS   0xe93b6a07d5c2184fULL
#define KEY_APATH   0x2c85f1d96ab37e04ULL
#define KEY_REV     0x4b90c6e2a1f3d857ULL
#define KEY_VALUE   0x95d2e07c3b48a16fULL   /* a value and a path's last
                                               segment (param_path) */
#define KEY_CFORM   0x6e3a9d14c0b75f28ULL   /* c(u) of a URL u that rules
                                               changed: a rule that did */

static inline uint64_t
nonzero(uint64_t h)
{
    return h ? h : 1;
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

/* The last c in p[0..n), or NULL (memrchr is GNU's). */
static inline const char *
last_byte(const char *p, int c, size_t n)
{
    while (n > 0) {
        if (p[--n] == (char) c) {
            return p + n;
        }
    }
    return NULL;
}

static inline void
copy_text(char *dst, size_t cap, uint8_t *dlen, const char *src, size_t n)
{
    n = n > cap ? cap : n;
    if (n > 0) {                /* an argument-free rule's text is NULL */
        memcpy(dst, src, n);
    }
    *dlen = (uint8_t) n;
}

static inline uint64_t
bloom_bit(uint8_t kind, uint64_t arg)
{
    return 1ULL << (sh_url_step(kind, arg) >> 58);
}

/* The other host of h's active alias (one site), 0: none or h NULL. */
static inline uint64_t
host_partner(const dhost_t *h)
{
    return h == NULL ? 0 : h->alias_to ? h->alias_to : h->alias_from;
}

/* ln((1 - alpha) / alpha): what the sequential test's sum must reach. */
double sh_dust_need_for(double alpha);

dhost_t *sh_dust_host_find(sh_dust_t *d, uint64_t hash);
/* Find or make the entry of a host; NULL if every way is pinned.  `whole`:
 * text is the host as a URL or the operator spelled it, not cut. */
dhost_t *sh_dust_host_get(sh_dust_t *d, uint64_t hash, const char *text,
                          size_t len, int whole);
/* Whether hosts a and b are one site (sh_site.h), both known. */
int sh_dust_same_site(sh_dust_t *d, uint64_t a, uint64_t b);

/* The entry of a key in the evidence or the canonical table; *found says
 * whether it was there; not there and `create`: a fresh one, else NULL. */
devid_t *sh_dust_evid_get(sh_dust_t *d, uint64_t key, int create,
                          int *found);
dcanon_t *sh_dust_canon_get(sh_dust_t *d, uint64_t key, int create,
                            int *found);

/*
 * The generation of the canonical forms of host h's URLs in scope
 * `pattern`: the count of rules turned off in the scopes of its bucket,
 * its own and its alias partner's (the two share forms).  A canonical
 * entry set under another generation may have been made by a rule now
 * off, and names no document for a prediction (sh_dust_predict); the
 * next URL of its form that is fetched sets it again.  By bucket, so that
 * a rule retired in one section does not make a whole site's forms stale.
 */
uint32_t sh_dust_host_gen(sh_dust_t *d, const dhost_t *h, uint64_t pattern);

/* A rule of host `host` in `pattern` turned off (retired, unpinned,
 * forbidden): those forms are stale (a host alias, pattern 0: every
 * scope of both hosts, `alias` the other). */
void sh_dust_host_stale(sh_dust_t *d, uint64_t host, uint64_t pattern,
                        uint64_t alias);

/* The evidence entry of kind `key` (KEY_*, or a rule's cand_key ^
 * KEY_PAIR) for the URL hash h. */
static inline devid_t *
evid_at(sh_dust_t *d, uint64_t key, uint64_t h, int create, int *found)
{
    return sh_dust_evid_get(d, nonzero(sh_url_step(key, h)), create, found);
}

#endif
