/* The GPU overlay's pages as plain text lines, built without curses so they test alone: every
 * field of one GPU with its source, the VRAM reconciliation across sources, and the providers'
 * diagnostics. */
#ifndef RINGSIDE_TUI_VIEW_GPU_VIEW_H
#define RINGSIDE_TUI_VIEW_GPU_VIEW_H

#include "backend/engine/engine.h"
#include "backend/telemetry/tele.h"
#include "tui/doctor/doctor.h"
#include "tui/view/theme.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

enum gpu_view_page { GPU_VIEW_DETAIL, GPU_VIEW_RECONCILE, GPU_VIEW_PROVIDERS, GPU_VIEW_PAGES };

#define GPU_VIEW_TEXT 192

struct gpu_view_line {
    enum theme_role role;
    char text[GPU_VIEW_TEXT];
};

/* The lines of page for telemetry GPU gpu (index into t->gpus); es is the training engine's
 * snapshot (its device and pool are placed beside the GPU it runs on). t may be NULL (no
 * telemetry in this run). Returns the number of lines written (at most max). */
int gpu_view_lines(const struct tele_snap *t, const struct engine_snap *es, int gpu,
                   enum gpu_view_page page, struct gpu_view_line *out, int max);

const char *gpu_view_page_name(enum gpu_view_page page);

/* The telemetry GPU the engine trains on (by PCI address), or -1. */
int gpu_view_training(const struct tele_snap *t, const struct engine_snap *es);

/* The rank (index into snaps, n of them) of the training device on telemetry GPU gpu (index
 * into t->gpus), or -1: matched by the snapshot's PCI address, or where it has none by the
 * device index (never for the CPU backend's simulated devices). */
int gpu_view_train_rank(const struct tele_snap *t, int gpu, const struct engine_snap *const *snaps,
                        unsigned n);

/* A field's value in its unit: "20.1 GiB", "1.2 MiB/s", "97", "68.5". */
void gpu_view_fmt(char *buf, size_t n, enum tele_field f, double v);

/* Rows of r per status (indexed by enum doctor_status); all 0 when r is NULL. */
void gpu_view_doctor_counts(const struct doctor_report *r, size_t counts[DOCTOR_SKIP + 1]);

/* The doctor section of the details page: "doctor: not run yet ..." when r is NULL, else
 * "doctor HH:MM:SS: N ok, N warn, N fail, N skipped" (when: the run's local time), then the fail
 * rows and the warn rows (status, name, value; the remedy on the next line), as many as fit in
 * max lines, and how many more there are. running: a run is under way. Returns the lines
 * written. */
int gpu_view_doctor(const struct doctor_report *r, time_t when, bool running,
                    struct gpu_view_line *out, int max);

#endif
