/*
 * sh_cluster.c -- the tier's shared index as it lies in a Redis Cluster
 * (sh_cluster.h says what lies where).
 */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "sh_cluster.h"
#include "sh_index.h"
#include "sh_le.h"
#include "sh_mac.h"
#include "sh_popcnt.h"
#include "sh_stream.h"
#include "sh_vosh.h"

/* The table of CRC16-XMODEM, computed once: 512 bytes rather than a
 * literal table whose correctness the reader would have to take on trust;
 * the unit test checks the value Redis's documentation gives. */
static uint16_t crc_table[256];
static int      crc_ready;

static void
crc_init(void)
{
    unsigned i, j;

    for (i = 0; i < 256; i++) {
        uint16_t c = (uint16_t) (i << 8);

        for (j = 0; j < 8; j++) {
            c = (uint16_t) ((c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1);
        }
        crc_table[i] = c;
    }
    __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint16_t
sh_cluster_crc16(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint16_t             crc = 0;
    size_t               i;

    /* Two threads may both fill the table: they write the same values. */
    if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) {
        crc_init();
    }
    for (i = 0; i < len; i++) {
        crc = (uint16_t) ((crc << 8) ^ crc_table[((crc >> 8) ^ p[i]) & 0xff]);
    }
    return crc;
}

unsigned
sh_cluster_slot(const void *key, size_t len)
{
    const char *k = key, *open, *close;

    /* Redis's rule (cluster spec, "Hash tags"): the first '{', then the
     * first '}' after it; a tag only if something lies between them. */
    open = memchr(k, '{', len);
    if (open != NULL) {
        size_t rest = len - (size_t) (open - k) - 1;

        close = memchr(open + 1, '}', rest);
        if (close != NULL && close > open + 1) {
            return sh_cluster_crc16(open + 1, (size_t) (close - open - 1))
                   & (SH_CLUSTER_SLOTS - 1);
        }
    }
    return sh_cluster_crc16(k, len) & (SH_CLUSTER_SLOTS - 1);
}

int
sh_cluster_layout_init(sh_cluster_layout_t *l, const char *prefix,
                       size_t prefix_len, unsigned fp_bits, unsigned rec_bits,
                       const unsigned char mackey[SH_CLUSTER_MACKEY_LEN],
                       char *err, size_t errlen)
{
    size_t i;

    memset(l, 0, sizeof(*l));
    if (prefix_len == 0 || prefix_len > SH_CLUSTER_PREFIX_MAX) {
        snprintf(err, errlen, "the key prefix must have 1 to %d bytes",
                 SH_CLUSTER_PREFIX_MAX);
        return -1;
    }
    for (i = 0; i < prefix_len; i++) {
        unsigned char c = (unsigned char) prefix[i];

        if (c <= ' ' || c >= 0x7f || c == '{' || c == '}') {
            snprintf(err, errlen, "the key prefix may hold printable "
                     "characters but space, '{' and '}' (a hash tag would "
                     "put every bucket in one slot)");
            return -1;
        }
    }
    if (fp_bits < SH_CLUSTER_BITS_MIN || fp_bits > SH_CLUSTER_BITS_MAX
        || rec_bits < SH_CLUSTER_BITS_MIN || rec_bits > SH_CLUSTER_BITS_MAX)
    {
        snprintf(err, errlen, "bucket bits must be from %d to %d",
                 SH_CLUSTER_BITS_MIN, SH_CLUSTER_BITS_MAX);
        return -1;
    }
    memcpy(l->prefix, prefix, prefix_len);
    l->prefix_len = prefix_len;
    l->fp_bits = fp_bits;
    l->rec_bits = rec_bits;
    /* a text bucket holds a quarter of a record bucket's documents: a
     * text is about twice a record, and a lookup reads both */
    l->key_bits = rec_bits + 2 > SH_CLUSTER_BITS_MAX ? SH_CLUSTER_BITS_MAX
                                                     : rec_bits + 2;
    l->fp_tail = (64 - fp_bits + 7) / 8;
    l->rec_tail = (64 - rec_bits + 7) / 8;
    l->key_tail = (64 - l->key_bits + 7) / 8;
    l->fp_entry = l->fp_tail + 4;
    l->rec_entry = l->rec_tail + 8 + 8 + 4 + 16;
    memcpy(l->mackey, mackey, SH_CLUSTER_MACKEY_LEN);
    return 0;
}

unsigned
sh_cluster_bits_for(uint64_t n, unsigned per_bucket)
{
    unsigned bits = 0;

    if (per_bucket == 0) {
        per_bucket = 1;
    }
    while (bits < 63 && ((uint64_t) per_bucket << bits) < n) {
        bits++;
    }
    if (bits < SH_CLUSTER_BITS_MIN) {
        bits = SH_CLUSTER_BITS_MIN;
    }
    return bits > SH_CLUSTER_BITS_MAX ? SH_CLUSTER_BITS_MAX : bits;
}

uint32_t
sh_cluster_fp_bucket(const sh_cluster_layout_t *l, uint64_t fp)
{
    return (uint32_t) (fp >> (64 - l->fp_bits));
}

uint32_t
sh_cluster_rec_bucket(const sh_cluster_layout_t *l, uint64_t kh)
{
    return (uint32_t) (kh >> (64 - l->rec_bits));
}

uint32_t
sh_cluster_text_bucket(const sh_cluster_layout_t *l, uint64_t kh)
{
    return (uint32_t) (kh >> (64 - l->key_bits));
}

/* The bucket bits of a family. */
static unsigned
kind_bits(const sh_cluster_layout_t *l, int kind)
{
    return kind == SH_CLUSTER_FP ? l->fp_bits
           : kind == SH_CLUSTER_TEXT ? l->key_bits : l->rec_bits;
}

size_t
sh_cluster_key(const sh_cluster_layout_t *l, int kind, uint32_t bucket,
               char *buf)
{
    unsigned bits = kind_bits(l, kind);
    int      n;

    memcpy(buf, l->prefix, l->prefix_len);
    buf[l->prefix_len] = (char) kind;
    if (kind == SH_CLUSTER_META) {
        buf[l->prefix_len + 1] = '\0';
        return l->prefix_len + 1;
    }
    n = snprintf(buf + l->prefix_len + 1, 8, "%0*x", (int) (bits + 3) / 4,
                 (unsigned) bucket);
    return l->prefix_len + 1 + (size_t) n;
}

size_t
sh_cluster_meta_format(const sh_cluster_layout_t *l, char *buf)
{
    return (size_t) snprintf(buf, SH_CLUSTER_META_MAX, "%u %u", l->fp_bits,
                             l->rec_bits);
}

int
sh_cluster_meta_parse(const char *s, size_t len, unsigned *fp_bits,
                      unsigned *rec_bits)
{
    char     buf[SH_CLUSTER_META_MAX], tail;
    unsigned a, b;

    if (len == 0 || len >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (sscanf(buf, "%u %u%c", &a, &b, &tail) != 2
        || a < SH_CLUSTER_BITS_MIN || a > SH_CLUSTER_BITS_MAX
        || b < SH_CLUSTER_BITS_MIN || b > SH_CLUSTER_BITS_MAX)
    {
        return -1;
    }
    *fp_bits = a;
    *rec_bits = b;
    return 0;
}

size_t
sh_cluster_chunk_size(const sh_cluster_layout_t *l, int kind, size_t n)
{
    return SH_CLUSTER_CHUNK_HEAD + SH_CLUSTER_MAC_LEN
           + n * (kind == SH_CLUSTER_FP ? l->fp_entry : l->rec_entry);
}

/* The MAC of a chunk (head and entries, len bytes) of a bucket. */
static int
chunk_mac(const sh_cluster_layout_t *l, int kind, uint32_t bucket,
          const unsigned char *chunk, size_t len,
          unsigned char mac[SH_CLUSTER_MAC_LEN])
{
    static const char tag[] = "simhash-cluster-1";
    unsigned char     head[6], full[SH_MAC_FULL];
    sh_mac_part_t     parts[4];

    /* the bucket's bits too: a bucket number names other fingerprints
     * under other bits, so a chunk read under a forged layout (the meta
     * key) is forged, not misread */
    head[0] = (unsigned char) kind;
    head[1] = (unsigned char) kind_bits(l, kind);
    sh_le_put(head + 2, bucket, 4);
    parts[0].data = tag;
    parts[0].len = sizeof(tag);
    parts[1].data = l->prefix;
    parts[1].len = l->prefix_len + 1;       /* its NUL ends it */
    parts[2].data = head;
    parts[2].len = sizeof(head);
    parts[3].data = chunk;
    parts[3].len = len;
    if (sh_mac(full, l->mackey, SH_CLUSTER_MACKEY_LEN, parts, 4) != 0) {
        return -1;
    }
    memcpy(mac, full, SH_CLUSTER_MAC_LEN);
    return 0;
}

static size_t
chunk_close(const sh_cluster_layout_t *l, int kind, uint32_t bucket,
            unsigned char *out, size_t n, unsigned char *p)
{
    out[0] = (unsigned char) kind;
    sh_le_put(out + 1, n, 2);
    if (chunk_mac(l, kind, bucket, out, (size_t) (p - out), p) != 0) {
        return 0;
    }
    return (size_t) (p - out) + SH_CLUSTER_MAC_LEN;
}

size_t
sh_cluster_encode_fp(const sh_cluster_layout_t *l, uint32_t bucket,
                     const sh_cluster_fpent_t *e, size_t n,
                     unsigned char *out)
{
    unsigned char *p = out + SH_CLUSTER_CHUNK_HEAD;
    size_t         i;

    if (n == 0 || n > SH_CLUSTER_CHUNK_MAX) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (sh_cluster_fp_bucket(l, e[i].fp) != bucket) {
            return 0;
        }
        p = sh_le_put(p, e[i].fp, l->fp_tail);
        p = sh_le_put(p, e[i].id >> 32, 4);
    }
    return chunk_close(l, SH_CLUSTER_FP, bucket, out, n, p);
}

size_t
sh_cluster_encode_rec(const sh_cluster_layout_t *l, uint32_t bucket,
                      const sh_cluster_rec_t *r, size_t n, unsigned char *out)
{
    unsigned char *p = out + SH_CLUSTER_CHUNK_HEAD;
    size_t         i;

    if (n == 0 || n > SH_CLUSTER_CHUNK_MAX) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (sh_cluster_rec_bucket(l, r[i].kh) != bucket) {
            return 0;
        }
        p = sh_le_put(p, r[i].kh, l->rec_tail);
        p = sh_le_put(p, r[i].fp, 8);
        p = sh_le_put(p, r[i].digest, 8);
        p = sh_le_put(p, r[i].second, 4);
        p = sh_le_put(p, r[i].sk.structure, 8);
        p = sh_le_put(p, r[i].sk.links, 8);
    }
    return chunk_close(l, SH_CLUSTER_REC, bucket, out, n, p);
}

size_t
sh_cluster_text_size(const sh_cluster_layout_t *l, const sh_cluster_text_t *t,
                     size_t n)
{
    size_t size = SH_CLUSTER_CHUNK_HEAD + SH_CLUSTER_MAC_LEN, i;

    for (i = 0; i < n; i++) {
        size += l->key_tail + 2 + t[i].len;
    }
    return size;
}

size_t
sh_cluster_encode_text(const sh_cluster_layout_t *l, uint32_t bucket,
                       const sh_cluster_text_t *t, size_t n,
                       unsigned char *out)
{
    unsigned char *p = out + SH_CLUSTER_CHUNK_HEAD;
    size_t         i;

    if (n == 0 || n > SH_CLUSTER_CHUNK_MAX) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (sh_cluster_text_bucket(l, t[i].kh) != bucket || t[i].len == 0
            || t[i].len > SH_CLUSTER_TEXT_MAX)
        {
            return 0;
        }
        p = sh_le_put(p, t[i].kh, l->key_tail);
        p = sh_le_put(p, t[i].len, 2);
        memcpy(p, t[i].text, t[i].len);
        p += t[i].len;
    }
    return chunk_close(l, SH_CLUSTER_TEXT, bucket, out, n, p);
}

/* A tail read back under its bucket's top bits. */
static uint64_t
whole(uint64_t tail, unsigned tail_bytes, unsigned bits, uint32_t bucket)
{
    if (tail_bytes < 8) {
        tail &= ((uint64_t) 1 << (64 - bits)) - 1;
    }
    return ((uint64_t) bucket << (64 - bits)) | tail;
}

/*
 * The chunks of a value, one at a time: the next chunk's entries (*ents,
 * *n) and its length; 0 at the end or when the rest is not a chunk of
 * `kind` (rd->malformed).  The MAC is left to the caller, which checks it
 * only for a chunk holding an entry it will use: most probes find nothing
 * near, and their chunks are never MACed.
 */
static size_t
chunk_next(const unsigned char *v, size_t len, int kind, size_t entry,
           const unsigned char **ents, size_t *n, sh_cluster_read_t *rd)
{
    size_t count, size;

    if (len == 0) {
        return 0;
    }
    if (len < SH_CLUSTER_CHUNK_HEAD + SH_CLUSTER_MAC_LEN
        || v[0] != (unsigned char) kind)
    {
        rd->malformed = 1;
        return 0;
    }
    count = (size_t) sh_le_get(v + 1, 2);
    size = SH_CLUSTER_CHUNK_HEAD + count * entry + SH_CLUSTER_MAC_LEN;
    if (count == 0 || size > len) {
        rd->malformed = 1;
        return 0;
    }
    *ents = v + SH_CLUSTER_CHUNK_HEAD;
    *n = count;
    rd->chunks++;
    rd->entries += (uint32_t) count;
    return size;
}

static int
chunk_verify(const sh_cluster_layout_t *l, int kind, uint32_t bucket,
             const unsigned char *chunk, size_t size)
{
    unsigned char mac[SH_CLUSTER_MAC_LEN];

    if (chunk_mac(l, kind, bucket, chunk, size - SH_CLUSTER_MAC_LEN, mac)
        != 0)
    {
        return 0;
    }
    return CRYPTO_memcmp(mac, chunk + size - SH_CLUSTER_MAC_LEN,
                         SH_CLUSTER_MAC_LEN) == 0;
}

/* Insert (closest first) into a bounded array of n found so far. */
static void
near_add(sh_cluster_fpent_t *out, unsigned *dist, size_t max, size_t found,
         const sh_cluster_fpent_t *e, unsigned d)
{
    size_t i = found < max ? found : max;

    if (max == 0 || (i == max && dist[max - 1] <= d)) {
        return;
    }
    if (i == max) {
        i--;
    }
    while (i > 0 && dist[i - 1] > d) {
        out[i] = out[i - 1];
        dist[i] = dist[i - 1];
        i--;
    }
    out[i] = *e;
    dist[i] = d;
}

size_t
sh_cluster_near(const sh_cluster_layout_t *l, uint32_t bucket,
                const unsigned char *v, size_t len, uint64_t x, unsigned h,
                sh_cluster_fpent_t *out, size_t max, sh_cluster_read_t *rd)
{
    sh_cluster_read_t    local;
    const unsigned char *ents;
    size_t               n, size, i, found = 0;
    unsigned             dist[64];

    if (rd == NULL) {
        rd = &local;
    }
    memset(rd, 0, sizeof(*rd));
    if (max > 64) {
        max = 64;
    }
    while ((size = chunk_next(v, len, SH_CLUSTER_FP, l->fp_entry, &ents, &n,
                              rd)) != 0)
    {
        int checked = 0;

        for (i = 0; i < n; i++) {
            const unsigned char *p = ents + i * l->fp_entry;
            sh_cluster_fpent_t   e;
            unsigned             d;

            e.fp = whole(sh_le_get(p, l->fp_tail), l->fp_tail, l->fp_bits,
                         bucket);
            d = sh_distance(e.fp, x);
            if (d > h) {
                continue;
            }
            if (!checked) {
                checked = chunk_verify(l, SH_CLUSTER_FP, bucket, v, size)
                          ? 1 : -1;
                if (checked < 0) {
                    rd->forged++;
                }
            }
            if (checked < 0) {
                break;
            }
            e.id = sh_le_get(p + l->fp_tail, 4) << 32;
            near_add(out, dist, max, found, &e, d);
            found++;
        }
        v += size;
        len -= size;
    }
    return found;
}

/*
 * The newest version of the document whose key hash, masked, is `want`
 * (kh: mask all ones; an entry: the top 32 bits).
 */
static int
find_rec(const sh_cluster_layout_t *l, uint32_t bucket,
         const unsigned char *v, size_t len, uint64_t want, uint64_t mask,
         sh_cluster_rec_t *out, sh_cluster_read_t *rd)
{
    const unsigned char *ents;
    size_t               n, size, i;
    int                  have = 0;

    while ((size = chunk_next(v, len, SH_CLUSTER_REC, l->rec_entry, &ents,
                              &n, rd)) != 0)
    {
        int checked = 0;

        for (i = 0; i < n; i++) {
            const unsigned char *p = ents + i * l->rec_entry;
            sh_cluster_rec_t     r;

            r.kh = whole(sh_le_get(p, l->rec_tail), l->rec_tail, l->rec_bits,
                         bucket);
            if ((r.kh & mask) != want) {
                continue;
            }
            if (!checked) {
                checked = chunk_verify(l, SH_CLUSTER_REC, bucket, v, size)
                          ? 1 : -1;
                if (checked < 0) {
                    rd->forged++;
                    break;
                }
            }
            p += l->rec_tail;
            r.fp = sh_le_get(p, 8);
            r.digest = sh_le_get(p + 8, 8);
            r.second = (uint32_t) sh_le_get(p + 16, 4);
            r.sk.structure = sh_le_get(p + 20, 8);
            r.sk.links = sh_le_get(p + 28, 8);
            /* the newest version, in the order every node keeps */
            if (!have || sh_stream_newer((uint64_t) r.second * 1000, r.fp,
                                         out->second, out->fp))
            {
                *out = r;
                have = 1;
            }
        }
        v += size;
        len -= size;
    }
    return have;
}

int
sh_cluster_find_rec(const sh_cluster_layout_t *l, uint32_t bucket,
                    const unsigned char *v, size_t len, uint64_t kh,
                    sh_cluster_rec_t *out, sh_cluster_read_t *rd)
{
    sh_cluster_read_t local;

    if (rd == NULL) {
        rd = &local;
    }
    memset(rd, 0, sizeof(*rd));
    if (sh_cluster_rec_bucket(l, kh) != bucket) {
        return 0;
    }
    return find_rec(l, bucket, v, len, kh, ~(uint64_t) 0, out, rd);
}

int
sh_cluster_find_entry_rec(const sh_cluster_layout_t *l, uint32_t bucket,
                          const unsigned char *v, size_t len,
                          const sh_cluster_fpent_t *e, sh_cluster_rec_t *out,
                          sh_cluster_read_t *rd)
{
    sh_cluster_read_t local;
    uint64_t          top = 0xffffffff00000000ull;

    if (rd == NULL) {
        rd = &local;
    }
    memset(rd, 0, sizeof(*rd));
    if (sh_cluster_rec_bucket(l, e->id) != bucket) {
        return 0;
    }
    /* Two documents of one top half both current: the one of e's
     * fingerprint is wanted, and the search for the newest is by key hash
     * then; odds of two such keys in a bucket at 2^30 documents: 2^-2 of
     * a bucket pair's, never a wrong answer (the fingerprint decides). */
    if (!find_rec(l, bucket, v, len, e->id & top, top, out, rd)) {
        return 0;
    }
    if (out->fp == e->fp) {
        return 1;
    }
    /* the newest of that top half is another fingerprint: another
     * document of the same top bits may still hold e's */
    {
        const unsigned char *ents;
        const unsigned char *w = v;
        size_t               wl = len, n, size, i;
        sh_cluster_read_t    again;

        memset(&again, 0, sizeof(again));
        while ((size = chunk_next(w, wl, SH_CLUSTER_REC, l->rec_entry, &ents,
                                  &n, &again)) != 0)
        {
            for (i = 0; i < n; i++) {
                const unsigned char *p = ents + i * l->rec_entry;
                uint64_t kh = whole(sh_le_get(p, l->rec_tail), l->rec_tail,
                                    l->rec_bits, bucket);

                if ((kh & top) == (e->id & top) && kh != out->kh
                    && sh_le_get(p + l->rec_tail, 8) == e->fp)
                {
                    sh_cluster_read_t rd2;

                    memset(&rd2, 0, sizeof(rd2));
                    if (find_rec(l, bucket, v, len, kh, ~(uint64_t) 0, out,
                                 &rd2) && out->fp == e->fp)
                    {
                        rd->forged += rd2.forged;
                        return 1;
                    }
                }
            }
            w += size;
            wl -= size;
        }
    }
    return 0;
}

/*
 * The next chunk of key texts: its length (its count-th entry's end plus
 * the MAC), 0 at the end or when the rest is not one (rd->malformed).
 */
static size_t
text_chunk_next(const sh_cluster_layout_t *l, const unsigned char *v,
                size_t len, size_t *n, sh_cluster_read_t *rd)
{
    size_t count, i, off = SH_CLUSTER_CHUNK_HEAD, tl;

    if (len == 0) {
        return 0;
    }
    if (len < SH_CLUSTER_CHUNK_HEAD + SH_CLUSTER_MAC_LEN
        || v[0] != (unsigned char) SH_CLUSTER_TEXT)
    {
        rd->malformed = 1;
        return 0;
    }
    count = (size_t) sh_le_get(v + 1, 2);
    for (i = 0; i < count; i++) {
        if (off + l->key_tail + 2 > len) {
            rd->malformed = 1;
            return 0;
        }
        tl = (size_t) sh_le_get(v + off + l->key_tail, 2);
        off += l->key_tail + 2 + tl;
    }
    if (count == 0 || off + SH_CLUSTER_MAC_LEN > len) {
        rd->malformed = 1;
        return 0;
    }
    *n = count;
    rd->chunks++;
    rd->entries += (uint32_t) count;
    return off + SH_CLUSTER_MAC_LEN;
}

int
sh_cluster_find_text(const sh_cluster_layout_t *l, uint32_t bucket,
                     const unsigned char *v, size_t len, uint64_t want,
                     uint64_t mask, sh_cluster_text_t *out,
                     sh_cluster_read_t *rd)
{
    sh_cluster_read_t local;
    size_t            n, size, i, off;

    if (rd == NULL) {
        rd = &local;
    }
    memset(rd, 0, sizeof(*rd));
    while ((size = text_chunk_next(l, v, len, &n, rd)) != 0) {
        int checked = 0;

        for (i = 0, off = SH_CLUSTER_CHUNK_HEAD; i < n; i++) {
            const unsigned char *p = v + off;
            size_t               tl = (size_t) sh_le_get(p + l->key_tail, 2);
            uint64_t             kh;

            off += l->key_tail + 2 + tl;
            kh = whole(sh_le_get(p, l->key_tail), l->key_tail, l->key_bits,
                       bucket);
            if ((kh & mask) != (want & mask) || tl == 0) {
                continue;
            }
            if (!checked) {
                checked = chunk_verify(l, SH_CLUSTER_TEXT, bucket, v, size)
                          ? 1 : -1;
                if (checked < 0) {
                    rd->forged++;
                    break;
                }
            }
            out->kh = kh;
            out->text = (const char *) p + l->key_tail + 2;
            out->len = tl;
            return 1;
        }
        v += size;
        len -= size;
    }
    return 0;
}

unsigned
sh_cluster_probes_for(const sh_cluster_layout_t *l, unsigned h, float recall,
                      const sh_volatility_t *vol)
{
    unsigned k;

    if (h == 0) {
        return 0;
    }
    if (vol == NULL) {
        vol = sh_volatility_default();
    }
    /* Half the misses the target allows: a probe in the cluster is one
     * more GET in a round trip already made (bytes, not a wait), so the
     * cluster buys the recall a local index gets from its fewer bits. */
    recall = recall < 1 ? 1 - (1 - recall) / 2 : 1;
    k = sh_volatility_k(vol, 0, h > SH_H_MAX ? SH_H_MAX : h, l->fp_bits,
                        recall, 4 * l->fp_bits);
    return k > SH_PROBES_MAX ? SH_PROBES_MAX : k;
}

size_t
sh_cluster_probes(const sh_cluster_layout_t *l, uint64_t x, const float *w,
                  unsigned h, unsigned k, const sh_volatility_t *vol,
                  uint32_t *out, size_t max)
{
    float          lo[SH_CLUSTER_BITS_MAX];
    uint8_t        bit_of[SH_CLUSTER_BITS_MAX];
    sh_vosh_node_t node;
    sh_vosh_t      v;
    uint32_t       own = sh_cluster_fp_bucket(l, x);
    size_t         n = 0;
    unsigned       emitted = 0, j, vh = h > SH_VOSH_HMAX ? SH_VOSH_HMAX : h;

    if (max == 0) {
        return 0;
    }
    out[n++] = own;
    if (k == 0 || vh == 0) {
        return n;
    }
    if (k > SH_PROBES_MAX) {
        k = SH_PROBES_MAX;
    }
    if (vol == NULL) {
        vol = sh_volatility_default();
    }
    {
        /* sized by k, as the index's (sh_index.c says why) */
        sh_vosh_node_t heap[SH_VOSH_HEAP_FOR(k, vh)];

        sh_vosh_rank_header(vol, w, l->fp_bits, lo, bit_of);
        sh_vosh_init(&v, lo, l->fp_bits, vh, heap, SH_VOSH_HEAP_FOR(k, vh));
        while (n < max && emitted < k && sh_vosh_next(&v, &node)) {
            uint64_t mask = 0;

            emitted++;
            for (j = 0; j < node.size; j++) {
                mask |= 1ull << bit_of[node.idx[j]];
            }
            /* subsets of the bucket bits only: each a bucket of its own */
            out[n++] = sh_cluster_fp_bucket(l, x ^ mask);
        }
    }
    return n;
}
