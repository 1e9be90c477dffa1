/* The engine configuration as one JSON object, written the way the config file is read: the
 * long flag names as keys, the flags' own values, so --print-config, recordings and checkpoint
 * metadata say the same thing in the same words. */
#include "backend/core/json_out.h"
#include "backend/engine/engine.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

/* A string; "" is an option that is not set: null. */
static void engine_conf_json_str(json_object *j, const char *key, const char *s) {
    json_object_object_add(j, key, s && s[0] ? json_object_new_string(s) : NULL);
}

static void engine_conf_json_int(json_object *j, const char *key, int64_t v) {
    json_object_object_add(j, key, json_object_new_int64(v));
}

static void engine_conf_json_num(json_object *j, const char *key, double v) {
    json_object_object_add(j, key, json_out_double(v));
}

static void engine_conf_json_bool(json_object *j, const char *key, bool v) {
    json_object_object_add(j, key, json_object_new_boolean(v));
}

static void engine_conf_json_data(json_object *j, const struct engine_conf *c) {
    engine_conf_json_str(j, "data", c->data_path);
    engine_conf_json_int(j, "synthetic-days", c->synthetic_days);
    engine_conf_json_int(j, "seed", (int64_t)c->seed);
    engine_conf_json_bool(j, "skip-bad-rows", c->skip_bad_rows);
    engine_conf_json_int(j, "session-start-hour", c->session_start_hour);
    engine_conf_json_int(j, "chunk", c->chunk_bars);
    engine_conf_json_str(j, "profile", c->vpoc.profile == VPOC_RANGE ? "range" : "close");
    engine_conf_json_num(j, "tick", c->vpoc.tick);
    engine_conf_json_num(j, "value-area", c->vpoc.value_area);
    engine_conf_json_int(j, "vpoc-refresh", c->vpoc_refresh);
}

/* The architecture comes from the checkpoint when resuming: null then. */
static void engine_conf_json_model(json_object *j, const struct engine_conf *c) {
    char hidden[MLP_MAX_HIDDEN * 8] = "";
    for (int i = 0; i < c->arch.n_hidden; i++)
        snprintf(hidden + strlen(hidden), sizeof(hidden) - strlen(hidden), "%s%d", i ? "," : "",
                 c->arch.hidden[i]);
    bool resume = c->resume_path[0] != '\0';
    engine_conf_json_int(j, "horizon", c->horizon);
    engine_conf_json_str(j, "loss", resume ? NULL : mlp_loss_name(c->arch.loss));
    engine_conf_json_str(j, "hidden", resume ? NULL : hidden);
    engine_conf_json_str(j, "activation", resume ? NULL : mlp_act_name(c->arch.act));
    engine_conf_json_num(j, "lr", c->adam.lr);
    engine_conf_json_num(j, "weight-decay", c->adam.weight_decay);
    engine_conf_json_int(j, "batch", c->batch);
    engine_conf_json_int(j, "epochs", c->epochs);
    engine_conf_json_num(j, "val-frac", c->val_frac);
    engine_conf_json_int(j, "metric-every", c->metric_every);
}

static void engine_conf_json_run(json_object *j, const struct engine_conf *c) {
    char inject[TRACE_MAX_INJECT * 48] = "";
    for (int k = 0; k < c->n_inject && k < TRACE_MAX_INJECT; k++) {
        char spec[48];
        trace_inject_format(&c->inject[k], spec, sizeof(spec));
        snprintf(inject + strlen(inject), sizeof(inject) - strlen(inject), "%s%s", k ? "," : "",
                 spec);
    }
    engine_conf_json_str(j, "output", c->output_dir);
    engine_conf_json_str(j, "name", c->name);
    engine_conf_json_str(j, "resume", c->resume_path);
    engine_conf_json_str(j, "backend", c->backend);
    engine_conf_json_int(j, "device", c->device);
    engine_conf_json_int(j, "threads", c->threads);
    engine_conf_json_str(j, "alloc-conf", c->alloc_conf);
    engine_conf_json_bool(j, "no-pre-cleanup", !c->pre_cleanup);
    engine_conf_json_str(j, "inject", inject);
}

struct json_object *engine_conf_json(const struct engine_conf *c) {
    json_object *j = json_object_new_object();
    if (!j)
        return NULL;
    engine_conf_json_data(j, c);
    engine_conf_json_model(j, c);
    engine_conf_json_run(j, c);
    return j;
}
