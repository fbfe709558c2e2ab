/*
 * sh_budget.h -- what a page may cost the HTML parser, decided as its bytes
 * arrive, before the parser sees them.
 *
 * libxml2 2.9's HTML parser has paths whose cost grows faster than the
 * page: every attribute of a tag is compared with all the tag's earlier
 * ones, every end tag that closes nothing and every <body> tag walk the
 * whole stack of open elements, every entity reference is looked up in a
 * list of 253 names, every malformed construct formats an error message,
 * and past 4,608 names its dictionary's hash chains grow.  A page crafted
 * for one of them costs seconds per megabyte (one tag of 209,000
 * attributes: 40 s).  So each document carries a work budget, in units of
 * about a nanosecond of the machine the costs were measured on
 * (docs/module.md, Cost limits):
 *
 *   - the markup scanner (sh_budget.c) tokenizes the page exactly as
 *     libxml2 2.9.14's push parser will (tags, attributes and their
 *     values, references, comments, doctypes, processing instructions,
 *     script and style text) and charges each construct what it may cost
 *     the parser at most; by then the page may have spent
 *     SH_BUDGET_PER_CHAR units per character scanned, plus
 *     SH_BUDGET_FIXED;
 *   - what only the parser knows is charged from its callbacks
 *     (sh_budget_parser): every error it reports, every walk of its stack
 *     of open elements, up to SH_BUDGET_PARSER_PER_BYTE units per byte it
 *     has read, plus SH_BUDGET_PARSER_FIXED; its dictionary may hold
 *     SH_BUDGET_NAMES_MAX distinct names.
 *
 * A page over its budget is skipped (SH_STATUS_TOO_COMPLEX); the scanner
 * stops it before the costly construct reaches the parser.  Real pages
 * spend well under half of it.
 *
 * The scanner also tells sh_html where the parser may be handed its input:
 * only where every construct begun is complete in the parser's eyes and
 * in its look-ahead's.  libxml2's push parser decides that a tag or a
 * comment is complete with a look-ahead that disagrees with the parser
 * proper on some malformed markup, and the parser then reads on to the end
 * of whatever bytes it has; handed whole constructs, it never does, so
 * what it reads does not depend on how the body was cut, and the
 * scanner's view of the page stays the parser's.
 *
 * And it bounds memory: one construct, or one run of text the parser must
 * hold before it can parse it, longer than SH_PENDING_MAX bytes ends the
 * page (SH_STATUS_TOO_LARGE).
 *
 * Every decision is a function of the bytes (the parser's callbacks are
 * one too), never of how the body was cut.
 */
#ifndef SH_BUDGET_H
#define SH_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#define SH_PENDING_MAX              (4 * 1024 * 1024)

#define SH_BUDGET_PER_CHAR          100
#define SH_BUDGET_FIXED             (256 * 1024)
#define SH_BUDGET_PARSER_PER_BYTE   16
#define SH_BUDGET_PARSER_FIXED      (256 * 1024)
#define SH_BUDGET_NAMES_MAX         16384

typedef enum {
    SH_BUDGET_OK = 0,
    SH_BUDGET_EXCEEDED,     /* markup too costly for its size */
    SH_BUDGET_TOO_LARGE     /* a construct or text run over SH_PENDING_MAX */
} sh_budget_verdict_t;

/* Where the page went over its budget, for the log. */
typedef enum {
    SH_BUDGET_WHY_NONE = 0,
    SH_BUDGET_WHY_MARKUP,   /* tags, attributes, references */
    SH_BUDGET_WHY_PARSER,   /* errors, walks of a deep stack */
    SH_BUDGET_WHY_NAMES,    /* too many distinct names */
    SH_BUDGET_WHY_AMBIGUOUS,/* an end tag in script text, while the parser
                               cannot yet say whether it ends the script */
    SH_BUDGET_WHY_RUN,      /* a construct or text run over SH_PENDING_MAX */
    SH_BUDGET_WHY_CPU,      /* the CPU-time backstop (below) */
    SH_BUDGET_WHY_DEPTH     /* elements nested deeper than SH_DEPTH_MAX */
} sh_budget_why_t;

/*
 * Open elements, as the parser reports them (implied ends included), may
 * be nested at most this deep: every libxml2 walks its stack of open
 * elements for some end tags (2.9: htmlAutoCloseOnClose, the name
 * lookups; 2.14+: HTML5's "any other end tag"), so depth times end tags
 * is the quadratic case of every version.  Real pages stay below: with
 * the cap, the fingerprints of the 32,101 rust-doc and the 258 real-web
 * pages of BENCHMARKS.md did not change.
 */
#define SH_DEPTH_MAX                1024

/*
 * The CPU-time backstop: a page whose parse has taken more of its
 * thread's CPU time than SH_BUDGET_CPU_FIXED_NS plus SH_BUDGET_CPU_NS_PER_BYTE
 * per byte handed to the parser is stopped (SH_BUDGET_WHY_CPU, logged and
 * counted as over budget).  A backstop only, for what the caps miss (a
 * libxml2 the scanner does not model, sh_html.h): set some 50 times above
 * the slowest real page, so that it never decides a real page's fate
 * whatever the machine's load.
 */
#define SH_BUDGET_CPU_FIXED_NS      (500ull * 1000 * 1000)
#define SH_BUDGET_CPU_NS_PER_BYTE   1000

typedef struct {
    /* The scanner (sh_budget.c), between calls. */
    unsigned char state;
    unsigned char sub;          /* position in a keyword, a dash run */
    unsigned char quote;        /* the quote that ends a value */
    unsigned char raw;          /* in script or style text: which */
    unsigned char kind;         /* the element being named: which */
    unsigned char la;           /* the parser's look-ahead (LA_* bits) */
    unsigned char utf8_need;    /* continuation bytes still to come */
    unsigned char ret;          /* the state a reference returns to */
    unsigned char name_len;     /* bytes of the current name, up to 100 */
    char          name[8];      /* its first bytes, lower-cased */
    uint32_t      cp;           /* a code point being decoded */
    uint32_t      nattrs;       /* attributes of the current tag */
    int           sync;         /* waiting for sh_budget_sync */

    uint64_t      pos;          /* bytes scanned */
    uint64_t      start;        /* where the current construct began */
    uint64_t      run;          /* what the parser may have to hold */
    uint64_t      rescans;      /* "</", "<?" waiting for a '>' ... */
    uint64_t      rescan_sum;   /* ... and the sum of their offsets */

    /* The budget. */
    uint64_t      chars;        /* characters scanned (once over budget,
                                   no longer counted) */
    uint64_t      cost;         /* units charged by the scanner */
    uint64_t      parser;       /* units charged by the parser */
    uint64_t      walked_at;    /* where the last priority walk was (+1) */
    int           parser_over;  /* the parser went over its share */
    sh_budget_verdict_t verdict;
    sh_budget_why_t     why;

    /* Set by each sh_budget_scan: where its bytes may be cut, and whether
     * they are script or style text that the parser need not see. */
    size_t        safe_first;
    size_t        safe_last;
    int           raw_text;
} sh_budget_t;

#define SH_BUDGET_NONE  ((size_t) -1)

void sh_budget_init(sh_budget_t *b);

/*
 * Scan the next n bytes of UTF-8.  Returns how many of them it took: n; or
 * fewer when the page went over its budget (b->verdict says how: the
 * parser must see none of the rest), when b->sync is set (see below; call
 * again with the rest), or where script or style text begins or ends.
 * Sets b->safe_first and b->safe_last to the first and the last offset in
 * p[0..returned] at which the input scanned so far may be cut for the
 * parser: every construct before it complete in the parser's eyes, no
 * character cut (SH_BUDGET_NONE: nowhere).
 *
 * Sets b->raw_text when the bytes taken are script or style text, whole
 * characters, up to the "</" and letter that may end it (htmlParseScript
 * reads them as one run), none of them a character that libxml2 reports
 * as invalid.  Then the parser may be spared them, if it is in that
 * element and holds no input: they would reach the caller's callbacks
 * only as the element's text, and cost nothing in the budget (sh_html
 * skips them, and counts them as read).
 */
size_t sh_budget_scan(sh_budget_t *b, const char *p, size_t n);

/*
 * With b->sync set, the scanner met an end tag in script or style text
 * that may or may not end it.  Hand the parser everything up to the
 * returned offset, then tell the scanner the element the parser is in
 * (its name, or NULL).
 */
void sh_budget_sync(sh_budget_t *b, const char *element);

/* A cap outside the scanner (SH_BUDGET_WHY_CPU, SH_BUDGET_WHY_DEPTH) was
 * passed: the page is over its budget, unless it is already. */
void sh_budget_over(sh_budget_t *b, sh_budget_why_t why);

/* "script" or "style" while the scanner is in that element's text, else
 * NULL. */
const char *sh_budget_raw_element(const sh_budget_t *b);

/* A walk of the parser's stack of open elements, `depth` deep. */
typedef enum {
    SH_BUDGET_WALK_NONE = 0,
    SH_BUDGET_WALK_NAMES,       /* for a name: an end tag that matched none,
                                   a <body> tag */
    SH_BUDGET_WALK_PRIORITY     /* and for the elements above it that an end
                                   tag may close (htmlAutoCloseOnClose) */
} sh_budget_walk_t;

/*
 * From the parser's callbacks, at byte `pos` of its input: it reported an
 * error (`error` 1), walked its stack, or both; `names`: the distinct names
 * in its dictionary.  Returns 0, or -1 when the page went over its budget
 * (b->verdict is then set).
 */
int sh_budget_parser(sh_budget_t *b, uint64_t pos, int error,
                     sh_budget_walk_t walk, size_t depth, size_t names);

const char *sh_budget_why_name(sh_budget_why_t why);

#endif
