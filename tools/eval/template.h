/*
 * template.h -- the template corpus's pairs and main-content truth
 * (template.c), shared with the learned-template simulation (sketch.c).
 */
#ifndef SH_EVAL_TEMPLATE_H
#define SH_EVAL_TEMPLATE_H

#include "eval.h"

enum { TP_TEMPLATE = 0, TP_SITE = 1 };

typedef struct {
    uint32_t a, b;          /* main-text pages (indices into mp) */
    uint16_t kind;          /* TP_TEMPLATE or TP_SITE */
    uint16_t group;
    float    jaccard;       /* of the main-content text */
} tpair_t;

struct ev_template_s {
    /* One entry per page taking part: its main-content truth. */
    ev_page_t   *mp;
    uint32_t    *page;      /* the run's page index of each */
    const char **xpath;
    size_t       nmp, cap;

    tpair_t     *pairs;
    size_t       npairs, cap_pairs;
    size_t       listed[2], dropped[2];

    char        *groups[EV_GROUPS_MAX];
    uint16_t     group_kind[EV_GROUPS_MAX];
    unsigned     ngroups;

    /* The listed site pages, by group. */
    uint32_t    *site;
    uint16_t    *site_group;
    size_t       nsite, cap_site;
};

#define TH_SAME     0.9     /* same document: main-content J at least */
#define TH_APART    0.5     /* different documents: main-content J below */

#endif
