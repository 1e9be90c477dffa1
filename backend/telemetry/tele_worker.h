/* A background thread owned by the telemetry service or a provider: started at open, asked to
 * stop and joined at close, napping on a CLOCK_MONOTONIC condition variable so a stop is
 * prompt (never a sleep that close would have to wait out). */
#ifndef RINGSIDE_BACKEND_TELEMETRY_TELE_WORKER_H
#define RINGSIDE_BACKEND_TELEMETRY_TELE_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct tele_worker {
    pthread_mutex_t mu; /* guards stop; the owner may guard its own shared data with it too */
    pthread_cond_t cv;
    pthread_t thread;
    bool started;
    bool stop;
};

/* Mutex and monotonic condition variable; no thread yet. */
void tele_worker_init(struct tele_worker *w);

/* Start fn(arg) on its own thread. 0 or -errno. */
int tele_worker_start(struct tele_worker *w, void *(*fn)(void *), void *arg);

/* From the worker: wait ns nanoseconds, or less when asked to stop. mu must not be held.
 * Returns true when the worker should stop. */
bool tele_worker_nap(struct tele_worker *w, uint64_t ns);

/* From the worker: whether it was asked to stop. */
bool tele_worker_stopping(struct tele_worker *w);

/* Ask the thread to stop, wake it and join it (nothing when it never started), then free the
 * mutex and condition variable. */
void tele_worker_fini(struct tele_worker *w);

#endif
