/* The dashboard's doctor: `D` runs the environment checks of `ringside doctor` (no GPU smoke
 * tests: the training loop owns the GPU) on a thread of their own, so the UI never waits on
 * them; the UI thread picks the report up when it is done and keeps the latest one for the GPU
 * overlay. */
#ifndef RINGSIDE_TUI_DASHBOARD_APP_DOCTOR_H
#define RINGSIDE_TUI_DASHBOARD_APP_DOCTOR_H

#include "backend/core/worker.h"
#include "backend/telemetry/tele.h"
#include "tui/doctor/doctor.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct app_doctor {
    struct worker w; /* mu also guards done */
    bool running;    /* UI thread: a run was started and is not picked up yet */
    bool done;       /* under w.mu: the thread has finished work */
    /* the run's input and output: the thread's alone from start until done */
    struct doctor_gpu gpus[DOCTOR_MAX_GPUS];
    size_t n_gpus;
    struct doctor_report *work;
    time_t started; /* when the run under way began */
    /* the UI thread's: the latest finished report (NULL: not run yet) and when it ran */
    struct doctor_report *last;
    time_t when;                    /* when it began */
    size_t counts[DOCTOR_SKIP + 1]; /* rows of last per status */
};

void app_doctor_init(struct app_doctor *d);

/* Start a run for the GPUs of the telemetry snapshot t (NULL: none known). 0, -EBUSY while a
 * run is under way, -ENOMEM or -errno of the thread's start. */
int app_doctor_start(struct app_doctor *d, const struct tele_snap *t);

/* From the UI thread, each frame: true when a run finished since the last call; d->last,
 * d->when and d->counts then describe it. */
bool app_doctor_poll(struct app_doctor *d);

/* Wait for a run under way (the checks read files only: bounded) and free everything. */
void app_doctor_fini(struct app_doctor *d);

#endif
