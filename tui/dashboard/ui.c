/* Frame helpers shared by every panel: attributes per role, watchdog state, run state. */
#include "tui/dashboard/ui.h"

#include <stdio.h>

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

bool ui_frame_ended(const struct ui_frame *f, bool *failed) {
    bool ended = true, bad = false;
    unsigned n = f->n_snaps ? f->n_snaps : 1;
    for (unsigned k = 0; k < n; k++) {
        const struct engine_snap *s = k == 0 || !f->snaps[k] ? f->snap : f->snaps[k];
        ended &= s->state == ENGINE_FINISHED || s->state == ENGINE_FAILED;
        bad |= s->state == ENGINE_FAILED;
    }
    if (failed)
        *failed = bad;
    return ended;
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
    bool failed;
    if (ui_frame_ended(f, &failed))
        return failed ? "FAILED" : "FINISHED";
    if (s == ENGINE_FINISHED || s == ENGINE_FAILED) /* another device goes on: its state */
        for (unsigned k = 1; k < f->n_snaps; k++)
            if (f->snaps[k] && f->snaps[k]->state != ENGINE_FINISHED &&
                f->snaps[k]->state != ENGINE_FAILED) {
                s = f->snaps[k]->state;
                break;
            }
    if (f->source_done && f->run && f->run->replay) /* a recording that ends before its run */
        return "ENDED";
    if (quitting)
        return "STOPPING";
    if (f->run && f->run->watch && f->run->idle[0])
        return "WATCHING";
    if (s == ENGINE_PAUSED)
        return "PAUSED";
    return s == ENGINE_STARTING ? "STARTING" : "RUNNING";
}

double ui_frame_elapsed_s(const struct ui_frame *f) {
    uint64_t t0 = f->run->start_ns, t1 = f->now_ns;
    bool ended = ui_frame_ended(f, NULL) || f->source_done;
    if (ended && f->snap->t_ns > t0 && f->snap->t_ns < t1)
        t1 = f->snap->t_ns;
    return t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
}

int ui_header_rates(const struct engine_snap *s, char *buf, size_t n) {
    char val[24] = "n/a", chunk[48] = "", samples[24] = "n/a", steps[32] = "";
    if (s->has_val)
        snprintf(val, sizeof(val), "%.4f", s->val_loss);
    if (!(s->na & ENGINE_NA_CHUNK) && s->chunk_bars > 0)
        snprintf(chunk, sizeof(chunk), "  chunk %d bars", s->chunk_bars);
    else if (!(s->na & ENGINE_NA_CHUNK))
        snprintf(chunk, sizeof(chunk), "  chunk whole session");
    if (!(s->na & ENGINE_NA_SAMPLES))
        snprintf(samples, sizeof(samples), "%.0f", s->samples_per_s);
    if (s->job && (s->na & ENGINE_NA_STEPS))
        snprintf(steps, sizeof(steps), "  steps/s n/a");
    else if (s->job)
        snprintf(steps, sizeof(steps), "  steps/s %.1f", s->steps_per_s);
    return snprintf(buf, n, " val %s%s  samples/s %s%s", val, chunk, samples, steps);
}

const char *ui_header_job_at(const struct engine_snap *s, char *buf, size_t n) {
    if (s->epoch <= 0)
        snprintf(buf, n, "no step yet");
    else if (s->epochs > 0)
        snprintf(buf, n, "epoch %d/%d  step %lld", s->epoch, s->epochs, (long long)s->step);
    else
        snprintf(buf, n, "epoch %d  step %lld", s->epoch, (long long)s->step);
    return s->epochs > 0 ? "no ETA: the job did not tell connect(steps_per_epoch=)"
                         : "no ETA: the job did not tell connect(epochs=, steps_per_epoch=)";
}

int ui_summary_lines(const struct ui_frame *f, char (*lines)[UI_SUMMARY_COLS], int max) {
    const struct engine_snap *s = f->snap;
    int n = 0;
    char el[16];
    ui_fmt_hms(el, sizeof(el), ui_frame_elapsed_s(f));
#define UI_SUMMARY_LINE(...)                                                                       \
    do {                                                                                           \
        if (n < max)                                                                               \
            snprintf(lines[n++], UI_SUMMARY_COLS, __VA_ARGS__);                                    \
    } while (0)
    UI_SUMMARY_LINE("%-12s %s", "run",
                    s->state == ENGINE_FAILED     ? "failed (the events say why)"
                    : s->state == ENGINE_FINISHED ? "finished"
                                                  : "the recording ends here");
    UI_SUMMARY_LINE("%-12s %d epochs, %lld steps in %s", "trained", s->epoch, (long long)s->step,
                    el);
    if (s->has_val)
        UI_SUMMARY_LINE("%-12s %.4f last, best %.4f at epoch %d", "val loss", s->val_loss,
                        s->best_val_loss, s->best_epoch);
    else
        UI_SUMMARY_LINE("%-12s not measured (no epoch was evaluated)", "val loss");
    if (s->has_loss)
        UI_SUMMARY_LINE("%-12s %.4f", "train loss", s->loss);
    if (s->samples_per_s > 0 && !(s->na & ENGINE_NA_SAMPLES))
        UI_SUMMARY_LINE("%-12s %.0f", "samples/s", s->samples_per_s);
    if (s->job && !(s->na & ENGINE_NA_STEPS)) /* a job's rate over its last second or so */
        UI_SUMMARY_LINE("%-12s %.1f", "steps/s", s->steps_per_s);
    UI_SUMMARY_LINE("%-12s %s", "checkpoint", s->checkpoint_path[0] ? s->checkpoint_path : "none");
    if (s->best_path[0])
        UI_SUMMARY_LINE("%-12s %s (epoch %d)", "best model", s->best_path, s->best_epoch);
#undef UI_SUMMARY_LINE
    return n;
}
