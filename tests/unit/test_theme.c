/* Tests for themes: the shipped files cover every role, and broken files are clear errors. */
#include "tests/support/rs_test.h"
#include "tui/theme.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

TestSuite(theme, .timeout = 10);

static const char *theme_file(const char *name, char *buf, size_t n) {
    snprintf(buf, n, "%s/../../themes/%s", RS_FIXTURES, name);
    return buf;
}

/* Every role appears in every shipped theme, so none silently falls back to the default. */
Test(theme, shipped_themes_name_every_role) {
    const char *files[] = {"default.json", "mono.json"};
    for (size_t f = 0; f < 2; f++) {
        char path[512], err[256];
        json_object *root = json_object_from_file(theme_file(files[f], path, sizeof(path)));
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
    }
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
    {"truncated.json", "invalid JSON at byte"},
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
