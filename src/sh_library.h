/*
 * sh_library.h -- the library's one initialisation, at the top of the
 * parts (src/README.md): it builds the tables of the parts below it.
 */
#ifndef SH_LIBRARY_H
#define SH_LIBRARY_H

/* Process-wide initialisation of libxml2 and of every table the library
 * builds at run time; idempotent, call before fork. */
void sh_library_init(void);

#endif
