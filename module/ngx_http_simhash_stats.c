
/*
 * simhash_stats: the counters of every zone (or of one), as JSON or in the
 * Prometheus text format.
 *
 * Both formats are written from one table of metrics
 * (ngx_http_simhash_metrics): a metric is a value of the zone's snapshot
 * below (or a vector of values labelled by status or skip reason, or a
 * histogram), with its JSON key, its Prometheus name, type and help.  A
 * metric of a group (the snapshot, replication) is shown only for zones
 * that have it, in JSON as an object of its own.  The response buffer is
 * sized from the same table before anything is written, the way the
 * stub_status module sizes its own: every name's length plus the longest a
 * number can print.
 *
 * A zone with a DUST learner also lists its rules (the active, retired,
 * pinned and forbidden ones; the candidates too with ?dust=candidates, for
 * an operator who wants to see how close a rule is to turning on, or that
 * a content parameter gathers only pairs against), in JSON as the array
 * "dust_rules", in Prometheus as gauges labelled by host, pattern, kind,
 * argument and state.  Their texts come from URLs: bytes that could end a
 * JSON string or a label (quotes, backslashes, controls, spaces, non-ASCII)
 * are percent-encoded.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_simhash.h"
#include "ngx_http_simhash_dust.h"
#include "ngx_http_simhash_snapshot.h"
#include "ngx_http_simhash_cluster.h"


/* the values of one zone, read at one moment */
enum {
    NGX_HTTP_SIMHASH_V_SIZE = 0,
    NGX_HTTP_SIMHASH_V_CAPACITY,
    NGX_HTTP_SIMHASH_V_ENTRIES,
    NGX_HTTP_SIMHASH_V_DISTANCE,
    NGX_HTTP_SIMHASH_V_EVICTIONS,
    NGX_HTTP_SIMHASH_V_LOOKUPS,
    NGX_HTTP_SIMHASH_V_PROBES,
    NGX_HTTP_SIMHASH_V_BYTES,
    NGX_HTTP_SIMHASH_V_IDENTICAL,
    NGX_HTTP_SIMHASH_V_LISTINGS,
    NGX_HTTP_SIMHASH_V_WHOLE_TEXT,
    NGX_HTTP_SIMHASH_V_SHORT_CONTENT,
    NGX_HTTP_SIMHASH_V_KEY_TEXT_SIZE,
    NGX_HTTP_SIMHASH_V_KEY_TEXTS,
    NGX_HTTP_SIMHASH_V_KEY_TEXT_EVICTIONS,
    NGX_HTTP_SIMHASH_V_RESPONSES,
    NGX_HTTP_SIMHASH_V_SKIPPED = NGX_HTTP_SIMHASH_V_RESPONSES
                                 + NGX_HTTP_SIMHASH_NSTATUS,
    NGX_HTTP_SIMHASH_V_SAVES = NGX_HTTP_SIMHASH_V_SKIPPED
                               + NGX_HTTP_SIMHASH_NSKIP,
    NGX_HTTP_SIMHASH_V_SAVE_ERRORS,
    NGX_HTTP_SIMHASH_V_LAST_SAVE,
    NGX_HTTP_SIMHASH_V_RESTORED,
    NGX_HTTP_SIMHASH_V_SNAP_REFUSED,
    NGX_HTTP_SIMHASH_V_SAVE_MS,
    NGX_HTTP_SIMHASH_V_SAVE_HOLD_MS,
    NGX_HTTP_SIMHASH_V_PUBLISHED,
    NGX_HTTP_SIMHASH_V_APPLIED,
    NGX_HTTP_SIMHASH_V_SKIPPED_OWN,
    NGX_HTTP_SIMHASH_V_OUTDATED,
    NGX_HTTP_SIMHASH_V_REFUSED,
    NGX_HTTP_SIMHASH_V_REFUSED_VERSION,
    NGX_HTTP_SIMHASH_V_REFUSED_MAC,
    NGX_HTTP_SIMHASH_V_REFUSED_REPLAY,
    NGX_HTTP_SIMHASH_V_REFUSED_UNSEQUENCED,
    NGX_HTTP_SIMHASH_V_DUST_PUBLISHED,
    NGX_HTTP_SIMHASH_V_DUST_APPLIED,
    NGX_HTTP_SIMHASH_V_DUST_IGNORED,
    NGX_HTTP_SIMHASH_V_OUTBOX,
    NGX_HTTP_SIMHASH_V_DROPPED,
    NGX_HTTP_SIMHASH_V_RECONNECTS,
    NGX_HTTP_SIMHASH_V_GAPS,
    NGX_HTTP_SIMHASH_V_LOST,
    NGX_HTTP_SIMHASH_V_STREAM_EXHAUSTED,
    NGX_HTTP_SIMHASH_V_EXHAUSTED,
    NGX_HTTP_SIMHASH_V_READ_PAUSED,
    NGX_HTTP_SIMHASH_V_CONNECTED,
    NGX_HTTP_SIMHASH_V_LAG,
    NGX_HTTP_SIMHASH_V_LAG_LE,      /* cumulative, by bucket; then: */
    NGX_HTTP_SIMHASH_V_LAG_SUM = NGX_HTTP_SIMHASH_V_LAG_LE
                                 + NGX_HTTP_SIMHASH_NLAG,
    NGX_HTTP_SIMHASH_V_LAG_COUNT,
    NGX_HTTP_SIMHASH_V_DUST_BYTES,
    NGX_HTTP_SIMHASH_V_DUST_OBSERVED,
    NGX_HTTP_SIMHASH_V_DUST_REFUSED,
    NGX_HTTP_SIMHASH_V_DUST_PREDICTED,
    NGX_HTTP_SIMHASH_V_DUST_SAVED,
    NGX_HTTP_SIMHASH_V_DUST_SUPPORT,
    NGX_HTTP_SIMHASH_V_DUST_AGAINST,
    NGX_HTTP_SIMHASH_V_DUST_ACTIVATIONS,
    NGX_HTTP_SIMHASH_V_DUST_RETIREMENTS,
    NGX_HTTP_SIMHASH_V_DUST_HOSTS,
    NGX_HTTP_SIMHASH_V_DUST_CANDIDATES,
    NGX_HTTP_SIMHASH_V_DUST_ACTIVE,
    NGX_HTTP_SIMHASH_V_CL_LOOKUPS,
    NGX_HTTP_SIMHASH_V_CL_FOUND,
    NGX_HTTP_SIMHASH_V_CL_NEW,
    NGX_HTTP_SIMHASH_V_CL_REFETCHES,
    NGX_HTTP_SIMHASH_V_CL_INCOMPLETE,       /* by cause, then: */
    NGX_HTTP_SIMHASH_V_CL_MOVED = NGX_HTTP_SIMHASH_V_CL_INCOMPLETE
                                  + NGX_HTTP_SIMHASH_CLUSTER_CAUSES - 1,
    NGX_HTTP_SIMHASH_V_CL_ASKED,
    NGX_HTTP_SIMHASH_V_CL_REFRESHES,
    NGX_HTTP_SIMHASH_V_CL_WRITES,
    NGX_HTTP_SIMHASH_V_CL_WRITE_ERRORS,
    NGX_HTTP_SIMHASH_V_CL_QUEUED,
    NGX_HTTP_SIMHASH_V_CL_REPLAYED,
    NGX_HTTP_SIMHASH_V_CL_DROPPED,
    NGX_HTTP_SIMHASH_V_CL_US_LE,            /* as V_LAG_LE, in us */
    NGX_HTTP_SIMHASH_V_CL_US_SUM = NGX_HTTP_SIMHASH_V_CL_US_LE
                                   + NGX_HTTP_SIMHASH_CLUSTER_NUS,
    NGX_HTTP_SIMHASH_V_CL_US_COUNT,
    NGX_HTTP_SIMHASH_NV
};


typedef struct {
    ngx_http_simhash_zone_t     *zone;
    uint64_t                     v[NGX_HTTP_SIMHASH_NV];
    ngx_array_t                 *rules;     /* the learner's, or NULL:
                                               ngx_http_simhash_dust_rule_t */
    ngx_http_simhash_sites_snap_t  *sites;  /* the console's: rates, top
                                               sites (ngx_http_simhash_
                                               sites.c) */
} ngx_http_simhash_snap_t;


/* how a metric's value is shown */
#define NGX_HTTP_SIMHASH_M_VALUE     0   /* v[value] */
#define NGX_HTTP_SIMHASH_M_MEAN      1   /* probes per lookup (JSON only) */
#define NGX_HTTP_SIMHASH_M_STATUS    2   /* v[value + status], by status */
#define NGX_HTTP_SIMHASH_M_SKIP      3   /* v[value + reason], by reason */
#define NGX_HTTP_SIMHASH_M_MS        4   /* v[value] ms; seconds in
                                            Prometheus */
#define NGX_HTTP_SIMHASH_M_HIST      5   /* v[value + bucket], cumulative,
                                            then the sum (ms), the count */
#define NGX_HTTP_SIMHASH_M_CAUSE     6   /* v[value + cause], by cause */
#define NGX_HTTP_SIMHASH_M_HIST_US   7   /* as M_HIST, in us */

/* groups of metrics: in JSON an object each, for the zones that have it */
#define NGX_HTTP_SIMHASH_G_NONE      0
#define NGX_HTTP_SIMHASH_G_SNAPSHOT  1   /* zones with a file */
#define NGX_HTTP_SIMHASH_G_REPLICATE 2   /* replicated zones */
#define NGX_HTTP_SIMHASH_G_DUST      3   /* zones with a DUST learner */
#define NGX_HTTP_SIMHASH_G_CLUSTER   4   /* zones with cluster= */

typedef struct {
    ngx_str_t                    json;      /* key; "" = not in JSON */
    ngx_str_t                    prom;      /* after "simhash_"; "" = none */
    ngx_str_t                    type;
    ngx_str_t                    help;
    ngx_uint_t                   value;
    ngx_uint_t                   kind;
    ngx_uint_t                   group;
} ngx_http_simhash_metric_t;


/* the lag buckets (ngx_http_simhash_lag_le), then the sum and the count */
static ngx_str_t  ngx_http_simhash_lag_json[] = {
    ngx_string("1"), ngx_string("2"), ngx_string("5"), ngx_string("10"),
    ngx_string("20"), ngx_string("50"), ngx_string("100"), ngx_string("200"),
    ngx_string("500"), ngx_string("1000"), ngx_string("5000"),
    ngx_string("+Inf"), ngx_string("sum"), ngx_string("count")
};

static ngx_str_t  ngx_http_simhash_lag_prom[] = {
    ngx_string("0.001"), ngx_string("0.002"), ngx_string("0.005"),
    ngx_string("0.01"), ngx_string("0.02"), ngx_string("0.05"),
    ngx_string("0.1"), ngx_string("0.2"), ngx_string("0.5"), ngx_string("1"),
    ngx_string("5"), ngx_string("+Inf"), ngx_string("sum"),
    ngx_string("count")
};


static ngx_str_t  ngx_http_simhash_groups[] = {
    ngx_null_string,
    ngx_string("snapshot"),
    ngx_string("replication"),
    ngx_string("dust"),
    ngx_string("cluster")
};


static ngx_http_simhash_metric_t  ngx_http_simhash_metrics[] = {

    { ngx_string("size"), ngx_string("size_bytes"), ngx_string("gauge"),
      ngx_string("Size of the shared memory zone."),
      NGX_HTTP_SIMHASH_V_SIZE, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("capacity"), ngx_string("capacity"), ngx_string("gauge"),
      ngx_string("Documents the zone can hold."),
      NGX_HTTP_SIMHASH_V_CAPACITY, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("entries"), ngx_string("entries"), ngx_string("gauge"),
      ngx_string("Documents stored in the zone."),
      NGX_HTTP_SIMHASH_V_ENTRIES, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("distance"), ngx_string("distance"), ngx_string("gauge"),
      ngx_string("Largest Hamming distance of a near-duplicate (the "
                 "radius of match=hamming, the cap of match=weighted)."),
      NGX_HTTP_SIMHASH_V_DISTANCE, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("evictions"), ngx_string("evictions_total"),
      ngx_string("counter"), ngx_string("Documents evicted to make room."),
      NGX_HTTP_SIMHASH_V_EVICTIONS, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("lookups"), ngx_string("lookups_total"),
      ngx_string("counter"),
      ngx_string("Near-duplicate lookups in the index."),
      NGX_HTTP_SIMHASH_V_LOOKUPS, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("probes"), ngx_string("probes_total"),
      ngx_string("counter"), ngx_string("Buckets probed by the lookups."),
      NGX_HTTP_SIMHASH_V_PROBES, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("mean_probes"), ngx_null_string, ngx_null_string,
      ngx_null_string,
      NGX_HTTP_SIMHASH_V_PROBES, NGX_HTTP_SIMHASH_M_MEAN, 0 },

    { ngx_string("fingerprinted_bytes"),
      ngx_string("fingerprinted_bytes_total"), ngx_string("counter"),
      ngx_string("Body bytes fed to the extractor."),
      NGX_HTTP_SIMHASH_V_BYTES, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("identical"), ngx_string("identical_total"),
      ngx_string("counter"),
      ngx_string("Re-fetches of identical bytes answered without parsing."),
      NGX_HTTP_SIMHASH_V_IDENTICAL, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("listings"), ngx_string("listings_total"),
      ngx_string("counter"),
      ngx_string("Matches set aside: two listings of one template."),
      NGX_HTTP_SIMHASH_V_LISTINGS, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("whole_text"), ngx_string("whole_text_total"),
      ngx_string("counter"),
      ngx_string("Pages whose own content is links (hubs)."),
      NGX_HTTP_SIMHASH_V_WHOLE_TEXT, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("short_content"), ngx_string("short_content_total"),
      ngx_string("counter"),
      ngx_string("Pages whose own content is a few dozen words."),
      NGX_HTTP_SIMHASH_V_SHORT_CONTENT, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("key_text_bytes"), ngx_string("key_text_bytes"),
      ngx_string("gauge"),
      ngx_string("Size of the ring that keeps the documents' keys."),
      NGX_HTTP_SIMHASH_V_KEY_TEXT_SIZE, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("key_texts"), ngx_string("key_texts"),
      ngx_string("gauge"),
      ngx_string("Documents whose key is kept (the others are named by "
                 "their id)."),
      NGX_HTTP_SIMHASH_V_KEY_TEXTS, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("key_text_evictions"),
      ngx_string("key_text_evictions_total"), ngx_string("counter"),
      ngx_string("Keys that left the ring while their document stayed."),
      NGX_HTTP_SIMHASH_V_KEY_TEXT_EVICTIONS, NGX_HTTP_SIMHASH_M_VALUE, 0 },

    { ngx_string("responses"), ngx_string("responses_total"),
      ngx_string("counter"), ngx_string("Fingerprinted responses by status."),
      NGX_HTTP_SIMHASH_V_RESPONSES, NGX_HTTP_SIMHASH_M_STATUS, 0 },

    { ngx_string("skipped"), ngx_string("skipped_total"),
      ngx_string("counter"), ngx_string("Skipped responses by reason."),
      NGX_HTTP_SIMHASH_V_SKIPPED, NGX_HTTP_SIMHASH_M_SKIP, 0 },

    { ngx_string("saves"), ngx_string("snapshot_saves_total"),
      ngx_string("counter"), ngx_string("Snapshots written."),
      NGX_HTTP_SIMHASH_V_SAVES, NGX_HTTP_SIMHASH_M_VALUE, 1 },

    { ngx_string("errors"), ngx_string("snapshot_errors_total"),
      ngx_string("counter"),
      ngx_string("Snapshots that could not be written."),
      NGX_HTTP_SIMHASH_V_SAVE_ERRORS, NGX_HTTP_SIMHASH_M_VALUE, 1 },

    { ngx_string("last_save"), ngx_string("snapshot_last_save_seconds"),
      ngx_string("gauge"),
      ngx_string("Time of the last save attempt, in seconds since 1970."),
      NGX_HTTP_SIMHASH_V_LAST_SAVE, NGX_HTTP_SIMHASH_M_VALUE, 1 },

    { ngx_string("restored"), ngx_string("snapshot_restored"),
      ngx_string("gauge"),
      ngx_string("Documents restored from the snapshot at start."),
      NGX_HTTP_SIMHASH_V_RESTORED, NGX_HTTP_SIMHASH_M_VALUE, 1 },

    { ngx_string("refused"), ngx_string("snapshot_refused_total"),
      ngx_string("counter"),
      ngx_string("Snapshots refused at start (another extraction version "
                 "or seed, unreadable) and kept aside."),
      NGX_HTTP_SIMHASH_V_SNAP_REFUSED, NGX_HTTP_SIMHASH_M_VALUE, 1 },

    { ngx_string("last_duration_ms"),
      ngx_string("snapshot_last_duration_seconds"), ngx_string("gauge"),
      ngx_string("How long the last successful save took."),
      NGX_HTTP_SIMHASH_V_SAVE_MS, NGX_HTTP_SIMHASH_M_MS, 1 },

    { ngx_string("last_hold_ms"),
      ngx_string("snapshot_last_hold_seconds"), ngx_string("gauge"),
      ngx_string("The longest hold of the zone's lock by the last "
                 "successful save."),
      NGX_HTTP_SIMHASH_V_SAVE_HOLD_MS, NGX_HTTP_SIMHASH_M_MS, 1 },

    { ngx_string("published"), ngx_string("replication_published_total"),
      ngx_string("counter"),
      ngx_string("Documents of this node acknowledged by Redis."),
      NGX_HTTP_SIMHASH_V_PUBLISHED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("applied"), ngx_string("replication_applied_total"),
      ngx_string("counter"),
      ngx_string("Stream entries that changed the zone."),
      NGX_HTTP_SIMHASH_V_APPLIED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("skipped_own"), ngx_string("replication_skipped_own_total"),
      ngx_string("counter"),
      ngx_string("Stream entries this node published itself, skipped."),
      NGX_HTTP_SIMHASH_V_SKIPPED_OWN, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("outdated"), ngx_string("replication_outdated_total"),
      ngx_string("counter"),
      ngx_string("Stream entries not newer than the zone's version."),
      NGX_HTTP_SIMHASH_V_OUTDATED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("refused"), ngx_string("replication_refused_total"),
      ngx_string("counter"),
      ngx_string("Stream entries refused: malformed, another seed or "
                 "extraction version, or a MAC that does not verify."),
      NGX_HTTP_SIMHASH_V_REFUSED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("refused_version"),
      ngx_string("replication_refused_version_total"), ngx_string("counter"),
      ngx_string("Of the refused: entries of another extraction version."),
      NGX_HTTP_SIMHASH_V_REFUSED_VERSION, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("refused_mac"), ngx_string("replication_refused_mac_total"),
      ngx_string("counter"),
      ngx_string("Of the refused: entries whose MAC did not verify."),
      NGX_HTTP_SIMHASH_V_REFUSED_MAC, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("refused_replay"),
      ngx_string("replication_refused_replay_total"), ngx_string("counter"),
      ngx_string("Of the refused: replays, entries whose seq is not above "
                 "the last applied from their writer."),
      NGX_HTTP_SIMHASH_V_REFUSED_REPLAY, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("refused_unsequenced"),
      ngx_string("replication_refused_unsequenced_total"),
      ngx_string("counter"),
      ngx_string("Of the refused: entries without a seq (an earlier "
                 "release's)."),
      NGX_HTTP_SIMHASH_V_REFUSED_UNSEQUENCED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("dust_published"),
      ngx_string("replication_dust_published_total"), ngx_string("counter"),
      ngx_string("DUST rule records of this node acknowledged by Redis."),
      NGX_HTTP_SIMHASH_V_DUST_PUBLISHED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("dust_applied"),
      ngx_string("replication_dust_applied_total"), ngx_string("counter"),
      ngx_string("DUST rule records merged into this zone's learner."),
      NGX_HTTP_SIMHASH_V_DUST_APPLIED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("dust_ignored"),
      ngx_string("replication_dust_ignored_total"), ngx_string("counter"),
      ngx_string("DUST rule records read past: this zone has no dust=."),
      NGX_HTTP_SIMHASH_V_DUST_IGNORED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("outbox"), ngx_string("replication_outbox"),
      ngx_string("gauge"),
      ngx_string("Documents waiting in the outbox for Redis."),
      NGX_HTTP_SIMHASH_V_OUTBOX, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("outbox_dropped"),
      ngx_string("replication_outbox_dropped_total"), ngx_string("counter"),
      ngx_string("Documents not published: the outbox was full."),
      NGX_HTTP_SIMHASH_V_DROPPED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("reconnects"), ngx_string("replication_reconnects_total"),
      ngx_string("counter"),
      ngx_string("Connections to Redis tried again."),
      NGX_HTTP_SIMHASH_V_RECONNECTS, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("gaps"), ngx_string("replication_gaps_total"),
      ngx_string("counter"),
      ngx_string("Times the stream was trimmed past the last entry applied."),
      NGX_HTTP_SIMHASH_V_GAPS, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("lost"), ngx_string("replication_lost_total"),
      ngx_string("counter"),
      ngx_string("Times Redis lost the stream: read again from its start."),
      NGX_HTTP_SIMHASH_V_LOST, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("stream_exhausted"),
      ngx_string("replication_stream_exhausted"), ngx_string("gauge"),
      ngx_string("1 while the stream takes no entry (its last id is the "
                 "largest): nothing is published until it is renamed."),
      NGX_HTTP_SIMHASH_V_STREAM_EXHAUSTED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("exhausted"), ngx_string("replication_exhausted_total"),
      ngx_string("counter"),
      ngx_string("Times the stream was found exhausted."),
      NGX_HTTP_SIMHASH_V_EXHAUSTED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("read_paused"), ngx_string("replication_read_paused_total"),
      ngx_string("counter"),
      ngx_string("Reads that stopped at the bound of one tick with more "
                 "waiting (catching up, or a flood)."),
      NGX_HTTP_SIMHASH_V_READ_PAUSED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("connected"), ngx_string("replication_connected"),
      ngx_string("gauge"),
      ngx_string("Connections to Redis up (2: publishing and reading)."),
      NGX_HTTP_SIMHASH_V_CONNECTED, NGX_HTTP_SIMHASH_M_VALUE, 2 },

    { ngx_string("last_lag_ms"), ngx_string("replication_last_lag_seconds"),
      ngx_string("gauge"),
      ngx_string("Age of the last entry of another node when applied."),
      NGX_HTTP_SIMHASH_V_LAG, NGX_HTTP_SIMHASH_M_MS, 2 },

    { ngx_string("lag_ms"), ngx_string("replication_lag_seconds"),
      ngx_string("histogram"),
      ngx_string("Age of the entries of other nodes when applied."),
      NGX_HTTP_SIMHASH_V_LAG_LE, NGX_HTTP_SIMHASH_M_HIST, 2 },

    { ngx_string("bytes"), ngx_string("dust_bytes"), ngx_string("gauge"),
      ngx_string("Size of the DUST learner's region."),
      NGX_HTTP_SIMHASH_V_DUST_BYTES, NGX_HTTP_SIMHASH_M_VALUE, 3 },

    { ngx_string("observations"), ngx_string("dust_observations_total"),
      ngx_string("counter"),
      ngx_string("Decisions the DUST learner learned from."),
      NGX_HTTP_SIMHASH_V_DUST_OBSERVED, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("refused"), ngx_string("dust_refused_total"),
      ngx_string("counter"),
      ngx_string("URLs the DUST learner refused (too long, too many "
                 "parameters or path segments): passed through."),
      NGX_HTTP_SIMHASH_V_DUST_REFUSED, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("predictions"), ngx_string("dust_predictions_total"),
      ngx_string("counter"),
      ngx_string("Requests predicted to be duplicates."),
      NGX_HTTP_SIMHASH_V_DUST_PREDICTED, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("saved"), ngx_string("dust_saved_total"),
      ngx_string("counter"),
      ngx_string("Predicted duplicates answered without a fetch."),
      NGX_HTTP_SIMHASH_V_DUST_SAVED, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("support"), ngx_string("dust_support_total"),
      ngx_string("counter"),
      ngx_string("Pairs of URLs a rule merges that were one document."),
      NGX_HTTP_SIMHASH_V_DUST_SUPPORT, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("against"), ngx_string("dust_against_total"),
      ngx_string("counter"),
      ngx_string("Pairs of URLs a rule merges that were two documents."),
      NGX_HTTP_SIMHASH_V_DUST_AGAINST, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("activations"), ngx_string("dust_activations_total"),
      ngx_string("counter"), ngx_string("Rules turned on."),
      NGX_HTTP_SIMHASH_V_DUST_ACTIVATIONS, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("retirements"), ngx_string("dust_retirements_total"),
      ngx_string("counter"), ngx_string("Rules turned off."),
      NGX_HTTP_SIMHASH_V_DUST_RETIREMENTS, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("hosts"), ngx_string("dust_hosts"), ngx_string("gauge"),
      ngx_string("Hosts the DUST learner follows."),
      NGX_HTTP_SIMHASH_V_DUST_HOSTS, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("candidates"), ngx_string("dust_candidates"),
      ngx_string("gauge"), ngx_string("Rules with evidence, in any state."),
      NGX_HTTP_SIMHASH_V_DUST_CANDIDATES, NGX_HTTP_SIMHASH_M_VALUE, 3 },
    { ngx_string("active"), ngx_string("dust_active_rules"),
      ngx_string("gauge"), ngx_string("Rules on (learned or pinned)."),
      NGX_HTTP_SIMHASH_V_DUST_ACTIVE, NGX_HTTP_SIMHASH_M_VALUE, 3 },

    { ngx_string("lookups"), ngx_string("cluster_lookups_total"),
      ngx_string("counter"),
      ngx_string("Lookups asked of the Redis Cluster (local misses)."),
      NGX_HTTP_SIMHASH_V_CL_LOOKUPS, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("found"), ngx_string("cluster_found_total"),
      ngx_string("counter"),
      ngx_string("Cluster lookups that found a document near the page."),
      NGX_HTTP_SIMHASH_V_CL_FOUND, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("new"), ngx_string("cluster_new_total"),
      ngx_string("counter"),
      ngx_string("Cluster lookups answered in full with nothing near."),
      NGX_HTTP_SIMHASH_V_CL_NEW, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("refetches"), ngx_string("cluster_refetches_total"),
      ngx_string("counter"), ngx_string("Re-fetches the cluster answered."),
      NGX_HTTP_SIMHASH_V_CL_REFETCHES, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("incomplete"), ngx_string("cluster_incomplete_total"),
      ngx_string("counter"),
      ngx_string("Cluster lookups not answered in full, by cause."),
      NGX_HTTP_SIMHASH_V_CL_INCOMPLETE, NGX_HTTP_SIMHASH_M_CAUSE, 4 },
    { ngx_string("moved"), ngx_string("cluster_moved_total"),
      ngx_string("counter"), ngx_string("MOVED redirects followed."),
      NGX_HTTP_SIMHASH_V_CL_MOVED, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("asked"), ngx_string("cluster_asked_total"),
      ngx_string("counter"), ngx_string("ASK redirects followed."),
      NGX_HTTP_SIMHASH_V_CL_ASKED, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("refreshes"), ngx_string("cluster_map_refreshes_total"),
      ngx_string("counter"), ngx_string("Slot maps read (CLUSTER SLOTS)."),
      NGX_HTTP_SIMHASH_V_CL_REFRESHES, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("writes"), ngx_string("cluster_writes_total"),
      ngx_string("counter"),
      ngx_string("New pages this node wrote to the cluster."),
      NGX_HTTP_SIMHASH_V_CL_WRITES, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("write_errors"), ngx_string("cluster_write_errors_total"),
      ngx_string("counter"),
      ngx_string("Writes to the cluster lost (chunks not appended)."),
      NGX_HTTP_SIMHASH_V_CL_WRITE_ERRORS, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("backlog_queued"),
      ngx_string("cluster_backlog_queued_total"), ngx_string("counter"),
      ngx_string("Writes kept while the cluster could not take them."),
      NGX_HTTP_SIMHASH_V_CL_QUEUED, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("backlog_replayed"),
      ngx_string("cluster_backlog_replayed_total"), ngx_string("counter"),
      ngx_string("Kept writes written once the cluster answered again."),
      NGX_HTTP_SIMHASH_V_CL_REPLAYED, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("backlog_dropped"),
      ngx_string("cluster_backlog_dropped_total"), ngx_string("counter"),
      ngx_string("Writes lost: the backlog full, or its worker gone."),
      NGX_HTTP_SIMHASH_V_CL_DROPPED, NGX_HTTP_SIMHASH_M_VALUE, 4 },
    { ngx_string("lookup_us"), ngx_string("cluster_lookup_seconds"),
      ngx_string("histogram"),
      ngx_string("Time from a cluster lookup's start to the decision."),
      NGX_HTTP_SIMHASH_V_CL_US_LE, NGX_HTTP_SIMHASH_M_HIST_US, 4 },

    { ngx_null_string, ngx_null_string, ngx_null_string, ngx_null_string,
      0, 0, 0 }
};


/* the rules' gauges in Prometheus */
static ngx_str_t  ngx_http_simhash_rule_prom[] = {
    ngx_string("dust_rule_support"),
    ngx_string("dust_rule_against"),
    ngx_string("dust_rule_precision_lower"),
    ngx_string("dust_rule_host_saved")
};

static ngx_str_t  ngx_http_simhash_rule_help[] = {
    ngx_string("Pairs a DUST rule merged that were one document."),
    ngx_string("Pairs a DUST rule merged that were two documents."),
    ngx_string("Wilson lower bound of the rule's precision."),
    ngx_string("Fetches saved by predictions on the rule's host.")
};


static ngx_int_t ngx_http_simhash_stats_handler(ngx_http_request_t *r);
static ngx_uint_t ngx_http_simhash_stats_read(ngx_http_request_t *r,
    ngx_http_simhash_snap_t *s);
static ngx_uint_t ngx_http_simhash_metric_shown(ngx_http_simhash_metric_t *m,
    ngx_http_simhash_zone_t *zone, ngx_uint_t prom);
static ngx_uint_t ngx_http_simhash_stats_prometheus(ngx_http_request_t *r);
static void ngx_http_simhash_metric_labels(ngx_http_simhash_metric_t *m,
    ngx_uint_t prom, ngx_str_t **names, ngx_uint_t *n, char **label);
static size_t ngx_http_simhash_stats_size(ngx_http_simhash_snap_t *s,
    ngx_uint_t n, ngx_uint_t prom);
static u_char *ngx_http_simhash_stats_json(u_char *p,
    ngx_http_simhash_snap_t *s, ngx_uint_t n);
static u_char *ngx_http_simhash_stats_prom(u_char *p,
    ngx_http_simhash_snap_t *s, ngx_uint_t n);
static size_t ngx_http_simhash_rules_size(ngx_array_t *rules);
static u_char *ngx_http_simhash_rules_json(u_char *p, ngx_array_t *rules,
    ngx_http_simhash_sites_snap_t *sites);
static u_char *ngx_http_simhash_rules_prom(u_char *p,
    ngx_http_simhash_snap_t *s, ngx_uint_t n);
static u_char *ngx_http_simhash_stats_sites_prom(u_char *p,
    ngx_http_simhash_snap_t *s, ngx_uint_t n);


static ngx_str_t  ngx_http_simhash_allow = ngx_string("GET, HEAD");


/* the counters' part of the zone: they live in its shared state */
ngx_http_simhash_part_t  ngx_http_simhash_stats_part = {
    ngx_string("stats"),
    0,                                      /* index */
    ngx_null_string,                        /* tail_name */
    sizeof(ngx_http_simhash_counters_t),    /* shctx_size */
    NULL, NULL, NULL, NULL,                 /* configuration */
    NULL, NULL,                             /* shm_init, shm_migrate */
    NULL, NULL, NULL,                       /* the snapshot's tail */
    NULL, NULL, NULL, NULL, NULL,           /* the module's hooks */
    NULL, NULL                              /* files beside the snapshot */
};


/* simhash_stats [ZONE] */

char *
ngx_http_simhash_stats_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_simhash_loc_conf_t  *slcf = conf;

    ngx_str_t                 *value;
    ngx_http_core_loc_conf_t  *clcf;

    if (slcf->stats) {
        return "is duplicate";
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_simhash_stats_handler;

    slcf->stats = 1;
    ngx_http_simhash_where(cf, &slcf->stats_where);

    if (cf->args->nelts > 1) {
        value = cf->args->elts;
        slcf->stats_zone_name = value[1];
    }

    return NGX_CONF_OK;
}


/* At merge time, when every zone of http{} is known: the zone named. */

ngx_int_t
ngx_http_simhash_stats_resolve(ngx_conf_t *cf,
    ngx_http_simhash_loc_conf_t *slcf)
{
    ngx_http_simhash_main_conf_t  *smcf;

    if (!slcf->stats || slcf->stats_zone_name.len == 0) {
        return NGX_OK;
    }

    smcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_simhash_module);

    slcf->stats_zone = ngx_http_simhash_zone_find(smcf,
                                                  &slcf->stats_zone_name);

    if (slcf->stats_zone == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "unknown simhash zone \"%V\" in %V",
                      &slcf->stats_zone_name, &slcf->stats_where);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_stats_handler(ngx_http_request_t *r)
{
    size_t                         size;
    ngx_int_t                      rc;
    ngx_buf_t                     *b;
    ngx_uint_t                     n, prom;
    ngx_str_t                      value;
    ngx_table_elt_t               *h;
    ngx_http_simhash_snap_t       *s;
    ngx_http_simhash_main_conf_t  *smcf;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Allow");
        h->value = ngx_http_simhash_allow;
        h->lowcase_key = NULL;
#if (nginx_version >= 1023000)
        h->next = NULL;
#endif

        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    /* the console's page and its "why?" (ngx_http_simhash_console.c,
     * ngx_http_simhash_explain.c), behind the same access rules */

    if (ngx_http_arg(r, (u_char *) "explain", 7, &value) == NGX_OK) {
        return ngx_http_simhash_explain_handler(r, &value, 0);
    }

    if (ngx_http_arg(r, (u_char *) "url", 3, &value) == NGX_OK) {
        return ngx_http_simhash_explain_handler(r, &value, 1);
    }

    if (ngx_http_arg(r, (u_char *) "format", 6, &value) == NGX_OK
        && value.len == 4 && ngx_strncmp(value.data, "html", 4) == 0)
    {
        return ngx_http_simhash_console_handler(r);
    }

    smcf = ngx_http_get_module_main_conf(r, ngx_http_simhash_module);

    s = ngx_pcalloc(r->pool,
                    (smcf->zones.nelts + 1) * sizeof(ngx_http_simhash_snap_t));
    if (s == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    n = ngx_http_simhash_stats_read(r, s);
    prom = ngx_http_simhash_stats_prometheus(r);
    size = ngx_http_simhash_stats_size(s, n, prom);

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (prom) {
        b->last = ngx_http_simhash_stats_prom(b->last, s, n);

        return ngx_http_simhash_send_buf(r, b,
                                "text/plain; version=0.0.4; charset=utf-8");
    }

    b->last = ngx_http_simhash_stats_json(b->last, s, n);

    return ngx_http_simhash_send_buf(r, b, "application/json");
}


static void
ngx_http_simhash_stats_cluster(ngx_http_simhash_zone_t *zone, uint64_t *v)
{
    uint64_t                            sum;
    ngx_uint_t                          i;
    ngx_http_simhash_cluster_counts_t  *c;

    c = ngx_http_simhash_cluster_counts(zone);
    if (c == NULL) {
        return;
    }

    v[NGX_HTTP_SIMHASH_V_CL_LOOKUPS] = c->lookups;
    v[NGX_HTTP_SIMHASH_V_CL_FOUND] = c->found;
    v[NGX_HTTP_SIMHASH_V_CL_NEW] = c->new;
    v[NGX_HTTP_SIMHASH_V_CL_REFETCHES] = c->refetches;

    for (i = 0; i < NGX_HTTP_SIMHASH_CLUSTER_CAUSES - 1; i++) {
        v[NGX_HTTP_SIMHASH_V_CL_INCOMPLETE + i] = c->incomplete[i];
    }

    v[NGX_HTTP_SIMHASH_V_CL_MOVED] = c->moved;
    v[NGX_HTTP_SIMHASH_V_CL_ASKED] = c->asked;
    v[NGX_HTTP_SIMHASH_V_CL_REFRESHES] = c->refreshes;
    v[NGX_HTTP_SIMHASH_V_CL_WRITES] = c->writes;
    v[NGX_HTTP_SIMHASH_V_CL_WRITE_ERRORS] = c->write_errors;
    v[NGX_HTTP_SIMHASH_V_CL_QUEUED] = c->backlog_queued;
    v[NGX_HTTP_SIMHASH_V_CL_REPLAYED] = c->backlog_replayed;
    v[NGX_HTTP_SIMHASH_V_CL_DROPPED] = c->backlog_dropped;

    sum = 0;
    for (i = 0; i < NGX_HTTP_SIMHASH_CLUSTER_NUS; i++) {
        sum += c->us_le[i];
        v[NGX_HTTP_SIMHASH_V_CL_US_LE + i] = sum;
    }

    v[NGX_HTTP_SIMHASH_V_CL_US_SUM] = c->us_sum;
    v[NGX_HTTP_SIMHASH_V_CL_US_COUNT] = sum;
}


static void
ngx_http_simhash_stats_replication(ngx_http_simhash_outbox_t *ob,
    uint64_t *v)
{
    uint64_t    sum;
    ngx_uint_t  i;

    v[NGX_HTTP_SIMHASH_V_PUBLISHED] = ob->published;
    v[NGX_HTTP_SIMHASH_V_APPLIED] = ob->applied;
    v[NGX_HTTP_SIMHASH_V_SKIPPED_OWN] = ob->skipped_own;
    v[NGX_HTTP_SIMHASH_V_OUTDATED] = ob->outdated;
    v[NGX_HTTP_SIMHASH_V_REFUSED] = ob->refused;
    v[NGX_HTTP_SIMHASH_V_REFUSED_VERSION] = ob->refused_version;
    v[NGX_HTTP_SIMHASH_V_REFUSED_MAC] = ob->refused_mac;
    v[NGX_HTTP_SIMHASH_V_REFUSED_REPLAY] = ob->refused_replay;
    v[NGX_HTTP_SIMHASH_V_REFUSED_UNSEQUENCED] = ob->refused_unsequenced;
    v[NGX_HTTP_SIMHASH_V_DUST_PUBLISHED] = ob->dust_published;
    v[NGX_HTTP_SIMHASH_V_DUST_APPLIED] = ob->dust_applied;
    v[NGX_HTTP_SIMHASH_V_DUST_IGNORED] = ob->dust_ignored;
    v[NGX_HTTP_SIMHASH_V_OUTBOX] = ob->records;
    v[NGX_HTTP_SIMHASH_V_DROPPED] = ob->dropped;
    v[NGX_HTTP_SIMHASH_V_RECONNECTS] = ob->reconnects;
    v[NGX_HTTP_SIMHASH_V_GAPS] = ob->gaps;
    v[NGX_HTTP_SIMHASH_V_LOST] = ob->lost;
    v[NGX_HTTP_SIMHASH_V_STREAM_EXHAUSTED] = ob->stream_exhausted;
    v[NGX_HTTP_SIMHASH_V_EXHAUSTED] = ob->exhausted;
    v[NGX_HTTP_SIMHASH_V_READ_PAUSED] = ob->read_paused;
    v[NGX_HTTP_SIMHASH_V_CONNECTED] = ob->connected;
    v[NGX_HTTP_SIMHASH_V_LAG] = ob->lag;

    /* the buckets cumulative, as Prometheus has them */

    sum = 0;

    for (i = 0; i < NGX_HTTP_SIMHASH_NLAG; i++) {
        sum += ob->lag_le[i];
        v[NGX_HTTP_SIMHASH_V_LAG_LE + i] = sum;
    }

    v[NGX_HTTP_SIMHASH_V_LAG_SUM] = ob->lag_sum;
    v[NGX_HTTP_SIMHASH_V_LAG_COUNT] = sum;
}


/* The values of every zone asked for, into s[]; returns how many zones. */

static ngx_uint_t
ngx_http_simhash_stats_read(ngx_http_request_t *r, ngx_http_simhash_snap_t *s)
{
    uint64_t                       *v;
    ngx_str_t                       value;
    ngx_uint_t                      i, j, n, candidates;
    sh_dust_stats_t                 ds;
    sh_index_stats_t                ix;
    sh_store_stats_t                ss;
    ngx_http_simhash_zone_t       **zones, *zone;
    ngx_http_simhash_shctx_t       *sh;
    ngx_http_simhash_loc_conf_t    *slcf;
    ngx_http_simhash_counters_t    *c;
    ngx_http_simhash_main_conf_t   *smcf;
    ngx_http_simhash_save_shctx_t  *sv;

    smcf = ngx_http_get_module_main_conf(r, ngx_http_simhash_module);
    slcf = ngx_http_get_module_loc_conf(r, ngx_http_simhash_module);

    candidates = ngx_http_arg(r, (u_char *) "dust", 4, &value) == NGX_OK
                 && value.len == 10
                 && ngx_strncmp(value.data, "candidates", 10) == 0;

    zones = smcf->zones.elts;
    n = 0;

    for (i = 0; i < smcf->zones.nelts; i++) {
        zone = zones[i];
        sh = zone->sh;

        if (sh == NULL || (slcf->stats_zone && slcf->stats_zone != zone)) {
            continue;
        }

        ngx_http_simhash_zone_lock(zone, r->connection->log);
        ngx_http_simhash_zone_stats(zone, &ix, &ss);
        ngx_http_simhash_zone_unlock(zone);

        s[n].zone = zone;
        s[n].sites = ngx_http_simhash_sites_read(r->pool, zone,
                                                 r->connection->log);
        v = s[n].v;

        /* as configured: zone= and dust=, not the console's region */
        v[NGX_HTTP_SIMHASH_V_SIZE] = zone->shm_zone->shm.size
                                     - ngx_http_simhash_sites_shm();
        v[NGX_HTTP_SIMHASH_V_CAPACITY] = ix.capacity;
        v[NGX_HTTP_SIMHASH_V_ENTRIES] = ix.entries;
        v[NGX_HTTP_SIMHASH_V_DISTANCE] = zone->distance;
        v[NGX_HTTP_SIMHASH_V_EVICTIONS] = ss.evictions;
        v[NGX_HTTP_SIMHASH_V_LOOKUPS] = ix.lookups;
        v[NGX_HTTP_SIMHASH_V_PROBES] = ix.probes;
        c = ngx_http_simhash_counters(zone);

        v[NGX_HTTP_SIMHASH_V_BYTES] = c->bytes;
        v[NGX_HTTP_SIMHASH_V_IDENTICAL] = c->identical;
        v[NGX_HTTP_SIMHASH_V_LISTINGS] = c->listings;
        v[NGX_HTTP_SIMHASH_V_WHOLE_TEXT] = c->whole_text;
        v[NGX_HTTP_SIMHASH_V_SHORT_CONTENT] = c->short_content;
        v[NGX_HTTP_SIMHASH_V_KEY_TEXT_SIZE] = ss.text_bytes;
        v[NGX_HTTP_SIMHASH_V_KEY_TEXTS] = ss.texts;
        v[NGX_HTTP_SIMHASH_V_KEY_TEXT_EVICTIONS] = ss.text_evictions;

        for (j = 0; j < NGX_HTTP_SIMHASH_NSTATUS; j++) {
            v[NGX_HTTP_SIMHASH_V_RESPONSES + j] = c->responses[j];
        }

        for (j = 0; j < NGX_HTTP_SIMHASH_NSKIP; j++) {
            v[NGX_HTTP_SIMHASH_V_SKIPPED + j] = c->skipped[j];
        }

        sv = ngx_http_simhash_save_shctx(zone);

        v[NGX_HTTP_SIMHASH_V_SAVES] = sv->saves;
        v[NGX_HTTP_SIMHASH_V_SAVE_ERRORS] = sv->save_errors;
        /* last_save also times the next periodic save: 0 until one ran */
        v[NGX_HTTP_SIMHASH_V_LAST_SAVE] = sv->saves ? sv->last_save : 0;
        v[NGX_HTTP_SIMHASH_V_RESTORED] = sv->restored;
        v[NGX_HTTP_SIMHASH_V_SNAP_REFUSED] = sv->refused_snapshots;
        v[NGX_HTTP_SIMHASH_V_SAVE_MS] = sv->save_ms;
        v[NGX_HTTP_SIMHASH_V_SAVE_HOLD_MS] = sv->save_hold_ms;

        if (zone->replicate && zone->replicate->outbox) {
            ngx_http_simhash_stats_replication(zone->replicate->outbox, v);
        }

        if (ngx_http_simhash_dust_learner(zone)) {
            s[n].rules = ngx_http_simhash_dust_rules(r->pool, zone, &ds,
                                                     candidates,
                                                     r->connection->log);

            if (s[n].rules) {
                v[NGX_HTTP_SIMHASH_V_DUST_BYTES] = ds.region_bytes;
                v[NGX_HTTP_SIMHASH_V_DUST_OBSERVED] = ds.observed;
                v[NGX_HTTP_SIMHASH_V_DUST_REFUSED] = ds.refused;
                v[NGX_HTTP_SIMHASH_V_DUST_PREDICTED] = ds.predicted;
                v[NGX_HTTP_SIMHASH_V_DUST_SAVED] = ds.saved;
                v[NGX_HTTP_SIMHASH_V_DUST_SUPPORT] = ds.support;
                v[NGX_HTTP_SIMHASH_V_DUST_AGAINST] = ds.against;
                v[NGX_HTTP_SIMHASH_V_DUST_ACTIVATIONS] = ds.activations;
                v[NGX_HTTP_SIMHASH_V_DUST_RETIREMENTS] = ds.retirements;
                v[NGX_HTTP_SIMHASH_V_DUST_HOSTS] = ds.hosts;
                v[NGX_HTTP_SIMHASH_V_DUST_CANDIDATES] = ds.candidates;
                v[NGX_HTTP_SIMHASH_V_DUST_ACTIVE] = ds.active;
            }
        }

        ngx_http_simhash_stats_cluster(zone, v);

        n++;
    }

    return n;
}


/* ?format=prometheus, or an Accept header naming text/plain or openmetrics */

static ngx_uint_t
ngx_http_simhash_stats_prometheus(ngx_http_request_t *r)
{
    u_char           *p, *last;
    ngx_str_t         value;
    ngx_table_elt_t  *accept;

    if (ngx_http_arg(r, (u_char *) "format", 6, &value) == NGX_OK) {
        return value.len == 10
               && ngx_strncmp(value.data, "prometheus", 10) == 0;
    }

    accept = r->headers_in.accept;

    if (accept == NULL) {
        return 0;
    }

    p = accept->value.data;
    last = p + accept->value.len;

    if (ngx_strlcasestrn(p, last, (u_char *) "openmetrics", 11 - 1) != NULL) {
        return 1;
    }

    return ngx_strlcasestrn(p, last, (u_char *) "text/plain", 10 - 1) != NULL
           && ngx_strlcasestrn(p, last, (u_char *) "json", 4 - 1) == NULL;
}


static void
ngx_http_simhash_metric_labels(ngx_http_simhash_metric_t *m, ngx_uint_t prom,
    ngx_str_t **names, ngx_uint_t *n, char **label)
{
    switch (m->kind) {

    case NGX_HTTP_SIMHASH_M_STATUS:
        *names = ngx_http_simhash_status_names;
        *n = NGX_HTTP_SIMHASH_NSTATUS;
        *label = "status";
        break;

    case NGX_HTTP_SIMHASH_M_SKIP:
        *names = ngx_http_simhash_skip_names;
        *n = NGX_HTTP_SIMHASH_NSKIP;
        *label = "reason";
        break;

    case NGX_HTTP_SIMHASH_M_CAUSE:
        *names = ngx_http_simhash_cluster_cause_names;
        *n = NGX_HTTP_SIMHASH_CLUSTER_CAUSES - 1;
        *label = "cause";
        break;

    case NGX_HTTP_SIMHASH_M_HIST:
        /* the buckets, the sum, the count */
        *names = prom ? ngx_http_simhash_lag_prom : ngx_http_simhash_lag_json;
        *n = NGX_HTTP_SIMHASH_NLAG + 2;
        *label = "le";
        break;

    case NGX_HTTP_SIMHASH_M_HIST_US:
        *names = ngx_http_simhash_cluster_us_names[prom ? 1 : 0];
        *n = NGX_HTTP_SIMHASH_CLUSTER_NUS + 2;
        *label = "le";
        break;

    default:
        *names = NULL;
        *n = 1;
        *label = NULL;
    }
}


/*
 * Whether a metric is shown for a zone: the snapshot's in Prometheus for
 * every zone (it always was), in JSON for zones with a file; replication's
 * for replicated zones only.
 */

static ngx_uint_t
ngx_http_simhash_metric_shown(ngx_http_simhash_metric_t *m,
    ngx_http_simhash_zone_t *zone, ngx_uint_t prom)
{
    switch (m->group) {

    case NGX_HTTP_SIMHASH_G_SNAPSHOT:
        return prom || zone->file.len;

    case NGX_HTTP_SIMHASH_G_REPLICATE:
        return zone->replicate != NULL;

    case NGX_HTTP_SIMHASH_G_DUST:
        return ngx_http_simhash_dust_conf(zone)->size != 0;

    case NGX_HTTP_SIMHASH_G_CLUSTER:
        return ngx_http_simhash_cluster_counts(zone) != NULL;

    default:
        return 1;
    }
}


/*
 * The longest the response can be: per metric its names, and per zone and
 * label value the zone's name, the label and the longest number.  Zone names
 * need no escaping: simhash_zone accepts only [A-Za-z0-9_.-].
 */

static size_t
ngx_http_simhash_stats_size(ngx_http_simhash_snap_t *s, ngx_uint_t n,
    ngx_uint_t prom)
{
    char                       *label;
    size_t                      size, names_len;
    ngx_str_t                  *names;
    ngx_uint_t                  i, j, nl;
    ngx_http_simhash_metric_t  *m;

    names_len = 0;
    size = 0;

    for (i = 0; i < n; i++) {
        names_len += s[i].zone->name.len;

        size += ngx_http_simhash_sites_size(s[i].sites, &s[i].zone->name,
                                            prom)
                + ngx_http_simhash_nodes_size(s[i].zone)
                + ngx_http_simhash_cluster_nodes_size(s[i].zone)
                + ngx_http_simhash_uses_size(s[i].zone);

        /* the rules: in Prometheus each of their gauges names the zone */
        size += (prom ? 4 : 1)
                * (ngx_http_simhash_rules_size(s[i].rules)
                   + (s[i].rules ? s[i].rules->nelts : 0)
                     * s[i].zone->name.len);

        /* and the top rules' predictions */
        size += prom && s[i].rules
                ? 3 * NGX_HTTP_SIMHASH_RULES_PROM
                  * (ngx_http_simhash_rules_size(s[i].rules)
                     / ngx_max(s[i].rules->nelts, 1)
                     + s[i].zone->name.len + 64)
                  + 256
                : 0;
    }

    if (prom) {
        /* their HELP and TYPE lines */
        size += 4 * (2 * sizeof("# HELP simhash_ gauge\n") + 64 + 64);
    }

    if (!prom) {
        /* {"zones":{"NAME":{...,"GROUP":{...},...},...}}\n */
        size += sizeof("{\"zones\":{}}\n") + names_len
                + n * (sizeof(",\"\":{}") + sizeof(",\"dust_rules\":[]"));

        for (i = 0; i < sizeof(ngx_http_simhash_groups) / sizeof(ngx_str_t);
             i++)
        {
            size += n * (sizeof(",\"\":{}") + ngx_http_simhash_groups[i].len);
        }

        for (m = ngx_http_simhash_metrics; m->json.len; m++) {
            ngx_http_simhash_metric_labels(m, 0, &names, &nl, &label);

            /* ,"KEY":{} and per value ,"LABEL":NUMBER (a mean: %.3f) */
            size += n * (sizeof(",\"\":{}") + m->json.len);

            for (j = 0; j < nl; j++) {
                size += n * (sizeof(",\"\":") + (names ? names[j].len : 0)
                             + NGX_INT64_LEN + sizeof(".000"));
            }
        }

        return size;
    }

    for (m = ngx_http_simhash_metrics; m->json.len; m++) {

        if (m->prom.len == 0) {
            continue;
        }

        ngx_http_simhash_metric_labels(m, 1, &names, &nl, &label);

        /* # HELP simhash_NAME HELP\n# TYPE simhash_NAME TYPE\n */
        size += 2 * (sizeof("# HELP simhash_ \n") + m->prom.len)
                + m->help.len + m->type.len;

        /* simhash_NAME_bucket{zone="ZONE",LABEL="VALUE"} NUMBER.000\n */
        for (j = 0; j < nl; j++) {
            size += names_len
                    + n * (sizeof("simhash__bucket{zone=\"\",=\"\"} .000\n")
                           + m->prom.len
                           + (label ? ngx_strlen(label) + names[j].len : 0)
                           + NGX_INT64_LEN);
        }
    }

    return size;
}


static u_char *
ngx_http_simhash_stats_json(u_char *p, ngx_http_simhash_snap_t *s,
    ngx_uint_t n)
{
    char                       *label;
    uint64_t                   *v;
    ngx_str_t                  *names;
    ngx_uint_t                  i, j, nl, group, first;
    ngx_http_simhash_metric_t  *m;

    p = ngx_cpymem(p, "{\"zones\":{", 10);

    for (i = 0; i < n; i++) {
        v = s[i].v;
        group = NGX_HTTP_SIMHASH_G_NONE;
        first = 1;

        p = ngx_sprintf(p, "%s\"%V\":{", i ? "," : "", &s[i].zone->name);

        for (m = ngx_http_simhash_metrics; m->json.len; m++) {

            if (!ngx_http_simhash_metric_shown(m, s[i].zone, 0)) {
                continue;
            }

            if (m->group != group) {
                if (group != NGX_HTTP_SIMHASH_G_NONE) {
                    *p++ = '}';
                }

                group = m->group;

                if (group != NGX_HTTP_SIMHASH_G_NONE) {
                    p = ngx_sprintf(p, "%s\"%V\":{", first ? "" : ",",
                                    &ngx_http_simhash_groups[group]);
                    first = 1;
                }
            }

            p = ngx_sprintf(p, "%s\"%V\":", first ? "" : ",", &m->json);
            first = 0;

            switch (m->kind) {

            case NGX_HTTP_SIMHASH_M_VALUE:
            case NGX_HTTP_SIMHASH_M_MS:
                p = ngx_sprintf(p, "%uL", v[m->value]);
                break;

            case NGX_HTTP_SIMHASH_M_MEAN:
                p = ngx_sprintf(p, "%.3f", v[NGX_HTTP_SIMHASH_V_LOOKUPS]
                                ? (double) v[NGX_HTTP_SIMHASH_V_PROBES]
                                  / v[NGX_HTTP_SIMHASH_V_LOOKUPS]
                                : 0.0);
                break;

            default:
                ngx_http_simhash_metric_labels(m, 0, &names, &nl, &label);

                *p++ = '{';

                for (j = 0; j < nl; j++) {
                    p = ngx_sprintf(p, "%s\"%V\":%uL", j ? "," : "",
                                    &names[j], v[m->value + j]);
                }

                *p++ = '}';
            }
        }

        if (group != NGX_HTTP_SIMHASH_G_NONE) {
            *p++ = '}';
        }

        if (s[i].rules) {
            p = ngx_http_simhash_rules_json(p, s[i].rules, s[i].sites);
        }

        p = ngx_http_simhash_sites_json(p, s[i].sites);
        p = ngx_http_simhash_nodes_json(p, s[i].zone);
        p = ngx_http_simhash_cluster_nodes_json(p, s[i].zone);
        p = ngx_http_simhash_uses_json(p, s[i].zone);

        *p++ = '}';
    }

    return ngx_cpymem(p, "}}\n", 3);
}


static u_char *
ngx_http_simhash_stats_prom(u_char *p, ngx_http_simhash_snap_t *s,
    ngx_uint_t n)
{
    char                       *label;
    uint64_t                    x;
    ngx_str_t                  *names;
    ngx_uint_t                  i, j, nl, shown;
    ngx_http_simhash_metric_t  *m;

    for (m = ngx_http_simhash_metrics; m->json.len; m++) {

        if (m->prom.len == 0) {
            continue;
        }

        shown = 0;

        for (i = 0; i < n; i++) {
            shown += ngx_http_simhash_metric_shown(m, s[i].zone, 1);
        }

        if (shown == 0) {
            continue;
        }

        p = ngx_sprintf(p, "# HELP simhash_%V %V\n# TYPE simhash_%V %V\n",
                        &m->prom, &m->help, &m->prom, &m->type);

        ngx_http_simhash_metric_labels(m, 1, &names, &nl, &label);

        for (i = 0; i < n; i++) {

            if (!ngx_http_simhash_metric_shown(m, s[i].zone, 1)) {
                continue;
            }

            for (j = 0; j < nl; j++) {
                x = s[i].v[m->value + j];

                if (m->kind == NGX_HTTP_SIMHASH_M_HIST
                    || m->kind == NGX_HTTP_SIMHASH_M_HIST_US)
                {
                    /* NAME_bucket{...,le="B"}, NAME_sum, NAME_count */

                    if (j < nl - 2) {
                        p = ngx_sprintf(p, "simhash_%V_bucket{zone=\"%V\","
                                        "le=\"%V\"} %uL\n", &m->prom,
                                        &s[i].zone->name, &names[j], x);

                    } else if (j == nl - 2) {
                        /* in seconds, from ms (M_HIST) or us */
                        x *= m->kind == NGX_HTTP_SIMHASH_M_HIST ? 1000 : 1;
                        p = ngx_sprintf(p, "simhash_%V_sum{zone=\"%V\"} "
                                        "%uL.%06uL\n", &m->prom,
                                        &s[i].zone->name, x / 1000000,
                                        x % 1000000);

                    } else {
                        p = ngx_sprintf(p, "simhash_%V_count{zone=\"%V\"} "
                                        "%uL\n", &m->prom, &s[i].zone->name,
                                        x);
                    }

                    continue;
                }

                p = ngx_sprintf(p, "simhash_%V{zone=\"%V\"", &m->prom,
                                &s[i].zone->name);

                if (label) {
                    p = ngx_sprintf(p, ",%s=\"%V\"", label, &names[j]);
                }

                if (m->kind == NGX_HTTP_SIMHASH_M_MS) {
                    p = ngx_sprintf(p, "} %uL.%03uL\n", x / 1000, x % 1000);

                } else {
                    p = ngx_sprintf(p, "} %uL\n", x);
                }
            }
        }
    }

    p = ngx_http_simhash_rules_prom(p, s, n);

    for (i = 0, j = 0; i < n; i++) {
        if (s[i].rules && s[i].sites) {
            p = ngx_http_simhash_sites_rules_prom(p, &s[i].zone->name,
                                                  s[i].rules, s[i].sites,
                                                  j++ == 0);
        }
    }

    return ngx_http_simhash_stats_sites_prom(p, s, n);
}


/* the top sites' series of every zone (ngx_http_simhash_sites.c) */

static u_char *
ngx_http_simhash_stats_sites_prom(u_char *p, ngx_http_simhash_snap_t *s,
    ngx_uint_t n)
{
    ngx_uint_t                      i, j, repl;
    ngx_http_simhash_sites_snap_t  *first, *last;

    /* the lag per node of the replicated zones */

    repl = 0;

    for (i = 0; i < n; i++) {
        if (s[i].zone->replicate) {
            p = ngx_http_simhash_nodes_prom(p, s[i].zone, repl++ == 0);
        }
    }

    /* the slot map of the zones with cluster=, a family at a time */

    for (j = 0; j < 2; j++) {
        for (i = 0, repl = 1; i < n; i++) {
            p = ngx_http_simhash_cluster_nodes_prom(p, s[i].zone, j, &repl);
        }
    }

    first = NULL;
    last = NULL;

    for (i = 0; i < n; i++) {
        if (s[i].sites == NULL) {
            continue;
        }

        s[i].sites->zone = s[i].zone->name;

        if (last) {
            last->next = s[i].sites;

        } else {
            first = s[i].sites;
        }

        last = s[i].sites;
    }

    return first ? ngx_http_simhash_sites_prom(p, first) : p;
}


/*
 * The rules' text, longest case: every byte of host, pattern and argument
 * percent-encoded, and the other fields at their longest.
 */

static size_t
ngx_http_simhash_rules_size(ngx_array_t *rules)
{
    if (rules == NULL) {
        return 0;
    }

    return rules->nelts
           * (3 * (SH_DUST_HOST_TEXT + SH_DUST_PAT_TEXT + SH_DUST_ARG_TEXT)
              + 384 + 7 * NGX_INT64_LEN);
}


static u_char *
ngx_http_simhash_rules_json(u_char *p, ngx_array_t *rules,
    ngx_http_simhash_sites_snap_t *sites)
{
    uint64_t                       c[3];
    ngx_uint_t                     i;
    sh_dust_rule_info_t           *ri;
    ngx_http_simhash_dust_rule_t  *rule;

    rule = rules->elts;

    p = ngx_cpymem(p, ",\"dust_rules\":[", sizeof(",\"dust_rules\":[") - 1);

    for (i = 0; i < rules->nelts; i++) {
        ri = &rule[i].rule;

        p = ngx_sprintf(p, "%s{", i ? "," : "");
        p = ngx_http_simhash_rule_json(p, ri);
        p = ngx_sprintf(p, ",\"host_predictions\":%uL,\"host_saved\":%uL",
                        rule[i].predictions, rule[i].saved);

        /* what this rule's own predictions came to */

        if (sites) {
            ngx_http_simhash_sites_rule_counts(sites->keys,
                                               sites->rule_count,
                                               sites->nrule_count, ri, c);
            p = ngx_sprintf(p, ",\"made\":%uL,\"verified\":%uL,"
                            "\"failed\":%uL", c[0], c[1], c[2]);
        }

        *p++ = '}';
    }

    *p++ = ']';

    return p;
}


static u_char *
ngx_http_simhash_rules_prom(u_char *p, ngx_http_simhash_snap_t *s,
    ngx_uint_t n)
{
    ngx_uint_t                     i, j, k, any;
    sh_dust_rule_info_t           *ri;
    ngx_http_simhash_dust_rule_t  *rule;

    any = 0;

    for (i = 0; i < n; i++) {
        any += s[i].rules && s[i].rules->nelts;
    }

    if (!any) {
        return p;
    }

    for (k = 0; k < 4; k++) {
        p = ngx_sprintf(p, "# HELP simhash_%V %V\n# TYPE simhash_%V gauge\n",
                        &ngx_http_simhash_rule_prom[k],
                        &ngx_http_simhash_rule_help[k],
                        &ngx_http_simhash_rule_prom[k]);

        for (i = 0; i < n; i++) {
            if (s[i].rules == NULL) {
                continue;
            }

            rule = s[i].rules->elts;

            for (j = 0; j < s[i].rules->nelts; j++) {
                ri = &rule[j].rule;

                p = ngx_sprintf(p, "simhash_%V{",
                                &ngx_http_simhash_rule_prom[k]);
                p = ngx_http_simhash_rule_labels(p, &s[i].zone->name, ri);
                p = ngx_sprintf(p, ",state=\"%s\"} ",
                                sh_dust_state_name(ri->state));

                switch (k) {
                case 0:
                    p = ngx_sprintf(p, "%uD\n", ri->support);
                    break;
                case 1:
                    p = ngx_sprintf(p, "%uD\n", ri->against);
                    break;
                case 2:
                    p = ngx_sprintf(p, "%.4f\n", ri->lower);
                    break;
                default:
                    p = ngx_sprintf(p, "%uL\n", rule[j].saved);
                }
            }
        }
    }

    return p;
}
