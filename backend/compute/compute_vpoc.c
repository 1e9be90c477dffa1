/* Chunked VPOC of one session, written once against the compute interface. */
#include "backend/compute/compute.h"
#include "backend/compute/compute_vpoc_internal.h"
#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* An enqueue that failed: what it was, in the backend's words (every failure says why). */
static int compute_vpoc_fail(struct compute *c, int rc, const char *what, size_t chunk, char *err,
                             size_t errlen) {
    if (chunk == SIZE_MAX)
        return errbuf_set(err, errlen, rc, "VPOC %s failed on %s: %s", what, c->ops->name,
                          c->ops->strerror(rc));
    return errbuf_set(err, errlen, rc, "VPOC %s of chunk %zu failed on %s: %s", what, chunk,
                      c->ops->name, c->ops->strerror(rc));
}

/* Enqueue the chunks of one session into hist, each in its own buffer; the buffers stay
 * allocated until the session's sync (as a GPU pipeline uploads every chunk before it waits),
 * so the chunk size shapes the pool. bufs has room for every chunk. 0 or the first error. */
static int compute_vpoc_chunks(struct compute *c, const struct vpoc_bar *bars, size_t n,
                               const struct vpoc_params *p, size_t chunk, int64_t base, void *hist,
                               size_t n_levels, struct compute_event *ev, void **bufs, char *err,
                               size_t errlen) {
    const struct compute_ops *ops = c->ops;
    int rc = ev ? ops->event_record(c, &ev[0]) : 0;
    if (rc != 0)
        return compute_vpoc_fail(c, rc, "start event", SIZE_MAX, err, errlen);
    for (size_t k = 0, first = 0; first < n; k++, first += chunk) {
        size_t m = n - first < chunk ? n - first : chunk;
        rc = compute_alloc(c, m * sizeof(struct vpoc_bar), &bufs[k], err, errlen);
        if (rc != 0)
            return rc;
        struct compute_vpoc_chunk a = {bufs[k], m, *p, base, hist, n_levels};
        if ((rc = ops->copy_h2d(c, bufs[k], bars + first, m * sizeof(struct vpoc_bar))) != 0)
            return compute_vpoc_fail(c, rc, "copy", k, err, errlen);
        if ((rc = ops->vpoc_chunk(c, &a)) != 0)
            return compute_vpoc_fail(c, rc, "kernel", k, err, errlen);
        if (ev && (rc = ops->event_record(c, &ev[k + 1])) != 0)
            return compute_vpoc_fail(c, rc, "event", k, err, errlen);
    }
    return 0;
}

int compute_vpoc_wait(struct compute *c, int rc, struct compute_pool_peek *peak, char *err,
                      size_t errlen) {
    if (rc == 0 && peak) {
        mem_pool_stats(c->pool, &peak->stats);
        mem_pool_layout(c->pool, &peak->layout);
    }
    int src = compute_sync(c, SYNC_OP_STREAM);
    if (rc == 0 && src != 0)
        rc = errbuf_set(err, errlen, src, "VPOC failed on %s: %s", c->ops->name,
                        c->ops->strerror(src));
    return rc;
}

int compute_vpoc_session(struct compute *c, const struct vpoc_bar *bars, size_t n,
                         const struct vpoc_params *p, size_t chunk, struct vpoc_result *out,
                         struct compute_event *ev, struct compute_pool_peek *peak, char *err,
                         size_t errlen) {
    if (n == 0 || chunk == 0)
        return errbuf_set(err, errlen, -EINVAL, "VPOC: empty session or chunk");
    int64_t lo, hi;
    vpoc_level_range(bars, n, p, &lo, &hi);
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1u;
    if (span > VPOC_MAX_LEVELS)
        return errbuf_set(err, errlen, -EINVAL, "VPOC: %llu price levels (at most %llu)",
                          (unsigned long long)span, (unsigned long long)VPOC_MAX_LEVELS);
    size_t n_levels = (size_t)span, n_chunks = (n + chunk - 1) / chunk;
    void *hist = NULL, **bufs = calloc(n_chunks, sizeof(*bufs));
    int rc = bufs ? compute_alloc(c, n_levels * sizeof(int64_t), &hist, err, errlen)
                  : errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (rc == 0 && (rc = c->ops->memset0(c, hist, n_levels * sizeof(int64_t))) != 0)
        compute_vpoc_fail(c, rc, "profile reset", SIZE_MAX, err, errlen);
    rc = rc ? rc
            : compute_vpoc_chunks(c, bars, n, p, chunk, lo, hist, n_levels, ev, bufs, err, errlen);
    struct compute_vpoc_final f = {hist, n_levels, lo, *p, out};
    if (rc == 0 && (rc = c->ops->vpoc_finalize(c, &f)) != 0)
        compute_vpoc_fail(c, rc, "finalize", SIZE_MAX, err, errlen);
    rc = compute_vpoc_wait(c, rc, peak, err, errlen); /* every chunk buffer is live */
    for (size_t k = 0; bufs && k < n_chunks; k++)
        compute_free(c, bufs[k]);
    free(bufs);
    compute_free(c, hist);
    return rc;
}
