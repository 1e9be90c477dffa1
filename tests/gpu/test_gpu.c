/* The HIP backend on a real device against the CPU reference: VPOC through the compute
 * interface, one session at a time and all at once in packed passes (exact), MLP gradients, losses
 * and training (fp32 against fp64, to tolerance), the caching allocator on device memory, the hang
 * kernel, traced synchronizes, the memory probe, and a second device driven from a thread other
 * than the one that opened it. Without a device every test is skipped with the backend's message;
 * RINGSIDE_GPU_TESTS_REQUIRE_DEVICE=1 (as on a GPU machine) makes that a failure. */
#include "backend/compute/compute.h"
#include "backend/core/evring.h"
#include "backend/core/mono.h"
#include "backend/core/rng.h"
#include "backend/memory/mem_pool.h"
#include "backend/mlp/mlp.h"
#include "backend/trace/trace.h"
#include "backend/vpoc/vpoc.h"
#include "kernels/rs_gpu.h"
#include "tests/gpu/gpu_fixtures.h"
#include "tests/support/vpoc_set_check.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct rs_gpu_bar) == sizeof(struct vpoc_bar), "bar layouts differ");

/* Tests wait for each other's lock (gpu_fixtures.c): the limit covers one test and its wait. */
TestSuite(gpu, .timeout = 180);

static const char *tg_profile_name(enum vpoc_profile_kind k) {
    return k == VPOC_CLOSE ? "close" : "range";
}

static void tg_vpoc_expect(const struct vpoc_result *got, const struct vpoc_result *want,
                           const char *what) {
    cr_assert_eq(got->poc_level, want->poc_level, "%s: POC level %lld, CPU reference %lld", what,
                 (long long)got->poc_level, (long long)want->poc_level);
    cr_assert_eq(got->vah_level, want->vah_level, "%s: VAH level %lld, CPU reference %lld", what,
                 (long long)got->vah_level, (long long)want->vah_level);
    cr_assert_eq(got->val_level, want->val_level, "%s: VAL level %lld, CPU reference %lld", what,
                 (long long)got->val_level, (long long)want->val_level);
    cr_assert_eq(got->total_fix, want->total_fix, "%s: total %lld, CPU reference %lld", what,
                 (long long)got->total_fix, (long long)want->total_fix);
}

/* ---- 1. VPOC through the compute interface ---- */

/* Chunk 1 is one upload and one launch per bar (1380 a session): only the first sessions of
 * each data set take it, which keeps the suite to seconds and still crosses session edges. */
#define TG_CHUNK1_SESSIONS 5
#define TG_MAX_TIMED       8 /* sessions of at most this many chunks also check event times */

/* One session on the hip backend against the reference; sessions of few chunks also get
 * events, whose times must be readable after the session's sync and in stream order. */
static void tg_vpoc_one(struct compute *c, const struct tg_data *d, size_t k,
                        const struct vpoc_params *p, size_t chunk, const struct vpoc_result *want) {
    const struct data_session *s = &d->ss.s[k];
    size_t n_chunks = (s->n + chunk - 1) / chunk;
    bool timed = n_chunks <= TG_MAX_TIMED;
    struct compute_event ev[TG_MAX_TIMED + 1];
    memset(ev, 0, sizeof(ev));
    char what[256], err[512] = "";
    snprintf(what, sizeof(what), "%d days (seed %llu), session %zu (%s, %zu bars), chunk %zu, %s",
             d->days, (unsigned long long)d->seed, k, s->label, s->n, chunk,
             tg_profile_name(p->profile));
    struct vpoc_result got = {INT64_MIN, INT64_MIN, INT64_MIN, NAN, NAN, NAN, INT64_MIN};
    int rc = compute_vpoc_session(c, d->bars + s->first, s->n, p, chunk, &got, timed ? ev : NULL,
                                  NULL, err, sizeof(err));
    cr_assert_eq(rc, 0, "%s: compute_vpoc_session: %s", what, err);
    tg_vpoc_expect(&got, want, what);
    cr_assert_eq(got.poc, (double)want->poc_level * p->tick, "%s: POC price %.17g", what, got.poc);
    uint64_t prev = 0;
    for (size_t i = 0; timed && i <= n_chunks; i++) {
        uint64_t t = 0;
        rc = c->ops->event_time_ns(c, &ev[i], &t);
        cr_assert_eq(rc, 0, "%s: event %zu of %zu has no time after the session's sync (%d)", what,
                     i, n_chunks + 1, rc);
        cr_assert_geq(t, prev, "%s: event %zu at %llu ns, before event %zu at %llu ns", what, i,
                      (unsigned long long)t, i - 1, (unsigned long long)prev);
        prev = t;
    }
}

/* Every session of one synthetic set, chunks {1, 500, whole session} x both profiles. */
static void tg_vpoc_dataset(int days, uint64_t seed) {
    struct tg_data d;
    tg_data_make(&d, days, seed);
    struct compute *c = tg_open_hip(NULL);
    static const size_t chunks[] = {1, 500, 0}; /* 0: the whole session in one chunk */
    static const enum vpoc_profile_kind kinds[] = {VPOC_CLOSE, VPOC_RANGE};
    size_t checked = 0;
    for (size_t pk = 0; pk < 2; pk++) {
        struct vpoc_params p = {kinds[pk], TG_TICK, TG_VALUE_AREA};
        for (size_t k = 0; k < d.ss.n; k++) {
            const struct data_session *s = &d.ss.s[k];
            if (s->n == 0)
                continue;
            struct vpoc_result want;
            cr_assert_eq(vpoc_session(d.bars + s->first, s->n, &p, &want), 0);
            for (size_t ci = 0; ci < sizeof(chunks) / sizeof(chunks[0]); ci++) {
                if (chunks[ci] == 1 && k >= TG_CHUNK1_SESSIONS)
                    continue;
                tg_vpoc_one(c, &d, k, &p, chunks[ci] ? chunks[ci] : s->n, &want);
                checked++;
            }
        }
    }
    cr_assert_geq(checked, 2 * (2 * (size_t)days + TG_CHUNK1_SESSIONS));
    struct mem_stats st;
    mem_pool_stats(c->pool, &st);
    cr_assert_eq(st.allocated_bytes, 0, "%llu bytes of chunk buffers still allocated",
                 (unsigned long long)st.allocated_bytes);
    compute_close(c);
    tg_data_fini(&d);
}

Test(gpu, vpoc_matches_cpu_5_days) {
    tg_vpoc_dataset(5, 101);
}

Test(gpu, vpoc_matches_cpu_20_days) {
    tg_vpoc_dataset(20, 202);
}

Test(gpu, vpoc_matches_cpu_60_days) {
    tg_vpoc_dataset(60, 303);
}

/* ---- 2. the whole-data-set path: every session at once, chunk by chunk, with the packed
 * kernel and the dense one ---- */

Test(gpu, vpoc_set_passes_both_kernels) {
    struct compute *c = tg_open_hip(NULL);
    vsc_check_all(c, 20, 404);
    TG_GPU(rs_gpu_last_error());
    compute_close(c);
}

/* ---- 3. and 4. the MLP ---- */

static struct mlp_arch tg_arch(int h0, int h1, enum mlp_act act, enum mlp_loss loss) {
    struct mlp_arch a = {.n_in = 24, .n_hidden = h1 ? 2 : 1, .act = act, .loss = loss};
    a.hidden[0] = h0;
    a.hidden[1] = h1;
    return a;
}

/* Initial parameters as mlp_init_params makes them, rounded to float (what the fp32 backend
 * holds), so both backends start from the same numbers. */
static double *tg_params(const struct mlp_arch *a, uint64_t seed) {
    size_t n = mlp_param_count(a);
    double *p = malloc(n * sizeof(*p));
    cr_assert_not_null(p);
    mlp_init_params(a, seed, p);
    for (size_t i = 0; i < n; i++)
        p[i] = (double)(float)p[i];
    return p;
}

/* rows samples: x uniform in [-2, 2), y uniform in [-1, 1) (MSE) or 0/1 (BCE), floats. */
static void tg_samples(const struct mlp_arch *a, size_t rows, uint64_t seed, double **x,
                       double **y) {
    uint64_t s = seed;
    *x = malloc(rows * (size_t)a->n_in * sizeof(**x));
    *y = malloc(rows * sizeof(**y));
    cr_assert(*x && *y);
    for (size_t i = 0; i < rows * (size_t)a->n_in; i++)
        (*x)[i] = tg_uniform_f32(&s, -2.0, 2.0);
    for (size_t r = 0; r < rows; r++)
        (*y)[r] = a->loss == MLP_LOSS_BCE ? (double)(rng_splitmix64(&s) >> 63)
                                          : tg_uniform_f32(&s, -1.0, 1.0);
}

/* A model and its data on one backend. */
struct tg_model {
    struct compute *c;
    struct compute_mlp *m;
    void *x, *y; /* device: rows x n_in and rows, in the backend's element type */
};

static void tg_model_open(struct tg_model *t, struct compute *c, const struct mlp_arch *a,
                          const struct mlp_adam_conf *adam, const double *params, const double *x,
                          const double *y, size_t rows, size_t max_rows) {
    const struct compute_ops *ops = c->ops;
    size_t eb = ops->elem_bytes, nx = rows * (size_t)a->n_in;
    char err[512] = "";
    t->c = c;
    cr_assert_eq(compute_alloc(c, nx * eb, &t->x, err, sizeof(err)), 0, "%s: %s", ops->name, err);
    cr_assert_eq(compute_alloc(c, rows * eb, &t->y, err, sizeof(err)), 0, "%s: %s", ops->name, err);
    struct compute_mlp_init init = {
        .arch = *a, .adam = *adam, .params = params, .max_rows = max_rows};
    int rc = ops->mlp_create(c, &init, &t->m);
    cr_assert_eq(rc, 0, "%s: mlp_create: %s", ops->name, ops->strerror(rc));
    rc = ops->upload_f64(c, t->x, x, nx);
    rc = rc ? rc : ops->upload_f64(c, t->y, y, rows);
    int src = compute_sync(c, SYNC_OP_COPY);
    cr_assert_eq(rc ? rc : src, 0, "%s: upload: %s", ops->name, ops->strerror(rc ? rc : src));
}

static void tg_model_close(struct tg_model *t) {
    t->c->ops->mlp_destroy(t->c, t->m);
    compute_free(t->c, t->x);
    compute_free(t->c, t->y);
}

/* Forward, loss and backward of rows samples from row r0; gradients to grad (or not, when
 * NULL), then a stream sync; *loss is valid on return. */
static void tg_model_grad(struct tg_model *t, size_t r0, size_t rows, int n_in, double *loss,
                          double *grad) {
    struct compute *c = t->c;
    const struct compute_ops *ops = c->ops;
    size_t eb = ops->elem_bytes;
    const char *x = (const char *)t->x + r0 * (size_t)n_in * eb, *y = (const char *)t->y + r0 * eb;
    cr_assert_not_null(ops->mlp_read_grad, "%s: no mlp_read_grad", ops->name);
    int rc = ops->mlp_forward(c, t->m, x, rows);
    rc = rc ? rc : ops->mlp_loss(c, t->m, y, rows, loss);
    rc = rc ? rc : ops->mlp_backward(c, t->m, x, y, rows);
    rc = rc ? rc : grad ? ops->mlp_read_grad(c, t->m, grad) : 0;
    int src = compute_sync(c, SYNC_OP_STREAM);
    cr_assert_eq(rc, 0, "%s: enqueue: %s", ops->name, ops->strerror(rc));
    cr_assert_eq(src, 0, "%s: sync: %s", ops->name, ops->strerror(src));
}

/* Forward rows samples from row 0 and read the outputs back (mlp_read_out). */
static void tg_model_out(struct tg_model *t, size_t rows, double *out) {
    const struct compute_ops *ops = t->c->ops;
    cr_assert_not_null(ops->mlp_read_out, "%s: no mlp_read_out", ops->name);
    int rc = ops->mlp_forward(t->c, t->m, t->x, rows);
    rc = rc ? rc : ops->mlp_read_out(t->c, t->m, out, rows);
    int src = compute_sync(t->c, SYNC_OP_STREAM);
    cr_assert_eq(rc ? rc : src, 0, "%s: forward and read: %s", ops->name,
                 ops->strerror(rc ? rc : src));
}

/* The outputs of both backends agree within 1e-5 of the larger of each value and their RMS. */
static void tg_outputs_agree(const char *name, struct tg_model *mg, struct tg_model *mc,
                             size_t rows) {
    double *og = malloc(rows * sizeof(*og)), *oc = malloc(rows * sizeof(*oc)), ss = 0, worst = 0;
    cr_assert(og && oc);
    tg_model_out(mg, rows, og);
    tg_model_out(mc, rows, oc);
    for (size_t r = 0; r < rows; r++)
        ss += oc[r] * oc[r];
    double rms = sqrt(ss / (double)rows);
    cr_assert_gt(rms, 0, "%s: the reference outputs are all zero", name);
    for (size_t r = 0; r < rows; r++) {
        double rel = fabs(og[r] - oc[r]) / fmax(fabs(oc[r]), rms);
        worst = fmax(worst, rel);
        cr_assert_leq(rel, 1e-5, "%s: output %zu is %.9g, CPU %.9g", name, r, og[r], oc[r]);
    }
    cr_log_info("%s: outputs agree within %.3g", name, worst);
    free(og);
    free(oc);
}

#define TG_GRAD_ROWS       300  /* not a multiple of any tile size */
#define TG_GRAD_ROWS_LARGE 4099 /* prime: large batches take the tiled kernels */
#define TG_GRAD_REL_TOL    1e-4
#define TG_LOSS_REL_TOL    1e-5

/* One batch's loss and gradients on both backends from the same fp32-exact start; the device
 * runs the batch twice, so gradients added to the last pass's instead of replacing them fail. */
static void tg_grad_case(const char *name, const struct mlp_arch *a, uint64_t seed, size_t rows) {
    struct compute *g = tg_open_hip(NULL), *c = tg_open_cpu();
    size_t n = mlp_param_count(a);
    double *params = tg_params(a, seed), *x, *y;
    tg_samples(a, rows, seed * 7919u + 1u, &x, &y);
    double *gg = malloc(n * sizeof(*gg)), *gc = malloc(n * sizeof(*gc)), lg = NAN, lc = NAN;
    cr_assert(gg && gc);
    struct mlp_adam_conf adam;
    mlp_adam_conf_default(&adam);
    struct tg_model mg, mc;
    tg_model_open(&mg, g, a, &adam, params, x, y, rows, rows);
    tg_model_open(&mc, c, a, &adam, params, x, y, rows, rows);
    tg_model_grad(&mg, 0, rows, a->n_in, &lg, NULL);
    tg_model_grad(&mg, 0, rows, a->n_in, &lg, gg);
    tg_model_grad(&mc, 0, rows, a->n_in, &lc, gc);
    tg_outputs_agree(name, &mg, &mc, rows);

    cr_assert(isfinite(lc) && lc > 0, "%s: CPU reference loss %g", name, lc);
    cr_assert_leq(fabs(lg - lc), TG_LOSS_REL_TOL * fabs(lc), "%s: loss %.9g, CPU %.9g (rel %.3g)",
                  name, lg, lc, fabs(lg - lc) / fabs(lc));
    double d2 = 0, r2 = 0;
    tg_norm2_add(gg, gc, n, &d2, &r2);
    cr_assert_gt(r2, 0, "%s: the reference gradient is zero", name);
    cr_assert_lt(tg_rel(d2, r2), TG_GRAD_REL_TOL, "%s: gradient rel error %.3g over %zu params",
                 name, tg_rel(d2, r2), n);
    cr_log_info("%s: loss rel diff %.3g, gradient rel error %.3g", name, fabs(lg - lc) / fabs(lc),
                tg_rel(d2, r2));
    for (int l = 0; l <= a->n_hidden; l++) {
        size_t w = mlp_layer_w_offset(a, l), b = mlp_layer_b_offset(a, l);
        size_t nw = (size_t)mlp_layer_in(a, l) * (size_t)mlp_layer_out(a, l);
        size_t nb = (size_t)mlp_layer_out(a, l);
        double wd = 0, wr = 0, bd = 0, br = 0;
        tg_norm2_add(gg + w, gc + w, nw, &wd, &wr);
        tg_norm2_add(gg + b, gc + b, nb, &bd, &br);
        double rel = tg_rel(wd + bd, wr + br);
        cr_log_info("%s: layer %d rel error %.3g (weights %.3g, biases %.3g)", name, l, rel,
                    tg_rel(wd, wr), tg_rel(bd, br));
        cr_assert_lt(rel, TG_GRAD_REL_TOL,
                     "%s: layer %d (%dx%d) gradient rel error %.3g (weights %.3g, biases %.3g)",
                     name, l, mlp_layer_out(a, l), mlp_layer_in(a, l), rel, tg_rel(wd, wr),
                     tg_rel(bd, br));
    }
    tg_model_close(&mg);
    tg_model_close(&mc);
    free(params);
    free(x);
    free(y);
    free(gg);
    free(gc);
    compute_close(g);
    compute_close(c);
}

Test(gpu, mlp_grad_silu_mse_24_32_16_1) {
    struct mlp_arch a = tg_arch(32, 16, MLP_ACT_SILU, MLP_LOSS_MSE);
    tg_grad_case("24-32-16-1 SiLU MSE", &a, 11, TG_GRAD_ROWS);
}

Test(gpu, mlp_grad_relu_bce_24_64_1) {
    struct mlp_arch a = tg_arch(64, 0, MLP_ACT_RELU, MLP_LOSS_BCE);
    tg_grad_case("24-64-1 ReLU BCE", &a, 12, TG_GRAD_ROWS);
}

Test(gpu, mlp_grad_silu_mse_24_256_256_1) {
    struct mlp_arch a = tg_arch(256, 256, MLP_ACT_SILU, MLP_LOSS_MSE);
    tg_grad_case("24-256-256-1 SiLU MSE", &a, 13, TG_GRAD_ROWS);
}

Test(gpu, mlp_grad_large_silu_mse_24_128_64_1) {
    struct mlp_arch a = tg_arch(128, 64, MLP_ACT_SILU, MLP_LOSS_MSE);
    tg_grad_case("24-128-64-1 SiLU MSE, large batch", &a, 14, TG_GRAD_ROWS_LARGE);
}

Test(gpu, mlp_grad_large_relu_bce_24_64_1) {
    struct mlp_arch a = tg_arch(64, 0, MLP_ACT_RELU, MLP_LOSS_BCE);
    tg_grad_case("24-64-1 ReLU BCE, large batch", &a, 15, TG_GRAD_ROWS_LARGE);
}

/* Eight hidden layers, most of them no multiple of a tile wide and one 1 wide, over 1001 rows:
 * enough for the tiled kernels at this size. */
Test(gpu, mlp_grad_large_deep_odd_widths) {
    static const int widths[] = {256, 13, 200, 1, 64, 255, 33, 8};
    struct mlp_arch a = {.n_in = 24, .n_hidden = 8, .act = MLP_ACT_SILU, .loss = MLP_LOSS_MSE};
    for (int l = 0; l < 8; l++)
        a.hidden[l] = widths[l];
    tg_grad_case("24-256-13-200-1-64-255-33-8-1 SiLU MSE, large batch", &a, 16, 1001);
}

#define TG_TRAIN_STEPS   200
#define TG_TRAIN_BATCHES 8
#define TG_TRAIN_ROWS    128
#define TG_TRAIN_WINDOW  20 /* steps averaged at each end to see the loss fall */
#define TG_TRAIN_REL_TOL 1e-3

/* A learnable target: y = tanh(u0.x) + 0.5 tanh(u1.x) - 0.5 tanh(u2.x), as a float. */
static void tg_teacher(const double *x, size_t rows, int n_in, uint64_t seed, double *y) {
    double u[3][MLP_MAX_WIDTH];
    uint64_t s = seed;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n_in; i++)
            u[k][i] = tg_uniform_f32(&s, -0.5, 0.5);
    for (size_t r = 0; r < rows; r++) {
        double z[3] = {0, 0, 0};
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < n_in; i++)
                z[k] += u[k][i] * x[r * (size_t)n_in + (size_t)i];
        y[r] = (double)(float)(tanh(z[0]) + 0.5 * tanh(z[1]) - 0.5 * tanh(z[2]));
    }
}

/* TG_TRAIN_STEPS steps over the batches in turn, one sync a step; loss[] gets each step's. */
static void tg_train(struct compute *c, const struct mlp_arch *a, const double *params,
                     const double *x, const double *y, double *loss) {
    struct mlp_adam_conf adam;
    mlp_adam_conf_default(&adam);
    adam.lr = 1e-3;
    struct tg_model t;
    tg_model_open(&t, c, a, &adam, params, x, y, TG_TRAIN_BATCHES * TG_TRAIN_ROWS, TG_TRAIN_ROWS);
    for (int s = 0; s < TG_TRAIN_STEPS; s++) {
        size_t r0 = (size_t)(s % TG_TRAIN_BATCHES) * TG_TRAIN_ROWS;
        tg_model_grad(&t, r0, TG_TRAIN_ROWS, a->n_in, &loss[s], NULL);
        int rc = c->ops->mlp_optimizer(c, t.m);
        int src = compute_sync(c, SYNC_OP_STREAM);
        cr_assert_eq(rc ? rc : src, 0, "%s: step %d: optimizer: %s", c->ops->name, s,
                     c->ops->strerror(rc ? rc : src));
    }
    tg_model_close(&t);
}

static double tg_mean(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s / (double)n;
}

Test(gpu, mlp_training_follows_cpu) {
    struct mlp_arch a = tg_arch(32, 16, MLP_ACT_SILU, MLP_LOSS_MSE);
    size_t rows = TG_TRAIN_BATCHES * TG_TRAIN_ROWS;
    double *params = tg_params(&a, 21), *x, *y, lg[TG_TRAIN_STEPS], lc[TG_TRAIN_STEPS];
    tg_samples(&a, rows, 22, &x, &y);
    tg_teacher(x, rows, a.n_in, 23, y);
    struct compute *g = tg_open_hip(NULL), *c = tg_open_cpu();
    tg_train(g, &a, params, x, y, lg);
    tg_train(c, &a, params, x, y, lc);
    for (int s = 0; s < TG_TRAIN_STEPS; s++)
        cr_assert_leq(fabs(lg[s] - lc[s]), TG_TRAIN_REL_TOL * fabs(lc[s]),
                      "step %d (batch %d): loss %.9g, CPU %.9g (rel %.3g)", s, s % TG_TRAIN_BATCHES,
                      lg[s], lc[s], fabs(lg[s] - lc[s]) / fabs(lc[s]));
    double first = tg_mean(lg, TG_TRAIN_WINDOW);
    double last = tg_mean(lg + TG_TRAIN_STEPS - TG_TRAIN_WINDOW, TG_TRAIN_WINDOW);
    double worst = 0;
    for (int s = 0; s < TG_TRAIN_STEPS; s++)
        worst = fmax(worst, fabs(lg[s] - lc[s]) / fabs(lc[s]));
    cr_log_info("training: loss %.4g -> %.4g (means of %d steps), worst step rel diff %.3g", first,
                last, TG_TRAIN_WINDOW, worst);
    cr_assert_lt(last, first, "the loss did not fall: first %d steps %.6g, last %d %.6g",
                 TG_TRAIN_WINDOW, first, TG_TRAIN_WINDOW, last);
    free(params);
    free(x);
    free(y);
    compute_close(g);
    compute_close(c);
}

/* ---- 5. the caching allocator on device memory ---- */

#define MIB TG_MIB

/* One step of the script: allocate bytes into slot, or free slot when bytes is 0; then the
 * pool must hold these totals, derived from mem_pool.h's rules by hand: requests round up to
 * 512 bytes; <= 1 MiB comes from 2 MiB small segments; (1, 10) MiB from shared 20 MiB ones;
 * larger ones get their own segment rounded up to 2 MiB; best fit; a large block is split only
 * when more than 1 MiB would be left over, a small one when at least 512 bytes would. */
struct tg_alloc_step {
    int slot;
    size_t bytes;
    uint64_t allocated, reserved;
    uint32_t segments;
};

static const struct tg_alloc_step tg_alloc_script[] = {
    {0, 1000, 1024, 2 * MIB, 1},                         /* small segment, block of 1024 */
    {1, 300, 1536, 2 * MIB, 1},                          /* 512, split from the small segment */
    {2, 3 * MIB, 1536 + 3 * MIB, 22 * MIB, 2},           /* a 20 MiB large segment */
    {3, 5 * MIB + 1, 1536 + 8 * MIB + 512, 22 * MIB, 2}, /* its next 5 MiB + 512 */
    {4, 64 * MIB + 100, 1536 + 72 * MIB + 1024, 88 * MIB, 3}, /* own 66 MiB segment */
    {2, 0, 1536 + 69 * MIB + 1024, 88 * MIB, 3},              /* frees the first 3 MiB */
    {2, 2 * MIB, 1536 + 72 * MIB + 1024, 88 * MIB, 3},        /* takes all 3 (1 MiB left) */
    {5, 1 * MIB, 1536 + 73 * MIB + 1024, 88 * MIB, 3},        /* small: 1 MiB is small */
    {6, 1 * MIB + 1, 1536 + 75 * MIB + 512, 88 * MIB, 3},     /* whole 2 MiB - 512 tail */
    {4, 0, 1536 + 11 * MIB, 88 * MIB, 3},                     /* frees 64 MiB + 512 */
    {4, 40 * MIB, 1536 + 51 * MIB, 88 * MIB, 3},              /* split from it */
    {0, 0, 512 + 51 * MIB, 88 * MIB, 3},
    {1, 0, 51 * MIB, 88 * MIB, 3},
    {2, 0, 48 * MIB, 88 * MIB, 3},
    {3, 0, 43 * MIB - 512, 88 * MIB, 3},
    {4, 0, 3 * MIB - 512, 88 * MIB, 3},
    {5, 0, 2 * MIB - 512, 88 * MIB, 3},
    {6, 0, 0, 88 * MIB, 3},
};
#define TG_ALLOC_STEPS (sizeof(tg_alloc_script) / sizeof(tg_alloc_script[0]))

/* Run the script on c; st[i] gets the pool after step i. */
static void tg_alloc_run(struct compute *c, struct mem_stats *st) {
    void *slot[8] = {0};
    for (size_t i = 0; i < TG_ALLOC_STEPS; i++) {
        const struct tg_alloc_step *s = &tg_alloc_script[i];
        char err[512] = "";
        if (s->bytes) {
            int rc = compute_alloc(c, s->bytes, &slot[s->slot], err, sizeof(err));
            cr_assert_eq(rc, 0, "%s: step %zu: %s", c->ops->name, i, err);
        } else {
            compute_free(c, slot[s->slot]);
            slot[s->slot] = NULL;
        }
        mem_pool_stats(c->pool, &st[i]);
        cr_assert_eq(mem_pool_check(c->pool, err, sizeof(err)), 0, "%s: step %zu: %s", c->ops->name,
                     i, err);
    }
}

#define TG_ALLOC_EQ(field)                                                                         \
    cr_assert_eq(g[i].field, r[i].field, "step %zu: " #field " %llu on hip, %llu on cpu", i,       \
                 (unsigned long long)g[i].field, (unsigned long long)r[i].field)

#define TG_HOLD_BYTES (1024 * MIB)
#define TG_MEM_SLACK  (32 * MIB) /* other processes on the device between two readings */

Test(gpu, allocator_pool_and_device_memory) {
    struct compute *c = tg_open_hip(NULL), *cpu = tg_open_cpu();
    struct mem_stats g[TG_ALLOC_STEPS], r[TG_ALLOC_STEPS];
    tg_alloc_run(c, g);
    tg_alloc_run(cpu, r);
    for (size_t i = 0; i < TG_ALLOC_STEPS; i++) {
        const struct tg_alloc_step *s = &tg_alloc_script[i];
        cr_assert_eq(g[i].allocated_bytes, s->allocated, "step %zu: allocated %llu, want %llu", i,
                     (unsigned long long)g[i].allocated_bytes, (unsigned long long)s->allocated);
        cr_assert_eq(g[i].reserved_bytes, s->reserved, "step %zu: reserved %llu, want %llu", i,
                     (unsigned long long)g[i].reserved_bytes, (unsigned long long)s->reserved);
        cr_assert_eq(g[i].segments, s->segments, "step %zu: %u segments, want %u", i, g[i].segments,
                     s->segments);
        TG_ALLOC_EQ(requested_bytes);
        TG_ALLOC_EQ(active_blocks);
        TG_ALLOC_EQ(free_blocks);
        TG_ALLOC_EQ(largest_free_bytes);
        TG_ALLOC_EQ(peak_allocated_bytes);
        TG_ALLOC_EQ(n_cache_hits);
        TG_ALLOC_EQ(n_raw_alloc);
        TG_ALLOC_EQ(n_oom);
    }
    const struct mem_stats *end = &g[TG_ALLOC_STEPS - 1];
    cr_assert_eq(end->n_raw_alloc, 3, "segments created: %llu, want 3",
                 (unsigned long long)end->n_raw_alloc);
    cr_assert_eq(end->n_cache_hits, 6, "cache hits: %llu, want 6",
                 (unsigned long long)end->n_cache_hits);
    cr_assert_eq(end->largest_free_bytes, 66 * MIB);
    cr_assert_eq(end->peak_allocated_bytes, 1536 + 75 * MIB + 512);
    cr_assert_eq(mem_pool_empty_cache(c->pool), 88 * MIB);
    compute_close(cpu);

    /* Device memory: a held segment is gone from the device's free memory, and comes back when
     * the cache is emptied. */
    const struct compute_ops *ops = c->ops;
    cr_assert_eq(ops->mem_info(c), 0);
    cr_assert(c->info.mem_valid);
    uint64_t free0 = c->info.mem_free_bytes;
    cr_assert_gt(free0, TG_HOLD_BYTES + 512 * MIB, "only %llu MiB free on the device",
                 (unsigned long long)(free0 / MIB));
    void *big = NULL;
    char err[512] = "";
    cr_assert_eq(compute_alloc(c, TG_HOLD_BYTES, &big, err, sizeof(err)), 0, "%s", err);
    struct mem_stats st;
    mem_pool_stats(c->pool, &st);
    cr_assert_eq(st.reserved_bytes, TG_HOLD_BYTES);
    cr_assert_eq(ops->mem_info(c), 0);
    uint64_t free1 = c->info.mem_free_bytes;
    cr_assert_geq(free0 - (free1 < free0 ? free1 : free0), st.reserved_bytes - TG_MEM_SLACK,
                  "device free memory %llu -> %llu MiB while the pool holds %llu MiB",
                  (unsigned long long)(free0 / MIB), (unsigned long long)(free1 / MIB),
                  (unsigned long long)(st.reserved_bytes / MIB));
    compute_free(c, big);
    cr_assert_eq(mem_pool_empty_cache(c->pool), TG_HOLD_BYTES);
    cr_assert_eq(ops->mem_info(c), 0);
    uint64_t free2 = c->info.mem_free_bytes;
    cr_log_info("allocator: device free %llu -> %llu -> %llu MiB holding %llu MiB",
                (unsigned long long)(free0 / MIB), (unsigned long long)(free1 / MIB),
                (unsigned long long)(free2 / MIB), (unsigned long long)(TG_HOLD_BYTES / MIB));
    cr_assert_geq(free2 > free1 ? free2 - free1 : 0, TG_HOLD_BYTES - TG_MEM_SLACK,
                  "device free memory %llu -> %llu MiB after releasing %llu MiB",
                  (unsigned long long)(free1 / MIB), (unsigned long long)(free2 / MIB),
                  (unsigned long long)(TG_HOLD_BYTES / MIB));
    compute_close(c);
}

/* ---- 6. the hang kernel ---- */

/* Mapped host words for the hang kernel: the release flag and the status it writes. */
struct tg_hang {
    void *mem, *stream;
    volatile uint32_t *flag, *status;
};

static void tg_hang_open(struct tg_hang *h) {
    TG_GPU(rs_gpu_host_alloc(&h->mem, 64));
    TG_GPU(rs_gpu_stream_create(&h->stream));
    h->flag = h->mem;
    h->status = h->flag + 1;
    *h->flag = 0;
    *h->status = 0;
}

static void tg_hang_close(struct tg_hang *h) {
    TG_GPU(rs_gpu_stream_destroy(h->stream));
    TG_GPU(rs_gpu_host_free(h->mem));
}

Test(gpu, hang_kernel_release_and_timeout) {
    struct compute *c = tg_open_hip(NULL);
    struct tg_hang h;
    tg_hang_open(&h);

    TG_GPU(rs_gpu_hang(h.flag, 10000 * TG_MS, h.status, h.stream));
    int q = rs_gpu_stream_query(h.stream);
    cr_assert_eq(rs_gpu_err_kind(q), RS_GPU_ERR_NOT_READY,
                 "right after launch the stream reports %d (%s), want not ready", q,
                 q ? rs_gpu_err_name(q) : "idle");
    cr_assert_eq(*h.status, 0, "status %u before the release", *h.status);
    uint64_t t0 = mono_now_ns();
    __atomic_store_n(h.flag, 1u, __ATOMIC_SEQ_CST);
    TG_GPU(rs_gpu_stream_sync(h.stream));
    uint64_t dt = mono_now_ns() - t0;
    cr_log_info("hang: released kernel finished %.3f ms after the flag", (double)dt / 1e6);
    cr_assert_eq(*h.status, 1, "status %u after the release, want 1 (released)", *h.status);
    cr_assert_lt(dt, 100 * TG_MS, "released kernel took %.1f ms to finish", (double)dt / 1e6);

    *h.flag = 0;
    *h.status = 0;
    t0 = mono_now_ns();
    TG_GPU(rs_gpu_hang(h.flag, 50 * TG_MS, h.status, h.stream));
    TG_GPU(rs_gpu_stream_sync(h.stream));
    dt = mono_now_ns() - t0;
    cr_log_info("hang: 50 ms limit ended after %.3f ms", (double)dt / 1e6);
    cr_assert_eq(*h.status, 2, "status %u after the limit, want 2 (timed out)", *h.status);
    cr_assert_geq(dt, 45 * TG_MS, "a 50 ms hang ended after %.1f ms", (double)dt / 1e6);
    cr_assert_lt(dt, 5000 * TG_MS, "a 50 ms hang ended after %.1f ms", (double)dt / 1e6);
    TG_GPU(rs_gpu_last_error());
    tg_hang_close(&h);
    compute_close(c);
}

/* ---- 7. traced synchronizes ---- */

/* The SYNC events of op among what the ring holds now: count, and the last one's duration. */
static size_t tg_sync_events(struct evring *ring, enum ev_sync_op op, uint64_t *dur_ns) {
    struct ev e[64];
    size_t n, found = 0;
    while ((n = evring_drain(ring, e, 64)) > 0)
        for (size_t i = 0; i < n; i++)
            if (e[i].kind == EV_SYNC && e[i].u.sync.op == op) {
                cr_assert_eq(e[i].u.sync.rc, 0, "traced sync failed: %d", e[i].u.sync.rc);
                *dur_ns = e[i].u.sync.dur_ns;
                found++;
            }
    return found;
}

/* A device synchronize waits for a kernel on a stream of its own: a 30 ms hang. */
static void tg_trace_device(struct compute *c, struct trace *t, struct evring *ring) {
    struct tg_hang h;
    tg_hang_open(&h);
    uint64_t dur = 0;
    tg_sync_events(ring, SYNC_OP_DEVICE, &dur);
    uint64_t t_launch = mono_now_ns();
    TG_GPU(rs_gpu_hang(h.flag, 30 * TG_MS, h.status, h.stream));
    uint64_t gap = mono_now_ns() - t_launch; /* the kernel may run this long before the sync */
    int rc = compute_sync(c, SYNC_OP_DEVICE);
    cr_assert_eq(rc, 0, "device sync: %s", c->ops->strerror(rc));
    cr_assert_eq(*h.status, 2, "the device sync returned with the hang kernel still running");
    cr_assert_eq(tg_sync_events(ring, SYNC_OP_DEVICE, &dur), 1, "one DEVICE sync event wanted");
    struct trace_hist hist;
    trace_sync_hist(t, c->dev, SYNC_OP_DEVICE, &hist);
    cr_assert_eq(hist.count, 1, "%llu DEVICE syncs in the histogram",
                 (unsigned long long)hist.count);
    cr_assert_eq(hist.max_ns, dur, "histogram max %llu ns, event %llu ns",
                 (unsigned long long)hist.max_ns, (unsigned long long)dur);
    /* 30 ms on the device's clock, less the head start, less 1% for the two clocks' rates */
    uint64_t floor_ns = 30 * TG_MS - 30 * TG_MS / 100;
    uint64_t want = gap < floor_ns ? floor_ns - gap : 0;
    cr_log_info("trace: device sync over a 30 ms kernel took %.3f ms", (double)dur / 1e6);
    cr_assert_geq(dur, want, "device sync over a 30 ms kernel took %.2f ms (want >= %.2f)",
                  (double)dur / 1e6, (double)want / 1e6);
    tg_hang_close(&h);
}

#define TG_TRACE_ROWS   32768
#define TG_TRACE_TARGET (200 * TG_MS) /* device time of the measured work */
#define TG_TRACE_MAX_IT 300

/* Device time between two events after a sync; asserts both are timed. */
static uint64_t tg_event_span(struct compute *c, const struct compute_event *a,
                              const struct compute_event *b) {
    uint64_t ta = 0, tb = 0;
    cr_assert_eq(c->ops->event_time_ns(c, a, &ta), 0, "an event has no time after its sync");
    cr_assert_eq(c->ops->event_time_ns(c, b, &tb), 0, "an event has no time after its sync");
    cr_assert_geq(tb, ta);
    return tb - ta;
}

/* Enqueue iters forward + loss + backward passes between two events. */
static void tg_trace_work(struct tg_model *m, int iters, struct compute_event *e0,
                          struct compute_event *e1, double *loss) {
    struct compute *c = m->c;
    const struct compute_ops *ops = c->ops;
    int rc = ops->event_record(c, e0);
    for (int i = 0; rc == 0 && i < iters; i++) {
        rc = ops->mlp_forward(c, m->m, m->x, TG_TRACE_ROWS);
        rc = rc ? rc : ops->mlp_loss(c, m->m, m->y, TG_TRACE_ROWS, loss);
        rc = rc ? rc : ops->mlp_backward(c, m->m, m->x, m->y, TG_TRACE_ROWS);
    }
    rc = rc ? rc : ops->event_record(c, e1);
    cr_assert_eq(rc, 0, "enqueue: %s", ops->strerror(rc));
}

/* A stream synchronize lasts as long as the backend's own queued work: it ends after the work
 * does, so its duration S covers the work's device time D less the time E it took to enqueue
 * (S >= D - E). The work is sized from a first pass so that D is well above E. */
static void tg_trace_stream(struct compute *c, struct trace *t, struct evring *ring) {
    struct mlp_arch a = {.n_in = 24, .n_hidden = 4, .act = MLP_ACT_SILU, .loss = MLP_LOSS_MSE};
    for (int l = 0; l < 4; l++)
        a.hidden[l] = 256;
    double *params = tg_params(&a, 31), *x, *y, loss = 0;
    tg_samples(&a, TG_TRACE_ROWS, 32, &x, &y);
    struct mlp_adam_conf adam;
    mlp_adam_conf_default(&adam);
    struct tg_model m;
    tg_model_open(&m, c, &a, &adam, params, x, y, TG_TRACE_ROWS, TG_TRACE_ROWS);
    struct compute_event e0, e1;
    tg_trace_work(&m, 1, &e0, &e1, &loss);
    cr_assert_eq(compute_sync(c, SYNC_OP_STREAM), 0);
    uint64_t d1 = tg_event_span(c, &e0, &e1);
    int iters = (int)((TG_TRACE_TARGET + d1) / (d1 + 1));
    iters = iters < 2 ? 2 : iters > TG_TRACE_MAX_IT ? TG_TRACE_MAX_IT : iters;

    uint64_t dur = 0;
    tg_sync_events(ring, SYNC_OP_STREAM, &dur);
    struct trace_sync_summary before, after;
    trace_sync_summary(t, c->dev, SYNC_OP_STREAM, &before);
    uint64_t h0 = mono_now_ns();
    tg_trace_work(&m, iters, &e0, &e1, &loss);
    uint64_t enq = mono_now_ns() - h0;
    int rc = compute_sync(c, SYNC_OP_STREAM);
    cr_assert_eq(rc, 0, "stream sync: %s", c->ops->strerror(rc));
    uint64_t work = tg_event_span(c, &e0, &e1);
    cr_assert_eq(tg_sync_events(ring, SYNC_OP_STREAM, &dur), 1, "one STREAM sync event wanted");
    cr_log_info("trace: %d passes, %.2f ms on the device, %.2f ms to enqueue, stream sync %.2f ms",
                iters, (double)work / 1e6, (double)enq / 1e6, (double)dur / 1e6);
    trace_sync_summary(t, c->dev, SYNC_OP_STREAM, &after);
    cr_assert_eq(after.count, before.count + 1);
    cr_assert_geq(after.max_ns, dur);
    cr_assert(isfinite(loss), "loss %g", loss);
    cr_assert_gt(work, enq + 20 * TG_MS,
                 "%d passes ran %.2f ms on the device but took %.2f ms to enqueue: too little "
                 "to see a sync wait",
                 iters, (double)work / 1e6, (double)enq / 1e6);
    cr_assert_geq(dur + TG_MS, work - enq,
                  "stream sync took %.2f ms; the work ran %.2f ms on the device, %.2f ms of it "
                  "after its enqueueing",
                  (double)dur / 1e6, (double)work / 1e6, (double)(work - enq) / 1e6);
    tg_model_close(&m);
    free(params);
    free(x);
    free(y);
}

Test(gpu, traced_sync_covers_device_work) {
    struct evring *ring = NULL;
    struct trace *t = NULL;
    cr_assert_eq(evring_create(&ring, 4096), 0);
    cr_assert_eq(trace_create(&t, ring, 1), 0);
    struct compute *c = tg_open_hip(t);
    tg_trace_device(c, t, ring);
    tg_trace_stream(c, t, ring);
    cr_assert_eq(evring_dropped(ring), 0);
    compute_close(c);
    trace_destroy(t);
    evring_destroy(ring);
}

/* Rehearsed faults (--inject) on the GPU: a hang is the hang kernel on the backend's stream
 * (device time, not a host sleep), an oom is the pool meeting a full device, an error is the
 * runtime's own. */
Test(gpu, injected_faults_run_on_the_device) {
    struct evring *ring = NULL;
    struct trace *t = NULL;
    cr_assert_eq(evring_create(&ring, 4096), 0);
    cr_assert_eq(trace_create(&t, ring, 1), 0);
    struct compute *c = tg_open_hip(t);
    const char *specs[] = {"hang:cleanup:0.3", "oom:vpoc", "error:eval:illegal-address"};
    for (size_t k = 0; k < 3; k++) {
        struct trace_inject in;
        char err[256];
        cr_assert_eq(trace_inject_parse(specs[k], &in, err, sizeof(err)), 0, "%s", err);
        cr_assert_eq(trace_add_inject(t, c->dev, &in), 0);
    }
    struct compute_event e0, e1;
    trace_set_phase(t, c->dev, PHASE_CLEANUP);
    cr_assert_eq(c->ops->event_record(c, &e0), 0);
    uint64_t h0 = mono_now_ns();
    int rc = compute_sync(c, SYNC_OP_DEVICE);
    uint64_t waited = mono_now_ns() - h0;
    cr_assert_eq(rc, 0, "%s", c->ops->strerror(rc));
    cr_assert_eq(c->ops->event_record(c, &e1), 0); /* after the hang kernel on the stream */
    cr_assert_eq(compute_sync(c, SYNC_OP_STREAM), 0);
    uint64_t device = tg_event_span(c, &e0, &e1);
    cr_log_info("inject: hang:cleanup:0.3 held the stream %.1f ms (device), the sync %.1f ms",
                (double)device / 1e6, (double)waited / 1e6);
    cr_assert_geq(device, 297 * TG_MS, "the hang kernel ran %.1f ms on the device",
                  (double)device / 1e6);
    cr_assert_geq(waited + 5 * TG_MS, device, "the sync returned before the kernel ended");

    trace_set_phase(t, c->dev, PHASE_VPOC);
    void *p = NULL;
    char err[512] = "";
    cr_assert_eq(compute_alloc(c, 1 << 20, &p, err, sizeof(err)), -ENOMEM);
    cr_assert(strstr(err, "out of memory (injected)") && strstr(err, "pool:"), "%s", err);
    struct mem_stats st;
    mem_pool_stats(c->pool, &st);
    cr_assert_eq(st.n_oom, 1);
    cr_assert_eq(compute_alloc(c, 1 << 20, &p, err, sizeof(err)), 0, "once: %s", err);
    compute_free(c, p);

    trace_set_phase(t, c->dev, PHASE_EVAL);
    rc = compute_sync(c, SYNC_OP_STREAM);
    cr_assert_lt(rc, 0, "the injected error is reported by the sync");
    cr_log_info("inject: error:eval:illegal-address -> %s", c->ops->strerror(rc));
    cr_assert(strstr(c->ops->strerror(rc), "IllegalAddress") &&
                  strstr(c->ops->strerror(rc), "illegal memory access"),
              "the runtime's name and text: %s", c->ops->strerror(rc));
    cr_assert_eq(compute_sync(c, SYNC_OP_STREAM), 0, "once");
    compute_close(c);
    trace_destroy(t);
    evring_destroy(ring);
}

/* ---- 8. the memory probe ---- */

#define TG_PROBE_SLACK  (16 * MIB) /* memory other processes may free during the probe */
#define TG_PROBE_RETURN (8 * MIB)  /* free memory after the probe vs before */

Test(gpu, mem_probe_finds_a_block_and_frees_it) {
    struct compute *c = tg_open_hip(NULL);
    const struct compute_ops *ops = c->ops;
    cr_assert_not_null(ops->mem_probe, "the hip backend has no mem_probe");
    uint64_t free0 = 0, free1 = 0, largest = 0;
    /* Another process on the device can move its free memory between two readings: a few
     * tries, the last one asserted. */
    for (int attempt = 0; attempt < 3; attempt++) {
        cr_assert_eq(ops->mem_info(c), 0);
        free0 = c->info.mem_free_bytes;
        int rc = ops->mem_probe(c, &largest);
        cr_assert_eq(rc, 0, "mem_probe: %s", ops->strerror(rc));
        cr_assert_eq(ops->mem_info(c), 0);
        free1 = c->info.mem_free_bytes;
        uint64_t moved = free1 > free0 ? free1 - free0 : free0 - free1;
        if (largest <= free0 + TG_PROBE_SLACK && moved <= TG_PROBE_RETURN)
            break;
    }
    cr_assert_gt(largest, 0, "the probe found no block at all (%llu MiB free)",
                 (unsigned long long)(free0 / MIB));
    cr_assert_leq(largest, free0 + TG_PROBE_SLACK, "largest block %llu MiB > %llu MiB free",
                  (unsigned long long)(largest / MIB), (unsigned long long)(free0 / MIB));
    /* An otherwise idle context can place most of its free memory in one block. */
    cr_assert_geq(largest, free0 / 4, "largest block %llu MiB of %llu MiB free",
                  (unsigned long long)(largest / MIB), (unsigned long long)(free0 / MIB));
    uint64_t moved = free1 > free0 ? free1 - free0 : free0 - free1;
    cr_log_info("probe: largest block %llu MiB, free %llu MiB before, %llu MiB after",
                (unsigned long long)(largest / MIB), (unsigned long long)(free0 / MIB),
                (unsigned long long)(free1 / MIB));
    cr_assert_leq(moved, TG_PROBE_RETURN, "free memory %llu MiB before the probe, %llu after",
                  (unsigned long long)(free0 / MIB), (unsigned long long)(free1 / MIB));
    struct mem_stats st;
    mem_pool_stats(c->pool, &st);
    cr_assert_eq(st.reserved_bytes, 0, "the probe went through the pool");
    compute_close(c);
}

/* ---- 9. the last device, driven from another thread ---- */

/* The runtime's current device is per host thread and a new thread starts on device 0: the
 * backend opened on device N by one thread must still run everything there when another
 * thread (the engine's training thread) drives it. The thread records what happened; the
 * test's thread asserts. */
#define TG_FAR_ROWS 200

struct tg_far {
    struct compute *c;
    const struct tg_data *d;
    size_t session;
    struct vpoc_params p;
    const struct mlp_arch *arch;
    const double *params, *x, *y;
    /* out */
    struct vpoc_result vpoc;
    int vpoc_rc;
    char vpoc_err[512];
    double loss, *grad, *after; /* after: the parameters after one Adam step */
    int mlp_rc;
    char mlp_err[512];
    int fault_rc; /* the session again behind an injected illegal address */
    char fault_err[512];
    int clean_rc; /* the sync after that */
};

/* rc with what failed and the backend's text for it, into f->mlp_err. */
static int tg_far_fail(struct tg_far *f, int rc, const char *what) {
    if (rc != 0 && !f->mlp_err[0])
        snprintf(f->mlp_err, sizeof(f->mlp_err), "%s: %s", what, f->c->ops->strerror(rc));
    return rc;
}

/* One training step of f's model: forward, loss, backward, gradients back, Adam, parameters
 * back, one sync. */
static int tg_far_mlp(struct tg_far *f) {
    struct compute *c = f->c;
    const struct compute_ops *ops = c->ops;
    size_t eb = ops->elem_bytes, nx = TG_FAR_ROWS * (size_t)f->arch->n_in;
    struct compute_mlp_init init = {.arch = *f->arch, .params = f->params, .max_rows = TG_FAR_ROWS};
    mlp_adam_conf_default(&init.adam);
    struct compute_mlp *m = NULL;
    void *x = NULL, *y = NULL;
    int rc = compute_alloc(c, nx * eb, &x, f->mlp_err, sizeof(f->mlp_err));
    rc = rc ? rc : compute_alloc(c, TG_FAR_ROWS * eb, &y, f->mlp_err, sizeof(f->mlp_err));
    rc = rc ? rc : tg_far_fail(f, ops->mlp_create(c, &init, &m), "mlp_create");
    rc = rc ? rc : tg_far_fail(f, ops->upload_f64(c, x, f->x, nx), "upload x");
    rc = rc ? rc : tg_far_fail(f, ops->upload_f64(c, y, f->y, TG_FAR_ROWS), "upload y");
    rc = rc ? rc : tg_far_fail(f, ops->mlp_forward(c, m, x, TG_FAR_ROWS), "forward");
    rc = rc ? rc : tg_far_fail(f, ops->mlp_loss(c, m, y, TG_FAR_ROWS, &f->loss), "loss");
    rc = rc ? rc : tg_far_fail(f, ops->mlp_backward(c, m, x, y, TG_FAR_ROWS), "backward");
    rc = rc ? rc : tg_far_fail(f, ops->mlp_read_grad(c, m, f->grad), "read gradients");
    rc = rc ? rc : tg_far_fail(f, ops->mlp_optimizer(c, m), "optimizer");
    rc = rc ? rc : tg_far_fail(f, ops->mlp_read(c, m, f->after, NULL, NULL, NULL), "read");
    int src = compute_sync(c, SYNC_OP_STREAM);
    rc = rc ? rc : tg_far_fail(f, src, "sync");
    if (m)
        ops->mlp_destroy(c, m);
    compute_free(c, x);
    compute_free(c, y);
    return rc;
}

static void *tg_far_thread(void *arg) {
    struct tg_far *f = arg;
    const struct data_session *s = &f->d->ss.s[f->session];
    const struct vpoc_bar *bars = f->d->bars + s->first;
    f->vpoc_rc = compute_vpoc_session(f->c, bars, s->n, &f->p, 500, &f->vpoc, NULL, NULL,
                                      f->vpoc_err, sizeof(f->vpoc_err));
    f->mlp_rc = tg_far_mlp(f);
    struct vpoc_result r;
    f->c->ops->inject_error(f->c, TRACE_ERR_ILLEGAL_ADDRESS);
    f->fault_rc = compute_vpoc_session(f->c, bars, s->n, &f->p, 500, &r, NULL, NULL, f->fault_err,
                                       sizeof(f->fault_err));
    f->clean_rc = compute_sync(f->c, SYNC_OP_STREAM);
    return NULL;
}

Test(gpu, last_device_from_another_thread) {
    int n = 0, e = rs_gpu_device_count(&n);
    if (e != 0 || n < 2)
        cr_skip_test("needs two or more HIP devices; this machine has %d (%s)", n,
                     e ? rs_gpu_err_name(e) : "no error");
    struct tg_data d;
    tg_data_make(&d, 5, 909);
    struct mlp_arch a = tg_arch(32, 16, MLP_ACT_SILU, MLP_LOSS_MSE);
    size_t np = mlp_param_count(&a);
    double *params = tg_params(&a, 21), *x, *y;
    tg_samples(&a, TG_FAR_ROWS, 22, &x, &y);
    struct compute *g = tg_open_hip_device(NULL, n - 1), *c = tg_open_cpu();
    cr_log_info("device %d of %d: %s (%s)", n - 1, n, g->info.name, g->info.pci);

    struct tg_far f = {.c = g,
                       .d = &d,
                       .session = 1,
                       .p = {VPOC_RANGE, TG_TICK, TG_VALUE_AREA},
                       .arch = &a,
                       .params = params,
                       .x = x,
                       .y = y,
                       .loss = NAN,
                       .grad = calloc(np, sizeof(double)),
                       .after = calloc(np, sizeof(double))};
    cr_assert(f.grad && f.after);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, tg_far_thread, &f), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);

    const struct data_session *s = &d.ss.s[f.session];
    cr_assert(f.vpoc_rc == 0 || f.vpoc_err[0], "VPOC failed (%d) without saying why", f.vpoc_rc);
    cr_assert_eq(f.vpoc_rc, 0, "VPOC on device %d from another thread: %s", n - 1, f.vpoc_err);
    struct vpoc_result want;
    cr_assert_eq(vpoc_session(d.bars + s->first, s->n, &f.p, &want), 0);
    tg_vpoc_expect(&f.vpoc, &want, "VPOC on the last device from another thread");

    cr_assert(f.mlp_rc == 0 || f.mlp_err[0], "the MLP step failed (%d) without saying why",
              f.mlp_rc);
    cr_assert_eq(f.mlp_rc, 0, "MLP step on device %d from another thread: %s", n - 1, f.mlp_err);
    /* the same step's loss and gradients on the reference */
    struct mlp_adam_conf adam;
    mlp_adam_conf_default(&adam);
    struct tg_model mc;
    double lc = NAN, *gc = malloc(np * sizeof(*gc));
    cr_assert_not_null(gc);
    tg_model_open(&mc, c, &a, &adam, params, x, y, TG_FAR_ROWS, TG_FAR_ROWS);
    tg_model_grad(&mc, 0, TG_FAR_ROWS, a.n_in, &lc, gc);
    cr_assert(isfinite(lc) && lc > 0, "CPU reference loss %g", lc);
    cr_assert_leq(fabs(f.loss - lc), TG_LOSS_REL_TOL * fabs(lc), "loss %.9g, CPU %.9g", f.loss, lc);
    double d2 = 0, r2 = 0;
    tg_norm2_add(f.grad, gc, np, &d2, &r2);
    cr_assert_lt(tg_rel(d2, r2), TG_GRAD_REL_TOL, "gradient rel error %.3g", tg_rel(d2, r2));
    /* Adam's first step moves each parameter by at most about lr */
    size_t moved = 0;
    for (size_t i = 0; i < np; i++) {
        double dp = fabs(f.after[i] - params[i]);
        cr_assert(isfinite(f.after[i]) && dp <= 1.5 * adam.lr, "parameter %zu: %g -> %g", i,
                  params[i], f.after[i]);
        moved += dp > 0;
    }
    cr_assert_gt(moved, np / 2, "the step moved %zu of %zu parameters", moved, np);

    /* a runtime error on that thread is reported with the runtime's name and text */
    cr_assert_lt(f.fault_rc, 0, "the injected error was not reported");
    cr_log_info("last device, other thread: injected illegal address -> %s", f.fault_err);
    cr_assert(strstr(f.fault_err, "IllegalAddress") && strstr(f.fault_err, "illegal memory access"),
              "the runtime's name and text: '%s'", f.fault_err);
    cr_assert_eq(f.clean_rc, 0, "the error was reported once: %s", g->ops->strerror(f.clean_rc));

    struct mem_stats st;
    mem_pool_stats(g->pool, &st);
    cr_assert_eq(st.allocated_bytes, 0, "%llu bytes still allocated",
                 (unsigned long long)st.allocated_bytes);
    tg_model_close(&mc);
    compute_close(g);
    compute_close(c);
    free(gc);
    free(f.grad);
    free(f.after);
    free(params);
    free(x);
    free(y);
    tg_data_fini(&d);
}
