
/*
 * What the console shows of a zone, kept in a region of the zone's shared
 * memory of its own (fixed: about 250 KB whatever the traffic):
 *
 *   - the rates of the last minutes: a ring of per-10-s counters of every
 *     event (a status, a drop, a prediction answered without a fetch),
 *     advanced lazily by whichever worker counts first in a new slot.  A
 *     slot is claimed by a compare-and-swap of its epoch and then zeroed:
 *     an increment by another worker between the two is lost, a rare
 *     undercount the console can live with, for no lock on the path;
 *   - the sites that waste the crawl: sh_topk (Space-Saving) of the
 *     duplicates and predictions by site (the registrable domain, libpsl,
 *     as the DUST aliases take it: 300 subdomains of one site are that
 *     site's waste, not 300 small ones), with the hosts that wasted most
 *     beneath each and the pages, drops, bytes and fetches saved of each,
 *     under the zone's lock;
 *   - the last decisions, for "why?" (ngx_http_simhash_explain.c), in
 *     sets of 4 by the key's hash: a decision stays until four later keys
 *     of its set were decided (ngx_http_simhash_sites_decision);
 *   - what the rules' predictions came to, per host and set of rules:
 *     made, verified, failed (direct-mapped too), and per learned rule
 *     (host, scope, rule: 4-way sets, the rule with the fewest predictions
 *     giving way), in the same hold of the lock.  Both are placed by
 *     hashes keyed by the zone's secret, as the sites are (sh_topk_keyed):
 *     a host or a scope named to land on another host's slot would evict
 *     its figures, and without the secret no one can compute one;
 *   - (in the outbox, not here) the lag of each other node of the tier.
 *
 * An event costs the ring's increments and, under the zone's lock, a scan
 * of the table's 64 hashes and, for a duplicate of an untracked host, of
 * its 64 counts (BENCHMARKS.md has the cost).  A decision counts in its
 * own hold of the lock (the _locked functions): one acquisition a
 * response, and no second window for two workers to meet in (under wrk a
 * second hold showed no cost a shared machine could resolve:
 * bench/17-sites-lock.sh); only a response given up without a decision
 * (skipped) takes one of its own.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "sh_site.h"


static void ngx_http_simhash_sites_rate(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev);
static void ngx_http_simhash_sites_table(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev);
static uint64_t ngx_http_simhash_rule_id(sh_topk_t *keys, u_char *host,
    size_t hlen, u_char *rule, size_t rlen);
static uint64_t ngx_http_simhash_rule_scope(sh_topk_t *keys, uint64_t id,
    u_char *comp, size_t clen);
static void ngx_http_simhash_sites_count_rules(ngx_http_simhash_sites_t *ss,
    ngx_str_t *key, ngx_str_t *rules, const char *host, size_t hlen,
    ngx_uint_t what);


static ngx_str_t  ngx_http_simhash_event_names[] = {
    ngx_string("new"),
    ngx_string("duplicate"),
    ngx_string("unchanged"),
    ngx_string("changed"),
    ngx_string("skipped"),
    ngx_string("dropped"),
    ngx_string("predicted")
};


/* the per-site gauges in Prometheus: the weight, its error, counters */
typedef struct {
    ngx_str_t                    name;
    ngx_str_t                    help;
    ngx_int_t                    count;     /* sh_topk_count_t; -1: the
                                               weight, -2: its error */
} ngx_http_simhash_site_metric_t;

static ngx_http_simhash_site_metric_t  ngx_http_simhash_site_metrics[] = {

    { ngx_string("site_wasted"),
      ngx_string("Duplicates and predictions of a top site (Space-Saving "
                 "estimate, an upper bound)."), -1 },

    { ngx_string("site_wasted_error"),
      ngx_string("How much site_wasted may overestimate."), -2 },

    { ngx_string("site_duplicates"),
      ngx_string("Duplicates of a top site since it entered the table."),
      SH_TOPK_DUPLICATES },

    { ngx_string("site_predicted"),
      ngx_string("Predictions answered without a fetch for a top site "
                 "since it entered the table."), SH_TOPK_PREDICTED },

    { ngx_string("site_bytes_saved"),
      ngx_string("Body bytes of dropped duplicates of a top site since it "
                 "entered the table."), SH_TOPK_BYTES_SAVED },

    { ngx_string("site_fetches_saved"),
      ngx_string("Fetches saved by predictions for a top site since it "
                 "entered the table."), SH_TOPK_FETCHES_SAVED },

    { ngx_null_string, ngx_null_string, 0 }
};


/* the console's part of the zone: its region in the shared memory */

static size_t ngx_http_simhash_sites_shm_size(ngx_http_simhash_zone_t *zone);
static ngx_int_t ngx_http_simhash_sites_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_simhash_sites_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);


ngx_http_simhash_part_t  ngx_http_simhash_sites_part = {
    ngx_string("sites"),
    0,                                      /* index */
    ngx_null_string,                        /* tail_name */
    0,                                      /* shctx_size: its own region */

    NULL,                                   /* create_conf */
    NULL,                                   /* param */
    NULL,                                   /* conf_done */
    ngx_http_simhash_sites_shm_size,        /* shm_size */

    ngx_http_simhash_sites_init,            /* shm_init */
    NULL,                                   /* shm_migrate */

    NULL,                                   /* want_tail */
    NULL,                                   /* save_tail */
    NULL,                                   /* load_tail */

    ngx_http_simhash_sites_postconfiguration,   /* postconfiguration */
    NULL,                                   /* init_module */
    NULL,                                   /* init_process */
    NULL,                                   /* exit_process */
    NULL,                                   /* exit_master */

    ngx_http_simhash_figures_save,          /* save_aside: PATH.console */
    ngx_http_simhash_figures_load           /* load_aside */
};


/*
 * The Public Suffix List, for the sites: loaded in the master as the
 * learner's is (ngx_http_simhash_dust_conf.c: once per process, no file
 * read by a request), for a configuration with any zone.  Without it each
 * host is its own site.
 */

static ngx_int_t
ngx_http_simhash_sites_postconfiguration(ngx_conf_t *cf)
{
    char                           err[512];
    ngx_http_simhash_main_conf_t  *smcf;

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);

    if (smcf->zones.nelts == 0 || sh_site_loaded()) {
        return NGX_OK;
    }

    if (sh_site_load(NULL, err, sizeof(err)) != 0) {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "simhash: %s: the console counts the sites that "
                      "waste the crawl by host, not by site; Debian: "
                      "publicsuffix", err);
    }

    return NGX_OK;
}


static size_t
ngx_http_simhash_sites_shm_size(ngx_http_simhash_zone_t *zone)
{
    return ngx_http_simhash_sites_shm();
}


size_t
ngx_http_simhash_sites_shm(void)
{
    /* the slab's own pages and per-page bookkeeping on top */
    return ngx_align(sizeof(ngx_http_simhash_sites_t)
                     + sh_topk_size(NGX_HTTP_SIMHASH_SITES_K), ngx_pagesize)
           + 4 * ngx_pagesize;
}


/*
 * In the zone's init: a fresh zone gets its region; a kept one keeps it,
 * emptied of its sites when the secret changed (the hosts' hashes would
 * mean nothing under the new one).
 */

static ngx_int_t
ngx_http_simhash_sites_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    size_t                     size;
    ngx_http_simhash_sites_t  *ss, *old;

    old = ngx_http_simhash_sites(zone);
    ss = old;

    if (ss && ngx_memcmp(ss->key, zone->dust_secret, sizeof(ss->key)) == 0) {
        return NGX_OK;
    }

    size = sizeof(ngx_http_simhash_sites_t)
           + sh_topk_size(NGX_HTTP_SIMHASH_SITES_K);

    if (ss == NULL) {
        ss = ngx_slab_calloc(zone->shpool, size);

        if (ss == NULL) {
            ngx_log_error(NGX_LOG_EMERG, log, 0,
                          "simhash zone \"%V\" has no room for its console's "
                          "%uz bytes", &zone->name, size);
            return NGX_ERROR;
        }

    } else {
        /* the old cycle's workers may count in it meanwhile */
        ngx_http_simhash_zone_lock(zone, log);
    }

    ss->topk = sh_topk_init((u_char *) ss + sizeof(ngx_http_simhash_sites_t),
                            sh_topk_size(NGX_HTTP_SIMHASH_SITES_K),
                            NGX_HTTP_SIMHASH_SITES_K, zone->dust_secret,
                            sizeof(zone->dust_secret));
    ngx_memzero(ss->decision, sizeof(ss->decision));
    ngx_memcpy(ss->key, zone->dust_secret, sizeof(ss->key));
    ss->since = ngx_time();
    ss->restored = 0;

    if (old) {
        ngx_http_simhash_zone_unlock(zone);
    }

    zone->sh->part[ngx_http_simhash_sites_part.index] = ss;

    return ss->topk ? NGX_OK : NGX_ERROR;
}


/*
 * An event outside any hold of the lock (a skipped response, a prediction
 * answered before the upstream): its rates, then one short hold for the
 * rest.  A decision taken under the lock counts with
 * ngx_http_simhash_sites_event_locked() in that hold instead.
 */

void
ngx_http_simhash_sites_event(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev, ngx_log_t *log)
{
    if (ngx_http_simhash_sites(zone) == NULL) {
        return;
    }

    ngx_http_simhash_sites_rate(zone, ev);

    if (ev->key == NULL || ev->key->len == 0 || ev->key->len > SH_KEY_MAX) {
        return;
    }

    ngx_http_simhash_zone_lock(zone, log);
    ngx_http_simhash_sites_table(zone, ev);
    ngx_http_simhash_zone_unlock(zone);
}


/* In the decision's own hold of the lock: no second one. */

void
ngx_http_simhash_sites_event_locked(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev)
{
    if (ngx_http_simhash_sites(zone) == NULL) {
        return;
    }

    ngx_http_simhash_sites_rate(zone, ev);

    if (ev->key == NULL || ev->key->len == 0 || ev->key->len > SH_KEY_MAX) {
        return;
    }

    ngx_http_simhash_sites_table(zone, ev);
}


/* The ring of the last minutes: atomics, no lock. */

static void
ngx_http_simhash_sites_rate(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev)
{
    ngx_uint_t                now, epoch;
    ngx_http_simhash_rate_t  *slot;

    now = ngx_time() / NGX_HTTP_SIMHASH_RATE_STEP;
    slot = &ngx_http_simhash_sites(zone)->rate[now
                                             % NGX_HTTP_SIMHASH_RATE_SLOTS];
    epoch = slot->epoch;

    if (epoch != now && ngx_atomic_cmp_set(&slot->epoch, epoch, now)) {
        ngx_memzero((void *) slot->n, sizeof(slot->n));
    }

    (void) ngx_atomic_fetch_add(&slot->n[ev->event], 1);

    if (ev->action == NGX_HTTP_SIMHASH_DID_DROPPED) {
        (void) ngx_atomic_fetch_add(&slot->n[NGX_HTTP_SIMHASH_EV_DROPPED],
                                    1);
    }
}


/* Under the lock: the event's site in the heavy hitters, the decision in
 * the table of the last ones. */

static void
ngx_http_simhash_sites_table(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_event_t *ev)
{
    size_t                        hlen, slen;
    uint64_t                      add[SH_TOPK_NCOUNT], weight, keyhash;
    const char                   *host;
    char                          site[SH_SITE_MAX + 1];
    ngx_http_simhash_sites_t     *ss;
    ngx_http_simhash_decision_t  *d;

    ss = ngx_http_simhash_sites(zone);

    ngx_memzero(add, sizeof(add));
    add[SH_TOPK_PAGES] = 1;

    switch (ev->event) {

    case NGX_HTTP_SIMHASH_DUPLICATE:
        add[SH_TOPK_DUPLICATES] = 1;
        break;

    case NGX_HTTP_SIMHASH_EV_PREDICTED:
        add[SH_TOPK_PREDICTED] = 1;
        add[SH_TOPK_FETCHES_SAVED] = 1;
        break;
    }

    if (ev->action == NGX_HTTP_SIMHASH_DID_DROPPED) {
        add[SH_TOPK_DROPPED] = 1;
        add[SH_TOPK_BYTES_SAVED] = ev->bytes;
    }

    weight = add[SH_TOPK_DUPLICATES] + add[SH_TOPK_PREDICTED];
    host = sh_topk_host((char *) ev->key->data, ev->key->len, &hlen);

    /* its site; what the list cannot place (no list, a bad name) is its
     * own */
    slen = sh_site_of(host, hlen, site, sizeof(site));

    (void) sh_topk_add_site(ss->topk, slen ? site : host, slen ? slen : hlen,
                            host, hlen, weight, add);

    keyhash = ngx_http_simhash_zone_keyhash(zone, ev->key);
    d = ngx_http_simhash_sites_decision(ss, keyhash, 1);

    d->keyhash = keyhash;
    d->original = ev->original;
    d->time = (uint32_t) ngx_time();
    d->score = ev->score;
    d->distance = ev->distance == (ngx_uint_t) NGX_ERROR
                  ? 0xffff : (uint16_t) ev->distance;
    d->status = (uint8_t) ev->event;
    d->action = (uint8_t) ev->action;
}


/*
 * Under the lock: the entry of a key's last decision, NULL if the table has
 * none; with `add`, the one to write, the key's own or, for a key new to
 * its set, a free one or the set's oldest (the least seq), numbered as the
 * set's newest.  Direct-mapped, as it was, one later key on the same slot
 * pushed a decision out, and "why?" forgot a page dropped a moment before
 * (with 5 keys, one run in some thousand: each zone secret gives new
 * slots); in sets of 4, four later keys of the same set must come first.
 */

ngx_http_simhash_decision_t *
ngx_http_simhash_sites_decision(ngx_http_simhash_sites_t *ss,
    uint64_t keyhash, ngx_uint_t add)
{
    uint32_t                      seq;
    ngx_uint_t                    i;
    ngx_http_simhash_decision_t  *set, *d;

    set = &ss->decision[keyhash % (NGX_HTTP_SIMHASH_DECISIONS
                                   / NGX_HTTP_SIMHASH_DECISION_WAYS)
                        * NGX_HTTP_SIMHASH_DECISION_WAYS];
    d = NULL;
    seq = 0;

    for (i = 0; i < NGX_HTTP_SIMHASH_DECISION_WAYS; i++) {
        if (set[i].keyhash == keyhash) {
            d = &set[i];
        }

        seq = ngx_max(seq, set[i].seq);
    }

    if (!add) {
        return d;
    }

    for (i = 0; d == NULL && i < NGX_HTTP_SIMHASH_DECISION_WAYS; i++) {
        if (set[i].keyhash == 0) {
            d = &set[i];
        }
    }

    if (d == NULL) {
        d = &set[0];

        for (i = 1; i < NGX_HTTP_SIMHASH_DECISION_WAYS; i++) {
            /* seq is not in the figures file: restored decisions have
             * 0, and give way in the order of their times */
            if (set[i].seq < d->seq
                || (set[i].seq == d->seq && set[i].time < d->time))
            {
                d = &set[i];
            }
        }
    }

    d->seq = seq + 1;

    return d;
}


void
ngx_http_simhash_sites_outcome(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    ngx_str_t *rules, ngx_uint_t what, ngx_log_t *log)
{
    if (ngx_http_simhash_sites(zone) == NULL || rules->len == 0) {
        return;
    }

    ngx_http_simhash_zone_lock(zone, log);
    ngx_http_simhash_sites_outcome_locked(zone, key, rules, what);
    ngx_http_simhash_zone_unlock(zone);
}


/* The same in a hold of the lock the caller has. */

void
ngx_http_simhash_sites_outcome_locked(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, ngx_str_t *rules, ngx_uint_t what)
{
    size_t                       hlen, full;
    uint64_t                     h;
    const char                  *host;
    ngx_http_simhash_sites_t    *ss;
    ngx_http_simhash_outcome_t  *o;

    ss = ngx_http_simhash_sites(zone);

    if (ss == NULL || rules->len == 0) {
        return;
    }

    host = sh_topk_host((char *) key->data, key->len, &full);

    h = sh_topk_keyed(ss->topk, host, full, 1) * 0x9e3779b97f4a7c15ULL
        ^ sh_topk_keyed(ss->topk, rules->data, rules->len, 0);
    h += (h == 0);

    o = &ss->outcome[h % NGX_HTTP_SIMHASH_OUTCOMES];

    if (o->hash != h) {
        /* another host's rules had the slot: they give way */
        ngx_memzero(o, sizeof(ngx_http_simhash_outcome_t));
        o->hash = h;

        /* a longer name cut in its middle, its site kept whole, as the
         * sites' are */
        hlen = sh_site_display(host, full, (char *) o->host,
                               NGX_HTTP_SIMHASH_OUTCOME_TEXT);
        ngx_strlow(o->host, o->host, hlen);
        ngx_memcpy(o->rules, rules->data,
                   ngx_min(rules->len, NGX_HTTP_SIMHASH_OUTCOME_TEXT - 1));
    }

    o->n[what]++;

    ngx_http_simhash_sites_count_rules(ss, key, rules, host, full, what);
}


/*
 * A learned rule's identity in the table of rule counts: the hash of its
 * host (lowercased) and of its text as X-Simhash-Predicted spells it; with
 * the scope (the URL's first path component) for the entry itself.
 */

static uint64_t
ngx_http_simhash_rule_id(sh_topk_t *keys, u_char *host, size_t hlen,
    u_char *rule, size_t rlen)
{
    uint64_t  id;

    id = sh_topk_keyed(keys, host, hlen, 1) * 0x9e3779b97f4a7c15ULL
         ^ sh_topk_keyed(keys, rule, rlen, 0);

    return id + (id == 0);
}


static uint64_t
ngx_http_simhash_rule_scope(sh_topk_t *keys, uint64_t id, u_char *comp,
    size_t clen)
{
    uint64_t  h;

    h = id ^ ((sh_topk_keyed(keys, comp, clen, 0) | 1)
              * 0xc2b2ae3d27d4eb4fULL);

    return h + (h == 0);
}


/* The first path component of a key (a URL): "doc" of /doc/17?sid=1, ""
 * for a root-level file (/about), as the learner scopes its rules. */

void
ngx_http_simhash_key_scope(ngx_str_t *key, ngx_str_t *comp)
{
    u_char  *p, *end, *start;

    p = key->data;
    end = p + key->len;
    ngx_str_set(comp, "");

    p = ngx_strlcasestrn(p, end, (u_char *) "://", 3 - 1);
    if (p == NULL) {
        p = key->data;

    } else {
        for (p += 3; p < end && *p != '/' && *p != '?' && *p != '#'; p++) {
            /* the authority */
        }
    }

    if (p == end || *p != '/') {
        return;
    }

    start = ++p;

    while (p < end && *p != '/' && *p != '?' && *p != '#') {
        p++;
    }

    if (p < end && *p == '/') {
        comp->data = start;
        comp->len = p - start;
    }
}


/*
 * Under the lock: one outcome for each rule of a prediction's text (rules
 * separated by spaces outside their parentheses).
 */

static void
ngx_http_simhash_sites_count_rules(ngx_http_simhash_sites_t *ss,
    ngx_str_t *key, ngx_str_t *rules, const char *host, size_t hlen,
    ngx_uint_t what)
{
    u_char                         *p, *end, *start;
    uint64_t                        id, h;
    ngx_str_t                       comp;
    ngx_uint_t                      depth, w;
    ngx_http_simhash_rule_count_t  *set, *e;

    /* as much of the host and the scope as the learner keeps of them */

    ngx_http_simhash_key_scope(key, &comp);
    comp.len = ngx_min(comp.len, SH_DUST_PAT_TEXT);
    hlen = ngx_min(hlen, SH_DUST_HOST_TEXT);

    p = rules->data;
    end = p + rules->len;

    while (p < end) {
        start = p;

        for (depth = 0; p < end && (*p != ' ' || depth); p++) {
            depth += (*p == '(');
            depth -= (*p == ')' && depth);
        }

        if (p > start) {
            id = ngx_http_simhash_rule_id(ss->topk, (u_char *) host, hlen,
                                          start, p - start);
            h = ngx_http_simhash_rule_scope(ss->topk, id, comp.data,
                                            comp.len);

            set = &ss->rule_count[(h % NGX_HTTP_SIMHASH_RULE_SETS)
                                  * NGX_HTTP_SIMHASH_RULE_WAYS];
            e = NULL;

            for (w = 0; w < NGX_HTTP_SIMHASH_RULE_WAYS; w++) {
                if (set[w].hash == h) {
                    e = &set[w];
                    break;
                }

                if (e == NULL
                    || set[w].n[NGX_HTTP_SIMHASH_MADE]
                       < e->n[NGX_HTTP_SIMHASH_MADE])
                {
                    e = &set[w];    /* free, or the fewest predictions */
                }
            }

            if (e->hash != h) {
                ngx_memzero(e, sizeof(ngx_http_simhash_rule_count_t));
                e->hash = h;
                e->rule = id;
            }

            e->n[what]++;
        }

        while (p < end && *p == ' ') {
            p++;
        }
    }
}


/*
 * A learned rule's counts: its entry for its scope (pattern /doc/: the
 * URLs under /doc/; "/": root-level files), or, for a host-wide rule
 * (pattern "*", a pin or a host alias), the sum over the host's scopes.
 */

void
ngx_http_simhash_sites_rule_counts(sh_topk_t *keys,
    ngx_http_simhash_rule_count_t *t, ngx_uint_t n, sh_dust_rule_info_t *ri,
    uint64_t out[3])
{
    u_char      *p, *q;
    size_t       len;
    uint64_t     id, h;
    ngx_uint_t   i, wide;
    u_char       text[3 * (SH_DUST_ARG_TEXT + 32)];

    static u_char  hex[] = "0123456789ABCDEF";

    out[0] = 0;
    out[1] = 0;
    out[2] = 0;

    /* its text as the prediction's header spelled it: kind(arg), controls,
     * bytes past ASCII, '<' and '>' percent-encoded */

    p = ngx_sprintf(text, "%s", sh_dust_kind_name(ri->kind));

    if (ri->arg[0]) {
        *p++ = '(';

        for (q = (u_char *) ri->arg; *q; q++) {
            if (*q < 0x20 || *q >= 0x7f || *q == '<' || *q == '>') {
                *p++ = '%';
                *p++ = hex[*q >> 4];
                *p++ = hex[*q & 0xf];

            } else {
                *p++ = *q;
            }
        }

        *p++ = ')';
    }

    id = ngx_http_simhash_rule_id(keys, (u_char *) ri->host,
                                  ngx_strlen(ri->host), text, p - text);

    wide = ri->pattern[0] != '/';
    h = 0;

    if (!wide) {
        /* "/doc/" is the scope "doc", "/" the root-level files' "" */
        len = ngx_strlen(ri->pattern);
        len = len > 2 ? len - 2 : 0;
        h = ngx_http_simhash_rule_scope(keys, id, (u_char *) ri->pattern + 1,
                                        len);
    }

    for (i = 0; i < n; i++) {
        if (wide ? t[i].rule == id : t[i].hash == h) {
            out[0] += t[i].n[0];
            out[1] += t[i].n[1];
            out[2] += t[i].n[2];
        }
    }
}


ngx_http_simhash_sites_snap_t *
ngx_http_simhash_sites_read(ngx_pool_t *pool, ngx_http_simhash_zone_t *zone,
    ngx_log_t *log)
{
    ngx_uint_t                      i, j, slot, epoch;
    ngx_http_simhash_sites_t       *ss;
    ngx_http_simhash_sites_snap_t  *snap;

    ss = ngx_http_simhash_sites(zone);

    if (ss == NULL) {
        return NULL;
    }

    snap = ngx_pcalloc(pool, sizeof(ngx_http_simhash_sites_snap_t));
    if (snap == NULL) {
        return NULL;
    }

    snap->top = ngx_palloc(pool, NGX_HTTP_SIMHASH_SITES_K
                                 * sizeof(sh_topk_entry_t));
    if (snap->top == NULL) {
        return NULL;
    }

    /* the slots of the last minutes, oldest first; the current one is
     * still filling */

    snap->keys = ss->topk;
    snap->now = ngx_time() / NGX_HTTP_SIMHASH_RATE_STEP;
    snap->since = ss->since;
    snap->restored = ss->restored;
    snap->node = zone->replicate ? zone->replicate->node : ngx_cycle->hostname;

    for (i = 0; i < NGX_HTTP_SIMHASH_RATE_SLOTS; i++) {
        epoch = snap->now - (NGX_HTTP_SIMHASH_RATE_SLOTS - 1 - i);
        slot = epoch % NGX_HTTP_SIMHASH_RATE_SLOTS;

        if (ss->rate[slot].epoch != epoch) {
            continue;
        }

        for (j = 0; j < NGX_HTTP_SIMHASH_NEV; j++) {
            snap->rate[j][i] = ss->rate[slot].n[j];
        }
    }

    snap->outcome = ngx_palloc(pool, sizeof(ss->outcome));
    if (snap->outcome == NULL) {
        return NULL;
    }

    snap->rule_count = ngx_palloc(pool, sizeof(ss->rule_count));
    if (snap->rule_count == NULL) {
        return NULL;
    }

    ngx_http_simhash_zone_lock(zone, log);

    sh_topk_stats(ss->topk, &snap->st);
    snap->ntop = sh_topk_list(ss->topk, snap->top, NGX_HTTP_SIMHASH_SITES_K);

    for (i = 0; i < NGX_HTTP_SIMHASH_OUTCOMES; i++) {
        if (ss->outcome[i].hash) {
            snap->outcome[snap->noutcome++] = ss->outcome[i];
        }
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_RULE_SETS * NGX_HTTP_SIMHASH_RULE_WAYS;
         i++)
    {
        if (ss->rule_count[i].hash) {
            snap->rule_count[snap->nrule_count++] = ss->rule_count[i];
        }
    }

    ngx_http_simhash_zone_unlock(zone);

    return snap;
}


/* The longest the JSON (or the zone's Prometheus series) can be. */

size_t
ngx_http_simhash_sites_size(ngx_http_simhash_sites_snap_t *ss,
    ngx_str_t *zone_name, ngx_uint_t prom)
{
    size_t  host, size;

    if (ss == NULL) {
        return 0;
    }

    host = 3 * SH_TOPK_HOST_TEXT;

    if (prom) {
        size = 0;

        /* the HELP and TYPE lines are sized with the first zone's */
        size += 6 * (2 * sizeof("# HELP simhash_ gauge\n") + 200);
        size += 6 * NGX_HTTP_SIMHASH_SITES_PROM
                * (sizeof("simhash_site_fetches_saved{zone=\"\",host=\"\"} \n")
                   + zone_name->len + host + NGX_INT64_LEN);
        size += sizeof("simhash_sites_error_bound{zone=\"\"} \n")
                + 200 + zone_name->len + NGX_INT64_LEN;
        return size;
    }

    size = sizeof(",\"rates\":{\"step\":,\"slots\":,\"now\":}")
           + 3 * NGX_INT64_LEN;
    size += sizeof(",\"figures\":{\"node\":\"\",\"since\":,\"restored\":}")
            + 3 * ss->node.len + 2 * NGX_INT64_LEN;
    size += NGX_HTTP_SIMHASH_NEV
            * (sizeof(",\"predicted\":[]")
               + NGX_HTTP_SIMHASH_RATE_SLOTS * (NGX_INT64_LEN + 1));
    size += sizeof(",\"sites\":{\"k\":,\"tracked\":,\"total\":,"
                   "\"error_bound\":,\"n_over_k\":,\"replaced\":,"
                   "\"top\":[]}") + 6 * NGX_INT64_LEN;
    size += sizeof(",\"rule_outcomes\":[]")
            + ss->noutcome * (sizeof("{\"host\":\"\",\"rules\":\"\","
                                     "\"made\":,\"verified\":,"
                                     "\"failed\":},")
                              + 6 * NGX_HTTP_SIMHASH_OUTCOME_TEXT
                              + 3 * NGX_INT64_LEN);
    size += ss->ntop * (sizeof("{\"site\":\"\",\"wasted\":,\"error\":,"
                               "\"hosts_seen\":,\"hosts\":[]}")
                        + host + 3 * NGX_INT64_LEN
                        + SH_TOPK_NCOUNT * (sizeof(",\"fetches_saved\":")
                                            + NGX_INT64_LEN + 1)
                        + SH_TOPK_HOSTS * (sizeof("{\"host\":\"\","
                                                  "\"wasted\":},")
                                           + host + NGX_INT64_LEN));
    return size;
}


u_char *
ngx_http_simhash_text_escape(u_char *p, u_char *text, size_t len)
{
    u_char  c;

    static u_char  hex[] = "0123456789ABCDEF";

    while (len--) {
        c = *text++;

        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<'
            || c == '>')
        {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 0xf];

        } else {
            *p++ = c;
        }
    }

    return p;
}


u_char *
ngx_http_simhash_sites_json(u_char *p, ngx_http_simhash_sites_snap_t *ss)
{
    ngx_uint_t                   i, j;
    sh_topk_entry_t             *e;
    ngx_http_simhash_outcome_t  *o;

    if (ss == NULL) {
        return p;
    }

    /* whose figures, since when, and whether a restart kept them */

    p = ngx_sprintf(p, ",\"figures\":{\"node\":\"");
    p = ngx_http_simhash_text_escape(p, ss->node.data, ss->node.len);
    p = ngx_sprintf(p, "\",\"since\":%T,\"restored\":%T}", ss->since,
                    ss->restored);

    p = ngx_sprintf(p, ",\"rates\":{\"step\":%d,\"slots\":%d,\"now\":%ui",
                    NGX_HTTP_SIMHASH_RATE_STEP, NGX_HTTP_SIMHASH_RATE_SLOTS,
                    ss->now * NGX_HTTP_SIMHASH_RATE_STEP);

    for (j = 0; j < NGX_HTTP_SIMHASH_NEV; j++) {
        p = ngx_sprintf(p, ",\"%V\":[", &ngx_http_simhash_event_names[j]);

        for (i = 0; i < NGX_HTTP_SIMHASH_RATE_SLOTS; i++) {
            p = ngx_sprintf(p, "%s%uL", i ? "," : "", ss->rate[j][i]);
        }

        *p++ = ']';
    }

    /* the error bound: the least count once the table is full (0 before:
     * no host was ever replaced); n_over_k: Space-Saving's worst case */

    p = ngx_sprintf(p, "},\"sites\":{\"k\":%uD,\"tracked\":%uD,"
                    "\"total\":%uL,\"error_bound\":%uL,\"n_over_k\":%uL,"
                    "\"replaced\":%uL,\"top\":[",
                    ss->st.k, ss->st.used, ss->st.total, ss->st.min,
                    ss->st.total / ss->st.k, ss->st.replaced);

    for (i = 0; i < ss->ntop; i++) {
        e = &ss->top[i];

        p = ngx_sprintf(p, "%s{\"site\":\"", i ? "," : "");
        p = ngx_http_simhash_text_escape(p, (u_char *) e->host,
                                         ngx_strlen(e->host));
        p = ngx_sprintf(p, "\",\"wasted\":%uL,\"error\":%uL", e->count,
                        e->error);

        for (j = 0; j < SH_TOPK_NCOUNT; j++) {
            p = ngx_sprintf(p, ",\"%s\":%uL", sh_topk_count_name(j),
                            e->c[j]);
        }

        /* the hosts beneath it that wasted most */

        p = ngx_sprintf(p, ",\"hosts_seen\":%uL,\"hosts\":[",
                        e->hosts_seen);

        for (j = 0; j < SH_TOPK_HOSTS && e->hosts[j].count; j++) {
            p = ngx_sprintf(p, "%s{\"host\":\"", j ? "," : "");
            p = ngx_http_simhash_text_escape(p, (u_char *) e->hosts[j].host,
                                             ngx_strlen(e->hosts[j].host));
            p = ngx_sprintf(p, "\",\"wasted\":%uL}", e->hosts[j].count);
        }

        *p++ = ']';
        *p++ = '}';
    }

    p = ngx_cpymem(p, "]},\"rule_outcomes\":[",
                   sizeof("]},\"rule_outcomes\":[") - 1);

    for (i = 0; i < ss->noutcome; i++) {
        o = &ss->outcome[i];

        p = ngx_sprintf(p, "%s{\"host\":\"", i ? "," : "");
        p = ngx_http_simhash_text_escape(p, o->host,
                                         ngx_strlen(o->host));
        p = ngx_sprintf(p, "\",\"rules\":\"");
        p = ngx_http_simhash_text_escape(p, o->rules,
                                         ngx_strlen(o->rules));
        p = ngx_sprintf(p, "\",\"made\":%uL,\"verified\":%uL,"
                        "\"failed\":%uL}", o->n[NGX_HTTP_SIMHASH_MADE],
                        o->n[NGX_HTTP_SIMHASH_VERIFIED],
                        o->n[NGX_HTTP_SIMHASH_FAILED]);
    }

    *p++ = ']';

    return p;
}


u_char *
ngx_http_simhash_sites_prom(u_char *p, ngx_http_simhash_sites_snap_t *first)
{
    uint64_t                         x;
    ngx_uint_t                       j;
    sh_topk_entry_t                 *e;
    ngx_http_simhash_sites_snap_t   *ss;
    ngx_http_simhash_site_metric_t  *m;

    p = ngx_sprintf(p, "# HELP simhash_sites_error_bound The most a site's "
                    "simhash_site_wasted may overestimate (the least count "
                    "of the full table).\n"
                    "# TYPE simhash_sites_error_bound gauge\n");

    for (ss = first; ss; ss = ss->next) {
        p = ngx_sprintf(p, "simhash_sites_error_bound{zone=\"%V\"} %uL\n",
                        &ss->zone, ss->st.min);
    }

    /* the top sites only: a bounded number of series whatever the hosts */

    for (m = ngx_http_simhash_site_metrics; m->name.len; m++) {
        p = ngx_sprintf(p, "# HELP simhash_%V %V\n# TYPE simhash_%V gauge\n",
                        &m->name, &m->help, &m->name);

        for (ss = first; ss; ss = ss->next) {

            for (j = 0; j < ss->ntop && j < NGX_HTTP_SIMHASH_SITES_PROM; j++) {
                e = &ss->top[j];

                x = m->count == -1 ? e->count
                    : m->count == -2 ? e->error : e->c[m->count];

                p = ngx_sprintf(p, "simhash_%V{zone=\"%V\",site=\"",
                                &m->name, &ss->zone);
                p = ngx_http_simhash_text_escape(p, (u_char *) e->host,
                                                 ngx_strlen(e->host));
                p = ngx_sprintf(p, "\"} %uL\n", x);
            }
        }
    }

    return p;
}


/*
 * The lag per node of a replicated zone (the outbox's table, filled by
 * worker 0 as it applies entries): in JSON "replication_nodes", in
 * Prometheus simhash_replication_node_lag_seconds{zone,node}.
 */

size_t
ngx_http_simhash_nodes_size(ngx_http_simhash_zone_t *zone)
{
    if (zone->replicate == NULL || zone->replicate->outbox == NULL) {
        return 0;
    }

    return sizeof("# HELP simhash_replication_node_lag_seconds \n") + 200
           + NGX_HTTP_SIMHASH_NODES
             * (3 * NGX_HTTP_SIMHASH_NODE_NAME + zone->name.len + 200
                + 4 * NGX_INT64_LEN);
}


u_char *
ngx_http_simhash_nodes_json(u_char *p, ngx_http_simhash_zone_t *zone)
{
    time_t                        now;
    ngx_uint_t                    i, n;
    ngx_http_simhash_node_lag_t  *nl;

    if (zone->replicate == NULL || zone->replicate->outbox == NULL) {
        return p;
    }

    now = ngx_time();
    p = ngx_cpymem(p, ",\"replication_nodes\":[",
                   sizeof(",\"replication_nodes\":[") - 1);

    for (i = 0, n = 0; i < NGX_HTTP_SIMHASH_NODES; i++) {
        nl = &zone->replicate->outbox->nodes[i];

        if (nl->len == 0 || nl->len > NGX_HTTP_SIMHASH_NODE_NAME) {
            continue;
        }

        p = ngx_sprintf(p, "%s{\"node\":\"", n++ ? "," : "");
        p = ngx_http_simhash_text_escape(p, nl->name, nl->len);
        p = ngx_sprintf(p, "\",\"lag_ms\":%uA,\"age\":%T,\"entries\":%uA}",
                        nl->lag, now - (time_t) nl->seen, nl->entries);
    }

    *p++ = ']';

    return p;
}


u_char *
ngx_http_simhash_nodes_prom(u_char *p, ngx_http_simhash_zone_t *zone,
    ngx_uint_t head)
{
    ngx_uint_t                    i;
    ngx_http_simhash_node_lag_t  *nl;

    if (head) {
        p = ngx_sprintf(p, "# HELP simhash_replication_node_lag_seconds Age "
                        "of the last entry of each other node when "
                        "applied.\n"
                        "# TYPE simhash_replication_node_lag_seconds "
                        "gauge\n");
    }

    if (zone->replicate == NULL || zone->replicate->outbox == NULL) {
        return p;
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_NODES; i++) {
        nl = &zone->replicate->outbox->nodes[i];

        if (nl->len == 0 || nl->len > NGX_HTTP_SIMHASH_NODE_NAME) {
            continue;
        }

        p = ngx_sprintf(p, "simhash_replication_node_lag_seconds{zone=\"%V\","
                        "node=\"", &zone->name);
        p = ngx_http_simhash_text_escape(p, nl->name, nl->len);
        p = ngx_sprintf(p, "\"} %uA.%03uA\n", nl->lag / 1000,
                        nl->lag % 1000);
    }

    return p;
}
