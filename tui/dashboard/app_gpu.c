/* The GPU overlay: details of one GPU with the source of every value, the VRAM reconciliation
 * and the telemetry providers' diagnostics, drawn over the panels and scrolled with the keys. */
#include "tui/dashboard/app_internal.h"
#include "tui/dashboard/widgets.h"

#include <string.h>

#define APP_GPU_LINES 256

static struct gpu_view_line app_gpu_lines[APP_GPU_LINES];

static int app_gpu_selected(const struct app *a) {
    const struct ui_frame *f = &a->frame;
    int sel = panel_gpu_selected(&a->panels[APP_GPU_PANEL]);
    if (!f->tele || f->tele->n_gpus == 0)
        return -1;
    return sel >= 0 && (unsigned)sel < f->tele->n_gpus ? sel : 0;
}

bool app_gpu_overlay_key(struct app *a, int ch) {
    int n_gpus = a->frame.tele ? (int)a->frame.tele->n_gpus : 0;
    struct panel *gp = &a->panels[APP_GPU_PANEL];
    switch (ch) {
    case 27: /* Esc */
    case '\n':
    case KEY_ENTER:
    case 'g':
        a->gpu_overlay = false;
        return true;
    case '\t':
    case KEY_BTAB:
        a->gpu_page = (a->gpu_page + (ch == '\t' ? 1 : GPU_VIEW_PAGES - 1)) % GPU_VIEW_PAGES;
        a->gpu_tv.top = 0;
        return true;
    case KEY_LEFT:
    case KEY_RIGHT:
        if (n_gpus > 0)
            panel_gpu_select(gp, (panel_gpu_selected(gp) + (ch == KEY_RIGHT ? 1 : n_gpus - 1)) %
                                     n_gpus);
        a->gpu_tv.top = 0;
        return true;
    default:
        return app_overlay_scroll_key(&a->gpu_tv, ch);
    }
}

static void app_gpu_tabs(struct app *a, WINDOW *win, int w, int gpu) {
    const struct ui_frame *f = &a->frame;
    int x = 2;
    for (int p = 0; p < GPU_VIEW_PAGES && x < w - 2; p++) {
        const char *name = gpu_view_page_name((enum gpu_view_page)p);
        w_text(win, 0, x, w - 2 - x, p == (int)a->gpu_page ? THEME_ACCENT : THEME_DIM, f,
               p == (int)a->gpu_page ? "[ %s ]" : "  %s  ", name);
        x += (int)strlen(name) + 5;
    }
    if (gpu >= 0 && x < w - 12)
        w_text(win, 0, x, w - 2 - x, THEME_TITLE, f, " GPU %d (%u in all) ", gpu, f->tele->n_gpus);
}

/* The details page opens with the doctor section (D): the latest run's summary and its fail
 * and warn rows in up to a third of the overlay, then a blank line. */
static int app_gpu_doctor(struct app *a, int rows) {
    if (a->gpu_page != GPU_VIEW_DETAIL)
        return 0;
    const struct app_doctor *d = &a->doctor;
    int max = rows / 3 > 3 ? rows / 3 : 3;
    int n = gpu_view_doctor(d->last, d->when, d->running, app_gpu_lines, max);
    app_gpu_lines[n++] = (struct gpu_view_line){.role = THEME_DIM};
    return n;
}

/* The pages' lines continue 2 columns in past their own indentation. */
void app_draw_gpu_overlay(struct app *a) {
    static struct app_overlay_src src[APP_GPU_LINES];
    const struct ui_frame *f = &a->frame;
    int gpu = app_gpu_selected(a);
    int h = LINES - 4, w = COLS - 4;
    int n = app_gpu_doctor(a, h - 3);
    n += gpu_view_lines(f->tele, ui_frame_sel(f), gpu, a->gpu_page, app_gpu_lines + n,
                        APP_GPU_LINES - n);
    WINDOW *win = h > 4 && w > 20 ? newwin(h, w, 2, 2) : NULL;
    if (!win)
        return;
    for (int k = 0; k < n; k++)
        src[k] = (struct app_overlay_src){app_gpu_lines[k].text, app_gpu_lines[k].role, 2};
    app_overlay_fill(win, f, src, n,
                     "Tab page  Left/Right GPU  Up/Down PgUp/PgDn Home/End scroll  Esc close",
                     &a->gpu_tv);
    app_gpu_tabs(a, win, w, gpu);
    wnoutrefresh(win);
    delwin(win);
}
