/* Helpers of the GPU suite: one test at a time on the device, opening the HIP backend (a test
 * skips without a device unless RINGSIDE_GPU_TESTS_REQUIRE_DEVICE=1 makes that a failure),
 * synthetic sessions built as the engine builds them, fp32-exact random numbers and error norms. */
#ifndef RINGSIDE_TESTS_GPU_GPU_FIXTURES_H
#define RINGSIDE_TESTS_GPU_GPU_FIXTURES_H

#include "backend/compute/compute.h"
#include "backend/data/data_series.h"
#include "backend/trace/trace.h"
#include "backend/vpoc/vpoc.h"

#include <stddef.h>
#include <stdint.h>

#define TG_REQUIRE_ENV "RINGSIDE_GPU_TESTS_REQUIRE_DEVICE"

/* The engine's defaults (backend/engine/engine_conf.c). */
#define TG_TICK       0.25
#define TG_VALUE_AREA 0.70
#define TG_START_HOUR 18
#define TG_MIB        ((uint64_t)1 << 20)
#define TG_MS         1000000ull /* ns */

/* Fail the test with the runtime's name and text for err unless it is 0. */
#define TG_GPU(call) tg_gpu_ok((call), #call)
void tg_gpu_ok(int err, const char *what);

/* A synthetic series, its sessions and the compact bars the backends read. */
struct tg_data {
    int days;
    uint64_t seed;
    struct data_series ds;
    struct data_sessions ss;
    struct vpoc_bar *bars; /* ds.n entries */
};

/* Generate days sessions from seed and split them as the engine does; asserts on failure. */
void tg_data_make(struct tg_data *d, int days, uint64_t seed);
void tg_data_fini(struct tg_data *d);

/* Open the hip backend on device 0 (trace may be NULL), first taking the suite's lock, which
 * this test process then holds until it exits. Never returns NULL: fails the test with the
 * backend's message, or skips it when there is no device (a failure too when
 * RINGSIDE_GPU_TESTS_REQUIRE_DEVICE is 1). */
struct compute *tg_open_hip(struct trace *trace);
/* The same on another device (an index the machine has). */
struct compute *tg_open_hip_device(struct trace *trace, int device);
/* The reference backend, single-threaded so its sums are in one fixed order. */
struct compute *tg_open_cpu(void);

/* Uniform in [lo, hi), rounded to the nearest float, so a fp32 backend and a fp64 one see the
 * same number. */
double tg_uniform_f32(uint64_t *state, double lo, double hi);

/* Sum of squares of a - ref into *diff2 and of ref into *ref2 (accumulating). */
void tg_norm2_add(const double *a, const double *ref, size_t n, double *diff2, double *ref2);
/* ||a - ref|| / ||ref|| from the sums above: 0 when both are 0, INFINITY when only ref is. */
double tg_rel(double diff2, double ref2);

#endif
