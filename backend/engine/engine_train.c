/* The training half of the loop: the model on the device, shuffled mini-batches with
 * device-timed phases, evaluation, and a checkpoint after every epoch. */
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/core/rng.h"
#include "backend/engine/engine_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ENGINE_EVAL_ROWS 1024 /* rows per evaluation forward (sizes the model's scratch) */

int engine_resume_load(struct engine *e, char *err, size_t errlen) {
    struct mlp_arch arch = e->conf.arch;
    arch.n_in = FEAT_COUNT;
    if (!e->conf.resume_path[0]) {
        int rc = mlp_ckpt_alloc(&e->ck, &arch);
        if (rc != 0)
            return errbuf_set(err, errlen, rc, "out of memory");
        mlp_init_params(&arch, e->conf.seed, e->ck.params);
        e->ck.adam.conf = e->conf.adam;
        e->ck.data_fingerprint = e->data_fp;
        return 0;
    }
    int rc = mlp_ckpt_load(e->conf.resume_path, &e->ck, err, errlen);
    if (rc != 0)
        return rc == -ENOMEM ? rc : (rc == -ENOENT ? -EINVAL : rc);
    if (e->ck.arch.n_in != FEAT_COUNT)
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: model takes %d inputs but ringside builds %d features",
                          e->conf.resume_path, e->ck.arch.n_in, FEAT_COUNT);
    if (e->ck.data_fingerprint != e->data_fp)
        engine_log(e, SEV_WARNING, "%s was trained on different data; continuing on this data",
                   e->conf.resume_path);
    e->ck.adam.conf.lr = e->conf.adam.lr;
    e->ck.adam.conf.weight_decay = e->conf.adam.weight_decay;
    e->resumed = true;
    engine_log(e, SEV_INFO, "resuming %s after epoch %d (step %lld)", e->conf.resume_path,
               e->ck.epoch, (long long)e->ck.step);
    return 0;
}

void engine_train_free(struct engine *e) {
    if (e->model)
        e->c->ops->mlp_destroy(e->c, e->model);
    e->model = NULL;
    compute_free(e->c, e->x_val);
    compute_free(e->c, e->y_val);
    compute_free(e->c, e->x_batch);
    compute_free(e->c, e->y_batch);
    e->x_val = e->y_val = e->x_batch = e->y_batch = NULL;
    free(e->xb_host);
    free(e->yb_host);
    free(e->order);
    e->xb_host = e->yb_host = NULL;
    e->order = NULL;
}

/* Validation set to the device once; batch buffers and the model. */
static int engine_train_setup(struct engine *e, char *err, size_t errlen) {
    const struct compute_ops *ops = e->c->ops;
    size_t nv = e->n_rows - e->split, f = FEAT_COUNT, eb = ops->elem_bytes;
    size_t batch = (size_t)e->conf.batch;
    uint64_t t0 = mono_now_ns();
    engine_set_phase(e, PHASE_H2D);
    int rc = compute_alloc(e->c, nv * f * eb, &e->x_val, err, errlen);
    rc = rc ? rc : compute_alloc(e->c, nv * eb, &e->y_val, err, errlen);
    rc = rc ? rc : compute_alloc(e->c, batch * f * eb, &e->x_batch, err, errlen);
    rc = rc ? rc : compute_alloc(e->c, batch * eb, &e->y_batch, err, errlen);
    double *stage = rc ? NULL : malloc(nv * f * sizeof(double)); /* until the copy is done */
    if (!rc && !stage)
        rc = errbuf_set(err, errlen, -ENOMEM, "out of memory");
    for (size_t i = 0; stage && i < nv * f; i++)
        stage[i] = e->xf[e->split * f + i];
    int up = rc ? 0 : ops->upload_f64(e->c, e->x_val, stage, nv * f);
    up = up || rc ? up : ops->upload_f64(e->c, e->y_val, e->y + e->split, nv);
    int src = compute_sync(e->c, SYNC_OP_COPY);
    free(stage);
    engine_phase_done(e, PHASE_H2D, t0, 0, -1, -1);
    if (rc == 0 && (up != 0 || src != 0))
        rc = errbuf_set(err, errlen, up ? up : src, "copy to device failed: %s",
                        ops->strerror(up ? up : src));
    if (rc != 0)
        return rc;
    e->xb_host = malloc(ENGINE_INFLIGHT * batch * f * sizeof(double));
    e->yb_host = malloc(ENGINE_INFLIGHT * batch * sizeof(double));
    e->n_fl = 0;
    e->order = malloc(e->split * sizeof(size_t));
    if (!e->xb_host || !e->yb_host || !e->order)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    struct compute_mlp_init init = {
        .arch = e->ck.arch,
        .adam = e->ck.adam.conf,
        .params = e->ck.params,
        .adam_m = e->ck.adam.m,
        .adam_v = e->ck.adam.v,
        .adam_t = e->ck.adam.t,
        .max_rows = batch > ENGINE_EVAL_ROWS ? batch : ENGINE_EVAL_ROWS,
    };
    rc = ops->mlp_create(e->c, &init, &e->model);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "cannot create the model on the device: %s",
                          ops->strerror(rc));
    return 0;
}

static void engine_shuffle(struct engine *e, int32_t epoch) {
    uint64_t s = e->conf.seed * 1000003ull + (uint64_t)epoch;
    for (size_t i = 0; i < e->split; i++)
        e->order[i] = i;
    for (size_t i = e->split; i > 1; i--) {
        size_t j = (size_t)(rng_splitmix64(&s) % i);
        size_t t = e->order[i - 1];
        e->order[i - 1] = e->order[j];
        e->order[j] = t;
    }
}

/* Device-side phase times of one step from its events. */
static void engine_step_emit(struct engine *e, const struct compute_event *ev, int32_t epoch,
                             int64_t step) {
    static const enum ev_phase_id ph[4] = {PHASE_H2D, PHASE_FORWARD, PHASE_BACKWARD,
                                           PHASE_OPTIMIZER};
    struct trace_pos pos = {epoch, step, -1};
    for (int k = 0; k < 4; k++) {
        uint64_t a, b;
        if (e->c->ops->event_time_ns(e->c, &ev[k], &a) == 0 &&
            e->c->ops->event_time_ns(e->c, &ev[k + 1], &b) == 0)
            trace_phase_emit(e->trace, e->c->dev, ph[k], a, b, &pos);
    }
}

/* Enqueue one step into the next in-flight slot (the caller flushes a full window first). */
static int engine_step(struct engine *e, size_t first, size_t rows, int32_t epoch) {
    const struct compute_ops *ops = e->c->ops;
    size_t f = FEAT_COUNT, batch = (size_t)e->conf.batch;
    struct engine_inflight *fl = &e->fl[e->n_fl];
    double *xb = e->xb_host + e->n_fl * batch * f, *yb = e->yb_host + e->n_fl * batch;
    for (size_t r = 0; r < rows; r++) {
        size_t i = e->order[first + r];
        for (size_t j = 0; j < f; j++)
            xb[r * f + j] = e->xf[i * f + j];
        yb[r] = e->y[i];
    }
    *fl = (struct engine_inflight){.step = e->s.step, .epoch = epoch, .rows = rows};
    struct compute_event *ev = fl->ev;
    int rc = ops->event_record(e->c, &ev[0]);
    rc = rc ? rc : ops->upload_f64(e->c, e->x_batch, xb, rows * f);
    rc = rc ? rc : ops->upload_f64(e->c, e->y_batch, yb, rows);
    rc = rc ? rc : ops->event_record(e->c, &ev[1]);
    rc = rc ? rc : ops->mlp_forward(e->c, e->model, e->x_batch, rows);
    rc = rc ? rc : ops->mlp_loss(e->c, e->model, e->y_batch, rows, &fl->loss);
    rc = rc ? rc : ops->event_record(e->c, &ev[2]);
    rc = rc ? rc : ops->mlp_backward(e->c, e->model, e->x_batch, e->y_batch, rows);
    rc = rc ? rc : ops->event_record(e->c, &ev[3]);
    rc = rc ? rc : ops->mlp_optimizer(e->c, e->model);
    rc = rc ? rc : ops->event_record(e->c, &ev[4]);
    e->n_fl++;
    return rc;
}

/* Losses of the steps since the last metric, and of the epoch so far. */
struct engine_losses {
    double sum, epoch_sum;
    size_t n, epoch_n;
};

/* Wait for the in-flight steps; emit their device-timed phases and add their losses. */
static int engine_flush(struct engine *e, struct engine_losses *l) {
    if (e->n_fl == 0)
        return 0;
    uint64_t t0 = mono_now_ns();
    enum ev_phase_id prev = e->s.phase;
    engine_set_phase(e, PHASE_SYNC);
    int rc = compute_sync(e->c, SYNC_OP_STREAM);
    engine_set_phase(e, prev);
    for (size_t k = 0; rc == 0 && k < e->n_fl; k++) {
        engine_step_emit(e, e->fl[k].ev, e->fl[k].epoch, e->fl[k].step);
        l->sum += e->fl[k].loss;
        l->epoch_sum += e->fl[k].loss;
        l->n++;
        l->epoch_n++;
    }
    engine_phase_done(e, PHASE_SYNC, t0, e->fl[e->n_fl - 1].epoch, e->fl[e->n_fl - 1].step, -1);
    e->n_fl = 0;
    return rc;
}

static void engine_metric(struct engine *e, int32_t epoch, double loss, bool has_val,
                          double val_loss, double samples_per_s) {
    struct ev ev = {.kind = EV_METRIC, .dev = (uint16_t)e->c->dev};
    ev.u.metric.epoch = epoch;
    ev.u.metric.step = e->s.step;
    ev.u.metric.loss = loss;
    ev.u.metric.has_val = has_val;
    ev.u.metric.val_loss = val_loss;
    ev.u.metric.samples_per_s = samples_per_s;
    trace_emit(e->trace, &ev);
    e->s.loss = loss;
    e->s.has_loss = true;
    e->s.samples_per_s = samples_per_s;
}

/* Mean validation loss, forward in slices of ENGINE_EVAL_ROWS. */
static int engine_eval(struct engine *e, int32_t epoch, double *val_loss, char *err,
                       size_t errlen) {
    const struct compute_ops *ops = e->c->ops;
    size_t nv = e->n_rows - e->split, f = FEAT_COUNT, eb = ops->elem_bytes;
    size_t parts = (nv + ENGINE_EVAL_ROWS - 1) / ENGINE_EVAL_ROWS;
    double *loss = calloc(parts, sizeof(double));
    if (!loss)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    uint64_t t0 = mono_now_ns();
    engine_set_phase(e, PHASE_EVAL);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < parts; k++) {
        size_t r0 = k * ENGINE_EVAL_ROWS,
               rows = nv - r0 < ENGINE_EVAL_ROWS ? nv - r0 : ENGINE_EVAL_ROWS;
        rc = ops->mlp_forward(e->c, e->model, (char *)e->x_val + r0 * f * eb, rows);
        rc = rc ? rc : ops->mlp_loss(e->c, e->model, (char *)e->y_val + r0 * eb, rows, &loss[k]);
    }
    int src = compute_sync(e->c, SYNC_OP_STREAM);
    rc = rc ? rc : src;
    double sum = 0;
    for (size_t k = 0; k < parts; k++) {
        size_t rows = nv - k * ENGINE_EVAL_ROWS < ENGINE_EVAL_ROWS ? nv - k * ENGINE_EVAL_ROWS
                                                                   : ENGINE_EVAL_ROWS;
        sum += loss[k] * (double)rows;
    }
    free(loss);
    engine_phase_done(e, PHASE_EVAL, t0, epoch, -1, -1);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "evaluation failed: %s", ops->strerror(rc));
    *val_loss = sum / (double)nv;
    return 0;
}

int engine_checkpoint_note(const struct engine_result *res, char *buf, size_t n) {
    if (res->checkpoint_error_meta)
        return snprintf(buf, n,
                        "metadata for epoch %d not written: %s; the checkpoint (epoch %d, %s) is "
                        "written",
                        res->checkpoint_error_epoch, res->checkpoint_error, res->checkpoint_epoch,
                        res->checkpoint);
    if (res->checkpoint[0])
        return snprintf(buf, n,
                        "checkpoint for epoch %d not written: %s; the last good one (epoch %d, "
                        "%s) is kept",
                        res->checkpoint_error_epoch, res->checkpoint_error, res->checkpoint_epoch,
                        res->checkpoint);
    return snprintf(buf, n, "checkpoint for epoch %d not written: %s; no checkpoint written yet",
                    res->checkpoint_error_epoch, res->checkpoint_error);
}

/* Write the checkpoint and then its metadata, each atomically. A write that fails (disk full,
 * quota, I/O error) costs this epoch's checkpoint, not the run: the previous file stays as it
 * was, the failure is logged and kept in res, and the next epoch tries again. */
static void engine_checkpoint_write(struct engine *e, int32_t epoch) {
    char path[ENGINE_PATH_MAX + 160], meta[ENGINE_PATH_MAX + 160], err[512];
    snprintf(path, sizeof(path), "%s/%s.rsmodel", e->conf.output_dir, e->conf.name);
    snprintf(meta, sizeof(meta), "%s/%s_metadata.json", e->conf.output_dir, e->conf.name);
    int rc = afile_mkdirs(e->conf.output_dir, err, sizeof(err));
    rc = rc ? rc : mlp_ckpt_save(path, &e->ck, err, sizeof(err));
    bool model_ok = rc == 0;
    if (model_ok) {
        snprintf(e->res.checkpoint, sizeof(e->res.checkpoint), "%s", path);
        e->res.checkpoint_epoch = epoch;
        rc = engine_meta_write(e, meta, err, sizeof(err));
    }
    if (rc == 0) {
        e->res.checkpoint_error[0] = '\0';
        engine_log(e, SEV_INFO, "checkpoint written: %s (epoch %d)", path, epoch);
        return;
    }
    snprintf(e->res.checkpoint_error, sizeof(e->res.checkpoint_error), "%s", err);
    e->res.checkpoint_error_epoch = epoch;
    e->res.checkpoint_error_meta = model_ok;
    char note[2 * ENGINE_PATH_MAX + 768]; /* all of it: cut to an event's size below */
    if (engine_checkpoint_note(&e->res, note, sizeof(note)) >= EV_TEXT_BYTES) {
        /* too long for an event: the kept file by name */
        struct engine_result r = e->res;
        const char *base = strrchr(r.checkpoint, '/');
        if (base)
            memmove(r.checkpoint, base + 1, strlen(base));
        engine_checkpoint_note(&r, note, sizeof(note));
    }
    engine_log(e, SEV_ERROR, "%s", note);
}

/* Read the model back from the device (a failure there is fatal: the device state is in
 * doubt) and write it. */
static int engine_checkpoint(struct engine *e, int32_t epoch, char *err, size_t errlen) {
    const struct compute_ops *ops = e->c->ops;
    uint64_t t0 = mono_now_ns();
    engine_set_phase(e, PHASE_CHECKPOINT);
    int rc = ops->mlp_read(e->c, e->model, e->ck.params, e->ck.adam.m, e->ck.adam.v, &e->ck.adam.t);
    int src = compute_sync(e->c, SYNC_OP_COPY);
    rc = rc ? rc : src;
    if (rc != 0) {
        engine_phase_done(e, PHASE_CHECKPOINT, t0, epoch, -1, -1);
        return errbuf_set(err, errlen, rc, "reading the model back failed: %s", ops->strerror(rc));
    }
    e->ck.epoch = epoch;
    e->ck.step = e->s.step;
    e->ck.train_loss = e->last_train_loss;
    e->ck.val_loss = e->s.val_loss;
    engine_checkpoint_write(e, epoch);
    engine_phase_done(e, PHASE_CHECKPOINT, t0, epoch, -1, -1);
    return 0;
}

/* Resuming from the file this run writes to: that file is the last good checkpoint until the
 * first one is written (what a failed write reports as kept). */
static void engine_checkpoint_resumed(struct engine *e) {
    char path[ENGINE_PATH_MAX + 160];
    struct stat a, b;
    snprintf(path, sizeof(path), "%s/%s.rsmodel", e->conf.output_dir, e->conf.name);
    if (e->resumed && stat(path, &a) == 0 && stat(e->conf.resume_path, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        snprintf(e->res.checkpoint, sizeof(e->res.checkpoint), "%s", path);
        e->res.checkpoint_epoch = e->ck.epoch;
    }
}

/* One epoch of steps; returns with *stopped set when a stop command arrived. */
static int engine_epoch(struct engine *e, int32_t epoch, bool *stopped, char *err, size_t errlen) {
    size_t batch = (size_t)e->conf.batch;
    engine_shuffle(e, epoch);
    struct engine_losses l = {0};
    size_t samples = 0, queued = 0;
    uint64_t t_metric = mono_now_ns();
    int rc = 0;
    for (size_t first = 0; rc == 0 && first < e->split; first += batch) {
        if ((*stopped = engine_safe_point(e)))
            break;
        size_t rows = e->split - first < batch ? e->split - first : batch;
        rc = engine_step(e, first, rows, epoch);
        e->s.step++;
        samples += rows;
        e->res.has_train_loss = true;
        bool metric = ++queued >= (size_t)e->conf.metric_every || first + batch >= e->split;
        if (rc == 0 && (metric || e->n_fl == ENGINE_INFLIGHT))
            rc = engine_flush(e, &l);
        if (rc == 0 && metric) {
            uint64_t now = mono_now_ns();
            engine_metric(e, epoch, l.sum / (double)l.n, false, 0,
                          (double)samples / ((double)(now - t_metric) / 1e9));
            l.sum = 0;
            l.n = samples = queued = 0;
            t_metric = now;
        }
    }
    rc = rc ? rc : engine_flush(e, &l); /* stopped mid-way */
    e->n_fl = 0;
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "training step %lld failed: %s", (long long)e->s.step,
                          e->c->ops->strerror(rc));
    if (l.n > 0) { /* stopped mid-way: report the steps since the last metric */
        uint64_t now = mono_now_ns();
        engine_metric(e, epoch, l.sum / (double)l.n, false, 0,
                      (double)samples / ((double)(now - t_metric) / 1e9));
    }
    if (l.epoch_n > 0) /* the epoch's metric and the checkpoint carry the epoch's mean loss */
        e->last_train_loss = l.epoch_sum / (double)l.epoch_n;
    return 0;
}

static void engine_progress(struct engine *e, int32_t epoch, int64_t step0) {
    e->s.epoch = epoch;
    e->s.epochs = e->first_epoch + e->conf.epochs - 1;
    e->s.steps_per_epoch =
        (int64_t)((e->split + (size_t)e->conf.batch - 1) / (size_t)e->conf.batch);
    e->s.total_steps = step0 + e->s.steps_per_epoch * e->conf.epochs;
}

int engine_train(struct engine *e, char *err, size_t errlen) {
    if (e->stop_requested)
        return 0;
    int rc = engine_train_setup(e, err, errlen);
    if (rc != 0)
        return rc;
    engine_checkpoint_resumed(e);
    e->first_epoch = e->ck.epoch + 1;
    e->s.step = e->ck.step;
    e->s.best_val_loss = 0;
    uint64_t t0 = mono_now_ns();
    int64_t step0 = e->s.step;
    for (int32_t epoch = e->first_epoch; epoch < e->first_epoch + e->conf.epochs; epoch++) {
        engine_progress(e, epoch, step0);
        bool stopped = false;
        int since = epoch - e->first_epoch;
        if (e->conf.vpoc_refresh > 0 && since > 0 && since % e->conf.vpoc_refresh == 0 &&
            (rc = engine_vpoc_all(e, err, errlen)) != 0) /* as when new data arrives */
            return rc;
        rc = engine_epoch(e, epoch, &stopped, err, errlen);
        double val = 0;
        if (rc == 0 && !stopped)
            rc = engine_eval(e, epoch, &val, err, errlen);
        if (rc != 0)
            return rc;
        if (!stopped) {
            e->s.val_loss = val;
            e->s.has_val = true;
            if (!e->res.has_val || val < e->res.best_val_loss)
                e->res.best_val_loss = val;
            e->s.best_val_loss = e->res.best_val_loss;
            e->res.has_val = true;
            engine_metric(e, epoch, e->last_train_loss, true, val, e->s.samples_per_s);
        }
        if ((rc = engine_checkpoint(e, stopped ? epoch - 1 : epoch, err, errlen)) != 0)
            return rc;
        e->res.epochs_done = stopped ? epoch - 1 : epoch;
        engine_emit_mem(e);
        engine_publish(e, true);
        if (stopped)
            break;
    }
    double secs = (double)(mono_now_ns() - t0) / 1e9;
    e->res.steps = e->s.step;
    e->res.train_loss = e->last_train_loss;
    e->res.val_loss = e->s.val_loss;
    e->res.samples_per_s = secs > 0 ? (double)(e->s.step - step0) * e->conf.batch / secs : 0;
    return 0;
}
