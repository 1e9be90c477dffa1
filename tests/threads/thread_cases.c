/* Multi-threaded scenarios: producers on the event ring, a snapshot writer racing a reader,
 * a sync watched from another thread, and the engine driven by commands while it runs. */
#include "tests/threads/thread_cases.h"

#include "backend/core/errbuf.h"
#include "backend/core/evring.h"
#include "backend/core/snap.h"
#include "backend/engine/engine.h"
#include "backend/trace/trace.h"
#include "tests/support/rs_test.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define TC_FAIL(...) return errbuf_set(why, whylen, -1, __VA_ARGS__)

#define TC_PRODUCERS 4
#define TC_PER_PROD  20000

struct tc_prod {
    struct evring *r;
    uint16_t id;
};

static void *tc_producer(void *arg) {
    struct tc_prod *p = arg;
    for (int i = 0; i < TC_PER_PROD; i++) {
        struct ev e = {.t_ns = 1, .kind = EV_PHASE, .dev = p->id};
        e.u.phase.step = i;
        evring_push(p->r, &e);
    }
    return NULL;
}

/* Every event is drained or counted as dropped; each producer's events stay in order. */
static int tc_ring_consume(struct evring *r, char *why, size_t whylen) {
    static struct ev out[128];
    int64_t last[TC_PRODUCERS] = {-1, -1, -1, -1};
    uint64_t got = 0, total = (uint64_t)TC_PRODUCERS * TC_PER_PROD;
    while (got + evring_dropped(r) < total) {
        size_t n = evring_drain(r, out, 128);
        for (size_t i = 0; i < n; i++) {
            if (out[i].u.phase.step <= last[out[i].dev])
                TC_FAIL("producer %u out of order", out[i].dev);
            last[out[i].dev] = out[i].u.phase.step;
        }
        got += n;
    }
    got += evring_drain(r, out, 128);
    if (got + evring_dropped(r) != total)
        TC_FAIL("%llu drained + %llu dropped != %llu pushed", (unsigned long long)got,
                (unsigned long long)evring_dropped(r), (unsigned long long)total);
    return 0;
}

int thread_case_ring_producers(char *why, size_t whylen) {
    struct evring *r;
    if (evring_create(&r, 256) != 0)
        TC_FAIL("evring_create");
    pthread_t t[TC_PRODUCERS];
    struct tc_prod p[TC_PRODUCERS];
    for (int k = 0; k < TC_PRODUCERS; k++) {
        p[k] = (struct tc_prod){r, (uint16_t)k};
        pthread_create(&t[k], NULL, tc_producer, &p[k]);
    }
    int rc = tc_ring_consume(r, why, whylen);
    for (int k = 0; k < TC_PRODUCERS; k++)
        pthread_join(t[k], NULL);
    evring_destroy(r);
    return rc;
}

struct tc_pair {
    uint64_t a, b; /* the writer keeps b == 3 * a: a torn read would break it */
};

#define TC_SNAP_WRITES 200000u

static void *tc_snap_writer(void *arg) {
    struct snap *s = arg;
    for (uint64_t i = 1; i <= TC_SNAP_WRITES; i++) {
        struct tc_pair *p = snap_write_begin(s);
        p->a = i;
        p->b = 3 * i;
        snap_publish(s);
    }
    return NULL;
}

int thread_case_snap_no_tearing(char *why, size_t whylen) {
    struct snap *s;
    if (snap_create(&s, sizeof(struct tc_pair)) != 0)
        TC_FAIL("snap_create");
    pthread_t t;
    pthread_create(&t, NULL, tc_snap_writer, s);
    uint64_t last = 0;
    int rc = 0;
    while (rc == 0 && last < TC_SNAP_WRITES) {
        const struct tc_pair *p = snap_read(s, NULL);
        if (p->b != 3 * p->a || p->a < last)
            rc = errbuf_set(why, whylen, -1, "read (%llu, %llu) after %llu",
                            (unsigned long long)p->a, (unsigned long long)p->b,
                            (unsigned long long)last);
        last = p->a;
    }
    pthread_join(t, NULL);
    snap_destroy(s);
    return rc;
}

struct tc_gate {
    atomic_int entered, release;
};

static int tc_gate_fn(void *arg) {
    struct tc_gate *g = arg;
    atomic_store(&g->entered, 1);
    while (!atomic_load(&g->release))
        ;
    return -5;
}

struct tc_sync_arg {
    struct trace *t;
    struct tc_gate *g;
    int rc;
};

static void *tc_sync_thread(void *arg) {
    struct tc_sync_arg *a = arg;
    a->rc = trace_sync(a->t, 1, SYNC_OP_DEVICE, tc_gate_fn, a->g);
    return NULL;
}

/* While one thread is inside trace_sync, another sees it in flight with op and phase. */
static int tc_sync_check(struct trace *t, struct tc_gate *g, char *why, size_t whylen) {
    while (!atomic_load(&g->entered))
        ;
    struct trace_inflight in;
    if (!trace_inflight(t, 1, &in) || in.op != SYNC_OP_DEVICE || in.phase != PHASE_CLEANUP)
        TC_FAIL("in-flight sync not visible (op %u phase %u)", in.op, in.phase);
    if (trace_inflight(t, 0, &in))
        TC_FAIL("device 0 reported busy");
    return 0;
}

int thread_case_sync_in_flight(char *why, size_t whylen) {
    struct evring *r;
    struct trace *t;
    if (evring_create(&r, 64) != 0 || trace_create(&t, r, 2) != 0)
        TC_FAIL("create");
    trace_set_phase(t, 1, PHASE_CLEANUP);
    struct tc_gate g = {0};
    struct tc_sync_arg a = {t, &g, 0};
    pthread_t th;
    pthread_create(&th, NULL, tc_sync_thread, &a);
    int rc = tc_sync_check(t, &g, why, whylen);
    atomic_store(&g.release, 1);
    pthread_join(th, NULL);
    struct trace_inflight in;
    struct trace_sync_summary s;
    trace_sync_summary(t, 1, SYNC_OP_DEVICE, &s);
    if (rc == 0 && (a.rc != -5 || trace_inflight(t, 1, &in) || s.count != 1))
        rc = errbuf_set(why, whylen, -1, "after the sync: rc %d, count %llu", a.rc,
                        (unsigned long long)s.count);
    trace_destroy(t);
    evring_destroy(r);
    return rc;
}

/* Drain events until the snapshot satisfies pred or the engine is done. */
static const struct engine_snap *tc_wait(struct engine *e, struct evring *r,
                                         bool (*pred)(const struct engine_snap *), size_t *n) {
    static struct ev buf[512];
    for (;;) {
        size_t got;
        while ((got = evring_drain(r, buf, 512)) > 0)
            *n += got;
        const struct engine_snap *s = engine_snap_read(e, NULL);
        if (pred(s) || engine_done(e))
            return s;
        struct pollfd pf = {evring_wake_fd(r), POLLIN, 0};
        poll(&pf, 1, 20);
    }
}

static bool tc_paused(const struct engine_snap *s) {
    return s->state == ENGINE_PAUSED;
}

static bool tc_training(const struct engine_snap *s) {
    return s->step > 0;
}

static bool tc_done(const struct engine_snap *s) {
    return s->state >= ENGINE_FINISHED;
}

/* Commands from this thread while the engine thread runs: pause, chunk, cleanup, stop. */
static int tc_engine_drive(struct engine *e, struct evring *r, char *why, size_t whylen) {
    size_t n = 0;
    engine_command(e, CMD_PAUSE, 0);
    if (engine_start(e) != 0)
        TC_FAIL("engine_start");
    if (tc_wait(e, r, tc_paused, &n)->state != ENGINE_PAUSED)
        TC_FAIL("never paused");
    engine_command(e, CMD_SET_CHUNK, 125);
    engine_command(e, CMD_RESUME, 0);
    tc_wait(e, r, tc_training, &n);
    engine_command(e, CMD_CLEANUP, 0);
    engine_command(e, CMD_STOP, 0);
    tc_wait(e, r, tc_done, &n);
    struct engine_result res;
    engine_join(e, &res);
    if (res.state != ENGINE_FINISHED || !res.stopped)
        TC_FAIL("state %d stopped %d: %s", res.state, res.stopped, res.error);
    if (n == 0)
        TC_FAIL("no events");
    return 0;
}

int thread_case_engine_commands(char *why, size_t whylen) {
    char dir[256], err[512];
    if (rs_test_tmpdir(dir, sizeof(dir)) != 0)
        TC_FAIL("tmpdir");
    struct engine_conf c;
    engine_conf_default(&c);
    c.synthetic_days = 4;
    c.epochs = 1000;
    c.threads = 2;
    snprintf(c.output_dir, sizeof(c.output_dir), "%s", dir);
    snprintf(c.backend, sizeof(c.backend), "cpu");
    struct evring *r;
    struct engine *e;
    int rc = evring_create(&r, 1u << 16);
    if (rc == 0 && (rc = engine_create(&e, &c, r, err, sizeof(err))) != 0)
        errbuf_set(why, whylen, -1, "engine_create: %s", err);
    if (rc == 0) {
        rc = tc_engine_drive(e, r, why, whylen);
        engine_destroy(e);
    }
    evring_destroy(r);
    rs_test_rmtree(dir);
    return rc;
}

const struct thread_case thread_cases[] = {
    {"ring_producers", thread_case_ring_producers},
    {"errtee_writers", thread_case_errtee_writers},
    {"snap_no_tearing", thread_case_snap_no_tearing},
    {"sync_in_flight", thread_case_sync_in_flight},
    {"engine_commands", thread_case_engine_commands},
    {"engine_multi_commands", thread_case_engine_multi_commands},
    {"engine_multi_drop", thread_case_engine_multi_drop},
    {"engine_multi_teardown", thread_case_engine_multi_teardown},
    {"run_stop_deadline", thread_case_run_stop_deadline},
    {"telemetry", thread_case_telemetry},
    {"watchdog", thread_case_watchdog},
    {"kmsg_fifo", thread_case_kmsg_fifo},
    {"kmsg_file_follow", thread_case_kmsg_file_follow},
    {"kmsg_record_gap", thread_case_kmsg_record_gap},
    {"kmsg_unreadable", thread_case_kmsg_unreadable},
    {"kmsg_session_late", thread_case_kmsg_session_late},
    {"kmsg_missing_file", thread_case_kmsg_missing_file},
    {"kmsg_prompt_stop", thread_case_kmsg_prompt_stop},
    {"kmsg_flood", thread_case_kmsg_flood},
    {"kmsg_inject", thread_case_kmsg_inject},
    {"kmsg_inject_stop", thread_case_kmsg_inject_stop},
    {"agent_log_followers", thread_case_agent_log_followers},
    {"agent_http_streams", thread_case_agent_http_streams},
    {"agent_http_drippers", thread_case_agent_http_drippers},
    {"remote_attach", thread_case_remote_attach},
    {"comm_allreduce", thread_case_comm_allreduce},
    {"comm_rounds", thread_case_comm_rounds},
    {"comm_init_missing", thread_case_comm_init_missing},
    {"comm_stuck_abort", thread_case_comm_stuck_abort},
    {"comm_destroy_timeout", thread_case_comm_destroy_timeout},
    {"comm_mismatch", thread_case_comm_mismatch},
    {"comm_nccl_group", thread_case_comm_nccl_group},
    {"comm_nccl_init_missing", thread_case_comm_nccl_init_missing},
    {"comm_nccl_destroy_timeout", thread_case_comm_nccl_destroy_timeout},
    {"comm_nccl_abort", thread_case_comm_nccl_abort},
    {"comm_nccl_abort_idle", thread_case_comm_nccl_abort_idle},
    {"comm_nccl_init_error", thread_case_comm_nccl_init_error},
    {NULL, NULL},
};
