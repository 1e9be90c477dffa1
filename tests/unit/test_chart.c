/* Tests for the charts' arithmetic: the floor scale that keeps noise flat, and the fill of
 * each row. */
#include "tui/view/chart.h"

#include <criterion/criterion.h>
#include <math.h>

TestSuite(chart, .timeout = 10);

/* Noise of a few parts in a thousand on a pool's bytes: widened to a tenth of the largest, it
 * moves a sparkline by a fraction of one level instead of its full height. */
Test(chart, noise_stays_flat_under_a_floor_span) {
    double v[4] = {5.20e6, 5.21e6, 5.20e6, 5.22e6};
    double lo, hi;
    chart_scale(v, 4, chart_span_of(v, 4, 0.1), 0, &lo, &hi);
    cr_assert_geq(hi - lo, 0.1 * 5.22e6 - 1);
    double swing = (5.22e6 - 5.20e6) / (hi - lo);
    cr_assert_lt(swing, 0.05, "swing %.3f of the height", swing);
    chart_scale(v, 4, 0, -INFINITY, &lo, &hi); /* without: the noise fills the chart */
    cr_assert_float_eq(lo, 5.20e6, 1);
    cr_assert_float_eq(hi, 5.22e6, 1);
}

/* A widened range does not go below its floor (bytes and fractions start at 0). */
Test(chart, the_floor_holds) {
    double v[2] = {0.01, 0.02};
    double lo, hi;
    chart_scale(v, 2, 0.1, 0, &lo, &hi);
    cr_assert_float_eq(lo, 0, 1e-12);
    cr_assert_float_eq(hi, 0.1, 1e-12);
    chart_scale(v, 0, 0.1, 0, &lo, &hi);
    cr_assert(lo == 0 && hi == 0);
}

/* Rows fill from the bottom in eighths; any amount above lo shows; hi fills every row. */
Test(chart, rows_fill_from_the_bottom) {
    cr_assert_eq(chart_eighths(10, 0, 10, 4, 3), 8);
    cr_assert_eq(chart_eighths(5, 0, 10, 4, 0), 8);
    cr_assert_eq(chart_eighths(5, 0, 10, 4, 1), 8);
    cr_assert_eq(chart_eighths(5, 0, 10, 4, 2), 0);
    cr_assert_eq(chart_eighths(6.25, 0, 10, 4, 2), 4); /* 2.5 rows: half the third */
    cr_assert_eq(chart_eighths(0.001, 0, 10, 4, 0), 1);
    cr_assert_eq(chart_eighths(0, 0, 10, 4, 0), 0);
    cr_assert_eq(chart_eighths(20, 0, 10, 4, 3), 8);
    cr_assert_eq(chart_eighths(5, 0, 0, 4, 0), 0); /* no range */
}
