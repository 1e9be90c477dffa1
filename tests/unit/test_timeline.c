/* Tests for the timeline's pure part: the compact row's cells against the time the phases
 * took (a training loop's phases, as the engine reports them), what is under way painted up
 * to now, and the compact form's rows, legend and words. */
#include "tests/support/rs_test.h"
#include "tui/view/ui_model.h"
#include "tui/view/ui_timeline.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

TestSuite(timeline, .timeout = 20);

static struct ui_model tm; /* 3 MB: not on the stack */

#define TM_MS 1000000ull

static void tm_add(enum ev_phase_id ph, uint64_t a, uint64_t b, uint64_t busy, uint32_t count) {
    struct ev e = {.t_ns = b, .kind = EV_PHASE};
    e.u.phase = (struct ev_phase){.phase = (uint8_t)ph, .start_ns = a, .end_ns = b};
    if (count > 1) {
        e.u.phase.count = count;
        e.u.phase.busy_ns = busy;
    }
    ui_model_add(&tm, &e);
}

/* The time ph took in [t0, t1) of the events added, as the engine means it: a summed window's
 * time spread evenly over its span. */
struct tm_span {
    enum ev_phase_id ph;
    uint64_t a, b, busy;
};
static struct tm_span tm_spans[8192];
static size_t tm_n;

static void tm_phase(enum ev_phase_id ph, uint64_t a, uint64_t b, uint64_t busy, uint32_t count) {
    tm_add(ph, a, b, busy, count);
    cr_assert_lt(tm_n, sizeof(tm_spans) / sizeof(tm_spans[0]));
    tm_spans[tm_n++] = (struct tm_span){ph, a, b, count > 1 ? busy : b - a};
}

static double tm_time_in(enum ev_phase_id ph, uint64_t t0, uint64_t t1) {
    double ns = 0;
    for (size_t k = 0; k < tm_n; k++) {
        const struct tm_span *s = &tm_spans[k];
        uint64_t a = s->a > t0 ? s->a : t0, b = s->b < t1 ? s->b : t1;
        if (s->ph == ph && b > a)
            ns += (double)(b - a) * (double)s->busy / (double)(s->b - s->a);
    }
    return ns;
}

/* A training loop as the engine reports it, from t (ns) for epochs of 1.25 s: 17 windows of
 * 16 steps, each phase of a window one event over the window's 64 ms (h2d 1%, forward 42%,
 * backward 50%, optimizer 3% of it), then eval (100 ms), the checkpoint (12.5 ms) and the next
 * epoch's VPOC (2 ms): forward and backward about 86% of the time, eval 8%, checkpoint 1%. */
static uint64_t tm_loop(uint64_t t, int epochs) {
    static const enum ev_phase_id step[4] = {PHASE_H2D, PHASE_FORWARD, PHASE_BACKWARD,
                                             PHASE_OPTIMIZER};
    static const double share[4] = {0.01, 0.42, 0.50, 0.03};
    for (int e = 0; e < epochs; e++) {
        for (int w = 0; w < 17; w++, t += 64 * TM_MS)
            for (int k = 0; k < 4; k++)
                tm_phase(step[k], t, t + 64 * TM_MS, (uint64_t)(share[k] * 64e6), 16);
        tm_phase(PHASE_EVAL, t, t + 100 * TM_MS, 0, 1);
        t += 100 * TM_MS;
        tm_phase(PHASE_CHECKPOINT, t, t + 12500000ull, 0, 1);
        t += 12500000ull + 20 * TM_MS;
        tm_phase(PHASE_VPOC, t, t + 2 * TM_MS, 0, 1);
        t += 2 * TM_MS + 27500000ull;
    }
    return t;
}

/* Each phase's share of the row's cells against its share of the row's time: within 10
 * points for every phase above 10% of the time, and no phase far above its time. */
static void tm_check_shares(uint64_t t0, uint64_t t1, int cols) {
    static enum ev_phase_id cells[UI_PAINT_MAX_COLS];
    ui_model_paint(&tm, 0, false, NULL, t0, t1, cols, cells);
    double time[PHASE_COUNT] = {0}, total = 0;
    unsigned n[PHASE_COUNT] = {0}, shown = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        time[ph] = ph == PHASE_SYNC ? 0 : tm_time_in((enum ev_phase_id)ph, t0, t1);
        total += time[ph];
    }
    char row[UI_PAINT_MAX_COLS + 1];
    for (int x = 0; x < cols; x++) {
        row[x] = cells[x] == PHASE_COUNT ? ' ' : ev_phase_letter(cells[x]);
        if (cells[x] < PHASE_COUNT) {
            n[cells[x]]++;
            shown++;
        }
    }
    row[cols] = '\0';
    cr_assert_gt(shown, 0);
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        double t_pct = 100.0 * time[ph] / total, c_pct = 100.0 * n[ph] / shown;
        if (t_pct > 10)
            cr_assert_leq(fabs(c_pct - t_pct), 10.0,
                          "%s: %.1f%% of the time, %.1f%% of the cells: %s",
                          ev_phase_name((unsigned)ph), t_pct, c_pct, row);
        cr_assert_leq(c_pct, t_pct + 10.0, "%s: %.1f%% of the time, %.1f%% of the cells: %s",
                      ev_phase_name((unsigned)ph), t_pct, c_pct, row);
    }
}

/* The 80x24 dashboard's compact row: 67 cells over the last 10 s of a training loop. */
Test(timeline, compact_row_shares_follow_the_phases_time) {
    ui_model_init(&tm);
    tm_n = 0;
    uint64_t end = tm_loop(1000 * TM_MS, 12);
    tm_check_shares(end - 10000 * TM_MS, end, 67);
    /* the 60x16 dashboard's (47 cells), and a window that is not a whole number of epochs */
    tm_check_shares(end - 10000 * TM_MS, end, 47);
    tm_check_shares(end - 7300 * TM_MS, end - 400 * TM_MS, 67);
}

/* A phase every cell has more of wins them all: diffusion never shows a phase a cell did not
 * run, nor one that lost every cell it shared. */
Test(timeline, a_phase_shows_only_in_cells_it_ran_in) {
    ui_model_init(&tm);
    tm_n = 0;
    tm_phase(PHASE_BACKWARD, 0, 500, 0, 1);   /* cells 0-4 */
    tm_phase(PHASE_FORWARD, 500, 1000, 0, 1); /* cells 5-9 */
    tm_phase(PHASE_EVAL, 1000, 1001, 0, 1);   /* an instant at cell 10's start */
    enum ev_phase_id cells[12];
    ui_model_paint(&tm, 0, false, NULL, 0, 1200, 12, cells);
    for (int x = 0; x < 5; x++)
        cr_assert_eq(cells[x], PHASE_BACKWARD, "cell %d", x);
    for (int x = 5; x < 10; x++)
        cr_assert_eq(cells[x], PHASE_FORWARD, "cell %d", x);
    cr_assert_eq(cells[10], PHASE_EVAL);
    cr_assert_eq(cells[11], PHASE_COUNT);
}

/* The phase begun and not ended is painted from its start up to now, the sync in flight on
 * the wait row from its start: nothing of either has an event yet. */
Test(timeline, what_is_under_way_is_painted_up_to_now) {
    ui_model_init(&tm);
    tm_n = 0;
    tm_phase(PHASE_FORWARD, 0, 3000 * TM_MS, 0, 1);
    struct ui_live live = {.phase = PHASE_CLEANUP,
                           .phase_start_ns = 4000 * TM_MS,
                           .has_sync = true,
                           .sync_start_ns = 6000 * TM_MS};
    enum ev_phase_id cells[10];
    ui_model_paint(&tm, 0, false, &live, 0, 10000 * TM_MS, 10, cells);
    for (int x = 0; x < 10; x++)
        cr_assert_eq(cells[x],
                     x < 3   ? PHASE_FORWARD
                     : x < 4 ? PHASE_COUNT
                             : PHASE_CLEANUP,
                     "cell %d: %s", x, ev_phase_name(cells[x]));
    ui_model_paint(&tm, 0, true, &live, 0, 10000 * TM_MS, 10, cells);
    for (int x = 0; x < 10; x++)
        cr_assert_eq(cells[x], x < 6 ? PHASE_COUNT : PHASE_SYNC, "wait cell %d: %s", x,
                     ev_phase_name(cells[x]));
    /* without the live state, the present is blank */
    ui_model_paint(&tm, 0, false, NULL, 0, 10000 * TM_MS, 10, cells);
    cr_assert_eq(cells[9], PHASE_COUNT);
    /* the full form's times: the live phase fills its cells whole */
    const uint64_t(*ns)[PHASE_COUNT] = ui_model_cell_times(&tm, 0, &live, 0, 10000 * TM_MS, 10);
    cr_assert_eq(ns[5][PHASE_CLEANUP], 1000 * TM_MS);
    cr_assert_eq(ns[9][PHASE_SYNC], 1000 * TM_MS);
    cr_assert_eq(ns[3][PHASE_CLEANUP], 0);
}

/* A live phase whose event came already (the snapshot that says it ended is a publish behind)
 * is not painted twice; one that resumed after its event (VPOC's next chunk) goes on from
 * where the event ended. */
Test(timeline, a_live_phase_is_painted_from_its_last_event_on) {
    ui_model_init(&tm);
    tm_n = 0;
    tm_phase(PHASE_EVAL, 2000 * TM_MS, 5000 * TM_MS, 0, 1);
    struct ui_live live = {.phase = PHASE_EVAL, .phase_start_ns = 1999 * TM_MS};
    cr_assert_eq(ui_model_live_from(&tm, 0, &live), 5000 * TM_MS);
    const uint64_t(*ns)[PHASE_COUNT] = ui_model_cell_times(&tm, 0, &live, 0, 10000 * TM_MS, 10);
    cr_assert_eq(ns[3][PHASE_EVAL], 1000 * TM_MS, "the event's own time, once");
    cr_assert_eq(ns[7][PHASE_EVAL], 1000 * TM_MS, "the rest up to now");
    /* another device's event of the phase is not this one's */
    struct ev e = {.kind = EV_PHASE, .dev = 1};
    e.u.phase = (struct ev_phase){.phase = PHASE_EVAL, .start_ns = 0, .end_ns = 9000 * TM_MS};
    ui_model_add(&tm, &e);
    cr_assert_eq(ui_model_live_from(&tm, 0, &live), 5000 * TM_MS);
    /* no live phase, or the host's waits (the sync in flight is theirs) */
    struct ui_live none = {.phase = PHASE_COUNT}, wait = {.phase = PHASE_SYNC};
    cr_assert_eq(ui_model_live_from(&tm, 0, &none), UINT64_MAX);
    cr_assert_eq(ui_model_live_from(&tm, 0, &wait), UINT64_MAX);
    cr_assert_eq(ui_model_live_from(&tm, 0, NULL), UINT64_MAX);
}

/* The live state from a snapshot: its phase only where its start is known (a replay's
 * snapshot names the last phase that ended). */
Test(timeline, the_live_state_comes_from_the_snapshot_and_the_sync_in_flight) {
    struct engine_snap s = {.phase = PHASE_PAUSED, .phase_start_ns = 7, .has_phase_start = true};
    struct trace_inflight inf = {.start_ns = 9, .op = SYNC_OP_DEVICE, .phase = PHASE_PAUSED};
    struct ui_live l = ui_timeline_live(&s, &inf);
    cr_assert_eq(l.phase, PHASE_PAUSED);
    cr_assert_eq(l.phase_start_ns, 7);
    cr_assert(l.has_sync);
    cr_assert_eq(l.sync_start_ns, 9);
    s.has_phase_start = false;
    l = ui_timeline_live(&s, NULL);
    cr_assert_eq(l.phase, PHASE_COUNT);
    cr_assert(!l.has_sync);
}

/* The compact form's rows: the devices, then the axis, the legend and the wait row as lines
 * allow; while a call waits too long its row comes before the axis and the legend. */
Test(timeline, compact_rows_give_a_waiting_call_its_row_first) {
    struct ui_timeline_rows r = ui_timeline_compact(3, 1, false); /* the 80x24 panel */
    cr_assert(r.devices == 1 && r.axis && r.legend && !r.wait);
    r = ui_timeline_compact(3, 1, true);
    cr_assert(r.devices == 1 && r.wait && r.legend && !r.axis);
    r = ui_timeline_compact(4, 1, false);
    cr_assert(r.devices == 1 && r.axis && r.legend && r.wait);
    r = ui_timeline_compact(2, 1, true);
    cr_assert(r.devices == 1 && r.wait && !r.legend && !r.axis);
    r = ui_timeline_compact(2, 1, false);
    cr_assert(r.devices == 1 && r.axis && !r.legend && !r.wait);
    r = ui_timeline_compact(1, 1, true);
    cr_assert(r.devices == 1 && !r.wait && !r.axis && !r.legend);
    r = ui_timeline_compact(3, 4, false); /* several devices: all lines but one */
    cr_assert(r.devices == 2 && r.axis && !r.legend && !r.wait);
    r = ui_timeline_compact(8, 4, true);
    cr_assert(r.devices == 4 && r.wait && r.legend && r.axis);
}

Test(timeline, legend_lists_what_the_cells_show_most_first) {
    unsigned cells[PHASE_COUNT] = {0};
    cells[PHASE_FORWARD] = 20;
    cells[PHASE_BACKWARD] = 30;
    cells[PHASE_EVAL] = 3;
    cells[PHASE_CHECKPOINT] = 3;
    enum ev_phase_id ph[PHASE_COUNT];
    int n = ui_timeline_legend(cells, ph);
    cr_assert_eq(n, 4);
    cr_assert_eq(ph[0], PHASE_BACKWARD);
    cr_assert_eq(ph[1], PHASE_FORWARD);
    cr_assert_eq(ph[2], PHASE_EVAL); /* equals in the table's order */
    cr_assert_eq(ph[3], PHASE_CHECKPOINT);
    /* "b backward f forward e eval k checkpoint" is 40 columns */
    cr_assert_eq(ui_timeline_named(ph, n, 40), 4);
    cr_assert_eq(ui_timeline_named(ph, n, 39), 3);
    cr_assert_eq(ui_timeline_named(ph, n, 8), 0); /* "b f e k": letters alone */
    unsigned none[PHASE_COUNT] = {0};
    cr_assert_eq(ui_timeline_legend(none, ph), 0);
}

Test(timeline, now_says_the_phase_its_age_the_steps_or_idle) {
    char b[40];
    struct engine_snap s = {
        .phase = PHASE_CLEANUP, .phase_start_ns = 1000 * TM_MS, .has_phase_start = true};
    cr_assert_eq(ui_timeline_now(&s, 1500 * TM_MS, b, sizeof(b)), PHASE_CLEANUP);
    cr_assert_str_eq(b, "cleanup");
    ui_timeline_now(&s, 43000 * TM_MS, b, sizeof(b));
    cr_assert_str_eq(b, "cleanup 42s");
    s = (struct engine_snap){.phase = PHASE_COUNT, .in_steps = true, .step = 1234};
    cr_assert_eq(ui_timeline_now(&s, 0, b, sizeof(b)), PHASE_COUNT);
    cr_assert_str_eq(b, "step 1234");
    s.in_steps = false;
    ui_timeline_now(&s, 0, b, sizeof(b));
    cr_assert_str_eq(b, "idle");
    s.phase = PHASE_SYNC; /* a replay's last event: the host's wait is shown as a wait */
    cr_assert_eq(ui_timeline_now(&s, 0, b, sizeof(b)), PHASE_COUNT);
}

Test(timeline, ages_fit_five_columns) {
    static const struct {
        uint64_t ns;
        const char *want;
    } cases[] = {{400 * TM_MS, "0.4s"},
                 {9999 * TM_MS, "9.9s"},
                 {12000 * TM_MS, "12s"},
                 {302000 * TM_MS, "5m02s"},
                 {2520000 * TM_MS, "42m"},
                 {61200000 * TM_MS, "17h"},
                 {5ull * 86400 * 1000 * TM_MS, "5d"}};
    char b[16];
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        ui_timeline_age(b, sizeof(b), cases[k].ns);
        cr_assert_str_eq(b, cases[k].want);
        cr_assert_leq(strlen(b), 5);
    }
}
