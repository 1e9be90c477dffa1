/* The engine's commands and safe points: the queue the front ends push to, applied by rank 0
 * (several devices: decided for all at a control point), the pause, the safe cleanup and the
 * memory probe. */
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/engine/engine_internal.h"
#include "backend/vpoc/vpoc.h"

#include <errno.h>
#include <poll.h>

#define ENGINE_PAUSE_POLL_MS 200

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

void engine_set_paused(struct engine *e, bool paused) {
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
