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
#include <string.h>

#define TRACE_WATCH_PERIOD_NS 100000000ull /* ten looks a second */

struct trace_watch_dev {
    atomic_int state;  /* enum trace_watch_state of the sync */
    uint64_t start_ns; /* the sync it is watching (0: none) */
    struct trace_inflight seen;
    atomic_int coll_state;  /* ... of the collective */
    uint64_t coll_start_ns; /* the collective it is watching (0: none) */
    struct trace_coll coll;
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

/* Where every other device of a multi-device run is, for a HANG on dev: "; dev 1 has not
 * entered it: last seen in sync, epoch 1 step 16 (a stream sync in flight 12.3 s)". coll_seq:
 * the collective dev waits in (0: none), so a device that has not reached it says so. */
static void trace_watch_peers(struct trace_watch *w, unsigned dev, uint64_t coll_seq, uint64_t now,
                              char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    /* first the devices the wait is for (not there yet, or gone), then the others */
    for (unsigned i = 0; i < 2 * w->n_dev && len + 1 < n; i++) {
        unsigned p = i % w->n_dev;
        struct trace_seen seen;
        trace_seen(w->t, p, &seen);
        bool behind = seen.left || (coll_seq && seen.coll_seq < coll_seq);
        if (p == dev || !seen.used || behind != (i < w->n_dev))
            continue;
        const char *how = seen.left                              ? " has left the run"
                          : coll_seq && seen.coll_seq < coll_seq ? " has not entered it"
                                                                 : "";
        const char *where = seen.phase < PHASE_COUNT ? ev_phase_name(seen.phase) : "idle";
        int k = snprintf(buf + len, n - len, "; dev %u%s: %s%s%s, epoch %d step %lld", p, how,
                         seen.left ? "last seen " : "", seen.phase < PHASE_COUNT ? "in " : "",
                         where, seen.epoch, (long long)seen.step);
        if (k < 0)
            break;
        len += (size_t)k < n - len ? (size_t)k : n - len - 1;
        struct trace_inflight inf;
        struct trace_coll c;
        if (len + 1 < n && trace_coll_inflight(w->t, p, &c) && now > c.start_ns)
            k = snprintf(buf + len, n - len, " (in %s #%llu for %.1f s)", ev_coll_op_name(c.op),
                         (unsigned long long)c.seq, (double)(now - c.start_ns) / 1e9);
        else if (len + 1 < n && trace_inflight(w->t, p, &inf) && now > inf.start_ns)
            k = snprintf(buf + len, n - len, " (a %s sync in flight %.1f s)",
                         ev_sync_op_name(inf.op), (double)(now - inf.start_ns) / 1e9);
        else
            k = 0;
        if (k > 0)
            len += (size_t)k < n - len ? (size_t)k : n - len - 1;
    }
}

enum trace_watch_state trace_watch_grade(uint64_t age_ns, int coll_op, uint64_t slow_ns,
                                         uint64_t hang_ns) {
    if (coll_op == EV_COLL_INIT || coll_op == EV_COLL_DESTROY)
        slow_ns = slow_ns > TRACE_WATCH_SETUP_SLOW_NS ? slow_ns : TRACE_WATCH_SETUP_SLOW_NS;
    return age_ns >= hang_ns   ? TRACE_WATCH_HANG
           : age_ns >= slow_ns ? TRACE_WATCH_SLOW
                               : TRACE_WATCH_OK;
}

/* The collective in flight on dev: the same states and alerts as a sync's, and a HANG says
 * where every other device is. */
static void trace_watch_look_coll(struct trace_watch *w, unsigned dev, uint64_t now) {
    struct trace_watch_dev *d = &w->dev[dev];
    struct trace_coll c;
    bool busy = trace_coll_inflight(w->t, dev, &c) && now >= c.start_ns;
    enum trace_watch_state was = (enum trace_watch_state)atomic_load(&d->coll_state);
    struct ev e = {.kind = EV_ALERT, .dev = (uint16_t)dev};
    if (d->coll_start_ns && (!busy || c.start_ns != d->coll_start_ns)) {
        uint64_t took = now - d->coll_start_ns;
        d->coll_start_ns = 0;
        atomic_store(&d->coll_state, TRACE_WATCH_OK);
        if (was != TRACE_WATCH_OK) {
            e.u.text.severity = was == TRACE_WATCH_HANG ? SEV_WARNING : SEV_INFO;
            e.u.text.code = ALERT_SYNC_BACK;
            snprintf(e.u.text.text, sizeof(e.u.text.text),
                     "dev %u: %s #%llu returned after about %.1f s, back to ok", dev,
                     ev_coll_op_name(d->coll.op), (unsigned long long)d->coll.seq,
                     (double)took / 1e9);
            trace_emit(w->t, &e);
        }
        was = TRACE_WATCH_OK;
    }
    if (!busy)
        return;
    d->coll_start_ns = c.start_ns;
    d->coll = c;
    uint64_t age = now - c.start_ns;
    enum trace_watch_state st = trace_watch_grade(age, c.op, w->slow_ns, w->hang_ns);
    if (st == was)
        return;
    atomic_store(&d->coll_state, st);
    if (st == TRACE_WATCH_OK)
        return;
    char peers[EV_TEXT_BYTES];
    trace_watch_peers(w, dev, c.seq, now, peers, sizeof(peers));
    e.u.text.severity = st == TRACE_WATCH_HANG ? SEV_ERROR : SEV_WARNING;
    e.u.text.code = st == TRACE_WATCH_HANG ? ALERT_SYNC_HANG : ALERT_SYNC_SLOW;
    int k = snprintf(e.u.text.text, sizeof(e.u.text.text), "dev %u: waits in %s #%llu for %.1f s%s",
                     dev, ev_coll_op_name(c.op), (unsigned long long)c.seq, (double)age / 1e9,
                     st == TRACE_WATCH_HANG ? ": HANG" : ": slow");
    size_t used = k > 0 ? (size_t)k : 0, room = sizeof(e.u.text.text);
    if (used + 1 < room) { /* the peers, cut to what fits */
        size_t m = strnlen(peers, room - used - 1);
        memcpy(e.u.text.text + used, peers, m);
        e.u.text.text[used + m] = '\0';
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
    enum trace_watch_state st = trace_watch_grade(age, -1, w->slow_ns, w->hang_ns);
    if (st == was)
        return;
    atomic_store(&d->state, st);
    char peers[EV_TEXT_BYTES];
    if (st == TRACE_WATCH_HANG)
        trace_watch_peers(w, dev, 0, now, peers, sizeof(peers));
    if (st == TRACE_WATCH_HANG)
        trace_watch_alert(w, dev, ALERT_SYNC_HANG, SEV_ERROR,
                          " in flight for %.1f s: HANG (over the %g s sync timeout)%s",
                          (double)age / 1e9, (double)w->hang_ns / 1e9, peers);
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
        for (unsigned d = 0; d < w->n_dev; d++) {
            trace_watch_look(w, d, now);
            trace_watch_look_coll(w, d, now);
        }
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
    if (dev >= w->n_dev)
        return TRACE_WATCH_OK;
    int a = atomic_load(&w->dev[dev].state), b = atomic_load(&w->dev[dev].coll_state);
    return (enum trace_watch_state)(a > b ? a : b);
}

void trace_watch_stop(struct trace_watch *w) {
    if (!w)
        return;
    worker_fini(&w->w);
    free(w);
}
