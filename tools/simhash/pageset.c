/*
 * pageset.c -- fingerprint sets and their cache files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "pageset.h"
#include "sh_file.h"

#define FPSET_MAGIC "SHFPSET3"

void
pageset_init(pageset_t *s)
{
    memset(s, 0, sizeof(*s));
}

void
pageset_free(pageset_t *s)
{
    free(s->fp);
    free(s->str);
    memset(s, 0, sizeof(*s));
}

int
pageset_add(pageset_t *s, const char *path, const sh_result_t *r)
{
    size_t len = strlen(path) + 1;
    pageset_fp_t *f;

    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 1024;
        void  *p = realloc(s->fp, nc * sizeof(pageset_fp_t));

        if (p == NULL) {
            return -1;
        }
        s->fp = p;
        s->cap = nc;
    }
    if (s->slen + len > s->scap) {
        size_t nc = s->scap ? 2 * s->scap : 65536;
        void  *p;

        while (nc < s->slen + len) {
            nc *= 2;
        }
        p = realloc(s->str, nc);
        if (p == NULL) {
            return -1;
        }
        s->str = p;
        s->scap = nc;
    }
    f = &s->fp[s->n++];
    f->hash = r->hash;
    memcpy(f->w, r->weights, sizeof(f->w));
    f->status = (uint32_t) r->status;
    f->sk = r->sketches;
    f->short_hub = sh_result_short_hub(r);
    f->path = (uint32_t) s->slen;
    memcpy(s->str + s->slen, path, len);
    s->slen += len;
    return 0;
}

int
pageset_fingerprint(sh_config_t *cfg, const char *buf, size_t len,
                   sh_result_t *res)
{
    sh_doc_t *doc = sh_doc_new(cfg, NULL);
    int       rc;

    if (doc == NULL) {
        return -1;
    }
    rc = sh_doc_feed(doc, buf, len);
    if (rc == 0) {
        rc = sh_doc_finish(doc, res);
    }
    sh_doc_free(doc);
    return rc;
}

uint64_t
pageset_canary(sh_config_t *cfg)
{
    static const char page[] =
        "<html><head><title>Canary page</title></head><body>"
        "<h1>Near-duplicate detection</h1><p>The quick brown fox jumps over"
        " the lazy dog while the crawler fetches another copy of the same "
        "documentation page, 12 March 2024, version 1.63.0.</p><p>Simhash "
        "maps each page to sixty-four bits; pages that differ in a few "
        "words land a few bits apart, and the index finds them.</p>"
        "<ul><li>Vec&lt;T&gt;</li><li>HashMap</li><li>Option</li></ul>"
        "</body></html>";
    sh_result_t r;
    XXH3_state_t *st = XXH3_createState();
    uint64_t seed = sh_config_seed_digest(cfg), out;

    memset(&r, 0, sizeof(r));
    pageset_fingerprint(cfg, page, sizeof(page) - 1, &r);
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, &r.hash, sizeof(r.hash));
    XXH3_64bits_update(st, r.weights, sizeof(r.weights));
    XXH3_64bits_update(st, &r.nfeatures, sizeof(r.nfeatures));
    XXH3_64bits_update(st, &r.sketches, sizeof(r.sketches));
    XXH3_64bits_update(st, &seed, sizeof(seed));
    out = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return out;
}

int
pageset_save(const pageset_t *s, const char *path, uint64_t canary)
{
    sh_file_writer_t *w;
    uint64_t          hdr[4], sum;
    char              err[512];

    w = sh_file_writer_open(path, 0644, NULL, err, sizeof(err));
    if (w == NULL) {
        cli_error("%s", err);
        return -1;
    }
    memcpy(&hdr[0], FPSET_MAGIC, 8);
    hdr[1] = canary;
    hdr[2] = s->n;
    hdr[3] = s->slen;
    sum = XXH3_64bits(s->fp, s->n * sizeof(pageset_fp_t))
          ^ XXH3_64bits(s->str, s->slen);
    if (sh_file_writer_write(w, hdr, sizeof(hdr), err, sizeof(err)) != 0
        || sh_file_writer_write(w, s->fp, s->n * sizeof(pageset_fp_t), err,
                                sizeof(err)) != 0
        || sh_file_writer_write(w, s->str, s->slen, err, sizeof(err)) != 0
        || sh_file_writer_write(w, &sum, sizeof(sum), err, sizeof(err))
           != 0)
    {
        cli_error("%s", err);
        sh_file_writer_abort(w);
        return -1;
    }
    if (sh_file_writer_commit(w, err, sizeof(err)) != 0) {
        cli_error("%s", err);
        return -1;
    }
    return 0;
}

int
pageset_load(pageset_t *s, const char *path, uint64_t canary)
{
    FILE    *f = fopen(path, "rb");
    uint64_t hdr[4], sum;

    pageset_init(s);
    if (f == NULL) {
        return 1;
    }
    if (fread(hdr, sizeof(hdr), 1, f) != 1
        || memcmp(&hdr[0], FPSET_MAGIC, 8) != 0 || hdr[1] != canary
        || hdr[2] > (1u << 28) || hdr[3] > (1ull << 34))
    {
        fclose(f);
        return 1;
    }
    s->n = s->cap = hdr[2];
    s->slen = s->scap = hdr[3];
    s->fp = malloc((s->n ? s->n : 1) * sizeof(pageset_fp_t));
    s->str = malloc(s->slen ? s->slen : 1);
    if (s->fp == NULL || s->str == NULL
        || (s->n && fread(s->fp, sizeof(pageset_fp_t), s->n, f) != s->n)
        || (s->slen && fread(s->str, 1, s->slen, f) != s->slen)
        || fread(&sum, sizeof(sum), 1, f) != 1
        || sum != (XXH3_64bits(s->fp, s->n * sizeof(pageset_fp_t))
                   ^ XXH3_64bits(s->str, s->slen)))
    {
        fclose(f);
        pageset_free(s);
        return 1;
    }
    fclose(f);
    return 0;
}

void
pageset_progress(const char *what, size_t done, size_t total)
{
    static int tty = -1;

    if (tty < 0) {
        tty = isatty(2);
    }
    if (!tty) {
        return;
    }
    if (done == total) {
        fprintf(stderr, "\r%s: %zu/%zu\n", what, done, total);
    } else if (done % 256 == 0) {
        fprintf(stderr, "\r%s: %zu/%zu", what, done, total);
    }
}

int
pageset_from_paths(pageset_t *s, sh_config_t *cfg, const char *charset,
                    char **paths, size_t n, const char *cache)
{
    uint64_t canary = pageset_canary(cfg);
    size_t   i;

    if (cache != NULL) {
        int rc = pageset_load(s, cache, canary);

        if (rc == 0 && s->n == n) {
            /* Same options and same list: trust it. */
            for (i = 0; i < n && strcmp(pageset_path(s, i), paths[i]) == 0;
                 i++) {
            }
            if (i == n) {
                return 0;
            }
        }
        pageset_free(s);
    }
    pageset_init(s);
    for (i = 0; i < n; i++) {
        sh_result_t r;

        memset(&r, 0, sizeof(r));
        if (cli_fingerprint_file(cfg, paths[i], charset, &r) != 0) {
            r.status = SH_STATUS_BINARY;      /* unreadable: no print */
        }
        if (pageset_add(s, paths[i], &r) != 0) {
            cli_error("out of memory");
            return -1;
        }
        pageset_progress("fingerprinting", i + 1, n);
    }
    if (cache != NULL && pageset_save(s, cache, canary) != 0) {
        return -1;
    }
    return 0;
}
