/*
 * sh_image.c -- the sliced copy of a store and its loading back
 * (sh_image.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_err.h"
#include "sh_bigmem.h"
#include "sh_image.h"
#include "sh_store_internal.h"

#define IMG_MAGIC       "SHIMAGE"
#define IMG_VERSION     1u
#define IMG_RECS        1u
#define IMG_TEXT        2u
#define IMG_END         3u
#define GROUP           (1u << ST_DIRTY_SHIFT)
#define FRAME_REFS      (4 * GROUP)     /* refs a RECS frame holds at most */
#define FRAME_TEXT      (16 * 1024)     /* ring bytes a TEXT frame holds */
#define PAYLOAD_MAX     (FRAME_TEXT > FRAME_REFS * sizeof(rec_t) \
                         ? FRAME_TEXT : FRAME_REFS * sizeof(rec_t))
#define READ_BUF        (4u << 20)      /* a file's image is read in these */
/* Small frames keep damage small: a flipped byte costs one frame's
 * documents (256) or texts (16 KB), for 24 bytes of header each. */
#define CHAIN_SEED      0x5348494d41474531ULL   /* "SHIMAGE1" */
#define SECRET_CHECK    "sh_store image: the key secret"

enum { P_BASE, P_TEXT, P_DIRTY, P_DONE };

typedef struct {
    uint32_t type;
    uint32_t n;             /* RECS: refs; TEXT: bytes; END: 0 */
    uint64_t first;         /* RECS: the first ref; TEXT: its position */
    uint64_t sum;           /* XXH3 of the payload: a damaged frame costs
                               only its own documents */
} frame_t;

typedef struct {
    sh_index_doc_t ix;
    sh_store_doc_t doc;
} rec_t;                    /* 56 bytes */

typedef struct {
    char     magic[8];
    uint32_t version;
    uint32_t endian;
    uint32_t capacity;      /* the source's */
    uint32_t extraction;    /* the index's extraction version */
    sh_index_ends_t ends;
    uint32_t pad;
    uint64_t text_size;
    uint64_t text_tail;
    uint64_t text_head;
    uint64_t evictions;
    uint64_t text_evictions;
    uint64_t secret_check;
    uint64_t seed_digest;
    uint64_t chain;         /* of every frame before this one */
} trailer_t;

static uint32_t
groups(const sh_store_t *st)
{
    return (st->capacity + GROUP - 1) / GROUP;
}

static int
dirty_test_clear(sh_store_t *st, uint32_t g)
{
    unsigned char *b = st_dirty(st) + (g >> 3);
    unsigned char  m = (unsigned char) (1u << (g & 7));

    if (*b & m) {
        *b &= (unsigned char) ~m;
        return 1;
    }
    return 0;
}

/* ---- Saving. ---- */

typedef struct {
    sh_image_saver_t *sv;
    size_t            len;      /* filled so far */
    size_t            chained;  /* of it, in the chain hash */
} out_t;

/* Append a frame (header and payload) whose payload the caller copies to
 * the returned pointer; the chain hash is taken when the step ends. */
static unsigned char *
frame(out_t *o, uint32_t type, uint32_t n, uint64_t first, size_t payload)
{
    frame_t f;
    unsigned char *p = o->sv->buf + o->len;

    f.type = type;
    f.n = n;
    f.first = first;
    f.sum = 0;                      /* sealed when the step ends */
    memcpy(p, &f, sizeof(f));
    o->len += sizeof(f) + ST_ALIGN8(payload);
    memset(p + sizeof(f) + payload, 0, ST_ALIGN8(payload) - payload);
    return p + sizeof(f);
}

static size_t
room(const out_t *o)
{
    return o->sv->size - o->len;
}

/* refs [first, first + n) of the store, all below its hwm */
static void
copy_recs(out_t *o, uint32_t first, uint32_t n)
{
    sh_store_t     *st = o->sv->st;
    rec_t          *r = (rec_t *) frame(o, IMG_RECS, n, first,
                                        (size_t) n * sizeof(rec_t));
    sh_index_doc_t  ix[GROUP];
    uint32_t        i, k, m;

    for (i = 0; i < n; i += m) {
        m = n - i < GROUP ? n - i : GROUP;
        sh_index_export(sh_store_index(st), first + i, m, ix);
        for (k = 0; k < m; k++) {
            r[i + k].ix = ix[k];
            r[i + k].doc = st_docs(st)[first + i + k];
        }
    }
}

static size_t
recs_bytes(uint32_t n)
{
    return sizeof(frame_t) + (size_t) n * sizeof(rec_t);
}

/* The refs of group g below the hwm: how many (0: none handed out). */
static uint32_t
group_refs(const sh_store_t *st, uint32_t g)
{
    sh_index_ends_t e;
    uint64_t        first = (uint64_t) g * GROUP;

    sh_index_ends(sh_store_index_const(st), &e);
    if (first >= e.hwm) {
        return 0;
    }
    return e.hwm - first < GROUP ? (uint32_t) (e.hwm - first) : GROUP;
}

/* Catch the ring up to its head, as room allows; 1 when caught up. */
static int
copy_text(out_t *o)
{
    sh_image_saver_t *sv = o->sv;
    sh_store_t       *st = sv->st;
    uint64_t          off, n;

    if (sv->text_next < st->text_tail) {
        sv->text_next = st->text_tail;  /* evicted before it was copied */
    }
    while (sv->text_next < st->text_head) {
        off = sv->text_next % st->text_size;
        n = st->text_head - sv->text_next;
        n = n < st->text_size - off ? n : st->text_size - off;
        n = n < FRAME_TEXT ? n : FRAME_TEXT;
        if (room(o) < sizeof(frame_t) + 64) {
            return 0;
        }
        if (n > room(o) - sizeof(frame_t) - 8) {
            n = (room(o) - sizeof(frame_t) - 8) & ~(uint64_t) 7;
        }
        memcpy(frame(o, IMG_TEXT, (uint32_t) n, sv->text_next, n),
               st_text(st) + off, n);
        sv->text_next += n;
    }
    return 1;
}

static void
trailer(out_t *o)
{
    sh_store_t *st = o->sv->st;
    trailer_t   t;

    memset(&t, 0, sizeof(t));
    memcpy(t.magic, IMG_MAGIC, sizeof(IMG_MAGIC));
    t.version = IMG_VERSION;
    t.endian = ST_ENDIAN;
    t.capacity = st->capacity;
    t.extraction = sh_index_version(sh_store_index_const(st));
    sh_index_ends(sh_store_index_const(st), &t.ends);
    t.text_size = st->text_size;
    t.text_tail = st->text_tail;
    t.text_head = st->text_head;
    t.evictions = st->evictions;
    t.text_evictions = st->text_evictions;
    t.secret_check = sh_store_keyhash(st, SECRET_CHECK,
                                      sizeof(SECRET_CHECK) - 1);
    t.seed_digest = sh_index_seed_digest(sh_store_index_const(st));
    t.chain = o->sv->chain;
    memcpy(frame(o, IMG_END, 0, 0, sizeof(t)), &t, sizeof(t));
}

static size_t
payload_size(const frame_t *f)
{
    return f->type == IMG_RECS ? (size_t) f->n * sizeof(rec_t)
           : f->type == IMG_TEXT ? ST_ALIGN8((size_t) f->n)
           : sizeof(trailer_t);
}

/* A frame's own checksum, of its payload, into its header. */
static void
seal(unsigned char *frame_at)
{
    frame_t f;

    memcpy(&f, frame_at, sizeof(f));
    f.sum = XXH3_64bits(frame_at + sizeof(f), payload_size(&f));
    memcpy(frame_at, &f, sizeof(f));
}

/* Chain the frames filled since the last call into the image's hash, one
 * frame at a time (as the loader checks them). */
static void
chain(out_t *o)
{
    sh_image_saver_t *sv = o->sv;
    frame_t           f;
    size_t            size;

    while (o->chained < o->len) {
        seal(sv->buf + o->chained);
        memcpy(&f, sv->buf + o->chained, sizeof(f));
        size = sizeof(f) + payload_size(&f);
        sv->chain = XXH3_64bits_withSeed(sv->buf + o->chained, size,
                                         sv->chain);
        o->chained += size;
    }
}

void
sh_image_save_begin(sh_image_saver_t *sv, sh_store_t *st,
                    unsigned char *buf, size_t size)
{
    memset(sv, 0, sizeof(*sv));
    sv->st = st;
    sv->buf = buf;
    sv->size = size;
    sv->phase = P_BASE;
    sv->text_next = st->text_tail;
    sv->chain = CHAIN_SEED;
    sv->repairs = st->repairs;
    memset(st_dirty(st), 0, st->dirty_bytes);
    st->saving = 1;
}

int
sh_image_save_complete(const sh_image_saver_t *sv)
{
    return sv->phase == P_DONE;
}

void
sh_image_save_abort(sh_image_saver_t *sv)
{
    sv->st->saving = 0;
    sv->phase = P_DONE;
}

/* What the last step must copy: every dirty group, the ring's rest, the
 * trailer.  Does it fit one buffer? */
static int
final_fits(sh_image_saver_t *sv)
{
    sh_store_t *st = sv->st;
    uint64_t    need = 2 * (sizeof(frame_t) + sizeof(trailer_t));
    uint32_t    g, n = groups(st);
    uint64_t    tail = sv->text_next > st->text_tail ? sv->text_next
                                                     : st->text_tail;
    const unsigned char *b = st_dirty(st);

    need += st->text_head - tail + 2 * (sizeof(frame_t) + 8);
    for (g = 0; g < n && need <= sv->size; g += 8) {
        if (b[g >> 3] != 0) {
            need += (uint64_t) __builtin_popcount(b[g >> 3])
                    * recs_bytes(GROUP);
        }
    }
    return need <= sv->size;
}

static void
copy_dirty(out_t *o, int all)
{
    sh_image_saver_t *sv = o->sv;
    sh_store_t       *st = sv->st;
    uint32_t          n = groups(st), refs;

    for (; sv->group < n; sv->group++) {
        if (st_dirty(st)[sv->group >> 3] == 0) {
            sv->group |= 7;         /* the whole byte is clear */
            continue;
        }
        if (!all && room(o) < recs_bytes(GROUP) + 8) {
            return;
        }
        if (dirty_test_clear(st, sv->group)) {
            refs = group_refs(st, sv->group);
            if (refs > 0) {
                copy_recs(o, sv->group * GROUP, refs);
            }
            sv->found++;
            sv->recopied++;
        }
    }
}

long
sh_image_save_step(sh_image_saver_t *sv)
{
    sh_store_t      *st = sv->st;
    sh_index_ends_t  e;
    out_t            o = { sv, 0, 0 };
    uint32_t         n;

    if (sv->phase != P_DONE && st->repairs != sv->repairs) {
        sv->phase = P_DONE;         /* rebuilt under us: start again */
        return -1;
    }

    switch (sv->phase) {

    case P_BASE:
        /* from a group's start: the hwm may have grown inside the group
         * the last step ended in */
        sv->next_ref -= sv->next_ref % GROUP;
        sh_index_ends(sh_store_index_const(st), &e);
        while (sv->next_ref < e.hwm && room(&o) >= recs_bytes(GROUP) + 8) {
            /* whole frames of FRAME_REFS, or one shorter frame */
            n = (uint32_t) ((room(&o) - 8) / recs_bytes(FRAME_REFS))
                * FRAME_REFS;
            if (n == 0) {
                n = (uint32_t) ((room(&o) - sizeof(frame_t) - 8)
                                / sizeof(rec_t));
            }
            n -= n % GROUP;
            if (n > e.hwm - sv->next_ref) {
                n = e.hwm - sv->next_ref;
            }
            /* whole groups only: a group's mark is cleared only when all
             * of it was copied in one hold */
            {
                uint32_t g, g0 = sv->next_ref / GROUP;
                uint32_t g1 = (sv->next_ref + n + GROUP - 1) / GROUP;

                for (g = g0; g < g1; g++) {
                    (void) dirty_test_clear(st, g);
                }
            }
            {
                uint32_t k, m;

                for (k = 0; k < n; k += m) {
                    m = n - k < FRAME_REFS ? n - k : FRAME_REFS;
                    copy_recs(&o, sv->next_ref + k, m);
                }
            }
            sv->next_ref += n;
        }
        if (sv->next_ref >= e.hwm) {
            sv->phase = P_TEXT;
        }
        break;

    case P_TEXT:
        if (copy_text(&o)) {
            sv->phase = P_DIRTY;
            sv->passes = 1;
            sv->group = 0;
            sv->found = 0;
        }
        break;

    case P_DIRTY:
        if (sv->group >= groups(st)) {
            /* a pass has ended (and its frames were written): the rest
             * in this hold if it fits, else another pass */
            if (final_fits(sv)) {
                sv->group = 0;
                (void) copy_text(&o);
                copy_dirty(&o, 1);
                chain(&o);
                trailer(&o);
                seal(sv->buf + o.chained);
                o.chained = o.len;
                st->saving = 0;
                sv->phase = P_DONE;
                break;
            }
            if (++sv->passes > SH_IMAGE_PASSES) {
                sh_image_save_abort(sv);
                return -1;
            }
            sv->group = 0;
            sv->found = 0;
        }
        if (copy_text(&o)) {
            copy_dirty(&o, 0);
        }
        break;

    case P_DONE:
    default:
        return 0;
    }

    chain(&o);
    sv->bytes += o.len;
    if (o.len == 0 && sv->phase != P_DONE) {
        /* a phase ended with nothing to copy: go on at once */
        return sh_image_save_step(sv);
    }
    return (long) o.len;
}

/* ---- Loading. ---- */

/*
 * Where the frames are read from: an image in memory, or a file read with
 * pread into one reused buffer.  A file is never mapped for a load: on a
 * virtual machine the first touch of a mapped page-cache page costs ~1 us
 * (measured: a 600 MB copy out of a fresh mapping runs at 0.8 GB/s the
 * first time, 16 GB/s the next; pread into a buffer of 4 MB, 10-20 GB/s
 * at once; BENCHMARKS.md).  The frames are read in order, so the buffer
 * slides forward: each refill starts at the frame that did not fit.
 */
typedef struct {
    const unsigned char *mem;       /* NULL: read from fd */
    int                  fd;
    uint64_t             off;       /* the image's offset in the file */
    uint64_t             len;       /* the image's length */
    unsigned char       *buf;       /* READ_BUF bytes */
    uint64_t             bpos;      /* image position of buf[0] */
    size_t               bhave;
    int                  failed;    /* a read failed (errno kept) */
} src_t;

/* n contiguous bytes at image position pos (n <= READ_BUF), or NULL past
 * the end or when the file cannot be read. */
static const unsigned char *
src_at(src_t *s, uint64_t pos, size_t n)
{
    size_t  want, got;
    ssize_t r;

    if (pos > s->len || n > s->len - pos) {
        return NULL;
    }
    if (s->mem != NULL) {
        return s->mem + pos;
    }
    if (pos >= s->bpos && pos + n <= s->bpos + s->bhave) {
        return s->buf + (pos - s->bpos);
    }
    if (n > READ_BUF) {
        return NULL;
    }
    want = s->len - pos < READ_BUF ? (size_t) (s->len - pos) : READ_BUF;
    for (got = 0; got < want; got += (size_t) r) {
        r = pread(s->fd, s->buf + got, want - got,
                  (off_t) (s->off + pos + got));
        if (r < 0 && errno == EINTR) {
            r = 0;
            continue;
        }
        if (r <= 0) {
            s->failed = 1;
            s->bhave = 0;
            return NULL;
        }
    }
    s->bpos = pos;
    s->bhave = want;
    return s->buf;
}

/*
 * The frame at image position pos: its header (copied to *f) and a
 * pointer to header and payload, contiguous; NULL where no frame parses
 * (an unknown type, a payload past the end or larger than any frame).
 */
static const unsigned char *
src_frame(src_t *s, uint64_t pos, frame_t *f)
{
    const unsigned char *h = src_at(s, pos, sizeof(frame_t));
    size_t               size;

    if (h == NULL) {
        return NULL;
    }
    memcpy(f, h, sizeof(*f));
    if (f->type != IMG_RECS && f->type != IMG_TEXT && f->type != IMG_END) {
        return NULL;
    }
    size = payload_size(f);
    if (size > PAYLOAD_MAX) {
        return NULL;
    }
    return src_at(s, pos, sizeof(frame_t) + size);
}

typedef struct {
    src_t               *src;
    uint64_t             len;       /* of the frames that parse */
    const trailer_t     *t;         /* NULL: no intact trailer; else &tcopy */
    trailer_t            tcopy;
    uint32_t             damaged;   /* frames failing their checksum */
    int                  cut;       /* the frames end before the trailer */
    int                  whole;     /* every frame and the chain intact */
} parsed_t;

static int
frame_intact(const frame_t *f, const unsigned char *payload)
{
    return XXH3_64bits(payload, payload_size(f)) == f->sum;
}

/*
 * Walk the frames: their headers must parse (a header that does not ends
 * the walk there: what follows cannot be found); each payload is checked
 * against its own sum, the whole against the chain in the trailer.
 */
static int
parse(parsed_t *p, src_t *src, char *err, size_t errlen)
{
    uint64_t             at = 0, size;
    frame_t              f;
    uint64_t             h = CHAIN_SEED;
    const unsigned char *fr;

    memset(p, 0, sizeof(*p));
    p->src = src;
    while ((fr = src_frame(src, at, &f)) != NULL) {
        size = payload_size(&f);
        if (f.type == IMG_END) {
            memcpy(&p->tcopy, fr + sizeof(frame_t), sizeof(p->tcopy));
            if (frame_intact(&f, fr + sizeof(frame_t))
                && memcmp(p->tcopy.magic, IMG_MAGIC, sizeof(IMG_MAGIC)) == 0)
            {
                if (p->tcopy.version != IMG_VERSION
                    || p->tcopy.endian != ST_ENDIAN)
                {
                    sh_err_set(err, errlen, "image: not a store image of "
                               "this version");
                    return -1;
                }
                p->t = &p->tcopy;
                p->whole = p->damaged == 0 && p->tcopy.chain == h
                           && at + sizeof(frame_t) + size == src->len;
            }
            p->len = at;
            return 0;
        }
        if (!frame_intact(&f, fr + sizeof(frame_t))) {
            p->damaged++;
        }
        h = XXH3_64bits_withSeed(fr, sizeof(frame_t) + size, h);
        at += sizeof(frame_t) + size;
    }
    if (src->failed) {
        sh_err_set(err, errlen, "image: cannot be read");
        return -1;
    }
    p->len = at;
    p->cut = 1;
    if (at == 0) {
        sh_err_set(err, errlen, "image: truncated or damaged from its start");
        return -1;
    }
    return 0;
}

/* Call fn for every intact frame but the end, in order.  A parse that
 * found the image whole has checked every sum: they are not taken again. */
typedef int (*frame_fn)(void *arg, const frame_t *f,
                        const unsigned char *payload);

static int
frames(const parsed_t *p, frame_fn fn, void *arg)
{
    uint64_t             at = 0;
    frame_t              f;
    const unsigned char *fr;

    while (at < p->len) {
        fr = src_frame(p->src, at, &f);
        if (fr == NULL) {
            return -1;              /* a file changed, or unreadable */
        }
        if ((p->whole || frame_intact(&f, fr + sizeof(f)))
            && fn(arg, &f, fr + sizeof(f)) != 0)
        {
            return -1;
        }
        at += sizeof(frame_t) + payload_size(&f);
    }
    return 0;
}

/* -- in place: the same geometry -- */

typedef struct {
    sh_store_t     *st;
    sh_index_doc_t *ix;
    uint32_t        hwm;
} place_t;

static int
place(void *arg, const frame_t *f, const unsigned char *payload)
{
    place_t     *pl = arg;
    sh_store_t  *st = pl->st;
    uint32_t     i;
    uint64_t     off, n, k;
    rec_t        r;

    if (f->type == IMG_RECS) {
        if (f->first > pl->hwm || f->n > pl->hwm - f->first) {
            return -1;
        }
        for (i = 0; i < f->n; i++) {
            memcpy(&r, payload + (size_t) i * sizeof(r), sizeof(r));
            pl->ix[f->first + i] = r.ix;
            st_docs(st)[f->first + i] = r.doc;
        }
        return 0;
    }
    /* TEXT: to the same positions of a ring of the same size */
    for (k = 0; k < f->n; k += n) {
        off = (f->first + k) % st->text_size;
        n = f->n - k < st->text_size - off ? f->n - k : st->text_size - off;
        memcpy(st_text(st) + off, payload + k, n);
    }
    return 0;
}

/*
 * Whether the key ring's entries, from its tail, lead entry by entry to
 * its head, none of them across the ring's end: what the store's eviction
 * walks.  A crafted image (its sums made anew) can hold a ring that does
 * not, and eviction would then walk past the head for ever.  Each entry's
 * place is marked in `at` (a bit per 8 bytes of the ring): a record may
 * keep only text that starts where the walk finds an entry, not one hidden
 * inside another's bytes, which eviction would step over and leave named.
 */
static int
ring_walks(const sh_store_t *st, unsigned char *at)
{
    uint64_t         pos = st->text_tail, off, step;
    const st_text_t *e;

    while (pos < st->text_head) {
        off = pos % st->text_size;
        if (st->text_size - off < sizeof(st_text_t)) {
            return 0;
        }
        e = (const st_text_t *) (st_text(st) + off);
        step = e->ref == ST_TEXT_WRAP ? st->text_size - off
               : ST_ALIGN8(sizeof(st_text_t) + e->len);
        if (off + step > st->text_size) {
            return 0;
        }
        if (e->ref != ST_TEXT_WRAP) {
            at[off >> 6] |= (unsigned char) (1u << ((off >> 3) & 7));
        }
        pos += step;
    }
    return pos == st->text_head;
}

static int
load_in_place(sh_store_t *st, const parsed_t *p, sh_image_info_t *info,
              char *err, size_t errlen)
{
    const trailer_t *t = p->t;
    sh_index_t      *ix = sh_store_index(st);
    place_t          pl = { st, sh_index_import_area(ix), t->ends.hwm };
    sh_store_doc_t  *d;
    uint64_t        *keyhash, off;
    uint32_t         ref, n = 0, room, *refs;
    const char      *text;
    unsigned char   *at;

    st->text_tail = t->text_tail;
    st->text_head = t->text_head;
    if (frames(p, place, &pl) != 0) {
        sh_err_set(err, errlen, p->src->failed ? "image: cannot be read"
                                : "image: records beyond its refs");
        return -1;
    }
    at = calloc(st->text_size / 64 + 1, 1);
    if (at == NULL || !ring_walks(st, at)) {
        /* its texts are lost (the documents are then named by their
         * ids), not the documents */
        st->text_tail = st->text_head;
    }
    /*
     * The key table first, its pairs gathered in the index's own table
     * arrays, which the import then rewrites: no scratch memory at all.
     * Every document but a free ref has a key hash.
     */
    keyhash = sh_index_scratch(ix, &refs, &room);
    if (keyhash == NULL || t->ends.entries > room) {
        free(at);
        sh_err_set(err, errlen, "image: more documents than the index holds");
        return -1;
    }
    st->texts = 0;
    for (ref = 0; ref < t->ends.hwm; ref++) {
        d = &st_docs(st)[ref];
        if (pl.ix[ref].older == SH_INDEX_FREE) {
            continue;
        }
        if (d->keyhash == 0 || n >= t->ends.entries) {
            free(at);
            sh_err_set(err, errlen, "image: a document without a key hash");
            return -1;
        }
        keyhash[n] = d->keyhash;
        refs[n++] = ref;
        /* a record keeps its text only if the ring entry it names is its
         * own (as the repair keeps it): a damaged or crafted image may
         * name another's, which the store's count would take for one */
        if (d->text != SH_STORE_NOTEXT) {
            off = st_text_pos(st, d->text) % st->text_size;
            if (at != NULL && sh_store_key(st, ref, &text) > 0
                && (at[off >> 6] & (1u << ((off >> 3) & 7))))
            {
                st->texts++;
            } else {
                d->text = SH_STORE_NOTEXT;
            }
        }
    }
    free(at);
    st_keys_build(st, keyhash, refs, n);
    if (sh_index_import(ix, NULL, &t->ends, err, errlen) != 0) {
        return -1;
    }
    st->evictions = t->evictions;
    st->text_evictions = t->text_evictions;
    info->texts = st->texts;
    return 0;
}

/* -- replay: another geometry -- */

typedef struct {
    const trailer_t      *t;
    const unsigned char **rec;      /* the last copy of each ref */
    const unsigned char **text;     /* TEXT frames, in position order */
    size_t                ntext;
} index_t;

static int
collect(void *arg, const frame_t *f, const unsigned char *payload)
{
    index_t  *x = arg;
    uint32_t  i;

    if (f->type == IMG_RECS) {
        if (f->first > x->t->ends.hwm || f->n > x->t->ends.hwm - f->first) {
            return -1;
        }
        for (i = 0; i < f->n; i++) {
            x->rec[f->first + i] = payload + (size_t) i * sizeof(rec_t);
        }
    } else {
        x->text[x->ntext++] = payload - sizeof(frame_t);
    }
    return 0;
}

/* Copy len bytes at ring position pos from the TEXT frames (an entry may
 * straddle two of them); -1 if some are not in the image. */
static int
text_copy(const index_t *x, uint64_t pos, size_t len, unsigned char *out)
{
    size_t  lo = 0, hi = x->ntext, n;
    frame_t f;

    while (lo < hi) {               /* the last frame starting <= pos */
        size_t mid = (lo + hi) / 2;

        memcpy(&f, x->text[mid], sizeof(f));
        if (f.first <= pos) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == 0) {
        return -1;
    }
    for (lo--; len > 0; lo++) {
        if (lo >= x->ntext) {
            return -1;
        }
        memcpy(&f, x->text[lo], sizeof(f));
        if (pos < f.first || pos >= f.first + f.n) {
            return -1;
        }
        n = f.first + f.n - pos < len ? (size_t) (f.first + f.n - pos) : len;
        memcpy(out, x->text[lo] + sizeof(frame_t) + (pos - f.first), n);
        out += n;
        pos += n;
        len -= n;
    }
    return 0;
}

static int
load_replay(sh_store_t *st, const parsed_t *p, sh_image_info_t *info,
            char *err, size_t errlen)
{
    const trailer_t *t = p->t;
    index_t          x;
    size_t           nframes = p->len / sizeof(frame_t);
    uint32_t         ref, n;
    rec_t            r;
    st_text_t        e;
    uint64_t         pos, base;
    unsigned char   *key;
    uint32_t         old, next_free;
    size_t           klen;
    unsigned char   *done_ref = NULL;
    int              rc = -1;

    x.t = t;
    x.ntext = 0;
    x.rec = calloc(t->ends.hwm ? t->ends.hwm : 1, sizeof(*x.rec));
    x.text = malloc((nframes ? nframes : 1) * sizeof(*x.text));
    key = malloc(SH_STORE_KEY_MAX + 1);
    if (x.rec == NULL || x.text == NULL || key == NULL) {
        sh_err_set(err, errlen, "out of memory");
        goto done;
    }
    if (frames(p, collect, &x) != 0) {
        sh_err_set(err, errlen, "image: records beyond its refs");
        goto done;
    }
    /*
     * The age order as far as its links reach records that are there;
     * when the image is damaged, the records the order lost follow in ref
     * order (their places in it are gone with the damaged frames).
     */
    done_ref = calloc(t->ends.hwm ? t->ends.hwm : 1, 1);
    if (done_ref == NULL) {
        sh_err_set(err, errlen, "out of memory");
        goto done;
    }
    ref = t->ends.oldest;
    next_free = 0;
    for (n = 0; n < t->ends.hwm + t->ends.entries; n++) {
        if (ref == SH_NOREF || ref >= t->ends.hwm || x.rec[ref] == NULL
            || done_ref[ref])
        {
            if (!p->damaged && !p->cut && n < t->ends.entries) {
                sh_err_set(err, errlen, "image: the age order is broken");
                goto done;
            }
            if (!p->damaged && !p->cut) {
                break;
            }
            /* salvage: the next record not stored yet */
            while (next_free < t->ends.hwm
                   && (x.rec[next_free] == NULL || done_ref[next_free]))
            {
                next_free++;
            }
            if (next_free == t->ends.hwm) {
                break;
            }
            ref = next_free;
        }
        done_ref[ref] = 1;
        memcpy(&r, x.rec[ref], sizeof(r));
        if (r.ix.older == SH_INDEX_FREE) {
            ref = SH_NOREF;
            continue;
        }
        klen = 0;
        if (r.doc.text != SH_STORE_NOTEXT) {
            base = t->text_head >> 3;
            pos = (base - (uint32_t) ((uint32_t) base - r.doc.text)) << 3;
            if (pos >= t->text_tail && pos < t->text_head
                && text_copy(&x, pos, sizeof(e), (unsigned char *) &e) == 0
                && e.ref == ref && e.check == (uint16_t) r.doc.keyhash
                && text_copy(&x, pos + sizeof(e), e.len, key) == 0)
            {
                klen = e.len;
            }
        }
        /* a key hash stored already: two keys of one hash, told apart by
         * text the copy did not keep; the newer is kept */
        old = r.doc.keyhash ? sh_store_find_hash(st, r.doc.keyhash)
                            : SH_NOREF;
        if (old != SH_NOREF) {
            (void) sh_store_remove(st, old);
        }
        if (r.doc.keyhash != 0
            && sh_store_put(st, klen ? (const char *) key : NULL, klen,
                            r.doc.keyhash, r.ix.hash, &r.doc, NULL)
               == SH_NOREF)
        {
            sh_err_set(err, errlen, "image: a document could not be stored");
            goto done;
        }
        ref = r.ix.newer;
    }
    info->texts = st->texts;
    info->replayed = 1;
    rc = 0;

done:
    free(x.rec);
    free(x.text);
    free(key);
    free(done_ref);
    return rc;
}

static int load_image(sh_store_t *st, src_t *src, uint32_t expect_extraction,
                      int keyed, sh_image_info_t *info, char *err,
                      size_t errlen);

static int
load_memory(sh_store_t *st, const unsigned char *image, size_t len,
            uint32_t expect_extraction, int keyed, sh_image_info_t *info,
            char *err, size_t errlen)
{
    src_t src;

    if (((uintptr_t) image & 7) != 0) {
        memset(info, 0, sizeof(*info));
        sh_err_set(err, errlen, "image: not 8-byte aligned in memory");
        return -1;
    }
    memset(&src, 0, sizeof(src));
    src.mem = image;
    src.len = len;
    return load_image(st, &src, expect_extraction, keyed, info, err, errlen);
}

int
sh_image_load(sh_store_t *st, const unsigned char *image, size_t len,
              uint32_t expect_extraction, sh_image_info_t *info, char *err,
              size_t errlen)
{
    return load_memory(st, image, len, expect_extraction, 1, info, err,
                       errlen);
}

int
sh_image_load_unkeyed(sh_store_t *st, const unsigned char *image,
                      size_t len, uint32_t expect_extraction,
                      sh_image_info_t *info, char *err, size_t errlen)
{
    return load_memory(st, image, len, expect_extraction, 0, info, err,
                       errlen);
}

int
sh_image_load_fd(sh_store_t *st, int fd, uint64_t off, uint64_t len,
                 uint32_t expect_extraction, sh_image_info_t *info,
                 char *err, size_t errlen)
{
    src_t src;
    int   rc;

    memset(&src, 0, sizeof(src));
    src.fd = fd;
    src.off = off;
    src.len = len;
    src.buf = malloc(READ_BUF);
    if (src.buf == NULL) {
        memset(info, 0, sizeof(*info));
        sh_err_set(err, errlen, "out of memory");
        return -1;
    }
    rc = load_image(st, &src, expect_extraction, 1, info, err, errlen);
    free(src.buf);
    return rc;
}

/*
 * The replay (another geometry, or a damaged image) finds records and
 * texts anywhere in the image: a file's is read into memory whole first.
 * It is the rare path, and its cost is the stores it makes, not the read.
 */
static int
replay(sh_store_t *st, const parsed_t *p, sh_image_info_t *info, char *err,
       size_t errlen)
{
    src_t                mem;
    parsed_t             q;
    unsigned char       *all;
    const unsigned char *b;
    uint64_t             at;
    size_t               n;
    int                  rc;

    if (p->src->mem != NULL) {
        return load_replay(st, p, info, err, errlen);
    }
    all = sh_big_alloc(p->src->len ? p->src->len : 1);
    if (all == NULL) {
        sh_err_set(err, errlen, "out of memory");
        return -1;
    }
    for (at = 0; at < p->src->len; at += n) {
        n = p->src->len - at < READ_BUF ? (size_t) (p->src->len - at)
                                        : READ_BUF;
        b = src_at(p->src, at, n);
        if (b == NULL) {
            free(all);
            sh_err_set(err, errlen, "image: cannot be read");
            return -1;
        }
        memcpy(all + at, b, n);
    }
    memset(&mem, 0, sizeof(mem));
    mem.mem = all;
    mem.len = p->src->len;
    rc = parse(&q, &mem, err, errlen);
    if (rc == 0 && (q.t == NULL || q.t->chain != p->t->chain)) {
        sh_err_set(err, errlen, "image: changed while it was read");
        rc = -1;
    }
    if (rc == 0) {
        rc = load_replay(st, &q, info, err, errlen);
    }
    free(all);
    return rc;
}

static int
load_image(sh_store_t *st, src_t *src, uint32_t expect_extraction, int keyed,
           sh_image_info_t *info, char *err, size_t errlen)
{
    parsed_t        p;
    sh_index_ends_t e;
    const trailer_t *t;

    memset(info, 0, sizeof(*info));
    sh_index_ends(sh_store_index_const(st), &e);
    if (e.entries != 0 || e.hwm != 0) {
        sh_err_set(err, errlen, "image: the store to fill is not empty");
        return -1;
    }
    if (parse(&p, src, err, errlen) != 0) {
        return -1;
    }
    t = p.t;
    if (t == NULL) {
        /* what it was written under cannot be checked: nothing is used */
        sh_err_set(err, errlen, p.cut ? "image: truncated"
                                      : "image: its end is damaged");
        return -1;
    }
    if ((keyed && t->secret_check != sh_store_keyhash(st, SECRET_CHECK,
                                                      sizeof(SECRET_CHECK)
                                                      - 1))
        || t->seed_digest != sh_index_seed_digest(sh_store_index_const(st)))
    {
        sh_err_set(err, errlen, "image: written under another hash key "
                   "(simhash_seed)");
        return -1;
    }
    /* every ref below hwm has its record in the image: a trailer that
     * claims more than the image holds would have the loader allocate
     * for billions of refs */
    if (t->ends.entries > t->ends.hwm || t->text_tail > t->text_head
        || t->text_head - t->text_tail > t->text_size
        || ((t->text_head | t->text_tail) & 7) != 0
        || t->ends.hwm > src->len / sizeof(rec_t))
    {
        sh_err_set(err, errlen, "image: inconsistent trailer");
        return -1;
    }
    info->source_capacity = t->capacity;
    info->extraction = t->extraction;
    if (expect_extraction != 0 && t->extraction != expect_extraction) {
        snprintf(err, errlen, "image: fingerprints of extraction version "
                 "%08x, not %08x", t->extraction, expect_extraction);
        return -1;
    }
    sh_index_set_version(sh_store_index(st), t->extraction);
    info->damaged = p.damaged + (uint32_t) p.cut;
    if (!p.whole) {
        /* damaged: every intact frame's documents, one by one */
        if (replay(st, &p, info, err, errlen) != 0) {
            return -1;
        }
    } else if (st->capacity >= t->ends.hwm && st->text_size == t->text_size) {
        if (load_in_place(st, &p, info, err, errlen) != 0) {
            return -1;
        }
    } else if (replay(st, &p, info, err, errlen) != 0) {
        return -1;
    }
    sh_index_ends(sh_store_index_const(st), &e);
    info->documents = e.entries;
    return 0;
}

/* ---- Inspecting. ---- */

typedef struct {
    const trailer_t *t;
    unsigned char   *state;     /* by ref: 0 none, 1 stored, 2 free */
    unsigned char   *text;      /* by ref: 1 with text */
    uint32_t         frames;
} inspect_t;

static int
inspect_frame(void *arg, const frame_t *f, const unsigned char *payload)
{
    inspect_t *x = arg;
    rec_t      r;
    uint32_t   i;

    x->frames++;
    if (f->type != IMG_RECS) {
        return 0;
    }
    for (i = 0; i < f->n && f->first + i < x->t->ends.hwm; i++) {
        memcpy(&r, payload + (size_t) i * sizeof(r), sizeof(r));
        x->state[f->first + i] = r.ix.older == SH_INDEX_FREE ? 2 : 1;
        x->text[f->first + i] = r.doc.text != SH_STORE_NOTEXT;
    }
    return 0;
}

int
sh_image_inspect(const unsigned char *image, size_t len,
                 sh_image_summary_t *s, char *err, size_t errlen)
{
    parsed_t  p;
    inspect_t x;
    uint32_t  ref;

    src_t     src;

    memset(s, 0, sizeof(*s));
    if (((uintptr_t) image & 7) != 0) {
        sh_err_set(err, errlen, "image: not 8-byte aligned in memory");
        return -1;
    }
    memset(&src, 0, sizeof(src));
    src.mem = image;
    src.len = len;
    if (parse(&p, &src, err, errlen) != 0) {
        return -1;
    }
    if (p.t == NULL) {
        sh_err_set(err, errlen, p.cut ? "image: truncated"
                                      : "image: its end is damaged");
        return -1;
    }
    s->capacity = p.t->capacity;
    s->entries = p.t->ends.entries;
    s->extraction = p.t->extraction;
    s->seed_digest = p.t->seed_digest;
    s->text_size = p.t->text_size;
    s->damaged = p.damaged + (uint32_t) p.cut;
    s->whole = p.whole;
    x.t = p.t;
    x.frames = 0;
    x.state = calloc(p.t->ends.hwm ? p.t->ends.hwm : 1, 1);
    x.text = calloc(p.t->ends.hwm ? p.t->ends.hwm : 1, 1);
    if (x.state == NULL || x.text == NULL) {
        free(x.state);
        free(x.text);
        sh_err_set(err, errlen, "out of memory");
        return -1;
    }
    (void) frames(&p, inspect_frame, &x);
    for (ref = 0; ref < p.t->ends.hwm; ref++) {
        s->documents += x.state[ref] == 1;
        s->texts += x.state[ref] == 1 && x.text[ref];
    }
    s->frames = x.frames + p.damaged;
    free(x.state);
    free(x.text);
    return 0;
}
