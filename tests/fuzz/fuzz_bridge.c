/* libFuzzer target for the PyTorch bridge's socket (backend/run/bridge.c) and what `ringside
 * watch` makes of a job's lines (backend/run/source_watch.c: "call" lines, and the recording
 * parser with the replay's snapshot for the rest). The input is what one job sends: first
 * through a bridge of its own, written in pieces of sizes the input decides and read between
 * them, every line handed on checked against the input's own lines; then through the watch
 * source, whose events, views, status and commands back to the job are checked. */
#include "backend/engine/engine.h"
#include "backend/run/bridge.h"
#include "backend/run/run.h"
#include "backend/run/run_opts.h"
#include "backend/run/source_watch.h"
#include "tests/fuzz/fuzz_target.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FUZZ_BRIDGE_DRAIN 64

static struct fuzz_bridge_fix {
    char dir[64], raw_path[96], watch_path[96];
    struct run_opts o;
    struct run *run;
    struct bridge *raw, *watched;
    struct source *src;
} fuzz_bridge_fix;

/* What the raw bridge hands on for the input now being read. */
static struct fuzz_bridge_seen {
    const char *data;
    size_t size, off; /* the next line starts at data + off */
    unsigned opened, closed, lines;
    unsigned job;
    pid_t pid;
} fuzz_bridge_seen;

static void fuzz_bridge_cleanup(void) {
    struct fuzz_bridge_fix *f = &fuzz_bridge_fix;
    if (f->src)
        f->src->ops->destroy(f->src);
    bridge_close(f->watched);
    bridge_close(f->raw);
    if (f->run)
        run_destroy(f->run);
    rmdir(f->dir);
}

/* The bridges, and a watch source over a run of neither telemetry nor kernel log (never
 * started: its rings stay empty). Once. */
static void fuzz_bridge_setup(void) {
    struct fuzz_bridge_fix *f = &fuzz_bridge_fix;
    char err[256];
    long pid = (long)getpid();
    snprintf(f->dir, sizeof(f->dir), "/tmp/fuzz_bridge_%ld", pid);
    snprintf(f->raw_path, sizeof(f->raw_path), "/tmp/fuzz_bridge_%ld/raw.sock", pid);
    snprintf(f->watch_path, sizeof(f->watch_path), "/tmp/fuzz_bridge_%ld/watch.sock", pid);
    FUZZ_CHECK(bridge_open(&f->raw, f->raw_path, err, sizeof(err)) == 0);
    FUZZ_CHECK(bridge_open(&f->watched, f->watch_path, err, sizeof(err)) == 0);
    engine_conf_default(&f->o.conf);
    tele_conf_default(&f->o.tele);
    snprintf(f->o.tele.only, sizeof(f->o.tele.only), "none");
    f->o.kmsg.off = true;
    struct run_conf c = {.o = &f->o, .cmd = "watch", .train = false, .ring_events = 64};
    FUZZ_CHECK(run_create(&f->run, &c) == 0);
    FUZZ_CHECK(watch_source_create(f->run, f->watched, &f->src) == 0);
    atexit(fuzz_bridge_cleanup);
}

static int fuzz_bridge_connect(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    FUZZ_CHECK(strlen(path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    FUZZ_CHECK(connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0);
    return fd;
}

/* ---- the raw bridge: lines exactly as sent ---- */

static void fuzz_bridge_on_open(void *ctx, unsigned job, pid_t pid) {
    struct fuzz_bridge_seen *s = ctx;
    FUZZ_CHECK(job < BRIDGE_MAX_JOBS && s->opened++ == 0);
    s->job = job;
    s->pid = pid;
}

static void fuzz_bridge_on_line(void *ctx, unsigned job, const char *line, size_t len) {
    struct fuzz_bridge_seen *s = ctx;
    FUZZ_CHECK(s->opened == 1 && s->closed == 0 && job == s->job);
    /* the input's next line, without its newline */
    const char *at = s->data + s->off;
    const char *nl = memchr(at, '\n', s->size - s->off);
    FUZZ_CHECK(nl != NULL && len == (size_t)(nl - at) && memcmp(line, at, len) == 0);
    s->off += len + 1;
    s->lines++;
}

static void fuzz_bridge_on_overlong(void *ctx, unsigned job) {
    (void)ctx;
    (void)job;
    FUZZ_CHECK(!"a line under BRIDGE_LINE_MAX skipped as overlong");
}

static void fuzz_bridge_on_close(void *ctx, unsigned job) {
    struct fuzz_bridge_seen *s = ctx;
    FUZZ_CHECK(s->opened == 1 && job == s->job && s->closed++ == 0);
}

/* xorshift64, seeded from the input: how it is cut into writes and reads */
static uint64_t fuzz_bridge_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void fuzz_bridge_raw(const uint8_t *data, size_t size) {
    struct fuzz_bridge_fix *f = &fuzz_bridge_fix;
    struct fuzz_bridge_seen *s = &fuzz_bridge_seen;
    *s = (struct fuzz_bridge_seen){.data = (const char *)data, .size = size};
    struct bridge_sink sink = {fuzz_bridge_on_open,
                               fuzz_bridge_on_line,
                               fuzz_bridge_on_overlong,
                               fuzz_bridge_on_close,
                               s,
                               NULL};
    uint64_t x = 0x9e3779b97f4a7c15ull ^ size;
    for (size_t i = 0; i < size && i < 64; i++)
        x = (x ^ data[i]) * 0x100000001b3ull;
    x = x ? x : 1;
    int fd = fuzz_bridge_connect(f->raw_path);
    bridge_poll(f->raw, &sink, 1);
    FUZZ_CHECK(s->opened == 1 && s->pid == getpid());
    /* a command back to the job arrives as one line */
    static const char cmd[] = "{\"type\":\"command\",\"cmd\":\"pause\",\"arg\":0}";
    char back[sizeof(cmd) + 1];
    FUZZ_CHECK(bridge_send(f->raw, s->job, cmd) == 0);
    FUZZ_CHECK(read(fd, back, sizeof(back)) == (ssize_t)sizeof(cmd));
    FUZZ_CHECK(memcmp(back, cmd, sizeof(cmd) - 1) == 0 && back[sizeof(cmd) - 1] == '\n');
    FUZZ_CHECK(bridge_send(f->raw, (s->job + 1) % BRIDGE_MAX_JOBS, cmd) == -ENOTCONN);
    for (size_t off = 0; off < size;) {
        uint64_t r = fuzz_bridge_next(&x);
        size_t want = r % 4 == 0 ? 1 + (size_t)(r >> 8) % 4096 : 1 + (size_t)(r >> 8) % 48;
        want = want > size / 16 ? want : size / 16; /* at most about 16 writes */
        want = want < size - off ? want : size - off;
        ssize_t w = write(fd, data + off, want);
        FUZZ_CHECK(w > 0 || (w < 0 && errno == EAGAIN));
        off += w > 0 ? (size_t)w : 0;
        bridge_poll(f->raw, &sink, 1 + (size_t)(r >> 32) % 8192);
    }
    close(fd);
    for (int i = 0; i < 16 && !s->closed; i++)
        bridge_poll(f->raw, &sink, SIZE_MAX);
    FUZZ_CHECK(s->closed == 1);
    /* every complete line came, in order; what follows the last newline never does */
    const char *last = size ? memchr(s->data + s->off, '\n', size - s->off) : NULL;
    FUZZ_CHECK(last == NULL);
    int fds[BRIDGE_MAX_JOBS + 1];
    FUZZ_CHECK(bridge_fds(f->raw, fds) == 1);
}

/* ---- the watch source ---- */

static void fuzz_bridge_check_ev(const struct ev *e) {
    FUZZ_CHECK(e->kind < EV_KIND_COUNT);
    switch ((enum ev_kind)e->kind) {
    case EV_PHASE:
        FUZZ_CHECK(e->u.phase.phase < PHASE_COUNT);
        break;
    case EV_SYNC:
        FUZZ_CHECK(e->u.sync.op < SYNC_OP_COUNT);
        break;
    case EV_COLLECTIVE:
        FUZZ_CHECK(e->u.coll.op < EV_COLL_COUNT);
        break;
    case EV_COMMAND:
        FUZZ_CHECK(e->u.command.cmd < CMD_COUNT);
        FUZZ_CHECK(memchr(e->u.command.text, '\0', sizeof(e->u.command.text)) != NULL);
        break;
    case EV_ALERT:
    case EV_LOG:
        FUZZ_CHECK(e->u.text.severity <= SEV_ERROR);
        FUZZ_CHECK(memchr(e->u.text.text, '\0', sizeof(e->u.text.text)) != NULL);
        break;
    case EV_KMSG:
        FUZZ_CHECK(memchr(e->u.kmsg.message, '\0', sizeof(e->u.kmsg.message)) != NULL);
        break;
    case EV_MEM:
    case EV_METRIC:
    case EV_KIND_COUNT:
        break;
    }
}

/* Everything the source holds now, each event checked; how many. */
static size_t fuzz_bridge_drain(struct source *src) {
    static struct ev out[FUZZ_BRIDGE_DRAIN];
    size_t n, total = 0;
    while ((n = src->ops->drain(src, out, FUZZ_BRIDGE_DRAIN)) > 0) {
        FUZZ_CHECK(n <= FUZZ_BRIDGE_DRAIN);
        for (size_t i = 0; i < n; i++)
            fuzz_bridge_check_ev(&out[i]);
        total += n;
    }
    return total;
}

/* The view, the status line and the calls in flight. */
static void fuzz_bridge_view(struct source *src) {
    const struct run_info *r = &src->run;
    FUZZ_CHECK(r->n_devices >= 1 && r->n_devices <= RUN_MAX_DEVICES);
    for (unsigned k = 0; k < r->n_devices; k++) {
        const struct engine_snap *snap = src->ops->dev_snap(src, k);
        FUZZ_CHECK(snap != NULL && snap->phase <= PHASE_COUNT);
        struct trace_inflight inf;
        if (src->ops->inflight(src, r->devices[k], &inf))
            FUZZ_CHECK(inf.op < SYNC_OP_COUNT && inf.phase <= PHASE_COUNT);
    }
    FUZZ_CHECK(src->ops->dev_snap(src, r->n_devices) == NULL);
    const char *st = src->ops->status(src);
    FUZZ_CHECK(st != NULL && strlen(st) < 256);
}

static void fuzz_bridge_watch(const uint8_t *data, size_t size) {
    struct fuzz_bridge_fix *f = &fuzz_bridge_fix;
    struct source *src = f->src;
    size_t newlines = 0;
    for (size_t i = 0; i < size; i++)
        newlines += data[i] == '\n';
    uint64_t bad0, bad, dropped;
    watch_source_counts(src, &bad0, &dropped);
    int fd = fuzz_bridge_connect(f->watch_path);
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        FUZZ_CHECK(w > 0 || (w < 0 && errno == EAGAIN));
        off += w > 0 ? (size_t)w : 0;
        fuzz_bridge_drain(src);
    }
    fuzz_bridge_drain(src);
    fuzz_bridge_view(src);
    /* the loop's keys while the job is there: sent, refused or said to have ended */
    for (unsigned a = 0; a <= SOURCE_ACTIONS; a++) {
        char msg[128];
        memset(msg, 'x', sizeof(msg));
        bool ok = src->ops->action(src, (enum source_action)a, msg, sizeof(msg));
        FUZZ_CHECK(ok == (a < SOURCE_ACTIONS));
        FUZZ_CHECK(!ok || (memchr(msg, '\0', sizeof(msg)) != NULL && msg[0] != '\0'));
    }
    src->ops->select(src, (unsigned)size % 3);
    close(fd);
    fuzz_bridge_drain(src);
    fuzz_bridge_view(src);
    watch_source_counts(src, &bad, &dropped);
    FUZZ_CHECK(bad >= bad0 && bad - bad0 <= newlines);
    int fds[BRIDGE_MAX_JOBS + 1];
    FUZZ_CHECK(bridge_fds(f->watched, fds) == 1); /* the job's close was seen */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_bridge_fix.run)
        fuzz_bridge_setup();
    fuzz_bridge_raw(data, size);
    fuzz_bridge_watch(data, size);
    return 0;
}

const char fuzz_target_name[] = "fuzz_bridge";

/* Pieces of a job's lines (python/ringside: connect, phase, step, synchronize, timed, the
 * commands it answers, close). */
const char *const fuzz_fragments[] = {
    "{\"type\":\"run\",\"version\":1,\"ringside\":\"bridge\",\"host\":\"vm\",\"backend\":"
    "\"pytorch-cpu\",\"device\":\"CPU\",\"arch\":\"\",\"devices\":1,\"device_list\":[0],"
    "\"start_ns\":53092430175241,\"start_wall_ns\":1795695304141099735,\"epochs\":0,\"chunk\":0,"
    "\"name\":\"train-mlp\",\"pid\":27995,\"control\":true,\"config\":{\"script\":\"cap.py\","
    "\"torch\":null}}\n",
    "{\"type\":\"phase\",\"phase\":\"forward\",\"name\":\"forward\",\"dev\":0,\"seq\":0,"
    "\"start_ns\":53092432229215,\"end_ns\":53092432230578,\"epoch\":0,\"step\":-1,\"chunk\":-1}\n",
    "{\"type\":\"phase\",\"phase\":\"other\",\"name\":\"data-shuffle\",\"dev\":0,\"seq\":2,"
    "\"start_ns\":53092432248080,\"end_ns\":53092432248551,\"epoch\":0,\"step\":-1,\"chunk\":-1}\n",
    "{\"type\":\"call\",\"dev\":0,\"call\":\"torch.cuda.synchronize\",\"op\":\"device\","
    "\"phase\":\"sync\",\"start_ns\":53092432253110,\"rank\":-1}\n",
    "{\"type\":\"sync\",\"dev\":0,\"op\":\"device\",\"start_ns\":53092432253110,\"dur_ns\":397091,"
    "\"rc\":0,\"seq\":3}\n",
    "{\"type\":\"metric\",\"seq\":4,\"dev\":0,\"t_ns\":53092432675939,\"epoch\":0,\"step\":0,"
    "\"loss\":0.5,\"samples_per_s\":1234.5}\n",
    "{\"type\":\"call\",\"dev\":0,\"call\":\"torch.distributed.barrier\",\"end\":true,"
    "\"start_ns\":53092432787788,\"end_ns\":53092442885591}\n",
    "{\"type\":\"command\",\"t_ns\":53092943051252,\"cmd\":\"pause\",\"arg\":0,\"rc\":0,"
    "\"result\":\"paused at step 3\",\"seq\":15}\n",
    "{\"type\":\"summary\",\"state\":\"completed\",\"epochs\":1,\"steps\":3}\n",
    "{\"type\":\"mem\",\"seq\":3,\"dev\":0,\"t_ns\":1100250000,\"allocated\":1048576,\"reserved\":"
    "2097152,\"largest_free\":1048576,\"free_blocks\":1,\"segments\":1,\"frag\":0}\n",
    "{\"type\":\"layout\",\"dev\":0,\"t_ns\":1500000000,\"segments\":[{\"size\":2097152,\"small\":"
    "false,\"truncated\":false,\"blocks\":[[0,1048576,1],[1048576,1048576,0]]}],\"n_segments\":1}"
    "\n",
    "\"type\":\"call\"",
    "\"rank\":3",
    "\"control\":false",
    "\"device_list\":[7]",
    "\"devices\":2",
    "\"name\":\"a\\\"b\"",
    "\"end\":true",
    "\"start_ns\":-1",
    "\"phase\":\"teardown\"",
    "\"op\":\"stream\"",
    "\n",
    "\r\n",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
