/* Tests for the trace module: histogram buckets and percentiles, traced syncs, in-flight, the
 * watchdog's grading of a call in flight. */
#include "backend/core/evring.h"
#include "backend/trace/trace.h"
#include "backend/trace/trace_hist.h"
#include "backend/trace/trace_watch.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

TestSuite(trace, .timeout = 30);

static struct trace_hist trace_h; /* 10 KB: static, not on the stack */

Test(trace, buckets_are_within_two_percent) {
    for (uint64_t v = 1; v < (1ull << 42); v = v * 3 / 2 + 1) {
        size_t b = trace_hist_bucket(v);
        uint64_t lo, hi;
        trace_hist_bucket_range(b, &lo, &hi);
        cr_assert(lo <= v && v < hi, "v=%llu in [%llu,%llu)", (unsigned long long)v,
                  (unsigned long long)lo, (unsigned long long)hi);
        /* below 64 ns each bucket holds one exact value; above, width <= 2% of its start */
        cr_assert(hi - lo == 1 || (double)(hi - lo) / (double)lo <= 0.02, "v=%llu",
                  (unsigned long long)v);
    }
    /* exact below 64 */
    uint64_t lo, hi;
    trace_hist_bucket_range(trace_hist_bucket(37), &lo, &hi);
    cr_assert_eq(lo, 37);
    cr_assert_eq(hi, 38);
}

Test(trace, percentiles_of_uniform_values) {
    trace_hist_init(&trace_h);
    /* 1..1000 us: the true p50 is 500 us, p90 900 us, p99 990 us */
    for (uint64_t i = 1; i <= 1000; i++)
        trace_hist_add(&trace_h, i * 1000);
    cr_assert_eq(trace_h.count, 1000);
    cr_assert_eq(trace_h.min_ns, 1000);
    cr_assert_eq(trace_h.max_ns, 1000000);
    double want[3][2] = {{50, 500000}, {90, 900000}, {99, 990000}};
    for (int k = 0; k < 3; k++) {
        double got = (double)trace_hist_percentile(&trace_h, want[k][0]);
        cr_assert_float_eq(got, want[k][1], want[k][1] * 0.01, "p%g = %g", want[k][0], got);
    }
    cr_assert_eq(trace_hist_percentile(&trace_h, 100), 1000000);
}

Test(trace, percentiles_of_a_bimodal_tail) {
    trace_hist_init(&trace_h);
    for (int i = 0; i < 980; i++)
        trace_hist_add(&trace_h, 20000); /* 20 us */
    for (int i = 0; i < 20; i++)
        trace_hist_add(&trace_h, 2000000000ull); /* 2 s stalls */
    cr_assert_float_eq((double)trace_hist_percentile(&trace_h, 50), 20000, 200);
    cr_assert_float_eq((double)trace_hist_percentile(&trace_h, 98), 20000, 200);
    cr_assert_float_eq((double)trace_hist_percentile(&trace_h, 99), 2e9, 2e7);
    trace_hist_init(&trace_h);
    cr_assert_eq(trace_hist_percentile(&trace_h, 50), 0);
}

static int trace_ok_fn(void *arg) {
    (void)arg;
    return 0;
}

Test(trace, injected_delay_is_measured) {
    struct trace *t;
    cr_assert_eq(trace_create(&t, NULL, 1), 0);
    trace_set_sync_delay(t, 0, 20000000); /* 20 ms */
    trace_sync(t, 0, SYNC_OP_STREAM, trace_ok_fn, NULL);
    struct trace_sync_summary s;
    trace_sync_summary(t, 0, SYNC_OP_STREAM, &s);
    cr_assert_eq(s.count, 1);
    cr_assert_geq(s.max_ns, 20000000);
    trace_destroy(t);
}

Test(trace, phase_events_carry_position) {
    struct evring *r;
    struct trace *t;
    cr_assert_eq(evring_create(&r, 8), 0);
    cr_assert_eq(trace_create(&t, r, 1), 0);
    struct trace_pos pos = {3, 77, -1};
    trace_phase_emit(t, 0, PHASE_FORWARD, 100, 250, &pos);
    struct ev e;
    cr_assert_eq(evring_drain(r, &e, 1), 1);
    cr_assert_eq(e.kind, EV_PHASE);
    cr_assert_eq(e.u.phase.phase, PHASE_FORWARD);
    cr_assert_eq(e.u.phase.start_ns, 100);
    cr_assert_eq(e.u.phase.end_ns, 250);
    cr_assert_eq(e.u.phase.epoch, 3);
    cr_assert_eq(e.u.phase.step, 77);
    cr_assert_eq(trace_create(&t, r, 0), -EINVAL);
    trace_destroy(t);
    evring_destroy(r);
}

/* ---- fault injection ---- */

/* A spec for one device (":devN"), a device leaving, and what is refused. */
Test(trace, inject_specs_for_one_device) {
    struct trace_inject in;
    char err[256], back[64];
    cr_assert_eq(trace_inject_parse("hang:forward:60:dev1", &in, err, sizeof(err)), 0, "%s", err);
    cr_assert(in.kind == TRACE_FAULT_HANG && in.phase == PHASE_FORWARD && in.dev == 1);
    cr_assert_eq(in.extra_ns, 60000000000ull);
    trace_inject_format(&in, back, sizeof(back));
    cr_assert_str_eq(back, "hang:forward:60:dev1");
    cr_assert_eq(trace_inject_parse("hang:allreduce:0.5", &in, err, sizeof(err)), 0, "%s", err);
    cr_assert(in.phase == PHASE_ALLREDUCE && in.dev == -1, "every device");
    cr_assert_eq(trace_inject_parse("oom:h2d:dev12", &in, err, sizeof(err)), 0, "%s", err);
    cr_assert(in.kind == TRACE_FAULT_OOM && in.dev == 12);
    trace_inject_format(&in, back, sizeof(back));
    cr_assert_str_eq(back, "oom:h2d:dev12");
    cr_assert_eq(trace_inject_parse("write:checkpoint:2:dev1", &in, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert(in.kind == TRACE_FAULT_WRITE && in.phase == PHASE_CHECKPOINT && in.dev == 1);
    cr_assert_eq(in.extra_ns, 2);
    trace_inject_format(&in, back, sizeof(back));
    cr_assert_str_eq(back, "write:checkpoint:2:dev1");
    cr_assert_eq(trace_inject_parse("write:forward:2", &in, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "files are written in phase checkpoint alone"), "%s", err);
    cr_assert_eq(trace_inject_parse("write:checkpoint:0", &in, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "N '0' is not a whole number in [1, 1000000]"), "%s", err);
    cr_assert_eq(trace_inject_parse("write:checkpoint", &in, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "use write:checkpoint:N"), "%s", err);
    cr_assert_eq(trace_inject_parse("drop:dev3", &in, err, sizeof(err)), 0, "%s", err);
    cr_assert(in.kind == TRACE_FAULT_DROP && in.dev == 3);
    trace_inject_format(&in, back, sizeof(back));
    cr_assert_str_eq(back, "drop:dev3");
    cr_assert_eq(trace_inject_parse("drop", &in, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "--inject 'drop': use drop:devN");
    cr_assert_eq(trace_inject_parse("hang:forward:1:dev16", &in, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "--inject 'hang:forward:1:dev16': devN takes a device number 0-15");
    cr_assert_eq(trace_inject_parse("hang:forwrd:1:dev1", &in, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "--inject 'hang:forwrd:1:dev1': unknown phase 'forwrd'"), "%s", err);
}

Test(trace, inject_specs_parse_and_format) {
    struct trace_inject in;
    char err[256], back[64];
    cr_assert_eq(trace_inject_parse("hang:cleanup:40", &in, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(in.phase, PHASE_CLEANUP);
    cr_assert_eq(in.kind, TRACE_FAULT_HANG);
    cr_assert_eq(in.extra_ns, 40000000000ull);
    trace_inject_format(&in, back, sizeof(back));
    cr_assert_str_eq(back, "hang:cleanup:40");
    cr_assert_eq(trace_inject_parse("slow-sync:forward:2.5", &in, err, sizeof(err)), 0);
    cr_assert_eq(in.kind, TRACE_FAULT_SLOW);
    cr_assert_eq(in.extra_ns, 2500000ull);
    trace_inject_format(&in, back, sizeof(back));
    cr_assert_str_eq(back, "slow-sync:forward:2.5");
    cr_assert_eq(trace_inject_parse("oom:vpoc", &in, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(in.kind, TRACE_FAULT_OOM);
    cr_assert_eq(in.phase, PHASE_VPOC);
    trace_inject_format(&in, back, sizeof(back));
    cr_assert_str_eq(back, "oom:vpoc");
    cr_assert_eq(trace_inject_parse("error:forward:no-kernel-image", &in, err, sizeof(err)), 0);
    cr_assert_eq(in.kind, TRACE_FAULT_ERROR);
    cr_assert_eq(in.phase, PHASE_FORWARD);
    cr_assert_eq(trace_error_code(in.error), 209, "the runtimes' own number");
    cr_assert(strstr(trace_error_text(in.error), "no kernel image is available"));
    trace_inject_format(&in, back, sizeof(back));
    cr_assert_str_eq(back, "error:forward:no-kernel-image");
    static const struct {
        const char *spec, *why;
    } bad[] = {
        {"hang", "use hang:PHASE:SECONDS"},
        {"hang:vpoc", "use hang:PHASE:SECONDS"},
        {"boom:vpoc:1", "unknown kind 'boom'"},
        {"hang:nowhere:3", "unknown phase 'nowhere'"},
        {"hang:vpoc:abc", "SECONDS 'abc'"},
        {"hang:vpoc:0", "SECONDS '0'"},
        {"slow-sync:eval:0.5", "MS '0.5'"},
        {"hang:vpoc:3x", "SECONDS '3x'"},
        {"slow-sync:eval:3600001", "MS '3600001'"},
        {"oom:vpoc:1", "use oom:PHASE"},
        {"oom:eval", "nothing is allocated in phase eval"},
        {"error:vpoc", "use error:PHASE:NAME"},
        {"error:vpoc:segfault", "unknown error 'segfault' (no-kernel-image, ecc"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(trace_inject_parse(bad[i].spec, &in, err, sizeof(err)), -EINVAL, "%s",
                     bad[i].spec);
        cr_assert(strstr(err, bad[i].why) && strstr(err, bad[i].spec), "'%s': %s", bad[i].spec,
                  err);
    }
}

static uint64_t trace_test_sync_ns(struct trace *t, enum ev_phase_id ph) {
    trace_set_phase(t, 0, ph);
    struct trace_sync_summary s0, s1;
    trace_sync_summary(t, 0, SYNC_OP_STREAM, &s0);
    trace_sync(t, 0, SYNC_OP_STREAM, trace_ok_fn, NULL);
    trace_sync_summary(t, 0, SYNC_OP_STREAM, &s1);
    return s1.sum_ns - s0.sum_ns;
}

Test(trace, injected_hang_fires_once_and_slow_sync_every_time) {
    struct trace *t;
    struct trace_inject hang, slow;
    char err[128];
    cr_assert_eq(trace_create(&t, NULL, 1), 0);
    cr_assert_eq(trace_inject_parse("hang:cleanup:0.03", &hang, err, sizeof(err)), 0);
    cr_assert_eq(trace_inject_parse("slow-sync:eval:20", &slow, err, sizeof(err)), 0);
    cr_assert_eq(trace_add_inject(t, 0, &hang), 0);
    cr_assert_eq(trace_add_inject(t, 0, &slow), 0);
    cr_assert_eq(trace_add_inject(t, 1, &slow), -EINVAL, "no device 1");
    cr_assert_lt(trace_test_sync_ns(t, PHASE_VPOC), 20000000ull, "another phase: no wait");
    cr_assert_geq(trace_test_sync_ns(t, PHASE_CLEANUP), 30000000ull, "the hang");
    cr_assert_lt(trace_test_sync_ns(t, PHASE_CLEANUP), 20000000ull, "a hang fires once");
    cr_assert_geq(trace_test_sync_ns(t, PHASE_EVAL), 20000000ull);
    cr_assert_geq(trace_test_sync_ns(t, PHASE_EVAL), 20000000ull, "slow-sync: every time");
    for (int k = 2; k < TRACE_MAX_INJECT; k++)
        cr_assert_eq(trace_add_inject(t, 0, &slow), 0);
    cr_assert_eq(trace_add_inject(t, 0, &slow), -ENOSPC);
    trace_destroy(t);
}

Test(trace, a_step_phase_fault_fires_at_the_steps_sync) {
    struct trace *t;
    struct trace_inject in;
    char err[128];
    cr_assert_eq(trace_create(&t, NULL, 1), 0);
    cr_assert_eq(trace_inject_parse("hang:forward:0.02", &in, err, sizeof(err)), 0);
    cr_assert_eq(trace_add_inject(t, 0, &in), 0);
    cr_assert_lt(trace_test_sync_ns(t, PHASE_EVAL), 20000000ull);
    cr_assert_geq(trace_test_sync_ns(t, PHASE_SYNC), 20000000ull, "the host waits for the step");
    trace_destroy(t);
}

/* One-shot faults fire once, in their phase, for whoever takes them; a hang taken (launched
 * on the GPU) is not waited for again by the traced sync. */
Test(trace, one_shot_faults_are_taken_once_in_their_phase) {
    struct trace *t;
    struct trace_inject oom, err_in, hang, got;
    char err[128];
    cr_assert_eq(trace_create(&t, NULL, 1), 0);
    cr_assert_eq(trace_inject_parse("oom:vpoc", &oom, err, sizeof(err)), 0);
    cr_assert_eq(trace_inject_parse("error:backward:illegal-address", &err_in, err, sizeof(err)),
                 0);
    cr_assert_eq(trace_inject_parse("hang:cleanup:0.05", &hang, err, sizeof(err)), 0);
    cr_assert_eq(trace_add_inject(t, 0, &oom), 0);
    cr_assert_eq(trace_add_inject(t, 0, &err_in), 0);
    cr_assert_eq(trace_add_inject(t, 0, &hang), 0);
    trace_set_phase(t, 0, PHASE_H2D);
    cr_assert_not(trace_fault_take(t, 0, TRACE_FAULT_OOM, &got), "not in h2d");
    trace_set_phase(t, 0, PHASE_VPOC);
    cr_assert_not(trace_fault_take(t, 0, TRACE_FAULT_ERROR, &got), "another kind");
    cr_assert(trace_fault_take(t, 0, TRACE_FAULT_OOM, &got));
    cr_assert_eq(got.kind, TRACE_FAULT_OOM);
    cr_assert_not(trace_fault_take(t, 0, TRACE_FAULT_OOM, &got), "once");
    trace_set_phase(t, 0, PHASE_SYNC); /* the step's sync waits for backward */
    cr_assert(trace_fault_take(t, 0, TRACE_FAULT_ERROR, &got));
    cr_assert_eq(got.error, TRACE_ERR_ILLEGAL_ADDRESS);
    trace_set_phase(t, 0, PHASE_CLEANUP);
    cr_assert(trace_fault_take(t, 0, TRACE_FAULT_HANG, &got));
    cr_assert_eq(got.extra_ns, 50000000ull);
    cr_assert_lt(trace_test_sync_ns(t, PHASE_CLEANUP), 50000000ull, "taken: not waited again");
    cr_assert_not(trace_fault_take(t, 1, TRACE_FAULT_HANG, &got), "no device 1");
    trace_destroy(t);
}

/* write:checkpoint:N fails the nth checkpoint file of the run, once; others are written. */
Test(trace, a_write_fault_fires_on_its_nth_file_once) {
    struct trace *t;
    struct trace_inject w2, w4, got;
    char err[128];
    cr_assert_eq(trace_create(&t, NULL, 1), 0);
    cr_assert_eq(trace_inject_parse("write:checkpoint:2", &w2, err, sizeof(err)), 0);
    cr_assert_eq(trace_inject_parse("write:checkpoint:4", &w4, err, sizeof(err)), 0);
    cr_assert_eq(trace_add_inject(t, 0, &w2), 0);
    cr_assert_eq(trace_add_inject(t, 0, &w4), 0);
    trace_set_phase(t, 0, PHASE_CHECKPOINT);
    cr_assert_not(trace_fault_take(t, 0, TRACE_FAULT_WRITE, &got), "counted writes only");
    bool fired[6];
    for (int i = 0; i < 6; i++)
        fired[i] = trace_fault_write(t, 0) == TRACE_FAULT_WRITE;
    cr_assert(!fired[0] && fired[1] && !fired[2] && fired[3] && !fired[4] && !fired[5]);
    cr_assert_eq(trace_fault_write(t, 1), -1, "no device 1");
    trace_destroy(t);
}

/* A synchronize and an all-reduce are slow past slow_ns; joining and leaving the group are
 * slow only past TRACE_WATCH_SETUP_SLOW_NS (they take a second on healthy GPUs), or slow_ns when
 * that is longer; every call is a HANG past hang_ns. */
Test(trace, watch_grades_setup_collectives_with_a_longer_slow_threshold) {
    const uint64_t s = 1000000000ull, slow = 1 * s, hang = 30 * s;
    const int sync = -1;
    cr_assert_eq(trace_watch_grade(s / 2, sync, slow, hang), TRACE_WATCH_OK);
    cr_assert_eq(trace_watch_grade(2 * s, sync, slow, hang), TRACE_WATCH_SLOW);
    cr_assert_eq(trace_watch_grade(2 * s, EV_COLL_ALLREDUCE, slow, hang), TRACE_WATCH_SLOW);
    cr_assert_eq(trace_watch_grade(2 * s, EV_COLL_BARRIER, slow, hang), TRACE_WATCH_SLOW);
    const int setup[] = {EV_COLL_INIT, EV_COLL_DESTROY};
    for (size_t k = 0; k < 2; k++) {
        int op = setup[k];
        cr_assert_eq(trace_watch_grade(2 * s, op, slow, hang), TRACE_WATCH_OK, "op %d", op);
        cr_assert_eq(trace_watch_grade(TRACE_WATCH_SETUP_SLOW_NS - 1, op, slow, hang),
                     TRACE_WATCH_OK);
        cr_assert_eq(trace_watch_grade(TRACE_WATCH_SETUP_SLOW_NS, op, slow, hang),
                     TRACE_WATCH_SLOW);
        cr_assert_eq(trace_watch_grade(8 * s, op, 10 * s, hang), TRACE_WATCH_OK,
                     "a longer --sync-slow holds for setup too");
        cr_assert_eq(trace_watch_grade(hang, op, slow, hang), TRACE_WATCH_HANG);
        cr_assert_eq(trace_watch_grade(2 * s, op, slow / 2, 2 * s), TRACE_WATCH_HANG,
                     "a HANG is never put off");
    }
    cr_assert_eq(trace_watch_grade(hang, sync, slow, hang), TRACE_WATCH_HANG);
}
