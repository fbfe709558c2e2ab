/*
 * sh_dust_learn.c -- an observation (sh_dust_observe): the pairs a URL and
 * its document give the rules, one step per evidence table.
 *
 * An observation (url, rep) is held in an obs_t: the URL parsed, its
 * scope, its atomic rules, the rules already on for it (c(u)) and where
 * each was learned.  Then, in this order (the tables' LRU stamps make the
 * order part of the result):
 *
 *   for each atomic rule R that changes u, with R'(u) its image:
 *     pair      K(scope, R, R'(u)): the last other URL R mapped there;
 *     forward   R'(u) itself fetched before (its identity entry), or
 *               known to the canonical table, or, for a path rule that
 *               moves u into another scope, that scope's canonical form;
 *     reverse   u's own entry under R'(u), for a later URL that is R'(u);
 *   reverse     u, or c(u), is R'(w) of an earlier w;
 *   alias       the same path and query on another host;
 *   alias path  else the same path on another host that has rules;
 *   identity    u's own entry;
 *   canonical   c(u)'s entry, checked against and refreshed, and the
 *               rule that made c(u), for a later request of c(u).
 */
#include <string.h>

#include "sh_dust_rewrite.h"

/* Pairs of the same path on two hosts: HOST_ALIAS(larger -> smaller). */
static int
alias_pair(sh_dust_t *d, uint64_t other, const sh_url_t *u, int same,
           uint64_t now)
{
    uint64_t from = u->host_hash > other ? u->host_hash : other;
    uint64_t to = u->host_hash > other ? other : u->host_hash;
    dhost_t *th = sh_dust_host_find(d, to);
    scope_t  sc;
    atom_t   a;

    if (sh_dust_host_find(d, from) == NULL
        || !sh_dust_same_site(d, from, to))
    {
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
    return sh_dust_evidence(d, &sc, &a, same, now);
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
    dhost_t     *oh = sh_dust_host_find(d, other);
    dcanon_t    *ce;

    if (oh == NULL || oh->bloom == 0
        || h->alias_to == other || h->alias_from == other)
    {
        return;                 /* no rules there, or joined already */
    }
    os.host = other;
    sh_dust_canonical(d, u, &os, oh, a, na, &rw, applied, which);
    if (rw.host == 0) {
        rw.host = other;
    }
    ce = sh_dust_canon_get(d, sh_url_hash(u, &rw), 0, &found);
    if (ce != NULL && ce->url != canon_url(hu)) {
        alias_pair(d, other, u, ce->rep == rep, now);
    }
}

/* An observation on its way through the tables. */
typedef struct {
    sh_url_t     u;
    scope_t      sc;
    dhost_t     *h;
    uint64_t     rep;
    uint64_t     now;
    uint64_t     hu;            /* hash(u) */
    uint64_t     hc;            /* hash(c(u)); hu with no rule on */
    int          refetch;       /* u was seen before: no new pair */
    atom_t       a[ATOMS_MAX];
    unsigned     n;             /* atoms */
    dcand_t     *applied[ATOMS_MAX + 1];
    int          which[ATOMS_MAX + 1];
    unsigned     na;            /* rules applied in c(u) */
    sh_url_rw_t  rw;            /* c(u)'s rewrite */
    uint8_t      isactive[ATOMS_MAX];
    scope_t      lender[ATOMS_MAX];     /* where each active atom's rule
                                           was learned (values: a slot
                                           can be reused on the way) */
} obs_t;

/* The rules on for u: c(u), and which atom each applied rule is. */
static void
obs_active(sh_dust_t *d, obs_t *o)
{
    unsigned i;

    memset(o->isactive, 0, o->n);
    memset(&o->rw, 0, sizeof(o->rw));
    o->na = 0;
    if (o->h->bloom != 0 || o->h->alias_to != 0) {
        o->na = sh_dust_canonical(d, &o->u, &o->sc, o->h, o->a, o->n, &o->rw,
                                  o->applied, o->which);
        for (i = 0; i < o->na; i++) {
            if (o->which[i] >= 0) {
                o->isactive[o->which[i]] = 1;
                o->lender[o->which[i]] = (scope_t) {
                    .host = o->applied[i]->host,
                    .pattern = o->applied[i]->pattern, .pat = "" };
            }
        }
    }
    o->hc = o->na > 0 ? sh_url_hash(&o->u, &o->rw) : o->hu;
}

/* One pair for atom i: credited to the rule on for it (where it was
 * learned), else counted for the candidate in u's scope. */
static void
obs_pair(sh_dust_t *d, obs_t *o, unsigned i, int same)
{
    if (o->isactive[i]) {
        sh_dust_credit(d, &o->sc, &o->a[i], &o->lender[i], same, o->now);
    } else {
        sh_dust_evidence(d, &o->sc, &o->a[i], same, o->now);
    }
}

/* The pair table: the last other URL that R mapped to R'(u).  Two URLs
 * of one canonical form say nothing of a rule composed with the rules
 * that made them one.  Hosts joined by an alias share the table (keyed by
 * the target's host; R'(u) has the target's host too): a URL of one host
 * pairs with the other's, as pairs of one site. */
static void
step_pair(sh_dust_t *d, obs_t *o, unsigned i, uint64_t hr)
{
    devid_t *e;
    int      found;

    /* read: also an entry the host left before its alias joined it */
    e = pair_find(d, o->sc.host, o->sc.pattern, o->a[i].kind, o->a[i].arg,
                  hr);
    if (e != NULL && e->url != o->hu && (o->isactive[i] || e->aux != o->hc))
    {
        obs_pair(d, o, i, e->rep == o->rep);
    }
    e = evid_at(d, cand_key(pair_host(d, o->sc.host), o->sc.pattern,
                            o->a[i].kind, o->a[i].arg) ^ KEY_PAIR,
                hr, 1, &found);
    e->rep = o->rep;
    e->url = o->hu;
    e->aux = o->hc;
}

/* A path rule that moves u into another scope, composed with that
 * scope's query rules: /amp/docs/x?sid=A is /docs/x, a canonical form
 * there. */
static void
step_moved(sh_dust_t *d, obs_t *o, unsigned i, const sh_url_rw_t *rwi,
           uint64_t to)
{
    sh_url_rw_t  rwm = *rwi;
    dhost_t     *h = o->h, *other;
    dcanon_t    *ce;
    int          found;

    other = h->alias_to ? sh_dust_host_find(d, h->alias_to)
            : h->alias_from ? sh_dust_host_find(d, h->alias_from) : NULL;
    if (sh_dust_moved_rules(d, h, other, to, o->a, o->n, NULL, &rwm, NULL,
                            NULL, 0) == 0)
    {
        return;
    }
    if (h->alias_to != 0) {
        rwm.host = h->alias_to;
    }
    ce = sh_dust_canon_get(d, sh_url_hash(&o->u, &rwm), 0, &found);
    if (ce != NULL && ce->url != canon_url(o->hu)) {
        sh_dust_evidence(d, &o->sc, &o->a[i], ce->rep == o->rep, o->now);
    }
}

/* The identity table: R'(u) itself fetched before u; else, with rules
 * on, a URL whose canonical form R'(u) is; else a moved scope's form. */
static void
step_forward(sh_dust_t *d, obs_t *o, unsigned i, uint64_t hr,
             const sh_url_rw_t *rwi)
{
    devid_t  *e;
    dcanon_t *ce;
    uint64_t  mt;
    int       found;

    e = evid_at(d, KEY_IDENT, hr, 0, &found);
    if (found && e->url != o->hu) {
        obs_pair(d, o, i, e->rep == o->rep);
    } else if (o->na > 0 && !o->isactive[i]) {
        ce = sh_dust_canon_get(d, hr, 0, &found);
        if (ce != NULL && ce->url != canon_url(o->hu)) {
            sh_dust_evidence(d, &o->sc, &o->a[i], ce->rep == o->rep, o->now);
        }
    } else if (!o->isactive[i] && (mt = sh_dust_moved_to(&o->u, rwi)) != 0
               && mt != o->sc.pattern)
    {
        step_moved(d, o, i, rwi, mt);
    }
}

/* The reverse table, written: u under R'(u), with the rule that made it,
 * for a later URL that is R'(u) (and for the backfill). */
static void
step_leave_reverse(sh_dust_t *d, obs_t *o, unsigned i, uint64_t hr)
{
    devid_t *e;
    int      found;

    e = evid_at(d, KEY_REV, hr, 1, &found);
    e->rep = o->rep;
    e->url = o->hu;
    e->aux = o->a[i].arg;
    e->pattern = o->sc.pattern;
    e->host = o->sc.host;
    e->image = hr;
    e->kind = o->a[i].kind;
}

/* Each atomic rule R that changes u, in turn: its pair, forward and
 * reverse entries.  R'(u) is R(u) composed with the rules already on for
 * u's scope, so that a rule whose pairs only line up once another is on
 * (utm_source behind a session id) is learned too; an active rule's own
 * pairs are taken without composition, so that its evidence stays its
 * own. */
static void
step_atoms(sh_dust_t *d, obs_t *o)
{
    sh_url_rw_t rwi;
    uint64_t    hr;
    unsigned    i;

    for (i = 0; i < o->n; i++) {
        if (o->a[i].kind == SH_DUST_PARAM_PATH) {
            continue;           /* its pairs are step_value's */
        }
        rwi = o->a[i].rw;
        if (o->na > 0 && !o->isactive[i]) {
            sh_dust_merge_rw(&rwi, &o->rw);
            rwi.host = o->rw.host;
        }
        hr = sh_url_hash(&o->u, &rwi);
        if (!o->isactive[i] && hr == o->hc) {
            continue;           /* nothing beyond the rules already on */
        }
        step_pair(d, o, i, hr);
        if (!o->refetch) {
            step_forward(d, o, i, hr, &rwi);
        }
        if (o->a[i].kind != SH_DUST_DROP_VALUE) {
            /* a value's rewrite is its name's when the name is there
             * once: the reverse entry stays the name's rule */
            step_leave_reverse(d, o, i, hr);
        }
    }
}

/*
 * The value table (param_path): a script's parameter value and a path's
 * last segment meet under one key, the host, the value and the rest of
 * the query under the rules on: /w/index.php?title=T&printable=yes and
 * /wiki/T when printable is dropped.  An entry keeps its side: a path's
 * prefix as text ("wiki/"), or a script parameter's scope, name hash and
 * name (at most VALUE_NAME_MAX bytes).  A script URL and a path URL of
 * one key are a pair of param_path(NAME) in the script's scope, named
 * "NAME=/prefix/"; a pair whose prefix is not the one the candidate has
 * counts for neither.  A host's paths enter the table only once a script
 * URL of it has (dhost_t.scripts): a site without scripts pays nothing.
 */
#define SIDE_PATH       0x81    /* in devid_t.kind: never a rule's kind, */
#define SIDE_SCRIPT     0x82    /* which the backfill's scan matches */
#define VALUE_NAME_MAX  14      /* a script side's name, in image + pad */

typedef struct {
    int          side;
    uint64_t     host;
    uint64_t     pattern;       /* script side: its scope */
    uint64_t     name;          /* script side: the name's hash */
    char         text[SH_DUST_ARG_TEXT + 1];    /* prefix, or name */
    size_t       len;
} vside_t;

static void
vside_put(devid_t *e, const vside_t *v)
{
    char buf[32];

    memset(buf, 0, sizeof(buf));
    e->kind = (uint8_t) v->side;
    e->pad[0] = (uint8_t) v->len;
    if (v->side == SIDE_PATH) {
        memcpy(buf, v->text, v->len);           /* 32 bytes at most */
        memcpy(&e->aux, buf, 8);
        memcpy(&e->pattern, buf + 8, 8);
        memcpy(&e->host, buf + 16, 8);
        memcpy(&e->image, buf + 24, 8);
        return;
    }
    e->aux = v->name;
    e->pattern = v->pattern;
    e->host = v->host;
    memcpy(buf, v->text, v->len);               /* 14 bytes at most */
    memcpy(&e->image, buf, 8);
    memcpy(e->pad + 1, buf + 8, 6);
}

static void
vside_get(const devid_t *e, vside_t *v)
{
    char buf[32];

    v->side = e->kind;
    v->len = e->pad[0];
    if (v->side == SIDE_PATH) {
        memcpy(buf, &e->aux, 8);
        memcpy(buf + 8, &e->pattern, 8);
        memcpy(buf + 16, &e->host, 8);
        memcpy(buf + 24, &e->image, 8);
        v->len = v->len <= 32 ? v->len : 32;
    } else {
        v->name = e->aux;
        v->pattern = e->pattern;
        v->host = e->host;
        memcpy(buf, &e->image, 8);
        memcpy(buf + 8, e->pad + 1, 6);
        v->len = v->len <= VALUE_NAME_MAX ? v->len : VALUE_NAME_MAX;
    }
    memcpy(v->text, buf, v->len);
    v->text[v->len] = '\0';
}

/* A pair of a script side s and a path side p: param_path(NAME) in s's
 * scope, if "NAME=/prefix/" is a rule's text and the candidate, if any,
 * has that prefix. */
static void
vpair(sh_dust_t *d, const vside_t *s, const vside_t *p, const scope_t *ssc,
      int same, uint64_t now)
{
    char           text[SH_DUST_ARG_TEXT + 8];
    size_t         n, nl, pl;
    const char    *pre;
    unsigned       k;
    atom_t         a;
    scope_t        sc;
    const dcand_t *c;

    if (s->len + p->len + 2 > SH_DUST_ARG_TEXT) {
        return;
    }
    memcpy(text, s->text, s->len);
    n = s->len;
    text[n++] = '=';
    text[n++] = '/';
    memcpy(text + n, p->text, p->len);
    n += p->len;
    if (sh_dust_vpath_text(text, n, &nl, &pre, &pl, &k) != 0) {
        return;
    }
    c = sh_dust_cand_find(d, s->host, s->pattern, SH_DUST_PARAM_PATH,
                          s->name);
    if (c != NULL && c->arglen > 0
        && (c->arglen != n || memcmp(c->arg_text, text, n) != 0))
    {
        return;                 /* another prefix: not this rule's pair */
    }
    memset(&a, 0, sizeof(a));
    a.kind = SH_DUST_PARAM_PATH;
    a.arg = s->name;
    a.text = text;
    a.textlen = (uint32_t) n;
    if (ssc != NULL) {
        sc = *ssc;
    } else {
        sc = (scope_t) { .host = s->host, .pattern = s->pattern, .pat = "" };
    }
    sh_dust_evidence(d, &sc, &a, same, now);
}

static void
step_value(sh_dust_t *d, obs_t *o)
{
    const sh_url_seg_t *last;
    sh_url_rw_t         rwk;
    vside_t             me, them;
    devid_t            *e;
    unsigned            j;
    int                 found;
    size_t              n;

    if (o->refetch) {
        return;
    }
    for (j = 0; j <= o->n; j++) {
        /* the script sides, one per param_path atom not on; then the
         * path side of u itself (j == o->n) */
        rwk = o->rw;
        rwk.vpath = 0;
        rwk.nprefix = 0;
        memset(&me, 0, sizeof(me));
        me.host = o->sc.host;
        if (j < o->n) {
            if (o->a[j].kind != SH_DUST_PARAM_PATH || o->isactive[j]
                || o->rw.vpath)
            {
                continue;
            }
            n = o->a[j].textlen;
            if (n > VALUE_NAME_MAX) {
                continue;
            }
            me.side = SIDE_SCRIPT;
            me.pattern = o->sc.pattern;
            me.name = o->a[j].arg;
            memcpy(me.text, o->a[j].text, n);
            me.len = n;
            o->h->scripts = 1;
            rwk.vpath = o->a[j].rw.vpath;
            rwk.drop_params |= o->a[j].rw.drop_params;
            rwk.vseg = sh_url_hash_bytes(d->secret,
                                         o->u.params[rwk.vpath - 1].value.p,
                                         o->u.params[rwk.vpath - 1].value.len);
        } else {
            /* a path's last segment, after a prefix the text can hold */
            last = &o->u.segs[o->u.nsegs - 1];
            if (!o->h->scripts || o->rw.vpath || last->seg.len == 0
                || last->seg.len > VPATH_VALUE_MAX
                || last->base_len != last->seg.len
                || (n = (size_t) (last->seg.p - o->u.path.p - 1))
                   > SH_DUST_ARG_TEXT)
            {
                continue;
            }
            me.side = SIDE_PATH;
            memcpy(me.text, o->u.path.p + 1, n);        /* "wiki/" */
            me.len = n;
            rwk.vpath = 1;      /* hashed only: the path is vseg alone */
            rwk.vseg = last->hash;
        }
        e = evid_at(d, KEY_VALUE, sh_url_hash(&o->u, &rwk), 1, &found);
        if (found && e->url != o->hu) {
            vside_get(e, &them);
            if (them.side == SIDE_SCRIPT && me.side == SIDE_PATH) {
                vpair(d, &them, &me, NULL, e->rep == o->rep, o->now);
            } else if (them.side == SIDE_PATH && me.side == SIDE_SCRIPT) {
                vpair(d, &me, &them, &o->sc, e->rep == o->rep, o->now);
            }
        }
        e->rep = o->rep;
        e->url = o->hu;
        vside_put(e, &me);
    }
}

/* The reverse table, read: u, or c(u), is R'(w) of an earlier w. */
static void
step_reverse(sh_dust_t *d, obs_t *o)
{
    devid_t *e;
    atom_t   ra;
    scope_t  rs;
    unsigned i;
    int      found, same;

    for (i = 0; !o->refetch && i < (o->hc != o->hu ? 2u : 1u); i++) {
        e = evid_at(d, KEY_REV, i ? o->hc : o->hu, 0, &found);
        if (found && e->url != o->hu && e->kind != 0) {
            memset(&ra, 0, sizeof(ra));
            ra.kind = e->kind;
            ra.arg = e->aux;
            rs = o->sc;
            if (e->pattern != o->sc.pattern) {
                rs.pattern = e->pattern;
                rs.pat = "";
                rs.patlen = 0;
            }
            same = e->rep == o->rep;
            /* this pair is counted; the entry stays w's document: a later
             * URL of the same image pairs with w, not with u, which may be
             * R'(w) itself by other rules (the alias's host: m.x/a after
             * x/a and x/a?page=2 is no pair of drop_param(page)) */
            e->url = o->hu;
            sh_dust_evidence(d, &rs, &ra, same, o->now);
            break;
        }
    }
}

/* The alias table: the same path and query on another host.  1 if it
 * made a pair. */
static int
step_alias(sh_dust_t *d, obs_t *o)
{
    sh_url_rw_t nh = { .no_host = 1 };
    devid_t    *e;
    int         found, paired;

    e = evid_at(d, KEY_ALIAS, sh_url_hash(&o->u, &nh), 1, &found);
    paired = found && e->aux != o->u.host_hash && e->url != o->hu;
    if (paired) {
        alias_pair(d, e->aux, &o->u, e->rep == o->rep, o->now);
    }
    e->rep = o->rep;
    e->url = o->hu;
    e->aux = o->u.host_hash;
    return paired;
}

/* The alias path table: else the same path on another host that has
 * rules, u put in that host's canonical form.  A host with rules keeps
 * the entry: its canonical table can answer. */
static void
step_alias_path(sh_dust_t *d, obs_t *o, int paired)
{
    devid_t *e;
    dhost_t *oh;
    int      found;

    e = evid_at(d, KEY_APATH, sh_url_path_hash(&o->u, NULL), 1, &found);
    if (found && e->aux != o->u.host_hash && !paired && !o->refetch) {
        cross_alias(d, &o->u, &o->sc, o->h, o->a, o->n, e->aux, o->rep,
                    o->hu, o->now);
    }
    if (!found || o->h->bloom != 0 || e->aux == o->u.host_hash
        || (oh = sh_dust_host_find(d, e->aux)) == NULL || oh->bloom == 0)
    {
        e->rep = o->rep;
        e->url = o->hu;
        e->aux = o->u.host_hash;
    }
}

/* The identity table, written: u itself. */
static void
step_identity(sh_dust_t *d, obs_t *o)
{
    devid_t *e;
    int      found;

    e = evid_at(d, KEY_IDENT, o->hu, 1, &found);
    e->rep = o->rep;
    e->url = o->hu;
}

/*
 * The canonical form's rule, written: c(u) under its hash, with a rule
 * that made it (a scoped one if any, else the host alias).  A later
 * request of c(u) itself, which no rule changes (/docs/x after
 * /docs/x?sid=A&ref=nav, both rules on; product.aspx?productid=N after
 * its session and case variant), is then u's document by those rules:
 * sh_dust_predict names this rule for it, when the canonical table's entry
 * is still of the rules' generation.  The reverse table cannot tell it:
 * it holds one rule's image at a time, and an active rule's own.  Its
 * own key kind, so that the learner's reverse step and the backfill never
 * read it.
 */
static void
step_cform(sh_dust_t *d, obs_t *o)
{
    const dcand_t *c = NULL;
    devid_t       *e;
    unsigned       i;
    int            found;

    for (i = 0; i < o->na && c == NULL; i++) {
        if (o->which[i] >= 0) {
            c = o->applied[i];
        }
    }
    if (c == NULL) {
        c = o->applied[0];
    }
    e = evid_at(d, KEY_CFORM, o->hc, 1, &found);
    e->rep = o->rep;
    e->url = o->hu;
    e->aux = c->arg;
    e->pattern = c->pattern;
    e->host = c->host;
    e->image = o->h->hash;      /* whose generation the form is of */
    e->kind = 0;                /* not a reverse entry: no rule's kind, */
    e->pad[0] = c->kind;        /* which the backfill's scan matches */
}

/* The canonical table, checked and refreshed while rules are on: another
 * URL of c(u) is a pair for each rule that made it, as the canonical form
 * it made; against, a borrowed rule is retired here. */
static void
step_canonical(sh_dust_t *d, obs_t *o)
{
    dcanon_t *ce;
    scope_t   cs;
    atom_t    ca;
    unsigned  i, pairs;
    int       found, w;

    if (o->h->bloom == 0 && o->h->alias_to == 0) {
        return;
    }
    if (o->hc != o->hu) {
        step_cform(d, o);       /* before any pair: an activation may
                                   reuse the applied rules' ways */
    }
    ce = sh_dust_canon_get(d, sh_url_hash(&o->u, &o->rw), 1, &found);
    /* decided once: a pair's activation may refill the entry's set */
    pairs = found && ce->url != canon_url(o->hu) ? o->na : 0;
    for (i = 0; i < pairs; i++) {
        w = o->which[i];
        if (w >= 0) {
            sh_dust_evidence(d, &o->lender[w], &o->a[w], ce->rep == o->rep,
                             o->now);
            if (ce->rep != o->rep && o->lender[w].host != o->sc.host) {
                sh_dust_borrowed(d, &o->sc, &o->a[w], o->now);
            }
        } else {
            cs = (scope_t) { .host = o->applied[i]->host, .pat = "" };
            memset(&ca, 0, sizeof(ca));
            ca.kind = o->applied[i]->kind;
            ca.arg = o->applied[i]->arg;
            sh_dust_evidence(d, &cs, &ca, ce->rep == o->rep, o->now);
        }
    }
    ce->rep = o->rep;
    ce->url = canon_url(o->hu);
    ce->gen = sh_dust_host_gen(d, o->h, sh_dust_form_scope(&o->u, &o->sc,
                                                           &o->rw));
}

int
sh_dust_observe(sh_dust_t *d, const char *url, size_t len, uint64_t rep,
                uint64_t now)
{
    obs_t    o;
    devid_t *e;
    uint64_t seq0 = d->change_seq;
    int      found;

    if (sh_url_parse(&o.u, url, len) != 0) {
        d->stats.refused++;
        return -1;
    }
    sh_url_hash_parts(&o.u, d->secret);
    d->stats.observed++;
    o.h = sh_dust_host_get(d, o.u.host_hash, o.u.host.p, o.u.host.len, 1);
    if (o.h == NULL) {
        return 0;               /* every way pinned: no room to learn */
    }
    o.h->requests++;
    o.h->last = now;
    o.rep = rep;
    o.now = now;
    sh_dust_scope_of(&o.u, &o.sc);
    o.hu = sh_url_hash(&o.u, NULL);
    e = evid_at(d, KEY_IDENT, o.hu, 0, &found);
    o.refetch = e != NULL && e->url == o.hu;
    o.n = sh_dust_atoms(&o.u, o.a);

    obs_active(d, &o);
    step_atoms(d, &o);
    step_reverse(d, &o);
    step_value(d, &o);
    step_alias_path(d, &o, step_alias(d, &o));
    step_identity(d, &o);
    step_canonical(d, &o);
    return (int) (d->change_seq - seq0);
}
