/* The training engine: loads data, computes VPOC chunk by chunk, builds features and trains
 * the MLP on a compute backend, on its own thread. It talks to the outside only through the
 * event ring (out), a command queue (in) and a latest-value snapshot (out). */
#ifndef RINGSIDE_BACKEND_ENGINE_ENGINE_H
#define RINGSIDE_BACKEND_ENGINE_ENGINE_H

#include "backend/comm/comm.h"
#include "backend/compute/compute.h"
#include "backend/core/evring.h"
#include "backend/data/data_csv.h"
#include "backend/memory/mem_pool.h"
#include "backend/mlp/mlp.h"
#include "backend/trace/trace.h"
#include "backend/vpoc/vpoc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGINE_PATH_MAX    1024
#define ENGINE_MAX_DEVICES TRACE_MAX_DEVICES

struct engine_conf {
    /* data */
    char data_path[ENGINE_PATH_MAX]; /* CSV file, or "" for synthetic data */
    int synthetic_days;              /* used when data_path is "" */
    uint64_t seed;
    bool skip_bad_rows;
    char symbol[DATA_CSV_SYMBOL_MAX]; /* --symbol: the instrument to keep from a file of several;
                                         "": the file must hold one */
    char columns[256];    /* --columns: the names of a headerless file's columns; "": a header */
    char tz[64];          /* --tz: the IANA zone of the file's local times; "": UTC */
    bool continuous;      /* --continuous front: the front month rolled from several instruments */
    char time_unit[8];    /* --time-unit s|ms|us|ns; "": integer times by their digits */
    char price_scale[16]; /* --price-scale 1e-N; "": as the layout says */
    char bar[16];         /* --bar LENGTH; "": ticks into 1m bars, bars as they are */
    int session_start_hour;
    /* VPOC */
    int chunk_bars; /* bars per chunk; 0 = whole session */
    struct vpoc_params vpoc;
    enum compute_vpoc_kernel vpoc_kernel; /* --vpoc-kernel: packed (default) or dense */
    /* features and model */
    int horizon;
    struct mlp_arch arch; /* n_in is set from the feature count */
    struct mlp_adam_conf adam;
    int batch, epochs;
    double val_frac;
    int metric_every; /* steps between metric events */
    /* output */
    char output_dir[ENGINE_PATH_MAX];
    char name[128]; /* checkpoint base name */
    char resume_path[ENGINE_PATH_MAX];
    /* compute */
    char backend[16]; /* auto, cpu, hip */
    int device, threads;
    /* Data-parallel training on several devices (--devices): their indices, distinct, or
     * n_devices 0 for the one device above, ENGINE_ALL_DEVICES for every device the backend
     * has (known at engine_create). --batch is per device. */
    int devices[ENGINE_MAX_DEVICES];
    int n_devices;
    char comm_lib[ENGINE_PATH_MAX]; /* the communication library (--comm-lib); "": the
                                       platform's (libnccl.so.2, librccl.so.1) */
    double comm_timeout_s;          /* joining the group and every collective call */
    double teardown_timeout_s;      /* leaving the group, before its communicators are aborted */
    char alloc_conf[256];           /* as given (flag or RINGSIDE_ALLOC_CONF) */
    struct mem_conf alloc;          /* parsed */
    bool pre_cleanup;               /* safe cleanup between data and training */
    int vpoc_refresh;               /* re-run VPOC every N epochs (0 = only before training) */
    /* faults to rehearse with (--inject), armed on the training device */
    struct trace_inject inject[TRACE_MAX_INJECT];
    int n_inject;
};

#define ENGINE_ALL_DEVICES (-1)

/* "0,1", "0-3", "1,3-5" or "all" into c->devices/n_devices. 0, or -EINVAL with err naming
 * --devices and what is wrong (a repeated device, one out of range, an empty item). */
int engine_devices_parse(const char *s, struct engine_conf *c, char *err, size_t errlen);
/* The list back as text ("0,1", "all"); "" for the one-device form. */
void engine_devices_format(const struct engine_conf *c, char *buf, size_t n);

/* Defaults as documented in docs/train.md and ringside-train(1). */
void engine_conf_default(struct engine_conf *c);
/* Check ranges and cross-field rules; -EINVAL with err naming the flag. */
int engine_conf_validate(const struct engine_conf *c, char *err, size_t errlen);

struct json_object;

/* The configuration as one JSON object (the caller puts it; NULL when out of memory), in the
 * words of the config file: the keys are the long flag names ("synthetic-days", "val-frac",
 * "alloc-conf", ...), the values what the flags take: integers, doubles as their shortest text
 * ("lr": 0.0002), strings ("hidden": "32,16", "profile": "close", "vpoc-kernel": "dense",
 * "inject": "hang:cleanup:40"),
 * true or false for the flags without a value, and null for what is not set ("data" with
 * synthetic data, "resume", "alloc-conf"; "hidden", "loss" and "activation" when resuming, as
 * the checkpoint's architecture is used then). --print-config (which adds the front end's
 * options), the recording's run line and the checkpoint metadata write it. */
struct json_object *engine_conf_json(const struct engine_conf *c);

enum engine_state {
    ENGINE_STARTING,
    ENGINE_RUNNING,
    ENGINE_PAUSED,
    ENGINE_STOPPING,
    ENGINE_FINISHED,
    ENGINE_FAILED,
};

/* Fields of struct engine_snap a source did not measure (its na bits): shown n/a, never as a
 * made-up 0. The loop of ours measures them all (na 0); a PyTorch job's snapshot (job) starts
 * with every bit and loses each with the first line that reports it. */
enum engine_na {
    ENGINE_NA_CHUNK = 1u << 0,   /* chunk_bars: the job has no VPOC chunk it told of */
    ENGINE_NA_SAMPLES = 1u << 1, /* samples_per_s */
    ENGINE_NA_STEPS = 1u << 2,   /* steps_per_s */
    ENGINE_NA_MEM = 1u << 3,     /* mem and layout: no allocator lines (a CPU job) */
};

/* Everything the UI shows that is not an event: copied by value, published a few times a
 * second and at every state change. One per training device: progress and losses are the
 * run's (the same on every device), the rest the device's own. */
struct engine_snap {
    uint64_t t_ns, start_ns;
    enum engine_state state;
    /* The phase the loop is in, begun at phase_start_ns and not ended (its event comes when it
     * ends); PHASE_COUNT when idle. The steps' own waits and exchanges (sync, allreduce) are
     * not shown here: their calls in flight are (inflight, coll_inflight). */
    enum ev_phase_id phase;
    uint64_t phase_start_ns; /* valid with has_phase_start */
    bool has_phase_start;    /* the live loop's: a replay learns a phase only once it ended */
    /* Within an epoch's steps: the device runs h2d, forward, backward and optimizer (and the
     * all-reduce) step after step, timed when the host next waits for it; phase is then the
     * host's own (idle while it queues steps, paused, cleanup...). */
    bool in_steps;
    char backend[16];
    struct compute_dev_info dev;
    int chunk_bars;
    /* progress */
    int32_t epoch, epochs; /* epoch in progress (1-based) and the target (0: until stopped) */
    int32_t best_epoch;    /* the epoch of best_val_loss (valid with has_val) */
    int64_t step, steps_per_epoch, total_steps; /* total_steps 0: until stopped */
    size_t sessions, sessions_done;             /* VPOC progress */
    size_t bars, train_rows, val_rows;
    double loss, val_loss, best_val_loss;
    bool has_loss, has_val;
    double samples_per_s;
    /* A PyTorch job's (the Python bridge's stream, watched or recorded), not the loop of ours:
     * its epochs are the total it told (0: not told, not "until stopped"), its step the steps
     * done in the run when it told its steps per epoch, else its own counter; steps_per_s its
     * rate as it reports it. na: what it (or any source) did not measure. */
    bool job;
    uint32_t na;
    double steps_per_s; /* valid unless ENGINE_NA_STEPS, for a job; the loop of ours has none */
    /* memory */
    struct mem_stats mem;
    struct mem_layout layout;
    struct mem_stats vpoc_peak; /* the pool at the last VPOC pass's high-water mark */
    struct mem_stats vpoc_base; /* the pool when that pass began */
    int32_t vpoc_peak_chunk;    /* the chunk size of that pass (0 = whole session) */
    uint64_t vpoc_matrix_bytes; /* of what that pass added: the dense kernel's volume matrix as
                                   asked (bars x levels x 8), the part that follows the chunk
                                   (0: the packed kernel) */
    bool has_vpoc_peak;
    /* syncs per op, and what is in flight */
    struct trace_sync_summary sync[SYNC_OP_COUNT];
    struct trace_inflight inflight;
    bool has_inflight;
    /* several devices: which one this is, its collective calls, and the one in flight */
    uint16_t rank, n_ranks;                   /* n_ranks 1: a run on one device */
    unsigned device;                          /* its index (--devices) */
    struct comm_op_stats coll[EV_COLL_COUNT]; /* the communicator's record, by enum
                                                 ev_coll_op (NONE unused) */
    struct trace_coll coll_inflight;
    bool has_coll_inflight;
    double step_ms; /* this device's mean step time over the last window (0: none yet) */
    int32_t pid;    /* a watched job's process (ringside watch); 0 for ringside's own loop */
    /* the run's last checkpoint and best model as written (first device; "" until written) */
    char checkpoint_path[ENGINE_PATH_MAX + 160], best_path[ENGINE_PATH_MAX + 160];
};

/* Final numbers, for the summary line. */
struct engine_result {
    enum engine_state state; /* FINISHED, or FAILED */
    bool stopped;            /* a stop command ended training early */
    int32_t epochs_done;
    int64_t steps;
    double train_loss, val_loss, best_val_loss;
    bool has_train_loss, has_val;
    double elapsed_s, samples_per_s;
    /* The last good checkpoint: the one this run wrote last or, until it writes one, the one
     * it resumed from when that is the same file. "" when there is none. */
    char checkpoint[ENGINE_PATH_MAX + 160];
    int32_t checkpoint_epoch; /* the epoch it holds (valid when checkpoint is set) */
    /* The model of the best validation loss so far (NAME_best.rsmodel), written whenever an
     * epoch improves on it: "" until one is written. */
    char best_checkpoint[ENGINE_PATH_MAX + 160];
    int32_t best_epoch; /* the epoch it holds, and of best_val_loss (valid with has_val) */
    /* The latest checkpoint that could not be written (disk full, quota, I/O error): why, and
     * for which epoch. Training goes on and the next epoch tries again; a later success clears
     * it, so a reason left at the end means the final result is not saved (exit status 1). */
    char checkpoint_error[512];
    int32_t checkpoint_error_epoch;
    bool checkpoint_error_meta; /* only the metadata failed: the model file is that epoch's */
    char error[512];            /* FAILED: why */
};

struct engine;

/* Open the backend, load and validate the data and any checkpoint to resume: everything
 * that can fail because of user input fails here, before a thread starts. events is
 * borrowed. 0; -EINVAL (bad input: exit status 2) or another negative error, with err. */
int engine_create(struct engine **out, const struct engine_conf *conf, struct evring *events,
                  char *err, size_t errlen);
/* Joins the thread if still running (after a stop), frees everything. */
void engine_destroy(struct engine *e);

/* Start the training thread. 0 or -errno. */
int engine_start(struct engine *e);

/* Queue a command; applied at the next safe point (chunk or step boundary) and answered by a
 * COMMAND event. Any thread; async-signal-safe it is not (use from a normal thread). */
void engine_command(struct engine *e, enum ev_cmd_id cmd, int64_t arg);

/* Latest snapshot of the first device; valid until the next call. One reader thread. */
const struct engine_snap *engine_snap_read(struct engine *e, bool *fresh);
/* ... of the device of rank k (< engine_devices()); NULL past the end. One reader thread. */
const struct engine_snap *engine_snap_read_dev(struct engine *e, unsigned k, bool *fresh);

/* What the data file was read as, in one line ("FILE: read as Databento OHLCV-1m; times in
 * epoch nanoseconds (UTC); ..."), or "" for synthetic data. Set by engine_create; e's. */
const char *engine_data_said(const struct engine *e);

/* The training devices, in rank order, into out (room for ENGINE_MAX_DEVICES); their count. */
unsigned engine_devices(const struct engine *e, unsigned *out);

/* True once the thread has finished (state FINISHED or FAILED). Any thread. */
bool engine_done(struct engine *e);

/* When the loop began its way out (mono_now_ns): the first stop it took, the first device
 * failure, or the end of the last epoch's eval (the final checkpoint and the group's leaving
 * follow); 0 while it has not. Any thread. */
uint64_t engine_leaving_ns(struct engine *e);

/* The way out ran past its deadline: every wait of the loop's ends now (pause, a held fault),
 * and the group's communicators are aborted, so a device blocked in a collective returns with
 * an error. A call stuck in the runtime itself cannot be cancelled and stays stuck. Any
 * thread, any number of times. */
void engine_abort(struct engine *e);

/* Wait for the thread and fill res. 0 or -errno. */
int engine_join(struct engine *e, struct engine_result *res);

/* One line on a checkpoint that was not written (res->checkpoint_error set): "checkpoint for
 * epoch N not written: REASON; the last good one (epoch M, PATH) is kept". Returns the length
 * it would have, as snprintf. */
int engine_checkpoint_note(const struct engine_result *res, char *buf, size_t n);

/* The tracer, for the UI's watchdog and tests. */
struct trace *engine_trace(struct engine *e);

/* Wall-clock start of the run and the monotonic time that corresponds to it. */
void engine_clock_anchor(const struct engine *e, uint64_t *wall_ns, uint64_t *mono_ns);

#endif
