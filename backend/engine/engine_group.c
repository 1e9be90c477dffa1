/* Several training devices: the communicator the engine's devices join, the exchanges by which
 * they agree (decisions, losses, checksums), the step's gradient all-reduce with its record,
 * hang faults in the collective phases, and leaving the group under a timeout. */
#include "backend/comm/comm.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/engine/engine_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

_Static_assert((int)EV_COLL_INIT == (int)COMM_OP_INIT &&
                   (int)EV_COLL_ALLREDUCE == (int)COMM_OP_ALLREDUCE &&
                   (int)EV_COLL_BARRIER == (int)COMM_OP_BARRIER &&
                   (int)EV_COLL_DESTROY == (int)COMM_OP_DESTROY,
               "the events number collectives as the communicator does");

#define ENGINE_NAP_SLICE_NS 20000000ull /* a hang fault looks up this often */

static uint64_t engine_secs_ns(double s) {
    return s > 0 ? (uint64_t)(s * 1e9) : COMM_NO_TIMEOUT;
}

int engine_group_open(struct engine *e, char *err, size_t errlen) {
    /* a backend without a runtime stream keeps its memory on the host: the CPU all-reduce */
    const char *impl = compute_stream_handle(engine_dev0(e)->c) ? "nccl" : "cpu";
    struct comm_conf cc = {.n_ranks = e->n_dev,
                           .lib = e->conf.comm_lib[0] ? e->conf.comm_lib : NULL,
                           .peer_max_bytes = COMM_PEER_MAX_BYTES_DEFAULT};
    char why[512];
    int rc = comm_open(impl, &cc, &e->comm, why, sizeof(why));
    if (rc != 0)
        return errbuf_set(err, errlen, rc == -ENOENT || rc == -ENOSYS ? -EINVAL : rc,
                          "%u devices need a communication library: %s", e->n_dev, why);
    engine_log(e, SEV_INFO, "data parallel on %u devices through the %s communicator", e->n_dev,
               impl);
    return 0;
}

void engine_nap(struct engine *e, uint64_t ns) {
    uint64_t end = mono_now_ns() + ns;
    for (uint64_t now = mono_now_ns(); now < end; now = mono_now_ns()) {
        if (atomic_load(&e->quit) || (e->comm && comm_failed(e->comm)))
            return;
        uint64_t left = end - now < ENGINE_NAP_SLICE_NS ? end - now : ENGINE_NAP_SLICE_NS;
        struct timespec ts = {0, (long)left};
        nanosleep(&ts, NULL);
    }
}

void engine_fault_wait(struct engine_dev *d, enum ev_phase_id phase) {
    struct trace_inject in;
    if (!trace_fault_take_in(d->e->trace, d->c->dev, TRACE_FAULT_HANG, phase, &in))
        return;
    engine_dev_log(d, SEV_WARNING, "fault injection: dev %u holds back from %s for %g s", d->c->dev,
                   ev_phase_name(phase), (double)in.extra_ns / 1e9);
    engine_nap(d->e, in.extra_ns);
}

/* The event of a call outside the steps (joining, leaving the group). */
static void engine_coll_emit(struct engine_dev *d, enum ev_coll_op op, int rc, uint64_t t0,
                             uint64_t bytes) {
    uint64_t t1 = mono_now_ns();
    struct ev ev = {.t_ns = t1, .kind = EV_COLLECTIVE, .dev = (uint16_t)d->c->dev};
    ev.u.coll = (struct ev_coll){.op = (uint8_t)op,
                                 .rc = rc,
                                 .calls = 1,
                                 .bytes = bytes,
                                 .start_ns = t0,
                                 .dur_ns = t1 - t0,
                                 .max_ns = t1 - t0,
                                 .epoch = d->s.epoch,
                                 .step = -1}; /* joining, leaving: outside a step */
    trace_emit(d->e->trace, &ev);
}

#define ENGINE_WATCH_PERIOD_NS 100000000ull

/* One look: the first device whose sync has waited past the timeout aborts the group. */
static bool engine_group_look(struct engine *e, uint64_t limit_ns) {
    uint64_t now = mono_now_ns();
    for (unsigned k = 0; k < e->n_dev; k++) {
        struct trace_inflight inf;
        unsigned dev = e->dev[k]->c->dev;
        if (!trace_inflight(e->trace, dev, &inf) || now < inf.start_ns ||
            now - inf.start_ns < limit_ns)
            continue;
        char why[200];
        snprintf(why, sizeof(why),
                 "a %s sync in %s waited %.1f s, past the %g s collective timeout: the group "
                 "was aborted",
                 ev_sync_op_name(inf.op), ev_phase_name(inf.phase),
                 (double)(now - inf.start_ns) / 1e9, e->conf.comm_timeout_s);
        engine_fail_first(e, dev, why);
        struct ev ev = {.kind = EV_ALERT, .dev = (uint16_t)dev};
        ev.u.text.severity = SEV_ERROR;
        snprintf(ev.u.text.text, sizeof(ev.u.text.text), "dev %u: %s", dev, why);
        trace_emit(e->trace, &ev);
        comm_abort(e->comm);
        return true;
    }
    return false;
}

static void *engine_group_watch_main(void *arg) {
    struct engine *e = arg;
    uint64_t limit = engine_secs_ns(e->conf.comm_timeout_s), next = mono_now_ns();
    do {
        next += ENGINE_WATCH_PERIOD_NS;
        if (!comm_failed(e->comm) && engine_group_look(e, limit))
            return NULL; /* the group is over: nothing more to watch */
    } while (!worker_nap_until(&e->group_watch, next));
    return NULL;
}

int engine_group_watch_start(struct engine *e) {
    worker_init(&e->group_watch);
    return e->comm ? worker_start(&e->group_watch, engine_group_watch_main, e) : 0;
}

void engine_group_watch_stop(struct engine *e) {
    worker_fini(&e->group_watch);
}

/* One of the group's calls outside the steps (joining, the last barrier, leaving): in its own
 * phase, after a hold fault armed for it, traced as a collective and reported by its event.
 * Its rc, with why; *failed_before: whether the group had failed when the call began. */
static int engine_group_call(struct engine_dev *d, enum ev_phase_id ph, enum ev_coll_op op,
                             char *why, size_t n, uint64_t *dur_ns, bool *failed_before) {
    struct engine *e = d->e;
    uint64_t coll = engine_secs_ns(e->conf.comm_timeout_s);
    engine_set_phase(d, ph);
    engine_fault_wait(d, ph);
    uint64_t t0 = mono_now_ns();
    *failed_before = comm_failed(e->comm) != 0;
    trace_coll_begin(e->trace, d->c->dev, op);
    int rc =
        op == EV_COLL_INIT ? comm_init(e->comm, d->rank, compute_stream_handle(d->c), coll, why, n)
        : op == EV_COLL_BARRIER
            ? comm_barrier(e->comm, d->rank, coll, why, n)
            : comm_destroy(e->comm, d->rank, engine_secs_ns(e->conf.teardown_timeout_s), why, n);
    trace_coll_end(e->trace, d->c->dev);
    *dur_ns = mono_now_ns() - t0;
    engine_coll_emit(d, op, rc, t0, 0);
    engine_phase_done(d, ph, t0, d->s.epoch, -1, -1);
    engine_set_phase(d, PHASE_COUNT);
    return rc;
}

int engine_group_init(struct engine_dev *d, char *err, size_t errlen) {
    struct engine *e = d->e;
    char why[512];
    uint64_t dur;
    bool failed;
    int rc = engine_group_call(d, PHASE_COMM_INIT, EV_COLL_INIT, why, sizeof(why), &dur, &failed);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "joining the group of %u devices failed: %s", e->n_dev,
                          why);
    size_t direct = comm_peer_bytes(e->comm, d->rank);
    char path[96] = "";
    if (direct > 0)
        snprintf(path, sizeof(path), "; all-reduces up to %zu KiB go through peer memory",
                 direct / 1024);
    engine_dev_log(d, SEV_INFO, "dev %u joined the group of %u in %.3f s%s", d->c->dev, e->n_dev,
                   (double)dur / 1e9, path);
    return 0;
}

void engine_group_barrier(struct engine_dev *d) {
    char why[512];
    uint64_t dur;
    bool failed;
    if (engine_group_call(d, PHASE_BARRIER, EV_COLL_BARRIER, why, sizeof(why), &dur, &failed))
        engine_dev_log(d, SEV_ERROR,
                       "dev %u: the group's last barrier did not complete (%s); the checkpoint "
                       "is written, the group is left without it",
                       d->c->dev, why);
}

void engine_group_teardown(struct engine_dev *d) {
    struct engine *e = d->e;
    char why[512];
    uint64_t dur;
    bool failed_before;
    int rc = engine_group_call(d, PHASE_TEARDOWN, EV_COLL_DESTROY, why, sizeof(why), &dur,
                               &failed_before);
    if (rc != 0)
        engine_dev_log(d, SEV_ERROR,
                       "dev %u: leaving the group did not finish in %.1f s (%s); its "
                       "communicator was aborted after %.3f s",
                       d->c->dev, e->conf.teardown_timeout_s, why, (double)dur / 1e9);
    else if (failed_before)
        engine_dev_log(d, SEV_WARNING,
                       "dev %u: the group had failed; its communicator was released in %.3f s",
                       d->c->dev, (double)dur / 1e9);
    else
        engine_dev_log(d, SEV_INFO, "dev %u left the group in %.3f s", d->c->dev,
                       (double)dur / 1e9);
}

/* Keep a device's first collective failure (its text is what the step's error says). */
static int engine_coll_failed(struct engine_dev *d, int rc, const char *why) {
    if (!d->comm_rc) {
        d->comm_rc = rc;
        snprintf(d->comm_err, sizeof(d->comm_err), "%s", why);
    }
    return rc;
}

int engine_exchange(struct engine_dev *d, double *v, size_t n, char *err, size_t errlen) {
    struct engine *e = d->e;
    if (e->n_dev == 1 || !e->comm)
        return 0;
    const struct compute_ops *ops = d->c->ops;
    bool host = compute_stream_handle(d->c) == NULL; /* no runtime stream: host memory */
    char why[512] = "";
    int rc = 0;
    uint64_t timeout = engine_secs_ns(e->conf.comm_timeout_s);
    enum ev_phase_id prev = d->s.phase;
    engine_set_phase(d, PHASE_ALLREDUCE);
    trace_coll_begin(e->trace, d->c->dev, EV_COLL_ALLREDUCE);
    if (host) {
        rc = comm_allreduce(e->comm, d->rank, v, n, COMM_F64, COMM_RED_SUM, NULL, timeout, why,
                            sizeof(why));
    } else {
        if (!d->xchg_dev)
            rc = compute_alloc(d->c, 64 * sizeof(double), &d->xchg_dev, why, sizeof(why));
        rc = rc ? rc : ops->copy_h2d(d->c, d->xchg_dev, v, n * sizeof(double));
        rc = rc ? rc
                : comm_allreduce(e->comm, d->rank, d->xchg_dev, n, COMM_F64, COMM_RED_SUM,
                                 compute_stream_handle(d->c), timeout, why, sizeof(why));
        rc = rc ? rc : ops->copy_d2h(d->c, v, d->xchg_dev, n * sizeof(double));
        int src = compute_sync(d->c, SYNC_OP_STREAM); /* the exchange is over when this returns */
        if (rc == 0 && src != 0)
            snprintf(why, sizeof(why), "%s", ops->strerror(src));
        rc = rc ? rc : src;
    }
    trace_coll_end(e->trace, d->c->dev);
    engine_set_phase(d, prev);
    if (rc != 0) {
        engine_coll_failed(d, rc, why);
        return errbuf_set(err, errlen, rc, "%s", why);
    }
    return 0;
}

/* The step's all-reduce: a hang fault first, then the mean of the gradients over the devices,
 * recorded into the window's collective event. */
static int engine_reduce(void *ctx, void *buf, size_t count, bool f64, void *stream) {
    struct engine_dev *d = ctx;
    struct engine *e = d->e;
    engine_fault_wait(d, PHASE_ALLREDUCE);
    char why[512];
    uint64_t t0 = mono_now_ns();
    trace_coll_begin(e->trace, d->c->dev, EV_COLL_ALLREDUCE);
    int rc = comm_allreduce(e->comm, d->rank, buf, count, f64 ? COMM_F64 : COMM_F32, COMM_RED_MEAN,
                            stream, engine_secs_ns(e->conf.comm_timeout_s), why, sizeof(why));
    trace_coll_end(e->trace, d->c->dev);
    uint64_t dt = mono_now_ns() - t0;
    struct ev_coll *w = &d->win;
    if (w->calls == 0)
        w->start_ns = t0;
    w->calls++;
    w->bytes += rc == 0 ? (uint64_t)count * (f64 ? 8u : 4u) : 0;
    w->dur_ns += dt;
    w->max_ns = dt > w->max_ns ? dt : w->max_ns;
    if (rc != 0 && !w->rc)
        w->rc = rc;
    return rc ? engine_coll_failed(d, rc, why) : 0;
}

const struct compute_reduce engine_reduce_proto = {.fn = engine_reduce, .ctx = NULL};

void engine_coll_flush(struct engine_dev *d) {
    if (d->win.calls == 0)
        return;
    struct ev ev = {.t_ns = mono_now_ns(), .kind = EV_COLLECTIVE, .dev = (uint16_t)d->c->dev};
    ev.u.coll = d->win;
    ev.u.coll.op = EV_COLL_ALLREDUCE;
    ev.u.coll.epoch = d->s.epoch;
    ev.u.coll.step = d->s.step;
    trace_emit(d->e->trace, &ev);
    memset(&d->win, 0, sizeof(d->win));
}
