/*
 * simhash cluster load  [options] --redis ADDR (--random N | FILE)
 * simhash cluster load  [options] --out PATH (--random N | FILE)
 * simhash cluster load  [options] --redis ADDR --snapshot ZONEFILE
 * simhash cluster query [options] --redis ADDR (FP... | --pages PAGE...)
 * simhash cluster slot  KEY...
 *
 * The tier's shared index in a Redis Cluster (src/sh_cluster.h,
 * docs/SCALE.md).  `load` writes every bucket whole, one SET each (a
 * bucket grown by APPEND costs Redis's over-allocation): straight into the
 * cluster, pipelined to each master by the slot map CLUSTER SLOTS gives;
 * or, with --out, as files of commands for `redis-cli --pipe`, one a
 * master (--out DIR with --redis) or one for a single server (--out FILE).
 * Documents come from FILE, one a line:
 *
 *     KEYHASH FP [DIGEST [SECOND [SKETCH_STRUCTURE SKETCH_LINKS [KEY]]]]
 *
 * (hex but SECOND, decimal; KEY the rest of the line, the document's key
 * text, which Duplicate-Of names: loaded into the key text buckets), or
 * --random N makes N of them (benchmarks), or --snapshot reads a zone's
 * saved snapshot (cmd_cluster_snapshot.c).
 * `query` probes the cluster as a node would and prints what it finds;
 * `slot` prints a key's hash slot (the tests compare it with Redis's).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "cli.h"
#include "cmd_cluster.h"
#include "sh_cluster.h"
#include "sh_index.h"
#include "sh_mac.h"
#include "sh_radix.h"

#define MASTERS_MAX   64
#define WINDOW        2000          /* commands in flight a master */

typedef struct {
    char          host[256];
    int           port;
    redisContext *c;
    FILE         *f;                /* --out DIR */
    size_t        inflight;
    uint64_t      keys, bytes;
} master_t;

typedef struct {
    master_t   m[MASTERS_MAX];
    size_t     n;
    uint8_t    owner[SH_CLUSTER_SLOTS];   /* slot -> master; 255: none */
    FILE      *single;              /* --out FILE */
    uint64_t   keys, bytes;
} sink_t;

static const char synopsis[] =
"usage: simhash cluster load [options] --redis ADDR (--random N | FILE)\n"
"       simhash cluster load [options] --out PATH (--random N | FILE)\n"
"       simhash cluster load [options] --redis ADDR --snapshot ZONEFILE\n"
"       simhash cluster query [options] --redis ADDR FP...\n"
"       simhash cluster query [options] --redis ADDR --pages PAGE...\n"
"       simhash cluster slot KEY...\n"
"\n"
"The tier's shared index in a Redis Cluster.  load writes every bucket\n"
"whole (one SET each), into the cluster or, with --out, as files for\n"
"redis-cli --pipe (with --redis: PATH is a directory, one file a master).\n"
"FILE has one document a line: KEYHASH FP [DIGEST [SECOND [SKS SKL\n"
"[KEY]]]], hex but SECOND, KEY the rest of the line (its key text);\n"
"--snapshot reads a zone's snapshot (simhash_zone file=, saved under the\n"
"same --seed).  query prints, for each fingerprint (or page, --pages),\n"
"the documents within --h of it (with their key text if loaded), or\n"
"'new'.  The MAC key comes from --seed.  ADDR is HOST:PORT or\n"
"redis://[[USER]:PASSWORD@]HOST:PORT (an ACL user; the password may come\n"
"from REDISCLI_AUTH instead, as redis-cli takes it).\n"
"\n";

/* ---- the documents ---- */

typedef struct {
    uint64_t *kh;
    uint64_t *fp;
    uint64_t *digest;
    uint32_t *second;
    uint64_t *sks, *skl;
    size_t   *toff;                 /* key text: its offset in text, */
    uint32_t *tlen;                 /* and length (0: none) */
    char     *text;
    size_t    text_len, text_cap;
    size_t    n, cap;
    uint64_t  random;               /* 0: read from a file */
} docs_t;

/* Document i of --random: its fields from its number alone, so that no
 * array but the two the sorts need is kept at 2^26. */
static void
doc_get(const docs_t *d, size_t i, sh_cluster_rec_t *r)
{
    if (d->random == 0) {
        r->kh = d->kh[i];
        r->fp = d->fp[i];
        r->digest = d->digest[i];
        r->second = d->second[i];
        r->sk.structure = d->sks[i];
        r->sk.links = d->skl[i];
        return;
    }
    r->kh = cli_mix64(4 * (uint64_t) i);
    r->fp = cli_mix64(4 * (uint64_t) i + 1);
    r->digest = cli_mix64(4 * (uint64_t) i + 2);
    r->second = 1700000000u + (uint32_t) (i & 0xffffff);
    r->sk.structure = cli_mix64(4 * (uint64_t) i + 3);
    r->sk.links = r->sk.structure ^ r->digest;
}

static int
docs_grow(docs_t *d, size_t cap)
{
    void *p[8];
    int   ok = 1;

    p[0] = realloc(d->kh, cap * 8);
    if (p[0] != NULL) d->kh = p[0]; else ok = 0;
    p[1] = realloc(d->fp, cap * 8);
    if (p[1] != NULL) d->fp = p[1]; else ok = 0;
    p[2] = realloc(d->digest, cap * 8);
    if (p[2] != NULL) d->digest = p[2]; else ok = 0;
    p[3] = realloc(d->second, cap * 4);
    if (p[3] != NULL) d->second = p[3]; else ok = 0;
    p[4] = realloc(d->sks, cap * 8);
    if (p[4] != NULL) d->sks = p[4]; else ok = 0;
    p[5] = realloc(d->skl, cap * 8);
    if (p[5] != NULL) d->skl = p[5]; else ok = 0;
    p[6] = realloc(d->toff, cap * sizeof(size_t));
    if (p[6] != NULL) d->toff = p[6]; else ok = 0;
    p[7] = realloc(d->tlen, cap * 4);
    if (p[7] != NULL) d->tlen = p[7]; else ok = 0;
    /* a failed one leaves its old array valid: freed by the caller */
    return ok ? 0 : -1;
}

/* One more document (cluster_doc_pt: a snapshot's come this way too). */
static int
docs_push(void *arg, const sh_cluster_rec_t *r)
{
    docs_t *d = arg;

    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 4096;

        if (docs_grow(d, cap) != 0) {
            cli_error("cluster: out of memory");
            return -1;
        }
        d->cap = cap;
    }
    d->kh[d->n] = r->kh;
    d->fp[d->n] = r->fp;
    d->digest[d->n] = r->digest;
    d->second[d->n] = r->second;
    d->sks[d->n] = r->sk.structure;
    d->skl[d->n] = r->sk.links;
    d->toff[d->n] = d->text_len;
    d->tlen[d->n] = 0;              /* no key text (a snapshot's) */
    d->n++;
    return 0;
}

/* The last document's key text, kept in one buffer: 0, or -1 (no
 * memory). */
static int
docs_text(docs_t *d, const char *key, size_t len)
{
    if (len == 0) {
        return 0;
    }
    if (d->text_len + len > d->text_cap) {
        size_t cap = (d->text_len + len) * 2;
        char  *p = realloc(d->text, cap);

        if (p == NULL) {
            return -1;
        }
        d->text = p;
        d->text_cap = cap;
    }
    memcpy(d->text + d->text_len, key, len);
    d->toff[d->n - 1] = d->text_len;
    d->tlen[d->n - 1] = (uint32_t) len;
    d->text_len += len;
    return 0;
}

static int
docs_read(docs_t *d, const char *path)
{
    FILE            *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    static char      line[SH_CLUSTER_TEXT_MAX + 256];
    size_t           lineno = 0, klen;
    sh_cluster_rec_t r;

    if (f == NULL) {
        cli_error("cluster: %s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long v[6] = { 0, 0, 0, 0, 0, 0 };
        int                got, end = 0;
        char              *key;

        lineno++;
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        klen = strlen(line);
        if (klen > 0 && line[klen - 1] != '\n' && !feof(f)) {
            cli_error("cluster: %s:%zu: a line longer than a key may be",
                      path, lineno);
            goto fail;
        }
        got = sscanf(line, "%llx %llx %llx %llu %llx %llx%n", &v[0], &v[1],
                     &v[2], &v[3], &v[4], &v[5], &end);
        if (got < 2 || got == 5 || v[3] > UINT32_MAX) {
            cli_error("cluster: %s:%zu: not KEYHASH FP [DIGEST [SECOND "
                      "[SKS SKL [KEY]]]]", path, lineno);
            goto fail;
        }
        /* the key: the rest of the line, after one space */
        key = got == 6 && line[end] == ' ' ? line + end + 1 : line + klen;
        klen = strcspn(key, "\r\n");
        if (klen > SH_CLUSTER_TEXT_MAX) {
            cli_error("cluster: %s:%zu: a key of more than %d bytes", path,
                      lineno, SH_CLUSTER_TEXT_MAX);
            goto fail;
        }
        r.kh = v[0];
        r.fp = v[1];
        r.digest = v[2];
        r.second = (uint32_t) v[3];
        r.sk.structure = v[4];
        r.sk.links = v[5];
        if (docs_push(d, &r) != 0) {
            goto fail;
        }
        if (docs_text(d, key, klen) != 0) {
            cli_error("cluster: out of memory");
            goto fail;
        }
    }
    if (f != stdin) {
        fclose(f);
    }
    return 0;
fail:
    if (f != stdin) {
        fclose(f);
    }
    return -1;
}

/* ---- where the commands go ---- */

/* the credentials of --redis redis://[USER:]PASSWORD@HOST:PORT (or the
 * password in REDISCLI_AUTH, as redis-cli takes it), used for every node:
 * a cluster has one set of users */
static char auth_user[128], auth_pass[256];

/* %XX of a URL's credentials, in place; -1: a NUL or a bad escape */
static int
unescape(char *s)
{
    char *d = s;

    for (; *s; s++) {
        if (*s == '%') {
            unsigned v;

            if (sscanf(s + 1, "%2x", &v) != 1 || !s[1] || !s[2] || v == 0) {
                return -1;
            }
            *d++ = (char) v;
            s += 2;
        } else {
            *d++ = *s;
        }
    }
    *d = '\0';
    return 0;
}

static int
parse_hostport(const char *s, char *host, size_t hlen, int *port)
{
    const char    *colon, *at;
    unsigned long  p;
    char          *end, cred[400], *c;

    if (strncmp(s, "rediss://", 9) == 0) {
        cli_error("cluster: %s: TLS (rediss://) is not supported; reach "
                  "the cluster over a private network or a tunnel", s);
        return -2;
    }
    if (strncmp(s, "redis://", 8) == 0) {
        s += 8;
        at = strrchr(s, '@');
        if (at != NULL) {
            if ((size_t) (at - s) >= sizeof(cred)) {
                return -1;
            }
            memcpy(cred, s, (size_t) (at - s));
            cred[at - s] = '\0';
            c = strchr(cred, ':');
            if (c == NULL) {
                cli_error("cluster: --redis: the credentials are "
                          "USER:PASSWORD@, or :PASSWORD@ for a password "
                          "alone");
                return -2;
            }
            *c = '\0';
            if (strlen(cred) >= sizeof(auth_user)
                || strlen(c + 1) >= sizeof(auth_pass))
            {
                return -1;
            }
            strcpy(auth_user, cred);
            strcpy(auth_pass, c + 1);
            if (unescape(auth_user) != 0 || unescape(auth_pass) != 0) {
                return -1;
            }
            s = at + 1;
        }
    }
    if (auth_pass[0] == '\0' && getenv("REDISCLI_AUTH") != NULL) {
        snprintf(auth_pass, sizeof(auth_pass), "%s", getenv("REDISCLI_AUTH"));
    }

    colon = strrchr(s, ':');
    if (colon == NULL || (size_t) (colon - s) >= hlen || colon == s) {
        return -1;
    }
    p = strtoul(colon + 1, &end, 10);
    if ((*end != '\0' && strcmp(end, "/") != 0) || p == 0 || p > 65535) {
        return -1;
    }
    memcpy(host, s, (size_t) (colon - s));
    host[colon - s] = '\0';
    *port = (int) p;
    return 0;
}

static redisContext *
connect_to(const char *host, int port)
{
    struct timeval tv = { 5, 0 };
    redisContext  *c = redisConnectWithTimeout(host, port, tv);
    redisReply    *r;

    if (c == NULL || c->err) {
        cli_error("cluster: %s:%d: %s", host, port,
                  c ? c->errstr : "out of memory");
        if (c) {
            redisFree(c);
        }
        return NULL;
    }
    redisSetTimeout(c, tv);

    if (auth_pass[0] != '\0') {
        r = auth_user[0] ? redisCommand(c, "AUTH %s %s", auth_user, auth_pass)
                         : redisCommand(c, "AUTH %s", auth_pass);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            cli_error("cluster: %s:%d: AUTH refused: %s", host, port,
                      r ? r->str : c->errstr);
            if (r) {
                freeReplyObject(r);
            }
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    return c;
}

/* The masters and their slots, from CLUSTER SLOTS of any node. */
static int
slot_map(sink_t *s, const char *addr)
{
    char          host[256];
    int           port;
    redisContext *c;
    redisReply   *r;
    size_t        i, j;

    memset(s->owner, 255, sizeof(s->owner));
    switch (parse_hostport(addr, host, sizeof(host), &port)) {
    case 0:
        break;
    case -1:
        cli_error("cluster: --redis %s is not HOST:PORT or "
                  "redis://[[USER]:PASSWORD@]HOST:PORT", addr);
        /* fall through */
    default:
        return -1;
    }
    c = connect_to(host, port);
    if (c == NULL) {
        return -1;
    }
    r = redisCommand(c, "CLUSTER SLOTS");
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        cli_error("cluster: %s: CLUSTER SLOTS: %s", addr,
                  r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        goto fail;
    }
    for (i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i], *node;
        long long   lo, hi, k;
        size_t      m;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3
            || e->element[2]->type != REDIS_REPLY_ARRAY
            || e->element[2]->elements < 2)
        {
            cli_error("cluster: %s: a CLUSTER SLOTS reply not understood",
                      addr);
            goto fail;
        }
        lo = e->element[0]->integer;
        hi = e->element[1]->integer;
        node = e->element[2];
        if (lo < 0 || hi >= SH_CLUSTER_SLOTS || lo > hi) {
            cli_error("cluster: %s: slots %lld-%lld?", addr, lo, hi);
            goto fail;
        }
        for (m = 0; m < s->n; m++) {
            if (strcmp(s->m[m].host, node->element[0]->str) == 0
                && s->m[m].port == node->element[1]->integer)
            {
                break;
            }
        }
        if (m == s->n) {
            if (s->n == MASTERS_MAX) {
                cli_error("cluster: more than %d masters", MASTERS_MAX);
                goto fail;
            }
            snprintf(s->m[m].host, sizeof(s->m[m].host), "%s",
                     node->element[0]->str);
            s->m[m].port = (int) node->element[1]->integer;
            s->n++;
        }
        for (k = lo; k <= hi; k++) {
            s->owner[k] = (uint8_t) m;
        }
    }
    freeReplyObject(r);
    redisFree(c);
    for (j = 0; j < SH_CLUSTER_SLOTS; j++) {
        if (s->owner[j] == 255) {
            cli_error("cluster: %s: slot %zu is served by no master (is "
                      "the cluster's state ok?)", addr, j);
            return -1;
        }
    }
    return 0;
fail:
    if (r) {
        freeReplyObject(r);
    }
    redisFree(c);
    return -1;
}

static int
drain(master_t *m, size_t keep)
{
    while (m->inflight > keep) {
        redisReply *r;

        if (redisGetReply(m->c, (void **) &r) != REDIS_OK || r == NULL) {
            cli_error("cluster: %s:%d: %s", m->host, m->port, m->c->errstr);
            return -1;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            cli_error("cluster: %s:%d: %s", m->host, m->port, r->str);
            freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
        m->inflight--;
    }
    return 0;
}

static const char *cmd_name = "SET";    /* --append: "APPEND" */

static void
resp_set(FILE *f, const char *key, size_t klen, const void *v, size_t vlen)
{
    fprintf(f, "*3\r\n$%zu\r\n%s\r\n$%zu\r\n", strlen(cmd_name),
            cmd_name, klen);
    fwrite(key, 1, klen, f);
    fprintf(f, "\r\n$%zu\r\n", vlen);
    fwrite(v, 1, vlen, f);
    fputs("\r\n", f);
}

/* SET key value, to its master or its file. */
static int
emit(sink_t *s, const char *key, size_t klen, const void *v, size_t vlen)
{
    const char *argv[3] = { cmd_name, key, v };
    size_t      lens[3] = { strlen(cmd_name), klen, vlen };
    master_t   *m;

    s->keys++;
    s->bytes += vlen;
    if (s->single != NULL) {
        resp_set(s->single, key, klen, v, vlen);
        return ferror(s->single) ? -1 : 0;
    }
    m = &s->m[s->owner[sh_cluster_slot(key, klen)]];
    m->keys++;
    m->bytes += vlen;
    if (m->f != NULL) {
        resp_set(m->f, key, klen, v, vlen);
        return ferror(m->f) ? -1 : 0;
    }
    if (redisAppendCommandArgv(m->c, 3, argv, lens) != REDIS_OK) {
        cli_error("cluster: %s:%d: %s", m->host, m->port, m->c->errstr);
        return -1;
    }
    m->inflight++;
    return m->inflight >= WINDOW ? drain(m, WINDOW / 2) : 0;
}

static int
sink_open(sink_t *s, const char *redis, const char *out)
{
    size_t i;

    if (redis == NULL) {
        s->single = fopen(out, "w");
        if (s->single == NULL) {
            cli_error("cluster: %s: %s", out, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (slot_map(s, redis) != 0) {
        return -1;
    }
    if (out != NULL && mkdir(out, 0755) != 0 && errno != EEXIST) {
        cli_error("cluster: %s: %s", out, strerror(errno));
        return -1;
    }
    for (i = 0; i < s->n; i++) {
        master_t *m = &s->m[i];

        if (out != NULL) {
            char path[4096];

            snprintf(path, sizeof(path), "%s/%s:%d.resp", out, m->host,
                     m->port);
            m->f = fopen(path, "w");
            if (m->f == NULL) {
                cli_error("cluster: %s: %s", path, strerror(errno));
                return -1;
            }
        } else if ((m->c = connect_to(m->host, m->port)) == NULL) {
            return -1;
        }
    }
    return 0;
}

static int
sink_close(sink_t *s, int ok)
{
    size_t i;

    if (s->single != NULL && fclose(s->single) != 0) {
        ok = 0;
    }
    for (i = 0; i < s->n; i++) {
        master_t *m = &s->m[i];

        if (m->c != NULL) {
            if (ok && drain(m, 0) != 0) {
                ok = 0;
            }
            redisFree(m->c);
        }
        if (m->f != NULL && fclose(m->f) != 0) {
            ok = 0;
        }
    }
    return ok ? 0 : -1;
}

/* ---- load ---- */

typedef struct {
    unsigned char *buf;
    size_t         len, cap;
} vbuf_t;

static int
vbuf_room(vbuf_t *b, size_t more)
{
    if (b->len + more > b->cap) {
        size_t         cap = (b->len + more) * 2;
        unsigned char *p = realloc(b->buf, cap);

        if (p == NULL) {
            cli_error("cluster: out of memory");
            return -1;
        }
        b->buf = p;
        b->cap = cap;
    }
    return 0;
}

/* A run of one bucket's documents as one chunk, into out; size: the
 * chunk's bytes, without writing it. */
static size_t
encode_run(const sh_cluster_layout_t *l, int kind, uint32_t b,
           const docs_t *d, const uint32_t *ref, size_t n, void *scratch,
           unsigned char *out)
{
    sh_cluster_fpent_t *fe = scratch;
    sh_cluster_rec_t   *re = scratch;
    sh_cluster_text_t  *te = scratch;
    sh_cluster_rec_t    r;
    size_t              i;

    for (i = 0; i < n; i++) {
        if (kind == SH_CLUSTER_TEXT) {
            te[i].kh = d->kh[ref[i]];
            te[i].text = d->text + d->toff[ref[i]];
            te[i].len = d->tlen[ref[i]];
            continue;
        }
        doc_get(d, ref[i], kind == SH_CLUSTER_FP ? &r : &re[i]);
        if (kind == SH_CLUSTER_FP) {
            fe[i].fp = r.fp;
            fe[i].id = r.kh;
        }
    }
    if (kind == SH_CLUSTER_TEXT) {
        return out == NULL ? sh_cluster_text_size(l, te, n)
                           : sh_cluster_encode_text(l, b, te, n, out);
    }
    if (out == NULL) {
        return sh_cluster_chunk_size(l, kind, n);
    }
    return kind == SH_CLUSTER_FP ? sh_cluster_encode_fp(l, b, fe, n, out)
                                 : sh_cluster_encode_rec(l, b, re, n, out);
}

/*
 * One family's buckets: `key` sorted with `ref` (the documents' numbers,
 * n of them); a bucket is one value, one chunk of up to
 * SH_CLUSTER_CHUNK_MAX entries (more only past that), written by one SET.
 */
static int
load_family(sink_t *s, const sh_cluster_layout_t *l, int kind,
            const docs_t *d, const uint64_t *key, const uint32_t *ref,
            size_t total)
{
    unsigned  bits = kind == SH_CLUSTER_FP ? l->fp_bits
                     : kind == SH_CLUSTER_TEXT ? l->key_bits : l->rec_bits;
    vbuf_t    v = { NULL, 0, 0 };
    void     *scratch = malloc(SH_CLUSTER_CHUNK_MAX
                               * sizeof(sh_cluster_rec_t));
    char      name[SH_CLUSTER_KEY_MAX];
    size_t    i = 0, j, klen;
    int       rc = -1;

    if (scratch == NULL) {
        cli_error("cluster: out of memory");
        return -1;
    }
    while (i < total) {
        uint32_t b = (uint32_t) (key[i] >> (64 - bits));

        v.len = 0;
        for (j = i; j < total && (uint32_t) (key[j] >> (64 - bits)) == b; ) {
            size_t run, len;

            for (run = 0; j + run < total && run < SH_CLUSTER_CHUNK_MAX
                 && (uint32_t) (key[j + run] >> (64 - bits)) == b; run++)
            {
                if (cmd_name[0] == 'A') {
                    run = 1;        /* --append: a chunk a document */
                    break;
                }
            }
            if (vbuf_room(&v, encode_run(l, kind, b, d, ref + j, run,
                                         scratch, NULL)) != 0) {
                goto done;
            }
            len = encode_run(l, kind, b, d, ref + j, run, scratch,
                             v.buf + v.len);
            if (len == 0) {
                cli_error("cluster: a bucket could not be encoded");
                goto done;
            }
            v.len += len;
            j += run;
            if (cmd_name[0] == 'A') {
                klen = sh_cluster_key(l, kind, b, name);
                if (emit(s, name, klen, v.buf, v.len) != 0) {
                    goto done;
                }
                v.len = 0;
            }
        }
        if (cmd_name[0] != 'A') {
            klen = sh_cluster_key(l, kind, b, name);
            if (emit(s, name, klen, v.buf, v.len) != 0) {
                goto done;
            }
        }
        i = j;
    }
    rc = 0;
done:
    free(scratch);
    free(v.buf);
    return rc;
}

/* The families, each sorted by its bucket's key in its turn (the key
 * texts of the documents that have one), then the layout. */
static int
load_all(sink_t *s, const sh_cluster_layout_t *l, const docs_t *d)
{
    uint64_t *key = malloc((d->n ? d->n : 1) * sizeof(uint64_t));
    uint32_t *ref = malloc((d->n ? d->n : 1) * sizeof(uint32_t));
    char      name[SH_CLUSTER_KEY_MAX], meta[SH_CLUSTER_META_MAX];
    size_t    i, n, klen, mlen;
    int       kind, rc = -1;
    const int fams[3] = { SH_CLUSTER_FP, SH_CLUSTER_REC, SH_CLUSTER_TEXT };

    if (key == NULL || ref == NULL) {
        cli_error("cluster: out of memory");
        goto done;
    }
    for (kind = 0; kind < 3; kind++) {
        int fam = fams[kind];

        for (i = 0, n = 0; i < d->n; i++) {
            sh_cluster_rec_t r;

            if (fam == SH_CLUSTER_TEXT && (d->random || d->tlen[i] == 0)) {
                continue;
            }
            doc_get(d, i, &r);
            key[n] = fam == SH_CLUSTER_FP ? r.fp : r.kh;
            ref[n++] = (uint32_t) i;
        }
        sh_radix_sort(key, ref, n);
        if (load_family(s, l, fam, d, key, ref, n) != 0) {
            goto done;
        }
    }
    /* the layout is SET, even under --append: appended to a cluster
     * loaded before, it would no longer read as one */
    cmd_name = "SET";
    klen = sh_cluster_key(l, SH_CLUSTER_META, 0, name);
    mlen = sh_cluster_meta_format(l, meta);
    rc = emit(s, name, klen, meta, mlen);
done:
    free(key);
    free(ref);
    return rc;
}

/* The layout from the options: the MAC key derived from --seed. */
static int
layout_from(sh_cluster_layout_t *l, cli_extract_t *x, const char *prefix,
            unsigned long fp_bits, unsigned long rec_bits)
{
    unsigned char key[SH_CLUSTER_MACKEY_LEN], stream[32];
    sh_config_t  *cfg = cli_extract_config(x);
    char          err[160];
    int           rc;

    if (cfg == NULL) {
        return -1;
    }
    /* as a zone derives it: from the stream's key (sh_cluster.h) */
    rc = sh_config_derive_key(cfg, "stream mac", stream, sizeof(stream));
    if (rc == 0) {
        rc = sh_mac_derive(key, sizeof(key), stream, sizeof(stream),
                           "cluster");
    }
    sh_config_free(cfg);
    if (rc != 0) {
        cli_error("cluster: cannot derive the cluster key");
        return -1;
    }
    if (sh_cluster_layout_init(l, prefix, strlen(prefix), (unsigned) fp_bits,
                               (unsigned) rec_bits, key, err, sizeof(err))
        != 0)
    {
        cli_error("cluster: %s", err);
        return -1;
    }
    return 0;
}

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
docs_free(docs_t *d)
{
    free(d->kh);
    free(d->fp);
    free(d->digest);
    free(d->second);
    free(d->sks);
    free(d->skl);
    free(d->toff);
    free(d->tlen);
    free(d->text);
}

/* A zone's snapshot: its documents (cmd_cluster_snapshot.c). */
static int
snapshot_read(docs_t *d, cli_extract_t *x, const char *path)
{
    sh_config_t *cfg = cli_extract_config(x);
    int          rc;

    if (cfg == NULL) {
        return -1;
    }
    rc = cluster_snapshot_docs(path, cfg, docs_push, d);
    sh_config_free(cfg);
    return rc;
}

static int
cluster_load(int argc, char **argv)
{
    cli_extract_t       x;
    sh_cluster_layout_t l;
    static sink_t       s;
    docs_t              d;
    const char         *redis = NULL, *out = NULL, *prefix = "sh:";
    const char         *snapshot = NULL;
    unsigned long       random = 0, fp_bits = 0, rec_bits = 0, per = 64;
    unsigned long       rper = 256;
    double              t0;
    int                 a, rc, append = 0;
    cli_opt_t           opts[] = {
        CLI_OPT_FLAG("--append", &append,
                     "a chunk a document, by APPEND, as nodes add them\n"
                     "one by one (to measure what that costs Redis)"),
        CLI_OPT_STRING("--redis", "ADDR", &redis,
                       "a node of the cluster (its slot map is read)"),
        CLI_OPT_STRING("--out", "PATH", &out,
                       "write files for redis-cli --pipe instead"),
        CLI_OPT_STRING("--prefix", "P", &prefix, "the keys' prefix"),
        CLI_OPT_UINT("--random", "N", &random, 1, UINT32_MAX - 1,
                     "N documents of random fingerprints, no FILE"),
        CLI_OPT_STRING("--snapshot", "ZONEFILE", &snapshot,
                       "the documents of a zone's snapshot (file=),\n"
                       "saved under --seed, no FILE"),
        CLI_OPT_UINT("--fp-bits", "B", &fp_bits, SH_CLUSTER_BITS_MIN,
                     SH_CLUSTER_BITS_MAX, "a table bucket's top bits\n"
                     "(default: from --per-bucket)"),
        CLI_OPT_UINT("--rec-bits", "B", &rec_bits, SH_CLUSTER_BITS_MIN,
                     SH_CLUSTER_BITS_MAX, "a record bucket's top bits\n"
                     "(default: from --per-record-bucket)"),
        CLI_OPT_UINT("--per-bucket", "N", &per, 1, 65535,
                     "table entries a bucket, about"),
        CLI_OPT_UINT("--per-record-bucket", "N", &rper, 1, 65535,
                     "records a bucket, about"),
        CLI_OPT_END
    };
    cli_cmd_t           cmd = {
        .name = "cluster load", .synopsis = synopsis, .opts = opts,
        .extract = &x
    };

    memset(&d, 0, sizeof(d));
    cli_extract_init(&x);
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    if ((random != 0 || snapshot != NULL) ? a != argc : a != argc - 1) {
        cli_error("cluster load: --random N, --snapshot ZONEFILE or one "
                  "FILE (see --help)");
        return 2;
    }
    if (random != 0 && snapshot != NULL) {
        cli_error("cluster load: --random or --snapshot, not both");
        return 2;
    }
    if (redis == NULL && out == NULL) {
        cli_error("cluster load: --redis or --out (see --help)");
        return 2;
    }
    if (random != 0) {
        d.random = 1;
        d.n = random;
    } else if (snapshot != NULL) {
        if (snapshot_read(&d, &x, snapshot) != 0) {
            docs_free(&d);
            return 1;
        }
    } else if (docs_read(&d, argv[a]) != 0) {
        docs_free(&d);
        return 1;
    }
    if (fp_bits == 0) {
        fp_bits = sh_cluster_bits_for(d.n, (unsigned) per);
    }
    if (rec_bits == 0) {
        rec_bits = sh_cluster_bits_for(d.n, (unsigned) rper);
    }
    if (layout_from(&l, &x, prefix, fp_bits, rec_bits) != 0) {
        docs_free(&d);
        return 2;
    }
    cmd_name = append ? "APPEND" : "SET";
    t0 = now_s();
    rc = sink_open(&s, redis, out);
    if (rc == 0) {
        rc = load_all(&s, &l, &d);
    }
    rc = sink_close(&s, rc == 0);
    docs_free(&d);
    if (rc != 0) {
        return 1;
    }
    printf("documents %zu\nfp_bits %u\nrec_bits %u\nkeys %" PRIu64
           "\nbytes %" PRIu64 "\nseconds %.2f\n", d.n, l.fp_bits,
           l.rec_bits, s.keys, s.bytes, now_s() - t0);
    return 0;
}

/* ---- query ---- */

/* GET of one key from its master, following MOVED and ASK: a tool, so
 * blocking; the module's client is the one that never blocks. */
static redisReply *
get_key(sink_t *s, const char *name, size_t len)
{
    master_t *m = &s->m[s->owner[sh_cluster_slot(name, len)]];
    char      host[256];
    int       port, hop, asking = 0;

    for (hop = 0; hop < 5; hop++) {
        redisReply *r;

        if (m->c == NULL && (m->c = connect_to(m->host, m->port)) == NULL) {
            return NULL;
        }
        if (asking) {
            r = redisCommand(m->c, "ASKING");
            freeReplyObject(r);
        }
        r = redisCommand(m->c, "GET %b", name, len);
        if (r == NULL) {
            cli_error("cluster: %s:%d: %s", m->host, m->port, m->c->errstr);
            return NULL;
        }
        if (r->type != REDIS_REPLY_ERROR
            || (strncmp(r->str, "MOVED ", 6) != 0
                && strncmp(r->str, "ASK ", 4) != 0))
        {
            return r;
        }
        /* "MOVED slot host:port": go there (this tool keeps no map) */
        asking = r->str[0] == 'A';
        if (parse_hostport(strchr(strchr(r->str, ' ') + 1, ' ') + 1, host,
                           sizeof(host), &port) != 0)
        {
            freeReplyObject(r);
            return NULL;
        }
        freeReplyObject(r);
        for (m = s->m; m < s->m + s->n; m++) {
            if (strcmp(m->host, host) == 0 && m->port == port) {
                break;
            }
        }
        if (m == s->m + s->n) {
            if (s->n == MASTERS_MAX) {
                return NULL;
            }
            snprintf(m->host, sizeof(m->host), "%s", host);
            m->port = port;
            s->n++;
        }
    }
    return NULL;
}

/* " key TEXT" of a document whose key text is in the cluster (and MACed
 * by the tier), then the line's end; " forged N" for chunks refused. */
static void
print_text(sink_t *s, const sh_cluster_layout_t *l, uint64_t kh)
{
    char               name[SH_CLUSTER_KEY_MAX];
    uint32_t           b = sh_cluster_text_bucket(l, kh);
    redisReply        *r = get_key(s, name,
                                   sh_cluster_key(l, SH_CLUSTER_TEXT, b,
                                                  name));
    sh_cluster_text_t  t;
    sh_cluster_read_t  rd;

    memset(&rd, 0, sizeof(rd));
    if (r != NULL && r->type == REDIS_REPLY_STRING
        && sh_cluster_find_text(l, b, (unsigned char *) r->str, r->len, kh,
                                ~(uint64_t) 0, &t, &rd))
    {
        printf(" key %.*s", (int) t.len, t.text);
    }
    if (rd.forged) {
        printf(" forged %u", rd.forged);
    }
    putchar('\n');
    freeReplyObject(r);
}

static int
query_one(sink_t *s, const sh_cluster_layout_t *l, uint64_t x,
          const float *w, unsigned h, unsigned k)
{
    uint32_t           probes[SH_PROBES_MAX + 1];
    sh_cluster_fpent_t best[8];
    sh_cluster_read_t  rd;
    size_t             n, i, found = 0, kept = 0;
    char               name[SH_CLUSTER_KEY_MAX];

    n = sh_cluster_probes(l, x, w, h, k, NULL, probes, SH_PROBES_MAX + 1);
    for (i = 0; i < n; i++) {
        sh_cluster_fpent_t got[8];
        size_t             len = sh_cluster_key(l, SH_CLUSTER_FP, probes[i],
                                                name), f, j;
        redisReply        *r = get_key(s, name, len);

        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            printf("%016" PRIx64 " incomplete %s\n", x,
                   r ? r->str : "no reply");
            freeReplyObject(r);
            return 1;
        }
        f = r->type == REDIS_REPLY_STRING
            ? sh_cluster_near(l, probes[i], (unsigned char *) r->str,
                              r->len, x, h, got, 8, &rd) : 0;
        freeReplyObject(r);
        for (j = 0; j < f && j < 8 && kept < 8; j++) {
            best[kept++] = got[j];
        }
        found += f;
    }
    if (found == 0) {
        printf("%016" PRIx64 " new (%zu buckets)\n", x, n);
        return 0;
    }
    for (i = 0; i < kept; i++) {
        sh_cluster_rec_t rec;
        uint32_t         rb = sh_cluster_rec_bucket(l, best[i].id);
        size_t           len = sh_cluster_key(l, SH_CLUSTER_REC, rb, name);
        redisReply      *r = get_key(s, name, len);
        int              have;

        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            printf("%016" PRIx64 " incomplete %s\n", x,
                   r ? r->str : "no reply");
            freeReplyObject(r);
            return 1;
        }
        have = r->type == REDIS_REPLY_STRING
               && sh_cluster_find_entry_rec(l, rb, (unsigned char *) r->str,
                                            r->len, &best[i], &rec, &rd);
        freeReplyObject(r);
        if (!have) {
            printf("%016" PRIx64 " stale %016" PRIx64 "\n", x, best[i].fp);
            continue;
        }
        printf("%016" PRIx64 " near %016" PRIx64 " id %016" PRIx64
               " distance %u digest %016" PRIx64, x, rec.fp, rec.kh,
               __builtin_popcountll(rec.fp ^ x), rec.digest);
        print_text(s, l, rec.kh);
    }
    return 0;
}

/* A page: "page PATH FP", then what query_one finds for it. */
static int
query_page(sink_t *s, const sh_cluster_layout_t *l, sh_config_t *cfg,
           const char *charset, const char *path, unsigned h, unsigned k)
{
    sh_result_t res;

    if (cli_fingerprint_file(cfg, path, charset, &res) != 0) {
        return 1;
    }
    printf("page %s %016" PRIx64 "\n", path, res.hash);
    return query_one(s, l, res.hash, res.weights, h, k);
}

static int
cluster_query(int argc, char **argv)
{
    cli_extract_t       x;
    sh_cluster_layout_t l;
    static sink_t       s;
    redisReply         *r;
    const char         *redis = NULL, *prefix = "sh:";
    char                name[SH_CLUSTER_KEY_MAX];
    unsigned long       h = 3, k = 0;
    unsigned            fpb, recb;
    int                 a, rc = 0, pages = 0;
    sh_config_t        *cfg = NULL;
    cli_opt_t           opts[] = {
        CLI_OPT_STRING("--redis", "ADDR", &redis,
                       "a node of the cluster"),
        CLI_OPT_STRING("--prefix", "P", &prefix, "the keys' prefix"),
        CLI_OPT_UINT("--h", "H", &h, 0, 7, "the radius"),
        CLI_OPT_UINT("--probes", "K", &k, 0, SH_PROBES_MAX,
                     "VOSH subsets probed (default: calibrated)"),
        CLI_OPT_FLAG("--pages", &pages,
                     "the arguments are pages: each fingerprinted, its\n"
                     "buckets ranked by its own weights, as a node does"),
        CLI_OPT_END
    };
    cli_cmd_t           cmd = {
        .name = "cluster query", .synopsis = synopsis, .opts = opts,
        .extract = &x
    };

    cli_extract_init(&x);
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    if (redis == NULL || a == argc) {
        cli_error("cluster query: --redis and a fingerprint (see --help)");
        return 2;
    }
    if (slot_map(&s, redis) != 0) {
        return 1;
    }
    /* the layout's bits from the meta key; the MAC key from --seed */
    if (layout_from(&l, &x, prefix, SH_CLUSTER_BITS_MIN, SH_CLUSTER_BITS_MIN)
        != 0)
    {
        return 2;
    }
    r = get_key(&s, name, sh_cluster_key(&l, SH_CLUSTER_META, 0, name));
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        /* the layout's master cannot answer: so is every lookup */
        for (; a < argc; a++) {
            printf("%s incomplete layout: %s\n", argv[a],
                   r ? r->str : "no reply");
        }
        freeReplyObject(r);
        return 1;
    }
    if (r->type != REDIS_REPLY_STRING
        || sh_cluster_meta_parse(r->str, r->len, &fpb, &recb) != 0
        || layout_from(&l, &x, prefix, fpb, recb) != 0)
    {
        cli_error("cluster query: no layout at %s (loaded?)", name);
        freeReplyObject(r);
        return 1;
    }
    freeReplyObject(r);
    if (k == 0) {
        k = sh_cluster_probes_for(&l, (unsigned) h, 0.95f, NULL);
    }
    if (pages && (cfg = cli_extract_config(&x)) == NULL) {
        return 2;
    }
    for (; a < argc && rc == 0; a++) {
        uint64_t fp;
        char    *end;

        if (pages) {
            rc = query_page(&s, &l, cfg, x.charset, argv[a], (unsigned) h,
                            (unsigned) k);
            continue;
        }
        fp = strtoull(argv[a], &end, 16);
        if (*argv[a] == '\0' || *end != '\0') {
            cli_error("cluster query: %s is not a hex fingerprint", argv[a]);
            return 2;
        }
        rc = query_one(&s, &l, fp, NULL, (unsigned) h, (unsigned) k);
    }
    sh_config_free(cfg);
    return rc;
}

int
cmd_cluster(int argc, char **argv)
{
    int i;

    if (argc < 2 || cli_is_help(argv[1])) {
        fputs(synopsis, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "load") == 0) {
        return cluster_load(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "query") == 0) {
        return cluster_query(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "slot") == 0) {
        for (i = 2; i < argc; i++) {
            printf("%u\n", sh_cluster_slot(argv[i], strlen(argv[i])));
        }
        return 0;
    }
    cli_error("cluster: unknown action %s (load, query or slot)", argv[1]);
    return 2;
}
