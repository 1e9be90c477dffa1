/* Background threads of the telemetry service and its providers: start, prompt stop, join. */
#include "backend/telemetry/tele_worker.h"

#include <errno.h>
#include <time.h>

void tele_worker_init(struct tele_worker *w) {
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &a);
    pthread_condattr_destroy(&a);
    w->started = w->stop = false;
}

int tele_worker_start(struct tele_worker *w, void *(*fn)(void *), void *arg) {
    int rc = pthread_create(&w->thread, NULL, fn, arg);
    w->started = rc == 0;
    return -rc;
}

bool tele_worker_nap(struct tele_worker *w, uint64_t ns) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t t = (uint64_t)until.tv_nsec + ns;
    until.tv_sec += (time_t)(t / 1000000000ull);
    until.tv_nsec = (long)(t % 1000000000ull);
    pthread_mutex_lock(&w->mu);
    while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT)
        ;
    bool stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

bool tele_worker_stopping(struct tele_worker *w) {
    pthread_mutex_lock(&w->mu);
    bool stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

void tele_worker_fini(struct tele_worker *w) {
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
