/* Private to the debugfs provider: parsers for dri/N/name, amdgpu_vram_mm and amdgpu_fence_info,
 * and the stalled-ring tracking, as pure functions on text so the tests can feed them every
 * kernel generation's format. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_DEBUGFS_INTERNAL_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_DEBUGFS_INTERNAL_H

#include "backend/telemetry/tele.h"

#include <stdbool.h>
#include <stdint.h>

/* amdgpu's drm_mm VRAM manager counted in CPU pages (drm_mm_init(&mgr->mm, 0, size >> PAGE_SHIFT)),
 * 4 KiB on every platform amdgpu ships on. */
#define TELE_DEBUGFS_MM_PAGE_BYTES 4096ull

/* Which allocator dump amdgpu_vram_mm held. */
enum tele_debugfs_mm_format {
    TELE_DEBUGFS_MM_UNKNOWN, /* nothing recognised: the buddy record is left invalid */
    TELE_DEBUGFS_MM_BUDDY,   /* drm_buddy_print(): the buddy VRAM manager of current kernels */
    TELE_DEBUGFS_MM_DRM_MM,  /* drm_mm_print() of 5.x kernels: holes only, no orders */
};

/* The PCI address named by a dri/N/name text (drm_debugfs.c drm_name_info(): "amdgpu
 * dev=0000:03:00.0 unique=0000:03:00.0", older kernels "amdgpu 0000:03:00.0 pci:0000:03:00.0"),
 * canonical, into pci. False when the driver is not amdgpu or no address is found. */
bool tele_debugfs_parse_name(const char *text, char pci[16]);

/* Parse the text of dri/N/amdgpu_vram_mm into b, which is zeroed first and marked valid when the
 * format is known. Buddy dumps: per-order bytes are blocks * (chunk << order), exact, and
 * free_bytes is their sum (the header's "free: N MiB" is truncated to MiB; it is used only when
 * no order line is present); total_bytes is the TTM header's "size:" in bytes when it agrees
 * with the header's MiB, else that MiB value. drm_mm dumps: totals of the "total:" line and the
 * largest free hole, in TELE_DEBUGFS_MM_PAGE_BYTES units (bytes when the TTM header's size says
 * so); n_orders is 0 and free_blocks counts the free holes. */
enum tele_debugfs_mm_format tele_debugfs_parse_vram_mm(const char *text, struct tele_buddy *b);

/* Parse amdgpu_fence_info (amdgpu_fence.c amdgpu_debugfs_fence_info_show()) into rings[0..cap):
 * name, "Last signaled fence" and the first "Last emitted" of each "--- ring N (name) ---"
 * block; the trailing-fence, preempted, reset and "both" lines are skipped, and a block that
 * lacks either number is dropped. stalled is left false. Returns the number of rings. */
int tele_debugfs_parse_fences(const char *text, struct tele_ring *rings, int cap);

/* A ring as the previous sample left it. */
struct tele_debugfs_ring_seen {
    char name[24];
    uint64_t signaled;
    bool stalled;
};

/* The previous sample's rings of one device. Zeroed: no previous sample. */
struct tele_debugfs_ring_hist {
    int n;
    struct tele_debugfs_ring_seen r[TELE_MAX_RINGS];
};

/* Told about a ring whose stalled flag changed: ring->stalled true when it just stalled, false
 * when it moves again. */
typedef void (*tele_debugfs_note_fn)(void *arg, const struct tele_ring *ring);

/* Set stalled on rings[0..n): work is pending (emitted ahead of signaled, modulo the 32-bit
 * sequence wrap) and signaled is the same as in h's sample, so never on a ring h has not seen.
 * note (may be NULL) hears of each change against h; h then holds this sample. */
void tele_debugfs_rings_track(struct tele_debugfs_ring_hist *h, struct tele_ring *rings, int n,
                              tele_debugfs_note_fn note, void *arg);

#endif
