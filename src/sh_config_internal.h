/*
 * sh_config_internal.h -- the compiled configuration, for the library's own
 * parts (sh_config, sh_text, sh_doc).  Users see only the opaque sh_config_t
 * of sh_config.h; nothing outside src/ includes this header.
 */
#ifndef SH_CONFIG_INTERNAL_H
#define SH_CONFIG_INTERNAL_H

#include "sh_config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

struct sb_stemmer;
typedef struct sh_stopwords_s sh_stopwords_t;
typedef struct sh_idf_s sh_idf_t;

#define SH_STEM_CACHE   8192            /* entries, a power of two */
#define SH_TERM_SEED    0x7465726d73656564ULL   /* key when no secret */

typedef struct {
    uint64_t word;          /* unkeyed hash of the word; 0 = empty */
    uint64_t term;          /* keyed hash of its stem; 0 = a stop word */
} sh_stem_entry_t;

struct sh_config_s {
    sh_options_t       opts;            /* strings below are owned copies */
    char              *strings[SH_IGNORE_MAX + 4];

    struct sb_stemmer *stemmer;         /* NULL: no stemming */
    sh_stopwords_t    *stop;            /* NULL: keep every word */
    sh_idf_t          *idf;             /* NULL: no IDF */
    pcre2_code        *re[SH_IGNORE_MAX];
    unsigned           nre;
    pcre2_match_data  *match_data;

    int                keyed;           /* a secret was given */
    unsigned char      secret[192];     /* XXH3 secret derived from it */
    uint64_t           seed_digest;
    uint32_t           version;         /* sh_version.h */
    uint32_t           words_version;   /* the same without the IDF table */

    sh_stem_entry_t   *stem_cache;      /* mutable: see sh_doc.h, threads */
    struct sh_features_s *spare;        /* the last document's feature
                                           table, reused by the next */
    uint64_t          *spare_held;      /* and its block term buffer
                                           (sh_doc.c, content weighting) */
    uint64_t          *spare_sets;      /* and its sketches' sets, zeroed
                                           (2 x SH_SKETCH_SET) */
};

#endif
