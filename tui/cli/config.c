/* The config file: locating it, reading JSON with line/column errors, applying its keys, and
 * printing the effective options in the same format. */
#include "tui/cli/config.h"

#include "backend/core/errbuf.h"
#include "backend/core/json_file.h"
#include "backend/core/json_out.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file being applied: its name as shown and its text, for each key's line and column. */
struct config_src {
    const char *shown;
    const char *text;
};

/* "SHOWN:LINE:COL" of key, at the key itself or at its value. */
static void config_where(const struct config_src *f, const char *key, bool at_value, char *out,
                         size_t outlen) {
    size_t k = 0, v = 0;
    int line = 1, col = 1;
    if (json_file_key_at(f->text, key, &k, &v) == 0)
        json_file_line_col(f->text, at_value ? v : k, &line, &col);
    snprintf(out, outlen, "%s:%d:%d", f->shown, line, col);
}

/* A number as the file writes it, not as json-c keeps it (which saturates a number past 2^64
 * to 18446744073709551615): its literal text at the key's value, into buf. */
static const char *config_number_text(const struct config_src *f, const char *key,
                                      struct json_object *v, char *buf, size_t n) {
    size_t k = 0, at = 0;
    if (json_file_key_at(f->text, key, &k, &at) != 0)
        return json_object_get_string(v);
    size_t len = strspn(f->text + at, "+-0123456789.eE");
    if (len == 0 || len >= n)
        return len >= n ? "(a number too long to read)" : json_object_get_string(v);
    memcpy(buf, f->text + at, len);
    buf[len] = '\0';
    return buf;
}

/* One key through apply, with the file, line, column and key added to the reason. */
static int config_apply_key(const struct config_src *f, const char *key, struct json_object *v,
                            config_apply_fn apply, void *ctx, char *err, size_t errlen) {
    char where[ENGINE_PATH_MAX + 32], why[512] = "", num[64];
    struct config_value cv = {.kind = CONFIG_NULL};
    switch (json_object_get_type(v)) {
    case json_type_null:
        break;
    case json_type_boolean:
        cv = (struct config_value){.kind = CONFIG_BOOL, .flag = json_object_get_boolean(v)};
        break;
    case json_type_int:
    case json_type_double:
        cv = (struct config_value){.kind = CONFIG_NUMBER,
                                   .text = config_number_text(f, key, v, num, sizeof(num))};
        break;
    case json_type_string:
        cv = (struct config_value){.kind = CONFIG_STRING, .text = json_object_get_string(v)};
        break;
    default:
        config_where(f, key, true, where, sizeof(where));
        return errbuf_set(err, errlen, -EINVAL,
                          "%s: key '%s': expected a number, a string, a boolean or null", where,
                          key);
    }
    int rc = apply(key, &cv, ctx, why, sizeof(why));
    config_where(f, key, rc != -ENOENT, where, sizeof(where));
    if (rc == -ENOENT)
        return errbuf_set(err, errlen, -EINVAL, "%s: unknown key '%s'%s", where, key, why);
    if (rc != 0)
        return errbuf_set(err, errlen, rc, "%s: key '%s': %s", where, key, why);
    return 0;
}

static int config_apply_all(const struct config_src *f, struct json_object *root,
                            config_apply_fn apply, void *ctx, char *err, size_t errlen) {
    if (!json_object_is_type(root, json_type_object))
        return errbuf_set(err, errlen, -EINVAL, "%s: expected a JSON object of options", f->shown);
    json_object_object_foreach(root, key, v) {
        int rc = config_apply_key(f, key, v, apply, ctx, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* path with a leading $HOME/ shown as ~/. */
static void config_shown(const char *path, char *out, size_t outlen) {
    const char *home = getenv("HOME");
    size_t h = home ? strlen(home) : 0;
    if (h > 1 && strncmp(path, home, h) == 0 && path[h] == '/')
        snprintf(out, outlen, "~%s", path + h);
    else
        snprintf(out, outlen, "%s", path);
}

int config_load(const char *path, config_apply_fn apply, void *ctx, char *used, char *err,
                size_t errlen) {
    char def[ENGINE_PATH_MAX], shown[ENGINE_PATH_MAX + 8];
    used[0] = '\0';
    if (!path) {
        if (json_file_config_dir(def, sizeof(def) - 12) != 0)
            return 0; /* no home: no default file */
        strcat(def, "/config.json");
        if (access(def, F_OK) != 0 && (errno == ENOENT || errno == ENOTDIR))
            return 0;
        path = def;
        config_shown(path, shown, sizeof(shown));
    } else {
        snprintf(shown, sizeof(shown), "%s", path);
    }
    struct json_object *root = NULL;
    char *text = NULL;
    int rc = json_file_read_text(path, shown, CONFIG_MAX_BYTES, &root, &text, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(used, ENGINE_PATH_MAX, "%s", path);
    struct config_src f = {shown, text};
    rc = config_apply_all(&f, root, apply, ctx, err, errlen);
    json_object_put(root);
    free(text);
    return rc;
}

/* ---- --print-config ---- */

int config_print(const struct cli_train_opts *o, FILE *out) {
    struct json_object *j = run_opts_json(&o->run);
    if (!j)
        return -ENOMEM;
    /* how the run is shown: headless JSON lines, or the dashboard */
    json_out_put_bool(j, "headless", o->headless);
    json_out_put_int(j, "delay", o->view.delay_ds);
    if (o->view.frames > 0)
        json_out_put_int(j, "frames", o->view.frames);
    else
        json_object_object_add(j, "frames", NULL);
    json_out_put_str(j, "theme", o->view.theme);
    const char *s = json_object_to_json_string_ext(
        j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc = s && fprintf(out, "%s\n", s) > 0 && fflush(out) == 0 ? 0 : -EIO;
    json_object_put(j);
    return rc;
}
