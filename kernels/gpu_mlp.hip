// The MLP on the device in fp32, as backend/mlp/mlp.c computes it in double: forward keeping
// pre-activations, losses, backward and Adam as torch.optim.Adam. Small batches take the fused
// kernels here (a block owns a tile of rows and carries it through every layer on chip, the
// backward pass adding each tile's gradients atomically); large ones the tiled path of
// gpu_mlp_tiled.hip.
#include "gpu_mlp_internal.h"

#define ML_THREADS     256
#define ML_ROWS_MIN    4
#define ML_ROWS_MAX    64
#define ML_BLOCKS_GOAL 32 /* blocks a batch is split into, when tiles allow */

/* Rows per block: small tiles for small batches (a kernel lasts as long as one block's tile
 * takes), at most what fits `buffers` row-tiles of the widest layer on chip. */
static int ml_tile_rows(const rs_gpu_mlp_dims *d, int buffers, int rows) {
    int fit = ML_SMEM_MAX / (buffers * d->max_width * (int)sizeof(float));
    int r = (rows + ML_BLOCKS_GOAL - 1) / ML_BLOCKS_GOAL;
    r = r < ML_ROWS_MIN ? ML_ROWS_MIN : r > ML_ROWS_MAX ? ML_ROWS_MAX : r;
    return r > fit ? (fit < 1 ? 1 : fit) : r;
}

__global__ void __launch_bounds__(ML_THREADS)
    ml_forward_kernel(rs_gpu_mlp_dims d, const float *params, const float *x, int rows, int tile,
                      float *z, float *out) {
    extern __shared__ float sm[];
    float *a = sm, *b = sm + (size_t)tile * d.max_width;
    int r0 = blockIdx.x * tile, nr = rows - r0 < tile ? rows - r0 : tile;
    for (int k = threadIdx.x; k < nr * d.in[0]; k += blockDim.x)
        a[k] = x[(size_t)r0 * d.in[0] + k];
    __syncthreads();
    for (int l = 0; l < d.n_layers; l++) {
        int in = d.in[l], on = d.out[l];
        bool hidden = l + 1 < d.n_layers;
        const float *w = params + d.w_off[l], *bias = params + d.b_off[l];
        float *zl = z + (size_t)l * d.z_stride + (size_t)r0 * on;
        for (int k = threadIdx.x; k < nr * on; k += blockDim.x) {
            int r = k / on, j = k - r * on;
            const float *wj = w + (size_t)j * in, *ar = a + r * in;
            float s = bias[j];
            for (int i = 0; i < in; i++)
                s = fmaf(wj[i], ar[i], s);
            if (hidden) {
                zl[k] = s;
                b[k] = ml_act(d.act, s);
            } else {
                out[r0 + r] = s;
            }
        }
        __syncthreads();
        float *t = a;
        a = b;
        b = t;
    }
}

/* The block's sum of v into part[0] (every thread calls it; part has ML_THREADS slots). */
__device__ static double ml_block_sum(double v, double *part) {
    part[threadIdx.x] = v;
    __syncthreads();
    for (unsigned h = ML_THREADS / 2; h > 0; h /= 2) {
        if (threadIdx.x < h)
            part[threadIdx.x] += part[threadIdx.x + h];
        __syncthreads();
    }
    return part[0];
}

/* One row's loss in double: loss 1 BCE with logits (stable for any sign), else MSE. */
__device__ static inline double ml_row_loss(int loss, double o, double t) {
    return loss == 1 ? (o > 0 ? o : 0.0) - o * t + log1p(exp(-fabs(o))) : (o - t) * (o - t);
}

/* The mean loss in one launch: each block sums its rows (one a thread, mostly) into
 * work->partial, and the block that finishes last adds the partials in block order (the same
 * sum whatever order the blocks ran in), writes the mean and leaves work zeroed. */
__global__ void __launch_bounds__(ML_THREADS)
    ml_loss_kernel(int loss, const float *out, const float *y, int rows,
                   struct rs_gpu_mlp_loss_work *work, double *result) {
    __shared__ double part[ML_THREADS];
    __shared__ bool last;
    double s = 0;
    for (int r = blockIdx.x * ML_THREADS + threadIdx.x; r < rows; r += gridDim.x * ML_THREADS) {
        s += ml_row_loss(loss, out[r], y[r]);
    }
    s = ml_block_sum(s, part);
    if (threadIdx.x == 0) {
        work->partial[blockIdx.x] = s;
        __threadfence();
        last = atomicAdd(&work->done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    double p = 0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += ML_THREADS)
        p += ((volatile double *)work->partial)[b];
    s = ml_block_sum(threadIdx.x < gridDim.x ? p : 0.0, part);
    if (threadIdx.x == 0) {
        *result = rows > 0 ? s / rows : 0.0;
        work->done = 0;
    }
}

#if defined(RS_GPU_NVIDIA)
#define ML_LOSS_ONE_THREADS 1024
#define ML_LOSS_ONE_ROWS    (16 * ML_LOSS_ONE_THREADS) /* most rows the one-block form takes */

/* The mean loss of up to ML_LOSS_ONE_ROWS rows by one block: a thread's rows, then the warps'
 * sums by shuffles and one barrier. No partials in device memory and no second pass: the
 * training batches' usual sizes take half the time of ml_loss_kernel's two steps. */
__global__ void __launch_bounds__(ML_LOSS_ONE_THREADS)
    ml_loss_one_kernel(int loss, const float *out, const float *y, int rows, double *result) {
    __shared__ double part[ML_LOSS_ONE_THREADS / 32];
    double s = 0;
    for (int r = threadIdx.x; r < rows; r += ML_LOSS_ONE_THREADS) {
        s += ml_row_loss(loss, out[r], y[r]);
    }
    for (int o = 16; o > 0; o /= 2)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0)
        part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x >= 32)
        return;
    s = part[threadIdx.x];
    for (int o = 16; o > 0; o /= 2)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0)
        *result = rows > 0 ? s / rows : 0.0;
}
#endif

__global__ void __launch_bounds__(ML_THREADS)
    ml_backward_kernel(rs_gpu_mlp_dims d, const float *params, const float *x, const float *y,
                       int rows, int tile, const float *z, const float *out, float *grad) {
    extern __shared__ float sm[];
    size_t plane = (size_t)tile * d.max_width;
    float *dc = sm, *dp = sm + plane, *ap = sm + 2 * plane;
    int r0 = blockIdx.x * tile, nr = rows - r0 < tile ? rows - r0 : tile;
    for (int r = threadIdx.x; r < nr; r += blockDim.x)
        dc[r] = ml_loss_grad(d.loss, out[r0 + r], y[r0 + r], rows);
    for (int l = d.n_layers - 1; l >= 0; l--) {
        int in = d.in[l], on = d.out[l];
        const float *zin = l > 0 ? z + (size_t)(l - 1) * d.z_stride + (size_t)r0 * in : NULL;
        for (int k = threadIdx.x; k < nr * in; k += blockDim.x)
            ap[k] = l == 0 ? x[(size_t)r0 * in + k] : ml_act(d.act, zin[k]);
        __syncthreads();
        const float *w = params + d.w_off[l];
        float *gw = grad + d.w_off[l], *gb = grad + d.b_off[l];
        for (int k = threadIdx.x; k < on * in; k += blockDim.x) {
            int j = k / in, i = k - j * in;
            float s = 0.0f;
            for (int r = 0; r < nr; r++)
                s = fmaf(dc[r * on + j], ap[r * in + i], s);
            atomicAdd(&gw[k], s);
        }
        for (int j = threadIdx.x; j < on; j += blockDim.x) {
            float s = 0.0f;
            for (int r = 0; r < nr; r++)
                s += dc[r * on + j];
            atomicAdd(&gb[j], s);
        }
        if (l == 0)
            break;
        for (int k = threadIdx.x; k < nr * in; k += blockDim.x) {
            int r = k / in, i = k - r * in;
            float s = 0.0f;
            for (int j = 0; j < on; j++)
                s = fmaf(dc[r * on + j], w[(size_t)j * in + i], s);
            dp[k] = s * ml_act_deriv(d.act, zin[k]);
        }
        __syncthreads();
        float *t = dc;
        dc = dp;
        dp = t;
    }
}

__global__ void ml_adam_kernel(rs_gpu_adam a, float *params, const float *grad, float *m, float *v,
                               size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float p = params[i], g = grad[i] + a.weight_decay * p;
        float mi = a.beta1 * m[i] + (1.0f - a.beta1) * g;
        float vi = a.beta2 * v[i] + (1.0f - a.beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        params[i] = p - a.step * mi / (sqrtf(vi) / a.sqrt_bc2 + a.eps);
    }
}

__global__ void ml_scale_kernel(float *x, size_t n, float s) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

extern "C" {

int rs_gpu_mlp_forward(const struct rs_gpu_mlp_dims *d, const float *params, const float *x,
                       int rows, float *z, float *out, void *stream) {
    if (rows <= 0)
        return 0;
    if (mlt_wanted(d, rows))
        return mlt_forward(d, params, x, rows, z, out, (hipStream_t)stream);
    int tile = ml_tile_rows(d, 2, rows);
    size_t smem = 2 * (size_t)tile * d->max_width * sizeof(float);
    RS_LAUNCH(ml_forward_kernel, (rows + tile - 1) / tile, ML_THREADS, smem, (hipStream_t)stream,
              *d, params, x, rows, tile, z, out);
    return (int)hipGetLastError();
}

int rs_gpu_mlp_loss(const struct rs_gpu_mlp_dims *d, const float *out, const float *y, int rows,
                    struct rs_gpu_mlp_loss_work *work, double *loss, void *stream) {
#if defined(RS_GPU_NVIDIA)
    if (rows <= ML_LOSS_ONE_ROWS) {
        RS_LAUNCH(ml_loss_one_kernel, 1, ML_LOSS_ONE_THREADS, 0, (hipStream_t)stream, d->loss, out,
                  y, rows, loss);
        return (int)hipGetLastError();
    }
#endif
    int blocks = (rows + ML_THREADS - 1) / ML_THREADS;
    blocks = blocks < 1 ? 1 : blocks > RS_GPU_MLP_LOSS_BLOCKS ? RS_GPU_MLP_LOSS_BLOCKS : blocks;
    RS_LAUNCH(ml_loss_kernel, blocks, ML_THREADS, 0, (hipStream_t)stream, d->loss, out, y, rows,
              work, loss);
    return (int)hipGetLastError();
}

size_t rs_gpu_mlp_scratch_floats(const struct rs_gpu_mlp_dims *d, size_t max_rows) {
    int most = max_rows > INT32_MAX ? INT32_MAX : (int)max_rows; /* wanted grows with rows */
    return mlt_wanted(d, most) ? mlt_scratch_floats(d, max_rows) : 0;
}

int rs_gpu_mlp_backward(const struct rs_gpu_mlp_dims *d, const float *params, const float *x,
                        const float *y, int rows, const float *z, const float *out, float *scratch,
                        float *grad, void *stream) {
    size_t n = (size_t)ml_param_count(d);
    if (rows <= 0)
        return (int)hipMemsetAsync(grad, 0, n * sizeof(float), (hipStream_t)stream);
    if (mlt_wanted(d, rows))
        return mlt_backward(d, params, x, y, rows, z, out, scratch, grad, (hipStream_t)stream);
    /* each row tile adds its part: start from zero */
    int e = (int)hipMemsetAsync(grad, 0, n * sizeof(float), (hipStream_t)stream);
    if (e != 0)
        return e;
    int tile = ml_tile_rows(d, 3, rows);
    size_t smem = 3 * (size_t)tile * d->max_width * sizeof(float);
    RS_LAUNCH(ml_backward_kernel, (rows + tile - 1) / tile, ML_THREADS, smem, (hipStream_t)stream,
              *d, params, x, y, rows, tile, z, out, grad);
    return (int)hipGetLastError();
}

int rs_gpu_mlp_adam(const struct rs_gpu_adam *a, float *params, const float *grad, float *m,
                    float *v, size_t n, void *stream) {
    size_t blocks = (n + ML_THREADS - 1) / ML_THREADS;
    if (blocks > 4096)
        blocks = 4096;
    if (blocks == 0)
        return 0;
    RS_LAUNCH(ml_adam_kernel, (unsigned)blocks, ML_THREADS, 0, (hipStream_t)stream, *a, params,
              grad, m, v, n);
    return (int)hipGetLastError();
}

int rs_gpu_scale_f32(float *x, size_t n, float s, void *stream) {
    size_t blocks = (n + ML_THREADS - 1) / ML_THREADS;
    if (blocks > 4096)
        blocks = 4096;
    if (blocks == 0)
        return 0;
    RS_LAUNCH(ml_scale_kernel, (unsigned)blocks, ML_THREADS, 0, (hipStream_t)stream, x, n, s);
    return (int)hipGetLastError();
}

} // extern "C"
