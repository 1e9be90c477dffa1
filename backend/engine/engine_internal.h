/* Private engine state shared by the engine's source files (one thread owns it). */
#ifndef RINGSIDE_BACKEND_ENGINE_ENGINE_INTERNAL_H
#define RINGSIDE_BACKEND_ENGINE_ENGINE_INTERNAL_H

#include "backend/core/snap.h"
#include "backend/core/worker.h"
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
    struct compute_event ev[6]; /* before H2D, forward, backward, (allreduce), optimizer, after */
    double loss;                /* valid after the sync */
    double weight;              /* this device's share of the global batch's rows */
    int64_t step;
    int32_t epoch;
    size_t rows;
};

/* One training device: its worker thread (rank 0 runs on the engine's thread), backend,
 * model replica, buffers and snapshot. Owned by that thread once training starts. */
struct engine_dev {
    struct engine *e;
    unsigned rank; /* 0 .. n_dev-1 */
    struct compute *c;
    struct snap *snap;
    struct engine_snap s; /* working copy; published by engine_publish */
    uint64_t last_publish_ns;
    pthread_t thread;
    bool started;
    struct compute_pool_peek peek; /* scratch for VPOC's high-water mark */
    struct compute_vpoc_set *vset; /* this device's sessions packed on it, kept between VPOC
                                      refreshes while the chunk size stays; or NULL */
    uint64_t vset_bytes;           /* what making it added to the pool: allocated bytes, */
    uint32_t vset_blocks;          /* and blocks (a packed pass on a kept set allocates nothing) */
    uint64_t scratch_bytes;        /* what the last pass held beyond the set at its peak (the */
    uint32_t scratch_blocks;       /* dense kernel's volume matrix), bytes and blocks */
    uint64_t scratch_asked;        /* ... and the bytes the matrix asked for */

    /* device buffers */
    struct compute_mlp *model;
    void *x_val, *y_val, *x_batch, *y_batch; /* x_val, y_val: rank 0 only (it evaluates) */
    double *xb_host, *yb_host;               /* staging: one batch per in-flight step */
    size_t *order;                           /* shuffled training rows (the same everywhere) */
    struct engine_inflight fl[ENGINE_INFLIGHT];
    size_t n_fl;
    uint64_t last_flush_ns; /* for the step time */
    double last_train_loss; /* the last epoch's mean (the same on every device) */
    void *xchg_dev;         /* device copy of an exchange vector (GPU backends) */
    double *params;         /* the replica's parameters, read back for the checksum (rank > 0) */

    /* the training all-reduces since the last collective event (written by whichever thread
     * runs the reduction; read after the sync that covers it) */
    struct ev_coll win;
    int comm_rc;        /* the first failed collective of this device */
    char comm_err[512]; /* ... and why */

    int rc;        /* how the worker ended (ranks > 0) */
    char err[512]; /* ... and why */
    bool dropped;  /* it left the run (drop fault) */
};

struct engine {
    struct engine_conf conf;
    struct evring *events; /* borrowed: out */
    struct evring *cmds;   /* owned: in */
    struct trace *trace;
    unsigned n_dev;                             /* training devices */
    struct engine_dev *dev[ENGINE_MAX_DEVICES]; /* by rank */
    struct comm *comm;                          /* several devices only */
    struct worker group_watch; /* aborts the group when a device waits past the timeout */
    bool watching;             /* group_watch was initialised (engine_start) */
    pthread_t thread;
    bool started;
    atomic_bool done;
    atomic_bool cleanup_busy; /* a `c` cleanup is queued or running: a second is refused */
    atomic_int cleanup_left;  /* devices still cleaning up for it */

    /* data, owned by the engine thread after engine_start (read-only for the other ranks
     * once features are built) */
    struct data_series ds; /* freed once features are built (counts stay in s.bars) */
    uint64_t data_fp;      /* data_series_fingerprint of the data, taken at load */
    struct data_sessions ss;
    struct vpoc_bar *vbars;   /* the series as VPOC input (host memory, copied per chunk):
                                 kept for --vpoc-refresh (each device's packed set reads it),
                                 freed before the features are built when there is none */
    struct vpoc_result *vpoc; /* one per session (each device writes its share) */
    atomic_size_t sessions_done;
    size_t n_rows; /* samples */
    size_t split;  /* first validation row */
    float *xf;     /* normalised features, n_rows x FEAT_COUNT, built straight into float */
    double *y;     /* targets (normalised for the return target) */

    /* model: host copy (parameters, Adam state, normalisation, position) */
    struct mlp_ckpt ck;
    bool resumed;
    int32_t first_epoch;

    /* run state */
    uint64_t start_wall_ns;
    char data_said[ENGINE_PATH_MAX + 1024]; /* what the data file was read as ("" synthetic) */
    atomic_int chunk_bars;                  /* rank 0 sets it; every device's VPOC reads it */
    int vpoc_logged_chunk;
    /* Pause and stop, shared by the devices: rank 0 decides (at a control point when several
     * devices train), the others wait on cv while paused. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool paused;
    atomic_bool stop_requested;
    bool want_pause, want_cleanup, want_probe; /* several devices: asked, not yet decided */
    atomic_bool quit;                          /* destroy: every wait ends now */
    _Atomic uint64_t leave_ns; /* when the way out began (engine_leaving_ns), 0 before */
    char first_err[512];       /* the first device failure (under mu) */
    struct engine_result res;  /* rank 0 writes it */
    bool ck_val_measured;      /* the checkpoint's val_loss was measured (not a stopped epoch's) */
    bool ck_best;              /* ... and is the best so far: the model is the best one too */
};

static inline struct engine_dev *engine_dev0(const struct engine *e) {
    return e->dev[0];
}

/* engine_publish.c: what the engine tells (the tracer's events, each device's snapshot) */
void engine_log(struct engine *e, enum ev_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A log line about one device (dev set). */
void engine_dev_log(struct engine_dev *d, enum ev_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* d is in phase ph from now (PHASE_COUNT: none): the trace's (what a sync in it is
 * attributed to) and, but for the steps' syncs and all-reduces, the snapshot's, published at
 * once with its start. Setting the phase it is in already changes nothing. */
void engine_set_phase(struct engine_dev *d, enum ev_phase_id ph);
/* d enters or leaves an epoch's steps (the snapshot's in_steps, published at once). */
void engine_set_steps(struct engine_dev *d, bool in_steps);
/* Emit a host-timed phase that started at start_ns and ends now. */
void engine_phase_done(struct engine_dev *d, enum ev_phase_id ph, uint64_t start_ns, int32_t epoch,
                       int64_t step, int32_t chunk);
/* Load and features are host work with no synchronize of their own: a hang armed for phase
 * (--inject hang:load, hang:features) is carried out as a device synchronize held in it, as a
 * stalled file system or CPU would hold the phase. Nothing without such a fault. */
void engine_host_hold(struct engine_dev *d, enum ev_phase_id phase);
void engine_emit_mem(struct engine_dev *d);
/* d's snapshot published: at most every 100 ms, unless forced. */
void engine_publish(struct engine_dev *d, bool force);
/* d's state (running, paused, finished, failed), published at once. */
void engine_set_state(struct engine_dev *d, enum engine_state st);
void engine_reply(struct engine *e, unsigned dev, const struct ev_command *cmd, int rc,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* engine_cmd.c: commands and safe points */
/* Commands queued at most (the queue, and what one drain takes). */
#define ENGINE_CMD_CAP 64
/* Safe cleanup: sync, release cached blocks, sync; result text in msg. 0 or error. */
int engine_cleanup(struct engine_dev *d, char *msg, size_t msglen);
/* The memory probe's answer for d, as a command result. */
void engine_probe(struct engine_dev *d, const struct ev_command *cmd);
/* Hold the run paused, or let it go on (the other ranks wait on it). */
void engine_set_paused(struct engine *e, bool paused);
/* Rank 0: apply the queued commands (group: several devices training in step). */
void engine_drain_commands(struct engine *e, bool group);
/* Outside collectives (VPOC, one device's steps). Rank 0: apply queued commands; every rank:
 * wait while paused. Returns true when a stop was requested. */
bool engine_safe_point(struct engine_dev *d);
/* At a training step boundary. One device: engine_safe_point. Several (at a flush): rank 0's
 * commands are decided for all by an exchange, then carried out by every device at the same
 * step (cleanup and probe each device on its own, a pause by all). True to stop (also on a
 * failed exchange, with *rc and err set). */
bool engine_control(struct engine_dev *d, char *err, size_t errlen, int *rc);

/* engine_thread.c: the training thread */
/* The way out begins now, unless it began before (engine_leaving_ns). Any thread. */
void engine_leave_mark(struct engine *e);
/* Remember a device's failure if it is the first (the run's root cause). */
void engine_fail_first(struct engine *e, unsigned dev, const char *why);
/* Several devices: agree on whether to go on (rank 0's stop, anyone's failure): rc, or
 * -ECANCELED when another device failed; *stop the same on every device. One device: rc. */
int engine_agree(struct engine_dev *d, int rc, bool *stop, char *err, size_t errlen);

/* engine_group.c: several devices */
/* Open the communicator for the devices (conf->comm_lib or the platform's library). */
int engine_group_open(struct engine *e, char *err, size_t errlen);
/* Join the group (phase comm-init), under the collective timeout. */
int engine_group_init(struct engine_dev *d, char *err, size_t errlen);
/* The group's watchdog, as NCCL's users run one: a synchronize on any device that waits past
 * the collective timeout (a kernel waiting for a peer that will not come: no call of ours
 * is in progress to time out) aborts the group, so every device's wait ends with the
 * reason. Started with the loop, stopped at destroy. 0 or -errno. */
int engine_group_watch_start(struct engine *e);
void engine_group_watch_stop(struct engine *e);
/* After a run that went well: wait for every device (phase barrier) under the collective
 * timeout before any leaves, so none tears down while a peer is still in a collective; a
 * failure is said and fails the group (the teardown that follows then only releases it). */
void engine_group_barrier(struct engine_dev *d);
/* Leave it (phase teardown) under the teardown timeout, then abort; says how it went. */
void engine_group_teardown(struct engine_dev *d);
/* Sum n doubles of v over the devices, every device's v the same length; v gets the sums.
 * One device: nothing to do. 0 or error (with err). */
int engine_exchange(struct engine_dev *d, double *v, size_t n, char *err, size_t errlen);
/* The reduction the training step hands its gradients to. */
extern const struct compute_reduce engine_reduce_proto;
/* Emit the collective event of the training all-reduces since the last one. */
void engine_coll_flush(struct engine_dev *d);
/* Sleep ns unless the run is torn down first (a hang fault in a collective phase). */
void engine_nap(struct engine *e, uint64_t ns);
/* A hang fault armed for phase on d: wait it out (interruptibly), saying so. */
void engine_fault_wait(struct engine_dev *d, enum ev_phase_id phase);

/* engine_data.c */
int engine_data_load(struct engine *e, char *err, size_t errlen);
/* This device's share of the sessions (every n_dev-th from its rank). */
int engine_vpoc_all(struct engine_dev *d, char *err, size_t errlen);
int engine_features(struct engine *e, char *err, size_t errlen);

/* engine_train.c */
int engine_resume_load(struct engine *e, char *err, size_t errlen);
int engine_train(struct engine_dev *d, char *err, size_t errlen);
void engine_train_free(struct engine_dev *d);

/* engine_meta.c: <output>/<name>_metadata.json at path, then the parameters with it as
 * <output>/<name>.safetensors at tensors; each atomically. */
int engine_meta_write(const struct engine *e, const char *path, const char *tensors, char *err,
                      size_t errlen);

#endif
