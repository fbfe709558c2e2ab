
/*
 * ngx_http_simhash_replicate.h -- the outbox of a replicated zone, for
 * the files that put records in it besides a request's store
 * (ngx_http_simhash_replicate_publish() in ngx_http_simhash.h): the
 * replication of DUST rules.
 */


#ifndef _NGX_HTTP_SIMHASH_REPLICATE_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_REPLICATE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_simhash.h"


/*
 * Under the zone's lock: a record (r, then r->len bytes from data) at the
 * outbox's tail; NGX_DECLINED when it does not fit (the caller counts the
 * drop).
 */
ngx_int_t ngx_http_simhash_outbox_put(ngx_http_simhash_outbox_t *ob,
    ngx_http_simhash_outrec_t *r, u_char *data);


#endif /* _NGX_HTTP_SIMHASH_REPLICATE_H_INCLUDED_ */
