/*
 * fuzz_util.h -- what every fuzz harness shares.
 *
 * A harness is a file fuzz/fuzz_NAME.c with two functions,
 * fuzz_NAME_init() (once per process) and fuzz_NAME_one(data, size) (once
 * per input), and the line FUZZ_ENTRY(fuzz_NAME_init, fuzz_NAME_one) that
 * turns them into libFuzzer's entry points.  The same file is compiled two
 * ways:
 *
 *   - by tools/fuzz.sh, with clang -fsanitize=fuzzer,address,undefined,
 *     one binary per harness;
 *   - by gcc, #included (all harnesses into one translation unit) by
 *     tests/unit/test_fuzz_regressions.c, which defines FUZZ_REPLAY before
 *     including them so that no harness defines LLVMFuzzerTestOneInput, and
 *     defines FUZZ_FAIL so that a failed check fails the cmocka test.
 *
 * Hence the rules for harness files: every file-scope name carries the
 * harness's own prefix (they share one translation unit in the replay), and
 * shared helpers live here as static functions.
 *
 * A harness checks properties with FUZZ_CHECK: on failure it reports and
 * aborts, which libFuzzer records as a crash with the input that caused it.
 */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FUZZ_FAIL
#define FUZZ_FAIL(file, line, what) \
    (fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what), \
     abort())
#endif

#define FUZZ_CHECK(cond) \
    do { \
        if (!(cond)) { \
            FUZZ_FAIL(__FILE__, __LINE__, #cond); \
        } \
    } while (0)

#ifdef FUZZ_REPLAY
#define FUZZ_ENTRY(init, one)
#else
#define FUZZ_ENTRY(init, one) \
    int LLVMFuzzerInitialize(int *argc, char ***argv); \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); \
    int LLVMFuzzerInitialize(int *argc, char ***argv) \
    { \
        (void) argc; \
        (void) argv; \
        init(); \
        return 0; \
    } \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) \
    { \
        return one(data, size); \
    }
#endif

/* ---- Reading an input as a stream of decisions. ---- */

/* Past the end every read returns zeros: an input is never "too short",
 * it just stops making choices. */
typedef struct {
    const uint8_t *p;
    size_t         n;
} fuzz_in_t;

static inline unsigned
fuzz_u8(fuzz_in_t *in)
{
    if (in->n == 0) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static inline unsigned
fuzz_u16(fuzz_in_t *in)
{
    unsigned lo = fuzz_u8(in);

    return lo | fuzz_u8(in) << 8;
}

static inline uint64_t
fuzz_u64(fuzz_in_t *in)
{
    uint64_t v = 0;
    int      i;

    for (i = 0; i < 8; i++) {
        v |= (uint64_t) fuzz_u8(in) << (8 * i);
    }
    return v;
}

/* A deterministic generator for what would cost too many input bytes
 * (chunk sizes, 64 weights): seeded from the input, so replayable. */
static inline uint64_t
fuzz_rng(uint64_t *s)
{
    /* splitmix64: any seed, zero included, gives a good sequence. */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Are all `n` bytes zero? */
static inline int
fuzz_all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    size_t               i;

    for (i = 0; i < n; i++) {
        if (c[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* ---- Files: the loaders under test take a path. ---- */

/*
 * Put `len` bytes in an anonymous memory file and return its fd; the path
 * /proc/self/fd/FD names it.  No disk, nothing left behind by a crash.
 */
static inline int
fuzz_memfile(const void *data, size_t len, char *path, size_t pathlen)
{
    const char *p = data;
    int         fd = memfd_create("fuzz", MFD_CLOEXEC);

    FUZZ_CHECK(fd >= 0);
    while (len > 0) {
        ssize_t w = write(fd, p, len);

        FUZZ_CHECK(w > 0);
        p += w;
        len -= (size_t) w;
    }
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    return fd;
}

/*
 * A path for a file the library writes itself (savers write PATH.tmp and
 * rename it, so they need a directory): in /dev/shm when there is one.
 */
static inline void
fuzz_tmp_path(const char *name, char *path, size_t pathlen)
{
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

    snprintf(path, pathlen, "%s/sh-fuzz-%d-%s", dir, (int) getpid(), name);
}

/* Read a whole regular file into malloc'd memory (NULL if unreadable or
 * not a regular file: a directory opens, but has no length). */
static inline uint8_t *
fuzz_read_file(const char *path, size_t *len)
{
    FILE       *f = fopen(path, "rb");
    uint8_t    *buf = NULL;
    long        n;
    struct stat sb;

    *len = 0;
    if (f == NULL) {
        return NULL;
    }
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0
        && fseek(f, 0, SEEK_SET) == 0)
    {
        buf = malloc((size_t) n + 1);
        if (buf != NULL && fread(buf, 1, (size_t) n, f) != (size_t) n) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t) n;
    }
    fclose(f);
    return buf;
}

#endif
