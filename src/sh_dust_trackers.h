/*
 * sh_dust_trackers.h -- the forms the web uses the same way everywhere:
 * tracking parameters (utm_*, fbclid, gclid...), the platforms' session
 * ids (PHPSESSID, ;jsessionid=), the AMP view, a directory's index file,
 * a site's www. and m. hosts.
 * A scope's test of drop_param (drop_path_param, drop_component,
 * index_file) for one of them starts at the cap (sh_dust_activation.c);
 * and the scripts of a server that ignores case, for path_case.  Private
 * to src/sh_dust_*.c.
 */
#ifndef SH_DUST_TRACKERS_H
#define SH_DUST_TRACKERS_H

#include <stddef.h>
#include <stdint.h>

/* Whether a rule's argument is one of them: drop_param's (where
 * SH_DUST_KNOWN_PARAM), drop_path_param's (_PATH_PARAM),
 * drop_component's (_COMPONENT) or index_file's family (_INDEX); by its
 * text (a name, or a family's "utm_*", "index.*"), or when it has none
 * yet (len 0) by its hash arg under the learner's secret, whose digest
 * keys a cache of the names' hashes (0: no cache). */
enum {
    SH_DUST_KNOWN_PARAM = 0,
    SH_DUST_KNOWN_PATH_PARAM,
    SH_DUST_KNOWN_COMPONENT,
    SH_DUST_KNOWN_INDEX         /* index_file's family: "index.*" */
};
int sh_dust_tracker(const unsigned char *secret, uint64_t digest, int where,
                    const char *text, size_t len, uint64_t arg);

/* Whether two host names are one site's usual two names: one is the
 * other behind "www." or "m." (a host_alias's test starts at the cap). */
int sh_dust_alias_names(const char *a, size_t alen, const char *b,
                        size_t blen);

/* Whether a scope's text names a script of Microsoft's IIS (.asp, .aspx,
 * .ashx, .asmx: "store/Product.aspx"), whose paths and parameter names
 * are case-blind: a path_case rule's test there starts at the cap. */
int sh_dust_case_blind(const char *pat, size_t len);

#endif
