/* The NCCL communicator's private declarations: the slice of the nccl.h ABI it calls (declared
 * here, so the build needs neither CUDA nor NCCL headers; RCCL has the same names and layouts),
 * the entry points it loads, and its per-rank state. */
#ifndef RINGSIDE_BACKEND_COMM_COMM_NCCL_INTERNAL_H
#define RINGSIDE_BACKEND_COMM_COMM_NCCL_INTERNAL_H

#include "backend/comm/comm_internal.h"
#include "backend/comm/comm_peer.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

/* ---- nccl.h, as NCCL 2.18 declares it (values and layouts copied from its nccl.h.in) ---- */

/* ncclResult_t */
#define COMM_NCCL_SUCCESS          0
#define COMM_NCCL_UNHANDLED_CUDA   1
#define COMM_NCCL_SYSTEM_ERROR     2
#define COMM_NCCL_INTERNAL_ERROR   3
#define COMM_NCCL_INVALID_ARGUMENT 4
#define COMM_NCCL_INVALID_USAGE    5
#define COMM_NCCL_REMOTE_ERROR     6
#define COMM_NCCL_IN_PROGRESS      7
#define COMM_NCCL_TIMEOUT          8 /* newer libraries only */

#define COMM_NCCL_FLOAT32 7 /* ncclDataType_t ncclFloat32 */
#define COMM_NCCL_FLOAT64 8 /* ncclDataType_t ncclFloat64 */
#define COMM_NCCL_SUM     0 /* ncclRedOp_t ncclSum */
#define COMM_NCCL_AVG     4 /* ncclRedOp_t ncclAvg (2.10 and later) */

/* NCCL_VERSION(X, Y, Z): the code ncclGetVersion returns, whose layout changed after 2.8. */
#define COMM_NCCL_VERSION(x, y, z)                                                                 \
    (((x) <= 2 && (y) <= 8) ? (x)*1000 + (y)*100 + (z) : (x)*10000 + (y)*100 + (z))
/* Non-blocking communicators, ncclCommFinalize and the config structure came in 2.14. */
#define COMM_NCCL_MIN_VERSION COMM_NCCL_VERSION(2, 14, 0)

#define COMM_NCCL_UNIQUE_ID_BYTES 128
struct comm_nccl_unique_id { /* ncclUniqueId, passed by value */
    char internal[COMM_NCCL_UNIQUE_ID_BYTES];
};

/* ncclConfig_t as NCCL 2.18 lays it out (ncclConfig_v21700 with splitShare). The library
 * copies min(size, its own sizeof) bytes and trusts only the members that version had: a newer
 * library fills the members it added after splitShare with its defaults, an older one (2.14 to
 * 2.17) ignores splitShare. Every member but blocking is left undefined, as
 * NCCL_CONFIG_INITIALIZER leaves them. */
#define COMM_NCCL_CONFIG_MAGIC   0xcafebeefu /* NCCL_API_MAGIC */
#define COMM_NCCL_CONFIG_VERSION COMM_NCCL_VERSION(2, 18, 0)
#define COMM_NCCL_UNDEF_INT      INT_MIN /* NCCL_CONFIG_UNDEF_INT */
struct comm_nccl_config {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cga_cluster_size;
    int min_ctas;
    int max_ctas;
    const char *net_name;
    int split_share;
};

struct comm_nccl_handle; /* ncclComm_t points to one: opaque */

/* The entry points, all required. ncclResult_t and the enums are int-sized; the stream is a
 * cudaStream_t/hipStream_t, a pointer. */
struct comm_nccl_fns {
    int (*get_version)(int *version);
    const char *(*get_error_string)(int result);
    int (*get_unique_id)(struct comm_nccl_unique_id *id);
    int (*init_rank_config)(struct comm_nccl_handle **comm, int nranks,
                            struct comm_nccl_unique_id id, int rank,
                            struct comm_nccl_config *config);
    int (*get_async_error)(struct comm_nccl_handle *comm, int *async_error);
    int (*all_reduce)(const void *sendbuf, void *recvbuf, size_t count, int datatype, int op,
                      struct comm_nccl_handle *comm, void *stream);
    int (*finalize)(struct comm_nccl_handle *comm);
    int (*destroy)(struct comm_nccl_handle *comm);
    int (*abort)(struct comm_nccl_handle *comm);
};

/* The library loaded when the configuration names none: RCCL in an AMD build. */
#ifdef RS_COMM_RCCL
#define COMM_NCCL_DEFAULT_LIB "librccl.so.1"
#else
#define COMM_NCCL_DEFAULT_LIB "libnccl.so.2"
#endif

/* ---- the implementation's state ---- */

struct comm_nccl_rank {
    pthread_mutex_t use;        /* held by the rank's thread through each call, and by abort:
                                   the handle is never used by two threads at once */
    struct comm_nccl_handle *h; /* NULL before init, after destroy and after an abort */
    /* The all-reduces' communicator: a blocking one joined right after h (a non-blocking
     * communicator hands every collective to a thread of its own, tens of microseconds), so
     * h keeps what needs a timeout (joining, leaving) and data the path of every step. NULL
     * when h is, or when it could not be made (the all-reduces then go through h). */
    struct comm_nccl_handle *data;
    void *stream; /* from init: the default for the all-reduce */
};

struct comm_nccl {
    void *lib;
    struct comm_nccl_fns fn;
    struct comm_nccl_unique_id data_id; /* the data communicators' group */
    char label[8];                      /* "NCCL" or "RCCL", for messages */
    int version;                        /* ncclGetVersion's code */
    struct comm_nccl_unique_id id;
    pthread_mutex_t mu; /* with cv: the naps between polls, which wake cuts short */
    pthread_cond_t cv;
    struct comm_rdv rdv;   /* the barrier and the direct path's setup: a host rendezvous of the
                              ranks' threads */
    size_t peer_max;       /* comm_conf.peer_max_bytes */
    struct comm_peer peer; /* the direct path for small all-reduces */
    struct comm_nccl_rank rank[];
};

/* Load the library (path, or the platform's default when NULL) and every entry point into s.
 * 0, -ENOENT (not found), -ELIBBAD (found but not loadable) or -ENOSYS (an entry point
 * missing), with a one-line err that names the library and what to do. */
int comm_nccl_load(struct comm_nccl *s, const char *path, char *err, size_t errlen);

/* "NCCL 2.21.5" into buf from ncclGetVersion's code. */
void comm_nccl_version_text(const struct comm_nccl *s, int code, char *buf, size_t n);

/* A failed library call: "<call> failed: <the library's text>" into err; the matching
 * -errno. */
int comm_nccl_err(const struct comm_nccl *s, const char *call, int result, char *err,
                  size_t errlen);

#endif
