/* The snapshots a replay or an attached dashboard shows, one per training device, rebuilt from
 * the lines released so far (the engine is elsewhere, or gone). */
#include "backend/record/replay_snap.h"

#include <stdio.h>
#include <string.h>

static void replay_snap_epoch_seen(struct replay_snap *rs, int32_t epoch) {
    if (epoch <= 0)
        return;
    if (!rs->epochs_known) { /* as the engine counts: first epoch + epochs of this run - 1 */
        int64_t total = (int64_t)epoch + (rs->run_epochs > 0 ? rs->run_epochs : 1) - 1;
        rs->snaps[0].epochs = total > INT32_MAX ? INT32_MAX : (int32_t)total;
        rs->epochs_known = true;
    }
    if (epoch > rs->snaps[0].epoch)
        rs->snaps[0].epoch = epoch;
    if (epoch > rs->snaps[0].epochs)
        rs->snaps[0].epochs = epoch;
}

static void replay_snap_step_seen(struct replay_snap *rs, int64_t step) {
    if (step > rs->snaps[0].step)
        rs->snaps[0].step = step;
}

unsigned replay_snap_rank(const struct replay_snap *rs, unsigned dev) {
    for (unsigned k = 0; k < rs->n_devs; k++)
        if (rs->devs[k] == dev)
            return k;
    return 0;
}

/* The run's progress, losses and state (kept on rank 0) onto every other device's snapshot. */
static void replay_snap_share(struct replay_snap *rs) {
    const struct engine_snap *a = &rs->snaps[0];
    for (unsigned k = 1; k < rs->n_devs; k++) {
        struct engine_snap *b = &rs->snaps[k];
        b->state = a->state;
        b->chunk_bars = a->chunk_bars;
        b->epoch = a->epoch;
        b->epochs = a->epochs;
        b->step = a->step;
        b->steps_per_epoch = a->steps_per_epoch;
        b->total_steps = a->total_steps;
        b->loss = a->loss;
        b->val_loss = a->val_loss;
        b->best_val_loss = a->best_val_loss;
        b->best_epoch = a->best_epoch;
        b->has_loss = a->has_loss;
        b->has_val = a->has_val;
        b->samples_per_s = a->samples_per_s;
    }
}

static void replay_snap_sync(struct replay_snap *rs, unsigned k, const struct ev_sync *s) {
    if (s->op >= SYNC_OP_COUNT)
        return;
    struct trace_hist *h = &rs->d[k].hist[s->op];
    struct trace_sync_summary *o = &rs->snaps[k].sync[s->op];
    trace_hist_add(h, s->dur_ns);
    o->count = h->count;
    o->sum_ns = h->sum_ns;
    o->max_ns = h->max_ns;
    o->p50_ns = trace_hist_percentile(h, 50);
    o->p90_ns = trace_hist_percentile(h, 90);
    o->p99_ns = trace_hist_percentile(h, 99);
}

static void replay_snap_mem(struct replay_snap *rs, unsigned k, const struct ev_mem *m) {
    struct mem_stats *s = &rs->snaps[k].mem;
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
    struct engine_snap *s = &rs->snaps[0];
    replay_snap_epoch_seen(rs, m->epoch);
    replay_snap_step_seen(rs, m->step);
    s->loss = m->loss;
    s->has_loss = true;
    s->samples_per_s = m->samples_per_s;
    if (!m->has_val)
        return;
    if (!s->has_val || m->val_loss < s->best_val_loss) {
        s->best_val_loss = m->val_loss;
        s->best_epoch = m->epoch;
    }
    s->val_loss = m->val_loss;
    s->has_val = true;
    if (m->epoch > 0 && m->step > 0) { /* at an epoch's end, step = epoch * steps per epoch */
        s->steps_per_epoch = m->step / m->epoch;
        int64_t per = s->steps_per_epoch, n = s->epochs; /* saturated: a recording can lie */
        s->total_steps = n > 0 && per > INT64_MAX / n ? INT64_MAX : per * n;
    }
}

static void replay_snap_command(struct replay_snap *rs, const struct ev_command *c) {
    struct engine_snap *s = &rs->snaps[0];
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

/* A device's collective calls: counts, the spread of their mean times, and its step time
 * (as the engine measures it: from one all-reduce flush to the next, over the steps between). */
static void replay_snap_coll(struct replay_snap *rs, unsigned k, uint64_t t_ns,
                             const struct ev_coll *c) {
    if (c->op == EV_COLL_NONE || c->op >= EV_COLL_COUNT || c->calls == 0)
        return;
    struct comm_op_stats *o = &rs->snaps[k].coll[c->op];
    struct trace_hist *h = &rs->d[k].coll[c->op];
    for (uint32_t i = 0; i < c->calls && i < 64; i++) /* each call at the events' mean */
        trace_hist_add(h, c->dur_ns / c->calls);
    o->calls += c->calls;
    o->errors += c->rc != 0;
    o->bytes += c->bytes;
    o->sum_ns += c->dur_ns;
    if (c->max_ns > o->max_ns)
        o->max_ns = c->max_ns;
    o->p50_ns = trace_hist_percentile(h, 50);
    o->p99_ns = trace_hist_percentile(h, 99);
    struct replay_snap_dev *d = &rs->d[k];
    if (c->op != EV_COLL_ALLREDUCE)
        return;
    if (d->last_coll_ns && t_ns > d->last_coll_ns && c->step > d->last_coll_step)
        rs->snaps[k].step_ms =
            (double)(t_ns - d->last_coll_ns) / 1e6 / (double)(c->step - d->last_coll_step);
    d->last_coll_ns = t_ns;
    d->last_coll_step = c->step;
}

void replay_snap_event(struct replay_snap *rs, const struct ev *e) {
    unsigned k = replay_snap_rank(rs, e->dev);
    switch ((enum ev_kind)e->kind) {
    case EV_PHASE:
        rs->snaps[k].phase = (enum ev_phase_id)e->u.phase.phase;
        replay_snap_epoch_seen(rs, e->u.phase.epoch);
        replay_snap_step_seen(rs, e->u.phase.step);
        break;
    case EV_SYNC:
        replay_snap_sync(rs, k, &e->u.sync);
        return;
    case EV_MEM:
        replay_snap_mem(rs, k, &e->u.mem);
        return;
    case EV_METRIC:
        replay_snap_metric(rs, &e->u.metric);
        break;
    case EV_COMMAND:
        replay_snap_command(rs, &e->u.command);
        break;
    case EV_COLLECTIVE:
        replay_snap_coll(rs, k, e->t_ns, &e->u.coll);
        return;
    case EV_ALERT:
    case EV_LOG:
    case EV_KMSG:
    case EV_KIND_COUNT:
        return;
    }
    replay_snap_share(rs);
}

static void replay_snap_summary(struct replay_snap *rs, const struct replay_summary *sum) {
    struct engine_snap *s = &rs->snaps[0];
    s->state = sum->failed ? ENGINE_FAILED : ENGINE_FINISHED;
    for (unsigned k = 0; k < rs->n_devs; k++)
        rs->snaps[k].phase = PHASE_COUNT;
    if (sum->epochs > s->epoch)
        s->epoch = sum->epochs;
    replay_snap_step_seen(rs, sum->steps);
    if (sum->has_val) {
        s->val_loss = sum->val_loss;
        s->best_val_loss = sum->best_val_loss;
        s->has_val = true;
    }
    snprintf(s->checkpoint_path, sizeof(s->checkpoint_path), "%s", sum->checkpoint);
    if (sum->best_checkpoint[0]) {
        snprintf(s->best_path, sizeof(s->best_path), "%s", sum->best_checkpoint);
        s->best_epoch = sum->best_epoch;
    }
    replay_snap_share(rs);
}

void replay_snap_init(struct replay_snap *rs, const struct run_info *run,
                      const struct replay_run_extra *extra) {
    memset(rs, 0, sizeof(*rs));
    rs->run_epochs = extra->epochs;
    rs->n_devs = run->n_devices > RUN_MAX_DEVICES ? RUN_MAX_DEVICES
                 : run->n_devices > 0             ? run->n_devices
                                                  : 1;
    for (unsigned k = 0; k < rs->n_devs; k++) {
        rs->devs[k] = run->n_devices > 0 ? run->devices[k] : 0;
        struct engine_snap *s = &rs->snaps[k];
        s->start_ns = s->t_ns = run->start_ns;
        s->state = ENGINE_RUNNING;
        s->phase = PHASE_COUNT;
        snprintf(s->backend, sizeof(s->backend), "%s", run->backend);
        snprintf(s->dev.name, sizeof(s->dev.name), "%s", run->dev_name);
        snprintf(s->dev.arch, sizeof(s->dev.arch), "%s", run->dev_arch);
        s->chunk_bars = extra->chunk_bars;
        s->epochs = rs->run_epochs;
        s->rank = (uint16_t)k;
        s->n_ranks = (uint16_t)rs->n_devs;
        s->device = rs->devs[k];
        for (unsigned op = 0; op < SYNC_OP_COUNT; op++)
            trace_hist_init(&rs->d[k].hist[op]);
        for (unsigned op = 0; op < EV_COLL_COUNT; op++)
            trace_hist_init(&rs->d[k].coll[op]);
    }
}

void replay_snap_apply(struct replay_snap *rs, const struct replay_item *it) {
    if (it->kind == REPLAY_EVENT)
        replay_snap_event(rs, &it->ev);
    else if (it->kind == REPLAY_LAYOUT)
        rs->snaps[replay_snap_rank(rs, it->dev)].layout = it->layout;
    else if (it->kind == REPLAY_SUMMARY)
        replay_snap_summary(rs, &it->sum);
}
