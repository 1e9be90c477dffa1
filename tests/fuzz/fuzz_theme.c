/* libFuzzer target for the theme loader: arbitrary bytes as a theme JSON file, the colours
 * checked against their documented range (and folded to smaller palettes), the theme left
 * untouched and the message well-formed on errors. */
#include "tests/fuzz/fuzz_target.h"
#include "tui/view/theme.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_THEME_MAX_BYTES 65536 /* theme_load_json's file size limit */
#define FUZZ_THEME_PATTERN   0x5A

static char fuzz_theme_path[64];

/* Whether a key or string anywhere in v holds a newline (an error message may quote one). */
static bool fuzz_theme_has_nl(json_object *v) {
    if (json_object_is_type(v, json_type_string))
        return memchr(json_object_get_string(v), '\n', (size_t)json_object_get_string_len(v)) !=
               NULL;
    if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++)
            if (fuzz_theme_has_nl(json_object_array_get_idx(v, i)))
                return true;
        return false;
    }
    if (!json_object_is_type(v, json_type_object))
        return false;
    json_object_object_foreach(v, key, val) {
        if (strchr(key, '\n') || fuzz_theme_has_nl(val))
            return true;
    }
    return false;
}

/* The input as JSON quotes a newline somewhere (parsed as the loader parses it). */
static bool fuzz_theme_quotes_nl(const uint8_t *data, size_t size) {
    json_tokener *tok = json_tokener_new();
    FUZZ_CHECK(tok != NULL);
    json_object *o = json_tokener_parse_ex(tok, (const char *)data, (int)size);
    json_tokener_free(tok);
    bool nl = o && fuzz_theme_has_nl(o);
    json_object_put(o);
    return nl;
}

/* A colour in range; folded to a smaller palette it stays inside it (unchanged when it already
 * fits, -1 below 8 colours), as theme.h documents. */
static void fuzz_theme_check_color(short c) {
    FUZZ_CHECK(c >= THEME_DEFAULT_COLOR && c <= 255);
    FUZZ_CHECK(theme_color_fold(c, 256) == c);
    short c16 = theme_color_fold(c, 16), c8 = theme_color_fold(c, 8);
    FUZZ_CHECK(c < 16 ? c16 == c : c16 >= 0 && c16 < 16);
    FUZZ_CHECK(c < 8 ? c8 == c : c8 >= 0 && c8 < 8);
    FUZZ_CHECK(theme_color_fold(c, 4) == -1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_theme_path[0])
        snprintf(fuzz_theme_path, sizeof(fuzz_theme_path), "/tmp/fuzz_theme_%ld.json",
                 (long)getpid());
    FILE *f = fopen(fuzz_theme_path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    FUZZ_CHECK(fclose(f) == 0);

    struct theme t, before;
    memset(&t, FUZZ_THEME_PATTERN, sizeof(t));
    memcpy(&before, &t, sizeof(t));
    char err[512];
    memset(err, 'x', sizeof(err));
    size_t cap = size ? 1 + data[0] % sizeof(err) : sizeof(err);
    int rc = theme_load_json(fuzz_theme_path, &t, err, cap);
    if (rc != 0) {
        FUZZ_CHECK(rc == -EINVAL || (rc == -EFBIG && size > FUZZ_THEME_MAX_BYTES));
        FUZZ_CHECK(memcmp(&t, &before, sizeof(t)) == 0);
        FUZZ_CHECK(memchr(err, '\0', cap) != NULL);
        FUZZ_CHECK(cap == sizeof(err) || err[cap] == 'x'); /* nothing written past cap */
        /* a full message: the file first, non-empty, one line unless it quotes the input's */
        rc = theme_load_json(fuzz_theme_path, &t, err, sizeof(err));
        FUZZ_CHECK(rc != 0 && memcmp(&t, &before, sizeof(t)) == 0);
        FUZZ_CHECK(strncmp(err, fuzz_theme_path, strlen(fuzz_theme_path)) == 0);
        FUZZ_CHECK(strlen(err) > strlen(fuzz_theme_path) + 2);
        FUZZ_CHECK(!strchr(err, '\n') || fuzz_theme_quotes_nl(data, size));
        return 0;
    }
    FUZZ_CHECK(memchr(t.name, '\0', sizeof(t.name)) != NULL);
    for (int r = 0; r < THEME_ROLE_COUNT; r++) {
        fuzz_theme_check_color(t.c[r].fg);
        fuzz_theme_check_color(t.c[r].bg);
    }
    return 0;
}

const char fuzz_target_name[] = "fuzz_theme";

/* Pieces of real theme files (themes/NAME.json) the replay driver mixes into its inputs. */
const char *const fuzz_fragments[] = {
    "{\"name\": \"nord\", \"colors\": {",
    "{\"colors\":{\"title\":{\"fg\":",
    "\"text\": {\"fg\": 253, \"bg\": \"default\"}",
    "\"title\": {\"fg\": 110, \"bg\": \"default\", \"bold\": true}",
    "\"segment.used\": {\"fg\": \"black\", \"bg\": \"green\"}",
    "\"segment.free\": ",
    "\"segment.largest\": ",
    "\"phase.forward\": {\"bg\": \"bright-blue\"}",
    "\"phase.checkpoint\": ",
    "\"phase.paused\": ",
    "\"gauge\": {\"fg\": 2}",
    "\"footer\": ",
    "\"bright-red\"",
    "\"bright-\"",
    "\"magenta\"",
    "\"default\"",
    "\"purple\"",
    "255",
    "256",
    "-1",
    "-2",
    "2147483648",
    "1e3",
    "\"bold\": false",
    "\"blink\": true",
    "null",
    "[1, 2]",
    "}, ",
    "}}",
    "\"\\u0000\"",
    "\"\\n\"",
    "/* c */",
    "\n",
};
const size_t fuzz_fragments_count = sizeof(fuzz_fragments) / sizeof(fuzz_fragments[0]);
