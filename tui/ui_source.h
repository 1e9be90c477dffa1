/* Where the dashboard's data comes from: the live engine or a recording. The app drives either
 * through these ops and never knows which; panels only ever see a struct ui_frame. */
#ifndef RINGSIDE_TUI_UI_SOURCE_H
#define RINGSIDE_TUI_UI_SOURCE_H

#include "backend/core/ev.h"
#include "backend/engine/engine.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/telemetry/tele.h"
#include "backend/trace/trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Facts about the run that do not change while it is shown. */
struct ui_run {
    char host[64];
    char backend[16]; /* "cpu", "hip" */
    char dev_name[96];
    char dev_arch[32];
    unsigned n_devices;
    bool replay;
    char origin[256];  /* "live" or the recording's path */
    uint64_t start_ns; /* the run's clock at its start */
    uint64_t start_wall_ns;
    /* Why the actions on the loop (p + - c m) do nothing here, shown greyed out with this
     * reason ("read-only: ..."); "" when they act (or, in a replay, steer the playback). */
    char control_off[128];
};

/* What the loop's keys (p + - c m) ask of a source; which key asks for which is the key map's
 * business, not the source's. */
enum ui_source_action {
    UI_SOURCE_PAUSE_TOGGLE, /* pause or resume training (replay: the playback) */
    UI_SOURCE_CHUNK_UP,   /* the VPOC chunk size a rung up, from the engine's (replay: speed x2) */
    UI_SOURCE_CHUNK_DOWN, /* ... a rung down (replay: speed /2) */
    UI_SOURCE_CLEANUP,    /* a safe cleanup */
    UI_SOURCE_PROBE,      /* a memory probe */
    UI_SOURCE_ACTIONS
};

struct ui_source;

struct ui_source_ops {
    const char *name; /* "live", "replay" */
    /* A descriptor that becomes readable when events are pending, or -1 (the app then relies on
     * its frame timer). */
    int (*wake_fd)(struct ui_source *s);
    /* Copy out up to max pending events, oldest first. A replay releases the events whose time
     * has come on its clock. */
    size_t (*drain)(struct ui_source *s, struct ev *out, size_t max);
    /* The latest snapshot (valid until the next call). */
    const struct engine_snap *(*snap)(struct ui_source *s);
    /* The run's clock now: CLOCK_MONOTONIC live, the recording's clock in a replay. */
    uint64_t (*now_ns)(struct ui_source *s);
    /* Act (live: engine commands; replay: playback; attach: POST /control to the agent).
     * Returns true when handled, false for an action the source does not take (a replay has
     * no cleanup); msg gets a one-line notice for the footer ("" for none: a command's result
     * comes as its event). Where run.control_off is set the loop's actions do nothing and msg
     * says why. */
    bool (*action)(struct ui_source *s, enum ui_source_action act, char *msg, size_t msglen);
    /* Ask the run to end: live sends a graceful stop; a replay ends at once. */
    void (*stop)(struct ui_source *s);
    /* The synchronize in flight on dev, if any. */
    bool (*inflight)(struct ui_source *s, unsigned dev, struct trace_inflight *out);
    /* True once nothing more will come (engine finished, recording exhausted). */
    bool (*done)(struct ui_source *s);
    /* A line for the header when the source has something to say ("replay 2.0x", "stopped at
     * line 17: ..."), or "". */
    const char *(*status)(struct ui_source *s);
    void (*destroy)(struct ui_source *s);
    /* Optional (NULL: the app reads its own telemetry service, if any). The GPUs' telemetry the
     * source carries (attach: the agent's latest sample), or NULL before the first; valid until
     * the next call. */
    const struct tele_snap *(*tele)(struct ui_source *s);
    /* Optional (NULL: the app asks its own kernel-log watcher, if any). True when the source
     * carries a kernel-log watcher's counters (attach: the agent's): *out gets them and *reason
     * why /dev/kmsg is unreadable there, or "" (valid until the next call). */
    bool (*kmsg)(struct ui_source *s, struct kmsg_stats *out, const char **reason);
};

struct ui_source {
    const struct ui_source_ops *ops;
    void *priv;
    struct ui_run run;
};

#endif
