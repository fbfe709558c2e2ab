/*
 * sh_html.c -- libxml2 HTML push parser, SAX callbacks only.
 *
 * We register startElement, endElement and characters and nothing else, so
 * libxml2 builds no tree: it tokenises, applies HTML's implied-tag rules and
 * hands us text with entities decoded.  Errors go to a handler that drops
 * them (malformed HTML is the norm, not an event).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlversion.h>

/* The oldest libxml2 whose HTML parser this file was written for. */
#if LIBXML_VERSION < 20900
#error "libxml2 2.9 or later is needed"
#endif

/*
 * libxml2 2.12 made the error a structured handler receives const; its
 * fields are read only here.
 */
#if LIBXML_VERSION >= 21200
typedef const xmlError *sh_xml_error_t;
#else
typedef xmlErrorPtr     sh_xml_error_t;
#endif

#include "sh_block.h"
#include "sh_tokenizer_model.h"
#include "sh_html.h"

enum { EL_INLINE = 0, EL_BLOCK, EL_SKIP };

/*
 * Content tracking (sh_html_track_content): the open elements that mark
 * a zone or a link (sh_block.h), innermost last, each with the depth of
 * the element in the document and the zone and link state inside it.
 * libxml2 reports the end of every element it started, innermost first
 * (implied ends included), so the element depth alone tells which entry
 * an end closes.  Markers nested deeper than MARKS_MAX are not tracked:
 * their text keeps the zone around them.
 */
#define MARKS_MAX       64

typedef struct {
    uint32_t      depth;
    unsigned char zone;
    unsigned char links;        /* open <a href> elements, saturating */
} mark_t;

struct sh_html_s {
    htmlParserCtxtPtr ctxt;
    sh_html_text_fn   text;
    sh_html_block_fn  block_end;
    void             *arg;

    unsigned          skip;         /* depth inside skipped elements */
    int               failed;       /* out of memory */
    int               stopped;      /* over budget, or too large */
    int               ended;        /* the parser is past </html> */
    uint32_t          open;         /* open elements, as reported */

    /* Element names are interned in the parser's dictionary, so one name
     * is always the same pointer: remember each pointer's class. */
    const xmlChar    *name_ptr[64];
    unsigned char     name_class[64];
    unsigned char     name_mark[64];    /* sh_block_name_mark */
    uint64_t          name_hash[64];    /* for the tag hook */

    sh_html_tag_fn    tag;              /* every start tag, or NULL */
    void             *tag_arg;

    /* Where the parser may be handed its input, and what it may cost
     * (sh_tokenizer_model.h, sh_budget.h); the input scanned but not
     * handed yet. */
    sh_tokenizer_model_t model;
    uint64_t          fed;          /* bytes handed to the parser */
    char             *hold;
    size_t            nhold;
    size_t            hold_size;

    /* The scanner's model of 2.9.14 drives the parser (sh_libxml_modelled);
     * else the page is held whole and parsed in one piece at the end. */
    int               modelled;

    /* The CPU-time backstop (sh_budget.h): the thread's CPU time when the
     * parser was first handed input, and callbacks since the last look. */
    uint64_t          cpu_start;
    uint64_t          cpu_fed;      /* h->fed at the last look */
    unsigned          calls;

    /* Content tracking, when on. */
    int               content;
    uint32_t          depth;        /* open elements */
    unsigned          nmarks;
    unsigned          has_main;     /* a MAIN zone was opened */
    mark_t            marks[MARKS_MAX];
};

/*
 * The parser's state, read under the model only: from 2.14 the context's
 * instate, name and nameNr are deprecated members, and what they mean
 * follows the new tokenizer.  Built with 2.14 or later, the model is
 * never on (sh_libxml_modelled), and these say "nothing known".
 */
#if LIBXML_VERSION < 21400
#define PARSER_STATE(h, field, other)  ((h)->ctxt->field)
#else
#define PARSER_STATE(h, field, other)  (other)
#endif

/* Past </html>, or stopped: under the model, nothing more counts. */
static int
parser_done(const sh_html_t *h)
{
    int st = PARSER_STATE(h, instate, XML_PARSER_START);

    return st == XML_PARSER_EPILOG || st == XML_PARSER_EOF;
}

static int
eq(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

/*
 * Which elements end a block of text, and which hide their text.  Called
 * for every tag, so a switch on the first letter rather than a search.
 */
static int
classify(const char *n)
{
    switch (n[0]) {
    case 'a':
        return (eq(n, "address") || eq(n, "article") || eq(n, "aside"))
               ? EL_BLOCK : EL_INLINE;
    case 'b':
        return (eq(n, "br") || eq(n, "blockquote") || eq(n, "body"))
               ? EL_BLOCK : EL_INLINE;
    case 'c':
        return (eq(n, "caption") || eq(n, "center")) ? EL_BLOCK : EL_INLINE;
    case 'd':
        return (eq(n, "div") || eq(n, "dd") || eq(n, "dt") || eq(n, "dl")
                || eq(n, "details") || eq(n, "dialog"))
               ? EL_BLOCK : EL_INLINE;
    case 'f':
        return (eq(n, "footer") || eq(n, "form") || eq(n, "figure")
                || eq(n, "figcaption") || eq(n, "fieldset"))
               ? EL_BLOCK : EL_INLINE;
    case 'h':
        if (n[1] >= '1' && n[1] <= '6' && n[2] == '\0') {
            return EL_BLOCK;
        }
        return (eq(n, "hr") || eq(n, "header") || eq(n, "head")
                || eq(n, "html") || eq(n, "hgroup"))
               ? EL_BLOCK : EL_INLINE;
    case 'l':
        return (eq(n, "li") || eq(n, "legend")) ? EL_BLOCK : EL_INLINE;
    case 'm':
        if (eq(n, "math")) {
            return EL_SKIP;
        }
        return (eq(n, "main") || eq(n, "menu")) ? EL_BLOCK : EL_INLINE;
    case 'n':
        if (eq(n, "noscript")) {
            return EL_SKIP;
        }
        return eq(n, "nav") ? EL_BLOCK : EL_INLINE;
    case 'o':
        return (eq(n, "ol") || eq(n, "option") || eq(n, "optgroup"))
               ? EL_BLOCK : EL_INLINE;
    case 'p':
        return (n[1] == '\0' || eq(n, "pre")) ? EL_BLOCK : EL_INLINE;
    case 's':
        if (eq(n, "script") || eq(n, "style") || eq(n, "svg")) {
            return EL_SKIP;
        }
        return (eq(n, "section") || eq(n, "summary") || eq(n, "select"))
               ? EL_BLOCK : EL_INLINE;
    case 't':
        if (eq(n, "template")) {
            return EL_SKIP;
        }
        return (eq(n, "td") || eq(n, "th") || eq(n, "tr") || eq(n, "table")
                || eq(n, "title") || eq(n, "tbody") || eq(n, "thead")
                || eq(n, "tfoot") || eq(n, "textarea"))
               ? EL_BLOCK : EL_INLINE;
    case 'u':
        return eq(n, "ul") ? EL_BLOCK : EL_INLINE;
    default:
        return EL_INLINE;
    }
}

/* FNV-1a: names are short, and the tag hook mixes what it is given */
static uint64_t
name_hash(const xmlChar *name)
{
    uint64_t v = 0xcbf29ce484222325ULL;

    while (*name) {
        v = (v ^ *name++) * 0x100000001b3ULL;
    }
    return v;
}

/* A name met for the first time in its slot: what the element is. */
static __attribute__((noinline)) void
element_learn(sh_html_t *h, unsigned i, const xmlChar *name)
{
    h->name_ptr[i] = name;
    h->name_class[i] = (unsigned char) classify((const char *) name);
    h->name_mark[i] = (unsigned char) sh_block_name_mark((const char *) name);
    h->name_hash[i] = name_hash(name);
}

static inline unsigned
element_slot(sh_html_t *h, const xmlChar *name)
{
    unsigned i = (unsigned) (((uintptr_t) name >> 3) & 63);

    if (h->name_ptr[i] != name) {
        element_learn(h, i, name);
    }
    return i;
}

static int
element_class(sh_html_t *h, const xmlChar *name)
{
    return h->name_class[element_slot(h, name)];
}

static void
end_block(sh_html_t *h)
{
    if (!h->failed && h->block_end(h->arg) != 0) {
        h->failed = 1;
    }
}

/*
 * The parser's share of the budget (sh_budget.h): an error it reported, a
 * walk of its stack of open elements, the names in its dictionary.  Over
 * budget, it stops at once and nothing more of the page is read.
 */
/* Over a cap: nothing more of the page is read. */
static void
stop(sh_html_t *h, sh_budget_why_t why)
{
    sh_budget_over(&h->model.budget, why);
    h->stopped = 1;
    xmlStopParser(h->ctxt);
}

static uint64_t
thread_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        return 0;
    }
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/*
 * The backstop: has the parse taken more CPU time than any real page
 * would, many times over?  Looked at once every CPU_CALLS callbacks and
 * after every CPU_BYTES handed to the parser: a clock read is a system
 * call (one after every piece made fingerprinting 10% slower: the
 * scanner cuts pages at every script).
 */
#define CPU_CALLS  4096
#define CPU_BYTES  (256 * 1024)

static int
over_cpu(sh_html_t *h)
{
    uint64_t limit;

    if (h->cpu_start == 0) {
        return 0;
    }
    h->cpu_fed = h->fed;
    limit = SH_BUDGET_CPU_FIXED_NS + SH_BUDGET_CPU_NS_PER_BYTE * h->fed;
    if (thread_cpu_ns() - h->cpu_start <= limit) {
        return 0;
    }
    stop(h, SH_BUDGET_WHY_CPU);
    return 1;
}

static int
over_budget(sh_html_t *h, int error, sh_budget_walk_t walk)
{
    xmlParserInputPtr in = h->ctxt->input;
    uint64_t          pos;
    size_t            depth, names = (size_t) xmlDictSize(h->ctxt->dict);

    if (h->stopped) {
        return 1;
    }
    if (++h->calls == CPU_CALLS) {
        h->calls = 0;
        if (over_cpu(h)) {
            return 1;
        }
    }
    if (!error && walk == SH_BUDGET_WALK_NONE
        && names <= SH_BUDGET_NAMES_MAX)
    {
        return 0;                   /* the common case: nothing to charge */
    }
    pos = h->fed - (uint64_t) (in->end - in->cur);
    depth = (size_t) PARSER_STATE(h, nameNr, h->open);
    if (sh_budget_parser(&h->model.budget, pos, error, walk, depth,
                         names) != 0)
    {
        h->stopped = 1;
        xmlStopParser(h->ctxt);
    }
    return h->stopped;
}

static void
on_characters(void *ctx, const xmlChar *ch, int n)
{
    sh_html_t *h = ctx;

    /* (Entity names in text go to the dictionary too.) */
    if (over_budget(h, 0, SH_BUDGET_WALK_NONE)) {
        return;
    }

    /*
     * After </html> the push parser (2.9.14) is in its epilogue: it passes
     * on white-space-led text up to the end of the current chunk, then
     * stops at the next chunk's first other byte, so how much of that text
     * got through depended on the chunking.  None does now: the page ends
     * at </html>, whatever the chunking (found by fuzz/fuzz_doc.c).
     */
    if (PARSER_STATE(h, instate, XML_PARSER_CONTENT) == XML_PARSER_EPILOG) {
        return;
    }
    if (h->skip == 0 && !h->failed
        && h->text(h->arg, (const char *) ch, (size_t) n) != 0)
    {
        h->failed = 1;
    }
}

/*
 * An element opens: does it mark a zone or a link?  A zone marker ends the
 * block, so that every block lies in one zone.
 */
static void
content_start(sh_html_t *h, const xmlChar *name, const xmlChar **attrs,
              int cls)
{
    unsigned mark, zone, links;
    mark_t  *top;

    h->depth++;
    mark = h->name_mark[element_slot(h, name)];
    if (attrs != NULL) {
        mark = sh_block_mark(mark, (const char **) attrs);
    } else {
        mark &= SH_MARK_MASK;       /* <a> without href: no link */
    }
    if (mark == SH_MARK_NONE || h->nmarks == MARKS_MAX) {
        return;
    }
    top = h->nmarks > 0 ? &h->marks[h->nmarks - 1] : NULL;
    zone = top != NULL ? top->zone : SH_ZONE_NONE;
    links = top != NULL ? top->links : 0;
    if (mark & SH_MARK_LINK) {
        links += links < 255;
    }
    zone = sh_block_zone(zone, mark & ~SH_MARK_LINK);
    if (top != NULL && zone == top->zone && links == top->links) {
        return;                     /* changes nothing: not tracked */
    }
    if (zone != (top != NULL ? top->zone : SH_ZONE_NONE) && cls != EL_BLOCK) {
        end_block(h);
    }
    h->has_main |= zone == SH_ZONE_MAIN;
    h->marks[h->nmarks].depth = h->depth;
    h->marks[h->nmarks].zone = (unsigned char) zone;
    h->marks[h->nmarks].links = (unsigned char) links;
    h->nmarks++;
}

static void
content_end(sh_html_t *h, int cls)
{
    unsigned zone;

    if (h->nmarks > 0 && h->marks[h->nmarks - 1].depth == h->depth) {
        zone = h->nmarks > 1 ? h->marks[h->nmarks - 2].zone : SH_ZONE_NONE;
        if (cls != EL_BLOCK && zone != h->marks[h->nmarks - 1].zone) {
            end_block(h);           /* in the zone that ends */
        }
        h->nmarks--;
    }
    if (h->depth > 0) {
        h->depth--;
    }
}

static void
on_start(void *ctx, const xmlChar *name, const xmlChar **attrs)
{
    sh_html_t *h = ctx;
    int        cls;
    unsigned   slot;

    /* A <body> tag walked the whole stack, looking for another. */
    if (over_budget(h, 0, name[0] == 'b' && xmlStrEqual(name, BAD_CAST "body")
                          ? SH_BUDGET_WALK_NAMES : SH_BUDGET_WALK_NONE))
    {
        return;
    }
    if (++h->open > SH_DEPTH_MAX) {
        stop(h, SH_BUDGET_WHY_DEPTH);
        return;
    }
    slot = element_slot(h, name);
    cls = h->name_class[slot];
    if (h->tag != NULL) {
        h->tag(h->tag_arg, h->name_hash[slot]);
    }

    /* The block ends before any zone change. */
    if (cls == EL_BLOCK) {
        end_block(h);
    }
    if (h->content) {
        content_start(h, name, attrs, cls);
    }
    if (cls == EL_SKIP) {
        h->skip++;
    }
}

static void
on_end(void *ctx, const xmlChar *name)
{
    sh_html_t *h = ctx;
    int        cls;

    if (over_budget(h, 0, SH_BUDGET_WALK_NONE)) {
        return;
    }
    h->open -= h->open > 0;
    cls = element_class(h, name);

    if (cls == EL_BLOCK) {
        end_block(h);
    }
    if (h->content) {
        content_end(h, cls);
    }
    if (cls == EL_SKIP && h->skip > 0) {
        h->skip--;
    }
}

static void
on_error(void *ctx, sh_xml_error_t err)
{
    sh_html_t *h = ctx;

    sh_budget_walk_t walk = SH_BUDGET_WALK_NONE;

    /*
     * Malformed HTML is normal input: nothing to report.  But each error
     * costs libxml2 a formatted message, and some follow a walk of its
     * stack: an end tag that matched nothing ("Unexpected end tag", one
     * name), one that matched below elements it may not close ("Opening
     * and ending tag mismatch", two names), a misplaced <body>.
     */
    if (err->code == XML_ERR_TAG_NAME_MISMATCH) {
        walk = err->str2 == NULL ? SH_BUDGET_WALK_NAMES
                                 : SH_BUDGET_WALK_PRIORITY;
    } else if (err->code == XML_HTML_STRUCURE_ERROR) {
        walk = SH_BUDGET_WALK_NAMES;
    }
    over_budget(h, 1, walk);
}

sh_html_t *
sh_html_new(sh_html_text_fn text, sh_html_block_fn block_end, void *arg)
{
    htmlSAXHandler sax;
    sh_html_t     *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        return NULL;
    }
    h->text = text;
    h->block_end = block_end;
    h->arg = arg;
    h->modelled = sh_libxml_modelled(NULL);
    sh_tokenizer_model_init(&h->model);

    memset(&sax, 0, sizeof(sax));
    sax.startElement = on_start;
    sax.endElement = on_end;
    sax.characters = on_characters;
    sax.ignorableWhitespace = on_characters;
    sax.serror = on_error;
    sax.initialized = XML_SAX2_MAGIC;   /* so that serror is used */

    h->ctxt = htmlCreatePushParserCtxt(&sax, h, NULL, 0, NULL,
                                       XML_CHAR_ENCODING_UTF8);
    if (h->ctxt == NULL) {
        free(h);
        return NULL;
    }
    /* Not HTML_PARSE_NOIMPLIED: without an implied <html> root, libxml2
     * ends a fragment at its first top-level element and drops the rest. */
    htmlCtxtUseOptions(h->ctxt, HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING
                                | HTML_PARSE_NONET | HTML_PARSE_IGNORE_ENC);
    return h;
}

/*
 * libxml2 2.9's HTML push parser keeps consumed input in its buffer: drop
 * it, so memory follows the unparsed remainder, not the page.  Only under
 * the model (sh_html.h): it leans on 2.9's meaning of checkIndex, and
 * xmlParserInputShrink is deprecated from 2.11 (later versions shrink by
 * themselves; there the page is parsed in one piece anyway).
 */
static void
shrink_input(sh_html_t *h)
{
#if LIBXML_VERSION < 21100
    xmlParserInputPtr in = h->ctxt->input;
    ptrdiff_t         before;

    if (in != NULL && in->buf != NULL && in->cur - in->base > 65536) {
        /*
         * The shrink moves the unparsed bytes down, but not where a
         * failed look-ahead left off (checkIndex, an offset from the
         * buffer's start): it would skip as many bytes of the next
         * piece, and miss a '<' there.
         */
        before = in->cur - in->base;
        xmlParserInputShrink(in);
        before -= in->cur - in->base;
        if (h->ctxt->checkIndex >= before) {
            h->ctxt->checkIndex -= before;
        } else {
            h->ctxt->checkIndex = 0;
        }
    }
#endif
}

/* Hand the parser p[0..len), which ends where sh_tokenizer_model allows. */
static void
parse_piece(sh_html_t *h, const char *p, size_t len)
{
    size_t            n;

    if (len > 0 && h->cpu_start == 0) {
        h->cpu_start = thread_cpu_ns();
    }
    while (len > 0 && !h->stopped && !h->ended && !h->failed) {
        n = len > (1u << 30) ? (1u << 30) : len;
        h->fed += n;
        htmlParseChunk(h->ctxt, p, (int) n, 0);
        if (h->fed - h->cpu_fed >= CPU_BYTES && over_cpu(h)) {
            break;
        }
        p += n;
        len -= n;

        if (parser_done(h)) {
            /* After </html> nothing counts (see on_characters), and the
             * parser reads one run of its epilogue per chunk: stop. */
            h->ended = 1;
            break;
        }
        if (h->modelled) {
            shrink_input(h);
        }
    }
}

/* Keep p[0..len) for later: it ends inside a construct. */
static int
hold(sh_html_t *h, const char *p, size_t len)
{
    size_t size;
    char  *np;

    if (len == 0) {
        return 0;
    }
    if (h->nhold + len > h->hold_size) {
        size = h->hold_size ? h->hold_size : 256;
        while (size < h->nhold + len) {
            size *= 2;
        }
        np = realloc(h->hold, size);
        if (np == NULL) {
            h->failed = 1;
            return -1;
        }
        h->hold = np;
        h->hold_size = size;
    }
    memcpy(h->hold + h->nhold, p, len);
    h->nhold += len;
    return 0;
}

/*
 * The scanner has taken p[0..len): hand the parser what is complete, up to
 * its last safe point, and hold the rest.  What was held already is joined
 * with this piece up to its first safe point, so that the parser never
 * sees a construct in two parts.
 */
static void
give(sh_html_t *h, const char *p, size_t len)
{
    size_t first = h->model.safe_first, last = h->model.safe_last, n;

    if (!h->modelled || last == SH_TOKENIZER_MODEL_NONE) {
        hold(h, p, len);
        return;
    }
    if (h->nhold > 0) {
        if (hold(h, p, first) != 0) {
            return;
        }
        n = h->nhold;
        h->nhold = 0;
        parse_piece(h, h->hold, n);
        p += first;
        len -= first;
        last -= first;
    }
    parse_piece(h, p, last);
    hold(h, p + last, len - last);
}

/*
 * The scanner found script or style text that may be skipped
 * (sh_tokenizer_model.h): is the parser in that element, inside an element
 * that hides its text from us, and holding no input?  Then the text would
 * only pass through htmlParseScript (a function call per character) to be
 * dropped by on_characters, and it raises no error: skipped, it changes
 * nothing but the time.  With no input held, the parser's offsets stay
 * the page's (h->fed counts the skipped bytes), as the budget needs.
 */
static int
skippable(sh_html_t *h)
{
    xmlParserInputPtr in = h->ctxt->input;
    const xmlChar    *name = PARSER_STATE(h, name, NULL);

    return h->modelled && h->model.raw_text && h->skip > 0
           && h->nhold == 0 && !h->ended
           && in != NULL && in->cur == in->end
           && PARSER_STATE(h, instate, XML_PARSER_START) == XML_PARSER_CONTENT
           && name != NULL
           && (xmlStrEqual(name, BAD_CAST "script")
               || xmlStrEqual(name, BAD_CAST "style"));
}

/*
 * An end tag in script or style text that names another element: under
 * the model the parser has parsed it; is it still in the script?  Without
 * the model the parser has seen nothing yet: the text goes on, as HTML5
 * says (only </script> ends a script), and the scanner keeps charging it
 * as text.
 */
static void
sync_scanner(sh_html_t *h)
{
    const char *element;

    if (!h->modelled) {
        element = sh_tokenizer_model_raw_element(&h->model);
    } else if (h->ended) {
        element = NULL;
    } else {
        element = (const char *) PARSER_STATE(h, name, NULL);
    }
    sh_tokenizer_model_sync(&h->model, element);
}

int
sh_html_feed(sh_html_t *h, const char *utf8, size_t len)
{
    size_t n;

    while (len > 0 && !h->stopped && !h->failed) {
        n = sh_tokenizer_model_scan(&h->model, utf8, len);
        if (skippable(h)) {
            h->fed += n;
        } else {
            give(h, utf8, n);
        }
        utf8 += n;
        len -= n;
        if (h->model.sync) {
            sync_scanner(h);
        }
        if (h->model.budget.verdict != SH_BUDGET_OK) {
            h->stopped = 1;
        }
    }
    if (h->failed) {
        return -1;
    }
    return h->stopped ? 1 : 0;
}

int
sh_html_finish(sh_html_t *h)
{
    if (!h->stopped && !h->ended) {
        /* What is held is an unterminated construct: the parser ends it. */
        parse_piece(h, h->hold, h->nhold);
        h->nhold = 0;
        if (!h->stopped && !h->ended) {
            htmlParseChunk(h->ctxt, NULL, 0, 1);
        }
    }
    end_block(h);
    return h->failed ? -1 : 0;
}

sh_budget_verdict_t
sh_html_verdict(const sh_html_t *h, const char **why)
{
    if (why != NULL) {
        *why = sh_budget_why_name(h->model.budget.why);
    }
    return h->model.budget.verdict;
}

void
sh_html_track_content(sh_html_t *h)
{
    h->content = 1;
}

unsigned
sh_html_zone(const sh_html_t *h)
{
    return h->nmarks > 0 ? h->marks[h->nmarks - 1].zone : SH_ZONE_NONE;
}

int
sh_html_in_link(const sh_html_t *h)
{
    return h->nmarks > 0 && h->marks[h->nmarks - 1].links > 0;
}

int
sh_html_has_main(const sh_html_t *h)
{
    return (int) h->has_main;
}

void
sh_html_free(sh_html_t *h)
{
    if (h == NULL) {
        return;
    }
    if (h->ctxt != NULL) {
        if (h->ctxt->myDoc != NULL) {
            xmlFreeDoc(h->ctxt->myDoc);
        }
        htmlFreeParserCtxt(h->ctxt);
    }
    free(h->hold);
    free(h);
}

/* ---- the libxml2 behaviour class (sh_html.h) ----------------------------- */

sh_libxml_class_t
sh_libxml_class_of(long version)
{
    if (version < 20900) {
        return SH_LIBXML_UNKNOWN;
    }
    if (version < 21000) {
        return SH_LIBXML_29;
    }
    if (version < 21400) {
        return SH_LIBXML_210;
    }
    return SH_LIBXML_HTML5;
}

sh_libxml_class_t
sh_libxml_class_built(void)
{
    return sh_libxml_class_of(LIBXML_VERSION);
}

/* xmlParserVersion is the loaded library's, e.g. "21504". */
sh_libxml_class_t
sh_libxml_class_running(void)
{
    return sh_libxml_class_of(strtol(xmlParserVersion, NULL, 10));
}

sh_libxml_class_t
sh_libxml_class(void)
{
    return sh_libxml_class_running();
}

const char *
sh_libxml_class_name(sh_libxml_class_t c)
{
    switch (c) {
    case SH_LIBXML_29:
        return "2.9";
    case SH_LIBXML_210:
        return "2.10-2.13";
    case SH_LIBXML_HTML5:
        return "2.14+";
    default:
        return "unknown";
    }
}

/* The loaded library's version, dotted: "21504" -> "2.15.4". */
static void
running_version(char *buf, size_t size)
{
    long v = strtol(xmlParserVersion, NULL, 10);

    snprintf(buf, size, "%ld.%ld.%ld", v / 10000, v / 100 % 100, v % 100);
}

int
sh_libxml_modelled(const char **why)
{
    static char msg[256];
    char        run[32];
    int         modelled;

    modelled = sh_libxml_class_built() == SH_LIBXML_MODELLED
               && sh_libxml_class_running() == SH_LIBXML_MODELLED;
    if (why == NULL) {
        return modelled;
    }
    *why = NULL;
    if (!modelled) {
        running_version(run, sizeof(run));
        snprintf(msg, sizeof(msg),
                 "built with libxml2 " LIBXML_DOTTED_VERSION " (class %s),"
                 " running with %s (class %s): the markup scanner models"
                 " 2.9.14 only, so each page is parsed whole, under the"
                 " scanner's caps",
                 sh_libxml_class_name(sh_libxml_class_built()), run,
                 sh_libxml_class_name(sh_libxml_class_running()));
        *why = msg;
    }
    return modelled;
}

void
sh_html_set_tag_hook(sh_html_t *h, sh_html_tag_fn fn, void *arg)
{
    h->tag = fn;
    h->tag_arg = arg;
}
