/* Pure layout: terminal size and panel size hints in, rectangles out. No curses, so it is
 * tested at 80x24, 250x70 and everything between. */
#ifndef RINGSIDE_TUI_LAYOUT_H
#define RINGSIDE_TUI_LAYOUT_H

#include <stdbool.h>

#define LAYOUT_MIN_ROWS    16
#define LAYOUT_MIN_COLS    60
#define LAYOUT_WIDE_COLS   160 /* two columns from here */
#define LAYOUT_HEADER_ROWS 3
#define LAYOUT_FOOTER_ROWS 1

struct ui_rect {
    int y, x, h, w; /* h == 0: not shown */
};

struct layout_item {
    int min_h, pref_h; /* pref_h 0: takes what is left */
    int column;        /* 0 left, 1 right, 2 full width below (two-column layouts) */
};

struct layout_out {
    bool too_small; /* below LAYOUT_MIN_ROWS x LAYOUT_MIN_COLS: show only a message */
    bool wide;      /* two columns */
    struct ui_rect header, footer;
    int hidden; /* panels that did not fit (reachable with Tab) */
};

/* Place n panels (at most 16) in order; the focused one is always shown, others are dropped
 * from the end when even their compact forms do not fit. */
void layout_compute(int rows, int cols, const struct layout_item *items, int n, int focus,
                    struct layout_out *out, struct ui_rect *rects);

#endif
