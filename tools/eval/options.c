/*
 * options.c -- one extraction configuration per --config argument:
 *
 *     "NAME: --shingle 2 --word-weight 0 ..."
 *
 * The options are those of `simhash fingerprint`, parsed by the same code
 * (cli_extract_arg in tools/simhash/cli.c), so that a line of
 * docs/QUALITY.md can be pasted onto the command line; anything not given
 * keeps the library default (sh_options_init).  --ignore patterns cannot
 * contain spaces here.  One option is sh-eval's own:
 *     --idf-corpus LIST      build the IDF table from the pages in LIST
 *                            with this configuration's options and key
 *
 * Several configurations are compared in one run, so each is one shell
 * word rather than options of sh-eval itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "cli.h"
#include "eval.h"

void
ev_config_parse(ev_config_t *c, const char *text)
{
    /* The option strings point into `buf`, which lives as long as the
     * configuration does. */
    char          *buf = ev_xstrdup(text);
    char          *colon = strchr(buf, ':');
    char          *tok, *save = NULL, *argv[128];
    int            argc = 0, i, r;
    cli_extract_t  x;

    memset(c, 0, sizeof(*c));
    sh_options_init(&c->opts);
    if (colon == NULL || colon == buf) {
        ev_die("--config '%s': expected \"NAME: --option value ...\"",
               text);
    }
    *colon = '\0';
    c->name = buf;
    c->spec = ev_xstrdup(colon + 1 + strspn(colon + 1, " \t"));

    /* Split into words, then let the simhash CLI's own parser take the
     * extraction options: one definition of what each option means. */
    for (tok = strtok_r(colon + 1, " \t", &save); tok != NULL;
         tok = strtok_r(NULL, " \t", &save))
    {
        if (argc == sizeof(argv) / sizeof(argv[0])) {
            ev_die("config %s: too many words", c->name);
        }
        argv[argc++] = tok;
    }
    cli_extract_init(&x);
    x.opts = c->opts;
    for (i = 0; i < argc; i++) {
        r = cli_extract_arg(&x, argc, argv, &i);
        if (r < 0) {
            ev_die("config %s: bad option value", c->name);
        }
        if (r > 0) {
            continue;
        }
        if (strcmp(argv[i], "--idf-corpus") == 0 && i + 1 < argc) {
            c->idf_corpus = argv[++i];
            x.opts.idf_file = NULL;
        } else {
            ev_die("config %s: unknown option '%s'", c->name, argv[i]);
        }
    }
    c->opts = x.opts;
}

/*
 * Seed 0 keeps whatever the configuration says (the public key unless it
 * gave --seed); seed K > 0 is the key "sh-eval-K".
 */
void
ev_config_seed(ev_config_t *c, unsigned seed)
{
    static char names[EV_SEEDS_MAX][24];

    if (c->spec_seed == NULL) {
        c->spec_seed = c->opts.seed ? c->opts.seed : "";
        c->spec_seed_len = c->opts.seed_len;
    }
    if (seed == 0) {
        c->opts.seed = c->spec_seed_len ? c->spec_seed : NULL;
        c->opts.seed_len = c->spec_seed_len;
        return;
    }
    if (seed >= EV_SEEDS_MAX) {
        ev_die("seed %u out of range", seed);
    }
    snprintf(names[seed], sizeof(names[seed]), "sh-eval-%u", seed);
    c->opts.seed = names[seed];
    c->opts.seed_len = strlen(names[seed]);
}

static void
put(XXH3_state_t *st, const void *p, size_t n)
{
    XXH3_64bits_update(st, p, n);
}

static void
put_str(XXH3_state_t *st, const char *s)
{
    uint32_t n = s ? (uint32_t) strlen(s) : UINT32_MAX;

    put(st, &n, sizeof(n));
    if (s) {
        put(st, s, n);
    }
}

/* A file named by an option is part of the key by its content, so that
 * an IDF table rebuilt differently under the same name invalidates the
 * cache, and one rewritten identically (eval.sh's lists) does not. */
static void
put_file(XXH3_state_t *st, const char *path)
{
    char buf[65536];
    uint64_t h = 0;
    size_t n;
    FILE *f;

    put_str(st, path);
    if (path && (f = fopen(path, "rb")) != NULL) {
        XXH3_state_t *fs = XXH3_createState();

        if (fs == NULL) {
            ev_die("out of memory");
        }
        XXH3_64bits_reset(fs);
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
            XXH3_64bits_update(fs, buf, n);
        }
        fclose(f);
        h = XXH3_64bits_digest(fs);
        XXH3_freeState(fs);
    }
    put(st, &h, sizeof(h));
}

uint64_t
ev_config_key(const ev_config_t *c, uint64_t salt)
{
    const sh_options_t *o = &c->opts;
    XXH3_state_t *st = XXH3_createState();
    uint64_t key;
    unsigned i;

    if (st == NULL) {
        ev_die("out of memory");
    }
    XXH3_64bits_reset_withSeed(st, salt);
    put(st, &o->shingle, sizeof(o->shingle));
    put_str(st, o->stem);
    put_file(st, o->stopwords_file);
    put(st, &o->stopwords_off, sizeof(o->stopwords_off));
    for (i = 0; i < o->nignore; i++) {
        put_str(st, o->ignore[i]);
    }
    put(st, &o->min_features, sizeof(o->min_features));
    put(st, &o->max_features, sizeof(o->max_features));
    /* A table built from --idf-corpus is a function of the corpus, the
     * options above and the key. */
    put_file(st, c->idf_corpus ? c->idf_corpus : o->idf_file);
    put(st, o->weight, sizeof(o->weight));
    put(st, &o->content, sizeof(o->content));
    put(st, &o->seed_len, sizeof(o->seed_len));
    if (o->seed_len) {
        put(st, o->seed, o->seed_len);
    }
    key = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return key;
}
