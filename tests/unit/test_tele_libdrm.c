/* Tests for the libdrm provider: the mapping of hand-built ioctl answers to a record (memory
 * heaps, sensors, counter rates, the VRAM-lost event), its small parsers, and open on device
 * trees built at run time that hold no amdgpu render node. Expected values are converted by
 * hand in the comments. The structs follow the kernel's include/uapi/drm/amdgpu_drm.h
 * (struct drm_amdgpu_memory_info, AMDGPU_INFO_*); the uevent text follows pci_uevent() in
 * drivers/pci/pci-driver.c. */
#include <criterion/criterion.h>

#ifdef RS_HAVE_LIBDRM

#include "backend/telemetry/tele_libdrm_internal.h"
#include "tests/support/rs_test.h"
#include "tests/support/tele_expect.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

TestSuite(tele_libdrm, .timeout = 60);

#define GIB 1073741824.0
#define MIB 1048576.0

/* A Radeon RX 7900 XTX: 24 GiB - 16 MiB of VRAM, 256 MiB of it CPU-visible, 32 GiB of GTT. */
static void tdr_raw(struct tele_libdrm_raw *r, uint64_t t_ns) {
    memset(r, 0, sizeof(*r));
    r->t_ns = t_ns;
    r->power = TELE_POWER_ACTIVE;
    r->mem_ok = true;
    r->mem.vram.total_heap_size = 25753026560u;
    r->mem.vram.usable_heap_size = 25300000000u;
    r->mem.vram.heap_usage = 8589934592u;
    r->mem.vram.max_allocation = 18975000000u; /* 3/4 of usable */
    r->mem.cpu_accessible_vram.total_heap_size = 268435456u;
    r->mem.cpu_accessible_vram.usable_heap_size = 260000000u;
    r->mem.cpu_accessible_vram.heap_usage = 104857600u;
    r->mem.gtt.total_heap_size = 34359738368u;
    r->mem.gtt.usable_heap_size = 34000000000u;
    r->mem.gtt.heap_usage = 52428800u;
    r->evictions_ok = r->bytes_moved_ok = r->cpu_faults_ok = r->vram_lost_ok = true;
    r->evictions = 10;
    r->bytes_moved = 1073741824u;
    r->cpu_faults = 100;
    r->vram_lost = 0;
    r->sclk_ok = r->mclk_ok = r->temp_ok = r->load_ok = r->power_ok = true;
    r->sclk_mhz = 2525;
    r->mclk_mhz = 1249;
    r->temp_mc = 65000;
    r->load_pct = 97;
    r->power_w = 310;
}

static struct tele_libdrm_hist *tdr_hist(void) {
    struct tele_libdrm_hist *h = calloc(1, sizeof(*h));
    cr_assert_not_null(h);
    return h;
}

static void tdr_map(struct tele_libdrm_hist *h, const struct tele_libdrm_raw *r, struct tele_gpu *g,
                    struct tele_libdrm_lost *lost) {
    tele_gpu_init(g, "0000:03:00.0");
    tele_libdrm_map(h, r, g, lost);
}

Test(tele_libdrm, ops_describe_the_provider) {
    cr_assert_str_eq(tele_prov_libdrm_ops.name, "libdrm");
    uint32_t want = TELE_CAP(MEMORY) | TELE_CAP(UTIL) | TELE_CAP(THERMAL) | TELE_CAP(POWER) |
                    TELE_CAP(CLOCKS) | TELE_CAP(COUNTERS) | TELE_CAP(IDENTITY);
    cr_expect_eq(tele_prov_libdrm_ops.caps, want);
}

Test(tele_libdrm, the_first_sample_has_no_rates) {
    struct tele_libdrm_hist *h = tdr_hist();
    struct tele_libdrm_raw r;
    struct tele_libdrm_lost lost;
    struct tele_gpu g;
    tdr_raw(&r, 1000000000);
    tdr_map(h, &r, &g, &lost);
    cr_expect_eq(g.power, TELE_POWER_ACTIVE);
    cr_expect_not(lost.lost);
    TELE_EXPECT(&g, {TELE_F_VRAM_TOTAL, 24 * GIB - 16 * MIB}, {TELE_F_VRAM_USABLE, 25300000000.0},
                {TELE_F_VRAM_USED, 8 * GIB}, {TELE_F_VRAM_MAX_ALLOC, 18975000000.0},
                {TELE_F_VIS_VRAM_TOTAL, 256 * MIB}, {TELE_F_VIS_VRAM_USED, 100 * MIB},
                {TELE_F_GTT_TOTAL, 32 * GIB}, {TELE_F_GTT_USED, 50 * MIB}, {TELE_F_SCLK, 2525},
                {TELE_F_MCLK, 1249}, {TELE_F_TEMP, 65}, {TELE_F_BUSY, 97}, {TELE_F_POWER, 310},
                {TELE_F_VRAM_LOST, 0});
    free(h);
}

Test(tele_libdrm, rates_from_two_samples) {
    struct tele_libdrm_hist *h = tdr_hist();
    struct tele_libdrm_raw r;
    struct tele_libdrm_lost lost;
    struct tele_gpu g;
    tdr_raw(&r, 1000000000);
    tdr_map(h, &r, &g, &lost);
    /* 500 ms later: 6 more evictions (12/s), 512 MiB more moved (1 GiB/s), no new faults */
    tdr_raw(&r, 1500000000);
    r.evictions = 16;
    r.bytes_moved = 1610612736u;
    tdr_map(h, &r, &g, &lost);
    double v;
    cr_expect(tele_get(&g, TELE_F_EVICTIONS, &v) && fabs(v - 12) < 1e-9, "evictions %f", v);
    cr_expect(tele_get(&g, TELE_F_BYTES_MOVED, &v) && fabs(v - GIB) < 1e-3, "moved %f", v);
    cr_expect(tele_get(&g, TELE_F_CPU_FAULTS, &v) && v == 0, "a rate of 0 is a reading");
    cr_expect_not(lost.lost);
    free(h);
}

Test(tele_libdrm, a_counter_that_went_back_or_was_not_read_gives_no_rate) {
    struct tele_libdrm_hist *h = tdr_hist();
    struct tele_libdrm_raw r;
    struct tele_libdrm_lost lost;
    struct tele_gpu g;
    double v;
    tdr_raw(&r, 1000000000);
    tdr_map(h, &r, &g, &lost);
    tdr_raw(&r, 2000000000);
    r.evictions = 3;          /* below the 10 before */
    r.bytes_moved_ok = false; /* the ioctl failed */
    tdr_map(h, &r, &g, &lost);
    cr_expect_not(tele_get(&g, TELE_F_EVICTIONS, &v));
    cr_expect_not(tele_get(&g, TELE_F_BYTES_MOVED, &v));
    cr_expect(tele_get(&g, TELE_F_CPU_FAULTS, &v) && v == 0);
    /* the next one is measured from this one: 3 -> 5 over 1 s; moved was not read here */
    tdr_raw(&r, 3000000000);
    r.evictions = 5;
    tdr_map(h, &r, &g, &lost);
    cr_expect(tele_get(&g, TELE_F_EVICTIONS, &v) && fabs(v - 2) < 1e-9, "evictions %f", v);
    cr_expect_not(tele_get(&g, TELE_F_BYTES_MOVED, &v));
    free(h);
}

Test(tele_libdrm, vram_lost_when_the_counter_goes_up) {
    struct tele_libdrm_hist *h = tdr_hist();
    struct tele_libdrm_raw r;
    struct tele_libdrm_lost lost;
    struct tele_gpu g;
    tdr_raw(&r, 1000000000);
    r.vram_lost = 2; /* lost before this run: no event */
    tdr_map(h, &r, &g, &lost);
    cr_expect_not(lost.lost);
    tdr_raw(&r, 1500000000);
    r.vram_lost = 3;
    tdr_map(h, &r, &g, &lost);
    cr_assert(lost.lost);
    cr_expect_eq(lost.from, 2);
    cr_expect_eq(lost.to, 3);
    double v;
    cr_expect(tele_get(&g, TELE_F_VRAM_LOST, &v) && v == 3);
    char text[EV_TEXT_BYTES];
    tele_libdrm_map_lost_text(&lost, text, sizeof(text));
    cr_expect_str_eq(text,
                     "VRAM lost (counter 2 -> 3): the GPU was reset and VRAM contents are gone");
    tdr_raw(&r, 2000000000);
    r.vram_lost = 3;
    tdr_map(h, &r, &g, &lost);
    cr_expect_not(lost.lost, "reported once");
    free(h);
}

/* Nothing is read from a suspended GPU; the rates restart after it wakes, while a reset that
 * happened meanwhile is still seen. */
Test(tele_libdrm, a_suspended_gpu_is_left_alone) {
    struct tele_libdrm_hist *h = tdr_hist();
    struct tele_libdrm_raw r;
    struct tele_libdrm_lost lost;
    struct tele_gpu g;
    tdr_raw(&r, 1000000000);
    r.vram_lost = 1;
    tdr_map(h, &r, &g, &lost);
    memset(&r, 0, sizeof(r));
    r.power = TELE_POWER_SUSPENDED;
    tdr_map(h, &r, &g, &lost);
    cr_expect_eq(g.power, TELE_POWER_SUSPENDED);
    cr_expect_not(lost.lost);
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        cr_expect_eq(g.src[f], 0, "%s set while suspended", tele_field_json(f));
    tdr_raw(&r, 9000000000);
    r.evictions = 500;
    r.vram_lost = 2;
    tdr_map(h, &r, &g, &lost);
    double v;
    cr_expect_not(tele_get(&g, TELE_F_EVICTIONS, &v), "no rate across the suspension");
    cr_expect(lost.lost && lost.from == 1 && lost.to == 2);
    free(h);
}

Test(tele_libdrm, failed_ioctls_and_misreads_leave_fields_unset) {
    struct tele_libdrm_hist *h = tdr_hist();
    struct tele_libdrm_raw r;
    struct tele_libdrm_lost lost;
    struct tele_gpu g;
    tdr_raw(&r, 1000000000);
    r.mem_ok = r.sclk_ok = r.mclk_ok = r.temp_ok = r.power_ok = r.vram_lost_ok = false;
    r.load_pct = 250;
    tdr_map(h, &r, &g, &lost);
    for (unsigned f = 0; f < TELE_F_COUNT; f++)
        cr_expect_eq(g.src[f], 0, "%s set", tele_field_json(f));
    free(h);
}

Test(tele_libdrm, reasons_when_nothing_was_found) {
    char reason[TELE_REASON_BYTES];
    int rc = tele_libdrm_map_none("/dev/dri", -EACCES, "/dev/dri/renderD128",
                                  "renderD129: not an amdgpu device: i915", reason, sizeof(reason));
    cr_expect_eq(rc, -EACCES);
    cr_expect_str_eq(reason,
                     "permission denied: /dev/dri/renderD128 (add the user to the render group)");
    rc = tele_libdrm_map_none("/dev/dri", 0, "", "renderD128: not an amdgpu device: i915", reason,
                              sizeof(reason));
    cr_expect_eq(rc, -ENODEV);
    cr_expect_str_eq(
        reason, "no amdgpu render node under /dev/dri (renderD128: not an amdgpu device: i915)");
    rc = tele_libdrm_map_none("/dev/dri", 0, "", "", reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV);
    cr_expect_str_eq(reason, "no amdgpu render node under /dev/dri");
}

/* ---- open on device trees built here ---- */

static void tdr_emit(const struct tele_ctx *ctx, enum ev_severity sev, const char *pci,
                     const char *text) {
    (void)ctx, (void)sev, (void)pci, (void)text;
}

/* Open with dev as the device root (and an empty sys); the return code, reason in reason. */
static int tdr_open(const char *dev, char *reason, size_t cap) {
    struct tele_roots *roots = calloc(1, sizeof(*roots));
    cr_assert_not_null(roots);
    snprintf(roots->dev, sizeof(roots->dev), "%s", dev);
    snprintf(roots->sys, sizeof(roots->sys), "%s/no-sys", dev);
    struct tele_ctx ctx = {roots, getpid(), tdr_emit, NULL};
    void *state = NULL;
    reason[0] = '\0';
    int rc = tele_prov_libdrm_ops.open(&ctx, &state, reason, cap);
    if (rc == 0)
        tele_prov_libdrm_ops.close(state);
    free(roots);
    return rc;
}

static void tdr_mkdir(const char *dir, const char *sub, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", dir, sub);
    cr_assert_eq(mkdir(out, 0755), 0, "mkdir %s", out);
}

Test(tele_libdrm, a_device_root_without_dri) {
    char root[TELE_PATH_MAX], want[TELE_PATH_MAX + 64], reason[TELE_REASON_BYTES];
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    int rc = tdr_open(root, reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV, "rc %d (%s)", rc, reason);
    snprintf(want, sizeof(want), "no amdgpu render node under %s/dri (no such directory)", root);
    cr_expect_str_eq(reason, want);
    rs_test_rmtree(root);
}

Test(tele_libdrm, a_root_that_does_not_exist) {
    char reason[TELE_REASON_BYTES];
    int rc = tdr_open("/nonexistent/ringside-dev", reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV, "rc %d (%s)", rc, reason);
    cr_expect_str_eq(
        reason, "no amdgpu render node under /nonexistent/ringside-dev/dri (no such directory)");
}

Test(tele_libdrm, a_regular_file_named_like_a_render_node) {
    char root[TELE_PATH_MAX], dri[TELE_PATH_MAX + 8], file[TELE_PATH_MAX + 32];
    char reason[TELE_REASON_BYTES];
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    tdr_mkdir(root, "dri", dri, sizeof(dri));
    cr_assert_eq(rs_test_write_file(dri, "renderD128", "not a device\n", file, sizeof(file)), 0);
    int rc = tdr_open(root, reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV, "rc %d (%s)", rc, reason);
    cr_expect(strstr(reason, "no amdgpu render node under ") == reason, "reason: %s", reason);
    cr_expect(strstr(reason, "(renderD128: not a character device)") != NULL, "reason: %s", reason);
    rs_test_rmtree(root);
}

/* A FIFO would block an open(): it must be passed over, not opened. */
Test(tele_libdrm, a_fifo_named_like_a_render_node) {
    char root[TELE_PATH_MAX], dri[TELE_PATH_MAX + 8], fifo[TELE_PATH_MAX + 32];
    char reason[TELE_REASON_BYTES];
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    tdr_mkdir(root, "dri", dri, sizeof(dri));
    snprintf(fifo, sizeof(fifo), "%s/renderD130", dri);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    int rc = tdr_open(root, reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV, "rc %d (%s)", rc, reason);
    cr_expect(strstr(reason, "(renderD130: not a character device)") != NULL, "reason: %s", reason);
    rs_test_rmtree(root);
}

/* A character device that is not DRM: /dev/null answers DRM_IOCTL_VERSION with ENOTTY. */
Test(tele_libdrm, a_character_device_that_is_not_drm) {
    char root[TELE_PATH_MAX], dri[TELE_PATH_MAX + 8], link[TELE_PATH_MAX + 32];
    char reason[TELE_REASON_BYTES];
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    tdr_mkdir(root, "dri", dri, sizeof(dri));
    snprintf(link, sizeof(link), "%s/renderD128", dri);
    cr_assert_eq(symlink("/dev/null", link), 0);
    int rc = tdr_open(root, reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV, "rc %d (%s)", rc, reason);
    cr_expect(strstr(reason, "(renderD128: not an amdgpu device)") != NULL, "reason: %s", reason);
    rs_test_rmtree(root);
}

/* A node the user may not open (root-only, as /dev/dri/renderD* is without the render group):
 * built as root, then opened with the effective uid of nobody. */
Test(tele_libdrm, a_node_without_permission) {
    if (geteuid() != 0)
        cr_skip_test("needs root to create a device node");
    char root[TELE_PATH_MAX], dri[TELE_PATH_MAX + 8], node[TELE_PATH_MAX + 32];
    char want[TELE_PATH_MAX + 128], reason[TELE_REASON_BYTES];
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    cr_assert_eq(chmod(root, 0755), 0);
    tdr_mkdir(root, "dri", dri, sizeof(dri));
    snprintf(node, sizeof(node), "%s/renderD128", dri);
    cr_assert_eq(mknod(node, S_IFCHR | 0600, makedev(1, 3)), 0, "mknod: %s", strerror(errno));
    cr_assert_eq(seteuid(65534), 0);
    int rc = tdr_open(root, reason, sizeof(reason));
    cr_assert_eq(seteuid(0), 0);
    cr_expect_eq(rc, -EACCES, "rc %d (%s)", rc, reason);
    snprintf(want, sizeof(want), "permission denied: %s (add the user to the render group)", node);
    cr_expect_str_eq(reason, want);
    rs_test_rmtree(root);
}

/* sysfs for render node 226:128 of GPU pci: its uevent (driver) and its runtime status. */
static void tdr_sysfs_node(const char *root, const char *driver, const char *status) {
    char d[TELE_PATH_MAX + 64], f[TELE_PATH_MAX + 128], text[128];
    const char *dirs[] = {"sys",
                          "sys/dev",
                          "sys/dev/char",
                          "sys/dev/char/226:128",
                          "sys/dev/char/226:128/device",
                          "sys/bus",
                          "sys/bus/pci",
                          "sys/bus/pci/devices",
                          "sys/bus/pci/devices/0000:03:00.0",
                          "sys/bus/pci/devices/0000:03:00.0/power"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(d, sizeof(d), "%s/%s", root, dirs[i]);
        mkdir(d, 0755);
    }
    snprintf(d, sizeof(d), "%s/sys/dev/char/226:128/device", root);
    snprintf(text, sizeof(text), "DRIVER=%s\nPCI_SLOT_NAME=0000:03:00.0\n", driver);
    cr_assert_eq(rs_test_write_file(d, "uevent", text, f, sizeof(f)), 0);
    snprintf(d, sizeof(d), "%s/sys/bus/pci/devices/0000:03:00.0/power", root);
    snprintf(text, sizeof(text), "%s\n", status);
    cr_assert_eq(rs_test_write_file(d, "runtime_status", text, f, sizeof(f)), 0);
}

/* A suspended GPU's node is not opened (that would wake it): it is listed as suspended, and
 * opened once it is awake. The node here leads to no device, so an open would fail: open()
 * succeeding proves it was never tried. */
Test(tele_libdrm, a_suspended_gpu_is_not_woken) {
    if (geteuid() != 0)
        cr_skip_test("needs root to create a device node");
    char root[TELE_PATH_MAX], dri[TELE_PATH_MAX + 8], node[TELE_PATH_MAX + 32];
    char reason[TELE_REASON_BYTES];
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    tdr_mkdir(root, "dri", dri, sizeof(dri));
    snprintf(node, sizeof(node), "%s/renderD128", dri);
    cr_assert_eq(mknod(node, S_IFCHR | 0600, makedev(226, 128)), 0, "mknod: %s", strerror(errno));
    tdr_sysfs_node(root, "amdgpu", "suspended");
    static struct tele_roots roots;
    snprintf(roots.dev, sizeof(roots.dev), "%s", root);
    cr_assert_eq(tele_path(roots.sys, sizeof(roots.sys), root, "sys"), 0);
    struct tele_ctx ctx = {&roots, getpid(), tdr_emit, NULL};
    void *state = NULL;
    cr_assert_eq(tele_prov_libdrm_ops.open(&ctx, &state, reason, sizeof(reason)), 0, "%s", reason);
    static struct tele_gpu out[TELE_MAX_GPUS];
    size_t n = 0;
    cr_assert_eq(tele_prov_libdrm_ops.sample(state, out, TELE_MAX_GPUS, &n, reason, sizeof(reason)),
                 0);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(out[0].pci, "0000:03:00.0");
    cr_expect_eq(out[0].power, TELE_POWER_SUSPENDED);
    cr_expect_eq(out[0].src[TELE_F_VRAM_USED], 0, "nothing read from a suspended GPU");
    tele_prov_libdrm_ops.close(state);
    /* sysfs says i915: not ours, not opened */
    tdr_sysfs_node(root, "i915", "active");
    cr_expect_eq(tele_prov_libdrm_ops.open(&ctx, &state, reason, sizeof(reason)), -ENODEV);
    cr_expect(strstr(reason, "renderD128: not an amdgpu device"), "reason: %s", reason);
    rs_test_rmtree(root);
}

Test(tele_libdrm, this_machine_has_no_render_node) {
    struct stat st;
    if (stat("/dev/dri", &st) == 0)
        cr_skip_test("this machine has /dev/dri");
    char reason[TELE_REASON_BYTES];
    int rc = tdr_open("/dev", reason, sizeof(reason));
    cr_expect_eq(rc, -ENODEV, "rc %d (%s)", rc, reason);
    cr_expect_str_eq(reason, "no amdgpu render node under /dev/dri (no such directory)");
}

#else

Test(tele_libdrm, not_built) {
    cr_skip_test("built without libdrm amdgpu (RINGSIDE_LIBDRM): nothing to test");
}

#endif
