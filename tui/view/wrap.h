/* Text wrapped to a width: where each screen line of a text starts and ends, computed without
 * curses so that every overlay breaks its lines the same way and the rule tests alone. */
#ifndef RINGSIDE_TUI_VIEW_WRAP_H
#define RINGSIDE_TUI_VIEW_WRAP_H

/* One screen line: bytes [off, off + len) of the text, drawn after indent blank columns. */
struct wrap_line {
    int off, len;
    int indent;
};

/* The screen lines of s wrapped to width columns (a width under 1 is taken as 1), the first
 * max of them written to out (out may be NULL when max is 0). Returns how many lines there
 * are in all, which may be more than max.
 *
 * - Each '\n' ends a line, and each line of s gives at least one screen line: "" is one empty
 *   line, "a\n" is "a" and an empty line.
 * - A line that does not fit breaks at its last space that does (the spaces there are
 *   dropped); a word longer than the room is cut at the room.
 * - The lines a line continues on start after indent = its own leading spaces + hang columns
 *   (at most half the width, so a continuation always has room), so that "  - a long item"
 *   continues under "a" with hang 2.
 * - A column is one character: a UTF-8 sequence is never split and counts one column (the
 *   dashboard's text is narrow characters); any other byte counts one. */
int wrap_text(const char *s, int width, int hang, struct wrap_line *out, int max);

#endif
