/* What ringside exposes to Prometheus: the metric families, their names (Prometheus
 * conventions: base units, _total counters), help and labels, built from the snapshots the
 * dashboard also reads. A value nobody could read is left out, never exported as 0. */
#ifndef RINGSIDE_TUI_AGENT_AGENT_METRICS_H
#define RINGSIDE_TUI_AGENT_AGENT_METRICS_H

#include "backend/core/ev.h"
#include "backend/kmsg/kmsg.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct tele_snap;
struct engine_snap;
struct trace;

struct agent_metrics_in {
    const struct tele_snap *tele;     /* every GPU's telemetry, or NULL */
    const struct engine_snap *engine; /* the training loop's state, or NULL (no --train) */
    /* Several training devices: each one's snapshot in rank order (n_devs > 1); the pool,
     * step and sync families then have a sample per device, labelled device="<index>", and
     * the collective families come. n_devs 0 or 1: one device, the families as ever. */
    const struct engine_snap *const *devs;
    unsigned n_devs;
    struct trace *trace;                   /* the synchronize histograms, or NULL */
    unsigned dev;                          /* the training device (sync histograms, watchdog) */
    int watch_state;                       /* enum trace_watch_state of dev, or -1 when unknown */
    const uint64_t *kmsg_counts;           /* [KMSG_CAT_COUNT] driver events since start, or NULL */
    const double *phase_seconds;           /* [PHASE_COUNT] time spent per phase, or NULL */
    const struct agent_metrics_self *self; /* the agent's own counters, or NULL */
    bool openmetrics;                      /* OpenMetrics 1.0.0 rather than the text format */
};

/* The agent about itself. */
struct agent_metrics_self {
    const char *version, *host, *backend; /* ringside_agent_info's labels */
    double start_time_seconds;            /* the Unix time the agent started */
    /* answered since the start, by outcome: below 400, 401, other 4xx (each counted as it
     * happens: counters that never go back) */
    uint64_t http_answered, http_unauthorized, http_refused;
    /* connections shut down or refused (agent_http_stats): a request that did not arrive in
     * time, one pushed out for a new connection, every place taken (in all, from the address);
     * /events refused with every follower place taken (in all, from the address); a request
     * refused 429 while its address is held off for wrong tokens */
    uint64_t http_timed_out, http_evicted, http_over_limit, http_over_address;
    uint64_t http_over_followers, http_over_follower_address, http_auth_backoff;
    unsigned http_connections, event_followers; /* open now */
    uint64_t event_lines, events_evicted; /* lines written to /events; pushed out of its window */
    uint64_t ring_dropped;                /* events lost before the agent read them */
};

/* Write every family that has data, in the Prometheus text format. 0, or the first error
 * (-EINVAL: a bug in a name; -errno: the write). */
int agent_metrics_write(FILE *out, const struct agent_metrics_in *in);

#endif
