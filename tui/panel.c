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
