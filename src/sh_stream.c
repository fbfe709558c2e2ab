/*
 * sh_stream.c -- the replication stream's entries and ids (sh_stream.h).
 */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "sh_keyrec.h"
#include "sh_le.h"
#include "sh_mac.h"
#include "sh_stream.h"
#include "sh_version.h"

const char *const sh_stream_field_names[SH_STREAM_NFIELDS] = {
    "node", "key", "fp", "digest", "time", "seed", "xv", "sk", "seq", "mac"
};

/* Decimal digits of s[0..len) as a uint64: 0, or -1 (empty, not a digit,
 * overflow). */
static int
parse_u64(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    size_t   i;

    if (len == 0 || len > 20) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        unsigned d = (unsigned char) s[i] - '0';

        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* Exactly `digits` hex digits. */
static int
parse_hex(const char *s, size_t len, size_t digits, uint64_t *out)
{
    uint64_t v = 0;
    size_t   i;

    if (len != digits) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char) s[i];
        unsigned      d;

        if (c >= '0' && c <= '9') {
            d = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            d = c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            d = c - 'A' + 10;
        } else {
            return -1;
        }
        v = (v << 4) | d;
    }
    *out = v;
    return 0;
}

/* 2 * SH_STREAM_MAC_LEN hex digits into bytes. */
static int
parse_mac(const char *s, size_t len, unsigned char *mac)
{
    uint64_t v;
    size_t   i;

    if (len != 2 * SH_STREAM_MAC_LEN) {
        return -1;
    }
    for (i = 0; i < SH_STREAM_MAC_LEN; i++) {
        if (parse_hex(s + 2 * i, 2, 2, &v) != 0) {
            return -1;
        }
        mac[i] = (unsigned char) v;
    }
    return 0;
}

int
sh_stream_id_parse(sh_stream_id_t *id, const char *s, size_t len)
{
    const char *dash = memchr(s, '-', len);

    if (dash == NULL) {
        id->seq = 0;
        return parse_u64(s, len, &id->ms);
    }
    if (parse_u64(s, (size_t) (dash - s), &id->ms) != 0
        || parse_u64(dash + 1, len - (size_t) (dash - s) - 1, &id->seq) != 0)
    {
        return -1;
    }
    return 0;
}

size_t
sh_stream_id_format(char *buf, const sh_stream_id_t *id)
{
    int n = snprintf(buf, SH_STREAM_ID_LEN, "%llu-%llu",
                     (unsigned long long) id->ms,
                     (unsigned long long) id->seq);

    return n > 0 ? (size_t) n : 0;
}

int
sh_stream_id_cmp(const sh_stream_id_t *a, const sh_stream_id_t *b)
{
    if (a->ms != b->ms) {
        return a->ms < b->ms ? -1 : 1;
    }
    if (a->seq != b->seq) {
        return a->seq < b->seq ? -1 : 1;
    }
    return 0;
}

/*
 * The MAC covers every field in a fixed binary form, with the lengths of
 * the two variable ones, so that no two entries share a message: a field
 * cannot be moved into its neighbour.  An entry with sketches (the sk
 * field) is signed under another tag with them at the end, so that they
 * cannot be stripped or added; one without (an earlier release's) is
 * signed as it always was.  An entry with a sequence number (seq) is
 * signed under a third tag, with the sketches (zeros when it has none)
 * and the number at the end: a replayed entry cannot be given a newer
 * number, nor have its number stripped to pass as an earlier release's.
 */
static void
dust_mac(unsigned char mac[SH_STREAM_MAC_LEN], const sh_stream_entry_t *e,
         const unsigned char key[SH_STREAM_KEY_LEN])
{
    static const char  tag[] = "SHDUST01", tag_seq[] = "SHDUST02";
    unsigned char      head[8 + 4 + 4], tail[8 + 4 + 8], *p;
    int                seq = sh_stream_has_seq(e);
    unsigned char      full[SH_MAC_FULL];
    sh_mac_part_t      parts[4];

    p = head;
    memcpy(p, seq ? tag_seq : tag, sizeof(tag) - 1);
    p = sh_le_put(p + sizeof(tag) - 1, e->node_len, 4);
    (void) sh_le_put(p, SH_STREAM_DUST_LEN, 4);

    p = sh_le_put(tail, e->time, 8);
    p = sh_le_put(p, e->seed, 4);
    if (seq) {
        (void) sh_le_put(p, e->seq, 8);
    }

    parts[0].data = head;       parts[0].len = sizeof(head);
    parts[1].data = e->node;    parts[1].len = e->node_len;
    parts[2].data = e->dust;    parts[2].len = SH_STREAM_DUST_LEN;
    parts[3].data = tail;       parts[3].len = sizeof(tail) - (seq ? 0 : 8);

    (void) sh_mac(full, key, SH_STREAM_KEY_LEN, parts, 4);
    memcpy(mac, full, SH_STREAM_MAC_LEN);
}

int
sh_stream_is_dust(const sh_stream_entry_t *e)
{
    return (e->seen & (1u << SH_STREAM_F_DUST)) != 0;
}

int
sh_stream_has_seq(const sh_stream_entry_t *e)
{
    return (e->seen & (1u << SH_STREAM_F_SEQ)) != 0;
}

uint64_t
sh_stream_next_seq(uint64_t last, uint64_t now_us)
{
    return now_us > last ? now_us : last + 1;
}

void
sh_stream_mac(unsigned char mac[SH_STREAM_MAC_LEN],
              const sh_stream_entry_t *e,
              const unsigned char key[SH_STREAM_KEY_LEN])
{
    static const char  tag[] = "SHSTRM01", tag_sk[] = "SHSTRM02",
                       tag_seq[] = "SHSTRM03";
    unsigned char      head[8 + 4 + 4], tail[8 + 8 + 8 + 4 + 4 + 16 + 8];
    unsigned char     *p;
    int                seq = sh_stream_has_seq(e);
    int                sk = seq || (e->seen & (1u << SH_STREAM_F_SK)) != 0;
    size_t             tail_len;
    unsigned char      full[SH_MAC_FULL];
    sh_mac_part_t      parts[4];

    if (sh_stream_is_dust(e)) {
        dust_mac(mac, e, key);
        return;
    }

    p = head;
    /* the tag without its NUL */
    memcpy(p, seq ? tag_seq : sk ? tag_sk : tag, sizeof(tag) - 1);
    p = sh_le_put(p + sizeof(tag) - 1, e->node_len, 4);
    (void) sh_le_put(p, e->key_len, 4);

    p = sh_le_put(tail, e->hash, 8);
    p = sh_le_put(p, e->digest, 8);
    p = sh_le_put(p, e->time, 8);
    p = sh_le_put(p, e->seed, 4);
    p = sh_le_put(p, e->xv, 4);
    if (sk) {
        p = sh_le_put(p, e->sketches.structure, 8);
        p = sh_le_put(p, e->sketches.links, 8);
    }
    if (seq) {
        p = sh_le_put(p, e->seq, 8);
    }
    tail_len = (size_t) (p - tail);

    parts[0].data = head;       parts[0].len = sizeof(head);
    parts[1].data = e->node;    parts[1].len = e->node_len;
    parts[2].data = e->key;     parts[2].len = e->key_len;
    parts[3].data = tail;       parts[3].len = tail_len;

    /* out of memory: a MAC of zeros, which no entry verifies against */
    (void) sh_mac(full, key, SH_STREAM_KEY_LEN, parts, 4);
    memcpy(mac, full, SH_STREAM_MAC_LEN);
}

int
sh_stream_verify(const sh_stream_entry_t *e,
                 const unsigned char key[SH_STREAM_KEY_LEN])
{
    unsigned char want[SH_STREAM_MAC_LEN];

    sh_stream_mac(want, e, key);
    return CRYPTO_memcmp(want, e->mac, SH_STREAM_MAC_LEN) == 0;
}

void
sh_stream_encode(sh_stream_fields_t *out, const sh_stream_entry_t *e,
                 const unsigned char key[SH_STREAM_KEY_LEN])
{
    unsigned char     mac[SH_STREAM_MAC_LEN];
    unsigned          f, i;
    sh_stream_entry_t signed_e = *e;

    /* written: signed with them */
    signed_e.seen |= (1u << SH_STREAM_F_SK) | (1u << SH_STREAM_F_SEQ);

    snprintf(out->fp, sizeof(out->fp), "%016llx",
             (unsigned long long) e->hash);
    snprintf(out->digest, sizeof(out->digest), "%016llx",
             (unsigned long long) e->digest);
    snprintf(out->time, sizeof(out->time), "%llu",
             (unsigned long long) e->time);
    snprintf(out->seed, sizeof(out->seed), "%08x", (unsigned) e->seed);
    sh_version_format(out->xv, e->xv);
    snprintf(out->sk, sizeof(out->sk), "%016llx%016llx",
             (unsigned long long) e->sketches.structure,
             (unsigned long long) e->sketches.links);
    snprintf(out->seq, sizeof(out->seq), "%llu",
             (unsigned long long) e->seq);
    sh_stream_mac(mac, &signed_e, key);
    for (i = 0; i < SH_STREAM_MAC_LEN; i++) {
        snprintf(out->mac + 2 * i, 3, "%02x", mac[i]);
    }

    out->value[SH_STREAM_F_NODE] = (const char *) e->node;
    out->len[SH_STREAM_F_NODE] = e->node_len;
    out->value[SH_STREAM_F_KEY] = (const char *) e->key;
    out->len[SH_STREAM_F_KEY] = e->key_len;
    out->value[SH_STREAM_F_FP] = out->fp;
    out->value[SH_STREAM_F_DIGEST] = out->digest;
    out->value[SH_STREAM_F_TIME] = out->time;
    out->value[SH_STREAM_F_SEED] = out->seed;
    out->value[SH_STREAM_F_XV] = out->xv;
    out->value[SH_STREAM_F_SK] = out->sk;
    out->value[SH_STREAM_F_SEQ] = out->seq;
    out->value[SH_STREAM_F_MAC] = out->mac;

    for (f = 0; f < SH_STREAM_NFIELDS; f++) {
        out->name[f] = sh_stream_field_names[f];
        if (f != SH_STREAM_F_NODE && f != SH_STREAM_F_KEY) {
            out->len[f] = strlen(out->value[f]);
        }
    }
}

void
sh_stream_encode_dust(sh_stream_dust_fields_t *out,
                      const sh_stream_entry_t *e,
                      const unsigned char key[SH_STREAM_KEY_LEN])
{
    static const char *const names[SH_STREAM_DUST_NFIELDS] = {
        "node", "dust", "time", "seed", "seq", "mac"
    };
    unsigned char     mac[SH_STREAM_MAC_LEN];
    unsigned          f, i;
    sh_stream_entry_t signed_e = *e;

    signed_e.seen |= (1u << SH_STREAM_F_DUST) | (1u << SH_STREAM_F_SEQ);

    for (i = 0; i < SH_STREAM_DUST_LEN; i++) {
        snprintf(out->dust + 2 * i, 3, "%02x", e->dust[i]);
    }
    snprintf(out->time, sizeof(out->time), "%llu",
             (unsigned long long) e->time);
    snprintf(out->seed, sizeof(out->seed), "%08x", (unsigned) e->seed);
    snprintf(out->seq, sizeof(out->seq), "%llu",
             (unsigned long long) e->seq);
    dust_mac(mac, &signed_e, key);
    for (i = 0; i < SH_STREAM_MAC_LEN; i++) {
        snprintf(out->mac + 2 * i, 3, "%02x", mac[i]);
    }

    out->value[0] = (const char *) e->node;
    out->len[0] = e->node_len;
    out->value[1] = out->dust;
    out->value[2] = out->time;
    out->value[3] = out->seed;
    out->value[4] = out->seq;
    out->value[5] = out->mac;

    for (f = 0; f < SH_STREAM_DUST_NFIELDS; f++) {
        out->name[f] = names[f];
        if (f != 0) {
            out->len[f] = strlen(out->value[f]);
        }
    }
}

uint32_t
sh_stream_seed(uint64_t seed_digest)
{
    return (uint32_t) (seed_digest >> 32);
}

void
sh_stream_entry_init(sh_stream_entry_t *e)
{
    memset(e, 0, sizeof(*e));
}

int
sh_stream_entry_field(sh_stream_entry_t *e, const char *name, size_t name_len,
                      const char *value, size_t value_len, char *err,
                      size_t errlen)
{
    unsigned  f;
    uint64_t  v = 0;
    int       rc;

    for (f = 0; f < SH_STREAM_NFIELDS; f++) {
        if (strlen(sh_stream_field_names[f]) == name_len
            && memcmp(sh_stream_field_names[f], name, name_len) == 0)
        {
            break;
        }
    }
    if (f == SH_STREAM_NFIELDS) {
        if (name_len != 4 || memcmp(name, "dust", 4) != 0) {
            return 0;                   /* not ours: ignored */
        }
        if (sh_stream_is_dust(e)) {
            snprintf(err, errlen, "field \"dust\" twice");
            return -1;
        }
        if (value_len != 2 * SH_STREAM_DUST_LEN) {
            snprintf(err, errlen, "bad \"dust\" (%zu bytes)", value_len);
            return -1;
        }
        for (f = 0; f < SH_STREAM_DUST_LEN; f++) {
            if (parse_hex(value + 2 * f, 2, 2, &v) != 0) {
                snprintf(err, errlen, "bad \"dust\" (not hex)");
                return -1;
            }
            e->dust[f] = (unsigned char) v;
        }
        e->seen |= 1u << SH_STREAM_F_DUST;
        return 0;
    }
    if (e->seen & (1u << f)) {
        snprintf(err, errlen, "field \"%s\" twice", sh_stream_field_names[f]);
        return -1;
    }

    rc = 0;
    switch (f) {
    case SH_STREAM_F_NODE:
        rc = (value_len == 0 || value_len > SH_STREAM_NODE_MAX) ? -1 : 0;
        e->node = (const unsigned char *) value;
        e->node_len = value_len;
        break;
    case SH_STREAM_F_KEY:
        rc = (value_len == 0 || value_len > SH_KEY_MAX) ? -1 : 0;
        e->key = (const unsigned char *) value;
        e->key_len = value_len;
        break;
    case SH_STREAM_F_FP:
        rc = parse_hex(value, value_len, 16, &e->hash);
        break;
    case SH_STREAM_F_DIGEST:
        rc = parse_hex(value, value_len, 16, &e->digest);
        break;
    case SH_STREAM_F_TIME:
        rc = parse_u64(value, value_len, &e->time);
        if (rc == 0 && e->time == 0) {
            rc = -1;
        }
        break;
    case SH_STREAM_F_SEED:
        rc = parse_hex(value, value_len, 8, &v);
        e->seed = (uint32_t) v;
        break;
    case SH_STREAM_F_XV:
        rc = parse_hex(value, value_len, 8, &v);
        e->xv = (uint32_t) v;
        break;
    case SH_STREAM_F_SEQ:
        rc = parse_u64(value, value_len, &e->seq);
        if (rc == 0 && e->seq == 0) {
            rc = -1;
        }
        break;
    case SH_STREAM_F_SK:
        rc = value_len == 32 ? 0 : -1;
        if (rc == 0) {
            rc = parse_hex(value, 16, 16, &e->sketches.structure) != 0
                 || parse_hex(value + 16, 16, 16, &e->sketches.links) != 0
                 ? -1 : 0;
        }
        break;
    default: /* SH_STREAM_F_MAC */
        rc = parse_mac(value, value_len, e->mac);
        break;
    }

    if (rc != 0) {
        snprintf(err, errlen, "bad \"%s\" (%zu bytes)",
                 sh_stream_field_names[f], value_len);
        return -1;
    }
    e->seen |= 1u << f;
    return 0;
}

int
sh_stream_entry_check(const sh_stream_entry_t *e, char *err, size_t errlen)
{
    unsigned f, need, may;

    if (sh_stream_is_dust(e)) {
        need = (1u << SH_STREAM_F_NODE) | (1u << SH_STREAM_F_TIME)
               | (1u << SH_STREAM_F_SEED) | (1u << SH_STREAM_F_MAC);
        may = need | (1u << SH_STREAM_F_SEQ);
        for (f = 0; f < SH_STREAM_NFIELDS; f++) {
            if ((need & (1u << f)) && !(e->seen & (1u << f))) {
                snprintf(err, errlen, "no \"%s\" field",
                         sh_stream_field_names[f]);
                return -1;
            }
            if (!(may & (1u << f)) && (e->seen & (1u << f))) {
                snprintf(err, errlen, "a DUST entry with a \"%s\" field",
                         sh_stream_field_names[f]);
                return -1;
            }
        }
        return 0;
    }

    for (f = 0; f < SH_STREAM_NFIELDS; f++) {
        if (!(e->seen & (1u << f)) && f != SH_STREAM_F_SK
            && f != SH_STREAM_F_SEQ)
        {
            snprintf(err, errlen, "no \"%s\" field",
                     sh_stream_field_names[f]);
            return -1;
        }
    }
    return 0;
}

uint32_t
sh_stream_second(uint64_t time)
{
    uint64_t s = time / 1000;

    return s > UINT32_MAX ? UINT32_MAX : (uint32_t) s;
}

int
sh_stream_newer(uint64_t time, uint64_t hash, uint32_t have_second,
                uint64_t have_hash)
{
    uint32_t s = sh_stream_second(time);

    if (s != have_second) {
        return s > have_second;
    }
    return hash > have_hash;
}

uint64_t
sh_stream_next_time(uint64_t now, uint32_t have_second)
{
    if (have_second && sh_stream_second(now) <= have_second) {
        return ((uint64_t) have_second + 1) * 1000;
    }
    return now;
}
