/* ringside doctor's multi-GPU rows on the CPU backend's simulated devices, with the fake NCCL
 * library (tests/fakes/fake_nccl.c) as the communication library: the skip rows without two
 * GPUs, the library row (found with its version, missing, too old), the peer rows, a group
 * that forms and an all-reduce whose sum is checked, and a rank that never joins becoming a
 * timed-out row while the check still finishes. */
#include "tui/doctor/doctor.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#ifndef RS_FAKE_NCCL
#error "RS_FAKE_NCCL: the path of the fake NCCL library"
#endif

TestSuite(doctor_mgpu, .timeout = 60);

static struct doctor_report tm_r;

/* Two simulated devices through the fake library, 5 s per row, a 1 MiB large message. */
static struct doctor_mgpu_opts tm_opts(void) {
    struct doctor_mgpu_opts o = {.max_devices = 2,
                                 .comm_lib = RS_FAKE_NCCL,
                                 .timeout_s = 5,
                                 .large_bytes = 1u << 20,
                                 .stall_rank = -1};
    snprintf(o.backend, sizeof(o.backend), "cpu");
    return o;
}

static void tm_run(const struct doctor_mgpu_opts *o) {
    memset(&tm_r, 0, sizeof(tm_r));
    bool hung = true;
    doctor_check_mgpu(o, &tm_r, &hung);
    cr_assert_not(hung, "no rank may be left behind");
    for (size_t i = 0; i < tm_r.n; i++)
        cr_assert_str_eq(tm_r.rows[i].group, "multi-gpu");
}

static const struct doctor_row *tm_row(const char *name) {
    for (size_t i = 0; i < tm_r.n; i++)
        if (strcmp(tm_r.rows[i].name, name) == 0)
            return &tm_r.rows[i];
    cr_assert_fail("no row '%s'", name);
    return NULL;
}

#define TM_EXPECT(name, st)                                                                        \
    cr_assert_eq(tm_row(name)->status, st, "%s: %s (%s) %s", name,                                 \
                 doctor_status_name(tm_row(name)->status), tm_row(name)->value,                    \
                 tm_row(name)->remedy)
#define TM_HAS(field, name, text)                                                                  \
    cr_assert(strstr(tm_row(name)->field, text), "%s " #field ": %s", name, tm_row(name)->field)

static const char *const tm_group_rows[] = {"group init/teardown", "all-reduce 4 KiB",
                                            "all-reduce 1 MiB"};

/* The CPU-only build, or a machine without GPUs: every row says why it did not run. */
Test(doctor_mgpu, without_two_gpus_every_row_is_skipped) {
    struct doctor_mgpu_opts o = tm_opts();
    o.backend[0] = '\0';
    o.n_found = 1;
    o.skip_reason = "this build has no GPU backend";
    tm_run(&o);
    cr_assert_eq(tm_r.n, 5);
    for (size_t i = 0; i < tm_r.n; i++) {
        cr_assert_eq(tm_r.rows[i].status, DOCTOR_SKIP, "%s", tm_r.rows[i].name);
        cr_assert_str_eq(tm_r.rows[i].value, "needs two GPUs (found 1)");
        cr_assert_str_eq(tm_r.rows[i].remedy, "this build has no GPU backend");
    }
    TM_EXPECT("peer access", DOCTOR_SKIP);
    cr_assert_eq(doctor_exit_status(&tm_r), 0);
}

/* A backend with one device: the count is the backend's, the rows are skipped. */
Test(doctor_mgpu, one_device_is_skipped_with_the_count) {
    struct doctor_mgpu_opts o = tm_opts();
    o.max_devices = 1;
    tm_run(&o);
    cr_assert_eq(tm_r.n, 5);
    TM_EXPECT("comm library", DOCTOR_SKIP);
    TM_HAS(value, "all-reduce 4 KiB", "needs two GPUs (found 1)");
}

/* The fake library's version and file; two devices with peer access; the group forms and
 * leaves; both all-reduces sum right and are timed. */
Test(doctor_mgpu, the_fake_library_reduces_on_two_devices) {
    struct doctor_mgpu_opts o = tm_opts();
    setenv("FAKE_NCCL_VERSION", "21803", 1);
    tm_run(&o);
    unsetenv("FAKE_NCCL_VERSION");
    TM_EXPECT("comm library", DOCTOR_OK);
    cr_assert_str_eq(tm_row("comm library")->value, "NCCL 2.18.3 (" RS_FAKE_NCCL ")");
    TM_EXPECT("peer access 0->1", DOCTOR_OK);
    TM_EXPECT("peer access 1->0", DOCTOR_OK);
    TM_HAS(value, "peer access 0->1", "yes (NVLink/PCIe not distinguished)");
    for (size_t k = 0; k < 3; k++)
        TM_EXPECT(tm_group_rows[k], DOCTOR_OK);
    TM_HAS(value, "group init/teardown", "2 devices joined a group in");
    TM_HAS(value, "all-reduce 4 KiB", "sum correct on 2 devices; latency");
    TM_HAS(value, "all-reduce 1 MiB", "sum correct on 2 devices; bus bandwidth");
    TM_HAS(value, "all-reduce 1 MiB", "GB/s");
    cr_assert_eq(tm_r.n, 6);
    cr_assert_eq(doctor_exit_status(&tm_r), 0);
}

/* Three ranks through the CPU communicator (no library needed): one peer row per ordered
 * pair, sums of three, then an all-reduce row per pair. */
Test(doctor_mgpu, three_devices_on_the_cpu_communicator) {
    struct doctor_mgpu_opts o = tm_opts();
    o.max_devices = 3;
    o.comm_lib = "libnccl-absent.so.2";
    snprintf(o.comm, sizeof(o.comm), "cpu");
    tm_run(&o);
    TM_EXPECT("comm library", DOCTOR_WARN);
    static const char *const pairs[] = {"peer access 0->1", "peer access 0->2", "peer access 1->0",
                                        "peer access 1->2", "peer access 2->0", "peer access 2->1"};
    for (size_t k = 0; k < 6; k++)
        TM_EXPECT(pairs[k], DOCTOR_OK);
    for (size_t k = 0; k < 3; k++)
        TM_EXPECT(tm_group_rows[k], DOCTOR_OK);
    TM_HAS(value, "all-reduce 4 KiB", "sum correct on 3 devices");
    /* then every pair alone, each checked as a group of two (sums of two ranks' values) */
    static const char *const alone[] = {"all-reduce 0+1", "all-reduce 0+2", "all-reduce 1+2"};
    for (size_t k = 0; k < 3; k++) {
        TM_EXPECT(alone[k], DOCTOR_OK);
        TM_HAS(value, alone[k], "sum correct; 4 KiB in");
        TM_HAS(value, alone[k], "GB/s bus bandwidth");
    }
    cr_assert_eq(tm_r.n, 1 + 6 + 3 + 3, "library, peers, group rows, pairs");
}

/* No library: a warn row naming it and how to get it; the group rows do not run. */
Test(doctor_mgpu, a_missing_library_names_it_and_how_to_get_it) {
    struct doctor_mgpu_opts o = tm_opts();
    o.comm_lib = "libnccl-absent.so.2";
    tm_run(&o);
    TM_EXPECT("comm library", DOCTOR_WARN);
    TM_HAS(value, "comm library", "libnccl-absent.so.2 not found");
    TM_HAS(remedy, "comm library", "apt install libnccl2");
    TM_HAS(remedy, "comm library", "--comm-lib PATH");
    TM_EXPECT("peer access 0->1", DOCTOR_OK);
    for (size_t k = 0; k < 3; k++) {
        TM_EXPECT(tm_group_rows[k], DOCTOR_SKIP);
        TM_HAS(remedy, tm_group_rows[k], "no usable communication library");
    }
    cr_assert_eq(doctor_exit_status(&tm_r), 0, "one GPU still trains: a warning");
}

Test(doctor_mgpu, a_library_too_old_says_upgrade) {
    struct doctor_mgpu_opts o = tm_opts();
    setenv("FAKE_NCCL_VERSION", "21304", 1);
    tm_run(&o);
    unsetenv("FAKE_NCCL_VERSION");
    TM_EXPECT("comm library", DOCTOR_WARN);
    TM_HAS(value, "comm library", "NCCL 2.13.4 is too old: need 2.14 or newer");
    TM_HAS(remedy, "comm library", "upgrade: install NCCL");
    TM_EXPECT("group init/teardown", DOCTOR_SKIP);
}

/* Rank 1 never joins: the init row fails once its timeout passes, naming the rank; the
 * group is aborted, every thread comes back, and the rows after are skipped. */
Test(doctor_mgpu, a_rank_that_never_joins_times_out_and_is_named) {
    struct doctor_mgpu_opts o = tm_opts();
    o.timeout_s = 1;
    o.stall_rank = 1;
    tm_run(&o);
    TM_EXPECT("comm library", DOCTOR_OK);
    TM_EXPECT("group init/teardown", DOCTOR_FAIL);
    TM_HAS(value, "group init/teardown", "timed out after 1 s: rank 0 waits in init for ");
    TM_HAS(value, "group init/teardown", "rank 1 has not entered it");
    TM_HAS(remedy, "group init/teardown", "never joins");
    TM_EXPECT("all-reduce 4 KiB", DOCTOR_SKIP);
    TM_HAS(remedy, "all-reduce 4 KiB", "the group did not form");
    cr_assert_eq(doctor_exit_status(&tm_r), 1);
}

/* A rank that fails to init (the fake's FAKE_NCCL_FAIL_RANK): a fail row with the library's
 * error, well before the timeout. */
Test(doctor_mgpu, a_failed_init_is_a_fail_row_with_the_error) {
    struct doctor_mgpu_opts o = tm_opts();
    o.timeout_s = 30;
    setenv("FAKE_NCCL_FAIL_RANK", "1", 1);
    tm_run(&o);
    unsetenv("FAKE_NCCL_FAIL_RANK");
    TM_EXPECT("group init/teardown", DOCTOR_FAIL);
    TM_HAS(value, "group init/teardown", "unhandled system error");
    TM_HAS(remedy, "group init/teardown", "NCCL_DEBUG=INFO");
    TM_EXPECT("all-reduce 4 KiB", DOCTOR_SKIP);
}
