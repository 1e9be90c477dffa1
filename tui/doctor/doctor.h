/* ringside doctor: a GPU machine checked the way its users had to by hand, one row per check
 * (name, ok/warn/fail/skip, what was measured, what to do). The checks read the machine through
 * struct doctor_env, so tests run them against fixture roots, a fake identity and a fake
 * environment; the report is printed as a table, JSON or Markdown. */
#ifndef RINGSIDE_TUI_DOCTOR_DOCTOR_H
#define RINGSIDE_TUI_DOCTOR_DOCTOR_H

#include "backend/kmsg/kmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

enum doctor_status { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL, DOCTOR_SKIP };

/* "ok", "warn", "fail", "skip". */
const char *doctor_status_name(enum doctor_status s);

struct doctor_row {
    char group[24]; /* "environment", "permissions", "variables", "known issues",
                       "kernel log", "gpu", "multi-gpu" */
    char name[48];  /* "kernel", "amdgpu driver", "/dev/kfd", "HSA_OVERRIDE_GFX_VERSION" */
    enum doctor_status status;
    char value[256];  /* what was found or measured ("6.8.0-49-generic", "not set") */
    char remedy[512]; /* what to do about a warn/fail, or why a row is skipped; "" when ok */
};

#define DOCTOR_MAX_ROWS 160

struct doctor_report {
    struct doctor_row rows[DOCTOR_MAX_ROWS];
    size_t n;
    size_t dropped; /* rows that did not fit (counted, never silently lost) */
};

/* Append a row with a printf-style value; the remedy starts empty. Returns the row (to set its
 * remedy with doctor_remedy), or NULL when the report is full (counted in dropped). */
struct doctor_row *doctor_add(struct doctor_report *r, const char *group, const char *name,
                              enum doctor_status st, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Set a row's remedy (printf-style); a NULL row is ignored. */
void doctor_remedy(struct doctor_row *row, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The report's worst status among ok/warn/fail (skip counts as ok), and the exit status it
 * gives: 0 when nothing failed, 1 when anything did. */
enum doctor_status doctor_worst(const struct doctor_report *r);
int doctor_exit_status(const struct doctor_report *r);

/* One GPU as the checks see it (from telemetry and the runtime in production). */
struct doctor_gpu {
    char pci[20];  /* "0000:03:00.0" */
    char name[96]; /* "AMD Radeon RX 7900 XTX" */
    char arch[32]; /* "gfx1100", "sm_90"; "" when unknown */
    bool amd, nvidia;
};

#define DOCTOR_MAX_GPUS 16

/* Everything the environment checks read, so each can be pointed at a fixture. */
struct doctor_env {
    const char *root;    /* prefix of every absolute path read ("" = this machine) */
    char *const *envp;   /* the environment to inspect (NULL-terminated) */
    uid_t uid;           /* whose permissions the checks judge */
    const gid_t *groups; /* that user's groups (primary included) */
    size_t n_groups;
    const char *user; /* for messages ("alice") */
    /* What the process found at run time (filled by the caller; empty when not compiled in) */
    const char *built_archs; /* archs the GPU kernels were compiled for: "gfx1030;gfx90a" or
                                "sm_90"; "" without a GPU backend */
    const char *hip_runtime; /* the HIP/CUDA runtime's version text, "" when none */
    const char *backends;    /* compiled-in compute backends: "hip, cpu" */
    struct doctor_gpu gpus[DOCTOR_MAX_GPUS];
    size_t n_gpus;
};

/* Versions found on the machine, each "" when not found. */
struct doctor_facts {
    char kernel[64];       /* /proc/sys/kernel/osrelease: "6.8.0-49-generic" */
    char amdgpu[32];       /* /sys/module/amdgpu/version (DKMS builds), or "in-tree" when
                              the module is loaded without one */
    char nvidia[32];       /* /proc/driver/nvidia/version: "550.54.15" */
    char rocm[32];         /* /opt/rocm/.info/version, else the newest /opt/rocm-X.Y.Z's */
    char rocm_path[64];    /* where rocm was found: "/opt/rocm-6.2.4" */
    char torch[32];        /* the newest torch-X.Y.Z*.dist-info or .egg-info (pip's or
                              Debian's python3-torch) in the Python site dirs */
    char torch_path[256];  /* that dist-info's (egg-info's) path */
    bool torch_build;      /* torch/version.py beside it was read: */
    char torch_cuda[16];   /* its cuda = '12.1' ("" for None) */
    char torch_hip[32];    /* its hip = '6.2.41133-dd7f95766' ("" for None) */
    char torch_archs[256]; /* the GPU archs its kernels are built for, from its libraries
                              ("sm_80 sm_90 compute_90", "gfx90a gfx942"); "" when not known */
};

/* Read the versions under e->root (and $VIRTUAL_ENV, $HOME from e->envp for PyTorch). */
void doctor_facts_read(const struct doctor_env *e, struct doctor_facts *f);

/* The build of the PyTorch at f->torch_path (doctor_facts_read calls it): torch/version.py's
 * CUDA and HIP versions, and the archs found without running Python: those of the cubins and
 * PTX that most fatbins in torch/lib/libtorch_cuda.so's .nv_fatbin carry (CUDA builds), the
 * gfx names of the kernel files in torch/lib/rocblas/library (ROCm wheels). */
void doctor_torch_build(const struct doctor_env *e, struct doctor_facts *f);

/* Whether a GPU of arch ("sm_86", "gfx90a:xnack-") runs kernels of the space-separated list
 * ("sm_80 compute_90", "gfx90a"): a cubin of the same major and an older or equal minor, PTX
 * of an older or equal arch, the same gfx. */
bool doctor_torch_runs_on(const char *archs, const char *arch);

/* The value of name in e->envp, or NULL. */
const char *doctor_getenv(const struct doctor_env *e, const char *name);

/* "1.2.3" against "1.2": <0, 0, >0 by numeric components (missing ones are 0; a suffix such as
 * "+rocm6.2" or "-1" ends the number). */
int doctor_version_cmp(const char *a, const char *b);

/* The environment as this process sees it: root "", environ, getuid/getgroups, the user's
 * name; gpus and versions are left for the caller. */
void doctor_env_self(struct doctor_env *e);

/* Environment rows: kernel, drivers, runtime and ROCm versions, the GPUs and their archs
 * against the built ones, device permissions and groups, /dev/kmsg and debugfs readability,
 * and the environment variables that change GPU behaviour. */
void doctor_check_env(const struct doctor_env *e, struct doctor_report *r);

/* The "variables" rows of doctor_check_env: each GPU-related environment variable, what its
 * value does, and whether the value is sane for the GPUs present. */
void doctor_check_vars(const struct doctor_env *e, struct doctor_report *r);

/* Whether arch ("gfx1100") is an entry of list ("gfx1030;gfx1100" or "sm_80,sm_90"). */
bool doctor_arch_listed(const char *list, const char *arch);

/* Known-bad combinations, as data: a JSON rules file (built in, overridable), each rule
 * naming its source. */
struct doctor_rules;

/* Load path, or the built-in rules when path is NULL. 0, or -EINVAL/-errno with err naming the
 * file and the rule or the line. */
int doctor_rules_load(struct doctor_rules **out, const char *path, char *err, size_t errlen);
void doctor_rules_free(struct doctor_rules *rs);

/* One row per rule that matches the machine (fail or warn, as the rule says, with its remedy
 * and source); one ok row when none does. */
void doctor_check_rules(const struct doctor_rules *rs, const struct doctor_env *e,
                        const struct doctor_facts *f, struct doctor_report *r);

/* The latest driver-error events a kernel-log check saw (for the bundle). */
#define DOCTOR_KMSG_KEEP 32
struct doctor_kmsg_events {
    struct kmsg_event ev[DOCTOR_KMSG_KEEP]; /* oldest first */
    size_t n;
    unsigned long total; /* driver-error events seen in all */
};

/* As doctor_check_kmsg, also keeping the last DOCTOR_KMSG_KEEP driver-error events in *keep. */
void doctor_check_kmsg_keep(const struct doctor_env *e, struct doctor_report *r,
                            struct doctor_kmsg_events *keep);

/* Kernel-log health: the backlog of root/dev/kmsg classified, a row per driver-error category
 * seen (count, the last one and its age), ok when none; skip with the reason when unreadable. */
void doctor_check_kmsg(const struct doctor_env *e, struct doctor_report *r);

/* The GPU smoke tests. */
struct doctor_gpu_opts {
    char backend[16];        /* the compute backend to test ("hip"), or "" to skip every row */
    const char *skip_reason; /* why, when backend is "" */
    int device;              /* its index */
    double timeout_s;        /* per test: longer is "fail: hung after N s" */
    double hang_s;           /* the hang kernel's time (under timeout_s) */
    char inject[64];         /* a fault to rehearse (--inject hang:vpoc:60), or "": the tests
                                run in phases load (init), h2d (allocation, copies), cleanup
                                (sync latency, memory probe), vpoc and sync (the MLP steps) */
};

/* Device init, allocations of growing size, copies with their bandwidth, a synchronize latency
 * sample, the VPOC kernel against the CPU, one MLP step at a sweep of widths, the memory probe
 * and the hang kernel released on time, each on a worker thread under a watchdog. *hung: a test
 * never came back; its thread and the device are left as they are, and the caller must leave
 * with _exit (runtime destructors could block on the hung call). */
void doctor_check_gpu(const struct doctor_gpu_opts *o, struct doctor_report *r, bool *hung);

/* The multi-GPU checks: whether data-parallel training can work here. */
struct doctor_mgpu_opts {
    char backend[16];        /* the compute backend whose devices are tested ("hip"; "cpu"
                                rehearses on its simulated devices), or "" to skip every row */
    const char *skip_reason; /* why, when backend is "" */
    unsigned n_found;        /* GPUs found (telemetry), for the skip rows when backend is "" */
    unsigned max_devices;    /* test at most this many devices (0: all, up to 16) */
    const char *comm_lib;    /* the NCCL/RCCL library to load; NULL: the platform's */
    char comm[8];            /* the communicator: "nccl" ("" too), or "cpu" (host memory) */
    double timeout_s;        /* per row: longer is a "fail: timed out" row */
    size_t large_bytes;      /* the bandwidth row's message size (0: 64 MiB) */
    int stall_rank;          /* a rehearsal: this rank stalls before joining the group, as
                                behind a hung device, until its row times out (-1: none) */
};

/* Rows of group "multi-gpu": the communication library and its version, peer access between
 * each ordered pair of devices, every device joining and leaving a group (timed), and an
 * all-reduce over all of them checked and timed for a small message (latency) and a large one
 * (bus bandwidth). Each row runs on the ranks' threads under its own timeout; a group that
 * times out is aborted, and the row names the rank that never joined. With fewer than two
 * devices every row is "skip: needs two GPUs (found N)". *hung: a rank never came back even
 * after the abort; its thread and device are left as they are, and the caller must leave with
 * _exit. */
void doctor_check_mgpu(const struct doctor_mgpu_opts *o, struct doctor_report *r, bool *hung);

struct tele_snap;
struct json_object;

/* The report as a json-c object {"rows":[...],"summary":{...}} (the caller puts it). */
struct json_object *doctor_report_json(const struct doctor_report *r);

/* --bundle FILE, written atomically: {"bundle":"ringside doctor","ringside":VERSION,
 * "facts":{...},"report":{"rows":[...],"summary":{...}},"telemetry":<the probe --json
 * snapshot, or null>,"kernel_log":[<kmsg classify objects>]}. 0, or -errno with err naming
 * the file. */
int doctor_write_bundle(const char *path, const struct doctor_report *r,
                        const struct doctor_facts *f, const struct tele_snap *snap,
                        const struct doctor_kmsg_events *k, char *err, size_t errlen);

/* Output. Table: aligned columns, colour when colour is true. JSON: one object with "rows"
 * and "summary". Markdown: a table for a bug report. Each returns 0 or -errno of the write. */
int doctor_print_table(FILE *out, const struct doctor_report *r, bool colour);
int doctor_print_json(FILE *out, const struct doctor_report *r);
int doctor_print_markdown(FILE *out, const struct doctor_report *r);

#endif
