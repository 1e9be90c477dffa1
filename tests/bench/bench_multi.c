/* Benchmark (not a test) of data-parallel training on the GPUs of one host, one thread per rank
 * as the training workers run, printing key=value lines that scripts/gpu-bench-multi.sh sets
 * beside PyTorch DDP's numbers from the same run:
 *   - the communicator's init (open, join, first all-reduce) and destroy times;
 *   - all-reduce latency and bus bandwidth at 5380 B (the 24-32-16-1 MLP's gradients), 1 MiB,
 *     64 MiB and 256 MiB through comm_allreduce, and through a plain NCCL loop on communicators
 *     of its own (the same library, called directly), so the layer's cost is measured in the
 *     same run;
 *   - data-parallel MLP training steps/s through the compute backend (forward, loss, backward,
 *     gradient all-reduce, Adam; a stream synchronize every 16 steps, as the training loop
 *     does), and the same on one GPU alone for the scaling.
 * Results go to a private copy of stdout; fd 1 itself points at stderr, so what the GPU and
 * NCCL libraries print cannot mix with the key lines. */
#include "backend/comm/comm.h"
#include "backend/compute/compute.h"
#include "backend/core/mono.h"
#include "backend/core/rng.h"
#include "backend/memory/mem_conf.h"
#include "backend/mlp/mlp.h"
#include "kernels/rs_gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BM_S               1000000000ull
#define BM_INIT_TIMEOUT_NS (120 * BM_S) /* comm_init: NCCL's setup takes seconds */
#define BM_CALL_TIMEOUT_NS (60 * BM_S)  /* every other collective */
#define BM_SYNC_EVERY      16           /* training steps between stream synchronizes */
#define BM_WARM_STEPS      (8 * BM_SYNC_EVERY)
#define BM_WARM_REDUCES    5
#define BM_FEATURES        24
#define BM_MAX_BYTES       ((size_t)256 << 20) /* the largest message */
#define BM_CHECK_COUNT     1345                /* floats of the correctness check (5380 B) */
#define BM_TIMEOUT_S       300

#ifdef RS_BENCH_RCCL
#define BM_DEFAULT_LIB "librccl.so.1"
#else
#define BM_DEFAULT_LIB "libnccl.so.2"
#endif

/* Messages: PyTorch's reference sizes and repetitions (fewer with --quick). */
static const struct bm_size {
    size_t bytes;
    int reps, quick_reps;
} bm_sizes[] = {
    {5380, 2000, 500},
    {(size_t)1 << 20, 500, 100},
    {(size_t)64 << 20, 50, 10},
    {(size_t)256 << 20, 20, 5},
};

/* Models: per-GPU batch and timed steps (multiples of BM_SYNC_EVERY). */
static const struct bm_case {
    int h1, h2;
    size_t batch;
    int steps, quick_steps;
} bm_cases[] = {
    {32, 16, 256, 20000, 4000},
    {128, 64, 4096, 4000, 800},
};

#define BM_N_SIZES (sizeof(bm_sizes) / sizeof(bm_sizes[0]))
#define BM_N_CASES (sizeof(bm_cases) / sizeof(bm_cases[0]))

struct bm_opts {
    bool quick;
    unsigned n; /* ranks */
    int dev[COMM_MAX_RANKS];
    const char *lib; /* NULL: the platform's NCCL (RCCL on AMD) */
    unsigned timeout_s;
    size_t peer_max; /* comm_conf.peer_max_bytes of ringside's communicator */
};

/* ---- plain NCCL: the slice of nccl.h this program calls (RCCL has the same ABI) ---- */

#define BM_NCCL_SUCCESS 0
#define BM_NCCL_FLOAT32 7 /* ncclFloat32 */
#define BM_NCCL_SUM     0 /* ncclSum */

struct bm_nccl_id { /* ncclUniqueId, passed by value */
    char internal[128];
};
struct bm_nccl_comm; /* opaque */

struct bm_nccl {
    void *lib;
    char version[24];
    int (*get_version)(int *version);
    const char *(*get_error_string)(int result);
    int (*get_unique_id)(struct bm_nccl_id *id);
    int (*init_rank)(struct bm_nccl_comm **comm, int nranks, struct bm_nccl_id id, int rank);
    int (*all_reduce)(const void *sendbuf, void *recvbuf, size_t count, int datatype, int op,
                      struct bm_nccl_comm *comm, void *stream);
    int (*finalize)(struct bm_nccl_comm *comm); /* optional (2.14 and later) */
    int (*destroy)(struct bm_nccl_comm *comm);
};

static int bm_nccl_load(struct bm_nccl *nc, const char *path) {
    nc->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!nc->lib) {
        fprintf(stderr, "bench_multi: cannot load %s: %s (give --comm-lib PATH)\n", path,
                dlerror());
        return -1;
    }
    const struct {
        void *dst;
        const char *name;
        bool optional;
    } syms[] = {
        {&nc->get_version, "ncclGetVersion", false},
        {&nc->get_error_string, "ncclGetErrorString", false},
        {&nc->get_unique_id, "ncclGetUniqueId", false},
        {&nc->init_rank, "ncclCommInitRank", false},
        {&nc->all_reduce, "ncclAllReduce", false},
        {&nc->finalize, "ncclCommFinalize", true},
        {&nc->destroy, "ncclCommDestroy", false},
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        void *p = dlsym(nc->lib, syms[i].name);
        if (!p && !syms[i].optional) {
            fprintf(stderr, "bench_multi: %s lacks %s\n", path, syms[i].name);
            return -1;
        }
        memcpy(syms[i].dst, &p, sizeof(p));
    }
    int v = 0;
    if (nc->get_version(&v) != BM_NCCL_SUCCESS)
        v = 0;
    if (v >= 10000) /* 2.9 and later: X * 10000 + Y * 100 + Z */
        snprintf(nc->version, sizeof(nc->version), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(nc->version, sizeof(nc->version), "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
    return 0;
}

/* ---- the group: the ranks' rendezvous, shared results and the failure flag ---- */

struct bm_group {
    const struct bm_opts *o;
    FILE *out;            /* the results */
    struct comm *comm;    /* ringside's communicator; under mu once the ranks run */
    struct bm_nccl nccl;  /* the plain loop's library */
    struct bm_nccl_id id; /* its communicators' id */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC, for the watchdog's timed wait */
    unsigned arrived, done;
    uint64_t gen;
    bool failed;
    const char *stage;              /* what the ranks are doing, for the watchdog's message */
    uint64_t t0_ns;                 /* a section's start, set by rank 0 */
    double open_s;                  /* comm_open's time */
    double sec[COMM_MAX_RANKS];     /* each rank's time of the section just timed */
    double join[COMM_MAX_RANKS];    /* each rank's comm_init */
    double *params[COMM_MAX_RANKS]; /* each rank's parameters after a data-parallel run */
    uint32_t *hold;                 /* mapped host word the device-time loops wait on */
};

/* Wait until every rank has arrived: 0, or -1 once the group has failed. */
static int bm_meet(struct bm_group *g) {
    pthread_mutex_lock(&g->mu);
    uint64_t gen = g->gen;
    if (!g->failed && ++g->arrived == g->o->n) {
        g->arrived = 0;
        g->gen++;
        pthread_cond_broadcast(&g->cv);
    }
    while (!g->failed && g->gen == gen)
        pthread_cond_wait(&g->cv, &g->mu);
    int rc = g->failed ? -1 : 0;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* Fail the group: say why, wake every rank at a meet and abort the communicator, so a rank
 * blocked in one of its collectives returns. Returns -1. */
__attribute__((format(printf, 3, 4))) static int bm_fail(struct bm_group *g, unsigned rank,
                                                         const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "bench_multi: rank %u: %s\n", rank, msg);
    pthread_mutex_lock(&g->mu);
    bool first = !g->failed;
    g->failed = true;
    if (first && g->comm)
        comm_abort(g->comm);
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return -1;
}

static void bm_stage(struct bm_group *g, const char *what) {
    pthread_mutex_lock(&g->mu);
    g->stage = what;
    pthread_mutex_unlock(&g->mu);
}

/* The slowest rank's time of the section just timed (after the meet that ends it). */
static double bm_slowest(const struct bm_group *g) {
    double m = 0;
    for (unsigned k = 0; k < g->o->n; k++)
        m = fmax(m, g->sec[k]);
    return m;
}

/* ---- one rank ---- */

struct bm_rank {
    struct bm_group *g;
    unsigned rank;
    int dev;
    void *stream; /* the collective benchmarks' own stream */
    void *buf;    /* BM_MAX_BYTES of device memory */
    struct compute *cmp;
    struct bm_nccl_comm *nc; /* the plain loop's communicator */
    char err[768];
};

static double bm_gauss(uint64_t *s) {
    double u = ((double)(rng_splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
    double v = ((double)(rng_splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static double bm_since(uint64_t t0_ns) {
    return (double)(mono_now_ns() - t0_ns) / 1e9;
}

static int bm_gpu(struct bm_rank *r, int e, const char *what) {
    if (e == 0)
        return 0;
    return bm_fail(r->g, r->rank, "%s: %s (%s)", what, rs_gpu_err_name(e), rs_gpu_err_string(e));
}

/* The rank's device, stream, message buffer and compute backend. */
static int bm_setup(struct bm_rank *r) {
    char notice[512];
    int rc = bm_gpu(r, rs_gpu_use_device(r->dev), "select the device");
    rc = rc ? rc : bm_gpu(r, rs_gpu_stream_create(&r->stream), "create a stream");
    rc = rc ? rc : bm_gpu(r, rs_gpu_malloc(&r->buf, BM_MAX_BYTES), "allocate the message");
    rc = rc ? rc : bm_gpu(r, rs_gpu_memset0(r->buf, BM_MAX_BYTES, r->stream), "clear it");
    rc = rc ? rc : bm_gpu(r, rs_gpu_stream_sync(r->stream), "synchronize");
    if (rc != 0)
        return rc;
    struct compute_conf cc = {.device = r->dev, .threads = 1};
    mem_conf_default(&cc.alloc);
    if (compute_open("hip", &cc, &r->cmp, notice, sizeof(notice), r->err, sizeof(r->err)) != 0)
        return bm_fail(r->g, r->rank, "compute_open: %s", r->err);
    return 0;
}

static void bm_teardown(struct bm_rank *r) {
    if (r->cmp)
        compute_close(r->cmp);
    rs_gpu_use_device(r->dev);
    if (r->buf)
        rs_gpu_free(r->buf);
    if (r->stream)
        rs_gpu_stream_destroy(r->stream);
}

/* ---- the two all-reduce paths ---- */

static int bm_rs_reduce(struct bm_rank *r, void *buf, size_t count) {
    int rc = comm_allreduce(r->g->comm, r->rank, buf, count, COMM_F32, COMM_RED_SUM, r->stream,
                            BM_CALL_TIMEOUT_NS, r->err, sizeof(r->err));
    return rc ? bm_fail(r->g, r->rank, "%s", r->err) : 0;
}

static int bm_nccl_reduce(struct bm_rank *r, void *buf, size_t count) {
    const struct bm_nccl *nc = &r->g->nccl;
    int e = nc->all_reduce(buf, buf, count, BM_NCCL_FLOAT32, BM_NCCL_SUM, r->nc, r->stream);
    return e ? bm_fail(r->g, r->rank, "ncclAllReduce: %s", nc->get_error_string(e)) : 0;
}

typedef int (*bm_reduce_fn)(struct bm_rank *r, void *buf, size_t count);

/* One sum of (rank + 1) over the ranks, checked element by element: the path really reduces. */
static int bm_check(struct bm_rank *r, bm_reduce_fn fn, const char *prefix) {
    float host[BM_CHECK_COUNT];
    unsigned n = r->g->o->n;
    for (size_t i = 0; i < BM_CHECK_COUNT; i++)
        host[i] = (float)(r->rank + 1);
    int rc = bm_gpu(r, rs_gpu_copy_h2d(r->buf, host, sizeof(host), r->stream), "upload");
    rc = rc ? rc : fn(r, r->buf, BM_CHECK_COUNT);
    rc = rc ? rc : bm_gpu(r, rs_gpu_copy_d2h(host, r->buf, sizeof(host), r->stream), "download");
    rc = rc ? rc : bm_gpu(r, rs_gpu_stream_sync(r->stream), "synchronize");
    for (size_t i = 0; rc == 0 && i < BM_CHECK_COUNT; i++)
        if (host[i] != (float)(n * (n + 1) / 2))
            rc = bm_fail(r->g, r->rank, "%s all-reduce check: [%zu] = %g, want %u", prefix, i,
                         (double)host[i], n * (n + 1) / 2);
    rc = rc ? rc : bm_meet(r->g);
    if (rc == 0 && r->rank == 0)
        fprintf(r->g->out, "%s_allreduce_check=ok\n", prefix);
    return rc;
}

/* Latency and bus bandwidth at each message size: warm-up calls, then a loop of calls between
 * two stream synchronizes, started together; the slowest rank's time counts. */
static int bm_sizes_run(struct bm_rank *r, bm_reduce_fn fn, const char *prefix) {
    struct bm_group *g = r->g;
    int rc = 0;
    for (size_t s = 0; rc == 0 && s < BM_N_SIZES; s++) {
        size_t count = bm_sizes[s].bytes / sizeof(float);
        int reps = g->o->quick ? bm_sizes[s].quick_reps : bm_sizes[s].reps;
        for (int i = 0; rc == 0 && i < BM_WARM_REDUCES; i++)
            rc = fn(r, r->buf, count);
        rc = rc ? rc : bm_gpu(r, rs_gpu_stream_sync(r->stream), "synchronize");
        rc = rc ? rc : bm_meet(g);
        uint64_t t0 = mono_now_ns();
        for (int i = 0; rc == 0 && i < reps; i++)
            rc = fn(r, r->buf, count);
        rc = rc ? rc : bm_gpu(r, rs_gpu_stream_sync(r->stream), "synchronize");
        g->sec[r->rank] = bm_since(t0);
        rc = rc ? rc : bm_meet(g);
        if (rc == 0 && r->rank == 0) {
            double t = bm_slowest(g) / reps, n = g->o->n;
            double bytes = (double)bm_sizes[s].bytes;
            fprintf(g->out, "%s_allreduce_us bytes=%zu us=%.2f busbw_GBps=%.2f algbw_GBps=%.2f\n",
                    prefix, bm_sizes[s].bytes, t * 1e6, 2 * (n - 1) / n * bytes / t / 1e9,
                    bytes / t / 1e9);
        }
        rc = rc ? rc : bm_meet(g); /* the times are read before the next section writes them */
    }
    return rc;
}

/* The device's own time per all-reduce, without the host's: every rank's stream is held by a
 * kernel waiting for one host word while BM_HELD_REDUCES all-reduces are queued behind it;
 * the word is set and the time until every stream is done, over the count, is the figure.
 * For the training's two gradient sizes (5380 B and 24-128-64-1's 46,084 B). */
#define BM_HELD_REDUCES 200
static int bm_held_run(struct bm_rank *r, bm_reduce_fn fn, const char *prefix) {
    static const size_t sizes[] = {5380, 46084};
    struct bm_group *g = r->g;
    int rc = 0;
    for (size_t s = 0; rc == 0 && s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        uint32_t *status = NULL;
        rc = bm_gpu(r, rs_gpu_host_alloc((void **)&status, sizeof(uint32_t)), "host memory");
        if (rc == 0 && r->rank == 0)
            *(volatile uint32_t *)g->hold = 0;
        rc = rc ? rc : bm_meet(g);
        rc = rc ? rc : bm_gpu(r, rs_gpu_hang(g->hold, 30 * BM_S, status, r->stream), "hold");
        for (int i = 0; rc == 0 && i < BM_HELD_REDUCES; i++)
            rc = fn(r, r->buf, sizes[s] / sizeof(float));
        rc = rc ? rc : bm_meet(g);
        if (rc == 0 && r->rank == 0) {
            g->t0_ns = mono_now_ns();
            *(volatile uint32_t *)g->hold = 1;
        }
        rc = rc ? rc : bm_meet(g);
        rc = rc ? rc : bm_gpu(r, rs_gpu_stream_sync(r->stream), "synchronize");
        g->sec[r->rank] = bm_since(g->t0_ns);
        if (rc == 0 && *(volatile uint32_t *)status != 1)
            rc = bm_fail(g, r->rank, "the hold kernel timed out");
        rc = rc ? rc : bm_meet(g);
        if (rc == 0 && r->rank == 0)
            fprintf(g->out, "%s_allreduce_device_us bytes=%zu us=%.2f\n", prefix, sizes[s],
                    bm_slowest(g) / BM_HELD_REDUCES * 1e6);
        rc = rc ? rc : bm_meet(g);
        if (status)
            rs_gpu_host_free(status);
    }
    return rc;
}

/* ---- data-parallel MLP training through the compute backend ---- */

/* The step's gradient all-reduce: the mean over the ranks through the communicator, enqueued
 * on the compute backend's stream. */
static int bm_reduce_grads(void *ctx, void *buf, size_t count, bool f64, void *stream) {
    struct bm_rank *r = ctx;
    return comm_allreduce(r->g->comm, r->rank, buf, count, f64 ? COMM_F64 : COMM_F32, COMM_RED_MEAN,
                          stream, BM_CALL_TIMEOUT_NS, r->err, sizeof(r->err));
}

struct bm_train {
    const struct bm_case *k;
    bool together; /* every rank trains, reducing its gradients; else this rank alone */
    int steps;
    double sec;      /* the timed steps' wall time */
    double *params;  /* the parameters after training (host, mlp_param_count doubles) */
    const char *why; /* what failed */
};

/* Steps on a fixed random batch on the device (different on every rank, as a data-parallel
 * run's shards are; the parameters start the same everywhere): BM_WARM_STEPS to warm up, then
 * the timed ones, a stream synchronize every BM_SYNC_EVERY steps. */
static int bm_train(struct bm_rank *r, struct bm_train *t) {
    struct compute *c = r->cmp;
    const struct compute_ops *ops = c->ops;
    const struct bm_case *k = t->k;
    struct mlp_arch a = {.n_in = BM_FEATURES,
                         .n_hidden = 2,
                         .hidden = {k->h1, k->h2},
                         .act = MLP_ACT_SILU,
                         .loss = MLP_LOSS_MSE};
    size_t np = mlp_param_count(&a), nx = k->batch * BM_FEATURES;
    double *xh = malloc(nx * sizeof(double)), *yh = malloc(k->batch * sizeof(double));
    double loss[BM_SYNC_EVERY];
    t->params = malloc(np * sizeof(double));
    struct compute_reduce red = {bm_reduce_grads, r};
    struct compute_mlp *m = NULL;
    void *x = NULL, *y = NULL;
    int rc = xh && yh && t->params ? 0 : -ENOMEM;
    uint64_t s = 7 + r->rank;
    for (size_t i = 0; rc == 0 && i < nx; i++)
        xh[i] = bm_gauss(&s);
    for (size_t i = 0; rc == 0 && i < k->batch; i++)
        yh[i] = bm_gauss(&s);
    if (rc == 0)
        mlp_init_params(&a, 1, t->params);
    struct compute_mlp_init init = {.arch = a, .params = t->params, .max_rows = k->batch};
    mlp_adam_conf_default(&init.adam);
    char err[256] = "";
    t->why = "device memory";
    rc = rc ? rc : compute_alloc(c, nx * ops->elem_bytes, &x, err, sizeof(err));
    rc = rc ? rc : compute_alloc(c, k->batch * ops->elem_bytes, &y, err, sizeof(err));
    rc = rc ? rc : ops->upload_f64(c, x, xh, nx);
    rc = rc ? rc : ops->upload_f64(c, y, yh, k->batch);
    rc = rc ? rc : ops->mlp_create(c, &init, &m);
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM);
    t->why = "training step";
    uint64_t t0 = 0;
    for (int i = 0; rc == 0 && i < BM_WARM_STEPS + t->steps; i++) {
        if (i == BM_WARM_STEPS) {
            if (t->together && bm_meet(r->g) != 0) {
                rc = -ECANCELED; /* another rank failed: it has said why */
                break;
            }
            t0 = mono_now_ns();
        }
        rc = ops->mlp_forward(c, m, x, k->batch);
        rc = rc ? rc : ops->mlp_loss(c, m, y, k->batch, &loss[i % BM_SYNC_EVERY]);
        rc = rc ? rc : ops->mlp_backward(c, m, x, y, k->batch);
        rc = rc ? rc : t->together ? ops->mlp_grad_reduce(c, m, 1.0, &red) : 0;
        rc = rc ? rc : ops->mlp_optimizer(c, m);
        if (rc == 0 && (i + 1) % BM_SYNC_EVERY == 0)
            rc = compute_sync(c, SYNC_OP_STREAM);
    }
    t->sec = bm_since(t0);
    t->why = "reading the parameters back";
    rc = rc ? rc : ops->mlp_read(c, m, t->params, NULL, NULL, NULL);
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM);
    if (rc == 0 && !isfinite(loss[BM_SYNC_EVERY - 1]))
        rc = -EDOM, t->why = "the loss is not finite";
    if (m)
        ops->mlp_destroy(c, m);
    compute_free(c, x);
    compute_free(c, y);
    free(xh);
    free(yh);
    if (rc != 0 && rc != -ECANCELED) {
        const char *text = err[0] ? err : r->err[0] ? r->err : ops->strerror(rc);
        bm_fail(r->g, r->rank, "MLP %d,%d batch %zu: %s: %s", k->h1, k->h2, k->batch, t->why, text);
    }
    return rc;
}

/* Every rank trains its shard and reduces; rank 0 prints the rate and how far the ranks'
 * parameters drifted apart (0: they stayed the same, as they must). */
static int bm_ddp(struct bm_rank *r, const struct bm_case *k) {
    struct bm_group *g = r->g;
    struct bm_train t = {.k = k, .together = true};
    t.steps = g->o->quick ? k->quick_steps : k->steps;
    r->err[0] = '\0';
    int rc = bm_train(r, &t);
    g->sec[r->rank] = t.sec;
    g->params[r->rank] = t.params;
    rc = rc ? rc : bm_meet(g);
    if (rc == 0 && r->rank == 0) {
        struct mlp_arch a = {.n_in = BM_FEATURES, .n_hidden = 2, .hidden = {k->h1, k->h2}};
        size_t np = mlp_param_count(&a);
        double spread = 0, sps = t.steps / bm_slowest(g);
        for (unsigned q = 1; q < g->o->n; q++)
            for (size_t i = 0; i < np; i++)
                spread = fmax(spread, fabs(g->params[q][i] - g->params[0][i]));
        fprintf(g->out,
                "rs_ddp_mlp hidden=%d,%d batch_per_gpu=%zu gpus=%u steps=%d steps_per_s=%.0f "
                "samples_per_s=%.4g param_spread=%.3g\n",
                k->h1, k->h2, k->batch, g->o->n, t.steps, sps, sps * (double)k->batch * g->o->n,
                spread);
    }
    rc = rc ? rc : bm_meet(g); /* rank 0 has read every rank's parameters */
    free(t.params);
    g->params[r->rank] = NULL;
    return rc;
}

/* Rank 0's GPU alone, no reduce; the other ranks wait. */
static int bm_single(struct bm_rank *r, const struct bm_case *k) {
    struct bm_group *g = r->g;
    int rc = 0;
    if (r->rank == 0) {
        struct bm_train t = {.k = k, .together = false};
        t.steps = g->o->quick ? k->quick_steps : k->steps;
        r->err[0] = '\0';
        rc = bm_train(r, &t);
        if (rc == 0)
            fprintf(g->out,
                    "rs_single_mlp hidden=%d,%d batch=%zu steps=%d steps_per_s=%.0f "
                    "samples_per_s=%.4g\n",
                    k->h1, k->h2, k->batch, t.steps, t.steps / t.sec,
                    t.steps / t.sec * (double)k->batch);
        free(t.params);
    }
    return rc ? rc : bm_meet(g);
}

/* ---- the sections ---- */

/* ringside's communicator: open (rank 0, as the owner), join, a first all-reduce (NCCL connects
 * the ranks there), then the messages, the training, the destroy. */
static int bm_rs(struct bm_rank *r) {
    struct bm_group *g = r->g;
    struct comm *c = NULL;
    int rc = 0;
    if (r->rank == 0) {
        bm_stage(g, "ringside communicator init");
        struct comm_conf conf = {
            .n_ranks = g->o->n, .lib = g->o->lib, .peer_max_bytes = g->o->peer_max};
        g->t0_ns = mono_now_ns();
        if (comm_open("nccl", &conf, &c, r->err, sizeof(r->err)) != 0)
            return bm_fail(g, 0, "comm_open: %s", r->err);
        g->open_s = bm_since(g->t0_ns);
        pthread_mutex_lock(&g->mu);
        g->comm = c;
        pthread_mutex_unlock(&g->mu);
    }
    if (bm_meet(g) != 0)
        return -1;
    uint64_t t1 = mono_now_ns();
    if (comm_init(g->comm, r->rank, r->stream, BM_INIT_TIMEOUT_NS, r->err, sizeof(r->err)) != 0)
        return bm_fail(g, r->rank, "%s", r->err);
    g->join[r->rank] = bm_since(t1);
    rc = bm_rs_reduce(r, r->buf, 1);
    rc = rc ? rc : bm_gpu(r, rs_gpu_stream_sync(r->stream), "synchronize");
    g->sec[r->rank] = bm_since(g->t0_ns);
    rc = rc ? rc : bm_meet(g);
    if (rc == 0 && r->rank == 0) {
        double join = 0;
        for (unsigned k = 0; k < g->o->n; k++)
            join = fmax(join, g->join[k]);
        fprintf(g->out, "rs_init_s=%.4f\nrs_init_open_s=%.4f\nrs_init_join_s=%.4f\n", bm_slowest(g),
                g->open_s, join);
        fprintf(g->out, "rs_peer_bytes=%zu\n", comm_peer_bytes(g->comm, 0));
    }
    rc = rc ? rc : bm_meet(g);

    if (r->rank == 0)
        bm_stage(g, "ringside all-reduce");
    rc = rc ? rc : bm_check(r, bm_rs_reduce, "rs");
    rc = rc ? rc : bm_sizes_run(r, bm_rs_reduce, "rs");
    rc = rc ? rc : bm_held_run(r, bm_rs_reduce, "rs");
    for (size_t k = 0; rc == 0 && k < BM_N_CASES; k++) {
        if (r->rank == 0)
            bm_stage(g, "data-parallel MLP");
        rc = bm_ddp(r, &bm_cases[k]);
    }
    for (size_t k = 0; rc == 0 && k < BM_N_CASES; k++) {
        if (r->rank == 0)
            bm_stage(g, "MLP on one GPU");
        rc = bm_single(r, &bm_cases[k]);
    }
    if (rc != 0)
        return rc;

    if (r->rank == 0)
        bm_stage(g, "ringside communicator destroy");
    rc = bm_meet(g);
    uint64_t t0 = mono_now_ns();
    if (rc == 0 && comm_destroy(g->comm, r->rank, BM_CALL_TIMEOUT_NS, r->err, sizeof(r->err)))
        return bm_fail(g, r->rank, "%s", r->err);
    g->sec[r->rank] = bm_since(t0);
    rc = rc ? rc : bm_meet(g); /* every rank has left its calls: the group can go */
    if (rc == 0 && r->rank == 0) {
        fprintf(g->out, "rs_destroy_s=%.4f\n", bm_slowest(g));
        pthread_mutex_lock(&g->mu);
        c = g->comm;
        g->comm = NULL;
        pthread_mutex_unlock(&g->mu);
        comm_close(c);
    }
    return rc ? rc : bm_meet(g);
}

/* The same library called directly: blocking communicators of its own, one per rank's thread
 * (ncclCommInitRank), the same first all-reduce, the same messages, finalize and destroy. */
static int bm_plain(struct bm_rank *r) {
    struct bm_group *g = r->g;
    const struct bm_nccl *nc = &g->nccl;
    int rc = 0, e;
    if (r->rank == 0) {
        bm_stage(g, "plain NCCL init");
        g->t0_ns = mono_now_ns();
        if ((e = nc->get_unique_id(&g->id)) != BM_NCCL_SUCCESS)
            return bm_fail(g, 0, "ncclGetUniqueId: %s", nc->get_error_string(e));
    }
    if (bm_meet(g) != 0)
        return -1;
    e = nc->init_rank(&r->nc, (int)g->o->n, g->id, (int)r->rank);
    if (e != BM_NCCL_SUCCESS)
        return bm_fail(g, r->rank, "ncclCommInitRank: %s", nc->get_error_string(e));
    rc = bm_nccl_reduce(r, r->buf, 1);
    rc = rc ? rc : bm_gpu(r, rs_gpu_stream_sync(r->stream), "synchronize");
    g->sec[r->rank] = bm_since(g->t0_ns);
    rc = rc ? rc : bm_meet(g);
    if (rc == 0 && r->rank == 0)
        fprintf(g->out, "nccl_init_s=%.4f\n", bm_slowest(g));
    rc = rc ? rc : bm_meet(g);
    if (r->rank == 0)
        bm_stage(g, "plain NCCL all-reduce");
    rc = rc ? rc : bm_check(r, bm_nccl_reduce, "nccl");
    rc = rc ? rc : bm_sizes_run(r, bm_nccl_reduce, "nccl");
    rc = rc ? rc : bm_held_run(r, bm_nccl_reduce, "nccl");
    if (rc != 0)
        return rc;

    if (r->rank == 0)
        bm_stage(g, "plain NCCL destroy");
    rc = bm_meet(g);
    uint64_t t0 = mono_now_ns();
    e = rc == 0 && nc->finalize ? nc->finalize(r->nc) : BM_NCCL_SUCCESS;
    if (e != BM_NCCL_SUCCESS)
        return bm_fail(g, r->rank, "ncclCommFinalize: %s", nc->get_error_string(e));
    e = rc == 0 ? nc->destroy(r->nc) : BM_NCCL_SUCCESS;
    r->nc = NULL;
    if (e != BM_NCCL_SUCCESS)
        return bm_fail(g, r->rank, "ncclCommDestroy: %s", nc->get_error_string(e));
    g->sec[r->rank] = bm_since(t0);
    rc = rc ? rc : bm_meet(g);
    if (rc == 0 && r->rank == 0)
        fprintf(g->out, "nccl_destroy_s=%.4f\n", bm_slowest(g));
    return rc ? rc : bm_meet(g);
}

static void *bm_rank_main(void *arg) {
    struct bm_rank *r = arg;
    struct bm_group *g = r->g;
    int rc = bm_setup(r);
    rc = rc ? rc : bm_meet(g);
    rc = rc ? rc : bm_rs(r);
    rc = rc ? rc : bm_plain(r);
    bm_teardown(r);
    pthread_mutex_lock(&g->mu);
    g->done++;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* ---- the program ---- */

static int bm_usage(void) {
    fprintf(stderr,
            "usage: bench_multi [--quick] [--devices 0,1,...] [--comm-lib PATH] "
            "[--peer-max BYTES] [--timeout SECONDS]\n"
            "  --devices   the GPUs, one rank each (default: all)\n"
            "  --comm-lib  the NCCL (RCCL) library (default: " BM_DEFAULT_LIB ")\n"
            "  --peer-max  all-reduces up to this size through peer memory (default: "
            "%u; 0: all through the library)\n"
            "  --quick     fewer repetitions and steps\n"
            "  --timeout   give up after this long (default: 300)\n",
            COMM_PEER_MAX_BYTES_DEFAULT);
    return 2;
}

static int bm_parse_devices(struct bm_opts *o, const char *s) {
    o->n = 0;
    while (*s) {
        char *end;
        long d = strtol(s, &end, 10);
        if (end == s || d < 0 || d > 1023 || (*end && *end != ',') || o->n == COMM_MAX_RANKS)
            return -1;
        for (unsigned k = 0; k < o->n; k++)
            if (o->dev[k] == (int)d)
                return -1;
        o->dev[o->n++] = (int)d;
        s = *end ? end + 1 : end;
    }
    return o->n > 0 ? 0 : -1;
}

static int bm_parse(int argc, char **argv, struct bm_opts *o) {
    *o = (struct bm_opts){.timeout_s = BM_TIMEOUT_S, .peer_max = COMM_PEER_MAX_BYTES_DEFAULT};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            o->quick = true;
        else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
            if (bm_parse_devices(o, argv[++i]) != 0) {
                fprintf(stderr, "bench_multi: --devices wants distinct indices: 0,1\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--comm-lib") == 0 && i + 1 < argc)
            o->lib = argv[++i];
        else if (strcmp(argv[i], "--peer-max") == 0 && i + 1 < argc) {
            char *end;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || end == argv[i] || v > (1ull << 30)) {
                fprintf(stderr, "bench_multi: --peer-max wants bytes, 0 to 1073741824\n");
                return 2;
            }
            o->peer_max = (size_t)v;
        } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            o->timeout_s = (unsigned)strtoul(argv[++i], NULL, 10);
        else
            return bm_usage();
    }
    return o->timeout_s > 0 ? 0 : bm_usage();
}

/* Every device exists; all of them when none were named. */
static int bm_devices(struct bm_opts *o, FILE *out) {
    int count = 0, e = rs_gpu_device_count(&count);
    if (e != 0 || count < 1) {
        fprintf(stderr, "bench_multi: no GPU: %s\n", e ? rs_gpu_err_string(e) : "none found");
        return -1;
    }
    if (o->n == 0)
        for (int d = 0; d < count && o->n < COMM_MAX_RANKS; d++)
            o->dev[o->n++] = d;
    for (unsigned k = 0; k < o->n; k++) {
        struct rs_gpu_device info;
        if (o->dev[k] >= count || rs_gpu_device_get(o->dev[k], &info) != 0) {
            fprintf(stderr, "bench_multi: no device %d (%d found)\n", o->dev[k], count);
            return -1;
        }
        if (k == 0)
            fprintf(out, "rs_device=%s\nrs_arch=%s\n", info.name, info.arch);
        fprintf(out, "# rank %u: device %d, %s (%s, %s)\n", k, o->dev[k], info.name, info.arch,
                info.pci_bus_id);
    }
    fprintf(out, "rs_world=%u\n", o->n);
    return 0;
}

/* Wait for the ranks; past the timeout, say where they were and end the process (a rank
 * stuck inside a blocking library call cannot be joined). */
static void bm_watch(struct bm_group *g) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)g->o->timeout_s;
    pthread_mutex_lock(&g->mu);
    int e = 0;
    while (g->done < g->o->n && e != ETIMEDOUT)
        e = pthread_cond_timedwait(&g->cv, &g->mu, &until);
    if (g->done < g->o->n) {
        fprintf(stderr, "bench_multi: no result after %u s (in: %s); giving up\n", g->o->timeout_s,
                g->stage);
        fflush(g->out);
        _exit(1);
    }
    pthread_mutex_unlock(&g->mu);
}

int main(int argc, char **argv) {
    struct bm_opts o;
    int rc = bm_parse(argc, argv, &o);
    if (rc != 0)
        return rc;
    /* the results on a copy of stdout; the libraries' prints go to stderr */
    fflush(stdout);
    int fd = dup(1);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!out || dup2(2, 1) < 0) {
        perror("bench_multi: stdout");
        return 1;
    }
    setvbuf(out, NULL, _IOLBF, 0);
    struct bm_group g = {.o = &o, .out = out, .stage = "setup"};
    if (bm_devices(&o, out) != 0)
        return 1;
    const char *lib = o.lib ? o.lib : BM_DEFAULT_LIB;
    if (bm_nccl_load(&g.nccl, lib) != 0)
        return 1;
    fprintf(out, "rs_comm_lib=%s\nnccl_version=%s\n", lib, g.nccl.version);
    fprintf(out, "# quick=%d sync_every=%d warm_steps=%d\n", o.quick, BM_SYNC_EVERY, BM_WARM_STEPS);

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g.mu, NULL);
    if (rs_gpu_host_alloc((void **)&g.hold, sizeof(uint32_t)) != 0) {
        fprintf(stderr, "bench_multi: no mapped host memory\n");
        return 1;
    }
    struct bm_rank rk[COMM_MAX_RANKS];
    pthread_t th[COMM_MAX_RANKS];
    unsigned started = 0;
    for (unsigned k = 0; k < o.n; k++) {
        rk[k] = (struct bm_rank){.g = &g, .rank = k, .dev = o.dev[k]};
        if (pthread_create(&th[k], NULL, bm_rank_main, &rk[k]) != 0) {
            bm_fail(&g, k, "cannot start its thread");
            pthread_mutex_lock(&g.mu);
            g.done += o.n - k; /* never started */
            pthread_mutex_unlock(&g.mu);
            break;
        }
        started++;
    }
    bm_watch(&g);
    for (unsigned k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    if (g.comm)
        comm_close(g.comm);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
    fclose(out);
    return g.failed ? 1 : 0;
}
