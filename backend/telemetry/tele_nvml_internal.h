/* The NVML provider's private declarations: the slice of the nvml.h ABI it calls (declared here,
 * so the build needs no CUDA headers), the symbols it loads, and its per-GPU state. */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_NVML_INTERNAL_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_NVML_INTERNAL_H

#include "backend/core/worker.h"
#include "backend/telemetry/tele_prov.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- nvml.h, as the driver's library implements it (values and layouts copied from nvml.h;
 * nvtop declares the same subset in src/extract_gpuinfo_nvidia.c) ---- */

/* nvmlReturn_t */
#define TELE_NVML_SUCCESS                  0
#define TELE_NVML_ERROR_NOT_SUPPORTED      3
#define TELE_NVML_ERROR_NO_PERMISSION      4
#define TELE_NVML_ERROR_INSUFFICIENT_SIZE  7
#define TELE_NVML_ERROR_DRIVER_NOT_LOADED  9
#define TELE_NVML_ERROR_TIMEOUT            10
#define TELE_NVML_ERROR_LIBRARY_NOT_FOUND  12
#define TELE_NVML_ERROR_FUNCTION_NOT_FOUND 13

/* nvmlTemperatureSensors_t, nvmlClockType_t, nvmlPcieUtilCounter_t (KB/s), nvmlMemoryErrorType_t,
 * nvmlEccCounterType_t */
#define TELE_NVML_TEMPERATURE_GPU          0
#define TELE_NVML_CLOCK_SM                 1
#define TELE_NVML_CLOCK_MEM                2
#define TELE_NVML_PCIE_UTIL_TX_BYTES       0
#define TELE_NVML_PCIE_UTIL_RX_BYTES       1
#define TELE_NVML_MEMORY_ERROR_CORRECTED   0
#define TELE_NVML_MEMORY_ERROR_UNCORRECTED 1
#define TELE_NVML_VOLATILE_ECC             0
#define TELE_NVML_EVENT_XID_CRITICAL       0x8ull /* nvmlEventTypeXidCriticalError */
#define TELE_NVML_VALUE_NOT_AVAILABLE      (~0ull)
#define TELE_NVML_NAME_BYTES               96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */

/* Opaque handles: nvmlDevice_t and nvmlEventSet_t are pointers to driver structs. */
typedef struct tele_nvml_device_opaque *tele_nvml_device_t;
typedef struct tele_nvml_event_set_opaque *tele_nvml_event_set_t;

struct tele_nvml_mem_v1 { /* nvmlMemory_t */
    unsigned long long total, free, used;
};

/* nvmlMemory_v2_t. Here used excludes reserved (total = reserved + free + used), where the v1
 * used includes it. */
struct tele_nvml_mem_v2 {
    unsigned int version; /* TELE_NVML_MEM_V2_VERSION */
    unsigned long long total, reserved, free, used;
};
#define TELE_NVML_MEM_V2_VERSION ((unsigned)sizeof(struct tele_nvml_mem_v2) | (2u << 24))

struct tele_nvml_util { /* nvmlUtilization_t, percent */
    unsigned int gpu, memory;
};

struct tele_nvml_pci_info { /* nvmlPciInfo_t (the _v2/_v3 calls) */
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32]; /* "00000000:18:00.0" */
};

/* nvmlProcessInfo_v1_t / _v2_t. The _v3 call writes the v2 layout on current drivers, but
 * drivers built from the CUDA 12.2 header (535 series) append usedGpuCcProtectedMemory; the
 * entry stride is picked at load time (nvitop's probe, nvitop/api/libnvml.py). */
struct tele_nvml_proc_v1 {
    unsigned int pid;
    unsigned long long used_gpu_memory; /* bytes, or TELE_NVML_VALUE_NOT_AVAILABLE */
};
struct tele_nvml_proc_v2 {
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
};
struct tele_nvml_proc_v3_cc {
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
    unsigned long long used_gpu_cc_protected_memory;
};

struct tele_nvml_event_data { /* nvmlEventData_t */
    tele_nvml_device_t device;
    unsigned long long event_type;
    unsigned long long event_data; /* the Xid for an Xid event */
    unsigned int gpu_instance_id, compute_instance_id;
};

/* The sizes nvml.h gives these on LP64: a wrong field would shift every one after it. */
_Static_assert(sizeof(struct tele_nvml_mem_v2) == 40, "nvmlMemory_v2_t");
_Static_assert(sizeof(struct tele_nvml_pci_info) == 68, "nvmlPciInfo_t");
_Static_assert(sizeof(struct tele_nvml_proc_v1) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(struct tele_nvml_proc_v2) == 24, "nvmlProcessInfo_v2_t");
_Static_assert(sizeof(struct tele_nvml_proc_v3_cc) == 32, "nvmlProcessInfo_t (12.2)");
_Static_assert(sizeof(struct tele_nvml_event_data) == 32, "nvmlEventData_t");

/* ---- the entry points, resolved with dlsym (NULL when the library lacks them) ---- */
struct tele_nvml_fns {
    int (*init)(void);
    int (*shutdown)(void);
    const char *(*error_string)(int rc);
    int (*get_count)(unsigned int *n);
    int (*get_handle)(unsigned int i, tele_nvml_device_t *dev);
    int (*get_name)(tele_nvml_device_t dev, char *name, unsigned int len);
    int (*get_cuda_cc)(tele_nvml_device_t dev, int *major, int *minor);
    int (*get_pci)(tele_nvml_device_t dev, struct tele_nvml_pci_info *pci);
    int (*get_mem_v2)(tele_nvml_device_t dev, struct tele_nvml_mem_v2 *mem);
    int (*get_mem_v1)(tele_nvml_device_t dev, struct tele_nvml_mem_v1 *mem);
    int (*get_util)(tele_nvml_device_t dev, struct tele_nvml_util *u);
    int (*get_temp)(tele_nvml_device_t dev, int sensor, unsigned int *c);
    int (*get_power)(tele_nvml_device_t dev, unsigned int *mw);
    int (*get_power_limit)(tele_nvml_device_t dev, unsigned int *mw);
    int (*get_clock)(tele_nvml_device_t dev, int type, unsigned int *mhz);
    int (*get_fan)(tele_nvml_device_t dev, unsigned int *pct);
    int (*get_link_gen)(tele_nvml_device_t dev, unsigned int *gen);
    int (*get_link_width)(tele_nvml_device_t dev, unsigned int *lanes);
    int (*get_pcie_tput)(tele_nvml_device_t dev, int counter, unsigned int *kb_per_s);
    int (*get_ecc)(tele_nvml_device_t dev, int type, int counter, unsigned long long *n);
    /* nvmlDeviceGetComputeRunningProcesses: entries of proc_stride bytes */
    int (*get_procs)(tele_nvml_device_t dev, unsigned int *count, void *infos);
    int (*event_set_create)(tele_nvml_event_set_t *set);
    int (*register_events)(tele_nvml_device_t dev, unsigned long long types,
                           tele_nvml_event_set_t set);
    int (*event_set_wait)(tele_nvml_event_set_t set, struct tele_nvml_event_data *d,
                          unsigned int timeout_ms);
    int (*event_set_free)(tele_nvml_event_set_t set);
    size_t proc_stride; /* sizeof the process entry the loaded get_procs writes */
};

/* ---- the provider's state ---- */

/* One GPU: identity read once at open; the PCIe rates come from the background thread. */
/* How often the slow calls run (the process list, ECC): every sample reports their latest. */
#define TELE_NVML_SLOW_NS 2000000000ull

struct tele_nvml_dev {
    tele_nvml_device_t h;
    char pci[16];
    char name[TELE_NVML_NAME_BYTES], arch[24];
    bool mem_v1_only; /* the _v2 memory call failed once: reserved is not known */
    /* NOT_SUPPORTED once means never: a failing call can cost 170 us (the fan on an H100) */
    bool no_fan, no_ecc;
    unsigned char *procs; /* get_procs buffer, grown on demand */
    unsigned int procs_cap;
    /* The slow calls (the process list, the ECC counters: most of a sample's time) at their own
     * cadence: their last answers, copied into every sample until the next time. */
    struct tele_gpu slow;
    uint64_t slow_ns; /* when slow was read (mono_now_ns); 0: never */
    /* guarded by tele_nvml.w.mu */
    unsigned int tx_kb_per_s, rx_kb_per_s;
    bool tx_valid, rx_valid;
    unsigned int link_gen, link_width; /* read beside the rates: the width call takes 30 us */
    bool link_gen_valid, link_width_valid;
};

struct tele_nvml {
    void *lib;
    struct tele_nvml_fns fn;
    const struct tele_ctx *ctx;
    struct tele_nvml_dev devs[TELE_MAX_GPUS];
    unsigned int n_devs;
    tele_nvml_event_set_t events; /* NULL: no Xid events on this system */
    struct worker w;              /* the event thread; its mutex also guards the cached rates */
};

/* tele_nvml_sample.c: fill g from device d (every call that fails leaves its field unset). */
void tele_nvml_sample_dev(struct tele_nvml *s, struct tele_nvml_dev *d, struct tele_gpu *g);

/* tele_nvml_events.c: register for Xid events and start the background thread that waits for
 * them and refreshes the PCIe rates (which NVML measures over 20 ms per call). 0 or -errno. */
int tele_nvml_events_start(struct tele_nvml *s);
/* Stop and join the thread, free the event set and the worker (once, from free; safe when
 * start failed or was not called). */
void tele_nvml_events_stop(struct tele_nvml *s);
/* Read the PCIe rates of every GPU into the cache (also called once at open). */
void tele_nvml_events_read_pcie(struct tele_nvml *s);
/* "NVIDIA Xid 79: GPU has fallen off the bus" (the meaning left out when not in the table). */
void tele_nvml_events_xid_text(unsigned long long xid, char *out, size_t cap);

#endif
