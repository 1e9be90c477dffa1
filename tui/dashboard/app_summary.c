/* The summary of an ended run: a box over the panels the first frame after the run ends (its
 * training finished or failed, or the recording ran out), closed by any key but q. */
#include "tui/dashboard/app_internal.h"
#include "tui/dashboard/widgets.h"

#include <string.h>

#define APP_SUMMARY_LINES 12

static bool app_summary_ended(const struct app *a) {
    const struct ui_frame *f = &a->frame;
    return f->snap && (ui_frame_ended(f, NULL) || (f->source_done && f->run->replay));
}

/* Opened once, when the run has ended and nothing else is open over the panels (help, the GPU
 * overlay, an event's details): what the user reads is not covered, and its keys stay its own
 * (the summary takes any key first); it opens when they close it. */
void app_summary_follow(struct app *a) {
    if (!a->summary_seen && app_summary_ended(a) && !a->quitting && !a->help && !a->gpu_overlay &&
        !a->detail)
        a->summary = a->summary_seen = true;
}

void app_draw_summary(struct app *a) {
    static char lines[APP_SUMMARY_LINES][UI_SUMMARY_COLS];
    int n = ui_summary_lines(&a->frame, lines, APP_SUMMARY_LINES);
    int w = 4;
    for (int k = 0; k < n; k++)
        w = (int)strlen(lines[k]) + 4 > w ? (int)strlen(lines[k]) + 4 : w;
    w = w < 44 ? 44 : w > COLS - 2 ? COLS - 2 : w;
    int h = n + 2 > LINES - 2 ? LINES - 2 : n + 2;
    WINDOW *win = newwin(h, w, (LINES - h) / 2, (COLS - w) / 2);
    if (!win)
        return;
    werase(win);
    box(win, 0, 0);
    w_text(win, 0, 2, w - 4, THEME_TITLE, &a->frame, " summary ");
    for (int k = 0; k < n && k + 1 < h - 1; k++)
        w_text(win, k + 1, 2, w - 4,
               k == 0 && a->frame.snap->state == ENGINE_FAILED ? THEME_ERROR : THEME_TEXT,
               &a->frame, "%s", lines[k]);
    w_text(win, h - 1, 2, w - 4, THEME_DIM, &a->frame, " any key: the panels  q: quit ");
    wnoutrefresh(win);
    delwin(win);
}
