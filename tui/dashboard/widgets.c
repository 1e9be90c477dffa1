/* Titles, gauges, sparklines, clipped text, and rows of cells put in runs. */
#define _XOPEN_SOURCE 700 /* wcwidth, and the wide-character curses calls (cchar_t) */
#include "tui/dashboard/widgets.h"

#include "tui/view/chart.h"

#include <langinfo.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <wctype.h>

#define W_PUT_MAX 512 /* cells w_put writes at once (w_text's buffer) */

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

/* The well-formed UTF-8 character at s[*i] (n bytes in all): its code point, *i moved past
 * it; -1 for a malformed, overlong or surrogate sequence. */
static long w_utf8_next(const unsigned char *s, int n, int *i) {
    unsigned c = s[*i];
    int more = c >= 0xF0 && c <= 0xF4 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 && c <= 0xDF ? 1 : -1;
    if (more < 0 || more >= 3 + (c < 0xF0) || *i + more >= n)
        return -1;
    long cp = (long)(c & (0x3Fu >> more));
    for (int k = 1; k <= more; k++) {
        if ((s[*i + k] & 0xC0) != 0x80)
            return -1;
        cp = cp << 6 | (s[*i + k] & 0x3F);
    }
    static const long least[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *i += more + 1;
    return cp;
}

/* s[0, n) as cells of attribute a into out: false when a character is not one that curses
 * would put in one cell of its own as it is (then the caller lets curses do it). Non-ASCII
 * characters count only in a UTF-8 locale, where curses decodes them the same way. */
static bool w_cells(const char *s, int n, attr_t a, cchar_t *out, int *count) {
    const unsigned char *u = (const unsigned char *)s;
    attr_t attrs = a & ~A_COLOR;
    short pair = (short)PAIR_NUMBER(a);
    bool utf8 = false, checked = false;
    wchar_t prev = 0;
    int k = 0;
    for (int i = 0; i < n; k++) {
        wchar_t c = (wchar_t)u[i];
        if (u[i] >= 0x80) {
            if (!checked)
                utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
            checked = true;
            long cp = utf8 ? w_utf8_next(u, n, &i) : -1;
            if (cp < 0)
                return false;
            c = (wchar_t)cp;
        } else if (u[i] < 0x20 || u[i] == 0x7F) {
            return false;
        } else {
            i++;
        }
        if (k == W_PUT_MAX)
            return false;
        if (k > 0 && c == prev) { /* the same again (a gauge, dots, spaces): the same cell */
            out[k] = out[k - 1];
            continue;
        }
        wchar_t wc[2] = {c, 0};
        if ((c >= 0x80 && (!iswprint((wint_t)c) || wcwidth(c) != 1)) ||
            setcchar(&out[k], wc, attrs, pair, NULL) != OK)
            return false;
        prev = c;
    }
    *count = k;
    return true;
}

void w_put(WINDOW *w, int y, int x, const char *s, int n, attr_t a) {
    cchar_t cells[W_PUT_MAX];
    int count = 0;
    if (n <= 0)
        return;
    /* in one row, as mvwaddnstr would leave it (past the right edge it wraps) */
    int cols = getmaxx(w);
    if (w_cells(s, n, a, cells, &count) && x + count <= cols) {
        if (mvwadd_wchnstr(w, y, x, cells, count) == ERR)
            return;
        /* the cursor where waddnstr leaves it (the terminal sees the same moves): after the
         * text, or wrapped at the right edge to the next row's start (the last row keeps it) */
        if (x + count < cols)
            wmove(w, y, x + count);
        else
            wmove(w, y + 1 < getmaxy(w) ? y + 1 : y, y + 1 < getmaxy(w) ? 0 : cols - 1);
        return;
    }
    char safe[W_PUT_MAX * 4 + 1];
    int m = w_scrub(s, n < W_PUT_MAX * 4 ? n : W_PUT_MAX * 4, safe);
    wattron(w, a);
    mvwaddnstr(w, y, x, safe, m);
    wattroff(w, a);
}

int w_scrub(const char *s, int n, char *out) {
    const unsigned char *u = (const unsigned char *)s;
    int o = 0;
    for (int i = 0; i < n;) {
        unsigned c = u[i];
        bool c1 = c == 0xC2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9F;
        bool mark = c == 0xE2 && i + 2 < n &&
                    ((u[i + 1] == 0x80 && (u[i + 2] == 0x8E || u[i + 2] == 0x8F ||
                                           (u[i + 2] >= 0xAA && u[i + 2] <= 0xAE))) ||
                     (u[i + 1] == 0x81 && u[i + 2] >= 0xA6 && u[i + 2] <= 0xA9));
        if (c < 0x20 || c == 0x7F || c1 || mark) {
            out[o++] = '?';
            i += mark ? 3 : c1 ? 2 : 1;
            continue;
        }
        out[o++] = (char)u[i++];
    }
    out[o] = '\0';
    return o;
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
    w_put(w, y, x, buf, w_bytes_for_cols(buf, maxw), ui_attr(f, r));
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

void w_row_begin(struct w_row *r, WINDOW *w, int y, int x, const struct ui_frame *f) {
    r->w = w;
    r->f = f;
    r->y = y;
    r->x = r->run_x = x;
    r->cols = getmaxx(w);
    r->role = THEME_TEXT;
    r->utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    r->len = 0;
}

void w_row_end(struct w_row *r) {
    if (r->len > 0)
        w_put(r->w, r->y, r->run_x, r->buf, r->len, ui_attr(r->f, r->role));
    r->len = 0;
}

void w_row_put(struct w_row *r, enum theme_role role, const char *glyph) {
    int n = (int)strlen(glyph);
    if (r->x < 0 || r->x >= r->cols) { /* off the window: a cell there is dropped */
        w_row_end(r);
        r->x++;
        return;
    }
    if (!r->utf8 && (unsigned char)glyph[0] >= 0x80) { /* a cell of its own, at its column */
        w_row_end(r);
        w_put(r->w, r->y, r->x++, glyph, n, ui_attr(r->f, role));
        return;
    }
    if (r->len > 0 && (role != r->role || r->len + n > W_ROW_BYTES))
        w_row_end(r);
    if (r->len == 0) {
        r->run_x = r->x;
        r->role = role;
    }
    memcpy(r->buf + r->len, glyph, (size_t)n);
    r->len += n;
    r->x++;
}

void w_row_putc(struct w_row *r, enum theme_role role, char c) {
    char glyph[2] = {c, '\0'};
    w_row_put(r, role, glyph);
}

void w_bar(WINDOW *w, int y, int x, int width, double frac, enum theme_role fill,
           const struct ui_frame *f) {
    if (width <= 0)
        return;
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    int full = (int)(frac * width + 0.5);
    struct w_row row;
    w_row_begin(&row, w, y, x, f);
    for (int k = 0; k < width; k++) {
        bool on = k < full;
        if (f->utf8)
            w_row_put(&row, on ? fill : THEME_DIM, on ? "\u2588" : "\u2591");
        else
            w_row_putc(&row, on ? fill : THEME_DIM, on ? '#' : '.');
    }
    w_row_end(&row);
}

void w_spark(WINDOW *w, int y, int x, int width, const double *v, size_t n, double min_span,
             enum theme_role r, const struct ui_frame *f) {
    if (width <= 0 || n == 0)
        return;
    size_t first = n > (size_t)width ? n - (size_t)width : 0;
    double lo, hi;
    chart_scale(v + first, n - first, min_span, -INFINITY, &lo, &hi);
    struct w_row row;
    w_row_begin(&row, w, y, x + width - (int)(n - first), f);
    for (size_t k = first; k < n; k++) {
        int level = hi > lo ? (int)((v[k] - lo) / (hi - lo) * 7.0 + 0.5) : 3;
        w_row_put(&row, r, w_level_glyph(level, f->utf8));
    }
    w_row_end(&row);
}

void w_chart(WINDOW *w, int y, int x, int rows, int width, const struct w_chart_data *d,
             const struct ui_frame *f) {
    if (width <= 0 || rows <= 0)
        return;
    size_t first = d->n > (size_t)width ? d->n - (size_t)width : 0;
    int x0 = x + width - (int)(d->n - first);
    for (int row = 0; row < rows; row++) { /* row 0 at the bottom */
        struct w_row wr;
        w_row_begin(&wr, w, y + rows - 1 - row, x0, f);
        for (size_t k = first; k < d->n; k++) {
            int e = chart_eighths(d->v[k], d->lo, d->hi, rows, row);
            int o = d->over ? chart_eighths(d->over[k], d->lo, d->hi, rows, row) : 0;
            enum theme_role role = (long)k == d->mark ? d->mark_r : d->r;
            if (e > 0)
                w_row_put(&wr, role, f->utf8 ? w_level_glyph(e - 1, true) : e >= 4 ? "#" : ".");
            else if (o > 0)
                w_row_put(&wr, d->over_r, f->utf8 ? (o >= 4 ? "\u2592" : "\u2591") : ":");
            else
                w_row_put(&wr, THEME_DIM, row == 0 ? (f->utf8 ? "\u00b7" : ".") : " ");
        }
        w_row_end(&wr);
    }
}
