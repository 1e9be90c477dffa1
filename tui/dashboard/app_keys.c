/* The dashboard's keys: one handler per action of the key map (keymap.h), and what they
 * need of the app (focus, the panels' answers, the mouse, the theme). */
#include "tui/dashboard/app_internal.h"
#include "tui/view/ui_devices.h"

#include <stdio.h>

static void app_focus(struct app *a, int dir) {
    for (int k = 0; k < APP_PANELS; k++) {
        a->focus = (a->focus + dir + APP_PANELS) % APP_PANELS;
        if (a->rects[a->focus].h > 0 || a->lay.hidden > 0)
            break;
    }
    for (int k = 0; k < APP_PANELS; k++)
        a->panels[k].focused = k == a->focus;
    app_relayout(a); /* a hidden panel brought into focus gets shown */
}

/* A key to panel k, and what the app does about its answer. */
static void app_panel_key(struct app *a, int k, int ch) {
    struct panel *p = &a->panels[k];
    unsigned res = p->ops->key ? p->ops->key(p, ch, &a->frame) : PANEL_IGNORED;
    if (res & PANEL_OPEN_GPU_OVERLAY) {
        a->gpu_overlay = true;
        a->gpu_tv.top = 0;
    }
    if (res & PANEL_OPEN_EVENT_DETAIL)
        app_open_detail(a);
}

static void app_mouse(struct app *a) {
    MEVENT m;
    if (getmouse(&m) != OK)
        return;
    for (int k = 0; k < APP_PANELS; k++) {
        struct ui_rect r = a->rects[k];
        if (r.h == 0 || m.y < r.y || m.y >= r.y + r.h || m.x < r.x || m.x >= r.x + r.w)
            continue;
        if (m.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)) {
            a->focus = k;
            app_focus(a, 0);
        }
#ifdef BUTTON5_PRESSED
        int wheel = m.bstate & BUTTON4_PRESSED ? KEY_UP : m.bstate & BUTTON5_PRESSED ? KEY_DOWN : 0;
#else
        int wheel = m.bstate & BUTTON4_PRESSED ? KEY_UP : 0;
#endif
        if (wheel)
            app_panel_key(a, k, wheel);
    }
}

/* k: the events panel, focused, with the newest kernel-log failure's details open. */
static void app_kernel_key(struct app *a) {
    if (!panel_events_show_kernel(&a->panels[APP_EVENTS_PANEL], &a->frame)) {
        app_notice(a, "no kernel-log failure so far");
        return;
    }
    a->focus = APP_EVENTS_PANEL;
    app_focus(a, 0);
    app_open_detail(a);
}

/* t: the next theme found; a broken one is a warning and the current theme stays (and is
 * skipped next time). */
static void app_next_theme(struct app *a) {
    char next[THEME_NAME_MAX], err[512];
    if (theme_next(a->theme_name, next, sizeof(next)) != 0) {
        app_notice(a, "no other theme found");
        return;
    }
    snprintf(a->theme_name, sizeof(a->theme_name), "%s", next);
    struct theme t;
    if (theme_open(next, &t, err, sizeof(err)) != 0) {
        app_notice(a, "theme %s not used: %s", next, err);
        return;
    }
    a->theme = t;
    app_colors(a);
    app_notice(a, "theme: %s", next);
}

/* ---- what the keys do: one handler per action of the key map (keymap.h) ---- */

static void app_act_quit(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    app_quit_key(a);
}

static void app_act_help(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    a->help = !a->help;
    a->help_tv.top = 0;
}

/* p + - c m: the source acts (a hung synchronize refuses a cleanup first); a key the source
 * does not take is the focused panel's. */
static void app_act_source(struct app *a, const struct keymap_row *row, int ch) {
    enum source_action act = SOURCE_ACTIONS;
    keymap_source_action(row->act, &act);
    uint64_t age;
    if (act == SOURCE_CLEANUP && ui_frame_watch(&a->frame, &age) == UI_WATCH_HANG) {
        app_notice(a,
                   "safe cleanup refused: a %s sync in %s has hung for %.1f s; it would wait "
                   "behind it",
                   ev_sync_op_name(a->frame.inflight.op), ev_phase_name(a->frame.inflight.phase),
                   (double)age / 1e9);
        return;
    }
    char msg[160];
    if (a->src->ops->select)
        a->src->ops->select(a->src, a->frame.gpu);
    if (!a->src->ops->action(a->src, act, msg, sizeof(msg))) {
        app_panel_key(a, a->focus, ch);
        return;
    }
    if (msg[0])
        app_notice(a, "%s", msg);
}

static void app_act_zoom(struct app *a, const struct keymap_row *row, int ch) {
    (void)ch;
    a->zoom += row->act == KEYMAP_ZOOM_OUT ? -1 : 1;
    a->zoom = a->zoom < 0 ? 0 : a->zoom >= APP_ZOOMS ? APP_ZOOMS - 1 : a->zoom;
}

static void app_act_focus(struct app *a, const struct keymap_row *row, int ch) {
    (void)ch;
    app_focus(a, row->act == KEYMAP_FOCUS_NEXT ? 1 : -1);
}

/* Arrows, PgUp/PgDn, Home/End, Enter and Esc belong to the focused panel. */
static void app_act_panel(struct app *a, const struct keymap_row *row, int ch) {
    (void)row;
    app_panel_key(a, a->focus, ch);
}

static void app_act_kernel(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    app_kernel_key(a);
}

static void app_act_gpu_overlay(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    a->gpu_overlay = !a->gpu_overlay;
    a->gpu_tv.top = 0;
}

static void app_act_doctor(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    app_doctor_key(a);
}

static void app_act_freeze(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    a->frozen = !a->frozen;
    if (a->frozen) {
        a->frozen_snap = *a->frame.snap;
        for (unsigned k = 0; k < a->frame.n_snaps; k++)
            a->frozen_devs[k] = *a->frame.snaps[k];
    }
    app_notice(a, "%s", a->frozen ? "display frozen (training continues): f to thaw" : "");
}

static void app_act_theme(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    app_next_theme(a);
}

static void app_act_select_gpu(struct app *a, const struct keymap_row *row, int ch) {
    (void)row;
    unsigned k = (unsigned)(ch - '1'), n = a->frame.n_snaps ? a->frame.n_snaps : 1;
    if (k < n) {
        a->frame.gpu = k;
        char who[160];
        ui_devices_who(&a->src->run, k, COLS - 28 > 8 ? COLS - 28 : 8, who, sizeof(who));
        if (n > 1 && a->src->run.ranks[k].valid) /* a watched job: who it is */
            app_notice(a, "device %u selected: %s", k + 1, who);
        else if (n > 1)
            app_notice(a, "device %u (%s) selected", k + 1, who);
    } else {
        app_notice(a, "no device %u: this run trains on %u device%s", k + 1, n, n == 1 ? "" : "s");
    }
}

static void app_act_mouse(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    app_mouse(a);
}

static void app_act_resize(struct app *a, const struct keymap_row *row, int ch) {
    (void)row, (void)ch;
    app_relayout(a);
}

typedef void (*app_action_fn)(struct app *a, const struct keymap_row *row, int ch);

static const app_action_fn app_actions[KEYMAP_ACTION_COUNT] = {
    [KEYMAP_QUIT] = app_act_quit,        [KEYMAP_PAUSE] = app_act_source,
    [KEYMAP_CHUNK_UP] = app_act_source,  [KEYMAP_CHUNK_DOWN] = app_act_source,
    [KEYMAP_CLEANUP] = app_act_source,   [KEYMAP_PROBE] = app_act_source,
    [KEYMAP_ZOOM_OUT] = app_act_zoom,    [KEYMAP_ZOOM_IN] = app_act_zoom,
    [KEYMAP_FOCUS_NEXT] = app_act_focus, [KEYMAP_FOCUS_PREV] = app_act_focus,
    [KEYMAP_PANEL_NAV] = app_act_panel,  [KEYMAP_PANEL_DETAILS] = app_act_panel,
    [KEYMAP_KERNEL] = app_act_kernel,    [KEYMAP_GPU_OVERLAY] = app_act_gpu_overlay,
    [KEYMAP_DOCTOR] = app_act_doctor,    [KEYMAP_FREEZE] = app_act_freeze,
    [KEYMAP_THEME] = app_act_theme,      [KEYMAP_SELECT_GPU] = app_act_select_gpu,
    [KEYMAP_MOUSE] = app_act_mouse,      [KEYMAP_RESIZE] = app_act_resize,
    [KEYMAP_HELP] = app_act_help,
};

/* A key: the open overlays take theirs first, the topmost first (the help scrolls, or closes
 * on any key but q and a resize; the GPU overlay; an event's details); then the key map's row
 * for this source runs its action, and a key it has no row for goes to the focused panel. */
void app_key(struct app *a, int ch) {
    const struct keymap_row *row = keymap_find(ch, a->where);
    if (a->help && app_help_key(a, ch, row))
        return;
    if (a->summary && (!row || (row->act != KEYMAP_QUIT && row->act != KEYMAP_RESIZE &&
                                row->act != KEYMAP_MOUSE))) {
        a->summary = false;
        return;
    }
    if (a->gpu_overlay && app_gpu_overlay_key(a, ch))
        return;
    if (a->detail && app_detail_key(a, ch))
        return;
    if (row && app_actions[row->act])
        app_actions[row->act](a, row, ch);
    else
        app_panel_key(a, a->focus, ch);
}
