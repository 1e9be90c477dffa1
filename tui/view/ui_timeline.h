/* The timeline panel's curses-free part: what is under way on a device (from its snapshot and
 * its sync in flight), which rows the compact form has room for, the legend of the phases its
 * cells show, and the words for what the loop does now and how long a call has been waiting. */
#ifndef RINGSIDE_TUI_VIEW_UI_TIMELINE_H
#define RINGSIDE_TUI_VIEW_UI_TIMELINE_H

#include "backend/engine/engine.h"
#include "tui/view/ui_model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What s says is under way (its phase, when the source knows its start) and the sync in
 * flight inf (NULL: none), for ui_model_paint. */
struct ui_live ui_timeline_live(const struct engine_snap *s, const struct trace_inflight *inf);

/* The compact form's rows under the title (the kernel row aside), drawn top down in this
 * order: the devices, the selected device's wait row, the time axis, the legend. */
struct ui_timeline_rows {
    unsigned devices; /* device rows: at least 1 */
    bool wait, axis, legend;
};

/* Rows for rows lines (>= 1) and n_devices devices (>= 1): the devices first, leaving a line
 * for the rest where there are two or more; then the axis, the legend and the wait row, in
 * that order of need, but for alarm (the sync in flight is past --sync-slow), when the wait
 * row comes first and the axis last. */
struct ui_timeline_rows ui_timeline_compact(int rows, unsigned n_devices, bool alarm);

/* The phases that cells[PHASE_COUNT] (cells of each phase over the rows drawn) shows, most
 * cells first, then in table order, into out; their count. */
int ui_timeline_legend(const unsigned cells[PHASE_COUNT], enum ev_phase_id *out);

/* How many of the legend's n phases (in its order) are named in width columns: the first
 * ones, as many as fit, as "x label", the rest by their letter x alone, a space between two. */
int ui_timeline_named(const enum ev_phase_id *ph, int n, int width);

/* What the loop does now on the device of s, into buf: the phase and, from a second on, for
 * how long ("cleanup 42s"); "step N" within an epoch's steps; else "idle". Returns the phase
 * named, or PHASE_COUNT (steps, idle). */
enum ev_phase_id ui_timeline_now(const struct engine_snap *s, uint64_t now_ns, char *buf, size_t n);

/* An age in at most 5 columns, as precise as they allow: "0.4s", "42s", "5m02s", "42m", "17h",
 * "5d". */
void ui_timeline_age(char *buf, size_t n, uint64_t ns);

#endif
