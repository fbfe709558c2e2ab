
/*
 * Worker 0's pump of a replicated zone: publishing the outbox and applying
 * the stream (ngx_http_simhash_replicate.c has the directive and the
 * outbox).  This file starts and stops it; ngx_http_simhash_pump.h says
 * which file does what.
 *
 *   publish   every 10 ms worker 0 pulls the DUST learner's rule changes
 *             into the outbox (ngx_http_simhash_dust_replicate.c), sends
 *             what is new in the outbox with pipelined XADD ... MAXLEN ~ N
 *             and takes a record out only when Redis has acknowledged it,
 *             so a record lost in flight (Redis down, the worker killed)
 *             is sent again: entries are applied idempotently.
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
 * it never blocks: non-blocking connections on nginx's event loop
 * (ngx_http_simhash_redis.c).  What makes sharing the worker with requests
 * safe against a hostile Redis: every reply is bounded as it is read (an
 * unsolicited one, 4096 elements, 16 MB), reading is bounded per tick
 * and paced by rate=, and nothing Redis sends can make hiredis abort the
 * process.  Without a master (master_process off) the one process does
 * it.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_pump.h"


/*
 * Worker 0 (or the only process): the two connections.  Any failure here
 * is logged and leaves the zone unreplicated in this worker: a worker that
 * exits at start would be respawned, fail again, and loop.
 */

ngx_int_t
ngx_http_simhash_pump_init_worker(ngx_http_simhash_zone_t *zone,
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

    lk->flush.handler = ngx_http_simhash_pump_flush_handler;
    lk->flush.data = lk;
    lk->flush.log = cycle->log;
    lk->flush.cancelable = 1;

    lk->pub.conf = rp->redis;
    lk->pub.name = "publisher";
    lk->pub.zone = zone->name;
    lk->pub.data = lk;
    lk->pub.log = cycle->log;
    lk->pub.ready = ngx_http_simhash_pump_pub_ready;
    lk->pub.down = ngx_http_simhash_pump_pub_down;
    lk->pub.reconnects = &rp->outbox->reconnects;

    lk->sub = lk->pub;
    lk->sub.name = "reader";
    lk->sub.ready = ngx_http_simhash_pump_sub_ready;
    lk->sub.down = ngx_http_simhash_pump_sub_down;
    lk->sub.wait = NGX_HTTP_SIMHASH_READ_BLOCK;
    lk->sub.peek = ngx_http_simhash_pump_sub_peek;

    lk->pace.handler = ngx_http_simhash_pump_pace_handler;
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

    /* the flush runs from now on: it pulls the DUST rules' changes into
       the outbox whether Redis is up or not */

    ngx_add_timer(&lk->flush, NGX_HTTP_SIMHASH_FLUSH_EVERY);

    ngx_http_simhash_redis_start(&lk->pub);
    ngx_http_simhash_redis_start(&lk->sub);

    return NGX_OK;
}


/* The worker exits: both connections closed, nothing is waited for. */

void
ngx_http_simhash_pump_exit_worker(ngx_http_simhash_zone_t *zone)
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


uint64_t
ngx_http_simhash_pump_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (uint64_t) tp->sec * 1000 + tp->msec;
}
