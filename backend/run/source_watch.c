/* The watch source: jobs attached through the bridge, over a run of telemetry and the kernel
 * log. Each job's lines go through the recording parser and the replay's snapshot builder, so
 * a bridge stream reads as a recording does; the bridge's own "call" lines mark what a job is
 * blocked in. One thread (the dashboard's). */
#define _GNU_SOURCE /* memmem */
#include "backend/run/source_watch.h"

#include "backend/core/json_text.h"
#include "backend/core/mono.h"
#include "backend/record/replay_snap.h"
#include "backend/run/run.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_QUEUE      8192       /* events between two drains */
#define WATCH_POLL_BYTES (8u << 20) /* read at most this much a drain */

struct watch_job {
    bool open;     /* connected now */
    bool have_run; /* its run line came: it is shown */
    pid_t pid;
    char name[64];
    bool control; /* takes commands */
    int rank;     /* its rank in a process group, or -1 */
    int local_rank, world_size; /* -1 and 0 when not told */
    char host[64];
    char group_backend[16];
    unsigned dev;
    struct replay_snap *snap;
    bool in_call; /* blocked in a call it announced */
    struct trace_inflight call;
    char call_name[48];
    uint64_t lines, bad;
};

struct watch {
    struct source src;
    struct run *run;
    struct bridge *b;
    struct watch_job jobs[BRIDGE_MAX_JOBS];
    struct replay_item *item;
    struct ev q[WATCH_QUEUE];
    size_t head, n;
    uint64_t dropped, bad;
    unsigned shown[RUN_MAX_DEVICES]; /* the jobs shown, by device */
    unsigned n_shown;
    struct engine_snap idle;
    bool stopped;
    char status[256];
    char other[4][24]; /* the jobs' own phase names (shown as "other"), the first four */
    unsigned n_other;
    unsigned selected; /* the shown job (index into shown) the dashboard has selected */
};

static void watch_push(struct watch *w, const struct ev *e) {
    if (w->n == WATCH_QUEUE) { /* the oldest goes */
        w->head = (w->head + 1) % WATCH_QUEUE;
        w->n--;
        w->dropped++;
    }
    w->q[(w->head + w->n) % WATCH_QUEUE] = *e;
    w->n++;
}

static void watch_log(struct watch *w, enum ev_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void watch_log(struct watch *w, enum ev_severity sev, const char *fmt, ...) {
    struct ev e;
    memset(&e, 0, sizeof(e));
    e.kind = EV_LOG;
    e.dev = EV_DEV_NONE;
    e.t_ns = mono_now_ns();
    e.u.text.severity = (uint8_t)sev;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.u.text.text, sizeof(e.u.text.text), fmt, ap);
    va_end(ap);
    watch_push(w, &e);
}

/* The view: every job with a run line, open ones and (until another job comes) the last
 * ones that ended, by device; the header's facts from them. */
static void watch_view(struct watch *w) {
    struct run_info *r = &w->src.run;
    w->n_shown = 0;
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS && w->n_shown < RUN_MAX_DEVICES; k++)
        if (w->jobs[k].have_run)
            w->shown[w->n_shown++] = k;
    for (unsigned i = 1; i < w->n_shown; i++) /* insertion sort by device */
        for (unsigned j = i; j > 0 && w->jobs[w->shown[j]].dev < w->jobs[w->shown[j - 1]].dev;
             j--) {
            unsigned t = w->shown[j];
            w->shown[j] = w->shown[j - 1];
            w->shown[j - 1] = t;
        }
    r->n_devices = w->n_shown ? w->n_shown : 1;
    bool control = false;
    memset(r->ranks, 0, sizeof(r->ranks));
    for (unsigned i = 0; i < w->n_shown; i++) {
        struct watch_job *j = &w->jobs[w->shown[i]];
        struct run_rank *rk = &r->ranks[i];
        r->devices[i] = (uint16_t)j->dev;
        control |= j->open && j->control;
        *rk = (struct run_rank){.valid = true,
                                .rank = j->rank,
                                .local_rank = j->local_rank,
                                .world_size = j->world_size,
                                .pid = (int32_t)j->pid,
                                .open = j->open};
        snprintf(rk->name, sizeof(rk->name), "%s", j->name);
        snprintf(rk->host, sizeof(rk->host), "%s", j->host);
        snprintf(rk->group_backend, sizeof(rk->group_backend), "%s", j->group_backend);
    }
    if (w->n_shown) {
        const struct watch_job *j = &w->jobs[w->shown[0]];
        snprintf(r->backend, sizeof(r->backend), "%s", j->snap->snaps[0].backend);
        snprintf(r->dev_name, sizeof(r->dev_name), "%s", j->snap->snaps[0].dev.name);
        r->idle[0] = '\0';
    } else {
        snprintf(r->backend, sizeof(r->backend), "none");
        snprintf(r->dev_name, sizeof(r->dev_name), "no job attached");
        snprintf(r->idle, sizeof(r->idle),
                 "no job attached: a script calls ringside.connect() (socket %s)",
                 bridge_path(w->b));
    }
    snprintf(r->control_off, sizeof(r->control_off), "%s",
             !w->n_shown ? "no job attached"
             : control   ? ""
                         : "the job takes no commands (ringside.connect(control=True))");
}

/* An int member of o in [lo, hi], else dflt. */
static int watch_int(json_object *o, const char *key, int lo, int hi, int dflt) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
        return dflt;
    int64_t x = json_object_get_int64(v);
    return x >= lo && x <= hi ? (int)x : dflt;
}

/* A string member of o into out ("" unless it is one). */
static void watch_str(json_object *o, const char *key, char *out, size_t n) {
    json_object *v = NULL;
    if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
        snprintf(out, n, "%s", json_object_get_string(v));
}

/* Who the job is in its process group (a run line's or a rank line's members). */
static void watch_job_rank(struct watch_job *j, json_object *o) {
    j->rank = watch_int(o, "rank", 0, 1 << 20, j->rank);
    j->local_rank = watch_int(o, "local_rank", 0, 1 << 20, j->local_rank);
    j->world_size = watch_int(o, "world_size", 1, 1 << 20, j->world_size);
    char be[sizeof(j->group_backend)] = "";
    watch_str(o, "group_backend", be, sizeof(be));
    if (be[0])
        memcpy(j->group_backend, be, sizeof(be));
}

/* A run line's fields for the bridge: who the job is and whether it takes commands. */
static void watch_job_extra(struct watch_job *j, const char *line, size_t len) {
    json_object *o = NULL, *v = NULL;
    char why[64];
    j->control = false;
    j->rank = j->local_rank = -1;
    j->world_size = 0;
    if (json_text_parse(line, len, &o, why, sizeof(why)) != 0)
        return;
    watch_str(o, "name", j->name, sizeof(j->name));
    watch_str(o, "host", j->host, sizeof(j->host));
    if (json_object_object_get_ex(o, "control", &v))
        j->control = json_object_get_boolean(v);
    watch_job_rank(j, o);
    json_object_put(o);
}

/* A "call" line: the job enters a call that may block (end: it left it). */
static int watch_call(struct watch_job *j, const char *line, size_t len, char *why, size_t n) {
    json_object *o = NULL, *v = NULL;
    int rc = json_text_parse(line, len, &o, why, n);
    if (rc != 0)
        return rc;
    bool end = json_object_object_get_ex(o, "end", &v) && json_object_get_boolean(v);
    j->in_call = !end;
    if (!end) {
        const char *op = json_object_object_get_ex(o, "op", &v) ? json_object_get_string(v) : "";
        const char *ph = json_object_object_get_ex(o, "phase", &v) ? json_object_get_string(v) : "";
        const char *call =
            json_object_object_get_ex(o, "call", &v) ? json_object_get_string(v) : "";
        j->call.op = SYNC_OP_DEVICE;
        for (unsigned k = 0; op && k < SYNC_OP_COUNT; k++)
            if (strcmp(op, ev_sync_op_name(k)) == 0)
                j->call.op = (uint8_t)k;
        j->call.phase = PHASE_COUNT;
        for (unsigned k = 0; ph && k < PHASE_COUNT; k++)
            if (strcmp(ph, ev_phase_name(k)) == 0)
                j->call.phase = (uint8_t)k;
        j->call.start_ns = json_object_object_get_ex(o, "start_ns", &v)
                               ? (uint64_t)json_object_get_int64(v)
                               : mono_now_ns();
        snprintf(j->call_name, sizeof(j->call_name), "%s", call ? call : "");
    }
    json_object_put(o);
    return 0;
}

/* A phase's own name (the parsed line's "name"), kept for the status line: the timeline shows
 * such phases as "other". The first four, each at most 23 bytes. */
static void watch_other_name(struct watch *w, const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof(w->other[0]) || w->n_other == sizeof(w->other) / sizeof(w->other[0]))
        return;
    for (unsigned k = 0; k < w->n_other; k++)
        if (strcmp(w->other[k], name) == 0)
            return;
    memcpy(w->other[w->n_other++], name, n + 1);
}

static void watch_item(struct watch *w, struct watch_job *j, const char *line, size_t len) {
    struct replay_item *it = w->item;
    switch (it->kind) {
    case REPLAY_RUN:
        replay_snap_init(j->snap, &it->run, &it->extra);
        j->snap->snaps[0].pid = (int32_t)j->pid;
        j->dev = it->run.n_devices ? it->run.devices[0] : 0;
        j->have_run = true;
        watch_job_extra(j, line, len);
        for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++) /* a new job: the ended ones go */
            if (!w->jobs[k].open && w->jobs[k].have_run)
                w->jobs[k].have_run = false;
        watch_view(w);
        watch_log(w, SEV_INFO, "job %s (pid %d%s) attached on device %u%s", j->name, (int)j->pid,
                  j->rank >= 0 ? ", a rank" : "", j->dev,
                  j->control ? "" : "; it takes no commands");
        return;
    case REPLAY_EVENT:
        if (it->ev.kind == EV_SYNC || it->ev.kind == EV_COLLECTIVE)
            j->in_call = false; /* what it was blocked in returned */
        if (it->ev.kind == EV_PHASE && it->ev.u.phase.phase == PHASE_OTHER)
            watch_other_name(w, it->phase_name);
        replay_snap_apply(j->snap, it);
        watch_push(w, &it->ev);
        return;
    case REPLAY_LAYOUT:
    case REPLAY_SUMMARY:
        replay_snap_apply(j->snap, it);
        if (it->kind == REPLAY_SUMMARY)
            watch_log(w, SEV_INFO, "job %s (pid %d) ended", j->name, (int)j->pid);
        return;
    default:
        return;
    }
}

static void watch_on_line(void *ctx, unsigned k, const char *line, size_t len) {
    struct watch *w = ctx;
    struct watch_job *j = &w->jobs[k];
    char why[256] = "";
    int rc = 0;
    j->lines++;
    if (len > 14 && memmem(line, len < 40 ? len : 40, "\"type\":\"call\"", 13))
        rc = watch_call(j, line, len, why, sizeof(why));
    else if ((rc = replay_parse_line(line, len, w->item, why, sizeof(why))) == 0 &&
             (j->have_run || w->item->kind == REPLAY_RUN))
        watch_item(w, j, line, len);
    else if (rc == 0 && w->item->kind != REPLAY_BLANK)
        rc = -EINVAL, snprintf(why, sizeof(why), "a line before the run line");
    if (rc != 0) {
        w->bad++;
        if (j->bad++ == 0)
            watch_log(w, SEV_WARNING,
                      "job %s (pid %d): line %llu not understood (%s); such lines "
                      "are skipped and counted",
                      j->name, (int)j->pid, (unsigned long long)j->lines, why);
    }
}

static void watch_on_open(void *ctx, unsigned k, pid_t pid) {
    struct watch *w = ctx;
    struct watch_job *j = &w->jobs[k];
    struct replay_snap *snap = j->snap;
    memset(j, 0, sizeof(*j));
    j->snap = snap;
    j->open = true;
    j->pid = pid;
    j->rank = -1;
    snprintf(j->name, sizeof(j->name), "pid %d", (int)pid);
}

static void watch_on_overlong(void *ctx, unsigned k) {
    struct watch *w = ctx;
    w->bad++;
    if (w->jobs[k].bad++ == 0)
        watch_log(w, SEV_WARNING, "job %s: a line longer than %u bytes skipped", w->jobs[k].name,
                  BRIDGE_LINE_MAX);
}

static void watch_on_close(void *ctx, unsigned k) {
    struct watch *w = ctx;
    struct watch_job *j = &w->jobs[k];
    j->open = false;
    if (!j->have_run)
        return;
    struct engine_snap *s = &j->snap->snaps[0];
    if (s->state != ENGINE_FINISHED && s->state != ENGINE_FAILED)
        watch_log(w, j->in_call ? SEV_ERROR : SEV_WARNING,
                  "job %s (pid %d) went away without ending%s%s", j->name, (int)j->pid,
                  j->in_call ? " while in " : "", j->in_call ? j->call_name : "");
    j->in_call = false;
    watch_view(w);
}

static int watch_wake_fd(struct source *s) {
    return run_wake_fd(((struct watch *)s->priv)->run);
}

static size_t watch_drain(struct source *s, struct ev *out, size_t max) {
    struct watch *w = s->priv;
    struct bridge_sink sink = {watch_on_open, watch_on_line, watch_on_overlong, watch_on_close, w};
    bridge_poll(w->b, &sink, WATCH_POLL_BYTES);
    size_t n = 0;
    while (n < max / 2 && w->n > 0) {
        out[n++] = w->q[w->head];
        w->head = (w->head + 1) % WATCH_QUEUE;
        w->n--;
    }
    return n + run_drain(w->run, out + n, max - n);
}

static const struct engine_snap *watch_dev_snap(struct source *s, unsigned k) {
    struct watch *w = s->priv;
    if (k >= w->n_shown)
        return k == 0 ? &w->idle : NULL;
    struct engine_snap *snap = &w->jobs[w->shown[k]].snap->snaps[0];
    snap->t_ns = mono_now_ns();
    return snap;
}

static const struct engine_snap *watch_snap(struct source *s) {
    return watch_dev_snap(s, 0);
}

static uint64_t watch_now(struct source *s) {
    (void)s;
    return mono_now_ns();
}

/* Whether job i of the view gets the selected job's commands: it is the selected one, or a
 * rank of the same process group (every rank pauses together). */
static bool watch_targets(const struct watch *w, unsigned i) {
    unsigned sel = w->selected < w->n_shown ? w->selected : 0;
    const struct watch_job *s = &w->jobs[w->shown[sel]], *j = &w->jobs[w->shown[i]];
    return i == sel || (s->rank >= 0 && j->rank >= 0);
}

/* The loop's keys as commands to the selected job (and its process group) when it takes
 * them. */
static bool watch_action(struct source *s, enum source_action act, char *msg, size_t msglen) {
    struct watch *w = s->priv;
    static const char *const cmds[SOURCE_ACTIONS] = {"pause", "chunk_step", "chunk_step", "cleanup",
                                                     "probe"};
    if (act >= SOURCE_ACTIONS)
        return false;
    const char *cmd = cmds[act];
    unsigned sent = 0, full = 0, refused = 0;
    for (unsigned i = 0; i < w->n_shown; i++) {
        struct watch_job *j = &w->jobs[w->shown[i]];
        if (!j->open || !watch_targets(w, i))
            continue;
        if (!j->control) {
            refused++;
            continue;
        }
        if (act == SOURCE_PAUSE_TOGGLE && j->snap->snaps[0].state == ENGINE_PAUSED)
            cmd = "resume";
        char line[160];
        snprintf(line, sizeof(line), "{\"type\":\"command\",\"cmd\":\"%s\",\"arg\":%d}", cmd,
                 act == SOURCE_CHUNK_DOWN ? -1
                 : act == SOURCE_CHUNK_UP ? 1
                                          : 0);
        int rc = bridge_send(w->b, w->shown[i], line);
        sent += rc == 0;
        full += rc == -EAGAIN;
    }
    if (sent == 0 && full == 0)
        snprintf(msg, msglen, "%s",
                 refused                 ? "the selected job takes no commands"
                 : s->run.control_off[0] ? s->run.control_off
                                         : "the selected job has ended");
    else
        snprintf(msg, msglen, "%s sent to %u job%s%s", cmd, sent, sent == 1 ? "" : "s",
                 full ? " (some are not reading their commands)" : "");
    return true;
}

static void watch_select(struct source *s, unsigned k) {
    ((struct watch *)s->priv)->selected = k;
}

static void watch_stop(struct source *s) {
    ((struct watch *)s->priv)->stopped = true;
}

static bool watch_inflight(struct source *s, unsigned dev, struct trace_inflight *out) {
    struct watch *w = s->priv;
    for (unsigned i = 0; i < w->n_shown; i++) {
        const struct watch_job *j = &w->jobs[w->shown[i]];
        if (j->dev == dev && j->open && j->in_call) {
            *out = j->call;
            return true;
        }
    }
    return false;
}

static bool watch_done(struct source *s) {
    return ((struct watch *)s->priv)->stopped;
}

/* "watching: 2 jobs; rank 1 (pid 42) in destroy_process_group for 35.2 s", or how to attach. */
static const char *watch_status(struct source *s) {
    struct watch *w = s->priv;
    unsigned open = 0;
    const struct watch_job *stuck = NULL;
    for (unsigned i = 0; i < w->n_shown; i++) {
        const struct watch_job *j = &w->jobs[w->shown[i]];
        open += j->open;
        if (j->open && j->in_call && (!stuck || j->call.start_ns < stuck->call.start_ns))
            stuck = j;
    }
    if (!w->n_shown)
        return s->run.idle;
    int n = snprintf(w->status, sizeof(w->status), "watching %u job%s", open, open == 1 ? "" : "s");
    uint64_t now = mono_now_ns();
    if (stuck && now > stuck->call.start_ns && n > 0 && (size_t)n < sizeof(w->status)) {
        char who[32];
        snprintf(who, sizeof(who), stuck->rank >= 0 ? "rank %d" : "device %d",
                 stuck->rank >= 0 ? stuck->rank : (int)stuck->dev);
        snprintf(w->status + n, sizeof(w->status) - (size_t)n, "; %s (pid %d) in %s for %.1f s",
                 who, (int)stuck->pid, stuck->call_name,
                 (double)(now - stuck->call.start_ns) / 1e9);
    }
    for (unsigned k = 0; k < w->n_other && strlen(w->status) + 30 < sizeof(w->status); k++)
        snprintf(w->status + strlen(w->status), sizeof(w->status) - strlen(w->status), "%s%s",
                 k ? ", " : "; other = ", w->other[k]);
    if (w->dropped && strlen(w->status) + 40 < sizeof(w->status))
        snprintf(w->status + strlen(w->status), sizeof(w->status) - strlen(w->status),
                 "; %llu events dropped", (unsigned long long)w->dropped);
    if (w->bad && strlen(w->status) + 40 < sizeof(w->status))
        snprintf(w->status + strlen(w->status), sizeof(w->status) - strlen(w->status),
                 "; %llu lines skipped", (unsigned long long)w->bad);
    return w->status;
}

static void watch_destroy(struct source *s) {
    struct watch *w = s->priv;
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++)
        free(w->jobs[k].snap);
    free(w->item);
    free(w);
}

static const struct source_ops watch_ops = {
    .name = "watch",
    .wake_fd = watch_wake_fd,
    .drain = watch_drain,
    .snap = watch_snap,
    .dev_snap = watch_dev_snap,
    .now_ns = watch_now,
    .action = watch_action,
    .stop = watch_stop,
    .inflight = watch_inflight,
    .done = watch_done,
    .status = watch_status,
    .destroy = watch_destroy,
    .select = watch_select,
};

int watch_source_create(struct run *run, struct bridge *b, struct source **out) {
    struct watch *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->run = run;
    w->b = b;
    w->src.ops = &watch_ops;
    w->src.priv = w;
    w->item = malloc(sizeof(*w->item));
    bool ok = w->item != NULL;
    for (unsigned k = 0; ok && k < BRIDGE_MAX_JOBS; k++)
        ok = (w->jobs[k].snap = calloc(1, sizeof(struct replay_snap))) != NULL;
    if (!ok) {
        watch_destroy(&w->src);
        return -ENOMEM;
    }
    run_info(run, &w->src.run);
    w->src.run.watch = true;
    snprintf(w->src.run.origin, sizeof(w->src.run.origin), "watch");
    w->idle.state = ENGINE_STARTING;
    w->idle.phase = PHASE_COUNT;
    w->idle.n_ranks = 1;
    snprintf(w->idle.backend, sizeof(w->idle.backend), "none");
    watch_view(w);
    *out = &w->src;
    return 0;
}

void watch_source_counts(struct source *s, uint64_t *bad_lines, uint64_t *dropped) {
    struct watch *w = s->priv;
    *bad_lines = w->bad;
    *dropped = w->dropped;
}
