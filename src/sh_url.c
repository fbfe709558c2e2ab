/*
 * sh_url.c -- URL parts and their keyed hashes (sh_url.h).
 *
 * The rewritten URL's hash is a chain over 64-bit part hashes: authority,
 * scheme, each kept path segment, a separator, each kept parameter in
 * order.  The part hashes are XXH3 under the secret, so the chain's inputs
 * are unknown to a client; the chain itself only has to tell sequences
 * apart, which a strong 64-bit finalizer per step does.
 */
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_url.h"

#define EMPTY_SEG   0x8c6a2f0d5b3e1947ULL   /* the hash of "" as a segment */

/* a path parameter's name hash: 0 means "none" */
static inline uint64_t
nonzero_pname(uint64_t h)
{
    return h ? h : 1;
}
#define QUERY_SEP   0x3d1f7a95c2e4b068ULL
#define NO_HOST     0xa4e19b7c05d3f28eULL
#define CHAIN_SEED  0x6b43a9b5c1d2e3f7ULL

static inline int
hexval(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c |= 0x20;
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

static inline unsigned char
lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? c | 0x20 : c;
}

/* Percent-decode a name into out (at most len bytes); its length. */
static size_t
decode(const char *p, size_t len, unsigned char *out)
{
    size_t i, n = 0;
    int    hi, lo;

    for (i = 0; i < len; i++) {
        if (p[i] == '%' && i + 2 < len
            && (hi = hexval((unsigned char) p[i + 1])) >= 0
            && (lo = hexval((unsigned char) p[i + 2])) >= 0)
        {
            out[n++] = (unsigned char) (hi << 4 | lo);
            i += 2;
        } else if (p[i] == '+') {
            out[n++] = ' ';
        } else {
            out[n++] = (unsigned char) p[i];
        }
    }
    return n;
}

void
sh_url_secret(const void *key, size_t len,
              unsigned char out[SH_URL_SECRET_LEN])
{
    static const char salt[] = "sh_url dust hash";
    unsigned char     seed[32 + sizeof(salt)];

    len = len > 32 ? 32 : len;
    memcpy(seed, salt, sizeof(salt));
    if (len > 0) {
        memcpy(seed + sizeof(salt), key, len);
    }
    (void) XXH3_generateSecret(out, SH_URL_SECRET_LEN, seed,
                               sizeof(salt) + len);
}

const char *
sh_url_strerror(sh_url_error_t e)
{
    switch (e) {
    case SH_URL_OK:         return "ok";
    case SH_URL_ETOOLONG:   return "URL too long";
    case SH_URL_EPARAMS:    return "too many query parameters";
    case SH_URL_ESEGS:      return "too many path segments";
    case SH_URL_EHOST:      return "empty or too long authority";
    case SH_URL_ENOTABS:    return "not an absolute URL";
    }
    return "unknown";
}

static int
refuse(sh_url_t *u, sh_url_error_t e)
{
    u->error = e;
    return -1;
}

int
sh_url_parse(sh_url_t *u, const char *s, size_t len)
{
    size_t      i, start, end, pend, qend;
    const char *q;
    unsigned    n;

    u->error = SH_URL_OK;
    u->nsegs = 0;
    u->nparams = 0;
    u->upper = 0;
    u->sorted = 1;
    if (len > SH_URL_LEN_MAX) {
        return refuse(u, SH_URL_ETOOLONG);
    }

    /* scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) "://" */
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char) s[i];

        if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
            && !(i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-'
                           || c == '.')))
        {
            break;
        }
    }
    if (i == 0 || len - i < 3 || memcmp(s + i, "://", 3) != 0) {
        return refuse(u, SH_URL_ENOTABS);
    }
    u->scheme.p = s;
    u->scheme.len = (uint32_t) i;

    start = i + 3;
    for (end = start; end < len; end++) {
        if (s[end] == '/' || s[end] == '?' || s[end] == '#') {
            break;
        }
    }
    if (end == start || end - start > SH_URL_HOST_MAX) {
        return refuse(u, SH_URL_EHOST);
    }
    u->host.p = s + start;
    u->host.len = (uint32_t) (end - start);

    /* the fragment goes first: nothing after '#' counts */
    q = memchr(s + end, '#', len - end);
    if (q != NULL) {
        len = (size_t) (q - s);
    }
    q = memchr(s + end, '?', len - end);
    pend = q ? (size_t) (q - s) : len;
    qend = len;

    if (pend == end) {
        u->path.p = "/";
        u->path.len = 1;
    } else {
        u->path.p = s + end;
        u->path.len = (uint32_t) (pend - end);
    }

    /* segments: the path after its leading '/', split on '/' */
    start = 1;
    n = 0;
    for (i = 1; i <= u->path.len; i++) {
        if (i == u->path.len || u->path.p[i] == '/') {
            if (n == SH_URL_SEGS_MAX) {
                return refuse(u, SH_URL_ESEGS);
            }
            const char *semi;

            u->segs[n].seg.p = u->path.p + start;
            u->segs[n].seg.len = (uint32_t) (i - start);
            semi = u->segs[n].seg.len
                   ? memchr(u->segs[n].seg.p, ';', u->segs[n].seg.len)
                   : NULL;
            u->segs[n].base_len = semi ? (uint32_t) (semi - u->segs[n].seg.p)
                                       : u->segs[n].seg.len;
            n++;
            start = i + 1;
        } else if (u->path.p[i] >= 'A' && u->path.p[i] <= 'Z') {
            u->upper = 1;
        }
    }
    u->nsegs = n;

    u->query.p = q ? q + 1 : s + len;
    u->query.len = q ? (uint32_t) (qend - pend - 1) : 0;

    n = 0;
    start = 0;
    for (i = 0; i <= u->query.len; i++) {
        const char     *p = u->query.p;
        const char     *eq;
        sh_url_param_t *pa;

        if (i < u->query.len && p[i] != '&') {
            continue;
        }
        if (i > start) {
            if (n == SH_URL_PARAMS_MAX) {
                return refuse(u, SH_URL_EPARAMS);
            }
            pa = &u->params[n++];
            eq = memchr(p + start, '=', i - start);
            pa->name.p = p + start;
            if (eq != NULL) {
                pa->name.len = (uint32_t) (eq - (p + start));
                pa->value.p = eq + 1;
                pa->value.len = (uint32_t) (p + i - (eq + 1));
            } else {
                pa->name.len = (uint32_t) (i - start);
                pa->value.p = p + i;
                pa->value.len = 0;
            }
        }
        start = i + 1;
    }
    u->nparams = n;
    return 0;
}

uint64_t
sh_url_hash_bytes(const unsigned char *secret, const void *p, size_t len)
{
    return XXH3_64bits_withSecret(p, len, secret, SH_URL_SECRET_LEN);
}

uint64_t
sh_url_hash_lower(const unsigned char *secret, const char *p, size_t len)
{
    unsigned char buf[SH_URL_LEN_MAX];
    size_t        i;

    len = len > sizeof(buf) ? sizeof(buf) : len;
    for (i = 0; i < len; i++) {
        buf[i] = lower((unsigned char) p[i]);
    }
    return XXH3_64bits_withSecret(buf, len, secret, SH_URL_SECRET_LEN);
}

uint64_t
sh_url_hash_decoded(const unsigned char *secret, const char *p, size_t len)
{
    unsigned char buf[SH_URL_LEN_MAX];

    len = len > sizeof(buf) ? sizeof(buf) : len;
    return XXH3_64bits_withSecret(buf, decode(p, len, buf), secret,
                                  SH_URL_SECRET_LEN);
}

int
sh_url_name_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char da[SH_URL_LEN_MAX], db[SH_URL_LEN_MAX];
    size_t        na, nb;

    if (alen > SH_URL_LEN_MAX || blen > SH_URL_LEN_MAX) {
        return 0;
    }
    na = decode(a, alen, da);
    nb = decode(b, blen, db);
    return na == nb && memcmp(da, db, na) == 0;
}

/* Two names as ASCII-lowercased bytes. */
static int
cmp_lower(const unsigned char *a, size_t na, const unsigned char *b,
          size_t nb)
{
    size_t i, m = na < nb ? na : nb;

    for (i = 0; i < m; i++) {
        int c = (int) lower(a[i]) - (int) lower(b[i]);

        if (c != 0) {
            return c;
        }
    }
    return na == nb ? 0 : (na < nb ? -1 : 1);
}

/* Order of two parameters: decoded names lowercased, so that every case
 * form of a URL's names sorts alike (PATH_CASE lowers them after); then
 * the names as they are; then raw values. */
static int
param_cmp(const sh_url_param_t *a, const unsigned char *da, size_t na,
          const sh_url_param_t *b, const unsigned char *db, size_t nb)
{
    size_t m = na < nb ? na : nb;
    int    c = cmp_lower(da, na, db, nb);

    if (c != 0) {
        return c;
    }
    c = memcmp(da, db, m);
    if (c != 0) {
        return c;
    }
    m = a->value.len < b->value.len ? a->value.len : b->value.len;
    c = memcmp(a->value.p, b->value.p, m);
    if (c != 0 || a->value.len == b->value.len) {
        return c;
    }
    return a->value.len < b->value.len ? -1 : 1;
}

/*
 * A parameter's family: the names that share its prefix up to its first
 * '_', "utm_" of utm_source and utm_medium, "pk_" of pk_campaign.  Tracking
 * parameters come as families whose members travel together, so that no
 * one of them alone ever makes a URL another URL; DUST learns the family
 * as one rule, drop_param(utm_*).  The prefix is a letter, then letters
 * or digits (2 to 16 bytes), then '_', then at least one more byte: raw
 * and decoded spell it alike, and a name that starts with '_' or is all
 * prefix has no family.  Its hash is the decoded name "utm_*"'s, which is
 * how the operator names it (sh_dust_pin).
 */
static int
ascii_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
ascii_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void
param_family(sh_url_param_t *pa, const unsigned char *secret)
{
    unsigned char f[SH_URL_FAMILY_MAX + 2];
    const char   *p = pa->name.p;
    uint32_t      k;

    pa->family = 0;
    pa->family_len = 0;
    if (pa->name.len < 4 || !ascii_alpha(p[0])) {
        return;
    }
    for (k = 1; k < pa->name.len && k <= SH_URL_FAMILY_MAX; k++) {
        if (p[k] == '_') {
            break;
        }
        if (!ascii_alpha(p[k]) && !ascii_digit(p[k])) {
            return;
        }
    }
    if (k < 2 || k > SH_URL_FAMILY_MAX || k + 1 >= pa->name.len
        || p[k] != '_')
    {
        return;
    }
    memcpy(f, p, k + 1);
    f[k + 1] = '*';
    pa->family = XXH3_64bits_withSecret(f, k + 2, secret, SH_URL_SECRET_LEN);
    pa->family = pa->family ? pa->family : 1;
    pa->family_len = k + 1;
}

size_t
sh_url_shape(const char *seg, size_t len, char *out, size_t cap)
{
    size_t i = 0, j, n = 0;
    int    tokens = 0, alpha, digit;

    while (i < len) {
        for (j = i, alpha = 0, digit = 0;
             j < len && (ascii_alpha(seg[j]) || ascii_digit(seg[j])); j++)
        {
            alpha |= ascii_alpha(seg[j]);
            digit |= ascii_digit(seg[j]);
        }
        if (j - i >= SH_URL_TOKEN_MIN && alpha && digit) {
            if (n + 1 > cap) {
                return 0;
            }
            out[n++] = '*';
            tokens++;
        } else {
            if (n + (j - i) > cap) {
                return 0;
            }
            memcpy(out + n, seg + i, j - i);
            n += j - i;
        }
        if (j < len) {
            if (n + 1 > cap) {
                return 0;
            }
            out[n++] = seg[j];
            j++;
        }
        i = j;
    }
    return tokens ? n : 0;
}

const char *
sh_url_value_shape(const char *v, size_t len)
{
    size_t i, hex = 0, digits = 0, alnum = 0, letters = 0;

    for (i = 0; i < len; i++) {
        char c = v[i];

        if (ascii_digit(c)) {
            digits++;
        } else if (ascii_alpha(c)) {
            letters++;
            hex += (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        } else {
            return NULL;            /* "6.1", "a-b": chosen, not made */
        }
        alnum++;
    }
    if (letters == 0) {
        return digits >= 9 ? "(number)" : NULL;
    }
    if (digits == 0) {
        return NULL;                /* a word */
    }
    if (hex == letters && len >= 6 && len <= 64) {
        return "(hex)";
    }
    return alnum >= SH_URL_TOKEN_MIN ? "(token)" : NULL;
}

uint64_t
sh_url_vshape_hash(const unsigned char *secret, uint64_t name_hash,
                   const char *shape)
{
    uint64_t h = sh_url_mix(name_hash * 0x9FB21C651E98DF25ULL
                            ^ sh_url_hash_bytes(secret, shape,
                                                strlen(shape)));

    return h ? h : 1;
}

/*
 * The last segment's file name as a family: its stem and any extension,
 * "index.*" of index.php, index.html and index.HTML.  A server that maps
 * DIR/ to a default file names it in one of a few ways; a site that moved
 * from one to another, or links both, is one rule: index_file(index.*).
 * Hashed as the operator names it (sh_dust_pin).
 */
static void
file_family(sh_url_t *u, const unsigned char *secret)
{
    unsigned char       f[SH_URL_FAMILY_MAX + 2];
    const sh_url_seg_t *s = &u->segs[u->nsegs - 1];
    const char         *dot;

    u->file_family = 0;
    u->file_family_len = 0;
    dot = s->base_len > 1 ? memchr(s->seg.p + 1, '.', s->base_len - 1)
                          : NULL;
    if (dot == NULL || s->seg.p[0] == '.'
        || (uint32_t) (dot - s->seg.p) + 1 > SH_URL_FAMILY_MAX
        || dot + 1 == s->seg.p + s->base_len)
    {
        return;
    }
    u->file_family_len = (uint32_t) (dot - s->seg.p) + 1;
    memcpy(f, s->seg.p, u->file_family_len);
    f[u->file_family_len] = '*';
    u->file_family = sh_url_hash_bytes(secret, (const char *) f,
                                       u->file_family_len + 1);
    u->file_family = u->file_family ? u->file_family : 1;
}

static int
has_upper(const unsigned char *p, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (p[i] >= 'A' && p[i] <= 'Z') {
            return 1;
        }
    }
    return 0;
}

void
sh_url_hash_parts(sh_url_t *u, const unsigned char *secret)
{
    /* decoded names, back to back: their total is at most the URL's */
    unsigned char   buf[SH_URL_LEN_MAX];
    uint16_t        doff[SH_URL_PARAMS_MAX], dlen[SH_URL_PARAMS_MAX];
    size_t          used = 0;
    uint64_t        vh;
    const char     *shape;
    unsigned        i, j;
    uint8_t         t;

    u->upper_names = 0;
    u->scheme_hash = sh_url_hash_lower(secret, u->scheme.p, u->scheme.len);
    u->host_hash = sh_url_hash_lower(secret, u->host.p, u->host.len);

    for (i = 0; i < u->nsegs; i++) {
        sh_url_seg_t *sg = &u->segs[i];
        size_t        n;

        sg->pname = 0;
        sg->shape = 0;
        if (sg->seg.len == 0) {
            sg->hash = sg->lower = sg->base = sg->base_lower = EMPTY_SEG;
            continue;
        }
        if (sg->base_len >= SH_URL_TOKEN_MIN
            && (n = sh_url_shape(sg->seg.p, sg->base_len, (char *) buf,
                                 sizeof(buf))) > 0)
        {
            sg->shape = sh_url_hash_bytes(secret, buf, n);
            sg->shape = sg->shape ? sg->shape : 1;
        }
        sg->hash = sh_url_hash_bytes(secret, sg->seg.p, sg->seg.len);
        sg->lower = u->upper ? sh_url_hash_lower(secret, sg->seg.p,
                                                 sg->seg.len)
                             : sg->hash;
        sg->base = sg->hash;
        sg->base_lower = sg->lower;
        if (sg->base_len < sg->seg.len) {
            /* ";name=value;...": the name is up to '=' or the next ';' */
            const char *np = sg->seg.p + sg->base_len + 1;
            size_t      nl = 0, rest = sg->seg.len - sg->base_len - 1;

            while (nl < rest && np[nl] != '=' && np[nl] != ';') {
                nl++;
            }
            sg->pname = nonzero_pname(sh_url_hash_bytes(secret, np, nl));
            sg->base = sg->base_len == 0
                       ? EMPTY_SEG
                       : sh_url_hash_bytes(secret, sg->seg.p, sg->base_len);
            sg->base_lower = (u->upper && sg->base_len > 0)
                             ? sh_url_hash_lower(secret, sg->seg.p,
                                                 sg->base_len)
                             : sg->base;
        }
    }

    if (u->nsegs >= 1) {
        file_family(u, secret);
    }

    for (i = 0; i < u->nparams; i++) {
        sh_url_param_t *pa = &u->params[i];
        size_t          n = decode(pa->name.p, pa->name.len, buf + used);

        doff[i] = (uint16_t) used;
        dlen[i] = (uint16_t) n;
        vh = sh_url_hash_bytes(secret, pa->value.p, pa->value.len);
        pa->name_hash = XXH3_64bits_withSecret(buf + used, n, secret,
                                               SH_URL_SECRET_LEN);
        pa->hash = sh_url_mix(pa->name_hash * 0xC2B2AE3D27D4EB4FULL ^ vh);
        pa->hash_lower = pa->hash;
        if (has_upper(buf + used, n)) {
            u->upper_names = 1;
            pa->hash_lower = sh_url_mix(sh_url_hash_lower(secret,
                                            (const char *) buf + used, n)
                                        * 0xC2B2AE3D27D4EB4FULL ^ vh);
        }
        param_family(pa, secret);
        shape = sh_url_value_shape(pa->value.p, pa->value.len);
        pa->vshape = shape ? sh_url_vshape_hash(secret, pa->name_hash, shape)
                           : 0;
        used += n;
        u->order[i] = (uint8_t) i;
    }

    /* insertion sort of at most SH_URL_PARAMS_MAX indices */
    u->sorted = 1;
    for (i = 1; i < u->nparams; i++) {
        t = u->order[i];
        for (j = i; j > 0; j--) {
            uint8_t o = u->order[j - 1];

            if (param_cmp(&u->params[o], buf + doff[o], dlen[o],
                          &u->params[t], buf + doff[t], dlen[t]) <= 0)
            {
                break;
            }
            u->order[j] = o;
            u->sorted = 0;
        }
        u->order[j] = t;
    }
}

/* The kept segments' hashes under rw, path rewrites applied. */
static unsigned
path_hashes(const sh_url_t *u, const sh_url_rw_t *rw, uint64_t *out,
            unsigned *idx)
{
    unsigned i, k = 0;

    if (rw && rw->vpath) {
        for (i = 0; i < rw->nprefix; i++) {
            out[k] = rw->prefix[i];
            idx[k++] = SH_URL_SEGS_MAX + 1;     /* the prefix */
        }
        out[k] = rw->vseg;
        idx[k++] = SH_URL_SEGS_MAX + 2;         /* the value */
        return k;
    }
    for (i = 0; i < u->nsegs; i++) {
        if (rw && (rw->drop_segs >> i & 1)) {
            continue;
        }
        if (rw && (rw->drop_pparams >> i & 1)) {
            out[k] = rw->lower ? u->segs[i].base_lower : u->segs[i].base;
        } else {
            out[k] = (rw && rw->lower) ? u->segs[i].lower : u->segs[i].hash;
        }
        idx[k++] = i;
    }
    if (k == 0) {
        out[0] = EMPTY_SEG;
        idx[0] = SH_URL_SEGS_MAX;       /* "/" */
        return 1;
    }
    if (rw && rw->index_file && idx[k - 1] == u->nsegs - 1) {
        out[k - 1] = EMPTY_SEG;
        idx[k - 1] = SH_URL_SEGS_MAX;
    }
    if (rw && rw->trailing_slash && k >= 2 && out[k - 1] == EMPTY_SEG) {
        k--;
    }
    return k;
}

uint64_t
sh_url_hash(const sh_url_t *u, const sh_url_rw_t *rw)
{
    uint64_t h = CHAIN_SEED, segs[SH_URL_SEGS_MAX];
    unsigned idx[SH_URL_SEGS_MAX], i, k, p;

    if (rw && rw->no_host) {
        h = sh_url_step(h, NO_HOST);
    } else {
        h = sh_url_step(h, (rw && rw->host) ? rw->host : u->host_hash);
    }
    h = sh_url_step(h, u->scheme_hash);
    k = path_hashes(u, rw, segs, idx);
    for (i = 0; i < k; i++) {
        h = sh_url_step(h, segs[i]);
    }
    h = sh_url_step(h, QUERY_SEP);
    for (i = 0; i < u->nparams; i++) {
        p = (rw && rw->sort) ? u->order[i] : i;
        if (rw && (rw->drop_params >> p & 1)) {
            continue;
        }
        h = sh_url_step(h, (rw && rw->lower) ? u->params[p].hash_lower
                                             : u->params[p].hash);
    }
    h = sh_url_mix(h ^ CHAIN_SEED);
    return h ? h : 1;
}

uint64_t
sh_url_path_hash(const sh_url_t *u, const sh_url_rw_t *rw)
{
    uint64_t h = CHAIN_SEED, segs[SH_URL_SEGS_MAX];
    unsigned idx[SH_URL_SEGS_MAX], i, k;

    k = path_hashes(u, rw, segs, idx);
    for (i = 0; i < k; i++) {
        h = sh_url_step(h, segs[i]);
    }
    h = sh_url_mix(h ^ QUERY_SEP);
    return h ? h : 1;
}

static void
put(char *buf, size_t size, size_t *n, const char *p, size_t len, int low)
{
    size_t i;

    for (i = 0; i < len; i++, (*n)++) {
        if (*n + 1 < size) {
            buf[*n] = low ? (char) lower((unsigned char) p[i]) : p[i];
        }
    }
}

size_t
sh_url_write(const sh_url_t *u, const sh_url_rw_t *rw, const char *host,
             size_t hostlen, char *buf, size_t size)
{
    uint64_t segs[SH_URL_SEGS_MAX];
    unsigned idx[SH_URL_SEGS_MAX], i, k, p, first = 1;
    size_t   n = 0;

    put(buf, size, &n, u->scheme.p, u->scheme.len, 0);
    put(buf, size, &n, "://", 3, 0);
    if (host != NULL) {
        put(buf, size, &n, host, hostlen, 0);
    } else {
        put(buf, size, &n, u->host.p, u->host.len, 0);
    }
    k = path_hashes(u, rw, segs, idx);
    if (rw && rw->vpath) {
        put(buf, size, &n, "/", 1, 0);
        put(buf, size, &n, rw->prefix_text, rw->prefix_len, 0);
        put(buf, size, &n, u->params[rw->vpath - 1].value.p,
            u->params[rw->vpath - 1].value.len, 0);
        k = 0;
    }
    for (i = 0; i < k; i++) {
        put(buf, size, &n, "/", 1, 0);
        if (idx[i] < u->nsegs) {
            put(buf, size, &n, u->segs[idx[i]].seg.p,
                (rw && (rw->drop_pparams >> idx[i] & 1))
                ? u->segs[idx[i]].base_len : u->segs[idx[i]].seg.len,
                rw && rw->lower);
        }
    }
    for (i = 0; i < u->nparams; i++) {
        p = (rw && rw->sort) ? u->order[i] : i;
        if (rw && (rw->drop_params >> p & 1)) {
            continue;
        }
        put(buf, size, &n, first ? "?" : "&", 1, 0);
        first = 0;
        put(buf, size, &n, u->params[p].name.p, u->params[p].name.len,
            rw && rw->lower);
        if (u->params[p].value.len > 0) {
            put(buf, size, &n, "=", 1, 0);
            put(buf, size, &n, u->params[p].value.p, u->params[p].value.len,
                0);
        }
    }
    if (size > 0) {
        buf[n < size ? n : size - 1] = '\0';
    }
    return n;
}
