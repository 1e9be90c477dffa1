/* Plain drawing functions shared by the panels: titles, bars, sparklines, text. They draw into a
 * window at a position and never keep state. */
#ifndef RINGSIDE_TUI_WIDGETS_H
#define RINGSIDE_TUI_WIDGETS_H

#include "tui/ui.h"

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

/* A sparkline of the last n values (oldest first) scaled between their min and max, right
 * aligned in width cells; blank when n == 0. */
void w_spark(WINDOW *w, int y, int x, int width, const double *v, size_t n, enum theme_role r,
             const struct ui_frame *f);

/* The character for level (0..7) of a sparkline or histogram: UTF-8 blocks or ASCII. */
const char *w_level_glyph(int level, bool utf8);

#endif
