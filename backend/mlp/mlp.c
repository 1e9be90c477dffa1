/* Reference double-precision MLP: layout, init, forward/backward, losses and Adam. */
#include "backend/mlp/mlp.h"

#include "backend/core/errbuf.h"
#include "backend/core/rng.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- architecture and parameter layout ---- */

int mlp_layer_in(const struct mlp_arch *a, int l) {
    return l == 0 ? a->n_in : a->hidden[l - 1];
}

int mlp_layer_out(const struct mlp_arch *a, int l) {
    return l == a->n_hidden ? 1 : a->hidden[l];
}

static size_t mlp_layer_size(const struct mlp_arch *a, int l) {
    size_t out = (size_t)mlp_layer_out(a, l);
    return (size_t)mlp_layer_in(a, l) * out + out;
}

size_t mlp_layer_w_offset(const struct mlp_arch *a, int l) {
    size_t off = 0;
    for (int k = 0; k < l; k++)
        off += mlp_layer_size(a, k);
    return off;
}

size_t mlp_layer_b_offset(const struct mlp_arch *a, int l) {
    return mlp_layer_w_offset(a, l) + (size_t)mlp_layer_in(a, l) * (size_t)mlp_layer_out(a, l);
}

size_t mlp_param_count(const struct mlp_arch *a) {
    return mlp_layer_w_offset(a, a->n_hidden + 1);
}

/* ---- names and parsing ---- */

const char *mlp_act_name(enum mlp_act a) {
    return a == MLP_ACT_RELU ? "relu" : "silu";
}

const char *mlp_loss_name(enum mlp_loss l) {
    return l == MLP_LOSS_BCE ? "bce" : "mse";
}

int mlp_act_parse(const char *s, enum mlp_act *out) {
    if (strcmp(s, "silu") == 0)
        *out = MLP_ACT_SILU;
    else if (strcmp(s, "relu") == 0)
        *out = MLP_ACT_RELU;
    else
        return -EINVAL;
    return 0;
}

int mlp_loss_parse(const char *s, enum mlp_loss *out) {
    if (strcmp(s, "mse") == 0)
        *out = MLP_LOSS_MSE;
    else if (strcmp(s, "bce") == 0)
        *out = MLP_LOSS_BCE;
    else
        return -EINVAL;
    return 0;
}

/* One width token of len bytes (digits only); -1 when it is not a width in range. */
static int mlp_width_parse(const char *s, size_t len) {
    if (len == 0 || len > 4)
        return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= 1 && v <= MLP_MAX_WIDTH ? v : -1;
}

int mlp_hidden_parse(const char *s, struct mlp_arch *a, char *err, size_t errlen) {
    int widths[MLP_MAX_HIDDEN];
    int n = 0;
    if (!s || !*s)
        return errbuf_set(err, errlen, -EINVAL, "--hidden: empty list (want e.g. 32,16)");
    for (const char *p = s;; p++) {
        size_t len = strcspn(p, ",");
        if (n == MLP_MAX_HIDDEN)
            return errbuf_set(err, errlen, -EINVAL, "--hidden: at most %d layers", MLP_MAX_HIDDEN);
        widths[n] = mlp_width_parse(p, len);
        if (widths[n] < 0)
            return errbuf_set(err, errlen, -EINVAL, "--hidden: '%.*s' is not a width in 1..%d",
                              (int)(len > 32 ? 32 : len), p, MLP_MAX_WIDTH);
        n++;
        p += len;
        if (*p == '\0')
            break;
    }
    memset(a->hidden, 0, sizeof(a->hidden));
    memcpy(a->hidden, widths, (size_t)n * sizeof(int));
    a->n_hidden = n;
    return 0;
}

/* ---- init ---- */

void mlp_init_params(const struct mlp_arch *a, uint64_t seed, double *params) {
    uint64_t state = seed;
    double *p = params;
    for (int l = 0; l <= a->n_hidden; l++) {
        double bound = 1.0 / sqrt((double)mlp_layer_in(a, l));
        size_t n = mlp_layer_size(a, l);
        for (size_t i = 0; i < n; i++) {
            double u = (double)(rng_splitmix64(&state) >> 11) * 0x1.0p-53; /* [0, 1) */
            *p++ = (2.0 * u - 1.0) * bound;
        }
    }
}

/* ---- forward ---- */

/* Scratch: for each layer l, z_l[rows][out_l] then a_l[rows][out_l]; after the last layer
 * two delta buffers of rows * max_out doubles used by backward. */
static size_t mlp_max_out(const struct mlp_arch *a) {
    int m = 1;
    for (int l = 0; l < a->n_hidden; l++)
        m = a->hidden[l] > m ? a->hidden[l] : m;
    return (size_t)m;
}

size_t mlp_scratch_count(const struct mlp_arch *a, size_t rows) {
    size_t units = 0;
    for (int l = 0; l <= a->n_hidden; l++)
        units += (size_t)mlp_layer_out(a, l);
    return rows * (2 * units + 2 * mlp_max_out(a));
}

static double mlp_sigmoid(double z) {
    if (z >= 0)
        return 1.0 / (1.0 + exp(-z));
    double e = exp(z);
    return e / (1.0 + e);
}

static double mlp_act_apply(enum mlp_act act, double z) {
    if (act == MLP_ACT_RELU)
        return z > 0 ? z : 0.0;
    return z * mlp_sigmoid(z);
}

static double mlp_act_deriv(enum mlp_act act, double z) {
    if (act == MLP_ACT_RELU)
        return z > 0 ? 1.0 : 0.0;
    double s = mlp_sigmoid(z);
    return s * (1.0 + z * (1.0 - s));
}

static double mlp_dot(const double *w, const double *x, int n) {
    /* Four partial sums break the add dependency chain without -ffast-math. */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += w[i] * x[i];
        s1 += w[i + 1] * x[i + 1];
        s2 += w[i + 2] * x[i + 2];
        s3 += w[i + 3] * x[i + 3];
    }
    for (; i < n; i++)
        s0 += w[i] * x[i];
    return (s0 + s1) + (s2 + s3);
}

/* One dense layer: z = W in + b, a = act(z) (a = z for the linear output layer). */
static void mlp_layer_forward(const double *w, const double *b, const double *in, int nin, int nout,
                              size_t rows, int act, enum mlp_act kind, double *z, double *out) {
    for (size_t r = 0; r < rows; r++) {
        const double *xr = in + r * (size_t)nin;
        double *zr = z + r * (size_t)nout, *ar = out + r * (size_t)nout;
        for (int o = 0; o < nout; o++) {
            zr[o] = b[o] + mlp_dot(w + (size_t)o * (size_t)nin, xr, nin);
            ar[o] = act ? mlp_act_apply(kind, zr[o]) : zr[o];
        }
    }
}

void mlp_forward(const struct mlp_arch *a, const double *params, const double *x, size_t rows,
                 double *scratch, double *out) {
    const double *in = x;
    double *s = scratch;
    for (int l = 0; l <= a->n_hidden; l++) {
        int nin = mlp_layer_in(a, l), nout = mlp_layer_out(a, l);
        double *z = s, *act = s + rows * (size_t)nout;
        mlp_layer_forward(params + mlp_layer_w_offset(a, l), params + mlp_layer_b_offset(a, l), in,
                          nin, nout, rows, l < a->n_hidden, a->act, z, act);
        in = act;
        s = act + rows * (size_t)nout;
    }
    memcpy(out, in, rows * sizeof(double));
}

/* ---- losses ---- */

static double mlp_loss_row(enum mlp_loss loss, double z, double y) {
    if (loss == MLP_LOSS_BCE)
        return (z > 0 ? z : 0.0) - z * y + log1p(exp(-fabs(z)));
    return (z - y) * (z - y);
}

double mlp_loss_mean(const struct mlp_arch *a, const double *out, const double *y, size_t rows) {
    double sum = 0;
    for (size_t r = 0; r < rows; r++)
        sum += mlp_loss_row(a->loss, out[r], y[r]);
    return rows ? sum / (double)rows : 0.0;
}

/* ---- backward ---- */

/* Accumulate dW += delta^T in and db += sum delta (row-outer so dW stays in cache). */
static void mlp_layer_grad(const double *delta, const double *in, int nin, int nout, size_t rows,
                           double *gw, double *gb) {
    for (size_t r = 0; r < rows; r++) {
        const double *dr = delta + r * (size_t)nout, *xr = in + r * (size_t)nin;
        for (int o = 0; o < nout; o++) {
            double d = dr[o];
            if (d == 0.0)
                continue;
            double *g = gw + (size_t)o * (size_t)nin;
            for (int i = 0; i < nin; i++)
                g[i] += d * xr[i];
            gb[o] += d;
        }
    }
}

/* delta_in[r][i] = (sum_o delta[r][o] W[o][i]) * act'(z_in[r][i]). */
static void mlp_layer_delta_in(const double *delta, const double *w, const double *z_in, int nin,
                               int nout, size_t rows, enum mlp_act act, double *delta_in) {
    for (size_t r = 0; r < rows; r++) {
        const double *dr = delta + r * (size_t)nout, *zr = z_in + r * (size_t)nin;
        double *di = delta_in + r * (size_t)nin;
        memset(di, 0, (size_t)nin * sizeof(double));
        for (int o = 0; o < nout; o++) {
            double d = dr[o];
            if (d == 0.0)
                continue;
            const double *wo = w + (size_t)o * (size_t)nin;
            for (int i = 0; i < nin; i++)
                di[i] += d * wo[i];
        }
        for (int i = 0; i < nin; i++)
            di[i] *= mlp_act_deriv(act, zr[i]);
    }
}

/* d(loss_row)/d(out) / scale: MSE 2(out - y), BCE sigmoid(z) - y. */
static void mlp_output_delta(enum mlp_loss loss, const double *out, const double *y, size_t rows,
                             double scale, double *delta) {
    for (size_t r = 0; r < rows; r++) {
        double g = loss == MLP_LOSS_BCE ? mlp_sigmoid(out[r]) - y[r] : 2.0 * (out[r] - y[r]);
        delta[r] = g / scale;
    }
}

void mlp_backward(const struct mlp_arch *a, const double *params, const double *x, const double *y,
                  size_t rows, double scale, double *scratch, double *grad) {
    const double *z[MLP_MAX_HIDDEN + 1], *act[MLP_MAX_HIDDEN + 1];
    double *s = scratch;
    for (int l = 0; l <= a->n_hidden; l++) {
        size_t n = rows * (size_t)mlp_layer_out(a, l);
        z[l] = s;
        act[l] = s + n;
        s += 2 * n;
    }
    double *delta = s, *delta_in = s + rows * mlp_max_out(a);
    memset(grad, 0, mlp_param_count(a) * sizeof(double));
    mlp_output_delta(a->loss, act[a->n_hidden], y, rows, scale, delta);
    for (int l = a->n_hidden; l >= 0; l--) {
        int nin = mlp_layer_in(a, l), nout = mlp_layer_out(a, l);
        const double *in = l == 0 ? x : act[l - 1];
        const double *w = params + mlp_layer_w_offset(a, l);
        mlp_layer_grad(delta, in, nin, nout, rows, grad + mlp_layer_w_offset(a, l),
                       grad + mlp_layer_b_offset(a, l));
        if (l == 0)
            break;
        mlp_layer_delta_in(delta, w, z[l - 1], nin, nout, rows, a->act, delta_in);
        double *t = delta;
        delta = delta_in;
        delta_in = t;
    }
}

/* ---- Adam ---- */

void mlp_adam_conf_default(struct mlp_adam_conf *c) {
    c->lr = 2e-4;
    c->beta1 = 0.9;
    c->beta2 = 0.999;
    c->eps = 1e-8;
    c->weight_decay = 0.0;
}

int mlp_adam_init(struct mlp_adam *s, const struct mlp_adam_conf *c, size_t n) {
    memset(s, 0, sizeof(*s));
    s->conf = *c;
    s->n = n;
    s->m = calloc(n ? n : 1, sizeof(double));
    s->v = calloc(n ? n : 1, sizeof(double));
    if (!s->m || !s->v) {
        mlp_adam_fini(s);
        return -ENOMEM;
    }
    return 0;
}

void mlp_adam_fini(struct mlp_adam *s) {
    free(s->m);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

void mlp_adam_step(struct mlp_adam *s, double *params, const double *grad) {
    const struct mlp_adam_conf *c = &s->conf;
    s->t++;
    double bc1 = 1.0 - pow(c->beta1, (double)s->t);
    double step = c->lr / bc1, sqrt_bc2 = sqrt(1.0 - pow(c->beta2, (double)s->t));
    for (size_t i = 0; i < s->n; i++) {
        double g = grad[i] + c->weight_decay * params[i];
        s->m[i] = c->beta1 * s->m[i] + (1.0 - c->beta1) * g;
        s->v[i] = c->beta2 * s->v[i] + (1.0 - c->beta2) * g * g;
        /* Same grouping as torch: p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps). */
        params[i] -= step * s->m[i] / (sqrt(s->v[i]) / sqrt_bc2 + c->eps);
    }
}
