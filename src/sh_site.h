/*
 * sh_site.h -- the site a host belongs to: its registrable domain by the
 * Public Suffix List (libpsl), what the DUST learner requires of two hosts
 * before it joins them by a learned host alias (security issue 31: a host
 * that copied another site's pages must not make the proxy drop that
 * site's distinct pages).
 *
 * www.example.com, m.example.com and example.com are one site
 * (example.com); a.github.io and b.github.io are two (github.io is a
 * public suffix).  A name under a suffix the list does not know (.test,
 * .internal) falls under its '*' rule: the last two labels are the site,
 * so www.site.test is site.test.  What the list cannot place is its own
 * site, the host alone: an IP address (10.0.0.1 and 127.0.0.1 would
 * otherwise both be "0.1"), an IPv6 literal, a single label (localhost),
 * a public suffix itself.  The port, one trailing dot and ASCII case do
 * not count.
 *
 * The list is loaded once per process, before any lookup (in nginx at
 * configuration time, in the master: the workers fork with it), by
 * sh_site_load: psl_latest, the newer of the system's file
 * (/usr/share/publicsuffix, which Debian's publicsuffix package keeps
 * current) and the copy built into libpsl.  Without a list every host's
 * site is unknown (0 from sh_site_of): no two hosts are one site, so no
 * host alias is learned at all; an operator's simhash_dust_rule still
 * joins hosts.  Lookups are pure functions of the host and the list:
 * no allocation, no lock, safe from any thread once loaded.
 */
#ifndef SH_SITE_H
#define SH_SITE_H

#include <stddef.h>

#define SH_SITE_MAX     255     /* bytes of a site's name */

/*
 * Load the list (`file`: a PSL file to prefer, NULL for the system's);
 * a second call keeps the list already loaded.  0, or -1 and a message:
 * no list, every site unknown.
 */
int sh_site_load(const char *file, char *err, size_t errlen);

/* Whether a list is loaded, and where it came from ("" if none). */
int sh_site_loaded(void);
const char *sh_site_source(void);

/* Forget the list (tests; a process that wants its memory back). */
void sh_site_unload(void);

/*
 * The site of `host` (an authority as a URL spells it: host[:port], an
 * IPv6 literal in brackets), lowercase, in out (NUL-terminated, at most
 * SH_SITE_MAX bytes): its length, or 0 when unknown (no list loaded, an
 * empty or malformed host, or a site longer than size - 1).
 */
size_t sh_site_of(const char *host, size_t len, char *out, size_t size);

/* what marks the bytes a display cut: U+2026, in UTF-8 */
#define SH_SITE_CUT_MARK        "\xe2\x80\xa6"
#define SH_SITE_CUT_MARK_LEN    3

/*
 * `host` for display in out (size bytes, NUL-terminated): whole when it
 * fits, else with bytes cut out of its middle and SH_SITE_CUT_MARK in
 * their place, its site (registrable domain) kept whole at the end
 * ("www.bigbank.example.com.cdn-edge…node-7.evil.test"); a site longer
 * than the room keeps its end.  The bytes as given (case too).  Its
 * length.
 */
size_t sh_site_display(const char *host, size_t len, char *out, size_t size);

#endif
