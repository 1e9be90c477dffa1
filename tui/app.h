/* The dashboard application: runs the UI loop over any data source. */
#ifndef RINGSIDE_TUI_APP_H
#define RINGSIDE_TUI_APP_H

#include "backend/telemetry/tele.h"
#include "tui/cli_opts.h"
#include "tui/ui_source.h"

struct kmsg_watch;
struct remedies;

/* What the dashboard shows beside its source; every member is borrowed and may be NULL. */
struct app_services {
    struct tele *tele;               /* the telemetry service */
    struct kmsg_watch *kmsg;         /* the kernel-log watcher (its status in the events panel) */
    const struct remedies *remedies; /* what helps, for kernel-log events' details */
};

/* Run the dashboard over src and svc until the user quits, the source is done and --frames
 * is reached, or a signal asks to stop. Uses o's delay_ds, frames, theme, sync thresholds.
 * Takes care of the terminal (restores it on every exit path). Returns the process exit
 * status. */
int app_main(struct ui_source *src, const struct cli_train_opts *o, const struct app_services *svc);

#endif
