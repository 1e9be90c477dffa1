/* Phase events, traced synchronizes with per-device histograms, and in-flight publication. */
#include "backend/trace/trace.h"

#include "backend/core/mono.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct trace_dev {
    pthread_mutex_t lock; /* guards hist */
    struct trace_hist hist[SYNC_OP_COUNT];
    _Atomic uint64_t inflight_start_ns;
    _Atomic uint32_t inflight_op_phase; /* op | phase << 8 */
    _Atomic uint32_t phase;
    _Atomic uint64_t sync_delay_ns;
    _Atomic uint64_t coll_start_ns; /* the collective in flight (0: none) */
    _Atomic uint32_t coll_op;
    _Atomic uint64_t coll_seq; /* collectives entered */
    _Atomic int32_t epoch;
    _Atomic int64_t step;
    atomic_bool used, left;
    struct trace_inject inject[TRACE_MAX_INJECT]; /* armed before the first sync */
    _Atomic bool inject_spent[TRACE_MAX_INJECT];  /* a one-shot injection that has fired */
    unsigned n_inject;
    _Atomic uint64_t writes; /* checkpoint files begun (trace_fault_write) */
};

struct trace {
    struct evring *ring;
    unsigned n_dev;
    struct trace_dev dev[];
};

int trace_create(struct trace **out, struct evring *ring, unsigned n_devices) {
    if (n_devices == 0 || n_devices > TRACE_MAX_DEVICES)
        return -EINVAL;
    struct trace *t = calloc(1, sizeof(*t) + n_devices * sizeof(struct trace_dev));
    if (!t)
        return -ENOMEM;
    t->ring = ring;
    t->n_dev = n_devices;
    for (unsigned d = 0; d < n_devices; d++) {
        pthread_mutex_init(&t->dev[d].lock, NULL);
        for (unsigned op = 0; op < SYNC_OP_COUNT; op++)
            trace_hist_init(&t->dev[d].hist[op]);
        atomic_init(&t->dev[d].phase, PHASE_COUNT);
    }
    *out = t;
    return 0;
}

void trace_destroy(struct trace *t) {
    if (!t)
        return;
    for (unsigned d = 0; d < t->n_dev; d++)
        pthread_mutex_destroy(&t->dev[d].lock);
    free(t);
}

void trace_set_phase(struct trace *t, unsigned dev, enum ev_phase_id ph) {
    if (dev < t->n_dev) {
        atomic_store(&t->dev[dev].phase, (uint32_t)ph);
        atomic_store(&t->dev[dev].used, true);
    }
}

void trace_coll_begin(struct trace *t, unsigned dev, enum ev_coll_op op) {
    if (dev >= t->n_dev)
        return;
    struct trace_dev *d = &t->dev[dev];
    atomic_store(&d->coll_op, (uint32_t)op);
    atomic_fetch_add(&d->coll_seq, 1);
    atomic_store(&d->coll_start_ns, mono_now_ns());
}

void trace_coll_end(struct trace *t, unsigned dev) {
    if (dev < t->n_dev)
        atomic_store(&t->dev[dev].coll_start_ns, 0);
}

bool trace_coll_inflight(const struct trace *t, unsigned dev, struct trace_coll *out) {
    memset(out, 0, sizeof(*out));
    if (dev >= t->n_dev)
        return false;
    struct trace_dev *d = &((struct trace *)t)->dev[dev];
    uint64_t start = atomic_load(&d->coll_start_ns);
    if (start == 0)
        return false;
    out->start_ns = start;
    out->op = (uint8_t)atomic_load(&d->coll_op);
    out->seq = atomic_load(&d->coll_seq);
    return true;
}

void trace_set_pos(struct trace *t, unsigned dev, int32_t epoch, int64_t step) {
    if (dev >= t->n_dev)
        return;
    atomic_store(&t->dev[dev].epoch, epoch);
    atomic_store(&t->dev[dev].step, step);
}

void trace_set_left(struct trace *t, unsigned dev) {
    if (dev < t->n_dev)
        atomic_store(&t->dev[dev].left, true);
}

void trace_seen(const struct trace *t, unsigned dev, struct trace_seen *out) {
    memset(out, 0, sizeof(*out));
    out->phase = PHASE_COUNT;
    if (dev >= t->n_dev)
        return;
    struct trace_dev *d = &((struct trace *)t)->dev[dev];
    out->used = atomic_load(&d->used);
    out->left = atomic_load(&d->left);
    out->phase = (uint8_t)atomic_load(&d->phase);
    out->epoch = atomic_load(&d->epoch);
    out->step = atomic_load(&d->step);
    out->coll_seq = atomic_load(&d->coll_seq);
}

unsigned trace_devices(const struct trace *t) {
    return t->n_dev;
}

void trace_emit(struct trace *t, const struct ev *e) {
    if (!t->ring)
        return;
    struct ev copy = *e;
    if (copy.t_ns == 0)
        copy.t_ns = mono_now_ns();
    evring_push(t->ring, &copy);
}

void trace_phase_emit(struct trace *t, unsigned dev, enum ev_phase_id ph, uint64_t start_ns,
                      uint64_t end_ns, const struct trace_pos *pos) {
    trace_phase_emit_sum(t, dev, ph, start_ns, end_ns, end_ns > start_ns ? end_ns - start_ns : 0, 1,
                         pos);
}

void trace_phase_emit_sum(struct trace *t, unsigned dev, enum ev_phase_id ph, uint64_t start_ns,
                          uint64_t end_ns, uint64_t busy_ns, uint32_t count,
                          const struct trace_pos *pos) {
    struct ev e = {.t_ns = end_ns, .kind = EV_PHASE, .dev = (uint16_t)dev};
    e.u.phase.phase = (uint8_t)ph;
    e.u.phase.start_ns = start_ns;
    e.u.phase.end_ns = end_ns;
    if (count > 1) { /* one span leaves both 0: its time is its span */
        e.u.phase.count = count;
        e.u.phase.busy_ns = busy_ns;
    }
    e.u.phase.epoch = pos ? pos->epoch : 0;
    e.u.phase.step = pos ? pos->step : -1;
    e.u.phase.chunk = pos ? pos->chunk : -1;
    trace_emit(t, &e);
}

static void trace_sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Whether a sync in phase waits for work of phase `want`: the same phase, or the host's wait
 * (sync) for a training step's h2d, forward, backward and optimizer work. */
static bool trace_inject_matches(uint32_t want, uint32_t phase) {
    bool step = want == PHASE_H2D || want == PHASE_FORWARD || want == PHASE_BACKWARD ||
                want == PHASE_OPTIMIZER;
    return want == phase || (step && phase == PHASE_SYNC);
}

/* A hang in a collective phase is the group's to carry out (the device holds back from the
 * call), never a sync's. */
static bool trace_inject_collective(uint32_t phase) {
    return phase == PHASE_ALLREDUCE || phase == PHASE_COMM_INIT || phase == PHASE_TEARDOWN ||
           phase == PHASE_BARRIER;
}

/* What the armed slow-syncs and an untaken hang add to a sync in phase. */
static uint64_t trace_inject_delay(struct trace_dev *d, uint32_t phase) {
    uint64_t ns = 0;
    for (unsigned k = 0; k < d->n_inject; k++) {
        const struct trace_inject *in = &d->inject[k];
        if (!trace_inject_matches(in->phase, phase) ||
            (in->kind == TRACE_FAULT_HANG && trace_inject_collective(in->phase)) ||
            (in->kind != TRACE_FAULT_SLOW && in->kind != TRACE_FAULT_HANG) ||
            (in->kind == TRACE_FAULT_HANG && atomic_exchange(&d->inject_spent[k], true)))
            continue;
        ns += in->extra_ns;
    }
    return ns;
}

bool trace_fault_take(struct trace *t, unsigned dev, enum trace_fault kind,
                      struct trace_inject *out) {
    if (dev >= t->n_dev)
        return false;
    uint32_t phase = atomic_load(&t->dev[dev].phase);
    if (kind == TRACE_FAULT_HANG && trace_inject_collective(phase))
        return false; /* the group's to carry out, by trace_fault_take_in */
    return trace_fault_take_in(t, dev, kind, (enum ev_phase_id)phase, out);
}

bool trace_fault_take_in(struct trace *t, unsigned dev, enum trace_fault kind, enum ev_phase_id ph,
                         struct trace_inject *out) {
    if (dev >= t->n_dev || kind == TRACE_FAULT_SLOW || kind == TRACE_FAULT_WRITE ||
        kind == TRACE_FAULT_STALL)
        return false; /* SLOW is every sync's; WRITE and STALL are trace_fault_write's */
    struct trace_dev *d = &t->dev[dev];
    uint32_t phase = (uint32_t)ph;
    for (unsigned k = 0; k < d->n_inject; k++) {
        const struct trace_inject *in = &d->inject[k];
        bool here = kind == TRACE_FAULT_DROP  ? true
                    : kind == TRACE_FAULT_OOM ? in->phase == phase /* where it allocates */
                                              : trace_inject_matches(in->phase, phase);
        if (in->kind == kind && here && !atomic_exchange(&d->inject_spent[k], true)) {
            *out = *in;
            return true;
        }
    }
    return false;
}

bool trace_fault_armed(const struct trace *t, unsigned dev, enum trace_fault kind,
                       enum ev_phase_id phase) {
    if (dev >= t->n_dev)
        return false;
    struct trace_dev *d = &((struct trace *)t)->dev[dev];
    for (unsigned k = 0; k < d->n_inject; k++)
        if (d->inject[k].kind == kind && d->inject[k].phase == (uint8_t)phase &&
            !atomic_load(&d->inject_spent[k]))
            return true;
    return false;
}

int trace_fault_write(struct trace *t, unsigned dev) {
    if (dev >= t->n_dev)
        return -1;
    struct trace_dev *d = &t->dev[dev];
    uint64_t n = atomic_fetch_add(&d->writes, 1) + 1;
    for (unsigned k = 0; k < d->n_inject; k++) {
        const struct trace_inject *in = &d->inject[k];
        if ((in->kind == TRACE_FAULT_WRITE || in->kind == TRACE_FAULT_STALL) && in->extra_ns == n &&
            !atomic_exchange(&d->inject_spent[k], true))
            return in->kind;
    }
    return -1;
}

int trace_add_inject(struct trace *t, unsigned dev, const struct trace_inject *in) {
    if (dev >= t->n_dev)
        return -EINVAL;
    struct trace_dev *d = &t->dev[dev];
    if (d->n_inject >= TRACE_MAX_INJECT)
        return -ENOSPC;
    d->inject[d->n_inject++] = *in;
    return 0;
}

int trace_sync(struct trace *t, unsigned dev, enum ev_sync_op op, int (*fn)(void *arg), void *arg) {
    if (dev >= t->n_dev)
        return -EINVAL;
    struct trace_dev *d = &t->dev[dev];
    uint32_t phase = atomic_load(&d->phase);
    atomic_store(&d->inflight_op_phase, (uint32_t)op | phase << 8);
    uint64_t start = mono_now_ns();
    atomic_store(&d->inflight_start_ns, start);

    uint64_t delay = atomic_load(&d->sync_delay_ns) + trace_inject_delay(d, phase);
    if (delay)
        trace_sleep_ns(delay);
    int rc = fn(arg);

    uint64_t end = mono_now_ns();
    atomic_store(&d->inflight_start_ns, 0);
    pthread_mutex_lock(&d->lock);
    trace_hist_add(&d->hist[op], end - start);
    pthread_mutex_unlock(&d->lock);

    struct ev e = {.t_ns = end, .kind = EV_SYNC, .dev = (uint16_t)dev};
    e.u.sync.op = (uint8_t)op;
    e.u.sync.rc = rc;
    e.u.sync.start_ns = start;
    e.u.sync.dur_ns = end - start;
    trace_emit(t, &e);
    return rc;
}

void trace_set_sync_delay(struct trace *t, unsigned dev, uint64_t extra_ns) {
    if (dev < t->n_dev)
        atomic_store(&t->dev[dev].sync_delay_ns, extra_ns);
}

bool trace_inflight(const struct trace *t, unsigned dev, struct trace_inflight *out) {
    memset(out, 0, sizeof(*out));
    if (dev >= t->n_dev)
        return false;
    struct trace_dev *d = &((struct trace *)t)->dev[dev];
    uint64_t start = atomic_load(&d->inflight_start_ns);
    if (start == 0)
        return false;
    uint32_t op_phase = atomic_load(&d->inflight_op_phase);
    out->start_ns = start;
    out->op = (uint8_t)(op_phase & 0xFF);
    out->phase = (uint8_t)(op_phase >> 8);
    return true;
}

void trace_sync_hist(struct trace *t, unsigned dev, enum ev_sync_op op, struct trace_hist *out) {
    if (dev >= t->n_dev || op >= SYNC_OP_COUNT) {
        trace_hist_init(out);
        return;
    }
    pthread_mutex_lock(&t->dev[dev].lock);
    *out = t->dev[dev].hist[op];
    pthread_mutex_unlock(&t->dev[dev].lock);
}

void trace_sync_summary(struct trace *t, unsigned dev, enum ev_sync_op op,
                        struct trace_sync_summary *out) {
    static _Thread_local struct trace_hist h; /* 10 KB: keep it off small thread stacks */
    trace_sync_hist(t, dev, op, &h);
    out->count = h.count;
    out->sum_ns = h.sum_ns;
    out->max_ns = h.max_ns;
    out->p50_ns = trace_hist_percentile(&h, 50);
    out->p90_ns = trace_hist_percentile(&h, 90);
    out->p99_ns = trace_hist_percentile(&h, 99);
}

bool trace_inflight_describe(const struct trace_inflight *inf, uint64_t now_ns, char *buf,
                             size_t n) {
    if (now_ns <= inf->start_ns)
        return false;
    snprintf(buf, n, "a %s sync in %s has been in flight for %.1f s", ev_sync_op_name(inf->op),
             ev_phase_name(inf->phase), (double)(now_ns - inf->start_ns) / 1e9);
    return true;
}
