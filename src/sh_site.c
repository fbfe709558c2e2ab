/*
 * sh_site.c -- a host's site by the Public Suffix List (sh_site.h).
 */
#include <stdio.h>
#include <string.h>

#include <libpsl.h>

#include "sh_err.h"
#include "sh_site.h"

/* One list per process, read-only once loaded: the lookups share it. */
static psl_ctx_t *site_psl;
static char       site_src[256];

int
sh_site_load(const char *file, char *err, size_t errlen)
{
    const char *dist;

    if (site_psl != NULL) {
        return 0;
    }
    /* the newest of the file, the system's list and libpsl's own copy:
     * a Debian update of publicsuffix applies at the next start */
    site_psl = psl_latest(file);
    if (site_psl == NULL) {
        dist = psl_dist_filename();
        sh_err_set(err, errlen, "no Public Suffix List (%s, %s, or "
                   "libpsl's built-in copy)", file ? file : "no file given",
                   dist != NULL && *dist ? dist : "no system list");
        return -1;
    }
    dist = psl_dist_filename();
    snprintf(site_src, sizeof(site_src), "%s", file ? file
             : dist && *dist ? dist : "libpsl's built-in list");
    return 0;
}

int
sh_site_loaded(void)
{
    return site_psl != NULL;
}

const char *
sh_site_source(void)
{
    return site_psl != NULL ? site_src : "";
}

void
sh_site_unload(void)
{
    psl_free(site_psl);
    site_psl = NULL;
    site_src[0] = '\0';
}

/* The host alone is its site: copy it out (it is already lowercase). */
static size_t
own(const char *h, size_t n, char *out, size_t size)
{
    if (n == 0 || n >= size) {
        return 0;
    }
    memcpy(out, h, n);
    out[n] = '\0';
    return n;
}

size_t
sh_site_of(const char *host, size_t len, char *out, size_t size)
{
    char        h[SH_SITE_MAX + 1];
    const char *p, *at, *dot, *rd;
    size_t      n, i, last;

    if (size > 0) {
        out[0] = '\0';
    }
    if (site_psl == NULL || host == NULL || size == 0) {
        return 0;
    }
    /* userinfo@ is not the host */
    at = len ? memchr(host, '@', len) : NULL;
    while (at != NULL) {
        len -= (size_t) (at + 1 - host);
        host = at + 1;
        at = len ? memchr(host, '@', len) : NULL;
    }
    if (len > 0 && host[0] == '[') {
        /* an IPv6 literal: its own site, without the port */
        p = memchr(host, ']', len);
        if (p == NULL) {
            return 0;
        }
        n = (size_t) (p + 1 - host);
        if (n > SH_SITE_MAX) {
            return 0;
        }
        for (i = 0; i < n; i++) {
            h[i] = (char) (host[i] >= 'A' && host[i] <= 'Z'
                           ? host[i] | 0x20 : host[i]);
        }
        return own(h, n, out, size);
    }
    p = memchr(host, ':', len);
    n = p ? (size_t) (p - host) : len;
    if (n > 0 && host[n - 1] == '.') {
        n--;                    /* the root's dot: example.com. */
    }
    if (n == 0 || n > SH_SITE_MAX) {
        return 0;
    }
    last = 0;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char) host[i];

        if (c == '\0' || c == '/' || c == ' ') {
            return 0;
        }
        h[i] = (char) (c >= 'A' && c <= 'Z' ? c | 0x20 : c);
        if (c == '.') {
            last = i + 1;
        }
    }
    h[n] = '\0';

    /* a single label, or a last label of digits (no top-level domain is
     * numeric: an IPv4 address), is nothing the list can place */
    dot = memchr(h, '.', n);
    if (dot == NULL || h[last] == '\0') {
        return own(h, n, out, size);
    }
    for (i = last; i < n && h[i] >= '0' && h[i] <= '9'; i++) {
        /* digits */
    }
    if (i == n) {
        return own(h, n, out, size);
    }
    rd = psl_registrable_domain(site_psl, h);
    if (rd == NULL) {
        return own(h, n, out, size);    /* a public suffix itself */
    }
    return own(rd, strlen(rd), out, size);
}

/*
 * A host's name for display in `size` bytes: whole when it fits; else cut
 * where it says least, keeping its site whole at the end (the registrable
 * domain owns the name: www.bigbank.example.com.cdn-...-node-7.evil.test
 * is evil.test's, and a cut that kept the front would show only
 * "www.bigbank.example.com.cdn-"), with the mark where bytes went.  The
 * bytes left besides the site and the mark go half to the front, half to
 * the labels before the site, which start at a label's first byte.  A
 * site longer than the room keeps its end; a host of no known site is cut
 * in its middle.
 */
size_t
sh_site_display(const char *host, size_t len, char *out, size_t size)
{
    char        site[SH_SITE_MAX + 1];
    const char *dot;
    size_t      room, need, head, tail, n;

    if (size == 0) {
        return 0;
    }
    if (len < size || size <= SH_SITE_CUT_MARK_LEN + 2) {
        n = len < size ? len : size - 1;
        memcpy(out, host, n);
        out[n] = '\0';
        return n;
    }

    room = size - 1 - SH_SITE_CUT_MARK_LEN;
    need = sh_site_of(host, len, site, sizeof(site));
    need += (need && host[len - 1] == '.');     /* the root's dot */

    if (need == 0) {
        tail = room / 2;                        /* no site: the middle */
        head = room - tail;

    } else if (need >= room) {
        head = 0;                               /* the site's end */
        tail = room;

    } else {
        head = (room - need + 1) / 2;
        tail = room - head;

        /* the tail from a label's first byte: the bytes before it go to
         * the head */
        dot = memchr(host + len - tail, '.', tail - need);
        if (dot != NULL) {
            n = (size_t) (dot + 1 - (host + len - tail));
            tail -= n;
            head += n;
        }
    }

    memcpy(out, host, head);
    memcpy(out + head, SH_SITE_CUT_MARK, SH_SITE_CUT_MARK_LEN);
    memcpy(out + head + SH_SITE_CUT_MARK_LEN, host + len - tail, tail);
    n = head + SH_SITE_CUT_MARK_LEN + tail;
    out[n] = '\0';

    return n;
}
