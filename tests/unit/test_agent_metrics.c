/* The exposed metrics against the text format's rules (read back by a small validator), with
 * the values and labels they must carry, and no sample for a value nobody read. */
#include "backend/engine/engine.h"
#include "backend/telemetry/tele.h"
#include "backend/telemetry/tele_prov.h"
#include "backend/trace/trace.h"
#include "tui/agent/agent_metrics.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct tele_snap am_tele;
static struct engine_snap am_engine;

static int am_ok(void *arg) {
    (void)arg;
    return 0;
}

/* Write the metrics; the text is owned by the caller. */
static char *am_write(const struct agent_metrics_in *in) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    cr_assert_not_null(m);
    cr_assert_eq(agent_metrics_write(m, in), 0);
    fclose(m);
    return buf;
}

/* The format's rules, line by line: HELP then TYPE once per family, before its samples, which
 * are consecutive; a sample's name is its family's (histograms: _bucket, _sum, _count); label
 * lists are closed; values parse. Returns the number of samples. */
static int am_validate(const char *text) {
    char family[128] = "", type[16] = "", seen[64][128];
    int n_seen = 0, samples = 0;
    char line[2048];
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        cr_assert_lt(n, sizeof(line));
        memcpy(line, p, n);
        line[n] = '\0';
        p += n + (p[n] == '\n');
        char name[128];
        if (sscanf(line, "# HELP %127s", name) == 1) {
            for (int i = 0; i < n_seen; i++)
                cr_assert_str_neq(seen[i], name, "family %s appears twice", name);
            cr_assert_lt(n_seen, 64);
            snprintf(seen[n_seen++], sizeof(seen[0]), "%s", name);
            snprintf(family, sizeof(family), "%s", name);
            type[0] = '\0';
            continue;
        }
        if (sscanf(line, "# TYPE %127s %15s", name, type) == 2) {
            cr_assert_str_eq(name, family, "TYPE without its HELP: %s", line);
            continue;
        }
        cr_assert(type[0], "a sample before its TYPE: %s", line);
        size_t nl = strcspn(line, "{ ");
        char sname[160];
        snprintf(sname, sizeof(sname), "%.*s", (int)nl, line);
        bool hist = strcmp(type, "histogram") == 0;
        size_t fl = strlen(family);
        cr_assert(strcmp(sname, family) == 0 ||
                      (hist && strncmp(sname, family, fl) == 0 &&
                       (!strcmp(sname + fl, "_bucket") || !strcmp(sname + fl, "_sum") ||
                        !strcmp(sname + fl, "_count"))),
                  "sample %s outside its family %s", sname, family);
        const char *v = line + nl;
        if (*v == '{') {
            const char *close = strstr(v, "} ");
            cr_assert_not_null(close, "unclosed labels: %s", line);
            v = close + 1;
        }
        char *end;
        strtod(v + 1, &end);
        cr_assert(*end == '\0' && end != v + 1, "value of: %s", line);
        samples++;
    }
    return samples;
}

static bool am_has(const char *text, const char *s) {
    return strstr(text, s) != NULL;
}

static void am_fixture(void) {
    memset(&am_tele, 0, sizeof(am_tele));
    am_tele.n_gpus = 2;
    tele_gpu_init(&am_tele.gpus[0], "0000:03:00.0");
    tele_gpu_init(&am_tele.gpus[1], "0000:0a:00.0");
    for (int k = 0; k < 2; k++) {
        struct tele_gpu *g = &am_tele.gpus[k];
        g->index = k;
        snprintf(g->name, sizeof(g->name), "%s", k ? "Radeon \"Pro\" W7900" : "RX 7900 XTX");
        tele_set(g, TELE_F_VRAM_TOTAL, 24.0 * (1 << 30));
        tele_set(g, TELE_F_VRAM_USED, k ? 1e9 : 6e9);
        tele_set(g, TELE_F_BUSY, 87);
        tele_set(g, TELE_F_SCLK, 2482);
    }
    tele_set(&am_tele.gpus[0], TELE_F_TEMP, 61); /* GPU 1 has no temperature read */
    memset(&am_engine, 0, sizeof(am_engine));
    am_engine.mem.allocated_bytes = 3u << 20;
    am_engine.mem.reserved_bytes = 22u << 20;
    am_engine.mem.frag = 0.08;
    am_engine.mem.n_oom = 1;
    am_engine.has_loss = true;
    am_engine.loss = 0.25;
    am_engine.epoch = 3;
    am_engine.step = 1200;
}

Test(agent_metrics, every_family_follows_the_format_with_its_values) {
    am_fixture();
    struct evring *ring = NULL;
    struct trace *t = NULL;
    cr_assert_eq(trace_create(&t, ring, 1), 0);
    for (int k = 0; k < 5; k++)
        trace_sync(t, 0, SYNC_OP_STREAM, am_ok, NULL);
    uint64_t kmsg[KMSG_CAT_COUNT] = {0};
    kmsg[KMSG_CAT_RING_TIMEOUT] = 2;
    kmsg[KMSG_CAT_DRIVER_OTHER] = 3; /* lines only the last layer caught */
    double phases[PHASE_COUNT] = {0};
    phases[PHASE_FORWARD] = 1.5;
    struct agent_metrics_in in = {.tele = &am_tele,
                                  .engine = &am_engine,
                                  .trace = t,
                                  .dev = 0,
                                  .watch_state = 2,
                                  .kmsg_counts = kmsg,
                                  .phase_seconds = phases};
    char *text = am_write(&in);
    int samples = am_validate(text);
    cr_assert_gt(samples, 40, "%s", text);
    cr_assert(am_has(text, "ringside_gpu_vram_used_bytes{gpu=\"0\",pci=\"0000:03:00.0\",name=\"RX "
                           "7900 XTX\"} 6000000000\n"),
              "%s", text);
    cr_assert(am_has(text, "name=\"Radeon \\\"Pro\\\" W7900\""), "label values are escaped");
    cr_assert(am_has(text, "ringside_gpu_busy_ratio{gpu=\"0\""));
    cr_assert(am_has(text, "} 0.87"), "busy percent as a ratio: %s", text);
    cr_assert(am_has(text, "ringside_gpu_clock_hertz{gpu=\"1\",pci=\"0000:0a:00.0\","
                           "name=\"Radeon \\\"Pro\\\" W7900\",clock=\"shader\"} 2482000000\n"));
    cr_assert(am_has(text, "ringside_gpu_temperature_celsius{gpu=\"0\""));
    cr_assert_not(am_has(text, "ringside_gpu_temperature_celsius{gpu=\"1\""),
                  "a value nobody read is not a 0");
    cr_assert(am_has(text, "ringside_pool_fragmentation_ratio 0.08"));
    cr_assert(am_has(text, "ringside_pool_oom_total 1\n"));
    cr_assert(am_has(text, "ringside_train_loss 0.25\n"));
    cr_assert_not(am_has(text, "ringside_train_val_loss"), "no validation yet");
    cr_assert(am_has(text, "ringside_watchdog_state{device=\"0\"} 2\n"));
    cr_assert(am_has(text, "ringside_driver_events_total{category=\"ring_timeout\"} 2\n"));
    cr_assert(am_has(text, "ringside_driver_events_total{category=\"driver_other\"} 3\n"));
    cr_assert(am_has(text, "ringside_driver_events_total{category=\"mes\"} 0\n"),
              "every category from the start: counters never appear out of nowhere");
    cr_assert(am_has(text, "ringside_phase_seconds_total{phase=\"forward\"} 1.5\n"));
    cr_assert(am_has(text, "ringside_sync_latency_seconds_bucket{device=\"0\",op=\"stream\","
                           "le=\"+Inf\"} 5\n"),
              "%s", text);
    cr_assert(am_has(text, "ringside_sync_latency_seconds_count{device=\"0\",op=\"stream\"} 5\n"));
    free(text);
    trace_destroy(t);
}

/* Without a training loop, telemetry, watchdog or kernel log, nothing is invented. */
Test(agent_metrics, missing_sources_write_no_families) {
    struct agent_metrics_in in = {.watch_state = -1};
    char *text = am_write(&in);
    cr_assert_str_eq(text, "");
    free(text);
}

/* The agent's own families, and the same metrics as OpenMetrics. */
Test(agent_metrics, the_agent_about_itself_and_openmetrics) {
    am_fixture();
    struct agent_metrics_self self = {.version = "1.2.3",
                                      .host = "node\"7",
                                      .backend = "hip",
                                      .start_time_seconds = 1700000000.5,
                                      .http_answered = 6,
                                      .http_unauthorized = 3,
                                      .http_refused = 1,
                                      .http_timed_out = 7,
                                      .http_evicted = 5,
                                      .http_over_address = 2,
                                      .http_over_followers = 8,
                                      .http_over_follower_address = 9,
                                      .http_auth_backoff = 11,
                                      .http_connections = 2,
                                      .event_followers = 1,
                                      .event_lines = 500,
                                      .events_evicted = 20,
                                      .ring_dropped = 4};
    struct agent_metrics_in in = {.engine = &am_engine, .watch_state = -1, .self = &self};
    char *text = am_write(&in);
    cr_assert_gt(am_validate(text), 10, "%s", text);
    cr_assert(am_has(text, "ringside_agent_info{version=\"1.2.3\",host=\"node\\\"7\","
                           "backend=\"hip\"} 1\n"),
              "%s", text);
    cr_assert(am_has(text, "ringside_agent_http_requests_total{outcome=\"answered\"} 6\n"), "%s",
              text);
    cr_assert(am_has(text, "ringside_agent_http_requests_total{outcome=\"unauthorized\"} 3\n"));
    cr_assert(am_has(text, "ringside_agent_events_dropped_total 4\n"));
    cr_assert(am_has(text,
                     "ringside_agent_http_connections_closed_total{reason=\"request_timeout\"} "
                     "7\n"),
              "%s", text);
    cr_assert(am_has(text, "ringside_agent_http_connections_closed_total{reason=\"evicted\"} 5\n"));
    cr_assert(
        am_has(text, "ringside_agent_http_connections_closed_total{reason=\"over_limit\"} 0\n"));
    cr_assert(am_has(text, "ringside_agent_http_connections_closed_total{reason=\"over_address_"
                           "limit\"} 2\n"));
    cr_assert(am_has(text, "ringside_agent_http_connections_closed_total{reason=\"over_follower_"
                           "limit\"} 8\n"),
              "%s", text);
    cr_assert(am_has(text, "ringside_agent_http_connections_closed_total{reason=\"over_follower_"
                           "address_limit\"} 9\n"));
    cr_assert(am_has(text, "ringside_agent_http_connections_closed_total{reason=\"auth_backoff\"} "
                           "11\n"));
    cr_assert(am_has(text, "ringside_train_steps_total 1200\n"));
    cr_assert_null(strstr(text, "# EOF"));
    free(text);
    in.openmetrics = true;
    text = am_write(&in);
    cr_assert(am_has(text, "# TYPE ringside_train_steps counter\n"), "%s", text);
    cr_assert(am_has(text, "ringside_train_steps_total 1200\n"));
    cr_assert(am_has(text, "# TYPE ringside_agent_http_requests counter\n"));
    size_t n = strlen(text);
    cr_assert(n > 6 && strcmp(text + n - 6, "# EOF\n") == 0, "%s", text);
    free(text);
}
