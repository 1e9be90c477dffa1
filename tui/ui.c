/* Frame helpers shared by every panel: attributes per role, watchdog state, run state. */
#include "tui/ui.h"

attr_t ui_attr(const struct ui_frame *f, enum theme_role r) {
    attr_t a = f->theme && f->theme->c[r].bold ? A_BOLD : A_NORMAL;
    if (f->color)
        return a | COLOR_PAIR(r + 1);
    bool fill = r == THEME_SEG_USED || r == THEME_SEG_LARGEST || r == THEME_GAUGE ||
                r == THEME_FOOTER || r >= THEME_PHASE0;
    bool loud = r == THEME_TITLE || r == THEME_ACCENT || r == THEME_OK || r == THEME_WARN ||
                r == THEME_ERROR;
    return (fill ? A_REVERSE : A_NORMAL) | (loud ? A_BOLD : A_NORMAL);
}

enum ui_watch ui_frame_watch(const struct ui_frame *f, uint64_t *age_ns) {
    *age_ns = 0;
    if (!f->has_inflight || f->now_ns < f->inflight.start_ns)
        return UI_WATCH_OK;
    *age_ns = f->now_ns - f->inflight.start_ns;
    if (*age_ns > f->sync_timeout_ns)
        return UI_WATCH_HANG;
    return *age_ns > f->sync_slow_ns ? UI_WATCH_SLOW : UI_WATCH_OK;
}

const struct engine_snap *ui_frame_sel(const struct ui_frame *f) {
    if (f->gpu < f->n_snaps && f->snaps[f->gpu])
        return f->snaps[f->gpu];
    return f->snap;
}

const char *ui_frame_state(const struct ui_frame *f, bool quitting) {
    uint64_t age;
    enum engine_state s = f->snap->state;
    /* a call hung on any device first: the first device may have ended (a watched job's rank
     * 0 that left while rank 1 hangs) */
    if (ui_frame_watch(f, &age) == UI_WATCH_HANG)
        return "HUNG";
    if (f->has_oldest && f->now_ns > f->oldest.start_ns &&
        f->now_ns - f->oldest.start_ns > f->sync_timeout_ns)
        return "HUNG";
    if (s == ENGINE_FINISHED)
        return "FINISHED";
    if (s == ENGINE_FAILED)
        return "FAILED";
    if (quitting)
        return "STOPPING";
    if (f->run && f->run->watch && f->run->idle[0])
        return "WATCHING";
    if (s == ENGINE_PAUSED)
        return "PAUSED";
    return s == ENGINE_STARTING ? "STARTING" : "RUNNING";
}
