/*
 * cmd_explain.c -- `simhash explain URL STATS_URL`: "why?" for one URL,
 * asked of a running node: what its module would do with the key now and
 * why (simhash_stats ?explain=, module/ngx_http_simhash_explain.c).
 *
 * STATS_URL is the node's simhash_stats location, http://HOST[:PORT]/PATH
 * (plain HTTP: the statistics are served on the loopback or a private
 * network, behind their own access rules).  URL is the key as the
 * location's simhash_key makes it.  Prints the JSON answer; --zone NAME
 * asks about another zone than the location's first.  Exit 1 when the
 * node does not answer 200.  A few lines of HTTP/1.0 over a socket: the
 * tool links no HTTP library.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli.h"

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: simhash explain [--zone NAME] URL http://HOST[:PORT]/PATH\n\n"
        "Asks a running node's simhash_stats location (PATH) why URL (a key\n"
        "as simhash_key makes it) would be fetched, predicted or dropped:\n"
        "its stored version, the last decision on it (status, action, the\n"
        "original, distance and score), the DUST rule that predicts it and\n"
        "that rule's evidence.  Prints the node's JSON answer.\n");
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

int
cmd_explain(int argc, char **argv)
{
    const char      *zone = NULL, *url = NULL, *stats = NULL, *p, *slash;
    char             host[256], port[16], path[1024], req[8192], key[6144];
    char             zq[300], buf[65536];
    struct addrinfo  hints, *ai = NULL;
    struct timeval   tv = { 10, 0 };
    size_t           len = 0;
    ssize_t          n;
    int              i, fd = -1, status = 0;
    char            *body;

    for (i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--zone") == 0 && i + 1 < argc) {
            zone = argv[++i];
        } else if (url == NULL) {
            url = argv[i];
        } else if (stats == NULL) {
            stats = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (url == NULL || stats == NULL || strncmp(stats, "http://", 7) != 0) {
        usage(stderr);
        return 2;
    }

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
    n = snprintf(req, sizeof(req),
                 "GET %s%cexplain=%s%s HTTP/1.0\r\nHost: %s\r\n"
                 "Accept: application/json\r\nConnection: close\r\n\r\n",
                 path, strchr(path, '?') ? '&' : '?', key, zq, host);
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
    fputs(body, stdout);
    return fflush(stdout) == 0 ? 0 : 1;
}
