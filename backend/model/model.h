/* A trained model as `ringside predict` and `ringside export` use it: the checkpoint's
 * parameters and normalisation, with the settings its features were made with (from
 * <name>_metadata.json beside the checkpoint), checked against the features this build makes. */
#ifndef RINGSIDE_BACKEND_MODEL_MODEL_H
#define RINGSIDE_BACKEND_MODEL_MODEL_H

#include "backend/mlp/mlp_ckpt.h"
#include "backend/vpoc/vpoc_features.h"

#include <stddef.h>

struct json_object;

#define MODEL_META_MAX_BYTES (4u << 20) /* a metadata file larger than this is an error */
#define MODEL_PATH_MAX       1056       /* a checkpoint's path (1024) and the metadata's suffix */

struct model {
    struct mlp_ckpt ck;             /* architecture, parameters, normalisation (owned) */
    struct feat_opts feat;          /* profile, tick, value area, horizon and target of training */
    int session_start_hour;         /* the session split training used (0..23) */
    struct json_object *meta;       /* the metadata as read (owned) */
    const char *meta_text;          /* meta as one line of JSON (owned by meta) */
    char meta_path[MODEL_PATH_MAX]; /* where the metadata was read from */
};

/* Load the checkpoint at path (<name>.rsmodel) and <name>_metadata.json beside it. 0, or
 * -errno / -EINVAL with err naming the file and what is wrong: an unreadable or corrupt
 * checkpoint, missing metadata, a configuration key missing or out of range
 * ("FILE: config.tick: expected a number > 0"), metadata that describes another architecture,
 * or features that this build does not make in the same order. m is zeroed on error. */
int model_load(const char *path, struct model *m, char *err, size_t errlen);
void model_fini(struct model *m);

/* The parameters as exported (float32, rounded to nearest) back in double: what predict
 * evaluates, so that ringside, PyTorch and ONNX runtimes compute with the same numbers. */
void model_params_f32(const struct model *m, double *out);

#endif
