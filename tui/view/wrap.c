/* Breaking text into screen lines at spaces, for the overlays. */
#include "tui/view/wrap.h"

#include <stdbool.h>
#include <string.h>

/* The byte after the character at s[i] (its UTF-8 continuation bytes included), at most end. */
static int wrap_next(const char *s, int i, int end) {
    i++;
    while (i < end && ((unsigned char)s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

static void wrap_emit(struct wrap_line *out, int max, int *n, int off, int len, int indent) {
    if (*n < max)
        out[*n] = (struct wrap_line){off, len, indent};
    (*n)++;
}

/* The end of the screen line that starts at s[i] with room columns, in s[i, end): where the
 * text fits whole, else at the last space that fits after some text, else cut at the room. */
static int wrap_break(const char *s, int i, int end, int room) {
    int j = i, brk = -1;
    bool text = false;
    for (int cols = 0; j < end && cols < room; cols++) {
        if (s[j] != ' ')
            text = true;
        else if (text)
            brk = j;
        j = wrap_next(s, j, end);
    }
    if (j >= end || s[j] == ' ')
        return j;
    return brk >= 0 ? brk : j;
}

/* The screen lines of s[start, end), a line without '\n'. */
static void wrap_one(const char *s, int start, int end, int width, int hang, struct wrap_line *out,
                     int max, int *n) {
    int lead = 0;
    while (start + lead < end && s[start + lead] == ' ')
        lead++;
    int indent = lead + (hang > 0 ? hang : 0);
    indent = indent > width / 2 ? width / 2 : indent;
    int i = start;
    for (bool first = true;; first = false) {
        int at = first ? 0 : indent;
        int stop = wrap_break(s, i, end, width - at);
        int len = stop - i;
        while (len > 0 && s[i + len - 1] == ' ')
            len--;
        wrap_emit(out, max, n, i, len, at);
        i = stop;
        while (i < end && s[i] == ' ')
            i++;
        if (i >= end)
            return;
    }
}

int wrap_text(const char *s, int width, int hang, struct wrap_line *out, int max) {
    int n = 0;
    width = width < 1 ? 1 : width;
    max = out ? max : 0;
    for (int start = 0;;) {
        const char *nl = strchr(s + start, '\n');
        int end = nl ? (int)(nl - s) : start + (int)strlen(s + start);
        wrap_one(s, start, end, width, hang, out, max, &n);
        if (!nl)
            return n;
        start = end + 1;
    }
}
