// The runtime half of rs_gpu.h: devices, memory, streams, events, copies, errors and the
// memory probe, over HIP (or CUDA through gpu_runtime.h).
#include "gpu_runtime.h"
#include "rs_gpu.h"

#include <stdio.h>
#include <string.h>

#ifndef RS_GPU_ARCHS
#define RS_GPU_ARCHS "unknown"
#endif

extern "C" {

enum rs_gpu_err_kind rs_gpu_err_kind(int err) {
    switch ((hipError_t)err) {
    case hipSuccess:
        return RS_GPU_ERR_NONE;
    case hipErrorNoDevice:
    case hipErrorInsufficientDriver:
        return RS_GPU_ERR_NO_DEVICE;
    case hipErrorNoBinaryForGpu:
        return RS_GPU_ERR_NO_BINARY;
    case hipErrorOutOfMemory:
        return RS_GPU_ERR_OOM;
    case hipErrorNotReady:
        return RS_GPU_ERR_NOT_READY;
    default:
        return RS_GPU_ERR_OTHER;
    }
}

const char *rs_gpu_err_name(int err) {
    return hipGetErrorName((hipError_t)err);
}

const char *rs_gpu_err_string(int err) {
    return hipGetErrorString((hipError_t)err);
}

/* HIP numbers versions major * 10^7 + minor * 10^5 + patch, CUDA major * 1000 + minor * 10. */
static void rs_gpu_version_text(int v, char *out, size_t len) {
    if (v <= 0)
        snprintf(out, len, "unknown");
#if defined(RS_GPU_AMD)
    else if (v >= 10000000)
        snprintf(out, len, "%d.%d.%d", v / 10000000, v / 100000 % 100, v % 100000);
#endif
    else
        snprintf(out, len, "%d.%d", v / 1000, v % 1000 / 10);
}

void rs_gpu_runtime_get(struct rs_gpu_runtime *out) {
    out->platform = RS_GPU_PLATFORM;
    out->built_archs = RS_GPU_ARCHS;
    out->runtime_version = 0;
    out->driver_version = 0;
    if (hipRuntimeGetVersion(&out->runtime_version) != hipSuccess)
        out->runtime_version = 0;
    if (hipDriverGetVersion(&out->driver_version) != hipSuccess)
        out->driver_version = 0;
    rs_gpu_version_text(out->runtime_version, out->runtime_text, sizeof(out->runtime_text));
    rs_gpu_version_text(out->driver_version, out->driver_text, sizeof(out->driver_text));
    if (out->driver_version == 0)
        snprintf(out->driver_text, sizeof(out->driver_text), "none found");
}

int rs_gpu_device_count(int *n) {
    *n = 0;
    hipError_t e = hipGetDeviceCount(n);
    if (e != hipSuccess)
        *n = 0;
    return (int)e;
}

int rs_gpu_device_get(int dev, struct rs_gpu_device *out) {
    hipDeviceProp_t p;
    memset(out, 0, sizeof(*out));
    hipError_t e = hipGetDeviceProperties(&p, dev);
    if (e != hipSuccess)
        return (int)e;
    snprintf(out->name, sizeof(out->name), "%.95s", p.name);
#if defined(RS_GPU_AMD)
    /* "gfx90a:sramecc+:xnack-": the arch is the part before the first feature flag. */
    snprintf(out->arch, sizeof(out->arch), "%.31s", p.gcnArchName);
    out->arch[strcspn(out->arch, ":")] = '\0';
#else
    snprintf(out->arch, sizeof(out->arch), "sm_%u%u", (unsigned)p.major % 100u,
             (unsigned)p.minor % 10u);
#endif
    out->mem_total_bytes = (uint64_t)p.totalGlobalMem;
    out->multiprocessors = p.multiProcessorCount;
    if (hipDeviceGetPCIBusId(out->pci_bus_id, (int)sizeof(out->pci_bus_id), dev) != hipSuccess)
        snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%04x:%02x:%02x.0",
                 (unsigned)p.pciDomainID & 0xffffu, (unsigned)p.pciBusID & 0xffu,
                 (unsigned)p.pciDeviceID & 0x1fu);
    for (char *c = out->pci_bus_id; *c; c++) /* CUDA spells it in upper case */
        if (*c >= 'A' && *c <= 'F')
            *c = (char)(*c - 'A' + 'a');
    return 0;
}

int rs_gpu_set_device(int dev) {
    return (int)hipSetDevice(dev);
}

int rs_gpu_get_device(int *dev) {
    return (int)hipGetDevice(dev);
}

int rs_gpu_use_device(int dev) {
    int cur = -1;
    hipError_t e = hipGetDevice(&cur);
    if (e == hipSuccess && cur == dev)
        return 0;
    return (int)hipSetDevice(dev);
}

int rs_gpu_mem_info(uint64_t *free_bytes, uint64_t *total_bytes) {
    size_t f = 0, t = 0;
    hipError_t e = hipMemGetInfo(&f, &t);
    *free_bytes = f;
    *total_bytes = t;
    return (int)e;
}

int rs_gpu_peer_access(int dev, int peer, int *can) {
    *can = 0;
    hipError_t e = hipDeviceCanAccessPeer(can, dev, peer);
    if (e != hipSuccess) {
        *can = 0;
        (void)hipGetLastError(); /* a refused query leaves no error behind */
    }
    return (int)e;
}

__global__ void rs_gpu_hello_kernel(int *out) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *out = 42;
}

int rs_gpu_check_kernels(void) {
    int *d = NULL;
    hipError_t e = hipMalloc((void **)&d, sizeof(int));
    if (e != hipSuccess)
        return (int)e;
    RS_LAUNCH(rs_gpu_hello_kernel, 1, 32, 0, 0, d);
    e = hipGetLastError();
    hipError_t s = hipDeviceSynchronize();
    if (e == hipSuccess)
        e = s;
    (void)hipFree(d);
    return (int)e;
}

int rs_gpu_malloc(void **p, size_t bytes) {
    hipError_t e = hipMalloc(p, bytes);
    if (e != hipSuccess) {
        *p = NULL;
        (void)hipGetLastError(); /* an allocation failure is not sticky: clear it */
    }
    return (int)e;
}

int rs_gpu_free(void *p) {
    return (int)hipFree(p);
}

int rs_gpu_host_alloc(void **p, size_t bytes) {
    hipError_t e = hipHostMalloc(p, bytes, hipHostMallocMapped | hipHostMallocPortable);
    if (e != hipSuccess) {
        *p = NULL;
        (void)hipGetLastError();
    }
    return (int)e;
}

int rs_gpu_host_free(void *p) {
    return (int)hipHostFree(p);
}

int rs_gpu_stream_create(void **stream) {
    hipStream_t s = NULL;
    hipError_t e = hipStreamCreateWithFlags(&s, hipStreamNonBlocking);
    *stream = (void *)s;
    return (int)e;
}

int rs_gpu_stream_destroy(void *stream) {
    return (int)hipStreamDestroy((hipStream_t)stream);
}

int rs_gpu_stream_sync(void *stream) {
    return (int)hipStreamSynchronize((hipStream_t)stream);
}

int rs_gpu_stream_query(void *stream) {
    return (int)hipStreamQuery((hipStream_t)stream);
}

int rs_gpu_device_sync(void) {
    return (int)hipDeviceSynchronize();
}

int rs_gpu_event_create(void **event) {
    hipEvent_t ev = NULL;
    hipError_t e = hipEventCreateWithFlags(&ev, hipEventDefault);
    *event = (void *)ev;
    return (int)e;
}

int rs_gpu_event_create_untimed(void **event) {
    hipEvent_t ev = NULL;
    hipError_t e = hipEventCreateWithFlags(&ev, hipEventDisableTiming);
    *event = (void *)ev;
    return (int)e;
}

int rs_gpu_event_query(void *event) {
    return (int)hipEventQuery((hipEvent_t)event);
}

int rs_gpu_event_destroy(void *event) {
    return (int)hipEventDestroy((hipEvent_t)event);
}

int rs_gpu_event_record(void *event, void *stream) {
    return (int)hipEventRecord((hipEvent_t)event, (hipStream_t)stream);
}

int rs_gpu_event_elapsed_ms(void *a, void *b, float *ms) {
    return (int)hipEventElapsedTime(ms, (hipEvent_t)a, (hipEvent_t)b);
}

int rs_gpu_copy_h2d(void *dst, const void *src, size_t bytes, void *stream) {
    return (int)hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, (hipStream_t)stream);
}

int rs_gpu_copy_d2h(void *dst, const void *src, size_t bytes, void *stream) {
    return (int)hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToHost, (hipStream_t)stream);
}

int rs_gpu_copy_d2d(void *dst, const void *src, size_t bytes, void *stream) {
    return (int)hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, (hipStream_t)stream);
}

int rs_gpu_memset0(void *dst, size_t bytes, void *stream) {
    return (int)hipMemsetAsync(dst, 0, bytes, (hipStream_t)stream);
}

int rs_gpu_last_error(void) {
    return (int)hipGetLastError();
}

int rs_gpu_probe_largest(uint64_t lo, uint64_t hi, uint64_t resolution, uint64_t *largest,
                         int *tries) {
    uint64_t ok = 0;
    *tries = 0;
    if (resolution == 0)
        resolution = 1;
    /* Invariant: ok fits (or is 0), hi + 1 does not; each try halves the gap. */
    while (lo <= hi && hi - lo >= resolution && *tries < 40) {
        uint64_t mid = lo + (hi - lo) / 2;
        void *p = NULL;
        ++*tries;
        if (rs_gpu_malloc(&p, (size_t)mid) == 0) {
            (void)hipFree(p);
            ok = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (ok == 0 && lo <= hi && *tries < 40) { /* the smallest size asked for */
        void *p = NULL;
        ++*tries;
        if (rs_gpu_malloc(&p, (size_t)lo) == 0) {
            (void)hipFree(p);
            ok = lo;
        }
    }
    *largest = ok;
    return (int)hipGetLastError();
}

} // extern "C"
