/*
 * sh_text.c -- ignore patterns, tokens, case folding, stop words, stemming.
 *
 * The hot loop is the tokeniser: ASCII goes through a 256-entry table
 * (class and lower case in one lookup); only non-ASCII code points ask
 * utf8proc for their category, and only tokens that contain one are
 * normalised by utf8proc.  Stemming, the costliest step, is skipped for
 * words seen before through a direct-mapped cache in the configuration
 * (word hash -> term hash), which pays off because word frequencies are
 * Zipfian: most words of a page are in the cache.
 */
#include <stdlib.h>
#include <string.h>

#include <libstemmer.h>
#include <utf8proc.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_config_internal.h"
#include "sh_fold.h"
#include "sh_stopwords.h"
#include "sh_text.h"

struct sh_text_s {
    sh_config_t     *cfg;
    sh_term_fn       fn;
    void            *arg;
    sh_raw_token_fn  hook;
    void            *hook_arg;

    /* The tokeniser's state between pieces of text. */
    char             tok[SH_TOKEN_MAX + 8];
    size_t           n;             /* bytes in tok */
    int              ascii;         /* tok is all ASCII (already folded) */
    unsigned char    carry[4];      /* a UTF-8 sequence cut by the parser */
    size_t           ncarry;

    /* With ignore patterns only: the block, white space collapsed. */
    char            *buf;
    size_t           len, cap;
    size_t           last_space;    /* position of the last space, or 0 */
    int              space;         /* a space is due before the next char */
    int              failed;

    char            *work[2];       /* ping-pong buffers for the patterns */
    size_t           work_cap[2];
};

/* ASCII: 0 = separator, else the lower-case byte. */
static unsigned char ascii_word[128];

void
sh_text_init(void)
{
    int c;

    for (c = 0; c < 128; c++) {
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            ascii_word[c] = (unsigned char) c;
        } else if (c >= 'A' && c <= 'Z') {
            ascii_word[c] = (unsigned char) (c - 'A' + 'a');
        }
    }
}

static int
is_cjk(int32_t cp)
{
    return (cp >= 0x3040 && cp <= 0x30FF)       /* hiragana, katakana */
           || (cp >= 0x31F0 && cp <= 0x31FF)    /* katakana extension */
           || (cp >= 0x3400 && cp <= 0x4DBF)    /* CJK extension A */
           || (cp >= 0x4E00 && cp <= 0x9FFF)    /* CJK unified */
           || (cp >= 0xF900 && cp <= 0xFAFF)    /* compatibility */
           || (cp >= 0xFF66 && cp <= 0xFF9F)    /* half-width katakana */
           || (cp >= 0x20000 && cp <= 0x3134F); /* extensions B.. */
}

static int
is_word_cp(int32_t cp)
{
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return 1;
    default:
        return 0;
    }
}

/*
 * Stop word?  Stem, hash, and pass the term on.  The cache remembers both
 * answers for a word: its term hash, or 0 for a stop word, so the common
 * case is one hash of the word and one cache probe.
 */
static void
term(sh_text_t *t, const char *tok, size_t len)
{
    sh_config_t      *cfg = t->cfg;
    sh_stem_entry_t  *e;
    const sb_symbol  *stem;
    uint64_t          h, th;
    int               slen;

    if (t->hook != NULL) {
        t->hook(t->hook_arg, tok, len);
    }

    h = XXH3_64bits(tok, len);
    h = h ? h : 1;          /* 0 marks an empty cache entry */
    e = &cfg->stem_cache[h & (SH_STEM_CACHE - 1)];
    if (e->word != h) {
        if (cfg->stop != NULL && sh_stopwords_has(cfg->stop, h)) {
            th = 0;
        } else {
            stem = (const sb_symbol *) tok;
            slen = (int) len;
            if (cfg->stemmer != NULL) {
                stem = sb_stemmer_stem(cfg->stemmer, stem, slen);
                slen = sb_stemmer_length(cfg->stemmer);
                if (stem == NULL) {     /* out of memory: use the word */
                    stem = (const sb_symbol *) tok;
                    slen = (int) len;
                }
            }
            th = cfg->keyed
                 ? XXH3_64bits_withSecret(stem, (size_t) slen, cfg->secret,
                                          sizeof(cfg->secret))
                 : XXH3_64bits_withSeed(stem, (size_t) slen, SH_TERM_SEED);
            th = th ? th : 1;
        }
        e->word = h;
        e->term = th;
    }
    if (e->term != 0) {
        t->fn(t->arg, e->term);
    }
}

/* Normalise the raw token (ASCII already folded) and hand it on. */
static void
token(sh_text_t *t, const char *tok, size_t len, int ascii)
{
    char norm[SH_TOKEN_MAX + 4];

    if (ascii) {
        term(t, tok, len);
        return;
    }
    len = sh_fold_word(tok, len, norm);
    if (len > 0) {
        term(t, norm, len);
    }
}

static void
flush_token(sh_text_t *t)
{
    if (t->n > 0) {
        token(t, t->tok, t->n, t->ascii);
        t->n = 0;
    }
    t->ascii = 1;
}

/* One non-ASCII code point cp, whose UTF-8 is p[0..clen). */
static void
wide_char(sh_text_t *t, const unsigned char *p, size_t clen, int32_t cp)
{
    if (is_cjk(cp)) {
        flush_token(t);
        token(t, (const char *) p, clen, 0);
    } else if (is_word_cp(cp)) {
        if (t->n + clen <= SH_TOKEN_MAX) {
            memcpy(t->tok + t->n, p, clen);
            t->n += clen;
            t->ascii = 0;
        }
    } else {
        flush_token(t);
    }
}

/* Bytes the UTF-8 sequence led by c takes (1 for a bad lead byte). */
static size_t
utf8_len(unsigned char c)
{
    return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

/*
 * Tokenise the next piece of a block.  A token may continue into the next
 * piece, and so may a UTF-8 sequence (kept in carry), so the tokens do not
 * depend on where the pieces were cut.
 */
static void
tokenize(sh_text_t *t, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *) s;
    size_t               i = 0, need, take;
    utf8proc_int32_t     cp;
    utf8proc_ssize_t     clen;

    if (t->ncarry > 0) {
        need = utf8_len(t->carry[0]) - t->ncarry;
        take = need < len ? need : len;
        memcpy(t->carry + t->ncarry, p, take);
        t->ncarry += take;
        i = take;
        if (take < need) {
            return;
        }
        clen = utf8proc_iterate(t->carry, (utf8proc_ssize_t) t->ncarry, &cp);
        if (clen > 0) {
            wide_char(t, t->carry, (size_t) clen, cp);
        } else {
            flush_token(t);
        }
        t->ncarry = 0;
    }

    while (i < len) {
        if (p[i] < 0x80) {
            unsigned char c = ascii_word[p[i]];
            if (c != 0) {
                if (t->n < SH_TOKEN_MAX) {
                    t->tok[t->n++] = (char) c;
                }
            } else if (t->n > 0) {
                flush_token(t);
            }
            i++;
            continue;
        }
        need = utf8_len(p[i]);
        if (need > len - i && need > 1) {
            /* Cut mid-sequence: finish it with the next piece. */
            t->ncarry = len - i;
            memcpy(t->carry, p + i, t->ncarry);
            return;
        }
        clen = utf8proc_iterate(p + i, (utf8proc_ssize_t) (len - i), &cp);
        if (clen <= 0) {                /* not UTF-8: a separator */
            flush_token(t);
            i++;
            continue;
        }
        wide_char(t, p + i, (size_t) clen, cp);
        i += (size_t) clen;
    }
}

/* Replace every match of pattern `re` in src with one space. */
static size_t
blank_matches(sh_text_t *t, pcre2_code *re, const char *src, size_t len,
              char *dst)
{
    pcre2_match_data *md = t->cfg->match_data;
    PCRE2_SIZE       *ov;
    size_t            from = 0, out = 0, start, end;
    int               rc;

    while (from < len) {
        rc = pcre2_match(re, (PCRE2_SPTR) src, len, from, 0, md, NULL);
        if (rc < 0) {
            break;      /* no match, or a resource limit: keep the rest */
        }
        ov = pcre2_get_ovector_pointer(md);
        start = ov[0];
        end = ov[1];
        if (start < from || end < start) {
            break;      /* \K tricks; do not loop */
        }
        memcpy(dst + out, src + from, start - from);
        out += start - from;
        if (end == start) {
            /* An empty match removes nothing: keep the next character and
             * search again after it. */
            if (end >= len) {
                from = len;
                break;
            }
            do {
                dst[out++] = src[end++];
            } while (end < len && ((unsigned char) src[end] & 0xC0) == 0x80);
        } else {
            dst[out++] = ' ';
        }
        from = end;
    }
    if (from < len) {
        memcpy(dst + out, src + from, len - from);
        out += len - from;
    }
    return out;
}

/* Make work buffer i hold at least `need` bytes. */
static int
work_reserve(sh_text_t *t, int i, size_t need)
{
    char *nb;

    if (t->work_cap[i] >= need) {
        return 0;
    }
    nb = realloc(t->work[i], need);
    if (nb == NULL) {
        return -1;
    }
    /* PCRE2's JIT scans with aligned 16-byte loads that may pass the
     * subject's end (within the allocation); defined slack keeps valgrind
     * and MSan from reporting those reads. */
    memset(nb + t->work_cap[i], 0, need - t->work_cap[i]);
    t->work[i] = nb;
    t->work_cap[i] = need;
    return 0;
}

/* Apply the ignore patterns to one block of text and tokenise it. */
static int
run_block(sh_text_t *t, const char *text, size_t len)
{
    sh_config_t *cfg = t->cfg;
    unsigned     i;
    int          cur = 0;

    for (i = 0; i < cfg->nre; i++) {
        /* A match becomes at most one space: the output is never longer
         * than the input, plus slack. */
        if (work_reserve(t, cur, len + 8) != 0) {
            return -1;
        }
        len = blank_matches(t, cfg->re[i], text, len, t->work[cur]);
        text = t->work[cur];
        cur ^= 1;
    }
    tokenize(t, text, len);
    t->ncarry = 0;
    flush_token(t);
    return 0;
}

/* Make room in the block for `need` more bytes, up to SH_BLOCK_MAX. */
static int
block_reserve(sh_text_t *t, size_t need)
{
    size_t  cap = t->cap ? t->cap : 4096;
    char   *nb;

    if (t->len + need <= t->cap) {
        return 0;
    }
    while (cap < t->len + need && cap < SH_BLOCK_MAX) {
        cap *= 2;
    }
    if (cap > SH_BLOCK_MAX) {
        cap = SH_BLOCK_MAX;
    }
    nb = realloc(t->buf, cap);
    if (nb == NULL) {
        return -1;
    }
    memset(nb + t->cap, 0, cap - t->cap);  /* see work_reserve */
    t->buf = nb;
    t->cap = cap;
    return 0;
}

/* The block is full: run it up to its last space (or a UTF-8 boundary),
 * keep the rest. */
static int
cut_block(sh_text_t *t)
{
    size_t cut = t->last_space, keep_from;
    int    rc;

    if (cut == 0) {
        /* No space: cut before the last, possibly incomplete, character. */
        cut = t->len;
        while (cut > 0 && ((unsigned char) t->buf[cut - 1] & 0xC0) == 0x80) {
            cut--;
        }
        if (cut > 0 && (unsigned char) t->buf[cut - 1] >= 0xC0) {
            cut--;
        }
        if (cut == 0) {
            cut = t->len;
        }
        keep_from = cut;
    } else {
        keep_from = cut + 1;
    }
    rc = run_block(t, t->buf, cut);
    memmove(t->buf, t->buf + keep_from, t->len - keep_from);
    t->len -= keep_from;
    t->last_space = 0;
    return rc;
}

static const unsigned char is_space[256] = {
    [' '] = 1, ['\n'] = 1, ['\t'] = 1, ['\r'] = 1, ['\f'] = 1
};

/* Append to the block, collapsing white space. */
static int
block_append(sh_text_t *t, const unsigned char *ch, size_t len)
{
    size_t i, end;
    char  *buf;
    int    space;

    for (i = 0; i < len; /* void */) {
        if (t->len + 2 > SH_BLOCK_MAX && cut_block(t) != 0) {
            return -1;
        }
        /* Each byte in takes at most one byte of room, plus one space. */
        if (block_reserve(t, len - i + 1) != 0) {
            return -1;
        }
        end = i + (t->cap - t->len - 1);
        if (end > len) {
            end = len;
        }
        buf = t->buf;
        space = t->space;
        for (; i < end; i++) {
            unsigned char c = ch[i];
            if (is_space[c]) {
                space = t->len > 0;
                continue;
            }
            if (space) {
                t->last_space = t->len;
                buf[t->len++] = ' ';
                space = 0;
            }
            buf[t->len++] = (char) c;
        }
        t->space = space;
    }
    return 0;
}

int
sh_text_feed(sh_text_t *t, const char *text, size_t len)
{
    if (t->failed) {
        return -1;
    }
    if (t->cfg->nre == 0) {
        /* No patterns: no block to keep, tokenise as the text comes. */
        tokenize(t, text, len);
        return 0;
    }
    if (block_append(t, (const unsigned char *) text, len) != 0) {
        t->failed = 1;
        return -1;
    }
    return 0;
}

int
sh_text_end_block(sh_text_t *t)
{
    int rc = 0;

    if (t->failed) {
        return -1;
    }
    if (t->cfg->nre == 0) {
        if (t->ncarry > 0) {
            t->ncarry = 0;      /* an incomplete sequence ends the block */
        }
        flush_token(t);
        return 0;
    }
    if (t->len > 0) {
        rc = run_block(t, t->buf, t->len);
    }
    t->len = 0;
    t->last_space = 0;
    t->space = 0;
    if (rc != 0) {
        t->failed = 1;
    }
    return rc;
}

sh_text_t *
sh_text_new(sh_config_t *cfg, sh_term_fn fn, void *arg)
{
    sh_text_t *t = calloc(1, sizeof(*t));

    if (t == NULL) {
        return NULL;
    }
    if (ascii_word['a'] == 0) {
        sh_text_init();     /* sh_library_init was not called */
    }
    t->cfg = cfg;
    t->fn = fn;
    t->arg = arg;
    t->ascii = 1;
    return t;
}

void
sh_text_set_token_hook(sh_text_t *t, sh_raw_token_fn fn, void *arg)
{
    t->hook = fn;
    t->hook_arg = arg;
}

void
sh_text_free(sh_text_t *t)
{
    if (t == NULL) {
        return;
    }
    free(t->buf);
    free(t->work[0]);
    free(t->work[1]);
    free(t);
}
