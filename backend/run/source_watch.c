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
#include "backend/run/source_watch_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void watch_push(struct watch *w, const struct ev *e) {
    if (w->n == WATCH_QUEUE) { /* the oldest goes */
        w->head = (w->head + 1) % WATCH_QUEUE;
        w->n--;
        w->dropped++;
    }
    w->q[(w->head + w->n) % WATCH_QUEUE] = *e;
    w->n++;
}

/* A log line about job k (BRIDGE_MAX_JOBS: about none). */
static void watch_log(struct watch *w, unsigned k, enum ev_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void watch_log(struct watch *w, unsigned k, enum ev_severity sev, const char *fmt, ...) {
    struct ev e;
    memset(&e, 0, sizeof(e));
    e.kind = EV_LOG;
    e.dev = k < BRIDGE_MAX_JOBS ? (uint16_t)k : EV_DEV_NONE;
    e.t_ns = mono_now_ns();
    e.u.text.severity = (uint8_t)sev;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.u.text.text, sizeof(e.u.text.text), fmt, ap);
    va_end(ap);
    watch_push(w, &e);
}

/* The order of the view: ranks first by number, then the other jobs by device. */
static bool watch_before(const struct watch_job *a, const struct watch_job *b) {
    if ((a->rank >= 0) != (b->rank >= 0))
        return a->rank >= 0;
    return a->rank >= 0 ? a->rank < b->rank : a->dev < b->dev;
}

void watch_who(const struct watch_job *j, char *out, size_t n) {
    if (j->rank >= 0)
        snprintf(out, n, "rank %d", j->rank);
    else
        snprintf(out, n, "job %.40s", j->name);
}

/* The view: every job with a run line, open ones and (until another job comes) the last
 * ones that ended, by device; the header's facts from them. */
static void watch_view(struct watch *w) {
    struct run_info *r = &w->src.run;
    w->n_shown = 0;
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS && w->n_shown < RUN_MAX_DEVICES; k++)
        if (w->jobs[k].have_run)
            w->shown[w->n_shown++] = k;
    for (unsigned i = 1; i < w->n_shown; i++) /* insertion sort by rank, then device */
        for (unsigned j = i;
             j > 0 && watch_before(&w->jobs[w->shown[j]], &w->jobs[w->shown[j - 1]]); j--) {
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
        r->devices[i] = (uint16_t)w->shown[i]; /* its events' device: the job's slot */
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
    watch_str(o, "group_id", j->group_id, sizeof(j->group_id));
}

/* A run line's fields for the bridge (o: the line): who the job is and whether it takes
 * commands. */
static void watch_job_extra(struct watch_job *j, json_object *o) {
    json_object *v = NULL;
    j->control = false;
    j->rank = j->local_rank = -1;
    j->world_size = 0;
    watch_str(o, "name", j->name, sizeof(j->name));
    watch_str(o, "host", j->host, sizeof(j->host));
    if (json_object_object_get_ex(o, "control", &v))
        j->control = json_object_get_boolean(v);
    watch_job_rank(j, o);
}

static int watch_enum(const char *name, const char *(*name_of)(unsigned), unsigned count,
                      int dflt) {
    for (unsigned k = 0; name && k < count; k++)
        if (strcmp(name, name_of(k)) == 0)
            return (int)k;
    return dflt;
}

/* The call of job k with id (the newest one for id 0, the id of a bridge without ids). */
static struct watch_call *watch_call_find(struct watch_job *j, uint32_t id) {
    struct watch_call *found = NULL;
    for (unsigned c = 0; c < WATCH_CALLS; c++) {
        struct watch_call *x = &j->calls[c];
        if (x->used && x->id == id && (!found || x->inf.start_ns > found->inf.start_ns))
            found = x;
    }
    return found;
}

/* A free slot for a call (the oldest goes when every one is used: its end will not come). */
static struct watch_call *watch_call_slot(struct watch_job *j) {
    struct watch_call *oldest = &j->calls[0];
    for (unsigned c = 0; c < WATCH_CALLS; c++) {
        if (!j->calls[c].used)
            return &j->calls[c];
        if (j->calls[c].inf.start_ns < oldest->inf.start_ns)
            oldest = &j->calls[c];
    }
    return oldest;
}

/* A "call" line (o): the job enters a call that may block (end: it left it). */
static void watch_call(struct watch *w, unsigned k, json_object *o) {
    struct watch_job *j = &w->jobs[k];
    json_object *v = NULL;
    bool end = json_object_object_get_ex(o, "end", &v) && json_object_get_boolean(v);
    uint32_t id = (uint32_t)watch_int(o, "id", 0, INT32_MAX, 0);
    if (end) {
        struct watch_call *c = watch_call_find(j, id);
        if (c) {
            watch_hang_left(w, k, c, mono_now_ns(), false);
            if (c->coll >= 0 && c->group == 0 && c->cseq > j->cseq_done)
                j->cseq_done = c->cseq;
            c->used = false;
        }
        return;
    }
    struct watch_call *c = watch_call_slot(j);
    if (c->used) /* the oldest, whose end never came */
        watch_hang_left(w, k, c, mono_now_ns(), false);
    memset(c, 0, sizeof(*c));
    c->used = true;
    c->id = id;
    const char *op = json_object_object_get_ex(o, "op", &v) ? json_object_get_string(v) : "";
    const char *ph = json_object_object_get_ex(o, "phase", &v) ? json_object_get_string(v) : "";
    const char *coll = json_object_object_get_ex(o, "coll", &v) ? json_object_get_string(v) : NULL;
    c->inf.op = (uint8_t)watch_enum(op, ev_sync_op_name, SYNC_OP_COUNT, SYNC_OP_DEVICE);
    c->inf.phase = (uint8_t)watch_enum(ph, ev_phase_name, PHASE_COUNT, PHASE_COUNT);
    c->coll = coll ? watch_enum(coll, ev_coll_op_name, EV_COLL_COUNT, -1) : -1;
    c->group = watch_int(o, "group", 0, INT32_MAX, 0);
    json_object *cs = NULL;
    if (json_object_object_get_ex(o, "cseq", &cs) && json_object_is_type(cs, json_type_int) &&
        json_object_get_int64(cs) > 0)
        c->cseq = (uint64_t)json_object_get_int64(cs);
    c->inf.start_ns = json_object_object_get_ex(o, "start_ns", &v)
                          ? (uint64_t)json_object_get_int64(v)
                          : mono_now_ns();
    watch_str(o, "call", c->name, sizeof(c->name));
    c->inf.coll = (uint8_t)(c->coll > 0 ? c->coll : EV_COLL_NONE);
    c->inf.coll_seq = c->cseq;
    if (c->coll >= 0 && c->group == 0 && c->cseq > j->cseq_entered)
        j->cseq_entered = c->cseq;
}

/* A "rank" line (o): the job joined its process group and says who it is there. */
static void watch_rank_line(struct watch *w, unsigned k, json_object *o) {
    struct watch_job *j = &w->jobs[k];
    int was = j->rank;
    watch_job_rank(j, o);
    watch_view(w);
    if (was != j->rank)
        watch_log(w, k, SEV_INFO, "job %s (pid %d) is rank %d of %d (%s)", j->name, (int)j->pid,
                  j->rank, j->world_size, j->group_backend[0] ? j->group_backend : "backend ?");
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

/* A new job (slot fresh) came: the ones that ended go from the view, unless ranks of a group
 * attached before it are still open (the group's view keeps every rank until all have gone). */
static void watch_forget_ended(struct watch *w, unsigned fresh) {
    bool group_open = false; /* a rank attached before the fresh job is still there */
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++)
        group_open |= k != fresh && w->jobs[k].open && w->jobs[k].have_run && w->jobs[k].rank >= 0;
    for (unsigned k = 0; k < BRIDGE_MAX_JOBS; k++)
        if (!w->jobs[k].open && w->jobs[k].have_run && !(group_open && w->jobs[k].rank >= 0))
            w->jobs[k].have_run = false;
}

/* A line of job k the recording parser read into w->item (o: the line). */
static void watch_item(struct watch *w, unsigned k, json_object *o) {
    struct watch_job *j = &w->jobs[k];
    const struct replay_item *it = w->item;
    switch (it->kind) {
    case REPLAY_RUN:
        replay_snap_init(j->snap, &it->run, &it->extra);
        j->snap->snaps[0].pid = (int32_t)j->pid;
        j->dev = it->run.n_devices ? it->run.devices[0] : 0;
        j->snap->snaps[0].device = (int)k; /* the view numbers the jobs by slot */
        j->have_run = true;
        watch_job_extra(j, o);
        watch_forget_ended(w, k);
        watch_view(w);
        char who[48] = "";
        if (j->rank >= 0)
            snprintf(who, sizeof(who), ", rank %d of %d", j->rank, j->world_size);
        watch_log(w, k, SEV_INFO, "job %s (pid %d%s) attached on device %u%s", j->name, (int)j->pid,
                  who, j->dev, j->control ? "" : "; it takes no commands");
        return;
    case REPLAY_EVENT: {
        if (it->ev.kind == EV_SYNC || it->ev.kind == EV_COLLECTIVE) {
            struct watch_call *c = watch_call_find(j, 0); /* a bridge without call ids */
            if (c && (c->coll < 0) == (it->ev.kind == EV_SYNC)) {
                watch_hang_left(w, k, c, mono_now_ns(), false);
                c->used = false;
            }
        }
        if (it->ev.kind == EV_PHASE && it->ev.u.phase.phase == PHASE_OTHER)
            watch_other_name(w, it->phase_name);
        replay_snap_apply(j->snap, it);
        struct ev e; /* the item stays as the line says (a fed source's caller reads it) */
        ev_copy(&e, &it->ev);
        e.dev = (uint16_t)k; /* the view's number for the job */
        watch_push(w, &e);
        return;
    }
    case REPLAY_LAYOUT:
    case REPLAY_SUMMARY:
        replay_snap_apply(j->snap, it);
        if (it->kind == REPLAY_SUMMARY) {
            j->ended = true;
            watch_log(w, k, SEV_INFO, "job %s (pid %d) ended", j->name, (int)j->pid);
        }
        return;
    case REPLAY_NONE:
    case REPLAY_BLANK:
        return;
    }
}

/* Where the value of the line's "type" begins (past its quote), looked for near the start as
 * the bridge writes it first; left: the bytes from there. NULL when not there. */
static const char *watch_type(const char *line, size_t len, size_t *left) {
    const char *t = len > 10 ? memmem(line, len < 48 ? len : 48, "\"type\"", 6) : NULL;
    if (!t)
        return NULL;
    const char *p = t + 6, *end = line + len;
    while (p < end && (*p == ' ' || *p == ':'))
        p++;
    if (p >= end || *p != '"')
        return NULL;
    *left = (size_t)(end - p - 1);
    return p + 1;
}

/* What a job's line is, by its "type" (a shown job's; the lines before its run line all go to
 * the recording parser). */
enum watch_line_type { WATCH_LINE_RECORDING, WATCH_LINE_CALL, WATCH_LINE_RANK, WATCH_LINE_STACK };

static enum watch_line_type watch_line_type(const struct watch_job *j, const char *line,
                                            size_t len) {
    size_t left = 0;
    const char *type = j->have_run ? watch_type(line, len, &left) : NULL;
    if (type && left > 5 && memcmp(type, "call\"", 5) == 0)
        return WATCH_LINE_CALL;
    if (type && left > 5 && memcmp(type, "rank\"", 5) == 0)
        return WATCH_LINE_RANK;
    if (type && left > 6 && memcmp(type, "stack\"", 6) == 0)
        return WATCH_LINE_STACK;
    return WATCH_LINE_RECORDING;
}

/* Job k's line, parsed as JSON once: the bridge's own lines to the calls, the rank or the
 * stacks, and into w->item what the recording parser makes of every line (w->item_rc: its
 * result, replay_parse_line's for the line). 0, or why the line is not understood. */
static int watch_line(struct watch *w, unsigned k, const char *line, size_t len, char *why,
                      size_t n) {
    struct watch_job *j = &w->jobs[k];
    enum watch_line_type type = watch_line_type(j, line, len);
    json_object *o = NULL;
    w->item->kind = REPLAY_NONE;
    if (json_text_blank(line, len)) {
        w->item->kind = REPLAY_BLANK;
        return w->item_rc = 0;
    }
    int rc = w->item_rc = json_text_parse(line, len, &o, why, n);
    if (rc != 0)
        return type == WATCH_LINE_STACK ? 0 : rc; /* a stack that did not come: none is shown */
    char own_why[64]; /* the bridge's own lines are not the recording parser's to refuse */
    bool own = type != WATCH_LINE_RECORDING;
    rc = w->item_rc =
        replay_parse_object(o, w->item, own ? own_why : why, own ? sizeof(own_why) : n);
    switch (type) {
    case WATCH_LINE_CALL:
        watch_call(w, k, o);
        rc = 0;
        break;
    case WATCH_LINE_RANK:
        watch_rank_line(w, k, o);
        rc = 0;
        break;
    case WATCH_LINE_STACK:
        watch_hang_stack(w, k, o);
        rc = 0;
        break;
    case WATCH_LINE_RECORDING:
        if (rc == 0 && (j->have_run || w->item->kind == REPLAY_RUN))
            watch_item(w, k, o);
        else if (rc == 0 && w->item->kind != REPLAY_BLANK)
            rc = -EINVAL, snprintf(why, n, "a line before the run line");
        break;
    }
    json_object_put(o);
    return rc;
}

static void watch_on_line(void *ctx, unsigned k, const char *line, size_t len) {
    struct watch *w = ctx;
    struct watch_job *j = &w->jobs[k];
    char why[256] = "";
    j->lines++;
    int rc = watch_line(w, k, line, len, why, sizeof(why));
    if (rc != 0) {
        w->bad++;
        if (j->bad++ == 0)
            watch_log(w, k, SEV_WARNING,
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
    j->rank = j->local_rank = -1;
    snprintf(j->name, sizeof(j->name), "pid %d", (int)pid);
}

static void watch_on_overlong(void *ctx, unsigned k) {
    struct watch *w = ctx;
    w->bad++;
    if (w->jobs[k].bad++ == 0)
        watch_log(w, k, SEV_WARNING, "job %s: a line longer than %u bytes skipped", w->jobs[k].name,
                  BRIDGE_LINE_MAX);
}

static void watch_on_close(void *ctx, unsigned k) {
    struct watch *w = ctx;
    struct watch_job *j = &w->jobs[k];
    j->open = false;
    j->gone_ns = mono_now_ns();
    if (!j->have_run)
        return;
    struct engine_snap *s = &j->snap->snaps[0];
    const struct watch_call *in = NULL;
    for (unsigned c = 0; c < WATCH_CALLS; c++)
        if (j->calls[c].used && (!in || j->calls[c].inf.start_ns < in->inf.start_ns))
            in = &j->calls[c];
    if (s->state != ENGINE_FINISHED && s->state != ENGINE_FAILED && !j->ended) {
        s->state = ENGINE_FAILED; /* gone mid-run: it did not finish */
        watch_log(w, k, in ? SEV_ERROR : SEV_WARNING,
                  "job %s (pid %d) went away without ending%s%s", j->name, (int)j->pid,
                  in ? " while in " : "", in ? in->name : "");
    }
    for (unsigned c = 0; c < WATCH_CALLS; c++)
        if (j->calls[c].used) {
            watch_hang_left(w, k, &j->calls[c], j->gone_ns, true);
            j->calls[c].used = false;
        }
    watch_view(w);
}

static void watch_on_refused(void *ctx, pid_t pid, uid_t uid) {
    watch_log(ctx, BRIDGE_MAX_JOBS, SEV_WARNING,
              "a process of another user (pid %d, uid %u) tried to attach: refused", (int)pid,
              (unsigned)uid);
}

static int watch_wake_fd(struct source *s) {
    return run_wake_fd(((struct watch *)s->priv)->run);
}

static size_t watch_drain(struct source *s, struct ev *out, size_t max) {
    struct watch *w = s->priv;
    struct bridge_sink sink;
    watch_source_sink(s, &sink);
    if (!w->fed)
        bridge_poll(w->b, &sink, WATCH_POLL_BYTES);
    watch_hang_look(w, mono_now_ns());
    size_t n = 0;
    while (n < max / 2 && w->n > 0) {
        out[n] = w->q[w->head];
        out[n].seq = ++w->out_seq;
        watch_hang_seen(w, &out[n++]);
        w->head = (w->head + 1) % WATCH_QUEUE;
        w->n--;
    }
    size_t m = w->fed ? 0 : run_drain(w->run, out + n, max - n);
    for (size_t i = n; i < n + m; i++) { /* one numbering, the run's gaps kept in it */
        if (out[i].kind != EV_KMSG) {
            if (w->run_seq_seen && out[i].seq > w->run_seq + 1)
                w->out_seq += out[i].seq - w->run_seq - 1;
            w->run_seq = out[i].seq;
            w->run_seq_seen = true;
            out[i].seq = ++w->out_seq;
        }
        watch_hang_seen(w, &out[i]);
    }
    return n + m;
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

/* The oldest call job k has in flight, or NULL. */
static const struct watch_call *watch_oldest_call(const struct watch_job *j) {
    const struct watch_call *in = NULL;
    for (unsigned c = 0; j->open && c < WATCH_CALLS; c++)
        if (j->calls[c].used && (!in || j->calls[c].inf.start_ns < in->inf.start_ns))
            in = &j->calls[c];
    return in;
}

static bool watch_inflight(struct source *s, unsigned dev, struct trace_inflight *out) {
    struct watch *w = s->priv;
    const struct watch_call *c = dev < BRIDGE_MAX_JOBS ? watch_oldest_call(&w->jobs[dev]) : NULL;
    if (c)
        *out = c->inf;
    return c != NULL;
}

static bool watch_done(struct source *s) {
    return ((struct watch *)s->priv)->stopped;
}

static void watch_status_cat(struct watch *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void watch_status_cat(struct watch *w, const char *fmt, ...) {
    size_t len = strlen(w->status);
    if (len + 1 >= sizeof(w->status))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->status + len, sizeof(w->status) - len, fmt, ap);
    va_end(ap);
}

/* "watching 2 jobs; rank 0 (pid 42) waits in allreduce #57 for 35.2 s: rank 1 has not entered
 * it (...)", or how to attach. */
static const char *watch_status(struct source *s) {
    struct watch *w = s->priv;
    unsigned open = 0;
    const struct watch_job *stuck = NULL;
    const struct watch_call *sc = NULL;
    for (unsigned i = 0; i < w->n_shown; i++) {
        const struct watch_job *j = &w->jobs[w->shown[i]];
        const struct watch_call *c = watch_oldest_call(j);
        open += j->open;
        if (c && (!sc || c->inf.start_ns < sc->inf.start_ns))
            stuck = j, sc = c;
    }
    if (!w->n_shown)
        return s->run.idle;
    w->status[0] = '\0';
    watch_status_cat(w, "watching %u job%s", open, open == 1 ? "" : "s");
    uint64_t now = mono_now_ns();
    if (stuck && now > sc->inf.start_ns && now - sc->inf.start_ns >= w->slow_ns / 2) {
        /* a call said once it lasts (the many short ones would make the line flicker) */
        char who[48];
        watch_who(stuck, who, sizeof(who));
        if (sc->coll >= 0 && sc->cseq)
            watch_status_cat(w, "; %s (pid %d) waits in %s #%llu for %.1f s", who, (int)stuck->pid,
                             ev_coll_op_name((unsigned)sc->coll), (unsigned long long)sc->cseq,
                             (double)(now - sc->inf.start_ns) / 1e9);
        else
            watch_status_cat(w, "; %s (pid %d) in %s for %.1f s", who, (int)stuck->pid, sc->name,
                             (double)(now - sc->inf.start_ns) / 1e9);
        if (sc->state != TRACE_WATCH_OK && w->cause[0])
            watch_status_cat(w, ": %s", w->cause);
    }
    for (unsigned k = 0; k < w->n_other; k++)
        watch_status_cat(w, "%s%s", k ? ", " : "; other = ", w->other[k]);
    if (w->dropped)
        watch_status_cat(w, "; %llu events dropped", (unsigned long long)w->dropped);
    if (w->bad)
        watch_status_cat(w, "; %llu lines skipped", (unsigned long long)w->bad);
    return w->status;
}

static const char *watch_note(struct source *s, uint64_t t_ns, uint16_t dev, uint8_t code) {
    return watch_hang_note(s->priv, t_ns, dev, code);
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
    .note = watch_note,
};

int watch_source_create(struct run *run, struct bridge *b, struct source **out) {
    struct watch *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->run = run;
    w->b = b;
    w->o = run_options(run);
    w->slow_ns = w->o ? w->o->sync_slow_ns : 1000000000ull;
    w->hang_ns = w->o ? w->o->sync_timeout_ns : 30000000000ull;
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

int watch_source_create_fed(struct run *run, struct bridge *b, struct source **out) {
    int rc = watch_source_create(run, b, out);
    if (rc == 0)
        ((struct watch *)(*out)->priv)->fed = true;
    return rc;
}

void watch_source_sink(struct source *s, struct bridge_sink *out) {
    *out = (struct bridge_sink){.opened = watch_on_open,
                                .line = watch_on_line,
                                .overlong = watch_on_overlong,
                                .closed = watch_on_close,
                                .ctx = s->priv,
                                .refused = watch_on_refused};
}

int watch_source_line(struct source *s, unsigned job, const char *line, size_t len,
                      const struct replay_item **item) {
    struct watch *w = s->priv;
    watch_on_line(w, job, line, len);
    *item = w->item;
    return w->item_rc;
}

unsigned watch_source_job_dev(struct source *s, unsigned slot) {
    const struct watch *w = s->priv;
    return slot < BRIDGE_MAX_JOBS && w->jobs[slot].have_run ? w->jobs[slot].dev : EV_DEV_NONE;
}

void watch_source_counts(struct source *s, uint64_t *bad_lines, uint64_t *dropped) {
    struct watch *w = s->priv;
    *bad_lines = w->bad;
    *dropped = w->dropped;
}
