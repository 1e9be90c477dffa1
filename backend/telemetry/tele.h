/* GPU telemetry: per-GPU records merged from every provider by PCI address, each field with a
 * validity flag and the provider it came from, sampled on the telemetry thread and published
 * as a latest-value snapshot. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_H

#include "backend/core/evring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TELE_MAX_GPUS      16
#define TELE_MAX_PROCS     32
#define TELE_MAX_RINGS     32
#define TELE_MAX_PROVIDERS 8
#define TELE_BUDDY_ORDERS  40
#define TELE_REASON_BYTES  160
#define TELE_PATH_MAX      1024

/* Numeric fields: id, JSON name, label for the detail view. A rate is computed by the provider
 * from two samples of a counter (n/a on the first). */
#define TELE_FIELDS(X)                                                                             \
    X(VRAM_TOTAL, "vram_total_bytes", "VRAM total")                                                \
    X(VRAM_USED, "vram_used_bytes", "VRAM used")                                                   \
    X(VRAM_RESERVED, "vram_reserved_bytes", "VRAM reserved by the driver")                         \
    X(VRAM_USABLE, "vram_usable_bytes", "VRAM usable heap")                                        \
    X(VRAM_MAX_ALLOC, "vram_max_alloc_bytes", "largest VRAM allocation allowed")                   \
    X(VIS_VRAM_TOTAL, "vis_vram_total_bytes", "visible VRAM total")                                \
    X(VIS_VRAM_USED, "vis_vram_used_bytes", "visible VRAM used")                                   \
    X(GTT_TOTAL, "gtt_total_bytes", "GTT total")                                                   \
    X(GTT_USED, "gtt_used_bytes", "GTT used")                                                      \
    X(BUSY, "busy_pct", "GPU busy %")                                                              \
    X(MEM_BUSY, "mem_busy_pct", "memory busy %")                                                   \
    X(TEMP, "temp_c", "temperature (edge) C")                                                      \
    X(TEMP_HOTSPOT, "temp_hotspot_c", "temperature (junction) C")                                  \
    X(TEMP_MEM, "temp_mem_c", "temperature (memory) C")                                            \
    X(POWER, "power_w", "power W")                                                                 \
    X(POWER_CAP, "power_cap_w", "power cap W")                                                     \
    X(SCLK, "sclk_mhz", "shader clock MHz")                                                        \
    X(MCLK, "mclk_mhz", "memory clock MHz")                                                        \
    X(FAN_RPM, "fan_rpm", "fan RPM")                                                               \
    X(FAN_PCT, "fan_pct", "fan %")                                                                 \
    X(PCIE_GEN, "pcie_gen", "PCIe generation")                                                     \
    X(PCIE_WIDTH, "pcie_width", "PCIe lanes")                                                      \
    X(PCIE_TX, "pcie_tx_bytes_per_s", "PCIe TX bytes/s")                                           \
    X(PCIE_RX, "pcie_rx_bytes_per_s", "PCIe RX bytes/s")                                           \
    X(EVICTIONS, "evictions_per_s", "buffer evictions/s")                                          \
    X(BYTES_MOVED, "bytes_moved_per_s", "bytes moved/s")                                           \
    X(CPU_FAULTS, "vram_cpu_page_faults_per_s", "VRAM CPU page faults/s")                          \
    X(VRAM_LOST, "vram_lost_count", "VRAM lost (resets)")                                          \
    X(ECC_CE, "ecc_corrected", "ECC/RAS corrected errors")                                         \
    X(ECC_UE, "ecc_uncorrected", "ECC/RAS uncorrected errors")                                     \
    X(PROC_VRAM, "proc_vram_bytes", "VRAM of listed processes")                                    \
    X(KFD_VRAM, "kfd_vram_bytes", "VRAM of compute (KFD) processes")

enum tele_field {
#define X(id, json, label) TELE_F_##id,
    TELE_FIELDS(X)
#undef X
        TELE_F_COUNT
};

/* What a provider can fill: shown in the diagnostics view. */
#define TELE_CAPS(X)                                                                               \
    X(MEMORY, "memory")                                                                            \
    X(UTIL, "utilisation")                                                                         \
    X(THERMAL, "temperature")                                                                      \
    X(POWER, "power")                                                                              \
    X(CLOCKS, "clocks")                                                                            \
    X(FANS, "fans")                                                                                \
    X(PCIE, "pcie")                                                                                \
    X(COUNTERS, "counters")                                                                        \
    X(ECC, "ecc")                                                                                  \
    X(PROCESSES, "processes")                                                                      \
    X(BUDDY, "buddy")                                                                              \
    X(FENCES, "fences")                                                                            \
    X(EVENTS, "events")                                                                            \
    X(IDENTITY, "identity")

enum tele_cap_id {
#define X(id, name) TELE_CAPBIT_##id,
    TELE_CAPS(X)
#undef X
        TELE_CAP_COUNT
};
#define TELE_CAP(id) (1u << TELE_CAPBIT_##id)

enum tele_vendor { TELE_VENDOR_UNKNOWN, TELE_VENDOR_AMD, TELE_VENDOR_NVIDIA };

/* power/runtime_status of the PCI device: a suspended dGPU is not woken to be sampled. */
enum tele_power { TELE_POWER_UNKNOWN, TELE_POWER_ACTIVE, TELE_POWER_SUSPENDED };

struct tele_proc {
    int32_t pid;
    char name[20]; /* /proc/PID/comm, or the provider's */
    uint64_t vram_bytes, gtt_bytes;
    bool vram_valid, gtt_valid;
    double busy_pct; /* engine busy over the last interval (fdinfo ns deltas) */
    bool busy_valid;
    bool self; /* this process */
};

struct tele_ring {
    char name[24];              /* "gfx_0.0.0", "comp_1.0.0", "sdma0" */
    uint64_t signaled, emitted; /* last signaled and last emitted fence seqno */
    bool stalled; /* signaled < emitted and signaled did not move since the last sample */
};

/* The drm_buddy allocator's view of VRAM (debugfs amdgpu_vram_mm). */
struct tele_buddy {
    bool valid;
    uint64_t chunk_bytes, total_bytes, free_bytes, largest_free_bytes, free_blocks;
    int n_orders;                                 /* orders 0..n_orders-1 below */
    uint64_t order_free_bytes[TELE_BUDDY_ORDERS]; /* free bytes held in blocks of that order */
    uint64_t order_blocks[TELE_BUDDY_ORDERS];     /* free blocks of that order */
};

/* One physical GPU. Provider index + 1 in src[]; 0 = not read (shown as n/a). */
struct tele_gpu {
    char pci[16]; /* "0000:03:00.0": the merge key; lower case */
    enum tele_vendor vendor;
    enum tele_power power;
    char name[96], arch[24], driver[16];
    uint8_t name_src, arch_src, power_src;
    int card;  /* DRM card minor (cardN, dri/N), -1 when unknown */
    int index; /* position in the merged list, set by the merge */
    double f[TELE_F_COUNT];
    uint8_t src[TELE_F_COUNT];
    /* VRAM used/total as every provider that reads it sees it, for the reconciliation view */
    double vram_used_by[TELE_MAX_PROVIDERS], vram_total_by[TELE_MAX_PROVIDERS];
    uint8_t vram_by_valid;       /* bit p: provider p gave vram_used_by[p] */
    uint8_t vram_total_by_valid; /* bit p: ... and vram_total_by[p] */
    struct tele_buddy buddy;
    uint8_t buddy_src;
    struct tele_ring rings[TELE_MAX_RINGS];
    int n_rings;
    uint8_t rings_src; /* 0: no fence information */
    struct tele_proc procs[TELE_MAX_PROCS];
    int n_procs;
    uint8_t procs_src;   /* 0: no process list */
    uint32_t procs_more; /* processes beyond TELE_MAX_PROCS, not listed */
};

enum tele_status { TELE_OK, TELE_UNAVAILABLE, TELE_ERROR };

/* How a provider fared, for `ringside probe` and the diagnostics view. */
struct tele_prov_info {
    char name[16];
    enum tele_status status;
    char reason[TELE_REASON_BYTES]; /* why unavailable / the last error; "" when ok */
    uint32_t caps;                  /* TELE_CAP() bits */
    unsigned n_gpus;                /* GPUs it reported in the last sample */
    uint64_t samples;
    uint64_t last_sample_ns, max_sample_ns, total_sample_ns;
};

struct tele_snap {
    uint64_t t_ns;   /* when the sample ended; 0 before the first */
    uint64_t seq;    /* samples published */
    unsigned n_gpus; /* merged GPUs, ordered by PCI address */
    struct tele_gpu gpus[TELE_MAX_GPUS];
    unsigned n_prov;
    struct tele_prov_info prov[TELE_MAX_PROVIDERS];
};

/* Where file-reading providers look, so tests and offline analysis use captured trees. */
struct tele_roots {
    char sys[TELE_PATH_MAX];      /* /sys */
    char proc[TELE_PATH_MAX];     /* /proc */
    char debugfs[TELE_PATH_MAX];  /* /sys/kernel/debug */
    char dev[TELE_PATH_MAX];      /* /dev */
    char nvml_lib[TELE_PATH_MAX]; /* NVML library to dlopen (default libnvidia-ml.so.1) */
};

struct tele_conf {
    struct tele_roots roots;
    uint64_t interval_ns; /* between samples (default 500 ms) */
    char only[128];       /* comma-separated provider names to open; "" = all */
};

/* Defaults: /sys, /proc, /sys/kernel/debug, /dev, 500 ms, all providers. */
void tele_conf_default(struct tele_conf *c);

/* Field names and labels; "?" out of range. tele_field_from_json: -1 when unknown. */
const char *tele_field_json(unsigned f);
const char *tele_field_label(unsigned f);
int tele_field_from_json(const char *name);
const char *tele_cap_name(unsigned bit);
const char *tele_vendor_name(enum tele_vendor v);
const char *tele_power_name(enum tele_power p);
const char *tele_status_name(enum tele_status s);

/* Field f of g when valid. */
static inline bool tele_get(const struct tele_gpu *g, enum tele_field f, double *v) {
    if (!g->src[f])
        return false;
    *v = g->f[f];
    return true;
}

/* A record with nothing read: no field valid, card -1. */
void tele_gpu_init(struct tele_gpu *g, const char *pci);

/* The merged GPU whose PCI address matches pci (case-insensitive, "0000:" optional), or NULL. */
const struct tele_gpu *tele_snap_find(const struct tele_snap *s, const char *pci);

/* ---- the service ---- */

struct tele;

/* Open the registered providers (all, or conf->only) on the calling thread: one that cannot
 * open is kept as unavailable with its reason. events (borrowed, may be NULL) receives the
 * providers' events (resets, VM faults, Xid, VRAM lost, stalled rings). 0, -EINVAL with err
 * (an unknown name in conf->only), or -ENOMEM. */
int tele_create(struct tele **out, const struct tele_conf *conf, struct evring *events, char *err,
                size_t errlen);
/* Stop the thread if started, close every provider, free. NULL is fine. */
void tele_destroy(struct tele *t);

/* Sample every provider once on the calling thread and publish (for `ringside probe` and tests;
 * not while the thread runs). */
void tele_sample_now(struct tele *t);

/* Start the telemetry thread: a sample every interval until tele_destroy. 0 or -errno. */
int tele_start(struct tele *t);

/* Latest snapshot (zeroed before the first sample); valid until the next call. One reader. */
const struct tele_snap *tele_snap_read(struct tele *t, bool *fresh);

#endif
