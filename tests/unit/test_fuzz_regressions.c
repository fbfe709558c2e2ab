/*
 * test_fuzz_regressions.c -- replay every input kept under fuzz/ through
 * the harness it was found with.
 *
 *   fuzz/regressions/NAME/    inputs that once made fuzz_NAME fail (each
 *                             named for the bug; docs/FUZZING.md says which
 *                             fix it checks)
 *   fuzz/seeds/NAME/          small seeds, so that every harness runs here
 *                             even where nothing was ever found
 *
 * The harnesses are the fuzz targets' own code, fuzz/fuzz_NAME.c, compiled
 * here by gcc without libFuzzer: FUZZ_REPLAY keeps them from defining
 * libFuzzer's entry points (they all would, under one name), and FUZZ_FAIL
 * turns a failed property check into a failed test naming the input.  The
 * harnesses check their properties themselves (chunk invariance, the
 * brute-force model, loaders refusing or answering exactly), so a fixed bug
 * that comes back fails here; `make unit SANITIZE=1` adds ASan and UBSan,
 * for the bugs that were memory or undefined behaviour.
 *
 * Run from the repository root (as `make unit` does); SH_FUZZ_DIR names
 * another fuzz/ directory.
 */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

static char fuzz_current[4096];

#define FUZZ_REPLAY 1
#define FUZZ_FAIL(file, line, what) \
    fail_msg("%s:%d: check failed: %s (input %s)", file, line, what, \
             fuzz_current)

#include "../../fuzz/fuzz_cost.c"
#include "../../fuzz/fuzz_doc.c"
#include "../../fuzz/fuzz_dust.c"
#include "../../fuzz/fuzz_figures.c"
#include "../../fuzz/fuzz_idf.c"
#include "../../fuzz/fuzz_image.c"
#include "../../fuzz/fuzz_index.c"
#include "../../fuzz/fuzz_snapshot.c"
#include "../../fuzz/fuzz_volatility.c"

typedef struct {
    const char *name;
    void      (*init)(void);
    int       (*one)(const uint8_t *data, size_t size);
} replay_target_t;

static const replay_target_t targets[] = {
    { "cost", fcost_init, fcost_one },
    { "doc", fdoc_init, fdoc_one },
    { "dust", fdust_init, fdust_one },
    { "figures", ffig_init, ffig_one },
    { "idf", fidf_init, fidf_one },
    { "image", fimg_init, fimg_one },
    { "index", fix_init, fix_one },
    { "snapshot", fsnap_init, fsnap_one },
    { "volatility", fvol_init, fvol_one },
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

static const char *
fuzz_dir(void)
{
    const char *d = getenv("SH_FUZZ_DIR");

    return d != NULL && *d != '\0' ? d : "fuzz";
}

static int
skip_name(const char *name)
{
    return name[0] == '.' || strncmp(name, "README", 6) == 0;
}

/* Replay every file of DIR through t; returns how many (0 if DIR does not
 * exist: a target without regressions has no directory). */
static unsigned
replay_dir(const replay_target_t *t, const char *dir)
{
    DIR           *d = opendir(dir);
    struct dirent *e;
    struct stat    sb;
    unsigned       n = 0;
    uint8_t       *buf;
    size_t         len;

    if (d == NULL) {
        if (errno != ENOENT) {
            fail_msg("%s: %s", dir, strerror(errno));
        }
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        if (skip_name(e->d_name)) {
            continue;
        }
        snprintf(fuzz_current, sizeof(fuzz_current), "%s/%s", dir,
                 e->d_name);
        if (stat(fuzz_current, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            continue;
        }
        buf = fuzz_read_file(fuzz_current, &len);
        if (buf == NULL) {
            fail_msg("cannot read %s", fuzz_current);
        }
        t->one(buf, len);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

static void
test_replay(void **state)
{
    const replay_target_t *t = *state;
    char                   dir[2048];
    unsigned               seeds, regressions;

    t->init();
    snprintf(dir, sizeof(dir), "%s/seeds/%s", fuzz_dir(), t->name);
    seeds = replay_dir(t, dir);
    snprintf(dir, sizeof(dir), "%s/regressions/%s", fuzz_dir(), t->name);
    regressions = replay_dir(t, dir);
    print_message("fuzz_%s: %u seeds, %u regressions replayed\n", t->name,
                  seeds, regressions);
    /* Never an empty test: the committed seeds are there. */
    if (seeds == 0) {
        fail_msg("no seeds for fuzz_%s under %s/seeds (run from the "
                 "repository root, or set SH_FUZZ_DIR)", t->name,
                 fuzz_dir());
    }
}

/* A directory under regressions/ or seeds/ that names no harness would be
 * skipped silently: refuse it. */
static void
test_no_stray_directories(void **state)
{
    const char    *kinds[] = { "seeds", "regressions" };
    char           dir[2048];
    DIR           *d;
    struct dirent *e;
    unsigned       k, i;

    (void) state;
    for (k = 0; k < 2; k++) {
        snprintf(dir, sizeof(dir), "%s/%s", fuzz_dir(), kinds[k]);
        d = opendir(dir);
        if (d == NULL) {
            fail_msg("%s: %s", dir, strerror(errno));
        }
        while ((e = readdir(d)) != NULL) {
            if (skip_name(e->d_name)) {
                continue;
            }
            for (i = 0; i < NTARGETS; i++) {
                if (strcmp(e->d_name, targets[i].name) == 0) {
                    break;
                }
            }
            if (i == NTARGETS) {
                fail_msg("%s/%s: no harness fuzz/fuzz_%s.c", dir, e->d_name,
                         e->d_name);
            }
        }
        closedir(d);
    }
}

int
main(void)
{
    /* One test a harness, named for it. */
    const struct CMUnitTest tests[] = {
        { "replay_cost", test_replay, NULL, NULL, (void *) &targets[0] },
        { "replay_doc", test_replay, NULL, NULL, (void *) &targets[1] },
        { "replay_dust", test_replay, NULL, NULL, (void *) &targets[2] },
        { "replay_idf", test_replay, NULL, NULL, (void *) &targets[3] },
        { "replay_image", test_replay, NULL, NULL, (void *) &targets[4] },
        { "replay_index", test_replay, NULL, NULL, (void *) &targets[5] },
        { "replay_snapshot", test_replay, NULL, NULL, (void *) &targets[6] },
        { "replay_volatility", test_replay, NULL, NULL,
          (void *) &targets[7] },
        cmocka_unit_test(test_no_stray_directories),
    };

    sh_library_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
