/*
 * sh_dust_activation.h -- candidates and the sequential test that turns
 * them on and off (sh_dust_activation.c), private to src/sh_dust_*.c.
 */
#ifndef SH_DUST_ACTIVATION_H
#define SH_DUST_ACTIVATION_H

#include "sh_dust_region.h"

#define PAT_ROOT        0x51c7e3a9d2b4f681ULL   /* the pattern "/" */
#define PAT_HOST        0x3b9f0d6ac2e75814ULL   /* a host's record of a
                                                   rule over its scopes */
#define PAT_POOL        0x6e21c8b05f9a3d47ULL   /* a rule's pairs of every
                                                   scope of a host, pooled */

/* One atomic rule that changes a URL. */
typedef struct {
    uint8_t      kind;
    uint8_t      family;        /* ATOM_PREFIX: its text is a prefix,
                                   "utm_" or "index.", named "utm_*" or
                                   "index.*"; ATOM_SHAPE: a component
                                   named by its shape, "(S(*))" */
    uint64_t     arg;
    const char  *text;          /* its argument as the URL spells it */
    uint32_t     textlen;
    sh_url_rw_t  rw;
} atom_t;

#define ATOM_PREFIX     1       /* a family by prefix: text, then '*' */
#define ATOM_SHAPE      2       /* a component's shape: "(S(*))" */
#define ATOM_VSHAPE     3       /* a value's shape: text "v=e60acf4",
                                   named "v=(hex)" */

/* A pattern as the operator writes it: "*", "/", "/doc/", a script's
 * "/store/Cart.aspx" (out: at least SH_DUST_PAT_TEXT + 3 bytes). */
void sh_dust_pattern_name(char *out, uint64_t pattern, const char *text,
                          size_t len);

/* An atom's argument as a rule names it: "sid", a family's "utm_*", a
 * shape's "(S(*))". */
static inline void
atom_text(char *dst, size_t cap, uint8_t *dlen, const atom_t *a)
{
    if (a->family == ATOM_SHAPE) {
        *dlen = (uint8_t) sh_url_shape(a->text, a->textlen, dst, cap);
        return;
    }
    if (a->family == ATOM_VSHAPE) {
        /* "name=value" named "name=(hex)": the name, then the shape */
        const char *eq = memchr(a->text, '=', a->textlen);
        const char *shape = eq ? sh_url_value_shape(eq + 1, (size_t) (a->text
                                     + a->textlen - eq - 1))
                               : NULL;
        char        name[SH_DUST_ARG_TEXT + 16];
        size_t      nl = eq ? (size_t) (eq - a->text) : 0;

        if (shape == NULL) {
            *dlen = 0;
            return;
        }
        nl = nl < SH_DUST_ARG_TEXT ? nl : SH_DUST_ARG_TEXT;
        memcpy(name, a->text, nl);
        name[nl++] = '=';
        memcpy(name + nl, shape, strlen(shape));
        copy_text(dst, cap, dlen, name, nl + strlen(shape));
        return;
    }
    copy_text(dst, cap, dlen, a->text, a->textlen);
    if (a->family == ATOM_PREFIX && *dlen < cap) {
        dst[(*dlen)++] = '*';
    }
}

/* A rule's scope: a host and its first path component (PAT_ROOT for a
 * root-level file, 0 for host-wide). */
typedef struct {
    uint64_t    host;
    uint64_t    pattern;
    const char *pat;            /* the pattern's component, for display */
    uint32_t    patlen;
    char        text[SH_DUST_PAT_TEXT]; /* a script's: "store/Cart.aspx" */
} scope_t;

static inline uint64_t
cand_key(uint64_t host, uint64_t pattern, uint8_t kind, uint64_t arg)
{
    return sh_url_step(sh_url_step(sh_url_step(host, pattern), kind), arg);
}

/* The host the pair table's entries of `host` are keyed by: the alias's
 * target once the two are joined (one site shares the table). */
static inline uint64_t
pair_host(sh_dust_t *d, uint64_t host)
{
    const dhost_t *h = sh_dust_host_find(d, host);

    return h != NULL && h->alias_to != 0 ? h->alias_to : host;
}

/* A rule's pair entry for image h, read only: under the key of the
 * host's alias target, else under the host's own (an entry left before
 * the two were joined); NULL when neither holds one. */
static inline devid_t *
pair_find(sh_dust_t *d, uint64_t host, uint64_t pattern, uint8_t kind,
          uint64_t arg, uint64_t h)
{
    uint64_t ph = pair_host(d, host);
    devid_t *e;
    int      found;

    e = evid_at(d, cand_key(ph, pattern, kind, arg) ^ KEY_PAIR, h, 0, &found);
    if (e == NULL && ph != host) {
        e = evid_at(d, cand_key(host, pattern, kind, arg) ^ KEY_PAIR, h, 0,
                    &found);
    }
    return e;
}

static inline int
manual(const dcand_t *c)
{
    return c->state == SH_DUST_PINNED || c->state == SH_DUST_FORBIDDEN;
}

static inline int
on(const dcand_t *c)
{
    return c->state == SH_DUST_ACTIVE || c->state == SH_DUST_PINNED;
}

/* The candidate of (host, pattern, kind, arg), or NULL; a new one (a
 * free way, else the least recently used one that is neither manual nor
 * on), or NULL when every way is manual. */
dcand_t *sh_dust_cand_find(sh_dust_t *d, uint64_t host, uint64_t pattern,
                           uint8_t kind, uint64_t arg);
dcand_t *sh_dust_cand_new(sh_dust_t *d, uint64_t host, uint64_t pattern,
                          uint8_t kind, uint64_t arg);

/* The Wilson lower bound of s successes in s + a trials at z. */
double sh_dust_wilson_lower(uint32_t s, uint32_t a, double z);

/* A candidate as sh_dust.h shows it; its state change into the ring. */
void sh_dust_rule_info_of(sh_dust_t *d, const dcand_t *c,
                          sh_dust_rule_info_t *r);
void sh_dust_record(sh_dust_t *d, const dcand_t *c, sh_dust_state_t from,
                    uint64_t now);

/* The host learns that c is on (its hint bit, its alias), or off. */
void sh_dust_mark_on(sh_dust_t *d, const dcand_t *c);
void sh_dust_mark_off(sh_dust_t *d, const dcand_t *c);

/* The candidate of the alias of hosts a and b, whichever way named. */
dcand_t *sh_dust_alias_cand(sh_dust_t *d, uint64_t a, uint64_t b);

/* Whether a candidate's own pairs pass the sequential test at the cap
 * (PRIOR_ALPHA_MAX: 24 clean pairs with the defaults) while it is not on:
 * enough to relate two paths for keys=path (sh_dust_same_path), never to
 * predict. */
int sh_dust_supported(const sh_dust_t *d, const dcand_t *c);

/* sh_dust_sample of a rule on: its sum against the full test's bound. */
double sh_dust_rule_sample(sh_dust_t *d, const dcand_t *c);

/* The learned state after new counts: 1 if it changed. */
int sh_dust_evaluate(sh_dust_t *d, dcand_t *c, uint64_t now);

/* One pair for (scope, atom); against a borrowed rule; for the rule on
 * for u learned in scope ls.  Each returns the state changes it made. */
int sh_dust_evidence(sh_dust_t *d, const scope_t *sc, const atom_t *a,
                     int same, uint64_t now);
int sh_dust_borrowed(sh_dust_t *d, const scope_t *sc, const atom_t *a,
                     uint64_t now);
int sh_dust_credit(sh_dust_t *d, const scope_t *sc, const atom_t *a,
                   const scope_t *ls, int same, uint64_t now);

#endif
