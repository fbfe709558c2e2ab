
/*
 * A connection to Redis on nginx's event loop.  See
 * ngx_http_simhash_redis.h.
 *
 * The life of a connection, one ngx_http_simhash_redis_t:
 *
 *   DOWN        waiting for the backoff timer (or never started)
 *   CONNECTING  non-blocking connect(2) under way; timer: the timeout
 *   HANDSHAKE   AUTH, SELECT and PING sent, their replies awaited: a
 *               connection is ready only when a command got an answer
 *   READY       the owner's commands; timer: the reply timeout while any
 *               reply is awaited
 *   CLOSED      for good (worker exit)
 *
 * Why not hiredis's asynchronous API: to bound every reply while it is
 * read, and to refuse one that nothing asked for (hiredis 0.14's async
 * layer asserts on it: the worker would abort), the reader needs object
 * functions of ours, and the async API gives no way to set them short of
 * swapping the function table inside its context (ac->c.reader->fn), a
 * field of hiredis's own (hiredis 1.x's redisOptions and
 * redisAsyncSetPushCallback reach neither the reader's object functions
 * nor its bounds).  The reader alone is hiredis's supported API
 * for a program that does its own I/O (read.h's "public API for the
 * protocol parser", the README's "Reader API"):
 * redisReaderCreateWithFunctions() takes our functions, and its objects
 * are ours from the first byte; nothing here touches a field of a
 * hiredis struct but redisReply's and redisReadTask's, which are the
 * reader's interface (and its error text, by read.h's own
 * redisReaderGetError).  The I/O is nginx's, which the async API wrapped
 * anyway.
 *
 * Every reply is bounded while it is read: each object is counted before
 * it is made (ngx_http_simhash_redis_reader.c), and the bytes received while
 * a reply is not whole are counted as they come.  A reply over a bound, or
 * one that nothing asked for, makes the object function fail (the reader
 * stops with an error) or the read stop, and the connection ends, before
 * any callback sees the reply.
 *
 * Whatever ends a connection (the server closes it, a read or write error,
 * a timeout, a reply the owner cannot use, the worker exiting),
 * ngx_http_simhash_redis_end() is the one place where it ends: the socket
 * closed, every awaited callback called with NULL, the next connection
 * scheduled, the owner's down().  Inside a callback the end waits for the
 * callback to return.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_http_simhash_redis.h"
#include "ngx_http_simhash_redis_reader.h"


#define NGX_HTTP_SIMHASH_REDIS_DOWN        0
#define NGX_HTTP_SIMHASH_REDIS_CONNECTING  1
#define NGX_HTTP_SIMHASH_REDIS_HANDSHAKE   2
#define NGX_HTTP_SIMHASH_REDIS_READY       3
#define NGX_HTTP_SIMHASH_REDIS_CLOSED      4

#define NGX_HTTP_SIMHASH_REDIS_BACKOFF_MIN 100     /* ms */
#define NGX_HTTP_SIMHASH_REDIS_BACKOFF_MAX 5000

#define NGX_HTTP_SIMHASH_REDIS_READ        (16 * 1024)  /* bytes per recv */
#define NGX_HTTP_SIMHASH_REDIS_READS        4       /* recvs per event */


/* a command awaiting its reply */
typedef struct {
    ngx_queue_t                       queue;
    ngx_http_simhash_redis_reply_pt   fn;
    void                             *data;
    ngx_uint_t                        owner;   /* the owner's, not the
                                                  handshake's */
} ngx_http_simhash_redis_cmd_t;


static void ngx_http_simhash_redis_connect(ngx_http_simhash_redis_t *rd);
static ngx_int_t ngx_http_simhash_redis_socket(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_redis_read_handler(ngx_event_t *ev);
static void ngx_http_simhash_redis_peek(void *data, const redisReadTask *task,
    const char *str, size_t len);
static ngx_int_t ngx_http_simhash_redis_replies(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_redis_dispatch(ngx_http_simhash_redis_t *rd,
    redisReply *reply);
static void ngx_http_simhash_redis_write_handler(ngx_event_t *ev);
static void ngx_http_simhash_redis_send(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_redis_timer_handler(ngx_event_t *ev);
static void ngx_http_simhash_redis_connected(ngx_http_simhash_redis_t *rd);
static ngx_int_t ngx_http_simhash_redis_queue(ngx_http_simhash_redis_t *rd,
    ngx_http_simhash_redis_reply_pt fn, void *data, ngx_uint_t owner,
    int argc, const char **argv, const size_t *argvlen);
static void ngx_http_simhash_redis_handshake(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data);
static void ngx_http_simhash_redis_owned(ngx_http_simhash_redis_t *rd,
    redisReply *reply);
static void ngx_http_simhash_redis_lost(ngx_http_simhash_redis_t *rd,
    ngx_err_t err, const char *what);
static void ngx_http_simhash_redis_drop(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_redis_end(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_redis_error(ngx_http_simhash_redis_t *rd,
    ngx_uint_t level, const char *fmt, ...);
static void ngx_http_simhash_redis_watch(ngx_http_simhash_redis_t *rd);




void
ngx_http_simhash_redis_start(ngx_http_simhash_redis_t *rd)
{
    rd->timer.handler = ngx_http_simhash_redis_timer_handler;
    rd->timer.data = rd;
    rd->timer.log = rd->log;
    rd->timer.cancelable = 1;

    rd->backoff = NGX_HTTP_SIMHASH_REDIS_BACKOFF_MIN;
    rd->state = NGX_HTTP_SIMHASH_REDIS_DOWN;
    ngx_queue_init(&rd->cmds);

    ngx_http_simhash_redis_connect(rd);
}


ngx_uint_t
ngx_http_simhash_redis_is_ready(ngx_http_simhash_redis_t *rd)
{
    return rd->state == NGX_HTTP_SIMHASH_REDIS_READY && !rd->dropped;
}


static void
ngx_http_simhash_redis_connect(ngx_http_simhash_redis_t *rd)
{
    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    rd->attempts++;

    if (rd->connects++) {
        (void) ngx_atomic_fetch_add(rd->reconnects, 1);
    }

    rd->unparsed = 0;
    rd->refused = NULL;
    rd->out_pos = 0;
    rd->out_len = 0;

    rd->rr.string = rd->peek ? ngx_http_simhash_redis_peek : NULL;
    rd->rr.data = rd;

    if (ngx_http_simhash_redis_reader_init(&rd->rr) != NGX_OK) {
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "out of memory");
        goto later;
    }

    if (ngx_http_simhash_redis_socket(rd) != NGX_OK) {
        ngx_http_simhash_redis_reader_free(&rd->rr);
        goto later;
    }

    rd->state = NGX_HTTP_SIMHASH_REDIS_CONNECTING;
    ngx_add_timer(&rd->timer, rd->conf->timeout);

    return;

later:

    rd->state = NGX_HTTP_SIMHASH_REDIS_DOWN;
    ngx_add_timer(&rd->timer, rd->backoff);
    rd->backoff = ngx_min(rd->backoff * 2, NGX_HTTP_SIMHASH_REDIS_BACKOFF_MAX);
}


/*
 * The socket, as an nginx connection, and connect(2) begun: it returns at
 * once (non-blocking, the address numeric); the write event tells when it
 * is done.  The connection is marked idle: a worker that starts a
 * graceful shutdown closes idle connections at once (with c->close set),
 * so the old worker of a reload lets go of Redis for the new one.
 */

static ngx_int_t
ngx_http_simhash_redis_socket(ngx_http_simhash_redis_t *rd)
{
    int                              rc, one;
    ngx_err_t                        err;
    ngx_int_t                        event;
    ngx_socket_t                     s;
    ngx_connection_t                *c;
    ngx_http_simhash_redis_conf_t   *conf;

    conf = rd->conf;
    one = 1;

    s = ngx_socket(conf->sockaddr->sa_family, SOCK_STREAM, 0);

    if (s == (ngx_socket_t) -1) {
        ngx_http_simhash_redis_lost(rd, ngx_socket_errno, "cannot connect");
        return NGX_ERROR;
    }

    c = ngx_get_connection(s, rd->log);
    if (c == NULL) {
        (void) ngx_close_socket(s);
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR,
                                     "no free connection for Redis");
        return NGX_ERROR;
    }

    c->data = rd;
    c->log = rd->log;
    c->idle = 1;
    c->read->log = rd->log;
    c->write->log = rd->log;
    c->read->handler = ngx_http_simhash_redis_read_handler;
    c->write->handler = ngx_http_simhash_redis_write_handler;
    rd->c = c;

    if (ngx_nonblocking(s) == -1) {
        err = ngx_socket_errno;
        goto failed;
    }

    /* pipelined commands go out at once, as hiredis's own connect has
     * them */

    if (conf->sockaddr->sa_family != AF_UNIX
        && setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (const void *) &one,
                      sizeof(int))
           == -1)
    {
        err = ngx_socket_errno;
        goto failed;
    }

    if (ngx_add_conn && ngx_add_conn(c) == NGX_ERROR) {
        err = 0;
        goto failed;
    }

    rc = connect(s, conf->sockaddr, conf->socklen);
    err = (rc == -1) ? ngx_socket_errno : 0;

    if (rc == -1 && err != NGX_EINPROGRESS) {
        goto failed;
    }

    if (ngx_add_conn == NULL) {
        event = (ngx_event_flags & NGX_USE_CLEAR_EVENT) ? NGX_CLEAR_EVENT
                                                        : NGX_LEVEL_EVENT;

        if (ngx_add_event(c->read, NGX_READ_EVENT, event) != NGX_OK
            || ngx_add_event(c->write, NGX_WRITE_EVENT, event) != NGX_OK)
        {
            err = 0;
            goto failed;
        }
    }

    if (rc == 0) {
        /* a unix socket may connect at once: the write event says so */
        ngx_post_event(c->write, &ngx_posted_events);
    }

    return NGX_OK;

failed:

    ngx_http_simhash_redis_lost(rd, err, "cannot connect");

    ngx_close_connection(c);
    rd->c = NULL;

    return NGX_ERROR;
}


/*
 * Whatever the server sent, fed to the reader 16 KB at a time, and each
 * reply made whole given to its command's callback at once.  Edge-
 * triggered events: read until the socket has no more, but READS recvs
 * at most per turn of the event loop: when more waits (a large reply, or
 * a flood) the rest is read at the next turn (ngx_posted_next_events),
 * after the requests whose events came meanwhile.
 */

static void
ngx_http_simhash_redis_read_handler(ngx_event_t *ev)
{
    ngx_connection_t          *c = ev->data;
    ngx_http_simhash_redis_t  *rd = c->data;

    ssize_t     n;
    ngx_err_t   err;
    ngx_uint_t  reads;

    static u_char  buf[NGX_HTTP_SIMHASH_REDIS_READ];

    if (c->close) {
        /* a graceful shutdown closes idle connections: this is one */
        ngx_http_simhash_redis_close(rd);
        return;
    }

    if (rd->state == NGX_HTTP_SIMHASH_REDIS_CONNECTING) {
        /* connect(2) failed: the socket is readable with its error */
        ngx_http_simhash_redis_connected(rd);
        return;
    }

    for (reads = 0; /* void */; reads++) {

        if (reads == NGX_HTTP_SIMHASH_REDIS_READS) {
            ngx_post_event(ev, &ngx_posted_next_events);
            return;
        }

#if (NGX_SSL)
        if (c->ssl) {
            /* nginx's TLS layer: NGX_AGAIN, NGX_ERROR (logged), 0, n */
            n = c->recv(c, buf, sizeof(buf));

            if (n == NGX_AGAIN) {
                break;
            }

            if (n == NGX_ERROR) {
                ngx_http_simhash_redis_error(rd, NGX_LOG_ERR,
                                             "connection lost: TLS");
                ngx_http_simhash_redis_drop(rd);
                return;
            }

        } else
#endif
        n = recv(c->fd, buf, sizeof(buf), 0);

        if (n == 0) {
            ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "connection lost: "
                                         "Server closed the connection");
            ngx_http_simhash_redis_drop(rd);
            return;
        }

        if (n == -1) {
            err = ngx_socket_errno;

            if (err == NGX_EAGAIN) {
                ev->ready = 0;
                break;
            }

            if (err == NGX_EINTR) {
                continue;
            }

            ngx_http_simhash_redis_lost(rd, err, "connection lost");
            ngx_http_simhash_redis_drop(rd);
            return;
        }

        if (ngx_http_simhash_redis_reader_feed(&rd->rr, buf, n) != NGX_OK) {
            ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "out of memory");
            ngx_http_simhash_redis_drop(rd);
            return;
        }

        /*
         * The reader keeps what it got until a reply is whole: a bulk
         * string that never ends would take all memory.  Counted here, up
         * to the last reply made whole (what follows it in the same read
         * is not: at most 16 KB more).
         */

        rd->unparsed += n;

        if (ngx_http_simhash_redis_replies(rd) != NGX_OK) {
            return;
        }

        if (rd->unparsed > NGX_HTTP_SIMHASH_REDIS_MAX_REPLY) {
            rd->refused = "a reply larger than 16 MB";
            ngx_http_simhash_redis_drop(rd);
            return;
        }
    }

    if (ngx_handle_read_event(ev, 0) != NGX_OK) {
        ngx_http_simhash_redis_lost(rd, 0, "connection lost");
        ngx_http_simhash_redis_drop(rd);
    }
}


/* A string of a reply being read, to the owner's peek. */

static void
ngx_http_simhash_redis_peek(void *data, const redisReadTask *task,
    const char *str, size_t len)
{
    ngx_http_simhash_redis_t  *rd = data;

    rd->peek(rd, task, str, len);
}


/* Every reply the reader has made whole; NGX_ERROR: the connection is
 * gone. */

static ngx_int_t
ngx_http_simhash_redis_replies(ngx_http_simhash_redis_t *rd)
{
    ngx_int_t    rc;
    const char  *why;
    redisReply  *reply;

    for ( ;; ) {
        rc = ngx_http_simhash_redis_reader_get(&rd->rr, &reply);

        if (rc != NGX_OK) {
            rd->refused = rd->rr.refused;

            if (rd->refused == NULL) {
                why = ngx_http_simhash_redis_reader_error(&rd->rr);
                ngx_http_simhash_redis_error(rd, NGX_LOG_ERR,
                                             "connection lost: %s", why);
            }

            ngx_http_simhash_redis_drop(rd);
            return NGX_ERROR;
        }

        if (reply == NULL) {
            return NGX_OK;
        }

        rd->unparsed = 0;

        ngx_http_simhash_redis_dispatch(rd, reply);

        if (rd->dropped) {
            ngx_http_simhash_redis_end(rd);
            return NGX_ERROR;
        }
    }
}


/* A whole reply to the oldest command awaiting one. */

static void
ngx_http_simhash_redis_dispatch(ngx_http_simhash_redis_t *rd,
    redisReply *reply)
{
    ngx_queue_t                   *q;
    ngx_http_simhash_redis_cmd_t  *cmd;

    if (ngx_queue_empty(&rd->cmds)) {
        /* the object functions refuse it first: never here */
        ngx_http_simhash_redis_reply_free(reply);
        rd->refused = "a reply that no command asked for";
        ngx_http_simhash_redis_drop(rd);
        return;
    }

    q = ngx_queue_head(&rd->cmds);
    ngx_queue_remove(q);
    cmd = ngx_queue_data(q, ngx_http_simhash_redis_cmd_t, queue);

    if (cmd->owner) {
        ngx_http_simhash_redis_owned(rd, reply);
    }

    rd->calling = 1;
    cmd->fn(rd, reply, cmd->data);
    rd->calling = 0;

    ngx_http_simhash_redis_reply_free(reply);
    ngx_free(cmd);
}


static void
ngx_http_simhash_redis_write_handler(ngx_event_t *ev)
{
    ngx_connection_t          *c = ev->data;
    ngx_http_simhash_redis_t  *rd = c->data;

    if (rd->state == NGX_HTTP_SIMHASH_REDIS_CONNECTING) {
        ngx_http_simhash_redis_connected(rd);
        return;
    }

    ngx_http_simhash_redis_send(rd);
}


/* What waits in the output buffer, as far as the socket takes it. */

static void
ngx_http_simhash_redis_send(ngx_http_simhash_redis_t *rd)
{
    ssize_t            n;
    ngx_err_t          err;
    ngx_connection_t  *c;

    c = rd->c;

    if (c == NULL || rd->dropped) {
        return;
    }

    while (rd->out_pos < rd->out_len) {

#if (NGX_SSL)
        if (c->ssl) {
            n = c->send(c, rd->out + rd->out_pos, rd->out_len - rd->out_pos);

            if (n == NGX_AGAIN) {
                break;
            }

            if (n == NGX_ERROR) {
                ngx_http_simhash_redis_error(rd, NGX_LOG_ERR,
                                             "connection lost: TLS");
                ngx_http_simhash_redis_drop(rd);
                return;
            }

            rd->out_pos += n;
            continue;
        }
#endif

        n = send(c->fd, rd->out + rd->out_pos, rd->out_len - rd->out_pos, 0);

        if (n == -1) {
            err = ngx_socket_errno;

            if (err == NGX_EAGAIN) {
                c->write->ready = 0;
                break;
            }

            if (err == NGX_EINTR) {
                continue;
            }

            ngx_http_simhash_redis_lost(rd, err, "connection lost");
            ngx_http_simhash_redis_drop(rd);
            return;
        }

        rd->out_pos += n;
    }

    if (rd->out_pos == rd->out_len) {
        rd->out_pos = 0;
        rd->out_len = 0;
    }

    if (ngx_handle_write_event(c->write, 0) != NGX_OK) {
        ngx_http_simhash_redis_lost(rd, 0, "connection lost");
        ngx_http_simhash_redis_drop(rd);
    }
}


/* The connect or reply timeout, or the end of the backoff. */

static void
ngx_http_simhash_redis_timer_handler(ngx_event_t *ev)
{
    ngx_http_simhash_redis_t  *rd = ev->data;

    switch (rd->state) {

    case NGX_HTTP_SIMHASH_REDIS_DOWN:
        ngx_http_simhash_redis_connect(rd);
        return;

    case NGX_HTTP_SIMHASH_REDIS_CONNECTING:
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR,
                                     "cannot connect: timed out after %M ms",
                                     rd->conf->timeout);
        break;

    case NGX_HTTP_SIMHASH_REDIS_HANDSHAKE:
    case NGX_HTTP_SIMHASH_REDIS_READY:
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR,
                                     "no reply within %M ms",
                                     rd->conf->timeout + rd->wait);
        break;

    default:
        return;
    }

    ngx_http_simhash_redis_drop(rd);
}


/* connect(2) is done: AUTH and SELECT if configured, PING, then ready. */

static void
ngx_http_simhash_redis_connected(ngx_http_simhash_redis_t *rd)
{
    int                             argc, err;
    u_char                          db[NGX_INT_T_LEN];
    size_t                          argvlen[3];
    socklen_t                       len;
    const char                     *argv[3];
    ngx_http_simhash_redis_conf_t  *conf;

    conf = rd->conf;
    err = 0;
    len = sizeof(int);

    if (getsockopt(rd->c->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len)
        == -1)
    {
        err = ngx_socket_errno;
    }

    if (err) {
        ngx_http_simhash_redis_lost(rd, err, "cannot connect");
        ngx_http_simhash_redis_drop(rd);
        return;
    }

#if (NGX_SSL)
    /* rediss://: TLS first, checked, before anything is sent; the
     * connect timer bounds the handshake too */
    if (conf->ssl && rd->c->ssl == NULL) {
        if (ngx_http_simhash_redis_tls_start(rd,
                                             ngx_http_simhash_redis_connected)
            != NGX_OK)
        {
            return;
        }
    }
#endif

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    rd->state = NGX_HTTP_SIMHASH_REDIS_HANDSHAKE;
    rd->handshake = 0;

    if (conf->password.len) {
        argc = 0;
        argv[argc] = "AUTH";
        argvlen[argc++] = 4;

        if (conf->user.len) {
            argv[argc] = (char *) conf->user.data;
            argvlen[argc++] = conf->user.len;
        }

        argv[argc] = (char *) conf->password.data;
        argvlen[argc++] = conf->password.len;

        if (ngx_http_simhash_redis_queue(rd, ngx_http_simhash_redis_handshake,
                                         "AUTH", 0, argc, argv, argvlen)
            == NGX_OK)
        {
            rd->handshake++;
        }
    }

    if (conf->db) {
        argv[0] = "SELECT";
        argvlen[0] = 6;
        argv[1] = (char *) db;
        argvlen[1] = ngx_sprintf(db, "%ui", conf->db) - db;

        if (ngx_http_simhash_redis_queue(rd, ngx_http_simhash_redis_handshake,
                                         "SELECT", 0, 2, argv, argvlen)
            == NGX_OK)
        {
            rd->handshake++;
        }
    }

    /* without a password, a server that wants one says so here */

    argv[0] = "PING";
    argvlen[0] = 4;

    if (ngx_http_simhash_redis_queue(rd, ngx_http_simhash_redis_handshake,
                                     "PING", 0, 1, argv, argvlen)
        == NGX_OK)
    {
        rd->handshake++;
    }

    ngx_add_timer(&rd->timer, conf->timeout);
}


static void
ngx_http_simhash_redis_handshake(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    /* a reply of AUTH, SELECT or PING (data: which) */

    if (reply == NULL || rd->state != NGX_HTTP_SIMHASH_REDIS_HANDSHAKE) {
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "%s refused: %*s",
                                     (char *) data, (size_t) reply->len,
                                     reply->str);
        ngx_http_simhash_redis_drop(rd);
        return;
    }

    if (--rd->handshake) {
        return;
    }

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->error[0] && !rd->error_cmd) {
        ngx_log_error(NGX_LOG_NOTICE, rd->log, 0,
                      "simhash zone \"%V\": %s connected to %V again after "
                      "%ui attempts", &rd->zone, rd->name, &rd->conf->url,
                      rd->attempts);
        rd->error[0] = '\0';

    } else {
        ngx_log_error(NGX_LOG_INFO, rd->log, 0,
                      "simhash zone \"%V\": %s connected to %V",
                      &rd->zone, rd->name, &rd->conf->url);
    }

    /* when a command of the owner failed last time, it is not over yet */

    if (rd->error[0] == '\0') {
        rd->backoff = NGX_HTTP_SIMHASH_REDIS_BACKOFF_MIN;
        rd->attempts = 0;
    }

    rd->state = NGX_HTTP_SIMHASH_REDIS_READY;
    rd->pending = 0;

    rd->ready(rd);
}


ngx_int_t
ngx_http_simhash_redis_command(ngx_http_simhash_redis_t *rd,
    ngx_http_simhash_redis_reply_pt fn, void *data, int argc,
    const char **argv, const size_t *argvlen)
{
    if (!ngx_http_simhash_redis_is_ready(rd)) {
        return NGX_ERROR;
    }

    if (ngx_http_simhash_redis_queue(rd, fn, data, 1, argc, argv, argvlen)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (rd->pending++ == 0) {
        ngx_http_simhash_redis_watch(rd);
    }

    return NGX_OK;
}


/*
 * A command in the protocol's form ("*N\r\n$LEN\r\nARG\r\n...") at the end
 * of the output buffer, kept from one command to the next, and its
 * callback at the end of the queue.  It is written when the current event
 * is handled (the write event is posted): a write error found now would
 * end the connection inside the owner's loop that sends.
 */

static ngx_int_t
ngx_http_simhash_redis_queue(ngx_http_simhash_redis_t *rd,
    ngx_http_simhash_redis_reply_pt fn, void *data, ngx_uint_t owner,
    int argc, const char **argv, const size_t *argvlen)
{
    int                            i;
    u_char                        *p;
    size_t                         len, size;
    ngx_http_simhash_redis_cmd_t  *cmd;

    len = 1 + NGX_INT_T_LEN + 2;

    for (i = 0; i < argc; i++) {
        len += 1 + NGX_SIZE_T_LEN + 2 + argvlen[i] + 2;
    }

    if (rd->out_len + len > rd->out_size) {
        size = ngx_max(ngx_max(rd->out_size * 2, rd->out_len + len), 4096);

        p = ngx_alloc(size, rd->log);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (rd->out) {
            ngx_memcpy(p, rd->out, rd->out_len);
            ngx_free(rd->out);
        }

        rd->out = p;
        rd->out_size = size;
    }

    cmd = ngx_alloc(sizeof(ngx_http_simhash_redis_cmd_t), rd->log);
    if (cmd == NULL) {
        return NGX_ERROR;
    }

    cmd->fn = fn;
    cmd->data = data;
    cmd->owner = owner;
    ngx_queue_insert_tail(&rd->cmds, &cmd->queue);

    p = ngx_sprintf(rd->out + rd->out_len, "*%d\r\n", argc);

    for (i = 0; i < argc; i++) {
        p = ngx_sprintf(p, "$%uz\r\n", argvlen[i]);
        p = ngx_cpymem(p, argv[i], argvlen[i]);
        *p++ = '\r';
        *p++ = '\n';
    }

    rd->out_len = p - rd->out;
    rd->rr.asked++;

    if (!rd->c->write->posted) {
        ngx_post_event(rd->c->write, &ngx_posted_events);
    }

    return NGX_OK;
}


/* A reply of the owner's commands, before its callback: progress. */

static void
ngx_http_simhash_redis_owned(ngx_http_simhash_redis_t *rd, redisReply *reply)
{
    if (rd->error[0] && reply->type != REDIS_REPLY_ERROR) {

        /* the error of a command logged last is over */

        ngx_log_error(NGX_LOG_NOTICE, rd->log, 0,
                      "simhash zone \"%V\": %s, %V: working again after "
                      "%ui attempts", &rd->zone, rd->name, &rd->conf->url,
                      rd->attempts);
        rd->error[0] = '\0';
        rd->backoff = NGX_HTTP_SIMHASH_REDIS_BACKOFF_MIN;
        rd->attempts = 0;
    }

    if (rd->pending) {
        /* the timeout starts again for what is still awaited */

        if (--rd->pending) {
            ngx_http_simhash_redis_watch(rd);

        } else if (rd->timer.timer_set) {
            ngx_del_timer(&rd->timer);
        }
    }
}


static void
ngx_http_simhash_redis_watch(ngx_http_simhash_redis_t *rd)
{
    ngx_add_timer(&rd->timer, rd->conf->timeout + rd->wait);
}


void
ngx_http_simhash_redis_fail(ngx_http_simhash_redis_t *rd, const char *fmt,
    ...)
{
    u_char   msg[256], *p;
    va_list  args;

    va_start(args, fmt);
    p = ngx_vslprintf(msg, msg + sizeof(msg) - 1, fmt, args);
    va_end(args);

    *p = '\0';

    ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "%s", msg);
    rd->error_cmd = 1;
    ngx_http_simhash_redis_drop(rd);
}


/* A system error, as "what: its text" (err 0: nginx's events failed). */

static void
ngx_http_simhash_redis_lost(ngx_http_simhash_redis_t *rd, ngx_err_t err,
    const char *what)
{
    u_char  text[NGX_MAX_ERROR_STR], *p;

    if (err == 0) {
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "%s: event error",
                                     what);
        return;
    }

    p = ngx_strerror(err, text, sizeof(text) - 1);
    *p = '\0';

    ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "%s: %s", what, text);
}


/* End the connection: now, or, inside a callback, when it returns. */

static void
ngx_http_simhash_redis_drop(ngx_http_simhash_redis_t *rd)
{
    if (rd->c == NULL && rd->rr.reader == NULL) {
        return;
    }

    if (rd->calling) {
        rd->dropped = 1;
        return;
    }

    ngx_http_simhash_redis_end(rd);
}


/*
 * The one place where a connection ends: the socket closed (its events
 * removed and unposted), the reader freed with any partial reply, every
 * awaited callback called with NULL, then, unless the worker is exiting
 * for good, the next connection scheduled and the owner told.
 */

static void
ngx_http_simhash_redis_end(ngx_http_simhash_redis_t *rd)
{
    ngx_uint_t                     closed;
    ngx_queue_t                   *q;
    ngx_http_simhash_redis_cmd_t  *cmd;

    rd->dropped = 0;

    if (rd->c) {
        ngx_pool_t  *pool = rd->c->pool;

#if (NGX_SSL)
        ngx_http_simhash_redis_tls_close(rd->c);
#endif
        ngx_close_connection(rd->c);
        rd->c = NULL;

        if (pool) {
            ngx_destroy_pool(pool);     /* the TLS state's */
        }
    }

    ngx_http_simhash_redis_reader_free(&rd->rr);

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    /*
     * Not ready from here on: a callback told of its lost command may send
     * another (a cluster client asks for the slot map when a write is
     * lost), and that must fail at once, not be queued on the socket just
     * closed (rd->c is NULL: the worker died of SIGSEGV).
     */

    closed = (rd->state == NGX_HTTP_SIMHASH_REDIS_CLOSED);
    rd->state = closed ? rd->state : NGX_HTTP_SIMHASH_REDIS_DOWN;

    while (!ngx_queue_empty(&rd->cmds)) {
        q = ngx_queue_head(&rd->cmds);
        ngx_queue_remove(q);
        cmd = ngx_queue_data(q, ngx_http_simhash_redis_cmd_t, queue);

        cmd->fn(rd, NULL, cmd->data);
        ngx_free(cmd);
    }

    rd->out_pos = 0;
    rd->out_len = 0;

    if (closed || rd->state == NGX_HTTP_SIMHASH_REDIS_CLOSED) {
        return;
    }

    if (rd->refused) {
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR,
                                     "%s: connection dropped", rd->refused);
    }

    rd->state = NGX_HTTP_SIMHASH_REDIS_DOWN;
    rd->handshake = 0;
    rd->pending = 0;

    if (!(ngx_exiting || ngx_terminate || ngx_quit)) {
        ngx_add_timer(&rd->timer, rd->backoff);
        rd->backoff = ngx_min(rd->backoff * 2,
                              NGX_HTTP_SIMHASH_REDIS_BACKOFF_MAX);
    }

    rd->down(rd);

    rd->refused = NULL;
}


void
ngx_http_simhash_redis_close(ngx_http_simhash_redis_t *rd)
{
    rd->state = NGX_HTTP_SIMHASH_REDIS_CLOSED;

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->c || rd->rr.reader) {
        ngx_http_simhash_redis_end(rd);
    }

    if (rd->out) {
        ngx_free(rd->out);
        rd->out = NULL;
        rd->out_size = 0;
    }
}


/*
 * An error line, once per kind: the same error again (every retry while
 * Redis is down) is not logged again until the connection was ready in
 * between, or another error came.
 */

static void
ngx_http_simhash_redis_error(ngx_http_simhash_redis_t *rd, ngx_uint_t level,
    const char *fmt, ...)
{
    u_char   msg[sizeof(rd->error)], *p;
    va_list  args;

    va_start(args, fmt);
    p = ngx_vslprintf(msg, msg + sizeof(msg) - 1, fmt, args);
    va_end(args);

    *p = '\0';

    rd->error_cmd = 0;

    if (ngx_strcmp(msg, rd->error) == 0) {
        return;
    }

    ngx_cpystrn(rd->error, msg, sizeof(rd->error));

    ngx_log_error(level, rd->log, 0, "simhash zone \"%V\": %s, %V: %s",
                  &rd->zone, rd->name, &rd->conf->url, msg);
}
