/* A stand-in for libnvidia-ml.so.1 with two fixed GPUs, so the NVML provider can be tested on
 * machines without the NVIDIA driver. Layouts, codes and semantics follow nvml.h (CUDA 12);
 * the environment selects the paths a test wants:
 *   FAKE_NVML_INIT_FAIL=1  nvmlInit_v2 answers NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_NO_V2=1      nvmlDeviceGetMemoryInfo_v2 answers NVML_ERROR_NOT_SUPPORTED
 *   FAKE_NVML_GPUS=N       only the first N GPUs are listed
 *   FAKE_NVML_XID=79       the first nvmlEventSetWait_v2 returns that Xid for GPU 1
 *   FAKE_NVML_NO_EVENTS=1  nvmlDeviceRegisterEvents answers NVML_ERROR_NOT_SUPPORTED
 *   FAKE_NVML_PROCS=N      GPU 0 runs N processes (pid 10000 + i, i + 1 MiB each) */
#include "tests/fakes/fake_nvml.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* nvmlReturn_t values */
#define FAKE_NVML_SUCCESS                 0
#define FAKE_NVML_ERROR_INVALID_ARGUMENT  2
#define FAKE_NVML_ERROR_NOT_SUPPORTED     3
#define FAKE_NVML_ERROR_INSUFFICIENT_SIZE 7
#define FAKE_NVML_ERROR_DRIVER_NOT_LOADED 9
#define FAKE_NVML_ERROR_TIMEOUT           10
#define FAKE_NVML_ERROR_UNINITIALIZED     1
#define FAKE_NVML_ERROR_VERSION_MISMATCH  25
#define FAKE_NVML_NOT_AVAILABLE           (~0ull)
#define FAKE_NVML_XID_EVENT               0x8ull

struct fake_nvml_memory { /* nvmlMemory_t */
    unsigned long long total, free, used;
};
struct fake_nvml_memory_v2 { /* nvmlMemory_v2_t */
    unsigned int version;
    unsigned long long total, reserved, free, used;
};
struct fake_nvml_utilization { /* nvmlUtilization_t */
    unsigned int gpu, memory;
};
struct fake_nvml_pci_info { /* nvmlPciInfo_t */
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
};
struct fake_nvml_process_info { /* nvmlProcessInfo_t as the _v3 call writes it */
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
};
struct fake_nvml_event_data { /* nvmlEventData_t */
    void *device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
};

#define FAKE_NVML_MIB       1048576ull
#define FAKE_NVML_MAX_PROCS 64

/* The numbers the tests check against, chosen so no two fields share a value. */
struct fake_nvml_gpu {
    const char *name, *bus_id;
    int cc_major, cc_minor;
    unsigned long long total, reserved, used; /* v2 meaning: used excludes reserved */
    unsigned int util_gpu, util_mem, temp_c, power_mw, limit_mw, gfx_mhz, sm_mhz, mem_mhz;
    int fan_pct; /* -1: no fan (NOT_SUPPORTED) */
    unsigned int link_gen, link_width, tx_kbs, rx_kbs;
    long long ecc_ce, ecc_ue; /* -1: ECC off (NOT_SUPPORTED) */
    int n_procs;
    struct fake_nvml_process_info procs[3];
};

static const struct fake_nvml_gpu fake_nvml_gpus[2] = {
    {
        .name = "NVIDIA H100 80GB HBM3",
        .bus_id = "00000000:18:00.0",
        .cc_major = 9,
        .cc_minor = 0,
        .total = 81559 * FAKE_NVML_MIB,
        .reserved = 551 * FAKE_NVML_MIB,
        .used = 12288 * FAKE_NVML_MIB,
        .util_gpu = 87,
        .util_mem = 41,
        .temp_c = 54,
        .power_mw = 312456,
        .limit_mw = 700000,
        .gfx_mhz = 1755,
        .sm_mhz = 1980,
        .mem_mhz = 2619,
        .fan_pct = -1,
        .link_gen = 5,
        .link_width = 16,
        .tx_kbs = 1234,
        .rx_kbs = 56789,
        .ecc_ce = 17,
        .ecc_ue = 1,
        .n_procs = 3,
        .procs = {{4242, 8192 * FAKE_NVML_MIB, ~0u, ~0u},
                  {4243, 3072 * FAKE_NVML_MIB, ~0u, ~0u},
                  {4250, FAKE_NVML_NOT_AVAILABLE, ~0u, ~0u}},
    },
    {
        .name = "NVIDIA RTX 6000 Ada Generation",
        .bus_id = "00000000:2A:00.0",
        .cc_major = 8,
        .cc_minor = 9,
        .total = 49140 * FAKE_NVML_MIB,
        .reserved = 450 * FAKE_NVML_MIB,
        .used = 1024 * FAKE_NVML_MIB,
        .util_gpu = 3,
        .util_mem = 1,
        .temp_c = 38,
        .power_mw = 29870,
        .limit_mw = 300000,
        .gfx_mhz = 195,
        .sm_mhz = 210,
        .mem_mhz = 405,
        .fan_pct = 30,
        .link_gen = 1,
        .link_width = 8,
        .tx_kbs = 3,
        .rx_kbs = 12,
        .ecc_ce = -1,
        .ecc_ue = -1,
        .n_procs = 0,
    },
};

static pthread_mutex_t fake_nvml_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_nvml_cv = PTHREAD_COND_INITIALIZER;
static struct fake_nvml_counts fake_nvml_n;
static int fake_nvml_event_set_obj;
static int fake_nvml_xid_sent;

/* The NVML entry points it exports (declared for -Wmissing-prototypes). */
int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int rc);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
int nvmlDeviceGetName(void *dev, char *name, unsigned int len);
int nvmlDeviceGetCudaComputeCapability(void *dev, int *major, int *minor);
int nvmlDeviceGetPciInfo_v3(void *dev, struct fake_nvml_pci_info *pci);
int nvmlDeviceGetMemoryInfo(void *dev, struct fake_nvml_memory *m);
int nvmlDeviceGetMemoryInfo_v2(void *dev, struct fake_nvml_memory_v2 *m);
int nvmlDeviceGetUtilizationRates(void *dev, struct fake_nvml_utilization *u);
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *c);
int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw);
int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned int *mw);
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz);
int nvmlDeviceGetFanSpeed(void *dev, unsigned int *pct);
int nvmlDeviceGetCurrPcieLinkGeneration(void *dev, unsigned int *gen);
int nvmlDeviceGetCurrPcieLinkWidth(void *dev, unsigned int *width);
int nvmlDeviceGetPcieThroughput(void *dev, int counter, unsigned int *kbs);
int nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *n);
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count,
                                            struct fake_nvml_process_info *infos);
int nvmlEventSetCreate(void **set);
int nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set);
int nvmlEventSetWait_v2(void *set, struct fake_nvml_event_data *d, unsigned int timeout_ms);
int nvmlEventSetFree(void *set);

static int fake_nvml_env(const char *name) {
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}

static int fake_nvml_count(void) {
    const char *v = getenv("FAKE_NVML_GPUS");
    int n = v ? atoi(v) : 2;
    return n < 0 ? 0 : n > 2 ? 2 : n;
}

/* The handle is the address of the GPU's entry; anything else is an invalid argument. */
static const struct fake_nvml_gpu *fake_nvml_dev(void *dev) {
    for (int i = 0; i < 2; i++)
        if (dev == (const void *)&fake_nvml_gpus[i])
            return &fake_nvml_gpus[i];
    return NULL;
}

void fake_nvml_get_counts(struct fake_nvml_counts *out) {
    pthread_mutex_lock(&fake_nvml_mu);
    *out = fake_nvml_n;
    pthread_mutex_unlock(&fake_nvml_mu);
}

int nvmlInit_v2(void) {
    if (fake_nvml_env("FAKE_NVML_INIT_FAIL"))
        return FAKE_NVML_ERROR_DRIVER_NOT_LOADED;
    pthread_mutex_lock(&fake_nvml_mu);
    fake_nvml_n.inits++;
    pthread_mutex_unlock(&fake_nvml_mu);
    return FAKE_NVML_SUCCESS;
}

int nvmlShutdown(void) {
    pthread_mutex_lock(&fake_nvml_mu);
    int rc = fake_nvml_n.inits > 0 ? FAKE_NVML_SUCCESS : FAKE_NVML_ERROR_UNINITIALIZED;
    if (fake_nvml_n.inits > 0)
        fake_nvml_n.inits--;
    pthread_mutex_unlock(&fake_nvml_mu);
    return rc;
}

/* The strings the real library returns for these codes. */
const char *nvmlErrorString(int rc) {
    switch (rc) {
    case FAKE_NVML_SUCCESS:
        return "Success";
    case FAKE_NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case FAKE_NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case FAKE_NVML_ERROR_TIMEOUT:
        return "Timeout";
    default:
        return "Unknown Error";
    }
}

int nvmlDeviceGetCount_v2(unsigned int *n) {
    *n = (unsigned int)fake_nvml_count();
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev) {
    if (i >= (unsigned int)fake_nvml_count())
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *dev = (void *)&fake_nvml_gpus[i];
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetName(void *dev, char *name, unsigned int len) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g || len <= strlen(g->name))
        return g ? FAKE_NVML_ERROR_INSUFFICIENT_SIZE : FAKE_NVML_ERROR_INVALID_ARGUMENT;
    strcpy(name, g->name);
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetCudaComputeCapability(void *dev, int *major, int *minor) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *major = g->cc_major;
    *minor = g->cc_minor;
    return FAKE_NVML_SUCCESS;
}

/* Bus numbers are parsed back out of the fixed busId so the two spellings agree. */
int nvmlDeviceGetPciInfo_v3(void *dev, struct fake_nvml_pci_info *pci) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof(*pci));
    strcpy(pci->busId, g->bus_id);
    memcpy(pci->busIdLegacy, g->bus_id + 4, 12); /* "0000:18:00.0" */
    pci->bus = (unsigned int)strtoul(g->bus_id + 9, NULL, 16);
    pci->pciDeviceId = g == &fake_nvml_gpus[0] ? 0x233010deu : 0x26b110deu;
    return FAKE_NVML_SUCCESS;
}

/* v1 "used" includes what v2 reports separately as reserved. */
int nvmlDeviceGetMemoryInfo(void *dev, struct fake_nvml_memory *m) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    m->total = g->total;
    m->used = g->used + g->reserved;
    m->free = g->total - m->used;
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo_v2(void *dev, struct fake_nvml_memory_v2 *m) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_nvml_mu);
    fake_nvml_n.mem_v2_calls++;
    pthread_mutex_unlock(&fake_nvml_mu);
    if (fake_nvml_env("FAKE_NVML_NO_V2"))
        return FAKE_NVML_ERROR_NOT_SUPPORTED;
    if (m->version != ((unsigned int)sizeof(*m) | (2u << 24)))
        return FAKE_NVML_ERROR_VERSION_MISMATCH;
    m->total = g->total;
    m->reserved = g->reserved;
    m->used = g->used;
    m->free = g->total - g->reserved - g->used;
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetUtilizationRates(void *dev, struct fake_nvml_utilization *u) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    u->gpu = g->util_gpu;
    u->memory = g->util_mem;
    return FAKE_NVML_SUCCESS;
}

/* Only NVML_TEMPERATURE_GPU (0) exists. */
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *c) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g || sensor != 0)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *c = g->temp_c;
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *mw = g->power_mw;
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned int *mw) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *mw = g->limit_mw;
    return FAKE_NVML_SUCCESS;
}

/* NVML_CLOCK_GRAPHICS 0, SM 1, MEM 2. Real parts run graphics and SM at one clock; the fake
 * keeps them apart so a client asking for the wrong one is caught. */
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g || type < 0 || type > 2)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *mhz = type == 2 ? g->mem_mhz : type == 1 ? g->sm_mhz : g->gfx_mhz;
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetFanSpeed(void *dev, unsigned int *pct) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    if (g->fan_pct < 0)
        return FAKE_NVML_ERROR_NOT_SUPPORTED;
    *pct = (unsigned int)g->fan_pct;
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetCurrPcieLinkGeneration(void *dev, unsigned int *gen) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *gen = g->link_gen;
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceGetCurrPcieLinkWidth(void *dev, unsigned int *width) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *width = g->link_width;
    return FAKE_NVML_SUCCESS;
}

/* NVML_PCIE_UTIL_TX_BYTES 0, RX_BYTES 1, in KB/s. */
int nvmlDeviceGetPcieThroughput(void *dev, int counter, unsigned int *kbs) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g || counter < 0 || counter > 1)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    *kbs = counter == 0 ? g->tx_kbs : g->rx_kbs;
    return FAKE_NVML_SUCCESS;
}

/* type: NVML_MEMORY_ERROR_TYPE_CORRECTED 0 / UNCORRECTED 1; counter: NVML_VOLATILE_ECC 0. */
int nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *n) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g || type < 0 || type > 1 || counter != 0)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    long long v = type == 0 ? g->ecc_ce : g->ecc_ue;
    if (v < 0)
        return FAKE_NVML_ERROR_NOT_SUPPORTED;
    *n = (unsigned long long)v;
    return FAKE_NVML_SUCCESS;
}

static int fake_nvml_procs(const struct fake_nvml_gpu *g, struct fake_nvml_process_info *out) {
    int many = g == &fake_nvml_gpus[0] ? fake_nvml_env("FAKE_NVML_PROCS") : 0;
    if (many <= 0) {
        memcpy(out, g->procs, sizeof(g->procs));
        return g->n_procs;
    }
    many = many > FAKE_NVML_MAX_PROCS ? FAKE_NVML_MAX_PROCS : many;
    for (int i = 0; i < many; i++)
        out[i] = (struct fake_nvml_process_info){
            (unsigned int)(10000 + i), (unsigned long long)(i + 1) * FAKE_NVML_MIB, ~0u, ~0u};
    return many;
}

/* NVML's contract: *count in = room, out = entries; too little room answers INSUFFICIENT_SIZE
 * with the number needed and writes nothing. */
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count,
                                            struct fake_nvml_process_info *infos) {
    const struct fake_nvml_gpu *g = fake_nvml_dev(dev);
    if (!g || !count)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    struct fake_nvml_process_info all[FAKE_NVML_MAX_PROCS];
    unsigned int n = (unsigned int)fake_nvml_procs(g, all);
    if (*count < n || (n > 0 && !infos)) {
        *count = n;
        return FAKE_NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0)
        memcpy(infos, all, n * sizeof(all[0]));
    *count = n;
    return FAKE_NVML_SUCCESS;
}

int nvmlEventSetCreate(void **set) {
    pthread_mutex_lock(&fake_nvml_mu);
    fake_nvml_n.event_sets++;
    pthread_mutex_unlock(&fake_nvml_mu);
    *set = &fake_nvml_event_set_obj;
    return FAKE_NVML_SUCCESS;
}

int nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set) {
    if (!fake_nvml_dev(dev) || set != &fake_nvml_event_set_obj)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    if (fake_nvml_env("FAKE_NVML_NO_EVENTS") || !(types & FAKE_NVML_XID_EVENT))
        return FAKE_NVML_ERROR_NOT_SUPPORTED;
    return FAKE_NVML_SUCCESS;
}

int nvmlEventSetFree(void *set) {
    if (set != &fake_nvml_event_set_obj)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_nvml_mu);
    fake_nvml_n.event_sets--;
    pthread_mutex_unlock(&fake_nvml_mu);
    return FAKE_NVML_SUCCESS;
}

/* The first wait delivers FAKE_NVML_XID (when set); the others time out after the caller's
 * timeout capped at 10 ms, so a client's close never waits long on the fake. */
int nvmlEventSetWait_v2(void *set, struct fake_nvml_event_data *d, unsigned int timeout_ms) {
    if (set != &fake_nvml_event_set_obj || !d)
        return FAKE_NVML_ERROR_INVALID_ARGUMENT;
    int xid = fake_nvml_env("FAKE_NVML_XID");
    pthread_mutex_lock(&fake_nvml_mu);
    fake_nvml_n.waits++;
    if (xid > 0 && !fake_nvml_xid_sent) {
        fake_nvml_xid_sent = 1;
        pthread_mutex_unlock(&fake_nvml_mu);
        *d = (struct fake_nvml_event_data){(void *)&fake_nvml_gpus[1], FAKE_NVML_XID_EVENT,
                                           (unsigned long long)xid, ~0u, ~0u};
        return FAKE_NVML_SUCCESS;
    }
    fake_nvml_n.waiting++;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long ns = until.tv_nsec + (long long)(timeout_ms < 10 ? timeout_ms : 10) * 1000000;
    until.tv_sec += (time_t)(ns / 1000000000);
    until.tv_nsec = (long)(ns % 1000000000);
    while (pthread_cond_timedwait(&fake_nvml_cv, &fake_nvml_mu, &until) != ETIMEDOUT)
        ;
    fake_nvml_n.waiting--;
    pthread_mutex_unlock(&fake_nvml_mu);
    return FAKE_NVML_ERROR_TIMEOUT;
}
