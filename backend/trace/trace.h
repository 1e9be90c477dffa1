/* Phase and synchronize tracing: every phase becomes an event, every synchronize and blocking
 * copy goes through trace_sync(), which times it into per-device histograms and publishes what
 * is in flight, so a watchdog on another thread can see a hang while it happens. */
#ifndef RINGSIDE_BACKEND_TRACE_TRACE_H
#define RINGSIDE_BACKEND_TRACE_TRACE_H

#include "backend/core/ev.h"
#include "backend/core/evring.h"
#include "backend/trace/trace_hist.h"

#include <stdbool.h>
#include <stdint.h>

#define TRACE_MAX_DEVICES 16

struct trace;

/* Where a phase event sits in the training loop. */
struct trace_pos {
    int32_t epoch; /* 0 before training */
    int64_t step;  /* -1 outside a step */
    int32_t chunk; /* -1 outside VPOC */
};

/* A synchronize in flight on one device (valid while start_ns != 0). */
struct trace_inflight {
    uint64_t start_ns;
    uint8_t op;    /* enum ev_sync_op */
    uint8_t phase; /* enum ev_phase_id current when the sync started */
};

/* Summary of one (device, op) histogram, for snapshots. */
struct trace_sync_summary {
    uint64_t count, p50_ns, p90_ns, p99_ns, max_ns, sum_ns;
};

/* ring is borrowed (events go there); n_devices in 1..TRACE_MAX_DEVICES. 0 or -errno. */
int trace_create(struct trace **out, struct evring *ring, unsigned n_devices);
void trace_destroy(struct trace *t);

/* The phase a device is in now (for sync attribution); PHASE_COUNT = idle. */
void trace_set_phase(struct trace *t, unsigned dev, enum ev_phase_id ph);

/* Emit a completed phase [start_ns, end_ns] as an event. */
void trace_phase_emit(struct trace *t, unsigned dev, enum ev_phase_id ph, uint64_t start_ns,
                      uint64_t end_ns, const struct trace_pos *pos);

/* The one way to wait for a device: publishes "in flight since now" for dev, calls fn(arg),
 * records the duration into the (dev, op) histogram, pushes a SYNC event and returns fn's
 * result. Thread-safe for different devices; one sync per device at a time. */
int trace_sync(struct trace *t, unsigned dev, enum ev_sync_op op, int (*fn)(void *arg), void *arg);

/* Test/injection hook: every trace_sync on dev first waits extra_ns in addition (0 = none). */
void trace_set_sync_delay(struct trace *t, unsigned dev, uint64_t extra_ns);

/* A fault to rehearse with (--inject): synchronizes of a device in one phase wait longer, as a
 * hung or slow GPU would make them: only the first one (hang), or every one (slow-sync). The
 * wait happens inside the traced sync, so the watchdog sees it in flight. A training step's
 * phases (h2d, forward, backward, optimizer) are waited for by the step's sync (phase sync). */
struct trace_inject {
    uint8_t phase;     /* enum ev_phase_id */
    bool once;         /* hang: the first sync in the phase only */
    uint64_t extra_ns; /* added to the sync */
};
#define TRACE_MAX_INJECT 8

/* "hang:PHASE:SECONDS" or "slow-sync:PHASE:MS" into *out. 0, or -EINVAL with err naming the
 * spec and what is wrong. */
int trace_inject_parse(const char *spec, struct trace_inject *out, char *err, size_t errlen);

/* The spec back ("hang:cleanup:40"), for messages and the printed configuration. */
void trace_inject_format(const struct trace_inject *in, char *buf, size_t n);

/* Arm an injection on dev (before the first sync). 0, or -ENOSPC past TRACE_MAX_INJECT. */
int trace_add_inject(struct trace *t, unsigned dev, const struct trace_inject *in);

/* What is in flight on dev now; false (and *out zeroed) when nothing is. Any thread. */
bool trace_inflight(const struct trace *t, unsigned dev, struct trace_inflight *out);

/* Copy of one histogram / its summary. Any thread. */
void trace_sync_hist(struct trace *t, unsigned dev, enum ev_sync_op op, struct trace_hist *out);
void trace_sync_summary(struct trace *t, unsigned dev, enum ev_sync_op op,
                        struct trace_sync_summary *out);

/* Push an arbitrary event (stamped now if e->t_ns == 0). */
void trace_emit(struct trace *t, const struct ev *e);

#endif
