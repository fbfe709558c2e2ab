/*
 * sh_config.h -- extraction options (plain values with documented defaults)
 * and the compiled configuration built from them once: regexes compiled,
 * stop words and IDF table loaded, stemmer opened, hash key derived.
 *
 * Every option here has a twin in the CLI (`simhash fingerprint --help`) and
 * in the nginx module (simhash_* directives).
 */
#ifndef SH_CONFIG_H
#define SH_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "sh_features.h"    /* the feature types, SH_SHINGLE_MAX */

#define SH_IGNORE_MAX       32

typedef struct {
    unsigned     shingle;            /* w, words per shingle; 1 = words only */
    const char  *stem;               /* Snowball language, NULL = no stemming */
    const char  *stopwords_file;     /* NULL = built-in English list */
    int          stopwords_off;      /* 1 = keep every word (the default) */
    const char  *ignore[SH_IGNORE_MAX];  /* PCRE2 patterns, see sh_text.h */
    unsigned     nignore;
    unsigned     min_features;       /* fewer distinct features: too short */
    unsigned     max_features;       /* distinct features kept per document */
    const char  *idf_file;           /* NULL = no IDF (all words weigh 1) */
    const void  *seed;               /* secret keying the feature hash */
    size_t       seed_len;           /* 0 = the public default key */
    float        weight[SH_FEAT_NTYPES];  /* constant weight per type */
    unsigned     content;            /* SH_CONTENT_* (sh_block.h) */
} sh_options_t;

/*
 * Defaults: chosen by measurement, docs/QUALITY.md.  Stop words are kept by
 * default: near-duplicates share them, so they dilute the few tokens that
 * differ (recall at h = 3 up from 55% to 62% on rust-doc, no false positive
 * added), and a language-neutral default suits a proxy that sees every
 * language.  The built-in English list is one option away ("english").
 */
#define SH_DEFAULT_SHINGLE       3
#define SH_DEFAULT_STEM          "english"
#define SH_DEFAULT_STOPWORDS_OFF 1
#define SH_DEFAULT_MIN_FEATURES  32
#define SH_DEFAULT_MAX_FEATURES  32768

/* The accepted ranges, the same for the module's directives and the tool's
 * options: a table of fewer than 16 features says nothing about a page. */
#define SH_MIN_FEATURES_LIMIT    16777216
#define SH_MAX_FEATURES_FLOOR    16
#define SH_MAX_FEATURES_LIMIT    16777216
#define SH_DEFAULT_WEIGHT_WORD    1.25f
#define SH_DEFAULT_WEIGHT_SHINGLE 1.0f
/* Content weighting (sh_block.h): see docs/QUALITY.md, "Content
 * weighting", for the measurement behind the default. */
#define SH_DEFAULT_CONTENT        2     /* SH_CONTENT_AUTO */

void sh_options_init(sh_options_t *opts);

/* Add an ignore pattern; -1 when there are already SH_IGNORE_MAX. */
int sh_options_add_ignore(sh_options_t *opts, const char *pattern);

/*
 * Is `pattern` an ignore pattern sh_config_new will accept?  0, or -1 and
 * "<reason> at offset N" in err.  For early errors (nginx -t): the very
 * compile the configuration does.
 */
int sh_ignore_check(const char *pattern, char *err, size_t errlen);

typedef struct sh_config_s sh_config_t;

/*
 * Compile `opts`.  On error returns NULL and writes a one-line message such
 * as "ignore pattern 2 \"[a-\": missing terminating ] at offset 3" into err.
 * The options' strings are copied; `opts` may be discarded afterwards.
 */
sh_config_t *sh_config_new(const sh_options_t *opts, char *err, size_t errlen);
void sh_config_free(sh_config_t *cfg);

/* 64-bit digest of the hash key, recorded in snapshots and IDF tables so that
 * data built under one key is refused under another. */
uint64_t sh_config_seed_digest(const sh_config_t *cfg);

/*
 * The extraction version (sh_version.h): equal versions and equal seed
 * digests make fingerprints comparable.  The words version covers only what
 * makes a page's words (parser class, stemming, stop words, ignore
 * patterns): IDF tables record it (sh_idf.h).
 */
uint32_t sh_config_version(const sh_config_t *cfg);
uint32_t sh_config_words_version(const sh_config_t *cfg);

/* 1 if a secret (simhash_seed) was given: derived keys are then secret. */
int sh_config_keyed(const sh_config_t *cfg);

/*
 * A key of `len` bytes (at most 32) for `purpose` ("stream mac"), derived
 * one-way from the hash key: 0, or -1.  Without a secret the key is public.
 */
int sh_config_derive_key(const sh_config_t *cfg, const char *purpose,
                         unsigned char *out, size_t len);

/* The effective options (strings owned by the config). */
const sh_options_t *sh_config_options(const sh_config_t *cfg);

/* "off", "structure", "auto" <-> SH_CONTENT_*; -1 for another name. */
int         sh_content_parse(const char *name);
const char *sh_content_name(unsigned mode);

/* Is `lang` a Snowball language libstemmer knows?  (For early errors.) */
int sh_stem_lang_valid(const char *lang);



#endif
