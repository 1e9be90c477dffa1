/* MLP features and targets from bars, prior-session VPOCs and the developing session profile. */
#include "backend/vpoc/vpoc_features.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FEAT_WINDOW_BARS     30
#define FEAT_VIX_BACK_BARS   15
#define FEAT_SESSION_MINUTES 1380.0
#define FEAT_TWO_PI          6.28318530717958647692

static const char *const feat_names[FEAT_COUNT] = {
    "ret_1",
    "ret_5",
    "ret_15",
    "ret_60",
    "range_ticks",
    "body_ticks",
    "upper_wick_ticks",
    "lower_wick_ticks",
    "log_volume",
    "volume_ratio",
    "realized_vol",
    "dist_prior_poc",
    "dist_prior_vah",
    "dist_prior_val",
    "prior_va_width_ticks",
    "dist_dev_poc",
    "dist_session_open",
    "dist_session_high",
    "dist_session_low",
    "session_frac",
    "tod_sin",
    "tod_cos",
    "vix",
    "vix_change",
};

/* Everything one row needs besides the bar itself; the session fields are "so far". */
struct feat_ctx {
    const struct data_series *ds;
    const struct feat_opts *o;
    double *ret1, *lv; /* per bar of the series: ret_1 in bps and log1p(volume) */
    int64_t *hist;     /* developing profile of the current session */
    size_t n_levels;   /* entries of hist in use for the current session */
    int64_t base, poc; /* poc is a level; INT64_MIN before the session's first bar */
    double s_open, s_high, s_low;
    int64_t s_t0_s;
};

const char *feat_name(unsigned j) {
    return j < FEAT_COUNT ? feat_names[j] : "?";
}

static struct vpoc_bar feat_vbar(const struct data_bar *b) {
    struct vpoc_bar v = {b->high, b->low, b->close, b->volume};
    return v;
}

/* Level span of session k's bars (0 for an empty session). */
static size_t feat_session_span(const struct data_series *ds, const struct data_session *s,
                                const struct vpoc_params *p, int64_t *base) {
    int64_t lo = 0, hi = -1;
    for (size_t i = s->first; i < s->first + s->n; i++) {
        struct vpoc_bar vb = feat_vbar(&ds->bars[i]);
        int64_t a, z;
        vpoc_bar_levels(&vb, p, &a, &z);
        if (i == s->first || a < lo)
            lo = a;
        if (i == s->first || z > hi)
            hi = z;
    }
    *base = lo;
    return (size_t)(hi - lo + 1);
}

/* Samples the series yields and the widest session profile among sessions 1..n-1. */
static size_t feat_count(const struct data_series *ds, const struct data_sessions *ss,
                         const struct feat_opts *o, size_t *max_levels) {
    size_t n = 0;
    *max_levels = 1;
    for (size_t k = 1; k < ss->n; k++) {
        const struct data_session *s = &ss->s[k];
        for (size_t i = s->first; i < s->first + s->n; i++)
            n += o->all_bars || i + (size_t)o->horizon < ds->n;
        int64_t base;
        size_t span = feat_session_span(ds, s, &o->vpoc, &base);
        if (span > *max_levels)
            *max_levels = span;
    }
    return n;
}

static int feat_alloc(struct feat_set *fs, size_t n) {
    memset(fs, 0, sizeof *fs);
    if (n == 0)
        return 0;
    fs->x = malloc(n * FEAT_COUNT * sizeof *fs->x);
    fs->y = malloc(n * sizeof *fs->y);
    fs->bar = malloc(n * sizeof *fs->bar);
    fs->session = malloc(n * sizeof *fs->session);
    if (!fs->x || !fs->y || !fs->bar || !fs->session) {
        feat_set_fini(fs);
        return -ENOMEM;
    }
    fs->n = n;
    return 0;
}

void feat_set_fini(struct feat_set *fs) {
    free(fs->x);
    free(fs->y);
    free(fs->bar);
    free(fs->session);
    memset(fs, 0, sizeof *fs);
}

static void feat_series_arrays(const struct data_series *ds, double *ret1, double *lv) {
    for (size_t i = 0; i < ds->n; i++) {
        const struct data_bar *b = &ds->bars[i];
        ret1[i] = i == 0 ? 0.0 : 1e4 * log(b->close / ds->bars[i - 1].close);
        lv[i] = log1p(b->volume);
    }
}

/* Mean and population std (two passes) of n values a[0], a[stride], ...; 0 and 0 when n == 0. */
static void feat_stats(const double *a, size_t stride, size_t n, double *mean, double *std) {
    double sum = 0.0, ss = 0.0;
    for (size_t j = 0; j < n; j++)
        sum += a[j * stride];
    *mean = n ? sum / (double)n : 0.0;
    for (size_t j = 0; j < n; j++)
        ss += (a[j * stride] - *mean) * (a[j * stride] - *mean);
    *std = n ? sqrt(ss / (double)n) : 0.0;
}

/* Stats of a[] over the FEAT_WINDOW_BARS values ending at i (clamped to the series start). Each
 * row recomputes its own window (constant work), so a per-bar GPU kernel can match it. */
static void feat_window(const double *a, size_t i, double *mean, double *std) {
    size_t start = i + 1 >= FEAT_WINDOW_BARS ? i + 1 - FEAT_WINDOW_BARS : 0;
    feat_stats(a + start, 1, i + 1 - start, mean, std);
}

static double feat_ret(const struct data_series *ds, size_t i, size_t back) {
    size_t j = i >= back ? i - back : 0;
    return 1e4 * log(ds->bars[i].close / ds->bars[j].close);
}

static void feat_session_begin(struct feat_ctx *c, const struct data_session *s) {
    c->n_levels = feat_session_span(c->ds, s, &c->o->vpoc, &c->base);
    memset(c->hist, 0, c->n_levels * sizeof *c->hist);
    c->poc = INT64_MIN;
    const struct data_bar *b = &c->ds->bars[s->first];
    c->s_open = b->open;
    c->s_high = b->high;
    c->s_low = b->low;
    c->s_t0_s = b->t_s;
}

/* Add one bar to the developing profile; volumes only grow, so only its levels can take over
 * the POC (ties to the lowest level). */
static void feat_session_add(struct feat_ctx *c, const struct data_bar *b) {
    struct vpoc_bar vb = feat_vbar(b);
    int64_t lo, hi;
    vpoc_accumulate(&vb, 1, &c->o->vpoc, c->base, c->hist, c->n_levels);
    vpoc_bar_levels(&vb, &c->o->vpoc, &lo, &hi);
    for (int64_t l = lo; l <= hi; l++) {
        if (c->poc == INT64_MIN) {
            c->poc = l;
            continue;
        }
        int64_t v = c->hist[l - c->base], vp = c->hist[c->poc - c->base];
        if (v > vp || (v == vp && l < c->poc))
            c->poc = l;
    }
    if (b->high > c->s_high)
        c->s_high = b->high;
    if (b->low < c->s_low)
        c->s_low = b->low;
}

static void feat_row_bar(const struct feat_ctx *c, size_t i, double *x) {
    const struct data_bar *b = &c->ds->bars[i];
    double tick = c->o->vpoc.tick, mean, std;
    x[0] = c->ret1[i];
    x[1] = feat_ret(c->ds, i, 5);
    x[2] = feat_ret(c->ds, i, 15);
    x[3] = feat_ret(c->ds, i, 60);
    x[4] = (b->high - b->low) / tick;
    x[5] = (b->close - b->open) / tick;
    x[6] = (b->high - fmax(b->open, b->close)) / tick;
    x[7] = (fmin(b->open, b->close) - b->low) / tick;
    x[8] = c->lv[i];
    feat_window(c->lv, i, &mean, &std);
    x[9] = c->lv[i] - mean;
    feat_window(c->ret1, i, &mean, &std);
    x[10] = std;
}

static void feat_row_session(const struct feat_ctx *c, size_t i, const struct vpoc_result *pr,
                             double *x) {
    const struct data_bar *b = &c->ds->bars[i];
    double tick = c->o->vpoc.tick, cl = b->close;
    x[11] = (cl - pr->poc) / tick;
    x[12] = (cl - pr->vah) / tick;
    x[13] = (cl - pr->val) / tick;
    x[14] = (pr->vah - pr->val) / tick;
    x[15] = (cl - (double)c->poc * tick) / tick;
    x[16] = (cl - c->s_open) / tick;
    x[17] = (cl - c->s_high) / tick;
    x[18] = (cl - c->s_low) / tick;
    double frac = (double)(b->t_s - c->s_t0_s) / 60.0 / FEAT_SESSION_MINUTES;
    x[19] = frac;
    x[20] = sin(FEAT_TWO_PI * frac);
    x[21] = cos(FEAT_TWO_PI * frac);
    size_t back = i >= FEAT_VIX_BACK_BARS ? i - FEAT_VIX_BACK_BARS : 0;
    x[22] = c->ds->has_vix ? b->vix : 0.0;
    x[23] = c->ds->has_vix ? b->vix - c->ds->bars[back].vix : 0.0;
}

static void feat_emit(const struct feat_ctx *c, size_t i, size_t k, const struct vpoc_result *pr,
                      size_t row, feat_sink_fn sink, void *ctx) {
    double x[FEAT_COUNT];
    feat_row_bar(c, i, x);
    feat_row_session(c, i, pr, x);
    size_t fwd = i + (size_t)c->o->horizon;
    double r = fwd < c->ds->n ? 1e4 * log(c->ds->bars[fwd].close / c->ds->bars[i].close) : NAN;
    sink(ctx, row, x, c->o->target == FEAT_TARGET_SIGN && !isnan(r) ? (r > 0.0 ? 1.0 : 0.0) : r, i,
         k);
}

static void feat_fill(struct feat_ctx *c, const struct data_sessions *ss,
                      const struct vpoc_result *prior, feat_sink_fn sink, void *ctx) {
    size_t row = 0;
    for (size_t k = 1; k < ss->n; k++) {
        const struct data_session *s = &ss->s[k];
        if (s->n == 0)
            continue;
        feat_session_begin(c, s);
        for (size_t i = s->first; i < s->first + s->n; i++) {
            feat_session_add(c, &c->ds->bars[i]);
            if (c->o->all_bars || i + (size_t)c->o->horizon < c->ds->n)
                feat_emit(c, i, k, &prior[k - 1], row++, sink, ctx);
        }
    }
}

size_t feat_rows(const struct data_series *ds, const struct data_sessions *ss,
                 const struct feat_opts *o) {
    size_t max_levels;
    if (ss->n < 2 || o->horizon < 1 || !(o->vpoc.tick > 0.0))
        return 0;
    return feat_count(ds, ss, o, &max_levels);
}

int feat_build_rows(const struct data_series *ds, const struct data_sessions *ss,
                    const struct vpoc_result *prior, const struct feat_opts *o, feat_sink_fn sink,
                    void *ctx) {
    if (ss->n < 2 || o->horizon < 1 || !(o->vpoc.tick > 0.0))
        return -EINVAL;
    struct feat_ctx c = {.ds = ds, .o = o};
    size_t max_levels;
    feat_count(ds, ss, o, &max_levels);
    int rc = -ENOMEM;
    c.ret1 = malloc((2 * ds->n + 1) * sizeof *c.ret1); /* + 1: never a zero-size request */
    c.hist = malloc((max_levels ? max_levels : 1) * sizeof *c.hist);
    if (c.ret1 && c.hist) {
        c.lv = c.ret1 + ds->n;
        feat_series_arrays(ds, c.ret1, c.lv);
        feat_fill(&c, ss, prior, sink, ctx);
        rc = 0;
    }
    free(c.ret1);
    free(c.hist);
    return rc;
}

/* feat_build's sink: store the row in the set. */
static void feat_store(void *ctx, size_t row, const double *x, double y, size_t bar,
                       size_t session) {
    struct feat_set *fs = ctx;
    memcpy(&fs->x[row * FEAT_COUNT], x, FEAT_COUNT * sizeof(double));
    fs->y[row] = y;
    fs->bar[row] = bar;
    fs->session[row] = session;
}

int feat_build(const struct data_series *ds, const struct data_sessions *ss,
               const struct vpoc_result *prior, const struct feat_opts *o, struct feat_set *out) {
    memset(out, 0, sizeof *out);
    if (ss->n < 2 || o->horizon < 1 || !(o->vpoc.tick > 0.0))
        return -EINVAL;
    int rc = feat_alloc(out, feat_rows(ds, ss, o));
    if (rc == 0 && out->n > 0)
        rc = feat_build_rows(ds, ss, prior, o, feat_store, out);
    if (rc != 0)
        feat_set_fini(out);
    return rc;
}

void feat_norm_fit(const struct feat_set *fs, size_t row0, size_t rows, enum feat_target t,
                   struct feat_norm *out) {
    double sd;
    for (unsigned j = 0; j < FEAT_COUNT; j++) {
        feat_stats(fs->x + row0 * FEAT_COUNT + j, FEAT_COUNT, rows, &out->mean[j], &sd);
        out->std[j] = sd < 1e-12 ? 1.0 : sd;
    }
    out->y_mean = 0.0;
    out->y_std = 1.0;
    if (t != FEAT_TARGET_RETURN_BPS)
        return;
    feat_stats(fs->y + row0, 1, rows, &out->y_mean, &sd);
    out->y_std = sd < 1e-12 ? 1.0 : sd;
}

void feat_norm_apply(struct feat_set *fs, const struct feat_norm *norm, enum feat_target t) {
    for (size_t r = 0; r < fs->n; r++) {
        double *x = &fs->x[r * FEAT_COUNT];
        for (unsigned j = 0; j < FEAT_COUNT; j++)
            x[j] = (x[j] - norm->mean[j]) / norm->std[j];
        if (t == FEAT_TARGET_RETURN_BPS)
            fs->y[r] = (fs->y[r] - norm->y_mean) / norm->y_std;
    }
}

size_t feat_split_index(const struct feat_set *fs, double val_frac) {
    size_t count = 0;
    for (size_t r = 0; r < fs->n; r++)
        count += r == 0 || fs->session[r] != fs->session[r - 1];
    if (count < 2)
        return fs->n; /* one session (or none): everything trains */
    /* The epsilon keeps e.g. 0.2 * 10 from rounding up to 3 through representation error. */
    double want = ceil(val_frac * (double)count - 1e-9);
    size_t val = want < 1.0 ? 1 : want > (double)(count - 1) ? count - 1 : (size_t)want;
    size_t first = count - val, seen = 0;
    for (size_t r = 0; r < fs->n; r++) {
        if (r == 0 || fs->session[r] != fs->session[r - 1]) {
            if (seen++ == first)
                return r;
        }
    }
    return fs->n;
}

/* Mean and population std of column j of float rows [row0, row0 + rows). */
static void feat_stats_f32(const float *x, size_t row0, size_t rows, unsigned j, double *mean,
                           double *std) {
    double sum = 0.0, ss = 0.0;
    for (size_t r = row0; r < row0 + rows; r++)
        sum += x[r * FEAT_COUNT + j];
    *mean = rows ? sum / (double)rows : 0.0;
    for (size_t r = row0; r < row0 + rows; r++) {
        double d = x[r * FEAT_COUNT + j] - *mean;
        ss += d * d;
    }
    *std = rows ? sqrt(ss / (double)rows) : 0.0;
}

void feat_norm_fit_f32(const float *x, const double *y, size_t row0, size_t rows,
                       enum feat_target t, struct feat_norm *out) {
    double sd;
    for (unsigned j = 0; j < FEAT_COUNT; j++) {
        feat_stats_f32(x, row0, rows, j, &out->mean[j], &sd);
        out->std[j] = sd < 1e-12 ? 1.0 : sd;
    }
    out->y_mean = 0.0;
    out->y_std = 1.0;
    if (t != FEAT_TARGET_RETURN_BPS)
        return;
    feat_stats(y + row0, 1, rows, &out->y_mean, &sd);
    out->y_std = sd < 1e-12 ? 1.0 : sd;
}

void feat_norm_apply_f32(float *x, double *y, size_t n, const struct feat_norm *norm,
                         enum feat_target t) {
    for (size_t r = 0; r < n; r++) {
        for (unsigned j = 0; j < FEAT_COUNT; j++)
            x[r * FEAT_COUNT + j] = (float)((x[r * FEAT_COUNT + j] - norm->mean[j]) / norm->std[j]);
        if (t == FEAT_TARGET_RETURN_BPS)
            y[r] = (y[r] - norm->y_mean) / norm->y_std;
    }
}
