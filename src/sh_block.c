/*
 * sh_block.c -- the rules of sh_block.h, and their numbers.
 */
#include <string.h>
#include <strings.h>

#include "sh_block.h"

/*
 * Class and id words that mark chrome.  Short on purpose: each word must
 * name chrome on nearly every site that uses it, since a content block
 * taken for chrome is lost to the fingerprint.  Not "header" (article
 * headers, "section-header"), not "related" or "comments" (content on
 * some sites), not "ad" (too short to split on safely).
 */
static const char *const chrome_words[] = {
    "nav", "navbar", "navigation", "menu", "sidebar", "footer",
    "breadcrumb", "breadcrumbs", "cookie", "cookies", "share", "social",
    NULL
};

/* Zone factors, in sixteenths: chrome keeps 1/8 of its weight. */
#define CHROME_WEIGHT   2

/* With a MAIN block on the page, everything outside MAIN keeps 1/8. */
#define OUTSIDE_FACTOR  0.125f

/* Up to a quarter of link text costs a block nothing. */
#define LINK_FREE_NUM   1
#define LINK_FREE_DEN   4

/*
 * A block shorter than SHORT_BYTES non-space bytes keeps SHORT_WEIGHT
 * sixteenths ("Share", "Next", "12 May", "Sign up").
 */
#define SHORT_BYTES     16
#define SHORT_WEIGHT    8

static int
is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c >= 0x80;
}

/* Does the word s[0..n) name chrome?  ASCII case-insensitive. */
static int
chrome_word(const char *s, size_t n)
{
    const char *const *w;
    size_t             i;

    if (n < 3 || n > 11) {
        return 0;
    }
    for (w = chrome_words; *w != NULL; w++) {
        if (strlen(*w) != n) {
            continue;
        }
        for (i = 0; i < n; i++) {
            unsigned char c = (unsigned char) s[i];
            if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char) (*w)[i]) {
                break;
            }
        }
        if (i == n) {
            return 1;
        }
    }
    return 0;
}

/* Any chrome word in a class or id value ("site-footer", "nav_main")? */
static int
names_chrome(const char *v)
{
    const char *p = v, *start;

    for (;;) {
        while (*p != '\0' && !is_alnum((unsigned char) *p)) {
            p++;
        }
        if (*p == '\0') {
            return 0;
        }
        start = p;
        while (is_alnum((unsigned char) *p)) {
            p++;
        }
        if (chrome_word(start, (size_t) (p - start))) {
            return 1;
        }
    }
}

/* The first role token we know (ARIA: the first recognised one counts). */
static unsigned
role_mark(const char *v)
{
    static const struct {
        const char *name;
        unsigned    mark;
    } roles[] = {
        { "main", SH_MARK_MAIN },
        { "navigation", SH_MARK_CHROME },
        { "banner", SH_MARK_CHROME },
        { "contentinfo", SH_MARK_CHROME },
        { "complementary", SH_MARK_CHROME },
        { "search", SH_MARK_CHROME },
    };
    const char *p = v, *start;
    size_t      n, i;

    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'
               || *p == '\f')
        {
            p++;
        }
        if (*p == '\0') {
            return SH_MARK_NONE;
        }
        start = p;
        while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n'
               && *p != '\r' && *p != '\f')
        {
            p++;
        }
        n = (size_t) (p - start);
        for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
            if (strlen(roles[i].name) == n
                && strncasecmp(start, roles[i].name, n) == 0)
            {
                return roles[i].mark;
            }
        }
    }
}

static unsigned
name_mark(const char *n)
{
    switch (n[0]) {
    case 'a':
        if (strcmp(n, "article") == 0) {
            return SH_MARK_ARTICLE;
        }
        return strcmp(n, "aside") == 0 ? SH_MARK_CHROME : SH_MARK_NONE;
    case 'f':
        if (strcmp(n, "form") == 0) {
            return SH_MARK_CHROME;
        }
        return strcmp(n, "footer") == 0 ? SH_MARK_SCOPED : SH_MARK_NONE;
    case 'h':
        return strcmp(n, "header") == 0 ? SH_MARK_SCOPED : SH_MARK_NONE;
    case 'm':
        return strcmp(n, "main") == 0 ? SH_MARK_MAIN : SH_MARK_NONE;
    case 'n':
        return strcmp(n, "nav") == 0 ? SH_MARK_CHROME : SH_MARK_NONE;
    case 't':
        return strcmp(n, "title") == 0 ? SH_MARK_CHROME : SH_MARK_NONE;
    default:
        return SH_MARK_NONE;
    }
}

unsigned
sh_block_mark(const char *name, const char **attrs)
{
    unsigned    mark = name_mark(name), role = SH_MARK_NONE, link = 0;
    int         named = 0, layout;
    const char *a, *v;

    layout = strcmp(name, "html") == 0 || strcmp(name, "body") == 0;
    for (; attrs != NULL && attrs[0] != NULL; attrs += 2) {
        a = attrs[0];
        v = attrs[1];
        if (v == NULL) {
            continue;
        }
        switch (a[0]) {
        case 'r':
            if (strcmp(a, "role") == 0 && role == SH_MARK_NONE) {
                role = role_mark(v);
            }
            break;
        case 'c':
            if (!layout && !named && strcmp(a, "class") == 0) {
                named = names_chrome(v);
            }
            break;
        case 'i':
            if (!layout && !named && strcmp(a, "id") == 0) {
                named = names_chrome(v);
            }
            break;
        case 'h':
            if (name[0] == 'a' && name[1] == '\0'
                && strcmp(a, "href") == 0)
            {
                link = SH_MARK_LINK;
            }
            break;
        }
    }
    /* An explicit role overrides the element's own; a class or id word
     * only marks an element that has no meaning of its own. */
    if (role != SH_MARK_NONE) {
        mark = role;
    } else if (mark == SH_MARK_NONE && named) {
        mark = SH_MARK_CHROME;
    }
    return mark | link;
}

unsigned
sh_block_zone(unsigned outer, unsigned mark)
{
    switch (mark) {
    case SH_MARK_MAIN:
        return SH_ZONE_MAIN;
    case SH_MARK_ARTICLE:
        return outer == SH_ZONE_CHROME ? SH_ZONE_CHROME : SH_ZONE_MAIN;
    case SH_MARK_CHROME:
        return SH_ZONE_CHROME;
    case SH_MARK_SCOPED:
        return outer == SH_ZONE_MAIN ? SH_ZONE_MAIN : SH_ZONE_CHROME;
    default:
        return outer;
    }
}

unsigned
sh_block_weight(unsigned mode, unsigned zone, uint32_t bytes, uint32_t link)
{
    unsigned w;

    if (mode == SH_CONTENT_OFF) {
        return SH_BLOCK_FULL;
    }
    w = zone == SH_ZONE_CHROME ? CHROME_WEIGHT : SH_BLOCK_FULL;
    if (mode != SH_CONTENT_AUTO || bytes == 0) {
        return w;
    }
    /*
     * Link density: prose with a few links is content; past LINK_FREE of
     * link text the block keeps the share of its text that is not link
     * text, stretched to reach 0 for links only (a menu).
     */
    if ((uint64_t) link * LINK_FREE_DEN > (uint64_t) bytes * LINK_FREE_NUM) {
        uint64_t keep = (uint64_t) (bytes - link) * LINK_FREE_DEN,
                 span = (uint64_t) bytes * (LINK_FREE_DEN - LINK_FREE_NUM);

        w = (unsigned) ((w * keep + span / 2) / span);
    }
    if (bytes < SHORT_BYTES) {
        w = (w * SHORT_WEIGHT + SH_BLOCK_FULL / 2) / SH_BLOCK_FULL;
    }
    return w;
}

float
sh_block_outside(void)
{
    return OUTSIDE_FACTOR;
}

const char *
sh_block_zone_name(unsigned zone)
{
    switch (zone) {
    case SH_ZONE_MAIN:
        return "main";
    case SH_ZONE_CHROME:
        return "chrome";
    default:
        return "-";
    }
}
