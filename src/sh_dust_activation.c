/*
 * sh_dust_activation.c -- candidate rules and their states: a pair of
 * evidence counted, the sequential test that turns a rule on and off
 * (across the scopes of a host too), the host's alias joined and undone,
 * a borrowed rule retired, the canonical table backfilled, the change
 * ring.
 */
#include <math.h>
#include <string.h>

#include "sh_dust_activation.h"
#include "sh_dust_trackers.h"

#define PRIOR_ALPHA_MAX 0.25    /* the most a host's record relaxes */
#define COUNT_MAX       (1u << 20)              /* then halve */

static void alias_off(sh_dust_t *d, uint64_t from, uint64_t to);

dcand_t *
sh_dust_cand_find(sh_dust_t *d, uint64_t host, uint64_t pattern, uint8_t kind,
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

dcand_t *
sh_dust_cand_new(sh_dust_t *d, uint64_t host, uint64_t pattern, uint8_t kind,
                 uint64_t arg)
{
    return cand_new_but(d, host, pattern, kind, arg, NULL);
}

double
sh_dust_wilson_lower(uint32_t s, uint32_t a, double z)
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
           && c->pattern != PAT_HOST && c->pattern != PAT_POOL;
}

/* Whether the pooled test of c's rule holds on host `host` and its alias
 * `partner` (one site: aliases share their rules, and so their evidence):
 * the pairs of every scope of both, in one sum, reach the bound at a. */
static int
pool_holds_but(sh_dust_t *d, uint64_t host, uint64_t partner,
               const dcand_t *c, const dcand_t *self)
{
    const dcand_t *p;
    dcand_t        sum;
    unsigned       i;

    memset(&sum, 0, sizeof(sum));
    for (i = 0; i < (partner != 0 ? 2u : 1u); i++) {
        p = sh_dust_cand_find(d, i ? partner : host, PAT_POOL, c->kind,
                              c->arg);
        if (p != NULL) {
            sum.support += p->support;
            sum.against += p->against;
        }
    }
    if (self != NULL) {
        sum.support -= sum.support < self->support ? sum.support
                                                   : self->support;
        sum.against -= sum.against < self->against ? sum.against
                                                   : self->against;
    }
    return sum.support >= d->opts.min_evidence && llr(d, &sum) >= d->llr_on;
}

/* Whether c is a form the web uses the same way everywhere
 * (sh_dust_trackers.h): a tracker, a session id, the AMP view, a
 * directory's index file, the case of an IIS script's URL. */
static int
known(const sh_dust_t *d, const dcand_t *c)
{
    int where;

    if (c->kind == SH_DUST_PATH_CASE) {
        return sh_dust_case_blind(c->pat_text, c->patlen);
    }
    where = c->kind == SH_DUST_DROP_PARAM ? SH_DUST_KNOWN_PARAM
                : c->kind == SH_DUST_DROP_PATH_PARAM ? SH_DUST_KNOWN_PATH_PARAM
                : c->kind == SH_DUST_DROP_COMPONENT ? SH_DUST_KNOWN_COMPONENT
                : c->kind == SH_DUST_INDEX_FILE ? SH_DUST_KNOWN_INDEX
                : -1;

    return where >= 0
           && sh_dust_tracker(d->secret, d->secret_digest, where,
                              c->arg_text, c->arglen, c->arg);
}

static int
pool_holds(sh_dust_t *d, uint64_t host, uint64_t partner, const dcand_t *c)
{
    return pool_holds_but(d, host, partner, c, NULL);
}

/*
 * The same scope on the other host of an alias (one site): its candidate
 * of c's rule, or NULL.
 */
static dcand_t *
alias_twin(sh_dust_t *d, const dcand_t *c)
{
    uint64_t partner;

    if (!scoped(c)) {
        return NULL;
    }
    partner = host_partner(sh_dust_host_find(d, c->host));
    return partner != 0
           ? sh_dust_cand_find(d, partner, c->pattern, c->kind, c->arg)
           : NULL;
}

/*
 * The pairs a rule is tested on: its scope's, and, on a host joined to
 * another by an alias (one site: the same section of the same pages),
 * that scope's on the other host too, in one sum (sum_out's counts) --
 * while the scope's own pairs do not disagree (its own sum not below
 * zero).  A form both hosts carry (a tracker, a default written out, a
 * session id on the mobile host's pages) is then tested once on all its
 * pairs, not twice on halves.  A scope's own pairs against still rule
 * it: a verification on one host that disagrees takes that host's sum
 * below zero, and the rule off there, whatever the other host's pairs
 * say (the within-site attack of t/dust-alias-attack.t).
 */
static double
test_sum(sh_dust_t *d, const dcand_t *c, dcand_t *sum_out)
{
    const dcand_t *twin;
    dcand_t        sum;
    double         own = llr(d, c);

    memset(&sum, 0, sizeof(sum));
    sum.support = c->support;
    sum.against = c->against;
    if (own >= 0 && (twin = alias_twin(d, c)) != NULL) {
        sum.support += twin->support;
        sum.against += twin->against;
    }
    if (sum_out != NULL) {
        *sum_out = sum;
    }
    return llr(d, &sum);
}

/* Whether hosts a and b are one site's usual two names (www.X and X):
 * the known form of a host alias (sh_dust_trackers.h). */
static int
alias_named(sh_dust_t *d, uint64_t a, uint64_t b)
{
    const dhost_t *x = sh_dust_host_find(d, a), *y = sh_dust_host_find(d, b);

    return x != NULL && y != NULL
           && sh_dust_alias_names(x->text, x->textlen, y->text, y->textlen);
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
 *
 * Pooled across scopes (issue 34): every pair of the rule in any scope of the
 * host also counts in one host-wide sum, with its alias's (one site; a
 * candidate of pattern PAT_POOL, never a rule itself).  When that sum passes
 * the full test at a -- the rule's pairs over the host disagree less than e1,
 * but for probability a -- each scope is tested at the cap, PRIOR_ALPHA_MAX: a
 * scope where the rule is bad still needs its own pairs to pass at 25% (24
 * clean pairs), and its pairs against hold it off as before; the expected
 * wrong answers per bad scope stay within the cap's 0.25 / v. A form spread
 * thinly over many sections (path case, index files, tracking) then gathers
 * its evidence once, not once per section.
 *
 * `others`: the need as the host's OTHER scopes make it, the rule's own
 * pairs taken out of the pool and its own turning on out of the record --
 * the prior it was on by, against which its sample is measured
 * (sh_dust_rule_sample).
 */
static double
need_of(sh_dust_t *d, const dcand_t *c, int others)
{
    const dcand_t *hw;
    const dhost_t *h;
    uint64_t       partner = 0;
    double         g = 0, b = 0, a;
    unsigned       i;

    /* www.X and X, m.X and X: the known form of an alias, at the cap
     * until a pair goes against it */
    if (c->kind == SH_DUST_HOST_ALIAS && c->against == 0
        && alias_named(d, c->host, c->arg))
    {
        return sh_dust_need_for(PRIOR_ALPHA_MAX);
    }
    if (!scoped(c)) {
        return d->llr_on;
    }
    h = sh_dust_host_find(d, c->host);
    partner = host_partner(h);
    for (i = 0; i < 2; i++) {
        if (i == 1 && partner == 0) {
            break;
        }
        hw = sh_dust_cand_find(d, i ? partner : c->host, PAT_HOST, c->kind,
                               c->arg);
        if (hw != NULL) {
            g += hw->support;
            b += hw->against;
        }
    }
    if (others && c->state == SH_DUST_ACTIVE && g >= 1) {
        g--;                    /* its own turning on */
    }
    if (pool_holds_but(d, c->host, partner, c, others ? c : NULL)
        || (b < 1 && known(d, c)))
    {
        return sh_dust_need_for(PRIOR_ALPHA_MAX);
    }
    if (g < 1) {
        return d->llr_on;
    }
    a = d->alpha * (g + b + 2) / (b + 1);
    return sh_dust_need_for(a < PRIOR_ALPHA_MAX ? a : PRIOR_ALPHA_MAX);
}

static double
scope_need(sh_dust_t *d, const dcand_t *c)
{
    return need_of(d, c, 0);
}

double
sh_dust_sample(double llr, double need)
{
    double s;

    if (llr <= need + SH_DUST_SAMPLE_HOLD) {
        return 1.0;
    }
    s = exp(need + SH_DUST_SAMPLE_HOLD - llr);
    return s > SH_DUST_SAMPLE_MIN ? s : SH_DUST_SAMPLE_MIN;
}

/* Against its scope's need as the OTHER scopes and the host's record
 * make it (the prior a rule is on by), not counting the rule's own pairs
 * in the pool or its own turning on in the record: a first scope's rule
 * is measured against the full test, a scope's at the cap once the
 * host's other scopes have shown the rule good. */
double
sh_dust_rule_sample(sh_dust_t *d, const dcand_t *c)
{
    return sh_dust_sample(test_sum(d, c, NULL), need_of(d, c, 1));
}

int
sh_dust_supported(const sh_dust_t *d, const dcand_t *c)
{
    return c->state == SH_DUST_CANDIDATE
           && c->support >= d->opts.min_evidence
           && llr(d, c) >= sh_dust_need_for(PRIOR_ALPHA_MAX);
}

/*
 * A value-shape rule, drop_value(v=(hex)), is the narrow form of
 * drop_param(v) (sh_url_value_shape): it comes on only where that rule
 * has been shown wrong in its scope (a pair against) and is not on.
 * Elsewhere it would double the broad rule, which its every pair also
 * supports.
 */
static int
narrow_held(sh_dust_t *d, const dcand_t *c)
{
    const char *eq;
    dcand_t    *b;

    if (c->kind != SH_DUST_DROP_VALUE || c->arglen < 2
        || c->arg_text[c->arglen - 1] != ')'
        || (eq = memchr(c->arg_text, '=', c->arglen)) == NULL
        || eq[1] != '(')
    {
        return 0;
    }
    b = sh_dust_cand_find(d, c->host, c->pattern, SH_DUST_DROP_PARAM,
                          sh_url_hash_decoded(d->secret, c->arg_text,
                                              (size_t) (eq - c->arg_text)));
    return b == NULL || b->against == 0 || on(b);
}

static int
qualifies(sh_dust_t *d, const dcand_t *c)
{
    dcand_t sum;

    return test_sum(d, c, &sum) >= scope_need(d, c)
           && sum.support >= d->opts.min_evidence;
}

/* The host's record of c's rule: one more scope good (on) or bad. */
static void
host_record(sh_dust_t *d, const dcand_t *c, int good)
{
    dcand_t *hw;

    if (!scoped(c)) {
        return;
    }
    hw = sh_dust_cand_find(d, c->host, PAT_HOST, c->kind, c->arg);
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
    dhost_t *h = sh_dust_host_find(d, hash);
    size_t   n = h ? h->textlen : 0;

    if (n > 0) {
        memcpy(out, h->text, n);
    }
    out[n] = '\0';
}

void
sh_dust_rule_info_of(sh_dust_t *d, const dcand_t *c, sh_dust_rule_info_t *r)
{
    uint32_t n = c->support + c->against;

    memset(r, 0, sizeof(*r));
    r->host_hash = c->host;
    r->pattern_hash = c->pattern;
    r->arg_hash = c->arg;
    host_text(d, c->host, r->host);
    sh_dust_pattern_name(r->pattern, c->pattern, c->pat_text, c->patlen);
    memcpy(r->arg, c->arg_text, c->arglen);
    r->arg[c->arglen] = '\0';
    r->kind = (sh_dust_kind_t) c->kind;
    r->state = (sh_dust_state_t) c->state;
    r->support = c->support;
    r->against = c->against;
    r->precision = n ? (double) c->support / n : 0.0;
    r->lower = sh_dust_wilson_lower(c->support, c->against, d->opts.z);
    r->llr = test_sum(d, c, NULL);
    r->need = scope_need(d, c);
    r->sample = on(c) ? sh_dust_rule_sample(d, c) : 1.0;
    r->waiting = c->state == SH_DUST_CANDIDATE && narrow_held(d, c);
    r->last = c->last;
}

void
sh_dust_record(sh_dust_t *d, const dcand_t *c, sh_dust_state_t from,
               uint64_t now)
{
    sh_dust_change_t *ch = &ring(d)[d->change_seq % SH_DUST_CHANGES];

    ch->seq = ++d->change_seq;
    ch->time = now;
    ch->from = from;
    sh_dust_rule_info_of(d, c, &ch->rule);
}

/*
 * An alias on: the two hosts are joined.  The source's URLs take the
 * target's host, and each host's URLs the other's rules too
 * (sh_dust_canonical()),
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
    dhost_t *hf = sh_dust_host_find(d, from), *x;
    dhost_t *ht = sh_dust_host_find(d, to);

    if (!manual(c) && !sh_dust_same_site(d, from, to)) {
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
void
sh_dust_mark_on(sh_dust_t *d, const dcand_t *c)
{
    dhost_t *h;

    if (c->kind == SH_DUST_HOST_ALIAS) {
        alias_on(d, c);
        return;
    }
    h = sh_dust_host_find(d, c->host);
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
        if ((h = sh_dust_host_find(d, i ? b : a)) != NULL) {
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
dcand_t *
sh_dust_alias_cand(sh_dust_t *d, uint64_t a, uint64_t b)
{
    dcand_t *c = sh_dust_cand_find(d, a, 0, SH_DUST_HOST_ALIAS, b);

    return (c != NULL && on(c))
           ? c : sh_dust_cand_find(d, b, 0, SH_DUST_HOST_ALIAS, a);
}

void
sh_dust_mark_off(sh_dust_t *d, const dcand_t *c)
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
    return c->kind != SH_DUST_HOST_ALIAS
           || sh_dust_same_site(d, c->host, c->arg);
}

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
        ce = sh_dust_canon_get(d, e->image, 1, &found);
        if (ce != NULL && !found) {
            ce->rep = e->rep;
            ce->url = canon_url(e->url);
            ce->gen = sh_dust_host_gen(d, sh_dust_host_find(d, c->host),
                                       e->pattern);
        }
    }
}

void
sh_dust_pattern_name(char *out, uint64_t pattern, const char *text,
                     size_t len)
{
    if (pattern == 0) {
        strcpy(out, "*");
    } else if (pattern == PAT_HOST) {
        strcpy(out, "**");          /* scopes on (support), off */
    } else if (pattern == PAT_POOL) {
        strcpy(out, "*/");          /* the pairs of every scope */
    } else if (pattern == PAT_ROOT) {
        strcpy(out, "/");
    } else if (len > 0 && memchr(text, '/', len) != NULL) {
        /* a script's scope: "store/Cart.aspx", "/index.php" */
        if (text[0] == '/') {
            text++;
            len--;
        }
        out[0] = '/';
        memcpy(out + 1, text, len);
        out[1 + len] = '\0';
    } else {
        out[0] = '/';
        memcpy(out + 1, text, len);
        out[1 + len] = '/';
        out[2 + len] = '\0';
    }
}

/* One pass over the candidates: each scoped one of host a or b (0: none)
 * that is neither manual nor on, of rule (kind, arg) unless `any`, tested
 * again. */
static void
wake_hosts(sh_dust_t *d, uint64_t a, uint64_t b, uint8_t kind, uint64_t arg,
           int any, uint64_t now)
{
    dcand_t *c = cands(d);
    size_t   i, n = (size_t) d->cand_sets * CAND_WAYS;

    for (i = 0; i < n; i++) {
        if ((any || (c[i].kind == kind && c[i].arg == arg))
            && c[i].host != 0 && (c[i].host == a || c[i].host == b)
            && scoped(&c[i]) && !manual(&c[i]) && !on(&c[i]))
        {
            (void) sh_dust_evaluate(d, &c[i], now);
        }
    }
}

/*
 * A scope's need falls when its rule gains on the host: another scope
 * turned it on (the host's record), or the pooled test passed.  The other
 * scopes of the host and of its alias that already hold enough pairs of
 * their own are tested again then, not only at their next pair, which a
 * form that is sparse in a scope (a tracker, highlight=) may not bring
 * before the crawl is over.  One pass over the candidates per activation
 * or pooled pass (tens in a crawl), not nested.
 */
static void
wake_scopes(sh_dust_t *d, const dcand_t *from, uint64_t now)
{
    static int busy;            /* under the zone's lock: no nesting */

    if (busy) {
        return;
    }
    busy = 1;
    wake_hosts(d, from->host,
               host_partner(sh_dust_host_find(d, from->host)), from->kind,
               from->arg, 0, now);
    busy = 0;
}

/* A host alias just on: each scope of the two hosts may now pass with
 * its twin's pairs (test_sum); tested at once.  One pass over
 * the candidates per alias turned on (a few in a crawl). */
static void
alias_wake(sh_dust_t *d, const dcand_t *alias, uint64_t now)
{
    wake_hosts(d, alias->host, alias->arg, 0, 0, 1, now);
}

/* The learned state after new counts: activate, retire, or neither. */
int
sh_dust_evaluate(sh_dust_t *d, dcand_t *c, uint64_t now)
{
    dcand_t *w;
    uint8_t  from = c->state;

    if (manual(c) || c->pattern == PAT_HOST || c->pattern == PAT_POOL) {
        return 0;               /* a host's record is never a rule */
    }
    if (c->state == SH_DUST_ACTIVE) {
        if (qualifies(d, c) && joinable(d, c)) {
            sh_dust_mark_on(d, c);      /* the host may have lost its hint */
            return 0;
        }
        c->state = SH_DUST_RETIRED;
        c->retired_support = c->support;
        d->stats.retirements++;
        sh_dust_mark_off(d, c);
        sh_dust_host_stale(d, c->host, c->pattern,
                           c->kind == SH_DUST_HOST_ALIAS ? c->arg : 0);
        host_record(d, c, 0);
    } else {
        if (!qualifies(d, c) || !joinable(d, c) || narrow_held(d, c)
            || (c->state == SH_DUST_RETIRED
                && c->support < 2 * (uint64_t) c->retired_support))
        {
            return 0;
        }
        /* a host-wide forbid outranks any pattern's evidence */
        w = c->pattern ? sh_dust_cand_find(d, c->host, 0, c->kind, c->arg)
                       : NULL;
        if (w != NULL && w->state == SH_DUST_FORBIDDEN) {
            return 0;
        }
        c->state = SH_DUST_ACTIVE;
        d->stats.activations++;
        sh_dust_mark_on(d, c);
        host_record(d, c, 1);
        backfill(d, c);
        sh_dust_record(d, c, (sh_dust_state_t) from, now);
        if (scoped(c)) {
            wake_scopes(d, c, now);
        } else if (c->kind == SH_DUST_HOST_ALIAS) {
            alias_wake(d, c, now);
        }
        return 1;
    }
    sh_dust_record(d, c, (sh_dust_state_t) from, now);
    return 1;
}

/* A pair's counts, halved past COUNT_MAX. */
static void
count(sh_dust_t *d, dcand_t *c, int same, uint64_t now)
{
    if (same) {
        c->support++;
    } else {
        c->against++;
    }
    if (c->support + c->against > COUNT_MAX) {
        c->support /= 2;
        c->against /= 2;
        c->retired_support /= 2;
    }
    c->stamp = ++d->clock;
    c->last = now;
}

/* A scoped pair into the host's pooled sum of the rule (created by a
 * pair of support, as any candidate). */
static void
pool(sh_dust_t *d, const scope_t *sc, const atom_t *a, int same,
     uint64_t now)
{
    dcand_t       *p;
    const dhost_t *h;
    uint64_t       partner;
    int            held;

    if (a->kind == SH_DUST_HOST_ALIAS || sc->pattern == 0
        || sc->pattern == PAT_HOST || sc->pattern == PAT_POOL)
    {
        return;
    }
    p = sh_dust_cand_find(d, sc->host, PAT_POOL, a->kind, a->arg);
    if (p == NULL) {
        if (!same) {
            return;
        }
        p = sh_dust_cand_new(d, sc->host, PAT_POOL, a->kind, a->arg);
        if (p == NULL) {
            return;
        }
    }
    if (p->arglen == 0 && a->textlen > 0) {
        atom_text(p->arg_text, SH_DUST_ARG_TEXT, &p->arglen, a);
    }
    h = sh_dust_host_find(d, sc->host);
    partner = host_partner(h);
    held = same && !pool_holds(d, sc->host, partner, p);
    count(d, p, same, now);
    if (held && pool_holds(d, sc->host, partner, p)) {
        wake_scopes(d, p, now);         /* every scope at the cap now */
    }
}

/* One pair for (scope, atom): support if same, else against. */
int
sh_dust_evidence(sh_dust_t *d, const scope_t *sc, const atom_t *a, int same,
                 uint64_t now)
{
    dcand_t *c, *twin;
    int      n;

    pool(d, sc, a, same, now);
    c = sh_dust_cand_find(d, sc->host, sc->pattern, a->kind, a->arg);
    if (c == NULL) {
        if (!same) {
            return 0;           /* a candidate starts with support */
        }
        c = sh_dust_cand_new(d, sc->host, sc->pattern, a->kind, a->arg);
        if (c == NULL) {
            return 0;
        }
        atom_text(c->arg_text, SH_DUST_ARG_TEXT, &c->arglen, a);
        copy_text(c->pat_text, SH_DUST_PAT_TEXT, &c->patlen, sc->pat,
                  sc->patlen);
    }
    /* a candidate made from a reverse pair has no text yet */
    if (c->arglen == 0 && a->textlen > 0) {
        atom_text(c->arg_text, SH_DUST_ARG_TEXT, &c->arglen, a);
    }
    if (c->patlen == 0 && sc->patlen > 0) {
        copy_text(c->pat_text, SH_DUST_PAT_TEXT, &c->patlen, sc->pat,
                  sc->patlen);
    }
    if (same) {
        d->stats.support++;
    } else {
        d->stats.against++;
    }
    count(d, c, same, now);
    n = sh_dust_evaluate(d, c, now);
    /* the twin's sum grew with this pair: tested now, not at its own next
     * pair (looked up again: an activation may reuse ways) */
    if (same
        && (c = sh_dust_cand_find(d, sc->host, sc->pattern, a->kind,
                                  a->arg)) != NULL
        && (twin = alias_twin(d, c)) != NULL && !on(twin) && !manual(twin))
    {
        n += sh_dust_evaluate(d, twin, now);
    }
    return n;
}

/*
 * A pair against a rule of the other host of an alias (one site, or the
 * operator's pin) applied to this host's URLs in scope sc: counted in
 * this host's own candidate, made for it if need be (sh_dust_evidence() alone
 * would lose it: a candidate starts with support), and the rule retired
 * here at once.  sh_dust_canonical() does not borrow a rule the borrower has
 * evidence against, so the first verification that shows a borrowed rule
 * wrong on a host is the last wrong answer it gives there; it comes back
 * only by the host's own evidence (the bound, and support doubled since).
 * The lender's rule keeps its state by its own counts.
 */
int
sh_dust_borrowed(sh_dust_t *d, const scope_t *sc, const atom_t *a,
                 uint64_t now)
{
    dcand_t *c = sh_dust_cand_find(d, sc->host, sc->pattern, a->kind, a->arg);
    uint8_t  from;
    int      n;

    if (c == NULL) {
        c = sh_dust_cand_new(d, sc->host, sc->pattern, a->kind, a->arg);
        if (c == NULL) {
            return 0;
        }
        atom_text(c->arg_text, SH_DUST_ARG_TEXT, &c->arglen, a);
        copy_text(c->pat_text, SH_DUST_PAT_TEXT, &c->patlen, sc->pat,
                  sc->patlen);
    }
    n = sh_dust_evidence(d, sc, a, 0, now);
    if (manual(c) || on(c) || c->state == SH_DUST_RETIRED) {
        return n;
    }
    from = c->state;
    c->state = SH_DUST_RETIRED;
    c->retired_support = c->support;
    d->stats.retirements++;
    sh_dust_record(d, c, (sh_dust_state_t) from, now);
    return n + 1;
}

/*
 * A pair of u (in scope sc) for the rule on for it (its atom a), learned
 * in scope ls.  Support counts in u's own scope, as any pair.  A pair
 * against, when ls is the other host's, counts where the rule was learned
 * -- the rule that made u's canonical form is the one a verification of
 * its prediction judges; u's own scope has no candidate to take it -- and
 * retires the rule for u's scope (sh_dust_borrowed()).
 */
int
sh_dust_credit(sh_dust_t *d, const scope_t *sc, const atom_t *a,
               const scope_t *ls, int same, uint64_t now)
{
    if (same || ls->host == sc->host) {
        return sh_dust_evidence(d, sc, a, same, now);
    }
    return sh_dust_evidence(d, ls, a, 0, now)
           + sh_dust_borrowed(d, sc, a, now);
}
