/* The overlays' scroll position: every move stays in range, a page keeps one line of the last,
 * End shows the last line at the bottom, and the mark says where the view is. */
#include "tui/view/textview.h"

#include <criterion/criterion.h>
#include <stdio.h>

TestSuite(textview, .timeout = 10);

Test(textview, moves_stay_between_the_first_and_the_last_page) {
    struct textview v = {.top = 0, .rows = 10, .total = 34};
    textview_move(&v, TEXTVIEW_UP);
    cr_assert_eq(v.top, 0, "nothing above the first line");
    textview_move(&v, TEXTVIEW_DOWN);
    cr_assert_eq(v.top, 1);
    textview_move(&v, TEXTVIEW_PAGE_DOWN);
    cr_assert_eq(v.top, 10, "a page is rows - 1: the bottom line becomes the top one");
    textview_move(&v, TEXTVIEW_PAGE_DOWN);
    textview_move(&v, TEXTVIEW_PAGE_DOWN);
    cr_assert_eq(v.top, 24, "the last page: lines 25-34");
    textview_move(&v, TEXTVIEW_DOWN);
    cr_assert_eq(v.top, 24);
    textview_move(&v, TEXTVIEW_PAGE_UP);
    cr_assert_eq(v.top, 15);
    textview_move(&v, TEXTVIEW_HOME);
    cr_assert_eq(v.top, 0);
    textview_move(&v, TEXTVIEW_END);
    cr_assert_eq(v.top, 24);
}

Test(textview, everything_in_view_does_not_scroll) {
    struct textview v = {.top = 0, .rows = 10, .total = 7};
    textview_move(&v, TEXTVIEW_END);
    cr_assert_eq(v.top, 0);
    textview_move(&v, TEXTVIEW_PAGE_DOWN);
    cr_assert_eq(v.top, 0);
    v = (struct textview){.top = 2, .rows = 1, .total = 3};
    textview_move(&v, TEXTVIEW_PAGE_UP);
    cr_assert_eq(v.top, 1, "a page of one row is one line");
    v = (struct textview){.top = 30, .rows = 10, .total = 12}; /* the text got shorter */
    textview_clamp(&v);
    cr_assert_eq(v.top, 2);
    v = (struct textview){.top = 3, .rows = 0, .total = 0};
    textview_clamp(&v);
    cr_assert_eq(v.top, 0);
}

Test(textview, the_mark_says_which_lines_and_what_is_past_them) {
    char buf[64];
    struct textview v = {.top = 0, .rows = 9, .total = 34};
    cr_assert_eq(textview_mark(&v, buf, sizeof(buf)), 17);
    cr_assert_str_eq(buf, "1-9/34 more below");
    v.top = 11;
    textview_mark(&v, buf, sizeof(buf));
    cr_assert_str_eq(buf, "12-20/34 more above and below");
    v.top = 25;
    textview_mark(&v, buf, sizeof(buf));
    cr_assert_str_eq(buf, "26-34/34 more above");
    v.top = 99; /* out of range: marked as drawn, clamped */
    textview_mark(&v, buf, sizeof(buf));
    cr_assert_str_eq(buf, "26-34/34 more above");
    v = (struct textview){.top = 0, .rows = 9, .total = 9};
    cr_assert_eq(textview_mark(&v, buf, sizeof(buf)), 0, "all in view: no mark");
    cr_assert_str_eq(buf, "");
}
