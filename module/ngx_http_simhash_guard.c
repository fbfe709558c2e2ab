
/*
 * The request side of a forward proxy: the loop guard.
 *
 * simhash_loop_guard URL: URL ("scheme://host:port", variables allowed) is
 * where this location's proxy_pass sends the request.  A forward proxy
 * that passes to $http_host sends a request that is not an absolute URL
 * (a root-relative link, a "Location: /path" redirect, a crafted Host)
 * back to itself, and every hop makes another: one request cost hundreds
 * of nested connections and ended in "worker_connections are not enough".
 * Two checks refuse such a request with 508 Loop Detected and one log
 * line, before anything is proxied:
 *
 *   1. the target is this proxy: its port is the one the request came in
 *      on and its host is "localhost", the machine's host name, an exact
 *      server name of this server, or an address of this machine (an address is
 *      asked of the kernel: a UDP socket can bind to it only when it is
 *      local; 0.0.0.0 counts, as connecting to it reaches this machine);
 *   2. the request carries this proxy's own hop token: every request the
 *      guard lets through gets an "X-Simhash-Via: TOKEN" line, which
 *      proxy_pass passes on, so a loop that check 1 cannot see (a DNS name
 *      of this machine, a second proxy sending back) ends at the second
 *      visit.  The token is random, drawn once per master process (it
 *      survives reloads); chained proxies have different tokens.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"


#define NGX_HTTP_SIMHASH_LOOP_DETECTED  508


static ngx_int_t ngx_http_simhash_guard_handler(ngx_http_request_t *r);
static ngx_uint_t ngx_http_simhash_guard_seen(ngx_http_request_t *r);
static void ngx_http_simhash_guard_log(ngx_http_request_t *r,
    const char *why, ngx_str_t *target);
static ngx_int_t ngx_http_simhash_guard_parse(ngx_str_t *target,
    ngx_str_t *host, ngx_uint_t *port);
static ngx_uint_t ngx_http_simhash_guard_self(ngx_http_request_t *r,
    ngx_str_t *target);
static ngx_uint_t ngx_http_simhash_guard_name(ngx_http_request_t *r,
    ngx_str_t *host);
static ngx_uint_t ngx_http_simhash_guard_local_addr(ngx_http_request_t *r,
    ngx_str_t *host);
static ngx_int_t ngx_http_simhash_guard_refuse(ngx_http_request_t *r,
    const char *why, ngx_str_t *target);


static ngx_str_t  ngx_http_simhash_via = ngx_string("X-Simhash-Via");

/* the hop token: 16 hex digits, drawn once per master process */
static u_char     ngx_http_simhash_token_data[16];
static ngx_str_t  ngx_http_simhash_token;


/* simhash_loop_guard URL | off */

char *
ngx_http_simhash_loop_guard_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_loc_conf_t *slcf = conf;

    uint64_t                           r;
    ngx_str_t                         *value;
    ngx_uint_t                         i;
    ngx_http_compile_complex_value_t   ccv;

    static u_char  hex[] = "0123456789abcdef";

    if (slcf->loop_guard != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        slcf->loop_guard = NULL;
        return NGX_CONF_OK;
    }

    slcf->loop_guard = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
    if (slcf->loop_guard == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = slcf->loop_guard;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_simhash_token.len == 0) {
        r = ((uint64_t) ngx_random() << 33) ^ ((uint64_t) ngx_random() << 11)
            ^ (uint64_t) ngx_random() ^ ((uint64_t) ngx_pid << 48)
            ^ (uint64_t) ngx_time();

        for (i = 0; i < 16; i++) {
            ngx_http_simhash_token_data[i] = hex[(r >> (4 * i)) & 0xf];
        }

        ngx_http_simhash_token.data = ngx_http_simhash_token_data;
        ngx_http_simhash_token.len = 16;
    }

    return NGX_CONF_OK;
}


/*
 * At postconfiguration: the phase handler, and every server's exact names
 * (not wildcards, not regexes) copied out of cscf->server_names, which
 * lives in the temporary configuration pool.
 */

ngx_int_t
ngx_http_simhash_guard_init(ngx_conf_t *cf)
{
    ngx_uint_t                       s, i;
    ngx_http_handler_pt             *h;
    ngx_http_server_name_t          *sn;
    ngx_http_core_srv_conf_t       **cscfp;
    ngx_http_core_main_conf_t       *cmcf;
    ngx_http_simhash_main_conf_t    *smcf;
    ngx_http_simhash_server_name_t  *name;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);

    if (ngx_array_init(&smcf->server_names, cf->pool, 4,
                       sizeof(ngx_http_simhash_server_name_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cscfp = cmcf->servers.elts;

    for (s = 0; s < cmcf->servers.nelts; s++) {
        sn = cscfp[s]->server_names.elts;

        for (i = 0; i < cscfp[s]->server_names.nelts; i++) {
#if (NGX_PCRE)
            if (sn[i].regex) {
                continue;
            }
#endif
            if (sn[i].name.len == 0
                || sn[i].name.data[0] == '*' || sn[i].name.data[0] == '.'
                || sn[i].name.data[sn[i].name.len - 1] == '*')
            {
                continue;
            }

            name = ngx_array_push(&smcf->server_names);
            if (name == NULL) {
                return NGX_ERROR;
            }

            name->server = cscfp[s];
            name->name.len = sn[i].name.len;
            name->name.data = ngx_pstrdup(cf->pool, &sn[i].name);
            if (name->name.data == NULL) {
                return NGX_ERROR;
            }
        }
    }

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_simhash_guard_handler;

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_guard_handler(ngx_http_request_t *r)
{
    ngx_str_t                     target;
    ngx_table_elt_t              *h;
    ngx_http_simhash_loc_conf_t  *slcf;

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    if (slcf->loop_guard == NULL || r != r->main) {
        return NGX_DECLINED;
    }

    if (ngx_http_complex_value(r, slcf->loop_guard, &target) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_simhash_guard_seen(r)) {
        return ngx_http_simhash_guard_refuse(r,
                   "the request came back through this proxy", &target);
    }

    if (ngx_http_simhash_guard_self(r, &target)) {
        return ngx_http_simhash_guard_refuse(r, "the target is this proxy",
                                             &target);
    }

    /*
     * Our token, once per request (this phase runs again after an
     * internal redirect): the line we add points at the token itself,
     * which tells it from one that came in over the network.
     */

    h = ngx_list_push(&r->headers_in.headers);
    if (h == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->hash = 1;
    h->key = ngx_http_simhash_via;
    h->lowcase_key = (u_char *) "x-simhash-via";
    h->value = ngx_http_simhash_token;

    return NGX_DECLINED;
}


/* 1: an X-Simhash-Via line that came in holds our token; 0: none does, or
 * only the one we added */

static ngx_uint_t
ngx_http_simhash_guard_seen(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return 0;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len != ngx_http_simhash_via.len
            || ngx_strncasecmp(h[i].key.data, ngx_http_simhash_via.data,
                               h[i].key.len)
               != 0)
        {
            continue;
        }

        if (h[i].value.data == ngx_http_simhash_token.data) {
            continue;
        }

        if (h[i].value.len >= ngx_http_simhash_token.len
            && ngx_strlcasestrn(h[i].value.data,
                                h[i].value.data + h[i].value.len,
                                ngx_http_simhash_token.data,
                                ngx_http_simhash_token.len - 1)
               != NULL)
        {
            return 1;
        }
    }
}


/*
 * [scheme://][userinfo@]host[:port][/...]: the host (without brackets
 * around an IPv6 address) and the port (the scheme's default when there is
 * none: 443 for https, else 80).  NGX_DECLINED: no host.
 */

static ngx_int_t
ngx_http_simhash_guard_parse(ngx_str_t *target, ngx_str_t *host,
    ngx_uint_t *port)
{
    u_char  *p, *last, *end, *colon;

    p = target->data;
    last = p + target->len;
    *port = 80;

    end = ngx_strlcasestrn(p, last, (u_char *) "://", 3 - 1);

    if (end) {
        if (end - p == 5 && ngx_strncasecmp(p, (u_char *) "https", 5) == 0) {
            *port = 443;
        }

        p = end + 3;
    }

    for (end = p; end < last; end++) {
        if (*end == '/' || *end == '?' || *end == '#') {
            break;
        }
    }

    for (last = end; last > p; last--) {
        if (last[-1] == '@') {
            p = last;
            break;
        }
    }

    colon = NULL;

    if (p < end && *p == '[') {
        for (last = p; last < end && *last != ']'; last++) { /* void */ }

        if (last == end) {
            return NGX_DECLINED;
        }

        host->data = p + 1;
        host->len = last - p - 1;

        if (last + 1 < end && last[1] == ':') {
            colon = last + 1;
        }

    } else {
        for (last = p; last < end && *last != ':'; last++) { /* void */ }

        host->data = p;
        host->len = last - p;

        if (last < end) {
            colon = last;
        }
    }

    /* "example.org." is example.org */

    if (host->len > 1 && host->data[host->len - 1] == '.') {
        host->len--;
    }

    if (host->len == 0) {
        return NGX_DECLINED;
    }

    if (colon && colon + 1 < end) {
        *port = (ngx_uint_t) ngx_atoi(colon + 1, end - colon - 1);

        if (*port == (ngx_uint_t) NGX_ERROR) {
            *port = 0;      /* not a port: cannot be ours */
        }
    }

    return NGX_OK;
}


/* 1: the target names this proxy, the port it was asked on included */

static ngx_uint_t
ngx_http_simhash_guard_self(ngx_http_request_t *r, ngx_str_t *target)
{
    ngx_str_t   host;
    ngx_uint_t  port;

    if (ngx_http_simhash_guard_parse(target, &host, &port) != NGX_OK) {
        return 0;
    }

    if (ngx_connection_local_sockaddr(r->connection, NULL, 0) != NGX_OK) {
        return 0;
    }

    if (port != ngx_inet_get_port(r->connection->local_sockaddr)) {
        return 0;
    }

    return ngx_http_simhash_guard_name(r, &host)
           || ngx_http_simhash_guard_local_addr(r, &host);
}


/* 1: host is "localhost", this machine's name or one of this server's
 * exact names */

static ngx_uint_t
ngx_http_simhash_guard_name(ngx_http_request_t *r, ngx_str_t *host)
{
    ngx_uint_t                       i;
    ngx_http_core_srv_conf_t        *cscf;
    ngx_http_simhash_main_conf_t    *smcf;
    ngx_http_simhash_server_name_t  *name;

    if ((host->len == 9
         && ngx_strncasecmp(host->data, (u_char *) "localhost", 9) == 0)
        || (host->len == ngx_cycle->hostname.len
            && ngx_strncasecmp(host->data, ngx_cycle->hostname.data,
                               host->len)
               == 0))
    {
        return 1;
    }

    cscf = ngx_http_get_module_srv_conf(r, ngx_http_core_module);
    smcf = ngx_http_get_module_main_conf(r, ngx_http_simhash_module);

    name = smcf->server_names.elts;

    for (i = 0; i < smcf->server_names.nelts; i++) {
        if (name[i].server == cscf
            && name[i].name.len == host->len
            && ngx_strncasecmp(name[i].name.data, host->data, host->len)
               == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* 1: host is an address of this machine (the kernel lets a socket bind
 * only to a local address) */

static ngx_uint_t
ngx_http_simhash_guard_local_addr(ngx_http_request_t *r, ngx_str_t *host)
{
    int           rc;
    ngx_addr_t    addr;
    ngx_socket_t  s;

    if (ngx_parse_addr(r->pool, &addr, host->data, host->len) != NGX_OK) {
        return 0;
    }

    ngx_inet_set_port(addr.sockaddr, 0);

    s = ngx_socket(addr.sockaddr->sa_family, SOCK_DGRAM, 0);
    if (s == (ngx_socket_t) -1) {
        return 0;
    }

    rc = bind(s, addr.sockaddr, addr.socklen);

    ngx_close_socket(s);

    return rc == 0;
}


/*
 * A refusal's line is an [error], the level Debian's error log shows: a
 * loop is a configuration or a crawl gone wrong, and an operator should see
 * it.  A client can make refusals at will, so the lines are rate-limited
 * per worker: a burst of NGX_HTTP_SIMHASH_LOOP_BURST, then one a second,
 * and the next line says how many went unlogged.
 */

#define NGX_HTTP_SIMHASH_LOOP_BURST  10

static void
ngx_http_simhash_guard_log(ngx_http_request_t *r, const char *why,
    ngx_str_t *target)
{
    time_t             now;
    static time_t      last;
    static ngx_uint_t  tokens = NGX_HTTP_SIMHASH_LOOP_BURST, unlogged;

    now = ngx_time();

    if (now > last) {
        tokens += (ngx_uint_t) (now - last);
        if (tokens > NGX_HTTP_SIMHASH_LOOP_BURST) {
            tokens = NGX_HTTP_SIMHASH_LOOP_BURST;
        }
        last = now;
    }

    if (tokens == 0) {
        unlogged++;
        return;
    }

    tokens--;

    if (unlogged) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "simhash: loop refused: %s (target \"%V\"); "
                      "%ui more refused and not logged before this one",
                      why, target, unlogged);
        unlogged = 0;
        return;
    }

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "simhash: loop refused: %s (target \"%V\")", why, target);
}


static ngx_int_t
ngx_http_simhash_guard_refuse(ngx_http_request_t *r, const char *why,
    ngx_str_t *target)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    static u_char  body[] = "508 Loop Detected: this proxy would fetch "
                            "the request from itself\n";

    ngx_http_simhash_guard_log(r, why, target);

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    r->headers_out.status = NGX_HTTP_SIMHASH_LOOP_DETECTED;
    ngx_str_set(&r->headers_out.status_line, "508 Loop Detected");
    ngx_str_set(&r->headers_out.content_type, "text/plain");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_length_n = sizeof(body) - 1;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        ngx_http_finalize_request(r, NGX_ERROR);
        return NGX_DONE;
    }

    b->pos = body;
    b->last = body + sizeof(body) - 1;
    b->memory = 1;
    b->last_buf = 1;

    out.buf = b;
    out.next = NULL;

    ngx_http_finalize_request(r, ngx_http_output_filter(r, &out));

    return NGX_DONE;
}


/*
 * The path of a key: what follows the authority of "scheme://authority",
 * up to '?', ';' or '#' (a whole key without "://" is a path).  Mirrors
 * (another host, port or scheme) and session-id variants (another query,
 * ";jsessionid=") of one page have one path.
 */

static void
ngx_http_simhash_key_path(ngx_str_t *key, ngx_str_t *path)
{
    u_char  *p, *last, *q;

    p = key->data;
    last = p + key->len;

    /* ngx_strlcasestrn reads its needle's length before looking */
    q = key->len >= 3 ? ngx_strlcasestrn(p, last, (u_char *) "://", 3 - 1)
                      : NULL;

    if (q) {
        for (p = q + 3; p < last && *p != '/'; p++) { /* void */ }
    }

    for (q = p; q < last && *q != '?' && *q != ';' && *q != '#'; q++) {
        /* void */
    }

    path->data = p;
    path->len = q - p;
}


/*
 * Drop mode's own evidence, beyond the match rule: keys=path drops a
 * duplicate only when the stored key it duplicates has this key's path;
 * score=S only when its score is at most S.  Both escaped the same way
 * (ngx_http_simhash_escape), so the paths compare byte for byte.
 */

ngx_uint_t
ngx_http_simhash_drop_allowed(ngx_http_simhash_loc_conf_t *slcf,
    ngx_str_t *key, ngx_str_t *duplicate_of, uint32_t score)
{
    ngx_str_t  a, b;

    if (slcf->drop_score != NGX_CONF_UNSET_UINT && score > slcf->drop_score)
    {
        return 0;
    }

    if (slcf->drop_keys == NGX_HTTP_SIMHASH_DROP_KEYS_ANY) {
        return 1;
    }

    ngx_http_simhash_key_path(key, &a);
    ngx_http_simhash_key_path(duplicate_of, &b);

    return a.len == b.len && ngx_memcmp(a.data, b.data, a.len) == 0;
}


/*
 * A 502 for a host the resolver could not resolve, in a forward proxy:
 * nginx's resolver asks DNS servers only and never reads /etc/hosts, so a
 * crawl of a local or internal name fails where curl and wget succeed.
 * Beside nginx's own "could not be resolved" line, one that says why and
 * what to do (at most one a minute per worker: a crawl of a dead domain
 * makes thousands).
 */

void
ngx_http_simhash_resolve_hint(ngx_http_request_t *r)
{
    time_t                         now;
    static time_t                  last;
    ngx_http_upstream_resolved_t  *ur;

    if (r->headers_out.status != NGX_HTTP_BAD_GATEWAY
        || r->upstream == NULL
        || r->upstream->resolved == NULL)
    {
        return;
    }

    ur = r->upstream->resolved;

    if (ur->host.len == 0 || ur->sockaddr != NULL || ur->naddrs != 0) {
        return;
    }

    now = ngx_time();

    if (now - last < 60) {
        return;
    }

    last = now;

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "simhash: \"%V\" could not be resolved by nginx's "
                  "resolver, which asks DNS only and never reads /etc/hosts: "
                  "for local or internal names run a local DNS forwarder "
                  "(dnsmasq reads /etc/hosts) or give fixed hosts an "
                  "upstream block (docs/module.md, \"Names nginx cannot "
                  "resolve\")", &ur->host);
}
