/* The host rendezvous: a generation-counted barrier for the ranks' threads, on a monotonic
 * condition variable (no spinning, no sleeping), that gives up at a deadline or when the group
 * fails and says which rank brought the wrong call. */
#include "backend/comm/comm_internal.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void comm_cond_init(pthread_cond_t *cv) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

int comm_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t until_ns) {
    if (until_ns == UINT64_MAX)
        return pthread_cond_wait(cv, mu);
    struct timespec ts = {(time_t)(until_ns / 1000000000ull), (long)(until_ns % 1000000000ull)};
    return pthread_cond_timedwait(cv, mu, &ts);
}

int comm_rdv_init(struct comm_rdv *r, unsigned n) {
    memset(r, 0, sizeof(*r));
    r->n = n;
    int rc = pthread_mutex_init(&r->mu, NULL);
    if (rc != 0)
        return -rc;
    comm_cond_init(&r->cv);
    return 0;
}

void comm_rdv_fini(struct comm_rdv *r) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
}

void comm_rdv_wake(struct comm_rdv *r) {
    pthread_mutex_lock(&r->mu);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

uint64_t comm_rdv_arg(size_t count, enum comm_dtype dt, enum comm_red red) {
    return ((uint64_t)count << 2) | ((uint64_t)dt << 1) | (uint64_t)red;
}

/* "allreduce of 8 floats (sum)", "barrier". */
static void comm_rdv_what(enum comm_op op, uint64_t arg, char *buf, size_t n) {
    if (op == COMM_OP_ALLREDUCE)
        snprintf(buf, n, "allreduce of %llu %s (%s)", (unsigned long long)(arg >> 2),
                 (arg >> 1 & 1) == COMM_F64 ? "doubles" : "floats",
                 (arg & 1) == COMM_RED_MEAN ? "mean" : "sum");
    else
        snprintf(buf, n, "%s", comm_op_name(op));
}

/* Ranks in different collectives would wait for each other for ever: the group fails now. */
static int comm_rdv_mismatch(struct comm *c, struct comm_rdv *r, unsigned rank, enum comm_op op,
                             uint64_t arg, char *err, size_t errlen) {
    char mine[64], theirs[64];
    comm_rdv_what(op, arg, mine, sizeof(mine));
    comm_rdv_what((enum comm_op)r->op, r->arg, theirs, sizeof(theirs));
    unsigned first = r->first;
    pthread_mutex_unlock(&r->mu);
    comm_fail(c, -EINVAL, "rank %u called %s while rank %u is in %s", rank, mine, first, theirs);
    return comm_failure(c, err, errlen);
}

/* The waiter's round did not complete: it takes its arrival back so the round cannot complete
 * without it (its buffers are about to be returned to the caller), then reports why. */
static int comm_rdv_withdraw(struct comm *c, struct comm_rdv *r, unsigned rank, char *err,
                             size_t errlen) {
    r->arrived--;
    pthread_mutex_unlock(&r->mu);
    if (!comm_failed(c))
        comm_fail(c, -ETIMEDOUT, "timed out on rank %u", rank);
    return comm_failure(c, err, errlen);
}

int comm_rdv_wait(struct comm *c, struct comm_rdv *r, unsigned rank, enum comm_op op, uint64_t arg,
                  uint64_t deadline_ns, bool hold, char *err, size_t errlen) {
    pthread_mutex_lock(&r->mu);
    if (!hold && comm_failed(c)) {
        pthread_mutex_unlock(&r->mu);
        return comm_failure(c, err, errlen);
    }
    if (r->arrived == 0) {
        r->op = (uint8_t)op;
        r->arg = arg;
        r->first = rank;
    } else if (r->op != op || r->arg != arg) {
        return comm_rdv_mismatch(c, r, rank, op, arg, err, errlen);
    }
    uint64_t gen = r->gen;
    if (++r->arrived == r->n) {
        r->arrived = 0;
        r->gen++;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        return 0;
    }
    while (r->gen == gen) {
        if (!hold && (comm_failed(c) || mono_now_ns() >= deadline_ns))
            return comm_rdv_withdraw(c, r, rank, err, errlen);
        comm_cond_wait_until(&r->cv, &r->mu, hold ? UINT64_MAX : deadline_ns);
    }
    pthread_mutex_unlock(&r->mu);
    return 0;
}
