/* The NCCL communicator over the fake library (tests/fakes/fake_nccl.c): the CPU scenarios'
 * results and failures, plus what only this implementation has to get right: every rank's
 * communicator destroyed or aborted whatever happened, an abort that releases a rank polling
 * init for ever, and one rank's failed init releasing the other. */
#include "backend/core/mono.h"
#include "tests/fakes/fake_nccl.h"
#include "tests/threads/thread_cases.h"
#include "tests/threads/thread_comm.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifndef RS_FAKE_NCCL
#error "RS_FAKE_NCCL: the path of the fake NCCL library"
#endif

/* The fake's bookkeeping (the library the communicator loaded: the same path, one copy). */
static int tcn_counts(struct fake_nccl_counts *out, char *why, size_t whylen) {
    void *lib = dlopen(RS_FAKE_NCCL, RTLD_NOW | RTLD_LOCAL);
    void *sym = lib ? dlsym(lib, "fake_nccl_get_counts") : NULL;
    if (!sym)
        TCM_FAIL("cannot reach the fake NCCL library: %s", dlerror());
    fake_nccl_get_counts_fn get;
    memcpy(&get, &sym, sizeof(sym));
    get(out);
    dlclose(lib);
    return 0;
}

/* After a scenario: no communicator left alive, none refused for its configuration, and at
 * least min_aborts more aborted than before (a rank that starts after the group failed never
 * creates one, so more cannot be promised). */
static int tcn_clean(const struct fake_nccl_counts *before, int min_aborts, const char *what,
                     char *why, size_t whylen) {
    struct fake_nccl_counts now;
    if (tcn_counts(&now, why, whylen) != 0)
        return -1;
    if (now.live != before->live || now.bad_config != before->bad_config ||
        now.aborts - before->aborts < min_aborts)
        TCM_FAIL("%s: %d communicators alive (%d before), %d configurations refused, %d aborts "
                 "(at least %d expected)",
                 what, now.live, before->live, now.bad_config - before->bad_config,
                 now.aborts - before->aborts, min_aborts);
    return 0;
}

int thread_case_comm_nccl_group(char *why, size_t whylen) {
    const struct {
        unsigned n;
        enum comm_red red;
    } runs[] = {{2, COMM_RED_SUM}, {2, COMM_RED_MEAN}, {4, COMM_RED_SUM}};
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        struct fake_nccl_counts before;
        if (tcn_counts(&before, why, whylen) != 0 ||
            tcm_allreduce_once("nccl", RS_FAKE_NCCL, runs[k].n, runs[k].red, why, whylen) != 0 ||
            tcn_clean(&before, 0, "after a clean run", why, whylen) != 0)
            return -1;
    }
    return 0;
}

/* Ranks 0 and 2 poll init until their deadline; both communicators are aborted. */
int thread_case_comm_nccl_init_missing(char *why, size_t whylen) {
    struct fake_nccl_counts before;
    if (tcn_counts(&before, why, whylen) != 0 ||
        tcm_missing_once("nccl", RS_FAKE_NCCL, why, whylen) != 0)
        return -1;
    return tcn_clean(&before, 1, "after init timed out", why, whylen);
}

static int tcn_check_both_aborted(void *arg, char *why, size_t whylen) {
    return tcn_clean(arg, 2, "once rank 0's destroy timed out", why, whylen);
}

/* Rank 0's finalize never completes without rank 1: both communicators are aborted by the time
 * rank 0 returns (rank 1's by rank 0 as it leaves the failed call, while rank 1's thread is
 * elsewhere: a kernel waiting for rank 0 stops). */
int thread_case_comm_nccl_destroy_timeout(char *why, size_t whylen) {
    struct fake_nccl_counts before;
    if (tcn_counts(&before, why, whylen) != 0 ||
        tcm_destroy_once("nccl", RS_FAKE_NCCL, tcn_check_both_aborted, &before, why, whylen) != 0)
        return -1;
    return tcn_clean(&before, 2, "after destroy timed out", why, whylen);
}

/* Both ranks joined and are between calls (as while waiting on their streams): an abort from
 * another thread aborts every communicator at once (each rank's two: the one that joined under
 * a timeout and the blocking one of the all-reduces), and their next calls fail. */
int thread_case_comm_nccl_abort_idle(char *why, size_t whylen) {
    struct fake_nccl_counts before, joined;
    struct comm *c;
    struct tcm_rank rk[2];
    const tcm_fn fns[2] = {tcm_joins_only, tcm_joins_only};
    if (tcn_counts(&before, why, whylen) != 0 ||
        tcm_open("nccl", 2, RS_FAKE_NCCL, &c, why, whylen) != 0)
        return -1;
    tcm_run(c, rk, 2, fns, NULL);
    int rc = tcn_counts(&joined, why, whylen);
    if (rc == 0 && (rk[0].rc != 0 || rk[1].rc != 0 || joined.live != before.live + 4))
        rc = errbuf_set(why, whylen, -1, "init: %d '%s' / %d '%s', %d alive", rk[0].rc, rk[0].err,
                        rk[1].rc, rk[1].err, joined.live - before.live);
    comm_abort(c);
    if (rc == 0)
        rc = tcn_clean(&before, 4, "right after the abort", why, whylen);
    float x = 1;
    char err[512];
    if (rc == 0 && comm_allreduce(c, 1, &x, 1, COMM_F32, COMM_RED_SUM, NULL, TCM_S, err,
                                  sizeof(err)) != -ECANCELED)
        rc = errbuf_set(why, whylen, -1, "an all-reduce after the abort: '%s'", err);
    comm_close(c);
    return rc;
}

static int tcn_init_for_ever(struct tcm_rank *r) {
    return comm_init(r->c, r->rank, NULL, COMM_NO_TIMEOUT, r->err, sizeof(r->err));
}

struct tcn_group {
    struct comm *c;
    struct tcm_rank rk[2];
    tcm_fn fns[2];
};

static void *tcn_ranks(void *arg) {
    struct tcn_group *g = arg;
    tcm_run(g->c, g->rk, 2, g->fns, NULL);
    return NULL;
}

/* Block on the group's changes until rank 0 is inside init (or 10 s pass). */
static bool tcn_wait_in_init(struct comm *c) {
    struct comm_snap s;
    uint64_t v = 0, give_up = mono_now_ns() + 10 * TCM_S;
    while (mono_now_ns() < give_up) {
        comm_snapshot_wait(c, v, TCM_S, &s);
        v = s.version;
        if (s.rank[0].op == COMM_OP_INIT)
            return true;
    }
    return false;
}

/* Rank 0 polls init with no deadline, rank 1 never comes: only the abort can end it. */
int thread_case_comm_nccl_abort(char *why, size_t whylen) {
    struct fake_nccl_counts before;
    struct tcn_group g = {.fns = {tcn_init_for_ever, tcm_absent}};
    if (tcn_counts(&before, why, whylen) != 0 ||
        tcm_open("nccl", 2, RS_FAKE_NCCL, &g.c, why, whylen) != 0)
        return -1;
    pthread_t t;
    pthread_create(&t, NULL, tcn_ranks, &g);
    bool seen = tcn_wait_in_init(g.c);
    uint64_t t0 = mono_now_ns();
    comm_abort(g.c);
    pthread_join(t, NULL);
    comm_close(g.c);
    if (!seen)
        TCM_FAIL("rank 0 never seen in init");
    if (g.rk[0].rc != -ECANCELED ||
        !strstr(g.rk[0].err, "init on rank 0: aborted: rank 0 waits "
                             "in init for") ||
        g.rk[0].end_ns - t0 > TCM_SLACK_NS)
        TCM_FAIL("rank 0 after the abort (%.3f s): %d '%s'", (double)(g.rk[0].end_ns - t0) / 1e9,
                 g.rk[0].rc, g.rk[0].err);
    return tcn_clean(&before, 1, "after the abort", why, whylen);
}

/* Rank 1's init ends in a system error: rank 0, polling with no deadline, is released with it. */
int thread_case_comm_nccl_init_error(char *why, size_t whylen) {
    struct fake_nccl_counts before;
    struct tcn_group g = {.fns = {tcn_init_for_ever, tcn_init_for_ever}};
    if (tcn_counts(&before, why, whylen) != 0 ||
        tcm_open("nccl", 2, RS_FAKE_NCCL, &g.c, why, whylen) != 0)
        return -1;
    setenv("FAKE_NCCL_FAIL_RANK", "1", 1);
    tcn_ranks(&g);
    unsetenv("FAKE_NCCL_FAIL_RANK");
    comm_close(g.c);
    const char *want = "init failed on rank 1: ncclCommInitRankConfig failed: unhandled system "
                       "error";
    for (unsigned r = 0; r < 2; r++)
        if (g.rk[r].rc != -EIO || !strstr(g.rk[r].err, want))
            TCM_FAIL("rank %u: %d '%s'", r, g.rk[r].rc, g.rk[r].err);
    return tcn_clean(&before, 1, "after a failed init", why, whylen);
}
