/* ringside doctor: GPU smoke tests, each on a worker thread under a watchdog with its own
 * timeout, so a hang becomes a "fail: hung after N s" row instead of a frozen terminal. */
#include "backend/compute/compute.h"
#include "backend/core/evring.h"
#include "backend/core/mono.h"
#include "backend/core/worker.h"
#include "backend/data/data_synth.h"
#include "backend/vpoc/vpoc.h"
#include "tui/doctor/doctor.h"
#include "tui/doctor/doctor_gpu_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1024.0 * 1024.0)

struct doctor_gpu_run;
typedef void (*doctor_test_fn)(struct doctor_gpu_run *g, struct doctor_out *o);

/* One worker runs the tests in turn; the caller waits for each with a deadline. A test that
 * does not come back leaves the worker (and this struct, which it may still write) behind. */
struct doctor_gpu_run {
    const struct doctor_gpu_opts *opts;
    struct compute *c;
    struct evring *ring; /* with trace: only when a fault is armed */
    struct trace *trace;
    struct worker w;    /* its mutex and monotonic condition variable guard the fields below */
    doctor_test_fn job; /* set by the caller, cleared by the worker when done */
    int arg;            /* the job's argument (the MLP width) */
    struct doctor_out out;
    bool busy;
};

static void *doctor_gpu_worker(void *arg) {
    struct doctor_gpu_run *g = arg;
    pthread_mutex_lock(&g->w.mu);
    for (;;) {
        while (!g->busy && !g->w.stop)
            pthread_cond_wait(&g->w.cv, &g->w.mu);
        if (g->w.stop)
            break;
        doctor_test_fn fn = g->job;
        pthread_mutex_unlock(&g->w.mu);
        struct doctor_out o = {.status = DOCTOR_OK};
        fn(g, &o);
        pthread_mutex_lock(&g->w.mu);
        g->out = o;
        g->busy = false;
        pthread_cond_broadcast(&g->w.cv);
    }
    pthread_mutex_unlock(&g->w.mu);
    return NULL;
}

/* Wait until the job is done or deadline_ns (monotonic) passes; true when done. */
static bool doctor_gpu_wait(struct doctor_gpu_run *g, uint64_t deadline_ns) {
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull),
                          (long)(deadline_ns % 1000000000ull)};
    pthread_mutex_lock(&g->w.mu);
    while (g->busy && pthread_cond_timedwait(&g->w.cv, &g->w.mu, &ts) != ETIMEDOUT)
        ;
    bool done = !g->busy;
    pthread_mutex_unlock(&g->w.mu);
    return done;
}

static void doctor_gpu_post(struct doctor_gpu_run *g, doctor_test_fn fn, int arg) {
    pthread_mutex_lock(&g->w.mu);
    g->job = fn;
    g->arg = arg;
    g->busy = true;
    pthread_cond_broadcast(&g->w.cv);
    pthread_mutex_unlock(&g->w.mu);
}

/* ---- the tests (on the worker) ---- */

static void doctor_t_init(struct doctor_gpu_run *g, struct doctor_out *o) {
    struct compute_conf cc = {.device = g->opts->device, .threads = 1, .trace = g->trace};
    mem_conf_default(&cc.alloc);
    char notice[256], err[512];
    int rc = compute_open(g->opts->backend, &cc, &g->c, notice, sizeof(notice), err, sizeof(err));
    if (rc != 0) {
        o->status = DOCTOR_FAIL;
        snprintf(o->value, sizeof(o->value), "%.255s", err);
        snprintf(o->remedy, sizeof(o->remedy),
                 "check the driver is loaded and the device nodes are yours (see the permissions "
                 "rows)");
        return;
    }
    const struct compute_dev_info *d = &g->c->info;
    snprintf(o->value, sizeof(o->value), "%s (%s), %.1f GiB, on %s", d->name, d->arch,
             (double)d->mem_total_bytes / (MIB * 1024.0), g->c->ops->name);
}

/* Raw allocations doubling from 1 MiB to a quarter of free memory, each freed again. */
static void doctor_t_alloc(struct doctor_gpu_run *g, struct doctor_out *o) {
    struct compute *c = g->c;
    c->ops->mem_info(c);
    uint64_t cap = c->info.mem_valid ? c->info.mem_free_bytes / 4 : (256u << 20);
    if (strcmp(c->ops->name, "cpu") == 0 && cap > (1ull << 30))
        cap = 1ull << 30; /* host memory: proving the path is enough */
    uint64_t size = 1u << 20, ok = 0;
    int steps = 0;
    for (; size <= cap; size *= 2, steps++) {
        void *p = NULL;
        int rc = c->ops->raw_alloc(c, (size_t)size, &p);
        if (rc != 0) {
            o->status = DOCTOR_FAIL;
            snprintf(o->value, sizeof(o->value), "%.0f MiB failed (%s) after %.0f MiB worked",
                     (double)size / MIB, c->ops->strerror(rc), (double)ok / MIB);
            snprintf(o->remedy, sizeof(o->remedy),
                     "another process may hold the memory (ringside probe lists them), or the "
                     "driver limits it (GPU_MAX_ALLOC_PERCENT)");
            return;
        }
        c->ops->raw_free(c, p, (size_t)size);
        ok = size;
    }
    snprintf(o->value, sizeof(o->value),
             "1 MiB to %.0f MiB in %d steps (up to a quarter of the free "
             "memory)",
             (double)ok / MIB, steps);
}

#define DOCTOR_MLP_WARM      5             /* MLP steps before the timed ones */
#define DOCTOR_MLP_STEPS     50            /* timed, each with its synchronize ... */
#define DOCTOR_MLP_MIN       5             /* ... or at least these once the budget is spent */
#define DOCTOR_MLP_BUDGET_NS 1000000000ull /* a second of timed steps per width at most */
#define DOCTOR_MLP_SLOW_MS   1.0 /* a step at batch 256 slower than this is far off any GPU's */

#define DOCTOR_COPY_CHUNK (2u << 20) /* per copy: within the backend's pinned staging */
#define DOCTOR_COPY_BATCH 4          /* copies between two synchronizes */

/* Seconds to move bytes one way in DOCTOR_COPY_CHUNK copies (a sync after every batch, as a
 * pipeline would), or -1. */
static double doctor_copy_s(struct compute *c, unsigned char *dev, unsigned char *host,
                            size_t bytes, bool h2d) {
    uint64_t t0 = mono_now_ns();
    int rc = 0;
    for (size_t off = 0, k = 0; rc == 0 && off < bytes; off += DOCTOR_COPY_CHUNK, k++) {
        size_t n = bytes - off < DOCTOR_COPY_CHUNK ? bytes - off : DOCTOR_COPY_CHUNK;
        rc = h2d ? c->ops->copy_h2d(c, dev + off, host + off, n)
                 : c->ops->copy_d2h(c, host + off, dev + off, n);
        if (rc == 0 && (k + 1) % DOCTOR_COPY_BATCH == 0)
            rc = compute_sync(c, SYNC_OP_STREAM);
    }
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM);
    return rc ? -1 : (double)(mono_now_ns() - t0) / 1e9;
}

/* The PCIe link of the device at pci from sysfs: GB/s one way before protocol overhead (lanes x
 * per-lane rate after line coding), and "Gen4 x16" into text; 0 when it cannot tell. */
static double doctor_pcie_gbs(const char *pci, char *text, size_t n) {
    char path[160], speed[64] = "", width[16] = "";
    text[0] = '\0';
    if (!pci || !pci[0])
        return 0;
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/current_link_speed", pci);
    FILE *f = fopen(path, "r");
    if (f && !fgets(speed, sizeof(speed), f))
        speed[0] = '\0';
    if (f)
        fclose(f);
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/current_link_width", pci);
    f = fopen(path, "r");
    if (f && !fgets(width, sizeof(width), f))
        width[0] = '\0';
    if (f)
        fclose(f);
    double gts = atof(speed);
    int lanes = atoi(width), gen = gts >= 60   ? 6
                                   : gts >= 30 ? 5
                                   : gts >= 15 ? 4
                                   : gts >= 7  ? 3
                                   : gts >= 4  ? 2
                                               : 1;
    if (gts <= 0 || lanes <= 0)
        return 0;
    double lane = gts * (gen >= 3 ? 128.0 / 130.0 : 0.8) / 8.0; /* GB/s after line coding */
    snprintf(text, n, "PCIe Gen%d x%d", gen, lanes);
    return lane * lanes;
}

/* "8.9 GB/s (7.4-8.9)": the fastest copy's rate, then the slowest's to the fastest's. */
static void doctor_copy_spread(const struct compute_copy_rate *r, char *s, size_t n) {
    snprintf(s, n, "%.1f GB/s (%.1f-%.1f)", r->best_gbs, r->worst_gbs, r->best_gbs);
}

/* The fewest copies any of the four figures was taken from. */
static int doctor_copy_count(const struct compute_copy_rate r[2][2]) {
    int n = r[0][0].copies;
    for (int k = 1; k < 4; k++)
        n = r[k / 2][k % 2].copies < n ? r[k / 2][k % 2].copies : n;
    return n;
}

/* The row's value: the four figures with their spreads, and the link when known. */
static void doctor_copy_value(const struct compute_copy_rate r[2][2], const char *link,
                              struct doctor_out *o) {
    char s[2][2][32]; /* [pinned][h2d]: "1000.0 GB/s (1000.0-1000.0)" fits */
    for (int k = 0; k < 4; k++)
        doctor_copy_spread(&r[k / 2][k % 2], s[k / 2][k % 2], sizeof(s[0][0]));
    snprintf(o->value, sizeof(o->value),
             "pinned: to device %s, to host %s; pageable: to device %s, to host %s (256 MiB, one "
             "asynchronous copy, worst-best of %d)%s%s",
             s[1][1], s[1][0], s[0][1], s[0][0], doctor_copy_count(r), link[0] ? "; link " : "",
             link);
}

/* Copies as training loaders move data: large asynchronous transfers from pinned and from
 * pageable host memory, each way, with the spread of several; judged against the link. */
void doctor_gpu_copy_rates(struct compute *c, struct doctor_out *o) {
    struct compute_copy_rate r[2][2] = {{{0}}}; /* [pinned][h2d] */
    int rc = 0;
    for (int p = 1; rc == 0 && p >= 0; p--)
        for (int h = 1; rc == 0 && h >= 0; h--)
            rc = c->ops->copy_rate(c, DOCTOR_COPY_BYTES, p, h, DOCTOR_COPY_REPS, &r[p][h]);
    if (rc != 0) {
        o->status = DOCTOR_FAIL;
        snprintf(o->value, sizeof(o->value), "copying 256 MiB failed: %s", c->ops->strerror(rc));
        return;
    }
    char link[32];
    double link_gbs = doctor_pcie_gbs(c->info.pci, link, sizeof(link));
    doctor_copy_value(r, link, o);
    double pinned = r[1][1].best_gbs < r[1][0].best_gbs ? r[1][1].best_gbs : r[1][0].best_gbs;
    double expect = link_gbs > 0 ? 0.5 * link_gbs : 3.0;
    if (pinned < expect) {
        o->status = DOCTOR_WARN;
        if (link_gbs > 0)
            snprintf(o->remedy, sizeof(o->remedy),
                     "pinned copies reach %.1f GB/s, under half of what %s carries (%.1f GB/s): "
                     "another process copying, a link that trained down, or a slot behind a "
                     "switch; ringside probe shows pcie.link",
                     pinned, link, link_gbs);
        else
            snprintf(o->remedy, sizeof(o->remedy),
                     "pinned copies reach %.1f GB/s, under what any PCIe 3.0 x16 GPU does "
                     "(about 12 GB/s): check the link (ringside probe: pcie.link)",
                     pinned);
    }
}

static void doctor_t_copy(struct doctor_gpu_run *g, struct doctor_out *o) {
    struct compute *c = g->c;
    if (c->ops->copy_rate) {
        doctor_gpu_copy_rates(c, o);
        return;
    }
    size_t bytes = 64u << 20;
    void *dev = NULL;
    unsigned char *host = calloc(1, bytes);
    int rc = host ? c->ops->raw_alloc(c, bytes, &dev) : -ENOMEM;
    double best[2] = {0, 0};
    for (int rep = 0; rc == 0 && rep < 3; rep++)
        for (int k = 0; k < 2; k++) {
            double s = doctor_copy_s(c, dev, host, bytes, k == 0);
            if (s <= 0) {
                rc = -EIO;
                break;
            }
            double gbs = (double)bytes / s / 1e9;
            best[k] = gbs > best[k] ? gbs : best[k];
        }
    if (dev)
        c->ops->raw_free(c, dev, bytes);
    free(host);
    if (rc != 0) {
        o->status = DOCTOR_FAIL;
        snprintf(o->value, sizeof(o->value), "copying 64 MiB failed: %s", c->ops->strerror(rc));
        return;
    }
    snprintf(o->value, sizeof(o->value),
             "host to device %.1f GB/s, device to host %.1f GB/s "
             "(64 MiB in 2 MiB copies through the backend, best of 3)",
             best[0], best[1]);
}

static int doctor_u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void doctor_t_sync(struct doctor_gpu_run *g, struct doctor_out *o) {
    enum { N = 200 };
    uint64_t ns[N];
    for (int k = 0; k < N; k++) {
        uint64_t t0 = mono_now_ns();
        int rc = compute_sync(g->c, SYNC_OP_STREAM);
        ns[k] = mono_now_ns() - t0;
        if (rc != 0) {
            o->status = DOCTOR_FAIL;
            snprintf(o->value, sizeof(o->value), "an empty synchronize failed: %s",
                     g->c->ops->strerror(rc));
            return;
        }
    }
    qsort(ns, N, sizeof(ns[0]), doctor_u64_cmp);
    snprintf(o->value, sizeof(o->value), "empty stream sync: p50 %.1f us, p99 %.1f us, max %.1f us",
             (double)ns[N / 2] / 1e3, (double)ns[N * 99 / 100] / 1e3, (double)ns[N - 1] / 1e3);
}

/* The VPOC kernel on five synthetic days against the CPU reference: the training loop's packed
 * path, every session at once in chunks of 500 bars. */
static void doctor_t_vpoc(struct doctor_gpu_run *g, struct doctor_out *o) {
    struct data_series ds;
    struct data_sessions ss = {0};
    struct data_synth_opts so = {.days = 5, .seed = 42, .start_hour = 18, .tick = 0.25};
    data_series_init(&ds);
    int rc = data_synth_generate(&so, &ds);
    rc = rc ? rc : data_sessions_split(&ds, 18, &ss);
    struct vpoc_bar *bars = rc ? NULL : malloc(ds.n * sizeof(*bars));
    struct vpoc_params p = {VPOC_CLOSE, 0.25, 0.70};
    size_t bad = 0;
    char err[512] = "";
    uint64_t t0 = mono_now_ns();
    if (bars)
        vpoc_bars_from_series(ds.bars, ds.n, bars);
    struct vpoc_result *got = rc || !bars ? NULL : calloc(ss.n ? ss.n : 1, sizeof(*got));
    if (got) /* the training loop's path: every session at once, chunks of 500 bars */
        rc = compute_vpoc_all(g->c, bars, &ss, &p, 500, COMPUTE_VPOC_PACKED, got, err, sizeof(err));
    double ms = (double)(mono_now_ns() - t0) / 1e6; /* packing, upload and one pass */
    for (size_t k = 0; got && rc == 0 && k < ss.n; k++) {
        struct vpoc_result want;
        if (vpoc_session(bars + ss.s[k].first, ss.s[k].n, &p, &want) == 0)
            bad += got[k].poc_level != want.poc_level || got[k].vah_level != want.vah_level ||
                   got[k].val_level != want.val_level;
    }
    if (rc != 0 || !got || bad) {
        o->status = DOCTOR_FAIL;
        snprintf(o->value, sizeof(o->value), "%s",
                 rc || !got ? (err[0] ? err : "could not run") : "results differ from the CPU");
        if (bad)
            snprintf(o->value, sizeof(o->value),
                     "%zu of %zu sessions differ from the CPU "
                     "reference",
                     bad, ss.n);
        snprintf(o->remedy, sizeof(o->remedy),
                 "a kernel that runs but computes wrong: try the matching ROCm/driver versions; "
                 "report with 'ringside doctor --markdown'");
    } else {
        snprintf(o->value, sizeof(o->value), "%zu sessions match the CPU reference (%.1f ms)", ss.n,
                 ms);
    }
    free(got);
    free(bars);
    data_sessions_fini(&ss);
    data_series_fini(&ds);
}

/* One training step (forward, loss, backward, Adam, sync) of a 24-W-W-1 MLP at batch 256. */
static void doctor_t_mlp(struct doctor_gpu_run *g, struct doctor_out *o) {
    struct compute *c = g->c;
    const struct compute_ops *ops = c->ops;
    int w = g->arg;
    struct compute_mlp_init in = {.arch = {.n_in = 24, .n_hidden = 2, .hidden = {w, w}},
                                  .max_rows = 256};
    mlp_adam_conf_default(&in.adam);
    size_t np = mlp_param_count(&in.arch), rows = 256;
    double *params = malloc(np * sizeof(double)), *x = malloc(rows * 24 * sizeof(double));
    double *y = malloc(rows * sizeof(double)), loss = 0;
    void *dx = NULL, *dy = NULL;
    struct compute_mlp *m = NULL;
    int rc = params && x && y ? 0 : -ENOMEM;
    if (rc == 0) {
        mlp_init_params(&in.arch, 7, params);
        for (size_t i = 0; i < rows * 24; i++)
            x[i] = (double)((i * 2654435761u) % 1000) / 1000.0 - 0.5;
        for (size_t i = 0; i < rows; i++)
            y[i] = x[i * 24] * 0.5;
        in.params = params;
        rc = ops->mlp_create(c, &in, &m);
    }
    rc = rc ? rc : compute_alloc(c, rows * 24 * ops->elem_bytes, &dx, NULL, 0);
    rc = rc ? rc : compute_alloc(c, rows * ops->elem_bytes, &dy, NULL, 0);
    rc = rc ? rc : ops->upload_f64(c, dx, x, rows * 24);
    rc = rc ? rc : ops->upload_f64(c, dy, y, rows);
    rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM);
    uint64_t t0 = mono_now_ns();
    int steps = 0;
    for (int k = 0; rc == 0 && k < DOCTOR_MLP_WARM + DOCTOR_MLP_STEPS; k++) {
        if (k == DOCTOR_MLP_WARM) { /* the first steps load code and caches: not timed */
            t0 = mono_now_ns();
            steps = 0;
        }
        /* a slow device (the CPU rehearsing, a debug build) is measured in fewer steps */
        if (k > DOCTOR_MLP_WARM && steps >= DOCTOR_MLP_MIN &&
            mono_now_ns() - t0 > DOCTOR_MLP_BUDGET_NS)
            break;
        rc = ops->mlp_forward(c, m, dx, rows);
        rc = rc ? rc : ops->mlp_loss(c, m, dy, rows, &loss);
        rc = rc ? rc : ops->mlp_backward(c, m, dx, dy, rows);
        rc = rc ? rc : ops->mlp_optimizer(c, m);
        rc = rc ? rc : compute_sync(c, SYNC_OP_STREAM);
        steps++;
    }
    double ms = (double)(mono_now_ns() - t0) / 1e6 / (steps ? steps : 1);
    if (rc != 0 || loss != loss) {
        o->status = DOCTOR_FAIL;
        snprintf(o->value, sizeof(o->value), "%s",
                 rc ? ops->strerror(rc) : "the loss is not a number");
        snprintf(o->remedy, sizeof(o->remedy),
                 "the sizes that fail narrow it down; report with 'ringside doctor --markdown'");
    } else {
        snprintf(o->value, sizeof(o->value),
                 "%.3f ms per step (batch 256, %d steps after %d to warm up), loss %.4f", ms, steps,
                 DOCTOR_MLP_WARM, loss);
        if (ms > DOCTOR_MLP_SLOW_MS && strcmp(ops->name, "cpu") != 0) {
            o->status = DOCTOR_WARN;
            snprintf(o->remedy, sizeof(o->remedy),
                     "a GPU takes well under %.1f ms for this step (a synchronize and five small "
                     "kernels): low clocks or a power cap (ringside probe), another process on "
                     "the GPU, or a debug build",
                     DOCTOR_MLP_SLOW_MS);
        }
    }
    if (m)
        ops->mlp_destroy(c, m);
    compute_free(c, dx);
    compute_free(c, dy);
    free(params);
    free(x);
    free(y);
}

static void doctor_t_probe(struct doctor_gpu_run *g, struct doctor_out *o) {
    uint64_t largest = 0;
    int rc = g->c->ops->mem_probe ? g->c->ops->mem_probe(g->c, &largest) : -ENOTSUP;
    if (rc != 0) {
        o->status = rc == -ENOTSUP ? DOCTOR_SKIP : DOCTOR_FAIL;
        snprintf(o->value, sizeof(o->value), "%s",
                 rc == -ENOTSUP ? "this backend cannot tell" : g->c->ops->strerror(rc));
        return;
    }
    g->c->ops->mem_info(g->c);
    snprintf(o->value, sizeof(o->value), "largest allocatable block %.0f MiB of %.0f MiB free",
             (double)largest / MIB, (double)g->c->info.mem_free_bytes / MIB);
}

/* The hang kernel for hang_s, waited for through the traced sync. */
static void doctor_t_hang(struct doctor_gpu_run *g, struct doctor_out *o) {
    int rc = g->c->ops->inject_hang(g->c, (uint64_t)(g->opts->hang_s * 1e9));
    rc = rc ? rc : compute_sync(g->c, SYNC_OP_STREAM);
    if (rc != 0) {
        o->status = DOCTOR_FAIL;
        snprintf(o->value, sizeof(o->value), "the hang kernel failed: %s", g->c->ops->strerror(rc));
    }
}

/* ---- the caller's side ---- */

static const int doctor_mlp_widths[] = {16, 32, 64, 128, 256}; /* up to the kernels' widest */

/* The rows this runs, in order, for skip rows too. */
static void doctor_gpu_names(char names[][48], size_t *n) {
    static const char *const fixed[] = {"device init", "allocation", "copies", "sync latency",
                                        "VPOC kernel"};
    *n = 0;
    for (size_t k = 0; k < 5; k++)
        snprintf(names[(*n)++], 48, "%s", fixed[k]);
    for (size_t k = 0; k < sizeof(doctor_mlp_widths) / sizeof(doctor_mlp_widths[0]); k++)
        snprintf(names[(*n)++], 48, "MLP 24-%d-%d-1", doctor_mlp_widths[k], doctor_mlp_widths[k]);
    snprintf(names[(*n)++], 48, "memory probe");
    snprintf(names[(*n)++], 48, "hang watchdog");
}

static void doctor_gpu_skip_all(struct doctor_report *r, size_t from, const char *why) {
    char names[16][48];
    size_t n;
    doctor_gpu_names(names, &n);
    for (size_t k = from; k < n; k++)
        doctor_remedy(doctor_add(r, "gpu", names[k], DOCTOR_SKIP, "not run"), "%s", why);
}

/* Run fn with the per-test timeout; the row, or "hung after N s" (and *hung set). */
static bool doctor_gpu_row(struct doctor_gpu_run *g, struct doctor_report *r, const char *name,
                           doctor_test_fn fn, int arg) {
    uint64_t t0 = mono_now_ns();
    doctor_gpu_post(g, fn, arg);
    if (!doctor_gpu_wait(g, t0 + (uint64_t)(g->opts->timeout_s * 1e9))) {
        doctor_remedy(
            doctor_add(r, "gpu", name, DOCTOR_FAIL, "hung after %.0f s", g->opts->timeout_s),
            "the call never returned: look at the kernel-log rows and 'dmesg | grep "
            "-iE \"amdgpu|nvrm\"' for a ring timeout or Xid; the GPU may need a reset");
        return false;
    }
    struct doctor_row *row = doctor_add(r, "gpu", name, g->out.status, "%s", g->out.value);
    if (g->out.remedy[0])
        doctor_remedy(row, "%s", g->out.remedy);
    return true;
}

/* The hang kernel's row: the watchdog must see the sync in flight past half the hang, and the
 * kernel must end on time after it. false when it did not come back. */
static bool doctor_gpu_hang_row(struct doctor_gpu_run *g, struct doctor_report *r,
                                const char *name) {
    double flag_s = g->opts->hang_s / 2;
    uint64_t t0 = mono_now_ns();
    doctor_gpu_post(g, doctor_t_hang, 0);
    bool early = doctor_gpu_wait(g, t0 + (uint64_t)(flag_s * 1e9));
    double flagged = (double)(mono_now_ns() - t0) / 1e9;
    bool done = early || doctor_gpu_wait(g, t0 + (uint64_t)(g->opts->timeout_s * 1e9));
    double took = (double)(mono_now_ns() - t0) / 1e9;
    if (!done) {
        doctor_remedy(doctor_add(r, "gpu", name, DOCTOR_FAIL,
                                 "hung after %.0f s: a %.1f s "
                                 "hang kernel never ended",
                                 g->opts->timeout_s, g->opts->hang_s),
                      "the device ignores its own clock limit: look at the kernel-log rows");
        return false;
    }
    if (g->out.status != DOCTOR_OK) {
        doctor_add(r, "gpu", name, g->out.status, "%s", g->out.value);
        return true;
    }
    struct doctor_row *row =
        doctor_add(r, "gpu", name, early ? DOCTOR_FAIL : DOCTOR_OK,
                   "a %.1f s hang kernel: the watchdog saw it in flight at %.1f s, and it was "
                   "released on time after %.2f s",
                   g->opts->hang_s, flagged, took);
    if (early)
        doctor_remedy(row, "the hang kernel ended before its time: the device clock runs fast or "
                           "the kernel did not run");
    return true;
}

/* One test by its row index; false when it did not come back. */
static bool doctor_gpu_test(struct doctor_gpu_run *g, struct doctor_report *r, size_t k,
                            const char *name) {
    static const doctor_test_fn fixed[] = {doctor_t_init, doctor_t_alloc, doctor_t_copy,
                                           doctor_t_sync, doctor_t_vpoc};
    size_t n_mlp = sizeof(doctor_mlp_widths) / sizeof(doctor_mlp_widths[0]);
    static const enum ev_phase_id phases[] = {PHASE_LOAD, PHASE_H2D, PHASE_H2D, PHASE_CLEANUP,
                                              PHASE_VPOC};
    if (g->trace)
        trace_set_phase(g->trace, 0,
                        k < 5           ? phases[k]
                        : k < 5 + n_mlp ? PHASE_SYNC
                                        : PHASE_CLEANUP);
    if (k < 5)
        return doctor_gpu_row(g, r, name, fixed[k], 0);
    if (k < 5 + n_mlp) {
        int w = doctor_mlp_widths[k - 5];
        if (w <= MLP_MAX_WIDTH)
            return doctor_gpu_row(g, r, name, doctor_t_mlp, w);
        doctor_remedy(
            doctor_add(r, "gpu", name, DOCTOR_SKIP, "wider than the kernels' %d", MLP_MAX_WIDTH),
            "the MLP kernels hold layers up to %d wide", MLP_MAX_WIDTH);
        return true;
    }
    if (k == 5 + n_mlp)
        return doctor_gpu_row(g, r, name, doctor_t_probe, 0);
    if (g->c->ops->inject_hang)
        return doctor_gpu_hang_row(g, r, name);
    doctor_remedy(doctor_add(r, "gpu", name, DOCTOR_SKIP, "not run"),
                  "this backend has no hang kernel");
    return true;
}

void doctor_check_gpu(const struct doctor_gpu_opts *opts, struct doctor_report *r, bool *hung) {
    *hung = false;
    if (!opts->backend[0]) {
        doctor_gpu_skip_all(r, 0, opts->skip_reason);
        return;
    }
    struct doctor_gpu_run *g = calloc(1, sizeof(*g)); /* left behind if a test hangs */
    if (!g) {
        doctor_gpu_skip_all(r, 0, "out of memory");
        return;
    }
    g->opts = opts;
    if (opts->inject[0]) { /* a rehearsal: the tests' syncs are traced, the fault armed */
        struct trace_inject in;
        char err[256];
        if (evring_create(&g->ring, 1024) != 0 || trace_create(&g->trace, g->ring, 1) != 0 ||
            trace_inject_parse(opts->inject, &in, err, sizeof(err)) != 0 ||
            trace_add_inject(g->trace, 0, &in) != 0) {
            doctor_gpu_skip_all(r, 0, "the fault could not be armed");
            trace_destroy(g->trace);
            evring_destroy(g->ring);
            free(g);
            return;
        }
    }
    worker_init(&g->w);
    if (worker_start(&g->w, doctor_gpu_worker, g) != 0) {
        worker_fini(&g->w);
        trace_destroy(g->trace);
        evring_destroy(g->ring);
        free(g);
        doctor_gpu_skip_all(r, 0, "cannot start a thread");
        return;
    }
    char names[16][48];
    size_t n;
    doctor_gpu_names(names, &n);
    for (size_t k = 0; k < n; k++) {
        if (!doctor_gpu_test(g, r, k, names[k])) {
            *hung = true;
            doctor_gpu_skip_all(r, k + 1, "an earlier GPU test hung; the device is not trusted");
            return; /* the worker, g and the device stay as they are: the caller _exits */
        }
        if (k == 0 && !g->c) {
            doctor_gpu_skip_all(r, 1, "the device did not open");
            break;
        }
    }
    worker_fini(&g->w); /* the worker is idle: it sees stop at once */
    compute_close(g->c);
    trace_destroy(g->trace);
    evring_destroy(g->ring);
    free(g);
}
