/* Features and targets for the MLP: one sample per bar after the first session. */
#ifndef RINGSIDE_BACKEND_VPOC_VPOC_FEATURES_H
#define RINGSIDE_BACKEND_VPOC_VPOC_FEATURES_H

#include "backend/data/data_series.h"
#include "backend/vpoc/vpoc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FEAT_COUNT 24

enum feat_target { FEAT_TARGET_RETURN_BPS, FEAT_TARGET_SIGN };

struct feat_opts {
    struct vpoc_params vpoc; /* profile kind and tick for the developing POC */
    int horizon;             /* forward return over this many bars, >= 1 */
    enum feat_target target; /* MSE on the return in bps, or BCE on its sign (1 if > 0) */
    bool all_bars;           /* also the bars with no bar `horizon` later (their target is NaN):
                                what a prediction for the latest bars needs */
};

/* Samples in row-major order: x[i * FEAT_COUNT + j], y[i]; bar[i] is the bar index in the
 * series, session[i] the session index. Owns its arrays. */
struct feat_set {
    size_t n;
    double *x, *y;
    size_t *bar;
    size_t *session;
};

/* Name of feature j (for docs/data.md, metadata and the UI). */
const char *feat_name(unsigned j);

/* Build samples for every bar of sessions 1..n-1 that has a bar `horizon` later in the series
 * (every bar of them with o->all_bars).
 * prior[k] is the VPOC result of session k (k < ss->n), computed by the caller through the
 * compute backend. 0, -ENOMEM, or -EINVAL when there are fewer than 2 sessions. */
int feat_build(const struct data_series *ds, const struct data_sessions *ss,
               const struct vpoc_result *prior, const struct feat_opts *o, struct feat_set *out);
void feat_set_fini(struct feat_set *fs);

/* Receives each sample from feat_build_rows: its row, FEAT_COUNT features (valid during the call
 * only), target, bar and session indices. */
typedef void (*feat_sink_fn)(void *ctx, size_t row, const double *x, double y, size_t bar,
                             size_t session);

/* How many samples feat_build makes for these inputs (0 when it would fail). */
size_t feat_rows(const struct data_series *ds, const struct data_sessions *ss,
                 const struct feat_opts *o);

/* The samples of feat_build, row by row, handed to sink instead of stored: for callers that
 * keep them in another form (training keeps float features). Same errors as feat_build. */
int feat_build_rows(const struct data_series *ds, const struct data_sessions *ss,
                    const struct vpoc_result *prior, const struct feat_opts *o, feat_sink_fn sink,
                    void *ctx);

/* z-score statistics, fit on a subset of rows; std of a constant column is 1. */
struct feat_norm {
    double mean[FEAT_COUNT], std[FEAT_COUNT];
    double y_mean, y_std; /* target scaling (MSE); 0 and 1 for BCE */
};

void feat_norm_fit(const struct feat_set *fs, size_t row0, size_t rows, enum feat_target t,
                   struct feat_norm *out);
/* Normalise x (and y for the return target) in place with norm. */
void feat_norm_apply(struct feat_set *fs, const struct feat_norm *norm, enum feat_target t);

/* The same two for features kept as float (rows x FEAT_COUNT) with double targets; statistics
 * are accumulated in double. */
void feat_norm_fit_f32(const float *x, const double *y, size_t row0, size_t rows,
                       enum feat_target t, struct feat_norm *out);
void feat_norm_apply_f32(float *x, double *y, size_t n, const struct feat_norm *norm,
                         enum feat_target t);

/* Index of the first validation row: the first sample of the first session in the last
 * val_frac of the sessions that have samples (split by time). */
size_t feat_split_index(const struct feat_set *fs, double val_frac);

#endif
