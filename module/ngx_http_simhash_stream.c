
/*
 * Replication, worker 0's side: publishing the outbox and applying the
 * stream (ngx_http_simhash_replicate.c has the directive and the outbox).
 *
 *   publish   every 10 ms worker 0 sends what is new in the outbox with
 *             pipelined XADD ... MAXLEN ~ N and takes a record out only
 *             when Redis has acknowledged it, so a record lost in flight
 *             (Redis down, the worker killed) is sent again: entries are
 *             applied idempotently.
 *
 *   apply     worker 0 also reads the stream (XREAD BLOCK from the last id
 *             applied, kept in the zone and in every snapshot) on a second
 *             connection, and applies every entry under the zone's lock,
 *             marked as a write like any change (a worker killed in the
 *             middle leaves the zone for the next holder of the lock to
 *             repair): a key the zone lacks is stored, a key it holds takes
 *             the entry's fingerprint if the entry's version is newer
 *             (sh_stream_newer: every node keeps the same version whatever
 *             the order).  The node's own entries are applied like any
 *             other (they change nothing: it holds them), so that one
 *             that only claims its id does not make it diverge.  An entry
 *             whose seq is not above the last one applied from its writer
 *             is a replay, refused.  Reading is bounded per tick (256
 *             entries, 256 KB; the next read one tick later when more
 *             waits) and what is applied is paced by rate=; every reply
 *             is bounded (ngx_http_simhash_redis.h), and an entry alone
 *             over the bound is read past.
 *
 *   faults    Redis down or slow: the outbox fills and is sent on
 *             reconnect, with backoff.  A stream whose ids are exhausted
 *             (its last is the largest): shown, told once with the fix
 *             (a rename), tried again every second, the outbox kept.  A
 *             stream trimmed past the last id applied is a gap: logged
 *             and counted, reading goes on from what is left.  A stream
 *             Redis lost (its ids may start again below ours) is read
 *             again from its start.  Entries that do not parse are
 *             refused, counted, and logged a line a second at most.
 *
 * Why worker 0 and not a process of its own: nginx respawns a dead worker
 * in the same slot (ngx_worker stays 0), restarts it on reload, and runs
 * its event loop; a module-made process would need all of that again.  The
 * work is small next to parsing pages (a few microseconds per entry), and
 * it never blocks: hiredis's asynchronous API on nginx's event loop
 * (ngx_http_simhash_redis.c).  What makes sharing the worker with requests
 * safe against a hostile Redis: every reply is bounded as it is read (an
 * unsolicited one, 4096 elements, 16 MB), reading is bounded per tick
 * and paced by rate=, and nothing Redis sends can make hiredis abort the
 * process.  Without a
 * master (master_process off) the one process does it.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"
#include "ngx_http_simhash_redis.h"


#define NGX_HTTP_SIMHASH_FLUSH_EVERY    10      /* ms between outbox scans */
#define NGX_HTTP_SIMHASH_INFLIGHT       512     /* XADDs awaiting a reply */
#define NGX_HTTP_SIMHASH_READ_COUNT     256     /* entries per XREAD: what
                                                   one tick handles */
#define NGX_HTTP_SIMHASH_READ_BYTES     (256 * 1024)    /* of entries one
                                                   tick handles */
#define NGX_HTTP_SIMHASH_TICK           10      /* ms between two reads that
                                                   found more waiting */
#define NGX_HTTP_SIMHASH_XINFO_EVERY    1000    /* ms: catching up, the
                                                   stream is checked */
#define NGX_HTTP_SIMHASH_EXHAUSTED_EVERY    1000    /* ms between two tries
                                                   of an exhausted stream */
#define NGX_HTTP_SIMHASH_READ_BLOCK     2000    /* ms an XREAD may wait */
#define NGX_HTTP_SIMHASH_FUTURE         86400000    /* ms: see apply() */
#define NGX_HTTP_SIMHASH_PAST           1577836800000ULL    /* 2020-01-01 */


/* worker 0's side: the two connections and the publisher's state */
struct ngx_http_simhash_link_s {
    ngx_http_simhash_replicate_t  *rp;
    ngx_http_simhash_redis_t       pub;
    ngx_http_simhash_redis_t       sub;
    ngx_event_t                    flush;
    ngx_log_t                     *log;

    uint64_t                       sent;    /* outbox position sent to */
    uint64_t                       inflight[NGX_HTTP_SIMHASH_INFLIGHT];
    u_char                         inflight_dust[NGX_HTTP_SIMHASH_INFLIGHT];
    ngx_uint_t                     first;   /* the oldest XADD awaiting */
    ngx_uint_t                     n;       /* XADDs awaiting */
    unsigned                       exhausted:1;  /* the stream takes no
                                                    entry (its last id is
                                                    the largest) */
    unsigned                       halted:1;     /* an XADD of those
                                                    awaiting failed: the
                                                    others move nothing */

    u_char                         maxlen[NGX_INT_T_LEN];
    size_t                         maxlen_len;
    u_char                         block[NGX_INT_T_LEN];
    size_t                         block_len;
    uint32_t                       seed;    /* sh_stream_seed of the zone */

    ngx_uint_t                     refused;      /* since the last line */
    time_t                         refused_logged;

    /* the reader */
    ngx_event_t                    pace;    /* rate=: the next XREAD */
    ngx_uint_t                     tokens;  /* entries it may read now */
    ngx_msec_t                     refilled;
    ngx_uint_t                     count;   /* entries per XREAD now: 1
                                               after a reply over a bound */
    ngx_uint_t                     asked;   /* by the XREAD awaited */
    ngx_msec_t                     xinfo_last;   /* catching up: the last
                                                    check of the stream */
    ngx_http_simhash_writer_t     *writer;  /* the entry's, found by
                                               writer_check; NULL: new */
    unsigned                       reading:1;    /* an XREAD awaited */
    unsigned                       checking:1;   /* an XINFO awaited */
    time_t                         check_after;  /* no XINFO before */
    unsigned                       peeked:1;     /* its last entry id */
    unsigned                       told_missing:1;
    unsigned                       told_start:1;
    sh_stream_id_t                 peek;

    ngx_http_simhash_dust_repl_t   dust;    /* the rules: what was sent */
};


ngx_msec_t  ngx_http_simhash_lag_le[NGX_HTTP_SIMHASH_NLAG] = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, NGX_MAX_INT32_VALUE
};


static void ngx_http_simhash_pub_ready(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_pub_down(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_flush_handler(ngx_event_t *ev);
static void ngx_http_simhash_flush(ngx_http_simhash_link_t *lk);
static ngx_uint_t ngx_http_simhash_xadd_fields(const char **argv,
    size_t *argvlen, const char *const *name, const char *const *value,
    const size_t *len, ngx_uint_t n);
static void ngx_http_simhash_xadd_reply(redisAsyncContext *ac, void *data,
    void *privdata);
static void ngx_http_simhash_xadd_failed(ngx_http_simhash_link_t *lk,
    redisReply *reply);
static void ngx_http_simhash_xadd_drained(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_sub_ready(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_sub_down(ngx_http_simhash_redis_t *rd);
static void ngx_http_simhash_xinfo(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_xinfo_reply(redisAsyncContext *ac, void *data,
    void *privdata);
static void ngx_http_simhash_stream_lost(ngx_http_simhash_link_t *lk,
    char *have, char *why);
static void ngx_http_simhash_xread(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_pace_handler(ngx_event_t *ev);
static ngx_uint_t ngx_http_simhash_tokens(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_sub_peek(ngx_http_simhash_redis_t *rd,
    const redisReadTask *task, const char *str, size_t len);
static void ngx_http_simhash_skip(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_xread_reply(redisAsyncContext *ac, void *data,
    void *privdata);
static ngx_int_t ngx_http_simhash_entry_parse(ngx_http_simhash_link_t *lk,
    redisReply *entry, sh_stream_entry_t *e);
static ngx_int_t ngx_http_simhash_writer_check(ngx_http_simhash_link_t *lk,
    redisReply *id, sh_stream_entry_t *e);
static void ngx_http_simhash_writer_applied(ngx_http_simhash_link_t *lk,
    sh_stream_entry_t *e);
static size_t ngx_http_simhash_entry_size(redisReply *entry);
static ngx_int_t ngx_http_simhash_apply(ngx_http_simhash_link_t *lk,
    sh_stream_id_t *id, redisReply *entry);
static ngx_int_t ngx_http_simhash_apply_dust(ngx_http_simhash_link_t *lk,
    sh_stream_id_t *id, redisReply *entry, sh_stream_entry_t *e);
static void ngx_http_simhash_lag(ngx_http_simhash_outbox_t *ob,
    uint64_t time, const char *node, size_t len);
static void ngx_http_simhash_refused(ngx_http_simhash_link_t *lk,
    redisReply *id, char *why);
static ngx_int_t ngx_http_simhash_reply_id(redisReply *r, sh_stream_id_t *id);
static redisReply *ngx_http_simhash_reply_field(redisReply *r,
    const char *name);
static uint64_t ngx_http_simhash_now(void);


/*
 * Worker 0 (or the only process): the two connections.  Any failure here
 * is logged and leaves the zone unreplicated in this worker: a worker that
 * exits at start would be respawned, fail again, and loop.
 */

ngx_int_t
ngx_http_simhash_stream_init_worker(ngx_http_simhash_zone_t *zone,
    ngx_cycle_t *cycle)
{
    uint32_t                       crc;
    ngx_http_simhash_link_t       *lk;
    ngx_http_simhash_shctx_t      *sh;
    ngx_http_simhash_replicate_t  *rp;

    rp = zone->replicate;

    if (rp == NULL || rp->outbox == NULL || zone->sh == NULL
        || (ngx_process == NGX_PROCESS_WORKER && ngx_worker != 0))
    {
        return NGX_OK;
    }

    lk = ngx_pcalloc(cycle->pool, sizeof(ngx_http_simhash_link_t));
    if (lk == NULL) {
        return NGX_OK;
    }

    rp->link = lk;
    lk->rp = rp;
    lk->log = cycle->log;
    lk->seed = sh_stream_seed(zone->seed_digest);
    lk->maxlen_len = ngx_sprintf(lk->maxlen, "%ui", rp->maxlen) - lk->maxlen;
    lk->block_len = ngx_sprintf(lk->block, "%d",
                                NGX_HTTP_SIMHASH_READ_BLOCK) - lk->block;

    if (ngx_http_simhash_dust_repl_init(zone, &lk->dust, cycle->pool)
        != NGX_OK)
    {
        return NGX_OK;
    }

    /* an id read from another stream means nothing in this one */

    sh = zone->sh;
    crc = ngx_crc32_long(rp->stream.data, rp->stream.len);

    ngx_http_simhash_zone_lock(zone, cycle->log);

    if (sh->repl_stream != crc) {
        if (sh->repl_id.ms || sh->repl_id.seq) {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                          "simhash zone \"%V\" followed another stream: "
                          "reading \"%V\" from its start", &zone->name,
                          &rp->stream);
        }

        sh->repl_id.ms = 0;
        sh->repl_id.seq = 0;
        sh->repl_stream = crc;
    }

    ngx_http_simhash_zone_unlock(zone);

    rp->outbox->connected = 0;

    lk->flush.handler = ngx_http_simhash_flush_handler;
    lk->flush.data = lk;
    lk->flush.log = cycle->log;
    lk->flush.cancelable = 1;

    lk->pub.conf = rp->redis;
    lk->pub.name = "publisher";
    lk->pub.zone = zone->name;
    lk->pub.data = lk;
    lk->pub.log = cycle->log;
    lk->pub.ready = ngx_http_simhash_pub_ready;
    lk->pub.down = ngx_http_simhash_pub_down;
    lk->pub.reconnects = &rp->outbox->reconnects;

    lk->sub = lk->pub;
    lk->sub.name = "reader";
    lk->sub.ready = ngx_http_simhash_sub_ready;
    lk->sub.down = ngx_http_simhash_sub_down;
    lk->sub.wait = NGX_HTTP_SIMHASH_READ_BLOCK;
    lk->sub.peek = ngx_http_simhash_sub_peek;

    lk->pace.handler = ngx_http_simhash_pace_handler;
    lk->pace.data = lk;
    lk->pace.log = cycle->log;
    lk->pace.cancelable = 1;
    lk->count = NGX_HTTP_SIMHASH_READ_COUNT;
    lk->tokens = rp->rate;
    lk->refilled = ngx_current_msec;

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "simhash zone \"%V\": replicated through %V, stream "
                  "\"%V\", as node \"%V\", by process %P",
                  &zone->name, &rp->url, &rp->stream, &rp->node, ngx_pid);

    ngx_http_simhash_redis_start(&lk->pub);
    ngx_http_simhash_redis_start(&lk->sub);

    return NGX_OK;
}


/* The worker exits: both connections closed, nothing is waited for. */

void
ngx_http_simhash_stream_exit_worker(ngx_http_simhash_zone_t *zone)
{
    ngx_http_simhash_link_t  *lk;

    if (zone->replicate == NULL || zone->replicate->link == NULL) {
        return;
    }

    lk = zone->replicate->link;

    if (lk->flush.timer_set) {
        ngx_del_timer(&lk->flush);
    }

    if (lk->pace.timer_set) {
        ngx_del_timer(&lk->pace);
    }

    ngx_http_simhash_redis_close(&lk->pub);
    ngx_http_simhash_redis_close(&lk->sub);

    zone->replicate->link = NULL;
}


/* The publisher: every NGX_HTTP_SIMHASH_FLUSH_EVERY ms, what is new. */

static void
ngx_http_simhash_pub_ready(ngx_http_simhash_redis_t *rd)
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

    ngx_http_simhash_flush(lk);
}


static void
ngx_http_simhash_pub_down(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    if (lk->flush.timer_set) {
        ngx_del_timer(&lk->flush);
    }

    if (lk->rp->outbox->connected) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, -1);
    }

    lk->n = 0;
    lk->halted = 0;
}


static void
ngx_http_simhash_flush_handler(ngx_event_t *ev)
{
    ngx_http_simhash_flush(ev->data);
}


/*
 * XADD every record from `sent` to the tail, while fewer than INFLIGHT
 * await their reply.  The records are read in place, without the lock:
 * nothing but this process moves the head, and writers never touch what
 * lies between head and tail.
 */

static void
ngx_http_simhash_flush(ngx_http_simhash_link_t *lk)
{
    size_t                          off;
    uint64_t                        tail, now_us;
    ngx_uint_t                      nargs, inflight;
    ngx_msec_t                      every;
    const char                     *argv[6 + 2 * SH_STREAM_NFIELDS];
    size_t                          argvlen[6 + 2 * SH_STREAM_NFIELDS];
    sh_stream_entry_t               e;
    sh_stream_fields_t              fields;
    sh_stream_dust_fields_t         dfields;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_outrec_t      *rec;
    ngx_http_simhash_outbox_t      *ob;
    ngx_http_simhash_replicate_t   *rp;

    rp = lk->rp;
    zone = rp->zone;
    ob = rp->outbox;

    if (!ngx_http_simhash_redis_is_ready(&lk->pub)) {
        return;
    }

    /* the rules' counts that moved, now and then (into the outbox) */
    ngx_http_simhash_dust_sweep(zone, &lk->dust, lk->log);

    ngx_http_simhash_zone_lock(zone, lk->log);
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
    now_us = ngx_http_simhash_now() * 1000;

    /* an exhausted stream is tried with one entry at a time */
    inflight = lk->exhausted ? 1 : NGX_HTTP_SIMHASH_INFLIGHT;

    while (lk->sent < tail && lk->n < inflight) {

        off = (size_t) (lk->sent % ob->size);
        rec = (ngx_http_simhash_outrec_t *) (ob->ring + off);

        if (rec->len == NGX_HTTP_SIMHASH_WRAP) {
            lk->sent += ob->size - off;
            continue;
        }

        if (rec->type == NGX_HTTP_SIMHASH_OUT_DUST
            && rec->len == SH_STREAM_DUST_LEN)
        {
            /* a DUST rule's record: an entry of its own form */
            ngx_memcpy(e.dust,
                       (u_char *) rec + sizeof(ngx_http_simhash_outrec_t),
                       SH_STREAM_DUST_LEN);
            e.time = rec->time;
            e.seq = sh_stream_next_seq(ob->pub_seq, now_us);

            sh_stream_encode_dust(&dfields, &e, zone->mac_key);

            nargs = 6 + ngx_http_simhash_xadd_fields(&argv[6], &argvlen[6],
                                                     dfields.name,
                                                     dfields.value,
                                                     dfields.len,
                                                     SH_STREAM_DUST_NFIELDS);

        } else {
            e.key = (u_char *) rec + sizeof(ngx_http_simhash_outrec_t);
            e.key_len = rec->len;
            e.hash = rec->hash;
            e.digest = rec->digest;
            e.time = rec->time;
            e.sketches = rec->sketches;
            e.seq = sh_stream_next_seq(ob->pub_seq, now_us);

            /* the entry format is sh_stream's: names, order, text, MAC */
            sh_stream_encode(&fields, &e, zone->mac_key);

            nargs = 6 + ngx_http_simhash_xadd_fields(&argv[6], &argvlen[6],
                                                     fields.name,
                                                     fields.value,
                                                     fields.len,
                                                     SH_STREAM_NFIELDS);
        }

        if (ngx_http_simhash_redis_command(&lk->pub,
                                           ngx_http_simhash_xadd_reply, lk,
                                           nargs, argv, argvlen)
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

    every = lk->exhausted ? NGX_HTTP_SIMHASH_EXHAUSTED_EVERY
                          : NGX_HTTP_SIMHASH_FLUSH_EVERY;

    if (!lk->flush.timer_set && !(ngx_exiting || ngx_terminate || ngx_quit))
    {
        ngx_add_timer(&lk->flush, every);
    }
}


/* Redis has the record: it leaves the outbox. */


/* An entry's n fields as XADD's arguments, name then value: 2n of them. */

static ngx_uint_t
ngx_http_simhash_xadd_fields(const char **argv, size_t *argvlen,
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

static void
ngx_http_simhash_xadd_reply(redisAsyncContext *ac, void *data,
    void *privdata)
{
    ngx_http_simhash_link_t  *lk = privdata;

    uint64_t                        end, dropped;
    ngx_uint_t                      dust;
    sh_stream_id_t                  id;
    redisReply                     *reply = data;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_shctx_t       *sh;
    ngx_http_simhash_outbox_t      *ob;

    if (reply == NULL || lk->n == 0) {
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_xadd_failed(lk, reply);
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
        ngx_http_simhash_xadd_drained(lk);
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
     * previous one (see ngx_http_simhash_apply()) */

    if (sh->repl_since.ms == 0
        && ngx_http_simhash_reply_id(reply, &id) == NGX_OK)
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
        ngx_http_simhash_flush(lk);
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
ngx_http_simhash_xadd_failed(ngx_http_simhash_link_t *lk, redisReply *reply)
{
    ngx_http_simhash_outbox_t  *ob;

    ob = lk->rp->outbox;

    if (ngx_strlcasestrn((u_char *) reply->str,
                         (u_char *) reply->str + reply->len,
                         (u_char *) "exhausted the last possible ID",
                         30 - 1)
        == NULL)
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

    ngx_http_simhash_xadd_drained(lk);
}


/*
 * After a failed XADD, once no reply is awaited: what was not
 * acknowledged is sent again from the head, after a pause.
 */

static void
ngx_http_simhash_xadd_drained(ngx_http_simhash_link_t *lk)
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

static void
ngx_http_simhash_sub_ready(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, 1);

    ngx_http_simhash_xinfo(lk);
}


static void
ngx_http_simhash_sub_down(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    if (lk->rp->outbox->connected) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, -1);
    }

    if (lk->pace.timer_set) {
        ngx_del_timer(&lk->pace);
    }

    /*
     * A reply over a bound (ngx_http_simhash_redis.h): the stream holds
     * an entry too large for one, or too many fields.  Read one entry at
     * a time from here; when one entry alone is too large, it is skipped:
     * otherwise the reader would stop there for good.
     */

    if (lk->reading && rd->refused) {
        if (lk->count > 1) {
            lk->count = 1;

        } else if (lk->peeked) {
            ngx_http_simhash_skip(lk);
        }
    }

    /*
     * XINFO STREAM shows the first and the last entry whole: one too large
     * for a reply would end every connection there.  The check is left
     * out for a minute; reading goes on.
     */

    if (lk->checking && rd->refused) {
        lk->check_after = ngx_time() + 60;
    }

    lk->reading = 0;
    lk->peeked = 0;
    lk->checking = 0;
}


/*
 * The id of every entry of an XREAD reply as it is read, before its
 * fields: the reply, [stream, entries], entries, [id, fields], id.
 */

static void
ngx_http_simhash_sub_peek(ngx_http_simhash_redis_t *rd,
    const redisReadTask *task, const char *str, size_t len)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    const redisReadTask  *t;
    ngx_uint_t            depth;

    if (!lk->reading || task->idx != 0) {
        return;
    }

    depth = 0;

    for (t = task->parent; t && depth < 5; t = t->parent) {
        depth++;
    }

    if (depth != 4 || task->parent->parent->idx != 1) {
        return;
    }

    lk->peeked = (sh_stream_id_parse(&lk->peek, str, len) == 0);
}


/* The entry that alone was over a bound: refused, and read past. */

static void
ngx_http_simhash_skip(ngx_http_simhash_link_t *lk)
{
    char                       id[SH_STREAM_ID_LEN];
    ngx_http_simhash_zone_t   *zone;

    zone = lk->rp->zone;

    ngx_http_simhash_zone_lock(zone, lk->log);

    if (sh_stream_id_cmp(&lk->peek, &zone->sh->repl_id) <= 0) {
        ngx_http_simhash_zone_unlock(zone);
        return;
    }

    zone->sh->repl_id = lk->peek;

    ngx_http_simhash_zone_unlock(zone);

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->refused, 1);
    (void) sh_stream_id_format(id, &lk->peek);

    ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                  "simhash zone \"%V\": stream entry %s refused: larger "
                  "than a reply may be; read past", &zone->name, id);
}


static void
ngx_http_simhash_xinfo(ngx_http_simhash_link_t *lk)
{
    const char                    *argv[3];
    size_t                         argvlen[3];
    ngx_http_simhash_replicate_t  *rp;

    rp = lk->rp;

    if (ngx_time() < lk->check_after) {
        ngx_http_simhash_xread(lk);
        return;
    }

    argv[0] = "XINFO";            argvlen[0] = 5;
    argv[1] = "STREAM";           argvlen[1] = 6;
    argv[2] = (char *) rp->stream.data;
    argvlen[2] = rp->stream.len;

    if (ngx_http_simhash_redis_command(&lk->sub, ngx_http_simhash_xinfo_reply,
                                       lk, 3, argv, argvlen)
        == NGX_OK)
    {
        lk->checking = 1;
    }
}


/*
 * Where the stream stands against the last id applied here:
 *
 *   missing, or ending before that id: Redis lost it (deleted, a restart
 *       without persistence, restored from an older copy).  Its ids may
 *       start again below ours: reading after our id would wait forever
 *       for an id that never comes.  Read it again from its start (applying
 *       is idempotent); logged, counted as "lost".
 *   starting after it: trimmed past it, what lay between is lost to this
 *       node (a gap); or, when Redis 7 says nothing was ever removed from
 *       it (entries-added is its length), it never held ours: created
 *       again since, lost as above.
 *
 * Reading goes on in every case.
 */

static void
ngx_http_simhash_xinfo_reply(redisAsyncContext *ac, void *data,
    void *privdata)
{
    ngx_http_simhash_link_t  *lk = privdata;

    char                       have[SH_STREAM_ID_LEN];
    redisReply                *reply = data, *first, *last, *length, *added;
    sh_stream_id_t             id, fid, lid;
    ngx_uint_t                 has_first, has_last, has_added;
    ngx_http_simhash_zone_t   *zone;

    if (reply == NULL) {
        return;
    }

    lk->checking = 0;
    zone = lk->rp->zone;

    ngx_http_simhash_zone_lock(zone, lk->log);
    id = zone->sh->repl_id;
    ngx_http_simhash_zone_unlock(zone);

    (void) sh_stream_id_format(have, &id);

    if (reply->type == REDIS_REPLY_ERROR) {

        if (ngx_strlcasestrn((u_char *) reply->str,
                             (u_char *) reply->str + reply->len,
                             (u_char *) "no such key", 11 - 1)
            == NULL)
        {
            ngx_http_simhash_redis_fail(&lk->sub, "XINFO STREAM refused: %*s",
                                        (size_t) reply->len, reply->str);
            return;
        }

        if (id.ms || id.seq) {
            ngx_http_simhash_stream_lost(lk, have,
                                         "it does not exist: Redis lost it "
                                         "(deleted, or a restart without "
                                         "persistence?)");

        } else if (!lk->told_missing) {
            ngx_log_error(NGX_LOG_INFO, lk->log, 0,
                          "simhash zone \"%V\": the stream \"%V\" does not "
                          "exist yet", &zone->name, &lk->rp->stream);
        }

        lk->told_missing = 1;
        ngx_http_simhash_xread(lk);
        return;
    }

    lk->told_missing = 0;

    first = ngx_http_simhash_reply_field(reply, "first-entry");
    last = ngx_http_simhash_reply_field(reply, "last-generated-id");
    length = ngx_http_simhash_reply_field(reply, "length");
    added = ngx_http_simhash_reply_field(reply, "entries-added");

    has_first = (first && first->type == REDIS_REPLY_ARRAY
                 && first->elements == 2
                 && ngx_http_simhash_reply_id(first->element[0], &fid)
                    == NGX_OK);
    has_last = (last && ngx_http_simhash_reply_id(last, &lid) == NGX_OK);
    has_added = (added && added->type == REDIS_REPLY_INTEGER);

    if (id.ms == 0 && id.seq == 0) {
        if (length && length->type == REDIS_REPLY_INTEGER
            && length->integer > 0 && !lk->told_start)
        {
            ngx_log_error(NGX_LOG_NOTICE, lk->log, 0,
                          "simhash zone \"%V\": reading the stream \"%V\" "
                          "from its start: %L entries", &zone->name,
                          &lk->rp->stream, (int64_t) length->integer);
            lk->told_start = 1;
        }

    } else if (has_last && sh_stream_id_cmp(&lid, &id) < 0) {
        ngx_http_simhash_stream_lost(lk, have,
                                     "it ends before it: Redis lost it, or "
                                     "its end (a restart without "
                                     "persistence, restored from an older "
                                     "copy?)");

    } else if (has_first ? sh_stream_id_cmp(&fid, &id) <= 0
                         : !has_last || sh_stream_id_cmp(&lid, &id) <= 0)
    {
        /* ours is in the stream, or was its last: no gap */

    } else if (has_added && length && length->type == REDIS_REPLY_INTEGER
               && added->integer == length->integer)
    {
        /* nothing was ever removed from it, yet ours is not there */

        ngx_http_simhash_stream_lost(lk, have,
                                     "it never held it: Redis lost the "
                                     "stream and it was created again (a "
                                     "restart without persistence?)");

    } else {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->gaps, 1);

        if (has_first) {
            ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                          "simhash zone \"%V\": the stream \"%V\" was "
                          "trimmed past %s, the last entry applied here: "
                          "the oldest left is %*s, %L s later; what was "
                          "published in between is missing here (a larger "
                          "maxlen keeps more)", &zone->name,
                          &lk->rp->stream, have,
                          (size_t) first->element[0]->len,
                          first->element[0]->str,
                          (int64_t) (fid.ms - id.ms) / 1000);

        } else {
            ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                          "simhash zone \"%V\": the stream \"%V\" was "
                          "trimmed past %s, the last entry applied here: "
                          "it is empty, its last entry was %*s; what was "
                          "published in between is missing here (a larger "
                          "maxlen keeps more)", &zone->name,
                          &lk->rp->stream, have,
                          has_last ? (size_t) last->len : 0,
                          has_last ? last->str : "");

            /* nothing to read before its last id: the gap is told once */

            if (has_last) {
                ngx_http_simhash_zone_lock(zone, lk->log);

                if (sh_stream_id_cmp(&zone->sh->repl_id, &lid) < 0) {
                    zone->sh->repl_id = lid;
                }

                ngx_http_simhash_zone_unlock(zone);
            }
        }
    }

    ngx_http_simhash_xread(lk);
}


/*
 * Redis lost the stream: it is read again from its start, and this
 * zone's own entries are told apart again from the next one published.
 */

static void
ngx_http_simhash_stream_lost(ngx_http_simhash_link_t *lk, char *have,
    char *why)
{
    ngx_http_simhash_zone_t  *zone;

    zone = lk->rp->zone;

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->lost, 1);

    ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                  "simhash zone \"%V\": the stream \"%V\" is not the one "
                  "read up to %s here: %s; reading it again from its start",
                  &zone->name, &lk->rp->stream, have, why);

    ngx_http_simhash_zone_lock(zone, lk->log);
    zone->sh->repl_id.ms = 0;
    zone->sh->repl_id.seq = 0;
    zone->sh->repl_since.ms = 0;
    zone->sh->repl_since.seq = 0;
    ngx_http_simhash_zone_unlock(zone);
}

static void
ngx_http_simhash_xread(ngx_http_simhash_link_t *lk)
{
    char                           id[SH_STREAM_ID_LEN];
    u_char                         count[NGX_INT_T_LEN];
    const char                    *argv[8];
    size_t                         argvlen[8];
    ngx_uint_t                     n;
    sh_stream_id_t                 last;
    ngx_http_simhash_zone_t       *zone;
    ngx_http_simhash_replicate_t  *rp;

    rp = lk->rp;
    zone = rp->zone;

    if (ngx_exiting || ngx_terminate || ngx_quit) {
        return;
    }

    n = ngx_min(lk->count, ngx_http_simhash_tokens(lk));

    if (n == 0) {
        /* rate=: the bucket has some again in 1/rate s; wait for more */
        ngx_add_timer(&lk->pace, ngx_max(1000 / rp->rate + 1, 100));
        return;
    }

    ngx_http_simhash_zone_lock(zone, lk->log);
    last = zone->sh->repl_id;
    ngx_http_simhash_zone_unlock(zone);

    argv[0] = "XREAD";            argvlen[0] = 5;
    argv[1] = "COUNT";            argvlen[1] = 5;
    argv[2] = (char *) count;
    argvlen[2] = ngx_sprintf(count, "%ui", n) - count;
    argv[3] = "BLOCK";            argvlen[3] = 5;
    argv[4] = (char *) lk->block;
    argvlen[4] = lk->block_len;
    argv[5] = "STREAMS";          argvlen[5] = 7;
    argv[6] = (char *) rp->stream.data;
    argvlen[6] = rp->stream.len;
    argv[7] = id;
    argvlen[7] = sh_stream_id_format(id, &last);

    if (ngx_http_simhash_redis_command(&lk->sub, ngx_http_simhash_xread_reply,
                                       lk, 8, argv, argvlen)
        == NGX_OK)
    {
        lk->reading = 1;
        lk->peeked = 0;
        lk->asked = n;
    }
}


static void
ngx_http_simhash_pace_handler(ngx_event_t *ev)
{
    ngx_http_simhash_link_t  *lk = ev->data;

    if (ngx_http_simhash_redis_is_ready(&lk->sub)) {
        ngx_http_simhash_xread(lk);
    }
}


/*
 * rate=N: a bucket of N entries, refilled at N a second.  It bounds what
 * a flood of entries costs worker 0 (and how fast it can turn the index
 * over); 0: no bound.
 */

static ngx_uint_t
ngx_http_simhash_tokens(ngx_http_simhash_link_t *lk)
{
    ngx_uint_t  rate, add;
    ngx_msec_t  elapsed;

    rate = lk->rp->rate;

    if (rate == 0) {
        return NGX_HTTP_SIMHASH_READ_COUNT;
    }

    elapsed = ngx_current_msec - lk->refilled;
    add = (ngx_uint_t) ((uint64_t) elapsed * rate / 1000);

    if (add) {
        lk->tokens = ngx_min(rate, lk->tokens + add);
        lk->refilled = ngx_current_msec;
    }

    return lk->tokens;
}


/*
 * [[stream, [[id, [field, value, ...]], ...]]], or nil when BLOCK timed
 * out.  The entries are applied in order, as far as one tick's bound
 * goes: READ_COUNT entries (the XREAD asks for no more) and READ_BYTES of
 * them (the rest is read again, from the last one handled).  When more
 * waits (the reply was full, or cut), the next XREAD is sent at the next
 * tick, so that a flood costs worker 0 one tick's work every TICK ms, not
 * all its time; otherwise at once.  While catching up the stream is
 * checked (XINFO) once a second: it may be trimmed under us; and when a
 * read comes back empty: it may be gone, and ids start again below ours.
 *
 * rate= is charged for the entries that verified, not for the refused
 * ones: garbage in the stream (a foreign writer's) costs no more than the
 * tick's bound, and does not hold up the genuine entries behind it for
 * rate='s seconds.
 */

static void
ngx_http_simhash_xread_reply(redisAsyncContext *ac, void *data,
    void *privdata)
{
    ngx_http_simhash_link_t  *lk = privdata;

    size_t           i, bytes, size;
    ngx_uint_t       accepted, more;
    redisReply      *reply = data, *entries, *e;
    sh_stream_id_t   id;

    if (reply == NULL) {
        return;
    }

    lk->reading = 0;

    if (reply->type == REDIS_REPLY_NIL) {
        ngx_http_simhash_xinfo(lk);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_redis_fail(&lk->sub, "XREAD refused: %*s",
                                    (size_t) reply->len, reply->str);
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1
        || reply->element[0]->type != REDIS_REPLY_ARRAY
        || reply->element[0]->elements != 2
        || reply->element[0]->element[1]->type != REDIS_REPLY_ARRAY)
    {
        ngx_http_simhash_redis_fail(&lk->sub, "XREAD: unexpected reply");
        return;
    }

    entries = reply->element[0]->element[1];
    accepted = 0;
    bytes = 0;

    for (i = 0; i < entries->elements; i++) {
        e = entries->element[i];

        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2
            || ngx_http_simhash_reply_id(e->element[0], &id) != NGX_OK)
        {
            ngx_http_simhash_redis_fail(&lk->sub,
                                        "XREAD: unexpected entry %uz", i);
            return;
        }

        /* the tick's bytes: the first entry always (one alone is bounded
           by the reply's bound), the others while they fit */

        size = ngx_http_simhash_entry_size(e);

        if (i > 0 && bytes + size > NGX_HTTP_SIMHASH_READ_BYTES) {
            break;
        }

        bytes += size;

        if (ngx_http_simhash_apply(lk, &id, e) == NGX_OK) {
            accepted++;
        }
    }

    if (lk->rp->rate) {
        lk->tokens -= ngx_min(lk->tokens, accepted);
    }

    more = (i < entries->elements || entries->elements >= lk->asked);

    /*
     * One entry at a time after a reply over a bound, then more again;
     * after a cut, as many as fitted, so that the next reply is not read
     * only to be cut again.
     */

    if (i < entries->elements) {
        lk->count = ngx_max(i, 1);

    } else {
        lk->count = ngx_min(lk->count * 4, NGX_HTTP_SIMHASH_READ_COUNT);
    }

    if (!more) {
        ngx_http_simhash_xread(lk);
        return;
    }

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->read_paused, 1);

    if (ngx_current_msec - lk->xinfo_last >= NGX_HTTP_SIMHASH_XINFO_EVERY) {
        lk->xinfo_last = ngx_current_msec;
        ngx_http_simhash_xinfo(lk);
        return;
    }

    if (!(ngx_exiting || ngx_terminate || ngx_quit)) {
        ngx_add_timer(&lk->pace, NGX_HTTP_SIMHASH_TICK);
    }
}


/* An entry's bytes: its fields' names and values. */

static size_t
ngx_http_simhash_entry_size(redisReply *entry)
{
    size_t       i, size;
    redisReply  *fields;

    fields = entry->element[1];
    size = entry->element[0]->len;

    if (fields->type != REDIS_REPLY_ARRAY) {
        return size;
    }

    for (i = 0; i < fields->elements; i++) {
        size += 16 + fields->element[i]->len;
    }

    return size;
}


/*
 * One entry's fields, checked: NGX_OK, or NGX_DECLINED with the refusal
 * logged (malformed, under another seed, or timed far ahead).
 */

static ngx_int_t
ngx_http_simhash_entry_parse(ngx_http_simhash_link_t *lk, redisReply *entry,
    sh_stream_entry_t *e)
{
    char                      err[128];
    size_t                    i;
    redisReply               *fields, *f, *v;
    ngx_http_simhash_zone_t  *zone;

    zone = lk->rp->zone;
    fields = entry->element[1];

    sh_stream_entry_init(e);

    if (fields->type != REDIS_REPLY_ARRAY || fields->elements % 2) {
        ngx_http_simhash_refused(lk, entry->element[0], "no field list");
        return NGX_DECLINED;
    }

    for (i = 0; i < fields->elements; i += 2) {
        f = fields->element[i];
        v = fields->element[i + 1];

        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            ngx_http_simhash_refused(lk, entry->element[0], "not a string");
            return NGX_DECLINED;
        }

        if (sh_stream_entry_field(e, f->str, f->len, v->str, v->len, err,
                                  sizeof(err))
            != 0)
        {
            ngx_http_simhash_refused(lk, entry->element[0], err);
            return NGX_DECLINED;
        }
    }

    if (sh_stream_entry_check(e, err, sizeof(err)) != 0) {
        ngx_http_simhash_refused(lk, entry->element[0], err);
        return NGX_DECLINED;
    }

    if (e->seed != lk->seed) {
        ngx_http_simhash_refused(lk, entry->element[0],
                                 "fingerprints under another simhash_seed");
        return NGX_DECLINED;
    }

    /* a node of another release or other options, as in an upgrade (a
       DUST entry has no version: rules do not depend on it) */

    if (!sh_stream_is_dust(e) && e->xv != zone->version) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->refused_version, 1);
        ngx_snprintf((u_char *) err, sizeof(err),
                     "extraction version %08xD, this zone's is %08xD%Z",
                     e->xv, zone->version);
        ngx_http_simhash_refused(lk, entry->element[0], err);
        return NGX_DECLINED;
    }

    /* written by someone who does not hold the tier's secret, or altered
       on the way */

    if (!sh_stream_verify(e, zone->mac_key)) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->refused_mac, 1);
        ngx_http_simhash_refused(lk, entry->element[0],
                                 "its MAC does not verify (a writer "
                                 "without the tier's simhash_seed)");
        return NGX_DECLINED;
    }

    /*
     * a version from far ahead of this clock would win over every later
     * one of its key: a clock that is wrong, or a foreign writer
     */

    if (e->time > ngx_http_simhash_now() + NGX_HTTP_SIMHASH_FUTURE) {
        ngx_http_simhash_refused(lk, entry->element[0],
                                 "its time is more than a day ahead");
        return NGX_DECLINED;
    }

    /* nor from long before there was any: time=1 made the lag 56 years */

    if (e->time < NGX_HTTP_SIMHASH_PAST) {
        ngx_http_simhash_refused(lk, entry->element[0],
                                 "its time is before 2020");
        return NGX_DECLINED;
    }

    /*
     * Without a sequence number a genuine entry could be replayed for
     * ever: one of an earlier release is refused (the tier is upgraded
     * as a whole, see docs/module.md), and its MAC is of a form without
     * the number, so a writer cannot strip one to pass as such.
     */

    if (!sh_stream_has_seq(e)) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->refused_unsequenced, 1);
        ngx_http_simhash_refused(lk, entry->element[0],
                                 "no \"seq\" field (an earlier release's "
                                 "entry, or a replay of one)");
        return NGX_DECLINED;
    }

    return ngx_http_simhash_writer_check(lk, entry->element[0], e);
}


/*
 * A replay: an entry whose seq is not above the last one applied from
 * its writer (a genuine entry added to the stream again by someone who
 * read it: its MAC verifies, and applying it would date the lag by its
 * age, or store again a document evicted since).  The writers' table is
 * worker 0's (the only reader); a writer not in it (the first entry since
 * this node started, or since its slot went to another) is taken as it
 * comes.  The table moves with the last id applied, under the zone's lock
 * (ngx_http_simhash_writer_applied()): a worker 0 killed while applying
 * an entry leaves both before it, and its successor applies the entry
 * again instead of taking it for a replay.
 */

static ngx_int_t
ngx_http_simhash_writer_check(ngx_http_simhash_link_t *lk, redisReply *id,
    sh_stream_entry_t *e)
{
    char                        err[160];
    ngx_uint_t                  i;
    ngx_http_simhash_writer_t  *w;
    ngx_http_simhash_outbox_t  *ob;

    ob = lk->rp->outbox;
    lk->writer = NULL;

    for (i = 0; i < NGX_HTTP_SIMHASH_WRITERS; i++) {
        w = &ob->writers[i];

        if (w->len == e->node_len
            && ngx_memcmp(w->node, e->node, e->node_len) == 0)
        {
            break;
        }
    }

    if (i == NGX_HTTP_SIMHASH_WRITERS) {
        return NGX_OK;
    }

    if (e->seq <= w->seq) {
        (void) ngx_atomic_fetch_add(&ob->refused_replay, 1);
        ngx_snprintf((u_char *) err, sizeof(err),
                     "a replay: its seq %uL is not above %uL, the last "
                     "applied from node \"%*s\"%Z", e->seq, w->seq,
                     e->node_len, e->node);
        ngx_http_simhash_refused(lk, id, err);
        return NGX_DECLINED;
    }

    lk->writer = w;

    return NGX_OK;
}


/* Under the zone's lock, with the last id: the entry's seq is its
 * writer's now (a new writer takes a free slot, or the one applied from
 * longest ago). */

static void
ngx_http_simhash_writer_applied(ngx_http_simhash_link_t *lk,
    sh_stream_entry_t *e)
{
    ngx_uint_t                  i;
    ngx_http_simhash_writer_t  *w, *oldest;
    ngx_http_simhash_outbox_t  *ob;

    ob = lk->rp->outbox;
    w = lk->writer;

    if (w == NULL) {
        oldest = &ob->writers[0];

        for (i = 0; i < NGX_HTTP_SIMHASH_WRITERS; i++) {
            w = &ob->writers[i];

            if (w->len == 0) {
                break;
            }

            if (w->used < oldest->used) {
                oldest = w;
            }
        }

        if (i == NGX_HTTP_SIMHASH_WRITERS) {
            w = oldest;
        }

        w->len = (u_char) e->node_len;
        ngx_memcpy(w->node, e->node, e->node_len);
    }

    w->seq = e->seq;
    w->used = ++ob->writers_clock;
    lk->writer = NULL;
}


/*
 * One entry, under the zone's lock, with the last id: applied (stored, or
 * a newer version of a key held), or not (an older version, our own),
 * or refused (malformed, or under another seed).
 *
 * The entry's body digest is not kept: "unknown" (0) in the zone.  A
 * re-fetch whose body has the stored digest is answered with the stored
 * fingerprint unparsed (ngx_http_simhash_identical()); a digest from the
 * stream would let any stream writer pin a real page to a fingerprint of
 * its choosing, for good.  The first fetch here of a document learned from
 * the stream is parsed, and its digest is then this node's own.
 */

static ngx_int_t
ngx_http_simhash_apply(ngx_http_simhash_link_t *lk, sh_stream_id_t *id,
    redisReply *entry)
{
    uint32_t                        ref;
    uint64_t                        hash;
    ngx_str_t                       key;
    ngx_int_t                       dust;
    ngx_uint_t                      own, applied;
    sh_stream_entry_t               e;
    sh_store_doc_t                  d;
    const sh_store_doc_t           *doc;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_shctx_t       *sh;
    ngx_http_simhash_outbox_t      *ob;
    ngx_http_simhash_replicate_t   *rp;

    rp = lk->rp;
    zone = rp->zone;
    sh = zone->sh;
    ob = rp->outbox;

    if (ngx_http_simhash_entry_parse(lk, entry, &e) != NGX_OK) {
        goto refused;
    }

    if (sh_stream_is_dust(&e)) {
        return ngx_http_simhash_apply_dust(lk, id, entry, &e);
    }

    own = (e.node_len == rp->node.len
           && ngx_memcmp(e.node, rp->node.data, e.node_len) == 0);

    if (!own) {
        ngx_http_simhash_lag(ob, e.time, (const char *) e.node, e.node_len);
    }

    key.data = (u_char *) e.key;
    key.len = e.key_len;
    applied = 0;
    dust = 0;

    ngx_http_simhash_zone_lock(zone, lk->log);

    /*
     * An entry under this node's id is applied like any other: it holds
     * its own versions already (not newer: nothing happens), and an entry
     * that only claims its id (any writer can) is then applied here as on
     * every other node, instead of skipped here alone.  The price: a
     * document evicted here between its publishing and its reading back
     * (milliseconds) is stored again.
     */

    ref = ngx_http_simhash_zone_key(zone, &key);
    doc = sh_store_doc(sh->store, ref);

    if (doc == NULL) {
        ngx_http_simhash_zone_write(zone);

        ref = ngx_http_simhash_zone_store(zone, &key, e.hash, 0,
                                          sh_stream_second(e.time),
                                          &e.sketches);
        applied = (ref != SH_NOREF);

    } else if (sh_index_get(sh->index, ref, &hash) == 0
               && sh_stream_newer(e.time, e.hash, doc->time, hash))
    {
        ngx_http_simhash_zone_write(zone);

        d = *doc;
        d.digest = 0;
        d.sketches = e.sketches;
        d.time = sh_stream_second(e.time);
        sh_store_set(sh->store, ref, &d);
        (void) sh_store_update(sh->store, ref, e.hash);
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
        applied = 1;
    }

    /*
     * Another node's new document (or version) is what its own decision
     * was: "this URL is a document of its own".  The learner takes it as
     * this node's decisions, so that a learned rule predicts here for the
     * pages other nodes fetched too (their duplicates are not published,
     * so the pairs that turn a rule on come from the rule's records).
     */

    if (applied && ngx_http_simhash_dust_learner(zone)) {
        doc = sh_store_doc(sh->store, ref);

        if (doc != NULL) {
            dust = ngx_http_simhash_dust_observe(zone, &key, doc->keyhash);
        }
    }

    sh->repl_id = *id;
    ngx_http_simhash_writer_applied(lk, &e);

    ngx_http_simhash_zone_unlock(zone);

    if (dust) {
        ngx_http_simhash_dust_log(zone, lk->log);
    }

    (void) ngx_atomic_fetch_add(applied ? &ob->applied
                                : own ? &ob->skipped_own : &ob->outdated, 1);
    return NGX_OK;

refused:

    (void) ngx_atomic_fetch_add(&ob->refused, 1);

    ngx_http_simhash_zone_lock(zone, lk->log);
    sh->repl_id = *id;
    ngx_http_simhash_zone_unlock(zone);

    return NGX_DECLINED;
}


/*
 * A DUST entry (its MAC verified): one rule's state, merged into the
 * learner (ngx_http_simhash_dust_apply()).  A zone without dust= reads
 * past it: counted as ignored, not refused, as the tier may mix zones
 * with and without a learner.  A record that passed the MAC and still
 * does not decode (a node of another record version) is refused.
 */

static ngx_int_t
ngx_http_simhash_apply_dust(ngx_http_simhash_link_t *lk, sh_stream_id_t *id,
    redisReply *entry, sh_stream_entry_t *e)
{
    ngx_int_t                   rc;
    ngx_http_simhash_zone_t    *zone;
    ngx_http_simhash_outbox_t  *ob;

    zone = lk->rp->zone;
    ob = lk->rp->outbox;

    rc = ngx_http_simhash_dust_apply(zone, &lk->dust, e->dust, lk->log);

    if (rc == NGX_ERROR) {
        (void) ngx_atomic_fetch_add(&ob->refused, 1);
        ngx_http_simhash_refused(lk, entry->element[0],
                                 "a damaged DUST rule record");

    } else {
        (void) ngx_atomic_fetch_add(rc == NGX_OK ? &ob->dust_applied
                                    : &ob->dust_ignored, 1);
    }

    ngx_http_simhash_zone_lock(zone, lk->log);
    zone->sh->repl_id = *id;
    ngx_http_simhash_writer_applied(lk, e);
    ngx_http_simhash_zone_unlock(zone);

    return NGX_OK;
}


/* The age of an entry of another node when applied, in all and by node. */

static void
ngx_http_simhash_lag(ngx_http_simhash_outbox_t *ob, uint64_t time,
    const char *node, size_t len)
{
    uint64_t                      now, lag;
    ngx_uint_t                    i;
    ngx_http_simhash_node_lag_t  *nl, *oldest;

    now = ngx_http_simhash_now();
    lag = (now > time) ? now - time : 0;

    ob->lag = (ngx_atomic_uint_t) lag;
    (void) ngx_atomic_fetch_add(&ob->lag_sum, (ngx_atomic_int_t) lag);
    (void) ngx_atomic_fetch_add(&ob->lag_count, 1);

    for (i = 0; i < NGX_HTTP_SIMHASH_NLAG - 1; i++) {
        if (lag <= ngx_http_simhash_lag_le[i]) {
            break;
        }
    }

    (void) ngx_atomic_fetch_add(&ob->lag_le[i], 1);

    len = ngx_min(len, NGX_HTTP_SIMHASH_NODE_NAME);
    oldest = &ob->nodes[0];

    for (i = 0; i < NGX_HTTP_SIMHASH_NODES; i++) {
        nl = &ob->nodes[i];

        if (nl->len == len && ngx_memcmp(nl->name, node, len) == 0) {
            goto found;
        }

        if (nl->len == 0 || (oldest->len && nl->seen < oldest->seen)) {
            oldest = nl;
        }
    }

    /* a node not seen yet: a free slot, or the least recently seen's */

    nl = oldest;
    nl->len = 0;
    nl->entries = 0;
    ngx_memcpy(nl->name, node, len);
    nl->len = len;

found:

    nl->lag = (ngx_atomic_uint_t) lag;
    nl->seen = ngx_time();
    nl->entries++;
}


/*
 * A refused entry: one log line a second at most, with how many since the
 * last line, so that a foreign writer cannot flood the log.
 */

static void
ngx_http_simhash_refused(ngx_http_simhash_link_t *lk, redisReply *id,
    char *why)
{
    lk->refused++;

    if (lk->refused_logged == ngx_time()) {
        return;
    }

    ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                  "simhash zone \"%V\": stream entry %*s refused: %s "
                  "(%ui refused since the last such line)",
                  &lk->rp->zone->name, (size_t) id->len, id->str, why,
                  lk->refused);

    lk->refused = 0;
    lk->refused_logged = ngx_time();
}


static ngx_int_t
ngx_http_simhash_reply_id(redisReply *r, sh_stream_id_t *id)
{
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
        return NGX_ERROR;
    }

    return sh_stream_id_parse(id, r->str, r->len) == 0 ? NGX_OK : NGX_ERROR;
}


/* A field of a flat [name, value, ...] reply (XINFO in RESP2). */

static redisReply *
ngx_http_simhash_reply_field(redisReply *r, const char *name)
{
    size_t  i, len;

    if (r->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }

    len = ngx_strlen(name);

    for (i = 0; i + 1 < r->elements; i += 2) {
        if (r->element[i]->type == REDIS_REPLY_STRING
            && (size_t) r->element[i]->len == len
            && ngx_strncmp(r->element[i]->str, name, len) == 0)
        {
            return r->element[i + 1];
        }
    }

    return NULL;
}


static uint64_t
ngx_http_simhash_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (uint64_t) tp->sec * 1000 + tp->msec;
}
