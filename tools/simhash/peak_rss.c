/*
 * peak_rss.c -- per-phase peak RSS from /proc (see peak_rss.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peak_rss.h"

/* A "Name:   N kB" line of /proc/self/status, in bytes. */
static size_t
status_bytes(const char *name)
{
    FILE  *f = fopen("/proc/self/status", "r");
    char   line[256];
    size_t kb = 0, len = strlen(name);

    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, name, len) == 0 && line[len] == ':') {
            kb = strtoull(line + len + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb * 1024;
}

size_t
peak_rss_reset(void)
{
    /* "5" resets the peak RSS of the process (Linux 4.0 and later). */
    FILE *f = fopen("/proc/self/clear_refs", "w");

    if (f != NULL) {
        fputs("5", f);
        fclose(f);
    }
    return status_bytes("VmRSS");
}

size_t
peak_rss_peak(void)
{
    return status_bytes("VmHWM");
}
