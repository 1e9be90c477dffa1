/* Private state of the CPU backend, shared by its two source files. */
#ifndef RINGSIDE_BACKEND_COMPUTE_COMPUTE_CPU_INTERNAL_H
#define RINGSIDE_BACKEND_COMPUTE_COMPUTE_CPU_INTERNAL_H

#include "backend/compute/compute.h"
#include "backend/compute/compute_par.h"
#include "backend/compute/compute_stream.h"

struct compute_cpu {
    struct compute_stream *stream; /* every enqueued operation runs here, in order */
    struct compute_par *par;       /* MLP batch slices run on these threads */
};

/* Enqueue fn with a copy of its argument struct on c's stream. */
int compute_cpu_enqueue(struct compute *c, compute_stream_fn fn, const void *arg, size_t bytes);

int compute_cpu_mlp_create(struct compute *c, const struct compute_mlp_init *init,
                           struct compute_mlp **out);
void compute_cpu_mlp_destroy(struct compute *c, struct compute_mlp *m);
int compute_cpu_mlp_forward(struct compute *c, struct compute_mlp *m, const void *x, size_t rows);
int compute_cpu_mlp_loss(struct compute *c, struct compute_mlp *m, const void *y, size_t rows,
                         double *loss_host);
int compute_cpu_mlp_backward(struct compute *c, struct compute_mlp *m, const void *x, const void *y,
                             size_t rows);
int compute_cpu_mlp_optimizer(struct compute *c, struct compute_mlp *m);
int compute_cpu_mlp_grad_reduce(struct compute *c, struct compute_mlp *m, double scale,
                                const struct compute_reduce *r);
int compute_cpu_mlp_read_grad(struct compute *c, struct compute_mlp *m, double *grad);
int compute_cpu_mlp_read_out(struct compute *c, struct compute_mlp *m, double *out, size_t rows);
int compute_cpu_mlp_read(struct compute *c, struct compute_mlp *m, double *params, double *adam_m,
                         double *adam_v, int64_t *adam_t);

#endif
