/* Recording and replay: rec_* writes a run, replay_open plays it back on a manual clock, and the
 * events, snapshot and error reporting are checked against hand-computed values. */
#include "backend/record/record.h"
#include "backend/record/replay_snap.h"
#include "backend/run/replay.h"
#include "tests/support/rs_test.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0 1000000000ull /* the recorded run's first event */
#define MS 1000000ull

static char replay_test_dir[512];
static uint64_t replay_test_clock; /* the manual playback clock */

static uint64_t replay_test_now(void *ctx) {
    return *(uint64_t *)ctx;
}

static void replay_test_setup(void) {
    cr_assert_eq(rs_test_tmpdir(replay_test_dir, sizeof(replay_test_dir)), 0);
    replay_test_clock = 0;
}

static void replay_test_teardown(void) {
    rs_test_rmtree(replay_test_dir);
}

static const char *replay_test_path(const char *name) {
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", replay_test_dir, name);
    return buf[k];
}

static char *replay_test_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = calloc(1, (size_t)n + 1);
    cr_assert(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return b;
}

/* ---- the recording every round-trip test uses ---- */

#define REPLAY_TEST_NSYNC 11 /* stream syncs of 100, 200, ..., 1100 us: p50 = 600 us */

static struct ev replay_test_evs[64];
static size_t replay_test_nev;

static struct ev *replay_test_ev(unsigned kind, uint64_t t_ns, unsigned dev) {
    struct ev *e = &replay_test_evs[replay_test_nev];
    memset(e, 0, sizeof(*e));
    e->kind = (uint16_t)kind;
    e->t_ns = t_ns;
    e->dev = (uint16_t)dev;
    e->seq = (uint32_t)replay_test_nev++;
    return e;
}

static void replay_test_phase(enum ev_phase_id ph, uint64_t start, uint64_t end, int32_t epoch,
                              int64_t step, int32_t chunk) {
    struct ev *e = replay_test_ev(EV_PHASE, end, 0);
    e->u.phase = (struct ev_phase){.phase = (uint8_t)ph,
                                   .epoch = epoch,
                                   .step = step,
                                   .chunk = chunk,
                                   .start_ns = start,
                                   .end_ns = end};
}

static void replay_test_text(unsigned kind, uint64_t t, unsigned dev, enum ev_severity sev,
                             const char *text) {
    struct ev *e = replay_test_ev(kind, t, dev);
    e->u.text.severity = (uint8_t)sev;
    snprintf(e->u.text.text, sizeof(e->u.text.text), "%s", text);
}

static void replay_test_metric(uint64_t t, int32_t epoch, int64_t step, double loss, bool has_val,
                               double val, double sps) {
    struct ev *e = replay_test_ev(EV_METRIC, t, EV_DEV_NONE);
    e->u.metric = (struct ev_metric){.epoch = epoch,
                                     .step = step,
                                     .loss = loss,
                                     .val_loss = has_val ? val : 0,
                                     .has_val = has_val,
                                     .samples_per_s = sps};
}

static void replay_test_events(void) {
    replay_test_nev = 0;
    replay_test_text(EV_LOG, T0, EV_DEV_NONE, SEV_INFO, "loading 3 days");
    replay_test_phase(PHASE_LOAD, T0, T0 + 500 * MS, 0, -1, -1);
    replay_test_phase(PHASE_VPOC, T0 + 500 * MS, T0 + 1000 * MS, 0, -1, 3);
    for (unsigned i = 0; i < REPLAY_TEST_NSYNC; i++) {
        uint64_t start = T0 + 1000 * MS + i * 2 * MS, dur = (i + 1) * 100000ull;
        struct ev *e = replay_test_ev(EV_SYNC, start + dur, 0);
        e->u.sync =
            (struct ev_sync){.op = SYNC_OP_STREAM, .rc = 0, .start_ns = start, .dur_ns = dur};
    }
    struct ev *m = replay_test_ev(EV_MEM, T0 + 1100 * MS, 0);
    /* 4 MiB reserved, 3 MiB allocated: 1 MiB free, the largest 768 KiB -> frag 0.25 */
    m->u.mem = (struct ev_mem){.allocated_bytes = 3145728,
                               .reserved_bytes = 4194304,
                               .largest_free_bytes = 786432,
                               .total_free_bytes = 1048576,
                               .free_blocks = 2,
                               .segments = 2,
                               .frag = 0.25};
    struct ev *c = replay_test_ev(EV_COMMAND, T0 + 1200 * MS, EV_DEV_NONE);
    c->u.command = (struct ev_command){.cmd = CMD_SET_CHUNK, .rc = 0, .arg = 250};
    snprintf(c->u.command.text, sizeof(c->u.command.text), "chunk size 250 bars");
    replay_test_phase(PHASE_FORWARD, T0 + 1300 * MS, T0 + 1310 * MS, 1, 7, -1);
    replay_test_phase(PHASE_BACKWARD, T0 + 1310 * MS, T0 + 1350 * MS, 1, 9, -1);
    replay_test_evs[replay_test_nev - 1].u.phase.count = 2; /* steps 8 and 9 summed */
    replay_test_evs[replay_test_nev - 1].u.phase.busy_ns = 21 * MS;
    replay_test_metric(T0 + 1400 * MS, 1, 10, 0.5, false, 0, 1234.5);
    replay_test_metric(T0 + 1600 * MS, 1, 20, 0.4, true, 0.45, 1100);
    replay_test_text(EV_ALERT, T0 + 1700 * MS, 0, SEV_WARNING, "sync slow: 1.2 s");
    replay_test_text(EV_LOG, T0 + 1800 * MS, EV_DEV_NONE, SEV_ERROR, "a \"quoted\"\nline/\\ end");
    struct ev *k = replay_test_ev(EV_KMSG, T0 + 1850 * MS, EV_DEV_NONE);
    k->u.kmsg =
        (struct kmsg_event){.ts_ns = 1234567000000ull,
                            .addr = 0x7f1234560000ull,
                            .seq_signaled = 41,
                            .seq_emitted = 43,
                            .has = KMSG_HAS(TS) | KMSG_HAS(ADDR) | KMSG_HAS(SEQ) | KMSG_HAS(PID) |
                                   KMSG_HAS(PROCESS) | KMSG_HAS(RING) | KMSG_HAS(PCI),
                            .line = 12,
                            .lines = 2,
                            .pid = 4321,
                            .category = KMSG_CAT_RING_TIMEOUT,
                            .severity = SEV_ERROR,
                            .vendor = KMSG_VENDOR_AMDGPU,
                            .source = KMSG_SRC_KMSG};
    snprintf(k->u.kmsg.pci, sizeof(k->u.kmsg.pci), "0000:03:00.0");
    snprintf(k->u.kmsg.ring, sizeof(k->u.kmsg.ring), "gfx_0.0.0");
    snprintf(k->u.kmsg.process, sizeof(k->u.kmsg.process), "python3");
    snprintf(k->u.kmsg.message, sizeof(k->u.kmsg.message), "ring gfx_0.0.0 timeout, \"quoted\"");
}

static void replay_test_layout(struct mem_layout *l) {
    memset(l, 0, sizeof(*l));
    l->n_segments = 3; /* one more than listed */
    l->n_listed = 2;
    l->seg[0].size_bytes = 20971520;
    l->seg[0].n_blocks = 1;
    l->seg[0].blocks[0] = (struct mem_block_info){0, 20971520, true};
    l->seg[1].size_bytes = 2097152;
    l->seg[1].small_pool = true;
    l->seg[1].truncated = true;
    l->seg[1].n_blocks = 3;
    l->seg[1].blocks[0] = (struct mem_block_info){0, 1048576, true};
    l->seg[1].blocks[1] = (struct mem_block_info){1048576, 786432, false};
    l->seg[1].blocks[2] = (struct mem_block_info){1835008, 262144, true};
}

static struct run_info replay_test_run(void) {
    struct run_info run;
    memset(&run, 0, sizeof(run));
    snprintf(run.host, sizeof(run.host), "testhost");
    snprintf(run.backend, sizeof(run.backend), "cpu");
    snprintf(run.dev_name, sizeof(run.dev_name), "host CPU (4 threads)");
    snprintf(run.dev_arch, sizeof(run.dev_arch), "x86_64");
    run.n_devices = 1;
    run.start_ns = T0 - 5 * MS;
    run.start_wall_ns = 1700000000123456789ull;
    return run;
}

/* Writes the recording to dir/name; the layout line sits after the mem event. */
static const char *replay_test_record(const char *name) {
    const char *path = replay_test_path(name);
    char err[256];
    struct rec *r = NULL;
    cr_assert_eq(rec_open(&r, path, err, sizeof(err)), 0, "%s", err);
    struct engine_conf conf;
    engine_conf_default(&conf);
    conf.epochs = 2;
    conf.chunk_bars = 500;
    struct run_info run = replay_test_run();
    cr_assert_eq(rec_run(r, &run, &conf), 0);
    replay_test_events();
    static struct mem_layout l;
    replay_test_layout(&l);
    for (size_t i = 0; i < replay_test_nev; i++) {
        cr_assert_eq(rec_event(r, &replay_test_evs[i]), 0);
        if (replay_test_evs[i].kind == EV_MEM)
            cr_assert_eq(rec_layout(r, T0 + 1100 * MS, 0, &l), 0);
    }
    struct engine_result res = {.state = ENGINE_FINISHED,
                                .epochs_done = 1,
                                .steps = 20,
                                .train_loss = 0.4,
                                .val_loss = 0.45,
                                .best_val_loss = 0.45,
                                .has_train_loss = true,
                                .has_val = true,
                                .elapsed_s = 1.8,
                                .samples_per_s = 1100};
    cr_assert_eq(rec_summary(r, &res, 0), 0);
    cr_assert_eq(rec_close(r, err, sizeof(err)), 0, "%s", err);
    return path;
}

static struct source *replay_test_open(const char *path, double speed) {
    struct source *src = NULL;
    char err[1024];
    cr_assert_eq(replay_open(&src, path, speed, err, sizeof(err)), 0, "%s", err);
    replay_set_clock(src, replay_test_now, &replay_test_clock);
    return src;
}

/* Drain until done, advancing the manual clock by step_ns of real time between calls. */
static size_t replay_test_drain_all(struct source *src, struct ev *out, size_t cap,
                                    uint64_t step_ns) {
    size_t n = 0;
    for (int i = 0; i < 100000 && !src->ops->done(src); i++) {
        n += src->ops->drain(src, out + n, cap - n);
        replay_test_clock += step_ns;
    }
    cr_assert(src->ops->done(src), "replay never finished");
    return n;
}

static void replay_test_same_event(const struct ev *a, const struct ev *b) {
    cr_assert_eq(a->kind, b->kind, "seq %u", b->seq);
    cr_assert_eq(a->seq, b->seq);
    cr_assert_eq(a->t_ns, b->t_ns, "seq %u: t_ns", b->seq);
    cr_assert_eq(a->dev, b->dev, "seq %u: dev", b->seq);
    switch ((enum ev_kind)b->kind) {
    case EV_PHASE:
        cr_assert_eq(a->u.phase.phase, b->u.phase.phase);
        cr_assert_eq(a->u.phase.epoch, b->u.phase.epoch);
        cr_assert_eq(a->u.phase.step, b->u.phase.step);
        cr_assert_eq(a->u.phase.chunk, b->u.phase.chunk);
        cr_assert_eq(a->u.phase.start_ns, b->u.phase.start_ns);
        cr_assert_eq(a->u.phase.end_ns, b->u.phase.end_ns);
        cr_assert_eq(ev_phase_busy_ns(&a->u.phase), ev_phase_busy_ns(&b->u.phase));
        cr_assert_eq(a->u.phase.count > 1 ? a->u.phase.count : 1,
                     b->u.phase.count > 1 ? b->u.phase.count : 1);
        return;
    case EV_SYNC:
        cr_assert_eq(a->u.sync.op, b->u.sync.op);
        cr_assert_eq(a->u.sync.rc, b->u.sync.rc);
        cr_assert_eq(a->u.sync.start_ns, b->u.sync.start_ns);
        cr_assert_eq(a->u.sync.dur_ns, b->u.sync.dur_ns);
        return;
    case EV_MEM:
        cr_assert_eq(a->u.mem.allocated_bytes, b->u.mem.allocated_bytes);
        cr_assert_eq(a->u.mem.reserved_bytes, b->u.mem.reserved_bytes);
        cr_assert_eq(a->u.mem.largest_free_bytes, b->u.mem.largest_free_bytes);
        cr_assert_eq(a->u.mem.total_free_bytes, b->u.mem.total_free_bytes);
        cr_assert_eq(a->u.mem.free_blocks, b->u.mem.free_blocks);
        cr_assert_eq(a->u.mem.segments, b->u.mem.segments);
        cr_assert_float_eq(a->u.mem.frag, b->u.mem.frag, 1e-12);
        return;
    case EV_METRIC:
        cr_assert_eq(a->u.metric.epoch, b->u.metric.epoch);
        cr_assert_eq(a->u.metric.step, b->u.metric.step);
        cr_assert_float_eq(a->u.metric.loss, b->u.metric.loss, 1e-12);
        cr_assert_eq(a->u.metric.has_val, b->u.metric.has_val);
        cr_assert_float_eq(a->u.metric.val_loss, b->u.metric.val_loss, 1e-12);
        cr_assert_float_eq(a->u.metric.samples_per_s, b->u.metric.samples_per_s, 1e-9);
        return;
    case EV_COLLECTIVE:
        cr_assert_eq(a->u.coll.op, b->u.coll.op);
        cr_assert_eq(a->u.coll.calls, b->u.coll.calls);
        cr_assert_eq(a->u.coll.bytes, b->u.coll.bytes);
        cr_assert_eq(a->u.coll.start_ns, b->u.coll.start_ns);
        cr_assert_eq(a->u.coll.dur_ns, b->u.coll.dur_ns);
        cr_assert_eq(a->u.coll.max_ns, b->u.coll.max_ns);
        cr_assert_eq(a->u.coll.epoch, b->u.coll.epoch);
        cr_assert_eq(a->u.coll.step, b->u.coll.step);
        cr_assert_eq(a->u.coll.rc, b->u.coll.rc);
        return;
    case EV_COMMAND:
        cr_assert_eq(a->u.command.cmd, b->u.command.cmd);
        cr_assert_eq(a->u.command.rc, b->u.command.rc);
        cr_assert_eq(a->u.command.arg, b->u.command.arg);
        cr_assert_str_eq(a->u.command.text, b->u.command.text);
        return;
    case EV_ALERT:
    case EV_LOG:
        cr_assert_eq(a->u.text.severity, b->u.text.severity);
        cr_assert_str_eq(a->u.text.text, b->u.text.text);
        return;
    case EV_KMSG: {
        const struct kmsg_event *x = &a->u.kmsg, *y = &b->u.kmsg;
        cr_assert_eq(x->category, y->category);
        cr_assert_eq(x->severity, y->severity);
        cr_assert_eq(x->vendor, y->vendor);
        cr_assert_eq(x->source, y->source);
        cr_assert_eq(x->has, y->has);
        cr_assert_eq(x->ts_ns, y->ts_ns);
        cr_assert_eq(x->addr, y->addr);
        cr_assert_eq(x->seq_signaled, y->seq_signaled);
        cr_assert_eq(x->seq_emitted, y->seq_emitted);
        cr_assert_eq(x->pid, y->pid);
        cr_assert_eq(x->line, y->line);
        cr_assert_eq(x->lines, y->lines);
        cr_assert_str_eq(x->pci, y->pci);
        cr_assert_str_eq(x->ring, y->ring);
        cr_assert_str_eq(x->process, y->process);
        cr_assert_str_eq(x->message, y->message);
        return;
    }
    case EV_KIND_COUNT:
        cr_assert_fail("bad kind");
    }
}

TestSuite(replay, .init = replay_test_setup, .fini = replay_test_teardown);

Test(replay, round_trip_every_event) {
    const char *path = replay_test_record("run.jsonl");
    struct source *src = replay_test_open(path, 100);
    static struct ev got[64];
    size_t n = replay_test_drain_all(src, got, 64, 10 * MS);
    cr_assert_eq(n, replay_test_nev, "got %zu events, wrote %zu", n, replay_test_nev);
    for (size_t i = 0; i < n; i++)
        replay_test_same_event(&got[i], &replay_test_evs[i]);
    cr_assert_str_eq(src->ops->status(src), "replay finished");
    src->ops->destroy(src);
}

Test(replay, run_line_fills_ui_run) {
    const char *path = replay_test_record("run.jsonl");
    char *text = replay_test_slurp(path);
    cr_assert(strncmp(text, "{\"type\":\"run\",\"version\":1,", 26) == 0, "%.80s", text);
    cr_assert(strstr(text, "\"epochs\":2,\"chunk\":500,\"config\":{"));
    /* the configuration in the config file's words and --print-config's numbers */
    cr_assert(strstr(text, "\"config\":{\"data\":null,\"synthetic-days\":60,\"seed\":42,"),
              "%.600s", text);
    cr_assert(strstr(text, ",\"hidden\":\"32,16\",\"activation\":\"silu\",\"lr\":0.0002,"),
              "%.600s", text);
    cr_assert(strstr(text, ",\"val-frac\":0.2,\"metric-every\":20,"), "%.600s", text);
    cr_assert_null(strstr(text, "val_frac"));
    free(text);
    struct source *src = replay_test_open(path, 1);
    cr_assert_str_eq(src->ops->name, "replay");
    cr_assert_str_eq(src->run.host, "testhost");
    cr_assert_str_eq(src->run.backend, "cpu");
    cr_assert_str_eq(src->run.dev_name, "host CPU (4 threads)");
    cr_assert_str_eq(src->run.dev_arch, "x86_64");
    cr_assert_eq(src->run.n_devices, 1);
    cr_assert(src->run.replay);
    cr_assert_str_eq(src->run.origin, path);
    cr_assert_eq(src->run.start_ns, T0 - 5 * MS);
    cr_assert_eq(src->run.start_wall_ns, 1700000000123456789ull);
    const struct engine_snap *s = src->ops->snap(src);
    cr_assert_eq(s->state, ENGINE_RUNNING);
    cr_assert_eq(s->chunk_bars, 500);
    cr_assert_eq(s->epochs, 2);
    cr_assert_str_eq(s->backend, "cpu");
    cr_assert_str_eq(s->dev.name, "host CPU (4 threads)");
    src->ops->destroy(src);
}

Test(replay, snapshot_from_released_events) {
    struct source *src = replay_test_open(replay_test_record("run.jsonl"), 100);
    static struct ev got[64];
    replay_test_drain_all(src, got, 64, 10 * MS);
    const struct engine_snap *s = src->ops->snap(src);
    cr_assert_eq(s->state, ENGINE_FINISHED);
    cr_assert_eq(s->phase, PHASE_COUNT);
    cr_assert_eq(s->epoch, 1);
    cr_assert_eq(s->epochs, 2); /* first epoch 1 + 2 epochs in the run - 1 */
    cr_assert_eq(s->step, 20);
    cr_assert_eq(s->steps_per_epoch, 20); /* epoch 1 ended at step 20 */
    cr_assert_eq(s->total_steps, 40);
    cr_assert(s->has_loss && s->has_val);
    cr_assert_float_eq(s->loss, 0.4, 1e-12);
    cr_assert_float_eq(s->val_loss, 0.45, 1e-12);
    cr_assert_float_eq(s->best_val_loss, 0.45, 1e-12);
    cr_assert_float_eq(s->samples_per_s, 1100, 1e-9);
    cr_assert_eq(s->chunk_bars, 250); /* the set_chunk result */
    cr_assert_eq(s->mem.allocated_bytes, 3145728);
    cr_assert_eq(s->mem.reserved_bytes, 4194304);
    cr_assert_eq(s->mem.largest_free_bytes, 786432);
    cr_assert_eq(s->mem.total_free_bytes, 1048576);
    cr_assert_eq(s->mem.free_blocks, 2);
    cr_assert_eq(s->mem.segments, 2);
    cr_assert_float_eq(s->mem.frag, 0.25, 1e-12);
    src->ops->destroy(src);
}

Test(replay, snapshot_sync_percentiles) {
    struct source *src = replay_test_open(replay_test_record("run.jsonl"), 100);
    static struct ev got[64];
    replay_test_drain_all(src, got, 64, 10 * MS);
    const struct trace_sync_summary *st = &src->ops->snap(src)->sync[SYNC_OP_STREAM];
    cr_assert_eq(st->count, REPLAY_TEST_NSYNC);
    /* nearest rank: the 6th of 11 values (600 us); the 10th for p90, the 11th for p99 */
    cr_assert(st->p50_ns >= 594000 && st->p50_ns <= 606000, "p50 %llu",
              (unsigned long long)st->p50_ns);
    cr_assert(st->p90_ns >= 990000 && st->p90_ns <= 1010000, "p90 %llu",
              (unsigned long long)st->p90_ns);
    cr_assert(st->p99_ns >= 1089000 && st->p99_ns <= 1100000);
    cr_assert_eq(st->max_ns, 1100000);
    cr_assert_eq(st->sum_ns, 6600000); /* 100 + 200 + ... + 1100 us */
    cr_assert_eq(src->ops->snap(src)->sync[SYNC_OP_DEVICE].count, 0);
    src->ops->destroy(src);
}

Test(replay, snapshot_layout) {
    struct source *src = replay_test_open(replay_test_record("run.jsonl"), 100);
    static struct ev got[64];
    replay_test_drain_all(src, got, 64, 10 * MS);
    const struct mem_layout *l = &src->ops->snap(src)->layout;
    cr_assert_eq(l->n_segments, 3);
    cr_assert_eq(l->n_listed, 2);
    cr_assert_eq(l->seg[0].size_bytes, 20971520);
    cr_assert_not(l->seg[0].small_pool);
    cr_assert_eq(l->seg[0].n_blocks, 1);
    cr_assert(l->seg[0].blocks[0].allocated);
    cr_assert(l->seg[1].small_pool && l->seg[1].truncated);
    cr_assert_eq(l->seg[1].n_blocks, 3);
    cr_assert_eq(l->seg[1].blocks[1].offset_bytes, 1048576);
    cr_assert_eq(l->seg[1].blocks[1].size_bytes, 786432);
    cr_assert_not(l->seg[1].blocks[1].allocated);
    cr_assert_eq(l->seg[1].blocks[2].offset_bytes, 1835008);
    cr_assert(l->seg[1].blocks[2].allocated);
    src->ops->destroy(src);
}

Test(replay, clock_releases_on_time_pauses_and_changes_speed) {
    struct source *src = replay_test_open(replay_test_record("run.jsonl"), 1);
    static struct ev got[64];
    char msg[64];
    /* at the start only the events of the first instant (the log at T0) */
    cr_assert_eq(src->ops->drain(src, got, 64), 1);
    cr_assert_eq(src->ops->now_ns(src), T0);
    replay_test_clock += 500 * MS; /* the load phase ends at T0 + 500 ms */
    cr_assert_eq(src->ops->drain(src, got, 64), 1);
    cr_assert_eq(got[0].u.phase.phase, PHASE_LOAD);
    cr_assert(src->ops->action(src, SOURCE_PAUSE_TOGGLE, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "replay paused");
    cr_assert_str_eq(src->ops->status(src), "replay 1x paused");
    replay_test_clock += 10000 * MS;
    cr_assert_eq(src->ops->drain(src, got, 64), 0, "released while paused");
    cr_assert(src->ops->action(src, SOURCE_PAUSE_TOGGLE, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "replay resumed");
    cr_assert(src->ops->action(src, SOURCE_CHUNK_UP, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "replay speed 2x");
    cr_assert_str_eq(src->ops->status(src), "replay 2x");
    replay_test_clock += 250 * MS; /* 500 ms of the recording at 2x: the vpoc phase ends */
    cr_assert_eq(src->ops->drain(src, got, 64), 1);
    cr_assert_eq(got[0].u.phase.phase, PHASE_VPOC);
    cr_assert_eq(src->ops->now_ns(src), T0 + 1000 * MS);
    cr_assert(src->ops->action(src, SOURCE_CHUNK_DOWN, msg, sizeof(msg)));
    cr_assert(src->ops->action(src, SOURCE_CHUNK_DOWN, msg, sizeof(msg)));
    cr_assert_str_eq(msg, "replay speed 0.5x");
    cr_assert_not(src->ops->action(src, SOURCE_CLEANUP, msg, sizeof(msg)));
    cr_assert_not(src->ops->action(src, SOURCE_PROBE, msg, sizeof(msg)));
    cr_assert_not(src->ops->done(src));
    src->ops->stop(src);
    cr_assert(src->ops->done(src));
    cr_assert_eq(src->ops->drain(src, got, 64), 0);
    struct trace_inflight in;
    cr_assert_not(src->ops->inflight(src, 0, &in));
    cr_assert_eq(src->ops->wake_fd(src), -1);
    src->ops->destroy(src);
}

Test(replay, speed_is_clamped) {
    struct source *src = replay_test_open(replay_test_record("run.jsonl"), 64);
    char msg[64];
    src->ops->action(src, SOURCE_CHUNK_UP, msg, sizeof(msg));
    src->ops->action(src, SOURCE_CHUNK_UP, msg, sizeof(msg));
    cr_assert_str_eq(msg, "replay speed 100x");
    cr_assert_float_eq(replay_speed(src), 100, 1e-12);
    src->ops->destroy(src);
    char err[256];
    cr_assert_eq(replay_open(&src, replay_test_path("run.jsonl"), 0.05, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "speed"), "%s", err);
}

/* Cut the file at byte cut and replay it: returns the events released. */
static size_t replay_test_cut(const char *path, size_t cut, struct source **src) {
    cr_assert_eq(truncate(path, (off_t)cut), 0);
    *src = replay_test_open(path, 100);
    static struct ev got[64];
    return replay_test_drain_all(*src, got, 64, 10 * MS);
}

/* Byte offset of the start of 1-based line n. */
static size_t replay_test_line_at(const char *text, int n) {
    const char *p = text;
    for (int i = 1; i < n; i++)
        p = strchr(p, '\n') + 1;
    return (size_t)(p - text);
}

Test(replay, truncated_file_replays_up_to_the_cut) {
    const char *path = replay_test_record("run.jsonl");
    char *text = replay_test_slurp(path);
    /* line 1 run, 2 log, 3 load, 4 vpoc, 5..15 syncs: cut in the middle of line 6 */
    size_t at = replay_test_line_at(text, 6) + 30;
    free(text);
    struct source *src = NULL;
    cr_assert_eq(replay_test_cut(path, at, &src), 4); /* log, load, vpoc, first sync */
    cr_assert_str_eq(src->ops->status(src),
                     "stopped at line 6: invalid JSON (the line is cut short)");
    cr_assert_eq(src->ops->snap(src)->state, ENGINE_RUNNING);
    cr_assert_eq(src->ops->snap(src)->sync[SYNC_OP_STREAM].count, 1);
    src->ops->destroy(src);
}

/* A line of NULs (what a crash can leave in a file's last blocks) is not a blank line: the
 * replay stops there and says so, rather than playing on and calling it a success. */
Test(replay, nul_bytes_stop_the_replay) {
    const char *path = replay_test_record("run.jsonl");
    char *text = replay_test_slurp(path);
    size_t at = replay_test_line_at(text, 5); /* lines 1..4 whole, then NULs */
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, at, f), at);
    static const char zeros[4096];
    cr_assert_eq(fwrite(zeros, 1, sizeof(zeros), f), sizeof(zeros));
    cr_assert_eq(fwrite("\n", 1, 1, f), 1);
    fclose(f);
    free(text);
    struct source *src = replay_test_open(path, 100);
    static struct ev got[64];
    cr_assert_eq(replay_test_drain_all(src, got, 64, 10 * MS), 3); /* log, load, vpoc */
    cr_assert_str_eq(src->ops->status(src),
                     "stopped at line 5: a NUL byte: not a recording's text (a damaged file?)");
    src->ops->destroy(src);
}

Test(replay, cut_after_a_whole_line_is_no_error) {
    const char *path = replay_test_record("run.jsonl");
    char *text = replay_test_slurp(path);
    size_t at = replay_test_line_at(text, 4) - 1; /* drop the newline of line 3 and the rest */
    free(text);
    struct source *src = NULL;
    cr_assert_eq(replay_test_cut(path, at, &src), 2);
    cr_assert_str_eq(src->ops->status(src), "replay finished");
    src->ops->destroy(src);
}

Test(replay, fixture_missing_field_stops_there) {
    char path[1024];
    struct source *src =
        replay_test_open(rs_test_fixture("replay/malformed.jsonl", path, sizeof(path)), 100);
    static struct ev got[16];
    cr_assert_eq(replay_test_drain_all(src, got, 16, 10 * MS), 3);
    cr_assert_eq(got[2].kind, EV_SYNC);
    cr_assert_eq(got[2].u.sync.dur_ns, 250000);
    cr_assert_str_eq(src->ops->status(src), "stopped at line 5: missing field 'end_ns'");
    src->ops->destroy(src);
}

Test(replay, fixture_short_recording) {
    char path[1024];
    struct source *src =
        replay_test_open(rs_test_fixture("replay/short.jsonl", path, sizeof(path)), 1);
    static struct ev got[16];
    cr_assert_eq(replay_test_drain_all(src, got, 16, 10 * MS), 5);
    const struct engine_snap *s = src->ops->snap(src);
    cr_assert_eq(s->state, ENGINE_FINISHED);
    cr_assert_eq(s->sync[SYNC_OP_STREAM].p50_ns, 250000); /* one value: clamped to it */
    cr_assert_eq(s->mem.total_free_bytes, 1048576);
    cr_assert_eq(s->layout.n_listed, 1);
    cr_assert_eq(s->layout.seg[0].n_blocks, 2);
    cr_assert_eq(s->epoch, 1);
    cr_assert_float_eq(s->val_loss, 0.8, 1e-12);
    src->ops->destroy(src);
}

/* A recording from before the configuration took the config file's words ("synthetic_days",
 * "val_frac", "hidden" as an array, "data":"synthetic") replays as it always did. */
Test(replay, fixture_underscore_config_recording) {
    char path[1024];
    struct source *src =
        replay_test_open(rs_test_fixture("replay/underscore_config.jsonl", path, sizeof(path)), 1);
    static struct ev got[16];
    cr_assert_eq(replay_test_drain_all(src, got, 16, 10 * MS), 5);
    cr_assert_str_eq(src->ops->status(src), "replay finished");
    cr_assert_str_eq(src->run.host, "fixture");
    const struct engine_snap *s = src->ops->snap(src);
    cr_assert_eq(s->state, ENGINE_FINISHED);
    cr_assert_eq(s->chunk_bars, 500);
    cr_assert_eq(s->epoch, 1);
    cr_assert_float_eq(s->val_loss, 0.8, 1e-12);
    src->ops->destroy(src);
}

/* A bad third line after a good run line and event: what status() says. (Arrays, not
 * pointers: Criterion hands parameters to a process of its own.) */
struct replay_test_bad {
    char line[256];
    char why[96];
};

static const char replay_test_run_line[] =
    "{\"type\":\"run\",\"version\":1,\"host\":\"h\",\"backend\":\"cpu\",\"device\":\"d\","
    "\"arch\":\"a\",\"devices\":1,\"start_ns\":5,\"start_wall_ns\":6,\"epochs\":1,\"chunk\":0}\n"
    "{\"type\":\"log\",\"seq\":0,\"t_ns\":10,\"severity\":\"info\",\"message\":\"hi\"}\n";

ParameterizedTestParameters(replay, bad_line) {
    static struct replay_test_bad p[] = {
        {"{not json}", "stopped at line 3: invalid JSON at column 2"},
        {"{\"type\":\"log\"} trailing",
         "stopped at line 3: invalid JSON at column 16: text after the object"},
        {"[1,2]", "stopped at line 3: not a JSON object"},
        {"{\"seq\":1}", "stopped at line 3: missing field 'type'"},
        {"{\"type\":\"bogus\",\"seq\":1}", "stopped at line 3: unknown type 'bogus'"},
        {"{\"type\":\"sync\",\"seq\":1,\"dev\":0,\"op\":\"stream\",\"start_ns\":1,\"dur_ns\":\"x\","
         "\"rc\":0}",
         "stopped at line 3: field 'dur_ns' is not an integer"},
        {"{\"type\":\"sync\",\"seq\":1,\"dev\":0,\"op\":\"warp\",\"start_ns\":1,\"dur_ns\":2,"
         "\"rc\":0}",
         "stopped at line 3: field 'op': unknown value 'warp'"},
        {"{\"type\":\"mem\",\"seq\":1,\"dev\":0,\"t_ns\":-4,\"allocated\":0,\"reserved\":0,"
         "\"largest_free\":0,\"free_blocks\":0,\"segments\":0,\"frag\":0}",
         "stopped at line 3: field 't_ns' is negative"},
        {"{\"type\":\"log\",\"seq\":1,\"t_ns\":10,\"severity\":\"info\",\"message\":7}",
         "stopped at line 3: field 'message' is not a string"},
        {"{\"type\":\"layout\",\"dev\":0,\"t_ns\":10,\"segments\":[{\"size\":1,\"small\":true,"
         "\"truncated\":false,\"blocks\":[[0,1]]}],\"n_segments\":1}",
         "stopped at line 3: segment 0 block 0 is not [offset, size, 0|1]"},
        {"{\"type\":\"summary\",\"state\":\"exploded\",\"epochs\":1,\"steps\":1}",
         "stopped at line 3: field 'state': unknown value 'exploded'"},
        {"{\"type\":\"run\",\"version\":1}", "stopped at line 3: a second run line"},
        {"{\"type\":\"phase\",\"seq\":1,\"dev\":0,\"phase\":\"forward\",\"start_ns\":10,"
         "\"end_ns\":20,\"epoch\":1,\"step\":16,\"chunk\":-1,\"count\":16,\"busy_ns\":11}",
         "stopped at line 3: field 'busy_ns' is more than its span"},
        {"{\"type\":\"phase\",\"seq\":1,\"dev\":0,\"phase\":\"forward\",\"start_ns\":10,"
         "\"end_ns\":20,\"epoch\":1,\"step\":16,\"chunk\":-1,\"count\":1,\"busy_ns\":5}",
         "stopped at line 3: field 'count' is out of range"},
    };
    return cr_make_param_array(struct replay_test_bad, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(struct replay_test_bad *p, replay, bad_line) {
    char text[2048], path[1024];
    snprintf(text, sizeof(text),
             "%s%s\n{\"type\":\"log\",\"seq\":2,\"t_ns\":11,"
             "\"severity\":\"info\",\"message\":\"after\"}\n",
             replay_test_run_line, p->line);
    cr_assert_eq(rs_test_write_file(replay_test_dir, "bad.jsonl", text, path, sizeof(path)), 0);
    struct source *src = replay_test_open(path, 100);
    static struct ev got[8];
    cr_assert_eq(replay_test_drain_all(src, got, 8, 10 * MS), 1, "the line before comes back");
    cr_assert_str_eq(got[0].u.text.text, "hi");
    const char *st = src->ops->status(src);
    cr_assert(strncmp(st, p->why, strlen(p->why)) == 0, "status '%s', want '%s'", st, p->why);
    src->ops->destroy(src);
}

static void replay_test_open_fails(const char *path, int want, const char *needle) {
    struct source *src = NULL;
    char err[1024] = "";
    cr_assert_eq(replay_open(&src, path, 1, err, sizeof(err)), want, "%s", err);
    cr_assert_null(src);
    cr_assert(strstr(err, needle), "'%s' lacks '%s'", err, needle);
    cr_assert(strstr(err, path), "'%s' does not name the file", err);
}

Test(replay, open_errors) {
    char path[1024];
    replay_test_open_fails(rs_test_fixture("replay/empty.jsonl", path, sizeof(path)), -EINVAL,
                           ": not a ringside recording (no run line)");
    replay_test_open_fails(rs_test_fixture("replay/not_a_recording.jsonl", path, sizeof(path)),
                           -EINVAL, ": not a ringside recording (no run line)");
    replay_test_open_fails(replay_test_path("nope.jsonl"), -ENOENT, "No such file");
    replay_test_open_fails(replay_test_dir, -EISDIR, "directory");
    cr_assert_eq(rs_test_write_file(replay_test_dir, "v9.jsonl",
                                    "{\"type\":\"run\",\"version\":9,\"host\":\"h\"}\n", path,
                                    sizeof(path)),
                 0);
    replay_test_open_fails(path, -EINVAL, "line 1: recording version 9 is newer");
    cr_assert_eq(rs_test_write_file(replay_test_dir, "norun.jsonl",
                                    "{\"type\":\"run\",\"version\":1,\"host\":\"h\"}\n", path,
                                    sizeof(path)),
                 0);
    replay_test_open_fails(path, -EINVAL, "line 1: missing field 'backend'");
}

Test(replay, record_open_and_write_errors) {
    struct rec *r = NULL;
    char err[512];
    const char *bad = replay_test_path("no/such/dir/x.jsonl");
    cr_assert_eq(rec_open(&r, bad, err, sizeof(err)), -ENOENT);
    cr_assert_null(r);
    cr_assert(strstr(err, "cannot write") && strstr(err, bad), "%s", err);
    struct stat st;
    if (stat("/dev/full", &st) != 0)
        return;
    cr_assert_eq(rec_open(&r, "/dev/full", err, sizeof(err)), 0);
    struct ev e = {.kind = EV_LOG, .dev = EV_DEV_NONE};
    cr_assert_eq(rec_event(r, &e), -ENOSPC);
    cr_assert_eq(rec_close(r, err, sizeof(err)), -ENOSPC);
    cr_assert(strstr(err, "cannot write /dev/full: No space left on device"), "%s", err);
}

/* --record FILE (and --jsonl FILE) where a link was planted: the recording replaces the link,
 * as it is written, and the link's target is left as it was; a FIFO or a terminal named there
 * is written in place. */
Test(replay, record_replaces_a_planted_link) {
    const char *victim = replay_test_path("victim"), *path = replay_test_path("run.jsonl");
    FILE *f = fopen(victim, "w");
    cr_assert(f);
    fputs("precious", f);
    fclose(f);
    cr_assert_eq(symlink(victim, path), 0);
    struct rec *r = NULL;
    char err[512] = "";
    cr_assert_eq(rec_open(&r, path, err, sizeof(err)), 0, "%s", err);
    struct ev e = {.kind = EV_LOG, .dev = EV_DEV_NONE};
    cr_assert_eq(rec_event(r, &e), 0);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the link is still there");
    char *got = replay_test_slurp(path);
    cr_assert(strncmp(got, "{\"type\":\"log\"", 13) == 0, "line flushed as written: %s", got);
    free(got);
    cr_assert_eq(rec_close(r, err, sizeof(err)), 0, "%s", err);
    got = replay_test_slurp(victim);
    cr_assert_str_eq(got, "precious");
    free(got);
    cr_assert_eq(rs_test_count_tmp(replay_test_dir), 0);
}

/* ---- the binary ---- */

/* No sanitizer report from a child (in the sanitizer builds). */
static void replay_test_clean(const char *errb) {
    cr_assert_null(strstr(errb, "runtime error"), "%s", errb);
    cr_assert_null(strstr(errb, "Sanitizer"), "%s", errb);
}

static int replay_test_cli(const char *const *argv, char *out, size_t outn, char *errb,
                           size_t errn) {
    return rs_test_run(argv, out, outn, errb, errn);
}

Test(replay, headless_writes_run_and_layout_lines) {
    static char out[1 << 16], errb[1 << 16];
    const char *jsonl = replay_test_path("h.jsonl");
    const char *argv[] = {"train",    "--headless", "--synthetic-days", "3",
                          "--epochs", "1",          "--output",         replay_test_path("ckpt"),
                          "--jsonl",  jsonl,        "--backend",        "cpu",
                          NULL};
    cr_assert_eq(replay_test_cli(argv, out, sizeof(out), errb, sizeof(errb)), 0, "%s", errb);
    replay_test_clean(errb);
    char *j = replay_test_slurp(jsonl);
    cr_assert(strstr(j, "\"lr\":0.0002,"), "%.600s", j);
    cr_assert(strncmp(j, "{\"type\":\"run\",\"version\":1,", 26) == 0, "%.100s", j);
    cr_assert(strstr(j, "\"backend\":\"cpu\""));
    cr_assert(strstr(j, "\n{\"type\":\"layout\",\"dev\":0,\"t_ns\":"), "no layout line");
    cr_assert(strstr(j, "\"blocks\":[["), "no blocks in the layout lines");
    free(j);
    /* and it replays to the end without complaint */
    struct source *src = replay_test_open(jsonl, 100);
    static struct ev got[4096];
    size_t n = 0;
    for (int i = 0; i < 1000000 && !src->ops->done(src); i++) {
        n += src->ops->drain(src, got, 4096);
        replay_test_clock += 100 * MS;
    }
    cr_assert(src->ops->done(src));
    cr_assert(n > 20, "only %zu events", n);
    cr_assert_str_eq(src->ops->status(src), "replay finished");
    const struct engine_snap *s = src->ops->snap(src);
    cr_assert_eq(s->state, ENGINE_FINISHED);
    cr_assert_eq(s->epoch, 1);
    cr_assert(s->has_val && s->mem.reserved_bytes > 0 && s->layout.n_listed > 0);
    cr_assert(s->sync[SYNC_OP_STREAM].count > 0);
    src->ops->destroy(src);
}

struct replay_test_usage {
    char args[4][32]; /* "" ends the list */
    char needle[64];
};

ParameterizedTestParameters(replay, cli_usage_errors) {
    static struct replay_test_usage p[] = {
        {{""}, "FILE is required"},
        {{"x.jsonl", "--speed", "0"}, "--speed"},
        {{"x.jsonl", "--speed", "fast"}, "--speed"},
        {{"x.jsonl", "--speed", "101"}, "--speed"},
        {{"x.jsonl", "--frames", "0"}, "--frames"},
        {{"x.jsonl", "y.jsonl"}, "unexpected argument 'y.jsonl'"},
        {{"x.jsonl", "--bogus"}, "unknown option '--bogus'"},
    };
    return cr_make_param_array(struct replay_test_usage, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(struct replay_test_usage *p, replay, cli_usage_errors) {
    static char out[4096], errb[4096];
    const char *argv[6] = {"replay"};
    for (int i = 0; i < 4 && p->args[i][0]; i++)
        argv[i + 1] = p->args[i];
    cr_assert_eq(replay_test_cli(argv, out, sizeof(out), errb, sizeof(errb)), 2, "%s", errb);
    cr_assert_str_eq(out, "");
    cr_assert(strstr(errb, p->needle), "stderr: %s", errb);
    static const char hint[] = "; see 'ringside replay --help'\n"; /* the end of the one line */
    size_t n = strlen(errb), h = sizeof(hint) - 1;
    cr_assert(n > h && strcmp(errb + n - h, hint) == 0, "stderr: %s", errb);
    cr_assert_eq(strchr(errb, '\n'), errb + n - 1, "not one line: %s", errb);
}

Test(replay, cli_file_errors) {
    static char out[4096], errb[4096];
    char path[1024];
    const char *missing = replay_test_path("missing.jsonl");
    const char *a1[] = {"replay", missing, NULL};
    cr_assert_eq(replay_test_cli(a1, out, sizeof(out), errb, sizeof(errb)), 2);
    cr_assert(strstr(errb, "ringside replay: ") && strstr(errb, missing) &&
                  strstr(errb, "No such file"),
              "%s", errb);
    const char *a2[] = {"replay",
                        rs_test_fixture("replay/not_a_recording.jsonl", path, sizeof(path)), NULL};
    cr_assert_eq(replay_test_cli(a2, out, sizeof(out), errb, sizeof(errb)), 2);
    cr_assert(strstr(errb, "not a ringside recording (no run line)"), "%s", errb);
    const char *a3[] = {"replay", "--help", NULL};
    cr_assert_eq(replay_test_cli(a3, out, sizeof(out), errb, sizeof(errb)), 0);
    cr_assert(strstr(out, "usage: ringside replay FILE"), "%s", out);
}

/* Needs the dashboard (app_main): renders three frames of a recording and exits 0. */
Test(replay, cli_renders_frames) {
    static char out[1 << 18], errb[1 << 16];
    char path[1024];
    setenv("TERM", "xterm-256color", 1);
    const char *argv[] = {"replay",   rs_test_fixture("replay/short.jsonl", path, sizeof(path)),
                          "--frames", "3",
                          "-d",       "1",
                          NULL};
    cr_assert_eq(replay_test_cli(argv, out, sizeof(out), errb, sizeof(errb)), 0, "%s", errb);
    replay_test_clean(errb);
}

/* Once everything is released the replay's clock stops at the last recorded time, so the
 * final screen (elapsed time, timeline) holds still. */
Test(replay, clock_stops_at_the_end) {
    const char *path = replay_test_record("stop.jsonl");
    struct source *src = replay_test_open(path, 10);
    static struct ev out[256];
    replay_test_drain_all(src, out, 256, 1000000000ull);
    uint64_t end = src->ops->now_ns(src);
    replay_test_clock += 3600000000000ull; /* an hour of real time later */
    cr_assert_eq(src->ops->now_ns(src), end);
    cr_assert_gt(end, 0);
    src->ops->destroy(src);
}

/* A recording of two devices (ringside train --headless --backend cpu --devices 0,1): one
 * snapshot per device, each with its own pool, syncs and collective calls; progress shared. */
Test(replay, fixture_two_devices) {
    char path[1024];
    struct source *src =
        replay_test_open(rs_test_fixture("replay/two_devices.jsonl", path, sizeof(path)), 100);
    cr_assert_eq(src->run.n_devices, 2);
    cr_assert_eq(src->run.devices[1], 1);
    static struct ev got[512];
    size_t n = replay_test_drain_all(src, got, 512, 10 * MS);
    cr_assert_gt(n, 200);
    cr_assert_not_null(src->ops->dev_snap);
    const struct engine_snap *a = src->ops->dev_snap(src, 0);
    const struct engine_snap *b = src->ops->dev_snap(src, 1);
    cr_assert_null(src->ops->dev_snap(src, 2));
    cr_assert_eq(a, src->ops->snap(src));
    cr_assert_eq(a->device, 0);
    cr_assert_eq(b->device, 1);
    cr_assert_eq(b->rank, 1);
    cr_assert_eq(b->n_ranks, 2);
    /* progress is the run's */
    cr_assert_eq(a->state, ENGINE_FINISHED);
    cr_assert_eq(b->state, ENGINE_FINISHED);
    cr_assert_eq(a->epoch, 2);
    cr_assert_eq(b->step, a->step);
    cr_assert(b->has_val);
    /* each device's own collective calls: 2 flushes of 9 all-reduces, one init, one destroy */
    for (unsigned k = 0; k < 2; k++) {
        const struct engine_snap *s = src->ops->dev_snap(src, k);
        cr_assert_eq(s->coll[EV_COLL_ALLREDUCE].calls, 18, "dev %u", k);
        cr_assert_eq(s->coll[EV_COLL_ALLREDUCE].bytes, 2 * 96840, "dev %u", k);
        cr_assert_eq(s->coll[EV_COLL_INIT].calls, 1);
        cr_assert_eq(s->coll[EV_COLL_DESTROY].calls, 1);
        cr_assert_gt(s->coll[EV_COLL_ALLREDUCE].p99_ns, 0);
        cr_assert_gt(s->step_ms, 0);
        cr_assert_gt(s->layout.n_listed, 0, "dev %u has its layout", k);
    }
    cr_assert_eq(a->coll[EV_COLL_ALLREDUCE].max_ns, 848835);
    cr_assert_eq(b->coll[EV_COLL_ALLREDUCE].max_ns, 3348722);
    /* syncs and pools by device: the two are not the same numbers */
    uint64_t sa = 0, sb = 0;
    for (unsigned op = 0; op < SYNC_OP_COUNT; op++) {
        sa += a->sync[op].count;
        sb += b->sync[op].count;
    }
    cr_assert_gt(sa, 0);
    cr_assert_gt(sb, 0);
    size_t syncs = 0;
    for (size_t i = 0; i < n; i++)
        syncs += got[i].kind == EV_SYNC;
    cr_assert_eq(sa + sb, syncs);
    cr_assert_gt(b->mem.reserved_bytes, 0);
    src->ops->destroy(src);
}

/* A PyTorch job's stream (the Python bridge's lines) folded into a snapshot, line by line. */
static struct replay_snap replay_test_rs;
static struct replay_item replay_test_it;

static void replay_test_job_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void replay_test_job_line(const char *fmt, ...) {
    char line[1024], why[256] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    cr_assert_eq(replay_parse_line(line, strlen(line), &replay_test_it, why, sizeof(why)), 0,
                 "%s: %s", line, why);
    if (replay_test_it.kind == REPLAY_RUN)
        replay_snap_init(&replay_test_rs, &replay_test_it.run, &replay_test_it.extra);
    else
        replay_snap_apply(&replay_test_rs, &replay_test_it);
}

/* The bridge's run line with more members (", ..." or ""). */
static void replay_test_job_run(const char *more) {
    replay_test_job_line("{\"type\":\"run\",\"version\":1,\"ringside\":\"bridge\",\"host\":\"h\","
                         "\"backend\":\"pytorch-cpu\",\"device\":\"CPU\",\"arch\":\"\","
                         "\"devices\":1,\"device_list\":[0],\"start_ns\":1,\"start_wall_ns\":1,"
                         "\"chunk\":0,\"name\":\"train\",\"pid\":7,\"control\":true,\"rank\":1,"
                         "\"world_size\":2,\"group_backend\":\"gloo\"%s}",
                         more);
}

static void replay_test_job_step(int epoch, long long step, const char *rates) {
    replay_test_job_line("{\"type\":\"phase\",\"phase\":\"forward\",\"name\":\"forward\","
                         "\"dev\":0,\"seq\":1,\"start_ns\":2,\"end_ns\":3,\"epoch\":%d,"
                         "\"step\":%lld,\"chunk\":-1}",
                         epoch, step - 1);
    replay_test_job_line("{\"type\":\"metric\",\"seq\":2,\"dev\":0,\"t_ns\":4,\"epoch\":%d,"
                         "\"step\":%lld,\"loss\":0.5%s}",
                         epoch, step, rates);
}

Test(replay, job_length_from_its_epochs_and_steps_per_epoch) {
    replay_test_job_run(",\"epochs\":3,\"steps_per_epoch\":400,\"batch_size\":64");
    const struct engine_snap *s = &replay_test_rs.snaps[0];
    cr_assert(replay_test_it.extra.job);
    cr_assert_eq(replay_test_it.extra.batch_size, 64);
    cr_assert(s->job);
    cr_assert_eq(s->epochs, 3);
    cr_assert_eq(s->total_steps, 1200);
    cr_assert_eq(s->na, ENGINE_NA_CHUNK | ENGINE_NA_SAMPLES | ENGINE_NA_STEPS | ENGINE_NA_MEM);
    /* a counter within the epoch (1..400): the second epoch's 100th step is the 500th */
    replay_test_job_step(1, 400, ",\"samples_per_s\":3200.0,\"steps_per_s\":50.0");
    cr_assert_eq(s->step, 400);
    replay_test_job_step(2, 100, ",\"samples_per_s\":3200.0,\"steps_per_s\":50.0");
    cr_assert_eq(s->epoch, 2);
    cr_assert_eq(s->step, 500);
    cr_assert_eq(s->epochs, 3, "never the epochs seen");
    cr_assert_eq(s->total_steps, 1200);
    cr_assert_eq(s->na, ENGINE_NA_CHUNK | ENGINE_NA_MEM);
    cr_assert_float_eq(s->steps_per_s, 50.0, 1e-9);
    cr_assert_float_eq(s->samples_per_s, 3200.0, 1e-9);
    /* a val loss does not make a length up from the counters */
    replay_test_job_line("{\"type\":\"metric\",\"seq\":3,\"dev\":0,\"t_ns\":5,\"epoch\":2,"
                         "\"step\":400,\"loss\":0.5,\"val_loss\":0.4,\"steps_per_s\":50}");
    cr_assert_eq(s->step, 800);
    cr_assert_eq(s->total_steps, 1200);
    cr_assert_eq(s->steps_per_epoch, 400);
    cr_assert(s->na & ENGINE_NA_SAMPLES, "no samples_per_s in that line");
    /* the summary at its end: the last epoch's last step */
    replay_test_job_line("{\"type\":\"summary\",\"state\":\"completed\",\"epochs\":3,"
                         "\"steps\":400}");
    cr_assert_eq(s->step, 1200);
    cr_assert_eq(s->state, ENGINE_FINISHED);
}

Test(replay, job_counters_from_0_and_global) {
    /* from 0 within the epoch: step 99 of epoch 2 is the 500th */
    replay_test_job_run(",\"epochs\":3,\"steps_per_epoch\":400");
    const struct engine_snap *s = &replay_test_rs.snaps[0];
    replay_test_job_step(1, 0, "");
    cr_assert_eq(s->step, 1);
    replay_test_job_step(1, 399, "");
    cr_assert_eq(s->step, 400);
    replay_test_job_step(2, 99, "");
    cr_assert_eq(s->step, 500);
    /* a counter that runs on over the epochs: known once it passes 400 */
    replay_test_job_run(",\"epochs\":3,\"steps_per_epoch\":400");
    replay_test_job_step(1, 400, "");
    cr_assert_eq(s->step, 400);
    replay_test_job_step(2, 401, "");
    cr_assert_eq(s->step, 401);
    replay_test_job_step(2, 600, "");
    cr_assert_eq(s->step, 600);
    replay_test_job_step(3, 801, "");
    cr_assert_eq(s->step, 801);
    cr_assert_eq(s->epoch, 3);
    /* epochs from 0 (range(3)): epoch 0 is the first */
    replay_test_job_run(",\"epochs\":3,\"steps_per_epoch\":10");
    replay_test_job_step(0, 10, "");
    cr_assert_eq(s->epoch, 1);
    cr_assert_eq(s->step, 10);
    replay_test_job_step(2, 5, "");
    cr_assert_eq(s->epoch, 3);
    cr_assert_eq(s->step, 25);
}

Test(replay, job_without_a_length_keeps_its_counter) {
    replay_test_job_run(",\"epochs\":0");
    const struct engine_snap *s = &replay_test_rs.snaps[0];
    replay_test_job_step(1, 40, ",\"samples_per_s\":0.0");
    replay_test_job_step(2, 7, ",\"samples_per_s\":0.0");
    cr_assert_eq(s->epoch, 2);
    cr_assert_eq(s->epochs, 0, "not told: no total made up");
    cr_assert_eq(s->step, 7, "its own counter");
    cr_assert_eq(s->total_steps, 0);
    /* the 0 a bridge sends for "no batch size" is not a rate; 0 with steps_per_s 0 is */
    cr_assert(s->na & ENGINE_NA_SAMPLES);
    cr_assert(s->na & ENGINE_NA_STEPS);
    replay_test_job_step(2, 8, ",\"samples_per_s\":0.0,\"steps_per_s\":0.0");
    cr_assert_not(s->na & (ENGINE_NA_SAMPLES | ENGINE_NA_STEPS));
    cr_assert_float_eq(s->steps_per_s, 0.0, 1e-9);
    /* only its allocator's lines make its memory known */
    cr_assert(s->na & ENGINE_NA_MEM);
    replay_test_job_line("{\"type\":\"mem\",\"seq\":9,\"dev\":0,\"t_ns\":9,\"allocated\":1024,"
                         "\"reserved\":2048,\"largest_free\":1024,\"free_blocks\":1,"
                         "\"segments\":1,\"frag\":0}");
    cr_assert_not(s->na & ENGINE_NA_MEM);
    cr_assert_eq(s->mem.reserved_bytes, 2048);
    /* the bridge's rank and stack lines are known, for a live watch alone */
    replay_test_job_line("{\"type\":\"rank\",\"t_ns\":9,\"rank\":1,\"world_size\":2}");
    cr_assert_eq(replay_test_it.kind, REPLAY_BLANK);
    replay_test_job_line("{\"type\":\"stack\",\"t_ns\":9,\"threads\":[]}");
    cr_assert_eq(replay_test_it.kind, REPLAY_BLANK);
}

Test(replay, loop_of_ours_measures_everything) {
    /* a recording of ours: as before, no bit set, the total from the first epoch's end */
    replay_test_job_line("{\"type\":\"run\",\"version\":1,\"ringside\":\"0.1\",\"host\":\"h\","
                         "\"backend\":\"cpu\",\"device\":\"d\",\"arch\":\"a\",\"devices\":1,"
                         "\"start_ns\":5,\"start_wall_ns\":6,\"epochs\":2,\"chunk\":500}");
    const struct engine_snap *s = &replay_test_rs.snaps[0];
    cr_assert_not(s->job);
    cr_assert_eq(s->na, 0);
    cr_assert_eq(s->chunk_bars, 500);
    replay_test_job_line("{\"type\":\"metric\",\"seq\":2,\"dev\":0,\"t_ns\":4,\"epoch\":1,"
                         "\"step\":50,\"loss\":0.5,\"val_loss\":0.4,\"samples_per_s\":0}");
    cr_assert_eq(s->total_steps, 100);
    cr_assert_eq(s->na, 0, "a loop of ours that says 0 samples/s measured 0");
}
