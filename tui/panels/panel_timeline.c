/* Timeline panel: a Gantt row of phases per device over the chosen span, a labelled time axis,
 * and the phase running now. */
#include "tui/panel.h"
#include "tui/widgets.h"

#include <stdio.h>
#include <string.h>

static void panel_timeline_span(uint64_t ns, char *buf, size_t n) {
    if (ns >= 60000000000ull)
        snprintf(buf, n, "%llu min", (unsigned long long)(ns / 60000000000ull));
    else
        snprintf(buf, n, "%llu s", (unsigned long long)(ns / 1000000000ull));
}

/* One Gantt row: the device's phases (sync = false) or the host's waits for it (sync = true). */
static void panel_timeline_row(struct panel *p, int y, unsigned dev, bool sync, int x0, int width,
                               const struct ui_frame *f) {
    static enum ev_phase_id cells[UI_PAINT_MAX_COLS];
    width = width > UI_PAINT_MAX_COLS ? UI_PAINT_MAX_COLS : width;
    uint64_t t1 = f->now_ns, t0 = t1 > f->window_ns ? t1 - f->window_ns : 0;
    ui_model_paint(f->model, dev, sync, t0, t1, width, cells);
    if (sync)
        w_text(p->win, y, 1, x0 - 1, THEME_DIM, f, "wait");
    else
        w_text(p->win, y, 1, x0 - 1, dev == f->gpu ? THEME_TITLE : THEME_DIM, f, "dev%u", dev);
    for (int x = 0; x < width; x++) {
        if (cells[x] == PHASE_COUNT)
            w_text(p->win, y, x0 + x, 1, THEME_DIM, f, "%s", f->utf8 ? "\u00b7" : " ");
        else
            w_text(p->win, y, x0 + x, 1, THEME_PHASE0 + cells[x], f, "%c",
                   ev_phase_name(cells[x])[0]);
    }
}

/* "-10s ... -5s ... now" under the rows. */
static void panel_timeline_axis(struct panel *p, int y, int x0, int width,
                                const struct ui_frame *f) {
    for (int k = 0; k <= 4; k++) {
        char lab[16];
        uint64_t back = f->window_ns / 4 * (uint64_t)(4 - k);
        if (k == 4)
            snprintf(lab, sizeof(lab), "now");
        else if (back >= 60000000000ull)
            snprintf(lab, sizeof(lab), "-%.1fm", (double)back / 60e9);
        else
            snprintf(lab, sizeof(lab), "-%.1fs", (double)back / 1e9);
        int x = x0 + (width - 1) * k / 4 - (k == 4 ? (int)strlen(lab) - 1 : 0);
        w_text(p->win, y, x < x0 ? x0 : x, (int)strlen(lab), THEME_DIM, f, "%s", lab);
    }
}

/* The phase now, highlighted, and a legend of the letters. */
static void panel_timeline_legend(struct panel *p, int y, const struct ui_frame *f) {
    enum ev_phase_id cur = f->snap->phase;
    w_text(p->win, y, 1, 5, THEME_DIM, f, "now ");
    w_text(p->win, y, 5, 12, cur < PHASE_COUNT ? THEME_PHASE0 + cur : THEME_DIM, f, " %-10s ",
           cur < PHASE_COUNT ? ev_phase_name(cur) : "idle");
    int x = 19;
    for (int ph = 0; ph < PHASE_COUNT && x + 12 < p->w; ph++) {
        w_text(p->win, y, x, 1, THEME_PHASE0 + ph, f, "%c", ev_phase_name(ph)[0]);
        w_text(p->win, y, x + 1, 11, THEME_DIM, f, "%-10s", ev_phase_name(ph) + 1);
        x += (int)strlen(ev_phase_name(ph)) + 1;
    }
}

static void panel_timeline_draw(struct panel *p, const struct ui_frame *f) {
    char span[16], info[48];
    panel_timeline_span(f->window_ns, span, sizeof(span));
    snprintf(info, sizeof(info), "last %s  < >", span);
    w_title(p->win, "timeline", info, p->focused, f);
    int x0 = 6, width = p->w - x0 - 1;
    int y = 1;
    unsigned n = f->run->n_devices ? f->run->n_devices : 1;
    for (unsigned d = 0; d < n && y < p->h - 2; d++)
        panel_timeline_row(p, y++, d, false, x0, width, f);
    if (y < p->h - 2) /* the host waiting for the selected device */
        panel_timeline_row(p, y++, f->gpu, true, x0, width, f);
    panel_timeline_axis(p, y++, x0, width, f);
    if (y < p->h)
        panel_timeline_legend(p, y, f);
}

const struct panel_ops panel_timeline_ops = {
    .name = "timeline",
    .title = "timeline",
    .help = "phase per cell over the span; wait: host blocked in a sync",
    .min_h = 4,
    .pref_h = 6,
    .column = 1,
    .draw = panel_timeline_draw,
    .key = NULL,
};
