/* What the dashboard remembers between frames, kept apart from drawing so it can be tested
 * without a terminal: recent phases for the timeline, recent text events, the chunk ladder. */
#ifndef RINGSIDE_TUI_APP_MODEL_H
#define RINGSIDE_TUI_APP_MODEL_H

#include "backend/core/ev.h"

#include <stddef.h>
#include <stdint.h>

#define APP_PHASES 32768 /* recent phase events kept for the timeline (~6 s at CPU rates) */
#define APP_LINES  256   /* recent text events kept for the events list */

struct app_line {
    uint64_t t_ns;
    uint8_t severity;
    char text[EV_TEXT_BYTES + 32];
};

struct app_model {
    struct ev_phase phases[APP_PHASES]; /* ring, newest at (phase_head - 1) */
    size_t phase_head, phase_count;
    struct app_line lines[APP_LINES]; /* ring, newest at (line_head - 1) */
    size_t line_head, line_count;
    uint64_t events_seen;
};

/* Fold one event into the model. */
void app_model_add(struct app_model *m, const struct ev *e);

/* Line k of the events list, 0 = newest; NULL past the end. */
const struct app_line *app_model_line(const struct app_model *m, size_t k);

/* Paint the timeline window [t0, t1) into cols cells: cell k covers
 * [t0 + k*w, t0 + (k+1)*w) and gets the newest phase overlapping it, or PHASE_COUNT.
 * One pass over the kept phases, newest first. */
void app_model_paint(const struct app_model *m, uint64_t t0, uint64_t t1, int cols,
                     enum ev_phase_id *out);

/* Next/previous VPOC chunk size on the ladder 125, 250, 500, 1000, 2000, 3500, whole (0). */
int app_chunk_step(int chunk, int dir);

/* "12.3 MiB"-style sizes and "00:01:23" durations. */
void app_fmt_bytes(char *buf, size_t n, uint64_t bytes);
void app_fmt_hms(char *buf, size_t n, double seconds);
void app_fmt_ns(char *buf, size_t n, uint64_t ns);

#endif
