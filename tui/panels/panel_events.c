/* Events panel: commands and their results, alerts, warnings and the engine's log, newest
 * first, scrollable, coloured by severity; Enter shows the selected event's details. */
#include "tui/panel.h"
#include "tui/widgets.h"

#include <stdio.h>
#include <string.h>

static enum theme_role panel_events_role(uint8_t severity) {
    return severity == SEV_ERROR ? THEME_ERROR : severity == SEV_WARNING ? THEME_WARN : THEME_TEXT;
}

static void panel_events_title(struct panel *p, const struct ui_frame *f) {
    char info[160] = "";
    size_t len = 0;
    for (unsigned c = 0; c < UI_CAT_COUNT && len < sizeof(info); c++)
        len += (size_t)snprintf(info + len, sizeof(info) - len, "%s%s %llu", c ? "  " : "",
                                ui_category_name(c), (unsigned long long)f->model->cat_count[c]);
    if (f->model->gaps && len < sizeof(info))
        snprintf(info + len, sizeof(info) - len, "  dropped %llu",
                 (unsigned long long)f->model->gaps);
    w_title(p->win, p->detail ? "event detail (Enter: back)" : "events", info, p->focused, f);
}

/* The event whose details are open: copied when the view opens, so events arriving meanwhile
 * do not change what is shown (there is one events panel). */
static struct ui_event panel_events_shown;

static void panel_events_detail(struct panel *p, const struct ui_frame *f) {
    const struct ui_event *e = &panel_events_shown;
    char when[16];
    uint64_t t0 = f->run->start_ns;
    ui_fmt_hms(when, sizeof(when), e->t_ns > t0 ? (double)(e->t_ns - t0) / 1e9 : 0);
    w_text(p->win, 1, 1, p->w - 2, panel_events_role(e->severity), f, "%s  %s  %s", when,
           ui_category_name(e->category), e->text);
    const char *line = e->detail;
    for (int y = 2; y < p->h && *line; y++) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        w_text(p->win, y, 3, len < p->w - 4 ? len : p->w - 4, THEME_TEXT, f, "%.*s", len, line);
        line = nl ? nl + 1 : line + len;
    }
}

static void panel_events_draw(struct panel *p, const struct ui_frame *f) {
    panel_events_title(p, f);
    if (p->detail) {
        panel_events_detail(p, f);
        return;
    }
    int rows = p->h - 1;
    uint64_t t0 = f->run->start_ns;
    for (int k = 0; k < rows; k++) {
        size_t idx = (size_t)(p->scroll + k);
        const struct ui_event *e = ui_model_event(f->model, idx);
        if (!e)
            break;
        char when[16];
        ui_fmt_hms(when, sizeof(when), e->t_ns > t0 ? (double)(e->t_ns - t0) / 1e9 : 0);
        bool sel = p->focused && (int)idx == p->selected;
        w_text(p->win, 1 + k, 1, 2, THEME_TITLE, f, "%s", sel ? ">" : " ");
        char times[16] = "";
        if (e->repeat > 1)
            snprintf(times, sizeof(times), " (x%u)", e->repeat);
        w_text(p->win, 1 + k, 3, p->w - 4, panel_events_role(e->severity), f, "%s %-7s %s%s", when,
               ui_category_name(e->category), e->text, times);
    }
}

static bool panel_events_key(struct panel *p, int ch, const struct ui_frame *f) {
    if (ch == '\n' || ch == KEY_ENTER || ch == '\r') {
        const struct ui_event *e = ui_model_event(f->model, (size_t)p->selected);
        p->detail = !p->detail && e != NULL;
        if (p->detail)
            panel_events_shown = *e;
        return true;
    }
    if (ch == 27 && p->detail) { /* Esc leaves the detail view */
        p->detail = false;
        return true;
    }
    return panel_nav_key(p, ch, (int)f->model->event_count, p->h - 1);
}

const struct panel_ops panel_events_ops = {
    .name = "events",
    .title = "events",
    .help = "commands, alerts, warnings, log; Enter: details",
    .min_h = 3,
    .pref_h = 0,
    .column = 2,
    .draw = panel_events_draw,
    .key = panel_events_key,
};
