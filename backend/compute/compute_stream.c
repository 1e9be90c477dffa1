/* One worker thread draining a bounded FIFO of operations with copied arguments. Both sides
 * spin briefly before sleeping, as GPU runtimes do: a queue of short operations would
 * otherwise pay a thread sleep and wake-up for each one. */
#include "backend/compute/compute_stream.h"

#include "backend/core/mono.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define COMPUTE_STREAM_SPIN_NS 50000u /* how long a side polls before it sleeps */

struct compute_stream_op {
    compute_stream_fn fn;
    _Alignas(max_align_t) unsigned char arg[COMPUTE_STREAM_ARG_MAX];
};

struct compute_stream {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full, idle;
    struct compute_stream_op *q;
    size_t cap, head, count;
    uint64_t enqueued, completed; /* wait() waits for completed to reach a target */
    atomic_uint_least64_t enqueued_a, completed_a; /* copies for the lock-free spin */
    int sticky;
    bool stop;
    pthread_t worker;
};

/* Poll *counter until it reaches target or the spin budget is spent. */
static void compute_stream_spin(atomic_uint_least64_t *counter, uint64_t target) {
    uint64_t t0 = mono_now_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(counter, memory_order_acquire) >= target)
            return;
        if ((i & 63) == 0) {
            if (mono_now_ns() - t0 > COMPUTE_STREAM_SPIN_NS)
                return;
            sched_yield();
        }
    }
}

static void *compute_stream_main(void *arg) {
    struct compute_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (s->count == 0 && !s->stop) {
            uint64_t done = s->completed;
            pthread_mutex_unlock(&s->lock);
            compute_stream_spin(&s->enqueued_a, done + 1);
            pthread_mutex_lock(&s->lock);
        }
        while (s->count == 0 && !s->stop)
            pthread_cond_wait(&s->not_empty, &s->lock);
        if (s->count == 0 && s->stop)
            break;
        struct compute_stream_op op = s->q[s->head];
        s->head = (s->head + 1) % s->cap;
        s->count--;
        pthread_cond_signal(&s->not_full);
        pthread_mutex_unlock(&s->lock);
        int rc = op.fn(op.arg);
        pthread_mutex_lock(&s->lock);
        if (rc != 0 && s->sticky == 0)
            s->sticky = rc;
        s->completed++;
        atomic_store_explicit(&s->completed_a, s->completed, memory_order_release);
        pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int compute_stream_create(struct compute_stream **out, size_t depth) {
    struct compute_stream *s = calloc(1, sizeof(*s));
    if (!s || depth == 0 || !(s->q = calloc(depth, sizeof(*s->q)))) {
        free(s);
        return depth == 0 ? -EINVAL : -ENOMEM;
    }
    s->cap = depth;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->not_empty, NULL);
    pthread_cond_init(&s->not_full, NULL);
    pthread_cond_init(&s->idle, NULL);
    int rc = pthread_create(&s->worker, NULL, compute_stream_main, s);
    if (rc != 0) {
        free(s->q);
        free(s);
        return -rc;
    }
    *out = s;
    return 0;
}

void compute_stream_destroy(struct compute_stream *s) {
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->not_empty);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->worker, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->not_empty);
    pthread_cond_destroy(&s->not_full);
    pthread_cond_destroy(&s->idle);
    free(s->q);
    free(s);
}

int compute_stream_enqueue(struct compute_stream *s, compute_stream_fn fn, const void *arg,
                           size_t arg_bytes) {
    if (arg_bytes > COMPUTE_STREAM_ARG_MAX)
        return -E2BIG;
    pthread_mutex_lock(&s->lock);
    while (s->count == s->cap)
        pthread_cond_wait(&s->not_full, &s->lock);
    struct compute_stream_op *op = &s->q[(s->head + s->count) % s->cap];
    op->fn = fn;
    if (arg_bytes)
        memcpy(op->arg, arg, arg_bytes);
    s->count++;
    s->enqueued++;
    atomic_store_explicit(&s->enqueued_a, s->enqueued, memory_order_release);
    pthread_cond_signal(&s->not_empty);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int compute_stream_wait(struct compute_stream *s) {
    pthread_mutex_lock(&s->lock);
    uint64_t target = s->enqueued;
    if (s->completed < target) {
        pthread_mutex_unlock(&s->lock);
        compute_stream_spin(&s->completed_a, target);
        pthread_mutex_lock(&s->lock);
    }
    while (s->completed < target)
        pthread_cond_wait(&s->idle, &s->lock);
    int rc = s->sticky;
    s->sticky = 0;
    pthread_mutex_unlock(&s->lock);
    return rc;
}
