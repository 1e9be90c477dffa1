/* The snapshot a replay or an attached dashboard shows, rebuilt from the lines released so
 * far (the engine is elsewhere, or gone). */
#include "backend/record/replay_snap.h"

#include <stdio.h>
#include <string.h>

static void replay_snap_epoch_seen(struct replay_snap *rs, int32_t epoch) {
    if (epoch <= 0)
        return;
    if (!rs->epochs_known) { /* as the engine counts: first epoch + epochs of this run - 1 */
        int64_t total = (int64_t)epoch + (rs->run_epochs > 0 ? rs->run_epochs : 1) - 1;
        rs->snap.epochs = total > INT32_MAX ? INT32_MAX : (int32_t)total;
        rs->epochs_known = true;
    }
    if (epoch > rs->snap.epoch)
        rs->snap.epoch = epoch;
    if (epoch > rs->snap.epochs)
        rs->snap.epochs = epoch;
}

static void replay_snap_step_seen(struct replay_snap *rs, int64_t step) {
    if (step > rs->snap.step)
        rs->snap.step = step;
}

static void replay_snap_sync(struct replay_snap *rs, const struct ev_sync *s) {
    if (s->op >= SYNC_OP_COUNT)
        return;
    struct trace_hist *h = &rs->hist[s->op];
    struct trace_sync_summary *o = &rs->snap.sync[s->op];
    trace_hist_add(h, s->dur_ns);
    o->count = h->count;
    o->sum_ns = h->sum_ns;
    o->max_ns = h->max_ns;
    o->p50_ns = trace_hist_percentile(h, 50);
    o->p90_ns = trace_hist_percentile(h, 90);
    o->p99_ns = trace_hist_percentile(h, 99);
}

static void replay_snap_mem(struct replay_snap *rs, const struct ev_mem *m) {
    struct mem_stats *s = &rs->snap.mem;
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

static void replay_snap_metric(struct replay_snap *rs, const struct ev_metric *m) {
    struct engine_snap *s = &rs->snap;
    replay_snap_epoch_seen(rs, m->epoch);
    replay_snap_step_seen(rs, m->step);
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

static void replay_snap_command(struct replay_snap *rs, const struct ev_command *c) {
    struct engine_snap *s = &rs->snap;
    if (c->rc != 0)
        return;
    if (c->cmd == CMD_SET_CHUNK)
        s->chunk_bars = (int)c->arg;
    else if (c->cmd == CMD_PAUSE && s->state == ENGINE_RUNNING)
        s->state = ENGINE_PAUSED;
    else if (c->cmd == CMD_RESUME && s->state == ENGINE_PAUSED)
        s->state = ENGINE_RUNNING;
    else if (c->cmd == CMD_STOP && s->state < ENGINE_STOPPING)
        s->state = ENGINE_STOPPING;
}

void replay_snap_event(struct replay_snap *rs, const struct ev *e) {
    switch ((enum ev_kind)e->kind) {
    case EV_PHASE:
        rs->snap.phase = (enum ev_phase_id)e->u.phase.phase;
        replay_snap_epoch_seen(rs, e->u.phase.epoch);
        replay_snap_step_seen(rs, e->u.phase.step);
        return;
    case EV_SYNC:
        replay_snap_sync(rs, &e->u.sync);
        return;
    case EV_MEM:
        replay_snap_mem(rs, &e->u.mem);
        return;
    case EV_METRIC:
        replay_snap_metric(rs, &e->u.metric);
        return;
    case EV_COMMAND:
        replay_snap_command(rs, &e->u.command);
        return;
    case EV_ALERT:
    case EV_LOG:
    case EV_KMSG:
    case EV_COLLECTIVE:
    case EV_KIND_COUNT:
        return;
    }
}

static void replay_snap_summary(struct replay_snap *rs, const struct replay_summary *sum) {
    struct engine_snap *s = &rs->snap;
    s->state = sum->failed ? ENGINE_FAILED : ENGINE_FINISHED;
    s->phase = PHASE_COUNT;
    if (sum->epochs > s->epoch)
        s->epoch = sum->epochs;
    replay_snap_step_seen(rs, sum->steps);
    if (sum->has_val) {
        s->val_loss = sum->val_loss;
        s->best_val_loss = sum->best_val_loss;
        s->has_val = true;
    }
}

void replay_snap_init(struct replay_snap *rs, const struct run_info *run,
                      const struct replay_run_extra *extra) {
    memset(rs, 0, sizeof(*rs));
    rs->run_epochs = extra->epochs;
    struct engine_snap *s = &rs->snap;
    s->start_ns = s->t_ns = run->start_ns;
    s->state = ENGINE_RUNNING;
    s->phase = PHASE_COUNT;
    snprintf(s->backend, sizeof(s->backend), "%s", run->backend);
    snprintf(s->dev.name, sizeof(s->dev.name), "%s", run->dev_name);
    snprintf(s->dev.arch, sizeof(s->dev.arch), "%s", run->dev_arch);
    s->chunk_bars = extra->chunk_bars;
    s->epochs = rs->run_epochs;
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++)
        trace_hist_init(&rs->hist[op]);
}

void replay_snap_apply(struct replay_snap *rs, const struct replay_item *it) {
    if (it->kind == REPLAY_EVENT)
        replay_snap_event(rs, &it->ev);
    else if (it->kind == REPLAY_LAYOUT)
        rs->snap.layout = it->layout;
    else if (it->kind == REPLAY_SUMMARY)
        replay_snap_summary(rs, &it->sum);
}
