/* The libdrm provider's private declarations: the raw answers of one render node's ioctls in
 * one sample, what a device keeps between samples, and the pure functions that turn them into
 * records, rates and the VRAM-lost decision, declared here so the unit tests run them without
 * a GPU. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_LIBDRM_INTERNAL_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_LIBDRM_INTERNAL_H

#include "backend/telemetry/tele_prov.h"

#include <amdgpu_drm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Newer kernels answer GPU_INPUT_POWER where GPU_AVG_POWER is gone (RDNA3 and later); libdrm
 * headers before 2.4.116 lack the name, the value is the kernel's (amdgpu_drm.h). */
#ifdef AMDGPU_INFO_SENSOR_GPU_INPUT_POWER
#define TELE_LIBDRM_SENSOR_INPUT_POWER AMDGPU_INFO_SENSOR_GPU_INPUT_POWER
#else
#define TELE_LIBDRM_SENSOR_INPUT_POWER 0xc
#endif

struct tele_libdrm_raw {
    uint64_t t_ns;         /* CLOCK_MONOTONIC just before the counters were read */
    enum tele_power power; /* SUSPENDED: no ioctl was made, nothing below is valid */
    struct drm_amdgpu_memory_info mem;
    bool mem_ok;
    /* AMDGPU_INFO_NUM_EVICTIONS, _NUM_BYTES_MOVED, _NUM_VRAM_CPU_PAGE_FAULTS: 64-bit counters */
    uint64_t evictions, bytes_moved, cpu_faults;
    bool evictions_ok, bytes_moved_ok, cpu_faults_ok;
    uint32_t vram_lost; /* AMDGPU_INFO_VRAM_LOST_COUNTER: 32 bits */
    bool vram_lost_ok;
    /* AMDGPU_INFO_SENSOR_*: MHz, MHz, millidegrees C, percent, W */
    uint32_t sclk_mhz, mclk_mhz, temp_mc, load_pct, power_w;
    bool sclk_ok, mclk_ok, temp_ok, load_ok, power_ok;
};

/* What one device keeps from sample to sample. */
struct tele_libdrm_hist {
    struct tele_libdrm_raw prev; /* the last awake sample; prev.t_ns == 0: none yet */
    uint32_t vram_lost;          /* the counter last seen, kept across suspension */
    bool vram_lost_ok;
};

/* A VRAM-lost counter that went up between two samples. */
struct tele_libdrm_lost {
    bool lost;
    uint32_t from, to;
};

/* Fill g (already tele_gpu_init'd) from cur: memory, sensors, counters; rates per second from
 * the counters' growth since h->prev (unset on the first sample, after a suspension and when a
 * counter went backwards); whether VRAM was lost. Then make cur the history. A suspended cur
 * sets only g->power. */
void tele_libdrm_map(struct tele_libdrm_hist *h, const struct tele_libdrm_raw *cur,
                     struct tele_gpu *g, struct tele_libdrm_lost *lost);

/* "VRAM lost (counter 1 -> 2): the GPU was reset and VRAM contents are gone" */
void tele_libdrm_map_lost_text(const struct tele_libdrm_lost *lost, char *out, size_t cap);

/* Why open found no GPU, and its return code: a permission error on a node (err_path) wins, as
 * the usual cause is a user outside the render group; else "no amdgpu render node under DRI",
 * with note (a node that was skipped, and why) when there is one. */
int tele_libdrm_map_none(const char *dri, int err, const char *err_path, const char *note,
                         char *reason, size_t cap);

#endif
