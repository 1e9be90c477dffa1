/* The communicator: a group of N ranks in one process (a rank is the training worker thread
 * that drives one device) that reduce gradients together. Every collective is called by every
 * rank from its own thread; each call has a timeout, any thread can abort the group, and which
 * call each rank is in, and since when, is published so a watchdog can say who waits for whom.
 *
 * A rank's failed collective (a timeout, an error, ranks in different collectives) or an abort
 * fails the whole group: every rank blocked in a collective returns promptly with the group's
 * error, the root cause, later collectives return it at once, and comm_destroy only releases
 * the rank's resources. A failed group is not reused: close it and open a new one. */
#ifndef RINGSIDE_BACKEND_COMM_COMM_H
#define RINGSIDE_BACKEND_COMM_COMM_H

#include "backend/trace/trace_hist.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COMM_MAX_RANKS  16
#define COMM_NO_TIMEOUT UINT64_MAX /* a timeout_ns that never expires */
#define COMM_WHY_BYTES  512        /* room for the group's failure text */

/* The calls a rank can be in. */
enum comm_op {
    COMM_OP_NONE, /* between calls */
    COMM_OP_INIT,
    COMM_OP_ALLREDUCE,
    COMM_OP_BARRIER,
    COMM_OP_DESTROY,
    COMM_OP_COUNT
};

/* Element types an all-reduce takes. */
enum comm_dtype {
    COMM_F32, /* float */
    COMM_F64, /* double */
};

/* Bytes of one element of dt. */
size_t comm_dtype_bytes(enum comm_dtype dt);

enum comm_red {
    COMM_RED_SUM,
    COMM_RED_MEAN, /* cpu: the sum divided by the number of ranks (in the element type);
                      nccl: ncclAvg */
};

struct comm_conf {
    unsigned n_ranks;      /* 1..COMM_MAX_RANKS */
    const char *lib;       /* nccl: the library to load; NULL: the platform's (libnccl.so.2 on
                              NVIDIA, librccl.so.1 on AMD). Unused by cpu. */
    size_t peer_max_bytes; /* nccl: all-reduces up to this size go through one kernel that
                              reads the other devices' memory directly, when every device of
                              the group reaches every other's (NVIDIA builds; the library
                              takes the rest); 0: the library takes every size. Unused by cpu. */
};

/* The direct path's size limit the programs use: gradients of the models ringside trains fit
 * it many times over, and above it the library's bandwidth wins. */
#define COMM_PEER_MAX_BYTES_DEFAULT (256u * 1024u)

/* What one rank is doing, as a watchdog reads it. */
struct comm_rank_state {
    uint8_t op;        /* enum comm_op the rank is inside now; COMM_OP_NONE between calls */
    uint8_t last_op;   /* the call it made last (COMM_OP_NONE before its first) */
    int32_t last_rc;   /* what that call returned: 0 or -errno */
    uint64_t since_ns; /* mono_now_ns() when it entered op; 0 while op is COMM_OP_NONE */
    uint64_t seq;      /* collectives it has entered, init included: ranks with the same seq are
                          (or were) in the same collective, a lower one has not reached it yet */
};

/* The whole group at one moment (a consistent cut: taken under one lock). */
struct comm_snap {
    unsigned n_ranks;
    uint64_t version; /* changes so far (a call entered or left, the group failed) */
    int fail_rc;      /* 0 while the group is healthy; else -ETIMEDOUT, -ECANCELED... */
    char fail_why[COMM_WHY_BYTES]; /* why it failed ("" while healthy) */
    struct comm_rank_state rank[COMM_MAX_RANKS];
};

/* One rank's record of one kind of call. */
struct comm_op_stats {
    uint64_t calls, errors;
    uint64_t bytes; /* of the buffers this rank reduced in calls that succeeded */
    uint64_t p50_ns, p99_ns, max_ns, sum_ns;
};

struct comm;

/* An implementation. Every member but open, close, wake and abort is called by the generic
 * layer on the rank's own thread, one call per rank at a time, with the rank checked, its
 * state published and deadline_ns an absolute mono_now_ns() time (UINT64_MAX: none). Waits
 * must end by the deadline or when the group fails (comm_failed), whichever comes first; a
 * rank that runs out of time fails the group with comm_fail(c, -ETIMEDOUT, ...). Errors:
 * 0 or -errno, with text in err (the generic layer adds the call and the rank). */
struct comm_ops {
    const char *name; /* "cpu", "nccl": what comm_open takes */

    /* Set up the group for conf->n_ranks ranks: c->n_ranks is set on entry; the
     * implementation sets c->priv. close is called only after a successful open. */
    int (*open)(struct comm *c, const struct comm_conf *conf, char *err, size_t errlen);
    /* Free c->priv, releasing whatever a rank left behind (aborting it if needed). Called by
     * the owner once no rank is inside a call. */
    void (*close)(struct comm *c);

    /* Join the group: returns once every rank has joined. stream is the rank's compute
     * stream (nccl: its cudaStream_t/hipStream_t; the calling thread's current device is the
     * rank's device); cpu ignores it. */
    int (*init)(struct comm *c, unsigned rank, void *stream, uint64_t deadline_ns, char *err,
                size_t errlen);
    /* Reduce count elements of type dt of buf in place across the ranks, every rank's count,
     * dt and red the same. cpu: done on return, bitwise the same on every rank. nccl: enqueued on
     * stream (NULL: the one given to init); buf is device memory, valid after the caller
     * synchronizes the stream. NCCL connects the ranks at their first collective, so the
     * first all-reduce returns only once every rank has enqueued it (or by the deadline). */
    int (*allreduce)(struct comm *c, unsigned rank, void *buf, size_t count, enum comm_dtype dt,
                     enum comm_red red, void *stream, uint64_t deadline_ns, char *err,
                     size_t errlen);
    /* Return once every rank's thread has reached the barrier. */
    int (*barrier)(struct comm *c, unsigned rank, uint64_t deadline_ns, char *err, size_t errlen);
    /* Leave the group in order (waiting for the other ranks where the implementation needs
     * to) and release the rank's resources. In a failed group: release only, and return 0. */
    int (*destroy)(struct comm *c, unsigned rank, uint64_t deadline_ns, char *err, size_t errlen);

    /* Wake every wait of the group so it sees comm_failed(). Any thread, also one inside a
     * call of this group; takes no lock a rank holds across a wait. */
    void (*wake)(struct comm *c);
    /* After the group failed: release device-side work of every rank (nccl aborts each
     * rank's communicator, so a kernel waiting for a peer stops), waiting at most for ranks
     * to leave the calls that wake ended. Any thread that is not inside a call of this group.
     * NULL: nothing beyond wake. */
    void (*abort)(struct comm *c);
    /* The largest all-reduce the rank's init set to go the direct way (the same on every
     * rank); 0 when none does. The rank's thread, after its init. NULL: 0. */
    size_t (*peer_bytes)(struct comm *c, unsigned rank);
};

/* The registry: every implementation compiled in. NULL-terminated. */
extern const struct comm_ops *const comm_table[];

/* Open the implementation `name` ("cpu", "nccl") for conf->n_ranks ranks. 0, -ENOENT for an
 * unknown name, or the implementation's error (a library not found: -ENOENT; one that lacks a
 * symbol: -ENOSYS), with err filled. The owner thread opens and closes; ranks call the rest. */
int comm_open(const char *name, const struct comm_conf *conf, struct comm **out, char *err,
              size_t errlen);
/* What a communication library (NCCL, or RCCL in an AMD build) on this machine is. */
struct comm_lib_info {
    char name[256];    /* the library asked for: the caller's path, or the platform's
                          ("libnccl.so.2", "librccl.so.1") */
    char path[256];    /* the file the dynamic loader found; "" when it did not load */
    char version[40];  /* "NCCL 2.21.5"; "" when the version is unknown */
    int version_code;  /* ncclGetVersion's code; 0 when unknown */
    char install[192]; /* how to get it (set whatever happened): "apt install libnccl2 ..." */
};

/* Load the library that comm_open("nccl") would (lib, or the platform's when NULL), ask its
 * version and let it go, without forming a group. 0 when the nccl communicator can use it;
 * else comm_open's errors for the library (-ENOENT not found, -ELIBBAD not loadable, -ENOSYS
 * an entry point missing, -ENOTSUP older than 2.14), with err saying so in one line. *out is
 * filled as far as the library got (its path and version also when it is too old). Owner
 * thread; the library stays mapped (NCCL must not be unloaded once loaded). */
int comm_lib_probe(const char *lib, struct comm_lib_info *out, char *err, size_t errlen);

/* Free the group once every rank's thread has left its calls (join them first). */
void comm_close(struct comm *c);

unsigned comm_size(const struct comm *c);
const char *comm_name(const struct comm *c);

/* The collectives: every rank calls each in the same order from its own thread. timeout_ns
 * bounds this call (COMM_NO_TIMEOUT: none). 0; -ETIMEDOUT when this rank or another ran out of
 * time; -ECANCELED after comm_abort; -EINVAL for a call out of order (a collective before init
 * or after destroy, ranks in different collectives); or the implementation's error. err says
 * the call, the rank and, for timeouts and aborts, who was waiting for whom. */
int comm_init(struct comm *c, unsigned rank, void *stream, uint64_t timeout_ns, char *err,
              size_t errlen);
int comm_allreduce(struct comm *c, unsigned rank, void *buf, size_t count, enum comm_dtype dt,
                   enum comm_red red, void *stream, uint64_t timeout_ns, char *err, size_t errlen);
int comm_barrier(struct comm *c, unsigned rank, uint64_t timeout_ns, char *err, size_t errlen);
/* Leave the group. Past timeout_ns the group is aborted (every rank's communicator) and this
 * returns -ETIMEDOUT; in a group that already failed it releases the rank and returns 0. */
int comm_destroy(struct comm *c, unsigned rank, uint64_t timeout_ns, char *err, size_t errlen);

/* Fail the group with -ECANCELED: every rank blocked in a collective returns promptly and
 * device-side work is aborted. Any thread that is not inside a call of this group (a watchdog,
 * the owner, a rank's thread between calls). A second abort, or one after a timeout, only
 * repeats the release. */
void comm_abort(struct comm *c);

/* The largest all-reduce of this group that goes through the devices' memory directly
 * rather than the library (comm_conf.peer_max_bytes, when the group could use it); 0 when
 * none does. The rank's thread, after its init succeeded. */
size_t comm_peer_bytes(struct comm *c, unsigned rank);

/* The group's failure (0 while healthy). Any thread. */
int comm_failed(const struct comm *c);

/* Copy of every rank's state. Any thread. */
void comm_snapshot(struct comm *c, struct comm_snap *out);

/* Wait until the group's state changes past version (a snapshot's), or timeout_ns passes,
 * then copy it out: 0 when out->version > version, -ETIMEDOUT otherwise (out is filled
 * either way). For a watchdog that reacts at once and otherwise looks every so often. Any
 * thread. */
int comm_snapshot_wait(struct comm *c, uint64_t version, uint64_t timeout_ns,
                       struct comm_snap *out);

/* "rank 0 waits in allreduce for 12.3 s; rank 1 has not entered it" into buf: each call in
 * progress with its ranks and longest wait, then the ranks that have not reached the newest of
 * them, then those in no collective. False (and "no rank is in a collective") when none is in
 * one. */
bool comm_snap_describe(const struct comm_snap *s, uint64_t now_ns, char *buf, size_t n);

/* One rank's record of op (not COMM_OP_NONE), and a copy of its latency histogram. Any
 * thread. */
void comm_stats(struct comm *c, unsigned rank, enum comm_op op, struct comm_op_stats *out);
void comm_hist(struct comm *c, unsigned rank, enum comm_op op, struct trace_hist *out);

/* "init", "allreduce", "barrier", "destroy"; "none" for COMM_OP_NONE. */
const char *comm_op_name(enum comm_op op);

#endif
