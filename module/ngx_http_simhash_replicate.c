
/*
 * Replication, what every process of a replicated zone has: the
 * simhash_replicate directive, and the zone's outbox.
 *
 * A tier of nginx nodes shares one index through a Redis Stream.  Every
 * node keeps a full replica in its own zone, so a lookup stays a probe in
 * local shared memory; what travels is each new or changed document
 * (sh_stream.h: node, key, fingerprint, body digest, time, seed).  Every
 * local insert and every changed fingerprint goes, under the zone's lock,
 * into the zone's outbox: a ring in a shared memory zone of its own
 * ("NAME:outbox", outbox=SIZE), from which worker 0 publishes it and which
 * it empties only as far as Redis has acknowledged
 * (ngx_http_simhash_pump*.c: worker 0's side, publishing and applying).
 * The Redis URL is read by ngx_http_simhash_redis_url.c; a DUST rule's
 * record is put in by ngx_http_simhash_dust_replicate.c.
 * A request only appends to the outbox, in memory: nothing on the request
 * path ever waits for Redis.  When the outbox is full, new records are
 * dropped, counted, and logged once per overflow.
 *
 * An unchanged re-fetch is not published: nothing another node decides on
 * has changed (the age order is local, eviction is local), and a recrawl
 * is mostly unchanged pages.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_redis.h"
#include "ngx_http_simhash_replicate.h"


#define NGX_HTTP_SIMHASH_OUTBOX_MIN     (256 * 1024)


static char *ngx_http_simhash_replicate_param(ngx_conf_t *cf,
    ngx_http_simhash_replicate_t *rp, ngx_str_t *value);
static ngx_int_t ngx_http_simhash_outbox_init(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_simhash_outbox_migrate(ngx_http_simhash_replicate_t *rp,
    ngx_log_t *log);


/*
 * simhash_replicate ZONE URL [stream=NAME] [node=ID] [maxlen=N]
 *                   [outbox=SIZE] [timeout=TIME] [rate=N];
 */

char *
ngx_http_simhash_replicate_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_main_conf_t  *smcf = conf;

    char                           *rv;
    ngx_str_t                      *value, name;
    ngx_uint_t                      i;
    ngx_http_simhash_redis_conf_t  *redis;
    ngx_http_simhash_replicate_t   *rp, **rpp;

    value = cf->args->elts;

    rpp = smcf->replicates.elts;

    for (i = 0; i < smcf->replicates.nelts; i++) {
        if (rpp[i]->zone_name.len == value[1].len
            && ngx_strncmp(rpp[i]->zone_name.data, value[1].data,
                           value[1].len) == 0)
        {
            return "is duplicate for this zone";
        }
    }

    rp = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_replicate_t));
    redis = ngx_pcalloc(cf->pool, sizeof(ngx_http_simhash_redis_conf_t));
    if (rp == NULL || redis == NULL) {
        return NGX_CONF_ERROR;
    }

    rp->redis = redis;
    rp->zone_name = value[1];
    rp->maxlen = 1000000;
    rp->outbox_size = 4 * 1024 * 1024;
    rp->rate = 10000;
    redis->timeout = 3000;
    ngx_http_simhash_where(cf, &rp->where);

    rv = ngx_http_simhash_redis_url(cf, redis, &value[2]);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    rp->url = redis->url;

    for (i = 3; i < cf->args->nelts; i++) {
        rv = ngx_http_simhash_replicate_param(cf, rp, &value[i]);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    /* the stream is named after the zone; the node after the host */

    if (rp->stream.len == 0) {
        rp->stream.len = sizeof("simhash:") - 1 + rp->zone_name.len;
        rp->stream.data = ngx_pnalloc(cf->pool, rp->stream.len);
        if (rp->stream.data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_sprintf(rp->stream.data, "simhash:%V", &rp->zone_name);
    }

    if (rp->node.len == 0) {
        rp->node = cf->cycle->hostname;

        if (rp->node.len == 0 || rp->node.len > SH_STREAM_NODE_MAX) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "the host name cannot be the node id: "
                               "give \"node=\"");
            return NGX_CONF_ERROR;
        }
    }

    /* the outbox: a shared memory zone of its own, kept across reloads */

    name.len = rp->zone_name.len + sizeof(":outbox") - 1;
    name.data = ngx_pnalloc(cf->pool, name.len);
    if (name.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_sprintf(name.data, "%V:outbox", &rp->zone_name);

    /* the ring is whole pages of the slab pool: room for its bookkeeping */

    rp->shm_zone = ngx_shared_memory_add(cf, &name,
                                         rp->outbox_size
                                         + rp->outbox_size / 64 + 65536
                                         + sizeof(ngx_http_simhash_outbox_t),
                                         &ngx_http_simhash_module);
    if (rp->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (rp->shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate zone \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    rp->shm_zone->init = ngx_http_simhash_outbox_init;
    rp->shm_zone->data = rp;

    rpp = ngx_array_push(&smcf->replicates);
    if (rpp == NULL) {
        return NGX_CONF_ERROR;
    }

    *rpp = rp;

    return NGX_CONF_OK;
}


static char *
ngx_http_simhash_replicate_param(ngx_conf_t *cf,
    ngx_http_simhash_replicate_t *rp, ngx_str_t *value)
{
    u_char                         *p;
    ssize_t                         size;
    ngx_int_t                       n;
    ngx_str_t                       s;
    ngx_msec_t                      ms;
    ngx_http_simhash_redis_conf_t  *redis;

    redis = rp->redis;

    if (ngx_strncmp(value->data, "stream=", 7) == 0) {
        rp->stream.data = value->data + 7;
        rp->stream.len = value->len - 7;

        for (p = rp->stream.data; p < rp->stream.data + rp->stream.len; p++)
        {
            if (*p <= ' ' || *p >= 0x7f) {
                break;
            }
        }

        if (rp->stream.len == 0 || rp->stream.len > 256
            || p < rp->stream.data + rp->stream.len)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid stream \"%V\": 1 to 256 printable "
                               "characters, no spaces", value);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "node=", 5) == 0) {
        rp->node.data = value->data + 5;
        rp->node.len = value->len - 5;

        for (p = rp->node.data; p < rp->node.data + rp->node.len; p++) {
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
                  || (*p >= '0' && *p <= '9')
                  || *p == '_' || *p == '-' || *p == '.' || *p == ':'))
            {
                break;
            }
        }

        if (rp->node.len == 0 || rp->node.len > SH_STREAM_NODE_MAX
            || p < rp->node.data + rp->node.len)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid node \"%V\": 1 to %d letters, "
                               "digits, \"_\", \"-\", \".\", \":\"",
                               value, SH_STREAM_NODE_MAX);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "maxlen=", 7) == 0) {
        n = ngx_atoi(value->data + 7, value->len - 7);

        if (n == NGX_ERROR || n < 1000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid maxlen \"%V\": at least 1000 "
                               "entries", value);
            return NGX_CONF_ERROR;
        }

        rp->maxlen = (ngx_uint_t) n;
        return NGX_CONF_OK;
    }

    /* stream entries read per second at most; 0: no bound */

    if (ngx_strncmp(value->data, "rate=", 5) == 0) {
        n = ngx_atoi(value->data + 5, value->len - 5);

        if (n == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid rate \"%V\": entries a second, "
                               "0 for no bound", value);
            return NGX_CONF_ERROR;
        }

        rp->rate = (ngx_uint_t) n;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "outbox=", 7) == 0) {
        s.data = value->data + 7;
        s.len = value->len - 7;

        size = ngx_parse_size(&s);

        if (size == NGX_ERROR || size < NGX_HTTP_SIMHASH_OUTBOX_MIN) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid outbox size \"%V\": at least 256k",
                               value);
            return NGX_CONF_ERROR;
        }

        rp->outbox_size = ngx_align((size_t) size, 8);
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "timeout=", 8) == 0) {
        s.data = value->data + 8;
        s.len = value->len - 8;

        ms = ngx_parse_time(&s, 0);

        if (ms == (ngx_msec_t) NGX_ERROR || ms < 100 || ms > 600000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid timeout \"%V\": 100ms to 10m",
                               value);
            return NGX_CONF_ERROR;
        }

        redis->timeout = ms;
        return NGX_CONF_OK;
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                       value);
    return NGX_CONF_ERROR;
}


/* At the end of http{}, when every zone is known: each one's zone. */

ngx_int_t
ngx_http_simhash_replicate_resolve(ngx_conf_t *cf,
    ngx_http_simhash_main_conf_t *smcf)
{
    ngx_uint_t                      i;
    ngx_http_simhash_zone_t        *zone;
    ngx_http_simhash_replicate_t  **rpp;

    rpp = smcf->replicates.elts;

    for (i = 0; i < smcf->replicates.nelts; i++) {
        zone = ngx_http_simhash_zone_find(smcf, &rpp[i]->zone_name);

        if (zone == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "unknown simhash zone \"%V\" in %V",
                          &rpp[i]->zone_name, &rpp[i]->where);
            return NGX_ERROR;
        }

        zone->replicate = rpp[i];
        zone->stream = rpp[i]->stream;
        rpp[i]->zone = zone;
    }

    return NGX_OK;
}


/* The outbox: kept as it is on reload when its size did not change. */

static ngx_int_t
ngx_http_simhash_outbox_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_simhash_replicate_t  *ort = data;

    ngx_slab_pool_t                *shpool;
    ngx_http_simhash_outbox_t      *ob;
    ngx_http_simhash_replicate_t   *rp;

    rp = shm_zone->data;

    if (ort) {
        rp->outbox = ort->outbox;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        rp->outbox = shpool->data;
        return NGX_OK;
    }

    ob = ngx_slab_calloc(shpool, sizeof(ngx_http_simhash_outbox_t));
    if (ob == NULL) {
        return NGX_ERROR;
    }

    ob->size = rp->outbox_size;
    ob->ring = ngx_slab_alloc(shpool, ob->size);

    if (ob->ring == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "simhash zone \"%V\": no room for an outbox of %uz "
                      "bytes", &rp->zone_name, ob->size);
        return NGX_ERROR;
    }

    shpool->data = ob;
    rp->outbox = ob;

    if (!ngx_test_config) {
        ngx_http_simhash_outbox_migrate(rp, shm_zone->shm.log);
    }

    return NGX_OK;
}


/*
 * A reload that resized the outbox: what the old one holds and Redis has
 * not acknowledged is taken over, oldest first, as far as it fits.  The
 * old workers may still be writing to it: its zone's lock is held.
 */

static void
ngx_http_simhash_outbox_migrate(ngx_http_simhash_replicate_t *rp,
    ngx_log_t *log)
{
    size_t                          off;
    uint64_t                        pos;
    ngx_uint_t                      copied, lost, level;
    ngx_http_simhash_outrec_t      *rec;
    ngx_http_simhash_outbox_t      *oob;
    ngx_http_simhash_replicate_t   *ort;

    ort = ngx_http_simhash_old_zone(rp->shm_zone);

    if (ort == NULL || ort->outbox == NULL || ort->zone == NULL
        || ort->zone->sh == NULL)
    {
        return;
    }

    oob = ort->outbox;
    copied = 0;
    lost = 0;

    ngx_http_simhash_zone_lock(ort->zone, log);

    for (pos = oob->head; pos < oob->tail; /* void */ ) {
        off = (size_t) (pos % oob->size);
        rec = (ngx_http_simhash_outrec_t *) (oob->ring + off);

        if (rec->len == NGX_HTTP_SIMHASH_WRAP) {
            pos += oob->size - off;
            continue;
        }

        if (ngx_http_simhash_outbox_put(rp->outbox, rec,
                                      (u_char *) rec
                                      + sizeof(ngx_http_simhash_outrec_t))
            == NGX_OK)
        {
            copied++;

        } else {
            lost++;
        }

        pos += sizeof(ngx_http_simhash_outrec_t) + ngx_align(rec->len, 8);
    }

    ngx_http_simhash_zone_unlock(ort->zone);

    rp->outbox->dropped += lost;

    level = lost ? NGX_LOG_WARN : NGX_LOG_NOTICE;

    ngx_log_error(level, log, 0,
                  "simhash zone \"%V\": the outbox was resized: %ui "
                  "documents not yet published taken over, %ui did not fit",
                  &rp->zone_name, copied, lost);
}


/*
 * This node's new version of a document (dated by
 * ngx_http_simhash_zone_changed()) into the outbox, under the zone's lock;
 * worker 0 publishes it (ngx_http_simhash_pump_publish.c).
 */

void
ngx_http_simhash_replicate_publish(ngx_http_simhash_zone_t *zone,
    ngx_str_t *key, uint32_t ref, uint64_t time, ngx_log_t *log)
{
    const sh_store_doc_t       *d;
    ngx_http_simhash_outrec_t   r;
    ngx_http_simhash_outbox_t  *ob;

    if (zone->replicate == NULL) {
        return;
    }

    ob = zone->replicate->outbox;

    d = ngx_http_simhash_zone_doc(zone, ref);

    if (ob == NULL || d == NULL
        || ngx_http_simhash_zone_fingerprint(zone, ref, &r.hash) != NGX_OK)
    {
        return;
    }

    r.len = (uint32_t) key->len;
    r.type = NGX_HTTP_SIMHASH_OUT_DOC;
    r.digest = d->digest;
    r.time = time;
    r.sketches = d->sketches;

    if (ngx_http_simhash_outbox_put(ob, &r, key->data) == NGX_OK) {
        return;
    }

    (void) ngx_atomic_fetch_add(&ob->dropped, 1);

    if (ob->overflow++ == 0) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": the outbox is full (is Redis "
                      "down or slow?): new documents are not published "
                      "until it has room", &zone->name);
    }
}


/*
 * A record at the tail; NGX_DECLINED when it does not fit.  The tail moves
 * last: a worker killed in the middle leaves a record that was never there.
 * A record never wraps: when it does not fit before the end of the ring,
 * the rest is marked unused and it goes at the start.
 */

ngx_int_t
ngx_http_simhash_outbox_put(ngx_http_simhash_outbox_t *ob,
    ngx_http_simhash_outrec_t *r, u_char *key)
{
    size_t                      need, off, pad;
    ngx_http_simhash_outrec_t  *rec;

    need = sizeof(ngx_http_simhash_outrec_t) + ngx_align(r->len, 8);
    off = (size_t) (ob->tail % ob->size);
    pad = (ob->size - off < need) ? ob->size - off : 0;

    if (ob->tail - ob->head + pad + need > ob->size) {
        return NGX_DECLINED;
    }

    if (pad) {
        rec = (ngx_http_simhash_outrec_t *) (ob->ring + off);
        rec->len = NGX_HTTP_SIMHASH_WRAP;
        off = 0;
    }

    rec = (ngx_http_simhash_outrec_t *) (ob->ring + off);
    *rec = *r;
    ngx_memcpy((u_char *) rec + sizeof(ngx_http_simhash_outrec_t), key,
               r->len);

    ngx_memory_barrier();

    ob->tail += pad + need;
    ob->records++;

    return NGX_OK;
}
