/* Unit tests for what the compute interface says when the backend fails: every failure of a
 * VPOC session and of a pool allocation carries the backend's text for its error, never an
 * empty reason. The CPU backend stands in, with one operation made to fail at a time. */
#include "backend/compute/compute.h"
#include "backend/memory/mem_conf.h"
#include "backend/vpoc/vpoc.h"
#include "tests/support/vpoc_set_check.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TC_BARS  1200
#define TC_CHUNK 500
#define TC_STALE "stale text from an earlier failure"

static struct compute *tc_open(void) {
    struct compute_conf conf = {.device = 0, .threads = 1};
    mem_conf_default(&conf.alloc);
    struct compute *c = NULL;
    char notice[256] = "", err[512] = "";
    int rc = compute_open("cpu", &conf, &c, notice, sizeof(notice), err, sizeof(err));
    cr_assert_eq(rc, 0, "cpu backend: %s", err);
    return c;
}

/* One session of closes around a level, volumes 1..7. */
static void tc_bars(struct vpoc_bar *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        b[i].close = 4000.0 + (double)(i * 7 % 41) * 0.25;
        b[i].high = b[i].close + 0.5;
        b[i].low = b[i].close - 0.5;
        b[i].volume = 1.0 + (double)(i % 7);
    }
}

static int tc_fail_memset0(struct compute *c, void *dst, size_t bytes) {
    (void)c, (void)dst, (void)bytes;
    return -EIO;
}

static int tc_fail_copy(struct compute *c, void *dst, const void *src, size_t bytes) {
    (void)c, (void)dst, (void)src, (void)bytes;
    return -EIO;
}

static int tc_fail_chunk(struct compute *c, const struct compute_vpoc_chunk *a) {
    (void)c, (void)a;
    return -EIO;
}

static int tc_fail_finalize(struct compute *c, const struct compute_vpoc_final *a) {
    (void)c, (void)a;
    return -EIO;
}

static int tc_fail_event(struct compute *c, struct compute_event *e) {
    (void)c, (void)e;
    return -EIO;
}

/* ops with the named operation failing with -EIO. */
static void tc_break(struct compute_ops *ops, const char *which) {
    if (strcmp(which, "memset0") == 0)
        ops->memset0 = tc_fail_memset0;
    else if (strcmp(which, "copy_h2d") == 0)
        ops->copy_h2d = tc_fail_copy;
    else if (strcmp(which, "vpoc_chunk") == 0)
        ops->vpoc_chunk = tc_fail_chunk;
    else if (strcmp(which, "vpoc_finalize") == 0)
        ops->vpoc_finalize = tc_fail_finalize;
    else if (strcmp(which, "event_record") == 0)
        ops->event_record = tc_fail_event;
    else
        cr_assert_fail("no operation %s", which);
}

Test(compute, vpoc_session_failures_say_why) {
    static const char *const which[] = {"memset0", "copy_h2d", "vpoc_chunk", "vpoc_finalize",
                                        "event_record"};
    static const char *const said[] = {"profile reset", "copy of chunk 0", "kernel of chunk 0",
                                       "finalize", "start event"};
    struct vpoc_bar *bars = malloc(TC_BARS * sizeof(*bars));
    cr_assert_not_null(bars);
    tc_bars(bars, TC_BARS);
    struct vpoc_params p = {VPOC_RANGE, 0.25, 0.70};
    struct compute_event ev[TC_BARS / TC_CHUNK + 2];
    for (size_t k = 0; k < sizeof(which) / sizeof(which[0]); k++) {
        struct compute *c = tc_open();
        struct compute_ops ops = *c->ops;
        const struct compute_ops *real = c->ops;
        tc_break(&ops, which[k]);
        c->ops = &ops;
        struct vpoc_result r;
        char err[512] = TC_STALE;
        int rc =
            compute_vpoc_session(c, bars, TC_BARS, &p, TC_CHUNK, &r, ev, NULL, err, sizeof(err));
        cr_assert_eq(rc, -EIO, "%s failing: rc %d", which[k], rc);
        cr_assert(strstr(err, said[k]) && strstr(err, "cpu") && strstr(err, strerror(EIO)),
                  "%s failing: '%s'", which[k], err);
        cr_assert_null(strstr(err, TC_STALE), "%s failing: '%s'", which[k], err);
        struct mem_stats st;
        mem_pool_stats(c->pool, &st);
        cr_assert_eq(st.allocated_bytes, 0, "%s failing: %llu bytes left allocated", which[k],
                     (unsigned long long)st.allocated_bytes);
        /* the backend still works once the operation does */
        c->ops = real;
        struct vpoc_result want;
        rc = compute_vpoc_session(c, bars, TC_BARS, &p, TC_CHUNK, &r, ev, NULL, err, sizeof(err));
        cr_assert_eq(rc, 0, "after %s: %s", which[k], err);
        cr_assert_eq(vpoc_session(bars, TC_BARS, &p, &want), 0);
        cr_assert_eq(r.poc_level, want.poc_level);
        compute_close(c);
    }
    free(bars);
}

static int tc_raw_refuses(void *ctx, size_t bytes, void **out) {
    (void)ctx, (void)bytes, (void)out;
    return -EIO;
}

static int tc_raw_full(void *ctx, size_t bytes, void **out) {
    (void)ctx, (void)bytes, (void)out;
    return -ENOMEM;
}

/* A device that refuses an allocation for another reason than a full device: its reason, not
 * "out of memory" and the pool's numbers; a full device still gets those. */
Test(compute, alloc_failure_other_than_oom_says_why) {
    struct compute *c = tc_open();
    int (*real)(void *, size_t, void **) = c->raw.alloc;
    void *p = NULL;
    char err[512] = TC_STALE;
    c->raw.alloc = tc_raw_refuses;
    cr_assert_eq(compute_alloc(c, 4 << 20, &p, err, sizeof(err)), -EIO);
    cr_assert(strstr(err, "allocating 4194304 bytes on cpu device 0 failed") &&
                  strstr(err, strerror(EIO)),
              "'%s'", err);
    cr_assert_null(strstr(err, "out of memory"), "'%s'", err);
    c->raw.alloc = tc_raw_full;
    cr_assert_eq(compute_alloc(c, 4 << 20, &p, err, sizeof(err)), -ENOMEM);
    cr_assert(strstr(err, "out of memory allocating 4194304 bytes") && strstr(err, "pool:"), "'%s'",
              err);
    c->raw.alloc = real;
    cr_assert_eq(compute_alloc(c, 4 << 20, &p, err, sizeof(err)), 0, "%s", err);
    compute_free(c, p);
    compute_close(c);
}

/* How many of the whole pages of [p, p + bytes) are resident. */
static size_t tc_resident_pages(void *p, size_t bytes, size_t *pages) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(page - 1);
    *pages = (hi - lo) / page;
    unsigned char *v = malloc(*pages);
    cr_assert_not_null(v);
    cr_assert_eq(mincore((void *)lo, hi - lo, v), 0, "mincore: %s", strerror(errno));
    size_t n = 0;
    for (size_t k = 0; k < *pages; k++)
        n += v[k] & 1;
    free(v);
    return n;
}

/* On the CPU backend the pool's cache is host memory: a trim gives a cached block's pages
 * back once the stream has run, while the block stays cached and reserved, and is used again
 * from the cache. */
Test(compute, trim_gives_a_cached_blocks_pages_back_to_the_host) {
    struct compute *c = tc_open();
    char err[512] = "";
    void *p = NULL;
    size_t bytes = 8u << 20, pages = 0;
    cr_assert_eq(compute_alloc(c, bytes, &p, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(c->ops->memset0(c, p, bytes), 0);
    cr_assert_eq(compute_sync(c, SYNC_OP_STREAM), 0);
    memset(p, 0x5a, bytes); /* the "device" is the host: every page written */
    cr_assert_eq(tc_resident_pages(p, bytes, &pages), pages, "written: all resident");
    compute_free(c, p);
    struct mem_stats before, after;
    mem_pool_stats(c->pool, &before);
    cr_assert_geq(mem_pool_trim(c->pool), bytes);
    cr_assert_eq(compute_sync(c, SYNC_OP_STREAM), 0);
    cr_assert_eq(tc_resident_pages(p, bytes, &pages), 0, "trimmed: none of %zu resident", pages);
    mem_pool_stats(c->pool, &after);
    cr_assert_eq(after.reserved_bytes, before.reserved_bytes);
    cr_assert_eq(after.free_blocks, before.free_blocks);
    void *again = NULL;
    cr_assert_eq(compute_alloc(c, bytes, &again, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(again, p, "the trimmed block comes from the cache");
    mem_pool_stats(c->pool, &after);
    cr_assert_eq(after.n_raw_alloc, before.n_raw_alloc);
    compute_free(c, again);
    compute_close(c);
}

/* Devices and peer access without opening one: the CPU backend's simulated devices share host
 * memory; a backend that is not compiled in, or a device that does not exist, is an error
 * that says so. */
Test(compute, device_count_and_peer_access) {
    char err[512] = "";
    int n = -1;
    cr_assert_eq(compute_device_count("cpu", &n, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(n, COMPUTE_CPU_MAX_DEVICES);
    bool can = false;
    cr_assert_eq(compute_peer_access("cpu", 0, 1, &can, err, sizeof(err)), 0, "%s", err);
    cr_assert(can);
    cr_assert_lt(compute_peer_access("cpu", 0, COMPUTE_CPU_MAX_DEVICES, &can, err, sizeof(err)), 0);
    cr_assert_not(can);
    cr_assert(strstr(err, "device 0 to 16"), "%s", err);
    cr_assert_eq(compute_device_count("tpu", &n, err, sizeof(err)), -ENOENT);
    cr_assert_eq(n, 0);
    cr_assert(strstr(err, "unknown backend 'tpu'"), "%s", err);
    if (strcmp(compute_backends(), "cpu") == 0) {
        cr_assert_eq(compute_peer_access("hip", 0, 1, &can, err, sizeof(err)), -ENOENT);
        cr_assert(strstr(err, "not compiled into this build"), "%s", err);
    }
}

/* The packed path on the CPU backend: every session as the reference computes it. */
Test(compute, vpoc_set_matches_reference) {
    struct compute *c = tc_open();
    vsc_check_all(c, 20, 7);
    compute_close(c);
}

/* mlp_read_out gives the last forward's outputs, as the reference computes them; more rows
 * than the model was made for are refused. */
Test(compute, mlp_read_out_is_the_forward_pass) {
    struct compute *c = tc_open();
    struct mlp_arch a = {.n_in = 3, .n_hidden = 1, .hidden = {4}};
    size_t rows = 5, n = mlp_param_count(&a);
    double *p = malloc(n * sizeof(*p)), x[15], want[5], got[5];
    double *scratch = malloc(mlp_scratch_count(&a, rows) * sizeof(double));
    mlp_init_params(&a, 3, p);
    for (size_t i = 0; i < 15; i++)
        x[i] = (double)i / 7.0 - 1.0;
    mlp_forward(&a, p, x, rows, scratch, want);
    struct compute_mlp_init init = {.arch = a, .params = p, .max_rows = rows};
    mlp_adam_conf_default(&init.adam);
    struct compute_mlp *m = NULL;
    void *dx = NULL;
    char err[256];
    cr_assert_eq(c->ops->mlp_create(c, &init, &m), 0);
    cr_assert_eq(compute_alloc(c, sizeof(x), &dx, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(c->ops->upload_f64(c, dx, x, 15), 0);
    cr_assert_eq(c->ops->mlp_forward(c, m, dx, rows), 0);
    cr_assert_eq(c->ops->mlp_read_out(c, m, got, rows), 0);
    cr_assert_eq(compute_sync(c, SYNC_OP_STREAM), 0);
    for (size_t r = 0; r < rows; r++)
        cr_assert_float_eq(got[r], want[r], 1e-12, "row %zu", r);
    cr_assert_eq(c->ops->mlp_read_out(c, m, got, rows + 1), -EINVAL);
    c->ops->mlp_destroy(c, m);
    compute_free(c, dx);
    compute_close(c);
    free(p);
    free(scratch);
}

/* What a packed pass's launches were handed, as a wrapped backend saw them. */
#define TC_LOG 16
static struct {
    size_t n;
    struct compute_vpoc_launch a[TC_LOG];
    size_t fail_at; /* the launch (1, 2, ...) that fails; 0: none */
    void *zeroed;   /* the last buffer memset0 was given */
    size_t zeroes;  /* memset0 calls on a->turns */
    const struct compute_ops *real;
} tc_seen;

static int tc_log_pass(struct compute *c, const struct compute_vpoc_launch *a) {
    cr_assert_lt(tc_seen.n, TC_LOG);
    tc_seen.a[tc_seen.n++] = *a;
    if (tc_seen.n == tc_seen.fail_at)
        return -EIO;
    return tc_seen.real->vpoc_pass(c, a);
}

static int tc_log_memset0(struct compute *c, void *dst, size_t bytes) {
    tc_seen.zeroed = dst;
    tc_seen.zeroes += tc_seen.n > 0 && dst == tc_seen.a[0].turns;
    return tc_seen.real->memset0(c, dst, bytes);
}

/* A packed pass of several launches numbers them across passes (the device's blocks hand a
 * session's profile on by those numbers), from zeroed turns; a launch that fails takes no
 * number, so the next pass waits for none that never ran, and the turns are never zeroed
 * again. A pass of one launch has no turns. */
Test(compute, vpoc_set_numbers_its_launches) {
    struct compute *c = tc_open();
    struct compute_ops ops = *c->ops;
    memset(&tc_seen, 0, sizeof(tc_seen));
    tc_seen.real = c->ops;
    ops.vpoc_pass = tc_log_pass;
    ops.memset0 = tc_log_memset0;
    c->ops = &ops;
    struct vpoc_bar *bars = malloc(TC_BARS * sizeof(*bars));
    cr_assert_not_null(bars);
    tc_bars(bars, TC_BARS);
    struct data_session one = {.first = 0, .n = TC_BARS};
    struct data_sessions ss = {.s = &one, .n = 1};
    struct vpoc_params p = {VPOC_CLOSE, 0.25, 0.70};
    struct vpoc_result r, want;
    cr_assert_eq(vpoc_session(bars, TC_BARS, &p, &want), 0);
    struct compute_vpoc_set *s = NULL;
    char err[512] = "";
    cr_assert_eq(compute_vpoc_set_create(c, bars, &ss, 0, 1, &p, TC_CHUNK, COMPUTE_VPOC_PACKED, &s,
                                         err, sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(compute_vpoc_set_launches(s), 3); /* 500 + 500 + 200 bars */
    void *turns = tc_seen.zeroed;                  /* zeroed when made */
    cr_assert_not_null(turns);
    for (int pass = 0; pass < 2; pass++)
        cr_assert_eq(compute_vpoc_set_run(c, s, &r, NULL, NULL, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(tc_seen.n, 6);
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(tc_seen.a[i].turns, turns);
        cr_assert_eq(tc_seen.a[i].turn, (uint32_t)i, "launch %zu numbered %u", i,
                     (unsigned)tc_seen.a[i].turn);
        cr_assert_eq(tc_seen.a[i].first_chunk, i % 3 == 0);
        cr_assert_eq(tc_seen.a[i].last_chunk, i % 3 == 2);
    }
    cr_assert_eq(tc_seen.zeroes, 0);
    /* the second launch of the third pass fails: the first one (6) was queued, the failed one
     * takes no number, and the next pass goes on from 7 with the turns left as they are */
    tc_seen.fail_at = 8;
    cr_assert_eq(compute_vpoc_set_run(c, s, &r, NULL, NULL, err, sizeof(err)), -EIO);
    cr_assert(strstr(err, "VPOC launch 2 of 3") && strstr(err, strerror(EIO)), "%s", err);
    tc_seen.fail_at = 0;
    size_t at = tc_seen.n;
    cr_assert_eq(compute_vpoc_set_run(c, s, &r, NULL, NULL, err, sizeof(err)), 0, "%s", err);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(tc_seen.a[at + i].turn, (uint32_t)(7 + i), "launch %zu numbered %u", i,
                     (unsigned)tc_seen.a[at + i].turn);
    cr_assert_eq(tc_seen.zeroes, 0);
    cr_assert_eq(r.poc_level, want.poc_level);
    cr_assert_eq(r.total_fix, want.total_fix);
    compute_vpoc_set_destroy(c, s);
    /* whole sessions: one launch a pass, no turns */
    tc_seen.n = 0;
    cr_assert_eq(compute_vpoc_set_create(c, bars, &ss, 0, 1, &p, 0, COMPUTE_VPOC_PACKED, &s, err,
                                         sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(compute_vpoc_set_run(c, s, &r, NULL, NULL, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(tc_seen.n, 1);
    cr_assert_null(tc_seen.a[0].turns);
    cr_assert(tc_seen.a[0].first_chunk && tc_seen.a[0].last_chunk);
    compute_vpoc_set_destroy(c, s);
    c->ops = tc_seen.real;
    compute_close(c);
    free(bars);
}
