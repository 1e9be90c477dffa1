/* Pure layout: terminal size and panel size hints in, rectangles out. No curses, so it is
 * tested at 80x24, 250x70 and everything between. */
#ifndef RINGSIDE_TUI_VIEW_LAYOUT_H
#define RINGSIDE_TUI_VIEW_LAYOUT_H

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
    int min_h, pref_h; /* pref_h: the rows its content needs; 0: takes what is left */
    int column;        /* 0 left, 1 right, 2 full width below (two-column layouts) */
    bool grow;         /* takes a share of the rows left once every panel has its pref_h (a
                          chart that draws taller): no band of the screen is left blank */
    bool extra;        /* shown only in the rows the others leave once they have their pref_h */
};

struct layout_out {
    bool too_small; /* below LAYOUT_MIN_ROWS x LAYOUT_MIN_COLS: show only a message */
    bool wide;      /* two columns */
    struct ui_rect header, footer;
    int hidden; /* panels that did not fit (reachable with Tab) */
};

/* Place n panels (at most 16) in order; the focused one is always shown, others are dropped
 * from the end when even their compact forms do not fit. In a column every shown panel gets
 * its min_h, then its pref_h in order, then the rows left are shared by the grow panels (or,
 * with none, go to a pref_h 0 panel, else to the last shown). Two columns: the panels below
 * get their pref_h (at least their min_h, at most a third of the body), the columns above the
 * rest. */
void layout_compute(int rows, int cols, const struct layout_item *items, int n, int focus,
                    struct layout_out *out, struct ui_rect *rects);

#endif
