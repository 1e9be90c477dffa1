/* Tests for the NVML provider, run against the fake NVML library (tests/fakes/fake_nvml.c) and
 * the process tree under tests/fixtures/telemetry/nvml. The expected numbers are the fake's
 * values converted by hand (MiB -> bytes, mW -> W, KB/s -> bytes/s). */
#include <criterion/criterion.h>

#ifdef RS_FAKE_NVML

#include "backend/telemetry/tele_prov.h"
#include "tests/fakes/fake_nvml.h"
#include "tests/support/rs_test.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TestSuite(tele_nvml, .timeout = 60);

#define TNV_H100 "0000:18:00.0"
#define TNV_ADA  "0000:2a:00.0"

/* What the provider's events thread delivered. */
static pthread_mutex_t tnv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tnv_cv = PTHREAD_COND_INITIALIZER;
static int tnv_n_events;
static enum ev_severity tnv_sev;
static char tnv_pci[16], tnv_text[128];

static void tnv_emit(const struct tele_ctx *ctx, enum ev_severity sev, const char *pci,
                     const char *text) {
    (void)ctx;
    pthread_mutex_lock(&tnv_mu);
    tnv_n_events++;
    tnv_sev = sev;
    snprintf(tnv_pci, sizeof(tnv_pci), "%s", pci);
    snprintf(tnv_text, sizeof(tnv_text), "%s", text);
    pthread_cond_broadcast(&tnv_cv);
    pthread_mutex_unlock(&tnv_mu);
}

/* A generous bound for a failing test, not a delay: returns as soon as the event is there. */
static bool tnv_wait_event(void) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&tnv_mu);
    while (tnv_n_events == 0 && pthread_cond_timedwait(&tnv_cv, &tnv_mu, &until) != ETIMEDOUT)
        ;
    bool got = tnv_n_events > 0;
    pthread_mutex_unlock(&tnv_mu);
    return got;
}

struct tnv {
    struct tele_roots roots;
    struct tele_ctx ctx;
    void *state;
    char reason[TELE_REASON_BYTES];
    struct tele_gpu out[TELE_MAX_GPUS];
    size_t n;
};

static int tnv_open_lib(struct tnv *t, const char *lib) {
    memset(t, 0, sizeof(*t));
    rs_test_fixture("telemetry/nvml/proc", t->roots.proc, sizeof(t->roots.proc));
    snprintf(t->roots.nvml_lib, sizeof(t->roots.nvml_lib), "%s", lib);
    t->ctx = (struct tele_ctx){&t->roots, 4242, tnv_emit, NULL};
    return tele_prov_nvml_ops.open(&t->ctx, &t->state, t->reason, sizeof(t->reason));
}

static void tnv_open(struct tnv *t) {
    int rc = tnv_open_lib(t, RS_FAKE_NVML);
    cr_assert_eq(rc, 0, "open: %d %s", rc, t->reason);
}

static void tnv_sample(struct tnv *t) {
    char reason[TELE_REASON_BYTES] = "";
    int rc =
        tele_prov_nvml_ops.sample(t->state, t->out, TELE_MAX_GPUS, &t->n, reason, sizeof(reason));
    cr_assert_eq(rc, 0, "sample: %s", reason);
}

static const struct tele_gpu *tnv_gpu(const struct tnv *t, const char *pci) {
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->out[i].pci, pci) == 0)
            return &t->out[i];
    cr_assert_fail("no GPU %s among %zu", pci, t->n);
    return NULL;
}

static void tnv_expect(const struct tele_gpu *g, enum tele_field f, double want) {
    double v = -1;
    cr_assert(tele_get(g, f, &v), "%s not set", tele_field_json(f));
    cr_assert_float_eq(v, want, 1e-6, "%s = %f, want %f", tele_field_json(f), v, want);
}

static void tnv_unset(const struct tele_gpu *g, enum tele_field f) {
    double v = 0;
    cr_assert_not(tele_get(g, f, &v), "%s set to %f", tele_field_json(f), v);
}

/* The fake, loaded a second time so its counters outlive the provider's dlclose. */
static void tnv_counts(struct fake_nvml_counts *c) {
    static void *lib;
    if (!lib)
        lib = dlopen(RS_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "%s", dlerror());
    fake_nvml_get_counts_fn get;
    void *sym = dlsym(lib, "fake_nvml_get_counts");
    cr_assert_not_null(sym);
    memcpy(&get, &sym, sizeof(get));
    get(c);
}

Test(tele_nvml, ops_describe_the_provider) {
    cr_assert_str_eq(tele_prov_nvml_ops.name, "nvml");
    uint32_t want = TELE_CAP(MEMORY) | TELE_CAP(UTIL) | TELE_CAP(THERMAL) | TELE_CAP(POWER) |
                    TELE_CAP(CLOCKS) | TELE_CAP(PCIE) | TELE_CAP(ECC) | TELE_CAP(PROCESSES) |
                    TELE_CAP(EVENTS) | TELE_CAP(IDENTITY) | TELE_CAP(FANS);
    cr_assert_eq(tele_prov_nvml_ops.caps, want);
}

Test(tele_nvml, h100_values_in_record_units) {
    struct tnv t;
    tnv_open(&t);
    tnv_sample(&t);
    cr_assert_eq(t.n, 2);
    const struct tele_gpu *g = tnv_gpu(&t, TNV_H100);
    cr_assert_str_eq(g->name, "NVIDIA H100 80GB HBM3");
    cr_assert_str_eq(g->arch, "sm_90");
    cr_assert_str_eq(g->driver, "nvidia");
    cr_assert_eq(g->vendor, TELE_VENDOR_NVIDIA);
    tnv_expect(g, TELE_F_VRAM_TOTAL, 85520809984.0);  /* 81559 MiB */
    tnv_expect(g, TELE_F_VRAM_USED, 12884901888.0);   /* 12288 MiB, v2: without reserved */
    tnv_expect(g, TELE_F_VRAM_RESERVED, 577765376.0); /* 551 MiB */
    tnv_expect(g, TELE_F_BUSY, 87);
    tnv_expect(g, TELE_F_MEM_BUSY, 41);
    tnv_expect(g, TELE_F_TEMP, 54);
    tnv_expect(g, TELE_F_POWER, 312.456);   /* 312456 mW */
    tnv_expect(g, TELE_F_POWER_CAP, 700.0); /* 700000 mW */
    tnv_expect(g, TELE_F_SCLK, 1980);
    tnv_expect(g, TELE_F_MCLK, 2619);
    tnv_expect(g, TELE_F_PCIE_GEN, 5);
    tnv_expect(g, TELE_F_PCIE_WIDTH, 16);
    tnv_expect(g, TELE_F_PCIE_TX, 1263616.0);  /* 1234 KB/s */
    tnv_expect(g, TELE_F_PCIE_RX, 58151936.0); /* 56789 KB/s */
    tnv_expect(g, TELE_F_ECC_CE, 17);
    tnv_expect(g, TELE_F_ECC_UE, 1);
    tnv_unset(g, TELE_F_FAN_PCT); /* SXM board: NOT_SUPPORTED */
    tnv_unset(g, TELE_F_GTT_USED);
    tele_prov_nvml_ops.close(t.state);
}

Test(tele_nvml, second_gpu_normalised_and_unsupported_fields_unset) {
    struct tnv t;
    tnv_open(&t);
    tnv_sample(&t);
    /* NVML spells it "00000000:2A:00.0" */
    const struct tele_gpu *g = tnv_gpu(&t, TNV_ADA);
    cr_assert_str_eq(g->name, "NVIDIA RTX 6000 Ada Generation");
    cr_assert_str_eq(g->arch, "sm_89");
    tnv_expect(g, TELE_F_VRAM_TOTAL, 51527024640.0); /* 49140 MiB */
    tnv_expect(g, TELE_F_VRAM_USED, 1073741824.0);
    tnv_expect(g, TELE_F_VRAM_RESERVED, 471859200.0); /* 450 MiB */
    tnv_expect(g, TELE_F_POWER, 29.87);
    tnv_expect(g, TELE_F_POWER_CAP, 300.0);
    tnv_expect(g, TELE_F_FAN_PCT, 30);
    tnv_expect(g, TELE_F_PCIE_GEN, 1);
    tnv_expect(g, TELE_F_PCIE_WIDTH, 8);
    tnv_expect(g, TELE_F_PCIE_TX, 3072.0);
    tnv_expect(g, TELE_F_PCIE_RX, 12288.0);
    tnv_unset(g, TELE_F_ECC_CE); /* ECC off: NOT_SUPPORTED */
    tnv_unset(g, TELE_F_ECC_UE);
    cr_assert_eq(g->procs_src, 1);
    cr_assert_eq(g->n_procs, 0);
    tnv_expect(g, TELE_F_PROC_VRAM, 0); /* a known empty list */
    tele_prov_nvml_ops.close(t.state);
}

Test(tele_nvml, processes_named_from_proc_and_self_marked) {
    struct tnv t;
    tnv_open(&t);
    tnv_sample(&t);
    const struct tele_gpu *g = tnv_gpu(&t, TNV_H100);
    cr_assert_eq(g->procs_src, 1);
    cr_assert_eq(g->n_procs, 3);
    cr_assert_eq(g->procs_more, 0);
    const struct tele_proc *p = g->procs;
    cr_assert_eq(p[0].pid, 4242);
    cr_assert_str_eq(p[0].name, "python3");
    cr_assert(p[0].self);
    cr_assert(p[0].vram_valid);
    cr_assert_eq(p[0].vram_bytes, 8589934592ull); /* 8192 MiB */
    cr_assert_eq(p[1].pid, 4243);
    cr_assert_str_eq(p[1].name, "pt_main_thread");
    cr_assert_not(p[1].self);
    cr_assert_eq(p[1].vram_bytes, 3221225472ull); /* 3072 MiB */
    cr_assert_eq(p[2].pid, 4250);
    cr_assert_str_eq(p[2].name, "torchrun");
    cr_assert_not(p[2].vram_valid);                 /* NVML_VALUE_NOT_AVAILABLE */
    tnv_expect(g, TELE_F_PROC_VRAM, 11811160064.0); /* 8192 + 3072 MiB */
    tele_prov_nvml_ops.close(t.state);
}

Test(tele_nvml, process_list_beyond_the_record_is_counted) {
    setenv("FAKE_NVML_PROCS", "40", 1);
    struct tnv t;
    tnv_open(&t);
    tnv_sample(&t);
    const struct tele_gpu *g = tnv_gpu(&t, TNV_H100);
    cr_assert_eq(g->n_procs, TELE_MAX_PROCS);
    cr_assert_eq(g->procs_more, 40 - TELE_MAX_PROCS);
    cr_assert_eq(g->procs[0].pid, 10000);
    cr_assert_str_eq(g->procs[0].name, "");             /* no /proc entry */
    cr_assert_eq(g->procs[31].vram_bytes, 33554432ull); /* pid 10031: 32 MiB */
    tnv_expect(g, TELE_F_PROC_VRAM, 859832320.0);       /* 1 + 2 + ... + 40 = 820 MiB */
    tnv_sample(&t);                                     /* the grown buffer is reused */
    cr_assert_eq(tnv_gpu(&t, TNV_H100)->procs_more, 8);
    tele_prov_nvml_ops.close(t.state);
}

Test(tele_nvml, memory_v1_fallback_has_no_reserved) {
    setenv("FAKE_NVML_NO_V2", "1", 1);
    struct tnv t;
    tnv_open(&t);
    for (int round = 0; round < 2; round++) {
        tnv_sample(&t);
        const struct tele_gpu *g = tnv_gpu(&t, TNV_H100);
        tnv_expect(g, TELE_F_VRAM_TOTAL, 85520809984.0);
        tnv_expect(g, TELE_F_VRAM_USED, 13462667264.0); /* v1: 12288 + 551 MiB */
        tnv_unset(g, TELE_F_VRAM_RESERVED);
    }
    struct fake_nvml_counts c;
    tnv_counts(&c);
    cr_assert_eq(c.mem_v2_calls, 2, "the v2 call is tried once per GPU, not every sample");
    tele_prov_nvml_ops.close(t.state);
}

Test(tele_nvml, missing_library_says_so) {
    struct tnv t;
    int rc = tnv_open_lib(&t, "/nonexistent/libnvidia-ml.so.1");
    cr_assert_eq(rc, -ENOENT);
    cr_assert_str_eq(t.reason, "/nonexistent/libnvidia-ml.so.1 not found (no NVIDIA driver)");
    rc = tnv_open_lib(&t, "libringside-absent-nvml.so.1");
    cr_assert_eq(rc, -ENOENT);
    cr_assert_str_eq(t.reason, "libringside-absent-nvml.so.1 not found (no NVIDIA driver)");
}

Test(tele_nvml, init_failure_gives_nvml_text) {
    setenv("FAKE_NVML_INIT_FAIL", "1", 1);
    struct tnv t;
    int rc = tnv_open_lib(&t, RS_FAKE_NVML);
    cr_assert_eq(rc, -ENODEV);
    cr_assert_str_eq(t.reason, "nvmlInit failed: Driver Not Loaded");
}

Test(tele_nvml, no_gpu_is_unavailable_and_shuts_down) {
    setenv("FAKE_NVML_GPUS", "0", 1);
    struct tnv t;
    int rc = tnv_open_lib(&t, RS_FAKE_NVML);
    cr_assert_eq(rc, -ENODEV);
    cr_assert_str_eq(t.reason, "NVML lists no GPU");
    struct fake_nvml_counts c;
    tnv_counts(&c);
    cr_assert_eq(c.inits, 0);
}

Test(tele_nvml, xid_event_reaches_emit_and_close_joins) {
    setenv("FAKE_NVML_XID", "79", 1);
    struct fake_nvml_counts c;
    tnv_counts(&c); /* keeps the fake loaded past close */
    struct tnv t;
    tnv_open(&t);
    cr_assert(tnv_wait_event(), "no Xid event delivered");
    pthread_mutex_lock(&tnv_mu);
    cr_assert_eq(tnv_sev, SEV_ERROR);
    cr_assert_str_eq(tnv_pci, TNV_ADA);
    cr_assert_str_eq(tnv_text, "NVIDIA Xid 79: GPU has fallen off the bus");
    pthread_mutex_unlock(&tnv_mu);
    tele_prov_nvml_ops.close(t.state);
    tnv_counts(&c);
    cr_assert_eq(c.waiting, 0);
    cr_assert_eq(c.event_sets, 0);
    cr_assert_eq(c.inits, 0);
    cr_assert_eq(tnv_n_events, 1);
}

Test(tele_nvml, unknown_xid_keeps_its_number) {
    setenv("FAKE_NVML_XID", "150", 1);
    struct tnv t;
    tnv_open(&t);
    cr_assert(tnv_wait_event(), "no Xid event delivered");
    pthread_mutex_lock(&tnv_mu);
    cr_assert_str_eq(tnv_text, "NVIDIA Xid 150");
    pthread_mutex_unlock(&tnv_mu);
    tele_prov_nvml_ops.close(t.state);
}

Test(tele_nvml, without_events_samples_and_closes) {
    setenv("FAKE_NVML_NO_EVENTS", "1", 1);
    struct fake_nvml_counts c;
    tnv_counts(&c);
    struct tnv t;
    tnv_open(&t);
    tnv_counts(&c);
    cr_assert_eq(c.event_sets, 0, "the unused event set is freed at open");
    tnv_sample(&t);
    tnv_expect(tnv_gpu(&t, TNV_H100), TELE_F_PCIE_TX, 1263616.0);
    tele_prov_nvml_ops.close(t.state);
    tnv_counts(&c);
    cr_assert_eq(c.waits, 0);
    cr_assert_eq(c.inits, 0);
    cr_assert_eq(tnv_n_events, 0);
}

#else

Test(tele_nvml, not_built) {
    cr_skip_test("built without NVML support");
}

#endif
