/*
 * sh_dust_predict.c -- a predicted duplicate (sh_dust_predict): the
 * document a URL is, from its canonical form or an active rule's own
 * evidence, before it is fetched; the operator's dry run of it; whether
 * two paths are one under the host's rules; c(u) spelled when it was
 * itself fetched; the "why" of a prediction.
 */
#include <stdio.h>
#include <string.h>

#include "sh_dust_rewrite.h"

/*
 * Where a prediction's rep comes from: the canonical table, else the
 * evidence of each applied rule alone -- an active rule R maps u and u'
 * together only if they are one document, so the last URL that R mapped
 * to R(u), or R(u) itself fetched, names u's document even when it was
 * fetched before R turned on (the canonical table only knows what came
 * after).  u (hash hu) is not one the store holds (the caller's
 * identity probe).  At most 2 probes a rule, after one canonical probe;
 * then c(u)'s identity and one probe a rule.
 */
static int
find_rep(sh_dust_t *d, const sh_url_t *u, uint64_t hu, const scope_t *sc,
         const dhost_t *h, const atom_t *a, dcand_t **applied,
         const int *which, unsigned na, const sh_url_rw_t *rw, uint64_t *rep,
         int *used)
{
    sh_url_rw_t nh;
    dcanon_t   *ce;
    devid_t    *e;
    uint64_t    hr;
    unsigned    i;
    int         found;

    /* a form set under rules now off (another generation) may be
     * another page's: the rules on now must make it again */
    ce = sh_dust_canon_get(d, sh_url_hash(u, rw), 0, &found);
    if (ce != NULL && ce->url != canon_url(hu)
        && ce->gen == sh_dust_host_gen(d, h, sh_dust_form_scope(u, sc, rw)))
    {
        *rep = ce->rep;
        *used = -1;
        return 1;
    }
    for (i = 0; i < na; i++) {
        if (which[i] < 0) {
            nh = (sh_url_rw_t) { .no_host = 1 };
            e = evid_at(d, KEY_ALIAS, sh_url_hash(u, &nh), 0, &found);
            if (e != NULL && e->aux == rw->host && e->url != hu) {
                *rep = e->rep;
                *used = (int) i;
                return 1;
            }
            continue;
        }
        if (a[which[i]].kind == SH_DUST_PARAM_PATH) {
            continue;           /* its evidence is c(u)'s, below */
        }
        hr = sh_url_hash(u, &a[which[i]].rw);
        e = pair_find(d, sc->host, sc->pattern, a[which[i]].kind,
                      a[which[i]].arg, hr);
        if (e == NULL || e->url == hu) {
            e = evid_at(d, KEY_IDENT, hr, 0, &found);
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
    e = evid_at(d, KEY_IDENT, hr, 0, &found);
    if (e != NULL && e->url != hu && e->url != 0) {
        *rep = e->rep;
        *used = -1;
        return 1;
    }
    for (i = 0; i < na; i++) {
        if (which[i] < 0) {
            continue;
        }
        e = pair_find(d, applied[i]->host,
                      applied[i]->pattern ? applied[i]->pattern : sc->pattern,
                      applied[i]->kind, applied[i]->arg, hr);
        if (e != NULL && e->url != hu) {
            *rep = e->rep;
            *used = -1;
            return 1;
        }
    }
    return 0;
}

/* Whether rule (host, pattern, kind, arg) is on and not forbidden
 * host-wide; *out its candidate. */
static int
rule_live(sh_dust_t *d, uint64_t host, uint64_t pattern, uint8_t kind,
          uint64_t arg, dcand_t **out)
{
    dcand_t *c, *w;

    c = sh_dust_cand_find(d, host, pattern, kind, arg);
    if (c == NULL || !on(c)) {
        return 0;
    }
    w = sh_dust_cand_find(d, host, 0, kind, arg);
    if (w != NULL && w != c && w->state == SH_DUST_FORBIDDEN) {
        return 0;
    }
    *out = c;
    return 1;
}

/*
 * u is itself the canonical form of a fetched URL w that several rules
 * changed (no one rule's reverse entry is u): the canonical table knows
 * u from w, and step_cform left a rule that made it.  The entry must be
 * of the generation of the rules on now for u's scope on w's host (a
 * rule retired since may have made it), and that rule on.
 */
static dcand_t *
cform_rep(sh_dust_t *d, const scope_t *sc, uint64_t hu, uint64_t *rep)
{
    devid_t  *e;
    dcanon_t *ce;
    dcand_t  *c;
    int       found;

    e = evid_at(d, KEY_CFORM, hu, 0, &found);
    if (e == NULL || e->url == hu || e->pad[0] == 0) {
        return NULL;
    }
    ce = sh_dust_canon_get(d, hu, 0, &found);
    if (ce == NULL || ce->url == canon_url(hu) || ce->rep != e->rep
        || ce->gen != sh_dust_host_gen(d, sh_dust_host_find(d, e->image),
                                       sc->pattern)
        || !rule_live(d, e->host, e->pattern, e->pad[0], e->aux, &c))
    {
        return NULL;
    }
    *rep = e->rep;
    return c;
}

/*
 * Where a prediction's rep comes from when u is itself the canonical form
 * of an earlier URL: an active rule R mapped a fetched w to u (or to c(u))
 * and left its reverse entry there, so u is w's document -- the same
 * inference as a pair, read the other way.  /docs/x after
 * /docs/x?PHPSESSID=A, DIR/ after DIR/index.php: the canonical URL
 * requested after a variant was fetched.  The rule must be on now in the
 * scope where it made the entry (and not forbidden host-wide).
 */
static dcand_t *
rev_rep(sh_dust_t *d, uint64_t hu, uint64_t hc, uint64_t *rep)
{
    dcand_t *c;
    devid_t *e;
    unsigned i;
    int      found;

    for (i = 0; i < (hc != hu ? 2u : 1u); i++) {
        e = evid_at(d, KEY_REV, i ? hc : hu, 0, &found);
        if (e == NULL || e->url == hu || e->kind == 0
            || e->kind == SH_DUST_HOST_ALIAS)
        {
            continue;
        }
        if (!rule_live(d, e->host, e->pattern, e->kind, e->aux, &c)) {
            continue;
        }
        *rep = e->rep;
        return c;
    }
    return NULL;
}

static void
why_add(sh_dust_t *d, sh_dust_why_t *why, const dcand_t *c)
{
    double s = sh_dust_rule_sample(d, c);

    if (s > why->sample) {
        why->sample = s;        /* the weakest rule's */
    }
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
    dcand_t     *rc = NULL;
    devid_t     *e;
    uint64_t     hu;
    unsigned     i, n, na;
    int          found;

    if (sh_url_parse(&u, url, len) != 0) {
        d->stats.refused++;
        return -1;
    }
    sh_url_hash_parts(&u, d->secret);
    h = sh_dust_host_find(d, u.host_hash);
    if (h == NULL || (h->bloom == 0 && h->alias_to == 0)) {
        return 0;
    }
    sh_dust_scope_of(&u, &sc);
    n = sh_dust_atoms(&u, a);
    na = sh_dust_canonical(d, &u, &sc, h, a, n, &rw, applied, which);
    /* a URL already seen is the store's to answer: no prediction */
    hu = sh_url_hash(&u, NULL);
    e = evid_at(d, KEY_IDENT, hu, 0, &found);
    if (e != NULL && e->url == hu) {
        return 0;
    }
    if (na == 0
        || !find_rep(d, &u, hu, &sc, h, a, applied, which, na, &rw, rep,
                     &used))
    {
        rc = rev_rep(d, hu, na > 0 ? sh_url_hash(&u, &rw) : hu, rep);
        if (rc == NULL && na == 0) {
            rc = cform_rep(d, &sc, hu, rep);
        }
        if (rc == NULL) {
            return 0;
        }
    }
    h->predictions++;
    h->last = now;
    d->stats.predicted++;
    if (why != NULL) {
        memset(why, 0, sizeof(*why));
        why->host_hash = u.host_hash;
        if (rc != NULL) {
            why_add(d, why, rc);
        }
        for (i = 0; rc == NULL && i < na; i++) {
            if (used < 0 || (unsigned) used == i) {
                why_add(d, why, applied[i]);
            }
        }
        if (why->sample == 0) {
            why->sample = 1.0;
        }
    }
    return 1;
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
        h = sh_dust_host_find(d, u.host_hash);
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

int
sh_dust_seen(sh_dust_t *d, const char *url, size_t len)
{
    sh_url_t  u;
    devid_t  *e;
    uint64_t  hu;
    int       found;

    if (sh_url_parse(&u, url, len) != 0) {
        return -1;
    }
    sh_url_hash_parts(&u, d->secret);
    hu = sh_url_hash(&u, NULL);
    e = evid_at(d, KEY_IDENT, hu, 0, &found);
    return e != NULL && e->url == hu;
}

/*
 * c(u) spelled, when that URL itself was fetched and resolved to `rep`:
 * its identity entry (a fetch, never an answered prediction, leaves one).
 * The written text is parsed and hashed again, so a spelling the hash
 * would not give back (a host name cut in the table, another encoding)
 * names nothing.
 */
size_t
sh_dust_fetched_form(sh_dust_t *d, const char *url, size_t len,
                     uint64_t rep, char *buf, size_t size)
{
    sh_url_t     u, w;
    atom_t       a[ATOMS_MAX];
    dcand_t     *applied[ATOMS_MAX + 1];
    int          which[ATOMS_MAX + 1], found;
    sh_url_rw_t  rw;
    scope_t      sc;
    dhost_t     *h, *t = NULL;
    devid_t     *e;
    uint64_t     hc;
    size_t       n;

    if (size == 0 || sh_url_parse(&u, url, len) != 0) {
        return 0;
    }
    sh_url_hash_parts(&u, d->secret);
    h = sh_dust_host_find(d, u.host_hash);
    if (h == NULL || (h->bloom == 0 && h->alias_to == 0)) {
        return 0;
    }
    sh_dust_scope_of(&u, &sc);
    if (sh_dust_canonical(d, &u, &sc, h, a, sh_dust_atoms(&u, a), &rw,
                          applied, which)
        == 0)
    {
        return 0;
    }
    hc = sh_url_hash(&u, &rw);
    e = evid_at(d, KEY_IDENT, hc, 0, &found);
    if (e == NULL || e->url != hc || e->rep != rep
        || (rw.host != 0
            && ((t = sh_dust_host_find(d, rw.host)) == NULL
                || t->textlen == 0 || t->textlen >= SH_DUST_HOST_TEXT)))
    {
        return 0;
    }
    n = sh_url_write(&u, &rw, t ? t->text : NULL, t ? t->textlen : 0, buf,
                     size);
    if (n >= size || sh_url_parse(&w, buf, n) != 0) {
        return 0;
    }
    sh_url_hash_parts(&w, d->secret);
    return sh_url_hash(&w, NULL) == hc ? n : 0;
}

/* The hash of u's path as keys=path compares it: c(u)'s, with the path
 * rules its pairs support (sh_dust_supported_paths); 0 for a refused
 * URL. */
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
    unsigned     n;

    if (sh_url_parse(&u, url, len) != 0) {
        return 0;
    }
    sh_url_hash_parts(&u, d->secret);
    memset(&rw, 0, sizeof(rw));
    h = sh_dust_host_find(d, u.host_hash);
    if (h != NULL) {
        sh_dust_scope_of(&u, &sc);
        n = sh_dust_atoms(&u, a);
        sh_dust_canonical(d, &u, &sc, h, a, n, &rw, applied, which);
        sh_dust_supported_paths(d, &sc, h, a, n, &rw);
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
    dhost_t *h = sh_dust_host_find(d, why->host_hash);

    d->stats.saved++;
    if (h != NULL) {
        h->saved++;
    }
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
