/* The NVML telemetry provider: loads libnvidia-ml at run time (so one binary runs on machines
 * without the NVIDIA driver), finds the GPUs once and samples them every interval. */
#include "backend/telemetry/tele_nvml_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TELE_NVML_DEFAULT_LIB "libnvidia-ml.so.1"

/* One entry point: the member it fills and its names, newest ABI first (nvtop's fallbacks,
 * extract_gpuinfo_nvidia.c). Only the five needed to list GPUs are required. */
struct tele_nvml_sym {
    size_t off;
    bool required;
    const char *names[3];
};

#define TELE_NVML_FN(m) offsetof(struct tele_nvml_fns, m)

static const struct tele_nvml_sym tele_nvml_syms[] = {
    {TELE_NVML_FN(init), true, {"nvmlInit_v2", "nvmlInit"}},
    {TELE_NVML_FN(shutdown), true, {"nvmlShutdown"}},
    {TELE_NVML_FN(error_string), true, {"nvmlErrorString"}},
    {TELE_NVML_FN(get_count), true, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}},
    {TELE_NVML_FN(get_handle),
     true,
     {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}},
    {TELE_NVML_FN(get_name), false, {"nvmlDeviceGetName"}},
    {TELE_NVML_FN(get_cuda_cc), false, {"nvmlDeviceGetCudaComputeCapability"}},
    {TELE_NVML_FN(get_pci), false, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}},
    {TELE_NVML_FN(get_mem_v2), false, {"nvmlDeviceGetMemoryInfo_v2"}},
    {TELE_NVML_FN(get_mem_v1), false, {"nvmlDeviceGetMemoryInfo"}},
    {TELE_NVML_FN(get_util), false, {"nvmlDeviceGetUtilizationRates"}},
    {TELE_NVML_FN(get_temp), false, {"nvmlDeviceGetTemperature"}},
    {TELE_NVML_FN(get_power), false, {"nvmlDeviceGetPowerUsage"}},
    {TELE_NVML_FN(get_power_limit), false, {"nvmlDeviceGetEnforcedPowerLimit"}},
    {TELE_NVML_FN(get_clock), false, {"nvmlDeviceGetClockInfo"}},
    {TELE_NVML_FN(get_fan), false, {"nvmlDeviceGetFanSpeed"}},
    {TELE_NVML_FN(get_link_gen), false, {"nvmlDeviceGetCurrPcieLinkGeneration"}},
    {TELE_NVML_FN(get_link_width), false, {"nvmlDeviceGetCurrPcieLinkWidth"}},
    {TELE_NVML_FN(get_pcie_tput), false, {"nvmlDeviceGetPcieThroughput"}},
    {TELE_NVML_FN(get_ecc), false, {"nvmlDeviceGetTotalEccErrors"}},
    {TELE_NVML_FN(event_set_create), false, {"nvmlEventSetCreate"}},
    {TELE_NVML_FN(register_events), false, {"nvmlDeviceRegisterEvents"}},
    {TELE_NVML_FN(event_set_wait), false, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}},
    {TELE_NVML_FN(event_set_free), false, {"nvmlEventSetFree"}},
};

/* The table stores dlsym's void * into function-pointer members (POSIX guarantees the sizes). */
_Static_assert(sizeof(int (*)(void)) == sizeof(void *), "function pointers fit void *");

static void *tele_nvml_lookup(void *lib, const char *const names[3]) {
    for (int i = 0; i < 3 && names[i]; i++) {
        void *p = dlsym(lib, names[i]);
        if (p)
            return p;
    }
    return NULL;
}

/* The process list's entry layout follows the newest call the library has; a _v3 from a
 * driver that has confidential-computing memory but not the process detail list (the 535
 * series) writes the 12.2 layout with usedGpuCcProtectedMemory (nvitop/api/libnvml.py). */
static void tele_nvml_load_procs(void *lib, struct tele_nvml_fns *fn) {
    void *p = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    fn->proc_stride = sizeof(struct tele_nvml_proc_v2);
    if (p && dlsym(lib, "nvmlDeviceGetConfComputeMemSizeInfo") &&
        !dlsym(lib, "nvmlDeviceGetRunningProcessDetailList"))
        fn->proc_stride = sizeof(struct tele_nvml_proc_v3_cc);
    if (!p)
        p = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
    if (!p) {
        p = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses");
        fn->proc_stride = sizeof(struct tele_nvml_proc_v1);
    }
    memcpy(&fn->get_procs, &p, sizeof(p));
}

static int tele_nvml_load(struct tele_nvml *s, const char *path, char *reason, size_t len) {
    s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!s->lib) {
        /* A library that exists but does not load (wrong architecture) says why. */
        if (strchr(path, '/') && access(path, F_OK) == 0)
            snprintf(reason, len, "cannot load %s: %s", path, dlerror());
        else
            snprintf(reason, len, "%s not found (no NVIDIA driver)", path);
        return -ENOENT;
    }
    for (size_t i = 0; i < sizeof(tele_nvml_syms) / sizeof(tele_nvml_syms[0]); i++) {
        const struct tele_nvml_sym *sym = &tele_nvml_syms[i];
        void *p = tele_nvml_lookup(s->lib, sym->names);
        if (!p && sym->required) {
            snprintf(reason, len, "%s lacks %s (driver too old?)", path, sym->names[0]);
            return -ENOSYS;
        }
        memcpy((char *)&s->fn + sym->off, &p, sizeof(p));
    }
    tele_nvml_load_procs(s->lib, &s->fn);
    return 0;
}

static int tele_nvml_errno(int rc) {
    switch (rc) {
    case TELE_NVML_ERROR_DRIVER_NOT_LOADED:
        return -ENODEV;
    case TELE_NVML_ERROR_NO_PERMISSION:
        return -EACCES;
    case TELE_NVML_ERROR_LIBRARY_NOT_FOUND:
        return -ENOENT;
    default:
        return -EIO;
    }
}

static int tele_nvml_fail(const struct tele_nvml *s, const char *call, int rc, char *reason,
                          size_t len) {
    const char *text = s->fn.error_string(rc);
    snprintf(reason, len, "%s failed: %s", call, text ? text : "unknown error");
    return tele_nvml_errno(rc);
}

/* "00000000:18:00.0" -> "0000:18:00.0"; without a usable address the GPU cannot be merged
 * with what the other providers see, so it is left out. */
static bool tele_nvml_identify(const struct tele_nvml *s, struct tele_nvml_dev *d) {
    struct tele_nvml_pci_info pci;
    memset(&pci, 0, sizeof(pci));
    if (!s->fn.get_pci || s->fn.get_pci(d->h, &pci) != TELE_NVML_SUCCESS)
        return false;
    pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
    pci.bus_id_legacy[sizeof(pci.bus_id_legacy) - 1] = '\0';
    if (!tele_pci_norm(pci.bus_id, d->pci) && !tele_pci_norm(pci.bus_id_legacy, d->pci))
        return false;
    if (!s->fn.get_name || s->fn.get_name(d->h, d->name, sizeof(d->name)) != TELE_NVML_SUCCESS)
        d->name[0] = '\0';
    d->name[sizeof(d->name) - 1] = '\0';
    int major, minor;
    if (s->fn.get_cuda_cc && s->fn.get_cuda_cc(d->h, &major, &minor) == TELE_NVML_SUCCESS)
        snprintf(d->arch, sizeof(d->arch), "sm_%d%d", major, minor);
    return true;
}

static int tele_nvml_find(struct tele_nvml *s, char *reason, size_t len) {
    unsigned int n = 0;
    int rc = s->fn.get_count(&n);
    if (rc != TELE_NVML_SUCCESS)
        return tele_nvml_fail(s, "nvmlDeviceGetCount", rc, reason, len);
    for (unsigned int i = 0; i < n && s->n_devs < TELE_MAX_GPUS; i++) {
        struct tele_nvml_dev *d = &s->devs[s->n_devs];
        if (s->fn.get_handle(i, &d->h) == TELE_NVML_SUCCESS && tele_nvml_identify(s, d))
            s->n_devs++;
        else
            memset(d, 0, sizeof(*d));
    }
    if (s->n_devs == 0) {
        if (n == 0)
            snprintf(reason, len, "NVML lists no GPU");
        else
            snprintf(reason, len, "NVML lists %u GPU%s, none with a readable PCI address", n,
                     n == 1 ? "" : "s");
        return -ENODEV;
    }
    return 0;
}

/* Safe on a partly opened state: each step undoes only what was done. */
static void tele_nvml_free(struct tele_nvml *s, bool inited) {
    tele_nvml_events_stop(s);
    for (unsigned int i = 0; i < s->n_devs; i++)
        free(s->devs[i].procs);
    if (inited)
        s->fn.shutdown();
    if (s->lib)
        dlclose(s->lib);
    free(s);
}

static struct tele_nvml *tele_nvml_alloc(const struct tele_ctx *ctx) {
    struct tele_nvml *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->ctx = ctx;
    worker_init(&s->w);
    return s;
}

static int tele_nvml_open(const struct tele_ctx *ctx, void **state, char *reason,
                          size_t reasonlen) {
    struct tele_nvml *s = tele_nvml_alloc(ctx);
    if (!s) {
        snprintf(reason, reasonlen, "out of memory");
        return -ENOMEM;
    }
    const char *path = ctx->roots->nvml_lib[0] ? ctx->roots->nvml_lib : TELE_NVML_DEFAULT_LIB;
    int rc = tele_nvml_load(s, path, reason, reasonlen);
    if (rc < 0)
        goto fail;
    rc = s->fn.init();
    if (rc != TELE_NVML_SUCCESS) {
        rc = tele_nvml_fail(s, "nvmlInit", rc, reason, reasonlen);
        goto fail;
    }
    rc = tele_nvml_find(s, reason, reasonlen);
    if (rc == 0) {
        tele_nvml_events_read_pcie(s); /* so the first sample has the rates */
        rc = tele_nvml_events_start(s);
        if (rc < 0)
            snprintf(reason, reasonlen, "cannot start the NVML thread: %s", strerror(-rc));
    }
    if (rc < 0) {
        tele_nvml_free(s, true);
        return rc;
    }
    *state = s;
    return 0;
fail:
    tele_nvml_free(s, false);
    return rc;
}

static int tele_nvml_sample(void *state, struct tele_gpu *out, size_t cap, size_t *n, char *reason,
                            size_t reasonlen) {
    struct tele_nvml *s = state;
    size_t k = 0;
    for (unsigned int i = 0; i < s->n_devs && k < cap; i++)
        tele_nvml_sample_dev(s, &s->devs[i], &out[k++]);
    *n = k;
    return 0;
}

static void tele_nvml_close(void *state) {
    if (state)
        tele_nvml_free(state, true);
}

const struct tele_prov_ops tele_prov_nvml_ops = {
    .name = "nvml",
    .caps = TELE_CAP(MEMORY) | TELE_CAP(UTIL) | TELE_CAP(THERMAL) | TELE_CAP(POWER) |
            TELE_CAP(CLOCKS) | TELE_CAP(PCIE) | TELE_CAP(ECC) | TELE_CAP(PROCESSES) |
            TELE_CAP(EVENTS) | TELE_CAP(IDENTITY) | TELE_CAP(FANS),
    .open = tele_nvml_open,
    .sample = tele_nvml_sample,
    .close = tele_nvml_close,
};
