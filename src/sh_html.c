/*
 * sh_html.c -- libxml2 HTML push parser, SAX callbacks only.
 *
 * We register startElement, endElement and characters and nothing else, so
 * libxml2 builds no tree: it tokenises, applies HTML's implied-tag rules and
 * hands us text with entities decoded.  Errors go to a handler that drops
 * them (malformed HTML is the norm, not an event).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>

#include "sh_block.h"
#include "sh_html.h"

enum { EL_INLINE = 0, EL_BLOCK, EL_SKIP };

/*
 * libxml2's HTML push parser (2.9.14) decides some markup on whatever
 * bytes it has: "<!DOCTYPE" in the body is a declaration (dropped) when
 * the chunk holds all nine bytes, but with four to eight of them it is
 * text ("<!DOCTYPE html>" becomes words).  So a piece never ends within
 * HOLD_LOOKAHEAD bytes after a '<' that has no '>' yet: that tail is held
 * back and parsed with the next piece, and the parser sees the same
 * decisions whatever the chunking (found by fuzz/fuzz_doc.c).
 */
#define HOLD_LOOKAHEAD  16
#define HOLD_STAGE      256     /* > 2 x HOLD_LOOKAHEAD: amortises joins */

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
    int               stopped;      /* hit SH_PENDING_MAX */

    /* Element names are interned in the parser's dictionary, so one name
     * is always the same pointer: remember each pointer's class. */
    const xmlChar    *name_ptr[64];
    unsigned char     name_class[64];
    unsigned char     name_mark[64];    /* sh_block_name_mark */

    /* The held-back tail of the input (see sh_html_feed), and room to
     * join it with the start of the next piece. */
    size_t            nhold;
    char              hold[HOLD_STAGE];

    /* Content tracking, when on. */
    int               content;
    uint32_t          depth;        /* open elements */
    unsigned          nmarks;
    unsigned          has_main;     /* a MAIN zone was opened */
    mark_t            marks[MARKS_MAX];
};

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

static unsigned
element_slot(sh_html_t *h, const xmlChar *name)
{
    unsigned i = (unsigned) (((uintptr_t) name >> 3) & 63);

    if (h->name_ptr[i] != name) {
        h->name_ptr[i] = name;
        h->name_class[i] = (unsigned char) classify((const char *) name);
        h->name_mark[i] = (unsigned char)
                          sh_block_name_mark((const char *) name);
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

static void
on_characters(void *ctx, const xmlChar *ch, int n)
{
    sh_html_t *h = ctx;

    /*
     * After </html> the push parser (2.9.14) is in its epilogue: it passes
     * on white-space-led text up to the end of the current chunk, then
     * stops at the next chunk's first other byte, so how much of that text
     * got through depended on the chunking.  None does now: the page ends
     * at </html>, whatever the chunking (found by fuzz/fuzz_doc.c).
     */
    if (h->ctxt->instate == XML_PARSER_EPILOG) {
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
    int        cls = element_class(h, name);

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
    int        cls = element_class(h, name);

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
on_error(void *ctx, xmlErrorPtr err)
{
    /* Malformed HTML is normal input: nothing to report. */
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
 * Where to end a piece p[0..n): before its last '<' when that is within
 * HOLD_LOOKAHEAD bytes of the end with no '>' after it; else before an
 * incomplete UTF-8 sequence at the end (the decoder's output is valid
 * UTF-8, but its pieces may cut a sequence); else at n.  A sequence cut at
 * the end of the parser's bytes is invalid UTF-8 to libxml2 (2.9.14) when
 * it reads that far, and it then decodes the rest of the page as
 * ISO-8859-1 ("é" becomes "Ã©"; found by fuzz/fuzz_doc.c).
 */
static size_t
hold_cut(const char *p, size_t n)
{
    size_t        from = n > HOLD_LOOKAHEAD ? n - HOLD_LOOKAHEAD : 0, i;
    unsigned char c;

    for (i = n; i > from; i--) {
        if (p[i - 1] == '>') {
            break;
        }
        if (p[i - 1] == '<') {
            return i - 1;
        }
    }
    /* The last sequence's lead byte, at most three bytes back. */
    for (i = n; i > 0 && n - i < 4; i--) {
        c = (unsigned char) p[i - 1];
        if ((c & 0xC0) != 0x80) {
            if (c >= 0xC0 && n - (i - 1) < (c >= 0xF0 ? 4u : c >= 0xE0 ? 3u
                                                                      : 2u))
            {
                return i - 1;
            }
            break;
        }
    }
    return n;
}

/* Parse p[0..n) whole. */
static void
parse_piece(sh_html_t *h, const char *utf8, size_t len)
{
    xmlParserInputPtr in;
    size_t            n;

    while (len > 0 && !h->stopped && !h->failed) {
        n = len > (1u << 30) ? (1u << 30) : len;
        htmlParseChunk(h->ctxt, utf8, (int) n, 0);
        utf8 += n;
        len -= n;

        /*
         * libxml2's HTML push parser keeps consumed input in its buffer;
         * drop it so memory follows the unparsed remainder, not the page.
         */
        in = h->ctxt->input;
        if (in != NULL && in->buf != NULL && in->cur - in->base > 65536) {
            xmlParserInputShrink(in);
        }
        if (in != NULL && in->end - in->cur > SH_PENDING_MAX) {
            h->stopped = 1;
        }
    }
}

int
sh_html_feed(sh_html_t *h, const char *utf8, size_t len)
{
    const char *p;
    size_t      n, cut;

    while (len > 0 && !h->stopped && !h->failed) {
        if (h->nhold > 0) {
            /* Join the held tail with the start of this piece. */
            n = sizeof(h->hold) - h->nhold;
            n = n < len ? n : len;
            memcpy(h->hold + h->nhold, utf8, n);
            utf8 += n;
            len -= n;
            p = h->hold;
            n += h->nhold;
        } else {
            p = utf8;
            n = len;
            len = 0;
        }
        cut = hold_cut(p, n);
        parse_piece(h, p, cut);
        /* The rest is at most HOLD_LOOKAHEAD bytes. */
        memmove(h->hold, p + cut, n - cut);
        h->nhold = n - cut;
    }
    if (h->failed) {
        return -1;
    }
    return h->stopped ? 1 : 0;
}

int
sh_html_finish(sh_html_t *h)
{
    if (!h->stopped && h->nhold > 0) {
        parse_piece(h, h->hold, h->nhold);
        h->nhold = 0;
    }
    if (!h->stopped) {
        htmlParseChunk(h->ctxt, NULL, 0, 1);
    }
    end_block(h);
    return h->failed ? -1 : 0;
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
    free(h);
}
