/*
 * simhash cluster load --snapshot FILE: the documents of a zone's snapshot
 * (what `simhash_zone ... file=PATH` saves, sh_store_file.h), for an
 * operator who moves a tier from local zones to the cluster and loads what
 * his zones already hold, in one pass, instead of refetching it.
 *
 * Each stored document gives a record as a node would write it (key hash,
 * fingerprint, body digest, version second, sketches: sh_cluster_rec_t).
 * The key hashes are read as they are in the image (a store loaded
 * unkeyed, as `simhash index query` reads one): the zone made them with
 * the tier's secret, which the nodes share, so a node finds the document
 * by its key as by its fingerprint.  Refused: a damaged image (`simhash
 * index check` says which frames; the nodes would not find what is
 * lost), a snapshot of another extraction version (its fingerprints are
 * not the nodes'), or one saved under another simhash_seed than --seed
 * (its key hashes, and the MAC key, would not be the tier's).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_cluster.h"
#include "sh_config.h"
#include "sh_image.h"
#include "sh_index.h"
#include "sh_snapshot.h"
#include "sh_store.h"
#include "sh_store_file.h"

typedef struct {
    const sh_store_t  *st;
    cluster_doc_pt     add;
    void              *arg;
    int                failed;
} visit_t;

static int
visit(void *arg, uint32_t ref, uint64_t fp)
{
    visit_t              *v = arg;
    const sh_store_doc_t *doc = sh_store_doc(v->st, ref);
    sh_cluster_rec_t      r;

    if (doc == NULL) {
        return 0;
    }
    r.kh = doc->keyhash;
    r.fp = fp;
    r.digest = doc->digest;
    r.second = doc->time;
    r.sk = doc->sketches;
    if (v->add(v->arg, &r) != 0) {
        v->failed = 1;
        return 1;
    }
    return 0;
}

int
cluster_snapshot_docs(const char *path, const sh_config_t *cfg,
                      cluster_doc_pt add, void *arg)
{
    const unsigned char *data, *meta, *image;
    size_t               len, meta_len, image_len, size;
    unsigned char        secret[SH_STORE_SECRET_LEN];
    char                 err[512];
    sh_image_summary_t   sum;
    sh_image_info_t      info;
    sh_store_t          *st;
    void                *mem = NULL;
    visit_t              v;

    if (sh_snapshot_map(path, &data, &len, err, sizeof(err)) != 0) {
        cli_error("cluster load: %s: %s", path, err);
        return -1;
    }
    if (!sh_store_file_is(data, len)) {
        cli_error("cluster load: %s: not a zone's snapshot (the store's "
                  "format: simhash_zone file=)", path);
        goto failed;
    }
    if (sh_store_file_parse(data, len, &meta, &meta_len, &image,
                            &image_len, err, sizeof(err)) != 0
        || sh_image_inspect(image, image_len, &sum, err, sizeof(err)) != 0)
    {
        cli_error("cluster load: %s: %s", path, err);
        goto failed;
    }
    if (!sum.whole) {
        cli_error("cluster load: %s: damaged (%u of %u frames): `simhash "
                  "index check` says more", path, sum.damaged, sum.frames);
        goto failed;
    }
    if (sum.seed_digest != sh_config_seed_digest(cfg)) {
        cli_error("cluster load: %s: saved under another simhash_seed "
                  "than --seed gives (the zone's key hashes and the "
                  "cluster's MAC key come from it)", path);
        goto failed;
    }
    size = sh_store_region_size(sum.capacity, sum.text_size);
    if (size == 0 || posix_memalign(&mem, 64, size) != 0) {
        cli_error("cluster load: %s: out of memory", path);
        mem = NULL;
        goto failed;
    }
    /* unkeyed: the key hashes are taken from the image, not made again,
     * so the secret is not needed (the seed digest is checked) */
    memset(secret, 0, sizeof(secret));
    st = sh_store_init(mem, size, sum.text_size, secret,
                       sh_config_seed_digest(cfg), err, sizeof(err));
    if (st == NULL
        || sh_image_load_unkeyed(st, image, image_len, sh_config_version(cfg),
                                 &info, err, sizeof(err)) != 0)
    {
        cli_error("cluster load: %s: %s", path, err);
        goto failed;
    }
    sh_snapshot_unmap(data, len);

    v.st = st;
    v.add = add;
    v.arg = arg;
    v.failed = 0;
    sh_index_foreach(sh_store_index(st), visit, &v);
    free(mem);
    return v.failed ? -1 : 0;

failed:
    sh_snapshot_unmap(data, len);
    free(mem);
    return -1;
}
