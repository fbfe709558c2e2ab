/*
 * fuzz_dust.c -- the DUST learner (sh_dust.h) on any sequence of URLs,
 * and on any image and rule record.
 *
 * Input: lines.  The first byte of a line picks what happens to the rest
 * of it (the URL, or bytes):
 *   'o' + byte + URL   observe URL as the document that byte names (so
 *                      that variants of one page agree and others do not)
 *   'p' + URL          predict URL
 *   's' + URL          same path as the previous line's URL?
 *   'n' + URL          pin every rule the URL's first atoms could name on
 *                      its host (kinds by the URL's length), then clear
 *   'i' + bytes        load bytes as an image (a damaged one is refused)
 *   'r' + bytes        import bytes as a rule record
 *   other              observe the whole line as document 1
 * After the lines: save the image, load it into a second learner, and
 * compare their rules.
 *
 * sh_dust.h promises that a refused URL is -1 and nothing else, that a
 * prediction names a document (never 0), that a damaged image or record
 * changes nothing, and bounds on everything; so:
 *   - predict returns -1, 0 or 1, and 1 with a non-zero rep and rules named;
 *   - same_path is symmetric, and 1 for a URL with itself unless refused;
 *   - the stats stay within the tables (hosts, candidates, active);
 *   - an image saved loads back into a learner of the same secret with the
 *     same rules in the same states and counts, and a record exported
 *     imports back unchanged.
 */
#include "fuzz_util.h"

#include "sh_dust.h"
#include "sh_site.h"

#define FDUST_SECRET    "fuzz dust secret"
#define FDUST_MAXRULES  4096

typedef struct {
    void      *mem;
    size_t     size;
    sh_dust_t *d;
} fdust_t;

static sh_dust_opts_t  fdust_opts;

static void
fdust_init(void)
{
    sh_dust_opts_init(&fdust_opts);
    fdust_opts.hosts = 64;
    fdust_opts.candidates = 512;
    fdust_opts.evidence_slots = 4096;
    fdust_opts.canonical_slots = 4096;
    fdust_opts.min_evidence = 2;        /* rules on after a few pairs */
    fdust_opts.min_precision = 0.5;
    fdust_opts.z = 0.5;
    /* which hosts are one site: a host alias is learned between those */
    (void) sh_site_load(NULL, NULL, 0);
}

static int
fdust_make(fdust_t *f)
{
    char err[256];

    f->size = sh_dust_region_size(fdust_opts.hosts, fdust_opts.candidates,
                                  fdust_opts.evidence_slots,
                                  fdust_opts.canonical_slots);
    f->mem = calloc(1, f->size);
    if (f->mem == NULL) {
        return -1;
    }
    f->d = sh_dust_init(f->mem, f->size, FDUST_SECRET, strlen(FDUST_SECRET),
                        &fdust_opts, err, sizeof(err));
    FUZZ_CHECK(f->d != NULL);
    return 0;
}

/* The rules of a learner, all of them, in table order. */
typedef struct {
    sh_dust_rule_info_t r[FDUST_MAXRULES];
    size_t              n;
} fdust_rules_t;

static int
fdust_collect(const sh_dust_rule_info_t *r, void *ctx)
{
    fdust_rules_t *rs = ctx;

    if (rs->n < FDUST_MAXRULES) {
        rs->r[rs->n++] = *r;
    }
    return 0;
}

static fdust_rules_t fdust_a, fdust_b;

static int
fdust_same_rule(const sh_dust_rule_info_t *x, const sh_dust_rule_info_t *y)
{
    return x->host_hash == y->host_hash && x->pattern_hash == y->pattern_hash
           && x->arg_hash == y->arg_hash && x->kind == y->kind;
}

static void
fdust_check_stats(const sh_dust_t *d)
{
    sh_dust_stats_t st;

    sh_dust_stats(d, &st);
    FUZZ_CHECK(st.hosts <= fdust_opts.hosts * 2);
    FUZZ_CHECK(st.candidates <= fdust_opts.candidates * 2);
    FUZZ_CHECK(st.active <= st.candidates);
    FUZZ_CHECK(st.saved <= st.predicted);
}

/* Save, load into a second learner: the same rules, states and counts;
 * one record exported and imported back changes nothing. */
static void
fdust_roundtrip(sh_dust_t *d)
{
    fdust_t        g;
    size_t         len, i, j;
    unsigned char *img, rec[SH_DUST_RULE_REC_LEN];
    char           err[256];

    len = sh_dust_image_size(d);
    img = malloc(len);
    if (img == NULL) {
        return;
    }
    FUZZ_CHECK(sh_dust_image_save(d, img, len) == len);
    if (fdust_make(&g) != 0) {
        free(img);
        return;
    }
    FUZZ_CHECK(sh_dust_image_load(g.d, img, len, err, sizeof(err)) == 0);

    fdust_a.n = fdust_b.n = 0;
    sh_dust_foreach_rule(d, 0, 1, fdust_collect, &fdust_a);
    sh_dust_foreach_rule(g.d, 0, 1, fdust_collect, &fdust_b);
    for (i = 0; i < fdust_a.n; i++) {
        for (j = 0; j < fdust_b.n; j++) {
            if (fdust_same_rule(&fdust_a.r[i], &fdust_b.r[j])) {
                break;
            }
        }
        /* a table set full of pins may keep a rule out: then it is
         * missing, never different */
        if (j == fdust_b.n) {
            continue;
        }
        FUZZ_CHECK(fdust_a.r[i].support == fdust_b.r[j].support);
        FUZZ_CHECK(fdust_a.r[i].against == fdust_b.r[j].against);
        FUZZ_CHECK(fdust_a.r[i].state == fdust_b.r[j].state);
    }
    if (fdust_a.n > 0) {
        sh_dust_rule_info_t before, after;

        before = fdust_a.r[0];
        if (sh_dust_export_rule(d, &before, rec) == 0) {
            FUZZ_CHECK(sh_dust_import_rule(d, rec, sizeof(rec), 1) == 0);
            fdust_a.n = 0;
            sh_dust_foreach_rule(d, 0, 1, fdust_collect, &fdust_a);
            for (i = 0; i < fdust_a.n; i++) {
                if (fdust_same_rule(&fdust_a.r[i], &before)) {
                    after = fdust_a.r[i];
                    FUZZ_CHECK(after.support == before.support);
                    FUZZ_CHECK(after.against == before.against);
                }
            }
        }
    }
    free(g.mem);
    free(img);
}

static void
fdust_pin(sh_dust_t *d, const char *url, size_t len)
{
    char     host[128];
    size_t   i, n = 0;
    unsigned k;

    /* the host as text: after "://", up to '/' */
    for (i = 0; i + 3 <= len && memcmp(url + i, "://", 3) != 0; i++) {
        /* void */
    }
    for (i += 3; i < len && url[i] != '/' && n + 1 < sizeof(host); i++) {
        host[n++] = url[i];
    }
    host[n] = '\0';
    k = SH_DUST_DROP_PARAM + (unsigned) (len % SH_DUST_KIND_MAX);
    (void) sh_dust_pin(d, host, len / 2 % 3 == 0 ? NULL
                                : len / 2 % 3 == 1 ? "/doc/" : "/w/index.php",
                       (sh_dust_kind_t) k,
                       k == SH_DUST_DROP_PARAM ? "sid"
                       : k == SH_DUST_INDEX_FILE ? "index.html"
                       : k == SH_DUST_DROP_COMPONENT ? "print"
                       : k == SH_DUST_HOST_ALIAS ? "alias.example"
                       : k == SH_DUST_DROP_PATH_PARAM ? "jsessionid"
                       : k == SH_DUST_DROP_VALUE ? "lang=en"
                       : k == SH_DUST_PARAM_PATH ? "title=/wiki/" : NULL,
                       len % 3 ? SH_DUST_PIN_ON : SH_DUST_PIN_OFF, 1);
}

static int
fdust_one(const uint8_t *data, size_t size)
{
    fdust_t        f;
    sh_dust_why_t  why;
    const char    *p = (const char *) data, *end = p + size, *nl;
    const char    *prev = NULL;
    size_t         prevlen = 0, len;
    uint64_t       rep, now = 1;
    char           err[128], form[SH_DUST_FORM_LEN];
    size_t         n;
    int            rc, ab, ba;

    if (fdust_make(&f) != 0) {
        return 0;
    }
    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        len = (size_t) ((nl ? nl : end) - p);
        now++;
        if (len == 0) {
            p++;
            continue;
        }
        switch (p[0]) {
        case 'o':
            if (len >= 2) {
                rc = sh_dust_observe(f.d, p + 2, len - 2,
                                     1 + (uint8_t) p[1], now);
                FUZZ_CHECK(rc >= -1);
            }
            break;
        case 'p':
            rep = 0;
            rc = sh_dust_predict(f.d, p + 1, len - 1, now, &rep, &why);
            FUZZ_CHECK(rc >= -1 && rc <= 1);
            if (rc == 1) {
                FUZZ_CHECK(rep != 0);
                FUZZ_CHECK(why.nrules >= 1 && why.kinds != 0);
                FUZZ_CHECK(why.sample >= SH_DUST_SAMPLE_MIN
                           && why.sample <= 1.0);
                sh_dust_saved(f.d, &why);
                form[0] = '\0';
                n = sh_dust_fetched_form(f.d, p + 1, len - 1, rep, form,
                                         sizeof(form));
                FUZZ_CHECK(n < sizeof(form) && strlen(form) == n);
                if (n > 0) {
                    /* a URL the learner takes, fetched: no prediction */
                    FUZZ_CHECK(sh_dust_predict(f.d, form, n, now, &rep, NULL)
                               == 0);
                }
            }
            break;
        case 's':
            if (prev != NULL) {
                ab = sh_dust_same_path(f.d, prev, prevlen, p + 1, len - 1);
                ba = sh_dust_same_path(f.d, p + 1, len - 1, prev, prevlen);
                FUZZ_CHECK(ab == ba);
                ab = sh_dust_same_path(f.d, p + 1, len - 1, p + 1, len - 1);
                FUZZ_CHECK(ab == 1 || ab == -1);
            }
            break;
        case 'n':
            fdust_pin(f.d, p + 1, len - 1);
            break;
        case 'i':
            (void) sh_dust_image_load(f.d, p + 1, len - 1, err, sizeof(err));
            break;
        case 'r':
            (void) sh_dust_import_rule(f.d, (const unsigned char *) p + 1,
                                       len - 1, now);
            break;
        default:
            FUZZ_CHECK(sh_dust_observe(f.d, p, len, 1, now) >= -1);
        }
        prev = p + 1;
        prevlen = len - 1;
        p += len + (nl != NULL);
    }
    fdust_check_stats(f.d);
    fdust_roundtrip(f.d);
    free(f.mem);
    return 0;
}

FUZZ_ENTRY(fdust_init, fdust_one)
