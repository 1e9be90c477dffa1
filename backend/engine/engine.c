/* The engine's lifecycle and thread: create (everything that can fail on input), start, the
 * command queue and safe points, snapshots, and joining. */
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

void engine_set_phase(struct engine *e, enum ev_phase_id ph) {
    trace_set_phase(e->trace, e->c->dev, ph);
    e->s.phase = ph;
}

void engine_phase_done(struct engine *e, enum ev_phase_id ph, uint64_t start_ns, int32_t epoch,
                       int64_t step, int32_t chunk) {
    struct trace_pos pos = {epoch, step, chunk};
    trace_phase_emit(e->trace, e->c->dev, ph, start_ns, mono_now_ns(), &pos);
}

void engine_emit_mem(struct engine *e) {
    struct mem_stats st;
    mem_pool_stats(e->c->pool, &st);
    struct ev ev = {.kind = EV_MEM, .dev = (uint16_t)e->c->dev};
    ev.u.mem.allocated_bytes = st.allocated_bytes;
    ev.u.mem.reserved_bytes = st.reserved_bytes;
    ev.u.mem.largest_free_bytes = st.largest_free_bytes;
    ev.u.mem.total_free_bytes = st.total_free_bytes;
    ev.u.mem.free_blocks = st.free_blocks;
    ev.u.mem.segments = st.segments;
    ev.u.mem.frag = st.frag;
    trace_emit(e->trace, &ev);
}

void engine_publish(struct engine *e, bool force) {
    uint64_t now = mono_now_ns();
    if (!force && now - e->last_publish_ns < ENGINE_PUBLISH_NS)
        return;
    e->last_publish_ns = now;
    e->s.t_ns = now;
    e->s.chunk_bars = e->chunk_bars;
    mem_pool_stats(e->c->pool, &e->s.mem);
    mem_pool_layout(e->c->pool, &e->s.layout);
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++)
        trace_sync_summary(e->trace, e->c->dev, op, &e->s.sync[op]);
    e->s.has_inflight = trace_inflight(e->trace, e->c->dev, &e->s.inflight);
    memcpy(snap_write_begin(e->snap), &e->s, sizeof(e->s));
    snap_publish(e->snap);
}

static void engine_set_state(struct engine *e, enum engine_state st) {
    e->s.state = st;
    engine_publish(e, true);
}

static void engine_reply(struct engine *e, const struct ev_command *cmd, int rc, const char *fmt,
                         ...) __attribute__((format(printf, 4, 5)));

static void engine_reply(struct engine *e, const struct ev_command *cmd, int rc, const char *fmt,
                         ...) {
    struct ev ev = {.kind = EV_COMMAND, .dev = EV_DEV_NONE};
    ev.u.command = *cmd;
    ev.u.command.rc = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.u.command.text, sizeof(ev.u.command.text), fmt, ap);
    va_end(ap);
    trace_emit(e->trace, &ev);
}

int engine_cleanup(struct engine *e, char *msg, size_t msglen) {
    enum ev_phase_id prev = e->s.phase;
    engine_set_phase(e, PHASE_CLEANUP);
    uint64_t t0 = mono_now_ns();
    int rc = compute_sync(e->c, SYNC_OP_DEVICE);
    uint64_t t1 = mono_now_ns();
    uint64_t freed = rc == 0 ? mem_pool_empty_cache(e->c->pool) : 0;
    uint64_t t2 = mono_now_ns();
    int rc2 = rc == 0 ? compute_sync(e->c, SYNC_OP_DEVICE) : 0;
    uint64_t t3 = mono_now_ns();
    engine_phase_done(e, PHASE_CLEANUP, t0, e->s.epoch, -1, -1);
    engine_set_phase(e, prev);
    engine_emit_mem(e);
    engine_publish(e, true);
    if (rc == 0)
        rc = rc2;
    if (rc != 0)
        return errbuf_set(msg, msglen, rc, "cleanup failed: synchronize: %s",
                          e->c->ops->strerror(rc));
    return errbuf_set(msg, msglen, 0,
                      "cleanup dev %u: sync %.3f ms, empty_cache %.3f ms released %llu bytes, "
                      "sync %.3f ms",
                      e->c->dev, (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6,
                      (unsigned long long)freed, (double)(t3 - t2) / 1e6);
}

/* The largest block the device could allocate now, beside the pool's own largest free block:
 * how fragmented device memory is outside and inside the cache. */
static void engine_probe(struct engine *e, const struct ev_command *cmd) {
    const struct compute_ops *ops = e->c->ops;
    if (!ops->mem_probe) {
        engine_reply(e, cmd, -ENOTSUP, "memory probe: the %s backend has no device memory to probe",
                     ops->name);
        return;
    }
    uint64_t largest = 0;
    int rc = ops->mem_probe(e->c, &largest);
    if (rc != 0) {
        engine_reply(e, cmd, rc, "memory probe failed: %s", ops->strerror(rc));
        return;
    }
    struct mem_stats st;
    mem_pool_stats(e->c->pool, &st);
    ops->mem_info(e->c);
    engine_reply(e, cmd, 0,
                 "memory probe dev %u: largest allocatable block %.1f MiB of %.1f MiB free; pool: "
                 "largest free block %.1f MiB of %.1f MiB reserved",
                 e->c->dev, (double)largest / 1048576.0,
                 (double)e->c->info.mem_free_bytes / 1048576.0,
                 (double)st.largest_free_bytes / 1048576.0, (double)st.reserved_bytes / 1048576.0);
}

/* A new chunk size from the next chunk on, in the one wording every front end shows. The
 * result is a set_chunk's with the size set, a step's too: whoever rebuilds the run from its
 * results (a replay, an attached dashboard) learns the size one way. */
static void engine_set_chunk(struct engine *e, const struct ev_command *cmd, int bars) {
    struct ev_command res = *cmd;
    res.cmd = CMD_SET_CHUNK;
    res.arg = bars;
    e->chunk_bars = bars;
    engine_publish(e, true);
    if (bars)
        engine_reply(e, &res, 0, "VPOC chunk size %d bars from the next chunk", bars);
    else
        engine_reply(e, &res, 0, "VPOC chunk size: whole sessions from the next session");
}

/* set_chunk sets a size; chunk_step moves a rung up or down the ladder from the size the
 * engine has now (which an out-of-memory drop may have changed). */
static void engine_chunk_cmd(struct engine *e, const struct ev_command *cmd) {
    if (cmd->cmd == CMD_CHUNK_STEP && cmd->arg != 1 && cmd->arg != -1)
        engine_reply(e, cmd, -EINVAL, "chunk step %lld is not 1 or -1", (long long)cmd->arg);
    else if (cmd->cmd == CMD_CHUNK_STEP)
        engine_set_chunk(e, cmd, vpoc_chunk_step(e->chunk_bars, (int)cmd->arg));
    else if (cmd->arg < 0 || cmd->arg > VPOC_CHUNK_MAX)
        engine_reply(e, cmd, -EINVAL, "chunk size %lld is not in 0..%d", (long long)cmd->arg,
                     VPOC_CHUNK_MAX);
    else
        engine_set_chunk(e, cmd, (int)cmd->arg);
}

static void engine_apply(struct engine *e, const struct ev_command *cmd) {
    char msg[EV_TEXT_BYTES];
    switch ((enum ev_cmd_id)cmd->cmd) {
    case CMD_SET_CHUNK:
    case CMD_CHUNK_STEP:
        engine_chunk_cmd(e, cmd);
        return;
    case CMD_CLEANUP: {
        int rc = engine_cleanup(e, msg, sizeof(msg));
        atomic_store(&e->cleanup_busy, false);
        engine_reply(e, cmd, rc, "%s", msg);
        return;
    }
    case CMD_PROBE:
        engine_probe(e, cmd);
        return;
    case CMD_PAUSE:
        e->paused = true;
        engine_reply(e, cmd, 0, "paused");
        return;
    case CMD_RESUME:
        e->paused = false;
        engine_reply(e, cmd, 0, "resumed");
        return;
    case CMD_STOP:
        e->stop_requested = true;
        e->paused = false;
        engine_reply(e, cmd, 0, "stopping: finishing the step and writing a checkpoint");
        return;
    case CMD_COUNT:
        break;
    }
    engine_reply(e, cmd, -EINVAL, "unknown command %u", cmd->cmd);
}

static void engine_drain_commands(struct engine *e) {
    struct ev cmds[ENGINE_CMD_CAP];
    size_t n = evring_drain(e->cmds, cmds, ENGINE_CMD_CAP);
    for (size_t i = 0; i < n; i++)
        engine_apply(e, &cmds[i].u.command);
}

bool engine_safe_point(struct engine *e) {
    engine_drain_commands(e);
    if (e->paused && !e->stop_requested) {
        enum ev_phase_id prev = e->s.phase;
        uint64_t t0 = mono_now_ns();
        engine_set_phase(e, PHASE_PAUSED);
        engine_set_state(e, ENGINE_PAUSED);
        while (e->paused && !e->stop_requested) {
            struct pollfd pf = {evring_wake_fd(e->cmds), POLLIN, 0};
            poll(&pf, 1, ENGINE_PAUSE_POLL_MS);
            engine_drain_commands(e);
            engine_publish(e, false);
        }
        engine_phase_done(e, PHASE_PAUSED, t0, e->s.epoch, -1, -1);
        engine_set_phase(e, prev);
        engine_set_state(e, ENGINE_RUNNING);
    }
    engine_publish(e, false);
    return e->stop_requested;
}

void engine_command(struct engine *e, enum ev_cmd_id cmd, int64_t arg) {
    struct ev ev = {.t_ns = mono_now_ns(), .kind = EV_COMMAND, .dev = EV_DEV_NONE};
    ev.u.command.cmd = (uint8_t)cmd;
    ev.u.command.arg = arg;
    if (cmd == CMD_CLEANUP && atomic_exchange(&e->cleanup_busy, true)) { /* never two at once */
        engine_reply(e, &ev.u.command, -EBUSY,
                     "refused: a safe cleanup is already queued or running");
        return;
    }
    evring_push(e->cmds, &ev);
}

/* The training thread: VPOC, features, safe cleanup, training; then FINISHED or FAILED. */
static void *engine_main(void *arg) {
    struct engine *e = arg;
    char err[512] = "";
    uint64_t t0 = mono_now_ns();
    engine_set_state(e, ENGINE_RUNNING);
    int rc = engine_vpoc_all(e, err, sizeof(err));
    if (rc == 0)
        rc = engine_features(e, err, sizeof(err));
    if (rc == 0 && e->conf.pre_cleanup && !e->stop_requested) {
        char msg[EV_TEXT_BYTES];
        engine_log(e, SEV_INFO, "pre-training safe cleanup");
        rc = engine_cleanup(e, msg, sizeof(msg));
        engine_log(e, rc == 0 ? SEV_INFO : SEV_ERROR, "%s", msg);
        if (rc != 0)
            snprintf(err, sizeof(err), "%s", msg);
    }
    if (rc == 0)
        rc = engine_train(e, err, sizeof(err));
    engine_set_phase(e, PHASE_COUNT);
    e->res.elapsed_s = (double)(mono_now_ns() - t0) / 1e9;
    e->res.stopped = e->stop_requested;
    if (rc != 0) {
        if (!err[0]) /* a path that gave no reason still says what the backend calls rc */
            snprintf(err, sizeof(err), "%s (error %d on %s)", e->c->ops->strerror(rc), rc,
                     e->c->ops->name);
        e->res.state = ENGINE_FAILED;
        snprintf(e->res.error, sizeof(e->res.error), "%s", err);
        struct ev ev = {.kind = EV_ALERT, .dev = (uint16_t)e->c->dev};
        ev.u.text.severity = SEV_ERROR;
        snprintf(ev.u.text.text, sizeof(ev.u.text.text), "training failed: %s", err);
        trace_emit(e->trace, &ev);
    } else {
        e->res.state = ENGINE_FINISHED;
    }
    engine_emit_mem(e);
    engine_set_state(e, e->res.state);
    atomic_store(&e->done, true);
    return NULL;
}

static int engine_open_backend(struct engine *e, char *err, size_t errlen) {
    int rc = trace_create(&e->trace, e->events, (unsigned)e->conf.device + 1);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "cannot create the tracer: %s", strerror(-rc));
    struct compute_conf cc = {.device = e->conf.device,
                              .threads = e->conf.threads,
                              .alloc = e->conf.alloc,
                              .trace = e->trace};
    char notice[512];
    rc = compute_open(e->conf.backend, &cc, &e->c, notice, sizeof(notice), err, errlen);
    if (rc != 0)
        return rc;
    if (notice[0])
        engine_log(e, SEV_WARNING, "%s", notice);
    for (int k = 0; k < e->conf.n_inject; k++) { /* rehearsal faults, said out loud */
        char spec[64];
        trace_add_inject(e->trace, (unsigned)e->conf.device, &e->conf.inject[k]);
        trace_inject_format(&e->conf.inject[k], spec, sizeof(spec));
        engine_log(e, SEV_WARNING, "fault injection armed: %s", spec);
    }
    snprintf(e->s.backend, sizeof(e->s.backend), "%s", e->c->ops->name);
    e->s.dev = e->c->info;
    return 0;
}

/* A crash mid-write leaves "<name>.rsmodel.tmp.<pid>" (or the metadata's) beside the
 * checkpoint: remove those whose writer is gone, saying so. */
static void engine_sweep_stale(struct engine *e) {
    char prefix[ENGINE_PATH_MAX], err[256];
    static const char *const suffixes[] = {".rsmodel", "_metadata.json"};
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
        snprintf(prefix, sizeof(prefix), "%s%s", e->conf.name, suffixes[k]);
        int n = afile_sweep_stale(e->conf.output_dir, prefix, err, sizeof(err));
        if (n > 0)
            engine_log(e, SEV_INFO, "removed %d stale %s.tmp.* file%s (a write cut short)", n,
                       prefix, n == 1 ? "" : "s");
    }
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
    e->chunk_bars = conf->chunk_bars;
    e->vpoc_logged_chunk = -1;
    e->start_wall_ns = mono_wall_ns();
    e->s.start_ns = mono_now_ns();
    e->s.phase = PHASE_COUNT;
    e->s.epochs = conf->epochs;
    data_series_init(&e->ds);
    rc = evring_create(&e->cmds, ENGINE_CMD_CAP);
    if (rc == 0)
        rc = snap_create(&e->snap, sizeof(struct engine_snap));
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
    if ((rc = afile_mkdirs(e->conf.output_dir, err, errlen)) != 0) {
        rc = -EINVAL;
        goto fail;
    }
    engine_sweep_stale(e);
    engine_publish(e, true);
    *out = e;
    return 0;
fail:
    engine_destroy(e);
    return rc;
}

int engine_start(struct engine *e) {
    int rc = pthread_create(&e->thread, NULL, engine_main, e);
    if (rc != 0)
        return -rc;
    e->started = true;
    return 0;
}

const struct engine_snap *engine_snap_read(struct engine *e, bool *fresh) {
    return snap_read(e->snap, fresh);
}

bool engine_done(struct engine *e) {
    return atomic_load(&e->done);
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
    *mono_ns = e->s.start_ns;
}

void engine_destroy(struct engine *e) {
    if (!e)
        return;
    if (e->started) {
        engine_command(e, CMD_STOP, 0);
        pthread_join(e->thread, NULL);
    }
    if (e->c)
        engine_train_free(e);
    compute_close(e->c);
    trace_destroy(e->trace);
    snap_destroy(e->snap);
    evring_destroy(e->cmds);
    free(e->xf);
    free(e->y);
    free(e->vpoc);
    free(e->vbars);
    data_sessions_fini(&e->ss);
    data_series_fini(&e->ds);
    mlp_ckpt_fini(&e->ck);
    free(e);
}
