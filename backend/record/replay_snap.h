/* The engine's snapshots rebuilt from a recording's lines, as a replay or a remote agent's
 * stream releases them, one per training device: progress and losses from the metric events
 * (the run's, so every device's), the pool from each device's memory events and layout lines,
 * sync percentiles from its sync events, collective calls and step time from its collective
 * events, the state from commands and the summary. One owner; no locking. */
#ifndef RINGSIDE_BACKEND_RECORD_REPLAY_SNAP_H
#define RINGSIDE_BACKEND_RECORD_REPLAY_SNAP_H

#include "backend/engine/engine.h"
#include "backend/record/replay_internal.h"
#include "backend/record/run_info.h"
#include "backend/trace/trace_hist.h"

#include <stdbool.h>
#include <stdint.h>

/* One training device's part. */
struct replay_snap_dev {
    struct trace_hist hist[SYNC_OP_COUNT];
    struct trace_hist coll[EV_COLL_COUNT]; /* each collective event's mean call time */
    uint64_t last_coll_ns;                 /* the last all-reduce event's time (0: none yet) */
    int64_t last_coll_step;                /* ... and its step */
};

struct replay_snap {
    /* What snap() shows: rank k's snapshot in snaps[k], k < n_devs (the caller sets t_ns to
     * its clock). snaps[0] is the one-device view. */
    struct engine_snap snaps[RUN_MAX_DEVICES];
    unsigned n_devs;                /* 1..RUN_MAX_DEVICES */
    uint16_t devs[RUN_MAX_DEVICES]; /* the device index of each rank (the events' dev) */
    int32_t run_epochs;             /* epochs of the recorded invocation (the run line's) */
    bool epochs_known;              /* the total was worked out from the first epoch seen */
    struct replay_snap_dev d[RUN_MAX_DEVICES];
    /* A PyTorch job's counters (its run line's extra.job), as its script passes them to
     * rs.step(epoch, step): its epochs count from 0 once an epoch 0 came with a step, its steps
     * from 0 once a step 0 came, and its steps run on over the epochs (global) once one went
     * past its steps per epoch (else they count within the epoch, as `for step in range(n)`
     * does). job_epoch and job_step: the furthest position it said (-1: none yet). */
    bool job, job_epoch0, job_step0, job_global;
    int32_t job_epoch;
    int64_t job_step;
};

/* Start from a run line: state running, no phase, backend, device and start time from run,
 * one snapshot per device of run->devices (at least one), chunk size and epochs from extra,
 * empty histograms. A job's (extra->job): its epochs and steps per epoch as it told them
 * (total_steps their product), everything it has not reported yet marked na. Overwrites all
 * of rs. */
void replay_snap_init(struct replay_snap *rs, const struct run_info *run,
                      const struct replay_run_extra *extra);

/* Apply one released line: an event, a layout or a summary (a run line or a blank is
 * ignored: a new run needs replay_snap_init). */
void replay_snap_apply(struct replay_snap *rs, const struct replay_item *it);

/* replay_snap_apply for an event alone (no struct replay_item around it). */
void replay_snap_event(struct replay_snap *rs, const struct ev *e);

/* The rank of device index dev (an event's or a layout line's dev); 0 for EV_DEV_NONE or a
 * device the run line does not list, so a one-device recording takes every line. */
unsigned replay_snap_rank(const struct replay_snap *rs, unsigned dev);

#endif
