/* Tests for the GPU overlay's pages: every field with its source or n/a, the reconciliation's
 * numbers and explanations, and the providers' diagnostics. */
#include "backend/telemetry/tele_prov.h"
#include "tui/view/gpu_view.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

TestSuite(gpu_view, .timeout = 20);

#define GV_MAX 256
static struct tele_snap gv_t;
static struct engine_snap gv_es;
static struct gpu_view_line gv_lines[GV_MAX];

static void gv_fixture(void) {
    memset(&gv_t, 0, sizeof(gv_t));
    memset(&gv_es, 0, sizeof(gv_es));
    gv_t.n_prov = 3;
    const char *names[] = {"sysfs", "libdrm", "fdinfo"};
    for (int k = 0; k < 3; k++)
        snprintf(gv_t.prov[k].name, sizeof(gv_t.prov[k].name), "%s", names[k]);
    gv_t.prov[1].status = TELE_UNAVAILABLE;
    snprintf(gv_t.prov[1].reason, sizeof(gv_t.prov[1].reason), "no amdgpu render node");
    gv_t.prov[0].samples = 4;
    gv_t.prov[0].total_sample_ns = 4 * 150000; /* mean 150 us */
    gv_t.prov[0].max_sample_ns = 310000;
    gv_t.prov[0].caps = TELE_CAP(MEMORY) | TELE_CAP(THERMAL);
    gv_t.n_gpus = 1;
    struct tele_gpu *g = &gv_t.gpus[0];
    tele_gpu_init(g, "0000:03:00.0");
    g->index = 0;
    g->vendor = TELE_VENDOR_AMD;
    tele_set(g, TELE_F_VRAM_USED, 6.0 * (1u << 30)); /* 6 GiB on the device */
    tele_set(g, TELE_F_VRAM_TOTAL, 24.0 * (1u << 30));
    tele_set(g, TELE_F_KFD_VRAM, 3.0 * (1u << 30));
    tele_set(g, TELE_F_PROC_VRAM, 5.5 * (1u << 30));
    g->src[TELE_F_PROC_VRAM] = 3;
    g->vram_by_valid = g->vram_total_by_valid = 1;
    g->vram_used_by[0] = 6.0 * (1u << 30);
    g->vram_total_by[0] = 24.0 * (1u << 30);
    snprintf(gv_es.dev.pci, sizeof(gv_es.dev.pci), "0000:03:00.0");
    gv_es.dev.mem_valid = true;
    gv_es.dev.mem_total_bytes = 24ull << 30;
    gv_es.dev.mem_free_bytes = 21ull << 30; /* the runtime sees 3 GiB used */
    gv_es.mem.reserved_bytes = 2ull << 30;
    gv_es.mem.allocated_bytes = 512ull << 20;
}

static const char *gv_find(int n, const char *needle) {
    for (int i = 0; i < n; i++)
        if (strstr(gv_lines[i].text, needle))
            return gv_lines[i].text;
    return NULL;
}

Test(gpu_view, training_gpu_found_by_pci) {
    gv_fixture();
    cr_assert_eq(gpu_view_training(&gv_t, &gv_es), 0);
    snprintf(gv_es.dev.pci, sizeof(gv_es.dev.pci), "0000:04:00.0");
    cr_assert_eq(gpu_view_training(&gv_t, &gv_es), -1);
    gv_es.dev.pci[0] = '\0'; /* the CPU backend */
    cr_assert_eq(gpu_view_training(&gv_t, &gv_es), -1);
    cr_assert_eq(gpu_view_training(NULL, &gv_es), -1);
}

Test(gpu_view, details_show_sources_and_na) {
    gv_fixture();
    int n = gpu_view_lines(&gv_t, &gv_es, 0, GPU_VIEW_DETAIL, gv_lines, GV_MAX);
    const char *used = gv_find(n, "VRAM used");
    cr_assert(used && strstr(used, "6.0 GiB") && strstr(used, "sysfs"), "%s", used);
    const char *temp = gv_find(n, "temperature (edge)");
    cr_assert(temp && strstr(temp, "n/a"), "%s", temp);
    cr_assert_eq(strstr(temp, " 0 "), NULL, "unread is n/a, never 0: %s", temp);
    const char *procs = gv_find(n, "VRAM of listed processes");
    cr_assert(procs && strstr(procs, "fdinfo"), "%s", procs);
    cr_assert(gv_find(n, "drm_buddy): n/a"), "the allocator says why it is missing");
    /* every field has its line */
    int fields = 0;
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        fields += gv_find(n, tele_field_label(f)) != NULL;
    cr_assert_eq(fields, TELE_F_COUNT);
}

Test(gpu_view, reconciliation_explains_each_gap) {
    gv_fixture();
    int n = gpu_view_lines(&gv_t, &gv_es, 0, GPU_VIEW_RECONCILE, gv_lines, GV_MAX);
    const char *sysfs = gv_find(n, "  sysfs");
    cr_assert(sysfs && strstr(sysfs, "6.0 GiB") && strstr(sysfs, "24.0 GiB"), "%s", sysfs);
    const char *hip = gv_find(n, "hipMemGetInfo");
    cr_assert(hip && strstr(hip, "3.0 GiB") && strstr(hip, "compositor"), "%s", hip);
    cr_assert(gv_find(n, "ringside pool reserved"));
    /* 6 GiB device - 5.5 GiB processes = 512 MiB nobody owns */
    const char *d1 = gv_find(n, "device used - processes");
    cr_assert(d1 && strstr(d1, "512.0 MiB"), "%s", d1);
    /* 6 - 3 = 3 GiB of non-KFD VRAM */
    const char *d2 = gv_find(n, "device used - KFD");
    cr_assert(d2 && strstr(d2, "3.0 GiB"), "%s", d2);
    /* 2 GiB reserved - 512 MiB live = 1.5 GiB idle in the pool */
    const char *d3 = gv_find(n, "pool reserved - allocated");
    cr_assert(d3 && strstr(d3, "1.5 GiB"), "%s", d3);
    /* 3 GiB runtime used - 2 GiB pool = 1 GiB */
    const char *d4 = gv_find(n, "runtime used - pool reserved");
    cr_assert(d4 && strstr(d4, "1.0 GiB"), "%s", d4);
}

Test(gpu_view, reconciliation_of_another_gpu_has_no_engine_rows) {
    gv_fixture();
    snprintf(gv_es.dev.pci, sizeof(gv_es.dev.pci), "0000:0b:00.0");
    int n = gpu_view_lines(&gv_t, &gv_es, 0, GPU_VIEW_RECONCILE, gv_lines, GV_MAX);
    cr_assert_null(gv_find(n, "  hipMemGetInfo"));
    cr_assert_null(gv_find(n, "pool reserved - allocated"));
    cr_assert(gv_find(n, "does not train on this GPU"));
}

/* The index of the first line holding needle, or -1. */
static int gv_index(int n, const char *needle) {
    for (int i = 0; i < n; i++)
        if (strstr(gv_lines[i].text, needle))
            return i;
    return -1;
}

/* A row of numbers per provider, and under it (indented, whole, for the overlay to wrap) what
 * it reads or why it is not used. */
Test(gpu_view, providers_page_has_times_and_reasons) {
    gv_fixture();
    snprintf(gv_t.prov[2].reason, sizeof(gv_t.prov[2].reason), "%s",
             "a reason long enough to need a second line on an 80-column terminal, where the "
             "overlay has 72 columns for it");
    int n = gpu_view_lines(&gv_t, &gv_es, 0, GPU_VIEW_PROVIDERS, gv_lines, GV_MAX);
    int s = gv_index(n, "sysfs");
    cr_assert(s >= 0 && strstr(gv_lines[s].text, "150.0") && strstr(gv_lines[s].text, "310.0"),
              "%s", s >= 0 ? gv_lines[s].text : "no sysfs row");
    cr_assert_str_eq(gv_lines[s + 1].text, "          reads: memory,temperature");
    int d = gv_index(n, "libdrm");
    cr_assert(d >= 0 && strstr(gv_lines[d].text, "unavailable"));
    cr_assert_str_eq(gv_lines[d + 1].text, "          no amdgpu render node");
    cr_assert_eq(gv_lines[d + 1].role, THEME_DIM, "in the unavailable row's colour");
    int f = gv_index(n, "fdinfo");
    cr_assert_str_eq(gv_lines[f + 1].text + 10, gv_t.prov[2].reason, "cut: %s",
                     gv_lines[f + 1].text);
    cr_assert_eq(n, 1 + 3 * 2 + 1, "a header, two lines per provider, the count");
}

Test(gpu_view, no_telemetry_and_no_gpu_say_so) {
    gv_fixture();
    int n = gpu_view_lines(NULL, &gv_es, 0, GPU_VIEW_DETAIL, gv_lines, GV_MAX);
    cr_assert_eq(n, 1);
    cr_assert(strstr(gv_lines[0].text, "no telemetry"));
    gv_t.n_gpus = 0;
    n = gpu_view_lines(&gv_t, &gv_es, 0, GPU_VIEW_RECONCILE, gv_lines, GV_MAX);
    cr_assert(gv_find(n, "no GPU found"));
    /* a small buffer is never overrun */
    gv_fixture();
    cr_assert_eq(gpu_view_lines(&gv_t, &gv_es, 0, GPU_VIEW_DETAIL, gv_lines, 3), 3);
}

Test(gpu_view, values_in_their_units) {
    char b[32];
    gpu_view_fmt(b, sizeof(b), TELE_F_VRAM_USED, 1536.0 * 1024 * 1024);
    cr_assert_str_eq(b, "1.5 GiB");
    gpu_view_fmt(b, sizeof(b), TELE_F_PCIE_TX, 2.0 * 1024 * 1024);
    cr_assert_str_eq(b, "2.0 MiB/s");
    gpu_view_fmt(b, sizeof(b), TELE_F_TEMP, 68.5);
    cr_assert_str_eq(b, "68.5");
    gpu_view_fmt(b, sizeof(b), TELE_F_BUSY, 97);
    cr_assert_str_eq(b, "97");
}

/* The doctor section of the details page. */
static struct doctor_report gv_doc;

static void gv_doctor_fixture(void) {
    memset(&gv_doc, 0, sizeof(gv_doc));
    doctor_add(&gv_doc, "environment", "kernel", DOCTOR_OK, "6.8.0-49-generic");
    doctor_remedy(
        doctor_add(&gv_doc, "variables", "HSA_OVERRIDE_GFX_VERSION", DOCTOR_WARN, "11.0.0"),
        "unset it: the GPUs present are supported");
    doctor_add(&gv_doc, "environment", "rocm", DOCTOR_OK, "6.2.4");
    doctor_remedy(doctor_add(&gv_doc, "permissions", "/dev/kfd", DOCTOR_FAIL, "not readable"),
                  "add alice to the render group");
    doctor_remedy(doctor_add(&gv_doc, "kernel log", "kernel log", DOCTOR_SKIP, "n/a"),
                  "/dev/kmsg is not readable");
    doctor_add(&gv_doc, "variables", "ROCR_VISIBLE_DEVICES", DOCTOR_WARN, "7"); /* no remedy */
}

Test(gpu_view, doctor_not_run_yet) {
    int n = gpu_view_doctor(NULL, 0, false, gv_lines, GV_MAX);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(gv_lines[0].text, "doctor: not run yet (D runs the environment checks)");
    n = gpu_view_doctor(NULL, 0, true, gv_lines, GV_MAX);
    cr_assert(gv_find(n, "running"), "%s", gv_lines[0].text);
}

Test(gpu_view, doctor_summary_and_problem_rows) {
    gv_doctor_fixture();
    time_t when = 1700000000;
    struct tm tm;
    char hms[16];
    localtime_r(&when, &tm);
    strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
    char want[96];
    snprintf(want, sizeof(want), "doctor %s: 2 ok, 2 warn, 1 fail, 1 skipped", hms);
    int n = gpu_view_doctor(&gv_doc, when, false, gv_lines, GV_MAX);
    cr_assert_str_eq(gv_lines[0].text, want);
    cr_assert_eq(gv_lines[0].role, THEME_ERROR, "a failure colours the summary");
    int kfd = gv_index(n, "/dev/kfd"), hsa = gv_index(n, "HSA_OVERRIDE_GFX_VERSION"),
        vis = gv_index(n, "ROCR_VISIBLE_DEVICES");
    cr_assert(kfd > 0 && hsa > 0 && vis > 0, "%d %d %d", kfd, hsa, vis);
    cr_assert(kfd < hsa && hsa < vis, "fail rows before warn rows: %d %d %d", kfd, hsa, vis);
    cr_assert(strstr(gv_lines[kfd].text, "fail") && strstr(gv_lines[kfd].text, "not readable"),
              "%s", gv_lines[kfd].text);
    cr_assert_eq(gv_lines[kfd].role, THEME_ERROR);
    cr_assert_eq(gv_lines[hsa].role, THEME_WARN);
    /* each remedy on the line after its row, dimmed */
    cr_assert(strstr(gv_lines[kfd + 1].text, "add alice to the render group"), "%s",
              gv_lines[kfd + 1].text);
    cr_assert_eq(gv_lines[kfd + 1].role, THEME_DIM);
    cr_assert(strstr(gv_lines[hsa + 1].text, "unset it"), "%s", gv_lines[hsa + 1].text);
    cr_assert_eq(n, vis + 1, "a row without a remedy has no remedy line");
    cr_assert_eq(gv_index(n, "6.8.0-49"), -1, "ok rows are not listed");
    cr_assert_eq(gv_index(n, "kmsg"), -1, "skipped rows are not listed");
}

Test(gpu_view, doctor_rows_as_many_as_fit) {
    gv_doctor_fixture();
    /* summary + the fail row and its remedy + "more" */
    int n = gpu_view_doctor(&gv_doc, 0, false, gv_lines, 4);
    cr_assert_eq(n, 4);
    cr_assert(strstr(gv_lines[1].text, "/dev/kfd"));
    cr_assert(strstr(gv_lines[3].text, "2 more"), "%s", gv_lines[3].text);
    cr_assert_eq(gpu_view_doctor(&gv_doc, 0, false, gv_lines, 1), 1, "never more than max");
    /* all ok: the summary alone, in the ok colour */
    memset(&gv_doc, 0, sizeof(gv_doc));
    doctor_add(&gv_doc, "environment", "kernel", DOCTOR_OK, "6.8");
    n = gpu_view_doctor(&gv_doc, 0, false, gv_lines, GV_MAX);
    cr_assert_eq(n, 1);
    cr_assert_eq(gv_lines[0].role, THEME_OK);
    cr_assert(strstr(gv_lines[0].text, ": 1 ok, 0 warn, 0 fail, 0 skipped"), "%s",
              gv_lines[0].text);
}

/* The process list marks ringside's own process and the watched job the snapshot is. */
Test(gpu_view, processes_mark_ringside_and_the_watched_job) {
    gv_fixture();
    struct tele_gpu *g = &gv_t.gpus[0];
    g->procs_src = 3;
    g->n_procs = 3;
    const int32_t pids[3] = {100, 4242, 777};
    const char *names[3] = {"ringside", "python3", "other"};
    for (int k = 0; k < 3; k++) {
        g->procs[k].pid = pids[k];
        snprintf(g->procs[k].name, sizeof(g->procs[k].name), "%s", names[k]);
        g->procs[k].vram_valid = true;
        g->procs[k].vram_bytes = 1ull << 30;
    }
    g->procs[0].self = true;
    gv_es.pid = 4242;
    int n = gpu_view_lines(&gv_t, &gv_es, 0, GPU_VIEW_DETAIL, gv_lines, GV_MAX);
    const char *own = gv_find(n, " 100 "), *job = gv_find(n, " 4242 "),
               *other = gv_find(n, " 777 ");
    cr_assert(own && strstr(own, "<- ringside"), "%s", own);
    cr_assert(job && strstr(job, "<- watched job"), "%s", job);
    cr_assert(job && strstr(job, "1.0 GiB"), "its VRAM: %s", job);
    cr_assert(other && !strstr(other, "<-"), "%s", other);
    gv_es.pid = 0; /* ringside's own loop: no job to mark */
    n = gpu_view_lines(&gv_t, &gv_es, 0, GPU_VIEW_DETAIL, gv_lines, GV_MAX);
    cr_assert_null(strstr(gv_find(n, " 4242 "), "<-"));
}
