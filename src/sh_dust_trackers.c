/*
 * sh_dust_trackers.c -- the names the web uses for tracking only: the
 * campaign and click identifiers that analytics and advertising platforms
 * add to links (utm_source, fbclid, gclid, ...).  Their value names a
 * visit, never a page, on every site that uses them, so the learner
 * starts a scope's test of drop_param(NAME) for one of them at the cap
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
    "rb_clickid", "s_cid", "wickedid", "epik"
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The hash a parameter NAME (or a family's member) has under secret:
 * sh_url's own, of a URL that holds it. */
static uint64_t
key_of(const unsigned char *secret, const char *name, int family)
{
    char     url[64];
    int      n;
    sh_url_t u;

    n = snprintf(url, sizeof(url), "http://t.invalid/?%s%s=1", name,
                 family ? "x" : "");
    if (n < 0 || (size_t) n >= sizeof(url)
        || sh_url_parse(&u, url, (size_t) n) != 0 || u.nparams != 1)
    {
        return 0;
    }
    sh_url_hash_parts(&u, secret);
    return family ? u.params[0].family : u.params[0].name_hash;
}

/*
 * The keys of every name and family under one secret, made once a process
 * (a worker's zones share their learner's secret; another secret makes
 * them again): a candidate without text is asked at each of its pairs.
 */
static uint64_t keys[COUNT(families) + COUNT(names)];
static uint64_t keys_digest;

static int
known_key(const unsigned char *secret, uint64_t digest, uint64_t arg)
{
    size_t i;

    if (keys_digest != digest || digest == 0) {
        for (i = 0; i < COUNT(families); i++) {
            keys[i] = key_of(secret, families[i], 1);
        }
        for (i = 0; i < COUNT(names); i++) {
            keys[COUNT(families) + i] = key_of(secret, names[i], 0);
        }
        keys_digest = digest;
    }
    for (i = 0; i < COUNT(keys); i++) {
        if (keys[i] == arg && arg != 0) {
            return 1;
        }
    }
    return 0;
}

int
sh_dust_tracker(const unsigned char *secret, uint64_t digest,
                const char *text, size_t len, uint64_t arg)
{
    size_t i, n;

    if (len == 0) {
        /* a candidate made from a reverse pair has no text yet: its
         * argument's hash tells */
        return known_key(secret, digest, arg);
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
