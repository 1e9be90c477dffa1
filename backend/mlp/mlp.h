/* Reference multilayer perceptron (double precision): forward, backward, losses, Adam. */
#ifndef RINGSIDE_BACKEND_MLP_MLP_H
#define RINGSIDE_BACKEND_MLP_MLP_H

#include <stddef.h>
#include <stdint.h>

#define MLP_MAX_HIDDEN 8   /* hidden layers */
#define MLP_MAX_WIDTH  256 /* units per hidden layer */

enum mlp_act { MLP_ACT_SILU, MLP_ACT_RELU };
enum mlp_loss { MLP_LOSS_MSE, MLP_LOSS_BCE }; /* BCE takes logits (as BCEWithLogitsLoss) */

struct mlp_arch {
    int n_in;                   /* >= 1 */
    int n_hidden;               /* 0..MLP_MAX_HIDDEN */
    int hidden[MLP_MAX_HIDDEN]; /* each 1..MLP_MAX_WIDTH */
    enum mlp_act act;           /* after every hidden layer; the output layer is linear */
    enum mlp_loss loss;
};

/* Parameter layout, layer by layer (n_hidden + 1 layers, the last has 1 output):
 * W[out][in] row-major, then b[out]. */
size_t mlp_param_count(const struct mlp_arch *a);

/* Offsets of layer l's weights and biases in the parameter vector. */
size_t mlp_layer_w_offset(const struct mlp_arch *a, int l);
size_t mlp_layer_b_offset(const struct mlp_arch *a, int l);
int mlp_layer_in(const struct mlp_arch *a, int l);
int mlp_layer_out(const struct mlp_arch *a, int l);

/* "silu"/"relu", "mse"/"bce"; parse returns 0 or -EINVAL. */
const char *mlp_act_name(enum mlp_act a);
const char *mlp_loss_name(enum mlp_loss l);
int mlp_act_parse(const char *s, enum mlp_act *out);
int mlp_loss_parse(const char *s, enum mlp_loss *out);

/* Parse "32,16" into arch->hidden/n_hidden. 0 or -EINVAL with err. */
int mlp_hidden_parse(const char *s, struct mlp_arch *a, char *err, size_t errlen);

/* PyTorch nn.Linear default init, deterministic from seed: W, b ~ U(-1/sqrt(in), 1/sqrt(in)). */
void mlp_init_params(const struct mlp_arch *a, uint64_t seed, double *params);

/* Doubles of scratch that forward/backward need for `rows` samples. */
size_t mlp_scratch_count(const struct mlp_arch *a, size_t rows);

/* Forward rows samples x[rows][n_in]; keeps activations in scratch for backward and writes
 * the outputs (logits for BCE) to out[rows]. */
void mlp_forward(const struct mlp_arch *a, const double *params, const double *x, size_t rows,
                 double *scratch, double *out);

/* Mean loss over rows given outputs from mlp_forward. */
double mlp_loss_mean(const struct mlp_arch *a, const double *out, const double *y, size_t rows);

/* Backward after mlp_forward on the same rows and scratch: writes (overwrites) grad with the
 * gradient of (sum of the rows' losses) / scale, so row slices of one batch computed on
 * different threads with scale = batch size add up to the batch-mean gradient. */
void mlp_backward(const struct mlp_arch *a, const double *params, const double *x, const double *y,
                  size_t rows, double scale, double *scratch, double *grad);

struct mlp_adam_conf {
    double lr, beta1, beta2, eps, weight_decay; /* 2e-4, 0.9, 0.999, 1e-8, 0 */
};

/* Adam state for n parameters (m and v owned). */
struct mlp_adam {
    struct mlp_adam_conf conf;
    int64_t t;
    size_t n;
    double *m, *v;
};

void mlp_adam_conf_default(struct mlp_adam_conf *c);
int mlp_adam_init(struct mlp_adam *s, const struct mlp_adam_conf *c, size_t n); /* -ENOMEM */
void mlp_adam_fini(struct mlp_adam *s);
/* One step exactly as torch.optim.Adam (L2 weight decay added to the gradient). */
void mlp_adam_step(struct mlp_adam *s, double *params, const double *grad);

#endif
