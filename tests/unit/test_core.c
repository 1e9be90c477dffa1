/* Tests for the core module: event ring, snapshots, CRC32, atomic files, JSON text. */
#include "backend/core/afile.h"
#include "backend/core/crc32.h"
#include "backend/core/errbuf.h"
#include "backend/core/ev.h"
#include "backend/core/evring.h"
#include "backend/core/json_out.h"
#include "backend/core/pbuf.h"
#include "backend/core/quit_signal.h"
#include "backend/core/rng.h"
#include "backend/core/secret_file.h"
#include "backend/core/snap.h"
#include "backend/core/utf8.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(core, .timeout = 30);

static struct ev core_ev(uint16_t dev, int64_t step) {
    struct ev e = {.t_ns = 1, .kind = EV_PHASE, .dev = dev};
    e.u.phase.step = step;
    return e;
}

Test(core, ring_keeps_order_and_assigns_seq) {
    struct evring *r;
    cr_assert_eq(evring_create(&r, 8), 0);
    for (int i = 0; i < 5; i++) {
        struct ev e = core_ev(0, i);
        evring_push(r, &e);
    }
    struct ev out[8];
    cr_assert_eq(evring_drain(r, out, 8), 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(out[i].u.phase.step, i);
        cr_assert_eq(out[i].seq, (uint32_t)i);
    }
    cr_assert_eq(evring_drain(r, out, 8), 0);
    cr_assert_eq(evring_dropped(r), 0);
    evring_destroy(r);
}

Test(core, ring_full_drops_oldest_and_counts) {
    struct evring *r;
    cr_assert_eq(evring_create(&r, 4), 0);
    for (int i = 0; i < 10; i++) {
        struct ev e = core_ev(0, i);
        evring_push(r, &e);
    }
    struct ev out[8];
    cr_assert_eq(evring_drain(r, out, 8), 4);
    cr_assert_eq(evring_dropped(r), 6);
    /* the newest four survive, and the seq gap shows what was lost */
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(out[i].u.phase.step, 6 + i);
        cr_assert_eq(out[i].seq, (uint32_t)(6 + i));
    }
    evring_destroy(r);
}

/* Events of several sizes (a phase, a log line, a kernel-log record) round a small ring many
 * times over, the big ones across its end: each comes out whole, in order, and the newest ones
 * are kept when it is full, by count as for events of one size. */
Test(core, ring_carries_events_of_every_size_round_its_end) {
    struct evring *r;
    cr_assert_eq(evring_create(&r, 3), 0);
    struct ev out[4];
    uint32_t pushed = 0, next = 0; /* the next event to come out, by its seq */
    uint64_t lost = 0;
    for (int round = 0; round < 200; round++) {
        int burst = 1 + round % 5;
        for (int k = 0; k < burst; k++, pushed++) {
            struct ev e = {.t_ns = pushed, .dev = (uint16_t)pushed};
            e.kind = pushed % 3 == 0 ? EV_PHASE : pushed % 3 == 1 ? EV_LOG : EV_KMSG;
            if (e.kind == EV_PHASE)
                e.u.phase.step = pushed;
            else if (e.kind == EV_LOG)
                snprintf(e.u.text.text, sizeof(e.u.text.text), "line %u", pushed);
            else
                snprintf(e.u.kmsg.message, sizeof(e.u.kmsg.message), "kmsg %u", pushed);
            evring_push(r, &e);
        }
        if (pushed - next > 3) { /* the oldest beyond the three kept are dropped */
            lost += pushed - next - 3;
            next = pushed - 3;
        }
        size_t n = evring_drain(r, out, (size_t)(1 + round % 3));
        for (size_t i = 0; i < n; i++, next++) {
            char want[32];
            cr_assert_eq(out[i].seq, next);
            cr_assert_eq(out[i].t_ns, next);
            cr_assert_eq(out[i].dev, (uint16_t)next);
            if (next % 3 == 0) {
                cr_assert_eq(out[i].kind, EV_PHASE);
                cr_assert_eq(out[i].u.phase.step, next);
            } else if (next % 3 == 1) {
                cr_assert_eq(out[i].kind, EV_LOG);
                snprintf(want, sizeof(want), "line %u", next);
                cr_assert_str_eq(out[i].u.text.text, want);
            } else {
                cr_assert_eq(out[i].kind, EV_KMSG);
                snprintf(want, sizeof(want), "kmsg %u", next);
                cr_assert_str_eq(out[i].u.kmsg.message, want);
            }
        }
    }
    cr_assert_eq(evring_dropped(r), lost);
    evring_destroy(r);
}

Test(core, ring_wake_fd_readable_only_while_pending) {
    struct evring *r;
    cr_assert_eq(evring_create(&r, 4), 0);
    struct pollfd pf = {evring_wake_fd(r), POLLIN, 0};
    cr_assert_eq(poll(&pf, 1, 0), 0);
    struct ev e = core_ev(0, 1), out[4];
    evring_push(r, &e);
    cr_assert_eq(poll(&pf, 1, 0), 1);
    evring_drain(r, out, 4);
    cr_assert_eq(poll(&pf, 1, 0), 0);
    evring_destroy(r);
}

/* With a threshold the wake fd turns readable at the n-th pending event, not the first, and
 * a drain that leaves fewer pending resets it. */
Test(core, ring_wake_fd_readable_from_the_threshold_on) {
    struct evring *r;
    cr_assert_eq(evring_create(&r, 8), 0);
    evring_wake_at(r, 3);
    struct pollfd pf = {evring_wake_fd(r), POLLIN, 0};
    struct ev e = core_ev(0, 1), out[8];
    evring_push(r, &e);
    evring_push(r, &e);
    cr_assert_eq(poll(&pf, 1, 0), 0, "two pending, the threshold is three");
    evring_push(r, &e);
    cr_assert_eq(poll(&pf, 1, 0), 1);
    evring_push(r, &e);
    cr_assert_eq(evring_drain(r, out, 1), 1);
    cr_assert_eq(poll(&pf, 1, 0), 1, "three still pending");
    cr_assert_eq(evring_drain(r, out, 2), 2);
    cr_assert_eq(poll(&pf, 1, 0), 0, "one pending");
    evring_wake_at(r, 1);
    cr_assert_eq(poll(&pf, 1, 0), 1, "a lower threshold already reached wakes at once");
    evring_destroy(r);
}

Test(core, snap_reader_sees_latest_publish) {
    struct snap *s;
    cr_assert_eq(snap_create(&s, sizeof(int)), 0);
    bool fresh = true;
    const int *v = snap_read(s, &fresh);
    cr_assert_not(fresh);
    cr_assert_eq(*v, 0);
    for (int i = 1; i <= 3; i++) {
        *(int *)snap_write_begin(s) = i;
        snap_publish(s);
    }
    v = snap_read(s, &fresh);
    cr_assert(fresh);
    cr_assert_eq(*v, 3);
    v = snap_read(s, &fresh);
    cr_assert_not(fresh);
    cr_assert_eq(*v, 3);
    snap_destroy(s);
}

Test(core, crc32_known_vectors) {
    cr_assert_eq(crc32_update(0, "123456789", 9), 0xCBF43926u);
    cr_assert_eq(crc32_update(0, "", 0), 0u);
    /* incremental equals one-shot */
    uint32_t c = crc32_update(0, "1234", 4);
    cr_assert_eq(crc32_update(c, "56789", 5), 0xCBF43926u);
}

/* The whole of path into buf as a string (at most cap - 1 bytes); the byte count, or -1. */
static long core_slurp_str(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return (long)n;
}

Test(core, afile_replaces_atomically_and_cleans_up) {
    char dir[256], path[512], buf[64];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/out.bin", dir);
    cr_assert_eq(afile_write_all(path, "first", 5, NULL, 0), 0);
    struct afile af;
    cr_assert_eq(afile_open(&af, path, NULL, 0), 0);
    fputs("second", af.fp);
    /* until commit the old content is what readers see */
    FILE *f = fopen(path, "rb");
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    cr_assert_eq(n, 5);
    cr_assert_eq(memcmp(buf, "first", 5), 0);
    afile_abort(&af);
    cr_assert_neq(access(af.tmp_path, F_OK), 0);
    cr_assert_eq(afile_write_all(path, "second", 6, NULL, 0), 0);
    f = fopen(path, "rb");
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    cr_assert_eq(n, 6);
    rs_test_rmtree(dir);
}

/* A FIFO the user names as the output is written in place (a rename would put a file where it
 * was); through the user's symlink too. */
Test(core, afile_writes_a_fifo_in_place) {
    char dir[256], fifo[512], link[512], buf[16] = "";
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    snprintf(link, sizeof(link), "%s/link", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(symlink(fifo, link), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader, so the writer's open succeeds */
    cr_assert_geq(rd, 0);
    cr_assert_eq(afile_write_all_user(link, "model", 5, NULL, 0), 0);
    cr_assert_eq(read(rd, buf, sizeof(buf)), 5);
    cr_assert_eq(memcmp(buf, "model", 5), 0);
    close(rd);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
    cr_assert_eq(stat(fifo, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
    cr_assert_eq(rs_test_count_tmp(dir), 0);
    rs_test_rmtree(dir);
}

/* Links planted in the output directory are never written through: one at the temp file's
 * name, one at the target's (replaced by the file, not followed), and the files ringside names
 * itself are never written into a FIFO or device. */
Test(core, afile_never_writes_through_planted_links) {
    char dir[256], victim[512], path[512], tmp[600], buf[64];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "victim", "precious", victim, sizeof(victim)), 0);
    snprintf(path, sizeof(path), "%s/ckpt", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    cr_assert_eq(symlink(victim, tmp), 0);
    cr_assert_eq(afile_write_all(path, "model", 5, NULL, 0), 0);
    cr_assert_eq(symlink(victim, tmp), 0); /* again, now with a target in place */
    cr_assert_eq(afile_write_all(path, "model2", 6, NULL, 0), 0);
    FILE *f = fopen(victim, "rb");
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    cr_assert_eq(n, 8);
    cr_assert_eq(memcmp(buf, "precious", 8), 0, "the victim was written through a link");
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink(victim, path), 0); /* at the target: the link is replaced */
    cr_assert_eq(afile_write_all(path, "model3", 6, NULL, 0), 0);
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the planted link is still there");
    f = fopen(victim, "rb");
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    cr_assert_eq(memcmp(buf, "precious", 8), 0);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0); /* ringside's own file: never into a FIFO */
    cr_assert_eq(afile_write_all(path, "model4", 6, NULL, 0), 0);
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    /* a FIFO planted at the temp name is replaced, not opened: opening it would wait for a
     * reader that never comes (this test would hang) */
    cr_assert_eq(mkfifo(tmp, 0600), 0);
    cr_assert_eq(afile_write_all(path, "model5", 6, NULL, 0), 0);
    f = fopen(path, "rb");
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    cr_assert(n == 6 && memcmp(buf, "model5", 6) == 0);
    cr_assert_eq(rs_test_count_tmp(dir), 0);
    rs_test_rmtree(dir);
}

/* afile_probe_dir as the user at hand: root passes a 0555 directory's permission checks, so
 * there the probe runs as nobody. */
struct tc_probe {
    int rc;
    char why[256];
};

static void tc_probe_fn(void *ctx, void *out) {
    struct tc_probe *p = out;
    p->rc = afile_probe_dir(ctx, p->why, sizeof(p->why));
}

static int tc_probe_as_user(const char *dir, char *err, size_t errlen) {
    if (geteuid() != 0)
        return afile_probe_dir(dir, err, errlen);
    struct tc_probe p;
    cr_assert_eq(rs_test_as_nobody(tc_probe_fn, (void *)dir, &p, sizeof(p)), 0);
    snprintf(err, errlen, "%s", p.why);
    return p.rc;
}

/* A directory the run cannot write in is found before training starts. */
Test(core, afile_probe_dir_finds_an_unwritable_directory) {
    char dir[256], sub[300], err[256] = "";
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(chmod(dir, 0755), 0); /* nobody may pass through to sub */
    snprintf(sub, sizeof(sub), "%s/out", dir);
    cr_assert_eq(mkdir(sub, 0777), 0);
    cr_assert_eq(chmod(sub, 0777), 0);
    cr_assert_eq(tc_probe_as_user(sub, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(rs_test_count_tmp(sub), 0);
    cr_assert_eq(chmod(sub, 0555), 0);
    cr_assert_eq(tc_probe_as_user(sub, err, sizeof(err)), -EACCES);
    cr_assert_not_null(strstr(err, "cannot write in"), "%s", err);
    cr_assert_not_null(strstr(err, "Permission denied"), "%s", err);
    cr_assert_eq(chmod(sub, 0755), 0);
    rs_test_rmtree(dir);
}

Test(core, afile_errors_name_the_path) {
    char err[256];
    cr_assert_lt(afile_write_all("/nonexistent-dir/x/y.bin", "a", 1, err, sizeof(err)), 0);
    cr_assert(strstr(err, "/nonexistent-dir/x/y.bin") != NULL, "%s", err);
}

/* A directory where a file goes is refused at the open, before any work, with nothing left
 * in it (it used to fail only at the rename, after all the work). */
Test(core, afile_refuses_a_directory_at_the_open) {
    char dir[256], err[256];
    struct afile af;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(afile_open_user(&af, dir, err, sizeof(err)), -EISDIR);
    cr_assert(strstr(err, dir) && strstr(err, "is a directory"), "%s", err);
    cr_assert_eq(afile_write_all(dir, "a", 1, err, sizeof(err)), -EISDIR);
    cr_assert_eq(rs_test_count_tmp(dir), 0);
    rs_test_rmtree(dir);
}

/* afile_open_fd, the one open of every file ringside writes: what is not a regular file of
 * this user's is refused at once (a FIFO with no reader used to hold a writer's open for
 * good), in a message naming the path and what is there, and left exactly as it was. */
Test(core, afile_open_fd_refuses_what_is_not_a_file_of_ours) {
    char dir[256], path[512], victim[512], err[1024], buf[64];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "victim", "precious", victim, sizeof(victim)), 0);
    snprintf(path, sizeof(path), "%s/session.log", dir);
    char want[1200];
    cr_assert_eq(mkfifo(path, 0666), 0); /* nobody reads it: an open without O_NONBLOCK waits */
    cr_assert_eq(afile_open_fd(path, O_APPEND, 0600, err, sizeof(err)), -EINVAL);
    snprintf(want, sizeof(want), "%s: a FIFO is there, not a regular file: left as it is", path);
    cr_assert_str_eq(err, want);
    cr_assert(afile_refused(-EINVAL));
    int rd = open(path, O_RDONLY | O_NONBLOCK); /* with a reader it is still refused, unwritten */
    cr_assert_geq(rd, 0);
    cr_assert_eq(afile_open_fd(path, O_TRUNC, 0666, err, sizeof(err)), -EINVAL);
    cr_assert_eq(read(rd, buf, sizeof(buf)), 0, "the FIFO was written");
    close(rd);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink(victim, path), 0);
    cr_assert_eq(afile_open_fd(path, O_TRUNC, 0666, err, sizeof(err)), -ELOOP);
    snprintf(want, sizeof(want), "%s: a symbolic link is there (not followed): left as it is",
             path);
    cr_assert_str_eq(err, want);
    cr_assert_eq(core_slurp_str(victim, buf, sizeof(buf)), 8);
    cr_assert_str_eq(buf, "precious", "the link's target was truncated");
    cr_assert_eq(unlink(path), 0);
    snprintf(want, sizeof(want), "%s/nothing-yet", dir);
    cr_assert_eq(symlink(want, path), 0); /* a dangling link: its target is not created */
    cr_assert_eq(afile_open_fd(path, O_APPEND, 0600, err, sizeof(err)), -ELOOP);
    cr_assert_neq(access(want, F_OK), 0);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(afile_open_fd(path, O_APPEND, 0600, err, sizeof(err)), -EISDIR);
    snprintf(want, sizeof(want), "%s: a directory is there, not a regular file: left as it is",
             path);
    cr_assert_str_eq(err, want);
    cr_assert_eq(rmdir(path), 0);
    cr_assert_eq(afile_open_fd("/dev/null", O_APPEND, 0600, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "/dev/null: a character device is there, not a regular file: left as "
                          "it is");
    if (geteuid() == 0) { /* a file of another user's, even one this user could write */
        cr_assert_eq(rs_test_write_file(dir, "session.log", "theirs", path, sizeof(path)), 0);
        cr_assert_eq(chown(path, 65534, 65534), 0);
        cr_assert_eq(afile_open_fd(path, O_TRUNC, 0600, err, sizeof(err)), -EPERM);
        snprintf(want, sizeof(want),
                 "%s: a file of uid 65534 is there, not of this user (uid 0): left as it is", path);
        cr_assert_str_eq(err, want);
        cr_assert(afile_refused(-EPERM));
        cr_assert_eq(core_slurp_str(path, buf, sizeof(buf)), 6, "truncated before the check");
        cr_assert_eq(unlink(path), 0);
    }
    cr_assert_eq(rs_test_count_tmp(dir), 0);
    rs_test_rmtree(dir);
}

/* A regular file of ours: created with the mode under the umask (a private one 0600, and an
 * existing one made so), appended to or truncated, and blocking again once open. */
Test(core, afile_open_fd_opens_a_file_of_ours) {
    char dir[256], path[512], err[1024] = "", buf[64];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/session.log", dir);
    mode_t old = umask(022);
    int fd = afile_open_fd(path, O_APPEND, 0600, err, sizeof(err));
    cr_assert_geq(fd, 0, "%s", err);
    cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    cr_assert_neq(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    cr_assert_eq(write(fd, "one\n", 4), 4);
    close(fd);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(chmod(path, 0644), 0); /* as an earlier version made it */
    fd = afile_open_fd(path, O_APPEND, 0600, err, sizeof(err));
    cr_assert_geq(fd, 0, "%s", err);
    cr_assert_eq(write(fd, "two\n", 4), 4);
    close(fd);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "still %o", (unsigned)(st.st_mode & 0777));
    cr_assert_eq(core_slurp_str(path, buf, sizeof(buf)), 8);
    cr_assert_str_eq(buf, "one\ntwo\n");
    fd = afile_open_fd(path, O_TRUNC, 0666, err, sizeof(err));
    cr_assert_geq(fd, 0, "%s", err);
    close(fd);
    cr_assert_eq(core_slurp_str(path, buf, sizeof(buf)), 0);
    umask(002);
    snprintf(path, sizeof(path), "%s/other", dir);
    fd = afile_open_fd(path, 0, 0666, err, sizeof(err));
    cr_assert_geq(fd, 0, "%s", err);
    close(fd);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0664, "%o", (unsigned)(st.st_mode & 0777));
    umask(old);
    rs_test_rmtree(dir);
}

/* The atomic files take the umask's mode (0666 under it), a private one (a hang bundle, with
 * its kernel-log lines) 0600 whatever the umask. */
Test(core, afile_modes_follow_the_umask_or_are_private) {
    char dir[256], path[512];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/model.rsmodel", dir);
    mode_t old = umask(002);
    cr_assert_eq(afile_write_all(path, "m", 1, NULL, 0), 0);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0664, "%o", (unsigned)(st.st_mode & 0777));
    umask(0);
    snprintf(path, sizeof(path), "%s/hang.json", dir);
    cr_assert_eq(afile_write_all_private(path, "{}", 2, NULL, 0), 0);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "%o", (unsigned)(st.st_mode & 0777));
    umask(old);
    rs_test_rmtree(dir);
}

/* A stream (--record, --jsonl): a link planted at its path is replaced at the open, so the
 * lines go to a new file under that name as they are written, and the link's target is never
 * written; a FIFO named there is written in place. */
Test(core, afile_open_stream_replaces_a_planted_link) {
    char dir[256], path[512], victim[512], fifo[512], err[1024] = "", buf[64];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "victim", "precious", victim, sizeof(victim)), 0);
    snprintf(path, sizeof(path), "%s/run.jsonl", dir);
    cr_assert_eq(symlink(victim, path), 0);
    struct afile af;
    cr_assert_eq(afile_open_stream(&af, path, err, sizeof(err)), 0, "%s", err);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the link is still there while the stream is written");
    fputs("{\"type\":\"run\"}\n", af.fp);
    fflush(af.fp);
    cr_assert_eq(core_slurp_str(path, buf, sizeof(buf)), 15, "the stream is seen as it grows");
    cr_assert_eq(afile_commit(&af, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(core_slurp_str(victim, buf, sizeof(buf)), 8);
    cr_assert_str_eq(buf, "precious");
    cr_assert_eq(rs_test_count_tmp(dir), 0);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    cr_assert_geq(rd, 0);
    cr_assert_eq(afile_open_stream(&af, fifo, err, sizeof(err)), 0, "%s", err);
    fputs("line\n", af.fp);
    cr_assert_eq(afile_commit(&af, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(read(rd, buf, sizeof(buf)), 5);
    close(rd);
    cr_assert_eq(lstat(fifo, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode));
    snprintf(path, sizeof(path), "%s/no/such/run.jsonl", dir);
    cr_assert_eq(afile_open_stream(&af, path, err, sizeof(err)), -ENOENT);
    char want[700];
    snprintf(want, sizeof(want), "cannot write %s: %s", path, strerror(ENOENT));
    cr_assert_str_eq(err, want);
    rs_test_rmtree(dir);
}

/* The whole of path into buf (at most cap bytes); the byte count, or -1. */
static long core_slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return (long)n;
}

/* What a child writing under a small RLIMIT_FSIZE saw: a large write (fwrite writes through)
 * and a small one (buffered: the failure comes at commit's flush). */
struct core_fsize_result {
    int rc_large, rc_small;
    char err_large[256], err_small[256];
};

static void core_fsize_child(const char *path, int fd) {
    struct core_fsize_result r = {0};
    static char big[64 * 1024];
    memset(big, 'B', sizeof(big));
    signal(SIGXFSZ, SIG_IGN); /* past the limit write() fails with EFBIG instead */
    struct rlimit lim = {.rlim_cur = 1024, .rlim_max = 1024};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        _exit(2);
    r.rc_large = afile_write_all(path, big, sizeof(big), r.err_large, sizeof(r.err_large));
    struct afile af;
    r.rc_small = afile_open(&af, path, r.err_small, sizeof(r.err_small));
    if (r.rc_small == 0) {
        fwrite(big, 1, 3000, af.fp); /* stays in stdio's buffer */
        r.rc_small = afile_commit(&af, r.err_small, sizeof(r.err_small));
    }
    _exit(write(fd, &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 3);
}

Test(core, afile_write_failure_keeps_the_old_file) {
    char dir[256], path[512], old[4096], now[8192];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/model.rsmodel", dir);
    for (size_t i = 0; i < sizeof(old); i++)
        old[i] = (char)(i * 7 + 3);
    cr_assert_eq(afile_write_all(path, old, sizeof(old), NULL, 0), 0);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        core_fsize_child(path, fds[1]);
    }
    close(fds[1]);
    struct core_fsize_result r;
    ssize_t got = read(fds[0], &r, sizeof(r));
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    cr_assert_eq(got, (ssize_t)sizeof(r));
    cr_assert_eq(r.rc_large, -EFBIG, "%d: %s", r.rc_large, r.err_large);
    cr_assert_eq(r.rc_small, -EFBIG, "%d: %s", r.rc_small, r.err_small);
    cr_assert(strstr(r.err_large, path), "%s", r.err_large);
    cr_assert(strstr(r.err_small, path), "%s", r.err_small);
    cr_assert(strstr(r.err_small, "File too large"), "%s", r.err_small);
    cr_assert_eq(core_slurp(path, now, sizeof(now)), (long)sizeof(old));
    cr_assert_eq(memcmp(now, old, sizeof(old)), 0, "the old file changed");
    cr_assert_eq(rs_test_count_tmp(dir), 0, "a temp file was left behind");
    rs_test_rmtree(dir);
}

Test(core, afile_crash_mid_write_keeps_the_old_file_and_sweep_removes_the_temp) {
    char dir[256], path[512], tmp[600], buf[64];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/out.bin", dir);
    cr_assert_eq(afile_write_all(path, "old content", 11, NULL, 0), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) { /* half the new content reaches the temp file, then the process dies */
        struct afile af;
        if (afile_open(&af, path, NULL, 0) != 0)
            _exit(2);
        fputs("new co", af.fp);
        fflush(af.fp);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_eq(core_slurp(path, buf, sizeof(buf)), 11);
    cr_assert_eq(memcmp(buf, "old content", 11), 0);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)pid);
    cr_assert_eq(core_slurp(tmp, buf, sizeof(buf)), 6, "the dead writer's temp file");
    /* the next start removes it: its writer is gone */
    cr_assert_eq(afile_sweep_stale(dir, "out.bin", NULL, 0), 1);
    cr_assert_neq(access(tmp, F_OK), 0);
    cr_assert_eq(core_slurp(path, buf, sizeof(buf)), 11);
    rs_test_rmtree(dir);
}

/* A pid that no process has: a child's, after it was reaped. */
static long core_dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    return (long)pid;
}

Test(core, sweep_removes_only_dead_writers_temp_files_of_the_prefix) {
    char dir[256], p[600], err[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    long dead = core_dead_pid();
    static const struct {
        const char *head, *tail; /* the name is head, the dead pid when tail, and tail */
    } keep[] = {
        {"x.rsmodel", NULL},          /* the checkpoint itself */
        {"x.rsmodel.tmp.", ".bak"},   /* not exactly the pattern */
        {"x.rsmodel.tmp.", NULL},     /* no pid */
        {"x.rsmodel.tmp.12ab", NULL}, /* not a pid */
        {"y.rsmodel.tmp.", ""},       /* another name's */
        {"xx.rsmodel.tmp.", ""},      /* a longer name that starts alike */
    };
    char name[128];
    for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
        if (keep[k].tail)
            snprintf(name, sizeof(name), "%s%ld%s", keep[k].head, dead, keep[k].tail);
        else
            snprintf(name, sizeof(name), "%s", keep[k].head);
        cr_assert_eq(rs_test_write_file(dir, name, "k", p, sizeof(p)), 0);
    }
    snprintf(name, sizeof(name), "x.rsmodel.tmp.%ld", (long)getpid()); /* a live writer: us */
    cr_assert_eq(rs_test_write_file(dir, name, "live", p, sizeof(p)), 0);
    cr_assert_eq(rs_test_write_file(dir, "x.rsmodel.tmp.1", "init", p, sizeof(p)), 0);
    snprintf(name, sizeof(name), "x.rsmodel.tmp.%ld", dead);
    cr_assert_eq(rs_test_write_file(dir, name, "stale", p, sizeof(p)), 0);
    long dead2 = core_dead_pid(); /* a directory of that name is not a temp file */
    snprintf(p, sizeof(p), "%s/x.rsmodel.tmp.%ld", dir, dead2);
    cr_assert_eq(mkdir(p, 0755), 0);

    cr_assert_eq(afile_sweep_stale(dir, "x.rsmodel", err, sizeof(err)), 1, "%s", err);
    snprintf(p, sizeof(p), "%s/x.rsmodel.tmp.%ld", dir, dead);
    cr_assert_neq(access(p, F_OK), 0, "the dead writer's temp file is still there");
    cr_assert_eq(rs_test_count_tmp(dir), 8, "something else was removed");
    cr_assert_eq(afile_sweep_stale(dir, "x.rsmodel", err, sizeof(err)), 0);
    snprintf(p, sizeof(p), "%s/missing", dir);
    cr_assert_eq(afile_sweep_stale(p, "x.rsmodel", err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, p), "%s", err);
    rs_test_rmtree(dir);
}

Test(core, mkdirs_creates_nested_and_rejects_files) {
    char dir[256], sub[512], file[512], err[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
    cr_assert_eq(afile_mkdirs(sub, err, sizeof(err)), 0);
    struct stat st;
    cr_assert_eq(stat(sub, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(afile_mkdirs(sub, err, sizeof(err)), 0); /* idempotent */
    cr_assert_eq(rs_test_write_file(dir, "plain", "x", file, sizeof(file)), 0);
    cr_assert_lt(afile_mkdirs(file, err, sizeof(err)), 0);
    rs_test_rmtree(dir);
}

Test(core, names_round_trip) {
    for (unsigned p = 0; p < PHASE_COUNT; p++)
        cr_assert_eq(ev_phase_from_name(ev_phase_name(p)), (int)p);
    cr_assert_str_eq(ev_phase_name(PHASE_CHECKPOINT), "checkpoint");
    cr_assert_str_eq(ev_sync_op_name(SYNC_OP_COPY), "copy");
    cr_assert_str_eq(ev_kind_name(EV_METRIC), "metric");
    cr_assert_str_eq(ev_phase_name(PHASE_COUNT), "?");
    cr_assert_eq(ev_phase_from_name("nope"), -1);
}

/* Every phase has a letter of its own on the timeline: no two phases share one, and each is a
 * printable character that is no blank (a blank is an empty cell). */
Test(core, phase_letters_are_distinct) {
    for (unsigned p = 0; p < PHASE_COUNT; p++) {
        char c = ev_phase_letter(p);
        cr_assert(c > ' ' && c < 127, "phase %s: letter %d", ev_phase_name(p), c);
        for (unsigned q = 0; q < p; q++)
            cr_assert_neq(c, ev_phase_letter(q), "%s and %s share '%c'", ev_phase_name(p),
                          ev_phase_name(q), c);
    }
    cr_assert_eq(ev_phase_letter(PHASE_FORWARD), 'f');
    cr_assert_eq(ev_phase_letter(PHASE_CHECKPOINT), 'k');
    cr_assert_str_eq(ev_phase_label(PHASE_SYNC), "wait");
    cr_assert_str_eq(ev_phase_label(PHASE_EVAL), "eval");
    cr_assert_str_eq(ev_phase_label(PHASE_COUNT), "?");
}

/* Commands by name both ways, with what their argument is and whether /control takes them. */
Test(core, commands_by_name) {
    for (unsigned c = 0; c < CMD_COUNT; c++)
        cr_assert_eq(ev_cmd_from_name(ev_cmd_name(c)), (int)c, "%s", ev_cmd_name(c));
    cr_assert_eq(ev_cmd_from_name("set_chunk"), CMD_SET_CHUNK);
    cr_assert_eq(ev_cmd_from_name("reboot"), -1);
    cr_assert_eq(ev_cmd_from_name(""), -1);
    cr_assert_eq(ev_cmd_from_name(NULL), -1);
    cr_assert_str_eq(ev_cmd_name(CMD_COUNT), "?");
    cr_assert_eq(ev_cmd_arg(CMD_SET_CHUNK), EV_ARG_BARS);
    cr_assert_eq(ev_cmd_arg(CMD_PAUSE), EV_ARG_NONE);
    cr_assert_eq(ev_cmd_arg(CMD_COUNT), EV_ARG_NONE);
    cr_assert(ev_cmd_remote(CMD_CLEANUP));
    cr_assert_not(ev_cmd_remote(CMD_STOP), "a remote client does not stop the agent's loop");
    cr_assert_not(ev_cmd_remote(CMD_COUNT));
}

Test(core, error_text_stays_one_line) {
    char err[64];
    cr_assert_eq(errbuf_set(err, sizeof(err), -22, "unknown key '%s'", "x\n\x1b[31mred\tz"), -22);
    cr_assert_str_eq(err, "unknown key 'x??[31mred z'");
}

/* ---- secret files ---- */

/* The whole file with a NUL after it; the refusals name the path and say why. */
Test(core, secret_file_reads_a_regular_file_whole_or_says_why_not) {
    char dir[512], path[1024], err[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "key", "line one\nline two\n", path, sizeof(path)), 0);
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(secret_file_read(path, "key file", false, 64, &text, &len, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert_eq(len, 18);
    cr_assert_str_eq(text, "line one\nline two\n");
    secret_file_free(text, len);
    cr_assert_eq(secret_file_read(path, "key file", false, 17, &text, &len, err, sizeof(err)),
                 -EFBIG);
    cr_assert(strstr(err, path) && strstr(err, "over 17 bytes"), "%s", err);
    cr_assert_null(text);
    cr_assert_eq(rs_test_write_file(dir, "empty", "", path, sizeof(path)), 0);
    cr_assert_eq(secret_file_read(path, "key file", false, 64, &text, &len, err, sizeof(err)),
                 -ENODATA);
    cr_assert(strstr(err, path) && strstr(err, ": empty"), "%s", err);
    snprintf(path, sizeof(path), "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_eq(secret_file_read(path, "key file", false, 64, &text, &len, err, sizeof(err)),
                 -EINVAL, "a FIFO is refused, not waited on");
    cr_assert(strstr(err, "not a regular file"), "%s", err);
    cr_assert_eq(secret_file_read(dir, "key file", false, 64, &text, &len, err, sizeof(err)),
                 -EINVAL, "a directory");
    snprintf(path, sizeof(path), "%s/none", dir);
    cr_assert_eq(secret_file_read(path, "key file", false, 64, &text, &len, err, sizeof(err)),
                 -ENOENT);
    cr_assert(strstr(err, "No such file"), "%s", err);
    secret_file_free(NULL, 0);
    rs_test_rmtree(dir);
}

/* ---- JSON text ---- */

/* s escaped with room to spare: the text, and the length returned is its length. */
static const char *core_escape(const char *s) {
    static char buf[256];
    size_t n = json_out_escape(buf, sizeof(buf), s);
    cr_assert_eq(n, strlen(buf), "length %zu for '%s'", n, buf);
    return buf;
}

Test(core, json_escape_quotes_backslashes_and_controls) {
    cr_assert_str_eq(core_escape(""), "");
    cr_assert_str_eq(core_escape("plain / text"), "plain / text");
    cr_assert_str_eq(core_escape("say \"hi\""), "say \\\"hi\\\"");
    cr_assert_str_eq(core_escape("C:\\dir\\"), "C:\\\\dir\\\\");
    cr_assert_str_eq(core_escape("a\nb\tc\rd"), "a\\u000ab\\u0009c\\u000dd");
    cr_assert_str_eq(core_escape("\x01\x1f\x7f "), "\\u0001\\u001f\\u007f ");
    cr_assert_str_eq(core_escape("\x1b[31m"), "\\u001b[31m");
}

Test(core, json_escape_keeps_utf8) {
    cr_assert_str_eq(core_escape("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x94\xa5"),
                     "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x94\xa5");
    /* and a JSON parser reads the escape back as the original */
    const char *in = "GPU \"0\"\n\xe2\x82\xac\x01\\";
    char text[64] = "\"";
    size_t n = json_out_escape(text + 1, sizeof(text) - 2, in);
    cr_assert_lt(n + 2, sizeof(text));
    strcat(text, "\"");
    json_object *o = json_tokener_parse(text);
    cr_assert_not_null(o, "%s", text);
    cr_assert_str_eq(json_object_get_string(o), in);
    json_object_put(o);
}

Test(core, json_escape_cut_short) {
    char buf[8];
    /* "ab\"cd" needs 6: with room for 5 (and the NUL) the escape of '"' is not split */
    cr_assert_eq(json_out_escape(buf, 4, "ab\"cd"), 6);
    cr_assert_str_eq(buf, "ab");
    cr_assert_eq(json_out_escape(buf, 5, "ab\"cd"), 6);
    cr_assert_str_eq(buf, "ab\\\"");
    cr_assert_eq(json_out_escape(buf, 6, "a\x01"), 7);
    cr_assert_str_eq(buf, "a");
    /* nor a UTF-8 sequence: the euro sign (3 bytes) stays whole or goes */
    cr_assert_eq(json_out_escape(buf, 4, "a\xe2\x82\xac"), 4);
    cr_assert_str_eq(buf, "a");
    cr_assert_eq(json_out_escape(buf, 5, "a\xe2\x82\xac"), 4);
    cr_assert_str_eq(buf, "a\xe2\x82\xac");
    cr_assert_eq(json_out_escape(buf, 1, "abc"), 3);
    cr_assert_str_eq(buf, "");
    cr_assert_eq(json_out_escape(NULL, 0, "a\"b"), 4); /* only the length */
}

/* v's text in both forms: it reads back as exactly v, as JSON too. */
static void core_num_round_trip(double v) {
    char t[JSON_OUT_NUM_MAX];
    for (int whole = JSON_OUT_POINT; whole <= JSON_OUT_INT; whole++) {
        int n = json_out_num(t, sizeof(t), v, (enum json_out_whole)whole);
        cr_assert(n > 0 && (size_t)n == strlen(t), "%d for '%s'", n, t);
        char *end;
        double back = strtod(t, &end);
        cr_assert(*end == '\0' && back == v && signbit(back) == signbit(v), "%a wrote '%s'", v, t);
        json_object *o = json_tokener_parse(t);
        cr_assert(json_object_is_type(o, json_type_double) || json_object_is_type(o, json_type_int),
                  "'%s' is not a JSON number", t);
        if (json_object_is_type(o, json_type_double))
            cr_assert_eq(json_object_get_double(o), v, "'%s'", t);
        json_object_put(o);
    }
}

static const char *core_num(double v, enum json_out_whole whole) {
    static char t[JSON_OUT_NUM_MAX];
    json_out_num(t, sizeof(t), v, whole);
    return t;
}

Test(core, json_num_is_the_shortest_text) {
    cr_assert_str_eq(core_num(2e-4, JSON_OUT_POINT), "0.0002");
    cr_assert_str_eq(core_num(0.1, JSON_OUT_POINT), "0.1");
    cr_assert_str_eq(core_num(0.1 + 0.2, JSON_OUT_POINT), "0.30000000000000004");
    cr_assert_str_eq(core_num(3e-4, JSON_OUT_POINT), "0.0003");
    cr_assert_str_eq(core_num(1e300, JSON_OUT_POINT), "1e+300");
    cr_assert_str_eq(core_num(-2.5e-7, JSON_OUT_POINT), "-2.5e-07");
    cr_assert_str_eq(core_num(4.9406564584124654e-324, JSON_OUT_POINT), "5e-324");
    cr_assert_str_eq(core_num(DBL_MAX, JSON_OUT_POINT), "1.7976931348623157e+308");
    cr_assert_str_eq(core_num(DBL_MIN, JSON_OUT_POINT), "2.2250738585072014e-308");
    cr_assert_str_eq(core_num(4704.75, JSON_OUT_INT), "4704.75");
}

/* Over many doubles of every magnitude: no fewer significant digits than the text has would
 * read back (a plain scan from one digit up, here), and the text reads back. */
Test(core, json_num_has_the_fewest_digits_that_read_back) {
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v = ldexp((double)(x >> 11) / 9007199254740992.0, (int)(x % 200) - 100);
        if (i % 3 == 0)
            v = (double)(x % 100000) / 1000.0 + 0.001; /* short decimals, as losses look */
        if (v == trunc(v))
            continue; /* written without an exponent: json_num_whole_numbers */
        char t[JSON_OUT_NUM_MAX], u[JSON_OUT_NUM_MAX];
        json_out_num(t, sizeof(t), v, JSON_OUT_POINT);
        cr_assert_eq(strtod(t, NULL), v, "%a wrote '%s'", v, t);
        int fewest = 17;
        for (int p = 1; p <= 17; p++) {
            snprintf(u, sizeof(u), "%.*g", p, v);
            if (strtod(u, NULL) == v) {
                fewest = p;
                break;
            }
        }
        snprintf(u, sizeof(u), "%.*g", fewest, v);
        cr_assert_str_eq(t, u, "%a: '%s', but %d digits read back", v, t, fewest);
    }
}

Test(core, json_num_whole_numbers) {
    cr_assert_str_eq(core_num(30, JSON_OUT_POINT), "30.0");
    cr_assert_str_eq(core_num(30, JSON_OUT_INT), "30");
    cr_assert_str_eq(core_num(0, JSON_OUT_POINT), "0.0");
    cr_assert_str_eq(core_num(-0.0, JSON_OUT_POINT), "-0.0");
    cr_assert_str_eq(core_num(-7, JSON_OUT_POINT), "-7.0");
    cr_assert_str_eq(core_num(2846341, JSON_OUT_INT), "2846341");
    cr_assert_str_eq(core_num(999999999999999, JSON_OUT_POINT), "999999999999999.0");
    cr_assert_str_eq(core_num(1e15, JSON_OUT_POINT), "1e+15"); /* from here on, an exponent */
    cr_assert_str_eq(core_num(1e15, JSON_OUT_INT), "1e+15");
    cr_assert_str_eq(core_num(-4e20, JSON_OUT_INT), "-4e+20");
}

Test(core, json_num_not_a_number_is_null) {
    cr_assert_str_eq(core_num(NAN, JSON_OUT_POINT), "null");
    cr_assert_str_eq(core_num(INFINITY, JSON_OUT_POINT), "null");
    cr_assert_str_eq(core_num(-INFINITY, JSON_OUT_INT), "null");
    cr_assert_null(json_out_double(NAN));
    cr_assert_null(json_out_double(-INFINITY));
    char small[4];
    cr_assert_eq(json_out_num(small, sizeof(small), 0.125, JSON_OUT_POINT), 5); /* as snprintf */
    cr_assert_str_eq(small, "0.1");
}

Test(core, json_num_round_trips) {
    static const double fixed[] = {0,
                                   -0.0,
                                   1,
                                   -1,
                                   0.5,
                                   1.0 / 3,
                                   2.0 / 3,
                                   1e-9,
                                   2e-4,
                                   0.7,
                                   0.25,
                                   1e16,
                                   1e21,
                                   1e22,
                                   1e23,
                                   123.456,
                                   9007199254740993.0,
                                   1e-300,
                                   1e300,
                                   DBL_MAX,
                                   -DBL_MAX,
                                   DBL_MIN,
                                   DBL_MIN / 3,
                                   DBL_TRUE_MIN,
                                   4e-320,
                                   1e15 - 1,
                                   1e15 + 1,
                                   0.1 + 0.2,
                                   5e-324,
                                   299792458,
                                   6.02214076e23,
                                   -273.15};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        core_num_round_trip(fixed[i]);
    uint64_t seed = 20240601;
    for (int i = 0; i < 20000; i++) { /* any bit pattern that is a finite double */
        uint64_t bits = rng_splitmix64(&seed);
        double v;
        memcpy(&v, &bits, sizeof(v));
        if (isfinite(v))
            core_num_round_trip(v);
    }
    for (int i = 0; i < 20000; i++) { /* and numbers of everyday size */
        double v = (double)(rng_splitmix64(&seed) >> 11) / 9007199254740992.0 * 2000 - 1000;
        core_num_round_trip(i % 2 ? v : round(v * 100) / 100);
    }
}

Test(core, json_double_writes_the_shortest_text) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "lr", json_out_double(2e-4));
    json_object_object_add(o, "tick", json_out_double(0.25));
    json_object_object_add(o, "sync", json_out_double(30));
    json_object_object_add(o, "bad", json_out_double(NAN));
    cr_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                     "{\"lr\":0.0002,\"tick\":0.25,\"sync\":30.0,\"bad\":null}");
    json_object *lr = json_object_object_get(o, "lr");
    cr_assert(json_object_is_type(lr, json_type_double));
    cr_assert_eq(json_object_get_double(lr), 2e-4);
    json_object_put(o);
}

/* The protocol-buffers encoding guide's own examples: field 1 = 150 is 08 96 01, field 2 =
 * "testing" is 12 07 74 65 73 74 69 6e 67; a nested message is its bytes behind its length; a
 * negative int64 takes ten bytes. */
Test(core, pbuf_encodes_the_wire_format) {
    struct pbuf p = {0}, inner = {0};
    pbuf_varint(&p, 1, 150);
    pbuf_str(&p, 2, "testing");
    const uint8_t want[] = {0x08, 0x96, 0x01, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'};
    cr_assert_eq(p.n, sizeof(want));
    cr_assert_arr_eq(p.b, want, sizeof(want));
    pbuf_fini(&p);
    pbuf_varint(&inner, 1, 150);
    pbuf_msg(&p, 3, &inner);
    const uint8_t nested[] = {0x1a, 0x03, 0x08, 0x96, 0x01};
    cr_assert_eq(p.n, sizeof(nested));
    cr_assert_arr_eq(p.b, nested, sizeof(nested));
    pbuf_fini(&p);
    pbuf_varint(&p, 1, -1);
    cr_assert_eq(p.n, 11);
    cr_assert_eq(p.b[10], 0x01);
    for (int i = 1; i < 10; i++)
        cr_assert_eq(p.b[i], 0xff, "byte %d", i);
    inner.oom = true; /* an incomplete part makes the whole incomplete */
    pbuf_msg(&p, 4, &inner);
    cr_assert(p.oom);
    pbuf_fini(&p);
    pbuf_fini(&inner);
}

/* ---- quit signals ---- */

static void quit_leave_hook(void) {
    static const char m[] = "[leave]";
    ssize_t w = write(1, m, sizeof(m) - 1);
    (void)w;
}

/* In a child: the first SIGINT is remembered and wakes the fd; the second signal (SIGTERM)
 * runs the leave hook, says so on the chosen fd and exits 130 from the handler. */
Test(quit_signal, the_first_is_remembered_the_second_leaves_with_130) {
    int out[2];
    cr_assert_eq(pipe(out), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(out[1], 1);
        struct quit_signal_conf c = {.prefix = "t: ", .first = " now", .leave = quit_leave_hook};
        if (quit_signal_install(&c) != 0)
            _exit(10);
        quit_signal_set_fd(out[1]);
        if (quit_signal_first() != 0)
            _exit(11);
        raise(SIGINT);
        struct pollfd pf = {quit_signal_fd(), POLLIN, 0};
        if (quit_signal_first() != SIGINT || poll(&pf, 1, 0) != 1)
            _exit(12);
        raise(SIGTERM);
        _exit(13); /* not reached: the second signal left */
    }
    close(out[1]);
    char buf[256] = "";
    size_t n = 0;
    ssize_t r;
    while ((r = read(out[0], buf + n, sizeof(buf) - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(out[0]);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "died of signal %d", WTERMSIG(st));
    cr_assert_eq(WEXITSTATUS(st), 130, "exit %d: %s", WEXITSTATUS(st), buf);
    cr_assert_str_eq(buf, "t: Interrupt: stopping now\n[leave]t: second Terminated: exiting "
                          "immediately\n");
}

/* keep_hup leaves SIGHUP's disposition alone (the agent reads it from a signalfd). */
Test(quit_signal, keep_hup_leaves_sighup_alone) {
    struct sigaction before, after;
    signal(SIGHUP, SIG_IGN);
    sigaction(SIGHUP, NULL, &before);
    struct quit_signal_conf c = {.keep_hup = true};
    cr_assert_eq(quit_signal_install(&c), 0);
    sigaction(SIGHUP, NULL, &after);
    cr_assert_eq(after.sa_handler, SIG_IGN);
    quit_signal_uninstall();
    struct sigaction intr;
    sigaction(SIGINT, NULL, &intr);
    cr_assert_eq(intr.sa_handler, SIG_DFL, "uninstalled");
    signal(SIGHUP, SIG_DFL);
    (void)before;
}

/* UTF-8 as RFC 3629 has it: overlong forms, surrogates, past U+10FFFF, cut sequences and
 * control characters refused at their first byte. */
Test(core, utf8_printable_checks_the_whole_text) {
    static const char *const good[] = {"",
                                       "vpoc_mlp",
                                       "mod\xc3\xa8le",
                                       "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80",
                                       "\xf4\x8f\xbf\xbf",
                                       "\xed\x9f\xbf"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_assert(utf8_printable(good[i], NULL), "'%s' refused", good[i]);
    static const struct {
        const char *s;
        size_t at;
    } bad[] = {{"a\xc0\xaf", 1},
               {"\xe0\x80\xaf", 0},
               {"ab\xed\xa0\x80", 2},
               {"\xf4\x90\x80\x80", 0},
               {"\xf5\x80\x80\x80", 0},
               {"x\xc3", 1},
               {"x\xe2\x82", 1},
               {"\x80", 0},
               {"tab\there", 3},
               {"del\x7f", 3},
               {"\xff", 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t at = 99;
        cr_assert(!utf8_printable(bad[i].s, &at), "case %zu accepted", i);
        cr_assert_eq(at, bad[i].at, "case %zu: at %zu", i, at);
    }
}
