/* Private state of the HIP backend, shared by its source files. */
#ifndef RINGSIDE_BACKEND_COMPUTE_COMPUTE_HIP_INTERNAL_H
#define RINGSIDE_BACKEND_COMPUTE_COMPUTE_HIP_INTERNAL_H

#include "backend/compute/compute.h"
#include "kernels/rs_gpu.h"

#include <stdbool.h>

#define HIP_EVENTS  1024 /* timing events between two synchronizes */
#define HIP_PENDING 1024 /* host-side completions between two synchronizes */

/* Runtime errors travel as negative numbers past the errno range. */
#define HIP_ERR_BASE 4096

/* Host work that completes an enqueued operation once a synchronize has covered it. */
enum hip_pend_kind {
    HIP_PEND_COPY,    /* memcpy(dst, src, count) */
    HIP_PEND_F32_F64, /* double dst[count] from float src[count] */
    HIP_PEND_F64,     /* one double */
    HIP_PEND_I64,     /* *(int64_t *)dst = value */
    HIP_PEND_VPOC,    /* count struct vpoc_result from struct rs_gpu_vpoc_result, times tick
                         (those with a non-zero status are left as they are) */
};

struct hip_pend {
    enum hip_pend_kind kind;
    void *dst;
    const void *src; /* pinned staging */
    size_t count;
    int64_t value;
    double tick;
};

/* Pinned host staging, handed out in order and reclaimed at each synchronize. */
struct hip_stage {
    unsigned char *ring;
    size_t bytes, used;
    void **extra; /* oversize requests get buffers of their own, freed at the sync */
    size_t n_extra, cap_extra;
};

struct compute_hip {
    void *stream;
    int device;
    struct rs_gpu_device dev;
    struct rs_gpu_runtime rt;
    int sticky; /* first runtime error since the last synchronize (runtime number) */
    struct hip_stage stage;
    struct hip_pend pend[HIP_PENDING];
    size_t n_pend;
    void *events[HIP_EVENTS];                /* the pool */
    struct compute_event *owner[HIP_EVENTS]; /* whose time each recorded event gives */
    size_t n_events;
    uint32_t *hang;     /* pinned: [0] the hang kernel's release flag, [1] its status; or NULL */
    uint64_t anchor_ns; /* mono time the first event since the last sync was recorded at: on
                           the idle stream, the device reaches it then; the others are timed
                           from it */
};

/* A runtime error number as a backend return code (0 stays 0). */
static inline int compute_hip_code(int gpu_err) {
    return gpu_err == 0 ? 0 : -(HIP_ERR_BASE + gpu_err);
}
/* A runtime error as a backend return code (0 stays 0), remembered as sticky. */
int compute_hip_fail(struct compute *c, int gpu_err);
/* Make the backend's device the calling thread's current one. The runtime keeps a current
 * device per host thread and a new thread starts on device 0, while the backend is opened on
 * one thread and driven from others (the engine's training thread, a worker): every entry point
 * that calls the runtime starts here. 0, or the runtime's error as a backend return code. */
int compute_hip_enter(struct compute *c);
/* Pinned staging space for bytes (256-byte aligned) into *out: 0, -ENOMEM, or the runtime's
 * error as a backend return code (not sticky: an allocation failure leaves no error behind). */
int compute_hip_stage(struct compute *c, size_t bytes, void **out);
/* Queue host work for the next synchronize; -ENOSPC when too much is queued. */
int compute_hip_pend(struct compute *c, const struct hip_pend *p);
/* Enqueue: device float dst[count] from host doubles. */
int compute_hip_upload_f64(struct compute *c, void *dst, const double *src, size_t count);
/* Enqueue: host doubles dst[count] from device floats (valid after a sync). */
int compute_hip_download_f32(struct compute *c, double *dst, const void *src, size_t count);

int compute_hip_mlp_create(struct compute *c, const struct compute_mlp_init *init,
                           struct compute_mlp **out);
void compute_hip_mlp_destroy(struct compute *c, struct compute_mlp *m);
int compute_hip_mlp_forward(struct compute *c, struct compute_mlp *m, const void *x, size_t rows);
int compute_hip_mlp_loss(struct compute *c, struct compute_mlp *m, const void *y, size_t rows,
                         double *loss_host);
int compute_hip_mlp_backward(struct compute *c, struct compute_mlp *m, const void *x, const void *y,
                             size_t rows);
int compute_hip_mlp_optimizer(struct compute *c, struct compute_mlp *m);
int compute_hip_mlp_read(struct compute *c, struct compute_mlp *m, double *params, double *adam_m,
                         double *adam_v, int64_t *adam_t);
int compute_hip_mlp_grad_reduce(struct compute *c, struct compute_mlp *m, double scale,
                                const struct compute_reduce *r);
int compute_hip_mlp_read_grad(struct compute *c, struct compute_mlp *m, double *grad);
int compute_hip_mlp_read_out(struct compute *c, struct compute_mlp *m, double *out, size_t rows);

#endif
