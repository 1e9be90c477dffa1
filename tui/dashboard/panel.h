/* The panel interface: a panel is a const ops struct plus state of its own, which only its
 * file touches; the app lays panels out, gives each a window, routes keys to the focused one
 * and acts on what its key handler returns. */
#ifndef RINGSIDE_TUI_DASHBOARD_PANEL_H
#define RINGSIDE_TUI_DASHBOARD_PANEL_H

#include "tui/dashboard/ui.h"
#include "tui/view/layout.h"

#include <stdbool.h>
#include <stdint.h>

struct panel;

#define PANEL_TALL_ROWS 40 /* terminals from this many rows up keep min_h_tall rows */

/* What a panel's key handler did: flags, after htop's HandlerResult. The app acts on them; a
 * panel never reaches into the app or another panel. */
enum panel_result {
    PANEL_IGNORED = 0,                 /* not a key of this panel's */
    PANEL_HANDLED = 1u << 0,           /* taken */
    PANEL_OPEN_GPU_OVERLAY = 1u << 1,  /* open the GPU overlay on the panel's selected GPU */
    PANEL_OPEN_EVENT_DETAIL = 1u << 2, /* show the details just composed (panel_events_detail) */
};

struct panel_ops {
    const char *name;  /* "memory": stable, for tests and the config */
    const char *title; /* shown in its title row */
    const char *help;  /* what the panel means, for the help overlay (one or two lines) */
    int min_h;         /* rows in its compact form, title row included */
    int pref_h;        /* rows it would like; 0 = as many as are left */
    int column;        /* in two-column layouts: 0 left, 1 right, 2 full width below */
    int min_h_tall;    /* min_h from PANEL_TALL_ROWS terminal rows up (0: min_h) */
    bool grow;         /* draws taller with more rows (a chart): shares the rows left over */
    bool extra;        /* shown only where the others have the rows they want (else Tab) */
    /* Rows its whole content needs now at width w, title included: the layout's pref_h, asked
     * every frame (cheap; no drawing). NULL: pref_h. */
    int (*rows)(const struct panel *p, const struct ui_frame *f, int w);
    /* Allocate the panel's own state into p->priv, which only the panel's file looks into.
     * 0 or -ENOMEM. NULL for a panel without state. */
    int (*create)(struct panel *p);
    /* Free p->priv. NULL when create is. */
    void (*destroy)(struct panel *p);
    /* Draw the whole panel into p->win (size p->h x p->w, both >= min_h x 20) from f; the app
     * refreshes. Called every frame. */
    void (*draw)(struct panel *p, const struct ui_frame *f);
    /* A key while focused (arrows, PgUp/PgDn, Home/End, Enter, Esc): enum panel_result flags.
     * May be NULL. */
    unsigned (*key)(struct panel *p, int ch, const struct ui_frame *f);
};

struct panel {
    const struct panel_ops *ops;
    WINDOW *win; /* owned by the app; NULL while hidden */
    int h, w;
    bool focused; /* set by the app */
    void *priv;   /* the panel's own state (ops->create): only its file looks inside */
};

/* A list's position, for the panels that scroll one. */
struct panel_list {
    int scroll;     /* first line shown */
    int selected;   /* selected line */
    uint64_t added; /* the list's count of appended entries that scroll and selected refer to */
};

/* The panels, in focus order. */
extern const struct panel_ops panel_gpu_ops;
extern const struct panel_ops panel_memory_ops;
extern const struct panel_ops panel_timeline_ops;
extern const struct panel_ops panel_sync_ops;
extern const struct panel_ops panel_events_ops;
extern const struct panel_ops panel_loss_ops;

/* A panel of ops with its own state, no window yet. 0 or -ENOMEM. */
int panel_init(struct panel *p, const struct panel_ops *ops);

/* The layout's item for panel p on a rows x cols terminal: its ops' sizes, with the rows its
 * content needs now where it can say (f NULL: its static pref_h). */
struct layout_item panel_layout_item(const struct panel *p, const struct ui_frame *f, int rows,
                                     int cols);

/* Free the panel's state (a zeroed panel is fine). The window is the app's. */
void panel_fini(struct panel *p);

/* Scroll helpers for list panels: apply a navigation key to l over n lines with `visible` rows
 * shown; true when the key was a navigation key. */
bool panel_nav_key(struct panel_list *l, int ch, int n, int visible);

/* Keep a newest-first list's selection on its entry while entries arrive: `added` is the
 * list's count of entries appended so far, n its length now. At the top (nothing scrolled,
 * the newest selected) the panel follows the newest; anywhere else scroll and selection move
 * down with the entries, clamped to the oldest still kept. */
void panel_list_follow(struct panel_list *l, uint64_t added, int n);

/* The GPU panel's selected GPU: an index into the frame's telemetry (kept within it when
 * drawn). */
int panel_gpu_selected(const struct panel *p);

/* Select GPU gpu on the GPU panel (the GPU overlay's Left and Right). */
void panel_gpu_select(struct panel *p, int gpu);

/* The events panel: select the newest kernel-log failure of f's model and compose its details
 * (k; the app shows them). false, and nothing changed, when there is none. */
bool panel_events_show_kernel(struct panel *p, const struct ui_frame *f);

/* The events panel's details of the event they were last composed for (Enter, or
 * panel_events_show_kernel): its line in *head, to be shown in role *role, and the rest in
 * *body (its fields, what helps; lines apart by '\n'). Copied when they were composed, so events
 * arriving later change nothing. false, nothing set, before the first. */
bool panel_events_detail(const struct panel *p, const char **head, const char **body,
                         enum theme_role *role);

/* The events panel's list position. */
struct panel_list panel_events_list(const struct panel *p);

#endif
