/* Volume profile (VPOC) reference: price levels, per-session profiles built chunk by chunk,
 * point of control and value area. The GPU kernels must agree with this code exactly. */
#ifndef RINGSIDE_BACKEND_VPOC_VPOC_H
#define RINGSIDE_BACKEND_VPOC_VPOC_H

#include "backend/data/data_series.h"

#include <stddef.h>
#include <stdint.h>

/* Volumes in a profile are fixed point: round(volume * 2^16), so sums are exact integers and
 * every device and every chunking adds the same numbers. */
#define VPOC_FIX_SHIFT 16
#define VPOC_FIX_ONE   ((int64_t)1 << VPOC_FIX_SHIFT)

enum vpoc_profile_kind {
    VPOC_CLOSE, /* each bar's volume at its close's level */
    VPOC_RANGE, /* each bar's volume spread evenly over low..high levels inclusive */
};

struct vpoc_params {
    enum vpoc_profile_kind profile;
    double tick;       /* > 0; level = round(price / tick) */
    double value_area; /* in (0, 1], default 0.70 */
};

/* The compact per-bar input the compute backends read (host or device memory). */
struct vpoc_bar {
    double high, low, close, volume;
};

struct vpoc_result {
    int64_t poc_level, vah_level, val_level;
    double poc, vah, val; /* level * tick */
    int64_t total_fix;    /* sum of the profile, fixed point */
};

/* Most price levels one session's profile may span (a 128 MiB profile): more means the tick
 * does not fit the data. */
#define VPOC_MAX_LEVELS ((uint64_t)1 << 24)

/* round(price / tick) as an integer level (half away from zero, as llround). */
int64_t vpoc_level(double price, double tick);

/* Levels [*lo, *hi] one bar touches: its close's level (close profile), or low's to high's
 * (range profile; swapped if high < low). */
void vpoc_bar_levels(const struct vpoc_bar *b, const struct vpoc_params *p, int64_t *lo,
                     int64_t *hi);

/* Level range [*lo, *hi] that bars [0, n) touch under the profile kind (n >= 1). */
void vpoc_level_range(const struct vpoc_bar *bars, size_t n, const struct vpoc_params *p,
                      int64_t *lo, int64_t *hi);

/* Fixed-point volume one level receives from a bar covering n_levels levels:
 * llround(volume * 2^16 / n_levels). */
int64_t vpoc_fix_share(double volume, int64_t n_levels);

/* Add bars [0, n) into hist, whose index 0 is level base and which has n_levels entries
 * covering every level the bars touch. Accumulates: call once per chunk. */
void vpoc_accumulate(const struct vpoc_bar *bars, size_t n, const struct vpoc_params *p,
                     int64_t base, int64_t *hist, size_t n_levels);

/* POC (ties to the lowest level) and value area by the walk in docs/commands.md (vpoc), over a
 * profile whose index 0 is level base. n_levels >= 1. */
void vpoc_finalize(const int64_t *hist, size_t n_levels, int64_t base, const struct vpoc_params *p,
                   struct vpoc_result *out);

/* Check every session's level span against VPOC_MAX_LEVELS before any profile is allocated.
 * 0, or -EINVAL with err = "session 2024-01-02 spans N price levels at tick T (at most M)". */
int vpoc_sessions_check(const struct vpoc_bar *bars, const struct data_sessions *ss,
                        const struct vpoc_params *p, char *err, size_t errlen);

/* Convert data bars to vpoc bars (n entries). */
void vpoc_bars_from_series(const struct data_bar *in, size_t n, struct vpoc_bar *out);

/* Whole-session reference in one go (allocates its own profile): 0, -ENOMEM, or -EINVAL when
 * n == 0. */
int vpoc_session(const struct vpoc_bar *bars, size_t n, const struct vpoc_params *p,
                 struct vpoc_result *out);

/* The largest VPOC chunk size in bars anyone may ask for (--chunk, the config file, the
 * engine's commands, POST /control); a session of one-minute bars has 1440. */
#define VPOC_CHUNK_MAX 1000000

/* The next (dir > 0) or previous (dir < 0) VPOC chunk size on the ladder 125, 250, 500, 1000,
 * 2000, 3500, whole session (0); a size off the ladder moves to the nearest rung that way;
 * the ends stay where they are. */
int vpoc_chunk_step(int chunk, int dir);

#endif
