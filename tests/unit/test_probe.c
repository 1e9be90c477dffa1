/* `ringside probe` end to end: the real binary on fixture trees (a 2-GPU RDNA3 + APU machine,
 * a machine with no GPU, NVML from a stand-in library), its JSON checked against the numbers
 * written in the fixtures, and its usage errors. */
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

TestSuite(probe, .timeout = 60);

static char pr_out[1 << 20], pr_err[8192];

#define PR_FIX(rel) rs_test_fixture("telemetry/" rel, (char[1024]){0}, 1024)

/* Run probe with args: it must exit 0 and print JSON, which is returned (the caller puts it). */
static json_object *pr_run(const char *const *args) {
    int st = rs_test_run(args, pr_out, sizeof(pr_out), pr_err, sizeof(pr_err));
    cr_assert_eq(st, 0, "%s", pr_err);
    json_object *j = json_tokener_parse(pr_out);
    cr_assert_not_null(j, "not JSON: %s", pr_out);
    return j;
}

static json_object *pr_key(json_object *o, const char *key) {
    json_object *v = NULL;
    cr_assert(json_object_object_get_ex(o, key, &v), "no key '%s' in %s", key,
              json_object_to_json_string(o));
    return v;
}

static int64_t pr_int(json_object *o, const char *key) {
    json_object *v = pr_key(o, key);
    cr_assert(json_object_is_type(v, json_type_int), "'%s' is not an integer", key);
    return json_object_get_int64(v);
}

static const char *pr_str(json_object *o, const char *key) {
    json_object *v = pr_key(o, key);
    cr_assert(json_object_is_type(v, json_type_string), "'%s' is not a string", key);
    return json_object_get_string(v);
}

static void pr_null(json_object *o, const char *key) {
    json_object *v = NULL;
    bool present = json_object_object_get_ex(o, key, &v);
    cr_assert(!present || v == NULL, "'%s' should be null (nobody read it), got %s", key,
              json_object_to_json_string(v));
}

/* The GPU with this PCI address. */
static json_object *pr_gpu(json_object *root, const char *pci) {
    json_object *gpus = pr_key(root, "gpus");
    for (size_t i = 0; i < json_object_array_length(gpus); i++) {
        json_object *g = json_object_array_get_idx(gpus, i);
        if (strcmp(pr_str(g, "pci"), pci) == 0)
            return g;
    }
    cr_assert_fail("no GPU %s in %s", pci, pr_out);
    return NULL;
}

static json_object *pr_find(json_object *arr, const char *key, const char *val) {
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        json_object *v;
        if (json_object_object_get_ex(e, key, &v) && strcmp(json_object_get_string(v), val) == 0)
            return e;
    }
    return NULL;
}

Test(probe, rdna3_apu_machine_merges_sysfs_debugfs_and_fdinfo) {
    const char *args[] = {"probe",
                          "--json",
                          "--telemetry",
                          "sysfs,debugfs,fdinfo",
                          "--sysfs-root",
                          PR_FIX("rdna3-apu/sys"),
                          "--debugfs-root",
                          PR_FIX("rdna3-apu/debugfs"),
                          "--proc-root",
                          PR_FIX("rdna3-apu/proc"),
                          "--telemetry-interval",
                          "50",
                          NULL};
    json_object *j = pr_run(args);
    json_object *prov = pr_key(j, "providers");
    cr_assert_eq(json_object_array_length(prov), 3);
    for (size_t i = 0; i < 3; i++)
        cr_assert_str_eq(pr_str(json_object_array_get_idx(prov, i), "status"), "ok");
    cr_assert_eq(json_object_array_length(pr_key(j, "gpus")), 2);
    json_object *d = pr_gpu(j, "0000:03:00.0");
    cr_assert_eq(pr_int(d, "index"), 0);
    cr_assert_str_eq(pr_str(d, "vendor"), "amd");
    cr_assert_str_eq(pr_str(d, "arch"), "gfx1100");
    cr_assert_eq(pr_int(d, "vram_total_bytes"), 25753026560); /* mem_info_vram_total */
    cr_assert_eq(pr_int(d, "vram_used_bytes"), 21206401024);  /* mem_info_vram_used */
    cr_assert_eq(pr_int(d, "busy_pct"), 97);                  /* gpu_busy_percent */
    pr_null(d, "vram_reserved_bytes");                        /* NVIDIA only */
    pr_null(d, "pcie_tx_bytes_per_s");                        /* pcie_bw is never read */
    json_object *src = pr_key(d, "sources");
    cr_assert_str_eq(pr_str(src, "vram_used_bytes"), "sysfs");
    cr_assert_str_eq(pr_str(src, "proc_vram_bytes"), "fdinfo");
    cr_assert_str_eq(pr_str(src, "buddy"), "debugfs");
    /* drm_buddy's free lists add up to what sysfs says is not used */
    json_object *b = pr_key(d, "buddy");
    cr_assert_eq(pr_int(b, "free_bytes"), 25753026560 - 21206401024);
    cr_assert_gt(pr_int(b, "largest_free_bytes"), 0);
    cr_assert_leq(pr_int(b, "largest_free_bytes"), pr_int(b, "free_bytes"));
    json_object *ring = pr_find(pr_key(d, "rings"), "name", "comp_1.0.0");
    cr_assert_not_null(ring);
    cr_assert_lt(pr_int(ring, "signaled"), pr_int(ring, "emitted"));
    cr_assert(json_object_get_boolean(pr_key(ring, "stalled")), "unmoved over two samples");
    json_object *py = pr_find(pr_key(d, "processes"), "name", "python3");
    cr_assert_not_null(py, "%s", pr_out);
    json_object *apu = pr_gpu(j, "0000:c5:00.0");
    cr_assert_eq(pr_int(apu, "index"), 1);
    cr_assert_str_eq(pr_str(apu, "arch"), "gfx1103");
    cr_assert_not_null(pr_find(pr_key(apu, "processes"), "name", "gnome-shell"));
    cr_assert(strstr(pr_err, "comp_1.0.0 stalled"), "the stall is an event: %s", pr_err);
    json_object_put(j);
}

Test(probe, a_machine_without_a_gpu_says_why_for_every_provider) {
    char dir[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    const char *args[] = {"probe",
                          "--json",
                          "--once",
                          "--telemetry",
                          "sysfs,libdrm,debugfs,fdinfo,nvml",
                          "--sysfs-root",
                          dir,
                          "--debugfs-root",
                          dir,
                          "--proc-root",
                          dir,
                          "--dev-root",
                          dir,
                          "--nvml-lib",
                          "/nonexistent/libnvidia-ml.so.1",
                          NULL};
    json_object *j = pr_run(args);
    json_object *prov = pr_key(j, "providers");
    cr_assert_geq(json_object_array_length(prov), 4); /* libdrm and nvml may be built out */
    for (size_t i = 0; i < json_object_array_length(prov); i++) {
        json_object *p = json_object_array_get_idx(prov, i);
        const char *name = pr_str(p, "name"), *status = pr_str(p, "status");
        if (strcmp(name, "fdinfo") == 0) /* no process uses a GPU: not an error */
            continue;
        cr_assert_str_eq(status, "unavailable", "%s", name);
        cr_assert_gt(strlen(pr_str(p, "reason")), 5, "%s says why", name);
    }
    cr_assert_eq(json_object_array_length(pr_key(j, "gpus")), 0);
    json_object_put(j);
    rs_test_rmtree(dir);
}

Test(probe, the_real_machine_answers_for_every_provider) {
    const char *args[] = {"probe", "--json", "--once", NULL};
    json_object *j = pr_run(args);
    json_object *prov = pr_key(j, "providers");
    cr_assert_geq(json_object_array_length(prov), 4);
    for (size_t i = 0; i < json_object_array_length(prov); i++) {
        json_object *p = json_object_array_get_idx(prov, i);
        if (strcmp(pr_str(p, "status"), "ok") != 0)
            cr_assert_gt(strlen(pr_str(p, "reason")), 5);
    }
    json_object_put(j);
}

#ifdef RS_FAKE_NVML
Test(probe, nvml_and_amd_gpus_merge_into_one_list) {
    const char *args[] = {"probe",
                          "--json",
                          "--once",
                          "--telemetry",
                          "sysfs,nvml",
                          "--sysfs-root",
                          PR_FIX("rdna3-apu/sys"),
                          "--proc-root",
                          PR_FIX("nvml/proc"),
                          "--nvml-lib",
                          RS_FAKE_NVML,
                          NULL};
    json_object *j = pr_run(args);
    json_object *gpus = pr_key(j, "gpus");
    cr_assert_eq(json_object_array_length(gpus), 4);
    const char *order[] = {"0000:03:00.0", "0000:18:00.0", "0000:2a:00.0", "0000:c5:00.0"};
    for (size_t i = 0; i < 4; i++)
        cr_assert_str_eq(pr_str(json_object_array_get_idx(gpus, i), "pci"), order[i]);
    json_object *h = pr_gpu(j, "0000:18:00.0");
    cr_assert_str_eq(pr_str(h, "vendor"), "nvidia");
    cr_assert_str_eq(pr_str(pr_key(h, "sources"), "vram_used_bytes"), "nvml");
    cr_assert_gt(pr_int(h, "vram_reserved_bytes"), 0);
    cr_assert_not_null(pr_find(pr_key(h, "processes"), "name", "python3"), "%s", pr_out);
    json_object_put(j);
}
#endif

Test(probe, usage_errors_exit_2) {
    int st;
    const char *bad[] = {"probe", "--bogus", NULL};
    st = rs_test_run(bad, pr_out, sizeof(pr_out), pr_err, sizeof(pr_err));
    cr_assert_eq(st, 2);
    cr_assert_str_eq(pr_err, "ringside: unknown option '--bogus'; see 'ringside probe --help'\n");
    const char *root[] = {"probe", "--sysfs-root", "/nonexistent/sys", NULL};
    st = rs_test_run(root, pr_out, sizeof(pr_out), pr_err, sizeof(pr_err));
    cr_assert_eq(st, 2);
    cr_assert(strstr(pr_err, "--sysfs-root: /nonexistent/sys"), "%s", pr_err);
    const char *prov[] = {"probe", "--telemetry", "sysfs,cuda", NULL};
    st = rs_test_run(prov, pr_out, sizeof(pr_out), pr_err, sizeof(pr_err));
    cr_assert_eq(st, 2);
    cr_assert(strstr(pr_err, "unknown provider 'cuda'"), "%s", pr_err);
    cr_assert_eq(pr_out[0], '\0', "nothing on stdout on an error");
}
