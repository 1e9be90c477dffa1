/* One frame of the dashboard: everything a panel may read, built by the app from its source.
 * Panels draw from this alone, so tests can draw them from a hand-made frame. */
#ifndef RINGSIDE_TUI_DASHBOARD_UI_H
#define RINGSIDE_TUI_DASHBOARD_UI_H

#include "backend/engine/engine.h"
#include "backend/kmsg/kmsg_watch.h"
#include "backend/run/source.h"
#include "backend/telemetry/tele.h"
#include "tui/view/theme.h"
#include "tui/view/ui_model.h"

#include <curses.h>
#include <stdbool.h>
#include <stdint.h>

/* What the watchdog display says about the sync in flight. */
enum ui_watch { UI_WATCH_OK, UI_WATCH_SLOW, UI_WATCH_HANG };

struct ui_frame {
    uint64_t now_ns;                /* the run's clock (recorded clock in a replay) */
    const struct engine_snap *snap; /* the first training device's (progress, losses) */
    /* Every training device's snapshot in rank order (snaps[0] is snap), n_snaps of them
     * (1..RUN_MAX_DEVICES); a device the source has none for is left out at the end. */
    const struct engine_snap *snaps[RUN_MAX_DEVICES];
    unsigned n_snaps;
    const struct ui_model *model;
    const struct run_info *run;
    const struct theme *theme;
    bool color; /* colour pairs 1..THEME_ROLE_COUNT are set up */
    bool utf8;  /* block and line characters may be used */
    uint64_t sync_slow_ns, sync_timeout_ns;
    uint64_t window_ns;             /* the timeline's span */
    unsigned gpu;                   /* selected training device: its rank (< n_snaps) */
    int chunk;                      /* chunk size last asked for (0 = whole session) */
    bool frozen;                    /* display frozen with f */
    struct trace_inflight inflight; /* sync in flight on the selected device */
    bool has_inflight;
    struct trace_inflight oldest; /* the oldest sync in flight on any training device */
    bool has_oldest;
    unsigned oldest_dev;          /* ... on this device index */
    const char *source_status;    /* the source's status line, or "" */
    bool source_done;             /* nothing more will come from the source */
    const struct tele_snap *tele; /* every GPU in the machine; NULL without telemetry (replay) */
    int tele_train;               /* index in tele of the GPU the engine trains on, or -1 */
    bool has_kmsg;                /* a kernel-log watcher runs: kmsg holds its counters */
    struct kmsg_stats kmsg;
    const char *kmsg_reason; /* why /dev/kmsg is unreadable, or "" */
    /* More for an event's details than its line carries (a watched rank's hang diagnosis and
     * stacks), or NULL; note may be NULL. Asked when the details open. */
    const char *(*note)(void *ctx, uint64_t t_ns, uint16_t dev, uint8_t code);
    void *note_ctx;
};

/* The attribute for a role: its colour pair when colours are on; in monochrome, bold for
 * emphasis roles and reverse video for fills (bars, segments, phases, footer). */
attr_t ui_attr(const struct ui_frame *f, enum theme_role r);

/* State of the sync in flight (and its age) against the slow and timeout thresholds. */
enum ui_watch ui_frame_watch(const struct ui_frame *f, uint64_t *age_ns);

/* Whether the run has ended: every training device's snapshot finished or failed (a watched
 * group's rank 0 that left while rank 1 goes on has not ended the run). *failed: one failed. */
bool ui_frame_ended(const struct ui_frame *f, bool *failed);

/* The selected training device's snapshot (snaps[gpu], else snap). */
const struct engine_snap *ui_frame_sel(const struct ui_frame *f);

/* RUNNING, PAUSED, HUNG, STOPPING, FINISHED, FAILED, REPLAY... as the header shows it: HUNG
 * when a sync on any training device is past the timeout. */
const char *ui_frame_state(const struct ui_frame *f, bool quitting);

/* The run's clock in seconds: from its start to now, or to the last snapshot of a run that
 * has ended (finished, failed, or a source with nothing more to come): its time stops there. */
double ui_frame_elapsed_s(const struct ui_frame *f);

/* The header's loss line after the loss (and its sparkline): " val V  chunk C  samples/s R":
 * the chunk only where the source has one (a job's only once it told one), n/a for a rate not
 * measured, never 0; a job's steps/s after its samples/s. Returns the length, as snprintf. */
int ui_header_rates(const struct engine_snap *s, char *buf, size_t n);

/* The progress of a job that did not tell its length (s->job, no total_steps), into buf:
 * "epoch 2/3  step 500" (the epochs told), "epoch 2  step 7" (its own counter), "no step yet".
 * Returns what it would take to have a fraction and an ETA ("no ETA: the job did not tell
 * connect(steps_per_epoch=)"). */
const char *ui_header_job_at(const struct engine_snap *s, char *buf, size_t n);

/* The summary of an ended run, a line each (label, then value) into lines (up to max of
 * UI_SUMMARY_COLS bytes): how it ended, epochs and steps in how long, the last and best val
 * loss, the last training loss and samples/s, the checkpoint and best model written. Returns
 * the lines written. */
#define UI_SUMMARY_COLS 1300
int ui_summary_lines(const struct ui_frame *f, char (*lines)[UI_SUMMARY_COLS], int max);

#endif
