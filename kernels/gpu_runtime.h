/* The HIP API subset the kernels use, written once for both platforms: on AMD it is HIP itself;
 * on NVIDIA it is a thin mapping onto the CUDA runtime (HIP's own NVIDIA headers do not build
 * against current CUDA). Only what kernels/ calls is mapped; add names here as they are used. */
#ifndef RINGSIDE_KERNELS_GPU_RUNTIME_H
#define RINGSIDE_KERNELS_GPU_RUNTIME_H

#include <stdint.h>

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define RS_GPU_PLATFORM "HIP on AMD ROCm"
#define RS_GPU_AMD      1

#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#define RS_GPU_PLATFORM "HIP on NVIDIA CUDA"
#define RS_GPU_NVIDIA   1

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;

#define hipSuccess                       cudaSuccess
#define hipErrorNotReady                 cudaErrorNotReady
#define hipErrorNoDevice                 cudaErrorNoDevice
#define hipErrorInvalidDevice            cudaErrorInvalidDevice
#define hipErrorOutOfMemory              cudaErrorMemoryAllocation
#define hipErrorNoBinaryForGpu           cudaErrorNoKernelImageForDevice
#define hipErrorInvalidValue             cudaErrorInvalidValue
#define hipErrorNotSupported             cudaErrorNotSupported
#define hipErrorInsufficientDriver       cudaErrorInsufficientDriver
#define hipErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled

#define hipStreamNonBlocking    cudaStreamNonBlocking
#define hipEventDefault         cudaEventDefault
#define hipEventDisableTiming   cudaEventDisableTiming
#define hipHostMallocMapped     cudaHostAllocMapped
#define hipHostMallocPortable   cudaHostAllocPortable
#define hipMemcpyHostToDevice   cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost   cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice

#define hipGetErrorName                            cudaGetErrorName
#define hipGetErrorString                          cudaGetErrorString
#define hipGetLastError                            cudaGetLastError
#define hipPeekAtLastError                         cudaPeekAtLastError
#define hipGetDeviceCount                          cudaGetDeviceCount
#define hipGetDeviceProperties                     cudaGetDeviceProperties
#define hipSetDevice                               cudaSetDevice
#define hipGetDevice                               cudaGetDevice
#define hipDeviceGetPCIBusId                       cudaDeviceGetPCIBusId
#define hipDeviceCanAccessPeer                     cudaDeviceCanAccessPeer
#define hipDeviceEnablePeerAccess                  cudaDeviceEnablePeerAccess
#define hipDeviceSynchronize                       cudaDeviceSynchronize
#define hipRuntimeGetVersion                       cudaRuntimeGetVersion
#define hipDriverGetVersion                        cudaDriverGetVersion
#define hipMemGetInfo                              cudaMemGetInfo
#define hipMalloc                                  cudaMalloc
#define hipFree                                    cudaFree
#define hipHostMalloc                              cudaHostAlloc
#define hipHostFree                                cudaFreeHost
#define hipHostGetDevicePointer                    cudaHostGetDevicePointer
#define hipMemcpyAsync                             cudaMemcpyAsync
#define hipMemsetAsync                             cudaMemsetAsync
#define hipStreamCreateWithFlags                   cudaStreamCreateWithFlags
#define hipStreamDestroy                           cudaStreamDestroy
#define hipStreamSynchronize                       cudaStreamSynchronize
#define hipStreamQuery                             cudaStreamQuery
#define hipEventCreateWithFlags                    cudaEventCreateWithFlags
#define hipEventDestroy                            cudaEventDestroy
#define hipEventRecord                             cudaEventRecord
#define hipEventElapsedTime                        cudaEventElapsedTime
#define hipEventQuery                              cudaEventQuery
#define hipFuncSetAttribute                        cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

#else
#error "kernels/ is compiled by hipcc (AMD) or nvcc (NVIDIA)"
#endif

/* Launch a kernel on a stream: one spelling for both platforms. */
#define RS_LAUNCH(kernel, grid, block, shmem, stream, ...)                                         \
    kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)

/* Launch a kernel that may begin before the kernel queued just before it on the stream has
 * ended (NVIDIA's programmatic dependent launch, sm_90 and later), so that its first loads
 * overlap that kernel's last steps. The kernel must call RS_GRID_WAIT() before it reads
 * anything the kernel before it writes and before its own first store to memory another
 * kernel reads, and should call RS_GRID_EARLY() once all its blocks may share the device with
 * the next launch. Where the platform or device has no such launch it is RS_LAUNCH; the error,
 * as RS_LAUNCH's, is left for hipGetLastError(). */
#if defined(RS_GPU_NVIDIA)
#define RS_LAUNCH_EARLY(k_, grid_, block_, smem_, stream_, ...)                                    \
    do {                                                                                           \
        cudaLaunchAttribute rs_attr_;                                                              \
        rs_attr_.id = cudaLaunchAttributeProgrammaticStreamSerialization;                          \
        rs_attr_.val.programmaticStreamSerializationAllowed = 1;                                   \
        cudaLaunchConfig_t rs_cfg_ = {};                                                           \
        rs_cfg_.gridDim = dim3(grid_);                                                             \
        rs_cfg_.blockDim = dim3(block_);                                                           \
        rs_cfg_.dynamicSmemBytes = (smem_);                                                        \
        rs_cfg_.stream = (stream_);                                                                \
        rs_cfg_.attrs = &rs_attr_;                                                                 \
        rs_cfg_.numAttrs = 1;                                                                      \
        if (cudaLaunchKernelEx(&rs_cfg_, k_, __VA_ARGS__) != cudaSuccess) {                        \
            (void)cudaGetLastError(); /* not offered here: the plain launch */                     \
            RS_LAUNCH(k_, grid_, block_, smem_, stream_, __VA_ARGS__);                             \
        }                                                                                          \
    } while (0)
#else
#define RS_LAUNCH_EARLY RS_LAUNCH
#endif

/* In a kernel launched by RS_LAUNCH_EARLY: RS_GRID_WAIT() returns once the kernels before it on
 * the stream have ended and their stores are visible (at once after any other launch);
 * RS_GRID_EARLY() lets the next early launch begin once every block of this one has called it
 * or ended. Nothing on other platforms or devices, where launches never overlap. */
#if defined(RS_GPU_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define RS_GRID_WAIT()  asm volatile("griddepcontrol.wait;" ::: "memory")
#define RS_GRID_EARLY() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define RS_GRID_WAIT()  ((void)0)
#define RS_GRID_EARLY() ((void)0)
#endif

/* Warp (wavefront) exchanges, every lane of the warp taking part. SHFL_DOWN / SHFL_UP: a
 * lane's value from the lane `o` above / below it (a lane with no such partner gets its own
 * value back); SHFL_XOR: from lane ^ `o`. BALLOT: the lanes whose `pred` holds, lane k as bit
 * k of a 64-bit mask (warps of 32 or 64 lanes). */
#if defined(RS_GPU_NVIDIA)
#define RS_SHFL_DOWN(x, o) __shfl_down_sync(0xffffffffu, (x), (o))
#define RS_SHFL_UP(x, o)   __shfl_up_sync(0xffffffffu, (x), (o))
#define RS_SHFL_XOR(x, o)  __shfl_xor_sync(0xffffffffu, (x), (o))
#define RS_BALLOT(pred)    ((unsigned long long)__ballot_sync(0xffffffffu, (pred)))
#else
#define RS_SHFL_DOWN(x, o) __shfl_down((x), (o))
#define RS_SHFL_UP(x, o)   __shfl_up((x), (o))
#define RS_SHFL_XOR(x, o)  __shfl_xor((x), (o))
#define RS_BALLOT(pred)    ((unsigned long long)__ballot((pred)))
#endif

/* Lanes a warp (wavefront) has, as a constant of the device code being compiled, so that loops
 * over a warp unroll: 32 on NVIDIA; on AMD the target's wavefront size (64 on CDNA, 32 on
 * RDNA). In host code it is not the device's: ask the device there. */
#if defined(RS_GPU_NVIDIA)
#define RS_WARP_SIZE 32
#elif defined(__AMDGCN_WAVEFRONT_SIZE)
#define RS_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define RS_WARP_SIZE 64
#endif

/* In a wait on memory another block writes: let the other warps run for a moment (a few
 * hundred nanoseconds). RS_TRAP(): end the launch with an error (the kernel's stream fails). */
#if defined(RS_GPU_NVIDIA)
#define RS_SLEEP_BRIEFLY() __nanosleep(200)
#define RS_TRAP()          __trap()
#else
#define RS_SLEEP_BRIEFLY() __builtin_amdgcn_s_sleep(4)
#define RS_TRAP()          __builtin_trap()
#endif

/* A 32-bit flag one block waits on and another sets, as an acquire load and a release store:
 * what the setter wrote before rs_flag_set_*() is seen by a block after its rs_flag_get_*()
 * returns the value set. The scope is how far the ordering reaches: _gpu the blocks of this
 * device, _sys other devices and the host too (flags in peer or host memory). Only the calling
 * thread is ordered: a block that shares what it saw puts a __syncthreads() after the get, and
 * one that hands on what all its threads wrote puts one before the set. PTX's own acquire and
 * release on NVIDIA; a fence of the scope around a volatile access elsewhere. */
#if defined(RS_GPU_NVIDIA)
#define RS_FLAG_OPS(scope, fence)                                                                  \
    __device__ static inline uint32_t rs_flag_get_##scope(const uint32_t *f) {                     \
        uint32_t v;                                                                                \
        asm volatile("ld.acquire." #scope ".global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");  \
        return v;                                                                                  \
    }                                                                                              \
    __device__ static inline void rs_flag_set_##scope(uint32_t *f, uint32_t v) {                   \
        asm volatile("st.release." #scope ".global.u32 [%0], %1;" ::"l"(f), "r"(v) : "memory");    \
    }
#else
#define RS_FLAG_OPS(scope, fence)                                                                  \
    __device__ static inline uint32_t rs_flag_get_##scope(const uint32_t *f) {                     \
        uint32_t v = *(const volatile uint32_t *)f;                                                \
        fence();                                                                                   \
        return v;                                                                                  \
    }                                                                                              \
    __device__ static inline void rs_flag_set_##scope(uint32_t *f, uint32_t v) {                   \
        fence();                                                                                   \
        *(volatile uint32_t *)f = v;                                                               \
    }
#endif
RS_FLAG_OPS(gpu, __threadfence)
RS_FLAG_OPS(sys, __threadfence_system)
#undef RS_FLAG_OPS

/* Nanoseconds from a clock that runs at a constant rate on the device (for time limits). */
__device__ static inline uint64_t rs_dev_time_ns(void) {
#if defined(RS_GPU_NVIDIA)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#elif defined(__HIP_DEVICE_COMPILE__)
    /* s_memrealtime counts at a constant 100 MHz; where the toolchain lacks it, the shader
     * clock stands in at an assumed 2 GHz (a time limit then holds to within the clock). */
    long long t = wall_clock64();
    return t >= 0 ? (uint64_t)t * 10u : (uint64_t)clock64() / 2u;
#else
    return 0;
#endif
}

#endif
