/* What the MLP's kernel files share: the on-chip budget, the activations, the loss gradient. */
#ifndef RINGSIDE_KERNELS_GPU_MLP_INTERNAL_H
#define RINGSIDE_KERNELS_GPU_MLP_INTERNAL_H

#include "gpu_runtime.h"
#include "rs_gpu.h"

#define ML_SMEM_MAX (46 * 1024) /* on-chip bytes a block may use (below every device's limit) */

__device__ static inline float ml_sigmoid(float z) {
    if (z >= 0.0f)
        return 1.0f / (1.0f + expf(-z));
    float e = expf(z);
    return e / (1.0f + e);
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

#endif
