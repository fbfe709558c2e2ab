/*
 * simhash entry [options] --node ID --key KEY --fp HEX [--digest HEX]
 *                         [--time MS] [--xv HEX] [--seq N]
 * simhash entry [options] --node ID --dust HEX [--time MS] [--seq N]
 * simhash entry [options] --verify
 *
 * The replication stream's entries (sh_stream.h) by hand: print one as the
 * field/value lines an XADD takes, with its MAC under the tier's secret
 * (--seed), or check the MAC of one read as such lines from standard input.
 * A DUST entry (--dust) carries a learned URL rule's record as it is given:
 * the MAC vouches for the sender, not for the record, which the receiving
 * node's learner checks on its own.  For operators who inject or audit
 * entries, and for the tests, which write entries as another node would.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "sh_stream.h"
#include "sh_version.h"

static const char synopsis[] =
"usage: simhash entry [options] --node ID --key KEY --fp HEX\n"
"                     [--digest HEX] [--time MS] [--xv HEX] [--seq N]\n"
"       simhash entry [options] --node ID --dust HEX [--time MS] [--seq N]\n"
"       simhash entry [options] --verify < ENTRY\n"
"       simhash entry [options] --batch < LINES\n"
"\n"
"Print a replication stream entry, one 'field value' line each, in the\n"
"order of an XADD, with its MAC under the key derived from --seed; or\n"
"read such lines and say whether the MAC verifies (exit 0) or not (1);\n"
"or, with --batch, print an entry for each 'NODE KEY FP' line read.\n"
"The extraction options below give the entry's extraction version (xv)\n"
"unless --xv sets it; the seed also gives its seed field.\n"
"\n";

static int
hex64(const char *s, uint64_t *v)
{
    char *end;

    *v = strtoull(s, &end, 16);
    return (*s == '\0' || *end != '\0') ? -1 : 0;
}

/* Read "field value" lines; the values stay in `lines`. */
static int
read_entry(sh_stream_entry_t *e, char **lines, size_t n)
{
    char   err[128];
    size_t i;

    sh_stream_entry_init(e);
    for (i = 0; i < n; i++) {
        char *sp = strchr(lines[i], ' ');

        if (sp == NULL) {
            cli_error("entry: line %zu has no value", i + 1);
            return -1;
        }
        if (sh_stream_entry_field(e, lines[i], (size_t) (sp - lines[i]),
                                  sp + 1, strlen(sp + 1), err,
                                  sizeof(err)) != 0)
        {
            cli_error("entry: %s", err);
            return -1;
        }
    }
    if (sh_stream_entry_check(e, err, sizeof(err)) != 0) {
        cli_error("entry: %s", err);
        return -1;
    }
    return 0;
}

static int
verify(sh_config_t *cfg, const unsigned char *key)
{
    sh_stream_entry_t e;
    char            **lines = NULL;
    size_t            n = 0;
    int               rc;

    if (cli_read_list("-", &lines, &n) != 0) {
        return 2;
    }
    rc = read_entry(&e, lines, n) != 0 ? 2 : !sh_stream_verify(&e, key);
    if (rc != 2) {
        printf("%s\n", rc == 0 ? "verified" : "MAC does not verify");
    }
    cli_free_list(lines, n);
    (void) cfg;
    return rc;
}

/* --time MS, or now */
static int
entry_time(const char *tm, uint64_t *out)
{
    struct timespec now;

    if (tm != NULL) {
        *out = strtoull(tm, NULL, 10);
        if (*out == 0) {
            cli_error("entry: a bad --time");
            return -1;
        }
        return 0;
    }
    clock_gettime(CLOCK_REALTIME, &now);
    *out = (uint64_t) now.tv_sec * 1000 + (uint64_t) now.tv_nsec / 1000000;
    return 0;
}

/* --seq N, or now in microseconds (as a node starts its sequence) */
static int
entry_seq(const char *seq, uint64_t *out)
{
    struct timespec now;

    if (seq != NULL && strcmp(seq, "none") == 0) {
        *out = 0;
        return 0;
    }
    if (seq != NULL) {
        *out = strtoull(seq, NULL, 10);
        if (*out == 0) {
            cli_error("entry: a bad --seq");
            return -1;
        }
        return 0;
    }
    clock_gettime(CLOCK_REALTIME, &now);
    *out = (uint64_t) now.tv_sec * 1000000 + (uint64_t) now.tv_nsec / 1000;
    return 0;
}

/* A DUST entry: node, dust, time, seed, seq, mac. */
static int
dust_entry(sh_stream_entry_t *e, sh_config_t *cfg, const unsigned char *key,
           const char *node, const char *dust, const char *tm,
           const char *seq)
{
    sh_stream_dust_fields_t f;
    char                    err[128];
    unsigned                i;

    if (node == NULL) {
        cli_error("entry: --dust needs --node (see --help)");
        return 2;
    }
    /* the stream's own decoder of the field: 352 hex digits */
    if (sh_stream_entry_field(e, "dust", 4, dust, strlen(dust), err,
                              sizeof(err)) != 0)
    {
        cli_error("entry: --dust: %s", err);
        return 2;
    }
    e->node = (const unsigned char *) node;
    e->node_len = strlen(node);
    e->seed = sh_stream_seed(sh_config_seed_digest(cfg));
    if (entry_time(tm, &e->time) != 0 || entry_seq(seq, &e->seq) != 0) {
        return 2;
    }
    sh_stream_encode_dust(&f, e, key);
    if (e->seq == 0) {
        /* --seq none: an earlier release's entry, signed as it was (the
           dust field's bit is set by the decoder above) */
        sh_stream_mac(e->mac, e, key);
        for (i = 0; i < SH_STREAM_MAC_LEN; i++) {
            snprintf(f.mac + 2 * i, 3, "%02x", e->mac[i]);
        }
    }
    for (i = 0; i < SH_STREAM_DUST_NFIELDS; i++) {
        if (strcmp(f.name[i], "seq") != 0 || e->seq != 0) {
            printf("%s %.*s\n", f.name[i], (int) f.len[i], f.value[i]);
        }
    }
    return 0;
}

/* A page's entry, its lines printed; *last: the seq of the entry printed
 * before it in this run (a batch's seqs rise even within one microsecond),
 * updated. */
static int
page_entry(sh_config_t *cfg, const unsigned char *key, const char *node,
           const char *ukey, const char *fp, const char *digest,
           const char *xv, const char *tm, const char *seq, uint64_t *last)
{
    sh_stream_entry_t   e;
    sh_stream_fields_t  f;
    unsigned            i;

    sh_stream_entry_init(&e);
    e.node = (const unsigned char *) node;
    e.node_len = strlen(node);
    e.key = (const unsigned char *) ukey;
    e.key_len = strlen(ukey);
    e.seed = sh_stream_seed(sh_config_seed_digest(cfg));
    e.xv = sh_config_version(cfg);
    if (entry_time(tm, &e.time) != 0 || entry_seq(seq, &e.seq) != 0) {
        return 2;
    }
    if (seq == NULL && e.seq <= *last) {
        e.seq = *last + 1;
    }
    *last = e.seq;
    if (hex64(fp, &e.hash) != 0 || hex64(digest, &e.digest) != 0
        || (xv != NULL && sh_version_parse(&e.xv, xv, strlen(xv)) != 0))
    {
        cli_error("entry: a bad --fp, --digest or --xv");
        return 2;
    }

    sh_stream_encode(&f, &e, key);
    if (e.seq == 0) {
        /* --seq none: an earlier release's entry, signed as it was */
        e.seen = 1u << SH_STREAM_F_SK;
        sh_stream_mac(e.mac, &e, key);
        for (i = 0; i < SH_STREAM_MAC_LEN; i++) {
            snprintf(f.mac + 2 * i, 3, "%02x", e.mac[i]);
        }
    }
    for (i = 0; i < SH_STREAM_NFIELDS; i++) {
        if (i != SH_STREAM_F_SEQ || e.seq != 0) {
            printf("%s %.*s\n", f.name[i], (int) f.len[i], f.value[i]);
        }
    }
    return 0;
}

/* --batch: "NODE KEY FP" a line, an entry each, an empty line after each:
 * one process signs a whole stream's worth (a test's flood of 300 writers
 * took 300 runs of this tool, 40 ms each, before) */
static int
batch(sh_config_t *cfg, const unsigned char *key, const char *digest,
      const char *xv, const char *tm, uint64_t *last)
{
    char      line[4096], *node, *ukey, *fp, *save;
    unsigned  n = 0;
    int       rc;

    while (fgets(line, sizeof(line), stdin) != NULL) {
        n++;
        node = strtok_r(line, " \t\r\n", &save);
        if (node == NULL) {
            continue;
        }
        ukey = strtok_r(NULL, " \t\r\n", &save);
        fp = strtok_r(NULL, " \t\r\n", &save);
        if (ukey == NULL || fp == NULL
            || strtok_r(NULL, " \t\r\n", &save) != NULL)
        {
            cli_error("entry: --batch: line %u: want NODE KEY FP", n);
            return 2;
        }
        rc = page_entry(cfg, key, node, ukey, fp, digest, xv, tm, NULL, last);
        if (rc != 0) {
            cli_error("entry: --batch: line %u", n);
            return rc;
        }
        putchar('\n');
    }
    return ferror(stdin) ? 1 : 0;
}

int
cmd_entry(int argc, char **argv)
{
    cli_extract_t       x;
    sh_config_t        *cfg;
    sh_stream_entry_t   e;
    unsigned char       key[SH_STREAM_KEY_LEN];
    const char         *node = NULL, *ukey = NULL, *fp = NULL, *xv = NULL;
    const char         *digest = "0", *tm = NULL, *dust = NULL;
    const char         *seq = NULL;
    int                 a, check = 0, many = 0, rc = 0;
    uint64_t            last = 0;
    cli_opt_t           opts[] = {
        CLI_OPT_STRING("--node", "ID", &node, "the writing node's name"),
        CLI_OPT_STRING("--key", "KEY", &ukey, "the page's key"),
        CLI_OPT_STRING("--fp", "HEX", &fp,
                       "its fingerprint, 16 hex digits"),
        CLI_OPT_STRING("--xv", "HEX", &xv,
                       "the extraction version (default: the options')"),
        CLI_OPT_STRING("--time", "MS", &tm,
                       "version time, ms since 1970 (default: now)"),
        CLI_OPT_STRING("--seq", "N", &seq,
                       "the writer's sequence number (default: now in\n"
                       "microseconds since 1970); a node refuses an entry\n"
                       "whose seq is not above the last it applied from\n"
                       "that writer (a replay); --seq none: no seq, as an\n"
                       "earlier release wrote entries (which a node of\n"
                       "this one refuses)"),
        CLI_OPT_STRING("--digest", "HEX", &digest,
                       "body digest, 16 hex digits; 0: unknown"),
        CLI_OPT_STRING("--dust", "HEX", &dust,
                       "a DUST entry instead: a rule's record, 352 hex\n"
                       "digits (176 bytes, as on the stream)"),
        CLI_OPT_FLAG("--verify", &check,
                     "read an entry's lines from standard input and\n"
                     "check its MAC"),
        CLI_OPT_FLAG("--batch", &many,
                     "read 'NODE KEY FP' lines from standard input and\n"
                     "print an entry for each, an empty line after\n"
                     "each, their seqs rising (the other options apply\n"
                     "to every one)"),
        CLI_OPT_END
    };
    cli_cmd_t           cmd = {
        .name = "entry", .synopsis = synopsis, .opts = opts, .extract = &x
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
    if (a < argc) {
        cli_error("entry: unexpected argument %s (see --help)", argv[a]);
        return 2;
    }

    cfg = cli_extract_config(&x);
    if (cfg == NULL) {
        return 2;
    }
    if (sh_config_derive_key(cfg, "stream mac", key, sizeof(key)) != 0) {
        cli_error("entry: cannot derive the stream key");
        sh_config_free(cfg);
        return 1;
    }
    if (check) {
        rc = verify(cfg, key);
        sh_config_free(cfg);
        return rc;
    }

    sh_stream_entry_init(&e);
    if (dust != NULL) {
        rc = dust_entry(&e, cfg, key, node, dust, tm, seq);
        goto done;
    }
    if (many) {
        if (node != NULL || ukey != NULL || fp != NULL || seq != NULL) {
            cli_error("entry: --batch reads --node, --key and --fp from"
                      " standard input, and numbers the seqs itself");
            rc = 2;
            goto done;
        }
        rc = batch(cfg, key, digest, xv, tm, &last);
        goto done;
    }
    if (node == NULL || ukey == NULL || fp == NULL) {
        cli_error("entry: --node, --key and --fp are needed (see --help)");
        rc = 2;
        goto done;
    }
    rc = page_entry(cfg, key, node, ukey, fp, digest, xv, tm, seq, &last);

done:
    sh_config_free(cfg);
    return rc;
}
