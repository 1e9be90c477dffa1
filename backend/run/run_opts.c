/* The run's options as JSON, in the config file's words. */
#include "backend/run/run_opts.h"

#include "backend/core/json_out.h"

#include <json-c/json.h>
#include <stdio.h>

/* The replayed kernel log joins the engine's faults in "inject", last: its path may hold a
 * ':'. */
static void run_opts_json_inject(json_object *j, const struct run_opts *o) {
    if (!o->kmsg.inject[0])
        return;
    const char *faults = json_object_get_string(json_object_object_get(j, "inject"));
    char inject[TRACE_MAX_INJECT * 48 + KMSG_PATH_MAX + 8];
    snprintf(inject, sizeof(inject), "%s%skmsg:%s", faults ? faults : "", faults ? "," : "",
             o->kmsg.inject);
    json_out_put_str(j, "inject", inject);
}

static void run_opts_json_tele(json_object *j, const struct tele_conf *t) {
    json_out_put_str(j, "telemetry", t->only);
    json_out_put_int(j, "telemetry-interval", (int64_t)(t->interval_ns / 1000000ull));
    json_out_put_str(j, "sysfs-root", t->roots.sys);
    json_out_put_str(j, "proc-root", t->roots.proc);
    json_out_put_str(j, "debugfs-root", t->roots.debugfs);
    json_out_put_str(j, "dev-root", t->roots.dev);
    json_out_put_str(j, "nvml-lib", t->roots.nvml_lib);
}

static void run_opts_json_kmsg(json_object *j, const struct run_opts *o) {
    json_out_put_str(j, "kmsg-file", o->kmsg.file);
    json_out_put_int(j, "kmsg-backlog", o->kmsg.backlog);
    json_out_put_str(j, "kmsg-rules", o->kmsg_rules);
    json_out_put_bool(j, "no-kmsg", o->kmsg.off);
}

json_object *run_opts_json(const struct run_opts *o) {
    json_object *j = engine_conf_json(&o->conf);
    if (!j)
        return NULL;
    json_out_put_str(j, "jsonl", o->jsonl);
    json_out_put_str(j, "record", o->record);
    json_out_put_num(j, "sync-slow", (double)o->sync_slow_ns / 1e9);
    json_out_put_num(j, "sync-timeout", (double)o->sync_timeout_ns / 1e9);
    run_opts_json_inject(j, o);
    run_opts_json_tele(j, &o->tele);
    run_opts_json_kmsg(j, o);
    return j;
}
