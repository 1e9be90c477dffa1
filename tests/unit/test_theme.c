/* Tests for themes: the shipped files cover every role, broken files are clear errors, the
 * search path and listing, and folding 256 colours onto 16 or 8. */
#include "tests/support/rs_test.h"
#include "tui/view/theme.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(theme, .timeout = 10);

static const char *theme_file(const char *name, char *buf, size_t n) {
    snprintf(buf, n, "%s/../../themes/%s", RS_FIXTURES, name);
    return buf;
}

/* Every role appears in every shipped theme, so none silently falls back to the default. */
Test(theme, shipped_themes_name_every_role) {
    char dir[512];
    DIR *d = opendir(theme_file("", dir, sizeof(dir)));
    cr_assert_not_null(d, "cannot list %s", dir);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        files++;
        char path[512], err[256];
        json_object *root = json_object_from_file(theme_file(de->d_name, path, sizeof(path)));
        cr_assert_not_null(root, "%s does not parse", path);
        json_object *colors;
        cr_assert(json_object_object_get_ex(root, "colors", &colors));
        for (int r = 0; r < THEME_ROLE_COUNT; r++) {
            const char *key = theme_role_key((enum theme_role)r);
            cr_assert(json_object_object_get_ex(colors, key, NULL), "%s lacks %s", path, key);
        }
        json_object_put(root);
        struct theme t;
        cr_assert_eq(theme_load_json(path, &t, err, sizeof(err)), 0, "%s", err);
        de->d_name[len - 5] = '\0';
        cr_assert_str_eq(t.name, de->d_name, "a theme's name is its file name");
    }
    closedir(d);
    cr_assert_geq(files, 5, "at least five themes ship");
}

Test(theme, default_file_matches_compiled_default) {
    char path[512], err[256];
    struct theme file, builtin;
    theme_default(&builtin);
    cr_assert_eq(
        theme_load_json(theme_file("default.json", path, sizeof(path)), &file, err, sizeof(err)), 0,
        "%s", err);
    for (int r = 0; r < THEME_ROLE_COUNT; r++) {
        cr_assert_eq(file.c[r].fg, builtin.c[r].fg, "%s fg", theme_role_key(r));
        cr_assert_eq(file.c[r].bg, builtin.c[r].bg, "%s bg", theme_role_key(r));
        cr_assert_eq(file.c[r].bold, builtin.c[r].bold, "%s bold", theme_role_key(r));
    }
}

/* Every shipped theme but mono gives each phase colours of its own (foreground and background
 * together, bold aside: bold alone is too faint a difference), so no two phases on the
 * timeline look alike; mono has its attributes alone and the phases' letters tell them apart
 * (every phase has a letter of its own). The compiled-in default is the default file. */
Test(theme, shipped_themes_give_every_phase_its_own_colours) {
    const char *names[] = {"default", "high-contrast", "nord", "gruvbox", "solarized-dark"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char file[64], path[512], err[256];
        snprintf(file, sizeof(file), "%s.json", names[i]);
        struct theme t;
        cr_assert_eq(theme_load_json(theme_file(file, path, sizeof(path)), &t, err, sizeof(err)), 0,
                     "%s", err);
        for (int p = 0; p < PHASE_COUNT; p++)
            for (int q = 0; q < p; q++) {
                const struct theme_color *a = &t.c[THEME_PHASE0 + p], *b = &t.c[THEME_PHASE0 + q];
                cr_assert(a->fg != b->fg || a->bg != b->bg, "%s: %s and %s are both %d on %d",
                          names[i], ev_phase_name((unsigned)p), ev_phase_name((unsigned)q), a->fg,
                          a->bg);
            }
    }
}

Test(theme, role_keys) {
    cr_assert_str_eq(theme_role_key(THEME_SEG_USED), "segment.used");
    cr_assert_str_eq(theme_role_key(THEME_PHASE0 + PHASE_FORWARD), "phase.forward");
    cr_assert_str_eq(theme_role_key(THEME_ROLE_COUNT), "?");
}

Test(theme, values_are_applied) {
    char dir[256], path[512], err[256];
    cr_assert_eq(rs_test_tmpdir(dir, sizeof(dir)), 0);
    rs_test_write_file(dir, "t.json",
                       "{\"name\":\"t\",\"colors\":{\"ok\":{\"fg\":\"bright-red\",\"bg\":17,"
                       "\"bold\":false}}}",
                       path, sizeof(path));
    struct theme t;
    cr_assert_eq(theme_load_json(path, &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(t.name, "t");
    cr_assert_eq(t.c[THEME_OK].fg, 9);
    cr_assert_eq(t.c[THEME_OK].bg, 17);
    cr_assert_not(t.c[THEME_OK].bold);
    cr_assert_eq(t.c[THEME_TITLE].fg, 6); /* untouched roles keep the default (cyan) */
    rs_test_rmtree(dir);
}

struct theme_bad {
    char file[32];
    char want[64];
};

static struct theme_bad theme_bad_cases[] = {
    {"unknown_role.json", "colors.titel: unknown role"},
    {"bad_color.json", "colors.title.fg: '\"purple\"' is not a colour"},
    /* 13 bytes and a newline, 12 and a newline: the end of the file is line 3, column 1 */
    {"truncated.json", "invalid JSON at line 3, column 1: unexpected end of file"},
    {"unknown_field.json", "colors.ok.blink: unknown field"},
    {"unknown_key.json", "palette: unknown key"},
    {"out_of_range.json", "colors.title.fg: '300' is not a colour"},
};

ParameterizedTestParameters(theme, broken_files) {
    return cr_make_param_array(struct theme_bad, theme_bad_cases,
                               sizeof(theme_bad_cases) / sizeof(theme_bad_cases[0]));
}

ParameterizedTest(struct theme_bad *c, theme, broken_files) {
    char path[512], err[256];
    snprintf(path, sizeof(path), "%s/themes/%s", RS_FIXTURES, c->file);
    struct theme t;
    theme_default(&t);
    t.c[THEME_OK].fg = 42; /* untouched on error */
    cr_assert_eq(theme_load_json(path, &t, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, c->file), "no file name in: %s", err);
    cr_assert(strstr(err, c->want), "want '%s' in: %s", c->want, err);
    cr_assert_eq(t.c[THEME_OK].fg, 42);
}

Test(theme, resolve_names_and_paths) {
    char path[512], err[256];
    cr_assert_eq(theme_resolve("x/y.json", path, sizeof(path), err, sizeof(err)), 0);
    cr_assert_str_eq(path, "x/y.json");
    cr_assert_eq(theme_resolve("no-such-theme", path, sizeof(path), err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "no-such-theme"), "%s", err);
}

/* Hand-derived with xterm's palette; d = dY^2 + dC1^2 + dC2^2 with Y = (R+G+B)/3,
 * C1 = R-G, C2 = B-(R+G)/2 (see theme.h):
 * 196 = cube (5,0,0) = (255,0,0), (Y,C1,C2) = (85,255,-127.5): red (205,0,0) = (68.3,205,
 *   -102.5) is 16.7^2+50^2+25^2 = 3403 away; magenta and yellow differ by >= 230 in one
 *   chroma -> 1 with 8 colours; with 16, bright red 9 (255,0,0) is exact.
 * 21 = (0,0,255) = (85,0,255): blue (0,0,238) = (79.3,0,238) is 5.7^2+17^2 = 321 -> 4.
 * 231 = (255,255,255): white (229,229,229) is 26^2 = 676 away (greys differ in Y only) -> 7;
 *   15 is exact with 16.
 * 16 = (0,0,0) -> 0.
 * 244 = grey 8+10*12 = 128: white is 101^2 = 10201, black 128^2 = 16384, and every chromatic
 *   colour is over 40000 away (the nearest, yellow: 8.7^2+205^2 = 42100) -> 7; with 16, grey 8
 *   (127,127,127) is 1 away -> 8.
 * 12 = (92,92,255) = (146.3,0,163): blue = (79.3,0,238): 67^2+75^2 = 10114; white 82.7^2+163^2
 *   = 33403; cyan (0,205,205) has C1 -205 -> 4.
 * 208 = cube (5,2,0) = (255,135,0) = (130,120,-195): yellow (205,205,0) = (136.7,0,-205):
 *   6.7^2+120^2+10^2 = 14544; red (68.3,205,-102.5): 61.7^2+85^2+92.5^2 = 19584 -> 3. */
Test(theme, color_fold) {
    cr_assert_eq(theme_color_fold(196, 8), 1);
    cr_assert_eq(theme_color_fold(196, 16), 9);
    cr_assert_eq(theme_color_fold(21, 8), 4);
    cr_assert_eq(theme_color_fold(231, 8), 7);
    cr_assert_eq(theme_color_fold(231, 16), 15);
    cr_assert_eq(theme_color_fold(16, 8), 0);
    cr_assert_eq(theme_color_fold(244, 8), 7);
    cr_assert_eq(theme_color_fold(244, 16), 8);
    cr_assert_eq(theme_color_fold(12, 8), 4);
    cr_assert_eq(theme_color_fold(208, 8), 3);
    cr_assert_eq(theme_color_fold(3, 8), 3);       /* representable: unchanged */
    cr_assert_eq(theme_color_fold(12, 16), 12);    /* representable: unchanged */
    cr_assert_eq(theme_color_fold(208, 256), 208); /* a 256-colour terminal */
    cr_assert_eq(theme_color_fold(-1, 8), -1);
    cr_assert_eq(theme_color_fold(5, 2), -1); /* no colours to speak of */
}

/* Every shipped 256-colour theme folds to colours an 8-colour terminal has. */
Test(theme, shipped_themes_fold_to_8) {
    const char *names[] = {"nord", "gruvbox", "solarized-dark"};
    for (size_t i = 0; i < 3; i++) {
        char file[64], path[512], err[256];
        snprintf(file, sizeof(file), "%s.json", names[i]);
        struct theme t;
        cr_assert_eq(theme_load_json(theme_file(file, path, sizeof(path)), &t, err, sizeof(err)), 0,
                     "%s", err);
        for (int r = 0; r < THEME_ROLE_COUNT; r++) {
            short fg = theme_color_fold(t.c[r].fg, 8), bg = theme_color_fold(t.c[r].bg, 8);
            cr_assert(fg >= -1 && fg < 8 && bg >= -1 && bg < 8, "%s %s", names[i],
                      theme_role_key(r));
        }
    }
}

/* A scratch XDG_CONFIG_HOME with ringside/themes/ holding the given files, and the source
 * tree as the working directory (its ./themes comes first). */
static void theme_user_dir(char *dir, size_t n, const char *const *files) {
    char sub[600], path[700], src[512];
    cr_assert_eq(rs_test_tmpdir(dir, n), 0);
    setenv("XDG_CONFIG_HOME", dir, 1);
    snprintf(sub, sizeof(sub), "%s/ringside", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    strcat(sub, "/themes");
    cr_assert_eq(mkdir(sub, 0700), 0);
    for (size_t i = 0; files[i]; i++)
        rs_test_write_file(sub, files[i], "{\"name\": \"user\"}", path, sizeof(path));
    cr_assert_eq(chdir(theme_file("..", src, sizeof(src))), 0);
}

Test(theme, search_order) {
    char dir[256], path[512], err[256];
    theme_user_dir(dir, sizeof(dir), (const char *const[]){"nord.json", "zzz.json", NULL});
    cr_assert_eq(theme_resolve("nord", path, sizeof(path), err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(path, "themes/nord.json"); /* ./themes before the user's directory */
    cr_assert_eq(theme_resolve("zzz", path, sizeof(path), err, sizeof(err)), 0, "%s", err);
    char want[512];
    snprintf(want, sizeof(want), "%s/ringside/themes/zzz.json", dir);
    cr_assert_str_eq(path, want);
    cr_assert_eq(theme_resolve("nope", path, sizeof(path), err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "ringside/themes"), "%s", err);
    struct theme t;
    cr_assert_eq(theme_open("zzz", &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(t.name, "user");
    cr_assert_eq(theme_open("", &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(t.name, "default");
    rs_test_rmtree(dir);
}

Test(theme, list_and_next) {
    char dir[256], names[16][THEME_NAME_MAX], next[THEME_NAME_MAX];
    theme_user_dir(dir, sizeof(dir),
                   (const char *const[]){"nord.json", "zzz.json", "notes.txt", NULL});
    int n = theme_list(names, 16);
    const char *want[] = {"default",        "gruvbox", "high-contrast", "mono", "nord",
                          "solarized-dark", "zzz"};
    cr_assert_eq(n, 7);
    for (int i = 0; i < 7; i++)
        cr_assert_str_eq(names[i], want[i]);
    cr_assert_eq(theme_list(names, 2), 2); /* the first ones in order */
    cr_assert_str_eq(names[1], "gruvbox");
    cr_assert_eq(theme_next("", next, sizeof(next)), 0); /* "" is the default theme */
    cr_assert_str_eq(next, "gruvbox");
    cr_assert_eq(theme_next("solarized-dark", next, sizeof(next)), 0);
    cr_assert_str_eq(next, "zzz");
    cr_assert_eq(theme_next("zzz", next, sizeof(next)), 0); /* wraps */
    cr_assert_str_eq(next, "default");
    cr_assert_eq(theme_next("themes/mono.json", next, sizeof(next)), 0);
    cr_assert_str_eq(next, "nord");
    cr_assert_eq(theme_next("elsewhere", next, sizeof(next)), 0);
    cr_assert_str_eq(next, "default");
    rs_test_rmtree(dir);
}
