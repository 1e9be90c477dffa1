/* The backend registry and the helpers every backend shares: opening with fallback, traced
 * synchronize, and pool allocation with a useful out-of-memory message. */
#include "backend/compute/compute.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct compute_ops compute_cpu_ops;
#ifdef RS_HAVE_HIP
extern const struct compute_ops compute_hip_ops;
#endif

/* Best first: "auto" takes the first that opens. */
const struct compute_ops *const compute_table[] = {
#ifdef RS_HAVE_HIP
    &compute_hip_ops,
#endif
    &compute_cpu_ops,
    NULL,
};

const char *compute_backends(void) {
#ifdef RS_HAVE_HIP
    return "hip, cpu";
#else
    return "cpu";
#endif
}

#ifdef RS_HAVE_HIP
void compute_hip_runtime_info(char *runtime, size_t rn, char *archs, size_t an);
#endif

void compute_runtime_info(char *runtime, size_t rn, char *archs, size_t an) {
    errbuf_set(runtime, rn, 0, "%s", "");
    errbuf_set(archs, an, 0, "%s", "");
#ifdef RS_HAVE_HIP
    compute_hip_runtime_info(runtime, rn, archs, an);
#endif
}

static const struct compute_ops *compute_find(const char *name) {
    for (size_t i = 0; compute_table[i]; i++)
        if (strcmp(compute_table[i]->name, name) == 0)
            return compute_table[i];
    return NULL;
}

static int compute_open_one(const struct compute_ops *ops, const struct compute_conf *conf,
                            struct compute **out, char *err, size_t errlen) {
    struct compute *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->ops = ops;
    c->trace = conf->trace;
    c->dev = (unsigned)conf->device;
    int rc = ops->open(c, conf, err, errlen);
    if (rc != 0) {
        free(c);
        return rc;
    }
    c->raw = (struct mem_raw_ops){.alloc = ops->raw_alloc,
                                  .free = ops->raw_free,
                                  .reserve = ops->raw_reserve,
                                  .map = ops->raw_map,
                                  .unmap = ops->raw_unmap,
                                  .unreserve = ops->raw_unreserve,
                                  .discard = ops->raw_discard};
    rc = mem_pool_create(&c->pool, &conf->alloc, &c->raw, c);
    if (rc != 0) {
        ops->close(c);
        free(c);
        return errbuf_set(err, errlen, rc, "cannot create the memory pool: %s", strerror(-rc));
    }
    /* the memory fraction's limit and an expandable segment's range are the device's share */
    mem_pool_set_device_bytes(c->pool, c->info.mem_valid ? c->info.mem_total_bytes : 0);
    *out = c;
    return 0;
}

/* The backend `name`, or NULL with err saying it is not compiled in or unknown. */
static const struct compute_ops *compute_named(const char *name, char *err, size_t errlen) {
    const struct compute_ops *ops = compute_find(name);
    if (ops)
        return ops;
    if (strcmp(name, "hip") == 0)
        errbuf_set(err, errlen, -ENOENT,
                   "backend 'hip' is not compiled into this build (compiled: %s); "
                   "rebuild with -DRINGSIDE_HIP=AMD or -DRINGSIDE_HIP=NVIDIA",
                   compute_backends());
    else
        errbuf_set(err, errlen, -ENOENT, "unknown backend '%s' (use auto, %s)", name,
                   compute_backends());
    return NULL;
}

int compute_device_count(const char *name, int *n, char *err, size_t errlen) {
    *n = 0;
    const struct compute_ops *ops = compute_named(name, err, errlen);
    if (!ops)
        return -ENOENT;
    int rc = ops->device_count(n);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "%s: cannot count the devices: %s", name,
                          ops->strerror(rc));
    return 0;
}

int compute_peer_access(const char *name, int dev, int peer, bool *can, char *err, size_t errlen) {
    *can = false;
    const struct compute_ops *ops = compute_named(name, err, errlen);
    if (!ops)
        return -ENOENT;
    if (!ops->peer_access)
        return errbuf_set(err, errlen, -ENOTSUP, "the %s backend cannot tell", name);
    int rc = ops->peer_access(dev, peer, can);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "device %d to %d: %s", dev, peer, ops->strerror(rc));
    return 0;
}

int compute_open(const char *name, const struct compute_conf *conf, struct compute **out,
                 char *notice, size_t noticelen, char *err, size_t errlen) {
    errbuf_set(notice, noticelen, 0, "%s", "");
    if (strcmp(name, "auto") != 0) {
        const struct compute_ops *ops = compute_named(name, err, errlen);
        return ops ? compute_open_one(ops, conf, out, err, errlen) : -ENOENT;
    }
    char why[512] = "";
    for (size_t i = 0; compute_table[i]; i++) {
        int rc = compute_open_one(compute_table[i], conf, out, why, sizeof(why));
        if (rc == 0) {
            if (i > 0)
                errbuf_set(notice, noticelen, 0, "%s; using %s", why, compute_table[i]->name);
            else if (strcmp(compute_table[i]->name, "cpu") == 0)
                errbuf_set(notice, noticelen, 0,
                           "this build has no GPU backend (compiled: %s); using cpu",
                           compute_backends());
            return 0;
        }
        if (!compute_table[i + 1])
            return errbuf_set(err, errlen, rc, "%s", why);
    }
    return errbuf_set(err, errlen, -ENOENT, "no compute backend compiled in");
}

void *compute_stream_handle(struct compute *c) {
    return c->ops->native_stream ? c->ops->native_stream(c) : NULL;
}

void compute_close(struct compute *c) {
    if (!c)
        return;
    if (c->ops->sync_device)
        c->ops->sync_device(c);
    mem_pool_destroy(c->pool);
    c->ops->close(c);
    free(c);
}

static int compute_sync_stream_cb(void *arg) {
    struct compute *c = arg;
    return c->ops->sync_stream(c);
}

static int compute_sync_device_cb(void *arg) {
    struct compute *c = arg;
    return c->ops->sync_device(c);
}

int compute_sync(struct compute *c, enum ev_sync_op op) {
    int (*fn)(void *) = op == SYNC_OP_DEVICE ? compute_sync_device_cb : compute_sync_stream_cb;
    if (!c->trace)
        return fn(c);
    struct trace_inject in;
    if (c->ops->inject_hang && trace_fault_take(c->trace, c->dev, TRACE_FAULT_HANG, &in))
        c->ops->inject_hang(c, in.extra_ns); /* on failure the fault is spent: no wait */
    if (trace_fault_take(c->trace, c->dev, TRACE_FAULT_ERROR, &in))
        c->ops->inject_error(c, (enum trace_runtime_error)in.error);
    return trace_sync(c->trace, c->dev, op, fn, c);
}

int compute_alloc(struct compute *c, size_t bytes, void **out, char *err, size_t errlen) {
    struct trace_inject in;
    bool injected = c->trace && trace_fault_take(c->trace, c->dev, TRACE_FAULT_OOM, &in);
    if (injected)
        mem_pool_refuse_next(c->pool);
    int rc = mem_pool_alloc(c->pool, bytes, out);
    if (rc == 0)
        return 0;
    if (rc != -ENOMEM) /* the runtime refused for another reason: its own words */
        return errbuf_set(err, errlen, rc, "allocating %zu bytes on %s device %u failed: %s", bytes,
                          c->ops->name, c->dev, c->ops->strerror(rc));
    struct mem_stats st;
    mem_pool_stats(c->pool, &st);
    return errbuf_set(err, errlen, rc,
                      "out of memory%s allocating %zu bytes on %s device %u (pool: %.1f MiB "
                      "allocated, %.1f MiB reserved, largest free block %.1f MiB, "
                      "fragmentation %.0f%%): try a smaller --chunk or "
                      "--alloc-conf max_split_size_mb:128",
                      injected ? " (injected)" : "", bytes, c->ops->name, c->dev,
                      (double)st.allocated_bytes / 1048576.0, (double)st.reserved_bytes / 1048576.0,
                      (double)st.largest_free_bytes / 1048576.0, st.frag * 100.0);
}

void compute_free(struct compute *c, void *ptr) {
    if (ptr)
        mem_pool_free(c->pool, ptr);
}
