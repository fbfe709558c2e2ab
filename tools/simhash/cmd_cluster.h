/*
 * cmd_cluster.h -- what `simhash cluster`'s files share: the documents a
 * load reads from a source of its own (cmd_cluster_snapshot.c: a zone's
 * snapshot), handed to cmd_cluster.c's load one by one.
 */
#ifndef SH_CMD_CLUSTER_H
#define SH_CMD_CLUSTER_H

#include "sh_cluster.h"
#include "sh_config.h"

/* One document to load: 0, or -1 to stop (out of memory, said). */
typedef int (*cluster_doc_pt)(void *arg, const sh_cluster_rec_t *r);

/*
 * Every document of a zone's snapshot (simhash_zone file=), oldest first,
 * to add(arg, record).  cfg: the tier's settings (--seed: the snapshot
 * must have been saved under it; the extraction version must be this
 * tool's).  0, or -1 after saying why.
 */
int cluster_snapshot_docs(const char *path, const sh_config_t *cfg,
                          cluster_doc_pt add, void *arg);

#endif
