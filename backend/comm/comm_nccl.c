/* The NCCL communicator (RCCL on AMD): one NCCL communicator per rank, created non-blocking so
 * that no call can hang: init and finalize are polled until ready, an error, the deadline or
 * the group's failure, and a failed group aborts every rank's communicator, which also stops a
 * kernel left waiting for a peer. The all-reduce runs on the caller's stream, small ones
 * through the direct path (comm_peer.h) when the devices reach each other's memory; the
 * barrier is a host rendezvous of the ranks' threads. */
#include "backend/comm/comm_nccl_internal.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define COMM_NCCL_SPIN_NS    200000ull   /* polls without a pause first: an enqueue is quick */
#define COMM_NCCL_NAP_MIN_NS 50000ull    /* first pause between polls */
#define COMM_NCCL_NAP_MAX_NS 20000000ull /* longest: init takes seconds, this is noise */

static void comm_nccl_free(struct comm_nccl *s, unsigned n) {
    comm_peer_free(&s->peer, n);
    for (unsigned r = 0; r < n; r++)
        pthread_mutex_destroy(&s->rank[r].use);
    comm_rdv_fini(&s->rdv);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    if (s->lib)
        dlclose(s->lib);
    free(s);
}

/* The library's version (2.14 or later) and the group's id, which every rank's init needs. */
static int comm_nccl_start(struct comm_nccl *s, char *err, size_t errlen) {
    char have[40];
    int r = s->fn.get_version(&s->version);
    if (r != COMM_NCCL_SUCCESS)
        return comm_nccl_err(s, "ncclGetVersion", r, err, errlen);
    comm_nccl_version_text(s, s->version, have, sizeof(have));
    if (s->version < COMM_NCCL_MIN_VERSION)
        return errbuf_set(err, errlen, -ENOTSUP,
                          "%s is too old: need 2.14 or newer (non-blocking communicators)", have);
    r = s->fn.get_unique_id(&s->id);
    if (r == COMM_NCCL_SUCCESS)
        r = s->fn.get_unique_id(&s->data_id);
    if (r != COMM_NCCL_SUCCESS)
        return comm_nccl_err(s, "ncclGetUniqueId", r, err, errlen);
    return 0;
}

static int comm_nccl_open(struct comm *c, const struct comm_conf *conf, char *err, size_t errlen) {
    struct comm_nccl *s = calloc(1, sizeof(*s) + conf->n_ranks * sizeof(struct comm_nccl_rank));
    if (!s)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    s->peer_max = conf->peer_max_bytes;
    pthread_mutex_init(&s->mu, NULL);
    comm_cond_init(&s->cv);
    for (unsigned r = 0; r < conf->n_ranks; r++)
        pthread_mutex_init(&s->rank[r].use, NULL);
    int rc = comm_rdv_init(&s->rdv, conf->n_ranks);
    if (rc == 0)
        rc = comm_nccl_load(s, conf->lib, err, errlen);
    if (rc == 0)
        rc = comm_nccl_start(s, err, errlen);
    if (rc != 0) {
        comm_nccl_free(s, conf->n_ranks);
        return rc;
    }
    c->priv = s;
    return 0;
}

/* Abort the rank's communicators, if it has them. Its use lock is held. */
static void comm_nccl_drop(struct comm_nccl *s, struct comm_nccl_rank *me) {
    if (me->data)
        s->fn.abort(me->data);
    if (me->h)
        s->fn.abort(me->h);
    me->h = me->data = NULL;
}

static void comm_nccl_close(struct comm *c) {
    struct comm_nccl *s = c->priv;
    for (unsigned r = 0; r < c->n_ranks; r++)
        comm_nccl_drop(s, &s->rank[r]); /* no rank is inside a call: no lock needed */
    comm_nccl_free(s, c->n_ranks);
}

/* Nap until until_ns or a wake, unless the group has already failed. */
static void comm_nccl_nap(struct comm *c, struct comm_nccl *s, uint64_t until_ns) {
    pthread_mutex_lock(&s->mu);
    if (!comm_failed(c))
        comm_cond_wait_until(&s->cv, &s->mu, until_ns);
    pthread_mutex_unlock(&s->mu);
}

/* Poll h until it is no longer in progress after `call`: 0 when it is ready, the library's
 * error, the group's failure, or -ETIMEDOUT at the deadline (failing the group). NCCL has no
 * completion to wait on, so the polls are spaced by naps that grow to 20 ms and that wake
 * cuts short. */
static int comm_nccl_poll(struct comm *c, struct comm_nccl *s, unsigned rank, const char *call,
                          uint64_t deadline_ns, char *err, size_t errlen) {
    struct comm_nccl_handle *h = s->rank[rank].h;
    uint64_t spin_until = mono_now_ns() + COMM_NCCL_SPIN_NS;
    for (uint64_t nap = COMM_NCCL_NAP_MIN_NS;;
         nap = nap * 2 < COMM_NCCL_NAP_MAX_NS ? nap * 2 : COMM_NCCL_NAP_MAX_NS) {
        int state = COMM_NCCL_IN_PROGRESS;
        int r = s->fn.get_async_error(h, &state);
        if (r != COMM_NCCL_SUCCESS)
            return comm_nccl_err(s, "ncclCommGetAsyncError", r, err, errlen);
        if (state == COMM_NCCL_SUCCESS)
            return 0;
        if (state != COMM_NCCL_IN_PROGRESS)
            return comm_nccl_err(s, call, state, err, errlen);
        if (comm_failed(c))
            return comm_failure(c, err, errlen);
        uint64_t now = mono_now_ns();
        if (now >= deadline_ns) {
            comm_fail(c, -ETIMEDOUT, "timed out on rank %u (%s still in progress)", rank, call);
            return comm_failure(c, err, errlen);
        }
        if (now < spin_until) {
            nap = COMM_NCCL_NAP_MIN_NS / 2; /* the first nap after the spin is the shortest */
            continue;
        }
        comm_nccl_nap(c, s, deadline_ns - now > nap ? now + nap : deadline_ns);
    }
}

/* The configuration NCCL_CONFIG_INITIALIZER gives, but non-blocking. */
static struct comm_nccl_config comm_nccl_config(void) {
    struct comm_nccl_config cfg = {
        .size = sizeof(struct comm_nccl_config),
        .magic = COMM_NCCL_CONFIG_MAGIC,
        .version = COMM_NCCL_CONFIG_VERSION,
        .blocking = 0,
        .cga_cluster_size = COMM_NCCL_UNDEF_INT,
        .min_ctas = COMM_NCCL_UNDEF_INT,
        .max_ctas = COMM_NCCL_UNDEF_INT,
        .net_name = NULL,
        .split_share = COMM_NCCL_UNDEF_INT,
    };
    return cfg;
}

static int comm_nccl_init(struct comm *c, unsigned rank, void *stream, uint64_t deadline_ns,
                          char *err, size_t errlen) {
    struct comm_nccl *s = c->priv;
    struct comm_nccl_rank *me = &s->rank[rank];
    struct comm_nccl_config cfg = comm_nccl_config();
    struct comm_nccl_handle *h = NULL;
    pthread_mutex_lock(&me->use);
    me->stream = stream;
    int rc, r = s->fn.init_rank_config(&h, (int)c->n_ranks, s->id, (int)rank, &cfg);
    me->h = h;
    if (r != COMM_NCCL_SUCCESS && r != COMM_NCCL_IN_PROGRESS)
        rc = comm_nccl_err(s, "ncclCommInitRankConfig", r, err, errlen);
    else
        rc = comm_nccl_poll(c, s, rank, "ncclCommInitRankConfig", deadline_ns, err, errlen);
    if (rc == 0) { /* every rank has joined: the blocking one for the steps cannot wait long */
        struct comm_nccl_handle *d = NULL;
        cfg.blocking = 1;
        if (s->fn.init_rank_config(&d, (int)c->n_ranks, s->data_id, (int)rank, &cfg) ==
            COMM_NCCL_SUCCESS)
            me->data = d;
        else if (d)
            s->fn.abort(d);
        rc = comm_peer_join(c, &s->peer, &s->rdv, rank, s->peer_max, deadline_ns, err, errlen);
    }
    if (rc != 0)
        comm_nccl_drop(s, me);
    pthread_mutex_unlock(&me->use);
    return rc;
}

static int comm_nccl_allreduce(struct comm *c, unsigned rank, void *buf, size_t count,
                               enum comm_dtype dt, enum comm_red red, void *stream,
                               uint64_t deadline_ns, char *err, size_t errlen) {
    struct comm_nccl *s = c->priv;
    struct comm_nccl_rank *me = &s->rank[rank];
    int op = red == COMM_RED_MEAN ? COMM_NCCL_AVG : COMM_NCCL_SUM, rc = 0;
    pthread_mutex_lock(&me->use);
    if (!me->h) {
        rc = errbuf_set(err, errlen, -EBADF, "rank %u has no communicator", rank);
    } else if (comm_peer_takes(&s->peer, rank, count, dt)) {
        rc = comm_peer_allreduce(&s->peer, rank, c->n_ranks, buf, count, dt, red,
                                 stream ? stream : me->stream, err, errlen);
    } else {
        int r = s->fn.all_reduce(buf, buf, count,
                                 dt == COMM_F64 ? COMM_NCCL_FLOAT64 : COMM_NCCL_FLOAT32, op,
                                 me->data ? me->data : me->h, stream ? stream : me->stream);
        if (r == COMM_NCCL_IN_PROGRESS) /* enqueueing, not the reduction: poll until queued */
            rc = comm_nccl_poll(c, s, rank, "ncclAllReduce", deadline_ns, err, errlen);
        else if (r != COMM_NCCL_SUCCESS)
            rc = comm_nccl_err(s, "ncclAllReduce", r, err, errlen);
    }
    pthread_mutex_unlock(&me->use);
    return rc;
}

static int comm_nccl_barrier(struct comm *c, unsigned rank, uint64_t deadline_ns, char *err,
                             size_t errlen) {
    struct comm_nccl *s = c->priv;
    return comm_rdv_wait(c, &s->rdv, rank, COMM_OP_BARRIER, 0, deadline_ns, false, err, errlen);
}

/* Finalize (which waits for the peers: the hang users see at the end of a run) polled to
 * completion, then a destroy that no longer blocks; out of time, the communicator is aborted
 * and the group with it. */
static int comm_nccl_leave(struct comm *c, struct comm_nccl *s, unsigned rank, uint64_t deadline_ns,
                           char *err, size_t errlen) {
    struct comm_nccl_rank *me = &s->rank[rank];
    if (me->data) /* its work is done (the caller synchronized): released without a wait */
        s->fn.abort(me->data);
    me->data = NULL;
    int r = s->fn.finalize(me->h);
    if (r != COMM_NCCL_SUCCESS && r != COMM_NCCL_IN_PROGRESS)
        return comm_nccl_err(s, "ncclCommFinalize", r, err, errlen);
    int rc = comm_nccl_poll(c, s, rank, "ncclCommFinalize", deadline_ns, err, errlen);
    if (rc != 0)
        return rc;
    r = s->fn.destroy(me->h);
    me->h = NULL; /* freed whatever it answered */
    return r == COMM_NCCL_SUCCESS ? 0 : comm_nccl_err(s, "ncclCommDestroy", r, err, errlen);
}

static int comm_nccl_destroy(struct comm *c, unsigned rank, uint64_t deadline_ns, char *err,
                             size_t errlen) {
    struct comm_nccl *s = c->priv;
    struct comm_nccl_rank *me = &s->rank[rank];
    int rc = 0;
    pthread_mutex_lock(&me->use);
    if (me->h && !comm_failed(c))
        rc = comm_nccl_leave(c, s, rank, deadline_ns, err, errlen);
    comm_nccl_drop(s, me); /* failed group, or a failed finalize: abort */
    pthread_mutex_unlock(&me->use);
    return rc;
}

static void comm_nccl_wake(struct comm *c) {
    struct comm_nccl *s = c->priv;
    comm_peer_abort(&s->peer, c->n_ranks); /* a direct all-reduce's wait for a peer, too */
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    comm_rdv_wake(&s->rdv);
}

/* Every rank's communicator, also of ranks that are not in a call (one whose thread waits on
 * its stream for a kernel that waits for a peer): a rank inside a call was woken and holds its
 * lock only until it sees the failure. */
static void comm_nccl_abort(struct comm *c) {
    struct comm_nccl *s = c->priv;
    comm_peer_abort(&s->peer, c->n_ranks);
    for (unsigned r = 0; r < c->n_ranks; r++) {
        pthread_mutex_lock(&s->rank[r].use);
        comm_nccl_drop(s, &s->rank[r]);
        pthread_mutex_unlock(&s->rank[r].use);
    }
}

static size_t comm_nccl_peer_bytes(struct comm *c, unsigned rank) {
    struct comm_nccl *s = c->priv;
    return s->peer.rank[rank].on ? s->peer.half_bytes : 0;
}

const struct comm_ops comm_nccl_ops = {
    .name = "nccl",
    .open = comm_nccl_open,
    .close = comm_nccl_close,
    .init = comm_nccl_init,
    .allreduce = comm_nccl_allreduce,
    .barrier = comm_nccl_barrier,
    .destroy = comm_nccl_destroy,
    .wake = comm_nccl_wake,
    .abort = comm_nccl_abort,
    .peer_bytes = comm_nccl_peer_bytes,
};
