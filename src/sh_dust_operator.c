/*
 * sh_dust_operator.c -- what an operator sees and sets: rules pinned or
 * forbidden by hand, a rule looked up by its text, the hosts and rules
 * listed, the change ring read, the counters, the names of kinds and
 * states.
 */
#include <string.h>

#include "sh_dust_rewrite.h"

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
    case SH_DUST_DROP_VALUE:        return "drop_value";
    case SH_DUST_PARAM_PATH:        return "param_path";
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
    const char *slash, *script;
    size_t      n;

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
    if (n > SH_URL_LEN_MAX) {
        return -1;
    }
    *comp = p;
    *len = n;
    slash = last_byte(p, '/', n);
    script = slash ? slash + 1 : p;
    if (p[strlen(p) - 1] != '/'
        && sh_dust_is_script(script, n - (size_t) (script - p)))
    {
        /* a script's scope, "/store/Cart.aspx", "/index.php": its
         * section's pattern and its name, lowercased */
        if (slash != NULL && memchr(p, '/', (size_t) (slash - p)) != NULL) {
            return -1;
        }
        *hash = slash == NULL ? PAT_ROOT
                : nonzero(sh_url_hash_bytes(d->secret, p,
                                            (size_t) (slash - p)));
        *hash = nonzero(sh_url_step(*hash, sh_url_hash_lower(d->secret,
                            script, n - (size_t) (script - p))));
        return 0;
    }
    if (memchr(p, '/', n) != NULL) {
        return -1;
    }
    *hash = nonzero(sh_url_hash_bytes(d->secret, p, n));
    return 0;
}

/* "name=/prefix/" (param_path): the name's hash, as drop_param's. */
static int
param_path_arg(const sh_dust_t *d, const char *arg, size_t n, uint64_t *hash)
{
    const char *pre;
    size_t      nl, pl;
    unsigned    k;

    if (sh_dust_vpath_text(arg, n, &nl, &pre, &pl, &k) != 0) {
        return -1;
    }
    *hash = sh_url_hash_decoded(d->secret, arg, nl);
    return 0;
}

/* "name=value": the hash a URL's parameter of that name and value gets
 * (sh_url_hash_parts), by parsing it as one; "v=(hex)" names a shape of
 * values instead (sh_url_value_shape). */
static int
value_arg(const sh_dust_t *d, const char *arg, size_t n, uint64_t *hash)
{
    static const char  pre[] = "http://x/?";
    char               buf[sizeof(pre) + SH_URL_LEN_MAX];
    static const char *shapes[] = { "(hex)", "(token)", "(number)" };
    const char        *eq = n ? memchr(arg, '=', n) : NULL;
    sh_url_t           u;
    size_t             i;

    if (eq == NULL || eq == arg || (size_t) (arg + n - eq - 1) == 0
        || (size_t) (arg + n - eq - 1) > SH_DUST_VALUE_MAX
        || memchr(arg, '&', n) != NULL || memchr(arg, '#', n) != NULL
        || memchr(eq + 1, '=', arg + n - eq - 1) != NULL
        || n > SH_URL_LEN_MAX - sizeof(pre))
    {
        return -1;
    }
    memcpy(buf, pre, sizeof(pre) - 1);
    memcpy(buf + sizeof(pre) - 1, arg, n);
    if (sh_url_parse(&u, buf, sizeof(pre) - 1 + n) != 0 || u.nparams != 1) {
        return -1;
    }
    sh_url_hash_parts(&u, d->secret);
    *hash = nonzero(u.params[0].hash);
    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        if (u.params[0].value.len == strlen(shapes[i])
            && memcmp(u.params[0].value.p, shapes[i],
                      u.params[0].value.len) == 0)
        {
            /* v=(hex): every value of that shape (sh_url_value_shape) */
            *hash = sh_url_vshape_hash(d->secret, u.params[0].name_hash,
                                       shapes[i]);
        }
    }
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
    case SH_DUST_DROP_VALUE:
        return value_arg(d, arg, n, hash);
    case SH_DUST_PARAM_PATH:
        return param_path_arg(d, arg, n, hash);
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
    c = sh_dust_cand_find(d, hh, ph, (uint8_t) kind, ah);
    if (mode == SH_DUST_PIN_CLEAR) {
        if (c == NULL || !manual(c)) {
            return 0;
        }
        h = sh_dust_host_find(d, hh);
        if (h != NULL) {
            h->pins--;
            h->wild -= ph == 0;
        }
        from = c->state;
        c->state = SH_DUST_CANDIDATE;
        sh_dust_mark_off(d, c);
        if (from == SH_DUST_PINNED) {
            sh_dust_host_stale(d, hh, ph,
                               kind == SH_DUST_HOST_ALIAS ? ah : 0);
        }
        if (!sh_dust_evaluate(d, c, now)) {
            sh_dust_record(d, c, (sh_dust_state_t) from, now);
        }
        return 0;
    }
    h = sh_dust_host_get(d, hh, host, hlen, 1);
    if (h == NULL) {
        return -1;
    }
    if (c == NULL) {
        c = sh_dust_cand_new(d, hh, ph, (uint8_t) kind, ah);
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
        sh_dust_mark_on(d, c);
    } else {
        sh_dust_mark_off(d, c);
        if (from == SH_DUST_ACTIVE || from == SH_DUST_PINNED) {
            sh_dust_host_stale(d, hh, ph,
                               kind == SH_DUST_HOST_ALIAS ? ah : 0);
        }
    }
    if (from != c->state) {
        sh_dust_record(d, c, (sh_dust_state_t) from, now);
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
    c = sh_dust_cand_find(d, sh_url_hash_lower(d->secret, host, strlen(host)),
                          ph, (uint8_t) kind, ah);
    if (c == NULL) {
        return -1;
    }
    sh_dust_rule_info_of(d, c, out);
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
        sh_dust_rule_info_of(d, &c[i], &r);
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
