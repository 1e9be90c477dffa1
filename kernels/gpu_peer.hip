// The all-reduce over peer memory: one kernel on every rank's stream, no library. Each block
// takes a slice of the buffer: it copies the slice into its rank's staging half of this round,
// tells every rank so (a flag written into each rank's memory), waits for every rank's flag
// for the slice, then sums the slice from every rank's staging in rank order, so every rank
// computes the same bits. Two staging halves alternate between rounds: a rank writes a half
// again only after every rank has flagged the round between, which each did after reading it.
#include "gpu_runtime.h"
#include "rs_gpu.h"

#define PEER_THREADS 256
#define PEER_PER_BLOCK                                                                             \
    256 /* elements a block takes before the grid grows: one a thread, so                          \
           each thread's loads from the peers are one round trip */
#define PEER_ALIGN                                                                                 \
    64                        /* slices start on multiples of this many elements: no cache line is \
                                  shared by two slices, so no block reads a line another block     \
                                  cached before its peers had written it */
#define PEER_ABORT_EVERY 255u /* spins between looks at the abort word (host memory) */

template <typename T>
__global__ void __launch_bounds__(PEER_THREADS)
    peer_reduce_kernel(struct rs_gpu_peer_reduce a, size_t per_block) {
    __shared__ int stop;
    const unsigned n = a.n_ranks, b = blockIdx.x, t = threadIdx.x;
    const size_t lo = (size_t)b * per_block;
    const size_t hi = lo + per_block < a.count ? lo + per_block : a.count;
    const size_t half = (a.seq & 1u) ? a.half_bytes : 0;
    T *buf = (T *)a.buf;
    T *mine = (T *)((char *)a.stage[a.rank] + half);
    for (size_t i = lo + t; i < hi; i += PEER_THREADS)
        mine[i] = buf[i];
    if (t == 0)
        stop = 0;
    __syncthreads();
    if (t < n) { /* thread t tells rank t, then waits for rank t */
        rs_flag_set_sys(a.flags[t] + b * RS_GPU_PEER_MAX_RANKS + a.rank, a.seq);
        const uint32_t *from = a.flags[a.rank] + b * RS_GPU_PEER_MAX_RANKS + t;
        for (uint32_t spins = 1; (int32_t)(rs_flag_get_sys(from) - a.seq) < 0; spins++)
            if ((spins & PEER_ABORT_EVERY) == 0 && *a.abort != 0) {
                stop = 1;
                break;
            }
    }
    __syncthreads();
    if (stop)
        return;
    const T *src[RS_GPU_PEER_MAX_RANKS];
#pragma unroll
    for (unsigned r = 0; r < RS_GPU_PEER_MAX_RANKS; r++)
        src[r] = (const T *)((const char *)a.stage[r < n ? r : 0] + half);
    for (size_t i = lo + t; i < hi; i += PEER_THREADS) {
        T v[RS_GPU_PEER_MAX_RANKS];
#pragma unroll
        for (unsigned r = 0; r < RS_GPU_PEER_MAX_RANKS; r++)
            if (r < n)
                v[r] = src[r][i];
        T s = 0;
#pragma unroll
        for (unsigned r = 0; r < RS_GPU_PEER_MAX_RANKS; r++)
            if (r < n)
                s += v[r];
        buf[i] = a.mean ? s / (T)n : s;
    }
}

extern "C" int rs_gpu_peer_supported(void) {
#if defined(RS_GPU_NVIDIA)
    return 1;
#else
    return 0; /* coarse-grained device memory is coherent between devices only at kernel ends */
#endif
}

extern "C" int rs_gpu_peer_enable(int peer) {
    hipError_t e = hipDeviceEnablePeerAccess(peer, 0);
    if (e == hipErrorPeerAccessAlreadyEnabled)
        e = hipSuccess;
    (void)hipGetLastError(); /* neither answer is sticky */
    return (int)e;
}

extern "C" int rs_gpu_peer_allreduce(const struct rs_gpu_peer_reduce *a, void *stream) {
    if (a->count == 0 || a->n_ranks == 0 || a->n_ranks > RS_GPU_PEER_MAX_RANKS)
        return (int)hipErrorInvalidValue;
    size_t blocks = (a->count + PEER_PER_BLOCK - 1) / PEER_PER_BLOCK;
    blocks = blocks < 1 ? 1 : blocks > RS_GPU_PEER_MAX_BLOCKS ? RS_GPU_PEER_MAX_BLOCKS : blocks;
    size_t per = (a->count + blocks - 1) / blocks;
    per = (per + PEER_ALIGN - 1) / PEER_ALIGN * PEER_ALIGN;
    blocks = (a->count + per - 1) / per;
    if (a->f64)
        RS_LAUNCH(peer_reduce_kernel<double>, (unsigned)blocks, PEER_THREADS, 0,
                  (hipStream_t)stream, *a, per);
    else
        RS_LAUNCH(peer_reduce_kernel<float>, (unsigned)blocks, PEER_THREADS, 0, (hipStream_t)stream,
                  *a, per);
    return (int)hipGetLastError();
}
