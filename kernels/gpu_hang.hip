// The hang kernel for fault injection: one thread spins on a host-mapped flag, so a test or a
// rehearsal can hold a stream "hung" and release it from the host at a moment of its choosing.
#include "gpu_runtime.h"
#include "rs_gpu.h"

__global__ void hang_kernel(const volatile uint32_t *flag, uint64_t limit_ns,
                            volatile uint32_t *status) {
    uint64_t t0 = rs_dev_time_ns();
    for (;;) {
        if (*flag != 0) {
            *status = 1;
            break;
        }
        if (rs_dev_time_ns() - t0 >= limit_ns) {
            *status = 2;
            break;
        }
    }
    __threadfence_system();
}

extern "C" int rs_gpu_hang(const volatile uint32_t *flag, uint64_t limit_ns,
                           volatile uint32_t *status, void *stream) {
    *status = 0;
    RS_LAUNCH(hang_kernel, 1, 1, 0, (hipStream_t)stream, flag, limit_ns, status);
    return (int)hipGetLastError();
}
