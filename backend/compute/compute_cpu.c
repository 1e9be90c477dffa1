/* The CPU compute backend: host memory as "device" memory, the reference VPOC and MLP code as
 * "kernels", all run asynchronously on an in-order stream so synchronizes really wait. */
#include "backend/compute/compute_cpu_internal.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/vpoc/vpoc_dense.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#define COMPUTE_CPU_QUEUE_DEPTH 256
#define COMPUTE_CPU_ALIGN       256

static struct compute_cpu *compute_cpu_priv(struct compute *c) {
    return c->priv;
}

int compute_cpu_enqueue(struct compute *c, compute_stream_fn fn, const void *arg, size_t bytes) {
    return compute_stream_enqueue(compute_cpu_priv(c)->stream, fn, arg, bytes);
}

static int compute_cpu_mem_info(struct compute *c) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -errno;
    char line[256];
    unsigned long long total_kb = 0, avail_kb = 0;
    while (fgets(line, sizeof(line), f)) {
        sscanf(line, "MemTotal: %llu kB", &total_kb);
        sscanf(line, "MemAvailable: %llu kB", &avail_kb);
    }
    fclose(f);
    c->info.mem_valid = total_kb > 0;
    c->info.mem_total_bytes = total_kb * 1024ull;
    c->info.mem_free_bytes = avail_kb * 1024ull;
    return c->info.mem_valid ? 0 : -ENODATA;
}

static int compute_cpu_open(struct compute *c, const struct compute_conf *conf, char *err,
                            size_t errlen) {
    /* Devices past 0 are simulated: each its own stream, pool and threads on the same host,
     * so the multi-device path runs anywhere. */
    if (conf->device < 0 || conf->device >= COMPUTE_CPU_MAX_DEVICES)
        return errbuf_set(err, errlen, -ENODEV,
                          "cpu backend simulates devices 0-%d; device %d does not exist",
                          COMPUTE_CPU_MAX_DEVICES - 1, conf->device);
    struct compute_cpu *cp = calloc(1, sizeof(*cp));
    if (!cp)
        return -ENOMEM;
    int rc = compute_stream_create(&cp->stream, COMPUTE_CPU_QUEUE_DEPTH);
    if (rc == 0)
        rc = compute_par_create(&cp->par, conf->threads > 0 ? (unsigned)conf->threads : 1);
    if (rc != 0) {
        compute_stream_destroy(cp->stream);
        free(cp);
        return errbuf_set(err, errlen, rc, "cpu backend: cannot start threads: %s", strerror(-rc));
    }
    c->priv = cp;
    struct utsname u;
    snprintf(c->info.arch, sizeof(c->info.arch), "%.31s", uname(&u) == 0 ? u.machine : "cpu");
    snprintf(c->info.name, sizeof(c->info.name), "host CPU (%ld cores, %u MLP threads)",
             sysconf(_SC_NPROCESSORS_ONLN), compute_par_threads(cp->par));
    compute_cpu_mem_info(c);
    return 0;
}

static void compute_cpu_close(struct compute *c) {
    struct compute_cpu *cp = compute_cpu_priv(c);
    if (!cp)
        return;
    compute_stream_destroy(cp->stream);
    compute_par_destroy(cp->par);
    free(cp);
    c->priv = NULL;
}

static int compute_cpu_raw_alloc(void *ctx, size_t bytes, void **out) {
    void *p = NULL;
    if (posix_memalign(&p, COMPUTE_CPU_ALIGN, bytes) != 0)
        return -ENOMEM;
    *out = p;
    return 0;
}

static int compute_cpu_raw_free_run(void *arg) {
    free(*(void **)arg);
    return 0;
}

/* Freed in stream order, after the work queued before, as a GPU runtime frees device memory:
 * a block goes back to the pool's cache once its last kernel is queued (PyTorch's rule), so
 * its segment can be released (a cleanup, an out-of-memory retry) while that kernel has not
 * run yet. */
static void compute_cpu_raw_free(void *ctx, void *ptr, size_t bytes) {
    (void)bytes;
    struct compute *c = ctx;
    if (compute_cpu_enqueue(c, compute_cpu_raw_free_run, &ptr, sizeof(ptr)) != 0)
        free(ptr); /* cannot happen: the argument fits; never leak it */
}

/* Expandable segments on the host: an address range with no memory committed (the kernel
 * backs a page when it is first touched), pages handed back with MADV_DONTNEED; both the
 * unmap and the unreserve in stream order, as raw_free. */
static int compute_cpu_raw_reserve(void *ctx, size_t bytes, void **base) {
    (void)ctx;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    *base = p;
    return 0;
}

static int compute_cpu_raw_map(void *ctx, void *ptr, size_t bytes) {
    (void)ctx, (void)ptr, (void)bytes;
    return 0; /* the pages come when touched */
}

struct compute_cpu_range {
    void *ptr;
    size_t bytes;
};

static int compute_cpu_raw_unmap_run(void *arg) {
    const struct compute_cpu_range *r = arg;
    return madvise(r->ptr, r->bytes, MADV_DONTNEED) == 0 ? 0 : -errno;
}

static int compute_cpu_raw_unreserve_run(void *arg) {
    const struct compute_cpu_range *r = arg;
    return munmap(r->ptr, r->bytes) == 0 ? 0 : -errno;
}

static void compute_cpu_raw_unmap(void *ctx, void *ptr, size_t bytes) {
    struct compute_cpu_range r = {ptr, bytes};
    compute_cpu_enqueue(ctx, compute_cpu_raw_unmap_run, &r, sizeof(r));
}

/* A cached free block's whole pages back to the system, in stream order as raw_unmap: on this
 * backend the pool's cache is host memory, and a trimmed block costs the process nothing until
 * it is written again. */
static void compute_cpu_raw_discard(void *ctx, void *ptr, size_t bytes) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)ptr, hi = lo + bytes;
    lo = (lo + page - 1) & ~(page - 1);
    hi &= ~(page - 1);
    if (hi > lo)
        compute_cpu_raw_unmap(ctx, (void *)lo, hi - lo);
}

static void compute_cpu_raw_unreserve(void *ctx, void *base, size_t bytes) {
    struct compute_cpu_range r = {base, bytes};
    compute_cpu_enqueue(ctx, compute_cpu_raw_unreserve_run, &r, sizeof(r));
}

struct compute_cpu_copy {
    void *dst;
    const void *src;
    size_t bytes;
};

static int compute_cpu_copy_run(void *arg) {
    struct compute_cpu_copy *a = arg;
    memcpy(a->dst, a->src, a->bytes);
    return 0;
}

static int compute_cpu_memset_run(void *arg) {
    struct compute_cpu_copy *a = arg;
    memset(a->dst, 0, a->bytes);
    return 0;
}

static int compute_cpu_copy(struct compute *c, void *dst, const void *src, size_t bytes) {
    struct compute_cpu_copy a = {dst, src, bytes};
    return compute_cpu_enqueue(c, compute_cpu_copy_run, &a, sizeof(a));
}

static int compute_cpu_upload_f64(struct compute *c, void *dst, const double *src, size_t count) {
    return compute_cpu_copy(c, dst, src, count * sizeof(double));
}

static int compute_cpu_memset0(struct compute *c, void *dst, size_t bytes) {
    struct compute_cpu_copy a = {dst, NULL, bytes};
    return compute_cpu_enqueue(c, compute_cpu_memset_run, &a, sizeof(a));
}

static int compute_cpu_vpoc_chunk_run(void *arg) {
    const struct compute_vpoc_chunk *a = arg;
    vpoc_accumulate(a->bars, a->n_bars, &a->params, a->base, a->hist, a->n_levels);
    return 0;
}

static int compute_cpu_vpoc_chunk(struct compute *c, const struct compute_vpoc_chunk *a) {
    return compute_cpu_enqueue(c, compute_cpu_vpoc_chunk_run, a, sizeof(*a));
}

static int compute_cpu_vpoc_finalize_run(void *arg) {
    const struct compute_vpoc_final *a = arg;
    vpoc_finalize(a->hist, a->n_levels, a->base, &a->params, a->out);
    return 0;
}

static int compute_cpu_vpoc_finalize(struct compute *c, const struct compute_vpoc_final *a) {
    return compute_cpu_enqueue(c, compute_cpu_vpoc_finalize_run, a, sizeof(*a));
}

/* A packed pass's launch, session by session as the device's blocks would. */
static int compute_cpu_vpoc_pass_run(void *arg) {
    const struct compute_vpoc_launch *a = arg;
    const struct vpoc_pack_session *sess = a->sessions;
    const int64_t *first = a->first;
    const uint64_t *words = a->words;
    for (size_t k = 0; k < a->n_sessions; k++) {
        if (sess[k].levels == 0)
            continue;
        int64_t *hist = (int64_t *)a->acc + sess[k].acc_off;
        if (a->first_chunk)
            memset(hist, 0, (size_t)sess[k].levels * sizeof(*hist));
        vpoc_pack_accumulate(words + first[k], (size_t)(first[k + 1] - first[k]), hist);
        if (a->last_chunk)
            vpoc_finalize(hist, (size_t)sess[k].levels, sess[k].base, &a->params, &a->out[k]);
    }
    return 0;
}

static int compute_cpu_vpoc_pass(struct compute *c, const struct compute_vpoc_launch *a) {
    return compute_cpu_enqueue(c, compute_cpu_vpoc_pass_run, a, sizeof(*a));
}

/* A dense pass's launch: the whole volume matrix written, then each session's rows summed. */
static int compute_cpu_vpoc_dense_run(void *arg) {
    const struct compute_vpoc_launch *a = arg;
    const struct vpoc_pack_session *sess = a->sessions;
    const int64_t *first = a->first;
    int64_t *m = a->dense;
    vpoc_dense_fill(a->words, a->n_words, a->max_levels, m);
    for (size_t k = 0; k < a->n_sessions; k++) {
        if (sess[k].levels == 0)
            continue;
        int64_t *hist = (int64_t *)a->acc + sess[k].acc_off;
        if (a->first_chunk)
            memset(hist, 0, (size_t)sess[k].levels * sizeof(*hist));
        vpoc_dense_reduce(m + (size_t)first[k] * (size_t)a->max_levels,
                          (size_t)(first[k + 1] - first[k]), a->max_levels, sess[k].levels, hist);
        if (a->last_chunk)
            vpoc_finalize(hist, (size_t)sess[k].levels, sess[k].base, &a->params, &a->out[k]);
    }
    return 0;
}

static int compute_cpu_vpoc_dense_pass(struct compute *c, const struct compute_vpoc_launch *a) {
    return compute_cpu_enqueue(c, compute_cpu_vpoc_dense_run, a, sizeof(*a));
}

static int compute_cpu_event_run(void *arg) {
    struct compute_event *e = *(struct compute_event **)arg;
    e->t_ns = mono_now_ns();
    return 0;
}

static int compute_cpu_event_record(struct compute *c, struct compute_event *e) {
    e->t_ns = 0;
    return compute_cpu_enqueue(c, compute_cpu_event_run, &e, sizeof(e));
}

static int compute_cpu_event_time_ns(struct compute *c, const struct compute_event *e,
                                     uint64_t *t_ns) {
    if (e->t_ns == 0)
        return -EAGAIN; /* not reached yet: read it after a synchronize */
    *t_ns = e->t_ns;
    return 0;
}

static int compute_cpu_sync(struct compute *c) {
    return compute_stream_wait(compute_cpu_priv(c)->stream);
}

/* Injected runtime errors: -(CPU_RUNTIME_ERR_BASE + enum trace_runtime_error), beyond any
 * errno. */
#define CPU_RUNTIME_ERR_BASE 100000

static int compute_cpu_error_run(void *arg) {
    return -(CPU_RUNTIME_ERR_BASE + *(const int *)arg);
}

static void compute_cpu_inject_error(struct compute *c, enum trace_runtime_error which) {
    int k = (int)which;
    compute_cpu_enqueue(c, compute_cpu_error_run, &k, sizeof(k)); /* after the queued work */
}

static int compute_cpu_device_count(int *n) {
    *n = COMPUTE_CPU_MAX_DEVICES;
    return 0;
}

/* The simulated devices share the host's memory: each reaches every other's directly. */
static int compute_cpu_peer_access(int dev, int peer, bool *can) {
    *can = dev >= 0 && dev < COMPUTE_CPU_MAX_DEVICES && peer >= 0 && peer < COMPUTE_CPU_MAX_DEVICES;
    return *can ? 0 : -ENODEV;
}

static const char *compute_cpu_strerror(int rc) {
    static _Thread_local char buf[160];
    int e = rc < 0 ? -rc : rc;
    if (e < CPU_RUNTIME_ERR_BASE || e >= CPU_RUNTIME_ERR_BASE + TRACE_ERR_COUNT)
        return strerror(e);
    enum trace_runtime_error which = (enum trace_runtime_error)(e - CPU_RUNTIME_ERR_BASE);
    snprintf(buf, sizeof(buf), "%s (GPU runtime error %d, injected)", trace_error_text(which),
             trace_error_code(which));
    return buf;
}

const struct compute_ops compute_cpu_ops = {
    .name = "cpu",
    .elem_bytes = sizeof(double),
    .open = compute_cpu_open,
    .close = compute_cpu_close,
    .device_count = compute_cpu_device_count,
    .peer_access = compute_cpu_peer_access,
    .raw_alloc = compute_cpu_raw_alloc,
    .raw_free = compute_cpu_raw_free,
    .raw_reserve = compute_cpu_raw_reserve,
    .raw_map = compute_cpu_raw_map,
    .raw_unmap = compute_cpu_raw_unmap,
    .raw_unreserve = compute_cpu_raw_unreserve,
    .raw_discard = compute_cpu_raw_discard,
    .mem_info = compute_cpu_mem_info,
    .upload_f64 = compute_cpu_upload_f64,
    .copy_h2d = compute_cpu_copy,
    .copy_d2h = compute_cpu_copy,
    .memset0 = compute_cpu_memset0,
    .vpoc_chunk = compute_cpu_vpoc_chunk,
    .vpoc_finalize = compute_cpu_vpoc_finalize,
    .vpoc_pass = compute_cpu_vpoc_pass,
    .vpoc_dense_pass = compute_cpu_vpoc_dense_pass,
    .mlp_create = compute_cpu_mlp_create,
    .mlp_destroy = compute_cpu_mlp_destroy,
    .mlp_forward = compute_cpu_mlp_forward,
    .mlp_loss = compute_cpu_mlp_loss,
    .mlp_backward = compute_cpu_mlp_backward,
    .mlp_optimizer = compute_cpu_mlp_optimizer,
    .mlp_read = compute_cpu_mlp_read,
    .mlp_read_grad = compute_cpu_mlp_read_grad,
    .mlp_read_out = compute_cpu_mlp_read_out,
    .mlp_grad_reduce = compute_cpu_mlp_grad_reduce,
    .mem_probe = NULL, /* host memory: the memory panel shows /proc/meminfo instead */
    .event_record = compute_cpu_event_record,
    .event_time_ns = compute_cpu_event_time_ns,
    .sync_stream = compute_cpu_sync,
    .sync_device = compute_cpu_sync,
    .strerror = compute_cpu_strerror,
    .inject_hang = NULL, /* the traced sync waits: the worker "blocks in its synchronize" */
    .inject_error = compute_cpu_inject_error,
};
