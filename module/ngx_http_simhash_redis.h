
/*
 * ngx_http_simhash_redis.h -- a connection to Redis on nginx's event loop.
 *
 * An nginx connection of our own does the I/O (a non-blocking connect(2)
 * to the numeric address resolved when the configuration was read, reads
 * and writes on nginx's events), and hiredis's reply parser (its "reader"
 * API, read.h: redisReaderCreateWithFunctions, redisReaderFeed,
 * redisReaderGetReply) makes the replies, with reply objects of ours
 * that count what each reply costs.  Commands are pipelined; their
 * callbacks are called in order, one per reply.  Added to the protocol: a
 * connect timeout, a reply timeout, AUTH and SELECT before the link is
 * "ready", and reconnecting with backoff after any loss.  Nothing here
 * ever blocks.
 *
 * The owner gives two handlers: ready (connected, authenticated, the
 * database selected: commands may be sent) and down (the connection is
 * gone; every pending command's callback has run with a NULL reply, and a
 * reconnect is scheduled).  Errors are logged once per kind: the same
 * failure again and again (Redis down for an hour, a wrong password) is
 * logged when it starts and when it ends, not at every retry.
 *
 * The Redis URL of simhash_replicate is read by ngx_http_simhash_redis_url.c
 * into an ngx_http_simhash_redis_conf_t; the replies of the stream commands
 * are parsed by ngx_http_simhash_redis_reply.c.
 */


#ifndef _NGX_HTTP_SIMHASH_REDIS_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_REDIS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include <hiredis/hiredis.h>

#include "ngx_http_simhash_redis_reader.h"


/* a Redis server, from the URL of simhash_replicate */
typedef struct {
    ngx_str_t                    url;       /* for the log: no password */
    struct sockaddr             *sockaddr;  /* numeric, or a unix socket */
    socklen_t                    socklen;
    ngx_str_t                    user;      /* "": AUTH with a password */
    ngx_str_t                    password;  /* "": no AUTH */
    ngx_uint_t                   db;
    ngx_msec_t                   timeout;   /* connect, and every reply */
    unsigned                     tls:1;     /* rediss:// */
    unsigned                     tls_ok:1;  /* the caller takes rediss:// */
#if (NGX_SSL)
    ngx_ssl_t                   *ssl;       /* NULL: plain TCP */
#endif
    ngx_str_t                    tls_name;  /* the certificate must name,
                                               NUL-terminated */
} ngx_http_simhash_redis_conf_t;


typedef struct ngx_http_simhash_redis_s  ngx_http_simhash_redis_t;

typedef void (*ngx_http_simhash_redis_pt)(ngx_http_simhash_redis_t *rd);

/* a command's reply, or NULL when the connection went first (then the
 * callback must not send anything); the reply is freed after it returns */
typedef void (*ngx_http_simhash_redis_reply_pt)(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data);

/* a string of a reply being read (its place: task->parent, task->idx) */
typedef void (*ngx_http_simhash_redis_peek_pt)(ngx_http_simhash_redis_t *rd,
    const redisReadTask *task, const char *str, size_t len);


struct ngx_http_simhash_redis_s {
    ngx_http_simhash_redis_conf_t  *conf;
    const char                     *name;      /* in log lines */
    ngx_str_t                       zone;      /* in log lines */
    void                           *data;      /* the owner's */
    ngx_http_simhash_redis_pt       ready;
    ngx_http_simhash_redis_pt       down;
    ngx_http_simhash_redis_peek_pt  peek;      /* NULL: none */

    ngx_connection_t               *c;         /* NULL: not connected */
    ngx_http_simhash_redis_reader_t  rr;       /* its replies, bounded */
    ngx_queue_t                     cmds;      /* awaiting their reply,
                                                  oldest first */
    ngx_log_t                      *log;
    ngx_event_t                     timer;     /* connect and reply
                                                  timeout; the backoff */
    ngx_msec_t                      wait;      /* how long the server may
                                                  hold a reply on purpose
                                                  (XREAD BLOCK), beyond the
                                                  timeout: the owner's */
    ngx_msec_t                      backoff;
    ngx_atomic_t                   *reconnects;    /* counted here */
    ngx_uint_t                      state;
    ngx_uint_t                      handshake;     /* replies awaited */
    ngx_uint_t                      pending;       /* replies awaited */
    ngx_uint_t                      connects;
    ngx_uint_t                      attempts;      /* since the last ready */

    u_char                         *out;       /* commands not written yet:
                                                  from out_pos to out_len */
    size_t                          out_pos;
    size_t                          out_len;
    size_t                          out_size;

    size_t                          unparsed;  /* bytes received since the
                                                  last whole reply */
    const char                     *refused;   /* why the reader stopped
                                                  (a reply over a bound,
                                                  unsolicited): the owner
                                                  sees it in down() */
    unsigned                        calling:1;     /* in a callback */
    unsigned                        dropped:1;     /* ended meanwhile: the
                                                      end comes after it */
    u_char                          error[128];    /* the last logged */
    ngx_uint_t                      error_cmd;     /* it was a command's:
                                                      over at its success */
#if (NGX_SSL)
    ngx_http_simhash_redis_pt       tls_done;      /* the handshake's end */
    ngx_event_handler_pt            tls_read;      /* the handlers it */
    ngx_event_handler_pt            tls_write;     /* borrowed */
#endif
};


/* The URL of simhash_replicate, into redis (at configuration time). */
char *ngx_http_simhash_redis_url(ngx_conf_t *cf,
    ngx_http_simhash_redis_conf_t *redis, ngx_str_t *url);

/* Connect now (ready or down follows, never at once). */
void ngx_http_simhash_redis_start(ngx_http_simhash_redis_t *rd);

/* Close for good (worker exit): no handler but the commands' is called. */
void ngx_http_simhash_redis_close(ngx_http_simhash_redis_t *rd);

/* A reply the owner cannot use: log it (once per kind), drop the
 * connection, reconnect after the backoff. */
void ngx_http_simhash_redis_fail(ngx_http_simhash_redis_t *rd,
    const char *fmt, ...);

/*
 * Send a command (binary-safe arguments) when ready: it is copied, and
 * written once the current event is handled.  The callback gets the
 * reply.  While replies are awaited, none for timeout + wait ends the
 * connection.  NGX_ERROR: not ready, or no memory.
 */
ngx_int_t ngx_http_simhash_redis_command(ngx_http_simhash_redis_t *rd,
    ngx_http_simhash_redis_reply_pt fn, void *data, int argc,
    const char **argv, const size_t *argvlen);

ngx_uint_t ngx_http_simhash_redis_is_ready(ngx_http_simhash_redis_t *rd);

#if (NGX_SSL)
/*
 * TLS (ngx_http_simhash_redis_tls.c): the handshake on a connected socket
 * and the check of the server's certificate; NGX_OK: done; NGX_AGAIN:
 * done(rd) follows; NGX_ERROR: the connection was dropped.  Before a TLS
 * connection's socket is closed: tls_close.
 */
ngx_int_t ngx_http_simhash_redis_tls_start(ngx_http_simhash_redis_t *rd,
    ngx_http_simhash_redis_pt done);
void ngx_http_simhash_redis_tls_close(ngx_connection_t *c);
#endif


#endif /* _NGX_HTTP_SIMHASH_REDIS_H_INCLUDED_ */
