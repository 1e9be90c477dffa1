/* The dashboard's memory of recent events, and its formatting helpers. */
#include "tui/app_model.h"

#include <stdio.h>
#include <string.h>

void app_model_add(struct app_model *m, const struct ev *e) {
    m->events_seen++;
    if (e->kind == EV_PHASE) {
        m->phases[m->phase_head] = e->u.phase;
        m->phase_head = (m->phase_head + 1) % APP_PHASES;
        if (m->phase_count < APP_PHASES)
            m->phase_count++;
        return;
    }
    struct app_line l = {.t_ns = e->t_ns};
    if (e->kind == EV_COMMAND) {
        l.severity = e->u.command.rc == 0 ? SEV_INFO : SEV_WARNING;
        snprintf(l.text, sizeof(l.text), "%s: %s", ev_cmd_name(e->u.command.cmd),
                 e->u.command.text);
    } else if (e->kind == EV_LOG || e->kind == EV_ALERT) {
        l.severity = e->u.text.severity;
        snprintf(l.text, sizeof(l.text), "%s%s", e->kind == EV_ALERT ? "ALERT " : "",
                 e->u.text.text);
    } else {
        return;
    }
    m->lines[m->line_head] = l;
    m->line_head = (m->line_head + 1) % APP_LINES;
    if (m->line_count < APP_LINES)
        m->line_count++;
}

const struct app_line *app_model_line(const struct app_model *m, size_t k) {
    if (k >= m->line_count)
        return NULL;
    return &m->lines[(m->line_head + APP_LINES - 1 - k) % APP_LINES];
}

void app_model_paint(const struct app_model *m, uint64_t t0, uint64_t t1, int cols,
                     enum ev_phase_id *out) {
    for (int x = 0; x < cols; x++)
        out[x] = PHASE_COUNT;
    if (cols <= 0 || t1 <= t0)
        return;
    uint64_t span = t1 - t0;
    for (size_t k = 0; k < m->phase_count; k++) {
        const struct ev_phase *p = &m->phases[(m->phase_head + APP_PHASES - 1 - k) % APP_PHASES];
        if (p->end_ns < t0 || p->start_ns >= t1)
            continue;
        uint64_t a = p->start_ns > t0 ? p->start_ns - t0 : 0;
        uint64_t b = p->end_ns < t1 ? p->end_ns - t0 : span - 1;
        int xa = (int)(a * (uint64_t)cols / span), xb = (int)(b * (uint64_t)cols / span);
        for (int x = xa; x <= xb && x < cols; x++)
            if (out[x] == PHASE_COUNT)
                out[x] = (enum ev_phase_id)p->phase;
    }
}

int app_chunk_step(int chunk, int dir) {
    static const int ladder[] = {125, 250, 500, 1000, 2000, 3500, 0};
    const int n = (int)(sizeof(ladder) / sizeof(ladder[0]));
    int pos = n - 1; /* whole session, or anything larger than the ladder */
    for (int i = 0; i < n - 1; i++)
        if (chunk > 0 && chunk <= ladder[i]) {
            pos = chunk == ladder[i] ? i : (dir > 0 ? i - 1 : i);
            break;
        }
    pos += dir;
    if (pos < 0)
        pos = 0;
    if (pos >= n)
        pos = n - 1;
    return ladder[pos];
}

void app_fmt_bytes(char *buf, size_t n, uint64_t bytes) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, n, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
}

void app_fmt_hms(char *buf, size_t n, double seconds) {
    if (seconds < 0)
        seconds = 0;
    unsigned long s = (unsigned long)seconds;
    snprintf(buf, n, "%02lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
}

void app_fmt_ns(char *buf, size_t n, uint64_t ns) {
    if (ns < 10000)
        snprintf(buf, n, "%lluns", (unsigned long long)ns);
    else if (ns < 10000000)
        snprintf(buf, n, "%.1fus", (double)ns / 1e3);
    else if (ns < 10000000000ull)
        snprintf(buf, n, "%.1fms", (double)ns / 1e6);
    else
        snprintf(buf, n, "%.1fs", (double)ns / 1e9);
}
