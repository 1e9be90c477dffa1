/* A watched rank's hang diagnosis: what ringside already sees of a rank stuck in a call (its
 * process's threads, its GPU's telemetry, the kernel log since the call began, the other ranks
 * of its group) joined into one verdict, its evidence and what helps. The verdicts are one
 * table (watch_diag.c); the rules and the text are pure and test without a process; only
 * diag_proc_read looks at /proc. */
#ifndef RINGSIDE_BACKEND_RUN_WATCH_DIAG_H
#define RINGSIDE_BACKEND_RUN_WATCH_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DIAG_THREADS 128 /* threads of a process followed between two looks */
#define DIAG_PEERS   16

/* One look at a process's threads (/proc/PID/task/ * /stat and wchan). */
struct diag_proc {
    bool read;     /* the process could be read (false: it is gone, or not ours) */
    char why[64];  /* why not, when !read */
    uint64_t t_ns; /* when this look was taken */
    unsigned n_threads;
    unsigned running, sleeping, disk, other; /* threads in R, S, D, any other state */
    char disk_wchan[32];                     /* a D thread's wchan (the driver call), or "" */
    char top_wchan[32];                      /* the wchan most sleeping threads wait in, or "" */
    char main_state;       /* the main thread's (tid = pid: Python's, usually the training one)
                              state, or 0 when not read */
    char main_wchan[32];   /* ... and where it sleeps ("" running) */
    double main_pct;       /* ... its CPU (valid with has_cpu) */
    bool has_cpu;          /* the CPU figures below span two looks */
    double cpu_pct;        /* the process's CPU since the look before (100 = one core) */
    double top_thread_pct; /* its busiest thread's */
    char top_thread[16];   /* ... and that thread's name */
    /* each thread's ticks at this look, for the next one's CPU figures */
    unsigned n_ticks;
    int32_t tids[DIAG_THREADS];
    uint64_t ticks[DIAG_THREADS];
};

/* One line of /proc/.../stat: state, name and utime + stime in clock ticks. 0, or -EINVAL
 * for a line that is not one. Pure. */
int diag_stat_parse(const char *line, char *state, char *comm, size_t commlen, uint64_t *ticks);

/* Look at pid's threads under proc_root ("/proc"), with CPU figures against prev (NULL, or a
 * look at the same pid before: its ticks). */
void diag_proc_read(const char *proc_root, pid_t pid, const struct diag_proc *prev,
                    struct diag_proc *out);

/* Another rank of the group, as the watch sees it when one waits in a collective. */
struct diag_peer {
    int rank;
    bool exited;      /* its job went away or ended */
    bool not_entered; /* it has not reached the collective the rank waits in */
    bool attached;    /* false: a rank of the group that never attached here */
    char doing[160];  /* what it does instead ("in forward, epoch 1 step 17; sleeping") */
};

/* What the rank's look found, all of it optional (has_* false: not known). */
struct diag_in {
    char who[48];  /* "rank 0 (pid 41)" */
    char call[64]; /* "allreduce #1043" or "torch.cuda.synchronize" */
    bool collective;
    double age_s;
    const struct diag_proc *proc;
    bool has_gpu;
    char gpu[48]; /* "GPU 0000:03:00.0" */
    bool has_busy, has_power;
    double busy_pct, power_w;
    unsigned kmsg_failures; /* on the rank's GPU (or any, when its GPU is not known) since the
                               call began */
    char kmsg_first[200];   /* the first of them */
    unsigned n_peers;
    struct diag_peer peers[DIAG_PEERS];
    unsigned missing; /* ranks of the group never attached (world size minus attached) */
};

/* The verdicts, most telling first: the first whose rule holds is the diagnosis. */
#define DIAG_VERDICTS(X)                                                                           \
    X(GPU_FAILED, "the GPU failed")                                                                \
    X(PEER_EXITED, "a peer rank has exited")                                                       \
    X(PEER_BEHIND, "a peer rank has not entered the collective")                                   \
    X(IN_DRIVER, "stuck in the GPU driver")                                                        \
    X(GPU_BUSY, "a GPU kernel that does not finish")                                               \
    X(SPINNING, "spinning on the host with the GPU idle")                                          \
    X(WAITING, "waiting, with nothing in flight to wait for")                                      \
    X(UNKNOWN, "not enough evidence")

enum diag_verdict {
#define X(id, title) DIAG_##id,
    DIAG_VERDICTS(X)
#undef X
        DIAG_VERDICT_COUNT
};

/* The verdict for in. Pure. */
enum diag_verdict diag_judge(const struct diag_in *in);
const char *diag_verdict_title(enum diag_verdict v);

/* "Verdict: ...\nEvidence:\n  - ...\nWhat helps:\n  - ..." into out (cut to fit); the bytes
 * written. Pure. */
size_t diag_format(const struct diag_in *in, enum diag_verdict v, char *out, size_t n);

/* The rank the verdict blames (the first that has not entered the collective, or that has
 * exited), or NULL for a verdict about the rank itself. Pure. */
const struct diag_peer *diag_culprit(const struct diag_in *in, enum diag_verdict v);

/* The one-line cause for an alert: "rank 1 has not entered it (sleeping in hrtimer_nanosleep)"
 * or the verdict's title. Pure. */
void diag_cause(const struct diag_in *in, enum diag_verdict v, char *out, size_t n);

#endif
