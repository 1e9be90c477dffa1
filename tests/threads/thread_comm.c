/* The communicator with one thread per rank: all-reduce results against a one-thread reference,
 * a thousand rounds, a rank that never joins, one that never enters the all-reduce (seen in the
 * snapshot, released by an abort), destroy past its timeout, ranks in different collectives,
 * and the NCCL implementation over the fake library. */
#include "tests/threads/thread_comm.h"

#include "backend/comm/comm.h"
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/core/rng.h"
#include "tests/threads/thread_cases.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *tcm_thread(void *arg) {
    struct tcm_rank *r = arg;
    r->start_ns = mono_now_ns();
    r->rc = r->fn(r);
    if (r->end_ns == 0) /* unless fn stamped the moment that matters itself */
        r->end_ns = mono_now_ns();
    return NULL;
}

int tcm_run(struct comm *c, struct tcm_rank *rk, unsigned n, const tcm_fn *fns, void *ctx) {
    pthread_t t[COMM_MAX_RANKS];
    for (unsigned k = 0; k < n; k++) {
        rk[k] = (struct tcm_rank){.c = c, .rank = k, .fn = fns[k], .ctx = ctx};
        if (pthread_create(&t[k], NULL, tcm_thread, &rk[k]) != 0)
            return -1;
    }
    for (unsigned k = 0; k < n; k++)
        pthread_join(t[k], NULL);
    return 0;
}

int tcm_open(const char *name, unsigned n, const char *lib, struct comm **c, char *why,
             size_t whylen) {
    struct comm_conf conf = {.n_ranks = n, .lib = lib};
    char err[256];
    if (comm_open(name, &conf, c, err, sizeof(err)) != 0)
        TCM_FAIL("comm_open %s: %s", name, err);
    return 0;
}

/* ---- all-reduce against the reference ---- */

#define TCM_COUNT 1027 /* odd: no vector width divides it */

struct tcm_data {
    unsigned n;
    enum comm_red red;
    float in[4][TCM_COUNT], out[4][TCM_COUNT];
};

/* Floats of magnitudes 2^-20 to 2^20, so the order of the additions shows in the bits. */
static void tcm_fill(struct tcm_data *d, uint64_t seed) {
    for (unsigned r = 0; r < d->n; r++)
        for (size_t i = 0; i < TCM_COUNT; i++) {
            uint64_t x = rng_splitmix64(&seed);
            d->in[r][i] = ldexpf((float)((int64_t)(x % 2000001) - 1000000) / 1e6f,
                                 (int)((x >> 32) % 41) - 20);
        }
}

static int tcm_reduce_rank(struct tcm_rank *r) {
    struct tcm_data *d = r->ctx;
    memcpy(d->out[r->rank], d->in[r->rank], sizeof(d->out[r->rank]));
    int rc = comm_init(r->c, r->rank, NULL, 10 * TCM_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = comm_allreduce(r->c, r->rank, d->out[r->rank], TCM_COUNT, COMM_F32, d->red, NULL,
                            10 * TCM_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = comm_destroy(r->c, r->rank, 10 * TCM_S, r->err, sizeof(r->err));
    return rc;
}

/* The reference: one thread adding the buffers in rank order (then / n for the mean). From 3
 * ranks on, the same additions in reverse order must differ somewhere, or the data could not
 * tell the order (two floats add the same either way). */
static int tcm_reference(const struct tcm_data *d, float *ref, char *why, size_t whylen) {
    bool order_shows = false;
    for (size_t i = 0; i < TCM_COUNT; i++) {
        float fwd = d->in[0][i], rev = d->in[d->n - 1][i];
        for (unsigned r = 1; r < d->n; r++) {
            fwd += d->in[r][i];
            rev += d->in[d->n - 1 - r][i];
        }
        ref[i] = d->red == COMM_RED_MEAN ? fwd / (float)d->n : fwd;
        order_shows |= fwd != rev;
    }
    if (d->n >= 3 && !order_shows)
        TCM_FAIL("%u ranks: the data sums the same in either order", d->n);
    return 0;
}

int tcm_allreduce_once(const char *name, const char *lib, unsigned n, enum comm_red red, char *why,
                       size_t whylen) {
    static struct tcm_data d;
    static float ref[TCM_COUNT];
    d.n = n;
    d.red = red;
    tcm_fill(&d, 42 + n);
    if (tcm_reference(&d, ref, why, whylen) != 0)
        return -1;
    struct comm *c;
    if (tcm_open(name, n, lib, &c, why, whylen) != 0)
        return -1;
    struct tcm_rank rk[4];
    const tcm_fn fns[4] = {tcm_reduce_rank, tcm_reduce_rank, tcm_reduce_rank, tcm_reduce_rank};
    tcm_run(c, rk, n, fns, &d);
    int rc = 0;
    for (unsigned r = 0; r < n && rc == 0; r++) {
        if (rk[r].rc != 0)
            rc = errbuf_set(why, whylen, -1, "%s rank %u: %d %s", name, r, rk[r].rc, rk[r].err);
        else if (memcmp(d.out[r], ref, sizeof(ref)) != 0)
            rc = errbuf_set(why, whylen, -1, "%s %u ranks %s: rank %u differs from the reference",
                            name, n, red == COMM_RED_MEAN ? "mean" : "sum", r);
    }
    comm_close(c);
    return rc;
}

int thread_case_comm_allreduce(char *why, size_t whylen) {
    for (unsigned n = 2; n <= 4; n += 2)
        for (int red = COMM_RED_SUM; red <= COMM_RED_MEAN; red++)
            if (tcm_allreduce_once("cpu", NULL, n, (enum comm_red)red, why, whylen) != 0)
                return -1;
    return 0;
}

/* ---- a thousand rounds ---- */

#define TCM_ROUNDS 1000

/* Rank k gives k + round + i: the sum over 4 ranks, 4 (round + i) + 6, is exact in float. */
static int tcm_rounds_rank(struct tcm_rank *r) {
    float buf[8];
    int rc = comm_init(r->c, r->rank, NULL, 10 * TCM_S, r->err, sizeof(r->err));
    for (int round = 0; round < TCM_ROUNDS && rc == 0; round++) {
        for (int i = 0; i < 8; i++)
            buf[i] = (float)(r->rank + round + i);
        rc = comm_allreduce(r->c, r->rank, buf, 8, COMM_F32, COMM_RED_SUM, NULL, 10 * TCM_S, r->err,
                            sizeof(r->err));
        for (int i = 0; i < 8 && rc == 0; i++)
            if (buf[i] != (float)(4 * (round + i) + 6))
                rc = errbuf_set(r->err, sizeof(r->err), -1, "round %d [%d]: %g", round, i,
                                (double)buf[i]);
        if (rc == 0 && round % 10 == 0)
            rc = comm_barrier(r->c, r->rank, 10 * TCM_S, r->err, sizeof(r->err));
    }
    if (rc == 0)
        rc = comm_destroy(r->c, r->rank, 10 * TCM_S, r->err, sizeof(r->err));
    return rc;
}

int thread_case_comm_rounds(char *why, size_t whylen) {
    struct comm *c;
    if (tcm_open("cpu", 4, NULL, &c, why, whylen) != 0)
        return -1;
    struct tcm_rank rk[4];
    const tcm_fn fns[4] = {tcm_rounds_rank, tcm_rounds_rank, tcm_rounds_rank, tcm_rounds_rank};
    tcm_run(c, rk, 4, fns, NULL);
    struct comm_op_stats st;
    comm_stats(c, 3, COMM_OP_ALLREDUCE, &st);
    comm_close(c);
    for (unsigned r = 0; r < 4; r++)
        if (rk[r].rc != 0)
            TCM_FAIL("rank %u: %d %s", r, rk[r].rc, rk[r].err);
    if (st.calls != TCM_ROUNDS || st.errors != 0 || st.bytes != TCM_ROUNDS * 8 * sizeof(float))
        TCM_FAIL("rank 3's record: %llu calls, %llu errors, %llu bytes",
                 (unsigned long long)st.calls, (unsigned long long)st.errors,
                 (unsigned long long)st.bytes);
    return 0;
}

/* ---- a rank that never joins ---- */

#define TCM_INIT_TIMEOUT_NS (300 * TCM_MS)

int tcm_absent(struct tcm_rank *r) {
    (void)r;
    return 0;
}

static int tcm_join_late(struct tcm_rank *r) {
    int rc = comm_init(r->c, r->rank, NULL, TCM_INIT_TIMEOUT_NS, r->err, sizeof(r->err));
    r->end_ns = mono_now_ns();
    char err[256];
    if (comm_destroy(r->c, r->rank, TCM_S, err, sizeof(err)) != 0) /* nothing to release */
        return errbuf_set(r->err, sizeof(r->err), -1, "destroy after a failed init: %s", err);
    return rc;
}

/* Ranks 0 and 2 wait for rank 1, which never calls init: both fail with -ETIMEDOUT naming it,
 * no sooner than the timeout after the first began and no later than it (plus slack) after
 * each began. */
static int tcm_check_missing(const struct tcm_rank *rk, const char *name, char *why,
                             size_t whylen) {
    uint64_t first = rk[0].start_ns < rk[2].start_ns ? rk[0].start_ns : rk[2].start_ns;
    for (unsigned r = 0; r < 3; r += 2) {
        if (rk[r].rc != -ETIMEDOUT || !strstr(rk[r].err, "rank 1 has not entered it"))
            TCM_FAIL("%s rank %u: %d '%s'", name, r, rk[r].rc, rk[r].err);
        if (rk[r].end_ns - rk[r].start_ns > TCM_INIT_TIMEOUT_NS + TCM_SLACK_NS ||
            rk[r].end_ns - first < TCM_INIT_TIMEOUT_NS)
            TCM_FAIL("%s rank %u returned after %.3f s (timeout %.3f s)", name, r,
                     (double)(rk[r].end_ns - rk[r].start_ns) / 1e9,
                     (double)TCM_INIT_TIMEOUT_NS / 1e9);
    }
    return 0;
}

int tcm_missing_once(const char *name, const char *lib, char *why, size_t whylen) {
    struct comm *c;
    if (tcm_open(name, 3, lib, &c, why, whylen) != 0)
        return -1;
    struct tcm_rank rk[3];
    const tcm_fn fns[3] = {tcm_join_late, tcm_absent, tcm_join_late};
    tcm_run(c, rk, 3, fns, NULL);
    int rc = tcm_check_missing(rk, name, why, whylen);
    if (rc == 0 && comm_failed(c) != -ETIMEDOUT)
        rc = errbuf_set(why, whylen, -1, "%s: the group's failure is %d", name, comm_failed(c));
    comm_close(c);
    return rc;
}

int thread_case_comm_init_missing(char *why, size_t whylen) {
    return tcm_missing_once("cpu", NULL, why, whylen);
}

/* ---- a rank that never enters the all-reduce, and the abort that releases the other ---- */

int tcm_joins_only(struct tcm_rank *r) {
    return comm_init(r->c, r->rank, NULL, 10 * TCM_S, r->err, sizeof(r->err));
}

static int tcm_waits_for_ever(struct tcm_rank *r) {
    float buf[4] = {1, 2, 3, 4};
    int rc = comm_init(r->c, r->rank, NULL, 10 * TCM_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = comm_allreduce(r->c, r->rank, buf, 4, COMM_F32, COMM_RED_SUM, NULL, COMM_NO_TIMEOUT,
                            r->err, sizeof(r->err));
    r->end_ns = mono_now_ns();
    return rc;
}

struct tcm_stuck {
    struct comm *c;
    struct tcm_rank rk[2];
};

static void *tcm_stuck_ranks(void *arg) {
    struct tcm_stuck *s = arg;
    const tcm_fn fns[2] = {tcm_waits_for_ever, tcm_joins_only};
    tcm_run(s->c, s->rk, 2, fns, NULL);
    return NULL;
}

/* Block on the group's changes until rank 0 is inside the all-reduce (or 10 s pass). */
static bool tcm_wait_in_allreduce(struct comm *c, struct comm_snap *s) {
    uint64_t v = 0, give_up = mono_now_ns() + 10 * TCM_S;
    while (mono_now_ns() < give_up) {
        comm_snapshot_wait(c, v, TCM_S, s);
        v = s->version;
        if (s->rank[0].op == COMM_OP_ALLREDUCE && s->rank[1].op == COMM_OP_NONE &&
            s->rank[1].last_op == COMM_OP_INIT)
            return true;
    }
    return false;
}

static int tcm_check_stuck(const struct comm_snap *s, char *why, size_t whylen) {
    char line[256];
    bool busy = comm_snap_describe(s, mono_now_ns(), line, sizeof(line));
    if (s->rank[0].since_ns == 0 || s->rank[1].since_ns != 0 || s->rank[1].seq >= s->rank[0].seq ||
        s->fail_rc != 0)
        TCM_FAIL("snapshot: rank 0 since %llu seq %llu, rank 1 since %llu seq %llu, fail %d",
                 (unsigned long long)s->rank[0].since_ns, (unsigned long long)s->rank[0].seq,
                 (unsigned long long)s->rank[1].since_ns, (unsigned long long)s->rank[1].seq,
                 s->fail_rc);
    if (!busy || strncmp(line, "rank 0 waits in allreduce for ", 30) != 0 ||
        !strstr(line, "; rank 1 has not entered it"))
        TCM_FAIL("described as '%s'", line);
    return 0;
}

static int tcm_stuck_once(const char *name, const char *lib, char *why, size_t whylen) {
    struct tcm_stuck s;
    if (tcm_open(name, 2, lib, &s.c, why, whylen) != 0)
        return -1;
    pthread_t t;
    pthread_create(&t, NULL, tcm_stuck_ranks, &s);
    struct comm_snap snap;
    bool seen = tcm_wait_in_allreduce(s.c, &snap);
    char line[256];
    comm_snap_describe(&snap, mono_now_ns(), line, sizeof(line));
    int rc = seen ? tcm_check_stuck(&snap, why, whylen)
                  : errbuf_set(why, whylen, -1,
                               "%s: rank 0 never seen in the all-reduce (version %llu: %s; rank 0 "
                               "last %d rc %d, rank 1 last %d rc %d)",
                               name, (unsigned long long)snap.version, line, snap.rank[0].last_op,
                               snap.rank[0].last_rc, snap.rank[1].last_op, snap.rank[1].last_rc);
    uint64_t t0 = mono_now_ns();
    comm_abort(s.c);
    pthread_join(t, NULL);
    if (rc == 0 && (s.rk[0].rc != -ECANCELED || !strstr(s.rk[0].err, "aborted") ||
                    s.rk[0].end_ns - t0 > TCM_SLACK_NS))
        rc = errbuf_set(why, whylen, -1, "%s rank 0 after the abort (%.3f s): %d '%s'", name,
                        (double)(s.rk[0].end_ns - t0) / 1e9, s.rk[0].rc, s.rk[0].err);
    comm_close(s.c);
    return rc;
}

int thread_case_comm_stuck_abort(char *why, size_t whylen) {
    return tcm_stuck_once("cpu", NULL, why, whylen);
}

/* ---- destroy past its timeout ---- */

static int tcm_leaves_alone(struct tcm_rank *r) {
    int rc = comm_init(r->c, r->rank, NULL, 10 * TCM_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = comm_destroy(r->c, r->rank, 200 * TCM_MS, r->err, sizeof(r->err));
    return rc;
}

/* Rank 0 leaves, rank 1 never does: rank 0's destroy fails the group after 0.2 s, and rank 1's
 * next collective fails at once with that reason while its destroy only releases. */
int tcm_destroy_once(const char *name, const char *lib, tcm_check_fn check, void *arg, char *why,
                     size_t whylen) {
    struct comm *c;
    if (tcm_open(name, 2, lib, &c, why, whylen) != 0)
        return -1;
    struct tcm_rank rk[2];
    const tcm_fn fns[2] = {tcm_leaves_alone, tcm_joins_only};
    tcm_run(c, rk, 2, fns, NULL);
    if (check && check(arg, why, whylen) != 0) {
        comm_close(c);
        return -1;
    }
    char err[512];
    float x = 1;
    uint64_t t0 = mono_now_ns();
    int late =
        comm_allreduce(c, 1, &x, 1, COMM_F32, COMM_RED_SUM, NULL, 10 * TCM_S, err, sizeof(err));
    uint64_t dt = mono_now_ns() - t0;
    int left = comm_destroy(c, 1, 10 * TCM_S, err + 256, 256);
    comm_close(c);
    if (rk[0].rc != -ETIMEDOUT || !strstr(rk[0].err, "destroy on rank 0: timed out on rank 0") ||
        !strstr(rk[0].err, "rank 1 has not entered it"))
        TCM_FAIL("%s rank 0's destroy: %d '%s'", name, rk[0].rc, rk[0].err);
    if (late != -ETIMEDOUT || dt > TCM_S || !strstr(err, "allreduce on rank 1: timed out"))
        TCM_FAIL("%s rank 1's late all-reduce: %d after %.3f s '%s'", name, late, (double)dt / 1e9,
                 err);
    if (left != 0)
        TCM_FAIL("%s rank 1's destroy in the failed group: %d '%s'", name, left, err + 256);
    return 0;
}

int thread_case_comm_destroy_timeout(char *why, size_t whylen) {
    return tcm_destroy_once("cpu", NULL, NULL, NULL, why, whylen);
}

/* ---- ranks in different collectives ---- */

static int tcm_mis_allreduce(struct tcm_rank *r) {
    float buf[4] = {0};
    int rc = comm_init(r->c, r->rank, NULL, 10 * TCM_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = comm_allreduce(r->c, r->rank, buf, 4, COMM_F32, COMM_RED_SUM, NULL, 10 * TCM_S, r->err,
                            sizeof(r->err));
    return rc;
}

static int tcm_mis_barrier(struct tcm_rank *r) {
    int rc = comm_init(r->c, r->rank, NULL, 10 * TCM_S, r->err, sizeof(r->err));
    if (rc == 0)
        rc = comm_barrier(r->c, r->rank, 10 * TCM_S, r->err, sizeof(r->err));
    return rc;
}

/* Whichever arrives second fails the group at once with both calls named. */
int thread_case_comm_mismatch(char *why, size_t whylen) {
    struct comm *c;
    if (tcm_open("cpu", 2, NULL, &c, why, whylen) != 0)
        return -1;
    struct tcm_rank rk[2];
    const tcm_fn fns[2] = {tcm_mis_allreduce, tcm_mis_barrier};
    tcm_run(c, rk, 2, fns, NULL);
    comm_close(c);
    const char *a = "rank 1 called barrier while rank 0 is in allreduce of 4 floats (sum)";
    const char *b = "rank 0 called allreduce of 4 floats (sum) while rank 1 is in barrier";
    for (unsigned r = 0; r < 2; r++)
        if (rk[r].rc != -EINVAL || (!strstr(rk[r].err, a) && !strstr(rk[r].err, b)) ||
            rk[r].end_ns - rk[r].start_ns > 5 * TCM_S)
            TCM_FAIL("rank %u: %d '%s'", r, rk[r].rc, rk[r].err);
    return 0;
}
