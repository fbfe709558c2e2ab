/*
 * sh_budget.c -- the markup scanner and the work budget (sh_budget.h).
 *
 * The scanner is a model of libxml2 2.9.14's HTML push parser
 * (HTMLparser.c: htmlParseTryOrFinish and the functions it calls).  It
 * must agree with the parser on where every construct begins and ends: a
 * scanner that thought a quoted value or a comment went on longer than
 * the parser does would not see markup the parser parses.  So each state
 * below names the libxml2 function it follows, and fuzz/fuzz_doc.c checks
 * the agreement (the parser, handed pieces cut where the scanner allows,
 * must read the same text whatever the cuts).
 *
 * Two views of a construct's end matter.  The parser proper's: where
 * htmlParseStartTag, htmlParseComment, ... stop reading.  And the push
 * parser's look-ahead, which decides when a construct is complete enough
 * to parse: a '>' outside anything it takes for a quoted value (any quote
 * opens one, even where the parser proper would not).  Input is handed to
 * the parser only where both are past every construct begun so far; then
 * the parser parses every construct it is handed, whole, at once.
 *
 * The one thing the scanner cannot know is whether an end tag inside
 * script or style text ends it: "</div>" does when a div is open below
 * the script, and only the parser knows its stack.  There the scanner
 * stops and asks (sh_budget_sync): the caller hands the parser everything
 * up to that end tag and looks at the element the parser is in.
 */
#include <string.h>

#include <libxml/parserInternals.h>

#include "sh_budget.h"

/*
 * What a construct may cost libxml2 2.9.14 at most, in units of about a
 * nanosecond, measured on pages made of nothing else (docs/module.md:
 * Cost limits): parsing it, its name's dictionary lookup, its callback.
 * Not the errors it may raise (about 200 ns each: libxml2 formats every
 * message), nor the walks of the element stack: the parser reports those
 * (sh_budget_parser), and they are charged exactly.
 */
#define COST_TAG        150     /* a start tag */
#define COST_END_TAG    100     /* an end tag */
#define COST_ATTR       100     /* an attribute */
#define COST_ATTR_CMP   4       /* ... and per earlier attribute of its tag */
#define COST_BOGUS      50      /* what is not an attribute, in a tag */
#define COST_REF        1000    /* &name;: 253 entity names compared */
#define COST_REF_FIRST  100     /* &amp; &lt; &gt; &quot; &apos; &nbsp; */
#define COST_CHAR_REF   50      /* &#...; */
#define COST_AMP        50      /* '&' and no name */
#define COST_COMMENT    100
#define COST_OTHER      150     /* a doctype, a PI */
#define COST_LOOK_BYTE  1       /* a byte the look-ahead scans again */

/*
 * Per error, and per element of a stack walk, charged from the parser's
 * reports.  A walk looking for a name compares it with each element's; a
 * walk that may close elements also looks each one up in a list of eleven
 * priorities (htmlGetEndPriority), twelve comparisons an element.
 */
#define COST_ERROR      300
#define COST_STEP       3
#define COST_STEP_PRIO  26

#define NAME_MAX_LEN    100     /* libxml2's HTML_PARSER_BUFFER_SIZE */

enum {
    S_DATA = 0,     /* text (htmlParseCharData, htmlParseReference) */
    S_RAW,          /* script or style text (htmlParseScript) */
    S_RAW_LT,       /* '<' in it */
    S_RAW_LT_SLASH, /* "</" in it */
    S_LT,           /* '<' in text */
    S_BANG,         /* "<!": "--" or "DOCTYPE"? */
    S_COMMENT,      /* htmlParseComment */
    S_COMMENT_BANG, /* "--!" in it */
    S_PI_TARGET,    /* "<?": htmlParsePI, its target (htmlParseName) */
    S_PI_NAME,
    S_PI_REST,      /* up to '>' */
    S_END,          /* "</": htmlParseEndTag */
    S_END_NAME,
    S_END_REST,     /* up to '>' */
    S_TAG_NAME,     /* htmlParseStartTag: the element's name */
    S_TAG,          /* between attributes */
    S_TAG_SLASH,    /* '/' between attributes: "/>"? */
    S_ATTR_NAME,    /* htmlParseAttribute */
    S_ATTR_AFTER,   /* after the name: '='? */
    S_ATTR_EQ,      /* after '=': the value */
    S_VALUE_Q,      /* htmlParseAttValue, quoted */
    S_VALUE_U,      /* ... not quoted */
    S_BOGUS,        /* not an attribute: skipped to a blank or '>' */
    S_BOGUS_SLASH,
    S_DT_BLANK,     /* htmlParseDocTypeDecl: blanks after "<!DOCTYPE" */
    S_DT_NAME0,     /* its name (htmlParseName), first character */
    S_DT_NAME,
    S_DT_BLANK2,    /* blanks after the name */
    S_DT_KEYWORD,   /* "SYSTEM" or "PUBLIC" (htmlParseExternalID) */
    S_DT_BLANK3,    /* blanks after the keyword */
    S_DT_LITERAL,   /* a quoted literal */
    S_DT_BLANK4,    /* between the public and the system literal */
    S_DT_TAIL,      /* blanks, then '>' or anything up to it */
    S_DT_REST,      /* up to '>' */
    S_AMP,          /* '&' in text or a value: htmlParseReference */
    S_AMP_NAME      /* its entity's name */
};

/* Which element's text is raw: script or style (b->raw, b->kind). */
enum { KIND_OTHER = 0, KIND_SCRIPT = 1, KIND_STYLE = 2 };

/*
 * The push parser's look-ahead for a '>' (htmlParseLookupSequence), run
 * from the '<' of every start tag and doctype: one machine per construct,
 * but machines in the same state behave alike, so a set of bits.  A quote
 * opens a value where the look-ahead is outside one, and only the same
 * quote closes it.  LA_PLAIN: a look-ahead that ignores quotes (end tags,
 * processing instructions).
 */
#define LA_OUT      1
#define LA_DQUOTE   2
#define LA_SQUOTE   4
#define LA_PLAIN    8

/* Bytes that end a run of text in the fast loops. */
#define SP_DATA     1       /* '<', '&' */
#define SP_RAW      2       /* '<' */

static unsigned char special[256];

static void
init_tables(void)
{
    special['<'] = SP_DATA | SP_RAW;
    special['&'] = SP_DATA;
}

/* IS_BLANK_CH: what SKIP_BLANKS skips (not form feed). */
static inline int
is_blank(unsigned c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline int
is_letter(unsigned c)
{
    return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

/* htmlParseHTMLName (element and attribute names): first, other bytes. */
static inline int
is_html_name_start(unsigned c)
{
    return is_letter(c) || c == '_' || c == ':' || c == '.';
}

static inline int
is_html_name(unsigned c)
{
    return is_html_name_start(c) || (c >= '0' && c <= '9') || c == '-';
}

/* htmlParseName (a doctype's name, a PI's target), on code points. */
static int
is_name_start(unsigned cp)
{
    if (cp == ' ' || cp == '>' || cp == '/') {
        return 0;
    }
    return IS_LETTER(cp) || cp == '_' || cp == ':';
}

static int
is_name(unsigned cp)
{
    if (cp == ' ' || cp == '>' || cp == '/') {
        return 0;
    }
    return IS_LETTER(cp) || IS_DIGIT(cp) || cp == '.' || cp == '-'
           || cp == '_' || cp == ':' || IS_COMBINING(cp) || IS_EXTENDER(cp);
}

void
sh_budget_init(sh_budget_t *b)
{
    if (special['<'] == 0) {
        init_tables();          /* idempotent: a race is harmless */
    }
    memset(b, 0, sizeof(*b));
    b->state = S_DATA;
    b->safe_first = SH_BUDGET_NONE;
    b->safe_last = SH_BUDGET_NONE;
}

const char *
sh_budget_why_name(sh_budget_why_t why)
{
    switch (why) {
    case SH_BUDGET_WHY_MARKUP:
        return "markup";
    case SH_BUDGET_WHY_PARSER:
        return "parser";
    case SH_BUDGET_WHY_NAMES:
        return "names";
    case SH_BUDGET_WHY_AMBIGUOUS:
        return "ambiguous";
    case SH_BUDGET_WHY_RUN:
        return "run";
    default:
        return "none";
    }
}


/* ---- the scanner -------------------------------------------------------- */

typedef struct {
    sh_budget_t *b;
    uint64_t     base;          /* b->pos of p[0] */
    size_t       i;             /* the byte being scanned */
    int          stop;          /* stop at `at`: over budget, too large */
    size_t       at;
} scan_t;

static void
stop_at(scan_t *s, uint64_t pos, sh_budget_verdict_t v, sh_budget_why_t why)
{
    s->b->verdict = v;
    s->b->why = why;
    s->stop = 1;
    s->at = pos > s->base ? (size_t) (pos - s->base) : 0;
}

/* Charge what a construct may cost; over the allowance, the page ends
 * before the construct (or at this byte, in text). */
static void
charge(scan_t *s, uint64_t units)
{
    sh_budget_t *b = s->b;

    b->cost += units;
    if (b->cost > b->chars * SH_BUDGET_PER_CHAR + SH_BUDGET_FIXED) {
        stop_at(s, (b->state == S_DATA || b->state == S_RAW)
                   ? s->base + s->i : b->start,
                SH_BUDGET_EXCEEDED, SH_BUDGET_WHY_MARKUP);
    }
}

/* A name (element, attribute, end tag) begins or goes on. */
static inline void
name_byte(sh_budget_t *b, unsigned c)
{
    if (b->name_len < sizeof(b->name)) {
        b->name[b->name_len] = (char) ((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
    b->name_len++;
}

static unsigned
name_kind(const sh_budget_t *b)
{
    if (b->name_len == 6 && memcmp(b->name, "script", 6) == 0) {
        return KIND_SCRIPT;
    }
    if (b->name_len == 5 && memcmp(b->name, "style", 5) == 0) {
        return KIND_STYLE;
    }
    return KIND_OTHER;
}

/* The construct ended with this byte: back to text, or to raw text. */
static inline void
text_again(sh_budget_t *b)
{
    b->state = b->raw ? S_RAW : S_DATA;
}

/* A start tag ended with this byte; `empty`: with "/>" (no raw text). */
static void
start_tag_end(sh_budget_t *b, int empty)
{
    if (!empty && b->kind != KIND_OTHER) {
        b->raw = b->kind;               /* htmlParseScript from here */
    }
    text_again(b);
}

/*
 * An end tag ended with this byte.  In raw text, one that names the raw
 * element ends it; one that names another element ends it if that
 * element is open below the script, which only the parser knows: ask it
 * (sh_budget_sync), once it has been handed everything up to here.  It
 * can be, unless it is still waiting on a look-ahead (a malformed tag
 * before).
 */
static void
end_tag_end(scan_t *s)
{
    sh_budget_t *b = s->b;

    if (b->raw == KIND_OTHER || b->kind == b->raw) {
        b->raw = KIND_OTHER;
        b->state = S_DATA;
        return;
    }
    if (b->la != 0) {
        stop_at(s, b->start, SH_BUDGET_EXCEEDED, SH_BUDGET_WHY_AMBIGUOUS);
        return;
    }
    b->state = S_RAW;
    b->sync = 1;
}

/*
 * '&' in text (htmlParseReference) or in a value (htmlParseHTMLAttribute):
 * a character reference, or an entity name looked up in libxml2's list of
 * 253, which begins with the six below.  Scanned in states of its own,
 * then the state it was met in goes on.
 */
static inline void
reference(sh_budget_t *b, uint64_t here)
{
    if (b->state == S_DATA) {
        b->start = here;        /* over budget, the text ends before it */
    }
    b->ret = b->state;
    b->state = S_AMP;
}

static int
first_entity(const sh_budget_t *b)
{
    static const char *const first[] = {
        "quot", "amp", "apos", "lt", "gt", "nbsp"
    };
    size_t i;

    for (i = 0; i < sizeof(first) / sizeof(first[0]); i++) {
        if (strlen(first[i]) == b->name_len
            && memcmp(first[i], b->name, b->name_len) == 0)
        {
            return 1;
        }
    }
    return 0;
}

/*
 * "</" or "<?" without a name: the push parser waits for a '>' (its
 * look-ahead), then reads only those two bytes, and looks for the '>'
 * again from the next "</": a run of them with no '>' costs it the square
 * of the run.  Charged when the '>' comes, before the parser sees any of
 * it (until then sh_html holds it).
 */
static inline void
rescan(sh_budget_t *b)
{
    b->rescans++;
    b->rescan_sum += b->start;
}

/*
 * One byte, c (`cp`: the code point it completes, if it does), in the
 * current state.  Returns 1 when the byte must be scanned again in the
 * new state (it ended the construct without belonging to it).
 */
static int
step(scan_t *s, unsigned c, unsigned cp, int complete)
{
    sh_budget_t *b = s->b;
    uint64_t     here = s->base + s->i;

    switch (b->state) {

    case S_DATA:
        if (c == '<') {
            if (b->la == 0) {
                b->run = here;          /* the text before can be parsed */
            }
            b->state = S_LT;
            b->start = here;
        } else if (c == '&') {
            reference(b, here);
        }
        return 0;

    case S_AMP:
        if (c == '#') {
            charge(s, COST_CHAR_REF);
            b->state = b->ret;
            return 0;
        }
        if (is_letter(c)) {
            b->state = S_AMP_NAME;
            b->name[0] = (char) c;
            b->name_len = 1;
            return 0;
        }
        charge(s, COST_AMP);
        b->state = b->ret;
        return 1;

    case S_AMP_NAME:
        /* Only a name made of ASCII letters and digits may be one of the
         * first six; anything else is charged the whole list. */
        if (((c >= '0' && c <= '9') || is_letter(c))
            && b->name_len < sizeof(b->name))
        {
            b->name[b->name_len++] = (char) c;
            return 0;
        }
        charge(s, c == ';' && first_entity(b) ? COST_REF_FIRST : COST_REF);
        b->state = b->ret;
        return 1;

    case S_LT:
        if (c == '!') {
            b->state = S_BANG;
            b->sub = 0;
            b->quote = 3;               /* "DOCTYPE" (1) or "--" (2)? */
        } else if (c == '?') {
            b->state = S_PI_TARGET;
            b->la |= LA_PLAIN;
            charge(s, COST_OTHER);
        } else if (c == '/') {
            b->state = S_END;
            b->la |= LA_PLAIN;
        } else if (is_letter(c)) {
            b->state = S_TAG_NAME;
            b->la |= LA_OUT;
            b->name_len = 0;
            b->nattrs = 0;
            name_byte(b, c);
            charge(s, COST_TAG);
        } else {
            b->state = S_DATA;          /* '<' was text */
            return 1;
        }
        return 0;

    case S_BANG:
        /* libxml2 tries "<!DOCTYPE" (any case), then "<!--"; else the
         * '<' is text.  It looks at all nine bytes at once: hold them. */
        if ((b->quote & 1) && (c & ~0x20u) != (unsigned) "DOCTYPE"[b->sub]) {
            b->quote &= ~1;
        }
        if ((b->quote & 2) && (b->sub >= 2 || c != '-')) {
            b->quote &= ~2;
        }
        b->sub++;
        if ((b->quote & 2) && b->sub == 2) {
            b->state = S_COMMENT;
            b->sub = 0;
            charge(s, COST_COMMENT);
        } else if ((b->quote & 1) && b->sub == 7) {
            b->state = S_DT_BLANK;
            b->la |= LA_OUT;
            charge(s, COST_OTHER);
        } else if (b->quote == 0) {
            b->state = S_DATA;          /* "<!" and what followed: text */
            return 1;
        }
        return 0;

    case S_COMMENT:
        /* htmlParseComment: ends at "-->" or "--!>" whose dashes come
         * after "<!--" ("<!-->" does not end it). */
        if (c == '-') {
            if (b->sub < 2) {
                b->sub++;
            }
        } else if (c == '>' && b->sub == 2) {
            text_again(b);
        } else if (c == '!' && b->sub == 2) {
            b->state = S_COMMENT_BANG;
        } else {
            b->sub = 0;
        }
        return 0;

    case S_COMMENT_BANG:
        if (c == '>') {
            text_again(b);
        } else {
            b->state = S_COMMENT;
            b->sub = c == '-';
        }
        return 0;

    case S_PI_TARGET:
        /* htmlParsePI: "<?" and a name, up to '>'; "<?" without a name
         * is all there is of it (the parser goes on with what follows). */
        if (!complete) {
            return 0;
        }
        if (is_name_start(cp)) {
            b->state = S_PI_NAME;
            return 0;
        }
        rescan(b);
        b->state = S_DATA;
        return c < 0x80;                /* a non-ASCII character is text */

    case S_PI_NAME:
        if (!complete || is_name(cp)) {
            return 0;
        }
        if (c == '>') {
            text_again(b);
            return 0;
        }
        b->state = S_PI_REST;
        return 0;

    case S_PI_REST:
        if (c == '>') {
            text_again(b);
        }
        return 0;

    case S_END:
        /* htmlParseEndTag: a name, then anything up to '>'.  Without a
         * name, "</" is all there is of it. */
        if (is_html_name_start(c)) {
            b->state = S_END_NAME;
            b->name_len = 0;
            name_byte(b, c);
            charge(s, COST_END_TAG);
            return 0;
        }
        rescan(b);
        b->state = S_DATA;
        return 1;

    case S_END_NAME:
        if (is_html_name(c) && b->name_len < NAME_MAX_LEN) {
            name_byte(b, c);
            return 0;
        }
        b->kind = (unsigned char) name_kind(b);
        b->state = S_END_REST;
        return 1;

    case S_END_REST:
        if (c == '>') {
            end_tag_end(s);
        }
        return 0;

    case S_TAG_NAME:
        /* htmlParseStartTag: the element's name (at most 100 bytes: the
         * rest of a longer one is read as an attribute)... */
        if (is_html_name(c) && b->name_len < NAME_MAX_LEN) {
            name_byte(b, c);
            return 0;
        }
        b->kind = (unsigned char) name_kind(b);
        b->state = S_TAG;
        return 1;

    case S_TAG:
        /* ... then attributes, up to '>' or "/>". */
        if (is_blank(c)) {
            return 0;
        }
        if (c == '>') {
            start_tag_end(b, 0);
        } else if (c == '/') {
            b->state = S_TAG_SLASH;
        } else if (is_html_name_start(c)) {
            /* Compared with each earlier attribute of the tag. */
            charge(s, COST_ATTR + (uint64_t) COST_ATTR_CMP * b->nattrs);
            b->nattrs++;
            b->state = S_ATTR_NAME;
            b->name_len = 1;
        } else {
            charge(s, COST_BOGUS);
            b->state = S_BOGUS;
        }
        return 0;

    case S_TAG_SLASH:
        if (c == '>') {
            start_tag_end(b, 1);
            return 0;
        }
        charge(s, COST_BOGUS);          /* the '/' begins a bogus one */
        b->state = S_BOGUS;
        return 1;

    case S_ATTR_NAME:
        if (is_html_name(c) && b->name_len < NAME_MAX_LEN) {
            b->name_len++;
            return 0;
        }
        b->state = S_ATTR_AFTER;
        return 1;

    case S_ATTR_AFTER:
        if (is_blank(c)) {
            return 0;
        }
        if (c == '=') {
            b->state = S_ATTR_EQ;
            return 0;
        }
        b->state = S_TAG;               /* an attribute without a value */
        return 1;

    case S_ATTR_EQ:
        if (is_blank(c)) {
            return 0;
        }
        if (c == '"' || c == '\'') {
            b->state = S_VALUE_Q;
            b->quote = (unsigned char) c;
            return 0;
        }
        b->state = S_VALUE_U;
        return 1;

    case S_VALUE_Q:
        if (c == b->quote) {
            b->state = S_TAG;
        } else if (c == '&') {
            reference(b, here);
        }
        return 0;

    case S_VALUE_U:
        /* Up to a blank or '>' ("/>" does not end it). */
        if (is_blank(c)) {
            b->state = S_TAG;
        } else if (c == '>') {
            b->state = S_TAG;
            return 1;
        } else if (c == '&') {
            reference(b, here);
        }
        return 0;

    case S_BOGUS:
        /* Skipped up to a blank, '>' or "/>". */
        if (is_blank(c)) {
            b->state = S_TAG;
        } else if (c == '>') {
            start_tag_end(b, 0);
        } else if (c == '/') {
            b->state = S_BOGUS_SLASH;
        }
        return 0;

    case S_BOGUS_SLASH:
        if (c == '>') {
            start_tag_end(b, 1);
            return 0;
        }
        b->state = S_BOGUS;
        return 1;

    /*
     * htmlParseDocTypeDecl: blanks, a name, blanks, then maybe "SYSTEM"
     * and a quoted literal, or "PUBLIC" and one or two; blanks; then
     * anything up to '>'.  Quotes count only where a literal may begin.
     */
    case S_DT_BLANK:
        if (is_blank(c)) {
            return 0;
        }
        b->state = S_DT_NAME0;
        return 1;

    case S_DT_NAME0:
        if (!complete) {
            return 0;
        }
        b->state = is_name_start(cp) ? S_DT_NAME : S_DT_BLANK2;
        return b->state == S_DT_BLANK2;

    case S_DT_NAME:
        if (!complete || is_name(cp)) {
            return 0;
        }
        b->state = S_DT_BLANK2;
        return 1;

    case S_DT_BLANK2:
        if (is_blank(c)) {
            return 0;
        }
        if ((c & ~0x20u) == 'S' || (c & ~0x20u) == 'P') {
            b->state = S_DT_KEYWORD;
            b->quote = (unsigned char) (c & ~0x20u);
            b->sub = 1;
            return 0;
        }
        b->state = S_DT_TAIL;
        return 1;

    case S_DT_KEYWORD:
        if ((c & ~0x20u)
            == (unsigned) (b->quote == 'S' ? "SYSTEM" : "PUBLIC")[b->sub])
        {
            if (++b->sub == 6) {
                b->state = S_DT_BLANK3;
            }
            return 0;
        }
        b->state = S_DT_REST;           /* not a keyword: nothing read */
        return 1;

    case S_DT_BLANK3:
        if (is_blank(c)) {
            return 0;
        }
        if (c == '"' || c == '\'') {
            /* sub: 1 if this is PUBLIC's literal, a system one may follow */
            b->sub = b->quote == 'P';
            b->quote = (unsigned char) c;
            b->state = S_DT_LITERAL;
            return 0;
        }
        b->state = S_DT_TAIL;
        return 1;

    case S_DT_LITERAL:
        if (c == b->quote) {
            b->state = b->sub ? S_DT_BLANK4 : S_DT_TAIL;
        }
        return 0;

    case S_DT_BLANK4:
        if (is_blank(c)) {
            return 0;
        }
        if (c == '"' || c == '\'') {
            b->sub = 0;
            b->quote = (unsigned char) c;
            b->state = S_DT_LITERAL;
            return 0;
        }
        b->state = S_DT_TAIL;
        return 1;

    case S_DT_TAIL:
        if (is_blank(c)) {
            return 0;
        }
        b->state = S_DT_REST;
        return 1;

    case S_DT_REST:
        if (c == '>') {
            text_again(b);
        }
        return 0;

    case S_RAW:
        if (c == '<') {
            b->state = S_RAW_LT;
            b->start = here;
        }
        return 0;

    case S_RAW_LT:
        if (c == '/') {
            /* The parser can parse the raw text up to here. */
            if (b->la == 0) {
                b->run = b->start;
            }
            b->state = S_RAW_LT_SLASH;
            return 0;
        }
        b->state = S_RAW;
        return 1;

    case S_RAW_LT_SLASH:
        /* htmlParseScript stops at "</" and an ASCII letter only. */
        if (is_letter(c)) {
            b->state = S_END_NAME;
            b->la |= LA_PLAIN;
            b->name_len = 0;
            name_byte(b, c);
            charge(s, COST_END_TAG);
            return 0;
        }
        b->state = S_RAW;
        return 1;
    }
    return 0;
}

/* The look-ahead machines, on one byte. */
static inline unsigned
look_ahead(unsigned la, unsigned c)
{
    unsigned out = la & LA_OUT, dq = la & LA_DQUOTE, sq = la & LA_SQUOTE;

    switch (c) {
    case '>':
        return la & ~(LA_OUT | LA_PLAIN);
    case '"':
        return (la & ~(LA_OUT | LA_DQUOTE)) | (out ? LA_DQUOTE : 0)
               | (dq ? LA_OUT : 0);
    case '\'':
        return (la & ~(LA_OUT | LA_SQUOTE)) | (out ? LA_SQUOTE : 0)
               | (sq ? LA_OUT : 0);
    default:
        return la;
    }
}

/* The parser may be handed the input up to here. */
static inline int
safe(const sh_budget_t *b)
{
    return (b->state == S_DATA || b->state == S_RAW) && b->la == 0
           && b->utf8_need == 0;
}

static inline void
mark_safe(sh_budget_t *b, size_t off)
{
    if (b->safe_first == SH_BUDGET_NONE) {
        b->safe_first = off;
    }
    b->safe_last = off;
}

size_t
sh_budget_scan(sh_budget_t *b, const char *data, size_t n)
{
    const unsigned char *p = (const unsigned char *) data;
    scan_t               s;
    size_t               i = 0, j, cont;
    unsigned             c, cp, mask;
    int                  complete;

    b->safe_first = SH_BUDGET_NONE;
    b->safe_last = SH_BUDGET_NONE;
    if (b->verdict != SH_BUDGET_OK || b->sync) {
        return 0;
    }
    s.b = b;
    s.base = b->pos;
    s.stop = 0;
    s.at = 0;
    if (safe(b)) {
        mark_safe(b, 0);
    }

    while (i < n) {
        /* Text: the bytes that matter to nobody, skipped in bulk. */
        if (b->la == 0 && b->utf8_need == 0
            && (b->state == S_DATA || b->state == S_RAW))
        {
            mask = b->state == S_DATA ? SP_DATA : SP_RAW;
            cont = 0;
            for (j = i; j < n && !(special[p[j]] & mask); j++) {
                cont += (p[j] & 0xC0) == 0x80;
            }
            b->chars += (j - i) - cont;
            if (j == n) {
                /* Ends in an incomplete character?  (At most three of
                 * its bytes, and the run began with a whole one.) */
                for (j = n; j > i && n - j < 4; j--) {
                    c = p[j - 1];
                    if ((c & 0xC0) != 0x80) {
                        if (c >= 0xC0) {
                            unsigned len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;

                            if (n - (j - 1) < len) {
                                b->utf8_need = (unsigned char)
                                               (len - (n - (j - 1)));
                                b->cp = c & (0x3F >> (len - 1));
                                for (cont = j; cont < n; cont++) {
                                    b->cp = (b->cp << 6) | (p[cont] & 0x3F);
                                }
                            }
                        }
                        break;
                    }
                }
                if (b->utf8_need == 0) {
                    mark_safe(b, n);
                } else if (j - 1 > i) {
                    mark_safe(b, j - 1);
                }
                i = n;
                break;
            }
            if (j > i) {
                mark_safe(b, j);
            }
            i = j;
        }

        /* One byte at a time: decode it, count it, then the state. */
        c = p[i];
        complete = 0;
        cp = c;
        if (c < 0x80) {
            b->utf8_need = 0;
            complete = 1;
            b->chars++;
        } else if (c >= 0xC0) {
            b->utf8_need = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
            b->cp = c & (0x3F >> b->utf8_need);
            b->chars++;
        } else if (b->utf8_need > 0) {
            b->cp = (b->cp << 6) | (c & 0x3F);
            if (--b->utf8_need == 0) {
                complete = 1;
                cp = b->cp;
            }
        }
        s.i = i;
        if (b->la != 0) {
            b->la = (unsigned char) look_ahead(b->la, c);
            if (c == '>' && b->rescans > 0) {
                charge(&s, COST_LOOK_BYTE
                           * (b->rescans * (b->pos + i) - b->rescan_sum));
                b->rescans = 0;
                b->rescan_sum = 0;
            }
        }
        while (!s.stop && step(&s, c, cp, complete)) {
            /* the byte ended a construct: scan it again */
        }
        if (s.stop) {
            break;
        }
        i++;
        if (b->pos + i - b->run > SH_PENDING_MAX) {
            stop_at(&s, b->pos + i, SH_BUDGET_TOO_LARGE, SH_BUDGET_WHY_RUN);
            break;
        }
        if (safe(b)) {
            mark_safe(b, i);
        }
        if (b->sync) {
            break;
        }
    }

    if (s.stop) {
        /* Where a construct began, or this byte: no safe point after. */
        i = s.at;
        if (b->safe_first != SH_BUDGET_NONE && b->safe_first > i) {
            b->safe_first = SH_BUDGET_NONE;
            b->safe_last = SH_BUDGET_NONE;
        } else if (b->safe_last != SH_BUDGET_NONE && b->safe_last > i) {
            b->safe_last = i;
        }
    } else if (b->pos + i - b->run > SH_PENDING_MAX) {
        /* A run of text too long: the parser would hold it all. */
        b->verdict = SH_BUDGET_TOO_LARGE;
        b->why = SH_BUDGET_WHY_RUN;
    }
    b->pos += i;
    return i;
}

void
sh_budget_sync(sh_budget_t *b, const char *element)
{
    if (!b->sync) {
        return;
    }
    b->sync = 0;
    if (element != NULL && strcmp(element, "script") == 0) {
        b->raw = KIND_SCRIPT;
    } else if (element != NULL && strcmp(element, "style") == 0) {
        b->raw = KIND_STYLE;
    } else {
        b->raw = KIND_OTHER;
    }
    text_again(b);
}


/* ---- what the parser reports ------------------------------------------ */

/*
 * The parser reports on input the scanner has passed already, and the
 * scanner may have stopped the page further on: the parser still reads
 * what it was handed before that point, and may go over its own budget
 * there, as it would have had it been handed that input earlier.  Over
 * budget is then the verdict whatever the scanner found later (a run too
 * large), so that it does not depend on the chunking.
 */
static int
parser_over(sh_budget_t *b, sh_budget_why_t why)
{
    b->parser_over = 1;
    if (b->verdict != SH_BUDGET_EXCEEDED) {
        b->verdict = SH_BUDGET_EXCEEDED;
        b->why = why;
    }
    return -1;
}

int
sh_budget_parser(sh_budget_t *b, uint64_t pos, int error,
                 sh_budget_walk_t walk, size_t depth, size_t names)
{
    uint64_t units = error ? COST_ERROR : 0;

    if (b->parser_over) {
        return -1;
    }
    if (walk == SH_BUDGET_WALK_NAMES) {
        units += (uint64_t) depth * COST_STEP;
    } else if (walk == SH_BUDGET_WALK_PRIORITY && b->walked_at != pos + 1) {
        /* One walk an end tag, however many elements it closes (and
         * reports, each, as an error at the same place). */
        units += (uint64_t) depth * (COST_STEP + COST_STEP_PRIO);
        b->walked_at = pos + 1;
    }
    b->parser += units;
    if (b->parser > pos * SH_BUDGET_PARSER_PER_BYTE + SH_BUDGET_PARSER_FIXED) {
        return parser_over(b, SH_BUDGET_WHY_PARSER);
    }
    if (names > SH_BUDGET_NAMES_MAX) {
        return parser_over(b, SH_BUDGET_WHY_NAMES);
    }
    return 0;
}
