/* Test helpers: temp directories, fixture paths and a subprocess runner for CLI tests. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "tests/support/rs_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int rs_test_tmpdir(char *out, size_t outlen) {
    const char *base = getenv("TMPDIR");
    snprintf(out, outlen, "%s/ringside-test.XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(out) ? 0 : -errno;
}

static int rs_test_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void rs_test_rmtree(const char *dir) {
    nftw(dir, rs_test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int rs_test_write_file(const char *dir, const char *name, const char *text, char *out,
                       size_t outlen) {
    snprintf(out, outlen, "%s/%s", dir, name);
    FILE *f = fopen(out, "wb");
    if (!f)
        return -errno;
    size_t n = strlen(text);
    int rc = fwrite(text, 1, n, f) == n ? 0 : -EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

const char *rs_test_fixture(const char *rel, char *out, size_t outlen) {
    snprintf(out, outlen, "%s/%s", RS_FIXTURES, rel);
    return out;
}

/* Read both pipes until EOF so a chatty child never blocks on a full pipe. With a deadline
 * (CLOCK_MONOTONIC ms, 0 = none) the child is killed once it has passed (*late set), and its
 * pipes are read to their end as it dies. */
static long long rs_test_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void rs_test_collect(int fd_out, int fd_err, char *out, size_t outlen, char *errb,
                            size_t errlen, pid_t pid, long long deadline, bool *late) {
    size_t n_out = 0, n_err = 0;
    struct pollfd pf[2] = {{fd_out, POLLIN, 0}, {fd_err, POLLIN, 0}};
    int open_fds = 2;
    for (;;) {
        int wait_ms = -1;
        if (deadline && !*late) {
            long long left = deadline - rs_test_now_ms();
            wait_ms = left > 0 ? (int)left : 0;
        }
        int ready = open_fds > 0 ? poll(pf, 2, wait_ms) : 0;
        if (ready == 0 && open_fds > 0 && deadline && !*late) {
            kill(pid, SIGKILL); /* past the bound: the test fails on *late */
            *late = true;
            continue;
        }
        if (ready <= 0)
            break;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[4096];
            ssize_t got = read(pf[i].fd, buf, sizeof(buf));
            if (got <= 0) {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
                continue;
            }
            char *dst = i == 0 ? out : errb;
            size_t cap = i == 0 ? outlen : errlen;
            size_t *len = i == 0 ? &n_out : &n_err;
            size_t take = *len + 1 < cap ? cap - 1 - *len : 0;
            if ((size_t)got < take)
                take = (size_t)got;
            memcpy(dst + *len, buf, take);
            *len += take;
        }
    }
    if (outlen)
        out[n_out] = '\0';
    if (errlen)
        errb[n_err] = '\0';
}

static int rs_test_run_until(const char *const *argv, long long deadline, char *out, size_t outlen,
                             char *errb, size_t errlen) {
    char exe[4096];
    snprintf(exe, sizeof(exe), "%s/ringside", RS_BINARY_DIR);
    int po[2], pe[2];
    if (pipe(po) != 0 || pipe(pe) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        const char *args[64] = {exe};
        for (int i = 0; argv[i] && i < 62; i++)
            args[i + 1] = argv[i];
        execv(exe, (char *const *)args);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    bool late = false;
    rs_test_collect(po[0], pe[0], out, outlen, errb, errlen, pid, deadline, &late);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (late)
        return -2;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

int rs_test_run(const char *const *argv, char *out, size_t outlen, char *errb, size_t errlen) {
    return rs_test_run_until(argv, 0, out, outlen, errb, errlen);
}

int rs_test_run_within(const char *const *argv, int limit_ms, char *out, size_t outlen, char *errb,
                       size_t errlen) {
    return rs_test_run_until(argv, rs_test_now_ms() + limit_ms, out, outlen, errb, errlen);
}

int rs_test_count_tmp(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d)) != NULL;)
        n += strstr(de->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

int rs_test_as_nobody(void (*fn)(void *ctx, void *out), void *ctx, void *out, size_t len) {
    int pfd[2];
    if (pipe(pfd) != 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int rc = -errno;
        close(pfd[0]);
        close(pfd[1]);
        return rc;
    }
    if (pid == 0) {
        close(pfd[0]);
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        char *buf = calloc(1, len ? len : 1);
        if (!buf)
            _exit(1);
        fn(ctx, buf);
        for (size_t done = 0; done < len;) {
            ssize_t w = write(pfd[1], buf + done, len - done);
            if (w <= 0)
                _exit(1);
            done += (size_t)w;
        }
        _exit(0);
    }
    close(pfd[1]);
    size_t got = 0;
    for (ssize_t n; got < len && (n = read(pfd[0], (char *)out + got, len - got)) > 0;)
        got += (size_t)n;
    close(pfd[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -EIO;
    if (WEXITSTATUS(status) == 2)
        return -EPERM;
    return WEXITSTATUS(status) == 0 && got == len ? 0 : -EIO;
}
