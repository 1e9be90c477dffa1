/* The HIP compute backend: the kernels in kernels/ on one GPU through the HIP runtime (or CUDA,
 * through the same C interface). One stream; pool memory from hipMalloc; host copies staged in
 * pinned memory; results meant for host memory (losses, VPOC results, read-backs) and event
 * times are completed on the host by the synchronize that covers them. */
#include "backend/compute/compute_hip_internal.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIP_STAGE_BYTES ((size_t)8 << 20)
#define HIP_STAGE_ALIGN 256

_Static_assert(sizeof(struct rs_gpu_bar) == sizeof(struct vpoc_bar), "bar layouts differ");
_Static_assert(sizeof(struct rs_gpu_vpoc_sess) == sizeof(struct vpoc_pack_session) &&
                   offsetof(struct rs_gpu_vpoc_sess, acc_off) ==
                       offsetof(struct vpoc_pack_session, acc_off),
               "packed session layouts differ");
_Static_assert(RS_GPU_VPOC_LDS_LEVELS == VPOC_PACK_LEVELS_MAX, "on-chip profile sizes differ");

static struct compute_hip *compute_hip_priv(struct compute *c) {
    return c->priv;
}

int compute_hip_fail(struct compute *c, int gpu_err) {
    if (gpu_err == 0)
        return 0;
    struct compute_hip *h = compute_hip_priv(c);
    if (h->sticky == 0)
        h->sticky = gpu_err;
    return compute_hip_code(gpu_err);
}

int compute_hip_enter(struct compute *c) {
    return compute_hip_fail(c, rs_gpu_use_device(compute_hip_priv(c)->device));
}

static void *compute_hip_native_stream(struct compute *c) {
    compute_hip_enter(c);
    return compute_hip_priv(c)->stream;
}

/* "name" or "name: description" when the runtime has one worth adding. */
static void compute_hip_err_text(int e, char *out, size_t len) {
    const char *name = rs_gpu_err_name(e), *text = rs_gpu_err_string(e);
    if (strcmp(name, text) == 0)
        snprintf(out, len, "%s", name);
    else
        snprintf(out, len, "%s: %s", name, text);
}

static const char *compute_hip_strerror(int rc) {
    static _Thread_local char buf[192];
    int e = rc < 0 ? -rc : rc;
    if (e < HIP_ERR_BASE)
        return strerror(e);
    compute_hip_err_text(e - HIP_ERR_BASE, buf, sizeof(buf));
    return buf;
}

/* ---- pinned staging and host completions ---- */

int compute_hip_stage(struct compute *c, size_t bytes, void **out) {
    struct hip_stage *s = &compute_hip_priv(c)->stage;
    size_t need = (bytes + HIP_STAGE_ALIGN - 1) / HIP_STAGE_ALIGN * HIP_STAGE_ALIGN;
    *out = NULL;
    if (s->ring && s->bytes - s->used >= need) {
        *out = s->ring + s->used;
        s->used += need;
        return 0;
    }
    if (s->n_extra == s->cap_extra) {
        size_t cap = s->cap_extra ? 2 * s->cap_extra : 16;
        void **x = realloc(s->extra, cap * sizeof(*x));
        if (!x)
            return -ENOMEM;
        s->extra = x;
        s->cap_extra = cap;
    }
    void *p = NULL;
    int e = rs_gpu_host_alloc(&p, need);
    if (e != 0)
        return compute_hip_code(e);
    s->extra[s->n_extra++] = p;
    *out = p;
    return 0;
}

static void compute_hip_stage_reset(struct hip_stage *s) {
    for (size_t i = 0; i < s->n_extra; i++)
        rs_gpu_host_free(s->extra[i]);
    s->n_extra = 0;
    s->used = 0;
}

int compute_hip_pend(struct compute *c, const struct hip_pend *p) {
    struct compute_hip *h = compute_hip_priv(c);
    if (h->n_pend == HIP_PENDING)
        return -ENOSPC;
    h->pend[h->n_pend++] = *p;
    return 0;
}

static void compute_hip_pend_run(const struct hip_pend *p) {
    switch (p->kind) {
    case HIP_PEND_COPY:
        memcpy(p->dst, p->src, p->count);
        break;
    case HIP_PEND_F32_F64:
        for (size_t i = 0; i < p->count; i++)
            ((double *)p->dst)[i] = ((const float *)p->src)[i];
        break;
    case HIP_PEND_F64:
        *(double *)p->dst = *(const double *)p->src;
        break;
    case HIP_PEND_I64:
        *(int64_t *)p->dst = p->value;
        break;
    case HIP_PEND_VPOC:
        for (size_t k = 0; k < p->count; k++) {
            const struct rs_gpu_vpoc_result *g = (const struct rs_gpu_vpoc_result *)p->src + k;
            struct vpoc_result *r = (struct vpoc_result *)p->dst + k;
            if (g->status != 0)
                continue;
            r->poc_level = g->poc_level;
            r->vah_level = g->vah_level;
            r->val_level = g->val_level;
            r->poc = (double)r->poc_level * p->tick;
            r->vah = (double)r->vah_level * p->tick;
            r->val = (double)r->val_level * p->tick;
            r->total_fix = g->total_fix;
        }
        break;
    }
}

/* ---- events: times relative to the first event after each synchronize ---- */

static int compute_hip_event_record(struct compute *c, struct compute_event *e) {
    struct compute_hip *h = compute_hip_priv(c);
    e->t_ns = 0;
    e->handle = NULL;
    if (h->n_events == HIP_EVENTS)
        return 0; /* too many between two syncs: this one stays untimed */
    size_t k = h->n_events;
    int rc = compute_hip_enter(c);
    if (rc != 0)
        return rc;
    rc = rs_gpu_event_record(h->events[k], h->stream);
    if (rc != 0)
        return compute_hip_fail(c, rc);
    if (k == 0)
        h->anchor_ns = mono_now_ns();
    h->owner[k] = e;
    e->handle = h->events[k];
    h->n_events++;
    return 0;
}

static int compute_hip_event_time_ns(struct compute *c, const struct compute_event *e,
                                     uint64_t *t_ns) {
    (void)c;
    if (e->t_ns == 0)
        return -EAGAIN; /* not covered by a sync yet, or not timed */
    *t_ns = e->t_ns;
    return 0;
}

/* After a successful wait: event times, host completions, staging back to empty. */
static void compute_hip_complete(struct compute *c, bool ok) {
    struct compute_hip *h = compute_hip_priv(c);
    for (size_t k = 0; ok && k < h->n_events; k++) {
        float ms = 0;
        if (k == 0)
            h->owner[k]->t_ns = h->anchor_ns;
        else if (rs_gpu_event_elapsed_ms(h->events[0], h->events[k], &ms) == 0 && ms >= 0)
            h->owner[k]->t_ns = h->anchor_ns + (uint64_t)((double)ms * 1e6);
    }
    h->n_events = 0;
    for (size_t i = 0; ok && i < h->n_pend; i++)
        compute_hip_pend_run(&h->pend[i]);
    h->n_pend = 0;
    compute_hip_stage_reset(&h->stage);
}

static int compute_hip_wait(struct compute *c, bool device) {
    struct compute_hip *h = compute_hip_priv(c);
    int rc = rs_gpu_use_device(h->device);
    if (rc == 0)
        rc = device ? rs_gpu_device_sync() : rs_gpu_stream_sync(h->stream);
    if (rc == 0)
        rc = h->sticky;
    h->sticky = 0;
    compute_hip_complete(c, rc == 0);
    return compute_hip_code(rc);
}

static int compute_hip_sync_stream(struct compute *c) {
    return compute_hip_wait(c, false);
}

static int compute_hip_sync_device(struct compute *c) {
    return compute_hip_wait(c, true);
}

/* ---- open / close ---- */

static int compute_hip_no_device(const struct rs_gpu_runtime *rt, int e, char *err, size_t errlen) {
    const char *hint = strstr(rt->platform, "NVIDIA")
                           ? "check nvidia-smi and CUDA_VISIBLE_DEVICES"
                           : "check the amdgpu driver, access to /dev/kfd (groups render, video) "
                             "and HIP_VISIBLE_DEVICES";
    char what[128];
    if (e == 0)
        snprintf(what, sizeof(what), "the runtime found 0 devices");
    else
        compute_hip_err_text(e, what, sizeof(what));
    return errbuf_set(err, errlen, -ENODEV, "no HIP device (%s; %s %s, driver %s): %s", what,
                      rt->platform, rt->runtime_text, rt->driver_text, hint);
}

static int compute_hip_no_binary(const struct compute_hip *h, int e, char *err, size_t errlen) {
    bool nv = strncmp(h->dev.arch, "sm_", 3) == 0;
    return errbuf_set(err, errlen, compute_hip_code(e),
                      "no kernel image for %s (%s): %s; this binary has kernels for %s: rebuild "
                      "with %s%s",
                      h->dev.name, h->dev.arch, rs_gpu_err_name(e), h->rt.built_archs,
                      nv ? "-DCMAKE_CUDA_ARCHITECTURES=" : "-DRINGSIDE_HIP_ARCHS=",
                      nv ? h->dev.arch + 3 : h->dev.arch);
}

/* Device selection and the kernel check: the errors a user can act on. */
static int compute_hip_pick(struct compute_hip *h, int device, char *err, size_t errlen) {
    int n = 0, e = rs_gpu_device_count(&n);
    if (e != 0 || n == 0)
        return compute_hip_no_device(&h->rt, e, err, errlen);
    if (device >= n)
        return errbuf_set(err, errlen, -ENODEV,
                          "--device %d: this machine has %d HIP device%s "
                          "(0..%d)",
                          device, n, n == 1 ? "" : "s", n - 1);
    e = rs_gpu_set_device(device);
    e = e ? e : rs_gpu_device_get(device, &h->dev);
    if (e != 0)
        return errbuf_set(err, errlen, compute_hip_code(e), "HIP device %d: %s", device,
                          compute_hip_strerror(compute_hip_code(e)));
    e = rs_gpu_check_kernels();
    if (rs_gpu_err_kind(e) == RS_GPU_ERR_NO_BINARY)
        return compute_hip_no_binary(h, e, err, errlen);
    if (e != 0)
        return errbuf_set(err, errlen, compute_hip_code(e),
                          "HIP device %d (%s): a test kernel failed: %s", device, h->dev.name,
                          compute_hip_strerror(compute_hip_code(e)));
    return 0;
}

static void compute_hip_release(struct compute_hip *h) {
    for (size_t k = 0; k < HIP_EVENTS; k++)
        if (h->events[k])
            rs_gpu_event_destroy(h->events[k]);
    compute_hip_stage_reset(&h->stage);
    free(h->stage.extra);
    if (h->stage.ring)
        rs_gpu_host_free(h->stage.ring);
    if (h->hang)
        rs_gpu_host_free(h->hang);
    if (h->stream)
        rs_gpu_stream_destroy(h->stream);
    free(h);
}

/* Stream, events and pinned staging. */
static int compute_hip_resources(struct compute_hip *h) {
    int e = rs_gpu_stream_create(&h->stream);
    for (size_t k = 0; e == 0 && k < HIP_EVENTS; k++)
        e = rs_gpu_event_create(&h->events[k]);
    void *ring = NULL;
    e = e ? e : rs_gpu_host_alloc(&ring, HIP_STAGE_BYTES);
    h->stage.ring = ring;
    h->stage.bytes = ring ? HIP_STAGE_BYTES : 0;
    return e;
}

static int compute_hip_mem_info(struct compute *c) {
    uint64_t f = 0, t = 0;
    int e = rs_gpu_use_device(compute_hip_priv(c)->device);
    e = e ? e : rs_gpu_mem_info(&f, &t);
    c->info.mem_valid = e == 0;
    c->info.mem_free_bytes = f;
    c->info.mem_total_bytes = t;
    return e == 0 ? 0 : compute_hip_fail(c, e);
}

static int compute_hip_open(struct compute *c, const struct compute_conf *conf, char *err,
                            size_t errlen) {
    struct compute_hip *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    rs_gpu_runtime_get(&h->rt);
    h->device = conf->device;
    int rc = compute_hip_pick(h, conf->device, err, errlen);
    if (rc == 0) {
        int e = compute_hip_resources(h);
        if (e != 0)
            rc = errbuf_set(err, errlen, compute_hip_code(e),
                            "HIP device %d: cannot create the stream and pinned buffers: %s",
                            conf->device, compute_hip_strerror(compute_hip_code(e)));
    }
    if (rc != 0) {
        compute_hip_release(h);
        return rc;
    }
    c->priv = h;
    snprintf(c->info.name, sizeof(c->info.name), "%s", h->dev.name);
    snprintf(c->info.arch, sizeof(c->info.arch), "%s", h->dev.arch);
    snprintf(c->info.pci, sizeof(c->info.pci), "%s", h->dev.pci_bus_id);
    compute_hip_mem_info(c);
    return 0;
}

static void compute_hip_close(struct compute *c) {
    struct compute_hip *h = compute_hip_priv(c);
    if (!h)
        return;
    rs_gpu_use_device(h->device);
    rs_gpu_stream_sync(h->stream);
    compute_hip_complete(c, false);
    compute_hip_release(h);
    c->priv = NULL;
}

/* ---- memory ---- */

/* One timed copy's rate into the spread so far. */
static void compute_hip_copy_count(struct compute_copy_rate *r, double gbs) {
    r->best_gbs = r->copies == 0 || gbs > r->best_gbs ? gbs : r->best_gbs;
    r->worst_gbs = r->copies == 0 || gbs < r->worst_gbs ? gbs : r->worst_gbs;
    r->copies++;
}

/* Pageable memory is page-aligned, as a loader's tensors are aligned (PyTorch's to 64 bytes):
 * malloc's large blocks begin 16 bytes into a page, and the driver's pageable copies to such an
 * address measured 0.75-0.9x those to an aligned one (H200, 256 MiB, device to host). */
static int compute_hip_copy_rate(struct compute *c, size_t bytes, bool pinned, bool h2d, int reps,
                                 struct compute_copy_rate *out) {
    void *dev = NULL, *host = NULL;
    int e = compute_hip_enter(c) ? -1 : 0;
    e = e ? e : rs_gpu_malloc(&dev, bytes);
    if (e == 0 && pinned)
        e = rs_gpu_host_alloc(&host, bytes);
    else if (e == 0 && posix_memalign(&host, 4096, bytes) != 0) { /* free() takes it */
        host = NULL;
        e = -1;
    }
    if (e == 0) /* resident, as a loader's buffers are: no page is first touched while timed */
        memset(host, 1, bytes);
    void *stream = compute_hip_priv(c)->stream;
    *out = (struct compute_copy_rate){0};
    for (int k = 0; e == 0 && k <= reps; k++) { /* the first warms up */
        uint64_t t0 = mono_now_ns();
        e = h2d ? rs_gpu_copy_h2d(dev, host, bytes, stream)
                : rs_gpu_copy_d2h(host, dev, bytes, stream);
        e = e ? e : rs_gpu_stream_sync(stream);
        double gbs = (double)bytes / ((double)(mono_now_ns() - t0) / 1e9) / 1e9;
        if (e == 0 && k > 0)
            compute_hip_copy_count(out, gbs);
    }
    if (host && pinned)
        rs_gpu_host_free(host);
    else
        free(host);
    if (dev)
        rs_gpu_free(dev);
    return e < 0 ? -ENOMEM : compute_hip_code(e);
}

static int compute_hip_raw_alloc(void *ctx, size_t bytes, void **out) {
    *out = NULL;
    int rc = compute_hip_enter(ctx);
    if (rc != 0)
        return rc;
    int e = rs_gpu_malloc(out, bytes);
    if (e == 0)
        return 0;
    return rs_gpu_err_kind(e) == RS_GPU_ERR_OOM ? -ENOMEM : compute_hip_fail(ctx, e);
}

static void compute_hip_raw_free(void *ctx, void *ptr, size_t bytes) {
    (void)bytes;
    if (compute_hip_enter(ctx) == 0)
        rs_gpu_free(ptr);
}

static int compute_hip_mem_probe(struct compute *c, uint64_t *largest_bytes) {
    uint64_t f = 0, t = 0;
    int tries = 0, e = rs_gpu_use_device(compute_hip_priv(c)->device);
    e = e ? e : rs_gpu_mem_info(&f, &t);
    e = e ? e
          : rs_gpu_probe_largest((uint64_t)1 << 20, f, (uint64_t)1 << 20, largest_bytes, &tries);
    return compute_hip_code(e);
}

/* ---- copies ---- */

static int compute_hip_copy_h2d(struct compute *c, void *dst, const void *src, size_t bytes) {
    void *s = NULL;
    int rc = compute_hip_enter(c);
    rc = rc ? rc : compute_hip_stage(c, bytes, &s);
    if (rc != 0)
        return rc;
    memcpy(s, src, bytes);
    return compute_hip_fail(c, rs_gpu_copy_h2d(dst, s, bytes, compute_hip_priv(c)->stream));
}

static int compute_hip_copy_d2h(struct compute *c, void *dst, const void *src, size_t bytes) {
    void *s = NULL;
    int rc = compute_hip_enter(c);
    rc = rc ? rc : compute_hip_stage(c, bytes, &s);
    if (rc != 0)
        return rc;
    rc = compute_hip_fail(c, rs_gpu_copy_d2h(s, src, bytes, compute_hip_priv(c)->stream));
    struct hip_pend p = {.kind = HIP_PEND_COPY, .dst = dst, .src = s, .count = bytes};
    return rc ? rc : compute_hip_pend(c, &p);
}

int compute_hip_upload_f64(struct compute *c, void *dst, const double *src, size_t count) {
    void *p = NULL;
    int rc = compute_hip_enter(c);
    rc = rc ? rc : compute_hip_stage(c, count * sizeof(float), &p);
    if (rc != 0)
        return rc;
    float *s = p;
    for (size_t i = 0; i < count; i++)
        s[i] = (float)src[i];
    return compute_hip_fail(
        c, rs_gpu_copy_h2d(dst, s, count * sizeof(float), compute_hip_priv(c)->stream));
}

int compute_hip_download_f32(struct compute *c, double *dst, const void *src, size_t count) {
    void *s = NULL;
    int rc = compute_hip_enter(c);
    rc = rc ? rc : compute_hip_stage(c, count * sizeof(float), &s);
    if (rc != 0)
        return rc;
    rc = compute_hip_fail(
        c, rs_gpu_copy_d2h(s, src, count * sizeof(float), compute_hip_priv(c)->stream));
    struct hip_pend p = {.kind = HIP_PEND_F32_F64, .dst = dst, .src = s, .count = count};
    return rc ? rc : compute_hip_pend(c, &p);
}

static int compute_hip_memset0(struct compute *c, void *dst, size_t bytes) {
    int rc = compute_hip_enter(c);
    return rc ? rc : compute_hip_fail(c, rs_gpu_memset0(dst, bytes, compute_hip_priv(c)->stream));
}

/* ---- VPOC ---- */

static struct rs_gpu_vpoc_params compute_hip_vpoc_params(const struct vpoc_params *p) {
    struct rs_gpu_vpoc_params g = {p->profile == VPOC_RANGE ? 1 : 0, p->tick, p->value_area};
    return g;
}

static int compute_hip_vpoc_chunk(struct compute *c, const struct compute_vpoc_chunk *a) {
    struct rs_gpu_vpoc_params g = compute_hip_vpoc_params(&a->params);
    int rc = compute_hip_enter(c);
    return rc ? rc
              : compute_hip_fail(c,
                                 rs_gpu_vpoc_accumulate(a->bars, a->n_bars, &g, a->base, a->hist,
                                                        a->n_levels, compute_hip_priv(c)->stream));
}

static int compute_hip_vpoc_finalize(struct compute *c, const struct compute_vpoc_final *a) {
    struct rs_gpu_vpoc_params g = compute_hip_vpoc_params(&a->params);
    void *slot = NULL;
    int rc = compute_hip_enter(c);
    rc = rc ? rc : compute_hip_stage(c, sizeof(struct rs_gpu_vpoc_result), &slot);
    if (rc != 0)
        return rc;
    rc = compute_hip_fail(c, rs_gpu_vpoc_finalize(a->hist, a->n_levels, a->base, &g, slot,
                                                  compute_hip_priv(c)->stream));
    struct hip_pend p = {
        .kind = HIP_PEND_VPOC, .dst = a->out, .src = slot, .count = 1, .tick = a->params.tick};
    return rc ? rc : compute_hip_pend(c, &p);
}

/* Where a pass's last launch writes its results (pinned host memory, *slot; NULL for the
 * other launches). */
static int compute_hip_vpoc_slot(struct compute *c, const struct compute_vpoc_launch *a,
                                 void **slot) {
    *slot = NULL;
    int rc = compute_hip_enter(c);
    if (rc == 0 && a->last_chunk)
        rc = compute_hip_stage(c, a->n_sessions * sizeof(struct rs_gpu_vpoc_result), slot);
    return rc;
}

/* After a pass's launch was enqueued (rc its result): the last one's results are turned into
 * struct vpoc_result by the sync that covers them. */
static int compute_hip_vpoc_done(struct compute *c, const struct compute_vpoc_launch *a, int rc,
                                 void *slot) {
    if (rc != 0 || !a->last_chunk)
        return rc;
    struct hip_pend p = {.kind = HIP_PEND_VPOC,
                         .dst = a->out,
                         .src = slot,
                         .count = a->n_sessions,
                         .tick = a->params.tick};
    return compute_hip_pend(c, &p);
}

static int compute_hip_vpoc_pass(struct compute *c, const struct compute_vpoc_launch *a) {
    void *slot;
    int rc = compute_hip_vpoc_slot(c, a, &slot);
    if (rc != 0)
        return rc;
    rc = compute_hip_fail(c, rs_gpu_vpoc_pass(a->words, a->first, a->sessions, a->n_sessions,
                                              a->max_levels, a->params.profile == VPOC_RANGE,
                                              a->acc, a->turns, a->turn, a->first_chunk,
                                              a->last_chunk, a->params.value_area, slot,
                                              compute_hip_priv(c)->stream));
    return compute_hip_vpoc_done(c, a, rc, slot);
}

static int compute_hip_vpoc_dense_pass(struct compute *c, const struct compute_vpoc_launch *a) {
    void *slot;
    int rc = compute_hip_vpoc_slot(c, a, &slot);
    if (rc != 0)
        return rc;
    rc = compute_hip_fail(
        c, rs_gpu_vpoc_dense_pass(a->words, a->first, a->sessions, a->n_sessions, a->n_words,
                                  a->max_levels, a->dense, a->acc, a->first_chunk, a->last_chunk,
                                  a->params.value_area, slot, compute_hip_priv(c)->stream));
    return compute_hip_vpoc_done(c, a, rc, slot);
}

static int compute_hip_device_count(int *n) {
    return compute_hip_code(rs_gpu_device_count(n));
}

static int compute_hip_peer_access(int dev, int peer, bool *can) {
    int yes = 0, e = rs_gpu_peer_access(dev, peer, &yes);
    *can = e == 0 && yes;
    return compute_hip_code(e);
}

void compute_hip_runtime_info(char *runtime, size_t rn, char *archs, size_t an);

void compute_hip_runtime_info(char *runtime, size_t rn, char *archs, size_t an) {
    struct rs_gpu_runtime rt;
    rs_gpu_runtime_get(&rt);
    snprintf(runtime, rn, "%s %s (driver %s)", rt.platform, rt.runtime_text, rt.driver_text);
    snprintf(archs, an, "%s", rt.built_archs);
}

/* ---- fault injection ---- */

static int compute_hip_inject_hang(struct compute *c, uint64_t ns) {
    struct compute_hip *h = compute_hip_priv(c);
    void *mem = h->hang;
    int rc = compute_hip_enter(c);
    if (rc == 0 && !mem)
        rc = compute_hip_code(rs_gpu_host_alloc(&mem, 2 * sizeof(uint32_t)));
    if (rc != 0)
        return rc;
    h->hang = mem;
    h->hang[0] = 0; /* never released early: a rehearsal hangs as a real hang does */
    return compute_hip_fail(c, rs_gpu_hang(&h->hang[0], ns, &h->hang[1], h->stream));
}

static void compute_hip_inject_error(struct compute *c, enum trace_runtime_error which) {
    compute_hip_fail(c, trace_error_code(which)); /* the runtime's own number, name and text */
}

const struct compute_ops compute_hip_ops = {
    .name = "hip",
    .elem_bytes = sizeof(float),
    .open = compute_hip_open,
    .close = compute_hip_close,
    .device_count = compute_hip_device_count,
    .peer_access = compute_hip_peer_access,
    .raw_alloc = compute_hip_raw_alloc,
    .raw_free = compute_hip_raw_free,
    .mem_info = compute_hip_mem_info,
    .upload_f64 = compute_hip_upload_f64,
    .copy_h2d = compute_hip_copy_h2d,
    .copy_d2h = compute_hip_copy_d2h,
    .memset0 = compute_hip_memset0,
    .vpoc_chunk = compute_hip_vpoc_chunk,
    .vpoc_finalize = compute_hip_vpoc_finalize,
    .vpoc_pass = compute_hip_vpoc_pass,
    .vpoc_dense_pass = compute_hip_vpoc_dense_pass,
    .mlp_create = compute_hip_mlp_create,
    .mlp_destroy = compute_hip_mlp_destroy,
    .mlp_forward = compute_hip_mlp_forward,
    .mlp_loss = compute_hip_mlp_loss,
    .mlp_backward = compute_hip_mlp_backward,
    .mlp_optimizer = compute_hip_mlp_optimizer,
    .mlp_read = compute_hip_mlp_read,
    .mlp_read_grad = compute_hip_mlp_read_grad,
    .mlp_read_out = compute_hip_mlp_read_out,
    .mlp_grad_reduce = compute_hip_mlp_grad_reduce,
    .native_stream = compute_hip_native_stream,
    .copy_rate = compute_hip_copy_rate,
    .mem_probe = compute_hip_mem_probe,
    .event_record = compute_hip_event_record,
    .event_time_ns = compute_hip_event_time_ns,
    .sync_stream = compute_hip_sync_stream,
    .sync_device = compute_hip_sync_device,
    .strerror = compute_hip_strerror,
    .inject_hang = compute_hip_inject_hang,
    .inject_error = compute_hip_inject_error,
};
