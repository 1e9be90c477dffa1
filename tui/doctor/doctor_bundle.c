/* ringside doctor --bundle: the report with what a bug report needs beside it (the versions
 * found, the telemetry snapshot, the kernel log's latest driver errors), as one JSON file
 * written atomically. */
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/json_out.h"
#include "backend/kmsg/kmsg_json.h"
#include "backend/telemetry/tele_json.h"
#include "tui/doctor/doctor.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static json_object *doctor_bundle_facts(const struct doctor_facts *f) {
    json_object *o = json_object_new_object();
    json_out_put_str(o, "ringside", RS_VERSION);
    json_out_put_str(o, "kernel", f->kernel);
    json_out_put_str(o, "amdgpu", f->amdgpu);
    json_out_put_str(o, "nvidia", f->nvidia);
    json_out_put_str(o, "rocm", f->rocm);
    json_out_put_str(o, "rocm_path", f->rocm_path);
    json_out_put_str(o, "torch", f->torch);
    json_out_put_str(o, "torch_path", f->torch_path);
    json_out_put_str(o, "torch_cuda", f->torch_cuda);
    json_out_put_str(o, "torch_hip", f->torch_hip);
    json_out_put_str(o, "torch_archs", f->torch_archs);
    return o;
}

static json_object *doctor_bundle_kmsg(const struct doctor_kmsg_events *k) {
    json_object *a = json_object_new_array();
    for (size_t i = 0; k && i < k->n; i++) {
        char buf[2048];
        buf[0] = '{';
        size_t n = kmsg_json_members(&k->ev[i], buf + 1, sizeof(buf) - 3);
        buf[1 + n] = '}';
        buf[2 + n] = '\0';
        json_object *o = json_tokener_parse(buf);
        if (o)
            json_object_array_add(a, o);
    }
    return a;
}

int doctor_write_bundle(const char *path, const struct doctor_report *r,
                        const struct doctor_facts *f, const struct tele_snap *snap,
                        const struct doctor_kmsg_events *k, char *err, size_t errlen) {
    json_object *j = json_object_new_object();
    json_object_object_add(j, "bundle", json_object_new_string("ringside doctor"));
    json_object_object_add(j, "facts", doctor_bundle_facts(f));
    json_object_object_add(j, "report", doctor_report_json(r));
    json_object_object_add(j, "telemetry", snap ? tele_json_object(snap) : NULL);
    json_object_object_add(j, "kernel_log_events_total",
                           json_object_new_int64(k ? (int64_t)k->total : 0));
    json_object_object_add(j, "kernel_log", doctor_bundle_kmsg(k));
    const char *text =
        json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    int rc = copy ? 0 : errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (copy) {
        memcpy(copy, text, len);
        copy[len] = '\n';
        rc = afile_write_all_private(path, copy, len + 1, err, errlen);
    }
    free(copy);
    json_object_put(j);
    return rc;
}
