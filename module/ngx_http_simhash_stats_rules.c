
/*
 * simhash_stats in Prometheus: the series of the DUST learner's rules
 * that ngx_http_simhash_stats.c writes with their labels, one spelling
 * for every series of a rule.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"


/*
 * The learned rules with the most predictions made (at most
 * NGX_HTTP_SIMHASH_RULES_PROM of a zone): what their predictions came to,
 * simhash_dust_rule_predictions{zone,host,pattern,kind,arg,outcome}.
 */

u_char *
ngx_http_simhash_sites_rules_prom(u_char *p, ngx_str_t *zone,
    ngx_array_t *rules, ngx_http_simhash_sites_snap_t *sites, ngx_uint_t head)
{
    uint64_t                       c[3], top[NGX_HTTP_SIMHASH_RULES_PROM][3];
    ngx_uint_t                     i, j, k, n;
    sh_dust_rule_info_t           *ri, *which[NGX_HTTP_SIMHASH_RULES_PROM];
    ngx_http_simhash_dust_rule_t  *rule;

    static char  *outcome[] = { "made", "verified", "failed" };

    if (head) {
        p = ngx_sprintf(p, "# HELP simhash_dust_rule_predictions What the "
                        "predictions of the learned rules with the most "
                        "made came to: made, verified, failed.\n"
                        "# TYPE simhash_dust_rule_predictions gauge\n");
    }

    /* the top ones by made, kept in order by insertion */

    rule = rules->elts;
    n = 0;

    for (i = 0; i < rules->nelts; i++) {
        ri = &rule[i].rule;
        ngx_http_simhash_sites_rule_counts(sites->keys, sites->rule_count,
                                           sites->nrule_count, ri, c);

        if (c[0] == 0
            || (n == NGX_HTTP_SIMHASH_RULES_PROM && c[0] <= top[n - 1][0]))
        {
            continue;
        }

        j = n < NGX_HTTP_SIMHASH_RULES_PROM ? n++ : n - 1;

        for ( /* void */ ; j > 0 && top[j - 1][0] < c[0]; j--) {
            ngx_memcpy(top[j], top[j - 1], sizeof(top[j]));
            which[j] = which[j - 1];
        }

        ngx_memcpy(top[j], c, sizeof(c));
        which[j] = ri;
    }

    for (j = 0; j < n; j++) {
        ri = which[j];

        for (k = 0; k < 3; k++) {
            p = ngx_sprintf(p, "simhash_dust_rule_predictions{");
            p = ngx_http_simhash_rule_labels(p, zone, ri);
            p = ngx_sprintf(p, ",outcome=\"%s\"} %uL\n", outcome[k],
                            top[j][k]);
        }
    }

    return p;
}


/*
 * A learned rule's Prometheus labels, zone="Z",host="H",pattern="P",
 * kind="K",arg="A" (no braces): one spelling for every series of a rule.
 */

u_char *
ngx_http_simhash_rule_labels(u_char *p, ngx_str_t *zone,
    sh_dust_rule_info_t *ri)
{
    p = ngx_sprintf(p, "zone=\"%V\",host=\"", zone);
    p = ngx_http_simhash_text_escape(p, (u_char *) ri->host,
                                     ngx_strlen(ri->host));
    p = ngx_sprintf(p, "\",pattern=\"");
    p = ngx_http_simhash_text_escape(p, (u_char *) ri->pattern,
                                     ngx_strlen(ri->pattern));
    p = ngx_sprintf(p, "\",kind=\"%s\",arg=\"",
                    sh_dust_kind_name(ri->kind));
    p = ngx_http_simhash_text_escape(p, (u_char *) ri->arg,
                                     ngx_strlen(ri->arg));

    return ngx_sprintf(p, "\"");
}
