/* The dashboard's keys in one table: each row names its keys, the action they run, the help
 * screen's line, the footer's hint and the sources it applies to. The help overlay and the
 * footer are made from the table, and the app runs a key by looking its row up: a new key is
 * a row here and a handler for its action in the app. Nothing here draws (the key codes are
 * curses' numbers, nothing more), so the table and what is made from it test without a
 * terminal. */
#ifndef RINGSIDE_TUI_DASHBOARD_KEYMAP_H
#define RINGSIDE_TUI_DASHBOARD_KEYMAP_H

#include "backend/run/source.h"
#include "tui/view/textview.h"

#include <stdbool.h>
#include <stddef.h>

/* Where a row applies, by the source's ops name. */
#define KEYMAP_LIVE   (1u << 0) /* "live": the training loop in this process */
#define KEYMAP_REPLAY (1u << 1) /* "replay": a recording played back */
#define KEYMAP_ATTACH (1u << 2) /* "attach": a remote agent's run */
#define KEYMAP_ALL    (KEYMAP_LIVE | KEYMAP_REPLAY | KEYMAP_ATTACH)

#define KEYMAP_KEYS       10  /* key codes a row may have */
#define KEYMAP_ROWS_MAX   32  /* rows the table may have (a check in keymap.c holds it) */
#define KEYMAP_HELP_BYTES 128 /* a help line, with its NUL */
#define KEYMAP_LABEL_COLS 10  /* the help line's column for the keys */

/* What a key does. The app has one handler per action. */
#define KEYMAP_ACTIONS(X)                                                                          \
    X(QUIT, "quit")                                                                                \
    X(PAUSE, "pause")                                                                              \
    X(CHUNK_UP, "chunk_up")                                                                        \
    X(CHUNK_DOWN, "chunk_down")                                                                    \
    X(CLEANUP, "cleanup")                                                                          \
    X(PROBE, "probe")                                                                              \
    X(ZOOM_OUT, "zoom_out")                                                                        \
    X(ZOOM_IN, "zoom_in")                                                                          \
    X(FOCUS_NEXT, "focus_next")                                                                    \
    X(FOCUS_PREV, "focus_prev")                                                                    \
    X(PANEL_NAV, "panel_nav")                                                                      \
    X(PANEL_DETAILS, "panel_details")                                                              \
    X(KERNEL, "kernel")                                                                            \
    X(GPU_OVERLAY, "gpu_overlay")                                                                  \
    X(DOCTOR, "doctor")                                                                            \
    X(FREEZE, "freeze")                                                                            \
    X(THEME, "theme")                                                                              \
    X(SELECT_GPU, "select_gpu")                                                                    \
    X(MOUSE, "mouse")                                                                              \
    X(RESIZE, "resize")                                                                            \
    X(HELP, "help")

enum keymap_action {
#define X(id, name) KEYMAP_##id,
    KEYMAP_ACTIONS(X)
#undef X
        KEYMAP_ACTION_COUNT
};

struct keymap_row {
    int keys[KEYMAP_KEYS]; /* key codes (characters or curses KEY_*), 0 after the last */
    enum keymap_action act;
    unsigned where;    /* KEYMAP_LIVE | KEYMAP_REPLAY | KEYMAP_ATTACH */
    const char *label; /* the keys as the help screen writes them: "+ -", "Tab S-Tab" */
    /* The help screen's line; NULL when the row above's covers it (the second of a pair,
     * such as '-' after '+') or for what is no key a user presses (a resize). */
    const char *help;
    const char *help_replay; /* ... in a replay, where it says something else (or NULL) */
    const char *hint_keys;   /* the footer's hint: "+/-" (NULL: not in the footer) */
    const char *hint;        /* "chunk" */
    const char *hint_replay; /* ... in a replay, where it says something else: "speed" */
};

/* A footer hint. */
struct keymap_hint {
    const char *keys, *label; /* "+/-", "chunk" */
    bool loop;                /* acts on the loop: greyed out where run.control_off says why */
};

/* The table, and its length. */
extern const struct keymap_row keymap_table[];
extern const size_t keymap_rows;

/* The action's name ("chunk_up"), or "?". */
const char *keymap_action_name(unsigned act);

/* KEYMAP_LIVE, KEYMAP_REPLAY or KEYMAP_ATTACH for a source's ops name ("live", "replay",
 * "attach"); an unknown one is taken as live. */
unsigned keymap_where(const char *source_name);

/* The row of key ch where (a KEYMAP_* bit), or NULL when no row applying there has it. */
const struct keymap_row *keymap_find(int ch, unsigned where);

/* The source action an action asks for (p + - c m); false for the app's own actions. */
bool keymap_source_action(enum keymap_action act, enum source_action *out);

/* The help screen's key lines for where, in table order: the label in KEYMAP_LABEL_COLS
 * columns (two spaces after a longer one), then the help. Up to max lines; returns how many. */
size_t keymap_help_lines(unsigned where, char (*lines)[KEYMAP_HELP_BYTES], size_t max);

/* The scroll move of key ch in an overlay (the help, the GPU overlay, an event's details):
 * Up, Down, PgUp, PgDn, Home and End; false for any other key. */
bool keymap_scroll(int ch, enum textview_move *out);

/* The footer's hints for where, in table order; up to max, returns how many. */
size_t keymap_hints(unsigned where, struct keymap_hint *out, size_t max);

/* The footer's hints as one line: " q quit  p pause  ..." (cut to n - 1 bytes). Returns the
 * length it would have, as snprintf. */
int keymap_footer(unsigned where, char *buf, size_t n);

#endif
