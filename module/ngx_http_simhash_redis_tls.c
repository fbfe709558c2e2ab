
/*
 * TLS on the project's Redis connection (rediss:// seeds of cluster=):
 * nginx's own OpenSSL layer (ngx_event_openssl, the one proxy_ssl uses)
 * does the handshake and the I/O on nginx's events; what is ours is the
 * check of what the server showed.  A handshake that fails, a
 * certificate that does not verify against the configured CA, or one
 * that does not name the server (its address as the slot map gives it,
 * or cluster_tls_name=) ends the connection like any failure: logged once,
 * retried with backoff, the lookups that needed it incomplete.  Nothing
 * is sent before the check: not AUTH, not a command.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_http_simhash_redis.h"


#if (NGX_SSL)

#include <openssl/x509v3.h>


static void ngx_http_simhash_redis_tls_done(ngx_connection_t *c);
static ngx_int_t ngx_http_simhash_redis_tls_check(ngx_http_simhash_redis_t *rd,
    ngx_connection_t *c);


/*
 * The handshake on a connected socket: NGX_OK (done, checked), NGX_AGAIN
 * (done() follows when it is), NGX_ERROR (the connection dropped).
 */

ngx_int_t
ngx_http_simhash_redis_tls_start(ngx_http_simhash_redis_t *rd,
    ngx_http_simhash_redis_pt done)
{
    ngx_int_t                       rc;
    ngx_connection_t               *c;
    ngx_http_simhash_redis_conf_t  *conf;

    c = rd->c;
    conf = rd->conf;

    if (c->pool == NULL) {
        /* the TLS state is allocated from the connection's pool */
        c->pool = ngx_create_pool(1024, rd->log);
        if (c->pool == NULL) {
            goto failed;
        }
    }

    if (ngx_ssl_create_connection(conf->ssl, c, NGX_SSL_BUFFER|NGX_SSL_CLIENT)
        != NGX_OK)
    {
        goto failed;
    }

    /* SNI for a server named by a name, not an address */

    if (conf->tls_name.len
        && ngx_inet_addr(conf->tls_name.data, conf->tls_name.len)
           == INADDR_NONE
        && ngx_strlchr(conf->tls_name.data,
                       conf->tls_name.data + conf->tls_name.len, ':')
           == NULL)
    {
        (void) SSL_set_tlsext_host_name(c->ssl->connection,
                                        (char *) conf->tls_name.data);
    }

    rd->tls_done = done;
    rd->tls_read = c->read->handler;
    rd->tls_write = c->write->handler;

    rc = ngx_ssl_handshake(c);

    if (rc == NGX_AGAIN) {
        c->ssl->handler = ngx_http_simhash_redis_tls_done;
        return NGX_AGAIN;
    }

    c->read->handler = rd->tls_read;
    c->write->handler = rd->tls_write;

    return ngx_http_simhash_redis_tls_check(rd, c);

failed:

    ngx_http_simhash_redis_fail(rd, "TLS: cannot start the handshake");
    rd->error_cmd = 0;

    return NGX_ERROR;
}


static void
ngx_http_simhash_redis_tls_done(ngx_connection_t *c)
{
    ngx_http_simhash_redis_t  *rd = c->data;

    c->read->handler = rd->tls_read;
    c->write->handler = rd->tls_write;

    if (ngx_http_simhash_redis_tls_check(rd, c) == NGX_OK) {
        rd->tls_done(rd);
    }
}


/* The handshake done, and the server's certificate: signed by the CA
 * given, and naming the server. */

static ngx_int_t
ngx_http_simhash_redis_tls_check(ngx_http_simhash_redis_t *rd,
    ngx_connection_t *c)
{
    int                             ok;
    long                            rc;
    X509                           *cert;
    ngx_http_simhash_redis_conf_t  *conf;

    conf = rd->conf;

    if (c->ssl == NULL || !c->ssl->handshaked) {
        ngx_http_simhash_redis_fail(rd, "TLS: the handshake failed");
        goto failed;
    }

    rc = SSL_get_verify_result(c->ssl->connection);

    if (rc != X509_V_OK) {
        ngx_http_simhash_redis_fail(rd, "TLS: the server's certificate does "
                                    "not verify: (%l) %s", rc,
                                    X509_verify_cert_error_string(rc));
        goto failed;
    }

    cert = SSL_get_peer_certificate(c->ssl->connection);

    if (cert == NULL) {
        ngx_http_simhash_redis_fail(rd, "TLS: the server showed no "
                                    "certificate");
        goto failed;
    }

    /* an address is checked against the certificate's IP names, a name
     * against its DNS names (and its common name when it has none) */

    ok = X509_check_ip_asc(cert, (char *) conf->tls_name.data, 0);

    if (ok != 1) {
        ok = X509_check_host(cert, (char *) conf->tls_name.data,
                             conf->tls_name.len, 0, NULL);
    }

    X509_free(cert);

    if (ok != 1) {
        ngx_http_simhash_redis_fail(rd, "TLS: the server's certificate does "
                                    "not name \"%V\"", &conf->tls_name);
        goto failed;
    }

    return NGX_OK;

failed:

    /* a connection's failure, over when it connects, not a command's */
    rd->error_cmd = 0;

    return NGX_ERROR;
}


/* Before the socket is closed: no close_notify awaited, the pool freed
 * after it. */

void
ngx_http_simhash_redis_tls_close(ngx_connection_t *c)
{
    if (c->ssl) {
        c->ssl->no_wait_shutdown = 1;
        c->ssl->no_send_shutdown = 1;
        (void) ngx_ssl_shutdown(c);
    }
}

#endif
