/* Timeline panel: a Gantt row of phases per device over the chosen span, a labelled time axis,
 * and the phase running now. */
#include "tui/panel.h"
#include "tui/ui_devices.h"
#include "tui/widgets.h"

#include <stdio.h>
#include <string.h>

static void panel_timeline_span(uint64_t ns, char *buf, size_t n) {
    if (ns >= 60000000000ull)
        snprintf(buf, n, "%llu min", (unsigned long long)(ns / 60000000000ull));
    else
        snprintf(buf, n, "%llu s", (unsigned long long)(ns / 1000000000ull));
}

#define PANEL_TIMELINE_LABEL 11 /* columns of row labels */

/* Compact form: one row per device (rank k), each cell the phase that took most of its time
 * (rare phases, the all-reduce among them, first), or the host's waits (sync = true). */
static void panel_timeline_row(struct panel *p, int y, unsigned k, bool sync, int x0, int width,
                               const struct ui_frame *f) {
    static enum ev_phase_id cells[UI_PAINT_MAX_COLS];
    uint64_t t1 = f->now_ns, t0 = t1 > f->window_ns ? t1 - f->window_ns : 0;
    unsigned dev = ui_dev_index(f->run, k);
    ui_model_paint(f->model, dev, sync, t0, t1, width, cells);
    if (sync)
        w_text(p->win, y, 1, x0 - 1, THEME_DIM, f, "wait");
    else
        w_text(p->win, y, 1, x0 - 1, k == f->gpu ? THEME_TITLE : THEME_DIM, f, "dev%u%s", dev,
               k == f->gpu && f->n_snaps > 1 ? "*" : "");
    struct w_row row;
    w_row_begin(&row, p->win, y, x0, f);
    for (int x = 0; x < width; x++) {
        if (cells[x] == PHASE_COUNT)
            w_row_put(&row, THEME_DIM, f->utf8 ? "\u00b7" : " ");
        else
            w_row_putc(&row, THEME_PHASE0 + cells[x], ev_phase_name(cells[x])[0]);
    }
    w_row_end(&row);
}

/* One Gantt row of the full form: how much of each cell the phase took, as a level glyph (in
 * ASCII its first letter); any activity shows, however brief. */
static void panel_timeline_gantt_row(struct panel *p, int y, int ph, int x0, int width,
                                     const uint64_t (*cell_ns)[PHASE_COUNT], double cell,
                                     const struct ui_frame *f) {
    bool now = f->snap->phase == (enum ev_phase_id)ph;
    w_text(p->win, y, 1, x0 - 2, now ? THEME_ACCENT : THEME_DIM, f, "%s%s",
           ph == PHASE_SYNC ? "wait" : ev_phase_name((unsigned)ph), now ? " <" : "");
    struct w_row row;
    w_row_begin(&row, p->win, y, x0, f);
    for (int x = 0; x < width; x++) {
        uint64_t ns = cell_ns[x][ph];
        if (!ns) {
            w_row_put(&row, THEME_DIM, f->utf8 ? "\u00b7" : " ");
            continue;
        }
        int level = (int)((double)ns / cell * 8.0);
        level = level < 1 ? 1 : level > 8 ? 8 : level;
        if (f->utf8)
            w_row_put(&row, THEME_PHASE0 + ph, w_level_glyph(level - 1, true));
        else
            w_row_putc(&row, THEME_PHASE0 + ph, ev_phase_name((unsigned)ph)[0]);
    }
    w_row_end(&row);
}

/* Cells in which phase ph was active. */
static int panel_timeline_cells(const uint64_t (*cell_ns)[PHASE_COUNT], int width, int ph) {
    int n = 0;
    for (int x = 0; x < width; x++)
        n += cell_ns[x][ph] != 0;
    return n;
}

/* The phases active in the window, in phase order with the host's waits last; when more than
 * rows are active, those active in the fewest cells are left out (*dropped counts them). */
static int panel_timeline_active(const uint64_t (*cell_ns)[PHASE_COUNT], int width, int rows,
                                 int *out, int *dropped) {
    int cells[PHASE_COUNT], n = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        cells[ph] = panel_timeline_cells(cell_ns, width, ph);
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        n += cells[ph] > 0;
    *dropped = 0;
    while (n > rows) { /* drop the least active */
        int worst = -1;
        for (int ph = 0; ph < PHASE_COUNT; ph++)
            if (cells[ph] > 0 && (worst < 0 || cells[ph] < cells[worst]))
                worst = ph;
        cells[worst] = 0;
        n--;
        (*dropped)++;
    }
    n = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        if (cells[ph] > 0 && ph != PHASE_SYNC)
            out[n++] = ph;
    if (cells[PHASE_SYNC] > 0)
        out[n++] = PHASE_SYNC;
    return n;
}

/* Full form for the selected device: a row per active phase. Returns the next row, or -1 when
 * fewer than 3 rows are available (the caller then draws the compact form). */
static int panel_timeline_gantt(struct panel *p, int y, int rows, int x0, int width, int *dropped,
                                const struct ui_frame *f) {
    *dropped = 0;
    if (rows < 3)
        return -1;
    uint64_t t1 = f->now_ns, t0 = t1 > f->window_ns ? t1 - f->window_ns : 0;
    const uint64_t(*cell_ns)[PHASE_COUNT] =
        ui_model_cell_times(f->model, ui_dev_index(f->run, f->gpu), t0, t1, width);
    int active[PHASE_COUNT], n = panel_timeline_active(cell_ns, width, rows, active, dropped);
    double cell = (double)(t1 - t0) / width;
    for (int k = 0; k < n; k++)
        panel_timeline_gantt_row(p, y++, active[k], x0, width, cell_ns, cell, f);
    return y;
}

/* The kernel log's failures in the window: a letter per cell (the most severe there), coloured
 * by severity. */
static void panel_timeline_kernel_row(struct panel *p, int y, int x0, int width,
                                      const struct ui_mark *marks, const struct ui_frame *f) {
    w_text(p->win, y, 1, x0 - 2, THEME_WARN, f, "kernel");
    struct w_row row;
    w_row_begin(&row, p->win, y, x0, f);
    for (int x = 0; x < width; x++) {
        const struct ui_mark *m = &marks[x];
        if (m->category == KMSG_CAT_NONE) {
            w_row_put(&row, THEME_DIM, f->utf8 ? "\u00b7" : " ");
            continue;
        }
        enum theme_role r = m->severity == SEV_ERROR     ? THEME_ERROR
                            : m->severity == SEV_WARNING ? THEME_WARN
                                                         : THEME_DIM;
        w_row_putc(&row, r, ui_kmsg_letter(m->category));
    }
    w_row_end(&row);
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

/* The title: the selected device, the span, the kernel failures, "+N more" devices, the
 * quiet phases hidden and the zoom keys. Where the title row is short the keys go first, then
 * the phases, then the kernel count: the device mark stays. */
static void panel_timeline_info(struct panel *p, unsigned hidden, size_t n_marks, int dropped,
                                const struct ui_frame *f) {
    char span[16], info[160], kinfo[24] = "", more[32] = "", quiet[40] = "";
    panel_timeline_span(f->window_ns, span, sizeof(span));
    if (hidden) {
        ui_devices_more(hidden, more, sizeof(more));
        snprintf(more + strlen(more), sizeof(more) - strlen(more), " (1-9)");
    }
    if (dropped)
        snprintf(quiet, sizeof(quiet), "%d quiet phase%s hidden", dropped, dropped == 1 ? "" : "s");
    int room = p->w - (int)strlen(panel_timeline_ops.title) - 11; /* as w_title shows info */
    for (int drop = 0; drop < 4; drop++) {
        if (n_marks && drop < 3)
            snprintf(kinfo, sizeof(kinfo), "kernel %zu", n_marks);
        else
            kinfo[0] = '\0';
        const char *parts[] = {kinfo, more, drop < 2 ? quiet : "", drop < 1 ? "< >" : ""};
        int at = snprintf(info, sizeof(info), "dev%u  last %s", ui_dev_index(f->run, f->gpu), span);
        for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
            if (parts[k][0] && (size_t)at < sizeof(info))
                at += snprintf(info + at, sizeof(info) - (size_t)at, "  %s", parts[k]);
        if (at <= room)
            break;
    }
    w_title(p->win, "timeline", info, p->focused, f);
}

static void panel_timeline_draw(struct panel *p, const struct ui_frame *f) {
    static struct ui_mark marks[UI_PAINT_MAX_COLS];
    int x0 = PANEL_TIMELINE_LABEL + 1, dropped = 0;
    int width = p->w - x0 - 1 < UI_PAINT_MAX_COLS ? p->w - x0 - 1 : UI_PAINT_MAX_COLS;
    uint64_t t1 = f->now_ns, t0 = t1 > f->window_ns ? t1 - f->window_ns : 0;
    size_t n_marks = ui_model_marks(f->model, t0, t1, width, marks);
    int kernel = n_marks > 0 && p->h >= 4; /* a row for the kernel log's failures */
    unsigned n = f->n_snaps > 1 ? f->n_snaps : 1, first = 0, shown = 1;
    /* several devices: a row each above the selected device's phase rows, where both fit */
    int group = n > 1 && p->h - 2 - kernel - (int)n >= 3 ? (int)n : 0;
    for (int d = 0; d < group; d++)
        panel_timeline_row(p, 1 + d, (unsigned)d, false, x0, width, f);
    int y = panel_timeline_gantt(p, 1 + group, p->h - 2 - kernel - group, x0, width, &dropped, f);
    bool compact = y < 0, legend = false;
    if (compact) { /* the dominant phase per device, and the host's waits */
        /* rows under the title: the devices come first, then the legend (under the axis),
         * then the selected device's waits */
        int left = p->h - 1 - 1 - kernel;
        first = ui_devices_window(n, left > 0 ? (unsigned)left : 1, f->gpu, &shown);
        left -= (int)shown;
        legend = left-- > 0;
        y = 1;
        for (unsigned d = first; d < first + shown; d++)
            panel_timeline_row(p, y++, d, false, x0, width, f);
        if (left > 0)
            panel_timeline_row(p, y++, f->gpu, true, x0, width, f);
    } else {
        shown = n;
    }
    if (kernel)
        panel_timeline_kernel_row(p, y++, x0, width, marks, f);
    panel_timeline_axis(p, y++, x0, width, f);
    if (compact && legend && y < p->h)
        panel_timeline_legend(p, y, f);
    panel_timeline_info(p, n - shown, (size_t)n_marks, dropped, f);
}

/* The title, a row a device (several), the phases a loop shows, the kernel row and the
 * axis. */
static int panel_timeline_rows(const struct panel *p, const struct ui_frame *f, int w) {
    (void)p;
    (void)w;
    return 1 + (f->n_snaps > 1 ? (int)f->n_snaps : 0) + 9 + 1 + 1;
}

const struct panel_ops panel_timeline_ops = {
    .name = "timeline",
    .title = "timeline",
    .help = "a row per device (a allreduce, c comm-init, t teardown), then a row per phase of the "
            "selected one: its share of each cell; wait: host blocked in a sync; kernel: "
            "driver failures (T timeout M MES R reset P fault S sq_intr K KFD X Xid ! fatal D "
            "other driver failure)",
    .min_h = 4,
    .pref_h = 13,
    .column = 1,
    .rows = panel_timeline_rows,
    .draw = panel_timeline_draw,
    .key = NULL,
};
