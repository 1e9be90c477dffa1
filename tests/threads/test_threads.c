/* The multi-threaded scenarios as a Criterion suite (the same code runs under TSan). */
#include "tests/threads/thread_cases.h"

#include <criterion/criterion.h>

TestSuite(threads, .timeout = 120);

#define THREADS_TEST(name)                                                                         \
    Test(threads, name) {                                                                          \
        char why[512] = "";                                                                        \
        cr_assert_eq(thread_case_##name(why, sizeof(why)), 0, "%s", why);                          \
    }

THREADS_TEST(ring_producers)
THREADS_TEST(errtee_writers)
THREADS_TEST(snap_no_tearing)
THREADS_TEST(sync_in_flight)
THREADS_TEST(engine_commands)
THREADS_TEST(engine_multi_commands)
THREADS_TEST(engine_multi_drop)
THREADS_TEST(engine_multi_teardown)
THREADS_TEST(run_stop_deadline)
THREADS_TEST(telemetry)
THREADS_TEST(kmsg_fifo)
THREADS_TEST(kmsg_file_follow)
THREADS_TEST(kmsg_record_gap)
THREADS_TEST(kmsg_unreadable)
THREADS_TEST(kmsg_session_late)
THREADS_TEST(kmsg_missing_file)
THREADS_TEST(kmsg_prompt_stop)
THREADS_TEST(kmsg_flood)
THREADS_TEST(kmsg_inject)
THREADS_TEST(kmsg_inject_stop)
THREADS_TEST(watchdog)
THREADS_TEST(agent_log_followers)
THREADS_TEST(agent_http_streams)
THREADS_TEST(agent_http_drippers)
THREADS_TEST(remote_attach)
THREADS_TEST(comm_allreduce)
THREADS_TEST(comm_rounds)
THREADS_TEST(comm_init_missing)
THREADS_TEST(comm_stuck_abort)
THREADS_TEST(comm_destroy_timeout)
THREADS_TEST(comm_mismatch)
THREADS_TEST(comm_nccl_group)
THREADS_TEST(comm_nccl_init_missing)
THREADS_TEST(comm_nccl_destroy_timeout)
THREADS_TEST(comm_nccl_abort)
THREADS_TEST(comm_nccl_abort_idle)
THREADS_TEST(comm_nccl_init_error)
