/* The panels' life cycle, and the navigation shared by the scrollable ones. */
#include "tui/dashboard/panel.h"

int panel_init(struct panel *p, const struct panel_ops *ops) {
    *p = (struct panel){.ops = ops};
    return ops->create ? ops->create(p) : 0;
}

void panel_fini(struct panel *p) {
    if (p->ops && p->ops->destroy && p->priv)
        p->ops->destroy(p);
    p->priv = NULL;
}

bool panel_nav_key(struct panel_list *l, int ch, int n, int visible) {
    int page = visible > 1 ? visible - 1 : 1;
    int sel = l->selected;
    switch (ch) {
    case KEY_UP:
        sel--;
        break;
    case KEY_DOWN:
        sel++;
        break;
    case KEY_PPAGE:
        sel -= page;
        break;
    case KEY_NPAGE:
        sel += page;
        break;
    case KEY_HOME:
        sel = 0;
        break;
    case KEY_END:
        sel = n - 1;
        break;
    default:
        return false;
    }
    l->selected = sel >= n ? n - 1 : sel;
    if (l->selected < 0)
        l->selected = 0;
    if (l->selected < l->scroll)
        l->scroll = l->selected;
    if (visible > 0 && l->selected >= l->scroll + visible)
        l->scroll = l->selected - visible + 1;
    return true;
}

void panel_list_follow(struct panel_list *l, uint64_t added, int n) {
    uint64_t delta = added - l->added;
    l->added = added;
    if (delta == 0 || (l->selected == 0 && l->scroll == 0))
        return;
    int last = n > 0 ? n - 1 : 0;
    uint64_t sel = (uint64_t)l->selected + delta, top = (uint64_t)l->scroll + delta;
    l->selected = sel > (uint64_t)last ? last : (int)sel;
    l->scroll = top > (uint64_t)l->selected ? l->selected : (int)top;
}

struct layout_item panel_layout_item(const struct panel *p, const struct ui_frame *f, int rows,
                                     int cols) {
    const struct panel_ops *ops = p->ops;
    int min = rows >= PANEL_TALL_ROWS && ops->min_h_tall ? ops->min_h_tall : ops->min_h;
    int w = cols >= LAYOUT_WIDE_COLS && ops->column != 2 ? cols / 2 : cols;
    int pref = ops->rows && f && f->snap ? ops->rows(p, f, w) : ops->pref_h;
    return (struct layout_item){min, pref, ops->column, ops->grow, ops->extra};
}
