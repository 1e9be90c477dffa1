/* A stand-in for libnccl.so.2 on the host, so the NCCL communicator can be tested on machines
 * without a GPU: the ranks of one process, with "device" buffers in host memory and streams
 * ignored. It keeps NCCL's non-blocking contract (nccl.h, NCCL 2.18 and the user guide's
 * "non-blocking communicators"): init and finalize answer ncclInProgress, and the communicator
 * becomes ready once every rank of the group has made the same call, so a rank that never
 * comes leaves the others in progress for ever. The all-reduce is asynchronous as on a stream:
 * the last rank to enqueue it writes every rank's result. The environment selects paths:
 *   FAKE_NCCL_VERSION=N     ncclGetVersion reports N (default 22105, 2.21.5)
 *   FAKE_NCCL_FAIL_RANK=R   that rank's init ends in ncclSystemError */
#include "tests/fakes/fake_nccl.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ncclResult_t, ncclDataType_t, ncclRedOp_t values */
enum {
    FAKE_NCCL_SUCCESS = 0,
    FAKE_NCCL_SYSTEM_ERROR = 2,
    FAKE_NCCL_INVALID_ARGUMENT = 4,
    FAKE_NCCL_INVALID_USAGE = 5,
    FAKE_NCCL_IN_PROGRESS = 7,
};
#define FAKE_NCCL_FLOAT32 7
#define FAKE_NCCL_SUM     0
#define FAKE_NCCL_AVG     4
#define FAKE_NCCL_RANKS   16
#define FAKE_NCCL_GROUPS  8

struct fake_nccl_unique_id { /* ncclUniqueId */
    char internal[128];
};

/* ncclConfig_t of NCCL 2.18 (ncclConfig_v21700 with splitShare), as NCCL_CONFIG_INITIALIZER
 * fills it: size, magic 0xcafebeef, version, then every attribute NCCL_CONFIG_UNDEF_INT
 * (INT_MIN) or NULL. */
struct fake_nccl_config {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
};

struct fake_nccl_group;

struct fake_nccl_comm {
    struct fake_nccl_group *g;
    int rank;
    int state; /* what ncclCommGetAsyncError answers */
};

struct fake_nccl_group {
    int nranks, joined, finalized, members;
    struct fake_nccl_comm *comm[FAKE_NCCL_RANKS];
    int arrived, op; /* the all-reduce under way */
    size_t count;
    float *buf[FAKE_NCCL_RANKS];
};

static pthread_mutex_t fake_nccl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_nccl_cv = PTHREAD_COND_INITIALIZER; /* a blocking init's wait */
static struct fake_nccl_group fake_nccl_groups[FAKE_NCCL_GROUPS];
static struct fake_nccl_counts fake_nccl_counts;
static unsigned fake_nccl_next_id;

/* The NCCL entry points it exports (declared for -Wmissing-prototypes). */
int ncclGetVersion(int *version);
const char *ncclGetErrorString(int result);
int ncclGetUniqueId(struct fake_nccl_unique_id *id);
int ncclCommInitRankConfig(struct fake_nccl_comm **comm, int nranks, struct fake_nccl_unique_id id,
                           int rank, struct fake_nccl_config *config);
int ncclCommGetAsyncError(struct fake_nccl_comm *comm, int *state);
int ncclAllReduce(const void *sendbuf, void *recvbuf, size_t count, int datatype, int op,
                  struct fake_nccl_comm *comm, void *stream);
int ncclCommFinalize(struct fake_nccl_comm *comm);
int ncclCommDestroy(struct fake_nccl_comm *comm);
int ncclCommAbort(struct fake_nccl_comm *comm);

void fake_nccl_get_counts(struct fake_nccl_counts *out) {
    pthread_mutex_lock(&fake_nccl_mu);
    *out = fake_nccl_counts;
    pthread_mutex_unlock(&fake_nccl_mu);
}

int ncclGetVersion(int *version) {
    const char *v = getenv("FAKE_NCCL_VERSION");
    *version = v ? atoi(v) : 22105;
    return FAKE_NCCL_SUCCESS;
}

const char *ncclGetErrorString(int result) {
    switch (result) {
    case FAKE_NCCL_SUCCESS:
        return "no error";
    case FAKE_NCCL_SYSTEM_ERROR:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case FAKE_NCCL_INVALID_ARGUMENT:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case FAKE_NCCL_INVALID_USAGE:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case FAKE_NCCL_IN_PROGRESS:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

int ncclGetUniqueId(struct fake_nccl_unique_id *id) {
    pthread_mutex_lock(&fake_nccl_mu);
    unsigned k = fake_nccl_next_id++ % FAKE_NCCL_GROUPS;
    memset(&fake_nccl_groups[k], 0, sizeof(fake_nccl_groups[k]));
    pthread_mutex_unlock(&fake_nccl_mu);
    memset(id, 0, sizeof(*id));
    memcpy(id->internal, "fakenccl", 8);
    id->internal[8] = (char)k;
    return FAKE_NCCL_SUCCESS;
}

/* Exactly what NCCL_CONFIG_INITIALIZER of a 2.18 header gives, with blocking 0 or 1. */
static int fake_nccl_config_ok(const struct fake_nccl_config *cfg) {
    return cfg && cfg->size == sizeof(struct fake_nccl_config) && cfg->magic == 0xcafebeefu &&
           cfg->version >= 21800 && (cfg->blocking == 0 || cfg->blocking == 1) &&
           cfg->cgaClusterSize == INT_MIN && cfg->minCTAs == INT_MIN && cfg->maxCTAs == INT_MIN &&
           cfg->netName == NULL && cfg->splitShare == INT_MIN;
}

static int fake_nccl_fail_rank(void) {
    const char *v = getenv("FAKE_NCCL_FAIL_RANK");
    return v ? atoi(v) : -1;
}

/* Under the lock: join rank to its group; the last to join makes every member ready. */
static int fake_nccl_join(struct fake_nccl_group *g, int nranks, int rank,
                          struct fake_nccl_comm **out) {
    if (g->nranks == 0)
        g->nranks = nranks;
    if (g->nranks != nranks || rank < 0 || rank >= nranks || g->comm[rank])
        return FAKE_NCCL_INVALID_ARGUMENT;
    struct fake_nccl_comm *c = calloc(1, sizeof(*c));
    if (!c)
        return FAKE_NCCL_SYSTEM_ERROR;
    *c = (struct fake_nccl_comm){g, rank, FAKE_NCCL_IN_PROGRESS};
    g->comm[rank] = c;
    g->members++;
    fake_nccl_counts.live++;
    if (rank == fake_nccl_fail_rank())
        c->state = FAKE_NCCL_SYSTEM_ERROR;
    else if (++g->joined == nranks)
        for (int r = 0; r < nranks; r++)
            if (g->comm[r] && g->comm[r]->state == FAKE_NCCL_IN_PROGRESS)
                g->comm[r]->state = FAKE_NCCL_SUCCESS;
    pthread_cond_broadcast(&fake_nccl_cv);
    *out = c;
    return FAKE_NCCL_IN_PROGRESS;
}

int ncclCommInitRankConfig(struct fake_nccl_comm **comm, int nranks, struct fake_nccl_unique_id id,
                           int rank, struct fake_nccl_config *config) {
    if (!comm || memcmp(id.internal, "fakenccl", 8) != 0 || nranks < 1 || nranks > FAKE_NCCL_RANKS)
        return FAKE_NCCL_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_nccl_mu);
    int rc = FAKE_NCCL_INVALID_ARGUMENT;
    if (!fake_nccl_config_ok(config))
        fake_nccl_counts.bad_config++;
    else
        rc = fake_nccl_join(&fake_nccl_groups[(unsigned char)id.internal[8] % FAKE_NCCL_GROUPS],
                            nranks, rank, comm);
    if (rc == FAKE_NCCL_IN_PROGRESS && config->blocking) { /* returns once every rank joined */
        while ((*comm)->state == FAKE_NCCL_IN_PROGRESS)
            pthread_cond_wait(&fake_nccl_cv, &fake_nccl_mu);
        rc = (*comm)->state;
    }
    pthread_mutex_unlock(&fake_nccl_mu);
    return rc;
}

int ncclCommGetAsyncError(struct fake_nccl_comm *comm, int *state) {
    if (!comm || !state)
        return FAKE_NCCL_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_nccl_mu);
    *state = comm->state;
    pthread_mutex_unlock(&fake_nccl_mu);
    return FAKE_NCCL_SUCCESS;
}

/* Under the lock, by the last rank to enqueue: the sum in rank order into every buffer. */
static void fake_nccl_reduce(struct fake_nccl_group *g) {
    for (size_t i = 0; i < g->count; i++) {
        float acc = g->buf[0][i];
        for (int r = 1; r < g->nranks; r++)
            acc += g->buf[r][i];
        if (g->op == FAKE_NCCL_AVG)
            acc /= (float)g->nranks;
        for (int r = 0; r < g->nranks; r++)
            g->buf[r][i] = acc;
    }
    g->arrived = 0;
}

int ncclAllReduce(const void *sendbuf, void *recvbuf, size_t count, int datatype, int op,
                  struct fake_nccl_comm *comm, void *stream) {
    (void)stream;
    if (!comm || sendbuf != recvbuf || datatype != FAKE_NCCL_FLOAT32 ||
        (op != FAKE_NCCL_SUM && op != FAKE_NCCL_AVG))
        return FAKE_NCCL_INVALID_ARGUMENT; /* the fake reduces in place only */
    pthread_mutex_lock(&fake_nccl_mu);
    struct fake_nccl_group *g = comm->g;
    int rc = FAKE_NCCL_SUCCESS;
    if (comm->state != FAKE_NCCL_SUCCESS) {
        rc = FAKE_NCCL_INVALID_USAGE;
    } else if (g->arrived > 0 && (g->count != count || g->op != op)) {
        rc = FAKE_NCCL_INVALID_USAGE;
    } else {
        g->count = count;
        g->op = op;
        g->buf[comm->rank] = recvbuf;
        if (++g->arrived == g->nranks)
            fake_nccl_reduce(g);
    }
    pthread_mutex_unlock(&fake_nccl_mu);
    return rc;
}

int ncclCommFinalize(struct fake_nccl_comm *comm) {
    if (!comm)
        return FAKE_NCCL_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_nccl_mu);
    struct fake_nccl_group *g = comm->g;
    comm->state = FAKE_NCCL_IN_PROGRESS;
    if (++g->finalized == g->nranks)
        for (int r = 0; r < g->nranks; r++)
            if (g->comm[r])
                g->comm[r]->state = FAKE_NCCL_SUCCESS;
    pthread_mutex_unlock(&fake_nccl_mu);
    return FAKE_NCCL_IN_PROGRESS;
}

static void fake_nccl_free(struct fake_nccl_comm *comm) {
    struct fake_nccl_group *g = comm->g;
    g->comm[comm->rank] = NULL;
    g->members--;
    fake_nccl_counts.live--;
    free(comm);
}

int ncclCommDestroy(struct fake_nccl_comm *comm) {
    if (!comm)
        return FAKE_NCCL_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_nccl_mu);
    fake_nccl_counts.destroys++;
    fake_nccl_free(comm);
    pthread_mutex_unlock(&fake_nccl_mu);
    return FAKE_NCCL_SUCCESS;
}

int ncclCommAbort(struct fake_nccl_comm *comm) {
    if (!comm)
        return FAKE_NCCL_SUCCESS;
    pthread_mutex_lock(&fake_nccl_mu);
    fake_nccl_counts.aborts++;
    fake_nccl_free(comm);
    pthread_mutex_unlock(&fake_nccl_mu);
    return FAKE_NCCL_SUCCESS;
}
