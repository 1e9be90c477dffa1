/* Colour themes: named roles (an X-macro list) mapped to colours, from JSON files read with
 * json-c, over a compiled-in default that always exists. */
#ifndef RINGSIDE_TUI_THEME_H
#define RINGSIDE_TUI_THEME_H

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
    X(SEG_FREE, "segment.free")

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
 * ./themes/NAME.json and then the installed RS_DATADIR/themes/NAME.json. 0 with path set, or
 * -ENOENT with err listing where it looked. */
int theme_resolve(const char *arg, char *path, size_t pathlen, char *err, size_t errlen);

#endif
