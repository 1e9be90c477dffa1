/* Helpers of the communicator scenarios, shared by the CPU ones and those that run the same
 * scenarios on the NCCL implementation over the fake library. Each returns 0, or -1 with why
 * filled. */
#ifndef RINGSIDE_TESTS_THREADS_THREAD_COMM_H
#define RINGSIDE_TESTS_THREADS_THREAD_COMM_H

#include "backend/comm/comm.h"
#include "backend/core/errbuf.h"

#include <stddef.h>
#include <stdint.h>

#define TCM_FAIL(...) return errbuf_set(why, whylen, -1, __VA_ARGS__)
#define TCM_S         1000000000ull
#define TCM_MS        1000000ull
#define TCM_SLACK_NS  (3 * TCM_S) /* how late a timed-out call may return on a loaded machine */

struct tcm_rank;
typedef int (*tcm_fn)(struct tcm_rank *r);

/* One rank's thread: what it runs and what came of it. */
struct tcm_rank {
    struct comm *c;
    unsigned rank;
    tcm_fn fn;
    void *ctx;
    int rc;
    char err[512];
    uint64_t start_ns, end_ns; /* end: when fn returned, unless fn stamped it earlier */
};

/* comm_open(name) for n ranks with conf.lib = lib. */
int tcm_open(const char *name, unsigned n, const char *lib, struct comm **c, char *why,
             size_t whylen);

/* One thread per rank running fns[rank] with ctx, all joined before this returns. */
int tcm_run(struct comm *c, struct tcm_rank *rk, unsigned n, const tcm_fn *fns, void *ctx);

/* Rank functions: one that never calls anything, one that only joins (10 s timeout). */
int tcm_absent(struct tcm_rank *r);
int tcm_joins_only(struct tcm_rank *r);

/* A check run between a scenario's ranks and what follows them. 0, or -1 with why. */
typedef int (*tcm_check_fn)(void *arg, char *why, size_t whylen);

/* The scenarios on implementation name (lib for nccl): n ranks all-reduce against the
 * one-thread reference, then leave; 3 ranks with rank 1 never joining; 2 ranks with rank 0
 * destroying alone (check, if not NULL, runs once rank 0 has failed, before rank 1 moves). */
int tcm_allreduce_once(const char *name, const char *lib, unsigned n, enum comm_red red, char *why,
                       size_t whylen);
int tcm_missing_once(const char *name, const char *lib, char *why, size_t whylen);
int tcm_destroy_once(const char *name, const char *lib, tcm_check_fn check, void *arg, char *why,
                     size_t whylen);

#endif
