/*
 * fuzz_seeds.c -- the seed corpora, made at run time from the test
 * fixtures and from the library itself (a snapshot, an IDF table or a
 * calibration table is best made by the code that writes them).
 *
 *   fuzz_seeds OUTDIR FIXTURE_DIR...
 *       writes OUTDIR/<target>/seed-* for every target: the fixture pages
 *       under several configurations, charset labels, byte order marks and
 *       cuttings; snapshots of indexes in many states; IDF tables built
 *       from the fixtures; calibration tables; index workloads
 *   fuzz_seeds --minimal OUTDIR
 *       a few small seeds per target, no fixtures needed: what
 *       fuzz/seeds/ holds for the regression test to replay
 *
 * Each seed is an input in its harness's format (see fuzz/fuzz_*.c): the
 * harnesses' own tables are used through the same files, so a seed and its
 * harness cannot disagree on what a byte means.
 */
#define FUZZ_REPLAY 1

#include <dirent.h>
#include <errno.h>
#include <iconv.h>
#include <sys/stat.h>

#include "fuzz_doc.c"
#include "fuzz_image.c"
#include "fuzz_index.c"

#include "sh_idf.h"
#include "sh_index.h"
#include "sh_snapshot.h"
#include "sh_volatility.h"

#define SEED_MAX    (64 * 1024)

static const char *seeds_out;
static unsigned    seeds_count;

static void
seeds_write(const char *target, const char *name, const void *head,
            size_t head_len, const void *body, size_t body_len)
{
    char  dir[4096], path[4096 + 256];
    FILE *f;

    snprintf(dir, sizeof(dir), "%s/%s", seeds_out, target);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    if (head_len + body_len > SEED_MAX) {
        body_len = SEED_MAX - head_len;
    }
    snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL
        || (head_len > 0 && fwrite(head, 1, head_len, f) != head_len)
        || (body_len > 0 && fwrite(body, 1, body_len, f) != body_len)
        || fclose(f) != 0)
    {
        fprintf(stderr, "fuzz_seeds: %s: cannot write\n", path);
        exit(1);
    }
    seeds_count++;
}

/* ---- doc ---------------------------------------------------------------- */

static unsigned
seeds_label(const char *name)
{
    unsigned i;

    for (i = 0; i < FDOC_NLABELS; i++) {
        if (name == NULL ? fdoc_labels[i] == NULL
                         : fdoc_labels[i] != NULL
                           && strcmp(fdoc_labels[i], name) == 0)
        {
            return i;
        }
    }
    fprintf(stderr, "fuzz_seeds: no label %s in fuzz_doc.c\n", name);
    exit(1);
}

static void
seeds_doc(const char *name, unsigned cfg, const char *label, unsigned cut,
          const void *body, size_t len)
{
    uint8_t head[4];

    head[0] = (uint8_t) cfg;
    head[1] = (uint8_t) seeds_label(label);
    head[2] = (uint8_t) cut;
    head[3] = (uint8_t) (cfg * 37 + cut);
    seeds_write("doc", name, head, sizeof(head), body, len);
}

/* Convert UTF-8 to `to` with iconv (for the UTF-16 seeds). */
static char *
seeds_iconv(const char *to, const char *in, size_t len, size_t *out_len)
{
    iconv_t cd = iconv_open(to, "UTF-8");
    size_t  cap = len * 4 + 16, left = cap;
    char   *out = malloc(cap), *o = out, *i = (char *) in;

    if (cd == (iconv_t) -1 || out == NULL) {
        fprintf(stderr, "fuzz_seeds: iconv to %s\n", to);
        exit(1);
    }
    while (len > 0 && iconv(cd, &i, &len, &o, &left) == (size_t) -1) {
        i++;                            /* skip what does not convert */
        len--;
    }
    iconv_close(cd);
    *out_len = cap - left;
    return out;
}

/* The charset a fixture is written in, from its name. */
static const char *
seeds_charset_of(const char *file)
{
    if (strstr(file, ".utf8.") != NULL) {
        return "utf-8";
    }
    if (strstr(file, "cp1251") != NULL) {
        return "windows-1251";
    }
    if (strstr(file, "latin1") != NULL) {
        return "iso-8859-1";
    }
    if (strstr(file, "sjis") != NULL) {
        return "shift_jis";
    }
    return "utf-8";
}

static void
seeds_doc_fixture(const char *file, const uint8_t *buf, size_t len,
                  unsigned k)
{
    static const uint8_t bom8[] = { 0xEF, 0xBB, 0xBF };
    const char *cs = seeds_charset_of(file);
    const char *base = strrchr(file, '/');
    char        name[512], *u16, *with_bom;
    size_t      n16;
    uint8_t     bom[2];

    base = base ? base + 1 : file;
    /* Whole, then cut every way, under every configuration in turn. */
    snprintf(name, sizeof(name), "%s-plain", base);
    seeds_doc(name, 0, NULL, 0, buf, len);
    snprintf(name, sizeof(name), "%s-label", base);
    seeds_doc(name, k % FDOC_NCFG, cs, 0x80 | (k % 6), buf, len);
    snprintf(name, sizeof(name), "%s-cfg%u", base, (k + 3) % FDOC_NCFG);
    seeds_doc(name, (k + 3) % FDOC_NCFG, NULL, 0x80 | ((k + 1) % 6), buf,
              len);
    if (strcmp(cs, "utf-8") != 0) {
        /* The wrong label: the page decodes to something else. */
        snprintf(name, sizeof(name), "%s-mislabel", base);
        seeds_doc(name, 0, "utf-8", 2, buf, len);
        return;
    }
    /* UTF-8 with a byte order mark, and UTF-16 both ways. */
    with_bom = malloc(len + 3);
    memcpy(with_bom, bom8, 3);
    memcpy(with_bom + 3, buf, len);
    snprintf(name, sizeof(name), "%s-bom8", base);
    seeds_doc(name, 0, "windows-1251", 0x80 | 3, with_bom, len + 3);
    free(with_bom);

    u16 = seeds_iconv("UTF-16LE", (const char *) buf, len, &n16);
    with_bom = malloc(n16 + 2);
    bom[0] = 0xFF;
    bom[1] = 0xFE;
    memcpy(with_bom, bom, 2);
    memcpy(with_bom + 2, u16, n16);
    snprintf(name, sizeof(name), "%s-utf16le-bom", base);
    seeds_doc(name, 2, NULL, 0x80 | 2, with_bom, n16 + 2);
    snprintf(name, sizeof(name), "%s-utf16le-label", base);
    seeds_doc(name, 6, "utf-16le", 1, u16, n16);
    free(with_bom);
    free(u16);

    u16 = seeds_iconv("UTF-16BE", (const char *) buf, len, &n16);
    with_bom = malloc(n16 + 2);
    bom[0] = 0xFE;
    bom[1] = 0xFF;
    memcpy(with_bom, bom, 2);
    memcpy(with_bom + 2, u16, n16);
    snprintf(name, sizeof(name), "%s-utf16be-bom", base);
    seeds_doc(name, 5, NULL, 4, with_bom, n16 + 2);
    free(with_bom);
    free(u16);
}

/* Small pages for what the fixtures lack. */
static const char *const seeds_snippets[] = {
    "<title>T</title><p>a<b>b</b>c<br>d<script>x y z</script><style>s</style>"
    "<noscript>n</noscript><template>t</template><svg>v</svg><math>m</math>"
    "<p>&amp;&lt;&eacute;&#x4e2d;&#20013;&nbsp;end",
    "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=koi8-r\">"
    "<p>\xf0\xd2\xc9\xd7\xc5\xd4 \xcd\xc9\xd2",
    "<meta charset=utf-16><p>readable as ASCII, so UTF-8",
    "<p>Copyright 2024 ACME. 12345 67 x xx xxx the THE The</p><td>1<td>2",
    "<p>\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82"
    "\xad\xe3\x82\xb9\xe3\x83\x88 \xd0\x9c\xd0\x9e\xd0\xa1\xd0\x9a\xd0\x92"
    "\xd0\x90 Stra\xc3\x9f" "e \xce\xa3\xce\x9f\xce\xa6\xce\x8a\xce\x91",
    "<p>bad \xff\xfe\xc3 bytes \xe2\x82 and \xf0\x9f\x98\x80 ok",
    "<!DOCTYPE html><html><body><p>one two three<!DOCTYPE html>four five"
    "</p></body></html>\nafter the end",
    "<p>word<!-- comment <p> inside -->word<![CDATA[x]]><?pi x?>",
    "<body class=sidebar><header><a href=/>site</a><nav class=\"main-nav\">"
    "<a href=/a>one</a> <a href=#b>two</a></nav></header><main><article>"
    "<header>title</header><p>text <span class=share>share</span> more "
    "<a href=x>link</a></p><aside role=complementary><article>rel</article>"
    "</aside></article></main><div role=\"search navigation\">q</div>"
    "<footer id=site-footer>foot</footer>",
};

/* ---- snapshot ----------------------------------------------------------- */

static uint8_t *
seeds_slurp(const char *path, size_t *len)
{
    uint8_t *b = fuzz_read_file(path, len);

    if (b == NULL) {
        fprintf(stderr, "fuzz_seeds: cannot read %s\n", path);
        exit(1);
    }
    return b;
}

/* An index of `cap` documents in one of several states, saved. */
static void
seeds_snapshot(unsigned cap, unsigned t, unsigned state, const char *user)
{
    size_t      size = sh_index_region_size(cap), len;
    void       *mem;
    sh_index_t *ix;
    char        err[256], path[256], name[64];
    uint64_t    rng = cap * 131 + state, h;
    uint8_t    *file, flags;
    unsigned    i, n;
    uint32_t    ref;

    if (posix_memalign(&mem, 64, size) != 0) {
        exit(1);
    }
    ix = sh_index_init(mem, size, t, 0x5eedull, err, sizeof(err));
    if (ix == NULL) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        exit(1);
    }
    n = state == 0 ? 0 : state == 1 ? cap / 2 + 1 : cap * 2;
    for (i = 0; i < n; i++) {
        h = fuzz_rng(&rng);
        if (state == 3) {
            h = UINT64_MAX - (h % 8);   /* crowding the top: the spill */
        }
        ref = sh_index_insert(ix, h, NULL);
        if (state == 2 && i % 3 == 0) {
            sh_index_remove(ix, ref);
        }
        if (state == 2 && i % 5 == 0) {
            sh_index_update(ix, (ref + 1) % cap, h ^ 7);
            sh_index_touch(ix, (ref + 2) % cap);
        }
    }
    fuzz_tmp_path("seed.snap", path, sizeof(path));
    if (sh_snapshot_save(path, ix, "seed", user, strlen(user), err,
                         sizeof(err)) != 0)
    {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        exit(1);
    }
    file = seeds_slurp(path, &len);
    unlink(path);
    /* As written, and with the checksums and sizes fixed up by the
     * harness, so that mutations reach the index checks. */
    flags = 0x00;
    snprintf(name, sizeof(name), "cap%u-t%u-s%u-raw", cap, t, state);
    seeds_write("snapshot", name, &flags, 1, file, len);
    flags = 0x07;
    snprintf(name, sizeof(name), "cap%u-t%u-s%u-fixed", cap, t, state);
    seeds_write("snapshot", name, &flags, 1, file, len);
    free(file);
    free(mem);
}

/* ---- idf ---------------------------------------------------------------- */

static sh_idf_builder_t *seeds_idf_b;
static sh_config_t      *seeds_idf_cfg;

static void
seeds_idf_add(const uint8_t *page, size_t len)
{
    sh_doc_t    *d = sh_doc_new(seeds_idf_cfg, NULL);
    sh_result_t  r;
    fdoc_words_t w;

    sh_doc_feed(d, page, len);
    sh_doc_finish(d, &r);
    w.n = 0;
    sh_doc_foreach_feature(d, fdoc_collect_words, &w);
    sh_idf_builder_add(seeds_idf_b, w.words, w.n);
    sh_doc_free(d);
}

static void
seeds_idf_save(const char *name)
{
    char     path[256], err[256], nm[64];
    uint8_t *file, flags;
    size_t   len;

    fuzz_tmp_path("seed.idf", path, sizeof(path));
    if (sh_idf_builder_save(seeds_idf_b, path,
                            sh_config_seed_digest(seeds_idf_cfg),
                            sh_config_words_version(seeds_idf_cfg), err,
                            sizeof(err)) != 0)
    {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        exit(1);
    }
    file = seeds_slurp(path, &len);
    unlink(path);
    flags = 0x04;                       /* accept the file's own key */
    snprintf(nm, sizeof(nm), "%s", name);
    seeds_write("idf", nm, &flags, 1, file, len);
    flags = 0x07;
    snprintf(nm, sizeof(nm), "%s-fixed", name);
    seeds_write("idf", nm, &flags, 1, file, len);
    free(file);
}

static void
seeds_idf_builder_input(void)
{
    /* Builder mode: five documents of word ids, sharing some. */
    uint8_t  b[1 + 5 * (1 + 2 * 8)], *p = b;
    unsigned d, i, id;

    *p++ = 0x08;
    for (d = 0; d < 5; d++) {
        *p++ = 8;
        for (i = 0; i < 8; i++) {
            id = (d * 3 + i * 7) % 23;
            *p++ = (uint8_t) id;
            *p++ = 0;
        }
    }
    seeds_write("idf", "builder", NULL, 0, b, (size_t) (p - b));
}

/* ---- volatility ---------------------------------------------------------- */

static void
seeds_volatility_file(const char *name, const sh_volatility_t *v)
{
    char     path[256], err[256];
    uint8_t *file;
    size_t   len;

    fuzz_tmp_path("seed.vol", path, sizeof(path));
    if (sh_volatility_save(v, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        exit(1);
    }
    file = seeds_slurp(path, &len);
    unlink(path);
    seeds_write("volatility", name, NULL, 0, file, len);
    free(file);
}

static void
seeds_volatility(int minimal)
{
    static const float c[] = { 0.0f, 0.05f, 0.2f, 0.8f };
    static const float s[] = { 1.0f, 0.5f, 0.1f, 0.001f };
    static const uint32_t k[SH_VOL_NRECALL] = { 1, 2, 4, 8, 16, 32, 64, 128 };
    uint8_t          samples[1 + 400 * sizeof(float)];
    sh_volatility_t *v;
    uint64_t         rng = 9;
    unsigned         i;
    char             err[256];

    v = sh_volatility_from_points(c, s, 4, err, sizeof(err));
    sh_volatility_set_k(v, 0, 3, 10, k);
    sh_volatility_set_k(v, 1, 1, 4, k);
    seeds_volatility_file("small", v);
    sh_volatility_free(v);

    samples[0] = 0xFF;
    for (i = 0; i < 400; i++) {
        float y = (float) (fuzz_rng(&rng) % 10000) / 20000.0f;

        memcpy(samples + 1 + i * sizeof(float), &y, sizeof(y));
    }
    seeds_write("volatility", "samples", NULL, 0, samples, sizeof(samples));
    if (!minimal) {
        seeds_volatility_file("default", sh_volatility_default());
    }
}

/* ---- index --------------------------------------------------------------- */

static void
seeds_index(unsigned cap, unsigned t, size_t len, uint64_t seed)
{
    uint8_t *b = malloc(len);
    char     name[64];
    size_t   i;

    /* A capacity (two bytes, the top bit selecting the large range), t,
     * then random operations: every byte string is a workload. */
    b[0] = (uint8_t) cap;
    b[1] = (uint8_t) (cap >> 8);
    b[2] = (uint8_t) (t ? 0x80 | t : 0);
    for (i = 3; i < len; i++) {
        b[i] = (uint8_t) fuzz_rng(&seed);
    }
    if (len > 10) {
        b[len - 2] = 0xFF;              /* the baselines, once */
    }
    snprintf(name, sizeof(name), "cap%u-t%u-n%zu", cap & 0x7FFF, t, len);
    seeds_write("index", name, NULL, 0, b, len);
    free(b);
}

/* ---- image --------------------------------------------------------------- */

/*
 * The image of a store of the harness's geometry (fuzz_image.c) holding
 * `n` documents of which every `gap`th was removed again (free refs in the
 * records), with keys long enough to wrap the key ring when n is large;
 * written with flag bytes for each way the harness loads it, and once with
 * a damaged record frame.
 */
static void
seeds_image(unsigned n, unsigned gap)
{
    void            *mem;
    sh_store_t      *st;
    sh_store_doc_t   d;
    sh_image_saver_t sv;
    unsigned char   *buf, *img = NULL;
    size_t           len = 0, at, last = 0;
    long             got;
    uint32_t         ref;
    unsigned         i;
    char             key[96], name[64];
    uint8_t          head[2];
    int              klen;

    st = fimg_store(&mem, FIMG_CAP, FIMG_TEXT);
    for (i = 0; i < n; i++) {
        klen = snprintf(key, sizeof(key), "https://seed.example/%u/%.*s", i,
                        (int) (i % 40), "abcdefghijklmnopqrstuvwxyz0123456789"
                        "ABCD");
        memset(&d, 0, sizeof(d));
        d.digest = i;
        d.time = 1700000000u + i;
        ref = sh_store_put(st, key, (size_t) klen,
                           sh_store_keyhash(st, key, (size_t) klen),
                           (uint64_t) i * 0x9e3779b97f4a7c15ull, &d, NULL);
        FUZZ_CHECK(ref != SH_NOREF);
        if (gap && i % gap == 0) {
            FUZZ_CHECK(sh_store_remove(st, ref) == 0);
        }
    }
    buf = malloc(SH_IMAGE_BUF_MIN);
    sh_image_save_begin(&sv, st, buf, SH_IMAGE_BUF_MIN);
    while ((got = sh_image_save_step(&sv)) > 0) {
        img = realloc(img, len + (size_t) got);
        memcpy(img + len, buf, (size_t) got);
        len += (size_t) got;
    }
    FUZZ_CHECK(got == 0 && len > 0);
    free(buf);
    free(mem);

    /* the harness's idea of the layout is the library's: frames that
       parse to the end, the last one the trailer */
    for (at = 0; at < len; at += FIMG_FRAME + fimg_payload(img + at)) {
        FUZZ_CHECK(fimg_payload(img + at) != 0);
        last = at;
    }
    FUZZ_CHECK(at == len && fimg_payload(img + last) == FIMG_TRAILER);

    head[1] = 7;
    head[0] = 0x03;                     /* sealed, in place */
    snprintf(name, sizeof(name), "n%u-gap%u-inplace", n, gap);
    seeds_write("image", name, head, 2, img, len);
    head[0] = 0x01;                     /* sealed, another geometry */
    snprintf(name, sizeof(name), "n%u-gap%u-replay", n, gap);
    seeds_write("image", name, head, 2, img, len);
    head[0] = 0x06;                     /* as it is, unkeyed */
    snprintf(name, sizeof(name), "n%u-gap%u-unkeyed", n, gap);
    seeds_write("image", name, head, 2, img, len);
    if (len > 100) {
        img[FIMG_FRAME + 9] ^= 0x40;    /* a record, its frame's sum kept */
        head[0] = 0x02;
        snprintf(name, sizeof(name), "n%u-gap%u-damaged", n, gap);
        seeds_write("image", name, head, 2, img, len);
    }
    free(img);
}

/* ---- main ----------------------------------------------------------------- */

static void
seeds_fixture_dir(const char *dir, unsigned *k)
{
    DIR           *d = opendir(dir);
    struct dirent *e;
    char           path[4096];
    uint8_t       *buf;
    size_t         len;

    if (d == NULL) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        buf = fuzz_read_file(path, &len);
        if (buf == NULL) {
            continue;                   /* a directory */
        }
        seeds_doc_fixture(path, buf, len, (*k)++);
        seeds_idf_add(buf, len);
        free(buf);
    }
    closedir(d);
}

int
main(int argc, char **argv)
{
    int          minimal = argc > 1 && strcmp(argv[1], "--minimal") == 0;
    int          first = minimal ? 2 : 1, i;
    unsigned     k = 0, cap, t, s;
    sh_options_t o;
    char         err[256], name[32];

    /* The harnesses are here for their tables, not to run. */
    (void) fdoc_one;
    (void) fix_init;
    (void) fix_one;
    (void) fimg_init;
    (void) fimg_one;
    if (argc <= first || (!minimal && argc < 3)) {
        fprintf(stderr, "usage: fuzz_seeds OUTDIR FIXTURE_DIR...\n"
                        "       fuzz_seeds --minimal OUTDIR\n");
        return 2;
    }
    seeds_out = argv[first];
    if (mkdir(seeds_out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", seeds_out, strerror(errno));
        return 1;
    }
    fdoc_init();
    sh_options_init(&o);
    seeds_idf_cfg = sh_config_new(&o, err, sizeof(err));
    seeds_idf_b = sh_idf_builder_new();

    for (i = 0; i < (int) (sizeof(seeds_snippets) / sizeof(char *)); i++) {
        snprintf(name, sizeof(name), "snippet%d", i);
        seeds_doc(name, (unsigned) i % FDOC_NCFG, NULL,
                  0x80 | (unsigned) i % 6, seeds_snippets[i],
                  strlen(seeds_snippets[i]));
        seeds_idf_add((const uint8_t *) seeds_snippets[i],
                      strlen(seeds_snippets[i]));
    }
    if (minimal) {
        seeds_idf_save("snippets");
        seeds_snapshot(3, 0, 2, "u");
        seeds_volatility(1);
        seeds_index(5, 0, 96, 1);
        seeds_index(0x8000 | 200, 12, 160, 2);
        seeds_image(3, 0);
        seeds_image(40, 7);
    } else {
        for (i = first + 1; i < argc; i++) {
            seeds_fixture_dir(argv[i], &k);
        }
        seeds_idf_save("fixtures");
        for (cap = 1; cap <= 256; cap = cap * 4 + 1) {
            for (s = 0; s < 4; s++) {
                seeds_snapshot(cap, s == 1 ? 1 : 0, s, s ? "https://x/" : "");
            }
        }
        seeds_snapshot(64, 12, 2, "t12");
        seeds_volatility(0);
        seeds_image(0, 0);
        seeds_image(3, 0);
        seeds_image(40, 7);
        seeds_image(280, 5);
        seeds_image(900, 0);
        for (t = 0; t <= FIX_T_MAX; t += 6) {
            seeds_index(1 + t, t, 200, t);
            seeds_index(0x8000 | (100 + 40 * t), t, 600, t + 1);
        }
    }
    seeds_idf_builder_input();
    sh_idf_builder_free(seeds_idf_b);
    sh_config_free(seeds_idf_cfg);
    printf("fuzz_seeds: %u seeds in %s\n", seeds_count, seeds_out);
    return 0;
}
