/*
 * fuzz_snapshot.c -- sh_snapshot_load on any file, and the index it
 * accepts put to work.
 *
 * Input: a flags byte, then the file.
 *   bit 0  recompute the checksums (the header's, and the region's and
 *          every block's in format 2, the trailing one in format 1) before
 *          loading, so that mutations reach the checks behind them
 *   bit 1  make the sizes consistent first: region_size from the header's
 *          capacity, user_len from the file's length
 *   bit 2  expect the file's own hash-key digest (else expect none, 0)
 *   bit 3  expect another digest: the load must fail
 *
 * sh_snapshot.h promises that an unusable file is refused with a message,
 * damage is contained to the part it hits, never a crash and never a
 * silently wrong index.  So: a refusal must come with a message and leave
 * nothing allocated; an accepted file must be exactly what it claims (the
 * region and each user block either the file's bytes or, reported as
 * damaged, zeros), and an intact region must pass sh_index_check, answer
 * exact lookups exactly (every stored document within h, as a scan of
 * them finds), and stay sound under use: lookups in every mode, inserts
 * (with eviction), updates, touches and removals, each followed by
 * sh_index_check.
 */
#include <xxhash.h>

#include "fuzz_util.h"

#include "sh_index.h"
#include "sh_snapshot.h"
#include "sh_volatility.h"

/* The file header (sh_snapshot.c's layout: checked against the bytes a
 * real save writes by the seed corpus and the unit test's seeds). */
#define FSNAP_HDR           128
#define FSNAP_OFF_VERSION   12
#define FSNAP_OFF_CAPACITY  20
#define FSNAP_OFF_REGION    32
#define FSNAP_OFF_USER      40
#define FSNAP_OFF_DIGEST    48
#define FSNAP_OFF_HXXH      120

static void
fsnap_init(void)
{
    (void) sh_volatility_default();
}

static uint64_t
fsnap_get64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

static void
fsnap_put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, sizeof(v));
}

typedef struct {
    uint32_t *ref;
    uint64_t *hash;
    uint32_t  n, cap;
} fsnap_docs_t;

static int
fsnap_collect(void *arg, uint32_t ref, uint64_t hash)
{
    fsnap_docs_t *d = arg;

    FUZZ_CHECK(d->n < d->cap);
    d->ref[d->n] = ref;
    d->hash[d->n] = hash;
    d->n++;
    return 0;
}

/*
 * Never a silently wrong index: lookups that probe every header subset
 * within h (t <= 12, h <= 3: at most 4095 subsets) must find exactly the
 * stored documents within h, as a scan of them does.
 */
static void
fsnap_exact(sh_index_t *ix, uint64_t seed)
{
    sh_index_stats_t st;
    sh_lookup_opts_t o;
    fsnap_docs_t     d;
    sh_match_t       out[64];
    uint64_t         q, h;
    uint32_t         i, k, want;
    size_t           n;

    sh_index_stats(ix, &st);
    if (st.t > 12 || st.entries == 0) {
        return;
    }
    d.cap = st.entries;
    d.n = 0;
    d.ref = calloc(d.cap, sizeof(uint32_t));
    d.hash = calloc(d.cap, sizeof(uint64_t));
    FUZZ_CHECK(d.ref != NULL && d.hash != NULL);
    sh_index_foreach(ix, fsnap_collect, &d);
    FUZZ_CHECK(d.n == st.entries);
    for (i = 0; i < d.n; i++) {
        FUZZ_CHECK(sh_index_get(ix, d.ref[i], &h) == 0 && h == d.hash[i]);
    }
    sh_lookup_opts_init(&o);
    o.mode = SH_MATCH_ALL;
    o.probes = SH_PROBES_MAX;
    for (k = 0; k < 8; k++) {
        uint64_t r = fuzz_rng(&seed);

        q = d.hash[r % d.n] ^ (1ull << (r >> 58)) ^ (1ull << (r >> 52 & 63));
        o.h = (unsigned) (r >> 40) % 4;
        for (want = 0, i = 0; i < d.n; i++) {
            want += (unsigned) __builtin_popcountll(d.hash[i] ^ q) <= o.h;
        }
        n = sh_index_lookup(ix, q, NULL, &o, out, 64, NULL);
        FUZZ_CHECK(n == want);
    }
    free(d.ref);
    free(d.hash);
}

/* Use an accepted index: nothing may go wrong now. */
static void
fsnap_exercise(void *region, size_t size, const uint8_t *ops, size_t nops)
{
    sh_index_t       *ix;
    sh_index_stats_t  st;
    sh_lookup_opts_t  o;
    sh_match_t        out[16];
    char              err[256];
    uint64_t          h, seed = 1;
    uint32_t          ref, ev, probe;
    size_t            i, n;
    unsigned          k;

    ix = sh_index_attach(region, size, err, sizeof(err));
    FUZZ_CHECK(ix != NULL);
    FUZZ_CHECK(sh_index_check(ix, err, sizeof(err)) == 0);
    sh_index_stats(ix, &st);
    fsnap_exact(ix, nops);

    /* Every stored document is found by its own fingerprint, at 0. */
    sh_lookup_opts_init(&o);
    for (ref = 0; ref < st.capacity && ref < 4096; ref++) {
        if (sh_index_get(ix, ref, &h) != 0) {
            continue;
        }
        o.h = 0;
        o.mode = SH_MATCH_CLOSEST;
        n = sh_index_lookup(ix, h, NULL, &o, out, 16, NULL);
        FUZZ_CHECK(n == 1 && out[0].distance == 0 && out[0].hash == h);
    }

    /* A short workload, steered by the input's first bytes. */
    for (k = 0; k < 64; k++) {
        uint8_t  op = nops > 0 ? ops[k % nops] : (uint8_t) k;
        uint64_t r = fuzz_rng(&seed);

        probe = (uint32_t) (r % (st.capacity + 1));
        switch (op % 6) {
        case 0:
            o.h = (unsigned) (r >> 32) % (SH_H_MAX + 1);
            o.mode = (sh_match_mode_t) ((r >> 40) % 3);
            o.probes = (unsigned) (r >> 48) % 64;
            n = sh_index_lookup(ix, r, NULL, &o, out, 16, NULL);
            for (i = 0; i < n && i < 16; i++) {
                FUZZ_CHECK(sh_index_get(ix, out[i].ref, &h) == 0);
                FUZZ_CHECK(h == out[i].hash);
                FUZZ_CHECK(out[i].distance <= o.h);
            }
            break;
        case 1:
        case 2:
            ref = sh_index_insert(ix, r, &ev);
            FUZZ_CHECK(ref != SH_NOREF);
            FUZZ_CHECK(sh_index_get(ix, ref, &h) == 0 && h == r);
            break;
        case 3:
            (void) sh_index_update(ix, probe, r);
            break;
        case 4:
            (void) sh_index_touch(ix, probe);
            break;
        default:
            (void) sh_index_remove(ix, probe);
            break;
        }
        if (sh_index_check(ix, err, sizeof(err)) != 0) {
            fprintf(stderr, "fuzz_snapshot: after op %u: %s\n", op % 6, err);
            FUZZ_CHECK(!"sh_index_check after an operation");
        }
    }
}

/* Format 2 after the header: region | xxh | blocks, each | xxh. */
static size_t
fsnap_v2_user(size_t rest)
{
    size_t blocks = (rest + SH_SNAP_BLOCK + 8 - 1) / (SH_SNAP_BLOCK + 8);

    return rest - 8 * blocks;
}

/* The harness's fix-ups: consistent sizes (bit 1), right checksums
 * (bit 0), for either format. */
static void
fsnap_fix(uint8_t *file, size_t len, unsigned flags)
{
    uint32_t c32, version;
    uint64_t cap, ulen, off, n;

    memcpy(&version, file + FSNAP_OFF_VERSION, sizeof(version));
    if (flags & 2) {
        memcpy(&c32, file + FSNAP_OFF_CAPACITY, sizeof(c32));
        cap = sh_index_region_size(c32);
        fsnap_put64(file + FSNAP_OFF_REGION, cap);
        if (cap <= len - FSNAP_HDR - 8) {
            fsnap_put64(file + FSNAP_OFF_USER, version == 1
                        ? len - FSNAP_HDR - 8 - cap
                        : fsnap_v2_user(len - FSNAP_HDR - 8 - cap));
        }
    }
    if (!(flags & 1)) {
        return;
    }
    fsnap_put64(file + FSNAP_OFF_HXXH, XXH3_64bits(file, FSNAP_OFF_HXXH));
    if (version == 1) {
        fsnap_put64(file + len - 8, XXH3_64bits(file, len - 8));
        return;
    }
    cap = fsnap_get64(file + FSNAP_OFF_REGION);
    ulen = fsnap_get64(file + FSNAP_OFF_USER);
    if (cap > len - FSNAP_HDR - 8) {
        return;
    }
    fsnap_put64(file + FSNAP_HDR + cap, XXH3_64bits(file + FSNAP_HDR, cap));
    off = FSNAP_HDR + cap + 8;
    while (ulen > 0 && off < len) {
        n = ulen < SH_SNAP_BLOCK ? ulen : SH_SNAP_BLOCK;
        if (n + 8 > len - off) {
            return;
        }
        fsnap_put64(file + off + n, XXH3_64bits(file + off, n));
        off += n + 8;
        ulen -= n;
    }
}

/* An accepted file is exactly what it claims, part by part. */
static void
fsnap_accepted(const uint8_t *file, size_t len, void *region,
               size_t region_size, const void *user, size_t user_len,
               const sh_snapshot_info_t *info, uint64_t expect)
{
    const uint8_t *u = user, *fu;
    size_t         off, n, damaged = 0, skip;
    unsigned       i;

    if (info->version == 1) {
        skip = fsnap_get64(file + FSNAP_OFF_USER) >= SH_SNAP_KIND
               ? SH_SNAP_KIND : 0;
        FUZZ_CHECK(len == FSNAP_HDR + region_size + skip + user_len + 8);
        FUZZ_CHECK(info->region_ok && info->damaged == 0);
        FUZZ_CHECK(memcmp(region, file + FSNAP_HDR, region_size) == 0);
        FUZZ_CHECK(user_len == 0
                   || memcmp(user, file + FSNAP_HDR + region_size + skip,
                             user_len) == 0);
    } else {
        FUZZ_CHECK(info->blocks == (user_len + SH_SNAP_BLOCK - 1)
                                   / SH_SNAP_BLOCK);
        FUZZ_CHECK(len == FSNAP_HDR + region_size + 8 + user_len
                          + 8 * info->blocks);
        FUZZ_CHECK(info->region_ok
                   ? memcmp(region, file + FSNAP_HDR, region_size) == 0
                   : fuzz_all_zero(region, region_size));
        fu = file + FSNAP_HDR + region_size + 8;
        for (off = 0, i = 0; off < user_len; off += n, i++) {
            n = user_len - off < SH_SNAP_BLOCK ? user_len - off
                                               : SH_SNAP_BLOCK;
            if (memcmp(u + off, fu + off + 8 * i, n) != 0) {
                FUZZ_CHECK(fuzz_all_zero(u + off, n));
                damaged++;
            }
        }
        FUZZ_CHECK(damaged <= info->damaged);
    }
    FUZZ_CHECK((const char *) user >= (const char *) region + region_size);
    if (info->region_ok) {
        FUZZ_CHECK(expect == 0 || sh_index_seed_digest(region) == expect);
        fsnap_exercise(region, region_size, file + FSNAP_HDR,
                       len > FSNAP_HDR + 64 ? 64 : 0);
    }
}

static int
fsnap_one(const uint8_t *data, size_t size)
{
    fuzz_in_t   in = { data, size };
    unsigned    flags = fuzz_u8(&in);
    uint8_t    *file;
    size_t      len = in.n, region_size = 0, user_len = 0;
    uint64_t    digest = 0, expect = 0;
    void       *region = NULL;
    const void *user = NULL;
    char        path[64], err[256];
    int         fd, rc;
    sh_snapshot_info_t info;

    file = malloc(len + 1);
    FUZZ_CHECK(file != NULL);
    if (len > 0) {
        memcpy(file, in.p, len);
    }
    if (len >= FSNAP_HDR + 8) {
        fsnap_fix(file, len, flags);
        digest = fsnap_get64(file + FSNAP_OFF_DIGEST);
    }
    if (flags & 4) {
        expect = digest;
    }
    if (flags & 8) {
        expect = digest + 1;
    }

    fd = fuzz_memfile(file, len, path, sizeof(path));
    err[0] = '\0';
    rc = sh_snapshot_load(path, expect, &region, &region_size, &user,
                          &user_len, &info, err, sizeof(err));
    close(fd);

    if (rc != 0) {
        /* Refused: with a reason, and nothing handed out. */
        FUZZ_CHECK(rc == -1);
        FUZZ_CHECK(err[0] != '\0');
        FUZZ_CHECK(region == NULL);
        free(file);
        return 0;
    }
    FUZZ_CHECK(!(flags & 8) || expect == 0);
    FUZZ_CHECK(region != NULL);
    fsnap_accepted(file, len, region, region_size, user, user_len, &info,
                   expect);
    free(region);
    free(file);
    return 0;
}

FUZZ_ENTRY(fsnap_init, fsnap_one)
