/*
 * page_edit.c -- page edits for the benchmark's near-duplicate queries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "page_edit.h"

static const char *const names[PAGE_EDIT_NTYPES] = {
    "para-insert", "para-remove", "dates", "ad"
};

static const char *const ads[] = {
    "Sponsored: ACME Cloud deploys your application in seconds. Start a "
    "free thirty day trial today, no credit card required.",
    "Advertisement. Learn systems programming from experts: live online "
    "courses, certificates and a community of forty thousand developers.",
    "Special offer on mechanical keyboards and ergonomic chairs for "
    "programmers. Free shipping on orders over fifty dollars this week.",
    "Our sponsors keep this documentation free. Hosting provided by a "
    "content delivery network with data centres on every continent.",
};

static const char *const filler[] = {
    "system", "value", "returns", "memory", "buffer", "thread", "safe",
    "example", "function", "error", "result", "iterator", "type", "trait",
    "method", "string", "bytes", "pointer", "allocation", "capacity",
};

const char *
page_edit_name(page_edit_t e)
{
    return e < PAGE_EDIT_NTYPES ? names[e] : "?";
}

char *
page_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long  n;

    if (f == NULL) {
        cli_error("cannot open \"%s\": %s", path, strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) != 0)
    {
        cli_error("cannot read \"%s\"", path);
        fclose(f);
        return NULL;
    }
    buf = malloc((size_t) n + 1);
    if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n) {
        cli_error("cannot read \"%s\"", path);
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    *len = (size_t) n;
    return buf;
}

/* Spans [start, end) of <p ...>...</p> elements, up to max. */
static size_t
find_paragraphs(const char *h, size_t len, size_t (*span)[2], size_t max)
{
    size_t i = 0, n = 0;

    while (i + 3 < len && n < max) {
        const char *p = memchr(h + i, '<', len - i);
        size_t      s, e;

        if (p == NULL) {
            break;
        }
        s = (size_t) (p - h);
        if (s + 2 < len && (h[s + 1] == 'p' || h[s + 1] == 'P')
            && (h[s + 2] == '>' || h[s + 2] == ' '))
        {
            for (e = s + 3; e + 4 <= len; e++) {
                if (strncasecmp(h + e, "</p>", 4) == 0) {
                    span[n][0] = s;
                    span[n][1] = e + 4;
                    n++;
                    break;
                }
            }
            i = e + 4;
        } else {
            i = s + 1;
        }
    }
    return n;
}

/* Offset just after the <body ...> tag, or 0. */
static size_t
body_start(const char *h, size_t len)
{
    size_t i;

    for (i = 0; i + 5 < len; i++) {
        if (h[i] == '<' && strncasecmp(h + i + 1, "body", 4) == 0) {
            const char *gt = memchr(h + i, '>', len - i);

            return gt ? (size_t) (gt - h) + 1 : 0;
        }
    }
    return 0;
}

/* h[0..at) + ins + h[at + cut..len) */
static char *
splice(const char *h, size_t len, size_t at, size_t cut, const char *ins,
       size_t inslen, size_t *outlen)
{
    char *out = malloc(len - cut + inslen + 1);

    if (out == NULL) {
        return NULL;
    }
    memcpy(out, h, at);
    memcpy(out + at, ins, inslen);
    memcpy(out + at + inslen, h + at + cut, len - at - cut);
    *outlen = len - cut + inslen;
    out[*outlen] = '\0';
    return out;
}

char *
page_edit_page(const char *html, size_t len, page_edit_t e, const char *donor,
             size_t dlen, uint64_t *rng, size_t *outlen)
{
    static size_t span[4096][2];
    char   ins[2048];
    size_t n, at, i;
    int    k;

    switch (e) {
    case PAGE_EDIT_PARA_INSERT:
        n = donor ? find_paragraphs(donor, dlen, span, 4096) : 0;
        if (n > 0) {
            size_t d = page_rand(rng) % n;
            size_t l = span[d][1] - span[d][0];

            if (l > sizeof(ins) - 1) {
                l = sizeof(ins) - 1;
            }
            memcpy(ins, donor + span[d][0], l);
            ins[l] = '\0';
        } else {
            k = snprintf(ins, sizeof(ins), "<p>");
            for (i = 0; i < 40; i++) {
                k += snprintf(ins + k, sizeof(ins) - (size_t) k, "%s ",
                              filler[page_rand(rng) % 20]);
            }
            snprintf(ins + k, sizeof(ins) - (size_t) k, "</p>");
        }
        n = find_paragraphs(html, len, span, 4096);
        at = n > 0 ? span[page_rand(rng) % n][1] : body_start(html, len);
        return splice(html, len, at, 0, ins, strlen(ins), outlen);

    case PAGE_EDIT_PARA_REMOVE:
        n = find_paragraphs(html, len, span, 4096);
        if (n > 0) {
            size_t d = page_rand(rng) % n;

            return splice(html, len, span[d][0], span[d][1] - span[d][0],
                          "", 0, outlen);
        }
        /* Nothing to remove: fall back to a date/counter change. */
        /* fall through */
    case PAGE_EDIT_DATES: {
        char *out;

        snprintf(ins, sizeof(ins), "<p class=\"meta\">Last updated "
                 "20%02u-%02u-%02u %02u:%02u, %u views</p>",
                 (unsigned) (page_rand(rng) % 30),
                 (unsigned) (page_rand(rng) % 12 + 1),
                 (unsigned) (page_rand(rng) % 28 + 1),
                 (unsigned) (page_rand(rng) % 24),
                 (unsigned) (page_rand(rng) % 60),
                 (unsigned) (page_rand(rng) % 100000));
        out = splice(html, len, body_start(html, len), 0, ins, strlen(ins),
                     outlen);
        if (out == NULL) {
            return NULL;
        }
        /* Half of the digits of the page change (versions, line numbers,
         * counters): in markup as well as in text, as a real site would. */
        for (i = 0; i < *outlen; i++) {
            if (out[i] >= '0' && out[i] <= '9' && (page_rand(rng) & 1)) {
                out[i] = (char) ('0' + page_rand(rng) % 10);
            }
        }
        return out;
    }

    case PAGE_EDIT_AD:
    default:
        snprintf(ins, sizeof(ins), "<div class=\"ad\"><p>%s</p></div>",
                 ads[page_rand(rng) % (sizeof(ads) / sizeof(ads[0]))]);
        return splice(html, len, body_start(html, len), 0, ins, strlen(ins),
                      outlen);
    }
}
