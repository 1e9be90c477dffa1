/* Model checkpoints in ringside's own binary format (magic, version, CRC32), written
 * atomically. A checkpoint holds everything needed to resume: architecture, normalisation,
 * parameters, Adam state and the training position. */
#ifndef RINGSIDE_BACKEND_MLP_MLP_CKPT_H
#define RINGSIDE_BACKEND_MLP_MLP_CKPT_H

#include "backend/mlp/mlp.h"

#include <stddef.h>
#include <stdint.h>

#define MLP_CKPT_MAGIC   "RSIDEMLP" /* 8 bytes */
#define MLP_CKPT_VERSION 1u

struct mlp_ckpt {
    struct mlp_arch arch;
    double *norm_mean, *norm_std; /* n_in each (owned) */
    double y_mean, y_std;
    int32_t epoch; /* epochs completed */
    int64_t step;  /* optimizer steps completed */
    uint64_t data_fingerprint;
    double train_loss, val_loss;
    struct mlp_adam adam; /* conf, t, n, m, v (owned) */
    double *params;       /* adam.n entries (owned) */
};

/* Allocate the arrays for arch (params, norm, adam m/v zeroed). 0 or -ENOMEM. */
int mlp_ckpt_alloc(struct mlp_ckpt *c, const struct mlp_arch *arch);
void mlp_ckpt_fini(struct mlp_ckpt *c);

/* Little-endian fixed layout, trailing CRC32 over everything before it; atomic write.
 * 0 or -errno with err. */
int mlp_ckpt_save(const char *path, const struct mlp_ckpt *c, char *err, size_t errlen);

/* 0, or -EINVAL with err naming the file and what is wrong ("bad magic: not a ringside
 * checkpoint", "truncated: N of M bytes", "CRC mismatch", "unsupported version 7"),
 * or -errno for I/O. On error c is left zeroed. */
int mlp_ckpt_load(const char *path, struct mlp_ckpt *c, char *err, size_t errlen);

#endif
