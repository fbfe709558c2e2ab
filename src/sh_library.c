/*
 * sh_library.c -- the library's one initialisation (sh_library.h).
 */
#include <libxml/parser.h>

#include "sh_features.h"
#include "sh_library.h"
#include "sh_simhash.h"
#include "sh_text.h"

/* Every table the library builds at run time, built before any thread or
 * worker process exists. */
void
sh_library_init(void)
{
    sh_acc_t acc;

    xmlInitParser();
    sh_acc_init(&acc);          /* builds the sign table once */
    sh_text_init();
    sh_features_init();
}
