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
static const struct {
    const char *word;
    size_t      len;
} chrome_words[] = {
    { "nav", 3 }, { "navbar", 6 }, { "navigation", 10 }, { "menu", 4 },
    { "sidebar", 7 }, { "footer", 6 }, { "breadcrumb", 10 },
    { "breadcrumbs", 11 }, { "cookie", 6 }, { "cookies", 7 },
    { "share", 5 }, { "social", 6 },
};

/* The first letters of those words: most words of a class attribute are
 * rejected on their first letter (the lookup runs on every class). */
#define CHROME_FIRST    ((1u << ('b' - 'a')) | (1u << ('c' - 'a')) \
                         | (1u << ('f' - 'a')) | (1u << ('m' - 'a')) \
                         | (1u << ('n' - 'a')) | (1u << ('s' - 'a')))

/* Zone factors, in sixteenths: chrome keeps 1/8 of its weight. */
#define CHROME_WEIGHT   2

/* With a MAIN block on the page, everything outside MAIN keeps 1/8. */
#define OUTSIDE_FACTOR  0.125f

/* A page whose content (outside chrome) is at least half link text is a
 * hub, fingerprinted on its whole text (sh_doc.c). */
#define HUB_LINK_NUM    1
#define HUB_LINK_DEN    2

/*
 * Link text outside chrome keeps at least half its weight: a list of
 * links in the page's body (a listing, "related stories", a toctree) is
 * often what tells two pages of one template apart, while menus, sidebars
 * and footers, which differ between templates, are mostly marked chrome.
 */
#define LINK_FLOOR      8

/* Up to a quarter of link text costs a block nothing. */
#define LINK_FREE_NUM   1
#define LINK_FREE_DEN   4

/*
 * A block shorter than SHORT_BYTES non-space bytes keeps SHORT_WEIGHT
 * sixteenths ("Share", "Next", "12 May", "Sign up").
 */
#define SHORT_BYTES     16
#define SHORT_WEIGHT    8

/* Letters, digits and every non-ASCII byte: what class words are made
 * of; anything else separates them ("site-footer", "nav_main"). */
static const unsigned char word_byte[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
    ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1,
    ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1,
    ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
    ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
    ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1,
    ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
    ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
    [0x80 ... 0xFF] = 1
};

/* Does the word s[0..n) name chrome?  ASCII case-insensitive. */
static int
chrome_word(const char *s, size_t n)
{
    unsigned c = (unsigned char) s[0] | 0x20;
    size_t   w, i;

    if (n < 3 || n > 11 || c < 'a' || c > 'z'
        || !(CHROME_FIRST >> (c - 'a') & 1))
    {
        return 0;
    }
    for (w = 0; w < sizeof(chrome_words) / sizeof(chrome_words[0]); w++) {
        if (chrome_words[w].len != n) {
            continue;
        }
        for (i = 0; i < n; i++) {
            c = (unsigned char) s[i];
            if ((c >= 'A' && c <= 'Z' ? c + 32 : c)
                != (unsigned char) chrome_words[w].word[i])
            {
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
        while (*p != '\0' && !word_byte[(unsigned char) *p]) {
            p++;
        }
        if (*p == '\0') {
            return 0;
        }
        start = p;
        while (word_byte[(unsigned char) *p]) {
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

unsigned
sh_block_name_mark(const char *n)
{
    switch (n[0]) {
    case 'a':
        if (n[1] == '\0') {
            return SH_NAME_ANCHOR;
        }
        if (strcmp(n, "article") == 0) {
            return SH_MARK_ARTICLE;
        }
        return strcmp(n, "aside") == 0 ? SH_MARK_CHROME : SH_MARK_NONE;
    case 'b':
        return strcmp(n, "body") == 0 ? SH_NAME_LAYOUT : SH_MARK_NONE;
    case 'f':
        if (strcmp(n, "form") == 0) {
            return SH_MARK_CHROME;
        }
        return strcmp(n, "footer") == 0 ? SH_MARK_SCOPED : SH_MARK_NONE;
    case 'h':
        if (strcmp(n, "html") == 0) {
            return SH_NAME_LAYOUT;
        }
        return strcmp(n, "header") == 0 ? SH_MARK_SCOPED : SH_MARK_NONE;
    case 'm':
        return strcmp(n, "main") == 0 ? SH_MARK_MAIN : SH_MARK_NONE;
    case 'n':
        return strcmp(n, "nav") == 0 ? SH_MARK_CHROME : SH_MARK_NONE;
    default:
        return SH_MARK_NONE;
    }
}

unsigned
sh_block_mark(unsigned name_mark, const char **attrs)
{
    unsigned    mark = name_mark & SH_MARK_MASK, role = SH_MARK_NONE;
    unsigned    link = 0;
    int         named = 0, layout = (name_mark & SH_NAME_LAYOUT) != 0;
    const char *a, *v;

    for (; attrs != NULL && attrs[0] != NULL; attrs += 2) {
        a = attrs[0];
        v = attrs[1];
        if (v == NULL) {
            continue;
        }
        switch (a[0]) {
        case 'r':
            if (role == SH_MARK_NONE && strcmp(a, "role") == 0) {
                role = role_mark(v);
            }
            break;
        case 'c':
            if (!layout && !named && strcmp(a, "class") == 0) {
                named = names_chrome(v);
            }
            break;
        case 'i':
            if (!layout && !named && a[1] == 'd' && a[2] == '\0') {
                named = names_chrome(v);
            }
            break;
        case 'h':
            if ((name_mark & SH_NAME_ANCHOR) && strcmp(a, "href") == 0) {
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
    unsigned w, floor = zone == SH_ZONE_CHROME ? 0 : LINK_FLOOR;

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
     * text, stretched to reach 0 for links only (a menu); outside chrome
     * down to LINK_FLOOR only.
     */
    if ((uint64_t) link * LINK_FREE_DEN > (uint64_t) bytes * LINK_FREE_NUM) {
        uint64_t keep = (uint64_t) (bytes - link) * LINK_FREE_DEN,
                 span = (uint64_t) bytes * (LINK_FREE_DEN - LINK_FREE_NUM);

        w = (unsigned) ((w * keep + span / 2) / span);
        w = w > floor ? w : floor;
    }
    if (bytes < SHORT_BYTES) {
        w = (w * SHORT_WEIGHT + SH_BLOCK_FULL / 2) / SH_BLOCK_FULL;
    }
    return w;
}

unsigned
sh_block_hub_weight(unsigned mode, unsigned zone, uint32_t bytes,
                    uint32_t link)
{
    return sh_block_weight(mode, zone, bytes,
                           zone == SH_ZONE_CHROME ? link : 0);
}

int
sh_block_links_are_content(uint64_t bytes, uint64_t link)
{
    return bytes > 0 && link * HUB_LINK_DEN >= bytes * HUB_LINK_NUM;
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
