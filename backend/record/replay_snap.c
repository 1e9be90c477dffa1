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

/* a * b, saturated (a job can tell any length) */
static int64_t replay_snap_mul(int64_t a, int64_t b) {
    return a > 0 && b > INT64_MAX / a ? INT64_MAX : a * b;
}

/* A job's position as its script counts it (rs.step(epoch, step); a phase carries the last
 * one, epoch 0 and step -1 before the first) into the snapshot's: its epoch 1-based, and its
 * step the steps done in the run where it told its steps per epoch: (epoch - 1) * per + step
 * for a counter within the epoch, the step itself for one that runs on (one past per says
 * which), each + 1 for a counter from 0. Without per, its own counter. */
static void replay_snap_job_seen(struct replay_snap *rs, int32_t epoch, int64_t step) {
    struct engine_snap *s = &rs->snaps[0];
    if (epoch == 0 && step >= 0)
        rs->job_epoch0 = true;
    if (step < 0 || epoch < 0 || (epoch == 0 && !rs->job_epoch0))
        return;
    if (epoch < rs->job_epoch || (epoch == rs->job_epoch && step < rs->job_step))
        return; /* behind what it said already (a phase after its metric) */
    rs->job_epoch = epoch;
    rs->job_step = step;
    rs->job_step0 |= step == 0;
    int64_t per = s->steps_per_epoch, at = step + rs->job_step0; /* steps done, as counted */
    rs->job_global |= per > 0 && at > per;
    int32_t e = epoch + (rs->job_epoch0 && epoch < INT32_MAX);
    s->epoch = e > s->epoch ? e : s->epoch;
    if (s->epochs > 0 && e > s->epochs) /* it runs on past the epochs it told */
        s->epochs = e;
    if (per <= 0) {
        s->step = step;
        return;
    }
    int64_t before = rs->job_global ? 0 : replay_snap_mul(e - 1, per);
    s->step = before > INT64_MAX - at ? INT64_MAX : before + at;
    s->total_steps = replay_snap_mul(s->epochs, per);
}

/* An event's epoch and step: a job's as replay_snap_job_seen reads them, else the largest. */
static void replay_snap_pos(struct replay_snap *rs, int32_t epoch, int64_t step) {
    if (rs->job) {
        replay_snap_job_seen(rs, epoch, step);
        return;
    }
    replay_snap_epoch_seen(rs, epoch);
    replay_snap_step_seen(rs, step);
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
        b->job = a->job;
        b->steps_per_s = a->steps_per_s;
        b->na = (a->na & ~(uint32_t)ENGINE_NA_MEM) | (b->na & ENGINE_NA_MEM); /* its own pool */
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
    rs->snaps[k].na &= ~(uint32_t)ENGINE_NA_MEM;
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

/* A job's rates from a metric line (x: its members; NULL: samples_per_s alone, as a loop of
 * ours writes it). Its samples a second are measured where the line has them and they are not
 * the 0 a bridge sends for "no batch size" (a real 0 comes with steps_per_s 0). */
static void replay_snap_job_rates(struct engine_snap *s, const struct ev_metric *m,
                                  const struct replay_metric_extra *x) {
    bool steps = x && x->has_steps_per_s;
    bool samples = x ? x->has_samples_per_s : true;
    samples = samples && (m->samples_per_s > 0 || (steps && !(x->steps_per_s > 0)));
    s->na = samples ? s->na & ~(uint32_t)ENGINE_NA_SAMPLES : s->na | ENGINE_NA_SAMPLES;
    s->na = steps ? s->na & ~(uint32_t)ENGINE_NA_STEPS : s->na | ENGINE_NA_STEPS;
    s->samples_per_s = samples ? m->samples_per_s : 0;
    s->steps_per_s = steps ? x->steps_per_s : 0;
}

static void replay_snap_metric(struct replay_snap *rs, const struct ev_metric *m,
                               const struct replay_metric_extra *x) {
    struct engine_snap *s = &rs->snaps[0];
    replay_snap_pos(rs, m->epoch, m->step);
    s->loss = m->loss;
    s->has_loss = true;
    s->samples_per_s = m->samples_per_s;
    if (rs->job)
        replay_snap_job_rates(s, m, x);
    if (!m->has_val)
        return;
    if (!s->has_val || m->val_loss < s->best_val_loss) {
        s->best_val_loss = m->val_loss;
        s->best_epoch = m->epoch;
    }
    s->val_loss = m->val_loss;
    s->has_val = true;
    /* at an epoch's end of a loop of ours, step = epoch * steps per epoch (a job tells its own
     * length, or none: never guessed from its counters) */
    if (!rs->job && m->epoch > 0 && m->step > 0) {
        s->steps_per_epoch = m->step / m->epoch;
        int64_t per = s->steps_per_epoch, n = s->epochs; /* saturated: a recording can lie */
        s->total_steps = n > 0 && per > INT64_MAX / n ? INT64_MAX : per * n;
    }
}

static void replay_snap_command(struct replay_snap *rs, const struct ev_command *c) {
    struct engine_snap *s = &rs->snaps[0];
    if (c->rc != 0)
        return;
    if (c->cmd == CMD_SET_CHUNK) {
        s->chunk_bars = (int)c->arg;
        s->na &= ~(uint32_t)ENGINE_NA_CHUNK; /* a job that takes a chunk size has one */
    } else if (c->cmd == CMD_PAUSE && s->state == ENGINE_RUNNING)
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

/* An event, with a metric line's members beyond the event (x: NULL for an event alone). */
static void replay_snap_event_x(struct replay_snap *rs, const struct ev *e,
                                const struct replay_metric_extra *x) {
    unsigned k = replay_snap_rank(rs, e->dev);
    switch ((enum ev_kind)e->kind) {
    case EV_PHASE:
        rs->snaps[k].phase = (enum ev_phase_id)e->u.phase.phase;
        replay_snap_pos(rs, e->u.phase.epoch, e->u.phase.step);
        break;
    case EV_SYNC:
        replay_snap_sync(rs, k, &e->u.sync);
        return;
    case EV_MEM:
        replay_snap_mem(rs, k, &e->u.mem);
        return;
    case EV_METRIC:
        replay_snap_metric(rs, &e->u.metric, x);
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

void replay_snap_event(struct replay_snap *rs, const struct ev *e) {
    replay_snap_event_x(rs, e, NULL);
}

static void replay_snap_summary(struct replay_snap *rs, const struct replay_summary *sum) {
    struct engine_snap *s = &rs->snaps[0];
    s->state = sum->failed ? ENGINE_FAILED : ENGINE_FINISHED;
    for (unsigned k = 0; k < rs->n_devs; k++)
        rs->snaps[k].phase = PHASE_COUNT;
    if (rs->job) {
        replay_snap_job_seen(rs, sum->epochs, sum->steps);
    } else {
        if (sum->epochs > s->epoch)
            s->epoch = sum->epochs;
        replay_snap_step_seen(rs, sum->steps);
    }
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
        if (extra->job) { /* what it tells, and nothing it has not */
            s->job = true;
            s->na = ENGINE_NA_CHUNK | ENGINE_NA_SAMPLES | ENGINE_NA_STEPS | ENGINE_NA_MEM;
            s->chunk_bars = 0;
            s->steps_per_epoch = extra->steps_per_epoch > 0 ? extra->steps_per_epoch : 0;
            s->total_steps = replay_snap_mul(s->epochs, s->steps_per_epoch);
        }
    }
    rs->job = extra->job;
    rs->epochs_known = extra->job; /* a job's epochs are its total, not this invocation's */
    rs->job_epoch = -1;
    rs->job_step = -1;
}

void replay_snap_apply(struct replay_snap *rs, const struct replay_item *it) {
    if (it->kind == REPLAY_EVENT) {
        replay_snap_event_x(rs, &it->ev, it->ev.kind == EV_METRIC ? &it->metric : NULL);
    } else if (it->kind == REPLAY_LAYOUT) {
        struct engine_snap *s = &rs->snaps[replay_snap_rank(rs, it->dev)];
        s->layout = it->layout;
        s->na &= ~(uint32_t)ENGINE_NA_MEM;
    } else if (it->kind == REPLAY_SUMMARY)
        replay_snap_summary(rs, &it->sum);
}
