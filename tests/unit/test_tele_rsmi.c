/* Tests for the rocm-smi provider: the mapping of library readings to a record and of KFD SMI
 * event numbers to panel text (on hand-built readings, the expected values converted by hand in
 * the comments), and the real library's failure on a machine without an AMD GPU, which must
 * leave stderr untouched. */
#include "tests/support/tele_expect.h"

#include <criterion/criterion.h>

#ifdef RS_HAVE_ROCM_SMI

#include "backend/telemetry/tele_rsmi_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<rocm_smi/rocm_smi.h>)
#include <rocm_smi/rocm_smi.h>
#define TRS_HAVE_HEADER 1
#endif
#endif

TestSuite(tele_rsmi, .timeout = 60);

#define GIB 1073741824.0
#define MIB 1048576.0

static void trs_freqs(struct tele_rsmi_freqs *f, uint32_t cur, uint32_t n, const uint64_t *v) {
    f->ok = true;
    f->n = n;
    f->cur = cur;
    memcpy(f->v, v, n * sizeof(*v));
}

/* A Radeon RX 7900 XTX under load, as rocm-smi reports it. */
static void trs_xtx(struct tele_rsmi_raw *r) {
    memset(r, 0, sizeof(*r));
    r->bdfid = 0x300; /* bus 3 << 8 */
    snprintf(r->name, sizeof(r->name), "Radeon RX 7900 XTX");
    r->power = TELE_POWER_ACTIVE;
    r->mem_total_bytes[TELE_RSMI_MEM_VRAM] = (struct tele_rsmi_u64){25753026560u, true};
    r->mem_used_bytes[TELE_RSMI_MEM_VRAM] = (struct tele_rsmi_u64){8589934592u, true};
    r->mem_total_bytes[TELE_RSMI_MEM_VIS_VRAM] = (struct tele_rsmi_u64){268435456u, true};
    r->mem_used_bytes[TELE_RSMI_MEM_VIS_VRAM] = (struct tele_rsmi_u64){104857600u, true};
    r->mem_total_bytes[TELE_RSMI_MEM_GTT] = (struct tele_rsmi_u64){34359738368u, true};
    r->mem_used_bytes[TELE_RSMI_MEM_GTT] = (struct tele_rsmi_u64){52428800u, true};
    r->busy_pct = (struct tele_rsmi_u64){97, true};
    r->mem_busy_pct = (struct tele_rsmi_u64){45, true};
    r->temp_mc[TELE_RSMI_TEMP_EDGE] = (struct tele_rsmi_i64){65000, true};
    r->temp_mc[TELE_RSMI_TEMP_JUNCTION] = (struct tele_rsmi_i64){88000, true};
    r->temp_mc[TELE_RSMI_TEMP_MEM] = (struct tele_rsmi_i64){80000, true};
    r->power_uw = (struct tele_rsmi_u64){310500000, true};
    r->power_cap_uw = (struct tele_rsmi_u64){355000000, true};
    trs_freqs(&r->sclk_hz, 2, 3, (const uint64_t[]){500000000, 2000000000, 2525000000});
    trs_freqs(&r->mclk_hz, 2, 3, (const uint64_t[]){96000000, 456000000, 1249000000});
    trs_freqs(&r->pcie_tps, 1, 2, (const uint64_t[]){2500000000, 16000000000});
    r->pcie_lanes[0] = 1;
    r->pcie_lanes[1] = 16;
    r->fan_rpm = (struct tele_rsmi_i64){1500, true};
    r->fan_speed = (struct tele_rsmi_i64){102, true};
    r->fan_max = (struct tele_rsmi_u64){255, true};
    r->ecc_ce = (struct tele_rsmi_u64){3, true};
    r->ecc_ue = (struct tele_rsmi_u64){1, true};
}

Test(tele_rsmi, ops_describe_the_provider) {
    cr_assert_str_eq(tele_prov_rsmi_ops.name, "rocm-smi");
    uint32_t want = TELE_CAP(MEMORY) | TELE_CAP(UTIL) | TELE_CAP(THERMAL) | TELE_CAP(POWER) |
                    TELE_CAP(CLOCKS) | TELE_CAP(PCIE) | TELE_CAP(ECC) | TELE_CAP(PROCESSES) |
                    TELE_CAP(EVENTS) | TELE_CAP(IDENTITY) | TELE_CAP(FANS);
    cr_expect_eq(tele_prov_rsmi_ops.caps, want);
}

/* BDFID = domain << 32 | bus << 8 | device << 3 | function (rocm_smi.h, rsmi_dev_pci_id_get). */
Test(tele_rsmi, pci_address_from_bdfid) {
    char pci[16];
    cr_assert(tele_rsmi_map_pci(0x300, pci));
    cr_expect_str_eq(pci, "0000:03:00.0");
    /* domain 1, bus 0xc5, device 0x1f (0xf8), function 7: 0x1_0000_c5ff */
    cr_assert(tele_rsmi_map_pci(0x10000c5ffull, pci));
    cr_expect_str_eq(pci, "0001:c5:1f.7");
    /* bits 31..28 (a partition id in ROCm 6.1) are not part of the address */
    cr_assert(tele_rsmi_map_pci(0x30000300ull, pci));
    cr_expect_str_eq(pci, "0000:03:00.0");
    /* a VMD domain (0x10000 << 32) is five digits, as the kernel writes it */
    cr_assert(tele_rsmi_map_pci(0x100000000e100ull, pci));
    cr_expect_str_eq(pci, "10000:e1:00.0");
    cr_expect_not(tele_rsmi_map_pci(0xffffffff00000300ull, pci), "16 characters do not fit");
}

Test(tele_rsmi, every_reading_in_the_record_units) {
    struct tele_rsmi_raw r;
    struct tele_gpu g;
    trs_xtx(&r);
    cr_assert(tele_rsmi_map_gpu(&r, &g));
    cr_expect_str_eq(g.pci, "0000:03:00.0");
    cr_expect_str_eq(g.name, "Radeon RX 7900 XTX");
    cr_expect_eq(g.name_src, 1);
    cr_expect_str_eq(g.driver, "amdgpu");
    cr_expect_eq(g.vendor, TELE_VENDOR_AMD);
    cr_expect_eq(g.power, TELE_POWER_ACTIVE);
    cr_expect_eq(g.procs_src, 0);
    TELE_EXPECT(&g, {TELE_F_VRAM_TOTAL, 24 * GIB - 16 * MIB}, {TELE_F_VRAM_USED, 8 * GIB},
                {TELE_F_VIS_VRAM_TOTAL, 256 * MIB}, {TELE_F_VIS_VRAM_USED, 100 * MIB},
                {TELE_F_GTT_TOTAL, 32 * GIB}, {TELE_F_GTT_USED, 50 * MIB}, {TELE_F_BUSY, 97},
                {TELE_F_MEM_BUSY, 45}, {TELE_F_TEMP, 65}, {TELE_F_TEMP_HOTSPOT, 88},
                {TELE_F_TEMP_MEM, 80}, {TELE_F_POWER, 310.5}, {TELE_F_POWER_CAP, 355},
                {TELE_F_SCLK, 2525}, {TELE_F_MCLK, 1249}, {TELE_F_PCIE_GEN, 4},
                {TELE_F_PCIE_WIDTH, 16}, {TELE_F_FAN_RPM, 1500},
                {TELE_F_FAN_PCT, 40}, /* 102 / 255 */
                {TELE_F_ECC_CE, 3}, {TELE_F_ECC_UE, 1});
}

Test(tele_rsmi, failed_calls_leave_fields_unset) {
    struct tele_rsmi_raw r;
    struct tele_gpu g;
    memset(&r, 0, sizeof(r));
    r.bdfid = 0x300;
    /* values the library would have written, but every call failed */
    r.busy_pct.v = 50;
    r.temp_mc[TELE_RSMI_TEMP_EDGE].v = 40000;
    cr_assert(tele_rsmi_map_gpu(&r, &g));
    cr_expect_str_eq(g.pci, "0000:03:00.0");
    cr_expect_eq(g.name_src, 0, "no name");
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        cr_expect_eq(g.src[f], 0, "%s set", tele_field_json(f));
}

Test(tele_rsmi, implausible_readings_are_not_readings) {
    struct tele_rsmi_raw r;
    struct tele_gpu g;
    trs_xtx(&r);
    r.busy_pct.v = 250;
    r.power_cap_uw.v = 0;                                         /* no cap set */
    r.sclk_hz.cur = 3;                                            /* past the 3 levels */
    r.mclk_hz.n = 0;                                              /* no levels */
    trs_freqs(&r.pcie_tps, 0, 1, (const uint64_t[]){3000000000}); /* 3 GT/s: no generation */
    r.pcie_lanes[0] = 8;
    r.fan_max.v = 0;
    r.fan_rpm.v = -1;
    cr_assert(tele_rsmi_map_gpu(&r, &g));
    double v;
    cr_expect_not(tele_get(&g, TELE_F_BUSY, &v));
    cr_expect_not(tele_get(&g, TELE_F_POWER_CAP, &v));
    cr_expect_not(tele_get(&g, TELE_F_SCLK, &v));
    cr_expect_not(tele_get(&g, TELE_F_MCLK, &v));
    cr_expect_not(tele_get(&g, TELE_F_PCIE_GEN, &v));
    cr_expect(tele_get(&g, TELE_F_PCIE_WIDTH, &v) && v == 8);
    cr_expect_not(tele_get(&g, TELE_F_FAN_PCT, &v));
    cr_expect_not(tele_get(&g, TELE_F_FAN_RPM, &v));
    cr_expect(tele_get(&g, TELE_F_POWER, &v) && v == 310.5, "the rest still maps");
}

Test(tele_rsmi, a_suspended_gpu_shows_memory_only) {
    struct tele_rsmi_raw r;
    struct tele_gpu g;
    trs_xtx(&r);
    r.power = TELE_POWER_SUSPENDED;
    cr_assert(tele_rsmi_map_gpu(&r, &g));
    cr_expect_eq(g.power, TELE_POWER_SUSPENDED);
    TELE_EXPECT(&g, {TELE_F_VRAM_TOTAL, 24 * GIB - 16 * MIB}, {TELE_F_VRAM_USED, 8 * GIB},
                {TELE_F_VIS_VRAM_TOTAL, 256 * MIB}, {TELE_F_VIS_VRAM_USED, 100 * MIB},
                {TELE_F_GTT_TOTAL, 32 * GIB}, {TELE_F_GTT_USED, 50 * MIB});
}

/* ---- processes ---- */

static void trs_proc(struct tele_rsmi_procs *ps, uint32_t pid, const char *name, uint64_t vram,
                     bool vram_ok, uint32_t n_gpus, const uint32_t *gpus) {
    struct tele_rsmi_proc *p = &ps->p[ps->n++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->vram_bytes = vram;
    p->vram_ok = vram_ok;
    p->n_gpus = n_gpus;
    memcpy(p->gpus, gpus, n_gpus * sizeof(*gpus));
}

static struct tele_rsmi_procs *trs_procs(void) {
    struct tele_rsmi_procs *ps = calloc(1, sizeof(*ps));
    cr_assert_not_null(ps);
    ps->ok = ps->complete = true;
    return ps;
}

Test(tele_rsmi, processes_are_listed_on_the_gpus_they_use) {
    struct tele_rsmi_procs *ps = trs_procs();
    trs_proc(ps, 100, "python3", 8589934592u, true, 1, (const uint32_t[]){0});
    trs_proc(ps, 300, "ringside", 4563402752u, true, 1, (const uint32_t[]){1}); /* 4.25 GiB */
    struct tele_gpu g0, g1, g2;
    tele_gpu_init(&g0, "0000:03:00.0");
    tele_gpu_init(&g1, "0000:04:00.0");
    tele_gpu_init(&g2, "0000:05:00.0");
    tele_rsmi_map_procs(ps, 0, 300, &g0);
    tele_rsmi_map_procs(ps, 1, 300, &g1);
    tele_rsmi_map_procs(ps, 2, 300, &g2);
    cr_assert_eq(g0.procs_src, 1);
    cr_assert_eq(g0.n_procs, 1);
    cr_expect_eq(g0.procs[0].pid, 100);
    cr_expect_str_eq(g0.procs[0].name, "python3");
    cr_expect(g0.procs[0].vram_valid && g0.procs[0].vram_bytes == 8589934592u);
    cr_expect_not(g0.procs[0].self);
    TELE_EXPECT(&g0, {TELE_F_KFD_VRAM, 8 * GIB});
    cr_assert_eq(g1.n_procs, 1);
    cr_expect(g1.procs[0].self, "pid 300 is this process");
    TELE_EXPECT(&g1, {TELE_F_KFD_VRAM, 4.25 * GIB});
    /* no compute process: a known zero */
    cr_expect_eq(g2.procs_src, 1);
    cr_expect_eq(g2.n_procs, 0);
    TELE_EXPECT(&g2, {TELE_F_KFD_VRAM, 0});
    free(ps);
}

/* rocm-smi's vram_usage sums every GPU of a process: it cannot be split between them. */
Test(tele_rsmi, a_process_on_two_gpus_has_no_share) {
    struct tele_rsmi_procs *ps = trs_procs();
    trs_proc(ps, 100, "python3", 8589934592u, true, 1, (const uint32_t[]){0});
    trs_proc(ps, 200, "torchrun", 6442450944u, true, 2, (const uint32_t[]){0, 1});
    struct tele_gpu g0, g1;
    tele_gpu_init(&g0, "0000:03:00.0");
    tele_gpu_init(&g1, "0000:04:00.0");
    tele_rsmi_map_procs(ps, 0, 1, &g0);
    tele_rsmi_map_procs(ps, 1, 1, &g1);
    cr_assert_eq(g0.n_procs, 2);
    cr_expect(g0.procs[0].vram_valid);
    cr_expect_eq(g0.procs[1].pid, 200);
    cr_expect_not(g0.procs[1].vram_valid);
    cr_assert_eq(g1.n_procs, 1);
    cr_expect_eq(g1.procs[0].pid, 200);
    double v;
    cr_expect_not(tele_get(&g0, TELE_F_KFD_VRAM, &v), "a part of the sum is unknown");
    cr_expect_not(tele_get(&g1, TELE_F_KFD_VRAM, &v));
    free(ps);
}

Test(tele_rsmi, an_incomplete_or_unread_list) {
    struct tele_rsmi_procs *ps = trs_procs();
    trs_proc(ps, 100, "python3", 8589934592u, true, 1, (const uint32_t[]){0});
    ps->complete = false; /* more processes than were looked at */
    struct tele_gpu g;
    double v;
    tele_gpu_init(&g, "0000:03:00.0");
    tele_rsmi_map_procs(ps, 0, 1, &g);
    cr_expect_eq(g.n_procs, 1);
    cr_expect_not(tele_get(&g, TELE_F_KFD_VRAM, &v));
    ps->ok = false;
    tele_gpu_init(&g, "0000:03:00.0");
    tele_rsmi_map_procs(ps, 0, 1, &g);
    cr_expect_eq(g.procs_src, 0, "no list at all");
    cr_expect_not(tele_get(&g, TELE_F_KFD_VRAM, &v));
    free(ps);
}

Test(tele_rsmi, a_long_list_is_cut_and_counted) {
    struct tele_rsmi_procs *ps = trs_procs();
    for (uint32_t pid = 1000; pid < 1040; pid++) /* 40 processes of 1 MiB on GPU 0 */
        trs_proc(ps, pid, "worker", 1048576, true, 1, (const uint32_t[]){0});
    struct tele_gpu g;
    tele_gpu_init(&g, "0000:03:00.0");
    tele_rsmi_map_procs(ps, 0, 1, &g);
    cr_expect_eq(g.n_procs, TELE_MAX_PROCS);
    cr_expect_eq(g.procs_more, 40 - TELE_MAX_PROCS);
    TELE_EXPECT(&g, {TELE_F_KFD_VRAM, 40 * MIB});
    free(ps);
}

/* ---- KFD SMI events ---- */

/* The kernel's enum kfd_smi_event (include/uapi/linux/kfd_ioctl.h). */
Test(tele_rsmi, event_numbers_are_the_kernels) {
    static const struct {
        uint32_t num;
        const char *name;
        enum ev_severity sev;
    } want[] = {
        {1, "VM fault", SEV_ERROR},         {2, "thermal throttling", SEV_WARNING},
        {3, "GPU pre-reset", SEV_ERROR},    {4, "GPU post-reset", SEV_WARNING},
        {5, "migration start", SEV_INFO},   {6, "migration end", SEV_INFO},
        {7, "page fault start", SEV_INFO},  {8, "page fault end", SEV_INFO},
        {9, "queue eviction", SEV_WARNING}, {10, "queue restore", SEV_INFO},
        {11, "unmap from GPU", SEV_INFO},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct tele_rsmi_event *e = tele_rsmi_event_find(want[i].num);
        cr_assert_not_null(e, "event %u", want[i].num);
        cr_expect_str_eq(e->name, want[i].name);
        cr_expect_eq(e->sev, want[i].sev, "event %u", want[i].num);
    }
    cr_expect_null(tele_rsmi_event_find(0), "KFD_SMI_EVENT_NONE is not an event");
    cr_expect_null(tele_rsmi_event_find(12), "not in this table");
    cr_expect_null(tele_rsmi_event_find(64), "the all-processes flag is not an event");
}

/* Bits 0..3 (VM fault, throttling, pre- and post-reset) and bit 63 (all processes). */
Test(tele_rsmi, the_mask_asks_for_one_word_events) {
    cr_expect_eq(tele_rsmi_event_mask(), 0x800000000000000full);
    cr_expect_eq(TELE_RSMI_KFD_MASK(TELE_RSMI_KFD_GPU_PRE_RESET), 0x4ull);
}

Test(tele_rsmi, event_text) {
    char text[EV_TEXT_BYTES];
    enum ev_severity sev = SEV_INFO;
    cr_assert(tele_rsmi_event_text(3, "5", text, sizeof(text), &sev));
    cr_expect_str_eq(text, "KFD: GPU pre-reset (5)");
    cr_expect_eq(sev, SEV_ERROR);
    cr_assert(tele_rsmi_event_text(4, "", text, sizeof(text), &sev));
    cr_expect_str_eq(text, "KFD: GPU post-reset");
    cr_expect_eq(sev, SEV_WARNING);
    /* "%x:%s": pid 0x4d2 = 1234 */
    cr_assert(tele_rsmi_event_text(1, "4d2:python3", text, sizeof(text), &sev));
    cr_expect_str_eq(text, "KFD: VM fault (pid 1234 python3)");
    cr_expect_eq(sev, SEV_ERROR);
    cr_assert(tele_rsmi_event_text(2, "1:2a", text, sizeof(text), &sev));
    cr_expect_str_eq(text, "KFD: thermal throttling (1:2a)");
    cr_expect_eq(sev, SEV_WARNING);
}

/* A number outside the subscription can only be a word of a message the library split. */
Test(tele_rsmi, unsubscribed_or_unknown_numbers_are_dropped) {
    char text[EV_TEXT_BYTES] = "x";
    enum ev_severity sev = SEV_INFO;
    cr_expect_not(tele_rsmi_event_text(9, "123", text, sizeof(text), &sev));
    cr_expect_str_eq(text, "");
    cr_expect_not(tele_rsmi_event_text(0, "", text, sizeof(text), &sev));
    cr_expect_not(tele_rsmi_event_text(0xc, "ontent", text, sizeof(text), &sev));
    cr_expect_not(tele_rsmi_event_text(UINT32_MAX, "1", text, sizeof(text), &sev));
}

/* Copies that disagree with the kernel: rocm_smi_lib's python bindings (rsmiBindings.py) number
 * VMFAULT..GPU_POST_RESET 0..3, and the proposed KFD_SMI_EVENT_RING_HANG = 5 moved
 * MIGRATE_START to 6. A number is always read as the kernel's. */
Test(tele_rsmi, numbers_from_other_numberings_read_as_the_kernels) {
    cr_expect_str_eq(tele_rsmi_event_find(2)->name, "thermal throttling",
                     "2 is GPU_PRE_RESET in the 0-based bindings");
    cr_expect_str_eq(tele_rsmi_event_find(6)->name, "migration end",
                     "6 is MIGRATE_START after RING_HANG");
    cr_expect_str_eq(tele_rsmi_event_find(9)->name, "queue eviction");
}

/* rocm_smi.h 5.2.3 declares the first four events with the kernel's numbers and nothing after
 * GPU_POST_RESET (RSMI_EVT_NOTIF_LAST); later headers add the rest, also as the kernel's. */
Test(tele_rsmi, the_installed_header_agrees_on_what_it_declares) {
#ifdef TRS_HAVE_HEADER
    cr_expect_eq(RSMI_EVT_NOTIF_VMFAULT, TELE_RSMI_KFD_VMFAULT);
    cr_expect_eq(RSMI_EVT_NOTIF_THERMAL_THROTTLE, TELE_RSMI_KFD_THERMAL_THROTTLE);
    cr_expect_eq(RSMI_EVT_NOTIF_GPU_PRE_RESET, TELE_RSMI_KFD_GPU_PRE_RESET);
    cr_expect_eq(RSMI_EVT_NOTIF_GPU_POST_RESET, TELE_RSMI_KFD_GPU_POST_RESET);
    cr_expect_eq(RSMI_EVENT_MASK_FROM_INDEX(RSMI_EVT_NOTIF_GPU_POST_RESET),
                 TELE_RSMI_KFD_MASK(TELE_RSMI_KFD_GPU_POST_RESET));
    cr_expect_eq(sizeof(((rsmi_evt_notification_data_t *)0)->message), 64);
#else
    cr_skip_test("rocm_smi/rocm_smi.h is not on the test's include path");
#endif
}

/* ---- the real library on this machine ---- */

static bool trs_have_amd_gpu(void) {
    struct stat st;
    return stat("/sys/class/kfd", &st) == 0;
}

static void trs_emit(const struct tele_ctx *ctx, enum ev_severity sev, const char *pci,
                     const char *text) {
    (void)ctx, (void)sev, (void)pci, (void)text;
}

/* Whether librocm_smi64 is mapped into this process now (/proc/self/maps). */
static bool trs_lib_mapped(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f);
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, "librocm_smi64") != NULL;
    fclose(f);
    return found;
}

/* Open with fd 2 sent to a temporary file; the file's size afterwards. A marker written to fd 2
 * after open shows that the provider put the test's fd 2 back. */
static long trs_open_captured(int *rc, char *reason, size_t cap) {
    struct tele_roots roots;
    memset(&roots, 0, sizeof(roots));
    snprintf(roots.sys, sizeof(roots.sys), "/sys");
    snprintf(roots.proc, sizeof(roots.proc), "/proc");
    struct tele_ctx ctx = {&roots, getpid(), trs_emit, NULL};
    char path[] = "/tmp/ringside-rsmi-stderr.XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    cr_assert_geq(saved, 0);
    dup2(fd, 2);
    void *state = NULL;
    *rc = tele_prov_rsmi_ops.open(&ctx, &state, reason, cap);
    cr_assert_eq(write(2, "marker", 6), 6);
    dup2(saved, 2);
    close(saved);
    if (*rc == 0)
        tele_prov_rsmi_ops.close(state);
    struct stat st;
    fstat(fd, &st);
    char got[16] = "";
    cr_assert_eq(pread(fd, got, sizeof(got) - 1, 0), st.st_size < 15 ? st.st_size : 15);
    close(fd);
    cr_expect_str_eq(got, "marker", "stderr during open: \"%s\"", got);
    return (long)st.st_size;
}

Test(tele_rsmi, without_an_amd_gpu_open_fails_quietly) {
    if (trs_have_amd_gpu())
        cr_skip_test("this machine has an AMD GPU (/sys/class/kfd)");
    char reason[TELE_REASON_BYTES] = "";
    int rc = 0;
    long size = trs_open_captured(&rc, reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV, "rc %d (%s)", rc, reason);
    cr_expect_str_eq(reason, "no AMD GPU (no KFD and no amdgpu card under /sys/class; not "
                             "loaded)");
    cr_expect_eq(size, 6, "only the marker reached stderr (%ld bytes)", size);
    /* a second attempt in the same process fails the same way */
    reason[0] = '\0';
    size = trs_open_captured(&rc, reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV);
    cr_expect(strstr(reason, "no AMD GPU") != NULL, "reason: %s", reason);
    cr_expect_eq(size, 6);
    /* the library (and the C++ runtime it needs) is never loaded for nothing */
    cr_expect(!trs_lib_mapped(), "librocm_smi64 mapped after the failed opens");
}

/* ---- under tests/e2e/rsmi_ns.sh: the real library on the fake GPU of the rsmi-ns fixture ----
 * The expected values are the fixture's files converted by hand: VRAM, GTT in bytes as written;
 * power1_average 338000000 uW = 338 W; pwm1 102 of pwm1_max 255 = 40 %; pp_dpm_pcie's current
 * level 16.0 GT/s x16 = gen 4; RAS features 0x5 = UMC and GFX, ce 2 + 3, ue 0 + 1; KFD processes
 * 2817 (8 GiB) and 3012 (4.25 GiB) on the one GPU (gpu_id 45091). */

TestSuite(tele_rsmi_ns, .timeout = 60);

Test(tele_rsmi_ns, samples_the_fixture_gpu) {
    const char *proc = getenv("RINGSIDE_RSMI_NS_PROC");
    if (!proc)
        cr_skip_test("runs under tests/e2e/rsmi_ns.sh (a fake GPU in a mount namespace)");
    struct tele_roots *roots = calloc(1, sizeof(*roots));
    struct tele_gpu *out = calloc(TELE_MAX_GPUS, sizeof(*out));
    cr_assert(roots && out);
    snprintf(roots->sys, sizeof(roots->sys), "/sys");
    snprintf(roots->proc, sizeof(roots->proc), "%s", proc);
    struct tele_ctx ctx = {roots, getpid(), trs_emit, NULL};
    char reason[TELE_REASON_BYTES] = "";
    void *state = NULL;
    int rc = tele_prov_rsmi_ops.open(&ctx, &state, reason, sizeof(reason));
    cr_assert_eq(rc, 0, "open: %d (%s)", rc, reason);
    cr_expect(trs_lib_mapped(), "an open provider holds the library");
    size_t n = 0;
    rc = tele_prov_rsmi_ops.sample(state, out, TELE_MAX_GPUS, &n, reason, sizeof(reason));
    cr_assert_eq(rc, 0, "sample: %d (%s)", rc, reason);
    cr_assert_eq(n, 1);
    const struct tele_gpu *g = &out[0];
    cr_expect_str_eq(g->pci, "0000:03:00.0");
    cr_expect_str_eq(g->name, "Radeon RX 7900 XTX");
    cr_expect_eq(g->power, TELE_POWER_UNKNOWN, "no power/ under the real /sys/bus");
    TELE_EXPECT(g, {TELE_F_VRAM_TOTAL, 25753026560.0}, {TELE_F_VRAM_USED, 21206401024.0},
                {TELE_F_VIS_VRAM_TOTAL, 256 * MIB}, {TELE_F_VIS_VRAM_USED, 180 * MIB},
                {TELE_F_GTT_TOTAL, 32 * GIB}, {TELE_F_GTT_USED, 524 * MIB}, {TELE_F_BUSY, 97},
                {TELE_F_MEM_BUSY, 41}, {TELE_F_TEMP, 68}, {TELE_F_TEMP_HOTSPOT, 84},
                {TELE_F_TEMP_MEM, 80}, {TELE_F_POWER, 338}, {TELE_F_POWER_CAP, 355},
                {TELE_F_SCLK, 2482}, {TELE_F_MCLK, 1249}, {TELE_F_FAN_RPM, 1650},
                {TELE_F_FAN_PCT, 40}, {TELE_F_PCIE_GEN, 4}, {TELE_F_PCIE_WIDTH, 16},
                {TELE_F_ECC_CE, 5}, {TELE_F_ECC_UE, 1}, {TELE_F_KFD_VRAM, 12.25 * GIB});
    cr_assert_eq(g->n_procs, 2);
    for (int i = 0; i < 2; i++) {
        cr_expect(g->procs[i].pid == 2817 || g->procs[i].pid == 3012, "pid %d", g->procs[i].pid);
        cr_expect_str_eq(g->procs[i].name, "python3");
        cr_expect(g->procs[i].vram_valid);
    }
    tele_prov_rsmi_ops.close(state);
    free(out);
    free(roots);
}

#else

Test(tele_rsmi, not_built) {
    cr_skip_test("built without rocm-smi-lib (RINGSIDE_ROCM_SMI): nothing to test");
}

#endif
