/*
 * ngx_http_simhash_request.h -- what the stages of a response's path share:
 * the request's context (ngx_http_simhash_ctx_t, made by the header filter
 * or, for a prediction, by the precontent handler), the decision's verdict
 * in it, and each stage's entry points.  The stages, in the order a
 * response meets them, are listed at the top of ngx_simhash_module.c.
 */


#ifndef _NGX_HTTP_SIMHASH_REQUEST_H_INCLUDED_
#define _NGX_HTTP_SIMHASH_REQUEST_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <zlib.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"
#include "sh_doc.h"

#define NGX_HTTP_SIMHASH_TAG        0
#define NGX_HTTP_SIMHASH_DROP       1

/* simhash_reveal */
#define NGX_HTTP_SIMHASH_REVEAL_OFF     0
#define NGX_HTTP_SIMHASH_REVEAL_STATUS  1
#define NGX_HTTP_SIMHASH_REVEAL_KEY     2


typedef enum {
    NGX_HTTP_SIMHASH_READ = 0,  /* holding the body, fingerprinting */
    NGX_HTTP_SIMHASH_WAIT,      /* body held whole, the decision pending */
    NGX_HTTP_SIMHASH_PASS,      /* header sent, body passes untouched */
    NGX_HTTP_SIMHASH_DONE,      /* everything sent */
    NGX_HTTP_SIMHASH_NONE       /* not a response of ours: nothing decided */
} ngx_http_simhash_phase_e;


/*
 * $simhash_action: what the module did with a response, for the access log
 * (its status says what the page is; this says what the crawler got).
 */
typedef enum {
    NGX_HTTP_SIMHASH_ACT_NONE = 0,      /* not decided: the variable is "" */
    NGX_HTTP_SIMHASH_ACT_PASSED,        /* the upstream's response, whole */
    NGX_HTTP_SIMHASH_ACT_DROPPED,       /* a duplicate, answered empty */
    NGX_HTTP_SIMHASH_ACT_PREDICTED,     /* answered without a fetch (DUST) */
    NGX_HTTP_SIMHASH_ACT_VERIFIED       /* predicted, fetched to check
                                           (dropped or passed after) */
} ngx_http_simhash_action_e;


/*
 * The decision's value: ngx_http_simhash_decide.c makes it, the response
 * (ngx_http_simhash_response.c) acts on it, the variables read it.  What
 * the page is (status, or why it was skipped; its fingerprint, its
 * original and the distance to it) and what the crawler gets (drop: the
 * drop status with an empty body, else the held body, tagged).  The
 * headers to set follow from these and simhash_reveal.  What to index is
 * not handed on: the decision writes the zone in the hold of the lock that
 * read it, so that two workers never both call one page new.
 *
 * pending: the decision awaits an answer from another machine; the body
 * filter holds the response (phase WAIT) until the decision clears it.
 * See ngx_http_simhash_decide() for the contract.
 */
typedef struct {
    ngx_http_simhash_status_e    status;
    ngx_http_simhash_skip_e      reason;    /* skipped: why */
    unsigned                     has_hash:1;
    unsigned                     has_distance:1;    /* and the score */
    uint64_t                     hash;
    ngx_uint_t                   distance;
    uint32_t                     score;     /* sh_match.h units */
    ngx_str_t                    duplicate_of;  /* escaped */

    /* dropped or passed, decided once (drop_known), on the original,
     * before simhash_reveal hides anything */
    unsigned                     drop:1;
    unsigned                     drop_known:1;
    unsigned                     pending:1;
} ngx_http_simhash_verdict_t;


typedef struct {
    ngx_http_simhash_phase_e     phase;
    sh_doc_t                    *doc;
    sh_config_t                 *cfg;

    /* the held body: our copies, in order */
    ngx_chain_t                 *held;
    ngx_chain_t                **last;
    ngx_buf_t                   *buf;       /* the one being filled */
    size_t                       held_bytes;
    size_t                       charged;   /* to the worker's held budget:
                                               the buffers allocated */
    size_t                       fed;       /* decoded bytes fed */

    u_char                      *charset;
    ngx_str_t                    key;       /* simhash_key, at the end */
    uint64_t                     digest;    /* of the body as received */

    /* Content-Encoding: gzip / deflate */
    z_stream                     zstream;
    u_char                      *zbuf;
    unsigned                     zlib:1;        /* inflating */
    unsigned                     zinit:1;       /* zstream needs inflateEnd */
    unsigned                     zraw_tried:1;  /* deflate: raw retried */
    unsigned                     zdeflate:1;    /* encoding was deflate */
    unsigned                     zend:1;        /* stream end seen */

    /* the decision: what the page is and what is sent */
    ngx_http_simhash_verdict_t   verdict;

    /* simhash_reveal: what the headers and variables leave out; the
     * fields above stay as decided, for the drop decision and the log */
    unsigned                     hide_status:1;     /* simhash_reveal off */
    unsigned                     hide_original:1;   /* key, distance, score */
    unsigned                     revealed:1;        /* reveal applied */

    /* simhash_dust: the document this response turned out to be (the
     * key hash of the original, or of its own key), for the learner; the
     * rules of a prediction made before the fetch ("" = none); early: the
     * ctx was made then, the header filter has not seen it yet */
    uint64_t                     rep;
    ngx_str_t                    predicted;
    unsigned                     early:1;

    /* $simhash_action: what was done with the response */
    unsigned                     action:3;      /* ngx_http_simhash_action_e */
    unsigned                     verifying:1;   /* a prediction, fetched as
                                                   a verification sample */
    /* whether the console counted it already, in the decision's hold */
    unsigned                     accounted:1;
} ngx_http_simhash_ctx_t;


/* the filters after ours, as postconfiguration found them: the body
 * filter's alone to call (a response's path goes one way) */
extern ngx_http_output_header_filter_pt  ngx_http_simhash_next_header_filter;
extern ngx_http_output_body_filter_pt    ngx_http_simhash_next_body_filter;

/* the header a prediction rides on, said by the filter and the response */
extern ngx_str_t  ngx_http_simhash_h_predicted;


/* ngx_http_simhash_predict.c: the precontent phase, simhash_dust on */
ngx_int_t ngx_http_simhash_dust_handler(ngx_http_request_t *r);


/* ngx_http_simhash_filter.c: the header and body filters, holding and
 * feeding the body */
ngx_int_t ngx_http_simhash_header_filter(ngx_http_request_t *r);
ngx_int_t ngx_http_simhash_body_filter(ngx_http_request_t *r, ngx_chain_t *in);


/* ngx_http_simhash_decide.c: the verdict (ctx->verdict).  identical and
 * decide: the zone's answer for a body or a fingerprint (NGX_AGAIN:
 * pending, see ngx_http_simhash_decide()); skip: the page is not
 * fingerprinted; conclude: what the crawler gets (drop or pass), counted
 * for the console once */
ngx_int_t ngx_http_simhash_identical(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);
ngx_int_t ngx_http_simhash_decide(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf,
    sh_result_t *res);
void ngx_http_simhash_skip(ngx_http_request_t *r, ngx_http_simhash_ctx_t *ctx,
    ngx_http_simhash_skip_e reason);
void ngx_http_simhash_conclude(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_http_simhash_loc_conf_t *slcf);


/* ngx_http_simhash_response.c: the verdict acted on: the X-Simhash-*
 * headers and what is sent (the filter sends it) */
ngx_int_t ngx_http_simhash_respond(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx, ngx_chain_t **out);
ngx_int_t ngx_http_simhash_reveal(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
ngx_int_t ngx_http_simhash_set_headers(ngx_http_request_t *r,
    ngx_http_simhash_ctx_t *ctx);
ngx_int_t ngx_http_simhash_add_header(ngx_http_request_t *r, ngx_str_t *key,
    u_char *value, size_t len);


/* ngx_http_simhash_variables.c: $simhash and the others */
ngx_int_t ngx_http_simhash_add_variables(ngx_conf_t *cf);


/* ngx_http_simhash_directives.c: a location's configuration */
void *ngx_http_simhash_create_main_conf(ngx_conf_t *cf);
char *ngx_http_simhash_init_main_conf(ngx_conf_t *cf, void *conf);
void *ngx_http_simhash_create_loc_conf(ngx_conf_t *cf);
char *ngx_http_simhash_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
char *ngx_http_simhash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_action(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_opt_num(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_content(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_weight(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_stem(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_file_opt(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_ignore(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_seed(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_probes(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_simhash_volatility(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


#endif /* _NGX_HTTP_SIMHASH_REQUEST_H_INCLUDED_ */
