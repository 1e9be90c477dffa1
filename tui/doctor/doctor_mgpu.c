/* ringside doctor: the multi-GPU rows, so a user learns before training whether data-parallel
 * training can work: the communication library, peer access, a group forming and parting, and
 * an all-reduce checked and timed. One thread per device does the work; each row waits for
 * them with its own timeout, and a group that overruns it is described, then aborted. */
#include "backend/core/mono.h"
#include "tui/doctor/doctor_mgpu_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DOCTOR_MGPU        "multi-gpu"
#define DOCTOR_MGPU_GRACE  5000000000ull /* after an abort, for the ranks to come back */
#define DOCTOR_MGPU_MARGIN 2000000000ull /* a call's timeout past the row's: the row acts first */

/* ---- the ranks' threads: one job at a time, waited for with a deadline ---- */

static void *doctor_mgpu_thread(void *arg) {
    struct doctor_mgpu_rank *k = arg;
    pthread_mutex_lock(&k->w.mu);
    for (;;) {
        while (!k->busy && !k->w.stop)
            pthread_cond_wait(&k->w.cv, &k->w.mu);
        if (k->w.stop)
            break;
        doctor_mgpu_job fn = k->job;
        pthread_mutex_unlock(&k->w.mu);
        fn(k);
        pthread_mutex_lock(&k->w.mu);
        k->busy = false;
        pthread_cond_broadcast(&k->w.cv);
    }
    pthread_mutex_unlock(&k->w.mu);
    return NULL;
}

static int doctor_mgpu_start(struct doctor_mgpu_run *g, unsigned r) {
    struct doctor_mgpu_rank *k = &g->ranks[r];
    k->run = g;
    k->rank = r;
    worker_init(&k->w);
    int rc = worker_start(&k->w, doctor_mgpu_thread, k);
    if (rc != 0)
        worker_fini(&k->w);
    return rc;
}

static void doctor_mgpu_post(struct doctor_mgpu_rank *k, doctor_mgpu_job fn) {
    pthread_mutex_lock(&k->w.mu);
    k->job = fn;
    k->busy = true;
    k->rc = 0;
    k->err[0] = '\0';
    pthread_cond_broadcast(&k->w.cv);
    pthread_mutex_unlock(&k->w.mu);
}

/* Until the job is done or deadline_ns (monotonic) passes; true when done. */
static bool doctor_mgpu_wait(struct doctor_mgpu_rank *k, uint64_t deadline_ns) {
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull),
                          (long)(deadline_ns % 1000000000ull)};
    pthread_mutex_lock(&k->w.mu);
    while (k->busy && pthread_cond_timedwait(&k->w.cv, &k->w.mu, &ts) != ETIMEDOUT)
        ;
    bool done = !k->busy;
    pthread_mutex_unlock(&k->w.mu);
    return done;
}

static bool doctor_mgpu_wait_all(struct doctor_mgpu_run *g, uint64_t deadline_ns) {
    bool all = true;
    for (unsigned q = 0; q < g->members; q++)
        all &= doctor_mgpu_wait(&g->ranks[g->member[q]], deadline_ns);
    return all;
}

/* The group of the rows that follow: devices dev[0..n), rank q being dev[q]. */
static void doctor_mgpu_members(struct doctor_mgpu_run *g, const unsigned *dev, unsigned n) {
    g->members = n;
    for (unsigned q = 0; q < n; q++) {
        g->member[q] = dev[q];
        g->ranks[dev[q]].grank = q;
    }
}

/* Every device under test. */
static void doctor_mgpu_members_all(struct doctor_mgpu_run *g) {
    unsigned all[COMM_MAX_RANKS];
    for (unsigned q = 0; q < g->n; q++)
        all[q] = q;
    doctor_mgpu_members(g, all, g->n);
}

static uint64_t doctor_mgpu_timeout_ns(const struct doctor_mgpu_run *g) {
    return (uint64_t)(g->opts->timeout_s * 1e9);
}

/* One job on one rank's thread within the row's timeout; false when it did not come back (a
 * runtime call that never returns: nothing can release it). */
static bool doctor_mgpu_one(struct doctor_mgpu_run *g, unsigned r, doctor_mgpu_job fn) {
    uint64_t t0 = mono_now_ns();
    doctor_mgpu_post(&g->ranks[r], fn);
    return doctor_mgpu_wait(&g->ranks[r], t0 + doctor_mgpu_timeout_ns(g));
}

/* Release the rehearsal's stalled rank. */
static void doctor_mgpu_give_up(struct doctor_mgpu_run *g) {
    int s = g->opts->stall_rank;
    if (s < 0 || (unsigned)s >= g->n) {
        g->give_up = true;
        return;
    }
    struct doctor_mgpu_rank *k = &g->ranks[s];
    pthread_mutex_lock(&k->w.mu);
    g->give_up = true;
    pthread_cond_broadcast(&k->w.cv);
    pthread_mutex_unlock(&k->w.mu);
}

/* fn on every member, the group g->comm's row. True when all came back in time. Past the
 * timeout: the group's state into why (its failure if it has one, else who waits for whom),
 * the group aborted and a grace wait; *hung when a rank still did not come back. */
static bool doctor_mgpu_group(struct doctor_mgpu_run *g, doctor_mgpu_job fn, char *why, size_t n,
                              bool *hung) {
    uint64_t t0 = mono_now_ns(), to = doctor_mgpu_timeout_ns(g);
    for (unsigned q = 0; q < g->members; q++) {
        g->ranks[g->member[q]].timeout_ns = to + DOCTOR_MGPU_MARGIN;
        doctor_mgpu_post(&g->ranks[g->member[q]], fn);
    }
    if (doctor_mgpu_wait_all(g, t0 + to))
        return true;
    struct comm_snap s;
    comm_snapshot(g->comm, &s);
    if (s.fail_rc != 0)
        snprintf(why, n, "%s", s.fail_why);
    else
        comm_snap_describe(&s, mono_now_ns(), why, n);
    comm_abort(g->comm);
    doctor_mgpu_give_up(g);
    *hung = !doctor_mgpu_wait_all(g, mono_now_ns() + DOCTOR_MGPU_GRACE);
    return false;
}

/* ---- rows ---- */

/* "4 KiB", "64 MiB". */
static void doctor_mgpu_size(size_t bytes, char *out, size_t n) {
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(out, n, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(out, n, "%zu KiB", bytes >> 10);
    else
        snprintf(out, n, "%zu bytes", bytes);
}

static size_t doctor_mgpu_large(const struct doctor_mgpu_opts *o) {
    size_t b = o->large_bytes ? o->large_bytes : DOCTOR_MGPU_LARGE_BYTES;
    return b / sizeof(float) * sizeof(float);
}

/* The rows in order, from index from on (the peer rows as one). */
static void doctor_mgpu_names(const struct doctor_mgpu_opts *o, char names[][48], size_t *n) {
    char size[32];
    *n = 0;
    snprintf(names[(*n)++], 48, "comm library");
    snprintf(names[(*n)++], 48, "peer access");
    snprintf(names[(*n)++], 48, "group init/teardown");
    doctor_mgpu_size(DOCTOR_MGPU_SMALL_BYTES, size, sizeof(size));
    snprintf(names[(*n)++], 48, "all-reduce %s", size);
    doctor_mgpu_size(doctor_mgpu_large(o), size, sizeof(size));
    snprintf(names[(*n)++], 48, "all-reduce %s", size);
}

enum { DOCTOR_MGPU_ROW_LIB, DOCTOR_MGPU_ROW_PEER, DOCTOR_MGPU_ROW_INIT, DOCTOR_MGPU_ROW_SMALL };

static void doctor_mgpu_skip(const struct doctor_mgpu_opts *o, struct doctor_report *r, size_t from,
                             const char *value, const char *why) {
    char names[8][48];
    size_t n;
    doctor_mgpu_names(o, names, &n);
    for (size_t k = from; k < n; k++) {
        struct doctor_row *row = doctor_add(r, DOCTOR_MGPU, names[k], DOCTOR_SKIP, "%s", value);
        if (why && why[0])
            doctor_remedy(row, "%s", why);
    }
}

static void doctor_mgpu_skip_few(const struct doctor_mgpu_opts *o, struct doctor_report *r,
                                 unsigned found, const char *why) {
    char value[64];
    snprintf(value, sizeof(value), "needs two GPUs (found %u)", found);
    doctor_mgpu_skip(o, r, 0, value, why);
}

static void doctor_mgpu_hung_row(struct doctor_mgpu_run *g, struct doctor_report *r,
                                 const char *name, size_t next) {
    doctor_remedy(
        doctor_add(r, DOCTOR_MGPU, name, DOCTOR_FAIL, "hung after %.0f s", g->opts->timeout_s),
        "the call never returned: look at the kernel-log rows and 'dmesg | grep -iE "
        "\"amdgpu|nvrm\"' for a ring timeout or Xid; the GPU may need a reset");
    doctor_mgpu_skip(g->opts, r, next, "not run",
                     "an earlier multi-GPU test hung; the devices are not trusted");
}

/* The library row; false when the library is not usable. */
static bool doctor_mgpu_lib_row(struct doctor_mgpu_run *g, struct doctor_report *r) {
    const struct comm_lib_info *li = &g->lib;
    if (g->lib_rc == 0) {
        doctor_add(r, DOCTOR_MGPU, "comm library", DOCTOR_OK, "%s (%s)", li->version,
                   li->path[0] ? li->path : li->name);
        return true;
    }
    struct doctor_row *row =
        doctor_add(r, DOCTOR_MGPU, "comm library", DOCTOR_WARN, "%s", g->ranks[0].err);
    doctor_remedy(row, "%s%s; data-parallel training needs it (one GPU trains without it)",
                  g->lib_rc == -ENOTSUP ? "upgrade: " : "", li->install);
    return false;
}

static void doctor_mgpu_peer_row(struct doctor_mgpu_run *g, struct doctor_report *r, unsigned a,
                                 unsigned b) {
    const struct doctor_mgpu_rank *k = &g->ranks[a];
    char name[48];
    snprintf(name, sizeof(name), "peer access %u->%u", a, b);
    if (k->rc == -ENOTSUP) {
        doctor_add(r, DOCTOR_MGPU, name, DOCTOR_SKIP, "%s", k->err);
    } else if (k->rc != 0) {
        doctor_remedy(doctor_add(r, DOCTOR_MGPU, name, DOCTOR_WARN, "%s", k->err),
                      "the runtime could not say: collectives may go through host memory");
    } else if (k->can) {
        doctor_add(r, DOCTOR_MGPU, name, DOCTOR_OK, "yes (NVLink/PCIe not distinguished)");
    } else {
        doctor_remedy(doctor_add(r, DOCTOR_MGPU, name, DOCTOR_WARN,
                                 "no: collectives go through host memory (slower)"),
                      "the GPUs cannot reach each other directly (different PCIe root complexes, "
                      "peer-to-peer not offered for this card, or the IOMMU in the way): see "
                      "'nvidia-smi topo -m' or 'rocm-smi --showtopo'");
    }
}

/* One row per ordered pair, each query under the timeout; false when one hung. */
static bool doctor_mgpu_peer_rows(struct doctor_mgpu_run *g, struct doctor_report *r) {
    for (unsigned a = 0; a < g->n; a++)
        for (unsigned b = 0; b < g->n; b++) {
            if (a == b)
                continue;
            g->ranks[a].peer = (int)b;
            if (!doctor_mgpu_one(g, a, doctor_mgpu_job_peer)) {
                char name[48];
                snprintf(name, sizeof(name), "peer access %u->%u", a, b);
                doctor_mgpu_hung_row(g, r, name, DOCTOR_MGPU_ROW_INIT);
                return false;
            }
            doctor_mgpu_peer_row(g, r, a, b);
        }
    return true;
}

/* The member (its device) whose error explains the row: the first that failed for its own
 * reason rather than because the group was aborted; -1 when none failed. */
static int doctor_mgpu_culprit(const struct doctor_mgpu_run *g) {
    int any = -1;
    for (unsigned q = 0; q < g->members; q++) {
        unsigned r = g->member[q];
        if (g->ranks[r].rc == 0)
            continue;
        if (g->ranks[r].rc != -ECANCELED)
            return (int)r;
        any = any < 0 ? (int)r : any;
    }
    return any;
}

static const char doctor_mgpu_timeout_remedy[] =
    "a rank that never joins is stuck before the collective (its device, driver or thread): "
    "look at the kernel-log rows; NCCL_DEBUG=INFO shows the library's side";

static const char doctor_mgpu_error_remedy[] =
    "NCCL_DEBUG=INFO ringside doctor shows the library's own account; "
    "CUDA_VISIBLE_DEVICES=N (HIP_VISIBLE_DEVICES=N on AMD) ringside doctor tests GPU N alone";

/* A group row that did not come back in time, or whose ranks failed: its fail row. */
static void doctor_mgpu_group_fail(struct doctor_mgpu_run *g, struct doctor_report *r,
                                   const char *name, bool in_time, const char *why) {
    if (!in_time) {
        doctor_remedy(doctor_add(r, DOCTOR_MGPU, name, DOCTOR_FAIL, "timed out after %.0f s: %s",
                                 g->opts->timeout_s, why),
                      "%s", doctor_mgpu_timeout_remedy);
        return;
    }
    int c = doctor_mgpu_culprit(g);
    doctor_remedy(doctor_add(r, DOCTOR_MGPU, name, DOCTOR_FAIL, "%s", g->ranks[c].err), "%s",
                  doctor_mgpu_error_remedy);
}

/* Open a group of every rank for one row; false (with a fail row) when it cannot be. */
static bool doctor_mgpu_open(struct doctor_mgpu_run *g, struct doctor_report *r, const char *name) {
    /* the direct path reads device memory: not for the CPU backend's host buffers */
    bool on_gpu = strcmp(g->opts->backend, "cpu") != 0;
    struct comm_conf conf = {.n_ranks = g->members,
                             .lib = g->opts->comm_lib,
                             .peer_max_bytes = on_gpu ? COMM_PEER_MAX_BYTES_DEFAULT : 0};
    char err[512];
    const char *impl = strcmp(g->opts->comm, "cpu") == 0 ? "cpu" : "nccl";
    if (comm_open(impl, &conf, &g->comm, err, sizeof(err)) == 0)
        return true;
    g->comm = NULL;
    doctor_remedy(doctor_add(r, DOCTOR_MGPU, name, DOCTOR_FAIL, "%s", err), "%s",
                  doctor_mgpu_error_remedy);
    return false;
}

/* The slowest rank's time of a (0 init and the all-reduce, 1 the leave). */
static double doctor_mgpu_slowest_ms(const struct doctor_mgpu_run *g, int which) {
    uint64_t m = 0;
    for (unsigned q = 0; q < g->members; q++) {
        const struct doctor_mgpu_rank *k = &g->ranks[g->member[q]];
        uint64_t v = which ? k->b_ns : k->a_ns;
        m = v > m ? v : m;
    }
    return (double)m / 1e6;
}

/* Every device joins a group and leaves it; false when the rows after cannot run. */
static bool doctor_mgpu_init_row(struct doctor_mgpu_run *g, struct doctor_report *r, bool *hung) {
    const char *name = "group init/teardown";
    char why[COMM_WHY_BYTES] = "";
    if (!doctor_mgpu_open(g, r, name))
        return false;
    bool in_time = doctor_mgpu_group(g, doctor_mgpu_job_join_leave, why, sizeof(why), hung);
    if (*hung)
        return false;
    bool ok = in_time && doctor_mgpu_culprit(g) < 0;
    if (ok)
        doctor_add(r, DOCTOR_MGPU, name, DOCTOR_OK,
                   "%u devices joined a group in %.1f ms and left it in %.1f ms (slowest rank)",
                   g->n, doctor_mgpu_slowest_ms(g, 0), doctor_mgpu_slowest_ms(g, 1));
    else
        doctor_mgpu_group_fail(g, r, name, in_time, why);
    comm_close(g->comm);
    g->comm = NULL;
    return ok;
}

/* A fail row when a member's sum came out wrong; false when every element was right. */
static bool doctor_mgpu_wrong_row(struct doctor_mgpu_run *g, struct doctor_report *r,
                                  const char *name) {
    for (unsigned q = 0; q < g->members; q++) {
        const struct doctor_mgpu_rank *k = &g->ranks[g->member[q]];
        if (!k->wrong)
            continue;
        doctor_remedy(doctor_add(r, DOCTOR_MGPU, name, DOCTOR_FAIL,
                                 "device %u: %zu of %zu elements wrong (element %zu: %g, the sum "
                                 "is %g)",
                                 k->rank, k->wrong, k->bytes / sizeof(float), k->first_bad,
                                 (double)k->got, (double)k->want),
                      "the library ran but summed wrong: a driver and library mismatch or "
                      "broken peer-to-peer (NCCL_P2P_DISABLE=1 tells which)");
        return true;
    }
    return false;
}

/* Which way the message just timed went: "; direct, through peer memory", "; through the
 * library", or "" for the CPU communicator. */
static const char *doctor_mgpu_path(const struct doctor_mgpu_run *g) {
    const struct doctor_mgpu_rank *k = &g->ranks[g->member[0]];
    if (k->bytes <= k->peer_bytes)
        return "; direct, through peer memory";
    return strcmp(comm_name(g->comm), "nccl") == 0 ? "; through the library" : "";
}

/* Bus bandwidth (GB/s, as nccl-tests counts it) of the message just timed, its algorithm
 * bandwidth into *alg. */
static double doctor_mgpu_bus(const struct doctor_mgpu_run *g, double *alg) {
    double ms = doctor_mgpu_slowest_ms(g, 0), n = g->members;
    *alg = ms > 0 ? (double)g->ranks[g->member[0]].bytes / (ms / 1e3) / 1e9 : 0;
    return *alg * 2.0 * (n - 1) / n;
}

/* The all-reduce row of the members' current message size (results on the ranks). */
static void doctor_mgpu_reduce_result(struct doctor_mgpu_run *g, struct doctor_report *r,
                                      const char *name, bool small) {
    if (doctor_mgpu_wrong_row(g, r, name))
        return;
    double ms = doctor_mgpu_slowest_ms(g, 0), alg;
    const char *path = doctor_mgpu_path(g);
    if (small) {
        doctor_add(r, DOCTOR_MGPU, name, DOCTOR_OK,
                   "sum correct on %u devices; latency %.1f us per all-reduce (%d in a row%s)",
                   g->members, ms * 1e3, DOCTOR_MGPU_SMALL_RUNS, path);
        return;
    }
    double bus = doctor_mgpu_bus(g, &alg);
    doctor_add(r, DOCTOR_MGPU, name, DOCTOR_OK,
               "sum correct on %u devices; bus bandwidth %.1f GB/s (algorithm %.1f GB/s, "
               "%.2f ms per all-reduce, %d in a row%s)",
               g->members, bus, alg, ms, DOCTOR_MGPU_LARGE_RUNS, path);
}

/* The members' all-reduce job at the small or the large size, joining before the small one
 * and leaving after the large one. 1 done (results on the ranks), 0 failed (its fail row
 * added), -1 hung. */
static int doctor_mgpu_reduce_run(struct doctor_mgpu_run *g, struct doctor_report *r,
                                  const char *name, bool small, bool *hung) {
    char why[COMM_WHY_BYTES] = "";
    for (unsigned q = 0; q < g->members; q++) {
        struct doctor_mgpu_rank *k = &g->ranks[g->member[q]];
        k->bytes = small ? DOCTOR_MGPU_SMALL_BYTES : doctor_mgpu_large(g->opts);
        k->runs = small ? DOCTOR_MGPU_SMALL_RUNS : DOCTOR_MGPU_LARGE_RUNS;
        k->join = small;
        k->leave = !small;
    }
    bool in_time = doctor_mgpu_group(g, doctor_mgpu_job_reduce, why, sizeof(why), hung);
    if (*hung)
        return -1;
    if (in_time && doctor_mgpu_culprit(g) < 0)
        return 1;
    doctor_mgpu_group_fail(g, r, name, in_time, why);
    return 0;
}

/* One all-reduce row; false when the next cannot run. */
static bool doctor_mgpu_reduce_row(struct doctor_mgpu_run *g, struct doctor_report *r,
                                   const char *name, bool small, bool *hung) {
    if (doctor_mgpu_reduce_run(g, r, name, small, hung) != 1)
        return false;
    doctor_mgpu_reduce_result(g, r, name, small);
    return true;
}

/* What one pair's group measured. */
struct doctor_mgpu_pair {
    unsigned a, b;
    double lat_us, bus_GBps;
    const char *path; /* of the small message */
};

/* Devices a and b alone: join, the small all-reduce checked and timed, the large one, leave.
 * 1 measured into *out, 0 failed (its row added), -1 hung. */
static int doctor_mgpu_pair_run(struct doctor_mgpu_run *g, struct doctor_report *r,
                                struct doctor_mgpu_pair *out, bool *hung) {
    const unsigned pair[2] = {out->a, out->b};
    char name[48];
    snprintf(name, sizeof(name), "all-reduce %u+%u", out->a, out->b);
    doctor_mgpu_members(g, pair, 2);
    if (!doctor_mgpu_open(g, r, name))
        return 0;
    int rc = doctor_mgpu_reduce_run(g, r, name, true, hung);
    if (rc == 1 && doctor_mgpu_wrong_row(g, r, name))
        rc = 0;
    if (rc == 1) {
        out->lat_us = doctor_mgpu_slowest_ms(g, 0) * 1e3;
        out->path = doctor_mgpu_path(g);
        rc = doctor_mgpu_reduce_run(g, r, name, false, hung);
    }
    if (rc == 1 && doctor_mgpu_wrong_row(g, r, name))
        rc = 0;
    double alg;
    if (rc == 1)
        out->bus_GBps = doctor_mgpu_bus(g, &alg);
    if (!*hung)
        comm_close(g->comm);
    g->comm = NULL;
    return rc;
}

/* With three devices or more, every pair alone, so one slow or broken link shows by name: a
 * row a pair, a warning for a pair under half the median pair's bandwidth (through a library:
 * the CPU communicator's pairs differ only by the host's load). */
static void doctor_mgpu_pair_rows(struct doctor_mgpu_run *g, struct doctor_report *r, bool *hung) {
    struct doctor_mgpu_pair done[COMM_MAX_RANKS * (COMM_MAX_RANKS - 1) / 2];
    size_t n_done = 0;
    for (unsigned a = 0; a < g->n && !*hung; a++)
        for (unsigned b = a + 1; b < g->n && !*hung; b++) {
            done[n_done] = (struct doctor_mgpu_pair){.a = a, .b = b};
            if (doctor_mgpu_pair_run(g, r, &done[n_done], hung) == 1)
                n_done++;
        }
    double bw[COMM_MAX_RANKS * (COMM_MAX_RANKS - 1) / 2];
    for (size_t i = 0; i < n_done; i++) { /* insertion sort: at most 120 pairs */
        size_t j = i;
        for (; j > 0 && bw[j - 1] > done[i].bus_GBps; j--)
            bw[j] = bw[j - 1];
        bw[j] = done[i].bus_GBps;
    }
    /* the CPU communicator's rehearsal in host memory has no links to compare */
    bool links = strcmp(g->opts->comm, "cpu") != 0;
    double median = n_done ? bw[n_done / 2] : 0;
    char size[32];
    doctor_mgpu_size(doctor_mgpu_large(g->opts), size, sizeof(size));
    for (size_t i = 0; i < n_done; i++) {
        const struct doctor_mgpu_pair *p = &done[i];
        char name[48];
        snprintf(name, sizeof(name), "all-reduce %u+%u", p->a, p->b);
        bool slow = links && p->bus_GBps < median / 2;
        struct doctor_row *row = doctor_add(
            r, DOCTOR_MGPU, name, slow ? DOCTOR_WARN : DOCTOR_OK,
            "sum correct; 4 KiB in %.1f us%s; %s at %.1f GB/s bus bandwidth%s", p->lat_us, p->path,
            size, p->bus_GBps, slow ? " (under half the median pair's)" : "");
        if (slow)
            doctor_remedy(row,
                          "this pair's link is slower than the others': see 'nvidia-smi topo -m' "
                          "or 'rocm-smi --showtopo' (a PCIe hop where the rest use NVLink/xGMI, "
                          "or a link down: 'nvidia-smi nvlink -s')");
    }
}

/* The group rows after the library row. */
static void doctor_mgpu_group_rows(struct doctor_mgpu_run *g, struct doctor_report *r, bool *hung) {
    char names[8][48];
    size_t n;
    doctor_mgpu_names(g->opts, names, &n);
    doctor_mgpu_members_all(g);
    if (!doctor_mgpu_init_row(g, r, hung)) {
        doctor_mgpu_skip(g->opts, r, DOCTOR_MGPU_ROW_SMALL, "not run",
                         *hung ? "an earlier multi-GPU test hung; the devices are not trusted"
                               : "the group did not form (see 'group init/teardown')");
        return;
    }
    if (!doctor_mgpu_open(g, r, names[DOCTOR_MGPU_ROW_SMALL])) {
        doctor_mgpu_skip(g->opts, r, DOCTOR_MGPU_ROW_SMALL + 1, "not run",
                         "the group did not form");
        return;
    }
    bool ok = doctor_mgpu_reduce_row(g, r, names[DOCTOR_MGPU_ROW_SMALL], true, hung);
    if (ok)
        ok = doctor_mgpu_reduce_row(g, r, names[DOCTOR_MGPU_ROW_SMALL + 1], false, hung);
    else
        doctor_mgpu_skip(g->opts, r, DOCTOR_MGPU_ROW_SMALL + 1, "not run",
                         *hung ? "an earlier multi-GPU test hung; the devices are not trusted"
                               : "the small all-reduce failed");
    if (!*hung)
        comm_close(g->comm);
    g->comm = NULL;
    if (ok && g->n >= 3)
        doctor_mgpu_pair_rows(g, r, hung);
}

/* The rows once rank 0's thread is up: false when a rank hung (everything is left as is). */
static bool doctor_mgpu_rows(struct doctor_mgpu_run *g, struct doctor_report *r, unsigned *started,
                             bool *hung) {
    const struct doctor_mgpu_opts *o = g->opts;
    if (!doctor_mgpu_one(g, 0, doctor_mgpu_job_count)) {
        doctor_mgpu_hung_row(g, r, "device count", 0);
        return false;
    }
    unsigned cap =
        o->max_devices && o->max_devices < COMM_MAX_RANKS ? o->max_devices : COMM_MAX_RANKS;
    unsigned n = g->ranks[0].rc == 0 ? (unsigned)g->ranks[0].count : 0;
    g->n = n < cap ? n : cap;
    if (g->n < 2) {
        doctor_mgpu_skip_few(o, r, g->n, g->ranks[0].rc ? g->ranks[0].err : "");
        return true;
    }
    for (; *started < g->n; ++*started)
        if (doctor_mgpu_start(g, *started) != 0) {
            g->n = *started;
            doctor_mgpu_skip(o, r, 0, "not run", "cannot start a thread");
            return true;
        }
    if (!doctor_mgpu_one(g, 0, doctor_mgpu_job_lib)) {
        doctor_mgpu_hung_row(g, r, "comm library", DOCTOR_MGPU_ROW_PEER);
        return false;
    }
    /* the CPU communicator (a rehearsal in host memory) needs no library */
    bool lib_ok = doctor_mgpu_lib_row(g, r) || strcmp(o->comm, "cpu") == 0;
    if (!doctor_mgpu_peer_rows(g, r))
        return false;
    if (lib_ok)
        doctor_mgpu_group_rows(g, r, hung);
    else
        doctor_mgpu_skip(o, r, DOCTOR_MGPU_ROW_INIT, "not run",
                         "no usable communication library (see 'comm library')");
    return !*hung;
}

void doctor_check_mgpu(const struct doctor_mgpu_opts *o, struct doctor_report *r, bool *hung) {
    *hung = false;
    if (!o->backend[0]) {
        doctor_mgpu_skip_few(o, r, o->n_found, o->skip_reason);
        return;
    }
    struct doctor_mgpu_run *g = calloc(1, sizeof(*g)); /* left behind if a rank hangs */
    if (g) {
        g->opts = o;
        g->n = 1;
    }
    if (!g || doctor_mgpu_start(g, 0) != 0) {
        free(g);
        doctor_mgpu_skip(o, r, 0, "not run", "cannot start a thread");
        return;
    }
    unsigned started = 1;
    if (!doctor_mgpu_rows(g, r, &started, hung)) {
        *hung = true;
        return; /* the threads, g and the devices stay as they are: the caller _exits */
    }
    for (unsigned q = 0; q < started; q++) {
        worker_fini(&g->ranks[q].w); /* idle: each sees stop at once */
        doctor_mgpu_rank_fini(&g->ranks[q]);
    }
    free(g);
}
