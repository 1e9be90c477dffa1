/* libFuzzer target for the amdgpu debugfs parsers: arbitrary bytes as an amdgpu_vram_mm dump
 * (drm_buddy or drm_mm), an amdgpu_fence_info text (then the stalled-ring tracking) and a
 * dri/N/name line, with invariants checked. */
#include "backend/telemetry/tele_debugfs_internal.h"
#include "backend/telemetry/tele_prov.h"
#include "tests/fuzz/fuzz_target.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void fuzz_buddy_check_str(const char *s, size_t cap) {
    FUZZ_CHECK(memchr(s, '\0', cap) != NULL);
}

static bool fuzz_buddy_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* A buddy dump: per-order bytes are blocks * (chunk << order) below n_orders and nothing above,
 * the totals are the sums, and the largest free block is that of the highest order with one. */
static void fuzz_buddy_check_orders(const struct tele_buddy *b) {
    uint64_t blocks = 0, largest = 0;
    FUZZ_CHECK(b->valid == (b->chunk_bytes > 0));
    FUZZ_CHECK(b->n_orders >= 0 && b->n_orders <= TELE_BUDDY_ORDERS);
    for (int o = 0; o < TELE_BUDDY_ORDERS; o++) {
        if (o >= b->n_orders) {
            FUZZ_CHECK(b->order_blocks[o] == 0 && b->order_free_bytes[o] == 0);
            continue;
        }
        FUZZ_CHECK(b->order_free_bytes[o] == b->order_blocks[o] * (b->chunk_bytes << o));
        blocks += b->order_blocks[o];
        if (b->order_blocks[o])
            largest = b->chunk_bytes << o;
    }
    FUZZ_CHECK(b->free_blocks == blocks);
    FUZZ_CHECK(b->largest_free_bytes == largest);
}

static void fuzz_buddy_vram_mm(const char *text) {
    struct tele_buddy b;
    memset(&b, 0x5a, sizeof(b)); /* the parser must clear what it does not set */
    enum tele_debugfs_mm_format f = tele_debugfs_parse_vram_mm(text, &b);
    switch (f) {
    case TELE_DEBUGFS_MM_BUDDY:
        FUZZ_CHECK(strstr(text, "chunk_size:") != NULL);
        fuzz_buddy_check_orders(&b);
        break;
    case TELE_DEBUGFS_MM_DRM_MM:
        FUZZ_CHECK(strstr(text, "total:") != NULL);
        FUZZ_CHECK(b.valid && b.n_orders == 0);
        FUZZ_CHECK(b.chunk_bytes == 1 || b.chunk_bytes == TELE_DEBUGFS_MM_PAGE_BYTES);
        FUZZ_CHECK(fuzz_buddy_zero(b.order_blocks, sizeof(b.order_blocks)));
        FUZZ_CHECK(fuzz_buddy_zero(b.order_free_bytes, sizeof(b.order_free_bytes)));
        FUZZ_CHECK(b.free_blocks == 0 || strstr(text, "free") != NULL);
        break;
    case TELE_DEBUGFS_MM_UNKNOWN:
        FUZZ_CHECK(fuzz_buddy_zero(&b, sizeof(b)));
        break;
    default:
        FUZZ_CHECK(0);
    }
}

/* Rings start at "--- ring " at the start of a line; the parser finds at most that many. */
static int fuzz_buddy_ring_heads(const char *text) {
    int n = 0;
    for (const char *p = text; *p;) {
        n += strncmp(p, "--- ring ", 9) == 0;
        p += strcspn(p, "\n");
        p += *p == '\n';
    }
    return n;
}

static bool fuzz_buddy_pending(const struct tele_ring *r) {
    uint32_t ahead = (uint32_t)r->emitted - (uint32_t)r->signaled;
    return ahead != 0 && ahead < 0x80000000u;
}

static void fuzz_buddy_note(void *arg, const struct tele_ring *r) {
    fuzz_buddy_check_str(r->name, sizeof(r->name));
    (*(int *)arg)++;
}

/* The first of rings[0..n) named like rings[i]: what the tracking takes as its previous state. */
static const struct tele_ring *fuzz_buddy_first(const struct tele_ring *rings, int i) {
    int j = 0;
    while (strcmp(rings[j].name, rings[i].name) != 0)
        j++;
    return &rings[j];
}

/* Track the same rings twice: nothing stalls on the first sample; on the second a ring stalls
 * exactly when it has work pending and its first namesake had the same signaled value. */
static void fuzz_buddy_track(struct tele_ring *rings, int n) {
    struct tele_debugfs_ring_hist h;
    memset(&h, 0, sizeof(h));
    int notes = 0;
    tele_debugfs_rings_track(&h, rings, n, fuzz_buddy_note, &notes);
    FUZZ_CHECK(notes == 0 && h.n == n);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(!rings[i].stalled);
    tele_debugfs_rings_track(&h, rings, n, fuzz_buddy_note, &notes);
    int stalled = 0;
    for (int i = 0; i < n; i++) {
        const struct tele_ring *prev = fuzz_buddy_first(rings, i);
        bool want = fuzz_buddy_pending(&rings[i]) && prev->signaled == rings[i].signaled;
        FUZZ_CHECK(rings[i].stalled == want);
        stalled += want;
    }
    FUZZ_CHECK(notes == stalled);
    tele_debugfs_rings_track(&h, rings, n, NULL, NULL);
}

/* Parse into an array of exactly cap rings (an overrun is caught by ASan). */
static void fuzz_buddy_fences(const char *text, int cap) {
    struct tele_ring *rings = malloc(cap ? (size_t)cap * sizeof(*rings) : 1);
    FUZZ_CHECK(rings != NULL);
    int n = tele_debugfs_parse_fences(text, rings, cap);
    FUZZ_CHECK(n >= 0 && n <= cap && n <= fuzz_buddy_ring_heads(text));
    for (int i = 0; i < n; i++) {
        fuzz_buddy_check_str(rings[i].name, sizeof(rings[i].name));
        FUZZ_CHECK(rings[i].name[0] && !strchr(rings[i].name, '\n'));
        FUZZ_CHECK(!rings[i].stalled);
    }
    fuzz_buddy_track(rings, n);
    free(rings);
}

static void fuzz_buddy_name(const char *text) {
    char pci[16], again[16];
    memset(pci, 'x', sizeof(pci));
    if (!tele_debugfs_parse_name(text, pci)) {
        for (size_t i = 0; i < sizeof(pci); i++)
            FUZZ_CHECK(pci[i] == 'x');
        return;
    }
    FUZZ_CHECK(strncmp(text + strspn(text, " \t"), "amdgpu", 6) == 0);
    fuzz_buddy_check_str(pci, sizeof(pci));
    FUZZ_CHECK(strlen(pci) == 12 && tele_pci_norm(pci, again) && strcmp(again, pci) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstring(data, size);
    fuzz_buddy_vram_mm(text);
    fuzz_buddy_fences(text, TELE_MAX_RINGS);
    fuzz_buddy_fences(text, size ? data[size - 1] % (TELE_MAX_RINGS + 1) : 0);
    fuzz_buddy_name(text);
    free(text);
    return 0;
}

const char fuzz_target_name[] = "fuzz_buddy";

/* Pieces of real debugfs text (ttm_resource_manager_debug(), amdgpu_vram_mgr_debug(),
 * drm_buddy_print(), drm_mm_print(), amdgpu_debugfs_fence_info_show(), drm_name_info()). */
const char *const fuzz_fragments[] = {
    "  use_type: 1\n  use_tt: 0\n",
    "  size: 25753026560\n",
    "  usage: 21206401024\n",
    "  vis usage:188743680\n",
    "default_page_size: 4KiB\n",
    "chunk_size: 4KiB, total: 24560MiB, free: 4336MiB, clear_free: 2048MiB\n",
    "chunk_size: 4KiB, total: 512MiB, free: 128MiB\n",
    "order-22 free:        0 KiB, blocks: 0\n",
    "order-19 free:     2048 MiB, blocks: 1\n",
    "order- 5 free:      384 KiB, blocks: 3\n",
    "order-3 free: 32KiB, pages: 1\n",
    "reserved:\n",
    "0x00000005fee00000-0x00000005ff000000: 2097152\n",
    "0x0000000000040100-0x0000000000050100: 65536: free\n",
    "0x0000000000050100-0x0000000000150100: 1048576: used\n",
    "total: 2097152, used 1310976 free 786176\n",
    "man size:2097152 pages, ram usage:5121MB, vis usage:256MB\n",
    "--- ring 0 (gfx_0.0.0) ---\n",
    "--- ring 1 (comp_1.0.0) ---\n",
    "--- ring 10 (sdma0) ---\n",
    "Last signaled fence          0x00003a10\n",
    "Last emitted                 0x00003a14\n",
    "Last signaled trailing fence 0x0000001c\n",
    "Last preempted               0x00000000\n",
    "Last reset                   0x00000000\nLast both                    0x00000000\n",
    "amdgpu dev=0000:03:00.0 unique=0000:03:00.0\n",
    "amdgpu 0000:01:00.0 pci:0000:01:00.0\n",
    "udl dev=3-2:1.0 unique=3-2:1.0\n",
    "0xffffffff",
    "18446744073709551615",
    "MiB",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
