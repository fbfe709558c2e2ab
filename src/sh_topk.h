/*
 * sh_topk.h -- the sites that waste the crawl: a bounded heavy-hitters
 * table (Space-Saving, Metwally, Agrawal and El Abbadi 2005) over a fixed
 * array in caller-provided memory, keyed by a host hash under a secret.
 *
 * A site's weight is what it wastes: its duplicates and its predicted
 * duplicates.  A site is what the caller names it (the module: the
 * registrable domain, sh_site.h, so that 300 subdomains of one site count
 * as that one site, not as 300 small ones); beneath it, the
 * SH_TOPK_HOSTS hosts that wasted most in it, by the same Space-Saving
 * among its own hosts (a host new to a full list takes the place of the
 * least, inheriting its count).  The table holds k entries whatever the number of hosts;
 * an untracked host with weight takes the entry of least count, inheriting
 * that count as its error.  The guarantee, for a total weight N:
 *
 *   count - error <= true weight <= count, and error <= N / k;
 *   every host whose true weight exceeds N / k is in the table.
 *
 * Besides the weight, an entry counts what happened on its host since it
 * took the entry (pages, duplicates, predictions, drops, bytes and fetches
 * saved): lower bounds of the host's totals, exact for a host that never
 * left the table (error 0).  A weight-0 event (a new page) moves only a
 * tracked host's counters: it costs a lookup, never a replacement.
 *
 * Sites and hosts are hashed lowercased (sh_url_hash_lower) under a
 * secret, so that a client cannot aim two names at one entry; their texts
 * are kept for display only, in SH_TOPK_HOST_TEXT bytes: a longer name is
 * cut in its middle with a mark, its own site kept whole
 * (sh_site_display).  No locking:
 * the caller serialises updates (the module does it under its zone's
 * lock); readers copy entries out under the same lock.
 */
#ifndef SH_TOPK_H
#define SH_TOPK_H

#include <stddef.h>
#include <stdint.h>

#define SH_TOPK_HOST_TEXT   63      /* bytes of a host's name kept */
#define SH_TOPK_MAX         4096    /* entries at most */
#define SH_TOPK_HOSTS       4       /* hosts kept beneath a site */

/* what an entry counts besides its weight */
typedef enum {
    SH_TOPK_PAGES = 0,          /* decisions on the host */
    SH_TOPK_DUPLICATES,         /* fetched pages found duplicates */
    SH_TOPK_PREDICTED,          /* requests predicted duplicates (DUST) */
    SH_TOPK_DROPPED,            /* duplicates answered empty */
    SH_TOPK_BYTES_SAVED,        /* body bytes not passed to the crawler */
    SH_TOPK_FETCHES_SAVED,      /* predictions answered without a fetch */
    SH_TOPK_NCOUNT
} sh_topk_count_t;

/* a host beneath a site */
typedef struct {
    uint64_t hash;              /* its keyed hash; 0: none */
    uint64_t count;             /* its weight in the site (an upper bound,
                                   since it took its place) */
    char     host[SH_TOPK_HOST_TEXT + 1];
} sh_topk_host_t;

typedef struct {
    uint64_t hash;              /* 0: the entry is free */
    uint64_t count;             /* the weight's estimate (an upper bound) */
    uint64_t error;             /* count - error <= true weight */
    uint64_t c[SH_TOPK_NCOUNT]; /* since the site took the entry */
    char     host[SH_TOPK_HOST_TEXT + 1];  /* the site's name */
    uint64_t hosts_seen;        /* hosts that took a place beneath it: at
                                   least its hosts that wasted, a host
                                   that came back counted again */
    sh_topk_host_t hosts[SH_TOPK_HOSTS];   /* by count, largest first */
} sh_topk_entry_t;

typedef struct {
    uint32_t k;                 /* entries */
    uint32_t used;
    uint64_t total;             /* N: the weight of every host */
    uint64_t replaced;          /* entries taken from another host */
    uint64_t min;               /* least count: the error bound now */
} sh_topk_stats_t;

typedef struct sh_topk_s sh_topk_t;

/* Bytes of a table of k entries (1 to SH_TOPK_MAX); 0 otherwise. */
size_t sh_topk_size(uint32_t k);

/* Format `region` (8-byte aligned, sh_topk_size(k) bytes); the secret (up
 * to 32 bytes used) keys the host hash.  NULL on bad arguments. */
sh_topk_t *sh_topk_init(void *region, size_t size, uint32_t k,
                        const void *secret, size_t secret_len);

/* The host of an absolute URL ("scheme://host[:port]/..."): a span of
 * `url`, with its port if it has one (host and port are one origin, as
 * the DUST learner's hosts are); the URL's start when there is no "://"
 * (len 0 then). */
const char *sh_topk_host(const char *url, size_t len, size_t *host_len);

/*
 * One event on a host of a site: `weight` (0 or more) added to the site's
 * count and to the host's beneath it, and `add` (NULL: none) to the site's
 * counters.  Returns 1 if the site is tracked after the call, 0 if not
 * (weight 0 and not tracked).
 */
int sh_topk_add_site(sh_topk_t *t, const char *site, size_t slen,
                     const char *host, size_t hlen, uint64_t weight,
                     const uint64_t add[SH_TOPK_NCOUNT]);

/* The same with the host as its own site. */
int sh_topk_add(sh_topk_t *t, const char *host, size_t len, uint64_t weight,
                const uint64_t add[SH_TOPK_NCOUNT]);

/*
 * A 64-bit hash of `len` bytes keyed by the table's secret (`lower`: ASCII
 * case folded first), for the caller's other tables of the same hosts:
 * without the secret, no one can compute names that meet in one slot.
 */
uint64_t sh_topk_keyed(const sh_topk_t *t, const void *p, size_t len,
                       int lower);

/* The tracked entries, by count, largest first: at most max; how many. */
size_t sh_topk_list(const sh_topk_t *t, sh_topk_entry_t *out, size_t max);

void sh_topk_stats(const sh_topk_t *t, sh_topk_stats_t *st);

/*
 * Put back `n` entries of a table of this k and secret (as sh_topk_list
 * gave them) into `t`, with the table's total weight and replacements:
 * the table's state at that list, since a lookup needs only the entries'
 * hashes and counts.  Everything is checked first, and `t` left as it was
 * on failure: n <= k, every hash non-zero and distinct, error <= count,
 * each host's text ending in NUL within SH_TOPK_HOST_TEXT + 1 bytes, the
 * counts adding up to `total` (as they always do: a weight goes to one
 * count and to the total); the hosts beneath each site (none: a list of
 * zeros) each with a non-zero hash when it has a count, a count at most
 * the site's, its text ending in NUL.  0, or -1.
 */
int sh_topk_restore(sh_topk_t *t, const sh_topk_entry_t *e, size_t n,
                    uint64_t total, uint64_t replaced);

/* Forget every host (the secret stays). */
void sh_topk_clear(sh_topk_t *t);

const char *sh_topk_count_name(sh_topk_count_t c);

#endif
