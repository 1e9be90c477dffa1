/* Rows into bars of a fixed length (--bar, and ticks into one-minute bars): each instrument's
 * bar is built apart, given out once a row of a later interval, or the end, comes. */
#include "backend/core/errbuf.h"
#include "backend/data/data_csv.h"
#include "backend/data/data_csv_internal.h"
#include "backend/data/data_series.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#define DATA_CSV_AGG_MAX_VOLUME 1e12 /* a bar's, as a row's: the profile's fixed point */

/* Row b into the bar being built (same interval). */
static void data_csv_agg_merge(struct data_bar *bar, const struct data_bar *b) {
    bar->high = fmax(bar->high, b->high);
    bar->low = fmin(bar->low, b->low);
    bar->close = b->close;
    bar->volume += b->volume;
    bar->vix = b->vix; /* the last, as the close */
}

/* The bar built, given out into *out: 1 (counted), or -EINVAL when its rows summed past a
 * bar's volume. */
static int data_csv_agg_give(struct data_csv_ctx *c, const struct data_bar *bar,
                             struct data_bar *out, char *err, size_t errlen) {
    if (bar->volume > DATA_CSV_AGG_MAX_VOLUME) {
        char t[20];
        data_format_time(bar->t_s, t);
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: the bar at %s sums its rows' volume to %.0f, above the maximum "
                          "1e12 (a shorter --bar)",
                          c->name, t, bar->volume);
    }
    *out = *bar;
    c->rep->bars++;
    return 1;
}

int data_csv_ctx_bar(struct data_csv_ctx *c, struct data_bar *b, size_t *sym, char *err,
                     size_t errlen) {
    if (c->bar_s == 0) {
        int rc = data_csv_ctx_next(c, b, sym, err, errlen);
        c->rep->bars += rc == 1;
        return rc;
    }
    for (;;) {
        if (c->agg_eof) { /* the rows have run out: the bars left, one a call */
            for (size_t k = 0; k < DATA_CSV_SYMBOLS; k++)
                if (c->agg_live[k]) {
                    c->agg_live[k] = false;
                    *sym = k;
                    return data_csv_agg_give(c, &c->agg[k], b, err, errlen);
                }
            return 0;
        }
        struct data_bar row;
        size_t k = 0;
        int rc = data_csv_ctx_next(c, &row, &k, err, errlen);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            c->agg_eof = true;
            continue;
        }
        row.t_s = data_floor_div(row.t_s, c->bar_s) * c->bar_s;
        if (c->agg_live[k] && c->agg[k].t_s == row.t_s) {
            data_csv_agg_merge(&c->agg[k], &row);
            continue;
        }
        struct data_bar done = c->agg[k];
        bool had = c->agg_live[k];
        c->agg[k] = row;
        c->agg_live[k] = true;
        if (had) {
            *sym = k;
            return data_csv_agg_give(c, &done, b, err, errlen);
        }
    }
}
