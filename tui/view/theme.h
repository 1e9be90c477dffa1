/* Colour themes: named roles (an X-macro list) mapped to colours, from JSON files read with
 * json-c, over a compiled-in default that always exists. */
#ifndef RINGSIDE_TUI_VIEW_THEME_H
#define RINGSIDE_TUI_VIEW_THEME_H

#include "backend/core/ev.h"

#include <stdbool.h>
#include <stddef.h>

/* Roles and their JSON keys. Phase roles follow, one per training phase ("phase.vpoc"). */
#define THEME_ROLES(X)                                                                             \
    X(TEXT, "text")                                                                                \
    X(TITLE, "title")                                                                              \
    X(DIM, "dim")                                                                                  \
    X(OK, "ok")                                                                                    \
    X(WARN, "warn")                                                                                \
    X(ERROR, "error")                                                                              \
    X(FOOTER, "footer")                                                                            \
    X(SEG_USED, "segment.used")                                                                    \
    X(SEG_FREE, "segment.free")                                                                    \
    X(BORDER, "border")                                                                            \
    X(ACCENT, "accent")                                                                            \
    X(GAUGE, "gauge")                                                                              \
    X(SEG_LARGEST, "segment.largest")

enum theme_role {
#define X(id, key) THEME_##id,
    THEME_ROLES(X)
#undef X
        THEME_PHASE0, /* THEME_PHASE0 + enum ev_phase_id */
    THEME_ROLE_COUNT = THEME_PHASE0 + PHASE_COUNT
};

#define THEME_DEFAULT_COLOR (-1) /* the terminal's own foreground/background */

struct theme_color {
    short fg, bg; /* 0..255, or THEME_DEFAULT_COLOR */
    bool bold;
};

struct theme {
    char name[64];
    struct theme_color c[THEME_ROLE_COUNT];
};

/* JSON key of a role ("segment.used", "phase.forward"). */
const char *theme_role_key(enum theme_role r);

/* The compiled-in default (8 basic colours, so it works on any colour terminal). */
void theme_default(struct theme *t);

/* Load a theme file over the default: {"name": "...", "colors": {"<role>": {"fg": C, "bg": C,
 * "bold": B}}} where C is a colour name (default, black, red, green, yellow, blue, magenta,
 * cyan, white, bright-*) or 0..255. Roles left out keep the default. 0, or -EINVAL with err
 * naming the file and the key (or json-c's parse error), -errno when unreadable. */
int theme_load_json(const char *path, struct theme *out, char *err, size_t errlen);

/* A theme argument: a path (contains '/' or ends in .json) or a NAME looked up as
 * ./themes/NAME.json, then $XDG_CONFIG_HOME/ringside/themes/NAME.json (XDG_CONFIG_HOME
 * defaults to $HOME/.config), then the installed RS_DATADIR/themes/NAME.json. 0 with path set,
 * or -ENOENT with err listing where it looked. */
int theme_resolve(const char *arg, char *path, size_t pathlen, char *err, size_t errlen);

/* theme_resolve then theme_load_json: the theme named by --theme or picked with `t`. ""
 * gives the compiled-in default. On error *out is untouched. */
int theme_open(const char *arg, struct theme *out, char *err, size_t errlen);

#define THEME_NAME_MAX 64

/* The theme names found in the directories theme_resolve searches (NAME for each NAME.json),
 * sorted and without duplicates; at most max (the first ones in order). Returns the count. */
int theme_list(char names[][THEME_NAME_MAX], int max);

/* The name after current in theme_list's order, wrapping around (for the `t` key). current may
 * be a name, a path (its file name without .json counts) or "" (= "default"); one that is not
 * listed gives the first name. 0, or -ENOENT when no theme is found. */
int theme_next(const char *current, char *out, size_t outlen);

/* A 0..255 xterm colour on a terminal with `colors` colours: unchanged with 256 or more, or
 * when c < colors; otherwise the nearest of the first 16 (colors >= 16) or 8, ties to the lower
 * number. Colours are xterm's default RGB (0-15 system colours, 16-231 the 6x6x6 cube with
 * levels 0, 95, 135, 175, 215, 255, 232-255 greys 8 + 10k); the distance is the squared
 * Euclidean one over luma (R+G+B)/3 and chroma R-G and B-(R+G)/2 (plain RGB distance would
 * send a mid grey such as 244 to yellow, cyan or magenta; this one keeps greys grey). -1 (the
 * terminal's default) stays -1; with fewer than 8 colours every colour becomes -1. */
short theme_color_fold(short c, int colors);

#endif
