/* The run owner: one object that owns a live run (the training loop and its event ring, the
 * telemetry service, the kernel-log watcher and its ring, the hang watchdog, the recorder and
 * the hang bundle). The dashboard, headless mode and the agent are thin callers:
 *
 *     run_create  ->  run_record (optional)  ->  run_start
 *     loop: poll(run_wake_fd) ; run_drain ; run_snap ; (run_stop on a signal)
 *     run_finish  ->  run_destroy
 *
 * run_drain does the side-work of every event once, for every caller: it is recorded, echoed
 * to stderr when asked, and the first HANG alert writes the diagnostic bundle. The run is
 * shaped for several devices (every per-device query takes dev) and is one kind of source of
 * events (source.h; run_source() gives the dashboard's view of it). */
#ifndef RINGSIDE_BACKEND_RUN_RUN_H
#define RINGSIDE_BACKEND_RUN_RUN_H

#include "backend/core/ev.h"
#include "backend/engine/engine.h"
#include "backend/record/run_info.h"
#include "backend/run/run_opts.h"
#include "backend/trace/trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct run;
struct rec;
struct source;
struct tele;
struct kmsg_watch;
struct remedies;
struct trace_watch;

/* How a front end wants its run. */
struct run_conf {
    const struct run_opts *o; /* borrowed: outlives the run */
    /* The subcommand for messages: "train" gives "ringside train: why", "" gives
     * "ringside: why". */
    const char *cmd;
    bool train;           /* run the training loop (false: telemetry and kernel log only) */
    unsigned ring_events; /* room in the loop's and telemetry's event ring */
    /* run_wake_fd wakes for that ring once this many events are pending (0 or 1: at the
     * first; the kernel log's wakes at its first always) */
    unsigned ring_wake_events;
    bool session_log;             /* the kernel-log watcher also follows <output>/session.log */
    const char *session_log_path; /* ... or this file instead (non-NULL with session_log) */
    bool echo;  /* warnings, errors, alerts and kernel failures also go to stderr */
    bool quiet; /* say nothing when training ends well (headless: stdout says it) */
    /* At run_finish, read the kernel log to its end and stop its watcher (headless: its lines
     * still make the output); otherwise it runs until run_destroy (the agent serves it). */
    bool kmsg_ends_with_loop;
    /* Optional: called with every event before it is recorded; may renumber it (the agent
     * numbers its stream). */
    void (*on_event)(void *ctx, struct ev *e);
    /* Optional: every message of the run (a start failure, how training ended), one line
     * without its newline. NULL: "ringside CMD: msg" on stderr. */
    void (*say)(void *ctx, const char *msg);
    /* Optional: called on the thread that leaves the process with status 3 (the stop deadline's,
     * or run_abandon's caller), before the last words: put the terminal back and fd 2 where
     * the user reads it. Async-signal-safe calls only: another thread may hold any lock. */
    void (*on_abandon)(void *ctx);
    void *ctx; /* for on_event, say and on_abandon */
};

/* Create the event ring and (with train) the training loop, which validates the
 * configuration. 0, or the process exit status after saying why (a bad configuration: 2). */
int run_create(struct run **out, const struct run_conf *c);

/* Record the run into rec (borrowed, until run_destroy): the run line and the first layout
 * line now, then every event drained, every layout change and the summary. 0 or the write
 * error (-errno). */
int run_record(struct run *r, struct rec *rec);

/* Start telemetry (unless --telemetry none), the kernel-log watcher (unless --no-kmsg), the
 * training loop and its watchdog. Threads made here inherit the caller's signal mask. 0, or
 * the exit status after saying why (a bad --kmsg-file, rules file or root: 2). */
int run_start(struct run *r);

/* A descriptor that is readable while events are pending in either ring (in the loop's, from
 * ring_wake_events on). */
int run_wake_fd(struct run *r);

/* Copy out up to max pending events (max >= 2), the loop's and telemetry's first, then the
 * kernel log's. Each is passed to on_event, recorded and echoed; the run's first HANG alert
 * writes the diagnostic bundle and is followed in out by a warning saying where it went. */
size_t run_drain(struct run *r, struct ev *out, size_t max);

/* The device the loop trains on (--device; the first of --devices). */
unsigned run_device(const struct run *r);
/* Every training device, in rank order, into out (room for ENGINE_MAX_DEVICES); the count. */
unsigned run_devices(const struct run *r, unsigned *out);

/* The loop's latest snapshot for device dev (NULL without a loop on it); a layout line is
 * recorded when its memory numbers changed. Call from one thread: the one that drains. */
const struct engine_snap *run_snap(struct run *r, unsigned dev);

/* Send a command to the loop (ignored without one). */
void run_command(struct run *r, enum ev_cmd_id cmd, int64_t arg);

/* Ask the loop to stop gracefully: the step ends, the checkpoint is written. */
void run_stop(struct run *r);

/* True once the loop has ended (always true without one). */
bool run_done(struct run *r);

/* The synchronize in flight on dev, if any. */
bool run_inflight(struct run *r, unsigned dev, struct trace_inflight *out);

/* "a device sync in cleanup has been in flight for 12.3 s" into buf for the call in flight on
 * dev; false when nothing is. */
bool run_stuck_call(struct run *r, unsigned dev, uint64_t now_ns, char *buf, size_t n);

/* Join the loop (after run_done, or it waits), drain what is left, record the last layout and
 * the summary, and say how training ended. 0, or 1 when it failed or its checkpoint was not
 * written; res (may be NULL) gets the result. Without a loop: 0. */
int run_finish(struct run *r, struct engine_result *res);

/* Leave the process now with status 3 (the user's q q), saying where each device is: the
 * runtime's destructors could block behind a hung call, so no exit handlers run and nothing is
 * joined. The stop deadline does the same by itself, and writes the hang bundle when the run
 * has none yet, once a way out has run --teardown-timeout and its abort's grace
 * (stop_deadline.h): from run_stop, a failed device or the end of training until the loop has
 * ended, and from run_destroy until it returns. */
_Noreturn void run_abandon(struct run *r);

/* The run's facts: the loop's backend and device, or a run of telemetry alone. */
void run_info(struct run *r, struct run_info *out);

/* The parts, for front ends that show them (NULL when not running). */
struct engine *run_engine(struct run *r);
struct tele *run_tele(struct run *r);
struct kmsg_watch *run_kmsg(struct run *r);
const struct remedies *run_remedies(struct run *r);
struct trace_watch *run_watch(struct run *r);
/* The options the run was made with (borrowed, as run_conf.o). */
const struct run_opts *run_options(const struct run *r);
/* Events the loop's ring dropped. */
uint64_t run_dropped(struct run *r);

/* The dashboard's view of this live run (source.h): draining, snapshots and keys go through
 * the run. 0, -EINVAL for a run without a loop, or -ENOMEM; destroy with
 * src->ops->destroy(src) before run_destroy. */
int run_source(struct run *r, struct source **out);

/* Stop every thread and free everything (NULL is a no-op). */
void run_destroy(struct run *r);

#endif
