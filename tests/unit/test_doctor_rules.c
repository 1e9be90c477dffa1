/* ringside doctor: the known-bad-combination rules (loading, errors, matching) and the
 * kernel-log health rows against fixture roots. */
#include "tests/support/rs_test.h"
#include "tui/doctor/doctor.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(doctor_rules, .timeout = 30);

static char *const test_doctor_noenv[] = {NULL};

static void test_doctor_env(struct doctor_env *e, const char *root, const char *arch,
                            char *const *envp) {
    memset(e, 0, sizeof(*e));
    e->root = root;
    e->envp = envp ? envp : test_doctor_noenv;
    e->user = "tester";
    if (arch) {
        snprintf(e->gpus[0].pci, sizeof(e->gpus[0].pci), "0000:03:00.0");
        snprintf(e->gpus[0].name, sizeof(e->gpus[0].name), "AMD Radeon RX 7900 XT");
        snprintf(e->gpus[0].arch, sizeof(e->gpus[0].arch), "%s", arch);
        e->gpus[0].amd = true;
        e->n_gpus = 1;
    }
}

static void test_doctor_facts(struct doctor_facts *f, const char *rocm, const char *torch) {
    memset(f, 0, sizeof(*f));
    snprintf(f->kernel, sizeof(f->kernel), "6.8.0-49-generic");
    snprintf(f->rocm, sizeof(f->rocm), "%s", rocm);
    snprintf(f->torch, sizeof(f->torch), "%s", torch);
}

static const struct doctor_row *test_doctor_find(const struct doctor_report *r, const char *name) {
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->rows[i].name, name) == 0)
            return &r->rows[i];
    return NULL;
}

/* Load a rules file written from text; returns the code, err filled. */
static int test_doctor_load_text(const char *text, char *err, size_t errlen) {
    char dir[512], path[1024];
    struct doctor_rules *rs = NULL;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "rules.json", text, path, sizeof(path)), 0);
    int rc = doctor_rules_load(&rs, path, err, errlen);
    if (rc == 0)
        doctor_rules_free(rs);
    else
        cr_expect(strstr(err, path) != NULL, "error names the file: %s", err);
    cr_expect(rc != 0 || rs != NULL);
    rs_test_rmtree(dir);
    return rc;
}

Test(doctor_rules, builtin_loads) {
    struct doctor_rules *rs = NULL;
    char err[512] = "";
    cr_assert_eq(doctor_rules_load(&rs, NULL, err, sizeof(err)), 0, "%s", err);
    cr_assert_not_null(rs);
    doctor_rules_free(rs);
}

Test(doctor_rules, shipped_file_loads) {
    struct doctor_rules *rs = NULL;
    char err[512] = "";
    cr_assert_eq(
        doctor_rules_load(&rs, RS_FIXTURES "/../../tui/doctor/doctor_rules.json", err, sizeof(err)),
        0, "%s", err);
    doctor_rules_free(rs);
}

#define RULE_HEAD "{\"version\":1,\"rules\":[{\"id\":\"r1\",\"title\":\"t\",\"status\":\"warn\","

Test(doctor_rules, missing_source_fails) {
    char err[512] = "";
    int rc = test_doctor_load_text(
        RULE_HEAD "\"when\":{\"arch\":[\"gfx1100\"]},\"remedy\":\"do x\"}]}", err, sizeof(err));
    cr_assert_eq(rc, -EINVAL);
    cr_expect(strstr(err, "rules[0] 'r1'") && strstr(err, "source: missing"), "%s", err);
    cr_expect(strchr(err, '\n') == NULL);
}

Test(doctor_rules, bad_version_range_fails) {
    char err[512] = "";
    int rc = test_doctor_load_text(RULE_HEAD "\"when\":{\"rocm\":[\">=6.0\",\"~6.3\"]},"
                                             "\"remedy\":\"x\",\"source\":\"s\"}]}",
                                   err, sizeof(err));
    cr_assert_eq(rc, -EINVAL);
    cr_expect(strstr(err, "rules[0] 'r1'") && strstr(err, "when.rocm") && strstr(err, "~6.3"), "%s",
              err);
    rc = test_doctor_load_text(RULE_HEAD "\"when\":{\"torch\":\"<2.5.\"},"
                                         "\"remedy\":\"x\",\"source\":\"s\"}]}",
                               err, sizeof(err));
    cr_assert_eq(rc, -EINVAL, "%s", err);
}

Test(doctor_rules, unknown_key_fails) {
    char err[512] = "";
    int rc = test_doctor_load_text(RULE_HEAD "\"when\":{\"arch\":[\"gfx1100\"]},\"remedy\":\"x\","
                                             "\"source\":\"s\",\"sevrity\":1}]}",
                                   err, sizeof(err));
    cr_assert_eq(rc, -EINVAL);
    cr_expect(strstr(err, "rules[0] 'r1'") && strstr(err, "sevrity"), "%s", err);
    rc = test_doctor_load_text(RULE_HEAD "\"when\":{\"rcom\":[\"<6.3\"]},\"remedy\":\"x\","
                                         "\"source\":\"s\"}]}",
                               err, sizeof(err));
    cr_assert_eq(rc, -EINVAL);
    cr_expect(strstr(err, "when") && strstr(err, "rcom"), "%s", err);
}

Test(doctor_rules, bad_status_and_env_fail) {
    char err[512] = "";
    cr_expect_eq(test_doctor_load_text("{\"rules\":[{\"id\":\"r1\",\"title\":\"t\",\"status\":"
                                       "\"bad\",\"when\":{\"vendor\":\"amd\"},\"remedy\":\"x\","
                                       "\"source\":\"s\"}]}",
                                       err, sizeof(err)),
                 -EINVAL);
    cr_expect(strstr(err, "status"), "%s", err);
    cr_expect_eq(test_doctor_load_text(RULE_HEAD "\"when\":{\"env\":{\"X\":\"maybe\"}},"
                                                 "\"remedy\":\"x\",\"source\":\"s\"}]}",
                                       err, sizeof(err)),
                 -EINVAL);
    cr_expect(strstr(err, "when.env.X"), "%s", err);
}

Test(doctor_rules, hipblas_gfx1100_rocm62_torch25) {
    struct doctor_rules *rs = NULL;
    struct doctor_env e;
    struct doctor_facts f;
    static struct doctor_report r;
    char err[512];
    cr_assert_eq(doctor_rules_load(&rs, NULL, err, sizeof(err)), 0, "%s", err);
    test_doctor_env(&e, "", "gfx1100", NULL);
    test_doctor_facts(&f, "6.2.4", "2.5.1+rocm6.2");
    memset(&r, 0, sizeof(r));
    doctor_check_rules(rs, &e, &f, &r);
    const struct doctor_row *row = test_doctor_find(&r, "hipblas-alloc-gfx1100");
    cr_assert_not_null(row);
    cr_expect_eq(row->status, DOCTOR_FAIL);
    cr_expect_str_eq(row->group, "known issues");
    cr_expect(strstr(row->value, "gfx1100 with ROCm 6.2.4 and PyTorch 2.5.1"), "%s", row->value);
    cr_expect(strstr(row->remedy, "(source: "), "%s", row->remedy);
    cr_expect_null(test_doctor_find(&r, "no known-bad combination"));

    test_doctor_facts(&f, "6.3.1", "2.5.1");
    memset(&r, 0, sizeof(r));
    doctor_check_rules(rs, &e, &f, &r);
    cr_expect_null(test_doctor_find(&r, "hipblas-alloc-gfx1100"));
    doctor_rules_free(rs);
}

Test(doctor_rules, env_condition) {
    struct doctor_rules *rs = NULL;
    struct doctor_env e;
    struct doctor_facts f;
    static struct doctor_report r;
    char err[512];
    static char var[] = "TORCH_BLAS_PREFER_HIPBLASLT=0";
    char *const off[] = {var, NULL};
    cr_assert_eq(doctor_rules_load(&rs, NULL, err, sizeof(err)), 0, "%s", err);
    test_doctor_facts(&f, "7.0.2", "2.8.0");
    test_doctor_env(&e, "", "gfx1101", NULL);
    doctor_check_rules(rs, &e, &f, &r);
    const struct doctor_row *row = test_doctor_find(&r, "hipblaslt-consumer-rocm7");
    cr_assert_not_null(row);
    cr_expect_eq(row->status, DOCTOR_WARN);
    cr_expect(strstr(row->value, "TORCH_BLAS_PREFER_HIPBLASLT unset"), "%s", row->value);
    memset(&r, 0, sizeof(r));
    test_doctor_env(&e, "", "gfx1101", off);
    doctor_check_rules(rs, &e, &f, &r);
    cr_expect_null(test_doctor_find(&r, "hipblaslt-consumer-rocm7"));
    doctor_rules_free(rs);
}

Test(doctor_rules, no_match_is_one_ok_row) {
    struct doctor_rules *rs = NULL;
    struct doctor_env e;
    struct doctor_facts f;
    static struct doctor_report r;
    char err[512];
    cr_assert_eq(doctor_rules_load(&rs, NULL, err, sizeof(err)), 0, "%s", err);
    test_doctor_env(&e, "", "gfx90a", NULL);
    test_doctor_facts(&f, "6.3.1", "2.5.1");
    doctor_check_rules(rs, &e, &f, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_str_eq(r.rows[0].name, "no known-bad combination");
    cr_expect_eq(r.rows[0].status, DOCTOR_OK);
    cr_expect(strstr(r.rows[0].value, "rules checked"), "%s", r.rows[0].value);
    /* unknown versions never match a version condition */
    memset(&r, 0, sizeof(r));
    test_doctor_env(&e, "", "gfx1100", NULL);
    test_doctor_facts(&f, "", "");
    doctor_check_rules(rs, &e, &f, &r);
    cr_expect_null(test_doctor_find(&r, "hipblas-alloc-gfx1100"));
    doctor_rules_free(rs);
}

Test(doctor_rules, kernel_range_and_prefix) {
    char dir[512], path[1024], err[512];
    struct doctor_rules *rs = NULL;
    struct doctor_env e;
    struct doctor_facts f;
    static struct doctor_report r;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "r.json",
                                    "{\"version\":1,\"comment\":\"c\",\"rules\":[{\"id\":\"old-"
                                    "kernel\",\"title\":\"t\",\"status\":\"fail\",\"when\":{"
                                    "\"arch\":[\"gfx11*\"],\"kernel\":[\">=5.15\",\"<6.2\"]},"
                                    "\"remedy\":\"upgrade\",\"source\":\"report x: y\"}]}",
                                    path, sizeof(path)),
                 0);
    cr_assert_eq(doctor_rules_load(&rs, path, err, sizeof(err)), 0, "%s", err);
    test_doctor_env(&e, "", "gfx1102", NULL);
    test_doctor_facts(&f, "", "");
    snprintf(f.kernel, sizeof(f.kernel), "6.1.0-13-amd64");
    doctor_check_rules(rs, &e, &f, &r);
    const struct doctor_row *row = test_doctor_find(&r, "old-kernel");
    cr_assert_not_null(row);
    cr_expect(strstr(row->value, "gfx1102 with kernel 6.1.0-13-amd64"), "%s", row->value);
    cr_expect(strstr(row->remedy, "upgrade (source: report x: y)"), "%s", row->remedy);
    memset(&r, 0, sizeof(r));
    snprintf(f.kernel, sizeof(f.kernel), "6.8.0");
    doctor_check_rules(rs, &e, &f, &r);
    cr_expect_null(test_doctor_find(&r, "old-kernel"));
    doctor_rules_free(rs);
    rs_test_rmtree(dir);
}

/* ---- kernel-log health ---- */

static void test_doctor_kmsg_root(char *dir, size_t cap, const char *kmsg, const char *uptime) {
    char sub[1024], path[1024];
    cr_assert_eq(rs_test_tmpdir(dir, cap), 0);
    snprintf(sub, sizeof(sub), "%s/dev", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/proc", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    if (kmsg)
        cr_assert_eq(rs_test_write_file(dir, "dev/kmsg", kmsg, path, sizeof(path)), 0);
    if (uptime)
        cr_assert_eq(rs_test_write_file(dir, "proc/uptime", uptime, path, sizeof(path)), 0);
}

Test(doctor_rules, kmsg_ring_timeout_saved_records) {
    char dir[512];
    struct doctor_env e;
    static struct doctor_report r;
    test_doctor_kmsg_root(
        dir, sizeof(dir),
        "6,100,1000000,-;amdgpu 0000:03:00.0: amdgpu: SMU is initialized successfully!\n"
        "3,123,456789000,-;amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled "
        "seq=1, emitted seq=3\n"
        " SUBSYSTEM=pci\n"
        " DEVICE=+pci:0000:03:00.0\n"
        "3,124,456789100,-;amdgpu 0000:03:00.0: amdgpu:  Process python3 pid 4242 thread "
        "python3 pid 4242\n"
        "6,125,460000000,-;amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n",
        "7656.79 1234.00\n");
    test_doctor_env(&e, dir, "gfx1100", NULL);
    doctor_check_kmsg(&e, &r);
    const struct doctor_row *row = test_doctor_find(&r, "ring_timeout");
    cr_assert_not_null(row, "rows: %zu, first %s", r.n, r.n ? r.rows[0].value : "");
    cr_expect_str_eq(row->group, "kernel log");
    cr_expect_eq(row->status, DOCTOR_FAIL);
    cr_expect(strstr(row->value, "1 since boot; last 2 h ago: "), "%s", row->value);
    cr_expect(strstr(row->value, "ring gfx_0.0.0 timeout"), "%s", row->value);
    cr_expect(row->remedy[0] != '\0');
    cr_expect_not_null(test_doctor_find(&r, "gpu_reset"));
    cr_expect_null(test_doctor_find(&r, "driver errors"));
    rs_test_rmtree(dir);
}

Test(doctor_rules, kmsg_dmesg_text_without_uptime) {
    char dir[512];
    struct doctor_env e;
    static struct doctor_report r;
    test_doctor_kmsg_root(dir, sizeof(dir),
                          "[  484.427794] amdgpu 0000:0e:00.0: amdgpu: ring gfx_0.0.0 timeout, "
                          "signaled seq=10, emitted seq=12\n"
                          "[  484.427810] amdgpu 0000:0e:00.0: amdgpu: ring gfx_0.0.0 timeout, "
                          "signaled seq=20, emitted seq=22\n",
                          NULL);
    test_doctor_env(&e, dir, NULL, NULL);
    doctor_check_kmsg(&e, &r);
    const struct doctor_row *row = test_doctor_find(&r, "ring_timeout");
    cr_assert_not_null(row);
    cr_expect(strncmp(row->value, "2 since boot; last: ", 20) == 0, "%s", row->value);
    cr_expect(strstr(row->value, "seq=20"), "%s", row->value);
    rs_test_rmtree(dir);
}

Test(doctor_rules, kmsg_benign_is_ok) {
    char dir[512];
    struct doctor_env e;
    static struct doctor_report r;
    test_doctor_kmsg_root(dir, sizeof(dir),
                          "6,1,100,-;amdgpu 0000:03:00.0: amdgpu: SMU is initialized "
                          "successfully!\n"
                          "6,2,200,-;[drm] Initialized amdgpu 3.57.0 20150101 for 0000:03:00.0 "
                          "on minor 1\n"
                          "6,3,300,-;EXT4-fs (nvme0n1p2): mounted filesystem\n",
                          "100.0 50.0\n");
    test_doctor_env(&e, dir, "gfx1100", NULL);
    doctor_check_kmsg(&e, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.rows[0].status, DOCTOR_OK);
    cr_expect_str_eq(r.rows[0].value, "no driver errors in the kernel log (3 records read)");
    rs_test_rmtree(dir);
}

Test(doctor_rules, kmsg_missing_is_skip) {
    char dir[512];
    struct doctor_env e;
    static struct doctor_report r;
    test_doctor_kmsg_root(dir, sizeof(dir), NULL, NULL);
    test_doctor_env(&e, dir, NULL, NULL);
    doctor_check_kmsg(&e, &r);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.rows[0].status, DOCTOR_SKIP);
    cr_expect_str_eq(r.rows[0].group, "kernel log");
    cr_expect(strstr(r.rows[0].remedy, "sudo"), "%s", r.rows[0].remedy);
    cr_expect(strstr(r.rows[0].remedy, "setcap cap_syslog+ep"), "%s", r.rows[0].remedy);
    cr_expect(strstr(r.rows[0].remedy, "kernel.dmesg_restrict=0"), "%s", r.rows[0].remedy);
    rs_test_rmtree(dir);
}
