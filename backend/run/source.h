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

/* What the loop's keys (p + - c m) ask of a source; which key asks for which is the key map's
 * business, not the source's. */
enum source_action {
    SOURCE_PAUSE_TOGGLE, /* pause or resume training (replay: the playback) */
    SOURCE_CHUNK_UP,     /* the VPOC chunk size a rung up, from the engine's (replay: speed x2) */
    SOURCE_CHUNK_DOWN,   /* ... a rung down (replay: speed /2) */
    SOURCE_CLEANUP,      /* a safe cleanup */
    SOURCE_PROBE,        /* a memory probe */
    SOURCE_ACTIONS
};

struct source;

struct source_ops {
    const char *name; /* "live", "replay" */
    /* A descriptor that becomes readable when events are pending, or -1 (the app then relies on
     * its frame timer). */
    int (*wake_fd)(struct source *s);
    /* Copy out up to max pending events, oldest first. A replay releases the events whose time
     * has come on its clock. */
    size_t (*drain)(struct source *s, struct ev *out, size_t max);
    /* The latest snapshot of the first training device (valid until the next call). */
    const struct engine_snap *(*snap)(struct source *s);
    /* The latest snapshot of the k-th training device (rank k, k < run.n_devices; 0 is the
     * one snap() gives), or NULL past the end or where the source has none for it (an agent
     * that does not serve that device). Valid until the next call of snap or dev_snap. */
    const struct engine_snap *(*dev_snap)(struct source *s, unsigned k);
    /* The run's clock now: CLOCK_MONOTONIC live, the recording's clock in a replay. */
    uint64_t (*now_ns)(struct source *s);
    /* Act (live: engine commands; replay: playback; attach: POST /control to the agent).
     * Returns true when handled, false for an action the source does not take (a replay has
     * no cleanup); msg gets a one-line notice for the footer ("" for none: a command's result
     * comes as its event). Where run.control_off is set the loop's actions do nothing and msg
     * says why. */
    bool (*action)(struct source *s, enum source_action act, char *msg, size_t msglen);
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
    /* Optional (NULL: actions go to the whole run). The training device (rank k) the
     * dashboard has selected, told before each action: a watch sends the loop's keys to the
     * selected job (and the other ranks of its process group). */
    void (*select)(struct source *s, unsigned k);
    /* Optional (NULL: none). More for an alert's details than its line carries (a watched
     * rank's hang diagnosis and the Python stacks it names), asked when the details open: the
     * alert's t_ns, dev and code name it. NULL when it has none; valid until the next call. */
    const char *(*note)(struct source *s, uint64_t t_ns, uint16_t dev, uint8_t code);
};

struct source {
    const struct source_ops *ops;
    void *priv;
    struct run_info run;
};

#endif
