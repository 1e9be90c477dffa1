/* The CPU communicator: the ranks' threads reduce through shared memory, every collective a
 * host rendezvous. The all-reduce is deterministic: each rank adds the buffers in rank order,
 * so every rank gets bitwise the same numbers, the same a single thread adding them in rank order
 * would get. */
#include "backend/comm/comm_internal.h"
#include "backend/core/errbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct comm_cpu_rank {
    void *buf;     /* the rank's buffer in the all-reduce under way: read by every rank */
    void *scratch; /* its private sum, copied into buf once every rank has read */
    size_t cap;    /* bytes scratch holds */
};

struct comm_cpu {
    struct comm_rdv rdv;
    struct comm_cpu_rank rank[];
};

static int comm_cpu_open(struct comm *c, const struct comm_conf *conf, char *err, size_t errlen) {
    struct comm_cpu *s = calloc(1, sizeof(*s) + conf->n_ranks * sizeof(struct comm_cpu_rank));
    if (!s)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    int rc = comm_rdv_init(&s->rdv, conf->n_ranks);
    if (rc != 0) {
        free(s);
        return errbuf_set(err, errlen, rc, "cannot set up the rendezvous: %s", strerror(-rc));
    }
    c->priv = s;
    return 0;
}

static void comm_cpu_close(struct comm *c) {
    struct comm_cpu *s = c->priv;
    for (unsigned r = 0; r < c->n_ranks; r++)
        free(s->rank[r].scratch);
    comm_rdv_fini(&s->rdv);
    free(s);
}

static int comm_cpu_init(struct comm *c, unsigned rank, void *stream, uint64_t deadline_ns,
                         char *err, size_t errlen) {
    (void)stream;
    struct comm_cpu *s = c->priv;
    return comm_rdv_wait(c, &s->rdv, rank, COMM_OP_INIT, 0, deadline_ns, false, err, errlen);
}

static int comm_cpu_barrier(struct comm *c, unsigned rank, uint64_t deadline_ns, char *err,
                            size_t errlen) {
    struct comm_cpu *s = c->priv;
    return comm_rdv_wait(c, &s->rdv, rank, COMM_OP_BARRIER, 0, deadline_ns, false, err, errlen);
}

static int comm_cpu_destroy(struct comm *c, unsigned rank, uint64_t deadline_ns, char *err,
                            size_t errlen) {
    struct comm_cpu *s = c->priv;
    if (comm_failed(c))
        return 0; /* nothing is held beyond the group's memory, which close frees */
    return comm_rdv_wait(c, &s->rdv, rank, COMM_OP_DESTROY, 0, deadline_ns, false, err, errlen);
}

/* out = buf[0] + buf[1] + ... in rank order, element by element (each element's additions in
 * the same order whichever rank computes it), then / n for the mean. */
#define COMM_CPU_SUM(T)                                                                            \
    static void comm_cpu_sum_##T(const struct comm_cpu *s, unsigned n, size_t count,               \
                                 enum comm_red red, T *out) {                                      \
        memcpy(out, s->rank[0].buf, count * sizeof(T));                                            \
        for (unsigned r = 1; r < n; r++) {                                                         \
            const T *b = s->rank[r].buf;                                                           \
            for (size_t i = 0; i < count; i++)                                                     \
                out[i] += b[i];                                                                    \
        }                                                                                          \
        if (red == COMM_RED_MEAN)                                                                  \
            for (size_t i = 0; i < count; i++)                                                     \
                out[i] /= (T)n;                                                                    \
    }
COMM_CPU_SUM(float)
COMM_CPU_SUM(double)

static int comm_cpu_reserve(struct comm_cpu_rank *me, size_t bytes, char *err, size_t errlen) {
    if (bytes <= me->cap)
        return 0;
    void *p = realloc(me->scratch, bytes);
    if (!p)
        return errbuf_set(err, errlen, -ENOMEM, "no memory for %zu bytes", bytes);
    me->scratch = p;
    me->cap = bytes;
    return 0;
}

/* Two rounds: after the first every buffer is published and may be read; after the second
 * every rank has read them all, so each may overwrite its own. The second round is held
 * whatever the deadline or an abort: every rank is past the first and only computing, and a
 * rank that left early would hand its buffer back while others still read it. */
static int comm_cpu_allreduce(struct comm *c, unsigned rank, void *buf, size_t count,
                              enum comm_dtype dt, enum comm_red red, void *stream,
                              uint64_t deadline_ns, char *err, size_t errlen) {
    (void)stream;
    struct comm_cpu *s = c->priv;
    struct comm_cpu_rank *me = &s->rank[rank];
    size_t bytes = count * comm_dtype_bytes(dt);
    int rc = comm_cpu_reserve(me, bytes, err, errlen);
    if (rc != 0)
        return rc;
    me->buf = buf;
    uint64_t arg = comm_rdv_arg(count, dt, red);
    rc = comm_rdv_wait(c, &s->rdv, rank, COMM_OP_ALLREDUCE, arg, deadline_ns, false, err, errlen);
    if (rc != 0)
        return rc;
    if (count > 0 && dt == COMM_F64)
        comm_cpu_sum_double(s, c->n_ranks, count, red, me->scratch);
    else if (count > 0)
        comm_cpu_sum_float(s, c->n_ranks, count, red, me->scratch);
    comm_rdv_wait(c, &s->rdv, rank, COMM_OP_ALLREDUCE, arg, UINT64_MAX, true, err, errlen);
    if (count > 0)
        memcpy(buf, me->scratch, bytes);
    return 0;
}

static void comm_cpu_wake(struct comm *c) {
    struct comm_cpu *s = c->priv;
    comm_rdv_wake(&s->rdv);
}

const struct comm_ops comm_cpu_ops = {
    .name = "cpu",
    .open = comm_cpu_open,
    .close = comm_cpu_close,
    .init = comm_cpu_init,
    .allreduce = comm_cpu_allreduce,
    .barrier = comm_cpu_barrier,
    .destroy = comm_cpu_destroy,
    .wake = comm_cpu_wake,
    .abort = NULL,
};
