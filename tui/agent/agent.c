/* The agent: one loop on the main thread drains the engine's, the telemetry's and the kernel
 * log's events into the /events log, counts what /metrics reports, rebuilds the metrics text on
 * a timer and writes status lines; the HTTP threads only copy what it prepared (a scrape never
 * reads a snapshot, so 200 scrapers cost the training loop nothing but memcpy). */
#include "tui/agent/agent.h"

#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/core/quit_signal.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/record/record.h"
#include "backend/record/replay_internal.h"
#include "backend/run/bridge.h"
#include "backend/run/run.h"
#include "backend/run/source_watch.h"
#include "backend/trace/trace_watch.h"
#include "tui/agent/agent_log.h"
#include "tui/agent/agent_metrics.h"
#include "tui/agent/agent_status.h"
#include "tui/agent/http_url.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
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
#define AGENT_STALL_NS      10000000000ull /* /healthz: the main loop silent this long */

struct agent {
    const struct agent_opts *o;
    unsigned dev;
    struct run *run;  /* the loop (with --train), telemetry, the kernel log */
    struct engine *e; /* the run's loop, NULL without --train */
    struct agent_log *log;
    struct rec *rec; /* writes the run's lines into the log */
    struct agent_http *http;
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
    /* --watch: the bridge, the job whose stream is served (its slot, -1: none) */
    struct bridge *bridge;
    struct source *hangs; /* the hang watch over every attached job (fed the lines polled) */
    struct bridge_sink hangs_sink;
    pthread_mutex_t bridge_mu; /* the loop polls, an HTTP thread sends commands */
    int served;
    pid_t served_pid;
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

/* --log FILE: stderr goes there (the libraries' messages too), appended; SIGHUP reopens it.
 * Only a regular file of this user's (afile_open_fd): a link or a FIFO planted there is
 * refused, never written through or waited on. */
static int agent_open_log(const struct agent_opts *o) {
    if (!o->log_path[0])
        return 0;
    char err[1200];
    int fd = afile_open_fd(o->log_path, O_APPEND, 0640, err, sizeof(err));
    if (fd < 0) {
        fprintf(stderr, "ringside agent: --log %s\n", err);
        return fd;
    }
    dup2(fd, 2);
    close(fd);
    return 0;
}

/* ---- the event stream ---- */

/* Every line the run records, into the log by its type: the run line is kept for new
 * followers, layout lines and the summary are tagged, the rest are numbered events. */
static int agent_line(void *ctx, const char *text, size_t len) {
    struct agent *a = ctx;
    static const char run[] = "{\"type\":\"run\"", layout[] = "{\"type\":\"layout\"",
                      summary[] = "{\"type\":\"summary\"";
    if (strncmp(text, run, sizeof(run) - 1) == 0)
        agent_log_set_run(a->log, text);
    else if (strncmp(text, layout, sizeof(layout) - 1) == 0)
        agent_log_append(a->log, AGENT_LINE_LAYOUT, text, len);
    else if (strncmp(text, summary, sizeof(summary) - 1) == 0)
        agent_log_append(a->log, AGENT_LINE_STATE, text, len);
    else
        agent_log_append(a->log, AGENT_LINE_EVENT, text, len);
    return 0; /* a line the log could not keep is counted there; the stream goes on */
}

static void agent_count(struct agent *a, const struct ev *e) {
    if (e->kind == EV_KMSG && e->u.kmsg.category < KMSG_CAT_COUNT)
        a->kmsg_counts[e->u.kmsg.category]++;
    if (e->kind == EV_PHASE && e->u.phase.phase < PHASE_COUNT)
        a->phase_seconds[e->u.phase.phase] += (double)ev_phase_busy_ns(&e->u.phase) / 1e9;
}

/* Every event of the run, before it is recorded: counted for /metrics and numbered as the
 * log numbers it (the seq a follower resumes by). */
static void agent_on_event(void *ctx, struct ev *e) {
    struct agent *a = ctx;
    agent_count(a, e);
    e->seq = (uint32_t)(agent_log_last_seq(a->log) + 1);
}

/* The run's messages, as the agent's. */
static void agent_run_say(void *ctx, const char *msg) {
    agent_say(ctx, "%s", msg);
}

/* The status line: on a new telemetry sample, or once a second (the follower's clock, the
 * synchronize in flight, the kernel-log counters), never more than 4 a second. */
static void agent_status_tick(struct agent *a, uint64_t now) {
    struct tele *tele = run_tele(a->run);
    struct kmsg_watch *kw = run_kmsg(a->run);
    const struct tele_snap *t = tele ? tele_snap_read(tele, NULL) : NULL;
    bool new_sample = t && t->seq != a->status_tele_seq;
    if (now - a->status_ns < AGENT_STATUS_MIN_NS ||
        (!new_sample && now - a->status_ns < AGENT_STATUS_MAX_NS))
        return;
    struct agent_status *s = &a->status;
    s->t_ns = now;
    s->control = a->o->http.allow_control && (a->e != NULL || a->served >= 0);
    s->has_tele = t && t->t_ns != 0;
    if (s->has_tele) {
        s->tele = *t;
        a->status_tele_seq = t->seq;
    }
    s->has_kmsg = kw != NULL;
    if (s->has_kmsg) {
        kmsg_watch_stats(kw, &s->kmsg);
        snprintf(s->kmsg_reason, sizeof(s->kmsg_reason), "%s", kmsg_watch_reason(kw));
    }
    s->inflight_dev = a->dev;
    s->has_inflight = run_inflight(a->run, a->dev, &s->inflight);
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
    const struct engine_snap *devs[ENGINE_MAX_DEVICES];
    unsigned idx[ENGINE_MAX_DEVICES], n_devs = a->e ? engine_devices(a->e, idx) : 0;
    for (unsigned k = 0; k < n_devs; k++)
        if (!(devs[k] = engine_snap_read_dev(a->e, k, NULL)))
            n_devs = k;
    if (n_devs > 0) /* the same buffer as engine_snap_read's: the latest read is the one */
        snap = devs[0];
    struct kmsg_watch *kw = run_kmsg(a->run);
    struct trace_watch *watch = run_watch(a->run);
    struct tele *tele = run_tele(a->run);
    struct kmsg_stats ks = {0};
    if (kw)
        kmsg_watch_stats(kw, &ks);
    struct agent_metrics_self self = {
        .version = RS_VERSION,
        .host = a->host,
        .backend = snap ? snap->backend : "none",
        .start_time_seconds = a->start_wall_s,
        .http_answered = hs.answered,
        .http_unauthorized = hs.unauthorized,
        .http_refused = hs.refused,
        .http_timed_out = hs.timed_out,
        .http_evicted = hs.evicted,
        .http_over_limit = hs.over_limit,
        .http_over_address = hs.over_address,
        .http_over_followers = hs.over_followers,
        .http_over_follower_address = hs.over_follower_address,
        .http_auth_backoff = hs.auth_backoff,
        .http_connections = hs.connections,
        .event_followers = hs.followers,
        .event_lines = ls.appended,
        .events_evicted = ls.evicted,
        .ring_dropped = run_dropped(a->run) + ks.dropped,
    };
    struct agent_metrics_in in = {
        .tele = tele ? tele_snap_read(tele, NULL) : NULL,
        .engine = snap,
        .devs = devs,
        .n_devs = n_devs,
        .trace = a->e ? engine_trace(a->e) : NULL,
        .dev = a->dev,
        .watch_state = watch ? (int)trace_watch_state(watch, a->dev) : -1,
        .kmsg_counts = kw ? a->kmsg_counts : NULL,
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

/* The HTTP server's lines (refusals, wrong tokens), as the agent's. */
static void agent_http_say(void *ctx, const char *line) {
    agent_say(ctx, "%s", line);
}

/* The health line, from the loop: a failed run or a hung synchronize is not healthy. */
static void agent_health_tick(struct agent *a) {
    char why[256] = "ok";
    bool ok = true;
    if (a->e && engine_snap_read(a->e, NULL)->state == ENGINE_FAILED) {
        ok = false;
        snprintf(why, sizeof(why), "training failed (see the summary on /events)");
    } else if (run_watch(a->run) &&
               trace_watch_state(run_watch(a->run), a->dev) == TRACE_WATCH_HANG) {
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
/* A command for the watched job: a line on its bridge connection. */
static int agent_watch_command(struct agent *a, enum ev_cmd_id cmd, int64_t arg, char *msg,
                               size_t n) {
    char line[160];
    snprintf(line, sizeof(line), "{\"type\":\"command\",\"cmd\":\"%s\",\"arg\":%lld}",
             ev_cmd_name(cmd), (long long)arg);
    pthread_mutex_lock(&a->bridge_mu);
    int rc = a->served < 0 ? -ENOTCONN : bridge_send(a->bridge, (unsigned)a->served, line);
    pid_t pid = a->served_pid;
    pthread_mutex_unlock(&a->bridge_mu);
    if (rc == -ENOTCONN)
        return errbuf_set(msg, n, -ENOTSUP, "no job attached to the agent's bridge");
    if (rc != 0)
        return errbuf_set(msg, n, -EAGAIN, "the job (pid %d) is not reading its commands",
                          (int)pid);
    snprintf(msg, n, "%s sent to the job (pid %d; its answer follows on /events)", ev_cmd_name(cmd),
             (int)pid);
    return 0;
}

static int agent_control_cb(void *ctx, enum ev_cmd_id cmd, int64_t arg, char *msg, size_t n) {
    struct agent *a = ctx;
    if (a->bridge && ev_cmd_remote(cmd))
        return agent_watch_command(a, cmd, arg, msg, n);
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

static void agent_say_listening(struct agent *a) {
    const struct agent_http_conf *h = &a->o->http;
    char tcp[160] = "", unx[160] = "", addr[128] = "";
    if (h->listen[0]) {
        char why[160];
        unsigned port = 0;
        agent_http_parse_listen(h->listen, addr, sizeof(addr), &port, why, sizeof(why));
        snprintf(tcp, sizeof(tcp), "%s://%s%s%s:%u", h->tls ? "https" : "http",
                 strchr(addr, ':') ? "[" : "", addr, strchr(addr, ':') ? "]" : "",
                 agent_http_port(a->http));
    }
    if (h->unix_path[0])
        snprintf(unx, sizeof(unx), "unix:%s", h->unix_path);
    agent_say(a, "serving %s%s%s (token: %s; control: %s; training loop: %s)", tcp,
              tcp[0] && unx[0] ? " and " : "", unx,
              h->token[0] ? "required beyond /metrics" : "none", h->allow_control ? "on" : "off",
              a->e ? "yes" : "no");
    bool beyond = h->listen[0] && !http_host_loopback(addr);
    if (beyond && !h->token[0])
        agent_say(a,
                  "warning: listening beyond this machine without a token: anyone who can "
                  "reach %s reads the run's events (give --token-file FILE)",
                  tcp);
    else if (beyond && !h->tls)
        agent_say(a,
                  "warning: listening beyond this machine in plain HTTP: the token crosses the "
                  "network in clear, for anyone on the way to %s to read and use (give "
                  "--tls-cert FILE and --tls-key FILE)",
                  tcp);
}

/* Every event the loop's threads will ever push is drained and its summary written. */
static void agent_join(struct agent *a) {
    atomic_store(&a->loop_ended, true);
    a->exit_rc = run_finish(a->run, NULL);
    a->joined = true;
}

/* SIGHUP through a signalfd (it reopens the log); SIGINT and SIGTERM through the quit handler,
 * which says the first at once and leaves on the second from the handler itself, whatever the
 * main thread is waiting for (backend/core/quit_signal.h). */
static int agent_signalfd(const struct agent_opts *o, sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &s, old); /* every thread made from here on leaves them to us */
    sigdelset(&s, SIGINT);
    sigdelset(&s, SIGTERM);
    signal(SIGPIPE, SIG_IGN);
    struct quit_signal_conf q = {
        .keep_hup = true,
        .prefix = "ringside agent: ",
        .first = o->train_loop ? " (the step ends and the checkpoint is written)" : ""};
    if (quit_signal_install(&q) != 0)
        return -1;
    return signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* SIGHUP reopens the log; the first SIGINT/SIGTERM (said by its handler) asks for a stop. */
static void agent_signals(struct agent *a, int sfd, bool *stopping) {
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        agent_open_log(a->o);
        agent_say(a, "log reopened");
    }
    if (*stopping || !quit_signal_first())
        return;
    *stopping = true;
    if (a->e && !a->joined)
        run_stop(a->run);
}

/* ---- --watch: a job's stream through the bridge ---- */

static void agent_watch_opened(void *ctx, unsigned job, pid_t pid) {
    struct agent *a = ctx;
    a->hangs_sink.opened(a->hangs_sink.ctx, job, pid);
    if (a->served >= 0)
        return; /* one job's stream at a time: the first that attached */
    a->served = (int)job;
    a->served_pid = pid;
    agent_say(a, "job (pid %d) attached: its stream is served on /events", (int)pid);
}

/* The served job's lines into the log: its run line and layout and summary lines as they are,
 * its events renumbered as the log numbers them (and counted for /metrics); its "call" lines
 * are for a dashboard's hang watch and stay out of the recording's schema. */
static void agent_watch_line(void *ctx, unsigned job, const char *line, size_t len) {
    struct agent *a = ctx;
    const struct replay_item *it = NULL; /* the line as the hang watch parsed it */
    int rc = watch_source_line(a->hangs, job, line, len, &it);
    if ((int)job != a->served || len < 12 || strncmp(line, "{\"type\":\"call\"", 14) == 0)
        return;
    if (rc != 0)
        return; /* counted by nobody here: a dashboard on the stream says what it skips */
    if (it->kind == REPLAY_EVENT) {
        struct ev e;
        ev_copy(&e, &it->ev);
        agent_on_event(a, &e);
        rec_event(a->rec, &e);
        return;
    }
    char *text = strndup(line, len);
    if (text)
        agent_line(a, text, len);
    free(text);
}

static void agent_watch_closed(void *ctx, unsigned job) {
    struct agent *a = ctx;
    a->hangs_sink.closed(a->hangs_sink.ctx, job);
    if ((int)job != a->served)
        return;
    agent_say(a, "job (pid %d) detached", (int)a->served_pid);
    a->served = -1;
}

/* A diagnosis (an alert's note) as a log line after its alert in the stream. */
static void agent_watch_note(struct agent *a, const struct ev *alert, const char *note) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string("log"));
    json_object_object_add(o, "seq", json_object_new_int64(agent_log_last_seq(a->log) + 1));
    json_object_object_add(o, "t_ns", json_object_new_int64((int64_t)alert->t_ns));
    if (alert->dev != EV_DEV_NONE)
        json_object_object_add(o, "dev", json_object_new_int(alert->dev));
    json_object_object_add(o, "severity", json_object_new_string("info"));
    json_object_object_add(o, "message", json_object_new_string(note));
    json_object_object_add(o, "diagnosis", json_object_new_boolean(1));
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    agent_line(a, text, len);
    json_object_put(o);
}

/* What the hang watch says of the jobs (SLOW, HANG, back to ok, where a bundle went), into
 * the stream with each alert's diagnosis after it; the jobs' own lines are served as they
 * came. */
static void agent_watch_hangs(struct agent *a) {
    static struct ev evs[64]; /* the main thread's alone */
    size_t n;
    while ((n = a->hangs->ops->drain(a->hangs, evs, 64)) > 0)
        for (size_t i = 0; i < n; i++) {
            struct ev *e = &evs[i];
            if (e->kind != EV_ALERT && !(e->kind == EV_LOG && e->u.text.code == ALERT_HANG_BUNDLE))
                continue;
            const char *note = a->hangs->ops->note(a->hangs, e->t_ns, e->dev, e->u.text.code);
            char *copy = note ? strdup(note) : NULL;
            unsigned dev =
                e->dev == EV_DEV_NONE ? EV_DEV_NONE : watch_source_job_dev(a->hangs, e->dev);
            e->dev = (uint16_t)dev; /* the job's own number for its device, as its lines */
            agent_on_event(a, e);
            rec_event(a->rec, e);
            if (copy)
                agent_watch_note(a, e, copy);
            free(copy);
        }
}

static void agent_watch_poll(struct agent *a) {
    struct bridge_sink sink = {agent_watch_opened,   agent_watch_line, NULL, agent_watch_closed, a,
                               a->hangs_sink.refused};
    pthread_mutex_lock(&a->bridge_mu);
    bridge_poll(a->bridge, &sink, 8u << 20);
    agent_watch_hangs(a); /* it may ask the jobs for their stacks: under the lock */
    pthread_mutex_unlock(&a->bridge_mu);
}

static void agent_loop(struct agent *a, int sfd) {
    static struct ev evs[AGENT_DRAIN]; /* the main thread's alone */
    bool stopping = false;
    for (;;) {
        struct pollfd pf[3] = {{run_wake_fd(a->run), POLLIN, 0},
                               {sfd, POLLIN, 0},
                               {stopping ? -1 : quit_signal_fd(), POLLIN, 0}};
        poll(pf, 3, AGENT_TICK_MS);
        uint64_t now = mono_now_ns();
        atomic_store(&a->beat_ns, now);
        agent_signals(a, sfd, &stopping);
        while (run_drain(a->run, evs, AGENT_DRAIN) > 0) {
        }
        if (a->bridge)
            agent_watch_poll(a);
        if (!a->joined)
            run_snap(a->run, a->dev); /* a layout line when the pool changed */
        if (a->e && !a->joined && run_done(a->run))
            agent_join(a);
        agent_status_tick(a, now);
        agent_health_tick(a);
        agent_metrics_tick(a, now, false);
        if (stopping && (!a->e || a->joined))
            return; /* a loop that does not stop is left by the run's stop deadline */
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
    int rc = agent_log_create(&a->log, o->window_lines, o->window_bytes);
    if (rc == 0)
        rc = rec_open_sink(&a->rec, agent_line, a);
    if (rc != 0) {
        agent_say(a, "out of memory");
        return 1;
    }
    struct run_conf c = {.o = &o->run,
                         .cmd = "agent",
                         .train = o->train_loop,
                         .ring_events = AGENT_RING_CAP,
                         .echo = true,
                         .on_event = agent_on_event,
                         .say = agent_run_say,
                         .ctx = a};
    if ((rc = run_create(&a->run, &c)) != 0)
        return rc;
    a->e = run_engine(a->run);
    run_record(a->run, a->rec);
    if (o->watch) {
        if (bridge_open(&a->bridge, o->socket[0] ? o->socket : NULL, err, sizeof(err)) != 0) {
            agent_say(a, "%s", err);
            return RS_EXIT_USAGE;
        }
        if ((rc = watch_source_create_fed(a->run, a->bridge, &a->hangs)) != 0) {
            agent_say(a, "cannot watch the jobs: %s", strerror(-rc));
            return 1;
        }
        watch_source_sink(a->hangs, &a->hangs_sink);
        agent_say(a, "watching for PyTorch jobs at %s", bridge_path(a->bridge));
    }
    if ((rc = run_start(a->run)) != 0)
        return rc;
    agent_metrics_tick(a, mono_now_ns(), true);
    struct agent_http_handlers h = {.ctx = a,
                                    .metrics = agent_metrics_cb,
                                    .control = agent_control_cb,
                                    .health = agent_health_cb,
                                    .say = agent_http_say,
                                    .log = a->log};
    if ((rc = agent_http_start(&a->http, &o->http, &h, err, sizeof(err))) != 0) {
        agent_say(a, "%s", err);
        return rc == -EADDRINUSE || rc == -EACCES || rc == -EINVAL ? RS_EXIT_USAGE : 1;
    }
    agent_say_listening(a);
    return 0;
}

/* SIGHUPs that came during the shutdown: read, so that none is left pending to the default
 * action once the mask is given back (sfd < 0: none to read, as when start-up failed). */
static void agent_hup_drain(int sfd) {
    struct signalfd_siginfo si;
    while (sfd >= 0 && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
    }
}

static void agent_free(struct agent *a, int sfd) {
    agent_log_close(a->log); /* followers read to the end (2 s at most for a slow one)... */
    for (int k = 0; a->http && k < 20 && !agent_log_wait_followers(a->log, 100); k++) {
    }
    agent_http_stop(a->http); /* ...before the listeners close */
    run_destroy(a->run);
    agent_hup_drain(sfd);
    if (a->hangs)
        a->hangs->ops->destroy(a->hangs);
    bridge_close(a->bridge);
    pthread_mutex_destroy(&a->bridge_mu);
    rec_close(a->rec, NULL, 0);
    agent_log_destroy(a->log);
    free(a->text[0]);
    free(a->text[1]);
    pthread_mutex_destroy(&a->mu);
}

int agent_run(const struct agent_opts *o) {
    static struct agent a; /* large (the status): not on the stack */
    memset(&a, 0, sizeof(a));
    a.o = o;
    a.dev = (unsigned)o->run.conf.device;
    a.healthy = true;
    snprintf(a.health, sizeof(a.health), "ok");
    pthread_mutex_init(&a.mu, NULL);
    pthread_mutex_init(&a.bridge_mu, NULL);
    a.served = -1;
    atomic_store(&a.beat_ns, mono_now_ns());
    if (gethostname(a.host, sizeof(a.host) - 1) != 0)
        snprintf(a.host, sizeof(a.host), "localhost");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    a.start_wall_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    if (agent_open_log(o) != 0)
        return RS_EXIT_USAGE;
    sigset_t old;
    int sfd = agent_signalfd(o, &old);
    int rc = sfd < 0 ? 1 : agent_start(&a);
    quit_signal_mask(false); /* every thread exists: SIGINT and SIGTERM are this one's */
    if (rc == 0) {
        agent_loop(&a, sfd);
        rc = a.exit_rc;
        agent_say(&a, "stopped");
    }
    agent_free(&a, sfd);
    agent_hup_drain(sfd);
    quit_signal_uninstall();
    if (sfd >= 0)
        close(sfd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
