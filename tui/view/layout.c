/* Rectangles for the header, the footer and the panels, from the terminal size. */
#include "tui/view/layout.h"

#include <string.h>

#define LAYOUT_MAX 16

/* Heights for the panels of one column: every shown one gets its min, the focused one is
 * kept, panels are dropped from the end until the mins fit, then the rows left go to pref_h
 * first (in order), then in even shares to the grow panels, else to a "take what is left"
 * panel, else to the last shown. Returns the panels hidden. */
static int layout_column(const struct layout_item *it, const int *idx, int n, int focus, int rows,
                         int *h) {
    bool shown[LAYOUT_MAX];
    int need = 0, hidden = 0, wanted = 0;
    for (int k = 0; k < n; k++) { /* what the others want before an extra panel shows */
        const struct layout_item *i = &it[idx[k]];
        wanted += i->extra ? 0 : i->pref_h > i->min_h ? i->pref_h : i->min_h;
    }
    for (int k = 0; k < n; k++) {
        const struct layout_item *i = &it[idx[k]];
        shown[k] = !i->extra || idx[k] == focus || wanted + i->min_h <= rows;
        need += shown[k] ? i->min_h : 0;
        hidden += !shown[k];
    }
    for (int k = n - 1; k >= 0 && need > rows; k--) {
        if (idx[k] == focus || !shown[k])
            continue;
        shown[k] = false;
        need -= it[idx[k]].min_h;
        hidden++;
    }
    int left = rows - need;
    for (int k = 0; k < n; k++)
        h[k] = shown[k] ? it[idx[k]].min_h : 0;
    for (int k = 0; k < n && left > 0; k++) { /* grow towards pref_h, in order */
        int want = shown[k] && it[idx[k]].pref_h > h[k] ? it[idx[k]].pref_h - h[k] : 0;
        int give = want < left ? want : left;
        h[k] += give;
        left -= give;
    }
    int growers = 0;
    for (int k = 0; k < n; k++)
        growers += shown[k] && it[idx[k]].grow;
    for (int k = 0, g = 0; k < n && growers > 0 && left > 0; k++)
        if (shown[k] && it[idx[k]].grow) { /* an even share, the first ones one more */
            int share = (left + (growers - g) - 1) / (growers - g);
            h[k] += share;
            left -= share;
            g++;
        }
    int greedy = -1;
    for (int k = 0; k < n; k++)
        if (shown[k] && it[idx[k]].pref_h == 0)
            greedy = k;
    if (greedy < 0) /* nobody takes what is left: the last shown panel does */
        for (int k = 0; k < n; k++)
            greedy = shown[k] ? k : greedy;
    if (greedy >= 0 && left > 0)
        h[greedy] += left;
    return hidden;
}

static int layout_place(const struct layout_item *items, const int *idx, int n, int focus,
                        struct ui_rect area, struct ui_rect *rects) {
    int h[LAYOUT_MAX];
    int hidden = layout_column(items, idx, n, focus, area.h, h);
    int y = area.y;
    for (int k = 0; k < n; k++) {
        rects[idx[k]] = (struct ui_rect){y, area.x, h[k], h[k] ? area.w : 0};
        y += h[k];
    }
    return hidden;
}

void layout_compute(int rows, int cols, const struct layout_item *items, int n, int focus,
                    struct layout_out *out, struct ui_rect *rects) {
    memset(out, 0, sizeof(*out));
    n = n > LAYOUT_MAX ? LAYOUT_MAX : n;
    memset(rects, 0, (size_t)n * sizeof(*rects));
    if (rows < LAYOUT_MIN_ROWS || cols < LAYOUT_MIN_COLS) {
        out->too_small = true;
        return;
    }
    out->header = (struct ui_rect){0, 0, LAYOUT_HEADER_ROWS, cols};
    out->footer = (struct ui_rect){rows - LAYOUT_FOOTER_ROWS, 0, LAYOUT_FOOTER_ROWS, cols};
    struct ui_rect body = {LAYOUT_HEADER_ROWS, 0, rows - LAYOUT_HEADER_ROWS - LAYOUT_FOOTER_ROWS,
                           cols};
    int idx[3][LAYOUT_MAX], cnt[3] = {0, 0, 0};
    out->wide = cols >= LAYOUT_WIDE_COLS;
    for (int k = 0; k < n; k++) {
        int c = out->wide ? (items[k].column < 0 || items[k].column > 2 ? 2 : items[k].column) : 0;
        idx[c][cnt[c]++] = k;
    }
    if (!out->wide) {
        out->hidden = layout_place(items, idx[0], cnt[0], focus, body, rects);
        return;
    }
    /* two columns above, full width below: the bottom gets what its panels want, from their
     * mins up to a third of the body (or all the rest where one takes what is left) */
    int bottom_min = 0, bottom_want = 0;
    for (int k = 0; k < cnt[2]; k++) {
        const struct layout_item *it = &items[idx[2][k]];
        bottom_min += it->min_h;
        bottom_want += it->pref_h == 0 ? body.h : it->pref_h > it->min_h ? it->pref_h : it->min_h;
    }
    int bottom_max = bottom_min + (body.h - bottom_min) / 3;
    int bottom = cnt[2] ? (bottom_want < bottom_max ? bottom_want : bottom_max) : 0;
    int half = cols / 2;
    struct ui_rect left = {body.y, 0, body.h - bottom, half};
    struct ui_rect right = {body.y, half, body.h - bottom, cols - half};
    struct ui_rect below = {body.y + body.h - bottom, 0, bottom, cols};
    out->hidden = layout_place(items, idx[0], cnt[0], focus, left, rects) +
                  layout_place(items, idx[1], cnt[1], focus, right, rects) +
                  layout_place(items, idx[2], cnt[2], focus, below, rects);
}
