/* Tests for the dashboard's pure model: timeline painting, the chunk ladder, the events list
 * and the formatting helpers. */
#include "backend/kmsg/remedies.h"
#include "tests/support/rs_test.h"
#include "tui/view/ui_model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

TestSuite(ui_model, .timeout = 10);

static struct ui_model am;

static void am_phase(enum ev_phase_id ph, uint64_t a, uint64_t b) {
    struct ev e = {.kind = EV_PHASE};
    e.u.phase = (struct ev_phase){.phase = (uint8_t)ph, .start_ns = a, .end_ns = b};
    ui_model_add(&am, &e);
}

Test(ui_model, paint_places_phases_on_their_cells) {
    memset(&am, 0, sizeof(am));
    /* window [1000, 2000) over 10 cells of 100 ns */
    am_phase(PHASE_VPOC, 1000, 1299);     /* cells 0-2 */
    am_phase(PHASE_FORWARD, 1500, 1549);  /* cell 5 */
    am_phase(PHASE_BACKWARD, 1540, 1700); /* cells 5-6 (it ends where 7 starts); 60 > 49 ns */
    am_phase(PHASE_LOAD, 10, 20);         /* outside the window */
    enum ev_phase_id cells[10];
    ui_model_paint(&am, 0, false, NULL, 1000, 2000, 10, cells);
    const enum ev_phase_id want[10] = {PHASE_VPOC,  PHASE_VPOC,     PHASE_VPOC,     PHASE_COUNT,
                                       PHASE_COUNT, PHASE_BACKWARD, PHASE_BACKWARD, PHASE_COUNT,
                                       PHASE_COUNT, PHASE_COUNT};
    for (int k = 0; k < 10; k++)
        cr_assert_eq(cells[k], want[k], "cell %d: %d", k, cells[k]);
}

Test(ui_model, paint_clips_phases_across_the_edges) {
    memset(&am, 0, sizeof(am));
    am_phase(PHASE_EVAL, 500, 1150);       /* starts before the window: cells 0-1 */
    am_phase(PHASE_OPTIMIZER, 1950, 3000); /* runs past its end: cell 9 */
    am_phase(PHASE_SYNC, 1300, 1450);      /* a host wait: only on the wait row */
    enum ev_phase_id cells[10];
    ui_model_paint(&am, 0, false, NULL, 1000, 2000, 10, cells);
    cr_assert_eq(cells[0], PHASE_EVAL);
    cr_assert_eq(cells[1], PHASE_EVAL);
    cr_assert_eq(cells[2], PHASE_COUNT);
    cr_assert_eq(cells[8], PHASE_COUNT);
    cr_assert_eq(cells[9], PHASE_OPTIMIZER);
    cr_assert_eq(cells[3], PHASE_COUNT);
    ui_model_paint(&am, 0, true, NULL, 1000, 2000, 10, cells);
    cr_assert_eq(cells[3], PHASE_SYNC);
    cr_assert_eq(cells[4], PHASE_SYNC);
    cr_assert_eq(cells[0], PHASE_COUNT);
    cr_assert_eq(cells[9], PHASE_COUNT);
}

Test(ui_model, paint_picks_the_phase_that_fills_the_cell) {
    memset(&am, 0, sizeof(am));
    am_phase(PHASE_FORWARD, 1000, 1030);   /* 30 ns of cell 0 */
    am_phase(PHASE_BACKWARD, 1030, 1100);  /* 70 ns of cell 0, newest */
    am_phase(PHASE_FORWARD, 1100, 1180);   /* 80 ns of cell 1 */
    am_phase(PHASE_OPTIMIZER, 1180, 1195); /* 15 ns of cell 1, newest */
    enum ev_phase_id cells[2];
    ui_model_paint(&am, 0, false, NULL, 1000, 1200, 2, cells);
    cr_assert_eq(cells[0], PHASE_BACKWARD);
    cr_assert_eq(cells[1], PHASE_FORWARD);
}

/* A window of steps summed into one event: its busy time spread evenly over its span, so a
 * cell gets its share, not the whole span (the timeline's fill and the per-second totals). */
Test(ui_model, a_summed_window_spreads_its_time_over_its_span) {
    memset(&am, 0, sizeof(am));
    struct ev e = {.kind = EV_PHASE};
    e.u.phase = (struct ev_phase){.phase = PHASE_BACKWARD,
                                  .count = 16,
                                  .start_ns = 1000,
                                  .end_ns = 2000,
                                  .busy_ns = 250}; /* 25 ns in each 100 ns cell */
    ui_model_add(&am, &e);
    am_phase(PHASE_FORWARD, 1510, 1540); /* 30 ns of cell 5: more than backward's share */
    enum ev_phase_id cells[10];
    ui_model_paint(&am, 0, false, NULL, 1000, 2000, 10, cells);
    for (int k = 0; k < 10; k++)
        cr_assert_eq(cells[k], k == 5 ? PHASE_FORWARD : PHASE_BACKWARD, "cell %d: %d", k, cells[k]);
    const uint64_t(*ns)[PHASE_COUNT] = ui_model_cell_times(&am, 0, NULL, 1000, 2000, 10);
    uint64_t sum = 0;
    for (int k = 0; k < 10; k++)
        sum += ns[k][PHASE_BACKWARD];
    cr_assert(sum >= 240 && sum <= 260, "the window's cells hold %llu ns of its 250",
              (unsigned long long)sum);
}

Test(ui_model, events_list_is_newest_first_and_bounded) {
    memset(&am, 0, sizeof(am));
    for (int i = 0; i < UI_EVENTS + 5; i++) {
        struct ev e = {.t_ns = (uint64_t)i, .kind = EV_LOG};
        e.u.text.severity = SEV_INFO;
        /* texts that differ in letters, not only numbers, so none collapse */
        snprintf(e.u.text.text, sizeof(e.u.text.text), "line %c%c%d", 'a' + i % 26,
                 'a' + i / 26 % 26, i);
        ui_model_add(&am, &e);
    }
    struct ev c = {.kind = EV_COMMAND};
    c.u.command = (struct ev_command){.cmd = CMD_CLEANUP, .rc = -5};
    snprintf(c.u.command.text, sizeof(c.u.command.text), "refused");
    ui_model_add(&am, &c);
    cr_assert_str_eq(ui_model_event(&am, 0)->text, "cleanup: refused");
    cr_assert_eq(ui_model_event(&am, 0)->severity, SEV_WARNING);
    cr_assert_str_eq(ui_model_event(&am, 1)->text, "line on1028");
    cr_assert_str_eq(ui_model_event(&am, UI_EVENTS - 1)->text, "line ga6");
    cr_assert_null(ui_model_event(&am, UI_EVENTS));
    cr_assert_eq(am.cat_count[UI_CAT_INFO], UI_EVENTS + 5);
    cr_assert_eq(am.cat_count[UI_CAT_COMMAND], 1);
    cr_assert(strstr(ui_model_event(&am, 0)->detail, "result: refused (-5)"));
}

Test(ui_model, series_keep_the_latest_points) {
    struct ui_series s = {0};
    for (int k = 1; k <= UI_SERIES + 10; k++)
        ui_series_push(&s, k);
    double v[4];
    cr_assert_eq(ui_series_last(&s, v, 4), 4);
    cr_assert_float_eq(v[0], UI_SERIES + 7, 0);
    cr_assert_float_eq(v[3], UI_SERIES + 10, 0);
    struct ui_series e = {0};
    cr_assert_eq(ui_series_last(&e, v, 4), 0);
}

Test(ui_model, sync_histogram_bins_by_decade) {
    memset(&am, 0, sizeof(am));
    const uint64_t durs[] = {2000, 3000, 50000, 50000, 7000000}; /* 2 us, 3 us, 50 us x2, 7 ms */
    for (size_t k = 0; k < 5; k++) {
        struct ev e = {.kind = EV_SYNC, .seq = (uint32_t)k};
        e.u.sync = (struct ev_sync){.op = SYNC_OP_DEVICE, .dur_ns = durs[k]};
        ui_model_add(&am, &e);
    }
    unsigned bins[4]; /* 1 us .. 10 ms in decades: [1us,10us) [10us,100us) [100us,1ms) [1ms,10ms) */
    cr_assert_eq(ui_model_sync_hist(&am, SYNC_OP_DEVICE, 1000, 10000000, bins, 4), 5);
    cr_assert_eq(bins[0], 2);
    cr_assert_eq(bins[1], 2);
    cr_assert_eq(bins[2], 0);
    cr_assert_eq(bins[3], 1);
    cr_assert_eq(ui_model_sync_hist(&am, SYNC_OP_STREAM, 1000, 10000000, bins, 4), 0);
}

/* The histogram the panel draws (1 us .. 10 s in 64 bins) puts every latency where its log
 * says, those at a bin's very start included: each bin's first and last nanosecond, from the
 * log directly. */
Test(ui_model, sync_histogram_bins_every_latency_by_its_log) {
    memset(&am, 0, sizeof(am));
    const int n = 64;
    const double l0 = log(1000.0), span = log(1e10) - l0;
    uint64_t want[64] = {0};
    uint32_t seq = 0;
    for (int k = 1; k < n; k++) {
        uint64_t start = (uint64_t)ceil(exp(l0 + span * k / n)); /* about where bin k starts */
        for (uint64_t ns = start - 3; ns <= start + 3; ns++) {
            struct ev e = {.kind = EV_SYNC, .seq = ++seq};
            e.u.sync = (struct ev_sync){.op = SYNC_OP_STREAM, .dur_ns = ns};
            ui_model_add(&am, &e);
            int b = (int)((log((double)ns) - l0) / span * n);
            want[b < 0 ? 0 : b >= n ? n - 1 : b]++;
        }
    }
    unsigned bins[64];
    cr_assert_eq(ui_model_sync_hist(&am, SYNC_OP_STREAM, 1000, 10000000000ull, bins, n), seq);
    for (int b = 0; b < n; b++)
        cr_assert_eq(bins[b], want[b], "bin %d: %u, the log says %llu", b, bins[b],
                     (unsigned long long)want[b]);
}

Test(ui_model, seq_gaps_count_dropped_events) {
    memset(&am, 0, sizeof(am));
    struct ev e = {.kind = EV_MEM};
    e.seq = 10;
    ui_model_add(&am, &e);
    e.seq = 11;
    ui_model_add(&am, &e);
    e.seq = 15; /* 12, 13, 14 were dropped by the ring */
    ui_model_add(&am, &e);
    cr_assert_eq(am.gaps, 3);
    cr_assert_eq(am.allocated.n, 3);
}

Test(ui_model, formatting) {
    char b[32];
    ui_fmt_bytes(b, sizeof(b), 512);
    cr_assert_str_eq(b, "512 B");
    ui_fmt_bytes(b, sizeof(b), 23068672);
    cr_assert_str_eq(b, "22.0 MiB");
    ui_fmt_hms(b, sizeof(b), 3723.9);
    cr_assert_str_eq(b, "01:02:03");
    ui_fmt_ns(b, sizeof(b), 950);
    cr_assert_str_eq(b, "950ns");
    ui_fmt_ns(b, sizeof(b), 733200);
    cr_assert_str_eq(b, "733.2us");
    ui_fmt_ns(b, sizeof(b), 17100000);
    cr_assert_str_eq(b, "17.1ms");
    ui_fmt_ns(b, sizeof(b), 42000000000ull);
    cr_assert_str_eq(b, "42.0s");
}

/* A cell goes to the phase that took most of its time, however often it runs: a step's
 * forward is not hidden behind an instant of VPOC. */
Test(ui_model, the_phase_with_most_time_wins_the_cell) {
    memset(&am, 0, sizeof(am));
    am_phase(PHASE_FORWARD, 1000, 1090); /* 90 ns of the cell */
    am_phase(PHASE_VPOC, 1090, 1100);    /* 10 ns */
    am_phase(PHASE_FORWARD, 1100, 1200); /* the next cell: only per-step work */
    enum ev_phase_id cells[2];
    ui_model_paint(&am, 0, false, NULL, 1000, 1200, 2, cells);
    cr_assert_eq(cells[0], PHASE_FORWARD);
    cr_assert_eq(cells[1], PHASE_FORWARD);
}

Test(ui_model, old_spans_come_from_per_second_totals) {
    static struct ui_model big; /* 3 MB: not on the stack */
    ui_model_init(&big);
    struct ev e = {.kind = EV_PHASE, .dev = 0};
    e.u.phase = (struct ev_phase){.phase = PHASE_CHECKPOINT,
                                  .start_ns = 1500000000ull,
                                  .end_ns = 1510000000ull}; /* 10 ms in second 1 */
    ui_model_add(&big, &e);
    e.u.phase = (struct ev_phase){.phase = PHASE_EVAL,
                                  .start_ns = 30200000000ull,
                                  .end_ns = 30900000000ull}; /* 0.7 s in second 30 */
    ui_model_add(&big, &e);
    for (uint64_t k = 0; k < UI_PHASES; k++) { /* push both out of the phase ring */
        e.u.phase = (struct ev_phase){.phase = PHASE_FORWARD,
                                      .start_ns = 100000000000ull + k * 1000,
                                      .end_ns = 100000000000ull + k * 1000 + 500};
        ui_model_add(&big, &e);
    }
    enum ev_phase_id cells[60]; /* one cell per second of the first minute */
    ui_model_paint(&big, 0, false, NULL, 0, 60000000000ull, 60, cells);
    cr_assert_eq(cells[1], PHASE_CHECKPOINT);
    cr_assert_eq(cells[30], PHASE_EVAL);
    cr_assert_eq(cells[2], PHASE_COUNT);
    cr_assert_eq(cells[59], PHASE_COUNT);
    /* the recent second is still painted from the ring, at full resolution */
    enum ev_phase_id now[10];
    ui_model_paint(&big, 0, false, NULL, 100000000000ull, 100000010000ull, 10, now);
    cr_assert_eq(now[0], PHASE_FORWARD);
}

Test(ui_model, repeats_but_for_numbers_collapse_into_one_entry) {
    memset(&am, 0, sizeof(am));
    struct ev e = {.kind = EV_LOG};
    e.u.text.severity = SEV_INFO;
    for (int epoch = 1; epoch <= 3; epoch++) {
        snprintf(e.u.text.text, sizeof(e.u.text.text), "checkpoint written: a/b.rsmodel (epoch %d)",
                 epoch);
        ui_model_add(&am, &e);
    }
    struct ev c = {.kind = EV_COMMAND};
    c.u.command = (struct ev_command){.cmd = CMD_SET_CHUNK, .arg = 1000};
    snprintf(c.u.command.text, sizeof(c.u.command.text), "VPOC chunk size: 1000 bars");
    ui_model_add(&am, &c);
    snprintf(e.u.text.text, sizeof(e.u.text.text), "checkpoint written: a/b.rsmodel (epoch 4)");
    ui_model_add(&am, &e);
    ui_model_add(&am, &e);
    cr_assert_eq(am.event_count, 3);
    cr_assert_eq(ui_model_event(&am, 0)->repeat, 2);
    cr_assert_str_eq(ui_model_event(&am, 1)->text, "set_chunk: VPOC chunk size: 1000 bars");
    cr_assert_eq(ui_model_event(&am, 2)->repeat, 3);
    cr_assert(strstr(ui_model_event(&am, 2)->text, "(epoch 3)")); /* the latest one is kept */
    cr_assert_eq(am.cat_count[UI_CAT_INFO], 5); /* counts still count every event */
}

/* ---- kernel-log events ---- */

static void am_kmsg(uint32_t seq, uint64_t t, enum kmsg_category cat, enum ev_severity sev,
                    const char *msg) {
    struct ev e = {.kind = EV_KMSG, .t_ns = t, .seq = seq, .dev = EV_DEV_NONE};
    e.u.kmsg.category = (uint8_t)cat;
    e.u.kmsg.severity = (uint8_t)sev;
    e.u.kmsg.lines = 1;
    snprintf(e.u.kmsg.message, sizeof(e.u.kmsg.message), "%s", msg);
    ui_model_add(&am, &e);
}

Test(ui_model, kernel_marks_most_severe_then_latest_per_cell) {
    memset(&am, 0, sizeof(am));
    /* 10 cells of 1 s over [0, 10 s) */
    am_kmsg(0, 1500000000ull, KMSG_CAT_SQ_INTR, SEV_WARNING, "amdgpu: sq_intr: error, se 0");
    am_kmsg(1, 1600000000ull, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, "ring gfx timeout");
    am_kmsg(2, 1700000000ull, KMSG_CAT_KFD, SEV_WARNING, "Runlist is getting oversubscribed");
    am_kmsg(3, 5000000000ull, KMSG_CAT_PAGE_FAULT, SEV_ERROR, "page fault");
    am_kmsg(4, 5000000001ull, KMSG_CAT_XID, SEV_ERROR, "NVRM: Xid (PCI:0000:3b:00): 79,");
    am_kmsg(5, 12000000000ull, KMSG_CAT_MES, SEV_ERROR, "MES failed"); /* after the window */
    am_kmsg(6, 2500000000ull, KMSG_CAT_NONE, SEV_INFO, "[drm] Initialized amdgpu"); /* chatter */
    struct ui_mark out[10];
    cr_assert_eq(ui_model_marks(&am, 0, 10000000000ull, 10, out), 5);
    cr_assert_eq(out[1].category, KMSG_CAT_RING_TIMEOUT, "an error outranks later warnings");
    cr_assert_eq(out[5].category, KMSG_CAT_XID, "the latest of equal severity");
    cr_assert_eq(out[2].category, KMSG_CAT_NONE, "chatter is not marked");
    for (int x = 0; x < 10; x++)
        if (x != 1 && x != 5)
            cr_assert_eq(out[x].category, KMSG_CAT_NONE, "cell %d", x);
    cr_assert_eq(kmsg_category_letter(KMSG_CAT_RING_TIMEOUT), 'T');
    cr_assert_eq(kmsg_category_letter(KMSG_CAT_XID), 'X');
}

Test(ui_model, kernel_events_list_and_seq_gaps_apart_from_the_engine) {
    memset(&am, 0, sizeof(am));
    struct ev log = {.kind = EV_LOG, .seq = 40, .dev = EV_DEV_NONE};
    snprintf(log.u.text.text, sizeof(log.u.text.text), "loaded");
    ui_model_add(&am, &log);
    am_kmsg(0, 1, KMSG_CAT_RING_TIMEOUT, SEV_ERROR,
            "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3");
    am_kmsg(5, 2, KMSG_CAT_NONE, SEV_INFO, "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* chatter");
    cr_assert_eq(am.gaps, 0, "the kernel ring's sequence is its own");
    cr_assert_eq(am.kmsg_gaps, 4, "seq 0 then 5: 4 dropped");
    cr_assert_eq(am.cat_count[UI_CAT_KERNEL], 1);
    const struct ui_event *chatter = ui_model_event(&am, 0), *rt = ui_model_event(&am, 1);
    cr_assert(chatter->chatter);
    cr_assert_str_eq(chatter->text, "driver: chatter");
    cr_assert_str_eq(rt->text,
                     "ring timeout: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3");
    cr_assert_eq(rt->kcat, KMSG_CAT_RING_TIMEOUT);
    cr_assert(strstr(rt->detail, "category: ring_timeout (error)"), "%s", rt->detail);
}

/* Rules of a test's own: ring gfx timeouts, and Xid 79 (matched by its number). */
static struct remedies *am_rules(char *dir, size_t dirlen) {
    static const char rules[] =
        "{\"version\": 1, \"rules\": ["
        "{\"category\": \"ring_timeout\", \"match\": [\"ring gfx\"], \"title\": \"gfx ring\","
        " \"explanation\": \"x\", \"actions\": [\"a\"]},"
        "{\"category\": \"xid\", \"xid\": [79], \"title\": \"off the bus\","
        " \"explanation\": \"x\", \"actions\": [\"a\"]}]}";
    char path[512], err[512] = "";
    cr_assert_eq(rs_test_tmpdir(dir, dirlen), 0);
    cr_assert_eq(rs_test_write_file(dir, "remedies.json", rules, path, sizeof(path)), 0);
    struct remedies *r = NULL;
    cr_assert_eq(remedies_load_file(&r, path, err, sizeof(err)), 0, "%s", err);
    return r;
}

/* What helps is looked up once, when a kernel-log event comes, with every field the rules
 * match on (the message, the Xid), and stays with the event. */
Test(ui_model, kernel_events_keep_their_remedy_from_when_they_came) {
    char dir[256];
    struct remedies *rules = am_rules(dir, sizeof(dir));
    memset(&am, 0, sizeof(am));
    am_kmsg(0, 1, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, "before the rules: ring gfx_0.0.0 timeout");
    ui_model_use_remedies(&am, rules);
    am_kmsg(1, 2, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, "amdgpu: ring gfx_0.0.0 timeout");
    am_kmsg(2, 3, KMSG_CAT_RING_TIMEOUT, SEV_ERROR, "amdgpu: ring sdma0 timeout");
    struct ev x = {.kind = EV_KMSG, .t_ns = 4, .seq = 3, .dev = EV_DEV_NONE};
    x.u.kmsg = (struct kmsg_event){.category = KMSG_CAT_XID, .severity = SEV_ERROR, .lines = 1};
    x.u.kmsg.has = KMSG_HAS(XID);
    x.u.kmsg.xid = 79;
    snprintf(x.u.kmsg.message, sizeof(x.u.kmsg.message), "NVRM: Xid (PCI:0000:3b:00): 79");
    ui_model_add(&am, &x);
    ui_model_use_remedies(&am, NULL); /* later rules do not change what came before */
    const struct ui_event *xid = ui_model_event(&am, 0), *sdma = ui_model_event(&am, 1);
    const struct ui_event *gfx = ui_model_event(&am, 2), *before = ui_model_event(&am, 3);
    cr_assert_not_null(xid->remedy);
    cr_assert_str_eq(xid->remedy->title, "off the bus");
    cr_assert_null(sdma->remedy, "no rule matches an sdma ring");
    cr_assert_not_null(gfx->remedy);
    cr_assert_str_eq(gfx->remedy->title, "gfx ring");
    cr_assert_null(before->remedy, "it came before there were rules");
    remedies_free(rules);
    rs_test_rmtree(dir);
}

Test(ui_model, kernel_marks_per_device) {
    memset(&am, 0, sizeof(am));
    struct ev e = {.kind = EV_KMSG, .dev = EV_DEV_NONE};
    struct kmsg_event *k = &e.u.kmsg;
    k->has = KMSG_HAS(PCI);
    snprintf(k->pci, sizeof(k->pci), "0000:03:00.0");
    k->category = KMSG_CAT_SQ_INTR, k->severity = SEV_WARNING, e.t_ns = 100, e.seq = 0;
    ui_model_add(&am, &e);
    k->category = KMSG_CAT_GPU_RESET, k->severity = SEV_ERROR, e.t_ns = 200, e.seq = 1;
    ui_model_add(&am, &e);
    k->category = KMSG_CAT_KFD, k->severity = SEV_WARNING, e.t_ns = 300, e.seq = 2;
    ui_model_add(&am, &e);
    snprintf(k->pci, sizeof(k->pci), "0000:3b:00.0");
    k->category = KMSG_CAT_XID, k->severity = SEV_ERROR, e.t_ns = 400, e.seq = 3;
    ui_model_add(&am, &e);
    struct ui_mark m;
    cr_assert(ui_model_pci_mark(&am, "0000:03:00.0", 0, &m));
    cr_assert_eq(m.category, KMSG_CAT_GPU_RESET, "the error outranks the later warning");
    cr_assert(ui_model_pci_mark(&am, "0000:03:00.0", 250, &m));
    cr_assert_eq(m.category, KMSG_CAT_KFD, "only failures since the given time");
    cr_assert(ui_model_pci_mark(&am, "0000:3b:00.0", 0, &m));
    cr_assert_eq(m.category, KMSG_CAT_XID);
    cr_assert_not(ui_model_pci_mark(&am, "0000:c5:00.0", 0, &m), "another device: none");
    cr_assert_not(ui_model_pci_mark(&am, "", 0, &m), "no address: none");
}

/* A collective event is a readable list line with its fields in the details; a failed one is a
 * warning; the training all-reduces that went well (thousands a second) are not listed. */
Test(ui_model, collective_event_listed) {
    ui_model_init(&am);
    struct ev e = {.kind = EV_COLLECTIVE, .dev = 1, .seq = 1, .t_ns = 5};
    e.u.coll = (struct ev_coll){.op = EV_COLL_ALLREDUCE,
                                .calls = 14,
                                .bytes = 150640,
                                .dur_ns = 5000000,
                                .max_ns = 1100000,
                                .epoch = 1,
                                .step = 14};
    ui_model_add(&am, &e);
    cr_assert_null(ui_model_event(&am, 0), "a window of all-reduces that went well");
    e.seq = 2;
    e.u.coll.rc = -125;
    ui_model_add(&am, &e);
    const struct ui_event *u = ui_model_event(&am, 0);
    cr_assert_not_null(u);
    cr_assert_str_eq(u->text, "dev 1 allreduce x14 147.1 KiB max 1.1ms, failed: rc -125");
    cr_assert_eq(u->category, UI_CAT_WARNING);
    cr_assert_eq(u->dev, 1);
    cr_assert_not_null(strstr(u->detail, "step: 14"));
    e.seq = 3;
    e.dev = 0;
    e.u.coll = (struct ev_coll){.op = EV_COLL_INIT, .calls = 1, .rc = -110, .max_ns = 2000};
    ui_model_add(&am, &e);
    u = ui_model_event(&am, 0);
    cr_assert_str_eq(u->text, "dev 0 init x1 took 2.0us, failed: rc -110");
    cr_assert_eq(u->category, UI_CAT_WARNING);
    cr_assert_eq(am.cat_count[UI_CAT_WARNING], 2);
}

/* With several devices the memory series follow one device, so pools do not interleave. */
Test(ui_model, memory_series_follow_one_device) {
    ui_model_init(&am);
    ui_model_series_dev(&am, 1);
    for (unsigned d = 0; d < 2; d++) {
        struct ev e = {.kind = EV_MEM, .dev = (uint16_t)d, .seq = d + 1};
        e.u.mem.allocated_bytes = 100 * (d + 1);
        ui_model_add(&am, &e);
    }
    double v[4];
    cr_assert_eq(ui_series_last(&am.allocated, v, 4), 1);
    cr_assert_float_eq(v[0], 200.0, 1e-9);
    ui_model_init(&am); /* by default every device's */
    struct ev e = {.kind = EV_MEM, .dev = 3, .seq = 1};
    ui_model_add(&am, &e);
    cr_assert_eq(ui_series_last(&am.allocated, v, 4), 1);
}
