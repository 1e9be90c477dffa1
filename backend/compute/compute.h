/* The compute-backend interface: one struct of function pointers that the engine drives, with
 * a CPU implementation (reference code on worker threads) and a HIP one (GPU kernels).
 * Work is enqueued in order on the backend's stream and runs asynchronously; results are valid
 * only after a synchronize, and every synchronize goes through compute_sync() so it is traced. */
#ifndef RINGSIDE_BACKEND_COMPUTE_COMPUTE_H
#define RINGSIDE_BACKEND_COMPUTE_COMPUTE_H

#include "backend/core/ev.h"
#include "backend/memory/mem_pool.h"
#include "backend/mlp/mlp.h"
#include "backend/trace/trace.h"
#include "backend/vpoc/vpoc.h"
#include "backend/vpoc/vpoc_pack.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Devices the CPU backend simulates (0 is the host; the others are more of the same). */
#define COMPUTE_CPU_MAX_DEVICES 16

struct compute_conf {
    int device;            /* device index to train on */
    int threads;           /* CPU worker threads for the MLP, >= 1 */
    struct mem_conf alloc; /* caching allocator configuration */
    struct trace *trace;   /* borrowed: where syncs are timed and events go */
};

struct compute_dev_info {
    char name[96]; /* "AMD Radeon RX 7900 XT", "host CPU (16 threads)" */
    char arch[32]; /* "gfx1100", "sm_90", "x86_64" */
    char pci[20];  /* "0000:03:00.0": matches the telemetry records; "" for the CPU */
    uint64_t mem_total_bytes, mem_free_bytes;
    bool mem_valid; /* false: the totals above are unknown */
};

/* A point on the stream whose completion time can be read after a synchronize. */
struct compute_event {
    uint64_t t_ns; /* CPU backend: filled when the stream reaches it */
    void *handle;  /* GPU backends: their event object */
};

/* One VPOC chunk: bars (device memory, struct vpoc_bar[n_bars]) accumulated into hist
 * (device memory, int64_t[n_levels], index 0 = level base). */
struct compute_vpoc_chunk {
    const void *bars;
    size_t n_bars;
    struct vpoc_params params;
    int64_t base;
    void *hist;
    size_t n_levels;
};

/* POC and value area of a finished profile; *out (host memory) is valid after a sync. */
struct compute_vpoc_final {
    const void *hist;
    size_t n_levels;
    int64_t base;
    struct vpoc_params params;
    struct vpoc_result *out;
};

/* The VPOC kernels a pass can run (--vpoc-kernel). packed: 8 bytes a bar on the device and
 * each session's profile on chip (the fast path). dense: the form PyTorch code takes, a
 * [bars x levels] volume matrix a launch from the pool, summed over its rows into the profiles
 * and returned to the pool's cache after the launch, so its working set follows the chunk.
 * Both give the same integers, hence the same results. */
enum compute_vpoc_kernel { COMPUTE_VPOC_PACKED, COMPUTE_VPOC_DENSE, COMPUTE_VPOC_KERNEL_COUNT };

/* "packed", "dense" (what --vpoc-kernel takes). */
const char *compute_vpoc_kernel_name(enum compute_vpoc_kernel k);
/* The kernel named s into *out: 0, or -EINVAL for any other name. */
int compute_vpoc_kernel_parse(const char *s, enum compute_vpoc_kernel *out);

/* The largest volume matrix one dense launch may take from the pool: a launch that needs
 * more fails as out of memory does (the training loop then drops the chunk a rung). */
#define COMPUTE_VPOC_DENSE_MAX_BYTES ((size_t)1 << 30)

/* One launch of a packed VPOC pass over many sessions at once (one chunk of each). */
struct compute_vpoc_launch {
    const void *words;    /* device: this chunk's packed bars (uint64_t), session after session */
    const void *first;    /* device: int64_t[n_sessions + 1]: session k's words in this chunk
                             are [first[k], first[k + 1]) */
    const void *sessions; /* device: struct vpoc_pack_session[n_sessions]; levels 0: skipped */
    size_t n_sessions;
    int max_levels; /* the most levels any session here spans (<= VPOC_PACK_LEVELS_MAX) */
    void *acc;      /* device: int64_t profiles, session k's at sessions[k].acc_off; carries
                       the sums from one chunk's launch to the next (unused when one launch is
                       both the first and the last) */
    void *turns;    /* device: uint32_t[n_sessions], zero before turn 0: which launch holds
                       each session's profile in acc (packed kernel, passes of several launches;
                       the backend may leave it unused) */
    uint32_t turn;  /* this launch's number among the launches over turns: 0, 1, ... */
    bool first_chunk, last_chunk; /* the first launch starts the profiles from zero; the last
                                     one finishes them: POC and value area into out */
    struct vpoc_params params;    /* tick and value area (the profile kind is in the words) */
    struct vpoc_result *out;      /* host, n_sessions entries, written for packed sessions only, by
                                     the last launch; valid after a sync */
    size_t n_words; /* the chunk's words (first[n_sessions]): the dense matrix's rows */
    void *dense;    /* dense kernel: device int64_t[n_words * max_levels], the launch's volume
                       matrix, the caller's (free to reuse once the launch has run, in stream
                       order); NULL for the packed one */
};

/* Initial state of a model on the device (host arrays, copied in; m/v may be NULL = zero). */
struct compute_mlp_init {
    struct mlp_arch arch;
    struct mlp_adam_conf adam;
    const double *params, *adam_m, *adam_v;
    int64_t adam_t;
    size_t max_rows; /* largest batch that forward/backward will see */
};

/* The all-reduce a data-parallel step hands its gradients to (the run's communicator). */
struct compute_reduce {
    /* Reduce count elements of buf (device memory) in place to their mean over the ranks:
     * doubles when f64, else floats. stream: the backend's stream, for a GPU library to enqueue
     * on (NULL on the CPU backend, where buf must hold the mean on return). 0 or -errno; the
     * text of a failure is the callee's to keep (ctx). */
    int (*fn)(void *ctx, void *buf, size_t count, bool f64, void *stream);
    void *ctx;
};

/* What copy_rate measured: the spread of its timed copies, in GB/s (1e9 bytes a second). */
struct compute_copy_rate {
    double best_gbs;  /* the fastest copy's rate */
    double worst_gbs; /* the slowest copy's rate */
    int copies;       /* copies timed (the warm-up not counted) */
};

struct compute;
struct compute_mlp; /* a model living on the device: opaque, backend-defined */

struct compute_ops {
    const char *name;    /* "cpu", "hip": what --backend takes */
    unsigned elem_bytes; /* bytes per element of device feature buffers (8 or 4) */

    /* Discover the device, create the stream. c->trace and c->dev are set on entry; the
     * backend sets c->priv and c->info. 0, or negative with err saying what was found
     * ("no HIP device: hipErrorNoDevice"). close is called only after a successful open. */
    int (*open)(struct compute *c, const struct compute_conf *conf, char *err, size_t errlen);
    /* Drain the stream, free c->priv. The pool is destroyed by the caller before this. */
    void (*close)(struct compute *c);

    /* The machine's devices, without opening one (blocks: a GPU runtime initialises). 0 with
     * *n set, or an error for strerror (no driver, no device). */
    int (*device_count)(int *n);
    /* Whether device dev can read and write peer's memory directly, without opening either:
     * 0 with *can set (false: transfers between them go through host memory), or an error
     * for strerror. NULL: the backend cannot tell. */
    int (*peer_access)(int dev, int peer, bool *can);

    /* Raw device memory for the caching allocator (ctx is the struct compute). */
    int (*raw_alloc)(void *ctx, size_t bytes, void **out);
    void (*raw_free)(void *ctx, void *ptr, size_t bytes);
    /* Device memory mapped piecewise, for the allocator's expandable segments (as struct
     * mem_raw_ops' reserve, map, unmap, unreserve; ctx is the struct compute): all four, or
     * NULL when the backend cannot, and expandable_segments:True leaves segments fixed. */
    int (*raw_reserve)(void *ctx, size_t bytes, void **base);
    int (*raw_map)(void *ctx, void *ptr, size_t bytes);
    void (*raw_unmap)(void *ctx, void *ptr, size_t bytes);
    void (*raw_unreserve)(void *ctx, void *base, size_t bytes);
    /* Device memory that is the host's: a free block's whole pages given back to the system
     * after the work queued on them (struct mem_raw_ops' discard; mem_pool_trim). NULL: the
     * backend's device memory stays committed while the pool caches it (a GPU's). */
    void (*raw_discard)(void *ctx, void *ptr, size_t bytes);

    /* Refresh c->info's free/total memory (the device's view, not the pool's). */
    int (*mem_info)(struct compute *c);

    /* Enqueue: copy count doubles from host src into device dst, converting to elem_bytes.
     * src must stay unchanged until the next synchronize. */
    int (*upload_f64)(struct compute *c, void *dst, const double *src, size_t count);
    /* Enqueue: raw copies host->device and device->host (dst valid after a sync). */
    int (*copy_h2d)(struct compute *c, void *dst, const void *src, size_t bytes);
    int (*copy_d2h)(struct compute *c, void *dst, const void *src, size_t bytes);
    /* Enqueue: zero bytes of device memory. */
    int (*memset0)(struct compute *c, void *dst, size_t bytes);

    int (*vpoc_chunk)(struct compute *c, const struct compute_vpoc_chunk *a);
    int (*vpoc_finalize)(struct compute *c, const struct compute_vpoc_final *a);
    /* Enqueue one launch of a packed pass: every packed session's chunk of words added to its
     * profile (from zero on the first launch, from acc after), kept in acc unless this is the
     * last launch, which writes POC and value area to out instead. Launches of one pass run in
     * order on the stream. */
    int (*vpoc_pass)(struct compute *c, const struct compute_vpoc_launch *a);
    /* Enqueue one launch of a dense pass, over the layout vpoc_pass reads: the chunk's words
     * spread into a->dense, a volume matrix of a->n_words rows (word after word, every element
     * written: vpoc_dense_fill) by a->max_levels columns (levels above the word's session's
     * base), then each packed session's rows summed into its profile in acc (from zero on the
     * first launch, added to after: vpoc_dense_reduce), and on the last launch POC and value
     * area into out, as vpoc_pass writes them. acc is always used (also when one launch is
     * both the first and the last). Launches of one pass run in order on the stream. */
    int (*vpoc_dense_pass)(struct compute *c, const struct compute_vpoc_launch *a);

    /* Create a model (parameters, gradients, Adam state and activations on the device). */
    int (*mlp_create)(struct compute *c, const struct compute_mlp_init *init,
                      struct compute_mlp **out);
    void (*mlp_destroy)(struct compute *c, struct compute_mlp *m);
    /* Enqueue: forward rows samples of x (device, rows x n_in). */
    int (*mlp_forward)(struct compute *c, struct compute_mlp *m, const void *x, size_t rows);
    /* Enqueue: mean loss of the last forward against y (device, rows) into *loss_host
     * (valid after a sync). */
    int (*mlp_loss)(struct compute *c, struct compute_mlp *m, const void *y, size_t rows,
                    double *loss_host);
    /* Enqueue: gradients of the batch-mean loss of the last forward. */
    int (*mlp_backward)(struct compute *c, struct compute_mlp *m, const void *x, const void *y,
                        size_t rows);
    /* Enqueue: multiply the gradients of the last backward by scale (1 leaves them as they
     * are; a data-parallel rank weighs its batch-mean gradient by its share of the global
     * batch), then all-reduce them through r. The CPU backend calls r->fn on its stream's
     * thread when the stream gets there (an error it returns is the stream's sticky error,
     * reported by the next sync); GPU backends call it now, on the calling thread, with their
     * stream, and return what it returns. */
    int (*mlp_grad_reduce)(struct compute *c, struct compute_mlp *m, double scale,
                           const struct compute_reduce *r);
    /* Enqueue: one Adam step with the last gradients. */
    int (*mlp_optimizer)(struct compute *c, struct compute_mlp *m);
    /* Enqueue: copy parameters and Adam state to host arrays (valid after a sync). */
    int (*mlp_read)(struct compute *c, struct compute_mlp *m, double *params, double *adam_m,
                    double *adam_v, int64_t *adam_t);

    /* Enqueue: copy the gradients of the last backward to a host array (valid after a sync). */
    int (*mlp_read_grad)(struct compute *c, struct compute_mlp *m, double *grad);
    /* Enqueue: copy the first rows outputs of the last forward (logits for BCE) to a host
     * array (valid after a sync). rows at most the forward's. */
    int (*mlp_read_out)(struct compute *c, struct compute_mlp *m, double *out, size_t rows);

    /* Blocks: the largest single block the device could allocate now (outside the pool), by a
     * bounded search that frees what it tried. NULL when the backend cannot tell. */
    int (*mem_probe)(struct compute *c, uint64_t *largest_bytes);

    /* Blocks: reps copies of bytes one way (h2d: host to device) timed, each one asynchronous
     * copy on the stream waited for, after one copy to warm up; host memory pinned
     * (page-locked, the DMA engine reads it directly) or pageable (what a loader without pinned
     * memory hands the runtime, which stages it). The fastest and the slowest of them into
     * *out. NULL when the backend has no device memory. */
    int (*copy_rate)(struct compute *c, size_t bytes, bool pinned, bool h2d, int reps,
                     struct compute_copy_rate *out);

    /* Events: record on the stream; time readable after a sync that covers it. */
    int (*event_record)(struct compute *c, struct compute_event *e);
    int (*event_time_ns)(struct compute *c, const struct compute_event *e, uint64_t *t_ns);

    /* Blocking waits. Never call directly: use compute_sync(). They return the first error a
     * queued operation hit since the last sync (sticky, as GPU runtimes report them). */
    int (*sync_stream)(struct compute *c);
    int (*sync_device)(struct compute *c);

    /* Make the device the calling thread's current one and return the runtime's stream the
     * backend enqueues on (cudaStream_t/hipStream_t), for a library that enqueues beside it (a
     * communicator). NULL: the backend has no such stream (cpu). */
    void *(*native_stream)(struct compute *c);

    /* Text for a backend error code. */
    const char *(*strerror)(int rc);

    /* Fault injection (--inject), called by compute_sync just before the traced wait. */
    /* Enqueue the hang kernel: the stream stays busy for ns of device time, as behind a hung
     * kernel, so the sync really waits on the GPU. 0 or error. NULL: the backend has no such
     * kernel, and the traced sync waits instead (the CPU backend's worker blocks there). */
    int (*inject_hang)(struct compute *c, uint64_t ns);
    /* Make the named runtime error the stream's sticky error, as a failed kernel leaves it:
     * the sync about to run reports it in the backend's own terms (the runtime's name and
     * text on a GPU). */
    void (*inject_error)(struct compute *c, enum trace_runtime_error which);
};

struct compute {
    const struct compute_ops *ops;
    void *priv;             /* owned by the backend */
    struct mem_pool *pool;  /* caching allocator over raw (the backend's raw_alloc) */
    struct mem_raw_ops raw; /* ops->raw_*, with this struct as ctx */
    struct trace *trace;    /* borrowed */
    unsigned dev;           /* device index used for tracing */
    struct compute_dev_info info;
};

/* The registry: every backend compiled in, best first. NULL-terminated. */
extern const struct compute_ops *const compute_table[];

/* Open backend `name` ("auto", "cpu", "hip"). "auto" tries each in table order and falls back
 * to cpu, writing why into notice (or "" if the first choice worked). 0, -ENOENT for an unknown
 * or not compiled-in backend, or the backend's error, with err filled. */
int compute_open(const char *name, const struct compute_conf *conf, struct compute **out,
                 char *notice, size_t noticelen, char *err, size_t errlen);
void compute_close(struct compute *c);

/* ops->native_stream(c), or NULL for a backend without one. */
void *compute_stream_handle(struct compute *c);

/* Devices backend `name` ("cpu", "hip") has, without opening one: 0 with *n set; -ENOENT for
 * a backend not compiled in, or the backend's error, with err filled. Blocks while a GPU
 * runtime initialises. */
int compute_device_count(const char *name, int *n, char *err, size_t errlen);

/* Whether device dev of backend `name` can reach peer's memory directly (peer access), into
 * *can: 0; -ENOTSUP when the backend cannot tell; -ENOENT or the backend's error, with err
 * filled. The answer does not say over which link (NVLink, xGMI or PCIe). */
int compute_peer_access(const char *name, int dev, int peer, bool *can, char *err, size_t errlen);

/* Names of the compiled-in backends, "cpu" or "hip, cpu", for --help. */
const char *compute_backends(void);

/* The GPU runtime compiled in: "HIP on NVIDIA CUDA 13.0 (driver 13.0)" into runtime, and the
 * archs its kernels were built for ("sm_90", "gfx1030;gfx90a") into archs; both "" in a build
 * without a GPU backend. Asks the runtime for its versions (does not open a device). */
void compute_runtime_info(char *runtime, size_t rn, char *archs, size_t an);

/* Traced synchronize (op DEVICE or STREAM); returns the sticky error, if any. Faults armed
 * for the current phase (--inject hang, error) are carried out here. */
int compute_sync(struct compute *c, enum ev_sync_op op);

/* Pool allocation on the device; -ENOMEM with the pool's stats in err when it fails (also
 * when an oom fault armed for the current phase fires: the pool meets a "full device"), or the
 * backend's error with its text in err when the device refuses for another reason. */
int compute_alloc(struct compute *c, size_t bytes, void **out, char *err, size_t errlen);
void compute_free(struct compute *c, void *ptr);

/* The pool as it was at a moment of interest. */
struct compute_pool_peek {
    struct mem_stats stats;
    struct mem_layout layout;
};

/* VPOC of one session through any backend: a profile buffer for the session's level range,
 * then chunks of `chunk` bars copied into buffers of their own from the pool and accumulated;
 * the buffers are returned after the session's sync, so the chunk size shapes the pool; then
 * POC and value area. bars is host memory; ev (NULL, or n_chunks + 1 events) gets an event
 * before the first chunk and after each one; peak (NULL or) receives the pool at the session's
 * high-water mark. Ends with a traced stream sync; *out is valid on return. 0 or error. */
int compute_vpoc_session(struct compute *c, const struct vpoc_bar *bars, size_t n,
                         const struct vpoc_params *p, size_t chunk, struct vpoc_result *out,
                         struct compute_event *ev, struct compute_pool_peek *peak, char *err,
                         size_t errlen);

/* The path that every whole-data-set VPOC takes (the training loop, `ringside vpoc`, the
 * doctor): the sessions' bars packed once (8 bytes a bar) and laid out on the device in
 * chunks: chunk j holds bars [j * chunk, (j + 1) * chunk) of every session, one pool buffer a
 * chunk, so the chunk size bounds what one launch reads and shapes the pool. A pass is one
 * launch per chunk (all sessions at once) with the profiles carried on the device between
 * launches, then POC and value area in the last. The packed kernel adds the words into
 * on-chip profiles; the dense one takes a volume matrix of the launch's bars x the widest
 * session's levels from the pool for each launch (vpoc_dense_pass) and returns it after. Sessions
 * that cannot be packed (more levels than one on-chip profile holds, or enormous volumes)
 * are profiled one by one through compute_vpoc_session, whatever the kernel. The set keeps
 * its device buffers until destroyed. */
struct compute_vpoc_set;

/* Pack sessions start, start + stride, ... of ss (bars: host memory, indexed as ss is) and
 * upload them in chunks of `chunk` bars a session (0: whole sessions, one launch), for passes
 * of `kernel`. Ends with a traced stream sync. 0, or -ENOMEM with the pool's stats in err (a
 * smaller chunk may fit), or the backend's error. */
int compute_vpoc_set_create(struct compute *c, const struct vpoc_bar *bars,
                            const struct data_sessions *ss, size_t start, size_t stride,
                            const struct vpoc_params *p, size_t chunk,
                            enum compute_vpoc_kernel kernel, struct compute_vpoc_set **out,
                            char *err, size_t errlen);
void compute_vpoc_set_destroy(struct compute *c, struct compute_vpoc_set *s);

/* Launches one pass makes (0 when no session of the set could be packed), the chunk it was
 * made with (bars a session a launch; 0 = whole sessions) and the sessions it holds. */
size_t compute_vpoc_set_launches(const struct compute_vpoc_set *s);
size_t compute_vpoc_set_chunk(const struct compute_vpoc_set *s);
size_t compute_vpoc_set_sessions(const struct compute_vpoc_set *s);

/* What the last pass held beyond the set's own buffers at its high-water mark: the dense
 * kernel's largest volume matrix, its block's bytes and 1 block, and the bytes the matrix
 * asked for (bars x levels x 8: what follows the chunk); all 0 for the packed kernel, which
 * allocates nothing in a pass. */
void compute_vpoc_set_scratch(const struct compute_vpoc_set *s, uint64_t *bytes, uint32_t *blocks,
                              uint64_t *asked_bytes);

/* Enqueue one pass of the packed sessions: ev (NULL, or launches + 1 events) gets an event
 * before the first launch and after each. Results are valid after a sync that covers it. The
 * dense kernel allocates each launch's matrix here and frees it once the launch is enqueued,
 * so a pass can fail with -ENOMEM (err: the pool's stats, or the matrix over
 * COMPUTE_VPOC_DENSE_MAX_BYTES) where a smaller chunk would fit. */
int compute_vpoc_set_enqueue(struct compute *c, struct compute_vpoc_set *s,
                             struct compute_event *ev, char *err, size_t errlen);

/* After the sync that covered an enqueued pass: every session's result into res, indexed as
 * ss was (res[start + i * stride]), profiling the unpacked ones now, one by one (chunk as the
 * set's; each syncs). 0 or error. */
int compute_vpoc_set_collect(struct compute *c, struct compute_vpoc_set *s, struct vpoc_result *res,
                             char *err, size_t errlen);

/* A whole pass: enqueue, a traced stream sync, collect. peak (NULL or) receives the pool at
 * the pass's high-water mark (every chunk buffer live, and for the dense kernel its largest
 * volume matrix). 0 or error. */
int compute_vpoc_set_run(struct compute *c, struct compute_vpoc_set *s, struct vpoc_result *res,
                         struct compute_event *ev, struct compute_pool_peek *peak, char *err,
                         size_t errlen);

/* Every session of ss at once: a set made for kernel, one pass run and the set destroyed.
 * res: ss->n entries. 0 or error. */
int compute_vpoc_all(struct compute *c, const struct vpoc_bar *bars, const struct data_sessions *ss,
                     const struct vpoc_params *p, size_t chunk, enum compute_vpoc_kernel kernel,
                     struct vpoc_result *res, char *err, size_t errlen);

#endif
