/* Where a run's events come from: the live engine, a recording, a remote agent. The dashboard
 * drives any of them through these ops and never knows which. */
#ifndef RINGSIDE_BACKEND_RUN_SOURCE_H
#define RINGSIDE_BACKEND_RUN_SOURCE_H

#include "backend/core/ev.h"
#include "backend/engine/engine.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/record/run_info.h"
#include "backend/telemetry/tele.h"
#include "backend/trace/trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct source;

struct source_ops {
    const char *name; /* "live", "replay" */
    /* A descriptor that becomes readable when events are pending, or -1 (the app then relies on
     * its frame timer). */
    int (*wake_fd)(struct source *s);
    /* Copy out up to max pending events, oldest first. A replay releases the events whose time
     * has come on its clock. */
    size_t (*drain)(struct source *s, struct ev *out, size_t max);
    /* The latest snapshot (valid until the next call). */
    const struct engine_snap *(*snap)(struct source *s);
    /* The run's clock now: CLOCK_MONOTONIC live, the recording's clock in a replay. */
    uint64_t (*now_ns)(struct source *s);
    /* A key the source acts on (live: p, +, -, c become engine commands; replay: p pauses
     * playback, + and - change its speed). Returns true when handled; msg gets a one-line
     * notice for the footer ("" for none). */
    bool (*key)(struct source *s, int ch, char *msg, size_t msglen);
    /* Ask the run to end: live sends a graceful stop; a replay ends at once. */
    void (*stop)(struct source *s);
    /* The synchronize in flight on dev, if any. */
    bool (*inflight)(struct source *s, unsigned dev, struct trace_inflight *out);
    /* True once nothing more will come (engine finished, recording exhausted). */
    bool (*done)(struct source *s);
    /* A line for the header when the source has something to say ("replay 2.0x", "stopped at
     * line 17: ..."), or "". */
    const char *(*status)(struct source *s);
    void (*destroy)(struct source *s);
    /* Optional (NULL: the app reads its own telemetry service, if any). The GPUs' telemetry the
     * source carries (attach: the agent's latest sample), or NULL before the first; valid until
     * the next call. */
    const struct tele_snap *(*tele)(struct source *s);
    /* Optional (NULL: the app asks its own kernel-log watcher, if any). True when the source
     * carries a kernel-log watcher's counters (attach: the agent's): *out gets them and *reason
     * why /dev/kmsg is unreadable there, or "" (valid until the next call). */
    bool (*kmsg)(struct source *s, struct kmsg_stats *out, const char **reason);
};

struct source {
    const struct source_ops *ops;
    void *priv;
    struct run_info run;
};

#endif
