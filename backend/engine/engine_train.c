/* The training half of the loop: the model on the device, shuffled mini-batches with
 * device-timed phases, evaluation, and a checkpoint after every epoch. */
#include "backend/core/afile.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/core/rng.h"
#include "backend/engine/engine_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define ENGINE_EVAL_ROWS 1024 /* rows per evaluation forward (sizes the model's scratch) */

/* How many devices trained the checkpoint: its metadata's "devices" (1 before there was
 * such a key), or 0 when there is no metadata beside it. */
static int engine_ckpt_devices(const char *model) {
    char meta[ENGINE_PATH_MAX + 32];
    size_t n = strlen(model);
    if (n > 8 && strcmp(model + n - 8, ".rsmodel") == 0)
        n -= 8;
    snprintf(meta, sizeof(meta), "%.*s_metadata.json", (int)n, model);
    json_object *root = json_object_from_file(meta), *v = NULL;
    if (!root)
        return 0;
    int devices = 1;
    if (json_object_object_get_ex(root, "devices", &v) && json_object_is_type(v, json_type_int))
        devices = json_object_get_int(v);
    json_object_put(root);
    return devices;
}

/* A resume onto another device count works (the model is the same on every replica); say what
 * changes: the global batch, and so the steps per epoch. */
static void engine_resume_devices(struct engine *e) {
    int was = engine_ckpt_devices(e->conf.resume_path), now = (int)e->n_dev;
    if (was > 0 && was != now)
        engine_log(e, SEV_INFO,
                   "the checkpoint was trained on %d device%s, this run has %d: the global "
                   "batch goes from %d to %d samples a step",
                   was, was == 1 ? "" : "s", now, was * e->conf.batch, now * e->conf.batch);
    else if (was == 0 && now > 1)
        engine_log(e, SEV_INFO, "resuming onto %d devices: the global batch is %d samples a step",
                   now, now * e->conf.batch);
}

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
    engine_resume_devices(e);
    return 0;
}

void engine_train_free(struct engine_dev *d) {
    if (d->model)
        d->c->ops->mlp_destroy(d->c, d->model);
    d->model = NULL;
    compute_free(d->c, d->x_val);
    compute_free(d->c, d->y_val);
    compute_free(d->c, d->x_batch);
    compute_free(d->c, d->y_batch);
    compute_free(d->c, d->xchg_dev);
    d->x_val = d->y_val = d->x_batch = d->y_batch = d->xchg_dev = NULL;
    free(d->xb_host);
    free(d->yb_host);
    free(d->order);
    free(d->params);
    d->xb_host = d->yb_host = d->params = NULL;
    d->order = NULL;
}

/* The validation set to the device (rank 0, which evaluates), once. */
static int engine_train_val(struct engine_dev *d, char *err, size_t errlen) {
    struct engine *e = d->e;
    const struct compute_ops *ops = d->c->ops;
    size_t nv = e->n_rows - e->split, f = FEAT_COUNT, eb = ops->elem_bytes;
    int rc = compute_alloc(d->c, nv * f * eb, &d->x_val, err, errlen);
    rc = rc ? rc : compute_alloc(d->c, nv * eb, &d->y_val, err, errlen);
    double *stage = rc ? NULL : malloc(nv * f * sizeof(double)); /* until the copy is done */
    if (!rc && !stage)
        rc = errbuf_set(err, errlen, -ENOMEM, "out of memory");
    for (size_t i = 0; stage && i < nv * f; i++)
        stage[i] = e->xf[e->split * f + i];
    int up = rc ? 0 : ops->upload_f64(d->c, d->x_val, stage, nv * f);
    up = up || rc ? up : ops->upload_f64(d->c, d->y_val, e->y + e->split, nv);
    int src = compute_sync(d->c, SYNC_OP_COPY);
    free(stage);
    if (rc == 0 && (up != 0 || src != 0))
        rc = errbuf_set(err, errlen, up ? up : src, "copy to device failed: %s",
                        ops->strerror(up ? up : src));
    return rc;
}

/* Batch buffers, the validation set (rank 0) and the model replica. */
static int engine_train_setup(struct engine_dev *d, char *err, size_t errlen) {
    struct engine *e = d->e;
    const struct compute_ops *ops = d->c->ops;
    size_t f = FEAT_COUNT, eb = ops->elem_bytes;
    size_t batch = (size_t)e->conf.batch;
    uint64_t t0 = mono_now_ns();
    engine_set_phase(d, PHASE_H2D);
    int rc = compute_alloc(d->c, batch * f * eb, &d->x_batch, err, errlen);
    rc = rc ? rc : compute_alloc(d->c, batch * eb, &d->y_batch, err, errlen);
    if (rc == 0 && d->rank == 0)
        rc = engine_train_val(d, err, errlen);
    engine_phase_done(d, PHASE_H2D, t0, 0, -1, -1);
    engine_set_phase(d, PHASE_COUNT);
    if (rc != 0)
        return rc;
    d->xb_host = malloc(ENGINE_INFLIGHT * batch * f * sizeof(double));
    d->yb_host = malloc(ENGINE_INFLIGHT * batch * sizeof(double));
    d->n_fl = 0;
    d->order = malloc((e->split ? e->split : 1) * sizeof(size_t));
    d->params = d->rank > 0 ? malloc(mlp_param_count(&e->ck.arch) * sizeof(double)) : NULL;
    if (!d->xb_host || !d->yb_host || !d->order || (d->rank > 0 && !d->params))
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
    rc = ops->mlp_create(d->c, &init, &d->model);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "cannot create the model on dev %u: %s", d->c->dev,
                          ops->strerror(rc));
    return 0;
}

static void engine_shuffle(struct engine_dev *d, int32_t epoch) {
    struct engine *e = d->e;
    uint64_t s = e->conf.seed * 1000003ull + (uint64_t)epoch;
    for (size_t i = 0; i < e->split; i++)
        d->order[i] = i;
    for (size_t i = e->split; i > 1; i--) {
        size_t j = (size_t)(rng_splitmix64(&s) % i);
        size_t t = d->order[i - 1];
        d->order[i - 1] = d->order[j];
        d->order[j] = t;
    }
}

/* Device-side phase times of the window's steps from their events: one event a phase, the
 * window's spans of it summed (a window's steps are of one epoch: a metric flushes it). */
static void engine_window_emit(struct engine_dev *d) {
    static const enum ev_phase_id one[4] = {PHASE_H2D, PHASE_FORWARD, PHASE_BACKWARD,
                                            PHASE_OPTIMIZER};
    static const enum ev_phase_id dp[5] = {PHASE_H2D, PHASE_FORWARD, PHASE_BACKWARD,
                                           PHASE_ALLREDUCE, PHASE_OPTIMIZER};
    bool group = d->e->n_dev > 1;
    const enum ev_phase_id *ph = group ? dp : one;
    int n = group ? 5 : 4;
    const struct engine_inflight *last = &d->fl[d->n_fl - 1];
    struct trace_pos pos = {last->epoch, last->step, -1};
    for (int k = 0; k < n; k++) {
        uint64_t first = UINT64_MAX, end = 0, busy = 0;
        uint32_t count = 0;
        for (size_t s = 0; s < d->n_fl; s++) {
            uint64_t a, b;
            if (d->c->ops->event_time_ns(d->c, &d->fl[s].ev[k], &a) != 0 ||
                d->c->ops->event_time_ns(d->c, &d->fl[s].ev[k + 1], &b) != 0)
                continue;
            first = a < first ? a : first;
            end = b > end ? b : end;
            busy += b > a ? b - a : 0;
            count++;
        }
        if (count == 1)
            trace_phase_emit(d->e->trace, d->c->dev, ph[k], first, end, &pos);
        else if (count > 1)
            trace_phase_emit_sum(d->e->trace, d->c->dev, ph[k], first, end, busy, count, &pos);
    }
}

/* Enqueue one step into the next in-flight slot (the caller flushes a full window first):
 * rows samples of the shuffled order from first, weighed by weight in the global batch (a
 * device with no rows of a short last batch computes one row and weighs it 0). */
static int engine_step(struct engine_dev *d, size_t first, size_t rows, double weight,
                       int32_t epoch) {
    struct engine *e = d->e;
    const struct compute_ops *ops = d->c->ops;
    size_t f = FEAT_COUNT, batch = (size_t)e->conf.batch;
    struct engine_inflight *fl = &d->fl[d->n_fl];
    double *xb = d->xb_host + d->n_fl * batch * f, *yb = d->yb_host + d->n_fl * batch;
    for (size_t r = 0; r < rows; r++) {
        size_t i = d->order[first + r];
        for (size_t j = 0; j < f; j++)
            xb[r * f + j] = e->xf[i * f + j];
        yb[r] = e->y[i];
    }
    *fl =
        (struct engine_inflight){.step = d->s.step, .epoch = epoch, .rows = rows, .weight = weight};
    struct compute_event *ev = fl->ev;
    struct compute_reduce red = engine_reduce_proto;
    red.ctx = d;
    bool group = e->n_dev > 1;
    int rc = ops->event_record(d->c, &ev[0]);
    rc = rc ? rc : ops->upload_f64(d->c, d->x_batch, xb, rows * f);
    rc = rc ? rc : ops->upload_f64(d->c, d->y_batch, yb, rows);
    rc = rc ? rc : ops->event_record(d->c, &ev[1]);
    rc = rc ? rc : ops->mlp_forward(d->c, d->model, d->x_batch, rows);
    rc = rc ? rc : ops->mlp_loss(d->c, d->model, d->y_batch, rows, &fl->loss);
    rc = rc ? rc : ops->event_record(d->c, &ev[2]);
    rc = rc ? rc : ops->mlp_backward(d->c, d->model, d->x_batch, d->y_batch, rows);
    rc = rc ? rc : ops->event_record(d->c, &ev[3]);
    if (group) { /* the mean of the devices' gradients, weighed by their shares */
        rc = rc ? rc : ops->mlp_grad_reduce(d->c, d->model, weight * e->n_dev, &red);
        rc = rc ? rc : ops->event_record(d->c, &ev[4]);
    }
    rc = rc ? rc : ops->mlp_optimizer(d->c, d->model);
    rc = rc ? rc : ops->event_record(d->c, &ev[group ? 5 : 4]);
    d->n_fl++;
    return rc;
}

/* Losses of the steps since the last metric, and of the epoch so far: each step's loss is the
 * global batch's (every device's batch mean weighed by its share), summed over the devices at
 * the metric. */
struct engine_losses {
    double sum, epoch_sum;
    size_t n, epoch_n;
};

/* Wait for the in-flight steps; emit their device-timed phases and add their losses. */
static int engine_flush(struct engine_dev *d, struct engine_losses *l) {
    if (d->n_fl == 0)
        return 0;
    uint64_t t0 = mono_now_ns();
    enum ev_phase_id prev = d->s.phase;
    engine_set_phase(d, PHASE_SYNC);
    int rc = compute_sync(d->c, SYNC_OP_STREAM);
    engine_set_phase(d, prev);
    if (rc == 0)
        engine_window_emit(d);
    for (size_t k = 0; rc == 0 && k < d->n_fl; k++) {
        double loss = d->fl[k].loss * d->fl[k].weight;
        l->sum += loss;
        l->epoch_sum += loss;
        l->n++;
        l->epoch_n++;
    }
    const struct engine_inflight *last = &d->fl[d->n_fl - 1];
    engine_phase_done(d, PHASE_SYNC, t0, last->epoch, last->step, -1);
    uint64_t t1 = mono_now_ns();
    d->s.step_ms = (double)(t1 - d->last_flush_ns) / 1e6 / (double)d->n_fl;
    d->last_flush_ns = t1;
    engine_coll_flush(d);
    d->n_fl = 0;
    return rc;
}

static void engine_metric(struct engine_dev *d, int32_t epoch, double loss, bool has_val,
                          double val_loss, double samples_per_s) {
    if (d->rank == 0) {
        struct ev ev = {.kind = EV_METRIC, .dev = (uint16_t)d->c->dev};
        ev.u.metric.epoch = epoch;
        ev.u.metric.step = d->s.step;
        ev.u.metric.loss = loss;
        ev.u.metric.has_val = has_val;
        ev.u.metric.val_loss = val_loss;
        ev.u.metric.samples_per_s = samples_per_s;
        trace_emit(d->e->trace, &ev);
    }
    d->s.loss = loss;
    d->s.has_loss = true;
    d->s.samples_per_s = samples_per_s;
}

/* Mean validation loss, forward in slices of ENGINE_EVAL_ROWS (rank 0). */
static int engine_eval(struct engine_dev *d, int32_t epoch, double *val_loss, char *err,
                       size_t errlen) {
    struct engine *e = d->e;
    const struct compute_ops *ops = d->c->ops;
    size_t nv = e->n_rows - e->split, f = FEAT_COUNT, eb = ops->elem_bytes;
    size_t parts = (nv + ENGINE_EVAL_ROWS - 1) / ENGINE_EVAL_ROWS;
    double *loss = calloc(parts, sizeof(double));
    if (!loss)
        return errbuf_set(err, errlen, -ENOMEM, "out of memory");
    uint64_t t0 = mono_now_ns();
    engine_set_phase(d, PHASE_EVAL);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < parts; k++) {
        size_t r0 = k * ENGINE_EVAL_ROWS,
               rows = nv - r0 < ENGINE_EVAL_ROWS ? nv - r0 : ENGINE_EVAL_ROWS;
        rc = ops->mlp_forward(d->c, d->model, (char *)d->x_val + r0 * f * eb, rows);
        rc = rc ? rc : ops->mlp_loss(d->c, d->model, (char *)d->y_val + r0 * eb, rows, &loss[k]);
    }
    int src = compute_sync(d->c, SYNC_OP_STREAM);
    rc = rc ? rc : src;
    double sum = 0;
    for (size_t k = 0; k < parts; k++) {
        size_t rows = nv - k * ENGINE_EVAL_ROWS < ENGINE_EVAL_ROWS ? nv - k * ENGINE_EVAL_ROWS
                                                                   : ENGINE_EVAL_ROWS;
        sum += loss[k] * (double)rows;
    }
    free(loss);
    engine_phase_done(d, PHASE_EVAL, t0, epoch, -1, -1);
    engine_set_phase(d, PHASE_COUNT);
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

/* path is about to be written: a failure injected for it (--inject write:checkpoint:N) fails
 * it as a full disk would; a stall (stall:checkpoint:N) blocks in it for good, as a write to a
 * hung network file system does (only the stop deadline ends the process then). */
static int engine_write_fault(struct engine *e, const char *path, char *err, size_t errlen) {
    int kind = e->trace ? trace_fault_write(e->trace, engine_dev0(e)->c->dev) : -1;
    if (kind == TRACE_FAULT_STALL) {
        engine_log(e, SEV_WARNING, "fault injection: writing %s blocks for good", path);
        for (;;) {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
    }
    if (kind != TRACE_FAULT_WRITE)
        return 0;
    return errbuf_set(err, errlen, -ENOSPC, "%s: %s (injected)", path, strerror(ENOSPC));
}

/* The epoch just checkpointed improved on the best validation loss: its model (e->ck) also
 * goes to NAME_best.rsmodel, so the best model is kept whatever later epochs do. True when
 * written; a failure is a warning (the checkpoint itself is written) and training goes on. */
static bool engine_best_write(struct engine *e, int32_t epoch) {
    char path[ENGINE_PATH_MAX + 160], err[512];
    snprintf(path, sizeof(path), "%s/%s_best.rsmodel", e->conf.output_dir, e->conf.name);
    if (mlp_ckpt_save(path, &e->ck, err, sizeof(err)) != 0) {
        engine_log(e, SEV_WARNING, "best model (epoch %d) not saved: %s", epoch, err);
        return false;
    }
    snprintf(e->res.best_checkpoint, sizeof(e->res.best_checkpoint), "%s", path);
    snprintf(engine_dev0(e)->s.best_path, sizeof(engine_dev0(e)->s.best_path), "%s", path);
    return true;
}

/* Write the checkpoint and then its metadata, each atomically. A write that fails (disk full,
 * quota, I/O error) costs this epoch's checkpoint, not the run: the previous file stays as it
 * was, the failure is logged and kept in res, and the next epoch tries again. */
static void engine_checkpoint_write(struct engine *e, int32_t epoch) {
    char path[ENGINE_PATH_MAX + 160], meta[ENGINE_PATH_MAX + 160], st[ENGINE_PATH_MAX + 160],
        err[512];
    snprintf(path, sizeof(path), "%s/%s.rsmodel", e->conf.output_dir, e->conf.name);
    snprintf(meta, sizeof(meta), "%s/%s_metadata.json", e->conf.output_dir, e->conf.name);
    snprintf(st, sizeof(st), "%s/%s.safetensors", e->conf.output_dir, e->conf.name);
    int rc = afile_mkdirs(e->conf.output_dir, err, sizeof(err));
    rc = rc ? rc : engine_write_fault(e, path, err, sizeof(err));
    rc = rc ? rc : mlp_ckpt_save(path, &e->ck, err, sizeof(err));
    bool model_ok = rc == 0;
    if (model_ok) {
        snprintf(e->res.checkpoint, sizeof(e->res.checkpoint), "%s", path);
        e->res.checkpoint_epoch = epoch;
        rc = engine_write_fault(e, meta, err, sizeof(err));
        rc = rc ? rc : engine_meta_write(e, meta, st, err, sizeof(err));
    }
    if (rc == 0) {
        e->res.checkpoint_error[0] = '\0';
        snprintf(engine_dev0(e)->s.checkpoint_path, sizeof(engine_dev0(e)->s.checkpoint_path), "%s",
                 path);
        if (e->ck_best && engine_best_write(e, epoch))
            engine_log(e, SEV_INFO, "checkpoint written: %s (epoch %d), the best so far (val %.4f)",
                       path, epoch, e->ck.val_loss);
        else
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

/* FNV-1a over the parameters' bytes: replicas that agree have the same. */
static uint64_t engine_params_hash(const double *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n * sizeof(double); i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Several devices: every replica's checksum to every device; 0 when they agree, else -EPROTO
 * with err naming the devices that differ from the first. */
static int engine_replicas_agree(struct engine_dev *d, int32_t epoch, const double *params,
                                 double *val, char *err, size_t errlen) {
    struct engine *e = d->e;
    if (e->n_dev == 1)
        return 0;
    double v[1 + 2 * ENGINE_MAX_DEVICES] = {0};
    uint64_t h = engine_params_hash(params, mlp_param_count(&e->ck.arch));
    v[0] = d->rank == 0 ? *val : 0; /* rank 0's validation loss, for every device's view */
    v[1 + 2 * d->rank] = (double)(uint32_t)(h >> 32);
    v[2 + 2 * d->rank] = (double)(uint32_t)h;
    int rc = engine_exchange(d, v, 1 + 2 * e->n_dev, err, errlen);
    if (rc != 0)
        return rc;
    *val = v[0];
    char bad[256] = "";
    uint64_t h0 = ((uint64_t)v[1] << 32) | (uint64_t)v[2];
    for (unsigned r = 1; r < e->n_dev; r++) {
        uint64_t hr = ((uint64_t)v[1 + 2 * r] << 32) | (uint64_t)v[2 + 2 * r];
        if (hr != h0)
            snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%sdev %u (%016llx)",
                     bad[0] ? ", " : "", e->dev[r]->c->dev, (unsigned long long)hr);
    }
    if (!bad[0])
        return 0;
    return errbuf_set(err, errlen, -EPROTO,
                      "replicas disagree after epoch %d: %s differ from dev %u (%016llx); no "
                      "checkpoint is written from them",
                      epoch, bad, e->dev[0]->c->dev, (unsigned long long)h0);
}

/* Read the model back from the device (a failure there is fatal: the device state is in
 * doubt), check the replicas agree, and write it once (rank 0). val: rank 0's validation
 * loss in, everyone's out. */
static int engine_checkpoint(struct engine_dev *d, int32_t epoch, double *val, char *err,
                             size_t errlen) {
    struct engine *e = d->e;
    const struct compute_ops *ops = d->c->ops;
    uint64_t t0 = mono_now_ns();
    engine_set_phase(d, PHASE_CHECKPOINT);
    double *params = d->rank == 0 ? e->ck.params : d->params;
    int rc = d->rank == 0 ? ops->mlp_read(d->c, d->model, e->ck.params, e->ck.adam.m, e->ck.adam.v,
                                          &e->ck.adam.t)
                          : ops->mlp_read(d->c, d->model, d->params, NULL, NULL, NULL);
    int src = compute_sync(d->c, SYNC_OP_COPY);
    rc = rc ? rc : src;
    if (rc != 0) {
        engine_phase_done(d, PHASE_CHECKPOINT, t0, epoch, -1, -1);
        return errbuf_set(err, errlen, rc, "reading the model back failed: %s", ops->strerror(rc));
    }
    rc = engine_replicas_agree(d, epoch, params, val, err, errlen);
    if (rc == 0 && d->rank == 0) {
        e->ck.epoch = epoch;
        e->ck.step = d->s.step;
        e->ck.train_loss = d->last_train_loss;
        e->ck.val_loss = *val;
        engine_checkpoint_write(e, epoch);
    }
    engine_phase_done(d, PHASE_CHECKPOINT, t0, epoch, -1, -1);
    engine_set_phase(d, PHASE_COUNT);
    return rc;
}

/* A stop before this run's first epoch ended: an existing checkpoint in the output directory
 * (an earlier run's, or the one resumed from) is kept as it is rather than replaced by a model
 * trained on part of an epoch, and said (rank 0). True when one is kept. */
static bool engine_checkpoint_kept(struct engine_dev *d, int32_t epoch) {
    struct engine *e = d->e;
    char path[ENGINE_PATH_MAX + 160];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s.rsmodel", e->conf.output_dir, e->conf.name);
    if (stat(path, &st) != 0)
        return false;
    if (d->rank == 0)
        engine_log(e, SEV_INFO,
                   "stopped before epoch %d ended: %s is kept as it was (a model trained on "
                   "part of an epoch does not replace it)",
                   epoch, path);
    return true;
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

/* Whether epoch is one to run: every epoch until a stop with --epochs 0, else the first
 * conf.epochs from first_epoch. */
static bool engine_epoch_more(const struct engine *e, int32_t epoch, int32_t first_epoch) {
    return e->conf.epochs == 0 || epoch < first_epoch + e->conf.epochs;
}

/* The validation loss has not improved for a while: said once at 10 epochs since the best,
 * and again at each doubling (20, 40, ...), so a run that overfits says so (rank 0). */
static void engine_best_stale(struct engine *e, int32_t epoch, int32_t best_epoch, double best) {
    int32_t since = epoch - best_epoch, tens = since / 10;
    if (since < 10 || since % 10 != 0 || (tens & (tens - 1)) != 0)
        return;
    engine_log(e, SEV_WARNING,
               "val loss has not improved for %d epochs (best %.4f at epoch %d, kept as the "
               "best model): the model is overfitting the training sessions",
               since, best, best_epoch);
}

/* This device's rows of the global batch [first, first + rows): an even split, the first
 * rows % n_dev devices one more. */
static void engine_my_rows(const struct engine_dev *d, size_t first, size_t rows, size_t *off,
                           size_t *mine) {
    size_t n = d->e->n_dev, q = rows / n, rem = rows % n, r = d->rank;
    *mine = q + (r < rem);
    *off = first + r * q + (r < rem ? r : rem);
}

/* The metric over the devices: the sum of the steps' global losses since the last one. */
static int engine_metric_sum(struct engine_dev *d, double *sum, char *err, size_t errlen) {
    return engine_exchange(d, sum, 1, err, errlen);
}

/* A drop fault: this device leaves the run here, without a word to the others. */
static bool engine_drop_now(struct engine_dev *d, int32_t epoch, size_t k, size_t steps) {
    struct trace_inject in;
    if (d->e->n_dev < 2 || k != steps / 2 ||
        !trace_fault_take_in(d->e->trace, d->c->dev, TRACE_FAULT_DROP, PHASE_COUNT, &in))
        return false;
    d->dropped = true;
    engine_dev_log(d, SEV_WARNING,
                   "fault injection: dev %u leaves the run at epoch %d step %lld without a word",
                   d->c->dev, epoch, (long long)d->s.step);
    return true;
}

/* One epoch of steps; returns with *stopped set when a stop command arrived. */
static int engine_epoch(struct engine_dev *d, int32_t epoch, bool *stopped, char *err,
                        size_t errlen) {
    struct engine *e = d->e;
    size_t gbatch = (size_t)e->conf.batch * e->n_dev;
    size_t steps = (e->split + gbatch - 1) / gbatch;
    engine_shuffle(d, epoch);
    struct engine_losses l = {0};
    size_t samples = 0, queued = 0;
    uint64_t t_metric = mono_now_ns();
    d->last_flush_ns = t_metric;
    int rc = 0;
    *stopped = false;
    if (e->n_dev > 1) { /* every epoch starts at a control point, however short it is */
        *stopped = engine_control(d, err, errlen, &rc);
        if (rc != 0 || *stopped)
            return rc;
    }
    for (size_t k = 0; rc == 0 && k < steps; k++) {
        if (e->n_dev == 1 && (*stopped = engine_safe_point(d)))
            break;
        if (engine_drop_now(d, epoch, k, steps))
            return errbuf_set(err, errlen, -ECONNRESET,
                              "left the run at epoch %d step %lld (fault injection drop:dev%u)",
                              epoch, (long long)d->s.step, d->c->dev);
        size_t first = k * gbatch;
        size_t rows = e->split - first < gbatch ? e->split - first : gbatch, off, mine;
        engine_my_rows(d, first, rows, &off, &mine);
        double weight = (double)mine / (double)rows;
        rc = engine_step(d, mine ? off : first, mine ? mine : 1, weight, epoch);
        d->s.step++;
        trace_set_pos(e->trace, d->c->dev, epoch, d->s.step);
        samples += rows;
        if (d->rank == 0)
            e->res.has_train_loss = true;
        bool metric = ++queued >= (size_t)e->conf.metric_every || k + 1 == steps;
        bool flush = metric || d->n_fl == ENGINE_INFLIGHT;
        if (rc == 0 && flush)
            rc = engine_flush(d, &l);
        if (rc == 0 && metric) {
            double sum = l.sum;
            rc = engine_metric_sum(d, &sum, err, errlen);
            uint64_t now = mono_now_ns();
            if (rc == 0)
                engine_metric(d, epoch, sum / (double)l.n, false, 0,
                              (double)samples / ((double)(now - t_metric) / 1e9));
            l.sum = 0;
            l.n = samples = queued = 0;
            t_metric = now;
        }
        if (rc == 0 && flush && e->n_dev > 1 && k + 1 < steps) {
            int crc;
            *stopped = engine_control(d, err, errlen, &crc);
            if (crc != 0)
                return crc;
            if (*stopped)
                break;
        }
    }
    if (rc == 0)
        rc = engine_flush(d, &l); /* what a stop left in flight */
    d->n_fl = 0;
    if (rc != 0 && d->comm_rc)
        return errbuf_set(err, errlen, rc, "training step %lld: %s", (long long)d->s.step,
                          d->comm_err);
    if (rc != 0 && err[0])
        return rc;
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "training step %lld failed: %s", (long long)d->s.step,
                          d->c->ops->strerror(rc));
    if (l.n > 0) { /* stopped mid-way: report the steps since the last metric */
        double sum = l.sum;
        if ((rc = engine_metric_sum(d, &sum, err, errlen)) != 0)
            return rc;
        uint64_t now = mono_now_ns();
        engine_metric(d, epoch, sum / (double)l.n, false, 0,
                      (double)samples / ((double)(now - t_metric) / 1e9));
    }
    double esum = l.epoch_sum;
    if ((rc = engine_metric_sum(d, &esum, err, errlen)) != 0)
        return rc;
    if (l.epoch_n > 0) /* the epoch's metric and the checkpoint carry the epoch's mean loss */
        d->last_train_loss = esum / (double)l.epoch_n;
    return 0;
}

static void engine_progress(struct engine_dev *d, int32_t epoch, int32_t first_epoch,
                            int64_t step0) {
    struct engine *e = d->e;
    size_t gbatch = (size_t)e->conf.batch * e->n_dev;
    d->s.epoch = epoch;
    d->s.epochs = e->conf.epochs ? first_epoch + e->conf.epochs - 1 : 0;
    d->s.steps_per_epoch = (int64_t)((e->split + gbatch - 1) / gbatch);
    d->s.total_steps = e->conf.epochs ? step0 + d->s.steps_per_epoch * e->conf.epochs : 0;
    trace_set_pos(e->trace, d->c->dev, epoch, d->s.step);
}

int engine_train(struct engine_dev *d, char *err, size_t errlen) {
    struct engine *e = d->e;
    if (atomic_load(&e->stop_requested))
        return 0;
    int rc = engine_train_setup(d, err, errlen);
    bool stop = false;
    if (e->n_dev > 1) { /* every replica ready before the first all-reduce */
        double v[2] = {0, rc != 0};
        int xrc = engine_exchange(d, v, 2, err, errlen);
        if (rc == 0 && xrc != 0)
            return xrc;
        if (rc == 0 && v[1] > 0)
            return errbuf_set(err, errlen, -ECANCELED, "another device failed");
    }
    if (rc != 0)
        return rc;
    if (d->rank == 0)
        engine_checkpoint_resumed(e);
    int32_t first_epoch = e->ck.epoch + 1; /* e->ck is rank 0's from here: read it once */
    d->s.step = e->ck.step;
    if (d->rank == 0)
        e->first_epoch = first_epoch;
    d->s.best_val_loss = 0;
    uint64_t t0 = mono_now_ns();
    int64_t step0 = d->s.step;
    bool has_best = false;
    double best = 0;
    for (int32_t epoch = first_epoch; engine_epoch_more(e, epoch, first_epoch); epoch++) {
        engine_progress(d, epoch, first_epoch, step0);
        bool stopped = false;
        int since = epoch - first_epoch;
        if (e->conf.vpoc_refresh > 0 && since > 0 && since % e->conf.vpoc_refresh == 0) {
            rc = engine_vpoc_all(d, err, errlen); /* as when new data arrives */
            if ((rc = engine_agree(d, rc, &stop, err, errlen)) != 0)
                return rc;
        }
        engine_set_steps(d, true);
        rc = engine_epoch(d, epoch, &stopped, err, errlen);
        engine_set_steps(d, false);
        double val = 0;
        if (rc == 0 && !stopped && d->rank == 0)
            rc = engine_eval(d, epoch, &val, err, errlen);
        if (rc != 0)
            return rc;
        if (!engine_epoch_more(e, epoch + 1, first_epoch)) /* the final checkpoint, the end */
            engine_leave_mark(e);
        if (d->rank == 0) { /* the metadata's writer */
            e->ck_val_measured = !stopped;
            e->ck_best = !stopped && (!has_best || val < best);
        }
        if (stopped && epoch == first_epoch && engine_checkpoint_kept(d, epoch)) {
            if (d->rank == 0)
                e->res.epochs_done = epoch - 1;
            break; /* every device sees the same file: none enters the checkpoint's exchange */
        }
        if ((rc = engine_checkpoint(d, stopped ? epoch - 1 : epoch, &val, err, errlen)) != 0)
            return rc;
        if (!stopped) {
            d->s.val_loss = val;
            d->s.has_val = true;
            if (!has_best || val < best) {
                best = val;
                d->s.best_epoch = epoch;
            }
            has_best = true;
            d->s.best_val_loss = best;
            if (d->rank == 0)
                engine_best_stale(e, epoch, d->s.best_epoch, best);
            if (d->rank == 0) {
                e->res.best_val_loss = best;
                e->res.best_epoch = d->s.best_epoch;
                e->res.has_val = true;
            }
            engine_metric(d, epoch, d->last_train_loss, true, val, d->s.samples_per_s);
        }
        if (d->rank == 0)
            e->res.epochs_done = stopped ? epoch - 1 : epoch;
        engine_emit_mem(d);
        engine_publish(d, true);
        if (stopped)
            break;
    }
    if (d->rank == 0) {
        double secs = (double)(mono_now_ns() - t0) / 1e9;
        e->res.steps = d->s.step;
        e->res.train_loss = d->last_train_loss;
        e->res.val_loss = d->s.val_loss;
        e->res.samples_per_s =
            secs > 0 ? (double)(d->s.step - step0) * e->conf.batch * (double)e->n_dev / secs : 0;
    }
    return 0;
}
