/*
 * cmd_index.c -- `simhash index build|query|stats|check|dump|rules`: a PSM
 * index
 * of pages kept in a snapshot file, the page paths as its documents.
 *
 * The snapshot's user section, of kind "SHPATHS1", maps refs to paths:
 *   uint32 count | uint32 offset[count] | NUL-terminated paths
 * (offset UINT32_MAX = no path), validated fully on load.  Such a file is
 * used only whole: a damaged part refuses it.
 *
 * `check` and `dump` also read the snapshots the nginx module writes, whose
 * user section holds the keys (URLs) as records (sh_keyrec.h), and say what
 * a damaged one has lost; `query` and `stats` read them whole, the keys
 * standing for the paths (which stored URL does this page duplicate?).  A
 * key counts only when its fingerprint is the one the index has for its
 * ref.
 *
 * `rules` prints the DUST rules a module's snapshot keeps after its image
 * (sh_store_file.h's tail, sh_dust.h's image), read without the secret.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pageset.h"
#include "sh_dust.h"
#include "sh_keyrec.h"
#include "sh_snapshot.h"
#include "sh_store_file.h"
#include "sh_image.h"

#define PATHS_KIND  "SHPATHS1"

/* The options of build and query, for their parsers and the usage. */
static struct {
    const char *list, *out;
    unsigned    capacity, t;
} bo;

static struct {
    const char *mode;
    unsigned    k;
    float       recall;
} qo = { "all", 0, 0.95f };

static int
set_mode(void *target, const char *name, const char *value)
{
    if (strcmp(value, "first") != 0 && strcmp(value, "all") != 0
        && strcmp(value, "closest") != 0) {
        cli_error("%s: expected first, all or closest", name);
        return -1;
    }
    *(const char **) target = value;
    return 0;
}

static const cli_opt_t build_opts[] = {
    CLI_OPT_STRING("--list", "PATHS", &bo.list, "pages ('-' = stdin)"),
    CLI_OPT_STRING("-o", "FILE", &bo.out, "the snapshot to write"),
    CLI_OPT_UINT("--capacity", "N", &bo.capacity, 1, 1ul << 31,
                 "documents the index holds (default: the pages;\n"
                 "when full, the oldest are evicted)"),
    CLI_OPT_UINT("--t", "N", &bo.t, 1, 40,
                 "header bits (default: about log2 capacity)"),
    CLI_OPT_END
};

static const cli_opt_t query_opts[] = {
    CLI_OPT_CALL("--mode", "M", &qo.mode, set_mode, NULL,
                 "first | all | closest (default all)"),
    CLI_OPT_UINT("--k", "N", &qo.k, 1, SH_PROBES_MAX,
                 "VOSH probes after the page itself (default:\n"
                 "from --recall)"),
    CLI_OPT_CALL("--recall", "R", &qo.recall, cli_set_recall,
                 cli_show_float, "target relative recall for k"),
    CLI_OPT_END
};

static void
usage(FILE *f)
{
    cli_extract_t x;
    cli_match_t   m;

    cli_extract_init(&x);
    cli_match_init(&m);
    fputs("usage: simhash index build [options] --list PATHS -o FILE\n"
          "       simhash index query [options] FILE PAGE...\n"
          "       simhash index stats FILE\n"
          "       simhash index check FILE\n"
          "       simhash index dump FILE\n"
          "       simhash index rules FILE\n\n"
          "build: fingerprint the pages and store them in a PSM index "
          "snapshot\n", f);
    cli_opts_usage(f, build_opts);
    fputs("query: print <page>\\t<stored page>\\t<distance> per match, or\n"
          "       <page>\\t-\\t- when there is none; the match rule options\n"
          "       below (--match, --h, --threshold, --volatility)\n", f);
    cli_opts_usage(f, query_opts);
    fputs("check: load a snapshot (this tool's or the nginx module's), "
          "verify\n"
          "       its checksum, the index's structure and the document "
          "table;\n"
          "       print format, capacity, entries, documents with a path or\n"
          "       key, and \"check\\tOK\" (exit 0) or\n"
          "       \"check\\tFAILED: why\" (exit 1)\n"
          "dump:  print <hex>\\t<ref>\\t<path or key> per stored document,\n"
          "       oldest first (\"-\" when it has none)\n"
          "rules: print the DUST rules of a module's snapshot (dust=), one a\n"
          "       line: <host>\\t<pattern>\\t<rule>\\t<state>\\t<support>\\t"
          "<against>\n"
          "       \\t<precision's lower bound, at z = 2.58>\n\n", f);
    cli_match_usage(f, &m);
    fputc('\n', f);
    cli_extract_usage(f, &x);
}

/* ---- The path table in the user section. ---- */

typedef struct {
    const uint32_t *off;
    const char     *str;
    uint32_t        count;
    size_t          slen;
    void           *own;    /* built from a module's keys: free it */
} paths_t;

static int
paths_parse(paths_t *p, const void *user, size_t len)
{
    const char *u = user;
    uint32_t    i;

    if (len < 4) {
        return -1;
    }
    memcpy(&p->count, u, 4);
    if ((len - 4) / 4 < p->count) {
        return -1;
    }
    p->off = (const uint32_t *) (u + 4);
    p->str = u + 4 + (size_t) p->count * 4;
    p->slen = len - 4 - (size_t) p->count * 4;
    if (p->slen > 0 && p->str[p->slen - 1] != '\0') {
        return -1;
    }
    for (i = 0; i < p->count; i++) {
        if (p->off[i] != UINT32_MAX && p->off[i] >= p->slen) {
            return -1;
        }
    }
    return 0;
}

static const char *
paths_get(const paths_t *p, uint32_t ref)
{
    return ref < p->count && p->off[ref] != UINT32_MAX ? p->str + p->off[ref]
                                                       : "?";
}

/* ---- build ---- */

/*
 * The user section of a snapshot of this tool: the capacity, then each
 * ref's offset into a blob of the stored pages' paths (UINT32_MAX: none),
 * then the blob.  `refpath` holds each ref's page.
 */
static char *
paths_section(const pageset_t *fs, const uint32_t *refpath, size_t capacity,
              size_t *usize)
{
    size_t    i, slen = 0, at = 0;
    char     *user, *str;
    uint32_t  c32 = (uint32_t) capacity, *off;

    for (i = 0; i < capacity; i++) {
        if (refpath[i] != UINT32_MAX) {
            slen += strlen(pageset_path(fs, refpath[i])) + 1;
        }
    }
    *usize = 4 + capacity * 4 + slen;
    user = malloc(*usize);
    if (user == NULL) {
        cli_error("out of memory");
        return NULL;
    }
    off = (uint32_t *) (user + 4);
    str = user + 4 + capacity * 4;
    memcpy(user, &c32, 4);
    for (i = 0; i < capacity; i++) {
        if (refpath[i] == UINT32_MAX) {
            off[i] = UINT32_MAX;
            continue;
        }
        off[i] = (uint32_t) at;
        strcpy(str + at, pageset_path(fs, refpath[i]));
        at += strlen(str + at) + 1;
    }
    return user;
}

static int
index_build(int argc, char **argv)
{
    cli_extract_t x;
    const char   *list, *out;
    unsigned long capacity, t;
    char        **paths = NULL, err[512];
    size_t        npaths = 0, i, usize;
    sh_config_t  *cfg = NULL;
    pageset_t    fs;
    void         *mem = NULL;
    sh_index_t   *ix;
    uint32_t     *refpath = NULL;
    char         *user = NULL;
    int           rc = 1, a;
    size_t        stored = 0, skipped = 0;
    cli_cmd_t     cmd = {
        .name = "index build", .opts = build_opts, .extract = &x,
        .usage = usage
    };

    cli_extract_init(&x);
    pageset_init(&fs);
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    list = bo.list;
    out = bo.out;
    capacity = bo.capacity;
    t = bo.t;
    if (a < argc) {
        cli_error("index build: unexpected argument %s (see --help)",
                  argv[a]);
        return 2;
    }
    if (list == NULL || out == NULL) {
        cli_error("index build needs --list PATHS and -o FILE");
        return 2;
    }
    if (cli_read_list(list, &paths, &npaths) != 0) {
        return 1;
    }
    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        goto done;
    }
    if (pageset_from_paths(&fs, cfg, x.charset, paths, npaths, NULL) != 0) {
        goto done;
    }
    if (capacity == 0) {
        capacity = npaths ? npaths : 1;
    }
    usize = sh_index_region_size((uint32_t) capacity);
    if (posix_memalign(&mem, 64, usize) != 0) {
        cli_error("cannot allocate %zu bytes for the index", usize);
        goto done;
    }
    ix = sh_index_init(mem, usize, (unsigned) t, sh_config_seed_digest(cfg),
                       err, sizeof(err));
    if (ix == NULL) {
        cli_error("%s", err);
        goto done;
    }
    sh_index_set_version(ix, sh_config_version(cfg));
    /*
     * The index rounds the capacity up to what its region holds (--capacity
     * 3 gives 4), and hands out refs below its own capacity: the path table
     * must have that many (it had --capacity's: a write past its end).
     */
    {
        sh_index_stats_t st;

        sh_index_stats(ix, &st);
        capacity = st.capacity;
    }
    refpath = malloc(capacity * sizeof(uint32_t));
    if (refpath == NULL) {
        cli_error("out of memory");
        goto done;
    }
    for (i = 0; i < capacity; i++) {
        refpath[i] = UINT32_MAX;
    }
    for (i = 0; i < fs.n; i++) {
        uint32_t ref, ev;

        if (fs.fp[i].status != SH_STATUS_OK) {
            skipped++;
            continue;
        }
        ref = sh_index_insert(ix, fs.fp[i].hash, &ev);
        refpath[ref] = (uint32_t) i;    /* page index for now */
        stored++;
    }

    user = paths_section(&fs, refpath, capacity, &usize);
    if (user == NULL) {
        goto done;
    }
    if (sh_snapshot_save(out, ix, PATHS_KIND, user, usize, err, sizeof(err))
        != 0)
    {
        cli_error("%s", err);
        goto done;
    }
    fprintf(stderr, "simhash: stored %zu pages (%zu too short or "
            "unreadable) in %s\n", stored, skipped, out);
    rc = 0;

done:
    free(user);
    free(refpath);
    free(mem);
    pageset_free(&fs);
    sh_config_free(cfg);
    cli_free_list(paths, npaths);
    return rc;
}

/* ---- load helper for query and stats ---- */

/*
 * The module's key records as a path table: the key of each ref whose
 * fingerprint is the one the index holds (a record left from an older
 * version of the document is not its key).  -1: malformed records, keys
 * too long for 32-bit offsets, or no memory.
 */
static int
paths_from_keys(paths_t *p, sh_index_t *ix, const char *kind,
                const void *user, size_t ulen)
{
    sh_keyrec_reader_t rd;
    sh_keyrec_t        rec;
    uint64_t           have;
    uint32_t           count = 0, *off, i;
    size_t             slen = 0, at = 0;
    char              *buf, *str, err[256];
    int                rc;

    if (sh_keyrec_open(&rd, kind, user, ulen) != 0) {
        return -1;
    }
    while ((rc = sh_keyrec_next(&rd, &rec, err, sizeof(err))) == 1) {
        if (rec.type == SH_KEYREC_DOC) {
            count = rec.ref >= count ? rec.ref + 1 : count;
            slen += (size_t) rec.len + 1;
        }
    }
    if (rc != 0 || slen >= UINT32_MAX) {
        return -1;
    }
    buf = malloc((size_t) count * 4 + slen + 1);
    if (buf == NULL) {
        return -1;
    }
    off = (uint32_t *) (void *) buf;
    str = buf + (size_t) count * 4;
    for (i = 0; i < count; i++) {
        off[i] = UINT32_MAX;
    }
    (void) sh_keyrec_open(&rd, kind, user, ulen);
    while (sh_keyrec_next(&rd, &rec, err, sizeof(err)) == 1) {
        if (rec.type != SH_KEYREC_DOC || off[rec.ref] != UINT32_MAX
            || sh_index_get(ix, rec.ref, &have) != 0 || have != rec.hash)
        {
            continue;
        }
        memcpy(str + at, rec.data, rec.len);
        str[at + rec.len] = '\0';
        off[rec.ref] = (uint32_t) at;
        at += (size_t) rec.len + 1;
    }
    p->off = off;
    p->str = str;
    p->count = count;
    p->slen = at;
    p->own = buf;
    return 0;
}

/*
 * A snapshot in the store's format (the module's zones, format 4): its
 * image in a store on the heap, and a path table of its keys (a key whose
 * text left the ring shows as its id).  NULL and *handled 0 when the file
 * is of another format.
 */
static sh_index_t *
load_store_index(const char *file, const sh_config_t *cfg, void **mem,
                 paths_t *p, int *handled)
{
    const unsigned char *data, *meta, *image;
    size_t               len, meta_len, image_len, size, at = 0;
    unsigned char        secret[SH_STORE_SECRET_LEN];
    char                 err[512];
    sh_image_summary_t   sum;
    sh_image_info_t      info;
    sh_store_t          *st = NULL;
    uint32_t             ref, cap;
    char                *buf;
    uint32_t            *off;
    char                *str;
    const char          *text;

    *handled = 0;
    if (sh_snapshot_map(file, &data, &len, err, sizeof(err)) != 0) {
        return NULL;
    }
    if (!sh_store_file_is(data, len)) {
        sh_snapshot_unmap(data, len);
        return NULL;
    }
    *handled = 1;
    *mem = NULL;
    memset(secret, 0, sizeof(secret));
    if (sh_store_file_parse(data, len, &meta, &meta_len, &image, &image_len,
                            err, sizeof(err)) != 0
        || sh_image_inspect(image, image_len, &sum, err, sizeof(err)) != 0)
    {
        goto failed;
    }
    if (!sum.whole) {
        snprintf(err, sizeof(err), "damaged (%u of %u frames): `simhash "
                 "index check` says more", sum.damaged, sum.frames);
        goto failed;
    }
    size = sh_store_region_size(sum.capacity, sum.text_size);
    if (size == 0 || posix_memalign(mem, 64, size) != 0) {
        snprintf(err, sizeof(err), "out of memory");
        *mem = NULL;
        goto failed;
    }
    st = sh_store_init(*mem, size, sum.text_size, secret,
                       cfg != NULL ? sh_config_seed_digest(cfg)
                                   : sum.seed_digest,
                       err, sizeof(err));
    if (st == NULL
        || sh_image_load_unkeyed(st, image, image_len,
                                 cfg != NULL ? sh_config_version(cfg) : 0,
                                 &info, err, sizeof(err)) != 0)
    {
        goto failed;
    }
    sh_snapshot_unmap(data, len);

    /* the path table: each stored document's key, or its id */
    cap = sum.capacity;
    buf = malloc((size_t) cap * 4 + (size_t) cap * 32
                 + (size_t) sum.text_size + 1);
    if (buf == NULL) {
        cli_error("out of memory");
        free(*mem);
        *mem = NULL;
        return NULL;
    }
    off = (uint32_t *) (void *) buf;
    str = buf + (size_t) cap * 4;
    for (ref = 0; ref < cap; ref++) {
        off[ref] = UINT32_MAX;
        if (sh_store_doc(st, ref) == NULL) {
            continue;
        }
        off[ref] = (uint32_t) at;
        len = sh_store_key(st, ref, &text);
        if (len > 0) {
            memcpy(str + at, text, len);
        } else {
            len = (size_t) snprintf(str + at, 32, "simhash-id:");
            sh_store_id(st, ref, str + at + len);
            len += SH_STORE_ID_LEN;
        }
        str[at + len] = '\0';
        at += len + 1;
    }
    p->off = off;
    p->str = str;
    p->count = cap;
    p->slen = at;
    p->own = buf;
    return sh_store_index(st);

failed:
    sh_snapshot_unmap(data, len);
    cli_error("%s: %s", file, err);
    free(*mem);
    *mem = NULL;
    return NULL;
}

static sh_index_t *
load_index(const char *file, const sh_config_t *cfg, void **mem, paths_t *p)
{
    uint64_t           digest = cfg != NULL ? sh_config_seed_digest(cfg) : 0;
    size_t             rsize, ulen;
    const void        *user;
    char               err[512];
    sh_index_t        *ix;
    sh_snapshot_info_t info;

    p->own = NULL;
    {
        int handled;

        ix = load_store_index(file, cfg, mem, p, &handled);
        if (handled) {
            return ix;
        }
    }
    if (sh_snapshot_load(file, digest, mem, &rsize, &user, &ulen, &info,
                         err, sizeof(err)) != 0) {
        cli_error("%s", err);
        return NULL;
    }
    if (cfg != NULL && info.extraction != sh_config_version(cfg)) {
        cli_error("%s: fingerprints of extraction version %08x, these "
                  "options extract %08x: not comparable", file,
                  info.extraction, sh_config_version(cfg));
        free(*mem);
        return NULL;
    }
    if (!info.region_ok || info.damaged) {
        cli_error("%s: damaged (%s; %zu of %zu blocks): `simhash index "
                  "check` says more", file,
                  info.region_ok ? "the region is intact" : info.region_err,
                  info.damaged, info.blocks);
        free(*mem);
        *mem = NULL;
        return NULL;
    }
    ix = sh_index_attach(*mem, rsize, err, sizeof(err));
    if (ix == NULL) {
        cli_error("%s: %s", file, err);
        free(*mem);
        *mem = NULL;
        return NULL;
    }
    p->own = NULL;
    if (strcmp(info.kind, SH_KEYREC_KIND) == 0
        || strcmp(info.kind, SH_KEYREC_KIND_V2) == 0)
    {
        if (paths_from_keys(p, ix, info.kind, user, ulen) != 0) {
            cli_error("%s: the module's key records are malformed "
                      "(`simhash index check` says more)", file);
            free(*mem);
        *mem = NULL;
            return NULL;
        }
        return ix;
    }
    if (strcmp(info.kind, PATHS_KIND) != 0 || paths_parse(p, user, ulen) != 0)
    {
        cli_error("%s: neither `simhash index build`'s nor the nginx "
                  "module's (no path table, no keys)", file);
        free(*mem);
        *mem = NULL;
        return NULL;
    }
    return ix;
}

/* ---- query ---- */

static int
index_query(int argc, char **argv)
{
    cli_extract_t     x;
    cli_match_t       mt;
    sh_lookup_opts_t  o;
    sh_config_t      *cfg = NULL;
    const char       *file;
    char            **pages;
    size_t            npages, i, j;
    void             *mem = NULL;
    sh_index_t       *ix;
    paths_t           p;
    sh_match_t       *m;
    int               a, rc = 1;
    cli_cmd_t         cmd = {
        .name = "index query", .opts = query_opts, .match = &mt,
        .extract = &x, .usage = usage
    };

    cli_extract_init(&x);
    cli_match_init(&mt);
    sh_lookup_opts_init(&o);
    memset(&p, 0, sizeof(p));
    m = malloc(4096 * sizeof(sh_match_t));
    if (m == NULL) {
        cli_error("out of memory");
        return 1;
    }
    switch (cli_parse(&cmd, argc, argv, 1, &a)) {
    case CLI_HELP:
        rc = 0;
        goto done;
    case CLI_BAD:
        goto done2;
    case CLI_PARSED:
        break;
    }
    if (argc - a < 2) {
        cli_error("index query needs FILE and at least one PAGE");
        goto done2;
    }
    file = argv[a];
    pages = argv + a + 1;
    npages = (size_t) (argc - a - 1);
    o.mode = strcmp(qo.mode, "first") == 0 ? SH_MATCH_FIRST
             : strcmp(qo.mode, "closest") == 0 ? SH_MATCH_CLOSEST
             : SH_MATCH_ALL;
    if (qo.k != 0) {
        o.probes = qo.k;
    }
    o.recall = qo.recall;
    if (cli_match_finish(&mt) != 0) {
        goto done2;
    }
    o.rule = mt.opts.rule;
    o.h = mt.opts.h;
    o.threshold = mt.opts.threshold;
    o.vol = mt.opts.vol;
    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        goto done;
    }
    ix = load_index(file, cfg, &mem, &p);
    if (ix == NULL) {
        goto done;
    }
    rc = 0;
    for (i = 0; i < npages; i++) {
        sh_result_t r;
        size_t      n;

        if (cli_fingerprint_file(cfg, pages[i], x.charset, &r) != 0) {
            rc = 1;
            continue;
        }
        if (r.status != SH_STATUS_OK) {
            printf("%s\t-\t-\t(%s)\n", pages[i], sh_status_name(r.status));
            continue;
        }
        n = sh_index_lookup(ix, r.hash, r.weights, &o, m, 4096, NULL);
        if (n == 0) {
            printf("%s\t-\t-\n", pages[i]);
        }
        for (j = 0; j < n && j < 4096; j++) {
            printf("%s\t%s\t%u\n", pages[i], paths_get(&p, m[j].ref),
                   m[j].distance);
        }
    }
    goto done;

done2:
    rc = 2;
done:
    free(p.own);
    free(mem);
    free(m);
    cli_match_free(&mt);
    sh_config_free(cfg);
    return rc;
}

/* ---- stats ---- */

static int
index_stats(int argc, char **argv)
{
    sh_index_stats_t st;
    void            *mem = NULL;
    sh_index_t      *ix;
    paths_t          p;

    if (argc != 2 || cli_is_help(argv[1])) {
        usage(argc == 2 ? stdout : stderr);
        return argc == 2 ? 0 : 2;
    }
    ix = load_index(argv[1], NULL, &mem, &p);
    if (ix == NULL) {
        return 1;
    }
    sh_index_stats(ix, &st);
    printf("capacity\t%u\nentries\t%u\nheader_bits\t%u\nevictions\t%llu\n"
           "fingerprint_bytes\t%zu\nfingerprint_bytes_per_doc\t%.2f\n"
           "document_bytes\t%zu\nregion_bytes\t%zu\nseed_digest\t%016llx\n",
           st.capacity, st.entries, st.t,
           (unsigned long long) st.evictions, st.fingerprint_bytes,
           (double) st.fingerprint_bytes / st.capacity, st.document_bytes,
           st.region_bytes,
           (unsigned long long) sh_index_seed_digest(ix));
    free(p.own);
    free(mem);
    return 0;
}

/* ---- check and dump: the tool's snapshots and the module's ---- */

/*
 * A loaded snapshot as check and dump see it: the index when its region is
 * intact, and the documents, one string per ref (doc[ref] NULL: none), from
 * either kind of user section.  A path or key whose ref is not stored, or
 * whose recorded fingerprint is not the index's, is stale: a load leaves it
 * out.
 */
typedef struct {
    sh_snapshot_info_t info;
    void        *mem;
    sh_index_t  *ix;            /* NULL: the region is damaged */
    const void  *user;
    size_t       ulen;
    const char  *format;
    const char **doc;           /* [capacity] */
    uint32_t    *len;           /* [capacity]; UINT32_MAX: a stale record */
    uint32_t     capacity;
    size_t       records;       /* paths or key records in the file */
    size_t       stale;
} docs_t;

static void
docs_free(docs_t *dt)
{
    free(dt->doc);
    free(dt->len);
    free(dt->mem);
}

/* The module's records (sh_keyrec.h); -1 and the first problem in err. */
static int
docs_from_keys(docs_t *dt, char *err, size_t errlen)
{
    sh_keyrec_reader_t rd;
    sh_keyrec_t        rec;
    uint64_t           have;
    int                rc;

    dt->format = "nginx module (keys)";
    (void) sh_keyrec_open(&rd, dt->info.kind, dt->user, dt->ulen);
    while ((rc = sh_keyrec_next(&rd, &rec, err, errlen)) == 1) {
        if (rec.type != SH_KEYREC_DOC) {
            continue;
        }
        if (rec.ref >= dt->capacity) {
            snprintf(err, errlen, "key record %zu: ref %u is out of range",
                     dt->records, rec.ref);
            return -1;
        }
        if (dt->len[rec.ref] != 0) {
            snprintf(err, errlen, "key record %zu: ref %u has two keys",
                     dt->records, rec.ref);
            return -1;
        }
        dt->records++;
        if (dt->ix == NULL
            || (sh_index_get(dt->ix, rec.ref, &have) == 0
                && have == rec.hash))
        {
            dt->doc[rec.ref] = (const char *) rec.data;
            dt->len[rec.ref] = rec.len;
        } else {
            dt->len[rec.ref] = UINT32_MAX;
            dt->stale++;
        }
    }
    return rc;
}

/* The tool's path table. */
static int
docs_from_paths(docs_t *dt, char *err, size_t errlen)
{
    paths_t  p;
    uint32_t ref;
    uint64_t have;

    dt->format = "simhash index build (paths)";
    if (dt->ix == NULL) {
        snprintf(err, errlen, "the index is damaged: %s",
                 dt->info.region_err);
        return -1;
    }
    if (dt->info.damaged) {
        snprintf(err, errlen, "%zu of %zu blocks of the path table fail "
                 "their checksum", dt->info.damaged, dt->info.blocks);
        return -1;
    }
    if (paths_parse(&p, dt->user, dt->ulen) != 0) {
        snprintf(err, errlen, "the path table is malformed");
        return -1;
    }
    for (ref = 0; ref < p.count; ref++) {
        if (p.off[ref] == UINT32_MAX) {
            continue;
        }
        dt->records++;
        if (ref < dt->capacity && sh_index_get(dt->ix, ref, &have) == 0) {
            dt->doc[ref] = p.str + p.off[ref];
            dt->len[ref] = (uint32_t) strlen(dt->doc[ref]);
        } else {
            dt->stale++;
        }
    }
    return 0;
}

/*
 * Load without the seed check: 0, or -1 with the reason in err (then
 * dt->format may say what the file was).  A damaged region leaves dt->ix
 * NULL; damaged blocks are in dt->info.
 */
static int
docs_load(docs_t *dt, const char *file, char *err, size_t errlen)
{
    size_t rsize;
    char   ierr[256];

    memset(dt, 0, sizeof(*dt));
    if (sh_snapshot_load(file, 0, &dt->mem, &rsize, &dt->user, &dt->ulen,
                         &dt->info, err, errlen) != 0) {
        return -1;
    }
    if (dt->info.region_ok) {
        dt->ix = sh_index_attach(dt->mem, rsize, ierr, sizeof(ierr));
    }
    dt->capacity = (uint32_t) (rsize ? sh_index_capacity_for(rsize) : 0);
    dt->doc = calloc(dt->capacity + 1, sizeof(*dt->doc));
    dt->len = calloc(dt->capacity + 1, sizeof(*dt->len));
    if (dt->doc == NULL || dt->len == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (strcmp(dt->info.kind, SH_KEYREC_KIND) == 0
        || strcmp(dt->info.kind, SH_KEYREC_KIND_V2) == 0)
    {
        return docs_from_keys(dt, err, errlen);
    }
    if (strcmp(dt->info.kind, PATHS_KIND) == 0) {
        return docs_from_paths(dt, err, errlen);
    }
    dt->format = dt->ulen ? "unknown document table" : "index only";
    return 0;
}

typedef struct {
    const docs_t *dt;
    size_t        with_doc;
} count_arg_t;

static int
count_visit(void *arg, uint32_t ref, uint64_t hash)
{
    count_arg_t *c = arg;

    c->with_doc += c->dt->doc[ref] != NULL;
    return 0;
}

/* What a damaged file has lost; 0 when it is intact. */
static int
report_damage(const docs_t *dt, size_t with_doc)
{
    sh_index_stats_t st;

    if (dt->info.region_ok && !dt->info.damaged) {
        return 0;
    }
    printf("region\t%s\n", dt->info.region_ok ? "OK" : dt->info.region_err);
    printf("damaged_blocks\t%zu of %zu\n", dt->info.damaged, dt->info.blocks);
    if (dt->ix != NULL) {
        sh_index_stats(dt->ix, &st);
        printf("lost\t%zu\n", (size_t) st.entries - with_doc);
        printf("check\tDAMAGED: %zu documents lost, %zu restorable\n",
               (size_t) st.entries - with_doc, with_doc);
    } else {
        printf("check\tDAMAGED: the index region is lost; %zu documents "
               "restorable from their records\n", dt->records - dt->stale);
    }
    return 1;
}

/*
 * `check` of a snapshot in the store's format (sh_store_file.h, the
 * module's zones since format 4): what its image holds and what damage
 * cost, without the zone's secret (the key hashes are not needed).
 */
static int
index_check_store(const char *file, const unsigned char *data, size_t len)
{
    const unsigned char *meta, *image;
    size_t               meta_len, image_len;
    sh_image_summary_t   s;
    char                 err[512];

    printf("format\tnginx module (store)\n");
    if (sh_store_file_parse(data, len, &meta, &meta_len, &image, &image_len,
                            err, sizeof(err)) != 0
        || sh_image_inspect(image, image_len, &s, err, sizeof(err)) != 0)
    {
        printf("check\tFAILED: %s\n", err);
        return 1;
    }
    printf("version\t4\nextraction\t%08x\ncapacity\t%u\nentries\t%u\n"
           "seed_digest\t%016llx\ndocuments\t%u\nwith_key_text\t%llu\n"
           "frames\t%u\n", s.extraction, s.capacity, s.entries,
           (unsigned long long) s.seed_digest, s.documents,
           (unsigned long long) s.texts, s.frames);
    if (s.whole) {
        printf("check\tOK\n");
        return 0;
    }
    printf("damaged_frames\t%u of %u\nlost\t%u\n", s.damaged, s.frames,
           s.entries > s.documents ? s.entries - s.documents : 0);
    printf("check\tDAMAGED: %u documents lost, %u restorable\n",
           s.entries > s.documents ? s.entries - s.documents : 0,
           s.documents);
    return 1;
}

static int
index_check(int argc, char **argv)
{
    sh_index_stats_t st;
    count_arg_t      c;
    docs_t           dt;
    char             err[512];
    int              rc = 1;

    if (argc != 2 || cli_is_help(argv[1])) {
        usage(argc == 2 ? stdout : stderr);
        return argc == 2 ? 0 : 2;
    }

    {
        const unsigned char *data;
        size_t               len;

        if (sh_snapshot_map(argv[1], &data, &len, err, sizeof(err)) == 0) {
            if (sh_store_file_is(data, len)) {
                rc = index_check_store(argv[1], data, len);
                sh_snapshot_unmap(data, len);
                return rc;
            }
            sh_snapshot_unmap(data, len);
        }
    }

    /* the load verifies the checksums and runs sh_index_check() */
    if (docs_load(&dt, argv[1], err, sizeof(err)) != 0) {
        if (dt.format != NULL) {
            printf("format\t%s\n", dt.format);
        }
        printf("check\tFAILED: %s\n", err);
        goto done;
    }
    printf("version\t%u\nextraction\t%08x\n", dt.info.version,
           dt.info.extraction);
    c.dt = &dt;
    c.with_doc = 0;
    if (dt.ix != NULL) {
        sh_index_stats(dt.ix, &st);
        printf("capacity\t%u\nentries\t%u\nseed_digest\t%016llx\n",
               st.capacity, st.entries,
               (unsigned long long) sh_index_seed_digest(dt.ix));
        sh_index_foreach(dt.ix, count_visit, &c);
    } else {
        c.with_doc = dt.records - dt.stale;
    }
    printf("format\t%s\ndocuments\t%zu\nstale\t%zu\n", dt.format, c.with_doc,
           dt.stale);
    if (report_damage(&dt, c.with_doc) == 0) {
        printf("check\tOK\n");
        rc = 0;
    }

done:
    docs_free(&dt);
    return rc;
}

/* A path or key on one line: control bytes and '\' as \xHH. */
static void
print_doc(const char *s, uint32_t len)
{
    uint32_t i;

    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char) s[i];

        if (ch < 0x20 || ch == 0x7f || ch == '\\') {
            printf("\\x%02x", ch);
        } else {
            putchar(ch);
        }
    }
}

static int
dump_visit(void *arg, uint32_t ref, uint64_t hash)
{
    const docs_t *dt = arg;

    printf("%016llx\t%u\t", (unsigned long long) hash, ref);
    if (dt->doc[ref] != NULL) {
        print_doc(dt->doc[ref], dt->len[ref]);
    } else {
        putchar('-');
    }
    putchar('\n');
    return 0;
}

/* dump of a store-format snapshot: its path table (keys or ids) */
static int
dump_paths_visit(void *arg, uint32_t ref, uint64_t hash)
{
    const paths_t *p = arg;

    printf("%016llx\t%u\t", (unsigned long long) hash, ref);
    if (ref < p->count && p->off[ref] != UINT32_MAX) {
        print_doc(p->str + p->off[ref],
                  (uint32_t) strlen(p->str + p->off[ref]));
    } else {
        putchar('-');
    }
    putchar('\n');
    return 0;
}

static int
index_dump(int argc, char **argv)
{
    docs_t   dt;
    char     err[512];
    uint32_t ref;
    int      rc = 1;

    if (argc != 2 || cli_is_help(argv[1])) {
        usage(argc == 2 ? stdout : stderr);
        return argc == 2 ? 0 : 2;
    }
    {
        void       *mem = NULL;
        paths_t     p;
        sh_index_t *ix;
        int         handled;

        memset(&p, 0, sizeof(p));
        ix = load_store_index(argv[1], NULL, &mem, &p, &handled);
        if (handled) {
            if (ix == NULL) {
                return 1;
            }
            sh_index_foreach(ix, dump_paths_visit, &p);
            free(p.own);
            free(mem);
            return fflush(stdout) == 0 ? 0 : 1;
        }
    }
    if (docs_load(&dt, argv[1], err, sizeof(err)) != 0) {
        cli_error("%s: %s", argv[1], err);
        goto done;
    }
    if (dt.ix != NULL) {
        sh_index_foreach(dt.ix, dump_visit, &dt);
    } else {
        /* no index: what the records still say, by ref */
        cli_error("%s: the index region is damaged; listing the records",
                  argv[1]);
        for (ref = 0; ref < dt.capacity; ref++) {
            if (dt.doc[ref] != NULL) {
                printf("-\t%u\t", ref);
                print_doc(dt.doc[ref], dt.len[ref]);
                putchar('\n');
            }
        }
    }
    rc = fflush(stdout) == 0 ? 0 : 1;

done:
    docs_free(&dt);
    return rc;
}

static int
rule_print(const sh_dust_rule_info_t *r, void *ctx)
{
    unsigned *n = ctx;

    printf("%s\t%s\t%s%s%s%s\t%s\t%u\t%u\t%.4f\n",
           r->host[0] ? r->host : "-", r->pattern, sh_dust_kind_name(r->kind),
           r->arg[0] ? "(" : "", r->arg, r->arg[0] ? ")" : "",
           sh_dust_state_name(r->state), r->support, r->against, r->lower);
    (*n)++;
    return 0;
}

static int
index_rules(int argc, char **argv)
{
    const unsigned char *data, *rules;
    size_t               len, rules_len;
    char                 err[512];
    unsigned             n = 0;
    int                  rc;

    if (argc != 2 || cli_is_help(argv[1])) {
        usage(argc == 2 ? stdout : stderr);
        return argc == 2 ? 0 : 2;
    }
    if (sh_snapshot_map(argv[1], &data, &len, err, sizeof(err)) != 0) {
        cli_error("%s: %s", argv[1], err);
        return 1;
    }
    if (!sh_store_file_is(data, len)) {
        sh_snapshot_unmap(data, len);
        cli_error("%s: not a snapshot of the store format", argv[1]);
        return 1;
    }
    rc = sh_store_file_tail_get(data, len, &rules, &rules_len);
    if (rc == 0) {
        sh_snapshot_unmap(data, len);
        printf("# no DUST rules (the zone had no dust=)\n");
        return 0;
    }
    if (rc < 0
        || sh_dust_image_rules(rules, rules_len, 0.0, rule_print, &n, err,
                               sizeof(err)) != 0)
    {
        sh_snapshot_unmap(data, len);
        cli_error("%s: %s", argv[1], rc < 0 ? "the DUST rules are damaged"
                                            : err);
        return 1;
    }
    sh_snapshot_unmap(data, len);
    return fflush(stdout) == 0 ? 0 : 1;
}

int
cmd_index(int argc, char **argv)
{
    if (argc < 2 || cli_is_help(argv[1])) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "build") == 0) {
        return index_build(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "query") == 0) {
        return index_query(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "stats") == 0) {
        return index_stats(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "check") == 0) {
        return index_check(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "dump") == 0) {
        return index_dump(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "rules") == 0) {
        return index_rules(argc - 1, argv + 1);
    }
    cli_error("index: unknown action '%s' (build, query, stats, check, "
              "dump or rules)", argv[1]);
    return 2;
}
