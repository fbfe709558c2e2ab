/*
 * idf.c -- IDF tables for configurations given --idf-corpus LIST.
 *
 * A table holds keyed word hashes, so it is valid only under the key it was
 * built with; measuring a configuration under several keys needs a table
 * per key.  This does what `simhash idf build --seed K --list LIST` does,
 * through the same library calls (sh_idf.h), and keeps the tables in the
 * cache directory.  The key of a table covers only what shapes words
 * (stemmer, stop words, ignore patterns, hash key), so configurations that
 * differ in shingle size or weights share one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "eval.h"
#include "sh_idf.h"

typedef struct {
    uint64_t *v;
    size_t    n, cap;
} words_t;

static void
collect(void *arg, uint64_t feature, unsigned type, uint32_t tf)
{
    words_t *w = arg;

    if (type != SH_FEAT_WORD) {
        return;
    }
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 4096;
        w->v = ev_xrealloc(w->v, w->cap * sizeof(*w->v));
    }
    w->v[w->n++] = feature;
}

/* The options of `c` that decide which words exist and how they hash. */
static uint64_t
table_key(const ev_run_t *run, const ev_config_t *c)
{
    ev_config_t k;

    memset(&k, 0, sizeof(k));
    sh_options_init(&k.opts);
    k.opts.stem = c->opts.stem;
    k.opts.stopwords_file = c->opts.stopwords_file;
    k.opts.stopwords_off = c->opts.stopwords_off;
    memcpy(k.opts.ignore, c->opts.ignore, sizeof(k.opts.ignore));
    k.opts.nignore = c->opts.nignore;
    k.opts.max_features = c->opts.max_features;
    k.opts.seed = c->opts.seed;
    k.opts.seed_len = c->opts.seed_len;
    k.idf_corpus = c->idf_corpus;
    return ev_config_key(&k, run->identity ^ 0x696466ULL);
}

static void
build(const ev_config_t *c, const char *out)
{
    sh_options_t o = c->opts;
    sh_config_t *cfg;
    sh_idf_builder_t *b;
    words_t w = { NULL, 0, 0 };
    char err[512], *line = NULL, *buf = ev_xmalloc(65536);
    size_t cap = 0, n, pages = 0;
    FILE *list, *f;

    /* Count every word, whatever table the configuration would use. */
    o.idf_file = NULL;
    cfg = sh_config_new(&o, err, sizeof(err));
    if (cfg == NULL) {
        ev_die("config %s: %s", c->name, err);
    }
    list = fopen(c->idf_corpus, "r");
    if (list == NULL) {
        ev_die("%s: %s", c->idf_corpus, strerror(errno));
    }
    b = sh_idf_builder_new();
    if (b == NULL) {
        ev_die("out of memory");
    }
    while (getline(&line, &cap, list) > 0) {
        sh_doc_t *doc;
        sh_result_t res;

        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || (f = fopen(line, "rb")) == NULL) {
            continue;
        }
        doc = sh_doc_new(cfg, NULL);
        if (doc == NULL) {
            ev_die("out of memory");
        }
        while ((n = fread(buf, 1, 65536, f)) > 0
               && sh_doc_feed(doc, buf, n) == 0) {
        }
        fclose(f);
        if (sh_doc_finish(doc, &res) == 0 && res.status == SH_STATUS_OK) {
            w.n = 0;
            sh_doc_foreach_feature(doc, collect, &w);
            if (sh_idf_builder_add(b, w.v, w.n) != 0) {
                ev_die("out of memory");
            }
            pages++;
        }
        sh_doc_free(doc);
    }
    fclose(list);
    if (pages == 0) {
        ev_die("%s: no usable page for an IDF table", c->idf_corpus);
    }
    if (sh_idf_builder_save(b, out, sh_config_seed_digest(cfg),
                            sh_config_words_version(cfg), err,
                            sizeof(err)) != 0) {
        ev_die("%s: %s", out, err);
    }
    fprintf(stderr, "sh-eval: IDF table from %zu pages: %s\n", pages, out);
    sh_idf_builder_free(b);
    sh_config_free(cfg);
    free(line);
    free(buf);
    free(w.v);
}

void
ev_idf_prepare(ev_run_t *run, ev_config_t *c)
{
    char path[4096];
    const char *dir = run->cache_dir ? run->cache_dir : run->out_dir;

    snprintf(path, sizeof(path), "%s/idf-%016llx.tbl", dir,
             (unsigned long long) table_key(run, c));
    if (access(path, R_OK) != 0) {
        build(c, path);     /* sh_idf_builder_save replaces it atomically */
    }
    /* The path outlives this call: configurations keep pointers. */
    free(c->idf_path);
    c->idf_path = ev_xstrdup(path);
    c->opts.idf_file = c->idf_path;
}
