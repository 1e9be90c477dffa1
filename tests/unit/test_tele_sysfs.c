/* Unit tests for the amdgpu sysfs telemetry provider on the fixture machines (rdna3-apu,
 * mixed) and on trees built at run time, and for its gpu_metrics parser on byte buffers.
 * Expected values are the fixture files' numbers, converted by hand in the comments. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "backend/telemetry/tele_prov.h"
#include "backend/telemetry/tele_sysfs_internal.h"
#include "tests/support/rs_test.h"
#include "tests/support/tele_expect.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GIB 1073741824.0
#define MIB 1048576.0

/* ---- a provider instance on a root, with an emit stub that records ---- */

struct t_events {
    int n;
    char last[200];
};
static struct t_events t_events;

static void t_emit(const struct tele_ctx *ctx, enum ev_severity sev, const char *pci,
                   const char *text) {
    (void)ctx, (void)sev, (void)pci;
    t_events.n++;
    snprintf(t_events.last, sizeof(t_events.last), "%s", text);
}

struct t_machine {
    struct tele_roots roots;
    struct tele_ctx ctx;
    void *state;
    struct tele_gpu gpus[TELE_MAX_GPUS];
    size_t n;
    char reason[TELE_REASON_BYTES];
};

static int t_open(struct t_machine *m, const char *sys) {
    memset(m, 0, sizeof(*m));
    snprintf(m->roots.sys, sizeof(m->roots.sys), "%s", sys);
    m->ctx.roots = &m->roots;
    m->ctx.self_pid = getpid();
    m->ctx.emit = t_emit;
    return tele_prov_sysfs_ops.open(&m->ctx, &m->state, m->reason, sizeof(m->reason));
}

static void t_sample(struct t_machine *m, size_t cap) {
    int rc =
        tele_prov_sysfs_ops.sample(m->state, m->gpus, cap, &m->n, m->reason, sizeof(m->reason));
    cr_assert_eq(rc, 0, "sample: %d (%s)", rc, m->reason);
}

/* A zeroed machine on the heap: its records are too large for a test's stack. */
static struct t_machine *t_alloc(void) {
    struct t_machine *m = calloc(1, sizeof(*m));
    cr_assert_not_null(m);
    return m;
}

/* Open and sample a fixture machine. */
static struct t_machine *t_machine(const char *name) {
    char rel[64], sys[TELE_PATH_MAX];
    struct t_machine *m = t_alloc();
    snprintf(rel, sizeof(rel), "telemetry/%s/sys", name);
    int rc = t_open(m, rs_test_fixture(rel, sys, sizeof(sys)));
    cr_assert_eq(rc, 0, "open %s: %d (%s)", sys, rc, m->reason);
    t_sample(m, TELE_MAX_GPUS);
    return m;
}

static void t_close(struct t_machine *m) {
    tele_prov_sysfs_ops.close(m->state);
    free(m);
}

static const struct tele_gpu *t_gpu(const struct t_machine *m, const char *pci) {
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->gpus[i].pci, pci) == 0)
            return &m->gpus[i];
    cr_assert_fail("no record for %s", pci);
    return NULL;
}

/* ---- rdna3-apu: a Radeon 780M APU (card0) and a Radeon RX 7900 XTX (card1) ---- */

Test(sysfs_rdna3_apu, finds_the_two_amdgpu_cards_only) {
    struct t_machine *m = t_machine("rdna3-apu");
    /* card0-eDP-1, card1-DP-1, renderD128/129 (which repeats card1's uevent) and version
     * are not cards; cardN come in card order. */
    cr_assert_eq(m->n, 2);
    cr_expect_str_eq(m->gpus[0].pci, "0000:c5:00.0");
    cr_expect_eq(m->gpus[0].card, 0);
    cr_expect_str_eq(m->gpus[1].pci, "0000:03:00.0");
    cr_expect_eq(m->gpus[1].card, 1);
    for (size_t i = 0; i < m->n; i++) {
        cr_expect_eq(m->gpus[i].vendor, TELE_VENDOR_AMD);
        cr_expect_str_eq(m->gpus[i].driver, "amdgpu");
        cr_expect_eq(m->gpus[i].power, TELE_POWER_ACTIVE);
    }
    cr_expect_eq(t_events.n, 0, "unexpected event: %s", t_events.last);
    t_close(m);
}

Test(sysfs_rdna3_apu, identity) {
    struct t_machine *m = t_machine("rdna3-apu");
    const struct tele_gpu *apu = t_gpu(m, "0000:c5:00.0"), *xtx = t_gpu(m, "0000:03:00.0");
    cr_expect_str_eq(xtx->name, "Radeon RX 7900 XTX"); /* product_name */
    cr_expect_str_eq(xtx->arch, "gfx1100");            /* GC 11.0.0 */
    cr_expect_str_eq(apu->name, "AMD GPU 0x15bf");     /* no product_name: the device id */
    cr_expect_str_eq(apu->arch, "gfx1103");            /* GC 11.0.1: the compiler calls it 1103 */
    t_close(m);
}

Test(sysfs_rdna3_apu, dgpu_fields_from_text_hwmon_ras_and_kfd) {
    struct t_machine *m = t_machine("rdna3-apu");
    /* gpu_metrics holds 67/83/79 C, 336 W, 96 %, 40 %, 2480/1249 MHz: the text files win. */
    TELE_EXPECT(
        t_gpu(m, "0000:03:00.0"), {TELE_F_VRAM_TOTAL, 25753026560.0}, /* 24 GiB - 16 MiB */
        {TELE_F_VRAM_USED, 19 * GIB + 768 * MIB}, {TELE_F_VIS_VRAM_TOTAL, 256 * MIB},
        {TELE_F_VIS_VRAM_USED, 180 * MIB}, {TELE_F_GTT_TOTAL, 32 * GIB},
        {TELE_F_GTT_USED, 524 * MIB}, {TELE_F_BUSY, 97}, {TELE_F_MEM_BUSY, 41}, {TELE_F_SCLK, 2482},
        {TELE_F_MCLK, 1249}, {TELE_F_TEMP, 68}, /* 68000 millidegrees, label edge */
        {TELE_F_TEMP_HOTSPOT, 84},              /* label junction */
        {TELE_F_TEMP_MEM, 80},                  /* label mem */
        {TELE_F_POWER, 338},                    /* power1_average 338000000 uW */
        {TELE_F_POWER_CAP, 355}, {TELE_F_FAN_RPM, 1650}, {TELE_F_FAN_PCT, 40}, /* pwm 102 of 255 */
        {TELE_F_PCIE_GEN, 4}, {TELE_F_PCIE_WIDTH, 16},                         /* 16.0 GT/s x16 */
        {TELE_F_ECC_UE, 1},                                                    /* umc 0 + gfx 1 */
        {TELE_F_ECC_CE, 5},                                                    /* umc 2 + gfx 3 */
        {TELE_F_KFD_VRAM, 8 * GIB + 4.25 * GIB}); /* pids 2817 and 3012 */
    t_close(m);
}

Test(sysfs_rdna3_apu, apu_fields_with_gpu_metrics_filling_the_gap) {
    struct t_machine *m = t_machine("rdna3-apu");
    /* No pp_dpm_sclk: the v2.1 table's average_gfxclk_frequency (current_gfxclk is 0xffff).
     * No mem_busy_percent, junction/mem sensors, fans or power cap on an APU. Its table's
     * 46.5 C, 11.5 % and 18.45 W lose to hwmon and gpu_busy_percent. */
    TELE_EXPECT(t_gpu(m, "0000:c5:00.0"), {TELE_F_VRAM_TOTAL, 512 * MIB},
                {TELE_F_VRAM_USED, 384 * MIB}, {TELE_F_VIS_VRAM_TOTAL, 512 * MIB},
                {TELE_F_VIS_VRAM_USED, 384 * MIB}, {TELE_F_GTT_TOTAL, 16 * GIB},
                {TELE_F_GTT_USED, 1.5 * GIB}, {TELE_F_BUSY, 12}, {TELE_F_TEMP, 47},
                {TELE_F_POWER, 18}, /* power1_input 18000000 uW */
                {TELE_F_MCLK, 2800}, {TELE_F_SCLK, 800}, {TELE_F_PCIE_GEN, 4},
                {TELE_F_PCIE_WIDTH, 16}, {TELE_F_KFD_VRAM, 0}); /* KFD node, no VRAM held */
    t_close(m);
}

/* ---- mixed: i915 card0, a runtime-suspended card1, a damaged card2 ---- */

Test(sysfs_mixed, skips_the_i915_card) {
    struct t_machine *m = t_machine("mixed");
    cr_assert_eq(m->n, 2);
    cr_expect_str_eq(m->gpus[0].pci, "0000:0a:00.0");
    cr_expect_str_eq(m->gpus[1].pci, "0000:0b:00.0");
    t_close(m);
}

Test(sysfs_mixed, suspended_card_is_not_woken) {
    struct t_machine *m = t_machine("mixed");
    const struct tele_gpu *g = t_gpu(m, "0000:0a:00.0");
    cr_expect_eq(g->power, TELE_POWER_SUSPENDED);
    cr_expect_str_eq(g->name, "AMD GPU 0x73bf");
    cr_expect_str_eq(g->arch, "gfx1030");
    /* Its busy (77), dpm, hwmon (31 C, 9 W), RAS (4/9) and gpu_metrics files all hold values:
     * only the memory counters and the PCI link may show. KFD lists no processes here. */
    TELE_EXPECT(g, {TELE_F_VRAM_TOTAL, 16 * GIB - 16 * MIB}, {TELE_F_VRAM_USED, 32 * MIB},
                {TELE_F_VIS_VRAM_TOTAL, 256 * MIB}, {TELE_F_VIS_VRAM_USED, 7 * MIB},
                {TELE_F_GTT_TOTAL, 16 * GIB}, {TELE_F_GTT_USED, 11 * MIB},
                {TELE_F_PCIE_GEN, 1}, /* 2.5 GT/s: the idle link trained down */
                {TELE_F_PCIE_WIDTH, 16});
    t_close(m);
}

Test(sysfs_mixed, damaged_files_leave_fields_unset) {
    struct t_machine *m = t_machine("mixed");
    const struct tele_gpu *g = t_gpu(m, "0000:0b:00.0");
    cr_expect_eq(g->power, TELE_POWER_ACTIVE);
    cr_expect_str_eq(g->name, "AMD GPU 0x7480"); /* product_name is empty */
    cr_expect_str_eq(g->arch, "gfx1102");        /* no ip_discovery: the KFD node's target */
    /* vram_used "banana", vis_vram_used empty, gtt_used "12abc", gpu_busy_percent 250, no
     * '*' in pp_dpm_sclk, pp_dpm_mclk a directory, no hwmon, link speed "Unknown", RAS
     * "Query currently inaccessible", and a gpu_metrics cut at 40 of its 120 bytes (whose
     * first bytes hold 50 C and 55 %: none of it may be used). */
    TELE_EXPECT(g, {TELE_F_VRAM_TOTAL, 8 * GIB - 16 * MIB}, {TELE_F_VIS_VRAM_TOTAL, 256 * MIB},
                {TELE_F_GTT_TOTAL, 16 * GIB}, {TELE_F_PCIE_WIDTH, 8});
    t_close(m);
}

/* ---- open: what is reported when there is nothing to read ---- */

Test(sysfs_open, nonexistent_root_names_the_path) {
    struct t_machine m;
    int rc = t_open(&m, "/nonexistent-ringside-root");
    cr_expect_eq(rc, -ENOENT);
    cr_expect(strstr(m.reason, "/nonexistent-ringside-root/class/drm") != NULL, "%s", m.reason);
}

/* Make every parent of root/rel, then write text there. */
static void t_put(const char *root, const char *rel, const char *text) {
    char path[TELE_PATH_MAX], out[TELE_PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    cr_assert_eq(rs_test_write_file(root, rel, text, out, sizeof(out)), 0, "%s", path);
}

Test(sysfs_open, no_amdgpu_card_is_enodev) {
    char dir[512], want[600];
    struct t_machine m;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    t_put(dir, "class/drm/version", "drm 1.1.0 20060810\n");
    t_put(dir, "class/drm/card0/device/uevent", "DRIVER=nouveau\nPCI_SLOT_NAME=0000:01:00.0\n");
    cr_expect_eq(t_open(&m, dir), -ENODEV);
    snprintf(want, sizeof(want), "no amdgpu device under %s/class/drm", dir);
    cr_expect_str_eq(m.reason, want);
    rs_test_rmtree(dir);
}

/* A one-card tree at run time: card0 at 0000:05:00.0. */
static void t_tree(char *dir, size_t cap) {
    cr_assert_eq(rs_test_tmpdir(dir, cap), 0);
    t_put(dir, "class/drm/card0/device/uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:05:00.0\n");
    t_put(dir, "class/drm/card0/device/gpu_busy_percent", "10\n");
    t_put(dir, "class/drm/card0/device/mem_info_vram_total", "4096\n");
}

Test(sysfs_sample, rereads_files_each_sample) {
    char dir[512];
    struct t_machine *m = t_alloc();
    t_tree(dir, sizeof(dir));
    cr_assert_eq(t_open(m, dir), 0, "%s", m->reason);
    t_sample(m, TELE_MAX_GPUS);
    TELE_EXPECT(&m->gpus[0], {TELE_F_BUSY, 10}, {TELE_F_VRAM_TOTAL, 4096});
    cr_expect_eq(m->gpus[0].power, TELE_POWER_UNKNOWN); /* no runtime_status: read it all */
    cr_expect_str_eq(m->gpus[0].name, "AMD GPU");       /* neither product_name nor device */
    t_put(dir, "class/drm/card0/device/gpu_busy_percent", "64\n");
    t_put(dir, "class/drm/card0/device/power/runtime_status", "suspended\n");
    t_sample(m, TELE_MAX_GPUS);
    TELE_EXPECT(&m->gpus[0], {TELE_F_VRAM_TOTAL, 4096});
    t_put(dir, "class/drm/card0/device/power/runtime_status", "active\n");
    t_sample(m, TELE_MAX_GPUS);
    TELE_EXPECT(&m->gpus[0], {TELE_F_BUSY, 64}, {TELE_F_VRAM_TOTAL, 4096});
    t_close(m);
    rs_test_rmtree(dir);
}

Test(sysfs_sample, fills_no_more_than_cap) {
    char sys[TELE_PATH_MAX];
    struct t_machine *m = t_alloc();
    cr_assert_eq(t_open(m, rs_test_fixture("telemetry/rdna3-apu/sys", sys, sizeof(sys))), 0);
    t_sample(m, 1);
    cr_expect_eq(m->n, 1);
    cr_expect_str_eq(m->gpus[0].pci, "0000:c5:00.0");
    t_close(m);
}

/* What a sample as another user gave: the rc of open and sample, and the first record. */
struct t_as_user {
    int rc_open, rc_sample;
    size_t n;
    struct tele_gpu g;
};

/* Open and sample dir (as nobody, through rs_test_as_nobody: root reads any file whatever its
 * mode). */
static void t_sample_fn(void *ctx, void *out) {
    static struct t_machine m;
    struct t_as_user *r = out;
    r->rc_open = t_open(&m, ctx);
    if (r->rc_open == 0) {
        r->rc_sample = tele_prov_sysfs_ops.sample(m.state, m.gpus, TELE_MAX_GPUS, &m.n, m.reason,
                                                  sizeof(m.reason));
        r->n = m.n;
        r->g = m.gpus[0];
    }
}

/* Every directory of the tree enterable and every file readable by others (nobody's view). */
static int t_open_up(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    return chmod(path, (st->st_mode & 07777) | (flag == FTW_D ? 0555 : 0444));
}

Test(sysfs_sample, unreadable_file_is_unset) {
    char dir[512], path[TELE_PATH_MAX];
    t_tree(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/class/drm/card0/device/gpu_busy_percent", dir);
    static struct t_as_user r;
    if (geteuid() == 0) {
        cr_assert_eq(nftw(dir, t_open_up, 16, FTW_PHYS), 0);
        cr_assert_eq(chmod(path, 0), 0);
        cr_assert_eq(rs_test_as_nobody(t_sample_fn, (void *)dir, &r, sizeof(r)), 0,
                     "the child that samples as nobody failed");
    } else {
        cr_assert_eq(chmod(path, 0), 0);
        struct t_machine *m = t_alloc();
        r.rc_open = t_open(m, dir);
        t_sample(m, TELE_MAX_GPUS);
        r.n = m->n;
        r.g = m->gpus[0];
        t_close(m);
    }
    cr_assert_eq(r.rc_open, 0);
    cr_assert_eq(r.rc_sample, 0);
    cr_assert_geq(r.n, 1);
    TELE_EXPECT(&r.g, {TELE_F_VRAM_TOTAL, 4096});
    rs_test_rmtree(dir);
}

/* ---- arch names: GC IP version -> LLVM target, as kfd_device.c assigns them ---- */

Test(sysfs_arch, gc_versions_to_llvm_targets) {
    static const struct {
        unsigned major, minor, rev;
        const char *want;
    } cases[] = {
        {11, 0, 0, "gfx1100"}, {10, 3, 0, "gfx1030"},  {9, 4, 2, "gfx90a"},   {9, 4, 3, "gfx942"},
        {11, 0, 1, "gfx1103"}, {11, 0, 3, "gfx1101"},  {10, 3, 2, "gfx1031"}, {9, 0, 1, "gfx900"},
        {12, 0, 1, "gfx1201"}, {10, 1, 10, "gfx1010"}, {9, 3, 0, "gfx90c"},   {11, 0, 200, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char arch[24] = "x";
        tele_sysfs_kfd_arch_from_gc(cases[i].major, cases[i].minor, cases[i].rev, arch,
                                    sizeof(arch));
        cr_expect_str_eq(arch, cases[i].want, "%u.%u.%u", cases[i].major, cases[i].minor,
                         cases[i].rev);
    }
    char arch[24];
    tele_sysfs_kfd_arch_from_target(90010, arch, sizeof(arch));
    cr_expect_str_eq(arch, "gfx90a");
    tele_sysfs_kfd_arch_from_target(0, arch, sizeof(arch));
    cr_expect_str_eq(arch, "");
}

/* ---- the gpu_metrics parser on byte buffers ---- */

/* Parse a heap copy of exactly len bytes, so that a read past them trips AddressSanitizer, and
 * return what was set as a record (pci "") for t_expect. */
static int t_parse(const unsigned char *buf, size_t len, struct tele_gpu *g) {
    struct tele_sysfs_metrics m;
    unsigned char *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, buf, len);
    int rc = tele_sysfs_metrics_parse(copy, len, &m);
    free(copy);
    tele_gpu_init(g, "");
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        if (m.set[f])
            tele_set(g, (enum tele_field)f, m.f[f]);
    return rc;
}

static size_t t_blob(const char *machine_card, unsigned char *buf, size_t cap) {
    char rel[128], path[TELE_PATH_MAX];
    snprintf(rel, sizeof(rel), "telemetry/%s/device/gpu_metrics", machine_card);
    ssize_t n = tele_read_bin(rs_test_fixture(rel, path, sizeof(path)), buf, cap);
    cr_assert_gt(n, 4, "%s", path);
    return (size_t)n;
}

#define T_XTX     "rdna3-apu/sys/class/drm/card1"
#define T_PHOENIX "rdna3-apu/sys/class/drm/card0"

Test(sysfs_metrics, v1_3_table_of_the_7900_xtx) {
    unsigned char buf[512];
    struct tele_gpu g;
    size_t n = t_blob(T_XTX, buf, sizeof(buf));
    cr_assert_eq(n, 120); /* sizeof(struct gpu_metrics_v1_3) */
    cr_assert_eq(t_parse(buf, n, &g), 0);
    /* dGPU units are plain: C, W, %, MHz, rpm. */
    TELE_EXPECT(&g, {TELE_F_TEMP, 67}, {TELE_F_TEMP_HOTSPOT, 83}, {TELE_F_TEMP_MEM, 79},
                {TELE_F_BUSY, 96}, {TELE_F_MEM_BUSY, 40}, {TELE_F_POWER, 336}, {TELE_F_SCLK, 2480},
                {TELE_F_MCLK, 1249}, {TELE_F_FAN_RPM, 1650});
}

Test(sysfs_metrics, v2_1_table_of_the_780m) {
    unsigned char buf[512];
    struct tele_gpu g;
    size_t n = t_blob(T_PHOENIX, buf, sizeof(buf));
    cr_assert_eq(n, 120); /* sizeof(struct gpu_metrics_v2_1) */
    cr_assert_eq(t_parse(buf, n, &g), 0);
    /* APU units: 4650 centidegrees, 1150 centipercent, 18450 mW; current clocks are 0xffff,
     * so the averages stand in (800 MHz gfx, 2800 MHz memory). */
    TELE_EXPECT(&g, {TELE_F_TEMP, 46.5}, {TELE_F_BUSY, 11.5}, {TELE_F_POWER, 18.45},
                {TELE_F_SCLK, 800}, {TELE_F_MCLK, 2800});
}

Test(sysfs_metrics, every_truncation_is_refused_whole) {
    static const char *const blobs[] = {T_XTX, T_PHOENIX};
    for (size_t b = 0; b < 2; b++) {
        unsigned char buf[512];
        struct tele_gpu g;
        size_t n = t_blob(blobs[b], buf, sizeof(buf));
        for (size_t len = 0; len < n; len++) {
            cr_assert_eq(t_parse(buf, len, &g), -EINVAL, "%s: %zu bytes", blobs[b], len);
            tele_expect_fields(&g, NULL, 0); /* nothing set */
        }
        cr_expect_eq(t_parse(buf, n, &g), 0);
    }
}

/* The v1.3 table claiming only size bytes (and only those read): each field is read only when
 * its two bytes lie inside. Offsets from struct gpu_metrics_v1_3, counted by hand. */
static void t_expect_v1_3_prefix(const struct tele_gpu *g, size_t size) {
    struct tele_want w[TELE_F_COUNT];
    size_t n = 0;
#define T_IF(off, field, val)                                                                      \
    if ((off) + 2 <= size)                                                                         \
    w[n++] = (struct tele_want){field, val}
    T_IF(4, TELE_F_TEMP, 67);
    T_IF(6, TELE_F_TEMP_HOTSPOT, 83);
    T_IF(8, TELE_F_TEMP_MEM, 79);
    T_IF(16, TELE_F_BUSY, 96);
    T_IF(18, TELE_F_MEM_BUSY, 40);
    T_IF(22, TELE_F_POWER, 336);
    T_IF(40, TELE_F_SCLK, size >= 56 ? 2480 : 2475); /* average_gfxclk, then current at 54 */
    T_IF(44, TELE_F_MCLK, 1249);                     /* average_uclk, current at 58: equal */
    T_IF(72, TELE_F_FAN_RPM, 1650);
#undef T_IF
    tele_expect_fields(g, w, n);
}

Test(sysfs_metrics, structure_size_bounds_every_field) {
    unsigned char buf[512];
    struct tele_gpu g;
    size_t n = t_blob(T_XTX, buf, sizeof(buf));
    for (size_t size = 0; size <= n; size++) {
        uint16_t s16 = (uint16_t)size;
        memcpy(buf, &s16, 2);
        int rc = t_parse(buf, size < 4 ? 4 : size, &g);
        cr_assert_eq(rc, size < 4 ? -EINVAL : 0, "structure_size %zu: %d", size, rc);
        t_expect_v1_3_prefix(&g, size < 4 ? 0 : size);
    }
}

Test(sysfs_metrics, a_longer_read_uses_only_the_table) {
    unsigned char buf[512];
    struct tele_gpu g;
    size_t n = t_blob(T_XTX, buf, sizeof(buf));
    memset(buf + n, 0x11, 80);
    cr_assert_eq(t_parse(buf, n + 80, &g), 0);
    cr_expect(g.src[TELE_F_FAN_RPM] && g.f[TELE_F_FAN_RPM] == 1650);
}

/* A table of size bytes, every member 0xff ("not supported"), with its header. */
static void t_table(unsigned char *buf, size_t size, uint8_t format, uint8_t content) {
    uint16_t s16 = (uint16_t)size;
    memset(buf, 0xff, size);
    memcpy(buf, &s16, 2);
    buf[2] = format;
    buf[3] = content;
}

static void t_u16(unsigned char *buf, size_t off, uint16_t v) {
    memcpy(buf + off, &v, 2);
}

Test(sysfs_metrics, unknown_layouts_and_unsupported_members) {
    static const uint8_t unknown[][2] = {{0, 0}, {1, 9}, {2, 5}, {3, 0}, {255, 255}};
    unsigned char buf[120];
    struct tele_gpu g;
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        t_table(buf, sizeof(buf), unknown[i][0], unknown[i][1]);
        t_u16(buf, 4, 50);
        cr_expect_eq(t_parse(buf, sizeof(buf), &g), -EPROTONOSUPPORT, "%u.%u", unknown[i][0],
                     unknown[i][1]);
        tele_expect_fields(&g, NULL, 0); /* nothing set */
    }
    t_table(buf, sizeof(buf), 1, 3); /* all 0xffff: a valid table with nothing in it */
    cr_expect_eq(t_parse(buf, sizeof(buf), &g), 0);
    tele_expect_fields(&g, NULL, 0); /* nothing set */
}

Test(sysfs_metrics, other_layouts_at_their_offsets) {
    unsigned char buf[384];
    struct tele_gpu g;
    /* v1.0 (80 bytes): the timestamp first, so edge at 16, gfx activity 28, power 34,
     * current_gfxclk 54, fan 72. */
    t_table(buf, 80, 1, 0);
    t_u16(buf, 16, 45), t_u16(buf, 28, 30), t_u16(buf, 34, 150), t_u16(buf, 54, 1800);
    t_u16(buf, 72, 900);
    cr_assert_eq(t_parse(buf, 80, &g), 0);
    TELE_EXPECT(&g, {TELE_F_TEMP, 45}, {TELE_F_BUSY, 30}, {TELE_F_POWER, 150}, {TELE_F_SCLK, 1800},
                {TELE_F_FAN_RPM, 900});
    /* v1.6 (384 bytes, MI300): hotspot 4, curr_socket_power 10, activity 12,
     * current_gfxclk[0] 336, current_uclk 376. */
    t_table(buf, 384, 1, 6);
    t_u16(buf, 4, 70), t_u16(buf, 10, 550), t_u16(buf, 12, 88), t_u16(buf, 336, 2100);
    t_u16(buf, 376, 1300);
    cr_assert_eq(t_parse(buf, 384, &g), 0);
    TELE_EXPECT(&g, {TELE_F_TEMP_HOTSPOT, 70}, {TELE_F_POWER, 550}, {TELE_F_BUSY, 88},
                {TELE_F_SCLK, 2100}, {TELE_F_MCLK, 1300});
    /* v2.0 (120 bytes): timestamp first, temperature_gfx 16, activity 40, power 44 (mW),
     * current_gfxclk 80. */
    t_table(buf, 120, 2, 0);
    t_u16(buf, 16, 5500), t_u16(buf, 40, 2500), t_u16(buf, 44, 12000), t_u16(buf, 80, 1600);
    cr_assert_eq(t_parse(buf, 120, &g), 0);
    TELE_EXPECT(&g, {TELE_F_TEMP, 55}, {TELE_F_BUSY, 25}, {TELE_F_POWER, 12}, {TELE_F_SCLK, 1600});
    /* v2.4 (168 bytes) keeps v2.1's offsets. */
    t_table(buf, 168, 2, 4);
    t_u16(buf, 4, 6025), t_u16(buf, 40, 30000), t_u16(buf, 76, 2900);
    cr_assert_eq(t_parse(buf, 168, &g), 0);
    TELE_EXPECT(&g, {TELE_F_TEMP, 60.25}, {TELE_F_POWER, 30}, {TELE_F_SCLK, 2900});
}
