/* The kernel-log watcher under threads: its thread follows a FIFO, a file, saved records and the
 * session log this thread writes, replays an --inject kmsg: file at its pace, pushes classified
 * events onto a ring read here, and stops promptly; a flood into a ring nobody drains stays
 * bounded, every event pushed or dropped. */
#include "backend/core/errbuf.h"
#include "backend/core/evring.h"
#include "backend/core/mono.h"
#include "backend/kmsg/kmsg_watch.h"
#include "tests/support/rs_test.h"
#include "tests/threads/thread_cases.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TK_FAIL(...)   errbuf_set(why, whylen, -1, __VA_ARGS__)
#define TK_EVENTS      16
#define TK_WAIT_NS     10000000000ull /* how long an awaited event may take */
#define TK_FLOOD_LINES 200000u
#define TK_FLOOD_WAIT  60000000000ull /* ... and the whole flood (TSan is slow) */
#define TK_FLOOD_RING  64u
#define TK_SQ_INTR_LINE                                                                            \
    "amdgpu: sq_intr: error, se 0, data 0x1, sa 0, priv 1, wave_id 0, simd_id 0, wgp_id 0\n"

/* One watcher, its ring, its temp dir, and the events drained so far. */
struct thread_kmsg_run {
    char dir[256];
    struct evring *ring;
    struct kmsg_watch *w;
    struct ev ev[TK_EVENTS];
    size_t n;
};

static int thread_kmsg_init(struct thread_kmsg_run *r, char *why, size_t whylen) {
    memset(r, 0, sizeof(*r));
    if (rs_test_tmpdir(r->dir, sizeof(r->dir)) != 0)
        return TK_FAIL("cannot create a temp dir");
    return 0;
}

/* Ring of cap events, watcher on c, started. */
static int thread_kmsg_open(struct thread_kmsg_run *r, const struct kmsg_conf *c, uint32_t cap,
                            char *why, size_t whylen) {
    char err[512] = "";
    if (evring_create(&r->ring, cap) != 0)
        return TK_FAIL("evring_create");
    int rc = kmsg_watch_create(&r->w, c, r->ring, err, sizeof(err));
    if (rc != 0)
        return TK_FAIL("kmsg_watch_create: %d %s", rc, err);
    if ((rc = kmsg_watch_start(r->w)) != 0)
        return TK_FAIL("kmsg_watch_start: %d", rc);
    return 0;
}

static void thread_kmsg_close(struct thread_kmsg_run *r) {
    kmsg_watch_destroy(r->w);
    evring_destroy(r->ring);
    rs_test_rmtree(r->dir);
}

/* Drain until want events have arrived in all, blocking in poll on the ring's wake fd. */
static int thread_kmsg_await(struct thread_kmsg_run *r, size_t want, char *why, size_t whylen) {
    uint64_t deadline = mono_now_ns() + TK_WAIT_NS;
    for (;;) {
        r->n += evring_drain(r->ring, r->ev + r->n, TK_EVENTS - r->n);
        if (r->n >= want)
            return 0;
        uint64_t now = mono_now_ns();
        if (now >= deadline)
            return TK_FAIL("%zu of %zu events after 10 s", r->n, want);
        struct pollfd pf = {evring_wake_fd(r->ring), POLLIN, 0};
        poll(&pf, 1, (int)((deadline - now) / 1000000u) + 1);
    }
}

/* Nothing beyond the n events expected came. */
static int thread_kmsg_no_more(struct thread_kmsg_run *r, char *why, size_t whylen) {
    size_t n = r->n;
    r->n += evring_drain(r->ring, r->ev + r->n, TK_EVENTS - r->n);
    if (r->n != n)
        return TK_FAIL("%zu events, expected %zu (extra: \"%s\")", r->n, n,
                       r->ev[n].kind == EV_KMSG ? r->ev[n].u.kmsg.message : r->ev[n].u.text.text);
    return 0;
}

/* open(path, O_WRONLY | flags) and write all of text. 0 or -errno. */
static int thread_kmsg_write(const char *path, int flags, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
    if (fd < 0)
        return -errno;
    size_t n = strlen(text), done = 0;
    while (done < n) {
        ssize_t k = write(fd, text + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int rc = -errno;
            close(fd);
            return rc;
        }
        done += (size_t)k;
    }
    return close(fd) == 0 ? 0 : -errno;
}

/* "[sec.usec] msg\n" stamped now on CLOCK_MONOTONIC, appended to buf; the stamp (in ns, whole
 * microseconds as written) into *ns. */
static void thread_kmsg_stamp(char *buf, size_t len, uint64_t *ns, const char *msg) {
    uint64_t us = mono_now_ns() / 1000u;
    *ns = us * 1000u;
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "[%llu.%06llu] %s\n", (unsigned long long)(us / 1000000u),
             (unsigned long long)(us % 1000000u), msg);
}

/* An event's time is its kernel stamp mapped (within 1 s) and never in the future. */
static int thread_kmsg_check_time(const struct ev *e, uint64_t stamp, uint64_t now, char *why,
                                  size_t whylen) {
    const struct kmsg_event *k = &e->u.kmsg;
    if (!(k->has & KMSG_HAS(TS)) || k->ts_ns != stamp)
        return TK_FAIL("\"%s\": kernel stamp %llu, wrote %llu", k->message,
                       (unsigned long long)k->ts_ns, (unsigned long long)stamp);
    uint64_t d = e->t_ns > stamp ? e->t_ns - stamp : stamp - e->t_ns;
    if (d > 1000000000u || e->t_ns > now)
        return TK_FAIL("\"%s\": t_ns %llu for stamp %llu (read by %llu)", k->message,
                       (unsigned long long)e->t_ns, (unsigned long long)stamp,
                       (unsigned long long)now);
    return 0;
}

static int thread_kmsg_check_stats(struct kmsg_watch *w, enum kmsg_state state, uint64_t lines,
                                   uint64_t events, char *why, size_t whylen) {
    struct kmsg_stats s;
    uint64_t deadline = mono_now_ns() + TK_WAIT_NS;
    /* an event is counted just after its push: the last one drained may not be yet */
    for (kmsg_watch_stats(w, &s); s.events < events && mono_now_ns() < deadline;
         kmsg_watch_stats(w, &s))
        sched_yield();
    if (s.state != state || s.lines != lines || s.events != events || s.cut != 0 || s.dropped != 0)
        return TK_FAIL("stats: state %d lines %llu events %llu cut %llu dropped %llu; expected "
                       "state %d lines %llu events %llu",
                       (int)s.state, (unsigned long long)s.lines, (unsigned long long)s.events,
                       (unsigned long long)s.cut, (unsigned long long)s.dropped, (int)state,
                       (unsigned long long)lines, (unsigned long long)events);
    return 0;
}

/* The FIFO's four lines: a ring timeout and its process line (one event), a benign amdgpu line
 * (an event only with chatter), an Xid 79. */
static int thread_kmsg_fifo_check(struct thread_kmsg_run *r, bool chatter, const uint64_t *stamp,
                                  uint64_t now, char *why, size_t whylen) {
    size_t want = chatter ? 3 : 2;
    for (size_t i = 0; i < want; i++)
        if (r->ev[i].kind != EV_KMSG || r->ev[i].u.kmsg.source != KMSG_SRC_FILE)
            return TK_FAIL("event %zu: kind %u source %u", i, r->ev[i].kind,
                           r->ev[i].u.kmsg.source);
    const struct kmsg_event *to = &r->ev[0].u.kmsg, *xid = &r->ev[want - 1].u.kmsg;
    if (to->category != KMSG_CAT_RING_TIMEOUT || to->lines != 2 || to->line != 1 ||
        !(to->has & KMSG_HAS(PID)) || to->pid != 4242 || to->tid != 4243 ||
        strcmp(to->process, "python3") != 0 || strcmp(to->ring, "gfx_0.0.0") != 0 ||
        to->seq_signaled != 10 || to->seq_emitted != 12 || strcmp(to->pci, "0000:03:00.0") != 0 ||
        to->vendor != KMSG_VENDOR_AMDGPU || to->severity != SEV_ERROR)
        return TK_FAIL("ring timeout: category %u lines %u line %u pid %d tid %d process '%s' ring "
                       "'%s' seq %llu/%llu pci '%s'",
                       to->category, to->lines, to->line, to->pid, to->tid, to->process, to->ring,
                       (unsigned long long)to->seq_signaled, (unsigned long long)to->seq_emitted,
                       to->pci);
    if (chatter) {
        const struct kmsg_event *b = &r->ev[1].u.kmsg;
        if (b->category != KMSG_CAT_NONE || b->vendor != KMSG_VENDOR_AMDGPU || b->line != 3 ||
            b->severity != SEV_INFO)
            return TK_FAIL("chatter: category %u vendor %u line %u severity %u", b->category,
                           b->vendor, b->line, b->severity);
    }
    if (xid->category != KMSG_CAT_XID || !(xid->has & KMSG_HAS(XID)) || xid->xid != 79 ||
        strcmp(xid->pci, "0000:3b:00.0") != 0 || xid->vendor != KMSG_VENDOR_NVIDIA ||
        xid->line != 4 || xid->pid != 1234)
        return TK_FAIL("xid: category %u xid %u pci '%s' vendor %u line %u pid %d", xid->category,
                       xid->xid, xid->pci, xid->vendor, xid->line, xid->pid);
    if (thread_kmsg_check_time(&r->ev[0], stamp[0], now, why, whylen) != 0 ||
        (chatter && thread_kmsg_check_time(&r->ev[1], stamp[2], now, why, whylen) != 0) ||
        thread_kmsg_check_time(&r->ev[want - 1], stamp[3], now, why, whylen) != 0)
        return -1;
    return thread_kmsg_check_stats(r->w, KMSG_STATE_FILE, 4, want, why, whylen);
}

static int thread_kmsg_fifo_run(bool chatter, char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    char fifo[300], text[1024] = "";
    uint64_t stamp[4];
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    c.chatter = chatter;
    snprintf(fifo, sizeof(fifo), "%s/kmsg.fifo", r.dir);
    snprintf(c.file, sizeof(c.file), "%s", fifo);
    int rc = mkfifo(fifo, 0600) == 0 ? 0 : TK_FAIL("mkfifo %s: %s", fifo, strerror(errno));
    if (rc == 0)
        rc = thread_kmsg_open(&r, &c, 64, why, whylen);
    thread_kmsg_stamp(text, sizeof(text), &stamp[0],
                      "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=10, "
                      "emitted seq=12");
    thread_kmsg_stamp(text, sizeof(text), &stamp[1],
                      "amdgpu 0000:03:00.0: amdgpu:  Process information: process python3 pid "
                      "4242 thread python3 pid 4243");
    thread_kmsg_stamp(text, sizeof(text), &stamp[2],
                      "amdgpu 0000:03:00.0: amdgpu: SMU is initialized successfully!");
    thread_kmsg_stamp(text, sizeof(text), &stamp[3],
                      "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off "
                      "the bus.");
    /* the watcher holds the FIFO read-write: this open has a reader and does not block */
    if (rc == 0 && (rc = thread_kmsg_write(fifo, 0, text)) != 0)
        rc = TK_FAIL("writing %s: %s", fifo, strerror(-rc));
    if (rc == 0)
        rc = thread_kmsg_await(&r, chatter ? 3 : 2, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_fifo_check(&r, chatter, stamp, mono_now_ns(), why, whylen);
    if (rc == 0)
        rc = thread_kmsg_no_more(&r, why, whylen);
    thread_kmsg_close(&r);
    return rc;
}

int thread_case_kmsg_fifo(char *why, size_t whylen) {
    if (thread_kmsg_fifo_run(true, why, whylen) != 0)
        return -1;
    char sub[400];
    if (thread_kmsg_fifo_run(false, sub, sizeof(sub)) != 0)
        return TK_FAIL("chatter off: %s", sub);
    return 0;
}

/* A GPU reset event from the PCI function 0000:0N:00.0 (the PCI address tells lines apart). */
static int thread_kmsg_reset_check(const struct ev *e, int bus, uint32_t line, char *why,
                                   size_t whylen) {
    char pci[16];
    snprintf(pci, sizeof(pci), "0000:%02x:00.0", bus);
    const struct kmsg_event *k = &e->u.kmsg;
    if (e->kind != EV_KMSG || k->category != KMSG_CAT_GPU_RESET || strcmp(k->pci, pci) != 0 ||
        (line && k->line != line))
        return TK_FAIL("expected a GPU reset of %s at line %u, got kind %u category %u pci '%s' "
                       "line %u",
                       pci, line, e->kind, k->category, k->pci, k->line);
    return 0;
}

int thread_case_kmsg_file_follow(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    int rc = rs_test_write_file(r.dir, "kern.log",
                                "amdgpu 0000:01:00.0: amdgpu: GPU reset begin!\n"
                                "amdgpu 0000:02:00.0: amdgpu: GPU reset begin!\n",
                                c.file, sizeof(c.file));
    if (rc != 0)
        rc = TK_FAIL("writing %s", c.file);
    if (rc == 0)
        rc = thread_kmsg_open(&r, &c, 64, why, whylen);
    /* what the file held at the start */
    if (rc == 0 && (rc = thread_kmsg_await(&r, 2, why, whylen)) == 0 &&
        (rc = thread_kmsg_reset_check(&r.ev[0], 1, 1, why, whylen)) == 0)
        rc = thread_kmsg_reset_check(&r.ev[1], 2, 2, why, whylen);
    /* appended: read as it comes, stamped when it was read (these lines carry no stamp) */
    uint64_t before = mono_now_ns();
    if (rc == 0 && thread_kmsg_write(c.file, O_APPEND,
                                     "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n"
                                     "amdgpu 0000:04:00.0: amdgpu: GPU reset begin!\n") != 0)
        rc = TK_FAIL("appending to %s", c.file);
    if (rc == 0 && (rc = thread_kmsg_await(&r, 4, why, whylen)) == 0 &&
        (rc = thread_kmsg_reset_check(&r.ev[2], 3, 3, why, whylen)) == 0)
        rc = thread_kmsg_reset_check(&r.ev[3], 4, 4, why, whylen);
    uint64_t after = mono_now_ns();
    for (size_t i = 2; rc == 0 && i < 4; i++)
        if (r.ev[i].t_ns < before || r.ev[i].t_ns > after)
            rc = TK_FAIL("appended line %zu: t_ns %llu outside [%llu, %llu]", i,
                         (unsigned long long)r.ev[i].t_ns, (unsigned long long)before,
                         (unsigned long long)after);
    /* truncated, then a line shorter than what was read: followed from the start again */
    if (rc == 0 &&
        thread_kmsg_write(c.file, O_TRUNC, "amdgpu 0000:05:00.0: amdgpu: GPU reset begin!\n") != 0)
        rc = TK_FAIL("truncating %s", c.file);
    if (rc == 0 && (rc = thread_kmsg_await(&r, 5, why, whylen)) == 0)
        rc = thread_kmsg_reset_check(&r.ev[4], 5, 0, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_check_stats(r.w, KMSG_STATE_FILE, 5, 5, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_no_more(&r, why, whylen);
    thread_kmsg_close(&r);
    return rc;
}

int thread_case_kmsg_record_gap(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    struct kmsg_stats s;
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    int rc = rs_test_write_file(r.dir, "kmsg.saved",
                                "6,100,1000000,-;amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n"
                                "6,101,1000100,-;amdgpu 0000:04:00.0: amdgpu: GPU reset begin!\n"
                                "6,105,1000200,-;amdgpu 0000:05:00.0: amdgpu: GPU reset begin!\n",
                                c.file, sizeof(c.file));
    if (rc != 0)
        rc = TK_FAIL("writing %s", c.file);
    if (rc == 0)
        rc = thread_kmsg_open(&r, &c, 64, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_await(&r, 3, why, whylen);
    for (int i = 0; rc == 0 && i < 3; i++)
        rc = thread_kmsg_reset_check(&r.ev[i], 3 + i, (uint32_t)i + 1, why, whylen);
    /* parsed as records: the message without its header, the record's stamp (1 s), mapped
     * with no offset (no live record has moved it) */
    if (rc == 0 &&
        (strcmp(r.ev[0].u.kmsg.message, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!") != 0 ||
         r.ev[0].u.kmsg.ts_ns != 1000000000u || r.ev[0].t_ns != 1000000000u ||
         r.ev[2].u.kmsg.ts_ns != 1000200000u))
        rc = TK_FAIL("record 100: message '%s' ts %llu t_ns %llu", r.ev[0].u.kmsg.message,
                     (unsigned long long)r.ev[0].u.kmsg.ts_ns, (unsigned long long)r.ev[0].t_ns);
    if (rc == 0)
        rc = thread_kmsg_check_stats(r.w, KMSG_STATE_FILE, 3, 3, why, whylen);
    /* records 102..104 never reached the file: 3 lost */
    kmsg_watch_stats(r.w, &s);
    if (rc == 0 && s.lost != 3)
        rc = TK_FAIL("stats.lost = %llu after seq 101 -> 105, expected 3 (records 102..104); "
                     "the gap is not counted",
                     (unsigned long long)s.lost);
    if (rc == 0)
        rc = thread_kmsg_no_more(&r, why, whylen);
    thread_kmsg_close(&r);
    return rc;
}

/* A HIP memory-access fault from the session log: GPU node, address, the stderr source. */
static int thread_kmsg_hip_check(const struct ev *e, uint32_t node, uint64_t addr, uint32_t line,
                                 char *why, size_t whylen) {
    const struct kmsg_event *k = &e->u.kmsg;
    if (e->kind != EV_KMSG || k->category != KMSG_CAT_PAGE_FAULT || k->source != KMSG_SRC_STDERR ||
        k->vendor != KMSG_VENDOR_HIP || !(k->has & KMSG_HAS(NODE)) || k->node != node ||
        !(k->has & KMSG_HAS(ADDR)) || k->addr != addr || k->line != line)
        return TK_FAIL("expected a HIP page fault on node %u at 0x%llx line %u, got kind %u "
                       "category %u source %u vendor %u node %u addr 0x%llx line %u",
                       node, (unsigned long long)addr, line, e->kind, k->category, k->source,
                       k->vendor, k->node, (unsigned long long)k->addr, k->line);
    return 0;
}

#define TK_HIP_FAULT(node, addr)                                                                   \
    "Memory access fault by GPU node-" node " (Agent handle: 0x55d5d6a8e9a0) on address " addr     \
    ". Reason: Page not present or supervisor privilege.\n"

int thread_case_kmsg_unreadable(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    struct kmsg_stats s;
    char err[512] = "";
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    snprintf(c.kmsg_path, sizeof(c.kmsg_path), "%s/no-kmsg", r.dir);
    /* there before the start: followed from its end, so this old fault is not reported */
    int rc = rs_test_write_file(r.dir, "session.log", TK_HIP_FAULT("1", "0x1000"), c.session_log,
                                sizeof(c.session_log));
    if (rc != 0)
        rc = TK_FAIL("writing the session log");
    if (rc == 0 && evring_create(&r.ring, 64) != 0)
        rc = TK_FAIL("evring_create");
    if (rc == 0 && (rc = kmsg_watch_create(&r.w, &c, r.ring, err, sizeof(err))) != 0)
        rc = TK_FAIL("an unreadable /dev/kmsg failed the create: %d %s", rc, err);
    if (rc == 0) {
        kmsg_watch_stats(r.w, &s);
        if (s.state != KMSG_STATE_UNREADABLE || !strstr(kmsg_watch_reason(r.w), c.kmsg_path))
            rc = TK_FAIL("state %d, reason '%s'", (int)s.state, kmsg_watch_reason(r.w));
    }
    if (rc == 0 && (rc = kmsg_watch_start(r.w)) != 0)
        rc = TK_FAIL("kmsg_watch_start: %d", rc);
    if (rc == 0 &&
        thread_kmsg_write(c.session_log, O_APPEND, TK_HIP_FAULT("2", "0x7f0c2c000000")) != 0)
        rc = TK_FAIL("appending to the session log");
    if (rc == 0)
        rc = thread_kmsg_await(&r, 2, why, whylen);
    if (rc == 0 && (r.ev[0].kind != EV_LOG || r.ev[0].u.text.severity != SEV_WARNING ||
                    r.ev[0].u.text.code != ALERT_KMSG_OFF ||
                    !strstr(r.ev[0].u.text.text, "setcap cap_syslog") ||
                    !strstr(r.ev[0].u.text.text, "dmesg_restrict")))
        rc = TK_FAIL("first event: kind %u severity %u code %u '%s'", r.ev[0].kind,
                     r.ev[0].u.text.severity, r.ev[0].u.text.code, r.ev[0].u.text.text);
    if (rc == 0)
        rc = thread_kmsg_hip_check(&r.ev[1], 2, 0x7f0c2c000000ull, 1, why, whylen);
    /* one line read: the old one was skipped; the warning is not a counted kernel event */
    if (rc == 0)
        rc = thread_kmsg_check_stats(r.w, KMSG_STATE_UNREADABLE, 1, 1, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_no_more(&r, why, whylen);
    thread_kmsg_close(&r);
    return rc;
}

int thread_case_kmsg_session_late(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    char path[300];
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    c.off = true; /* --no-kmsg: only the session log */
    snprintf(c.session_log, sizeof(c.session_log), "%s/late.log", r.dir);
    int rc = thread_kmsg_open(&r, &c, 64, why, whylen);
    /* created after the start: opened then, and read from its start */
    if (rc == 0 && rs_test_write_file(r.dir, "late.log",
                                      TK_HIP_FAULT("3", "0x2000") TK_HIP_FAULT("4", "0x3000"), path,
                                      sizeof(path)) != 0)
        rc = TK_FAIL("writing %s", path);
    if (rc == 0)
        rc = thread_kmsg_await(&r, 2, why, whylen);
    if (rc == 0 && (rc = thread_kmsg_hip_check(&r.ev[0], 3, 0x2000, 1, why, whylen)) == 0)
        rc = thread_kmsg_hip_check(&r.ev[1], 4, 0x3000, 2, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_check_stats(r.w, KMSG_STATE_OFF, 2, 2, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_no_more(&r, why, whylen);
    thread_kmsg_close(&r);
    return rc;
}

int thread_case_kmsg_missing_file(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    struct kmsg_watch *w = NULL;
    char err[512] = "";
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    snprintf(c.file, sizeof(c.file), "%s/missing.log", r.dir);
    int rc = evring_create(&r.ring, 4) == 0 ? 0 : TK_FAIL("evring_create");
    int got = rc == 0 ? kmsg_watch_create(&w, &c, r.ring, err, sizeof(err)) : 0;
    if (rc == 0 && (got != -ENOENT || w != NULL || !strstr(err, c.file)))
        rc = TK_FAIL("create returned %d (watcher %s), err '%s'", got, w ? "set" : "NULL", err);
    if (got == 0)
        kmsg_watch_destroy(w);
    if (rc == 0 && evring_drain(r.ring, r.ev, TK_EVENTS) != 0)
        rc = TK_FAIL("a failed create pushed an event");
    thread_kmsg_close(&r);
    return rc;
}

int thread_case_kmsg_prompt_stop(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    snprintf(c.file, sizeof(c.file), "%s/quiet.fifo", r.dir);
    int rc = mkfifo(c.file, 0600) == 0 ? 0 : TK_FAIL("mkfifo: %s", strerror(errno));
    if (rc == 0)
        rc = thread_kmsg_open(&r, &c, 64, why, whylen);
    /* one event through: the thread is in its loop; with no session log and no open group
     * it then waits in poll with no timeout, so only the stop request can wake it */
    if (rc == 0 && thread_kmsg_write(c.file, 0, TK_SQ_INTR_LINE) != 0)
        rc = TK_FAIL("writing the FIFO");
    if (rc == 0 && (rc = thread_kmsg_await(&r, 1, why, whylen)) == 0 &&
        r.ev[0].u.kmsg.category != KMSG_CAT_SQ_INTR)
        rc = TK_FAIL("category %u, expected sq_intr", r.ev[0].u.kmsg.category);
    uint64_t t0 = mono_now_ns();
    kmsg_watch_destroy(r.w); /* a hang here is caught by the suite's timeout */
    r.w = NULL;
    uint64_t took = mono_now_ns() - t0;
    if (rc == 0 && took > 5000000000ull)
        rc = TK_FAIL("destroy took %llu ms", (unsigned long long)(took / 1000000u));
    thread_kmsg_close(&r);
    return rc;
}

struct thread_kmsg_writer {
    const char *path;
    atomic_int abort; /* the test gave up: stop writing */
    int rc;           /* 0, or -errno */
};

/* TK_FLOOD_LINES sq_intr lines into the FIFO, in whole-line chunks; gives up on abort. */
static void *thread_kmsg_flood(void *arg) {
    static char buf[1024 * (sizeof(TK_SQ_INTR_LINE) - 1)];
    struct thread_kmsg_writer *wr = arg;
    const size_t len = sizeof(TK_SQ_INTR_LINE) - 1;
    for (size_t i = 0; i < 1024; i++)
        memcpy(buf + i * len, TK_SQ_INTR_LINE, len);
    int fd = open(wr->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        wr->rc = -errno;
        return NULL;
    }
    size_t left = (size_t)TK_FLOOD_LINES * len, off = 0;
    while (left > 0 && !atomic_load(&wr->abort)) {
        size_t chunk = sizeof(buf) - off < left ? sizeof(buf) - off : left;
        ssize_t k = write(fd, buf + off, chunk);
        if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd pf = {fd, POLLOUT, 0};
            poll(&pf, 1, 100); /* the pipe is full: wait for room, look at abort again */
            continue;
        }
        if (k < 0) {
            wr->rc = -errno;
            break;
        }
        left -= (size_t)k;
        off = (off + (size_t)k) % sizeof(buf);
    }
    close(fd);
    return NULL;
}

/* After the flood: the ring holds its last TK_FLOOD_RING events, the rest counted dropped. */
static int thread_kmsg_flood_check(struct thread_kmsg_run *r, char *why, size_t whylen) {
    static struct ev out[2 * TK_FLOOD_RING];
    struct kmsg_stats s;
    kmsg_watch_stats(r->w, &s);
    size_t n = evring_drain(r->ring, out, 2 * TK_FLOOD_RING);
    uint64_t dropped = evring_dropped(r->ring);
    if (n != TK_FLOOD_RING || dropped != TK_FLOOD_LINES - TK_FLOOD_RING || s.dropped != dropped ||
        n + dropped != s.events || s.lost != 0 || s.cut != 0)
        return TK_FAIL("drained %zu, dropped %llu (stats %llu), events %llu, lost %llu, cut %llu",
                       n, (unsigned long long)dropped, (unsigned long long)s.dropped,
                       (unsigned long long)s.events, (unsigned long long)s.lost,
                       (unsigned long long)s.cut);
    for (size_t i = 0; i < n; i++) {
        const struct kmsg_event *k = &out[i].u.kmsg;
        uint32_t seq = TK_FLOOD_LINES - TK_FLOOD_RING + (uint32_t)i; /* the newest survive */
        if (out[i].kind != EV_KMSG || out[i].seq != seq || k->category != KMSG_CAT_SQ_INTR ||
            k->line != seq + 1)
            return TK_FAIL("drained %zu: kind %u seq %u line %u category %u, expected seq %u", i,
                           out[i].kind, out[i].seq, k->line, k->category, seq);
    }
    return 0;
}

int thread_case_kmsg_flood(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    struct kmsg_stats s = {0};
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    snprintf(c.file, sizeof(c.file), "%s/flood.fifo", r.dir);
    int rc = mkfifo(c.file, 0600) == 0 ? 0 : TK_FAIL("mkfifo: %s", strerror(errno));
    if (rc == 0)
        rc = thread_kmsg_open(&r, &c, TK_FLOOD_RING, why, whylen);
    if (rc != 0) {
        thread_kmsg_close(&r);
        return rc;
    }
    struct thread_kmsg_writer wr = {.path = c.file};
    pthread_t t;
    if (pthread_create(&t, NULL, thread_kmsg_flood, &wr) != 0) {
        thread_kmsg_close(&r);
        return TK_FAIL("pthread_create");
    }
    /* nobody drains the ring: wait for the counters alone (the wake fd stays readable) */
    uint64_t deadline = mono_now_ns() + TK_FLOOD_WAIT;
    for (;;) {
        kmsg_watch_stats(r.w, &s);
        if (s.lines >= TK_FLOOD_LINES && s.events >= TK_FLOOD_LINES)
            break;
        if (mono_now_ns() >= deadline) {
            rc = TK_FAIL("after 60 s: %llu lines, %llu events of %u", (unsigned long long)s.lines,
                         (unsigned long long)s.events, TK_FLOOD_LINES);
            atomic_store(&wr.abort, 1);
            break;
        }
        sched_yield();
    }
    pthread_join(t, NULL);
    if (rc == 0 && wr.rc != 0)
        rc = TK_FAIL("writer: %s", strerror(-wr.rc));
    if (rc == 0 && (s.lines != TK_FLOOD_LINES || s.events != TK_FLOOD_LINES))
        rc = TK_FAIL("%llu lines, %llu events, expected %u each", (unsigned long long)s.lines,
                     (unsigned long long)s.events, TK_FLOOD_LINES);
    if (rc == 0)
        rc = thread_kmsg_flood_check(&r, why, whylen);
    thread_kmsg_close(&r);
    return rc;
}

/* --inject kmsg:FILE's three lines: a ring timeout and its process line (one event), and a GPU
 * reset 0.3 s later; their stamps are another boot's, far from this monotonic clock. */
#define TK_INJECT_TEXT                                                                             \
    "[ 9000.000000] amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=10, "        \
    "emitted seq=12\n"                                                                             \
    "[ 9000.000100] amdgpu 0000:03:00.0: amdgpu:  Process information: process python3 pid 4242 "  \
    "thread python3 pid 4243\n"                                                                    \
    "[ 9000.300100] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n"
#define TK_INJECT_GAP_NS 300000000ull /* the reset's due time after the start, rounded down */

/* An injected line's event: its category and file line, no kernel stamp, and a time on this
 * monotonic clock no earlier than not_before and no later than now. */
static int thread_kmsg_inject_check(const struct ev *e, unsigned category, uint32_t line,
                                    uint64_t not_before, uint64_t now, char *why, size_t whylen) {
    const struct kmsg_event *k = &e->u.kmsg;
    if (e->kind != EV_KMSG || k->category != category || k->line != line ||
        k->source != KMSG_SRC_FILE || (k->has & KMSG_HAS(TS)))
        return TK_FAIL("expected category %u at line %u, got kind %u category %u line %u source "
                       "%u has 0x%x",
                       category, line, e->kind, k->category, k->line, k->source, k->has);
    if (e->t_ns < not_before || e->t_ns > now)
        return TK_FAIL("\"%s\": t_ns %llu outside [%llu, %llu]", k->message,
                       (unsigned long long)e->t_ns, (unsigned long long)not_before,
                       (unsigned long long)now);
    return 0;
}

int thread_case_kmsg_inject(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    c.off = true; /* --no-kmsg: the injection alone */
    int rc = rs_test_write_file(r.dir, "inject.log", TK_INJECT_TEXT, c.inject, sizeof(c.inject));
    if (rc != 0)
        rc = TK_FAIL("writing the injected file");
    uint64_t t0 = mono_now_ns(); /* the watcher's start is later: its lines are due after it */
    if (rc == 0)
        rc = thread_kmsg_open(&r, &c, 64, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_await(&r, 3, why, whylen);
    uint64_t now = mono_now_ns();
    if (rc == 0 && (r.ev[0].kind != EV_LOG || r.ev[0].u.text.severity != SEV_WARNING ||
                    !strstr(r.ev[0].u.text.text, "fault injection armed: kmsg:") ||
                    !strstr(r.ev[0].u.text.text, "inject.log (3 lines over 0.3 s)")))
        rc = TK_FAIL("first event: kind %u '%s'", r.ev[0].kind, r.ev[0].u.text.text);
    if (rc == 0)
        rc = thread_kmsg_inject_check(&r.ev[1], KMSG_CAT_RING_TIMEOUT, 1, t0, now, why, whylen);
    if (rc == 0 && r.ev[1].u.kmsg.lines != 2)
        rc = TK_FAIL("the process line was not folded into the ring timeout");
    /* only a lower bound: the reset came no earlier than its 0.3 s after the start */
    if (rc == 0)
        rc = thread_kmsg_inject_check(&r.ev[2], KMSG_CAT_GPU_RESET, 3, t0 + TK_INJECT_GAP_NS, now,
                                      why, whylen);
    if (rc == 0)
        rc = thread_kmsg_check_stats(r.w, KMSG_STATE_OFF, 3, 2, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_no_more(&r, why, whylen);
    thread_kmsg_close(&r);
    return rc;
}

int thread_case_kmsg_inject_stop(char *why, size_t whylen) {
    struct thread_kmsg_run r;
    struct kmsg_conf c;
    if (thread_kmsg_init(&r, why, whylen) != 0)
        return -1;
    kmsg_conf_default(&c);
    c.off = true;
    /* a ring timeout whose group stays open, then a reset 30 s later (due after 10 s: cut) */
    int rc = rs_test_write_file(r.dir, "inject.log",
                                "[ 50.000000] amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, "
                                "signaled seq=10, emitted seq=12\n"
                                "[ 80.000000] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n",
                                c.inject, sizeof(c.inject));
    if (rc != 0)
        rc = TK_FAIL("writing the injected file");
    uint64_t t0 = mono_now_ns();
    if (rc == 0)
        rc = thread_kmsg_open(&r, &c, 64, why, whylen);
    /* stopped at once: the first line counts (its group closed), the one not due yet does not */
    if (rc == 0)
        kmsg_watch_stop(r.w);
    if (rc == 0)
        rc = thread_kmsg_await(&r, 2, why, whylen);
    if (rc == 0 &&
        (r.ev[0].kind != EV_LOG || !strstr(r.ev[0].u.text.text, "(2 lines over 10.0 s)")))
        rc = TK_FAIL("first event: kind %u '%s'", r.ev[0].kind, r.ev[0].u.text.text);
    if (rc == 0)
        rc = thread_kmsg_inject_check(&r.ev[1], KMSG_CAT_RING_TIMEOUT, 1, t0, mono_now_ns(), why,
                                      whylen);
    if (rc == 0)
        rc = thread_kmsg_check_stats(r.w, KMSG_STATE_OFF, 1, 1, why, whylen);
    if (rc == 0)
        rc = thread_kmsg_no_more(&r, why, whylen);
    thread_kmsg_close(&r);
    return rc;
}
