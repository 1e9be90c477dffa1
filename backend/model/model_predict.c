/* model_predict: VPOC, features, then the forward pass batch by batch. */
#include "backend/model/model_predict.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Each session's VPOC (for the next session's features), then the rows: features in double,
 * y the realised return. */
static int model_rows_build(struct compute *c, const struct model *m, const struct data_series *ds,
                            const struct data_sessions *ss, size_t chunk, struct feat_set *r,
                            char *err, size_t errlen) {
    if (ss->n < 2)
        return errbuf_set(err, errlen, -EINVAL,
                          "%zu session(s): a prediction needs the session before it (its VPOC)",
                          ss->n);
    struct vpoc_bar *vb = malloc(ds->n * sizeof(*vb));
    struct vpoc_result *res = calloc(ss->n, sizeof(*res));
    int rc = vb && res ? 0 : errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (rc == 0) {
        vpoc_bars_from_series(ds->bars, ds->n, vb);
        char why[256];
        if (vpoc_sessions_check(vb, ss, &m->feat.vpoc, why, sizeof(why)) != 0)
            rc = errbuf_set(err, errlen, -EINVAL, "%s", why);
    }
    rc = rc ? rc
            : compute_vpoc_all(c, vb, ss, &m->feat.vpoc, chunk, COMPUTE_VPOC_PACKED, res, err,
                               errlen);
    struct feat_opts o = m->feat;
    o.all_bars = true;
    o.target = FEAT_TARGET_RETURN_BPS; /* the realised return, whatever the model predicts */
    int frc = rc ? 0 : feat_build(ds, ss, res, &o, r);
    if (frc != 0)
        rc = errbuf_set(err, errlen, frc, "features: %s", strerror(-frc));
    free(vb);
    free(res);
    return rc;
}

/* The model and one batch's input buffer on the device. */
struct model_dev {
    struct compute_mlp *mlp;
    void *x;
    double *xn, *out; /* host: a batch normalised, and its outputs */
};

static int model_dev_open(struct compute *c, const struct model *m, struct model_dev *d, char *err,
                          size_t errlen) {
    const struct compute_ops *ops = c->ops;
    double *params = malloc(m->ck.adam.n * sizeof(double));
    d->xn = malloc(MODEL_PREDICT_BATCH * FEAT_COUNT * sizeof(double));
    d->out = malloc(MODEL_PREDICT_BATCH * sizeof(double));
    if (!params || !d->xn || !d->out) {
        free(params);
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    }
    model_params_f32(m, params);
    struct compute_mlp_init init = {.arch = m->ck.arch,
                                    .adam = m->ck.adam.conf,
                                    .params = params,
                                    .max_rows = MODEL_PREDICT_BATCH};
    int rc = ops->mlp_create(c, &init, &d->mlp);
    if (rc != 0)
        rc = errbuf_set(err, errlen, rc < 0 ? rc : -EIO, "the model on %s: %s", ops->name,
                        ops->strerror(rc));
    else
        rc = compute_alloc(c, MODEL_PREDICT_BATCH * FEAT_COUNT * ops->elem_bytes, &d->x, err,
                           errlen);
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM); /* the parameters are copied in */
    free(params);
    return rc;
}

static void model_dev_close(struct compute *c, struct model_dev *d) {
    if (d->mlp)
        c->ops->mlp_destroy(c, d->mlp);
    compute_free(c, d->x);
    free(d->xn);
    free(d->out);
}

/* Rows [r0, r0 + rows) through the network into d->out. */
static int model_dev_forward(struct compute *c, const struct model *m, struct model_dev *d,
                             const struct feat_set *r, size_t r0, size_t rows, char *err,
                             size_t errlen) {
    const struct compute_ops *ops = c->ops;
    for (size_t i = 0; i < rows; i++)
        for (unsigned j = 0; j < FEAT_COUNT; j++)
            d->xn[i * FEAT_COUNT + j] =
                (r->x[(r0 + i) * FEAT_COUNT + j] - m->ck.norm_mean[j]) / m->ck.norm_std[j];
    int rc = ops->upload_f64(c, d->x, d->xn, rows * FEAT_COUNT);
    rc = rc ? rc : ops->mlp_forward(c, d->mlp, d->x, rows);
    rc = rc ? rc : ops->mlp_read_out(c, d->mlp, d->out, rows);
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM);
    if (rc != 0)
        return errbuf_set(err, errlen, rc < 0 ? rc : -EIO, "forward pass on %s: %s", ops->name,
                          ops->strerror(rc));
    return 0;
}

int model_predict(struct compute *c, const struct model *m, const struct data_series *ds,
                  const struct data_sessions *ss, size_t chunk, model_pred_fn sink, void *ctx,
                  char *err, size_t errlen) {
    struct feat_set r = {0};
    struct model_dev d = {0};
    int rc = model_rows_build(c, m, ds, ss, chunk, &r, err, errlen);
    rc = rc ? rc : model_dev_open(c, m, &d, err, errlen);
    bool bce = m->ck.arch.loss == MLP_LOSS_BCE;
    for (size_t r0 = 0; rc == 0 && r0 < r.n; r0 += MODEL_PREDICT_BATCH) {
        size_t rows = r.n - r0 < MODEL_PREDICT_BATCH ? r.n - r0 : MODEL_PREDICT_BATCH;
        rc = model_dev_forward(c, m, &d, &r, r0, rows, err, errlen);
        for (size_t i = 0; rc == 0 && i < rows; i++) {
            double out = d.out[i];
            struct model_pred p = {
                .bar = r.bar[r0 + i],
                .session = r.session[r0 + i],
                .x = &r.x[(r0 + i) * FEAT_COUNT],
                .output = out,
                .value = bce ? 1.0 / (1.0 + exp(-out)) : out * m->ck.y_std + m->ck.y_mean,
                .actual_bps = r.y[r0 + i],
            };
            rc = sink(ctx, &p);
        }
    }
    model_dev_close(c, &d);
    feat_set_fini(&r);
    return rc;
}
