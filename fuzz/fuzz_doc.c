/*
 * fuzz_doc.c -- the streaming extractor (sh_doc: decode, HTML, text,
 * features, simhash) on any bytes, any charset, any chunking.
 *
 * Input: four bytes of choices, then the body.
 *   byte 0   the configuration (fdoc_cfg below: stemmers, stop words,
 *            ignore patterns, shingle sizes, feature caps, IDF, keyed hash,
 *            content weighting modes)
 *   byte 1   the caller's charset label (fdoc_labels), or one read from
 *            the input (length byte, then the label)
 *   byte 2   how to cut the body: one split, 1-byte chunks, random sizes
 *            of several ranges, or with empty chunks between (low bits);
 *            bit 7 puts SH_PRESCAN newlines before the body, so that the
 *            cuts reach the parser from the body's first byte (the decoder
 *            holds the first SH_PRESCAN bytes back and decodes them as one)
 *   byte 3   seed of the chunk sizes
 *
 * sh_doc.h promises that the result does not depend on the chunking.  So
 * each body goes through three stages twice, whole and in chunks:
 *   - the decoder alone: the same UTF-8 out, valid and without NUL, and
 *     the same binary verdict;
 *   - the tokeniser alone (sh_text) on that UTF-8, a line a block, cut
 *     anywhere: the same terms;
 *   - the whole document (sh_doc): the same status, tokens (each token's
 *     bytes folded into a digest), blocks with the same zones and weights
 *     (content weighting, sh_block.h), features, fingerprint and weights,
 *     bit for bit.  This also holds sh_tokenizer_model, the model of
 *     libxml2's tokenizer, to the parser: sh_html cuts the input only where the
 *     model says every construct is complete, and a model wrong about
 *     where one ends would let the parser see it cut, and read on to the
 *     end of its bytes.
 * Each result must also make sense on its own: nbytes the body length,
 * features within the caps, the bits following the weights' signs,
 * weights finite and bounded, every token non-empty valid UTF-8 of at
 * most SH_TOKEN_MAX bytes, nothing reported on libxml2's global error
 * channel.  ASan and UBSan watch the rest.
 */
#include <math.h>
#include <stdarg.h>

#include <libxml/xmlerror.h>

#include "fuzz_util.h"

#include "sh_block.h"
#include "sh_config.h"
#include "sh_decode.h"
#include "sh_doc.h"
#include "sh_idf.h"
#include "sh_library.h"
#include "sh_text.h"

#define FDOC_NCFG   10

static sh_config_t *fdoc_cfg[FDOC_NCFG];

static const char *const fdoc_labels[] = {
    NULL, "utf-8", "UTF8", "iso-8859-1", "latin1", "windows-1251",
    "cp1251", "koi8-r", "shift_jis", "sjis", "euc-jp", "iso-2022-jp",
    "utf-16", "utf-16le", "utf-16be", "gb18030", "gb2312", "big5",
    "euc-kr", "windows-1252", "iso-8859-9", "tis-620", "x-mac-cyrillic",
    "UTF-7", "UTF-32", "UCS-2", "IBM037", " \"Shift_JIS\" ", "x-unknown",
    "",
};
#define FDOC_NLABELS (sizeof(fdoc_labels) / sizeof(fdoc_labels[0]))

/* Pages sharing words, for the IDF table of configuration 5. */
static const char *const fdoc_idf_pages[] = {
    "<p>The quick brown fox jumps over the lazy dog near the river bank.",
    "<p>A lazy dog sleeps by the river; the fox runs to the bank.</p>",
    "<title>Fox</title><p>Quick foxes and lazy dogs: a river story.",
    "<p>Быстрая лиса прыгает через ленивую собаку у реки.</p>",
    "<p>Ленивая собака спит у реки, лиса бежит.</p>",
};

typedef struct {
    uint64_t words[256];
    size_t   n;
} fdoc_words_t;

static void
fdoc_collect_words(void *arg, uint64_t feature, unsigned type, uint32_t tf)
{
    fdoc_words_t *w = arg;

    (void) tf;
    if (type == SH_FEAT_WORD && w->n < sizeof(w->words) / sizeof(w->words[0]))
    {
        w->words[w->n++] = feature;
    }
}

/* An IDF table built from fdoc_idf_pages under the default key. */
static void
fdoc_build_idf(const char *path)
{
    sh_options_t      o;
    sh_config_t      *c;
    sh_idf_builder_t *b;
    sh_doc_t         *d;
    sh_result_t       r;
    fdoc_words_t      w;
    char              err[256];
    size_t            i;

    sh_options_init(&o);
    o.min_features = 0;
    c = sh_config_new(&o, err, sizeof(err));
    FUZZ_CHECK(c != NULL);
    b = sh_idf_builder_new();
    FUZZ_CHECK(b != NULL);
    for (i = 0; i < sizeof(fdoc_idf_pages) / sizeof(fdoc_idf_pages[0]);
         i++)
    {
        /* The builder counts one document per call: a page's distinct
         * words go in together. */
        d = sh_doc_new(c, NULL);
        FUZZ_CHECK(d != NULL);
        FUZZ_CHECK(sh_doc_feed(d, fdoc_idf_pages[i],
                               strlen(fdoc_idf_pages[i])) == 0);
        FUZZ_CHECK(sh_doc_finish(d, &r) == 0);
        w.n = 0;
        sh_doc_foreach_feature(d, fdoc_collect_words, &w);
        FUZZ_CHECK(sh_idf_builder_add(b, w.words, w.n) == 0);
        sh_doc_free(d);
    }
    FUZZ_CHECK(sh_idf_builder_save(b, path, sh_config_seed_digest(c),
                                   sh_config_words_version(c), err,
                                   sizeof(err)) == 0);
    sh_idf_builder_free(b);
    sh_config_free(c);
}

static sh_config_t *
fdoc_config(const sh_options_t *o)
{
    char         err[256];
    sh_config_t *c = sh_config_new(o, err, sizeof(err));

    if (c == NULL) {
        fprintf(stderr, "fuzz_doc: configuration: %s\n", err);
    }
    FUZZ_CHECK(c != NULL);
    return c;
}

/*
 * libxml2 reports some errors (encoding conversions above all) through its
 * global generic handler, which prints to stderr: nginx's error log.  The
 * parser is only ever given clean UTF-8, so any such report is a bug.
 */
static int fdoc_xml_errors;

static void
fdoc_on_xml_error(void *ctx, const char *msg, ...)
{
    va_list ap;

    (void) ctx;
    va_start(ap, msg);
    vfprintf(stderr, msg, ap);
    va_end(ap);
    fdoc_xml_errors++;
}

static void
fdoc_init(void)
{
    sh_options_t o;
    char         idf[256];

    sh_library_init();
    xmlSetGenericErrorFunc(NULL, fdoc_on_xml_error);

    /* 0: the defaults. */
    sh_options_init(&o);
    fdoc_cfg[0] = fdoc_config(&o);

    /* 1: words only, no stemmer, every page long enough, a cap of one
     * feature: truncation from the second word on. */
    sh_options_init(&o);
    o.shingle = 1;
    o.stem = NULL;
    o.min_features = 0;
    o.max_features = 1;
    fdoc_cfg[1] = fdoc_config(&o);

    /* 2: stop words, and ignore patterns of every kind: digits, a
     * case-insensitive phrase to the end of the sentence, one that only
     * matches empty strings between characters, single spaces. */
    sh_options_init(&o);
    o.stopwords_off = 0;
    o.shingle = 2;
    sh_options_add_ignore(&o, "\\d+");
    sh_options_add_ignore(&o, "(?i)copyright[^.]*");
    sh_options_add_ignore(&o, "x*");
    sh_options_add_ignore(&o, " ");
    fdoc_cfg[2] = fdoc_config(&o);

    /* 3: Russian stemmer, the longest shingle, a small cap, a keyed hash,
     * words weighing nothing. */
    sh_options_init(&o);
    o.stem = "russian";
    o.shingle = SH_SHINGLE_MAX;
    o.min_features = 1;
    o.max_features = 40;
    o.seed = "fuzz-secret";
    o.seed_len = 11;
    o.weight[SH_FEAT_WORD] = 0.0f;
    fdoc_cfg[3] = fdoc_config(&o);

    /* 4: every weight zero: nothing to sum. */
    sh_options_init(&o);
    o.min_features = 0;
    o.weight[SH_FEAT_WORD] = 0.0f;
    o.weight[SH_FEAT_SHINGLE] = 0.0f;
    fdoc_cfg[4] = fdoc_config(&o);

    /* 5: an IDF table (built here, unlinked once loaded). */
    fuzz_tmp_path("doc.idf", idf, sizeof(idf));
    fdoc_build_idf(idf);
    sh_options_init(&o);
    o.idf_file = idf;
    o.min_features = 4;
    fdoc_cfg[5] = fdoc_config(&o);
    unlink(idf);

    /* 6: patterns that remove whole scripts and words, which can leave a
     * block empty or cut a word; German stemmer, big weights. */
    sh_options_init(&o);
    o.stem = "german";
    o.shingle = 4;
    o.max_features = 200;
    o.weight[SH_FEAT_WORD] = 1000.0f;
    o.weight[SH_FEAT_SHINGLE] = 0.001f;
    sh_options_add_ignore(&o, "[\\x{0400}-\\x{04FF}]+");
    sh_options_add_ignore(&o, "(?i)\\bthe\\b");
    sh_options_add_ignore(&o, "(?s).{200}");
    fdoc_cfg[6] = fdoc_config(&o);

    /* 7: an ignore pattern that eats everything. */
    sh_options_init(&o);
    o.min_features = 0;
    o.stem = "porter";
    sh_options_add_ignore(&o, "(?s).+");
    fdoc_cfg[7] = fdoc_config(&o);

    /* 8: content weighting from markup only, with ignore patterns (the
     * block buffer) and stop words; 0 has the default, auto. */
    sh_options_init(&o);
    o.content = SH_CONTENT_STRUCTURE;
    o.stopwords_off = 0;
    o.min_features = 1;
    sh_options_add_ignore(&o, "\\d+");
    fdoc_cfg[8] = fdoc_config(&o);

    /* 9: no content weighting: whole-page text, every block weighs 1. */
    sh_options_init(&o);
    o.content = SH_CONTENT_OFF;
    o.shingle = 2;
    fdoc_cfg[9] = fdoc_config(&o);
}

/* ---- Tokens. ---- */

/* Length of the valid UTF-8 sequence at p, or 0. */
static size_t
fdoc_utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    size_t        len, i;

    if (c < 0x80) {
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (len > n) {
        return 0;
    }
    for (i = 1; i < len; i++) {
        if (p[i] < lo || p[i] > hi) {
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return len;
}

typedef struct {
    uint64_t digest;        /* of every token, in order */
    uint32_t count;
} fdoc_tokens_t;

static void
fdoc_on_token(void *arg, const char *tok, size_t len)
{
    fdoc_tokens_t       *t = arg;
    const unsigned char *p = (const unsigned char *) tok;
    size_t               i, n;

    FUZZ_CHECK(len > 0 && len <= SH_TOKEN_MAX);
    for (i = 0; i < len; i += n) {
        n = fdoc_utf8_seq(p + i, len - i);
        FUZZ_CHECK(n > 0);
        /* Tokens are words: separators never get into one. */
        FUZZ_CHECK(n > 1 || p[i] > ' ');
    }
    /* FNV-1a over the bytes, and the length, which ends the token. */
    for (i = 0; i < len; i++) {
        t->digest = (t->digest ^ p[i]) * 0x100000001b3ull;
    }
    t->digest = (t->digest ^ (0x100 | len)) * 0x100000001b3ull;
    t->count++;
}

/* ---- Feeding. ---- */

typedef struct {
    sh_result_t   res;
    fdoc_tokens_t tokens;
    fdoc_tokens_t blocks;       /* each block's zone, weight and sample */
    uint32_t      visited;      /* features sh_doc_foreach_feature saw */
    char          charset[64];
} fdoc_out_t;

/* Content weighting: every block's class is in range, and (compared
 * between whole and chunked runs) the same whatever the chunking. */
static void
fdoc_on_block(void *arg, const sh_block_info_t *b)
{
    fdoc_tokens_t *t = arg;

    FUZZ_CHECK(b->zone < SH_ZONE_N);
    FUZZ_CHECK(b->weight <= SH_BLOCK_FULL);
    FUZZ_CHECK(b->bytes > 0 && b->bytes <= SH_BLOCK_SAMPLE);
    FUZZ_CHECK(b->link <= b->bytes);
    t->digest = (t->digest ^ ((uint64_t) b->zone << 48
                              ^ (uint64_t) b->weight << 40
                              ^ (uint64_t) b->bytes << 16 ^ b->link))
                * 0x100000001b3ull;
    t->count++;
}

static void
fdoc_count_feature(void *arg, uint64_t feature, unsigned type, uint32_t tf)
{
    fdoc_out_t *o = arg;

    (void) feature;
    FUZZ_CHECK(type < SH_FEAT_NTYPES);
    FUZZ_CHECK(tf >= 1);
    o->visited++;
}

/* Size of the next chunk for cutting mode `mode`. */
static size_t
fdoc_chunk(unsigned mode, uint64_t *rng, size_t left, size_t total)
{
    uint64_t r = fuzz_rng(rng);

    switch (mode) {
    case 0:                         /* one split, anywhere */
        return left == total ? (size_t) (r % (total + 1)) : left;
    case 1:                         /* byte by byte (short pages) */
        return total <= 4096 ? 1 : 1 + r % 16;
    case 2:
        return 1 + r % 16;
    case 3:
        return 1 + r % 256;
    case 4:
        return 1 + r % 4096;
    default:                        /* empty chunks in between */
        return r % 4 == 0 ? 0 : 1 + r % 64;
    }
}

static void
fdoc_run(sh_config_t *cfg, const char *label, const uint8_t *body,
         size_t len, int chunked, unsigned mode, uint64_t seed,
         fdoc_out_t *out)
{
    sh_doc_t *d = sh_doc_new(cfg, label);
    size_t    off = 0, n;
    uint64_t  rng = seed;

    FUZZ_CHECK(d != NULL);
    memset(out, 0, sizeof(*out));
    sh_doc_set_token_hook(d, fdoc_on_token, &out->tokens);
    sh_doc_set_block_hook(d, fdoc_on_block, &out->blocks);
    if (!chunked) {
        FUZZ_CHECK(sh_doc_feed(d, body, len) == 0);
    } else {
        while (off < len) {
            n = fdoc_chunk(mode, &rng, len - off, len);
            if (n > len - off) {
                n = len - off;
            }
            /* An empty chunk still comes with a valid pointer, as nginx
             * passes empty buffers. */
            FUZZ_CHECK(sh_doc_feed(d, body + off, n) == 0);
            off += n;
        }
    }
    FUZZ_CHECK(sh_doc_finish(d, &out->res) == 0);
    sh_doc_foreach_feature(d, fdoc_count_feature, out);
    snprintf(out->charset, sizeof(out->charset), "%s", sh_doc_charset(d));
    sh_doc_free(d);
}

/* What every result must satisfy on its own. */
static void
fdoc_check_result(const sh_config_t *cfg, const fdoc_out_t *o, size_t len)
{
    const sh_options_t *opt = sh_config_options(cfg);
    const sh_result_t  *r = &o->res;
    unsigned            j;

    FUZZ_CHECK(r->nbytes == len);
    FUZZ_CHECK(r->status == SH_STATUS_OK || r->status == SH_STATUS_TOO_SHORT
               || r->status == SH_STATUS_BINARY
               || r->status == SH_STATUS_TOO_LARGE
               || r->status == SH_STATUS_TOO_COMPLEX);
    FUZZ_CHECK((r->why != NULL) == (r->status == SH_STATUS_TOO_LARGE
                                    || r->status == SH_STATUS_TOO_COMPLEX));
    FUZZ_CHECK(r->nfeatures <= opt->max_features);
    FUZZ_CHECK(!r->truncated || r->nfeatures == opt->max_features);
    FUZZ_CHECK(o->visited == r->nfeatures);
    FUZZ_CHECK(o->charset[0] != '\0');
    if (r->status != SH_STATUS_OK) {
        return;
    }
    FUZZ_CHECK(r->nfeatures >= opt->min_features && r->nfeatures > 0);
    for (j = 0; j < SH_BITS; j++) {
        float w = r->weights[j];

        FUZZ_CHECK(isfinite(w));
        /* L2-normalised: no sum exceeds the square root of the feature
         * count (Cauchy-Schwarz), with room for rounding. */
        FUZZ_CHECK(fabsf(w) <= sqrtf((float) r->nfeatures) * 1.001f + 1e-3f);
        if (w > 0) {
            FUZZ_CHECK((r->hash >> j) & 1);
        } else if (w < 0) {
            FUZZ_CHECK(!((r->hash >> j) & 1));
        }
    }
}

/* ---- The decoder alone. ---- */

typedef struct {
    char   *buf;
    size_t  len, cap;
} fdoc_utf8_t;

static int
fdoc_on_utf8(void *arg, const char *utf8, size_t len)
{
    fdoc_utf8_t *u = arg;

    FUZZ_CHECK(len > 0);
    if (u->len + len > u->cap) {
        u->cap = (u->len + len) * 2;
        u->buf = realloc(u->buf, u->cap);
        FUZZ_CHECK(u->buf != NULL);
    }
    memcpy(u->buf + u->len, utf8, len);
    u->len += len;
    return 0;
}

/* Decode the body whole or in chunks; the output must be clean UTF-8:
 * valid, and without NUL (the parser would stop at one). */
static int
fdoc_decode(const char *label, const uint8_t *body, size_t len, int chunked,
            unsigned mode, uint64_t seed, fdoc_utf8_t *u)
{
    sh_decode_t *d = sh_decode_new(label, fdoc_on_utf8, u);
    size_t       off = 0, n;
    uint64_t     rng = seed;
    int          binary;

    FUZZ_CHECK(d != NULL);
    memset(u, 0, sizeof(*u));
    while (off < len || off == 0) {
        n = chunked ? fdoc_chunk(mode, &rng, len - off, len) : len;
        n = n < len - off ? n : len - off;
        FUZZ_CHECK(sh_decode_feed(d, body + off, n) == 0);
        off += n;
        if (len == 0) {
            break;
        }
    }
    FUZZ_CHECK(sh_decode_finish(d) == 0);
    binary = sh_decode_is_binary(d);
    FUZZ_CHECK(sh_decode_charset(d) != NULL);
    sh_decode_free(d);
    for (off = 0; off < u->len; off += n) {
        n = fdoc_utf8_seq((const unsigned char *) u->buf + off, u->len - off);
        FUZZ_CHECK(n > 0);
        FUZZ_CHECK(u->buf[off] != '\0');
    }
    return binary;
}

/* ---- The text stage alone. ---- */

static void
fdoc_on_term(void *arg, uint64_t term)
{
    fdoc_tokens_t *t = arg;

    t->digest = (t->digest ^ term) * 0x100000001b3ull;
    t->count++;
}

/*
 * Tokenise decoded text directly, every line a block, each block fed whole
 * or in pieces (cut anywhere, UTF-8 sequences included): the terms must
 * not depend on the pieces.  This holds the tokeniser, the ignore
 * patterns' block buffer and its SH_BLOCK_MAX cut to the promise without
 * the HTML parser in between.
 */
static void
fdoc_text(sh_config_t *cfg, const char *text, size_t len, int chunked,
          unsigned mode, uint64_t seed, fdoc_tokens_t *out)
{
    sh_text_t  *t;
    const char *nl;
    size_t      off = 0, end, n;
    uint64_t    rng = seed;

    memset(out, 0, sizeof(*out));
    t = sh_text_new(cfg, fdoc_on_term, out);
    FUZZ_CHECK(t != NULL);
    while (off < len) {
        nl = memchr(text + off, '\n', len - off);
        end = nl != NULL ? (size_t) (nl - text) : len;
        while (off < end) {
            n = chunked ? fdoc_chunk(mode, &rng, end - off, len) : end - off;
            n = n < end - off ? n : end - off;
            FUZZ_CHECK(sh_text_feed(t, text + off, n) == 0);
            off += n;
        }
        FUZZ_CHECK(sh_text_end_block(t) == 0);
        off++;                              /* the newline */
    }
    FUZZ_CHECK(sh_text_end_block(t) == 0);
    sh_text_free(t);
}

static int
fdoc_one(const uint8_t *data, size_t size)
{
    fuzz_in_t    in = { data, size };
    sh_config_t *cfg;
    const char  *label;
    char         own_label[64];
    unsigned     sel, mode, n, i;
    uint64_t     seed;
    uint8_t     *body;
    size_t       pad, len;
    fdoc_out_t   whole, part;
    fdoc_utf8_t  u_whole, u_part;
    int          binary;

    cfg = fdoc_cfg[fuzz_u8(&in) % FDOC_NCFG];
    sel = fuzz_u8(&in);
    mode = fuzz_u8(&in);
    pad = mode & 0x80 ? SH_PRESCAN : 0;
    mode = (mode & 0x7F) % 6;
    seed = fuzz_u8(&in);
    if (sel >= 0xF0) {
        /* A label from the input: whatever a Content-Type may carry. */
        n = fuzz_u8(&in) % (sizeof(own_label) - 1);
        for (i = 0; i < n; i++) {
            own_label[i] = (char) fuzz_u8(&in);
        }
        own_label[n] = '\0';
        label = own_label;
    } else {
        label = fdoc_labels[sel % FDOC_NLABELS];
    }

    len = pad + in.n;
    body = malloc(len + 1);
    FUZZ_CHECK(body != NULL);
    memset(body, '\n', pad);
    if (in.n > 0) {
        memcpy(body + pad, in.p, in.n);
    }

    /* The decoder: the same clean UTF-8 whatever the chunking.  A binary
     * page is decided on its first SH_PRESCAN characters, whatever the
     * chunking, but what was passed on before the decision depends on
     * the chunks (and is ignored), so only the verdict is compared. */
    binary = fdoc_decode(label, body, len, 0, 0, 0, &u_whole);
    FUZZ_CHECK(fdoc_decode(label, body, len, 1, mode, seed, &u_part)
               == binary);
    if (!binary) {
        FUZZ_CHECK(u_whole.len == u_part.len);
        FUZZ_CHECK(u_whole.len == 0
                   || memcmp(u_whole.buf, u_part.buf, u_whole.len) == 0);
    }

    /* The text stage: terms independent of how the text is cut. */
    if (!binary && u_whole.len > 0) {
        fdoc_tokens_t t_whole, t_part;

        fdoc_text(cfg, u_whole.buf, u_whole.len, 0, 0, 0, &t_whole);
        fdoc_text(cfg, u_whole.buf, u_whole.len, 1, mode, seed, &t_part);
        FUZZ_CHECK(t_whole.count == t_part.count);
        FUZZ_CHECK(t_whole.digest == t_part.digest);
    }
    free(u_whole.buf);
    free(u_part.buf);

    fdoc_xml_errors = 0;
    fdoc_run(cfg, label, body, len, 0, 0, 0, &whole);
    fdoc_check_result(cfg, &whole, len);
    fdoc_run(cfg, label, body, len, 1, mode, seed, &part);
    fdoc_check_result(cfg, &part, len);
    free(body);
    FUZZ_CHECK(fdoc_xml_errors == 0);

    FUZZ_CHECK(strcmp(whole.charset, part.charset) == 0);
    FUZZ_CHECK((whole.res.status == SH_STATUS_BINARY) == binary);
    FUZZ_CHECK((part.res.status == SH_STATUS_BINARY) == binary);
    if (binary) {
        return 0;
    }
    /* Chunking must not matter, down to the last token and float. */
    FUZZ_CHECK(whole.res.status == part.res.status);
    FUZZ_CHECK(whole.tokens.count == part.tokens.count);
    FUZZ_CHECK(whole.tokens.digest == part.tokens.digest);
    FUZZ_CHECK(whole.blocks.count == part.blocks.count);
    FUZZ_CHECK(whole.blocks.digest == part.blocks.digest);
    FUZZ_CHECK(whole.res.ntokens == part.res.ntokens);
    FUZZ_CHECK(whole.res.nfeatures == part.res.nfeatures);
    FUZZ_CHECK(whole.res.truncated == part.res.truncated);
    if (whole.res.status == SH_STATUS_OK) {
        FUZZ_CHECK(whole.res.hash == part.res.hash);
        FUZZ_CHECK(memcmp(whole.res.weights, part.res.weights,
                          sizeof(whole.res.weights)) == 0);
    }
    return 0;
}

FUZZ_ENTRY(fdoc_init, fdoc_one)
