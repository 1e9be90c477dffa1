/* Loss panel: each evaluated epoch's training and validation loss as charts side by side, the
 * best validation epoch marked, and how long ago it was: a run that overfits shows it here. */
#include "tui/dashboard/panel.h"
#include "tui/dashboard/widgets.h"
#include "tui/view/chart.h"

#include <math.h>
#include <stdio.h>

/* The position of the lowest of v[0, n), or -1. */
static long panel_loss_best(const double *v, size_t n) {
    long best = n ? 0 : -1;
    for (size_t k = 1; k < n; k++)
        best = v[k] < v[best] ? (long)k : best;
    return best;
}

/* One series as a chart of rows x width at (y, x), its name, latest value and scale at the
 * left; mark_best: the lowest value's column in the ok role. */
static void panel_loss_chart(struct panel *p, int y, int x, int rows, int width, const char *name,
                             const struct ui_series *s, enum theme_role r, bool mark_best,
                             const struct ui_frame *f) {
    double v[UI_SERIES];
    int cw = width - 12;
    if (cw < 4)
        return;
    size_t n = ui_series_last(s, v, (size_t)cw);
    double lo, hi;
    /* the first epochs' losses are far above the rest: the scale is the later three
     * quarters', the early columns run off the top */
    size_t skip = n >= 8 ? n / 4 : 0;
    chart_scale(v + skip, n - skip, chart_span_of(v + skip, n - skip, 0.02), -INFINITY, &lo, &hi);
    w_text(p->win, y, x, 12, THEME_DIM, f, "%-11s", name);
    if (n > 0 && rows >= 2)
        w_text(p->win, y + 1, x, 12, THEME_TEXT, f, "%-11.4f", v[n - 1]);
    if (n > 0 && rows >= 4) {
        w_text(p->win, y + 2, x, 11, THEME_DIM, f, "top %.4f", hi);
        w_text(p->win, y + rows - 1, x, 11, THEME_DIM, f, "low %.4f", lo);
    }
    /* the chart starts a little under the lowest value, so it shows as a column */
    double base = lo - (hi - lo) / (rows * 8.0);
    struct w_chart_data d = {
        v, NULL, n, base, hi, r, r, THEME_OK, mark_best ? panel_loss_best(v, n) : -1};
    w_chart(p->win, y, x + 12, rows, cw, &d, f);
}

static void panel_loss_draw(struct panel *p, const struct ui_frame *f) {
    const struct engine_snap *s = f->snap;
    char info[96] = "no epoch evaluated yet";
    int32_t since = s->epoch - 1 - s->best_epoch;
    since = since < 0 ? 0 : since;
    if (s->has_val)
        snprintf(info, sizeof(info), "best val %.4f at epoch %d%s", s->best_val_loss, s->best_epoch,
                 since >= 10 ? "  not improving" : "");
    w_title(p->win, "loss per epoch", info, p->focused, f);
    int rows = p->h - 1, w = p->w - 2, half = w / 2;
    if (rows < 1)
        return;
    if (!s->has_val && f->model->val_loss.n == 0) {
        w_text(p->win, 1, 1, w, THEME_DIM, f,
               "each epoch's training and validation loss, once "
               "the first epoch is evaluated");
        return;
    }
    panel_loss_chart(p, 1, 1, rows, half - 1, "train", &f->model->epoch_loss, THEME_ACCENT, false,
                     f);
    panel_loss_chart(p, 1, 1 + half, rows, w - half, "val", &f->model->val_loss,
                     since >= 10 ? THEME_WARN : THEME_TEXT, true, f);
}

const struct panel_ops panel_loss_ops = {
    .name = "loss",
    .title = "loss per epoch",
    .help = "each evaluated epoch's training (mean) and validation loss; the best val epoch in "
            "the ok colour, the val chart in the warning colour once 10 epochs have not improved "
            "on it (the best model is kept as NAME_best.rsmodel)",
    .min_h = 3,
    .pref_h = 6,
    .column = 1,
    .grow = true,
    .extra = true,
    .draw = panel_loss_draw,
    .key = NULL,
};
