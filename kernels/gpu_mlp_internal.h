/* What the MLP's kernel files share: the on-chip budget, the activations, the loss gradient, the
 * parameter count and the entry points of the large-batch path (gpu_mlp_tiled.hip), which
 * gpu_mlp.hip picks by batch size. */
#ifndef RINGSIDE_KERNELS_GPU_MLP_INTERNAL_H
#define RINGSIDE_KERNELS_GPU_MLP_INTERNAL_H

#include "gpu_runtime.h"
#include "rs_gpu.h"

#define ML_SMEM_MAX (46 * 1024) /* on-chip bytes a block may use (below every device's limit) */

/* 1 / (1 + e^-z) for z >= 0, e^z / (1 + e^z) below (no overflow either way): one exponential
 * and one division whatever z's sign, so that a warp's lanes do not take both paths one after
 * the other (the activations are most of the epilogues' instructions). */
__device__ static inline float ml_sigmoid(float z) {
    float e = expf(-fabsf(z));
    return (z >= 0.0f ? 1.0f : e) / (1.0f + e);
}

/* act: 0 SiLU, 1 ReLU (rs_gpu_mlp_dims.act). */
__device__ static inline float ml_act(int act, float z) {
    return act == 1 ? (z > 0.0f ? z : 0.0f) : z * ml_sigmoid(z);
}

__device__ static inline float ml_act_deriv(int act, float z) {
    if (act == 1)
        return z > 0.0f ? 1.0f : 0.0f;
    float s = ml_sigmoid(z);
    return s * (1.0f + z * (1.0f - s));
}

/* d(mean loss)/d(out) of one row: loss 0 MSE, 1 BCE with logits. */
__device__ static inline float ml_loss_grad(int loss, float out, float y, int rows) {
    float g = loss == 1 ? ml_sigmoid(out) - y : 2.0f * (out - y);
    return g / (float)rows;
}

/* Parameters in the layout of rs_gpu_mlp_dims (the last layer's biases come last). */
static inline int64_t ml_param_count(const struct rs_gpu_mlp_dims *d) {
    int last = d->n_layers - 1;
    return d->b_off[last] + d->out[last];
}

/* Whether a batch of rows is big enough for the tiled path: below it the fused kernels of
 * gpu_mlp.hip (one kernel each way, gradients added by every row tile) are quicker, since a
 * small batch's step is as long as its launches. */
bool mlt_wanted(const struct rs_gpu_mlp_dims *d, int rows);
/* Floats of the backward pass's scratch (every layer's deltas) for batches of up to rows. */
size_t mlt_scratch_floats(const struct rs_gpu_mlp_dims *d, size_t rows);
/* As rs_gpu_mlp_forward, for rows >= 1. */
int mlt_forward(const struct rs_gpu_mlp_dims *d, const float *params, const float *x, int rows,
                float *z, float *out, hipStream_t stream);
/* As rs_gpu_mlp_backward, for rows >= 1: two launches, the first zeroing grad. */
int mlt_backward(const struct rs_gpu_mlp_dims *d, const float *params, const float *x,
                 const float *y, int rows, const float *z, const float *out, float *scratch,
                 float *grad, hipStream_t stream);

#endif
