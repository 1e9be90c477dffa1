/* Helpers of the GPU suite (see gpu_fixtures.h). */
#include "tests/gpu/gpu_fixtures.h"

#include "backend/core/rng.h"
#include "backend/data/data_synth.h"
#include "backend/memory/mem_conf.h"
#include "kernels/rs_gpu.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#ifndef RS_BINARY_DIR
#define RS_BINARY_DIR "/tmp"
#endif

void tg_gpu_ok(int err, const char *what) {
    cr_assert_eq(err, 0, "%s: %s (%s)", what, err ? rs_gpu_err_name(err) : "",
                 err ? rs_gpu_err_string(err) : "");
}

void tg_data_make(struct tg_data *d, int days, uint64_t seed) {
    memset(d, 0, sizeof(*d));
    d->days = days;
    d->seed = seed;
    data_series_init(&d->ds);
    struct data_synth_opts o = {
        .days = days, .seed = seed, .start_hour = TG_START_HOUR, .tick = TG_TICK};
    int rc = data_synth_generate(&o, &d->ds);
    cr_assert_eq(rc, 0, "synthetic data (%d days, seed %llu): %s", days, (unsigned long long)seed,
                 strerror(-rc));
    rc = data_sessions_split(&d->ds, TG_START_HOUR, &d->ss);
    cr_assert_eq(rc, 0, "session split: %s", strerror(-rc));
    cr_assert_geq(d->ss.n, (size_t)days, "%d synthetic days gave %zu sessions", days, d->ss.n);
    d->bars = malloc(d->ds.n * sizeof(*d->bars));
    cr_assert_not_null(d->bars);
    vpoc_bars_from_series(d->ds.bars, d->ds.n, d->bars);
}

void tg_data_fini(struct tg_data *d) {
    free(d->bars);
    data_sessions_fini(&d->ss);
    data_series_fini(&d->ds);
    memset(d, 0, sizeof(*d));
}

/* Timings and device-memory readings must not see another test of this suite on the device
 * (Criterion runs tests in parallel processes): each test holds an exclusive lock from its open
 * until its process exits. */
static void tg_lock(void) {
    static int fd = -1;
    if (fd >= 0)
        return;
    char path[512];
    snprintf(path, sizeof(path), "%s/test_gpu.lock", RS_BINARY_DIR);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0, "cannot open the suite's lock %s: %s", path, strerror(errno));
    while (flock(fd, LOCK_EX) != 0)
        cr_assert_eq(errno, EINTR, "cannot lock %s: %s", path, strerror(errno));
}

/* Whether a failed open means "this machine has no usable HIP device". */
static bool tg_no_device(const char *err) {
    int n = 0, e = rs_gpu_device_count(&n);
    return (e != 0 && rs_gpu_err_kind(e) == RS_GPU_ERR_NO_DEVICE) || (e == 0 && n == 0) ||
           strstr(err, "no HIP device") != NULL;
}

static struct compute *tg_open(const char *name, struct trace *trace, int device) {
    struct compute_conf conf = {.device = device, .threads = 1, .trace = trace};
    mem_conf_default(&conf.alloc);
    struct compute *c = NULL;
    char notice[256] = "", err[1024] = "";
    int rc = compute_open(name, &conf, &c, notice, sizeof(notice), err, sizeof(err));
    if (rc == 0)
        return c;
    if (strcmp(name, "hip") == 0 && tg_no_device(err)) {
        const char *req = getenv(TG_REQUIRE_ENV);
        if (!req || strcmp(req, "1") != 0)
            cr_skip_test("no HIP device (%s=1 makes this a failure): %s", TG_REQUIRE_ENV, err);
        cr_assert_fail("cannot open the hip backend (%s=1): %s", TG_REQUIRE_ENV, err);
    }
    cr_assert_fail("cannot open the %s backend (rc %d): %s", name, rc, err);
    return c;
}

struct compute *tg_open_hip_device(struct trace *trace, int device) {
    tg_lock();
    struct compute *c = tg_open("hip", trace, device);
    cr_assert_str_eq(c->ops->name, "hip");
    return c;
}

struct compute *tg_open_hip(struct trace *trace) {
    return tg_open_hip_device(trace, 0);
}

struct compute *tg_open_cpu(void) {
    return tg_open("cpu", NULL, 0);
}

double tg_uniform_f32(uint64_t *state, double lo, double hi) {
    double u = (double)(rng_splitmix64(state) >> 11) * 0x1.0p-53;
    return (double)(float)(lo + (hi - lo) * u);
}

void tg_norm2_add(const double *a, const double *ref, size_t n, double *diff2, double *ref2) {
    for (size_t i = 0; i < n; i++) {
        double d = a[i] - ref[i];
        *diff2 += d * d;
        *ref2 += ref[i] * ref[i];
    }
}

double tg_rel(double diff2, double ref2) {
    if (ref2 == 0)
        return diff2 == 0 ? 0.0 : INFINITY;
    return sqrt(diff2 / ref2);
}
