/* CPU reference for the volume profile: levels, chunked accumulation, POC and value area. */
#include "backend/vpoc/vpoc.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int64_t vpoc_level(double price, double tick) {
    return (int64_t)llround(price / tick);
}

int64_t vpoc_fix_share(double volume, int64_t n_levels) {
    return (int64_t)llround(volume * (double)VPOC_FIX_ONE / (double)n_levels);
}

void vpoc_bar_levels(const struct vpoc_bar *b, const struct vpoc_params *p, int64_t *lo,
                     int64_t *hi) {
    if (p->profile == VPOC_CLOSE) {
        *lo = *hi = vpoc_level(b->close, p->tick);
        return;
    }
    int64_t a = vpoc_level(b->low, p->tick);
    int64_t z = vpoc_level(b->high, p->tick);
    /* A bar with high < low is bad data; treat it as the range it spans rather than nothing. */
    *lo = a < z ? a : z;
    *hi = a < z ? z : a;
}

void vpoc_level_range(const struct vpoc_bar *bars, size_t n, const struct vpoc_params *p,
                      int64_t *lo, int64_t *hi) {
    vpoc_bar_levels(&bars[0], p, lo, hi);
    for (size_t i = 1; i < n; i++) {
        int64_t a, z;
        vpoc_bar_levels(&bars[i], p, &a, &z);
        if (a < *lo)
            *lo = a;
        if (z > *hi)
            *hi = z;
    }
}

void vpoc_accumulate(const struct vpoc_bar *bars, size_t n, const struct vpoc_params *p,
                     int64_t base, int64_t *hist, size_t n_levels) {
    int64_t top = base + (int64_t)n_levels - 1;
    for (size_t i = 0; i < n; i++) {
        int64_t lo, hi;
        vpoc_bar_levels(&bars[i], p, &lo, &hi);
        /* The share depends only on the bar, so every chunking adds the same integers. */
        int64_t share = vpoc_fix_share(bars[i].volume, hi - lo + 1);
        /* Levels outside the profile are a caller error; skip them rather than corrupt memory. */
        for (int64_t l = lo < base ? base : lo; l <= hi && l <= top; l++)
            hist[l - base] += share;
    }
}

static size_t vpoc_argmax(const int64_t *hist, size_t n_levels) {
    size_t best = 0;
    for (size_t i = 1; i < n_levels; i++) {
        if (hist[i] > hist[best])
            best = i; /* strict: ties stay at the lowest level */
    }
    return best;
}

void vpoc_finalize(const int64_t *hist, size_t n_levels, int64_t base, const struct vpoc_params *p,
                   struct vpoc_result *out) {
    int64_t total = 0;
    for (size_t i = 0; i < n_levels; i++)
        total += hist[i];
    size_t poc = vpoc_argmax(hist, n_levels);
    size_t lo = poc, hi = poc;
    int64_t acc = hist[poc];
    while ((double)acc < p->value_area * (double)total) {
        int64_t up = hi + 1 < n_levels ? hist[hi + 1] : -1;
        int64_t dn = lo > 0 ? hist[lo - 1] : -1;
        if (up < 0 && dn < 0)
            break;
        if (up >= dn) {
            hi++;
            acc += up;
        } else {
            lo--;
            acc += dn;
        }
    }
    out->poc_level = base + (int64_t)poc;
    out->vah_level = base + (int64_t)hi;
    out->val_level = base + (int64_t)lo;
    out->poc = (double)out->poc_level * p->tick;
    out->vah = (double)out->vah_level * p->tick;
    out->val = (double)out->val_level * p->tick;
    out->total_fix = total;
}

void vpoc_bars_from_series(const struct data_bar *in, size_t n, struct vpoc_bar *out) {
    for (size_t i = 0; i < n; i++) {
        out[i].high = in[i].high;
        out[i].low = in[i].low;
        out[i].close = in[i].close;
        out[i].volume = in[i].volume;
    }
}

int vpoc_session(const struct vpoc_bar *bars, size_t n, const struct vpoc_params *p,
                 struct vpoc_result *out) {
    if (n == 0)
        return -EINVAL;
    int64_t lo, hi;
    vpoc_level_range(bars, n, p, &lo, &hi);
    size_t n_levels = (size_t)(hi - lo + 1);
    int64_t *hist = calloc(n_levels, sizeof *hist);
    if (!hist)
        return -ENOMEM;
    vpoc_accumulate(bars, n, p, lo, hist, n_levels);
    vpoc_finalize(hist, n_levels, lo, p, out);
    free(hist);
    return 0;
}

int vpoc_sessions_check(const struct vpoc_bar *bars, const struct data_sessions *ss,
                        const struct vpoc_params *p, char *err, size_t errlen) {
    for (size_t k = 0; k < ss->n; k++) {
        if (ss->s[k].n == 0)
            continue;
        int64_t lo, hi;
        vpoc_level_range(bars + ss->s[k].first, ss->s[k].n, p, &lo, &hi);
        uint64_t levels = (uint64_t)hi - (uint64_t)lo + 1u;
        if (levels > VPOC_MAX_LEVELS)
            return errbuf_set(err, errlen, -EINVAL,
                              "session %s spans %llu price levels at tick %g (at most %llu): "
                              "is --tick right for this data?",
                              ss->s[k].label, (unsigned long long)levels, p->tick,
                              (unsigned long long)VPOC_MAX_LEVELS);
    }
    return 0;
}

int vpoc_chunk_step(int chunk, int dir) {
    static const int ladder[] = {125, 250, 500, 1000, 2000, 3500, 0};
    const int n = (int)(sizeof(ladder) / sizeof(ladder[0]));
    int pos = n - 1; /* whole session, or anything larger than the ladder */
    for (int i = 0; i < n - 1; i++)
        if (chunk > 0 && chunk <= ladder[i]) {
            pos = chunk == ladder[i] ? i : (dir > 0 ? i - 1 : i);
            break;
        }
    pos += dir;
    if (pos < 0)
        pos = 0;
    if (pos >= n)
        pos = n - 1;
    return ladder[pos];
}
