/*
 * sh_version.c -- the extraction version and the libxml2 behaviour class.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/xmlversion.h>
#include <libxml/parser.h>

#include "sh_version.h"

/*
 * 2.14.0 replaced the HTML tokenizer with one that follows HTML5: the same
 * bytes may give other text (comments, references, raw text), so pages
 * fingerprinted under the two are not comparable.
 */
#define HTML5_TOKENIZER     21400L

unsigned
sh_libxml_class_of(long version)
{
    return version >= HTML5_TOKENIZER ? 2 : 1;
}

unsigned
sh_libxml_class(void)
{
    return sh_libxml_class_of(LIBXML_VERSION);
}

int
sh_libxml_check(char *err, size_t errlen)
{
    long run = xmlParserVersion != NULL ? strtol(xmlParserVersion, NULL, 10)
                                        : 0;

    if (sh_libxml_class_of(run) != sh_libxml_class()) {
        snprintf(err, errlen, "libxml2 %ld is loaded, but this build was "
                 "compiled against %d, whose HTML tokenizer differs (2.14 "
                 "follows HTML5): rebuild against the libxml2 installed",
                 run, LIBXML_VERSION);
        return -1;
    }
    return 0;
}

uint32_t
sh_version_make(uint64_t options_digest)
{
    uint32_t low = (uint32_t) (options_digest ^ (options_digest >> 24)
                               ^ (options_digest >> 48)) & 0xffffffu;

    return (SH_EXTRACT_CODE & 0xffu) << 24 | low;
}

unsigned
sh_version_code(uint32_t xv)
{
    return xv >> 24;
}

char *
sh_version_format(char *buf, uint32_t xv)
{
    snprintf(buf, SH_VERSION_TEXT, "%08x", xv);
    return buf;
}

int
sh_version_parse(uint32_t *xv, const char *s, size_t len)
{
    uint32_t v = 0;
    size_t   i;

    if (len != 8) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        unsigned c = (unsigned char) s[i], d;

        if (c >= '0' && c <= '9') {
            d = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            d = c - 'a' + 10;
        } else {
            return -1;
        }
        v = v << 4 | d;
    }
    *xv = v;
    return 0;
}
