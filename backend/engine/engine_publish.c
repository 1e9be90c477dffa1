/* What the engine tells the front ends: log lines, phases, memory events and command replies
 * through the tracer, and each device's snapshot, published. */
#include "backend/comm/comm.h"
#include "backend/core/mono.h"
#include "backend/engine/engine_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ENGINE_PUBLISH_NS 100000000ull /* snapshots at most every 100 ms unless forced */

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

void engine_set_state(struct engine_dev *d, enum engine_state st) {
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
