/* What the generic communicator layer shares with its implementations: the group's object,
 * its failure, and the host rendezvous that the CPU implementation builds every collective on
 * and the NCCL one its barrier. */
#ifndef RINGSIDE_BACKEND_COMM_COMM_INTERNAL_H
#define RINGSIDE_BACKEND_COMM_COMM_INTERNAL_H

#include "backend/comm/comm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Where a rank is in its life in the group. */
enum comm_life {
    COMM_LIFE_NEW,    /* before a successful init */
    COMM_LIFE_JOINED, /* between init and destroy */
    COMM_LIFE_LEFT,   /* after destroy, or after an init that failed */
};

/* One rank's published state and its record, guarded by comm.mu. */
struct comm_book {
    struct comm_rank_state st;
    uint8_t life; /* enum comm_life */
    uint64_t calls[COMM_OP_COUNT], errors[COMM_OP_COUNT], bytes[COMM_OP_COUNT];
    struct trace_hist hist[COMM_OP_COUNT];
};

struct comm {
    const struct comm_ops *ops;
    void *priv; /* owned by the implementation */
    unsigned n_ranks;
    _Atomic int fail_rc;           /* 0 while healthy; set once, by the first failure */
    pthread_mutex_t mu;            /* guards book[], fail_why and version */
    pthread_cond_t changed;        /* broadcast with every version (CLOCK_MONOTONIC) */
    uint64_t version;              /* state changes so far */
    char fail_why[COMM_WHY_BYTES]; /* written once, with fail_rc, under mu */
    struct comm_book book[];
};

/* Fail the group (the first failure wins; later ones change nothing): rc and the text "why:
 * <who waits for whom>" are recorded, then every wait is woken (ops->wake). Callable inside a
 * call, with no lock of the implementation held. Returns the group's failure code. */
int comm_fail(struct comm *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The group's failure code with its text in err (0 and "" while healthy). */
int comm_failure(struct comm *c, char *err, size_t errlen);

/* ---- the host rendezvous: all n ranks arrive, then all leave ---- */

struct comm_rdv {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    unsigned n;
    uint64_t gen;     /* rounds completed; a waiter's round is over when gen moves on */
    unsigned arrived; /* in the round under way */
    uint8_t op;       /* the round's call and argument, set by its first arrival */
    uint64_t arg;
    unsigned first; /* the rank that arrived first */
};

/* n ranks. 0 or -errno. */
int comm_rdv_init(struct comm_rdv *r, unsigned n);
void comm_rdv_fini(struct comm_rdv *r);

/* Arrive in a round of op with arg (ranks must agree on both) and wait for the other ranks.
 * 0 once all n arrived. A rank that is still waiting at deadline_ns withdraws and fails the
 * group (-ETIMEDOUT); a failed group withdraws every waiter with its failure; a rank that
 * brings a different op or arg fails it with -EINVAL. hold: wait for the round whatever the
 * deadline or the group's state (for a round every rank is sure to reach at once, such as the
 * end of a reduction whose buffers must not be returned early). */
int comm_rdv_wait(struct comm *c, struct comm_rdv *r, unsigned rank, enum comm_op op, uint64_t arg,
                  uint64_t deadline_ns, bool hold, char *err, size_t errlen);

/* Wake every waiter so it looks at the group's state (after comm_fail). */
void comm_rdv_wake(struct comm_rdv *r);
/* The arg of an all-reduce's rendezvous: ranks must agree on all three. */
uint64_t comm_rdv_arg(size_t count, enum comm_dtype dt, enum comm_red red);

/* Condition variables on CLOCK_MONOTONIC, so deadlines are mono_now_ns() times. */
void comm_cond_init(pthread_cond_t *cv);
/* Wait on cv until signalled or until_ns; returns pthread_cond_timedwait's result. */
int comm_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t until_ns);

#endif
