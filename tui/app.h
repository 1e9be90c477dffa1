/* The dashboard application: runs the UI loop over any data source. */
#ifndef RINGSIDE_TUI_APP_H
#define RINGSIDE_TUI_APP_H

#include "backend/telemetry/tele.h"
#include "tui/cli_opts.h"
#include "tui/ui_source.h"

/* Run the dashboard over src (and the telemetry service tele, borrowed, or NULL) until the user
 * quits, the source is done and --frames is reached, or a signal asks to stop. Uses o's delay_ds,
 * frames, theme, sync thresholds. Takes care of the terminal (restores it on every exit path).
 * Returns the process exit status. */
int app_main(struct ui_source *src, const struct cli_train_opts *o, struct tele *tele);

#endif
