/* The panel interface: a panel is a const ops struct plus per-instance state; the app lays
 * panels out, gives each a window, and routes keys to the focused one. */
#ifndef RINGSIDE_TUI_PANEL_H
#define RINGSIDE_TUI_PANEL_H

#include "tui/ui.h"

#include <stdbool.h>
#include <stdint.h>

struct panel;

struct panel_ops {
    const char *name;  /* "memory": stable, for tests and the config */
    const char *title; /* shown in its title row */
    const char *help;  /* what the panel means, for the help overlay (one or two lines) */
    int min_h;         /* rows in its compact form, title row included */
    int pref_h;        /* rows it would like; 0 = as many as are left */
    int column;        /* in two-column layouts: 0 left, 1 right, 2 full width below */
    /* Draw the whole panel into p->win (size p->h x p->w, both >= min_h x 20) from f; the app
     * refreshes. Called every frame. */
    void (*draw)(struct panel *p, const struct ui_frame *f);
    /* A key while focused (arrows, PgUp/PgDn, Home/End, Enter); true when consumed. May be
     * NULL. */
    bool (*key)(struct panel *p, int ch, const struct ui_frame *f);
};

struct panel {
    const struct panel_ops *ops;
    WINDOW *win; /* owned by the app; NULL while hidden */
    int h, w;
    bool focused;
    int scroll;          /* first line shown, for scrollable panels */
    int selected;        /* selected line, for panels with a selection */
    bool detail;         /* showing the selection's detail (events) */
    int detail_scroll;   /* first line of the detail view shown */
    uint64_t list_added; /* the list's count of appended entries that scroll/selected refer to */
};

/* The panels, in focus order. */
extern const struct panel_ops panel_gpu_ops;
extern const struct panel_ops panel_memory_ops;
extern const struct panel_ops panel_timeline_ops;
extern const struct panel_ops panel_sync_ops;
extern const struct panel_ops panel_events_ops;

/* Scroll helpers for list panels: apply a navigation key to scroll/selected over n lines with
 * `visible` rows shown; true when the key was a navigation key. */
bool panel_nav_key(struct panel *p, int ch, int n, int visible);

/* Keep a newest-first list's selection on its entry while entries arrive: `added` is the
 * list's count of entries appended so far, n its length now. At the top (nothing scrolled,
 * the newest selected) the panel follows the newest; anywhere else scroll and selection move
 * down with the entries, clamped to the oldest still kept. */
void panel_list_follow(struct panel *p, uint64_t added, int n);

#endif
