/* Unit tests for a watched rank's hang diagnosis: the /proc stat line, a look at a process's
 * threads (a fixture tree in place of /proc), each verdict's rule, and the text. */
#include "backend/run/watch_diag.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Test(watch_diag, a_stat_line_with_a_name_of_spaces_and_parentheses) {
    char state, comm[16];
    uint64_t ticks = 0;
    const char *line = "4242 (pt (main) 1) S 1 4242 4242 0 -1 4194560 100 0 0 0 "
                       "250 50 0 0 20 0 3 0 12345 100000 200 18446744073709551615";
    cr_assert_eq(diag_stat_parse(line, &state, comm, sizeof(comm), &ticks), 0);
    cr_assert_eq(state, 'S');
    cr_assert_str_eq(comm, "pt (main) 1");
    cr_assert_eq(ticks, 300, "utime + stime");
    cr_assert_neq(diag_stat_parse("4242 pt S 1 2", &state, comm, sizeof(comm), &ticks), 0);
    cr_assert_neq(diag_stat_parse("4242 (pt) S 1 2 3", &state, comm, sizeof(comm), &ticks), 0,
                  "too few fields");
}

/* A thread's stat and wchan files under root/pid/task/tid. */
static void td_thread(const char *root, int pid, int tid, char state, unsigned ticks,
                      const char *wchan) {
    char dir[400], path[450];
    FILE *f;
    snprintf(dir, sizeof(dir), "%s/%d", root, pid);
    mkdir(dir, 0755);
    snprintf(dir, sizeof(dir), "%s/%d/task", root, pid);
    mkdir(dir, 0755);
    snprintf(dir, sizeof(dir), "%s/%d/task/%d", root, pid, tid);
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/stat", dir);
    cr_assert_not_null(f = fopen(path, "w"));
    fprintf(f, "%d (python3) %c 1 1 1 0 -1 0 0 0 0 0 %u 0 0 0 20 0 1 0 1 1 1\n", tid, state, ticks);
    fclose(f);
    snprintf(path, sizeof(path), "%s/wchan", dir);
    cr_assert_not_null(f = fopen(path, "w"));
    fprintf(f, "%s", wchan);
    fclose(f);
}

Test(watch_diag, a_look_at_the_threads_counts_states_and_cpu) {
    char root[256];
    cr_assert_eq(rs_test_tmpdir(root, sizeof(root)), 0);
    td_thread(root, 7, 7, 'S', 100, "futex_wait_queue");
    td_thread(root, 7, 8, 'S', 10, "futex_wait_queue");
    td_thread(root, 7, 9, 'D', 5, "amdgpu_fence_wait");
    static struct diag_proc a, b;
    diag_proc_read(root, 7, NULL, &a);
    cr_assert(a.read, "%s", a.why);
    cr_assert_eq(a.n_threads, 3);
    cr_assert_eq(a.sleeping, 2);
    cr_assert_eq(a.disk, 1);
    cr_assert_str_eq(a.disk_wchan, "amdgpu_fence_wait");
    cr_assert_str_eq(a.top_wchan, "futex_wait_queue");
    cr_assert_not(a.has_cpu, "one look has no CPU figure");
    cr_assert_eq(a.main_state, 'S', "the thread whose id is the pid's");
    cr_assert_str_eq(a.main_wchan, "futex_wait_queue");
    a.t_ns -= 1000000000ull; /* as if a second ago */
    long hz = sysconf(_SC_CLK_TCK);
    td_thread(root, 7, 7, 'R', 100 + (unsigned)hz, "0"); /* a whole core for that second */
    diag_proc_read(root, 7, &a, &b);
    cr_assert(b.has_cpu);
    cr_assert_eq(b.running, 1);
    cr_assert_float_eq(b.top_thread_pct, 100.0, 5.0);
    cr_assert_float_eq(b.cpu_pct, 100.0, 5.0);
    cr_assert_eq(b.main_state, 'R');
    cr_assert_float_eq(b.main_pct, 100.0, 5.0);
    diag_proc_read(root, 99, NULL, &b);
    cr_assert_not(b.read);
    cr_assert_neq(b.why[0], '\0');
    rs_test_rmtree(root);
}

static void td_in(struct diag_in *in, struct diag_proc *p) {
    memset(in, 0, sizeof(*in));
    memset(p, 0, sizeof(*p));
    snprintf(in->who, sizeof(in->who), "rank 0 (pid 41)");
    snprintf(in->call, sizeof(in->call), "allreduce #9");
    in->collective = true;
    in->age_s = 3;
    p->read = p->has_cpu = true;
    p->n_threads = p->sleeping = 4;
    in->proc = p;
    in->has_busy = true;
}

Test(watch_diag, every_verdict_has_its_rule) {
    static struct diag_in in;
    static struct diag_proc p;
    td_in(&in, &p);
    cr_assert_eq(diag_judge(&in), DIAG_WAITING, "idle GPU, sleeping threads");
    p.top_thread_pct = 99, p.running = 1, p.sleeping = 3;
    cr_assert_eq(diag_judge(&in), DIAG_SPINNING);
    in.busy_pct = 100;
    cr_assert_eq(diag_judge(&in), DIAG_GPU_BUSY);
    p.disk = 1;
    cr_assert_eq(diag_judge(&in), DIAG_IN_DRIVER);
    in.n_peers = 2;
    in.peers[0] = (struct diag_peer){.rank = 1, .attached = true};
    in.peers[1] = (struct diag_peer){.rank = 2, .attached = true, .not_entered = true};
    snprintf(in.peers[1].doing, sizeof(in.peers[1].doing), "last in forward");
    cr_assert_eq(diag_judge(&in), DIAG_PEER_BEHIND);
    char cause[256];
    diag_cause(&in, DIAG_PEER_BEHIND, cause, sizeof(cause));
    cr_assert_str_eq(cause, "rank 2 has not entered it (last in forward)");
    in.peers[0].exited = true;
    cr_assert_eq(diag_judge(&in), DIAG_PEER_EXITED);
    in.collective = false; /* a synchronize has no peers to wait for */
    cr_assert_eq(diag_judge(&in), DIAG_IN_DRIVER);
    in.kmsg_failures = 1;
    snprintf(in.kmsg_first, sizeof(in.kmsg_first), "ring gfx timeout");
    cr_assert_eq(diag_judge(&in), DIAG_GPU_FAILED);
    memset(&in, 0, sizeof(in));
    cr_assert_eq(diag_judge(&in), DIAG_UNKNOWN, "nothing known");
}

Test(watch_diag, the_text_has_the_verdict_its_evidence_and_what_helps) {
    static struct diag_in in;
    static struct diag_proc p;
    static char out[4096];
    td_in(&in, &p);
    in.n_peers = 1;
    in.peers[0] = (struct diag_peer){.rank = 1, .attached = true, .not_entered = true};
    snprintf(in.peers[0].doing, sizeof(in.peers[0].doing), "sleeping in hrtimer_nanosleep");
    in.missing = 2;
    in.has_gpu = in.has_power = true;
    snprintf(in.gpu, sizeof(in.gpu), "GPU 0000:03:00.0");
    in.power_w = 31;
    size_t n = diag_format(&in, diag_judge(&in), out, sizeof(out));
    cr_assert_eq(n, strlen(out));
    cr_assert_not_null(strstr(out, "Verdict: a peer rank has not entered the collective\n"), "%s",
                       out);
    cr_assert_not_null(strstr(out, "Cause: rank 1 has not entered it (sleeping in"), "%s", out);
    cr_assert_not_null(strstr(out, "Where: rank 0 (pid 41) in allreduce #9 for 3.0 s"), "%s", out);
    cr_assert_not_null(strstr(out, "2 ranks of the group are not attached here"), "%s", out);
    cr_assert_not_null(strstr(out, "GPU 0000:03:00.0: busy 0%, 31 W"), "%s", out);
    cr_assert_not_null(strstr(out, "What helps:\n  - "), "%s", out);
    char small[64];
    n = diag_format(&in, DIAG_PEER_BEHIND, small, sizeof(small));
    cr_assert_eq(n, strlen(small), "cut to fit");
    cr_assert_lt(n, sizeof(small));
}
