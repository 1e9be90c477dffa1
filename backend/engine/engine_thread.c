/* The engine's training thread (rank 0) and the other ranks' threads: each device's whole run,
 * the devices agreeing on whether to go on, the way out (its mark and the first failure), and
 * the run's result. */
#include "backend/comm/comm.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/engine/engine_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void engine_leave_mark(struct engine *e) {
    uint64_t none = 0;
    atomic_compare_exchange_strong(&e->leave_ns, &none, mono_now_ns());
}

void engine_fail_first(struct engine *e, unsigned dev, const char *why) {
    engine_leave_mark(e);
    pthread_mutex_lock(&e->mu);
    if (!e->first_err[0])
        snprintf(e->first_err, sizeof(e->first_err), "dev %u: %s", dev, why);
    pthread_mutex_unlock(&e->mu);
}

/* Every device's safe cleanup before training, each reported. */
static int engine_pre_cleanup(struct engine_dev *d, char *err, size_t errlen) {
    char msg[EV_TEXT_BYTES];
    if (d->rank == 0)
        engine_log(d->e, SEV_INFO, "pre-training safe cleanup");
    int rc = engine_cleanup(d, msg, sizeof(msg));
    engine_dev_log(d, rc == 0 ? SEV_INFO : SEV_ERROR, "%s", msg);
    if (rc != 0)
        snprintf(err, errlen, "%s", msg);
    return rc;
}

/* Several devices: agree on whether to go on (rank 0's stop, anyone's failure). A failed
 * exchange is this device's error. */
int engine_agree(struct engine_dev *d, int rc, bool *stop, char *err, size_t errlen) {
    if (d->e->n_dev == 1) {
        *stop = atomic_load(&d->e->stop_requested);
        return rc;
    }
    double v[2] = {d->rank == 0 ? (double)atomic_load(&d->e->stop_requested) : 0, rc != 0};
    char why[512];
    int xrc = engine_exchange(d, v, 2, why, sizeof(why));
    if (xrc != 0 && rc == 0)
        snprintf(err, errlen, "%s", why);
    if (xrc != 0)
        return rc ? rc : xrc;
    if (v[0] > 0) {
        atomic_store(&d->e->stop_requested, true);
        engine_leave_mark(d->e);
    }
    *stop = v[0] > 0;
    if (rc == 0 && v[1] > 0)
        return errbuf_set(err, errlen, -ECANCELED, "another device failed");
    return rc;
}

/* One device's whole run: join the group, its share of VPOC, features (rank 0), safe
 * cleanup, training, and leaving the group. */
static int engine_dev_run(struct engine_dev *d, char *err, size_t errlen) {
    struct engine *e = d->e;
    bool stop = false;
    if (d->rank == 0) /* the data was read before the run started: its phase ends here */
        engine_host_hold(d, PHASE_LOAD);
    int rc = e->n_dev > 1 ? engine_group_init(d, err, errlen) : 0;
    if (rc == 0)
        rc = engine_vpoc_all(d, err, errlen);
    rc = engine_agree(d, rc, &stop, err, errlen);
    if (rc == 0 && !stop && d->rank == 0)
        rc = engine_features(e, err, errlen);
    rc = engine_agree(d, rc, &stop, err, errlen);
    d->s.train_rows = e->split;
    d->s.val_rows = e->n_rows - e->split;
    if (rc == 0 && e->conf.pre_cleanup && !stop)
        rc = engine_pre_cleanup(d, err, errlen);
    rc = engine_agree(d, rc, &stop, err, errlen);
    if (rc == 0 && !stop)
        rc = engine_train(d, err, errlen);
    return rc;
}

/* The end of one device's run: its failure remembered, the group aborted so no device waits
 * for it, and the group left. */
static void engine_dev_end(struct engine_dev *d, int rc, char *err) {
    struct engine *e = d->e;
    engine_leave_mark(e); /* from here on, the way out is under the stop deadline */
    if (!d->dropped)      /* a dropped device is last seen where it left */
        engine_set_phase(d, PHASE_COUNT);
    if (rc != 0 && !err[0]) /* a path that gave no reason still says what the backend calls rc */
        snprintf(err, 512, "%s (error %d on %s)", d->c->ops->strerror(rc), rc, d->c->ops->name);
    if (rc != 0 && rc != -ECANCELED)
        engine_fail_first(e, d->c->dev, err);
    if (rc != 0 && e->n_dev > 1)
        engine_dev_log(d, SEV_ERROR, "dev %u failed: %s", d->c->dev, err);
    if (rc != 0 && e->comm && !d->dropped) /* no device waits for this one */
        comm_abort(e->comm);
    if (e->comm && !d->dropped && rc == 0 && !comm_failed(e->comm))
        engine_group_barrier(d);
    if (e->comm && !d->dropped) /* a dropped one left without a word */
        engine_group_teardown(d);
    trace_set_left(e->trace, d->c->dev);
    engine_emit_mem(d);
}

/* Ranks past 0: their own thread. */
static void *engine_dev_main(void *arg) {
    struct engine_dev *d = arg;
    engine_set_state(d, ENGINE_RUNNING);
    d->err[0] = '\0';
    d->rc = engine_dev_run(d, d->err, sizeof(d->err));
    engine_dev_end(d, d->rc, d->err);
    engine_set_state(d, d->rc == 0 ? ENGINE_FINISHED : ENGINE_FAILED);
    return NULL;
}

/* The training thread (rank 0): the other ranks' threads, its own run, then FINISHED or
 * FAILED for the whole run. */
static void *engine_main(void *arg) {
    struct engine *e = arg;
    struct engine_dev *d = engine_dev0(e);
    char err[512] = "";
    uint64_t t0 = mono_now_ns();
    engine_set_state(d, ENGINE_RUNNING);
    int rc = 0;
    for (unsigned k = 1; k < e->n_dev && rc == 0; k++) {
        rc = -pthread_create(&e->dev[k]->thread, NULL, engine_dev_main, e->dev[k]);
        if (rc == 0)
            e->dev[k]->started = true;
        else
            errbuf_set(err, sizeof(err), rc, "cannot start the worker of dev %u: %s",
                       e->dev[k]->c->dev, strerror(-rc));
    }
    if (rc == 0)
        rc = engine_dev_run(d, err, sizeof(err));
    engine_dev_end(d, rc, err);
    for (unsigned k = 1; k < e->n_dev; k++)
        if (e->dev[k]->started) {
            pthread_join(e->dev[k]->thread, NULL);
            e->dev[k]->started = false;
            if (e->dev[k]->rc != 0 && rc == 0)
                rc = e->dev[k]->rc;
        }
    e->res.elapsed_s = (double)(mono_now_ns() - t0) / 1e9;
    e->res.stopped = atomic_load(&e->stop_requested);
    if (rc != 0) {
        pthread_mutex_lock(&e->mu);
        if (e->first_err[0] && e->n_dev > 1) /* the root cause, not a device that was told */
            snprintf(err, sizeof(err), "%s", e->first_err);
        pthread_mutex_unlock(&e->mu);
        e->res.state = ENGINE_FAILED;
        e->res.steps = d->s.step;
        snprintf(e->res.error, sizeof(e->res.error), "%s", err);
        struct ev ev = {.kind = EV_ALERT, .dev = (uint16_t)d->c->dev};
        ev.u.text.severity = SEV_ERROR;
        snprintf(ev.u.text.text, sizeof(ev.u.text.text), "training failed: %s", err);
        trace_emit(e->trace, &ev);
    } else {
        e->res.state = ENGINE_FINISHED;
    }
    engine_set_state(d, e->res.state);
    atomic_store(&e->done, true);
    return NULL;
}

int engine_start(struct engine *e) {
    int rc = engine_group_watch_start(e);
    if (rc != 0)
        return rc;
    e->watching = true;
    rc = pthread_create(&e->thread, NULL, engine_main, e);
    if (rc != 0)
        return -rc;
    e->started = true;
    return 0;
}
