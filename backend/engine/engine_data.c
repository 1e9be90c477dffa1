/* The data half of the loop: load (CSV or synthetic), VPOC per session chunk by chunk through
 * the compute backend and its memory pool, and the features built from the results. */
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/data/data_csv.h"
#include "backend/data/data_synth.h"
#include "backend/engine/engine_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int engine_data_load(struct engine *e, char *err, size_t errlen) {
    struct engine_dev *d0 = engine_dev0(e);
    uint64_t t0 = mono_now_ns();
    engine_set_phase(d0, PHASE_LOAD);
    int rc;
    if (e->conf.data_path[0]) {
        struct data_csv_opts o = {.skip_bad_rows = e->conf.skip_bad_rows,
                                  .symbol = e->conf.symbol,
                                  .columns = e->conf.columns,
                                  .tz = e->conf.tz,
                                  .continuous = e->conf.continuous,
                                  .time_unit = e->conf.time_unit,
                                  .price_scale = e->conf.price_scale,
                                  .bar = e->conf.bar};
        struct data_csv_report rep = {0};
        rc = data_csv_load(e->conf.data_path, &o, &e->ds, &rep, err, errlen);
        for (size_t k = 0; rc == 0 && k < rep.n_rolls && k < DATA_CSV_ROLLS; k++) {
            const struct data_csv_roll *r = &rep.roll[k];
            char day[20];
            data_format_time(r->day_s, day);
            day[10] = '\0';
            engine_log(e, SEV_INFO, "front month: %s to %s after %s (%.0f traded against %.0f)",
                       r->from, r->to, day, r->to_volume, r->from_volume);
        }
        if (rc == 0) {
            char said[1000];
            data_csv_describe(&rep, said, sizeof(said));
            snprintf(e->data_said, sizeof(e->data_said), "%s: read as %s", e->conf.data_path, said);
            engine_log(e, SEV_INFO, "%s", e->data_said);
        }
        if (rc == 0 && rep.rows_skipped > 0)
            engine_log(e, SEV_WARNING, "%s: skipped %zu bad rows of %zu (first: %s)",
                       e->conf.data_path, rep.rows_skipped, rep.rows_read, rep.first_skip);
    } else {
        struct data_synth_opts o = {.days = e->conf.synthetic_days,
                                    .seed = e->conf.seed,
                                    .start_hour = e->conf.session_start_hour,
                                    .tick = e->conf.vpoc.tick};
        rc = data_synth_generate(&o, &e->ds);
        if (rc != 0)
            errbuf_set(err, errlen, rc, "synthetic data: %s", strerror(-rc));
    }
    if (rc == 0)
        rc = data_sessions_split(&e->ds, e->conf.session_start_hour, &e->ss);
    const char *src = e->conf.data_path[0] ? e->conf.data_path : "synthetic data";
    if (rc == 0 && e->ss.n < 3)
        rc = errbuf_set(err, errlen, -EINVAL,
                        "%s: %zu session(s): training needs at least 3 (one for the prior "
                        "session's VPOC, one to train on, one to validate)",
                        src, e->ss.n);
    if (rc == 0 && (!(e->vpoc = calloc(e->ss.n, sizeof(*e->vpoc))) ||
                    !(e->vbars = malloc(e->ds.n * sizeof(*e->vbars)))))
        rc = errbuf_set(err, errlen, -ENOMEM, "out of memory");
    if (rc == 0) {
        vpoc_bars_from_series(e->ds.bars, e->ds.n, e->vbars);
        e->data_fp = data_series_fingerprint(&e->ds);
        char why[256];
        if (vpoc_sessions_check(e->vbars, &e->ss, &e->conf.vpoc, why, sizeof(why)) != 0)
            rc = errbuf_set(err, errlen, -EINVAL, "%s: %s", src, why);
    }
    engine_phase_done(d0, PHASE_LOAD, t0, 0, -1, -1);
    engine_set_phase(d0, PHASE_COUNT);
    if (rc != 0)
        return rc;
    for (unsigned r = 0; r < e->n_dev; r++) {
        e->dev[r]->s.bars = e->ds.n;
        e->dev[r]->s.sessions = e->ss.n;
    }
    engine_log(e, SEV_INFO, "loaded %zu bars in %zu sessions from %s", e->ds.n, e->ss.n,
               e->conf.data_path[0] ? e->conf.data_path : "the synthetic generator");
    return 0;
}

/* Device-side times of a pass's launches (one a chunk), emitted as vpoc phases after the
 * sync. */
static void engine_vpoc_emit(struct engine_dev *d, const struct compute_event *ev,
                             size_t n_launches) {
    for (size_t k = 0; k < n_launches; k++) {
        uint64_t a, b;
        if (d->c->ops->event_time_ns(d->c, &ev[k], &a) == 0 &&
            d->c->ops->event_time_ns(d->c, &ev[k + 1], &b) == 0) {
            struct trace_pos pos = {d->s.epoch, -1, (int32_t)k};
            trace_phase_emit(d->e->trace, d->c->dev, PHASE_VPOC, a, b, &pos);
        }
    }
}

/* The VPOC ran out of device memory: say so with the pool's numbers and drop the chunk size a
 * rung (chunks are what the pool holds), as a user would with '-'. whole: the bars of the
 * longest session (what chunk 0 means). true: retry; false: already at the smallest chunk,
 * the error stands. */
static bool engine_vpoc_oom(struct engine_dev *d, size_t whole, const char *why) {
    struct engine *e = d->e;
    int chunk = atomic_load(&e->chunk_bars);
    int used = chunk > 0 && (size_t)chunk < whole ? chunk : (int)whole;
    int smaller = vpoc_chunk_step(used, -1);
    engine_emit_mem(d);
    if (smaller <= 0 || smaller >= used) {
        engine_dev_log(d, SEV_ERROR, "VPOC at the smallest chunk (%d bars): %s", used, why);
        return false;
    }
    engine_dev_log(d, SEV_ERROR, "VPOC: %s", why);
    engine_dev_log(d, SEV_WARNING,
                   "VPOC out of memory at chunk %d bars: dropping to %d and retrying", used,
                   smaller);
    atomic_store(&e->chunk_bars, smaller);
    d->s.chunk_bars = smaller;
    engine_publish(d, true);
    return true;
}

/* This device's packed sessions at chunk `chunk`, made anew when the chunk changed. */
static int engine_vpoc_set(struct engine_dev *d, size_t chunk, char *err, size_t errlen) {
    struct engine *e = d->e;
    if (d->vset && compute_vpoc_set_chunk(d->vset) == chunk)
        return 0;
    compute_vpoc_set_destroy(d->c, d->vset); /* its chunks go back to the pool's cache */
    d->vset = NULL;
    struct mem_stats before, after;
    mem_pool_stats(d->c->pool, &before);
    int rc = compute_vpoc_set_create(d->c, e->vbars, &e->ss, d->rank, e->n_dev, &e->conf.vpoc,
                                     chunk, e->conf.vpoc_kernel, &d->vset, err, errlen);
    mem_pool_stats(d->c->pool, &after);
    d->vset_bytes = after.allocated_bytes - before.allocated_bytes;
    d->vset_blocks = after.active_blocks - before.active_blocks;
    return rc;
}

/* One pass over this device's sessions (every n_dev-th): all of them at once, one launch a
 * chunk. */
static int engine_vpoc_pass(struct engine_dev *d, size_t chunk, char *err, size_t errlen) {
    int rc = engine_vpoc_set(d, chunk, err, errlen);
    size_t n = rc ? 0 : compute_vpoc_set_launches(d->vset);
    struct compute_event *ev = rc ? NULL : calloc(n + 1, sizeof(*ev));
    if (rc == 0 && !ev)
        rc = errbuf_set(err, errlen, -ENOMEM, "out of memory");
    rc = rc ? rc : compute_vpoc_set_run(d->c, d->vset, d->e->vpoc, ev, &d->peek, err, errlen);
    if (rc == 0) {
        compute_vpoc_set_scratch(d->vset, &d->scratch_bytes, &d->scratch_blocks, &d->scratch_asked);
        engine_vpoc_emit(d, ev, n);
    }
    free(ev);
    return rc;
}

int engine_vpoc_all(struct engine_dev *d, char *err, size_t errlen) {
    struct engine *e = d->e;
    engine_set_phase(d, PHASE_VPOC);
    int rc = 0;
    if (d->rank == 0)
        atomic_store(&e->sessions_done, 0);
    size_t whole = 0, mine = 0;
    for (size_t k = d->rank; k < e->ss.n; k += e->n_dev, mine++)
        whole = e->ss.s[k].n > whole ? e->ss.s[k].n : whole;
    bool passed = false;
    while (rc == 0 && !passed && !engine_safe_point(d)) {
        int bars_now = atomic_load(&e->chunk_bars);
        rc = engine_vpoc_pass(d, bars_now > 0 ? (size_t)bars_now : 0, err, errlen);
        if (rc == -ENOMEM && engine_vpoc_oom(d, whole, err)) { /* the set is made anew */
            rc = 0;
            errbuf_set(err, errlen, 0, "%s", ""); /* said: a later failure gives its own */
            continue;
        }
        passed = rc == 0;
    }
    if (passed) {
        d->s.sessions_done = atomic_fetch_add(&e->sessions_done, mine) + mine;
        engine_emit_mem(d);
        /* the dense kernel's matrices are back in the cache, which stays as it is; where the
         * device's memory is the host's (the CPU backend) their pages go back to the system,
         * so the features the host builds next do not add to them */
        mem_pool_trim(d->c->pool);
    }
    if (e->conf.vpoc_refresh <= 0 || rc != 0) { /* no later pass needs the packed sessions */
        compute_vpoc_set_destroy(d->c, d->vset);
        d->vset = NULL;
    }
    engine_set_phase(d, PHASE_COUNT);
    bool stopped = atomic_load(&e->stop_requested);
    int chunk = atomic_load(&e->chunk_bars);
    if (passed && !stopped) { /* what this chunk size did to the pool: the set's buffers, and
                                 the dense kernel's volume matrix at the pass's peak */
        d->s.vpoc_peak = d->peek.stats;
        d->s.vpoc_base = d->peek.stats;
        d->s.vpoc_base.allocated_bytes -= d->vset_bytes + d->scratch_bytes;
        d->s.vpoc_base.active_blocks -= d->vset_blocks + d->scratch_blocks;
        d->s.vpoc_peak_chunk = chunk;
        d->s.vpoc_matrix_bytes = d->scratch_asked;
        d->s.has_vpoc_peak = true;
        engine_publish(d, true);
    }
    if (passed && !stopped && d->rank == 0 && chunk != e->vpoc_logged_chunk) {
        engine_log(e, SEV_INFO, "VPOC done for %zu sessions (chunk %d bars%s)", e->ss.n, chunk,
                   e->n_dev > 1 ? ", shared out across the devices" : "");
        e->vpoc_logged_chunk = chunk; /* refreshes log only when the chunk changed */
    }
    return rc;
}

/* Where feat_build_rows puts each sample: features in float (what training reads, half the
 * memory of the double reference), targets, and the session for the split. */
struct engine_rows {
    struct engine *e;
    size_t *session;
};

static void engine_rows_sink(void *ctx, size_t row, const double *x, double y, size_t bar,
                             size_t session) {
    struct engine_rows *r = ctx;
    (void)bar;
    for (unsigned j = 0; j < FEAT_COUNT; j++)
        r->e->xf[row * FEAT_COUNT + j] = (float)x[j];
    r->e->y[row] = y;
    r->session[row] = session;
}

/* Build the samples and find the first validation row. */
static int engine_features_rows(struct engine *e, const struct feat_opts *o, char *err,
                                size_t errlen) {
    size_t n = feat_rows(&e->ds, &e->ss, o);
    struct engine_rows r = {e, malloc((n ? n : 1) * sizeof(size_t))};
    e->xf = malloc((n ? n : 1) * FEAT_COUNT * sizeof(float));
    e->y = malloc((n ? n : 1) * sizeof(double));
    int rc = r.session && e->xf && e->y ? 0 : -ENOMEM;
    if (rc == 0 && n > 0)
        rc = feat_build_rows(&e->ds, &e->ss, e->vpoc, o, engine_rows_sink, &r);
    if (rc == 0) {
        struct feat_set view = {.n = n, .session = r.session}; /* the split reads sessions only */
        e->n_rows = n;
        e->split = feat_split_index(&view, e->conf.val_frac);
    }
    free(r.session);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "features: %s", strerror(-rc));
    return 0;
}

int engine_features(struct engine *e, char *err, size_t errlen) {
    struct engine_dev *d0 = engine_dev0(e);
    if (atomic_load(&e->stop_requested))
        return 0;
    uint64_t t0 = mono_now_ns();
    engine_set_phase(d0, PHASE_FEATURES);
    if (e->conf.vpoc_refresh <= 0) { /* every device's pass is done and its set destroyed */
        free(e->vbars);              /* only a refresh reads the VPOC form again */
        e->vbars = NULL;
    }
    struct feat_opts o = {.vpoc = e->conf.vpoc,
                          .horizon = e->conf.horizon,
                          .target = e->ck.arch.loss == MLP_LOSS_BCE ? FEAT_TARGET_SIGN
                                                                    : FEAT_TARGET_RETURN_BPS};
    int rc = engine_features_rows(e, &o, err, errlen);
    engine_host_hold(d0, PHASE_FEATURES);
    if (rc == 0 && (e->split == 0 || e->split >= e->n_rows))
        rc = errbuf_set(err, errlen, -EINVAL,
                        "not enough data: %zu samples cannot be split into training and "
                        "validation sessions (use more days)",
                        e->n_rows);
    if (rc != 0) {
        engine_set_phase(d0, PHASE_COUNT);
        return rc;
    }
    struct feat_norm norm;
    if (e->resumed) {
        memcpy(norm.mean, e->ck.norm_mean, sizeof(norm.mean));
        memcpy(norm.std, e->ck.norm_std, sizeof(norm.std));
        norm.y_mean = e->ck.y_mean;
        norm.y_std = e->ck.y_std;
    } else {
        feat_norm_fit_f32(e->xf, e->y, 0, e->split, o.target, &norm);
        memcpy(e->ck.norm_mean, norm.mean, sizeof(norm.mean));
        memcpy(e->ck.norm_std, norm.std, sizeof(norm.std));
        e->ck.y_mean = norm.y_mean;
        e->ck.y_std = norm.y_std;
    }
    feat_norm_apply_f32(e->xf, e->y, e->n_rows, &norm, o.target);
    data_series_fini(&e->ds);    /* features built: training needs neither bars nor their copies */
    d0->s.train_rows = e->split; /* every other device takes them after the features agree */
    d0->s.val_rows = e->n_rows - e->split;
    engine_phase_done(d0, PHASE_FEATURES, t0, 0, -1, -1);
    engine_set_phase(d0, PHASE_COUNT);
    engine_log(e, SEV_INFO, "features: %zu training and %zu validation samples x %d", e->split,
               e->n_rows - e->split, FEAT_COUNT);
    return 0;
}
