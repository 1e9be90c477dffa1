/* The Prometheus text format writer against the format's rules, checked by a small reader of
 * the written text: HELP and TYPE once and before a family's samples, escaping, values,
 * histogram buckets cumulative and ending in +Inf equal to _count. */
#include "tui/agent/prom.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *pt_buf;
static size_t pt_len;
static FILE *pt_out;
static struct prom_writer pt_w;

static void pt_open(void) {
    pt_out = open_memstream(&pt_buf, &pt_len);
    cr_assert_not_null(pt_out);
    prom_init(&pt_w, pt_out);
}

/* Finish and return the text (owned by the test). */
static const char *pt_text(int want_err) {
    cr_assert_eq(prom_finish(&pt_w), want_err);
    fclose(pt_out);
    return pt_buf;
}

/* The value of the sample line starting with series (name{labels}), or NAN. */
static double pt_value(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, series, n) == 0 && l[n] == ' ')
            return strcmp(l + n + 1, "+Inf\n") == 0 ? INFINITY : strtod(l + n + 1, NULL);
    return NAN;
}

static int pt_count(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

Test(prom, families_say_help_and_type_once_before_their_samples) {
    pt_open();
    struct prom_label gpu0[] = {{"gpu", "0"}, {"pci", "0000:03:00.0"}};
    struct prom_label gpu1[] = {{"gpu", "1"}, {"pci", "0000:0a:00.0"}};
    prom_family(&pt_w, "ringside_gpu_vram_used_bytes", PROM_GAUGE, "VRAM in use");
    prom_sample(&pt_w, "ringside_gpu_vram_used_bytes", gpu0, 2, 6442450944.0);
    prom_family(&pt_w, "ringside_gpu_vram_used_bytes", PROM_GAUGE, "VRAM in use");
    prom_sample(&pt_w, "ringside_gpu_vram_used_bytes", gpu1, 2, 1024);
    prom_family(&pt_w, "ringside_driver_events_total", PROM_COUNTER, "kernel-log events");
    prom_sample(&pt_w, "ringside_driver_events_total", NULL, 0, 3);
    const char *t = pt_text(0);
    cr_assert_eq(pt_count(t, "# HELP ringside_gpu_vram_used_bytes "), 1, "%s", t);
    cr_assert_eq(pt_count(t, "# TYPE ringside_gpu_vram_used_bytes gauge\n"), 1, "%s", t);
    cr_assert_eq(pt_count(t, "# TYPE ringside_driver_events_total counter\n"), 1, "%s", t);
    cr_assert_lt(strstr(t, "# TYPE ringside_gpu_vram_used_bytes"),
                 strstr(t, "ringside_gpu_vram_used_bytes{"));
    cr_assert_eq(pt_value(t, "ringside_gpu_vram_used_bytes{gpu=\"0\",pci=\"0000:03:00.0\"}"),
                 6442450944.0, "%s", t);
    cr_assert_eq(pt_value(t, "ringside_driver_events_total"), 3);
    free(pt_buf);
}

Test(prom, label_values_and_help_are_escaped) {
    pt_open();
    struct prom_label l[] = {{"name", "Radeon \"RX\" 7900\\XTX\nnew line"}};
    prom_family(&pt_w, "ringside_gpu_info", PROM_GAUGE, "a help with \\ and\na newline");
    prom_sample(&pt_w, "ringside_gpu_info", l, 1, 1);
    const char *t = pt_text(0);
    cr_assert(strstr(t, "# HELP ringside_gpu_info a help with \\\\ and\\na newline\n"), "%s", t);
    cr_assert(strstr(t, "{name=\"Radeon \\\"RX\\\" 7900\\\\XTX\\nnew line\"} 1\n"), "%s", t);
    cr_assert_eq(pt_count(t, "\n"), 3, "every sample on one line: %s", t);
    free(pt_buf);
}

Test(prom, values_as_prometheus_reads_them) {
    pt_open();
    prom_family(&pt_w, "x", PROM_GAUGE, "x");
    prom_sample(&pt_w, "x", (struct prom_label[]){{"k", "nan"}}, 1, NAN);
    prom_sample(&pt_w, "x", (struct prom_label[]){{"k", "inf"}}, 1, INFINITY);
    prom_sample(&pt_w, "x", (struct prom_label[]){{"k", "ninf"}}, 1, -INFINITY);
    prom_sample(&pt_w, "x", (struct prom_label[]){{"k", "frac"}}, 1, 0.125);
    const char *t = pt_text(0);
    cr_assert(strstr(t, "x{k=\"nan\"} NaN\n"), "%s", t);
    cr_assert(strstr(t, "x{k=\"inf\"} +Inf\n"));
    cr_assert(strstr(t, "x{k=\"ninf\"} -Inf\n"));
    cr_assert_eq(pt_value(t, "x{k=\"frac\"}"), 0.125);
    free(pt_buf);
}

/* Buckets are cumulative (never decreasing), the +Inf bucket is _count, and _sum is as given. */
Test(prom, histogram_buckets_are_cumulative_and_end_in_inf) {
    pt_open();
    const double bounds[] = {1e-6, 1e-5, 1e-4, 1e-3};
    const uint64_t counts[] = {5, 0, 7, 2}; /* 3 more above 1 ms */
    struct prom_label l[] = {{"op", "stream"}};
    prom_family(&pt_w, "ringside_sync_latency_seconds", PROM_HISTOGRAM, "sync latency");
    prom_histogram(&pt_w, "ringside_sync_latency_seconds", l, 1, bounds, counts, 4, 0.0125, 17);
    const char *t = pt_text(0);
    double prev = 0;
    uint64_t want = 0;
    for (size_t i = 0; i < 4; i++) {
        char series[160];
        snprintf(series, sizeof(series),
                 "ringside_sync_latency_seconds_bucket{op=\"stream\",le=\"%.17g\"}", bounds[i]);
        double v = pt_value(t, series);
        want += counts[i];
        cr_assert_eq(v, (double)want, "%s in:\n%s", series, t);
        cr_assert_geq(v, prev);
        prev = v;
    }
    cr_assert_eq(pt_value(t, "ringside_sync_latency_seconds_bucket{op=\"stream\",le=\"+Inf\"}"),
                 17);
    cr_assert_eq(pt_value(t, "ringside_sync_latency_seconds_count{op=\"stream\"}"), 17);
    cr_assert_eq(pt_value(t, "ringside_sync_latency_seconds_sum{op=\"stream\"}"), 0.0125);
    cr_assert(strstr(t, "# TYPE ringside_sync_latency_seconds histogram\n"));
    free(pt_buf);
}

Test(prom, invalid_names_and_bounds_are_errors_not_output) {
    cr_assert(prom_metric_name_ok("ringside:rate_5m"));
    cr_assert_not(prom_metric_name_ok("9lives"));
    cr_assert_not(prom_metric_name_ok("vram-used"));
    cr_assert_not(prom_label_name_ok("__name__"));
    cr_assert_not(prom_label_name_ok("a:b"));
    pt_open();
    prom_family(&pt_w, "bad-name", PROM_GAUGE, "x");
    prom_family(&pt_w, "ok", PROM_GAUGE, "x");
    prom_sample(&pt_w, "ok", (struct prom_label[]){{"bad-label", "v"}}, 1, 1);
    const double bounds[] = {2, 1};
    const uint64_t counts[] = {1, 1};
    prom_histogram(&pt_w, "h", NULL, 0, bounds, counts, 2, 3, 2);
    const char *t = pt_text(-EINVAL);
    cr_assert_null(strstr(t, "bad-name"), "%s", t);
    cr_assert_null(strstr(t, "bad-label"), "%s", t);
    cr_assert_null(strstr(t, "h_bucket"), "%s", t);
    free(pt_buf);
}

/* OpenMetrics: a counter family is named without _total (its samples keep it), HELP escapes the
 * double quote too, and the text ends with # EOF; the text format does neither. */
Test(prom, openmetrics_names_counter_families_without_total_and_ends_with_eof) {
    pt_out = open_memstream(&pt_buf, &pt_len);
    cr_assert_not_null(pt_out);
    prom_init_openmetrics(&pt_w, pt_out);
    prom_family(&pt_w, "ringside_train_steps_total", PROM_COUNTER, "steps \"done\"");
    prom_sample(&pt_w, "ringside_train_steps_total", NULL, 0, 7);
    prom_family(&pt_w, "ringside_train_loss", PROM_GAUGE, "loss");
    prom_sample(&pt_w, "ringside_train_loss", NULL, 0, 0.5);
    const char *t = pt_text(0);
    cr_assert(strstr(t, "# HELP ringside_train_steps steps \\\"done\\\"\n"), "%s", t);
    cr_assert(strstr(t, "# TYPE ringside_train_steps counter\n"), "%s", t);
    cr_assert_eq(pt_value(t, "ringside_train_steps_total"), 7);
    cr_assert(strstr(t, "# TYPE ringside_train_loss gauge\n"), "%s", t);
    size_t n = strlen(t);
    cr_assert(n > 6 && strcmp(t + n - 6, "# EOF\n") == 0, "%s", t);
    cr_assert_eq(pt_count(t, "# EOF"), 1);
    free(pt_buf);

    pt_open(); /* the text format: the family keeps _total, HELP leaves quotes, no EOF */
    prom_family(&pt_w, "ringside_train_steps_total", PROM_COUNTER, "steps \"done\"");
    prom_sample(&pt_w, "ringside_train_steps_total", NULL, 0, 7);
    t = pt_text(0);
    cr_assert(strstr(t, "# HELP ringside_train_steps_total steps \"done\"\n"), "%s", t);
    cr_assert(strstr(t, "# TYPE ringside_train_steps_total counter\n"), "%s", t);
    cr_assert_null(strstr(t, "# EOF"), "%s", t);
    free(pt_buf);
}

Test(prom, openmetrics_refuses_a_counter_without_total) {
    pt_out = open_memstream(&pt_buf, &pt_len);
    cr_assert_not_null(pt_out);
    prom_init_openmetrics(&pt_w, pt_out);
    prom_family(&pt_w, "ringside_steps", PROM_COUNTER, "steps");
    const char *t = pt_text(-EINVAL);
    cr_assert_null(strstr(t, "ringside_steps"), "%s", t);
    free(pt_buf);
}
