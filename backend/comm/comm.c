/* The registry and the generic layer every implementation runs under: argument and order
 * checks, each rank's published state (call, since when, sequence), per-call bytes and
 * latency, and the group's one failure, which every rank then reports. */
#include "backend/comm/comm_internal.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct comm_ops comm_cpu_ops;
extern const struct comm_ops comm_nccl_ops;

const struct comm_ops *const comm_table[] = {
    &comm_cpu_ops,
    &comm_nccl_ops,
    NULL,
};

static const char *const comm_op_names[COMM_OP_COUNT] = {"none", "init", "allreduce", "barrier",
                                                         "destroy"};

const char *comm_op_name(enum comm_op op) {
    return (unsigned)op < COMM_OP_COUNT ? comm_op_names[op] : "?";
}

int comm_open(const char *name, const struct comm_conf *conf, struct comm **out, char *err,
              size_t errlen) {
    const struct comm_ops *ops = NULL;
    for (size_t i = 0; comm_table[i]; i++)
        if (strcmp(comm_table[i]->name, name) == 0)
            ops = comm_table[i];
    if (!ops)
        return errbuf_set(err, errlen, -ENOENT, "unknown communicator '%s' (cpu, nccl)", name);
    if (conf->n_ranks < 1 || conf->n_ranks > COMM_MAX_RANKS)
        return errbuf_set(err, errlen, -EINVAL, "%u ranks: a group has 1 to %d", conf->n_ranks,
                          COMM_MAX_RANKS);
    struct comm *c = calloc(1, sizeof(*c) + conf->n_ranks * sizeof(struct comm_book));
    if (!c)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory for %u ranks", conf->n_ranks);
    c->ops = ops;
    c->n_ranks = conf->n_ranks;
    pthread_mutex_init(&c->mu, NULL);
    comm_cond_init(&c->changed);
    for (unsigned r = 0; r < c->n_ranks; r++)
        for (unsigned op = 0; op < COMM_OP_COUNT; op++)
            trace_hist_init(&c->book[r].hist[op]);
    int rc = ops->open(c, conf, err, errlen);
    if (rc != 0) {
        pthread_cond_destroy(&c->changed);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void comm_close(struct comm *c) {
    if (!c)
        return;
    c->ops->close(c);
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

unsigned comm_size(const struct comm *c) {
    return c->n_ranks;
}

const char *comm_name(const struct comm *c) {
    return c->ops->name;
}

size_t comm_peer_bytes(struct comm *c, unsigned rank) {
    return rank < c->n_ranks && c->ops->peer_bytes ? c->ops->peer_bytes(c, rank) : 0;
}

int comm_failed(const struct comm *c) {
    return atomic_load(&c->fail_rc);
}

static void comm_snapshot_locked(struct comm *c, struct comm_snap *out) {
    memset(out, 0, sizeof(*out));
    out->n_ranks = c->n_ranks;
    out->version = c->version;
    out->fail_rc = atomic_load(&c->fail_rc);
    snprintf(out->fail_why, sizeof(out->fail_why), "%s", c->fail_why);
    for (unsigned r = 0; r < c->n_ranks; r++)
        out->rank[r] = c->book[r].st;
}

void comm_snapshot(struct comm *c, struct comm_snap *out) {
    pthread_mutex_lock(&c->mu);
    comm_snapshot_locked(c, out);
    pthread_mutex_unlock(&c->mu);
}

/* Under mu: one more state change, and whoever waits for one is told. */
static void comm_changed(struct comm *c) {
    c->version++;
    pthread_cond_broadcast(&c->changed);
}

int comm_snapshot_wait(struct comm *c, uint64_t version, uint64_t timeout_ns,
                       struct comm_snap *out) {
    uint64_t now = mono_now_ns();
    uint64_t until = timeout_ns >= UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
    pthread_mutex_lock(&c->mu);
    while (c->version <= version && mono_now_ns() < until)
        comm_cond_wait_until(&c->changed, &c->mu, until);
    comm_snapshot_locked(c, out);
    pthread_mutex_unlock(&c->mu);
    return out->version > version ? 0 : -ETIMEDOUT;
}

int comm_fail(struct comm *c, int rc, const char *fmt, ...) {
    struct comm_snap s;
    char head[COMM_WHY_BYTES], who[COMM_WHY_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&c->mu);
    int first = atomic_load(&c->fail_rc) == 0;
    if (first) {
        comm_snapshot_locked(c, &s);
        comm_snap_describe(&s, mono_now_ns(), who, sizeof(who));
        errbuf_set(c->fail_why, sizeof(c->fail_why), 0, "%s: %s", head, who);
        atomic_store(&c->fail_rc, rc);
        comm_changed(c);
    }
    rc = atomic_load(&c->fail_rc);
    pthread_mutex_unlock(&c->mu);
    if (first)
        c->ops->wake(c);
    return rc;
}

int comm_failure(struct comm *c, char *err, size_t errlen) {
    pthread_mutex_lock(&c->mu);
    int rc = atomic_load(&c->fail_rc);
    errbuf_set(err, errlen, rc, "%s", c->fail_why);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void comm_abort(struct comm *c) {
    comm_fail(c, -ECANCELED, "aborted");
    if (c->ops->abort)
        c->ops->abort(c);
}

void comm_stats(struct comm *c, unsigned rank, enum comm_op op, struct comm_op_stats *out) {
    memset(out, 0, sizeof(*out));
    if (rank >= c->n_ranks || (unsigned)op >= COMM_OP_COUNT)
        return;
    pthread_mutex_lock(&c->mu);
    const struct comm_book *b = &c->book[rank];
    out->calls = b->calls[op];
    out->errors = b->errors[op];
    out->bytes = b->bytes[op];
    out->p50_ns = trace_hist_percentile(&b->hist[op], 50);
    out->p99_ns = trace_hist_percentile(&b->hist[op], 99);
    out->max_ns = b->hist[op].max_ns;
    out->sum_ns = b->hist[op].sum_ns;
    pthread_mutex_unlock(&c->mu);
}

void comm_hist(struct comm *c, unsigned rank, enum comm_op op, struct trace_hist *out) {
    if (rank >= c->n_ranks || (unsigned)op >= COMM_OP_COUNT) {
        trace_hist_init(out);
        return;
    }
    pthread_mutex_lock(&c->mu);
    *out = c->book[rank].hist[op];
    pthread_mutex_unlock(&c->mu);
}

/* ---- one call: checks, publication, the implementation, the record ---- */

struct comm_args {
    void *buf;
    size_t count;
    enum comm_dtype dt;
    enum comm_red red;
    void *stream;
};

static enum comm_life comm_life(struct comm *c, unsigned rank) {
    pthread_mutex_lock(&c->mu);
    enum comm_life life = (enum comm_life)c->book[rank].life;
    pthread_mutex_unlock(&c->mu);
    return life;
}

/* Bad arguments are the caller's own mistake: refused without touching the group. */
static int comm_check_args(const struct comm *c, unsigned rank, enum comm_op op,
                           const struct comm_args *a, char *err, size_t errlen) {
    if (rank >= c->n_ranks)
        return errbuf_set(err, errlen, -EINVAL, "%s: rank %u out of range (a group of %u)",
                          comm_op_name(op), rank, c->n_ranks);
    if (op == COMM_OP_ALLREDUCE && (!a->buf && a->count > 0))
        return errbuf_set(err, errlen, -EINVAL, "allreduce on rank %u: no buffer", rank);
    if (op == COMM_OP_ALLREDUCE && a->dt != COMM_F32 && a->dt != COMM_F64)
        return errbuf_set(err, errlen, -EINVAL, "allreduce on rank %u: unknown element type %d",
                          rank, (int)a->dt);
    if (op == COMM_OP_ALLREDUCE && a->red != COMM_RED_SUM && a->red != COMM_RED_MEAN)
        return errbuf_set(err, errlen, -EINVAL, "allreduce on rank %u: unknown reduction %d", rank,
                          (int)a->red);
    return 0;
}

/* So are calls out of order, once the group's own failure (the root cause, when there is one)
 * has been ruled out. */
static int comm_check_order(struct comm *c, unsigned rank, enum comm_op op, char *err,
                            size_t errlen) {
    enum comm_life life = comm_life(c, rank);
    if (op == COMM_OP_INIT && life != COMM_LIFE_NEW)
        return errbuf_set(err, errlen, -EINVAL, "init on rank %u: it already called init", rank);
    if (op != COMM_OP_INIT && op != COMM_OP_DESTROY && life != COMM_LIFE_JOINED)
        return errbuf_set(err, errlen, -EINVAL, "%s on rank %u: %s", comm_op_name(op), rank,
                          life == COMM_LIFE_NEW ? "it has not joined (init first)"
                                                : "it has left the group");
    return 0;
}

static void comm_enter(struct comm *c, unsigned rank, enum comm_op op, uint64_t now_ns) {
    pthread_mutex_lock(&c->mu);
    struct comm_rank_state *st = &c->book[rank].st;
    st->op = (uint8_t)op;
    st->since_ns = now_ns;
    st->seq++;
    comm_changed(c);
    pthread_mutex_unlock(&c->mu);
}

static void comm_leave(struct comm *c, unsigned rank, enum comm_op op, int rc, uint64_t bytes,
                       uint64_t t0_ns) {
    uint64_t dt = mono_now_ns() - t0_ns;
    pthread_mutex_lock(&c->mu);
    struct comm_book *b = &c->book[rank];
    b->st.op = COMM_OP_NONE;
    b->st.since_ns = 0;
    b->st.last_op = (uint8_t)op;
    b->st.last_rc = rc;
    b->calls[op]++;
    b->errors[op] += rc != 0;
    b->bytes[op] += rc == 0 ? bytes : 0;
    trace_hist_add(&b->hist[op], dt);
    if (op == COMM_OP_INIT)
        b->life = rc == 0 ? COMM_LIFE_JOINED : COMM_LIFE_LEFT;
    else if (op == COMM_OP_DESTROY)
        b->life = COMM_LIFE_LEFT;
    comm_changed(c);
    pthread_mutex_unlock(&c->mu);
}

static int comm_dispatch(struct comm *c, unsigned rank, enum comm_op op, const struct comm_args *a,
                         uint64_t deadline_ns, char *err, size_t errlen) {
    switch (op) {
    case COMM_OP_INIT:
        return c->ops->init(c, rank, a->stream, deadline_ns, err, errlen);
    case COMM_OP_ALLREDUCE:
        return c->ops->allreduce(c, rank, a->buf, a->count, a->dt, a->red, a->stream, deadline_ns,
                                 err, errlen);
    case COMM_OP_BARRIER:
        return c->ops->barrier(c, rank, deadline_ns, err, errlen);
    case COMM_OP_DESTROY:
        return c->ops->destroy(c, rank, deadline_ns, err, errlen);
    default:
        return errbuf_set(err, errlen, -EINVAL, "no such call");
    }
}

static uint64_t comm_deadline(uint64_t now_ns, uint64_t timeout_ns) {
    return timeout_ns >= UINT64_MAX - now_ns ? UINT64_MAX : now_ns + timeout_ns;
}

/* A failed call fails the group: its peers cannot complete the collective without this rank.
 * Every rank then reports the group's failure, the root cause, and whoever leaves a failed
 * call releases the device-side work of all (nccl: aborts the communicators). */
static int comm_call(struct comm *c, unsigned rank, enum comm_op op, const struct comm_args *a,
                     uint64_t timeout_ns, char *err, size_t errlen) {
    int rc = comm_check_args(c, rank, op, a, err, errlen);
    if (rc != 0)
        return rc;
    char why[COMM_WHY_BYTES + 64] = "";
    if (op == COMM_OP_DESTROY && comm_life(c, rank) != COMM_LIFE_JOINED)
        return 0; /* never joined, or already left: nothing to release */
    bool failed_before = comm_failed(c) != 0;
    if (failed_before && op != COMM_OP_DESTROY) {
        rc = comm_failure(c, why, sizeof(why));
        return errbuf_set(err, errlen, rc, "%s on rank %u: %s", comm_op_name(op), rank, why);
    }
    rc = comm_check_order(c, rank, op, err, errlen);
    if (rc != 0)
        return rc;
    uint64_t t0 = mono_now_ns();
    comm_enter(c, rank, op, t0);
    rc = comm_dispatch(c, rank, op, a, comm_deadline(t0, timeout_ns), why, sizeof(why));
    if (rc != 0 && !failed_before) {
        comm_fail(c, rc, "%s failed on rank %u: %s", comm_op_name(op), rank, why);
        rc = comm_failure(c, why, sizeof(why));
    }
    uint64_t bytes = op == COMM_OP_ALLREDUCE ? (uint64_t)(a->count * comm_dtype_bytes(a->dt)) : 0;
    comm_leave(c, rank, op, rc, bytes, t0);
    if (comm_failed(c) && c->ops->abort)
        c->ops->abort(c);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "%s on rank %u: %s", comm_op_name(op), rank, why);
    return 0;
}

int comm_init(struct comm *c, unsigned rank, void *stream, uint64_t timeout_ns, char *err,
              size_t errlen) {
    struct comm_args a = {.stream = stream};
    return comm_call(c, rank, COMM_OP_INIT, &a, timeout_ns, err, errlen);
}

size_t comm_dtype_bytes(enum comm_dtype dt) {
    return dt == COMM_F64 ? sizeof(double) : sizeof(float);
}

int comm_allreduce(struct comm *c, unsigned rank, void *buf, size_t count, enum comm_dtype dt,
                   enum comm_red red, void *stream, uint64_t timeout_ns, char *err, size_t errlen) {
    struct comm_args a = {.buf = buf, .count = count, .dt = dt, .red = red, .stream = stream};
    return comm_call(c, rank, COMM_OP_ALLREDUCE, &a, timeout_ns, err, errlen);
}

int comm_barrier(struct comm *c, unsigned rank, uint64_t timeout_ns, char *err, size_t errlen) {
    struct comm_args a = {0};
    return comm_call(c, rank, COMM_OP_BARRIER, &a, timeout_ns, err, errlen);
}

int comm_destroy(struct comm *c, unsigned rank, uint64_t timeout_ns, char *err, size_t errlen) {
    struct comm_args a = {0};
    return comm_call(c, rank, COMM_OP_DESTROY, &a, timeout_ns, err, errlen);
}
