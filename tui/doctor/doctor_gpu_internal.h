/* What the GPU smoke tests (doctor_gpu.c) open to the unit tests: a test's findings and the
 * copies row, which reads the device only through its struct compute, so a fake backend can
 * stand in for one. */
#ifndef RINGSIDE_TUI_DOCTOR_DOCTOR_GPU_INTERNAL_H
#define RINGSIDE_TUI_DOCTOR_DOCTOR_GPU_INTERNAL_H

#include "tui/doctor/doctor.h"

struct compute;

/* What one test found: its row's status, value and remedy. */
struct doctor_out {
    enum doctor_status status;
    char value[256], remedy[512];
};

#define DOCTOR_COPY_BYTES (256u << 20) /* large transfers, as a loader's batches */
#define DOCTOR_COPY_REPS  5            /* copies timed each way, from each kind of memory */

/* The copies row through c->ops->copy_rate (which must be there): DOCTOR_COPY_BYTES from
 * pinned and from pageable host memory, each way, DOCTOR_COPY_REPS times; each figure is the
 * fastest copy's rate with the slowest's to the fastest's beside it. A warn when the fastest
 * pinned copy of the slower way reaches under half of what the PCIe link of c->info.pci
 * carries (read from sysfs; 3 GB/s when it cannot tell); a fail when a copy fails. *o starts
 * as an ok row with empty texts. */
void doctor_gpu_copy_rates(struct compute *c, struct doctor_out *o);

#endif
