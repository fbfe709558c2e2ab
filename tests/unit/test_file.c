/*
 * sh_file: the one safe writer.  A file is replaced whole with exactly its
 * mode whatever the umask; a link planted at PATH.tmp is never written
 * through, one at PATH is replaced, never followed; an abort leaves the old
 * file and no PATH.tmp; a directory every user may write is refused unless
 * it is sticky.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sh_file.h"

static char dir[256], path[300], tmp[310], victim[300];

static int
setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/sh_test_file.%d", (int) getpid());
    if (mkdir(dir, 0700) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/f", dir);
    snprintf(tmp, sizeof(tmp), "%s/f.tmp", dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    return 0;
}

static int
teardown(void **state)
{
    unlink(path);
    unlink(tmp);
    unlink(victim);
    chmod(dir, 0700);
    return rmdir(dir);
}

static void
put(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");

    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *
get(const char *p, char *buf, size_t len)
{
    FILE  *f = fopen(p, "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int
write_file(const char *text, mode_t mode)
{
    char              err[256];
    sh_file_writer_t *w = sh_file_writer_open(path, mode, NULL, err,
                                              sizeof(err));

    if (w == NULL) {
        return -1;
    }
    if (sh_file_writer_write(w, text, strlen(text), err, sizeof(err)) != 0) {
        sh_file_writer_abort(w);
        return -1;
    }
    return sh_file_writer_commit(w, err, sizeof(err));
}

static void
test_replace_mode(void **state)
{
    struct stat sb;
    char        buf[64];
    mode_t      old = umask(077);

    put(path, "old");
    assert_int_equal(write_file("new", 0644), 0);
    umask(old);
    assert_string_equal(get(path, buf, sizeof(buf)), "new");
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0644);
    assert_int_equal(access(tmp, F_OK), -1);
}

static void
test_links(void **state)
{
    char        buf[64];
    struct stat sb;

    put(victim, "precious");
    assert_int_equal(symlink(victim, tmp), 0);
    assert_int_equal(write_file("one", 0600), 0);
    assert_string_equal(get(victim, buf, sizeof(buf)), "precious");

    unlink(path);
    assert_int_equal(symlink(victim, path), 0);
    assert_int_equal(write_file("two", 0600), 0);
    assert_string_equal(get(victim, buf, sizeof(buf)), "precious");
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_string_equal(get(path, buf, sizeof(buf)), "two");
}

static void
test_abort(void **state)
{
    char              err[256], buf[64];
    sh_file_writer_t *w;

    put(path, "kept");
    w = sh_file_writer_open(path, 0600, NULL, err, sizeof(err));
    assert_non_null(w);
    assert_int_equal(sh_file_writer_write(w, "half", 4, err, sizeof(err)),
                     0);
    assert_int_equal(access(tmp, F_OK), 0);
    sh_file_writer_abort(w);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_string_equal(get(path, buf, sizeof(buf)), "kept");
}

static void
test_open_directory(void **state)
{
    char              err[256];
    sh_file_writer_t *w;

    assert_int_equal(chmod(dir, 0777), 0);
    w = sh_file_writer_open(path, 0600, NULL, err, sizeof(err));
    assert_null(w);
    assert_non_null(strstr(err, "writable by every user (mode 0777)"));
    assert_int_equal(chmod(dir, 01777), 0);
    assert_int_equal(write_file("sticky", 0600), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replace_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_directory, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
