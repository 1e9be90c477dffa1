/* <name>_metadata.json: what a checkpoint is (architecture, normalisation, configuration,
 * metrics, data fingerprint), for people and for tools, written atomically. */
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/json_out.h"
#include "backend/engine/engine_internal.h"
#include "backend/mlp/mlp_safetensors.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static json_object *engine_meta_arch(const struct mlp_arch *a) {
    json_object *o = json_object_new_object();
    json_object *hidden = json_object_new_array();
    for (int i = 0; i < a->n_hidden; i++)
        json_object_array_add(hidden, json_object_new_int(a->hidden[i]));
    json_object_object_add(o, "inputs", json_object_new_int(a->n_in));
    json_object_object_add(o, "hidden", hidden);
    json_object_object_add(o, "outputs", json_object_new_int(1));
    json_object_object_add(o, "activation", json_object_new_string(mlp_act_name(a->act)));
    json_object_object_add(o, "loss", json_object_new_string(mlp_loss_name(a->loss)));
    json_object_object_add(o, "parameters", json_object_new_int64((int64_t)mlp_param_count(a)));
    return o;
}

static json_object *engine_meta_norm(const struct mlp_ckpt *ck) {
    json_object *o = json_object_new_object();
    json_object *feats = json_object_new_array();
    for (int j = 0; j < ck->arch.n_in; j++) {
        json_object *f = json_object_new_object();
        json_object_object_add(f, "name", json_object_new_string(feat_name((unsigned)j)));
        json_object_object_add(f, "mean", json_out_double(ck->norm_mean[j]));
        json_object_object_add(f, "std", json_out_double(ck->norm_std[j]));
        json_object_array_add(feats, f);
    }
    json_object_object_add(o, "method", json_object_new_string("zscore"));
    json_object_object_add(o, "features", feats);
    json_object_object_add(o, "target_mean", json_out_double(ck->y_mean));
    json_object_object_add(o, "target_std", json_out_double(ck->y_std));
    return o;
}

static json_object *engine_meta_data(const struct engine *e) {
    json_object *o = json_object_new_object();
    char fp[17];
    snprintf(fp, sizeof(fp), "%016llx", (unsigned long long)e->data_fp);
    json_object_object_add(o, "fingerprint", json_object_new_string(fp));
    json_object_object_add(o, "bars", json_object_new_int64((int64_t)engine_dev0(e)->s.bars));
    json_object_object_add(o, "sessions", json_object_new_int64((int64_t)e->ss.n));
    if (e->ss.n > 0) {
        json_object_object_add(o, "first_session", json_object_new_string(e->ss.s[0].label));
        json_object_object_add(o, "last_session",
                               json_object_new_string(e->ss.s[e->ss.n - 1].label));
    }
    json_object_object_add(o, "train_samples", json_object_new_int64((int64_t)e->split));
    json_object_object_add(o, "val_samples",
                           json_object_new_int64((int64_t)(e->n_rows - e->split)));
    return o;
}

static json_object *engine_meta_metrics(const struct engine *e) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "epoch", json_object_new_int(e->ck.epoch));
    json_object_object_add(o, "step", json_object_new_int64(e->ck.step));
    /* null for what was never measured: no step yet, an epoch stopped before its eval */
    json_object_object_add(o, "train_loss",
                           e->res.has_train_loss ? json_out_double(e->ck.train_loss) : NULL);
    json_object_object_add(o, "val_loss",
                           e->ck_val_measured ? json_out_double(e->ck.val_loss) : NULL);
    json_object_object_add(o, "best_val_loss",
                           e->res.has_val ? json_out_double(e->res.best_val_loss) : NULL);
    return o;
}

int engine_meta_write(const struct engine *e, const char *path, const char *tensors, char *err,
                      size_t errlen) {
    json_object *root = json_object_new_object();
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    json_object_object_add(root, "format", json_object_new_string("ringside-mlp"));
    json_object_object_add(root, "version", json_object_new_string(RS_VERSION));
    json_object_object_add(root, "created", json_object_new_string(created));
    json_object_object_add(root, "architecture", engine_meta_arch(&e->ck.arch));
    json_object_object_add(root, "normalization", engine_meta_norm(&e->ck));
    json_object_object_add(root, "config", engine_conf_json(&e->conf));
    json_object_object_add(root, "metrics", engine_meta_metrics(e));
    json_object_object_add(root, "data", engine_meta_data(e));
    json_object_object_add(root, "backend", json_object_new_string(engine_dev0(e)->c->ops->name));
    json_object_object_add(root, "devices", json_object_new_int((int)e->n_dev));
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t len = strlen(text);
    char *buf = malloc(len + 2);
    int rc = -ENOMEM;
    if (buf) {
        memcpy(buf, text, len);
        buf[len] = '\n';
        rc = afile_write_all(path, buf, len + 1, err, errlen);
        free(buf);
        if (rc == 0) /* the parameters for PyTorch, this metadata in their header */
            rc = mlp_safetensors_write(
                tensors, &e->ck,
                json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE),
                err, errlen);
    } else {
        errbuf_set(err, errlen, rc, "out of memory");
    }
    json_object_put(root);
    return rc;
}
