/* The overlays' frame: lines wrapped to the box with their continuations hung, scrolled by the
 * keys, the position on the bottom border and the hint inside it, drawn into a curses screen
 * on /dev/null and read back. */
#include "tui/dashboard/app_internal.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

TestSuite(app_overlay, .timeout = 20);

static SCREEN *ao_screen;
static FILE *ao_out, *ao_in;
static struct theme ao_theme;
static struct ui_frame ao_frame;

static void ao_open(void) {
    ao_out = fopen("/dev/null", "w");
    ao_in = fopen("/dev/null", "r");
    ao_screen = newterm("xterm", ao_out, ao_in);
    cr_assert_not_null(ao_screen);
    resizeterm(24, 80);
    theme_default(&ao_theme);
    ao_frame = (struct ui_frame){.theme = &ao_theme};
}

static void ao_close(void) {
    endwin();
    delscreen(ao_screen);
    fclose(ao_out);
    fclose(ao_in);
}

/* Row y of w with its trailing blanks dropped, in a static buffer. */
static const char *ao_row(WINDOW *w, int y) {
    static char buf[256];
    int n = getmaxx(w) < 255 ? getmaxx(w) : 255;
    n = n < 0 ? 0 : n;
    mvwinnstr(w, y, 0, buf, n);
    buf[n] = '\0';
    for (int k = n - 1; k >= 0 && buf[k] == ' '; k--)
        buf[k] = '\0';
    return buf;
}

/* The text inside the frame on row y (the border and the margin cut off). */
static const char *ao_in_row(WINDOW *w, int y) {
    static char buf[256];
    snprintf(buf, sizeof(buf), "%s", ao_row(w, y) + 2);
    size_t n = strlen(buf);
    if (n && buf[n - 1] != ' ') /* the right border */
        buf[--n] = '\0';
    while (n && buf[n - 1] == ' ')
        buf[--n] = '\0';
    return buf;
}

static const struct app_overlay_src ao_src[] = {
    {"q     quit: finish the step, write the checkpoint", THEME_TEXT, 6},
    {"", THEME_TEXT, 0},
    {"one\ntwo\nthree\nfour\nfive\nsix", THEME_DIM, 2},
};

Test(app_overlay, lines_wrap_inside_the_frame_and_hang) {
    ao_open();
    WINDOW *w = newwin(8, 24, 0, 0); /* 20 columns of text, 5 rows: 6 for lines, 1 for the hint */
    struct textview v = {0};
    app_overlay_fill(w, &ao_frame, ao_src, 3, "Esc close", &v);
    cr_assert_eq(v.rows, 5);
    cr_assert_eq(v.total, 4 + 1 + 6, "four lines of the first source, a blank, six");
    cr_assert_str_eq(ao_in_row(w, 1), "q     quit: finish");
    cr_assert_str_eq(ao_in_row(w, 2), "      the step,");
    cr_assert_str_eq(ao_in_row(w, 3), "      write the");
    cr_assert_str_eq(ao_in_row(w, 4), "      checkpoint");
    cr_assert_str_eq(ao_in_row(w, 5), "");
    cr_assert_str_eq(ao_in_row(w, 6), "Esc close");
    cr_assert(strstr(ao_row(w, 7), " 1-5/11 more below "), "%s", ao_row(w, 7));
    delwin(w);
    ao_close();
}

Test(app_overlay, scroll_keys_reach_the_last_line) {
    ao_open();
    WINDOW *w = newwin(8, 24, 0, 0);
    struct textview v = {0};
    app_overlay_fill(w, &ao_frame, ao_src, 3, "Esc close", &v);
    cr_assert(app_overlay_scroll_key(&v, KEY_END));
    app_overlay_fill(w, &ao_frame, ao_src, 3, "Esc close", &v);
    cr_assert_str_eq(ao_in_row(w, 1), "two");
    cr_assert_str_eq(ao_in_row(w, 5), "six", "End: the last line at the bottom");
    cr_assert(strstr(ao_row(w, 7), " 7-11/11 more above "), "%s", ao_row(w, 7));
    cr_assert(app_overlay_scroll_key(&v, KEY_UP));
    app_overlay_fill(w, &ao_frame, ao_src, 3, "Esc close", &v);
    cr_assert_str_eq(ao_in_row(w, 1), "one");
    cr_assert(strstr(ao_row(w, 7), " 6-10/11 "), "too narrow for the words: %s", ao_row(w, 7));
    cr_assert_not(app_overlay_scroll_key(&v, 'x'), "not a scroll key");
    cr_assert_eq(v.top, 5);
    delwin(w);
    ao_close();
}

/* Everything in view: no mark; a hint too long for one row wraps rather than being cut. */
Test(app_overlay, a_short_text_has_no_mark_and_a_long_hint_wraps) {
    ao_open();
    WINDOW *w = newwin(7, 24, 0, 0);
    struct textview v = {0};
    app_overlay_fill(w, &ao_frame, ao_src + 1, 1, "Up/Down scroll  Enter/Esc close", &v);
    cr_assert_eq(v.rows, 3);
    cr_assert_str_eq(ao_in_row(w, 4), "Up/Down scroll");
    cr_assert_str_eq(ao_in_row(w, 5), "  Enter/Esc close");
    cr_assert_null(strstr(ao_row(w, 6), "/"), "no mark: %s", ao_row(w, 6));
    delwin(w);
    ao_close();
}
