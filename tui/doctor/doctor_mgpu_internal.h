/* What the multi-GPU rows (doctor_mgpu.c) share with the work their ranks' threads do
 * (doctor_mgpu_rank.c): one thread per device, each given one job at a time by the caller,
 * who waits for all of them with the row's deadline. */
#ifndef RINGSIDE_TUI_DOCTOR_DOCTOR_MGPU_INTERNAL_H
#define RINGSIDE_TUI_DOCTOR_DOCTOR_MGPU_INTERNAL_H

#include "backend/comm/comm.h"
#include "backend/core/worker.h"
#include "tui/doctor/doctor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DOCTOR_MGPU_SMALL_BYTES 4096u       /* the latency row's message */
#define DOCTOR_MGPU_LARGE_BYTES (64u << 20) /* the bandwidth row's, unless the options say */
#define DOCTOR_MGPU_SMALL_RUNS  20          /* all-reduces timed in a row */
#define DOCTOR_MGPU_LARGE_RUNS  5

struct doctor_mgpu_run;
struct doctor_mgpu_rank;
typedef void (*doctor_mgpu_job)(struct doctor_mgpu_rank *k);

/* One rank: its thread, its device and what its last job found. The job's inputs are set by
 * the caller before it posts the job; its results are read after the rank reports done. */
struct doctor_mgpu_rank {
    struct doctor_mgpu_run *run;
    unsigned rank;   /* = its device index */
    unsigned grank;  /* its rank in the group of the row under way (run->member[grank] = rank) */
    struct worker w; /* its mutex and monotonic condition variable guard job and busy */
    doctor_mgpu_job job;
    bool busy;
    /* the job's inputs */
    int peer;            /* peer access: the other device */
    size_t bytes;        /* all-reduce: the message */
    int runs;            /* all-reduce: how many are timed */
    bool join, leave;    /* all-reduce: init before, destroy after */
    uint64_t timeout_ns; /* each communicator call's */
    /* the rank's own resources, kept from job to job */
    struct compute *c;
    void *buf;
    size_t buf_bytes;
    float *host; /* buf's contents on the host: uploads and read-backs */
    /* the job's results */
    int rc;
    char err[512];
    int count;         /* device count */
    bool can;          /* peer access */
    uint64_t a_ns;     /* init: the join; all-reduce: per all-reduce */
    uint64_t b_ns;     /* init: the leave */
    size_t wrong;      /* all-reduce: elements that differ from the sum */
    size_t first_bad;  /* the first of them */
    float got, want;   /* its value and the sum's */
    size_t peer_bytes; /* all-reduce: comm_peer_bytes after the join */
};

struct doctor_mgpu_run {
    const struct doctor_mgpu_opts *opts;
    unsigned n;                      /* ranks = devices under test */
    struct comm *comm;               /* the group of the row under way */
    unsigned members;                /* its ranks: all n, or a pair */
    unsigned member[COMM_MAX_RANKS]; /* the device of each of its ranks */
    struct comm_lib_info lib;        /* what the library row found */
    int lib_rc;                      /* and its error (text in ranks[0].err) */
    bool give_up; /* set (under ranks[stall_rank].w.mu) when a row has timed out */
    struct doctor_mgpu_rank ranks[COMM_MAX_RANKS];
};

/* ---- the jobs, each on the rank's own thread ---- */

/* The backend's device count (rank 0's thread, before the others exist). */
void doctor_mgpu_job_count(struct doctor_mgpu_rank *k);
/* Whether the rank's device reaches k->peer's memory directly. */
void doctor_mgpu_job_peer(struct doctor_mgpu_rank *k);
/* Open the rank's device, join run->comm and leave it again, timing both. */
void doctor_mgpu_job_join_leave(struct doctor_mgpu_rank *k);
/* What the communication library is (into run->lib; rank 0's thread). */
void doctor_mgpu_job_lib(struct doctor_mgpu_rank *k);
/* Join run->comm (as rank k->grank of run->members) first when k->join, all-reduce k->bytes
 * once and check the sum on every element, then time k->runs more in a row; leave the group after
 * when k->leave. A failure of the rank's own (its device) aborts the group, so the others do not
 * wait for it. */
void doctor_mgpu_job_reduce(struct doctor_mgpu_rank *k);

/* Free what the rank's jobs left (its buffers, its device); its thread has been joined. */
void doctor_mgpu_rank_fini(struct doctor_mgpu_rank *k);

/* What rank r puts at element i: small integers, so that any order of addition gives the
 * exact sum, and different per rank and element, so that a missing or misplaced contribution
 * shows. */
float doctor_mgpu_value(unsigned r, size_t i);

#endif
