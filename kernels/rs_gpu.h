/* The C interface of the GPU code: the HIP runtime calls the backend needs and the kernels'
 * entry points. backend/compute/compute_hip*.c is its only user; everything here is enqueued
 * on the stream given (asynchronous) unless it says it blocks. Errors are the runtime's own
 * numbers (hipError_t, or cudaError_t on NVIDIA); 0 is success. */
#ifndef RINGSIDE_KERNELS_RS_GPU_H
#define RINGSIDE_KERNELS_RS_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an error means for the user: each has its own remedy. */
enum rs_gpu_err_kind {
    RS_GPU_ERR_NONE,
    RS_GPU_ERR_NO_DEVICE, /* no device, or the driver is missing */
    RS_GPU_ERR_NO_BINARY, /* the binary has no kernels for this device's arch */
    RS_GPU_ERR_OOM,
    RS_GPU_ERR_NOT_READY, /* not an error: work still queued */
    RS_GPU_ERR_OTHER,
};
enum rs_gpu_err_kind rs_gpu_err_kind(int err);
const char *rs_gpu_err_name(int err);   /* "hipErrorNoDevice" / "cudaErrorNoDevice" */
const char *rs_gpu_err_string(int err); /* the runtime's description */

struct rs_gpu_runtime {
    const char *platform;    /* "HIP on AMD ROCm", "HIP on NVIDIA CUDA" */
    const char *built_archs; /* archs the kernels were compiled for: "gfx1030;gfx90a" */
    int runtime_version;     /* as the runtime reports it; 0 when it cannot say */
    int driver_version;      /* 0: no driver found */
    char runtime_text[24];   /* "5.2", "13.0", or "unknown" */
    char driver_text[24];    /* the same for the driver, or "none found" */
};
void rs_gpu_runtime_get(struct rs_gpu_runtime *out);

struct rs_gpu_device {
    char name[96];       /* "AMD Radeon RX 7900 XT", "NVIDIA H100 80GB HBM3" */
    char arch[32];       /* "gfx1100", "sm_90" */
    char pci_bus_id[20]; /* "0000:03:00.0" */
    uint64_t mem_total_bytes;
    int multiprocessors; /* CUs / SMs */
};
int rs_gpu_device_count(int *n); /* blocks: initialises the runtime */
int rs_gpu_device_get(int dev, struct rs_gpu_device *out);
int rs_gpu_set_device(int dev);
int rs_gpu_get_device(int *dev); /* the calling thread's current device */
/* The runtime's current device is per host thread (a new thread starts on device 0): make dev
 * the calling thread's, setting it only when it is not already (cheap to call before every
 * runtime call). */
int rs_gpu_use_device(int dev);
int rs_gpu_mem_info(uint64_t *free_bytes, uint64_t *total_bytes);
/* Whether device dev can read and write peer's memory directly (*can 1) or only through host
 * memory (*can 0): the runtime's peer-access answer, which does not say over which link
 * (NVLink, xGMI or PCIe). Does not enable access; needs no current device. */
int rs_gpu_peer_access(int dev, int peer, int *can);
/* Blocks: launch a trivial kernel and wait, so a missing kernel image is found at open. */
int rs_gpu_check_kernels(void);

int rs_gpu_malloc(void **p, size_t bytes);
int rs_gpu_free(void *p);
/* Pinned host memory, mapped into the device's address space (device pointer = host pointer
 * on every platform ringside supports: unified addressing). */
int rs_gpu_host_alloc(void **p, size_t bytes);
int rs_gpu_host_free(void *p);

int rs_gpu_stream_create(void **stream);
int rs_gpu_stream_destroy(void *stream);
int rs_gpu_stream_sync(void *stream);  /* blocks */
int rs_gpu_stream_query(void *stream); /* 0 idle, or a NOT_READY error */
int rs_gpu_device_sync(void);          /* blocks */
int rs_gpu_event_create(void **event);
int rs_gpu_event_destroy(void *event);
int rs_gpu_event_record(void *event, void *stream);
int rs_gpu_event_create_untimed(void **event); /* cheaper to record; no elapsed time */
int rs_gpu_event_query(void *event);           /* 0 done, or a NOT_READY error */
/* Milliseconds from a to b, both completed (after a sync that covers them). */
int rs_gpu_event_elapsed_ms(void *a, void *b, float *ms);

int rs_gpu_copy_h2d(void *dst, const void *src, size_t bytes, void *stream);
int rs_gpu_copy_d2h(void *dst, const void *src, size_t bytes, void *stream);
int rs_gpu_copy_d2d(void *dst, const void *src, size_t bytes, void *stream);
int rs_gpu_memset0(void *dst, size_t bytes, void *stream);
/* The error the last launch left (and clears it). */
int rs_gpu_last_error(void);

/* Blocks: the largest single block that can be allocated now, by a binary search between lo
 * and hi bytes to within resolution bytes (at most 40 tries); every trial block is freed.
 * *largest = 0 when not even lo fits. */
int rs_gpu_probe_largest(uint64_t lo, uint64_t hi, uint64_t resolution, uint64_t *largest,
                         int *tries);

/* ---- VPOC (layouts match backend/vpoc/vpoc.h) ---- */

struct rs_gpu_bar {
    double high, low, close, volume;
};

struct rs_gpu_vpoc_params {
    int profile; /* 0 close, 1 range */
    double tick;
    double value_area;
};

struct rs_gpu_vpoc_result {
    int64_t poc_level, vah_level, val_level, total_fix;
    int64_t status; /* 0 done; RS_GPU_VPOC_SKIPPED: a session a packed pass does not hold */
};
#define RS_GPU_VPOC_SKIPPED 1
/* Levels a packed session may span: its profile is kept on chip. */
#define RS_GPU_VPOC_LDS_LEVELS 2048

/* Add n bars (device) into hist (device int64[n_levels], index 0 = level base). */
int rs_gpu_vpoc_accumulate(const struct rs_gpu_bar *bars, size_t n,
                           const struct rs_gpu_vpoc_params *p, int64_t base, int64_t *hist,
                           size_t n_levels, void *stream);
/* POC and value area of hist into *out (device or mapped host memory). */
int rs_gpu_vpoc_finalize(const int64_t *hist, size_t n_levels, int64_t base,
                         const struct rs_gpu_vpoc_params *p, struct rs_gpu_vpoc_result *out,
                         void *stream);
/* A packed session (layout of struct vpoc_pack_session in backend/vpoc/vpoc_pack.h). */
struct rs_gpu_vpoc_sess {
    int64_t base;
    int32_t levels; /* 0: not packed, skipped */
    int32_t bars;
    int64_t acc_off;
};
/* One chunk of every session at once, one block a session with its profile on chip: session
 * k's packed words (backend/vpoc/vpoc_pack.h) are words[first[k], first[k + 1]) (device
 * int64[n + 1]); its profile starts from zero (first_chunk) or from acc + sess[k].acc_off, and
 * goes back there, or, on the last chunk, becomes out[k] (device or mapped host memory;
 * skipped sessions get status RS_GPU_VPOC_SKIPPED). max_levels: the widest session's levels,
 * at most RS_GPU_VPOC_LDS_LEVELS. profile: as rs_gpu_vpoc_params' (a range profile's bars add
 * to several levels each, which sizes the blocks).
 * A pass of one launch (first and last chunk) is the whole profile and needs neither acc nor
 * turns. Passes of several launches enqueue their chunks in order on one stream with the same
 * acc and turns (device uint32[n_sessions], zero before the first launch), numbering the
 * launches over them in turn: 0 for the first ever, then one more each launch, wrapping at
 * 2^32. A launch hands each session's profile to the next through acc once turns[k] is its
 * number, and a launch that waits some seconds for a number that never comes (one left out
 * of the numbering: a launch that failed takes none) fails. A pass cut short by a failed
 * launch needs no repair: the next launch's number follows the last one queued. Passes
 * may be queued back to back: each writes acc after the one before it, but its out[k] as soon
 * as session k is done, so queued passes of several launches need each its own out.
 * Where the device allows it, a launch begins while the kernel before it on the stream ends:
 * it reads words, first and sess at once (that kernel must not write them; copies before it
 * may), and the kernel after it may do the same. A pass of one launch writes out only once the
 * kernel before it has ended. Only passes over them may use acc, turns and out while a pass is
 * queued. Returns 0 or the launch's error (hipErrorInvalidValue for max_levels out of range, or
 * a pass of several launches without acc or turns). */
int rs_gpu_vpoc_pass(const uint64_t *words, const int64_t *first,
                     const struct rs_gpu_vpoc_sess *sess, size_t n_sessions, int max_levels,
                     int profile, int64_t *acc, uint32_t *turns, uint32_t turn, int first_chunk,
                     int last_chunk, double value_area, struct rs_gpu_vpoc_result *out,
                     void *stream);
/* One launch of a dense pass over the layout rs_gpu_vpoc_pass reads: the n_words words
 * spread into dense (device int64[n_words * max_levels], every element written: row i holds
 * word i's share at its levels above the session's base), then session k's rows
 * [first[k], first[k + 1]) summed into acc + sess[k].acc_off (from zero on the first chunk),
 * and on the last chunk POC and value area into out[k] (device or mapped host memory;
 * skipped sessions get status RS_GPU_VPOC_SKIPPED). max_levels: the widest session's levels,
 * at most RS_GPU_VPOC_LDS_LEVELS. */
int rs_gpu_vpoc_dense_pass(const uint64_t *words, const int64_t *first,
                           const struct rs_gpu_vpoc_sess *sess, size_t n_sessions, size_t n_words,
                           int max_levels, int64_t *dense, int64_t *acc, int first_chunk,
                           int last_chunk, double value_area, struct rs_gpu_vpoc_result *out,
                           void *stream);

/* ---- MLP, fp32 (layouts match backend/mlp/mlp.h) ---- */

#define RS_GPU_MLP_MAX_LAYERS 9 /* hidden layers + the output layer */
#define RS_GPU_MLP_MAX_WIDTH  256

struct rs_gpu_mlp_dims {
    int n_layers;                   /* hidden + 1 */
    int in[RS_GPU_MLP_MAX_LAYERS];  /* inputs of each layer */
    int out[RS_GPU_MLP_MAX_LAYERS]; /* outputs (the last is 1) */
    int64_t w_off[RS_GPU_MLP_MAX_LAYERS], b_off[RS_GPU_MLP_MAX_LAYERS];
    int act;          /* 0 SiLU, 1 ReLU */
    int loss;         /* 0 MSE, 1 BCE with logits */
    int max_width;    /* the widest layer input or output */
    int64_t z_stride; /* floats per hidden layer in z: max_rows * max_width */
};

/* Outputs of rows samples x[rows][in[0]] into out[rows]; keeps each hidden layer's
 * pre-activations in z for the backward pass. */
int rs_gpu_mlp_forward(const struct rs_gpu_mlp_dims *d, const float *params, const float *x,
                       int rows, float *z, float *out, void *stream);
/* Device memory the loss keeps between its blocks: zeroed once (rs_gpu_memset0) before the
 * first call, left zeroed by each; one per stream, as calls on it do not overlap. */
#define RS_GPU_MLP_LOSS_BLOCKS 64
struct rs_gpu_mlp_loss_work {
    double partial[RS_GPU_MLP_LOSS_BLOCKS];
    unsigned done;
};
/* Mean loss of out against y into *loss (device or mapped host memory, double). */
int rs_gpu_mlp_loss(const struct rs_gpu_mlp_dims *d, const float *out, const float *y, int rows,
                    struct rs_gpu_mlp_loss_work *work, double *loss, void *stream);
/* Floats of device memory rs_gpu_mlp_backward needs as scratch for batches of up to max_rows
 * (large batches keep every layer's deltas there; 0 when no such batch is large). */
size_t rs_gpu_mlp_scratch_floats(const struct rs_gpu_mlp_dims *d, size_t max_rows);
/* The gradient of the batch-mean loss into grad (overwritten), from the z and out of the
 * forward pass of the same rows; scratch: rs_gpu_mlp_scratch_floats(d, rows or more) floats,
 * whose contents do not matter. */
int rs_gpu_mlp_backward(const struct rs_gpu_mlp_dims *d, const float *params, const float *x,
                        const float *y, int rows, const float *z, const float *out, float *scratch,
                        float *grad, void *stream);

struct rs_gpu_adam {
    float step;     /* lr / (1 - beta1^t) */
    float sqrt_bc2; /* sqrt(1 - beta2^t) */
    float beta1, beta2, eps, weight_decay;
};
/* One Adam step over n parameters as torch.optim.Adam. */
int rs_gpu_mlp_adam(const struct rs_gpu_adam *a, float *params, const float *grad, float *m,
                    float *v, size_t n, void *stream);

/* x[i] *= s for n floats. */
int rs_gpu_scale_f32(float *x, size_t n, float s, void *stream);

/* ---- all-reduce over peer memory (backend/comm/comm_peer.c) ---- */

#define RS_GPU_PEER_MAX_RANKS  16 /* COMM_MAX_RANKS */
#define RS_GPU_PEER_MAX_BLOCKS 64
/* Bytes of one rank's flag area, zeroed before its first all-reduce. */
#define RS_GPU_PEER_FLAG_BYTES (RS_GPU_PEER_MAX_BLOCKS * RS_GPU_PEER_MAX_RANKS * 4)

struct rs_gpu_peer_reduce {
    void *buf;    /* this rank's count elements (device), reduced in place */
    size_t count; /* elements, every rank the same */
    int f64;      /* 1 double, 0 float */
    int mean;     /* 1: the sum divided by n_ranks */
    unsigned rank, n_ranks;
    uint32_t seq;      /* this all-reduce's number in the group (1, 2, ...), the same on every
                          rank; a rank's all-reduces run in this order on one stream */
    size_t half_bytes; /* each of the two staging halves; count elements fit, a multiple of 256 */
    void *stage[RS_GPU_PEER_MAX_RANKS];     /* every rank's staging (2 halves, its device's) */
    uint32_t *flags[RS_GPU_PEER_MAX_RANKS]; /* every rank's flag area */
    const volatile uint32_t *abort;         /* mapped host memory: non-zero ends a wait for a
                                               rank that never comes (the buffer is then
                                               left partly reduced) */
};
/* 1 when this build's devices can reduce through each other's memory within a kernel
 * (NVIDIA); 0 on AMD, where device memory is coherent between devices at kernel ends only. */
int rs_gpu_peer_supported(void);
/* Let the calling thread's device reach peer's memory (already allowed: 0). */
int rs_gpu_peer_enable(int peer);
/* The all-reduce on every rank's stream: each rank calls it with its own rank and buf, the
 * rest the same. Every stage and flag area must be reachable from this rank's device. */
int rs_gpu_peer_allreduce(const struct rs_gpu_peer_reduce *a, void *stream);

/* ---- fault injection ---- */

/* A kernel that spins until *flag (mapped host memory) is non-zero or limit_ns pass on the
 * device's clock; it writes 1 (released) or 2 (timed out) to *status (mapped host memory). */
int rs_gpu_hang(const volatile uint32_t *flag, uint64_t limit_ns, volatile uint32_t *status,
                void *stream);

#ifdef __cplusplus
}
#endif

#endif
