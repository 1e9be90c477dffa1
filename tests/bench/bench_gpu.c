/* Benchmark (not a test) of the GPU kernels on one device, printing key=value lines that
 * scripts/gpu-bench.sh sets beside PyTorch's numbers from the same run: VPOC over 2520 sessions
 * x 1380 bars (the batched kernel, both profiles, and the training loop's chunked path with the
 * packed and the dense kernel, each checked against the CPU reference, in several rounds), MLP
 * training steps/s, device copy bandwidth and an empty synchronize. */
#include "backend/compute/compute.h"
#include "backend/core/mono.h"
#include "backend/core/rng.h"
#include "backend/memory/mem_conf.h"
#include "backend/mlp/mlp.h"
#include "backend/vpoc/vpoc.h"
#include "backend/vpoc/vpoc_pack.h"
#include "kernels/rs_gpu.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BG_SESSIONS    2520
#define BG_BARS        1380
#define BG_TICK        0.25
#define BG_VPOC_REPS   50
#define BG_SYNC_EVERY  200 /* MLP steps between synchronizes, as a metrics interval */
#define BG_SYNC_REPS   2000
#define BG_COPY_FLOATS ((size_t)1 << 28)
#define BG_ROUNDS      5   /* VPOC rounds: the table states the spread of the ratios */
#define BG_LOOP_CHUNK  500 /* the training loop's default chunk size */
/* The dense path's chunk: at 500 bars its volume matrix (2520 x 500 bars x 281 levels of 8
 * bytes) would be over COMPUTE_VPOC_DENSE_MAX_BYTES. */
#define BG_DENSE_CHUNK 125

struct bg_opts {
    bool quick;
    int device;
    const char *only;              /* NULL: every section; else one of vpoc, mlp, sync, copies */
    int mlp_h1, mlp_h2, mlp_batch; /* mlp_batch > 0: that MLP shape alone (untimed and timed) */
};

/* Whether the run includes section name. */
static bool bg_want(const struct bg_opts *o, const char *name) {
    return !o->only || strcmp(o->only, name) == 0;
}

/* Sessions whose VPOC result differed from the CPU reference, over every check of the run: the
 * figures are still printed (the table judges them), and the exit status says so. */
static size_t bg_mismatches;

static int bg_check(int e, const char *what) {
    if (e != 0)
        fprintf(stderr, "bench_gpu: %s: %s (%s)\n", what, rs_gpu_err_name(e), rs_gpu_err_string(e));
    return e;
}

/* A gate held shut on a stream (the hang kernel, spinning on a mapped flag): the launches queued
 * behind it while it is shut run back to back once it opens, at the device's pace alone. A pass
 * of several launches takes the host about as long to enqueue as the device takes to run it, so
 * without the gate a hiccup of the host's would count as device time. */
#define BG_GATE_LIMIT_NS 2000000000ull /* the queueing behind it must be done by then */

struct bg_gate {
    uint32_t *mem; /* mapped host memory: [0] the flag, [1] the kernel's status (1: opened) */
};

/* Shut a new gate on stream. 0 or a runtime error (on stderr); g->mem is set once allocated,
 * and then wants bg_gate_open and bg_gate_free whatever the rest did. */
static int bg_gate_shut(struct bg_gate *g, void *stream) {
    int e = rs_gpu_host_alloc((void **)&g->mem, 2 * sizeof(uint32_t));
    if (e == 0) {
        g->mem[0] = 0;
        e = rs_gpu_hang(&g->mem[0], BG_GATE_LIMIT_NS, &g->mem[1], stream);
    } else {
        g->mem = NULL;
    }
    return bg_check(e, "gate");
}

static void bg_gate_open(struct bg_gate *g) {
    __atomic_store_n(&g->mem[0], 1, __ATOMIC_RELEASE);
}

/* After the stream's sync: whether the gate opened when told. If it gave up first, the launches
 * behind it ran as the host queued them, and their time is no measurement. */
#define BG_GATE_GAVE_UP "the gate gave up before the timed launches were queued"
static bool bg_gate_opened(const struct bg_gate *g) {
    return __atomic_load_n(&g->mem[1], __ATOMIC_ACQUIRE) == 1;
}

static void bg_gate_free(struct bg_gate *g) {
    if (g->mem)
        rs_gpu_host_free(g->mem);
    g->mem = NULL;
}

static double bg_gauss(uint64_t *s) {
    double u = ((double)(rng_splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
    double v = ((double)(rng_splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* The reference workload: per session a random walk from 4000 in steps of N(0, 0.5), rounded
 * to the tick, volumes 1..1999; high and low a few ticks around the close. */
static void bg_make_bars(struct vpoc_bar *bars, int64_t *first) {
    uint64_t s = 42;
    for (size_t k = 0; k < BG_SESSIONS; k++) {
        double p = 4000;
        first[k] = (int64_t)(k * BG_BARS);
        for (size_t i = 0; i < BG_BARS; i++) {
            p += bg_gauss(&s) * 0.5;
            double c = fmax(round(fmax(p, 1.0) / BG_TICK) * BG_TICK, BG_TICK);
            struct vpoc_bar *b = &bars[k * BG_BARS + i];
            b->close = c;
            b->high = c + BG_TICK * (double)(rng_splitmix64(&s) % 5);
            b->low = fmax(c - BG_TICK * (double)(rng_splitmix64(&s) % 5), BG_TICK);
            b->volume = (double)(1 + rng_splitmix64(&s) % 1999);
        }
    }
    first[BG_SESSIONS] = (int64_t)(BG_SESSIONS * BG_BARS);
}

/* Every session packed (all of the reference workload packs) and on the device in one chunk,
 * as the batched kernel reads it. */
struct bg_packed {
    uint64_t *words;
    int64_t *first;
    struct vpoc_pack_session *sess;
    int max_levels;
    size_t bytes; /* what one launch reads: words, offsets and the session table */
    void *d_words, *d_first, *d_sess;
};

static int bg_pack(const struct vpoc_bar *bars, enum vpoc_profile_kind kind, void *stream,
                   struct bg_packed *pk) {
    struct vpoc_params p = {kind, BG_TICK, 0.70};
    size_t nw = (size_t)BG_SESSIONS * BG_BARS;
    memset(pk, 0, sizeof(*pk));
    pk->words = malloc(nw * sizeof(*pk->words));
    pk->first = malloc((BG_SESSIONS + 1) * sizeof(*pk->first));
    pk->sess = calloc(BG_SESSIONS, sizeof(*pk->sess));
    if (!pk->words || !pk->first || !pk->sess)
        return -1;
    for (size_t k = 0; k < BG_SESSIONS; k++) {
        pk->first[k] = (int64_t)(k * BG_BARS);
        if (vpoc_pack_session(bars + k * BG_BARS, BG_BARS, &p, pk->words + k * BG_BARS,
                              &pk->sess[k]) != 0) {
            fprintf(stderr, "bench_gpu: session %zu does not pack\n", k);
            return -1;
        }
        pk->sess[k].acc_off = 0;
        if (pk->sess[k].levels > pk->max_levels)
            pk->max_levels = pk->sess[k].levels;
    }
    pk->first[BG_SESSIONS] = (int64_t)nw;
    size_t wb = nw * sizeof(uint64_t), fb = (BG_SESSIONS + 1) * sizeof(int64_t),
           sb = BG_SESSIONS * sizeof(*pk->sess);
    pk->bytes = wb + fb + sb;
    int e = rs_gpu_malloc(&pk->d_words, wb);
    e = e ? e : rs_gpu_malloc(&pk->d_first, fb);
    e = e ? e : rs_gpu_malloc(&pk->d_sess, sb);
    e = e ? e : rs_gpu_copy_h2d(pk->d_words, pk->words, wb, stream);
    e = e ? e : rs_gpu_copy_h2d(pk->d_first, pk->first, fb, stream);
    e = e ? e : rs_gpu_copy_h2d(pk->d_sess, pk->sess, sb, stream);
    e = e ? e : rs_gpu_stream_sync(stream);
    return bg_check(e, "VPOC upload");
}

static void bg_pack_free(struct bg_packed *pk) {
    rs_gpu_free(pk->d_words);
    rs_gpu_free(pk->d_first);
    rs_gpu_free(pk->d_sess);
    free(pk->words);
    free(pk->first);
    free(pk->sess);
}

/* Sessions whose result differs from the CPU reference. */
static size_t bg_vpoc_bad(const struct vpoc_bar *bars, enum vpoc_profile_kind kind,
                          const struct vpoc_result *got) {
    struct vpoc_params p = {kind, BG_TICK, 0.70};
    size_t bad = 0;
    for (size_t k = 0; k < BG_SESSIONS; k++) {
        struct vpoc_result r;
        vpoc_session(bars + k * BG_BARS, BG_BARS, &p, &r);
        bad += got[k].poc_level != r.poc_level || got[k].vah_level != r.vah_level ||
               got[k].val_level != r.val_level || got[k].total_fix != r.total_fix;
    }
    return bad;
}

/* Milliseconds per launch of the batched kernel (every session whole, one launch); the results
 * are checked against the CPU reference when check is set. */
static int bg_vpoc_batch(const struct vpoc_bar *bars, const struct bg_packed *pk,
                         enum vpoc_profile_kind kind, bool check, void *stream, double *ms) {
    struct rs_gpu_vpoc_result *res = NULL;
    void *e0 = NULL, *e1 = NULL;
    int e = rs_gpu_host_alloc((void **)&res, BG_SESSIONS * sizeof(*res));
#define BG_LAUNCH()                                                                                \
    rs_gpu_vpoc_pass(pk->d_words, pk->d_first, pk->d_sess, BG_SESSIONS, pk->max_levels,            \
                     kind == VPOC_RANGE, NULL, NULL, 0, 1, 1, 0.70, res, stream)
    e = e ? e : rs_gpu_event_create(&e0);
    e = e ? e : rs_gpu_event_create(&e1);
    e = e ? e : BG_LAUNCH();
    e = e ? e : rs_gpu_stream_sync(stream);
    size_t bad = 0;
    if (e == 0 && check) {
        struct vpoc_result *got = calloc(BG_SESSIONS, sizeof(*got));
        for (size_t k = 0; got && k < BG_SESSIONS; k++)
            got[k] = (struct vpoc_result){.poc_level = res[k].status ? -1 : res[k].poc_level,
                                          .vah_level = res[k].vah_level,
                                          .val_level = res[k].val_level,
                                          .total_fix = res[k].total_fix};
        bad = got ? bg_vpoc_bad(bars, kind, got) : BG_SESSIONS;
        bg_mismatches += bad;
        free(got);
        printf("rs_vpoc_%s_mismatched_sessions=%zu\n", kind == VPOC_RANGE ? "range" : "close", bad);
    }
    struct bg_gate gate = {0};
    int gate_rc = e ? 0 : bg_gate_shut(&gate, stream); /* as the loop's path is timed below */
    e = e ? e : gate_rc;
    e = e ? e : rs_gpu_event_record(e0, stream);
    for (int i = 0; e == 0 && i < BG_VPOC_REPS; i++)
        e = BG_LAUNCH();
#undef BG_LAUNCH
    e = e ? e : rs_gpu_event_record(e1, stream);
    if (gate.mem)
        bg_gate_open(&gate);
    e = e ? e : rs_gpu_stream_sync(stream);
    if (e == 0 && !bg_gate_opened(&gate)) {
        fprintf(stderr, "bench_gpu: VPOC batch: %s\n", BG_GATE_GAVE_UP);
        gate_rc = -1;
    }
    float total = 0;
    e = e ? e : rs_gpu_event_elapsed_ms(e0, e1, &total);
    *ms = total / BG_VPOC_REPS;
    rs_gpu_event_destroy(e0);
    rs_gpu_event_destroy(e1);
    rs_gpu_host_free(res);
    bg_gate_free(&gate);
    /* a mismatch is reported, and judged, above */
    return bg_check(e, "VPOC batch") || gate_rc ? -1 : 0;
}

static int bg_copy(void *stream) {
    void *a = NULL, *b = NULL, *e0 = NULL, *e1 = NULL;
    size_t bytes = BG_COPY_FLOATS * sizeof(float);
    int e = rs_gpu_malloc(&a, bytes);
    e = e ? e : rs_gpu_malloc(&b, bytes);
    e = e ? e : rs_gpu_event_create(&e0);
    e = e ? e : rs_gpu_event_create(&e1);
    e = e ? e : rs_gpu_copy_d2d(b, a, bytes, stream); /* warm-up */
    e = e ? e : rs_gpu_event_record(e0, stream);
    for (int i = 0; e == 0 && i < 20; i++)
        e = rs_gpu_copy_d2d(b, a, bytes, stream);
    e = e ? e : rs_gpu_event_record(e1, stream);
    e = e ? e : rs_gpu_stream_sync(stream);
    float ms = 0;
    e = e ? e : rs_gpu_event_elapsed_ms(e0, e1, &ms);
    if (e == 0)
        printf("rs_d2d_copy_TBps=%.3f\n", 2.0 * (double)bytes * 20 / (ms * 1e-3) / 1e12);
    rs_gpu_free(a);
    rs_gpu_free(b);
    rs_gpu_event_destroy(e0);
    rs_gpu_event_destroy(e1);
    return bg_check(e, "device copy");
}

/* The key stem of the loop path with kernel k: rs_vpoc_<stem>_chunk<N>_... ("loop" is the
 * packed kernel's, the training loop's fast path). */
static const char *bg_loop_stem(enum compute_vpoc_kernel k) {
    return k == COMPUTE_VPOC_DENSE ? "dense" : "loop";
}

/* The training loop's path (compute_vpoc_set with `kernel`, chunks of `chunk` bars: one launch
 * a chunk across every session): device milliseconds per pass over BG_VPOC_REPS passes (the
 * packed kernel's queued behind a gate first), and wall milliseconds of a whole pass as the
 * loop waits for it (enqueue, sync, results). With check, the first pass's results and those
 * of the last of the passes queued back to back are checked against the CPU reference and the
 * counts of mismatched sessions printed (and counted in bg_mismatches). 0, or -1 on an error
 * (on stderr). */
static int bg_vpoc_loop(struct compute *c, const struct vpoc_bar *bars,
                        const struct data_sessions *ss, enum compute_vpoc_kernel kernel,
                        size_t chunk, bool check, double *ms, double *wall_ms) {
    struct vpoc_params p = {VPOC_CLOSE, BG_TICK, 0.70};
    struct vpoc_result *res = calloc(BG_SESSIONS, sizeof(*res));
    struct compute_vpoc_set *s = NULL;
    struct compute_event ev[2];
    char err[512] = "";
    int rc =
        res ? compute_vpoc_set_create(c, bars, ss, 0, 1, &p, chunk, kernel, &s, err, sizeof(err))
            : -1;
    rc = rc ? rc : compute_vpoc_set_run(c, s, res, NULL, NULL, err, sizeof(err));
    size_t bad = rc == 0 && check ? bg_vpoc_bad(bars, VPOC_CLOSE, res) : 0;
    bg_mismatches += bad;
    if (rc == 0 && check)
        printf("rs_vpoc_%s_chunk%zu_mismatched_sessions=%zu\n", bg_loop_stem(kernel), chunk, bad);
    /* The packed passes queue behind a gate (the host takes about as long to launch one as the
     * device to run it); the dense path's are not held back: the host keeps well ahead of their
     * milliseconds. */
    struct bg_gate gate = {0};
    int gate_rc = rc == 0 && kernel == COMPUTE_VPOC_PACKED
                      ? bg_gate_shut(&gate, c->ops->native_stream(c))
                      : 0;
    rc = rc ? rc : gate_rc;
    rc = rc ? rc : c->ops->event_record(c, &ev[0]);
    for (int i = 0; rc == 0 && i < BG_VPOC_REPS; i++)
        rc = compute_vpoc_set_enqueue(c, s, NULL, err, sizeof(err));
    rc = rc ? rc : c->ops->event_record(c, &ev[1]);
    if (gate.mem)
        bg_gate_open(&gate);
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM);
    if (rc == 0 && gate.mem && !bg_gate_opened(&gate)) {
        snprintf(err, sizeof(err), "%s", BG_GATE_GAVE_UP);
        rc = -1;
    }
    bg_gate_free(&gate);
    /* The last of those passes, each queued behind the one before, checked as the first was:
     * a pass whose launches overlap the previous pass's must still leave its results alone. */
    rc = rc || !check ? rc : compute_vpoc_set_collect(c, s, res, err, sizeof(err));
    bad = rc == 0 && check ? bg_vpoc_bad(bars, VPOC_CLOSE, res) : 0;
    bg_mismatches += bad;
    if (rc == 0 && check)
        printf("rs_vpoc_%s_chunk%zu_queued_mismatched_sessions=%zu\n", bg_loop_stem(kernel), chunk,
               bad);
    uint64_t a = 0, b = 0;
    rc = rc ? rc : c->ops->event_time_ns(c, &ev[0], &a);
    rc = rc ? rc : c->ops->event_time_ns(c, &ev[1], &b);
    *ms = (double)(b - a) / 1e6 / BG_VPOC_REPS;
    uint64_t t0 = mono_now_ns();
    for (int i = 0; rc == 0 && i < BG_VPOC_REPS; i++)
        rc = compute_vpoc_set_run(c, s, res, NULL, NULL, err, sizeof(err));
    *wall_ms = (double)(mono_now_ns() - t0) / 1e6 / BG_VPOC_REPS;
    if (rc != 0)
        fprintf(stderr, "bench_gpu: VPOC loop path (%s kernel): %s\n",
                compute_vpoc_kernel_name(kernel), err[0] ? err : "out of memory");
    compute_vpoc_set_destroy(c, s);
    free(res);
    return rc ? -1 : 0;
}

static int bg_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* key=median and key_runs=r1,r2,... (in run order). */
static void bg_print_runs(const char *key, const double *v, int n) {
    double s[BG_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof(*v));
    qsort(s, (size_t)n, sizeof(*s), bg_cmp_double);
    printf("%s=%.4f\n%s_runs=", key, s[n / 2], key);
    for (int i = 0; i < n; i++)
        printf("%s%.4f", i ? "," : "", v[i]);
    printf("\n");
}

/* Every VPOC figure: BG_ROUNDS rounds, each of the batched kernel, the loop's path with the
 * packed kernel and the same with the dense one (close profile, as the PyTorch forms compute),
 * the range profile once, the copy ceiling. Returns the failure of any but the dense path; that
 * one's goes into *dense_rc (0 or -1) and only leaves the dense keys out. */
static int bg_vpoc(struct compute *c, const struct vpoc_bar *bars, const struct data_sessions *ss,
                   int *dense_rc) {
    void *stream = NULL;
    struct bg_packed close = {0}, range = {0};
    int e = rs_gpu_stream_create(&stream);
    int rc = bg_check(e, "stream");
    rc = rc ? rc : bg_pack(bars, VPOC_CLOSE, stream, &close);
    rc = rc ? rc : bg_pack(bars, VPOC_RANGE, stream, &range);
    double batch[BG_ROUNDS], loop[BG_ROUNDS], wall[BG_ROUNDS], ms = 0;
    double dense[BG_ROUNDS], dense_wall[BG_ROUNDS];
    *dense_rc = 0;
    for (int r = 0; rc == 0 && r < BG_ROUNDS; r++) {
        rc = bg_vpoc_batch(bars, &close, VPOC_CLOSE, r == 0, stream, &batch[r]);
        rc = rc ? rc
                : bg_vpoc_loop(c, bars, ss, COMPUTE_VPOC_PACKED, BG_LOOP_CHUNK, r == 0, &loop[r],
                               &wall[r]);
        if (rc == 0 && *dense_rc == 0)
            *dense_rc = bg_vpoc_loop(c, bars, ss, COMPUTE_VPOC_DENSE, BG_DENSE_CHUNK, r == 0,
                                     &dense[r], &dense_wall[r]);
    }
    if (rc == 0) {
        bg_print_runs("rs_vpoc_close_ms", batch, BG_ROUNDS);
        printf("rs_vpoc_close_bytes=%zu\n", close.bytes);
        bg_print_runs("rs_vpoc_loop_chunk500_ms", loop, BG_ROUNDS);
        bg_print_runs("rs_vpoc_loop_chunk500_wall_ms", wall, BG_ROUNDS);
    }
    if (rc == 0 && *dense_rc == 0) {
        bg_print_runs("rs_vpoc_dense_chunk125_ms", dense, BG_ROUNDS);
        bg_print_runs("rs_vpoc_dense_chunk125_wall_ms", dense_wall, BG_ROUNDS);
    }
    if (rc == 0 && (rc = bg_vpoc_batch(bars, &range, VPOC_RANGE, true, stream, &ms)) == 0)
        printf("rs_vpoc_range_ms=%.4f\nrs_vpoc_range_bytes=%zu\n", ms, range.bytes);
    if (rc == 0)
        rc = bg_copy(stream);
    bg_pack_free(&close);
    bg_pack_free(&range);
    if (stream)
        rs_gpu_stream_destroy(stream);
    return rc;
}

/* Training steps per second on a device-resident batch: forward, loss, backward, Adam, with a
 * synchronize every BG_SYNC_EVERY steps (loss values read back then), optionally with the five
 * timing events per step the training loop records. */
static int bg_mlp(struct compute *c, int h1, int h2, size_t batch, bool timed, int steps) {
    const struct compute_ops *ops = c->ops;
    struct mlp_arch a = {
        .n_in = 24, .n_hidden = 2, .hidden = {h1, h2}, .act = MLP_ACT_SILU, .loss = MLP_LOSS_MSE};
    size_t np = mlp_param_count(&a);
    double *params = malloc(np * sizeof(double)), *xh = malloc(batch * 24 * sizeof(double)),
           *yh = malloc(batch * sizeof(double)), *loss = calloc(BG_SYNC_EVERY, sizeof(double));
    struct compute_event *ev = calloc(5 * BG_SYNC_EVERY, sizeof(*ev));
    uint64_t s = 7;
    for (size_t i = 0; i < batch * 24; i++)
        xh[i] = bg_gauss(&s);
    for (size_t i = 0; i < batch; i++)
        yh[i] = bg_gauss(&s);
    mlp_init_params(&a, 1, params);
    struct compute_mlp_init init = {.arch = a, .params = params, .max_rows = batch};
    mlp_adam_conf_default(&init.adam);
    struct compute_mlp *m = NULL;
    void *x = NULL, *y = NULL;
    char err[256];
    int rc = compute_alloc(c, batch * 24 * ops->elem_bytes, &x, err, sizeof(err));
    rc = rc ? rc : compute_alloc(c, batch * ops->elem_bytes, &y, err, sizeof(err));
    rc = rc ? rc : ops->upload_f64(c, x, xh, batch * 24);
    rc = rc ? rc : ops->upload_f64(c, y, yh, batch);
    rc = rc ? rc : ops->mlp_create(c, &init, &m);
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM);
    uint64_t t0 = 0, phase_ns[3] = {0}; /* forward + loss, backward, optimizer */
    for (int i = 0; rc == 0 && i < steps + BG_SYNC_EVERY; i++) {
        if (i == BG_SYNC_EVERY) /* the first interval warms up */
            t0 = mono_now_ns();
        struct compute_event *e = &ev[5 * (i % BG_SYNC_EVERY)];
        rc = timed ? ops->event_record(c, &e[0]) : 0;
        rc = rc ? rc : timed ? ops->event_record(c, &e[1]) : 0;
        rc = rc ? rc : ops->mlp_forward(c, m, x, batch);
        rc = rc ? rc : ops->mlp_loss(c, m, y, batch, &loss[i % BG_SYNC_EVERY]);
        rc = rc ? rc : timed ? ops->event_record(c, &e[2]) : 0;
        rc = rc ? rc : ops->mlp_backward(c, m, x, y, batch);
        rc = rc ? rc : timed ? ops->event_record(c, &e[3]) : 0;
        rc = rc ? rc : ops->mlp_optimizer(c, m);
        rc = rc ? rc : timed ? ops->event_record(c, &e[4]) : 0;
        if (rc == 0 && (i + 1) % BG_SYNC_EVERY == 0)
            rc = compute_sync(c, SYNC_OP_STREAM);
        for (int k = 0;
             timed && rc == 0 && i >= BG_SYNC_EVERY && k < 3 && (i + 1) % BG_SYNC_EVERY == 0; k++)
            for (int j = 0; j < BG_SYNC_EVERY; j++)
                phase_ns[k] += ev[5 * j + k + 2].t_ns - ev[5 * j + k + 1].t_ns;
    }
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM); /* the losses land before they are freed */
    double sec = (double)(mono_now_ns() - t0) / 1e9;
    if (rc == 0)
        printf("rs_mlp_%ssteps_per_s_h%d_%d_b%zu=%.0f\n", timed ? "timed_" : "", h1, h2, batch,
               steps / sec);
    else
        fprintf(stderr, "bench_gpu: MLP: %s\n", ops->strerror(rc));
    if (rc == 0 && timed)
        printf("rs_mlp_device_us_forward_loss_h%d_%d_b%zu=%.2f\n"
               "rs_mlp_device_us_backward_h%d_%d_b%zu=%.2f\n"
               "rs_mlp_device_us_optimizer_h%d_%d_b%zu=%.2f\n",
               h1, h2, batch, (double)phase_ns[0] / 1e3 / steps, h1, h2, batch,
               (double)phase_ns[1] / 1e3 / steps, h1, h2, batch, (double)phase_ns[2] / 1e3 / steps);
    if (m)
        ops->mlp_destroy(c, m);
    compute_free(c, x);
    compute_free(c, y);
    free(params);
    free(xh);
    free(yh);
    free(loss);
    free(ev);
    return rc;
}

/* The doctor's copy figures, measured as it measures them (256 MiB, one asynchronous copy,
 * the best and the worst of 5, from pinned and from pageable host memory, each way), for the
 * table to set beside PyTorch's copies of the same size. */
static int bg_host_copies(struct compute *c) {
    static const char *const mem[2] = {"pageable", "pinned"};
    static const char *const way[2] = {"d2h", "h2d"};
    int rc = 0;
    for (int p = 1; rc == 0 && p >= 0; p--)
        for (int h = 1; rc == 0 && h >= 0; h--) {
            struct compute_copy_rate r = {0};
            rc = c->ops->copy_rate(c, (size_t)256 << 20, p, h, 5, &r);
            if (rc == 0)
                printf("rs_copy_%s_%s_GBps=%.2f\nrs_copy_%s_%s_worst_GBps=%.2f\n", way[h], mem[p],
                       r.best_gbs, way[h], mem[p], r.worst_gbs);
            else
                fprintf(stderr, "bench_gpu: %s %s copy: %s\n", mem[p], way[h],
                        c->ops->strerror(rc));
        }
    return rc;
}

static int bg_sync(struct compute *c) {
    uint64_t t0 = mono_now_ns();
    int rc = 0;
    for (int i = 0; rc == 0 && i < BG_SYNC_REPS; i++)
        rc = compute_sync(c, SYNC_OP_STREAM);
    if (rc == 0)
        printf("rs_empty_sync_us=%.2f\n", (double)(mono_now_ns() - t0) / 1e3 / BG_SYNC_REPS);
    return rc;
}

int main(int argc, char **argv) {
    static const char *const sections[] = {"vpoc", "mlp", "sync", "copies"};
    struct bg_opts o = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            o.quick = true;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            o.device = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            o.only = argv[++i];
        else if (strcmp(argv[i], "--mlp") == 0 && i + 1 < argc &&
                 sscanf(argv[i + 1], "%d,%d,%d", &o.mlp_h1, &o.mlp_h2, &o.mlp_batch) == 3 &&
                 o.mlp_h1 > 0 && o.mlp_h2 > 0 && o.mlp_batch > 0)
            i++;
        else {
            fprintf(stderr, "usage: bench_gpu [--quick] [--device N] [--only vpoc|mlp|sync|copies] "
                            "[--mlp H1,H2,BATCH]\n");
            return 2;
        }
    }
    bool known = !o.only;
    for (size_t k = 0; k < sizeof(sections) / sizeof(sections[0]); k++)
        known |= o.only && strcmp(o.only, sections[k]) == 0;
    if (!known) {
        fprintf(stderr, "bench_gpu: --only %s: not a section (vpoc, mlp, sync, copies)\n", o.only);
        return 2;
    }
    struct compute_conf cc = {.device = o.device, .threads = 1};
    mem_conf_default(&cc.alloc);
    struct compute *c = NULL;
    char notice[512], err[512];
    if (compute_open("hip", &cc, &c, notice, sizeof(notice), err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_gpu: %s\n", err);
        return 1;
    }
    printf("rs_device=%s\nrs_arch=%s\n", c->info.name, c->info.arch);
    /* dense_rc: the dense loop path's failure, which fails the run but stops no section */
    int steps = o.quick ? 2000 : 10000, rc = 0, dense_rc = 0;
    if (bg_want(&o, "vpoc")) { /* one data set for every VPOC measurement */
        struct vpoc_bar *bars = malloc(BG_SESSIONS * BG_BARS * sizeof(*bars));
        int64_t *first = malloc((BG_SESSIONS + 1) * sizeof(*first));
        struct data_sessions ss = {calloc(BG_SESSIONS, sizeof(*ss.s)), BG_SESSIONS};
        rc = bars && first && ss.s ? 0 : -1;
        if (rc == 0)
            bg_make_bars(bars, first);
        for (size_t k = 0; rc == 0 && k < BG_SESSIONS; k++)
            ss.s[k] = (struct data_session){.first = (size_t)first[k], .n = BG_BARS};
        rc = rc ? rc : bg_vpoc(c, bars, &ss, &dense_rc);
        free(ss.s);
        free(first);
        free(bars);
    }
    if (bg_want(&o, "mlp") && o.mlp_batch > 0) {
        int n = o.mlp_batch > 1024 ? steps / 4 : steps;
        rc = rc ? rc : bg_mlp(c, o.mlp_h1, o.mlp_h2, (size_t)o.mlp_batch, false, n);
        rc = rc ? rc : bg_mlp(c, o.mlp_h1, o.mlp_h2, (size_t)o.mlp_batch, true, n);
    } else if (bg_want(&o, "mlp")) {
        rc = rc ? rc : bg_mlp(c, 32, 16, 256, false, steps);
        rc = rc ? rc : bg_mlp(c, 32, 16, 256, true, steps);
        rc = rc ? rc : bg_mlp(c, 32, 16, 4096, false, steps / 4);
        rc = rc ? rc : bg_mlp(c, 128, 64, 256, false, steps);
        rc = rc ? rc : bg_mlp(c, 128, 64, 4096, false, steps / 4);
        rc = rc ? rc : bg_mlp(c, 128, 64, 4096, true, steps / 4);
    }
    if (bg_want(&o, "sync"))
        rc = rc ? rc : bg_sync(c);
    if (bg_want(&o, "copies"))
        rc = rc ? rc : bg_host_copies(c);
    compute_close(c);
    if (bg_mismatches > 0)
        fprintf(stderr, "bench_gpu: %zu VPOC results differ from the CPU reference\n",
                bg_mismatches);
    return rc == 0 && dense_rc == 0 && bg_mismatches == 0 ? 0 : 1;
}
