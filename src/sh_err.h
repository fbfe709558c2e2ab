/*
 * sh_err.h -- the library's one way to say why: every call that can fail
 * takes (char *err, size_t errlen) and, on failure, writes a one-line
 * reason there.  err may be NULL (the caller does not want it).
 */
#ifndef SH_ERR_H
#define SH_ERR_H

#include <stddef.h>

void sh_err_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
