/* The rocm-smi-lib telemetry provider: loads librocm_smi64 at run time (so one binary runs
 * where rocm-smi-lib is not installed, and a machine without an AMD GPU does not keep the
 * library and the C++ runtime it needs in memory), finds the AMD GPUs through it, reads each one
 * every interval without waking a runtime-suspended device, lists the compute processes, and
 * turns KFD SMI events (VM faults, resets, throttling) into events on a thread of its own. */
#include "backend/core/dynlib.h"
#include "backend/core/worker.h"
#include "backend/telemetry/tele_rsmi_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <rocm_smi/rocm_smi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TELE_RSMI_WAIT_MS 500 /* one event wait: how long close may wait for the thread */
#define TELE_RSMI_BATCH   16

/* The library's frequency tables fit ours (their size grew from 32 to 33 with ROCm 6). */
_Static_assert(RSMI_MAX_NUM_FREQUENCIES <= TELE_RSMI_MAX_FREQS, "rsmi_frequencies_t");

/* Where the library is looked for: its soname on the loader's path, then the file this build
 * was configured with (/opt/rocm/lib, say, where that is not on the path). */
#define TELE_RSMI_SONAME "librocm_smi64.so.1"
#ifndef RS_ROCM_SMI_PATH
#define RS_ROCM_SMI_PATH TELE_RSMI_SONAME
#endif

/* Every entry point the provider calls, each one required: a library without one of them is
 * reported as too old rather than half used. */
#define TELE_RSMI_CALLS(X)                                                                         \
    X(rsmi_init)                                                                                   \
    X(rsmi_shut_down)                                                                              \
    X(rsmi_status_string)                                                                          \
    X(rsmi_num_monitor_devices)                                                                    \
    X(rsmi_dev_pci_id_get)                                                                         \
    X(rsmi_dev_name_get)                                                                           \
    X(rsmi_dev_ecc_enabled_get)                                                                    \
    X(rsmi_dev_ecc_count_get)                                                                      \
    X(rsmi_dev_memory_total_get)                                                                   \
    X(rsmi_dev_memory_usage_get)                                                                   \
    X(rsmi_dev_busy_percent_get)                                                                   \
    X(rsmi_dev_memory_busy_percent_get)                                                            \
    X(rsmi_dev_temp_metric_get)                                                                    \
    X(rsmi_dev_power_ave_get)                                                                      \
    X(rsmi_dev_power_cap_get)                                                                      \
    X(rsmi_dev_fan_rpms_get)                                                                       \
    X(rsmi_dev_fan_speed_get)                                                                      \
    X(rsmi_dev_fan_speed_max_get)                                                                  \
    X(rsmi_dev_gpu_clk_freq_get)                                                                   \
    X(rsmi_dev_pci_bandwidth_get)                                                                  \
    X(rsmi_compute_process_gpus_get)                                                               \
    X(rsmi_compute_process_info_by_pid_get)                                                        \
    X(rsmi_compute_process_info_get)                                                               \
    X(rsmi_event_notification_init)                                                                \
    X(rsmi_event_notification_mask_set)                                                            \
    X(rsmi_event_notification_get)                                                                 \
    X(rsmi_event_notification_stop)

/* The entry points, typed as the header declares them. */
struct tele_rsmi_fns {
    TELE_RSMI_CALLS(DYNLIB_MEMBER)
};

/* The library is process-wide: loaded by the first open that finds a GPU for it and kept (its
 * C++ symbols make the loader keep it mapped whatever dlclose is asked). rsmi_fn is read only
 * by providers whose open loaded it or saw it loaded. */
static struct tele_rsmi_fns rsmi_fn;
#define TELE_RSMI_SYM(f) DYNLIB_SYM(struct tele_rsmi_fns, f)
static const struct dynlib_sym tele_rsmi_syms[] = {TELE_RSMI_CALLS(TELE_RSMI_SYM)};
#undef TELE_RSMI_SYM
static struct dynlib tele_rsmi_lib = DYNLIB_INIT(TELE_RSMI_SONAME, RS_ROCM_SMI_PATH, "rocm-smi-lib",
                                                 "librocm-smi64-1", tele_rsmi_syms, &rsmi_fn);

/* Whether the machine may have a GPU for rocm-smi: the KFD's topology, or a drm card bound to
 * amdgpu, under the sysfs root. Without either the library is not loaded (it would stay in
 * memory for nothing, with the C++ runtime it needs). */
static bool tele_rsmi_may_have_gpu(const char *sys) {
    char path[TELE_PATH_MAX], text[1024], val[64];
    struct stat st;
    if (tele_path(path, sizeof(path), sys, "class/kfd/kfd/topology/nodes") == 0 &&
        stat(path, &st) == 0)
        return true;
    if (tele_path(path, sizeof(path), sys, "class/drm") != 0)
        return false;
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool amd = false;
    for (struct dirent *e; !amd && (e = readdir(d)) != NULL;) {
        char rel[sizeof(e->d_name) + 32];
        if (strncmp(e->d_name, "card", 4) != 0)
            continue;
        snprintf(rel, sizeof(rel), "class/drm/%s/device/uevent", e->d_name);
        amd = tele_path(path, sizeof(path), sys, rel) == 0 &&
              tele_read_text(path, text, sizeof(text)) >= 0 &&
              tele_uevent_get(text, "DRIVER", val, sizeof(val)) && strcmp(val, "amdgpu") == 0;
    }
    closedir(d);
    return amd;
}

struct tele_rsmi_dev {
    uint32_t dv; /* the library's device index */
    uint64_t bdfid;
    char pci[16];
    char name[TELE_RSMI_NAME_BYTES];
    uint64_t ecc_blocks; /* rsmi_dev_ecc_enabled_get: the RAS blocks worth asking */
    bool events;         /* event notification set up */
};

struct tele_rsmi {
    const struct tele_ctx *ctx;
    bool inited, want_events;
    struct tele_rsmi_dev devs[TELE_MAX_GPUS];
    uint32_t n_devs;
    struct tele_rsmi_procs procs; /* this sample's compute processes */
    struct worker w;              /* the KFD event thread */
};

static const char *tele_rsmi_status(rsmi_status_t st) {
    const char *text = NULL;
    if (rsmi_fn.rsmi_status_string(st, &text) != RSMI_STATUS_SUCCESS || !text)
        return "unknown error";
    return text;
}

/* ---- stderr ----
 * rocm-smi reports discovery failures on std::cerr ("Failed to open drm root directory",
 * "Exception caught: rsmi_init."), which would land among `ringside probe`'s output. fd 2 is
 * process-wide, so it is pointed at /dev/null only during open, on the thread that creates the
 * service and before this provider starts its own thread; anything another thread wrote to
 * stderr in that window would be lost (the dashboard sends stderr to its log before that). */
static int tele_rsmi_quiet(void) {
    fflush(stderr);
    int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (saved < 0)
        return -1;
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, STDERR_FILENO) < 0) {
        if (null >= 0)
            close(null);
        close(saved);
        return -1;
    }
    close(null);
    return saved;
}

static void tele_rsmi_loud(int saved) {
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

/* ---- reading one device ---- */

static void tele_rsmi_read_mem(uint32_t dv, struct tele_rsmi_raw *r) {
    static const rsmi_memory_type_t type[TELE_RSMI_MEM_N] = {
        RSMI_MEM_TYPE_VRAM, RSMI_MEM_TYPE_VIS_VRAM, RSMI_MEM_TYPE_GTT};
    for (int i = 0; i < TELE_RSMI_MEM_N; i++) {
        struct tele_rsmi_u64 *t = &r->mem_total_bytes[i], *u = &r->mem_used_bytes[i];
        t->ok = rsmi_fn.rsmi_dev_memory_total_get(dv, type[i], &t->v) == RSMI_STATUS_SUCCESS;
        u->ok = rsmi_fn.rsmi_dev_memory_usage_get(dv, type[i], &u->v) == RSMI_STATUS_SUCCESS;
    }
}

static void tele_rsmi_read_gauges(uint32_t dv, struct tele_rsmi_raw *r) {
    static const rsmi_temperature_type_t sensor[TELE_RSMI_TEMP_N] = {
        RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_TYPE_MEMORY};
    uint32_t pct = 0;
    r->busy_pct.ok = rsmi_fn.rsmi_dev_busy_percent_get(dv, &pct) == RSMI_STATUS_SUCCESS;
    r->busy_pct.v = pct;
    r->mem_busy_pct.ok = rsmi_fn.rsmi_dev_memory_busy_percent_get(dv, &pct) == RSMI_STATUS_SUCCESS;
    r->mem_busy_pct.v = pct;
    for (int i = 0; i < TELE_RSMI_TEMP_N; i++)
        r->temp_mc[i].ok =
            rsmi_fn.rsmi_dev_temp_metric_get(dv, sensor[i], RSMI_TEMP_CURRENT, &r->temp_mc[i].v) ==
            RSMI_STATUS_SUCCESS;
    r->power_uw.ok = rsmi_fn.rsmi_dev_power_ave_get(dv, 0, &r->power_uw.v) == RSMI_STATUS_SUCCESS;
    r->power_cap_uw.ok =
        rsmi_fn.rsmi_dev_power_cap_get(dv, 0, &r->power_cap_uw.v) == RSMI_STATUS_SUCCESS;
    r->fan_rpm.ok = rsmi_fn.rsmi_dev_fan_rpms_get(dv, 0, &r->fan_rpm.v) == RSMI_STATUS_SUCCESS;
    r->fan_speed.ok = rsmi_fn.rsmi_dev_fan_speed_get(dv, 0, &r->fan_speed.v) == RSMI_STATUS_SUCCESS;
    r->fan_max.ok = rsmi_fn.rsmi_dev_fan_speed_max_get(dv, 0, &r->fan_max.v) == RSMI_STATUS_SUCCESS;
}

static void tele_rsmi_copy_freqs(const rsmi_frequencies_t *f, struct tele_rsmi_freqs *out) {
    out->ok = true;
    out->n = f->num_supported;
    out->cur = f->current;
    memcpy(out->v, f->frequency, sizeof(f->frequency));
}

/* The link comes from pp_dpm_pcie (rsmi_dev_pci_bandwidth_get). rsmi_dev_pci_throughput_get is
 * never called: it reads pcie_bw, which the driver answers after sleeping about a second. */
static void tele_rsmi_read_clocks(uint32_t dv, struct tele_rsmi_raw *r) {
    rsmi_frequencies_t f;
    memset(&f, 0, sizeof(f));
    if (rsmi_fn.rsmi_dev_gpu_clk_freq_get(dv, RSMI_CLK_TYPE_SYS, &f) == RSMI_STATUS_SUCCESS)
        tele_rsmi_copy_freqs(&f, &r->sclk_hz);
    memset(&f, 0, sizeof(f));
    if (rsmi_fn.rsmi_dev_gpu_clk_freq_get(dv, RSMI_CLK_TYPE_MEM, &f) == RSMI_STATUS_SUCCESS)
        tele_rsmi_copy_freqs(&f, &r->mclk_hz);
    rsmi_pcie_bandwidth_t bw;
    memset(&bw, 0, sizeof(bw));
    if (rsmi_fn.rsmi_dev_pci_bandwidth_get(dv, &bw) == RSMI_STATUS_SUCCESS) {
        tele_rsmi_copy_freqs(&bw.transfer_rate, &r->pcie_tps);
        memcpy(r->pcie_lanes, bw.lanes, sizeof(bw.lanes));
    }
}

static void tele_rsmi_read_ecc(const struct tele_rsmi_dev *d, struct tele_rsmi_raw *r) {
    for (uint64_t block = RSMI_GPU_BLOCK_FIRST; block <= RSMI_GPU_BLOCK_LAST; block <<= 1) {
        rsmi_error_count_t ec;
        if (!(d->ecc_blocks & block) ||
            rsmi_fn.rsmi_dev_ecc_count_get(d->dv, (rsmi_gpu_block_t)block, &ec) !=
                RSMI_STATUS_SUCCESS)
            continue; /* NOT_SUPPORTED on this block: it adds nothing */
        r->ecc_ce.v += ec.correctable_err;
        r->ecc_ue.v += ec.uncorrectable_err;
        r->ecc_ce.ok = r->ecc_ue.ok = true;
    }
}

/* rocm-smi reads sysfs files that the driver answers by resuming the device (busy, clocks,
 * hwmon, RAS), so a runtime-suspended GPU gets only its memory read. rocm-smi serialises device
 * calls with a mutex it shares with every other rocm-smi user
 * (/dev/shm/rocm_smi_*): a sample waits while, say, the rocm-smi command holds it. */
static void tele_rsmi_read(const struct tele_rsmi *s, const struct tele_rsmi_dev *d,
                           struct tele_rsmi_raw *r) {
    memset(r, 0, sizeof(*r));
    r->bdfid = d->bdfid;
    memcpy(r->name, d->name, sizeof(r->name));
    r->power = tele_pci_power(s->ctx->roots->sys, d->pci);
    tele_rsmi_read_mem(d->dv, r);
    if (r->power == TELE_POWER_SUSPENDED)
        return;
    tele_rsmi_read_gauges(d->dv, r);
    tele_rsmi_read_clocks(d->dv, r);
    tele_rsmi_read_ecc(d, r);
}

/* ---- compute processes ---- */

/* False when the process is gone (it exited since the list was read). */
static bool tele_rsmi_read_proc(uint32_t pid, const char *proc_root, struct tele_rsmi_proc *p) {
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    uint32_t n = TELE_MAX_GPUS;
    rsmi_status_t st = rsmi_fn.rsmi_compute_process_gpus_get(pid, p->gpus, &n);
    if (st != RSMI_STATUS_SUCCESS && st != RSMI_STATUS_INSUFFICIENT_SIZE)
        return false;
    p->n_gpus = st == RSMI_STATUS_SUCCESS ? n : TELE_MAX_GPUS + 1; /* more than it could list */
    rsmi_process_info_t info;
    memset(&info, 0, sizeof(info));
    /* newer libraries answer UINT64_MAX for a process in another PID namespace */
    p->vram_ok = rsmi_fn.rsmi_compute_process_info_by_pid_get(pid, &info) == RSMI_STATUS_SUCCESS &&
                 info.vram_usage != UINT64_MAX;
    p->vram_bytes = p->vram_ok ? info.vram_usage : 0;
    char rel[32], path[TELE_PATH_MAX + 32];
    snprintf(rel, sizeof(rel), "%u/comm", pid);
    if (tele_path(path, sizeof(path), proc_root, rel) == 0)
        tele_read_line(path, p->name, sizeof(p->name));
    return true;
}

static void tele_rsmi_read_procs(struct tele_rsmi_procs *ps, const char *proc_root) {
    rsmi_process_info_t list[TELE_RSMI_MAX_PROCS];
    uint32_t n = TELE_RSMI_MAX_PROCS;
    ps->n = 0;
    rsmi_status_t st = rsmi_fn.rsmi_compute_process_info_get(list, &n);
    ps->ok = st == RSMI_STATUS_SUCCESS || st == RSMI_STATUS_INSUFFICIENT_SIZE;
    ps->complete = st == RSMI_STATUS_SUCCESS;
    for (uint32_t i = 0; ps->ok && i < n && i < TELE_RSMI_MAX_PROCS; i++)
        if (tele_rsmi_read_proc(list[i].process_id, proc_root, &ps->p[ps->n]))
            ps->n++;
}

/* ---- KFD SMI events ----
 * Without root the kernel sends a process only its own VM faults (and other per-process
 * events); resets and throttling reach everyone. */

static void tele_rsmi_deliver(const struct tele_rsmi *s, rsmi_evt_notification_data_t *e) {
    char text[EV_TEXT_BYTES];
    enum ev_severity sev;
    e->message[sizeof(e->message) - 1] = '\0';
    if (!tele_rsmi_event_text((uint32_t)e->event, e->message, text, sizeof(text), &sev))
        return;
    const char *pci = "";
    for (uint32_t i = 0; i < s->n_devs; i++)
        if (s->devs[i].dv == e->dv_ind)
            pci = s->devs[i].pci;
    s->ctx->emit(s->ctx, sev, pci, text);
}

static void *tele_rsmi_events_main(void *arg) {
    struct tele_rsmi *s = arg;
    rsmi_evt_notification_data_t data[TELE_RSMI_BATCH];
    while (!worker_stopping(&s->w)) {
        uint32_t n = TELE_RSMI_BATCH;
        rsmi_status_t st = rsmi_fn.rsmi_event_notification_get(TELE_RSMI_WAIT_MS, &n, data);
        if (st == RSMI_STATUS_SUCCESS)
            for (uint32_t i = 0; i < n && i < TELE_RSMI_BATCH; i++)
                tele_rsmi_deliver(s, &data[i]);
        else if (st != RSMI_STATUS_NO_DATA) /* a failing wait returns at once: no spin */
            worker_nap(&s->w, (uint64_t)TELE_RSMI_WAIT_MS * 1000000ull);
    }
    return NULL;
}

/* A GPU whose notification cannot be set up (no /dev/kfd access) simply has no events. True
 * when some GPU has them. */
static bool tele_rsmi_events_init(struct tele_rsmi *s) {
    uint64_t mask = tele_rsmi_event_mask();
    bool any = false;
    for (uint32_t i = 0; i < s->n_devs; i++) {
        struct tele_rsmi_dev *d = &s->devs[i];
        if (rsmi_fn.rsmi_event_notification_init(d->dv) != RSMI_STATUS_SUCCESS)
            continue;
        d->events = rsmi_fn.rsmi_event_notification_mask_set(d->dv, mask) == RSMI_STATUS_SUCCESS;
        if (!d->events)
            rsmi_fn.rsmi_event_notification_stop(d->dv);
        any |= d->events;
    }
    return any;
}

static void tele_rsmi_events_stop(struct tele_rsmi *s) {
    worker_fini(&s->w);
    for (uint32_t i = 0; i < s->n_devs; i++)
        if (s->devs[i].events)
            rsmi_fn.rsmi_event_notification_stop(s->devs[i].dv);
}

/* ---- open / sample / close ---- */

static void tele_rsmi_identify(struct tele_rsmi *s, uint32_t dv) {
    struct tele_rsmi_dev *d = &s->devs[s->n_devs];
    memset(d, 0, sizeof(*d));
    d->dv = dv;
    if (rsmi_fn.rsmi_dev_pci_id_get(dv, &d->bdfid) != RSMI_STATUS_SUCCESS ||
        !tele_rsmi_map_pci(d->bdfid, d->pci))
        return; /* without an address the GPU could not be merged with the others */
    if (rsmi_fn.rsmi_dev_name_get(dv, d->name, sizeof(d->name)) != RSMI_STATUS_SUCCESS)
        d->name[0] = '\0';
    d->name[sizeof(d->name) - 1] = '\0';
    if (rsmi_fn.rsmi_dev_ecc_enabled_get(dv, &d->ecc_blocks) != RSMI_STATUS_SUCCESS)
        d->ecc_blocks = 0; /* no RAS on this board */
    s->n_devs++;
}

/* Everything that may print, run with stderr muted. */
static int tele_rsmi_discover(struct tele_rsmi *s, char *reason, size_t len) {
    rsmi_status_t st = rsmi_fn.rsmi_init(0);
    if (st != RSMI_STATUS_SUCCESS) {
        snprintf(reason, len, "rsmi_init failed: %s", tele_rsmi_status(st));
        return -ENODEV;
    }
    s->inited = true;
    uint32_t n = 0;
    st = rsmi_fn.rsmi_num_monitor_devices(&n);
    if (st != RSMI_STATUS_SUCCESS || n == 0) {
        snprintf(reason, len, "no AMD GPU (rsmi_num_monitor_devices: %u)", n);
        return -ENODEV;
    }
    for (uint32_t dv = 0; dv < n && s->n_devs < TELE_MAX_GPUS; dv++)
        tele_rsmi_identify(s, dv);
    if (s->n_devs == 0) {
        snprintf(reason, len, "%u GPUs, none with a PCI address", n);
        return -ENODEV;
    }
    s->want_events = tele_rsmi_events_init(s); /* the thread starts after unmuting */
    return 0;
}

static void tele_rsmi_free(struct tele_rsmi *s) {
    tele_rsmi_events_stop(s);
    if (s->inited)
        rsmi_fn.rsmi_shut_down();
    free(s);
}

static struct tele_rsmi *tele_rsmi_alloc(const struct tele_ctx *ctx) {
    struct tele_rsmi *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->ctx = ctx;
    worker_init(&s->w);
    return s;
}

static int tele_rsmi_open(const struct tele_ctx *ctx, void **state, char *reason,
                          size_t reasonlen) {
    struct tele_rsmi *s = tele_rsmi_alloc(ctx);
    if (!s) {
        snprintf(reason, reasonlen, "out of memory");
        return -ENOMEM;
    }
    int rc = -ENODEV;
    if (!tele_rsmi_may_have_gpu(ctx->roots->sys))
        snprintf(reason, reasonlen,
                 "no AMD GPU (no KFD and no amdgpu card under %s/class; not loaded)",
                 ctx->roots->sys);
    else
        rc = dynlib_load(&tele_rsmi_lib, reason, reasonlen);
    if (rc == 0) {
        int quiet = tele_rsmi_quiet();
        rc = tele_rsmi_discover(s, reason, reasonlen);
        tele_rsmi_loud(quiet);
    }
    if (rc == 0 && s->want_events) {
        rc = worker_start(&s->w, tele_rsmi_events_main, s);
        if (rc < 0)
            snprintf(reason, reasonlen, "cannot start the event thread: %s", strerror(-rc));
    }
    if (rc < 0) {
        tele_rsmi_free(s);
        return rc;
    }
    *state = s;
    return 0;
}

static int tele_rsmi_sample(void *state, struct tele_gpu *out, size_t cap, size_t *n, char *reason,
                            size_t reasonlen) {
    struct tele_rsmi *s = state;
    (void)reason, (void)reasonlen;
    tele_rsmi_read_procs(&s->procs, s->ctx->roots->proc);
    size_t k = 0;
    for (uint32_t i = 0; i < s->n_devs && k < cap; i++) {
        struct tele_rsmi_raw r;
        tele_rsmi_read(s, &s->devs[i], &r);
        if (!tele_rsmi_map_gpu(&r, &out[k]))
            continue;
        tele_rsmi_map_procs(&s->procs, s->devs[i].dv, (int32_t)s->ctx->self_pid, &out[k]);
        k++;
    }
    *n = k;
    return 0;
}

static void tele_rsmi_close(void *state) {
    if (state)
        tele_rsmi_free(state);
}

const struct tele_prov_ops tele_prov_rsmi_ops = {
    .name = "rocm-smi",
    .caps = TELE_CAP(MEMORY) | TELE_CAP(UTIL) | TELE_CAP(THERMAL) | TELE_CAP(POWER) |
            TELE_CAP(CLOCKS) | TELE_CAP(PCIE) | TELE_CAP(ECC) | TELE_CAP(PROCESSES) |
            TELE_CAP(EVENTS) | TELE_CAP(IDENTITY) | TELE_CAP(FANS),
    .open = tele_rsmi_open,
    .sample = tele_rsmi_sample,
    .close = tele_rsmi_close,
};
