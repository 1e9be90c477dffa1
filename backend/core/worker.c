/* Background threads of services: start, prompt stop, join. */
#include "backend/core/worker.h"

#include "backend/core/mono.h"

#include <errno.h>
#include <time.h>

void worker_init(struct worker *w) {
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &a);
    pthread_condattr_destroy(&a);
    w->started = w->stop = false;
}

int worker_start(struct worker *w, void *(*fn)(void *), void *arg) {
    int rc = pthread_create(&w->thread, NULL, fn, arg);
    w->started = rc == 0;
    return -rc;
}

bool worker_nap_until(struct worker *w, uint64_t until_ns) {
    struct timespec until = {(time_t)(until_ns / 1000000000ull), (long)(until_ns % 1000000000ull)};
    pthread_mutex_lock(&w->mu);
    while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT)
        ;
    bool stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

bool worker_nap(struct worker *w, uint64_t ns) {
    return worker_nap_until(w, mono_now_ns() + ns);
}

bool worker_stopping(struct worker *w) {
    pthread_mutex_lock(&w->mu);
    bool stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

void worker_fini(struct worker *w) {
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        w->started = false;
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}
