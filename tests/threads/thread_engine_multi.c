/* Data-parallel training on simulated devices with everything that runs beside it: commands
 * from this thread, every device's snapshot read while the devices publish them, and the
 * watchdog reading every device's collective and position; then the group faults (a device
 * that leaves, a teardown that never ends) with the watchdog on. */
#include "backend/core/errbuf.h"
#include "backend/core/mono.h"
#include "backend/engine/engine.h"
#include "backend/run/run.h"
#include "backend/trace/trace_watch.h"
#include "tests/support/rs_test.h"
#include "tests/threads/thread_cases.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEM_FAIL(...) return errbuf_set(why, whylen, -1, __VA_ARGS__)

struct tem {
    char dir[256];
    struct evring *r;
    struct engine *e;
    struct trace_watch *w;
    size_t events, alerts;
    bool saw_peer; /* an alert named another device */
};

static int tem_open(struct tem *t, const char *devices, const char *inject, int epochs, char *why,
                    size_t whylen) {
    char err[512];
    struct engine_conf c;
    memset(t, 0, sizeof(*t));
    if (rs_test_tmpdir(t->dir, sizeof(t->dir)) != 0)
        TEM_FAIL("tmpdir");
    engine_conf_default(&c);
    c.synthetic_days = 4;
    c.epochs = epochs;
    c.batch = 64;
    c.comm_timeout_s = 1;
    c.teardown_timeout_s = 0.3;
    snprintf(c.output_dir, sizeof(c.output_dir), "%s", t->dir);
    snprintf(c.backend, sizeof(c.backend), "cpu");
    if (engine_devices_parse(devices, &c, err, sizeof(err)) != 0)
        TEM_FAIL("%s", err);
    if (inject && trace_inject_parse(inject, &c.inject[c.n_inject++], err, sizeof(err)) != 0)
        TEM_FAIL("%s", err);
    if (evring_create(&t->r, 1u << 16) != 0)
        TEM_FAIL("ring");
    if (engine_create(&t->e, &c, t->r, err, sizeof(err)) != 0)
        TEM_FAIL("engine_create: %s", err);
    if (trace_watch_start(&t->w, engine_trace(t->e), trace_devices(engine_trace(t->e)),
                          100000000ull, 300000000ull) != 0)
        TEM_FAIL("watchdog");
    return 0;
}

static void tem_close(struct tem *t) {
    trace_watch_stop(t->w);
    engine_destroy(t->e);
    evring_destroy(t->r);
    rs_test_rmtree(t->dir);
}

/* Drain, and read every device's snapshot, until pred holds on the first or the run ends. */
static void tem_wait(struct tem *t, bool (*pred)(const struct engine_snap *)) {
    static struct ev buf[512];
    unsigned devs[ENGINE_MAX_DEVICES];
    unsigned n = engine_devices(t->e, devs);
    for (;;) {
        size_t got;
        while ((got = evring_drain(t->r, buf, 512)) > 0) {
            t->events += got;
            for (size_t i = 0; i < got; i++)
                if (buf[i].kind == EV_ALERT) {
                    t->alerts++;
                    t->saw_peer |= strstr(buf[i].u.text.text, "; dev ") != NULL;
                }
        }
        for (unsigned k = 1; k < n; k++)
            (void)engine_snap_read_dev(t->e, k, NULL)->step;
        if (pred(engine_snap_read(t->e, NULL)) || engine_done(t->e))
            return;
        struct pollfd pf = {evring_wake_fd(t->r), POLLIN, 0};
        poll(&pf, 1, 10);
    }
}

static bool tem_training(const struct engine_snap *s) {
    return s->step > 3;
}

static bool tem_paused(const struct engine_snap *s) {
    return s->state == ENGINE_PAUSED;
}

static bool tem_never(const struct engine_snap *s) {
    (void)s;
    return false;
}

int thread_case_engine_multi_commands(char *why, size_t whylen) {
    struct tem t;
    int rc = tem_open(&t, "0-2", NULL, 1000, why, whylen);
    if (rc == 0 && engine_start(t.e) != 0)
        rc = errbuf_set(why, whylen, -1, "engine_start");
    if (rc == 0) {
        tem_wait(&t, tem_training);
        engine_command(t.e, CMD_PAUSE, 0);
        tem_wait(&t, tem_paused);
        engine_command(t.e, CMD_SET_CHUNK, 125);
        engine_command(t.e, CMD_CLEANUP, 0);
        engine_command(t.e, CMD_PROBE, 0);
        engine_command(t.e, CMD_RESUME, 0);
        engine_command(t.e, CMD_STOP, 0);
        tem_wait(&t, tem_never);
        struct engine_result res;
        engine_join(t.e, &res);
        if (res.state != ENGINE_FINISHED || !res.stopped)
            rc = errbuf_set(why, whylen, -1, "state %d stopped %d: %s", res.state, res.stopped,
                            res.error);
    }
    tem_close(&t);
    return rc;
}

int thread_case_engine_multi_drop(char *why, size_t whylen) {
    struct tem t;
    int rc = tem_open(&t, "0,1", "drop:dev1", 2, why, whylen);
    if (rc == 0 && engine_start(t.e) != 0)
        rc = errbuf_set(why, whylen, -1, "engine_start");
    if (rc == 0) {
        tem_wait(&t, tem_never);
        struct engine_result res;
        engine_join(t.e, &res);
        if (res.state != ENGINE_FAILED || !strstr(res.error, "left the run"))
            rc = errbuf_set(why, whylen, -1, "state %d: %s", res.state, res.error);
        else if (!t.saw_peer)
            rc = errbuf_set(why, whylen, -1, "no alert named the device that left (%zu alerts)",
                            t.alerts);
    }
    tem_close(&t);
    return rc;
}

int thread_case_engine_multi_teardown(char *why, size_t whylen) {
    struct tem t;
    int rc = tem_open(&t, "0,1", "hang:teardown:60:dev1", 1, why, whylen);
    if (rc == 0 && engine_start(t.e) != 0)
        rc = errbuf_set(why, whylen, -1, "engine_start");
    if (rc == 0) {
        tem_wait(&t, tem_never); /* dev 0 times out in destroy and aborts: dev 1's wait ends */
        struct engine_result res;
        engine_join(t.e, &res);
        if (res.state != ENGINE_FINISHED)
            rc = errbuf_set(why, whylen, -1, "state %d: %s", res.state, res.error);
    }
    tem_close(&t);
    return rc;
}

/* The run owner with every device held back from leaving the group: no device waits in the
 * destroy call, so only the run's stop deadline (its own thread) ends the holds, while this
 * thread drains the run as a front end does. */
int thread_case_run_stop_deadline(char *why, size_t whylen) {
    struct run_opts *o = calloc(1, sizeof(*o));
    char dir[256];
    if (!o || rs_test_tmpdir(dir, sizeof(dir)) != 0) {
        free(o);
        TEM_FAIL("tmpdir");
    }
    char err[512];
    engine_conf_default(&o->conf);
    o->conf.synthetic_days = 4;
    o->conf.epochs = 1;
    o->conf.batch = 64;
    o->conf.teardown_timeout_s = 0.5;
    snprintf(o->conf.output_dir, sizeof(o->conf.output_dir), "%s", dir);
    snprintf(o->conf.backend, sizeof(o->conf.backend), "cpu");
    snprintf(o->tele.only, sizeof(o->tele.only), "none");
    o->kmsg.off = true;
    o->sync_slow_ns = 100000000ull;
    o->sync_timeout_ns = 300000000ull;
    int rc = engine_devices_parse("0,1", &o->conf, err, sizeof(err));
    if (rc == 0)
        rc = trace_inject_parse("hang:teardown:60", &o->conf.inject[o->conf.n_inject++], err,
                                sizeof(err));
    struct run_conf c = {.o = o,
                         .cmd = "train",
                         .train = true,
                         .ring_events = 1u << 14,
                         .quiet = true,
                         .kmsg_ends_with_loop = true};
    struct run *r = NULL;
    uint64_t t0 = mono_now_ns();
    if (rc == 0 && (rc = run_create(&r, &c)) == 0 && (rc = run_start(r)) == 0) {
        static struct ev buf[256];
        bool aborted = false;
        while (!run_done(r)) {
            struct pollfd pf = {run_wake_fd(r), POLLIN, 0};
            poll(&pf, 1, 50);
            size_t n;
            while ((n = run_drain(r, buf, 256)) > 0)
                for (size_t i = 0; i < n; i++)
                    aborted |= buf[i].kind == EV_ALERT &&
                               strstr(buf[i].u.text.text, "past --teardown-timeout") != NULL;
            (void)run_snap(r, 0)->step;
            if (mono_now_ns() - t0 > 30000000000ull) {
                rc = errbuf_set(why, whylen, -1, "still held after 30 s");
                break;
            }
        }
        struct engine_result res;
        if (rc == 0 && run_finish(r, &res) != 0)
            rc = errbuf_set(why, whylen, -1, "run_finish: %s", res.error);
        if (rc == 0 && !aborted)
            rc = errbuf_set(why, whylen, -1, "no alert of the stop deadline's abort");
    } else if (rc != 0 && !why[0]) {
        errbuf_set(why, whylen, -1, "%s", err);
    }
    run_destroy(r);
    rs_test_rmtree(dir);
    free(o);
    return rc;
}
