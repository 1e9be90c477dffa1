/* Tests for the stderr tee of headless runs: every byte reaches the former stderr and the
 * session log, the GPU runtime's own message in it is classified by the kernel-log watcher (and
 * ringside's own report of it is not read back), a planted link, FIFO or directory is refused
 * at once with stderr left as it was, and the log is created 0600. */
#include "backend/core/evring.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/run/errtee.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(errtee, .timeout = 30);

/* A HIP runtime line as the runtime prints it (tests/fixtures/kmsg/real/hip-pagefault-3.log). */
#define TE_FAULT                                                                                   \
    "Memory access fault by GPU node-1 (Agent handle: 0x55f8b54eec30) on address "                 \
    "0x7f2a53193000. Reason: Page not present or supervisor privilege.\n"

/* Descriptor 2 into a new file dir/name; the former stderr's copy in *saved. */
static void te_stderr_to(const char *dir, const char *name, char *path, size_t len, int *saved) {
    snprintf(path, len, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    *saved = dup(2);
    cr_assert_geq(*saved, 0);
    cr_assert_eq(dup2(fd, 2), 2);
    close(fd);
}

static void te_stderr_back(int saved) {
    dup2(saved, 2);
    close(saved);
}

static void te_read(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

Test(errtee, every_byte_reaches_both_places_and_stderr_comes_back) {
    char dir[512], term[600], log[600], got[4096];
    int saved;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    te_stderr_to(dir, "terminal", term, sizeof(term), &saved);
    snprintf(log, sizeof(log), "%s/session.log", dir);
    struct errtee *t = NULL;
    char err[256] = "";
    int rc = errtee_start(&t, log, err, sizeof(err));
    cr_assert_eq(rc, 0, "%s", err);
    fprintf(stderr, "first line\n");
    fflush(stderr);
    cr_assert_eq(write(2, "second ", 7), 7);
    cr_assert_eq(write(2, "line\n", 5), 5);
    cr_assert_eq(write(errtee_terminal_fd(), "direct\n", 7), 7); /* the terminal only */
    errtee_stop(t);
    cr_assert_eq(errtee_terminal_fd(), 2);
    cr_assert_eq(write(2, "after\n", 6), 6); /* descriptor 2 is the former stderr again */
    te_stderr_back(saved);
    te_read(term, got, sizeof(got));
    /* "direct" lands wherever the tee's copies of the lines were at the time; never in the log */
    char *d = strstr(got, "direct\n");
    cr_assert_not_null(d, "%s", got);
    memmove(d, d + 7, strlen(d + 7) + 1);
    cr_assert_str_eq(got, "first line\nsecond line\nafter\n");
    te_read(log, got, sizeof(got));
    cr_assert_str_eq(got, "first line\nsecond line\n");
    rs_test_rmtree(dir);
}

Test(errtee, the_runtime_message_is_classified_by_the_watcher) {
    char dir[512], term[600], log[600], err[512] = "";
    int saved;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    te_stderr_to(dir, "terminal", term, sizeof(term), &saved);
    snprintf(log, sizeof(log), "%s/session.log", dir);
    char old[600];
    cr_assert_eq(rs_test_write_file(dir, "session.log", TE_FAULT, old, sizeof(old)), 0);
    struct errtee *t = NULL;
    cr_assert_eq(errtee_start(&t, log, err, sizeof(err)), 0, "%s", err);
    struct kmsg_conf c = {.off = true};
    snprintf(c.session_log, sizeof(c.session_log), "%s", log);
    struct evring *ring = NULL;
    cr_assert_eq(evring_create(&ring, 64), 0);
    struct kmsg_watch *w = NULL;
    cr_assert_eq(kmsg_watch_create(&w, &c, ring, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(kmsg_watch_start(w), 0);
    fprintf(stderr, "%s", TE_FAULT);
    fprintf(stderr, "ringside: kernel error: page_fault: %s", TE_FAULT); /* our own report */
    fflush(stderr);
    errtee_stop(t);     /* every byte is in the log now */
    kmsg_watch_stop(w); /* and what the log holds is read, its events on the ring */
    te_stderr_back(saved);
    struct ev evs[64];
    size_t n = evring_drain(ring, evs, 64), faults = 0;
    for (size_t i = 0; i < n; i++)
        if (evs[i].kind == EV_KMSG && evs[i].u.kmsg.category == KMSG_CAT_PAGE_FAULT &&
            evs[i].u.kmsg.source == KMSG_SRC_STDERR && evs[i].u.kmsg.node == 1)
            faults++;
    cr_assert_eq(faults, 1, "%zu events, %zu of them the runtime's fault", n, faults);
    kmsg_watch_destroy(w);
    evring_destroy(ring);
    rs_test_rmtree(dir);
}

Test(errtee, a_planted_link_is_refused_and_stderr_left_alone) {
    char dir[512], log[600], term[600], got[256], err[512] = "";
    int saved;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    te_stderr_to(dir, "terminal", term, sizeof(term), &saved);
    snprintf(log, sizeof(log), "%s/session.log", dir);
    cr_assert_eq(symlink("/nonexistent-target", log), 0);
    struct errtee *t = (struct errtee *)1;
    cr_assert_eq(errtee_start(&t, log, err, sizeof(err)), -ELOOP);
    cr_assert_null(t);
    cr_assert(strstr(err, log) && strstr(err, "not followed"), "%s", err);
    cr_assert_eq(write(2, "still here\n", 11), 11);
    te_stderr_back(saved);
    te_read(term, got, sizeof(got));
    cr_assert_str_eq(got, "still here\n");
    rs_test_rmtree(dir);
}

/* A FIFO planted as the session log (nobody reads it) is refused at once, not waited on; so is
 * a directory. stderr is left as it was. */
Test(errtee, a_planted_fifo_or_directory_is_refused_at_once) {
    char dir[512], log[600], term[600], got[256], err[1024] = "", want[1200];
    int saved;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    te_stderr_to(dir, "terminal", term, sizeof(term), &saved);
    snprintf(log, sizeof(log), "%s/session.log", dir);
    cr_assert_eq(mkfifo(log, 0666), 0);
    struct errtee *t = (struct errtee *)1;
    cr_assert_eq(errtee_start(&t, log, err, sizeof(err)), -EINVAL);
    cr_assert_null(t);
    snprintf(want, sizeof(want), "%s: a FIFO is there, not a regular file: left as it is", log);
    cr_assert_str_eq(err, want);
    cr_assert_eq(unlink(log), 0);
    cr_assert_eq(mkdir(log, 0700), 0);
    cr_assert_eq(errtee_start(&t, log, err, sizeof(err)), -EISDIR);
    cr_assert_null(t);
    cr_assert(strstr(err, "a directory is there"), "%s", err);
    cr_assert_eq(write(2, "still here\n", 11), 11);
    te_stderr_back(saved);
    te_read(term, got, sizeof(got));
    cr_assert_str_eq(got, "still here\n");
    rs_test_rmtree(dir);
}

/* The session log is for this user alone (it holds the runtime's messages): created 0600
 * whatever the umask, and one an earlier version made 0644 is made 0600. */
Test(errtee, the_session_log_is_private) {
    char dir[512], log[600], term[600], err[512] = "";
    int saved;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    te_stderr_to(dir, "terminal", term, sizeof(term), &saved);
    snprintf(log, sizeof(log), "%s/session.log", dir);
    mode_t old = umask(0);
    struct errtee *t = NULL;
    struct stat st;
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(errtee_start(&t, log, err, sizeof(err)), 0, "%s", err);
        errtee_stop(t);
        cr_assert_eq(stat(log, &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0600, "%o", (unsigned)(st.st_mode & 0777));
        cr_assert_eq(chmod(log, 0644), 0);
    }
    umask(old);
    te_stderr_back(saved);
    rs_test_rmtree(dir);
}
