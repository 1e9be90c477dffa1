/* Theme roles, the compiled-in default and the JSON loader. */
#include "tui/view/theme.h"

#include "backend/core/errbuf.h"
#include "backend/core/json_file.h"

#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    /* 0 black, 1 red, 2 green, 3 yellow, 4 blue, 5 magenta, 6 cyan, 7 white; D the terminal's.
     * Every phase a pair of its own (eight colours go round seventeen phases): the step's
     * phases, eval, checkpoint and a pause in black on a colour, the others in a colour on the
     * terminal's background or in white on a colour, bold. */
    enum { D = THEME_DEFAULT_COLOR };
    static const struct theme_color phase[PHASE_COUNT] = {
        [PHASE_LOAD] = {6, D, true},        [PHASE_VPOC] = {5, D, true},
        [PHASE_FEATURES] = {2, D, true},    [PHASE_H2D] = {0, 4, false},
        [PHASE_CLEANUP] = {3, D, true},     [PHASE_FORWARD] = {0, 2, false},
        [PHASE_BACKWARD] = {0, 1, false},   [PHASE_OPTIMIZER] = {0, 5, false},
        [PHASE_SYNC] = {7, D, true},        [PHASE_EVAL] = {0, 6, false},
        [PHASE_CHECKPOINT] = {0, 3, false}, [PHASE_PAUSED] = {0, 7, false},
        [PHASE_ALLREDUCE] = {1, D, true},   [PHASE_COMM_INIT] = {7, 4, true},
        [PHASE_TEARDOWN] = {7, 5, true},    [PHASE_BARRIER] = {7, 1, true},
        [PHASE_OTHER] = {7, 2, true},
    };
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
    t->c[THEME_BORDER].fg = 4;
    t->c[THEME_ACCENT] = (struct theme_color){5, THEME_DEFAULT_COLOR, true};
    t->c[THEME_GAUGE].fg = 2;
    t->c[THEME_SEG_LARGEST] = (struct theme_color){0, 3, false};
    for (int p = 0; p < PHASE_COUNT; p++)
        t->c[THEME_PHASE0 + p] = phase[p];
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
    json_object *root = NULL;
    int rc = json_file_read(path, path, 65536, &root, err, errlen);
    if (rc != 0)
        return rc;
    struct theme t;
    theme_default(&t);
    rc = theme_load_obj(path, root, &t, err, errlen);
    if (rc == 0)
        *out = t;
    json_object_put(root);
    return rc;
}

#define THEME_DIR_MAX  1024
#define THEME_DIRS_MAX 5

/* The folder of the running executable into dir ("" when /proc cannot say). */
static void theme_exe_dir(char *dir, size_t n) {
    ssize_t len = readlink("/proc/self/exe", dir, n - 1);
    dir[len > 0 ? len : 0] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        dir[0] = '\0';
}

/* The directories searched for NAME.json, in order; returns how many: ./themes, the user's,
 * the installed tree's beside the executable (bin/../share/ringside/themes, wherever it was
 * installed), the configured install prefix's, and the source tree's for a binary run from its
 * build tree. */
static int theme_dirs(char dirs[THEME_DIRS_MAX][THEME_DIR_MAX]) {
    int n = 0;
    char exe[THEME_DIR_MAX - 64], probe[THEME_DIR_MAX];
    struct stat st;
    snprintf(dirs[n++], THEME_DIR_MAX, "themes");
    if (json_file_config_dir(dirs[n], THEME_DIR_MAX - 8) == 0)
        strcat(dirs[n++], "/themes");
    theme_exe_dir(exe, sizeof(exe));
    snprintf(probe, sizeof(probe), "%s/../share/ringside/themes", exe);
    char real[PATH_MAX];
    if (exe[0] && realpath(probe, real) && strcmp(real, RS_DATADIR "/themes") != 0)
        snprintf(dirs[n++], THEME_DIR_MAX, "%.*s", THEME_DIR_MAX - 1, real);
    snprintf(dirs[n++], THEME_DIR_MAX, "%s/themes", RS_DATADIR);
    snprintf(probe, sizeof(probe), "%s/CMakeCache.txt", exe);
    if (exe[0] && stat(probe, &st) == 0)
        snprintf(dirs[n++], THEME_DIR_MAX, "%s/themes", RS_SOURCE_DIR);
    return n;
}

int theme_resolve(const char *arg, char *path, size_t pathlen, char *err, size_t errlen) {
    size_t len = strlen(arg);
    if (strchr(arg, '/') || (len > 5 && strcmp(arg + len - 5, ".json") == 0)) {
        snprintf(path, pathlen, "%s", arg);
        return 0;
    }
    char dirs[THEME_DIRS_MAX][THEME_DIR_MAX], where[THEME_DIRS_MAX * 80] = "";
    int n = theme_dirs(dirs);
    for (int i = 0; i < n; i++) {
        snprintf(path, pathlen, "%s/%s.json", dirs[i], arg);
        if (access(path, R_OK) == 0)
            return 0;
        size_t w = strlen(where);
        snprintf(where + w, sizeof(where) - w, "%s%s%.70s",
                 i == 0      ? "./"
                 : i + 1 < n ? ", "
                             : " or ",
                 "", dirs[i]);
    }
    char names[32][THEME_NAME_MAX], found[32 * 24] = "";
    int nn = theme_list(names, 32);
    for (int i = 0; i < nn; i++) {
        size_t w = strlen(found);
        snprintf(found + w, sizeof(found) - w, "%s%.20s", i ? ", " : "", names[i]);
    }
    return errbuf_set(err, errlen, -ENOENT, "theme '%s' not found in %s; %s%s", arg, where,
                      nn ? "themes found: " : "no theme found there", found);
}

int theme_open(const char *arg, struct theme *out, char *err, size_t errlen) {
    char path[THEME_DIR_MAX + THEME_NAME_MAX + 8];
    int rc = theme_resolve(arg[0] ? arg : "default", path, sizeof(path), err, errlen);
    if (rc != 0 && !arg[0]) {
        theme_default(out); /* no default.json installed: the compiled-in one */
        return 0;
    }
    return rc != 0 ? rc : theme_load_json(path, out, err, errlen);
}

/* Insert name into the sorted list names[0..n) of capacity max; returns the new count. */
static int theme_list_add(char names[][THEME_NAME_MAX], int n, int max, const char *name) {
    int i = 0;
    while (i < n && strcmp(names[i], name) < 0)
        i++;
    if ((i < n && strcmp(names[i], name) == 0) || i >= max)
        return n;
    int keep = n < max ? n : max - 1;
    memmove(names[i + 1], names[i], (size_t)(keep - i) * THEME_NAME_MAX);
    snprintf(names[i], THEME_NAME_MAX, "%s", name);
    return keep + 1;
}

static int theme_list_dir(const char *dir, char names[][THEME_NAME_MAX], int n, int max) {
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || len - 5 >= THEME_NAME_MAX || de->d_name[0] == '.' ||
            strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        de->d_name[len - 5] = '\0';
        n = theme_list_add(names, n, max, de->d_name);
    }
    if (d)
        closedir(d);
    return n;
}

int theme_list(char names[][THEME_NAME_MAX], int max) {
    char dirs[THEME_DIRS_MAX][THEME_DIR_MAX];
    int nd = theme_dirs(dirs), n = 0;
    for (int i = 0; i < nd && max > 0; i++)
        n = theme_list_dir(dirs[i], names, n, max);
    return n;
}

int theme_next(const char *current, char *out, size_t outlen) {
    char names[256][THEME_NAME_MAX];
    int n = theme_list(names, 256);
    if (n == 0)
        return -ENOENT;
    const char *base = strrchr(current, '/') ? strrchr(current, '/') + 1 : current;
    char cur[THEME_NAME_MAX];
    snprintf(cur, sizeof(cur), "%s", base[0] ? base : "default");
    size_t len = strlen(cur);
    if (len > 5 && strcmp(cur + len - 5, ".json") == 0)
        cur[len - 5] = '\0';
    int i = 0;
    while (i < n && strcmp(names[i], cur) != 0)
        i++;
    snprintf(out, outlen, "%s", names[i < n ? (i + 1) % n : 0]);
    return 0;
}

/* xterm's default RGB for a colour 0..255. */
static void theme_rgb(int c, int rgb[3]) {
    static const unsigned char sys[16][3] = {
        {0, 0, 0},     {205, 0, 0},     {0, 205, 0},     {205, 205, 0},  {0, 0, 238}, {205, 0, 205},
        {0, 205, 205}, {229, 229, 229}, {127, 127, 127}, {255, 0, 0},    {0, 255, 0}, {255, 255, 0},
        {92, 92, 255}, {255, 0, 255},   {0, 255, 255},   {255, 255, 255}};
    static const int level[6] = {0, 95, 135, 175, 215, 255};
    if (c < 16) {
        for (int k = 0; k < 3; k++)
            rgb[k] = sys[c][k];
    } else if (c < 232) {
        rgb[0] = level[(c - 16) / 36];
        rgb[1] = level[(c - 16) / 6 % 6];
        rgb[2] = level[(c - 16) % 6];
    } else {
        rgb[0] = rgb[1] = rgb[2] = 8 + 10 * (c - 232);
    }
}

/* Luma and two chroma axes (red-green, blue-yellow) of colour c. */
static void theme_lcc(int c, double out[3]) {
    int rgb[3];
    theme_rgb(c, rgb);
    out[0] = (rgb[0] + rgb[1] + rgb[2]) / 3.0;
    out[1] = rgb[0] - rgb[1];
    out[2] = rgb[2] - (rgb[0] + rgb[1]) / 2.0;
}

short theme_color_fold(short c, int colors) {
    if (c < 0 || colors >= 256)
        return c;
    if (colors < 8 || c > 255)
        return THEME_DEFAULT_COLOR;
    int n = colors >= 16 ? 16 : 8, best = 0;
    if (c < n)
        return c;
    double want[3], have[3], best_d = -1;
    theme_lcc(c, want);
    for (int i = 0; i < n; i++) {
        theme_lcc(i, have);
        double d = 0;
        for (int k = 0; k < 3; k++)
            d += (want[k] - have[k]) * (want[k] - have[k]);
        if (best_d < 0 || d < best_d) {
            best_d = d;
            best = i;
        }
    }
    return (short)best;
}
