/* The dashboard's key table, and the help lines and footer hints made from it. */
#include "tui/dashboard/keymap.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

/* In table order: the help screen's order, and the footer's. A row that acts on the loop is
 * one keymap_source_action maps. */
const struct keymap_row keymap_table[] = {
    {.keys = {'q', 'Q'},
     .act = KEYMAP_QUIT,
     .where = KEYMAP_ALL,
     .label = "q",
     .help = "quit: finish the step, checkpoint, exit; q again leaves now",
     .help_replay = "leave the replay",
     .hint_keys = "q",
     .hint = "quit"},
    {.keys = {'p'},
     .act = KEYMAP_PAUSE,
     .where = KEYMAP_ALL,
     .label = "p",
     .help = "pause / resume training (attach: needs control)",
     .help_replay = "pause / resume the playback",
     .hint_keys = "p",
     .hint = "pause"},
    {.keys = {'+', '='},
     .act = KEYMAP_CHUNK_UP,
     .where = KEYMAP_ALL,
     .label = "+ -",
     .help = "VPOC chunk: 125 250 500 1000 2000 3500 whole (attach: needs control)",
     .help_replay = "playback speed x2 / /2",
     .hint_keys = "+/-",
     .hint = "chunk",
     .hint_replay = "speed"},
    {.keys = {'-'}, .act = KEYMAP_CHUNK_DOWN, .where = KEYMAP_ALL, .label = "-"},
    {.keys = {'c'},
     .act = KEYMAP_CLEANUP,
     .where = KEYMAP_LIVE | KEYMAP_ATTACH,
     .label = "c",
     .help = "safe cleanup: synchronize, release cached blocks, synchronize",
     .hint_keys = "c",
     .hint = "cleanup"},
    {.keys = {'m'},
     .act = KEYMAP_PROBE,
     .where = KEYMAP_LIVE | KEYMAP_ATTACH,
     .label = "m",
     .help = "memory probe: the largest block the GPU could allocate now"},
    {.keys = {'<'},
     .act = KEYMAP_ZOOM_OUT,
     .where = KEYMAP_ALL,
     .label = "< >",
     .help = "timeline span, 5 s to 30 min",
     .hint_keys = "</>",
     .hint = "zoom"},
    {.keys = {'>'}, .act = KEYMAP_ZOOM_IN, .where = KEYMAP_ALL, .label = ">"},
    {.keys = {'\t'},
     .act = KEYMAP_FOCUS_NEXT,
     .where = KEYMAP_ALL,
     .label = "Tab S-Tab",
     .help = "focus the next / previous panel (hidden ones come into view)",
     .hint_keys = "Tab",
     .hint = "focus"},
    {.keys = {KEY_BTAB}, .act = KEYMAP_FOCUS_PREV, .where = KEYMAP_ALL, .label = "S-Tab"},
    {.keys = {KEY_UP, KEY_DOWN, KEY_LEFT, KEY_RIGHT, KEY_PPAGE, KEY_NPAGE, KEY_HOME, KEY_END},
     .act = KEYMAP_PANEL_NAV,
     .where = KEYMAP_ALL,
     .label = "arrows PgUp PgDn Home End",
     .help = "scroll the focused panel (events: Home follows the newest)"},
    {.keys = {'\n', '\r', KEY_ENTER, 27},
     .act = KEYMAP_PANEL_DETAILS,
     .where = KEYMAP_ALL,
     .label = "Enter Esc",
     .help = "details of the selected event (Esc or Enter: back); on the GPU panel the overlay",
     .hint_keys = "Enter",
     .hint = "details"},
    {.keys = {'k'},
     .act = KEYMAP_KERNEL,
     .where = KEYMAP_ALL,
     .label = "k",
     .help = "the latest kernel-log failure: its fields and what helps"},
    {.keys = {'g'},
     .act = KEYMAP_GPU_OVERLAY,
     .where = KEYMAP_ALL,
     .label = "g",
     .help = "GPU overlay: every field with its source, VRAM reconciliation, providers"},
    {.keys = {'D'},
     .act = KEYMAP_DOCTOR,
     .where = KEYMAP_ALL,
     .label = "D",
     .help = "doctor: the environment checks in the background (g shows them)"},
    {.keys = {'f'},
     .act = KEYMAP_FREEZE,
     .where = KEYMAP_ALL,
     .label = "f",
     .help = "freeze the display (training continues)",
     .help_replay = "freeze the display (the playback continues)",
     .hint_keys = "f",
     .hint = "freeze"},
    {.keys = {'t'},
     .act = KEYMAP_THEME,
     .where = KEYMAP_ALL,
     .label = "t",
     .help = "next colour theme",
     .hint_keys = "t",
     .hint = "theme"},
    {.keys = {'1', '2', '3', '4', '5', '6', '7', '8', '9'},
     .act = KEYMAP_SELECT_GPU,
     .where = KEYMAP_ALL,
     .label = "1-9",
     .help = "select training device N: its memory, phase rows and sync in flight"},
    {.keys = {KEY_MOUSE},
     .act = KEYMAP_MOUSE,
     .where = KEYMAP_ALL,
     .label = "mouse",
     .help = "a click focuses a panel, the wheel scrolls it"},
    {.keys = {KEY_RESIZE}, .act = KEYMAP_RESIZE, .where = KEYMAP_ALL, .label = ""},
    {.keys = {'?', 'h'},
     .act = KEYMAP_HELP,
     .where = KEYMAP_ALL,
     .label = "? h",
     .help = "this help: Up/Down PgUp/PgDn Home/End scroll it, any other key closes it",
     .hint_keys = "?",
     .hint = "help"},
};

const size_t keymap_rows = sizeof(keymap_table) / sizeof(keymap_table[0]);
_Static_assert(sizeof(keymap_table) / sizeof(keymap_table[0]) <= KEYMAP_ROWS_MAX,
               "KEYMAP_ROWS_MAX is what callers size their arrays by");

const char *keymap_action_name(unsigned act) {
    static const char *const names[] = {
#define X(id, name) name,
        KEYMAP_ACTIONS(X)
#undef X
    };
    return act < KEYMAP_ACTION_COUNT ? names[act] : "?";
}

unsigned keymap_where(const char *source_name) {
    if (source_name && strcmp(source_name, "replay") == 0)
        return KEYMAP_REPLAY;
    if (source_name && strcmp(source_name, "attach") == 0)
        return KEYMAP_ATTACH;
    return KEYMAP_LIVE;
}

const struct keymap_row *keymap_find(int ch, unsigned where) {
    for (size_t r = 0; r < keymap_rows; r++) {
        const struct keymap_row *row = &keymap_table[r];
        for (int k = 0; (row->where & where) && k < KEYMAP_KEYS && row->keys[k]; k++)
            if (row->keys[k] == ch)
                return row;
    }
    return NULL;
}

bool keymap_source_action(enum keymap_action act, enum source_action *out) {
    switch (act) {
    case KEYMAP_PAUSE:
        *out = SOURCE_PAUSE_TOGGLE;
        return true;
    case KEYMAP_CHUNK_UP:
        *out = SOURCE_CHUNK_UP;
        return true;
    case KEYMAP_CHUNK_DOWN:
        *out = SOURCE_CHUNK_DOWN;
        return true;
    case KEYMAP_CLEANUP:
        *out = SOURCE_CLEANUP;
        return true;
    case KEYMAP_PROBE:
        *out = SOURCE_PROBE;
        return true;
    default:
        return false;
    }
}

/* The row's help line where, or NULL. */
static const char *keymap_help_of(const struct keymap_row *row, unsigned where) {
    if (!(row->where & where) || !row->help)
        return NULL;
    return where == KEYMAP_REPLAY && row->help_replay ? row->help_replay : row->help;
}

size_t keymap_help_lines(unsigned where, char (*lines)[KEYMAP_HELP_BYTES], size_t max) {
    size_t n = 0;
    for (size_t r = 0; r < keymap_rows && n < max; r++) {
        const char *help = keymap_help_of(&keymap_table[r], where);
        const char *label = keymap_table[r].label;
        if (help)
            snprintf(lines[n++], KEYMAP_HELP_BYTES, "%-*s%s%s", KEYMAP_LABEL_COLS, label,
                     strlen(label) < KEYMAP_LABEL_COLS ? " " : "  ", help);
    }
    return n;
}

/* The overlays' scroll keys, one move each. */
static const struct {
    int key;
    enum textview_move move;
} keymap_scroll_keys[] = {
    {KEY_UP, TEXTVIEW_UP},           {KEY_DOWN, TEXTVIEW_DOWN}, {KEY_PPAGE, TEXTVIEW_PAGE_UP},
    {KEY_NPAGE, TEXTVIEW_PAGE_DOWN}, {KEY_HOME, TEXTVIEW_HOME}, {KEY_END, TEXTVIEW_END},
};

bool keymap_scroll(int ch, enum textview_move *out) {
    for (size_t k = 0; k < sizeof(keymap_scroll_keys) / sizeof(keymap_scroll_keys[0]); k++)
        if (keymap_scroll_keys[k].key == ch) {
            *out = keymap_scroll_keys[k].move;
            return true;
        }
    return false;
}

size_t keymap_hints(unsigned where, struct keymap_hint *out, size_t max) {
    size_t n = 0;
    for (size_t r = 0; r < keymap_rows && n < max; r++) {
        const struct keymap_row *row = &keymap_table[r];
        enum source_action act;
        if (!(row->where & where) || !row->hint_keys)
            continue;
        out[n++] = (struct keymap_hint){
            .keys = row->hint_keys,
            .label = where == KEYMAP_REPLAY && row->hint_replay ? row->hint_replay : row->hint,
            .loop = where != KEYMAP_REPLAY && keymap_source_action(row->act, &act)};
    }
    return n;
}

int keymap_footer(unsigned where, char *buf, size_t n) {
    struct keymap_hint hints[KEYMAP_ROWS_MAX];
    size_t k = keymap_hints(where, hints, sizeof(hints) / sizeof(hints[0]));
    int len = snprintf(buf, n, " ");
    for (size_t i = 0; i < k; i++) {
        size_t at = (size_t)len < n ? (size_t)len : n;
        len += snprintf(buf + at, n - at, "%s%s %s", i ? "  " : "", hints[i].keys, hints[i].label);
    }
    return len;
}
