// The MLP for large batches, in three kernels: the forward pass and the backward deltas each
// carry a tile of rows through every layer on chip, a thread computing a 4x4 block of rows x
// outputs from weight chunks staged in shared memory; then one launch computes every layer's
// weight gradient dW_l = delta_l^T a_(l-1) (a_(-1) = x) from the deltas kept in a scratch
// buffer, each block owning a 32x32 tile of one layer's dW over a slice of the rows and adding
// it to grad once per element.
#include "gpu_mlp_internal.h"

#define MLT_THREADS 128 /* threads of a row-tile block (forward, deltas) */
#ifndef MLT_KC
#define MLT_KC 16 /* weight rows (reduction index k) staged at a time */
#endif
#define MLT_MICRO    2 /* 4x4 output blocks a thread owns at most */
#define MLT_PF       (MLT_KC * RS_GPU_MLP_MAX_WIDTH / MLT_THREADS) /* staged floats a thread carries */
#define MLT_ROWS_MAX 64
#ifndef MLT_BLOCKS_GOAL
#define MLT_BLOCKS_GOAL 256 /* row tiles a batch is split into, when rows allow */
#endif
#ifndef MLT_MIN_MACS
#define MLT_MIN_MACS (1 << 20) /* rows x multiply-adds a row from which the tiled path runs */
#endif

#define MLG_THREADS 256 /* threads of a gradient block: MLG_GROUPS groups of 64 */
#define MLG_GROUPS  4
#define MLG_TILE    32  /* a block's dW tile: MLG_TILE outputs x MLG_TILE inputs */
#define MLG_CHUNK   128 /* rows staged at a time, MLG_CHUNK / MLG_GROUPS for each group */
#ifndef MLG_BLOCKS_GOAL
#define MLG_BLOCKS_GOAL 256 /* gradient blocks wanted, when rows allow */
#endif

static_assert(MLT_PF * MLT_THREADS == MLT_KC * RS_GPU_MLP_MAX_WIDTH, "staging slots");
static_assert(MLT_THREADS % 32 == 0 && RS_GPU_MLP_MAX_WIDTH % 32 == 0, "staging slots");
static_assert(MLG_THREADS == 64 * MLG_GROUPS && MLG_TILE == 32, "gradient thread layout");

/* The layout of one backward pass (rows fixed), made on the host. */
struct mlt_plan {
    int64_t delta_off[RS_GPU_MLP_MAX_LAYERS]; /* layer l's deltas in the scratch: rows x out[l] */
    int first[RS_GPU_MLP_MAX_LAYERS + 1];     /* the first gradient block of each layer */
    int tiles_i[RS_GPU_MLP_MAX_LAYERS];       /* MLG_TILE-wide input tiles of each layer */
    int slices, slice_rows;                   /* row slices of every dW tile, their height */
};

__device__ static inline int mlt_round4(int n) {
    return (n + 3) & ~3;
}

/* ---- row tiles: C[rows][N] = A[rows][K] W-product, A on chip ---- */

/* Where staged slot p of thread t lands in a chunk: reduction index kk, output n. Forward
 * chunks read W[n][k] (k contiguous in memory), backward ones W[k][n] (n contiguous):
 * neighbouring threads read neighbouring addresses either way. Slots cover all
 * MLT_KC x MAX_WIDTH places once, those of outputs below N4 being the first mlt_slots(N4). */
template <bool FWD> __device__ static inline void mlt_slot(int t, int p, int *kk, int *n) {
    if (FWD) {
        *kk = t % MLT_KC;
        *n = t / MLT_KC + (MLT_THREADS / MLT_KC) * p;
    } else {
        const int rows_per_pass = MLT_THREADS / 32;
        *n = t % 32 + 32 * (p / (MLT_KC / rows_per_pass));
        *kk = t / 32 + rows_per_pass * (p % (MLT_KC / rows_per_pass));
    }
}

template <bool FWD> __device__ static inline int mlt_slots(int N4) {
    if (FWD)
        return (N4 + MLT_THREADS / MLT_KC - 1) / (MLT_THREADS / MLT_KC);
    return (N4 + 31) / 32 * (MLT_KC / (MLT_THREADS / 32));
}

/* The end of a chunk's live slots in an unrolled slot loop: nvcc leaves the loop there, so the
 * slots past a narrow layer's cost no instructions (a 64-wide layer would otherwise pay for
 * every slot of a 256-wide one); clang cannot unroll a loop with a second exit, so on AMD the
 * slots past it are skipped one by one. */
#if defined(RS_GPU_NVIDIA)
#define MLT_LIVE_END(p, live)                                                                      \
    if ((p) >= (live))                                                                             \
    break
#else
#define MLT_LIVE_END(p, live)                                                                      \
    if ((p) >= (live))                                                                             \
    continue
#endif

/* Weights k0.. k0 + MLT_KC - 1 into registers; zero outside the K x N matrix. */
template <bool FWD>
__device__ static inline void mlt_fetch(const float *w, int K, int N, int k0, float (&pf)[MLT_PF]) {
    int live = mlt_slots<FWD>(mlt_round4(N));
#pragma unroll
    for (int p = 0; p < MLT_PF; p++) {
        MLT_LIVE_END(p, live);
        int kk, n;
        mlt_slot<FWD>(threadIdx.x, p, &kk, &n);
        int k = k0 + kk;
        pf[p] = n < N && k < K ? w[FWD ? (size_t)n * K + k : (size_t)k * N + n] : 0.0f;
    }
}

/* The fetched chunk into wc[kk][n] (row stride ld), columns below N4. */
template <bool FWD>
__device__ static inline void mlt_stash(const float (&pf)[MLT_PF], int N4, int ld, float *wc) {
    int live = mlt_slots<FWD>(N4);
#pragma unroll
    for (int p = 0; p < MLT_PF; p++) {
        MLT_LIVE_END(p, live);
        int kk, n;
        mlt_slot<FWD>(threadIdx.x, p, &kk, &n);
        if (n < N4)
            wc[kk * ld + n] = pf[p];
    }
}

__device__ static inline void mlt_outer(float4 a, float4 w, float (&acc)[4][4]) {
    float av[4] = {a.x, a.y, a.z, a.w}, wv[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = fmaf(av[i], wv[j], acc[i][j]);
}

/* acc[i][j] += sum over kk < kn of a[kk][i] w[kk][j]: a with row stride R, w with ld. */
__device__ static inline void mlt_fma(const float *a, int R, const float *w, int ld, int kn,
                                      float (&acc)[4][4]) {
    if (kn == MLT_KC) {
#pragma unroll
        for (int kk = 0; kk < MLT_KC; kk++)
            mlt_outer(*(const float4 *)(a + kk * R), *(const float4 *)(w + kk * ld), acc);
    } else {
        for (int kk = 0; kk < kn; kk++)
            mlt_outer(*(const float4 *)(a + kk * R), *(const float4 *)(w + kk * ld), acc);
    }
}

/* One layer of a row tile: acc gets, for each 4x4 block m = threadIdx.x + q MLT_THREADS of
 * C[R][N4] (4 rows m / (N4/4), 4 outputs m % (N4/4)), the products over k < K of a[k][r]
 * (on chip, row stride R) and the weights: W[n][k] forward, W[k][n] backward. Every thread of
 * the block calls it; it starts with a barrier, so a may be the previous layer's output and
 * wc is free to reuse; a is only read, wc is overwritten. */
template <bool FWD>
__device__ static void mlt_layer(const float *w, int K, int N, const float *a, int R, float *wc,
                                 float (&acc)[MLT_MICRO][4][4]) {
    int N4 = mlt_round4(N), ld = N4 + 4, nn = N4 / 4, nm = R / 4 * nn;
#pragma unroll
    for (int q = 0; q < MLT_MICRO; q++)
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[q][i][j] = 0.0f;
    float pf[MLT_PF];
    mlt_fetch<FWD>(w, K, N, 0, pf);
    for (int k0 = 0; k0 < K; k0 += MLT_KC) {
        __syncthreads(); /* wc's last chunk read, a written */
        mlt_stash<FWD>(pf, N4, ld, wc);
        __syncthreads();
        if (k0 + MLT_KC < K) /* the next chunk's loads overlap this chunk's products */
            mlt_fetch<FWD>(w, K, N, k0 + MLT_KC, pf);
        int kn = K - k0 < MLT_KC ? K - k0 : MLT_KC;
#pragma unroll
        for (int q = 0; q < MLT_MICRO; q++) {
            int m = threadIdx.x + q * MLT_THREADS;
            if (m < nm)
                mlt_fma(a + k0 * R + 4 * (m / nn), R, wc + 4 * (m % nn), ld, kn, acc[q]);
        }
    }
}

/* The shared memory of a row-tile block: the weight chunk, then two R x w4 planes. */
__device__ static inline float *mlt_planes(float *sm, int w4, int R, float **a, float **c) {
    *a = sm + MLT_KC * (w4 + 4);
    *c = *a + (size_t)w4 * R;
    return sm;
}

/* Forward epilogue of layer l: s = acc + bias into dst[row][N] (z, or out for the last layer)
 * for the rows and outputs that exist; the activations into c[n][r] when hidden (zeros for
 * padding outputs, as act(0) = 0). */
__device__ static void mlt_forward_out(const rs_gpu_mlp_dims &d, int l, const float *bias, int R,
                                       int nr, const float (&acc)[MLT_MICRO][4][4], float *dst,
                                       float *c) {
    int N = d.out[l], nn = mlt_round4(N) / 4, nm = R / 4 * nn;
    bool hidden = l + 1 < d.n_layers;
#pragma unroll
    for (int q = 0; q < MLT_MICRO; q++) {
        int m = threadIdx.x + q * MLT_THREADS, tr = m / nn, tn = m % nn;
        if (m >= nm)
            continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int n = 4 * tn + j;
            float b = n < N ? bias[n] : 0.0f, v[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                int r = 4 * tr + i;
                float s = acc[q][i][j] + b;
                if (r < nr && n < N)
                    dst[(size_t)r * N + n] = s;
                v[i] = hidden ? ml_act(d.act, s) : 0.0f;
            }
            if (hidden)
                *(float4 *)(c + n * R + 4 * tr) = make_float4(v[0], v[1], v[2], v[3]);
        }
    }
}

/* The output layer of one output (every loss here takes one): out[r] = b + sum over k < K of
 * a[k][r] w[k]. The 4x4 blocks of mlt_layer would leave it to four threads of one warp, K
 * products each, while the block waits; here every thread takes one row and a slice of k, and
 * the slices' sums meet in part (MLT_THREADS floats of shared memory). Every thread calls it;
 * it starts with a barrier (a may be the previous layer's output, part free to reuse). */
__device__ static void mlt_forward_one(const float *w, const float *bias, int K, const float *a,
                                       int R, int nr, float *part, float *out) {
    int slices = MLT_THREADS / R, r = (int)threadIdx.x % R, sl = (int)threadIdx.x / R;
    float s = 0.0f;
    __syncthreads();
    if (sl < slices)
        for (int k = sl; k < K; k += slices)
            s = fmaf(a[k * R + r], w[k], s);
    part[threadIdx.x] = s;
    __syncthreads();
    if ((int)threadIdx.x >= R)
        return;
    float t = bias[0];
    for (int k = 0; k < slices; k++) /* in slice order: the same sum in every block */
        t += part[k * R + r];
    if (r < nr)
        out[r] = t;
}

__global__ void __launch_bounds__(MLT_THREADS)
    mlt_forward_kernel(rs_gpu_mlp_dims d, const float *params, const float *x, int rows, int R,
                       float *z, float *out) {
    extern __shared__ float4 mlt_sm[];
    float *a, *c, *wc = mlt_planes((float *)mlt_sm, mlt_round4(d.max_width), R, &a, &c);
    int r0 = blockIdx.x * R, nr = rows - r0 < R ? rows - r0 : R, in0 = d.in[0];
    for (int e = threadIdx.x; e < in0 * R; e += MLT_THREADS) {
        int r = e / in0, k = e - r * in0;
        a[k * R + r] = r < nr ? x[(size_t)(r0 + r) * in0 + k] : 0.0f;
    }
    float acc[MLT_MICRO][4][4];
    for (int l = 0; l < d.n_layers; l++) {
        int N = d.out[l];
        if (l + 1 == d.n_layers && N == 1) {
            mlt_forward_one(params + d.w_off[l], params + d.b_off[l], d.in[l], a, R, nr, wc,
                            out + r0);
            return;
        }
        mlt_layer<true>(params + d.w_off[l], d.in[l], N, a, R, wc, acc);
        float *dst = l + 1 < d.n_layers ? z + (size_t)l * d.z_stride : out;
        mlt_forward_out(d, l, params + d.b_off[l], R, nr, acc, dst + (size_t)r0 * N, c);
        float *t = a;
        a = c;
        c = t;
    }
}

/* The pre-activations z[row][N] of this thread's 4x4 blocks of a delta layer (as
 * mlt_delta_out takes them; 0 outside), loaded before the layer's products so that their
 * loads are in flight while those run. */
__device__ static void mlt_z_fetch(const float *zl, int N, int R, int nr,
                                   float (&zp)[MLT_MICRO][4][4]) {
    int nn = mlt_round4(N) / 4, nm = R / 4 * nn;
#pragma unroll
    for (int q = 0; q < MLT_MICRO; q++) {
        int m = threadIdx.x + q * MLT_THREADS, tr = m / nn, tn = m % nn;
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                int r = 4 * tr + i, n = 4 * tn + j;
                zp[q][i][j] = m < nm && r < nr && n < N ? zl[(size_t)r * N + n] : 0.0f;
            }
    }
}

/* Backward epilogue of layer l: the deltas of layer l - 1, acc * act'(z_(l-1)) (z from
 * mlt_z_fetch), into dst[row][N] and, when keep, into c[n][r] (zeros for padding rows and
 * outputs). */
__device__ static void mlt_delta_out(int act, int N, const float (&zp)[MLT_MICRO][4][4], int R,
                                     int nr, const float (&acc)[MLT_MICRO][4][4], float *dst,
                                     float *c, bool keep) {
    int nn = mlt_round4(N) / 4, nm = R / 4 * nn;
#pragma unroll
    for (int q = 0; q < MLT_MICRO; q++) {
        int m = threadIdx.x + q * MLT_THREADS, tr = m / nn, tn = m % nn;
        if (m >= nm)
            continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int n = 4 * tn + j;
            float v[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                int r = 4 * tr + i;
                v[i] = 0.0f;
                if (r < nr && n < N) {
                    size_t o = (size_t)r * N + n;
                    v[i] = acc[q][i][j] * ml_act_deriv(act, zp[q][i][j]);
                    dst[o] = v[i];
                }
            }
            if (keep)
                *(float4 *)(c + n * R + 4 * tr) = make_float4(v[0], v[1], v[2], v[3]);
        }
    }
}

/* Zeroes grad (the gradient kernel, next on the stream, adds into it), then carries a row tile
 * backwards from d(mean loss)/d(out): every layer's deltas into the scratch. */
__global__ void __launch_bounds__(MLT_THREADS)
    mlt_delta_kernel(rs_gpu_mlp_dims d, mlt_plan p, const float *params, const float *y, int rows,
                     int R, const float *z, const float *out, float *delta, float *grad,
                     int64_t n_params) {
    extern __shared__ float4 mlt_sm[];
    float *a, *c, *wc = mlt_planes((float *)mlt_sm, mlt_round4(d.max_width), R, &a, &c);
    for (int64_t i = (int64_t)blockIdx.x * MLT_THREADS + threadIdx.x; i < n_params;
         i += (int64_t)gridDim.x * MLT_THREADS)
        grad[i] = 0.0f;
    int r0 = blockIdx.x * R, nr = rows - r0 < R ? rows - r0 : R, last = d.n_layers - 1;
    for (int r = threadIdx.x; r < R; r += MLT_THREADS) { /* the output layer has one output */
        float g = r < nr ? ml_loss_grad(d.loss, out[r0 + r], y[r0 + r], rows) : 0.0f;
        if (r < nr)
            delta[p.delta_off[last] + r0 + r] = g;
        a[r] = g;
    }
    float acc[MLT_MICRO][4][4];
    for (int l = last; l > 0; l--) {
        int N = d.in[l];
        float zp[MLT_MICRO][4][4];
        mlt_z_fetch(z + (size_t)(l - 1) * d.z_stride + (size_t)r0 * N, N, R, nr, zp);
        mlt_layer<false>(params + d.w_off[l], d.out[l], N, a, R, wc, acc);
        mlt_delta_out(d.act, N, zp, R, nr, acc, delta + p.delta_off[l - 1] + (size_t)r0 * N, c,
                      l > 1);
        float *t = a;
        a = c;
        c = t;
    }
}

/* ---- weight gradients: dW_l[j][i] = sum over rows of delta_l[r][j] a_(l-1)[r][i] ---- */

/* Chunk rows rc.. of the block's delta columns j0.. and input columns i0.. into registers
 * (thread t, slot q: chunk row t / 32 + 8 q, column t % 32), zero past the slice's end re and
 * the matrices' widths; inputs through the activation unless they are x. */
__device__ static inline void mlg_fetch(const float *dl, int on, int j0, const float *al, int in,
                                        int i0, int act, bool is_x, int rc, int re, float (&pd)[16],
                                        float (&pa)[16]) {
    int col = threadIdx.x % 32;
#pragma unroll
    for (int q = 0; q < 16; q++) {
        int r = rc + threadIdx.x / 32 + 8 * q;
        bool in_rows = r < re;
        pd[q] = in_rows && j0 + col < on ? dl[(size_t)r * on + j0 + col] : 0.0f;
        float v = in_rows && i0 + col < in ? al[(size_t)r * in + i0 + col] : 0.0f;
        pa[q] = is_x ? v : ml_act(act, v);
    }
}

/* Sums over the 4 groups the block's partial tile (red[g][j][i]) and bias sums (redb[g][j]) and
 * adds them into the gradients. */
__device__ static void mlg_add(const float *red, const float *redb, int on, int j0, int in, int i0,
                               bool bias, float *gw, float *gb) {
    for (int e = threadIdx.x; e < MLG_TILE * MLG_TILE; e += MLG_THREADS) {
        int jj = e / MLG_TILE, ii = e % MLG_TILE;
        float s = 0.0f;
        for (int g = 0; g < MLG_GROUPS; g++)
            s += red[g * MLG_TILE * MLG_TILE + e];
        if (j0 + jj < on && i0 + ii < in)
            atomicAdd(&gw[(size_t)(j0 + jj) * in + i0 + ii], s);
    }
    if (bias && threadIdx.x < MLG_TILE && j0 + (int)threadIdx.x < on) {
        float s = 0.0f;
        for (int g = 0; g < MLG_GROUPS; g++)
            s += redb[g * MLG_TILE + threadIdx.x];
        atomicAdd(&gb[j0 + threadIdx.x], s);
    }
}

/* A block: one layer's MLG_TILE x MLG_TILE tile of dW (and, for the tiles of inputs 0.., the
 * bias gradient, the column sums of the deltas) over one slice of rows. Each group of 64
 * threads takes a quarter of every staged chunk, a thread a 4x4 block of the tile. */
__global__ void __launch_bounds__(MLG_THREADS)
    mlt_grad_kernel(rs_gpu_mlp_dims d, mlt_plan p, const float *x, const float *z,
                    const float *delta, int rows, float *grad) {
    __shared__ float4 sm4[2 * MLG_CHUNK * MLG_TILE / 4];
    float *ds = (float *)sm4, *as = ds + MLG_CHUNK * MLG_TILE;
    int l = 0;
    while ((int)blockIdx.x >= p.first[l + 1])
        l++;
    int local = blockIdx.x - p.first[l], tiles = (p.first[l + 1] - p.first[l]) / p.slices;
    int s = local / tiles, tile = local - s * tiles;
    int tj = tile / p.tiles_i[l], ti = tile - tj * p.tiles_i[l];
    int on = d.out[l], in = d.in[l], j0 = tj * MLG_TILE, i0 = ti * MLG_TILE;
    const float *dl = delta + p.delta_off[l];
    const float *al = l == 0 ? x : z + (size_t)(l - 1) * d.z_stride;
    int t = threadIdx.x, g = t / 64, ty = t % 64 / 8, tx = t % 8;
    int rs = s * p.slice_rows, re = rs + p.slice_rows < rows ? rs + p.slice_rows : rows;
    bool bias = ti == 0;
    float acc[4][4] = {}, bsum[4] = {}, pd[16], pa[16];
    mlg_fetch(dl, on, j0, al, in, i0, d.act, l == 0, rs, re, pd, pa);
    for (int rc = rs; rc < re; rc += MLG_CHUNK) {
        __syncthreads(); /* the last chunk read */
#pragma unroll
        for (int q = 0; q < 16; q++) {
            int e = (t / 32 + 8 * q) * MLG_TILE + t % 32;
            ds[e] = pd[q];
            as[e] = pa[q];
        }
        __syncthreads();
        if (rc + MLG_CHUNK < re)
            mlg_fetch(dl, on, j0, al, in, i0, d.act, l == 0, rc + MLG_CHUNK, re, pd, pa);
        const float *dg = ds + g * (MLG_CHUNK / MLG_GROUPS) * MLG_TILE + 4 * ty;
        const float *ag = as + g * (MLG_CHUNK / MLG_GROUPS) * MLG_TILE + 4 * tx;
#pragma unroll 8
        for (int kk = 0; kk < MLG_CHUNK / MLG_GROUPS; kk++) {
            float4 dv = *(const float4 *)(dg + kk * MLG_TILE);
            mlt_outer(dv, *(const float4 *)(ag + kk * MLG_TILE), acc);
            if (bias && tx == 0) {
                bsum[0] += dv.x;
                bsum[1] += dv.y;
                bsum[2] += dv.z;
                bsum[3] += dv.w;
            }
        }
    }
    __syncthreads(); /* the staging planes become the reduction's */
    float *red = ds, *redb = as;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float *row = red + g * MLG_TILE * MLG_TILE + (4 * ty + i) * MLG_TILE + 4 * tx;
        *(float4 *)row = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        if (tx == 0)
            redb[g * MLG_TILE + 4 * ty + i] = bsum[i];
    }
    __syncthreads();
    mlg_add(red, redb, on, j0, in, i0, bias, grad + d.w_off[l], grad + d.b_off[l]);
}

/* ---- host side ---- */

/* Rows of a row tile: enough tiles for the device, a multiple of 4 (a thread's block is 4 rows
 * high), at most what fits ML_SMEM_MAX and what MLT_MICRO blocks a thread cover at the widest
 * layer; *smem: its bytes. */
static int mlt_tile_rows(const rs_gpu_mlp_dims *d, int rows, size_t *smem) {
    int w4 = (d->max_width + 3) & ~3, wc = MLT_KC * (w4 + 4);
    int fit = (ML_SMEM_MAX / (int)sizeof(float) - wc) / (2 * w4);
    int cover = 16 * MLT_MICRO * MLT_THREADS / w4;
    int most = fit < cover ? fit : cover;
    most = (most < MLT_ROWS_MAX ? most : MLT_ROWS_MAX) & ~3;
    int r = ((rows + MLT_BLOCKS_GOAL - 1) / MLT_BLOCKS_GOAL + 3) & ~3;
    r = r > most ? most : r;
    r = r < 4 ? 4 : r;
    *smem = (size_t)(wc + 2 * w4 * r) * sizeof(float);
    return r;
}

/* The backward pass's layout for rows; returns the gradient kernel's blocks. Slices hold whole
 * chunks; as many as give about MLG_BLOCKS_GOAL blocks (fewer adds to grad when tiles alone
 * fill the device). */
static int mlt_grad_plan(const rs_gpu_mlp_dims *d, int rows, mlt_plan *p) {
    int tiles[RS_GPU_MLP_MAX_LAYERS], total = 0;
    int64_t off = 0;
    for (int l = 0; l < d->n_layers; l++) {
        p->delta_off[l] = off;
        off += (int64_t)rows * d->out[l];
        p->tiles_i[l] = (d->in[l] + MLG_TILE - 1) / MLG_TILE;
        tiles[l] = (d->out[l] + MLG_TILE - 1) / MLG_TILE * p->tiles_i[l];
        total += tiles[l];
    }
    int chunks = (rows + MLG_CHUNK - 1) / MLG_CHUNK;
    int slices = (MLG_BLOCKS_GOAL + total - 1) / total;
    slices = slices > chunks ? chunks : slices;
    p->slice_rows = (chunks + slices - 1) / slices * MLG_CHUNK;
    p->slices = (rows + p->slice_rows - 1) / p->slice_rows;
    p->first[0] = 0;
    for (int l = 0; l < d->n_layers; l++)
        p->first[l + 1] = p->first[l] + tiles[l] * p->slices;
    return p->first[d->n_layers];
}

bool mlt_wanted(const rs_gpu_mlp_dims *d, int rows) {
    int64_t macs = 0;
    for (int l = 0; l < d->n_layers; l++)
        macs += (int64_t)d->in[l] * d->out[l];
    return (int64_t)rows * macs >= MLT_MIN_MACS;
}

size_t mlt_scratch_floats(const rs_gpu_mlp_dims *d, size_t rows) {
    size_t widths = 0;
    for (int l = 0; l < d->n_layers; l++)
        widths += (size_t)d->out[l];
    return rows * widths;
}

int mlt_forward(const rs_gpu_mlp_dims *d, const float *params, const float *x, int rows, float *z,
                float *out, hipStream_t stream) {
    size_t smem = 0;
    int tile = mlt_tile_rows(d, rows, &smem);
    RS_LAUNCH(mlt_forward_kernel, (rows + tile - 1) / tile, MLT_THREADS, smem, stream, *d, params,
              x, rows, tile, z, out);
    return (int)hipGetLastError();
}

int mlt_backward(const rs_gpu_mlp_dims *d, const float *params, const float *x, const float *y,
                 int rows, const float *z, const float *out, float *scratch, float *grad,
                 hipStream_t stream) {
    size_t smem = 0;
    int tile = mlt_tile_rows(d, rows, &smem);
    mlt_plan p;
    int blocks = mlt_grad_plan(d, rows, &p);
    RS_LAUNCH(mlt_delta_kernel, (rows + tile - 1) / tile, MLT_THREADS, smem, stream, *d, p, params,
              y, rows, tile, z, out, scratch, grad, ml_param_count(d));
    int e = (int)hipGetLastError();
    if (e != 0)
        return e;
    RS_LAUNCH(mlt_grad_kernel, blocks, MLG_THREADS, 0, stream, *d, p, x, z, scratch, rows, grad);
    return (int)hipGetLastError();
}
