
/*
 * How the module spells what it reports, shared by every file that writes
 * a header, a variable, a statistic, a log line or a message of nginx -t:
 * the names of the statuses and of the reasons to skip, a score in nats,
 * "file:line" of a directive (for messages given after parsing), and a
 * key as it may go into a header (escape).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"


/* indexed by ngx_http_simhash_status_e and ngx_http_simhash_skip_e */

ngx_str_t  ngx_http_simhash_status_names[] = {
    ngx_string("new"),
    ngx_string("duplicate"),
    ngx_string("unchanged"),
    ngx_string("changed"),
    ngx_string("skipped")
};


ngx_str_t  ngx_http_simhash_skip_names[] = {
    ngx_string("too_large"),
    ngx_string("encoding"),
    ngx_string("too_short"),
    ngx_string("binary"),
    ngx_string("error"),
    ngx_string("budget"),
    ngx_string("index_incomplete")
};


/*
 * A score in nats, exactly: it counts sixteenths (SH_SCORE_UNIT), and
 * k/16 has at most four decimals.  At most 15 bytes.
 */

u_char *
ngx_http_simhash_score(u_char *p, uint32_t score)
{
    return ngx_sprintf(p, "%uD.%04uD", score / SH_SCORE_UNIT,
                       score % SH_SCORE_UNIT * (10000 / SH_SCORE_UNIT));
}


/* kept for messages given after the directive was parsed */

void
ngx_http_simhash_where(ngx_conf_t *cf, ngx_str_t *where)
{
    u_char  *p;
    size_t   len;

    len = cf->conf_file->file.name.len + 1 + NGX_INT_T_LEN;

    p = ngx_pnalloc(cf->pool, len);
    if (p == NULL) {
        ngx_str_set(where, "(unknown)");
        return;
    }

    where->data = p;
    where->len = ngx_sprintf(p, "%V:%ui", &cf->conf_file->file.name,
                             cf->conf_file->line) - p;
}


/*
 * A stored key as it may go into a header, a variable or a log line: the
 * bytes of the key with every control byte, space, DEL and byte >= 0x80
 * percent-encoded (%0D, %20, %7F, %C3...), so that whatever a request
 * put in the key (a decoded $uri may hold CR LF) cannot end the header
 * line or inject another one.  Other bytes, '%' included, are kept: a key
 * made from $request_uri is a URL already and comes out unchanged.
 */

ngx_int_t
ngx_http_simhash_escape(ngx_pool_t *pool, u_char *key, size_t len,
    ngx_str_t *out)
{
    u_char       *p;
    size_t        i, n;

    static u_char  hex[] = "0123456789ABCDEF";

    n = 0;

    for (i = 0; i < len; i++) {
        n += (key[i] <= 0x20 || key[i] >= 0x7f) ? 3 : 1;
    }

    out->data = ngx_pnalloc(pool, n);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;

    for (i = 0; i < len; i++) {
        if (key[i] <= 0x20 || key[i] >= 0x7f) {
            *p++ = '%';
            *p++ = hex[key[i] >> 4];
            *p++ = hex[key[i] & 0xf];

        } else {
            *p++ = key[i];
        }
    }

    out->len = n;

    return NGX_OK;
}
