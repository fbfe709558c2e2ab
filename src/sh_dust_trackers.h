/*
 * sh_dust_trackers.h -- the parameter names the web uses for tracking
 * only (utm_*, fbclid, gclid..., and the platforms' session ids,
 * PHPSESSID, ;jsessionid=): a scope's test of drop_param (drop_path_param)
 * for one of them starts at the cap (sh_dust_activation.c); and the
 * scripts of a server that ignores case, for path_case.  Private to
 * src/sh_dust_*.c.
 */
#ifndef SH_DUST_TRACKERS_H
#define SH_DUST_TRACKERS_H

#include <stddef.h>
#include <stdint.h>

/* Whether a drop_param rule's argument (path: a drop_path_param rule's)
 * is one of them: its text (a name, or a family's "utm_*"), or when it
 * has none yet (len 0) its hash arg under the learner's secret, whose
 * digest keys a cache of the names' hashes (0: no cache). */
int sh_dust_tracker(const unsigned char *secret, uint64_t digest, int path,
                    const char *text, size_t len, uint64_t arg);

/* Whether a scope's text names a script of Microsoft's IIS (.asp, .aspx,
 * .ashx, .asmx: "store/Product.aspx"), whose paths and parameter names
 * are case-blind: a path_case rule's test there starts at the cap. */
int sh_dust_case_blind(const char *pat, size_t len);

#endif
