
/*
 * "Why?" for one URL: simhash_stats ?url=URL[&zone=NAME] or
 * ?explain=KEY[&zone=NAME], behind the statistics' own access rules, each
 * percent-encoded in the query.  URL is an absolute http or https URL: its
 * key is made by the simhash_key of the statistics' location (the default,
 * $simhash_request_scheme://$simhash_host$request_uri, unless that
 * location sets another: it must then be the crawl location's), evaluated
 * for a request of that URL as a forward proxy receives it
 * (ngx_http_simhash_url_request.c).  KEY is a key as it is
 * stored.  The answer, as JSON, says what the module would do now and why:
 *
 *   - the stored document of the key, if any: a fetch of it is compared
 *     with that version first (unchanged, changed);
 *   - the last decision taken on the key (the console's table of the last
 *     decisions, ngx_http_simhash_sites.c), first and in a sentence
 *     ("last"): the question is most often why a page was not fetched.
 *     Its status as the response's X-Simhash-Status said it (a prediction
 *     answered without a fetch said "duplicate"), what was done (passed,
 *     dropped, predicted), the original it was a duplicate of, the
 *     distance and the score (in nats, as X-Simhash-Score prints it);
 *   - the DUST prediction a location with simhash_dust on would make now,
 *     asked without a trace (sh_dust_predict_dry): the rules and their
 *     evidence (support, against, the precision's lower bound), and the
 *     original it names;
 *   - "would": predicted (not fetched where simhash_dust is on), stored
 *     (re-fetched, compared with its version), or fetch (new unless its
 *     body is a near-duplicate of a stored page: only the body can say);
 *     "why" gives the reason the code uses, among them that a URL already
 *     fetched is never predicted (sh_dust_seen: the store answers it).
 *
 * Everything is read under the zone's lock at one moment; nothing changes.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"


#define NGX_HTTP_SIMHASH_EXPLAIN_RULES  16


typedef struct {
    sh_dust_why_t               *why;
    ngx_str_t                    scope;     /* the URL's, sites.c's way */
    sh_dust_rule_info_t          rule[NGX_HTTP_SIMHASH_EXPLAIN_RULES];
    uint64_t                     counts[NGX_HTTP_SIMHASH_EXPLAIN_RULES][3];
    ngx_uint_t                   n;
} ngx_http_simhash_explain_rules_t;


typedef struct {
    ngx_str_t                    url;       /* ?url=, or "" */
    ngx_str_t                    key;
    ngx_http_simhash_zone_t     *zone;
    time_t                       now;

    ngx_uint_t                   stored;
    uint64_t                     fingerprint;
    uint32_t                     version;   /* second of its version */
    ngx_str_t                    name;      /* how it is named */

    ngx_uint_t                   decided;
    ngx_http_simhash_decision_t  decision;
    ngx_str_t                    original;  /* "" if gone */

    ngx_int_t                    predicted;     /* sh_dust_predict's */
    ngx_uint_t                   seen;          /* sh_dust_seen's */
    u_char                       rules[128];
    size_t                       rules_len;
    ngx_str_t                    predicted_of;  /* "" if gone */
    ngx_str_t                    fetched_form;  /* "" if none */
    double                       sample;        /* why.sample */
    ngx_http_simhash_explain_rules_t  evidence;
} ngx_http_simhash_explain_t;


static ngx_int_t ngx_http_simhash_explain_read(ngx_http_request_t *r,
    ngx_http_simhash_explain_t *x);
static ngx_int_t ngx_http_simhash_explain_name(ngx_pool_t *pool,
    ngx_http_simhash_zone_t *zone, uint64_t keyhash, ngx_str_t *out);
static int ngx_http_simhash_explain_rule(const sh_dust_rule_info_t *ri,
    void *data);
static u_char *ngx_http_simhash_explain_json(u_char *p,
    ngx_http_simhash_explain_t *x);


static char  *ngx_http_simhash_did_names[] = {
    "passed", "dropped", "predicted"
};

/* a decision's status as its response's X-Simhash-Status said it: a
 * prediction answered without a fetch is a duplicate there (its action is
 * "predicted"); "dropped" is an action, never a decision's status */

static char  *ngx_http_simhash_event_name[] = {
    "new", "duplicate", "unchanged", "changed", "skipped", "duplicate",
    "duplicate"
};


/*
 * The key the location's simhash_key makes of an absolute URL: NGX_OK,
 * NGX_DECLINED for a URL that is not one (400), NGX_ERROR.
 */

static ngx_int_t
ngx_http_simhash_explain_url_key(ngx_http_request_t *r, ngx_str_t *url,
    ngx_str_t *key)
{
    ngx_int_t                     rc;
    ngx_http_request_t           *fr;
    ngx_http_simhash_loc_conf_t  *slcf;

    rc = ngx_http_simhash_url_request(r, url, &fr);
    if (rc != NGX_OK) {
        return rc;
    }

    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    if (ngx_http_complex_value(fr, slcf->key, key) != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_simhash_explain_handler(ngx_http_request_t *r, ngx_str_t *arg,
    ngx_uint_t url)
{
    u_char                        *dst, *src;
    size_t                         size;
    ngx_int_t                      rc;
    ngx_buf_t                     *b;
    ngx_str_t                      name;
    ngx_uint_t                     i;
    ngx_http_simhash_zone_t      **zones, *zone;
    ngx_http_simhash_loc_conf_t   *slcf;
    ngx_http_simhash_main_conf_t  *smcf;
    ngx_http_simhash_explain_t    *x;

    smcf = ngx_http_get_module_main_conf(r, ngx_http_simhash_module);
    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    x = ngx_pcalloc(r->pool, sizeof(ngx_http_simhash_explain_t));
    if (x == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the key or the URL, percent-decoded (the console encodes it so) */

    x->key.data = ngx_pnalloc(r->pool, arg->len + 1);
    if (x->key.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    dst = x->key.data;
    src = arg->data;
    ngx_unescape_uri(&dst, &src, arg->len, 0);
    x->key.len = dst - x->key.data;

    if (url) {
        x->url = x->key;

        if (x->url.len == 0 || x->url.len > SH_KEY_MAX) {
            return NGX_HTTP_BAD_REQUEST;
        }

        rc = ngx_http_simhash_explain_url_key(r, &x->url, &x->key);

        if (rc == NGX_DECLINED) {
            return NGX_HTTP_BAD_REQUEST;
        }

        if (rc != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    if (x->key.len == 0 || x->key.len > SH_KEY_MAX) {
        return NGX_HTTP_BAD_REQUEST;
    }

    /* the zone: zone=NAME, else the location's, else the first */

    zone = slcf->stats_zone;
    zones = smcf->zones.elts;

    if (ngx_http_arg(r, (u_char *) "zone", 4, &name) == NGX_OK) {
        zone = NULL;

        for (i = 0; i < smcf->zones.nelts; i++) {
            if (zones[i]->name.len == name.len
                && ngx_strncmp(zones[i]->name.data, name.data, name.len) == 0
                && (slcf->stats_zone == NULL || slcf->stats_zone == zones[i]))
            {
                zone = zones[i];
            }
        }

        if (zone == NULL) {
            return NGX_HTTP_NOT_FOUND;
        }
    }

    if (zone == NULL) {
        for (i = 0; i < smcf->zones.nelts && zone == NULL; i++) {
            if (zones[i]->sh) {
                zone = zones[i];
            }
        }
    }

    if (zone == NULL || zone->sh == NULL) {
        return NGX_HTTP_NOT_FOUND;
    }

    x->zone = zone;
    x->now = ngx_time();

    if (ngx_http_simhash_explain_read(r, x) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    size = 1536 + 3 * (x->url.len + x->key.len + x->name.len
                       + 2 * x->original.len
                       + x->predicted_of.len + x->fetched_form.len
                       + x->rules_len)
           + x->evidence.n * (3 * (SH_DUST_HOST_TEXT + SH_DUST_PAT_TEXT
                                   + SH_DUST_ARG_TEXT)
                                + 384 + 3 * NGX_INT64_LEN);

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_http_simhash_explain_json(b->last, x);

    return ngx_http_simhash_send_buf(r, b, "application/json");
}


static ngx_int_t
ngx_http_simhash_explain_read(ngx_http_request_t *r,
    ngx_http_simhash_explain_t *x)
{
    int                           rc;
    uint32_t                      ref;
    uint64_t                      keyhash, rep;
    ngx_str_t                     name;
    ngx_uint_t                    i;
    sh_dust_why_t                 why;
    sh_dust_t                    *dust;
    const sh_store_doc_t         *doc;
    ngx_http_simhash_zone_t      *zone;
    ngx_http_simhash_sites_t     *ss;
    ngx_http_simhash_decision_t  *d;
    u_char                        id[NGX_HTTP_SIMHASH_NAME_MAX];

    zone = x->zone;
    dust = ngx_http_simhash_dust_learner(zone);

    ngx_http_simhash_zone_lock(zone, r->connection->log);

    /* its stored version */

    ref = ngx_http_simhash_zone_key(zone, &x->key);
    doc = ngx_http_simhash_zone_doc(zone, ref);

    if (doc
        && ngx_http_simhash_zone_fingerprint(zone, ref, &x->fingerprint)
           == NGX_OK)
    {
        x->stored = 1;
        x->version = doc->time;
        ngx_http_simhash_zone_name(zone, ref, &name, id);

        x->name.data = ngx_pstrdup(r->pool, &name);
        if (x->name.data == NULL) {
            goto failed;
        }

        x->name.len = name.len;
    }

    /* its last decision, if the table still has it */

    keyhash = ngx_http_simhash_zone_keyhash(zone, &x->key);

    ss = ngx_http_simhash_sites(zone);

    if (ss) {
        d = ngx_http_simhash_sites_decision(ss, keyhash, 0);

        if (d != NULL) {
            x->decided = 1;
            x->decision = *d;

            if (d->original
                && ngx_http_simhash_explain_name(r->pool, zone, d->original,
                                                 &x->original)
                   != NGX_OK)
            {
                goto failed;
            }
        }
    }

    /* the prediction of the learner now, and its rules' evidence */

    if (dust) {
        rc = sh_dust_predict_dry(dust, (char *) x->key.data, x->key.len,
                                 &rep, &why);
        x->predicted = rc;

        /* no prediction: whether because the URL was fetched before (the
         * learner leaves such a URL to the store whatever its rules) */

        x->seen = rc == 0
                  && sh_dust_seen(dust, (char *) x->key.data, x->key.len) == 1;

        if (rc == 1) {
            x->rules_len = sh_dust_why_format(&why, (char *) x->rules,
                                              sizeof(x->rules));

            if (ngx_http_simhash_explain_name(r->pool, zone, rep,
                                              &x->predicted_of)
                != NGX_OK)
            {
                goto failed;
            }

            /* what keys=path names when the original has another path */

            x->sample = why.sample;
            x->fetched_form.data = ngx_pnalloc(r->pool, SH_DUST_FORM_LEN);
            if (x->fetched_form.data == NULL) {
                goto failed;
            }

            x->fetched_form.len = sh_dust_fetched_form(
                                      dust, (char *) x->key.data, x->key.len,
                                      rep, (char *) x->fetched_form.data,
                                      SH_DUST_FORM_LEN);

            x->evidence.why = &why;
            ngx_http_simhash_key_scope(&x->key, &x->evidence.scope);
            sh_dust_foreach_rule(dust, why.host_hash, 0,
                                 ngx_http_simhash_explain_rule, &x->evidence);
            x->evidence.why = NULL;

            /* what each rule's predictions came to so far */

            for (i = 0; ss != NULL && i < x->evidence.n; i++) {
                ngx_http_simhash_sites_rule_counts(
                    ss->topk, ss->rule_count,
                    NGX_HTTP_SIMHASH_RULE_SETS * NGX_HTTP_SIMHASH_RULE_WAYS,
                    &x->evidence.rule[i], x->evidence.counts[i]);
            }
        }
    }

    ngx_http_simhash_zone_unlock(zone);

    return NGX_OK;

failed:

    ngx_http_simhash_zone_unlock(zone);

    return NGX_ERROR;
}


/* Under the lock: the name of a stored document by its key's hash. */

static ngx_int_t
ngx_http_simhash_explain_name(ngx_pool_t *pool,
    ngx_http_simhash_zone_t *zone, uint64_t keyhash, ngx_str_t *out)
{
    uint32_t   ref;
    ngx_str_t  name;
    u_char     id[NGX_HTTP_SIMHASH_NAME_MAX];

    ngx_str_null(out);

    ref = ngx_http_simhash_zone_find_hash(zone, keyhash);

    if (ref == SH_NOREF) {
        return NGX_OK;
    }

    ngx_http_simhash_zone_name(zone, ref, &name, id);

    out->data = ngx_pstrdup(pool, &name);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    out->len = name.len;

    return NGX_OK;
}


/* The host's rules of the kinds (and arguments) that made the prediction,
 * of the URL's scope or host-wide */

static int
ngx_http_simhash_explain_rule(const sh_dust_rule_info_t *ri, void *data)
{
    ngx_http_simhash_explain_rules_t  *er = data;

    size_t    len;
    unsigned  i;

    if (ri->state != SH_DUST_ACTIVE && ri->state != SH_DUST_PINNED) {
        return 0;
    }

    /* the URL's scope's rules and the host-wide ones: "/doc/" is "doc",
     * "/" the root-level files' "" (a pattern is cut as the learner cuts
     * it, at SH_DUST_PAT_TEXT) */

    if (ri->pattern[0] == '/') {
        len = ngx_strlen(ri->pattern);
        len = len > 2 ? len - 2 : 0;

        if (len != ngx_min(er->scope.len, SH_DUST_PAT_TEXT)
            || ngx_strncmp(ri->pattern + 1, er->scope.data, len) != 0)
        {
            return 0;
        }
    }

    for (i = 0; i < er->why->nrules; i++) {
        if (er->why->rule[i].kind == ri->kind
            && ngx_strcmp(er->why->rule[i].arg, ri->arg) == 0)
        {
            er->rule[er->n++] = *ri;
            break;
        }
    }

    return er->n == NGX_HTTP_SIMHASH_EXPLAIN_RULES;
}


static u_char *
ngx_http_simhash_explain_str(u_char *p, char *name, ngx_str_t *s)
{
    if (s->len == 0) {
        return ngx_sprintf(p, ",\"%s\":null", name);
    }

    p = ngx_sprintf(p, ",\"%s\":\"", name);
    p = ngx_http_simhash_text_escape(p, s->data, s->len);

    *p++ = '"';

    return p;
}


/*
 * The last decision in a sentence, the answer's first field: "dropped 9 s
 * ago as a duplicate of URL (distance 2, score 3.1875)".  The original's
 * name is escaped as the JSON's other texts are.
 */

static u_char *
ngx_http_simhash_explain_last(u_char *p, ngx_http_simhash_explain_t *x)
{
    char                         *status;
    ngx_http_simhash_decision_t  *d;

    if (!x->decided) {
        return ngx_sprintf(p, "\"last\":\"no decision on it remembered "
                           "(never requested, or its slot in the table of "
                           "the last %d decisions was taken by another "
                           "key)\"", NGX_HTTP_SIMHASH_DECISIONS);
    }

    d = &x->decision;
    status = d->status < NGX_HTTP_SIMHASH_NEV
             ? ngx_http_simhash_event_name[d->status] : "?";

    switch (d->action) {

    case NGX_HTTP_SIMHASH_DID_DROPPED:
        p = ngx_sprintf(p, "\"last\":\"dropped %T s ago as a %s",
                        x->now - (time_t) d->time, status);
        break;

    case NGX_HTTP_SIMHASH_DID_PREDICTED:
        p = ngx_sprintf(p, "\"last\":\"answered %T s ago without a fetch: "
                        "the URL rules predicted a %s",
                        x->now - (time_t) d->time, status);
        break;

    default:
        p = ngx_sprintf(p, "\"last\":\"passed %T s ago as %s%s",
                        x->now - (time_t) d->time,
                        d->status == NGX_HTTP_SIMHASH_DUPLICATE ? "a " : "",
                        status);
    }

    if (d->original) {
        if (x->original.len) {
            p = ngx_sprintf(p, " of ");
            p = ngx_http_simhash_text_escape(p, x->original.data,
                                             x->original.len);

        } else {
            p = ngx_sprintf(p, " of a document no longer stored");
        }
    }

    if (d->distance != 0xffff) {
        p = ngx_sprintf(p, " (distance %uD, score ", (uint32_t) d->distance);
        p = ngx_http_simhash_score(p, d->score);
        *p++ = ')';
    }

    *p++ = '"';

    return p;
}


static u_char *
ngx_http_simhash_explain_json(u_char *p, ngx_http_simhash_explain_t *x)
{
    char                         *would, *why;
    ngx_str_t                     s;
    ngx_uint_t                    i;
    sh_dust_rule_info_t          *ri;
    ngx_http_simhash_decision_t  *d;

    d = &x->decision;

    if (x->predicted == 1 && x->predicted_of.len) {
        would = "predicted";
        why = "the learned URL rules make it the URL of a stored document: "
              "a location with simhash_dust on answers it without a fetch "
              "(simhash_action drop) or tags it";

    } else if (x->stored) {
        would = "stored";
        why = "its document is stored: a fetch is compared with that "
              "version (unchanged, or changed)";

    } else if (x->seen) {
        would = "fetch";
        why = "a URL already seen is the store's to answer: the URL rules "
              "never predict a URL that was fetched before, and its "
              "document is not stored (it was a duplicate, or it left the "
              "store): it is fetched, and its body decides (a duplicate "
              "again, or new)";

    } else {
        would = "fetch";
        why = x->predicted == 1
              ? "a rule predicts it, but the original is no longer stored: "
                "it is fetched, and new unless its body is a near-duplicate "
                "of a stored page"
              : "no stored document and no rule predicts it: it is fetched, "
                "and new unless its body is a near-duplicate of a stored "
                "page";
    }

    /* what was done first: a reader (the console, simhash explain) shows
     * the fields in this order */

    *p++ = '{';
    p = ngx_http_simhash_explain_last(p, x);
    p = ngx_sprintf(p, ",\"zone\":\"%V\"", &x->zone->name);
    if (x->url.len) {
        p = ngx_http_simhash_explain_str(p, "url", &x->url);
    }

    p = ngx_http_simhash_explain_str(p, "key", &x->key);
    p = ngx_sprintf(p, ",\"now\":%T,\"would\":\"%s\",\"why\":\"%s\"", x->now,
                    would, why);

    if (x->stored) {
        p = ngx_sprintf(p, ",\"stored\":{\"fingerprint\":\"%016uxL\","
                        "\"version_time\":%uD", x->fingerprint, x->version);
        p = ngx_http_simhash_explain_str(p, "name", &x->name);
        *p++ = '}';

    } else {
        p = ngx_sprintf(p, ",\"stored\":null");
    }

    if (x->decided) {
        p = ngx_sprintf(p, ",\"last_decision\":{\"status\":\"%s\","
                        "\"action\":\"%s\",\"time\":%uD,\"age\":%T",
                        d->status < NGX_HTTP_SIMHASH_NEV
                            ? ngx_http_simhash_event_name[d->status] : "?",
                        d->action <= NGX_HTTP_SIMHASH_DID_PREDICTED
                            ? ngx_http_simhash_did_names[d->action] : "?",
                        d->time, x->now - (time_t) d->time);

        if (d->distance != 0xffff) {
            /* the score in nats, as X-Simhash-Score prints it */
            p = ngx_sprintf(p, ",\"distance\":%uD,\"score\":",
                            (uint32_t) d->distance);
            p = ngx_http_simhash_score(p, d->score);
        }

        if (d->original) {
            p = ngx_http_simhash_explain_str(p, "original", &x->original);
            p = ngx_sprintf(p, ",\"original_stored\":%s",
                            x->original.len ? "true" : "false");
        }

        *p++ = '}';

    } else {
        p = ngx_sprintf(p, ",\"last_decision\":null");
    }

    if (x->predicted == 1) {
        s.data = x->rules;
        s.len = x->rules_len;

        p = ngx_sprintf(p, ",\"prediction\":{\"original_stored\":%s",
                        x->predicted_of.len ? "true" : "false");
        p = ngx_http_simhash_explain_str(p, "rules", &s);
        p = ngx_http_simhash_explain_str(p, "original", &x->predicted_of);

        p = ngx_http_simhash_explain_str(p, "fetched_form",
                                         &x->fetched_form);
        p = ngx_sprintf(p, ",\"sample\":%.2f,\"evidence\":[", x->sample);

        for (i = 0; i < x->evidence.n; i++) {
            ri = &x->evidence.rule[i];

            p = ngx_sprintf(p, "%s{", i ? "," : "");
            p = ngx_http_simhash_rule_json(p, ri);
            p = ngx_sprintf(p, ",\"made\":%uL,\"verified\":%uL,"
                            "\"failed\":%uL}", x->evidence.counts[i][0],
                            x->evidence.counts[i][1],
                            x->evidence.counts[i][2]);
        }

        p = ngx_sprintf(p, "]}");

    } else {
        p = ngx_sprintf(p, ",\"prediction\":null,\"learner\":\"%s\"",
                        ngx_http_simhash_dust_learner(x->zone) == NULL ? "none"
                        : x->predicted < 0 ? "refused"
                        : x->seen ? "seen" : "no rule");
    }

    return ngx_cpymem(p, "}\n", 2);
}
