/* Crash-safe file writes: write a temp file beside the target, fsync, rename, fsync the dir.
 * A reader sees either the old file or the complete new one, never half of one. The temp file
 * is created with O_EXCL and O_NOFOLLOW, and the rename replaces a link at the target rather
 * than following it, so links planted in the directory are never written through.
 *
 * Every file ringside writes is opened through afile_open_fd (the temp files here, the session
 * log), so none is ever a link followed, a FIFO waited on, a device, or another user's file. */
#ifndef RINGSIDE_BACKEND_CORE_AFILE_H
#define RINGSIDE_BACKEND_CORE_AFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Open path for writing as a regular file of this user's, and only so. flags: O_EXCL (create
 * it afresh), O_APPEND, O_TRUNC (done once the file has been checked), or 0. A missing file is
 * created with mode (under the umask); with a mode only the owner may read (0600) an existing
 * file's group and other bits are cleared too. The open has O_NOFOLLOW and O_NONBLOCK (cleared
 * once open), and what is at path is looked at before (lstat) and after (fstat) the open: a
 * symbolic link, a FIFO, a directory, a device or a socket is refused unopened or closed
 * unwritten (never followed, waited on or truncated), as is a regular file another user owns.
 * A descriptor (close-on-exec), or -errno with err naming path and what is there
 * ("PATH: a FIFO is there, not a regular file: left as it is"). */
int afile_open_fd(const char *path, int flags, mode_t mode, char *err, size_t errlen);

/* Whether rc of afile_open_fd is a refusal of what is at the path (a link, a FIFO, a directory,
 * a device, a socket, another user's file: -ELOOP, -EISDIR, -EINVAL, -EPERM) rather than an
 * open that failed (a directory that cannot be written in, a full disk). */
bool afile_refused(int rc);

struct afile {
    FILE *fp;            /* write through this between open and commit */
    char path[4096];     /* final path */
    char tmp_path[4096]; /* "<path>.tmp.<pid>"; "" when path is written in place */
};

/* Create the temp file (0666 under the umask). 0, or -errno with err filled ("cannot create
 * X.tmp: ...").*/
int afile_open(struct afile *af, const char *path, char *err, size_t errlen);

/* afile_open for a file only this user may read (created 0600): a hang bundle, which holds
 * kernel-log lines. */
int afile_open_private(struct afile *af, const char *path, char *err, size_t errlen);

/* afile_open for a path the user named on the command line (--out FILE): one that is a FIFO or
 * a character device (a pipe, a terminal, /dev/stdout, /dev/null; through the user's links) is
 * written in place, since renaming over it would put a file where it was. Never for the
 * files ringside names itself (checkpoints, logs). */
int afile_open_user(struct afile *af, const char *path, char *err, size_t errlen);

/* afile_open_user for a stream written as it goes (--record FILE, --jsonl FILE): a FIFO or a
 * character device is written in place; anything else is replaced at once by the new file (the
 * temp file renamed over it), which is then written in place, so a link planted at path is
 * replaced, never written through, and readers see the stream grow under its name. */
int afile_open_stream(struct afile *af, const char *path, char *err, size_t errlen);

/* Flush, fsync, rename over the target and fsync the directory. On any failure the temp
 * file is removed, the old target is left untouched and -errno is returned. */
int afile_commit(struct afile *af, char *err, size_t errlen);

/* Discard the temp file (after a failed write). Safe to call on a closed afile. */
void afile_abort(struct afile *af);

/* One-shot: write len bytes atomically (afile_open, or afile_open_user's rule). */
int afile_write_all(const char *path, const void *buf, size_t len, char *err, size_t errlen);
int afile_write_all_user(const char *path, const void *buf, size_t len, char *err, size_t errlen);
int afile_write_all_private(const char *path, const void *buf, size_t len, char *err,
                            size_t errlen);

/* Remove what crashed writers left in dir: regular files named exactly "<prefix>.tmp.<pid>"
 * (prefix is a file name, "vpoc_mlp.rsmodel") whose pid is not a running process. A live
 * writer's temp file (another ringside on the same directory) is kept. The number removed, or
 * -errno with err filled when dir cannot be read. */
int afile_sweep_stale(const char *dir, const char *prefix, char *err, size_t errlen);

/* mkdir -p for an output directory; 0 or -errno with err filled. */
int afile_mkdirs(const char *dir, char *err, size_t errlen);

/* Whether files can be created in dir now (a file made and removed at once, as the atomic
 * writes will): 0, or -errno with err ("cannot write in DIR: Permission denied"), so a run
 * that would fail at its first checkpoint says so at its start. */
int afile_probe_dir(const char *dir, char *err, size_t errlen);

#endif
