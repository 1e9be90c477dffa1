/* `ringside doctor` as a user runs it: the JSON report's shape, the smoke tests on the CPU
 * backend, a hung test becoming a row (the watchdog), and usage errors. */
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#ifndef RS_FAKE_NCCL
#error "RS_FAKE_NCCL: the path of the fake NCCL library"
#endif

TestSuite(doctor_cli, .timeout = 120);

static struct {
    int rc;
    char out[1 << 18], err[1 << 14];
} dc;

static int dc_exec(const char *const *argv) {
    dc.rc = rs_test_run(argv, dc.out, sizeof(dc.out), dc.err, sizeof(dc.err));
    cr_assert_neq(dc.rc, -1, "could not start ringside");
    cr_assert(!strstr(dc.err, "runtime error:") && !strstr(dc.err, "Sanitizer"),
              "sanitizer report from ringside:\n%s", dc.err);
    return dc.rc;
}
#define DC_RUN(...) dc_exec((const char *const[]){"doctor", __VA_ARGS__, NULL})

/* The report's rows (an array), parsed from stdout; *root owns them. */
static json_object *dc_rows(json_object **root) {
    *root = json_tokener_parse(dc.out);
    cr_assert_not_null(*root, "stdout is not JSON:\n%.2000s", dc.out);
    json_object *rows;
    cr_assert(json_object_object_get_ex(*root, "rows", &rows));
    return rows;
}

static const char *dc_str(json_object *o, const char *key) {
    json_object *v;
    return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

/* The row named name in group, or NULL. */
static json_object *dc_row(json_object *rows, const char *group, const char *name) {
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *r = json_object_array_get_idx(rows, i);
        if (strcmp(dc_str(r, "group"), group) == 0 && strcmp(dc_str(r, "name"), name) == 0)
            return r;
    }
    return NULL;
}

/* --quick: environment rows only, every row has a known status, the summary adds up. */
Test(doctor_cli, quick_json_report_has_rows_and_a_consistent_summary) {
    int rc = DC_RUN("--quick", "--json");
    cr_assert(rc == 0 || rc == 1, "exit %d: %s", rc, dc.err);
    json_object *root, *rows = dc_rows(&root), *sum;
    cr_assert_gt(json_object_array_length(rows), 5);
    size_t counts[4] = {0};
    static const char *const st[] = {"ok", "warn", "fail", "skip"};
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *r = json_object_array_get_idx(rows, i);
        cr_assert_str_neq(dc_str(r, "group"), "gpu", "--quick runs no GPU rows");
        size_t k = 0;
        while (k < 4 && strcmp(dc_str(r, "status"), st[k]) != 0)
            k++;
        cr_assert_lt(k, 4, "status '%s'", dc_str(r, "status"));
        counts[k]++;
        const char *rem = dc_str(r, "remedy");
        if (k == 1 || k == 2)
            cr_assert(rem && rem[0], "a %s row without a remedy: %s", st[k], dc_str(r, "name"));
    }
    cr_assert(json_object_object_get_ex(root, "summary", &sum));
    for (size_t k = 0; k < 4; k++) {
        json_object *v;
        cr_assert(json_object_object_get_ex(sum, st[k], &v));
        cr_assert_eq((size_t)json_object_get_int64(v), counts[k], "%s", st[k]);
    }
    cr_assert_eq(rc, counts[2] ? 1 : 0, "exit 1 exactly when a row failed");
    json_object_put(root);
}

/* The smoke tests on the CPU backend: each row ran, the MLP sweep at every width. */
Test(doctor_cli, smoke_tests_run_on_the_cpu_backend) {
    DC_RUN("--json", "--backend", "cpu", "--timeout", "60");
    json_object *root, *rows = dc_rows(&root);
    static const char *const ran[] = {"device init",    "allocation",      "copies",
                                      "sync latency",   "VPOC kernel",     "MLP 24-32-32-1",
                                      "MLP 24-16-16-1", "MLP 24-256-256-1"};
    for (size_t k = 0; k < sizeof(ran) / sizeof(ran[0]); k++) {
        json_object *r = dc_row(rows, "gpu", ran[k]);
        cr_assert_not_null(r, "no row '%s'", ran[k]);
        cr_assert_str_eq(dc_str(r, "status"), "ok", "%s: %s", ran[k], dc_str(r, "value"));
    }
    cr_assert(strstr(dc_str(dc_row(rows, "gpu", "VPOC kernel"), "value"), "match the CPU"));
    cr_assert(strstr(dc_str(dc_row(rows, "gpu", "copies"), "value"), "GB/s"));
    cr_assert_null(dc_row(rows, "gpu", "MLP 24-512-512-1"), "the sweep stops at the widest "
                                                            "the kernels hold");
    json_object_put(root);
}

/* A smoke test that hangs (rehearsed on the CPU backend) is a failed row after the timeout, the
 * rest are skipped, and doctor still prints its report and exits 1. */
Test(doctor_cli, a_hung_smoke_test_is_a_row_not_a_frozen_terminal) {
    int rc = DC_RUN("--json", "--backend", "cpu", "--timeout", "5", "--inject", "hang:vpoc:600");
    cr_assert_eq(rc, 1, "exit %d: %s", rc, dc.err);
    json_object *root, *rows = dc_rows(&root);
    json_object *v = dc_row(rows, "gpu", "VPOC kernel");
    cr_assert_not_null(v);
    cr_assert_str_eq(dc_str(v, "status"), "fail");
    cr_assert(strstr(dc_str(v, "value"), "hung after 5 s"), "%s", dc_str(v, "value"));
    json_object *after = dc_row(rows, "gpu", "MLP 24-32-32-1");
    cr_assert_str_eq(dc_str(after, "status"), "skip");
    cr_assert(strstr(dc_str(after, "remedy"), "hung"), "%s", dc_str(after, "remedy"));
    cr_assert_str_eq(dc_str(dc_row(rows, "gpu", "copies"), "status"), "ok", "rows before it ran");
    json_object_put(root);
}

/* The multi-GPU rows rehearsed on two simulated devices through the fake NCCL library: the
 * library's version and file, peer access each way, the group, both all-reduces. */
/* The rows that did not pass, as "group/name: status: value; ..." (for a failure's message). */
static const char *dc_bad_rows(json_object *rows) {
    static char out[4096];
    out[0] = '\0';
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *r = json_object_array_get_idx(rows, i);
        const char *st = dc_str(r, "status"), *g = dc_str(r, "group"), *nm = dc_str(r, "name"),
                   *v = dc_str(r, "value");
        size_t n = strlen(out);
        if (st && strcmp(st, "ok") != 0 && strcmp(st, "info") != 0 && strcmp(st, "skip") != 0)
            snprintf(out + n, sizeof(out) - n, "%s/%s: %s: %s; ", g ? g : "", nm ? nm : "", st,
                     v ? v : "");
    }
    return out;
}

Test(doctor_cli, multi_gpu_rows_through_a_named_library) {
    /* rows that run, not their watchdog: a 64 MiB all-reduce under ASan on a loaded 2-core
     * machine may take longer than the default 20 s */
    int rc = DC_RUN("--json", "--backend", "cpu", "--comm-lib", RS_FAKE_NCCL, "--timeout", "300");
    json_object *root, *rows = dc_rows(&root);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, dc.err, dc_bad_rows(rows));
    static const char *const ran[] = {"comm library",     "peer access 0->1",
                                      "peer access 1->0", "group init/teardown",
                                      "all-reduce 4 KiB", "all-reduce 64 MiB"};
    for (size_t k = 0; k < sizeof(ran) / sizeof(ran[0]); k++) {
        json_object *r = dc_row(rows, "multi-gpu", ran[k]);
        cr_assert_not_null(r, "no row '%s'", ran[k]);
        cr_assert_str_eq(dc_str(r, "status"), "ok", "%s: %s", ran[k], dc_str(r, "value"));
    }
    cr_assert_str_eq(dc_str(dc_row(rows, "multi-gpu", "comm library"), "value"),
                     "NCCL 2.21.5 (" RS_FAKE_NCCL ")");
    cr_assert(
        strstr(dc_str(dc_row(rows, "multi-gpu", "all-reduce 64 MiB"), "value"), "bus bandwidth"));
    json_object_put(root);
}

/* --quick runs no multi-GPU rows either. */
Test(doctor_cli, quick_runs_no_multi_gpu_rows) {
    DC_RUN("--quick", "--json");
    json_object *root, *rows = dc_rows(&root);
    for (size_t i = 0; i < json_object_array_length(rows); i++)
        cr_assert_str_neq(dc_str(json_object_array_get_idx(rows, i), "group"), "multi-gpu");
    json_object_put(root);
}

Test(doctor_cli, usage_errors_exit_2_with_one_line) {
    static const char *const bad[][3] = {
        {"--json", "--markdown", "exclude each other"},
        {"--inject", "boom:vpoc", "unknown kind 'boom'"},
        {"--timeout", "0", "--timeout"},
        {"--rules", "/nonexistent/rules.json", "/nonexistent/rules.json"},
        {"--frobnicate", NULL, "frobnicate"},
        {"--bundle", "/nonexistent-dir/b.json", "the directory /nonexistent-dir does not exist"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        int rc = bad[k][1] ? DC_RUN(bad[k][0], bad[k][1]) : DC_RUN(bad[k][0]);
        cr_assert_eq(rc, 2, "%s: exit %d", bad[k][0], rc);
        cr_assert(strstr(dc.err, bad[k][2]), "%s: stderr: %s", bad[k][0], dc.err);
        cr_assert_str_eq(dc.out, "", "%s: nothing on stdout", bad[k][0]);
        char *nl = strchr(dc.err, '\n');
        cr_assert(nl && nl[1] == '\0', "%s: not one line: %s", bad[k][0], dc.err);
    }
}

/* --bundle: the report as JSON beside the versions, the telemetry snapshot and the kernel
 * log's driver errors, the same rows as the report printed. */
Test(doctor_cli, bundle_holds_the_report_and_what_a_bug_report_needs) {
    char dir[512], path[600];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(path, sizeof(path), "%s/doctor.json", dir);
    int rc = DC_RUN("--quick", "--json", "--bundle", path);
    cr_assert(rc == 0 || rc == 1, "exit %d: %s", rc, dc.err);
    json_object *root, *rows = dc_rows(&root);
    json_object *b = json_object_from_file(path), *v;
    cr_assert_not_null(b, "the bundle is not JSON");
    cr_assert_str_eq(dc_str(b, "bundle"), "ringside doctor");
    cr_assert(json_object_object_get_ex(b, "report", &v));
    json_object *brows;
    cr_assert(json_object_object_get_ex(v, "rows", &brows));
    cr_assert_eq(json_object_array_length(brows), json_object_array_length(rows));
    cr_assert(json_object_object_get_ex(b, "facts", &v));
    cr_assert(json_object_object_get_ex(b, "telemetry", &v));
    cr_assert(json_object_object_get_ex(b, "kernel_log", &v));
    cr_assert(json_object_is_type(v, json_type_array));
    json_object_put(b);
    json_object_put(root);
    rs_test_rmtree(dir);
}
