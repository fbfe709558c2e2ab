
/*
 * A DUST learner's rules between the nodes of a replicated zone: see
 * ngx_http_simhash_dust_replicate.h.
 *
 * Pulled, not pushed: the learner records each rule's change of state in
 * its ring (sh_dust_changes, SH_DUST_CHANGES of them), and worker 0 takes
 * them from there at every flush of the outbox (ngx_http_simhash_pump.c),
 * every NGX_HTTP_SIMHASH_FLUSH_EVERY ms, whether Redis is up or not, so a
 * rule that turns on (or off) on one node does so on the others within
 * the replication lag.  Changes are rare (a rule turns on once, and a
 * retired one needs its support doubled to come back): the ring does not
 * wrap between two pulls; if it did, the sweep below sends the rule's
 * state anyway.  So no request ever calls replication: the learner is a
 * feature of the zone, and this file one of the pump.
 *
 * Pins are left out of every record (sh_dust_rule_unpin): they are each
 * node's configuration.
 */


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"
#include "ngx_http_simhash_replicate.h"
#include "ngx_http_simhash_dust_replicate.h"


/* rule changes copied out of the ring per call of sh_dust_changes */
#define NGX_HTTP_SIMHASH_DUST_REPL_BATCH    16

/* seconds between worker 0's sweeps of the rules' counts */
#define NGX_HTTP_SIMHASH_DUST_REPL_SWEEP    10


typedef struct {
    ngx_http_simhash_zone_t       *zone;
    ngx_http_simhash_dust_repl_t  *dr;
    ngx_uint_t                     sent;
} ngx_http_simhash_dust_sweep_t;


static void ngx_http_simhash_dust_repl_put(ngx_http_simhash_zone_t *zone,
    u_char *rec);
static ngx_http_simhash_dust_sent_t *ngx_http_simhash_dust_repl_sent(
    ngx_http_simhash_dust_repl_t *dr, const sh_dust_rule_info_t *ri);
static int ngx_http_simhash_dust_repl_sweep_rule(
    const sh_dust_rule_info_t *ri, void *data);


ngx_int_t
ngx_http_simhash_dust_repl_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, ngx_pool_t *pool)
{
    ngx_uint_t                     n;
    ngx_http_simhash_dust_conf_t  *dc;

    ngx_memzero(dr, sizeof(ngx_http_simhash_dust_repl_t));

    dc = ngx_http_simhash_dust_conf(zone);

    if (dc == NULL || dc->size == 0) {
        return NGX_OK;
    }

    for (n = 1024; n < dc->opts.candidates; n *= 2) {
        /* void */
    }

    dr->slot = ngx_pcalloc(pool, n * sizeof(ngx_http_simhash_dust_sent_t));

    if (dr->slot == NULL) {
        return NGX_ERROR;
    }

    dr->mask = n - 1;
    dr->next = ngx_time() + NGX_HTTP_SIMHASH_DUST_REPL_SWEEP;

    return NGX_OK;
}


/*
 * Under the lock: each rule changed since the last pull, as it is now.
 * The learner's `published` is the ring's position pulled to; the learner sets
 * it past its pins' changes (they are in every node's configuration).
 */

void
ngx_http_simhash_dust_repl_pull(ngx_http_simhash_zone_t *zone)
{
    size_t                          i, n;
    sh_dust_change_t                ch[NGX_HTTP_SIMHASH_DUST_REPL_BATCH];
    ngx_http_simhash_dust_shctx_t  *ds;
    u_char                          rec[SH_DUST_RULE_REC_LEN];

    ds = ngx_http_simhash_dust_shctx(zone);

    if (ds == NULL || ds->dust == NULL) {
        return;
    }

    do {
        n = sh_dust_changes(ds->dust, &ds->published, ch,
                            NGX_HTTP_SIMHASH_DUST_REPL_BATCH);

        for (i = 0; i < n; i++) {
            if (sh_dust_export_rule(ds->dust, &ch[i].rule, rec) == 0
                && sh_dust_rule_unpin(rec, NULL) == 0)
            {
                ngx_http_simhash_dust_repl_put(zone, rec);
            }
        }

    } while (n == NGX_HTTP_SIMHASH_DUST_REPL_BATCH);
}


/*
 * A rule's record into the outbox, under the lock.  A full outbox drops
 * it like a document: the rule's next change, or the next sweep, sends
 * its state again.
 */

static void
ngx_http_simhash_dust_repl_put(ngx_http_simhash_zone_t *zone, u_char *rec)
{
    ngx_http_simhash_outrec_t   r;
    ngx_http_simhash_outbox_t  *ob;

    if (zone->replicate == NULL || zone->replicate->outbox == NULL) {
        return;
    }

    ob = zone->replicate->outbox;

    ngx_memzero(&r, sizeof(ngx_http_simhash_outrec_t));
    r.len = SH_DUST_RULE_REC_LEN;
    r.type = NGX_HTTP_SIMHASH_OUT_DUST;
    r.time = (uint64_t) ngx_time() * 1000;

    if (ngx_http_simhash_outbox_put(ob, &r, rec) != NGX_OK) {
        (void) ngx_atomic_fetch_add(&ob->dropped, 1);
    }
}


static ngx_http_simhash_dust_sent_t *
ngx_http_simhash_dust_repl_sent(ngx_http_simhash_dust_repl_t *dr,
    const sh_dust_rule_info_t *ri)
{
    uint64_t                       key;
    ngx_http_simhash_dust_sent_t  *s;

    key = ri->host_hash ^ (ri->pattern_hash * 0x9e3779b97f4a7c15ULL)
          ^ (ri->arg_hash * 0xc2b2ae3d27d4eb4fULL) ^ (uint64_t) ri->kind;
    key |= 1;

    s = &dr->slot[(key >> 17) & dr->mask];

    if (s->key != key) {
        s->key = key;
        s->support = 0;
        s->against = 0;
    }

    return s;
}


/*
 * Every NGX_HTTP_SIMHASH_DUST_REPL_SWEEP seconds, worker 0 sends the
 * active, retired and pinned rules whose counts moved by a step (below):
 * so at most one record per rule per sweep, whatever the traffic.
 * Candidates are not swept: they are many, mostly noise, and reach the
 * others when they turn on.
 */

void
ngx_http_simhash_dust_repl_sweep(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, ngx_log_t *log)
{
    ngx_http_simhash_dust_sweep_t  sw;

    if (dr->slot == NULL || ngx_http_simhash_dust_learner(zone) == NULL
        || ngx_time() < dr->next)
    {
        return;
    }

    dr->next = ngx_time() + NGX_HTTP_SIMHASH_DUST_REPL_SWEEP;

    sw.zone = zone;
    sw.dr = dr;
    sw.sent = 0;

    ngx_http_simhash_zone_lock(zone, log);
    sh_dust_foreach_rule(ngx_http_simhash_dust_learner(zone), 0, 0,
                         ngx_http_simhash_dust_repl_sweep_rule, &sw);
    ngx_http_simhash_zone_unlock(zone);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "simhash zone \"%V\": %ui DUST rules sent",
                   &zone->name, sw.sent);
}


static int
ngx_http_simhash_dust_repl_sweep_rule(const sh_dust_rule_info_t *ri,
    void *data)
{
    ngx_http_simhash_dust_sweep_t  *sw = data;

    ngx_http_simhash_dust_sent_t  *s;
    u_char                         rec[SH_DUST_RULE_REC_LEN];

    s = ngx_http_simhash_dust_repl_sent(sw->dr, ri);

    /*
     * A step worth a record: support doubled since the rule was last sent
     * or applied (its bound barely moves for less, and the records of a
     * rule over its life stay logarithmic: about 20 up to the halving at
     * 2^20), or any pair against (each one matters to the bound, and a
     * rule goes off on few of them).  A pin without evidence: nothing.
     */

    if ((ri->support < 2 * (uint64_t) s->support
         || ri->support == s->support)
        && ri->against <= s->against)
    {
        return 0;
    }

    if (sh_dust_export_rule(ngx_http_simhash_dust_learner(sw->zone), ri,
                            rec)
        != 0
        || sh_dust_rule_unpin(rec, NULL) != 0)
    {
        return 0;
    }

    ngx_http_simhash_dust_repl_put(sw->zone, rec);

    s->support = ri->support;
    s->against = ri->against;
    sw->sent++;

    return 0;
}


/*
 * A DUST entry of another node (or ours read back): merged into the
 * learner (sh_dust_import_rule keeps the larger of each count, so a
 * replay or our own record changes nothing), its pin state dropped.  The
 * state changes the import causes here are logged like ours, but not
 * published again: every node reads the record itself.
 */

ngx_int_t
ngx_http_simhash_dust_repl_apply(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_dust_repl_t *dr, u_char *rec, ngx_log_t *log)
{
    int                             rc;
    uint64_t                        seq;
    sh_dust_rule_info_t             ri;
    ngx_http_simhash_shctx_t       *sh;
    ngx_http_simhash_dust_shctx_t  *ds;
    ngx_http_simhash_dust_sent_t   *s;

    sh = zone->sh;
    ds = ngx_http_simhash_dust_shctx(zone);

    if (ds == NULL || ds->dust == NULL) {
        return NGX_DECLINED;
    }

    if (sh_dust_rule_unpin(rec, &ri) != 0) {
        return NGX_ERROR;
    }

    ngx_http_simhash_zone_lock(zone, log);

    /* ours before the import still go out; the import's do not */
    ngx_http_simhash_dust_repl_pull(zone);

    seq = sh_dust_change_seq(ds->dust);

    rc = sh_dust_import_rule(ds->dust, rec, SH_DUST_RULE_REC_LEN,
                             (uint64_t) ngx_time());

    if (sh_dust_change_seq(ds->dust) != seq) {
        ds->published = sh_dust_change_seq(ds->dust);
    }

    if (rc == 0) {
        /* the snapshot is due: it keeps the rules and the stream's id */
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
    }

    ngx_http_simhash_zone_unlock(zone);

    if (rc != 0) {
        return NGX_ERROR;
    }

    /* what the others know already need not be sent back to them */

    if (dr->slot) {
        s = ngx_http_simhash_dust_repl_sent(dr, &ri);

        if (ri.support > s->support) {
            s->support = ri.support;
        }

        if (ri.against > s->against) {
            s->against = ri.against;
        }
    }

    ngx_http_simhash_dust_log(zone, log);

    return NGX_OK;
}
