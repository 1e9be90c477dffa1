/* Timeline panel: a Gantt row of phases per device over the chosen span, what is under way
 * (the phase begun, the call in flight, a pause) drawn as it happens, a labelled time axis,
 * and what the loop does now. */
#include "tui/dashboard/panel.h"
#include "tui/dashboard/widgets.h"
#include "tui/view/ui_devices.h"
#include "tui/view/ui_timeline.h"

#include <stdio.h>
#include <string.h>

static void panel_timeline_span(uint64_t ns, char *buf, size_t n) {
    if (ns >= 60000000000ull)
        snprintf(buf, n, "%llu min", (unsigned long long)(ns / 60000000000ull));
    else
        snprintf(buf, n, "%llu s", (unsigned long long)(ns / 1000000000ull));
}

#define PANEL_TIMELINE_LABEL 11 /* columns of row labels */

/* The window's edges: the span up to now. */
static void panel_timeline_window(const struct ui_frame *f, uint64_t *t0, uint64_t *t1) {
    *t1 = f->now_ns;
    *t0 = *t1 > f->window_ns ? *t1 - f->window_ns : 0;
}

/* Rank k's snapshot (NULL where the source has none). */
static const struct engine_snap *panel_timeline_snap(const struct ui_frame *f, unsigned k) {
    if (k < f->n_snaps && f->snaps[k])
        return f->snaps[k];
    return k == 0 ? f->snap : NULL;
}

/* What is under way on rank k: its phase, and the selected device's sync in flight. */
static struct ui_live panel_timeline_live(const struct ui_frame *f, unsigned k) {
    return ui_timeline_live(panel_timeline_snap(f, k),
                            k == f->gpu && f->has_inflight ? &f->inflight : NULL);
}

/* The cell the selected device's sync in flight began in (0 when before the window), or
 * width when none is in flight. */
static int panel_timeline_sync_cell(const struct ui_frame *f, int width) {
    uint64_t t0, t1;
    panel_timeline_window(f, &t0, &t1);
    if (!f->has_inflight || t1 <= t0)
        return width;
    if (f->inflight.start_ns <= t0)
        return 0;
    int x = (int)((double)(f->inflight.start_ns - t0) / ((double)(t1 - t0) / width));
    return x < width ? x : width - 1;
}

/* The wait row's label into buf: "wait", or "SLOW 1.2s" / "HANG 42s" while the sync in flight
 * is past --sync-slow / --sync-timeout. Returns its role (the cells of the call in flight take
 * it too), THEME_DIM when all is well. */
static enum theme_role panel_timeline_wait_label(const struct ui_frame *f, char *buf, size_t n) {
    uint64_t age;
    enum ui_watch w = ui_frame_watch(f, &age);
    if (w == UI_WATCH_OK) {
        snprintf(buf, n, "%s", ev_phase_label(PHASE_SYNC));
        return THEME_DIM;
    }
    char a[8];
    ui_timeline_age(a, sizeof(a), age);
    snprintf(buf, n, "%s %s", w == UI_WATCH_HANG ? "HANG" : "SLOW", a);
    return w == UI_WATCH_HANG ? THEME_ERROR : THEME_WARN;
}

/* Compact form: one row per device (rank k), each cell the phase that took most of its time,
 * or the host's waits (sync = true) with the call in flight in its watchdog role; the cells'
 * phases are counted into seen for the legend. */
static void panel_timeline_row(struct panel *p, int y, unsigned k, bool sync, int x0, int width,
                               const struct ui_frame *f, unsigned seen[PHASE_COUNT]) {
    static enum ev_phase_id cells[UI_PAINT_MAX_COLS];
    uint64_t t0, t1;
    panel_timeline_window(f, &t0, &t1);
    unsigned dev = ui_dev_index(f->run, k);
    struct ui_live live = panel_timeline_live(f, k);
    ui_model_paint(f->model, dev, sync, &live, t0, t1, width, cells);
    enum theme_role alarm = THEME_DIM;
    int from = width;
    if (sync) {
        char lab[24];
        alarm = panel_timeline_wait_label(f, lab, sizeof(lab));
        from = alarm == THEME_DIM ? width : panel_timeline_sync_cell(f, width);
        w_text(p->win, y, 1, x0 - 1, alarm, f, "%s", lab);
    } else {
        char nm[PANEL_TIMELINE_LABEL + 1];
        bool star = k == f->gpu && f->n_snaps > 1;
        /* its name, the star and a blank column before the cells */
        ui_devices_name_fit(f->run, k, x0 - 2 - star, nm, sizeof(nm));
        w_text(p->win, y, 1, x0 - 1, k == f->gpu ? THEME_TITLE : THEME_DIM, f, "%s%s", nm,
               star ? "*" : "");
    }
    struct w_row row;
    w_row_begin(&row, p->win, y, x0, f);
    for (int x = 0; x < width; x++) {
        if (cells[x] == PHASE_COUNT) {
            w_row_put(&row, THEME_DIM, f->utf8 ? "\u00b7" : " ");
            continue;
        }
        seen[cells[x]]++;
        w_row_putc(&row, x >= from ? alarm : THEME_PHASE0 + cells[x], ev_phase_letter(cells[x]));
    }
    w_row_end(&row);
}

/* Whether the full form marks phase ph's row as the phase now: the selected device's phase,
 * or within its steps (and in no phase of its own) each of a step's phases. */
static bool panel_timeline_is_now(const struct ui_frame *f, int ph) {
    const struct engine_snap *s = ui_frame_sel(f);
    if (s->phase < PHASE_COUNT && s->phase != PHASE_SYNC)
        return s->phase == (enum ev_phase_id)ph;
    return s->in_steps && (ph == PHASE_H2D || ph == PHASE_FORWARD || ph == PHASE_BACKWARD ||
                           ph == PHASE_OPTIMIZER || ph == PHASE_ALLREDUCE);
}

/* One Gantt row of the full form: how much of each cell the phase took, as a level glyph (in
 * ASCII its letter); any activity shows, however brief. The wait row says a call in flight
 * past the thresholds, and draws its cells in that role. */
static void panel_timeline_gantt_row(struct panel *p, int y, int ph, int x0, int width,
                                     const uint64_t (*cell_ns)[PHASE_COUNT], double cell,
                                     const struct ui_frame *f) {
    bool now = panel_timeline_is_now(f, ph);
    char lab[24];
    enum theme_role alarm = THEME_DIM;
    int from = width;
    if (ph == PHASE_SYNC) {
        alarm = panel_timeline_wait_label(f, lab, sizeof(lab));
        from = alarm == THEME_DIM ? width : panel_timeline_sync_cell(f, width);
    } else {
        const char *l = ev_phase_label((unsigned)ph);
        int room = x0 - 2 - (int)strlen(l); /* the mark as fits: " <", "<", or the colour alone */
        snprintf(lab, sizeof(lab), "%s%s", l, !now ? "" : room >= 2 ? " <" : room == 1 ? "<" : "");
    }
    w_text(p->win, y, 1, x0 - 2,
           alarm != THEME_DIM ? alarm
           : now              ? THEME_ACCENT
                              : THEME_DIM,
           f, "%s", lab);
    struct w_row row;
    w_row_begin(&row, p->win, y, x0, f);
    for (int x = 0; x < width; x++) {
        uint64_t ns = cell_ns[x][ph];
        if (!ns) {
            w_row_put(&row, THEME_DIM, f->utf8 ? "\u00b7" : " ");
            continue;
        }
        int level = (int)((double)ns / cell * 8.0 + 0.5); /* the nearest eighth */
        level = level < 1 ? 1 : level > 8 ? 8 : level;
        enum theme_role r = x >= from ? alarm : (enum theme_role)(THEME_PHASE0 + ph);
        if (f->utf8)
            w_row_put(&row, r, w_level_glyph(level - 1, true));
        else
            w_row_putc(&row, r, ev_phase_letter((unsigned)ph));
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
 * rows are active, those active in the fewest cells are left out (*dropped counts them), but
 * never the phases under way (pinned: the phase now, the waits of a sync in flight). */
static int panel_timeline_active(const uint64_t (*cell_ns)[PHASE_COUNT], int width, int rows,
                                 const bool pinned[PHASE_COUNT], int *out, int *dropped) {
    int cells[PHASE_COUNT], n = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        cells[ph] = panel_timeline_cells(cell_ns, width, ph);
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        n += cells[ph] > 0;
    *dropped = 0;
    while (n > rows) { /* drop the least active */
        int worst = -1;
        for (int ph = 0; ph < PHASE_COUNT; ph++)
            if (cells[ph] > 0 && !pinned[ph] && (worst < 0 || cells[ph] < cells[worst]))
                worst = ph;
        if (worst < 0)
            break;
        cells[worst] = 0;
        n--;
        (*dropped)++;
    }
    n = 0;
    for (int ph = 0; ph < PHASE_COUNT && n < rows; ph++)
        if (cells[ph] > 0 && ph != PHASE_SYNC)
            out[n++] = ph;
    if (cells[PHASE_SYNC] > 0 && n < rows)
        out[n++] = PHASE_SYNC;
    return n;
}

/* Full form for the selected device: a row per active phase, what is under way painted up
 * to now. Returns the next row, or -1 when fewer than 3 rows are available (the caller then
 * draws the compact form). */
static int panel_timeline_gantt(struct panel *p, int y, int rows, int x0, int width, int *dropped,
                                const struct ui_frame *f) {
    *dropped = 0;
    if (rows < 3)
        return -1;
    uint64_t t0, t1;
    panel_timeline_window(f, &t0, &t1);
    struct ui_live live = panel_timeline_live(f, f->gpu);
    const uint64_t(*cell_ns)[PHASE_COUNT] =
        ui_model_cell_times(f->model, ui_dev_index(f->run, f->gpu), &live, t0, t1, width);
    bool pinned[PHASE_COUNT] = {false};
    if (live.phase < PHASE_COUNT)
        pinned[live.phase] = true;
    pinned[PHASE_SYNC] = live.has_sync;
    int active[PHASE_COUNT];
    int n = panel_timeline_active(cell_ns, width, rows, pinned, active, dropped);
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
        w_row_putc(&row, r, kmsg_category_letter(m->category));
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

/* What the selected device does now, highlighted, then a legend of the letters the rows show,
 * most shown first: named while the line has room, the rest by their letters alone. */
static void panel_timeline_legend(struct panel *p, int y, const unsigned seen[PHASE_COUNT],
                                  const struct ui_frame *f) {
    char now[40];
    enum ev_phase_id cur = ui_timeline_now(ui_frame_sel(f), f->now_ns, now, sizeof(now));
    enum theme_role r = cur < PHASE_COUNT           ? THEME_PHASE0 + cur
                        : ui_frame_sel(f)->in_steps ? THEME_TITLE
                                                    : THEME_DIM;
    w_text(p->win, y, 1, 4, THEME_DIM, f, "now ");
    w_text(p->win, y, 5, p->w - 6, r, f, " %s ", now);
    int x = 5 + (int)strlen(now) + 3;
    enum ev_phase_id ph[PHASE_COUNT];
    int n = ui_timeline_legend(seen, ph);
    int named = ui_timeline_named(ph, n, p->w - 1 - x);
    for (int k = 0; k < n && x + 1 < p->w; k++) {
        w_text(p->win, y, x, 1, THEME_PHASE0 + ph[k], f, "%c", ev_phase_letter(ph[k]));
        const char *label = k < named ? ev_phase_label(ph[k]) : "";
        w_text(p->win, y, x + 1, p->w - 2 - x, THEME_DIM, f, " %s", label);
        x += 2 + (k < named ? (int)strlen(label) + 1 : 0);
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
        char nm[96];
        ui_devices_name(f->run, f->gpu, true, nm, sizeof(nm));
        int at = snprintf(info, sizeof(info), "%s  last %s", nm, span);
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
    uint64_t t0, t1;
    panel_timeline_window(f, &t0, &t1);
    size_t n_marks = ui_model_marks(f->model, t0, t1, width, marks);
    int kernel = n_marks > 0 && p->h >= 4; /* a row for the kernel log's failures */
    unsigned n = f->n_snaps > 1 ? f->n_snaps : 1, first = 0, shown = 1;
    /* several devices: a row each above the selected device's phase rows, where both fit */
    int group = n > 1 && p->h - 2 - kernel - (int)n >= 3 ? (int)n : 0;
    unsigned seen[PHASE_COUNT] = {0};
    for (int d = 0; d < group; d++)
        panel_timeline_row(p, 1 + d, (unsigned)d, false, x0, width, f, seen);
    int y = panel_timeline_gantt(p, 1 + group, p->h - 2 - kernel - group, x0, width, &dropped, f);
    struct ui_timeline_rows rows = {.axis = true};
    if (y < 0) { /* compact: the phase that took most of each cell per device, and the waits */
        uint64_t age;
        rows = ui_timeline_compact(p->h - 1 - kernel, n, ui_frame_watch(f, &age) != UI_WATCH_OK);
        first = ui_devices_window(n, rows.devices, f->gpu, &shown);
        y = 1;
        for (unsigned d = first; d < first + shown; d++)
            panel_timeline_row(p, y++, d, false, x0, width, f, seen);
        if (rows.wait)
            panel_timeline_row(p, y++, f->gpu, true, x0, width, f, seen);
    } else {
        shown = n;
    }
    if (kernel)
        panel_timeline_kernel_row(p, y++, x0, width, marks, f);
    if (rows.axis)
        panel_timeline_axis(p, y++, x0, width, f);
    if (rows.legend && y < p->h)
        panel_timeline_legend(p, y, seen, f);
    panel_timeline_info(p, n - shown, (size_t)n_marks, dropped, f);
}

/* The title, a row a device (several), a row for each phase of the span (and for the one
 * under way and the wait in flight), the kernel row and the axis. */
static int panel_timeline_rows(const struct panel *p, const struct ui_frame *f, int w) {
    (void)p;
    (void)w;
    uint64_t t1 = f->now_ns, t0 = t1 > f->window_ns ? t1 - f->window_ns : 0;
    int phases = ui_model_phases_since(f->model, ui_dev_index(f->run, f->gpu), t0) + 1;
    phases = phases > PHASE_COUNT ? PHASE_COUNT : phases < 3 ? 3 : phases;
    const struct ui_model *m = f->model;
    bool kernel =
        m->mark_count > 0 && m->marks[(m->mark_head + UI_MARKS - 1) % UI_MARKS].t_ns >= t0;
    return 1 + (f->n_snaps > 1 ? (int)f->n_snaps : 0) + phases + kernel + 1;
}

/* The letters for the help, from the phase table: " l load v vpoc ...". */
#define PANEL_TIMELINE_KEY(id, name, letter, label) " " letter " " label
#define PANEL_TIMELINE_LETTERS                      EV_PHASES(PANEL_TIMELINE_KEY)

const struct panel_ops panel_timeline_ops = {
    .name = "timeline",
    .title = "timeline",
    .help = "a row per device, each cell the phase that took most of its time, what is under way "
            "drawn up to now (" PANEL_TIMELINE_LETTERS " ), then a row per phase of the selected "
            "one: its share of each cell; wait: the host blocked in a sync, SLOW or HANG and its "
            "age past the thresholds; kernel: driver failures (T timeout M MES R reset P fault S "
            "sq_intr K KFD X Xid ! fatal D other driver failure)",
    .min_h = 4,
    .pref_h = 13,
    .column = 1,
    .rows = panel_timeline_rows,
    .draw = panel_timeline_draw,
    .key = NULL,
};
