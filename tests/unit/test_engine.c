/* Tests for the engine: a whole run on the CPU backend, commands at safe points, and the
 * JSON-lines schema of its events. */
#include "backend/data/data_synth.h"
#include "backend/engine/engine.h"
#include "backend/mlp/mlp_ckpt.h"
#include "backend/record/record_json.h"
#include "backend/vpoc/vpoc.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(engine, .timeout = 120);

#define ENG_MAX_EVENTS 200000

static struct ev eng_events[ENG_MAX_EVENTS];
static size_t eng_n;

static void eng_conf(struct engine_conf *c, const char *dir) {
    engine_conf_default(c);
    c->synthetic_days = 6;
    c->epochs = 2;
    c->batch = 128;
    snprintf(c->output_dir, sizeof(c->output_dir), "%s", dir);
    snprintf(c->backend, sizeof(c->backend), "cpu");
}

static void eng_drain(struct evring *r) {
    size_t room = ENG_MAX_EVENTS - eng_n;
    eng_n += evring_drain(r, eng_events + eng_n, room);
}

/* Drain events until pred holds on the latest snapshot (or the engine is done), then once
 * more: what the engine pushed before it published that snapshot is drained too. */
static const struct engine_snap *eng_wait(struct engine *e, struct evring *r,
                                          bool (*pred)(const struct engine_snap *)) {
    for (;;) {
        eng_drain(r);
        const struct engine_snap *s = engine_snap_read(e, NULL);
        if (pred(s) || engine_done(e)) {
            eng_drain(r);
            return s;
        }
        struct pollfd pf = {evring_wake_fd(r), POLLIN, 0};
        poll(&pf, 1, 20);
    }
}

static bool eng_is_done(const struct engine_snap *s) {
    return s->state == ENGINE_FINISHED || s->state == ENGINE_FAILED;
}

static bool eng_is_paused(const struct engine_snap *s) {
    return s->state == ENGINE_PAUSED;
}

static bool eng_is_training(const struct engine_snap *s) {
    return s->step > 0;
}

static size_t eng_count(enum ev_kind kind, int phase) {
    size_t n = 0;
    for (size_t i = 0; i < eng_n; i++)
        if (eng_events[i].kind == kind && (phase < 0 || eng_events[i].u.phase.phase == phase))
            n++;
    return n;
}

static const struct ev *eng_find_cmd(enum ev_cmd_id cmd) {
    for (size_t i = 0; i < eng_n; i++)
        if (eng_events[i].kind == EV_COMMAND && eng_events[i].u.command.cmd == cmd)
            return &eng_events[i];
    return NULL;
}

/* The first text event (log or alert) of severity sev containing s, or NULL. */
static const struct ev *eng_find_text(enum ev_severity sev, const char *s) {
    for (size_t i = 0; i < eng_n; i++) {
        const struct ev *e = &eng_events[i];
        if ((e->kind == EV_LOG || e->kind == EV_ALERT) && e->u.text.severity == sev &&
            strstr(e->u.text.text, s))
            return e;
    }
    return NULL;
}

/* Run an engine with c to its end: every event lands in eng_events, the result in *res and
 * the last snapshot in *snap (either may be NULL). */
static void eng_run(const struct engine_conf *c, struct engine_result *res,
                    struct engine_snap *snap) {
    struct evring *r;
    struct engine *e;
    char err[512];
    cr_assert_eq(evring_create(&r, 1u << 16), 0);
    cr_assert_eq(engine_create(&e, c, r, err, sizeof(err)), 0, "%s", err);
    eng_n = 0;
    cr_assert_eq(engine_start(e), 0);
    eng_wait(e, r, eng_is_done);
    cr_assert_eq(engine_join(e, res), 0);
    eng_drain(r);
    if (snap)
        *snap = *engine_snap_read(e, NULL);
    engine_destroy(e);
    evring_destroy(r);
}

/* A step's device-timed phases come one event a phase for the steps between two synchronizes:
 * every step counted once in each phase, none of its time outside the window's span. */
static void eng_check_step_windows(const struct engine_result *res) {
    static const enum ev_phase_id step_phases[] = {PHASE_H2D, PHASE_FORWARD, PHASE_BACKWARD,
                                                   PHASE_OPTIMIZER};
    for (size_t k = 0; k < 4; k++) {
        int64_t steps = 0, events = 0, summed = 0, last_step = -1;
        for (size_t i = 0; i < eng_n; i++) {
            const struct ev *e = &eng_events[i];
            if (e->kind != EV_PHASE || e->u.phase.phase != step_phases[k] || e->u.phase.step < 0)
                continue; /* (the data's upload is an h2d outside any step) */
            const struct ev_phase *p = &e->u.phase;
            uint32_t n = p->count > 1 ? p->count : 1;
            cr_assert_leq(n, 16, "a window holds at most the in-flight steps");
            cr_assert_leq(ev_phase_busy_ns(p), p->end_ns - p->start_ns);
            cr_assert_gt(p->step, last_step,
                         "%s: windows in order, each naming its last step "
                         "(%lld after %lld)",
                         ev_phase_name(step_phases[k]), (long long)p->step, (long long)last_step);
            last_step = p->step;
            steps += n;
            events++;
            summed += p->count > 1;
        }
        cr_assert_eq(steps, res->steps, "%s: %lld steps counted, %lld run",
                     ev_phase_name(step_phases[k]), (long long)steps, (long long)res->steps);
        cr_assert_gt(summed, 0, "%s: no window summed", ev_phase_name(step_phases[k]));
        cr_assert_lt(events, res->steps / 4, "%s: %lld events for %lld steps",
                     ev_phase_name(step_phases[k]), (long long)events, (long long)res->steps);
    }
}

Test(engine, full_run_emits_every_phase_and_checkpoints) {
    char dir[256], path[512];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    struct engine_conf c;
    eng_conf(&c, dir);
    struct engine_result res;
    eng_run(&c, &res, NULL);
    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    cr_assert_eq(res.epochs_done, 2);
    cr_assert(res.has_val);
    for (int p = 0; p < PHASE_COUNT; p++) /* all but a pause, the phases of several devices and
                                             a watched job's own */
        if (p != PHASE_PAUSED && p != PHASE_ALLREDUCE && p != PHASE_COMM_INIT &&
            p != PHASE_TEARDOWN && p != PHASE_BARRIER && p != PHASE_OTHER)
            cr_assert_gt(eng_count(EV_PHASE, p), 0, "no %s phase", ev_phase_name(p));
    cr_assert_eq(eng_count(EV_COLLECTIVE, -1), 0, "one device makes no collective call");
    /* one launch a chunk across the 6 sessions: ceil(1380 / 500) */
    cr_assert_eq(eng_count(EV_PHASE, PHASE_VPOC), 3);
    cr_assert_gt(eng_count(EV_SYNC, -1), 0);
    cr_assert_gt(eng_count(EV_MEM, -1), 0);
    size_t with_val = 0;
    for (size_t i = 0; i < eng_n; i++) {
        const struct ev *ev = &eng_events[i];
        if (ev->kind == EV_PHASE)
            cr_assert_leq(ev->u.phase.start_ns, ev->u.phase.end_ns);
        if (ev->kind == EV_METRIC && ev->u.metric.has_val)
            with_val++;
    }
    cr_assert_eq(with_val, 2);
    eng_check_step_windows(&res);
    snprintf(path, sizeof(path), "%s/vpoc_mlp.rsmodel", dir);
    cr_assert_eq(access(path, R_OK), 0);
    cr_assert_str_eq(res.checkpoint, path);
    snprintf(path, sizeof(path), "%s/vpoc_mlp.safetensors", dir); /* the parameters for PyTorch */
    struct stat st_tensors;
    cr_assert_eq(stat(path, &st_tensors), 0, "%s", path);
    size_t np = mlp_param_count(&(struct mlp_arch){.n_in = 24, .n_hidden = 2, .hidden = {32, 16}});
    cr_assert_gt((size_t)st_tensors.st_size, 8 + 4 * np, "header and %zu floats", np);
    snprintf(path, sizeof(path), "%s/vpoc_mlp_metadata.json", dir);
    json_object *meta = json_object_from_file(path);
    cr_assert_not_null(meta);
    json_object *arch, *v;
    cr_assert(json_object_object_get_ex(meta, "architecture", &arch));
    cr_assert(json_object_object_get_ex(arch, "inputs", &v));
    cr_assert_eq(json_object_get_int(v), 24);
    json_object *conf; /* the configuration in the config file's words */
    cr_assert(json_object_object_get_ex(meta, "config", &conf));
    cr_assert(json_object_object_get_ex(conf, "val-frac", &v));
    cr_assert_eq(json_object_get_double(v), c.val_frac);
    cr_assert(json_object_object_get_ex(conf, "synthetic-days", &v));
    cr_assert_eq(json_object_get_int(v), c.synthetic_days);
    cr_assert_not(json_object_object_get_ex(conf, "val_frac", NULL));
    json_object *want = engine_conf_json(&c);
    cr_assert(json_object_equal(conf, want), "%s", json_object_to_json_string(conf));
    json_object_put(want);
    json_object_put(meta);
    rs_test_rmtree(dir);
}

Test(engine, commands_apply_at_safe_points) {
    char dir[256], err[512];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    struct engine_conf c;
    eng_conf(&c, dir);
    c.epochs = 50;
    struct evring *r;
    struct engine *e;
    cr_assert_eq(evring_create(&r, 1u << 17), 0);
    cr_assert_eq(engine_create(&e, &c, r, err, sizeof(err)), 0, "%s", err);
    eng_n = 0;
    /* queued before the thread starts: applied at the first safe point, in order */
    engine_command(e, CMD_SET_CHUNK, 7);
    engine_command(e, CMD_CLEANUP, 0);
    engine_command(e, CMD_CLEANUP, 0); /* a second while the first is queued: refused at once */
    eng_drain(r);
    const struct ev *twice = eng_find_cmd(CMD_CLEANUP);
    cr_assert_not_null(twice, "the refusal is a command result, at once");
    cr_assert_eq(twice->u.command.rc, -EBUSY);
    cr_assert(strstr(twice->u.command.text, "already queued or running"), "%s",
              twice->u.command.text);
    eng_n = 0;
    engine_command(e, CMD_SET_CHUNK, -3);
    engine_command(e, CMD_PROBE, 0);
    engine_command(e, CMD_PAUSE, 0);
    cr_assert_eq(engine_start(e), 0);
    const struct engine_snap *s = eng_wait(e, r, eng_is_paused);
    cr_assert_eq(s->state, ENGINE_PAUSED);
    cr_assert_eq(s->chunk_bars, 7);
    cr_assert_eq(s->phase, PHASE_PAUSED);

    const struct ev *set = eng_find_cmd(CMD_SET_CHUNK);
    cr_assert_not_null(set);
    cr_assert_eq(set->u.command.rc, 0);
    cr_assert(strstr(set->u.command.text, "7 bars"), "%s", set->u.command.text);
    const struct ev *cl = eng_find_cmd(CMD_CLEANUP);
    cr_assert_not_null(cl);
    cr_assert_eq(cl->u.command.rc, 0);
    cr_assert(strstr(cl->u.command.text, "released"), "%s", cl->u.command.text);
    const struct ev *pr = eng_find_cmd(CMD_PROBE); /* host memory: nothing to probe */
    cr_assert_not_null(pr);
    cr_assert_eq(pr->u.command.rc, -ENOTSUP);
    cr_assert(strstr(pr->u.command.text, "cpu backend has no device memory"), "%s",
              pr->u.command.text);
    size_t bad = 0;
    for (size_t i = 0; i < eng_n; i++)
        if (eng_events[i].kind == EV_COMMAND && eng_events[i].u.command.rc != 0)
            bad++;
    cr_assert_eq(bad, 2); /* the negative chunk size and the probe were refused */

    engine_command(e, CMD_RESUME, 0);
    eng_wait(e, r, eng_is_training);
    engine_command(e, CMD_STOP, 0);
    eng_wait(e, r, eng_is_done);
    struct engine_result res;
    engine_join(e, &res);
    eng_drain(r);
    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    cr_assert(res.stopped);
    cr_assert_lt(res.epochs_done, 50);
    cr_assert_gt(eng_count(EV_PHASE, PHASE_PAUSED), 0);
    /* after the set_chunk, sessions run in chunks of 7 bars: chunk index 197 appears */
    bool saw_197 = false;
    for (size_t i = 0; i < eng_n; i++)
        if (eng_events[i].kind == EV_PHASE && eng_events[i].u.phase.phase == PHASE_VPOC &&
            eng_events[i].u.phase.chunk == 197)
            saw_197 = true;
    cr_assert(saw_197);
    engine_destroy(e);
    evring_destroy(r);
    rs_test_rmtree(dir);
}

/* chunk_step moves a rung up or down the ladder (125, 250, 500, 1000, 2000, 3500, whole
 * session) from the engine's own size, whatever set it; the ends stay; set_chunk holds to
 * VPOC_CHUNK_MAX; every result says the size in the same words. */
Test(engine, chunk_step_moves_from_the_engines_own_size) {
    char dir[256], err[512];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    struct engine_conf c;
    eng_conf(&c, dir);
    c.epochs = 50;
    c.chunk_bars = 500;
    struct evring *r;
    struct engine *e;
    cr_assert_eq(evring_create(&r, 1u << 17), 0);
    cr_assert_eq(engine_create(&e, &c, r, err, sizeof(err)), 0, "%s", err);
    /* a step applied answers as the set_chunk of the size it landed on */
    static const struct {
        enum ev_cmd_id cmd, res_cmd;
        int64_t arg, res_arg;
        int rc;
        const char *text;
    } want[] = {
        {CMD_CHUNK_STEP, CMD_SET_CHUNK, 1, 1000, 0,
         "VPOC chunk size 1000 bars from the next chunk"},
        {CMD_SET_CHUNK, CMD_SET_CHUNK, 125, 125, 0, "VPOC chunk size 125 bars from the next chunk"},
        {CMD_CHUNK_STEP, CMD_SET_CHUNK, -1, 125, 0, "VPOC chunk size 125 bars from the next chunk"},
        {CMD_SET_CHUNK, CMD_SET_CHUNK, 1000001, 1000001, -EINVAL,
         "chunk size 1000001 is not in 0..1000000"},
        {CMD_SET_CHUNK, CMD_SET_CHUNK, 1000000, 1000000, 0,
         "VPOC chunk size 1000000 bars from the next chunk"},
        {CMD_CHUNK_STEP, CMD_SET_CHUNK, 1, 0, 0,
         "VPOC chunk size: whole sessions from the next session"},
        {CMD_CHUNK_STEP, CMD_SET_CHUNK, 1, 0, 0,
         "VPOC chunk size: whole sessions from the next session"},
        {CMD_CHUNK_STEP, CMD_SET_CHUNK, -1, 3500, 0,
         "VPOC chunk size 3500 bars from the next chunk"},
        {CMD_CHUNK_STEP, CMD_CHUNK_STEP, 2, 2, -EINVAL, "chunk step 2 is not 1 or -1"},
        {CMD_CHUNK_STEP, CMD_SET_CHUNK, -1, 2000, 0,
         "VPOC chunk size 2000 bars from the next chunk"},
    };
    size_t n_want = sizeof(want) / sizeof(want[0]);
    cr_assert_eq(VPOC_CHUNK_MAX, 1000000, "the expected texts above name the limit");
    for (size_t k = 0; k < n_want; k++)
        engine_command(e, want[k].cmd, want[k].arg);
    engine_command(e, CMD_PAUSE, 0);
    eng_n = 0;
    cr_assert_eq(engine_start(e), 0);
    const struct engine_snap *s = eng_wait(e, r, eng_is_paused);
    cr_assert_eq(s->state, ENGINE_PAUSED);
    cr_assert_eq(s->chunk_bars, 2000);
    size_t k = 0;
    for (size_t i = 0; i < eng_n; i++) {
        const struct ev_command *got = &eng_events[i].u.command;
        if (eng_events[i].kind != EV_COMMAND || got->cmd == CMD_PAUSE)
            continue;
        cr_assert_lt(k, n_want, "more results than commands");
        cr_assert_eq(got->cmd, want[k].res_cmd, "result %zu", k);
        cr_assert_eq(got->arg, want[k].res_arg, "result %zu", k);
        cr_assert_eq(got->rc, want[k].rc, "result %zu: %s", k, got->text);
        cr_assert_str_eq(got->text, want[k].text, "result %zu", k);
        k++;
    }
    cr_assert_eq(k, n_want, "%zu results for %zu commands", k, n_want);
    engine_command(e, CMD_STOP, 0);
    eng_wait(e, r, eng_is_done);
    struct engine_result res;
    engine_join(e, &res);
    engine_destroy(e);
    evring_destroy(r);
    rs_test_rmtree(dir);
}

Test(engine, invalid_configuration_names_the_flag) {
    struct engine_conf c;
    char err[256];
    engine_conf_default(&c);
    c.batch = 0;
    cr_assert_eq(engine_conf_validate(&c, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "--batch"), "%s", err);
    engine_conf_default(&c);
    c.vpoc.tick = -1;
    cr_assert_eq(engine_conf_validate(&c, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "--tick"), "%s", err);
    engine_conf_default(&c);
    snprintf(c.name, sizeof(c.name), "a/b");
    cr_assert_eq(engine_conf_validate(&c, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "--name"), "%s", err);
}

static json_object *eng_parse(const struct ev *e) {
    char buf[1024];
    int n = rec_json_event(e, buf, sizeof(buf));
    cr_assert_lt(n, (int)sizeof(buf));
    json_object *o = json_tokener_parse(buf);
    cr_assert_not_null(o, "not JSON: %s", buf);
    return o;
}

static const char *eng_str(json_object *o, const char *key) {
    json_object *v;
    cr_assert(json_object_object_get_ex(o, key, &v), "missing %s", key);
    return json_object_get_string(v);
}

static int64_t eng_int(json_object *o, const char *key) {
    json_object *v;
    cr_assert(json_object_object_get_ex(o, key, &v), "missing %s", key);
    return json_object_get_int64(v);
}

Test(engine, json_schema_of_each_event_kind) {
    struct ev e = {.t_ns = 5, .kind = EV_PHASE, .dev = 1};
    e.u.phase = (struct ev_phase){.phase = PHASE_BACKWARD,
                                  .epoch = 2,
                                  .step = 40,
                                  .chunk = -1,
                                  .start_ns = 1000,
                                  .end_ns = 3000};
    json_object *o = eng_parse(&e);
    cr_assert_str_eq(eng_str(o, "type"), "phase");
    cr_assert_str_eq(eng_str(o, "phase"), "backward");
    cr_assert_eq(eng_int(o, "dev"), 1);
    cr_assert_eq(eng_int(o, "start_ns"), 1000);
    cr_assert_eq(eng_int(o, "end_ns"), 3000);
    cr_assert_eq(eng_int(o, "epoch"), 2);
    cr_assert_eq(eng_int(o, "step"), 40);
    cr_assert_eq(eng_int(o, "chunk"), -1);
    cr_assert_not(json_object_object_get_ex(o, "count", NULL), "one span has no count");
    json_object_put(o);
    e.u.phase.count = 16; /* a window summed: its count and busy time */
    e.u.phase.busy_ns = 1200;
    o = eng_parse(&e);
    cr_assert_eq(eng_int(o, "count"), 16);
    cr_assert_eq(eng_int(o, "busy_ns"), 1200);
    json_object_put(o);

    e = (struct ev){.t_ns = 9, .kind = EV_SYNC, .dev = 0};
    e.u.sync = (struct ev_sync){SYNC_OP_EVENT, 0, 100, 2500};
    o = eng_parse(&e);
    cr_assert_str_eq(eng_str(o, "op"), "event");
    cr_assert_eq(eng_int(o, "dur_ns"), 2500);
    json_object_put(o);

    e = (struct ev){.t_ns = 9, .kind = EV_MEM, .dev = 0};
    e.u.mem = (struct ev_mem){.allocated_bytes = 512,
                              .reserved_bytes = 2097152,
                              .largest_free_bytes = 1000,
                              .free_blocks = 3,
                              .frag = 0.25};
    o = eng_parse(&e);
    cr_assert_eq(eng_int(o, "reserved"), 2097152);
    cr_assert_eq(eng_int(o, "free_blocks"), 3);
    json_object *v;
    cr_assert(json_object_object_get_ex(o, "frag", &v));
    cr_assert_float_eq(json_object_get_double(v), 0.25, 1e-12);
    json_object_put(o);

    e = (struct ev){.t_ns = 9, .kind = EV_METRIC, .dev = 0};
    e.u.metric = (struct ev_metric){.epoch = 1, .step = 10, .loss = 0.5, .has_val = false};
    o = eng_parse(&e);
    cr_assert_not(json_object_object_get_ex(o, "val_loss", &v));
    json_object_put(o);

    e = (struct ev){.t_ns = 9, .kind = EV_LOG, .dev = EV_DEV_NONE};
    e.u.text.severity = SEV_WARNING;
    snprintf(e.u.text.text, sizeof(e.u.text.text), "quote \" backslash \\ newline\n tab\t");
    o = eng_parse(&e);
    cr_assert_str_eq(eng_str(o, "message"), "quote \" backslash \\ newline\n tab\t");
    cr_assert_str_eq(eng_str(o, "severity"), "warning");
    json_object_put(o);
}

/* Numbers are the shortest text that reads back the same (NaN is null), control characters
 * \u00XX, and a line cut short reports the length of the whole line, as snprintf. */
Test(engine, json_numbers_escapes_and_lengths) {
    struct ev e = {.t_ns = 9, .kind = EV_METRIC, .dev = 0};
    e.u.metric = (struct ev_metric){.epoch = 1,
                                    .step = 10,
                                    .loss = 2e-4,
                                    .has_val = true,
                                    .val_loss = NAN,
                                    .samples_per_s = 1.0 / 3};
    char buf[512], small[24];
    int n = rec_json_event(&e, buf, sizeof(buf));
    cr_assert(
        strstr(buf, ",\"loss\":0.0002,\"val_loss\":null,\"samples_per_s\":0.3333333333333333}"),
        "%s", buf);
    cr_assert_eq(rec_json_event(&e, small, sizeof(small)), n);
    cr_assert_eq(strlen(small), sizeof(small) - 1);

    e = (struct ev){.t_ns = 9, .kind = EV_LOG, .dev = EV_DEV_NONE};
    snprintf(e.u.text.text, sizeof(e.u.text.text), "a\x01\"\xc3\xa9\n");
    n = rec_json_event(&e, buf, sizeof(buf));
    cr_assert(strstr(buf, ",\"message\":\"a\\u0001\\\"\xc3\xa9\\u000a\"}"), "%s", buf);
    cr_assert_eq(n, (int)strlen(buf));
    for (size_t cap = 1; cap <= (size_t)n; cap++)
        cr_assert_eq(rec_json_event(&e, small, cap < sizeof(small) ? cap : sizeof(small)), n);
}

/* The default problem is learnable: on 60 synthetic days the validation loss falls from the
 * first epoch to the second, for several seeds. */
Test(engine, validation_loss_falls_over_two_epochs) {
    char dir[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    const uint64_t seeds[] = {5, 42};
    for (size_t k = 0; k < 2; k++) {
        struct engine_conf c;
        eng_conf(&c, dir);
        c.synthetic_days = 60;
        c.batch = 256;
        c.seed = seeds[k];
        eng_run(&c, NULL, NULL);
        double val[2] = {0, 0};
        for (size_t i = 0; i < eng_n; i++)
            if (eng_events[i].kind == EV_METRIC && eng_events[i].u.metric.has_val)
                val[eng_events[i].u.metric.epoch - 1] = eng_events[i].u.metric.val_loss;
        cr_assert_gt(val[0], 0);
        cr_assert_lt(val[1], val[0], "seed %llu: %g then %g", (unsigned long long)seeds[k], val[0],
                     val[1]);
    }
    rs_test_rmtree(dir);
}

/* With vpoc_refresh = 1, VPOC runs again before every epoch after the first, with the chunk
 * size in force then. */
Test(engine, vpoc_refresh_reruns_vpoc_each_epoch) {
    char dir[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    struct engine_conf c;
    eng_conf(&c, dir);
    c.epochs = 3;
    c.vpoc_refresh = 1;
    struct engine_snap snap;
    eng_run(&c, NULL, &snap);
    /* The last refresh reran a set made two passes before (the chunk stayed): what VPOC holds
     * in the pool is still its three chunk buffers of 6 x 500, 6 x 500 and 6 x 380 packed
     * bars, not what happened to be allocated between the passes. */
    cr_assert(snap.has_vpoc_peak);
    cr_assert_geq(snap.vpoc_peak.allocated_bytes - snap.vpoc_base.allocated_bytes, 6u * 1380u * 8u);
    cr_assert_geq(snap.vpoc_peak.active_blocks - snap.vpoc_base.active_blocks, 3);
    /* 3 launches (chunks of 500), before epochs 1, 2 and 3 */
    cr_assert_eq(eng_count(EV_PHASE, PHASE_VPOC), 3 * 3);
    size_t by_epoch[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < eng_n; i++)
        if (eng_events[i].kind == EV_PHASE && eng_events[i].u.phase.phase == PHASE_VPOC &&
            eng_events[i].u.phase.epoch < 4)
            by_epoch[eng_events[i].u.phase.epoch]++;
    cr_assert_eq(by_epoch[0], 3); /* before training */
    cr_assert_eq(by_epoch[1], 0); /* epoch 1 trains on the first run's results */
    cr_assert_eq(by_epoch[2], 3);
    cr_assert_eq(by_epoch[3], 3);
    rs_test_rmtree(dir);
}

/* The chunk size shapes the pool: every chunk of the sessions has a buffer of its own on the
 * device, so chunks of 7 bars make 198 buffers where whole sessions make one. */
static struct engine_snap eng_peak_of(int chunk) {
    char dir[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    struct engine_conf c;
    eng_conf(&c, dir);
    c.epochs = 1; /* the pass before training is the one measured */
    c.chunk_bars = chunk;
    struct engine_snap s;
    eng_run(&c, NULL, &s);
    rs_test_rmtree(dir);
    return s;
}

Test(engine, chunk_size_shapes_the_vpoc_peak) {
    struct engine_snap small = eng_peak_of(7), whole = eng_peak_of(0);
    cr_assert(small.has_vpoc_peak && whole.has_vpoc_peak);
    cr_assert_eq(small.vpoc_peak_chunk, 7);
    cr_assert_eq(whole.vpoc_peak_chunk, 0);
    /* 198 chunk buffers (6 sessions x 7 packed bars and their offsets: 392 bytes, 512 in the
     * pool) vs one of 6 x 1380 bars; each with the session table and the profiles */
    cr_assert_geq(small.vpoc_peak.allocated_bytes, 198u * 512u);
    cr_assert_lt(whole.vpoc_peak.allocated_bytes, 6u * 1380u * 8u + 16u * 1024u);
    cr_assert_leq(whole.vpoc_peak.active_blocks, 3);
    cr_assert_geq(small.vpoc_peak.active_blocks, 198);
}

/* The dense kernel in the loop, on the default 60 days: what a pass adds to the pool at its
 * peak is the packed bars (0.7 MiB, the same at every chunk) and the largest launch's volume
 * matrix, every session's chunk x the widest session's levels x 8 bytes, as its block in the
 * pool; the packed kernel adds only the bars. */
static struct engine_snap eng_vpoc_of(int chunk, enum compute_vpoc_kernel kernel) {
    char dir[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    struct engine_conf c;
    eng_conf(&c, dir);
    c.synthetic_days = 60;
    c.epochs = 1; /* the pass before training is the one measured */
    c.chunk_bars = chunk;
    c.vpoc_kernel = kernel;
    struct engine_snap s;
    eng_run(&c, NULL, &s);
    rs_test_rmtree(dir);
    cr_assert(s.has_vpoc_peak);
    cr_assert_eq(s.vpoc_peak_chunk, chunk);
    return s;
}

static uint64_t eng_vpoc_added(const struct engine_snap *s) {
    return s->vpoc_peak.allocated_bytes - s->vpoc_base.allocated_bytes;
}

Test(engine, dense_kernel_peak_follows_the_chunk) {
    struct data_series ds;
    struct data_sessions ss = {0};
    struct data_synth_opts o = {.days = 60, .seed = 42, .start_hour = 18, .tick = 0.25};
    data_series_init(&ds);
    cr_assert_eq(data_synth_generate(&o, &ds), 0);
    cr_assert_eq(data_sessions_split(&ds, 18, &ss), 0);
    struct vpoc_bar *vb = malloc(ds.n * sizeof(*vb));
    vpoc_bars_from_series(ds.bars, ds.n, vb);
    struct vpoc_params p = {VPOC_CLOSE, 0.25, 0.70};
    int64_t levels = 0;
    for (size_t k = 0; k < ss.n; k++) {
        int64_t lo, hi;
        vpoc_level_range(vb + ss.s[k].first, ss.s[k].n, &p, &lo, &hi);
        levels = hi - lo + 1 > levels ? hi - lo + 1 : levels;
    }
    uint64_t bars_bytes = ds.n * sizeof(uint64_t), mib = 1u << 20;
    static const int chunks[] = {250, 1000};
    uint64_t added[2];
    for (size_t i = 0; i < 2; i++) {
        uint64_t matrix = (uint64_t)ss.n * (uint64_t)chunks[i] * (uint64_t)levels * 8u;
        struct engine_snap dense = eng_vpoc_of(chunks[i], COMPUTE_VPOC_DENSE);
        added[i] = eng_vpoc_added(&dense);
        cr_assert_geq(added[i], bars_bytes + matrix, "chunk %d: +%llu bytes", chunks[i],
                      (unsigned long long)added[i]);
        cr_assert_lt(added[i], bars_bytes + matrix + 2 * mib, "chunk %d: +%llu bytes", chunks[i],
                     (unsigned long long)added[i]);
        cr_assert_geq(dense.vpoc_peak.reserved_bytes, matrix);
        struct engine_snap packed = eng_vpoc_of(chunks[i], COMPUTE_VPOC_PACKED);
        cr_assert_lt(eng_vpoc_added(&packed), bars_bytes + 64u * 1024u);
        cr_assert_lt(packed.vpoc_peak.reserved_bytes, matrix);
    }
    cr_assert_gt(added[1], 3 * added[0]);
    free(vb);
    data_sessions_fini(&ss);
    data_series_fini(&ds);
}

/* ---- rehearsed faults (--inject) ---- */

static void eng_inject(struct engine_conf *c, const char *spec) {
    char err[256];
    cr_assert_eq(trace_inject_parse(spec, &c->inject[c->n_inject], err, sizeof(err)), 0, "%s", err);
    c->n_inject++;
}

/* oom:vpoc: the pool meets a full device in VPOC; the run says so with the pool's numbers,
 * drops the chunk a rung and carries on to the end. */
Test(engine, out_of_memory_in_vpoc_drops_the_chunk_and_training_goes_on) {
    struct engine_conf c;
    eng_conf(&c, "/tmp/rs-eng-oom");
    c.chunk_bars = 500;
    eng_inject(&c, "oom:vpoc");
    struct engine_result res;
    struct engine_snap snap;
    eng_run(&c, &res, &snap);
    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    cr_assert_eq(res.epochs_done, 2);
    const struct ev *oom = eng_find_text(SEV_ERROR, "out of memory (injected)");
    cr_assert_not_null(oom, "the refusal is reported");
    cr_assert(strstr(oom->u.text.text, "pool:") && strstr(oom->u.text.text, "largest free block"),
              "%s", oom->u.text.text);
    cr_assert_not_null(eng_find_text(SEV_WARNING, "chunk 500 bars: dropping to 250"));
    cr_assert_eq(snap.chunk_bars, 250);
    cr_assert_eq(snap.mem.n_oom, 1, "one refusal, counted by the pool");
    cr_assert_eq(snap.mem.n_oom_retries, 1, "the cache was released first");
    cr_assert_eq(snap.sessions_done, snap.sessions, "every session got its profile");
}

/* At the smallest chunk there is nothing left to drop: the out-of-memory error stands. */
Test(engine, out_of_memory_at_the_smallest_chunk_fails_the_run) {
    struct engine_conf c;
    eng_conf(&c, "/tmp/rs-eng-oom-min");
    c.chunk_bars = 125;
    eng_inject(&c, "oom:vpoc");
    struct engine_result res;
    eng_run(&c, &res, NULL);
    cr_assert_eq(res.state, ENGINE_FAILED);
    cr_assert(strstr(res.error, "out of memory (injected)"), "%s", res.error);
    cr_assert_not_null(
        eng_find_text(SEV_ERROR, "VPOC at the smallest chunk (125 bars): out of memory"));
}

/* error:PHASE:NAME: the step's sync reports the runtime error, and the run ends with it. */
Test(engine, an_injected_runtime_error_ends_training_with_its_text) {
    struct engine_conf c;
    eng_conf(&c, "/tmp/rs-eng-err");
    eng_inject(&c, "error:backward:illegal-address");
    struct engine_result res;
    eng_run(&c, &res, NULL);
    cr_assert_eq(res.state, ENGINE_FAILED);
    cr_assert(strstr(res.error, "an illegal memory access was encountered") &&
                  strstr(res.error, "700"),
              "%s", res.error);
    cr_assert_not_null(eng_find_text(SEV_ERROR, "training failed"));
    cr_assert_not_null(eng_find_text(SEV_WARNING, "fault injection armed: "
                                                  "error:backward:illegal-address"));
}

/* ---- checkpoints that cannot be written ---- */

/* The epoch a checkpoint file holds (-1 when it does not load). */
static int32_t eng_ckpt_epoch(const char *path) {
    struct mlp_ckpt ck;
    char err[512];
    if (mlp_ckpt_load(path, &ck, err, sizeof(err)) != 0)
        return -1;
    int32_t epoch = ck.epoch;
    mlp_ckpt_fini(&ck);
    return epoch;
}

static size_t eng_count_log(enum ev_severity sev) {
    size_t n = 0;
    for (size_t i = 0; i < eng_n; i++)
        n += eng_events[i].kind == EV_LOG && eng_events[i].u.text.severity == sev;
    return n;
}

/* One epoch's metadata and the next epoch's model cannot be written (the run's second and third
 * checkpoint files, --inject write:checkpoint:N): training goes on, each failure is an error
 * event naming what is kept, the file on disk stays the last good one, and the third epoch's
 * checkpoint (written) clears the error. */
Test(engine, failed_checkpoint_write_costs_the_epoch_not_the_run) {
    char dir[256], model[512], err[512], want[1024];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    struct engine_conf c;
    eng_conf(&c, dir);
    c.epochs = 3;
    cr_assert_eq(trace_inject_parse("write:checkpoint:2", &c.inject[0], err, sizeof(err)), 0);
    cr_assert_eq(trace_inject_parse("write:checkpoint:3", &c.inject[1], err, sizeof(err)), 0);
    c.n_inject = 2;
    snprintf(model, sizeof(model), "%s/vpoc_mlp.rsmodel", dir);
    struct evring *r;
    struct engine *e;
    cr_assert_eq(evring_create(&r, 1u << 16), 0);
    cr_assert_eq(engine_create(&e, &c, r, err, sizeof(err)), 0, "%s", err);
    eng_n = 0;
    cr_assert_eq(engine_start(e), 0);
    eng_wait(e, r, eng_is_done);
    struct engine_result res;
    cr_assert_eq(engine_join(e, &res), 0);
    eng_drain(r);
    engine_destroy(e);
    evring_destroy(r);

    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    cr_assert_eq(res.epochs_done, 3);
    cr_assert_eq(eng_count_log(SEV_ERROR), 2);
    const struct ev *m = eng_find_text(SEV_ERROR, "metadata for epoch 1 not written: ");
    cr_assert_not_null(m, "no error event for epoch 1's metadata");
    cr_assert(strstr(m->u.text.text, "vpoc_mlp_metadata.json: No space left on device"), "%s",
              m->u.text.text);
    snprintf(want, sizeof(want), "the checkpoint (epoch 1, %s) is written", model);
    cr_assert(strstr(m->u.text.text, want), "%s", m->u.text.text);
    const struct ev *k = eng_find_text(SEV_ERROR, "checkpoint for epoch 2 not written: ");
    cr_assert_not_null(k, "no error event for epoch 2");
    snprintf(want, sizeof(want), "; the last good one (epoch 1, %s) is kept", model);
    cr_assert(strstr(k->u.text.text, want), "%s", k->u.text.text);
    cr_assert(m < k, "the events are out of order");
    snprintf(want, sizeof(want), "checkpoint written: %s (epoch 3)", model);
    cr_assert_not_null(eng_find_text(SEV_INFO, want), "epoch 3 was not retried");
    /* the success cleared the failure */
    cr_assert_str_eq(res.checkpoint_error, "");
    cr_assert_str_eq(res.checkpoint, model);
    cr_assert_eq(res.checkpoint_epoch, 3);
    cr_assert_eq(eng_ckpt_epoch(model), 3);
    cr_assert_eq(rs_test_count_tmp(dir), 0, "a temp file was left behind");
    rs_test_rmtree(dir);
}

/* What the child that trains under RLIMIT_FSIZE reports. */
struct eng_fsize_report {
    int rc;
    struct engine_result res;
    size_t n_errors;
    char first_error[EV_TEXT_BYTES];
    char summary[2048];
};

/* Train with c under a file size limit below a checkpoint's size: each write fails with EFBIG
 * (a full disk as the process sees it). The report goes to fd; no Criterion asserts here. */
static void eng_fsize_child(const struct engine_conf *c, int fd) {
    static struct eng_fsize_report rep;
    struct evring *r;
    struct engine *e;
    char err[512];
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 4096, .rlim_max = 4096};
    rep.rc = setrlimit(RLIMIT_FSIZE, &lim);
    if (rep.rc == 0 && (rep.rc = evring_create(&r, 1u << 16)) == 0 &&
        (rep.rc = engine_create(&e, c, r, err, sizeof(err))) == 0 &&
        (rep.rc = engine_start(e)) == 0) {
        eng_n = 0;
        eng_wait(e, r, eng_is_done);
        rep.rc = engine_join(e, &rep.res);
        eng_drain(r);
        engine_destroy(e);
        evring_destroy(r);
    }
    rep.n_errors = eng_count_log(SEV_ERROR);
    const struct ev *first = eng_find_text(SEV_ERROR, "");
    if (first)
        snprintf(rep.first_error, sizeof(rep.first_error), "%s", first->u.text.text);
    rec_json_summary(&rep.res, 0, rep.summary, sizeof(rep.summary));
    _exit(write(fd, &rep, sizeof(rep)) == (ssize_t)sizeof(rep) ? 0 : 3);
}

static size_t eng_slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* A fresh directory with the checkpoint of a one-epoch run in it: its path into model, its
 * bytes into buf (cap), their count returned; *c is that run's configuration. */
static size_t eng_trained(char *dir, size_t dirlen, struct engine_conf *c, char *model,
                          size_t modellen, char *buf, size_t cap) {
    struct engine_result res;
    cr_assert_eq(rs_test_tmpdir(dir, dirlen), 0);
    eng_conf(c, dir);
    c->epochs = 1;
    eng_run(c, &res, NULL);
    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    snprintf(model, modellen, "%s/vpoc_mlp.rsmodel", dir);
    return eng_slurp(model, buf, cap);
}

/* Resumed from its checkpoint, a run whose every checkpoint write fails (EFBIG) still trains
 * to the end; the result says the final checkpoint was not written and which one is kept,
 * and that file is byte for byte the one it resumed from. */
Test(engine, final_checkpoint_not_written_keeps_the_last_good_one) {
    char dir[256], model[512], want[1024];
    static char before[1 << 20], after[1 << 20];
    struct engine_conf c;
    size_t n_before =
        eng_trained(dir, sizeof(dir), &c, model, sizeof(model), before, sizeof(before));
    cr_assert_gt(n_before, 4096, "the checkpoint must be larger than the limit");

    c.epochs = 2;
    snprintf(c.resume_path, sizeof(c.resume_path), "%s", model);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        eng_fsize_child(&c, fds[1]);
    }
    close(fds[1]);
    static struct eng_fsize_report rep;
    size_t got = 0;
    for (ssize_t n;
         got < sizeof(rep) && (n = read(fds[0], (char *)&rep + got, sizeof(rep) - got)) > 0;)
        got += (size_t)n;
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    cr_assert_eq(got, sizeof(rep));
    cr_assert_eq(rep.rc, 0);

    cr_assert_eq(rep.res.state, ENGINE_FINISHED, "%s", rep.res.error);
    cr_assert_eq(rep.res.epochs_done, 3, "training stopped early");
    cr_assert_eq(rep.n_errors, 2, "one error per epoch");
    snprintf(want, sizeof(want), "checkpoint for epoch 2 not written: cannot write %s", model);
    cr_assert(strstr(rep.first_error, want), "%s", rep.first_error);
    snprintf(want, sizeof(want), "File too large; the last good one (epoch 1, %s) is kept", model);
    cr_assert(strstr(rep.first_error, want), "%s", rep.first_error);
    cr_assert_str_eq(rep.res.checkpoint, model);
    cr_assert_eq(rep.res.checkpoint_epoch, 1);
    cr_assert_eq(rep.res.checkpoint_error_epoch, 3);
    cr_assert_not(rep.res.checkpoint_error_meta);
    cr_assert(strstr(rep.res.checkpoint_error, "File too large"), "%s", rep.res.checkpoint_error);
    char note[3000];
    engine_checkpoint_note(&rep.res, note, sizeof(note));
    snprintf(want, sizeof(want), "checkpoint for epoch 3 not written: cannot write %s", model);
    cr_assert(strstr(note, want), "%s", note);
    json_object *sum = json_tokener_parse(rep.summary);
    cr_assert_not_null(sum, "%s", rep.summary);
    cr_assert_str_eq(eng_str(sum, "state"), "completed");
    cr_assert_str_eq(eng_str(sum, "checkpoint"), model);
    cr_assert_eq(eng_int(sum, "checkpoint_epoch"), 1);
    cr_assert(strstr(eng_str(sum, "checkpoint_error"), "File too large"), "%s", rep.summary);
    cr_assert_eq(eng_int(sum, "checkpoint_error_epoch"), 3);
    json_object_put(sum);

    size_t n_after = eng_slurp(model, after, sizeof(after));
    cr_assert_eq(n_after, n_before);
    cr_assert_eq(memcmp(before, after, n_before), 0, "the last good checkpoint changed");
    cr_assert_eq(eng_ckpt_epoch(model), 1);
    cr_assert_eq(rs_test_count_tmp(dir), 0, "a temp file was left behind");
    rs_test_rmtree(dir);
}

/* An output directory every user can write, without the sticky bit, is said at the start;
 * with the sticky bit (as /tmp has) it is not. */
Test(engine, output_dir_writable_by_others_is_said) {
    char dir[256], out[300];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    snprintf(out, sizeof(out), "%s/shared", dir);
    cr_assert_eq(mkdir(out, 0777), 0);
    cr_assert_eq(chmod(out, 0777), 0); /* past the umask */
    struct engine_conf c;
    struct engine_result res;
    eng_conf(&c, out);
    c.epochs = 1;
    eng_run(&c, &res, NULL);
    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    cr_assert_not_null(eng_find_text(SEV_WARNING, "is writable by every user and has no sticky"));
    cr_assert_eq(chmod(out, 01777), 0);
    eng_run(&c, &res, NULL);
    cr_assert_null(eng_find_text(SEV_WARNING, "is writable by every user"));
    rs_test_rmtree(dir);
}

/* A stop before this run's first epoch ends keeps the checkpoint already in the output
 * directory byte for byte, and says so. */
Test(engine, a_stop_in_the_first_epoch_keeps_the_existing_checkpoint) {
    char dir[256], err[512], path[512];
    static char before[1 << 20], after[1 << 20];
    struct engine_conf c;
    struct evring *r;
    struct engine *e;
    struct engine_result res;
    size_t n0 = eng_trained(dir, sizeof(dir), &c, path, sizeof(path), before, sizeof(before));
    cr_assert_eq(evring_create(&r, 1u << 17), 0);

    eng_conf(&c, dir); /* a second run, stopped while its first epoch trains */
    c.synthetic_days = 40;
    c.batch = 4;
    c.epochs = 3;
    cr_assert_eq(engine_create(&e, &c, r, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(engine_start(e), 0);
    eng_wait(e, r, eng_is_training);
    engine_command(e, CMD_PAUSE, 0);
    const struct engine_snap *s = eng_wait(e, r, eng_is_paused);
    cr_assert_eq(s->epoch, 1, "paused in epoch %d: the first epoch had ended", s->epoch);
    engine_command(e, CMD_STOP, 0);
    eng_wait(e, r, eng_is_done);
    engine_join(e, &res);
    eng_drain(r);
    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    cr_assert(res.stopped);
    size_t n1 = eng_slurp(path, after, sizeof(after));
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "the checkpoint was replaced");
    bool said = false;
    for (size_t i = 0; i < eng_n; i++)
        said |=
            eng_events[i].kind == EV_LOG && strstr(eng_events[i].u.text.text, "is kept as it was");
    cr_assert(said, "the kept checkpoint is not said");
    engine_destroy(e);
    evring_destroy(r);
    rs_test_rmtree(dir);
}

/* ---- the phase in progress, as the snapshot says it ---- */

static bool eng_in_cleanup(const struct engine_snap *s) {
    return s->phase == PHASE_CLEANUP;
}

static bool eng_in_steps(const struct engine_snap *s) {
    return s->in_steps && s->step > 0;
}

/* The snapshot names the phase the loop is in from its start, not once it ended: a call that
 * hangs in the pre-training cleanup is seen in cleanup, since before the call; the epoch's
 * steps are seen as steps; a pause as paused, since it began. */
Test(engine, the_snapshot_says_the_phase_in_progress_and_since_when) {
    char dir[256], err[512];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    struct engine_conf c;
    eng_conf(&c, dir);
    c.epochs = 50;
    eng_inject(&c, "hang:cleanup:1");
    struct evring *r;
    struct engine *e;
    cr_assert_eq(evring_create(&r, 1u << 17), 0);
    cr_assert_eq(engine_create(&e, &c, r, err, sizeof(err)), 0, "%s", err);
    eng_n = 0;
    cr_assert_eq(engine_start(e), 0);
    const struct engine_snap *s = eng_wait(e, r, eng_in_cleanup);
    cr_assert_eq(s->phase, PHASE_CLEANUP, "the held cleanup is never seen (phase %s)",
                 ev_phase_name(s->phase));
    cr_assert(s->has_phase_start);
    uint64_t since = s->phase_start_ns;
    cr_assert_gt(since, s->start_ns);
    cr_assert(!s->in_steps);
    s = eng_wait(e, r, eng_in_steps);
    cr_assert(s->in_steps, "training is never seen in its steps");
    cr_assert_neq(s->phase, PHASE_CLEANUP, "the cleanup is over");
    /* the cleanup's event, when it came, began where the snapshot said it did */
    const struct ev *cl = NULL;
    for (size_t i = 0; i < eng_n && !cl; i++)
        if (eng_events[i].kind == EV_PHASE && eng_events[i].u.phase.phase == PHASE_CLEANUP)
            cl = &eng_events[i];
    cr_assert_not_null(cl);
    cr_assert_geq(cl->u.phase.start_ns, since);
    cr_assert_geq(cl->u.phase.end_ns - since, 1000000000ull, "the held sync lasted 1 s");
    engine_command(e, CMD_PAUSE, 0);
    s = eng_wait(e, r, eng_is_paused);
    cr_assert_eq(s->phase, PHASE_PAUSED);
    cr_assert(s->has_phase_start);
    cr_assert_gt(s->phase_start_ns, cl->u.phase.end_ns);
    cr_assert(s->in_steps, "paused between two steps");
    engine_command(e, CMD_STOP, 0);
    eng_wait(e, r, eng_is_done);
    struct engine_result res;
    engine_join(e, &res);
    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    engine_destroy(e);
    evring_destroy(r);
    rs_test_rmtree(dir);
}

/* ---- a run until stopped, and the best model ---- */

static bool eng_past_epoch_3(const struct engine_snap *s) {
    return s->epoch > 3 && s->has_val;
}

/* --epochs 0 trains until a stop, however many epochs that is; every epoch that improved on
 * the best val loss left its model in NAME_best.rsmodel, the snapshot and the result say
 * which epoch that was, and the checkpoint line says it is the best so far. */
Test(engine, epochs_0_trains_until_stopped_and_keeps_the_best_model) {
    char dir[256], err[512], best[512];
    struct engine_conf c;
    struct evring *r;
    struct engine *e;
    struct engine_result res;
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    cr_assert_eq(evring_create(&r, 1u << 17), 0);
    eng_conf(&c, dir);
    c.epochs = 0;
    cr_assert_eq(engine_create(&e, &c, r, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(engine_start(e), 0);
    const struct engine_snap *s = eng_wait(e, r, eng_past_epoch_3);
    cr_assert_eq(s->epochs, 0, "no end set");
    cr_assert_eq(s->total_steps, 0, "no total when there is no end");
    cr_assert(s->best_epoch >= 1 && s->best_epoch <= 3, "best epoch %d", s->best_epoch);
    engine_command(e, CMD_STOP, 0);
    eng_wait(e, r, eng_is_done);
    engine_join(e, &res);
    eng_drain(r);
    cr_assert_eq(res.state, ENGINE_FINISHED, "%s", res.error);
    cr_assert(res.stopped);
    cr_assert_geq(res.epochs_done, 3);
    snprintf(best, sizeof(best), "%s/%s_best.rsmodel", dir, c.name);
    cr_assert_str_eq(res.best_checkpoint, best);
    struct stat st;
    cr_assert_eq(stat(best, &st), 0, "no best model at %s", best);
    cr_assert(res.best_epoch >= 1 && res.best_epoch <= res.epochs_done);
    cr_assert_not_null(eng_find_text(SEV_INFO, "the best so far"),
                       "no checkpoint line says it is the best so far");
    engine_destroy(e);
    evring_destroy(r);
    rs_test_rmtree(dir);
}
