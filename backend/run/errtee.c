/* stderr through a pipe and a thread that copies it to two places (errtee.h). */
#define _GNU_SOURCE
#include "backend/run/errtee.h"

#include "backend/core/afile.h"
#include "backend/core/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct errtee {
    int rd;    /* the pipe's read end */
    int saved; /* the former stderr */
    int file;  /* the session log */
    pthread_t thread;
};

static volatile sig_atomic_t errtee_terminal = 2; /* errtee_terminal_fd */

int errtee_terminal_fd(void) {
    return errtee_terminal;
}

/* All of buf to fd, through short writes and signals; a failed place is given up on. */
static void errtee_put(int *fd, const char *buf, size_t n) {
    while (*fd >= 0 && n > 0) {
        ssize_t w = write(*fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            *fd = -1; /* closed by errtee_stop, not here: only the thread writes */
            return;
        }
        buf += w;
        n -= (size_t)w;
    }
}

/* Until every writer of the pipe is gone. */
static void *errtee_main(void *arg) {
    struct errtee *t = arg;
    int to[2] = {t->saved, t->file};
    char buf[4096];
    for (;;) {
        ssize_t n = read(t->rd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        errtee_put(&to[0], buf, (size_t)n);
        errtee_put(&to[1], buf, (size_t)n);
    }
    return NULL;
}

int errtee_start(struct errtee **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    struct errtee *t = calloc(1, sizeof(*t));
    if (!t)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    int p[2] = {-1, -1};
    t->saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
    t->file = afile_open_fd(path, O_APPEND, 0600, err, errlen);
    int rc = t->file < 0 ? t->file : 0;
    if (rc == 0 && (t->saved < 0 || pipe2(p, O_CLOEXEC) != 0))
        rc = errbuf_set(err, errlen, -errno, "stderr: %s", strerror(errno));
    t->rd = p[0];
    if (rc == 0 && dup2(p[1], 2) < 0)
        rc = errbuf_set(err, errlen, -errno, "stderr: %s", strerror(errno));
    if (p[1] >= 0)
        close(p[1]); /* descriptor 2 holds the write end now */
    if (rc == 0 && (rc = -pthread_create(&t->thread, NULL, errtee_main, t)) != 0) {
        dup2(t->saved, 2);
        errbuf_set(err, errlen, rc, "stderr: %s", strerror(-rc));
    }
    if (rc == 0) {
        errtee_terminal = t->saved;
        *out = t;
        return 0;
    }
    if (t->rd >= 0)
        close(t->rd);
    if (t->saved >= 0)
        close(t->saved);
    if (t->file >= 0)
        close(t->file);
    free(t);
    return rc;
}

void errtee_stop(struct errtee *t) {
    if (!t)
        return;
    /* The pipe's last write end goes with descriptor 2 (children that inherited it keep their
     * copies: the thread then ends when they do). */
    dup2(t->saved, 2);
    errtee_terminal = 2;
    pthread_join(t->thread, NULL);
    close(t->rd);
    close(t->saved);
    close(t->file);
    free(t);
}
