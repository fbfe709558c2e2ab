/*
 * sh_decode.c -- charset sniffing and conversion to clean UTF-8.
 *
 * Two converters: UTF-8 input is validated by hand (the common case, and the
 * cheapest: valid runs are passed through untouched); anything else goes
 * through iconv.  Both replace what they cannot decode with U+FFFD one byte at
 * a time and hold back an incomplete sequence at the end of a chunk, so the
 * output never depends on where the chunks were cut.
 */
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sh_decode.h"

#define OUT_SIZE        4096
#define PENDING_MAX     16      /* longest incomplete sequence we hold */

static const char replacement[3] = { (char) 0xEF, (char) 0xBF, (char) 0xBD };

struct sh_decode_s {
    sh_decode_out_fn out;
    void            *arg;
    char            *label;         /* caller's label, or NULL */

    int              decided;       /* the charset is chosen */
    size_t           head_len;
    const char      *charset;       /* canonical name */
    iconv_t          cd;            /* (iconv_t) -1 for native UTF-8 */
    size_t           pending_len;
    size_t           olen;

    /* The binary check over the first SH_PRESCAN decoded characters. */
    size_t           chars;
    size_t           bad;
    int              nul;
    int              binary;        /* -1 undecided, 0 text, 1 binary */
    int              failed;        /* the output callback failed */

    /* Buffers last: sh_decode_new zeroes only what precedes them. */
    unsigned char    head[SH_PRESCAN];      /* first bytes, for prescan */
    unsigned char    pending[PENDING_MAX * 2];  /* an incomplete sequence */
    char             obuf[OUT_SIZE];
};


/* ---- labels ----------------------------------------------------------- */

typedef struct {
    const char *label;
    const char *name;
} label_map_t;

/* What browsers do with the labels pages actually use (WHATWG Encoding). */
static const label_map_t labels[] = {
    { "utf-8", "UTF-8" }, { "utf8", "UTF-8" },
    { "unicode-1-1-utf-8", "UTF-8" },
    { "iso-8859-1", "WINDOWS-1252" }, { "iso8859-1", "WINDOWS-1252" },
    { "iso_8859-1", "WINDOWS-1252" }, { "latin1", "WINDOWS-1252" },
    { "l1", "WINDOWS-1252" }, { "us-ascii", "WINDOWS-1252" },
    { "ascii", "WINDOWS-1252" }, { "cp1252", "WINDOWS-1252" },
    { "windows-1252", "WINDOWS-1252" }, { "x-cp1252", "WINDOWS-1252" },
    { "cp819", "WINDOWS-1252" }, { "ibm819", "WINDOWS-1252" },
    { "iso-8859-9", "WINDOWS-1254" }, { "latin5", "WINDOWS-1254" },
    { "iso-8859-11", "WINDOWS-874" }, { "tis-620", "WINDOWS-874" },
    { "shift_jis", "CP932" }, { "shift-jis", "CP932" }, { "sjis", "CP932" },
    { "x-sjis", "CP932" }, { "ms_kanji", "CP932" }, { "csshiftjis", "CP932" },
    { "windows-31j", "CP932" }, { "ms932", "CP932" },
    { "gb2312", "GBK" }, { "gbk", "GBK" }, { "x-gbk", "GBK" },
    { "csgb2312", "GBK" }, { "chinese", "GBK" }, { "gb_2312-80", "GBK" },
    { "gb18030", "GB18030" },
    { "big5", "BIG5-HKSCS" }, { "big5-hkscs", "BIG5-HKSCS" },
    { "cn-big5", "BIG5-HKSCS" }, { "x-x-big5", "BIG5-HKSCS" },
    { "euc-kr", "CP949" }, { "ks_c_5601-1987", "CP949" },
    { "windows-949", "CP949" }, { "korean", "CP949" },
    { "x-mac-cyrillic", "MAC-CYRILLIC" }, { "mac", "MACINTOSH" },
    { "macintosh", "MACINTOSH" }, { "x-mac-roman", "MACINTOSH" },
    { "utf-16", "UTF-16LE" }, { "utf-16le", "UTF-16LE" },
    { "utf-16be", "UTF-16BE" },
};

/* Does iconv know `name`, and does it write printable ASCII unchanged? */
static int
ascii_compatible(const char *name)
{
    static const char ascii[] =
        " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\t\n\r";
    char    out[sizeof(ascii) * 4 + 16];
    char   *in = (char *) ascii, *o = out;
    size_t  inleft = sizeof(ascii) - 1, outleft = sizeof(out), r;
    iconv_t cd = iconv_open(name, "UTF-8");

    if (cd == (iconv_t) -1) {
        return 0;
    }
    r = iconv(cd, &in, &inleft, &o, &outleft);
    if (r != (size_t) -1) {
        /* A stateful encoding's return to its initial state. */
        r = iconv(cd, NULL, NULL, &o, &outleft);
    }
    iconv_close(cd);
    return r != (size_t) -1 && inleft == 0
           && (size_t) (o - out) == sizeof(ascii) - 1
           && memcmp(out, ascii, sizeof(ascii) - 1) == 0;
}

const char *
sh_charset_resolve(const char *label, size_t len, int in_page)
{
    static __thread char name[64];
    size_t   i;

    /* Trim what HTTP and HTML allow around a label. */
    while (len > 0 && (isspace((unsigned char) *label) || *label == '"'
                       || *label == '\''))
    {
        label++;
        len--;
    }
    while (len > 0 && (isspace((unsigned char) label[len - 1])
                       || label[len - 1] == '"' || label[len - 1] == '\''))
    {
        len--;
    }
    if (len == 0 || len >= sizeof(name)) {
        return NULL;
    }

    for (i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
        if (strlen(labels[i].label) == len
            && strncasecmp(labels[i].label, label, len) == 0)
        {
            if (in_page && strncmp(labels[i].name, "UTF-16", 6) == 0) {
                return "UTF-8";
            }
            return labels[i].name;
        }
    }

    /*
     * Not a label browsers special-case: whatever iconv knows by it, if
     * it writes ASCII as ASCII.  A page's markup is ASCII, and browsers
     * decode no charset that is not (but UTF-16, above): a label naming
     * UTF-32, UTF-7 or EBCDIC on an HTML page is as wrong as an unknown
     * one, and is ignored like it (README: How a page becomes a
     * fingerprint).
     */
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char) label[i];
        if (!(isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':')) {
            return NULL;
        }
        name[i] = (char) toupper(c);
    }
    name[len] = '\0';
    if (in_page && strncmp(name, "UTF-16", 6) == 0) {
        return "UTF-8";
    }
    return ascii_compatible(name) ? name : NULL;
}


/* ---- prescan ---------------------------------------------------------- */

static const char *
find_ci(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);

    for (; p + n <= end; p++) {
        if (strncasecmp(p, needle, n) == 0) {
            return p;
        }
    }
    return NULL;
}

/*
 * HTML5's prescan, simplified: skip comments, and in every <meta ...> tag
 * look for `charset` followed by `=`; that finds both <meta charset=X> and
 * <meta http-equiv=Content-Type content="text/html; charset=X">.
 */
size_t
sh_charset_prescan(const char *buf, size_t len, const char **label)
{
    const char *p = buf, *end = buf + len, *tag_end, *q, *v;

    while (p < end) {
        p = memchr(p, '<', (size_t) (end - p));
        if (p == NULL) {
            break;
        }
        if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
            q = find_ci(p + 4, end, "-->");
            if (q == NULL) {
                break;
            }
            p = q + 3;
            continue;
        }
        tag_end = memchr(p, '>', (size_t) (end - p));
        if (tag_end == NULL) {
            break;
        }
        if (tag_end - p > 5 && strncasecmp(p + 1, "meta", 4) == 0
            && (isspace((unsigned char) p[5]) || p[5] == '/'))
        {
            for (q = p + 5; (q = find_ci(q, tag_end, "charset")) != NULL;
                 q += 7)
            {
                v = q + 7;
                while (v < tag_end && isspace((unsigned char) *v)) {
                    v++;
                }
                if (v >= tag_end || *v != '=') {
                    continue;
                }
                v++;
                while (v < tag_end && (isspace((unsigned char) *v)
                                       || *v == '"' || *v == '\''))
                {
                    v++;
                }
                q = v;
                while (q < tag_end && !isspace((unsigned char) *q)
                       && *q != '"' && *q != '\'' && *q != ';' && *q != '/')
                {
                    q++;
                }
                if (q > v) {
                    *label = v;
                    return (size_t) (q - v);
                }
            }
        }
        p = tag_end + 1;
    }
    return 0;
}


/* ---- output ----------------------------------------------------------- */

static int
flush(sh_decode_t *d)
{
    if (d->olen > 0 && !d->failed && d->binary != 1) {
        if (d->out(d->arg, d->obuf, d->olen) != 0) {
            d->failed = 1;
        }
    }
    d->olen = 0;
    return d->failed ? -1 : 0;
}

static void
append(sh_decode_t *d, const char *s, size_t len)
{
    size_t n;

    while (len > 0) {
        if (d->olen == OUT_SIZE) {
            flush(d);
        }
        n = OUT_SIZE - d->olen;
        if (n > len) {
            n = len;
        }
        memcpy(d->obuf + d->olen, s, n);
        d->olen += n;
        s += n;
        len -= n;
    }
}

/* One byte of valid UTF-8 for the binary check (see observe). */
static inline void
observe_byte(sh_decode_t *d, unsigned char c)
{
    if ((c & 0xC0) == 0x80) {
        return;                 /* continues a sequence */
    }
    d->chars++;
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') {
        d->bad++;
        if (c == 0) {
            d->nul = 1;
        }
    }
}

/* Count the first SH_PRESCAN characters of valid UTF-8 for the binary
 * check; `bad` is 1 when these bytes stand for one undecodable byte. */
static void
observe(sh_decode_t *d, const unsigned char *s, size_t len, int bad)
{
    size_t   i = 0, end;
    uint64_t w, ctl, cont;

    if (d->binary != -1) {
        return;
    }
    if (bad) {
        d->chars++;
        d->bad++;
    } else {
        /*
         * Eight bytes at a time while they cannot pass SH_PRESCAN.  A word
         * with no byte below 0x20 (ctl: bits 7, 6 and 5 all clear; the
         * shifts bring bits 6 and 5 of a byte to its own bit 7) only adds
         * the bytes that do not continue a sequence (cont: 10xxxxxx);
         * other words, one in a line or so, go byte by byte.
         */
        while (i + 8 <= len && d->chars + 8 <= SH_PRESCAN) {
            memcpy(&w, s + i, 8);
            ctl = ~(w | w << 1 | w << 2) & 0x8080808080808080ULL;
            if (ctl == 0) {
                cont = w & ~(w << 1) & 0x8080808080808080ULL;
                d->chars += 8 - (size_t) __builtin_popcountll(cont);
                i += 8;
                continue;
            }
            for (end = i + 8; i < end; i++) {
                observe_byte(d, s[i]);
            }
        }
        for (; i < len && d->chars < SH_PRESCAN; i++) {
            observe_byte(d, s[i]);
        }
    }
    if (d->chars >= SH_PRESCAN) {
        d->binary = (d->nul || d->bad * 4 > d->chars) ? 1 : 0;
    }
}

/*
 * Emit valid UTF-8; NUL (which the HTML parser would stop at) becomes
 * U+FFFD.  Long runs, the common case, go to the parser without a copy.
 */
static void
emit(sh_decode_t *d, const char *s, size_t len)
{
    const char *z;

    if (d->binary == -1) {
        observe(d, (const unsigned char *) s, len, 0);
    }
    while (len > 0 && (z = memchr(s, '\0', len)) != NULL) {
        append(d, s, (size_t) (z - s));
        append(d, replacement, sizeof(replacement));
        len -= (size_t) (z - s) + 1;
        s = z + 1;
    }
    if (len >= OUT_SIZE) {
        flush(d);
        if (!d->failed && d->binary != 1 && d->out(d->arg, s, len) != 0) {
            d->failed = 1;
        }
        return;
    }
    append(d, s, len);
}

static void
emit_bad(sh_decode_t *d)
{
    observe(d, NULL, 0, 1);
    append(d, replacement, sizeof(replacement));
}


/* ---- UTF-8 ------------------------------------------------------------ */

/*
 * Length of the UTF-8 sequence at p: > 0 valid, 0 a valid but incomplete
 * prefix (need more bytes), -1 invalid first byte (replace it, move on).
 */
static int
utf8_seq(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    int           n, i;

    if (c < 0x80) {
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) {
            lo = 0xA0;
        } else if (c == 0xED) {
            hi = 0x9F;
        }
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) {
            lo = 0x90;
        } else if (c == 0xF4) {
            hi = 0x8F;
        }
    } else {
        return -1;
    }

    for (i = 1; i < n; i++) {
        if ((size_t) i >= avail) {
            return 0;
        }
        if (p[i] < lo || p[i] > hi) {
            return -1;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return n;
}

/* Decode; returns the bytes consumed (all unless an incomplete sequence
 * ends a non-final chunk). */
static size_t
decode_utf8(sh_decode_t *d, const unsigned char *p, size_t len, int final)
{
    size_t i = 0, run = 0;
    int    n;

    while (i < len) {
        /* ASCII eight bytes at a time. */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ULL) {
                break;
            }
            i += 8;
        }
        if (i >= len) {
            break;
        }
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        n = utf8_seq(p + i, len - i);
        if (n > 0) {
            i += (size_t) n;
            continue;
        }
        emit(d, (const char *) p + run, i - run);
        if (n == 0 && !final) {
            return i;
        }
        emit_bad(d);
        i++;
        run = i;
    }
    emit(d, (const char *) p + run, i - run);
    return i;
}


/* ---- iconv ------------------------------------------------------------ */

static size_t
decode_iconv(sh_decode_t *d, const unsigned char *p, size_t len, int final)
{
    char   *in = (char *) p, *out;
    size_t  inleft = len, outleft, r;
    char    tmp[4096];

    while (inleft > 0) {
        out = tmp;
        outleft = sizeof(tmp);
        r = iconv(d->cd, &in, &inleft, &out, &outleft);
        emit(d, tmp, sizeof(tmp) - outleft);
        if (r != (size_t) -1) {
            continue;
        }
        if (errno == E2BIG) {
            continue;
        }
        if (errno == EINVAL && !final) {
            break;              /* incomplete: keep it for the next chunk */
        }
        /* EILSEQ, or an incomplete sequence at the very end. */
        emit_bad(d);
        in++;
        inleft--;
    }

    if (final) {
        /* Flush a stateful encoding's shift state. */
        out = tmp;
        outleft = sizeof(tmp);
        iconv(d->cd, NULL, NULL, &out, &outleft);
        emit(d, tmp, sizeof(tmp) - outleft);
    }
    return len - inleft;
}

static size_t
decode(sh_decode_t *d, const unsigned char *p, size_t len, int final)
{
    return d->cd == (iconv_t) -1 ? decode_utf8(d, p, len, final)
                                 : decode_iconv(d, p, len, final);
}

/*
 * Decode the next bytes, completing a held-back sequence first: the held
 * bytes plus a few new ones are decoded together, exactly as they would have
 * been had they arrived in one chunk.
 */
static void
run(sh_decode_t *d, const unsigned char *p, size_t len, int final)
{
    size_t take, used, held;

    while (d->pending_len > 0 && (len > 0 || final)) {
        held = d->pending_len;
        take = len < PENDING_MAX ? len : PENDING_MAX;
        memcpy(d->pending + held, p, take);
        used = decode(d, d->pending, held + take, final && take == len);
        if (used < held && take < len) {
            /* A sequence longer than any charset's: give up on one byte. */
            emit_bad(d);
            memmove(d->pending, d->pending + used + 1, held - used - 1);
            d->pending_len = held - used - 1;
            continue;
        }
        if (used < held) {
            /* Still incomplete, and all of p was taken. */
            memmove(d->pending, d->pending + used, held + take - used);
            d->pending_len = held + take - used;
            return;
        }
        d->pending_len = 0;
        p += used - held;
        len -= used - held;
        if (len == 0) {
            return;
        }
    }

    used = decode(d, p, len, final);
    if (used < len) {
        if (len - used > PENDING_MAX) {
            /* Cannot happen with real charsets; never hold unbounded. */
            emit_bad(d);
            used++;
            run(d, p + used, len - used, final);
            return;
        }
        memcpy(d->pending, p + used, len - used);
        d->pending_len = len - used;
    }
}


/* ---- choosing the charset --------------------------------------------- */

/*
 * Choose the charset from the first bytes h[0..n) (n <= SH_PRESCAN unless
 * the page is shorter) and set up the converter; returns the length of the
 * byte order mark to skip.
 */
static size_t
choose(sh_decode_t *d, const unsigned char *h, size_t n)
{
    const char *name = NULL, *lab;
    size_t      skip = 0, ln;

    if (n > SH_PRESCAN) {
        n = SH_PRESCAN;
    }
    if (n >= 3 && h[0] == 0xEF && h[1] == 0xBB && h[2] == 0xBF) {
        name = "UTF-8";
        skip = 3;
    } else if (n >= 2 && h[0] == 0xFF && h[1] == 0xFE) {
        name = "UTF-16LE";
        skip = 2;
    } else if (n >= 2 && h[0] == 0xFE && h[1] == 0xFF) {
        name = "UTF-16BE";
        skip = 2;
    }
    if (name == NULL && d->label != NULL) {
        name = sh_charset_resolve(d->label, strlen(d->label), 0);
    }
    if (name == NULL) {
        ln = sh_charset_prescan((const char *) h, n, &lab);
        if (ln > 0) {
            name = sh_charset_resolve(lab, ln, 1);
        }
    }
    if (name == NULL) {
        name = "UTF-8";
    }

    d->cd = (iconv_t) -1;
    if (strcmp(name, "UTF-8") != 0) {
        d->cd = iconv_open("UTF-8", name);
        if (d->cd == (iconv_t) -1) {
            name = "UTF-8";
        }
    }
    d->charset = strcmp(name, "UTF-8") == 0 ? "UTF-8" : strdup(name);
    if (d->charset == NULL) {
        d->charset = "UTF-8";
        if (d->cd != (iconv_t) -1) {
            iconv_close(d->cd);
            d->cd = (iconv_t) -1;
        }
    }
    d->decided = 1;
    return skip;
}


/* ---- API -------------------------------------------------------------- */

sh_decode_t *
sh_decode_new(const char *label, sh_decode_out_fn out, void *arg)
{
    sh_decode_t *d = malloc(sizeof(*d));

    if (d == NULL) {
        return NULL;
    }
    /* Zero the state, not the 17 KB of buffers. */
    memset(d, 0, offsetof(sh_decode_t, head));
    d->out = out;
    d->arg = arg;
    d->cd = (iconv_t) -1;
    d->binary = -1;
    if (label != NULL && *label != '\0') {
        d->label = strdup(label);
        if (d->label == NULL) {
            free(d);
            return NULL;
        }
    }
    return d;
}

int
sh_decode_feed(sh_decode_t *d, const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t               n, skip;

    if (d->binary == 1) {
        return d->failed ? -1 : 0;
    }
    if (!d->decided) {
        if (d->head_len == 0 && len >= SH_PRESCAN) {
            /* The usual case: the first chunk has all the prescan needs,
             * decode it in place. */
            skip = choose(d, p, len);
            p += skip;
            len -= skip;
        } else {
            n = sizeof(d->head) - d->head_len;
            if (n > len) {
                n = len;
            }
            memcpy(d->head + d->head_len, p, n);
            d->head_len += n;
            p += n;
            len -= n;
            if (d->head_len < sizeof(d->head)) {
                return 0;
            }
            skip = choose(d, d->head, d->head_len);
            run(d, d->head + skip, d->head_len - skip, 0);
        }
    }
    run(d, p, len, 0);
    return flush(d);
}

int
sh_decode_finish(sh_decode_t *d)
{
    size_t skip;

    if (!d->decided) {
        skip = choose(d, d->head, d->head_len);
        run(d, d->head + skip, d->head_len - skip, 0);
    }
    if (d->binary != 1) {
        /* An empty chunk, but not a NULL pointer: the decoders compute
         * p + offset on it, which is undefined for NULL even with a zero
         * offset (UBSan, found by fuzz/fuzz_doc.c). */
        run(d, (const unsigned char *) "", 0, 1);
        if (d->pending_len > 0) {
            /* An incomplete sequence at the very end. */
            d->pending_len = 0;
            emit_bad(d);
        }
    }
    if (d->binary == -1) {
        d->binary = (d->nul || d->bad * 4 > d->chars) ? 1 : 0;
    }
    return flush(d);
}

void
sh_decode_free(sh_decode_t *d)
{
    if (d == NULL) {
        return;
    }
    if (d->cd != (iconv_t) -1) {
        iconv_close(d->cd);
    }
    if (d->charset != NULL && strcmp(d->charset, "UTF-8") != 0) {
        free((char *) d->charset);
    }
    free(d->label);
    free(d);
}

const char *
sh_decode_charset(const sh_decode_t *d)
{
    return d->charset ? d->charset : "UTF-8";
}

int
sh_decode_is_binary(const sh_decode_t *d)
{
    return d->binary == 1;
}

int
sh_decode_is_decided(const sh_decode_t *d)
{
    return d->binary != -1;
}
