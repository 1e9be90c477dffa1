/* Unit tests for the bridge's socket and the watch source over it: a client speaking the
 * bridge's lines (as python/ringside does) attaches, its events and snapshot come through,
 * its call in flight is what the hang watch sees, commands go back, bad and overlong lines are
 * counted, and the socket is private and replaced when stale. */
#include "backend/core/mono.h"
#include "backend/record/replay_internal.h"
#include "backend/run/bridge.h"
#include "backend/run/run.h"
#include "backend/run/source_watch.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int tw_connect(const char *path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    cr_assert_lt(strlen(path), sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
    return fd;
}

static void tw_send(int fd, const char *text) {
    size_t len = strlen(text);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
}

/* What the sink saw. */
struct tw_seen {
    unsigned opened, closed, overlong, lines;
    char last[256];
};

static void tw_opened(void *ctx, unsigned job, pid_t pid) {
    struct tw_seen *s = ctx;
    (void)job;
    cr_assert_eq(pid, getpid(), "the peer's pid");
    s->opened++;
}
static void tw_line(void *ctx, unsigned job, const char *line, size_t len) {
    struct tw_seen *s = ctx;
    (void)job;
    snprintf(s->last, sizeof(s->last), "%.*s", (int)len, line);
    s->lines++;
}
static void tw_overlong(void *ctx, unsigned job) {
    (void)job;
    ((struct tw_seen *)ctx)->overlong++;
}
static void tw_closed(void *ctx, unsigned job) {
    (void)job;
    ((struct tw_seen *)ctx)->closed++;
}

/* Poll until pred holds (each poll reads what is there; a bounded number of tries). */
#define TW_UNTIL(b, sink, cond)                                                                    \
    for (int tw_i = 0; !(cond) && tw_i < 2000; tw_i++) {                                           \
        bridge_poll(b, sink, 1u << 20);                                                            \
        if (!(cond))                                                                               \
            usleep(1000);                                                                          \
    }

Test(watch, bridge_lines_overlong_commands_and_close) {
    char dir[256], path[300];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/sub/b.sock", dir);
    struct bridge *b = NULL;
    char err[256];
    cr_assert_eq(bridge_open(&b, path, err, sizeof(err)), 0, "%s", err);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "socket mode %o", st.st_mode & 0777);
    char sub[300];
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    cr_assert_eq(stat(sub, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "directory mode %o", st.st_mode & 0777);
    struct tw_seen seen = {0};
    struct bridge_sink sink = {tw_opened, tw_line, tw_overlong, tw_closed, &seen, NULL};
    int fd = tw_connect(path);
    tw_send(fd, "{\"a\":1}\n{\"b\":");
    TW_UNTIL(b, &sink, seen.lines == 1);
    cr_assert_eq(seen.opened, 1);
    cr_assert_str_eq(seen.last, "{\"a\":1}");
    tw_send(fd, "2}\n");
    TW_UNTIL(b, &sink, seen.lines == 2);
    cr_assert_str_eq(seen.last, "{\"b\":2}", "a line split across writes is joined");
    /* a line longer than the limit is skipped whole, the next one comes */
    char *big = malloc(BRIDGE_LINE_MAX + 16);
    memset(big, 'x', BRIDGE_LINE_MAX + 10);
    big[BRIDGE_LINE_MAX + 10] = '\0';
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); /* the bridge reads between writes */
    for (size_t off = 0; off < BRIDGE_LINE_MAX + 10;) {
        ssize_t n = write(fd, big + off, BRIDGE_LINE_MAX + 10 - off);
        if (n > 0)
            off += (size_t)n;
        bridge_poll(b, &sink, 1u << 20);
    }
    free(big);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    tw_send(fd, "\n{\"c\":3}\n");
    TW_UNTIL(b, &sink, seen.lines == 3);
    cr_assert_eq(seen.overlong, 1);
    cr_assert_str_eq(seen.last, "{\"c\":3}");
    /* a command back */
    cr_assert_eq(bridge_send(b, 0, "{\"type\":\"command\",\"cmd\":\"probe\"}"), 0);
    char got[128] = "";
    cr_assert_gt(read(fd, got, sizeof(got) - 1), 0);
    cr_assert_str_eq(got, "{\"type\":\"command\",\"cmd\":\"probe\"}\n");
    cr_assert_eq(bridge_send(b, 5, "x"), -ENOTCONN);
    close(fd);
    TW_UNTIL(b, &sink, seen.closed == 1);
    cr_assert_eq(seen.closed, 1);
    /* a second listener on a live socket is refused; once closed, the file is gone */
    struct bridge *b2 = NULL;
    cr_assert_eq(bridge_open(&b2, path, err, sizeof(err)), -EADDRINUSE);
    cr_assert_not_null(strstr(err, "another ringside is listening"), "%s", err);
    bridge_close(b);
    cr_assert_neq(access(path, F_OK), 0);
    rs_test_rmtree(dir);
}

/* A socket file nobody answers on (a dashboard that was killed) is replaced. */
Test(watch, bridge_replaces_a_stale_socket) {
    char dir[256], path[300], err[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/b.sock", dir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    cr_assert_lt(strlen(path), sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd); /* bound, never listening: what a killed listener leaves */
    struct bridge *b = NULL;
    cr_assert_eq(bridge_open(&b, path, err, sizeof(err)), 0, "%s", err);
    bridge_close(b);
    cr_assert_eq(rs_test_write_file(dir, "plain", "x", path, sizeof(path)), 0);
    cr_assert_eq(bridge_open(&b, path, err, sizeof(err)), -EEXIST);
    cr_assert_not_null(strstr(err, "not a socket"), "%s", err);
    rs_test_rmtree(dir);
}

static struct run *tw_run(struct run_opts *o, const char *dir, uint64_t slow_ns, uint64_t hang_ns) {
    memset(o, 0, sizeof(*o));
    engine_conf_default(&o->conf);
    tele_conf_default(&o->tele);
    snprintf(o->tele.only, sizeof(o->tele.only), "none");
    snprintf(o->conf.output_dir, sizeof(o->conf.output_dir), "%s/out", dir);
    o->kmsg.off = true;
    o->sync_slow_ns = slow_ns;
    o->sync_timeout_ns = hang_ns;
    struct run_conf c = {.o = o, .cmd = "watch", .train = false, .ring_events = 1024};
    struct run *run = NULL;
    cr_assert_eq(run_create(&run, &c), 0);
    cr_assert_eq(run_start(run), 0);
    return run;
}

/* Drain until an event of kind (and, for a log, holding text) comes; false after the tries. */
static bool tw_drain_for(struct source *src, unsigned kind, const char *text) {
    static struct ev evs[256];
    for (int i = 0; i < 2000; i++) {
        size_t n = src->ops->drain(src, evs, 256);
        for (size_t k = 0; k < n; k++)
            if (evs[k].kind == kind && (!text || strstr(evs[k].u.text.text, text)))
                return true;
        usleep(1000);
    }
    return false;
}

/* A watch source over a run of telemetry alone and a bridge in a fresh directory. */
struct tw_fix {
    char dir[256], path[300];
    struct run_opts o;
    struct run *run;
    struct bridge *b;
    struct source *src;
};

static void tw_fix_open_with(struct tw_fix *f, uint64_t slow_ns, uint64_t hang_ns) {
    char err[256];
    cr_assert_eq(rs_test_tmpdir(f->dir, sizeof(f->dir)), 0);
    snprintf(f->path, sizeof(f->path), "%s/b.sock", f->dir);
    f->run = tw_run(&f->o, f->dir, slow_ns, hang_ns);
    cr_assert_eq(bridge_open(&f->b, f->path, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(watch_source_create(f->run, f->b, &f->src), 0);
}

static void tw_fix_open(struct tw_fix *f) {
    tw_fix_open_with(f, 1000000000ull, 30000000000ull);
}

static void tw_fix_close(struct tw_fix *f) {
    f->src->ops->destroy(f->src);
    bridge_close(f->b);
    run_finish(f->run, NULL);
    run_destroy(f->run);
    rs_test_rmtree(f->dir);
}

Test(watch, a_job_through_the_watch_source) {
    static struct tw_fix f;
    tw_fix_open(&f);
    struct source *src = f.src;
    const char *path = f.path;
    char msg[128];
    cr_assert(src->run.watch);
    cr_assert_not_null(strstr(src->run.idle, "no job attached"));
    cr_assert_str_eq(src->run.control_off, "no job attached");
    cr_assert(src->ops->action(src, SOURCE_CLEANUP, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "no job attached");

    int fd = tw_connect(path);
    tw_send(fd, "{\"type\":\"run\",\"version\":1,\"host\":\"h\",\"backend\":\"pytorch-cuda\","
                "\"device\":\"GPU\",\"arch\":\"sm_90\",\"devices\":1,\"device_list\":[2],"
                "\"start_ns\":1,\"start_wall_ns\":1,\"epochs\":0,\"chunk\":0,\"name\":\"job\","
                "\"control\":true,\"rank\":1}\n"
                "{\"type\":\"metric\",\"seq\":0,\"dev\":2,\"t_ns\":5,\"epoch\":1,\"step\":7,"
                "\"loss\":0.5,\"samples_per_s\":0}\n");
    cr_assert(tw_drain_for(src, EV_METRIC, NULL), "the metric event");
    cr_assert_eq(src->run.n_devices, 1);
    cr_assert_eq(src->run.devices[0], 0, "the view numbers a job by its slot, not its GPU");
    cr_assert(src->run.ranks[0].valid);
    cr_assert_eq(src->run.ranks[0].rank, 1);
    cr_assert_str_eq(src->run.idle, "");
    cr_assert_str_eq(src->run.control_off, "");
    cr_assert_str_eq(src->run.backend, "pytorch-cuda");
    const struct engine_snap *snap = src->ops->snap(src);
    cr_assert_eq(snap->step, 7);
    cr_assert_float_eq(snap->loss, 0.5, 1e-12);

    /* a phase of its own name: "other" on the timeline, its name in the status line */
    tw_send(fd, "{\"type\":\"phase\",\"phase\":\"other\",\"name\":\"data-shuffle\",\"dev\":2,"
                "\"seq\":2,\"start_ns\":10,\"end_ns\":20,\"epoch\":1,\"step\":7,\"chunk\":-1}\n");
    cr_assert(tw_drain_for(src, EV_PHASE, NULL));
    cr_assert_not_null(strstr(src->ops->status(src), "other = data-shuffle"), "%s",
                       src->ops->status(src));

    /* the call it announces is what the hang watch sees, by device; its end clears it */
    struct trace_inflight inf;
    cr_assert_not(src->ops->inflight(src, 0, &inf));
    tw_send(fd, "{\"type\":\"call\",\"dev\":2,\"call\":\"torch.distributed.destroy_process_group\","
                "\"op\":\"device\",\"phase\":\"teardown\",\"start_ns\":1000,\"rank\":1}\n"
                "{\"type\":\"log\",\"seq\":1,\"t_ns\":6,\"severity\":\"info\","
                "\"message\":\"marker\"}\n");
    cr_assert(tw_drain_for(src, EV_LOG, "marker"));
    cr_assert(src->ops->inflight(src, 0, &inf));
    cr_assert_eq(inf.phase, PHASE_TEARDOWN);
    cr_assert_eq(inf.start_ns, 1000);
    cr_assert_not(src->ops->inflight(src, 1, &inf), "another device");
    const char *st = src->ops->status(src);
    cr_assert_not_null(strstr(st, "rank 1"), "%s", st);
    cr_assert_not_null(strstr(st, "destroy_process_group"), "%s", st);

    /* a key goes to the job as a command line */
    cr_assert(src->ops->action(src, SOURCE_CHUNK_DOWN, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "chunk_step sent to 1 job");
    char got[128] = "";
    cr_assert_gt(read(fd, got, sizeof(got) - 1), 0);
    cr_assert_str_eq(got, "{\"type\":\"command\",\"cmd\":\"chunk_step\",\"arg\":-1}\n");

    /* a line not understood: counted, said once */
    tw_send(fd, "{\"type\":\"phase\",\"dev\":2}\nnot json\n");
    cr_assert(tw_drain_for(src, EV_LOG, "not understood"));
    uint64_t bad = 0, dropped = 0;
    for (int i = 0; i < 200 && bad < 2; i++) {
        static struct ev evs[64];
        src->ops->drain(src, evs, 64);
        watch_source_counts(src, &bad, &dropped);
    }
    cr_assert_eq(bad, 2);
    cr_assert_not_null(strstr(src->ops->status(src), "2 lines skipped"));

    /* it goes away while in the call: said as an error, no longer in flight */
    close(fd);
    cr_assert(tw_drain_for(src, EV_LOG, "went away without ending while in"));
    cr_assert_not(src->ops->inflight(src, 0, &inf));
    tw_fix_close(&f);
}

/* A fed source (the agent's) hands its caller each line as it parsed it: the job's own device
 * numbers in the item, the slot's in the events it drains; the bridge's own lines blank. */
Test(watch, a_fed_source_hands_on_the_line_it_parsed) {
    static struct tw_fix f;
    char err[256];
    cr_assert_eq(rs_test_tmpdir(f.dir, sizeof(f.dir)), 0);
    snprintf(f.path, sizeof(f.path), "%s/b.sock", f.dir);
    f.run = tw_run(&f.o, f.dir, 1000000000ull, 30000000000ull);
    cr_assert_eq(bridge_open(&f.b, f.path, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(watch_source_create_fed(f.run, f.b, &f.src), 0);
    struct bridge_sink sink;
    watch_source_sink(f.src, &sink);
    sink.opened(sink.ctx, 0, getpid());
    const struct replay_item *it = NULL;
    const char *run =
        "{\"type\":\"run\",\"version\":1,\"host\":\"h\",\"backend\":\"pytorch-cuda\","
        "\"device\":\"GPU\",\"arch\":\"\",\"devices\":1,\"device_list\":[2],"
        "\"start_ns\":1,\"start_wall_ns\":1,\"epochs\":0,\"chunk\":0,\"name\":\"job\","
        "\"control\":true}";
    cr_assert_eq(watch_source_line(f.src, 0, run, strlen(run), &it), 0);
    cr_assert_eq(it->kind, REPLAY_RUN);
    cr_assert_eq(f.src->run.n_devices, 1);
    cr_assert_str_eq(f.src->run.ranks[0].name, "job", "the run line's own fields read as well");
    const char *metric = "{\"type\":\"metric\",\"seq\":0,\"dev\":2,\"t_ns\":5,\"epoch\":1,"
                         "\"step\":7,\"loss\":0.5,\"samples_per_s\":0}";
    cr_assert_eq(watch_source_line(f.src, 0, metric, strlen(metric), &it), 0);
    cr_assert_eq(it->kind, REPLAY_EVENT);
    cr_assert_eq(it->ev.kind, EV_METRIC);
    cr_assert_eq(it->ev.dev, 2, "the job's own device in what the caller gets");
    cr_assert(tw_drain_for(f.src, EV_METRIC, NULL));
    const char *call = "{\"type\":\"call\",\"dev\":2,\"call\":\"torch.cuda.synchronize\","
                       "\"op\":\"device\",\"phase\":\"sync\",\"start_ns\":1000}";
    cr_assert_eq(watch_source_line(f.src, 0, call, strlen(call), &it), 0);
    cr_assert_eq(it->kind, REPLAY_BLANK);
    struct trace_inflight inf;
    cr_assert(f.src->ops->inflight(f.src, 0, &inf), "the call is the hang watch's");
    cr_assert_eq(watch_source_line(f.src, 0, "  ", 2, &it), 0);
    cr_assert_eq(it->kind, REPLAY_BLANK);
    cr_assert_eq(watch_source_line(f.src, 0, "not json", 8, &it), -EINVAL);
    cr_assert_eq(it->kind, REPLAY_NONE);
    uint64_t bad = 0, dropped = 0;
    watch_source_counts(f.src, &bad, &dropped);
    cr_assert_eq(bad, 1);
    tw_fix_close(&f);
}

/* A run line for a job on device dev (rank -1: none). */
static void tw_attach(int fd, unsigned dev, int rank) {
    char line[512];
    snprintf(
        line, sizeof(line),
        "{\"type\":\"run\",\"version\":1,\"host\":\"h\",\"backend\":\"pytorch-cuda\","
        "\"device\":\"GPU\",\"arch\":\"\",\"devices\":1,\"device_list\":[%u],\"start_ns\":1,"
        "\"start_wall_ns\":1,\"epochs\":0,\"chunk\":0,\"name\":\"j%u\",\"control\":true%s%d}\n",
        dev, dev, rank >= 0 ? ",\"rank\":" : ",\"x\":", rank);
    tw_send(fd, line);
}

/* Whether fd has a line waiting, read without blocking. */
static bool tw_got(int fd, char *buf, size_t cap) {
    ssize_t n = recv(fd, buf, cap - 1, MSG_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0;
}

/* The keys go to the selected job; to every rank when it is one of a process group. */
Test(watch, keys_go_to_the_selected_job_or_its_group) {
    static struct tw_fix f;
    tw_fix_open(&f);
    struct source *src = f.src;
    const char *path = f.path;
    char msg[128], got[256];
    int a0 = tw_connect(path), a1 = tw_connect(path);
    tw_attach(a0, 0, -1);
    tw_attach(a1, 1, -1);
    for (int i = 0; i < 2000 && src->run.n_devices < 2; i++)
        tw_drain_for(src, EV_LOG, "attached on device");
    cr_assert_eq(src->run.n_devices, 2);
    src->ops->select(src, 1);
    cr_assert(src->ops->action(src, SOURCE_CLEANUP, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "cleanup sent to 1 job");
    cr_assert_not(tw_got(a0, got, sizeof(got)), "the unselected job got %s", got);
    usleep(1000);
    cr_assert(tw_got(a1, got, sizeof(got)));
    cr_assert_not_null(strstr(got, "\"cleanup\""), "%s", got);
    close(a0);
    close(a1);
    cr_assert(tw_drain_for(src, EV_LOG, "went away without ending")); /* a new pair comes */
    int r0 = tw_connect(path);
    tw_attach(r0, 0, 0);
    cr_assert(tw_drain_for(src, EV_LOG, "attached on device 0"));
    int r1 = tw_connect(path);
    tw_attach(r1, 1, 1);
    cr_assert(tw_drain_for(src, EV_LOG, "attached on device 1"));
    cr_assert_eq(src->run.n_devices, 2);
    src->ops->select(src, 0);
    cr_assert(src->ops->action(src, SOURCE_PAUSE_TOGGLE, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "pause sent to 2 jobs");
    close(r0);
    close(r1);
    tw_fix_close(&f);
}

/* The default socket's directory is refused unless it is this user's own with no access for
 * anyone else: made by another user, open to others, or a symbolic link, someone else could
 * replace the socket and take the job's stream and its controls. One line says what and what
 * to do; a private directory of ours is taken. */
Test(watch, the_default_socket_directory_must_be_private) {
    char dir[256], rt[300], sub[320], real[320], err[512];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(rt, sizeof(rt), "%s/rt", dir);
    snprintf(sub, sizeof(sub), "%s/ringside", rt);
    cr_assert_eq(mkdir(rt, 0700), 0);
    cr_assert_eq(setenv("XDG_RUNTIME_DIR", rt, 1), 0);
    struct bridge *b = NULL;

    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(chmod(sub, 0777), 0); /* as a stranger would leave it for us */
    cr_assert_eq(bridge_open(&b, NULL, err, sizeof(err)), -EPERM);
    cr_assert_null(b);
    cr_assert(strstr(err, sub) && strstr(err, "mode 0777") && strstr(err, "chmod 700"), "%s", err);
    cr_assert_null(strchr(err, '\n'), "one line: %s", err);

    if (geteuid() == 0) { /* made by another user: only root can hand it over to test it */
        cr_assert_eq(chmod(sub, 0700), 0);
        cr_assert_eq(chown(sub, 65534, 65534), 0);
        cr_assert_eq(bridge_open(&b, NULL, err, sizeof(err)), -EPERM);
        cr_assert(strstr(err, "owned by uid 65534, not by you"), "%s", err);
        cr_assert_eq(chown(sub, 0, 0), 0);
    }

    cr_assert_eq(rmdir(sub), 0); /* a symbolic link to a private directory */
    snprintf(real, sizeof(real), "%s/elsewhere", dir);
    cr_assert_eq(mkdir(real, 0700), 0);
    cr_assert_eq(symlink(real, sub), 0);
    cr_assert_eq(bridge_open(&b, NULL, err, sizeof(err)), -EPERM);
    cr_assert(strstr(err, "a symbolic link"), "%s", err);

    cr_assert_eq(unlink(sub), 0); /* ours and private: taken */
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(bridge_open(&b, NULL, err, sizeof(err)), 0, "%s", err);
    bridge_close(b);
    unsetenv("XDG_RUNTIME_DIR");
    rs_test_rmtree(dir);
}

/* A run line for rank r of a gloo group of n on the CPU. */
static void tw_attach_rank(int fd, int r, int n) {
    char line[512];
    snprintf(line, sizeof(line),
             "{\"type\":\"run\",\"version\":1,\"host\":\"h\",\"backend\":\"pytorch-cpu\","
             "\"device\":\"CPU\",\"arch\":\"\",\"devices\":1,\"device_list\":[0],\"start_ns\":1,"
             "\"start_wall_ns\":1,\"epochs\":0,\"chunk\":0,\"name\":\"r%d\",\"control\":true,"
             "\"rank\":%d,\"world_size\":%d,\"group_backend\":\"gloo\"}\n",
             r, r, n);
    tw_send(fd, line);
}

/* A collective call entered (end: left) with its number among the group's. */
static void tw_coll(int fd, unsigned id, unsigned cseq, bool end) {
    char line[512];
    if (end)
        snprintf(line, sizeof(line),
                 "{\"type\":\"call\",\"id\":%u,\"end\":true,\"start_ns\":1,\"end_ns\":2,"
                 "\"rc\":0}\n",
                 id);
    else
        snprintf(line, sizeof(line),
                 "{\"type\":\"call\",\"id\":%u,\"dev\":0,\"call\":\"torch.distributed.all_reduce\","
                 "\"op\":\"device\",\"coll\":\"allreduce\",\"group\":0,\"cseq\":%u,\"bytes\":4,"
                 "\"phase\":\"allreduce\",\"start_ns\":%llu,\"rank\":0}\n",
                 id, cseq, (unsigned long long)mono_now_ns());
    tw_send(fd, line);
}

/* Drain until an event of kind whose text holds text comes: a copy in *out. While draining,
 * a stack command to answer_fd is answered with a stack in the function held_before_all_reduce
 * (answered: set once it was). */
static bool tw_drain_ev(struct source *src, unsigned kind, const char *text, struct ev *out,
                        int answer_fd, bool *answered) {
    static struct ev evs[256];
    for (int i = 0; i < 4000; i++) {
        char got[512];
        if (answer_fd >= 0 && !*answered && tw_got(answer_fd, got, sizeof(got)) &&
            strstr(got, "\"cmd\":\"stack\"")) {
            tw_send(answer_fd,
                    "{\"type\":\"stack\",\"t_ns\":1,\"threads\":[{\"name\":\"MainThread\","
                    "\"ident\":1,\"calls\":[],\"frames\":[{\"file\":\"/x/train.py\",\"line\":9,"
                    "\"func\":\"main\",\"code\":\"held_before_all_reduce()\"},{\"file\":"
                    "\"/x/train.py\",\"line\":42,\"func\":\"held_before_all_reduce\","
                    "\"code\":\"time.sleep(30)\"}]}]}\n");
            *answered = true;
        }
        size_t n = src->ops->drain(src, evs, 2); /* one of the source's at a time: none lost */
        for (size_t k = 0; k < n; k++)
            if (evs[k].kind == kind && (!text || strstr(evs[k].u.text.text, text))) {
                *out = evs[k];
                return true;
            }
        if (n == 0)
            usleep(1000);
    }
    return false;
}

/* Two ranks line up by collective number: rank 0 waiting in all_reduce #2 that rank 1 has not
 * entered is slow, then a HANG, each naming rank 1 as the one not entered, its diagnosis and
 * rank 1's Python stack in the alert's note and in the hang bundle; when both return, rank 0
 * has recovered. */
Test(watch, a_collective_names_the_rank_that_has_not_entered_it) {
    static struct tw_fix f;
    tw_fix_open_with(&f, 100000000ull, 400000000ull);
    struct source *src = f.src;
    struct ev e;
    bool answered = false;
    int r0 = tw_connect(f.path), r1 = tw_connect(f.path);
    tw_attach_rank(r0, 0, 2);
    tw_attach_rank(r1, 1, 2);
    cr_assert(tw_drain_ev(src, EV_LOG, "rank 1 of 2", &e, -1, &answered));
    tw_coll(r0, 1, 1, false);
    tw_coll(r1, 1, 1, false);
    tw_coll(r0, 1, 1, true);
    tw_coll(r1, 1, 1, true);
    tw_coll(r0, 2, 2, false); /* rank 1 never comes to #2 */
    cr_assert(tw_drain_ev(src, EV_ALERT, "slow", &e, r1, &answered));
    const char *t = e.u.text.text;
    cr_assert_eq(strncmp(t, "allreduce #2 slow: rank 1 has not entered it; rank 0 (pid ", 58), 0,
                 "the rank waited for first, then the one waiting: %s", t);
    cr_assert_not_null(strstr(t, "(over 0.1 s); rank 1: "), "%s", t);
    cr_assert_eq(e.u.text.code, ALERT_SYNC_SLOW);
    struct ev hang;
    cr_assert(tw_drain_ev(src, EV_ALERT, "HANG", &hang, r1, &answered));
    cr_assert(answered, "rank 1 was asked for its stack");
    cr_assert(tw_drain_ev(src, EV_LOG, "hang diagnostics written to", &e, r1, &answered));
    const char *note = src->ops->note(src, hang.t_ns, hang.dev, hang.u.text.code);
    cr_assert_not_null(note);
    cr_assert_not_null(strstr(note, "Verdict: a peer rank has not entered the collective"), "%s",
                       note);
    cr_assert_not_null(strstr(note, "Python stack of rank 1"), "%s", note);
    cr_assert_not_null(strstr(note, "in held_before_all_reduce"), "%s", note);
    const char *path = strstr(e.u.text.text, f.dir);
    cr_assert_not_null(path, "%s", e.u.text.text);
    char bundle[512];
    static char body[1 << 20];
    snprintf(bundle, sizeof(bundle), "%.*s", (int)strcspn(path, " ;,\n"), path);
    FILE *bf = fopen(bundle, "r");
    cr_assert_not_null(bf, "%s", bundle);
    size_t got = fread(body, 1, sizeof(body) - 1, bf);
    body[got] = '\0';
    fclose(bf);
    cr_assert_not_null(strstr(body, "\"diagnosis\""), "%s", body);
    cr_assert_not_null(strstr(body, "held_before_all_reduce"));
    tw_coll(r1, 2, 2, false); /* it comes at last: both return */
    tw_coll(r0, 2, 2, true);
    tw_coll(r1, 2, 2, true);
    cr_assert(tw_drain_ev(src, EV_ALERT, "recovered", &e, -1, &answered));
    cr_assert_not_null(strstr(e.u.text.text, "rank 0"), "%s", e.u.text.text);
    close(r0);
    close(r1);
    tw_fix_close(&f);
}

/* A synchronize that takes long is slow, then a HANG, then recovered: three events that stay. */
Test(watch, a_long_synchronize_leaves_slow_hang_and_recovered) {
    static struct tw_fix f;
    tw_fix_open_with(&f, 50000000ull, 150000000ull);
    struct source *src = f.src;
    struct ev e;
    bool answered = false;
    int fd = tw_connect(f.path);
    tw_attach_rank(fd, 0, 1);
    cr_assert(tw_drain_ev(src, EV_LOG, "attached", &e, -1, &answered));
    char line[512];
    snprintf(line, sizeof(line),
             "{\"type\":\"call\",\"id\":7,\"dev\":0,\"call\":\"torch.cuda.synchronize\","
             "\"op\":\"device\",\"phase\":\"sync\",\"start_ns\":%llu,\"rank\":0}\n",
             (unsigned long long)mono_now_ns());
    tw_send(fd, line);
    cr_assert(tw_drain_ev(src, EV_ALERT, "slow", &e, fd, &answered));
    cr_assert_not_null(strstr(e.u.text.text, "in torch.cuda.synchronize"), "%s", e.u.text.text);
    cr_assert(tw_drain_ev(src, EV_ALERT, "HANG", &e, fd, &answered));
    tw_send(fd, "{\"type\":\"call\",\"id\":7,\"end\":true,\"start_ns\":1,\"end_ns\":2,\"rc\":0}\n");
    cr_assert(tw_drain_ev(src, EV_ALERT, "recovered", &e, -1, &answered));
    cr_assert_not_null(strstr(e.u.text.text, "torch.cuda.synchronize returned after"), "%s",
                       e.u.text.text);
    close(fd);
    tw_fix_close(&f);
}

/* What another user's process saw: it could connect, and was then closed on without a word. */
struct tw_stranger {
    int connected, closed;
};

static void tw_stranger_fn(void *ctx, void *out) {
    struct tw_stranger *o = out;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", (const char *)ctx);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        return;
    o->connected = 1;
    const char run[] = "{\"type\":\"run\",\"version\":1,\"name\":\"stranger\"}\n";
    if (send(fd, run, sizeof(run) - 1, MSG_NOSIGNAL) < 0) { /* closed on before it wrote */
        o->closed = errno == EPIPE || errno == ECONNRESET;
        close(fd);
        return;
    }
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char c;
    o->closed = read(fd, &c, 1) <= 0;
    close(fd);
}

/* A process of another user that reaches the socket (one made reachable on purpose, as a
 * --socket in a shared place might be) is closed on at once and said; it attaches nothing. */
Test(watch, another_users_process_is_refused) {
    if (geteuid() != 0) /* becoming another user takes root */
        cr_skip_test("needs root to become nobody");
    static struct tw_fix f;
    tw_fix_open(&f);
    cr_assert_eq(chmod(f.dir, 0755), 0);
    cr_assert_eq(chmod(f.path, 0666), 0);
    struct tw_stranger got = {0};
    static struct ev evs[64];
    f.src->ops->drain(f.src, evs, 64);
    pid_t child = fork(); /* the dashboard's side drains while the stranger tries */
    cr_assert_geq(child, 0);
    if (child == 0) {
        int rc = rs_test_as_nobody(tw_stranger_fn, f.path, &got, sizeof(got));
        _exit(rc == 0 && got.connected && got.closed ? 0 : 1);
    }
    cr_assert(tw_drain_for(f.src, EV_LOG, "tried to attach: refused"));
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the stranger was not closed on");
    cr_assert_eq(f.src->run.n_devices, 1);
    cr_assert_not(f.src->run.ranks[0].valid, "nothing attached");
    tw_fix_close(&f);
}

/* A group that has ended leaves the view when a new job comes, even one that tells its rank
 * at once: its ranks are not the new job's peers. Ended ranks stay while one of their group is
 * still attached. */
Test(watch, an_ended_group_gives_way_to_the_next_job) {
    static struct tw_fix f;
    tw_fix_open(&f);
    struct source *src = f.src;
    struct ev e;
    bool answered = false;
    int r0 = tw_connect(f.path), r1 = tw_connect(f.path);
    tw_attach_rank(r0, 0, 2);
    tw_attach_rank(r1, 1, 2);
    for (int i = 0; i < 2000 && src->run.n_devices < 2; i++)
        tw_drain_ev(src, EV_LOG, "attached", &e, -1, &answered);
    cr_assert_eq(src->run.n_devices, 2);
    close(r0);
    cr_assert(tw_drain_ev(src, EV_LOG, "went away without ending", &e, -1, &answered));
    cr_assert_eq(src->run.n_devices, 2, "rank 0 stays beside rank 1, still attached");
    close(r1);
    cr_assert(tw_drain_ev(src, EV_LOG, "went away without ending", &e, -1, &answered));
    int n0 = tw_connect(f.path);
    tw_attach_rank(n0, 0, 2);
    cr_assert(tw_drain_ev(src, EV_LOG, "attached", &e, -1, &answered));
    cr_assert_eq(src->run.n_devices, 1, "the new job alone");
    cr_assert(src->run.ranks[0].open);
    close(n0);
    tw_fix_close(&f);
}

/* Where the ranks met (a rank line's group_id). */
static void tw_rank_line(int fd, int r, const char *group) {
    char line[256];
    snprintf(line, sizeof(line),
             "{\"type\":\"rank\",\"t_ns\":1,\"rank\":%d,\"world_size\":2,\"group_backend\":"
             "\"gloo\",\"group_id\":\"%s\"}\n",
             r, group);
    tw_send(fd, line);
}

/* Two jobs of the same world size at once: a rank of the other job, behind in its own
 * numbering, is not one the waiting rank's collective waits for. */
Test(watch, another_jobs_ranks_are_not_peers) {
    static struct tw_fix f;
    tw_fix_open_with(&f, 100000000ull, 30000000000ull);
    struct source *src = f.src;
    struct ev e;
    bool answered = false;
    int a0 = tw_connect(f.path), a1 = tw_connect(f.path), b1 = tw_connect(f.path);
    tw_attach_rank(a0, 0, 2);
    tw_attach_rank(a1, 1, 2);
    tw_attach_rank(b1, 1, 2);
    tw_rank_line(a0, 0, "tcp://127.0.0.1:1000");
    tw_rank_line(a1, 1, "tcp://127.0.0.1:1000");
    tw_rank_line(b1, 1, "tcp://127.0.0.1:2000");
    for (int i = 0; i < 2000 && src->run.n_devices < 3; i++)
        tw_drain_ev(src, EV_LOG, "attached", &e, -1, &answered);
    cr_assert_eq(src->run.n_devices, 3);
    tw_coll(a0, 1, 1, false); /* job A's ranks both in #1; job B's rank 1 in none */
    tw_coll(a1, 1, 1, false);
    cr_assert(tw_drain_ev(src, EV_ALERT, "slow", &e, -1, &answered));
    cr_assert_null(strstr(e.u.text.text, "has not entered it"),
                   "the other job's rank taken for a peer: %s", e.u.text.text);
    close(a0);
    close(a1);
    close(b1);
    tw_fix_close(&f);
}
