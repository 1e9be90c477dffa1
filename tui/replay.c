/* The replay source: reads a recording one line ahead of its clock and rebuilds the engine's
 * snapshot from the events it has released. */
#include "tui/replay.h"

#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "tui/replay_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct replay {
    struct ui_source src;
    FILE *f;
    char *line; /* REPLAY_LINE_BYTES + 2 */
    uint64_t lineno;
    int read_errno;             /* a read error (0 = none) */
    struct replay_item pending; /* the next line to release, when has_pending */
    bool has_pending, eof;
    uint64_t last_ns;   /* time of the last line released: where the clock stops at the end */
    char stop_why[320]; /* "stopped at line N: why", or "" */
    char status[360];
    /* the clock: rec = rec_base + (real - real_base) * speed, frozen while paused or stopped */
    uint64_t (*clock)(void *ctx);
    void *clock_ctx;
    uint64_t real_base, rec_base;
    double speed;
    bool paused, stopped;
    /* the snapshot rebuilt from released lines */
    int32_t run_epochs;
    bool epochs_known;
    struct engine_snap snap;
    struct trace_hist hist[SYNC_OP_COUNT];
};

static uint64_t replay_mono(void *ctx) {
    (void)ctx;
    return mono_now_ns();
}

static struct replay *replay_of(struct ui_source *s) {
    return s->priv;
}

static uint64_t replay_rec_now(struct replay *r) {
    if (r->paused || r->stopped)
        return r->rec_base;
    if (r->eof && !r->has_pending && r->last_ns) /* the recording is over: so is its time */
        return r->last_ns;
    uint64_t real = r->clock(r->clock_ctx);
    uint64_t d = real > r->real_base ? real - r->real_base : 0;
    return r->rec_base + (uint64_t)((double)d * r->speed);
}

/* Restart the clock's arithmetic from now (before a change of speed, pause or clock). */
static void replay_rebase(struct replay *r) {
    r->rec_base = replay_rec_now(r);
    r->real_base = r->clock(r->clock_ctx);
}

/* One line into r->line: 1, 0 at the end, or -1 with stop_why set. */
static int replay_read_line(struct replay *r, size_t *len) {
    errno = 0;
    if (!fgets(r->line, REPLAY_LINE_BYTES + 2, r->f)) {
        if (!ferror(r->f))
            return 0;
        r->read_errno = errno ? errno : EIO;
        snprintf(r->stop_why, sizeof(r->stop_why), "stopped at line %llu: %s",
                 (unsigned long long)r->lineno + 1, strerror(r->read_errno));
        return -1;
    }
    r->lineno++;
    *len = strlen(r->line);
    if (*len > REPLAY_LINE_BYTES) {
        snprintf(r->stop_why, sizeof(r->stop_why), "stopped at line %llu: longer than %u bytes",
                 (unsigned long long)r->lineno, REPLAY_LINE_BYTES);
        return -1;
    }
    return 1;
}

/* Read ahead to the next item (blank lines skipped); at the end or a bad line, stop reading. */
static void replay_next(struct replay *r) {
    r->has_pending = false;
    while (!r->eof) {
        size_t len = 0;
        int got = replay_read_line(r, &len);
        if (got <= 0) {
            r->eof = true;
            return;
        }
        char why[256];
        int rc = replay_parse_line(r->line, len, &r->pending, why, sizeof(why));
        if (r->pending.kind == REPLAY_RUN)
            rc = errbuf_set(why, sizeof(why), -EINVAL, "a second run line");
        if (rc != 0) {
            snprintf(r->stop_why, sizeof(r->stop_why), "stopped at line %llu: %s",
                     (unsigned long long)r->lineno, why);
            r->eof = true;
            return;
        }
        if (r->pending.kind != REPLAY_BLANK) {
            r->has_pending = true;
            return;
        }
    }
}

/* ---- the snapshot ---- */

static void replay_epoch_seen(struct replay *r, int32_t epoch) {
    if (epoch <= 0)
        return;
    if (!r->epochs_known) { /* as the engine counts: first epoch + epochs of this run - 1 */
        int64_t total = (int64_t)epoch + (r->run_epochs > 0 ? r->run_epochs : 1) - 1;
        r->snap.epochs = total > INT32_MAX ? INT32_MAX : (int32_t)total;
        r->epochs_known = true;
    }
    if (epoch > r->snap.epoch)
        r->snap.epoch = epoch;
    if (epoch > r->snap.epochs)
        r->snap.epochs = epoch;
}

static void replay_step_seen(struct replay *r, int64_t step) {
    if (step > r->snap.step)
        r->snap.step = step;
}

static void replay_apply_sync(struct replay *r, const struct ev_sync *s) {
    if (s->op >= SYNC_OP_COUNT)
        return;
    struct trace_hist *h = &r->hist[s->op];
    struct trace_sync_summary *o = &r->snap.sync[s->op];
    trace_hist_add(h, s->dur_ns);
    o->count = h->count;
    o->sum_ns = h->sum_ns;
    o->max_ns = h->max_ns;
    o->p50_ns = trace_hist_percentile(h, 50);
    o->p90_ns = trace_hist_percentile(h, 90);
    o->p99_ns = trace_hist_percentile(h, 99);
}

static void replay_apply_mem(struct replay *r, const struct ev_mem *m) {
    struct mem_stats *s = &r->snap.mem;
    s->allocated_bytes = m->allocated_bytes;
    s->reserved_bytes = m->reserved_bytes;
    s->largest_free_bytes = m->largest_free_bytes;
    s->total_free_bytes = m->total_free_bytes;
    s->free_blocks = m->free_blocks;
    s->segments = m->segments;
    s->frag = m->frag;
    if (s->allocated_bytes > s->peak_allocated_bytes)
        s->peak_allocated_bytes = s->allocated_bytes;
    if (s->reserved_bytes > s->peak_reserved_bytes)
        s->peak_reserved_bytes = s->reserved_bytes;
}

static void replay_apply_metric(struct replay *r, const struct ev_metric *m) {
    struct engine_snap *s = &r->snap;
    replay_epoch_seen(r, m->epoch);
    replay_step_seen(r, m->step);
    s->loss = m->loss;
    s->has_loss = true;
    s->samples_per_s = m->samples_per_s;
    if (!m->has_val)
        return;
    if (!s->has_val || m->val_loss < s->best_val_loss)
        s->best_val_loss = m->val_loss;
    s->val_loss = m->val_loss;
    s->has_val = true;
    if (m->epoch > 0 && m->step > 0) { /* at an epoch's end, step = epoch * steps per epoch */
        s->steps_per_epoch = m->step / m->epoch;
        int64_t per = s->steps_per_epoch, n = s->epochs; /* saturated: a recording can lie */
        s->total_steps = n > 0 && per > INT64_MAX / n ? INT64_MAX : per * n;
    }
}

static void replay_apply_command(struct replay *r, const struct ev_command *c) {
    if (c->rc != 0)
        return;
    if (c->cmd == CMD_SET_CHUNK)
        r->snap.chunk_bars = (int)c->arg;
    else if (c->cmd == CMD_PAUSE && r->snap.state == ENGINE_RUNNING)
        r->snap.state = ENGINE_PAUSED;
    else if (c->cmd == CMD_RESUME && r->snap.state == ENGINE_PAUSED)
        r->snap.state = ENGINE_RUNNING;
    else if (c->cmd == CMD_STOP && r->snap.state < ENGINE_STOPPING)
        r->snap.state = ENGINE_STOPPING;
}

static void replay_apply_event(struct replay *r, const struct ev *e) {
    switch ((enum ev_kind)e->kind) {
    case EV_PHASE:
        r->snap.phase = (enum ev_phase_id)e->u.phase.phase;
        replay_epoch_seen(r, e->u.phase.epoch);
        replay_step_seen(r, e->u.phase.step);
        return;
    case EV_SYNC:
        replay_apply_sync(r, &e->u.sync);
        return;
    case EV_MEM:
        replay_apply_mem(r, &e->u.mem);
        return;
    case EV_METRIC:
        replay_apply_metric(r, &e->u.metric);
        return;
    case EV_COMMAND:
        replay_apply_command(r, &e->u.command);
        return;
    case EV_ALERT:
    case EV_LOG:
    case EV_KMSG:
    case EV_KIND_COUNT:
        return;
    }
}

static void replay_apply_summary(struct replay *r, const struct replay_summary *sum) {
    struct engine_snap *s = &r->snap;
    s->state = sum->failed ? ENGINE_FAILED : ENGINE_FINISHED;
    s->phase = PHASE_COUNT;
    if (sum->epochs > s->epoch)
        s->epoch = sum->epochs;
    replay_step_seen(r, sum->steps);
    if (sum->has_val) {
        s->val_loss = sum->val_loss;
        s->best_val_loss = sum->best_val_loss;
        s->has_val = true;
    }
}

static void replay_apply(struct replay *r, const struct replay_item *it) {
    if (it->kind == REPLAY_EVENT)
        replay_apply_event(r, &it->ev);
    else if (it->kind == REPLAY_LAYOUT)
        r->snap.layout = it->layout;
    else if (it->kind == REPLAY_SUMMARY)
        replay_apply_summary(r, &it->sum);
}

/* ---- the source ---- */

static int replay_wake_fd(struct ui_source *s) {
    (void)s;
    return -1;
}

static size_t replay_drain(struct ui_source *s, struct ev *out, size_t max) {
    struct replay *r = replay_of(s);
    uint64_t now = replay_rec_now(r);
    size_t n = 0;
    while (n < max && r->has_pending && !r->stopped && r->pending.t_ns <= now) {
        if (r->pending.kind == REPLAY_EVENT)
            out[n++] = r->pending.ev;
        if (r->pending.t_ns > r->last_ns)
            r->last_ns = r->pending.t_ns;
        replay_apply(r, &r->pending);
        replay_next(r);
    }
    return n;
}

static const struct engine_snap *replay_snap(struct ui_source *s) {
    struct replay *r = replay_of(s);
    r->snap.t_ns = replay_rec_now(r);
    return &r->snap;
}

static uint64_t replay_now_ns(struct ui_source *s) {
    return replay_rec_now(replay_of(s));
}

static bool replay_key(struct ui_source *s, int ch, char *msg, size_t msglen) {
    struct replay *r = replay_of(s);
    if (msglen)
        msg[0] = '\0';
    if (ch != 'p' && ch != '+' && ch != '-')
        return false;
    replay_rebase(r);
    if (ch == 'p') {
        r->paused = !r->paused;
        snprintf(msg, msglen, "replay %s", r->paused ? "paused" : "resumed");
        return true;
    }
    double v = ch == '+' ? r->speed * 2 : r->speed / 2;
    r->speed = v < REPLAY_SPEED_MIN   ? REPLAY_SPEED_MIN
               : v > REPLAY_SPEED_MAX ? REPLAY_SPEED_MAX
                                      : v;
    snprintf(msg, msglen, "replay speed %gx", r->speed);
    return true;
}

static void replay_stop(struct ui_source *s) {
    struct replay *r = replay_of(s);
    replay_rebase(r);
    r->stopped = true;
}

static bool replay_inflight(struct ui_source *s, unsigned dev, struct trace_inflight *out) {
    (void)s;
    (void)dev;
    memset(out, 0, sizeof(*out));
    return false;
}

static bool replay_done(struct ui_source *s) {
    struct replay *r = replay_of(s);
    return r->stopped || (r->eof && !r->has_pending);
}

static const char *replay_status(struct ui_source *s) {
    struct replay *r = replay_of(s);
    if (r->stop_why[0])
        return r->stop_why;
    if (replay_done(s))
        return "replay finished";
    snprintf(r->status, sizeof(r->status), "replay %gx%s", r->speed, r->paused ? " paused" : "");
    return r->status;
}

static void replay_destroy(struct ui_source *s) {
    if (!s)
        return;
    struct replay *r = replay_of(s);
    if (r->f)
        fclose(r->f);
    free(r->line);
    free(r);
}

static const struct ui_source_ops replay_ops = {
    .name = "replay",
    .wake_fd = replay_wake_fd,
    .drain = replay_drain,
    .snap = replay_snap,
    .now_ns = replay_now_ns,
    .key = replay_key,
    .stop = replay_stop,
    .inflight = replay_inflight,
    .done = replay_done,
    .status = replay_status,
    .destroy = replay_destroy,
};

/* The first line must be a run line: it fills src.run and the snapshot's fixed fields. */
static int replay_read_run(struct replay *r, const char *path, char *err, size_t errlen) {
    size_t len = 0;
    int got, prc = 0;
    char why[256];
    while ((got = replay_read_line(r, &len)) > 0) {
        prc = replay_parse_line(r->line, len, &r->pending, why, sizeof(why));
        if (prc != 0 || r->pending.kind != REPLAY_BLANK)
            break;
    }
    if (got < 0 && r->read_errno)
        return errbuf_set(err, errlen, -r->read_errno, "%s: %s", path, strerror(r->read_errno));
    if (got > 0 && prc != 0 && r->pending.kind == REPLAY_RUN)
        return errbuf_set(err, errlen, -EINVAL, "%s: line %llu: %s", path,
                          (unsigned long long)r->lineno, why);
    if (got <= 0 || prc != 0 || r->pending.kind != REPLAY_RUN)
        return errbuf_set(err, errlen, -EINVAL, "%s: not a ringside recording (no run line)", path);
    r->stop_why[0] = '\0';
    return 0;
}

static void replay_init_snap(struct replay *r, const char *path) {
    struct ui_run *run = &r->src.run;
    *run = r->pending.run;
    run->replay = true;
    snprintf(run->origin, sizeof(run->origin), "%s", path);
    r->run_epochs = r->pending.extra.epochs;
    struct engine_snap *s = &r->snap;
    s->start_ns = s->t_ns = run->start_ns;
    s->state = ENGINE_RUNNING;
    s->phase = PHASE_COUNT;
    snprintf(s->backend, sizeof(s->backend), "%s", run->backend);
    snprintf(s->dev.name, sizeof(s->dev.name), "%s", run->dev_name);
    snprintf(s->dev.arch, sizeof(s->dev.arch), "%s", run->dev_arch);
    s->chunk_bars = r->pending.extra.chunk_bars;
    s->epochs = r->run_epochs;
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++)
        trace_hist_init(&r->hist[op]);
}

int replay_open(struct ui_source **out, const char *path, double speed, char *err, size_t errlen) {
    *out = NULL;
    if (!(speed >= REPLAY_SPEED_MIN && speed <= REPLAY_SPEED_MAX))
        return errbuf_set(err, errlen, -EINVAL, "speed %g is outside %g..%g", speed,
                          REPLAY_SPEED_MIN, REPLAY_SPEED_MAX);
    struct replay *r = calloc(1, sizeof(*r));
    if (!r)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    r->src = (struct ui_source){.ops = &replay_ops, .priv = r};
    int rc = -ENOMEM;
    if (!(r->line = malloc(REPLAY_LINE_BYTES + 2))) {
        errbuf_set(err, errlen, rc, "out of memory");
        goto fail;
    }
    r->speed = speed;
    r->clock = replay_mono;
    if (!(r->f = fopen(path, "r"))) {
        int e = errno;
        rc = errbuf_set(err, errlen, -e, "%s: %s", path, strerror(e));
        goto fail;
    }
    if ((rc = replay_read_run(r, path, err, errlen)) != 0)
        goto fail;
    replay_init_snap(r, path);
    replay_next(r);
    r->rec_base = r->has_pending && r->pending.t_ns ? r->pending.t_ns : r->src.run.start_ns;
    r->real_base = r->clock(r->clock_ctx);
    *out = &r->src;
    return 0;
fail:
    replay_destroy(&r->src);
    return rc;
}

void replay_set_clock(struct ui_source *src, uint64_t (*now)(void *ctx), void *ctx) {
    struct replay *r = replay_of(src);
    r->clock = now;
    r->clock_ctx = ctx;
    r->real_base = now(ctx);
}

double replay_speed(const struct ui_source *src) {
    return ((const struct replay *)src->priv)->speed;
}
