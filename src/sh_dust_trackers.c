/*
 * sh_dust_trackers.c -- the names the web uses for tracking only: the
 * campaign and click identifiers that analytics and advertising platforms
 * add to links (utm_source, fbclid, gclid, ...), and the session ids of
 * server platforms (PHPSESSID, ;jsessionid=).  Their value names a
 * visit, never a page, on every site that uses them, so the learner
 * starts a scope's test of drop_param(NAME) (drop_path_param for a path
 * parameter) for one of them at the cap
 * (sh_dust_activation.c, scope_need): 24 clean pairs with the defaults,
 * as for a rule the host has already shown good elsewhere, instead of 115.
 * The scope's own pairs against still count in full and hold the rule off
 * where a site gives such a name another meaning.
 *
 * The names are the ones documented by their platforms (Google Analytics
 * and Ads, Meta, Microsoft Advertising, Yandex, TikTok, X, LinkedIn,
 * Mailchimp, HubSpot, Matomo, Marketo...) and stripped by browsers'
 * query-parameter filters, spelled as they are (a parameter's name is
 * case-sensitive).  Names such as ref or source, which also select
 * content on some sites (a branch, a data source), are not here.
 *
 * The same holds for the session ids that server platforms write into a
 * URL by default when a client takes no cookie, as a crawler does: PHP's
 * PHPSESSID, the Java Servlet specification's jsessionid (a path
 * parameter, ";jsessionid=", and as Tomcat and Jetty also accept it, a
 * query parameter), ColdFusion's CFID and CFTOKEN, osCommerce's osCsid,
 * Zen Cart's zenid.  A site's own short names for its session (sid, s)
 * also name other things elsewhere and are learned as any parameter.
 *
 * The AMP view of a page (Google's Accelerated Mobile Pages: /amp/X, or
 * ?amp, ?amp=1) is that page in a lighter markup, on every site that
 * has one: drop_component(amp) and drop_param(amp) start at the cap.
 *
 * A directory's index file (DIR/index.html, DIR/index.php for DIR/) is
 * the directory's page wherever a server maps one, as Apache and nginx do
 * by default: index_file(index.*) starts at the cap.  IIS's default.*
 * does not: elsewhere default.html is a page of its own.
 * A site's usual second names, www.X and m.X for X (its web and mobile
 * hosts), are one site wherever both serve pages: host_alias between
 * them starts at the cap too.
 * And one platform's paths: Microsoft's IIS answers a path in any case
 * (its file system ignores it) and ASP.NET reads parameter names in any
 * case, so path_case in the scope of an .asp, .aspx, .ashx or .asmx
 * script starts at the cap too.
 */
#include <stdio.h>
#include <string.h>

#include "sh_dust_trackers.h"
#include "sh_url.h"

/* families: a prefix and anything after it (utm_source, utm_medium...),
 * as sh_url.c groups them (letters or digits, then '_') */
static const char *const families[] = {
    "utm_", "mc_", "pk_", "mtm_", "hsa_"
};

static const char *const names[] = {
    "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid",
    "yclid", "ysclid", "twclid", "ttclid", "igshid", "li_fat_id", "mkt_tok",
    "_ga", "_gl", "_hsenc", "_hsmi", "vero_id", "oly_anon_id", "oly_enc_id",
    "rb_clickid", "s_cid", "wickedid", "epik",
    /* the platforms' session ids */
    "PHPSESSID", "jsessionid", "JSESSIONID", "CFID", "CFTOKEN", "osCsid",
    "zenid",
    /* the AMP view of a page: ?amp, ?amp=1 */
    "amp"
};

/* The hash a parameter NAME (or a family's member, a path parameter, a
 * path component) has under secret: sh_url's own, of a URL that holds
 * it. */
enum { KEY_NAME, KEY_FAMILY, KEY_PATH, KEY_COMPONENT, KEY_INDEX };

/* in the path: a path parameter, /a/B.html;jsessionid=1F; a component,
 * the AMP view /amp/news/a; the family of directory index files that
 * Apache's DirectoryIndex and nginx's index default to (index.html,
 * index.php).  Not IIS's default.*: elsewhere default.html is a page of
 * its own (Django's documentation has topics/auth/default.html) */
static const struct {
    const char *name;
    int         how;
} path_forms[] = {
    { "jsessionid", KEY_PATH },
    { "amp", KEY_COMPONENT },
    { "index.*", KEY_INDEX }
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t
key_of(const unsigned char *secret, const char *name, int how)
{
    char     url[64];
    int      n;
    sh_url_t u;

    n = how == KEY_PATH
        ? snprintf(url, sizeof(url), "http://t.invalid/a;%s=1", name)
        : how == KEY_INDEX      /* "index.*": the file index.x */
        ? snprintf(url, sizeof(url), "http://t.invalid/d/%.*sx",
                   (int) strlen(name) - 1, name)
        : how == KEY_COMPONENT
        ? snprintf(url, sizeof(url), "http://t.invalid/%s/a", name)
        : snprintf(url, sizeof(url), "http://t.invalid/?%s%s=1", name,
                   how == KEY_FAMILY ? "x" : "");
    if (n < 0 || (size_t) n >= sizeof(url)
        || sh_url_parse(&u, url, (size_t) n) != 0)
    {
        return 0;
    }
    sh_url_hash_parts(&u, secret);
    if (how == KEY_PATH) {
        return u.nsegs == 1 ? u.segs[0].pname : 0;
    }
    if (how == KEY_COMPONENT) {
        return u.nsegs == 2 ? u.segs[0].hash : 0;
    }
    if (how == KEY_INDEX) {
        return u.file_family;
    }
    if (u.nparams != 1) {
        return 0;
    }
    return how == KEY_FAMILY ? u.params[0].family : u.params[0].name_hash;
}

/*
 * The keys of every name and family under one secret, made once a process
 * (a worker's zones share their learner's secret; another secret makes
 * them again): a candidate without text is asked at each of its pairs.
 */
#define NKEYS (COUNT(families) + COUNT(names))
static uint64_t keys[NKEYS + COUNT(path_forms)];
static uint64_t keys_digest;

/* where: SH_DUST_KNOWN_PATH_PARAM, _COMPONENT or _INDEX; the path forms'
 * own kind of key */
static int
path_how(int where)
{
    return where == SH_DUST_KNOWN_PATH_PARAM ? KEY_PATH
           : where == SH_DUST_KNOWN_INDEX ? KEY_INDEX : KEY_COMPONENT;
}

static int
known_key(const unsigned char *secret, uint64_t digest, int where,
          uint64_t arg)
{
    size_t i;

    if (keys_digest != digest || digest == 0) {
        for (i = 0; i < COUNT(families); i++) {
            keys[i] = key_of(secret, families[i], KEY_FAMILY);
        }
        for (i = 0; i < COUNT(names); i++) {
            keys[COUNT(families) + i] = key_of(secret, names[i], KEY_NAME);
        }
        for (i = 0; i < COUNT(path_forms); i++) {
            keys[NKEYS + i] = key_of(secret, path_forms[i].name,
                                     path_forms[i].how);
        }
        keys_digest = digest;
    }
    if (arg == 0) {
        return 0;
    }
    if (where == SH_DUST_KNOWN_PARAM) {
        for (i = 0; i < NKEYS; i++) {
            if (keys[i] == arg) {
                return 1;
            }
        }
        return 0;
    }
    for (i = 0; i < COUNT(path_forms); i++) {
        if (path_forms[i].how == path_how(where) && keys[NKEYS + i] == arg) {
            return 1;
        }
    }
    return 0;
}

int
sh_dust_tracker(const unsigned char *secret, uint64_t digest, int where,
                const char *text, size_t len, uint64_t arg)
{
    size_t i, n;

    if (len == 0) {
        /* a candidate made from a reverse pair has no text yet: its
         * argument's hash tells */
        return known_key(secret, digest, where, arg);
    }
    if (where != SH_DUST_KNOWN_PARAM) {
        for (i = 0; i < COUNT(path_forms); i++) {
            if (path_forms[i].how == path_how(where)
                && len == strlen(path_forms[i].name)
                && memcmp(text, path_forms[i].name, len) == 0)
            {
                return 1;
            }
        }
        return 0;
    }
    if (text[len - 1] == '*') {                 /* a family's rule */
        len--;
    }
    for (i = 0; i < COUNT(families); i++) {
        n = strlen(families[i]);
        if (len >= n && strncmp(text, families[i], n) == 0) {
            return 1;
        }
    }
    for (i = 0; i < COUNT(names); i++) {
        if (len == strlen(names[i]) && memcmp(text, names[i], len) == 0) {
            return 1;
        }
    }
    return 0;
}

int
sh_dust_case_blind(const char *pat, size_t len)
{
    static const char *const ext[] = { ".asp", ".aspx", ".ashx", ".asmx" };
    size_t                   i, n, k;

    for (i = 0; i < COUNT(ext); i++) {
        n = strlen(ext[i]);
        if (len <= n) {
            continue;
        }
        for (k = 0; k < n && (pat[len - n + k] | 0x20) == ext[i][k]; k++) {
            /* ASCII case folded */
        }
        if (k == n) {
            return 1;
        }
    }
    return 0;
}

/* Whether name a is name b behind "www." or "m.". */
static int
behind(const char *a, size_t alen, const char *b, size_t blen)
{
    static const char *const pre[] = { "www.", "m." };
    size_t                   i, n;

    for (i = 0; i < COUNT(pre); i++) {
        n = strlen(pre[i]);
        if (alen == blen + n && memcmp(a, pre[i], n) == 0
            && memcmp(a + n, b, blen) == 0)
        {
            return 1;
        }
    }
    return 0;
}

int
sh_dust_alias_names(const char *a, size_t alen, const char *b, size_t blen)
{
    return behind(a, alen, b, blen) || behind(b, blen, a, alen);
}
