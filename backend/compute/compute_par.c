/* Persistent helper threads woken by a generation counter; the caller joins the work. */
#include "backend/compute/compute_par.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct compute_par {
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    unsigned threads, started, pending;
    uint64_t gen;
    bool stop;
    void (*fn)(void *ctx, unsigned k);
    void *ctx;
    pthread_t *tid;
};

struct compute_par_arg {
    struct compute_par *p;
    unsigned k;
};

static void *compute_par_main(void *arg) {
    struct compute_par_arg a = *(struct compute_par_arg *)arg;
    free(arg);
    struct compute_par *p = a.p;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->gen == seen && !p->stop)
            pthread_cond_wait(&p->go, &p->lock);
        if (p->stop)
            break;
        seen = p->gen;
        void (*fn)(void *, unsigned) = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->lock);
        fn(ctx, a.k);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int compute_par_create(struct compute_par **out, unsigned threads) {
    struct compute_par *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->threads = threads ? threads : 1;
    p->tid = calloc(p->threads, sizeof(*p->tid));
    if (!p->tid) {
        free(p);
        return -ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    for (unsigned k = 1; k < p->threads; k++) {
        struct compute_par_arg *a = malloc(sizeof(*a));
        if (a) {
            a->p = p;
            a->k = k;
        }
        if (!a || pthread_create(&p->tid[k], NULL, compute_par_main, a) != 0) {
            free(a);
            compute_par_destroy(p);
            return -EAGAIN;
        }
        p->started++;
    }
    *out = p;
    return 0;
}

void compute_par_destroy(struct compute_par *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->lock);
    for (unsigned k = 1; k <= p->started; k++)
        pthread_join(p->tid[k], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->tid);
    free(p);
}

unsigned compute_par_threads(const struct compute_par *p) {
    return p->threads;
}

void compute_par_run(struct compute_par *p, void (*fn)(void *ctx, unsigned k), void *ctx) {
    if (p->threads > 1) {
        pthread_mutex_lock(&p->lock);
        p->fn = fn;
        p->ctx = ctx;
        p->pending = p->threads - 1;
        p->gen++;
        pthread_cond_broadcast(&p->go);
        pthread_mutex_unlock(&p->lock);
    }
    fn(ctx, 0);
    if (p->threads > 1) {
        pthread_mutex_lock(&p->lock);
        while (p->pending > 0)
            pthread_cond_wait(&p->done, &p->lock);
        pthread_mutex_unlock(&p->lock);
    }
}
