/* Titles, gauges, sparklines and clipped text. */
#include "tui/widgets.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *w_level_glyph(int level, bool utf8) {
    static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char *const ascii[8] = {"_", ".", ",", "-", "=", "+", "*", "#"};
    level = level < 0 ? 0 : level > 7 ? 7 : level;
    return utf8 ? blocks[level] : ascii[level];
}

/* Bytes of s that fill at most cols columns (one column per character: the dashboard's
 * glyphs are all narrow), never splitting a UTF-8 sequence. */
static int w_bytes_for_cols(const char *s, int cols) {
    int bytes = 0;
    for (int c = 0; s[bytes] && c < cols; c++) {
        bytes++;
        while (((unsigned char)s[bytes] & 0xC0) == 0x80)
            bytes++;
    }
    return bytes;
}

void w_text(WINDOW *w, int y, int x, int maxw, enum theme_role r, const struct ui_frame *f,
            const char *fmt, ...) {
    if (maxw <= 0)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    attr_t a = ui_attr(f, r);
    wattron(w, a);
    mvwaddnstr(w, y, x, buf, w_bytes_for_cols(buf, maxw));
    wattroff(w, a);
}

void w_title(WINDOW *w, const char *title, const char *info, bool focused,
             const struct ui_frame *f) {
    int cols = getmaxx(w);
    attr_t a = ui_attr(f, focused ? THEME_ACCENT : THEME_BORDER);
    wattron(w, a);
    mvwhline(w, 0, 0, f->utf8 ? ACS_HLINE : '-', cols);
    wattroff(w, a);
    w_text(w, 0, 1, cols - 2, focused ? THEME_ACCENT : THEME_TITLE, f, " %s%s ",
           focused ? "> " : "", title);
    if (info && info[0]) {
        int len = (int)strlen(info) + 2;
        if (len < cols - (int)strlen(title) - 8)
            w_text(w, 0, cols - len - 1, len, THEME_DIM, f, " %s ", info);
    }
}

void w_bar(WINDOW *w, int y, int x, int width, double frac, enum theme_role fill,
           const struct ui_frame *f) {
    if (width <= 0)
        return;
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    int full = (int)(frac * width + 0.5);
    attr_t a = ui_attr(f, fill), d = ui_attr(f, THEME_DIM);
    for (int k = 0; k < width; k++) {
        bool on = k < full;
        wattron(w, on ? a : d);
        if (f->utf8)
            mvwaddstr(w, y, x + k, on ? "\u2588" : "\u2591");
        else
            mvwaddch(w, y, x + k, on ? '#' : '.');
        wattroff(w, on ? a : d);
    }
}

void w_spark(WINDOW *w, int y, int x, int width, const double *v, size_t n, enum theme_role r,
             const struct ui_frame *f) {
    if (width <= 0 || n == 0)
        return;
    size_t first = n > (size_t)width ? n - (size_t)width : 0;
    double lo = v[first], hi = v[first];
    for (size_t k = first; k < n; k++) {
        lo = v[k] < lo ? v[k] : lo;
        hi = v[k] > hi ? v[k] : hi;
    }
    int x0 = x + width - (int)(n - first);
    attr_t a = ui_attr(f, r);
    wattron(w, a);
    for (size_t k = first; k < n; k++) {
        int level = hi > lo ? (int)((v[k] - lo) / (hi - lo) * 7.0 + 0.5) : 3;
        mvwaddstr(w, y, x0 + (int)(k - first), w_level_glyph(level, f->utf8));
    }
    wattroff(w, a);
}
