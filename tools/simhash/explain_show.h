/*
 * explain_show.h -- `simhash explain`'s readable output (explain_show.c).
 */
#ifndef SH_EXPLAIN_SHOW_H
#define SH_EXPLAIN_SHOW_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* The answer (a JSON object) as aligned lines under title (or none). */
void explain_show(const char *title, json_t *answer, FILE *out);

/* s seconds in the largest unit that fits twice: "9 s", "14 min" */
void explain_duration(long long s, char *buf, size_t size);

#endif
