/* The Prometheus text exposition format (version 0.0.4), or OpenMetrics 1.0.0, written to a
 * stream: each family's HELP and TYPE lines once, before its samples; label values and HELP text
 * escaped; values as Prometheus reads them (NaN, +Inf, -Inf); histograms with cumulative buckets
 * ending in +Inf. OpenMetrics differs in three ways handled here: a counter family is named
 * without its samples' _total suffix, HELP escapes '"' too, and the text ends with "# EOF".
 * Pure formatting: what to expose is the caller's. */
#ifndef RINGSIDE_TUI_AGENT_PROM_H
#define RINGSIDE_TUI_AGENT_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

/* One label: name (a valid label name) and value (any UTF-8; escaped on output). */
struct prom_label {
    const char *name, *value;
};

struct prom_writer {
    FILE *out;
    char family[128]; /* the family whose HELP/TYPE were written last */
    int err;          /* the first error: -EINVAL for an invalid name, -errno of a write */
    bool openmetrics; /* OpenMetrics 1.0.0 rather than the 0.0.4 text format */
};

/* The 0.0.4 text format; prom_init_openmetrics: OpenMetrics 1.0.0 (counter names must then
 * end in _total, as Prometheus conventions want anyway: another is an -EINVAL). */
void prom_init(struct prom_writer *w, FILE *out);
void prom_init_openmetrics(struct prom_writer *w, FILE *out);

/* Whether s is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name
 * ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"). */
bool prom_metric_name_ok(const char *s);
bool prom_label_name_ok(const char *s);

/* Start a family: "# HELP name help" and "# TYPE name type" (written once per family, so the
 * samples of one family must be consecutive). An invalid name sets w->err and writes nothing. */
void prom_family(struct prom_writer *w, const char *name, enum prom_type type, const char *help);

/* One sample of the current family: name{labels} value. name is the family's (or, for a
 * histogram's parts, the family's with _bucket, _sum or _count). */
void prom_sample(struct prom_writer *w, const char *name, const struct prom_label *labels,
                 size_t n_labels, double value);

/* A whole histogram series of the current family: one _bucket per upper bound (le, ascending)
 * with the cumulative count of observations <= it, the +Inf bucket (= count), _sum and _count.
 * counts[i] is the number of observations in (bounds[i-1], bounds[i]]; above the last bound
 * they are count - sum(counts). Bounds that are not ascending set w->err. */
void prom_histogram(struct prom_writer *w, const char *name, const struct prom_label *labels,
                    size_t n_labels, const double *bounds, const uint64_t *counts, size_t n,
                    double sum, uint64_t count);

/* End the text ("# EOF" in OpenMetrics) and flush; 0 or the first error. */
int prom_finish(struct prom_writer *w);

/* Escape a label value (\\, ", newline) or HELP text (\\, newline) into out; returns out. */
const char *prom_escape(const char *s, bool quote, char *out, size_t n);

#endif
