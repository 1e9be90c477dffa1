/* The training devices of a run as the dashboard names, compares and lays them out: the
 * header's device list, the step-time skew, which devices fit beside each other. Pure: no
 * curses, so it tests alone. */
#ifndef RINGSIDE_TUI_UI_DEVICES_H
#define RINGSIDE_TUI_UI_DEVICES_H

#include "backend/engine/engine.h"
#include "backend/record/run_info.h"

#include <stdbool.h>
#include <stddef.h>

/* The device index of rank k, as events and labels name it ("dev1"): run->devices[k], or k
 * when the run lists no devices (or k is past them). */
unsigned ui_dev_index(const struct run_info *run, unsigned k);

/* The training devices for the header: "1 device: NAME", "2 devices: NVIDIA H100 x2",
 * "3 devices: A x2, B" (names in rank order of first appearance). A device's name is its
 * snapshot's (snaps[k], k < n; NULL entries and n 0 fall back to run->dev_name); the count is
 * run->n_devices (at least n, at least 1). Returns the length it would have, as snprintf. */
int ui_devices_label(const struct run_info *run, const struct engine_snap *const *snaps, unsigned n,
                     char *buf, size_t len);

/* The fewest columns a device name or the host is cut to, ".." included. */
#define UI_DEVICES_NAME_MIN 6

/* s in at most width columns: whole where it fits, else cut with ".." as its last two
 * columns, so a cut always shows. Returns the length written, as snprintf. */
int ui_devices_fit(char *buf, size_t len, const char *s, int width);

/* ui_devices_label in at most width columns, never cut silently: the whole label where it
 * fits; else every name cut to the same length with "..", the counts kept ("8 devices: NVIDIA
 * H1.. x8"); else the count alone, "8 devices: ..", itself cut with ".." below that. */
int ui_devices_label_fit(const struct run_info *run, const struct engine_snap *const *snaps,
                         unsigned n, int width, char *buf, size_t len);

/* The header's run line in at most width columns: "  HOST  BACKEND  LABEL  STATUS" (status
 * may be NULL or ""). Where it does not fit, the host gives way first (down to
 * UI_DEVICES_NAME_MIN), then the status, then the device label is shortened; every cut is
 * marked with "..". Returns the length written, as snprintf. */
int ui_devices_header(const struct run_info *run, const struct engine_snap *const *snaps,
                      unsigned n, const char *status, int width, char *buf, size_t len);

/* The spread of the devices' step times (snap->step_ms; devices without one are left out). */
struct ui_skew {
    unsigned slow, fast;     /* their ranks */
    double slow_ms, fast_ms; /* their step times */
    double skew_ms;          /* slow_ms - fast_ms */
};

/* The skew over snaps[0..n) (NULL entries skipped); false when fewer than two devices have a
 * step time yet. */
bool ui_devices_skew(const struct engine_snap *const *snaps, unsigned n, struct ui_skew *out);

/* The sync panel's line for one device (dev: its index; sel: the selected one, starred):
 * "dev1* step 12.1ms  sync x120 p99 1.2ms  allreduce x14 p50 310.0us p99 1.1ms" (no step,
 * sync or all-reduce part while there is none of it). A part that would go past width
 * columns is left out whole, never cut inside a number (width <= 0: no limit). Returns the
 * length, as snprintf. */
int ui_devices_sync_line(const struct engine_snap *s, unsigned dev, bool sel, int width, char *buf,
                         size_t n);

/* "step skew 1.20ms: dev1 slowest (14.50ms vs 13.30ms on dev0)" for sk over run's devices.
 * Returns the length, as snprintf. */
int ui_devices_skew_line(const struct ui_skew *sk, const struct run_info *run, char *buf, size_t n);

/* Which of n devices to show where only room of them fit, keeping rank sel in view: returns
 * the first rank shown; *shown gets how many (n when all fit, else room; at least 1 when n is).
 * The caller marks the n - *shown left out ("+N more"). */
unsigned ui_devices_window(unsigned n, unsigned room, unsigned sel, unsigned *shown);

/* Side-by-side columns for n devices in width columns, each at least min_w wide (1 column
 * gap between them): how many fit, between 1 and n (1 when n is 0). */
unsigned ui_devices_columns(int width, int min_w, unsigned n);

/* "+3 more" into buf for hidden > 0, "" otherwise. */
void ui_devices_more(unsigned hidden, char *buf, size_t len);

#endif
