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
 *   - the model of libxml2's tokenizer (sh_tokenizer_model.h) reads the
 *     page as libxml2 2.9.14's push parser will and charges each construct
 *     what it may cost the parser at most; by then the page may have spent
 *     SH_BUDGET_PER_CHAR units per character scanned, plus
 *     SH_BUDGET_FIXED (sh_budget_markup_over);
 *   - what only the parser knows is charged from its callbacks
 *     (sh_budget_parser): every error it reports, every walk of its stack
 *     of open elements, up to SH_BUDGET_PARSER_PER_BYTE units per byte it
 *     has read, plus SH_BUDGET_PARSER_FIXED; its dictionary may hold
 *     SH_BUDGET_NAMES_MAX distinct names.
 *
 * A page over its budget is skipped (SH_STATUS_TOO_COMPLEX); the model
 * stops it before the costly construct reaches the parser.  Real pages
 * spend well under half of it.
 *
 * This file is the account only: the charges, the allowances and the
 * verdict.  Which construct costs what is the model's business.
 */
#ifndef SH_BUDGET_H
#define SH_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* One construct, or one run of text the parser must hold before it can
 * parse it, longer than this ends the page (SH_BUDGET_TOO_LARGE). */
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
 * libxml2 the model does not follow, sh_html.h): set some 50 times above
 * the slowest real page, so that it never decides a real page's fate
 * whatever the machine's load.
 */
#define SH_BUDGET_CPU_FIXED_NS      (500ull * 1000 * 1000)
#define SH_BUDGET_CPU_NS_PER_BYTE   1000

typedef struct {
    uint64_t      chars;        /* characters scanned (once over budget,
                                   no longer counted) */
    uint64_t      cost;         /* units charged by the tokenizer model */
    uint64_t      parser;       /* units charged by the parser */
    uint64_t      walked_at;    /* where the last priority walk was (+1) */
    int           parser_over;  /* the parser went over its share */
    sh_budget_verdict_t verdict;
    sh_budget_why_t     why;
} sh_budget_t;

/* The characters of p[0..n), which earn the allowance: the bytes that do
 * not continue a UTF-8 sequence. */
size_t sh_budget_count_chars(const unsigned char *p, size_t n);

/* Are the markup's charges over the allowance of the characters counted
 * so far? */
static inline int
sh_budget_markup_over(const sh_budget_t *b)
{
    return b->cost > b->chars * SH_BUDGET_PER_CHAR + SH_BUDGET_FIXED;
}

/* The page ends here, `v` for `why`. */
static inline void
sh_budget_stop(sh_budget_t *b, sh_budget_verdict_t v, sh_budget_why_t why)
{
    b->verdict = v;
    b->why = why;
}

/* A cap outside the model (SH_BUDGET_WHY_CPU, SH_BUDGET_WHY_DEPTH) was
 * passed: the page is over its budget, unless it is already. */
void sh_budget_over(sh_budget_t *b, sh_budget_why_t why);

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
