/*
 * sh_dust_rewrite.h -- a URL's atomic rules, its scope and its canonical
 * form (sh_dust_rewrite.c), private to src/sh_dust_*.c.
 */
#ifndef SH_DUST_REWRITE_H
#define SH_DUST_REWRITE_H

#include "sh_dust_activation.h"

#define ATOMS_MAX       (4 * SH_URL_PARAMS_MAX + 3 * SH_URL_SEGS_MAX + 7)
#define VPATH_VALUE_MAX 128     /* bytes of a value that can be a segment */

/* The atomic rules that change u, at most ATOMS_MAX, into out[]. */
unsigned sh_dust_atoms(const sh_url_t *u, atom_t *out);

/* A param_path rule's text, "name=/prefix/" ("title=/wiki/", at most
 * SH_DUST_ARG_TEXT bytes, at most SH_URL_PREFIX_MAX segments, "name=/"
 * for the root): 0 with the name's length, the prefix after its first
 * '/' ("wiki/") and its segments; -1 if it is not one. */
int sh_dust_vpath_text(const char *text, size_t len, size_t *namelen,
                       const char **prefix, size_t *prefixlen, unsigned *nseg);

/* u's scope: its host and first path component. */
void sh_dust_scope_of(const sh_url_t *u, scope_t *sc);

void sh_dust_merge_rw(sh_url_rw_t *to, const sh_url_rw_t *from);

/* The scope a path rewrite moves u into, or 0 when it stays. */
uint64_t sh_dust_moved_to(const sh_url_t *u, const sh_url_rw_t *rw);

/* The scope of c(u), u rewritten by rw: where it moved, else u's own. */
uint64_t sh_dust_form_scope(const sh_url_t *u, const scope_t *sc,
                            const sh_url_rw_t *rw);

/* The query and path-parameter rules on for u in the scope it is moved
 * into (pattern `to`), merged into rw; the new count of applied rules. */
unsigned sh_dust_moved_rules(sh_dust_t *d, dhost_t *h, dhost_t *other,
                             uint64_t to, const atom_t *a, unsigned na,
                             const uint8_t *skip, sh_url_rw_t *rw,
                             dcand_t **applied, int *which, unsigned n);

/* c(u): every rule on for u's scope applied, the rules in applied[], their
 * atoms in which[] (-1: the host alias); their count. */
unsigned sh_dust_canonical(sh_dust_t *d, const sh_url_t *u,
                           const scope_t *sc, dhost_t *h, const atom_t *a,
                           unsigned na, sh_url_rw_t *rw, dcand_t **applied,
                           int *which);

/* keys=path's form of u's path: the path rules its pairs support though
 * they are not on (sh_dust_supported), merged into rw. */
void sh_dust_supported_paths(sh_dust_t *d, const scope_t *sc, dhost_t *h,
                             const atom_t *a, unsigned na, sh_url_rw_t *rw);

#endif
