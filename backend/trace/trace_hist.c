/* Log-linear bucketing: exact below 64, then 64 linear sub-buckets per octave. */
#include "backend/trace/trace_hist.h"

#include <string.h>

void trace_hist_init(struct trace_hist *h) {
    memset(h, 0, sizeof(*h));
    h->min_ns = UINT64_MAX;
}

size_t trace_hist_bucket(uint64_t ns) {
    if (ns < TRACE_HIST_SUB)
        return (size_t)ns;
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns); /* >= 6 */
    size_t octave = msb - 5;                            /* 1.. */
    size_t sub = (size_t)(ns >> (msb - 6)) & (TRACE_HIST_SUB - 1);
    size_t b = octave * TRACE_HIST_SUB + sub;
    return b < TRACE_HIST_BUCKETS ? b : TRACE_HIST_BUCKETS - 1;
}

void trace_hist_bucket_range(size_t b, uint64_t *lo, uint64_t *hi) {
    if (b < TRACE_HIST_SUB) {
        *lo = b;
        *hi = b + 1;
        return;
    }
    size_t octave = b / TRACE_HIST_SUB, sub = b % TRACE_HIST_SUB;
    unsigned shift = (unsigned)octave - 1;
    *lo = (uint64_t)(TRACE_HIST_SUB + sub) << shift;
    *hi = (uint64_t)(TRACE_HIST_SUB + sub + 1) << shift;
}

void trace_hist_add(struct trace_hist *h, uint64_t ns) {
    h->count++;
    h->sum_ns += ns;
    if (ns < h->min_ns)
        h->min_ns = ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
    h->bucket[trace_hist_bucket(ns)]++;
}

uint64_t trace_hist_percentile(const struct trace_hist *h, double p) {
    if (h->count == 0)
        return 0;
    if (p >= 100.0)
        return h->max_ns;
    /* rank of the p-th percentile, 1-based, nearest-rank definition */
    uint64_t rank = (uint64_t)(p / 100.0 * (double)h->count + 0.999999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t b = 0; b < TRACE_HIST_BUCKETS; b++) {
        seen += h->bucket[b];
        if (seen >= rank) {
            uint64_t lo, hi;
            trace_hist_bucket_range(b, &lo, &hi);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid < h->min_ns)
                mid = h->min_ns;
            if (mid > h->max_ns)
                mid = h->max_ns;
            return mid;
        }
    }
    return h->max_ns;
}
