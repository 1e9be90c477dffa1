/* Private engine state shared by the engine's source files (one thread owns it). */
#ifndef RINGSIDE_BACKEND_ENGINE_ENGINE_INTERNAL_H
#define RINGSIDE_BACKEND_ENGINE_ENGINE_INTERNAL_H

#include "backend/core/snap.h"
#include "backend/data/data_series.h"
#include "backend/engine/engine.h"
#include "backend/mlp/mlp_ckpt.h"
#include "backend/vpoc/vpoc_features.h"

#include <pthread.h>
#include <stdatomic.h>

/* Training steps are enqueued without waiting; the stream is synchronized once per window (or
 * earlier for a metric, the epoch's end or a stop), and each step's phases and loss are read
 * then, from its device-side events. */
#define ENGINE_INFLIGHT 16

struct engine_inflight {
    struct compute_event ev[5]; /* before H2D, forward, backward, optimizer, and after */
    double loss;                /* valid after the sync */
    int64_t step;
    int32_t epoch;
    size_t rows;
};

struct engine {
    struct engine_conf conf;
    struct evring *events; /* borrowed: out */
    struct evring *cmds;   /* owned: in */
    struct trace *trace;
    struct compute *c;
    struct snap *snap;
    pthread_t thread;
    bool started;
    atomic_bool done;
    atomic_bool cleanup_busy; /* a `c` cleanup is queued or running: a second is refused (they
                                 all run on the training thread, never two at once) */

    /* data, owned by the engine thread after engine_start */
    struct data_series ds; /* freed once features are built (counts stay in s.bars) */
    uint64_t data_fp;      /* data_series_fingerprint of the data, taken at load */
    struct data_sessions ss;
    struct vpoc_bar *vbars;        /* the series as VPOC input (host memory, copied per chunk) */
    struct vpoc_result *vpoc;      /* one per session */
    size_t n_rows;                 /* samples */
    size_t split;                  /* first validation row */
    struct compute_pool_peek peek; /* scratch for VPOC's high-water mark */
    float *xf; /* normalised features, n_rows x FEAT_COUNT, built straight into float */
    double *y; /* targets (normalised for the return target) */

    /* model: host copy (parameters, Adam state, normalisation, position) */
    struct mlp_ckpt ck;
    bool resumed;
    int32_t first_epoch;

    /* device buffers */
    struct compute_mlp *model;
    void *x_val, *y_val, *x_batch, *y_batch;
    double *xb_host, *yb_host;                  /* staging: one batch per in-flight step */
    size_t *order;                              /* shuffled training rows */
    struct engine_inflight fl[ENGINE_INFLIGHT]; /* steps enqueued since the last sync */
    size_t n_fl;

    /* run state */
    struct engine_snap s; /* working copy; published by engine_publish */
    uint64_t last_publish_ns;
    uint64_t start_wall_ns;
    int chunk_bars;
    int vpoc_logged_chunk; /* chunk size of the last "VPOC done" log, -1 = none yet */
    bool paused, stop_requested;
    struct engine_result res;
    double last_train_loss;
};

/* engine.c */
void engine_publish(struct engine *e, bool force);
void engine_set_phase(struct engine *e, enum ev_phase_id ph);
/* Apply queued commands; blocks while paused. Returns true when a stop was requested. */
bool engine_safe_point(struct engine *e);
void engine_log(struct engine *e, enum ev_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Emit a host-timed phase that started at start_ns and ends now. */
void engine_phase_done(struct engine *e, enum ev_phase_id ph, uint64_t start_ns, int32_t epoch,
                       int64_t step, int32_t chunk);
void engine_emit_mem(struct engine *e);
/* Safe cleanup: sync, release cached blocks, sync; result text in msg. 0 or error. */
int engine_cleanup(struct engine *e, char *msg, size_t msglen);

/* engine_data.c */
int engine_data_load(struct engine *e, char *err, size_t errlen);
int engine_vpoc_all(struct engine *e, char *err, size_t errlen);
int engine_features(struct engine *e, char *err, size_t errlen);

/* engine_train.c */
int engine_resume_load(struct engine *e, char *err, size_t errlen);
int engine_train(struct engine *e, char *err, size_t errlen);
void engine_train_free(struct engine *e);

/* engine_meta.c: <output>/<name>_metadata.json */
int engine_meta_write(const struct engine *e, const char *path, char *err, size_t errlen);

#endif
