/*
 * cmd_explain.c -- `simhash explain URL STATS_URL`: "why?" for one URL,
 * asked of a running node: what its module would do with the key now and
 * why (simhash_stats ?explain=, module/ngx_http_simhash_explain.c).
 * `simhash explain URL --snapshot FILE` answers what a module's snapshot
 * can say instead: whether the key is stored (its fingerprint and the
 * time of its version) and the DUST rules of its host.  A snapshot has
 * neither the last decisions nor the secret a prediction needs.
 *
 * STATS_URL is the node's simhash_stats location, http://HOST[:PORT]/PATH
 * (plain HTTP: the statistics are served on the loopback or a private
 * network, behind their own access rules).  URL is an http(s) URL as the
 * crawl asks for it (sent as ?url=: the node makes the key with the
 * statistics location's simhash_key) or, in any other form, a key as
 * simhash_key made it (sent as ?explain=).  Prints the answer as aligned
 * lines (explain_show.c: times as dates and ages), or with --json the
 * node's JSON as it came; --zone NAME asks about another zone than the
 * location's first.  --snapshot prints the same two ways.  Exit 1 when the
 * node does not answer 200, 2 for a bad argument, saying which.  A few
 * lines of HTTP/1.0 over a socket: the tool links no HTTP library.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli.h"
#include "explain_show.h"
#include "sh_dust.h"
#include "sh_index.h"
#include "sh_snapshot.h"
#include "sh_store.h"
#include "sh_store_file.h"
#include "sh_image.h"
#include "sh_topk.h"

static const char synopsis[] =
    "usage: simhash explain [--json] [--zone NAME] URL http://HOST[:PORT]/PATH\n"
    "       simhash explain [--json] URL --snapshot FILE\n\n"
    "Asks a running node's simhash_stats location (PATH) why URL (an\n"
    "http(s) URL, keyed by the location's simhash_key; or a stored key)\n"
    "would be fetched, predicted or dropped:\n"
    "its stored version, the last decision on it (status, action, the\n"
    "original, distance and score), the DUST rule that predicts it and\n"
    "that rule's evidence, as aligned lines (times as UTC dates and\n"
    "ages); --json prints the node's JSON answer as it came.\n"
    "With --snapshot, what a module's snapshot FILE says of URL: stored\n"
    "or not (fingerprint, version time), and the DUST rules of its host.\n"
    "\n"
    "example: simhash explain 'http://site.example/a.html?sid=1' \\\n"
    "             http://127.0.0.1:8081/simhash-stats\n"
    "\n";

typedef struct {
    const char *host;
    json_t     *rules;
} rules_of_host_t;

static int
rule_of_host(const sh_dust_rule_info_t *r, void *ctx)
{
    rules_of_host_t *h = ctx;
    char             rule[2 * SH_DUST_ARG_TEXT + 64], scope[512];

    if (strcasecmp(r->host, h->host) == 0) {
        snprintf(rule, sizeof(rule), "%s%s%s%s", sh_dust_kind_name(r->kind),
                 r->arg[0] ? "(" : "", r->arg, r->arg[0] ? ")" : "");
        snprintf(scope, sizeof(scope), "%s%s", r->host, r->pattern);
        json_array_append_new(h->rules,
            json_pack("{s:s, s:s, s:s, s:i, s:i, s:f}", "rule", rule,
                      "scope", scope, "state", sh_dust_state_name(r->state),
                      "support", (json_int_t) r->support,
                      "against", (json_int_t) r->against,
                      "precision", r->lower));
    }
    return 0;
}

/* the answer, readable or as JSON; frees it */
static int
explain_print(const char *url, json_t *answer, int json)
{
    char title[6200];

    if (answer == NULL) {
        cli_error("out of memory");
        return 1;
    }
    if (json) {
        json_dumpf(answer, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT);
        fputc('\n', stdout);
    } else {
        snprintf(title, sizeof(title), "why? %s", url);
        explain_show(title, answer, stdout);
    }
    json_decref(answer);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* The key in a module's snapshot (read without its secret: the keys are
 * compared as text), and its host's rules. */
static int
explain_snapshot(const char *url, const char *file, int json)
{
    const unsigned char *data, *meta, *image, *rules;
    size_t               len, meta_len, image_len, rules_len, size, n;
    unsigned char        secret[SH_STORE_SECRET_LEN];
    char                 err[512], host[SH_TOPK_HOST_TEXT + 1];
    const char          *text, *h;
    sh_image_summary_t   sum;
    sh_image_info_t      info;
    sh_store_t          *st;
    const sh_store_doc_t *doc;
    uint64_t             fp;
    uint32_t             ref;
    void                *mem = NULL;
    int                  found = 0, rc;
    json_t              *answer;
    rules_of_host_t      rh;

    if (sh_snapshot_map(file, &data, &len, err, sizeof(err)) != 0) {
        cli_error("%s: %s", file, err);
        return 1;
    }
    if (!sh_store_file_is(data, len)) {
        sh_snapshot_unmap(data, len);
        cli_error("%s: not a snapshot of the module's store", file);
        return 1;
    }
    memset(secret, 0, sizeof(secret));
    if (sh_store_file_parse(data, len, &meta, &meta_len, &image, &image_len,
                            err, sizeof(err)) != 0
        || sh_image_inspect(image, image_len, &sum, err, sizeof(err)) != 0)
    {
        goto failed;
    }
    size = sh_store_region_size(sum.capacity, sum.text_size);
    if (size == 0 || posix_memalign(&mem, 64, size) != 0) {
        snprintf(err, sizeof(err), "out of memory");
        mem = NULL;
        goto failed;
    }
    st = sh_store_init(mem, size, sum.text_size, secret, sum.seed_digest,
                       err, sizeof(err));
    if (st == NULL
        || sh_image_load_unkeyed(st, image, image_len, 0, &info, err,
                                 sizeof(err)) != 0)
    {
        goto failed;
    }

    answer = json_object();
    json_object_set_new(answer, "snapshot", json_string(file));
    json_object_set_new(answer, "key", json_string(url));
    for (ref = 0; ref < sum.capacity && !found; ref++) {
        doc = sh_store_doc(st, ref);
        if (doc == NULL) {
            continue;
        }
        n = sh_store_key(st, ref, &text);
        if (n == strlen(url) && memcmp(text, url, n) == 0
            && sh_index_get(sh_store_index_const(st), ref, &fp) == 0)
        {
            char hex[17];

            snprintf(hex, sizeof(hex), "%016llx", (unsigned long long) fp);
            json_object_set_new(answer, "would", json_string("stored"));
            json_object_set_new(answer, "why", json_string(
                "a fetch is compared with the stored version"));
            json_object_set_new(answer, "stored",
                json_pack("{s:s, s:I}", "fingerprint", hex,
                          "version_time", (json_int_t) doc->time));
            found = 1;
        }
    }
    if (!found) {
        json_object_set_new(answer, "would", json_string("fetch"));
        json_object_set_new(answer, "why", json_string(
            "not stored (or its key left the ring: `simhash index dump`);"
            " fetched unless a rule predicts it (ask the node)"));
        json_object_set_new(answer, "stored", json_null());
    }

    h = sh_topk_host(url, strlen(url), &n);
    n = n < SH_TOPK_HOST_TEXT ? n : SH_TOPK_HOST_TEXT;
    memcpy(host, h, n);
    host[n] = '\0';
    rh.host = host;
    rh.rules = json_array();
    rc = sh_store_file_tail_get(data, len, &rules, &rules_len);
    if (rc > 0
        && sh_dust_image_rules(rules, rules_len, 0.0, rule_of_host, &rh, err,
                               sizeof(err)) != 0)
    {
        json_decref(rh.rules);
        json_decref(answer);
        goto failed;
    }
    json_object_set_new(answer, "host", json_string(host));
    if (rc == 0) {
        json_decref(rh.rules);
        json_object_set_new(answer, "rules", json_null());
        json_object_set_new(answer, "learner",
                            json_string("none (the zone had no dust=)"));
    } else {
        json_object_set_new(answer, "rules", rh.rules);
    }

    sh_snapshot_unmap(data, len);
    free(mem);
    return explain_print(url, answer, json);

failed:
    sh_snapshot_unmap(data, len);
    free(mem);
    cli_error("%s: %s", file, err);
    return 1;
}

/* percent-encode everything but unreserved bytes */
static void
encode(const char *s, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t            n = 0;

    for (; *s && n + 4 < size; s++) {
        unsigned char c = (unsigned char) *s;

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'
            || c == '~')
        {
            out[n++] = (char) c;
        } else {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    out[n] = '\0';
}

/* Asks the node at stats (http://HOST[:PORT]/PATH) about url; prints its
 * answer.  A few lines of HTTP/1.0 over a socket. */
static int
explain_node(const char *url, const char *stats, const char *zone, int json)
{
    const char      *p, *slash;
    char             host[256], port[16], path[1024], req[8192], key[6144];
    char             zq[300], buf[65536];
    struct addrinfo  hints, *ai = NULL;
    struct timeval   tv = { 10, 0 };
    size_t           len = 0;
    ssize_t          n;
    int              fd = -1, status = 0;
    char            *body;
    json_t          *answer;
    json_error_t     jerr;

    p = stats + 7;
    slash = strchr(p, '/');
    if (slash == NULL) {
        slash = p + strlen(p);
    }
    if ((size_t) (slash - p) >= sizeof(host)) {
        cli_error("%s: host too long", stats);
        return 2;
    }
    memcpy(host, p, (size_t) (slash - p));
    host[slash - p] = '\0';
    strcpy(port, "80");
    if (host[0] != '[' && strchr(host, ':')) {
        snprintf(port, sizeof(port), "%s", strchr(host, ':') + 1);
        *strchr(host, ':') = '\0';
    }
    snprintf(path, sizeof(path), "%s", *slash ? slash : "/");

    encode(url, key, sizeof(key));
    zq[0] = '\0';
    if (zone) {
        char z[256];

        encode(zone, z, sizeof(z));
        snprintf(zq, sizeof(zq), "&zone=%s", z);
    }
    /* an http(s) URL is asked as the crawl would request it (url=: the
     * node makes the key with the location's simhash_key), anything else
     * as a stored key (explain=), as the console's box does */
    n = snprintf(req, sizeof(req),
                 "GET %s%c%s=%s%s HTTP/1.0\r\nHost: %s\r\n"
                 "Accept: application/json\r\nConnection: close\r\n\r\n",
                 path, strchr(path, '?') ? '&' : '?',
                 strncasecmp(url, "http://", 7) == 0
                 || strncasecmp(url, "https://", 8) == 0 ? "url" : "explain",
                 key, zq, host);
    if (n < 0 || (size_t) n >= sizeof(req)) {
        cli_error("%s: URL too long", url);
        return 2;
    }

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || ai == NULL) {
        cli_error("%s: cannot resolve %s", stats, host);
        return 1;
    }
    fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        cli_error("%s: %s", stats, strerror(errno));
        freeaddrinfo(ai);
        if (fd >= 0) {
            close(fd);
        }
        return 1;
    }
    freeaddrinfo(ai);
    (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

    if (write(fd, req, (size_t) n) != n) {
        cli_error("%s: %s", stats, strerror(errno));
        close(fd);
        return 1;
    }
    while (len + 1 < sizeof(buf)
           && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
    {
        len += (size_t) n;
    }
    close(fd);
    buf[len] = '\0';

    if (sscanf(buf, "HTTP/%*s %d", &status) != 1) {
        cli_error("%s: no HTTP answer", stats);
        return 1;
    }
    body = strstr(buf, "\r\n\r\n");
    body = body ? body + 4 : buf + len;
    if (status != 200) {
        cli_error("%s: HTTP %d%s%s", stats, status, *body ? ": " : "", body);
        return 1;
    }
    if (json) {
        fputs(body, stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    answer = json_loads(body, 0, &jerr);
    if (answer == NULL || !json_is_object(answer)) {
        cli_error("%s: the answer is not a JSON object (%s); as it came:",
                  stats, answer ? "another JSON value" : jerr.text);
        json_decref(answer);
        fputs(body, stdout);
        return 1;
    }
    return explain_print(url, answer, 0);

}

int
cmd_explain(int argc, char **argv)
{
    const char      *zone = NULL, *url = NULL, *stats = NULL, *p;
    const char      *snapshot = NULL;
    int              i, json = 0;
    cli_opt_t        opts[] = {
        CLI_OPT_FLAG("--json", &json,
                     "print the answer as JSON (one line), for programs"),
        CLI_OPT_STRING("--zone", "NAME", &zone,
                       "the zone asked (default: the location's first)"),
        CLI_OPT_STRING("--snapshot", "FILE", &snapshot,
                       "read a module's snapshot instead of asking"),
        CLI_OPT_END
    };
    cli_cmd_t        cmd = {
        .name = "explain", .synopsis = synopsis, .opts = opts
    };

    switch (cli_parse(&cmd, argc, argv, 1, &i)) {
    case CLI_HELP:
        return 0;
    case CLI_BAD:
        return 2;
    case CLI_PARSED:
        break;
    }
    /* each bad argument says what is wrong, then how the command is used
     * (`simhash explain --help` for the whole text) */
    url = i < argc ? argv[i] : NULL;
    stats = i + 1 < argc ? argv[i + 1] : NULL;
    if (argc - i > 2) {
        cli_error("explain: too many arguments (\"%s\"): one URL, then the"
                  " statistics URL or --snapshot FILE", argv[i + 2]);
        goto usage;
    }
    if (url == NULL) {
        cli_error("explain: which URL? give the URL, then the statistics URL"
                  " (http://HOST:PORT/PATH) or --snapshot FILE");
        goto usage;
    }
    if (snapshot != NULL && stats != NULL) {
        cli_error("explain: --snapshot reads a file: no statistics URL"
                  " (\"%s\") with it", stats);
        goto usage;
    }
    if (snapshot != NULL) {
        return explain_snapshot(url, snapshot, json);
    }
    if (stats == NULL) {
        cli_error("explain: no statistics URL after \"%s\": give the node's"
                  " simhash_stats location, http://HOST:PORT/PATH, or"
                  " --snapshot FILE", url);
        goto usage;
    }
    if (strncmp(stats, "http://", 7) != 0) {
        cli_error("explain: \"%s\" is not an http:// URL: the statistics are"
                  " asked at http://HOST:PORT/PATH%s%s", stats,
                  strstr(stats, "://") ? "" : ", e.g. http://",
                  strstr(stats, "://") ? "" : stats);
        goto usage;
    }
    return explain_node(url, stats, zone, json);

usage:
    /* the synopsis' two usage lines, not the whole help */
    p = strstr(synopsis, "\n\n");
    fprintf(stderr, "%.*s\n(simhash explain --help says more)\n",
            (int) (p - synopsis), synopsis);
    return 2;
}
