/* The overlays drawn over the panels, and the frame they share: the help (?), an event's
 * details (Enter on the events panel, k) and the GPU overlay's box (app_gpu.c). Their lines
 * wrap to the box (wrap_text), scroll with the same keys (keymap_scroll) and show where they
 * are on the bottom border (textview_mark) above a hint on how to close them. */
#include "tui/dashboard/app_internal.h"
#include "tui/dashboard/widgets.h"
#include "tui/view/wrap.h"

#include <stdio.h>
#include <string.h>

#define APP_OVERLAY_LINES 2048 /* screen lines drawn from; a longer text is cut there */
#define APP_OVERLAY_HINT  3    /* screen lines of a hint, at most */
#define APP_OVERLAY_MAX_W 100  /* the help's and the details' width on a wide terminal */

static struct wrap_line app_overlay_wl[APP_OVERLAY_LINES];
static int app_overlay_src_of[APP_OVERLAY_LINES]; /* each screen line's source */

/* Wrap the sources to width into the file's arrays: the screen lines in all (those past
 * APP_OVERLAY_LINES are counted, not kept). */
static int app_overlay_wrap(const struct app_overlay_src *src, int n, int width) {
    int total = 0;
    for (int k = 0; k < n; k++) {
        int room = total < APP_OVERLAY_LINES ? APP_OVERLAY_LINES - total : 0;
        int got =
            wrap_text(src[k].text, width, src[k].hang, room ? app_overlay_wl + total : NULL, room);
        for (int i = 0; i < got && i < room; i++)
            app_overlay_src_of[total + i] = k;
        total += got;
    }
    return total;
}

/* The rows of a box w columns wide that shows every line of src and the hint. */
static int app_overlay_rows(const struct app_overlay_src *src, int n, const char *hint, int w) {
    int hint_rows = wrap_text(hint, w - 4, 2, NULL, 0);
    hint_rows = hint_rows > APP_OVERLAY_HINT ? APP_OVERLAY_HINT : hint_rows;
    return app_overlay_wrap(src, n, w - 4) + hint_rows + 2;
}

void app_overlay_fill(WINDOW *win, const struct ui_frame *f, const struct app_overlay_src *src,
                      int n, const char *hint, struct textview *v) {
    int h = getmaxy(win), w = getmaxx(win), width = w - 4;
    struct wrap_line hl[APP_OVERLAY_HINT];
    int hint_rows = wrap_text(hint, width, 2, hl, APP_OVERLAY_HINT);
    hint_rows = hint_rows > APP_OVERLAY_HINT ? APP_OVERLAY_HINT : hint_rows;
    werase(win);
    box(win, 0, 0);
    v->total = app_overlay_wrap(src, n, width);
    v->rows = h - 2 - hint_rows > 0 ? h - 2 - hint_rows : 0;
    textview_clamp(v);
    for (int y = 0; y < v->rows && v->top + y < v->total && v->top + y < APP_OVERLAY_LINES; y++) {
        const struct wrap_line *l = &app_overlay_wl[v->top + y];
        const struct app_overlay_src *s = &src[app_overlay_src_of[v->top + y]];
        w_text(win, 1 + y, 2 + l->indent, width - l->indent, s->role, f, "%.*s", l->len,
               s->text + l->off);
    }
    for (int k = 0; k < hint_rows; k++)
        w_text(win, h - 1 - hint_rows + k, 2 + hl[k].indent, width - hl[k].indent, THEME_DIM, f,
               "%.*s", hl[k].len, hint + hl[k].off);
    char mark[64];
    int len = textview_mark(v, mark, sizeof(mark));
    char *words = strchr(mark, ' ');
    if (len + 4 > w && words) /* narrow: the position alone */
        len = (int)(words - mark);
    if (len > 0 && len + 4 <= w)
        w_text(win, h - 1, w - len - 4, len + 2, THEME_ACCENT, f, " %.*s ", len, mark);
}

bool app_overlay_scroll_key(struct textview *v, int ch) {
    enum textview_move m;
    if (!keymap_scroll(ch, &m))
        return false;
    textview_move(v, m);
    return true;
}

/* A box as wide as the terminal allows up to APP_OVERLAY_MAX_W and as high as its lines need
 * (up to the terminal's height but for a row above and below), centred, titled. */
static void app_overlay_box(struct app *a, const char *title, const struct app_overlay_src *src,
                            int n, const char *hint, struct textview *v) {
    int w = COLS - 4 < APP_OVERLAY_MAX_W ? COLS - 4 : APP_OVERLAY_MAX_W;
    int h = app_overlay_rows(src, n, hint, w);
    h = h > LINES - 2 ? LINES - 2 : h;
    WINDOW *win = h > 3 && w > 8 ? newwin(h, w, (LINES - h) / 2, (COLS - w) / 2) : NULL;
    if (!win)
        return;
    app_overlay_fill(win, &a->frame, src, n, hint, v);
    w_text(win, 0, 2, w - 4, THEME_TITLE, &a->frame, " %s ", title);
    wnoutrefresh(win);
    delwin(win);
}

/* ---- the help ---- */

#define APP_HELP_LINES (KEYMAP_ROWS_MAX + APP_PANELS + 1)

/* The key map's lines (continued under the text, past the keys' column), a blank line, then
 * what each panel shows. */
static void app_draw_help(struct app *a) {
    static char keys[KEYMAP_ROWS_MAX][KEYMAP_HELP_BYTES];
    static char panels[APP_PANELS][1024]; /* the timeline's help lists every phase letter */
    struct app_overlay_src src[APP_HELP_LINES];
    int n = 0, n_keys = (int)keymap_help_lines(a->where, keys, KEYMAP_ROWS_MAX);
    for (int k = 0; k < n_keys; k++)
        src[n++] = (struct app_overlay_src){keys[k], THEME_TEXT, KEYMAP_LABEL_COLS + 1};
    src[n++] = (struct app_overlay_src){"", THEME_TEXT, 0};
    for (int k = 0; k < APP_PANELS; k++) {
        snprintf(panels[k], sizeof(panels[k]), "%-11s %s", a->panels[k].ops->name,
                 a->panels[k].ops->help);
        src[n++] = (struct app_overlay_src){panels[k], THEME_DIM, 12};
    }
    app_overlay_box(a, "ringside help", src, n,
                    "Up/Down PgUp/PgDn Home/End scroll  any other key closes", &a->help_tv);
}

bool app_help_key(struct app *a, int ch, const struct keymap_row *row) {
    if (app_overlay_scroll_key(&a->help_tv, ch))
        return true;
    if (row && (row->act == KEYMAP_QUIT || row->act == KEYMAP_RESIZE))
        return false;
    a->help = false;
    return true;
}

/* ---- an event's details ---- */

/* The event's line in its severity's colour, then its fields and what helps, as the events
 * panel composed them when they opened. */
static void app_draw_detail(struct app *a) {
    const char *head, *body;
    enum theme_role role;
    if (!panel_events_detail(&a->panels[APP_EVENTS_PANEL], &head, &body, &role)) {
        a->detail = false;
        return;
    }
    struct app_overlay_src src[2] = {{head, role, 2}, {body, THEME_TEXT, 2}};
    app_overlay_box(a, "event detail", src, body[0] ? 2 : 1,
                    "Up/Down PgUp/PgDn Home/End scroll  Enter/Esc close", &a->detail_tv);
}

void app_open_detail(struct app *a) {
    a->detail = true;
    a->detail_tv = (struct textview){0};
}

bool app_detail_key(struct app *a, int ch) {
    if (app_overlay_scroll_key(&a->detail_tv, ch))
        return true;
    if (ch != '\n' && ch != '\r' && ch != KEY_ENTER && ch != 27)
        return false;
    a->detail = false;
    return true;
}

void app_draw_overlays(struct app *a) {
    if (a->detail)
        app_draw_detail(a);
    if (a->gpu_overlay)
        app_draw_gpu_overlay(a);
    if (a->summary)
        app_draw_summary(a);
    if (a->help)
        app_draw_help(a);
}
