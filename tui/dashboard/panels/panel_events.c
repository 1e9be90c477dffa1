/* Events panel: commands and their results, kernel-log failures, alerts, warnings and the
 * engine's log, newest first, scrollable, coloured by severity; Enter composes the selected
 * event's details, with what is known to help for a kernel-log failure, for the app to show
 * over the panels. */
#include "backend/kmsg/remedies.h"
#include "tui/dashboard/panel.h"
#include "tui/dashboard/widgets.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The panel's own state. */
struct panel_events {
    struct panel_list list;
    /* the details of the event last opened, composed when they open: copied, so events
     * arriving meanwhile do not change what is shown */
    bool composed;
    char head[EV_TEXT_BYTES + 96]; /* the event's line */
    char text[12288];              /* its fields, its note, what helps */
    enum theme_role text_role;
};

static int panel_events_create(struct panel *p) {
    p->priv = calloc(1, sizeof(struct panel_events));
    return p->priv ? 0 : -ENOMEM;
}

static void panel_events_destroy(struct panel *p) {
    free(p->priv);
}

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
    const struct panel_events *pe = p->priv;
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
    if (pe->list.scroll > 0) /* held still under the selection: say what is above */
        snprintf(title, sizeof(title), "events (%d newer above: Home)", pe->list.scroll);
    w_title(p->win, title, info, p->focused, f);
}

static void panel_events_put(struct panel_events *pe, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void panel_events_put(struct panel_events *pe, size_t *len, const char *fmt, ...) {
    size_t n = sizeof(pe->text);
    if (*len >= n - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(pe->text + *len, n - *len, fmt, ap);
    va_end(ap);
    if (k > 0)
        *len = *len + (size_t)k < n ? *len + (size_t)k : n - 1;
}

/* What helps with a kernel-log failure: the rule the model found for it when it came. */
static void panel_events_remedy(struct panel_events *pe, const struct ui_event *e, size_t *len) {
    const struct remedy *r = e->remedy;
    if (!r) {
        panel_events_put(pe, len, "\n\nNo remedy is known for this event (see --kmsg-rules).");
        return;
    }
    panel_events_put(pe, len, "\n\nWhat helps: %s\n%s", r->title, r->explanation);
    for (int i = 0; i < r->n_actions; i++)
        panel_events_put(pe, len, "\n  - %s", r->actions[i]);
}

static void panel_events_compose(struct panel_events *pe, const struct ui_event *e,
                                 const struct ui_frame *f) {
    char when[16];
    size_t len = 0;
    uint64_t t0 = f->run->start_ns;
    ui_fmt_hms(when, sizeof(when), (double)(e->t_ns > t0 ? e->t_ns - t0 : t0 - e->t_ns) / 1e9);
    pe->text[0] = '\0';
    pe->text_role = panel_events_role(e->severity);
    pe->composed = true;
    snprintf(pe->head, sizeof(pe->head), "%s%s  %s  %s", e->t_ns < t0 ? "-" : "", when,
             ui_category_name(e->category), e->text);
    panel_events_put(pe, &len, "%s", e->detail);
    const char *note = f->note ? f->note(f->note_ctx, e->t_ns, e->dev, e->code) : NULL;
    if (note && note[0])
        panel_events_put(pe, &len, "\n\n%s", note);
    if (e->kcat != KMSG_CAT_NONE)
        panel_events_remedy(pe, e, &len);
    if (e->code == ALERT_KMSG_OFF && f->kmsg_reason[0])
        panel_events_put(pe, &len,
                         "\n\n%s.\nWays out:\n  - sudo setcap cap_syslog+ep $(which ringside)"
                         "\n  - sudo sysctl kernel.dmesg_restrict=0"
                         "\n  - mkfifo /tmp/kmsg; journalctl -kf -o short-monotonic > /tmp/kmsg &"
                         "\n    then ringside --kmsg-file /tmp/kmsg",
                         f->kmsg_reason);
}

static void panel_events_draw(struct panel *p, const struct ui_frame *f) {
    struct panel_events *pe = p->priv;
    panel_list_follow(&pe->list, f->model->event_added, (int)f->model->event_count);
    panel_events_title(p, f);
    int rows = p->h - 1;
    uint64_t t0 = f->run->start_ns;
    for (int k = 0; k < rows; k++) {
        size_t idx = (size_t)(pe->list.scroll + k);
        const struct ui_event *e = ui_model_event(f->model, idx);
        if (!e)
            break;
        char when[16];
        ui_fmt_hms(when, sizeof(when), (double)(e->t_ns > t0 ? e->t_ns - t0 : t0 - e->t_ns) / 1e9);
        bool sel = p->focused && (int)idx == pe->list.selected;
        w_text(p->win, 1 + k, 1, 2, THEME_TITLE, f, "%s", sel ? ">" : " ");
        char times[16] = "";
        if (e->repeat > 1)
            snprintf(times, sizeof(times), " (x%u)", e->repeat);
        w_text(p->win, 1 + k, 3, p->w - 4, e->chatter ? THEME_DIM : panel_events_role(e->severity),
               f, "%s%s %-7s %s%s", e->t_ns < t0 ? "-" : "", when, ui_category_name(e->category),
               e->text, times);
    }
}

/* Compose the details of the selected event, if there is one. */
static bool panel_events_open(struct panel_events *pe, const struct ui_frame *f) {
    const struct ui_event *e = ui_model_event(f->model, (size_t)pe->list.selected);
    if (e)
        panel_events_compose(pe, e, f);
    return e != NULL;
}

static unsigned panel_events_key(struct panel *p, int ch, const struct ui_frame *f) {
    struct panel_events *pe = p->priv;
    panel_list_follow(&pe->list, f->model->event_added, (int)f->model->event_count);
    if (ch == '\n' || ch == KEY_ENTER || ch == '\r')
        return panel_events_open(pe, f) ? PANEL_HANDLED | PANEL_OPEN_EVENT_DETAIL : PANEL_HANDLED;
    bool used = panel_nav_key(&pe->list, ch, (int)f->model->event_count, p->h - 1);
    return used ? PANEL_HANDLED : PANEL_IGNORED;
}

bool panel_events_show_kernel(struct panel *p, const struct ui_frame *f) {
    struct panel_events *pe = p->ops == &panel_events_ops ? p->priv : NULL;
    size_t k = 0;
    const struct ui_event *e;
    while ((e = ui_model_event(f->model, k)) && e->category != UI_CAT_KERNEL)
        k++;
    if (!pe || !e)
        return false;
    pe->list = (struct panel_list){(int)k, (int)k, f->model->event_added};
    panel_events_compose(pe, e, f);
    return true;
}

bool panel_events_detail(const struct panel *p, const char **head, const char **body,
                         enum theme_role *role) {
    const struct panel_events *pe = p->ops == &panel_events_ops ? p->priv : NULL;
    if (!pe || !pe->composed)
        return false;
    *head = pe->head;
    *body = pe->text;
    *role = pe->text_role;
    return true;
}

struct panel_list panel_events_list(const struct panel *p) {
    const struct panel_events *pe = p->ops == &panel_events_ops ? p->priv : NULL;
    return pe ? pe->list : (struct panel_list){0, 0, 0};
}

/* A row an event and the title, in steps of 4 rows (a new event does not move every panel),
 * whatever is scrolled: the list grows into the rows the charts have until it fills them. */
static int panel_events_rows(const struct panel *p, const struct ui_frame *f, int w) {
    (void)p;
    (void)w;
    int n = 1 + (int)f->model->event_count;
    return (n + 3) / 4 * 4;
}

const struct panel_ops panel_events_ops = {
    .name = "events",
    .title = "events",
    .help = "commands, kernel failures, alerts, log; Enter: details (k: latest kernel)",
    .min_h = 3,
    .pref_h = 0,
    .column = 2,
    .min_h_tall = 9, /* 8 events under the title */
    .rows = panel_events_rows,
    .create = panel_events_create,
    .destroy = panel_events_destroy,
    .draw = panel_events_draw,
    .key = panel_events_key,
};
