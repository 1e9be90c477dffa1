// Volume profiles on the device, exactly as backend/vpoc/vpoc.c: the same levels, the same
// fixed-point shares (so integer sums are exact in any order), POC ties to the lowest level and
// the same value-area walk.
#include "gpu_runtime.h"
#include "rs_gpu.h"

#include <stddef.h>

#define VP_THREADS 256
/* Packed passes: one block a session, few threads and registers, so that every session of a
 * large set is resident at once: one block's loads and atomics overlap another's reductions.
 * Each thread loads its words in batches of VQ_REG, the next batch in flight while the current
 * one is added. The kernel is bound by the instructions its warps issue, one after another,
 * and for a close profile the finish (the reductions, scans and merge of vq_finish) is most of
 * them, so the block is as small as the widest session allows: on NVIDIA one warp (32 blocks
 * a multiprocessor) while every session spans at most VQ_NARROW_LEVELS levels, needing no
 * barrier between warps; otherwise two warps, whose lanes each take half as many levels. A
 * range profile's adds are most of its work: two warps. Measured on an H100, 2520 sessions x
 * 1380 bars, close profile, by the widest session's levels, one warp / two warps: 304 levels,
 * 11.9 / 15.5 us; 487, 13.5 / 16.7; 669, 18.1 / 18.6; 912, 23.0 / 21.5; 1823, 40.6 / 32.3.
 * Range profile (5 levels a bar): 288 levels, 88.5 / 33.9 us. On AMD a block is 64 threads
 * either way: one wavefront on CDNA. On an H200 (281 levels) the profiler put half of the
 * one-warp kernel's time in the adds, most of it waiting on the words' loads, a third in the
 * finish and the rest in the session's first loads: a whole session's words now come in 16
 * bytes a load, three batches in flight, and on NVIDIA the finish of a one-warp block takes
 * the hardware's warp reductions (12.9 to 12.4 us). Launched early beside the pass before
 * (vq_pass_kernel), a pass there takes 7.2 us back to back, and the loop's path (three launches
 * of 500 bars, handing profiles on through acc) 13.1 us (medians of 5 runs). */
#define VQ_THREADS_WIDE 64
#if defined(RS_GPU_NVIDIA)
#define VQ_THREADS_NARROW 32
#else
#define VQ_THREADS_NARROW 64
#endif
/* Words a session's launch must hold for its 16-byte, three-batch form (vq_pass_kernel): a
 * whole session takes it; a chunk of a few hundred bars, which that form only slows, the
 * plain one. */
#ifndef VQ_DEEP_WORDS
#define VQ_DEEP_WORDS 1024
#endif
#define VQ_NARROW_LEVELS 768 /* where the two measured lines cross */
#ifndef VQ_REG
#define VQ_REG 4
#endif
/* Blocks a multiprocessor should hold at once (bounds registers), by block size. */
#ifndef VQ_MINB_NARROW
#define VQ_MINB_NARROW 32
#endif
#define VQ_MINB(t)   ((t) == 32 ? VQ_MINB_NARROW : 24)
#define VP_LDS       RS_GPU_VPOC_LDS_LEVELS
#define VQ_WARPS_MAX (VQ_THREADS_WIDE / 32 + 1) /* warps a block has, on any device */

typedef unsigned long long vp_u64;

__device__ static inline int64_t vp_level(double price, double tick) {
    return (int64_t)llround(price / tick);
}

__device__ static inline int64_t vp_share(double volume, int64_t n_levels) {
    /* x / 1.0 == x exactly: a one-level bar (every close-profile bar) needs no division. */
    double f = volume * 65536.0;
    return (int64_t)llround(n_levels == 1 ? f : f / (double)n_levels);
}

/* vq_finish writes a result as five int64 words in this order. */
static_assert(sizeof(rs_gpu_vpoc_result) == 5 * sizeof(int64_t) &&
                  offsetof(rs_gpu_vpoc_result, poc_level) == 0 &&
                  offsetof(rs_gpu_vpoc_result, vah_level) == 8 &&
                  offsetof(rs_gpu_vpoc_result, val_level) == 16 &&
                  offsetof(rs_gpu_vpoc_result, total_fix) == 24 &&
                  offsetof(rs_gpu_vpoc_result, status) == 32,
              "rs_gpu_vpoc_result layout");

struct vp_span {
    int64_t lo, hi, share;
};

__device__ static inline vp_span vp_bar(const rs_gpu_bar *b, int profile, double tick) {
    vp_span s;
    const double2 *v = (const double2 *)b; /* bars are 32-byte aligned: two 16-byte loads */
    double2 cv = v[1];                     /* close, volume */
    if (profile == 0) {
        s.lo = s.hi = vp_level(cv.x, tick);
    } else {
        double2 hl = v[0]; /* high, low */
        int64_t a = vp_level(hl.y, tick), z = vp_level(hl.x, tick);
        s.lo = a < z ? a : z;
        s.hi = a < z ? z : a;
    }
    s.share = vp_share(cv.y, s.hi - s.lo + 1);
    return s;
}

/* 64-bit add to on-chip memory as 32-bit atomics (fast everywhere): the low word, then the
 * high word plus the carry out of the low one. Exact: a sum mod 2^64 splits this way. */
__device__ static inline void vp_lds_add(int64_t *p, int64_t v) {
    unsigned int *w = (unsigned int *)p, lo = (unsigned int)v;
    unsigned int hi = (unsigned int)((unsigned long long)v >> 32);
    unsigned int old = atomicAdd(&w[0], lo);
    hi += old + lo < old; /* carry */
    if (hi != 0)
        atomicAdd(&w[1], hi);
}

/* Add a bar's share to the levels of [base, base + n) it covers (atomics: any order is exact),
 * in on-chip memory (lds) or device memory. */
__device__ static inline void vp_add(int64_t *hist, int64_t base, int64_t n, const vp_span &s,
                                     bool lds) {
    int64_t a = s.lo < base ? base : s.lo, z = s.hi < base + n - 1 ? s.hi : base + n - 1;
    for (int64_t l = a; l <= z; l++) {
        if (lds)
            vp_lds_add(&hist[l - base], s.share);
        else
            atomicAdd((vp_u64 *)&hist[l - base], (vp_u64)s.share);
    }
}

/* ---- block reductions (blockDim.x == VP_THREADS) ---- */

struct vp_red {
    int64_t v[VP_THREADS / 32];
    int64_t i[VP_THREADS / 32];
};

__device__ static inline int64_t vp_warp_sum(int64_t x) {
    for (int o = RS_WARP_SIZE / 2; o > 0; o /= 2)
        x += RS_SHFL_DOWN(x, o);
    return x;
}

/* The block's sum of x, returned to every thread. Uses red; ends synchronised. */
__device__ static int64_t vp_block_sum(int64_t x, vp_red *red) {
    int lane = threadIdx.x % RS_WARP_SIZE, w = threadIdx.x / RS_WARP_SIZE,
        nw = blockDim.x / RS_WARP_SIZE;
    x = vp_warp_sum(x);
    if (lane == 0)
        red->v[w] = x;
    __syncthreads();
    int64_t t = 0;
    for (int k = 0; k < nw; k++)
        t += red->v[k];
    __syncthreads();
    return t;
}

/* The block's (largest value, lowest index among equals), returned to every thread; T: the
 * block's threads. A block of one warp needs no barrier: the butterfly leaves the result in
 * every lane. */
template <int T> __device__ static void vp_block_argmax(int64_t *v, int64_t *idx, vp_red *red) {
    const int lane = threadIdx.x % RS_WARP_SIZE, w = threadIdx.x / RS_WARP_SIZE;
    const int nw = T / RS_WARP_SIZE > 0 ? T / RS_WARP_SIZE : 1;
    for (int o = RS_WARP_SIZE / 2; o > 0; o /= 2) {
        int64_t ov = RS_SHFL_XOR(*v, o), oi = RS_SHFL_XOR(*idx, o);
        if (ov > *v || (ov == *v && oi < *idx)) {
            *v = ov;
            *idx = oi;
        }
    }
    if (nw == 1)
        return;
    if (lane == 0) {
        red->v[w] = *v;
        red->i[w] = *idx;
    }
    __syncthreads();
    *v = red->v[0];
    *idx = red->i[0];
    for (int k = 1; k < nw; k++)
        if (red->v[k] > *v || (red->v[k] == *v && red->i[k] < *idx)) {
            *v = red->v[k];
            *idx = red->i[k];
        }
    __syncthreads();
}

/* POC, value area and total of hist[0, n) (shared or global memory), by the whole block; the
 * walk itself is sequential and runs on thread 0, which alone writes *out. */
__device__ static void vp_finish(const int64_t *hist, int64_t n, int64_t base, double value_area,
                                 vp_red *red, rs_gpu_vpoc_result *out) {
    int64_t sum = 0, best = INT64_MIN, best_i = INT64_MAX;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        int64_t h = hist[i];
        sum += h;
        if (h > best) { /* strict, over ascending i: ties stay at the lowest index */
            best = h;
            best_i = i;
        }
    }
    int64_t total = vp_block_sum(sum, red);
    vp_block_argmax<VP_THREADS>(&best, &best_i, red);
    if (threadIdx.x != 0)
        return;
    int64_t lo = best_i, hi = best_i, acc = hist[best_i];
    int64_t up = hi + 1 < n ? hist[hi + 1] : -1, dn = lo > 0 ? hist[lo - 1] : -1;
    double goal = value_area * (double)total;
    while ((double)acc < goal && (up >= 0 || dn >= 0)) {
        if (up >= dn) { /* ties go up, as the reference */
            hi++;
            acc += up;
            up = hi + 1 < n ? hist[hi + 1] : -1;
        } else {
            lo--;
            acc += dn;
            dn = lo > 0 ? hist[lo - 1] : -1;
        }
    }
    out->poc_level = base + best_i;
    out->vah_level = base + hi;
    out->val_level = base + lo;
    out->total_fix = total;
    out->status = 0;
}

/* ---- chunks into a global profile ---- */

/* Each block adds its bars into an on-chip copy of the profile (when it fits) and then adds the
 * non-zero levels to the global one, so the global atomics are per level, not per bar. */
__global__ void __launch_bounds__(VP_THREADS)
    vp_accumulate_kernel(const rs_gpu_bar *bars, size_t n, int profile, double tick, int64_t base,
                         int64_t *hist, int64_t n_levels) {
    __shared__ int64_t lds[VP_LDS];
    bool on_chip = n_levels <= VP_LDS;
    if (on_chip) {
        for (int64_t i = threadIdx.x; i < n_levels; i += blockDim.x)
            lds[i] = 0;
        __syncthreads();
    }
    int64_t *dst = on_chip ? lds : hist;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        vp_add(dst, base, n_levels, vp_bar(&bars[i], profile, tick), on_chip);
    if (!on_chip)
        return;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < n_levels; i += blockDim.x)
        if (lds[i] != 0)
            atomicAdd((vp_u64 *)&hist[i], (vp_u64)lds[i]);
}

__global__ void __launch_bounds__(VP_THREADS)
    vp_finalize_kernel(const int64_t *hist, int64_t n, int64_t base, double value_area,
                       rs_gpu_vpoc_result *out) {
    __shared__ vp_red red;
    vp_finish(hist, n, base, value_area, &red, out);
}

/* ---- packed passes: every session at once, one block a session, the profile on chip ---- */

/* A packed word's fields (backend/vpoc/vpoc_pack.h). */
__device__ static inline void vq_unword(vp_u64 w, int *lo, int *hi, int64_t *share) {
    *lo = (int)(w & 0xfffu);
    *hi = *lo + (int)(w >> 12 & 0xfffu);
    *share = (int64_t)(w >> 24);
}

/* ---- the value area in parallel ----
 * The reference's walk takes, one level at a time, the larger of the next level up and the next
 * level down (ties go up) until the area holds value_area of the total. That greedy merge of
 * the two sequences (up: the levels above the POC, nearest first; down: those below) takes
 * them in the order of their running minima, descending, ties to the up side: a level's place
 * in the walk is its index in its own sequence plus how many of the other sequence's running
 * minima come before it (running minima never rise, so it is a merge of two sorted
 * sequences), and the volume taken up to it is a running sum of each sequence. So each thread
 * walks one run of the merged walk (vq_finish) and the block takes the earliest level that
 * completes the area. */

struct vq_scan_tmp {
    int64_t s[2][VQ_WARPS_MAX], m[2][VQ_WARPS_MAX]; /* per warp totals: [0] up, [1] down */
};

/* Both sequences in place: prof becomes running sums, key running minima (up: levels p + 1 +
 * i, i < nu; down: p - 1 - j, j < nd). Each thread takes a run of each sequence; the runs'
 * totals are scanned across the warp by shuffles and across warps through t. Ends
 * synchronised. */
template <int T>
__device__ static void vq_scan(int64_t *prof, int64_t *key, int p, int nu, int nd, vq_scan_tmp *t) {
    int len[2] = {nu, nd}, dir[2] = {1, -1}, tid = threadIdx.x;
    const int lane = tid % RS_WARP_SIZE, wid = tid / RS_WARP_SIZE;
    const int nw = T / RS_WARP_SIZE > 0 ? T / RS_WARP_SIZE : 1;
    int i0[2], i1[2];
    int64_t s[2], m[2];
    for (int q = 0; q < 2; q++) {
        int per = (len[q] + T - 1) / T;
        i0[q] = tid * per;
        i1[q] = min(len[q], i0[q] + per);
        s[q] = 0;
        m[q] = INT64_MAX;
        for (int i = i0[q]; i < i1[q]; i++) {
            int64_t x = prof[p + dir[q] * (i + 1)];
            s[q] += x;
            m[q] = min(m[q], x);
        }
        for (int o = 1; o < RS_WARP_SIZE; o *= 2) { /* inclusive, within the warp */
            int64_t ps = RS_SHFL_UP(s[q], o), pm = RS_SHFL_UP(m[q], o);
            if (lane >= o) {
                s[q] += ps;
                m[q] = min(m[q], pm);
            }
        }
        if (lane == RS_WARP_SIZE - 1) {
            t->s[q][wid] = s[q];
            t->m[q][wid] = m[q];
        }
    }
    __syncthreads();
    for (int q = 0; q < 2; q++) {
        int64_t es = RS_SHFL_UP(s[q], 1), em = RS_SHFL_UP(m[q], 1); /* exclusive in the warp */
        if (lane == 0) {
            es = 0;
            em = INT64_MAX;
        }
        for (int k = 0; k < wid && k < nw; k++) { /* the warps before this one */
            es += t->s[q][k];
            em = min(em, t->m[q][k]);
        }
        for (int i = i0[q]; i < i1[q]; i++) {
            int k = p + dir[q] * (i + 1);
            int64_t x = prof[k];
            es += x;
            em = min(em, x);
            prof[k] = es;
            key[k] = em;
        }
    }
    __syncthreads();
}

/* The warp reductions of NVIDIA's sm_80 and later (one instruction each, 32-bit) serve a block
 * of one warp. */
#ifndef VQ_REDUX
#if defined(RS_GPU_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
#define VQ_REDUX 1
#else
#define VQ_REDUX 0
#endif
#endif

#if VQ_REDUX
/* A warp's total of sum (exact mod 2^64: three 22-bit slices, each summed in 32 bits) and its
 * largest best, the lowest bi among equals, to every lane. */
__device__ static inline void vq_warp_total_poc(int64_t sum, int64_t best, int64_t bi,
                                                int64_t *total, int *poc) {
    vp_u64 u = (vp_u64)sum;
    vp_u64 s0 = __reduce_add_sync(~0u, (unsigned)(u & 0x3fffffu));
    vp_u64 s1 = __reduce_add_sync(~0u, (unsigned)(u >> 22 & 0x3fffffu));
    vp_u64 s2 = __reduce_add_sync(~0u, (unsigned)(u >> 44));
    *total = (int64_t)(s0 + (s1 << 22) + (s2 << 44));
    vp_u64 k = (vp_u64)best ^ 0x8000000000000000ull; /* signed order as unsigned */
    unsigned khi = (unsigned)(k >> 32), klo = (unsigned)k;
    unsigned mhi = __reduce_max_sync(~0u, khi);
    unsigned mlo = __reduce_max_sync(~0u, khi == mhi ? klo : 0u);
    bool top = khi == mhi && klo == mlo;
    *poc = (int)__reduce_min_sync(~0u, top ? (unsigned)bi : 0xffffffffu);
}
#endif

/* The block's total, and its largest level (the lowest among equals), with one reduction:
 * *total and *poc to every thread. Uses red; ends synchronised (a block of one warp needs no
 * barrier and makes none). */
template <int T>
__device__ static void vq_block_total_poc(const int64_t *prof, int n, vp_red *red, int64_t *total,
                                          int *poc) {
    int64_t sum = 0, best = INT64_MIN, bi = INT64_MAX;
    for (int i = threadIdx.x; i < n; i += T) {
        int64_t h = prof[i];
        sum += h;
        if (h > best) { /* strict, over ascending i: ties stay at the lowest level */
            best = h;
            bi = i;
        }
    }
#if VQ_REDUX
    if (T == 32) { /* one warp: the hardware's 32-bit warp reductions, every lane gets them */
        vq_warp_total_poc(sum, best, bi, total, poc);
        return;
    }
#endif
    const int lane = threadIdx.x % RS_WARP_SIZE, w = threadIdx.x / RS_WARP_SIZE;
    const int nw = T / RS_WARP_SIZE > 0 ? T / RS_WARP_SIZE : 1;
    for (int o = RS_WARP_SIZE / 2; o > 0; o /= 2) { /* a butterfly: every lane has the warp's */
        int64_t os = RS_SHFL_XOR(sum, o), ov = RS_SHFL_XOR(best, o), oi = RS_SHFL_XOR(bi, o);
        sum += os;
        if (ov > best || (ov == best && oi < bi)) {
            best = ov;
            bi = oi;
        }
    }
    if (nw == 1) { /* a block of one warp: no barrier */
        *total = sum;
        *poc = (int)bi;
        return;
    }
    __shared__ int64_t sums[VQ_WARPS_MAX];
    if (lane == 0) {
        sums[w] = sum;
        red->v[w] = best;
        red->i[w] = bi;
    }
    __syncthreads();
    *total = 0;
    best = INT64_MIN;
    bi = INT64_MAX;
    for (int k = 0; k < nw; k++) {
        *total += sums[k];
        if (red->v[k] > best || (red->v[k] == best && red->i[k] < bi)) {
            best = red->v[k];
            bi = red->i[k];
        }
    }
    *poc = (int)bi;
    __syncthreads();
}

/* POC, value area and total of the on-chip profile prof[0, n) (key: n more levels of
 * scratch), by the whole block; threads 0 to 4 write *out (after RS_GRID_WAIT when wait_grid).
 * prof is overwritten. After the scans,
 * the walk is cut into one run of places a thread: each finds where its run starts (a merge
 * path: how many of the first d places are up levels, by binary search on the running minima)
 * and walks its run, and the earliest run that completes the area gives the result. */
template <int T>
__device__ static void vq_finish(int64_t *prof, int64_t *key, int n, int64_t base,
                                 double value_area, vp_red *red, vq_scan_tmp *t,
                                 rs_gpu_vpoc_result *out, bool wait_grid) {
    int64_t total;
    int p;
    vq_block_total_poc<T>(prof, n, red, &total, &p);
    int nu = n - 1 - p, nd = p;
    int64_t pv = prof[p];
    double goal = value_area * (double)total;
    vq_scan<T>(prof, key, p, nu, nd, t);
    /* Up level i: running sum prof[p + 1 + i], running minimum key[p + 1 + i]; down level j:
     * prof[p - 1 - j], key[p - 1 - j]. An up level comes before a down one when its running
     * minimum is at least the other's. */
    int m = nu + nd, per = (m + T - 1) / T;
    int d = (int)threadIdx.x * per, e = min(m, d + per);
    int64_t at = INT64_MIN, code = 0; /* -(place in the walk) of the level completing the area */
    bool open = (double)pv < goal;
    /* Below 2^53 every sum converts to double exactly, so "(double)sum >= goal" is "sum >=
     * ceil(goal)": an integer compare in the walk. */
    bool exact = total < ((int64_t)1 << 53);
    int64_t need = exact ? (int64_t)ceil(goal) - pv : 0;
    if (open && d < e) {
        int lo = max(0, d - nd), hi = min(d, nu);
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (key[p + 1 + mid] >= key[p - 1 - (d - 1 - mid)])
                lo = mid + 1;
            else
                hi = mid;
        }
        int a = lo, b = d - a; /* up and down levels taken before this run */
        for (int k = d; k < e; k++) {
            if (a < nu && (b >= nd || key[p + 1 + a] >= key[p - 1 - b]))
                a++;
            else
                b++;
            int64_t taken = (a ? prof[p + a] : 0) + (b ? prof[p - b] : 0);
            if (exact ? taken >= need : (double)(pv + taken) >= goal) {
                at = -(int64_t)k;
                code = (int64_t)a << 32 | b;
                break;
            }
        }
    }
#if VQ_REDUX
    if (T == 32) { /* runs are in lane order: the first lane that completes the area */
        unsigned hit = __ballot_sync(~0u, at != INT64_MIN);
        if (hit) {
            code = __shfl_sync(~0u, code, __ffs(hit) - 1);
            at = 0;
        }
    } else
#endif
        vp_block_argmax<T>(&at, &code, red);
    int64_t up = 0, dn = 0; /* levels taken above and below the POC */
    if (open && at == INT64_MIN) {
        up = nu;
        dn = nd;
    } else if (open) {
        up = code >> 32;
        dn = code & 0xffffffff;
    }
    /* The five fields by five lanes in one store: out is often mapped host memory, where one
     * write of 40 bytes costs what one of 8 does. */
    int f = (int)threadIdx.x;
    int64_t v = f == 0   ? base + p
                : f == 1 ? base + p + up
                : f == 2 ? base + p - dn
                : f == 3 ? total
                         : 0;
    if (wait_grid)
        RS_GRID_WAIT(); /* the launch before this one has written its results */
    if (f < 5)
        ((int64_t *)out)[f] = v;
}

/* Add a batch of words (0: none) into the on-chip profile: the low words of every bar's first
 * level first, so that those atomics are in flight together; then their carries into the high
 * words, and the levels after the first. For a close profile (RANGE false) the rest waits on
 * one vote of the warp and is skipped when no lane needs it, so a batch is its four atomics
 * (a padding word adds 0: to level 0 in the plain form, to a level of the lane's own in the
 * 16-byte form, so that a short batch's lanes do not all meet on one address): with shares of
 * volume x 65536 a level's low word overflows once in some 65,000 contracts, and every bar of
 * a close profile is one level (vpoc_pack_session), so only the carry is voted on. A range
 * profile's bars have
 * levels after the first, and the words are taken one after another, their atomics in flight
 * while the next word's begin (measured on an H100: half the time of the voted form there,
 * which takes 0.82 of this one's for a close profile). */
template <bool RANGE>
__device__ static inline void vq_add_batch(int64_t *prof, const vp_u64 (&w)[VQ_REG]) {
    unsigned int old[VQ_REG];
#pragma unroll
    for (int j = 0; j < VQ_REG; j++)
        old[j] = RANGE && (w[j] >> 24) == 0
                     ? 0u
                     : atomicAdd((unsigned int *)&prof[w[j] & 0xfffu], (unsigned int)(w[j] >> 24));
    if (!RANGE) { /* a close profile's bars are one level each (vpoc_pack_session) */
        bool more = false;
#pragma unroll
        for (int j = 0; j < VQ_REG; j++) {
            unsigned int sl = (unsigned int)(w[j] >> 24);
            more |= (w[j] >> 56) != 0 || old[j] + sl < old[j];
        }
        if (RS_BALLOT(more)) {
#pragma unroll
            for (int j = 0; j < VQ_REG; j++) {
                unsigned int sl = (unsigned int)(w[j] >> 24);
                unsigned int sh = (unsigned int)(w[j] >> 56) + (old[j] + sl < old[j]);
                if (sh != 0)
                    atomicAdd((unsigned int *)&prof[w[j] & 0xfffu] + 1, sh);
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < VQ_REG; j++) {
            int lo, hi;
            int64_t share;
            vq_unword(w[j], &lo, &hi, &share);
            if (share == 0)
                continue;
            unsigned int sl = (unsigned int)share;
            unsigned int sh = (unsigned int)((vp_u64)share >> 32) + (old[j] + sl < old[j]);
            if (sh != 0)
                atomicAdd((unsigned int *)&prof[lo] + 1, sh);
            for (int l = lo + 1; l <= hi; l++)
                vp_lds_add(&prof[l], share);
        }
    }
}

/* One word's share added to every level it covers (one thread alone). */
__device__ static inline void vq_add_word(int64_t *prof, vp_u64 w) {
    int lo, hi;
    int64_t share;
    vq_unword(w, &lo, &hi, &share);
    for (int l = lo; l <= hi; l++)
        vp_lds_add(&prof[l], share);
}

/* Words [i0, i0 + VQ_REG * T) of n into w, this thread's share (0 past n). */
template <int T>
__device__ static inline void vq_load_batch(const vp_u64 *wb, int64_t i0, int64_t n,
                                            vp_u64 (&w)[VQ_REG]) {
#pragma unroll
    for (int j = 0; j < VQ_REG; j++) {
        int64_t i = i0 + threadIdx.x + (int64_t)j * T;
        w[j] = i < n ? wb[i] : 0;
    }
}

/* Pairs [i0, i0 + VQ_REG / 2 * T) of np 16-byte pairs into w, this thread's share; past np,
 * pad: a word that adds 0 to a level of the thread's own, so that no two lanes' atomics meet. */
template <int T>
__device__ static inline void vq_load_pairs(const ulonglong2 *wv, int i0, int np, vp_u64 pad,
                                            vp_u64 (&w)[VQ_REG]) {
#pragma unroll
    for (int j = 0; j < VQ_REG / 2; j++) {
        int i = i0 + (int)threadIdx.x + j * T;
        ulonglong2 v = i < np ? wv[i] : make_ulonglong2(pad, pad);
        w[2 * j] = v.x;
        w[2 * j + 1] = v.y;
    }
}

/* ---- a session's turn at acc, between the launches of passes ----
 * The launches of passes of several chunks run side by side (RS_LAUNCH_EARLY), several passes
 * deep, and a session's profile passes from each chunk's block to the next through acc.
 * turns[k] says whose turn it is at session k's acc: the launches over one acc are numbered
 * one after another (turn: 0, 1, ... across passes, wrapping at 2^32, so that no two launches
 * in flight wait for the same number), and launch t's block takes the turn when turns[k] == t
 * (the launch before it is done with acc) and gives it with t + 1. Only session k's blocks wait on
 * one another, not whole launches: a block waits on a block of an earlier launch, and a launch
 * begins only once every block of the launch before it has begun, so the block waited on is on the
 * device and moving. */

/* Give up (the launch fails) after this long: a turn that never comes is a launch missing
 * from the numbering, and a failed launch says so where a device that spins for ever would
 * not. */
#define VQ_TURN_LIMIT_NS 10000000000ull

/* Wait for turn `want` at *turn, then see what its giver wrote (the whole block: thread 0's
 * acquire, then the barrier; ends synchronised). */
__device__ static inline void vq_turn_take(const unsigned int *turn, unsigned int want) {
    if (threadIdx.x == 0 && rs_flag_get_gpu(turn) != want) {
        uint64_t t0 = rs_dev_time_ns();
        while (rs_flag_get_gpu(turn) != want) {
            RS_SLEEP_BRIEFLY();
            if (rs_dev_time_ns() - t0 > VQ_TURN_LIMIT_NS)
                RS_TRAP();
        }
    }
    __syncthreads();
}

/* Hand the turn at *turn on as `next`, once the whole block's stores are done (the barrier,
 * then thread 0's release). */
__device__ static inline void vq_turn_give(unsigned int *turn, unsigned int next) {
    __syncthreads();
    if (threadIdx.x == 0)
        rs_flag_set_gpu(turn, next);
}

/* prof[0, n) += a[0, n) by the whole block of T threads, VQ_MERGE loads a thread in flight at
 * once (a is device memory the compiler cannot tell from prof, so a plain loop would wait for
 * each load in turn). */
#define VQ_MERGE 8
template <int T> __device__ static inline void vq_merge(int64_t *prof, const int64_t *a, int n) {
    for (int l0 = (int)threadIdx.x; l0 < n; l0 += VQ_MERGE * T) {
        int64_t v[VQ_MERGE];
#pragma unroll
        for (int j = 0; j < VQ_MERGE; j++)
            v[j] = l0 + j * T < n ? a[l0 + j * T] : 0;
#pragma unroll
        for (int j = 0; j < VQ_MERGE; j++)
            if (l0 + j * T < n)
                prof[l0 + j * T] += v[j];
    }
}

/* One chunk of every session: block k adds session k's words into its on-chip profile (from
 * zero), then the chunks before (acc, but for the first chunk), then keeps it in acc, or on
 * the last chunk finishes it. Sums are exact in any order, so the words are added before acc
 * is read: every launch begins early (RS_LAUNCH_EARLY), beside the one before it, and a block
 * waits only for its own session's turn (turns) to read acc, to write it or to write its
 * results. A pass of one launch needs no turns: it waits for the launch before it (RS_GRID_WAIT)
 * only to write its results. Words come in batches of VQ_REG a thread, the next batch loading
 * while the current one is added (and the first while the profile is set up), so every block
 * keeps loads in flight: the kernel reads at the memory's pace rather than one load a thread
 * at a time. */
template <int T, bool RANGE, bool FIRST, bool LAST>
__global__ void __launch_bounds__(T, VQ_MINB(T))
    vq_pass_kernel(const vp_u64 *words, const int64_t *first, const rs_gpu_vpoc_sess *sess,
                   int64_t *acc, unsigned int *turns, unsigned int turn_no, int max_levels,
                   double value_area, rs_gpu_vpoc_result *out) {
    extern __shared__ int64_t prof[]; /* max_levels, then (last chunk) max_levels of scratch */
    __shared__ vp_red red;
    __shared__ vq_scan_tmp tmp;
    const bool one = FIRST && LAST; /* a pass of one launch */
    RS_GRID_EARLY(); /* the next launch may load beside this one: what it writes waits */
    int64_t b0 = first[blockIdx.x], n = first[blockIdx.x + 1] - b0; /* loads in parallel */
    rs_gpu_vpoc_sess s = sess[blockIdx.x];
    if (s.levels == 0) { /* not packed: profiled elsewhere; say so where the results go */
        if (LAST) {
            RS_GRID_WAIT();
            if (threadIdx.x == 0)
                out[blockIdx.x].status = RS_GPU_VPOC_SKIPPED;
        }
        return;
    }
    const vp_u64 *wb = words + b0;
    vp_u64 w[VQ_REG];
    int64_t *a = acc + s.acc_off;
    if (!RANGE && n >= VQ_DEEP_WORDS) {
        /* 16-byte loads, three batches in flight: the words from the first 16-byte boundary on
         * in pairs; the one before it and an odd one at the end are added by lanes 0 and 1. */
        int head = ((uintptr_t)wb & 8) && n > 0 ? 1 : 0, np = (int)(n - head) / 2;
        const ulonglong2 *wv = (const ulonglong2 *)(wb + head);
        const vp_u64 pad = (vp_u64)((int)threadIdx.x < s.levels ? threadIdx.x : 0);
        vp_u64 edge = 0, w1[VQ_REG], w2[VQ_REG];
        if (threadIdx.x == 0 && head)
            edge = wb[0];
        if (threadIdx.x == 1 && ((n - head) & 1))
            edge = wb[n - 1];
        const int step = VQ_REG / 2 * T;
        vq_load_pairs<T>(wv, 0, np, pad, w);
        vq_load_pairs<T>(wv, step, np, pad, w1);
        for (int l = threadIdx.x; l < s.levels; l += T)
            prof[l] = 0;
        __syncthreads();
        if (edge != 0)
            vq_add_word(prof, edge);
        for (int i0 = 0; i0 < np; i0 += 3 * step) { /* w, w1, w2 rotate by name: no moves */
            vq_load_pairs<T>(wv, i0 + 2 * step, np, pad, w2);
            vq_add_batch<RANGE>(prof, w);
            if (i0 + step >= np)
                break;
            vq_load_pairs<T>(wv, i0 + 3 * step, np, pad, w);
            vq_add_batch<RANGE>(prof, w1);
            if (i0 + 2 * step >= np)
                break;
            vq_load_pairs<T>(wv, i0 + 4 * step, np, pad, w1);
            vq_add_batch<RANGE>(prof, w2);
        }
    } else {
        const int64_t step = (int64_t)VQ_REG * T;
        vq_load_batch<T>(wb, 0, n, w);
        for (int l = threadIdx.x; l < s.levels; l += T)
            prof[l] = 0;
        __syncthreads();
        for (int64_t i0 = 0; i0 < n; i0 += step) {
            vp_u64 next[VQ_REG];
            vq_load_batch<T>(wb, i0 + step, n, next);
            vq_add_batch<RANGE>(prof, w);
#pragma unroll
            for (int j = 0; j < VQ_REG; j++)
                w[j] = next[j];
        }
    }
    __syncthreads();
    unsigned int *turn = one ? NULL : turns + blockIdx.x;
    if (!one) /* the chunk before this one has written acc; or the pass before is done with it */
        vq_turn_take(turn, turn_no);
    if (!FIRST) {
        vq_merge<T>(prof, a, s.levels);
        __syncthreads();
    }
    if (!LAST) {
        for (int l = threadIdx.x; l < s.levels; l += T)
            a[l] = prof[l];
        vq_turn_give(turn, turn_no + 1);
        return;
    }
    /* acc read: the next launch over it may write it. Before the results, not after them (a
     * pass's last chunk would hold every session's next pass for its finish: H200, the loop
     * path's 3 launches 13.5 against 16.5 us), so queued passes of several launches write out
     * in the order their sessions finish. */
    if (!one)
        vq_turn_give(turn, turn_no + 1);
    vq_finish<T>(prof, prof + max_levels, s.levels, s.base, value_area, &red, &tmp,
                 &out[blockIdx.x], one);
}

/* One packed pass's arguments, and its launch with blocks of T threads. */
struct vq_launch {
    const vp_u64 *words;
    const int64_t *first;
    const rs_gpu_vpoc_sess *sess;
    int64_t *acc;
    unsigned int *turns;
    unsigned int turn;
    int max_levels;
    double value_area;
    rs_gpu_vpoc_result *out;
    unsigned blocks;
    size_t smem;
    hipStream_t stream;
};

template <int T, bool RANGE>
static void vq_launch_pass(const vq_launch *l, int first_chunk, int last_chunk) {
    void (*k)(const vp_u64 *, const int64_t *, const rs_gpu_vpoc_sess *, int64_t *, unsigned int *,
              unsigned int, int, double, rs_gpu_vpoc_result *) =
        first_chunk ? (last_chunk ? vq_pass_kernel<T, RANGE, true, true>
                                  : vq_pass_kernel<T, RANGE, true, false>)
                    : (last_chunk ? vq_pass_kernel<T, RANGE, false, true>
                                  : vq_pass_kernel<T, RANGE, false, false>);
    RS_LAUNCH_EARLY(k, l->blocks, T, l->smem, l->stream, l->words, l->first, l->sess, l->acc,
                    l->turns, l->turn, l->max_levels, l->value_area, l->out);
}

/* ---- dense passes: a launch's volume matrix, then its sum over the rows ----
 * What PyTorch code does (a one-hot or scatter of each bar's share into a [bars x levels]
 * tensor, then .sum(0)): two kernels over device memory, with no profile on chip. The matrix
 * holds the packed words' integer shares, so the sums are exact in any order. */

#define VD_THREADS   256
#define VD_COLS      32 /* columns a reduce block takes */
#define VD_ROW_LANES (VD_THREADS / VD_COLS)

/* Every element of the n x width matrix m, one thread an element in address order (the
 * stores coalesce): row i is word i's share at the levels it covers, 0 at the others
 * (backend/vpoc/vpoc_dense.c). */
__global__ void __launch_bounds__(VD_THREADS)
    vd_fill_kernel(const vp_u64 *words, int64_t n, int width, int64_t *m) {
    int64_t total = n * width, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        int64_t i = e / width;
        int l = (int)(e - i * width), lo, hi;
        int64_t share;
        vq_unword(words[i], &lo, &hi, &share);
        m[e] = l >= lo && l <= hi ? share : 0;
    }
}

/* Session blockIdx.x's rows [first[k], first[k + 1]) of m summed column by column into its
 * profile (acc + acc_off; from zero on the first launch): a block takes VD_COLS columns
 * (blockIdx.y), its threads VD_ROW_LANES rows at a time, the lanes' sums added in shared
 * memory. A whole block leaves together when its columns are past the session's levels. */
template <bool FIRST>
__global__ void __launch_bounds__(VD_THREADS)
    vd_reduce_kernel(const int64_t *m, const int64_t *first, const rs_gpu_vpoc_sess *sess,
                     int width, int64_t *acc) {
    __shared__ int64_t part[VD_ROW_LANES][VD_COLS];
    rs_gpu_vpoc_sess s = sess[blockIdx.x];
    if (s.levels == 0 || (int)blockIdx.y * VD_COLS >= s.levels)
        return;
    int col = (int)threadIdx.x % VD_COLS, lane = (int)threadIdx.x / VD_COLS;
    int l = (int)blockIdx.y * VD_COLS + col;
    int64_t sum = 0, r1 = first[blockIdx.x + 1];
    if (l < s.levels)
        for (int64_t r = first[blockIdx.x] + lane; r < r1; r += VD_ROW_LANES)
            sum += m[r * width + l];
    part[lane][col] = sum;
    __syncthreads();
    if (lane != 0 || l >= s.levels)
        return;
    for (int k = 1; k < VD_ROW_LANES; k++)
        sum += part[k][col];
    int64_t *a = acc + s.acc_off + l;
    *a = FIRST ? sum : *a + sum;
}

/* POC and value area of session blockIdx.x's finished profile in acc, as vp_finish walks it;
 * a session the pass does not hold is marked skipped. */
__global__ void __launch_bounds__(VP_THREADS)
    vd_finish_kernel(const rs_gpu_vpoc_sess *sess, const int64_t *acc, double value_area,
                     rs_gpu_vpoc_result *out) {
    __shared__ vp_red red;
    rs_gpu_vpoc_sess s = sess[blockIdx.x];
    if (s.levels == 0) {
        if (threadIdx.x == 0)
            out[blockIdx.x].status = RS_GPU_VPOC_SKIPPED;
        return;
    }
    vp_finish(acc + s.acc_off, s.levels, s.base, value_area, &red, &out[blockIdx.x]);
}

extern "C" {

int rs_gpu_vpoc_accumulate(const struct rs_gpu_bar *bars, size_t n,
                           const struct rs_gpu_vpoc_params *p, int64_t base, int64_t *hist,
                           size_t n_levels, void *stream) {
    if (n == 0)
        return 0;
    size_t blocks = (n + VP_THREADS - 1) / VP_THREADS;
    if (blocks > 1024)
        blocks = 1024;
    RS_LAUNCH(vp_accumulate_kernel, (unsigned)blocks, VP_THREADS, 0, (hipStream_t)stream, bars, n,
              p->profile, p->tick, base, hist, (int64_t)n_levels);
    return (int)hipGetLastError();
}

int rs_gpu_vpoc_finalize(const int64_t *hist, size_t n_levels, int64_t base,
                         const struct rs_gpu_vpoc_params *p, struct rs_gpu_vpoc_result *out,
                         void *stream) {
    RS_LAUNCH(vp_finalize_kernel, 1, VP_THREADS, 0, (hipStream_t)stream, hist, (int64_t)n_levels,
              base, p->value_area, out);
    return (int)hipGetLastError();
}

int rs_gpu_vpoc_pass(const uint64_t *words, const int64_t *first,
                     const struct rs_gpu_vpoc_sess *sess, size_t n_sessions, int max_levels,
                     int profile, int64_t *acc, uint32_t *turns, uint32_t turn, int first_chunk,
                     int last_chunk, double value_area, struct rs_gpu_vpoc_result *out,
                     void *stream) {
    if (n_sessions == 0)
        return 0;
    if (max_levels < 1 || max_levels > RS_GPU_VPOC_LDS_LEVELS ||
        ((!first_chunk || !last_chunk) && (acc == NULL || turns == NULL)))
        return (int)hipErrorInvalidValue;
    struct vq_launch l = {(const vp_u64 *)words,
                          first,
                          sess,
                          acc,
                          turns,
                          turn,
                          max_levels,
                          value_area,
                          out,
                          (unsigned)n_sessions,
                          (last_chunk ? 2 : 1) * (size_t)max_levels * sizeof(int64_t),
                          (hipStream_t)stream};
    if (profile != 0)
        vq_launch_pass<VQ_THREADS_WIDE, true>(&l, first_chunk, last_chunk);
    else if (max_levels <= VQ_NARROW_LEVELS)
        vq_launch_pass<VQ_THREADS_NARROW, false>(&l, first_chunk, last_chunk);
    else
        vq_launch_pass<VQ_THREADS_WIDE, false>(&l, first_chunk, last_chunk);
    return (int)hipGetLastError();
}

int rs_gpu_vpoc_dense_pass(const uint64_t *words, const int64_t *first,
                           const struct rs_gpu_vpoc_sess *sess, size_t n_sessions, size_t n_words,
                           int max_levels, int64_t *dense, int64_t *acc, int first_chunk,
                           int last_chunk, double value_area, struct rs_gpu_vpoc_result *out,
                           void *stream) {
    if (n_sessions == 0)
        return 0;
    if (max_levels < 1 || max_levels > RS_GPU_VPOC_LDS_LEVELS)
        return (int)hipErrorInvalidValue;
    hipStream_t st = (hipStream_t)stream;
    int64_t total = (int64_t)n_words * max_levels;
    if (total > 0) {
        int64_t blocks = (total + VD_THREADS - 1) / VD_THREADS;
        RS_LAUNCH(vd_fill_kernel, (unsigned)(blocks < 65536 ? blocks : 65536), VD_THREADS, 0, st,
                  (const vp_u64 *)words, (int64_t)n_words, max_levels, dense);
    }
    dim3 grid((unsigned)n_sessions, (unsigned)((max_levels + VD_COLS - 1) / VD_COLS));
    if (first_chunk)
        RS_LAUNCH(vd_reduce_kernel<true>, grid, VD_THREADS, 0, st, dense, first, sess, max_levels,
                  acc);
    else
        RS_LAUNCH(vd_reduce_kernel<false>, grid, VD_THREADS, 0, st, dense, first, sess, max_levels,
                  acc);
    if (last_chunk)
        RS_LAUNCH(vd_finish_kernel, (unsigned)n_sessions, VP_THREADS, 0, st, sess, acc, value_area,
                  out);
    return (int)hipGetLastError();
}

} // extern "C"
