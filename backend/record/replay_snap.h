/* The engine's snapshot rebuilt from a recording's lines, as a replay or a remote agent's
 * stream releases them: progress and losses from the metric events, the pool from the memory
 * events and layout lines, sync percentiles from the sync events, the state from commands and
 * the summary. One owner; no locking. */
#ifndef RINGSIDE_BACKEND_RECORD_REPLAY_SNAP_H
#define RINGSIDE_BACKEND_RECORD_REPLAY_SNAP_H

#include "backend/engine/engine.h"
#include "backend/record/replay_internal.h"
#include "backend/record/run_info.h"
#include "backend/trace/trace_hist.h"

#include <stdbool.h>
#include <stdint.h>

struct replay_snap {
    struct engine_snap snap; /* what snap() shows; the caller sets t_ns to its clock */
    int32_t run_epochs;      /* epochs of the recorded invocation (the run line's) */
    bool epochs_known;       /* the total was worked out from the first epoch seen */
    struct trace_hist hist[SYNC_OP_COUNT];
};

/* Start from a run line: state running, no phase, backend, device and start time from run,
 * chunk size and epochs from extra, empty histograms. Overwrites all of rs. */
void replay_snap_init(struct replay_snap *rs, const struct run_info *run,
                      const struct replay_run_extra *extra);

/* Apply one released line: an event, a layout or a summary (a run line or a blank is
 * ignored: a new run needs replay_snap_init). */
void replay_snap_apply(struct replay_snap *rs, const struct replay_item *it);

/* replay_snap_apply for an event alone (no struct replay_item around it). */
void replay_snap_event(struct replay_snap *rs, const struct ev *e);

#endif
