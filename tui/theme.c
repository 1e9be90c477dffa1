/* Theme roles, the compiled-in default and the JSON loader. */
#include "tui/theme.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const theme_keys[THEME_PHASE0] = {
#define X(id, key) key,
    THEME_ROLES(X)
#undef X
};

const char *theme_role_key(enum theme_role r) {
    static char phase_keys[PHASE_COUNT][32];
    if (r < THEME_PHASE0)
        return theme_keys[r];
    if (r >= THEME_ROLE_COUNT)
        return "?";
    unsigned p = (unsigned)(r - THEME_PHASE0);
    if (!phase_keys[p][0])
        snprintf(phase_keys[p], sizeof(phase_keys[p]), "phase.%s", ev_phase_name(p));
    return phase_keys[p];
}

void theme_default(struct theme *t) {
    /* 0 black, 1 red, 2 green, 3 yellow, 4 blue, 5 magenta, 6 cyan, 7 white */
    static const short phase_bg[PHASE_COUNT] = {7, 5, 6, 4, 3, 2, 1, 5, 7, 6, 3, 4};
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "default");
    for (int r = 0; r < THEME_ROLE_COUNT; r++)
        t->c[r] = (struct theme_color){THEME_DEFAULT_COLOR, THEME_DEFAULT_COLOR, false};
    t->c[THEME_TITLE] = (struct theme_color){6, THEME_DEFAULT_COLOR, true};
    t->c[THEME_DIM].fg = 4;
    t->c[THEME_OK] = (struct theme_color){2, THEME_DEFAULT_COLOR, true};
    t->c[THEME_WARN] = (struct theme_color){3, THEME_DEFAULT_COLOR, true};
    t->c[THEME_ERROR] = (struct theme_color){1, THEME_DEFAULT_COLOR, true};
    t->c[THEME_FOOTER] = (struct theme_color){0, 6, false};
    t->c[THEME_SEG_USED] = (struct theme_color){0, 2, false};
    t->c[THEME_SEG_FREE] = (struct theme_color){0, 7, false};
    for (int p = 0; p < PHASE_COUNT; p++)
        t->c[THEME_PHASE0 + p] = (struct theme_color){0, phase_bg[p], false};
}

/* A colour name or number; -1 when unknown. */
static int theme_parse_color(json_object *v) {
    static const char *const names[] = {"black", "red",     "green", "yellow",
                                        "blue",  "magenta", "cyan",  "white"};
    if (json_object_is_type(v, json_type_int)) {
        int n = json_object_get_int(v);
        return n >= 0 && n <= 255 ? n : -2;
    }
    if (!json_object_is_type(v, json_type_string))
        return -2;
    const char *s = json_object_get_string(v);
    if (strcmp(s, "default") == 0)
        return THEME_DEFAULT_COLOR;
    bool bright = strncmp(s, "bright-", 7) == 0;
    for (int i = 0; i < 8; i++)
        if (strcmp(bright ? s + 7 : s, names[i]) == 0)
            return i + (bright ? 8 : 0);
    return -2;
}

static int theme_find_role(const char *key) {
    for (int r = 0; r < THEME_ROLE_COUNT; r++)
        if (strcmp(theme_role_key((enum theme_role)r), key) == 0)
            return r;
    return -1;
}

/* One "role": {"fg":..,"bg":..,"bold":..} entry. */
static int theme_load_role(const char *path, const char *key, json_object *spec,
                           struct theme_color *c, char *err, size_t errlen) {
    if (!json_object_is_type(spec, json_type_object))
        return errbuf_set(err, errlen, -EINVAL, "%s: colors.%s: expected an object", path, key);
    json_object_object_foreach(spec, field, v) {
        if (strcmp(field, "bold") == 0 && json_object_is_type(v, json_type_boolean)) {
            c->bold = json_object_get_boolean(v);
            continue;
        }
        bool fg = strcmp(field, "fg") == 0;
        if (!fg && strcmp(field, "bg") != 0)
            return errbuf_set(err, errlen, -EINVAL,
                              "%s: colors.%s.%s: unknown field (use fg, bg, bold)", path, key,
                              field);
        int col = theme_parse_color(v);
        if (col < -1)
            return errbuf_set(err, errlen, -EINVAL,
                              "%s: colors.%s.%s: '%s' is not a colour (a name such as cyan or "
                              "bright-red, default, or 0..255)",
                              path, key, field, json_object_to_json_string(v));
        *(fg ? &c->fg : &c->bg) = (short)col;
    }
    return 0;
}

static int theme_load_obj(const char *path, json_object *root, struct theme *t, char *err,
                          size_t errlen) {
    if (!json_object_is_type(root, json_type_object))
        return errbuf_set(err, errlen, -EINVAL, "%s: expected a JSON object", path);
    json_object_object_foreach(root, key, v) {
        if (strcmp(key, "name") == 0 && json_object_is_type(v, json_type_string)) {
            snprintf(t->name, sizeof(t->name), "%s", json_object_get_string(v));
        } else if (strcmp(key, "colors") == 0 && json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, role, spec) {
                int r = theme_find_role(role);
                if (r < 0)
                    return errbuf_set(err, errlen, -EINVAL, "%s: colors.%s: unknown role", path,
                                      role);
                int rc = theme_load_role(path, role, spec, &t->c[r], err, errlen);
                if (rc != 0)
                    return rc;
            }
        } else {
            return errbuf_set(err, errlen, -EINVAL, "%s: %s: unknown key (use name, colors)", path,
                              key);
        }
    }
    return 0;
}

int theme_load_json(const char *path, struct theme *out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return errbuf_set(err, errlen, -errno, "cannot open theme %s: %s", path, strerror(errno));
    char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    bool too_big = !feof(f);
    fclose(f);
    if (too_big)
        return errbuf_set(err, errlen, -EINVAL, "%s: larger than 64 KiB", path);
    buf[n] = '\0';
    struct json_tokener *tok = json_tokener_new();
    json_object *root = tok ? json_tokener_parse_ex(tok, buf, (int)n + 1) : NULL;
    int rc = 0;
    if (!root) {
        rc = errbuf_set(err, errlen, -EINVAL, "%s: invalid JSON at byte %zu: %s", path,
                        tok ? json_tokener_get_parse_end(tok) : 0,
                        tok ? json_tokener_error_desc(json_tokener_get_error(tok)) : "no memory");
    } else {
        struct theme t;
        theme_default(&t);
        rc = theme_load_obj(path, root, &t, err, errlen);
        if (rc == 0)
            *out = t;
        json_object_put(root);
    }
    if (tok)
        json_tokener_free(tok);
    return rc;
}

int theme_resolve(const char *arg, char *path, size_t pathlen, char *err, size_t errlen) {
    size_t len = strlen(arg);
    if (strchr(arg, '/') || (len > 5 && strcmp(arg + len - 5, ".json") == 0)) {
        snprintf(path, pathlen, "%s", arg);
        return 0;
    }
    const char *dirs[] = {"themes", RS_DATADIR "/themes"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, pathlen, "%s/%s.json", dirs[i], arg);
        if (access(path, R_OK) == 0)
            return 0;
    }
    return errbuf_set(err, errlen, -ENOENT, "theme '%s' not found in ./themes or %s/themes", arg,
                      RS_DATADIR);
}
