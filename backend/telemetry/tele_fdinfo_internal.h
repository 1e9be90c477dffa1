/* Private to the fdinfo provider: the parser of one DRM fdinfo text and the per-process
 * aggregation of a sample's clients, pure functions of their inputs (time included) so the tests
 * can check memory, deduplication and busy % without a live /proc. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_FDINFO_INTERNAL_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_FDINFO_INTERNAL_H

#include "backend/telemetry/tele.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Engines kept per client: amdgpu names 8 (gfx compute dma dec enc enc_1 jpeg vpe). */
#define TELE_FDINFO_ENGINES 12

/* One engine's busy time as a client reports it (drm-engine-<name>: <uint> ns). */
struct tele_fdinfo_engine {
    char name[16];
    uint64_t ns;
    uint32_t capacity; /* drm-engine-capacity-<name>, 1 when absent */
};

/* One open DRM file of one process, as its fdinfo describes it
 * (Documentation/gpu/drm-usage-stats.rst; amdgpu_fdinfo.c amdgpu_show_fdinfo()). */
struct tele_fdinfo_client {
    int32_t pid, fd;    /* set by the caller */
    char comm[16];      /* /proc/PID/comm without its newline, "" unknown; set by the caller */
    char pdev[16];      /* drm-pdev, canonical */
    uint64_t client_id; /* drm-client-id: one per drm_file, shared by dup()ed descriptors */
    bool has_client_id;
    uint64_t vram_bytes; /* resident VRAM: drm-resident-vram, else drm-memory-vram, else total */
    uint64_t gtt_bytes;  /* the same for GTT */
    uint64_t evicted_vram_bytes; /* amd-evicted-vram: VRAM buffers pushed out to system memory */
    bool vram_valid, gtt_valid, evicted_valid;
    uint8_t vram_rank, gtt_rank; /* which key gave the value: 3 resident, 2 memory, 1 total */
    int n_engines;
    struct tele_fdinfo_engine engines[TELE_FDINFO_ENGINES];
};

/* Parse an fdinfo text into c (zeroed first; pid, fd and comm are the caller's to set after).
 * Sizes take the optional KiB/MiB unit (none: bytes). 0; -ENODEV when it is not an amdgpu DRM
 * file (no drm-driver, or another driver); -EINVAL when drm-pdev is missing or malformed. */
int tele_fdinfo_parse(const char *text, struct tele_fdinfo_client *c);

/* What the aggregation keeps between samples; zero it before the first, free with _fini. */
struct tele_fdinfo_hist {
    struct tele_fdinfo_client *prev; /* the previous sample's clients, sorted, deduplicated */
    size_t n_prev, cap_prev;
    uint64_t prev_ns; /* when they were read */
    bool has_prev;
    char known[TELE_MAX_GPUS][16]; /* every device a client was seen on, so a device whose */
    size_t n_known;                /* last client exited gets an empty list, not n/a */
};

void tele_fdinfo_hist_fini(struct tele_fdinfo_hist *h);

/* Fold the n clients c of one sample, read at now_ns (CLOCK_MONOTONIC), into one record per
 * device (every device in h->known, at most cap), in out[0..*n_out). c is sorted and
 * deduplicated in place: the descriptors of one process that share a drm-client-id count once.
 * Per process: VRAM and GTT summed over its clients (valid when one client gave them), listed
 * by VRAM descending, at most TELE_MAX_PROCS (the rest counted in procs_more), self when its pid
 * is self_pid; PROC_VRAM is the sum over all of them. busy_pct is the busiest engine's share of
 * the interval since the previous sample: per engine, the growth of the process's clients'
 * drm-engine-<name> over the elapsed time and the engine's capacity, capped at 100; a counter
 * that went backwards counts as no growth, and its larger value is kept (drm-usage-stats.rst).
 * Not valid on a client's first sample. Returns 0, or -ENOMEM (records still filled; the next
 * sample then has no history). */
int tele_fdinfo_aggregate(struct tele_fdinfo_hist *h, struct tele_fdinfo_client *c, size_t n,
                          uint64_t now_ns, int32_t self_pid, struct tele_gpu *out, size_t cap,
                          size_t *n_out);

#endif
