/* Facts about a run that do not change while it is shown or recorded: the run line of a
 * recording, the header of the dashboard. */
#ifndef RINGSIDE_BACKEND_RECORD_RUN_INFO_H
#define RINGSIDE_BACKEND_RECORD_RUN_INFO_H

#include <stdbool.h>
#include <stdint.h>

#define RUN_MAX_DEVICES 16

/* Who a watched job is, as its script knows it (ringside watch): a training device's row. */
struct run_rank {
    bool valid;             /* the row is a watched job (the rest is meaningful) */
    int32_t rank;           /* its rank in the default process group, or -1 (not in one, or not
                               told yet) */
    int32_t local_rank;     /* its rank on its host, or -1 */
    int32_t world_size;     /* ranks in the group, or 0 when not told */
    int32_t pid;            /* the job's process (0: unknown) */
    bool open;              /* still connected (false: it ended or went away) */
    char name[32];          /* the job's name (its script's, or connect(name=)) */
    char host[64];          /* its host, or "" */
    char group_backend[16]; /* the process group's backend ("gloo", "nccl"), or "" */
};

/* Facts about the run that do not change while it is shown. */
struct run_info {
    char host[64];
    char backend[16]; /* "cpu", "hip" */
    char dev_name[96];
    char dev_arch[32];
    unsigned n_devices;                /* training devices (1 for telemetry alone) */
    uint16_t devices[RUN_MAX_DEVICES]; /* their indices, in rank order */
    bool replay;
    char origin[256];  /* "live" or the recording's path */
    uint64_t start_ns; /* the run's clock at its start */
    uint64_t start_wall_ns;
    /* Why the actions on the loop (p + - c m) do nothing here, shown greyed out with this
     * reason ("read-only: ..."); "" when they act (or, in a replay, steer the playback). */
    char control_off[128];
    /* Watching jobs of others (ringside watch): no loop of ours; "" while one is attached, else
     * why the loop's panels are empty ("no job attached: ..."). */
    bool watch;
    char idle[160];
    struct run_rank ranks[RUN_MAX_DEVICES]; /* watch: who devices[i] is (valid false
                                               elsewhere) */
};

#endif
