/* Atomic file replacement (temp + fsync + rename) and output directory creation. */
#include "backend/core/afile.h"

#include "backend/core/errbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What is at a path of mode m, for a refusal. */
static const char *afile_kind(mode_t m) {
    return S_ISLNK(m)    ? "a symbolic link"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "something other than a file";
}

static int afile_refuse(const char *path, mode_t m, char *err, size_t errlen) {
    if (S_ISLNK(m))
        return errbuf_set(err, errlen, -ELOOP,
                          "%s: a symbolic link is there (not followed): left as it is", path);
    return errbuf_set(err, errlen, S_ISDIR(m) ? -EISDIR : -EINVAL,
                      "%s: %s is there, not a regular file: left as it is", path, afile_kind(m));
}

static int afile_not_ours(const char *path, uid_t uid, char *err, size_t errlen) {
    return errbuf_set(err, errlen, -EPERM,
                      "%s: a file of uid %u is there, not of this user (uid %u): left as it is",
                      path, (unsigned)uid, (unsigned)geteuid());
}

/* The checks on what open gave: a regular file of this user's (group and other bits cleared
 * for a private one), truncated when asked, blocking again. 0 or -errno with err. */
static int afile_check_fd(int fd, const char *path, int flags, mode_t mode, char *err,
                          size_t errlen) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return errbuf_set(err, errlen, -errno, "cannot write %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return afile_refuse(path, st.st_mode, err, errlen);
    if (!(flags & O_EXCL) && st.st_uid != geteuid()) /* one made afresh is ours */
        return afile_not_ours(path, st.st_uid, err, errlen);
    int fl = fcntl(fd, F_GETFL);
    const char *step = "fcntl";
    int rc = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ? -errno : 0;
    if (rc == 0 && !(mode & 077) && (st.st_mode & 077) &&
        (step = "chmod", fchmod(fd, st.st_mode & 0700) != 0))
        rc = -errno;
    if (rc == 0 && (flags & O_TRUNC) && (step = "truncate", ftruncate(fd, 0) != 0))
        rc = -errno;
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "cannot write %s (%s): %s", path, step, strerror(-rc));
    return 0;
}

int afile_open_fd(const char *path, int flags, mode_t mode, char *err, size_t errlen) {
    struct stat st;
    bool excl = (flags & O_EXCL) != 0;
    /* what is there is looked at first, so a FIFO or a device is not even opened */
    if (!excl && lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return afile_refuse(path, st.st_mode, err, errlen);
    int fd = open(path,
                  O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                      (flags & (O_EXCL | O_APPEND)),
                  mode);
    if (fd < 0) {
        int e = errno;
        if (e != EEXIST && lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
            return afile_refuse(path, st.st_mode, err, errlen); /* put there since the lstat */
        if (e == EACCES && !excl && lstat(path, &st) == 0 && st.st_uid != geteuid())
            return afile_not_ours(path, st.st_uid, err, errlen); /* fs.protected_regular */
        return errbuf_set(err, errlen, -e, "cannot %s %s: %s", excl ? "create" : "write", path,
                          strerror(e));
    }
    int rc = afile_check_fd(fd, path, flags, mode, err, errlen);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    return fd;
}

bool afile_refused(int rc) {
    return rc == -ELOOP || rc == -EISDIR || rc == -EINVAL || rc == -EPERM;
}

/* The temp file beside path, created afresh: O_EXCL and O_NOFOLLOW, so a file, a link or a FIFO
 * planted under its name (by someone who can write the directory) is never written through nor
 * waited on. Whatever is there already (left by a dead process that had our pid, or planted) is
 * removed first: unlink removes the entry itself, never what a link points to. */
static int afile_create_tmp(struct afile *af, mode_t mode, char *err, size_t errlen) {
    int fd = afile_open_fd(af->tmp_path, O_EXCL, mode, err, errlen);
    if (fd == -EEXIST && unlink(af->tmp_path) == 0)
        fd = afile_open_fd(af->tmp_path, O_EXCL, mode, err, errlen);
    if (fd < 0)
        return fd;
    if (!(af->fp = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        unlink(af->tmp_path);
        return errbuf_set(err, errlen, -e, "cannot create %s: %s", af->tmp_path, strerror(e));
    }
    return 0;
}

static int afile_open_mode(struct afile *af, const char *path, mode_t mode, char *err,
                           size_t errlen) {
    memset(af, 0, sizeof(*af));
    struct stat st;
    if (strlen(path) + 32 >= sizeof(af->path))
        return errbuf_set(err, errlen, -ENAMETOOLONG, "%s: path too long", path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) /* before any work, not at the rename */
        return errbuf_set(err, errlen, -EISDIR, "%s: is a directory (name a file in it)", path);
    snprintf(af->path, sizeof(af->path), "%s", path);
    snprintf(af->tmp_path, sizeof(af->tmp_path), "%s.tmp.%ld", path, (long)getpid());
    return afile_create_tmp(af, mode, err, errlen);
}

int afile_open(struct afile *af, const char *path, char *err, size_t errlen) {
    return afile_open_mode(af, path, 0666, err, errlen);
}

int afile_open_private(struct afile *af, const char *path, char *err, size_t errlen) {
    return afile_open_mode(af, path, 0600, err, errlen);
}

int afile_open_user(struct afile *af, const char *path, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
        memset(af, 0, sizeof(*af));
        snprintf(af->path, sizeof(af->path), "%s", path);
        af->fp = fopen(path, "wb"); /* a pipe, a terminal, /dev/stdout, /dev/null: in place */
        if (!af->fp)
            return errbuf_set(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
        return 0;
    }
    return afile_open(af, path, err, errlen);
}

int afile_open_stream(struct afile *af, const char *path, char *err, size_t errlen) {
    char why[sizeof(af->tmp_path) + 128];
    int rc = afile_open_user(af, path, why, sizeof(why));
    if (rc == 0 && af->tmp_path[0] && rename(af->tmp_path, af->path) != 0) {
        rc = -errno;
        afile_abort(af);
    }
    if (rc != 0)
        return rc == -EISDIR
                   ? errbuf_set(err, errlen, rc, "%s", why)
                   : errbuf_set(err, errlen, rc, "cannot write %s: %s", path, strerror(-rc));
    af->tmp_path[0] = '\0'; /* the file at path now: written in place from here on */
    return 0;
}

static int afile_sync_dir(const char *path) {
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : -errno;
    close(fd);
    return rc;
}

int afile_commit(struct afile *af, char *err, size_t errlen) {
    if (!af->fp)
        return errbuf_set(err, errlen, -EBADF, "%s: not open", af->path);
    int rc = 0;
    const char *step = "write";
    if (fflush(af->fp) != 0 || ferror(af->fp))
        rc = -(errno ? errno : EIO);
    else if (step = "fsync", af->tmp_path[0] && fsync(fileno(af->fp)) != 0)
        rc = -errno;
    if (fclose(af->fp) != 0 && rc == 0) {
        step = "close";
        rc = -errno;
    }
    af->fp = NULL;
    if (!af->tmp_path[0]) /* written in place: nothing to rename */
        return rc ? errbuf_set(err, errlen, rc, "cannot write %s: %s", af->path, strerror(-rc)) : 0;
    if (rc == 0 && rename(af->tmp_path, af->path) != 0) {
        step = "rename";
        rc = -errno;
    }
    if (rc != 0) {
        unlink(af->tmp_path);
        return errbuf_set(err, errlen, rc, "cannot write %s (%s): %s", af->path, step,
                          strerror(-rc));
    }
    afile_sync_dir(af->path);
    return 0;
}

void afile_abort(struct afile *af) {
    if (af->fp) {
        fclose(af->fp);
        af->fp = NULL;
        if (af->tmp_path[0])
            unlink(af->tmp_path);
    }
}

static int afile_write_opened(struct afile *af, int rc, const void *buf, size_t len, char *err,
                              size_t errlen) {
    if (rc != 0)
        return rc;
    if (len > 0 && fwrite(buf, 1, len, af->fp) != len) {
        rc = -(errno ? errno : EIO);
        afile_abort(af);
        return errbuf_set(err, errlen, rc, "cannot write %s: %s", af->path, strerror(-rc));
    }
    return afile_commit(af, err, errlen);
}

int afile_write_all(const char *path, const void *buf, size_t len, char *err, size_t errlen) {
    struct afile af;
    return afile_write_opened(&af, afile_open(&af, path, err, errlen), buf, len, err, errlen);
}

int afile_write_all_user(const char *path, const void *buf, size_t len, char *err, size_t errlen) {
    struct afile af;
    return afile_write_opened(&af, afile_open_user(&af, path, err, errlen), buf, len, err, errlen);
}

int afile_write_all_private(const char *path, const void *buf, size_t len, char *err,
                            size_t errlen) {
    struct afile af;
    return afile_write_opened(&af, afile_open_private(&af, path, err, errlen), buf, len, err,
                              errlen);
}

/* The pid in "<prefix>.tmp.<pid>", or 0 when name is not one of prefix's temp files. */
static long afile_stale_pid(const char *name, const char *prefix) {
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || strncmp(name + n, ".tmp.", 5) != 0)
        return 0;
    const char *digits = name + n + 5;
    size_t len = strspn(digits, "0123456789");
    if (len == 0 || len > 9 || digits[len] != '\0')
        return 0;
    return strtol(digits, NULL, 10);
}

int afile_sweep_stale(const char *dir, const char *prefix, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d)
        return errbuf_set(err, errlen, -errno, "cannot read directory %s: %s", dir,
                          strerror(errno));
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long pid = afile_stale_pid(de->d_name, prefix);
        struct stat st;
        if (pid <= 0 || pid == (long)getpid() ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) /* alive, or not ours to know (EPERM) */
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int afile_mkdirs(const char *dir, char *err, size_t errlen) {
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
        return errbuf_set(err, errlen, -ENAMETOOLONG, "%s: path too long", dir);
    for (char *p = buf + 1;; p++) {
        bool last = *p == '\0';
        if (*p == '/' || last) {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return errbuf_set(err, errlen, -errno, "cannot create directory %s: %s", buf,
                                  strerror(errno));
            *p = saved;
        }
        if (last)
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return errbuf_set(err, errlen, -ENOTDIR, "%s: not a directory", dir);
    return 0;
}

int afile_probe_dir(const char *dir, char *err, size_t errlen) {
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/.ringside-probe.%ld", dir, (long)getpid()) >=
        (int)sizeof(path))
        return errbuf_set(err, errlen, -ENAMETOOLONG, "%s: path too long", dir);
    char why[sizeof(path) + 128];
    int fd = afile_open_fd(path, O_EXCL, 0600, why, sizeof(why));
    if (fd == -EEXIST && unlink(path) == 0)
        fd = afile_open_fd(path, O_EXCL, 0600, why, sizeof(why));
    if (fd < 0)
        return errbuf_set(err, errlen, fd, "cannot write in %s: %s", dir, strerror(-fd));
    close(fd);
    unlink(path);
    return 0;
}
