
/*
 * Worker 0's pump: one entry read from the stream, checked (its form, the
 * seed, the extraction version, the MAC, its time, its writer's seq) and
 * applied under the zone's lock with the last id: a document's version to
 * the store (a key the zone lacks is stored, a key it holds takes the
 * entry's fingerprint if the entry's version is newer: sh_stream_newer,
 * so every node keeps the same version whatever the order), a DUST rule's
 * state to the learner (ngx_http_simhash_dust_replicate.c).  An entry
 * whose seq is not above the last one applied from its writer is a
 * replay, refused.  Entries that do not pass are counted, and logged a
 * line a second at most.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"
#include "ngx_http_simhash_pump.h"


#define NGX_HTTP_SIMHASH_FUTURE         86400000    /* ms: see
                                                   entry_parse() */
#define NGX_HTTP_SIMHASH_PAST           1577836800000ULL    /* 2020-01-01 */


static ngx_int_t ngx_http_simhash_pump_entry_parse(
    ngx_http_simhash_link_t *lk, redisReply *entry, sh_stream_entry_t *e);
static ngx_int_t ngx_http_simhash_pump_writer_check(
    ngx_http_simhash_link_t *lk, redisReply *id, sh_stream_entry_t *e);
static void ngx_http_simhash_pump_writer_applied(ngx_http_simhash_link_t *lk,
    sh_stream_entry_t *e);
static ngx_int_t ngx_http_simhash_pump_apply_dust(ngx_http_simhash_link_t *lk,
    sh_stream_id_t *id, redisReply *entry, sh_stream_entry_t *e);
static void ngx_http_simhash_pump_lag(ngx_http_simhash_outbox_t *ob,
    uint64_t time, const char *node, size_t len);
static void ngx_http_simhash_pump_refused(ngx_http_simhash_link_t *lk,
    redisReply *id, char *why);


ngx_msec_t  ngx_http_simhash_lag_le[NGX_HTTP_SIMHASH_NLAG] = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, NGX_MAX_INT32_VALUE
};


/*
 * One entry's fields, checked: NGX_OK, or NGX_DECLINED with the refusal
 * logged (malformed, under another seed, or timed far ahead).
 */

static ngx_int_t
ngx_http_simhash_pump_entry_parse(ngx_http_simhash_link_t *lk,
    redisReply *entry, sh_stream_entry_t *e)
{
    char                      err[128];
    size_t                    i;
    redisReply               *fields, *f, *v;
    ngx_http_simhash_zone_t  *zone;

    zone = lk->rp->zone;
    fields = entry->element[1];

    sh_stream_entry_init(e);

    if (fields->type != REDIS_REPLY_ARRAY || fields->elements % 2) {
        ngx_http_simhash_pump_refused(lk, entry->element[0], "no field list");
        return NGX_DECLINED;
    }

    for (i = 0; i < fields->elements; i += 2) {
        f = fields->element[i];
        v = fields->element[i + 1];

        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            ngx_http_simhash_pump_refused(lk, entry->element[0],
                                          "not a string");
            return NGX_DECLINED;
        }

        if (sh_stream_entry_field(e, f->str, f->len, v->str, v->len, err,
                                  sizeof(err))
            != 0)
        {
            ngx_http_simhash_pump_refused(lk, entry->element[0], err);
            return NGX_DECLINED;
        }
    }

    if (sh_stream_entry_check(e, err, sizeof(err)) != 0) {
        ngx_http_simhash_pump_refused(lk, entry->element[0], err);
        return NGX_DECLINED;
    }

    if (e->seed != lk->seed) {
        ngx_http_simhash_pump_refused(lk, entry->element[0],
                                      "fingerprints under another "
                                      "simhash_seed");
        return NGX_DECLINED;
    }

    /* a node of another release or other options, as in an upgrade (a
       DUST entry has no version: rules do not depend on it) */

    if (!sh_stream_is_dust(e) && e->xv != zone->version) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->refused_version, 1);
        ngx_snprintf((u_char *) err, sizeof(err),
                     "extraction version %08xD, this zone's is %08xD%Z",
                     e->xv, zone->version);
        ngx_http_simhash_pump_refused(lk, entry->element[0], err);
        return NGX_DECLINED;
    }

    /* written by someone who does not hold the tier's secret, or altered
       on the way */

    if (!sh_stream_verify(e, zone->mac_key)) {
        (void) ngx_atomic_fetch_add(&lk->rp->outbox->refused_mac, 1);
        ngx_http_simhash_pump_refused(lk, entry->element[0],
                                      "its MAC does not verify (a writer "
                                      "without the tier's simhash_seed)");
        return NGX_DECLINED;
    }

    /*
     * a version from far ahead of this clock would win over every later
     * one of its key: a clock that is wrong, or a foreign writer
     */

    if (e->time > ngx_http_simhash_pump_now() + NGX_HTTP_SIMHASH_FUTURE) {
        ngx_http_simhash_pump_refused(lk, entry->element[0],
                                      "its time is more than a day ahead");
        return NGX_DECLINED;
    }

    /* nor from long before there was any: time=1 made the lag 56 years */

    if (e->time < NGX_HTTP_SIMHASH_PAST) {
        ngx_http_simhash_pump_refused(lk, entry->element[0],
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
        ngx_http_simhash_pump_refused(lk, entry->element[0],
                                      "no \"seq\" field (an earlier release's "
                                      "entry, or a replay of one)");
        return NGX_DECLINED;
    }

    return ngx_http_simhash_pump_writer_check(lk, entry->element[0], e);
}


/*
 * A replay: an entry whose seq is not above the last one applied from
 * its writer (a genuine entry added to the stream again by someone who
 * read it: its MAC verifies, and applying it would date the lag by its
 * age, or store again a document evicted since).  The writers' table is
 * worker 0's (the only reader); a writer not in it (the first entry since
 * this node started, or since its slot went to another) is taken as it
 * comes.  The table moves with the last id applied, under the zone's lock
 * (ngx_http_simhash_pump_writer_applied()): a worker 0 killed while applying
 * an entry leaves both before it, and its successor applies the entry
 * again instead of taking it for a replay.
 */

static ngx_int_t
ngx_http_simhash_pump_writer_check(ngx_http_simhash_link_t *lk,
    redisReply *id, sh_stream_entry_t *e)
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
        ngx_http_simhash_pump_refused(lk, id, err);
        return NGX_DECLINED;
    }

    lk->writer = w;

    return NGX_OK;
}


/* Under the zone's lock, with the last id: the entry's seq is its
 * writer's now (a new writer takes a free slot, or the one applied from
 * longest ago). */

static void
ngx_http_simhash_pump_writer_applied(ngx_http_simhash_link_t *lk,
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

ngx_int_t
ngx_http_simhash_pump_apply(ngx_http_simhash_link_t *lk, sh_stream_id_t *id,
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

    if (ngx_http_simhash_pump_entry_parse(lk, entry, &e) != NGX_OK) {
        goto refused;
    }

    if (sh_stream_is_dust(&e)) {
        return ngx_http_simhash_pump_apply_dust(lk, id, entry, &e);
    }

    own = (e.node_len == rp->node.len
           && ngx_memcmp(e.node, rp->node.data, e.node_len) == 0);

    if (!own) {
        ngx_http_simhash_pump_lag(ob, e.time, (const char *) e.node,
                                  e.node_len);
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
    doc = ngx_http_simhash_zone_doc(zone, ref);

    if (doc == NULL) {
        ngx_http_simhash_zone_write(zone);

        ref = ngx_http_simhash_zone_store(zone, &key, e.hash, 0,
                                          sh_stream_second(e.time),
                                          &e.sketches);
        applied = (ref != SH_NOREF);

    } else if (ngx_http_simhash_zone_fingerprint(zone, ref, &hash) == NGX_OK
               && sh_stream_newer(e.time, e.hash, doc->time, hash))
    {
        ngx_http_simhash_zone_write(zone);

        d = *doc;
        d.digest = 0;
        d.sketches = e.sketches;
        d.time = sh_stream_second(e.time);
        ngx_http_simhash_zone_set(zone, ref, &d, e.hash);
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
        doc = ngx_http_simhash_zone_doc(zone, ref);

        if (doc != NULL) {
            dust = ngx_http_simhash_dust_observe(zone, &key, doc->keyhash);
        }
    }

    sh->repl_id = *id;
    ngx_http_simhash_pump_writer_applied(lk, &e);

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
 * learner (ngx_http_simhash_dust_repl_apply()).  A zone without dust= reads
 * past it: counted as ignored, not refused, as the tier may mix zones
 * with and without a learner.  A record that passed the MAC and still
 * does not decode (a node of another record version) is refused.
 */

static ngx_int_t
ngx_http_simhash_pump_apply_dust(ngx_http_simhash_link_t *lk,
    sh_stream_id_t *id, redisReply *entry, sh_stream_entry_t *e)
{
    ngx_int_t                   rc;
    ngx_http_simhash_zone_t    *zone;
    ngx_http_simhash_outbox_t  *ob;

    zone = lk->rp->zone;
    ob = lk->rp->outbox;

    rc = ngx_http_simhash_dust_repl_apply(zone, &lk->dust, e->dust,
                                          lk->log);

    if (rc == NGX_ERROR) {
        (void) ngx_atomic_fetch_add(&ob->refused, 1);
        ngx_http_simhash_pump_refused(lk, entry->element[0],
                                      "a damaged DUST rule record");

    } else {
        (void) ngx_atomic_fetch_add(rc == NGX_OK ? &ob->dust_applied
                                    : &ob->dust_ignored, 1);
    }

    ngx_http_simhash_zone_lock(zone, lk->log);
    zone->sh->repl_id = *id;
    ngx_http_simhash_pump_writer_applied(lk, e);
    ngx_http_simhash_zone_unlock(zone);

    return NGX_OK;
}


/* The age of an entry of another node when applied, in all and by node. */

static void
ngx_http_simhash_pump_lag(ngx_http_simhash_outbox_t *ob, uint64_t time,
    const char *node, size_t len)
{
    uint64_t                      now, lag;
    ngx_uint_t                    i;
    ngx_http_simhash_node_lag_t  *nl, *oldest;

    now = ngx_http_simhash_pump_now();
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
ngx_http_simhash_pump_refused(ngx_http_simhash_link_t *lk, redisReply *id,
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
