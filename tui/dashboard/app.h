/* The dashboard application: runs the UI loop over any source of events (a live run, a
 * recording, a remote agent). */
#ifndef RINGSIDE_TUI_DASHBOARD_APP_H
#define RINGSIDE_TUI_DASHBOARD_APP_H

#include "backend/engine/engine.h"
#include "backend/run/run_opts.h"
#include "backend/run/source.h"

#include <stdbool.h>
#include <stdint.h>

struct tele;
struct kmsg_watch;
struct remedies;

/* How the dashboard looks and refreshes. */
struct app_view {
    int frames;                  /* render this many frames, then stop gracefully (0 = run) */
    int delay_ds;                /* refresh in tenths of a second */
    char theme[ENGINE_PATH_MAX]; /* --theme NAME|PATH, "" = default */
    uint64_t sync_slow_ns;       /* a synchronize in flight this long is SLOW */
    uint64_t sync_timeout_ns;    /* ... and this long HUNG */
    /* A live run's stop leaves the process by itself this long after it began, when a call is
     * still stuck (--teardown-timeout and the abort's grace: backend/run/stop_deadline.h);
     * 0: no such deadline (a replay, an attach). */
    uint64_t stop_deadline_ns;
    bool drain_often; /* recording: drain every few ms, so that no event may drop */
    /* > 0: the terminal's stderr while fd 2 goes to a session log; the start-up errors (a
     * broken theme, no terminal) are written there, where the user reads them. 0: fd 2. */
    int stderr_fd;
};

/* What the dashboard shows beside its source; every member is borrowed and may be NULL. */
struct app_services {
    struct tele *tele;               /* the telemetry service */
    struct kmsg_watch *kmsg;         /* the kernel-log watcher (its status in the events panel) */
    const struct remedies *remedies; /* what helps, for kernel-log events' details */
};

/* Run the dashboard over src and svc until the user quits, the source is done and v->frames
 * is reached, or a signal asks to stop. Takes care of the terminal (restores it on every exit
 * path). Returns the process exit status. */
int app_main(struct source *src, const struct app_view *v, const struct app_services *svc);

/* The dashboard over a live run of o in this process: --record, the session log, the loop's
 * end (a stop that hangs leaves with status 3). Returns the process exit status. */
int app_live(const struct run_opts *o, const struct app_view *v);

/* The dashboard with no loop of ours (`ringside watch`): telemetry, the kernel log and the
 * jobs that attach through the bridge listening at socket (NULL: the default path). Exit
 * status. */
int app_watch(const struct run_opts *o, const struct app_view *v, const char *socket);

#endif
