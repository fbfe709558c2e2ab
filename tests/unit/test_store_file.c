/*
 * test_store_file.c -- the store snapshot's file (sh_store_file.h): the
 * settings and the image read back from where they were written, padded to
 * 8 bytes; the tail section found from the end, its bytes checked; a file
 * without a tail reads as image to its end; a damaged footer costs the
 * tail only, a damaged section is refused by its checksum, a damaged
 * header or settings refuse the file; settings too long are refused.
 * The image's own frames are sh_image's (test_store.c).
 */
#include "test_util.h"

#include <unistd.h>

#include "sh_file.h"
#include "sh_store_file.h"

static char path[64];

/* A file of settings `meta`, an "image" of `image_len` bytes of pattern,
 * and a tail `tail` (NULL: none); read back whole into *len bytes. */
static unsigned char *
make(const char *meta, size_t image_len, const char *tail, size_t *len)
{
    char              err[256];
    sh_file_writer_t *w;
    unsigned char    *image = malloc(image_len + 1), *buf;
    size_t            i;
    FILE             *f;
    int               fd;

    for (i = 0; i < image_len; i++) {
        image[i] = (unsigned char) (i * 7 + 1);
    }
    strcpy(path, "/tmp/test_store_file.XXXXXX");
    fd = mkstemp(path);
    assert_int_not_equal(fd, -1);
    close(fd);
    w = sh_file_writer_open(path, 0600, NULL, err, sizeof(err));
    assert_non_null(w);
    assert_int_equal(sh_store_file_begin(w, meta, strlen(meta), err,
                                         sizeof(err)), 0);
    assert_int_equal(sh_file_writer_write(w, image, image_len, err,
                                          sizeof(err)), 0);
    if (tail != NULL) {
        assert_int_equal(sh_store_file_tail(w, tail, strlen(tail), err,
                                            sizeof(err)), 0);
    }
    assert_int_equal(sh_file_writer_commit(w, err, sizeof(err)), 0);
    free(image);

    f = fopen(path, "rb");
    assert_non_null(f);
    buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    unlink(path);
    return buf;
}

static void
assert_image(const unsigned char *image, size_t len, size_t want)
{
    size_t i;

    assert_int_equal(len, want);
    for (i = 0; i < len; i++) {
        assert_int_equal(image[i], (unsigned char) (i * 7 + 1));
    }
}

static void
test_settings_and_image(void **state)
{
    const unsigned char *meta, *image, *data;
    size_t               len, meta_len, image_len, data_len;
    unsigned char       *file = make("capacity=1000\nseed=abc", 4000, NULL,
                                     &len);
    char                 err[256];

    (void) state;
    assert_true(sh_store_file_is(file, len));
    assert_int_equal(sh_store_file_parse(file, len, &meta, &meta_len, &image,
                                         &image_len, err, sizeof(err)), 0);
    assert_int_equal(meta_len, 22);
    assert_memory_equal(meta, "capacity=1000\nseed=abc", 22);
    assert_int_equal((size_t) (image - file) % 8, 0);   /* padded */
    assert_image(image, image_len, 4000);
    /* no tail: none found, and the whole rest is the image */
    assert_int_equal(sh_store_file_tail_get(file, len, &data, &data_len), 0);
    free(file);
}

static void
test_tail(void **state)
{
    const unsigned char *meta, *image, *data;
    size_t               len, meta_len, image_len, data_len;
    unsigned char       *file = make("s", 1001, "the learner's rules", &len);
    char                 err[256];
    uint64_t             off, n, sum;

    (void) state;
    assert_int_equal(sh_store_file_parse(file, len, &meta, &meta_len, &image,
                                         &image_len, err, sizeof(err)), 0);
    assert_image(image, image_len, 1001);       /* exact: the tail apart */
    assert_int_equal(sh_store_file_tail_get(file, len, &data, &data_len), 1);
    assert_int_equal(data_len, 19);
    assert_memory_equal(data, "the learner's rules", 19);

    assert_int_equal(sh_store_file_tail_find(file + len
                                             - SH_STORE_FILE_TAIL_LEN,
                                             len - (size_t) (image - file),
                                             &off, &n, &sum), 1);
    assert_int_equal(off, 1001);
    assert_int_equal(n, 19);
    assert_true(sh_store_file_tail_ok(data, 19, sum));
    assert_false(sh_store_file_tail_ok("the learner's ruleZ", 19, sum));

    /* a footer that claims more than there is: no tail */
    assert_int_equal(sh_store_file_tail_find(file + len
                                             - SH_STORE_FILE_TAIL_LEN,
                                             SH_STORE_FILE_TAIL_LEN + 18,
                                             &off, &n, &sum), 0);
    free(file);
}

/* Damage: the section's bytes (refused by its checksum, the image exact),
 * the footer (no tail: the rest is the image), the settings or the header
 * (the file refused). */
static void
test_damage(void **state)
{
    const unsigned char *meta, *image, *data;
    size_t               len, meta_len, image_len, data_len;
    unsigned char       *file = make("settings", 500, "rules", &len);
    char                 err[256];

    (void) state;
    file[len - SH_STORE_FILE_TAIL_LEN - 2] ^= 1;        /* in "rules" */
    assert_int_equal(sh_store_file_tail_get(file, len, &data, &data_len),
                     -1);
    assert_int_equal(sh_store_file_parse(file, len, &meta, &meta_len, &image,
                                         &image_len, err, sizeof(err)), 0);
    assert_image(image, image_len, 500);
    file[len - SH_STORE_FILE_TAIL_LEN - 2] ^= 1;

    file[len - 1] ^= 1;                                 /* the footer */
    assert_int_equal(sh_store_file_tail_get(file, len, &data, &data_len), 0);
    assert_int_equal(sh_store_file_parse(file, len, &meta, &meta_len, &image,
                                         &image_len, err, sizeof(err)), 0);
    assert_int_equal(image_len, 500 + 5 + SH_STORE_FILE_TAIL_LEN);
    file[len - 1] ^= 1;

    file[(size_t) (meta - file) + 3] ^= 1;              /* the settings */
    assert_int_equal(sh_store_file_parse(file, len, &meta, &meta_len, &image,
                                         &image_len, err, sizeof(err)), -1);
    assert_string_equal(err, "store snapshot: damaged header");
    free(file);

    file = make("settings", 500, NULL, &len);
    file[8] ^= 0xff;                                    /* the version */
    assert_int_equal(sh_store_file_parse(file, len, &meta, &meta_len, &image,
                                         &image_len, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "another format version"));
    file[0] = 'X';
    assert_false(sh_store_file_is(file, len));
    assert_int_equal(sh_store_file_parse(file, len, &meta, &meta_len, &image,
                                         &image_len, err, sizeof(err)), -1);
    assert_string_equal(err, "not a store snapshot");
    assert_int_equal(sh_store_file_parse(file, 7, &meta, &meta_len, &image,
                                         &image_len, err, sizeof(err)), -1);
    free(file);
}

static void
test_settings_too_long(void **state)
{
    char              err[256];
    char             *meta = malloc(SH_STORE_FILE_META_MAX + 1);
    sh_file_writer_t *w;

    (void) state;
    memset(meta, 's', SH_STORE_FILE_META_MAX + 1);
    strcpy(path, "/tmp/test_store_file.long");
    w = sh_file_writer_open(path, 0600, NULL, err, sizeof(err));
    assert_non_null(w);
    assert_int_equal(sh_store_file_begin(w, meta, SH_STORE_FILE_META_MAX + 1,
                                         err, sizeof(err)), -1);
    assert_string_equal(err, "snapshot settings too long");
    sh_file_writer_abort(w);
    assert_int_equal(access(path, F_OK), -1);
    free(meta);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings_and_image),
        cmocka_unit_test(test_tail),
        cmocka_unit_test(test_damage),
        cmocka_unit_test(test_settings_too_long),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
