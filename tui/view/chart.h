/* Pure chart arithmetic, no curses: the scale a history is drawn against and how much of each
 * row of a multi-row chart a value fills, so the charts and sparklines test without a
 * terminal. */
#ifndef RINGSIDE_TUI_VIEW_CHART_H
#define RINGSIDE_TUI_VIEW_CHART_H

#include <stddef.h>

/* The range v[0, n) is drawn against, into *lo and *hi: its min and max, widened about their
 * middle to at least min_span (so that noise smaller than min_span stays flat), kept at or
 * above floor_lo (0 for bytes and fractions; -INFINITY for none). n 0: both 0. */
void chart_scale(const double *v, size_t n, double min_span, double floor_lo, double *lo,
                 double *hi);

/* The span a history of non-negative amounts (bytes) is drawn against: min_span_frac of its
 * largest value, so a change of a few parts in a thousand does not fill the chart. */
double chart_span_of(const double *v, size_t n, double min_span_frac);

/* Eighths of a row that value fills in row `row` (0 = the bottom one) of a chart `rows` rows
 * tall drawn against [lo, hi]: 8 for a full row, 0 for an empty one. A value at lo or below
 * fills nothing, at hi or above every row; a value above lo fills at least one eighth of the
 * bottom row, so that any amount shows. */
int chart_eighths(double value, double lo, double hi, int rows, int row);

#endif
