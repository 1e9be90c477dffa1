/* A background thread owned by a service (telemetry and its providers, the hang watchdog):
 * started at open, asked to stop and joined at close, napping on a CLOCK_MONOTONIC condition
 * variable so a stop is prompt (never a sleep that close would have to wait out). */
#ifndef RINGSIDE_BACKEND_CORE_WORKER_H
#define RINGSIDE_BACKEND_CORE_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct worker {
    pthread_mutex_t mu; /* guards stop; the owner may guard its own shared data with it too */
    pthread_cond_t cv;
    pthread_t thread;
    bool started;
    bool stop;
};

/* Mutex and monotonic condition variable; no thread yet. */
void worker_init(struct worker *w);

/* Start fn(arg) on its own thread. 0 or -errno. */
int worker_start(struct worker *w, void *(*fn)(void *), void *arg);

/* From the worker: wait ns nanoseconds, or less when asked to stop. mu must not be held.
 * Returns true when the worker should stop. */
bool worker_nap(struct worker *w, uint64_t ns);

/* From the worker: wait until *until_ns on the monotonic clock (mono_now_ns), or less when
 * asked to stop; for a steady period, add it to the deadline rather than to "now". mu must not
 * be held. Returns true when the worker should stop. */
bool worker_nap_until(struct worker *w, uint64_t until_ns);

/* From the worker: whether it was asked to stop. */
bool worker_stopping(struct worker *w);

/* Ask the thread to stop, wake it and join it (nothing when it never started), then free the
 * mutex and condition variable. */
void worker_fini(struct worker *w);

#endif
