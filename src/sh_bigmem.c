/* sh_bigmem -- see sh_bigmem.h. */
#include "sh_bigmem.h"

#include <stdlib.h>
#include <sys/mman.h>

void *
sh_big_alloc(size_t size)
{
    void *p;

    if (size < (4u << 20)) {
        return malloc(size ? size : 1);
    }
    if (posix_memalign(&p, 2u << 20, size) != 0) {
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    (void) madvise(p, size, MADV_HUGEPAGE);   /* a hint: no THP, no harm */
#endif
    return p;
}
