/* Predictions of a trained model on new data: each session's VPOC through a compute backend
 * (the packed path training takes), the features of every bar after the first session, and the
 * model's forward pass on the same backend, batch by batch. */
#ifndef RINGSIDE_BACKEND_MODEL_MODEL_PREDICT_H
#define RINGSIDE_BACKEND_MODEL_MODEL_PREDICT_H

#include "backend/compute/compute.h"
#include "backend/model/model.h"

#include <stddef.h>

#define MODEL_PREDICT_BATCH 4096 /* rows a forward pass takes */

/* One bar's prediction. */
struct model_pred {
    size_t bar, session; /* indices into the series and its sessions */
    const double *x;     /* the FEAT_COUNT features before normalisation (valid during the
                            call only) */
    double output;       /* the network's output: the normalised return (MSE) or a logit (BCE) */
    double value;        /* the output with the target transform undone: the return in bps
                            (MSE), or the probability that the return is positive (BCE) */
    double actual_bps;   /* the return that followed over the horizon; NaN where the data ends
                            before it */
};

/* Receives each prediction, in bar order; a non-zero return stops the run and is returned. */
typedef int (*model_pred_fn)(void *ctx, const struct model_pred *p);

/* Predict every bar of sessions 1..n-1 of ds (ss: ds split at m->session_start_hour), VPOC in
 * chunks of `chunk` bars (0: whole sessions). The model runs with model_params_f32's
 * parameters. 0, -EINVAL with err for data the model cannot take (fewer than 2 sessions, a
 * price range too wide for its tick), the backend's error, or the sink's return. */
int model_predict(struct compute *c, const struct model *m, const struct data_series *ds,
                  const struct data_sessions *ss, size_t chunk, model_pred_fn sink, void *ctx,
                  char *err, size_t errlen);

#endif
