/* The hang watchdog on its own thread against a synchronize that an injected fault holds up on
 * another: (slow,) HANG, then back to ok with how long it took, as alerts on the ring. */
#include "backend/core/evring.h"
#include "backend/core/mono.h"
#include "backend/trace/trace_watch.h"
#include "tests/threads/thread_cases.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int thread_watch_noop(void *arg) {
    (void)arg;
    return 0;
}

static void *thread_watch_sync(void *arg) {
    struct trace *t = arg;
    trace_set_phase(t, 0, PHASE_CLEANUP);
    trace_sync(t, 0, SYNC_OP_DEVICE, thread_watch_noop, NULL); /* held 1.5 s by the fault */
    return NULL;
}

/* Alerts from the ring until the one that says the sync returned (or 10 s pass). */
static int thread_watch_alerts(struct evring *r, struct ev *alerts, int max) {
    int n = 0;
    uint64_t deadline = mono_now_ns() + 10000000000ull;
    while (n < max && mono_now_ns() < deadline) {
        struct pollfd pf = {evring_wake_fd(r), POLLIN, 0};
        poll(&pf, 1, 100);
        struct ev e;
        while (n < max && evring_drain(r, &e, 1) == 1)
            if (e.kind == EV_ALERT) {
                alerts[n++] = e;
                if (strstr(e.u.text.text, "returned after"))
                    return n;
            }
    }
    return n;
}

int thread_case_watchdog(char *why, size_t whylen) {
    struct evring *r = NULL;
    struct trace *t = NULL;
    struct trace_watch *w = NULL;
    struct trace_inject in = {
        .kind = TRACE_FAULT_HANG, .phase = PHASE_CLEANUP, .extra_ns = 1500000000ull};
    pthread_t th;
    int rc = -1;
    if (evring_create(&r, 64) != 0 || trace_create(&t, r, 1) != 0 ||
        trace_add_inject(t, 0, &in) != 0 ||
        trace_watch_start(&w, t, 1, 100000000ull, 300000000ull) != 0) {
        snprintf(why, whylen, "set-up failed");
        goto done;
    }
    if (pthread_create(&th, NULL, thread_watch_sync, t) != 0) {
        snprintf(why, whylen, "pthread_create failed");
        goto done;
    }
    struct ev a[8];
    int n = thread_watch_alerts(r, a, 8);
    pthread_join(th, NULL);
    /* slow, HANG, returned; a watchdog that looked late (a loaded machine) may go straight
     * from ok to HANG, so the slow alert is the one that may be missing */
    int k = n == 3 ? 1 : 0;
    if (n < 2 || n > 3 ||
        (n == 3 && (a[0].u.text.severity != SEV_WARNING ||
                    !strstr(a[0].u.text.text, "dev 0: device sync in cleanup slow: in flight"))) ||
        a[k].u.text.severity != SEV_ERROR ||
        !strstr(a[k].u.text.text, "dev 0: device sync in cleanup in flight for") ||
        !strstr(a[k].u.text.text, "HANG (over the 0.3 s sync timeout)") ||
        a[k + 1].u.text.severity != SEV_WARNING ||
        !strstr(a[k + 1].u.text.text, "dev 0: device sync in cleanup returned after about")) {
        snprintf(why, whylen, "%d alerts: '%s' / '%s' / '%s'", n, n > 0 ? a[0].u.text.text : "",
                 n > 1 ? a[1].u.text.text : "", n > 2 ? a[2].u.text.text : "");
        goto done;
    }
    if (trace_watch_state(w, 0) != TRACE_WATCH_OK) {
        snprintf(why, whylen, "state %d after the sync returned", trace_watch_state(w, 0));
        goto done;
    }
    rc = 0;
done:
    trace_watch_stop(w);
    trace_destroy(t);
    evring_destroy(r);
    return rc;
}
