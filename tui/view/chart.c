/* Scales and fill levels for the dashboard's charts. */
#include "tui/view/chart.h"

#include <math.h>

void chart_scale(const double *v, size_t n, double min_span, double floor_lo, double *lo,
                 double *hi) {
    *lo = *hi = 0;
    if (n == 0)
        return;
    double a = v[0], b = v[0];
    for (size_t k = 1; k < n; k++) {
        a = v[k] < a ? v[k] : a;
        b = v[k] > b ? v[k] : b;
    }
    if (b - a < min_span) {
        double mid = (a + b) / 2;
        a = mid - min_span / 2;
        b = mid + min_span / 2;
    }
    if (a < floor_lo) { /* shifted up, the span kept */
        b += floor_lo - a;
        a = floor_lo;
    }
    *lo = a;
    *hi = b;
}

double chart_span_of(const double *v, size_t n, double min_span_frac) {
    double m = 0;
    for (size_t k = 0; k < n; k++)
        m = fabs(v[k]) > m ? fabs(v[k]) : m;
    return m * min_span_frac;
}

int chart_eighths(double value, double lo, double hi, int rows, int row) {
    if (rows <= 0 || row < 0 || row >= rows || !(hi > lo) || !(value > lo))
        return 0;
    double f = (value - lo) / (hi - lo);
    f = f > 1 ? 1 : f;
    long total = lround(f * rows * 8);
    total = total < 1 ? 1 : total;
    long here = total - (long)row * 8;
    return here <= 0 ? 0 : here >= 8 ? 8 : (int)here;
}
