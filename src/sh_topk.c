/*
 * sh_topk.c -- Space-Saving over a fixed array (sh_topk.h).
 *
 * The region: a header, then two compact arrays scanned on every event
 * (the entries' hashes, 8 bytes each, and their counts), then the
 * entries' other fields.  A lookup scans the hashes: with the module's
 * 64 entries that is 512 bytes, cheaper than a hash table's bookkeeping
 * and never stale; a replacement scans the counts for the least.  Both
 * are O(k), and k is small by design (the table is for display).
 */
#include "sh_topk.h"

#include <stdlib.h>
#include <string.h>

#include "sh_site.h"
#include "sh_url.h"

#define TOPK_MAGIC  0x6b706f7448537ull      /* "ShTopk" */

typedef struct {
    uint64_t       error;
    uint64_t       c[SH_TOPK_NCOUNT];
    char           host[SH_TOPK_HOST_TEXT + 1];
    uint64_t       hosts_seen;
    sh_topk_host_t hosts[SH_TOPK_HOSTS];          /* hash 0: free */
} topk_slot_t;

struct sh_topk_s {
    uint64_t      magic;
    uint32_t      k;
    uint32_t      used;
    uint64_t      total;
    uint64_t      replaced;
    unsigned char secret[SH_URL_SECRET_LEN];
    /* then: uint64_t hash[k]; uint64_t count[k]; topk_slot_t slot[k] */
};

static uint64_t *
hashes(const sh_topk_t *t)
{
    return (uint64_t *) (void *) ((char *) t + sizeof(sh_topk_t));
}

static uint64_t *
counts(const sh_topk_t *t)
{
    return hashes(t) + t->k;
}

static topk_slot_t *
slots(const sh_topk_t *t)
{
    return (topk_slot_t *) (void *) (counts(t) + t->k);
}

size_t
sh_topk_size(uint32_t k)
{
    if (k == 0 || k > SH_TOPK_MAX) {
        return 0;
    }
    return sizeof(sh_topk_t) + (size_t) k * (2 * sizeof(uint64_t)
                                             + sizeof(topk_slot_t));
}

sh_topk_t *
sh_topk_init(void *region, size_t size, uint32_t k, const void *secret,
             size_t secret_len)
{
    sh_topk_t *t = region;

    if (region == NULL || ((uintptr_t) region & 7) != 0
        || sh_topk_size(k) == 0 || size < sh_topk_size(k))
    {
        return NULL;
    }
    memset(region, 0, sh_topk_size(k));
    t->magic = TOPK_MAGIC;
    t->k = k;
    sh_url_secret(secret, secret_len, t->secret);
    return t;
}

void
sh_topk_clear(sh_topk_t *t)
{
    memset(hashes(t), 0,
           sh_topk_size(t->k) - sizeof(sh_topk_t));
    t->used = 0;
    t->total = 0;
    t->replaced = 0;
}

int
sh_topk_restore(sh_topk_t *t, const sh_topk_entry_t *e, size_t n,
                uint64_t total, uint64_t replaced)
{
    size_t       i, j;
    uint64_t     sum = 0;
    topk_slot_t *s;

    if (n > t->k) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (e[i].hash == 0 || e[i].error > e[i].count
            || memchr(e[i].host, '\0', sizeof(e[i].host)) == NULL
            || e[i].count > UINT64_MAX - sum)
        {
            return -1;
        }
        sum += e[i].count;
        for (j = 0; j < SH_TOPK_HOSTS; j++) {
            const sh_topk_host_t *hh = &e[i].hosts[j];

            if ((hh->count && hh->hash == 0) || hh->count > e[i].count
                || memchr(hh->host, '\0', sizeof(hh->host)) == NULL)
            {
                return -1;
            }
        }
        /* k is small by design (sh_topk.c's top): a scan, not a set */
        for (j = 0; j < i; j++) {
            if (e[j].hash == e[i].hash) {
                return -1;
            }
        }
    }
    if (sum != total) {
        return -1;
    }

    sh_topk_clear(t);

    for (i = 0; i < n; i++) {
        hashes(t)[i] = e[i].hash;
        counts(t)[i] = e[i].count;
        s = &slots(t)[i];
        s->error = e[i].error;
        memcpy(s->c, e[i].c, sizeof(s->c));
        /* the text up to its NUL, nothing after it */
        memcpy(s->host, e[i].host, strlen(e[i].host));
        s->hosts_seen = e[i].hosts_seen;
        for (j = 0; j < SH_TOPK_HOSTS; j++) {
            if (e[i].hosts[j].count) {
                s->hosts[j].hash = e[i].hosts[j].hash;
                s->hosts[j].count = e[i].hosts[j].count;
                memcpy(s->hosts[j].host, e[i].hosts[j].host,
                       strlen(e[i].hosts[j].host));
            }
        }
    }
    t->used = (uint32_t) n;
    t->total = total;
    t->replaced = replaced;
    return 0;
}

const char *
sh_topk_host(const char *url, size_t len, size_t *host_len)
{
    const char *p, *end, *h;

    end = url + len;
    *host_len = 0;

    for (p = url; p + 2 < end; p++) {
        if (p[0] == ':' && p[1] == '/' && p[2] == '/') {
            break;
        }
        if (p[0] == '/' || p[0] == '?') {
            return url;             /* a path: no scheme, no host */
        }
    }
    if (p + 2 >= end) {
        return url;
    }

    h = p + 3;

    /* userinfo cannot be in a key the module stores, but a hostile URL
     * could have it: the host is after the last '@' of the authority */
    for (p = h; p < end && *p != '/' && *p != '?' && *p != '#'; p++) {
        if (*p == '@') {
            h = p + 1;
        }
    }
    end = p;

    /* the port stays: an origin on another port is another host, as the
     * key ($simhash_host) and the DUST learner's rules have it, so the
     * console's tables of sites, rules and outcomes name one host alike */

    *host_len = (size_t) (end - h);
    return h;
}

/* A name for display, lowercased, cut to the slot keeping its site. */
static void
name_text(char out[SH_TOPK_HOST_TEXT + 1], const char *name, size_t len)
{
    size_t i, n;

    n = sh_site_display(name, len, out, SH_TOPK_HOST_TEXT + 1);
    for (i = 0; i < n; i++) {
        if (out[i] >= 'A' && out[i] <= 'Z') {
            out[i] = (char) (out[i] + 32);
        }
    }
}

/* A host's weight beneath its site: Space-Saving among the site's own
 * SH_TOPK_HOSTS hosts. */
static void
add_host(const sh_topk_t *t, topk_slot_t *s, const char *host, size_t len,
         uint64_t weight)
{
    uint64_t h;
    uint32_t i, min;

    h = sh_url_hash_lower(t->secret, host, len);
    h += (h == 0);

    for (i = 0; i < SH_TOPK_HOSTS; i++) {
        if (s->hosts[i].hash == h) {
            s->hosts[i].count += weight;
            return;
        }
    }

    min = 0;
    for (i = 1; i < SH_TOPK_HOSTS; i++) {
        if (s->hosts[i].count < s->hosts[min].count) {
            min = i;                /* a free one's count is 0 */
        }
    }

    s->hosts[min].hash = h;
    s->hosts[min].count += weight;
    name_text(s->hosts[min].host, host, len);
    s->hosts_seen++;
}

int
sh_topk_add(sh_topk_t *t, const char *host, size_t len, uint64_t weight,
            const uint64_t add[SH_TOPK_NCOUNT])
{
    return sh_topk_add_site(t, host, len, host, len, weight, add);
}

int
sh_topk_add_site(sh_topk_t *t, const char *site, size_t slen,
                 const char *host, size_t hlen, uint64_t weight,
                 const uint64_t add[SH_TOPK_NCOUNT])
{
    uint64_t    *hs, *cs, h;
    uint32_t     i, j, min;
    topk_slot_t *s;

    h = sh_url_hash_lower(t->secret, site, slen);
    h += (h == 0);                  /* 0: a free entry */

    hs = hashes(t);
    cs = counts(t);

    for (i = 0; i < t->used; i++) {
        if (hs[i] == h) {
            goto found;
        }
    }

    if (weight == 0) {
        return 0;
    }

    if (t->used < t->k) {
        i = t->used++;
        cs[i] = 0;
        memset(&slots(t)[i], 0, sizeof(topk_slot_t));

    } else {
        /* the least count: its host is replaced, the count inherited */
        min = 0;
        for (j = 1; j < t->k; j++) {
            if (cs[j] < cs[min]) {
                min = j;
            }
        }
        i = min;
        s = &slots(t)[i];
        memset(s, 0, sizeof(topk_slot_t));
        s->error = cs[i];
        t->replaced++;
    }

    hs[i] = h;
    s = &slots(t)[i];
    name_text(s->host, site, slen);

found:

    cs[i] += weight;
    t->total += weight;
    s = &slots(t)[i];

    if (weight) {
        add_host(t, s, host, hlen, weight);
    }

    if (add) {
        for (j = 0; j < SH_TOPK_NCOUNT; j++) {
            s->c[j] += add[j];
        }
    }

    return 1;
}

uint64_t
sh_topk_keyed(const sh_topk_t *t, const void *p, size_t len, int lower)
{
    return lower ? sh_url_hash_lower(t->secret, p, len)
                 : sh_url_hash_bytes(t->secret, p, len);
}

static int
host_by_count(const void *a, const void *b)
{
    const sh_topk_host_t *x = a, *y = b;

    if (x->count != y->count) {
        return x->count < y->count ? 1 : -1;
    }
    return strcmp(x->host, y->host);
}

static int
by_count(const void *a, const void *b)
{
    const sh_topk_entry_t *x = a, *y = b;

    if (x->count != y->count) {
        return x->count < y->count ? 1 : -1;
    }
    return strcmp(x->host, y->host);
}

size_t
sh_topk_list(const sh_topk_t *t, sh_topk_entry_t *out, size_t max)
{
    uint32_t     i;
    size_t       n;
    topk_slot_t *s;
    sh_topk_entry_t *all;

    if (max == 0 || t->used == 0) {
        return 0;
    }

    /* sorted in the caller's array when it has room for every entry;
     * else in a copy, so that the largest come out */
    all = max >= t->used ? out : malloc(t->used * sizeof(*all));
    if (all == NULL) {
        return 0;
    }

    for (i = 0; i < t->used; i++) {
        s = &slots(t)[i];
        all[i].hash = hashes(t)[i];
        all[i].count = counts(t)[i];
        all[i].error = s->error;
        memcpy(all[i].c, s->c, sizeof(s->c));
        memcpy(all[i].host, s->host, sizeof(s->host));
        all[i].hosts_seen = s->hosts_seen;
        memcpy(all[i].hosts, s->hosts, sizeof(s->hosts));
        qsort(all[i].hosts, SH_TOPK_HOSTS, sizeof(sh_topk_host_t),
              host_by_count);
    }

    qsort(all, t->used, sizeof(*all), by_count);

    n = t->used < max ? t->used : max;
    if (all != out) {
        memcpy(out, all, n * sizeof(*all));
        free(all);
    }
    return n;
}

void
sh_topk_stats(const sh_topk_t *t, sh_topk_stats_t *st)
{
    uint32_t  i;
    uint64_t *cs = counts(t);

    st->k = t->k;
    st->used = t->used;
    st->total = t->total;
    st->replaced = t->replaced;
    st->min = 0;

    /* until the table is full, no host was replaced: the bound is 0 */
    if (t->used == t->k) {
        st->min = cs[0];
        for (i = 1; i < t->k; i++) {
            if (cs[i] < st->min) {
                st->min = cs[i];
            }
        }
    }
}

static const char *const count_names[SH_TOPK_NCOUNT] = {
    "pages", "duplicates", "predicted", "dropped", "bytes_saved",
    "fetches_saved"
};

const char *
sh_topk_count_name(sh_topk_count_t c)
{
    return (unsigned) c < SH_TOPK_NCOUNT ? count_names[c] : "?";
}
