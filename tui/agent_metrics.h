/* What ringside exposes to Prometheus: the metric families, their names (Prometheus
 * conventions: base units, _total counters), help and labels, built from the snapshots the
 * dashboard also reads. A value nobody could read is left out, never exported as 0. */
#ifndef RINGSIDE_TUI_AGENT_METRICS_H
#define RINGSIDE_TUI_AGENT_METRICS_H

#include "backend/core/ev.h"
#include "backend/kmsg/kmsg.h"

#include <stdint.h>
#include <stdio.h>

struct tele_snap;
struct engine_snap;
struct trace;

struct agent_metrics_in {
    const struct tele_snap *tele;     /* every GPU's telemetry, or NULL */
    const struct engine_snap *engine; /* the training loop's state, or NULL (no --train) */
    struct trace *trace;              /* the synchronize histograms, or NULL */
    unsigned dev;                     /* the training device (sync histograms, watchdog) */
    int watch_state;                  /* enum trace_watch_state of dev, or -1 when unknown */
    const uint64_t *kmsg_counts;      /* [KMSG_CAT_COUNT] driver events since start, or NULL */
    const double *phase_seconds;      /* [PHASE_COUNT] time spent per phase, or NULL */
};

/* Write every family that has data, in the Prometheus text format. 0, or the first error
 * (-EINVAL: a bug in a name; -errno: the write). */
int agent_metrics_write(FILE *out, const struct agent_metrics_in *in);

#endif
