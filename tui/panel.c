/* Navigation shared by the scrollable panels. */
#include "tui/panel.h"

bool panel_nav_key(struct panel *p, int ch, int n, int visible) {
    int page = visible > 1 ? visible - 1 : 1;
    int sel = p->selected;
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
    p->selected = sel >= n ? n - 1 : sel;
    if (p->selected < 0)
        p->selected = 0;
    if (p->selected < p->scroll)
        p->scroll = p->selected;
    if (visible > 0 && p->selected >= p->scroll + visible)
        p->scroll = p->selected - visible + 1;
    return true;
}

void panel_list_follow(struct panel *p, uint64_t added, int n) {
    uint64_t delta = added - p->list_added;
    p->list_added = added;
    if (delta == 0 || (p->selected == 0 && p->scroll == 0))
        return;
    int last = n > 0 ? n - 1 : 0;
    uint64_t sel = (uint64_t)p->selected + delta, top = (uint64_t)p->scroll + delta;
    p->selected = sel > (uint64_t)last ? last : (int)sel;
    p->scroll = top > (uint64_t)p->selected ? p->selected : (int)top;
}
