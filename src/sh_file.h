/*
 * sh_file.h -- replacing a file safely and durably: one writer for every
 * file the project writes (snapshots, the store's file, IDF and volatility
 * tables).
 *
 * PATH.tmp is created afresh: a stale one (a crash, or a link someone
 * planted in a directory they can write) is removed, the new one created
 * exclusively (O_EXCL never follows a link) and checked to be a regular
 * file with no other name.  Everything is done relative to a descriptor of
 * the directory, opened without following a link at its last component,
 * so nothing that happens to the path meanwhile redirects a write.  Commit
 * fsyncs the file, renames it over PATH (a link at PATH is replaced, never
 * followed) and fsyncs the directory, so the replacement survives a crash
 * whole or not at all.  A directory that every user may write, without
 * the sticky bit, is refused: anyone could swap the file.
 */
#ifndef SH_FILE_H
#define SH_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* who is to own a file written by root (NULL: the writer) */
typedef struct {
    uid_t    uid;
    gid_t    gid;
} sh_file_owner_t;

typedef struct sh_file_writer_s sh_file_writer_t;

/* PATH.tmp created afresh with exactly `mode`: the writer, or NULL and the
 * reason in err. */
sh_file_writer_t *sh_file_writer_open(const char *path, mode_t mode,
                                      const sh_file_owner_t *owner,
                                      char *err, size_t errlen);
/* Append: 0, or -1 and the reason. */
int  sh_file_writer_write(sh_file_writer_t *w, const void *buf, size_t len,
                          char *err, size_t errlen);
/* fsync, rename over PATH, fsync the directory: 0, or -1 and the reason
 * (PATH.tmp is then removed).  Frees the writer. */
int  sh_file_writer_commit(sh_file_writer_t *w, char *err, size_t errlen);
/* Remove PATH.tmp and free the writer. */
void sh_file_writer_abort(sh_file_writer_t *w);

/*
 * The directory of `path`, opened without following a link at its last
 * component, and path's last component in base: the descriptor, or -1
 * (errno kept) and the reason.
 */
int sh_file_open_parent(const char *path, char *base, size_t baselen,
                        char *err, size_t errlen);

/* 0, or -1 and the reason when the directory dfd (of path) may be written
 * by every user and is not sticky. */
int sh_file_check_dir(int dfd, const char *path, char *err, size_t errlen);

#endif
