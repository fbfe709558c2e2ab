/*
 * sh_dust.h -- learning, online and per host, the URL rules behind the
 * duplicates a site produces ("DUST": different URLs with similar text),
 * and predicting duplicates before they are fetched.  docs/DUST.md tells
 * the story for an operator; this header is the contract.
 *
 * Rules.  An atomic rule is a rewrite (sh_dust_kind_t) with a scope: a
 * host and a path pattern, the URL's FIRST path component ("/doc/" for
 * /doc/1 and /doc/; "/" for a root-level file such as /about or /).  A rule
 * applies only to URLs of its scope.  HOST_ALIAS(a -> b) is scoped by its
 * host a alone (pattern "*"); pins may be host-wide too.  A HOST_ALIAS is
 * learned only between hosts of one SITE, one registrable domain by the
 * Public Suffix List (sh_site.h: www.example.com, m.example.com and
 * example.com): a host that copies another site's pages must not make the
 * other site's URLs answered by its own pages or rules (security issue
 * 31).  Hosts of two sites are joined only by a pin.  A path rule that
 * moves a URL into another scope (drop_component of its first component:
 * /amp/docs/x; path_case of /Docs/X.HTML) is composed with the query rules
 * of the scope it moves it into, both when learning (R(u) then that
 * scope's rules, looked up in the canonical table) and in c(u): an /amp/
 * page with a session id needs no session rule of its own under /amp/.
 *
 * Evidence.  Every decision the module makes is an observation (url, rep):
 * rep identifies the DOCUMENT the URL resolved to (the original's key hash
 * for a duplicate or an unchanged page, the URL's own for a new or changed
 * one); it is opaque here.  A PAIR is two different URLs that a rule R
 * maps to one URL: the same rep is one pair of SUPPORT for R in that
 * scope, another rep one pair AGAINST.  For each atomic rule R that
 * changes u, the evidence table finds the pairs of u:
 *   - the last other URL that R mapped to R(u) (keyed hash of scope, R,
 *     R(u); same URL again: a re-fetch, no pair);
 *   - R(u) itself, fetched before u (every URL leaves an identity entry);
 *   - an earlier w with R(w) = u (every rewrite leaves a reverse entry);
 *   - the same path and query on another host (HOST_ALIAS), or, when
 *     that other host has active rules, u in its canonical form known
 *     from another URL there (a session id on both hosts gives no two
 *     links one query: the exact comparison alone would find the alias
 *     only after each host learned its own rule).
 * While rules are on in a scope, a rule that is not on is tried composed
 * with them, R(c(u)), so that a parameter whose pairs only line up once
 * another is dropped (utm_source behind a session id) is learned too; a
 * pair of URLs that the active rules alone already merge is no evidence
 * for R.  A candidate is created by its first supporting pair (content
 * parameters, whose pairs disagree, never take a slot) and counts every
 * pair after.
 *
 * States.  A candidate becomes ACTIVE by a sequential test (Wald's SPRT):
 * a rule is BAD when its pairs disagree at rate e1 = 1 - min_precision or
 * more, GOOD at e0 = e1 / 10 or less; each pair adds its log-likelihood
 * ratio (ln((1 - e0) / (1 - e1)) for, -ln(e1 / e0) against) and the rule
 * turns on when the sum reaches ln((1 - a) / a), a = Phi(-z), with at
 * least min_evidence pairs.  The bound promised: a rule that is bad in a
 * scope turns on there with probability at most a, however long it is
 * watched; once on, the sum keeps running on the verification sample and
 * the canonical checks, and the pair against that takes it below the
 * bound RETIRES it at once, so a bad rule that got on gives in
 * expectation about 1 / (verified share) wrong answers (docs/DUST.md, "The
 * loss bound").  Defaults (0.95, z 2.58: e1 0.05, a 0.0049): 115 clean
 * pairs alone; each pair against costs about 50 more; a rule whose pairs
 * disagree more than about 2% of the time drifts down and cannot stay on.
 * Across scopes: each scope's activation (retirement) counts one GOOD
 * (BAD) scope in the host's record of the rule (a candidate of pattern
 * "**", never a rule itself); a scope of a host whose record, with its
 * alias's (one site), holds g good and b bad scopes is tested at a' = a
 * (g + b + 2) / (b + 1), at most 0.25 (Laplace's rule: the chance that the
 * rule is bad in one more scope is (b + 1) / (g + b + 2), so a bad scope
 * still turns it on with probability a on average): 91 pairs after one
 * scope, 85 after two, 24 at the cap.  Pooled: every scoped pair also
 * counts in one sum over all scopes of the host and its alias (a
 * candidate of its own pattern, never a rule); once that sum passes the test
 * at a, every scope is tested at the cap (24 clean pairs of its own).
 * The scope's own pairs against count in full either way, so a trap in
 * one scope holds the rule off there.  A retired
 * rule comes back only when the test holds again AND its support has
 * doubled since it was retired, so a borderline rule does not flap.
 * Counts are halved past 2^20 pairs, so old evidence fades.  Pins
 * (sh_dust_pin) make a rule PINNED (always active) or FORBIDDEN (never),
 * whatever the evidence; they are not evicted.  The parameters that change
 * content (page, lang, q, a reordering sort) disagree on nearly every
 * pair, never get a candidate slot, and could not pass the test if they
 * did.
 *
 * Canonical form: c(u) = u with every active rule of its scope applied
 * (HOST_ALIAS first, then the rules: path, then parameters).  An active
 * alias joins two hosts: the source's URLs take the target's host, and the
 * URLs of either take the rules of both (a host's forbid, or its own evidence
 * against a rule, still holds for its own URLs).  A pair against a rule of the
 * other host, applied to this host's URLs (a verification fetch of its
 * prediction, or any fetch the canonical table checks), counts against that
 * rule where it was learned and retires it in this host's scope at once (a
 * candidate made for the purpose): the first wrong answer a borrowed rule
 * gives a host is its last there, until the host's own evidence turns it on.
 * A learned alias points at the host that had more
 * requests when it turned on, whose URLs are already the canonical
 * table's forms; its candidate is named by hash order, so that the pairs
 * of both hosts count for one rule.  The canonical table maps hash(c(u))
 * to the rep and URL of the last fetch that had that form; while a host
 * has active rules, each observation checks it (a different URL with that
 * form: support or against for each active rule that changed u) and
 * refreshes it.
 * sh_dust_predict returns a rep when some active rule changes u and u's
 * document is known from ANOTHER URL: c(u) in the canonical table, else,
 * for one active rule R alone, R's own evidence of R(u) (the last URL R
 * mapped there, or R(u) itself fetched), which also knows the documents
 * fetched before R turned on; and when no active rule changes u, an
 * active rule that mapped a fetched w onto u (its reverse entry: u is
 * R(w)) names w's document.  No active rule, no prediction (a site
 * without DUST gets none), and an exact re-fetch is not a prediction.
 *
 * Bounds.  A URL that sh_url_parse refuses (longer than SH_URL_LEN_MAX,
 * more than SH_URL_PARAMS_MAX parameters or SH_URL_SEGS_MAX segments) is
 * neither learned from nor predicted: -1, pass it through.  Otherwise one
 * observation tries at most A = 4 SH_URL_PARAMS_MAX + 3 SH_URL_SEGS_MAX +
 * 7 atomic rules (per distinct parameter name, family, short value and
 * value shape, per distinct path component and shape, per path parameter
 * name, sort, trailing slash, index file and its family, path case, two
 * param_path), each one hash of O(segments + parameters) multiply-xor
 * steps and at most four probes of one evidence or canonical bucket
 * (pair, identity, canonical, reverse), plus a candidate probe per pair
 * found; then two reverse, at most three value (param_path), one alias
 * and one identity probe; one path probe, and when another host
 * with rules served that path, its canonical form (2A candidate probes at
 * most) and one canonical probe; and while the host has active rules, up
 * to 4A candidate probes (its own and its alias's; the 64-bit hints skip
 * most) and one canonical probe.  A prediction: one host probe, and while
 * the host has rules the candidate probes, one canonical probe and at
 * most two evidence probes per active rule.  Measured on this VM
 * (bench/bench_dust): 1.8 us for a prediction and an observation of a
 * typical URL (4 segments, 2 parameters), 19 us for the worst (16
 * segments, 32 parameters), against 300-1000 us of a new page's work.
 * A rule turning on (tens of times in a crawl) makes one pass over the
 * evidence table to backfill the canonical table (docs/DUST.md).
 * Every table is set-associative with LRU replacement within a set;
 * nothing grows.
 *
 * Memory: one caller-provided region (sh_dust_region_size), offsets only,
 * relocatable (an nginx shared zone, a heap buffer).  Concurrency: the
 * caller holds the zone's lock (exclusive) around every call except
 * sh_dust_stats, sh_dust_foreach_* and sh_dust_changes (shared).  Nothing
 * allocates; results depend only on the secret, the calls and the Public
 * Suffix List (sh_site_load, once per process; without it no alias is
 * learned).
 *
 * Persistence and replication: sh_dust_image_save/load keep the hosts and
 * candidates (not the evidence or canonical tables, which refill) in a
 * flat, versioned, checksummed blob; a rule's state travels between nodes
 * as one SH_DUST_RULE_REC_LEN-byte record (sh_dust_export_rule,
 * sh_dust_import_rule).  Hashes are keyed: only nodes of one secret share.
 */
#ifndef SH_DUST_H
#define SH_DUST_H

#include <stddef.h>
#include <stdint.h>

#include "sh_url.h"

#define SH_DUST_HOST_TEXT   64      /* bytes of a host's name kept */
#define SH_DUST_ARG_TEXT    32      /* of a rule's argument */
#define SH_DUST_PAT_TEXT    24      /* of a pattern's component */
#define SH_DUST_CHANGES     64      /* the change ring */
#define SH_DUST_WHY_MAX     4       /* rules named in a prediction */
#define SH_DUST_RULE_REC_LEN 176    /* bytes of an exported rule */

typedef struct sh_dust_s sh_dust_t;

typedef enum {
    SH_DUST_DROP_PARAM = 1,     /* arg: the parameter's (decoded) name */
    SH_DUST_SORT_PARAMS,
    SH_DUST_TRAILING_SLASH,
    SH_DUST_INDEX_FILE,         /* arg: the final component, "index.html" */
    SH_DUST_PATH_CASE,
    SH_DUST_DROP_COMPONENT,     /* arg: the component, "print" */
    SH_DUST_HOST_ALIAS,         /* arg: the canonical host b */
    SH_DUST_DROP_PATH_PARAM,    /* arg: a path parameter's name,
                                   "jsessionid" of /a/B.html;jsessionid=1F */
    SH_DUST_DROP_VALUE,         /* arg: "name=value", one value of a
                                   parameter (a default written out:
                                   format=html, hl=en, page=1); values of
                                   at most SH_DUST_VALUE_MAX bytes */
    SH_DUST_PARAM_PATH          /* arg: "name=/prefix/", a script's
                                   parameter whose value is the last
                                   segment of a path: MediaWiki's
                                   /w/index.php?title=T for /wiki/T,
                                   "title=/wiki/"; scoped by the script */
} sh_dust_kind_t;
#define SH_DUST_KIND_MAX    SH_DUST_PARAM_PATH
#define SH_DUST_VALUE_MAX   8

typedef enum {
    SH_DUST_CANDIDATE = 0,
    SH_DUST_ACTIVE,
    SH_DUST_RETIRED,
    SH_DUST_PINNED,             /* by hand: always active */
    SH_DUST_FORBIDDEN           /* by hand: never active */
} sh_dust_state_t;

typedef enum {
    SH_DUST_PIN_ON = 1,
    SH_DUST_PIN_OFF,
    SH_DUST_PIN_CLEAR           /* back to what the evidence says */
} sh_dust_pin_t;

typedef struct {
    uint32_t hosts;             /* table sizes: rounded up to full sets */
    uint32_t candidates;
    uint32_t evidence_slots;
    uint32_t canonical_slots;
    uint32_t min_evidence;      /* 8 */
    double   min_precision;     /* 0.95 */
    double   z;                 /* 2.58 */
} sh_dust_opts_t;

typedef struct {
    uint64_t        host_hash;
    uint64_t        pattern_hash;   /* 0: host-wide */
    uint64_t        arg_hash;
    char            host[SH_DUST_HOST_TEXT + 1];  /* "" if unknown */
    char            pattern[SH_DUST_PAT_TEXT + 3]; /* "/doc/", "/", "*",
                                                      a script's
                                                      "/store/Cart.aspx" */
    char            arg[SH_DUST_ARG_TEXT + 1];
    sh_dust_kind_t  kind;
    sh_dust_state_t state;
    uint32_t        support;
    uint32_t        against;
    double          precision;      /* support / (support + against) */
    double          lower;          /* its Wilson lower bound, at z */
    double          llr;            /* the sequential test's sum */
    double          need;           /* what it must reach in its scope
                                       (0 when not known: an image) */
    double          sample;         /* on: the share of the verification
                                       rate its predictions need
                                       (sh_dust_sample); else 1 */
    int             waiting;        /* a value shape's rule, v=(hex),
                                       held off by design: drop_param(v)
                                       is on or has no pair against */
    uint64_t        last;           /* `now` of its last evidence */
} sh_dust_rule_info_t;

typedef struct {
    uint64_t host_hash;
    char     host[SH_DUST_HOST_TEXT + 1];
    uint64_t alias_to;          /* host hash of an active alias, 0 */
    uint64_t requests;          /* observations */
    uint64_t predictions;
    uint64_t saved;             /* fetches saved (sh_dust_saved) */
    uint64_t last;
} sh_dust_host_info_t;

/* A state change, for a log line. */
typedef struct {
    uint64_t            seq;
    uint64_t            time;
    sh_dust_state_t     from;
    sh_dust_rule_info_t rule;   /* as it was right after the change */
} sh_dust_change_t;

/* Why a prediction was made: the rules that rewrote the URL. */
typedef struct {
    uint64_t       host_hash;   /* the URL's host: sh_dust_saved's */
    double         sample;      /* the share of the verification rate it
                                   needs: its weakest rule's
                                   (sh_dust_sample) */
    uint32_t       kinds;       /* bit 1 << kind for each */
    unsigned       nrules;      /* named below: at most SH_DUST_WHY_MAX */
    struct {
        sh_dust_kind_t kind;
        char           arg[SH_DUST_ARG_TEXT + 1];
    } rule[SH_DUST_WHY_MAX];
} sh_dust_why_t;

typedef struct {
    uint64_t observed;
    uint64_t refused;           /* URLs sh_url_parse refused */
    uint64_t predicted;
    uint64_t saved;
    uint64_t support;           /* pairs counted */
    uint64_t against;
    uint64_t activations;
    uint64_t retirements;
    uint64_t host_evictions;
    uint64_t candidate_evictions;
    uint32_t hosts;             /* in use now */
    uint32_t candidates;
    uint32_t active;            /* active or pinned */
    uint64_t region_bytes;
} sh_dust_stats_t;

/* Table sizes for a small tier (about 6 MB) and the thresholds above. */
void sh_dust_opts_init(sh_dust_opts_t *o);

size_t sh_dust_region_size(uint32_t hosts, uint32_t candidates,
                           uint32_t evidence_slots,
                           uint32_t canonical_slots);

/* Format `region` (8-byte aligned, at least sh_dust_region_size of
 * opts' sizes).  The secret (up to 32 bytes used) keys every hash.  NULL
 * and a message on error. */
sh_dust_t *sh_dust_init(void *region, size_t size, const void *secret,
                        size_t secret_len, const sh_dust_opts_t *opts,
                        char *err, size_t errlen);

/* Validate a formatted region (another process, another address). */
sh_dust_t *sh_dust_attach(void *region, size_t size, char *err,
                          size_t errlen);

/*
 * One decision of the module: `url` resolved to document `rep` (not 0).
 * Returns -1 if the URL is refused (nothing learned), else the number of
 * rule state changes it caused (sh_dust_changes says which).
 */
int sh_dust_observe(sh_dust_t *d, const char *url, size_t len, uint64_t rep,
                    uint64_t now);

/*
 * Is `url` a predicted duplicate?  1 with *rep (the document to check in
 * the store) and *why (may be NULL); 0 if not; -1 if refused.
 */
int sh_dust_predict(sh_dust_t *d, const char *url, size_t len, uint64_t now,
                    uint64_t *rep, sh_dust_why_t *why);

/* The same answer, leaving no trace (counters, the host's last use): an
 * operator's question, not a request. */
int sh_dust_predict_dry(sh_dust_t *d, const char *url, size_t len,
                        uint64_t *rep, sh_dust_why_t *why);

/*
 * Whether `url` was itself fetched and observed (its identity entry): the
 * learner never predicts such a URL, the store answers it (its document,
 * or a fetch compared by its body).  1 if seen, 0 if not, -1 if refused.
 * Reads only; for "why?", which must name the reason a prediction was not
 * made.
 */
int sh_dust_seen(sh_dust_t *d, const char *url, size_t len);

/*
 * Whether a file name names a server-side handler by its extension
 * (Cart.aspx, viewtopic.php; any case): the query of such a URL is scoped
 * by the script, and pattern= names such a scope "/dir/Cart.aspx".
 */
int sh_dust_is_script(const char *name, size_t len);

/*
 * Whether the rules give a and b one path: 1 when a and b, each under the
 * rules of its own scope, have the same path (whatever their hosts,
 * schemes and queries), 0 when not, -1 when either URL is refused.  The
 * rules are those on (c(a), c(b)) and the path rules whose own pairs pass
 * the sequential test at the cap though they are not on (24 clean pairs
 * with the defaults: an /amp/ prefix or a path's case the site shows
 * often, not yet often enough to predict by).  What a drop mode that asks
 * for the duplicate's path (the module's keys=path) checks of a
 * prediction: /d/index.html predicted from /d/ by INDEX_FILE passes, a
 * prediction whose document came from another item's page (the canonical
 * table's URL was a duplicate of it) does not.
 */
int sh_dust_same_path(sh_dust_t *d, const char *a, size_t alen,
                      const char *b, size_t blen);

/*
 * The URL of u's canonical form c(u), written into buf (NUL-terminated),
 * when that URL itself was fetched and resolved to document `rep`: its
 * length; 0 when it was not (or is not known now), when u is refused or
 * no rule is on for it, or when it does not fit in size.  What a drop
 * mode that asks for the request's path (the module's keys=path) names
 * as the original when the document's own key has another path: a URL
 * the crawler was given, which the rules make one page with u
 * (m.example.com/news/a predicted from the document first fetched as
 * /node/7, when example.com/news/a was fetched too).
 */
#define SH_DUST_FORM_LEN (SH_URL_LEN_MAX + SH_DUST_HOST_TEXT + 1)
                                /* a buffer any form fits, with its NUL: a
                                   URL the learner takes is at most
                                   SH_URL_LEN_MAX bytes, and its form
                                   changes no more than the host */
size_t sh_dust_fetched_form(sh_dust_t *d, const char *url, size_t len,
                            uint64_t rep, char *buf, size_t size);

/*
 * The share of the verification rate that the predictions of a rule on
 * need, from its sequential test's sum llr and the bound need it was
 * tested at (ln((1 - a') / a'), the scope's a' as the host's other scopes
 * make it: 5.31 for a first scope with the defaults, 1.10 at the cap):
 * 1 up to SH_DUST_SAMPLE_HOLD past the bound, then e^-(llr - need -
 * hold), at least SH_DUST_SAMPLE_MIN.  A rule that is bad climbs the hold
 * past the sum it turned on with with probability at most e^-hold = 5%
 * (Ville's inequality: its likelihood ratio is a martingale), so a sample
 * that shrinks only past it adds a few tens of percent to a bad rule's
 * expected wrong answers, a' / v (docs/DUST.md, "The loss bound";
 * measured 1.2 to 1.5 times, test_sample_bound), where shrinking from the
 * bound itself tripled them.  The floor is for what the bound does not
 * cover: a good rule that a site's change makes bad is caught within
 * about 1 / (v SH_DUST_SAMPLE_MIN) wrong answers.
 */
#define SH_DUST_SAMPLE_MIN  0.25
#define SH_DUST_SAMPLE_HOLD 3.0         /* ln 20 */
double sh_dust_sample(double llr, double need);

/* The module acted on a prediction: a fetch saved. */
void sh_dust_saved(sh_dust_t *d, const sh_dust_why_t *why);

/* "drop_param(sid) sort_params": NUL-terminated, truncated to size. */
size_t sh_dust_why_format(const sh_dust_why_t *why, char *buf, size_t size);

const char *sh_dust_kind_name(sh_dust_kind_t kind);
const char *sh_dust_state_name(sh_dust_state_t state);

/*
 * Pin a rule by hand: ON always active, OFF never, CLEAR back to the
 * evidence.  `pattern`: "/doc/" (or "doc"), "/" for root-level files, NULL
 * for every pattern of the host (host-wide; HOST_ALIAS is always).  `arg`
 * for the kinds that take one (NULL otherwise).  0, or -1 (bad arguments,
 * or no slot: every way of the set is pinned).
 */
int sh_dust_pin(sh_dust_t *d, const char *host, const char *pattern,
                sh_dust_kind_t kind, const char *arg, int mode, uint64_t now);

/* Iterate in table order; a callback returning non-zero stops. */
typedef int (*sh_dust_host_cb)(const sh_dust_host_info_t *h, void *ctx);
typedef int (*sh_dust_rule_cb)(const sh_dust_rule_info_t *r, void *ctx);

void sh_dust_foreach_host(const sh_dust_t *d, sh_dust_host_cb cb, void *ctx);
/* host_hash 0: all hosts; all 0: only active, retired and manual rules. */
void sh_dust_foreach_rule(const sh_dust_t *d, uint64_t host_hash, int all,
                          sh_dust_rule_cb cb, void *ctx);

uint64_t sh_dust_host_hash(const sh_dust_t *d, const char *host, size_t len);

/* One rule's state; -1 if the table does not hold it. */
int sh_dust_rule(const sh_dust_t *d, const char *host, const char *pattern,
                 sh_dust_kind_t kind, const char *arg,
                 sh_dust_rule_info_t *out);

/*
 * Changes with seq > *since, oldest first, at most max; *since moves to
 * the last returned.  Changes older than the ring (SH_DUST_CHANGES) are
 * gone.  The seq of the latest change: sh_dust_change_seq.
 */
size_t sh_dust_changes(const sh_dust_t *d, uint64_t *since,
                       sh_dust_change_t *out, size_t max);
uint64_t sh_dust_change_seq(const sh_dust_t *d);

void sh_dust_stats(const sh_dust_t *d, sh_dust_stats_t *s);

/* Image: bytes needed, then written (0 if size is short). */
size_t sh_dust_image_size(const sh_dust_t *d);
size_t sh_dust_image_save(const sh_dust_t *d, void *buf, size_t size);
/* Replaces the hosts and candidates; 0, or -1 and a message (damaged,
 * another version or another secret: nothing changed). */
int sh_dust_image_load(sh_dust_t *d, const void *buf, size_t len, char *err,
                       size_t errlen);

/*
 * The rules of an image without a learner or its secret (a snapshot read
 * by `simhash index rules`): each rule as sh_dust_rule_info_t, the host's
 * name from its record, the bound at z (the image does not keep the z it
 * was learned under; 0: the default 2.58).  0, or -1 and a message for a
 * damaged image or a damaged record (the rules before it were given).
 */
int sh_dust_image_rules(const void *buf, size_t len, double z,
                        sh_dust_rule_cb cb, void *ctx, char *err,
                        size_t errlen);

/*
 * One rule's state as a record (byte order fixed, checksummed): 0, or -1
 * if the table does not hold the rule of `r` (host_hash, pattern_hash,
 * kind, arg_hash).  Import merges: each count becomes the larger of the
 * two (idempotent: a record replayed changes nothing), a remote pin or
 * forbid is applied, and the state follows the local thresholds.  -1 for
 * a damaged record.
 */
int sh_dust_export_rule(const sh_dust_t *d, const sh_dust_rule_info_t *r,
                        unsigned char out[SH_DUST_RULE_REC_LEN]);
int sh_dust_import_rule(sh_dust_t *d, const unsigned char *rec, size_t len,
                        uint64_t now);

/*
 * A record's evidence alone: a PINNED or FORBIDDEN state byte becomes
 * CANDIDATE (the checksum redone), so that an import merges its counts
 * and leaves the importer's own pins as they are.  Pins are a node's
 * configuration: the module's replication sends and applies records
 * through this.  *ri (may be NULL) gets the rule's hashes, kind, state
 * (after the change) and counts, not its texts.  0, or -1 for a damaged
 * record.
 */
int sh_dust_rule_unpin(unsigned char rec[SH_DUST_RULE_REC_LEN],
                       sh_dust_rule_info_t *ri);

#endif
