
/*
 * The original's key text, for Duplicate-Of: a lookup that found
 * candidates reads each one's key text bucket beside its record bucket (in
 * the same round trip: the two GETs go out together), keeps a copy of the
 * text whose key hash the candidate's entry names, and gives the lookup
 * the text of the record it chose.  A text is named only if its key hash
 * is the chosen record's whole key hash and its chunk's MAC verifies: a
 * client that can write to Redis without the tier's secret cannot make
 * the module name a URL of its own.  No text (a document loaded without
 * its key, or its bucket gone): the caller names the original by its id.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_cluster.h"
#include "ngx_http_simhash_cluster_client.h"
#include "ngx_http_simhash_redis.h"


void
ngx_http_simhash_cluster_text_got(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_uint_t idx, uint32_t bucket, redisReply *reply)
{
    uint64_t            want, mask;
    sh_cluster_text_t   t, *ct;
    sh_cluster_read_t   read;

    ct = &lk->ctext[idx];

    if (ct->text != NULL) {
        return;
    }

    /* the record may be in already (its whole key hash), or not (the
     * entry's top half: the record decides, in text_name) */
    if (lk->chave[idx]) {
        want = lk->crec[idx].kh;
        mask = ~(uint64_t) 0;

    } else {
        want = lk->cand[idx].id;
        mask = 0xffffffff00000000ull;
    }

    if (!sh_cluster_find_text(&lk->cl->layout, bucket, (u_char *) reply->str,
                              reply->len, want, mask, &t, &read))
    {
        lk->forged += read.forged;
        return;
    }

    lk->forged += read.forged;

    ct->text = ngx_alloc(t.len, lk->cl->log);
    if (ct->text == NULL) {
        return;                         /* named by its id */
    }

    ngx_memcpy((u_char *) ct->text, t.text, t.len);
    ct->len = t.len;
    ct->kh = t.kh;
}


void
ngx_http_simhash_cluster_text_name(ngx_http_simhash_cluster_lookup_t *lk,
    ngx_uint_t idx)
{
    sh_cluster_text_t  *ct;

    ct = &lk->ctext[idx];

    /* another document of the same top half's text: not this one's */
    if (ct->text == NULL || ct->kh != lk->crec[idx].kh) {
        ngx_str_null(&lk->key);
        return;
    }

    lk->key.data = (u_char *) ct->text;
    lk->key.len = ct->len;
}


void
ngx_http_simhash_cluster_text_free(ngx_http_simhash_cluster_lookup_t *lk)
{
    ngx_uint_t  i;

    for (i = 0; i < sizeof(lk->ctext) / sizeof(lk->ctext[0]); i++) {
        ngx_free((void *) lk->ctext[i].text);
        lk->ctext[i].text = NULL;
    }
}
