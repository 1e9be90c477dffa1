/* The engine's lifecycle and thread: create (everything that can fail on input), start, the
 * command queue and safe points, snapshots, and joining. */
#include "backend/comm/comm.h"
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/engine/engine_internal.h"
#include "backend/vpoc/vpoc.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ENGINE_CMD_CAP       64
#define ENGINE_PUBLISH_NS    100000000ull /* snapshots at most every 100 ms unless forced */
#define ENGINE_PAUSE_POLL_MS 200

void engine_log(struct engine *e, enum ev_severity sev, const char *fmt, ...) {
    struct ev ev = {.kind = EV_LOG, .dev = EV_DEV_NONE};
    ev.u.text.severity = (uint8_t)sev;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.u.text.text, sizeof(ev.u.text.text), fmt, ap);
    va_end(ap);
    trace_emit(e->trace, &ev);
}

void engine_dev_log(struct engine_dev *d, enum ev_severity sev, const char *fmt, ...) {
    struct ev ev = {.kind = EV_LOG, .dev = (uint16_t)d->c->dev};
    ev.u.text.severity = (uint8_t)sev;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.u.text.text, sizeof(ev.u.text.text), fmt, ap);
    va_end(ap);
    trace_emit(d->e->trace, &ev);
}

/* The steps' own waits and exchanges: frequent, and what the snapshot shows of them is their
 * call in flight, read each frame, so they leave the snapshot's phase as it was. */
static bool engine_phase_in_step(enum ev_phase_id ph) {
    return ph == PHASE_SYNC || ph == PHASE_ALLREDUCE;
}

void engine_set_phase(struct engine_dev *d, enum ev_phase_id ph) {
    trace_set_phase(d->e->trace, d->c->dev, ph);
    if (engine_phase_in_step(ph) || ph == d->s.phase)
        return;
    /* published at once: the phase begun may block (a hung call) before the next publish */
    d->s.phase = ph;
    d->s.phase_start_ns = mono_now_ns();
    d->s.has_phase_start = ph != PHASE_COUNT;
    engine_publish(d, true);
}

void engine_set_steps(struct engine_dev *d, bool in_steps) {
    if (d->s.in_steps == in_steps)
        return;
    d->s.in_steps = in_steps;
    engine_publish(d, true);
}

void engine_phase_done(struct engine_dev *d, enum ev_phase_id ph, uint64_t start_ns, int32_t epoch,
                       int64_t step, int32_t chunk) {
    struct trace_pos pos = {epoch, step, chunk};
    trace_phase_emit(d->e->trace, d->c->dev, ph, start_ns, mono_now_ns(), &pos);
}

void engine_host_hold(struct engine_dev *d, enum ev_phase_id phase) {
    if (!trace_fault_armed(d->e->trace, d->c->dev, TRACE_FAULT_HANG, phase))
        return;
    enum ev_phase_id prev = d->s.phase;
    uint64_t t0 = mono_now_ns();
    engine_set_phase(d, phase);
    compute_sync(d->c, SYNC_OP_DEVICE);
    engine_phase_done(d, phase, t0, d->s.epoch, -1, -1);
    engine_set_phase(d, prev);
}

void engine_leave_mark(struct engine *e) {
    uint64_t none = 0;
    atomic_compare_exchange_strong(&e->leave_ns, &none, mono_now_ns());
}

void engine_fail_first(struct engine *e, unsigned dev, const char *why) {
    engine_leave_mark(e);
    pthread_mutex_lock(&e->mu);
    if (!e->first_err[0])
        snprintf(e->first_err, sizeof(e->first_err), "dev %u: %s", dev, why);
    pthread_mutex_unlock(&e->mu);
}

void engine_emit_mem(struct engine_dev *d) {
    struct mem_stats st;
    mem_pool_stats(d->c->pool, &st);
    struct ev ev = {.kind = EV_MEM, .dev = (uint16_t)d->c->dev};
    ev.u.mem.allocated_bytes = st.allocated_bytes;
    ev.u.mem.reserved_bytes = st.reserved_bytes;
    ev.u.mem.largest_free_bytes = st.largest_free_bytes;
    ev.u.mem.total_free_bytes = st.total_free_bytes;
    ev.u.mem.free_blocks = st.free_blocks;
    ev.u.mem.segments = st.segments;
    ev.u.mem.frag = st.frag;
    trace_emit(d->e->trace, &ev);
}

/* The communicator's record of d's calls, into its snapshot. */
static void engine_publish_coll(struct engine_dev *d) {
    struct engine *e = d->e;
    d->s.has_coll_inflight = trace_coll_inflight(e->trace, d->c->dev, &d->s.coll_inflight);
    if (!e->comm)
        return;
    for (unsigned op = EV_COLL_INIT; op < EV_COLL_COUNT; op++)
        comm_stats(e->comm, d->rank, (enum comm_op)op, &d->s.coll[op]);
}

void engine_publish(struct engine_dev *d, bool force) {
    struct engine *e = d->e;
    uint64_t now = mono_now_ns();
    if (!force && now - d->last_publish_ns < ENGINE_PUBLISH_NS)
        return;
    d->last_publish_ns = now;
    d->s.t_ns = now;
    d->s.chunk_bars = atomic_load(&e->chunk_bars);
    d->s.sessions_done = atomic_load(&e->sessions_done);
    mem_pool_stats(d->c->pool, &d->s.mem);
    mem_pool_layout(d->c->pool, &d->s.layout);
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++)
        trace_sync_summary(e->trace, d->c->dev, op, &d->s.sync[op]);
    d->s.has_inflight = trace_inflight(e->trace, d->c->dev, &d->s.inflight);
    engine_publish_coll(d);
    memcpy(snap_write_begin(d->snap), &d->s, sizeof(d->s));
    snap_publish(d->snap);
}

static void engine_set_state(struct engine_dev *d, enum engine_state st) {
    d->s.state = st;
    engine_publish(d, true);
}

void engine_reply(struct engine *e, unsigned dev, const struct ev_command *cmd, int rc,
                  const char *fmt, ...) {
    struct ev ev = {.kind = EV_COMMAND, .dev = (uint16_t)dev};
    ev.u.command = *cmd;
    ev.u.command.rc = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.u.command.text, sizeof(ev.u.command.text), fmt, ap);
    va_end(ap);
    trace_emit(e->trace, &ev);
}

int engine_cleanup(struct engine_dev *d, char *msg, size_t msglen) {
    enum ev_phase_id prev = d->s.phase;
    engine_set_phase(d, PHASE_CLEANUP);
    uint64_t t0 = mono_now_ns();
    int rc = compute_sync(d->c, SYNC_OP_DEVICE);
    uint64_t t1 = mono_now_ns();
    uint64_t freed = rc == 0 ? mem_pool_empty_cache(d->c->pool) : 0;
    uint64_t t2 = mono_now_ns();
    int rc2 = rc == 0 ? compute_sync(d->c, SYNC_OP_DEVICE) : 0;
    uint64_t t3 = mono_now_ns();
    engine_phase_done(d, PHASE_CLEANUP, t0, d->s.epoch, -1, -1);
    engine_set_phase(d, prev);
    engine_emit_mem(d);
    engine_publish(d, true);
    if (rc == 0)
        rc = rc2;
    if (rc != 0)
        return errbuf_set(msg, msglen, rc, "cleanup dev %u failed: synchronize: %s", d->c->dev,
                          d->c->ops->strerror(rc));
    return errbuf_set(msg, msglen, 0,
                      "cleanup dev %u: sync %.3f ms, empty_cache %.3f ms released %llu bytes, "
                      "sync %.3f ms",
                      d->c->dev, (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6,
                      (unsigned long long)freed, (double)(t3 - t2) / 1e6);
}

/* The largest block the device could allocate now, beside the pool's own largest free block:
 * how fragmented device memory is outside and inside the cache. */
void engine_probe(struct engine_dev *d, const struct ev_command *cmd) {
    const struct compute_ops *ops = d->c->ops;
    struct engine *e = d->e;
    unsigned dev = d->c->dev;
    if (!ops->mem_probe) {
        engine_reply(e, dev, cmd, -ENOTSUP,
                     "memory probe: the %s backend has no device memory to probe", ops->name);
        return;
    }
    uint64_t largest = 0;
    int rc = ops->mem_probe(d->c, &largest);
    if (rc != 0) {
        engine_reply(e, dev, cmd, rc, "memory probe failed: %s", ops->strerror(rc));
        return;
    }
    struct mem_stats st;
    mem_pool_stats(d->c->pool, &st);
    ops->mem_info(d->c);
    engine_reply(e, dev, cmd, 0,
                 "memory probe dev %u: largest allocatable block %.1f MiB of %.1f MiB free; pool: "
                 "largest free block %.1f MiB of %.1f MiB reserved",
                 dev, (double)largest / 1048576.0, (double)d->c->info.mem_free_bytes / 1048576.0,
                 (double)st.largest_free_bytes / 1048576.0, (double)st.reserved_bytes / 1048576.0);
}

/* A new chunk size from the next chunk on, in the one wording every front end shows. The
 * result is a set_chunk's with the size set, a step's too: whoever rebuilds the run from its
 * results (a replay, an attached dashboard) learns the size one way. */
static void engine_set_chunk(struct engine *e, const struct ev_command *cmd, int bars) {
    struct ev_command res = *cmd;
    res.cmd = CMD_SET_CHUNK;
    res.arg = bars;
    atomic_store(&e->chunk_bars, bars);
    engine_publish(engine_dev0(e), true);
    if (bars)
        engine_reply(e, EV_DEV_NONE, &res, 0, "VPOC chunk size %d bars from the next chunk", bars);
    else
        engine_reply(e, EV_DEV_NONE, &res, 0,
                     "VPOC chunk size: whole sessions from the next session");
}

/* set_chunk sets a size; chunk_step moves a rung up or down the ladder from the size the
 * engine has now (which an out-of-memory drop may have changed). */
static void engine_chunk_cmd(struct engine *e, const struct ev_command *cmd) {
    if (cmd->cmd == CMD_CHUNK_STEP && cmd->arg != 1 && cmd->arg != -1)
        engine_reply(e, EV_DEV_NONE, cmd, -EINVAL, "chunk step %lld is not 1 or -1",
                     (long long)cmd->arg);
    else if (cmd->cmd == CMD_CHUNK_STEP)
        engine_set_chunk(e, cmd, vpoc_chunk_step(atomic_load(&e->chunk_bars), (int)cmd->arg));
    else if (cmd->arg < 0 || cmd->arg > VPOC_CHUNK_MAX)
        engine_reply(e, EV_DEV_NONE, cmd, -EINVAL, "chunk size %lld is not in 0..%d",
                     (long long)cmd->arg, VPOC_CHUNK_MAX);
    else
        engine_set_chunk(e, cmd, (int)cmd->arg);
}

/* A cleanup on every device, each answering for itself (several devices: at a control point,
 * where every device does its own). */
static void engine_cleanup_reply(struct engine_dev *d, const struct ev_command *cmd) {
    char msg[EV_TEXT_BYTES];
    int rc = engine_cleanup(d, msg, sizeof(msg));
    engine_reply(d->e, d->c->dev, cmd, rc, "%s", msg);
    if (atomic_fetch_sub(&d->e->cleanup_left, 1) == 1)
        atomic_store(&d->e->cleanup_busy, false);
}

static void engine_set_paused(struct engine *e, bool paused) {
    pthread_mutex_lock(&e->mu);
    e->paused = paused;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Rank 0 applies what it can now; with several devices in training, cleanup, probe and pause
 * wait for the next control point, where every device does them at the same step. */
static void engine_apply(struct engine *e, const struct ev_command *cmd, bool group) {
    struct engine_dev *d = engine_dev0(e);
    switch ((enum ev_cmd_id)cmd->cmd) {
    case CMD_SET_CHUNK:
    case CMD_CHUNK_STEP:
        engine_chunk_cmd(e, cmd);
        return;
    case CMD_CLEANUP:
        if (group)
            e->want_cleanup = true;
        else
            engine_cleanup_reply(d, cmd);
        return;
    case CMD_PROBE:
        if (group)
            e->want_probe = true;
        else
            engine_probe(d, cmd);
        return;
    case CMD_PAUSE:
        if (group)
            e->want_pause = true;
        else
            engine_set_paused(e, true);
        engine_reply(e, EV_DEV_NONE, cmd, 0, group ? "pausing at the next step" : "paused");
        return;
    case CMD_RESUME:
        e->want_pause = false;
        engine_set_paused(e, false);
        engine_reply(e, EV_DEV_NONE, cmd, 0, "resumed");
        return;
    case CMD_STOP:
        atomic_store(&e->stop_requested, true);
        engine_leave_mark(e);
        e->want_pause = false;
        engine_set_paused(e, false);
        engine_reply(e, EV_DEV_NONE, cmd, 0,
                     "stopping: finishing the step and writing a checkpoint");
        return;
    case CMD_COUNT:
        break;
    }
    engine_reply(e, EV_DEV_NONE, cmd, -EINVAL, "unknown command %u", cmd->cmd);
}

/* Rank 0: apply the queued commands (group: several devices training in step). */
void engine_drain_commands(struct engine *e, bool group) {
    struct ev cmds[ENGINE_CMD_CAP];
    size_t n = evring_drain(e->cmds, cmds, ENGINE_CMD_CAP);
    for (size_t i = 0; i < n; i++)
        engine_apply(e, &cmds[i].u.command, group);
}

/* Rank 0 while paused: answer commands until a resume or a stop. */
static void engine_pause_loop(struct engine_dev *d, bool group) {
    struct engine *e = d->e;
    while (e->paused && !atomic_load(&e->stop_requested) && !atomic_load(&e->quit)) {
        struct pollfd pf = {evring_wake_fd(e->cmds), POLLIN, 0};
        poll(&pf, 1, ENGINE_PAUSE_POLL_MS);
        engine_drain_commands(e, group);
        engine_publish(d, false);
    }
}

/* Other ranks: wait while rank 0 holds the run paused. */
static void engine_pause_wait(struct engine *e) {
    pthread_mutex_lock(&e->mu);
    while (e->paused && !atomic_load(&e->quit))
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

/* The paused phase around whatever keeps d waiting. */
static void engine_paused(struct engine_dev *d, bool group) {
    struct engine *e = d->e;
    enum ev_phase_id prev = d->s.phase;
    uint64_t t0 = mono_now_ns();
    engine_set_phase(d, PHASE_PAUSED);
    engine_set_state(d, ENGINE_PAUSED);
    if (d->rank == 0)
        engine_pause_loop(d, group);
    else
        engine_pause_wait(e);
    engine_phase_done(d, PHASE_PAUSED, t0, d->s.epoch, -1, -1);
    engine_set_phase(d, prev);
    engine_set_state(d, ENGINE_RUNNING);
}

bool engine_safe_point(struct engine_dev *d) {
    struct engine *e = d->e;
    if (d->rank == 0)
        engine_drain_commands(e, false);
    pthread_mutex_lock(&e->mu);
    bool paused = e->paused;
    pthread_mutex_unlock(&e->mu);
    if (paused && !atomic_load(&e->stop_requested))
        engine_paused(d, false);
    engine_publish(d, false);
    return atomic_load(&e->stop_requested);
}

bool engine_control(struct engine_dev *d, char *err, size_t errlen, int *rc) {
    struct engine *e = d->e;
    *rc = 0;
    if (e->n_dev == 1)
        return engine_safe_point(d);
    for (;;) { /* rank 0 proposes, every device learns the same decision from the exchange */
        double v[4] = {0, 0, 0, 0};
        if (d->rank == 0) {
            engine_drain_commands(e, true);
            v[0] = atomic_load(&e->stop_requested);
            v[1] = e->want_pause && !v[0];
            v[2] = e->want_cleanup;
            v[3] = e->want_probe;
            e->want_cleanup = e->want_probe = e->want_pause = false;
            if (v[1])
                engine_set_paused(e, true); /* before the exchange: the others wait on it */
            if (v[2])
                atomic_store(&e->cleanup_left, (int)e->n_dev);
        }
        if ((*rc = engine_exchange(d, v, 4, err, errlen)) != 0)
            return true;
        if (v[2] > 0) {
            struct ev_command cmd = {.cmd = CMD_CLEANUP};
            engine_cleanup_reply(d, &cmd);
        }
        if (v[3] > 0) {
            struct ev_command cmd = {.cmd = CMD_PROBE};
            engine_probe(d, &cmd);
        }
        if (v[0] > 0) {
            atomic_store(&e->stop_requested, true);
            engine_leave_mark(e);
        }
        if (v[0] > 0 || v[1] == 0) {
            engine_publish(d, false);
            return v[0] > 0;
        }
        engine_paused(d, true); /* then decide again: what came during the pause, for all */
    }
}

void engine_command(struct engine *e, enum ev_cmd_id cmd, int64_t arg) {
    struct ev ev = {.t_ns = mono_now_ns(), .kind = EV_COMMAND, .dev = EV_DEV_NONE};
    ev.u.command.cmd = (uint8_t)cmd;
    ev.u.command.arg = arg;
    if (cmd == CMD_CLEANUP && atomic_exchange(&e->cleanup_busy, true)) { /* never two at once */
        engine_reply(e, EV_DEV_NONE, &ev.u.command, -EBUSY,
                     "refused: a safe cleanup is already queued or running");
        return;
    }
    if (cmd == CMD_CLEANUP)
        atomic_store(&e->cleanup_left, 1);
    evring_push(e->cmds, &ev);
}

/* Every device's safe cleanup before training, each reported. */
static int engine_pre_cleanup(struct engine_dev *d, char *err, size_t errlen) {
    char msg[EV_TEXT_BYTES];
    if (d->rank == 0)
        engine_log(d->e, SEV_INFO, "pre-training safe cleanup");
    int rc = engine_cleanup(d, msg, sizeof(msg));
    engine_dev_log(d, rc == 0 ? SEV_INFO : SEV_ERROR, "%s", msg);
    if (rc != 0)
        snprintf(err, errlen, "%s", msg);
    return rc;
}

/* Several devices: agree on whether to go on (rank 0's stop, anyone's failure). A failed
 * exchange is this device's error. */
int engine_agree(struct engine_dev *d, int rc, bool *stop, char *err, size_t errlen) {
    if (d->e->n_dev == 1) {
        *stop = atomic_load(&d->e->stop_requested);
        return rc;
    }
    double v[2] = {d->rank == 0 ? (double)atomic_load(&d->e->stop_requested) : 0, rc != 0};
    char why[512];
    int xrc = engine_exchange(d, v, 2, why, sizeof(why));
    if (xrc != 0 && rc == 0)
        snprintf(err, errlen, "%s", why);
    if (xrc != 0)
        return rc ? rc : xrc;
    if (v[0] > 0) {
        atomic_store(&d->e->stop_requested, true);
        engine_leave_mark(d->e);
    }
    *stop = v[0] > 0;
    if (rc == 0 && v[1] > 0)
        return errbuf_set(err, errlen, -ECANCELED, "another device failed");
    return rc;
}

/* One device's whole run: join the group, its share of VPOC, features (rank 0), safe
 * cleanup, training, and leaving the group. */
static int engine_dev_run(struct engine_dev *d, char *err, size_t errlen) {
    struct engine *e = d->e;
    bool stop = false;
    if (d->rank == 0) /* the data was read before the run started: its phase ends here */
        engine_host_hold(d, PHASE_LOAD);
    int rc = e->n_dev > 1 ? engine_group_init(d, err, errlen) : 0;
    if (rc == 0)
        rc = engine_vpoc_all(d, err, errlen);
    rc = engine_agree(d, rc, &stop, err, errlen);
    if (rc == 0 && !stop && d->rank == 0)
        rc = engine_features(e, err, errlen);
    rc = engine_agree(d, rc, &stop, err, errlen);
    d->s.train_rows = e->split;
    d->s.val_rows = e->n_rows - e->split;
    if (rc == 0 && e->conf.pre_cleanup && !stop)
        rc = engine_pre_cleanup(d, err, errlen);
    rc = engine_agree(d, rc, &stop, err, errlen);
    if (rc == 0 && !stop)
        rc = engine_train(d, err, errlen);
    return rc;
}

/* The end of one device's run: its failure remembered, the group aborted so no device waits
 * for it, and the group left. */
static void engine_dev_end(struct engine_dev *d, int rc, char *err) {
    struct engine *e = d->e;
    engine_leave_mark(e); /* from here on, the way out is under the stop deadline */
    if (!d->dropped)      /* a dropped device is last seen where it left */
        engine_set_phase(d, PHASE_COUNT);
    if (rc != 0 && !err[0]) /* a path that gave no reason still says what the backend calls rc */
        snprintf(err, 512, "%s (error %d on %s)", d->c->ops->strerror(rc), rc, d->c->ops->name);
    if (rc != 0 && rc != -ECANCELED)
        engine_fail_first(e, d->c->dev, err);
    if (rc != 0 && e->n_dev > 1)
        engine_dev_log(d, SEV_ERROR, "dev %u failed: %s", d->c->dev, err);
    if (rc != 0 && e->comm && !d->dropped) /* no device waits for this one */
        comm_abort(e->comm);
    if (e->comm && !d->dropped && rc == 0 && !comm_failed(e->comm))
        engine_group_barrier(d);
    if (e->comm && !d->dropped) /* a dropped one left without a word */
        engine_group_teardown(d);
    trace_set_left(e->trace, d->c->dev);
    engine_emit_mem(d);
}

/* Ranks past 0: their own thread. */
static void *engine_dev_main(void *arg) {
    struct engine_dev *d = arg;
    engine_set_state(d, ENGINE_RUNNING);
    d->err[0] = '\0';
    d->rc = engine_dev_run(d, d->err, sizeof(d->err));
    engine_dev_end(d, d->rc, d->err);
    engine_set_state(d, d->rc == 0 ? ENGINE_FINISHED : ENGINE_FAILED);
    return NULL;
}

/* The training thread (rank 0): the other ranks' threads, its own run, then FINISHED or
 * FAILED for the whole run. */
static void *engine_main(void *arg) {
    struct engine *e = arg;
    struct engine_dev *d = engine_dev0(e);
    char err[512] = "";
    uint64_t t0 = mono_now_ns();
    engine_set_state(d, ENGINE_RUNNING);
    int rc = 0;
    for (unsigned k = 1; k < e->n_dev && rc == 0; k++) {
        rc = -pthread_create(&e->dev[k]->thread, NULL, engine_dev_main, e->dev[k]);
        if (rc == 0)
            e->dev[k]->started = true;
        else
            errbuf_set(err, sizeof(err), rc, "cannot start the worker of dev %u: %s",
                       e->dev[k]->c->dev, strerror(-rc));
    }
    if (rc == 0)
        rc = engine_dev_run(d, err, sizeof(err));
    engine_dev_end(d, rc, err);
    for (unsigned k = 1; k < e->n_dev; k++)
        if (e->dev[k]->started) {
            pthread_join(e->dev[k]->thread, NULL);
            e->dev[k]->started = false;
            if (e->dev[k]->rc != 0 && rc == 0)
                rc = e->dev[k]->rc;
        }
    e->res.elapsed_s = (double)(mono_now_ns() - t0) / 1e9;
    e->res.stopped = atomic_load(&e->stop_requested);
    if (rc != 0) {
        pthread_mutex_lock(&e->mu);
        if (e->first_err[0] && e->n_dev > 1) /* the root cause, not a device that was told */
            snprintf(err, sizeof(err), "%s", e->first_err);
        pthread_mutex_unlock(&e->mu);
        e->res.state = ENGINE_FAILED;
        e->res.steps = d->s.step;
        snprintf(e->res.error, sizeof(e->res.error), "%s", err);
        struct ev ev = {.kind = EV_ALERT, .dev = (uint16_t)d->c->dev};
        ev.u.text.severity = SEV_ERROR;
        snprintf(ev.u.text.text, sizeof(ev.u.text.text), "training failed: %s", err);
        trace_emit(e->trace, &ev);
    } else {
        e->res.state = ENGINE_FINISHED;
    }
    engine_set_state(d, e->res.state);
    atomic_store(&e->done, true);
    return NULL;
}

/* Arm the rehearsal faults: each on its device, or on every training device. */
static void engine_arm_faults(struct engine *e) {
    for (int k = 0; k < e->conf.n_inject; k++) {
        const struct trace_inject *in = &e->conf.inject[k];
        char spec[64];
        for (unsigned r = 0; r < e->n_dev; r++)
            if (in->dev < 0 || (unsigned)in->dev == e->dev[r]->c->dev)
                trace_add_inject(e->trace, e->dev[r]->c->dev, in);
        trace_inject_format(in, spec, sizeof(spec));
        engine_log(e, SEV_WARNING, "fault injection armed: %s", spec);
    }
}

/* The devices to train on, checked: distinct, and a fault's device among them. */
static int engine_device_list(struct engine *e, char *err, size_t errlen) {
    struct engine_conf *c = &e->conf;
    if (c->n_devices == ENGINE_ALL_DEVICES) { /* every GPU the runtime sees */
        const char *name = strcmp(c->backend, "auto") == 0 ? compute_table[0]->name : c->backend;
        int n = 0, rc = strcmp(name, "cpu") == 0
                            ? errbuf_set(err, errlen, -EINVAL,
                                         "--devices all: the cpu backend simulates devices; "
                                         "name them (e.g. --devices 0,1,2,3)")
                            : compute_device_count(name, &n, err, errlen);
        if (rc != 0)
            return rc == -ENOENT ? -EINVAL : rc;
        if (n > ENGINE_MAX_DEVICES)
            n = ENGINE_MAX_DEVICES;
        for (int k = 0; k < n; k++)
            c->devices[k] = k;
        c->n_devices = n;
        if (n == 0)
            return errbuf_set(err, errlen, -EINVAL, "--devices all: %s sees no device", name);
    }
    if (c->n_devices <= 0) {
        e->n_dev = 1;
    } else {
        e->n_dev = (unsigned)c->n_devices;
    }
    for (int k = 0; k < c->n_inject; k++) {
        bool found = c->inject[k].dev < 0;
        for (unsigned i = 0; i < e->n_dev && !found; i++)
            found = (c->n_devices > 0 ? c->devices[i] : c->device) == c->inject[k].dev;
        char spec[64];
        trace_inject_format(&c->inject[k], spec, sizeof(spec));
        if (!found)
            return errbuf_set(err, errlen, -EINVAL, "--inject %s: device %d does not train", spec,
                              c->inject[k].dev);
        if (c->inject[k].kind == TRACE_FAULT_DROP && e->n_dev < 2)
            return errbuf_set(err, errlen, -EINVAL,
                              "--inject %s: a device can leave only a run of several", spec);
    }
    return 0;
}

/* What --alloc-conf asks for that cannot act on this device, said once rather than ignored. */
static void engine_alloc_notes(struct engine *e, const struct compute *c) {
    const struct mem_conf *a = &e->conf.alloc;
    struct mem_stats st;
    mem_pool_stats(c->pool, &st);
    if (a->expandable_segments && !mem_pool_expandable(c->pool))
        engine_log(e, SEV_WARNING,
                   "alloc-conf: expandable_segments: the %s backend cannot map device memory "
                   "piecewise here; segments stay fixed",
                   c->ops->name);
    if (a->memory_fraction > 0.0 && !st.limit_bytes)
        engine_log(e, SEV_WARNING,
                   "alloc-conf: per_process_memory_fraction: the device's memory is not known; "
                   "no limit");
    else if (a->gc_threshold > 0.0 && !st.limit_bytes)
        engine_log(e, SEV_WARNING,
                   "alloc-conf: garbage_collection_threshold acts only under a memory limit, as "
                   "in PyTorch: add per_process_memory_fraction:F");
    if (st.limit_bytes)
        engine_log(e, SEV_INFO, "memory pool limit %.0f MiB (per_process_memory_fraction %g)",
                   (double)st.limit_bytes / 1048576.0, a->memory_fraction);
}

static int engine_open_dev(struct engine *e, unsigned rank, char *err, size_t errlen) {
    struct engine_dev *d = calloc(1, sizeof(*d));
    if (!d)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    e->dev[rank] = d;
    d->e = e;
    d->rank = (unsigned)rank;
    d->s.start_ns = mono_now_ns();
    d->s.phase = PHASE_COUNT;
    d->s.epochs = e->conf.epochs;
    d->s.rank = (uint16_t)rank;
    d->s.n_ranks = (uint16_t)e->n_dev;
    int dev = e->conf.n_devices > 0 ? e->conf.devices[rank] : e->conf.device;
    d->s.device = (unsigned)dev;
    int rc = snap_create(&d->snap, sizeof(struct engine_snap));
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "out of memory");
    struct compute_conf cc = {
        .device = dev, .threads = e->conf.threads, .alloc = e->conf.alloc, .trace = e->trace};
    char notice[512];
    /* every device takes the backend the first one got: one "auto" fallback, said once */
    const char *backend = rank == 0 ? e->conf.backend : engine_dev0(e)->c->ops->name;
    rc = compute_open(backend, &cc, &d->c, notice, sizeof(notice), err, errlen);
    if (rc != 0)
        return rc;
    if (notice[0] && rank == 0)
        engine_log(e, SEV_WARNING, "%s", notice);
    if (rank == 0)
        engine_alloc_notes(e, d->c);
    snprintf(d->s.backend, sizeof(d->s.backend), "%s", d->c->ops->name);
    d->s.dev = d->c->info;
    return 0;
}

static int engine_open_backend(struct engine *e, char *err, size_t errlen) {
    int rc = engine_device_list(e, err, errlen);
    if (rc != 0)
        return rc;
    int top = e->conf.device;
    for (int i = 0; i < e->conf.n_devices; i++)
        top = e->conf.devices[i] > top ? e->conf.devices[i] : top;
    if ((rc = trace_create(&e->trace, e->events, (unsigned)top + 1)) != 0)
        return errbuf_set(err, errlen, rc, "cannot create the tracer: %s", strerror(-rc));
    for (unsigned r = 0; r < e->n_dev; r++)
        if ((rc = engine_open_dev(e, r, err, errlen)) != 0)
            return rc;
    if (e->n_dev > 1 && (rc = engine_group_open(e, err, errlen)) != 0)
        return rc;
    engine_arm_faults(e);
    return 0;
}

/* A crash mid-write leaves "<name>.rsmodel.tmp.<pid>" (or the metadata's) beside the
 * checkpoint: remove those whose writer is gone, saying so. */
static void engine_sweep_stale(struct engine *e) {
    char prefix[ENGINE_PATH_MAX], err[256];
    static const char *const suffixes[] = {".rsmodel", "_metadata.json", ".safetensors"};
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
        snprintf(prefix, sizeof(prefix), "%s%s", e->conf.name, suffixes[k]);
        int n = afile_sweep_stale(e->conf.output_dir, prefix, err, sizeof(err));
        if (n > 0)
            engine_log(e, SEV_INFO, "removed %d stale %s.tmp.* file%s (a write cut short)", n,
                       prefix, n == 1 ? "" : "s");
    }
}

/* The checkpoint's files are replaced by rename, so a link, a FIFO or a file planted at their
 * paths is replaced and never written through; a directory there cannot be, and would fail
 * every checkpoint of the run: refused now, before any work. */
static int engine_check_ckpt_paths(const struct engine *e, char *err, size_t errlen) {
    static const char *const suffixes[] = {".rsmodel", "_metadata.json", ".safetensors",
                                           "_best.rsmodel"};
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
        char path[ENGINE_PATH_MAX + 160];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s%s", e->conf.output_dir, e->conf.name, suffixes[k]);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return errbuf_set(err, errlen, -EISDIR,
                              "%s: a directory is there, not a regular file: left as it is (the "
                              "checkpoint goes there)",
                              path);
    }
    return 0;
}

/* An output directory anyone can write without the sticky bit lets them replace (rename over)
 * its checkpoints: said loudly, once. */
static void engine_check_output_dir(struct engine *e) {
    struct stat st;
    if (stat(e->conf.output_dir, &st) == 0 && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
        engine_log(e, SEV_WARNING,
                   "%s is writable by every user and has no sticky bit: anyone can replace its "
                   "checkpoints; train into a directory of your own (--output DIR)",
                   e->conf.output_dir);
}

int engine_create(struct engine **out, const struct engine_conf *conf, struct evring *events,
                  char *err, size_t errlen) {
    int rc = engine_conf_validate(conf, err, errlen);
    if (rc != 0)
        return rc;
    struct engine *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->conf = *conf;
    e->events = events;
    atomic_init(&e->chunk_bars, conf->chunk_bars);
    e->vpoc_logged_chunk = -1;
    e->start_wall_ns = mono_wall_ns();
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    data_series_init(&e->ds);
    rc = evring_create(&e->cmds, ENGINE_CMD_CAP);
    if (rc != 0) {
        errbuf_set(err, errlen, rc, "out of memory");
        goto fail;
    }
    if ((rc = engine_open_backend(e, err, errlen)) != 0)
        goto fail;
    if ((rc = engine_data_load(e, err, errlen)) != 0)
        goto fail;
    if ((rc = engine_resume_load(e, err, errlen)) != 0)
        goto fail;
    /* checkpoints are written after every epoch: a directory that cannot exist fails now */
    if ((rc = afile_mkdirs(e->conf.output_dir, err, errlen)) != 0 ||
        (rc = afile_probe_dir(e->conf.output_dir, err, errlen)) != 0 ||
        (rc = engine_check_ckpt_paths(e, err, errlen)) != 0) {
        rc = -EINVAL;
        goto fail;
    }
    engine_sweep_stale(e);
    engine_check_output_dir(e);
    for (unsigned r = 0; r < e->n_dev; r++)
        engine_publish(e->dev[r], true);
    *out = e;
    return 0;
fail:
    engine_destroy(e);
    return rc;
}

int engine_start(struct engine *e) {
    int rc = engine_group_watch_start(e);
    if (rc != 0)
        return rc;
    e->watching = true;
    rc = pthread_create(&e->thread, NULL, engine_main, e);
    if (rc != 0)
        return -rc;
    e->started = true;
    return 0;
}

const char *engine_data_said(const struct engine *e) {
    return e->data_said;
}

const struct engine_snap *engine_snap_read(struct engine *e, bool *fresh) {
    return snap_read(engine_dev0(e)->snap, fresh);
}

const struct engine_snap *engine_snap_read_dev(struct engine *e, unsigned k, bool *fresh) {
    return k < e->n_dev ? snap_read(e->dev[k]->snap, fresh) : NULL;
}

unsigned engine_devices(const struct engine *e, unsigned *out) {
    for (unsigned k = 0; k < e->n_dev; k++)
        out[k] = e->dev[k]->c->dev;
    return e->n_dev;
}

bool engine_done(struct engine *e) {
    return atomic_load(&e->done);
}

uint64_t engine_leaving_ns(struct engine *e) {
    return atomic_load(&e->leave_ns);
}

void engine_abort(struct engine *e) {
    engine_leave_mark(e);
    atomic_store(&e->quit, true);
    if (e->comm)
        comm_abort(e->comm);
    engine_set_paused(e, false);
}

int engine_join(struct engine *e, struct engine_result *res) {
    if (e->started) {
        int rc = pthread_join(e->thread, NULL);
        if (rc != 0)
            return -rc;
        e->started = false;
    }
    if (res)
        *res = e->res;
    return 0;
}

struct trace *engine_trace(struct engine *e) {
    return e->trace;
}

void engine_clock_anchor(const struct engine *e, uint64_t *wall_ns, uint64_t *mono_ns) {
    *wall_ns = e->start_wall_ns;
    *mono_ns = engine_dev0(e)->s.start_ns;
}

void engine_destroy(struct engine *e) {
    if (!e)
        return;
    if (e->started) {
        engine_command(e, CMD_STOP, 0);
        atomic_store(&e->quit, true);
        engine_set_paused(e, false);
        pthread_join(e->thread, NULL);
    }
    if (e->watching)
        engine_group_watch_stop(e);
    bool left = false; /* a device left work on its stream that waits for the others */
    for (unsigned r = 0; r < ENGINE_MAX_DEVICES; r++)
        left |= e->dev[r] && e->dev[r]->dropped;
    if (e->comm && (left || e->res.state == ENGINE_FAILED))
        comm_abort(e->comm); /* so that work ends now */
    for (unsigned r = 0; r < ENGINE_MAX_DEVICES; r++) {
        struct engine_dev *d = e->dev[r];
        if (!d)
            continue;
        if (d->c && d->model) /* nothing may still run on what is freed */
            compute_sync(d->c, SYNC_OP_STREAM);
        if (d->c)
            engine_train_free(d);
        if (d->c)
            compute_vpoc_set_destroy(d->c, d->vset);
        compute_close(d->c);
        snap_destroy(d->snap);
        free(d);
    }
    if (e->comm)
        comm_close(e->comm);
    trace_destroy(e->trace);
    evring_destroy(e->cmds);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e->xf);
    free(e->y);
    free(e->vpoc);
    free(e->vbars);
    data_sessions_fini(&e->ss);
    data_series_fini(&e->ds);
    mlp_ckpt_fini(&e->ck);
    free(e);
}
