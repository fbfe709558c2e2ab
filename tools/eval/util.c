/*
 * util.c -- allocation that dies on failure (a measurement tool has nothing
 * better to do), clocks, and the page and pair tables.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <xxhash.h>

#include "eval.h"

void
ev_die(const char *fmt, ...)
{
    va_list ap;

    fputs("sh-eval: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void *
ev_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        ev_die("out of memory (%zu bytes)", n);
    }
    return p;
}

void *
ev_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);

    if (p == NULL) {
        ev_die("out of memory (%zu x %zu bytes)", n, size);
    }
    return p;
}

void *
ev_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (p == NULL) {
        ev_die("out of memory (%zu bytes)", n);
    }
    return p;
}

char *
ev_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;

    return memcpy(ev_xmalloc(n), s, n);
}

double
ev_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/*
 * Cached fingerprints are only valid for the code that computed them.  The
 * library is linked statically, so the size and modification time of our
 * own executable change whenever the extraction code does.
 */
uint64_t
ev_self_identity(void)
{
    struct stat st;
    uint64_t v[3];

    if (stat("/proc/self/exe", &st) != 0) {
        ev_die("stat /proc/self/exe: %s", strerror(errno));
    }
    v[0] = (uint64_t) st.st_size;
    v[1] = (uint64_t) st.st_mtim.tv_sec;
    v[2] = (uint64_t) st.st_mtim.tv_nsec;
    return XXH3_64bits(v, sizeof(v));
}

unsigned
ev_group(ev_run_t *run, const char *name, uint16_t kind)
{
    unsigned i;

    for (i = 0; i < run->ngroups; i++) {
        if (strcmp(run->groups[i], name) == 0) {
            return i;
        }
    }
    if (run->ngroups == EV_GROUPS_MAX) {
        ev_die("too many pair groups (at most %d)", EV_GROUPS_MAX);
    }
    run->groups[run->ngroups] = ev_xstrdup(name);
    run->group_kind[run->ngroups] = kind;
    return run->ngroups++;
}

/* The same page may take part in several pairs (std/index.html is aligned
 * with both core and alloc): it is fingerprinted once. */
static void
slots_grow(ev_run_t *run)
{
    size_t n = run->nslots ? run->nslots * 2 : 4096, i;
    uint32_t *s = ev_xcalloc(n, sizeof(*s));

    for (i = 0; i < run->npages; i++) {
        const char *p = run->pages[i].path;
        size_t j = XXH3_64bits(p, strlen(p)) & (n - 1);

        while (s[j] != 0) {
            j = (j + 1) & (n - 1);
        }
        s[j] = (uint32_t) i + 1;
    }
    free(run->slots);
    run->slots = s;
    run->nslots = n;
}

uint32_t
ev_page(ev_run_t *run, const char *path)
{
    size_t j;

    if ((run->npages + 1) * 2 > run->nslots) {
        slots_grow(run);
    }
    j = XXH3_64bits(path, strlen(path)) & (run->nslots - 1);
    while (run->slots[j] != 0) {
        uint32_t k = run->slots[j] - 1;

        if (strcmp(run->pages[k].path, path) == 0) {
            return k;
        }
        j = (j + 1) & (run->nslots - 1);
    }
    if (run->npages == run->cap_pages) {
        run->cap_pages = run->cap_pages ? run->cap_pages * 2 : 1024;
        run->pages = ev_xrealloc(run->pages,
                                 run->cap_pages * sizeof(*run->pages));
    }
    memset(&run->pages[run->npages], 0, sizeof(run->pages[0]));
    run->pages[run->npages].path = ev_xstrdup(path);
    run->slots[j] = (uint32_t) run->npages + 1;
    return (uint32_t) run->npages++;
}

void
ev_add_pair(ev_run_t *run, uint32_t a, uint32_t b, uint16_t kind,
            uint16_t group)
{
    ev_pair_t *p;

    if (run->npairs == run->cap_pairs) {
        run->cap_pairs = run->cap_pairs ? run->cap_pairs * 2 : 4096;
        run->pairs = ev_xrealloc(run->pairs,
                                 run->cap_pairs * sizeof(*run->pairs));
    }
    p = &run->pairs[run->npairs++];
    p->a = a;
    p->b = b;
    p->kind = kind;
    p->group = group;
    p->jaccard = -1.0f;
}

/* Split a line (its end of line cut) on tabs into at most `max` fields. */
int
ev_split_tabs(char *line, char **f, int max)
{
    int n = 0;

    line[strcspn(line, "\r\n")] = '\0';
    while (n < max) {
        f[n++] = line;
        line = strchr(line, '\t');
        if (line == NULL) {
            break;
        }
        *line++ = '\0';
    }
    return n;
}
