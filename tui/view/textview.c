/* The overlays' scroll position and its mark. */
#include "tui/view/textview.h"

#include <stdbool.h>
#include <stdio.h>

void textview_clamp(struct textview *v) {
    int rows = v->rows > 0 ? v->rows : 0;
    int last = v->total - rows > 0 ? v->total - rows : 0;
    v->top = v->top > last ? last : v->top < 0 ? 0 : v->top;
}

void textview_move(struct textview *v, enum textview_move m) {
    int page = v->rows > 1 ? v->rows - 1 : 1;
    switch (m) {
    case TEXTVIEW_UP:
        v->top--;
        break;
    case TEXTVIEW_DOWN:
        v->top++;
        break;
    case TEXTVIEW_PAGE_UP:
        v->top -= page;
        break;
    case TEXTVIEW_PAGE_DOWN:
        v->top += page;
        break;
    case TEXTVIEW_HOME:
        v->top = 0;
        break;
    case TEXTVIEW_END:
        v->top = v->total;
        break;
    }
    textview_clamp(v);
}

int textview_mark(const struct textview *v, char *buf, size_t n) {
    struct textview c = *v;
    textview_clamp(&c);
    if (c.rows <= 0 || c.total <= c.rows)
        return snprintf(buf, n, "%s", "");
    int last = c.top + c.rows;
    bool above = c.top > 0, below = last < c.total;
    return snprintf(buf, n, "%d-%d/%d more %s", c.top + 1, last, c.total,
                    above && below ? "above and below"
                    : above        ? "above"
                                   : "below");
}
