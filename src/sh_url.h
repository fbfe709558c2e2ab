/*
 * sh_url.h -- an absolute URL split into its parts at a bounded cost, and
 * keyed hashes of the URL under rewrites (the DUST learner's view of a URL,
 * sh_dust.h).
 *
 * sh_url_parse keeps spans into the caller's string and allocates nothing:
 * scheme, authority (host and port), path segments, query parameters in
 * order; the fragment is dropped.  It refuses, with a reason, what it would
 * not bound: more than SH_URL_LEN_MAX bytes, more than SH_URL_PARAMS_MAX
 * parameters, more than SH_URL_SEGS_MAX path segments, an authority longer
 * than SH_URL_HOST_MAX, a URL that is not absolute.  A refused URL is
 * passed through untouched by its callers (never learned from, never
 * rewritten): that is the hostile-input bound.  Parsing and hashing are
 * linear in the URL's length, at most SH_URL_LEN_MAX bytes.
 *
 * Equality of parts, as the learner sees it:
 *   - scheme and authority: ASCII case-insensitive;
 *   - a parameter's NAME by its percent-decoded bytes ("%73id" is "sid";
 *     '+' is a space, as in form encoding; a malformed escape stays as it
 *     is), its VALUE by its raw bytes; "a" and "a=" are the same (an empty
 *     value); empty pieces ("&&") are skipped;
 *   - path segments by their raw bytes; the PATH_CASE rewrite lowercases
 *     them and the parameters' names (never a value): a server that
 *     ignores the case of its paths (IIS, ASP.NET) ignores it in the
 *     names of its parameters too, so product.aspx?productid=1 is
 *     Product.aspx?ProductID=1 there.
 *
 * Hashing.  sh_url_hash_parts computes one keyed 64-bit hash per part
 * (XXH3 under a secret: a client cannot aim two URLs at one hash); then
 * sh_url_hash combines them under a rewrite (parameters or segments
 * dropped, parameters sorted, trailing slash, index file, path lowercased,
 * another host) in O(segments + parameters) multiply-xor steps, without
 * building the rewritten string.  Two URLs whose rewritten forms are equal
 * get equal hashes; sh_url_write builds the string itself for display.
 */
#ifndef SH_URL_H
#define SH_URL_H

#include <stddef.h>
#include <stdint.h>

#define SH_URL_LEN_MAX      4096    /* bytes of a URL */
#define SH_URL_PARAMS_MAX   32      /* query parameters */
#define SH_URL_FAMILY_MAX   16      /* a family prefix before its "_" */
#define SH_URL_SEGS_MAX     16      /* path segments */
#define SH_URL_HOST_MAX     255     /* bytes of the authority */
#define SH_URL_SECRET_LEN   192     /* XXH3's secret */

/* Why sh_url_parse refused (u->error). */
typedef enum {
    SH_URL_OK = 0,
    SH_URL_ETOOLONG,        /* more than SH_URL_LEN_MAX bytes */
    SH_URL_EPARAMS,         /* more than SH_URL_PARAMS_MAX parameters */
    SH_URL_ESEGS,           /* more than SH_URL_SEGS_MAX path segments */
    SH_URL_EHOST,           /* empty authority or longer than the max */
    SH_URL_ENOTABS          /* no "scheme://" */
} sh_url_error_t;

typedef struct {
    const char *p;
    uint32_t    len;
} sh_url_span_t;

typedef struct {
    sh_url_span_t name;     /* raw, as in the URL */
    sh_url_span_t value;    /* raw; empty for "a" and "a=" */
    uint64_t      name_hash;    /* of the decoded name (hash_parts) */
    uint64_t      hash;         /* of (decoded name, value) */
    uint64_t      hash_lower;   /* the same, the name lowercased */
    uint64_t      family;       /* of its family's name, "utm_*" for
                                   utm_source; 0: it has none */
    uint32_t      family_len;   /* the family's prefix, "utm_": 4 */
    uint64_t      vshape;       /* of (decoded name, its value's shape)
                                   when the value looks generated, "v" and
                                   "(hex)" of v=e60acf4; 0: it does not
                                   (sh_url_value_shape) */
} sh_url_param_t;

typedef struct {
    sh_url_span_t seg;
    uint32_t      base_len;     /* bytes before its first ';' (a path
                                   parameter: "B.html;jsessionid=1F"),
                                   seg.len when it has none */
    uint64_t      hash;         /* raw bytes (hash_parts) */
    uint64_t      lower;        /* ASCII-lowercased bytes */
    uint64_t      base;         /* the bytes before ';', raw */
    uint64_t      base_lower;   /* and lowercased */
    uint64_t      pname;        /* hash of its first path parameter's
                                   name ("jsessionid"), 0: none */
    uint64_t      shape;        /* hash of its shape when it holds a
                                   token: "(S(*))" of ASP.NET's
                                   "(S(kx1bq2...))"; 0: none
                                   (sh_url_shape) */
} sh_url_seg_t;

typedef struct {
    sh_url_error_t error;
    sh_url_span_t  scheme;
    sh_url_span_t  host;        /* the authority: host[:port] */
    sh_url_span_t  path;        /* "/" when the URL has none */
    sh_url_span_t  query;       /* without '?', without the fragment */
    unsigned       nsegs;       /* >= 1: "/" is one empty segment */
    unsigned       nparams;
    int            upper;       /* the path has an ASCII capital */
    int            upper_names; /* a decoded parameter name has one */
    sh_url_seg_t   segs[SH_URL_SEGS_MAX];
    sh_url_param_t params[SH_URL_PARAMS_MAX];
    uint8_t        order[SH_URL_PARAMS_MAX];  /* params by (decoded name
                                                 lowercased, decoded
                                                 name, value): one order
                                                 for every case form */
    int            sorted;      /* params already in that order */
    uint64_t       file_family;     /* the last segment's file name as a
                                       family, "index.*" of index.php;
                                       0: no extension (hash_parts) */
    uint32_t       file_family_len; /* its stem with the dot, "index." */
    uint64_t       scheme_hash;
    uint64_t       host_hash;   /* of the lowercased authority */
} sh_url_t;

/*
 * A rewrite: what sh_url_hash and sh_url_write apply.  Masks are over the
 * positions in u->params and u->segs.  Path rewrites apply in this order:
 * segments dropped (a path left empty becomes "/"), path parameters
 * dropped (a segment of drop_pparams keeps its bytes before ';'), index
 * file (the last
 * segment, if kept, becomes empty: "/d/index.html" -> "/d/"), trailing
 * slash (a final empty segment after another one goes: "/d/" -> "/d",
 * never "/" itself), lowercase; then parameters dropped, then sorted.  A
 * vpath replaces the whole path.
 */
#define SH_URL_PREFIX_MAX   4       /* segments of a vpath prefix */

typedef struct {
    uint64_t host;              /* another host's hash (HOST_ALIAS); 0 =
                                   the URL's own */
    /* a parameter's value as the path (/w/index.php?title=T as /wiki/T):
     * when vpath, the path is the nprefix segments of prefix[] and then
     * the value of parameter vpath - 1 (its raw bytes, hashed as a
     * segment: vseg), and the segment rewrites below do not apply; the
     * parameter is dropped by drop_params.  prefix_text ("wiki/") spells
     * the prefix for sh_url_write. */
    uint8_t     vpath;
    uint8_t     nprefix;
    uint32_t    prefix_len;
    const char *prefix_text;
    uint64_t    prefix[SH_URL_PREFIX_MAX];
    uint64_t    vseg;
    uint32_t drop_params;
    uint32_t drop_segs;
    uint32_t drop_pparams;      /* segments whose ";name=value..." goes */
    unsigned sort:1;
    unsigned index_file:1;
    unsigned trailing_slash:1;
    unsigned lower:1;
    unsigned no_host:1;         /* hash without the authority (the key
                                   that pairs one path on two hosts) */
} sh_url_rw_t;

/* The hashing secret from up to 32 bytes of key material. */
void sh_url_secret(const void *key, size_t len,
                   unsigned char out[SH_URL_SECRET_LEN]);

/* 0, or -1 with u->error set (u is then unusable). */
int sh_url_parse(sh_url_t *u, const char *s, size_t len);

const char *sh_url_strerror(sh_url_error_t e);

/*
 * A path segment's shape: its bytes before any ';', each token -- a run
 * of at least SH_URL_TOKEN_MIN letters and digits with both in it, the
 * mark of a generated id (a session, a cache key) rather than a word or a
 * number -- written '*'.  Its length in out (at most cap bytes), or 0 when
 * the segment holds no token.
 */
#define SH_URL_TOKEN_MIN    16
size_t sh_url_shape(const char *seg, size_t len, char *out, size_t cap);

/*
 * A parameter value's shape when it looks generated rather than chosen: a
 * cache-buster or build id ("e60acf4": 6 to 64 hex digits, with a letter
 * and a digit) is "(hex)", a longer id of letters and digits (a token, as
 * in sh_url_shape) "(token)", a number of 9 digits or more (a timestamp)
 * "(number)"; NULL for a word, a short number, a version ("6.1").  One
 * name can carry both kinds (v=e60acf4 on most pages, v=6.1 switching a
 * version on a few), and drop_value(v=(hex)) is then the rule.
 */
const char *sh_url_value_shape(const char *v, size_t len);

/* The vshape hash of a parameter whose decoded name hashed to name_hash
 * (sh_url_param_t), for a shape sh_url_value_shape returns. */
uint64_t sh_url_vshape_hash(const unsigned char *secret, uint64_t name_hash,
                            const char *shape);

/* Fill the part hashes and the parameters' sorted order. */
void sh_url_hash_parts(sh_url_t *u, const unsigned char *secret);

/* The hash of u rewritten by rw (NULL: u itself); never 0. */
uint64_t sh_url_hash(const sh_url_t *u, const sh_url_rw_t *rw);

/* The hash of u's path alone, rewritten by rw (NULL: as it is): what
 * two URLs that name one path on two hosts, schemes or queries share. */
uint64_t sh_url_path_hash(const sh_url_t *u, const sh_url_rw_t *rw);

/* A hash of bytes under the secret (host names given as text). */
uint64_t sh_url_hash_bytes(const unsigned char *secret, const void *p,
                           size_t len);
/* The same, of the ASCII-lowercased bytes (an authority). */
uint64_t sh_url_hash_lower(const unsigned char *secret, const char *p,
                           size_t len);
/* The same, of the percent-decoded bytes (a parameter's name). */
uint64_t sh_url_hash_decoded(const unsigned char *secret, const char *p,
                             size_t len);

/* Decoded parameter names equal ("%73id" and "sid"). */
int sh_url_name_eq(const char *a, size_t alen, const char *b, size_t blen);

/*
 * Write u rewritten by rw (NULL: u) into buf, NUL-terminated; returns the
 * length it has (which may be >= size: then truncated).  rw->host cannot
 * be spelled here: `host` (NULL: u's own) gives the alias's text.
 */
size_t sh_url_write(const sh_url_t *u, const sh_url_rw_t *rw,
                    const char *host, size_t hostlen, char *buf,
                    size_t size);

/* splitmix64's finaliser: every bit of z reaches every bit of the result */
static inline uint64_t
sh_url_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* One step of an order-dependent hash of parts: the URL's (sh_url_hash)
 * and the learner's keys built on them (sh_dust_learn.c). */
static inline uint64_t
sh_url_step(uint64_t h, uint64_t x)
{
    return sh_url_mix((h + 0x9E3779B97F4A7C15ULL) * 0xD6E8FEB86659FD93ULL
                      ^ x);
}

#endif
