/* What the timeline shows of the present, which rows its compact form gets, and its words. */
#include "tui/view/ui_timeline.h"

#include <stdio.h>
#include <string.h>

struct ui_live ui_timeline_live(const struct engine_snap *s, const struct trace_inflight *inf) {
    struct ui_live l = {.phase = PHASE_COUNT};
    if (s && s->has_phase_start && s->phase < PHASE_COUNT) {
        l.phase = (uint8_t)s->phase;
        l.phase_start_ns = s->phase_start_ns;
    }
    if (inf) {
        l.has_sync = true;
        l.sync_start_ns = inf->start_ns;
    }
    return l;
}

struct ui_timeline_rows ui_timeline_compact(int rows, unsigned n_devices, bool alarm) {
    struct ui_timeline_rows r = {0};
    int room = rows > 1 ? rows - 1 : 1; /* a line for the rest, where there are two */
    r.devices = n_devices < (unsigned)room ? n_devices : (unsigned)room;
    r.devices = r.devices ? r.devices : 1;
    int left = rows - (int)r.devices;
    bool *need[3] = {&r.axis, &r.legend, &r.wait};
    if (alarm) { /* the call that waits first, the axis last */
        need[0] = &r.wait;
        need[2] = &r.axis;
    }
    for (int k = 0; k < 3 && left > 0; k++, left--)
        *need[k] = true;
    return r;
}

int ui_timeline_legend(const unsigned cells[PHASE_COUNT], enum ev_phase_id *out) {
    int n = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        if (!cells[ph])
            continue;
        int at = n++; /* insertion: most cells first, the table's order among equals */
        while (at > 0 && cells[out[at - 1]] < cells[ph]) {
            out[at] = out[at - 1];
            at--;
        }
        out[at] = (enum ev_phase_id)ph;
    }
    return n;
}

int ui_timeline_named(const enum ev_phase_id *ph, int n, int width) {
    int need = n > 0 ? 2 * n - 1 : 0; /* every letter, a space between two */
    int named = 0;
    while (named < n && need + (int)strlen(ev_phase_label(ph[named])) + 1 <= width)
        need += (int)strlen(ev_phase_label(ph[named++])) + 1;
    return named;
}

enum ev_phase_id ui_timeline_now(const struct engine_snap *s, uint64_t now_ns, char *buf,
                                 size_t n) {
    if (s->phase < PHASE_COUNT && s->phase != PHASE_SYNC) {
        char age[8] = "";
        if (s->has_phase_start && now_ns >= s->phase_start_ns + 1000000000ull)
            ui_timeline_age(age, sizeof(age), now_ns - s->phase_start_ns);
        snprintf(buf, n, "%s%s%s", ev_phase_label(s->phase), age[0] ? " " : "", age);
        return s->phase;
    }
    if (s->in_steps)
        snprintf(buf, n, "step %lld", (long long)s->step);
    else
        snprintf(buf, n, "idle");
    return PHASE_COUNT;
}

void ui_timeline_age(char *buf, size_t n, uint64_t ns) {
    uint64_t s = ns / 1000000000ull;
    if (s < 10)
        snprintf(buf, n, "%.1fs", (double)(ns / 100000000ull) / 10.0);
    else if (s < 100)
        snprintf(buf, n, "%llus", (unsigned long long)s);
    else if (s < 600)
        snprintf(buf, n, "%llum%02llus", (unsigned long long)(s / 60),
                 (unsigned long long)(s % 60));
    else if (s < 6000)
        snprintf(buf, n, "%llum", (unsigned long long)(s / 60));
    else if (s < 360000)
        snprintf(buf, n, "%lluh", (unsigned long long)(s / 3600));
    else
        snprintf(buf, n, "%llud", (unsigned long long)(s / 86400));
}
