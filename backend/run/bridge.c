/* The bridge's socket: accept, read lines, send commands; see bridge.h. */
#define _GNU_SOURCE /* struct ucred */
#include "backend/run/bridge.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define BRIDGE_READ 65536 /* bytes a read takes */

struct bridge_conn {
    int fd; /* -1: free slot */
    char *buf;
    size_t len, cap;
    size_t scanned; /* buf[0, scanned) holds no newline: a line read in pieces is scanned once */
    bool skipping;  /* inside an overlong line: drop up to its newline */
};

struct bridge {
    int listen_fd;
    char path[BRIDGE_PATH_MAX];
    dev_t sock_dev; /* the socket file this bridge made: removed at close only if still there */
    ino_t sock_ino;
    struct bridge_conn c[BRIDGE_MAX_JOBS];
};

int bridge_default_path(char *out, size_t outlen) {
    const char *rt = getenv("XDG_RUNTIME_DIR");
    int n = rt && rt[0] == '/'
                ? snprintf(out, outlen, "%s/ringside/bridge.sock", rt)
                : snprintf(out, outlen, "/tmp/ringside-%u/bridge.sock", (unsigned)getuid());
    return n < 0 || (size_t)n >= outlen || (size_t)n >= BRIDGE_PATH_MAX ? -ENAMETOOLONG : 0;
}

/* The socket's directory, private: made 0700, or an existing one that another user cannot
 * use to reach the socket. The default one (own: true) must be ours, not a symlink, with no
 * access for group or others: a directory someone else made in /tmp would let them replace
 * the socket and take the job's stream and its controls. One the user names must not be a
 * symlink, nor writable by others unless sticky (as /tmp is). */
static int bridge_dir(const char *path, bool own, char *err, size_t errlen) {
    char dir[BRIDGE_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return errbuf_set(err, errlen, -errno, "cannot create %s: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errbuf_set(err, errlen, -errno, "%s: %s", dir, strerror(errno));
    if (S_ISLNK(st.st_mode))
        return errbuf_set(err, errlen, -EPERM,
                          "%s: a symbolic link, not a directory of yours: remove it (the bridge "
                          "socket goes only in a directory you own)",
                          dir);
    if (!S_ISDIR(st.st_mode))
        return errbuf_set(err, errlen, -ENOTDIR, "%s: not a directory", dir);
    if (own && st.st_uid != geteuid())
        return errbuf_set(err, errlen, -EPERM,
                          "%s: owned by uid %u, not by you (uid %u): another user made it; "
                          "remove it, or set XDG_RUNTIME_DIR or --socket",
                          dir, (unsigned)st.st_uid, (unsigned)geteuid());
    if (own && (st.st_mode & 077))
        return errbuf_set(err, errlen, -EPERM,
                          "%s: mode %04o lets others in: chmod 700 it (or remove it)", dir,
                          (unsigned)(st.st_mode & 07777));
    if (!own && (st.st_mode & 022) && !(st.st_mode & S_ISVTX))
        return errbuf_set(err, errlen, -EPERM,
                          "%s: others can write there (mode %04o), so they could replace the "
                          "socket: choose a directory only you can write",
                          dir, (unsigned)(st.st_mode & 07777));
    return 0;
}

/* A socket file at path that nobody answers on is left from a process that is gone. */
static int bridge_clear_stale(const struct sockaddr_un *sa, char *err, size_t errlen) {
    struct stat st;
    if (lstat(sa->sun_path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode))
        return errbuf_set(err, errlen, -EEXIST, "%s exists and is not a socket", sa->sun_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool alive = fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
    if (fd >= 0)
        close(fd);
    if (alive)
        return errbuf_set(err, errlen, -EADDRINUSE,
                          "%s: another ringside is listening there (use --socket PATH)",
                          sa->sun_path);
    unlink(sa->sun_path);
    return 0;
}

int bridge_open(struct bridge **out, const char *path, char *err, size_t errlen) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char def[BRIDGE_PATH_MAX];
    *out = NULL;
    bool own = !path || !path[0];
    if (own) {
        if (bridge_default_path(def, sizeof(def)) != 0)
            return errbuf_set(err, errlen, -ENAMETOOLONG, "the socket path is too long");
        path = def;
    }
    if (strlen(path) >= sizeof(sa.sun_path))
        return errbuf_set(err, errlen, -ENAMETOOLONG,
                          "%s: longer than a socket path can be "
                          "(%zu bytes)",
                          path, sizeof(sa.sun_path) - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int rc = bridge_dir(path, own, err, errlen);
    rc = rc ? rc : bridge_clear_stale(&sa, err, errlen);
    if (rc != 0)
        return rc;
    struct bridge *b = calloc(1, sizeof(*b));
    if (!b)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++)
        b->c[k].fd = -1;
    snprintf(b->path, sizeof(b->path), "%s", path);
    mode_t old = umask(0177); /* the socket is created 0600: only this user connects */
    b->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (b->listen_fd < 0 || bind(b->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(b->listen_fd, BRIDGE_MAX_JOBS) != 0)
        rc = errbuf_set(err, errlen, -errno, "cannot listen at %s: %s", path, strerror(errno));
    umask(old);
    if (rc != 0) {
        if (b->listen_fd >= 0)
            close(b->listen_fd);
        free(b);
        return rc;
    }
    struct stat sst;
    if (lstat(path, &sst) == 0) {
        b->sock_dev = sst.st_dev;
        b->sock_ino = sst.st_ino;
    }
    *out = b;
    return 0;
}

static void bridge_drop(struct bridge *b, unsigned k) {
    struct bridge_conn *c = &b->c[k];
    close(c->fd);
    free(c->buf);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

void bridge_close(struct bridge *b) {
    if (!b)
        return;
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++)
        if (b->c[k].fd >= 0)
            bridge_drop(b, k);
    close(b->listen_fd);
    struct stat sst; /* a dashboard that took the path over since keeps its socket */
    if (lstat(b->path, &sst) == 0 && sst.st_dev == b->sock_dev && sst.st_ino == b->sock_ino)
        unlink(b->path);
    free(b);
}

const char *bridge_path(const struct bridge *b) {
    return b->path;
}

size_t bridge_fds(const struct bridge *b, int *fds) {
    size_t n = 0;
    fds[n++] = b->listen_fd;
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++)
        if (b->c[k].fd >= 0)
            fds[n++] = b->c[k].fd;
    return n;
}

static void bridge_accept(struct bridge *b, const struct bridge_sink *s) {
    int fd;
    while ((fd = accept4(b->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        unsigned k = 0;
        while (k < BRIDGE_MAX_JOBS && b->c[k].fd >= 0)
            k++;
        if (k == BRIDGE_MAX_JOBS) { /* full: the job's bridge sees the close and goes quiet */
            close(fd);
            continue;
        }
        struct ucred cred = {0};
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
            cred.pid = 0, cred.uid = geteuid();
        if (cred.uid != geteuid() && cred.uid != 0) { /* a stranger: not even read */
            close(fd);
            if (s->refused)
                s->refused(s->ctx, cred.pid, cred.uid);
            continue;
        }
        b->c[k].fd = fd;
        if (s->opened)
            s->opened(s->ctx, k, cred.pid);
    }
}

/* Hand every complete line in c's buffer to the sink; keep the rest. */
static void bridge_lines(struct bridge_conn *c, unsigned k, const struct bridge_sink *s) {
    size_t start = 0;
    const char *nl;
    while ((nl = memchr(c->buf + c->scanned, '\n', c->len - c->scanned)) != NULL) {
        size_t i = (size_t)(nl - c->buf);
        if (c->skipping)
            c->skipping = false;
        else if (s->line)
            s->line(s->ctx, k, c->buf + start, i - start);
        start = c->scanned = i + 1;
    }
    memmove(c->buf, c->buf + start, c->len - start);
    c->len -= start;
    c->scanned = c->len;
    if (c->len >= BRIDGE_LINE_MAX) { /* no newline in sight: skip to the next one */
        if (!c->skipping && s->overlong)
            s->overlong(s->ctx, k);
        c->skipping = true;
        c->len = c->scanned = 0;
    }
}

/* Read what connection k has (up to budget bytes); false when it closed. */
static bool bridge_read(struct bridge_conn *c, unsigned k, const struct bridge_sink *s,
                        size_t *budget) {
    while (*budget > 0) {
        if (c->cap - c->len < BRIDGE_READ) {
            size_t cap = c->len + BRIDGE_READ;
            char *nb = realloc(c->buf, cap);
            if (!nb)
                return false;
            c->buf = nb;
            c->cap = cap;
        }
        ssize_t n = read(c->fd, c->buf + c->len, BRIDGE_READ);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return false;
        if (n < 0)
            return true;
        c->len += (size_t)n;
        *budget = (size_t)n < *budget ? *budget - (size_t)n : 0;
        bridge_lines(c, k, s);
    }
    return true;
}

size_t bridge_poll(struct bridge *b, const struct bridge_sink *s, size_t max_bytes) {
    bridge_accept(b, s);
    size_t budget = max_bytes;
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++) {
        if (b->c[k].fd < 0)
            continue;
        if (!bridge_read(&b->c[k], k, s, &budget)) {
            bridge_drop(b, k);
            if (s->closed)
                s->closed(s->ctx, k);
        }
    }
    return max_bytes - budget;
}

int bridge_send(struct bridge *b, unsigned job, const char *line) {
    if (job >= BRIDGE_MAX_JOBS || b->c[job].fd < 0)
        return -ENOTCONN;
    size_t len = strlen(line);
    char *msg = malloc(len + 1);
    if (!msg)
        return -ENOMEM;
    memcpy(msg, line, len);
    msg[len] = '\n';
    /* one send: a UNIX stream socket takes a short line whole or not at all when it is full */
    ssize_t n = send(b->c[job].fd, msg, len + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    free(msg);
    if (n == (ssize_t)(len + 1))
        return 0;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -EAGAIN : -ENOTCONN;
}
