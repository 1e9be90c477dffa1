/* Multi-threaded scenarios shared by the Criterion suites and the ThreadSanitizer driver
 * (Criterion itself cannot start under TSan). Each returns 0, or -1 with why filled. */
#ifndef RINGSIDE_TESTS_THREADS_THREAD_CASES_H
#define RINGSIDE_TESTS_THREADS_THREAD_CASES_H

#include <stddef.h>

struct thread_case {
    const char *name;
    int (*run)(char *why, size_t whylen);
};

/* NULL-terminated table of every scenario. */
extern const struct thread_case thread_cases[];

int thread_case_ring_producers(char *why, size_t whylen);
int thread_case_snap_no_tearing(char *why, size_t whylen);
int thread_case_sync_in_flight(char *why, size_t whylen);
int thread_case_engine_commands(char *why, size_t whylen);
int thread_case_engine_multi_commands(char *why, size_t whylen);
int thread_case_engine_multi_drop(char *why, size_t whylen);
int thread_case_engine_multi_teardown(char *why, size_t whylen);
int thread_case_run_stop_deadline(char *why, size_t whylen);
int thread_case_telemetry(char *why, size_t whylen);
int thread_case_watchdog(char *why, size_t whylen);
int thread_case_kmsg_fifo(char *why, size_t whylen);
int thread_case_kmsg_file_follow(char *why, size_t whylen);
int thread_case_kmsg_record_gap(char *why, size_t whylen);
int thread_case_kmsg_unreadable(char *why, size_t whylen);
int thread_case_kmsg_session_late(char *why, size_t whylen);
int thread_case_kmsg_missing_file(char *why, size_t whylen);
int thread_case_kmsg_prompt_stop(char *why, size_t whylen);
int thread_case_kmsg_flood(char *why, size_t whylen);
int thread_case_kmsg_inject(char *why, size_t whylen);
int thread_case_kmsg_inject_stop(char *why, size_t whylen);
int thread_case_agent_log_followers(char *why, size_t whylen);
int thread_case_agent_http_streams(char *why, size_t whylen);
int thread_case_agent_http_drippers(char *why, size_t whylen);
int thread_case_remote_attach(char *why, size_t whylen);
int thread_case_comm_allreduce(char *why, size_t whylen);
int thread_case_comm_rounds(char *why, size_t whylen);
int thread_case_comm_init_missing(char *why, size_t whylen);
int thread_case_comm_stuck_abort(char *why, size_t whylen);
int thread_case_comm_destroy_timeout(char *why, size_t whylen);
int thread_case_comm_mismatch(char *why, size_t whylen);
int thread_case_comm_nccl_group(char *why, size_t whylen);
int thread_case_comm_nccl_init_missing(char *why, size_t whylen);
int thread_case_comm_nccl_destroy_timeout(char *why, size_t whylen);
int thread_case_comm_nccl_abort(char *why, size_t whylen);
int thread_case_comm_nccl_abort_idle(char *why, size_t whylen);
int thread_case_comm_nccl_init_error(char *why, size_t whylen);
int thread_case_errtee_writers(char *why, size_t whylen);

#endif
