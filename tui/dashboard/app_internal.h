/* The dashboard application's state, shared by its loop (app.c) and its chrome (app_draw.c). */
#ifndef RINGSIDE_TUI_DASHBOARD_APP_INTERNAL_H
#define RINGSIDE_TUI_DASHBOARD_APP_INTERNAL_H

#include "tui/dashboard/app.h"
#include "tui/dashboard/app_doctor.h"
#include "tui/dashboard/keymap.h"
#include "tui/dashboard/panel.h"
#include "tui/dashboard/ui.h"
#include "tui/view/gpu_view.h"
#include "tui/view/layout.h"
#include "tui/view/textview.h"

#define APP_PANELS 6
#define APP_ZOOMS  8

struct app {
    struct source *src;
    unsigned where; /* the source as the key map knows it: KEYMAP_LIVE, _REPLAY or _ATTACH */
    const struct app_view *v;
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
    struct textview help_tv; /* the help's scroll (?) */
    bool hangup;             /* SIGHUP: the terminal is gone; stop gracefully without drawing */
    uint64_t quit_ns;        /* when the graceful stop was asked for */
    struct engine_snap frozen_snap;                  /* the first device's, while frozen */
    struct engine_snap frozen_devs[RUN_MAX_DEVICES]; /* every device's, while frozen */
    char notice[160];                                /* footer message for a few seconds */
    uint64_t notice_until_ns;
    struct ui_frame frame;
    struct tele *tele;       /* NULL: no telemetry */
    struct kmsg_watch *kmsg; /* NULL: no kernel-log watcher (replay, --no-kmsg) */
    /* the GPU overlay (g, or Enter on the GPU panel) */
    bool gpu_overlay;
    enum gpu_view_page gpu_page;
    struct textview gpu_tv;
    /* an event's details over the panels (Enter on the events panel, k): the text is the
     * panel's (panel_events_detail) */
    bool detail;
    struct textview detail_tv;
    struct app_doctor doctor;   /* D: the environment checks in the background */
    bool summary, summary_seen; /* the ended run's summary is open; it has been opened once */
};

#define APP_GPU_PANEL                                                                              \
    0                      /* the GPU panel's slot: its selection (panel_gpu_selected) is the      \
                            * overlay's GPU */
#define APP_EVENTS_PANEL 4 /* the events panel's slot (k: panel_events_show_kernel) */

/* The timeline spans < and > step through: 5 s .. 30 min. */
extern const uint64_t app_zoom_ns[APP_ZOOMS];

/* app_draw.c: one whole frame (layout already computed), and the window bookkeeping. */
void app_draw_frame(struct app *a, bool quitting);
void app_relayout(struct app *a);
void app_free_windows(struct app *a);

/* A line of an overlay: text (may hold '\n'), in role, its continuations hang columns in
 * past its own leading spaces (wrap_text). */
struct app_overlay_src {
    const char *text;
    enum theme_role role;
    int hang;
};

/* app_overlay.c: the overlays open over the panels, bottom to top: an event's details, the
 * GPU overlay, the help. */
void app_draw_overlays(struct app *a);

/* app_overlay.c: draw into all of win an overlay's frame, the lines of src (n of them)
 * wrapped to the frame and scrolled as v says, the hint on the last rows inside and the
 * position on the bottom border; v->rows and v->total are set and v->top kept in range. The
 * caller draws the title on the top border, then refreshes. */
void app_overlay_fill(WINDOW *win, const struct ui_frame *f, const struct app_overlay_src *src,
                      int n, const char *hint, struct textview *v);

/* app_overlay.c: a scroll key (keymap_scroll) moves v: true when ch was one. */
bool app_overlay_scroll_key(struct textview *v, int ch);

/* app_overlay.c: a key while the help is open (row: its row in the key map, or NULL): the
 * scroll keys scroll it, q and a resize are left to their rows (false), any other key closes
 * it. */
bool app_help_key(struct app *a, int ch, const struct keymap_row *row);

/* app_overlay.c: show the details the events panel has just composed, from their top. */
void app_open_detail(struct app *a);

/* app_overlay.c: a key while an event's details are open: the scroll keys scroll them, Enter
 * and Esc close them (true); false for any other key. */
bool app_detail_key(struct app *a, int ch);

/* app_gpu.c: the GPU overlay (g). */
void app_draw_gpu_overlay(struct app *a);

/* app_summary.c: the summary opens once, the first frame the run has ended; drawn over the
 * panels while open. */
void app_summary_follow(struct app *a);
void app_draw_summary(struct app *a);

/* app.c: a footer message for a few seconds. */
void app_notice(struct app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* app.c: the theme's colour pairs (again, after a change of theme). */
void app_colors(struct app *a);

/* app.c: q, or a signal: first a graceful stop, then (or once the source is done) leave. */
void app_quit_key(struct app *a);

/* app_keys.c: a key, run as its row of the key map says (or given to the focused panel). */
void app_key(struct app *a, int ch);

/* app_doctor.c: D starts the environment checks (or says they are already running); each
 * frame picks a finished run up: a notice, and an error event per failed check. */
void app_doctor_key(struct app *a);
void app_doctor_pickup(struct app *a);

/* app_gpu.c: keys while the GPU overlay is open (true when consumed). */
bool app_gpu_overlay_key(struct app *a, int ch);

#endif
