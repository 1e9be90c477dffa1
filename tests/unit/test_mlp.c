/* Unit tests for the reference MLP (layout, init, forward/backward, losses, Adam) and its
 * checkpoint format. */
#include "backend/core/crc32.h"
#include "backend/mlp/mlp.h"
#include "backend/mlp/mlp_ckpt.h"
#include "backend/mlp/mlp_safetensors.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <float.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

static uint64_t tmlp_rng_state = 1;

static double tmlp_uniform(double lo, double hi) {
    /* xorshift64*: a different generator from the library's splitmix64 on purpose. */
    tmlp_rng_state ^= tmlp_rng_state >> 12;
    tmlp_rng_state ^= tmlp_rng_state << 25;
    tmlp_rng_state ^= tmlp_rng_state >> 27;
    uint64_t r = tmlp_rng_state * 0x2545F4914F6CDD1Dull;
    return lo + (hi - lo) * (double)(r >> 11) * 0x1.0p-53;
}

static struct mlp_arch tmlp_arch(int n_in, int n_hidden, const int *hidden, enum mlp_act act,
                                 enum mlp_loss loss) {
    struct mlp_arch a = {.n_in = n_in, .n_hidden = n_hidden, .act = act, .loss = loss};
    for (int i = 0; i < n_hidden; i++)
        a.hidden[i] = hidden[i];
    return a;
}

/* Naive forward of one row straight from the header's layout; min_pre tracks the smallest
 * |pre-activation| of the hidden layers (to keep ReLU finite differences off the kink). */
static double tmlp_ref_forward(const struct mlp_arch *a, const double *p, const double *x,
                               double *min_pre) {
    double buf[2][MLP_MAX_WIDTH + 4096];
    const double *in = x;
    int nin = a->n_in;
    for (int l = 0; l <= a->n_hidden; l++) {
        int nout = l == a->n_hidden ? 1 : a->hidden[l];
        const double *w = p, *b = p + nin * nout;
        double *o = buf[l % 2];
        for (int j = 0; j < nout; j++) {
            double z = b[j];
            for (int i = 0; i < nin; i++)
                z += w[j * nin + i] * in[i];
            if (l < a->n_hidden && fabs(z) < *min_pre)
                *min_pre = fabs(z);
            if (l == a->n_hidden)
                o[j] = z;
            else
                o[j] = a->act == MLP_ACT_RELU ? (z > 0 ? z : 0) : z / (1.0 + exp(-z));
        }
        p += nin * nout + nout;
        in = o;
        nin = nout;
    }
    return in[0];
}

/* Sum of the rows' losses / scale, by the textbook (non-stabilised) formulas. */
static double tmlp_ref_objective(const struct mlp_arch *a, const double *p, const double *x,
                                 const double *y, size_t rows, double scale, double *min_pre) {
    double sum = 0;
    for (size_t r = 0; r < rows; r++) {
        double z = tmlp_ref_forward(a, p, x + r * (size_t)a->n_in, min_pre);
        if (a->loss == MLP_LOSS_MSE)
            sum += (z - y[r]) * (z - y[r]);
        else
            sum += -(y[r] * log(1.0 / (1.0 + exp(-z))) + (1 - y[r]) * log(1.0 / (1.0 + exp(z))));
    }
    return sum / scale;
}

/* ---- layout, names, parsing, init ---- */

Test(mlp, layout_offsets_and_counts) {
    struct mlp_arch a = tmlp_arch(5, 2, (int[]){7, 3}, MLP_ACT_SILU, MLP_LOSS_MSE);
    cr_assert_eq(mlp_param_count(&a), 70); /* 5*7+7 + 7*3+3 + 3*1+1 */
    cr_assert_eq(mlp_layer_w_offset(&a, 0), 0);
    cr_assert_eq(mlp_layer_b_offset(&a, 0), 35);
    cr_assert_eq(mlp_layer_w_offset(&a, 1), 42);
    cr_assert_eq(mlp_layer_b_offset(&a, 1), 63);
    cr_assert_eq(mlp_layer_w_offset(&a, 2), 66);
    cr_assert_eq(mlp_layer_b_offset(&a, 2), 69);
    cr_assert_eq(mlp_layer_in(&a, 2), 3);
    cr_assert_eq(mlp_layer_out(&a, 2), 1);
    struct mlp_arch lin = tmlp_arch(2, 0, NULL, MLP_ACT_SILU, MLP_LOSS_MSE);
    cr_assert_eq(mlp_param_count(&lin), 3);
}

Test(mlp, act_and_loss_names) {
    enum mlp_act act = MLP_ACT_SILU;
    enum mlp_loss loss = MLP_LOSS_MSE;
    cr_assert_eq(mlp_act_parse("relu", &act), 0);
    cr_assert_eq(act, MLP_ACT_RELU);
    cr_assert_eq(mlp_act_parse("silu", &act), 0);
    cr_assert_eq(act, MLP_ACT_SILU);
    cr_assert_eq(mlp_act_parse("ReLU", &act), -EINVAL);
    cr_assert_eq(mlp_act_parse("", &act), -EINVAL);
    cr_assert_eq(mlp_loss_parse("bce", &loss), 0);
    cr_assert_eq(loss, MLP_LOSS_BCE);
    cr_assert_eq(mlp_loss_parse("mse", &loss), 0);
    cr_assert_eq(loss, MLP_LOSS_MSE);
    cr_assert_eq(mlp_loss_parse("MSE", &loss), -EINVAL);
    cr_assert_str_eq(mlp_act_name(MLP_ACT_SILU), "silu");
    cr_assert_str_eq(mlp_act_name(MLP_ACT_RELU), "relu");
    cr_assert_str_eq(mlp_loss_name(MLP_LOSS_MSE), "mse");
    cr_assert_str_eq(mlp_loss_name(MLP_LOSS_BCE), "bce");
}

Test(mlp, hidden_parse_valid) {
    struct mlp_arch a = {.n_in = 3, .n_hidden = 3, .hidden = {9, 9, 9}};
    char err[128] = "";
    cr_assert_eq(mlp_hidden_parse("32,16", &a, err, sizeof(err)), 0);
    cr_assert_eq(a.n_hidden, 2);
    cr_assert_eq(a.hidden[0], 32);
    cr_assert_eq(a.hidden[1], 16);
    cr_assert_eq(a.hidden[2], 0);
    cr_assert_eq(mlp_hidden_parse("256", &a, err, sizeof(err)), 0);
    cr_assert_eq(a.n_hidden, 1);
    cr_assert_eq(a.hidden[0], 256);
    cr_assert_eq(mlp_hidden_parse("1,2,3,4,5,6,7,8", &a, err, sizeof(err)), 0);
    cr_assert_eq(a.n_hidden, 8);
    cr_assert_eq(a.hidden[7], 8);
    cr_assert_eq(a.n_in, 3);
}

/* Arrays, not pointers: Criterion hands parameters to a re-executed worker process. */
struct tmlp_bad_hidden {
    char in[24], msg[64];
};

ParameterizedTestParameters(mlp, hidden_parse_invalid) {
    static struct tmlp_bad_hidden cases[] = {
        {"", "--hidden: empty list (want e.g. 32,16)"},
        {"0", "--hidden: '0' is not a width in 1..256"},
        {"257", "--hidden: '257' is not a width in 1..256"},
        {"32,,16", "--hidden: '' is not a width in 1..256"},
        {"32,", "--hidden: '' is not a width in 1..256"},
        {"x", "--hidden: 'x' is not a width in 1..256"},
        {"-4", "--hidden: '-4' is not a width in 1..256"},
        {" 32", "--hidden: ' 32' is not a width in 1..256"},
        {"99999", "--hidden: '99999' is not a width in 1..256"},
        {"1,2,3,4,5,6,7,8,9", "--hidden: at most 8 layers"},
    };
    return cr_make_param_array(struct tmlp_bad_hidden, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct tmlp_bad_hidden *c, mlp, hidden_parse_invalid) {
    struct mlp_arch a = {.n_in = 3, .n_hidden = 1, .hidden = {4}};
    char err[128] = "";
    cr_assert_eq(mlp_hidden_parse(c->in, &a, err, sizeof(err)), -EINVAL, "input '%s'", c->in);
    cr_assert_str_eq(err, c->msg);
    cr_assert_eq(a.n_hidden, 1, "arch untouched on error");
    cr_assert_eq(a.hidden[0], 4);
}

Test(mlp, init_deterministic_and_bounded) {
    struct mlp_arch a = tmlp_arch(16, 2, (int[]){64, 4}, MLP_ACT_SILU, MLP_LOSS_MSE);
    size_t n = mlp_param_count(&a);
    double *p = calloc(n, sizeof(double)), *q = calloc(n, sizeof(double));
    mlp_init_params(&a, 42, p);
    mlp_init_params(&a, 42, q);
    cr_assert_eq(memcmp(p, q, n * sizeof(double)), 0, "same seed, same params");
    mlp_init_params(&a, 43, q);
    cr_assert_neq(memcmp(p, q, n * sizeof(double)), 0, "different seed, different params");
    const double bounds[3] = {0.25, 0.125, 0.5}; /* 1/sqrt(16), 1/sqrt(64), 1/sqrt(4) */
    for (int l = 0; l < 3; l++) {
        size_t lo = mlp_layer_w_offset(&a, l), hi = mlp_layer_w_offset(&a, l + 1);
        double mx = 0, sum = 0;
        for (size_t i = lo; i < hi; i++) {
            cr_assert(fabs(p[i]) <= bounds[l], "param %zu = %g", i, p[i]);
            mx = fmax(mx, fabs(p[i]));
            sum += p[i];
        }
        if (hi - lo > 100) {
            cr_assert_gt(mx, 0.9 * bounds[l], "covers the range");
            cr_assert_lt(fabs(sum / (double)(hi - lo)), 0.1 * bounds[l], "centred");
        }
    }
    free(p);
    free(q);
}

/* ---- forward, losses, gradients ---- */

/* 2 -> 1 linear model: out = 0.5 x0 - x1 + 0.25 on rows (1,2), (-2,-0.5), (0,0)
 * gives -1.25, -0.25, 0.25. */
static const double tmlp_lin_params[3] = {0.5, -1.0, 0.25};
static const double tmlp_lin_x[6] = {1, 2, -2, -0.5, 0, 0};

Test(mlp, mse_hand_computed) {
    struct mlp_arch a = tmlp_arch(2, 0, NULL, MLP_ACT_SILU, MLP_LOSS_MSE);
    double y[3] = {-1, 0, 1}, out[3], grad[3];
    double *s = calloc(mlp_scratch_count(&a, 3), sizeof(double));
    mlp_forward(&a, tmlp_lin_params, tmlp_lin_x, 3, s, out);
    cr_assert_float_eq(out[0], -1.25, 1e-15);
    cr_assert_float_eq(out[1], -0.25, 1e-15);
    cr_assert_float_eq(out[2], 0.25, 1e-15);
    /* errors -0.25, -0.25, -0.75: (0.0625 + 0.0625 + 0.5625) / 3 */
    cr_assert_float_eq(mlp_loss_mean(&a, out, y, 3), 0.6875 / 3, 1e-15);
    mlp_backward(&a, tmlp_lin_params, tmlp_lin_x, y, 3, 3.0, s, grad);
    /* d/dw = 2/3 sum(err * x): 2/3 * 0.25, 2/3 * -0.375; d/db = 2/3 * -1.25 */
    cr_assert_float_eq(grad[0], 1.0 / 6, 1e-15);
    cr_assert_float_eq(grad[1], -0.25, 1e-15);
    cr_assert_float_eq(grad[2], -5.0 / 6, 1e-15);
    free(s);
}

Test(mlp, bce_hand_computed) {
    struct mlp_arch a = tmlp_arch(2, 0, NULL, MLP_ACT_RELU, MLP_LOSS_BCE);
    double y[3] = {0, 1, 1}, out[3], grad[3];
    double *s = calloc(mlp_scratch_count(&a, 3), sizeof(double));
    mlp_forward(&a, tmlp_lin_params, tmlp_lin_x, 3, s, out);
    /* log(1+e^-1.25)... per row: softplus(z) for y=0, softplus(-z) for y=1 */
    cr_assert_float_eq(mlp_loss_mean(&a, out, y, 3), 0.55126930703435337, 1e-14);
    mlp_backward(&a, tmlp_lin_params, tmlp_lin_x, y, 3, 3.0, s, grad);
    /* (sigmoid(z) - y) / 3 summed against x: sigmoid(-1.25) = 0.2227001388253088 */
    cr_assert_float_eq(grad[0], 0.4490177135323017, 1e-14);
    cr_assert_float_eq(grad[1], 0.24216284269783891, 1e-14);
    cr_assert_float_eq(grad[2], -0.2590999537248971, 1e-14);
    free(s);
}

Test(mlp, bce_stable_at_extreme_logits) {
    struct mlp_arch a = tmlp_arch(2, 0, NULL, MLP_ACT_SILU, MLP_LOSS_BCE);
    const double p[3] = {400, 0, 0}, x[4] = {2, 0, -2, 0}; /* logits 800, -800 */
    double out[2], grad[3], s[16];
    cr_assert_geq(16, mlp_scratch_count(&a, 2));
    mlp_forward(&a, p, x, 2, s, out);
    double y1[2] = {1, 0}; /* confidently right: loss ~ 0 */
    cr_assert_float_eq(mlp_loss_mean(&a, out, y1, 2), 0.0, 1e-300);
    double y2[2] = {0, 1}; /* confidently wrong: 800 each */
    cr_assert_float_eq(mlp_loss_mean(&a, out, y2, 2), 800.0, 1e-9);
    mlp_backward(&a, p, x, y2, 2, 2.0, s, grad);
    /* (1 - 0) * 2 / 2 + (0 - 1) * -2 / 2 = 2 */
    cr_assert_float_eq(grad[0], 2.0, 1e-12);
    cr_assert_float_eq(grad[2], 0.0, 1e-12);
}

/* Forward matches the naive reference; backward matches central differences of the
 * reference objective for every parameter. rel = |a - b| / max(1e-6, |a| + |b|). */
static void tmlp_check_grad(struct mlp_arch a, size_t rows, double scale, uint64_t seed) {
    size_t n = mlp_param_count(&a), ni = (size_t)a.n_in;
    double *p = malloc(n * sizeof(double)), *g = malloc(n * sizeof(double));
    double *x = malloc(rows * ni * sizeof(double)), *y = malloc(rows * sizeof(double));
    double *out = malloc(rows * sizeof(double));
    double *s = malloc(mlp_scratch_count(&a, rows) * sizeof(double));
    tmlp_rng_state = seed;
    mlp_init_params(&a, seed, p);
    for (size_t i = 0; i < rows * ni; i++)
        x[i] = tmlp_uniform(-2, 2);
    for (size_t r = 0; r < rows; r++)
        y[r] = a.loss == MLP_LOSS_BCE ? (r % 3 == 0 ? 0.3 : (double)(r % 2)) : tmlp_uniform(-1, 1);
    mlp_forward(&a, p, x, rows, s, out);
    double min_pre = INFINITY;
    for (size_t r = 0; r < rows; r++)
        cr_assert_float_eq(out[r], tmlp_ref_forward(&a, p, x + r * ni, &min_pre), 1e-12);
    cr_assert_gt(min_pre, 1e-3, "test data too close to a ReLU kink");
    mlp_backward(&a, p, x, y, rows, scale, s, g);
    const double h = 1e-6;
    for (size_t i = 0; i < n; i++) {
        double keep = p[i], mp = INFINITY;
        p[i] = keep + h;
        double fp = tmlp_ref_objective(&a, p, x, y, rows, scale, &mp);
        p[i] = keep - h;
        double fm = tmlp_ref_objective(&a, p, x, y, rows, scale, &mp);
        p[i] = keep;
        double fd = (fp - fm) / (2 * h);
        double rel = fabs(fd - g[i]) / fmax(1e-6, fabs(fd) + fabs(g[i]));
        cr_assert_lt(rel, 1e-4, "param %zu: backward %.12g, fd %.12g", i, g[i], fd);
    }
    free(p), free(g), free(x), free(y), free(out), free(s);
}

Test(mlp, grad_silu_mse_5_7_3_1) {
    tmlp_check_grad(tmlp_arch(5, 2, (int[]){7, 3}, MLP_ACT_SILU, MLP_LOSS_MSE), 6, 6.0, 11);
}

Test(mlp, grad_relu_bce_4_6_1) {
    tmlp_check_grad(tmlp_arch(4, 1, (int[]){6}, MLP_ACT_RELU, MLP_LOSS_BCE), 7, 7.0, 12);
}

Test(mlp, grad_silu_bce_deep_with_scale) {
    tmlp_check_grad(tmlp_arch(3, 3, (int[]){5, 4, 6}, MLP_ACT_SILU, MLP_LOSS_BCE), 5, 16.0, 13);
}

Test(mlp, grad_relu_mse_and_linear) {
    tmlp_check_grad(tmlp_arch(6, 2, (int[]){8, 5}, MLP_ACT_RELU, MLP_LOSS_MSE), 4, 2.5, 14);
    tmlp_check_grad(tmlp_arch(3, 0, NULL, MLP_ACT_SILU, MLP_LOSS_MSE), 5, 5.0, 15);
}

/* Per the header: slices of a batch with scale = batch size add up to the batch gradient. */
Test(mlp, backward_slices_add_up) {
    struct mlp_arch a = tmlp_arch(4, 2, (int[]){6, 5}, MLP_ACT_SILU, MLP_LOSS_MSE);
    size_t n = mlp_param_count(&a), rows = 10;
    double p[200], x[40], y[10], out[10], g[200], g1[200], g2[200];
    cr_assert_leq(n, 200);
    double *s = malloc(mlp_scratch_count(&a, rows) * sizeof(double));
    tmlp_rng_state = 5;
    for (size_t i = 0; i < 40; i++)
        x[i] = tmlp_uniform(-1, 1);
    for (size_t i = 0; i < 10; i++)
        y[i] = tmlp_uniform(-1, 1);
    mlp_init_params(&a, 5, p);
    mlp_forward(&a, p, x, rows, s, out);
    mlp_backward(&a, p, x, y, rows, 10.0, s, g);
    mlp_forward(&a, p, x, 3, s, out);
    mlp_backward(&a, p, x, y, 3, 10.0, s, g1);
    mlp_forward(&a, p, x + 12, 7, s, out);
    mlp_backward(&a, p, x + 12, y + 3, 7, 10.0, s, g2);
    for (size_t i = 0; i < n; i++)
        cr_assert_float_eq(g1[i] + g2[i], g[i], 1e-14);
    free(s);
}

/* ---- Adam ---- */

Test(mlp, adam_two_steps_hand_computed) {
    struct mlp_adam_conf c;
    struct mlp_adam s;
    mlp_adam_conf_default(&c);
    cr_assert_float_eq(c.lr, 2e-4, 0);
    cr_assert_float_eq(c.beta1, 0.9, 0);
    cr_assert_float_eq(c.beta2, 0.999, 0);
    cr_assert_float_eq(c.eps, 1e-8, 0);
    cr_assert_float_eq(c.weight_decay, 0.0, 0);
    c.lr = 0.1;
    cr_assert_eq(mlp_adam_init(&s, &c, 3), 0);
    double p[3] = {1.0, -2.0, 0.5};
    mlp_adam_step(&s, p, (double[]){0.1, -0.2, 0.0});
    /* step 1: m_hat = g, v_hat = g^2, so p -= lr * g / (|g| + eps); g = 0 does not move */
    cr_assert_float_eq(p[0], 1.0 - 0.1 * 0.1 / (0.1 + 1e-8), 1e-15);
    cr_assert_float_eq(p[1], -2.0 + 0.1 * 0.2 / (0.2 + 1e-8), 1e-15);
    cr_assert_float_eq(p[2], 0.5, 0);
    double p1[3] = {p[0], p[1], p[2]};
    mlp_adam_step(&s, p, (double[]){0.3, 0.1, -0.4});
    /* m2 = 0.9 * 0.1 g1 + 0.1 g2; v2 = 0.999 * 0.001 g1^2 + 0.001 g2^2;
     * bias corrections 1 - 0.9^2 = 0.19 and 1 - 0.999^2 = 0.001999 */
    cr_assert_eq(s.t, 2);
    cr_assert_float_eq(s.m[0], 0.039, 1e-15);
    cr_assert_float_eq(s.v[0], 0.00009999, 1e-18);
    cr_assert_float_eq(s.m[1], -0.008, 1e-15);
    cr_assert_float_eq(s.v[1], 0.00004996, 1e-18);
    cr_assert_float_eq(s.m[2], -0.04, 1e-15);
    cr_assert_float_eq(s.v[2], 0.00016, 1e-18);
    cr_assert_float_eq(p[0], p1[0] - 0.1 * (0.039 / 0.19) / (sqrt(0.00009999 / 0.001999) + 1e-8),
                       1e-14);
    cr_assert_float_eq(p[1], p1[1] - 0.1 * (-0.008 / 0.19) / (sqrt(0.00004996 / 0.001999) + 1e-8),
                       1e-14);
    cr_assert_float_eq(p[2], 0.5 - 0.1 * (-0.04 / 0.19) / (sqrt(0.00016 / 0.001999) + 1e-8), 1e-14);
    mlp_adam_fini(&s);
    cr_assert_null(s.m);
}

Test(mlp, adam_weight_decay_is_l2_not_adamw) {
    struct mlp_adam_conf c = {
        .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.5};
    struct mlp_adam s;
    cr_assert_eq(mlp_adam_init(&s, &c, 1), 0);
    double p = 2.0;
    mlp_adam_step(&s, &p, (double[]){0.1});
    /* g = 0.1 + 0.5 * 2 = 1.1 enters m and v; step 1 moves by lr * 1.1 / (1.1 + eps) */
    double p1 = 2.0 - 0.01 * 1.1 / (1.1 + 1e-8);
    cr_assert_float_eq(p, p1, 1e-15);
    cr_assert_float_eq(s.m[0], 0.11, 1e-15);
    mlp_adam_step(&s, &p, (double[]){0.1});
    double g2 = 0.1 + 0.5 * p1;
    double m2 = 0.9 * 0.11 + 0.1 * g2, v2 = 0.999 * 0.001 * 1.21 + 0.001 * g2 * g2;
    cr_assert_float_eq(p, p1 - 0.01 * (m2 / 0.19) / (sqrt(v2 / 0.001999) + 1e-8), 1e-14);
    mlp_adam_fini(&s);
}

/* ---- training ---- */

static double tmlp_eval_mse(const struct mlp_arch *a, const double *p, const double *x,
                            const double *y, size_t rows, double *s) {
    double out[512];
    mlp_forward(a, p, x, rows, s, out);
    return mlp_loss_mean(a, out, y, rows);
}

Test(mlp, training_converges_on_synthetic_target) {
    struct mlp_arch a = tmlp_arch(3, 2, (int[]){32, 16}, MLP_ACT_SILU, MLP_LOSS_MSE);
    enum { N = 512, B = 64, STEPS = 400 };
    size_t n = mlp_param_count(&a);
    static double x[N * 3], y[N], bx[B * 3], by[B];
    double *p = malloc(n * sizeof(double)), *g = malloc(n * sizeof(double));
    double *s = malloc(mlp_scratch_count(&a, N) * sizeof(double)), out[B], mean = 0, var = 0;
    tmlp_rng_state = 99;
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 3; k++)
            x[i * 3 + k] = tmlp_uniform(-2, 2);
        y[i] = sin(x[i * 3]) + 0.5 * x[i * 3 + 1] * x[i * 3 + 2];
        mean += y[i] / N;
    }
    for (int i = 0; i < N; i++)
        var += (y[i] - mean) * (y[i] - mean) / N;
    struct mlp_adam_conf c = {.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    struct mlp_adam opt;
    cr_assert_eq(mlp_adam_init(&opt, &c, n), 0);
    mlp_init_params(&a, 7, p);
    double initial = tmlp_eval_mse(&a, p, x, y, N, s);
    for (int step = 0; step < STEPS; step++) {
        for (int r = 0; r < B; r++) {
            int i = (int)tmlp_uniform(0, N);
            memcpy(bx + r * 3, x + i * 3, 3 * sizeof(double));
            by[r] = y[i];
        }
        mlp_forward(&a, p, bx, B, s, out);
        mlp_backward(&a, p, bx, by, B, B, s, g);
        mlp_adam_step(&opt, p, g);
    }
    double final = tmlp_eval_mse(&a, p, x, y, N, s);
    cr_assert_lt(final, 0.1 * initial, "initial %g final %g", initial, final);
    cr_assert_lt(final, 0.1 * var, "var(y) %g final %g", var, final);
    mlp_adam_fini(&opt);
    free(p), free(g), free(s);
}

/* ---- checkpoints ---- */

static char tmlp_dir[512];

static void tmlp_ckpt_setup(void) {
    cr_assert_eq(rs_test_tmpdir(tmlp_dir, sizeof(tmlp_dir)), 0);
}

static void tmlp_ckpt_teardown(void) {
    rs_test_rmtree(tmlp_dir);
}

/* A checkpoint with every field distinct, including awkward doubles. */
static void tmlp_ckpt_fill(struct mlp_ckpt *c) {
    struct mlp_arch a = tmlp_arch(4, 2, (int[]){5, 3}, MLP_ACT_RELU, MLP_LOSS_BCE);
    cr_assert_eq(mlp_ckpt_alloc(c, &a), 0);
    cr_assert_eq(c->adam.n, 47); /* 4*5+5 + 5*3+3 + 3+1 */
    for (int i = 0; i < 4; i++) {
        c->norm_mean[i] = 0.1 * i - 0.3;
        c->norm_std[i] = 1.5 + i;
    }
    c->norm_mean[0] = -0.0;
    c->norm_std[3] = nextafter(1e-12, 1.0); /* just above the smallest a load takes */
    c->y_mean = -12.5;
    c->y_std = 3.25;
    c->epoch = 17;
    c->step = ((int64_t)1 << 40) + 7;
    c->data_fingerprint = 0xDEADBEEFCAFEF00Dull;
    c->train_loss = 0.123456789;
    c->val_loss = INFINITY;
    c->adam.conf = (struct mlp_adam_conf){1e-3, 0.8, 0.99, 1e-7, 0.01};
    c->adam.t = 12345;
    for (size_t i = 0; i < c->adam.n; i++) {
        c->params[i] = sin((double)i) * 1e3;
        c->adam.m[i] = -1.0 / (double)(i + 1);
        c->adam.v[i] = (double)i * 1e-9;
    }
    c->params[5] = -0.0; /* the sign of zero survives (a NaN is refused at load) */
}

static void tmlp_path(char *out, size_t len, const char *name) {
    snprintf(out, len, "%s/%s", tmlp_dir, name);
}

static unsigned char *tmlp_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len);
    cr_assert_eq(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static void tmlp_write(const char *path, const unsigned char *b, size_t len) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, len, f), len);
    fclose(f);
}

static void tmlp_put_le32(unsigned char *b, uint32_t v) {
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void tmlp_fix_crc(unsigned char *b, size_t len) {
    tmlp_put_le32(b + len - 4, crc32_update(0, b, len - 4));
}

/* Load must fail with rc and exactly msg, and leave the struct zeroed. */
static void tmlp_expect_load_error(const char *path, int rc, const char *msg) {
    struct mlp_ckpt c, zero;
    char err[512] = "";
    memset(&c, 0xAB, sizeof(c));
    memset(&zero, 0, sizeof(zero));
    cr_assert_eq(mlp_ckpt_load(path, &c, err, sizeof(err)), rc, "err: %s", err);
    if (msg)
        cr_assert_str_eq(err, msg);
    else
        cr_assert_not_null(strstr(err, "beyond what a run reaches"), "%s", err);
    cr_assert_eq(memcmp(&c, &zero, sizeof(c)), 0, "struct zeroed after a failed load");
}

static void tmlp_assert_same_doubles(const double *a, const double *b, size_t n) {
    cr_assert_eq(memcmp(a, b, n * sizeof(double)), 0, "bit-identical arrays");
}

Test(mlp, ckpt_round_trip, .init = tmlp_ckpt_setup, .fini = tmlp_ckpt_teardown) {
    struct mlp_ckpt c, d;
    char path[600], err[512] = "";
    tmlp_ckpt_fill(&c);
    tmlp_path(path, sizeof(path), "model.ckpt");
    cr_assert_eq(mlp_ckpt_save(path, &c, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(mlp_ckpt_load(path, &d, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(memcmp(&c.arch, &d.arch, sizeof(c.arch)), 0);
    tmlp_assert_same_doubles(c.norm_mean, d.norm_mean, 4);
    tmlp_assert_same_doubles(c.norm_std, d.norm_std, 4);
    tmlp_assert_same_doubles(&c.y_mean, &d.y_mean, 1);
    tmlp_assert_same_doubles(&c.y_std, &d.y_std, 1);
    tmlp_assert_same_doubles(&c.train_loss, &d.train_loss, 1);
    tmlp_assert_same_doubles(&c.val_loss, &d.val_loss, 1);
    cr_assert_eq(d.epoch, 17);
    cr_assert_eq(d.step, ((int64_t)1 << 40) + 7);
    cr_assert_eq(d.data_fingerprint, 0xDEADBEEFCAFEF00Dull);
    cr_assert_eq(memcmp(&c.adam.conf, &d.adam.conf, sizeof(c.adam.conf)), 0);
    cr_assert_eq(d.adam.t, 12345);
    cr_assert_eq(d.adam.n, 47);
    tmlp_assert_same_doubles(c.params, d.params, 47);
    tmlp_assert_same_doubles(c.adam.m, d.adam.m, 47);
    tmlp_assert_same_doubles(c.adam.v, d.adam.v, 47);
    mlp_ckpt_fini(&c);
    mlp_ckpt_fini(&d);
    cr_assert_null(d.params);
}

Test(mlp, ckpt_byte_layout, .init = tmlp_ckpt_setup, .fini = tmlp_ckpt_teardown) {
    struct mlp_ckpt c;
    char path[600], err[512] = "";
    size_t len;
    tmlp_ckpt_fill(&c);
    tmlp_path(path, sizeof(path), "model.ckpt");
    cr_assert_eq(mlp_ckpt_save(path, &c, err, sizeof(err)), 0, "%s", err);
    unsigned char *b = tmlp_read(path, &len);
    cr_assert_eq(len, 112 + 16 * 4 + 56 + 24 * 47 + 4);
    cr_assert_eq(memcmp(b, "RSIDEMLP", 8), 0);
    const unsigned char head[] = {1, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0};
    cr_assert_eq(memcmp(b + 8, head, sizeof(head)), 0, "version, n_in, n_hidden, hidden");
    cr_assert_eq(b[52], 1, "act relu");
    cr_assert_eq(b[56], 1, "loss bce");
    cr_assert_eq(b[60], 17, "epoch");
    cr_assert_eq(b[72], 0x0D, "fingerprint low byte first");
    cr_assert_eq(b[79], 0xDE);
    const unsigned char y_mean[8] = {0, 0, 0, 0, 0, 0, 0x29, 0xC0}; /* -12.5 */
    cr_assert_eq(memcmp(b + 96, y_mean, 8), 0);
    uint32_t crc = (uint32_t)b[len - 4] | (uint32_t)b[len - 3] << 8 | (uint32_t)b[len - 2] << 16 |
                   (uint32_t)b[len - 1] << 24;
    cr_assert_eq(crc, crc32_update(0, b, len - 4));
    free(b);
    mlp_ckpt_fini(&c);
}

Test(mlp, ckpt_corruption_detected, .init = tmlp_ckpt_setup, .fini = tmlp_ckpt_teardown) {
    struct mlp_ckpt c;
    char path[600], bad[600], err[512] = "", msg[1024];
    size_t len;
    tmlp_ckpt_fill(&c);
    tmlp_path(path, sizeof(path), "model.ckpt");
    tmlp_path(bad, sizeof(bad), "bad.ckpt");
    cr_assert_eq(mlp_ckpt_save(path, &c, err, sizeof(err)), 0, "%s", err);
    mlp_ckpt_fini(&c);
    unsigned char *b = tmlp_read(path, &len);
    /* truncations: the smallest valid file (n_in 1, no hidden) is 112 + 16 + 56 + 48 + 4 */
    const size_t cuts[] = {0, 5, 10, 100, 235};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        tmlp_write(bad, b, cuts[i]);
        snprintf(msg, sizeof(msg), "%s: truncated: %zu of at least 236 bytes", bad, cuts[i]);
        tmlp_expect_load_error(bad, -EINVAL, msg);
    }
    const size_t cuts2[] = {236, len / 2, len - 4, len - 1};
    for (size_t i = 0; i < sizeof(cuts2) / sizeof(cuts2[0]); i++) {
        tmlp_write(bad, b, cuts2[i]);
        snprintf(msg, sizeof(msg), "%s: truncated or corrupt: %zu of %zu bytes (checksum mismatch)",
                 bad, cuts2[i], len);
        tmlp_expect_load_error(bad, -EINVAL, msg);
    }
    unsigned char *m = malloc(len + 1);
    memcpy(m, b, len);
    m[len] = 0;
    tmlp_write(bad, m, len + 1);
    snprintf(msg, sizeof(msg),
             "%s: 1 trailing bytes after the checkpoint (checksum mismatch: corrupt)", bad);
    tmlp_expect_load_error(bad, -EINVAL, msg);
    m[len / 2] ^= 0x40;
    tmlp_write(bad, m, len);
    snprintf(msg, sizeof(msg), "%s: checksum mismatch: the file is corrupt", bad);
    tmlp_expect_load_error(bad, -EINVAL, msg);
    memcpy(m, b, len);
    m[0] = 'X';
    tmlp_write(bad, m, len);
    snprintf(msg, sizeof(msg), "%s: not a ringside checkpoint (bad magic)", bad);
    tmlp_expect_load_error(bad, -EINVAL, msg);
    memcpy(m, b, len);
    tmlp_put_le32(m + 8, 2);
    tmlp_fix_crc(m, len);
    tmlp_write(bad, m, len);
    snprintf(msg, sizeof(msg), "%s: unsupported checkpoint version 2 (this build reads 1)", bad);
    tmlp_expect_load_error(bad, -EINVAL, msg);
    free(m);
    free(b);
}

Test(mlp, ckpt_corrupt_header_with_valid_crc, .init = tmlp_ckpt_setup, .fini = tmlp_ckpt_teardown) {
    struct mlp_ckpt c;
    char path[600], err[512] = "", msg[1024];
    size_t len;
    tmlp_ckpt_fill(&c);
    tmlp_path(path, sizeof(path), "model.ckpt");
    cr_assert_eq(mlp_ckpt_save(path, &c, err, sizeof(err)), 0, "%s", err);
    mlp_ckpt_fini(&c);
    unsigned char *b = tmlp_read(path, &len), *m = malloc(len);
    memcpy(m, b, len);
    tmlp_put_le32(m + 12, 0); /* n_in 0 */
    tmlp_fix_crc(m, len);
    tmlp_write(path, m, len);
    snprintf(msg, sizeof(msg), "%s: corrupt header: n_in 0 not in 1..4096", path);
    tmlp_expect_load_error(path, -EINVAL, msg);
    memcpy(m, b, len);
    tmlp_put_le32(m + 24, 300); /* hidden[1] */
    tmlp_fix_crc(m, len);
    tmlp_write(path, m, len);
    snprintf(msg, sizeof(msg), "%s: corrupt header: hidden[1] = 300 not in 1..256", path);
    tmlp_expect_load_error(path, -EINVAL, msg);
    memcpy(m, b, len);
    size_t n_params_at = 112 + 16 * 4 + 48;
    tmlp_put_le32(m + n_params_at, 46);
    tmlp_fix_crc(m, len);
    tmlp_write(path, m, len);
    snprintf(msg, sizeof(msg), "%s: corrupt header: n_params 46, the arch has 47", path);
    tmlp_expect_load_error(path, -EINVAL, msg);
    /* a file written that way, its checksum right: an epoch no run reaches (it would overflow
     * the next), a NaN parameter */
    memcpy(m, b, len);
    tmlp_put_le32(m + 60, INT32_MAX);
    tmlp_fix_crc(m, len);
    tmlp_write(path, m, len);
    tmlp_expect_load_error(path, -EINVAL, NULL);
    memcpy(m, b, len);
    double nan = NAN;
    memcpy(m + n_params_at + 8 + 8 * 3, &nan, 8); /* the fourth parameter */
    tmlp_fix_crc(m, len);
    tmlp_write(path, m, len);
    snprintf(msg, sizeof(msg), "%s: params[3] is nan: not a finite number", path);
    tmlp_expect_load_error(path, -EINVAL, msg);
    free(m);
    free(b);
}

/* Numbers a file can hold but the model cannot run with, its checksum right: each is refused
 * at load, naming the field and its value. The model runs in float32, so a finite double past
 * float32's range would be an infinity there (every output NaN), and a standard deviation
 * below training's floor would make the normalised features overflow. */
Test(mlp, ckpt_numbers_float32_cannot_run, .init = tmlp_ckpt_setup, .fini = tmlp_ckpt_teardown) {
    struct mlp_ckpt c;
    char path[600], err[512] = "", msg[1024];
    size_t len;
    tmlp_ckpt_fill(&c);
    tmlp_path(path, sizeof(path), "model.ckpt");
    cr_assert_eq(mlp_ckpt_save(path, &c, err, sizeof(err)), 0, "%s", err);
    mlp_ckpt_fini(&c);
    unsigned char *b = tmlp_read(path, &len), *m = malloc(len);
    /* n_in 4: norm_mean at 112, norm_std at 144, Adam's 56 bytes, then params, m, v (47 each) */
    size_t params = 112 + 16 * 4 + 56, am = params + 8 * 47, av = am + 8 * 47;
    static const struct {
        size_t off_from; /* 0: params, 1: adam m, 2: adam v, 3: the header */
        size_t off;
        double v;
        const char *said;
    } cases[] = {
        {0, 0, 1e308, "params[0] is 1e+308: beyond float32's range (the model runs in float32)"},
        {0, 8 * 46, -3.5e38, "params[46] is -3.5e+38: beyond float32's range"},
        {1, 8 * 2, 1e39, "adam m[2] is 1e+39: beyond float32's range"},
        {2, 8 * 1, 1e300, "adam v[1] is 1e+300: beyond float32's range"},
        {2, 8 * 1, -1e-3, "adam v[1] is -0.001: a second moment cannot be negative"},
        {3, 112 + 8 * 1, -1e308, "norm_mean[1] is -1e+308: beyond float32's range"},
        {3, 144 + 8 * 2, 5e-324,
         "norm_std[2] is 4.94066e-324: below 1e-12, the smallest standard deviation training "
         "writes"},
        {3, 144, 9e-13, "norm_std[0] is 9e-13: below 1e-12"},
        {3, 144 + 8 * 3, 1e40, "norm_std[3] is 1e+40: beyond float32's range"},
        {3, 96, 4e38, "y_mean is 4e+38: beyond float32's range"},
        {3, 104, 0.0, "y_std is 0: below 1e-12"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const size_t from[] = {params, am, av, 0};
        size_t at = from[cases[k].off_from] + cases[k].off;
        memcpy(m, b, len);
        memcpy(m + at, &cases[k].v, 8);
        tmlp_fix_crc(m, len);
        tmlp_write(path, m, len);
        struct mlp_ckpt d;
        cr_assert_eq(mlp_ckpt_load(path, &d, err, sizeof(err)), -EINVAL, "case %zu loaded", k);
        snprintf(msg, sizeof(msg), "%s: %s", path, cases[k].said);
        cr_assert(strncmp(err, msg, strlen(msg)) == 0, "want '%s', got '%s'", msg, err);
    }
    /* float32's own extremes run: they load */
    memcpy(m, b, len);
    double edge[] = {FLT_MAX, -FLT_MAX, 1e-12};
    memcpy(m + params, &edge[0], 8);
    memcpy(m + params + 8, &edge[1], 8);
    memcpy(m + 144, &edge[2], 8);
    tmlp_fix_crc(m, len);
    tmlp_write(path, m, len);
    struct mlp_ckpt d;
    cr_assert_eq(mlp_ckpt_load(path, &d, err, sizeof(err)), 0, "%s", err);
    mlp_ckpt_fini(&d);
    free(m);
    free(b);
}

Test(mlp, ckpt_missing_file) {
    tmlp_expect_load_error("/nonexistent-ringside/x.ckpt", -ENOENT,
                           "cannot open /nonexistent-ringside/x.ckpt: No such file or directory");
}

Test(mlp, ckpt_failed_save_keeps_old_file, .init = tmlp_ckpt_setup, .fini = tmlp_ckpt_teardown) {
    struct mlp_ckpt c, d;
    char path[600], tmp[700], nodir[600], err[512] = "";
    size_t len0, len1;
    tmlp_ckpt_fill(&c);
    tmlp_path(nodir, sizeof(nodir), "missing-dir/model.ckpt");
    cr_assert_eq(mlp_ckpt_save(nodir, &c, err, sizeof(err)), -ENOENT, "%s", err);
    cr_assert_neq(access(nodir, F_OK), 0);
    tmlp_path(path, sizeof(path), "model.ckpt");
    cr_assert_eq(mlp_ckpt_save(path, &c, err, sizeof(err)), 0, "%s", err);
    unsigned char *before = tmlp_read(path, &len0);
    /* A directory where the temp file goes makes the next save fail after validation. */
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    cr_assert_eq(mkdir(tmp, 0700), 0);
    c.epoch = 99;
    cr_assert_lt(mlp_ckpt_save(path, &c, err, sizeof(err)), 0);
    rmdir(tmp);
    c.adam.n = 3; /* arrays no longer match the arch */
    cr_assert_eq(mlp_ckpt_save(path, &c, err, sizeof(err)), -EINVAL);
    c.adam.n = 47;
    unsigned char *after = tmlp_read(path, &len1);
    cr_assert_eq(len0, len1);
    cr_assert_eq(memcmp(before, after, len0), 0, "old checkpoint untouched");
    cr_assert_eq(mlp_ckpt_load(path, &d, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(d.epoch, 17);
    free(before);
    free(after);
    mlp_ckpt_fini(&c);
    mlp_ckpt_fini(&d);
}

/* ---- safetensors ---- */

/* The tensor entry name of header h: F32, shape (d0[, d1]) and bytes [lo, hi). */
static void tmlp_st_entry(json_object *h, const char *name, int d0, int d1, int64_t lo,
                          int64_t hi) {
    json_object *t, *v;
    cr_assert(json_object_object_get_ex(h, name, &t), "no %s", name);
    cr_assert(json_object_object_get_ex(t, "dtype", &v));
    cr_assert_str_eq(json_object_get_string(v), "F32");
    cr_assert(json_object_object_get_ex(t, "shape", &v));
    cr_assert_eq(json_object_array_length(v), d1 > 0 ? 2u : 1u, "%s", name);
    cr_assert_eq(json_object_get_int(json_object_array_get_idx(v, 0)), d0, "%s", name);
    if (d1 > 0)
        cr_assert_eq(json_object_get_int(json_object_array_get_idx(v, 1)), d1, "%s", name);
    cr_assert(json_object_object_get_ex(t, "data_offsets", &v));
    cr_assert_eq(json_object_get_int64(json_object_array_get_idx(v, 0)), lo, "%s", name);
    cr_assert_eq(json_object_get_int64(json_object_array_get_idx(v, 1)), hi, "%s", name);
}

/* The layout PyTorch's nn.Sequential(Linear, act, Linear, act, Linear) names, read back as a
 * reader without ringside reads it: the header's length, its JSON, each tensor's bytes. */
Test(mlp_ckpt, safetensors_names_shapes_and_values, .init = tmlp_ckpt_setup,
     .fini = tmlp_ckpt_teardown) {
    struct mlp_ckpt c;
    tmlp_ckpt_fill(&c);
    char path[1024], err[256];
    tmlp_path(path, sizeof(path), "m.safetensors");
    cr_assert_eq(mlp_safetensors_write(path, &c, "{\"format\":\"ringside-mlp\"}", err, sizeof(err)),
                 0, "%s", err);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    uint8_t head[8];
    cr_assert_eq(fread(head, 1, 8, f), 8u);
    uint64_t n = 0;
    for (int b = 0; b < 8; b++)
        n |= (uint64_t)head[b] << (8 * b);
    cr_assert_eq(n % 8, 0u, "the data starts 8-aligned");
    char *text = calloc(1, n + 1);
    cr_assert_eq(fread(text, 1, n, f), n);
    json_object *h = json_tokener_parse(text);
    cr_assert_not_null(h, "%s", text);
    /* 4 -> 5 -> 3 -> 1: weights [out, in] as PyTorch's Linear keeps them */
    tmlp_st_entry(h, "0.weight", 5, 4, 0, 80);
    tmlp_st_entry(h, "0.bias", 5, 0, 80, 100);
    tmlp_st_entry(h, "2.weight", 3, 5, 100, 160);
    tmlp_st_entry(h, "2.bias", 3, 0, 160, 172);
    tmlp_st_entry(h, "4.weight", 1, 3, 172, 184);
    tmlp_st_entry(h, "4.bias", 1, 0, 184, 188);
    json_object *md, *v;
    cr_assert(json_object_object_get_ex(h, "__metadata__", &md));
    cr_assert(json_object_object_get_ex(md, "target_std", &v));
    cr_assert_eq(strtod(json_object_get_string(v), NULL), 3.25);
    cr_assert(json_object_object_get_ex(md, "ringside", &v));
    cr_assert_str_eq(json_object_get_string(v), "{\"format\":\"ringside-mlp\"}");
    uint8_t data[188];
    cr_assert_eq(fread(data, 1, sizeof(data), f), sizeof(data));
    cr_assert_eq(fgetc(f), EOF, "nothing after the last tensor");
    for (size_t i = 0; i < c.adam.n; i++) { /* the parameter vector's order is the file's */
        uint32_t u = (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
                     (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24;
        float x;
        memcpy(&x, &u, sizeof(x));
        float want = (float)c.params[i];
        cr_assert(x == want || (isnan(x) && isnan(want)), "[%zu] %g, want %g", i, (double)x,
                  (double)want);
    }
    fclose(f);
    free(text);
    json_object_put(h);
    mlp_ckpt_fini(&c);
}
