/*
 * peak_rss.h -- the peak resident memory of one phase of a run, so that two
 * methods run one after the other in the same process each get their own
 * figure (Linux: VmHWM, reset through /proc/self/clear_refs).
 */
#ifndef PEAK_RSS_H
#define PEAK_RSS_H

#include <stddef.h>

/* Start a phase: reset the peak to the memory resident now, and return
 * that (0 if unknown). */
size_t peak_rss_reset(void);

/* The peak resident bytes since the last reset (or since the start of the
 * process if the reset is not supported); 0 if unknown. */
size_t peak_rss_peak(void);

#endif
