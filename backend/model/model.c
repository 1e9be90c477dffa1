/* Loading a model for prediction and export: the checkpoint, then its metadata, each field of
 * which is checked before it is used. */
#include "backend/model/model.h"

#include "backend/core/errbuf.h"
#include "backend/core/json_file.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The member at "section.key" of the metadata, or NULL. */
static json_object *model_get(json_object *root, const char *section, const char *key) {
    json_object *s = NULL, *v = NULL;
    if (!json_object_object_get_ex(root, section, &s) || !json_object_is_type(s, json_type_object))
        return NULL;
    return json_object_object_get_ex(s, key, &v) ? v : NULL;
}

static bool model_is_number(json_object *v) {
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

/* config.KEY as a number in [lo, hi] (an integer when whole). */
static int model_num(const struct model *m, const char *key, double lo, double hi, bool whole,
                     double *out, char *err, size_t errlen) {
    json_object *v = model_get(m->meta, "config", key);
    double d = model_is_number(v) ? json_object_get_double(v) : NAN;
    if (!(d >= lo && d <= hi) || (whole && d != floor(d)))
        return errbuf_set(err, errlen, -EINVAL, "%s: config.%s: expected %s in [%g, %g]",
                          m->meta_path, key, whole ? "an integer" : "a number", lo, hi);
    *out = d;
    return 0;
}

/* The settings the features were made with. */
static int model_config(struct model *m, char *err, size_t errlen) {
    double hour = 0, tick = 0, va = 0, horizon = 0;
    int rc = model_num(m, "session-start-hour", 0, 23, true, &hour, err, errlen);
    rc = rc ? rc : model_num(m, "tick", 1e-9, 1e9, false, &tick, err, errlen);
    rc = rc ? rc : model_num(m, "value-area", 1e-6, 1, false, &va, err, errlen);
    rc = rc ? rc : model_num(m, "horizon", 1, 1e6, true, &horizon, err, errlen);
    if (rc != 0)
        return rc;
    json_object *p = model_get(m->meta, "config", "profile");
    const char *profile = json_object_is_type(p, json_type_string) ? json_object_get_string(p) : "";
    if (strcmp(profile, "close") != 0 && strcmp(profile, "range") != 0)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: config.profile: expected \"close\" or \"range\"", m->meta_path);
    m->session_start_hour = (int)hour;
    m->feat.vpoc =
        (struct vpoc_params){strcmp(profile, "range") == 0 ? VPOC_RANGE : VPOC_CLOSE, tick, va};
    m->feat.horizon = (int)horizon;
    m->feat.target = m->ck.arch.loss == MLP_LOSS_BCE ? FEAT_TARGET_SIGN : FEAT_TARGET_RETURN_BPS;
    return 0;
}

/* The metadata describes this checkpoint: the same layer widths. */
static int model_check_arch(const struct model *m, char *err, size_t errlen) {
    const struct mlp_arch *a = &m->ck.arch;
    json_object *in = model_get(m->meta, "architecture", "inputs"),
                *hidden = model_get(m->meta, "architecture", "hidden");
    bool same = json_object_is_type(in, json_type_int) && json_object_get_int(in) == a->n_in &&
                json_object_is_type(hidden, json_type_array) &&
                json_object_array_length(hidden) == (size_t)a->n_hidden;
    for (int i = 0; same && i < a->n_hidden; i++)
        same = json_object_get_int(json_object_array_get_idx(hidden, (size_t)i)) == a->hidden[i];
    if (!same)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: its architecture is not the checkpoint's (%d inputs, %d hidden "
                          "layers): the two files are of different models",
                          m->meta_path, a->n_in, a->n_hidden);
    return 0;
}

/* The model reads the features this build makes, in the same order. */
static int model_check_features(const struct model *m, char *err, size_t errlen) {
    json_object *feats = model_get(m->meta, "normalization", "features");
    if (m->ck.arch.n_in != FEAT_COUNT)
        return errbuf_set(err, errlen, -EINVAL,
                          "the model takes %d inputs but this build of ringside makes %d features",
                          m->ck.arch.n_in, FEAT_COUNT);
    if (!json_object_is_type(feats, json_type_array) ||
        json_object_array_length(feats) != FEAT_COUNT)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: normalization.features: expected a list of %d features",
                          m->meta_path, FEAT_COUNT);
    for (unsigned j = 0; j < FEAT_COUNT; j++) {
        json_object *name = NULL;
        json_object_object_get_ex(json_object_array_get_idx(feats, j), "name", &name);
        const char *got =
            json_object_is_type(name, json_type_string) ? json_object_get_string(name) : "(none)";
        if (strcmp(got, feat_name(j)) != 0)
            return errbuf_set(err, errlen, -EINVAL,
                              "%s: feature %u is '%s', where this build of ringside makes '%s'",
                              m->meta_path, j, got, feat_name(j));
    }
    return 0;
}

/* <name>_metadata.json for <name>.rsmodel (or for any other name, the name as it is). */
static int model_meta_path(const char *path, struct model *m, char *err, size_t errlen) {
    size_t n = strlen(path);
    if (n > 8 && strcmp(path + n - 8, ".rsmodel") == 0)
        n -= 8;
    if (snprintf(m->meta_path, sizeof(m->meta_path), "%.*s_metadata.json", (int)n, path) >=
        (int)sizeof(m->meta_path))
        return errbuf_set(err, errlen, -ENAMETOOLONG, "%s: path too long", path);
    return 0;
}

int model_load(const char *path, struct model *m, char *err, size_t errlen) {
    memset(m, 0, sizeof(*m));
    int rc = model_meta_path(path, m, err, errlen);
    rc = rc ? rc : mlp_ckpt_load(path, &m->ck, err, errlen);
    if (rc == 0) {
        rc =
            json_file_read(m->meta_path, m->meta_path, MODEL_META_MAX_BYTES, &m->meta, err, errlen);
        if (rc == -ENOENT)
            errbuf_set(err, errlen, rc,
                       "%s: not found: the checkpoint's metadata (written beside it by training) "
                       "says how its features were made",
                       m->meta_path);
    }
    if (rc == 0 && !json_object_is_type(m->meta, json_type_object))
        rc = errbuf_set(err, errlen, -EINVAL, "%s: expected a JSON object", m->meta_path);
    rc = rc ? rc : model_check_arch(m, err, errlen);
    rc = rc ? rc : model_check_features(m, err, errlen);
    rc = rc ? rc : model_config(m, err, errlen);
    if (rc == 0)
        m->meta_text = json_object_to_json_string_ext(m->meta, JSON_C_TO_STRING_PLAIN |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE);
    if (rc != 0)
        model_fini(m);
    return rc;
}

void model_fini(struct model *m) {
    mlp_ckpt_fini(&m->ck);
    json_object_put(m->meta);
    memset(m, 0, sizeof(*m));
}

void model_params_f32(const struct model *m, double *out) {
    for (size_t i = 0; i < m->ck.adam.n; i++)
        out[i] = (double)(float)m->ck.params[i];
}
