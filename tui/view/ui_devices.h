/* The training devices of a run as the dashboard names, compares and lays them out: the
 * header's device list, the step-time skew, which devices fit beside each other. Pure: no
 * curses, so it tests alone. */
#ifndef RINGSIDE_TUI_VIEW_UI_DEVICES_H
#define RINGSIDE_TUI_VIEW_UI_DEVICES_H

#include "backend/engine/engine.h"
#include "backend/record/run_info.h"

#include <stdbool.h>
#include <stddef.h>

/* The device index of rank k, as events and labels name it ("dev1"): run->devices[k], or k
 * when the run lists no devices (or k is past them). */
unsigned ui_dev_index(const struct run_info *run, unsigned k);

/* The name the view gives training device k: "dev3" (its index) for a device of ours; a
 * watched job (run->ranks[k].valid) as its script knows it: "rank 1", or with world "rank 1/2"
 * (1 of 2, where the world size is known); a job in no process group by its name
 * ("train.py"), its pid added where another job shown has the same name. Returns the length,
 * as snprintf. */
int ui_devices_name(const struct run_info *run, unsigned k, bool world, char *buf, size_t len);

/* ui_devices_name in at most width columns: with the world size where it fits, else without,
 * else cut with ".." (ui_devices_fit). */
int ui_devices_name_fit(const struct run_info *run, unsigned k, int width, char *buf, size_t len);

/* What else is known of watched job k, each part whole and led by two spaces, as many as fit
 * in width columns (<= 0: all): "  local 1  host node2  pid 4242  gloo" (its local rank, its
 * host where it is not this one, its pid, its process group's backend; where they do not all
 * fit the local rank goes first, then the backend, the pid, the host). "" for a device of
 * ours or a part not known. Returns the length, as snprintf. */
int ui_devices_who_more(const struct run_info *run, unsigned k, int width, char *buf, size_t len);

/* Device k named in full within width columns (<= 0: no limit): ui_devices_name_fit, then as
 * much of ui_devices_who_more as the rest holds ("rank 1/2  local 1  pid 4242  gloo"). */
int ui_devices_who(const struct run_info *run, unsigned k, int width, char *buf, size_t len);

/* The training devices for the header: "1 device: NAME", "2 devices: NVIDIA H100 x2",
 * "3 devices: A x2, B" (names in rank order of first appearance). A device's name is its
 * snapshot's (snaps[k], k < n; NULL entries and n 0 fall back to run->dev_name); the count is
 * run->n_devices (at least n, at least 1). Watched jobs are counted as what they are: "2 ranks
 * (gloo): CPU x2", "2 of 4 ranks (nccl): ..." (fewer attached than the world size), "3 jobs:
 * ...", "3 jobs, 2 ranks: ...". Returns the length it would have, as snprintf. */
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

/* The sync panel's line for device k of run (s: its snapshot; sel: the selected one,
 * starred), its name (ui_devices_name with the world size) padded to name_w columns:
 * "dev1* step 12.1ms  sync x120 p99 1.2ms  allreduce x14 p50 310.0us p99 1.1ms" (no step,
 * sync or all-reduce part while there is none of it), then for a watched job what else is
 * known of it as far as it goes (ui_devices_who_more). A part that would go past width
 * columns is left out whole, never cut inside a number (width <= 0: no limit). Returns the
 * length, as snprintf. */
int ui_devices_sync_line(const struct engine_snap *s, const struct run_info *run, unsigned k,
                         int name_w, bool sel, int width, char *buf, size_t n);

/* "step skew 1.20ms: dev1 slowest (14.50ms vs 13.30ms on dev0)" for sk over run's devices
 * (named as ui_devices_name does: "rank 1 slowest (... on rank 0)"). Returns the length, as
 * snprintf. */
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
