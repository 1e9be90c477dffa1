/* The CPU backend's MLP "kernels": batch rows split across the fork-join threads, each slice
 * with its own activations and gradient, reduced before the Adam step. */
#include "backend/compute/compute_cpu_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define COMPUTE_CPU_MLP_MAX_SLICES 64

struct compute_mlp {
    struct mlp_arch arch;
    size_t n_params, max_rows;
    unsigned slices;
    double *params, *grad, *out;
    struct mlp_adam adam;                          /* m and v live in pool memory */
    double *scratch[COMPUTE_CPU_MLP_MAX_SLICES];   /* per slice */
    double *grad_part[COMPUTE_CPU_MLP_MAX_SLICES]; /* per slice (slice 0 uses grad) */
    struct compute_par *par;
};

/* Everything an enqueued MLP operation needs, copied into the stream. */
struct compute_cpu_mlp_op {
    struct compute_mlp *m;
    const double *x, *y;
    size_t rows;
    double *loss_host;
    double *dst_params, *dst_m, *dst_v;
    int64_t *dst_t;
    double scale;
    struct compute_reduce reduce;
};

static int compute_cpu_mlp_alloc(struct compute *c, size_t count, double **out) {
    void *p = NULL;
    int rc = compute_alloc(c, count * sizeof(double), &p, NULL, 0);
    *out = p;
    return rc;
}

void compute_cpu_mlp_destroy(struct compute *c, struct compute_mlp *m) {
    if (!m)
        return;
    compute_free(c, m->params);
    compute_free(c, m->grad);
    compute_free(c, m->out);
    compute_free(c, m->adam.m);
    compute_free(c, m->adam.v);
    for (unsigned k = 0; k < m->slices; k++) {
        compute_free(c, m->scratch[k]);
        if (k > 0)
            compute_free(c, m->grad_part[k]);
    }
    free(m);
}

static int compute_cpu_mlp_buffers(struct compute *c, struct compute_mlp *m) {
    size_t n = m->n_params, slice_rows = (m->max_rows + m->slices - 1) / m->slices;
    int rc = compute_cpu_mlp_alloc(c, n, &m->params);
    rc = rc ? rc : compute_cpu_mlp_alloc(c, n, &m->grad);
    rc = rc ? rc : compute_cpu_mlp_alloc(c, m->max_rows, &m->out);
    rc = rc ? rc : compute_cpu_mlp_alloc(c, n, &m->adam.m);
    rc = rc ? rc : compute_cpu_mlp_alloc(c, n, &m->adam.v);
    for (unsigned k = 0; rc == 0 && k < m->slices; k++) {
        rc = compute_cpu_mlp_alloc(c, mlp_scratch_count(&m->arch, slice_rows), &m->scratch[k]);
        if (rc == 0 && k > 0)
            rc = compute_cpu_mlp_alloc(c, n, &m->grad_part[k]);
    }
    m->grad_part[0] = m->grad;
    return rc;
}

int compute_cpu_mlp_create(struct compute *c, const struct compute_mlp_init *init,
                           struct compute_mlp **out) {
    struct compute_cpu *cp = c->priv;
    struct compute_mlp *m = calloc(1, sizeof(*m));
    if (!m || init->max_rows == 0) {
        free(m);
        return m ? -EINVAL : -ENOMEM;
    }
    m->arch = init->arch;
    m->n_params = mlp_param_count(&init->arch);
    m->max_rows = init->max_rows;
    m->par = cp->par;
    m->slices = compute_par_threads(cp->par);
    if (m->slices > COMPUTE_CPU_MLP_MAX_SLICES)
        m->slices = COMPUTE_CPU_MLP_MAX_SLICES;
    m->adam.conf = init->adam;
    m->adam.n = m->n_params;
    m->adam.t = init->adam_t;
    int rc = compute_cpu_mlp_buffers(c, m);
    if (rc != 0) {
        compute_cpu_mlp_destroy(c, m);
        return rc;
    }
    size_t bytes = m->n_params * sizeof(double);
    memcpy(m->params, init->params, bytes);
    if (init->adam_m)
        memcpy(m->adam.m, init->adam_m, bytes);
    else
        memset(m->adam.m, 0, bytes);
    if (init->adam_v)
        memcpy(m->adam.v, init->adam_v, bytes);
    else
        memset(m->adam.v, 0, bytes);
    *out = m;
    return 0;
}

/* Row range of slice k among m->slices for rows rows. */
static void compute_cpu_mlp_slice(const struct compute_mlp *m, size_t rows, unsigned k, size_t *r0,
                                  size_t *n) {
    size_t per = (rows + m->slices - 1) / m->slices;
    *r0 = per * k < rows ? per * k : rows;
    size_t end = *r0 + per < rows ? *r0 + per : rows;
    *n = end - *r0;
}

static void compute_cpu_mlp_forward_slice(void *ctx, unsigned k) {
    const struct compute_cpu_mlp_op *a = ctx;
    struct compute_mlp *m = a->m;
    size_t r0, n;
    compute_cpu_mlp_slice(m, a->rows, k, &r0, &n);
    if (n > 0)
        mlp_forward(&m->arch, m->params, a->x + r0 * (size_t)m->arch.n_in, n, m->scratch[k],
                    m->out + r0);
}

static void compute_cpu_mlp_backward_slice(void *ctx, unsigned k) {
    const struct compute_cpu_mlp_op *a = ctx;
    struct compute_mlp *m = a->m;
    size_t r0, n;
    compute_cpu_mlp_slice(m, a->rows, k, &r0, &n);
    if (n > 0)
        mlp_backward(&m->arch, m->params, a->x + r0 * (size_t)m->arch.n_in, a->y + r0, n,
                     (double)a->rows, m->scratch[k], m->grad_part[k]);
    else
        memset(m->grad_part[k], 0, m->n_params * sizeof(double));
}

static int compute_cpu_mlp_forward_run(void *arg) {
    struct compute_cpu_mlp_op *a = arg;
    compute_par_run(a->m->par, compute_cpu_mlp_forward_slice, a);
    return 0;
}

static int compute_cpu_mlp_loss_run(void *arg) {
    struct compute_cpu_mlp_op *a = arg;
    *a->loss_host = mlp_loss_mean(&a->m->arch, a->m->out, a->y, a->rows);
    return 0;
}

static int compute_cpu_mlp_backward_run(void *arg) {
    struct compute_cpu_mlp_op *a = arg;
    struct compute_mlp *m = a->m;
    compute_par_run(m->par, compute_cpu_mlp_backward_slice, a);
    for (unsigned k = 1; k < m->slices; k++)
        for (size_t i = 0; i < m->n_params; i++)
            m->grad[i] += m->grad_part[k][i];
    return 0;
}

static int compute_cpu_mlp_optimizer_run(void *arg) {
    struct compute_cpu_mlp_op *a = arg;
    mlp_adam_step(&a->m->adam, a->m->params, a->m->grad);
    return 0;
}

static int compute_cpu_mlp_grad_reduce_run(void *arg) {
    struct compute_cpu_mlp_op *a = arg;
    struct compute_mlp *m = a->m;
    if (a->scale != 1.0)
        for (size_t i = 0; i < m->n_params; i++)
            m->grad[i] *= a->scale;
    return a->reduce.fn(a->reduce.ctx, m->grad, m->n_params, true, NULL);
}

static int compute_cpu_mlp_read_run(void *arg) {
    struct compute_cpu_mlp_op *a = arg;
    size_t bytes = a->m->n_params * sizeof(double);
    memcpy(a->dst_params, a->m->params, bytes);
    if (a->dst_m)
        memcpy(a->dst_m, a->m->adam.m, bytes);
    if (a->dst_v)
        memcpy(a->dst_v, a->m->adam.v, bytes);
    if (a->dst_t)
        *a->dst_t = a->m->adam.t;
    return 0;
}

static int compute_cpu_mlp_read_grad_run(void *arg) {
    struct compute_cpu_mlp_op *a = arg;
    memcpy(a->dst_params, a->m->grad, a->m->n_params * sizeof(double));
    return 0;
}

static int compute_cpu_mlp_read_out_run(void *arg) {
    struct compute_cpu_mlp_op *a = arg;
    memcpy(a->dst_params, a->m->out, a->rows * sizeof(double));
    return 0;
}

static int compute_cpu_mlp_check(const struct compute_mlp *m, size_t rows) {
    return rows == 0 || rows > m->max_rows ? -EINVAL : 0;
}

int compute_cpu_mlp_forward(struct compute *c, struct compute_mlp *m, const void *x, size_t rows) {
    struct compute_cpu_mlp_op a = {.m = m, .x = x, .rows = rows};
    int rc = compute_cpu_mlp_check(m, rows);
    return rc ? rc : compute_cpu_enqueue(c, compute_cpu_mlp_forward_run, &a, sizeof(a));
}

int compute_cpu_mlp_loss(struct compute *c, struct compute_mlp *m, const void *y, size_t rows,
                         double *loss_host) {
    struct compute_cpu_mlp_op a = {.m = m, .y = y, .rows = rows, .loss_host = loss_host};
    int rc = compute_cpu_mlp_check(m, rows);
    return rc ? rc : compute_cpu_enqueue(c, compute_cpu_mlp_loss_run, &a, sizeof(a));
}

int compute_cpu_mlp_backward(struct compute *c, struct compute_mlp *m, const void *x, const void *y,
                             size_t rows) {
    struct compute_cpu_mlp_op a = {.m = m, .x = x, .y = y, .rows = rows};
    int rc = compute_cpu_mlp_check(m, rows);
    return rc ? rc : compute_cpu_enqueue(c, compute_cpu_mlp_backward_run, &a, sizeof(a));
}

int compute_cpu_mlp_optimizer(struct compute *c, struct compute_mlp *m) {
    struct compute_cpu_mlp_op a = {.m = m};
    return compute_cpu_enqueue(c, compute_cpu_mlp_optimizer_run, &a, sizeof(a));
}

int compute_cpu_mlp_grad_reduce(struct compute *c, struct compute_mlp *m, double scale,
                                const struct compute_reduce *r) {
    struct compute_cpu_mlp_op a = {.m = m, .scale = scale, .reduce = *r};
    return compute_cpu_enqueue(c, compute_cpu_mlp_grad_reduce_run, &a, sizeof(a));
}

int compute_cpu_mlp_read(struct compute *c, struct compute_mlp *m, double *params, double *adam_m,
                         double *adam_v, int64_t *adam_t) {
    struct compute_cpu_mlp_op a = {
        .m = m, .dst_params = params, .dst_m = adam_m, .dst_v = adam_v, .dst_t = adam_t};
    return compute_cpu_enqueue(c, compute_cpu_mlp_read_run, &a, sizeof(a));
}

int compute_cpu_mlp_read_grad(struct compute *c, struct compute_mlp *m, double *grad) {
    struct compute_cpu_mlp_op a = {.m = m, .dst_params = grad};
    return compute_cpu_enqueue(c, compute_cpu_mlp_read_grad_run, &a, sizeof(a));
}

int compute_cpu_mlp_read_out(struct compute *c, struct compute_mlp *m, double *out, size_t rows) {
    struct compute_cpu_mlp_op a = {.m = m, .dst_params = out, .rows = rows};
    int rc = compute_cpu_mlp_check(m, rows);
    return rc ? rc : compute_cpu_enqueue(c, compute_cpu_mlp_read_out_run, &a, sizeof(a));
}
