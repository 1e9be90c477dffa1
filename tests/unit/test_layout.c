/* Tests for the pure layout: sizes from 60x16 to 250x70, one and two columns, hiding. */
#include "tui/view/layout.h"

#include <criterion/criterion.h>

TestSuite(layout, .timeout = 10);

/* The dashboard's panels: gpu, memory, timeline, sync, events. */
static const struct layout_item lay_items[5] = {
    {.min_h = 3, .pref_h = 4, .column = 0}, {.min_h = 3, .pref_h = 10, .column = 0},
    {.min_h = 4, .pref_h = 6, .column = 1}, {.min_h = 4, .pref_h = 8, .column = 1},
    {.min_h = 3, .pref_h = 0, .column = 2},
};

static void lay_check_tiles(int rows, int cols, const struct layout_out *o,
                            const struct ui_rect *r) {
    /* every shown rect lies inside the body and no two overlap */
    for (int i = 0; i < 5; i++) {
        if (r[i].h == 0)
            continue;
        cr_assert_geq(r[i].y, LAYOUT_HEADER_ROWS, "%dx%d panel %d", cols, rows, i);
        cr_assert_leq(r[i].y + r[i].h, rows - LAYOUT_FOOTER_ROWS, "%dx%d panel %d", cols, rows, i);
        cr_assert_leq(r[i].x + r[i].w, cols);
        cr_assert_geq(r[i].h, lay_items[i].min_h);
        for (int j = 0; j < i; j++) {
            if (r[j].h == 0)
                continue;
            bool apart = r[i].y + r[i].h <= r[j].y || r[j].y + r[j].h <= r[i].y ||
                         r[i].x + r[i].w <= r[j].x || r[j].x + r[j].w <= r[i].x;
            cr_assert(apart, "%dx%d: panels %d and %d overlap", cols, rows, i, j);
        }
    }
    cr_assert_eq(o->header.h, LAYOUT_HEADER_ROWS);
    cr_assert_eq(o->footer.y, rows - 1);
}

Test(layout, single_column_at_80x24_shows_everything) {
    struct layout_out o;
    struct ui_rect r[5];
    layout_compute(24, 80, lay_items, 5, 0, &o, r);
    cr_assert_not(o.too_small);
    cr_assert_not(o.wide);
    cr_assert_eq(o.hidden, 0);
    lay_check_tiles(24, 80, &o, r);
    /* 20 body rows: mins 17, the 3 spare rows go to gpu (+1) and memory (+2) in order */
    cr_assert_eq(r[0].h, 4);
    cr_assert_eq(r[1].h, 5);
    cr_assert_eq(r[2].h, 4);
    cr_assert_eq(r[3].h, 4);
    cr_assert_eq(r[4].h, 3);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(r[i].w, 80);
}

Test(layout, two_columns_from_160) {
    struct layout_out o;
    struct ui_rect r[5];
    layout_compute(60, 200, lay_items, 5, 0, &o, r);
    cr_assert(o.wide);
    lay_check_tiles(60, 200, &o, r);
    cr_assert_eq(r[0].x, 0);
    cr_assert_eq(r[2].x, 100);
    cr_assert_eq(r[4].w, 200); /* events below, full width */
    cr_assert_gt(r[4].y, r[3].y);
    layout_compute(60, 159, lay_items, 5, 0, &o, r);
    cr_assert_not(o.wide);
}

Test(layout, every_size_tiles_cleanly) {
    for (int rows = LAYOUT_MIN_ROWS; rows <= 70; rows += 3)
        for (int cols = LAYOUT_MIN_COLS; cols <= 250; cols += 7) {
            struct layout_out o;
            struct ui_rect r[5];
            layout_compute(rows, cols, lay_items, 5, 2, &o, r);
            cr_assert_not(o.too_small);
            lay_check_tiles(rows, cols, &o, r);
            cr_assert_gt(r[2].h, 0, "%dx%d: the focused panel is hidden", cols, rows);
            int shown = 0;
            for (int i = 0; i < 5; i++)
                shown += r[i].h > 0;
            cr_assert_eq(shown + o.hidden, 5);
        }
}

Test(layout, small_terminals_hide_from_the_end_but_keep_focus) {
    struct layout_out o;
    struct ui_rect r[5];
    layout_compute(16, 60, lay_items, 5, 0, &o, r); /* 12 body rows: gpu, memory, timeline */
    cr_assert_eq(o.hidden, 2);
    cr_assert_eq(r[3].h, 0);
    cr_assert_eq(r[4].h, 0);
    layout_compute(16, 60, lay_items, 5, 4, &o, r); /* events focused: it stays */
    cr_assert_gt(r[4].h, 0);
    lay_check_tiles(16, 60, &o, r);
}

Test(layout, below_the_minimum_is_too_small) {
    struct layout_out o;
    struct ui_rect r[5];
    layout_compute(12, 50, lay_items, 5, 0, &o, r);
    cr_assert(o.too_small);
    layout_compute(LAYOUT_MIN_ROWS - 1, 200, lay_items, 5, 0, &o, r);
    cr_assert(o.too_small);
    layout_compute(LAYOUT_MIN_ROWS, LAYOUT_MIN_COLS, lay_items, 5, 0, &o, r);
    cr_assert_not(o.too_small);
}

/* A chart that grows takes the rows its neighbours leave once they have their pref_h: every
 * row of the column is given to someone. */
Test(layout, grow_panels_share_what_is_left) {
    const struct layout_item it[3] = {
        {.min_h = 3, .pref_h = 5, .column = 0},
        {.min_h = 3, .pref_h = 6, .column = 0, .grow = true},
        {.min_h = 3, .pref_h = 10, .column = 0},
    };
    struct layout_out o;
    struct ui_rect r[3];
    layout_compute(40, 120, it, 3, 0, &o, r); /* 36 body rows: 5 + 10 prefs, 21 to the chart */
    cr_assert_eq(r[0].h, 5);
    cr_assert_eq(r[1].h, 36 - 5 - 10);
    cr_assert_eq(r[2].h, 10);
}

/* An extra panel shows only where every other one has its pref_h; otherwise it waits behind
 * Tab (counted hidden) and does not squeeze the others to their mins. */
Test(layout, an_extra_panel_waits_for_room) {
    const struct layout_item it[3] = {
        {.min_h = 3, .pref_h = 12, .column = 0},
        {.min_h = 4, .pref_h = 9, .column = 0},
        {.min_h = 3, .pref_h = 6, .column = 0, .grow = true, .extra = true},
    };
    struct layout_out o;
    struct ui_rect r[3];
    layout_compute(24, 80, it, 3, 0, &o, r); /* 20 rows: 12 + 9 do not leave 3 */
    cr_assert_eq(r[2].h, 0);
    cr_assert_eq(o.hidden, 1);
    cr_assert_eq(r[0].h, 12);
    cr_assert_eq(r[1].h, 8);
    layout_compute(40, 80, it, 3, 0, &o, r); /* 36 rows: 12 + 9 + the rest */
    cr_assert_eq(o.hidden, 0);
    cr_assert_eq(r[1].h, 9);
    cr_assert_eq(r[2].h, 36 - 21);
    layout_compute(24, 80, it, 3, 2, &o, r); /* focused, it shows anyway */
    cr_assert_gt(r[2].h, 0);
}

/* Two columns: the panels below get what they want (at least their min, at most a third of
 * the body), the columns above the rest. */
Test(layout, the_bottom_takes_what_it_wants_up_to_a_third) {
    struct layout_item it[3] = {
        {.min_h = 3, .pref_h = 6, .column = 0, .grow = true},
        {.min_h = 3, .pref_h = 6, .column = 1, .grow = true},
        {.min_h = 9, .pref_h = 12, .column = 2},
    };
    struct layout_out o;
    struct ui_rect r[3];
    layout_compute(60, 200, it, 3, 0, &o, r);
    cr_assert_eq(r[2].h, 12);
    cr_assert_eq(r[0].h, 56 - 12);
    it[2].pref_h = 200;
    layout_compute(60, 200, it, 3, 0, &o, r);
    cr_assert_eq(r[2].h, 9 + (56 - 9) / 3);
}
