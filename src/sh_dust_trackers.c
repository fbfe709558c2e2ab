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
 * query-parameter filters.  Names such as ref or source, which also
 * select content on some sites (a branch, a data source), are not here.
 */
#include <string.h>
#include <strings.h>

#include "sh_dust_activation.h"

/* families: a prefix and anything after it (utm_source, utm_medium...) */
static const char *const families[] = {
    "utm_", "mc_", "pk_", "mtm_", "hsa_", "_hs"
};

static const char *const names[] = {
    "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid",
    "yclid", "ysclid", "twclid", "ttclid", "igshid", "li_fat_id", "mkt_tok",
    "_ga", "_gl", "vero_id", "oly_anon_id", "oly_enc_id", "rb_clickid",
    "s_cid", "wickedid", "epik"
};

int
sh_dust_tracker(const char *name, size_t len)
{
    size_t i, n;

    if (len > 0 && name[len - 1] == '*') {      /* a family's rule */
        len--;
    }
    for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        n = strlen(families[i]);
        if (len >= n && strncasecmp(name, families[i], n) == 0) {
            return 1;
        }
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (len == strlen(names[i]) && strncasecmp(name, names[i], len) == 0)
        {
            return 1;
        }
    }
    return 0;
}
