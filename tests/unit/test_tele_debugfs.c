/* Tests for the debugfs provider: its parsers on every amdgpu_vram_mm generation, the fence
 * counters and stalled-ring events, and the provider on the rdna3-apu and polaris-drm-mm trees
 * (tests/fixtures/telemetry/README.md says which kernel source each file follows). Expected
 * numbers are recomputed here from the fixtures' printed block counts and sizes. */
#include "backend/telemetry/tele_debugfs_internal.h"
#include "backend/telemetry/tele_prov.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(tele_debugfs, .timeout = 30);

#define TDBG_APU  "0000:c5:00.0"
#define TDBG_DGPU "0000:03:00.0"
#define TDBG_KIB  1024ull
#define TDBG_MIB  (1024ull * 1024ull)

/* ---- a provider on a root, with an emit that records ---- */

static int tdbg_n_events;
static enum ev_severity tdbg_sev[8];
static char tdbg_pci[8][16], tdbg_text[8][200];

static void tdbg_emit(const struct tele_ctx *ctx, enum ev_severity sev, const char *pci,
                      const char *text) {
    (void)ctx;
    if (tdbg_n_events >= 8)
        return;
    tdbg_sev[tdbg_n_events] = sev;
    snprintf(tdbg_pci[tdbg_n_events], sizeof(tdbg_pci[0]), "%s", pci);
    snprintf(tdbg_text[tdbg_n_events], sizeof(tdbg_text[0]), "%s", text);
    tdbg_n_events++;
}

struct tdbg {
    struct tele_roots roots;
    struct tele_ctx ctx;
    void *state;
    char reason[TELE_REASON_BYTES];
    struct tele_gpu out[TELE_MAX_GPUS];
    size_t n;
};

static int tdbg_open_at(struct tdbg *t, const char *debugfs) {
    memset(t, 0, sizeof(*t));
    snprintf(t->roots.debugfs, sizeof(t->roots.debugfs), "%s", debugfs);
    t->ctx = (struct tele_ctx){&t->roots, 4242, tdbg_emit, NULL};
    return tele_prov_debugfs_ops.open(&t->ctx, &t->state, t->reason, sizeof(t->reason));
}

static void tdbg_open_fixture(struct tdbg *t, const char *machine) {
    char rel[128], root[TELE_PATH_MAX];
    snprintf(rel, sizeof(rel), "telemetry/%s/debugfs", machine);
    cr_assert_eq(tdbg_open_at(t, rs_test_fixture(rel, root, sizeof(root))), 0, "%s", t->reason);
}

static int tdbg_sample(struct tdbg *t) {
    t->reason[0] = '\0';
    return tele_prov_debugfs_ops.sample(t->state, t->out, TELE_MAX_GPUS, &t->n, t->reason,
                                        sizeof(t->reason));
}

static const struct tele_gpu *tdbg_gpu(const struct tdbg *t, const char *pci) {
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->out[i].pci, pci) == 0)
            return &t->out[i];
    cr_assert_fail("no record for %s", pci);
    return NULL;
}

static const struct tele_ring *tdbg_ring(const struct tele_gpu *g, const char *name) {
    for (int i = 0; i < g->n_rings; i++)
        if (strcmp(g->rings[i].name, name) == 0)
            return &g->rings[i];
    cr_assert_fail("no ring %s", name);
    return NULL;
}

static void tdbg_read_fixture(const char *rel, char *buf, size_t cap) {
    char path[TELE_PATH_MAX];
    cr_assert_geq(tele_read_text(rs_test_fixture(rel, path, sizeof(path)), buf, cap), 0, "%s", rel);
}

/* The free lists as the fixture prints them: {order, blocks}. */
struct tdbg_order {
    int order;
    uint64_t blocks;
};

/* Check b against a free-list table: bytes per order, sums and the largest block, with the
 * byte sizes worked out here as blocks * (chunk << order). */
static void tdbg_check_orders(const struct tele_buddy *b, uint64_t chunk, int n_orders,
                              const struct tdbg_order *tab, size_t n) {
    uint64_t free_bytes = 0, blocks = 0, largest = 0;
    cr_assert_eq(b->n_orders, n_orders);
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes = tab[i].blocks * (chunk << tab[i].order);
        cr_assert_eq(b->order_blocks[tab[i].order], tab[i].blocks, "order %d", tab[i].order);
        cr_assert_eq(b->order_free_bytes[tab[i].order], bytes, "order %d", tab[i].order);
        free_bytes += bytes;
        blocks += tab[i].blocks;
        if (tab[i].blocks && chunk << tab[i].order > largest)
            largest = chunk << tab[i].order;
    }
    cr_assert_eq(b->free_bytes, free_bytes);
    cr_assert_eq(b->free_blocks, blocks);
    cr_assert_eq(b->largest_free_bytes, largest);
}

/* rdna3-apu dri/1: the RX 7900 XTX (orders without free blocks are left out). */
static const struct tdbg_order tdbg_dgpu_orders[] = {
    {19, 1}, {18, 1}, {17, 1}, {16, 1}, {15, 2}, {14, 1}, {13, 2}, {12, 3}, {11, 4}, {10, 3},
    {9, 5},  {8, 6},  {7, 5},  {6, 4},  {5, 3},  {4, 1},  {3, 1},  {2, 1},  {1, 1},  {0, 2},
};

/* rdna3-apu dri/0: the Radeon 780M's 512 MiB carve-out. */
static const struct tdbg_order tdbg_apu_orders[] = {
    {14, 1}, {12, 2}, {11, 3}, {10, 1}, {9, 1}, {7, 1}, {6, 3},
    {5, 3},  {4, 3},  {3, 4},  {2, 2},  {1, 2}, {0, 4},
};

#define TDBG_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- dri/N/name ---- */

Test(tele_debugfs, name_gives_the_pci_address_of_amdgpu_devices_only) {
    char pci[16];
    cr_assert(tele_debugfs_parse_name("amdgpu dev=0000:03:00.0 unique=0000:03:00.0\n", pci));
    cr_assert_str_eq(pci, TDBG_DGPU);
    cr_assert(tele_debugfs_parse_name("amdgpu dev=0000:C5:00.0 master=0000:c5:00.0\n", pci));
    cr_assert_str_eq(pci, TDBG_APU);
    cr_assert(tele_debugfs_parse_name("amdgpu 0000:01:00.0 pci:0000:01:00.0\n", pci));
    cr_assert_str_eq(pci, "0000:01:00.0");
    cr_assert_not(tele_debugfs_parse_name("i915 dev=0000:00:02.0 unique=0000:00:02.0\n", pci));
    cr_assert_not(tele_debugfs_parse_name("udl dev=3-2:1.0 unique=3-2:1.0\n", pci));
    cr_assert_not(tele_debugfs_parse_name("amdgpux dev=0000:03:00.0\n", pci));
    cr_assert_not(tele_debugfs_parse_name("amdgpu\n", pci));
}

/* ---- amdgpu_vram_mm ---- */

Test(tele_debugfs, buddy_dump_with_ttm_header_and_clear_free) {
    static char text[65536];
    struct tele_buddy b;
    tdbg_read_fixture("telemetry/rdna3-apu/debugfs/dri/1/amdgpu_vram_mm", text, sizeof(text));
    cr_assert_eq(tele_debugfs_parse_vram_mm(text, &b), TELE_DEBUGFS_MM_BUDDY);
    cr_assert(b.valid);
    cr_assert_eq(b.chunk_bytes, 4 * TDBG_KIB);
    cr_assert_eq(b.total_bytes, 25753026560ull); /* "size:" of the TTM header, = 24560 MiB */
    tdbg_check_orders(&b, 4 * TDBG_KIB, 23, tdbg_dgpu_orders, TDBG_LEN(tdbg_dgpu_orders));
    /* by hand: 4332 MiB in orders 8..19, 4096 KiB below; the sys/ tree's total - used agrees */
    cr_assert_eq(b.free_bytes, 4332 * TDBG_MIB + 4096 * TDBG_KIB);
    cr_assert_eq(b.free_bytes, 25753026560ull - 21206401024ull);
    cr_assert_eq(b.largest_free_bytes, 2048 * TDBG_MIB);
    cr_assert_eq(b.free_blocks, 48);
    cr_assert_eq(b.order_free_bytes[7], 5 * 512 * TDBG_KIB); /* printed as "2 MiB" */
}

Test(tele_debugfs, buddy_dump_in_the_vis_usage_form) {
    static char text[65536];
    struct tele_buddy b;
    tdbg_read_fixture("telemetry/rdna3-apu/debugfs/dri/0/amdgpu_vram_mm", text, sizeof(text));
    cr_assert_eq(tele_debugfs_parse_vram_mm(text, &b), TELE_DEBUGFS_MM_BUDDY);
    cr_assert(b.valid);
    cr_assert_eq(b.total_bytes, 512 * TDBG_MIB); /* no TTM header: the chunk line's MiB */
    tdbg_check_orders(&b, 4 * TDBG_KIB, 18, tdbg_apu_orders, TDBG_LEN(tdbg_apu_orders));
    cr_assert_eq(b.free_bytes, 126 * TDBG_MIB + 2048 * TDBG_KIB); /* orders 9..14, then 0..7 */
    cr_assert_eq(b.largest_free_bytes, 64 * TDBG_MIB);
    cr_assert_eq(b.free_blocks, 30);
}

Test(tele_debugfs, buddy_dump_of_2022_with_pages_and_no_padding) {
    static const char text[] = "  vis usage:0\n"
                               "default_page_size: 4KiB\n"
                               "chunk_size: 4KiB, total: 16MiB, free: 10MiB\n"
                               "order-12 free: 16MiB, pages: 0\n"
                               "order-11 free: 8MiB, pages: 1\n"
                               "order-10 free: 0KiB, pages: 0\n"
                               "order-9 free: 2MiB, pages: 1\n"
                               "order-0 free: 8KiB, pages: 2\n"
                               "reserved:\n";
    struct tele_buddy b;
    cr_assert_eq(tele_debugfs_parse_vram_mm(text, &b), TELE_DEBUGFS_MM_BUDDY);
    cr_assert_eq(b.n_orders, 13);
    cr_assert_eq(b.order_blocks[11], 1);
    cr_assert_eq(b.order_blocks[0], 2);
    cr_assert_eq(b.free_bytes, 8 * TDBG_MIB + 2 * TDBG_MIB + 8 * TDBG_KIB);
    cr_assert_eq(b.largest_free_bytes, 8 * TDBG_MIB);
    cr_assert_eq(b.total_bytes, 16 * TDBG_MIB);
}

Test(tele_debugfs, buddy_header_alone_gives_the_rounded_free) {
    struct tele_buddy b;
    cr_assert_eq(tele_debugfs_parse_vram_mm("chunk_size: 4KiB, total: 8176MiB, free: 2047MiB, "
                                            "clear_free: 0MiB\n",
                                            &b),
                 TELE_DEBUGFS_MM_BUDDY);
    cr_assert_eq(b.free_bytes, 2047 * TDBG_MIB);
    cr_assert_eq(b.total_bytes, 8176 * TDBG_MIB);
    cr_assert_eq(b.n_orders, 0);
}

Test(tele_debugfs, ttm_size_that_disagrees_is_not_taken_as_total) {
    struct tele_buddy b;
    cr_assert_eq(tele_debugfs_parse_vram_mm("  size: 4096\nchunk_size: 4KiB, total: 64MiB, free: "
                                            "1MiB\norder- 8 free:        1 MiB, blocks: 1\n",
                                            &b),
                 TELE_DEBUGFS_MM_BUDDY);
    cr_assert_eq(b.total_bytes, 64 * TDBG_MIB);
}

Test(tele_debugfs, drm_mm_dump_in_pages) {
    static char text[65536];
    struct tele_buddy b;
    tdbg_read_fixture("telemetry/polaris-drm-mm/debugfs/dri/0/amdgpu_vram_mm", text, sizeof(text));
    cr_assert_eq(tele_debugfs_parse_vram_mm(text, &b), TELE_DEBUGFS_MM_DRM_MM);
    cr_assert(b.valid);
    cr_assert_eq(b.total_bytes, 2097152 * 4096ull); /* 8 GiB */
    cr_assert_eq(b.free_bytes, (65536 + 720640) * 4096ull);
    cr_assert_eq(b.largest_free_bytes, 720640 * 4096ull);
    cr_assert_eq(b.free_blocks, 2);
    cr_assert_eq(b.n_orders, 0);
    cr_assert_eq(b.chunk_bytes, 4096);
}

Test(tele_debugfs, drm_mm_dump_in_bytes_when_the_ttm_size_says_so) {
    static const char text[] = "  use_type: 1\n  use_tt: 0\n  size: 2097152\n  usage: 1048576\n"
                               "  vis usage:0\n"
                               "0x0000000000000000-0x0000000000100000: 1048576: used\n"
                               "0x0000000000100000-0x0000000000200000: 1048576: free\n"
                               "total: 2097152, used 1048576 free 1048576\n";
    struct tele_buddy b;
    cr_assert_eq(tele_debugfs_parse_vram_mm(text, &b), TELE_DEBUGFS_MM_DRM_MM);
    cr_assert_eq(b.total_bytes, 2 * TDBG_MIB);
    cr_assert_eq(b.largest_free_bytes, TDBG_MIB);
}

Test(tele_debugfs, unknown_dump_leaves_the_buddy_invalid) {
    struct tele_buddy b;
    cr_assert_eq(tele_debugfs_parse_vram_mm("man size:4 pages\nsomething new\n", &b),
                 TELE_DEBUGFS_MM_UNKNOWN);
    cr_assert_not(b.valid);
    cr_assert_eq(tele_debugfs_parse_vram_mm("", &b), TELE_DEBUGFS_MM_UNKNOWN);
}

/* ---- amdgpu_fence_info ---- */

Test(tele_debugfs, fences_take_the_first_emitted_of_each_ring) {
    static char text[65536];
    struct tele_ring r[TELE_MAX_RINGS];
    tdbg_read_fixture("telemetry/rdna3-apu/debugfs/dri/1/amdgpu_fence_info", text, sizeof(text));
    cr_assert_eq(tele_debugfs_parse_fences(text, r, TELE_MAX_RINGS), 15);
    cr_assert_str_eq(r[0].name, "gfx_0.0.0");
    cr_assert_eq(r[0].signaled, 0x0001f3a2);
    cr_assert_eq(r[0].emitted, 0x0001f3a2); /* not the trailing fence's 0x1c */
    cr_assert_str_eq(r[1].name, "comp_1.0.0");
    cr_assert_eq(r[1].signaled, 0x3a10);
    cr_assert_eq(r[1].emitted, 0x3a14);
    cr_assert_str_eq(r[10].name, "sdma0");
    cr_assert_eq(r[10].emitted, 0xb2c4);
    cr_assert_str_eq(r[14].name, "jpeg_dec");
    cr_assert_not(r[1].stalled);
    cr_assert_eq(tele_debugfs_parse_fences(text, r, 4), 4); /* room for four */
}

Test(tele_debugfs, fences_drop_a_truncated_block) {
    struct tele_ring r[4];
    cr_assert_eq(tele_debugfs_parse_fences("--- ring 0 (gfx_0.0.0) ---\n"
                                           "Last signaled fence          0x00000010\n"
                                           "Last emitted                 0x00000011\n"
                                           "--- ring 1 (comp_1.0.0) ---\n"
                                           "Last signaled fence          0x000000",
                                           r, 4),
                 1);
    cr_assert_eq(r[0].emitted, 0x11);
    cr_assert_eq(tele_debugfs_parse_fences("", r, 4), 0);
}

/* ---- stalled rings ---- */

static int tdbg_notes, tdbg_last_stalled;

static void tdbg_note(void *arg, const struct tele_ring *r) {
    (void)arg;
    tdbg_notes++;
    tdbg_last_stalled = r->stalled;
}

static struct tele_ring tdbg_mk_ring(const char *name, uint64_t sig, uint64_t emi) {
    struct tele_ring r;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", name);
    r.signaled = sig;
    r.emitted = emi;
    return r;
}

Test(tele_debugfs, stall_needs_pending_work_and_no_progress_over_a_sample) {
    struct tele_debugfs_ring_hist h;
    memset(&h, 0, sizeof(h));
    struct tele_ring r = tdbg_mk_ring("gfx_0.0.0", 0x10, 0x14);
    tele_debugfs_rings_track(&h, &r, 1, tdbg_note, NULL);
    cr_assert_not(r.stalled); /* first sample: nothing to compare with */
    cr_assert_eq(tdbg_notes, 0);
    r = tdbg_mk_ring("gfx_0.0.0", 0x10, 0x15);
    tele_debugfs_rings_track(&h, &r, 1, tdbg_note, NULL);
    cr_assert(r.stalled);
    cr_assert_eq(tdbg_notes, 1);
    cr_assert(tdbg_last_stalled);
    tele_debugfs_rings_track(&h, &r, 1, tdbg_note, NULL);
    cr_assert(r.stalled);
    cr_assert_eq(tdbg_notes, 1); /* told once */
    r = tdbg_mk_ring("gfx_0.0.0", 0x12, 0x15);
    tele_debugfs_rings_track(&h, &r, 1, tdbg_note, NULL);
    cr_assert_not(r.stalled);
    cr_assert_eq(tdbg_notes, 2);
    cr_assert_not(tdbg_last_stalled);
    r = tdbg_mk_ring("gfx_0.0.0", 0x12, 0x12); /* idle, not stalled */
    tele_debugfs_rings_track(&h, &r, 1, tdbg_note, NULL);
    tele_debugfs_rings_track(&h, &r, 1, tdbg_note, NULL);
    cr_assert_not(r.stalled);
    cr_assert_eq(tdbg_notes, 2);
}

Test(tele_debugfs, stall_survives_the_32_bit_wrap) {
    struct tele_debugfs_ring_hist h;
    memset(&h, 0, sizeof(h));
    struct tele_ring r = tdbg_mk_ring("sdma0", 0xfffffffe, 0x00000001);
    tele_debugfs_rings_track(&h, &r, 1, NULL, NULL);
    tele_debugfs_rings_track(&h, &r, 1, NULL, NULL);
    cr_assert(r.stalled); /* three fences pending across the wrap */
    struct tele_ring other = tdbg_mk_ring("sdma1", 0x20, 0x20);
    tele_debugfs_rings_track(&h, &other, 1, NULL, NULL);
    cr_assert_not(other.stalled); /* a ring not seen before */
}

/* ---- the provider on the fixture trees ---- */

Test(tele_debugfs, rdna3_apu_tree_gives_two_devices_with_buddy_and_rings) {
    struct tdbg t;
    tdbg_open_fixture(&t, "rdna3-apu");
    cr_assert_eq(tdbg_sample(&t), 0, "%s", t.reason);
    cr_assert_eq(t.n, 2); /* dri/128 repeats the APU, dri/2 is udl */
    const struct tele_gpu *apu = tdbg_gpu(&t, TDBG_APU), *dgpu = tdbg_gpu(&t, TDBG_DGPU);
    cr_assert_eq(apu->card, 0);
    cr_assert_eq(dgpu->card, 1);
    cr_assert_eq(dgpu->vendor, TELE_VENDOR_AMD);
    cr_assert(apu->buddy.valid);
    cr_assert_eq(apu->buddy.largest_free_bytes, 64 * TDBG_MIB);
    cr_assert(dgpu->buddy.valid);
    cr_assert_eq(dgpu->buddy.total_bytes, 25753026560ull);
    cr_assert_eq(dgpu->buddy.free_bytes, 4332 * TDBG_MIB + 4096 * TDBG_KIB);
    cr_assert_eq(apu->rings_src, 1);
    cr_assert_eq(apu->n_rings, 9);
    cr_assert_eq(dgpu->n_rings, 15);
    cr_assert_eq(tdbg_ring(dgpu, "comp_1.0.0")->emitted, 0x3a14);
    cr_assert_eq(tdbg_n_events, 0);
    tele_prov_debugfs_ops.close(t.state);
}

Test(tele_debugfs, a_ring_without_progress_is_reported_once) {
    struct tdbg t;
    tdbg_open_fixture(&t, "rdna3-apu");
    cr_assert_eq(tdbg_sample(&t), 0);
    cr_assert_not(tdbg_ring(tdbg_gpu(&t, TDBG_DGPU), "comp_1.0.0")->stalled);
    cr_assert_eq(tdbg_sample(&t), 0); /* the same counters again */
    const struct tele_gpu *dgpu = tdbg_gpu(&t, TDBG_DGPU);
    cr_assert(tdbg_ring(dgpu, "comp_1.0.0")->stalled);
    cr_assert_not(tdbg_ring(dgpu, "gfx_0.0.0")->stalled); /* nothing pending */
    cr_assert_eq(tdbg_n_events, 1);
    cr_assert_eq(tdbg_sev[0], SEV_ERROR);
    cr_assert_str_eq(tdbg_pci[0], TDBG_DGPU);
    cr_assert_str_eq(tdbg_text[0], "ring comp_1.0.0 stalled: signaled 0x00003a10 < emitted "
                                   "0x00003a14 (no progress in the last sample)");
    cr_assert_eq(tdbg_sample(&t), 0);
    cr_assert_eq(tdbg_n_events, 1);
    tele_prov_debugfs_ops.close(t.state);
}

static void tdbg_mkdirs(const char *root, char *dev, size_t cap) {
    char dri[TELE_PATH_MAX];
    snprintf(dri, sizeof(dri), "%s/dri", root);
    snprintf(dev, cap, "%s/dri/0", root);
    cr_assert_eq(mkdir(dri, 0755), 0);
    cr_assert_eq(mkdir(dev, 0755), 0);
}

Test(tele_debugfs, a_stalled_ring_that_moves_again_is_reported) {
    char root[256], dev[512], path[1024];
    struct tdbg t;
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    tdbg_mkdirs(root, dev, sizeof(dev));
    rs_test_write_file(dev, "name", "amdgpu dev=0000:03:00.0 unique=0000:03:00.0\n", path,
                       sizeof(path));
    rs_test_write_file(dev, "amdgpu_fence_info",
                       "--- ring 0 (gfx_0.0.0) ---\nLast signaled fence          0x0000a1b2\n"
                       "Last emitted                 0x0000a1b5\n",
                       path, sizeof(path));
    cr_assert_eq(tdbg_open_at(&t, root), 0, "%s", t.reason);
    cr_assert_eq(tdbg_sample(&t), 0);
    cr_assert_eq(tdbg_sample(&t), 0);
    cr_assert_eq(tdbg_n_events, 1);
    cr_assert_str_eq(tdbg_text[0], "ring gfx_0.0.0 stalled: signaled 0x0000a1b2 < emitted "
                                   "0x0000a1b5 (no progress in the last sample)");
    cr_assert_not(t.out[0].buddy.valid); /* no amdgpu_vram_mm here */
    rs_test_write_file(dev, "amdgpu_fence_info",
                       "--- ring 0 (gfx_0.0.0) ---\nLast signaled fence          0x0000a1b4\n"
                       "Last emitted                 0x0000a1b6\n",
                       path, sizeof(path));
    cr_assert_eq(tdbg_sample(&t), 0);
    cr_assert_eq(tdbg_n_events, 2);
    cr_assert_eq(tdbg_sev[1], SEV_INFO);
    cr_assert_str_eq(tdbg_pci[1], TDBG_DGPU);
    cr_assert_str_eq(tdbg_text[1],
                     "ring gfx_0.0.0 moving again: signaled 0x0000a1b4, emitted 0x0000a1b6");
    tele_prov_debugfs_ops.close(t.state);
    rs_test_rmtree(root);
}

Test(tele_debugfs, an_unknown_vram_dump_is_an_error_but_the_rings_still_come) {
    char root[256], dev[512], path[1024], want[1200];
    struct tdbg t;
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    tdbg_mkdirs(root, dev, sizeof(dev));
    rs_test_write_file(dev, "name", "amdgpu dev=0000:03:00.0\n", path, sizeof(path));
    rs_test_write_file(dev, "amdgpu_vram_mm", "a future allocator\n", path, sizeof(path));
    snprintf(want, sizeof(want), "unknown format: %s", path);
    rs_test_write_file(dev, "amdgpu_fence_info",
                       "--- ring 0 (gfx_0.0.0) ---\nLast signaled fence          0x00000001\n"
                       "Last emitted                 0x00000001\n",
                       path, sizeof(path));
    cr_assert_eq(tdbg_open_at(&t, root), 0, "%s", t.reason);
    cr_assert_eq(tdbg_sample(&t), -EPROTONOSUPPORT);
    cr_assert_str_eq(t.reason, want);
    cr_assert_eq(t.n, 1);
    cr_assert_not(t.out[0].buddy.valid);
    cr_assert_eq(t.out[0].n_rings, 1);
    tele_prov_debugfs_ops.close(t.state);
    rs_test_rmtree(root);
}

Test(tele_debugfs, drm_mm_tree_of_an_older_kernel) {
    struct tdbg t;
    tdbg_open_fixture(&t, "polaris-drm-mm");
    cr_assert_eq(tdbg_sample(&t), 0, "%s", t.reason);
    cr_assert_eq(t.n, 1);
    const struct tele_gpu *g = tdbg_gpu(&t, "0000:01:00.0");
    cr_assert(g->buddy.valid);
    cr_assert_eq(g->buddy.total_bytes, 8192 * TDBG_MIB);
    cr_assert_eq(g->buddy.largest_free_bytes, 720640 * 4096ull);
    cr_assert_eq(g->n_rings, 5);
    cr_assert_str_eq(g->rings[0].name, "gfx");
    tele_prov_debugfs_ops.close(t.state);
}

/* ---- open errors ---- */

Test(tele_debugfs, missing_root_is_not_found) {
    struct tdbg t;
    cr_assert_eq(tdbg_open_at(&t, "/nonexistent/debug"), -ENOENT);
    cr_assert_str_eq(t.reason, "not found: /nonexistent/debug");
}

Test(tele_debugfs, root_without_amdgpu_is_no_device) {
    char root[256], want[400], dev[512], path[1024];
    struct tdbg t;
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    snprintf(want, sizeof(want), "no amdgpu device under %s/dri", root);
    cr_assert_eq(tdbg_open_at(&t, root), -ENODEV); /* debugfs without DRM */
    cr_assert_str_eq(t.reason, want);
    tdbg_mkdirs(root, dev, sizeof(dev));
    rs_test_write_file(dev, "name", "i915 dev=0000:00:02.0 unique=0000:00:02.0\n", path,
                       sizeof(path));
    cr_assert_eq(tdbg_open_at(&t, root), -ENODEV);
    cr_assert_str_eq(t.reason, want);
    rs_test_rmtree(root);
}

/* debugfs is 0700 root. Run as root, the test drops its effective uid for the open (and takes
 * it back to clean up), since root reads through any mode. */
Test(tele_debugfs, unreadable_root_needs_root) {
    char tmp[256], root[512], want[600];
    struct tdbg t;
    cr_assert_eq(rs_test_tmpdir(tmp, sizeof(tmp)), 0);
    snprintf(root, sizeof(root), "%s/debug", tmp);
    cr_assert_eq(mkdir(root, 0700), 0);
    cr_assert_eq(chmod(root, 0), 0);
    bool was_root = geteuid() == 0;
    if (was_root && seteuid(65534) != 0) {
        rs_test_rmtree(tmp);
        cr_skip_test("running as root without the right to drop it");
    }
    int rc = tdbg_open_at(&t, root);
    if (was_root)
        cr_assert_eq(seteuid(0), 0);
    snprintf(want, sizeof(want), "permission denied: %s needs root", root);
    cr_assert_eq(rc, -EACCES);
    cr_assert_str_eq(t.reason, want);
    chmod(root, 0700);
    rs_test_rmtree(tmp);
}
