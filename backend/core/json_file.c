/* JSON files a person writes (config, themes, rules): read whole, parsed strictly, with the
 * line and column of a mistake. */
#include "backend/core/json_file.h"

#include "backend/core/errbuf.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int json_file_config_dir(char *out, size_t outlen) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, outlen, "%s/ringside", xdg);
    else if (home && home[0])
        n = snprintf(out, outlen, "%s/.config/ringside", home);
    else
        return -ENOENT;
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

void json_file_line_col(const char *text, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && text[i]; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

/* The whole file into a NUL-terminated malloc'd buffer. 0 or -errno / -EFBIG with err. */
static int json_file_slurp(const char *path, const char *shown, size_t max_bytes, char **buf,
                           size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return errbuf_set(err, errlen, -errno, "%s: cannot open: %s", shown, strerror(errno));
    char *b = malloc(max_bytes + 1);
    size_t n = b ? fread(b, 1, max_bytes + 1, f) : 0;
    int rc = !b ? errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", shown) : 0;
    if (rc == 0 && ferror(f))
        rc = errbuf_set(err, errlen, -EIO, "%s: cannot read: %s", shown, strerror(errno));
    else if (rc == 0 && n > max_bytes)
        rc = errbuf_set(err, errlen, -EFBIG, "%s: larger than %zu KiB", shown, max_bytes >> 10);
    fclose(f);
    if (rc != 0) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

#define JSON_FILE_DEPTH 64 /* nesting the duplicate-key scan follows (json-c's limit is 32) */

/* The end of the string literal that starts at buf[i] (its opening quote): the index after its
 * closing quote. *nul is set when it holds the escape \u0000. */
static size_t json_file_string_end(const char *buf, size_t n, size_t i, bool *nul) {
    for (i++; i < n && buf[i] != '"'; i++) {
        if (buf[i] != '\\')
            continue;
        if (i + 5 < n && buf[i + 1] == 'u' && strncmp(buf + i + 2, "0000", 4) == 0)
            *nul = true;
        i++;
    }
    return i + 1;
}

/* What json-c lets through that a person's file should not have: a key twice in one object
 * (json-c keeps the last: a setting silently overridden), \u0000 in a string (C strings would
 * cut it) and a string in single quotes. buf is valid JSON (parsed already). The offset of the
 * first, or n; *why. */
static size_t json_file_lint(const char *buf, size_t n, const char **why) {
    struct {
        bool object, want_key;
        size_t first_key; /* index into keys of this object's first key */
    } stack[JSON_FILE_DEPTH];
    enum { JSON_FILE_KEYS = 4096 }; /* keys of the open objects followed (more: not checked) */
    size_t *keys = malloc(2 * JSON_FILE_KEYS * sizeof(size_t)), *key_end = keys + JSON_FILE_KEYS;
    size_t depth = 0, n_keys = 0, at = n;
    if (!keys)
        return n;
    for (size_t i = 0; i < n; i++) {
        char c = buf[i];
        if (c == '{' || c == '[') {
            if (depth == JSON_FILE_DEPTH)
                break;
            stack[depth].object = c == '{';
            stack[depth].want_key = c == '{';
            stack[depth].first_key = n_keys;
            depth++;
        } else if ((c == '}' || c == ']') && depth > 0) {
            n_keys = stack[--depth].first_key;
        } else if (c == '\'') { /* outside a string: json-c took a single-quoted string */
            *why = "a string in single quotes (JSON takes double quotes)";
            at = i;
            break;
        } else if (c == ',' && depth > 0 && stack[depth - 1].object) {
            stack[depth - 1].want_key = true;
        } else if (c == '"') {
            bool nul = false;
            size_t end = json_file_string_end(buf, n, i, &nul);
            if (nul) {
                *why = "\\u0000 in a string";
                at = i;
                break;
            }
            if (depth > 0 && stack[depth - 1].want_key) {
                stack[depth - 1].want_key = false;
                for (size_t k = stack[depth - 1].first_key; k < n_keys; k++)
                    if (key_end[k] - keys[k] == end - i &&
                        memcmp(buf + keys[k], buf + i, end - i) == 0) {
                        *why = "a key given twice in one object (the second would win silently)";
                        at = i;
                    }
                if (at < n)
                    break;
                if (n_keys < JSON_FILE_KEYS) {
                    keys[n_keys] = i;
                    key_end[n_keys++] = end;
                }
            }
            i = end - 1;
        }
    }
    free(keys);
    return at;
}

/* Parse buf strictly (json-c's strict mode: no single quotes, trailing commas, comments or
 * NaN), then the lint above; anything but whitespace after the value is an error too. */
static int json_file_parse(const char *buf, size_t n, const char *shown, struct json_object **out,
                           char *err, size_t errlen) {
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        return errbuf_set(err, errlen, -ENOMEM, "%s: out of memory", shown);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    struct json_object *root = json_tokener_parse_ex(tok, buf, (int)n);
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    const char *why =
        je == json_tokener_continue ? "unexpected end of file" : json_tokener_error_desc(je);
    if (root) {
        while (end < n && strchr(" \t\r\n", buf[end]))
            end++;
        why = end < n ? "unexpected data after the JSON value" : NULL;
    }
    if (root && !why)
        end = json_file_lint(buf, n, &why);
    if (!why) {
        *out = root;
        return 0;
    }
    json_object_put(root);
    int line, col;
    json_file_line_col(buf, end, &line, &col);
    return errbuf_set(err, errlen, -EINVAL, "%s: invalid JSON at line %d, column %d: %s", shown,
                      line, col, why);
}

int json_file_read_text(const char *path, const char *shown, size_t max_bytes,
                        struct json_object **out, char **text, char *err, size_t errlen) {
    char *buf = NULL;
    size_t n = 0;
    int rc = json_file_slurp(path, shown, max_bytes, &buf, &n, err, errlen);
    if (rc != 0)
        return rc;
    rc = json_file_parse(buf, n, shown, out, err, errlen);
    if (rc != 0 || !text)
        free(buf);
    else
        *text = buf;
    return rc;
}

int json_file_read(const char *path, const char *shown, size_t max_bytes, struct json_object **out,
                   char *err, size_t errlen) {
    return json_file_read_text(path, shown, max_bytes, out, NULL, err, errlen);
}

/* Whether the string literal text[i..end) (quotes included) reads as key: byte for byte, or,
 * when it holds an escape, once json-c has read it. */
static bool json_file_key_is(const char *text, size_t i, size_t end, const char *key) {
    size_t len = end - i - 2;
    if (!memchr(text + i, '\\', end - i))
        return strlen(key) == len && memcmp(text + i + 1, key, len) == 0;
    char *lit = strndup(text + i, end - i);
    struct json_object *s = lit ? json_tokener_parse(lit) : NULL;
    bool same = s && strcmp(json_object_get_string(s), key) == 0;
    json_object_put(s);
    free(lit);
    return same;
}

int json_file_key_at(const char *text, const char *key, size_t *key_off, size_t *value_off) {
    size_t n = strlen(text), depth = 0;
    bool want_key = false; /* in the top-level object, where a key comes next */
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c == '{' || c == '[') {
            want_key = depth == 0 && c == '{';
            depth++;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        } else if (c == ',' && depth == 1) {
            want_key = true;
        } else if (c == '"') {
            bool nul = false;
            size_t end = json_file_string_end(text, n, i, &nul);
            if (depth == 1 && want_key && json_file_key_is(text, i, end, key)) {
                size_t v = end;
                while (v < n && strchr(" \t\r\n:", text[v]))
                    v++;
                *key_off = i;
                *value_off = v;
                return 0;
            }
            want_key = false;
            i = end - 1;
        }
    }
    return -ENOENT;
}
