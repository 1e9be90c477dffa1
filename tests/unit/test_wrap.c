/* Wrapping text to a width: breaks at spaces, words longer than the room cut, continuations
 * indented, UTF-8 sequences kept whole, newlines kept; the expected lines are worked out by
 * hand. */
#include "tui/view/wrap.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

TestSuite(wrap, .timeout = 10);

#define WR_MAX 64

/* The screen lines of s as one string: each line's indent as spaces, then its text, lines
 * joined by '|'. */
static const char *wr(const char *s, int width, int hang) {
    static char buf[2048];
    struct wrap_line l[WR_MAX];
    int n = wrap_text(s, width, hang, l, WR_MAX);
    cr_assert_leq(n, WR_MAX);
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < n; k++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%*s%.*s", k ? "|" : "", l[k].indent,
                               "", l[k].len, s + l[k].off);
    return buf;
}

Test(wrap, breaks_at_the_last_space_that_fits) {
    cr_assert_str_eq(wr("alpha beta gamma", 12, 0), "alpha beta|gamma");
    cr_assert_str_eq(wr("alpha beta gamma", 10, 0), "alpha beta|gamma", "an exact fit");
    cr_assert_str_eq(wr("alpha beta gamma", 9, 0), "alpha|beta|gamma");
    cr_assert_str_eq(wr("alpha beta gamma", 16, 0), "alpha beta gamma", "fits whole");
    cr_assert_str_eq(wr("aa   bb", 3, 0), "aa|bb", "the spaces at a break are dropped");
    cr_assert_str_eq(wr("aa bb   ", 5, 0), "aa bb", "trailing spaces make no line");
}

Test(wrap, a_word_longer_than_the_room_is_cut) {
    cr_assert_str_eq(wr("abcdefghij", 4, 0), "abcd|efgh|ij");
    cr_assert_str_eq(wr("see /sys/class/drm/card0 now", 10, 0), "see|/sys/class|/drm/card0|now");
    cr_assert_str_eq(wr("x", 0, 0), "x", "a width under one is one");
    cr_assert_str_eq(wr("xyz", -3, 0), "x|y|z");
}

Test(wrap, continuations_hang_under_the_text) {
    /* lead 2 + hang 2: the item's words continue under "sudo", at column 4 */
    cr_assert_str_eq(wr("  - sudo setcap cap_syslog+ep", 14, 2),
                     "  - sudo|    setcap|    cap_syslog|    +ep");
    cr_assert_str_eq(wr("q     quit: finish the step", 16, 6), "q     quit:|      finish the|"
                                                               "      step");
    /* at most half the width: a hang of 30 in 20 columns is 10 */
    cr_assert_str_eq(wr("one two three four five", 20, 30), "one two three four|          five");
    cr_assert_str_eq(wr("abc def", 3, -5), "abc|def", "a negative hang is none");
}

Test(wrap, newlines_end_lines_and_every_line_counts) {
    cr_assert_str_eq(wr("one\n\ntwo", 10, 0), "one||two");
    cr_assert_eq(wrap_text("", 10, 0, NULL, 0), 1, "an empty text is one empty line");
    cr_assert_eq(wrap_text("a\n", 10, 0, NULL, 0), 2);
    cr_assert_str_eq(wr("  item one two\nnext", 8, 2), "  item|    one|    two|next",
                     "each line hangs by its own lead");
    cr_assert_str_eq(wr("        ", 4, 0), "", "a line of spaces is one empty line");
}

Test(wrap, utf8_sequences_stay_whole_and_count_one_column) {
    /* "é" is two bytes, "€" three, U+1F600 four: each one column */
    cr_assert_str_eq(wr("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 2, 0),
                     "\xc3\xa9\xc3\xa9|\xc3\xa9\xc3\xa9|\xc3\xa9");
    cr_assert_str_eq(wr("\xe2\x82\xac\xf0\x9f\x98\x80x \xe2\x82\xac", 3, 0),
                     "\xe2\x82\xac\xf0\x9f\x98\x80x|\xe2\x82\xac");
    cr_assert_str_eq(wr("caf\xc3\xa9 cr\xc3\xa8me", 5, 0), "caf\xc3\xa9|cr\xc3\xa8me");
}

Test(wrap, counts_every_line_and_writes_at_most_max) {
    struct wrap_line l[2] = {{-1, -1, -1}, {-1, -1, -1}};
    const char *s = "aa bb cc dd";
    cr_assert_eq(wrap_text(s, 2, 0, l, 1), 4, "the count is of every line");
    cr_assert_eq(l[0].off, 0);
    cr_assert_eq(l[0].len, 2);
    cr_assert_eq(l[1].off, -1, "past max nothing is written");
    cr_assert_eq(wrap_text(s, 2, 0, NULL, 5), 4, "no buffer: counted only");
}
