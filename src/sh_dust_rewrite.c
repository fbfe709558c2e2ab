/*
 * sh_dust_rewrite.c -- a URL seen as the learner sees it: the atomic
 * rules that change it (one per distinct parameter name and name family,
 * path component and path parameter name, sort, trailing slash, index
 * file, path case),
 * its scope (host and first path component), and c(u), the URL with every
 * rule on for its scope applied, an alias's and a moved scope's rules
 * included.
 */
#include <string.h>

#include "sh_dust_rewrite.h"

/* The ways a URL's parameters group into atoms. */
enum { BY_NAME, BY_FAMILY, BY_VALUE, BY_SHAPE };

#define VPATH_ATOMS     2       /* param_path atoms a URL makes at most */

static int script_of(const sh_url_t *u);

/*
 * param_path(NAME): a script's parameter whose value could be the last
 * segment of a path (/w/index.php?title=Main_Page, as /wiki/Main_Page):
 * a value of 1 to VPATH_VALUE_MAX bytes without '/', of a name the query
 * has once; the first VPATH_ATOMS of them.  Its rewrite names only the
 * parameter: the prefix is the rule's (sh_dust_canonical).
 */
static unsigned
vpath_atoms(const sh_url_t *u, atom_t *out, unsigned n)
{
    const sh_url_param_t *pa;
    unsigned              i, j, made = 0;

    if (script_of(u) < 0) {
        return n;
    }
    for (i = 0; i < u->nparams && made < VPATH_ATOMS; i++) {
        pa = &u->params[i];
        if (pa->value.len == 0 || pa->value.len > VPATH_VALUE_MAX
            || memchr(pa->value.p, '/', pa->value.len) != NULL)
        {
            continue;
        }
        for (j = 0; j < u->nparams; j++) {
            if (j != i && u->params[j].name_hash == pa->name_hash) {
                break;
            }
        }
        if (j < u->nparams) {
            continue;
        }
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = SH_DUST_PARAM_PATH;
        out[n].arg = pa->name_hash;
        out[n].text = pa->name.p;
        out[n].textlen = pa->name.len;
        out[n].rw.vpath = (uint8_t) (i + 1);
        out[n].rw.drop_params = 1u << i;
        n++;
        made++;
    }
    return n;
}

int
sh_dust_vpath_text(const char *text, size_t len, size_t *namelen,
                   const char **prefix, size_t *prefixlen, unsigned *nseg)
{
    const char *eq = len ? memchr(text, '=', len) : NULL;
    const char *p, *end = text + len;
    unsigned    k = 0;

    if (eq == NULL || eq == text || len > SH_DUST_ARG_TEXT
        || memchr(text, '&', len) != NULL || memchr(text, '#', len) != NULL
        || memchr(text, '?', len) != NULL || memchr(text, ';', len) != NULL
        || memchr(text, '/', (size_t) (eq - text)) != NULL
        || end - eq < 2 || eq[1] != '/' || end[-1] != '/')
    {
        return -1;
    }
    for (p = eq + 2; p < end; p++) {
        if (*p == '/') {
            if (p[-1] == '/' || ++k > SH_URL_PREFIX_MAX) {
                return -1;      /* an empty segment, or too many */
            }
        }
    }
    *namelen = (size_t) (eq - text);
    *prefix = eq + 2;                   /* "wiki/" */
    *prefixlen = (size_t) (end - eq - 2);
    *nseg = k;
    return 0;
}

/* The rewrite of param_path rule c for u's atom a: a's parameter's value
 * after the rule's prefix, as the path; 0, or -1 when the rule's text is
 * not one (a pin's, checked when pinned; an old image's). */
static int
vpath_rw(sh_dust_t *d, const sh_url_t *u, const atom_t *a, const dcand_t *c,
         sh_url_rw_t *rw)
{
    const sh_url_param_t *pa = &u->params[a->rw.vpath - 1];
    const char           *pre, *p, *seg;
    size_t                nl, pl;
    unsigned              k, i = 0;

    if (sh_dust_vpath_text(c->arg_text, c->arglen, &nl, &pre, &pl, &k) != 0) {
        return -1;
    }
    rw->vpath = a->rw.vpath;
    rw->drop_params |= a->rw.drop_params;
    rw->nprefix = (uint8_t) k;
    rw->prefix_text = pre;
    rw->prefix_len = (uint32_t) pl;
    for (seg = p = pre; p < pre + pl; p++) {
        if (*p == '/') {
            rw->prefix[i++] = sh_url_hash_bytes(d->secret, seg,
                                                (size_t) (p - seg));
            seg = p + 1;
        }
    }
    rw->vseg = sh_url_hash_bytes(d->secret, pa->value.p, pa->value.len);
    return 0;
}

/* A parameter's key in grouping `by`, 0 when it makes no atom that way. */
static uint64_t
param_key(const sh_url_param_t *pa, int by)
{
    switch (by) {
    case BY_NAME:
        return pa->name_hash;
    case BY_FAMILY:
        return pa->family;
    case BY_SHAPE:
        return pa->vshape;
    default:
        /* a value short enough to be a default rather than an id
         * (session ids and trackers are longer): format=html, page=1 */
        return (pa->value.len == 0 || pa->value.len > SH_DUST_VALUE_MAX)
               ? 0 : nonzero(pa->hash);
    }
}

/*
 * The query's atoms grouped `by`: drop_param(NAME) for every occurrence
 * of a name; drop_param(utm_*) for every name of a family, so that
 * trackers that always come together (utm_source, utm_medium,
 * utm_campaign) make a pair that no one of them alone makes (sh_url.c,
 * param_family); drop_value(NAME=VALUE) for one short value;
 * drop_value(v=(hex)) for every value of one generated shape
 * (sh_url_value_shape), a cache-buster where the same name also switches
 * a version (v=6.1).  Appended at out[n]; the new count.
 */
static unsigned
query_atoms(const sh_url_t *u, atom_t *out, unsigned n, int by)
{
    const sh_url_param_t *pa;
    unsigned              i, j;
    uint32_t              seen = 0, mask;
    uint64_t              key;

    for (i = 0; i < u->nparams; i++) {
        pa = &u->params[i];
        if ((seen >> i & 1) || (key = param_key(pa, by)) == 0) {
            continue;
        }
        mask = 0;
        for (j = i; j < u->nparams; j++) {
            if (param_key(&u->params[j], by) == key) {
                mask |= 1u << j;
            }
        }
        seen |= mask;
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = by >= BY_VALUE ? SH_DUST_DROP_VALUE
                                     : SH_DUST_DROP_PARAM;
        out[n].family = by == BY_FAMILY ? ATOM_PREFIX
                        : by == BY_SHAPE ? ATOM_VSHAPE : 0;
        out[n].arg = key;
        out[n].text = pa->name.p;
        out[n].textlen = by == BY_NAME ? pa->name.len
                         : by == BY_FAMILY ? pa->family_len
                         : (uint32_t) (pa->value.p + pa->value.len
                                       - pa->name.p);
        out[n].rw.drop_params = mask;
        n++;
    }
    return n;
}

/*
 * The path's components as atoms, drop_component(print): each distinct
 * component, or (by_shape) each distinct shape of a component that holds
 * a token, drop_component((S(*))): ASP.NET's cookieless session, a new
 * "(S(kx1bq2...))" on every page view, is one rule whatever its value
 * (sh_url_shape).  Appended at out[n]; the new count.
 */
static unsigned
component_atoms(const sh_url_t *u, atom_t *out, unsigned n, int by_shape)
{
    const sh_url_seg_t *sg;
    unsigned            i, j;
    uint32_t            seen = 0, mask;
    uint64_t            key;

    for (i = 0; u->nsegs >= 2 && i < u->nsegs; i++) {
        sg = &u->segs[i];
        key = by_shape ? sg->shape : sg->hash;
        if ((seen >> i & 1) || sg->seg.len == 0 || key == 0) {
            continue;
        }
        mask = 0;
        for (j = i; j < u->nsegs; j++) {
            if ((by_shape ? u->segs[j].shape : u->segs[j].hash) == key) {
                mask |= 1u << j;
            }
        }
        seen |= mask;
        memset(&out[n], 0, sizeof(out[n]));
        out[n].kind = SH_DUST_DROP_COMPONENT;
        out[n].family = by_shape ? ATOM_SHAPE : 0;
        out[n].arg = key;
        out[n].text = sg->seg.p;
        out[n].textlen = by_shape ? sg->base_len : sg->seg.len;
        out[n].rw.drop_segs = mask;
        n++;
    }
    return n;
}

unsigned
sh_dust_atoms(const sh_url_t *u, atom_t *out)
{
    unsigned    i, j, n;
    uint32_t    seen, mask;
    const char *pn, *eq, *semi;
    size_t      pl;

    n = query_atoms(u, out, 0, BY_NAME);
    n = query_atoms(u, out, n, BY_FAMILY);
    n = query_atoms(u, out, n, BY_VALUE);
    n = query_atoms(u, out, n, BY_SHAPE);
    n = vpath_atoms(u, out, n);
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
        const char         *dot = s->base_len > 1
                                  ? memchr(s->seg.p + 1, '.', s->base_len - 1)
                                  : NULL;

        /* a file name with an extension: index.html, default.aspx; named
         * without its path parameters (index.html;jsessionid=1F is
         * index.html: a session must not make each name its own rule) */
        if (dot != NULL && s->seg.p[0] != '.') {
            memset(&out[n], 0, sizeof(out[n]));
            out[n].kind = SH_DUST_INDEX_FILE;
            out[n].arg = s->base;
            out[n].text = s->seg.p;
            out[n].textlen = s->base_len;
            out[n].rw.index_file = 1;
            n++;
        }
        /* and as a family, index_file(index.*): index.php, index.html
         * and index.HTML of one site are one rule (sh_url.c) */
        if (dot != NULL && u->file_family != 0) {
            memset(&out[n], 0, sizeof(out[n]));
            out[n].kind = SH_DUST_INDEX_FILE;
            out[n].family = ATOM_PREFIX;
            out[n].arg = u->file_family;
            out[n].text = s->seg.p;
            out[n].textlen = u->file_family_len;
            out[n].rw.index_file = 1;
            n++;
        }
    }
    if (u->upper || u->upper_names) {
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
    n = component_atoms(u, out, n, 0);
    return component_atoms(u, out, n, 1);
}

/*
 * The extensions are the handlers' (PHP, ASP and ASP.NET, JSP, CGI,
 * ColdFusion, Struts), named by the servers that dispatch on them; a dot
 * in a document's name (email.parser, 2.7) is no script.
 */
int
sh_dust_is_script(const char *name, size_t len)
{
    static const char *ext[] = { "php", "php3", "php4", "php5", "phtml",
                                 "asp", "aspx", "ashx", "jsp", "jspx",
                                 "cgi", "pl", "cfm", "do", "action" };
    const char *dot = len > 1 ? last_byte(name + 1, '.', len - 1) : NULL;
    size_t      n, k;
    unsigned    i;

    if (dot == NULL) {
        return 0;
    }
    n = (size_t) (name + len - dot - 1);
    for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        if (strlen(ext[i]) == n) {
            for (k = 0; k < n && (dot[1 + k] | 0x20) == ext[i][k]; k++) {
                /* ASCII case folded */
            }
            if (k == n) {
                return 1;
            }
        }
    }
    return 0;
}

/*
 * The script a URL's query is given to: its last segment, when the URL
 * has a query and the segment names a server-side handler
 * (viewtopic.php?t=3, Category.aspx?CategoryID=1): its index, or -1.  A
 * parameter means what its script makes of it: CategoryID is where a
 * product was reached from on Product.aspx and the listing itself on
 * Category.aspx, beside it in one section.
 */
static int
script_of(const sh_url_t *u)
{
    const sh_url_seg_t *s;

    if (u->nparams == 0 || u->nsegs == 0) {
        return -1;
    }
    s = &u->segs[u->nsegs - 1];
    return sh_dust_is_script(s->seg.p, s->base_len) ? (int) (u->nsegs - 1)
                                                    : -1;
}

/* A section's pattern refined by u's script, if u has one: the pattern
 * of its query's scope.  The script's name is compared lowercased (IIS
 * and ASP.NET ignore case). */
static uint64_t
script_pattern(const sh_url_t *u, uint64_t pattern)
{
    int j = script_of(u);

    return j < 0 ? pattern
                 : nonzero(sh_url_step(pattern, u->segs[j].base_lower));
}

void
sh_dust_scope_of(const sh_url_t *u, scope_t *sc)
{
    unsigned i = 0;
    int      j;
    size_t   n = 0, k;

    /* a component that holds a token (a session: /(S(kx1bq2...))/shop/)
     * names no section: the scope is the first one after it */
    while (i + 1 < u->nsegs && u->segs[i].shape != 0) {
        i++;
    }
    sc->host = u->host_hash;
    if (i + 1 < u->nsegs) {
        sc->pattern = nonzero(u->segs[i].hash);
        sc->pat = u->segs[i].seg.p;
        sc->patlen = u->segs[i].seg.len;
    } else {
        sc->pattern = PAT_ROOT;
        sc->pat = "";
        sc->patlen = 0;
    }
    if ((j = script_of(u)) < 0) {
        return;
    }
    /* "store/Category.aspx", "/index.php" at the root */
    sc->pattern = script_pattern(u, sc->pattern);
    k = sc->patlen < sizeof(sc->text) ? sc->patlen : sizeof(sc->text);
    memcpy(sc->text, sc->pat, k);
    n = k;
    if (n < sizeof(sc->text)) {
        sc->text[n++] = '/';
    }
    k = u->segs[j].base_len;
    k = k < sizeof(sc->text) - n ? k : sizeof(sc->text) - n;
    memcpy(sc->text + n, u->segs[j].seg.p, k);
    sc->pat = sc->text;
    sc->patlen = (uint32_t) (n + k);
}

void
sh_dust_merge_rw(sh_url_rw_t *to, const sh_url_rw_t *from)
{
    unsigned i;

    if (from->vpath) {
        to->vpath = from->vpath;
        to->nprefix = from->nprefix;
        to->prefix_text = from->prefix_text;
        to->prefix_len = from->prefix_len;
        for (i = 0; i < from->nprefix; i++) {
            to->prefix[i] = from->prefix[i];
        }
        to->vseg = from->vseg;
    }
    to->drop_params |= from->drop_params;
    to->drop_segs |= from->drop_segs;
    to->drop_pparams |= from->drop_pparams;
    to->sort |= from->sort;
    to->index_file |= from->index_file;
    to->trailing_slash |= from->trailing_slash;
    to->lower |= from->lower;
}

/* h's host-wide manual rule of atom a (pinned or forbidden), or NULL. */
static dcand_t *
wide_rule(sh_dust_t *d, const dhost_t *h, const atom_t *a)
{
    return h->wild ? sh_dust_cand_find(d, h->hash, 0, a->kind, a->arg) : NULL;
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
    w = wide_rule(d, h, a);
    if (w != NULL && w->state == SH_DUST_FORBIDDEN) {
        return NULL;
    }
    c = (w != NULL && w->state == SH_DUST_PINNED)
        ? w : sh_dust_cand_find(d, h->hash, pattern, a->kind, a->arg);
    return (c != NULL && on(c)) ? c : NULL;
}

/* Whether h refuses the other host's rule of atom a for its URLs in
 * `pattern`: it forbids it there or host-wide (a forbid sets no hint bit:
 * it is looked up), or has evidence of its own against it there and not
 * enough for it (retired, or a pair against counted: sh_dust_borrowed(), or
 * another node's record of that, which an import leaves a candidate). */
static int
refuses(sh_dust_t *d, const dhost_t *h, uint64_t pattern, const atom_t *a)
{
    dcand_t *c;

    if (h->pins != 0) {
        c = sh_dust_cand_find(d, h->hash, 0, a->kind, a->arg);
        if (c != NULL && c->state == SH_DUST_FORBIDDEN) {
            return 1;
        }
    }
    c = sh_dust_cand_find(d, h->hash, pattern, a->kind, a->arg);
    return c != NULL && (c->state == SH_DUST_FORBIDDEN
                         || c->state == SH_DUST_RETIRED || c->against > 0);
}

/*
 * The scope a path rewrite moves u into, when it changes u's first
 * component (drop_component(amp) of /amp/docs/x, path_case of
 * /Docs/X.HTML): its pattern, or 0 when u stays in its own scope.
 */
uint64_t
sh_dust_moved_to(const sh_url_t *u, const sh_url_rw_t *rw)
{
    unsigned i;

    if (rw->vpath) {
        /* the prefix's first segment, or the root for "/T" */
        return rw->nprefix ? nonzero(rw->prefix[0]) : PAT_ROOT;
    }

    if (rw->lower && u->nsegs >= 2 && u->segs[0].lower != u->segs[0].hash) {
        return script_pattern(u, nonzero(u->segs[0].lower));
    }
    if (!(rw->drop_segs & 1)) {
        return 0;
    }
    for (i = 1; i + 1 < u->nsegs; i++) {
        if (!(rw->drop_segs >> i & 1) && u->segs[i].shape == 0) {
            return script_pattern(u, nonzero(rw->lower ? u->segs[i].lower
                                                        : u->segs[i].hash));
        }
    }
    return script_pattern(u, PAT_ROOT);
}

uint64_t
sh_dust_form_scope(const sh_url_t *u, const scope_t *sc,
                   const sh_url_rw_t *rw)
{
    uint64_t to = sh_dust_moved_to(u, rw);

    return to != 0 ? to : sc->pattern;
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
unsigned
sh_dust_moved_rules(sh_dust_t *d, dhost_t *h, dhost_t *other, uint64_t to,
                    const atom_t *a, unsigned na, const uint8_t *skip,
                    sh_url_rw_t *rw, dcand_t **applied, int *which, unsigned n)
{
    dcand_t *c;
    unsigned i;

    for (i = 0; i < na; i++) {
        if ((skip != NULL && skip[i])
            || (a[i].kind != SH_DUST_DROP_PARAM
                && a[i].kind != SH_DUST_SORT_PARAMS
                && a[i].kind != SH_DUST_DROP_PATH_PARAM
                && a[i].kind != SH_DUST_DROP_VALUE))
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
            sh_dust_merge_rw(rw, &a[i].rw);
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
unsigned
sh_dust_canonical(sh_dust_t *d, const sh_url_t *u, const scope_t *sc,
                  dhost_t *h, const atom_t *a, unsigned na, sh_url_rw_t *rw,
                  dcand_t **applied, int *which)
{
    dcand_t *c;
    dhost_t *own = h, *other = NULL;
    uint64_t to;
    unsigned i, n = 0;

    memset(rw, 0, sizeof(*rw));
    if (h->alias_to != 0) {
        c = sh_dust_alias_cand(d, sc->host, h->alias_to);
        if (c != NULL && on(c)) {
            rw->host = h->alias_to;
            which[n] = -1;
            applied[n++] = c;
            other = sh_dust_host_find(d, h->alias_to);
        }
    } else if (h->alias_from != 0) {
        other = sh_dust_host_find(d, h->alias_from);
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
        if (c != NULL && a[i].kind == SH_DUST_PARAM_PATH) {
            if (rw->vpath || vpath_rw(d, u, &a[i], c, rw) != 0) {
                continue;       /* one value is the path, the first */
            }
            which[n] = (int) i;
            applied[n++] = c;
        } else if (c != NULL) {
            sh_dust_merge_rw(rw, &a[i].rw);
            which[n] = (int) i;
            applied[n++] = c;
        }
    }
    /* a path rule that moved u into another scope: that scope's query
     * rules too */
    if (n > 0 && (to = sh_dust_moved_to(u, rw)) != 0 && to != sc->pattern) {
        uint8_t done[ATOMS_MAX];

        memset(done, 0, na);
        for (i = 0; i < n; i++) {
            if (which[i] >= 0) {
                done[which[i]] = 1;
            }
        }
        n = sh_dust_moved_rules(d, own, other, to, a, na, done, rw, applied,
                                which, n);
    }
    return n;
}

/* The path rules: what keys=path compares. */
static int
path_kind(uint8_t kind)
{
    return kind == SH_DUST_TRAILING_SLASH || kind == SH_DUST_INDEX_FILE
           || kind == SH_DUST_PATH_CASE || kind == SH_DUST_DROP_COMPONENT
           || kind == SH_DUST_DROP_PATH_PARAM;
}

/* h's candidate of atom a in `pattern` when its own pairs support it
 * (sh_dust_supported) and h does not forbid it host-wide, or NULL. */
static dcand_t *
rule_supported(sh_dust_t *d, const dhost_t *h, uint64_t pattern,
               const atom_t *a)
{
    dcand_t *c, *w;

    if (h == NULL) {
        return NULL;
    }
    w = wide_rule(d, h, a);
    if (w != NULL && w->state == SH_DUST_FORBIDDEN) {
        return NULL;
    }
    c = sh_dust_cand_find(d, h->hash, pattern, a->kind, a->arg);
    return c != NULL && sh_dust_supported(d, c) ? c : NULL;
}

/*
 * keys=path's form of u's path, beyond c(u)'s: the path rules that u's
 * scope (on its host, or its alias's unless its host refuses them) has
 * not turned on but whose own pairs pass the sequential test at the cap,
 * merged into rw.  A prediction is made by rules on; keys=path then asks
 * only whether its original's path names the same page, and there a path
 * relation the site's pairs support (24 clean ones with the defaults,
 * where turning the rule on in a first scope takes 115) beside the
 * fingerprint that already made the two one document is evidence enough.
 */
void
sh_dust_supported_paths(sh_dust_t *d, const scope_t *sc, dhost_t *h,
                        const atom_t *a, unsigned na, sh_url_rw_t *rw)
{
    dhost_t *other;
    unsigned i;

    other = host_partner(h) != 0 ? sh_dust_host_find(d, host_partner(h))
                                 : NULL;
    for (i = 0; i < na; i++) {
        if (path_kind(a[i].kind)
            && (rule_supported(d, h, sc->pattern, &a[i]) != NULL
                || (rule_supported(d, other, sc->pattern, &a[i]) != NULL
                    && !refuses(d, h, sc->pattern, &a[i]))))
        {
            sh_dust_merge_rw(rw, &a[i].rw);
        }
    }
}

