/*
 * sh_config.c -- defaults, and compiling options into a configuration.
 *
 * Everything that can fail on bad input (a regex, a file, a language name)
 * fails here, at configuration time, with a message naming the culprit: the
 * nginx module calls this while reading nginx.conf, so `nginx -t` reports
 * it with the file and line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libstemmer.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_block.h"
#include "sh_config_internal.h"
#include "sh_features.h"
#include "sh_html.h"
#include "sh_idf.h"
#include "sh_mac.h"
#include "sh_simhash.h"
#include "sh_stopwords.h"
#include "sh_version.h"

#define DIGEST_SEED     0x6469676573743031ULL   /* "digest01" */

void
sh_options_init(sh_options_t *o)
{
    memset(o, 0, sizeof(*o));
    o->shingle = SH_DEFAULT_SHINGLE;
    o->stem = SH_DEFAULT_STEM;
    o->stopwords_off = SH_DEFAULT_STOPWORDS_OFF;
    o->min_features = SH_DEFAULT_MIN_FEATURES;
    o->max_features = SH_DEFAULT_MAX_FEATURES;
    o->weight[SH_FEAT_WORD] = SH_DEFAULT_WEIGHT_WORD;
    o->weight[SH_FEAT_SHINGLE] = SH_DEFAULT_WEIGHT_SHINGLE;
    o->content = SH_DEFAULT_CONTENT;
}

int
sh_options_add_ignore(sh_options_t *o, const char *pattern)
{
    if (o->nignore >= SH_IGNORE_MAX) {
        return -1;
    }
    o->ignore[o->nignore++] = pattern;
    return 0;
}

static const char *const content_names[] = { "off", "structure", "auto" };

int
sh_content_parse(const char *name)
{
    unsigned i;

    for (i = 0; i < sizeof(content_names) / sizeof(content_names[0]); i++) {
        if (strcmp(name, content_names[i]) == 0) {
            return (int) i;
        }
    }
    return -1;
}

const char *
sh_content_name(unsigned mode)
{
    return mode < sizeof(content_names) / sizeof(content_names[0])
           ? content_names[mode] : "unknown";
}

int
sh_stem_lang_valid(const char *lang)
{
    const char **l;

    for (l = sb_stemmer_list(); *l != NULL; l++) {
        if (strcmp(*l, lang) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * The digests behind the extraction version (sh_version.h).  Paths are not
 * in them, contents are: the same stop words from another file give the same
 * version.
 *
 * The words digest covers what makes the words of a page: the libxml2
 * class, stemming, stop words and ignore patterns.  An IDF table, a table
 * of words, needs only that much to be comparable.
 */
static uint64_t
words_digest(const sh_config_t *c)
{
    const sh_options_t *o = &c->opts;
    XXH3_state_t        st;
    uint64_t            v[3];
    unsigned            i;

    v[0] = (uint64_t) sh_libxml_class();
    v[1] = c->stop != NULL ? sh_stopwords_digest(c->stop) : 0;
    v[2] = o->nignore;

    (void) XXH3_64bits_reset(&st);
    (void) XXH3_64bits_update(&st, v, sizeof(v));
    if (o->stem != NULL) {
        (void) XXH3_64bits_update(&st, o->stem, strlen(o->stem) + 1);
    }
    for (i = 0; i < o->nignore; i++) {
        (void) XXH3_64bits_update(&st, o->ignore[i],
                                  strlen(o->ignore[i]) + 1);
    }
    return XXH3_64bits_digest(&st);
}

/* ... and the options digest everything else that changes a fingerprint:
 * features, weights, content weighting and the IDF table's contents. */
static uint64_t
options_digest(const sh_config_t *c, uint64_t idf_digest)
{
    const sh_options_t *o = &c->opts;
    uint64_t            v[7];

    v[0] = words_digest(c);
    v[1] = o->shingle;
    v[2] = o->min_features;
    v[3] = o->max_features;
    v[4] = o->content;
    v[5] = idf_digest;
    memcpy(&v[6], o->weight, sizeof(v[6]));

    _Static_assert(sizeof(o->weight) == sizeof(v[6]), "two float weights");

    return XXH3_64bits(v, sizeof(v));
}

/* Keep a private copy of an option string. */
static const char *
own(sh_config_t *c, unsigned *n, const char *s)
{
    char *d;

    if (s == NULL) {
        return NULL;
    }
    d = strdup(s);
    if (d != NULL) {
        c->strings[(*n)++] = d;
    }
    return d;
}

/*
 * An ignore pattern, compiled the one way the library uses it (UTF-8 with
 * Unicode classes; invalid UTF-8 in a subject never matches instead of
 * failing).  NULL and "<reason> at offset N" in err when it is invalid.
 */
static pcre2_code *
ignore_compile(const char *pattern, char *err, size_t errlen)
{
    int          ecode;
    PCRE2_SIZE   eoff;
    PCRE2_UCHAR  msg[256];
    pcre2_code  *re;

    re = pcre2_compile((PCRE2_SPTR) pattern, PCRE2_ZERO_TERMINATED,
                       PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
                       &ecode, &eoff, NULL);
    if (re == NULL) {
        pcre2_get_error_message(ecode, msg, sizeof(msg));
        snprintf(err, errlen, "%s at offset %zu", (char *) msg,
                 (size_t) eoff);
    }
    return re;
}

int
sh_ignore_check(const char *pattern, char *err, size_t errlen)
{
    pcre2_code *re = ignore_compile(pattern, err, errlen);

    if (re == NULL) {
        return -1;
    }
    pcre2_code_free(re);
    return 0;
}

sh_config_t *
sh_config_new(const sh_options_t *o, char *err, size_t errlen)
{
    sh_config_t *c;
    unsigned     i, ns = 0;
    char         msg[256];

    if (o->shingle < 1 || o->shingle > SH_SHINGLE_MAX) {
        snprintf(err, errlen, "shingle size %u is not between 1 and %u",
                 o->shingle, SH_SHINGLE_MAX);
        return NULL;
    }
    if (o->max_features < 1 || o->max_features > (1u << 24)) {
        snprintf(err, errlen, "max features %u is not between 1 and %u",
                 o->max_features, 1u << 24);
        return NULL;
    }
    if (o->min_features > o->max_features) {
        snprintf(err, errlen, "min features %u exceeds max features %u",
                 o->min_features, o->max_features);
        return NULL;
    }
    for (i = 0; i < SH_FEAT_NTYPES; i++) {
        if (!(o->weight[i] >= 0.0f && o->weight[i] <= 1000.0f)) {
            snprintf(err, errlen, "feature weight %g is out of range",
                     (double) o->weight[i]);
            return NULL;
        }
    }
    if (o->content > SH_CONTENT_AUTO) {
        snprintf(err, errlen, "content mode %u is not off, structure or "
                 "auto", o->content);
        return NULL;
    }
    if (o->nignore > SH_IGNORE_MAX) {
        snprintf(err, errlen, "more than %d ignore patterns", SH_IGNORE_MAX);
        return NULL;
    }

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->opts = *o;
    c->opts.stem = own(c, &ns, o->stem);
    c->opts.stopwords_file = own(c, &ns, o->stopwords_file);
    c->opts.idf_file = own(c, &ns, o->idf_file);
    c->opts.seed = NULL;
    c->opts.seed_len = 0;
    for (i = 0; i < o->nignore; i++) {
        c->opts.ignore[i] = own(c, &ns, o->ignore[i]);
    }

    /* The hash key: a 192-byte XXH3 secret derived from the user's. */
    if (o->seed != NULL && o->seed_len > 0) {
        c->keyed = 1;
        if (XXH3_generateSecret(c->secret, sizeof(c->secret), o->seed,
                                o->seed_len) != XXH_OK)
        {
            snprintf(err, errlen, "cannot derive a hash key from the seed");
            goto fail;
        }
        c->seed_digest = XXH3_64bits_withSeed(c->secret, sizeof(c->secret),
                                              DIGEST_SEED);
    } else {
        c->seed_digest = XXH3_64bits_withSeed("", 0, DIGEST_SEED);
    }

    if (o->stem != NULL) {
        c->stemmer = sb_stemmer_new(o->stem, "UTF_8");
        if (c->stemmer == NULL) {
            snprintf(err, errlen, "unknown stemmer language \"%s\" "
                     "(Snowball knows e.g. english, french, german, "
                     "russian)", o->stem);
            goto fail;
        }
    }

    if (!o->stopwords_off) {
        c->stop = o->stopwords_file
                  ? sh_stopwords_load(o->stopwords_file, err, errlen)
                  : sh_stopwords_english();
        if (c->stop == NULL) {
            if (o->stopwords_file == NULL) {
                snprintf(err, errlen, "out of memory");
            }
            goto fail;
        }
    }

    /* An IDF table is a table of words: it must have been built from the
       words these options make. */
    c->words_version = sh_version_make(words_digest(c));
    c->version = sh_version_make(options_digest(c, 0));

    if (o->idf_file != NULL) {
        c->idf = sh_idf_load(o->idf_file, c->seed_digest, c->words_version,
                             err, errlen);
        if (c->idf == NULL) {
            goto fail;
        }
        c->version = sh_version_make(options_digest(c,
                                                    sh_idf_digest(c->idf)));
    }

    for (i = 0; i < o->nignore; i++) {
        c->re[i] = ignore_compile(o->ignore[i], msg, sizeof(msg));
        if (c->re[i] == NULL) {
            snprintf(err, errlen, "ignore pattern %u \"%s\": %s", i + 1,
                     o->ignore[i], (char *) msg);
            goto fail;
        }
        c->nre++;
        /* JIT is an optimisation: without it matching still works. */
        (void) pcre2_jit_compile(c->re[i], PCRE2_JIT_COMPLETE);
    }
    if (c->nre > 0) {
        c->match_data = pcre2_match_data_create(4, NULL);
        if (c->match_data == NULL) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }

    c->stem_cache = calloc(SH_STEM_CACHE, sizeof(sh_stem_entry_t));
    if (c->stem_cache == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    return c;

fail:
    sh_config_free(c);
    return NULL;
}

void
sh_config_free(sh_config_t *c)
{
    unsigned i;

    if (c == NULL) {
        return;
    }
    if (c->stemmer != NULL) {
        sb_stemmer_delete(c->stemmer);
    }
    sh_stopwords_free(c->stop);
    sh_idf_free(c->idf);
    for (i = 0; i < c->nre; i++) {
        pcre2_code_free(c->re[i]);
    }
    pcre2_match_data_free(c->match_data);
    for (i = 0; i < sizeof(c->strings) / sizeof(c->strings[0]); i++) {
        free(c->strings[i]);
    }
    free(c->stem_cache);
    sh_features_free(c->spare);
    free(c->spare_held);
    free(c->spare_sets);
    free(c);
}

uint64_t
sh_config_seed_digest(const sh_config_t *c)
{
    return c->seed_digest;
}

int
sh_config_keyed(const sh_config_t *c)
{
    return c->keyed;
}

int
sh_config_derive_key(const sh_config_t *c, const char *purpose,
                     unsigned char *out, size_t len)
{
    return sh_mac_derive(out, len,
                         c->keyed ? c->secret : (const unsigned char *) "",
                         c->keyed ? sizeof(c->secret) : 0, purpose);
}

uint32_t
sh_config_version(const sh_config_t *c)
{
    return c->version;
}

uint32_t
sh_config_words_version(const sh_config_t *c)
{
    return c->words_version;
}

const sh_options_t *
sh_config_options(const sh_config_t *c)
{
    return &c->opts;
}
