/* One worker thread draining a bounded FIFO of operations with copied arguments. */
#include "backend/compute/compute_stream.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    int sticky;
    bool stop;
    pthread_t worker;
};

static void *compute_stream_main(void *arg) {
    struct compute_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
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
    pthread_cond_signal(&s->not_empty);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int compute_stream_wait(struct compute_stream *s) {
    pthread_mutex_lock(&s->lock);
    uint64_t target = s->enqueued;
    while (s->completed < target)
        pthread_cond_wait(&s->idle, &s->lock);
    int rc = s->sticky;
    s->sticky = 0;
    pthread_mutex_unlock(&s->lock);
    return rc;
}
