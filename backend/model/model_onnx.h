/* A model as an ONNX file (IR version 7, opset 13: what every current ONNX runtime reads):
 * input "features" [N, 24] float (the features before normalisation, in feat_name order), the
 * normalisation as its first nodes ((x - mean) / std), then Gemm and activation per layer, and
 * two outputs, [N, 1] each: "output" (the network's output) and the prediction with the target
 * transform undone, "return_bps" (MSE: output * target_std + target_mean) or "probability"
 * (BCE: the sigmoid of the logit). The metadata travels in the model's metadata_props
 * ("ringside": the checkpoint's metadata JSON; "features": the names, comma-separated). */
#ifndef RINGSIDE_BACKEND_MODEL_MODEL_ONNX_H
#define RINGSIDE_BACKEND_MODEL_MODEL_ONNX_H

#include "backend/model/model.h"

#include <stddef.h>

/* Write m to path atomically (a path the user named: afile_open_user). 0 or -errno with err. */
int model_onnx_write(const char *path, const struct model *m, char *err, size_t errlen);

#endif
