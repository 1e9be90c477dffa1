/* Tests for the dashboard's pure model: timeline painting, the chunk ladder, the events list
 * and the formatting helpers. */
#include "tui/app_model.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

TestSuite(app_model, .timeout = 10);

static struct app_model am;

static void am_phase(enum ev_phase_id ph, uint64_t a, uint64_t b) {
    struct ev e = {.kind = EV_PHASE};
    e.u.phase = (struct ev_phase){.phase = (uint8_t)ph, .start_ns = a, .end_ns = b};
    app_model_add(&am, &e);
}

Test(app_model, paint_places_phases_on_their_cells) {
    memset(&am, 0, sizeof(am));
    /* window [1000, 2000) over 10 cells of 100 ns */
    am_phase(PHASE_VPOC, 1000, 1299);     /* cells 0-2 */
    am_phase(PHASE_FORWARD, 1500, 1549);  /* cell 5 */
    am_phase(PHASE_BACKWARD, 1540, 1700); /* cells 5-7; newer, so it wins cell 5 */
    am_phase(PHASE_LOAD, 10, 20);         /* outside the window */
    enum ev_phase_id cells[10];
    app_model_paint(&am, 1000, 2000, 10, cells);
    const enum ev_phase_id want[10] = {PHASE_VPOC,  PHASE_VPOC,     PHASE_VPOC,     PHASE_COUNT,
                                       PHASE_COUNT, PHASE_BACKWARD, PHASE_BACKWARD, PHASE_BACKWARD,
                                       PHASE_COUNT, PHASE_COUNT};
    for (int k = 0; k < 10; k++)
        cr_assert_eq(cells[k], want[k], "cell %d: %d", k, cells[k]);
}

Test(app_model, paint_clips_phases_across_the_edges) {
    memset(&am, 0, sizeof(am));
    am_phase(PHASE_EVAL, 500, 1150);  /* starts before the window: cells 0-1 */
    am_phase(PHASE_SYNC, 1950, 3000); /* runs past its end: cell 9 */
    enum ev_phase_id cells[10];
    app_model_paint(&am, 1000, 2000, 10, cells);
    cr_assert_eq(cells[0], PHASE_EVAL);
    cr_assert_eq(cells[1], PHASE_EVAL);
    cr_assert_eq(cells[2], PHASE_COUNT);
    cr_assert_eq(cells[8], PHASE_COUNT);
    cr_assert_eq(cells[9], PHASE_SYNC);
}

Test(app_model, events_list_is_newest_first_and_bounded) {
    memset(&am, 0, sizeof(am));
    for (int i = 0; i < APP_LINES + 5; i++) {
        struct ev e = {.t_ns = (uint64_t)i, .kind = EV_LOG};
        e.u.text.severity = SEV_INFO;
        snprintf(e.u.text.text, sizeof(e.u.text.text), "line %d", i);
        app_model_add(&am, &e);
    }
    struct ev c = {.kind = EV_COMMAND};
    c.u.command = (struct ev_command){.cmd = CMD_CLEANUP, .rc = -5};
    snprintf(c.u.command.text, sizeof(c.u.command.text), "refused");
    app_model_add(&am, &c);
    cr_assert_str_eq(app_model_line(&am, 0)->text, "cleanup: refused");
    cr_assert_eq(app_model_line(&am, 0)->severity, SEV_WARNING);
    cr_assert_str_eq(app_model_line(&am, 1)->text, "line 260");
    cr_assert_str_eq(app_model_line(&am, APP_LINES - 1)->text, "line 6");
    cr_assert_null(app_model_line(&am, APP_LINES));
}

Test(app_model, chunk_ladder) {
    cr_assert_eq(app_chunk_step(500, 1), 1000);
    cr_assert_eq(app_chunk_step(500, -1), 250);
    cr_assert_eq(app_chunk_step(125, -1), 125); /* bottom stays */
    cr_assert_eq(app_chunk_step(3500, 1), 0);   /* then the whole session */
    cr_assert_eq(app_chunk_step(0, 1), 0);
    cr_assert_eq(app_chunk_step(0, -1), 3500);
    cr_assert_eq(app_chunk_step(700, 1), 1000); /* off the ladder: the next rung */
    cr_assert_eq(app_chunk_step(700, -1), 500);
}

Test(app_model, formatting) {
    char b[32];
    app_fmt_bytes(b, sizeof(b), 512);
    cr_assert_str_eq(b, "512 B");
    app_fmt_bytes(b, sizeof(b), 23068672);
    cr_assert_str_eq(b, "22.0 MiB");
    app_fmt_hms(b, sizeof(b), 3723.9);
    cr_assert_str_eq(b, "01:02:03");
    app_fmt_ns(b, sizeof(b), 950);
    cr_assert_str_eq(b, "950ns");
    app_fmt_ns(b, sizeof(b), 733200);
    cr_assert_str_eq(b, "733.2us");
    app_fmt_ns(b, sizeof(b), 17100000);
    cr_assert_str_eq(b, "17.1ms");
    app_fmt_ns(b, sizeof(b), 42000000000ull);
    cr_assert_str_eq(b, "42.0s");
}
