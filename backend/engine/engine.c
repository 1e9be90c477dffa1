/* The engine's handle: what the front ends read of it (snapshots, devices, the way out), abort,
 * join and destroy. The rest: creation (engine_open.c), the training thread (engine_thread.c),
 * commands and safe points (engine_cmd.c), what it tells (engine_publish.c). */
#include "backend/comm/comm.h"
#include "backend/engine/engine_internal.h"

#include <stdlib.h>

const char *engine_data_said(const struct engine *e) {
    return e->data_said;
}

const struct engine_snap *engine_snap_read(struct engine *e, bool *fresh) {
    return snap_read(engine_dev0(e)->snap, fresh);
}

const struct engine_snap *engine_snap_read_dev(struct engine *e, unsigned k, bool *fresh) {
    return k < e->n_dev ? snap_read(e->dev[k]->snap, fresh) : NULL;
}

unsigned engine_devices(const struct engine *e, unsigned *out) {
    for (unsigned k = 0; k < e->n_dev; k++)
        out[k] = e->dev[k]->c->dev;
    return e->n_dev;
}

bool engine_done(struct engine *e) {
    return atomic_load(&e->done);
}

uint64_t engine_leaving_ns(struct engine *e) {
    return atomic_load(&e->leave_ns);
}

void engine_abort(struct engine *e) {
    engine_leave_mark(e);
    atomic_store(&e->quit, true);
    if (e->comm)
        comm_abort(e->comm);
    engine_set_paused(e, false);
}

int engine_join(struct engine *e, struct engine_result *res) {
    if (e->started) {
        int rc = pthread_join(e->thread, NULL);
        if (rc != 0)
            return -rc;
        e->started = false;
    }
    if (res)
        *res = e->res;
    return 0;
}

struct trace *engine_trace(struct engine *e) {
    return e->trace;
}

void engine_clock_anchor(const struct engine *e, uint64_t *wall_ns, uint64_t *mono_ns) {
    *wall_ns = e->start_wall_ns;
    *mono_ns = engine_dev0(e)->s.start_ns;
}

void engine_destroy(struct engine *e) {
    if (!e)
        return;
    if (e->started) {
        engine_command(e, CMD_STOP, 0);
        atomic_store(&e->quit, true);
        engine_set_paused(e, false);
        pthread_join(e->thread, NULL);
    }
    if (e->watching)
        engine_group_watch_stop(e);
    bool left = false; /* a device left work on its stream that waits for the others */
    for (unsigned r = 0; r < ENGINE_MAX_DEVICES; r++)
        left |= e->dev[r] && e->dev[r]->dropped;
    if (e->comm && (left || e->res.state == ENGINE_FAILED))
        comm_abort(e->comm); /* so that work ends now */
    for (unsigned r = 0; r < ENGINE_MAX_DEVICES; r++) {
        struct engine_dev *d = e->dev[r];
        if (!d)
            continue;
        if (d->c && d->model) /* nothing may still run on what is freed */
            compute_sync(d->c, SYNC_OP_STREAM);
        if (d->c)
            engine_train_free(d);
        if (d->c)
            compute_vpoc_set_destroy(d->c, d->vset);
        compute_close(d->c);
        snap_destroy(d->snap);
        free(d);
    }
    if (e->comm)
        comm_close(e->comm);
    trace_destroy(e->trace);
    evring_destroy(e->cmds);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e->xf);
    free(e->y);
    free(e->vpoc);
    free(e->vbars);
    data_sessions_fini(&e->ss);
    data_series_fini(&e->ds);
    mlp_ckpt_fini(&e->ck);
    free(e);
}
