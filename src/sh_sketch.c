/*
 * sh_sketch.c -- the structure and link sketches (see sh_sketch.h).
 */
#include <stdint.h>
#include <string.h>

#include "sh_popcnt.h"
#include "sh_sketch.h"

/* The sign of each bit of a byte, +1 or -1: eight counts move at once. */
#define SGN(b, j)   ((int8_t) ((((b) >> (j)) & 1) * 2 - 1))
#define ROW(b)      { SGN(b, 0), SGN(b, 1), SGN(b, 2), SGN(b, 3), \
                      SGN(b, 4), SGN(b, 5), SGN(b, 6), SGN(b, 7) }
#define R4(b)       ROW(b), ROW((b) + 1), ROW((b) + 2), ROW((b) + 3)
#define R16(b)      R4(b), R4((b) + 4), R4((b) + 8), R4((b) + 12)
#define R64(b)      R16(b), R16((b) + 16), R16((b) + 32), R16((b) + 48)

static const int8_t sign8[256][8] = {
    R64(0), R64(64), R64(128), R64(192)
};

void
sh_sketch_init(sh_sketch_t *s, uint64_t *set)
{
    s->set = set;
    s->n = 0;
    memset(s->count, 0, sizeof(s->count));
}

/*
 * A feature counts once: open addressing on the feature itself (features
 * are hashes already).  The table stays at most half full, so a probe
 * ends quickly; once half full, new features are ignored.
 */
void
sh_sketch_add(sh_sketch_t *s, uint64_t f)
{
    uint64_t key = f | 1;               /* 0 marks a free slot */
    unsigned i, j, b;

    i = (unsigned) (f >> 32) & (SH_SKETCH_SET - 1);
    while (s->set[i] != 0) {
        if (s->set[i] == key) {
            return;
        }
        i = (i + 1) & (SH_SKETCH_SET - 1);
    }
    if (s->n >= SH_SKETCH_SET / 2) {
        return;
    }
    s->set[i] = key;
    s->used[s->n++] = (uint16_t) i;
    for (b = 0; b < 8; b++) {
        const int8_t *sg = sign8[(f >> (8 * b)) & 0xFF];
        int32_t      *c = s->count + 8 * b;

        for (j = 0; j < 8; j++) {
            c[j] += sg[j];
        }
    }
}

void
sh_sketch_clear(sh_sketch_t *s)
{
    uint32_t i;

    for (i = 0; i < s->n; i++) {
        s->set[s->used[i]] = 0;
    }
    s->n = 0;
    memset(s->count, 0, sizeof(s->count));
}

uint64_t
sh_sketch_value(const sh_sketch_t *s)
{
    uint64_t v = 0;
    unsigned j;

    for (j = 0; j < 64; j++) {
        v |= (uint64_t) (s->count[j] > 0) << j;
    }
    return v;
}

void
sh_sketches_set(sh_sketches_t *sk, const sh_sketch_t *structure,
                const sh_sketch_t *links)
{
    if (structure->n == 0 || links->n < SH_SKETCH_MIN_LINKS) {
        sk->structure = 0;
        sk->links = 0;
        return;
    }
    sk->structure = sh_sketch_value(structure);
    sk->links = sh_sketch_value(links);
}

static int
usable(const sh_sketches_t *s)
{
    return (s->structure | s->links) != 0;
}

int
sh_sketch_veto(const sh_sketches_t *a, const sh_sketches_t *b)
{
    if (!usable(a) || !usable(b)) {
        return 0;
    }
    return sh_distance(a->structure, b->structure) <= SH_SKETCH_STRUCT_H
           && sh_distance(a->links, b->links) >= SH_SKETCH_LINKS_H;
}
