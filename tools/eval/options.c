/*
 * options.c -- one extraction configuration per --config argument:
 *
 *     "NAME: --shingle 2 --word-weight 0 ..."
 *
 * The options are those of `simhash fingerprint` (cli_extract_arg in
 * tools/simhash/cli.c), with the same names and values, so that a line of
 * docs/QUALITY.md can be pasted onto the command line; anything not given
 * keeps the library default (sh_options_init):
 *     --shingle N            words per shingle, 1 = words only
 *     --stem LANG|none       Snowball language
 *     --stopwords FILE|none  stop-word list (none: keep every word)
 *     --idf FILE             IDF table from `simhash idf build`
 *     --word-weight F        constant weight of word features
 *     --shingle-weight F     constant weight of shingle features
 *     --min-features N   --max-features N
 *     --ignore PCRE          (repeatable; no spaces inside)
 *     --seed S               hash key (sh-eval --seeds varies it instead)
 * and one of sh-eval's own:
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

#include "eval.h"

static unsigned
parse_uint(const char *key, const char *v, unsigned lo, unsigned hi)
{
    char *end;
    unsigned long n;

    errno = 0;
    n = strtoul(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) {
        ev_die("%s=%s: expected an integer in [%u, %u]", key, v, lo, hi);
    }
    return (unsigned) n;
}

static float
parse_weight(const char *key, const char *v)
{
    char *end;
    double d;

    errno = 0;
    d = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(d >= 0.0 && d <= 1e6)) {
        ev_die("%s=%s: expected a non-negative number", key, v);
    }
    return (float) d;
}

static void
set_option(ev_config_t *c, const char *key, char *v)
{
    sh_options_t *o = &c->opts;

    if (v == NULL) {
        ev_die("config %s: %s needs a value", c->name, key);
    }
    if (strcmp(key, "--shingle") == 0) {
        o->shingle = parse_uint(key, v, 1, SH_SHINGLE_MAX);
    } else if (strcmp(key, "--stem") == 0) {
        if (strcmp(v, "none") == 0 || strcmp(v, "off") == 0) {
            o->stem = NULL;
        } else if (!sh_stem_lang_valid(v)) {
            ev_die("config %s: unknown Snowball language %s", c->name, v);
        } else {
            o->stem = v;
        }
    } else if (strcmp(key, "--stopwords") == 0) {
        o->stopwords_off = strcmp(v, "none") == 0 || strcmp(v, "off") == 0;
        o->stopwords_file = o->stopwords_off ? NULL : v;
    } else if (strcmp(key, "--idf") == 0) {
        o->idf_file = strcmp(v, "none") == 0 ? NULL : v;
    } else if (strcmp(key, "--word-weight") == 0) {
        o->weight[SH_FEAT_WORD] = parse_weight(key, v);
    } else if (strcmp(key, "--shingle-weight") == 0) {
        o->weight[SH_FEAT_SHINGLE] = parse_weight(key, v);
    } else if (strcmp(key, "--min-features") == 0) {
        o->min_features = parse_uint(key, v, 0, 1u << 24);
    } else if (strcmp(key, "--max-features") == 0) {
        o->max_features = parse_uint(key, v, 1, 1u << 24);
    } else if (strcmp(key, "--idf-corpus") == 0) {
        c->idf_corpus = v;
        o->idf_file = NULL;
    } else if (strcmp(key, "--seed") == 0) {
        o->seed = v;
        o->seed_len = strlen(v);
    } else if (strcmp(key, "--ignore") == 0) {
        if (sh_options_add_ignore(o, v) != 0) {
            ev_die("config %s: too many ignore patterns", c->name);
        }
    } else {
        ev_die("config %s: unknown option '%s'", c->name, key);
    }
}

void
ev_config_parse(ev_config_t *c, const char *text)
{
    /* The option strings point into `buf`, which lives as long as the
     * configuration does. */
    char *buf = ev_xstrdup(text);
    char *colon = strchr(buf, ':');
    char *tok, *save = NULL;

    memset(c, 0, sizeof(*c));
    sh_options_init(&c->opts);
    if (colon == NULL || colon == buf) {
        ev_die("--config '%s': expected \"NAME: --option value ...\"",
               text);
    }
    *colon = '\0';
    c->name = buf;
    c->spec = ev_xstrdup(colon + 1 + strspn(colon + 1, " \t"));

    for (tok = strtok_r(colon + 1, " \t", &save); tok != NULL;
         tok = strtok_r(NULL, " \t", &save))
    {
        set_option(c, tok, strtok_r(NULL, " \t", &save));
    }
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
    put(st, &o->seed_len, sizeof(o->seed_len));
    if (o->seed_len) {
        put(st, o->seed, o->seed_len);
    }
    key = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return key;
}
