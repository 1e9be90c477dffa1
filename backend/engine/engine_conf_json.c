/* The engine configuration as one JSON object, written the way the config file is read: the
 * long flag names as keys, the flags' own values, so --print-config, recordings and checkpoint
 * metadata say the same thing in the same words. */
#include "backend/core/json_out.h"
#include "backend/engine/engine.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

static void engine_conf_json_data(json_object *j, const struct engine_conf *c) {
    json_out_put_str(j, "data", c->data_path);
    json_out_put_int(j, "synthetic-days", c->synthetic_days);
    json_out_put_int(j, "seed", (int64_t)c->seed);
    json_out_put_bool(j, "skip-bad-rows", c->skip_bad_rows);
    json_out_put_str(j, "symbol", c->symbol);
    json_out_put_str(j, "columns", c->columns);
    json_out_put_str(j, "tz", c->tz);
    json_out_put_str(j, "continuous", c->continuous ? "front" : "");
    json_out_put_str(j, "time-unit", c->time_unit);
    json_out_put_str(j, "price-scale", c->price_scale);
    json_out_put_str(j, "bar", c->bar);
    json_out_put_int(j, "session-start-hour", c->session_start_hour);
    json_out_put_int(j, "chunk", c->chunk_bars);
    json_out_put_str(j, "profile", c->vpoc.profile == VPOC_RANGE ? "range" : "close");
    json_out_put_str(j, "vpoc-kernel", compute_vpoc_kernel_name(c->vpoc_kernel));
    json_out_put_num(j, "tick", c->vpoc.tick);
    json_out_put_num(j, "value-area", c->vpoc.value_area);
    json_out_put_int(j, "vpoc-refresh", c->vpoc_refresh);
}

/* The architecture comes from the checkpoint when resuming: null then. */
static void engine_conf_json_model(json_object *j, const struct engine_conf *c) {
    char hidden[MLP_MAX_HIDDEN * 8] = "";
    for (int i = 0; i < c->arch.n_hidden; i++)
        snprintf(hidden + strlen(hidden), sizeof(hidden) - strlen(hidden), "%s%d", i ? "," : "",
                 c->arch.hidden[i]);
    bool resume = c->resume_path[0] != '\0';
    json_out_put_int(j, "horizon", c->horizon);
    json_out_put_str(j, "loss", resume ? NULL : mlp_loss_name(c->arch.loss));
    json_out_put_str(j, "hidden", resume ? NULL : hidden);
    json_out_put_str(j, "activation", resume ? NULL : mlp_act_name(c->arch.act));
    json_out_put_num(j, "lr", c->adam.lr);
    json_out_put_num(j, "weight-decay", c->adam.weight_decay);
    json_out_put_int(j, "batch", c->batch);
    json_out_put_int(j, "epochs", c->epochs);
    json_out_put_num(j, "val-frac", c->val_frac);
    json_out_put_int(j, "metric-every", c->metric_every);
}

static void engine_conf_json_run(json_object *j, const struct engine_conf *c) {
    char inject[TRACE_MAX_INJECT * 48] = "";
    for (int k = 0; k < c->n_inject && k < TRACE_MAX_INJECT; k++) {
        char spec[48];
        trace_inject_format(&c->inject[k], spec, sizeof(spec));
        snprintf(inject + strlen(inject), sizeof(inject) - strlen(inject), "%s%s", k ? "," : "",
                 spec);
    }
    json_out_put_str(j, "output", c->output_dir);
    json_out_put_str(j, "name", c->name);
    json_out_put_str(j, "resume", c->resume_path);
    json_out_put_str(j, "backend", c->backend);
    json_out_put_int(j, "device", c->device);
    char devices[ENGINE_MAX_DEVICES * 4];
    engine_devices_format(c, devices, sizeof(devices));
    json_out_put_str(j, "devices", devices);
    json_out_put_str(j, "comm-lib", c->comm_lib);
    json_out_put_num(j, "comm-timeout", c->comm_timeout_s);
    json_out_put_num(j, "teardown-timeout", c->teardown_timeout_s);
    json_out_put_int(j, "threads", c->threads);
    json_out_put_str(j, "alloc-conf", c->alloc_conf);
    json_out_put_bool(j, "no-pre-cleanup", !c->pre_cleanup);
    json_out_put_str(j, "inject", inject);
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
