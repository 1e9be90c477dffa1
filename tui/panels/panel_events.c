/* Events panel: commands and their results, kernel-log failures, alerts, warnings and the
 * engine's log, newest first, scrollable, coloured by severity; Enter shows the selected
 * event's details, with what is known to help for a kernel-log failure. */
#include "tui/panel.h"
#include "tui/remedies.h"
#include "tui/widgets.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum theme_role panel_events_role(uint8_t severity) {
    return severity == SEV_ERROR ? THEME_ERROR : severity == SEV_WARNING ? THEME_WARN : THEME_TEXT;
}

/* "kernel: /dev/kmsg", "kernel: unreadable", ... with the counts a reader wants to see. */
static size_t panel_events_kmsg(const struct ui_frame *f, char *buf, size_t n) {
    static const char *const states[] = {"off", "/dev/kmsg", "file", "UNREADABLE (Enter)"};
    if (!f->has_kmsg)
        return 0;
    int len = snprintf(buf, n, "  kmsg %s", states[f->kmsg.state < 4 ? f->kmsg.state : 0]);
    if (f->kmsg.lost && len > 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, " lost %llu", (unsigned long long)f->kmsg.lost);
    return len > 0 ? (size_t)len : 0;
}

static void panel_events_title(struct panel *p, const struct ui_frame *f) {
    char info[200] = "";
    size_t len = 0;
    for (unsigned c = 0; c < UI_CAT_COUNT && len < sizeof(info); c++)
        len += (size_t)snprintf(info + len, sizeof(info) - len, "%s%s %llu", c ? "  " : "",
                                ui_category_name(c), (unsigned long long)f->model->cat_count[c]);
    uint64_t dropped = f->model->gaps + f->model->kmsg_gaps;
    if (dropped && len < sizeof(info))
        len += (size_t)snprintf(info + len, sizeof(info) - len, "  dropped %llu",
                                (unsigned long long)dropped);
    if (len < sizeof(info))
        panel_events_kmsg(f, info + len, sizeof(info) - len);
    char title[64] = "events";
    if (p->scroll > 0) /* held still under the selection: say what is above */
        snprintf(title, sizeof(title), "events (%d newer above: Home)", p->scroll);
    w_title(p->win, p->detail ? "event detail (Enter: back, arrows: scroll)" : title, info,
            p->focused, f);
}

/* The detail view's text, composed when it opens: copied, so events arriving meanwhile do not
 * change what is shown (there is one events panel). */
static char panel_events_text[4096];
static enum theme_role panel_events_text_role;

static void panel_events_put(size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void panel_events_put(size_t *len, const char *fmt, ...) {
    size_t n = sizeof(panel_events_text);
    if (*len >= n - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(panel_events_text + *len, n - *len, fmt, ap);
    va_end(ap);
    if (k > 0)
        *len = *len + (size_t)k < n ? *len + (size_t)k : n - 1;
}

/* What helps with a kernel-log failure: the rule the model found for it when it came. */
static void panel_events_remedy(const struct ui_event *e, size_t *len) {
    const struct remedy *r = e->remedy;
    if (!r) {
        panel_events_put(len, "\n\nNo remedy is known for this event (see --kmsg-rules).");
        return;
    }
    panel_events_put(len, "\n\nWhat helps: %s\n%s", r->title, r->explanation);
    for (int i = 0; i < r->n_actions; i++)
        panel_events_put(len, "\n  - %s", r->actions[i]);
}

static void panel_events_compose(const struct ui_event *e, const struct ui_frame *f) {
    char when[16];
    size_t len = 0;
    uint64_t t0 = f->run->start_ns;
    ui_fmt_hms(when, sizeof(when), (double)(e->t_ns > t0 ? e->t_ns - t0 : t0 - e->t_ns) / 1e9);
    panel_events_text[0] = '\0';
    panel_events_text_role = panel_events_role(e->severity);
    panel_events_put(&len, "%s%s  %s  %s\n%s", e->t_ns < t0 ? "-" : "", when,
                     ui_category_name(e->category), e->text, e->detail);
    if (e->kcat != KMSG_CAT_NONE)
        panel_events_remedy(e, &len);
    if (e->code == ALERT_KMSG_OFF && f->kmsg_reason[0])
        panel_events_put(&len,
                         "\n\n%s.\nWays out:\n  - sudo setcap cap_syslog+ep $(which ringside)"
                         "\n  - sudo sysctl kernel.dmesg_restrict=0"
                         "\n  - mkfifo /tmp/kmsg; journalctl -kf -o short-monotonic > /tmp/kmsg &"
                         "\n    then ringside --kmsg-file /tmp/kmsg",
                         f->kmsg_reason);
}

static void panel_events_detail(struct panel *p, const struct ui_frame *f) {
    const char *s = panel_events_text;
    int width = p->w - 4, y = 1, line = 0;
    for (size_t shown, used; (used = ui_wrap(s, width, &shown)) > 0; s += used, line++) {
        if (line < p->detail_scroll)
            continue;
        if (y >= p->h)
            break;
        w_text(p->win, y, line == 0 ? 1 : 3, width, line == 0 ? panel_events_text_role : THEME_TEXT,
               f, "%.*s", (int)shown, s);
        y++;
    }
}

static void panel_events_draw(struct panel *p, const struct ui_frame *f) {
    panel_list_follow(p, f->model->event_added, (int)f->model->event_count);
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
        ui_fmt_hms(when, sizeof(when), (double)(e->t_ns > t0 ? e->t_ns - t0 : t0 - e->t_ns) / 1e9);
        bool sel = p->focused && (int)idx == p->selected;
        w_text(p->win, 1 + k, 1, 2, THEME_TITLE, f, "%s", sel ? ">" : " ");
        char times[16] = "";
        if (e->repeat > 1)
            snprintf(times, sizeof(times), " (x%u)", e->repeat);
        w_text(p->win, 1 + k, 3, p->w - 4, e->chatter ? THEME_DIM : panel_events_role(e->severity),
               f, "%s%s %-7s %s%s", e->t_ns < t0 ? "-" : "", when, ui_category_name(e->category),
               e->text, times);
    }
}

/* Scroll keys while the detail view is open. */
static bool panel_events_detail_key(struct panel *p, int ch) {
    int page = p->h > 2 ? p->h - 2 : 1;
    switch (ch) {
    case KEY_UP:
        p->detail_scroll--;
        break;
    case KEY_DOWN:
        p->detail_scroll++;
        break;
    case KEY_PPAGE:
        p->detail_scroll -= page;
        break;
    case KEY_NPAGE:
        p->detail_scroll += page;
        break;
    case KEY_HOME:
        p->detail_scroll = 0;
        break;
    default:
        return false;
    }
    int lines = 0;
    const char *s = panel_events_text;
    for (size_t shown, used; (used = ui_wrap(s, p->w - 4, &shown)) > 0; s += used)
        lines++;
    int max = lines - (p->h - 1);
    p->detail_scroll = p->detail_scroll > max ? max : p->detail_scroll;
    p->detail_scroll = p->detail_scroll < 0 ? 0 : p->detail_scroll;
    return true;
}

static bool panel_events_key(struct panel *p, int ch, const struct ui_frame *f) {
    panel_list_follow(p, f->model->event_added, (int)f->model->event_count);
    if (ch == '\n' || ch == KEY_ENTER || ch == '\r') {
        const struct ui_event *e = ui_model_event(f->model, (size_t)p->selected);
        p->detail = !p->detail && e != NULL;
        p->detail_scroll = 0;
        if (p->detail)
            panel_events_compose(e, f);
        return true;
    }
    if (ch == 27 && p->detail) { /* Esc leaves the detail view */
        p->detail = false;
        return true;
    }
    if (p->detail)
        return panel_events_detail_key(p, ch);
    return panel_nav_key(p, ch, (int)f->model->event_count, p->h - 1);
}

const struct panel_ops panel_events_ops = {
    .name = "events",
    .title = "events",
    .help = "commands, kernel failures, alerts, log; Enter: details (k: latest kernel)",
    .min_h = 3,
    .pref_h = 0,
    .column = 2,
    .draw = panel_events_draw,
    .key = panel_events_key,
};
