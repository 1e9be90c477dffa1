/* The hang watchdog thread: per-device state from what is in flight, alerts on every change. */
#include "backend/trace/trace_watch.h"

#include "backend/core/mono.h"
#include "backend/core/worker.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define TRACE_WATCH_PERIOD_NS 100000000ull /* ten looks a second */

struct trace_watch_dev {
    atomic_int state;  /* enum trace_watch_state */
    uint64_t start_ns; /* the sync it is watching (0: none) */
    struct trace_inflight seen;
};

struct trace_watch {
    struct trace *t;
    unsigned n_dev;
    uint64_t slow_ns, hang_ns;
    struct worker w;
    struct trace_watch_dev dev[TRACE_MAX_DEVICES];
};

static void trace_watch_alert(struct trace_watch *w, unsigned dev, enum ev_alert_code code,
                              enum ev_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* "dev 0: stream sync in cleanup" and what fmt says of it. */
static void trace_watch_alert(struct trace_watch *w, unsigned dev, enum ev_alert_code code,
                              enum ev_severity sev, const char *fmt, ...) {
    struct ev e = {.kind = EV_ALERT, .dev = (uint16_t)dev};
    const struct trace_inflight *s = &w->dev[dev].seen;
    char what[96];
    snprintf(what, sizeof(what), "dev %u: %s sync in %s", dev, ev_sync_op_name(s->op),
             s->phase < PHASE_COUNT ? ev_phase_name(s->phase) : "idle");
    e.u.text.severity = (uint8_t)sev;
    e.u.text.code = (uint8_t)code;
    int n = snprintf(e.u.text.text, sizeof(e.u.text.text), "%s", what);
    if (n > 0 && (size_t)n < sizeof(e.u.text.text)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e.u.text.text + n, sizeof(e.u.text.text) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    trace_emit(w->t, &e);
}

/* One look at dev: its state from the age of what is in flight, an alert on each change. */
static void trace_watch_look(struct trace_watch *w, unsigned dev, uint64_t now) {
    struct trace_watch_dev *d = &w->dev[dev];
    struct trace_inflight inf;
    bool busy = trace_inflight(w->t, dev, &inf) && now >= inf.start_ns;
    enum trace_watch_state was = (enum trace_watch_state)atomic_load(&d->state);
    if (d->start_ns && (!busy || inf.start_ns != d->start_ns)) { /* the watched sync returned */
        uint64_t took = now - d->start_ns;
        d->start_ns = 0;
        atomic_store(&d->state, TRACE_WATCH_OK); /* before the alert: whoever reads it sees ok */
        if (was != TRACE_WATCH_OK)
            trace_watch_alert(w, dev, ALERT_SYNC_BACK,
                              was == TRACE_WATCH_HANG ? SEV_WARNING : SEV_INFO,
                              " returned after about %.1f s, back to ok", (double)took / 1e9);
        was = TRACE_WATCH_OK;
    }
    if (!busy)
        return;
    d->start_ns = inf.start_ns;
    d->seen = inf;
    uint64_t age = now - inf.start_ns;
    enum trace_watch_state st = age >= w->hang_ns   ? TRACE_WATCH_HANG
                                : age >= w->slow_ns ? TRACE_WATCH_SLOW
                                                    : TRACE_WATCH_OK;
    if (st == was)
        return;
    atomic_store(&d->state, st);
    if (st == TRACE_WATCH_HANG)
        trace_watch_alert(w, dev, ALERT_SYNC_HANG, SEV_ERROR,
                          " in flight for %.1f s: HANG (over the %g s sync timeout)",
                          (double)age / 1e9, (double)w->hang_ns / 1e9);
    else if (st == TRACE_WATCH_SLOW)
        trace_watch_alert(w, dev, ALERT_SYNC_SLOW, SEV_WARNING,
                          " slow: in flight for %.1f s (over %.1f s)", (double)age / 1e9,
                          (double)w->slow_ns / 1e9);
}

static void *trace_watch_main(void *arg) {
    struct trace_watch *w = arg;
    uint64_t next = mono_now_ns();
    do {
        uint64_t now = mono_now_ns();
        for (unsigned d = 0; d < w->n_dev; d++)
            trace_watch_look(w, d, now);
        next += TRACE_WATCH_PERIOD_NS; /* a steady period: a slow look does not shift it */
    } while (!worker_nap_until(&w->w, next));
    return NULL;
}

int trace_watch_start(struct trace_watch **out, struct trace *t, unsigned n_dev, uint64_t slow_ns,
                      uint64_t hang_ns) {
    struct trace_watch *w = calloc(1, sizeof(*w));
    *out = NULL;
    if (!w)
        return -ENOMEM;
    w->t = t;
    w->n_dev = n_dev < TRACE_MAX_DEVICES ? n_dev : TRACE_MAX_DEVICES;
    w->slow_ns = slow_ns;
    w->hang_ns = hang_ns;
    worker_init(&w->w);
    int rc = worker_start(&w->w, trace_watch_main, w);
    if (rc != 0) {
        worker_fini(&w->w);
        free(w);
        return rc;
    }
    *out = w;
    return 0;
}

enum trace_watch_state trace_watch_state(struct trace_watch *w, unsigned dev) {
    return dev < w->n_dev ? (enum trace_watch_state)atomic_load(&w->dev[dev].state)
                          : TRACE_WATCH_OK;
}

void trace_watch_stop(struct trace_watch *w) {
    if (!w)
        return;
    worker_fini(&w->w);
    free(w);
}
