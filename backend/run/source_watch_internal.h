/* The watch source's state, shared by its files: source_watch.c (the jobs' lines and the
 * source's ops) and watch_hang.c (the hang watch over the jobs' calls, the diagnosis, the
 * events' notes and the bundle). One thread (the dashboard's). */
#ifndef RINGSIDE_BACKEND_RUN_SOURCE_WATCH_INTERNAL_H
#define RINGSIDE_BACKEND_RUN_SOURCE_WATCH_INTERNAL_H

#include "backend/run/bundle.h"
#include "backend/run/source_watch.h"
#include "backend/run/watch_diag.h"
#include "backend/trace/trace_watch.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct json_object;

#define WATCH_QUEUE      8192       /* events between two drains */
#define WATCH_POLL_BYTES (8u << 20) /* read at most this much a drain */
#define WATCH_CALLS      8          /* calls in flight at once a job (DDP's buckets) */
#define WATCH_STACK      3072       /* a job's last Python stack, as text */
#define WATCH_NOTES      32         /* alerts with a diagnosis kept for their details */
#define WATCH_NOTE       8192       /* one diagnosis, with the stacks it names */
#define WATCH_KMSG       32         /* recent kernel-log failures, for the diagnosis */

/* A call a job announced and has not left: a synchronize, a collective. */
struct watch_call {
    bool used;
    uint32_t id;   /* the job's id for it (0 from a bridge without ids) */
    int coll;      /* enum ev_coll_op, or -1 for a synchronize */
    int group;     /* its process group (0: the default one) */
    uint64_t cseq; /* its number among the group's collectives (0: not numbered) */
    char name[48]; /* "torch.distributed.all_reduce" */
    struct trace_inflight inf;
    enum trace_watch_state state; /* what the watch last said of it */
    bool stack_asked;             /* the stacks of it and its peers were asked for */
};

struct watch_job {
    bool open;     /* connected now */
    bool have_run; /* its run line came: it is shown */
    pid_t pid;
    char name[64];
    bool control;               /* takes commands */
    int rank;                   /* its rank in a process group, or -1 */
    int local_rank, world_size; /* -1 and 0 when not told */
    char host[64];
    char group_backend[16];
    char group_id[128]; /* where its group's ranks met (the bridge's rank line), or "" */
    unsigned dev;       /* the device it runs on, as its framework numbers it */
    struct replay_snap *snap;
    struct watch_call calls[WATCH_CALLS];
    uint64_t cseq_entered;   /* the default group's highest collective number entered */
    uint64_t cseq_done;      /* ... and left */
    uint64_t gone_ns;        /* when it went away (0: open) */
    bool ended;              /* it said it ended (a summary line) */
    bool bundled;            /* its hang bundle was written: never a second */
    struct diag_proc proc;   /* the last look at its threads */
    char stack[WATCH_STACK]; /* its last Python stack ("" before one came) */
    char stack_top[96];      /* the innermost frame of the training thread: "train.py:42 in f" */
    uint64_t stack_ns;       /* when it came */
    uint64_t lines, bad;
};

/* An alert's details beyond its line: the diagnosis and the stacks it names. */
struct watch_note {
    uint64_t t_ns; /* the alert's time and device: the key the details are asked with */
    uint16_t dev;
    uint8_t code;
    unsigned jobs[4]; /* whose stacks it shows (the waiting job first), n_jobs of them */
    unsigned n_jobs;
    uint64_t asked_ns; /* a stack that came after this is one of these */
    char text[WATCH_NOTE];
    size_t diag_len; /* text's diagnosis part; the stacks follow */
};

struct watch_kmsg {
    uint64_t t_ns;
    char pci[16];
    char text[200];
};

struct watch {
    struct source src;
    struct run *run;
    struct bridge *b;
    bool fed; /* the caller polls b and hands the lines over; drain reads neither b nor run */
    const struct run_opts *o;
    uint64_t slow_ns, hang_ns;
    struct watch_job jobs[BRIDGE_MAX_JOBS];
    struct replay_item *item; /* the last line, as the recording parser read it */
    int item_rc;              /* ... and its result: 0, or the line's parse error */
    struct ev q[WATCH_QUEUE];
    size_t head, n;
    uint64_t dropped, bad;
    uint32_t out_seq; /* the events' numbers as this source hands them out */
    uint32_t run_seq; /* the run's last event number seen (its gaps are kept) */
    bool run_seq_seen;
    unsigned shown[RUN_MAX_DEVICES]; /* the jobs shown (slots), by rank */
    unsigned n_shown;
    struct engine_snap idle;
    bool stopped;
    char status[384];
    char cause[200];   /* the last slow collective's cause, for the status line */
    char other[4][24]; /* the jobs' own phase names (shown as "other"), the first four */
    unsigned n_other;
    unsigned selected; /* the shown job (index into shown) the dashboard has selected */
    struct watch_note notes[WATCH_NOTES];
    unsigned note_head;
    struct watch_kmsg kmsg[WATCH_KMSG];
    unsigned kmsg_head, kmsg_n;
    struct bundle_ring recent;
    uint64_t next_look_ns;
};

/* Queue e for the dashboard (the oldest goes when full). */
void watch_push(struct watch *w, const struct ev *e);

/* One look at every job's calls in flight (the hang watch): SLOW, HANG and back-to-ok alerts
 * with the diagnosis in their notes, the stacks asked for, the bundle on a HANG. Each drain. */
void watch_hang_look(struct watch *w, uint64_t now_ns);
/* A job's call left (or the job went away): its back-to-ok alert if it had been slow. */
void watch_hang_left(struct watch *w, unsigned k, struct watch_call *c, uint64_t now_ns, bool gone);
/* A stack line (o) came from job k: kept, and added to the notes that wait for it. */
void watch_hang_stack(struct watch *w, unsigned k, struct json_object *o);
/* An event the dashboard is handed: kept for the bundle and the diagnosis (kernel-log
 * failures). */
void watch_hang_seen(struct watch *w, const struct ev *e);
/* The note of the alert (t_ns, dev, code), or NULL. */
const char *watch_hang_note(const struct watch *w, uint64_t t_ns, uint16_t dev, uint8_t code);
/* "rank 1" / "job train.py" for messages. */
void watch_who(const struct watch_job *j, char *out, size_t n);

#endif
