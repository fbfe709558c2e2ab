
/*
 * Worker 0's pump, the reader: the stream to this node.
 *
 * On its own connection, at each connect the stream is checked (XINFO
 * STREAM: was it trimmed past the last id applied here, or lost by Redis?
 * the policy is ngx_http_simhash_pump_xinfo_reply()), then read in a loop
 * (XREAD BLOCK from the last id applied, kept in the zone and in every
 * snapshot).  Reading is bounded per tick (READ_COUNT entries, READ_BYTES;
 * the next read one tick later when more waits) and paced by rate=; every
 * reply is bounded as it is read (ngx_http_simhash_redis.h), and an entry
 * alone over the bound is read past.  Each entry goes to
 * ngx_http_simhash_pump_apply().
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_pump.h"
#include "ngx_http_simhash_redis_reply.h"


#define NGX_HTTP_SIMHASH_READ_BYTES     (256 * 1024)    /* of entries one
                                                   tick handles */
#define NGX_HTTP_SIMHASH_TICK           10      /* ms between two reads that
                                                   found more waiting */
#define NGX_HTTP_SIMHASH_XINFO_EVERY    1000    /* ms: catching up, the
                                                   stream is checked */


static void ngx_http_simhash_pump_skip(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_pump_xinfo(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_pump_xinfo_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data);
static void ngx_http_simhash_pump_check(ngx_http_simhash_link_t *lk,
    ngx_http_simhash_redis_xinfo_t *xi, sh_stream_id_t *id, char *have);
static void ngx_http_simhash_pump_gap(ngx_http_simhash_link_t *lk,
    ngx_http_simhash_redis_xinfo_t *xi, sh_stream_id_t *id, char *have);
static void ngx_http_simhash_pump_lost(ngx_http_simhash_link_t *lk,
    char *have, char *why);
static void ngx_http_simhash_pump_xread(ngx_http_simhash_link_t *lk);
static ngx_uint_t ngx_http_simhash_pump_tokens(ngx_http_simhash_link_t *lk);
static void ngx_http_simhash_pump_xread_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data);
static size_t ngx_http_simhash_pump_entry_size(redisReply *entry);


/* Connected: XINFO STREAM first (gaps), then XREAD in a loop. */

void
ngx_http_simhash_pump_sub_ready(ngx_http_simhash_redis_t *rd)
{
    ngx_http_simhash_link_t  *lk = rd->data;

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->connected, 1);

    ngx_http_simhash_pump_xinfo(lk);
}


void
ngx_http_simhash_pump_sub_down(ngx_http_simhash_redis_t *rd)
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
            ngx_http_simhash_pump_skip(lk);
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

void
ngx_http_simhash_pump_sub_peek(ngx_http_simhash_redis_t *rd,
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
ngx_http_simhash_pump_skip(ngx_http_simhash_link_t *lk)
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
ngx_http_simhash_pump_xinfo(ngx_http_simhash_link_t *lk)
{
    const char                    *argv[3];
    size_t                         argvlen[3];
    ngx_http_simhash_replicate_t  *rp;

    rp = lk->rp;

    if (ngx_time() < lk->check_after) {
        ngx_http_simhash_pump_xread(lk);
        return;
    }

    argv[0] = "XINFO";            argvlen[0] = 5;
    argv[1] = "STREAM";           argvlen[1] = 6;
    argv[2] = (char *) rp->stream.data;
    argvlen[2] = rp->stream.len;

    if (ngx_http_simhash_redis_command(&lk->sub,
                                       ngx_http_simhash_pump_xinfo_reply, lk,
                                       3, argv, argvlen)
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
 * Reading goes on in every case.  The reply is parsed by the Redis
 * adapter (ngx_http_simhash_redis_xinfo()); what it means is decided here.
 */

static void
ngx_http_simhash_pump_xinfo_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_link_t  *lk = data;

    char                             have[SH_STREAM_ID_LEN];
    ngx_int_t                        rc;
    sh_stream_id_t                   id;
    ngx_http_simhash_zone_t         *zone;
    ngx_http_simhash_redis_xinfo_t   xi;

    if (reply == NULL) {
        return;
    }

    lk->checking = 0;
    zone = lk->rp->zone;

    ngx_http_simhash_zone_lock(zone, lk->log);
    id = zone->sh->repl_id;
    ngx_http_simhash_zone_unlock(zone);

    (void) sh_stream_id_format(have, &id);

    rc = ngx_http_simhash_redis_xinfo(reply, &xi);

    if (rc == NGX_ERROR) {
        ngx_http_simhash_redis_fail(&lk->sub, "XINFO STREAM refused: %*s",
                                    (size_t) reply->len, reply->str);
        return;
    }

    if (rc == NGX_DECLINED) {
        if (id.ms || id.seq) {
            ngx_http_simhash_pump_lost(lk, have,
                                       "it does not exist: Redis lost it "
                                       "(deleted, or a restart without "
                                       "persistence?)");

        } else if (!lk->told_missing) {
            ngx_log_error(NGX_LOG_INFO, lk->log, 0,
                          "simhash zone \"%V\": the stream \"%V\" does not "
                          "exist yet", &zone->name, &lk->rp->stream);
        }

        lk->told_missing = 1;
        ngx_http_simhash_pump_xread(lk);
        return;
    }

    lk->told_missing = 0;

    ngx_http_simhash_pump_check(lk, &xi, &id, have);

    ngx_http_simhash_pump_xread(lk);
}


/* The policy above, for a stream that exists. */

static void
ngx_http_simhash_pump_check(ngx_http_simhash_link_t *lk,
    ngx_http_simhash_redis_xinfo_t *xi, sh_stream_id_t *id, char *have)
{
    ngx_http_simhash_zone_t  *zone;

    zone = lk->rp->zone;

    if (id->ms == 0 && id->seq == 0) {
        if (xi->has_length && xi->length > 0 && !lk->told_start) {
            ngx_log_error(NGX_LOG_NOTICE, lk->log, 0,
                          "simhash zone \"%V\": reading the stream \"%V\" "
                          "from its start: %L entries", &zone->name,
                          &lk->rp->stream, xi->length);
            lk->told_start = 1;
        }

    } else if (xi->has_last && sh_stream_id_cmp(&xi->last, id) < 0) {
        ngx_http_simhash_pump_lost(lk, have,
                                   "it ends before it: Redis lost it, or "
                                   "its end (a restart without "
                                   "persistence, restored from an older "
                                   "copy?)");

    } else if (xi->has_first ? sh_stream_id_cmp(&xi->first, id) <= 0
                             : !xi->has_last
                               || sh_stream_id_cmp(&xi->last, id) <= 0)
    {
        /* ours is in the stream, or was its last: no gap */

    } else if (xi->has_added && xi->has_length && xi->added == xi->length) {

        /* nothing was ever removed from it, yet ours is not there */

        ngx_http_simhash_pump_lost(lk, have,
                                   "it never held it: Redis lost the "
                                   "stream and it was created again (a "
                                   "restart without persistence?)");

    } else {
        ngx_http_simhash_pump_gap(lk, xi, id, have);
    }
}


/*
 * Trimmed past the last id applied here: counted and told; reading goes
 * on from what is left.
 */

static void
ngx_http_simhash_pump_gap(ngx_http_simhash_link_t *lk,
    ngx_http_simhash_redis_xinfo_t *xi, sh_stream_id_t *id, char *have)
{
    char                      first[SH_STREAM_ID_LEN], last[SH_STREAM_ID_LEN];
    ngx_http_simhash_zone_t  *zone;

    zone = lk->rp->zone;

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->gaps, 1);

    if (xi->has_first) {
        (void) sh_stream_id_format(first, &xi->first);

        ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                      "simhash zone \"%V\": the stream \"%V\" was "
                      "trimmed past %s, the last entry applied here: "
                      "the oldest left is %s, %L s later; what was "
                      "published in between is missing here (a larger "
                      "maxlen keeps more)", &zone->name,
                      &lk->rp->stream, have, first,
                      (int64_t) (xi->first.ms - id->ms) / 1000);
        return;
    }

    last[0] = '\0';

    if (xi->has_last) {
        (void) sh_stream_id_format(last, &xi->last);
    }

    ngx_log_error(NGX_LOG_WARN, lk->log, 0,
                  "simhash zone \"%V\": the stream \"%V\" was "
                  "trimmed past %s, the last entry applied here: "
                  "it is empty, its last entry was %s; what was "
                  "published in between is missing here (a larger "
                  "maxlen keeps more)", &zone->name,
                  &lk->rp->stream, have, last);

    /* nothing to read before its last id: the gap is told once */

    if (xi->has_last) {
        ngx_http_simhash_zone_lock(zone, lk->log);

        if (sh_stream_id_cmp(&zone->sh->repl_id, &xi->last) < 0) {
            zone->sh->repl_id = xi->last;
        }

        ngx_http_simhash_zone_unlock(zone);
    }
}


/*
 * Redis lost the stream: it is read again from its start, and this
 * zone's own entries are told apart again from the next one published.
 */

static void
ngx_http_simhash_pump_lost(ngx_http_simhash_link_t *lk, char *have,
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
ngx_http_simhash_pump_xread(ngx_http_simhash_link_t *lk)
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

    n = ngx_min(lk->count, ngx_http_simhash_pump_tokens(lk));

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

    if (ngx_http_simhash_redis_command(&lk->sub,
                                       ngx_http_simhash_pump_xread_reply, lk,
                                       8, argv, argvlen)
        == NGX_OK)
    {
        lk->reading = 1;
        lk->peeked = 0;
        lk->asked = n;
    }
}


void
ngx_http_simhash_pump_pace_handler(ngx_event_t *ev)
{
    ngx_http_simhash_link_t  *lk = ev->data;

    if (ngx_http_simhash_redis_is_ready(&lk->sub)) {
        ngx_http_simhash_pump_xread(lk);
    }
}


/*
 * rate=N: a bucket of N entries, refilled at N a second.  It bounds what
 * a flood of entries costs worker 0 (and how fast it can turn the index
 * over); 0: no bound.
 */

static ngx_uint_t
ngx_http_simhash_pump_tokens(ngx_http_simhash_link_t *lk)
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
ngx_http_simhash_pump_xread_reply(ngx_http_simhash_redis_t *rd,
    redisReply *reply, void *data)
{
    ngx_http_simhash_link_t  *lk = data;

    size_t           i, bytes, size;
    ngx_uint_t       accepted, more;
    redisReply      *entries, *e;
    sh_stream_id_t   id;

    if (reply == NULL) {
        return;
    }

    lk->reading = 0;

    if (reply->type == REDIS_REPLY_NIL) {
        ngx_http_simhash_pump_xinfo(lk);
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_http_simhash_redis_fail(&lk->sub, "XREAD refused: %*s",
                                    (size_t) reply->len, reply->str);
        return;
    }

    entries = ngx_http_simhash_redis_xread_entries(reply);

    if (entries == NULL) {
        ngx_http_simhash_redis_fail(&lk->sub, "XREAD: unexpected reply");
        return;
    }
    accepted = 0;
    bytes = 0;

    for (i = 0; i < entries->elements; i++) {
        e = entries->element[i];

        if (ngx_http_simhash_redis_entry(e, &id) != NGX_OK) {
            ngx_http_simhash_redis_fail(&lk->sub,
                                        "XREAD: unexpected entry %uz", i);
            return;
        }

        /* the tick's bytes: the first entry always (one alone is bounded
           by the reply's bound), the others while they fit */

        size = ngx_http_simhash_pump_entry_size(e);

        if (i > 0 && bytes + size > NGX_HTTP_SIMHASH_READ_BYTES) {
            break;
        }

        bytes += size;

        if (ngx_http_simhash_pump_apply(lk, &id, e) == NGX_OK) {
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
        ngx_http_simhash_pump_xread(lk);
        return;
    }

    (void) ngx_atomic_fetch_add(&lk->rp->outbox->read_paused, 1);

    if (ngx_current_msec - lk->xinfo_last >= NGX_HTTP_SIMHASH_XINFO_EVERY) {
        lk->xinfo_last = ngx_current_msec;
        ngx_http_simhash_pump_xinfo(lk);
        return;
    }

    if (!(ngx_exiting || ngx_terminate || ngx_quit)) {
        ngx_add_timer(&lk->pace, NGX_HTTP_SIMHASH_TICK);
    }
}


/* An entry's bytes: its fields' names and values. */

static size_t
ngx_http_simhash_pump_entry_size(redisReply *entry)
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
