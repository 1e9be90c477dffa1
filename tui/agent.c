/* The agent: one loop on the main thread drains the engine's, the telemetry's and the kernel
 * log's events into the /events log, counts what /metrics reports, rebuilds the metrics text on
 * a timer and writes status lines; the HTTP threads only copy what it prepared (a scrape never
 * reads a snapshot, so 200 scrapers cost the training loop nothing but memcpy). */
#include "tui/agent.h"

#include "backend/core/errbuf.h"
#include "backend/core/evring.h"
#include "backend/core/mono.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/trace/trace_watch.h"
#include "backend/vpoc/vpoc.h"
#include "tui/agent_log.h"
#include "tui/agent_metrics.h"
#include "tui/agent_status.h"
#include "tui/cli.h"
#include "tui/cli_tele.h"
#include "tui/record.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#ifndef RS_VERSION
#define RS_VERSION "dev"
#endif

#define AGENT_RING_CAP      (1u << 16)
#define AGENT_DRAIN         512
#define AGENT_TICK_MS       100
#define AGENT_STATUS_MIN_NS 250000000ull   /* status lines at most 4 a second */
#define AGENT_STATUS_MAX_NS 1000000000ull  /* and at least one a second */
#define AGENT_STOP_GRACE_NS 60000000000ull /* a loop that does not stop in 60 s is left */
#define AGENT_STALL_NS      10000000000ull /* /healthz: the main loop silent this long */

struct agent {
    const struct agent_opts *o;
    unsigned dev;
    struct evring *ring; /* the engine's and the telemetry's events */
    struct engine *e;    /* NULL without --train */
    struct tele *tele;
    struct cli_kmsg_run km;
    struct trace_watch *watch;
    struct agent_log *log;
    struct rec *rec;
    enum agent_line_kind line_kind; /* what the recorder's next line is */
    bool run_line;                  /* ... or the run line */
    struct agent_http *http;
    struct cli_hang hang;
    struct agent_status status; /* the last status line's content */
    uint64_t status_ns, status_tele_seq, metrics_ns;
    bool joined; /* the training loop ended and its summary is written */
    int exit_rc;
    /* what /metrics counts, owned by the loop */
    uint64_t kmsg_counts[KMSG_CAT_COUNT];
    double phase_seconds[PHASE_COUNT];
    char host[64];
    double start_wall_s;
    /* shared with the HTTP threads */
    pthread_mutex_t mu;
    char *text[2]; /* the metrics: [0] text format, [1] OpenMetrics */
    size_t text_len[2];
    char health[256];
    bool healthy;
    _Atomic uint64_t beat_ns; /* the loop's last round */
    _Atomic bool loop_ended;  /* no loop commands any more */
};

/* ---- the log ---- */

static void agent_say(const struct agent *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void agent_say(const struct agent *a, const char *fmt, ...) {
    char stamp[40] = "";
    if (a->o->log_path[0]) { /* a file has no journal to stamp its lines */
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z ", &tm);
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%sringside agent: %s\n", stamp, msg);
}

/* --log FILE: stderr goes there (the libraries' messages too), appended; SIGHUP reopens it. */
static int agent_open_log(const struct agent_opts *o) {
    if (!o->log_path[0])
        return 0;
    int fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0) {
        int e = errno;
        fprintf(stderr, "ringside agent: --log %s: %s\n", o->log_path, strerror(e));
        return -e;
    }
    dup2(fd, 2);
    close(fd);
    return 0;
}

/* ---- the event stream ---- */

static int agent_line(void *ctx, const char *text, size_t len) {
    struct agent *a = ctx;
    if (a->run_line)
        agent_log_set_run(a->log, text);
    else
        agent_log_append(a->log, a->line_kind, text, len);
    return 0; /* a line the log could not keep is counted there; the stream goes on */
}

static void agent_count(struct agent *a, const struct ev *e) {
    if (e->kind == EV_KMSG && e->u.kmsg.category < KMSG_CAT_COUNT)
        a->kmsg_counts[e->u.kmsg.category]++;
    if (e->kind == EV_PHASE && e->u.phase.phase < PHASE_COUNT &&
        e->u.phase.end_ns > e->u.phase.start_ns)
        a->phase_seconds[e->u.phase.phase] +=
            (double)(e->u.phase.end_ns - e->u.phase.start_ns) / 1e9;
}

/* One event into the stream, numbered as the log numbers it (the seq a follower resumes by). */
static void agent_event(struct agent *a, struct ev *e) {
    agent_count(a, e);
    cli_echo(e);
    e->seq = (uint32_t)(agent_log_last_seq(a->log) + 1);
    a->line_kind = AGENT_LINE_EVENT;
    rec_event(a->rec, e);
}

static void agent_drain(struct agent *a, struct evring *ring) {
    static struct ev evs[AGENT_DRAIN];
    size_t n;
    while (ring && (n = evring_drain(ring, evs, AGENT_DRAIN)) > 0)
        for (size_t i = 0; i < n; i++) {
            struct ev log;
            bool bundle = a->e && cli_hang_event(&a->hang, &evs[i], &log);
            agent_event(a, &evs[i]);
            if (bundle)
                agent_event(a, &log);
        }
}

/* A layout line when the pool's numbers changed (rec_snap compares with the last one). */
static void agent_layout(struct agent *a) {
    if (!a->e)
        return;
    a->line_kind = AGENT_LINE_LAYOUT;
    rec_snap(a->rec, a->dev, engine_snap_read(a->e, NULL));
}

/* The status line: on a new telemetry sample, or once a second (the follower's clock, the
 * synchronize in flight, the kernel-log counters), never more than 4 a second. */
static void agent_status_tick(struct agent *a, uint64_t now) {
    const struct tele_snap *t = a->tele ? tele_snap_read(a->tele, NULL) : NULL;
    bool new_sample = t && t->seq != a->status_tele_seq;
    if (now - a->status_ns < AGENT_STATUS_MIN_NS ||
        (!new_sample && now - a->status_ns < AGENT_STATUS_MAX_NS))
        return;
    struct agent_status *s = &a->status;
    s->t_ns = now;
    s->control = a->o->http.allow_control && a->e != NULL;
    s->has_tele = t && t->t_ns != 0;
    if (s->has_tele) {
        s->tele = *t;
        a->status_tele_seq = t->seq;
    }
    s->has_kmsg = a->km.watch != NULL;
    if (s->has_kmsg) {
        kmsg_watch_stats(a->km.watch, &s->kmsg);
        snprintf(s->kmsg_reason, sizeof(s->kmsg_reason), "%s", kmsg_watch_reason(a->km.watch));
    }
    s->inflight_dev = a->dev;
    s->has_inflight =
        a->e && !a->joined && trace_inflight(engine_trace(a->e), a->dev, &s->inflight);
    char *line = NULL;
    size_t len = 0;
    if (agent_status_write(s, &line, &len) == 0)
        agent_log_append(a->log, AGENT_LINE_STATUS, line, len);
    free(line);
    a->status_ns = now;
}

/* ---- /metrics, /healthz and /control (their callbacks run on the HTTP threads) ---- */

static int agent_render(struct agent *a, bool openmetrics, char **out, size_t *len) {
    FILE *f = open_memstream(out, len);
    if (!f)
        return -ENOMEM;
    struct agent_log_stats ls;
    struct agent_http_stats hs = {0};
    agent_log_stats(a->log, &ls);
    if (a->http)
        agent_http_stats(a->http, &hs);
    const struct engine_snap *snap = a->e ? engine_snap_read(a->e, NULL) : NULL;
    struct kmsg_stats ks = {0};
    if (a->km.watch)
        kmsg_watch_stats(a->km.watch, &ks);
    struct agent_metrics_self self = {
        .version = RS_VERSION,
        .host = a->host,
        .backend = snap ? snap->backend : "none",
        .start_time_seconds = a->start_wall_s,
        .http_requests = hs.requests,
        .http_unauthorized = hs.unauthorized,
        .http_refused = hs.refused,
        .http_connections = hs.connections,
        .event_followers = hs.followers,
        .event_lines = ls.appended,
        .events_evicted = ls.evicted,
        .ring_dropped = evring_dropped(a->ring) + ks.dropped,
    };
    struct agent_metrics_in in = {
        .tele = a->tele ? tele_snap_read(a->tele, NULL) : NULL,
        .engine = snap,
        .trace = a->e ? engine_trace(a->e) : NULL,
        .dev = a->dev,
        .watch_state = a->watch ? (int)trace_watch_state(a->watch, a->dev) : -1,
        .kmsg_counts = a->km.watch ? a->kmsg_counts : NULL,
        .phase_seconds = a->e ? a->phase_seconds : NULL,
        .self = &self,
        .openmetrics = openmetrics,
    };
    if (in.tele && in.tele->t_ns == 0)
        in.tele = NULL; /* nothing sampled yet */
    int rc = agent_metrics_write(f, &in);
    if (fclose(f) != 0 && rc == 0)
        rc = -ENOMEM;
    if (rc != 0) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* Rebuild both texts and swap them in (the loop's thread). */
static void agent_metrics_tick(struct agent *a, uint64_t now, bool force) {
    if (!force && now - a->metrics_ns < a->o->metrics_every_ns)
        return;
    a->metrics_ns = now;
    char *text[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        if (agent_render(a, k == 1, &text[k], &len[k]) != 0)
            agent_say(a, "cannot build the metrics text (a bug): %s", strerror(ENOMEM));
    pthread_mutex_lock(&a->mu);
    for (int k = 0; k < 2; k++)
        if (text[k]) {
            char *old = a->text[k];
            a->text[k] = text[k];
            a->text_len[k] = len[k];
            text[k] = old;
        }
    pthread_mutex_unlock(&a->mu);
    free(text[0]);
    free(text[1]);
}

static int agent_metrics_cb(void *ctx, bool openmetrics, char **out, size_t *len) {
    struct agent *a = ctx;
    int k = openmetrics ? 1 : 0, rc = 0;
    pthread_mutex_lock(&a->mu);
    *len = a->text_len[k];
    *out = a->text[k] ? malloc(*len + 1) : NULL;
    if (*out)
        memcpy(*out, a->text[k], *len + 1);
    else
        rc = -ENOMEM;
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static bool agent_health_cb(void *ctx, char *why, size_t whylen) {
    struct agent *a = ctx;
    uint64_t beat = atomic_load(&a->beat_ns), now = mono_now_ns();
    if (now > beat + AGENT_STALL_NS) {
        snprintf(why, whylen, "the agent's loop has not run for %.0f s",
                 (double)(now - beat) / 1e9);
        return false;
    }
    pthread_mutex_lock(&a->mu);
    bool ok = a->healthy;
    snprintf(why, whylen, "%s", a->health);
    pthread_mutex_unlock(&a->mu);
    return ok;
}

/* The health line, from the loop: a failed run or a hung synchronize is not healthy. */
static void agent_health_tick(struct agent *a) {
    char why[256] = "ok";
    bool ok = true;
    if (a->e && engine_snap_read(a->e, NULL)->state == ENGINE_FAILED) {
        ok = false;
        snprintf(why, sizeof(why), "training failed (see the summary on /events)");
    } else if (a->watch && trace_watch_state(a->watch, a->dev) == TRACE_WATCH_HANG) {
        ok = false;
        snprintf(why, sizeof(why), "a GPU synchronize on device %u is hung", a->dev);
    }
    pthread_mutex_lock(&a->mu);
    a->healthy = ok;
    snprintf(a->health, sizeof(a->health), "%s", why);
    pthread_mutex_unlock(&a->mu);
}

/* A command from POST /control, passed on to the engine, which checks its argument and
 * answers on /events. */
static int agent_control_cb(void *ctx, enum ev_cmd_id cmd, int64_t arg, char *msg, size_t n) {
    struct agent *a = ctx;
    if (!a->e)
        return errbuf_set(msg, n, -ENOTSUP, "no training loop here: start the agent with --train");
    if (atomic_load(&a->loop_ended))
        return errbuf_set(msg, n, -ENOTSUP, "the training loop has ended");
    if (!ev_cmd_remote(cmd))
        return errbuf_set(msg, n, -EINVAL, "'%s' is not a remote command", ev_cmd_name(cmd));
    enum ev_cmd_arg kind = ev_cmd_arg(cmd);
    engine_command(a->e, cmd, kind == EV_ARG_NONE ? 0 : arg);
    if (kind == EV_ARG_NONE)
        snprintf(msg, n, "%s requested (its result follows on /events)", ev_cmd_name(cmd));
    else
        snprintf(msg, n, "%s %s%lld requested (its result follows on /events)", ev_cmd_name(cmd),
                 kind == EV_ARG_STEP && arg > 0 ? "+" : "", (long long)arg);
    return 0;
}

/* ---- start and stop ---- */

/* The run line: the engine's, or for telemetry alone a run without a loop. */
static void agent_run_line(struct agent *a) {
    struct ui_run run;
    if (a->e) {
        rec_live_run(a->e, &run);
    } else {
        memset(&run, 0, sizeof(run));
        snprintf(run.host, sizeof(run.host), "%s", a->host);
        snprintf(run.backend, sizeof(run.backend), "none");
        snprintf(run.dev_name, sizeof(run.dev_name), "telemetry only (no --train)");
        run.n_devices = 1;
        snprintf(run.origin, sizeof(run.origin), "live");
        run.start_ns = mono_now_ns();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        run.start_wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    a->run_line = true;
    rec_run(a->rec, &run, &a->o->train.conf);
    a->run_line = false;
}

static void agent_say_listening(struct agent *a) {
    const struct agent_http_conf *h = &a->o->http;
    char tcp[160] = "", unx[160] = "";
    if (h->listen[0]) {
        char addr[128] = "", why[160];
        unsigned port = 0;
        agent_http_parse_listen(h->listen, addr, sizeof(addr), &port, why, sizeof(why));
        snprintf(tcp, sizeof(tcp), "http://%s%s%s:%u", strchr(addr, ':') ? "[" : "", addr,
                 strchr(addr, ':') ? "]" : "", agent_http_port(a->http));
    }
    if (h->unix_path[0])
        snprintf(unx, sizeof(unx), "unix:%s", h->unix_path);
    agent_say(a, "serving %s%s%s (token: %s; control: %s; training loop: %s)", tcp,
              tcp[0] && unx[0] ? " and " : "", unx,
              h->token[0] ? "required beyond /metrics" : "none", h->allow_control ? "on" : "off",
              a->e ? "yes" : "no");
}

/* Every event the engine's threads will ever push is drained and its summary written. */
static void agent_join(struct agent *a) {
    struct engine_result res;
    engine_join(a->e, &res);
    atomic_store(&a->loop_ended, true);
    agent_drain(a, a->ring);
    agent_layout(a);
    a->line_kind = AGENT_LINE_STATE;
    rec_summary(a->rec, &res, evring_dropped(a->ring));
    a->joined = true;
    if (res.state == ENGINE_FAILED) {
        agent_say(a, "training failed: %s", res.error);
        a->exit_rc = 1;
    } else if (res.checkpoint_error[0]) {
        char note[2 * ENGINE_PATH_MAX + 768];
        engine_checkpoint_note(&res, note, sizeof(note));
        agent_say(a, "training %s after %d epochs; %s", res.stopped ? "stopped" : "finished",
                  res.epochs_done, note);
        a->exit_rc = 1;
    } else {
        agent_say(a, "training %s after %d epochs%s%s", res.stopped ? "stopped" : "finished",
                  res.epochs_done, res.checkpoint[0] ? ", checkpoint " : "", res.checkpoint);
    }
}

static int agent_signalfd(sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &s, old); /* every thread made from here on leaves them to us */
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* SIGHUP reopens the log; SIGINT/SIGTERM ask for a stop, and a second one leaves at once. */
static void agent_signals(struct agent *a, int sfd, uint64_t now, bool *stopping,
                          uint64_t *stop_ns) {
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
            agent_open_log(a->o);
            agent_say(a, "log reopened");
            continue;
        }
        if (*stopping) {
            agent_say(a, "second %s: exiting immediately", strsignal((int)si.ssi_signo));
            _exit(130);
        }
        agent_say(a, "%s: stopping%s", strsignal((int)si.ssi_signo),
                  a->e && !a->joined ? " (the step ends and the checkpoint is written)" : "");
        *stopping = true;
        *stop_ns = now;
        if (a->e && !a->joined)
            engine_command(a->e, CMD_STOP, 0);
    }
}

static void agent_loop(struct agent *a, int sfd) {
    bool stopping = false;
    uint64_t stop_ns = 0;
    for (;;) {
        struct pollfd pf[3] = {{evring_wake_fd(a->ring), POLLIN, 0},
                               {a->km.ring ? evring_wake_fd(a->km.ring) : -1, POLLIN, 0},
                               {sfd, POLLIN, 0}};
        poll(pf, 3, AGENT_TICK_MS);
        uint64_t now = mono_now_ns();
        atomic_store(&a->beat_ns, now);
        agent_signals(a, sfd, now, &stopping, &stop_ns);
        agent_drain(a, a->ring);
        agent_drain(a, a->km.ring);
        agent_layout(a);
        if (a->e && !a->joined && engine_done(a->e))
            agent_join(a);
        agent_status_tick(a, now);
        agent_health_tick(a);
        agent_metrics_tick(a, now, false);
        if (stopping && (!a->e || a->joined))
            return;
        if (stopping && now - stop_ns > AGENT_STOP_GRACE_NS) {
            agent_say(a, "the training loop did not stop in %.0f s; leaving without it",
                      (double)AGENT_STOP_GRACE_NS / 1e9);
            _exit(3); /* a hung runtime call would block its destructors too */
        }
    }
}

void agent_opts_default(struct agent_opts *o) {
    memset(o, 0, sizeof(*o));
    agent_http_conf_default(&o->http);
    o->metrics_every_ns = 1000000000ull;
    o->window_lines = 65536;
    o->window_bytes = 64u << 20;
}

/* The services: the loop (with --train), telemetry, the kernel log, the stream. 0 or the exit
 * status (the reason is printed). */
static int agent_start(struct agent *a) {
    const struct agent_opts *o = a->o;
    char err[1024];
    int rc = evring_create(&a->ring, AGENT_RING_CAP);
    if (rc == 0)
        rc = agent_log_create(&a->log, o->window_lines, o->window_bytes);
    if (rc == 0)
        rc = rec_open_sink(&a->rec, agent_line, a);
    if (rc != 0) {
        agent_say(a, "out of memory");
        return 1;
    }
    if (o->train_loop && (rc = engine_create(&a->e, &o->train.conf, a->ring, err, sizeof(err)))) {
        agent_say(a, "%s", err);
        return rc == -ENOMEM ? 1 : CLI_EXIT_USAGE;
    }
    if ((rc = cli_tele_start(&o->train.tele, a->ring, &a->tele, "agent")) != 0 ||
        (rc = cli_kmsg_start(&o->train, false, &a->km, "agent")) != 0)
        return rc;
    a->hang = (struct cli_hang){.o = &o->train, .e = a->e, .tele = a->tele};
    agent_run_line(a);
    if (a->e && ((rc = engine_start(a->e)) != 0 ||
                 (rc = trace_watch_start(&a->watch, engine_trace(a->e), a->dev + 1,
                                         o->train.sync_slow_ns, o->train.sync_timeout_ns)) != 0)) {
        agent_say(a, "cannot start the training loop: %s", strerror(-rc));
        return 1;
    }
    agent_metrics_tick(a, mono_now_ns(), true);
    struct agent_http_handlers h = {.ctx = a,
                                    .metrics = agent_metrics_cb,
                                    .control = agent_control_cb,
                                    .health = agent_health_cb,
                                    .log = a->log};
    if ((rc = agent_http_start(&a->http, &o->http, &h, err, sizeof(err))) != 0) {
        agent_say(a, "%s", err);
        return rc == -EADDRINUSE || rc == -EACCES || rc == -EINVAL ? CLI_EXIT_USAGE : 1;
    }
    agent_say_listening(a);
    return 0;
}

static void agent_free(struct agent *a) {
    agent_log_close(a->log); /* followers read to the end (2 s at most for a slow one)... */
    if (a->http)
        agent_log_wait_followers(a->log, 2000);
    agent_http_stop(a->http); /* ...before the listeners close */
    trace_watch_stop(a->watch);
    tele_destroy(a->tele);
    cli_kmsg_stop(&a->km);
    engine_destroy(a->e);
    rec_close(a->rec, NULL, 0);
    agent_log_destroy(a->log);
    evring_destroy(a->ring);
    free(a->text[0]);
    free(a->text[1]);
    pthread_mutex_destroy(&a->mu);
}

int agent_run(const struct agent_opts *o) {
    static struct agent a; /* large (the status): not on the stack */
    memset(&a, 0, sizeof(a));
    a.o = o;
    a.dev = (unsigned)o->train.conf.device;
    a.healthy = true;
    snprintf(a.health, sizeof(a.health), "ok");
    pthread_mutex_init(&a.mu, NULL);
    atomic_store(&a.beat_ns, mono_now_ns());
    if (gethostname(a.host, sizeof(a.host) - 1) != 0)
        snprintf(a.host, sizeof(a.host), "localhost");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    a.start_wall_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    if (agent_open_log(o) != 0)
        return CLI_EXIT_USAGE;
    sigset_t old;
    int sfd = agent_signalfd(&old);
    int rc = sfd < 0 ? 1 : agent_start(&a);
    if (rc == 0) {
        agent_loop(&a, sfd);
        rc = a.exit_rc;
        agent_say(&a, "stopped");
    }
    agent_free(&a);
    if (sfd >= 0)
        close(sfd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
