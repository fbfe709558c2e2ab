/*
 * test_site_fixture.h -- the Public Suffix List for a whole group of
 * tests (which hosts are one site: sh_site.h), loaded once as the group's
 * setup and unloaded as its teardown.
 */
#ifndef SH_TEST_SITE_FIXTURE_H
#define SH_TEST_SITE_FIXTURE_H

#include <stdio.h>

#include "sh_site.h"

static int
test_site_load(void **state)
{
    char err[256];

    (void) state;
    if (sh_site_load(NULL, err, sizeof(err)) != 0) {
        fprintf(stderr, "sh_site_load: %s\n", err);
        return -1;
    }
    return 0;
}

static int
test_site_unload(void **state)
{
    (void) state;
    sh_site_unload();
    return 0;
}

#endif
