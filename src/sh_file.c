/*
 * sh_file.c -- replacing a file safely and durably (sh_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sh_file.h"

struct sh_file_writer_s {
    int  dfd;
    int  fd;
    char path[4096];
    char base[1024];
    char tmpbase[1024 + 4];
};

static int
write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t w = write(fd, p, len);

        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += w;
        len -= (size_t) w;
    }
    return 0;
}

int
sh_file_open_parent(const char *path, char *base, size_t baselen, char *err,
                    size_t errlen)
{
    char       *copy = strdup(path), *dir;
    const char *slash = strrchr(path, '/');
    int         fd;

    if (copy == NULL) {
        snprintf(err, errlen, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    if ((size_t) snprintf(base, baselen, "%s", slash ? slash + 1 : path)
        >= baselen || base[0] == '\0')
    {
        snprintf(err, errlen, "%s: not a file name", path);
        free(copy);
        errno = EINVAL;
        return -1;
    }
    dir = dirname(copy);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int         e = errno;
        struct stat sb;

        /* O_DIRECTORY|O_NOFOLLOW on a link: ENOTDIR or ELOOP */
        if (lstat(dir, &sb) == 0 && S_ISLNK(sb.st_mode)) {
            snprintf(err, errlen, "%s: a symbolic link; name the directory "
                     "it points to", dir);
        } else {
            snprintf(err, errlen, "%s: %s", dir, strerror(e));
        }
        free(copy);
        errno = e;
        return -1;
    }
    free(copy);
    return fd;
}

int
sh_file_check_dir(int dfd, const char *path, char *err, size_t errlen)
{
    struct stat sb;

    if (fstat(dfd, &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if ((sb.st_mode & S_IWOTH) && !(sb.st_mode & S_ISVTX)) {
        snprintf(err, errlen, "%s: the file's directory is writable by "
                 "every user (mode %04o); make it writable by its owner "
                 "only", path, (unsigned) (sb.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* PATH.tmp afresh, a regular file with one name and exactly `mode`. */
static int
create_tmp(sh_file_writer_t *w, mode_t mode, const sh_file_owner_t *owner,
           char *err, size_t errlen)
{
    struct stat sb;
    int         fd;

    if (unlinkat(w->dfd, w->tmpbase, 0) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "%s.tmp: cannot remove a stale file: %s",
                 w->path, strerror(errno));
        return -1;
    }
    fd = openat(w->dfd, w->tmpbase,
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        snprintf(err, errlen, "%s.tmp: %s", w->path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
        snprintf(err, errlen, "%s.tmp: not a fresh regular file", w->path);
        close(fd);
        return -1;
    }
    /* the umask may have taken bits away, never added: set it exactly */
    if (fchmod(fd, mode) != 0
        || (owner != NULL && fchown(fd, owner->uid, owner->gid) != 0))
    {
        snprintf(err, errlen, "%s.tmp: %s", w->path, strerror(errno));
        close(fd);
        (void) unlinkat(w->dfd, w->tmpbase, 0);
        return -1;
    }
    return fd;
}

sh_file_writer_t *
sh_file_writer_open(const char *path, mode_t mode,
                    const sh_file_owner_t *owner, char *err, size_t errlen)
{
    sh_file_writer_t *w = calloc(1, sizeof(*w));

    if (w == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->fd = -1;
    if ((size_t) snprintf(w->path, sizeof(w->path), "%s", path)
        >= sizeof(w->path))
    {
        snprintf(err, errlen, "%s: path too long", path);
        free(w);
        return NULL;
    }
    w->dfd = sh_file_open_parent(path, w->base, sizeof(w->base), err,
                                 errlen);
    if (w->dfd < 0) {
        free(w);
        return NULL;
    }
    snprintf(w->tmpbase, sizeof(w->tmpbase), "%s.tmp", w->base);
    if (sh_file_check_dir(w->dfd, path, err, errlen) != 0
        || (w->fd = create_tmp(w, mode, owner, err, errlen)) < 0)
    {
        close(w->dfd);
        free(w);
        return NULL;
    }
    return w;
}

int
sh_file_writer_write(sh_file_writer_t *w, const void *buf, size_t len,
                     char *err, size_t errlen)
{
    if (write_all(w->fd, buf, len) != 0) {
        snprintf(err, errlen, "%s.tmp: %s", w->path, strerror(errno));
        return -1;
    }
    return 0;
}

void
sh_file_writer_abort(sh_file_writer_t *w)
{
    if (w->fd >= 0) {
        close(w->fd);
        (void) unlinkat(w->dfd, w->tmpbase, 0);
    }
    close(w->dfd);
    free(w);
}

int
sh_file_writer_commit(sh_file_writer_t *w, char *err, size_t errlen)
{
    int rc = -1;

    if (fsync(w->fd) != 0) {
        snprintf(err, errlen, "%s.tmp: %s", w->path, strerror(errno));
        sh_file_writer_abort(w);
        return -1;
    }
    if (close(w->fd) != 0) {
        w->fd = -1;
        snprintf(err, errlen, "%s.tmp: %s", w->path, strerror(errno));
        (void) unlinkat(w->dfd, w->tmpbase, 0);
        goto done;
    }
    w->fd = -1;
    /* renameat replaces a link at PATH itself, never what it points to */
    if (renameat(w->dfd, w->tmpbase, w->dfd, w->base) != 0) {
        snprintf(err, errlen, "%s: %s", w->path, strerror(errno));
        (void) unlinkat(w->dfd, w->tmpbase, 0);
        goto done;
    }
    /* the rename is durable only once the directory is on disk too */
    if (fsync(w->dfd) != 0) {
        snprintf(err, errlen, "%s: cannot sync directory: %s", w->path,
                 strerror(errno));
        goto done;
    }
    rc = 0;
done:
    close(w->dfd);
    free(w);
    return rc;
}
