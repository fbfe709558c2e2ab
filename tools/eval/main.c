/*
 * sh-eval -- measure fingerprint quality against exact Jaccard similarity.
 *
 *   sh-eval --aligned FILE --prose FILE --out DIR [--cache DIR]
 *           [--threads N] [--seeds N] --config "NAME: --option value ..." ...
 *
 *   --aligned  lines "GROUP<TAB>PAGE_A<TAB>PAGE_B": the same document under
 *              two URLs (std/x.html and core/x.html; GROUP "core")
 *   --prose    lines "GROUP<TAB>PAGE": every pair of these pages is measured
 *   --template lines "GROUP<TAB>XPATH<TAB>PAGE_A<TAB>PAGE_B", --site lines
 *              "GROUP<TAB>XPATH<TAB>PAGE": measured against main-content
 *              truth (template.c)
 *   --sketch   also simulate learned per-host templates on the --site
 *              groups (sketch.c)
 *   --config   an extraction configuration (see options.c); the first one
 *              also defines the visible text of the ground truth (its
 *              ignore patterns matter, nothing else of it does)
 *   --seeds    measure every configuration under N hash keys and pool the
 *              counts (default 1: the public key only)
 *   --identity what cached results are keyed by (default: this binary's
 *              size and time; eval.sh passes a digest of the library)
 *   --match    the configuration the match rules are compared under
 *              (match.c; default: the first one)
 *
 * tools/eval.sh builds the lists from the installed Debian packages and
 * turns the output directory into docs/QUALITY.md and docs/quality-h.png.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "eval.h"
#include "sh_library.h"

typedef struct {
    uint32_t a, b;
    uint16_t group;
} listed_pair_t;

typedef struct {
    uint32_t page;
    uint16_t group;
} listed_page_t;

static void
usage(FILE *f)
{
    fprintf(f,
"usage: sh-eval --aligned FILE --prose FILE --out DIR [--cache DIR]\n"
"               [--threads N] [--seeds N] [--identity STRING]\n"
"               [--template FILE] [--site FILE] [--sketch]\n"
"               [--match CONFIG_NAME]\n"
"               --config 'NAME: --option value ...' ...\n"
"config options (as in simhash fingerprint): --shingle N --stem LANG|none\n"
"  --stopwords FILE|none --idf FILE --word-weight F --shingle-weight F\n"
"  --min-features N --max-features N --ignore PCRE\n");
}

static void
read_aligned(ev_run_t *run, const char *path, listed_pair_t **out,
             size_t *nout)
{
    FILE *f = fopen(path, "r");
    char *line = NULL, *fld[3];
    size_t cap = 0, n = 0, alloc = 0;
    listed_pair_t *v = NULL;
    unsigned lineno = 0;

    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        if (line[0] == '\n' || line[0] == '#') {
            continue;
        }
        if (ev_split_tabs(line, fld, 3) != 3) {
            ev_die("%s:%u: expected GROUP<TAB>PAGE<TAB>PAGE", path, lineno);
        }
        if (n == alloc) {
            alloc = alloc ? alloc * 2 : 1024;
            v = ev_xrealloc(v, alloc * sizeof(*v));
        }
        v[n].group = (uint16_t) ev_group(run, fld[0], EV_ALIGNED);
        v[n].a = ev_page(run, fld[1]);
        v[n].b = ev_page(run, fld[2]);
        n++;
    }
    free(line);
    fclose(f);
    *out = v;
    *nout = n;
}

static void
read_prose(ev_run_t *run, const char *path, listed_page_t **out,
           size_t *nout)
{
    FILE *f = fopen(path, "r");
    char *line = NULL, *fld[2];
    size_t cap = 0, n = 0, alloc = 0;
    listed_page_t *v = NULL;
    unsigned lineno = 0;

    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        if (line[0] == '\n' || line[0] == '#') {
            continue;
        }
        if (ev_split_tabs(line, fld, 2) != 2) {
            ev_die("%s:%u: expected GROUP<TAB>PAGE", path, lineno);
        }
        if (n == alloc) {
            alloc = alloc ? alloc * 2 : 1024;
            v = ev_xrealloc(v, alloc * sizeof(*v));
        }
        /* Group names are registered as they come; pair groups are named
         * after them below. */
        v[n].group = (uint16_t) ev_group(run, fld[0], EV_PROSE);
        v[n].page = ev_page(run, fld[1]);
        n++;
    }
    free(line);
    fclose(f);
    *out = v;
    *nout = n;
}

static int
usable(const ev_run_t *run, uint32_t page)
{
    return run->pages[page].nshingles >= EV_MIN_SHINGLES;
}

static void
make_pairs(ev_run_t *run, const listed_pair_t *al, size_t nal,
           const listed_page_t *pr, size_t npr)
{
    uint16_t cross[EV_GROUPS_MAX][EV_GROUPS_MAX];
    unsigned nsrc = run->ngroups, g, h;
    size_t i, j;

    run->aligned_listed = nal;
    for (i = 0; i < nal; i++) {
        if (usable(run, al[i].a) && usable(run, al[i].b)) {
            ev_add_pair(run, al[i].a, al[i].b, EV_ALIGNED, al[i].group);
        } else {
            run->aligned_dropped++;
        }
    }

    /* Pair groups for prose: "python" within a package, "python~postgresql"
     * across two, in the order the packages were listed. */
    for (g = 0; g < nsrc; g++) {
        for (h = g; h < nsrc; h++) {
            char name[256];

            if (run->group_kind[g] != EV_PROSE
                || run->group_kind[h] != EV_PROSE) {
                continue;
            }
            if (g == h) {
                cross[g][h] = (uint16_t) g;
            } else {
                snprintf(name, sizeof(name), "%s~%s", run->groups[g],
                         run->groups[h]);
                cross[g][h] = (uint16_t) ev_group(run, name, EV_PROSE);
            }
            cross[h][g] = cross[g][h];
        }
    }
    run->prose_listed = npr;
    for (i = 0; i < npr; i++) {
        if (!usable(run, pr[i].page)) {
            run->prose_dropped++;
            continue;
        }
        for (j = i + 1; j < npr; j++) {
            if (usable(run, pr[j].page) && pr[i].page != pr[j].page) {
                ev_add_pair(run, pr[i].page, pr[j].page, EV_PROSE,
                            cross[pr[i].group][pr[j].group]);
            }
        }
    }
}

static void
write_summary(const ev_run_t *run)
{
    char path[4096];
    FILE *f;
    size_t i;

    snprintf(path, sizeof(path), "%s/summary.txt", run->out_dir);
    f = fopen(path, "w");
    if (f == NULL) {
        ev_die("%s: %s", path, strerror(errno));
    }
    fprintf(f, "pages fingerprinted: %zu\n", run->npages);
    fprintf(f, "aligned pairs listed: %zu, left out (a page with fewer than"
            " %d distinct %d-word shingles): %zu\n", run->aligned_listed,
            EV_MIN_SHINGLES, EV_SHINGLE_W, run->aligned_dropped);
    fprintf(f, "prose pages listed: %zu, left out (same rule): %zu\n",
            run->prose_listed, run->prose_dropped);
    fprintf(f, "pairs measured: %zu\n", run->npairs);
    fprintf(f, "hash keys per configuration: %u\n", run->nseeds);
    for (i = 0; i < run->nconfigs; i++) {
        fprintf(f, "config %s: %s%s\n", run->configs[i].name,
                run->configs[i].spec,
                run->configs[i].cached == run->nseeds ? " (cached)" : "");
    }
    fclose(f);
}

int
main(int argc, char **argv)
{
    ev_run_t run;
    const char *aligned = NULL, *prose = NULL, *tmpl = NULL, *site = NULL;
    listed_pair_t *al = NULL;
    listed_page_t *pr = NULL;
    size_t nal = 0, npr = 0, i;
    uint64_t tkey;
    double t0;
    int k, sketch = 0;

    memset(&run, 0, sizeof(run));
    run.threads = 2;
    run.nseeds = 1;
    run.configs = ev_xcalloc((size_t) argc, sizeof(*run.configs));
    for (k = 1; k < argc; k++) {
        const char *a = argv[k];

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--sketch") == 0) {
            sketch = 1;
            continue;
        }
        if (k + 1 >= argc) {
            usage(stderr);
            return 2;
        }
        if (strcmp(a, "--aligned") == 0) {
            aligned = argv[++k];
        } else if (strcmp(a, "--prose") == 0) {
            prose = argv[++k];
        } else if (strcmp(a, "--template") == 0) {
            tmpl = argv[++k];
        } else if (strcmp(a, "--site") == 0) {
            site = argv[++k];
        } else if (strcmp(a, "--out") == 0) {
            run.out_dir = argv[++k];
        } else if (strcmp(a, "--cache") == 0) {
            run.cache_dir = argv[++k];
        } else if (strcmp(a, "--threads") == 0) {
            run.threads = (unsigned) atoi(argv[++k]);
            if (run.threads < 1 || run.threads > 64) {
                ev_die("--threads: expected 1..64");
            }
        } else if (strcmp(a, "--identity") == 0) {
            /* What the cache is keyed by instead of this binary: eval.sh
             * passes a digest of libsimhash.a, so that changing only the
             * evaluation code keeps the fingerprints. */
            const char *v = argv[++k];

            run.identity = XXH3_64bits(v, strlen(v));
        } else if (strcmp(a, "--match") == 0) {
            run.match_config = argv[++k];
        } else if (strcmp(a, "--seeds") == 0) {
            run.nseeds = (unsigned) atoi(argv[++k]);
            if (run.nseeds < 1 || run.nseeds > EV_SEEDS_MAX) {
                ev_die("--seeds: expected 1..%d", EV_SEEDS_MAX);
            }
        } else if (strcmp(a, "--config") == 0) {
            ev_config_t *c = &run.configs[run.nconfigs++];

            ev_config_parse(c, argv[++k]);
            if (strspn(c->name, "abcdefghijklmnopqrstuvwxyz"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
                != strlen(c->name)) {
                ev_die("config name '%s': use letters, digits, . _ -",
                       c->name);
            }
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (aligned == NULL || prose == NULL || run.out_dir == NULL
        || run.nconfigs == 0) {
        usage(stderr);
        return 2;
    }
    if (mkdir(run.out_dir, 0777) != 0 && errno != EEXIST) {
        ev_die("%s: %s", run.out_dir, strerror(errno));
    }
    if (run.cache_dir && mkdir(run.cache_dir, 0777) != 0
        && errno != EEXIST) {
        ev_die("%s: %s", run.cache_dir, strerror(errno));
    }

    for (i = 0; i < run.nconfigs; i++) {
        const ev_config_t *c = &run.configs[i];

        if (run.nseeds > 1 && c->opts.idf_file != NULL) {
            ev_die("config %s: an --idf table holds one key's hashes; with"
                   " --seeds use --idf-corpus LIST", c->name);
        }
        if (run.nseeds > 1 && c->opts.seed_len > 0) {
            ev_die("config %s: --seed and --seeds exclude each other",
                   c->name);
        }
    }

    sh_library_init();
    if (run.identity == 0) {
        run.identity = ev_self_identity();
    }
    read_aligned(&run, aligned, &al, &nal);
    read_prose(&run, prose, &pr, &npr);
    if (tmpl != NULL) {
        ev_template_read(&run, tmpl, 0);
    }
    if (site != NULL) {
        ev_template_read(&run, site, 1);
    }
    fprintf(stderr, "sh-eval: %zu pages, %zu aligned pairs, %zu prose "
            "pages, %zu configurations, %u threads\n", run.npages, nal,
            npr, run.nconfigs, run.threads);

    t0 = ev_now();
    tkey = ev_config_key(&run.configs[0], run.identity ^ 0x7472757468ULL);
    if (!ev_truth_load(&run, tkey)) {
        ev_truth(&run, &run.configs[0]);
        ev_truth_save(&run, tkey);
    }
    make_pairs(&run, al, nal, pr, npr);
    ev_pairs_jaccard(&run);
    fprintf(stderr, "sh-eval: ground truth: %zu pairs in %.1f s\n",
            run.npairs, ev_now() - t0);
    ev_template_truth(&run);

    for (i = 0; i < run.nconfigs; i++) {
        ev_config_t *c = &run.configs[i];
        unsigned s;

        for (s = 0; s < run.nseeds; s++) {
            ev_fingerprint(&run, c, s);
        }
        fprintf(stderr, "sh-eval: config %s: %.1f s per pass%s\n", c->name,
                c->seconds / run.nseeds,
                c->cached == run.nseeds ? " (cached)" : "");
    }
    write_summary(&run);
    ev_report(&run);
    for (i = 0; i < run.nconfigs; i++) {
        if (run.match_config == NULL
            || strcmp(run.match_config, run.configs[i].name) == 0)
        {
            ev_match_report(&run, &run.configs[i]);
            break;
        }
    }
    if (i == run.nconfigs) {
        ev_die("--match %s: no configuration of that name",
               run.match_config);
    }
    ev_template_report(&run);
    if (sketch) {
        ev_sketch_report(&run);
    }
    free(al);
    free(pr);
    return 0;
}
