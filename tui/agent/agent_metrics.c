/* The metric families exposed to Prometheus, from the telemetry, engine and trace snapshots. */
#include "tui/agent/agent_metrics.h"

#include "backend/engine/engine.h"
#include "backend/kmsg/kmsg.h"
#include "backend/telemetry/tele.h"
#include "backend/trace/trace.h"
#include "tui/agent/prom.h"

#include <stdio.h>
#include <stdlib.h>

/* A telemetry field as a metric: families with the same name are adjacent, told apart by an
 * extra label. */
static const struct {
    enum tele_field f;
    const char *name, *help;
    enum prom_type type;
    double scale;                    /* the field's unit to the metric's base unit */
    const char *label, *label_value; /* the extra label, or NULL */
} agent_gpu_metrics[] = {
    {TELE_F_VRAM_TOTAL, "ringside_gpu_vram_total_bytes", "VRAM size", PROM_GAUGE, 1, NULL, NULL},
    {TELE_F_VRAM_USED, "ringside_gpu_vram_used_bytes", "VRAM in use (all processes)", PROM_GAUGE, 1,
     NULL, NULL},
    {TELE_F_GTT_USED, "ringside_gpu_gtt_used_bytes",
     "GTT (system memory mapped for the GPU) in "
     "use",
     PROM_GAUGE, 1, NULL, NULL},
    {TELE_F_BUSY, "ringside_gpu_busy_ratio", "fraction of time the GPU was busy", PROM_GAUGE, 0.01,
     NULL, NULL},
    {TELE_F_MEM_BUSY, "ringside_gpu_memory_busy_ratio", "fraction of time the memory was busy",
     PROM_GAUGE, 0.01, NULL, NULL},
    {TELE_F_TEMP, "ringside_gpu_temperature_celsius", "temperature by sensor", PROM_GAUGE, 1,
     "sensor", "edge"},
    {TELE_F_TEMP_HOTSPOT, "ringside_gpu_temperature_celsius", "temperature by sensor", PROM_GAUGE,
     1, "sensor", "junction"},
    {TELE_F_TEMP_MEM, "ringside_gpu_temperature_celsius", "temperature by sensor", PROM_GAUGE, 1,
     "sensor", "memory"},
    {TELE_F_POWER, "ringside_gpu_power_watts", "power draw", PROM_GAUGE, 1, NULL, NULL},
    {TELE_F_POWER_CAP, "ringside_gpu_power_cap_watts", "power limit", PROM_GAUGE, 1, NULL, NULL},
    {TELE_F_SCLK, "ringside_gpu_clock_hertz", "clock by domain", PROM_GAUGE, 1e6, "clock",
     "shader"},
    {TELE_F_MCLK, "ringside_gpu_clock_hertz", "clock by domain", PROM_GAUGE, 1e6, "clock",
     "memory"},
    {TELE_F_PCIE_TX, "ringside_gpu_pcie_bytes_per_second", "PCIe traffic by direction", PROM_GAUGE,
     1, "direction", "tx"},
    {TELE_F_PCIE_RX, "ringside_gpu_pcie_bytes_per_second", "PCIe traffic by direction", PROM_GAUGE,
     1, "direction", "rx"},
    {TELE_F_ECC_CE, "ringside_gpu_ecc_errors_total", "ECC/RAS errors by kind", PROM_COUNTER, 1,
     "kind", "corrected"},
    {TELE_F_ECC_UE, "ringside_gpu_ecc_errors_total", "ECC/RAS errors by kind", PROM_COUNTER, 1,
     "kind", "uncorrected"},
    {TELE_F_VRAM_LOST, "ringside_gpu_vram_lost_total", "times VRAM was lost in a GPU reset",
     PROM_COUNTER, 1, NULL, NULL},
};
#define AGENT_GPU_METRICS (sizeof(agent_gpu_metrics) / sizeof(agent_gpu_metrics[0]))

static void agent_gpus(struct prom_writer *w, const struct tele_snap *s) {
    for (size_t m = 0; m < AGENT_GPU_METRICS; m++) {
        bool any = false;
        for (unsigned k = 0; k < s->n_gpus; k++) {
            const struct tele_gpu *g = &s->gpus[k];
            double v;
            if (!tele_get(g, agent_gpu_metrics[m].f, &v))
                continue; /* unread: no sample rather than a fake 0 */
            if (!any)
                prom_family(w, agent_gpu_metrics[m].name, agent_gpu_metrics[m].type,
                            agent_gpu_metrics[m].help);
            any = true;
            char idx[12];
            snprintf(idx, sizeof(idx), "%d", g->index);
            struct prom_label l[4] = {
                {"gpu", idx},
                {"pci", g->pci},
                {"name", g->name},
                {agent_gpu_metrics[m].label, agent_gpu_metrics[m].label_value}};
            prom_sample(w, agent_gpu_metrics[m].name, l, agent_gpu_metrics[m].label ? 4 : 3,
                        v * agent_gpu_metrics[m].scale);
        }
    }
}

static void agent_gauge(struct prom_writer *w, const char *name, const char *help, double v) {
    prom_family(w, name, PROM_GAUGE, help);
    prom_sample(w, name, NULL, 0, v);
}

static void agent_pool(struct prom_writer *w, const struct engine_snap *e);
static void agent_devices(struct prom_writer *w, const struct agent_metrics_in *in);

static void agent_engine(struct prom_writer *w, const struct engine_snap *e,
                         const struct agent_metrics_in *in) {
    if (in->n_devs > 1)
        agent_devices(w, in);
    else
        agent_pool(w, e);
    if (e->has_loss)
        agent_gauge(w, "ringside_train_loss", "mean training loss since the last metric", e->loss);
    if (e->has_val)
        agent_gauge(w, "ringside_train_val_loss", "validation loss of the last epoch", e->val_loss);
    agent_gauge(w, "ringside_train_epoch", "epoch in progress", e->epoch);
    if (in->n_devs <= 1) {
        prom_family(w, "ringside_train_steps_total", PROM_COUNTER, "training steps done");
        prom_sample(w, "ringside_train_steps_total", NULL, 0, (double)e->step);
    }
    agent_gauge(w, "ringside_train_samples_per_second", "training throughput", e->samples_per_s);
    agent_gauge(w, "ringside_vpoc_chunk_bars", "bars per VPOC chunk (0: whole sessions)",
                e->chunk_bars);
    agent_gauge(w, "ringside_train_running",
                "1 while the loop runs or is paused, 0 once it finished, stopped or failed",
                e->state == ENGINE_RUNNING || e->state == ENGINE_PAUSED ? 1 : 0);
}

/* One device's pool, unlabelled (a run on one device). */
static void agent_pool(struct prom_writer *w, const struct engine_snap *e) {
    agent_gauge(w, "ringside_pool_allocated_bytes", "memory pool: bytes in live blocks",
                (double)e->mem.allocated_bytes);
    agent_gauge(w, "ringside_pool_reserved_bytes", "memory pool: bytes held from the device",
                (double)e->mem.reserved_bytes);
    agent_gauge(w, "ringside_pool_largest_free_bytes", "memory pool: the largest free block",
                (double)e->mem.largest_free_bytes);
    agent_gauge(w, "ringside_pool_fragmentation_ratio",
                "memory pool: 1 - largest free block / free bytes", e->mem.frag);
    prom_family(w, "ringside_pool_oom_total", PROM_COUNTER,
                "allocations the device refused even after the cache was released");
    prom_sample(w, "ringside_pool_oom_total", NULL, 0, (double)e->mem.n_oom);
}

/* A gauge or counter family with a sample per device (label device="<index>"). */
static void agent_per_dev(struct prom_writer *w, const char *name, enum prom_type type,
                          const char *help, const struct agent_metrics_in *in,
                          double (*get)(const struct engine_snap *s)) {
    prom_family(w, name, type, help);
    for (unsigned k = 0; k < in->n_devs; k++) {
        char dev[12];
        snprintf(dev, sizeof(dev), "%u", in->devs[k]->device);
        prom_sample(w, name, (struct prom_label[]){{"device", dev}}, 1, get(in->devs[k]));
    }
}

static double agent_allocated(const struct engine_snap *s) {
    return (double)s->mem.allocated_bytes;
}
static double agent_reserved(const struct engine_snap *s) {
    return (double)s->mem.reserved_bytes;
}
static double agent_largest(const struct engine_snap *s) {
    return (double)s->mem.largest_free_bytes;
}
static double agent_frag(const struct engine_snap *s) {
    return s->mem.frag;
}
static double agent_oom(const struct engine_snap *s) {
    return (double)s->mem.n_oom;
}
static double agent_steps(const struct engine_snap *s) {
    return (double)s->step;
}
static double agent_step_seconds(const struct engine_snap *s) {
    return s->step_ms / 1e3;
}

/* Several devices: the pool, steps and step time per device, and each device's collective
 * calls by op (calls, failures, bytes, time in them, p50 and p99). */
static void agent_devices(struct prom_writer *w, const struct agent_metrics_in *in) {
    agent_per_dev(w, "ringside_pool_allocated_bytes", PROM_GAUGE,
                  "memory pool: bytes in live blocks", in, agent_allocated);
    agent_per_dev(w, "ringside_pool_reserved_bytes", PROM_GAUGE,
                  "memory pool: bytes held from the device", in, agent_reserved);
    agent_per_dev(w, "ringside_pool_largest_free_bytes", PROM_GAUGE,
                  "memory pool: the largest free block", in, agent_largest);
    agent_per_dev(w, "ringside_pool_fragmentation_ratio", PROM_GAUGE,
                  "memory pool: 1 - largest free block / free bytes", in, agent_frag);
    agent_per_dev(w, "ringside_pool_oom_total", PROM_COUNTER,
                  "allocations the device refused even after the cache was released", in,
                  agent_oom);
    agent_per_dev(w, "ringside_train_steps_total", PROM_COUNTER, "training steps done", in,
                  agent_steps);
    agent_per_dev(w, "ringside_train_step_seconds", PROM_GAUGE,
                  "the device's mean step time over the last window", in, agent_step_seconds);
    static const struct {
        const char *name, *help;
        enum prom_type type;
    } fams[] = {
        {"ringside_collective_calls_total", "collective calls, by device and op", PROM_COUNTER},
        {"ringside_collective_errors_total", "collective calls that failed", PROM_COUNTER},
        {"ringside_collective_bytes_total", "bytes the collective calls reduced", PROM_COUNTER},
        {"ringside_collective_seconds_total", "time inside collective calls", PROM_COUNTER},
        {"ringside_collective_p50_seconds", "median collective call time", PROM_GAUGE},
        {"ringside_collective_p99_seconds", "99th percentile collective call time", PROM_GAUGE},
    };
    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
        prom_family(w, fams[f].name, fams[f].type, fams[f].help);
        for (unsigned k = 0; k < in->n_devs; k++)
            for (unsigned op = EV_COLL_INIT; op < EV_COLL_COUNT; op++) {
                const struct comm_op_stats *c = &in->devs[k]->coll[op];
                double v[] = {(double)c->calls,        (double)c->errors,
                              (double)c->bytes,        (double)c->sum_ns / 1e9,
                              (double)c->p50_ns / 1e9, (double)c->p99_ns / 1e9};
                char dev[12];
                snprintf(dev, sizeof(dev), "%u", in->devs[k]->device);
                struct prom_label l[] = {{"device", dev}, {"op", ev_coll_op_name(op)}};
                prom_sample(w, fams[f].name, l, 2, v[f]);
            }
    }
}

/* The sync latency histogram of op on dev: 1, 2.5 and 5 of each decade from 1 us to 100 s. */
static void agent_sync(struct prom_writer *w, struct trace *t, const struct agent_metrics_in *in) {
    static const double bounds[] = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
                                    1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,  0.25,   0.5,
                                    1,    2.5,    5,    10,   25,     50,   100};
    enum { NB = sizeof(bounds) / sizeof(bounds[0]) };
    prom_family(w, "ringside_sync_latency_seconds", PROM_HISTOGRAM,
                "how long a synchronize waited, by operation");
    struct trace_hist *h = malloc(sizeof(*h)); /* 9 KiB: off a server thread's stack */
    unsigned n = in->n_devs > 1 ? in->n_devs : 1;
    for (unsigned i = 0; h && i < SYNC_OP_COUNT * n; i++) {
        unsigned op = i % SYNC_OP_COUNT,
                 dev = n > 1 ? in->devs[i / SYNC_OP_COUNT]->device : in->dev;
        trace_sync_hist(t, dev, (enum ev_sync_op)op, h);
        uint64_t counts[NB] = {0};
        for (size_t b = 0; b < TRACE_HIST_BUCKETS; b++) {
            if (!h->bucket[b])
                continue;
            uint64_t lo, hi;
            trace_hist_bucket_range(b, &lo, &hi);
            double top = (double)(hi - 1) / 1e9; /* the bucket's largest value */
            for (size_t k = 0; k < NB; k++)
                if (top <= bounds[k]) {
                    counts[k] += h->bucket[b];
                    break;
                }
        }
        char devs[12];
        snprintf(devs, sizeof(devs), "%u", dev);
        struct prom_label l[] = {{"device", devs}, {"op", ev_sync_op_name(op)}};
        prom_histogram(w, "ringside_sync_latency_seconds", l, 2, bounds, counts, NB,
                       (double)h->sum_ns / 1e9, h->count);
    }
    free(h);
}

static void agent_self(struct prom_writer *w, const struct agent_metrics_self *a) {
    struct prom_label info[] = {
        {"version", a->version}, {"host", a->host}, {"backend", a->backend}};
    prom_family(w, "ringside_agent_info", PROM_GAUGE, "the agent: version, host, training backend");
    prom_sample(w, "ringside_agent_info", info, 3, 1);
    prom_family(w, "ringside_agent_start_time_seconds", PROM_GAUGE,
                "when the agent started, in seconds since the Unix epoch");
    prom_sample(w, "ringside_agent_start_time_seconds", NULL, 0, a->start_time_seconds);
    static const char *const http[] = {"answered", "unauthorized", "refused"};
    const uint64_t n[] = {a->http_answered, a->http_unauthorized, a->http_refused};
    prom_family(w, "ringside_agent_http_requests_total", PROM_COUNTER,
                "HTTP requests answered, by outcome");
    for (unsigned k = 0; k < 3; k++)
        prom_sample(w, "ringside_agent_http_requests_total",
                    (struct prom_label[]){{"outcome", http[k]}}, 1, (double)n[k]);
    static const char *const why[] = {"request_timeout",     "evicted",
                                      "over_limit",          "over_address_limit",
                                      "over_follower_limit", "over_follower_address_limit",
                                      "auth_backoff"};
    const uint64_t closed[] = {a->http_timed_out,      a->http_evicted,
                               a->http_over_limit,     a->http_over_address,
                               a->http_over_followers, a->http_over_follower_address,
                               a->http_auth_backoff};
    prom_family(w, "ringside_agent_http_connections_closed_total", PROM_COUNTER,
                "HTTP connections shut down or refused by the request deadline and the limits");
    for (unsigned k = 0; k < sizeof(why) / sizeof(why[0]); k++)
        prom_sample(w, "ringside_agent_http_connections_closed_total",
                    (struct prom_label[]){{"reason", why[k]}}, 1, (double)closed[k]);
    prom_family(w, "ringside_agent_http_connections", PROM_GAUGE, "HTTP connections open now");
    prom_sample(w, "ringside_agent_http_connections", NULL, 0, a->http_connections);
    prom_family(w, "ringside_agent_event_followers", PROM_GAUGE, "/events streams open now");
    prom_sample(w, "ringside_agent_event_followers", NULL, 0, a->event_followers);
    prom_family(w, "ringside_agent_event_lines_total", PROM_COUNTER, "lines written to /events");
    prom_sample(w, "ringside_agent_event_lines_total", NULL, 0, (double)a->event_lines);
    prom_family(w, "ringside_agent_event_lines_evicted_total", PROM_COUNTER,
                "lines pushed out of the /events window (a follower that far behind sees a gap)");
    prom_sample(w, "ringside_agent_event_lines_evicted_total", NULL, 0, (double)a->events_evicted);
    prom_family(w, "ringside_agent_events_dropped_total", PROM_COUNTER,
                "events lost before the agent read them (its rings were full)");
    prom_sample(w, "ringside_agent_events_dropped_total", NULL, 0, (double)a->ring_dropped);
}

int agent_metrics_write(FILE *out, const struct agent_metrics_in *in) {
    struct prom_writer w;
    if (in->openmetrics)
        prom_init_openmetrics(&w, out);
    else
        prom_init(&w, out);
    if (in->self)
        agent_self(&w, in->self);
    if (in->tele)
        agent_gpus(&w, in->tele);
    if (in->engine)
        agent_engine(&w, in->engine, in);
    if (in->trace)
        agent_sync(&w, in->trace, in);
    if (in->watch_state >= 0) {
        char devs[12];
        snprintf(devs, sizeof(devs), "%u", in->dev);
        prom_family(&w, "ringside_watchdog_state", PROM_GAUGE,
                    "the hang watchdog: 0 ok, 1 a sync is slow, 2 a sync is hung");
        prom_sample(&w, "ringside_watchdog_state", (struct prom_label[]){{"device", devs}}, 1,
                    in->watch_state);
    }
    if (in->kmsg_counts) {
        prom_family(&w, "ringside_driver_events_total", PROM_COUNTER,
                    "kernel-log driver events by category");
        for (unsigned c = 1; c < KMSG_CAT_COUNT; c++) /* 0 is "none" */
            prom_sample(&w, "ringside_driver_events_total",
                        (struct prom_label[]){{"category", kmsg_category_name(c)}}, 1,
                        (double)in->kmsg_counts[c]);
    }
    if (in->phase_seconds) {
        prom_family(&w, "ringside_phase_seconds_total", PROM_COUNTER,
                    "time the training loop spent in each phase (the device's phases overlap the "
                    "host's sync "
                    "wait, so phases can add up to more than the wall time)");
        for (unsigned p = 0; p < PHASE_COUNT; p++)
            prom_sample(&w, "ringside_phase_seconds_total",
                        (struct prom_label[]){{"phase", ev_phase_name(p)}}, 1,
                        in->phase_seconds[p]);
    }
    return prom_finish(&w);
}
