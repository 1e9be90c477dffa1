/* Sync panel: every synchronize's latency per op, a histogram of the busiest op, and the
 * synchronize in flight coloured ok / slow / HANG; with several training devices, a line per
 * device (syncs, all-reduce calls, step time) and the step-time skew between them first. */
#include "tui/dashboard/panel.h"
#include "tui/dashboard/widgets.h"
#include "tui/view/ui_devices.h"

#include <stdio.h>
#include <string.h>

static const char *const panel_sync_watch_names[] = {"ok", "SLOW", "HANG"};

static void panel_sync_table(struct panel *p, int *y, const struct ui_frame *f) {
    int w = p->w - 2;
    w_text(p->win, (*y)++, 1, w, THEME_DIM, f, "%-7s %9s %9s %9s %9s %9s", "op", "count", "p50",
           "p90", "p99", "max");
    for (unsigned op = 0; op < SYNC_OP_COUNT && *y < p->h; op++) {
        const struct trace_sync_summary *s = &ui_frame_sel(f)->sync[op];
        char p50[16], p90[16], p99[16], mx[16];
        ui_fmt_ns(p50, sizeof(p50), s->p50_ns);
        ui_fmt_ns(p90, sizeof(p90), s->p90_ns);
        ui_fmt_ns(p99, sizeof(p99), s->p99_ns);
        ui_fmt_ns(mx, sizeof(mx), s->max_ns);
        if (s->count == 0)
            w_text(p->win, (*y)++, 1, w, THEME_DIM, f, "%-7s %9s %9s %9s %9s %9s",
                   ev_sync_op_name(op), "0", "-", "-", "-", "-");
        else
            w_text(p->win, (*y)++, 1, w, THEME_TEXT, f, "%-7s %9llu %9s %9s %9s %9s",
                   ev_sync_op_name(op), (unsigned long long)s->count, p50, p90, p99, mx);
    }
}

/* Log-spaced histogram (1 us .. 10 s) of the op with the most kept samples. */
static void panel_sync_hist(struct panel *p, int y, const struct ui_frame *f) {
    unsigned best = 0;
    for (unsigned op = 1; op < SYNC_OP_COUNT; op++)
        if (f->model->sync_n[op] > f->model->sync_n[best])
            best = op;
    unsigned bins[64];
    int n = p->w - 24 < 64 ? p->w - 24 : 64;
    if (n < 8 || ui_model_sync_hist(f->model, best, 1000, 10000000000ull, bins, n) == 0)
        return;
    unsigned top = 1;
    for (int b = 0; b < n; b++)
        top = bins[b] > top ? bins[b] : top;
    w_text(p->win, y, 1, 14, THEME_DIM, f, "%-6s 1us", ev_sync_op_name(best));
    struct w_row row;
    w_row_begin(&row, p->win, y, 12, f);
    for (int b = 0; b < n; b++)
        w_row_put(&row, bins[b] ? THEME_ACCENT : THEME_DIM,
                  bins[b] ? w_level_glyph((int)(bins[b] * 7 / top), f->utf8) : " ");
    w_row_end(&row);
    w_text(p->win, y, 12 + n, 5, THEME_DIM, f, " 10s");
}

static void panel_sync_inflight(struct panel *p, int y, const struct ui_frame *f) {
    uint64_t age;
    enum ui_watch st = ui_frame_watch(f, &age);
    if (!f->has_inflight) {
        w_text(p->win, y, 1, p->w - 2, THEME_DIM, f, "in flight: none");
        return;
    }
    char a[16];
    ui_fmt_ns(a, sizeof(a), age);
    enum theme_role r = st == UI_WATCH_HANG   ? THEME_ERROR
                        : st == UI_WATCH_SLOW ? THEME_WARN
                                              : THEME_OK;
    if (f->inflight.coll != EV_COLL_NONE && f->inflight.coll < EV_COLL_COUNT) {
        char num[24] = "";
        if (f->inflight.coll_seq)
            snprintf(num, sizeof(num), " #%llu", (unsigned long long)f->inflight.coll_seq);
        w_text(p->win, y, 1, p->w - 2, r, f, "in flight: %s%s for %s  [%s]",
               ev_coll_op_name(f->inflight.coll), num, a, panel_sync_watch_names[st]);
        return;
    }
    w_text(p->win, y, 1, p->w - 2, r, f, "in flight: %s sync in %s for %s  [%s]",
           ev_sync_op_name(f->inflight.op), ev_phase_name(f->inflight.phase), a,
           panel_sync_watch_names[st]);
}

/* While a sync is slow or hung: the latest kernel-log failures, the driver's side of the
 * story (the 'k' key opens the newest), or why there are none to show. */
static void panel_sync_driver(struct panel *p, int y, const struct ui_frame *f) {
    int shown = 0;
    const struct ui_event *e;
    for (size_t k = 0; y < p->h && shown < 2 && (e = ui_model_event(f->model, k)); k++) {
        if (e->category != UI_CAT_KERNEL)
            continue;
        char when[16];
        uint64_t t0 = f->run->start_ns;
        ui_fmt_hms(when, sizeof(when), (double)(e->t_ns > t0 ? e->t_ns - t0 : 0) / 1e9);
        w_text(p->win, y++, 1, p->w - 2, e->severity == SEV_ERROR ? THEME_ERROR : THEME_WARN, f,
               "driver %s %s%s", when, e->text, shown ? "" : "  (k: details)");
        shown++;
    }
    if (shown == 0 && y < p->h) {
        bool off = !f->has_kmsg || f->kmsg.state == KMSG_STATE_OFF ||
                   f->kmsg.state == KMSG_STATE_UNREADABLE;
        w_text(p->win, y, 1, p->w - 2, THEME_DIM, f, "%s",
               off ? "driver: the kernel log is not read (see the events panel)"
                   : "driver: no kernel-log failure so far");
    }
}

/* Ops by descending count, one line each with its own labels. */
static void panel_sync_compact(struct panel *p, int y, const struct ui_frame *f) {
    bool shown[SYNC_OP_COUNT] = {false};
    for (; y < p->h; y++) {
        int best = -1;
        for (unsigned op = 0; op < SYNC_OP_COUNT; op++)
            if (!shown[op] && f->snap->sync[op].count > 0 &&
                (best < 0 || f->snap->sync[op].count > f->snap->sync[best].count))
                best = (int)op;
        if (best < 0)
            return;
        shown[best] = true;
        const struct trace_sync_summary *s = &f->snap->sync[best];
        char p50[16], p99[16], mx[16];
        ui_fmt_ns(p50, sizeof(p50), s->p50_ns);
        ui_fmt_ns(p99, sizeof(p99), s->p99_ns);
        ui_fmt_ns(mx, sizeof(mx), s->max_ns);
        w_text(p->win, y, 1, p->w - 2, THEME_TEXT, f, "%-6s x%llu  p50 %s  p99 %s  max %s",
               ev_sync_op_name((unsigned)best), (unsigned long long)s->count, p50, p99, mx);
    }
}

/* Several devices: the skew line where two device lines still fit under it, then a line per
 * device (a window around the selected one); when some are left out, the last line shown
 * carries "+N more" at its right end, so the mark is there whatever the rows. Returns the
 * next row. */
static int panel_sync_devices(struct panel *p, int y, int rows, const struct ui_frame *f) {
    char line[512];
    struct ui_skew sk;
    if (rows <= 0)
        return y;
    /* the skew line where two device lines still fit under it: else the devices' own lines
     * (their step times) say it */
    unsigned n = f->n_snaps;
    bool skew = rows >= 3;
    if (skew && ui_devices_skew(f->snaps, f->n_snaps, &sk)) {
        ui_devices_skew_line(&sk, f->run, line, sizeof(line));
        w_text(p->win, y++, 1, p->w - 2, THEME_TEXT, f, "%s", line);
        rows--;
    } else if (skew) {
        w_text(p->win, y++, 1, p->w - 2, THEME_DIM, f, "step skew: n/a until every device steps");
        rows--;
    }
    unsigned shown;
    unsigned first = ui_devices_window(n, (unsigned)rows, f->gpu, &shown);
    char more[32] = "";
    if (shown < n) {
        ui_devices_more(n - shown, more, sizeof(more));
        snprintf(more + strlen(more), sizeof(more) - strlen(more), " (1-9)");
    }
    int mw = more[0] ? (int)strlen(more) + 2 : 0, name_w = 0;
    for (unsigned k = first; k < first + shown; k++) { /* the names in one column */
        char nm[96];
        int l = ui_devices_name(f->run, k, true, nm, sizeof(nm));
        name_w = l > name_w ? l : name_w;
    }
    for (unsigned k = first; k < first + shown; k++) {
        bool last = k + 1 == first + shown;
        ui_devices_sync_line(f->snaps[k], f->run, k, name_w, k == f->gpu,
                             p->w - 2 - (last ? mw : 0), line, sizeof(line));
        w_text(p->win, y, 1, p->w - 2 - (last ? mw : 0), k == f->gpu ? THEME_TITLE : THEME_TEXT, f,
               "%s", line);
        if (last && mw)
            w_text(p->win, y, p->w - mw, mw, THEME_DIM, f, " %s", more);
        y++;
    }
    return y;
}

static void panel_sync_draw(struct panel *p, const struct ui_frame *f) {
    uint64_t age;
    enum ui_watch st = ui_frame_watch(f, &age);
    char info[64], slow[16], hang[16];
    ui_fmt_ns(slow, sizeof(slow), f->sync_slow_ns);
    ui_fmt_ns(hang, sizeof(hang), f->sync_timeout_ns);
    snprintf(info, sizeof(info), "%s  slow > %s  hang > %s", panel_sync_watch_names[st], slow,
             hang);
    w_title(p->win, "synchronize", info, p->focused, f);
    int y = 1;
    if (f->n_snaps > 1) { /* the in-flight line, the devices, then the selected one's ops */
        panel_sync_inflight(p, y++, f);
        if (st != UI_WATCH_OK && y + 2 < p->h) { /* the driver's side: two rows, a device's kept */
            panel_sync_driver(p, y, f);
            y += 2;
        }
        y = panel_sync_devices(p, y, p->h - y, f);
        if (p->h - y >= SYNC_OP_COUNT + 1)
            panel_sync_table(p, &y, f);
        if (y < p->h)
            panel_sync_hist(p, y, f);
        return;
    }
    if (p->h <= 5) { /* compact: the watch line, then the busiest ops, self-labelled */
        panel_sync_inflight(p, y++, f);
        if (st != UI_WATCH_OK)
            panel_sync_driver(p, y, f);
        else
            panel_sync_compact(p, y, f);
        return;
    }
    /* full: what is in flight first (the row that says HANG is never the one cut), the
     * driver's side while it is not ok, the table, then the histogram */
    panel_sync_inflight(p, y++, f);
    if (st != UI_WATCH_OK && y + 2 < p->h) {
        panel_sync_driver(p, y, f);
        y += 2;
    }
    panel_sync_table(p, &y, f);
    if (y < p->h)
        panel_sync_hist(p, y++, f);
}

/* The title, the in-flight row, the driver's two while not ok, the table (its header and an
 * op a row) and the histogram; several devices add the skew and a row each. */
static int panel_sync_rows(const struct panel *p, const struct ui_frame *f, int w) {
    (void)p;
    (void)w;
    uint64_t age;
    int driver = ui_frame_watch(f, &age) != UI_WATCH_OK ? 2 : 0;
    int devices = f->n_snaps > 1 ? 1 + (int)f->n_snaps : 0;
    return 1 + 1 + driver + devices + 1 + SYNC_OP_COUNT + 1;
}

const struct panel_ops panel_sync_ops = {
    .name = "sync",
    .title = "synchronize",
    .help = "latency per op, histogram; in flight: ok, SLOW, HANG, with the latest driver "
            "failures while a sync is slow or hung",
    .min_h = 4,
    .pref_h = 8,
    .column = 1,
    .rows = panel_sync_rows,
    .draw = panel_sync_draw,
    .key = NULL,
};
