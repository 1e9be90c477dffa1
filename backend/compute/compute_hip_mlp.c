/* The HIP backend's MLP: fp32 parameters, gradients, Adam state and activations in pool memory,
 * driven by the kernels of kernels/gpu_mlp.hip. */
#include "backend/compute/compute_hip_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

struct compute_mlp {
    struct mlp_arch arch;
    struct rs_gpu_mlp_dims dims;
    size_t n_params, max_rows;
    float *params, *grad, *m, *v, *z, *out;
    float *scratch;                         /* the backward pass's (rs_gpu_mlp_scratch_floats) */
    struct rs_gpu_mlp_loss_work *loss_work; /* the loss's blocks' partial sums, kept zeroed */
    struct mlp_adam_conf adam;
    int64_t t; /* Adam steps taken */
};

static void *compute_hip_mlp_stream(struct compute *c) {
    return ((struct compute_hip *)c->priv)->stream;
}

static void compute_hip_mlp_dims(const struct mlp_arch *a, size_t max_rows,
                                 struct rs_gpu_mlp_dims *d) {
    d->n_layers = a->n_hidden + 1;
    d->max_width = a->n_in;
    for (int l = 0; l < d->n_layers; l++) {
        d->in[l] = mlp_layer_in(a, l);
        d->out[l] = mlp_layer_out(a, l);
        d->w_off[l] = (int64_t)mlp_layer_w_offset(a, l);
        d->b_off[l] = (int64_t)mlp_layer_b_offset(a, l);
        if (d->out[l] > d->max_width)
            d->max_width = d->out[l];
    }
    d->act = a->act == MLP_ACT_RELU ? 1 : 0;
    d->loss = a->loss == MLP_LOSS_BCE ? 1 : 0;
    d->z_stride = (int64_t)(max_rows * (size_t)d->max_width);
}

void compute_hip_mlp_destroy(struct compute *c, struct compute_mlp *m) {
    if (!m)
        return;
    void *bufs[] = {m->params, m->grad, m->m, m->v, m->z, m->out, m->scratch, m->loss_work};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        compute_free(c, bufs[i]);
    free(m);
}

static int compute_hip_mlp_buf(struct compute *c, size_t count, float **out) {
    void *p = NULL;
    int rc = compute_alloc(c, (count ? count : 1) * sizeof(float), &p, NULL, 0);
    *out = p;
    return rc;
}

/* Device copy of a host array, or zeros when there is none. */
static int compute_hip_mlp_fill(struct compute *c, float *dst, const double *src, size_t n) {
    return src ? compute_hip_upload_f64(c, dst, src, n)
               : c->ops->memset0(c, dst, n * sizeof(float));
}

int compute_hip_mlp_create(struct compute *c, const struct compute_mlp_init *init,
                           struct compute_mlp **out) {
    if (init->max_rows == 0 || init->max_rows > INT32_MAX)
        return -EINVAL;
    for (int l = 0; l < init->arch.n_hidden; l++)
        if (init->arch.hidden[l] > RS_GPU_MLP_MAX_WIDTH)
            return -EINVAL;
    if (init->arch.n_in > RS_GPU_MLP_MAX_WIDTH)
        return -EINVAL;
    struct compute_mlp *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->arch = init->arch;
    m->n_params = mlp_param_count(&init->arch);
    m->max_rows = init->max_rows;
    m->adam = init->adam;
    m->t = init->adam_t;
    compute_hip_mlp_dims(&m->arch, m->max_rows, &m->dims);
    size_t n = m->n_params, nz = (size_t)m->arch.n_hidden * (size_t)m->dims.z_stride;
    int rc = compute_hip_mlp_buf(c, n, &m->params);
    rc = rc ? rc : compute_hip_mlp_buf(c, n, &m->grad);
    rc = rc ? rc : compute_hip_mlp_buf(c, n, &m->m);
    rc = rc ? rc : compute_hip_mlp_buf(c, n, &m->v);
    rc = rc ? rc : compute_hip_mlp_buf(c, nz, &m->z);
    rc = rc ? rc : compute_hip_mlp_buf(c, m->max_rows, &m->out);
    rc = rc ? rc
            : compute_hip_mlp_buf(c, rs_gpu_mlp_scratch_floats(&m->dims, m->max_rows), &m->scratch);
    if (rc == 0) {
        void *w = NULL;
        rc = compute_alloc(c, sizeof(struct rs_gpu_mlp_loss_work), &w, NULL, 0);
        m->loss_work = w;
    }
    rc = rc ? rc : c->ops->memset0(c, m->loss_work, sizeof(struct rs_gpu_mlp_loss_work));
    rc = rc ? rc : compute_hip_mlp_fill(c, m->params, init->params, n);
    rc = rc ? rc : compute_hip_mlp_fill(c, m->m, init->adam_m, n);
    rc = rc ? rc : compute_hip_mlp_fill(c, m->v, init->adam_v, n);
    if (rc != 0) {
        compute_hip_mlp_destroy(c, m);
        return rc;
    }
    *out = m;
    return 0;
}

static int compute_hip_mlp_check(const struct compute_mlp *m, size_t rows) {
    return rows == 0 || rows > m->max_rows ? -EINVAL : 0;
}

int compute_hip_mlp_forward(struct compute *c, struct compute_mlp *m, const void *x, size_t rows) {
    int rc = compute_hip_mlp_check(m, rows);
    rc = rc ? rc : compute_hip_enter(c);
    return rc ? rc
              : compute_hip_fail(c, rs_gpu_mlp_forward(&m->dims, m->params, x, (int)rows, m->z,
                                                       m->out, compute_hip_mlp_stream(c)));
}

int compute_hip_mlp_loss(struct compute *c, struct compute_mlp *m, const void *y, size_t rows,
                         double *loss_host) {
    void *slot = NULL;
    int rc = compute_hip_mlp_check(m, rows);
    rc = rc ? rc : compute_hip_enter(c);
    rc = rc ? rc : compute_hip_stage(c, sizeof(double), &slot);
    if (rc != 0)
        return rc;
    rc = compute_hip_fail(c, rs_gpu_mlp_loss(&m->dims, m->out, y, (int)rows, m->loss_work, slot,
                                             compute_hip_mlp_stream(c)));
    struct hip_pend p = {.kind = HIP_PEND_F64, .dst = loss_host, .src = slot};
    return rc ? rc : compute_hip_pend(c, &p);
}

int compute_hip_mlp_backward(struct compute *c, struct compute_mlp *m, const void *x, const void *y,
                             size_t rows) {
    int rc = compute_hip_mlp_check(m, rows);
    rc = rc ? rc : compute_hip_enter(c);
    return rc ? rc
              : compute_hip_fail(c, rs_gpu_mlp_backward(&m->dims, m->params, x, y, (int)rows, m->z,
                                                        m->out, m->scratch, m->grad,
                                                        compute_hip_mlp_stream(c)));
}

int compute_hip_mlp_optimizer(struct compute *c, struct compute_mlp *m) {
    const struct mlp_adam_conf *a = &m->adam;
    int64_t t = m->t + 1;
    double bc1 = 1.0 - pow(a->beta1, (double)t), bc2 = 1.0 - pow(a->beta2, (double)t);
    struct rs_gpu_adam g = {
        .step = (float)(a->lr / bc1),
        .sqrt_bc2 = (float)sqrt(bc2),
        .beta1 = (float)a->beta1,
        .beta2 = (float)a->beta2,
        .eps = (float)a->eps,
        .weight_decay = (float)a->weight_decay,
    };
    int rc = compute_hip_enter(c);
    rc = rc ? rc
            : compute_hip_fail(c, rs_gpu_mlp_adam(&g, m->params, m->grad, m->m, m->v, m->n_params,
                                                  compute_hip_mlp_stream(c)));
    if (rc == 0)
        m->t = t;
    return rc;
}

int compute_hip_mlp_grad_reduce(struct compute *c, struct compute_mlp *m, double scale,
                                const struct compute_reduce *r) {
    int rc = compute_hip_enter(c);
    if (rc == 0 && scale != 1.0)
        rc = compute_hip_fail(
            c, rs_gpu_scale_f32(m->grad, m->n_params, (float)scale, compute_hip_mlp_stream(c)));
    return rc ? rc : r->fn(r->ctx, m->grad, m->n_params, false, compute_hip_mlp_stream(c));
}

int compute_hip_mlp_read(struct compute *c, struct compute_mlp *m, double *params, double *adam_m,
                         double *adam_v, int64_t *adam_t) {
    int rc = compute_hip_download_f32(c, params, m->params, m->n_params);
    if (rc == 0 && adam_m)
        rc = compute_hip_download_f32(c, adam_m, m->m, m->n_params);
    if (rc == 0 && adam_v)
        rc = compute_hip_download_f32(c, adam_v, m->v, m->n_params);
    if (rc == 0 && adam_t) {
        struct hip_pend p = {.kind = HIP_PEND_I64, .dst = adam_t, .value = m->t};
        rc = compute_hip_pend(c, &p);
    }
    return rc;
}

int compute_hip_mlp_read_grad(struct compute *c, struct compute_mlp *m, double *grad) {
    return compute_hip_download_f32(c, grad, m->grad, m->n_params);
}

int compute_hip_mlp_read_out(struct compute *c, struct compute_mlp *m, double *out, size_t rows) {
    int rc = compute_hip_mlp_check(m, rows);
    return rc ? rc : compute_hip_download_f32(c, out, m->out, rows);
}
