/*
 * sh_doc.c -- one document: wires the stages of sh_doc.h together.
 *
 * Each stage pushes into the next through a callback, so a body chunk flows
 * decode -> parse -> text -> terms -> feature table without being copied
 * more than the stages need.  Only sh_doc_finish weighs the features (the
 * weights need the final term frequencies) and computes the simhash.
 */
#include <stdlib.h>
#include <string.h>

#define SH_CONFIG_INTERNAL
#include "sh_config.h"
#include "sh_decode.h"
#include "sh_doc.h"
#include "sh_features.h"
#include "sh_html.h"
#include "sh_text.h"

struct sh_doc_s {
    sh_config_t   *cfg;
    sh_decode_t   *decode;
    sh_html_t     *html;
    sh_text_t     *text;
    sh_features_t *features;

    uint64_t       nbytes;
    uint32_t       ntokens;
    int            stopped;     /* the parser's limits: ignore the rest */
    int            failed;      /* out of memory somewhere */
    int            finished;
};

static void
on_term(void *arg, uint64_t term)
{
    sh_doc_t *d = arg;

    d->ntokens++;
    sh_features_term(d->features, term);
}

static int
on_text(void *arg, const char *text, size_t len)
{
    sh_doc_t *d = arg;

    return sh_text_feed(d->text, text, len);
}

static int
on_block_end(void *arg)
{
    sh_doc_t *d = arg;

    return sh_text_end_block(d->text);
}

static int
on_utf8(void *arg, const char *utf8, size_t len)
{
    sh_doc_t *d = arg;
    int       rc;

    if (d->stopped) {
        return 0;
    }
    rc = sh_html_feed(d->html, utf8, len);
    if (rc == 1) {
        d->stopped = 1;         /* too large or too complex: skipped */
        return 0;
    }
    return rc;
}

sh_doc_t *
sh_doc_new(sh_config_t *cfg, const char *charset)
{
    sh_doc_t *d = calloc(1, sizeof(*d));

    if (d == NULL) {
        return NULL;
    }
    d->cfg = cfg;
    d->decode = sh_decode_new(charset, on_utf8, d);
    d->html = sh_html_new(on_text, on_block_end, d);
    d->text = sh_text_new(cfg, on_term, d);
    /* The previous document's table, if any: its memory is warm. */
    if (cfg->spare != NULL) {
        d->features = cfg->spare;
        cfg->spare = NULL;
    } else {
        d->features = sh_features_new(cfg->opts.shingle,
                                      cfg->opts.max_features);
    }
    if (d->decode == NULL || d->html == NULL || d->text == NULL
        || d->features == NULL)
    {
        sh_doc_free(d);
        return NULL;
    }
    return d;
}

int
sh_doc_feed(sh_doc_t *d, const void *data, size_t len)
{
    d->nbytes += len;
    if (d->failed || d->finished) {
        return -1;
    }
    /*
     * Once the parser has stopped, the page is decided, unless it turns
     * out to be binary: its first SH_PRESCAN characters say, so they are
     * still decoded (and the parser ignores them), whatever the chunking.
     */
    if (sh_decode_is_binary(d->decode)
        || (d->stopped && sh_decode_is_decided(d->decode)))
    {
        return 0;
    }
    if (sh_decode_feed(d->decode, data, len) != 0
        || sh_features_failed(d->features))
    {
        d->failed = 1;
        return -1;
    }
    return 0;
}

int
sh_doc_finish(sh_doc_t *d, sh_result_t *res)
{
    sh_acc_t acc;

    memset(res, 0, sizeof(*res));
    if (d->failed || d->finished) {
        return -1;
    }
    d->finished = 1;

    if (sh_decode_finish(d->decode) != 0
        || (!d->stopped && !sh_decode_is_binary(d->decode)
            && sh_html_finish(d->html) != 0)
        || sh_features_failed(d->features))
    {
        d->failed = 1;
        return -1;
    }

    res->nbytes = d->nbytes;
    res->ntokens = d->ntokens;
    res->nfeatures = (uint32_t) sh_features_count(d->features);
    res->truncated = (unsigned) sh_features_truncated(d->features);

    if (sh_decode_is_binary(d->decode)) {
        res->status = SH_STATUS_BINARY;
        return 0;
    }
    /*
     * A page the parser could not read to its end is not fingerprinted:
     * what came before the limit may not be what makes it differ from
     * others, and a crawler would take the prefix's fingerprint for the
     * page's.  (As a body over simhash_max_body is skipped, not cut.)
     */
    switch (sh_html_verdict(d->html, &res->why)) {
    case SH_BUDGET_TOO_LARGE:
        res->status = SH_STATUS_TOO_LARGE;
        return 0;
    case SH_BUDGET_EXCEEDED:
        res->status = SH_STATUS_TOO_COMPLEX;
        return 0;
    default:
        res->why = NULL;
        break;
    }
    if (res->nfeatures < d->cfg->opts.min_features
        || res->nfeatures == 0)
    {
        res->status = SH_STATUS_TOO_SHORT;
        return 0;
    }

    sh_acc_init(&acc);
    sh_features_weigh(d->features, d->cfg->opts.weight, d->cfg->idf, &acc);
    if (acc.norm2 <= 0.0) {
        res->status = SH_STATUS_TOO_SHORT;  /* every weight was zero */
        return 0;
    }
    sh_acc_finish(&acc, res);
    res->status = SH_STATUS_OK;
    return 0;
}

void
sh_doc_free(sh_doc_t *d)
{
    if (d == NULL) {
        return;
    }
    sh_decode_free(d->decode);
    sh_html_free(d->html);
    sh_text_free(d->text);
    if (d->features != NULL && d->cfg->spare == NULL) {
        sh_features_reset(d->features);
        d->cfg->spare = d->features;
    } else {
        sh_features_free(d->features);
    }
    free(d);
}

void
sh_doc_set_token_hook(sh_doc_t *d, sh_token_fn fn, void *arg)
{
    sh_text_set_token_hook(d->text, fn, arg);
}

void
sh_doc_foreach_feature(const sh_doc_t *d, sh_feature_fn fn, void *arg)
{
    sh_features_foreach(d->features, fn, arg);
}

const char *
sh_doc_charset(const sh_doc_t *d)
{
    return sh_decode_charset(d->decode);
}
