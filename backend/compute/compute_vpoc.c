/* Chunked VPOC of one session, written once against the compute interface. */
#include "backend/compute/compute.h"
#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdlib.h>

/* Enqueue the chunks of one session into hist, each in its own buffer; the buffers stay
 * allocated until the session's sync (as a GPU pipeline uploads every chunk before it waits),
 * so the chunk size shapes the pool. bufs has room for every chunk. 0 or the first error. */
static int compute_vpoc_chunks(struct compute *c, const struct vpoc_bar *bars, size_t n,
                               const struct vpoc_params *p, size_t chunk, int64_t base, void *hist,
                               size_t n_levels, struct compute_event *ev, void **bufs, char *err,
                               size_t errlen) {
    const struct compute_ops *ops = c->ops;
    int rc = ev ? ops->event_record(c, &ev[0]) : 0;
    for (size_t k = 0, first = 0; rc == 0 && first < n; k++, first += chunk) {
        size_t m = n - first < chunk ? n - first : chunk;
        rc = compute_alloc(c, m * sizeof(struct vpoc_bar), &bufs[k], err, errlen);
        if (rc != 0)
            break;
        struct compute_vpoc_chunk a = {bufs[k], m, *p, base, hist, n_levels};
        rc = ops->copy_h2d(c, bufs[k], bars + first, m * sizeof(struct vpoc_bar));
        rc = rc ? rc : ops->vpoc_chunk(c, &a);
        rc = rc ? rc : ev ? ops->event_record(c, &ev[k + 1]) : 0;
    }
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
    rc = rc ? rc : c->ops->memset0(c, hist, n_levels * sizeof(int64_t));
    rc = rc ? rc
            : compute_vpoc_chunks(c, bars, n, p, chunk, lo, hist, n_levels, ev, bufs, err, errlen);
    struct compute_vpoc_final f = {hist, n_levels, lo, *p, out};
    rc = rc ? rc : c->ops->vpoc_finalize(c, &f);
    if (rc == 0 && peak) { /* the session's high-water mark: every chunk buffer is live */
        mem_pool_stats(c->pool, &peak->stats);
        mem_pool_layout(c->pool, &peak->layout);
    }
    int src = compute_sync(c, SYNC_OP_STREAM);
    if (rc == 0 && src != 0)
        rc = errbuf_set(err, errlen, src, "VPOC failed on %s: %s", c->ops->name,
                        c->ops->strerror(src));
    for (size_t k = 0; bufs && k < n_chunks; k++)
        compute_free(c, bufs[k]);
    free(bufs);
    compute_free(c, hist);
    return rc;
}
