/* The direct all-reduce path of the NCCL communicator: buffers, the init-time decision shared
 * by every rank, the launches, abort and release. See comm_peer.h. */
#include "backend/comm/comm_peer.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <string.h>

#ifdef RS_COMM_PEER
#include "kernels/rs_gpu.h"

#define COMM_PEER_ALIGN 256 /* the halves start on whole cache lines */

/* This rank's buffers on its current device: 0 or the runtime's error. */
static int comm_peer_setup(struct comm_peer *p, struct comm_peer_rank *me) {
    int e = rs_gpu_get_device(&me->dev);
    void *abort_word = NULL;
    if (e == 0)
        e = rs_gpu_malloc(&me->stage, 2 * p->half_bytes);
    if (e == 0)
        e = rs_gpu_malloc((void **)&me->flags, RS_GPU_PEER_FLAG_BYTES);
    if (e == 0)
        e = rs_gpu_memset0(me->flags, RS_GPU_PEER_FLAG_BYTES, NULL);
    if (e == 0)
        e = rs_gpu_stream_sync(NULL);
    if (e == 0)
        e = rs_gpu_host_alloc(&abort_word, sizeof(uint32_t));
    if (e == 0) {
        *(volatile uint32_t *)abort_word = 0;
        atomic_store(&me->abort, (uint32_t *)abort_word);
        e = rs_gpu_event_create_untimed(&me->done);
    }
    return e;
}

/* After every rank published its buffers: let this rank's device reach every other rank's. */
static int comm_peer_enable(struct comm_peer *p, unsigned rank, unsigned n) {
    const struct comm_peer_rank *me = &p->rank[rank];
    for (unsigned r = 0; r < n; r++) {
        const struct comm_peer_rank *o = &p->rank[r];
        if (o->rc != 0)
            return o->rc;
        if (o->dev == me->dev)
            continue;
        int can = 0, e = rs_gpu_peer_access(me->dev, o->dev, &can);
        if (e != 0 || !can)
            return e != 0 ? e : -1;
        e = rs_gpu_peer_enable(o->dev);
        if (e != 0)
            return e;
    }
    return 0;
}

int comm_peer_join(struct comm *c, struct comm_peer *p, struct comm_rdv *rdv, unsigned rank,
                   size_t max_bytes, uint64_t deadline_ns, char *err, size_t errlen) {
    struct comm_peer_rank *me = &p->rank[rank];
    me->dev = -1;
    if (max_bytes == 0 || !rs_gpu_peer_supported())
        return 0; /* every rank sees the same: no rendezvous needed */
    p->half_bytes = (max_bytes + COMM_PEER_ALIGN - 1) / COMM_PEER_ALIGN * COMM_PEER_ALIGN;
    me->rc = comm_peer_setup(p, me);
    int rc = comm_rdv_wait(c, rdv, rank, COMM_OP_INIT, 1, deadline_ns, false, err, errlen);
    if (rc != 0)
        return rc;
    int e = comm_peer_enable(p, rank, c->n_ranks);
    /* the others are done reading the published rc: it may now say whether this rank got on */
    rc = comm_rdv_wait(c, rdv, rank, COMM_OP_INIT, 2, deadline_ns, false, err, errlen);
    if (rc != 0)
        return rc;
    if (me->rc == 0)
        me->rc = e;
    rc = comm_rdv_wait(c, rdv, rank, COMM_OP_INIT, 3, deadline_ns, false, err, errlen);
    if (rc != 0)
        return rc;
    bool on = true; /* every rank reads the same final answers */
    for (unsigned r = 0; r < c->n_ranks; r++)
        on = on && p->rank[r].rc == 0;
    me->on = on;
    return 0;
}

bool comm_peer_takes(const struct comm_peer *p, unsigned rank, size_t count, enum comm_dtype dt) {
    return p->rank[rank].on && count > 0 && count * comm_dtype_bytes(dt) <= p->half_bytes;
}

int comm_peer_allreduce(struct comm_peer *p, unsigned rank, unsigned n_ranks, void *buf,
                        size_t count, enum comm_dtype dt, enum comm_red red, void *stream,
                        char *err, size_t errlen) {
    struct comm_peer_rank *me = &p->rank[rank];
    struct rs_gpu_peer_reduce a = {
        .buf = buf,
        .count = count,
        .f64 = dt == COMM_F64,
        .mean = red == COMM_RED_MEAN,
        .rank = rank,
        .n_ranks = n_ranks,
        .seq = me->seq + 1,
        .half_bytes = p->half_bytes,
        .abort = atomic_load(&me->abort),
    };
    for (unsigned r = 0; r < n_ranks; r++) {
        a.stage[r] = p->rank[r].stage;
        a.flags[r] = p->rank[r].flags;
    }
    int e = rs_gpu_peer_allreduce(&a, stream);
    if (e == 0)
        e = rs_gpu_event_record(me->done, stream);
    if (e != 0)
        return errbuf_set(err, errlen, -EIO, "the peer-memory all-reduce: %s",
                          rs_gpu_err_string(e));
    me->seq = a.seq;
    return 0;
}

void comm_peer_abort(struct comm_peer *p, unsigned n_ranks) {
    for (unsigned r = 0; r < n_ranks; r++) {
        uint32_t *w = atomic_load(&p->rank[r].abort);
        if (w)
            *(volatile uint32_t *)w = 1;
    }
}

void comm_peer_free(struct comm_peer *p, unsigned n_ranks) {
    bool any = false;
    for (unsigned r = 0; r < n_ranks; r++) { /* a kernel still queued reads every rank's memory */
        const struct comm_peer_rank *me = &p->rank[r];
        if (me->done && rs_gpu_event_query(me->done) != 0)
            return;
        any = any || me->stage || me->flags || me->done || atomic_load(&me->abort);
    }
    if (!any)
        return; /* never set up: the runtime is left alone */
    int cur = -1;
    (void)rs_gpu_get_device(&cur);
    for (unsigned r = 0; r < n_ranks; r++) {
        struct comm_peer_rank *me = &p->rank[r];
        uint32_t *w = atomic_exchange(&me->abort, NULL);
        if (me->dev >= 0)
            (void)rs_gpu_use_device(me->dev);
        if (me->done)
            (void)rs_gpu_event_destroy(me->done);
        if (me->stage)
            (void)rs_gpu_free(me->stage);
        if (me->flags)
            (void)rs_gpu_free(me->flags);
        if (w)
            (void)rs_gpu_host_free(w);
        me->done = me->stage = NULL;
        me->flags = NULL;
        me->on = false;
    }
    if (cur >= 0)
        (void)rs_gpu_use_device(cur);
}

#else /* no GPU kernels in this build: the library takes every all-reduce */

int comm_peer_join(struct comm *c, struct comm_peer *p, struct comm_rdv *rdv, unsigned rank,
                   size_t max_bytes, uint64_t deadline_ns, char *err, size_t errlen) {
    (void)c, (void)rdv, (void)max_bytes, (void)deadline_ns, (void)err, (void)errlen;
    p->rank[rank].dev = -1;
    return 0;
}

bool comm_peer_takes(const struct comm_peer *p, unsigned rank, size_t count, enum comm_dtype dt) {
    (void)p, (void)rank, (void)count, (void)dt;
    return false;
}

int comm_peer_allreduce(struct comm_peer *p, unsigned rank, unsigned n_ranks, void *buf,
                        size_t count, enum comm_dtype dt, enum comm_red red, void *stream,
                        char *err, size_t errlen) {
    (void)p, (void)rank, (void)n_ranks, (void)buf, (void)count, (void)dt, (void)red, (void)stream;
    return errbuf_set(err, errlen, -ENOSYS, "no peer-memory all-reduce in this build");
}

void comm_peer_abort(struct comm_peer *p, unsigned n_ranks) {
    (void)p, (void)n_ranks;
}

void comm_peer_free(struct comm_peer *p, unsigned n_ranks) {
    (void)p, (void)n_ranks;
}

#endif
