/* Log-bucketed latency histogram: 64 buckets per power of two (<= 1.6% relative width), so
 * percentiles are within 0.8% of the true value at any scale from 1 ns to 73 minutes. */
#ifndef RINGSIDE_BACKEND_TRACE_TRACE_HIST_H
#define RINGSIDE_BACKEND_TRACE_TRACE_HIST_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_HIST_SUB     64 /* buckets per octave; values below 64 ns are exact */
#define TRACE_HIST_OCTAVES 37 /* up to 2^42 ns (~73 min); larger values land in the last bucket */
#define TRACE_HIST_BUCKETS (TRACE_HIST_SUB * TRACE_HIST_OCTAVES)

struct trace_hist {
    uint64_t count, sum_ns, min_ns, max_ns;
    uint32_t bucket[TRACE_HIST_BUCKETS];
};

void trace_hist_init(struct trace_hist *h);
void trace_hist_add(struct trace_hist *h, uint64_t ns);

/* The p-th percentile (0 < p <= 100) as the midpoint of its bucket, clamped to [min, max];
 * 0 when empty. p = 100 returns max exactly. */
uint64_t trace_hist_percentile(const struct trace_hist *h, double p);

/* Bucket of a value and the range [lo, hi) a bucket covers (for tests and histograms). */
size_t trace_hist_bucket(uint64_t ns);
void trace_hist_bucket_range(size_t b, uint64_t *lo, uint64_t *hi);

#endif
