/*
 * sh_tokenizer_model.c -- the markup scanner (sh_tokenizer_model.h).
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
 * stops and asks (sh_tokenizer_model_sync): the caller hands the parser
 * everything up to that end tag and looks at the element the parser is in.
 *
 * The model is fenced at run time, not here: sh_html uses the scanner's
 * cut points, script spans and sync only when the libxml2 it was built
 * with and the one it runs with are both of 2.9.14's class
 * (sh_libxml_modelled, sh_html.h).  Under any other libxml2 the page is
 * parsed in one piece, the scanner's charges are caps on the markup
 * (attributes, references, names, comments per byte; SH_PENDING_MAX),
 * and its sync is answered as HTML5 does (only the element's own end tag
 * ends script text).
 */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <libxml/parserInternals.h>

#include "sh_tokenizer_model.h"

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
    S_AMP_NAME,     /* its entity's name */
    S_COUNT
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

/*
 * Most bytes change nothing in the state they are met in: runs of them are
 * skipped in bulk, up to a byte of a class the state stops at (run_stop;
 * 0: none, one byte at a time).  The look-ahead stops at quotes and '>'.
 */
#define C_LT        0x001
#define C_AMP       0x002
#define C_GT        0x004
#define C_DQUOTE    0x008
#define C_SQUOTE    0x010
#define C_BLANK     0x020
#define C_SLASH     0x040
#define C_DASH      0x080
#define C_BANG      0x100
#define C_NOT_NAME  0x200       /* not in an element or attribute name */
#define C_NOT_BLANK 0x400
#define C_SUSPECT   0x800       /* a C0 control not blank, or 0xEF */

static uint16_t cls[256];
static uint16_t run_stop[S_COUNT];

/* The same as bytes, where they are few: searched for sixteen at a time;
 * [1]: with the look-ahead's ('>' and quotes). */
static const char *const run_bytes[S_COUNT][2] = {
    [S_DATA] = { "<&", "<&>\"'" }, [S_RAW] = { "<", "<>\"'" },
    [S_COMMENT] = { "->!", "->!\"'" }, [S_VALUE_Q] = { "\"'&", "\"'&>" },
    [S_END_REST] = { ">", ">\"'" }, [S_PI_REST] = { ">", ">\"'" },
    [S_DT_REST] = { ">", ">\"'" }, [S_DT_LITERAL] = { "\"'", "\"'>" },
};
static unsigned char run_len[S_COUNT][2];


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

static void
init_tables(void)
{
    unsigned c;

    for (c = 0; c < 256; c++) {
        if (c >= 0x80 || !is_html_name(c)) {
            cls[c] |= C_NOT_NAME;
        }
        if (!is_blank(c)) {
            cls[c] |= C_NOT_BLANK;
        }
        if (c < 0x20 && !is_blank(c)) {
            cls[c] |= C_SUSPECT;
        }
    }
    cls['<'] |= C_LT;
    cls['&'] |= C_AMP;
    cls['>'] |= C_GT;
    cls['"'] |= C_DQUOTE;
    cls['\''] |= C_SQUOTE;
    cls[' '] |= C_BLANK;
    cls['\t'] |= C_BLANK;
    cls['\n'] |= C_BLANK;
    cls['\r'] |= C_BLANK;
    cls['/'] |= C_SLASH;
    cls['-'] |= C_DASH;
    cls['!'] |= C_BANG;
    cls[0xEF] |= C_SUSPECT;

    run_stop[S_DATA] = C_LT | C_AMP;
    run_stop[S_RAW] = C_LT;
    run_stop[S_COMMENT] = C_DASH | C_GT | C_BANG;
    run_stop[S_VALUE_Q] = C_DQUOTE | C_SQUOTE | C_AMP;
    run_stop[S_VALUE_U] = C_BLANK | C_GT | C_AMP;
    run_stop[S_BOGUS] = C_BLANK | C_GT | C_SLASH;
    run_stop[S_END_REST] = C_GT;
    run_stop[S_PI_REST] = C_GT;
    run_stop[S_DT_REST] = C_GT;
    run_stop[S_DT_LITERAL] = C_DQUOTE | C_SQUOTE;
    run_stop[S_ATTR_NAME] = C_NOT_NAME;
    run_stop[S_TAG_NAME] = C_NOT_NAME;
    run_stop[S_END_NAME] = C_NOT_NAME;
    run_stop[S_TAG] = C_NOT_BLANK;
    run_stop[S_ATTR_AFTER] = C_NOT_BLANK;
    run_stop[S_ATTR_EQ] = C_NOT_BLANK;
    for (c = 0; c < S_COUNT; c++) {
        if (run_bytes[c][0] != NULL) {
            run_len[c][0] = (unsigned char) strlen(run_bytes[c][0]);
            run_len[c][1] = (unsigned char) strlen(run_bytes[c][1]);
        }
    }
}

void
sh_tokenizer_model_init(sh_tokenizer_model_t *b)
{
    if (cls['<'] == 0) {
        init_tables();          /* idempotent: a race is harmless */
    }
    memset(b, 0, sizeof(*b));
    b->state = S_DATA;
    b->safe_first = SH_TOKENIZER_MODEL_NONE;
    b->safe_last = SH_TOKENIZER_MODEL_NONE;
}

/* ---- the scanner -------------------------------------------------------- */

typedef struct {
    sh_tokenizer_model_t *b;
    const unsigned char  *p;
    uint64_t              base;     /* b->pos of p[0] */
    size_t                i;        /* the byte being scanned */
    size_t                counted;  /* b->budget.chars counts p[0..counted) */
    int                   stop;     /* stop at `at`: over budget, too large */
    size_t                at;
} scan_t;

static void
stop_at(scan_t *s, uint64_t pos, sh_budget_verdict_t v, sh_budget_why_t why)
{
    sh_budget_stop(&s->b->budget, v, why);
    s->stop = 1;
    s->at = pos > s->base ? (size_t) (pos - s->base) : 0;
}

/* The budget's characters, up to p[upto]: those of the piece not counted
 * yet. */
static inline void
count_to(scan_t *s, size_t upto)
{
    if (upto > s->counted) {
        s->b->budget.chars += sh_budget_count_chars(s->p + s->counted,
                                                    upto - s->counted);
        s->counted = upto;
    }
}

/*
 * The charges are over the allowance of the characters counted so far:
 * count those up to the byte being scanned (s->i), included; still over,
 * the page ends before the construct (or at this byte, in text).
 */
static void
over_allowance(scan_t *s)
{
    sh_tokenizer_model_t *b = s->b;

    count_to(s, s->i + 1);
    if (sh_budget_markup_over(&b->budget)) {
        stop_at(s, (b->state == S_DATA || b->state == S_RAW)
                   ? s->base + s->i : b->start,
                SH_BUDGET_EXCEEDED, SH_BUDGET_WHY_MARKUP);
    }
}

/*
 * Charge what a construct may cost.  The characters are counted only when
 * the charges come near the allowance of those counted so far: the
 * decision is the same, and most bytes are counted in bulk, once.
 */
static inline void
charge(scan_t *s, uint64_t units)
{
    sh_tokenizer_model_t *b = s->b;

    b->budget.cost += units;
    if (sh_budget_markup_over(&b->budget)) {
        over_allowance(s);
    }
}

/* A name (element, attribute, end tag) begins or goes on. */
static inline void
name_byte(sh_tokenizer_model_t *b, unsigned c)
{
    if (b->name_len < sizeof(b->name)) {
        b->name[b->name_len] = (char) ((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
    b->name_len++;
}

/* The name's bytes from p[j] on, up to `lim` at most: returns where they
 * end. */
static inline size_t
name_bytes(sh_tokenizer_model_t *b, const unsigned char *p, size_t j,
           size_t lim)
{
    size_t k;

    for (k = j; k < lim && !(cls[p[k]] & C_NOT_NAME); k++) {
        /* its length first */
    }
    for (; j < k && b->name_len < sizeof(b->name); j++) {
        name_byte(b, p[j]);
    }
    b->name_len = (unsigned char) (b->name_len + (k - j));
    return k;
}

/* Is the name p[0..len) (name bytes: case aside, a letter is itself)
 * the lower-case `t`? */
static inline int
name_is(const unsigned char *p, size_t len, const char *t, size_t tlen)
{
    size_t k;

    if (len != tlen) {
        return 0;
    }
    for (k = 0; k < len; k++) {
        if ((p[k] | 0x20) != (unsigned char) t[k]) {
            return 0;
        }
    }
    return 1;
}

/* The element named p[0..len): script, style or another. */
static inline unsigned
kind_of(const unsigned char *p, size_t len)
{
    if (name_is(p, len, "script", 6)) {
        return KIND_SCRIPT;
    }
    if (name_is(p, len, "style", 5)) {
        return KIND_STYLE;
    }
    return KIND_OTHER;
}

static unsigned
name_kind(const sh_tokenizer_model_t *b)
{
    return kind_of((const unsigned char *) b->name, b->name_len);
}

/* The construct ended with this byte: back to text, or to raw text. */
static inline void
text_again(sh_tokenizer_model_t *b)
{
    b->state = b->raw ? S_RAW : S_DATA;
}

/* A start tag ended with this byte; `empty`: with "/>" (no raw text). */
static void
start_tag_end(sh_tokenizer_model_t *b, int empty)
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
 * (sh_tokenizer_model_sync), once it has been handed everything up to
 * here.  It can be, unless it is still waiting on a look-ahead (a
 * malformed tag before).
 */
static void
end_tag_end(scan_t *s)
{
    sh_tokenizer_model_t *b = s->b;

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
reference(sh_tokenizer_model_t *b, uint64_t here)
{
    if (b->state == S_DATA) {
        b->start = here;        /* over budget, the text ends before it */
    }
    b->ret = b->state;
    b->state = S_AMP;
}

static int
first_entity(const sh_tokenizer_model_t *b)
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
rescan(sh_tokenizer_model_t *b)
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
    sh_tokenizer_model_t *b = s->b;
    uint64_t              here = s->base + s->i;

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
safe(const sh_tokenizer_model_t *b)
{
    return (b->state == S_DATA || b->state == S_RAW) && b->la == 0
           && b->utf8_need == 0;
}

static inline void
mark_safe(sh_tokenizer_model_t *b, size_t off)
{
    if (b->safe_first == SH_TOKENIZER_MODEL_NONE) {
        b->safe_first = off;
    }
    b->safe_last = off;
}


/*
 * The first of p[i..n) that is one of the `nt` bytes t[] (n if none),
 * sixteen bytes at a time.
 */
static inline __attribute__((always_inline)) size_t
find_any(const unsigned char *p, size_t i, size_t n, const unsigned char *t,
         unsigned nt)
{
    unsigned k;
#ifdef __SSE2__
    __m128i  v, hit, b0, b1, b2, b3, b4;
    unsigned m;

    b0 = _mm_set1_epi8((char) t[0]);
    b1 = nt > 1 ? _mm_set1_epi8((char) t[1]) : b0;
    b2 = nt > 2 ? _mm_set1_epi8((char) t[2]) : b0;
    b3 = nt > 3 ? _mm_set1_epi8((char) t[3]) : b0;
    b4 = nt > 4 ? _mm_set1_epi8((char) t[4]) : b0;
    while (i + 16 <= n) {
        v = _mm_loadu_si128((const __m128i *) (p + i));
        hit = _mm_cmpeq_epi8(v, b0);
        if (nt > 1) {
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, b1));
        }
        if (nt > 2) {
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, b2));
        }
        if (nt > 3) {
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, b3));
        }
        if (nt > 4) {
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, b4));
        }
        m = (unsigned) _mm_movemask_epi8(hit);
        if (m != 0) {
            return i + (size_t) __builtin_ctz(m);
        }
        i += 16;
    }
#endif
    for (; i < n; i++) {
        for (k = 0; k < nt; k++) {
            if (p[i] == t[k]) {
                return i;
            }
        }
    }
    return i;
}

/*
 * Text ran to the end of the piece, from p[i]: does it end in an
 * incomplete character?  (At most three of its bytes, and the run began
 * with a whole one.)  The parser may be handed the input up to before it.
 */
static void
tail(sh_tokenizer_model_t *b, const unsigned char *p, size_t i, size_t n)
{
    size_t   j, k;
    unsigned c, len;

    for (j = n; j > i && n - j < 4; j--) {
        c = p[j - 1];
        if ((c & 0xC0) == 0x80) {
            continue;
        }
        if (c >= 0xC0) {
            len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            if (n - (j - 1) < len) {
                b->utf8_need = (unsigned char) (len - (n - (j - 1)));
                b->cp = c & (0x3F >> (len - 1));
                for (k = j; k < n; k++) {
                    b->cp = (b->cp << 6) | (p[k] & 0x3F);
                }
                if (j - 1 > i) {
                    mark_safe(b, j - 1);
                }
                return;
            }
        }
        break;
    }
    mark_safe(b, n);
}

/*
 * A tag from p[i] ('<' in text, no look-ahead pending): when it is <name>
 * or </name>, or <name and a blank, complete in p[i..n), at once; returns
 * where the scan goes on (in text, or in S_TAG).  Otherwise returns i,
 * having changed nothing.
 */
static size_t
element(scan_t *s, const unsigned char *p, size_t i, size_t n)
{
    sh_tokenizer_model_t *b = s->b;
    size_t                j = i + 1, k, lim;
    int                   end = 0;

    if (j < n && p[j] == '/') {
        end = 1;
        j++;
    }
    if (j >= n || !is_letter(p[j])) {
        return i;
    }
    k = j;
    lim = n - j > NAME_MAX_LEN ? j + NAME_MAX_LEN : n;
    while (j < lim && !(cls[p[j]] & C_NOT_NAME)) {
        j++;
    }
    if (j >= n || (p[j] != '>' && (end || !is_blank(p[j])))) {
        return i;
    }
    b->run = s->base + i;               /* the text before can be parsed */
    b->start = s->base + i;
    b->kind = (unsigned char) kind_of(p + k, j - k);
    s->i = j;                           /* the charge counts to its end */
    if (end) {
        b->state = S_END_REST;
        charge(s, COST_END_TAG);
        if (!s->stop) {
            end_tag_end(s);
        }
        return j + 1;
    }
    b->state = S_TAG;
    b->nattrs = 0;
    charge(s, COST_TAG);
    if (p[j] == '>') {
        start_tag_end(b, 0);
    } else {
        b->la = LA_OUT;                 /* the attributes follow */
    }
    return j + 1;
}

/*
 * An attribute from p[i] (a name's first byte, in a tag): all of it when
 * it is name="value" (or '') with no '&' in the value, complete in
 * p[i..n): returns where it ends, in state S_TAG.  Otherwise returns i,
 * having changed nothing: the states take it byte by byte.
 */
static size_t
attribute(scan_t *s, const unsigned char *p, size_t i, size_t n)
{
    sh_tokenizer_model_t *b = s->b;
    size_t                j = i + 1, k, lim;
    unsigned char         t[2];

    lim = n - i > NAME_MAX_LEN ? i + NAME_MAX_LEN : n;
    while (j < lim && !(cls[p[j]] & C_NOT_NAME)) {
        j++;
    }
    if (j + 2 >= n || p[j] != '=' || (p[j + 1] != '"' && p[j + 1] != '\'')) {
        return i;
    }
    t[0] = p[j + 1];
    t[1] = '&';
    k = find_any(p, j + 2, n, t, 2);
    if (k == n || p[k] != t[0]) {
        return i;
    }
    s->i = k;                           /* the charge counts to its end */
    charge(s, COST_ATTR + (uint64_t) COST_ATTR_CMP * b->nattrs);
    b->nattrs++;
    return k + 1;
}

/*
 * Does p[0..n) hold a character that libxml2 reports as invalid (IS_CHAR)?
 * A C0 control other than tab, line feed and carriage return (NUL never
 * comes: sh_decode replaced it), or U+FFFE, U+FFFF (EF BF BE, EF BF BF).
 */
static inline int
invalid_at(const unsigned char *p, size_t k, size_t n)
{
    return (cls[p[k]] & C_SUSPECT)
           && (p[k] != 0xEF
               || (k + 2 < n && p[k + 1] == 0xBF
                   && (p[k + 2] & 0xFE) == 0xBE));
}

static int
invalid_chars(const unsigned char *p, size_t n)
{
    size_t   k = 0, end;
#ifdef __SSE2__
    __m128i  v, m;

    /* Sixteen bytes at a time past those with no suspect byte (a C0
     * control not blank, 0xEF); a block with one is checked byte by
     * byte below. */
    for ( ;; ) {
        while (k + 16 <= n) {
            v = _mm_loadu_si128((const __m128i *) (p + k));
            m = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v);
            m = _mm_andnot_si128(
                    _mm_or_si128(_mm_or_si128(
                        _mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                        _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                        _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))), m);
            m = _mm_or_si128(m, _mm_cmpeq_epi8(v,
                                               _mm_set1_epi8((char) 0xEF)));
            if (_mm_movemask_epi8(m) != 0) {
                break;
            }
            k += 16;
        }
        if (k + 16 > n) {
            break;
        }
        for (end = k + 16; k < end; k++) {
            if (invalid_at(p, k, n)) {
                return 1;
            }
        }
    }
#endif
    for (; k < n; k++) {
        if (invalid_at(p, k, n)) {
            return 1;
        }
    }
    return 0;
}

/*
 * Script or style text from p[0], at a character's start: up to the "</"
 * and ASCII letter that stops htmlParseScript, or to the last whole
 * character of p[0..n).  A '<' too near the end to tell ends it too.
 * Returns its length (0: none); sets
 * b->raw_text when none of them is invalid.  Nothing in it changes the
 * state or costs anything.
 */
static size_t
raw_run(sh_tokenizer_model_t *b, const unsigned char *p, size_t n)
{
    static const unsigned char lt[] = "<";
    size_t   j = 0, k;

    /* Not beyond what the parser may hold (the scan stops there). */
    if (b->pos - b->run >= SH_PENDING_MAX) {
        return 0;
    }
    if (n > SH_PENDING_MAX - (b->pos - b->run)) {
        n = (size_t) (SH_PENDING_MAX - (b->pos - b->run));
    }
    for ( ;; ) {
        j = find_any(p, j, n, lt, 1);
        if (j == n) {
            /* an incomplete character at the end stays out */
            for (k = n; k > 0 && n - k < 3 && (p[k - 1] & 0xC0) == 0x80; k--) {
                /* its continuation bytes */
            }
            if (k > 0 && p[k - 1] >= 0xC0
                && n - (k - 1) < (p[k - 1] >= 0xF0 ? 4u
                                  : p[k - 1] >= 0xE0 ? 3u : 2u))
            {
                j = k - 1;
            }
            break;
        }
        if (j + 2 >= n || (p[j + 1] == '/' && is_letter(p[j + 2]))) {
            break;
        }
        j++;                            /* the '<' is text */
    }
    if (j > 0) {
        b->raw_text = !invalid_chars(p, j);
    }
    return j;
}

/*
 * Text: the bytes that matter to nobody; the parser may be handed the
 * input anywhere in it.  (run_bytes[][0], as constants: find_any is
 * inlined, and specialised.)  Returns where the run ends.
 */
static inline size_t
skip_text(sh_tokenizer_model_t *b, const unsigned char *p, size_t i,
          size_t n)
{
    size_t j;

    j = b->state == S_DATA
        ? find_any(p, i, n, (const unsigned char *) "<&", 2)
        : find_any(p, i, n, (const unsigned char *) "<", 1);
    if (j == n) {
        tail(b, p, i, n);
        return n;
    }
    if (j > i) {
        mark_safe(b, j);
    }
    return j;
}

/* In a construct: the run of its contents that changes nothing in the
 * state, up to a byte of a class the state stops at.  Returns where it
 * ends. */
static inline size_t
skip_contents(sh_tokenizer_model_t *b, const unsigned char *p, size_t i,
              size_t n)
{
    unsigned stop = run_stop[b->state], k;
    size_t   j, lim;

    if (b->la != 0) {
        stop |= C_GT | C_DQUOTE | C_SQUOTE;
    }
    lim = n;
    if ((b->state == S_ATTR_NAME || b->state == S_TAG_NAME
         || b->state == S_END_NAME)
        && n - i > (size_t) (NAME_MAX_LEN - b->name_len))
    {
        lim = i + (NAME_MAX_LEN - b->name_len);
    }
    k = b->la != 0;
    if (b->state == S_TAG_NAME || b->state == S_END_NAME) {
        /* a name: its first bytes kept, lower-cased */
        j = name_bytes(b, p, i, lim);
    } else if (run_bytes[b->state][k] != NULL) {
        j = find_any(p, i, lim, (const unsigned char *)
                     run_bytes[b->state][k], run_len[b->state][k]);
    } else {
        for (j = i; j < lim && !(cls[p[j]] & stop); j++) {
            /* nothing in it matters */
        }
    }
    if (b->state == S_ATTR_NAME) {
        b->name_len = (unsigned char) (b->name_len + (j - i));
    }
    if (j > i) {
        b->utf8_need = 0;
        if (b->state == S_COMMENT) {
            b->sub = 0;     /* no dash run goes through */
        }
    }
    return j;
}

/* One byte of UTF-8: returns the code point it completes (*complete 1),
 * or the byte. */
static inline unsigned
decode(sh_tokenizer_model_t *b, unsigned c, int *complete)
{
    *complete = 0;
    if (c < 0x80) {
        b->utf8_need = 0;
        *complete = 1;
    } else if (c >= 0xC0) {
        b->utf8_need = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
        b->cp = c & (0x3F >> b->utf8_need);
    } else if (b->utf8_need > 0) {
        b->cp = (b->cp << 6) | (c & 0x3F);
        if (--b->utf8_need == 0) {
            *complete = 1;
            return b->cp;
        }
    }
    return c;
}

/* The page stopped at `at` (where a construct began, or this byte): no
 * safe point after it.  Returns `at`. */
static size_t
stopped(sh_tokenizer_model_t *b, size_t at)
{
    if (b->safe_first != SH_TOKENIZER_MODEL_NONE && b->safe_first > at) {
        b->safe_first = SH_TOKENIZER_MODEL_NONE;
        b->safe_last = SH_TOKENIZER_MODEL_NONE;
    } else if (b->safe_last != SH_TOKENIZER_MODEL_NONE && b->safe_last > at) {
        b->safe_last = at;
    }
    return at;
}

size_t
sh_tokenizer_model_scan(sh_tokenizer_model_t *b, const char *data, size_t n)
{
    const unsigned char *p = (const unsigned char *) data;
    scan_t               s;
    size_t               i = 0, j;
    unsigned             c, cp;
    int                  complete;

    b->safe_first = SH_TOKENIZER_MODEL_NONE;
    b->safe_last = SH_TOKENIZER_MODEL_NONE;
    b->raw_text = 0;
    if (b->budget.verdict != SH_BUDGET_OK || b->sync) {
        return 0;
    }
    s.b = b;
    s.p = p;
    s.base = b->pos;
    s.counted = 0;
    s.stop = 0;
    s.at = 0;
    if (safe(b)) {
        mark_safe(b, 0);
    }

    while (i < n) {
        /* Script or style text: a call of its own (sh_html may skip it). */
        if (b->state == S_RAW && b->la == 0 && b->utf8_need == 0) {
            if (i > 0) {
                break;
            }
            j = raw_run(b, p, n);
            if (j > 0) {
                mark_safe(b, j);
                i = j;
                break;
            }
        }
        if (run_stop[b->state] != 0 && b->utf8_need == 0) {
            i = b->la == 0 && (b->state == S_DATA || b->state == S_RAW)
                ? skip_text(b, p, i, n) : skip_contents(b, p, i, n);
            if (i == n) {
                break;
            }
        }

        /*
         * The commonest construct, name="value" in a tag, at once (the
         * byte-by-byte states below would take five steps): when the
         * look-ahead is in no quote, the value's quotes take it in and
         * out of one, and nothing else in the value matters to it.
         */
        if (b->state == S_DATA && p[i] == '<' && b->la == 0) {
            j = element(&s, p, i, n);
            if (s.stop) {
                break;
            }
            if (j > i) {
                i = j;
                if (safe(b)) {
                    mark_safe(b, i);
                }
                if (b->sync) {
                    break;
                }
                continue;
            }
        }
        if (b->state == S_TAG && (b->la & ~LA_OUT) == 0
            && is_html_name_start(p[i]))
        {
            s.i = i;
            j = attribute(&s, p, i, n);
            if (s.stop) {
                break;
            }
            if (j > i) {
                i = j;
                continue;
            }
        }

        /* One byte at a time: decode it, count it, then the state. */
        c = p[i];
        cp = decode(b, c, &complete);
        s.i = i;
        if (b->la != 0 && (cls[c] & (C_GT | C_DQUOTE | C_SQUOTE))) {
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
        i = stopped(b, s.at);
    } else if (b->pos + i - b->run > SH_PENDING_MAX) {
        /* A run of text too long: the parser would hold it all. */
        sh_budget_stop(&b->budget, SH_BUDGET_TOO_LARGE, SH_BUDGET_WHY_RUN);
    }
    count_to(&s, i);                    /* the piece's bytes go with it */
    b->pos += i;
    return i;
}

void
sh_tokenizer_model_sync(sh_tokenizer_model_t *b, const char *element)
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

const char *
sh_tokenizer_model_raw_element(const sh_tokenizer_model_t *b)
{
    switch (b->raw) {
    case KIND_SCRIPT:
        return "script";
    case KIND_STYLE:
        return "style";
    default:
        return NULL;
    }
}
