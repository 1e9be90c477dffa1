/* A checkpoint's parameters in the safetensors format (8-byte little-endian header length, a
 * JSON header, then the raw tensors), named as PyTorch names those of nn.Sequential(Linear,
 * activation, Linear, ..., Linear): layer l's weight [out, in] is "<2l>.weight", its bias
 * "<2l>.bias", float32 little-endian. Python code rebuilds the model from it without ringside
 * (the safetensors package, or a few lines of struct and json). */
#ifndef RINGSIDE_BACKEND_MLP_MLP_SAFETENSORS_H
#define RINGSIDE_BACKEND_MLP_MLP_SAFETENSORS_H

#include "backend/mlp/mlp_ckpt.h"

#include <stddef.h>
#include <stdint.h>

/* Write ck's parameters to path atomically; the header's __metadata__ holds "format": "pt",
 * the target's mean and standard deviation, and metadata (a JSON text: the checkpoint's
 * <name>_metadata.json) as "ringside" when it is not NULL. 0 or -errno with err. */
int mlp_safetensors_write(const char *path, const struct mlp_ckpt *ck, const char *metadata,
                          char *err, size_t errlen);

/* The same file's bytes into *out (malloc'd, the caller frees), for a writer of its own. 0 or
 * -ENOMEM. */
int mlp_safetensors_encode(const struct mlp_ckpt *ck, const char *metadata, uint8_t **out,
                           size_t *out_len);

/* n doubles as little-endian float32 (rounded to nearest) at dst (4 n bytes): the tensors'
 * bytes in safetensors and ONNX files. */
void mlp_f32le_encode(uint8_t *dst, const double *src, size_t n);

#endif
