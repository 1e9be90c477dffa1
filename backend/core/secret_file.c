/* Secret files read at start-up (see secret_file.h): opened without blocking, checked to be a
 * regular file, their mode warned of, read whole into one buffer sized by the file (no
 * reallocation leaves copies of a key behind) and wiped when released. */
#include "backend/core/secret_file.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One line when the file's group or others may read or change it. */
static void secret_file_warn_mode(const char *path, const char *what, mode_t mode) {
    if (!(mode & 066))
        return;
    fprintf(stderr,
            "ringside: warning: the %s %s can be %s by other users (mode %04o): chmod 600 it\n",
            what, path,
            !(mode & 022)   ? "read"
            : !(mode & 044) ? "changed"
                            : "read and changed",
            (unsigned)(mode & 07777));
}

/* secret_file_open, with the file's stat into *st. */
static int secret_file_open_st(const char *path, const char *what, bool secret, struct stat *st,
                               char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errbuf_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return errbuf_set(err, errlen, -EINVAL, "%s: not a regular file", path);
    }
    if (secret)
        secret_file_warn_mode(path, what, st->st_mode);
    return fd;
}

int secret_file_open(const char *path, const char *what, bool secret, char *err, size_t errlen) {
    struct stat st;
    return secret_file_open_st(path, what, secret, &st, err, errlen);
}

int secret_file_read(const char *path, const char *what, bool secret, size_t max_bytes, char **out,
                     size_t *len, char *err, size_t errlen) {
    *out = NULL;
    *len = 0;
    struct stat st;
    int fd = secret_file_open_st(path, what, secret, &st, err, errlen);
    if (fd < 0)
        return fd;
    int rc = 0;
    if (st.st_size == 0)
        rc = errbuf_set(err, errlen, -ENODATA, "%s: empty", path);
    else if ((uint64_t)st.st_size > max_bytes)
        rc = errbuf_set(err, errlen, -EFBIG, "%s: over %zu bytes", path, max_bytes);
    size_t size = rc == 0 ? (size_t)st.st_size : 0, got = 0;
    char *buf = rc == 0 ? malloc(size + 1) : NULL;
    if (rc == 0 && !buf)
        rc = errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", path);
    while (rc == 0 && got < size) { /* what it held at the fstat: a file growing now is cut */
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = errbuf_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
        else if (n == 0)
            size = got; /* it shrank */
        else
            got += (size_t)n;
    }
    close(fd);
    if (rc == 0 && got == 0)
        rc = errbuf_set(err, errlen, -ENODATA, "%s: empty", path);
    if (rc != 0) {
        secret_file_free(buf, got);
        return rc;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return 0;
}

void secret_file_free(char *p, size_t len) {
    if (!p)
        return;
    explicit_bzero(p, len);
    free(p);
}
