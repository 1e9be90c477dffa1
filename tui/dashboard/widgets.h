/* Plain drawing functions shared by the panels: titles, bars, sparklines, text. They draw into a
 * window at a position and never keep state. */
#ifndef RINGSIDE_TUI_DASHBOARD_WIDGETS_H
#define RINGSIDE_TUI_DASHBOARD_WIDGETS_H

#include "tui/dashboard/ui.h"

#include <stddef.h>

/* The panel's title row (row 0): a rule with " title " and optional right-aligned info;
 * focused panels are drawn with the accent role. */
void w_title(WINDOW *w, const char *title, const char *info, bool focused,
             const struct ui_frame *f);

/* printf at (y, x) clipped to maxw columns, in role r. */
void w_text(WINDOW *w, int y, int x, int maxw, enum theme_role r, const struct ui_frame *f,
            const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* A horizontal gauge of width cells filled to frac (0..1): '#' or full blocks in role fill,
 * the rest '.' or light shade in role dim. */
void w_bar(WINDOW *w, int y, int x, int width, double frac, enum theme_role fill,
           const struct ui_frame *f);

/* A sparkline of the last n values (oldest first) scaled between their min and max, widened
 * to at least min_span about their middle (0: none; a history that moves by less stays flat,
 * not stretched to full height), right aligned in width cells; blank when n == 0. */
void w_spark(WINDOW *w, int y, int x, int width, const double *v, size_t n, double min_span,
             enum theme_role r, const struct ui_frame *f);

/* A chart's series: n values oldest first, drawn right aligned, the last width of them. */
struct w_chart_data {
    const double *v;    /* each column filled from the bottom to v in role r... */
    const double *over; /* NULL, or n values >= v: ...and on from v to over in role over_r (a
                           pool's reserved bytes above its allocated ones) */
    size_t n;
    double lo, hi; /* the scale (chart_scale) */
    enum theme_role r, over_r, mark_r;
    long mark; /* a column (an index into v) drawn in mark_r, or -1 */
};

/* A chart of rows x width cells at (y, x) (chart_eighths a cell). */
void w_chart(WINDOW *w, int y, int x, int rows, int width, const struct w_chart_data *d,
             const struct ui_frame *f);

/* The character for level (0..7) of a sparkline or histogram: UTF-8 blocks or ASCII. */
const char *w_level_glyph(int level, bool utf8);

/* Put n bytes of s at (y, x) in attribute a, the cells exactly as wattron(a), mvwaddnstr and
 * wattroff would leave them: printable characters of one column each are written as cells in
 * one go, anything else (control bytes, wide or malformed characters, text running past the
 * right edge) takes that curses path itself. */
void w_put(WINDOW *w, int y, int x, const char *s, int n, attr_t a);

/* s[0, n) made safe for a terminal into out (n + 1 bytes, NUL-terminated): control characters
 * (C0, DEL, C1) and the invisible direction marks and overrides (U+200E, U+200F, U+202A to
 * U+202E, U+2066 to U+2069: text from a kernel log or a remote agent could reorder what is
 * shown around it) each become one '?'. The length written. */
int w_scrub(const char *s, int n, char *out);

#define W_ROW_BYTES 256

/* A row of one-column cells drawn left to right, each in a role of its own (a timeline, a
 * segment map, a gauge): neighbours in one role go out as one w_put, where a cell at a time
 * would cost a printf and two attribute switches each. Cells at or past the window's right
 * edge are dropped, as a clipped w_text drops them. */
struct w_row {
    WINDOW *w;
    const struct ui_frame *f;
    int y, x;  /* the next cell's position */
    int run_x; /* where the pending run starts */
    int cols;  /* the window's width */
    enum theme_role role;
    bool utf8; /* the locale's: else a non-ASCII glyph goes alone, as curses splits it */
    int len;   /* bytes pending */
    char buf[W_ROW_BYTES];
};

void w_row_begin(struct w_row *r, WINDOW *w, int y, int x, const struct ui_frame *f);

/* The next cell: glyph is one character of one column (ASCII or UTF-8). */
void w_row_put(struct w_row *r, enum theme_role role, const char *glyph);

/* The next cell, an ASCII character. */
void w_row_putc(struct w_row *r, enum theme_role role, char c);

/* Draw what is pending. */
void w_row_end(struct w_row *r);

#endif
