/* The NCCL communicator on two real NVIDIA GPUs, one thread per rank: sum and mean all-reduces
 * of device buffers, a rank that never joins (init times out naming it), a rank that leaves
 * alone (destroy times out), and a kernel left waiting for a peer that an abort stops; then,
 * in a build with the GPU kernels, the direct path for small all-reduces: rounds queued back
 * to back at sizes on both sides of every slice and of the limit, checked round by round, and
 * its own kernel waiting for a peer stopped by an abort. The CUDA runtime is loaded at run
 * time like NCCL. Exit 0 passed, 1 failed, 77 skipped (no CUDA
 * runtime, no NCCL, fewer than two devices). RS_COMM_LIB names the NCCL library,
 * RS_CUDART_LIB the CUDA runtime. */
#include "backend/comm/comm.h"
#include "backend/core/mono.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CG_S       1000000000ull
#define CG_COUNT   (1u << 20)
#define CG_H2D     1 /* cudaMemcpyHostToDevice */
#define CG_D2H     2 /* cudaMemcpyDeviceToHost */
#define CG_D2D     3 /* cudaMemcpyDeviceToDevice */
#define CG_SKIPPED 77
#define CG_ROUNDS  40 /* direct all-reduces queued back to back at each size */

/* The slice of the CUDA runtime the test calls (cudaError_t is an int, streams pointers). */
struct cg_cuda {
    int (*get_device_count)(int *n);
    int (*set_device)(int dev);
    int (*stream_create)(void **s);
    int (*stream_destroy)(void *s);
    int (*stream_synchronize)(void *s);
    int (*malloc_)(void **p, size_t bytes);
    int (*free_)(void *p);
    int (*memcpy_)(void *dst, const void *src, size_t bytes, int kind);
    int (*memcpy_async)(void *dst, const void *src, size_t bytes, int kind, void *stream);
    const char *(*error_string)(int e);
};

static struct cg_cuda cg_rt;
static const char *cg_lib; /* the NCCL library, NULL for the default */
static size_t cg_peer_max; /* comm_conf.peer_max_bytes of the groups made now */

static int cg_load_cuda(void) {
    const char *names[] = {getenv("RS_CUDART_LIB"), "libcudart.so", "libcudart.so.13",
                           "libcudart.so.12"};
    void *h = NULL;
    for (size_t i = 0; i < 4 && !h; i++)
        if (names[i])
            h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -ENOENT;
    const struct {
        void *dst;
        const char *name;
    } syms[] = {{&cg_rt.get_device_count, "cudaGetDeviceCount"},
                {&cg_rt.set_device, "cudaSetDevice"},
                {&cg_rt.stream_create, "cudaStreamCreate"},
                {&cg_rt.stream_destroy, "cudaStreamDestroy"},
                {&cg_rt.stream_synchronize, "cudaStreamSynchronize"},
                {&cg_rt.malloc_, "cudaMalloc"},
                {&cg_rt.free_, "cudaFree"},
                {&cg_rt.memcpy_, "cudaMemcpy"},
                {&cg_rt.memcpy_async, "cudaMemcpyAsync"},
                {&cg_rt.error_string, "cudaGetErrorString"}};
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p)
            return -ENOSYS;
        memcpy(syms[i].dst, &p, sizeof(p));
    }
    return 0;
}

/* One rank: its device, stream and buffer, and what its script left. */
struct cg_rank {
    struct comm *c;
    unsigned rank;
    int script;
    void *stream;
    float *dev;
    float *host;
    int rc;
    char err[512];
    int sync_rc;       /* the stuck script: what the stream synchronize returned after the abort */
    size_t count;      /* elements of the connect and stuck scripts' all-reduces */
    size_t peer_bytes; /* comm_peer_bytes after init */
};

enum { CG_REDUCE, CG_JOIN_ONLY, CG_ABSENT, CG_DESTROY_ALONE, CG_CONNECT, CG_STUCK, CG_ROUNDS_RUN };

static int cg_setup(struct cg_rank *r) {
    if (cg_rt.set_device((int)r->rank) != 0 || cg_rt.stream_create(&r->stream) != 0 ||
        cg_rt.malloc_((void **)&r->dev, CG_COUNT * sizeof(float)) != 0)
        return -EIO;
    r->host = malloc(CG_COUNT * sizeof(float));
    for (unsigned i = 0; r->host && i < CG_COUNT; i++)
        r->host[i] = (float)((i % 1000) * (r->rank + 1)); /* sums and halves stay exact */
    return r->host && cg_rt.memcpy_(r->dev, r->host, CG_COUNT * sizeof(float), CG_H2D) == 0 ? 0
                                                                                            : -EIO;
}

/* The rank's error text, returning rc. */
__attribute__((format(printf, 3, 4))) static int cg_fail(struct cg_rank *r, int rc, const char *fmt,
                                                         ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof(r->err), fmt, ap);
    va_end(ap);
    return rc;
}

/* Copy the device buffer back after the stream is done and check every element is want(i). */
static int cg_expect(struct cg_rank *r, const char *what, float (*want)(unsigned i)) {
    if (cg_rt.stream_synchronize(r->stream) != 0 ||
        cg_rt.memcpy_(r->host, r->dev, CG_COUNT * sizeof(float), CG_D2H) != 0)
        return cg_fail(r, -EIO, "%s: synchronize or copy failed", what);
    for (unsigned i = 0; i < CG_COUNT; i++)
        if (r->host[i] != want(i))
            return cg_fail(r, -1, "%s: [%u] = %g, want %g", what, i, (double)r->host[i],
                           (double)want(i));
    return 0;
}

/* Rank r gives (i % 1000) (r + 1): the sum is 3 (i % 1000) on both ranks, exact; the mean of
 * those two equal sums is the same again, where a sum would double it. */
static float cg_sum_of_two(unsigned i) {
    return (float)(3 * (i % 1000));
}

static int cg_reduce(struct cg_rank *r) {
    int rc = comm_allreduce(r->c, r->rank, r->dev, CG_COUNT, COMM_F32, COMM_RED_SUM, NULL,
                            30 * CG_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = cg_expect(r, "sum", cg_sum_of_two);
    if (rc == 0)
        rc = comm_allreduce(r->c, r->rank, r->dev, CG_COUNT, COMM_F32, COMM_RED_MEAN, NULL,
                            30 * CG_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = cg_expect(r, "mean", cg_sum_of_two);
    if (rc == 0)
        rc = comm_barrier(r->c, r->rank, 30 * CG_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = comm_destroy(r->c, r->rank, 30 * CG_S, r->err, sizeof(r->err));
    return rc;
}

/* One all-reduce together: NCCL connects the ranks at their first collective, whose enqueue
 * stays in progress until every rank has come; after it, an enqueue returns at once. */
static int cg_connect(struct cg_rank *r) {
    int rc = comm_allreduce(r->c, r->rank, r->dev, r->count, COMM_F32, COMM_RED_SUM, NULL,
                            30 * CG_S, r->err, sizeof(r->err));
    if (rc == 0 && cg_rt.stream_synchronize(r->stream) != 0)
        rc = cg_fail(r, -EIO, "synchronize failed");
    return rc;
}

/* The sizes the direct path is checked at (floats): one element, around a block's 64-element
 * alignment and its 512-element share, the small model's gradients (5380 B), the large one's,
 * a grid of 64 blocks and over it, the limit itself, and one over it (the library's, between
 * direct ones on the same stream). */
static const size_t cg_sizes[] = {1, 63, 64, 65, 511, 513, 1345, 11521, 32768, 40000, 65536, 65537};
#define CG_N_SIZES (sizeof(cg_sizes) / sizeof(cg_sizes[0]))

/* Rank r's input of round k at element i: small integers, so every sum is exact. */
static double cg_round_value(unsigned r, unsigned k, size_t i) {
    return (double)((i * 7 + k * 13) % 1021) + 1000.0 * r + k;
}

/* The type's bytes of a round's input at elements [0, n) into host (float or double). */
static void cg_round_fill(void *host, bool f64, unsigned r, unsigned k, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double v = cg_round_value(r, k, i);
        if (f64)
            ((double *)host)[i] = v;
        else
            ((float *)host)[i] = (float)v;
    }
}

/* Every size, CG_ROUNDS rounds queued with no synchronize between: each round's input copied
 * into the buffer, the all-reduce (f32 sum; the last size also the mean, and doubles), the
 * result copied out; then every round's result checked. A stale staging half, a flag seen
 * early or a slice read twice shows as a wrong element of some round. */
static int cg_rounds(struct cg_rank *r) {
    size_t most = 65537, esz = sizeof(double);
    size_t bytes = most * esz * CG_ROUNDS;
    char *in = NULL, *out = NULL, *host = malloc(bytes);
    int rc = host ? 0 : -ENOMEM;
    if (rc == 0 &&
        (cg_rt.malloc_((void **)&in, bytes) != 0 || cg_rt.malloc_((void **)&out, bytes) != 0))
        rc = cg_fail(r, -EIO, "device memory for the rounds");
    for (size_t z = 0; rc == 0 && z < CG_N_SIZES + 2; z++) {
        bool f64 = z == CG_N_SIZES + 1, mean = z == CG_N_SIZES;
        size_t n = z < CG_N_SIZES ? cg_sizes[z] : f64 ? 32768 : 1345;
        size_t e = f64 ? sizeof(double) : sizeof(float);
        for (unsigned k = 0; k < CG_ROUNDS; k++)
            cg_round_fill(host + k * n * e, f64, r->rank, k, n);
        if (cg_rt.memcpy_(in, host, CG_ROUNDS * n * e, CG_H2D) != 0)
            rc = cg_fail(r, -EIO, "copy of the rounds' inputs");
        for (unsigned k = 0; rc == 0 && k < CG_ROUNDS; k++) {
            if (cg_rt.memcpy_async(r->dev, in + k * n * e, n * e, CG_D2D, r->stream) != 0)
                rc = cg_fail(r, -EIO, "copy in");
            rc = rc ? rc
                    : comm_allreduce(r->c, r->rank, r->dev, n, f64 ? COMM_F64 : COMM_F32,
                                     mean ? COMM_RED_MEAN : COMM_RED_SUM, NULL, 30 * CG_S, r->err,
                                     sizeof(r->err));
            if (rc == 0 &&
                cg_rt.memcpy_async(out + k * n * e, r->dev, n * e, CG_D2D, r->stream) != 0)
                rc = cg_fail(r, -EIO, "copy out");
        }
        if (rc == 0 && (cg_rt.stream_synchronize(r->stream) != 0 ||
                        cg_rt.memcpy_(host, out, CG_ROUNDS * n * e, CG_D2H) != 0))
            rc = cg_fail(r, -EIO, "%zu elements: synchronize or copy back failed", n);
        for (unsigned k = 0; rc == 0 && k < CG_ROUNDS; k++)
            for (size_t i = 0; rc == 0 && i < n; i++) {
                double sum = cg_round_value(0, k, i) + cg_round_value(1, k, i);
                double w = mean ? sum / 2 : sum;
                double got = f64 ? ((double *)host)[k * n + i] : ((float *)host)[k * n + i];
                if (got != (f64 ? w : (double)(float)w))
                    rc = cg_fail(r, -1, "%s %s of %zu elements, round %u: [%zu] = %g, want %g",
                                 f64 ? "double" : "float", mean ? "mean" : "sum", n, k, i, got, w);
            }
    }
    if (in)
        cg_rt.free_(in);
    if (out)
        cg_rt.free_(out);
    free(host);
    return rc ? rc : comm_destroy(r->c, r->rank, 30 * CG_S, r->err, sizeof(r->err));
}

static void *cg_thread(void *arg) {
    struct cg_rank *r = arg;
    if (r->script == CG_ABSENT)
        return NULL;
    r->rc = cg_setup(r);
    if (r->rc == 0)
        r->rc = comm_init(r->c, r->rank, r->stream, r->script == CG_REDUCE ? 120 * CG_S : 10 * CG_S,
                          r->err, sizeof(r->err));
    if (r->rc != 0)
        return NULL;
    r->peer_bytes = comm_peer_bytes(r->c, r->rank);
    if (r->script == CG_ROUNDS_RUN)
        r->rc = cg_rounds(r);
    else if (r->script == CG_REDUCE)
        r->rc = cg_reduce(r);
    else if (r->script == CG_DESTROY_ALONE)
        r->rc = comm_destroy(r->c, r->rank, 5 * CG_S, r->err, sizeof(r->err));
    else if (r->script == CG_CONNECT)
        r->rc = cg_connect(r);
    else if (r->script == CG_STUCK && (r->rc = cg_connect(r)) == 0) {
        r->rc = comm_allreduce(r->c, r->rank, r->dev, r->count, COMM_F32, COMM_RED_SUM, NULL,
                               30 * CG_S, r->err, sizeof(r->err));
        if (r->rc == 0) /* queued; the kernel waits for rank 1, which never comes */
            r->sync_rc = cg_rt.stream_synchronize(r->stream);
    }
    return NULL;
}

static int cg_group(struct comm **c) {
    struct comm_conf conf = {.n_ranks = 2, .lib = cg_lib, .peer_max_bytes = cg_peer_max};
    char err[512];
    int rc = comm_open("nccl", &conf, c, err, sizeof(err));
    if (rc != 0)
        printf("comm_open: %s\n", err);
    return rc;
}

static void cg_start(struct comm *c, struct cg_rank *rk, const int *scripts, pthread_t *t) {
    for (unsigned k = 0; k < 2; k++) {
        rk[k] = (struct cg_rank){.c = c, .rank = k, .script = scripts[k]};
        rk[k].count = cg_peer_max ? 11521 : CG_COUNT; /* the large model's gradients */
        pthread_create(&t[k], NULL, cg_thread, &rk[k]);
    }
}

/* Free what the ranks' threads set up, once they have been joined. */
static void cg_release(struct cg_rank *rk) {
    for (unsigned k = 0; k < 2; k++) {
        if (rk[k].dev) {
            cg_rt.set_device((int)k);
            cg_rt.free_(rk[k].dev);
            cg_rt.stream_destroy(rk[k].stream);
        }
        free(rk[k].host);
    }
}

static void cg_finish(struct cg_rank *rk, const pthread_t *t) {
    for (unsigned k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    cg_release(rk);
}

static int cg_check(bool ok, const char *what, const struct cg_rank *rk) {
    printf("%s %s\n  rank 0: %d %s\n  rank 1: %d %s\n", ok ? "PASS" : "FAIL", what, rk[0].rc,
           rk[0].err, rk[1].rc, rk[1].err);
    return ok ? 0 : 1;
}

/* Both ranks run script in a new group; their all-reduce record (rank 0's) into *st and the
 * time it took into *sec. 0, or 1 when the group did not open. */
static int cg_both(int script, struct cg_rank *rk, struct comm_op_stats *st, double *sec) {
    struct comm *c;
    pthread_t t[2];
    const int scripts[2] = {script, script};
    if (cg_group(&c) != 0)
        return 1;
    uint64_t t0 = mono_now_ns();
    cg_start(c, rk, scripts, t);
    cg_finish(rk, t);
    comm_stats(c, 0, COMM_OP_ALLREDUCE, st);
    comm_close(c);
    *sec = (double)(mono_now_ns() - t0) / 1e9;
    return 0;
}

static int cg_case_reduce(void) {
    struct cg_rank rk[2];
    struct comm_op_stats st;
    double sec;
    if (cg_both(CG_REDUCE, rk, &st, &sec) != 0)
        return 1;
    printf("  init, 2 all-reduces of %u floats, barrier, destroy: %.3f s\n", CG_COUNT, sec);
    bool ok = rk[0].rc == 0 && rk[1].rc == 0 && st.bytes == 2ull * CG_COUNT * sizeof(float);
    return cg_check(ok, "sum and mean on two GPUs", rk);
}

/* Rank 1 never joins: rank 0's init gives up after its 10 s and names it. */
static int cg_case_missing(void) {
    struct comm *c;
    struct cg_rank rk[2];
    pthread_t t[2];
    const int scripts[2] = {CG_JOIN_ONLY, CG_ABSENT};
    if (cg_group(&c) != 0)
        return 1;
    uint64_t t0 = mono_now_ns();
    cg_start(c, rk, scripts, t);
    cg_finish(rk, t);
    double dt = (double)(mono_now_ns() - t0) / 1e9;
    comm_close(c);
    printf("  rank 0 returned after %.3f s\n", dt);
    bool ok = rk[0].rc == -ETIMEDOUT && strstr(rk[0].err, "rank 1 has not entered it") &&
              dt >= 10 && dt < 30;
    return cg_check(ok, "init without rank 1", rk);
}

/* Rank 0 leaves alone. Where NCCL's finalize waits for the peers, destroy gives up after 5 s
 * naming rank 1; where it completes alone, destroy succeeds. Rank 1's destroy then releases. */
static int cg_case_destroy_alone(void) {
    struct comm *c;
    struct cg_rank rk[2];
    pthread_t t[2];
    const int scripts[2] = {CG_DESTROY_ALONE, CG_JOIN_ONLY};
    char err[512] = "";
    if (cg_group(&c) != 0)
        return 1;
    cg_start(c, rk, scripts, t);
    for (unsigned k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    cg_rt.set_device(1); /* rank 1's thread is gone: this one stands in for it */
    int late = comm_destroy(c, 1, 5 * CG_S, err, sizeof(err));
    cg_release(rk);
    comm_close(c);
    printf("  NCCL's finalize %s; rank 1's destroy: %d %s\n",
           rk[0].rc == -ETIMEDOUT ? "waits for the peers" : "completes alone", late, err);
    bool ok = ((rk[0].rc == -ETIMEDOUT && strstr(rk[0].err, "rank 1 has not entered it")) ||
               rk[0].rc == 0) &&
              late == 0;
    return cg_check(ok, "destroy without rank 1", rk);
}

static bool cg_left_allreduce(struct comm *c, uint64_t *version) {
    struct comm_snap s;
    uint64_t give_up = mono_now_ns() + 60 * CG_S;
    while (mono_now_ns() < give_up) {
        comm_snapshot_wait(c, *version, CG_S, &s);
        *version = s.version;
        if (s.rank[0].op == COMM_OP_NONE && s.rank[0].last_op == COMM_OP_ALLREDUCE &&
            s.rank[0].seq == 3) /* init, the all-reduce together, the one alone */
            return true;
    }
    return false;
}

/* After one all-reduce together, rank 0's second one is queued and its kernel waits for rank 1,
 * which never enqueues it: the thread blocks in the stream synchronize. An abort from this
 * thread must release it. */
static int cg_case_stuck(void) {
    struct comm *c;
    struct cg_rank rk[2];
    pthread_t t[2];
    const int scripts[2] = {CG_STUCK, CG_CONNECT};
    if (cg_group(&c) != 0)
        return 1;
    cg_start(c, rk, scripts, t);
    uint64_t v = 0;
    bool queued = cg_left_allreduce(c, &v);
    struct comm_snap s;
    comm_snapshot_wait(c, v, 2 * CG_S, &s); /* give the kernel time to start waiting */
    uint64_t t0 = mono_now_ns();
    comm_abort(c);
    pthread_join(t[0], NULL); /* the alarm in main ends a run where this never returns */
    double dt = (double)(mono_now_ns() - t0) / 1e9;
    pthread_join(t[1], NULL);
    printf("  the stuck synchronize returned %.3f s after the abort: %d (%s)\n", dt, rk[0].sync_rc,
           cg_rt.error_string(rk[0].sync_rc));
    cg_release(rk);
    comm_close(c);
    return cg_check(queued && rk[0].rc == 0 && dt < 30,
                    cg_peer_max ? "abort of the direct path's kernel waiting for a peer"
                                : "abort of a kernel waiting for a peer",
                    rk);
}

/* Both ranks take the direct path (it must be on: this build has its kernel) through every
 * size's rounds. */
static int cg_case_rounds(void) {
    struct cg_rank rk[2];
    struct comm_op_stats st;
    double sec;
    if (cg_both(CG_ROUNDS_RUN, rk, &st, &sec) != 0)
        return 1;
    printf("  direct path up to %zu B on both ranks; %zu sizes x %d rounds in %.3f s\n",
           rk[0].peer_bytes, CG_N_SIZES + 2, CG_ROUNDS, sec);
    bool ok = rk[0].rc == 0 && rk[1].rc == 0 && rk[0].peer_bytes == cg_peer_max &&
              rk[1].peer_bytes == cg_peer_max;
    return cg_check(ok, "direct all-reduces, rounds back to back", rk);
}

int main(void) {
    alarm(600); /* a hang (the abort not reaching the kernel) fails the run instead */
    bool require = getenv("RINGSIDE_GPU_TESTS_REQUIRE_DEVICE") != NULL;
    int n = 0;
    if (cg_load_cuda() != 0 || cg_rt.get_device_count(&n) != 0 || n < 2) {
        printf("SKIP: %d CUDA devices (the CUDA runtime: RS_CUDART_LIB), two needed\n", n);
        return require ? 1 : CG_SKIPPED;
    }
    cg_lib = getenv("RS_COMM_LIB");
    struct comm *c;
    if (cg_group(&c) != 0) {
        printf("SKIP: no NCCL (RS_COMM_LIB names the library)\n");
        return require ? 1 : CG_SKIPPED;
    }
    comm_close(c);
    int failed = cg_case_reduce() + cg_case_missing() + cg_case_destroy_alone() + cg_case_stuck();
#ifdef RS_TEST_PEER
    const bool peer_built = true;
#else
    const bool peer_built = false;
#endif
    if (peer_built) {
        cg_peer_max = COMM_PEER_MAX_BYTES_DEFAULT;
        failed += cg_case_rounds() + cg_case_stuck();
    } else {
        printf("the direct all-reduce path is not in this build (no GPU kernels): not tested\n");
    }
    printf("%s\n", failed ? "FAILED" : "all passed");
    return failed ? 1 : 0;
}
