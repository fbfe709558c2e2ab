/*
 * sh_err.c -- the reason of a failure, printf-style (sh_err.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "sh_err.h"

void
sh_err_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
