/* Private to the amdgpu sysfs provider: the cards found at open, and the readers its files share
 * (text files, the gpu_metrics table, the KFD view), declared here so the tests can reach the
 * gpu_metrics parser on plain byte buffers. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_SYSFS_INTERNAL_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_SYSFS_INTERNAL_H

#include "backend/telemetry/tele.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One amdgpu DRM card, as found at open. Identity is read once: it cannot change while the
 * driver stays bound. */
struct tele_sysfs_card {
    int card;                  /* N of cardN */
    char pci[16];              /* "0000:03:00.0" */
    char dev[TELE_PATH_MAX];   /* ROOT/class/drm/cardN/device */
    char hwmon[TELE_PATH_MAX]; /* its hwmonK directory, "" when it has none */
    char name[96], arch[24];   /* "" when unknown */
    uint32_t kfd_gpu_id;       /* the KFD topology node's gpu_id, 0 when KFD does not list it */
    uint32_t kfd_target;       /* that node's gfx_target_version (110000), 0 when unknown */
};

struct tele_sysfs {
    char sys[TELE_PATH_MAX]; /* the sysfs root */
    struct tele_sysfs_card cards[TELE_MAX_GPUS];
    size_t n_cards;
};

/* ---- text files (tele_sysfs_read.c); dir is a directory, name a file in it ---- */

/* One unsigned number from dir/name: true when it was read and parsed. */
bool tele_sysfs_read_u64(const char *dir, const char *name, uint64_t *out);

/* Files the driver answers from its own counters or PCI config space, which never wake the
 * device: mem_info_*, current_link_speed/width. */
void tele_sysfs_read_idle_safe(const char *dev, struct tele_gpu *g);

/* Files that reach the hardware (SMU, hwmon, RAS registers): only for an awake device. */
void tele_sysfs_read_awake(const struct tele_sysfs_card *c, struct tele_gpu *g);

/* ---- gpu_metrics (tele_sysfs_metrics.c) ---- */

/* What one gpu_metrics table held, in tele units (C, W, %, MHz, rpm). */
struct tele_sysfs_metrics {
    uint8_t format_rev, content_rev;
    double f[TELE_F_COUNT];
    bool set[TELE_F_COUNT];
};

/* Parse len bytes of a gpu_metrics table (struct metrics_table_header first). Only fields that
 * lie wholly inside both len and the header's structure_size are read, and values the firmware
 * marks unsupported (all ones) are left unset. 0; -EINVAL for a short or truncated table
 * (structure_size larger than len): nothing set; -EPROTONOSUPPORT for a layout not known here. */
int tele_sysfs_metrics_parse(const void *buf, size_t len, struct tele_sysfs_metrics *m);

/* Read dev/gpu_metrics and set the fields of g that are still unset. */
void tele_sysfs_metrics_read(const char *dev, struct tele_gpu *g);

/* ---- KFD (tele_sysfs_kfd.c) ---- */

/* Find each card's KFD topology node (gpu_id, gfx_target_version) by PCI address. */
void tele_sysfs_kfd_map(const char *sys, struct tele_sysfs_card *cards, size_t n);

/* Sum ROOT/class/kfd/kfd/proc/PID/vram_<gpu_id> over every process into KFD_VRAM of out[i]
 * (cards[i]'s record). Left unset when KFD lists no processes directory or not the card. */
void tele_sysfs_kfd_vram(const char *sys, const struct tele_sysfs_card *cards, size_t n,
                         struct tele_gpu *out);

/* The LLVM target name ("gfx1100", "gfx90a") of a GC IP version from ip_discovery, the way
 * the KFD maps it (the names differ from the IP version on several chips). */
void tele_sysfs_kfd_arch_from_gc(unsigned major, unsigned minor, unsigned rev, char *out,
                                 size_t cap);

/* The LLVM target name of a KFD gfx_target_version (90010 -> "gfx90a"). */
void tele_sysfs_kfd_arch_from_target(uint32_t target, char *out, size_t cap);

#endif
