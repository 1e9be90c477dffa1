/* The dashboard application's state, shared by its loop (app.c) and its chrome (app_draw.c). */
#ifndef RINGSIDE_TUI_APP_INTERNAL_H
#define RINGSIDE_TUI_APP_INTERNAL_H

#include "tui/app.h"
#include "tui/layout.h"
#include "tui/panel.h"
#include "tui/ui.h"

#define APP_PANELS 5
#define APP_ZOOMS  8

struct app {
    struct ui_source *src;
    const struct cli_train_opts *o;
    struct ui_model model;
    struct panel panels[APP_PANELS];
    struct ui_rect rects[APP_PANELS];
    struct layout_out lay;
    WINDOW *header, *footer;
    int focus;
    struct theme theme;
    char theme_name[64];
    int zoom; /* index into the window spans */
    bool frozen, help, quitting, leave_now, color, utf8;
    struct engine_snap frozen_snap;
    char notice[160]; /* footer message for a few seconds */
    uint64_t notice_until_ns;
    struct ui_frame frame;
};

/* The timeline spans < and > step through: 5 s .. 30 min. */
extern const uint64_t app_zoom_ns[APP_ZOOMS];

/* app_draw.c: one whole frame (layout already computed), and the window bookkeeping. */
void app_draw_frame(struct app *a, bool quitting);
void app_relayout(struct app *a);
void app_free_windows(struct app *a);

#endif
