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
    uint8_t op;        /* enum ev_sync_op */
    uint8_t phase;     /* enum ev_phase_id current when the sync started */
    uint8_t coll;      /* a watched job's collective: its enum ev_coll_op (EV_COLL_NONE: a sync) */
    uint64_t coll_seq; /* ... and its number in its group (0: not numbered) */
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

/* Emit count spans of one phase as one event: from the first's start_ns to the last's end_ns,
 * busy_ns inside them (count 1 is trace_phase_emit). */
void trace_phase_emit_sum(struct trace *t, unsigned dev, enum ev_phase_id ph, uint64_t start_ns,
                          uint64_t end_ns, uint64_t busy_ns, uint32_t count,
                          const struct trace_pos *pos);

/* The one way to wait for a device: publishes "in flight since now" for dev, calls fn(arg),
 * records the duration into the (dev, op) histogram, pushes a SYNC event and returns fn's
 * result. Thread-safe for different devices; one sync per device at a time. */
int trace_sync(struct trace *t, unsigned dev, enum ev_sync_op op, int (*fn)(void *arg), void *arg);

/* Test/injection hook: every trace_sync on dev first waits extra_ns in addition (0 = none). */
void trace_set_sync_delay(struct trace *t, unsigned dev, uint64_t extra_ns);

/* A fault to rehearse with (--inject), armed on a device for one phase. A training step's
 * phases (h2d, forward, backward, optimizer) are waited for by the step's sync (phase sync),
 * so their hang, slow-sync and error faults fire there. */
enum trace_fault {
    TRACE_FAULT_HANG,  /* the first sync in the phase waits extra_ns more (GPU backends: behind
                          the hang kernel), as a hung GPU would make it */
    TRACE_FAULT_SLOW,  /* every sync in the phase waits extra_ns more */
    TRACE_FAULT_OOM,   /* the next allocation in the phase fails as the runtime's would */
    TRACE_FAULT_ERROR, /* the next sync in the phase reports a named runtime error */
    TRACE_FAULT_DROP,  /* the device's worker leaves the run mid-epoch without a word, as a
                          crashed rank would (several devices only) */
    TRACE_FAULT_WRITE, /* the nth file a run's checkpoints write (model and metadata, counted
                          from 1) fails as on a full disk (checkpoint phase only) */
    TRACE_FAULT_STALL, /* the nth such file's write blocks and never returns, as on a hung
                          network mount (checkpoint phase only) */
};

/* The runtime errors error:PHASE:NAME can name; each backend reports them as its runtime
 * would (HIP and CUDA share these numbers). */
#define TRACE_RUNTIME_ERRORS(X)                                                                    \
    X(NO_KERNEL_IMAGE, "no-kernel-image", 209,                                                     \
      "no kernel image is available for execution on "                                             \
      "the device")                                                                                \
    X(ECC, "ecc", 214, "uncorrectable ECC error encountered")                                      \
    X(ILLEGAL_ADDRESS, "illegal-address", 700, "an illegal memory access was encountered")         \
    X(LAUNCH_TIMEOUT, "launch-timeout", 702, "the launch timed out and was terminated")            \
    X(LAUNCH_FAILURE, "launch-failure", 719, "unspecified launch failure")

enum trace_runtime_error {
#define X(id, name, code, text) TRACE_ERR_##id,
    TRACE_RUNTIME_ERRORS(X)
#undef X
        TRACE_ERR_COUNT
};

const char *trace_error_name(enum trace_runtime_error e); /* "no-kernel-image" */
int trace_error_code(enum trace_runtime_error e);         /* hipError_t/cudaError_t: 209 */
const char *trace_error_text(enum trace_runtime_error e); /* the runtimes' description */

struct trace_inject {
    uint8_t kind;      /* enum trace_fault */
    uint8_t phase;     /* enum ev_phase_id (PHASE_COUNT for DROP) */
    uint8_t error;     /* ERROR: enum trace_runtime_error */
    int16_t dev;       /* the one device it is armed on (":devN"), or -1: every training device */
    uint64_t extra_ns; /* HANG, SLOW: added to the sync (or, in a collective phase, the wait
                          before the call); WRITE: which write fails (n, from 1) */
};
#define TRACE_MAX_INJECT 8

/* "hang:PHASE:SECONDS", "slow-sync:PHASE:MS", "oom:PHASE", "error:PHASE:NAME",
 * "write:checkpoint:N" or "stall:checkpoint:N", each optionally followed by ":devN" (armed on
 * device N alone), or "drop:devN", into *out. 0, or -EINVAL with err naming the spec and what is
 * wrong. */
int trace_inject_parse(const char *spec, struct trace_inject *out, char *err, size_t errlen);

/* The spec back ("hang:cleanup:40"), for messages and the printed configuration. */
void trace_inject_format(const struct trace_inject *in, char *buf, size_t n);

/* Arm an injection on dev (before the first sync). 0, or -ENOSPC past TRACE_MAX_INJECT. */
int trace_add_inject(struct trace *t, unsigned dev, const struct trace_inject *in);

/* Take a one-shot fault of kind armed on dev for the phase dev is in now: true (and *out
 * set) the one time it fires, so whoever takes it carries it out (a GPU backend launches the
 * hang kernel for a HANG it takes; one left untaken is waited for in trace_sync). Any thread. */
bool trace_fault_take(struct trace *t, unsigned dev, enum trace_fault kind,
                      struct trace_inject *out);

/* trace_fault_take for phase rather than the phase dev is in now (a collective's wait, run on
 * another thread than the one that sets the phase). */
bool trace_fault_take_in(struct trace *t, unsigned dev, enum trace_fault kind,
                         enum ev_phase_id phase, struct trace_inject *out);

/* Whether a fault of kind is armed on dev for exactly phase and not yet taken. Any thread. */
bool trace_fault_armed(const struct trace *t, unsigned dev, enum trace_fault kind,
                       enum ev_phase_id phase);

/* A checkpoint file is about to be written on dev: counts it, and the one time a WRITE or
 * STALL fault armed for this write (its n) fires, that kind, so the caller fails that write or
 * blocks in it; -1 for every other write. Any thread. */
int trace_fault_write(struct trace *t, unsigned dev);

/* ---- collectives and where each device was last seen (several devices) ---- */

/* A collective call in flight on one device (valid while start_ns != 0). */
struct trace_coll {
    uint64_t start_ns;
    uint8_t op;   /* enum ev_coll_op */
    uint64_t seq; /* collectives the device has entered, this one included */
};

/* Where a device's loop was last seen. */
struct trace_seen {
    bool used;     /* the device takes part in the run */
    bool left;     /* its worker has left the run */
    uint8_t phase; /* enum ev_phase_id (PHASE_COUNT: idle) */
    int32_t epoch;
    int64_t step;
    uint64_t coll_seq; /* collectives it has entered */
};

/* Publish that dev entered collective op / left it. One collective per device at a time. */
void trace_coll_begin(struct trace *t, unsigned dev, enum ev_coll_op op);
void trace_coll_end(struct trace *t, unsigned dev);
/* The collective in flight on dev; false (and *out zeroed) when none is. Any thread. */
bool trace_coll_inflight(const struct trace *t, unsigned dev, struct trace_coll *out);
/* Where dev's loop is: its epoch and global step (the phase is trace_set_phase's). */
void trace_set_pos(struct trace *t, unsigned dev, int32_t epoch, int64_t step);
/* dev's worker has left the run (it ended, failed or was dropped). */
void trace_set_left(struct trace *t, unsigned dev);
/* Where dev was last seen. Any thread. */
void trace_seen(const struct trace *t, unsigned dev, struct trace_seen *out);
/* Devices the trace covers (its n_devices). */
unsigned trace_devices(const struct trace *t);

/* What is in flight on dev now; false (and *out zeroed) when nothing is. Any thread. */
bool trace_inflight(const struct trace *t, unsigned dev, struct trace_inflight *out);

/* "a device sync in cleanup has been in flight for 12.3 s" into buf (the footer's and the exit
 * message's wording); false when inf started at or after now_ns. */
bool trace_inflight_describe(const struct trace_inflight *inf, uint64_t now_ns, char *buf,
                             size_t n);

/* Copy of one histogram / its summary. Any thread. */
void trace_sync_hist(struct trace *t, unsigned dev, enum ev_sync_op op, struct trace_hist *out);
void trace_sync_summary(struct trace *t, unsigned dev, enum ev_sync_op op,
                        struct trace_sync_summary *out);

/* Push an arbitrary event (stamped now if e->t_ns == 0). */
void trace_emit(struct trace *t, const struct ev *e);

#endif
