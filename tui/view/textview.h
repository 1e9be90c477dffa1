/* A scrolled view of screen lines, as the overlays show them: the first line shown, what the
 * scroll moves do to it and the position mark ("12-20/34") for the frame; no curses, so the
 * rules test alone. */
#ifndef RINGSIDE_TUI_VIEW_TEXTVIEW_H
#define RINGSIDE_TUI_VIEW_TEXTVIEW_H

#include <stddef.h>

struct textview {
    int top;   /* the first screen line shown (0-based) */
    int rows;  /* screen lines shown at once: set by the drawer */
    int total; /* screen lines in all: set by the drawer */
};

enum textview_move {
    TEXTVIEW_UP,        /* one line */
    TEXTVIEW_DOWN,      /* one line */
    TEXTVIEW_PAGE_UP,   /* rows - 1 lines: the top line stays in view as the bottom one */
    TEXTVIEW_PAGE_DOWN, /* rows - 1 lines */
    TEXTVIEW_HOME,      /* the first line */
    TEXTVIEW_END,       /* the last page: the last line at the bottom */
};

/* Keep v->top where a whole view fits: 0 .. total - rows (0 when everything fits). */
void textview_clamp(struct textview *v);

/* Move v as m says, clamped. */
void textview_move(struct textview *v, enum textview_move m);

/* Where v is, for its frame: "1-17/34 more below", "9-25/34 more above and below", "18-34/34
 * more above"; "" when every line is in view. Returns the length written, as snprintf. */
int textview_mark(const struct textview *v, char *buf, size_t n);

#endif
