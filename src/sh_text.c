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

#define SH_CONFIG_INTERNAL
#include "sh_config.h"
#include "sh_stopwords.h"
#include "sh_text.h"

struct sh_text_s {
    sh_config_t     *cfg;
    sh_term_fn       fn;
    void            *arg;
    sh_raw_token_fn  hook;
    void            *hook_arg;

    char            *work[2];       /* ping-pong buffers for the patterns */
    size_t           work_cap[2];
};

/* ASCII: 0 = separator, else the lower-case byte. */
static unsigned char ascii_word[128];

static void
ascii_init(void)
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

size_t
sh_text_normalize(const char *word, size_t len, char *out)
{
    utf8proc_int32_t  cps[SH_TOKEN_MAX + 4];
    utf8proc_ssize_t  n, bytes;
    const utf8proc_option_t opt = UTF8PROC_CASEFOLD | UTF8PROC_COMPOSE
                                  | UTF8PROC_STABLE;
    size_t            i;

    n = utf8proc_decompose((const utf8proc_uint8_t *) word,
                           (utf8proc_ssize_t) len, cps,
                           SH_TOKEN_MAX, opt);
    if (n < 0 || n > SH_TOKEN_MAX) {
        /* Invalid, or folds to more than fits: fall back to ASCII folding
         * of what we have, which is deterministic and good enough. */
        for (i = 0; i < len && i < SH_TOKEN_MAX; i++) {
            unsigned char c = (unsigned char) word[i];
            out[i] = (char) ((c >= 'A' && c <= 'Z') ? c + 32 : c);
        }
        return i;
    }
    bytes = utf8proc_reencode(cps, n, opt);
    if (bytes < 0) {
        memcpy(out, word, len);
        return len;
    }
    if (bytes > SH_TOKEN_MAX) {
        bytes = SH_TOKEN_MAX;
        while (bytes > 0 && (((unsigned char *) cps)[bytes] & 0xC0) == 0x80) {
            bytes--;
        }
    }
    memcpy(out, cps, (size_t) bytes);
    return (size_t) bytes;
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
    len = sh_text_normalize(tok, len, norm);
    if (len > 0) {
        term(t, norm, len);
    }
}

static void
tokenize(sh_text_t *t, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *) s;
    char                 tok[SH_TOKEN_MAX + 8];
    size_t               i = 0, n = 0;
    int                  ascii = 1;
    utf8proc_int32_t     cp;
    utf8proc_ssize_t     clen;

#define FLUSH() \
    do { if (n > 0) { token(t, tok, n, ascii); n = 0; ascii = 1; } } while (0)

    while (i < len) {
        if (p[i] < 0x80) {
            unsigned char c = ascii_word[p[i]];
            if (c != 0) {
                if (n < SH_TOKEN_MAX) {
                    tok[n++] = (char) c;
                }
            } else {
                FLUSH();
            }
            i++;
            continue;
        }

        clen = utf8proc_iterate(p + i, (utf8proc_ssize_t) (len - i), &cp);
        if (clen <= 0) {                /* not UTF-8: a separator */
            FLUSH();
            i++;
            continue;
        }
        if (is_cjk(cp)) {
            FLUSH();
            token(t, (const char *) p + i, (size_t) clen, 0);
        } else if (is_word_cp(cp)) {
            if (n + (size_t) clen <= SH_TOKEN_MAX) {
                memcpy(tok + n, p + i, (size_t) clen);
                n += (size_t) clen;
                ascii = 0;
            }
        } else {
            FLUSH();
        }
        i += (size_t) clen;
    }
    FLUSH();
#undef FLUSH
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
    t->work[i] = nb;
    t->work_cap[i] = need;
    return 0;
}

int
sh_text_block(sh_text_t *t, const char *text, size_t len)
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
    return 0;
}

sh_text_t *
sh_text_new(sh_config_t *cfg, sh_term_fn fn, void *arg)
{
    sh_text_t *t = calloc(1, sizeof(*t));

    if (t == NULL) {
        return NULL;
    }
    if (ascii_word['a'] == 0) {
        ascii_init();
    }
    t->cfg = cfg;
    t->fn = fn;
    t->arg = arg;
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
    free(t->work[0]);
    free(t->work[1]);
    free(t);
}
