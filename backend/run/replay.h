/* `ringside replay`: a source (backend/run/source.h) that plays a JSON-lines recording back on its
 * own clock, reading the file incrementally and synthesising snapshots from the events released. */
#ifndef RINGSIDE_BACKEND_RUN_REPLAY_H
#define RINGSIDE_BACKEND_RUN_REPLAY_H

#include "backend/run/source.h"

#include <stddef.h>
#include <stdint.h>

#define REPLAY_SPEED_MIN  0.1
#define REPLAY_SPEED_MAX  100.0
#define REPLAY_LINE_BYTES (1u << 20) /* longest line accepted */

/* Open a recording and read its run line. speed in [REPLAY_SPEED_MIN, REPLAY_SPEED_MAX].
 * 0; -errno for a file that cannot be read ("FILE: reason"); -EINVAL for an empty file or one
 * that does not start with a run line ("FILE: not a ringside recording (no run line)"), a bad
 * run line or a bad speed. A bad line later stops the replay there (see status()). */
int replay_open(struct source **out, const char *path, double speed, char *err, size_t errlen);

/* Replace the playback clock (default: mono_now_ns) by now(ctx), e.g. a manual clock in tests.
 * Meant for right after replay_open: the recording's clock restarts from where it was at the
 * last pause, speed change or open (so, then, exactly at the first event), as of now(ctx). */
void replay_set_clock(struct source *src, uint64_t (*now)(void *ctx), void *ctx);

/* The playback speed now (a multiple of real time). */
double replay_speed(const struct source *src);

#endif
