/* Tests for the communicator on one thread: opening, the NCCL loader's failures (no library, a
 * path that is not one, a library without NCCL's symbols, one too old), calls out of order,
 * the record of a call, the state's description and an abort before any call. The threaded
 * scenarios are in tests/threads/thread_comm*.c. */
#include "backend/comm/comm.h"
#include "backend/core/mono.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(comm, .timeout = 30);

static char tc_err[512];

static int tc_open(const char *name, unsigned n, const char *lib, struct comm **c) {
    struct comm_conf conf = {.n_ranks = n, .lib = lib};
    tc_err[0] = '\0';
    return comm_open(name, &conf, c, tc_err, sizeof(tc_err));
}

#define TC_OPEN_FAILS(name, n, lib, want_rc, want_err)                                             \
    do {                                                                                           \
        struct comm *c_ = NULL;                                                                    \
        cr_assert_eq(tc_open(name, n, lib, &c_), want_rc, "%s", tc_err);                           \
        cr_assert_str_eq(tc_err, want_err);                                                        \
        cr_assert_null(c_);                                                                        \
    } while (0)

Test(comm, unknown_names_and_sizes_are_refused) {
    TC_OPEN_FAILS("mpi", 2, NULL, -ENOENT, "unknown communicator 'mpi' (cpu, nccl)");
    TC_OPEN_FAILS("cpu", 0, NULL, -EINVAL, "0 ranks: a group has 1 to 16");
    TC_OPEN_FAILS("cpu", 17, NULL, -EINVAL, "17 ranks: a group has 1 to 16");
}

/* ---- the loader ---- */

static bool tc_loadable(const char *name) {
    void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h != NULL;
}

/* Without --comm-lib the platform's library is loaded by its soname: where it is missing, one
 * line says how to get it; where it is installed, it is found (whatever follows on a machine
 * without a GPU is not that line). */
Test(comm, default_library_loaded_or_missing_says_how_to_get_it) {
    static const char *const missing[][2] = {
        {"libnccl.so.2", "libnccl.so.2 not found: install NCCL (libnccl2) or give --comm-lib PATH"},
        {"librccl.so.1", "librccl.so.1 not found: install RCCL (rccl) or give --comm-lib PATH"}};
    struct comm *c = NULL;
    int rc = tc_open("nccl", 2, NULL, &c);
    if (c)
        comm_close(c);
    if (rc == -ENOENT) {
        size_t k = strcmp(tc_err, missing[0][1]) == 0 ? 0 : 1;
        cr_assert_str_eq(tc_err, missing[k][1]);
        cr_assert(!tc_loadable(missing[k][0]), "%s is installed, yet: %s", missing[k][0], tc_err);
    } else {
        cr_assert(tc_loadable(missing[0][0]) || tc_loadable(missing[1][0]),
                  "neither library is installed, yet: rc %d %s", rc, tc_err);
        cr_assert_null(strstr(tc_err, "not found"), "%s", tc_err);
    }
}

Test(comm, library_names_and_paths_that_are_missing) {
    TC_OPEN_FAILS("nccl", 2, "libnccl-absent.so.2", -ENOENT,
                  "libnccl-absent.so.2 not found: install NCCL (libnccl2) or give --comm-lib PATH");
    TC_OPEN_FAILS("nccl", 2, "librccl-absent.so.1", -ENOENT,
                  "librccl-absent.so.1 not found: install RCCL (rccl) or give --comm-lib PATH");
    TC_OPEN_FAILS("nccl", 2, "/nonexistent/libnccl.so.2", -ENOENT,
                  "/nonexistent/libnccl.so.2 not found");
}

Test(comm, a_file_that_is_no_library_says_why) {
    char dir[256], path[512];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(rs_test_write_file(dir, "libnccl.so.2", "not a library\n", path, sizeof(path)), 0);
    struct comm *c = NULL;
    cr_assert_eq(tc_open("nccl", 2, path, &c), -ELIBBAD, "%s", tc_err);
    char want[600];
    snprintf(want, sizeof(want), "cannot load %s: ", path);
    cr_assert(strncmp(tc_err, want, strlen(want)) == 0 && strlen(tc_err) > strlen(want), "%s",
              tc_err);
    rs_test_rmtree(dir);
}

Test(comm, a_library_without_the_symbols_is_named) {
    TC_OPEN_FAILS("nccl", 2, "libm.so.6", -ENOSYS,
                  "libm.so.6 lacks ncclGetVersion (not an NCCL 2.14+ library?)");
}

Test(comm, a_library_too_old_is_refused_with_its_version) {
    setenv("FAKE_NCCL_VERSION", "21304", 1); /* 2.13.4: no non-blocking communicators yet */
    TC_OPEN_FAILS("nccl", 2, RS_FAKE_NCCL, -ENOTSUP,
                  "NCCL 2.13.4 is too old: need 2.14 or newer (non-blocking communicators)");
    setenv("FAKE_NCCL_VERSION", "2804", 1); /* 2.8.4: the version code's older layout */
    TC_OPEN_FAILS("nccl", 2, RS_FAKE_NCCL, -ENOTSUP,
                  "NCCL 2.8.4 is too old: need 2.14 or newer (non-blocking communicators)");
    unsetenv("FAKE_NCCL_VERSION");
    struct comm *c = NULL;
    cr_assert_eq(tc_open("nccl", 2, RS_FAKE_NCCL, &c), 0, "%s", tc_err);
    cr_assert_str_eq(comm_name(c), "nccl");
    cr_assert_eq(comm_size(c), 2);
    comm_close(c);
}

/* ---- asking a library what it is ---- */

Test(comm, probe_names_the_file_and_the_version) {
    struct comm_lib_info li;
    setenv("FAKE_NCCL_VERSION", "21803", 1);
    cr_assert_eq(comm_lib_probe(RS_FAKE_NCCL, &li, tc_err, sizeof(tc_err)), 0, "%s", tc_err);
    unsetenv("FAKE_NCCL_VERSION");
    cr_assert_str_eq(li.name, RS_FAKE_NCCL);
    cr_assert_str_eq(li.path, RS_FAKE_NCCL, "the loader found it where it was asked");
    cr_assert_str_eq(li.version, "NCCL 2.18.3");
    cr_assert_eq(li.version_code, 21803);
    cr_assert(strstr(li.install, "libnccl2"), "%s", li.install);
}

Test(comm, probe_of_a_missing_library_says_how_to_get_it) {
    struct comm_lib_info li;
    cr_assert_eq(comm_lib_probe("librccl-absent.so.1", &li, tc_err, sizeof(tc_err)), -ENOENT);
    cr_assert_str_eq(tc_err,
                     "librccl-absent.so.1 not found: install RCCL (rccl) or give --comm-lib PATH");
    cr_assert_str_eq(li.name, "librccl-absent.so.1");
    cr_assert_str_eq(li.path, "");
    cr_assert_str_eq(li.version, "");
    cr_assert(strstr(li.install, "apt install rccl"), "%s", li.install);
    cr_assert_eq(comm_lib_probe("libm.so.6", &li, tc_err, sizeof(tc_err)), -ENOSYS);
    cr_assert(strstr(li.install, "apt install libnccl2"), "%s", li.install);
}

Test(comm, probe_of_a_library_too_old_still_gives_its_version) {
    struct comm_lib_info li;
    setenv("FAKE_NCCL_VERSION", "21304", 1);
    cr_assert_eq(comm_lib_probe(RS_FAKE_NCCL, &li, tc_err, sizeof(tc_err)), -ENOTSUP);
    unsetenv("FAKE_NCCL_VERSION");
    cr_assert_str_eq(tc_err,
                     "NCCL 2.13.4 is too old: need 2.14 or newer (non-blocking communicators)");
    cr_assert_str_eq(li.version, "NCCL 2.13.4");
    cr_assert_str_eq(li.path, RS_FAKE_NCCL);
}

/* ---- calls on one thread ---- */

Test(comm, calls_out_of_order_are_refused_without_failing_the_group) {
    struct comm *c;
    char err[512];
    float x[3] = {1, 2, 3};
    cr_assert_eq(tc_open("cpu", 2, NULL, &c), 0, "%s", tc_err);
    cr_assert_eq(comm_allreduce(c, 0, x, 3, COMM_F32, COMM_RED_SUM, NULL, 0, err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "allreduce on rank 0: it has not joined (init first)");
    cr_assert_eq(comm_barrier(c, 2, 0, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "barrier: rank 2 out of range (a group of 2)");
    cr_assert_eq(comm_allreduce(c, 1, NULL, 3, COMM_F32, COMM_RED_SUM, NULL, 0, err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "allreduce on rank 1: no buffer");
    cr_assert_eq(comm_allreduce(c, 1, x, 3, COMM_F32, (enum comm_red)7, NULL, 0, err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "allreduce on rank 1: unknown reduction 7");
    cr_assert_eq(comm_destroy(c, 0, 0, err, sizeof(err)), 0, "nothing to release: %s", err);
    cr_assert_eq(comm_failed(c), 0);
    struct comm_snap s;
    comm_snapshot(c, &s);
    cr_assert_eq(s.rank[0].seq + s.rank[1].seq, 0, "refused calls entered nothing");
    comm_close(c);
}

Test(comm, one_rank_reduces_to_itself_and_keeps_a_record) {
    struct comm *c;
    char err[512];
    float x[3] = {1.5f, -2, 3}, m[3] = {1.5f, -2, 3};
    cr_assert_eq(tc_open("cpu", 1, NULL, &c), 0, "%s", tc_err);
    cr_assert_eq(comm_init(c, 0, NULL, COMM_NO_TIMEOUT, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(comm_init(c, 0, NULL, COMM_NO_TIMEOUT, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "init on rank 0: it already called init");
    cr_assert_eq(comm_allreduce(c, 0, x, 3, COMM_F32, COMM_RED_SUM, NULL, 0, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert_eq(comm_allreduce(c, 0, m, 3, COMM_F32, COMM_RED_MEAN, NULL, 0, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert(x[0] == 1.5f && x[1] == -2 && x[2] == 3 && m[0] == 1.5f && m[2] == 3);
    cr_assert_eq(comm_barrier(c, 0, 0, err, sizeof(err)), 0, "%s", err);
    struct comm_op_stats st;
    comm_stats(c, 0, COMM_OP_ALLREDUCE, &st);
    cr_assert_eq(st.calls, 2);
    cr_assert_eq(st.errors, 0);
    cr_assert_eq(st.bytes, 2 * 3 * sizeof(float));
    cr_assert(st.max_ns >= st.p50_ns && st.sum_ns >= st.max_ns);
    comm_stats(c, 0, COMM_OP_INIT, &st);
    cr_assert_eq(st.calls, 1, "the refused second init is not a call");
    struct trace_hist h;
    comm_hist(c, 0, COMM_OP_BARRIER, &h);
    cr_assert_eq(h.count, 1);
    struct comm_snap s;
    comm_snapshot(c, &s);
    cr_assert_eq(s.rank[0].seq, 4, "init, two all-reduces, a barrier");
    cr_assert_eq(s.rank[0].op, COMM_OP_NONE);
    cr_assert_eq(s.rank[0].last_op, COMM_OP_BARRIER);
    cr_assert_eq(comm_destroy(c, 0, 0, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(comm_barrier(c, 0, 0, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "barrier on rank 0: it has left the group");
    comm_close(c);
}

/* Three ranks reduce doubles: the exact sum and mean in rank order, the same on every rank,
 * and the record counts eight bytes an element. */
struct tc_f64_rank {
    struct comm *c;
    unsigned rank;
    double buf[4];
    enum comm_red red;
    int rc;
    char err[512];
};

static void *tc_f64_run(void *arg) {
    struct tc_f64_rank *r = arg;
    r->rc = comm_init(r->c, r->rank, NULL, 10000000000ull, r->err, sizeof(r->err));
    if (r->rc == 0)
        r->rc = comm_allreduce(r->c, r->rank, r->buf, 4, COMM_F64, r->red, NULL, 10000000000ull,
                               r->err, sizeof(r->err));
    return NULL;
}

Test(comm, doubles_reduce_exactly_on_every_rank) {
    for (int red = COMM_RED_SUM; red <= COMM_RED_MEAN; red++) {
        struct comm *c;
        cr_assert_eq(tc_open("cpu", 3, NULL, &c), 0, "%s", tc_err);
        struct tc_f64_rank r[3];
        pthread_t th[3];
        for (unsigned k = 0; k < 3; k++) {
            r[k] = (struct tc_f64_rank){.c = c, .rank = k, .red = (enum comm_red)red};
            for (int i = 0; i < 4; i++)
                r[k].buf[i] = 1e-17 * (k + 1) + (double)i + 0.1 * k; /* below float's reach */
            cr_assert_eq(pthread_create(&th[k], NULL, tc_f64_run, &r[k]), 0);
        }
        for (unsigned k = 0; k < 3; k++)
            pthread_join(th[k], NULL);
        for (unsigned k = 0; k < 3; k++) {
            cr_assert_eq(r[k].rc, 0, "%s", r[k].err);
            for (int i = 0; i < 4; i++) {
                double want = (1e-17 + (double)i) + (2e-17 + (double)i + 0.1);
                want += 3e-17 + (double)i + 0.2;
                if (red == COMM_RED_MEAN)
                    want /= 3.0;
                cr_assert(r[k].buf[i] == want, "rank %u element %d: %.17g, not %.17g", k, i,
                          r[k].buf[i], want);
            }
        }
        struct comm_op_stats st;
        comm_stats(c, 1, COMM_OP_ALLREDUCE, &st);
        cr_assert_eq(st.bytes, 4 * sizeof(double));
        comm_close(c);
    }
}

Test(comm, an_abort_before_any_call_fails_every_later_one) {
    struct comm *c;
    char err[512];
    cr_assert_eq(tc_open("cpu", 2, NULL, &c), 0, "%s", tc_err);
    comm_abort(c);
    cr_assert_eq(comm_failed(c), -ECANCELED);
    cr_assert_eq(comm_init(c, 1, NULL, COMM_NO_TIMEOUT, err, sizeof(err)), -ECANCELED);
    cr_assert_str_eq(err, "init on rank 1: aborted: no rank is in a collective");
    struct comm_snap s;
    comm_snapshot(c, &s);
    cr_assert_eq(s.fail_rc, -ECANCELED);
    cr_assert_str_eq(s.fail_why, "aborted: no rank is in a collective");
    comm_abort(c); /* a second one changes nothing */
    cr_assert_eq(comm_failed(c), -ECANCELED);
    comm_close(c);
}

Test(comm, snapshot_wait_returns_on_a_change_or_at_its_timeout) {
    struct comm *c;
    char err[512];
    struct comm_snap s;
    cr_assert_eq(tc_open("cpu", 1, NULL, &c), 0, "%s", tc_err);
    uint64_t t0 = mono_now_ns();
    cr_assert_eq(comm_snapshot_wait(c, 0, 20000000ull, &s), -ETIMEDOUT);
    cr_assert(mono_now_ns() - t0 >= 20000000ull);
    cr_assert_eq(s.version, 0);
    cr_assert_eq(comm_init(c, 0, NULL, COMM_NO_TIMEOUT, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(comm_snapshot_wait(c, 0, COMM_NO_TIMEOUT, &s), 0);
    cr_assert_eq(s.version, 2, "entering and leaving init");
    comm_close(c);
}

/* ---- the description ---- */

#define TC_S 1000000000ull

static struct comm_snap tc_snap(unsigned n) {
    struct comm_snap s;
    memset(&s, 0, sizeof(s));
    s.n_ranks = n;
    return s;
}

static void tc_in(struct comm_snap *s, unsigned r, enum comm_op op, uint64_t since, uint64_t seq) {
    s->rank[r].op = (uint8_t)op;
    s->rank[r].since_ns = since;
    s->rank[r].seq = seq;
}

Test(comm, describe_names_who_waits_and_who_has_not_come) {
    char buf[256];
    struct comm_snap s = tc_snap(2);
    uint64_t now = 100 * TC_S;
    cr_assert_not(comm_snap_describe(&s, now, buf, sizeof(buf)));
    cr_assert_str_eq(buf, "no rank is in a collective");

    tc_in(&s, 0, COMM_OP_ALLREDUCE, now - 12300000000ull, 5);
    tc_in(&s, 1, COMM_OP_NONE, 0, 4);
    cr_assert(comm_snap_describe(&s, now, buf, sizeof(buf)));
    cr_assert_str_eq(buf, "rank 0 waits in allreduce for 12.3 s; rank 1 has not entered it");

    s = tc_snap(4);
    tc_in(&s, 0, COMM_OP_ALLREDUCE, now - 2 * TC_S, 5);
    tc_in(&s, 1, COMM_OP_NONE, 0, 4);
    tc_in(&s, 2, COMM_OP_ALLREDUCE, now - TC_S / 2, 5);
    tc_in(&s, 3, COMM_OP_NONE, 0, 4);
    comm_snap_describe(&s, now, buf, sizeof(buf));
    cr_assert_str_eq(buf, "ranks 0, 2 wait in allreduce for 2.0 s; ranks 1, 3 have not entered it");

    /* an NCCL rank whose all-reduce was queued has entered and left it */
    s = tc_snap(2);
    tc_in(&s, 0, COMM_OP_BARRIER, now - TC_S, 6);
    tc_in(&s, 1, COMM_OP_NONE, 0, 6);
    comm_snap_describe(&s, now, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 0 waits in barrier for 1.0 s; rank 1 is not in a collective");

    s = tc_snap(3);
    tc_in(&s, 0, COMM_OP_ALLREDUCE, now - 3 * TC_S, 5);
    tc_in(&s, 1, COMM_OP_BARRIER, now - 4 * TC_S, 4);
    tc_in(&s, 2, COMM_OP_NONE, 0, 3);
    comm_snap_describe(&s, now, buf, sizeof(buf));
    cr_assert_str_eq(buf, "rank 0 waits in allreduce for 3.0 s; rank 1 waits in barrier for "
                          "4.0 s; rank 2 has not entered allreduce");

    cr_assert(comm_snap_describe(&s, now, buf, 12));
    cr_assert_str_eq(buf, "rank 0 wait", "cut to the buffer");
}

Test(comm, op_names) {
    cr_assert_str_eq(comm_op_name(COMM_OP_NONE), "none");
    cr_assert_str_eq(comm_op_name(COMM_OP_INIT), "init");
    cr_assert_str_eq(comm_op_name(COMM_OP_ALLREDUCE), "allreduce");
    cr_assert_str_eq(comm_op_name(COMM_OP_BARRIER), "barrier");
    cr_assert_str_eq(comm_op_name(COMM_OP_DESTROY), "destroy");
    cr_assert_str_eq(comm_op_name(COMM_OP_COUNT), "?");
}
