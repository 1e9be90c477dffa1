/* The run owner: starting, draining and stopping a live run, written once for the dashboard,
 * headless mode and the agent. */
#include "backend/run/run.h"

#include "backend/core/errbuf.h"
#include "backend/core/evring.h"
#include "backend/core/mono.h"
#include "backend/kmsg/kmsg.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/kmsg/remedies.h"
#include "backend/record/record.h"
#include "backend/run/bundle.h"
#include "backend/run/errtee.h"
#include "backend/run/stop_deadline.h"
#include "backend/telemetry/tele.h"
#include "backend/trace/trace_watch.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define RUN_KMSG_RING 1024 /* kernel-log events between two drains; a flood drops the oldest */
#define RUN_DRAIN     512

struct run {
    struct run_conf c;
    unsigned dev;                      /* the first device the loop trains on */
    unsigned devs[ENGINE_MAX_DEVICES]; /* all of them, in rank order */
    unsigned n_devs;
    struct evring *ring; /* the loop's and telemetry's events */
    struct engine *e;    /* NULL without a loop */
    struct tele *tele;
    struct evring *kring; /* the kernel log's events */
    struct kmsg_watch *kwatch;
    struct remedies *remedies;
    struct trace_watch *watch;
    int wake_fd; /* an epoll descriptor over both rings */
    struct rec *rec;
    bool joined;
    /* Held while the front end's thread drains or reads a snapshot, and by a thread that
     * leaves the process while it writes the bundle from them. */
    pthread_mutex_t mu;
    struct bundle_ring recent; /* the last events, for the hang bundle (under mu) */
    struct stop_deadline *deadline;
    _Atomic uint64_t stop_ns;    /* run_stop or a stop command: the loop's way out began */
    _Atomic uint64_t destroy_ns; /* run_destroy began: the front end's way out */
    const char *_Atomic stage;   /* what run_destroy is stopping now (a static string) */
};

/* ---- messages ---- */

static void run_say(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void run_say(struct run *r, const char *fmt, ...) {
    char msg[2 * ENGINE_PATH_MAX + 1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (r->c.say)
        r->c.say(r->c.ctx, msg);
    else
        fprintf(stderr, "ringside%s%s: %s\n", r->c.cmd[0] ? " " : "", r->c.cmd, msg);
}

/* Warnings, errors and alerts (and the kernel log's failures) also go to stderr, so a run
 * without a terminal is not silent. */
static void run_echo(const struct ev *e) {
    if ((e->kind == EV_LOG && e->u.text.severity >= SEV_WARNING) || e->kind == EV_ALERT)
        fprintf(stderr, "ringside: %s: %s\n", ev_severity_name(e->u.text.severity), e->u.text.text);
    if (e->kind == EV_KMSG && e->u.kmsg.severity >= SEV_WARNING)
        fprintf(stderr, "ringside: kernel %s: %s: %s\n", ev_severity_name(e->u.kmsg.severity),
                kmsg_category_name(e->u.kmsg.category), e->u.kmsg.message);
}

/* ---- start ---- */

int run_create(struct run **out, const struct run_conf *c) {
    char err[1024];
    struct run *r = calloc(1, sizeof(*r));
    *out = NULL;
    if (!r) {
        fprintf(stderr, "ringside%s%s: out of memory\n", c->cmd[0] ? " " : "", c->cmd);
        return 1;
    }
    r->c = *c;
    pthread_mutex_init(&r->mu, NULL);
    r->dev = (unsigned)c->o->conf.device;
    r->devs[0] = r->dev;
    r->n_devs = 1;
    r->wake_fd = -1;
    int rc = evring_create(&r->ring, c->ring_events);
    if (rc == 0 && c->ring_wake_events > 1)
        evring_wake_at(r->ring, c->ring_wake_events);
    if (rc != 0) {
        run_say(r, "out of memory");
        run_destroy(r);
        return 1;
    }
    if (c->train && (rc = engine_create(&r->e, &c->o->conf, r->ring, err, sizeof(err))) != 0) {
        run_say(r, "%s", err);
        run_destroy(r);
        return rc == -ENOMEM ? 1 : RS_EXIT_USAGE;
    }
    if (c->train && engine_data_said(r->e)[0]) { /* once, before the terminal is taken */
        run_say(r, "%s", engine_data_said(r->e));
    }
    if (r->e) {
        r->n_devs = engine_devices(r->e, r->devs);
        r->dev = r->devs[0];
    }
    *out = r;
    return 0;
}

void run_info(struct run *r, struct run_info *out) {
    if (r->e) {
        rec_live_run(r->e, out);
        return;
    }
    memset(out, 0, sizeof(*out));
    if (gethostname(out->host, sizeof(out->host) - 1) != 0)
        snprintf(out->host, sizeof(out->host), "localhost");
    snprintf(out->backend, sizeof(out->backend), "none");
    snprintf(out->dev_name, sizeof(out->dev_name), "telemetry only (no --train)");
    out->n_devices = 1;
    snprintf(out->origin, sizeof(out->origin), "live");
    out->start_ns = mono_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    out->start_wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int run_record(struct run *r, struct rec *rec) {
    struct run_info info;
    r->rec = rec;
    run_info(r, &info);
    int rc = rec_run(rec, &info, &r->c.o->conf);
    for (unsigned k = 0; rc == 0 && r->e && k < r->n_devs; k++)
        rc = rec_snap(rec, r->devs[k], engine_snap_read_dev(r->e, k, NULL));
    return rc;
}

/* Telemetry for the run (nothing with --telemetry none); its events join the loop's ring. */
static int run_start_tele(struct run *r) {
    char err[512];
    const struct tele_conf *c = &r->c.o->tele;
    if (strcmp(c->only, "none") == 0)
        return 0;
    int rc = tele_create(&r->tele, c, r->ring, err, sizeof(err));
    if (rc == 0 && (rc = tele_start(r->tele)) != 0)
        snprintf(err, sizeof(err), "cannot start the telemetry thread: %s", strerror(-rc));
    if (rc == 0)
        return 0;
    run_say(r, "%s", err);
    tele_destroy(r->tele);
    r->tele = NULL;
    return rc == -EINVAL ? RS_EXIT_USAGE : 1;
}

/* The remedies (--kmsg-rules or the user's file, then the shipped ones) and, unless --no-kmsg
 * without an --inject kmsg:FILE, the watcher on its own ring (with --no-kmsg it reads no
 * kernel log, only the injected lines). */
static int run_start_kmsg(struct run *r) {
    char err[1024];
    const struct run_opts *o = r->c.o;
    if (remedies_load(&r->remedies, o->kmsg_rules[0] ? o->kmsg_rules : NULL, err, sizeof(err)) !=
        0) {
        run_say(r, "%s", err);
        return RS_EXIT_USAGE;
    }
    if (o->kmsg.off && !o->kmsg.inject[0]) /* --no-kmsg turns off the real kernel log only */
        return 0;
    struct kmsg_conf c = o->kmsg;
    if (r->c.session_log && r->c.session_log_path)
        snprintf(c.session_log, sizeof(c.session_log), "%s", r->c.session_log_path);
    else if (r->c.session_log)
        snprintf(c.session_log, sizeof(c.session_log), "%.900s/session.log", o->conf.output_dir);
    int rc = evring_create(&r->kring, RUN_KMSG_RING);
    if (rc == 0 && (rc = kmsg_watch_create(&r->kwatch, &c, r->kring, err, sizeof(err))) != 0) {
        run_say(r, "%s", err);
        return RS_EXIT_USAGE;
    }
    if (rc == 0 && (rc = kmsg_watch_start(r->kwatch)) != 0)
        run_say(r, "cannot start the kernel-log thread: %s", strerror(-rc));
    return rc == 0 ? 0 : 1;
}

/* One descriptor that is readable while either ring has events. */
static int run_epoll(struct run *r) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct evring *rings[2] = {r->ring, r->kring};
    for (int k = 0; k < 2; k++) {
        struct epoll_event ev = {.events = EPOLLIN};
        if (rings[k] && epoll_ctl(fd, EPOLL_CTL_ADD, evring_wake_fd(rings[k]), &ev) != 0) {
            int rc = -errno;
            close(fd);
            return rc;
        }
    }
    return fd;
}

/* ---- the stop deadline ---- */

static uint64_t run_earliest(uint64_t a, uint64_t b) {
    return !a ? b : !b ? a : a < b ? a : b;
}

/* The loop's way out while it lasts (a stop, a failure, the end of training), then the front
 * end's from run_destroy on; nothing between (a dashboard that stays after training). */
static uint64_t run_deadline_since(void *ctx) {
    struct run *r = ctx;
    uint64_t t = 0;
    if (r->e && !engine_done(r->e))
        t = run_earliest(engine_leaving_ns(r->e), atomic_load(&r->stop_ns));
    return t ? t : atomic_load(&r->destroy_ns);
}

static void run_deadline_abort(void *ctx, uint64_t waited_ns) {
    struct run *r = ctx;
    if (!r->e)
        return;
    engine_abort(r->e);
    struct ev ev = {.kind = EV_ALERT, .dev = EV_DEV_NONE};
    ev.u.text.severity = SEV_ERROR;
    snprintf(ev.u.text.text, sizeof(ev.u.text.text),
             "stopping has taken %.1f s, past --teardown-timeout (%g s): the loop's waits are "
             "ended%s; a call still stuck in 1 s leaves the process (status 3)",
             (double)waited_ns / 1e9, r->c.o->conf.teardown_timeout_s,
             r->n_devs > 1 ? " and the group's communicators aborted" : "");
    trace_emit(engine_trace(r->e), &ev);
}

static _Noreturn void run_leave(struct run *r, uint64_t waited_ns);

static void run_deadline_abandon(void *ctx, uint64_t waited_ns) {
    run_leave(ctx, waited_ns);
}

static const struct stop_deadline_ops run_deadline_ops = {
    .since = run_deadline_since,
    .abort = run_deadline_abort,
    .abandon = run_deadline_abandon,
};

static int run_deadline_start(struct run *r) {
    double s = r->c.o->conf.teardown_timeout_s;
    uint64_t timeout = s > 0 ? (uint64_t)(s * 1e9) : 30000000000ull;
    return stop_deadline_start(&r->deadline, timeout, STOP_DEADLINE_GRACE_NS, &run_deadline_ops, r);
}

int run_start(struct run *r) {
    int rc = run_start_tele(r);
    if (rc == 0)
        rc = run_start_kmsg(r);
    if (rc != 0)
        return rc;
    if ((r->wake_fd = run_epoll(r)) < 0) {
        run_say(r, "cannot start: %s", strerror(-r->wake_fd));
        return 1;
    }
    if (r->e &&
        ((rc = engine_start(r->e)) != 0 ||
         (rc = trace_watch_start(&r->watch, engine_trace(r->e), trace_devices(engine_trace(r->e)),
                                 r->c.o->sync_slow_ns, r->c.o->sync_timeout_ns)) != 0)) {
        run_say(r, "cannot start the training loop: %s", strerror(-rc));
        return 1;
    }
    if ((rc = run_deadline_start(r)) != 0) {
        run_say(r, "cannot start the stop watchdog: %s", strerror(-rc));
        return 1;
    }
    return 0;
}

/* ---- the loop's side ---- */

int run_wake_fd(struct run *r) {
    return r->wake_fd >= 0 ? r->wake_fd : evring_wake_fd(r->ring);
}

/* On the run's first HANG alert, the bundle, and *log saying where it went. */
static bool run_hang(struct run *r, const struct ev *e, struct ev *log) {
    char msg[EV_TEXT_BYTES];
    if (!bundle_due(&r->recent, e) || !r->e)
        return false;
    struct bundle_src b = {.o = r->c.o,
                           .snap = engine_snap_read(r->e, NULL),
                           .tele = r->tele ? tele_snap_read(r->tele, NULL) : NULL};
    bundle_on_hang(&r->recent, e, &b, msg, sizeof(msg));
    *log = (struct ev){.t_ns = mono_now_ns(), .seq = e->seq, .kind = EV_LOG, .dev = EV_DEV_NONE};
    log->u.text.severity = SEV_WARNING;
    log->u.text.code = ALERT_HANG_BUNDLE;
    snprintf(log->u.text.text, sizeof(log->u.text.text), "%s", msg);
    return true;
}

/* The side-work of one event: on_event, the recording, the echo. */
static void run_side(struct run *r, struct ev *e) {
    if (r->c.on_event)
        r->c.on_event(r->c.ctx, e);
    if (r->rec)
        rec_event(r->rec, e);
    if (r->c.echo)
        run_echo(e);
}

size_t run_drain(struct run *r, struct ev *out, size_t max) {
    if (max < 2)
        return 0;
    pthread_mutex_lock(&r->mu);
    size_t n = evring_drain(r->ring, out, max - 1); /* room for the bundle's note */
    if (r->kring && n < max - 1)
        n += evring_drain(r->kring, out + n, max - 1 - n);
    for (size_t i = 0; i < n; i++) {
        struct ev log;
        bool bundle = run_hang(r, &out[i], &log);
        run_side(r, &out[i]);
        if (bundle) {
            memmove(&out[i + 2], &out[i + 1], (n - i - 1) * sizeof(*out));
            out[++i] = log;
            n++;
            run_side(r, &out[i]);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

unsigned run_device(const struct run *r) {
    return r->dev;
}

unsigned run_devices(const struct run *r, unsigned *out) {
    for (unsigned k = 0; k < r->n_devs; k++)
        out[k] = r->devs[k];
    return r->n_devs;
}

const struct engine_snap *run_snap(struct run *r, unsigned dev) {
    for (unsigned k = 0; r->e && k < r->n_devs; k++) {
        if (r->devs[k] != dev)
            continue;
        pthread_mutex_lock(&r->mu);
        const struct engine_snap *s = engine_snap_read_dev(r->e, k, NULL);
        if (r->rec)
            rec_snap(r->rec, dev, s);
        pthread_mutex_unlock(&r->mu);
        return s;
    }
    return NULL;
}

void run_command(struct run *r, enum ev_cmd_id cmd, int64_t arg) {
    if (!r->e || r->joined)
        return;
    if (cmd == CMD_STOP) { /* the deadline runs from the request: the loop may never see it */
        uint64_t none = 0;
        atomic_compare_exchange_strong(&r->stop_ns, &none, mono_now_ns());
    }
    engine_command(r->e, cmd, arg);
}

void run_stop(struct run *r) {
    run_command(r, CMD_STOP, 0);
}

bool run_done(struct run *r) {
    return !r->e || r->joined || engine_done(r->e);
}

bool run_inflight(struct run *r, unsigned dev, struct trace_inflight *out) {
    return r->e && !r->joined && trace_inflight(engine_trace(r->e), dev, out);
}

bool run_stuck_call(struct run *r, unsigned dev, uint64_t now_ns, char *buf, size_t n) {
    struct trace_inflight inf;
    return run_inflight(r, dev, &inf) && trace_inflight_describe(&inf, now_ns, buf, n);
}

/* ---- the end ---- */

static void run_drain_all(struct run *r) {
    struct ev *evs = malloc(RUN_DRAIN * sizeof(*evs));
    while (evs && run_drain(r, evs, RUN_DRAIN) > 0) {
    }
    free(evs);
}

int run_finish(struct run *r, struct engine_result *res) {
    struct engine_result local;
    res = res ? res : &local;
    memset(res, 0, sizeof(*res));
    if (!r->e || r->joined)
        return 0;
    engine_join(r->e, res);
    r->joined = true;
    if (r->c.kmsg_ends_with_loop)
        kmsg_watch_stop(r->kwatch); /* what the kernel log holds by now still makes the output */
    run_drain_all(r);
    for (unsigned k = 0; k < r->n_devs; k++)
        run_snap(r, r->devs[k]);
    if (r->rec)
        rec_summary(r->rec, res, evring_dropped(r->ring));
    const char *how = res->stopped ? "stopped" : "finished";
    if (res->state == ENGINE_FAILED) {
        run_say(r, "training failed: %s", res->error);
        return 1;
    }
    if (res->checkpoint_error[0]) { /* trained, but the result is not saved */
        char note[2 * ENGINE_PATH_MAX + 768];
        engine_checkpoint_note(res, note, sizeof(note));
        run_say(r, "%s after %d epochs; %s", how, res->epochs_done, note);
        return 1;
    }
    char val[96] = "", best[ENGINE_PATH_MAX + 200] = "";
    if (res->has_val)
        snprintf(val, sizeof(val), " (val %.4f, best %.4f at epoch %d)", res->val_loss,
                 res->best_val_loss, res->best_epoch);
    if (res->best_checkpoint[0])
        snprintf(best, sizeof(best), ", best model %s", res->best_checkpoint);
    if (!r->c.quiet)
        run_say(r, "%s after %d epochs%s%s%s%s", how, res->epochs_done, val,
                res->checkpoint[0] ? ", checkpoint " : "", res->checkpoint, best);
    return 0;
}

/* What dev is stuck in: its synchronize or collective in flight, else its phase (host work
 * such as a file write); false for a device that has left the run. */
static bool run_stuck_dev(struct run *r, unsigned dev, uint64_t now, char *buf, size_t n) {
    struct trace *t = engine_trace(r->e);
    struct trace_coll co;
    struct trace_seen seen;
    if (run_stuck_call(r, dev, now, buf, n))
        return true;
    if (trace_coll_inflight(t, dev, &co) && now > co.start_ns) {
        snprintf(buf, n, "%s #%llu has been in flight for %.1f s", ev_coll_op_name(co.op),
                 (unsigned long long)co.seq, (double)(now - co.start_ns) / 1e9);
        return true;
    }
    trace_seen(t, dev, &seen);
    if (!seen.used || seen.left)
        return false;
    snprintf(buf, n,
             "still in %s with no synchronize or collective in flight (host work: a "
             "file write, the CPU)",
             seen.phase < PHASE_COUNT ? ev_phase_name(seen.phase) : "no phase");
    return true;
}

/* The hang bundle, when the run has none yet: the last events and the snapshots, taken under
 * mu from a front end that may be draining (not waited for long: it could be the stuck one). */
static void run_leave_bundle(struct run *r, const char *why, char *msg, size_t n) {
    msg[0] = '\0';
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 200000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (!r->e || pthread_mutex_timedlock(&r->mu, &until) != 0)
        return;
    if (!r->recent.written) {
        struct ev hang = {.t_ns = mono_now_ns(), .kind = EV_ALERT, .dev = (uint16_t)r->dev};
        hang.u.text.severity = SEV_ERROR;
        hang.u.text.code = ALERT_SYNC_HANG;
        snprintf(hang.u.text.text, sizeof(hang.u.text.text), "%s", why);
        struct bundle_src b = {.o = r->c.o,
                               .snap = engine_snap_read(r->e, NULL),
                               .tele = r->tele ? tele_snap_read(r->tele, NULL) : NULL};
        bundle_on_hang(&r->recent, &hang, &b, msg, n);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Last words on the terminal: the front end's say, else straight to the terminal's fd (a tee's
 * thread would not live to copy them). */
static void run_last_words(struct run *r, const char *msg) {
    if (r->c.say) {
        r->c.say(r->c.ctx, msg);
        return;
    }
    char line[1200];
    int len =
        snprintf(line, sizeof(line), "ringside%s%s: %s\n", r->c.cmd[0] ? " " : "", r->c.cmd, msg);
    if (len > 0) {
        ssize_t w = write(errtee_terminal_fd(), line,
                          (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
        (void)w;
    }
}

static _Noreturn void run_leave(struct run *r, uint64_t waited_ns) {
    char lines[ENGINE_MAX_DEVICES + 2][240], stuck[200], first[400] = "";
    unsigned n = 0;
    uint64_t now = mono_now_ns();
    for (unsigned k = 0; r->e && !engine_done(r->e) && k < r->n_devs; k++)
        if (run_stuck_dev(r, r->devs[k], now, stuck, sizeof(stuck)))
            snprintf(lines[n++], sizeof(lines[0]), "dev %u: %s", r->devs[k], stuck);
    const char *stage = atomic_load(&r->stage);
    if (n == 0)
        snprintf(lines[n++], sizeof(lines[0]), "%s did not return",
                 stage ? stage : "the training thread");
    /* waited_ns 0: the user's own leave (q q) rather than the deadline's */
    if (waited_ns)
        snprintf(first, sizeof(first), "stopping did not finish after %.1f s: %s",
                 (double)waited_ns / 1e9, lines[0]);
    else
        snprintf(first, sizeof(first), "left before the loop had stopped: %s", lines[0]);
    char bundle[EV_TEXT_BYTES] = "";
    if (waited_ns) /* the deadline's: a hang; the user's q q may leave a healthy loop */
        run_leave_bundle(r, first, bundle, sizeof(bundle));
    if (r->c.on_abandon)
        r->c.on_abandon(r->c.ctx);
    for (unsigned k = 0; k < n; k++) {
        char msg[300];
        snprintf(msg, sizeof(msg), "leaving while %.240s", lines[k]);
        run_last_words(r, msg);
    }
    if (bundle[0])
        run_last_words(r, bundle);
    run_last_words(r, waited_ns ? "exit status 3: a call did not return, so no exit handlers ran"
                                : "exit status 3: left at once, before the loop had stopped (no "
                                  "exit handlers ran; the last checkpoint written is kept)");
    _exit(RS_EXIT_STUCK);
}

_Noreturn void run_abandon(struct run *r) {
    run_leave(r, 0);
}

struct engine *run_engine(struct run *r) {
    return r->e;
}

struct tele *run_tele(struct run *r) {
    return r->tele;
}

struct kmsg_watch *run_kmsg(struct run *r) {
    return r->kwatch;
}

const struct remedies *run_remedies(struct run *r) {
    return r->remedies;
}

const struct run_opts *run_options(const struct run *r) {
    return r->c.o;
}

struct trace_watch *run_watch(struct run *r) {
    return r->watch;
}

uint64_t run_dropped(struct run *r) {
    return evring_dropped(r->ring);
}

void run_destroy(struct run *r) {
    if (!r)
        return;
    atomic_store(&r->destroy_ns, mono_now_ns()); /* the deadline covers every step below */
    atomic_store(&r->stage, "the hang watchdog's stop");
    trace_watch_stop(r->watch);
    atomic_store(&r->stage, "the telemetry thread's stop");
    tele_destroy(r->tele);
    atomic_store(&r->stage, "the kernel-log watcher's stop");
    kmsg_watch_destroy(r->kwatch);
    atomic_store(&r->stage, "releasing the devices");
    engine_destroy(r->e);
    stop_deadline_stop(r->deadline); /* nothing below can block */
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    evring_destroy(r->kring);
    evring_destroy(r->ring);
    remedies_free(r->remedies);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
