
/*
 * A connection to Redis on nginx's event loop: hiredis's asynchronous API
 * with an nginx connection on its socket.  See ngx_http_simhash_redis.h.
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
 * Every reply is bounded while it is read (ngx_http_simhash_redis.h): the
 * reader's object functions are ours, and count what each reply costs.  A
 * reply over a bound, or one that nothing asked for (hiredis 0.14 asserts
 * on it: the worker would abort), makes the object function fail, which
 * ends the connection as a protocol error, before hiredis sees the reply.
 *
 * Whatever ends a connection (the server closes it, a read or write error,
 * a timeout, a reply the owner cannot use, the worker exiting), hiredis
 * frees its context and calls our cleanup hook last thing before closing
 * the socket: ngx_http_simhash_redis_cleanup() is the one place where a
 * connection ends, frees the nginx connection, and schedules the next.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_http_simhash_redis.h"


#define NGX_HTTP_SIMHASH_REDIS_DOWN        0
#define NGX_HTTP_SIMHASH_REDIS_CONNECTING  1
#define NGX_HTTP_SIMHASH_REDIS_HANDSHAKE   2
#define NGX_HTTP_SIMHASH_REDIS_READY       3
#define NGX_HTTP_SIMHASH_REDIS_CLOSED      4

#define NGX_HTTP_SIMHASH_REDIS_BACKOFF_MIN 100     /* ms */
#define NGX_HTTP_SIMHASH_REDIS_BACKOFF_MAX 5000


/* a command in flight: the owner's callback */
typedef struct {
    ngx_http_simhash_redis_t    *rd;
    redisCallbackFn             *fn;
    void                        *privdata;
} ngx_http_simhash_redis_cmd_t;


static void ngx_http_simhash_redis_connect(ngx_http_simhash_redis_t *rd);
static ngx_int_t ngx_http_simhash_redis_attach(ngx_http_simhash_redis_t *rd,
    redisAsyncContext *ac);
static void ngx_http_simhash_redis_add_read(void *data);
static void ngx_http_simhash_redis_del_read(void *data);
static void ngx_http_simhash_redis_add_write(void *data);
static void ngx_http_simhash_redis_del_write(void *data);
static void ngx_http_simhash_redis_cleanup(void *data);
static void ngx_http_simhash_redis_read_handler(ngx_event_t *ev);
static void ngx_http_simhash_redis_write_handler(ngx_event_t *ev);
static void ngx_http_simhash_redis_timer_handler(ngx_event_t *ev);
static void ngx_http_simhash_redis_connected(const redisAsyncContext *ac,
    int status);
static void ngx_http_simhash_redis_handshake(redisAsyncContext *ac,
    void *reply, void *privdata);
static void ngx_http_simhash_redis_reply(redisAsyncContext *ac, void *reply,
    void *privdata);
static void ngx_http_simhash_redis_drop(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_redis_error(ngx_http_simhash_redis_t *rd,
    ngx_uint_t level, const char *fmt, ...);
static void ngx_http_simhash_redis_watch(ngx_http_simhash_redis_t *rd);
static ngx_int_t ngx_http_simhash_redis_cost(const redisReadTask *task,
    size_t cost);
static void *ngx_http_simhash_redis_string(const redisReadTask *task,
    char *str, size_t len);
static void *ngx_http_simhash_redis_array(const redisReadTask *task,
    ngx_http_simhash_redis_count_t elements);
static void *ngx_http_simhash_redis_integer(const redisReadTask *task,
    long long value);
static void *ngx_http_simhash_redis_nil(const redisReadTask *task);
#if (HIREDIS_MAJOR >= 1)
static void *ngx_http_simhash_redis_double(const redisReadTask *task,
    double value, char *str, size_t len);
static void *ngx_http_simhash_redis_bool(const redisReadTask *task,
    int value);
#endif


/* hiredis's own object functions, which ours call once a reply passed */
static redisReplyObjectFunctions  *ngx_http_simhash_redis_hiredis_fn;

/*
 * hiredis 1.0 (Debian 13 and later) reads RESP3 too: arrays are counted in
 * size_t, and doubles and booleans have functions of their own, which a
 * hostile server may send whatever was asked.  0.14 (Debian 12) has four.
 */
static redisReplyObjectFunctions  ngx_http_simhash_redis_fn = {
    ngx_http_simhash_redis_string,
    ngx_http_simhash_redis_array,
    ngx_http_simhash_redis_integer,
#if (HIREDIS_MAJOR >= 1)
    ngx_http_simhash_redis_double,
    ngx_http_simhash_redis_nil,
    ngx_http_simhash_redis_bool,
#else
    ngx_http_simhash_redis_nil,
#endif
    NULL                                /* hiredis's freeObject */
};

/* the connection whose replies are being read (one process, one thread) */
static ngx_http_simhash_redis_t   *ngx_http_simhash_redis_reading;


void
ngx_http_simhash_redis_start(ngx_http_simhash_redis_t *rd)
{
    rd->timer.handler = ngx_http_simhash_redis_timer_handler;
    rd->timer.data = rd;
    rd->timer.log = rd->log;
    rd->timer.cancelable = 1;

    rd->backoff = NGX_HTTP_SIMHASH_REDIS_BACKOFF_MIN;
    rd->state = NGX_HTTP_SIMHASH_REDIS_DOWN;

    ngx_http_simhash_redis_connect(rd);
}


ngx_uint_t
ngx_http_simhash_redis_is_ready(ngx_http_simhash_redis_t *rd)
{
    return rd->state == NGX_HTTP_SIMHASH_REDIS_READY;
}


static void
ngx_http_simhash_redis_connect(ngx_http_simhash_redis_t *rd)
{
    redisAsyncContext              *ac;
    ngx_http_simhash_redis_conf_t  *conf;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    conf = rd->conf;
    rd->attempts++;

    if (rd->connects++) {
        (void) ngx_atomic_fetch_add(rd->reconnects, 1);
    }

    /* both return at once: connect(2) is non-blocking, the address numeric */

    ac = conf->host ? redisAsyncConnect((char *) conf->host, conf->port)
                    : redisAsyncConnectUnix((char *) conf->path);

    if (ac == NULL) {
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "out of memory");
        goto later;
    }

    if (ac->err) {
        /* nothing attached yet: hiredis only closes the socket */
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "cannot connect: %s",
                                     ac->errstr);
        redisAsyncFree(ac);
        goto later;
    }

    if (ngx_http_simhash_redis_attach(rd, ac) != NGX_OK) {
        redisAsyncFree(ac);
        goto later;
    }

    rd->state = NGX_HTTP_SIMHASH_REDIS_CONNECTING;

    /* this arms the write event that tells the connect(2) is done */

    (void) redisAsyncSetConnectCallback(ac, ngx_http_simhash_redis_connected);

    ngx_add_timer(&rd->timer, conf->timeout);

    return;

later:

    rd->state = NGX_HTTP_SIMHASH_REDIS_DOWN;
    ngx_add_timer(&rd->timer, rd->backoff);
    rd->backoff = ngx_min(rd->backoff * 2, NGX_HTTP_SIMHASH_REDIS_BACKOFF_MAX);
}


/*
 * hiredis's socket as an nginx connection.  It is marked idle: a worker
 * that starts a graceful shutdown closes idle connections at once (with
 * c->close set), so the old worker of a reload lets go of Redis for the new
 * one.
 */

static ngx_int_t
ngx_http_simhash_redis_attach(ngx_http_simhash_redis_t *rd,
    redisAsyncContext *ac)
{
    ngx_connection_t  *c;

    c = ngx_get_connection(ac->c.fd, rd->log);
    if (c == NULL) {
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

    rd->ac = ac;
    rd->c = c;

    ac->data = rd;
    ac->ev.data = rd;
    ac->ev.addRead = ngx_http_simhash_redis_add_read;
    ac->ev.delRead = ngx_http_simhash_redis_del_read;
    ac->ev.addWrite = ngx_http_simhash_redis_add_write;
    ac->ev.delWrite = ngx_http_simhash_redis_del_write;
    ac->ev.cleanup = ngx_http_simhash_redis_cleanup;

    if (ngx_http_simhash_redis_hiredis_fn == NULL) {
        ngx_http_simhash_redis_hiredis_fn = ac->c.reader->fn;
        ngx_http_simhash_redis_fn.freeObject = ac->c.reader->fn->freeObject;
    }

    ac->c.reader->fn = &ngx_http_simhash_redis_fn;

    rd->asked = 0;
    rd->started = 0;
    rd->cost = 0;
    rd->refused = NULL;

    return NGX_OK;
}


/*
 * The event hooks.  hiredis calls them whenever it wants to read or write,
 * already active or not, and reads only once per event: level-triggered
 * events, added only when not active.
 */

static void
ngx_http_simhash_redis_add_read(void *data)
{
    ngx_http_simhash_redis_t *rd = data;

    if (rd->c && !rd->c->read->active) {
        (void) ngx_add_event(rd->c->read, NGX_READ_EVENT, NGX_LEVEL_EVENT);
    }
}


static void
ngx_http_simhash_redis_del_read(void *data)
{
    ngx_http_simhash_redis_t *rd = data;

    if (rd->c && rd->c->read->active) {
        (void) ngx_del_event(rd->c->read, NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_simhash_redis_add_write(void *data)
{
    ngx_http_simhash_redis_t *rd = data;

    if (rd->c && !rd->c->write->active) {
        (void) ngx_add_event(rd->c->write, NGX_WRITE_EVENT, NGX_LEVEL_EVENT);
    }
}


static void
ngx_http_simhash_redis_del_write(void *data)
{
    ngx_http_simhash_redis_t *rd = data;

    if (rd->c && rd->c->write->active) {
        (void) ngx_del_event(rd->c->write, NGX_WRITE_EVENT, 0);
    }
}


/*
 * The context is going away (hiredis closes the socket right after): the
 * nginx connection goes back to the free list with its events removed and
 * unposted, and the next connection is scheduled.
 */

static void
ngx_http_simhash_redis_cleanup(void *data)
{
    ngx_http_simhash_redis_t *rd = data;

    redisAsyncContext  *ac;
    ngx_connection_t   *c;

    ac = rd->ac;
    c = rd->c;

    if (c) {
        if (c->read->active) {
            (void) ngx_del_event(c->read, NGX_READ_EVENT, 0);
        }

        if (c->write->active) {
            (void) ngx_del_event(c->write, NGX_WRITE_EVENT, 0);
        }

        if (c->read->posted) {
            ngx_delete_posted_event(c->read);
        }

        if (c->write->posted) {
            ngx_delete_posted_event(c->write);
        }

        ngx_free_connection(c);
        c->fd = (ngx_socket_t) -1;
    }

    rd->c = NULL;
    rd->ac = NULL;

    if (ac) {
        ac->ev.data = NULL;
    }

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->state == NGX_HTTP_SIMHASH_REDIS_CLOSED) {
        return;
    }

    if (rd->refused) {
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR,
                                     "%s: connection dropped", rd->refused);

    } else if (ac && ac->err) {
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "%s%s",
                     rd->state == NGX_HTTP_SIMHASH_REDIS_CONNECTING
                     ? "cannot connect: " : "connection lost: ",
                     ac->errstr);
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


static void
ngx_http_simhash_redis_read_handler(ngx_event_t *ev)
{
    ngx_connection_t          *c = ev->data;
    ngx_http_simhash_redis_t  *rd = c->data;

    if (c->close) {
        /* a graceful shutdown closes idle connections: this is one */
        ngx_http_simhash_redis_close(rd);
        return;
    }

    if (rd->ac == NULL) {
        return;
    }

    /*
     * hiredis keeps what it read until a reply is whole: a bulk string
     * that never ends would take all memory.  It reads 16 KB per event,
     * so the buffer stays within the bound and 16 KB.
     */

    if (rd->ac->c.reader->len - rd->ac->c.reader->pos
        > NGX_HTTP_SIMHASH_REDIS_MAX_REPLY)
    {
        rd->refused = "a reply larger than 16 MB";
        ngx_http_simhash_redis_drop(rd);
        return;
    }

    ngx_http_simhash_redis_reading = rd;
    redisAsyncHandleRead(rd->ac);
    ngx_http_simhash_redis_reading = NULL;
}


static void
ngx_http_simhash_redis_write_handler(ngx_event_t *ev)
{
    ngx_connection_t          *c = ev->data;
    ngx_http_simhash_redis_t  *rd = c->data;

    if (rd->ac) {
        redisAsyncHandleWrite(rd->ac);
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
ngx_http_simhash_redis_connected(const redisAsyncContext *cac, int status)
{
    ngx_http_simhash_redis_t  *rd = cac->data;

    int                             argc;
    u_char                          db[NGX_INT_T_LEN];
    size_t                          argvlen[3];
    const char                     *argv[3];
    redisAsyncContext              *ac;
    ngx_http_simhash_redis_conf_t  *conf;

    if (status != REDIS_OK) {
        /* hiredis frees the context next: our cleanup logs why */
        return;
    }

    ac = rd->ac;
    conf = rd->conf;

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

        if (redisAsyncCommandArgv(ac, ngx_http_simhash_redis_handshake,
                                  "AUTH", argc, argv, argvlen)
            == REDIS_OK)
        {
            rd->handshake++;
            rd->asked++;
        }
    }

    if (conf->db) {
        argv[0] = "SELECT";
        argvlen[0] = 6;
        argv[1] = (char *) db;
        argvlen[1] = ngx_sprintf(db, "%ui", conf->db) - db;

        if (redisAsyncCommandArgv(ac, ngx_http_simhash_redis_handshake,
                                  "SELECT", 2, argv, argvlen)
            == REDIS_OK)
        {
            rd->handshake++;
            rd->asked++;
        }
    }

    /* without a password, a server that wants one says so here */

    argv[0] = "PING";
    argvlen[0] = 4;

    if (redisAsyncCommandArgv(ac, ngx_http_simhash_redis_handshake, "PING",
                              1, argv, argvlen)
        == REDIS_OK)
    {
        rd->handshake++;
        rd->asked++;
    }

    ngx_add_timer(&rd->timer, conf->timeout);
}


static void
ngx_http_simhash_redis_handshake(redisAsyncContext *ac, void *data,
    void *privdata)
{
    ngx_http_simhash_redis_t  *rd = ac->data;

    redisReply  *reply = data;

    /* a reply of AUTH, SELECT or PING */

    if (reply == NULL || rd->state != NGX_HTTP_SIMHASH_REDIS_HANDSHAKE) {
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_redis_error(rd, NGX_LOG_ERR, "%s refused: %*s",
                                     (char *) privdata, (size_t) reply->len,
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


/*
 * The command in the protocol's form ("*N\r\n$LEN\r\nARG\r\n..."), written
 * here into a buffer kept for the next one: hiredis's own formatter builds
 * it piece by piece in a fresh string, which was a quarter of what
 * publishing a document cost (callgrind, bench/replicate.pl).
 */

ngx_int_t
ngx_http_simhash_redis_command(ngx_http_simhash_redis_t *rd,
    redisCallbackFn *fn, void *privdata, int argc, const char **argv,
    const size_t *argvlen)
{
    int                            i;
    u_char                        *p;
    size_t                         len;
    ngx_http_simhash_redis_cmd_t  *cmd;

    if (rd->state != NGX_HTTP_SIMHASH_REDIS_READY || rd->ac == NULL) {
        return NGX_ERROR;
    }

    len = 1 + NGX_INT_T_LEN + 2;

    for (i = 0; i < argc; i++) {
        len += 1 + NGX_SIZE_T_LEN + 2 + argvlen[i] + 2;
    }

    if (len > rd->out_size) {
        p = ngx_alloc(ngx_max(len, 4096), rd->log);
        if (p == NULL) {
            return NGX_ERROR;
        }

        if (rd->out) {
            ngx_free(rd->out);
        }

        rd->out = p;
        rd->out_size = ngx_max(len, 4096);
    }

    p = ngx_sprintf(rd->out, "*%d\r\n", argc);

    for (i = 0; i < argc; i++) {
        p = ngx_sprintf(p, "$%uz\r\n", argvlen[i]);
        p = ngx_cpymem(p, argv[i], argvlen[i]);
        *p++ = '\r';
        *p++ = '\n';
    }

    cmd = ngx_alloc(sizeof(ngx_http_simhash_redis_cmd_t), rd->log);
    if (cmd == NULL) {
        return NGX_ERROR;
    }

    cmd->rd = rd;
    cmd->fn = fn;
    cmd->privdata = privdata;

    if (redisAsyncFormattedCommand(rd->ac, ngx_http_simhash_redis_reply, cmd,
                                   (char *) rd->out, p - rd->out)
        != REDIS_OK)
    {
        ngx_free(cmd);
        return NGX_ERROR;
    }

    rd->asked++;

    if (rd->pending++ == 0) {
        ngx_http_simhash_redis_watch(rd);
    }

    return NGX_OK;
}


/* Every reply of the owner's commands, or NULL when the connection went. */

static void
ngx_http_simhash_redis_reply(redisAsyncContext *ac, void *reply,
    void *privdata)
{
    ngx_http_simhash_redis_cmd_t  *cmd = privdata;

    ngx_http_simhash_redis_t  *rd;

    rd = cmd->rd;

    if (reply && rd->error[0]
        && ((redisReply *) reply)->type != REDIS_REPLY_ERROR)
    {
        /* the error of a command logged last is over */

        ngx_log_error(NGX_LOG_NOTICE, rd->log, 0,
                      "simhash zone \"%V\": %s, %V: working again after "
                      "%ui attempts", &rd->zone, rd->name, &rd->conf->url,
                      rd->attempts);
        rd->error[0] = '\0';
        rd->backoff = NGX_HTTP_SIMHASH_REDIS_BACKOFF_MIN;
        rd->attempts = 0;
    }

    if (reply && rd->pending) {
        /* progress: the timeout starts again for what is still awaited */

        if (--rd->pending) {
            ngx_http_simhash_redis_watch(rd);

        } else if (rd->timer.timer_set) {
            ngx_del_timer(&rd->timer);
        }
    }

    cmd->fn(ac, reply, cmd->privdata);

    ngx_free(cmd);
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


/*
 * End the connection: hiredis frees the context now, or, inside one of its
 * callbacks, as soon as the callback returns; either way the cleanup hook
 * follows.
 */

static void
ngx_http_simhash_redis_drop(ngx_http_simhash_redis_t *rd)
{
    redisAsyncContext  *ac;

    ac = rd->ac;

    if (ac == NULL) {
        return;
    }

    ac->err = 0;        /* logged already */
    redisAsyncFree(ac);
}


void
ngx_http_simhash_redis_close(ngx_http_simhash_redis_t *rd)
{
    rd->state = NGX_HTTP_SIMHASH_REDIS_CLOSED;

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->ac) {
        redisAsyncFree(rd->ac);
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


/*
 * The reader's object functions: each object of a reply is counted before
 * hiredis makes it.  NULL makes the reader fail ("out of memory" to
 * hiredis, rd->refused to us): the connection ends, every callback gets a
 * NULL reply, and the partial reply is freed.
 */

static ngx_int_t
ngx_http_simhash_redis_cost(const redisReadTask *task, size_t cost)
{
    ngx_http_simhash_redis_t  *rd;

    rd = ngx_http_simhash_redis_reading;

    if (rd == NULL) {
        return NGX_OK;
    }

    if (task->parent == NULL) {
        /* a reply begins: one per command sent, never more */

        if (++rd->started > rd->asked) {
            rd->refused = "a reply that no command asked for";
            return NGX_ERROR;
        }

        rd->cost = 0;
    }

    rd->cost += sizeof(redisReply) + cost;

    if (rd->cost > NGX_HTTP_SIMHASH_REDIS_MAX_REPLY) {
        rd->refused = "a reply larger than 16 MB";
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void *
ngx_http_simhash_redis_string(const redisReadTask *task, char *str,
    size_t len)
{
    ngx_http_simhash_redis_t  *rd;

    if (ngx_http_simhash_redis_cost(task, len) != NGX_OK) {
        return NULL;
    }

    rd = ngx_http_simhash_redis_reading;

    if (rd && rd->peek) {
        rd->peek(rd, task, str, len);
    }

    return ngx_http_simhash_redis_hiredis_fn->createString(task, str, len);
}


static void *
ngx_http_simhash_redis_array(const redisReadTask *task,
    ngx_http_simhash_redis_count_t elements)
{
    if (elements > NGX_HTTP_SIMHASH_REDIS_MAX_ELEMENTS) {
        if (ngx_http_simhash_redis_reading) {
            ngx_http_simhash_redis_reading->refused =
                "an array of more than 4096 elements";
        }

        return NULL;
    }

    if (ngx_http_simhash_redis_cost(task, elements * sizeof(void *))
        != NGX_OK)
    {
        return NULL;
    }

    return ngx_http_simhash_redis_hiredis_fn->createArray(task, elements);
}


static void *
ngx_http_simhash_redis_integer(const redisReadTask *task, long long value)
{
    if (ngx_http_simhash_redis_cost(task, 0) != NGX_OK) {
        return NULL;
    }

    return ngx_http_simhash_redis_hiredis_fn->createInteger(task, value);
}


static void *
ngx_http_simhash_redis_nil(const redisReadTask *task)
{
    if (ngx_http_simhash_redis_cost(task, 0) != NGX_OK) {
        return NULL;
    }

    return ngx_http_simhash_redis_hiredis_fn->createNil(task);
}


#if (HIREDIS_MAJOR >= 1)

static void *
ngx_http_simhash_redis_double(const redisReadTask *task, double value,
    char *str, size_t len)
{
    if (ngx_http_simhash_redis_cost(task, len) != NGX_OK) {
        return NULL;
    }

    return ngx_http_simhash_redis_hiredis_fn->createDouble(task, value, str,
                                                           len);
}


static void *
ngx_http_simhash_redis_bool(const redisReadTask *task, int value)
{
    if (ngx_http_simhash_redis_cost(task, 0) != NGX_OK) {
        return NULL;
    }

    return ngx_http_simhash_redis_hiredis_fn->createBool(task, value);
}

#endif
