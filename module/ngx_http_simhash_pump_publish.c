
/*
 * Worker 0's pump, the publisher: the outbox to the stream.
 *
 * Every NGX_HTTP_SIMHASH_FLUSH_EVERY ms the flush first pulls the DUST
 * learner's rule changes into the outbox (ngx_http_simhash_dust_replicate.c;
 * it does so while Redis is down too, so that the outbox keeps them as it
 * keeps documents), then sends what is new in the outbox with pipelined
 * XADD ... MAXLEN ~ N, INFLIGHT at most awaiting their reply, and takes a
 * record out only when Redis has acknowledged it, in order: a record lost
 * in flight (Redis down, the worker killed) is sent again, and applying is
 * idempotent.  The entry's form (fields, MAC, seq) is sh_stream's.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_pump.h"
#include "ngx_http_simhash_redis_reply.h"


#define NGX_HTTP_SIMHASH_EXHAUSTED_EVERY    1000    /* ms between two tries
                                                   of an exhausted stream */

/* XADD KEY MAXLEN ~ N *: the arguments before the fields */
#define NGX_HTTP_SIMHASH_XADD_HEAD          6
#define NGX_HTTP_SIMHASH_XADD_ARGS                                           \
    (NGX_HTTP_SIMHASH_XADD_HEAD + 2 * SH_STREAM_NFIELDS)


static void ngx_http_simhash_pump_flush(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_pump_flush_later(ngx_http_simhash_link_t *lk);
static ngx_int_t ngx_http_simhash_pump_xadd(ngx_http_simhash_link_t *lk,
    ngx_http_simhash_outrec_t *rec, sh_stream_entry_t *e, const char **argv,
    size_t *argvlen);
static ngx_uint_t ngx_http_simhash_pump_xadd_fields(const char **argv,
    size_t *argvlen, const char *const *name, const char *const *value,
    const size_t *len, ngx_uint_t n);
static void ngx_http_simhash_pump_xadd_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data);
static void ngx_http_simhash_pump_xadd_failed(ngx_http_simhash_link_t *lk,
    redisReply *reply);
static void ngx_http_simhash_pump_xadd_drained(ngx_http_simhash_link_t *lk);


void
ngx_http_simhash_pump_pub_ready(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    ngx_http_simhash_zone_t  *zone;

    zone = lk->rp->zone;

    /* whatever was sent before and not acknowledged goes again */

    ngx_http_simhash_zone_lock(zone, lk->log);
    lk->sent = lk->rp->outbox->head;
    ngx_http_simhash_zone_unlock(zone);

    lk->first = 0;
    lk->n = 0;

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, 1);

    ngx_http_simhash_pump_flush(lk);
}


/* Down: the flush goes on (the pulls), sending waits for the next ready. */

void
ngx_http_simhash_pump_pub_down(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    if (lk->rp->outbox->connected) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, -1);
    }

    lk->n = 0;
    lk->halted = 0;
}


void
ngx_http_simhash_pump_flush_handler(ngx_event_t *ev)
{
    ngx_http_simhash_pump_flush(ev->data);
}


/*
 * XADD every record from `sent` to the tail, while fewer than INFLIGHT
 * await their reply.  The records are read in place, without the lock:
 * nothing but this process moves the head, and writers never touch what
 * lies between head and tail.
 */

static void
ngx_http_simhash_pump_flush(ngx_http_simhash_link_t *lk)
{
    size_t                          off;
    uint64_t                        tail, now_us;
    ngx_uint_t                      inflight;
    const char                     *argv[NGX_HTTP_SIMHASH_XADD_ARGS];
    size_t                          argvlen[NGX_HTTP_SIMHASH_XADD_ARGS];
    sh_stream_entry_t               e;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_outrec_t      *rec;
    ngx_http_simhash_outbox_t      *ob;
    ngx_http_simhash_replicate_t   *rp;

    rp = lk->rp;
    zone = rp->zone;
    ob = rp->outbox;

    if (!ngx_http_simhash_redis_is_ready(&lk->pub)) {
        ngx_http_simhash_zone_lock(zone, lk->log);
        ngx_http_simhash_dust_repl_pull(zone);
        ngx_http_simhash_zone_unlock(zone);

        ngx_http_simhash_pump_flush_later(lk);
        return;
    }

    /* the rules' counts that moved, now and then (into the outbox) */
    ngx_http_simhash_dust_repl_sweep(zone, &lk->dust, lk->log);

    ngx_http_simhash_zone_lock(zone, lk->log);
    ngx_http_simhash_dust_repl_pull(zone);
    tail = ob->tail;
    ngx_http_simhash_zone_unlock(zone);

    argv[0] = "XADD";             argvlen[0] = 4;
    argv[1] = (char *) rp->stream.data;
    argvlen[1] = rp->stream.len;
    argv[2] = "MAXLEN";           argvlen[2] = 6;
    argv[3] = "~";                argvlen[3] = 1;
    argv[4] = (char *) lk->maxlen;
    argvlen[4] = lk->maxlen_len;
    argv[5] = "*";                argvlen[5] = 1;

    sh_stream_entry_init(&e);
    e.node = rp->node.data;
    e.node_len = rp->node.len;
    e.seed = lk->seed;
    e.xv = zone->version;

    /*
     * The sequence goes on from the last one sent, or from the clock if
     * that is later: a node started again (its outbox zone new) begins
     * above all it sent before, unless its clock went back meanwhile.
     */
    now_us = ngx_http_simhash_pump_now() * 1000;

    /* an exhausted stream is tried with one entry at a time */
    inflight = lk->exhausted ? 1 : NGX_HTTP_SIMHASH_INFLIGHT;

    while (lk->sent < tail && lk->n < inflight) {

        off = (size_t) (lk->sent % ob->size);
        rec = (ngx_http_simhash_outrec_t *) (ob->ring + off);

        if (rec->len == NGX_HTTP_SIMHASH_WRAP) {
            lk->sent += ob->size - off;
            continue;
        }

        e.seq = sh_stream_next_seq(ob->pub_seq, now_us);

        if (ngx_http_simhash_pump_xadd(lk, rec, &e, argv, argvlen)
            != NGX_OK)
        {
            break;
        }

        ob->pub_seq = e.seq;
        lk->sent += sizeof(ngx_http_simhash_outrec_t)
                    + ngx_align(rec->len, 8);
        lk->inflight[(lk->first + lk->n) % NGX_HTTP_SIMHASH_INFLIGHT] =
                                                                    lk->sent;
        lk->inflight_dust[(lk->first + lk->n) % NGX_HTTP_SIMHASH_INFLIGHT] =
                                    (rec->type == NGX_HTTP_SIMHASH_OUT_DUST);
        lk->n++;
    }

    ngx_http_simhash_pump_flush_later(lk);
}


static void
ngx_http_simhash_pump_flush_later(ngx_http_simhash_link_t *lk)
{
    ngx_msec_t  every;

    every = lk->exhausted ? NGX_HTTP_SIMHASH_EXHAUSTED_EVERY
                          : NGX_HTTP_SIMHASH_FLUSH_EVERY;

    if (!lk->flush.timer_set && !(ngx_exiting || ngx_terminate || ngx_quit))
    {
        ngx_add_timer(&lk->flush, every);
    }
}


/*
 * One record of the outbox sent: argv has XADD's head (argv[0] to
 * argv[5]), e the node's fields and the seq; the record is a document's
 * version, or a DUST rule's record (an entry of its own form).
 */

static ngx_int_t
ngx_http_simhash_pump_xadd(ngx_http_simhash_link_t *lk,
    ngx_http_simhash_outrec_t *rec, sh_stream_entry_t *e, const char **argv,
    size_t *argvlen)
{
    u_char                   *data;
    ngx_uint_t                n;
    sh_stream_fields_t        fields;
    sh_stream_dust_fields_t   dfields;
    ngx_http_simhash_zone_t  *zone;

    zone = lk->rp->zone;
    data = (u_char *) rec + sizeof(ngx_http_simhash_outrec_t);
    argv += NGX_HTTP_SIMHASH_XADD_HEAD;
    argvlen += NGX_HTTP_SIMHASH_XADD_HEAD;

    e->time = rec->time;

    if (rec->type == NGX_HTTP_SIMHASH_OUT_DUST
        && rec->len == SH_STREAM_DUST_LEN)
    {
        ngx_memcpy(e->dust, data, SH_STREAM_DUST_LEN);

        sh_stream_encode_dust(&dfields, e, zone->mac_key);

        n = ngx_http_simhash_pump_xadd_fields(argv, argvlen, dfields.name,
                                              dfields.value, dfields.len,
                                              SH_STREAM_DUST_NFIELDS);

    } else {
        e->key = data;
        e->key_len = rec->len;
        e->hash = rec->hash;
        e->digest = rec->digest;
        e->sketches = rec->sketches;

        /* the entry format is sh_stream's: names, order, text, MAC */
        sh_stream_encode(&fields, e, zone->mac_key);

        n = ngx_http_simhash_pump_xadd_fields(argv, argvlen, fields.name,
                                              fields.value, fields.len,
                                              SH_STREAM_NFIELDS);
    }

    /* the values point into fields or dfields: the command is written
     * out before they go */

    return ngx_http_simhash_redis_command(&lk->pub,
                                          ngx_http_simhash_pump_xadd_reply,
                                          lk, NGX_HTTP_SIMHASH_XADD_HEAD + n,
                                          argv - NGX_HTTP_SIMHASH_XADD_HEAD,
                                          argvlen - NGX_HTTP_SIMHASH_XADD_HEAD);
}


static ngx_uint_t
ngx_http_simhash_pump_xadd_fields(const char **argv, size_t *argvlen,
    const char *const *name, const char *const *value, const size_t *len,
    ngx_uint_t n)
{
    ngx_uint_t  f;

    for (f = 0; f < n; f++) {
        argv[2 * f] = name[f];
        argvlen[2 * f] = ngx_strlen(name[f]);
        argv[2 * f + 1] = value[f];
        argvlen[2 * f + 1] = len[f];
    }

    return 2 * n;
}

/* Redis has the record: it leaves the outbox. */

static void
ngx_http_simhash_pump_xadd_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_link_t  *lk = data;

    uint64_t                        end, dropped;
    ngx_uint_t                      dust;
    sh_stream_id_t                  id;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_shctx_t       *sh;
    ngx_http_simhash_outbox_t      *ob;

    if (reply == NULL || lk->n == 0) {
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_pump_xadd_failed(lk, reply);
        return;
    }

    zone = lk->rp->zone;
    sh = zone->sh;
    ob = lk->rp->outbox;

    if (lk->halted) {
        /*
         * An XADD before this one failed: its record stays, so this one
         * may not leave the outbox either (the head only moves over what
         * Redis has, in order).  It is sent again: a duplicate, which
         * applying ignores.
         */
        lk->first = (lk->first + 1) % NGX_HTTP_SIMHASH_INFLIGHT;
        lk->n--;
        ngx_http_simhash_pump_xadd_drained(lk);
        return;
    }

    if (lk->exhausted) {
        lk->exhausted = 0;
        ob->stream_exhausted = 0;

        ngx_log_error(NGX_LOG_NOTICE, lk->log, 0,
                      "simhash zone \"%V\": the stream \"%V\" takes entries "
                      "again: publishing goes on", &zone->name,
                      &lk->rp->stream);
    }

    end = lk->inflight[lk->first];
    dust = lk->inflight_dust[lk->first];
    lk->first = (lk->first + 1) % NGX_HTTP_SIMHASH_INFLIGHT;
    lk->n--;

    dropped = 0;

    ngx_http_simhash_zone_lock(zone, lk->log);

    ob->head = end;
    ob->records--;

    /* the first entry of this zone's life: ours before it are from a
     * previous one (see ngx_http_simhash_pump_apply()) */

    if (sh->repl_since.ms == 0
        && ngx_http_simhash_redis_id(reply, &id) == NGX_OK)
    {
        sh->repl_since = id;
    }

    if (ob->overflow && ob->tail - ob->head <= ob->size / 2) {
        dropped = ob->overflow;
        ob->overflow = 0;
    }

    ngx_http_simhash_zone_unlock(zone);

    (void) ngx_atomic_fetch_add(dust ? &ob->dust_published
                                : &ob->published, 1);

    if (dropped) {
        ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                      "simhash zone \"%V\": the outbox has room again; "
                      "%uL documents stored while it was full were not "
                      "published", &zone->name, dropped);
    }

    if (lk->n == 0) {
        /* keep the pipeline going at once when more waits */
        ngx_http_simhash_pump_flush(lk);
    }
}


/*
 * An XADD refused.  "The stream has exhausted the last possible ID": its
 * last id is 18446744073709551615-18446744073709551615 (a writer added an
 * entry of that id by hand), and Redis can give no id after it, so no
 * XADD can succeed until the stream is deleted or renamed.  Reconnecting
 * would not help: the state is counted and shown (stream_exhausted), told
 * once with the fix, and the stream is tried with one entry a second; the
 * outbox keeps what waits.  Any other error ends the connection.
 */

static void
ngx_http_simhash_pump_xadd_failed(ngx_http_simhash_link_t *lk,
    redisReply *reply)
{
    ngx_http_simhash_outbox_t  *ob;

    ob = lk->rp->outbox;

    if (!ngx_http_simhash_redis_error_is(reply,
                                         "exhausted the last possible ID"))
    {
        ngx_http_simhash_redis_fail(&lk->pub, "XADD refused: %*s",
                                    (size_t) reply->len, reply->str);
        return;
    }

    if (!lk->exhausted) {
        lk->exhausted = 1;
        ob->stream_exhausted = 1;
        (void) ngx_atomic_fetch_add(&ob->exhausted, 1);

        ngx_log_error(NGX_LOG_ERR, lk->log, 0,
                      "simhash zone \"%V\": the stream \"%V\" takes no "
                      "more entries: its last id is the largest Redis has "
                      "(\"%*s\"; a writer added an entry of that id): "
                      "nothing is published until it is renamed or "
                      "deleted (redis-cli RENAME %V %V:exhausted), which "
                      "every node then reads as a new stream; the outbox "
                      "keeps %uA documents meanwhile", &lk->rp->zone->name,
                      &lk->rp->stream, (size_t) reply->len, reply->str,
                      &lk->rp->stream, &lk->rp->stream, ob->records);
    }

    lk->halted = 1;
    lk->first = (lk->first + 1) % NGX_HTTP_SIMHASH_INFLIGHT;
    lk->n--;

    ngx_http_simhash_pump_xadd_drained(lk);
}


/*
 * After a failed XADD, once no reply is awaited: what was not
 * acknowledged is sent again from the head, after a pause.
 */

static void
ngx_http_simhash_pump_xadd_drained(ngx_http_simhash_link_t *lk)
{
    ngx_http_simhash_zone_t  *zone;

    if (lk->n) {
        return;
    }

    zone = lk->rp->zone;

    ngx_http_simhash_zone_lock(zone, lk->log);
    lk->sent = lk->rp->outbox->head;
    ngx_http_simhash_zone_unlock(zone);

    lk->halted = 0;
    lk->first = 0;

    if (lk->flush.timer_set) {
        ngx_del_timer(&lk->flush);
    }

    if (!(ngx_exiting || ngx_terminate || ngx_quit)) {
        ngx_add_timer(&lk->flush, NGX_HTTP_SIMHASH_EXHAUSTED_EVERY);
    }
}


/* The reader: XINFO STREAM at each connect (gaps), then XREAD in a loop. */
