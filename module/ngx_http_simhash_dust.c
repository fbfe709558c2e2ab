
/*
 * The DUST learner (src/sh_dust.h, docs/DUST.md) in a simhash zone: which
 * URL differences do not change a page, learned per host from the
 * module's own decisions, and requests answered as predicted duplicates
 * without a fetch.
 *
 * Storage: the learner's region is a slab allocation of its own in the
 * zone's shared memory, next to the store, sized by simhash_zone's dust=
 * and added to the zone's size (zone=NAME:SIZE keeps its capacity in
 * documents).  Every call runs under the zone's lock, as the store's do.
 * Its hashes are keyed by a key derived from simhash_seed ("dust"), so a
 * client cannot aim URLs at one slot.
 *
 * The learner is a part of the zone (ngx_http_simhash_part_t): its
 * configuration is read by ngx_http_simhash_dust_conf.c, its shared state
 * (ngx_http_simhash_dust_shctx_t) sits in the zone's slot for it.  This
 * file: the region across reloads and resizes, the snapshot's section of
 * rules, the pins of simhash_dust_rule, observing a decision (logging the
 * rule changes it causes, each once), a prediction and the check that its
 * original is still stored, and the rules for the stats.  The response
 * path (module/ngx_http_simhash_decide.c, _predict.c) decides when to
 * call these, and answers a predicted duplicate itself.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"
#include "sh_site.h"

/* rule changes copied out of the ring per hold of the lock, to be logged
 * once it is released */
#define NGX_HTTP_SIMHASH_DUST_LOG_MAX   16


static ngx_int_t ngx_http_simhash_dust_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);
static void ngx_http_simhash_dust_migrate(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);
static ngx_uint_t ngx_http_simhash_dust_want_tail(
    ngx_http_simhash_zone_t *zone, ngx_log_t *log);
static ngx_int_t ngx_http_simhash_dust_save_tail(
    ngx_http_simhash_zone_t *zone, void **buf, size_t *len, char *err,
    size_t errlen);
static ngx_int_t ngx_http_simhash_dust_load_tail(
    ngx_http_simhash_zone_t *zone, u_char *buf, size_t len, ngx_log_t *log);
static void ngx_http_simhash_dust_repin(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_dust_format(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_dust_reopts(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log);
static ngx_int_t ngx_http_simhash_dust_pins(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);
static ngx_int_t ngx_http_simhash_dust_pin_all(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log);
static ngx_uint_t ngx_http_simhash_dust_pin_eq(
    ngx_http_simhash_dust_pin_t *a, ngx_http_simhash_dust_pin_t *b);
static void ngx_http_simhash_dust_text(u_char *out, char *text);
static int ngx_http_simhash_dust_rule_cb(const sh_dust_rule_info_t *ri,
    void *data);
static int ngx_http_simhash_dust_host_cb(const sh_dust_host_info_t *h,
    void *data);


ngx_http_simhash_part_t  ngx_http_simhash_dust_part = {
    ngx_string("dust"),
    0,                                      /* index */
    ngx_string("DUST rules"),               /* tail_name */
    sizeof(ngx_http_simhash_dust_shctx_t),  /* shctx_size */

    ngx_http_simhash_dust_create_conf,      /* create_conf */
    ngx_http_simhash_dust_param,            /* param */
    ngx_http_simhash_dust_conf_done,        /* conf_done */
    ngx_http_simhash_dust_shm_size,         /* shm_size */

    ngx_http_simhash_dust_init,             /* shm_init */
    ngx_http_simhash_dust_migrate,          /* shm_migrate */

    ngx_http_simhash_dust_want_tail,        /* want_tail */
    ngx_http_simhash_dust_save_tail,        /* save_tail */
    ngx_http_simhash_dust_load_tail,        /* load_tail */

    ngx_http_simhash_dust_postconfiguration,    /* postconfiguration */
    NULL,                                   /* init_module */
    NULL,                                   /* init_process */
    NULL,                                   /* exit_process */
    ngx_http_simhash_dust_exit_master,      /* exit_master */

    NULL,                                   /* save_aside */
    NULL                                    /* load_aside */
};


/*
 * The zone's init: a new zone gets a fresh learner; a zone kept over a
 * reload keeps its learner (formatted again under a new seed; its rules
 * carried over when dust_precision= or dust_evidence= changed); either way
 * the pins of this configuration are applied, and those of the last one
 * that this one no longer has are cleared.
 */

static ngx_int_t
ngx_http_simhash_dust_init(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    char                            err[256];
    ngx_int_t                       rc;
    ngx_http_simhash_dust_conf_t   *dc;
    ngx_http_simhash_dust_shctx_t  *ds;

    dc = ngx_http_simhash_dust_conf(zone);
    ds = ngx_http_simhash_dust_shctx(zone);

    if (dc->size == 0) {
        return NGX_OK;
    }

    if (ds->dust && ds->size != dc->size) {
        /* the store and the learner share the zone's pages */
        ngx_log_error(NGX_LOG_EMERG, log, 0,
                      "simhash zone \"%V\": dust= changed but the zone's "
                      "size did not; change zone= too, or restart",
                      &zone->name);
        return NGX_ERROR;
    }

    if (ds->dust == NULL) {
        ds->dust = ngx_slab_alloc(zone->shpool, dc->size);

        if (ds->dust == NULL) {
            ngx_log_error(NGX_LOG_EMERG, log, 0,
                          "simhash zone \"%V\" has no room for its DUST "
                          "learner of %uz bytes", &zone->name, dc->size);
            return NGX_ERROR;
        }

        ds->size = dc->size;
        rc = ngx_http_simhash_dust_format(zone, log);

    } else if (sh_dust_attach(ds->dust, ds->size, err, sizeof(err))
               == NULL)
    {
        /* a module of another learner layout (its hosts now keep their
         * site) reloaded onto this zone */
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": %s, the DUST learner starts "
                      "empty", &zone->name, err);

        ngx_http_simhash_zone_lock(zone, log);
        rc = ngx_http_simhash_dust_format(zone, log);
        ngx_http_simhash_zone_unlock(zone);

    } else if (ngx_memcmp(ds->key, zone->dust_secret,
                          sizeof(zone->dust_secret))
               != 0)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": simhash_seed changed, the DUST "
                      "learner starts empty", &zone->name);

        /* the old cycle's workers still use it */

        ngx_http_simhash_zone_lock(zone, log);
        rc = ngx_http_simhash_dust_format(zone, log);
        ngx_http_simhash_zone_unlock(zone);

    } else if (ds->opts.min_precision != dc->opts.min_precision
               || ds->opts.min_evidence != dc->opts.min_evidence)
    {
        rc = ngx_http_simhash_dust_reopts(zone, log);

    } else {
        rc = NGX_OK;
    }

    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_http_simhash_dust_pins(zone, ozone, log);
}


static ngx_int_t
ngx_http_simhash_dust_format(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    char                            err[256];
    ngx_http_simhash_dust_conf_t   *dc;
    ngx_http_simhash_dust_shctx_t  *ds;

    dc = ngx_http_simhash_dust_conf(zone);
    ds = ngx_http_simhash_dust_shctx(zone);

    if (sh_dust_init(ds->dust, ds->size, zone->dust_secret,
                     sizeof(zone->dust_secret), &dc->opts, err, sizeof(err))
        == NULL)
    {
        ngx_log_error(NGX_LOG_EMERG, log, 0, "simhash zone \"%V\": %s",
                      &zone->name, err);
        return NGX_ERROR;
    }

    ngx_memcpy(ds->key, zone->dust_secret, sizeof(zone->dust_secret));
    ds->opts = dc->opts;
    ds->logged = 0;
    ds->published = 0;

    return NGX_OK;
}


/* New thresholds for a kept learner: formatted again, its rules kept. */

static ngx_int_t
ngx_http_simhash_dust_reopts(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    char                            err[256];
    u_char                         *image;
    size_t                          len;
    ngx_int_t                       rc;
    ngx_http_simhash_dust_shctx_t  *ds;

    ds = ngx_http_simhash_dust_shctx(zone);

    ngx_http_simhash_zone_lock(zone, log);

    len = sh_dust_image_size(ds->dust);
    image = ngx_alloc(len, log);

    if (image == NULL || sh_dust_image_save(ds->dust, image, len) != len) {
        len = 0;
    }

    rc = ngx_http_simhash_dust_format(zone, log);

    if (rc == NGX_OK && len
        && sh_dust_image_load(ds->dust, image, len, err, sizeof(err)) != 0)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": the DUST rules were not kept: %s",
                      &zone->name, err);
    }

    ngx_http_simhash_zone_unlock(zone);

    if (image) {
        ngx_free(image);
    }

    return rc;
}


/* A resized zone: the learner's rules taken over from the old zone. */

static void
ngx_http_simhash_dust_migrate(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    char        err[256];
    u_char     *image;
    size_t      len;
    sh_dust_t  *to, *from;

    to = ngx_http_simhash_dust_learner(zone);
    from = ngx_http_simhash_dust_learner(ozone);

    if (to == NULL || from == NULL) {
        return;
    }

    len = sh_dust_image_size(from);

    image = ngx_alloc(len, log);
    if (image == NULL) {
        return;
    }

    if (sh_dust_image_save(from, image, len) != len
        || sh_dust_image_load(to, image, len, err, sizeof(err)) != 0)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\" resized: its DUST rules were not "
                      "taken over", &zone->name);
    }

    ngx_free(image);

    /* the image replaced the pins: this configuration's again */

    (void) ngx_http_simhash_dust_pin_all(zone, ozone, log);
}


/*
 * After the snapshot's rules replaced the learner's: the manual rules of
 * the file that this configuration no longer has go back to the evidence
 * (a simhash_dust_rule removed while nginx was stopped), and this
 * configuration's pins are applied again.
 */

typedef struct {
    ngx_http_simhash_zone_t     *zone;
    sh_dust_rule_info_t          stale[16];
    ngx_uint_t                   n;
} ngx_http_simhash_dust_stale_t;


static int
ngx_http_simhash_dust_stale_cb(const sh_dust_rule_info_t *ri, void *data)
{
    ngx_http_simhash_dust_stale_t  *st = data;

    ngx_uint_t                     i, n;
    ngx_array_t                   *a;
    ngx_http_simhash_dust_pin_t   *pins;

    if (ri->state != SH_DUST_PINNED && ri->state != SH_DUST_FORBIDDEN) {
        return 0;
    }

    a = ngx_http_simhash_dust_conf(st->zone)->pins;
    pins = a ? a->elts : NULL;
    n = a ? a->nelts : 0;

    for (i = 0; i < n; i++) {
        if (pins[i].kind == ri->kind
            && ngx_strcmp(pins[i].host, ri->host) == 0
            && (pins[i].pattern ? ngx_strcmp(pins[i].pattern, ri->pattern)
                                  == 0
                                : ngx_strcmp(ri->pattern, "*") == 0)
            && ngx_strcmp((pins[i].arg ? pins[i].arg : (u_char *) ""),
                          ri->arg) == 0)
        {
            return 0;
        }
    }

    st->stale[st->n++] = *ri;

    return st->n == sizeof(st->stale) / sizeof(st->stale[0]);
}


static void
ngx_http_simhash_dust_repin(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    sh_dust_t                     *dust;
    ngx_uint_t                     i, rounds;
    ngx_http_simhash_dust_stale_t  st;

    st.zone = zone;
    dust = ngx_http_simhash_dust_learner(zone);

    ngx_http_simhash_zone_lock(zone, log);

    for (rounds = 0; rounds < 64; rounds++) {
        st.n = 0;
        sh_dust_foreach_rule(dust, 0, 0, ngx_http_simhash_dust_stale_cb, &st);

        for (i = 0; i < st.n; i++) {
            (void) sh_dust_pin(dust, st.stale[i].host,
                               ngx_strcmp(st.stale[i].pattern, "*") == 0
                               ? NULL : st.stale[i].pattern,
                               st.stale[i].kind,
                               st.stale[i].arg[0] ? st.stale[i].arg : NULL,
                               SH_DUST_PIN_CLEAR, (uint64_t) ngx_time());
        }

        if (st.n < sizeof(st.stale) / sizeof(st.stale[0])) {
            break;
        }
    }

    (void) ngx_http_simhash_dust_pin_all(zone, NULL, log);

    ngx_http_simhash_zone_unlock(zone);
}


static ngx_uint_t
ngx_http_simhash_dust_pin_eq(ngx_http_simhash_dust_pin_t *a,
    ngx_http_simhash_dust_pin_t *b)
{
    return a->kind == b->kind
           && ngx_strcmp(a->host, b->host) == 0
           && (a->pattern == NULL) == (b->pattern == NULL)
           && (a->pattern == NULL || ngx_strcmp(a->pattern, b->pattern) == 0)
           && (a->arg == NULL) == (b->arg == NULL)
           && (a->arg == NULL || ngx_strcmp(a->arg, b->arg) == 0);
}


static ngx_int_t
ngx_http_simhash_dust_pins(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    ngx_int_t  rc;

    ngx_http_simhash_zone_lock(zone, log);
    rc = ngx_http_simhash_dust_pin_all(zone, ozone, log);
    ngx_http_simhash_zone_unlock(zone);

    return rc;
}


/* Under the lock. */

static ngx_int_t
ngx_http_simhash_dust_pin_all(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_zone_t *ozone, ngx_log_t *log)
{
    sh_dust_t                      *dust;
    ngx_int_t                       rc;
    ngx_uint_t                      i, j, n, on;
    ngx_array_t                    *a, *oa;
    ngx_http_simhash_dust_pin_t    *pins, *opins;
    ngx_http_simhash_dust_shctx_t  *ds;

    dust = ngx_http_simhash_dust_learner(zone);
    a = ngx_http_simhash_dust_conf(zone)->pins;
    oa = ozone ? ngx_http_simhash_dust_conf(ozone)->pins : NULL;
    pins = a ? a->elts : NULL;
    n = a ? a->nelts : 0;
    rc = NGX_OK;

    /* the pins that the last configuration had and this one has not */

    if (oa) {
        opins = oa->elts;

        for (i = 0; i < oa->nelts; i++) {
            on = 0;

            for (j = 0; j < n; j++) {
                on |= ngx_http_simhash_dust_pin_eq(&opins[i], &pins[j]);
            }

            if (!on) {
                (void) sh_dust_pin(dust, (char *) opins[i].host,
                                   (char *) opins[i].pattern, opins[i].kind,
                                   (char *) opins[i].arg, SH_DUST_PIN_CLEAR,
                                   (uint64_t) ngx_time());
            }
        }
    }

    for (i = 0; i < n; i++) {
        if (sh_dust_pin(dust, (char *) pins[i].host,
                        (char *) pins[i].pattern, pins[i].kind,
                        (char *) pins[i].arg, (int) pins[i].mode,
                        (uint64_t) ngx_time())
            != 0)
        {
            ngx_log_error(NGX_LOG_EMERG, log, 0,
                          "simhash_dust_rule cannot be applied to zone "
                          "\"%V\" (a bad argument, or every slot of its set "
                          "is pinned already) in %V", &zone->name,
                          &pins[i].where);
            rc = NGX_ERROR;
            break;
        }
    }

    /* the pins' own changes are no news: they are in the configuration */

    ds = ngx_http_simhash_dust_shctx(zone);
    ds->logged = sh_dust_change_seq(dust);
    ds->published = ds->logged;

    return rc;
}


/* Under the lock: one decision of the module. */

ngx_int_t
ngx_http_simhash_dust_observe(ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    uint64_t rep)
{
    int         n;
    sh_dust_t  *dust;

    dust = ngx_http_simhash_dust_learner(zone);

    if (dust == NULL || rep == 0) {
        return 0;
    }

    n = sh_dust_observe(dust, (char *) key->data, key->len, rep,
                        (uint64_t) ngx_time());

    if (n <= 0) {
        return 0;
    }

    /* a rule turned on or off: the snapshot is due */

    (void) ngx_atomic_fetch_add(&zone->sh->generation, 1);

    return n;
}


/* A rule's text for a log line: controls, DEL, >= 0x80 percent-encoded. */

static void
ngx_http_simhash_dust_text(u_char *out, char *text)
{
    u_char  c;

    static u_char  hex[] = "0123456789ABCDEF";

    while (*text) {
        c = (u_char) *text++;

        if (c < 0x20 || c >= 0x7f) {
            *out++ = '%';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 0xf];

        } else {
            *out++ = c;
        }
    }

    *out = '\0';
}


/*
 * The rule changes not logged yet, each once whichever worker caused it:
 * copied under the lock, logged after it.
 */

void
ngx_http_simhash_dust_log(ngx_http_simhash_zone_t *zone, ngx_log_t *log)
{
    size_t                          i, n;
    sh_dust_change_t                ch[NGX_HTTP_SIMHASH_DUST_LOG_MAX];
    sh_dust_rule_info_t            *ri;
    ngx_http_simhash_dust_shctx_t  *ds;
    u_char                          host[3 * SH_DUST_HOST_TEXT + 1];
    u_char                          arg[3 * SH_DUST_ARG_TEXT + 1];
    u_char                          pat[3 * SH_DUST_PAT_TEXT + 9];

    ds = ngx_http_simhash_dust_shctx(zone);

    if (ds->dust == NULL) {
        return;
    }

    ngx_http_simhash_zone_lock(zone, log);
    n = sh_dust_changes(ds->dust, &ds->logged, ch,
                        NGX_HTTP_SIMHASH_DUST_LOG_MAX);
    ngx_http_simhash_zone_unlock(zone);

    for (i = 0; i < n; i++) {
        ri = &ch[i].rule;

        /* spelled as URLs spell them: nothing that could end a line */
        ngx_http_simhash_dust_text(host, ri->host);
        ngx_http_simhash_dust_text(arg, ri->arg);
        ngx_http_simhash_dust_text(pat, ri->pattern);

        /* notice: what an operator wants to see at the level the
         * examples log at (a rule changes what the crawl is answered) */
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "simhash zone \"%V\": rule %s%s%s%s for %s %s %s "
                      "(was %s): %uD pairs, %uD against, precision >= %.3f, "
                      "test %.2f >= %.2f",
                      &zone->name, sh_dust_kind_name(ri->kind),
                      arg[0] ? "(" : "", arg, arg[0] ? ")" : "",
                      host[0] ? (char *) host : "(unknown host)", pat,
                      ri->state == SH_DUST_ACTIVE ? "on"
                      : ri->state == SH_DUST_RETIRED ? "off"
                      : sh_dust_state_name(ri->state),
                      sh_dust_state_name(ch[i].from), ri->support,
                      ri->against, ri->lower, ri->llr, ri->need);
    }
}


/*
 * Is the URL `key` a predicted duplicate?  Only if the learner says so
 * AND its original is still stored (the prediction names it): the name is
 * copied while the lock is held, as the original may be evicted at once.
 */

ngx_int_t
ngx_http_simhash_dust_predict(ngx_http_request_t *r,
    ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    ngx_http_simhash_prediction_t *p)
{
    int         rc;
    uint32_t    ref;
    uint64_t    rep;
    ngx_str_t   name;
    sh_dust_t  *dust;
    u_char      id[NGX_HTTP_SIMHASH_NAME_MAX];

    dust = ngx_http_simhash_dust_learner(zone);

    if (dust == NULL) {
        return NGX_DECLINED;
    }

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    rc = sh_dust_predict(dust, (char *) key->data, key->len,
                         (uint64_t) ngx_time(), &rep, &p->why);

    ref = rc == 1 ? ngx_http_simhash_zone_find_hash(zone, rep) : SH_NOREF;
    p->rep = rep;

    if (ref != SH_NOREF) {
        ngx_http_simhash_zone_name(zone, ref, &name, id);

        p->name.data = ngx_pnalloc(r->pool, name.len);

        if (p->name.data == NULL) {
            ref = SH_NOREF;

        } else {
            ngx_memcpy(p->name.data, name.data, name.len);
            p->name.len = name.len;
        }
    }

    ngx_http_simhash_zone_unlock(zone);

    if (ref == SH_NOREF) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "simhash dust: %s", rc == 1 ? "predicted, but the "
                       "original is gone" : "no prediction");
        return NGX_DECLINED;
    }

    p->rule_len = sh_dust_why_format(&p->why, (char *) p->rule,
                                     sizeof(p->rule));

    return NGX_OK;
}


/*
 * keys=path's second chance for a prediction whose original has another
 * path: the request's canonical form, when that URL itself was fetched
 * and resolved to the prediction's document (a page the crawler was
 * given, one with the request by the rules).  Spelled under the lock
 * into a buffer on the stack, then copied to the pool.
 */

ngx_int_t
ngx_http_simhash_dust_fetched_form(ngx_http_request_t *r,
    ngx_http_simhash_zone_t *zone, ngx_str_t *key,
    ngx_http_simhash_prediction_t *p, ngx_str_t *form)
{
    size_t      n;
    sh_dust_t  *dust;
    u_char      buf[SH_DUST_FORM_LEN];

    dust = ngx_http_simhash_dust_learner(zone);

    if (dust == NULL) {
        return NGX_DECLINED;
    }

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    n = sh_dust_fetched_form(dust, (char *) key->data, key->len, p->rep,
                             (char *) buf, sizeof(buf));

    ngx_http_simhash_zone_unlock(zone);

    if (n == 0) {
        return NGX_DECLINED;
    }

    form->data = ngx_pnalloc(r->pool, n);
    if (form->data == NULL) {
        return NGX_DECLINED;
    }

    ngx_memcpy(form->data, buf, n);
    form->len = n;

    return NGX_OK;
}


/*
 * Whether the active rules give the URLs a and b one path (a request and
 * the original of its prediction: sh_dust_same_path).  Asked only of the
 * predictions whose paths differ as they are, for keys=path.
 */

ngx_uint_t
ngx_http_simhash_dust_same_path(ngx_http_simhash_zone_t *zone,
    ngx_str_t *a, ngx_str_t *b, ngx_log_t *log)
{
    int  rc;

    ngx_http_simhash_zone_lock(zone, log);

    rc = sh_dust_same_path(ngx_http_simhash_dust_learner(zone),
                           (char *) a->data, a->len, (char *) b->data,
                           b->len);

    ngx_http_simhash_zone_unlock(zone);

    return rc == 1;
}


void
ngx_http_simhash_dust_saved(ngx_http_simhash_zone_t *zone,
    ngx_http_simhash_prediction_t *p, ngx_log_t *log)
{
    ngx_http_simhash_zone_lock(zone, log);
    sh_dust_saved(ngx_http_simhash_dust_learner(zone), &p->why);
    ngx_http_simhash_zone_unlock(zone);
}


/*
 * The rules for the stats: active, retired and manual ones (and every
 * candidate if asked), each with its host's predictions and saved fetches.
 * Under the lock only copies are made; the hosts are matched to the rules
 * after it, by a sort and a binary search (a listing of every candidate
 * is thousands of rules of hundreds of hosts).
 */

typedef struct {
    ngx_array_t                 *rules;
    ngx_array_t                 *hosts;     /* of sh_dust_host_info_t */
    ngx_uint_t                   failed;
} ngx_http_simhash_dust_walk_t;


static int
ngx_http_simhash_dust_rule_cb(const sh_dust_rule_info_t *ri, void *data)
{
    ngx_http_simhash_dust_walk_t  *w = data;

    ngx_http_simhash_dust_rule_t  *rule;

    rule = ngx_array_push(w->rules);
    if (rule == NULL) {
        w->failed = 1;
        return 1;
    }

    ngx_memzero(rule, sizeof(ngx_http_simhash_dust_rule_t));
    rule->rule = *ri;

    return 0;
}


static int
ngx_http_simhash_dust_host_cb(const sh_dust_host_info_t *h, void *data)
{
    ngx_http_simhash_dust_walk_t  *w = data;

    sh_dust_host_info_t  *copy;

    copy = ngx_array_push(w->hosts);
    if (copy == NULL) {
        w->failed = 1;
        return 1;
    }

    *copy = *h;

    return 0;
}


static int ngx_libc_cdecl
ngx_http_simhash_dust_host_cmp(const void *a, const void *b)
{
    uint64_t  x = ((const sh_dust_host_info_t *) a)->host_hash;
    uint64_t  y = ((const sh_dust_host_info_t *) b)->host_hash;

    return (x > y) - (x < y);
}


ngx_array_t *
ngx_http_simhash_dust_rules(ngx_pool_t *pool, ngx_http_simhash_zone_t *zone,
    sh_dust_stats_t *st, ngx_uint_t candidates, ngx_log_t *log)
{
    sh_dust_t                     *dust;
    ngx_uint_t                     i;
    sh_dust_host_info_t            key, *h;
    ngx_http_simhash_dust_walk_t   w;
    ngx_http_simhash_dust_rule_t  *rule;

    dust = ngx_http_simhash_dust_learner(zone);

    if (dust == NULL) {
        return NULL;
    }

    w.rules = ngx_array_create(pool, 16,
                               sizeof(ngx_http_simhash_dust_rule_t));
    w.hosts = ngx_array_create(pool, 16, sizeof(sh_dust_host_info_t));

    if (w.rules == NULL || w.hosts == NULL) {
        return NULL;
    }

    w.failed = 0;

    ngx_http_simhash_zone_lock(zone, log);

    sh_dust_stats(dust, st);
    sh_dust_foreach_rule(dust, 0, candidates != 0,
                         ngx_http_simhash_dust_rule_cb, &w);

    if (w.rules->nelts && !w.failed) {
        sh_dust_foreach_host(dust, ngx_http_simhash_dust_host_cb, &w);
    }

    ngx_http_simhash_zone_unlock(zone);

    if (w.failed) {
        return NULL;
    }

    ngx_qsort(w.hosts->elts, w.hosts->nelts, sizeof(sh_dust_host_info_t),
              ngx_http_simhash_dust_host_cmp);

    rule = w.rules->elts;

    for (i = 0; i < w.rules->nelts; i++) {
        key.host_hash = rule[i].rule.host_hash;

        h = bsearch(&key, w.hosts->elts, w.hosts->nelts,
                    sizeof(sh_dust_host_info_t),
                    ngx_http_simhash_dust_host_cmp);

        if (h) {
            rule[i].saved = h->saved;
            rule[i].predictions = h->predictions;
        }
    }

    return w.rules;
}


/*
 * The snapshot's tail section: the learner's image (its hosts and rules),
 * after the store's.  A zone without a learner leaves a file's rules out;
 * loaded, they replace the learner's, and this configuration's pins are
 * applied again.
 */

static ngx_uint_t
ngx_http_simhash_dust_want_tail(ngx_http_simhash_zone_t *zone,
    ngx_log_t *log)
{
    if (ngx_http_simhash_dust_learner(zone) == NULL) {
        ngx_log_error(NGX_LOG_INFO, log, 0,
                      "simhash zone \"%V\": the snapshot's DUST rules are "
                      "left out: the zone has no dust=", &zone->name);
        return 0;
    }

    return 1;
}


/* In the saving thread: one hold of the lock, about 1.5 MB copied for the
 * default tables when full; no nginx call that logs or allocates. */

static ngx_int_t
ngx_http_simhash_dust_save_tail(ngx_http_simhash_zone_t *zone, void **buf,
    size_t *len, char *err, size_t errlen)
{
    void       *image;
    size_t      n;
    sh_dust_t  *dust;

    dust = ngx_http_simhash_dust_learner(zone);

    if (dust == NULL) {
        return NGX_DECLINED;
    }

    if (ngx_http_simhash_zone_lock_quiet(zone) != NGX_OK) {
        ngx_cpystrn((u_char *) err, (u_char *) "a dead worker's repair "
                    "of the zone is pending", errlen);
        return NGX_ERROR;
    }

    n = sh_dust_image_size(dust);
    image = malloc(n);

    if (image != NULL && sh_dust_image_save(dust, image, n) != n) {
        free(image);
        image = NULL;
    }

    ngx_http_simhash_zone_unlock(zone);

    if (image == NULL) {
        ngx_cpystrn((u_char *) err, (u_char *) "out of memory for the "
                    "DUST rules", errlen);
        return NGX_ERROR;
    }

    *buf = image;
    *len = n;

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_dust_load_tail(ngx_http_simhash_zone_t *zone, u_char *buf,
    size_t len, ngx_log_t *log)
{
    int   rc;
    char  why[256];

    ngx_http_simhash_zone_lock(zone, log);
    rc = sh_dust_image_load(ngx_http_simhash_dust_learner(zone), buf, len,
                            why, sizeof(why));
    ngx_http_simhash_zone_unlock(zone);

    if (rc != 0) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "simhash zone \"%V\": the snapshot's DUST rules "
                      "are left out: %s", &zone->name, why);
        return NGX_OK;
    }

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "simhash zone \"%V\": DUST rules restored", &zone->name);

    /* the file's rules replaced the learner's: the pins again */
    ngx_http_simhash_dust_repin(zone, log);

    return NGX_OK;
}


/*
 * A rule's own fields as JSON members (no braces): its host, pattern and
 * argument as URLs spelled them, escaped; its state and evidence: the
 * pairs, the Wilson bound of their precision, and the sequential test's
 * sum beside what it must reach in its scope (0: not known, a rule read
 * from an image), which is what turns it on, and for a rule on the share
 * of simhash_dust_verify its predictions are fetched at (1 otherwise).
 * The statistics add the host's counts, "why?" nothing.
 */

u_char *
ngx_http_simhash_rule_json(u_char *p, sh_dust_rule_info_t *ri)
{
    p = ngx_sprintf(p, "\"host\":\"");
    p = ngx_http_simhash_text_escape(p, (u_char *) ri->host,
                                     ngx_strlen(ri->host));
    p = ngx_sprintf(p, "\",\"pattern\":\"");
    p = ngx_http_simhash_text_escape(p, (u_char *) ri->pattern,
                                     ngx_strlen(ri->pattern));
    p = ngx_sprintf(p, "\",\"kind\":\"%s\",\"arg\":\"",
                    sh_dust_kind_name(ri->kind));
    p = ngx_http_simhash_text_escape(p, (u_char *) ri->arg,
                                     ngx_strlen(ri->arg));

    return ngx_sprintf(p, "\",\"state\":\"%s\",\"support\":%uD,"
                       "\"against\":%uD,\"precision_lower\":%.4f,"
                       "\"test\":%.2f,\"need\":%.2f,\"sample\":%.2f",
                       sh_dust_state_name(ri->state), ri->support,
                       ri->against, ri->lower, ri->llr, ri->need,
                       ri->sample);
}
