/*
 * pageset.h -- a set of fingerprinted pages (simhash, weights, path) for
 * the index subcommands, and its cache file.
 *
 * Fingerprinting tens of thousands of pages takes minutes; `simhash bench`,
 * `dedup` and `calibrate` keep the result in a cache file.  The cache is
 * keyed by a "canary": the fingerprint and weights of a fixed sample page
 * under the current options, so any change to the extraction code or
 * options invalidates it without bookkeeping.
 */
#ifndef PAGESET_H
#define PAGESET_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

typedef struct {
    uint64_t hash;
    float    w[64];
    uint32_t path;          /* offset into the string blob */
    uint32_t status;        /* sh_status_t */
    sh_sketches_t sk;       /* the listing veto (sh_sketch.h) */
    uint32_t short_hub;     /* sh_match_short */
} pageset_fp_t;

typedef struct {
    pageset_fp_t *fp;
    size_t   n, cap;
    char    *str;
    size_t   slen, scap;
} pageset_t;

void pageset_init(pageset_t *s);
void pageset_free(pageset_t *s);
int  pageset_add(pageset_t *s, const char *path, const sh_result_t *r);

static inline const char *
pageset_path(const pageset_t *s, size_t i)
{
    return s->str + s->fp[i].path;
}

/* The canary of a configuration (see above). */
uint64_t pageset_canary(sh_config_t *cfg);

/* 0 loaded; 1 missing or stale (not an error); -1 error printed. */
int pageset_load(pageset_t *s, const char *path, uint64_t canary);
int pageset_save(const pageset_t *s, const char *path, uint64_t canary);

/*
 * Fingerprint `paths` into s (pages that fail to open are reported and
 * skipped).  With a cache path: load it if fresh, else fingerprint and
 * save.  Progress on stderr when it is a terminal.
 */
int pageset_from_paths(pageset_t *s, sh_config_t *cfg, const char *charset,
                        char **paths, size_t n, const char *cache);

/* Fingerprint an in-memory page. */
int pageset_fingerprint(sh_config_t *cfg, const char *buf, size_t len,
                       sh_result_t *res);

/* Progress line on stderr, only if it is a terminal. */
void pageset_progress(const char *what, size_t done, size_t total);

#endif
