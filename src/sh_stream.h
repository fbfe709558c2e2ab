/*
 * sh_stream.h -- the entries of the replication stream.
 *
 * The nginx module's nodes share their new and changed documents through a
 * Redis Stream (module/ngx_http_simhash_replicate.c).  One entry per
 * document version, as field/value pairs, all text so that redis-cli shows
 * them as they are:
 *
 *     node    the id of the node that stored the version
 *     key     the document's key, any bytes (1 to SH_KEY_MAX)
 *     fp      the 64-bit fingerprint, 16 hex digits
 *     digest  the digest of the body it was taken from, 16 hex digits
 *             (0: unknown)
 *     time    when the node stored this version: ms since 1970, decimal
 *     seed    the first 32 bits of the zone's seed digest, 8 hex digits:
 *             fingerprints under another simhash_seed are not comparable,
 *             so a misconfigured node's entries are refused, not applied
 *     xv      the extraction version of the fingerprint (sh_version.h), 8
 *             hex digits: an entry of another version is refused, so a tier
 *             in the middle of an upgrade never mixes the two
 *     sk      the page's sketches (sh_sketch.h), structure then links, 32
 *             hex digits (zeros: none); optional: an entry without it (of
 *             an earlier release) is a document without sketches
 *     seq     the writer's sequence number, decimal: every entry a node
 *             sends has a larger one than the one before (microseconds
 *             since 1970 when it was sent, or one more than the last), so
 *             that a reader refuses an entry not newer than what it has
 *             applied from that node: a replay.  Optional here (an entry
 *             of an earlier release has none); the module refuses an
 *             entry without it
 *     mac     HMAC-SHA256 of all the fields above, truncated to 128 bits
 *             (with sk, or with seq, under another tag: neither can be
 *             stripped), 32 hex digits, under a key derived from the
 *             tier's secret (simhash_seed; sh_config_derive_key): whoever
 *             can read the stream cannot forge an entry, nor replay one
 *             unchanged past a reader that applied a later one
 *
 * Fields may come in any order; fields of other names are ignored (a later
 * version may add some); a missing or malformed field makes the entry
 * malformed.
 *
 * A DUST entry carries one learned URL rule's state instead of a document
 * (src/sh_dust.h, docs/DUST.md): node, time, seed, seq and mac as above,
 * and
 *
 *     dust    the rule's record of sh_dust_export_rule, SH_DUST_RULE_REC_LEN
 *             (176) bytes, as 352 hex digits
 *
 * and no key, fp, digest, xv or sk (an entry with both a dust and a key
 * field is malformed).  Its MAC is computed under the same key with a tag
 * of its own, over node, time, seed and the record: a document's MAC never
 * verifies a DUST entry, nor the other way round.  No extraction version:
 * a rule does not depend on how pages are fingerprinted.  A node of an
 * earlier release refuses a DUST entry as malformed ("no key field").
 *
 * The versions of one key are ordered by their second, then by their
 * fingerprint: whatever order a node applies two versions in, it keeps the
 * same one as every other node.  A node that changes a document within the
 * second of its stored version dates the new version one second later
 * (sh_stream_next_time), so its own newer version always wins.
 *
 * Stream ids ("MS-SEQ", both 64-bit) are parsed, formatted and compared
 * here too.
 */
#ifndef SH_STREAM_H
#define SH_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "sh_sketch.h"

#define SH_STREAM_ID_LEN    42      /* "MS-SEQ" and the NUL */
#define SH_STREAM_NODE_MAX  64      /* bytes of a node id */

typedef struct {
    uint64_t ms;
    uint64_t seq;
} sh_stream_id_t;

/* "MS-SEQ" (or "MS", seq 0): 0, or -1 if it is not an id. */
int sh_stream_id_parse(sh_stream_id_t *id, const char *s, size_t len);

/* NUL-terminated into buf (SH_STREAM_ID_LEN bytes); returns the length. */
size_t sh_stream_id_format(char *buf, const sh_stream_id_t *id);

int sh_stream_id_cmp(const sh_stream_id_t *a, const sh_stream_id_t *b);

enum {
    SH_STREAM_F_NODE = 0,
    SH_STREAM_F_KEY,
    SH_STREAM_F_FP,
    SH_STREAM_F_DIGEST,
    SH_STREAM_F_TIME,
    SH_STREAM_F_SEED,
    SH_STREAM_F_XV,
    SH_STREAM_F_SK,
    SH_STREAM_F_SEQ,
    SH_STREAM_F_MAC,
    SH_STREAM_NFIELDS
};

/* the dust field: not in the table of a document's fields */
#define SH_STREAM_F_DUST    16
#define SH_STREAM_DUST_LEN  176     /* = SH_DUST_RULE_REC_LEN */

#define SH_STREAM_MAC_LEN   16      /* bytes of a MAC (32 hex digits) */
#define SH_STREAM_KEY_LEN   32      /* bytes of the MAC key */

extern const char *const sh_stream_field_names[SH_STREAM_NFIELDS];

/* one entry; node and key point into the caller's data */
typedef struct {
    const unsigned char *node;
    size_t               node_len;
    const unsigned char *key;
    size_t               key_len;
    uint64_t             hash;
    uint64_t             digest;
    uint64_t             time;      /* ms since 1970 */
    uint32_t             seed;
    uint32_t             xv;        /* extraction version */
    sh_sketches_t        sketches;  /* sk; 0: none */
    uint64_t             seq;       /* the writer's sequence; 0: none */
    unsigned char        dust[SH_STREAM_DUST_LEN];  /* a DUST entry's rule
                                       record (seen has SH_STREAM_F_DUST) */
    unsigned char        mac[SH_STREAM_MAC_LEN];
    unsigned             seen;      /* a bit per field */
} sh_stream_entry_t;

/*
 * Encoding: an entry's fields in order, as the name/value pairs of an XADD
 * (the one place that writes the format).  `e` has every field but mac
 * set; the MAC is computed here under `key`.  Values point into `out` and
 * into e's node and key.
 */
typedef struct {
    const char *name[SH_STREAM_NFIELDS];
    const char *value[SH_STREAM_NFIELDS];
    size_t      len[SH_STREAM_NFIELDS];

    char        fp[17];
    char        digest[17];
    char        time[21];
    char        seed[9];
    char        xv[9];
    char        sk[33];
    char        seq[21];
    char        mac[2 * SH_STREAM_MAC_LEN + 1];
} sh_stream_fields_t;

void sh_stream_encode(sh_stream_fields_t *out, const sh_stream_entry_t *e,
                      const unsigned char key[SH_STREAM_KEY_LEN]);

/*
 * A DUST entry's fields: node, dust, time, seed, seq, mac (e has node,
 * time, seed, seq and dust set; the MAC is computed here).
 */
#define SH_STREAM_DUST_NFIELDS  6

typedef struct {
    const char *name[SH_STREAM_DUST_NFIELDS];
    const char *value[SH_STREAM_DUST_NFIELDS];
    size_t      len[SH_STREAM_DUST_NFIELDS];

    char        dust[2 * SH_STREAM_DUST_LEN + 1];
    char        time[21];
    char        seed[9];
    char        seq[21];
    char        mac[2 * SH_STREAM_MAC_LEN + 1];
} sh_stream_dust_fields_t;

void sh_stream_encode_dust(sh_stream_dust_fields_t *out,
                           const sh_stream_entry_t *e,
                           const unsigned char key[SH_STREAM_KEY_LEN]);

/* 1 if the entry checked is a DUST entry. */
int sh_stream_is_dust(const sh_stream_entry_t *e);

/* 1 if the entry checked has a seq field (none: an earlier release's). */
int sh_stream_has_seq(const sh_stream_entry_t *e);

/* The writer's next sequence number: one more than `last`, or `now_us`
 * (microseconds since 1970) if that is larger, so that a writer that
 * starts again with nothing kept goes on above what it sent before. */
uint64_t sh_stream_next_seq(uint64_t last, uint64_t now_us);

/* The MAC of an entry's fields (all but mac) under key. */
void sh_stream_mac(unsigned char mac[SH_STREAM_MAC_LEN],
                   const sh_stream_entry_t *e,
                   const unsigned char key[SH_STREAM_KEY_LEN]);

/* 1 if e's mac is the MAC of its fields under key (in constant time). */
int sh_stream_verify(const sh_stream_entry_t *e,
                     const unsigned char key[SH_STREAM_KEY_LEN]);

/* The seed field of a zone's seed digest. */
uint32_t sh_stream_seed(uint64_t seed_digest);

/*
 * Decoding: init, then every field/value pair of the entry, then check.
 * field() and check() return 0, or -1 with the reason in err.
 */
void sh_stream_entry_init(sh_stream_entry_t *e);
int sh_stream_entry_field(sh_stream_entry_t *e, const char *name,
                          size_t name_len, const char *value,
                          size_t value_len, char *err, size_t errlen);
int sh_stream_entry_check(const sh_stream_entry_t *e, char *err,
                          size_t errlen);

/* The second a version time falls in (what a zone keeps per document). */
uint32_t sh_stream_second(uint64_t time);

/* 1 if the version (time, hash) is newer than the one stored, whose
 * second is have_second and fingerprint have_hash; 0 if not (equal
 * included). */
int sh_stream_newer(uint64_t time, uint64_t hash, uint32_t have_second,
                    uint64_t have_hash);

/* The time of a new local version at `now` (ms) of a document whose stored
 * version is of second have_second (0: none): now, or the start of the
 * next second if now is not later. */
uint64_t sh_stream_next_time(uint64_t now, uint32_t have_second);

#endif
