/* Benchmark (not a test) of ringside's CPU reference code: VPOC bars/s, MLP samples/s and the
 * caching allocator against malloc, as a readable table or, with --json, JSON lines. */
#include "backend/compute/compute.h"
#include "backend/data/data_series.h"
#include "backend/data/data_synth.h"
#include "backend/memory/mem_conf.h"
#include "backend/memory/mem_pool.h"
#include "backend/mlp/mlp.h"
#include "backend/vpoc/vpoc.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_CPU_MAX_REPS     15
#define BENCH_CPU_DAYS         60
#define BENCH_CPU_START_HOUR   18
#define BENCH_CPU_CHUNK        500
#define BENCH_CPU_MLP_ROWS     4096 /* random samples; batches cycle through them */
#define BENCH_CPU_SLOTS        1024 /* live allocations of the mixed pattern */
#define BENCH_CPU_ALLOC_OPS    65536
#define BENCH_CPU_VPOC_CALLS   8 /* alloc hist, 3 x (alloc + free chunk), free hist */
#define BENCH_CPU_SESSION_BARS 1380

/* Every measured result is folded in here, so the optimizer must keep the work. */
static volatile double bench_cpu_sink;

struct bench_cpu_opts {
    bool json, quick;
    double run_s; /* target length of one timed run */
    int reps;     /* timed runs after the warm-up; odd, so the median is one of them */
};

struct bench_cpu_result {
    double rate, rate_min, rate_max; /* units per second: median, slowest, fastest run */
    double run_ms;                   /* median run time */
    uint64_t iters;                  /* iterations per run */
};

/* One measured case: does iters iterations and reports the work units done. 0 or -errno. */
typedef int (*bench_cpu_fn)(void *ctx, uint64_t iters, double *units);

static double bench_cpu_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench_cpu_time(bench_cpu_fn fn, void *ctx, uint64_t iters, double *s, double *units) {
    double t0 = bench_cpu_now_s();
    int rc = fn(ctx, iters, units);
    *s = bench_cpu_now_s() - t0;
    return rc;
}

/* Double iters until a run lasts a quarter of the target (this warms caches, pools and
 * threads), then scale to the target. */
static int bench_cpu_calibrate(const struct bench_cpu_opts *o, bench_cpu_fn fn, void *ctx,
                               uint64_t *iters) {
    double s = 0, units = 0;
    uint64_t n = 1;
    int rc = bench_cpu_time(fn, ctx, 1, &s, &units); /* cold: first touches, thread starts */
    while (rc == 0) {
        rc = bench_cpu_time(fn, ctx, n, &s, &units);
        if (rc != 0 || s >= o->run_s / 4 || n >= ((uint64_t)1 << 40))
            break;
        n *= 2;
    }
    if (rc != 0)
        return rc;
    double scaled = (double)n * o->run_s / (s > 1e-9 ? s : 1e-9);
    *iters = scaled < 1.0 ? 1 : (uint64_t)scaled;
    return 0;
}

static int bench_cpu_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Calibrate, one warm-up run at the final size, then o->reps timed runs; median. */
static int bench_cpu_measure(const struct bench_cpu_opts *o, bench_cpu_fn fn, void *ctx,
                             struct bench_cpu_result *r) {
    double secs[BENCH_CPU_MAX_REPS], rates[BENCH_CPU_MAX_REPS], units = 0, warm_s = 0;
    int rc = bench_cpu_calibrate(o, fn, ctx, &r->iters);
    rc = rc ? rc : bench_cpu_time(fn, ctx, r->iters, &warm_s, &units);
    for (int k = 0; rc == 0 && k < o->reps; k++) {
        rc = bench_cpu_time(fn, ctx, r->iters, &secs[k], &units);
        rates[k] = units / (secs[k] > 1e-12 ? secs[k] : 1e-12);
    }
    if (rc != 0)
        return rc;
    qsort(secs, (size_t)o->reps, sizeof(double), bench_cpu_cmp_double);
    qsort(rates, (size_t)o->reps, sizeof(double), bench_cpu_cmp_double);
    r->rate = rates[o->reps / 2];
    r->rate_min = rates[0];
    r->rate_max = rates[o->reps - 1];
    r->run_ms = secs[o->reps / 2] * 1e3;
    return 0;
}

/* ---- output ---- */

static void bench_cpu_json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static const char *bench_cpu_si(double v, char *buf, size_t len) {
    static const char *const prefix[] = {"", "k", "M", "G"};
    int k = 0;
    for (; k < 3 && v >= 1000.0; k++)
        v /= 1000.0;
    snprintf(buf, len, "%.2f %s", v, prefix[k]);
    return buf;
}

static void bench_cpu_row(const struct bench_cpu_opts *o, const char *group, const char *name,
                          const char *unit, const struct bench_cpu_result *r) {
    if (o->json) {
        printf("{\"bench\":\"%s\",\"case\":", group);
        bench_cpu_json_str(name);
        printf(",\"unit\":\"%s\",\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,\"run_ms\":%.3f,"
               "\"iters\":%llu,\"reps\":%d}\n",
               unit, r->rate, r->rate_min, r->rate_max, r->run_ms, (unsigned long long)r->iters,
               o->reps);
    } else {
        char buf[32];
        double spread = r->rate > 0 ? (r->rate_max - r->rate_min) / r->rate * 100.0 : 0.0;
        printf("%-6s %-36s %10s%-10s %9.2f %7.1f%% %9llu\n", group, name,
               bench_cpu_si(r->rate, buf, sizeof(buf)), unit, r->run_ms, spread,
               (unsigned long long)r->iters);
    }
    fflush(stdout);
}

static void bench_cpu_ratio(const struct bench_cpu_opts *o, const char *group, const char *name,
                            double num, double den) {
    double v = den > 0 ? num / den : 0.0;
    if (o->json) {
        printf("{\"bench\":\"%s\",\"ratio\":", group);
        bench_cpu_json_str(name);
        printf(",\"value\":%.4f}\n", v);
    } else {
        printf("%-6s %-36s %9.3fx\n", group, name, v);
    }
    fflush(stdout);
}

static void bench_cpu_cpu_model(char *out, size_t len) {
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(out, len, "unknown");
    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        snprintf(out, len, "%s", colon + 2);
        out[strcspn(out, "\n")] = '\0';
        break;
    }
    if (f)
        fclose(f);
}

/* The 1-minute load average: other work on the machine skews every number. */
static double bench_cpu_load(void) {
    double load = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &load) != 1)
        load = -1.0;
    if (f)
        fclose(f);
    return load;
}

static const char *bench_cpu_build_hint(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return "sanitized (numbers not representative)";
#elif defined(__OPTIMIZE__) && defined(NDEBUG)
    return "Release-like (optimized, NDEBUG)";
#elif defined(__OPTIMIZE__)
    return "optimized, assertions on (RelWithDebInfo/custom?)";
#else
    return "Debug-like (not optimized): numbers not representative";
#endif
}

#if defined(__clang__)
#define BENCH_CPU_COMPILER "clang " __VERSION__
#elif defined(__GNUC__)
#define BENCH_CPU_COMPILER "gcc " __VERSION__
#else
#define BENCH_CPU_COMPILER __VERSION__
#endif

static void bench_cpu_header(const struct bench_cpu_opts *o) {
    char cpu[256];
    bench_cpu_cpu_model(cpu, sizeof(cpu));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (o->json) {
        printf("{\"bench\":\"meta\",\"cpu\":");
        bench_cpu_json_str(cpu);
        printf(",\"cores\":%ld,\"loadavg\":%.2f,\"compiler\":", cores, bench_cpu_load());
        bench_cpu_json_str(BENCH_CPU_COMPILER);
        printf(",\"build\":\"%s\",\"quick\":%s,\"reps\":%d,\"target_run_ms\":%.0f}\n",
               bench_cpu_build_hint(), o->quick ? "true" : "false", o->reps, o->run_s * 1e3);
        return;
    }
    printf("ringside bench_cpu%s\ncpu:      %s (%ld online, load %.2f at start)\n"
           "compiler: %s\nbuild:    %s\n",
           o->quick ? " --quick" : "", cpu, cores, bench_cpu_load(), BENCH_CPU_COMPILER,
           bench_cpu_build_hint());
    printf("method:   median of %d runs of ~%.0f ms after calibration and a warm-up run;\n"
           "          spread = (fastest - slowest) / median; op = one alloc or free call\n\n",
           o->reps, o->run_s * 1e3);
    printf("%-6s %-36s %20s %9s %8s %9s\n", "group", "case", "rate (median)", "ms/run", "spread",
           "iters");
}

/* ---- 1. VPOC ---- */

struct bench_cpu_data {
    struct data_series ds;
    struct data_sessions ss;
    struct vpoc_bar *bars; /* the whole series, converted */
};

struct bench_cpu_vpoc {
    const struct bench_cpu_data *d;
    struct vpoc_params p;
    struct compute *c; /* NULL: plain vpoc_session */
    size_t chunk;      /* 0: the whole session as one chunk */
};

static int bench_cpu_data_init(struct bench_cpu_data *d) {
    struct data_synth_opts so = {BENCH_CPU_DAYS, 20240102, BENCH_CPU_START_HOUR, 0.25};
    data_series_init(&d->ds);
    d->ss = (struct data_sessions){NULL, 0};
    int rc = data_synth_generate(&so, &d->ds);
    rc = rc ? rc : data_sessions_split(&d->ds, BENCH_CPU_START_HOUR, &d->ss);
    d->bars = rc ? NULL : malloc((d->ds.n ? d->ds.n : 1) * sizeof(struct vpoc_bar));
    if (rc == 0 && !d->bars)
        rc = -ENOMEM;
    if (rc == 0)
        vpoc_bars_from_series(d->ds.bars, d->ds.n, d->bars);
    return rc;
}

static void bench_cpu_data_fini(struct bench_cpu_data *d) {
    free(d->bars);
    data_sessions_fini(&d->ss);
    data_series_fini(&d->ds);
}

static int bench_cpu_vpoc_one(const struct bench_cpu_vpoc *v, const struct vpoc_bar *bars, size_t n,
                              struct vpoc_result *out) {
    if (!v->c)
        return vpoc_session(bars, n, &v->p, out);
    char err[256] = "";
    int rc = compute_vpoc_session(v->c, bars, n, &v->p, v->chunk ? v->chunk : n, out, NULL, NULL,
                                  err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "bench_cpu: %s\n", err);
    return rc;
}

/* One iteration = every session of the series; units = bars. */
static int bench_cpu_vpoc_run(void *ctx, uint64_t iters, double *units) {
    const struct bench_cpu_vpoc *v = ctx;
    double bars = 0, acc = 0;
    for (uint64_t it = 0; it < iters; it++) {
        for (size_t i = 0; i < v->d->ss.n; i++) {
            const struct data_session *s = &v->d->ss.s[i];
            struct vpoc_result res;
            int rc = s->n ? bench_cpu_vpoc_one(v, v->d->bars + s->first, s->n, &res) : 0;
            if (rc != 0)
                return rc;
            acc += s->n ? res.poc + (double)res.total_fix : 0.0;
            bars += (double)s->n;
        }
    }
    bench_cpu_sink += acc;
    *units = bars;
    return 0;
}

static int bench_cpu_open(int threads, struct compute **out) {
    struct compute_conf conf = {.device = 0, .threads = threads, .trace = NULL};
    char notice[256], err[256] = "";
    mem_conf_default(&conf.alloc);
    int rc = compute_open("cpu", &conf, out, notice, sizeof(notice), err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "bench_cpu: cannot open the cpu backend: %s\n", err);
    return rc;
}

static int bench_cpu_vpoc_profile(const struct bench_cpu_opts *o, struct bench_cpu_vpoc *v,
                                  struct compute *c) {
    static const char *const names[] = {"chunk500 (compute path)", "whole session (compute path)",
                                        "reference vpoc_session"};
    const char *prof = v->p.profile == VPOC_CLOSE ? "close" : "range";
    struct bench_cpu_result r[3];
    for (int k = 0; k < 3; k++) {
        char name[64];
        v->c = k < 2 ? c : NULL;
        v->chunk = k == 0 ? BENCH_CPU_CHUNK : 0;
        int rc = bench_cpu_measure(o, bench_cpu_vpoc_run, v, &r[k]);
        if (rc != 0)
            return rc;
        snprintf(name, sizeof(name), "%s %s", prof, names[k]);
        bench_cpu_row(o, "vpoc", name, "bars/s", &r[k]);
    }
    char name[64];
    snprintf(name, sizeof(name), "%s chunk500/whole", prof);
    bench_cpu_ratio(o, "vpoc", name, r[0].rate, r[1].rate);
    snprintf(name, sizeof(name), "%s chunk500/reference", prof);
    bench_cpu_ratio(o, "vpoc", name, r[0].rate, r[2].rate);
    return 0;
}

static int bench_cpu_vpoc(const struct bench_cpu_opts *o) {
    struct bench_cpu_data d;
    struct compute *c = NULL;
    int rc = bench_cpu_data_init(&d);
    rc = rc ? rc : bench_cpu_open(1, &c);
    struct bench_cpu_vpoc v = {.d = &d, .p = {VPOC_CLOSE, 0.25, 0.70}};
    rc = rc ? rc : bench_cpu_vpoc_profile(o, &v, c);
    v.p.profile = VPOC_RANGE;
    rc = rc ? rc : bench_cpu_vpoc_profile(o, &v, c);
    compute_close(c);
    bench_cpu_data_fini(&d);
    return rc;
}

/* ---- 2. MLP ---- */

struct bench_cpu_mlp {
    struct mlp_arch arch;
    size_t batch, n_params;
    double *x, *y, *params0; /* host data and the initial parameters */
    /* reference path */
    double *params, *scratch, *grad, *out;
    struct mlp_adam adam;
    /* compute path */
    struct compute *c;
    struct compute_mlp *m;
    void *dx, *dy;
};

static uint64_t bench_cpu_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double bench_cpu_unit(uint64_t *s) {
    return (double)(bench_cpu_rand(s) >> 11) * 0x1.0p-53;
}

static int bench_cpu_mlp_init(struct bench_cpu_mlp *b) {
    *b = (struct bench_cpu_mlp){.arch = {24, 2, {32, 16}, MLP_ACT_SILU, MLP_LOSS_MSE}};
    b->n_params = mlp_param_count(&b->arch);
    b->x = malloc(BENCH_CPU_MLP_ROWS * 24 * sizeof(double));
    b->y = malloc(BENCH_CPU_MLP_ROWS * sizeof(double));
    b->params0 = malloc(b->n_params * sizeof(double));
    if (!b->x || !b->y || !b->params0)
        return -ENOMEM;
    uint64_t s = 42;
    for (size_t i = 0; i < BENCH_CPU_MLP_ROWS * 24; i++)
        b->x[i] = bench_cpu_unit(&s) * 2.0 - 1.0;
    for (size_t i = 0; i < BENCH_CPU_MLP_ROWS; i++)
        b->y[i] = bench_cpu_unit(&s) - 0.5;
    mlp_init_params(&b->arch, 7, b->params0);
    return 0;
}

static int bench_cpu_ref_setup(struct bench_cpu_mlp *b, size_t batch) {
    struct mlp_adam_conf ac;
    mlp_adam_conf_default(&ac);
    b->batch = batch;
    b->params = malloc(b->n_params * sizeof(double));
    b->grad = malloc(b->n_params * sizeof(double));
    b->out = malloc(batch * sizeof(double));
    b->scratch = malloc(mlp_scratch_count(&b->arch, batch) * sizeof(double));
    if (!b->params || !b->grad || !b->out || !b->scratch)
        return -ENOMEM;
    memcpy(b->params, b->params0, b->n_params * sizeof(double));
    return mlp_adam_init(&b->adam, &ac, b->n_params);
}

static void bench_cpu_ref_teardown(struct bench_cpu_mlp *b) {
    mlp_adam_fini(&b->adam);
    b->adam = (struct mlp_adam){0};
    free(b->params);
    free(b->grad);
    free(b->out);
    free(b->scratch);
    b->params = b->grad = b->out = b->scratch = NULL;
}

/* One iteration = one training step on the next batch; units = samples. */
static int bench_cpu_ref_run(void *ctx, uint64_t iters, double *units) {
    struct bench_cpu_mlp *b = ctx;
    const struct mlp_arch *a = &b->arch;
    size_t n_batches = BENCH_CPU_MLP_ROWS / b->batch;
    double acc = 0;
    for (uint64_t it = 0; it < iters; it++) {
        size_t off = (size_t)(it % n_batches) * b->batch;
        const double *x = b->x + off * 24, *y = b->y + off;
        mlp_forward(a, b->params, x, b->batch, b->scratch, b->out);
        acc += mlp_loss_mean(a, b->out, y, b->batch);
        mlp_backward(a, b->params, x, y, b->batch, (double)b->batch, b->scratch, b->grad);
        mlp_adam_step(&b->adam, b->params, b->grad);
    }
    bench_cpu_sink += acc + b->params[0];
    *units = (double)iters * (double)b->batch;
    return 0;
}

static int bench_cpu_dev_setup(struct bench_cpu_mlp *b, int threads, size_t batch) {
    struct compute_mlp_init mi = {.arch = b->arch, .params = b->params0, .max_rows = batch};
    mlp_adam_conf_default(&mi.adam);
    b->batch = batch;
    int rc = bench_cpu_open(threads, &b->c);
    if (rc != 0)
        return rc;
    const struct compute_ops *ops = b->c->ops;
    size_t eb = ops->elem_bytes;
    rc = compute_alloc(b->c, BENCH_CPU_MLP_ROWS * 24 * eb, &b->dx, NULL, 0);
    rc = rc ? rc : compute_alloc(b->c, BENCH_CPU_MLP_ROWS * eb, &b->dy, NULL, 0);
    rc = rc ? rc : ops->upload_f64(b->c, b->dx, b->x, BENCH_CPU_MLP_ROWS * 24);
    rc = rc ? rc : ops->upload_f64(b->c, b->dy, b->y, BENCH_CPU_MLP_ROWS);
    rc = rc ? rc : ops->mlp_create(b->c, &mi, &b->m);
    int src = compute_sync(b->c, SYNC_OP_STREAM);
    return rc ? rc : src;
}

static void bench_cpu_dev_teardown(struct bench_cpu_mlp *b) {
    if (!b->c)
        return;
    if (b->m)
        b->c->ops->mlp_destroy(b->c, b->m);
    compute_free(b->c, b->dx);
    compute_free(b->c, b->dy);
    compute_close(b->c);
    b->c = NULL;
    b->m = NULL;
    b->dx = b->dy = NULL;
}

/* The product's step: forward, loss, backward, Adam, then a stream sync. */
static int bench_cpu_dev_step(struct bench_cpu_mlp *b, size_t off, double *loss) {
    const struct compute_ops *ops = b->c->ops;
    size_t eb = ops->elem_bytes;
    const char *x = (const char *)b->dx + off * 24 * eb, *y = (const char *)b->dy + off * eb;
    int rc = ops->mlp_forward(b->c, b->m, x, b->batch);
    rc = rc ? rc : ops->mlp_loss(b->c, b->m, y, b->batch, loss);
    rc = rc ? rc : ops->mlp_backward(b->c, b->m, x, y, b->batch);
    rc = rc ? rc : ops->mlp_optimizer(b->c, b->m);
    int src = compute_sync(b->c, SYNC_OP_STREAM); /* always: loss must not outlive the stream */
    return rc ? rc : src;
}

static int bench_cpu_dev_run(void *ctx, uint64_t iters, double *units) {
    struct bench_cpu_mlp *b = ctx;
    size_t n_batches = BENCH_CPU_MLP_ROWS / b->batch;
    double acc = 0;
    for (uint64_t it = 0; it < iters; it++) {
        double loss = 0;
        int rc = bench_cpu_dev_step(b, (size_t)(it % n_batches) * b->batch, &loss);
        if (rc != 0)
            return rc;
        acc += loss;
    }
    bench_cpu_sink += acc;
    *units = (double)iters * (double)b->batch;
    return 0;
}

static int bench_cpu_mlp_ref_case(const struct bench_cpu_opts *o, struct bench_cpu_mlp *b,
                                  size_t batch, const char *name, struct bench_cpu_result *r) {
    int rc = bench_cpu_ref_setup(b, batch);
    rc = rc ? rc : bench_cpu_measure(o, bench_cpu_ref_run, b, r);
    bench_cpu_ref_teardown(b);
    if (rc == 0)
        bench_cpu_row(o, "mlp", name, "samples/s", r);
    return rc;
}

static int bench_cpu_mlp_dev_case(const struct bench_cpu_opts *o, struct bench_cpu_mlp *b,
                                  int threads, const char *name, struct bench_cpu_result *r) {
    int rc = bench_cpu_dev_setup(b, threads, 256);
    rc = rc ? rc : bench_cpu_measure(o, bench_cpu_dev_run, b, r);
    bench_cpu_dev_teardown(b);
    if (rc == 0)
        bench_cpu_row(o, "mlp", name, "samples/s", r);
    return rc;
}

static int bench_cpu_mlp(const struct bench_cpu_opts *o) {
    struct bench_cpu_mlp b;
    struct bench_cpu_result ref, big, t1, t2;
    int rc = bench_cpu_mlp_init(&b);
    rc = rc ? rc : bench_cpu_mlp_ref_case(o, &b, 256, "b256 reference loop", &ref);
    rc = rc ? rc : bench_cpu_mlp_ref_case(o, &b, 4096, "b4096 reference loop", &big);
    rc = rc ? rc : bench_cpu_mlp_dev_case(o, &b, 1, "b256 compute stream, 1 thread", &t1);
    rc = rc ? rc : bench_cpu_mlp_dev_case(o, &b, 2, "b256 compute stream, 2 threads", &t2);
    if (rc == 0) {
        bench_cpu_ratio(o, "mlp", "b256 stream 1 thread/reference", t1.rate, ref.rate);
        bench_cpu_ratio(o, "mlp", "b256 stream 2 threads/1 thread", t2.rate, t1.rate);
        bench_cpu_ratio(o, "mlp", "b4096/b256 reference", big.rate, ref.rate);
    }
    free(b.x);
    free(b.y);
    free(b.params0);
    return rc;
}

/* ---- 3. allocator ---- */

struct bench_cpu_alloc {
    uint32_t slot[BENCH_CPU_ALLOC_OPS], size[BENCH_CPU_ALLOC_OPS]; /* the seeded sequence */
    struct mem_pool *pool;                                         /* NULL: malloc/free */
    void *live[BENCH_CPU_SLOTS];
    uint64_t touched; /* bytes read back at free, so allocations cannot be elided */
};

static int bench_cpu_raw_alloc(void *ctx, size_t bytes, void **out) {
    return posix_memalign(out, 256, bytes) == 0 ? 0 : -ENOMEM;
}

static void bench_cpu_raw_free(void *ctx, void *ptr, size_t bytes) {
    free(ptr);
}

static const struct mem_raw_ops bench_cpu_raw_ops = {.alloc = bench_cpu_raw_alloc,
                                                     .free = bench_cpu_raw_free};

/* Sizes log-uniform in 1 B..64 KiB, one in 128 uniform in 1..8 MiB; slots uniform. */
static void bench_cpu_alloc_seq(struct bench_cpu_alloc *a) {
    uint64_t s = 1234;
    for (size_t i = 0; i < BENCH_CPU_ALLOC_OPS; i++) {
        a->slot[i] = (uint32_t)(bench_cpu_rand(&s) % BENCH_CPU_SLOTS);
        if (bench_cpu_rand(&s) % 128 == 0)
            a->size[i] = (uint32_t)((1u << 20) + bench_cpu_rand(&s) % (7u << 20));
        else
            a->size[i] = (uint32_t)exp2(bench_cpu_unit(&s) * 16.0);
    }
}

static void *bench_cpu_get(struct bench_cpu_alloc *a, size_t bytes) {
    void *p = NULL;
    if (a->pool) {
        if (mem_pool_alloc(a->pool, bytes, &p) != 0)
            return NULL;
    } else {
        p = malloc(bytes);
    }
    if (p)
        *(unsigned char *)p = (unsigned char)bytes;
    return p;
}

static void bench_cpu_put(struct bench_cpu_alloc *a, void *p) {
    a->touched += *(unsigned char *)p;
    if (a->pool)
        mem_pool_free(a->pool, p);
    else
        free(p);
}

static uint64_t bench_cpu_drain(struct bench_cpu_alloc *a) {
    uint64_t calls = 0;
    for (size_t i = 0; i < BENCH_CPU_SLOTS; i++) {
        if (a->live[i]) {
            bench_cpu_put(a, a->live[i]);
            a->live[i] = NULL;
            calls++;
        }
    }
    return calls;
}

/* One iteration = the whole sequence from empty slots, then every slot freed; units = calls. */
static int bench_cpu_mixed_run(void *ctx, uint64_t iters, double *units) {
    struct bench_cpu_alloc *a = ctx;
    uint64_t calls = 0;
    for (uint64_t it = 0; it < iters; it++) {
        for (size_t i = 0; i < BENCH_CPU_ALLOC_OPS; i++) {
            void **slot = &a->live[a->slot[i]];
            if (*slot)
                bench_cpu_put(a, *slot);
            calls += *slot ? 2 : 1;
            if (!(*slot = bench_cpu_get(a, a->size[i])))
                return -ENOMEM;
        }
        calls += bench_cpu_drain(a);
    }
    bench_cpu_sink += (double)a->touched;
    *units = (double)calls;
    return 0;
}

/* One iteration = 1024 sessions as compute_vpoc_session allocates: a profile of 100..1123
 * levels, three chunk buffers of 500/500/380 bars taken and returned, then the profile. */
static int bench_cpu_vpoc_shaped_run(void *ctx, uint64_t iters, double *units) {
    struct bench_cpu_alloc *a = ctx;
    const size_t bar = sizeof(struct vpoc_bar);
    const size_t chunk[3] = {BENCH_CPU_CHUNK * bar, BENCH_CPU_CHUNK * bar,
                             (BENCH_CPU_SESSION_BARS - 2 * BENCH_CPU_CHUNK) * bar};
    for (uint64_t it = 0; it < iters; it++) {
        for (size_t i = 0; i < BENCH_CPU_SLOTS; i++) {
            void *hist = bench_cpu_get(a, (100 + a->slot[i]) * sizeof(int64_t));
            for (int k = 0; hist && k < 3; k++) {
                void *buf = bench_cpu_get(a, chunk[k]);
                if (!buf)
                    break;
                bench_cpu_put(a, buf);
            }
            if (!hist)
                return -ENOMEM;
            bench_cpu_put(a, hist);
        }
    }
    bench_cpu_sink += (double)a->touched;
    *units = (double)iters * BENCH_CPU_SLOTS * BENCH_CPU_VPOC_CALLS;
    return 0;
}

static int bench_cpu_alloc_pair(const struct bench_cpu_opts *o, struct bench_cpu_alloc *a,
                                bench_cpu_fn fn, const char *pattern) {
    struct bench_cpu_result r[2];
    char name[64];
    int rc = 0;
    for (int k = 0; rc == 0 && k < 2; k++) {
        struct mem_conf conf;
        mem_conf_default(&conf);
        rc = k == 0 ? mem_pool_create(&a->pool, &conf, &bench_cpu_raw_ops, NULL) : 0;
        rc = rc ? rc : bench_cpu_measure(o, fn, a, &r[k]);
        bench_cpu_drain(a);
        if (a->pool)
            mem_pool_destroy(a->pool);
        a->pool = NULL;
        snprintf(name, sizeof(name), "%s %s", pattern, k == 0 ? "mem_pool" : "malloc");
        if (rc == 0)
            bench_cpu_row(o, "alloc", name, "ops/s", &r[k]);
    }
    snprintf(name, sizeof(name), "%s pool/malloc", pattern);
    if (rc == 0)
        bench_cpu_ratio(o, "alloc", name, r[0].rate, r[1].rate);
    return rc;
}

static int bench_cpu_alloc(const struct bench_cpu_opts *o) {
    struct bench_cpu_alloc *a = calloc(1, sizeof(*a)); /* 0.5 MiB: not on the stack */
    if (!a)
        return -ENOMEM;
    bench_cpu_alloc_seq(a);
    int rc = bench_cpu_alloc_pair(o, a, bench_cpu_mixed_run, "mixed 1B-64KiB+1-8MiB");
    rc = rc ? rc : bench_cpu_alloc_pair(o, a, bench_cpu_vpoc_shaped_run, "vpoc-shaped");
    free(a);
    return rc;
}

/* ---- main ---- */

static void bench_cpu_usage(FILE *f) {
    fprintf(f,
            "usage: bench_cpu [--quick] [--json] [--help]\n"
            "Benchmarks ringside's CPU reference code (build it as Release):\n"
            "  vpoc   bars/s on %d synthetic days: chunked (%d bars) and whole-session through\n"
            "         the cpu compute backend, and the plain vpoc_session reference\n"
            "  mlp    samples/s of a 24-32-16-1 SiLU MSE model with Adam: reference loop\n"
            "         (batch 256 and 4096) and the cpu compute stream (1 and 2 threads)\n"
            "  alloc  mem_pool vs malloc ops/s (op = one alloc or free call)\n"
            "Each case: calibration and a warm-up run, then the median of several runs.\n"
            "  --quick  ~5 s instead of ~60 s (shorter runs, 5 of them)\n"
            "  --json   one JSON object per line instead of the table\n"
            "  --help   this text\n",
            BENCH_CPU_DAYS, BENCH_CPU_CHUNK);
}

/* 0, 1 for --help (exit 0), or -EINVAL for an unknown argument. */
static int bench_cpu_args(int argc, char **argv, struct bench_cpu_opts *o) {
    *o = (struct bench_cpu_opts){.run_s = 0.25, .reps = 9};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
        } else if (strcmp(argv[i], "--quick") == 0) {
            o->quick = true;
            o->run_s = 0.05;
            o->reps = 5;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return 1;
        } else {
            fprintf(stderr, "bench_cpu: unknown argument '%s'\n", argv[i]);
            return -EINVAL;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    struct bench_cpu_opts o;
    int rc = bench_cpu_args(argc, argv, &o);
    if (rc != 0) {
        bench_cpu_usage(rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    double t0 = bench_cpu_now_s();
    bench_cpu_header(&o);
    rc = bench_cpu_vpoc(&o);
    rc = rc ? rc : bench_cpu_mlp(&o);
    rc = rc ? rc : bench_cpu_alloc(&o);
    if (rc != 0) {
        fprintf(stderr, "bench_cpu: failed: %s\n", strerror(-rc));
        return 1;
    }
    if (!o.json)
        printf("\ntotal %.1f s\n", bench_cpu_now_s() - t0);
    return 0;
}
