/* The dashboard's chrome: header, footer and the too-small message, and giving each panel its
 * window after a layout; the overlays over it are app_overlay.c's. */
#include "backend/core/mono.h"
#include "tui/dashboard/app_internal.h"
#include "tui/dashboard/widgets.h"
#include "tui/view/ui_devices.h"

#include <stdio.h>
#include <string.h>

void app_free_windows(struct app *a) {
    for (int k = 0; k < APP_PANELS; k++) {
        if (a->panels[k].win)
            delwin(a->panels[k].win);
        a->panels[k].win = NULL;
    }
    if (a->header)
        delwin(a->header);
    if (a->footer)
        delwin(a->footer);
    a->header = a->footer = NULL;
}

static WINDOW *app_window(struct ui_rect r) {
    return r.h > 0 && r.w > 0 ? newwin(r.h, r.w, r.y, r.x) : NULL;
}

/* The layout's items for the panels, from their ops and what they hold now. */
static void app_layout_items(struct app *a, struct layout_item *items) {
    for (int k = 0; k < APP_PANELS; k++)
        items[k] = panel_layout_item(&a->panels[k], &a->frame, LINES, COLS);
}

static void app_layout_apply(struct app *a, const struct layout_out *lay,
                             const struct ui_rect *rects) {
    app_free_windows(a);
    erase();
    wnoutrefresh(stdscr);
    a->lay = *lay;
    memcpy(a->rects, rects, sizeof(a->rects));
    if (a->lay.too_small)
        return;
    a->header = app_window(a->lay.header);
    a->footer = app_window(a->lay.footer);
    for (int k = 0; k < APP_PANELS; k++) {
        struct panel *p = &a->panels[k];
        p->win = app_window(a->rects[k]);
        p->h = a->rects[k].h;
        p->w = a->rects[k].w;
    }
}

void app_relayout(struct app *a) {
    struct layout_item items[APP_PANELS];
    struct layout_out lay;
    struct ui_rect rects[APP_PANELS];
    app_layout_items(a, items);
    layout_compute(LINES, COLS, items, APP_PANELS, a->focus, &lay, rects);
    app_layout_apply(a, &lay, rects);
}

/* Panels size to what they hold (a GPU more, events arriving): a frame whose layout differs
 * from the one on screen makes the windows anew. */
static void app_layout_follow(struct app *a) {
    struct layout_item items[APP_PANELS];
    struct layout_out lay;
    struct ui_rect rects[APP_PANELS];
    app_layout_items(a, items);
    layout_compute(LINES, COLS, items, APP_PANELS, a->focus, &lay, rects);
    if (memcmp(rects, a->rects, sizeof(rects)) != 0 || lay.hidden != a->lay.hidden ||
        lay.too_small != a->lay.too_small)
        app_layout_apply(a, &lay, rects);
}

static void app_draw_state(struct app *a, WINDOW *w, int col, bool quitting) {
    const char *st = ui_frame_state(&a->frame, quitting);
    enum theme_role r = strcmp(st, "RUNNING") == 0 || strcmp(st, "FINISHED") == 0 ? THEME_OK
                        : strcmp(st, "HUNG") == 0 || strcmp(st, "FAILED") == 0    ? THEME_ERROR
                                                                                  : THEME_WARN;
    char el[16];
    ui_fmt_hms(el, sizeof(el), ui_frame_elapsed_s(&a->frame));
    w_text(w, 0, col, 10, r, &a->frame, " %-8s", st);
    w_text(w, 0, col + 10, 10, THEME_TEXT, &a->frame, " %s", el);
}

/* A run without an end (--epochs 0): the epoch and step, then the best validation loss and
 * how long ago it was, in the warning colour once it has not improved for 10 epochs. */
static void app_draw_open_progress(WINDOW *w, int cols, const struct ui_frame *f) {
    const struct engine_snap *s = f->snap;
    int n = snprintf(NULL, 0, "epoch %d  step %lld  until stopped", s->epoch, (long long)s->step);
    w_text(w, 1, 0, cols, THEME_TEXT, f, "epoch %d  step %lld  until stopped", s->epoch,
           (long long)s->step);
    if (!s->has_val || n + 4 >= cols)
        return;
    int32_t since = s->epoch - 1 - s->best_epoch; /* epochs evaluated since the best */
    since = since < 0 ? 0 : since;
    w_text(w, 1, n + 4, cols - n - 4, since >= 10 ? THEME_WARN : THEME_DIM, f,
           since ? "best val %.4f at epoch %d, %d epoch%s ago" : "best val %.4f at epoch %d",
           s->best_val_loss, s->best_epoch, since, since == 1 ? "" : "s");
}

/* A job that did not tell its length (epochs and steps per epoch): where it is as it counts,
 * no fraction and no ETA made up, and what it would take to have them where there is room. */
static void app_draw_job_open(WINDOW *w, int cols, const struct ui_frame *f) {
    char at[96];
    const char *why = ui_header_job_at(f->snap, at, sizeof(at));
    int n = (int)strlen(at);
    w_text(w, 1, 0, cols, THEME_TEXT, f, "%s", at);
    if (n + 4 + (int)strlen(why) <= cols)
        w_text(w, 1, n + 4, cols - n - 4, THEME_DIM, f, "%s", why);
}

/* Whether the source has ended with something to say (a recording cut short, the line it
 * stopped at): said in full on the progress row, not cut in the run line. */
static bool app_ended_status(const struct ui_frame *f) {
    return f->source_done && f->source_status && f->source_status[0] &&
           strcmp(f->source_status, "replay finished") != 0;
}

static void app_draw_progress(struct app *a, WINDOW *w) {
    const struct engine_snap *s = a->frame.snap;
    const struct ui_frame *f = &a->frame;
    int cols = getmaxx(w);
    if (app_ended_status(f)) {
        int n = snprintf(NULL, 0, "epoch %d  step %lld  ", s->epoch, (long long)s->step);
        w_text(w, 1, 0, cols, THEME_TEXT, f, "epoch %d  step %lld  ", s->epoch, (long long)s->step);
        w_text(w, 1, n, cols - n, THEME_WARN, f, "%s", f->source_status);
        return;
    }
    if (s->job && s->total_steps <= 0) { /* a job that does not say how long it runs */
        app_draw_job_open(w, cols, f);
        return;
    }
    if (s->epochs <= 0) {
        app_draw_open_progress(w, cols, f);
        return;
    }
    if (s->total_steps <= 0) { /* the length of an epoch is not known yet */
        w_text(w, 1, 0, cols, THEME_TEXT, f, "epoch %d/%d  step %lld", s->epoch, s->epochs,
               (long long)s->step);
        return;
    }
    double frac = (double)s->step / (double)s->total_steps;
    frac = frac > 1 ? 1 : frac;
    double elapsed = ui_frame_elapsed_s(f);
    char eta[16] = "--:--:--";
    if (frac > 0.001 && s->state != ENGINE_FINISHED)
        ui_fmt_hms(eta, sizeof(eta), elapsed / frac - elapsed);
    char left[96];
    int n = snprintf(left, sizeof(left), "epoch %d/%d  step %lld/%lld ", s->epoch, s->epochs,
                     (long long)s->step, (long long)s->total_steps);
    w_text(w, 1, 0, cols, THEME_TEXT, f, "%s", left);
    int bar = cols - n - 20;
    if (bar > 40)
        bar = 40;
    if (bar > 4)
        w_bar(w, 1, n, bar, frac, THEME_GAUGE, f);
    w_text(w, 1, n + (bar > 4 ? bar : 0), cols - n, THEME_TEXT, f, " %3.0f%%  ETA %s", frac * 100.0,
           eta);
}

/* The loss line: loss (with its sparkline where there is room), val, chunk and the rates
 * always; VPOC progress where it fits and there are sessions to count. */
static void app_draw_losses(struct app *a, WINDOW *w) {
    const struct engine_snap *s = a->frame.snap;
    const struct ui_frame *f = &a->frame;
    int cols = getmaxx(w);
    char loss[24] = "n/a", vpoc[48] = "";
    if (s->has_loss)
        snprintf(loss, sizeof(loss), "%.4f", s->loss);
    char rest[192];
    int need = ui_header_rates(s, rest, sizeof(rest));
    if (s->sessions > 0)
        snprintf(vpoc, sizeof(vpoc), "  VPOC %zu/%zu", s->sessions_done, s->sessions);
    int spark = cols - 12 - need - 1 - (int)strlen(vpoc);
    if (spark < 8) { /* the VPOC count gives way first, then the sparkline shrinks */
        vpoc[0] = '\0';
        spark = cols - 12 - need - 1;
    }
    spark = spark > 16 ? 16 : spark < 0 ? 0 : spark;
    w_text(w, 2, 0, cols, THEME_TEXT, f, "loss %s ", loss);
    int x = 12;
    if (spark >= 4) {
        double v[64];
        size_t n = ui_series_last(&f->model->loss, v, (size_t)spark);
        w_spark(w, 2, x, spark, v, n, 0, THEME_ACCENT, f);
        x += spark;
    }
    w_text(w, 2, x, cols - x, THEME_TEXT, f, "%s%s", rest, vpoc);
}

static void app_draw_header(struct app *a, bool quitting) {
    WINDOW *w = a->header;
    const struct run_info *run = a->frame.run;
    int cols = getmaxx(w);
    werase(w);
    w_text(w, 0, 0, 8, THEME_TITLE, &a->frame, "ringside");
    char who[1024];
    int state_col = cols - 21 > 8 ? cols - 21 : 8;
    /* the run line gives way (marked) before the state and the clock do */
    ui_devices_header(run, a->frame.snaps, a->frame.n_snaps,
                      app_ended_status(&a->frame) ? "" : a->frame.source_status, state_col - 8 - 1,
                      who, sizeof(who));
    w_text(w, 0, 8, state_col - 8, THEME_DIM, &a->frame, "%s", who);
    app_draw_state(a, w, state_col, quitting);
    app_draw_progress(a, w);
    app_draw_losses(a, w);
    wnoutrefresh(w);
}

/* The key hints from the key map; those that act on the loop are greyed out where they do
 * nothing (a read-only attach), and the reason is said once there is room. */
static void app_draw_keys(struct app *a, WINDOW *w, int cols) {
    const struct run_info *run = a->frame.run;
    struct keymap_hint hints[KEYMAP_ROWS_MAX];
    size_t n = keymap_hints(a->where, hints, sizeof(hints) / sizeof(hints[0]));
    mvwaddnstr(w, 0, 0, " ", cols);
    /* whole hints only, as many as fit with the last one (the help's) kept */
    int last = n ? (int)strlen(hints[n - 1].keys) + 1 + (int)strlen(hints[n - 1].label) : 0;
    for (size_t k = 0; k < n; k++) {
        char hint[64];
        snprintf(hint, sizeof(hint), "%s %s%s", hints[k].keys, hints[k].label,
                 k + 1 < n ? "  " : "");
        int room = cols - getcurx(w) - (k + 1 < n ? last : 0);
        if ((int)strlen(hint) > room && k + 1 < n)
            continue;
        bool dim = hints[k].loop && run->control_off[0];
        if (dim)
            wattron(w, A_DIM);
        waddnstr(w, hint, cols - getcurx(w) > 0 ? cols - getcurx(w) : 0);
        if (dim)
            wattroff(w, A_DIM);
    }
    int room = cols - getcurx(w) - 2;
    if (run->control_off[0] && room > 12)
        mvwprintw(w, 0, cols - room, "  %.*s", room - 2, run->control_off);
}

static void app_draw_footer(struct app *a) {
    WINDOW *w = a->footer;
    int cols = getmaxx(w);
    bool notice = a->notice[0] && mono_now_ns() < a->notice_until_ns;
    werase(w);
    wattron(w, ui_attr(&a->frame, THEME_FOOTER));
    mvwhline(w, 0, 0, ' ', cols);
    char more[32] = "";
    if (a->lay.hidden > 0 && cols > 30)
        snprintf(more, sizeof(more), " +%d panel%s: Tab ", a->lay.hidden,
                 a->lay.hidden == 1 ? "" : "s");
    int keys = cols - (int)strlen(more); /* the keys stop short of the hidden panels' mark */
    if (notice)
        mvwaddnstr(w, 0, 0, a->notice, cols);
    else
        app_draw_keys(a, w, keys);
    if (more[0] && !notice)
        mvwaddnstr(w, 0, keys, more, cols - keys);
    wattroff(w, ui_attr(&a->frame, THEME_FOOTER));
    wnoutrefresh(w);
}

static void app_draw_too_small(void) {
    erase();
    const char *msg = "terminal too small";
    char need[64];
    snprintf(need, sizeof(need), "%dx%d, need %dx%d", COLS, LINES, LAYOUT_MIN_COLS,
             LAYOUT_MIN_ROWS);
    mvaddnstr(LINES / 2 - 1, (COLS - (int)strlen(msg)) / 2 > 0 ? (COLS - (int)strlen(msg)) / 2 : 0,
              msg, COLS);
    mvaddnstr(LINES / 2, (COLS - (int)strlen(need)) / 2 > 0 ? (COLS - (int)strlen(need)) / 2 : 0,
              need, COLS);
    wnoutrefresh(stdscr);
}

void app_draw_frame(struct app *a, bool quitting) {
    app_layout_follow(a);
    app_summary_follow(a);
    if (a->lay.too_small || !a->header) {
        app_draw_too_small();
        doupdate();
        return;
    }
    app_draw_header(a, quitting);
    for (int k = 0; k < APP_PANELS; k++) {
        struct panel *p = &a->panels[k];
        if (!p->win)
            continue;
        werase(p->win);
        p->ops->draw(p, &a->frame);
        wnoutrefresh(p->win);
    }
    app_draw_footer(a);
    app_draw_overlays(a);
    doupdate();
}
