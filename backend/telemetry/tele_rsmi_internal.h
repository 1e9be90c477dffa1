/* The rocm-smi provider's private declarations: what the library returned for one device (each
 * reading with its validity), the KFD SMI event numbers, and the pure functions that turn them
 * into records and event text, declared here so the unit tests run them without a GPU. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_RSMI_INTERNAL_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_RSMI_INTERNAL_H

#include "backend/core/ev.h"
#include "backend/telemetry/tele_prov.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- KFD SMI events ----
 * The numbers are the kernel's: enum kfd_smi_event in include/uapi/linux/kfd_ioctl.h. Copies of
 * this enum in ROCm disagree with it (the python bindings of rocm_smi_lib number from 0, and a
 * proposed RING_HANG = 5 shifted MIGRATE_START and every later event by one), so the mask is
 * built and received numbers are read from this table only, never from a ROCm header. */
enum tele_rsmi_kfd_event {
    TELE_RSMI_KFD_NONE = 0, /* not an event */
    TELE_RSMI_KFD_VMFAULT = 1,
    TELE_RSMI_KFD_THERMAL_THROTTLE = 2,
    TELE_RSMI_KFD_GPU_PRE_RESET = 3,
    TELE_RSMI_KFD_GPU_POST_RESET = 4,
    TELE_RSMI_KFD_MIGRATE_START = 5,
    TELE_RSMI_KFD_MIGRATE_END = 6,
    TELE_RSMI_KFD_PAGE_FAULT_START = 7,
    TELE_RSMI_KFD_PAGE_FAULT_END = 8,
    TELE_RSMI_KFD_QUEUE_EVICTION = 9,
    TELE_RSMI_KFD_QUEUE_RESTORE = 10,
    TELE_RSMI_KFD_UNMAP_FROM_GPU = 11,
    /* a flag bit, not an event: with CAP_SYS_ADMIN, other processes' events too */
    TELE_RSMI_KFD_ALL_PROCESS = 64,
};

/* The kernel's KFD_SMI_EVENT_MASK_FROM_INDEX: event n is bit n - 1. */
#define TELE_RSMI_KFD_MASK(ev) (1ULL << ((unsigned)(ev)-1u))

struct tele_rsmi_event {
    uint32_t num;         /* enum tele_rsmi_kfd_event */
    const char *name;     /* "GPU pre-reset" */
    enum ev_severity sev; /* how the events panel shows it */
    bool subscribed;      /* part of the mask the provider asks for */
};

/* The table entry for a received event number, or NULL when the number is not a kernel event
 * (0, or one this table does not know). */
const struct tele_rsmi_event *tele_rsmi_event_find(uint32_t num);

/* The mask the provider sets: every subscribed event, plus the all-processes flag. */
uint64_t tele_rsmi_event_mask(void);

/* The panel text for a received event: "KFD: GPU pre-reset (5)". Returns false (out = "") for
 * a number that is not subscribed: the library can produce one from a message it mis-split. */
bool tele_rsmi_event_text(uint32_t num, const char *msg, char *out, size_t cap,
                          enum ev_severity *sev);

/* ---- readings of one device ---- */

#define TELE_RSMI_MAX_FREQS  33 /* RSMI_MAX_NUM_FREQUENCIES: 32 up to ROCm 5, 33 from ROCm 6 */
#define TELE_RSMI_MAX_PROCS  64 /* compute processes looked at per sample */
#define TELE_RSMI_NAME_BYTES 96

/* Indexes of mem_*[] and temp_mc[], in rsmi_memory_type_t and rsmi_temperature_type_t order. */
enum tele_rsmi_mem {
    TELE_RSMI_MEM_VRAM,
    TELE_RSMI_MEM_VIS_VRAM,
    TELE_RSMI_MEM_GTT,
    TELE_RSMI_MEM_N
};
enum tele_rsmi_temp {
    TELE_RSMI_TEMP_EDGE,
    TELE_RSMI_TEMP_JUNCTION,
    TELE_RSMI_TEMP_MEM,
    TELE_RSMI_TEMP_N
};

struct tele_rsmi_u64 {
    uint64_t v;
    bool ok; /* the call returned RSMI_STATUS_SUCCESS */
};

struct tele_rsmi_i64 {
    int64_t v;
    bool ok;
};

/* rsmi_frequencies_t: the levels and the current one. */
struct tele_rsmi_freqs {
    bool ok;
    uint32_t n, cur;
    uint64_t v[TELE_RSMI_MAX_FREQS];
};

struct tele_rsmi_raw {
    uint64_t bdfid;                  /* rsmi_dev_pci_id_get */
    char name[TELE_RSMI_NAME_BYTES]; /* rsmi_dev_name_get; "" when unknown */
    enum tele_power power;           /* SUSPENDED: only memory was read */
    struct tele_rsmi_u64 mem_total_bytes[TELE_RSMI_MEM_N], mem_used_bytes[TELE_RSMI_MEM_N];
    struct tele_rsmi_u64 busy_pct, mem_busy_pct;
    struct tele_rsmi_i64 temp_mc[TELE_RSMI_TEMP_N]; /* millidegrees C */
    struct tele_rsmi_u64 power_uw, power_cap_uw;
    struct tele_rsmi_freqs sclk_hz, mclk_hz;
    struct tele_rsmi_freqs pcie_tps; /* transfer rates, T/s */
    uint32_t pcie_lanes[TELE_RSMI_MAX_FREQS];
    struct tele_rsmi_i64 fan_rpm, fan_speed; /* fan_speed: 0..fan_max */
    struct tele_rsmi_u64 fan_max;
    struct tele_rsmi_u64 ecc_ce, ecc_ue; /* summed over the blocks that answered */
};

/* A compute process: rsmi_compute_process_info_by_pid_get's vram_usage is the sum over every
 * GPU the process uses, so it can be given to a GPU only when the process uses one. */
struct tele_rsmi_proc {
    uint32_t pid;
    char name[20];
    uint64_t vram_bytes;
    bool vram_ok;
    uint32_t n_gpus;              /* device indexes it has queues on */
    uint32_t gpus[TELE_MAX_GPUS]; /* the first min(n_gpus, TELE_MAX_GPUS) */
};

struct tele_rsmi_procs {
    bool ok;       /* the list was read */
    bool complete; /* and every process in it was examined */
    size_t n;
    struct tele_rsmi_proc p[TELE_RSMI_MAX_PROCS];
};

/* ---- the mapping (tele_rsmi_map.c) ---- */

/* BDFID (domain << 32 | bus << 8 | device << 3 | function) as "0000:03:00.0". False when the
 * text does not fit the record's pci field. */
bool tele_rsmi_map_pci(uint64_t bdfid, char out[16]);

/* Initialise g from r: identity, then every valid reading in the record's units. False (g left
 * untouched) when the PCI address cannot be written, as such a record could not be merged. */
bool tele_rsmi_map_gpu(const struct tele_rsmi_raw *r, struct tele_gpu *g);

/* The processes on device dv, into g's list; KFD_VRAM is their sum when every one of them has
 * a known share (it uses this GPU only) and the list was complete. */
void tele_rsmi_map_procs(const struct tele_rsmi_procs *ps, uint32_t dv, int32_t self_pid,
                         struct tele_gpu *g);

#endif
